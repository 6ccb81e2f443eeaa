"""The only place for glyphs and colours (console and TUI share it).

Promise: ``glyphs(ascii=True)`` gives output that survives any terminal, log
file or ticket system; colours are rich style strings.
"""

from __future__ import annotations

from dataclasses import dataclass

from commdoctor.core.model import Severity, Status


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


# -- additions for the TUI (and any sink that shows live runs, ranks or logs) --

#: Check states that exist only while a run is live (before a Status is known).
LIVE_GLYPHS = {"pending": ("[ ]", "[ ]"), "running": ("[…]", "[..]")}  # (unicode, ascii)
STYLE.update({
    "pending": "dim",
    "running": "bold cyan",
    # log view
    "log.error": "red",
    "log.warn": "yellow",
    "log.cited": "bold reverse",
    "log.lineno": "dim",
    "log.match": "bold",
})


@dataclass(frozen=True)
class RankState:
    """How one rank state of a hung job is drawn: a letter that survives NO_COLOR, a colour, a label."""

    letter: str
    style: str
    label: str
    group: str  # "waiting" | "elsewhere" | "dead" | "unknown": the three families a user reads first


#: Rank states written by the hang diagnosis (docs/tui.md, "Rank data"). Unknown states
#: are drawn with ``RANK_STATE_UNKNOWN`` and their own name, never dropped.
RANK_STATES: dict[str, RankState] = {
    "collective": RankState("C", "bold yellow", "waiting in a collective", "waiting"),
    "barrier": RankState("B", "yellow", "waiting in a barrier", "waiting"),
    "p2p": RankState("P", "yellow", "waiting in send/recv", "waiting"),
    "rendezvous": RankState("R", "yellow", "waiting in rendezvous", "waiting"),
    "computing": RankState("c", "cyan", "computing", "elsewhere"),
    "data_loading": RankState("L", "bold cyan", "in data loading", "elsewhere"),
    "cuda_sync": RankState("S", "bold cyan", "in a CUDA synchronisation", "elsewhere"),
    "checkpoint_io": RankState("I", "bold cyan", "in checkpoint I/O", "elsewhere"),
    "elsewhere": RankState("E", "bold cyan", "elsewhere (not communicating)", "elsewhere"),
    "sleeping": RankState("s", "cyan", "sleeping", "elsewhere"),
    "stopped": RankState("T", "bold magenta", "stopped (SIGSTOP or traced)", "elsewhere"),
    "exited": RankState("X", "bold red", "exited", "dead"),
    "zombie": RankState("Z", "bold red", "zombie", "dead"),
    "dead": RankState("D", "bold red", "dead", "dead"),
    "finished": RankState("F", "green", "finished", "elsewhere"),
    "unknown": RankState("?", "dim", "unknown (no stack)", "unknown"),
}
RANK_STATE_UNKNOWN = RankState("?", "dim", "unknown", "unknown")


def rank_state(name: str) -> RankState:
    known = RANK_STATES.get(name)
    if known is not None:
        return known
    return RankState("?", RANK_STATE_UNKNOWN.style, name.replace("_", " ") or "unknown", "unknown")


def live_glyph(state: str, ascii_only: bool) -> str:
    uni, asc = LIVE_GLYPHS[state]
    return asc if ascii_only else uni
