"""The support report of a report already made: redacted Markdown, HTML and JSON, as ``commdoctor report`` writes them.

Promise: one path from a ``Report`` (and the files it cites) to what a user
attaches to a ticket, shared by ``commdoctor report`` and the TUI's ``s`` key,
so both redact and render alike. Inputs are read under the bundle's size bounds
and never raise: an unreadable one becomes a line of the report's "problems".
Secrets are always redacted. Standard library and commdoctor only (no torch,
no textual): the TUI and the offline commands may call it.
"""

from __future__ import annotations

import json
import os
from typing import Any, Callable, Mapping, Sequence

from commdoctor.core.model import Report
from commdoctor.render import bundle as B
from commdoctor.render.redact import Redactor
from commdoctor.render.report import Material


def prepare(report: Report, system: Mapping[str, Any] | None = None, *, logs: Sequence[str] = (),
            records: Sequence[str] = (), stacks: Sequence[str] = (), fr: Sequence[str] = (),
            cmdlines: Sequence[str] = (), anonymize: bool = False,
            on_bytes: Callable[[int], None] | None = None) -> tuple[Material, Redactor, str]:
    """(redacted material, the redactor, the redacted report as JSON) for ``report`` and its inputs.

    The JSON model carries what the document shows (the redaction counts, the
    environment when given), so ``commdoctor report --from`` of it renders the same again.
    """
    raw = B.gather(report, system, logs=logs, records=records, stacks=stacks, fr=fr, cmdlines=cmdlines,
                   on_bytes=on_bytes)
    material, red = B.sanitize(raw, anonymize=anonymize)
    material.redaction = red.summary()
    model = material.report
    model.environment = dict(model.environment)
    if material.system is not None:
        model.environment["system"] = material.system
    model.environment["redaction"] = material.redaction
    report_json = json.dumps(model.to_dict(), indent=2, ensure_ascii=False, default=str) + "\n"
    return material, red, report_json


def write_support_report(report: Report, directory: str, stem: str, *, logs: Sequence[str] = ()) -> list[str]:
    """Write ``stem.md``, ``stem.html`` and ``stem.json`` (all redacted) in ``directory``; return their paths.

    ``logs`` are files to excerpt around the lines the findings cite (bounded, redacted).
    Each file is written whole or not at all (a temporary name, then a rename), so an
    interrupted write never leaves half a report where a user would attach it.
    """
    from commdoctor.render.report import render

    material, _red, report_json = prepare(report, None, logs=logs)
    md, html_text = render(material)
    out = []
    for ext, text in (("md", md), ("html", html_text), ("json", report_json)):
        path = os.path.join(directory, f"{stem}.{ext}")
        tmp = path + ".tmp"
        with open(tmp, "w", encoding="utf-8", newline="\n") as f:
            f.write(text)
        os.replace(tmp, path)
        out.append(path)
    return out
