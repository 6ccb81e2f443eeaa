"""Public failure threads, round 10 (fixtures/logs/threads/*/PROVENANCE.md names each thread).

Messages whose meaning the library's source gives and earlier rounds did not read: CUDA's "named symbol not found" /
"no kernel image is available" inside NCCL (a build without kernels for the GPU), torch's "sm_XX is not compatible"
warning, NCCL's "Could not find real path of /sys/class/pci_bus/..." (WSL before NCCL 2.11, a /sys that hides the
GPU), topo.h's "Could not find NET with id" (an NCCL 2.25/2.26 defect), UCX's "Transport retry count exceeded" and
OpenSSH's client errors under an MPI launcher. Each rule row has a real line and a near-miss that must not match; the
fixtures run through `commdoctor logs --json` as a user would.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from logs import test_threads as round1
from logs.test_corpus import diagnose_file
from logs.test_rule_rows import check_row

ROWS = [
    # (rule id, real line, near-miss)
    # torch/cuda/__init__.py _check_capability; a GPU the build lists gives no warning, and the "supports CUDA
    # capabilities" sentence alone names no GPU.
    ("torch_gpu_arch_unsupported", "NVIDIA GeForce RTX 5090 with CUDA capability sm_120 is not compatible with the current "
     "PyTorch installation.",  # pytorch/pytorch#167244
     "The current PyTorch install supports CUDA capabilities sm_50 sm_60 sm_70 sm_75 sm_80 sm_86 sm_90."),
    # graph/xml.cc: realpath() of the GPU's PCI path failed (NVIDIA/nccl#442); a NIC's sysfs probe at INFO is harmless.
    ("nccl_pci_realpath", "DESKTOP:36629:36635 [0] graph/xml.cc:332 NCCL WARN Could not find real path of "
     "/sys/class/pci_bus/0000:21/../../0000:21:00.0",
     "sfr-pod-rmeng:435:783 [0] NCCL INFO Could not find real path of /sys/class/net/eth0/device"),
    # graph/topo.h ncclTopoIdToIndex (NVIDIA-NeMo/Speech#13996); search.cc's fallback for a pattern is recovered from.
    ("nccl_topo_id_missing", "graph/topo.h:230 NCCL WARN Could not find NET with id 0",
     "graph/search.cc:1135 NCCL WARN Could not find a path for pattern 1, falling back to simple order"),
    # UCX's mlx5 wording of IBV_WC_RETRY_EXC_ERR (openucx/ucx#2434, #6000) and ibverbs' own (openucx/ucx#2684); a
    # retransmit count in a settings dump is not a failure.
    ("ib_completion", "[mgmt:24113:0:24113] ib_mlx5_log.c:143  Transport retry count exceeded on mlx5_0:1/RoCE (synd 0x15 "
     "vend 0x81 hw_synd 0/0)", "NCCL INFO NCCL_IB_RETRY_CNT set by environment to 7."),
    ("ib_completion", "FATAL: send completion with error: transport retry counter exceeded",
     "UCX_RC_RETRY_COUNT=7"),
    # OpenSSH's client under mpirun (NVIDIA/nccl-tests#299); ssh's own banner of a working login is not a failure.
    ("ssh_client", "ssh: connect to host (worker_ip) port 22: Connection refused",
     "Warning: Permanently added '[10.0.0.15]:9001' (ED25519) to the list of known hosts."),
    ("ssh_client", "ssh: Could not resolve hostname node-17: Name or service not known",
     "debug1: Connecting to node-17 [10.1.0.17] port 22."),
    ("ssh_client", "node2: Permission denied (publickey,password).",
     "node2: Authenticated to node2 ([10.1.0.2]:22) using \"publickey\"."),
    # asyncio's create_server (Ray's dashboard, facebookresearch/fairchem#1787) and redis (ray-project/ray#11201) name
    # the port they could not bind; a server that found its port free says it listens.
    ("port_in_use", "Exception: Failed to find a valid port for dashboard after 0 retries: [Errno 98] error while "
     "attempting to bind on address ('0.0.0.0', 8265): address already in use",
     "2026-02-17 18:17:20,693 INFO worker.py:1998 -- Connected to Ray cluster. View the dashboard at http://10.148.113.248:45491"),
    ("port_in_use", "129123:M 04 Oct 2020 12:37:38.959 # Could not create server TCP listening socket *:6379: bind: Address "
     "already in use", "129124:M 04 Oct 2020 12:37:39.061 # Ready to accept connections tcp"),
    # srun could not start the step's tasks (NVIDIA-NeMo/Speech#14829: --mpi=pmix under pyxis, pmi2 works;
    # StanfordLegion/gasnet#25); the step being torn down after a failure is not a launch failure.
    ("slurm_launch_failed", "srun: error: task 0 launch failed: Unspecified error",
     "srun: Job step aborted: Waiting up to 32 seconds for job step to finish."),
    ("slurm_launch_failed", "srun: error: timeout waiting for task launch, started 0 of 1 tasks",
     "srun: error: g1301: task 0: Exited with exit code 2"),
    # slurmstepd cannot execute the step's program (CSCfi/pytorch-ddp-examples#1: torchrun missing in the module);
    # a working directory it cannot enter is a warning it goes on past (NVIDIA/deepops#1179).
    ("slurm_execve", "slurmstepd: error: execve(): torchrun: No such file or directory",
     "slurmstepd: error: couldn't chdir to `/root/burst-buffer': No such file or directory: going to /tmp instead"),
    # MPICH / Intel MPI ch4:ofi could not open a libfabric provider (QMCPACK/qmcpack#1158, easybuilders#10213,
    # UCL-ARC/rcps-buildscripts#50); the provider list libfabric prints at debug level is not a failure.
    ("mpi_ofi_provider", "MPIDI_OFI_mpi_init_hook(1060): OFI fi_open domain failed (ofi_init.c:1060:MPIDI_OFI_mpi_init_hook:"
     "No data available)", "provider: tcp, score = 4, pref = 0, FI_SOCKADDR_IN [16] 10.1.0.241"),
    ("mpi_ofi_provider", "[0] MPI startup(): tmi fabric is not available and fallback fabric is not enabled",
     "[0] MPI startup(): shm and tcp data transfer modes"),
    # rdma-core with no provider for the device (NVIDIA/nccl-tests#41: a container without libmlx5); the verbs
    # library's note about a device it can drive is not this.
    ("verbs_no_provider", "libibverbs: Warning: no userspace device-specific driver found for "
     "/sys/class/infiniband_verbs/uverbs0", "libibverbs: Warning: couldn't load driver 'libvmw_pvrdma-rdmav34.so'"),
    # graph/paths.cc: a link with no way back (mila-iqia/milabench#183: NCCL 2.14 on H100); a path NCCL found is INFO.
    ("nccl_reverse_path", "opt-1_3b.0 [stderr] Failed to find reverse path from remNode 0/5f000 nlinks 4 to node 0/cb000",
     "n1:1:2 [0] NCCL INFO Pattern 4, crossNic 0, nChannels 2, bw 24.000000/24.000000, type NVL/PXN, sameChannels 1"),
    # proxy.cc's failed Connect for a rank (NVIDIA/nccl-tests#166, #185); its "-> 2" return trail is INFO.
    ("nccl_proxy_failed", "ubuntu:39964:40075 [0] proxy.cc:1519 NCCL WARN [Proxy Service 0] Failed to execute operation "
     "Connect from rank 0, retcode 2", "ubuntu:39964:40075 [0] NCCL INFO proxy.cc:1306 -> 2"),
    # The same wrapper's other result codes (vllm-project/vllm#12625 quotes its raise); a CUDA call's own
    # 'invalid argument' in nccl-tests is CUDA's, not NCCL's result.
    ("nccl_invalid_usage", "RuntimeError: NCCL error: invalid usage (run with NCCL_DEBUG=WARN for details)",
     "RuntimeError: NCCL error: unhandled cuda error (run with NCCL_DEBUG=INFO for details)"),
    ("nccl_invalid_argument", "RuntimeError: NCCL error: invalid argument (run with NCCL_DEBUG=WARN for details)",
     "host3: Test CUDA failure common.cu:1125 'invalid argument'"),
    ("nccl_invalid_argument", "host3: Test NCCL failure common.cu:1125 'invalid argument'",
     "gpu46:78367:78492 [0] transport/nvls.cc:244 NCCL WARN Cuda failure 1 'invalid argument'"),
    # Horovod's "<call> failed: <result>" and CuPy's NcclError with NCCL's enum name (horovod/horovod#1290 quotes the
    # internal-error form); a CUDA IPC call that failed with 'invalid argument' is not NCCL's result.
    ("nccl_invalid_usage", "horovod.common.exceptions.HorovodInternalError: ncclCommInitRank failed: invalid usage",
     "horovod.common.exceptions.HorovodInternalError: ncclCommInitRank failed: unhandled system error"),
    ("nccl_invalid_usage", "cupy_backends.cuda.libs.nccl.NcclError: NCCL_ERROR_INVALID_USAGE: invalid usage",
     "cupy_backends.cuda.libs.nccl.NcclError: NCCL_ERROR_UNHANDLED_CUDA_ERROR: unhandled cuda error"),
    ("nccl_invalid_argument", "cupy_backends.cuda.libs.nccl.NcclError: NCCL_ERROR_INVALID_ARGUMENT: invalid argument",
     "cudaIpcOpenMemHandle failed: invalid argument"),
    ("nccl_error_class", "ncclCommInitRank failed: internal error", "ncclCommInitRank failed: unhandled system error"),
    # vLLM's pynccl wrapper: RuntimeError(f"NCCL error: {ncclGetErrorString(...)}") (NVIDIA/nccl#1726's title).
    ("nccl_error_class", "ncclCommInitRank failed with error: NCCL error: internal error",
     "ncclCommInitRank failed with error: NCCL error: unhandled cuda error"),
]

FIXTURES = [
    # (slug, first cause, causes that must be among the first three)
    # NCCL built for sm_80 only, run on H100: CUDA finds none of its kernels.
    ("nccl-1372-named-symbol-sm80-build-on-h100", "nccl_internal_bug", ()),
    # A cu118 build on an RTX 5090: the same 'named symbol not found' first, the bare unhandled cuda error after it.
    ("pytorch-152077-rtx5090-nccl-2-14-cu118", "nccl_internal_bug", ()),
    # WSL with NCCL 2.8: the GPU's PCI path is not in /sys; the test's 'unhandled system error' follows from it.
    ("nccl-442-wsl-nccl-2-8-pci-realpath", "nccl_internal_bug", ()),
    # ssh to the worker refused under mpirun: the launcher, not the network or a dead peer.
    ("nccl-tests-299-ssh-refused-prte", "launcher_misconfig", ()),
    # NCCL 2.25/2.26 across InfiniBand nodes: a NET id this rank's topology lacks (fixed in 2.27.3).
    ("nemo-speech-13996-no-net-id-0", "nccl_internal_bug", ()),
    # Ray's dashboard port taken by another local cluster: another library's socket, not the torch store.
    ("fairchem-1787-ray-dashboard-port-8265", "port_conflict", ()),
    # A container without the verbs provider library: NCCL's bare internal error after libibverbs said so.
    ("nccl-tests-41-container-no-libmlx5", "ib_misconfig", ("nccl_internal_bug",)),
    # Peer access refused inside NCCL's SHM transport (cuMem host sharing on GPUs without P2P): NCCL's, not the driver.
    ("nccl-1838-cumem-host-shm-no-p2p", "nccl_internal_bug", ("p2p_driver_bug",)),
    # UCX's mlx5 retry-exceeded on RoCE from the first transfer: GID index / traffic class, not a dead peer.
    ("ucx-2434-roce-retry-exceeded-gid-tc", "ib_misconfig", ("hardware_fault",)),
]


@pytest.mark.parametrize("rule, line, near", ROWS, ids=[f"{r[0]}-{i}" for i, r in enumerate(ROWS)])
def test_row_matches_its_line_and_not_the_near_miss(rule: str, line: str, near: str) -> None:
    check_row(rule, line, near)


@pytest.mark.parametrize("slug, first, top3", FIXTURES, ids=[f[0] for f in FIXTURES])
def test_public_thread_fixture(slug: str, first: str, top3: tuple[str, ...]) -> None:
    round1.check_fixture(slug, first, top3)


def _first(p: Path) -> tuple[str, str]:
    fs = [f for f in diagnose_file(p)["findings"] if f["cause"]]
    return (fs[0]["code"], fs[0]["cause"]) if fs else ("", "")


@pytest.mark.parametrize("what", ["Cuda failure 'named symbol not found'", "Cuda failure 209 'no kernel image is "
                                  "available for execution on the device'"])
def test_cuda_failure_without_kernels_for_the_gpu_is_the_build(tmp_path: Path, what: str) -> None:
    p = tmp_path / "rank0.log"  # enqueue.cc's CUDACHECK on cudaFuncGetAttributes (NVIDIA/nccl#1372, nccl-tests#79)
    p.write_text(f"gcn75:2336636:2336906 [0] enqueue.cc:58 NCCL WARN {what}\n"
                 "RuntimeError: NCCL Error 1: unhandled cuda error\n")
    assert _first(p) == ("LOG085", "nccl_internal_bug")


def test_other_cuda_failures_are_not_read_as_a_missing_build(tmp_path: Path) -> None:
    p = tmp_path / "rank0.log"  # a CUDA call that failed for another reason keeps the generic reading
    p.write_text("n1:42:50 [0] include/shm.h:42 NCCL WARN Cuda failure 'invalid argument'\n")
    assert _first(p)[0] != "LOG085"


def test_pci_realpath_at_info_level_names_no_cause(tmp_path: Path) -> None:
    p = tmp_path / "rank0.log"  # NCCL probes sysfs and goes on; only its WARN stops init
    p.write_text("h:1:2 [0] NCCL INFO Could not find real path of /sys/class/pci_bus/0000:21/../../0000:21:00.0\n"
                 "h:1:2 [0] NCCL INFO comm 0x55 rank 0 nranks 2 cudaDev 0 busId 21000 - Init COMPLETE\n")
    assert "LOG070" not in [f["code"] for f in diagnose_file(p)["findings"]]


@pytest.mark.parametrize("err, cause", [("Connection refused", "launcher_misconfig"),
                                        ("Connection timed out", "firewall_or_port_blocked"),
                                        ("No route to host", "firewall_or_port_blocked")])
def test_ssh_failure_under_a_launcher_names_why_the_node_was_not_reached(tmp_path: Path, err: str, cause: str) -> None:
    p = tmp_path / "mpirun.log"  # the refused/timed-out words are ssh's, not a rank's connection to a peer
    p.write_text(f"ssh: connect to host node2 port 22: {err}\n"
                 "--------------------------------------------------------------------------\n"
                 "PRTE has lost communication with a remote daemon.\n")
    assert _first(p) == ("LOG065", cause)


def test_ssh_name_lookup_failure_is_the_host_name(tmp_path: Path) -> None:
    p = tmp_path / "mpirun.log"
    p.write_text("ssh: Could not resolve hostname gpu-node-7: Temporary failure in name resolution\n")
    assert _first(p) == ("LOG065", "hostname_resolution")


def test_qp_access_violation_is_the_connection_setup_not_a_failing_port(tmp_path: Path) -> None:
    p = tmp_path / "node201.log"  # NVIDIA/nccl#1710 (internal plugin vs another) and #1524 (after an NCCL upgrade)
    p.write_text("node201:127799:127863 [0] transport/net_ib.cc:101 NCCL WARN NET/IB : mlx5_0:1 Got async event : local "
                 "access violation work queue error\n")
    causes = [f["cause"] for f in diagnose_file(p)["findings"] if f["cause"]]
    assert causes[0] == "ib_misconfig" and "hardware_fault" not in causes[:1]
    q = tmp_path / "port.log"  # a port event is still the link's
    q.write_text("n1:1:2 [0] transport/net_ib.cc:101 NCCL WARN NET/IB : mlx5_0:1 Got async event : port error\n")
    assert _first(q)[1] == "hardware_fault"


@pytest.mark.parametrize("status, cause", [("9", "ib_misconfig"), ("10", "ib_misconfig"), ("4", "p2p_acs_iommu")])
def test_completion_status_names_whose_side_refused(tmp_path: Path, status: str, cause: str) -> None:
    p = tmp_path / "node023.log"  # 9-11: the peer's HCA refused the request; 4: local protection (GPUDirect)
    p.write_text(f"node023:10214:10303 [0] transport/net_ib.cc:1909 NCCL WARN NET/IB : Got completion from peer "
                 f"10.1.3.201<33057> with status={status} opcode=0 len=0 vendor err 138 (Send) localGid ::ffff:10.206.1.23 "
                 "remoteGids::ffff:10.206.1.11\n")
    assert _first(p)[1] == cause



def test_nvml_library_mismatch_says_the_module_and_libraries_differ(tmp_path: Path) -> None:
    p = tmp_path / "node.log"  # lyulyul/shine-cluster#30: unattended-upgrade replaced the libraries under the module
    p.write_text("$ nvidia-smi\nFailed to initialize NVML: Driver/library version mismatch\n")
    f = [x for x in diagnose_file(p)["findings"] if x["cause"]][0]
    assert (f["code"], f["cause"]) == ("LOG032", "driver_cuda_mismatch") and "kernel module" in json.dumps(f)


def test_an_uncaught_cxx_exception_is_a_failure_never_healthy(tmp_path: Path) -> None:
    p = tmp_path / "rank.log"  # baidu-research/DeepBench#97: the process aborted on an exception nothing names
    p.write_text("terminate called after throwing an instance of 'std::runtime_error'\n"
                 "  what():  Failed to set cuda device\n")
    assert [f["code"] for f in diagnose_file(p)["findings"]][:1] == ["LOG080"]
    q = tmp_path / "ok.log"  # the words inside a sentence of the program's own are not the runtime's abort
    q.write_text("[job] the handler is called when terminate is requested; step 9 loss 0.09\n")
    assert diagnose_file(q)["findings"] == [] or all(f["code"] != "LOG080" for f in diagnose_file(q)["findings"])


def test_verbs_provider_note_alone_names_no_cause(tmp_path: Path) -> None:
    p = tmp_path / "rank0.log"  # a job that never needs RDMA prints it and runs over sockets
    p.write_text("libibverbs: Warning: no userspace device-specific driver found for /sys/class/infiniband_verbs/uverbs0\n"
                 "h:1:2 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.2<0>\n"
                 "h:1:2 [0] NCCL INFO comm 0x55 rank 0 nranks 2 cudaDev 0 busId 1000 - Init COMPLETE\n")
    assert [f for f in diagnose_file(p)["findings"] if f["cause"]] == []


def test_an_ib_event_that_reports_a_change_is_no_fault(tmp_path: Path) -> None:
    p = tmp_path / "rank0.log"  # IBV_EVENT_GID_CHANGE: an address was added to the RoCE netdev; the port is fine
    p.write_text("h:1:2 [0] transport/net_ib.cc:101 NCCL WARN NET/IB : mlx5_0:1 Got async event : GID table change\n")
    assert [f for f in diagnose_file(p)["findings"] if f["cause"]] == []


def test_peer_access_refused_in_the_p2p_transport_stays_the_driver(tmp_path: Path) -> None:
    p = tmp_path / "rank0.log"  # the GPU peer-to-peer transport itself: the driver's or the board's P2P
    p.write_text("n1:1:2 [0] transport/p2p.cc:200 NCCL WARN Cuda failure 'peer access is not supported between these "
                 "two devices'\n")
    assert _first(p) == ("LOG039", "p2p_driver_bug")


def test_a_proxy_connect_failure_alone_reads_as_the_bare_system_error(tmp_path: Path) -> None:
    p = tmp_path / "rank0.log"  # two hosts' ranks, the proxy's failed Connect with no line saying which call
    p.write_text("n1:1:2 [0] proxy.cc:1519 NCCL WARN [Proxy Service 0] Failed to execute operation Connect from rank 0, "
                 "retcode 2\n")
    assert _first(p) == ("LOG028", "wrong_interface")
