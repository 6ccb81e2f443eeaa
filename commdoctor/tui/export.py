"""Writing the support report from the TUI (the ``s`` key).

Promise: always writes something a user can attach, and says where. The
report is the one ``commdoctor report --from`` writes (redacted Markdown and
HTML, and the redacted JSON that ``commdoctor view`` and ``report --from``
reopen), with bounded excerpts of the log files the TUI has open around the
lines the findings cite. Should rendering fail (a bug), the report is still
written as plain JSON and the message says why. No textual here.
"""

from __future__ import annotations

import json
import os
import tempfile
from typing import Sequence

from commdoctor.core.model import Report


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


def export(report: Report, source: str | None, cwd: str | None = None,
           logs: Sequence[str] = ()) -> tuple[list[str], str]:
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
        from commdoctor.render.support import write_support_report

        paths = write_support_report(report, d, stem, logs=logs)
    except OSError:
        raise  # the caller says the file could not be written; a plain JSON would fail the same way
    except Exception as e:  # noqa: BLE001 - a rendering bug must not lose the user's report
        path = os.path.join(d, stem + ".json")
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(json.dumps(report.to_dict(), indent=2, ensure_ascii=False, default=str) + "\n")
        return [path], (f"Could not render the support report ({type(e).__name__}: {e}); wrote the report, "
                        f"NOT redacted, as JSON to {path}{note}")
    return paths, f"Support report (redacted) written: {', '.join(paths)}{note}"
