"""Public failure threads, round 54 and its development reading.

Round 54 came from issue threads archived whole in other repositories (NVIDIA/nccl, nccl-tests and ROCm/rccl, mostly
2025-2026). What they taught, each read from what the message means in its program:

- a paste of two runs of nccl-tests one after the other is not one run split per process: the first run's failure
  lines, or the command that started the second, lie between the two headers;
- NCCL's own words for what went wrong inside it: a memory error AddressSanitizer traced to NCCL's frames, its
  symmetric-memory address space used up, its proxy op pool run dry, GPU-initiated networking failing in DOCA;
- ranks or hosts that took different paths: host buffers shared as cuMem on some ranks and /dev/shm on others,
  libfabric providers that differ between MPI processes, EFA rails grouped differently on two hosts.
"""

from __future__ import annotations

from pathlib import Path

from logs.test_corpus import diagnose_file
from logs.test_rule_rows import check_row


def _found(tmp_path: Path, text: str, name: str = "job.log") -> list[dict]:
    p = tmp_path / name
    p.write_text(text)
    return [f for f in diagnose_file(p)["findings"] if f["cause"]]


def _codes(found: list[dict]) -> list[str]:
    return [f["code"] for f in found]


# NVIDIA/nccl-tests#124: all_reduce_perf on one ArchLinux host with two RTX 3090s, run twice and pasted together: the
# first run stopped on 'unhandled cuda error', the second (NCCL_DEBUG=INFO) showed NCCL's stub-library WARN.
_HEAD = ("# nThread 1 nGpus 2 minBytes 33554432 maxBytes 33554432 step: 1048576(bytes) warmup iters: 20 iters: 100 agg "
         "iters: 1 validation: 0 graph: 0\n#\n# Using devices\n")
_RANKS = ("#  Rank  0 Group  0 Pid {pid} on    ArchLinux device  0 [0x01] NVIDIA GeForce RTX 3090\n"
          "#  Rank  1 Group  0 Pid {pid} on    ArchLinux device  1 [0x09] NVIDIA GeForce RTX 3090\n")
_FAILED = ("ArchLinux: Test NCCL failure all_reduce.cu:44 'unhandled cuda error / '\n"
           " .. ArchLinux pid 353404: Test failure common.cu:377\n"
           " .. ArchLinux pid 353404: Test failure common.cu:584\n")


def test_two_runs_of_nccl_tests_pasted_one_after_the_other_are_not_a_job_split_per_process(tmp_path: Path) -> None:
    check_row("nccl_tests_failed", "ArchLinux: Test NCCL failure all_reduce.cu:44 'unhandled cuda error / '",
              "NCCL failure: unhandled cuda error")
    check_row("nccl_tests_failed", " .. ArchLinux pid 353404: Test failure common.cu:377", "Test failure: see above")
    two_runs = _HEAD + _RANKS.format(pid=353404) + _FAILED + _HEAD + _RANKS.format(pid=6482)
    assert "LOG066" not in _codes(_found(tmp_path, two_runs))
    # one process per rank, each printing its own header and rank 0 with no run ended between: the job split apart
    split = (_HEAD + _RANKS.format(pid=353404).splitlines(keepends=True)[0]
             + _HEAD + _RANKS.format(pid=6482).splitlines(keepends=True)[0] + _FAILED)
    assert "LOG066" in _codes(_found(tmp_path, split))


# ROCm/rccl#1129: rccl-tests on two PCIe MI100s hung; the reporter pasted the hung run, rocm-smi, then the same test
# again from the shell with NCCL_DEBUG=INFO, where RCCL warned that iommu=pt was missing (adding it fixed the hang).
_RCCL_RUN = ("freddy@deep-visionscaper3:~/workspace/rocm/rccl-tests$ ./build/all_reduce_perf -b 8 -e 128M -f 2 -g 2\n"
             "# nThread 1 nGpus 2 minBytes 8 maxBytes 134217728 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 "
             "validation: 1 graph: 0\n#\nrccl-tests: Version develop:3f7f785\n# Using devices\n"
             "#   Rank  0 Pid  {pid} on deep-visionscaper3 device  0 [0000:2f:00.0] AMD Instinct MI100\n"
             "#   Rank  1 Pid  {pid} on deep-visionscaper3 device  1 [0000:03:00.0] AMD Instinct MI100\n")
_IOMMU = ('deep-visionscaper3:38629:38629 [0] /long_pathname_so_that_rpms_can_package_the_debug_info/src/extlibs/rccl/'
          'build/hipify/src/init.cc:132 NCCL WARN Missing "iommu=pt" from kernel command line which can lead to system '
          'instablity or hang!\n')


def test_a_second_run_started_from_the_shell_is_another_run_and_the_iommu_warning_is_the_cause(tmp_path: Path) -> None:
    check_row("nccl_tests_cmd", "$ ./build/all_reduce_perf -b 8 -e 128M -f 2 -g 2",
              "all_reduce_perf finished; see all_reduce_perf.log")
    got = _found(tmp_path, _RCCL_RUN.format(pid=21284) + "RCCL version 2.18.3+hip6.0 HEAD:2f6d59e+\n"
                 + _RCCL_RUN.format(pid=38629) + _IOMMU)
    assert "LOG066" not in _codes(got)
    assert got[0]["cause"] == "p2p_acs_iommu", got[0]


# NVIDIA/nccl#2190: vLLM TP=8 on one host, NCCL 2.28.9: two ranks failed to attach a peer's host buffer whose handle
# named no /dev/shm segment; /dev/shm had 252 GB. The cuMem host-NUMA probe had failed for the GPUs of one NUMA node only.
_ATTACH0 = ("[2026-05-22 10:26:17] d4fde3314201:13740:13740 [7] misc/shmutils.cc:132 NCCL WARN Error while attaching to "
            "shared memory segment /dev/shm/nccl- (size 0), error: No such file or directory (2)\n")
_ATTACH = ("d4fde3314201:13740:13740 [7] misc/shmutils.cc:132 NCCL WARN Error while attaching to shared memory segment "
           "/dev/shm/nccl-Qdcygz (size 9637888), error: No such file or directory (2)\n")


def test_attaching_a_peer_segment_of_size_zero_is_ranks_sharing_host_buffers_differently(tmp_path: Path) -> None:
    check_row("shm_attach_no_segment", _ATTACH0.strip(), _ATTACH.strip())
    got = _found(tmp_path, _ATTACH0)
    assert (got[0]["code"], got[0]["cause"]) == ("LOG135", "other"), got[0]
    assert "NCCL_CUMEM_HOST_ENABLE=0" in got[0]["remedy"]["summary"]
    assert "shm_too_small" not in [f["cause"] for f in got]
    # a segment with a name and a size that cannot be attached is still /dev/shm's
    assert _found(tmp_path, _ATTACH)[0]["cause"] == "shm_too_small"


# NVIDIA/nccl#2325: NCCL 2.30.7 under AddressSanitizer: NVML wrote a 32-byte bus id into NCCL's older, smaller
# nvmlPciInfo_t on the stack (fixed in 2.31.2).
_ASAN = """\
==1292==ERROR: AddressSanitizer: stack-buffer-overflow on address 0x7b0fac6a3454 at pc 0x558b5a4009a8 bp 0x7b0fad884930 sp 0x7b0fad8840e0
WRITE of size 17 at 0x7b0fac6a3454 thread T33 (tf_CreateNcclCo)
    #0 0x558b5a4009a7 in vsnprintf llvm/llvm-project/compiler-rt/lib/sanitizer_common/sanitizer_common_interceptors.inc:1799:1
    #1 0x558b5a402096 in snprintf llvm/llvm-project/compiler-rt/lib/sanitizer_common/sanitizer_common_interceptors.inc:1872:1
    #2 0x7b0fde03b306  (/usr/lib/libcuda/libnvidia-ml.so.1+0x3b306)
    #3 0x7b0fde045547 in nvmlDeviceGetPciInfo_v3 (/usr/lib/libcuda/libnvidia-ml.so.1+0x45547)
    #4 0x558b6aaa58b0 in ncclNvmlDeviceGetPciInfo(nvmlDevice_st*, nvmlPciInfo_st*) nccl/src/misc/nvmlwrap.cc:332
    #5 0x558b6aa6068f in ncclTopoSetAttrFromNvml(ncclXmlNode*, nvmlDevice_st*, char const*) nccl/src/graph/xml.cc:451
"""


def test_a_memory_error_addresssanitizer_traces_to_ncclS_frames_is_ncclS(tmp_path: Path) -> None:
    got = _found(tmp_path, _ASAN)
    assert (got[0]["code"], got[0]["cause"]) == ("LOG070", "nccl_internal_bug"), got[0]
    assert "stack-buffer-overflow in ncclNvmlDeviceGetPciInfo" in got[0]["title"]
    # the same report with the program's own code below the interceptors: not NCCL's
    own = _ASAN.replace("ncclNvmlDeviceGetPciInfo(nvmlDevice_st*, nvmlPciInfo_st*) nccl/src/misc/nvmlwrap.cc:332",
                        "format_bus_id(char*) src/probe.cc:41")
    assert not any(f["code"] == "LOG070" for f in _found(tmp_path, own))


# NVIDIA/nccl-tests#295: Open MPI's OFI MTL aborted in MPI_Allgather before NCCL ran; the two nodes had opened
# different libfabric providers (FI_PROVIDER=verbs on both fixed it).
_OFI = ("[neutron-nvidia:820212] [ 5] proton-nvidia:rank0:  Mismatched address format: remote EP (Invalid Fmt): Unknown "
        "(2) Local EP: IPv4 (4)\n"
        "Confirm all nodes are running the same interconnect HW, addressing format and PSM version\n"
        "[neutron-nvidia:820212] *** Process received signal ***\n[neutron-nvidia:820212] Signal: Aborted (6)\n")


def test_libfabric_address_formats_that_differ_are_providers_that_differ(tmp_path: Path) -> None:
    check_row("ofi_addr_format", _OFI.splitlines()[0], "fi_getinfo: address format FI_SOCKADDR_IN matched")
    got = _found(tmp_path, _OFI)
    assert (got[0]["code"], got[0]["cause"]) == ("LOG136", "launcher_misconfig"), got[0]
    assert "'Invalid Fmt'" in got[0]["title"] and "FI_PROVIDER" in got[0]["remedy"]["summary"]


# NVIDIA/nccl#2331: registering one buffer again and again (ncclCommWindowRegister) used up NCCL 2.30.7's
# symmetric-memory address space.
_SPACE = ("[0] nccl/src/allocator.cc:229 (ncclSpaceAlloc) NCCL WARN Allocation failed. No suitable space found to "
          "accommodate size=0x2171600000 within limit=0x2d00000000\n"
          "[0] NCCL INFO nccl/src/dev_runtime.cc:602 (symMemoryObtain) -> 3\n")


def test_ncclS_symmetric_memory_space_used_up_is_ncclS(tmp_path: Path) -> None:
    check_row("nccl_space_alloc", _SPACE.splitlines()[0], "Allocation failed. Retrying with a smaller chunk size")
    got = _found(tmp_path, _SPACE)
    assert (got[0]["code"], got[0]["cause"]) == ("LOG070", "nccl_internal_bug"), got[0]
    assert "133.8 GiB" in got[0]["title"] and "180.0 GiB" in got[0]["title"]


# NVIDIA/nccl#1913: aws-ofi-nccl on two p5.48xlarge hosts whose EFA devices grouped 1 to 3 rails each;
# OFI_NCCL_FORCE_NUM_RAILS made them agree.
_RAILS = ("NET/OFI Unexpected number of remote rails for dev 0. Expected 3 but got 2\n"
          "NET/OFI Unexpected number of remote rails for dev 1. Expected 2 but got 3\n"
          "Test NCCL failure all_reduce.cu:471 'internal error - please report this issue to the NCCL developers'\n")


def test_efa_rails_grouped_differently_on_two_hosts_is_the_cause_of_the_internal_error(tmp_path: Path) -> None:
    check_row("ofi_rails_differ", _RAILS.splitlines()[0], "NET/OFI Using 4 rails for dev 0")
    got = _found(tmp_path, _RAILS)
    assert (got[0]["code"], got[0]["cause"]) == ("LOG137", "other"), got[0]
    assert "device 0 has 3 rail(s) here and 2 on the peer" in got[0]["title"]


# NVIDIA/nccl#2353: two DGX Spark nodes hung in ncclAllGather with NCCL 2.29.2; gdb showed the launching thread
# yielding in ncclLocalOpAppend and the proxy thread asleep in ncclProxyGetPostedOps (fixed in 2.29.3).
_LAUNCH = ("#0  __sched_yield\n#1  ncclLocalOpAppend(ncclComm*, ncclProxyConnector*, ncclProxyOp*)\n"
           "#2  SaveProxy(ncclComm*, ncclChannel*, int, int, ncclProxyOp*, int, bool*)\n#10 pncclAllGather\n")
_PROXY = "#0  <futex>\n#1  pthread_cond_wait\n#2  ncclProxyGetPostedOps(ncclProxyState*, int*)\n#3  ncclProxyProgress(void*)\n"


def test_launching_thread_waiting_on_the_op_pool_while_the_proxy_sleeps_is_ncclS_deadlock(tmp_path: Path) -> None:
    got = _found(tmp_path, _LAUNCH + _PROXY)
    assert (got[0]["code"], got[0]["cause"]) == ("LOG070", "nccl_internal_bug"), got[0]
    assert "proxy op pool" in got[0]["title"]
    # the launching thread alone there may be waiting on a proxy that is busy
    assert not any("proxy op pool" in f["title"] for f in _found(tmp_path, _LAUNCH))


# NVIDIA/nccl#2237: nccl-tests -R 2 with NCCL 2.30.7 on IB ports that require a global routing header: GDAKI's queue
# pairs were connected without one (fixed after).
_DOCA = ("worker-0:862519:862553 [0] transport/net_ib/gdaki/gin_host_gdaki.cc:431 (gdakiConnectQp) NCCL WARN DOCA "
         "failure 21\n"
         "worker-0:862519:862553 [0] NCCL INFO transport/net_ib/gdaki/gin_host_gdaki.cc:683 (ncclGinGdakiCreateContext) -> 2\n")


def test_gin_over_gdaki_failing_in_doca_is_ncclS_newest_path(tmp_path: Path) -> None:
    check_row("gdaki_doca", _DOCA.splitlines()[0], "NCCL INFO GIN: using DOCA GPUNetIO 3.1")
    got = _found(tmp_path, _DOCA)
    assert (got[0]["code"], got[0]["cause"]) == ("LOG070", "nccl_internal_bug"), got[0]
    assert "DOCA_ERROR_DRIVER" in got[0]["title"]
    # the NIC's own set-up stays the alternative a user is shown
    assert ("LOG090", "ib_misconfig") in [(f["code"], f["cause"]) for f in got]


# ROCm/rccl#1055: two RX 7900 XTX in a rocm/pytorch container (ROCm 6.0 user space) on Ubuntu's 6.5 kernel: RCCL's P2P
# transport failed to share buffers between the two processes; amdgpu-dkms on the host (and a reboot) fixed it.
_RCCL_IPC = ("9cce34ff6c6c:505250:505433 [1] /mnt/ubuntu/software/rocm/rccl/build/hipify/src/transport/p2p.cc:228 NCCL "
             "WARN Cuda failure 'invalid device pointer'\n")


def test_rcclS_p2p_transport_refused_an_ipc_handle_is_the_hosts_rocm_kernel_driver(tmp_path: Path) -> None:
    got = _found(tmp_path, "9cce34ff6c6c:504930:504930 [0] NCCL INFO Kernel version: 6.5.0-14-generic\n"
                           "RCCL version 2.17.1+hip5.7 HEAD:cbbb3d8\n" + _RCCL_IPC)
    assert (got[0]["code"], got[0]["cause"]) == ("LOG138", "driver_cuda_mismatch"), got[0]
    assert "amdgpu-dkms" in got[0]["remedy"]["summary"]
    # NCCL's own P2P transport (not hipified) failing the same call is not read as ROCm's driver
    nccl = _found(tmp_path, "gpu1:77:88 [1] transport/p2p.cc:228 NCCL WARN Cuda failure 'invalid device pointer'\n")
    assert "LOG138" not in _codes(nccl)


# EADDRNOTAVAIL on bind, in the words of torch's store (socket.cpp), gloo (tcp/socket.cc) and NCCL (misc/socket.cc):
# the address a process was told to listen on is not one of its host's.
_BIND99 = ("[W1129 10:00:00.000000000 socket.cpp:464] [c10d] The server socket has failed to bind to 10.0.0.5:29500 "
           "(errno: 99 - Cannot assign requested address).\n"
           "[E1129 10:00:00.000000000 socket.cpp:502] [c10d] The server socket has failed to listen on any local "
           "network address.\n")


def test_a_store_that_cannot_bind_the_master_address_is_on_the_wrong_host(tmp_path: Path) -> None:
    check_row("bind_not_local", _BIND99.splitlines()[0],
              "[W socket.cpp:464] [c10d] The server socket has failed to bind to [::]:29500 (errno: 98 - Address already "
              "in use).")
    got = _found(tmp_path, _BIND99)
    assert (got[0]["code"], got[0]["cause"]) == ("LOG017", "launcher_misconfig"), got[0]
    assert "10.0.0.5:29500, which is not an address of this host" in got[0]["title"]
    # the store listened on the port after all (another address worked): nothing to report
    ok = _BIND99.splitlines()[0] + "\n[I socket.cpp:780] [c10d] The server socket has started to listen on [::]:29500.\n"
    assert "LOG017" not in _codes(_found(tmp_path, ok))
    # one address refused in a run that went on (::1 where the loopback has no IPv6; the INFO line not logged)
    went_on = ("[W1129 10:00:00.000 socket.cpp:464] [c10d] The server socket has failed to bind to [::1]:29500 "
               "(errno: 99 - Cannot assign requested address).\nepoch 1 loss 0.5\ntraining finished\n")
    assert "LOG017" not in _codes(_found(tmp_path, went_on))
    # gloo binds the address this host's name resolves to
    gloo = _found(tmp_path, "RuntimeError: [../third_party/gloo/gloo/transport/tcp/socket.cc:95] bind: Cannot assign "
                            "requested address\n")
    assert (gloo[0]["code"], gloo[0]["cause"]) == ("LOG017", "hostname_resolution"), gloo[0]
    # gloo's peer address refused on connect is another matter
    assert "LOG017" not in _codes(_found(tmp_path, "RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:799] "
                                                   "connect [10.0.0.2]:4128: Cannot assign requested address\n"))


def test_gloo_pair_found_closed_is_a_lost_connection(tmp_path: Path) -> None:
    # gloo tcp/pair.cc setSync: the pair was closed before it could switch to sync mode (the peer went away)
    check_row("conn_lost", "RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:525] Socket unexpectedly "
                           "closed [10.0.0.2]:4128", "[I socket.cpp:780] [c10d] The client socket has been closed.")
    got = _found(tmp_path, "RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:525] Socket unexpectedly closed "
                           "[10.0.0.2]:4128\n")
    assert (got[0]["code"], got[0]["cause"]) == ("LOG061", "peer_process_died"), got[0]


def test_gloo_payload_larger_than_the_bound_buffer_posted_is_a_collective_mismatch(tmp_path: Path) -> None:
    # gloo tcp/pair.cc: the peer sent more into a bound buffer than this rank posted for that slot
    line = ("RuntimeError: [enforce fail at ../third_party/gloo/gloo/transport/tcp/pair.cc:426] op.preamble.roffset + "
            "op.preamble.length <= op.buf->size_. 8192 vs 4096")
    check_row("collective_mismatch", line, "[I ProcessGroupGloo.cpp:700] op.preamble.roffset 0 length 4096 buffer 4096")
    got = _found(tmp_path, line + "\n")
    assert (got[0]["code"], got[0]["cause"]) == ("LOG050", "collective_mismatch"), got[0]


# NVIDIA/nccl-tests#369: GH200 nodes in EXCLUSIVE_PROCESS mode; Open MPI's OFI transport opened a CUDA context on
# GPU 0 in every rank, so all but the first were refused ('busy or unavailable'). nvidia-smi's table shows it.
_SMI = """\
gpu-1-1: Test CUDA failure common.cu:1304 'CUDA-capable device(s) is/are busy or unavailable'
|    0   N/A  N/A   3203007      C   ...ests-2.17.8/./build/all_reduce_perf        788MiB |
|    0   N/A  N/A   3203008      C   ...ests-2.17.8/./build/all_reduce_perf        556MiB |
|    0   N/A  N/A   3203009      C   ...ests-2.17.8/./build/all_reduce_perf        556MiB |
|    1   N/A  N/A   3203008      C   ...ests-2.17.8/./build/all_reduce_perf        790MiB |
|    2   N/A  N/A   3203009      C   ...ests-2.17.8/./build/all_reduce_perf        786MiB |
"""


def test_processes_holding_gpu_0_beside_their_own_are_named_when_a_gpu_is_busy(tmp_path: Path) -> None:
    check_row("smi_process_row", _SMI.splitlines()[2],
              "|  0  NVIDIA H100 80GB HBM3   On | 119W / 700W | 1897MiB / 81559MiB | 100%  Default |")
    got = _found(tmp_path, _SMI)
    assert (got[0]["code"], got[0]["cause"]) == ("LOG034", "duplicate_gpu"), got[0]
    assert "2 processes hold GPU 0 beside their own GPU (pids 3203008, 3203009)" in got[0]["title"]
    assert ("LOG090", "launcher_misconfig") in [(f["code"], f["cause"]) for f in got]
    # without the table the finding stays the general one
    alone = _found(tmp_path, _SMI.splitlines()[0] + "\n")
    assert "GPU 0 beside" not in alone[0]["title"]
