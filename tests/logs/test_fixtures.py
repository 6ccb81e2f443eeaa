"""Real gloo failures captured on this machine (fixtures/logs/gloo-*/, see each PROVENANCE.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from logs.test_corpus import diagnose_file

FIX = Path(__file__).resolve().parents[2] / "fixtures" / "logs"


def _first(doc: dict) -> dict:
    return next(f for f in doc["findings"] if f["cause"])


@pytest.mark.parametrize("scenario, code, cause, ranks", [
    ("gloo-rank-killed", "LOG060", "peer_process_died", [1]),
    ("gloo-collective-mismatch", "LOG050", "collective_mismatch", [0]),
    ("gloo-mismatch-timeout", "LOG050", "collective_mismatch", [0, 1, 2]),
    ("gloo-wrong-ifname", "NET001", "wrong_interface", [0, 1, 2]),  # LOG021 before typed facts (now its alias)
    # A rank that returned (exit 0) while the others went on: the ranks it left lost it at 127.0.0.1 and torchrun
    # reports them alone. Was LOG061 peer_process_died.
    ("gloo-rank-returned-early", "LOG152", "collective_mismatch", [0, 2]),
    ("gloo-last-rank-returned-early", "LOG152", "collective_mismatch", [0]),
])
def test_real_gloo_failure(scenario: str, code: str, cause: str, ranks: list[int]) -> None:
    folder = FIX / scenario
    assert (folder / "PROVENANCE.md").is_file()
    doc = diagnose_file(folder / "torchrun.log")
    first = _first(doc)
    assert (first["code"], first["cause"], first["ranks"]) == (code, cause, ranks)
    lines = (folder / "torchrun.log").read_text().splitlines()
    for e in first["evidence"]:
        assert e["text"] in lines[e["line"] - 1]


def test_killed_rank_explains_the_survivors() -> None:
    doc = diagnose_file(FIX / "gloo-rank-killed")  # the folder: read recursively, PROVENANCE.md included
    rows = next(r for r in doc["results"] if r["check"] == "logs.diagnose")["data"]["ranks"]
    assert [(r["rank"], r["host"]) for r in rows] == [(0, "localhost"), (1, "localhost"), (2, "localhost")]
    assert "SIGKILL" in rows[1]["last_state"] and "first to fail" in rows[1]["last_state"]
    lost = next(f for f in doc["findings"] if f["code"] == "LOG061")
    assert lost["consequence_of"] == "LOG060" and lost["ranks"] == [0, 2]
    assert "rank 1" in lost["detail"]
    assert "SIGKILL" in _first(doc)["title"]


def test_mismatch_timeout_names_the_other_readings() -> None:
    """All ranks time out: the mismatch comes first, the straggler and network readings are offered too."""
    doc = diagnose_file(FIX / "gloo-mismatch-timeout" / "torchrun.log")
    causes = [f["cause"] for f in doc["findings"] if f["cause"]]
    assert causes[:3] == ["collective_mismatch", "collective_timeout_straggler", "hardware_fault"]


def test_healthy_two_rank_torchrun_job_has_no_cause() -> None:
    """torch 2.13's own warnings of a working job (OMP_NUM_THREADS banner, ...) carry no cause."""
    doc = diagnose_file(FIX / "gloo-healthy-2rank" / "torchrun.log")
    assert [f for f in doc["findings"] if f["cause"]] == []


def test_a_launcher_stopped_from_outside_is_said_so() -> None:
    """torchrun's SignalException ('Process N got signal: 15') is the launcher stopped from outside, not an unknown error."""
    first = _first(diagnose_file(FIX / "gloo-hang-killed" / "torchrun.log"))
    assert first["code"] == "LOG060" and "stopped from outside by SIGTERM" in first["title"]
    assert "commdoctor hang" in first["detail"]


def test_gloo_straggler_names_the_rank_that_logged_no_timeout() -> None:
    first = _first(diagnose_file(FIX / "gloo-straggler-2rank" / "torchrun.log"))
    assert (first["code"], first["cause"]) == ("LOG054", "collective_timeout_straggler")
    assert "rank(s) 1 logged no timeout" in first["title"] and first["ranks"] == [0, 1]


def test_a_rank_that_returned_early_is_named_when_the_log_shows_its_number() -> None:
    """Rank 1 of 3 returned: ranks 0 and 2 are reported, so rank 1 is the one that left. With rank 1 of 2 gone (no
    line of its own carries its rank), the finding says a rank of this host, not a made-up number."""
    first = _first(diagnose_file(FIX / "gloo-rank-returned-early" / "torchrun.log"))
    assert first["title"].startswith("rank 1 exited with status 0") and "ranks 0, 2 were still in a collective" in first["title"]
    last = _first(diagnose_file(FIX / "gloo-last-rank-returned-early" / "torchrun.log"))
    assert last["title"].startswith("a rank of this host exited with status 0")
