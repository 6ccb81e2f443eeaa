"""Where the hang fixtures (fixtures/hang, made by capture.py) put their lines of interest."""

from __future__ import annotations

import json
from pathlib import Path

FIX = Path(__file__).resolve().parent.parent / "fixtures" / "hang"


def mark_line(name: str) -> int:
    """The line of ``# MARK:name`` in hangjob.py as it was when the fixtures were captured."""
    return int(json.loads((FIX / "marks.json").read_text())[name])
