"""The job's log files, loaded for the hang verdict: facts only, no diagnosis.

Promise: standard library and other loaders only; never the checks or the rule
engine (facts flow loaders -> checks). ``load_hang_logs(paths, pid_rank)``
returns a ``HangLogs``: the files that exist, which pid belongs to which rank
(NCCL_DEBUG_FILE's ``%p``), and the run model ``commdoctor logs`` builds from
them (``loaders.logs.load_logs``), or ``None`` when it could not be built. The
hang check runs the log diagnosis on that model. When there is no model, the
loader keeps the lines that name an error, a timeout, a closed connection or
an NCCL warning (at most a few per file, newest last), with the rank when the
file's name carries the pid of a known rank or a rank number; ``scan_signs``
is the same small scan, for a check whose diagnosis of the model failed.
"""

from __future__ import annotations

import os
import re
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

SIGNS = re.compile(
    r"NCCL WARN|Watchdog caught collective operation timeout|Timed out|timed out|Connection closed by peer|"
    r"DistBackendError|DistNetworkError|RuntimeError|Traceback \(most recent call last\)|Segmentation fault|"
    r"out of memory|Killed|ncclRemoteError|ncclSystemError|ncclInternalError|unhandled system error|"
    r"socketProgress|Connection reset|Broken pipe|No route to host|Connection refused")
MAX_PER_FILE = 5
MAX_BYTES = 32 << 20


@dataclass(frozen=True)
class HangLogs:
    """What the job's logs hold for a hang verdict (see the module docstring)."""

    paths: tuple[str, ...] = ()
    pid_rank: Mapping[int, int] = field(default_factory=dict)
    #: the log analyzer's run model (``loaders.logs.RunModel``); None when it could not be built
    model: Any = None
    #: the small scan's lines, {source, line, text, rank}; filled only when there is no model
    lines: tuple[dict[str, Any], ...] = ()


def rank_of(path: str, pid_rank: Mapping[int, int]) -> int | None:
    """The rank a log file belongs to, by a known rank's pid or a rank number in its name."""
    base = os.path.basename(path)
    for num in re.findall(r"\d+", base):
        n = int(num)
        if n in pid_rank:
            return pid_rank[n]
    m = re.search(r"rank[_-]?(\d+)", base)
    return int(m.group(1)) if m else None


def scan_signs(paths: Iterable[str], pid_rank: Mapping[int, int]) -> list[dict[str, Any]]:
    """The last few lines of each file that name an error, a timeout or an NCCL warning."""
    out: list[dict[str, Any]] = []
    for p in paths:
        try:
            if not os.path.isfile(p) or os.path.getsize(p) > MAX_BYTES:
                continue
            keep: deque[tuple[int, str]] = deque(maxlen=MAX_PER_FILE)
            with open(p, encoding="utf-8", errors="replace") as f:
                for i, line in enumerate(f, 1):
                    if SIGNS.search(line):
                        keep.append((i, line.rstrip("\n")[:400]))
        except OSError:
            continue
        rank = rank_of(p, pid_rank)
        out += [{"source": p, "line": i, "text": t, "rank": rank} for i, t in keep]
    return out


def load_hang_logs(paths: Iterable[str], pid_rank: Mapping[int, int] | None = None) -> HangLogs:
    pid_rank = dict(pid_rank or {})
    files = tuple(p for p in paths if os.path.isfile(p))
    if not files:
        return HangLogs((), pid_rank)
    try:
        from commdoctor.loaders.logs import load_logs

        return HangLogs(files, pid_rank, model=load_logs(files))
    except Exception:  # noqa: BLE001 - a log that cannot be modelled must not cost the hang verdict its other signals
        return HangLogs(files, pid_rank, lines=tuple(scan_signs(files, pid_rank)))
