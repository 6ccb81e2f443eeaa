"""Writing the support report from the TUI (the ``s`` key).

Promise: always writes something a user can attach, and says where. When
``commdoctor.render.report`` provides ``write_support_report(report,
directory, stem) -> list[str]`` it is used (imported only when asked);
otherwise the report model is written as JSON (readable by ``commdoctor view``)
next to the input, and the message says so. Standard library only.
"""

from __future__ import annotations

import importlib
import json
import os
import tempfile

from commdoctor.model import Report


def target(source: str | None, report: Report, cwd: str | None = None) -> tuple[str, str]:
    """(directory, stem) for the files: next to the input when there is one, else the current directory."""
    if source:
        d = os.path.dirname(os.path.abspath(source))
        stem = os.path.splitext(os.path.basename(source))[0] + "-support"
    else:
        d = cwd or os.getcwd()
        stem = f"commdoctor-{report.mode or 'run'}-support"
    return d, stem


def _writable(d: str) -> bool:
    return os.path.isdir(d) and os.access(d, os.W_OK)


def export(report: Report, source: str | None, cwd: str | None = None) -> tuple[list[str], str]:
    """Write the support report; return (paths written, a one-line message for the user)."""
    d, stem = target(source, report, cwd)
    note = ""
    if not _writable(d):
        fallback = cwd or os.getcwd()
        if not _writable(fallback):
            fallback = tempfile.gettempdir()
        note = f" ({d} is not writable)"
        d = fallback
    try:
        mod = importlib.import_module("commdoctor.render.report")
    except ImportError:
        mod = None
    writer = getattr(mod, "write_support_report", None) if mod is not None else None
    if writer is not None:
        paths = [str(p) for p in writer(report, d, stem)]
        return paths, f"Support report written: {', '.join(paths)}{note}"
    path = os.path.join(d, stem + ".json")
    with open(path, "w", encoding="utf-8") as fh:
        # The --json document exactly (render/jsonout.dumps), without importing the pipeline.
        fh.write(json.dumps(report.to_dict(), indent=2, ensure_ascii=False, default=str) + "\n")
    why = ("commdoctor.render.report is not installed" if mod is None
           else "commdoctor.render.report has no write_support_report")
    return [path], f"Wrote the report as JSON to {path}{note} ({why}; reopen it with 'commdoctor view')"
