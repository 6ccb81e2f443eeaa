"""The pipeline's promises: deadlines, crash capture, gating, streaming."""

from __future__ import annotations

import time
from typing import Iterator

from commdoctor.checks.base import Check, Rule
from commdoctor.core.errors import SkipCheck
from commdoctor.core.model import Finding, Severity, Stage, Status
from commdoctor.pipeline.run import CheckFinished, CheckStarted, Context, Facts, Options, RunFinished, RunStarted, plan, run_checks


class Boom(Check):
    """Raises."""

    name, stage, title = "t.boom", Stage.ENVIRONMENT, "raises"
    rules = (Rule("TST001", "boom", Severity.ERROR, "never", "n/a"),)

    def run(self, run):  # type: ignore[no-untyped-def]
        raise ZeroDivisionError("division by zero in a check")


class Sleepy(Check):
    """Sleeps past its deadline."""

    name, stage, title = "t.sleepy", Stage.ENVIRONMENT, "sleeps"
    timeout_s = 0.5
    rules = (Rule("TST002", "sleepy", Severity.ERROR, "never", "n/a"),)

    def run(self, run):  # type: ignore[no-untyped-def]
        time.sleep(30)
        return []


class Fails(Check):
    """Fails with an error finding."""

    name, stage, title = "t.fails", Stage.INTERFACES, "fails"
    rules = (Rule("TST003", "bad-iface", Severity.ERROR, "iface {i} is wrong", "fix {i}", cause="wrong_interface"),)

    def run(self, run) -> Iterator[Finding]:  # type: ignore[no-untyped-def]
        run.summary("looked")
        yield self.finding("TST003", i="lo")


class Dependent(Check):
    """Needs Fails to pass."""

    name, stage, title = "t.dep", Stage.RENDEZVOUS, "depends"
    requires = ("t.fails",)
    rules = (Rule("TST004", "dep", Severity.ERROR, "never", "n/a"),)

    def run(self, run):  # type: ignore[no-untyped-def]
        raise AssertionError("must not run")


class AfterCrash(Check):
    """Needs Boom."""

    name, stage, title = "t.after", Stage.RENDEZVOUS, "after crash"
    requires = ("t.boom",)
    rules = (Rule("TST005", "after", Severity.ERROR, "never", "n/a"),)

    def run(self, run):  # type: ignore[no-untyped-def]
        raise AssertionError("must not run")


class Skipper(Check):
    """Skips itself."""

    name, stage, title = "t.skip", Stage.PG_INIT, "skips"
    rules = (Rule("TST006", "skip", Severity.ERROR, "never", "n/a"),)

    def run(self, run):  # type: ignore[no-untyped-def]
        raise SkipCheck("torch is not installed; pip install 'commdoctor[torch]'")


def _run(checks: list[Check], **opts) -> list:  # type: ignore[no-untyped-def]
    o = Options(**opts)
    return list(run_checks(plan(checks, o), Context(o, Facts())))


def test_crash_timeout_gating_and_skip_leave_a_complete_report() -> None:
    t0 = time.monotonic()
    events = _run([Dependent(), AfterCrash(), Skipper(), Fails(), Sleepy(), Boom()])
    elapsed = time.monotonic() - t0
    assert elapsed < 10, "a sleeping check must not hold the run beyond its deadline"
    report = events[-1].report
    by = {r.check: r for r in report.results}
    assert set(by) == {"t.boom", "t.sleepy", "t.fails", "t.dep", "t.after", "t.skip"}
    assert by["t.boom"].status is Status.CRASHED
    assert "ZeroDivisionError: division by zero in a check" in by["t.boom"].error
    assert "Traceback" in by["t.boom"].error
    assert by["t.sleepy"].status is Status.TIMED_OUT and "0.5 s deadline" in by["t.sleepy"].reason
    assert by["t.fails"].status is Status.FAILED and by["t.fails"].summary == "looked"
    assert by["t.dep"].status is Status.SKIPPED and by["t.dep"].reason == "blocked by TST003"
    assert by["t.after"].status is Status.SKIPPED and by["t.after"].reason == "blocked by t.boom (crashed)"
    assert by["t.skip"].status is Status.SKIPPED and "pip install" in by["t.skip"].reason
    assert report.verdict().code == "TST003"  # type: ignore[union-attr]


def test_events_stream_in_stage_order_with_start_before_finish() -> None:
    events = _run([Skipper(), Fails(), Boom()])
    kinds = [type(e).__name__ for e in events]
    assert kinds[0] == "RunStarted" and kinds[-1] == "RunFinished"
    started = [e.check for e in events if isinstance(e, CheckStarted)]
    finished = [e.result.check for e in events if isinstance(e, CheckFinished)]
    assert started == finished == ["t.boom", "t.fails", "t.skip"]  # environment, interfaces, pg_init
    for name in started:
        i_start = next(i for i, e in enumerate(events) if isinstance(e, CheckStarted) and e.check == name)
        i_end = next(i for i, e in enumerate(events) if isinstance(e, CheckFinished) and e.result.check == name)
        assert i_start < i_end
    assert isinstance(events[0], RunStarted) and isinstance(events[-1], RunFinished)


def test_select_and_ignore_choose_checks_and_findings() -> None:
    events = _run([Fails(), Boom()], select=("TST003",))
    assert [r.check for r in events[-1].report.results] == ["t.fails"]
    events = _run([Fails(), Boom()], ignore=("TST003",))
    assert [r.check for r in events[-1].report.results] == ["t.boom"]


def test_a_shared_fact_is_computed_once() -> None:
    calls = []

    def provider(ctx):  # type: ignore[no-untyped-def]
        calls.append(1)
        time.sleep(0.1)
        return {"v": 1}

    class A(Check):
        """a"""

        name, stage, title = "t.a", Stage.ENVIRONMENT, "a"
        rules = (Rule("TST010", "a", Severity.INFO, "{v}", "n/a"),)

        def run(self, run):  # type: ignore[no-untyped-def]
            yield self.finding("TST010", v=run.fact("x")["v"])

    class B(A):
        """b"""

        name = "t.b"
        rules = (Rule("TST011", "b", Severity.INFO, "{v}", "n/a"),)

        def run(self, run):  # type: ignore[no-untyped-def]
            yield self.finding("TST011", v=run.fact("x")["v"])

    o = Options()
    events = list(run_checks(plan([A(), B()], o), Context(o, Facts({"x": provider}))))
    assert len(calls) == 1
    assert [f.title for f in events[-1].report.findings()] == ["1", "1"]
