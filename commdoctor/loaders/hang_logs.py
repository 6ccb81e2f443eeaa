"""The log lines that matter to a hang verdict, by rank.

Promise: standard library only. ``log_facts`` returns, for each file, the
lines that name an error, a timeout, a closed connection or an NCCL warning
(at most a few per file, newest last), with the rank when the file's name
carries the pid of a known rank (NCCL_DEBUG_FILE's ``%p``) or a rank number.

The log analyzer (``commdoctor logs``) is used when it is installed: its
ordered diagnoses (``commdoctor.rules.engine.diagnose``, the rule engine, not a check) over
the same files, the first three with their evidence lines and their codes;
a ``hang_facts(paths, pid_rank)`` in ``commdoctor.loaders.logs`` would take
precedence. Without it (or if it fails), a small scan keeps the lines that
name an error, a timeout or an NCCL warning.
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


def analyzer_facts(paths: list[str], pid_rank: Mapping[int, int]) -> list[dict[str, Any]] | None:
    """The log analyzer's diagnoses (commdoctor logs), as log facts; None when it is not installed."""
    try:
        logs = importlib.import_module("commdoctor.loaders.logs")
        fn = getattr(logs, "hang_facts", None)
        if callable(fn):
            return list(fn(paths, pid_rank))
        engine = importlib.import_module("commdoctor.rules.engine")
        model = logs.load_logs(paths)
        cands = engine.diagnose(model)  # already merged and in causal order
    except ImportError:
        return None
    except Exception:  # noqa: BLE001 - a failing analyzer must not cost the hang verdict its other signals
        return None
    out: list[dict[str, Any]] = []
    for c in cands[:3]:
        for e in c.evidence[:3]:
            rank = e.rank if e.rank is not None else _rank_of(e.source, pid_rank)
            out.append({"source": e.source, "line": e.line, "text": e.text, "rank": rank, "code": c.code,
                        "cause": c.cause})
    return out


def log_facts(paths: Iterable[str], pid_rank: Mapping[int, int] | None = None) -> list[dict[str, Any]]:
    pid_rank = dict(pid_rank or {})
    paths = [p for p in paths if os.path.isfile(p)]
    if not paths:
        return []
    found = analyzer_facts(paths, pid_rank)
    if found is not None:
        return found
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
