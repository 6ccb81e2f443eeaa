"""Messages the development corpus lacks, built from the format strings that print them.

Each line is what the named source writes (its format string filled with plausible values); the
test asserts the first finding a user sees and its cause, plus that a healthy NCCL INFO run
yields no finding at all. Provenance: NVIDIA/nccl at the tag or path named beside each line,
torch's c10d and gloo sources (the strings are also in libtorch_cpu.so), and the issue threads
named where the meaning of a message comes from a maintainer's reading.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from logs.test_corpus import diagnose_file

H = "node1:4242:4300 [0] "

CASES = [
    # NCCL src/transport/net_ib/common.cc: "NET/IB : %s:%d async fatal event: %s" (2.19+).
    (H + "transport/net_ib/common.cc:123 NCCL WARN NET/IB : mlx5_2:1 async fatal event: local catastrophic error",
     "LOG037", "hardware_fault"),
    (H + "NCCL WARN NET/IB : mlx5_2:1 async fatal event on QP (0x55d0c0) qpn=1234 handle=5 send_cq=1 recv_cq=2 state=6 "
         "sq_psn=0 : local work queue catastrophic error", "LOG037", "hardware_fault"),
    # net_ib/connect.cc: NICs of different link types.
    (H + "transport/net_ib/connect.cc:987 NCCL WARN NET/IB : Attempted to connect incompatible devices: [0]mlx5_0:1/IB and "
         "[1]mlx5_1:1/RoCE. Try selecting NICs of only one link type using NCCL_IB_HCA", "LOG036", "ib_misconfig"),
    # init.cc: "Detected mixed local Net device counts across ranks (min %d, max %d)".
    (H + "init.cc:1339 NCCL WARN Detected mixed local Net device counts across ranks (min 4, max 8). Set "
         "NCCL_IGNORE_NET_MISMATCH=1 to ignore this warning", "LOG036", "ib_misconfig"),
    # misc/ibvwrap.cc "Call to %s failed with error %s": GPU memory registration (GPUDirect RDMA).
    (H + "misc/ibvwrap.cc:68 NCCL WARN Call to ibv_reg_mr_iova2 failed with error Bad address", "LOG038", "p2p_acs_iommu"),
    # misc/socket.cc (2.18-2.21): connect errors after retries; ECONNABORTED is a refusal (NVIDIA/nccl#1515).
    (H + "misc/socket.cc:483 NCCL WARN socketStartConnect: Connect to 10.0.0.2<45763> failed : Software caused connection abort",
     "LOG022", "wrong_interface"),
    (H + "misc/socket.cc:467 NCCL WARN socketStartConnect: exceeded retries (20000)", "LOG022", "wrong_interface"),
    (H + "misc/socket.cc:476 NCCL WARN socketStartConnect: exceeded timeouts (1000)", "LOG025", "firewall_or_port_blocked"),
    # The same connect, to a link-local address (NVIDIA/nccl#975): only one link can reach it.
    (H + "misc/socket.cc:483 NCCL WARN socketStartConnect: Connect to fe80::966d:ae03:a2:8cf0%ib1<17943> failed : Software "
         "caused connection abort", "LOG020", "wrong_interface"),
    # misc/socket.cc ncclFindInterfaceMatchSubnet and bootstrap.cc's NCCL_COMM_ID parsing.
    (H + "misc/socket.cc:238 NCCL WARN Net : No interface found in the same subnet as remote address 10.9.0.1<29500>",
     "LOG011", "rendezvous_unreachable"),
    (H + "bootstrap.cc:114 NCCL WARN Invalid NCCL_COMM_ID, please use format: <ipv4>:<port> or [<ipv6>]:<port> or <hostname>:<port>",
     "LOG011", "rendezvous_unreachable"),
    # bootstrap.cc and transport/net_socket.cc: no interface matches the setting.
    (H + "bootstrap.cc:577 NCCL WARN no device found matching eth9, verify NCCL_OOB_NET_IFNAME", "NET001", "wrong_interface"),
    (H + "transport/net_socket.cc:61 NCCL WARN NET/Socket : no interface found", "NET001", "wrong_interface"),
    # misc/shmutils.cc (2.12+).
    (H + "misc/shmutils.cc:72 NCCL WARN Error: failed to extend /dev/shm/nccl-Bb1Z4s to 9637892 bytes", "ENV030", "shm_too_small"),
    (H + "misc/shmutils.cc:83 NCCL WARN Could not map /dev/shm/nccl-Bb1Z4s size 9637892, error: Cannot allocate memory",
     "ENV030", "shm_too_small"),
    # init.cc (newer releases' words for a duplicate GPU).
    (H + "init.cc:1057 NCCL WARN Multiple Ranks are using the same GPU/Partition. Set NCCL_MULTI_RANK_GPU_ENABLE=1 to enable "
         "this configuration.", "LOG034", "duplicate_gpu"),
    # transport/p2p.cc: CUDA IPC refused.
    (H + "transport/p2p.cc:250 NCCL WARN cudaIpcGetMemHandle failed : operation not supported", "LOG039", "p2p_driver_bug"),
    # transport/net_socket.cc: the peer sent more than was posted.
    (H + "transport/net_socket.cc:636 NCCL WARN NET/Socket : peer 10.0.0.2<50432> message truncated : receiving 1048576 bytes "
         "instead of 65536. If you believe your socket network is in a healthy state, there may be a mismatch in collective "
         "sizes or environment settings (e.g. NCCL_PROTO, NCCL_ALGO) between ranks", "LOG050", "collective_mismatch"),
    # graph/rings.cc (NVIDIA/nccl#1020, fixed in 2.20; #879 with NCCL_HOSTID).
    (H + "graph/rings.cc:38 NCCL WARN Error : ring 0 does not loop back to start (13 != 15)", "LOG070", "nccl_internal_bug"),
    (H + "NCCL WARN Cuda failure 'peer mapping resources exhausted'", "LOG070", "nccl_internal_bug"),
    # graph/xml.cc: a topology file written for another release.
    (H + "graph/xml.cc:394 NCCL WARN XML Topology has wrong version 1, 2 needed", "LOG071", "other"),
    # cudaErrorDevicesUnavailable: exclusive compute mode refusing a second process.
    ("RuntimeError: CUDA error: CUDA-capable device(s) is/are busy or unavailable", "LOG034", "duplicate_gpu"),
    # torch TCPStore.cpp "wait timeout after {}ms, keys: {}", and its client's "Socket Timeout".
    ("torch.distributed.DistStoreError: wait timeout after 1800000ms, keys: /default_pg//0//cuda//0",
     "LOG055", "collective_timeout_straggler"),
    ("torch.distributed.DistStoreError: Socket Timeout", "LOG055", "collective_timeout_straggler"),
    # torch socket.cpp: the chrono duration prints as seconds too.
    ("torch.distributed.DistNetworkError: The client socket has timed out after 900s while trying to connect to (10.0.0.1, 29500).",
     "LOG011", "rendezvous_unreachable"),
    # torch Utils.hpp recvBytes when the store's host went away.
    ("torch.distributed.DistNetworkError: Failed to recv, got 0 bytes. Connection was likely closed. Did the remote server "
     "shutdown or crash?", "LOG061", "peer_process_died"),
    # torch's DataLoader and the kernel: SIGBUS from shared memory that cannot be backed.
    ("ERROR: Unexpected bus error encountered in worker. This might be caused by insufficient shared memory (shm).",
     "ENV030", "shm_too_small"),
    ("torch.distributed.elastic.multiprocessing.api:[ERROR] failed (exitcode: -7) local_rank: 0 (pid: 8262) of binary: "
     "/usr/bin/python3", "ENV030", "shm_too_small"),
    # ProcessGroupGloo.cpp monitoredBarrier naming the rank it got errors from.
    ("[rank1]:[E ProcessGroupGloo.cpp:143] Rank 1 successfully reached monitoredBarrier, but received errors while waiting "
     "for send/recv from rank 0. Please check rank 0 logs for faulty rank.", "LOG060", "peer_process_died"),
    # torch/nn/parallel/distributed.py verify_params_across_processes.
    ("RuntimeError: [1]: params[0] in this process with sizes [1024, 512] appears not to match sizes of the same param in "
     "process 0.", "LOG050", "collective_mismatch"),
    # NCCL's error class with no WARN line beside it (torch NCCLUtils). A release other than 2.18: 2.18 reported failed
    # network calls as internal errors, which round 9 reads as LOG028 (tests/logs/test_threads9.py).
    ("torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:121, internal error - "
     "please report this issue to the NCCL developers, NCCL version 2.19.3\nncclInternalError: Internal check failed.",
     "LOG070", "nccl_internal_bug"),
]


@pytest.mark.parametrize("text, code, cause", CASES, ids=[f"{c[1]}-{i}" for i, c in enumerate(CASES)])
def test_first_finding(tmp_path: Path, text: str, code: str, cause: str) -> None:
    (tmp_path / "job.log").write_text(text + "\n")
    doc = diagnose_file(tmp_path / "job.log")
    named = [f for f in doc["findings"] if f["cause"]]
    assert named, "no finding"
    assert (named[0]["code"], named[0]["cause"]) == (code, cause), [(f["code"], f["cause"]) for f in named]
    assert named[0]["remedy"]["summary"]


def test_a_specific_cause_comes_before_the_watchdog_and_the_closed_connections(tmp_path: Path) -> None:
    (tmp_path / "rank0.log").write_text(
        "[rank0]:[E1121 10:00:00.1 ProcessGroupNCCL.cpp:632] [Rank 0] Watchdog caught collective operation timeout: "
        "WorkNCCL(SeqNum=9, OpType=ALLREDUCE, NumelIn=10, NumelOut=10, Timeout(ms)=600000) ran for 600012 milliseconds before timing out.\n"
        "node1:1:2 [0] misc/socket.cc:50 NCCL WARN socketProgress: Connection closed by remote peer node2<4000>\n")
    (tmp_path / "rank1.log").write_text(
        "node2:5:6 [1] transport/net_ib/common.cc:123 NCCL WARN NET/IB : mlx5_0:1 async fatal event: port error\n")
    named = [(f["code"], f["cause"], f["consequence_of"]) for f in diagnose_file(tmp_path)["findings"] if f["cause"]]
    assert named[0] == ("LOG037", "hardware_fault", None)
    assert ("LOG061", "peer_process_died", "LOG037") in named and ("LOG051", "collective_timeout_straggler", "LOG037") in named


HEALTHY = """\
node1:1000:1000 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>
node1:1000:1000 [0] NCCL INFO cudaDriverVersion 12020
NCCL version 2.21.5+cuda12.4
node1:1000:1050 [0] NCCL INFO NCCL_SOCKET_IFNAME set by environment to eth0
node1:1000:1050 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/RoCE [1]mlx5_1:1/RoCE [RO]; OOB eth0:10.0.0.1<0>
node1:1000:1050 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0> [1]ib0:fe80::ba59:9f03:aa:bb%ib0<0>
node1:1000:1050 [0] NCCL INFO Using network IB
node1:1000:1050 [0] NCCL INFO ncclCommInitRank comm 0x55d0c0 rank 0 nranks 4 cudaDev 0 nvmlDev 0 busId 18000 commId 0xabc - Init START
node1:1000:1050 [0] NCCL INFO Channel 00/0 : 3[1] -> 0[0] [receive] via NET/IB/0/GDRDMA
node1:1000:1050 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC/read
node1:1000:1050 [0] NCCL INFO Call to connect returned Connection refused, retrying
node1:1000:1050 [0] NCCL INFO ncclCommInitRank comm 0x55d0c0 rank 0 nranks 4 cudaDev 0 nvmlDev 0 busId 18000 commId 0xabc - Init COMPLETE
node1:1000:1100 [0] NCCL INFO [Service thread] Connection closed by localRank 1
node1:1000:1000 [0] NCCL INFO comm 0x55d0c0 rank 0 nranks 4 cudaDev 0 busId 18000 - Destroy COMPLETE
[rank0]:[W ProcessGroupNCCL.cpp:1250] Warning: WARNING: process group has NOT been destroyed before we destruct ProcessGroupNCCL. On normal program exit, the application should call destroy_process_group to ensure that any pending NCCL operations have finished in this process.
INFO:torch.distributed.elastic.agent.server.api:Local worker group finished (WorkerState.SUCCEEDED). Waiting 300 seconds for other agents to finish
"""


def test_a_healthy_ib_run_has_no_finding(tmp_path: Path) -> None:
    """Healthy output: INFO retries, a link-local address in NET/Socket's list on an IB run, torch's
    'Warning: WARNING' at exit (not NCCL's WARN level word)."""
    (tmp_path / "rank0.log").write_text(HEALTHY)
    doc = diagnose_file(tmp_path / "rank0.log")
    assert [(f["code"], f["cause"]) for f in doc["findings"] if f["cause"]] == []


def test_link_local_in_the_socket_list_still_counts_when_sockets_carry_data(tmp_path: Path) -> None:
    (tmp_path / "rank0.log").write_text(HEALTHY.replace("Using network IB", "Using network Socket")
                                        + "node1:1000:1050 [0] misc/socket.cc:50 NCCL WARN socketProgress: Connection closed by remote peer node2<4000>\n")
    named = [(f["code"], f["cause"]) for f in diagnose_file(tmp_path / "rank0.log")["findings"] if f["cause"]]
    assert ("LOG020", "wrong_interface") in named


def test_pythons_fatal_abort_is_a_process_that_died() -> None:
    # CPython's faulthandler (Python/pylifecycle.c, fatal_error): "Fatal Python error: Aborted" for a process that
    # received SIGABRT; a start-up failure says what failed instead.
    from logs.test_rule_rows import check_row
    check_row("process_died", "Fatal Python error: Aborted",
              "Fatal Python error: init_fs_encoding: failed to get the Python codec of the filesystem encoding")
