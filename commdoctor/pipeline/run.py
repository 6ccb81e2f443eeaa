"""Run checks in causal order under deadlines, and stream what happens as events.

Promise: nothing a check does can crash or hang the run. Each check runs in a
daemon thread with a deadline; an exception becomes CRASHED with its
traceback, an overrun becomes TIMED_OUT and the run goes on (the abandoned
thread dies with the process; probes that start subprocesses enforce their own
deadlines and kill them). A check whose prerequisite did not pass is SKIPPED
with "blocked by CODE". Events are yielded as each check finishes, so sinks can
stream. This module imports neither rich, textual nor torch.
"""

from __future__ import annotations

import socket
import sys
import threading
import time
import traceback
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Callable, Iterable, Iterator, Sequence, Union

from commdoctor import __version__
from commdoctor.checks.base import Check, selected
# What a check is given lives below the checks (core.context), so checks never import the pipeline that
# runs them; the names are the pipeline's to hand out, and its callers import them from here.
from commdoctor.core.context import CheckRun as CheckRun
from commdoctor.core.context import Context as Context
from commdoctor.core.context import Facts as Facts
from commdoctor.core.context import Options as Options
from commdoctor.core.errors import SkipCheck
from commdoctor.core.model import CheckResult, Finding, Report, Severity, Stage, Status


# -- events -------------------------------------------------------------------


@dataclass(frozen=True)
class RunStarted:
    checks: tuple[tuple[str, Stage, str], ...]  # (name, stage, title) in run order


@dataclass(frozen=True)
class CheckStarted:
    check: str
    stage: Stage
    title: str


@dataclass(frozen=True)
class CheckFinished:
    result: CheckResult


@dataclass(frozen=True)
class NodeReported(CheckFinished):
    """Multi-node runs: what another node found, shown as one result (its findings not already on this node).

    A sink that knows only CheckFinished shows it as a check; the final report
    holds these findings merged into the checks they came from.
    """

    node: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class RunFinished:
    report: Report


Event = Union[RunStarted, CheckStarted, CheckFinished, NodeReported, RunFinished]


@dataclass
class Gathered:
    """What a run learnt once its first checks ran, for the checks that judge it (``run_gathered``).

    A multi-node run: on node 0, every node's published facts (the context's
    ``multinode`` fact), the report that merges every node's results, and one
    ``NodeReported`` event per other node to stream first.
    """

    context: Context
    report: Report
    events: list[Event] = field(default_factory=list)


# -- running ------------------------------------------------------------------


def plan(checks: Iterable[Check], options: Options) -> list[Check]:
    """The checks to run for this mode and selection, in stage order (stable)."""
    chosen = [
        c
        for c in checks
        if options.mode in c.modes and any(selected(code, options.select, options.ignore) for code in c.reported_codes())
    ]
    return sorted(chosen, key=lambda c: c.stage.order)


def _blocker(check: Check, ctx: Context) -> str | None:
    for name in check.requires:
        dep = ctx.results.get(name)
        if dep is None or dep.status is Status.PASSED:
            continue
        if dep.status is Status.FAILED:
            errs = [f.code for f in dep.findings if f.severity is Severity.ERROR]
            return f"blocked by {errs[0] if errs else name}"
        return f"blocked by {name} ({dep.status.value.replace('_', ' ')})"
    return None


def run_one(check: Check, ctx: Context) -> CheckResult:
    """Run a single check under its deadline; never raises (except KeyboardInterrupt)."""
    result = CheckResult(check=check.name, stage=check.stage, title=check.title, status=Status.PASSED)
    blocked = _blocker(check, ctx)
    if blocked:
        result.status, result.reason = Status.SKIPPED, blocked
        return result
    handle = CheckRun(ctx, result)
    findings: list[Finding] = []
    outcome: dict[str, Any] = {}

    def target() -> None:
        try:
            for f in check.run(handle) or ():
                findings.append(f)
        except SkipCheck as e:
            outcome["skip"] = e.reason
            if e.not_applicable:
                outcome["na"] = True
        except BaseException:  # noqa: BLE001 - becomes a CRASHED result
            outcome["crash"] = traceback.format_exc()

    deadline = check.deadline(ctx.options)
    start = time.monotonic()
    t = threading.Thread(target=target, name=f"check:{check.name}", daemon=True)
    t.start()
    t.join(deadline)
    result.duration_s = time.monotonic() - start
    keep = [f for f in list(findings) if selected(f.code, ctx.options.select, ctx.options.ignore, f.aliases)]
    result.findings = keep
    if t.is_alive():
        result.status = Status.TIMED_OUT
        result.reason = f"did not finish within its {deadline:g} s deadline"
    elif "crash" in outcome:
        result.status = Status.CRASHED
        result.error = outcome["crash"]
        result.reason = outcome["crash"].strip().splitlines()[-1]
    elif "skip" in outcome:
        result.status = Status.SKIPPED
        result.reason = outcome["skip"]
        if outcome.get("na"):
            result.data["not_applicable"] = True  # the sinks leave it out: see SkipCheck
    elif any(f.severity is Severity.ERROR for f in keep):
        result.status = Status.FAILED
    return result


def run_checks(checks: Sequence[Check], ctx: Context, argv: Sequence[str] = ()) -> Iterator[Event]:
    """Yield events while running ``checks`` (already planned) in order."""
    report = Report(
        tool_version=__version__,
        mode=ctx.options.mode,
        created=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        host=socket.gethostname(),
        argv=list(argv),
        environment={"python": sys.version.split()[0], "platform": sys.platform},
    )
    yield RunStarted(tuple((c.name, c.stage, c.title) for c in checks))
    try:
        for check in checks:
            yield CheckStarted(check.name, check.stage, check.title)
            result = run_one(check, ctx)
            ctx.results[check.name] = result
            report.results.append(result)
            yield CheckFinished(result)
    except KeyboardInterrupt:
        report.interrupted = True
    for r in report.results:  # checks publish the facts a report reader needs under "environment"
        env = r.data.get("environment")
        if isinstance(env, dict):
            report.environment.update(env)
    yield RunFinished(report)


def run_gathered(first: Sequence[Check], ctx: Context, then: Sequence[Check],
                 gather: Callable[[Report], Gathered], argv: Sequence[str] = ()) -> Iterator[Event]:
    """One run in two steps: ``first`` on ``ctx``; their report goes to ``gather`` (which may wait for
    other processes and publish it); then ``then`` (planned for the gathered context's mode) on the
    context it returns. One event stream, one report: the gathered report with ``then``'s results."""
    first_report: Report | None = None
    for ev in run_checks(first, ctx, argv):
        if isinstance(ev, RunStarted):
            yield RunStarted(ev.checks + tuple((c.name, c.stage, c.title) for c in then))
        elif isinstance(ev, RunFinished):
            first_report = ev.report
        else:
            yield ev
    assert first_report is not None  # run_checks always ends with RunFinished
    got = gather(first_report)
    yield from got.events
    for ev in run_checks(then, got.context, argv):
        if isinstance(ev, CheckFinished):
            got.report.results.append(ev.result)
            yield ev
        elif isinstance(ev, CheckStarted):
            yield ev
        elif isinstance(ev, RunFinished) and ev.report.interrupted:
            got.report.interrupted = True
    yield RunFinished(got.report)
