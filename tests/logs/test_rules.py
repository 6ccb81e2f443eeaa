"""Rules on multi-rank logs in the formats torch and NCCL print (one file per rank, as NCCL_DEBUG_FILE writes them)."""

from __future__ import annotations

from pathlib import Path

from logs.test_corpus import diagnose_file

WD = ("[rank{r}]:[E1121 10:00:00.1 ProcessGroupNCCL.cpp:632] [Rank {r}] Watchdog caught collective operation timeout: "
      "WorkNCCL(SeqNum={seq}, OpType={op}, NumelIn=1000, NumelOut=1000, Timeout(ms)=600000) ran for 600012 milliseconds before timing out.\n")
PROGRESS = ("[rank{r}]:[E1121 10:00:01.1 ProcessGroupNCCL.cpp:2000] [PG ID 0 PG GUID 0(default_pg) Rank {r}] Timeout at NCCL work: "
            "{seq}, last enqueued NCCL work: {enq}, last completed NCCL work: {done}.\n")


def _write(tmp: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (tmp / name).write_text(text)
    return tmp


def _causes(doc: dict) -> list[tuple[str, str, list[int], str | None]]:
    return [(f["code"], f["cause"], f["ranks"], f["consequence_of"]) for f in doc["findings"] if f["cause"]]


def test_straggler_is_the_rank_that_enqueued_least(tmp_path: Path) -> None:
    d = _write(tmp_path, {
        "rank0.log": WD.format(r=0, seq=12, op="ALLREDUCE") + PROGRESS.format(r=0, seq=12, enq=12, done=11),
        "rank1.log": WD.format(r=1, seq=12, op="ALLREDUCE") + PROGRESS.format(r=1, seq=12, enq=12, done=11),
        "rank2.log": "[rank2]:[E1121 ProcessGroupNCCL.cpp:1500] [PG ID 0 PG GUID 0(default_pg) Rank 2] Received a dump signal "
                     "due to a collective timeout from  rank 0. Last enqueued NCCL work: 11, last completed NCCL work: 11.\n",
    })
    doc = diagnose_file(d)
    first = doc["findings"][0]
    assert (first["code"], first["cause"]) == ("LOG051", "collective_timeout_straggler")
    assert "rank 2 enqueued the fewest collectives" in first["title"]
    assert first["evidence"][0]["source"].endswith("rank2.log")


def test_ranks_disagreeing_at_one_seqnum_is_a_mismatch(tmp_path: Path) -> None:
    d = _write(tmp_path, {"a.log": WD.format(r=0, seq=7, op="ALLREDUCE"), "b.log": WD.format(r=1, seq=7, op="BROADCAST")})
    assert _causes(diagnose_file(d))[0][:3] == ("LOG050", "collective_mismatch", [0, 1])


def test_root_cause_on_one_rank_explains_timeouts_elsewhere(tmp_path: Path) -> None:
    d = _write(tmp_path, {
        "rank0.log": "n1:10:11 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId 1000 commId 0x9 - Init COMPLETE\n"
                     + WD.format(r=0, seq=3, op="ALLREDUCE"),
        "rank1.log": "n2:20:21 [1] NCCL INFO comm 0x2 rank 1 nranks 2 cudaDev 1 nvmlDev 1 busId 2000 commId 0x9 - Init START\n"
                     "n2:20:21 [1] NCCL INFO Call to connect returned Connection refused, retrying\n"
                     "n2:20:21 [1] include/shm.h:28 NCCL WARN Call to posix_fallocate failed : No space left on device\n",
    })
    got = _causes(diagnose_file(d))
    assert got[0] == ("ENV030", "shm_too_small", [1], None)  # LOG030 before typed facts
    assert ("LOG051", "collective_timeout_straggler", [0], "ENV030") in got
    assert not [c for c in got if c[0] in ("LOG011", "LOG022")]  # NCCL's INFO retry is not a failure


def test_versions_and_interfaces_across_hosts(tmp_path: Path) -> None:
    d = _write(tmp_path, {
        "node1.log": "node1:1:1 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>\nNCCL version 2.19.3+cuda12.3\n"
                     "node1:1:1 [0] NCCL INFO NCCL_SOCKET_IFNAME set by environment to eth0\n",
        "node2.log": "node2:2:2 [0] NCCL INFO Bootstrap : Using docker0:172.17.0.1<0>\nNCCL version 2.14.3+cuda11.7\n"
                     "node2:2:2 [0] NCCL INFO NCCL_SOCKET_IFNAME set by environment to ^lo\n"
                     "node2:2:2 [0] misc/socket.cc:49 NCCL WARN socketProgress: Connection closed by remote peer node1<4000>\n",
    })
    doc = diagnose_file(d)
    got = _causes(doc)
    assert got[0][:2] == ("LOG040", "version_mismatch")
    codes = [c[0] for c in got]
    assert "LOG020" in codes and "LOG042" in codes
    data = next(r for r in doc["results"] if r["check"] == "logs.diagnose")["data"]
    assert data["nccl_versions"] == {"2.19.3": ["node1"], "2.14.3": ["node2"]}
    assert data["hosts"]["node2"]["bootstrap"] == ["docker0:172.17.0.1"]


def test_ib_retry_exceeded_from_the_start_is_the_fabric_setup_with_its_alternatives(tmp_path: Path) -> None:
    # Status 12 with nothing run before it: the NICs never reached each other (NVIDIA/nccl#426: GID index).
    d = _write(tmp_path, {"r0.log": (
        "n1:10:20 [0] transport/net_ib.cc:1295 NCCL WARN NET/IB : Got completion from peer 10.0.0.2<39211> with error 12, "
        "opcode 0, len 0, vendor err 129 (Send)\n"
        "[rank0]:[E ProcessGroupNCCL.cpp:1316] [Rank 0] Process group watchdog thread terminated with exception: NCCL error: "
        "remote process exited or there was a network error, NCCL version 2.21.5\n")})
    got = _causes(diagnose_file(d))
    assert [c[1] for c in got[:3]] == ["ib_misconfig", "hardware_fault", "peer_process_died"]
    assert got[0][0] == "LOG036"


def test_ib_retry_exceeded_mid_run_is_hardware(tmp_path: Path) -> None:
    # The same status after 52109 collectives went through: the fabric worked, a link went bad.
    d = _write(tmp_path, {"r0.log": (
        "n1:10:20 [0] transport/net_ib.cc:1295 NCCL WARN NET/IB : Got completion from peer 10.0.0.2<39211> with error 12, "
        "opcode 0, len 0, vendor err 129 (Send)\n"
        "[rank0]:[E ProcessGroupNCCL.cpp:607] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=52110, "
        "OpType=ALLREDUCE, NumelIn=1048576, NumelOut=1048576, Timeout(ms)=1800000) ran for 1800042 milliseconds before "
        "timing out.\n")})
    got = _causes(diagnose_file(d))
    assert got[0][:2] == ("LOG037", "hardware_fault")
    assert "ib_misconfig" in [c[1] for c in got]
