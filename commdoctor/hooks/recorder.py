"""Per-rank progress records: a JSON-lines file and the last entered/completed call in the store.

Promise: standard library only; the training thread only appends a tuple to a
deque (well under a microsecond). A background thread, every ``interval``
seconds (50 ms), formats the lines (schema ``commdoctor.hooks/1``, see
commdoctor/core/records.py), writes and flushes them, notices completed calls by
polling their work handles, and writes this rank's progress to the store when
it changed, at most every ``store_interval`` seconds (0.5 s), and at once on
``flush(force=True)`` and at close. Writing the store on every call would cost
50 to 130 µs per call (FIELD-NOTES); every 50 ms it cost ~40 µs of CPU and
~0.7 ms of waiting per tick under load, every 0.5 s a tenth of that.

Files rotate at ``max_bytes`` (the previous one is kept as ``.jsonl.1``), so a
long job cannot fill the disk. A rank killed mid-write leaves at most one
truncated line, which readers skip.
"""

from __future__ import annotations

import collections
import json
import os
import socket
import threading
import time
from typing import Any

from commdoctor.core import records

#: Fields of one call, in this order, as the training thread queues them.
#: (group, seq, op, reduce_op, dtype, shapes_json, peer, root, device, async_op, site)
Call = tuple

PROGRESS_KEY = "commdoctor.hooks/v1/progress/{rank}"
ALIVE_S = 1.0


class Recorder:
    def __init__(self, rank: int, world_size: int, directory: str | None, *, interval: float = 0.05,
                 max_bytes: int = 64 << 20, torch_version: str = "", thread: bool = True,
                 store_interval: float = 0.5) -> None:
        self.rank = rank
        self.world_size = world_size
        self.directory = directory
        self.interval = interval
        self.store_interval = store_interval  # how often, at most, the progress goes to the store
        self._stored = 0.0  # when it last went there
        self.max_bytes = max_bytes
        self.torch_version = torch_version
        self._started = time.time()  # in every header, rotated files' too: it tells this run's files apart
        self.store: Any = None  # set once the side channel's store is known
        self._q: collections.deque[tuple[Any, ...]] = collections.deque()
        # [work, call, time it was seen to complete or None]; a work handle's wait fills the time
        # (some handles never say is_completed(), e.g. gloo's reduce_scatter with AVG).
        self._pending: collections.deque[list[Any]] = collections.deque()
        self._static: dict[Call, str] = {}
        self._file: Any = None
        self._written = 0
        self._last_entered: tuple[Call, float] | None = None
        self._last_completed: tuple[Call, float] | None = None
        self._progress_dirty = False
        self._alive = 0.0
        self._stop = threading.Event()
        self._lock = threading.Lock()  # one flusher at a time (thread tick, or close())
        self.error: str | None = None
        self._thread = threading.Thread(target=self._run, name="commdoctor-hooks-recorder", daemon=True)
        self._open()
        if thread:  # otherwise the owner calls flush() every ``interval`` (the hooks' ticker does)
            self._thread.start()

    # -- hot path (training threads) ------------------------------------------------

    def enter(self, call: Call, work: Any) -> None:
        t = time.time()
        self._q.append(("enter", call, t))
        if work is not None:
            self._pending.append([work, call, None])

    def event(self, kind: str, payload: dict[str, Any]) -> None:
        """A mismatch / warning / bye line (rare)."""
        self._q.append((kind, payload, time.time()))

    # -- background ---------------------------------------------------------------------

    def _open(self) -> None:
        if not self.directory:
            return
        try:
            os.makedirs(self.directory, exist_ok=True)
            path = records.record_path(self.directory, self.rank)
            if os.path.exists(path):  # keep the previous run's file beside, not mixed in
                os.replace(path, path + ".1")
            self._file = open(path, "w", encoding="utf-8")
            self._written = 0
            self._write_line(self._header())
            self._file.flush()
        except OSError as e:
            self.error = f"cannot write records to {self.directory}: {e}"
            self._file = None

    def _header(self) -> str:
        return json.dumps({"schema": records.SCHEMA, "kind": "header", "rank": self.rank, "world_size": self.world_size,
                           "host": socket.gethostname(), "pid": os.getpid(), "started": self._started,
                           "torch": self.torch_version}, separators=(",", ":"))

    def _rotate(self) -> None:
        """Past max_bytes: keep one previous file (.1) and start again with a header."""
        assert self._file is not None
        path = records.record_path(str(self.directory), self.rank)
        self._file.close()
        os.replace(path, path + ".1")
        self._file = open(path, "w", encoding="utf-8")
        self._written = 0
        self._write_line(self._header())

    def _write_line(self, line: str) -> None:
        if self._file is None:
            return
        self._file.write(line)
        self._file.write("\n")
        self._written += len(line) + 1
        if self._written > self.max_bytes:
            self._rotate()

    def _static_part(self, call: Call) -> str:
        """Everything but kind, seq and time, formatted once per distinct call (cached)."""
        key = call[:1] + call[2:]
        s = self._static.get(key)
        if s is None:
            group, _seq, op, reduce_op, dtype, shapes, peer, root, device, async_op, site = call
            from commdoctor.hooks.checker import numel_of

            head = json.dumps({"rank": self.rank, "group": group, "op": op, "reduce_op": reduce_op, "dtype": dtype},
                              separators=(",", ":"))[1:-1]
            tail = json.dumps({"peer": peer, "root": root, "device": device, "async_op": bool(async_op),
                               "site": site or None}, separators=(",", ":"))[1:-1]
            s = f'{head},"shapes":{shapes or "[]"},"numel":{max(numel_of(shapes or "[]"), 0)},{tail}'
            if len(self._static) > 8192:
                self._static.clear()
            self._static[key] = s
        return s

    def _line(self, kind: str, call: Call, t: float) -> str:
        return (f'{{"schema":"{records.SCHEMA}","kind":"{kind}","seq":{call[1]},'
                f'{self._static_part(call)},"time":{t:.6f}}}')

    def _write_lines(self, lines: list[str]) -> None:
        """Many call lines at once (one write); rotation as in ``_write_line``."""
        if self._file is None or not lines:
            return
        lines.append("")
        text = "\n".join(lines)
        self._file.write(text)
        self._written += len(text)
        if self._written > self.max_bytes:
            self._rotate()

    def _progress(self, call: Call, t: float) -> dict[str, Any]:
        return {"group": call[0], "seq": call[1], "op": call[2], "site": call[10] or None, "time": round(t, 6)}

    def flush(self, force: bool = True, store: bool = True) -> None:
        """Write what is queued. ``force``: the progress goes to the store now if it changed (the
        ticker passes False: then at most every ``store_interval`` s). ``store=False``: the
        records file only."""
        with self._lock:
            self._flush_locked(force, store)

    def _flush_locked(self, force: bool = True, store: bool = True) -> None:
        q = self._q
        writing = self._file is not None
        # Call lines are gathered and written at once; other lines (rare) keep their place in order.
        lines: list[str] = []
        add = lines.append
        static = self._static_part
        head = f'{{"schema":"{records.SCHEMA}","kind":"'
        last_entered = None
        while q:
            item = q.popleft()
            kind, obj, t = item[0], item[1], item[2]
            if kind == "enter":
                if writing:
                    add(f'{head}enter","seq":{obj[1]},{static(obj)},"time":{t:.6f}}}')
                last_entered = (obj, t)
            elif kind == "failed":  # the backend raised at once: the call ended, with this error
                if writing:
                    add(self._line("exit", obj, t)[:-1] + "," + json.dumps({"error": item[3]})[1:])
                self._last_completed = (obj, t)
                self._progress_dirty = True
            else:
                self._write_lines(lines)
                lines = []
                add = lines.append
                self._write_line(json.dumps({"schema": records.SCHEMA, "kind": kind, "rank": self.rank, **obj,
                                             "time": round(t, 6)}, separators=(",", ":"), default=str))
        if last_entered is not None:
            self._last_entered = last_entered
            self._progress_dirty = True
        # Completed calls, in the order they were entered (a group's calls complete in order).
        now = time.time()
        pend = self._pending
        n = len(pend)
        last_completed = None
        for _ in range(n):
            entry = pend.popleft()
            seen = entry[2]
            if seen is None:  # nobody waited on it (yet): ask the handle
                try:
                    done = entry[0].is_completed()
                except Exception:  # noqa: BLE001 - a failed or odd work handle: count it as ended
                    done = True
                if not done:
                    pend.append(entry)
                    continue
                seen = now
            call = entry[1]
            if writing:
                add(f'{head}exit","seq":{call[1]},{static(call)},"time":{seen:.6f}}}')
            last_completed = (call, seen)
        if last_completed is not None:
            self._last_completed = last_completed
            self._progress_dirty = True
        while len(pend) > 100000:  # handles nobody waits for must not pile up forever
            pend.popleft()
        self._write_lines(lines)
        if now - self._alive >= ALIVE_S:
            # A heartbeat, so that a reader of the records of a hung job can tell how long the
            # ranks waited: without it, a hang writes nothing and looks like a snapshot.
            self._alive = now
            self._write_line(f'{{"schema":"{records.SCHEMA}","kind":"alive","rank":{self.rank},"time":{now:.3f}}}')
        if self._file is not None:
            try:
                self._file.flush()
            except OSError as e:
                self.error = f"cannot write records: {e}"
                self._file = None
        if (store and self._progress_dirty and self.store is not None
                and (force or now - self._stored >= self.store_interval)):
            self._progress_dirty = False
            self._stored = now
            try:
                ent, done = self._last_entered, self._last_completed
                self.store.set(PROGRESS_KEY.format(rank=self.rank),
                               json.dumps({"rank": self.rank, "entered": self._progress(*ent) if ent else None,
                                           "completed": self._progress(*done) if done else None,
                                           "time": round(now, 3)}))
            except Exception:  # noqa: BLE001 - the store went away (job ending): stop using it
                self.store = None

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.flush()
            except Exception as e:  # noqa: BLE001 - recording must never break training
                self.error = f"recording stopped: {e!r}"
                return

    def close(self) -> None:
        self._stop.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(2.0)
        try:
            self.flush()
        except Exception:  # noqa: BLE001
            pass
        if self._file is not None:
            try:
                self._file.close()
            except OSError:
                pass
            self._file = None
