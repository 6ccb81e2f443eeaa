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
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence, Union

from commdoctor import __version__
from commdoctor.checks.base import Check, selected
from commdoctor.errors import SkipCheck
from commdoctor.model import CheckResult, Finding, Report, Severity, Stage, Status


@dataclass
class Options:
    """Everything a run was asked to do, already validated (the CLI builds it)."""

    mode: str = "run"
    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    world_size: int = 2
    backends: tuple[str, ...] = ()  # empty: every backend that can run here
    timeout: float = 15.0  # budget for network probes (seconds)
    pg_timeout: float = 60.0  # budget for the local process-group test
    fail_on: Severity = Severity.ERROR
    verbose: int = 0
    inputs: tuple[str, ...] = ()  # files for offline modes
    extra: dict[str, Any] = field(default_factory=dict)  # per-mode settings


class Facts:
    """Lazily computed, cached facts shared by the checks of one run.

    Providers are plain callables ``(context) -> value``. A fact is computed at
    most once even when several checks ask at the same time; a provider that
    raises makes every asker see that exception (as a crash of that check).
    """

    def __init__(self, providers: Mapping[str, Callable[[Context], Any]] | None = None) -> None:
        self._providers = dict(providers or {})
        self._values: dict[str, Any] = {}
        self._errors: dict[str, BaseException] = {}
        self._events: dict[str, threading.Event] = {}
        self._lock = threading.Lock()

    def provide(self, name: str, value: Any) -> None:
        with self._lock:
            self._values[name] = value
            self._events.setdefault(name, threading.Event()).set()

    def register(self, name: str, provider: Callable[[Context], Any]) -> None:
        self._providers[name] = provider

    def has(self, name: str) -> bool:
        return name in self._values or name in self._providers

    def get(self, name: str, ctx: Context) -> Any:
        with self._lock:
            if name in self._values:
                return self._values[name]
            if name in self._errors:
                raise self._errors[name]
            existing = self._events.get(name)
            owner = existing is None
            if existing is None:
                if name not in self._providers:
                    raise KeyError(f"no provider for fact {name!r}")
                existing = self._events[name] = threading.Event()
            ev = existing
        if not owner:
            ev.wait()  # bounded by the asking check's own deadline
            return self.get(name, ctx)
        try:
            value = self._providers[name](ctx)
        except BaseException as e:  # noqa: BLE001 - recorded, re-raised to every asker
            with self._lock:
                self._errors[name] = e
            ev.set()
            raise
        with self._lock:
            self._values[name] = value
        ev.set()
        return value


@dataclass
class Context:
    options: Options
    facts: Facts
    results: dict[str, CheckResult] = field(default_factory=dict)

    def fact(self, name: str) -> Any:
        return self.facts.get(name, self)


class CheckRun:
    """The handle a check gets: facts in, summary / details / data out."""

    def __init__(self, ctx: Context, result: CheckResult) -> None:
        self.ctx = ctx
        self._result = result

    @property
    def options(self) -> Options:
        return self.ctx.options

    def fact(self, name: str) -> Any:
        return self.ctx.fact(name)

    def summary(self, text: str) -> None:
        self._result.summary = text

    def detail(self, text: str) -> None:
        self._result.details.append(text)

    @property
    def data(self) -> dict[str, Any]:
        return self._result.data


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


# -- running ------------------------------------------------------------------


def plan(checks: Iterable[Check], options: Options) -> list[Check]:
    """The checks to run for this mode and selection, in stage order (stable)."""
    chosen = [
        c
        for c in checks
        if options.mode in c.modes and any(selected(code, options.select, options.ignore) for code in c.codes())
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
    keep = [f for f in list(findings) if selected(f.code, ctx.options.select, ctx.options.ignore)]
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
