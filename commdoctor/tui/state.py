"""What the TUI knows about a run, built only from pipeline events or a saved report.

Promise: standard library and commdoctor.core.model only (no textual, no rich), so
every rule of what the screens show (order, live status, elapsed time, rank
data, cited log lines) is testable without a terminal. Nothing here diagnoses:
it reshapes what the checks already said.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Iterator, Mapping

from commdoctor.core.model import CheckResult, Evidence, Finding, Report, Stage, Status

#: Check rows that have no Status yet.
PENDING, RUNNING = "pending", "running"


@dataclass
class CheckRow:
    name: str
    stage: Stage
    title: str
    state: str = PENDING  # PENDING, RUNNING or a Status value
    started: float | None = None  # clock() when it started (live runs only)
    result: CheckResult | None = None


@dataclass
class RankRow:
    """One rank of a job, from ``CheckResult.data["ranks"]`` (docs/tui.md, "Rank data")."""

    rank: int
    host: str
    state: str
    op: str | None = None
    site: str | None = None
    stack: tuple[Any, ...] = ()
    pid: int | None = None
    detail: str | None = None
    #: The process's other threads that have frames: (thread name, frames innermost first).
    threads: tuple[tuple[str, tuple[Any, ...]], ...] = ()
    #: Why there is no stack (py-spy's message), when there is none.
    stack_error: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"rank": self.rank, "host": self.host, "state": self.state, "op": self.op, "site": self.site,
                "stack": list(self.stack), "pid": self.pid, "detail": self.detail,
                "threads": [{"name": n, "frames": list(fr)} for n, fr in self.threads],
                "stack_error": self.stack_error}


class RunState:
    """The checks of one run with their live state, and the findings so far.

    ``apply`` takes pipeline events (RunStarted, CheckStarted, CheckFinished,
    RunFinished) in the order the pipeline yields them; ``from_report`` builds
    the same state from a saved report.
    """

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self.rows: dict[str, CheckRow] = {}
        self.report: Report | None = None
        self.started = clock()
        self.finished_at: float | None = None
        self.failure: str | None = None  # the event source itself broke (a bug): shown, never hidden

    @classmethod
    def from_report(cls, report: Report, clock: Callable[[], float] = time.monotonic) -> RunState:
        st = cls(clock)
        for r in report.results:
            st.rows[r.check] = CheckRow(r.check, r.stage, r.title, r.status.value, None, r)
        st.report = report
        st.finished_at = st.started
        return st

    # -- events ------------------------------------------------------------------

    def apply(self, event: Any) -> None:
        import commdoctor.checks  # noqa: F401 - pipeline must not be the first import (circular on main)
        from commdoctor.pipeline.run import CheckFinished, CheckStarted, RunFinished, RunStarted

        if isinstance(event, RunStarted):
            for name, stage, title in event.checks:
                self.rows.setdefault(name, CheckRow(name, stage, title))
        elif isinstance(event, CheckStarted):
            row = self.rows.setdefault(event.check, CheckRow(event.check, event.stage, event.title))
            row.state, row.started = RUNNING, self.clock()
        elif isinstance(event, CheckFinished):
            r = event.result
            row = self.rows.setdefault(r.check, CheckRow(r.check, r.stage, r.title))
            row.state, row.result = r.status.value, r
        elif isinstance(event, RunFinished):
            self.report = event.report
            self.finished_at = self.clock()
            for r in event.report.results:  # the report is the truth once it exists
                row = self.rows.setdefault(r.check, CheckRow(r.check, r.stage, r.title))
                row.state, row.result = r.status.value, r

    # -- what the screens ask ----------------------------------------------------------

    def shown_rows(self) -> dict[str, CheckRow]:
        """The rows the Checks tab lists: all but checks skipped for an input this run was not given."""
        return {k: r for k, r in self.rows.items() if r.result is None or not _not_applicable(r.result)}

    @property
    def done(self) -> bool:
        return self.report is not None

    def elapsed(self, row: CheckRow) -> float | None:
        """Seconds a check took (finished) or has taken so far (running); None before it starts."""
        if row.result is not None:
            return row.result.duration_s
        if row.state == RUNNING and row.started is not None:
            return max(0.0, self.clock() - row.started)
        return None

    def running(self) -> CheckRow | None:
        return next((r for r in self.rows.values() if r.state == RUNNING), None)

    def results(self) -> list[CheckResult]:
        if self.report is not None:
            return list(self.report.results)
        return [r.result for r in self.rows.values() if r.result is not None]

    def partial_report(self, template: Report | None = None) -> Report:
        """The report so far: the real one when the run finished, else one marked interrupted."""
        if self.report is not None:
            return self.report
        from commdoctor import __version__
        import socket
        from datetime import datetime, timezone

        return Report(
            tool_version=__version__, mode=template.mode if template else "run",
            created=datetime.now(timezone.utc).isoformat(timespec="seconds"),
            host=socket.gethostname(), results=self.results(), interrupted=True,
        )

    def findings(self) -> list[Finding]:
        return sorted_findings(self.results())

    def ranks(self) -> list[RankRow]:
        return ranks_of(self.results())

    def verdict(self) -> Finding | None:
        """The headline finding, as the report model chooses it."""
        return Report(tool_version="", mode="", created="", host="", results=self.results()).verdict()


def _not_applicable(r: CheckResult) -> bool:
    # The same test as render.views.not_applicable, kept here so this module needs no rich.
    return r.status is Status.SKIPPED and isinstance(r.data, Mapping) and r.data.get("not_applicable") is True


def sorted_findings(results: Iterable[CheckResult]) -> list[Finding]:
    """Findings most severe first; within a severity, the report's own order (causes first)."""
    rep = Report(tool_version="", mode="", created="", host="", results=list(results))
    return sorted(rep.findings(), key=lambda f: -f.severity.rank)


def ranks_of(results: Iterable[CheckResult]) -> list[RankRow]:
    """Every rank described in the results' ``data["ranks"]``, sorted by host then rank.

    Tolerant by design: entries that are not mappings or have no integer rank
    are skipped; a later result's entry for the same rank replaces an earlier
    one (a later stage knows more).
    """
    by_rank: dict[int, RankRow] = {}
    for r in results:
        entries = r.data.get("ranks") if isinstance(r.data, Mapping) else None
        if not isinstance(entries, list):
            continue
        for e in entries:
            row = _rank_row(e)
            if row is not None:
                by_rank[row.rank] = row
    return sorted(by_rank.values(), key=lambda x: (x.host, x.rank))


def _rank_row(e: Any) -> RankRow | None:
    """One entry of ``data["ranks"]``, in either shape the docs describe.

    The hang stage writes its own record (``commdoctor hang --json``): the stack is a
    process dump ``{"pid", "threads": [{"name", "frames"}]}``, and what the rank is doing
    sits under ``classification`` (``op``, ``where``) and ``describe``. Other writers may
    use the flat shape (``op``, ``site``, ``detail``, ``stack`` as a list of frames).
    Both become the same row, so the grid and the stack screen never print a raw dict.
    """
    if not isinstance(e, Mapping):
        return None
    try:
        rank = int(e["rank"])
    except (KeyError, TypeError, ValueError):
        return None
    cls = e.get("classification")
    cls = cls if isinstance(cls, Mapping) else {}
    stack, threads = _frames_of(e.get("stack"), cls.get("thread"))
    pid = e.get("pid")
    op = e.get("op") or cls.get("op")
    site = e.get("site") or cls.get("where")
    detail = e.get("detail") or e.get("describe") or cls.get("describe")
    err = e.get("stack_error")
    return RankRow(
        rank=rank,
        host=str(e.get("host") or ""),
        state=str(e.get("state") or "unknown"),
        op=str(op) if op else None,
        site=str(site) if site else None,
        stack=stack,
        pid=pid if isinstance(pid, int) and not isinstance(pid, bool) else None,
        detail=str(detail) if detail else None,
        threads=threads,
        stack_error=str(err) if err else None,
    )


def _frames_of(stack: Any, thread: Any) -> tuple[tuple[Any, ...], tuple[tuple[str, tuple[Any, ...]], ...]]:
    """(frames of the thread that matters, the other threads with frames) from either stack shape.

    The thread that matters is the one the hang stage classified (``classification.thread``),
    else ``MainThread``, else the first thread with frames: a hung rank's story is told by
    one thread, and the others (loader workers, watchdogs) are shown after it.
    """
    if not stack:
        return (), ()
    if isinstance(stack, Mapping):
        raw = stack.get("threads")
        if not isinstance(raw, list):
            return (), ()
        named: list[tuple[str, tuple[Any, ...]]] = []
        for t in raw:
            if isinstance(t, Mapping):
                frames = t.get("frames")
                frames = tuple(frames) if isinstance(frames, list) else ()
                named.append((str(t.get("name") or t.get("thread_id") or "?"), frames))
        with_frames = [t for t in named if t[1]]
        main = (next((t for t in with_frames if thread and t[0] == thread), None)
                or next((t for t in with_frames if t[0] == "MainThread"), None)
                or (with_frames[0] if with_frames else None))
        if main is None:
            return (), ()
        return main[1], tuple(t for t in with_frames if t is not main)
    if isinstance(stack, (list, tuple)):
        return tuple(stack), ()
    return (str(stack),), ()


def hosts_of(ranks: Iterable[RankRow]) -> dict[str, list[RankRow]]:
    """Ranks grouped by host, hosts in order of their lowest rank."""
    groups: dict[str, list[RankRow]] = {}
    for r in sorted(ranks, key=lambda x: x.rank):
        groups.setdefault(r.host, []).append(r)
    return groups


def cited_ranks(finding: Finding | None) -> set[int]:
    """The ranks a finding is about (its ``ranks``; else its evidence's); the grid marks the verdict's.

    Evidence often quotes a healthy rank for contrast, so it counts only when ``ranks`` is empty.
    """
    if finding is None:
        return set()
    return set(finding.ranks) or {e.rank for e in finding.evidence if e.rank is not None}


# -- evidence that points into files ----------------------------------------------------


def resolve_source(source: str, bases: Iterable[str]) -> str | None:
    """The file an evidence ``source`` names, if it is one: absolute, or relative to a base.

    Sources such as "env", "probe:pg" or "stack:rank3" are not files and give None.
    """
    if not source or ":" in source.split(os.sep)[0] and not os.path.isabs(source):
        return None
    if os.path.isabs(source):
        return source if os.path.isfile(source) else None
    for base in bases:
        p = os.path.join(base, source)
        if os.path.isfile(p):
            return os.path.abspath(p)
    return None


def cited_lines(findings: Iterable[Finding], bases: Iterable[str]) -> dict[str, dict[int, Finding]]:
    """For each evidence file on disk: its cited 0-based line numbers and the finding citing each."""
    bases = list(bases)
    out: dict[str, dict[int, Finding]] = {}
    for f in findings:
        for e in f.evidence:
            path = resolve_source(e.source, bases)
            if path is None or not e.line or e.line < 1:
                continue
            out.setdefault(path, {}).setdefault(e.line - 1, f)
    return out


def file_evidence(f: Finding, bases: Iterable[str]) -> Iterator[tuple[Evidence, str]]:
    bases = list(bases)
    for e in f.evidence:
        p = resolve_source(e.source, bases)
        if p is not None:
            yield e, p
