"""Real NCCL jobs from an H100 (fixtures/logs/nccl-*/, see each PROVENANCE.md): the first cause is the truth.

What a user sees: a healthy NCCL log gets no finding with a cause; a watchdog timeout
is a straggler (naming the rank that never reached the collective) or a mismatch
(ranks in different collectives), never a dead peer because the ranks then aborted
with SIGABRT; NCCL_NET naming a network the host lacks is ib_misconfig.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from logs.test_corpus import diagnose_file

FIX = Path(__file__).resolve().parents[2] / "fixtures" / "logs"
CASES = sorted(p.name for p in FIX.glob("nccl-*") if (p / "truth.json").is_file())


def _causes(doc: dict) -> list[dict]:
    return [f for f in doc["findings"] if f["cause"]]


def test_every_capture_is_here() -> None:
    assert len(CASES) == 11 and all((FIX / c / "PROVENANCE.md").is_file() for c in CASES)


@pytest.mark.parametrize("case", CASES)
def test_first_cause_is_the_truth(case: str) -> None:
    truth = json.loads((FIX / case / "truth.json").read_text())["root_cause"]
    log = FIX / case / "torchrun.log"
    doc = diagnose_file(log)
    found = _causes(doc)
    if truth == "none":
        assert found == [], [(f["code"], f["cause"]) for f in found]
        return
    assert found, "no finding names a cause"
    assert found[0]["cause"] == truth, [(f["code"], f["cause"]) for f in found[:4]]
    lines = log.read_text().splitlines()
    for e in found[0]["evidence"]:
        if e["source"] == str(log):
            assert e["text"].strip()[:200] in lines[e["line"] - 1]


def _alone(tmp_path: Path, case: str) -> Path:
    """The log without the flight-recorder dumps beside it."""
    dst = tmp_path / case
    dst.mkdir()
    shutil.copy(FIX / case / "torchrun.log", dst / "torchrun.log")
    return dst / "torchrun.log"


def test_straggler_named_from_the_log_alone(tmp_path: Path) -> None:
    first = _causes(diagnose_file(_alone(tmp_path, "nccl-straggler")))[0]
    assert (first["code"], first["cause"]) == ("LOG051", "collective_timeout_straggler")
    # Rank 1 slept in load_batch: it had finished #15 and never enqueued #16, where rank 0 waited.
    assert "rank 1 enqueued the fewest collectives (last 15)" in first["title"]
    assert 1 in first["ranks"]


def test_straggler_named_from_the_flight_recorder_beside_the_log() -> None:
    first = _causes(diagnose_file(FIX / "nccl-straggler" / "torchrun.log"))[0]
    assert first["cause"] == "collective_timeout_straggler"
    assert "rank 1 never reached the collective the others wait in (#16 all_reduce" in first["title"]
    assert "rank 1's last: all_reduce #15" in first["title"]
    assert any(e["source"].endswith("nccl_trace_rank_1") for e in first["evidence"])


def test_mismatch_from_the_log_alone(tmp_path: Path) -> None:
    """Rank 1 completed #25 while rank 0 still waited in its #25: they were not the same call."""
    first = _causes(diagnose_file(_alone(tmp_path, "nccl-mismatch")))[0]
    assert (first["code"], first["cause"], first["ranks"]) == ("LOG050", "collective_mismatch", [0, 1])
    assert "completed collective #25 while rank(s) 0 still wait" in first["detail"]


def test_mismatch_from_the_flight_recorder_names_both_calls() -> None:
    first = _causes(diagnose_file(FIX / "nccl-mismatch" / "torchrun.log"))[0]
    assert first["cause"] == "collective_mismatch"
    assert "sequence number 17" in first["detail"]
    assert "rank 0: all_reduce #17" in first["detail"] and "rank 1: broadcast #17" in first["detail"]


@pytest.mark.parametrize("case", ["nccl-straggler", "nccl-mismatch"])
def test_sigabrt_after_the_watchdog_is_its_abort_not_a_dead_peer(case: str) -> None:
    found = _causes(diagnose_file(FIX / case / "torchrun.log"))
    died = [f for f in found if f["code"] == "LOG060"]
    assert died and all(f["consequence_of"] == found[0]["code"] for f in died)
    assert "SIGABRT" in died[0]["detail"]


def test_a_sigkill_is_still_a_dead_peer() -> None:
    first = _causes(diagnose_file(FIX / "nccl-peer-died" / "torchrun.log"))[0]
    assert (first["code"], first["cause"], first["consequence_of"]) == ("LOG060", "peer_process_died", None)
    assert "SIGKILL" in first["title"]


def test_flight_dumps_in_a_folder_are_not_read_as_logs() -> None:
    doc = diagnose_file(FIX / "nccl-mismatch")
    read = next(r for r in doc["results"] if r["check"] == "logs.inputs")["data"]["inputs"]
    assert not [i for i in read if "nccl_trace_rank" in i["path"]]
    assert _causes(doc)[0]["cause"] == "collective_mismatch"


def test_settings_meant_to_differ_per_host_are_not_a_finding() -> None:
    """NCCL_HOSTID differs per host by design: the healthy two-rank job has no LOG042."""
    doc = diagnose_file(FIX / "nccl-healthy" / "torchrun.log")
    assert not [f for f in doc["findings"] if f["code"] == "LOG042"]


def test_a_pipe_named_like_a_dump_is_read_as_a_log(tmp_path: Path) -> None:
    """Bad input never hangs: a FIFO is never opened to sniff whether it is a flight-recorder dump."""
    import os
    import threading

    fifo = tmp_path / "nccl_trace_rank_0"
    os.mkfifo(fifo)
    line = b"n1:1:1 [0] include/alloc.h:227 NCCL WARN Cuda failure 'out of memory'\n"

    def feed() -> None:
        with open(fifo, "wb") as f:
            f.write(line)

    t = threading.Thread(target=feed, daemon=True)
    t.start()
    first = _causes(diagnose_file(fifo))[0]
    t.join(10)
    assert first["cause"] == "cuda_oom"


def test_json_says_which_rules_matched_and_what_the_dumps_hold() -> None:
    doc = diagnose_file(FIX / "nccl-mismatch" / "torchrun.log")
    data = next(r for r in doc["results"] if r["check"] == "logs.diagnose")["data"]
    wd = next(x for x in data["rules_matched"] if x["rule"] == "watchdog_timeout")
    assert wd["family"] == "torch" and wd["role"] == "consequence" and wd["lines"] >= 2 and wd["meaning"]
    assert data["flight_recorder"]["files"] == 2 and data["flight_recorder"]["groups"][0]["mismatch_seq"] == 17


def test_a_segfaulted_rank_is_named_with_its_signal() -> None:
    """H200 capture: rank 1 died of SIGSEGV at step 5; rank 0, left waiting, is not the cause."""
    first = _causes(diagnose_file(FIX / "nccl-peer-segv" / "torchrun.log"))[0]
    assert (first["code"], first["cause"], first["ranks"]) == ("LOG060", "peer_process_died", [1])
    assert "SIGSEGV" in first["title"]


def test_a_cpu_tensor_on_an_nccl_group_is_the_cause_not_the_exit_it_led_to() -> None:
    """H200 capture: both ranks passed a CPU tensor to all_reduce on a group made with "nccl" alone."""
    found = _causes(diagnose_file(FIX / "nccl-cpu-tensor" / "torchrun.log"))
    assert (found[0]["code"], found[0]["ranks"]) == ("LOG044", [0, 1])
    assert "cpu tensor" in found[0]["title"] and "cpu:gloo,cuda:nccl" in found[0]["remedy"]["summary"]
    # The ranks' exits are what the error led to, not a second cause.
    assert [(f["code"], f["consequence_of"]) for f in found[1:]] == [("LOG060", "LOG044")]
