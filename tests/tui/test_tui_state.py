"""RunState (what the screens show) from real pipeline events and from saved reports."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import commdoctor.checks  # noqa: F401 - the pipeline cannot be imported first (circular on main)
from commdoctor.core.model import CheckResult, Evidence, Finding, Report, Severity, Stage, Status
from commdoctor.pipeline.run import CheckFinished, CheckStarted, Context, Facts, Options, RunFinished, RunStarted, plan, run_checks
from commdoctor.tui.state import (PENDING, RUNNING, RunState, cited_lines, cited_ranks, hosts_of, ranks_of,
                                  resolve_source, sorted_findings)
from tuikit import FIXTURES, fixture_report


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def test_live_states_follow_real_pipeline_events() -> None:
    from commdoctor.checks.env import LauncherCheck, MemlockCheck, ShmCheck
    from commdoctor.probes import live_providers

    opts = Options(mode="run")
    checks = plan([ShmCheck(), LauncherCheck(), MemlockCheck()], opts)
    events = run_checks(checks, Context(options=opts, facts=Facts(live_providers())), ["commdoctor", "run"])
    clock = Clock()
    st = RunState(clock)
    seen: list[tuple[str, ...]] = []
    for ev in events:
        st.apply(ev)
        seen.append(tuple(r.state for r in st.rows.values()))
        if isinstance(ev, CheckStarted):
            row = st.rows[ev.check]
            assert row.state == RUNNING and st.running() is row
            clock.t += 2.0
            assert st.elapsed(row) == 2.0  # live elapsed time comes from the clock
    assert seen[0] == (PENDING, PENDING, PENDING)  # RunStarted lists the plan
    assert seen[1][0] == RUNNING
    assert st.done and st.report is not None
    assert [r.state for r in st.rows.values()] == [r.status.value for r in st.report.results]
    for row in st.rows.values():
        assert st.elapsed(row) == row.result.duration_s  # finished: the measured duration


def test_from_report_is_the_same_as_replaying_it() -> None:
    rep = fixture_report("run-mixed")
    a = RunState.from_report(rep)
    b = RunState()
    b.apply(RunStarted(tuple((r.check, r.stage, r.title) for r in rep.results)))
    for r in rep.results:
        b.apply(CheckStarted(r.check, r.stage, r.title))
        b.apply(CheckFinished(r))
    b.apply(RunFinished(rep))
    assert [(r.name, r.state) for r in a.rows.values()] == [(r.name, r.state) for r in b.rows.values()]
    assert [f.code for f in a.findings()] == [f.code for f in b.findings()]
    assert {r.state for r in a.rows.values()} == {s.value for s in Status}  # the fixture has every status


def test_findings_sorted_by_severity_then_report_order() -> None:
    rep = fixture_report("run-mixed")
    got = sorted_findings(rep.results)
    sev = [f.severity.rank for f in got]
    assert sev == sorted(sev, reverse=True)
    assert got[0].code == rep.verdict().code  # ENV022: a cause before its consequence PG006
    assert [f.code for f in got if f.severity is Severity.ERROR] == ["ENV022", "PG006"]


def test_partial_report_is_marked_interrupted() -> None:
    st = RunState()
    r = CheckResult("env.shm", Stage.ENVIRONMENT, "shm", Status.PASSED)
    st.apply(RunStarted((("env.shm", Stage.ENVIRONMENT, "shm"), ("pg.gloo", Stage.PG_INIT, "gloo"))))
    st.apply(CheckFinished(r))
    rep = st.partial_report()
    assert rep.interrupted and [x.check for x in rep.results] == ["env.shm"]
    assert Report.from_dict(json.loads(json.dumps(rep.to_dict()))).interrupted


def _result(data: Any) -> CheckResult:
    return CheckResult("hang.stacks", Stage.HANG, "stacks", Status.PASSED, data=data)


def test_rank_data_shape_is_read_tolerantly() -> None:
    rows = ranks_of([
        _result({"ranks": [
            {"rank": 3, "host": "b", "state": "collective", "op": "all_reduce", "site": "t.py:1",
             "stack": ["f (t.py:1)"]},
            {"rank": "1", "host": "a"},  # rank as text, no state: "unknown"
            {"host": "a"},  # no rank: skipped
            "junk", None, 7,  # not mappings: skipped
            {"rank": 2, "host": "a", "state": "computing", "stack": "one frame as text"},
        ]}),
        _result({"ranks": "not a list"}),
        _result({}),
        _result({"ranks": [{"rank": 3, "host": "b", "state": "exited"}]}),  # a later stage knows more
    ])
    assert [(r.rank, r.host, r.state) for r in rows] == [(1, "a", "unknown"), (2, "a", "computing"), (3, "b", "exited")]
    assert rows[1].stack == ("one frame as text",)
    assert list(hosts_of(rows)) == ["a", "b"]


def test_hang_fixture_has_16_ranks_on_2_hosts() -> None:
    rep = fixture_report("hang-16ranks")
    rows = ranks_of(rep.results)
    groups = hosts_of(rows)
    assert {h: len(v) for h, v in groups.items()} == {"node-a": 8, "node-b": 8}
    assert cited_ranks(rep.verdict()) == {11}


def test_cited_ranks_prefer_the_findings_own_ranks() -> None:
    f = Finding("X001", "x", Severity.ERROR, "t", ranks=(2,), evidence=(Evidence("stack:rank0", "y", rank=0),))
    assert cited_ranks(f) == {2}
    g = Finding("X001", "x", Severity.ERROR, "t", evidence=(Evidence("stack:rank0", "y", rank=0),))
    assert cited_ranks(g) == {0}
    assert cited_ranks(None) == set()


def test_evidence_sources_resolve_to_files(tmp_path: Path) -> None:
    (tmp_path / "logs").mkdir()
    log = tmp_path / "logs" / "a.log"
    log.write_text("x\ny\n")
    bases = [str(tmp_path)]
    assert resolve_source("logs/a.log", bases) == str(log)
    assert resolve_source(str(log), []) == str(log)
    for not_files in ("env", "probe:pg_init", "stack:rank3", "logs/missing.log", ""):
        assert resolve_source(not_files, bases) is None
    f = Finding("X001", "x", Severity.ERROR, "t", evidence=(
        Evidence("logs/a.log", "y", line=2), Evidence("logs/a.log", "bad", line=0), Evidence("env", "z", line=3)))
    assert cited_lines([f], bases) == {str(log): {1: f}}


def test_logs_fixture_cites_real_lines() -> None:
    rep = fixture_report("logs-job")
    lines = (FIXTURES / "logs" / "job.log").read_text().splitlines()
    for f in rep.findings():
        for e in f.evidence:
            assert lines[e.line - 1] == e.text  # verbatim, at the line it names
    cited = cited_lines(rep.findings(), [str(FIXTURES)])
    assert list(cited) == [os.path.join(str(FIXTURES), "logs", "job.log")]
