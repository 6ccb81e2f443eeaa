"""Public failure threads, round 7 (fixtures/logs/threads/*/PROVENANCE.md names each thread).

Bare NCCL result codes with little else in the log: a system error where the ranks share one host, an internal
error with NCCL_SOCKET_IFNAME set or from NCCL 2.18, an unhandled CUDA error, and the INFO line of an NCCL release
older than the GPU. Each rule row has a real line and a near-miss that must not match; the fixtures run through
`commdoctor logs --json` as a user would.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from logs import test_threads as round1
from logs.test_corpus import diagnose_file
from logs.test_rule_rows import check_row

ROWS = [
    # (rule id, real line, near-miss)
    # enqueue.cc: "[cudaArch %d ]ncclMaxSharedMem %d exceeds device/fn maxSharedMem %zu"; NCCL's tuning lines about
    # shared memory carveout are another thing.
    ("nccl_smem_exceeds", "localhost:11344:11344 [1] NCCL INFO ncclMaxSharedMem 82240 exceeds device/fn maxSharedMem "
     "79856",  # NVIDIA/nccl#1637
     "localhost:11344:11344 [1] NCCL INFO ncclMaxSharedMem set by environment to 82240."),
    # init.cc: "comm %p rank %d nRanks %d nNodes %d localRanks %d localRank %d MNNVL %d"; the Init START line has no
    # nNodes.
    ("nccl_nnodes", "gpu1:3871:3920 [0] NCCL INFO comm 0x55d1c3a0 rank 0 nRanks 2 nNodes 1 localRanks 2 localRank 0 "
     "MNNVL 0",
     "gpu1:3871:3920 [0] NCCL INFO ncclCommInitRank comm 0x55d1c3a0 rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId 1000 "
     "commId 0x1 - Init START"),
    # ncclGetErrorString(ncclUnhandledCudaError); an unhandled *system* error is another code.
    ("nccl_unhandled_cuda", "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/"
     "ProcessGroupNCCL.cpp:1331, unhandled cuda error (run with NCCL_DEBUG=INFO for details)",  # pytorch/pytorch#111187
     "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1331, "
     "unhandled system error (run with NCCL_DEBUG=INFO for details)"),
    # NCCL_SOCKET_IFNAME given on a command line; GLOO_SOCKET_IFNAME is gloo's.
    ("ifname_assigned", "mpirun -np 2 -pernode --allow-run-as-root -hostfile host.txt -mca btl_tcp_if_include "
     "192.168.0.0/24 -x NCCL_SOCKET_IFNAME=enp6s0 ./nccl-tests/build/all_reduce_perf -b 8 -e 128M -f 2 -g 2 -c 0",
     # NVIDIA/nccl-tests#219
     "mpirun -np 2 -pernode -hostfile host.txt -x GLOO_SOCKET_IFNAME=enp6s0 ./train.py"),
    # vLLM's multiprocessing executor (one node's workers); its Ray workers carry an ip= instead.
    ("vllm_local_worker", "ERROR 10-13 09:06:25 [v1/executor/multiproc_executor.py:597] WorkerProc failed to start.",
     # llm-d/llm-d#352
     "(RayWorkerWrapper pid=994) ERROR 01-29 07:44:33 worker_base.py:467] Error executing method init_device."),
    # torch's internal-error line keeps NCCL's version for the 2.18 reading; nccl-tests' form has none.
    ("nccl_error_class", "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/"
     "ProcessGroupNCCL.cpp:1333, internal error - please report this issue to the NCCL developers, NCCL version 2.18.1",
     # NVIDIA/nccl#1092
     "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1333, "
     "invalid usage (run with NCCL_DEBUG=WARN for details), NCCL version 2.18.1"),
]

FIXTURES = [
    # (slug, first cause, causes that must be among the first three)
    # One process drives four GPUs of one host: the failing system call is the /dev/shm segment, not a socket.
    ("nccl-473-nccltests-docker-ipc-host", "shm_too_small", ("wrong_interface",)),
    # vLLM's multiprocessing workers of one node: same reading.
    ("llmd-352-vllm-dp-shm-fills", "shm_too_small", ()),
    # NCCL 2.25.1 on an RTX 5090: its kernels need more shared memory than the GPU allows.
    ("nccl-1637-rtx5090-maxsharedmem", "nccl_internal_bug", ()),
    # A bare unhandled CUDA error: another NCCL release first, P2P and the driver as the alternatives.
    ("pytorch-111187-wsl-nccl-2-18-5-cuda", "nccl_internal_bug", ("p2p_driver_bug", "driver_cuda_mismatch")),
    # An internal error in a two-host nccl-tests run with NCCL_SOCKET_IFNAME naming one host's NIC.
    ("nccl-tests-219-ifname-per-host", "wrong_interface", ("nccl_internal_bug",)),
]


@pytest.mark.parametrize("rule, line, near", ROWS, ids=[f"{r[0]}-{i}" for i, r in enumerate(ROWS)])
def test_row_matches_its_line_and_not_the_near_miss(rule: str, line: str, near: str) -> None:
    check_row(rule, line, near)


@pytest.mark.parametrize("slug, first, top3", FIXTURES, ids=[f[0] for f in FIXTURES])
def test_public_thread_fixture(slug: str, first: str, top3: tuple[str, ...]) -> None:
    round1.check_fixture(slug, first, top3)


SYSERR = ("RuntimeError: NCCL error in: /pytorch/torch/lib/c10d/ProcessGroupNCCL.cpp:825, unhandled system error, "
          "NCCL version 2.7.8\n")


def _first(p: Path) -> dict[str, object]:
    return diagnose_file(p)["findings"][0]  # type: ignore[no-any-return]


def test_system_error_on_one_host_reads_as_shared_memory_and_across_hosts_as_the_network(tmp_path: Path) -> None:
    one = tmp_path / "one.log"  # NCCL's init line says the communicator spans one node
    one.write_text("gpu1:3871:3920 [0] NCCL INFO comm 0x55d1c3a0 rank 0 nRanks 2 nNodes 1 localRanks 2 localRank 0 "
                   "MNNVL 0\n" + SYSERR)
    assert (_first(one)["code"], _first(one)["cause"]) == ("ENV030", "shm_too_small")  # LOG030's check
    two = tmp_path / "two.log"  # the same error in a communicator over two nodes stays the network's
    two.write_text("gpu1:3871:3920 [0] NCCL INFO comm 0x55d1c3a0 rank 0 nRanks 2 nNodes 2 localRanks 1 localRank 0 "
                   "MNNVL 0\n" + SYSERR)
    assert (_first(two)["code"], _first(two)["cause"]) == ("LOG028", "wrong_interface")
    ray = tmp_path / "ray.log"  # vLLM workers that are Ray actors on other nodes: not one host
    ray.write_text("(RayWorkerWrapper pid=335, ip=10.1.0.67) ERROR 01-29 07:44:33 worker_base.py:467] "
                   "RuntimeError: NCCL error: unhandled system error (run with NCCL_DEBUG=INFO for details)\n"
                   "ERROR 01-29 07:44:33 [v1/executor/multiproc_executor.py:597] WorkerProc failed to start.\n")
    assert _first(ray)["cause"] == "wrong_interface"


def test_remote_error_on_one_host_is_not_read_as_shared_memory(tmp_path: Path) -> None:
    p = tmp_path / "rank0.log"  # a dropped peer connection is not a failed /dev/shm call, whatever the host count
    p.write_text("gpu1:3871:3920 [0] NCCL INFO comm 0x55d1c3a0 rank 0 nRanks 2 nNodes 1 localRanks 2 localRank 0 "
                 "MNNVL 0\n"
                 "RuntimeError: NCCL error: remote process exited or there was a network error, NCCL version 2.20.5\n")
    assert all(f["cause"] != "shm_too_small" for f in diagnose_file(p)["findings"])


def test_internal_error_reading_depends_on_the_interface_setting_and_the_release(tmp_path: Path) -> None:
    line = ("torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:"
            "1333, internal error - please report this issue to the NCCL developers, NCCL version {v}\n")
    plain = tmp_path / "plain.log"
    plain.write_text(line.format(v="2.21.5"))
    doc = diagnose_file(plain)
    assert doc["findings"][0]["cause"] == "nccl_internal_bug"
    assert not any(f["code"] == "LOG090" and "wrong interface" in f["title"] for f in doc["findings"])
    old = tmp_path / "old.log"  # 2.18 reported failed network calls as internal errors (round 9: read as the network
    old.write_text(line.format(v="2.18.1"))  # call first, as NVIDIA/nccl#1092 and a second thread were; the defect second)
    doc = diagnose_file(old)
    assert (doc["findings"][0]["code"], doc["findings"][0]["cause"]) == ("LOG028", "wrong_interface")
    assert any(f["code"] == "LOG090" and "nccl internal bug" in f["title"] for f in doc["findings"])
    named = tmp_path / "named.log"  # an interface named for the job and no rank saying it bootstrapped from it
    named.write_text("export NCCL_SOCKET_IFNAME=enp6s0\n" + line.format(v="2.21.5"))
    assert (_first(named)["code"], _first(named)["cause"]) == ("NET001", "wrong_interface")  # LOG021's check
    found = tmp_path / "found.log"  # the named interface was found (NCCL bootstrapped from it): not the setting
    found.write_text("export NCCL_SOCKET_IFNAME=enp6s0\n"
                     "node1:10:10 [0] NCCL INFO Bootstrap : Using enp6s0:192.168.0.5<0>\n" + line.format(v="2.21.5"))
    assert _first(found)["cause"] == "nccl_internal_bug"


def test_unhandled_cuda_error_is_a_cause_only_when_nothing_else_names_one(tmp_path: Path) -> None:
    bare = tmp_path / "bare.log"
    bare.write_text("RuntimeError: NCCL error in: /pytorch/torch/lib/c10d/ProcessGroupNCCL.cpp:32, unhandled cuda "
                    "error, NCCL version 2.4.8\n")
    assert (_first(bare)["code"], _first(bare)["cause"]) == ("LOG070", "nccl_internal_bug")
    why = tmp_path / "why.log"  # NCCL's WARN names the failed call: the driver is older than NCCL's CUDA
    why.write_text("VM-192-150-centos:2871:2871 [0] misc/cudawrap.cc:182 NCCL WARN Cuda failure 'CUDA driver version "
                   "is insufficient for CUDA runtime version'\n"
                   "RuntimeError: NCCL error in: ProcessGroupNCCL.cpp:32, unhandled cuda error, NCCL version 2.18.1\n")
    assert _first(why)["cause"] == "driver_cuda_mismatch"
    assert all(f["code"] != "LOG070" for f in diagnose_file(why)["findings"])
