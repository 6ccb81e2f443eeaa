"""What every diagnosing command shares: output options, selection, running the pipeline.

Promise: turns argparse's Namespace into ``Options`` at once, and maps a
finished report to the documented exit code (docs/cli.md, "Exit codes"): 130
interrupted, 2 when no input could be read, 4 incomplete (a check crashed or
timed out), 1 findings at or above --fail-on, else 0.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any, Iterable, Sequence

from commdoctor.core.errors import CommDoctorError, ExitCode
from commdoctor.core.model import Report, Severity, Status

if TYPE_CHECKING:
    from commdoctor.pipeline.run import Event, Options


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
    if out:
        # A prefix no code starts with is a typo: running nothing and saying "healthy" would hide it.
        from commdoctor.checks import BUILTIN_CHECKS
        from commdoctor.core.model import ALIASES

        # Old codes (aliases) stay valid: a script that said --select LOG030 keeps working.
        codes = {r.code for c in BUILTIN_CHECKS for r in c.rules} | set(ALIASES)
        for p in out:
            if not any(code.startswith(p) for code in codes):
                raise CommDoctorError(f"no code starts with {p!r}; 'commdoctor checks' lists them all "
                                      "(prefixes like ENV, PG00, LOG031)")
    return out


def exit_code(report: Report, fail_on: Severity) -> int:
    """The documented exit status of a finished report (docs/cli.md, "Exit codes").

    Incomplete comes first: a check that crashed or timed out may have been the one
    that would have found the cause, so neither "healthy" nor "these findings" is
    the whole truth, and a script must be able to tell.
    """
    if report.interrupted:
        return ExitCode.INTERRUPTED
    if report.unreadable():
        return ExitCode.USAGE
    if any(r.status in (Status.CRASHED, Status.TIMED_OUT) for r in report.results):
        return ExitCode.INCOMPLETE
    worst = max((f.severity.rank for f in report.findings()), default=-1)
    if worst >= fail_on.rank:
        return ExitCode.FINDINGS
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


# -- the TUI as a sink (commdoctor/tui; imported only when it is chosen) ----------


def add_tui_arguments(p: argparse.ArgumentParser, default: bool = False) -> None:
    """``--tui`` / ``--no-tui``. ``default``: whether a terminal gets the TUI unasked (``run`` does)."""
    g = p.add_mutually_exclusive_group()
    g.add_argument("--tui", dest="tui", action="store_true", default=None,
                   help="show results in the interactive TUI" + (" (the default in a terminal)" if default else ""))
    g.add_argument("--no-tui", dest="tui", action="store_false",
                   help="print to the console instead of opening the TUI")
    p.set_defaults(_tui_default=default)


def tui_wanted(args: argparse.Namespace) -> bool:
    """The TUI needs a terminal on both ends; ``--json`` and a pipe always get plain output."""
    asked = getattr(args, "tui", None)
    if getattr(args, "json", False) or asked is False:
        return False
    tty = sys.stdout.isatty() and sys.stdin.isatty()
    if asked and not tty:
        raise CommDoctorError("--tui needs a terminal (stdin and stdout); drop --tui to get console output")
    return tty and bool(asked if asked is not None else getattr(args, "_tui_default", False))


def emit_or_tui(events: Iterable[Any], args: argparse.Namespace, heading: str | None = None,
                logs: Sequence[str] = (), source: str | None = None) -> Report:
    """Like ``emit``, but into the TUI when ``tui_wanted``; the verdict is printed once the TUI closes."""
    if not tui_wanted(args):
        return emit(events, args, heading=heading)
    from commdoctor import tui
    from commdoctor.render.console import make_console
    from commdoctor.render.theme import glyphs
    from commdoctor.render.views import summary_view

    report = tui.run_events(events, heading=heading or "", logs=logs, source=source)
    con, plain = make_console()
    con.print(summary_view(report, glyphs(plain)))  # stays in the scrollback after the TUI is gone
    return report
