"""A one-line progress meter on stderr for long work (log scans, bundles, records, joins, watching).

Promise: it writes only when stderr is a terminal and the caller did not ask
for machine output; it stays silent for the first second (short work prints
nothing) and then redraws at most a few times a second, so it never costs more
than the work it reports on; it clears its line when done. Nothing here
imports torch. ``COMMDOCTOR_PROGRESS_DELAY_S`` sets the first second to
something else (0 draws at once: what the tests use to see a meter on a
short job).
"""

from __future__ import annotations

import os
import sys
import time
from types import TracebackType
from typing import Callable, TextIO

#: Seconds before the first draw (a scan this short needs no meter) and between draws.
DELAY_S = 1.0
EVERY_S = 0.25


#: Where meters draw while another live line owns the terminal (the console's "running check"
#: status): text to show, or None to take it away. Writing our own ``\r`` line under a live
#: display would tear both, and rich prints stray writes to stderr as lines that stay.
_display: Callable[[str | None], None] | None = None


def set_display(fn: Callable[[str | None], None] | None) -> Callable[[str | None], None] | None:
    """Route meters into ``fn`` (None: back to stderr); returns the previous one."""
    global _display
    old, _display = _display, fn
    return old


def _delay() -> float:
    try:
        return max(0.0, float(os.environ["COMMDOCTOR_PROGRESS_DELAY_S"]))
    except (KeyError, ValueError):
        return DELAY_S


class Progress:
    """``with progress(total, label) as p: p.advance(n)`` -- counts up to ``total`` (None: unknown)."""

    def __init__(self, total: int | None, label: str, stream: TextIO | None = None, enabled: bool | None = None) -> None:
        self.total, self.label, self.done = total, label, 0
        self._stream = stream if stream is not None else sys.stderr
        if enabled is None:
            isatty = getattr(self._stream, "isatty", None)
            enabled = bool(isatty and isatty())
        self.enabled = enabled
        self._t0 = time.monotonic()
        self._next = self._t0 + _delay()
        self._drawn = False
        self.unit = ""  # shown after the counts ("s" for a wait measured in seconds)

    def advance(self, n: int = 1) -> None:
        self.done += n
        if not self.enabled:
            return
        now = time.monotonic()
        if now < self._next:
            return
        self._next = now + EVERY_S
        self._draw(now)

    def update(self, done: int, label: str | None = None) -> None:
        """Set the count (and the label) rather than add to it: a wait that is measured, not counted."""
        if label is not None:
            self.label = label
        self.advance(done - self.done)

    def clear(self) -> None:
        """Take the line off the screen now (other output is about to be written there)."""
        shown = _display
        if self._drawn and self.enabled and shown is not None:
            shown(None)
        elif self._drawn and self.enabled:
            try:
                self._stream.write("\r\x1b[K")
                self._stream.flush()
            except (OSError, ValueError):
                self.enabled = False
        self._drawn = False

    def _draw(self, now: float) -> None:
        if self.total:
            pct = min(100.0, 100.0 * self.done / self.total)
            text = f"{self.label}: {self.done:,}/{self.total:,}{self.unit} ({pct:.0f}%)"
        else:
            text = f"{self.label}: {self.done:,}{self.unit}"
        if not self.unit:  # a count of work: how long it has taken so far (a wait in seconds says it already)
            text += f" {now - self._t0:.0f} s"
        shown = _display
        if shown is not None:
            shown(text[:120])
            self._drawn = True
            return
        try:
            self._stream.write("\r" + text[:120] + "\x1b[K")
            self._stream.flush()
            self._drawn = True
        except (OSError, ValueError):  # a closed or broken terminal must not break the scan
            self.enabled = False

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None) -> None:
        self.clear()


def progress(total: int | None, label: str, stream: TextIO | None = None, enabled: bool | None = None) -> Progress:
    """A meter for ``total`` units (None: unknown), drawn only on a terminal (see the module docstring)."""
    return Progress(total, label, stream, enabled)
