"""One row per rule: a real line it must match and a near-miss it must not (add yours here with your row).

Lines are real output: the GPU captures (fixtures/logs/nccl-*), the public corpus,
or the library's own format string filled in as it prints it. Also the tables'
invariants, and what a user sees for notes that are harmless in a working job.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import commdoctor.rules as rules
from commdoctor.core.model import CAUSES
from commdoctor.parsing.signatures import match_all
from commdoctor.rules.base import CONTEXT
from logs.test_corpus import diagnose_file

ROWS = [
    # (rule id, real line, near-miss)
    ("net_not_found",
     "[2026-11-24 22:41:10] vm:1083:1083 [0] plugin/net.cc:379 NCCL WARN Failed to initialize any NET plugin",
     "vm:867:867 [0] NCCL INFO Failed to initialize NET plugin IB"),
    ("net_not_found", "NCCL WARN Error: network IB not found.", "NCCL INFO NET/IB : No device found."),
    ("client_hostname_note",
     "[W1121 10:00:00.123 socket.cpp:752] [c10d] The hostname of the client socket cannot be retrieved. err=-3",
     "[W1121 10:00:00.123 socket.cpp:752] [c10d] The client socket has failed to connect to [node2]:29500"),
    ("store_started", "[I1127 14:35:51.629491402 TCPStore.cpp:271] [c10d - debug] The server has started on port = 29500.",
     "[I1127 14:35:51.6 socket.cpp:785] [c10d - debug] The server socket has started to listen on [::]:29500."),
    ("store_connected", "[I1127 14:41:53.038158423 TCPStore.cpp:316] [c10d - debug] TCP client connected to host 10.209.11.1:29500",
     "[E1127 14:38:37.0 TCPStore.cpp:328] [c10d] TCP client failed to connect/validate to host 10.209.28.1:29500 - timed out"),
    ("wrapper_barrier_error", "[rank1]: RuntimeError: ProcessGroupWrapper: Monitored Barrier encountered error running "
     "collective: CollectiveFingerPrint(SequenceNumber=4, OpType=ALLREDUCE, TensorShape=[1024]). Error: ",
     "[rank1]:[I1127 14:36:02.1 ProcessGroupWrapper.cpp:710] [Rank 1] Running collective: CollectiveFingerPrint("
     "SequenceNumber=0, OpType=ALLREDUCE, TensorShape=[1024])"),
    # A trace of every collective under DETAIL + TORCH_CPP_LOG_LEVEL=INFO, not a mismatch (bench/multihost_logs crash-loop-2).
    ("collective_mismatch", "[rank0]: RuntimeError: Detected mismatch between collectives on ranks. Rank 0 is running "
     "collective: CollectiveFingerPrint(SequenceNumber=4, OpType=ALLREDUCE, TensorShape=[1024], TensorDtypes=Float)",
     "[rank0]:[I1127 20:38:11.701546555 ProcessGroupWrapper.cpp:710] [Rank 0] Running collective: CollectiveFingerPrint("
     "SequenceNumber=0, OpType=ALLREDUCE, TensorShape=[1024], TensorDtypes=Float, TensorDeviceTypes=TensorOptions("
     "dtype=float (default), device=cpu, layout=Strided (default)))"),
    ("agent_keys_wait", "torch.distributed.DistStoreError: wait timeout after 30000ms, keys: /none/torchelastic/role_info/0, "
     "/none/torchelastic/role_info/1", "torch.distributed.DistStoreError: wait timeout after 30000ms, keys: /default_pg/0//cpu//0"),
    ("store_not_listening", "[I1127 14:51:40.271059614 socket.cpp:881] [c10d] No socket on (10.209.20.2, 29500) is "
     "listening yet, will retry.", "[I1127 14:50:48.2 socket.cpp:785] [c10d - debug] The client socket will attempt to "
     "connect to an IPv6 address of (10.209.20.2, 29500)."),
    ("gethostname_failed", "RuntimeError: gethostname() failed: Resource temporarily unavailable",
     "[c10d] The hostname of the client socket cannot be retrieved. err=-3"),
    ("watchdog_abort",
     "[rank0]:[E1124 22:43:00.293705519 ProcessGroupNCCL.cpp:764] [Rank 0] To avoid data inconsistency, we are taking "
     "the entire process down.",
     "[rank0]:[W1124 22:41:44.24 ProcessGroupNCCL.cpp:1575] Warning: WARNING: destroy_process_group() was not called"),
    # An H200 capture (fixtures/logs/nccl-cpu-tensor); the near-miss is torch's error for a group that cannot split.
    ("device_without_backend", "[rank0]: RuntimeError: No backend type associated with device type cpu",
     "RuntimeError: No backend for the parent process group or its backend does not support splitting"),
    ("duplicate_gpu", "vm:1010:1010 [0] init.cc:1043 NCCL WARN Duplicate GPU detected : rank 0 and rank 1 both on CUDA device 60",
     "vm:1010:1010 [0] NCCL INFO comm 0x1 rank 0 nRanks 2 nNodes 1 localRanks 2 localRank 0 MNNVL 0"),
    ("cuda_oom", "vm:1320:1320 [0] include/alloc.h:227 NCCL WARN Cuda failure 'out of memory'",
     "vm:1320:1320 [0] NCCL INFO cudaDriverVersion 13000"),
    # gloo's own messages (gloo/transport/tcp/pair.cc, as torch's wheels carry them) and torch's wrapper.
    ("gloo_connect_timeout", "RuntimeError: Gloo connectFullMesh failed with [../third_party/gloo/gloo/transport/tcp/"
     "pair.cc:144] Connect timeout [10.0.0.2]:45219", "RuntimeError: [enforce fail at pair.cc:144] Connect to peer done"),
    ("gloo_full_mesh", "RuntimeError: Gloo connectFullMesh failed with [../third_party/gloo/gloo/transport/tcp/pair.cc:144] "
     "no error", "[I ProcessGroupGloo.cpp:700] Gloo connectFullMesh succeeded"),
    ("gloo_pair_timeout", "RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:598] Application timeout caused "
     "pair closure", "RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:598] Application error"),
    ("conn_lost", "RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:589] Socket closed [10.0.0.2]:41235",
     "Socket closed cleanly at shutdown"),
    ("exit_barrier_error", "E1127 17:43:46.451000 7330 site-packages/torch/distributed/elastic/agent/server/api.py:1008] "
     "Error waiting on exit barrier. Elapsed: 0.015603303909301758 seconds",
     "I1127 17:43:46.45 7330 site-packages/torch/distributed/elastic/agent/server/api.py:1000] Done waiting for other "
     "agents. Elapsed: 0.0156 seconds"),
    ("agent_signalled", "torch.distributed.elastic.multiprocessing.api.SignalException: Process 25603 got signal: 15",
     '    raise SignalException(f"Process {os.getpid()} got signal: {sigval}", sigval=sigval)'),
    # Lines of the public corpus (../shared/corpus, case named), each with a line that reads alike and means otherwise.
    ("port_in_use", "The server socket has failed to bind to [::]:29500 (errno: 98 - Address already in use).",  # 001
     "The server socket has started to listen on [::]:29500."),
    ("name_resolution", "ValueError: host not found: Name or service not known",  # 043
     "[I socket.cpp:820] [c10d] The client socket has connected to [master]:29500 on [node2]:41234."),
    ("connect_loopback", "pair.cc:724] connect [127.0.1.1]:3210: Connection refused",  # 003
     "pair.cc:724] connect [10.0.0.7]:3210: Connection refused"),
    ("shm", "Error while creating shared memory segment /dev/shm/nccl-F9ffgB (size 9637888)",  # 006
     "NCCL INFO Channel 00 : 0[0] -> 1[1] via SHM/direct/direct"),
    ("driver_too_old", "init.cu:674 WARN Cuda failure 'CUDA driver version is insufficient for CUDA runtime version'",  # 019
     "NCCL INFO cudaDriverVersion 12040"),
    ("fabric_not_ready", "test: Test CUDA failure common.cu:941 'system not yet initialized'",  # 018
     "NCCL INFO NVLS multicast support is not available on dev 0"),
    ("memlock", "ib_iface.c:1035 UCX  ERROR ibv_create_cq(cqe=4096) failed: Cannot allocate memory",  # 024
     "ib_iface.c:1035 UCX  ERROR ibv_create_cq(cqe=4096) failed: Invalid argument"),
    ("ib_qp", "ibvwrap.cc: NCCL WARN Call to ibv_modify_qp failed with error Connection timed out",  # 016
     "NCCL INFO NET/IB : Using [0]mlx5_0:1/RoCE [RO]; OOB eth0:10.0.0.1<0>"),
    ("ib_async", "NCCL WARN NET/IB : Got async event : port error",  # 027
     "NCCL INFO NET/IB: Dev 0 Port 1 qpn 1229 mtu 5 GID 3 (0/0) fe80::1"),
    ("msg_truncated", "bootstrap.cc:77 NCCL WARN Message truncated : received 256 bytes instead of 4",  # 013
     "bootstrap.cc:77 NCCL INFO Message received : 256 bytes"),
    ("topo_attr", "graph/xml.h:101 NCCL WARN Attribute arch of node cpu not found",  # 041
     "NCCL INFO Attribute coll of comm 0x1 is set to ring"),
    ("nccl_mismatched_collective", "init.cu:1197 NCCL WARN Mismatched collective detected, please check your collective "
     "calls at and around rank 11.", "NCCL INFO Collective AllReduce is matched on rank 11"),  # 037
    ("collective_mismatch", "RuntimeError: Detected mismatch between collectives on ranks. Rank 0 is running inconsistent "
     "collective: CollectiveFingerPrint(OpType=BROADCAST", "[I ProcessGroupWrapper.cpp] collectives on ranks matched"),  # 007
    ("store_get_timeout", "RuntimeError: [6] is setting up NCCL communicator and retrieving ncclUniqueId from [0] via c10d "
     "key-value store by key '0', but store->get('0') got error: Socket Timeout",  # 022
     "[6] is setting up NCCL communicator and retrieving ncclUniqueId from [0] via c10d key-value store by key '0'"),
    ("watchdog_timeout", "[E ProcessGroupNCCL.cpp:475] [Rank 4] Watchdog caught collective operation timeout: "
     "WorkNCCL(SeqNum=20518, OpType=ALLREDUCE, NumelIn=106496, NumelOut=106496, Timeout(ms)=1800000) ran for 1800270 "
     "milliseconds before timing out.", "[I ProcessGroupNCCL.cpp:900] [Rank 4] ProcessGroupNCCL initialization options: "
     "TIMEOUT(ms): 1800000"),  # 010
    ("gloo_recv_timeout", "RuntimeError: [unbound_buffer.cc:78] Timed out waiting 20000ms for recv operation to complete",
     "[job] waited 20000ms for recv of the batch"),  # fixtures/logs/gloo-mismatch-timeout
    ("mpi_btl_tcp", "[btl_tcp_endpoint.c:626:mca_btl_tcp_endpoint_recv_connect_ack] received unexpected process identifier "
     "[[22157,1],7]", "[btl_tcp_component.c:1000] using interface ib0 for btl tcp"),  # 023
    # Open MPI's help texts (orte/mca/errmgr help-errmgr-base.txt, plm help-plm-base.txt) as mpirun prints them.
    ("mpi_daemon_connect", "ORTE was unable to reliably start one or more daemons.",
     "reason: lost communication with a remote daemon"),
    ("mpirun_signal", "mpirun noticed that process rank 3 with PID 4242 on node node07 exited on signal 11 "
     "(Segmentation fault).", "mpirun noticed that process rank 3 with PID 4242 on node node07 exited with status 1"),
    ("process_died", "  traceback : Signal 9 (SIGKILL) received by PID 1133",  # fixtures/logs/nccl-peer-died
     "  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html"),
]


@pytest.mark.parametrize("rule, line, near", ROWS, ids=[f"{r[0]}-{i}" for i, r in enumerate(ROWS)])
def test_row_matches_its_line_and_not_the_near_miss(rule: str, line: str, near: str) -> None:
    check_row(rule, line, near)


def check_row(rule: str, line: str, near: str) -> None:
    """A rule row matches its real line and not the near-miss (the test every new row gets; tests/logs/test_threads*.py
    call it for theirs)."""
    assert rule in rules.BY_ID
    assert rule in [s.id for s, _ in match_all(line)]
    assert rule not in [s.id for s, _ in match_all(near)]


def test_tables_hold_together() -> None:
    codes = {c.code for c in rules.CODES}
    assert len(codes) == len(rules.CODES), "a code is declared twice"
    for s in rules.SIGNATURES:
        assert s.role in ("root", "consequence", "context"), s.id
        if s.code:
            assert s.code in codes, f"{s.id} gives {s.code}, which no family declares"
        if s.role != CONTEXT:
            assert s.cause, f"{s.id}: a root or consequence row names its cause"
        # a needle every line holds ("]", ": ") sends every line down the slow path: 3 MB/s instead of 500
        for n in s.needles:
            assert len(n) >= 3 and any(ch.isalnum() for ch in n), f"{s.id}: needle {n!r} is too common to select lines"
    assert {name for name, _ in rules.FAMILIES} == {"system", "nccl", "torch", "gloo", "mpi", "xla", "horovod", "paddle", "oneccl", "launcher"}


def test_log_verdicts_speak_the_corpus_vocabulary() -> None:
    """The causes a log's rows, codes and alternatives name are the shared corpus's labels, so that a verdict can equal
    a thread's label; the live checks' extra causes (advice such as backend_unavailable) are not among them."""
    corpus = CAUSES - {"performance_setting", "environment_misconfig", "backend_unavailable"}
    named = {s.cause for s in rules.SIGNATURES if s.cause} | {c.cause for c in rules.CODES if c.cause}
    named |= {cause for s in rules.SIGNATURES for cause, _ in s.alts}
    assert named <= corpus, named - corpus
    src = "".join(p.read_text() for p in Path(rules.__file__).parent.glob("*.py"))
    for extra in ("performance_setting", "environment_misconfig", "backend_unavailable"):
        assert f'"{extra}"' not in src, f"a rule's build names {extra}"


def test_hostname_note_in_a_working_gloo_job_is_not_a_cause(tmp_path: Path) -> None:
    """torch warns when it cannot name a peer's address for a log line; the job connected by address and ran."""
    p = tmp_path / "node1.log"
    p.write_text(
        "[W1121 10:00:00.100 socket.cpp:752] [c10d] The hostname of the client socket cannot be retrieved. err=-3\n"
        "[W1121 10:00:00.200 socket.cpp:752] [c10d] The hostname of the client socket cannot be retrieved. err=-3\n"
        "[job] rank 0 step 9 loss 0.0905\n")
    assert [f for f in diagnose_file(p)["findings"] if f["cause"]] == []


def test_errors_no_rule_knows_are_an_unrecognised_failure_naming_each_rank(tmp_path: Path) -> None:
    p = tmp_path / "job.log"
    p.write_text(
        "[rank0]:[E1121 10:00:00.1 ProcessGroupNCCL.cpp:900] [PG ID 0 PG GUID 0 Rank 0] frobnication failed: widget 7\n"
        "[rank1]:[E1121 10:00:00.2 ProcessGroupNCCL.cpp:900] [PG ID 0 PG GUID 0 Rank 1] frobnication failed: widget 9\n"
        "[rank1]:[E1121 10:00:00.3 ProcessGroupNCCL.cpp:900] [PG ID 0 PG GUID 0 Rank 1] frobnication failed again\n")
    found = [f for f in diagnose_file(p)["findings"] if f["code"] == "LOG080"]
    assert found and found[0]["cause"] is None  # quoted, not guessed: no cause for lines no rule understands
    assert found[0]["title"].startswith("unrecognised failure: first error of rank(s) 0, 1")
    assert [e["text"][-8:] for e in found[0]["evidence"]] == ["widget 7", "widget 9"]  # one, the first, per rank


# torch 2.x socket.cpp's own wording ("The {}network addresses of ({}, {}) cannot be retrieved (gai error: {} - {})."
# and "The client socket has failed to connect to {} {}."), as a two-host gloo job prints it when node2's worker
# starts before node1's store is up and the name has no IPv6 address.
NOTES = (
    "[W1121 10:00:00.100 socket.cpp:752] [c10d] The hostname of the client socket cannot be retrieved. err=-3\n"
    "[W1121 10:00:00.110 socket.cpp:464] [c10d] The IPv6 network addresses of (node1, 29500) cannot be retrieved "
    "(gai error: -2 - Name or service not known).\n"
    "[W1121 10:00:00.120 socket.cpp:464] [c10d] The client socket has failed to connect to [node1]:29500 "
    "(errno: 111 - Connection refused).\n")


def test_notes_of_a_working_two_host_job_carry_no_cause(tmp_path: Path) -> None:
    p = tmp_path / "node2.log"
    p.write_text(NOTES + "[job] rank 1 step 9 loss 0.0905\n")
    assert [f for f in diagnose_file(p)["findings"] if f["cause"]] == []


def test_notes_do_not_outrank_the_failure_of_a_job_that_failed(tmp_path: Path) -> None:
    p = tmp_path / "node2.log"
    p.write_text(NOTES + "[rank1]: RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:534] Read error "
                         "[10.0.0.1]:41235: Connection reset by peer\n")
    found = [f for f in diagnose_file(p)["findings"] if f["cause"]]
    assert found[0]["cause"] == "peer_process_died"
    assert "hostname_resolution" not in [f["cause"] for f in found]


def test_an_ipv4_lookup_failure_in_a_failed_job_is_the_name(tmp_path: Path) -> None:
    p = tmp_path / "node2.log"
    p.write_text("[W1121 10:00:00.110 socket.cpp:464] [c10d] The IPv4 network addresses of (node1, 29500) cannot be "
                 "retrieved (gai error: -2 - Name or service not known).\n"
                 "torch.distributed.DistNetworkError: The client socket has timed out after 900000ms while trying to "
                 "connect to (node1, 29500).\n")
    found = [f for f in diagnose_file(p)["findings"] if f["cause"]]
    assert found[0]["code"] == "LOG015" and found[0]["cause"] == "hostname_resolution"


def test_master_addr_of_an_env_rendezvous_that_does_not_resolve_is_the_master_missing(tmp_path: Path) -> None:
    """Near-miss of the above: through init_process_group's env:// rendezvous the name is the MASTER_ADDR the job was
    given; not resolving, it is the master's endpoint that is missing (kubeflow/pytorch-operator#125: workers started
    before the master's pod and service)."""
    p = tmp_path / "worker.log"
    p.write_text('  File "/usr/lib/python3/site-packages/torch/distributed/rendezvous.py", line 143, in _env_rendezvous_handler\n'
                 "    store = TCPStore(master_addr, master_port, start_daemon)\n"
                 "ValueError: host not found: Name or service not known\n")
    found = [f for f in diagnose_file(p)["findings"] if f["cause"]]
    assert found[0]["code"] == "LOG015" and found[0]["cause"] == "rendezvous_unreachable"
    assert "MASTER_ADDR" in found[0]["title"]


def test_a_gloo_mesh_timeout_is_the_connect_timeout_not_the_wrapper(tmp_path: Path) -> None:
    p = tmp_path / "node2.log"
    p.write_text("[rank1]: RuntimeError: Gloo connectFullMesh failed with [../third_party/gloo/gloo/transport/tcp/"
                 "pair.cc:144] Connect timeout [10.0.0.1]:45219\n")
    found = [f for f in diagnose_file(p)["findings"] if f["cause"]]
    assert (found[0]["code"], found[0]["cause"]) == ("LOG025", "firewall_or_port_blocked")
    assert not [f for f in found if f["code"] == "LOG022"]


def test_nccl_warnings_a_working_job_prints_are_not_an_unrecognised_failure(tmp_path: Path) -> None:
    """NCCL WARNs that it goes on past (net_ib.cc's NIC path in a VM, a missing verbs library) are not errors."""
    p = tmp_path / "rank0.log"
    p.write_text("n1:10:10 [0] misc/ibvwrap.cc:63 NCCL WARN Failed to open libibverbs.so[.1]\n"
                 "n1:10:10 [0] transport/net_ib.cc:300 NCCL WARN Could not find real path of mlx5_0 "
                 "(/sys/class/infiniband/mlx5_0/device)\n"
                 "[job] rank 0 step 9 loss 0.0905\n")
    assert [f for f in diagnose_file(p)["findings"] if f["cause"] or f["code"] == "LOG080"] == []
    q = tmp_path / "old.log"  # the GPU's PCI path (graph/xml.cc) returns ncclSystemError: an error, never "healthy"
    q.write_text("n1:10:10 [0] graph/topo.cc:90 NCCL WARN Could not find real path of /sys/class/pci_bus/0000:00/../../0000:3b:00.0\n")
    assert [f["code"] for f in diagnose_file(q)["findings"]][:1] == ["LOG070"]  # tests/logs/test_threads10.py
