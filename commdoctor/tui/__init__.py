"""The Textual TUI (imported only when a TUI is asked for; it imports textual).

``run_events`` shows a live run and returns its report; ``view`` opens a
saved report and/or log files. Both return the report (partial, marked
interrupted, when the user quit before the run finished).
"""

from __future__ import annotations

from typing import Iterable, Sequence

from commdoctor.core.model import Report


def run_events(events: Iterable[object], *, heading: str = "", logs: Sequence[str] = (),
               source: str | None = None) -> Report:
    from commdoctor.tui.app import CommDoctorApp

    app = CommDoctorApp(events=events, heading=heading, logs=logs, source=source)
    app.run()
    if app.state.failure:  # a bug in commdoctor: the whole traceback belongs in the scrollback
        import sys

        sys.stderr.write("commdoctor: internal error while running checks (please report it):\n" + app.state.failure)
    return app.final_report()


def view(report: Report | None, *, source: str | None = None, logs: Sequence[str] = (), heading: str = "") -> Report:
    from commdoctor.tui.app import CommDoctorApp

    app = CommDoctorApp(report=report, source=source, logs=logs, heading=heading)
    app.run()
    return app.final_report()
