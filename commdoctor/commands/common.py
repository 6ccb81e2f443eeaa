"""What every diagnosing command shares: output options, selection, running the pipeline.

Promise: turns argparse's Namespace into ``Options`` at once, and maps a
finished report to the documented exit code.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Iterable, Sequence

from commdoctor.errors import CommDoctorError, ExitCode
from commdoctor.model import Report, Severity, Status

if TYPE_CHECKING:
    from commdoctor.pipeline import Event, Options


def add_output_arguments(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("output")
    g.add_argument("--json", action="store_true", help="write the report as JSON to stdout (docs/json-schema.md)")
    g.add_argument("-v", "--verbose", action="count", default=0, help="show evidence, details and remedy steps")
    g.add_argument("--select", default="", metavar="CODES",
                   help="comma-separated code prefixes to report (e.g. ENV,PG001)")
    g.add_argument("--ignore", default="", metavar="CODES", help="comma-separated code prefixes to leave out")
    g.add_argument("--fail-on", choices=("warning", "error"), default="error",
                   help="exit 1 when a finding is at least this severe (default: error)")


def prefixes(text: str) -> tuple[str, ...]:
    out = tuple(p.strip().upper() for p in text.split(",") if p.strip())
    for p in out:
        if not p.replace("_", "").isalnum():
            raise CommDoctorError(f"{p!r} is not a code prefix (codes look like ENV030; prefixes like ENV or PG00)")
    return out


def exit_code(report: Report, fail_on: Severity) -> int:
    if report.interrupted:
        return ExitCode.INTERRUPTED
    worst = max((f.severity.rank for f in report.findings()), default=-1)
    if worst >= fail_on.rank:
        return ExitCode.FINDINGS
    # A crashed check is a bug in commdoctor and leaves the diagnosis incomplete.
    if any(r.status is Status.CRASHED for r in report.results):
        return ExitCode.INTERNAL
    return ExitCode.OK


def emit(events: Iterable[Event], args: argparse.Namespace, heading: str | None = None) -> Report:
    """Send events to the JSON or the console sink, as asked."""
    if args.json:
        from commdoctor.render import jsonout

        return jsonout.render_events(events, progress=sys.stderr if args.verbose else None)
    from commdoctor.render import console

    return console.render_events(events, verbose=args.verbose, heading=heading)


def argv_of(args: argparse.Namespace) -> Sequence[str]:
    return ["commdoctor", *getattr(args, "_argv", [])]
