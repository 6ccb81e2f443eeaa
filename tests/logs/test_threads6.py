"""Public failure threads, round 6 (fixtures/logs/threads/*/PROVENANCE.md names each thread).

Each rule row has a real line and a near-miss that must not match; the fixtures run through `commdoctor logs
--json` as a user would.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from logs import test_threads as round1
from logs.test_corpus import diagnose_file
from logs.test_rule_rows import check_row

ROWS = [
    # (rule id, real line, near-miss)
    # ncclGetErrorString: ncclSystemError -> "unhandled system error", ncclRemoteError -> "remote process exited or
    # there was a network error"; torch echoes it after "NCCL error in: FILE:LINE,". A CUDA error is another code.
    ("nccl_system_error", "RuntimeError: NCCL error in: /pytorch/torch/lib/c10d/ProcessGroupNCCL.cpp:518, unhandled "
     "system error, NCCL version 2.4.8",  # deepinsight/insightface#1444
     "RuntimeError: NCCL error in: /pytorch/torch/lib/c10d/ProcessGroupNCCL.cpp:518, unhandled cuda error, NCCL "
     "version 2.4.8"),
    ("nccl_system_error", "fail to new train...e= NCCL error in: /pytorch/torch/lib/c10d/ProcessGroupNCCL.cpp:272, "
     "unhanled system error",  # pytorch/pytorch#23363, the program's own spelling
     "fail to new train...e= NCCL error in: /pytorch/torch/lib/c10d/ProcessGroupNCCL.cpp:272, invalid usage"),
    ("nccl_system_error", "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/"
     "ProcessGroupNCCL.cpp:1333, remote process exited or there was a network error, NCCL version 2.18.6",
     "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1333, "
     "internal error - please report this issue to the NCCL developers, NCCL version 2.18.6"),
    # lightning/fabric/utilities/distributed.py, rank 0 once every rank joined; a rank's own init line is not it.
    ("lightning_all_registered", "All distributed processes registered. Starting with 2 processes",  # chengzhag/PanFusion#7
     "Initializing distributed: GLOBAL_RANK: 1, MEMBER: 2/2"),
    # orte oob/tcp contact URI ("JOBID.VPID;tcp://ADDR[,ADDR]:PORT"); a plain tcp:// URL (a rendezvous endpoint) is not it.
    ("mpi_contact_uri", "2844262400.0;tcp://172.17.0.2:56711",  # horovod/horovod#1684
     "init_method=tcp://172.17.0.2:56711"),
    # uct/sm/mm/base/mm_iface.c: the shared-memory receive FIFO could not be allocated; another mm_iface error is not it.
    ("ucx_shm_fifo", "mm_iface failed to allocate receive FIFO",  # NVIDIA/ai-cloud-validation#643
     "mm_iface failed to allocate memory pool for receive descriptors"),
    # NCCL's net plugin loader: a loaded libnccl-net.so, or none found; the tuner plugin's lines are another plugin.
    ("net_plugin_loaded", "HGX-H100-04:589474:589541 [0] NCCL INFO Plugin Path : /opt/hpcx/nccl_rdma_sharp_plugin/lib/"
     "libnccl-net.so",  # NVIDIA/nccl#1634
     "HGX-H100-04:589474:589541 [0] NCCL INFO Plugin Path : /opt/nccl/lib/libnccl-tuner.so"),
    ("net_plugin_none", "HGX-H100-11:18226:18274 [5] NCCL INFO NET/Plugin: Could not find: libnccl-net.so. Using "
     "internal network plugin.",  # NVIDIA/nccl#1634
     "HGX-H100-11:18226:18274 [5] NCCL INFO TUNER/Plugin: Could not find: libnccl-tuner.so. Using internal tuner plugin."),
    # ncclGetErrorString(ncclInvalidUsage) in torch's message; another result code in the same place is not it.
    ("nccl_invalid_usage", "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/"
     "ProcessGroupNCCL.cpp:1333, invalid usage (run with NCCL_DEBUG=WARN for details), NCCL version 2.18.6",  # csguoh/MambaIR#39
     "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1333, "
     "invalid argument (run with NCCL_DEBUG=WARN for details), NCCL version 2.18.6"),
]

FIXTURES = [
    # (slug, first cause, causes that must be among the first three)
    ("insightface-1444-docker-unhandled-system", "wrong_interface", ("shm_too_small",)),
    ("pytorch-23363-two-containers-unhanled", "wrong_interface", ()),
    # Only rank 1's init line was posted, but rank 0's "all registered" says both joined: the SIGKILL is the cause.
    ("panfusion-7-lightning-child-killed", "peer_process_died", ()),
    # mpirun's only contact address is a docker-bridge one: the daemons elsewhere cannot reach it.
    ("horovod-1684-orte-docker0-uri", "wrong_interface", ("launcher_misconfig",)),
    # A barrier (one-element ALLREDUCE) timing out after 28,956 collectives: a rank late to it, not a library deadlock.
    ("torchtune-2093-save-checkpoint-timeout", "collective_timeout_straggler", ()),
    # UCX's shared-memory FIFO in a pod's 64Mi /dev/shm; the segfault after it is the consequence.
    ("aicloud-643-k8s-ucx-shm-fifo", "shm_too_small", ()),
    # One node loads HPC-X's net plugin, the other none: two network stacks between the nodes of a hung test.
    ("nccl-1634-net-plugin-on-some-nodes", "version_mismatch", ()),
]


@pytest.mark.parametrize("rule, line, near", ROWS, ids=[f"{r[0]}-{i}" for i, r in enumerate(ROWS)])
def test_row_matches_its_line_and_not_the_near_miss(rule: str, line: str, near: str) -> None:
    check_row(rule, line, near)


@pytest.mark.parametrize("slug, first, top3", FIXTURES, ids=[f[0] for f in FIXTURES])
def test_public_thread_fixture(slug: str, first: str, top3: tuple[str, ...]) -> None:
    round1.check_fixture(slug, first, top3)


SYSERR = ("RuntimeError: NCCL error in: /pytorch/torch/lib/c10d/ProcessGroupNCCL.cpp:518, unhandled system error, "
          "NCCL version 2.4.8\n")


def test_bare_system_error_names_the_network_and_says_what_else_it_can_be(tmp_path: Path) -> None:
    p = tmp_path / "rank1.log"
    p.write_text(SYSERR)
    doc = diagnose_file(p)
    first = doc["findings"][0]
    assert (first["code"], first["cause"]) == ("LOG028", "wrong_interface")
    alts = [f["title"] for f in doc["findings"] if f["code"] == "LOG090"]
    assert any("shm too small" in t for t in alts) and any("peer process died" in t for t in alts)


def test_system_error_is_not_the_cause_when_a_line_says_why(tmp_path: Path) -> None:
    p = tmp_path / "rank0.log"  # NCCL's own WARN names the failed call: the /dev/shm segment, not the network
    p.write_text("node:1:2 [0] include/shm.h:28 NCCL WARN Call to posix_fallocate failed : No space left on device\n"
                 + SYSERR)
    first = diagnose_file(p)["findings"][0]
    assert first["cause"] == "shm_too_small" and first["code"] != "LOG028"


def test_remote_error_after_the_job_ran_is_not_blamed_on_the_interface(tmp_path: Path) -> None:
    p = tmp_path / "rank0.log"  # hundreds of collectives went through before the peer's connection dropped
    p.write_text("[rank0]:[E ProcessGroupNCCL.cpp:1316] [PG 0 Rank 0] Process group watchdog thread terminated with "
                 "exception: NCCL error: remote process exited or there was a network error, NCCL version 2.20.5\n"
                 "[rank0]:[E ProcessGroupNCCL.cpp:607] [Rank 0] Watchdog caught collective operation timeout: "
                 "WorkNCCL(SeqNum=4521, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600013 "
                 "milliseconds before timing out.\n")
    assert all(f["code"] != "LOG028" for f in diagnose_file(p)["findings"])


def test_a_rank_missing_from_the_paste_is_not_a_rank_that_never_started(tmp_path: Path) -> None:
    one = "Initializing distributed: GLOBAL_RANK: 1, MEMBER: 2/2\n"
    p = tmp_path / "rank1.log"
    p.write_text(one)  # only rank 1 of 2 ever said it started: the launcher started the wrong set of ranks
    assert diagnose_file(p)["findings"][0]["code"] == "LOG062"
    q = tmp_path / "both.log"
    q.write_text(one + "All distributed processes registered. Starting with 2 processes\n")
    assert all(f["code"] != "LOG062" for f in diagnose_file(q)["findings"])


def test_orte_contact_uri_with_a_routable_address_leaves_the_daemon_failure_as_it_was(tmp_path: Path) -> None:
    fail = "ORTE was unable to reliably start one or more daemons.\n"
    p = tmp_path / "bridge.log"
    p.write_text("2844262400.0;tcp://172.17.0.2:56711\n" + fail)
    assert diagnose_file(p)["findings"][0]["cause"] == "wrong_interface"
    q = tmp_path / "routable.log"  # the daemons could reach 192.168.70.27: the install or ssh is as likely
    q.write_text("1161428992.0;tcp://192.168.70.27,172.17.0.1:45413\n" + fail)
    assert diagnose_file(q)["findings"][0]["cause"] == "launcher_misconfig"


def test_remote_error_after_a_reset_connection_is_not_blamed_on_the_interface(tmp_path: Path) -> None:
    p = tmp_path / "rank0.log"  # the connection was up and the peer's host reset it: a dead peer or a link (corpus 033)
    p.write_text("torch.distributed.DistBackendError: NCCL error in: /pytorch/torch/csrc/distributed/c10d/NCCLUtils.hpp:268,"
                 " remote process exited or there was a network error, NCCL version 2.21.5\n"
                 "socketProgressOpt: Call to recv from 10.0.0.2<33759> failed : Connection reset by peer\n")
    assert all(f["code"] != "LOG028" for f in diagnose_file(p)["findings"])
    q = tmp_path / "rank1.log"  # the same error with no reset: the connections never worked
    q.write_text("torch.distributed.DistBackendError: NCCL error in: /pytorch/torch/csrc/distributed/c10d/NCCLUtils.hpp:268,"
                 " remote process exited or there was a network error, NCCL version 2.21.5\n")
    found = diagnose_file(q)["findings"]
    assert found[0]["code"] == "LOG028"
    assert not any(f["code"] == "LOG090" and "shm" in f["title"] for f in found)  # /dev/shm is a system call's, not this


def _watchdog(seq: int, numel: int) -> str:
    return (f"[rank3]:[E ProcessGroupNCCL.cpp:618] [Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum="
            f"{seq}, OpType=ALLREDUCE, NumelIn={numel}, NumelOut={numel}, Timeout(ms)=600000) ran for 600058 milliseconds "
            "before timing out.\n")


def test_a_late_barrier_is_a_straggler_and_a_late_gradient_all_reduce_a_hang(tmp_path: Path) -> None:
    p = tmp_path / "barrier.log"
    p.write_text(_watchdog(28956, 1))
    assert diagnose_file(p)["findings"][0]["cause"] == "collective_timeout_straggler"
    q = tmp_path / "grads.log"  # a gradient bucket after tens of thousands of collectives: the library's hang stays first
    q.write_text(_watchdog(28956, 466119168))
    assert diagnose_file(q)["findings"][0]["cause"] == "nccl_internal_bug"


def test_the_same_net_plugin_on_every_host_is_not_a_mismatch(tmp_path: Path) -> None:
    loaded = "NCCL INFO Plugin Path : /opt/hpcx/nccl_rdma_sharp_plugin/lib/libnccl-net.so\n"
    p = tmp_path / "same.log"
    p.write_text("nodeA:1:2 [0] " + loaded + "nodeB:3:4 [0] " + loaded)
    assert all(f["code"] != "LOG040" for f in diagnose_file(p)["findings"])
    q = tmp_path / "differ.log"
    q.write_text("nodeA:1:2 [0] " + loaded + "nodeB:3:4 [0] NCCL INFO NET/Plugin: Could not find: libnccl-net.so. "
                 "Using internal network plugin.\n")
    first = diagnose_file(q)["findings"][0]
    assert (first["code"], first["cause"]) == ("LOG040", "version_mismatch") and "nodeB" in first["title"]


INVALID = ("torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1333, "
           "invalid usage (run with NCCL_DEBUG=WARN for details), NCCL version 2.18.6\n"
           "ncclInvalidUsage: This usually reflects invalid usage of NCCL library.\n")


def test_invalid_usage_cut_before_its_reason_reads_as_a_shared_gpu_and_its_reason_wins_when_present(tmp_path: Path) -> None:
    p = tmp_path / "cut.log"  # the traceback ends before torch's "Last error:" line
    p.write_text(INVALID)
    found = diagnose_file(p)["findings"]
    assert (found[0]["code"], found[0]["cause"]) == ("LOG034", "duplicate_gpu")
    assert all(f["code"] != "LOG080" for f in found)  # the line is explained once, not also quoted as unrecognised
    q = tmp_path / "whole.log"  # with the reason: NCCL_SOCKET_IFNAME matched no interface
    q.write_text(INVALID + "Last error:\nBootstrap : no socket interface found\n")
    assert diagnose_file(q)["findings"][0]["cause"] == "wrong_interface"
