"""The hang verdict from real captures (fixtures/hang), hooks records and dumps, through the pipeline."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from commdoctor.checks.hang import HANG_CHECKS, ranks_text
from commdoctor.loaders.flight_recorder import load_dumps
from commdoctor.loaders.stacks import load_snapshot
from commdoctor.core.model import Report
from commdoctor.pipeline.run import Context, Facts, Options, RunFinished, plan, run_checks
from commdoctor.core.records import CallRecord, read_progress, record_path
from commdoctor.facts.snapshot import HangSnapshot
from tests.hang_fixtures import mark_line

FIX = Path(__file__).resolve().parent.parent / "fixtures" / "hang"


def diagnose(snapshot: HangSnapshot | None = None, progress: Any = None, fr: Any = None, logs: Any = None,
             ras: Any = None) -> Report:
    opts = Options(mode="hang")
    facts = Facts()
    for name, value in (("hang_snapshot", snapshot), ("hook_progress", progress), ("flight_recorder", fr),
                        ("hang_logs", logs), ("nccl_ras", ras)):
        facts.provide(name, value)
    events = list(run_checks(plan([c() for c in HANG_CHECKS], opts), Context(options=opts, facts=facts)))
    last = events[-1]
    assert isinstance(last, RunFinished)
    return last.report


def snap(name: str) -> HangSnapshot:
    return load_snapshot([str(FIX / name)])


def test_straggler_verdict_names_rank_state_and_lines() -> None:
    v = diagnose(snap("straggler")).verdict()
    assert v is not None and v.code == "HANG010" and v.ranks == (3,)
    assert v.cause == "collective_timeout_straggler"
    assert "data loading" in v.title and f"hangjob.py:{mark_line('loader-next')}" in v.title
    assert f"hangjob.py:{mark_line('dataset-sleep')}" in v.title
    assert f"all_reduce at hangjob.py:{mark_line('straggler-allreduce')}" in v.title
    assert any(e.rank == 3 and "__getitem__" in e.text for e in v.evidence)


def test_straggler_with_dumps_adds_the_recorder_view() -> None:
    v = diagnose(snap("straggler"), fr=load_dumps([str(FIX / "straggler" / "fr")])).verdict()
    assert v is not None and v.code == "HANG010" and v.ranks == (3,)
    assert any(e.source == "flight recorder:rank3" and "never entered all_reduce" in e.text for e in v.evidence)


def test_mismatch_verdict_names_both_calls_and_the_odd_rank() -> None:
    v = diagnose(snap("mismatch"), fr=load_dumps([str(FIX / "mismatch" / "fr")])).verdict()
    assert v is not None and v.code == "HANG011" and v.cause == "collective_mismatch"
    # The dumps name the first sequence number where the calls differ, and each side's line.
    assert f"broadcast at hangjob.py:{mark_line('mismatch-broadcast')} on rank 2" in v.title
    assert f"all_reduce at hangjob.py:{mark_line('mismatch-allreduce')} on ranks 0 and 1" in v.title
    assert v.ranks == (2,) and "odd one: rank 2" in v.detail


def test_dead_rank_verdict() -> None:
    v = diagnose(snap("dead")).verdict()
    assert v is not None and v.code == "HANG012" and v.ranks == (2,) and v.cause == "peer_process_died"
    assert "zombie" in v.title and f"init_process_group at hangjob.py:{mark_line('init')}" in v.title


def test_stopped_rank_verdict() -> None:
    v = diagnose(snap("stopped")).verdict()
    assert v is not None and v.code == "HANG014" and v.ranks == (2,)
    assert f"all_reduce at hangjob.py:{mark_line('loop-allreduce')}" in v.title
    assert "kill -CONT" in v.remedy.summary  # type: ignore[union-attr]


def test_everyone_in_the_same_collective_is_a_stall_below_python() -> None:
    s = snap("stopped")
    s.ranks[2].proc_state = "sleeping"  # the same real stacks, had rank 2 not been stopped
    s.ranks[2]._cls = None
    v = diagnose(s, ras={"addr": "localhost:28028", "reachable": False}).verdict()
    assert v is not None and v.code == "HANG013" and v.ranks == (0, 1, 2)
    assert f"all_reduce at hangjob.py:{mark_line('loop-allreduce')}" in v.title
    steps = " ".join(v.remedy.steps)  # type: ignore[union-attr]
    assert "NCCL_DEBUG" in steps and "interface and rendezvous" in steps and "28028" in steps


def test_multi_node_stall_points_at_the_other_hosts() -> None:
    s = snap("stopped")
    s.ranks[2].proc_state = "sleeping"
    s.world_size = 8
    v = diagnose(s).verdict()
    assert v is not None and v.code == "HANG013" and "on this host (3 of 8)" in v.title
    assert any("run elsewhere" in st for st in v.remedy.steps)  # type: ignore[union-attr]


def write_records(d: Path, calls: dict[int, list[tuple[str, str, int, str, bool]]]) -> None:
    """calls: rank -> [(kind, op, seq, site, _)] written as the hooks would."""
    for r, items in calls.items():
        with open(record_path(str(d), r), "w") as f:
            f.write(json.dumps({"schema": "commdoctor.hooks/1", "kind": "header", "rank": r, "world_size": 3,
                                "host": "h", "pid": 100 + r, "started": time.time()}) + "\n")
            for kind, op, seq, site, _ in items:
                f.write(CallRecord(kind=kind, rank=r, group="0", seq=seq, op=op, time=time.time(), dtype="float32",
                                   shapes=[[4]], site=site).to_json() + "\n")


def test_records_alone_name_the_rank_that_never_entered(tmp_path: Path) -> None:
    calls = {r: [("enter", "all_reduce", 1, "train.py:10", True), ("exit", "all_reduce", 1, "train.py:10", True),
                 ("enter", "all_reduce", 2, "train.py:10", True)] for r in (0, 1)}
    calls[2] = [("enter", "all_reduce", 1, "train.py:10", True), ("exit", "all_reduce", 1, "train.py:10", True)]
    write_records(tmp_path, calls)
    v = diagnose(progress=read_progress([str(tmp_path)])).verdict()
    assert v is not None and v.code == "HANG010" and v.ranks == (2,)
    assert any(e.source == "hooks:rank2" and "never entered all_reduce #2" in e.text for e in v.evidence)


def test_records_that_disagree_at_one_seq_are_a_mismatch(tmp_path: Path) -> None:
    calls = {r: [("enter", "all_reduce", 1, "train.py:10", True)] for r in (0, 1)}
    calls[2] = [("enter", "broadcast", 1, "train.py:12", True)]
    write_records(tmp_path, calls)
    v = diagnose(progress=read_progress([str(tmp_path)])).verdict()
    assert v is not None and v.code == "HANG011" and 2 in v.ranks and "train.py:12" in v.title


def test_nothing_waiting_is_not_a_communication_hang() -> None:
    s = snap("straggler")
    for r in (0, 1, 2):
        del s.ranks[r]
    rep = diagnose(s)
    assert rep.verdict() is None
    assert [f.code for f in rep.findings()] == ["HANG015"]


def test_no_signal_at_all_skips_cleanly() -> None:
    rep = diagnose()
    assert {r.status.value for r in rep.results} == {"skipped"}


def test_ranks_text() -> None:
    assert ranks_text([3]) == "3" and ranks_text([0, 1]) == "0 and 1" and ranks_text([0, 1, 2, 5]) == "0-2 and 5"


def test_log_lines_of_a_real_timeout_are_read_by_the_log_analyzer() -> None:
    from commdoctor.checks.hang import log_signals
    from commdoctor.loaders.hang_logs import load_hang_logs

    facts = load_hang_logs(sorted(str(p) for p in (FIX / "logs").glob("rank*.log")), {})
    lines = log_signals(facts)
    assert lines, "the ranks' timeout errors must be found"
    assert {f["rank"] for f in lines} & {0, 1, 2}
    assert any("Timed out waiting 15000ms" in f["text"] for f in lines)
    assert any(f.get("code") for f in lines), "the log diagnosis names its codes"
    s = snap("stopped")
    s.ranks[2].proc_state = "sleeping"
    v = diagnose(s, logs=facts).verdict()
    assert v is not None and v.code == "HANG013"
    assert any("Timed out waiting" in e.text for e in v.evidence)
    assert any(str(FIX / "logs") in st for st in v.remedy.steps)  # type: ignore[union-attr]
