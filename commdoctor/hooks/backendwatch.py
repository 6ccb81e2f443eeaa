"""Notice, inside the job, a backend that is the wrong one for the tensors it carries.

Promise: two things, both said once per process and never in the way of training.

1. Collectives on CUDA tensors that go through gloo (``backend="gloo"``, or a
   device map such as ``cpu:gloo,cuda:gloo``). ``for_group`` decides, once per
   process group when the hooks wrap it, whether any device type this group
   carries with gloo is watched (CUDA); the group then times its calls on those
   tensors (from the call to the completion of gloo's future) and, after
   ``SAMPLE`` of them, prints one notice with the measured time and bandwidth
   and the nccl-against-gloo figure of a ``commdoctor run`` report when one is
   named (``COMMDOCTOR_REPORT``), and writes a ``backend`` record that
   ``commdoctor records`` reports as HOOK030.
2. ``init_process_group`` asking for a backend this torch build lacks
   ("Distributed package doesn't have NCCL built in"): one line naming the
   cause and the fallback before torch's own error propagates unchanged.

``COMMDOCTOR_HOOKS_WATCH_DEVICES`` (default ``cuda``) widens the watched device
types; it exists so that the measurement can be exercised on CPU tensors where
no GPU exists (tests, and a CPU host checking what the notice looks like).
"""

from __future__ import annotations

import json
import os
import re
import sys
import threading
import time
from typing import Any

SAMPLE = 5  # calls timed before the notice (the first ones include gloo's lazy connection setup)
_NOT_BUILT = re.compile(r"doesn't have (\w+) built in")
_said_init = False


def watched_devices(environ: Any = None) -> frozenset[str]:
    env = os.environ if environ is None else environ
    raw = env.get("COMMDOCTOR_HOOKS_WATCH_DEVICES", "cuda")
    return frozenset(d.strip() for d in raw.split(",") if d.strip())


def backend_names(pg: Any) -> dict[str, str]:
    """Device type -> backend name ('gloo', 'nccl', ...) for the real process group ``pg``."""
    import torch

    out: dict[str, str] = {}
    for dev in getattr(pg, "_device_types", ()) or ():
        try:
            b = pg._get_backend(torch.device(dev))
        except (RuntimeError, ValueError):
            continue
        out[torch.device(dev).type] = type(b).__name__.replace("ProcessGroup", "").lower()
    return out


def watches(backends: dict[str, str], devices: frozenset[str]) -> frozenset[str]:
    """The device types whose tensors this group sends through gloo and that are watched."""
    return frozenset(d for d, b in backends.items() if b == "gloo" and d in devices)


def for_group(pg: Any, hooks: Any) -> Watch | None:
    """A Watch for ``pg`` when it carries watched tensors with gloo, else None (the group is not timed)."""
    try:
        devs = watches(backend_names(pg), watched_devices())
    except Exception:  # noqa: BLE001 - deciding must never break wrapping
        return None
    return Watch(pg, hooks, devs) if devs else None


def _nbytes(x: Any) -> int:
    if isinstance(x, (list, tuple)):
        return sum(_nbytes(y) for y in x)
    try:
        return int(x.numel()) * int(x.element_size())
    except (AttributeError, TypeError):
        return 0


def _size(n: int) -> str:
    for unit, k in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << k:
            return f"{n / (1 << k):.3g} {unit}"
    return f"{n} B"


def report_figure(path: str | None) -> str | None:
    """The advisor's measured nccl-against-gloo sentence from a ``commdoctor run --json`` report."""
    if not path:
        return None
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
        for r in doc.get("results", []):
            if r.get("check") == "backend.advisor":
                m = (r.get("data") or {}).get("measured")
                return str(m) if m else None
    except (OSError, ValueError, AttributeError, TypeError):
        return None
    return None


class Watch:
    """Times the calls of one gloo group on watched tensors; says so once."""

    def __init__(self, pg: Any, hooks: Any, devices: frozenset[str]) -> None:
        self.pg = pg
        self.hooks = hooks
        self.devices = devices
        self.samples: list[tuple[str, int, float]] = []  # (op, bytes, seconds)
        self.done = False
        self._lock = threading.Lock()

    def call(self, method: str, args: tuple[Any, ...], kw: dict[str, Any], op: str, device: str) -> Any:
        """Run the call on the real group, timing it to completion (gloo's future), unchanged otherwise."""
        if self.done:
            return getattr(self.pg, method)(*args, **kw)
        nbytes = _nbytes(args[0]) if args else 0
        t0 = time.perf_counter()
        work = getattr(self.pg, method)(*args, **kw)
        try:
            work.get_future().add_done_callback(lambda _f: self._completed(op, nbytes, time.perf_counter() - t0, device))
        except Exception:  # noqa: BLE001 - a work without a future is simply not timed
            pass
        return work

    def _completed(self, op: str, nbytes: int, secs: float, device: str) -> None:
        with self._lock:
            if self.done:
                return
            self.samples.append((op, nbytes, secs))
            if len(self.samples) < SAMPLE:
                return
            self.done = True
            samples = list(self.samples)
        self.notice(samples, device)

    def notice(self, samples: list[tuple[str, int, float]], device: str) -> dict[str, Any]:
        """Print the notice (group rank 0 only) and record it (every rank); returns the record."""
        # The largest call is the fairest figure: small calls measure latency, not the link.
        op, nbytes, secs = max(samples[1:] or samples, key=lambda s: (s[1], -s[2]))
        gbps = nbytes / secs / 1e9 if secs > 0 else 0.0
        try:
            group = str(self.pg.group_name)
            grank = int(self.pg.rank())
        except Exception:  # noqa: BLE001
            group, grank = "?", 0
        figure = report_figure(os.environ.get("COMMDOCTOR_REPORT"))
        rec = {"group": group, "backend": "gloo", "device": device, "calls": len(samples), "op": op, "bytes": nbytes,
               "time_s": round(secs, 6), "gbps": round(gbps, 4), "measured": figure}
        r = getattr(self.hooks, "recorder", None)
        if r is not None:
            r.event("backend", rec)
        if grank == 0:
            tail = (f"measured on this host: {figure}" if figure else
                    "run `commdoctor run` on this host for the nccl-against-gloo figure")
            try:
                sys.stderr.write(f"commdoctor.hooks: {device} tensors go through gloo on group {group}: {op} of "
                                 f"{_size(nbytes)} took {secs * 1e3:.2f} ms ({gbps:.2f} GB/s) over {len(samples)} timed "
                                 f"calls; pass backend=\"cpu:gloo,cuda:nccl\" to init_process_group so NCCL carries "
                                 f"CUDA tensors ({tail})\n")
                sys.stderr.flush()
            except (OSError, ValueError):
                pass
        return rec


def init_failed(err: BaseException) -> None:
    """init_process_group raised: when the backend is not built in, say the cause and the fallback once."""
    global _said_init
    m = _NOT_BUILT.search(str(err))
    if m is None or _said_init:
        return
    _said_init = True
    be = m.group(1).lower()
    from commdoctor.core.backends import FALLBACK  # the advisor's words (BK003), on this rare path only

    try:
        sys.stderr.write(f"commdoctor.hooks: BK003 the job asks for {be} but this torch build does not have it. "
                         f"{FALLBACK.get(be, FALLBACK['nccl'])} (commdoctor run --job-backend {be} checks this host)\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass
