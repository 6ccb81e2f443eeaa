"""``commdoctor view REPORT.json [--log FILE ...]``: reopen a saved report, and/or logs, in the TUI.

Promise: without a terminal (a pipe, a script, CI) it prints the same console
rendering ``commdoctor run`` prints, or the report itself with ``--json``, so
it is scriptable; exit codes follow the report's findings like every
diagnosing command. Reading a report never imports torch.
"""

from __future__ import annotations

import argparse
import os
from typing import Iterator

from commdoctor.commands.common import add_tui_arguments, exit_code, tui_wanted
from commdoctor.core.errors import CommDoctorError
from commdoctor.core.model import Report, Severity


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("report", nargs="?", metavar="REPORT.json",
                   help="a report written by --json (commdoctor run/logs/hang --json > report.json)")
    p.add_argument("--log", action="append", default=[], metavar="FILE",
                   help="also open this log file in the log view (repeatable); logs the report cites open by themselves")
    g = p.add_argument_group("output")
    g.add_argument("--json", action="store_true", help="print the report as JSON (after checking it reads)")
    g.add_argument("-v", "--verbose", action="count", default=0, help="console output: show evidence and remedy steps")
    g.add_argument("--fail-on", choices=("warning", "error"), default="error",
                   help="exit 1 when a finding is at least this severe (default: error)")
    add_tui_arguments(p, default=True)


def load(path: str) -> Report:
    """Read a saved report, or say exactly why it cannot be read (commdoctor.loaders.docschema.load_report)."""
    import sys

    from commdoctor.loaders.docschema import load_report

    try:
        report, problems = load_report(path)
    except FileNotFoundError:
        raise CommDoctorError(f"{path}: no such file; write one with 'commdoctor run --json > {path}'") from None
    except IsADirectoryError:
        raise CommDoctorError(f"{path} is a directory; give the report's JSON file") from None
    except OSError as e:
        raise CommDoctorError(f"cannot read {path}: {e.strerror or e}") from None
    except ValueError as e:
        raise CommDoctorError(f"{path} is not a JSON report ({e}); 'commdoctor view --log {path}' opens a log") from None
    for p in problems[:50]:  # one line per bad item; everything else is shown
        sys.stderr.write(f"commdoctor: {path}: {p}\n")
    if len(problems) > 50:
        sys.stderr.write(f"commdoctor: {path}: {len(problems) - 50} more items left out\n")
    return report


def events_of(report: Report) -> Iterator[object]:
    """The pipeline events that would have produced ``report``, for the console sink."""
    from commdoctor.pipeline.run import CheckFinished, RunFinished, RunStarted

    yield RunStarted(tuple((r.check, r.stage, r.title) for r in report.results))
    for r in report.results:
        yield CheckFinished(r)
    yield RunFinished(report)


def main(args: argparse.Namespace) -> int:
    import commdoctor.checks  # noqa: F401 - before anything that imports the pipeline (circular on main)

    if not args.report and not args.log:
        raise CommDoctorError("give a report (commdoctor view report.json) or a log (commdoctor view --log FILE)")
    for p in args.log:
        if not os.path.isfile(p):
            raise CommDoctorError(f"--log {p}: no such file")
    report = load(args.report) if args.report else None
    fail_on = Severity(args.fail_on)
    if tui_wanted(args):
        from commdoctor import tui

        heading = (f"view {args.report}: {report.mode} on {report.host}, {report.created}" if report
                   else f"view {', '.join(args.log)}")
        tui.view(report, source=args.report, logs=args.log, heading=heading)
        return exit_code(report, fail_on) if report else 0
    if report is None:
        raise CommDoctorError("without a terminal, view prints a report; give REPORT.json (--log needs the TUI)")
    if args.json:
        from commdoctor.render.jsonout import dumps

        print(dumps(report))
        return exit_code(report, fail_on)
    from commdoctor.render import console

    heading = f"commdoctor view {args.report}: {report.mode} on {report.host}, {report.created}"
    console.render_events(events_of(report), verbose=args.verbose, heading=heading)  # type: ignore[arg-type]
    return exit_code(report, fail_on)
