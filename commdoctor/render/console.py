"""The console sink: flutter-doctor-style lines streamed as checks finish.

Promise: consumes pipeline events only. Writes plain ASCII without colour when
NO_COLOR is set or the stream is not a terminal; progress goes to stderr so
stdout can be piped.
"""

from __future__ import annotations

import os
import sys
import time
from typing import IO, Iterable

from rich.console import Console
from rich.text import Text

from commdoctor.core.model import Report, Stage
from commdoctor.pipeline.run import CheckFinished, CheckStarted, Event, NodeReported, RunFinished, RunStarted
from commdoctor.render import progress
from commdoctor.render.theme import STYLE, glyphs
from commdoctor.render.views import nodes_view, not_applicable, result_view, summary_view


def plain_wanted(stream: IO[str]) -> bool:
    return bool(os.environ.get("NO_COLOR")) or not (hasattr(stream, "isatty") and stream.isatty())


def make_console(stream: IO[str] | None = None) -> tuple[Console, bool]:
    stream = stream or sys.stdout
    plain = plain_wanted(stream)
    con = Console(file=stream, no_color=plain, highlight=False, emoji=False,
                  force_terminal=None if not plain else False, soft_wrap=plain,
                  width=None if not plain else 200)
    return con, plain


def render_events(events: Iterable[Event], verbose: int = 0, stream: IO[str] | None = None,
                  heading: str | None = None) -> Report:
    """Print events as they come; return the final report."""
    con, plain = make_console(stream)
    g = glyphs(plain)
    err = Console(file=sys.stderr, no_color=plain, highlight=False) if not plain else None
    stage: Stage | None = None
    start = time.monotonic()
    status = None
    title = ""
    report: Report | None = None

    def meter(text: str | None) -> None:  # a long check's progress, on its own status line
        if status is not None:
            status.update(f"{title} {g.running}" + (f"  {text}" if text else ""))
    if heading:
        con.print(Text(heading, style="bold"))
    try:
        for ev in events:
            if isinstance(ev, RunStarted):
                continue
            if isinstance(ev, CheckStarted):
                if err is not None:
                    title = ev.title
                    if status is None:
                        status = err.status(f"{ev.title} {g.running}")
                        status.start()
                        progress.set_display(meter)
                    else:
                        status.update(f"{ev.title} {g.running}")
                continue
            if isinstance(ev, NodeReported):  # another node of a multi-node run: under its own heading
                if status is not None:
                    progress.set_display(None)
                    status.stop()
                    status = None
                stage = None
                n = ev.node
                where = f" ({n['address']})" if n.get("address") else ""
                con.print(Text(f"\nnode {n.get('node', '?')}: {n.get('host', '?')}{where}", style=STYLE["stage"]))
                con.print(result_view(ev.result, g, verbose))
                continue
            if isinstance(ev, CheckFinished):
                r = ev.result
                if status is not None:
                    progress.set_display(None)
                    status.stop()
                    status = None
                if not verbose and not_applicable(r):
                    continue  # nothing given for it: not part of this answer (and no empty stage heading)
                if r.stage is not stage:
                    stage = r.stage
                    con.print(Text(f"\n{stage.value}", style=STYLE["stage"]))
                con.print(result_view(r, g, verbose))
            elif isinstance(ev, RunFinished):
                report = ev.report
    finally:
        if status is not None:
            progress.set_display(None)
            status.stop()
    assert report is not None, "the pipeline always ends with RunFinished"
    if report.nodes:  # a multi-node run: one line per node before the verdict
        con.print()
        con.print(nodes_view(report, g))
    con.print()
    con.print(summary_view(report, g, time.monotonic() - start, verbose))
    return report
