"""A one-line progress meter on stderr for long offline reads.

Promise: it writes only when stderr is a terminal and the caller did not ask
for machine output; it stays silent for the first second (short scans print
nothing) and then redraws at most a few times a second, so it never costs more
than the work it reports on. Nothing here imports torch.
"""

from __future__ import annotations

import sys
import time
from types import TracebackType
from typing import TextIO

#: Seconds before the first draw (a scan this short needs no meter) and between draws.
DELAY_S = 1.0
EVERY_S = 0.25


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
        self._next = self._t0 + DELAY_S
        self._drawn = False

    def advance(self, n: int = 1) -> None:
        self.done += n
        if not self.enabled:
            return
        now = time.monotonic()
        if now < self._next:
            return
        self._next = now + EVERY_S
        self._draw(now)

    def _draw(self, now: float) -> None:
        if self.total:
            pct = min(100.0, 100.0 * self.done / self.total)
            text = f"{self.label}: {self.done:,}/{self.total:,} ({pct:.0f}%) {now - self._t0:.0f} s"
        else:
            text = f"{self.label}: {self.done:,} {now - self._t0:.0f} s"
        try:
            self._stream.write("\r" + text[:120] + "\x1b[K")
            self._stream.flush()
            self._drawn = True
        except (OSError, ValueError):  # a closed or broken terminal must not break the scan
            self.enabled = False

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None) -> None:
        if self._drawn and self.enabled:
            try:
                self._stream.write("\r\x1b[K")
                self._stream.flush()
            except (OSError, ValueError):
                pass


def progress(total: int | None, label: str, stream: TextIO | None = None, enabled: bool | None = None) -> Progress:
    """A meter for ``total`` units (None: unknown), drawn only on a terminal (see the module docstring)."""
    return Progress(total, label, stream, enabled)
