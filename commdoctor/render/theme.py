"""The only place for glyphs and colours (console and TUI share it).

Promise: ``glyphs(ascii=True)`` gives output that survives any terminal, log
file or ticket system; colours are rich style strings.
"""

from __future__ import annotations

from dataclasses import dataclass

from commdoctor.model import Severity, Status


@dataclass(frozen=True)
class Glyphs:
    passed: str
    warned: str
    failed: str
    skipped: str
    crashed: str
    timed_out: str
    error: str
    warning: str
    info: str
    remedy: str
    running: str


UNICODE = Glyphs("[✓]", "[!]", "[✗]", "[-]", "[☠]", "[⏱]", "✗", "!", "•", "→", "…")
ASCII = Glyphs("[ok]", "[!]", "[x]", "[-]", "[crash]", "[timeout]", "x", "!", "*", "->", "...")

STYLE = {
    "passed": "green",
    "warned": "yellow",
    "failed": "bold red",
    "skipped": "dim",
    "crashed": "bold magenta",
    "timed_out": "magenta",
    Severity.ERROR: "red",
    Severity.WARNING: "yellow",
    Severity.INFO: "cyan",
    "code": "bold",
    "remedy": "green",
    "evidence": "dim",
    "stage": "bold underline",
    "verdict": "bold",
}


def glyphs(ascii_only: bool) -> Glyphs:
    return ASCII if ascii_only else UNICODE


def status_key(status: Status, worst: Severity | None) -> str:
    """Which glyph/style a check line gets: warnings show on a passed check."""
    if status is Status.PASSED:
        return "warned" if worst is Severity.WARNING else "passed"
    return status.value


def severity_glyph(g: Glyphs, sev: Severity) -> str:
    return {Severity.ERROR: g.error, Severity.WARNING: g.warning, Severity.INFO: g.info}[sev]
