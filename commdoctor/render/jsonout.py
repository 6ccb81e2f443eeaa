"""The JSON sink: stdout is data, one document per run (docs/json-schema.md).

Promise: standard library only; nothing but the JSON document goes to stdout.
"""

from __future__ import annotations

import json
import sys
from typing import IO, Iterable

from commdoctor.core.model import Report
from commdoctor.pipeline.run import CheckFinished, Event, RunFinished


def dumps(report: Report) -> str:
    return json.dumps(report.to_dict(), indent=2, ensure_ascii=False, default=str)


def render_events(events: Iterable[Event], stream: IO[str] | None = None, progress: IO[str] | None = None) -> Report:
    """Write the report as JSON once the run ends; ``progress`` (e.g. stderr) gets a line per check."""
    out = stream or sys.stdout
    report: Report | None = None
    for ev in events:
        if isinstance(ev, CheckFinished) and progress is not None:
            progress.write(f"commdoctor: {ev.result.check}: {ev.result.status.value}\n")
            progress.flush()
        elif isinstance(ev, RunFinished):
            report = ev.report
    assert report is not None, "the pipeline always ends with RunFinished"
    out.write(dumps(report) + "\n")
    out.flush()
    return report
