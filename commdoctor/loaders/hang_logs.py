"""The log lines that matter to a hang verdict, by rank.

Promise: standard library only. ``log_facts`` returns, for each file, the
lines that name an error, a timeout, a closed connection or an NCCL warning
(at most a few per file, newest last), with the rank when the file's name
carries the pid of a known rank (NCCL_DEBUG_FILE's ``%p``) or a rank number.

This is the seam for the log analyzer: when ``commdoctor.loaders.logs``
offers ``hang_facts(paths, pid_rank)``, its answer is used instead, so the
hang verdict sees the same diagnoses as ``commdoctor logs``.
"""

from __future__ import annotations

import importlib
import os
import re
from collections import deque
from typing import Any, Iterable, Mapping

SIGNS = re.compile(
    r"NCCL WARN|Watchdog caught collective operation timeout|Timed out|timed out|Connection closed by peer|"
    r"DistBackendError|DistNetworkError|RuntimeError|Traceback \(most recent call last\)|Segmentation fault|"
    r"out of memory|Killed|ncclRemoteError|ncclSystemError|ncclInternalError|unhandled system error|"
    r"socketProgress|Connection reset|Broken pipe|No route to host|Connection refused")
MAX_PER_FILE = 5
MAX_BYTES = 32 << 20


def _rank_of(path: str, pid_rank: Mapping[int, int]) -> int | None:
    base = os.path.basename(path)
    for num in re.findall(r"\d+", base):
        n = int(num)
        if n in pid_rank:
            return pid_rank[n]
    m = re.search(r"rank[_-]?(\d+)", base)
    return int(m.group(1)) if m else None


def log_facts(paths: Iterable[str], pid_rank: Mapping[int, int] | None = None) -> list[dict[str, Any]]:
    pid_rank = dict(pid_rank or {})
    try:
        mod = importlib.import_module("commdoctor.loaders.logs")
        fn = getattr(mod, "hang_facts", None)
        if callable(fn):
            return list(fn(list(paths), pid_rank))
    except ImportError:
        pass
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
        rank = _rank_of(p, pid_rank)
        out += [{"source": p, "line": i, "text": t, "rank": rank} for i, t in keep]
    return out
