"""Per-rank progress records written by commdoctor.hooks and read by the hang and log stages.

Promise: standard library only. The format is JSON lines, one file per rank
(``hooks-rank{RANK}.jsonl`` in ``$COMMDOCTOR_HOOKS_DIR``), every line carrying
``"schema": "commdoctor.hooks/1"``. Readers tolerate a truncated last line,
binary junk and unknown fields (they are skipped and counted), because a rank
that is killed mid-write leaves exactly that behind.

Line kinds:
- ``header``: rank, world_size, host, pid, started (unix time), torch version.
- ``enter`` / ``exit``: one collective or point-to-point call entering the
  backend and completing (``exit`` of an async call is written when its work
  completes). Fields: group, seq (per group), op, reduce_op, dtype, shapes,
  numel, peer (send/recv), root (broadcast/reduce/gather/scatter), device,
  async_op, site ("file.py:LINE"), time. An ``exit`` of a call the backend
  refused carries ``error`` (the exception's text).
- ``mismatch``: the hooks saw ranks disagree; ``detail`` holds every rank's call.
- ``warning``: anything the hooks want a reader to know (side channel lost, ...).
- ``alive``: a heartbeat (rank, time) every second, so that a reader can
  tell how long a rank had been waiting when its records end.

Point-to-point calls (send/recv) and monitored_barrier are numbered apart from
a group's collectives, with negative ``seq`` (-1, -2, ...), since they are not
part of the order every member of the group must follow.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import asdict, dataclass, field
from typing import Any, Iterable, Iterator

SCHEMA = "commdoctor.hooks/1"
ENV_DIR = "COMMDOCTOR_HOOKS_DIR"
FILE_PREFIX = "hooks-rank"


#: Ranks and world sizes beyond this are damage, not a job (the largest jobs have some 10^5 ranks).
MAX_WORLD = 1 << 22


def _rank(v: Any) -> int | None:
    """A record's rank: a non-negative int below MAX_WORLD, else None (bool, float, text, huge: damaged)."""
    return v if type(v) is int and 0 <= v < MAX_WORLD else None


def world_size(v: Any) -> int | None:
    """A header's world size when it is a plausible one, else None."""
    return v if type(v) is int and 0 < v <= MAX_WORLD else None


def record_path(directory: str, rank: int) -> str:
    return os.path.join(directory, f"{FILE_PREFIX}{rank}.jsonl")


@dataclass
class CallRecord:
    kind: str  # "enter" | "exit"
    rank: int
    group: str
    seq: int
    op: str
    time: float
    reduce_op: str | None = None
    dtype: str | None = None
    shapes: list[list[int]] = field(default_factory=list)
    numel: int | None = None
    peer: int | None = None
    root: int | None = None
    device: str | None = None
    async_op: bool = False
    site: str | None = None

    def to_json(self) -> str:
        d = asdict(self)
        d["schema"] = SCHEMA
        return json.dumps(d, separators=(",", ":"))

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> CallRecord:
        names = cls.__dataclass_fields__
        return cls(**{k: v for k, v in d.items() if k in names})


@dataclass
class RankProgress:
    rank: int
    host: str | None = None
    pid: int | None = None
    world_size: int | None = None
    last_entered: CallRecord | None = None
    last_completed: CallRecord | None = None
    mismatches: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    bad_lines: int = 0
    path: str | None = None

    @property
    def in_flight(self) -> CallRecord | None:
        """The call entered but not completed, if any (what a hung rank waits in)."""
        e, x = self.last_entered, self.last_completed
        if e is None or (x is not None and (x.group, x.seq) == (e.group, e.seq)):
            return None
        return e


def _writer(path: str) -> tuple[Any, Any, Any] | None:
    """(host, pid, started) from a records file's first line, or None."""
    try:
        for d in iter_lines(path):
            return (d.get("host"), d.get("pid"), d.get("started")) if d is not None and d.get("kind") == "header" else None
    except OSError:
        return None
    return None


def with_rotated(files: Iterable[str]) -> list[str]:
    """``files`` with each one's rotated predecessor (``.jsonl.1``) put before it when the same process
    wrote both in one run: the recorder rotates at ``max_bytes``, so the calls before the current file's first
    line are there. A ``.1`` left by an earlier run (another pid or start) is not part of this run and stays out."""
    out: list[str] = []
    for f in files:
        prev = f + ".1"
        if f.endswith(".jsonl") and os.path.isfile(prev):
            w = _writer(f)
            if w is not None and w == _writer(prev):
                out.append(prev)
        out.append(f)
    return list(dict.fromkeys(out))


# -- typed validation of a record line (standard library: the hooks import this module) -----------

_STR = (str,)
_OPT_STR = (str, type(None))


def _is_int(v: Any) -> bool:
    return type(v) is int and -(1 << 63) <= v < (1 << 63)


def _is_num(v: Any) -> bool:
    return (type(v) is int and abs(v) < (1 << 63)) or (type(v) is float and v == v and abs(v) != float("inf"))


def _opt_int(v: Any) -> bool:
    return v is None or _is_int(v)


def _shapes(v: Any) -> bool:
    return isinstance(v, list) and len(v) <= 4096 and all(
        isinstance(s, list) and len(s) <= 64 and all(_is_int(x) and x >= 0 for x in s) for s in v)


#: kind -> field -> check. A field that is absent is not checked (readers use their defaults);
#: one that is present with the wrong type makes the whole line damaged (counted, skipped).
_FIELDS: dict[str, dict[str, Any]] = {
    "header": {"world_size": _opt_int, "pid": _opt_int, "host": _OPT_STR, "started": lambda v: v is None or _is_num(v),
               "torch": _OPT_STR},
    "enter": {"group": lambda v: isinstance(v, str) or _is_int(v), "seq": _is_int, "op": _STR, "time": _is_num,
              "reduce_op": _OPT_STR, "dtype": _OPT_STR, "shapes": lambda v: v is None or _shapes(v),
              "numel": _opt_int, "peer": _opt_int, "root": _opt_int, "device": _OPT_STR,
              "async_op": lambda v: type(v) is bool, "site": _OPT_STR, "error": _OPT_STR},
    "mismatch": {"group": lambda v: v is None or isinstance(v, str) or _is_int(v), "seq": _opt_int,
                 "message": _OPT_STR, "detail": lambda v: v is None or isinstance(v, dict), "time": _is_num},
    "warning": {"message": _OPT_STR, "time": _is_num},
    "alive": {"time": _is_num},
}
_FIELDS["exit"] = _FIELDS["enter"]
_REQUIRED = {"enter": ("group", "seq", "op", "time"), "exit": ("group", "seq", "op", "time")}


def damaged(d: dict[str, Any]) -> str | None:
    """Why a parsed record line cannot be trusted (a field of the wrong type), or None when it can.

    Every reader goes through ``iter_lines``, so checks and loaders see only records
    whose known fields have the types the writer gives them: a ``seq`` of ``[]`` or a
    ``time`` of ``"x"`` is one damaged line, counted, not a crash of the check that
    happens to read it.
    """
    if _rank(d.get("rank")) is None:
        return "rank is not a rank number"
    kind = d.get("kind")
    if not isinstance(kind, str):
        return "kind is not a name"
    spec = _FIELDS.get(kind)
    if spec is None:
        return None  # a kind this version does not know: readers skip it
    for name in _REQUIRED.get(kind, ()):
        if name not in d:
            return f"{kind} without {name}"
    for name, check in spec.items():
        if name in d:
            v = d[name]
            ok = isinstance(v, check) if isinstance(check, tuple) else check(v)
            if not ok:
                return f"{kind}.{name} has the wrong type ({type(v).__name__})"
    return None


def _no_constant(name: str) -> Any:
    # NaN and Infinity are not JSON and no writer of ours emits them: the line is damaged.
    raise ValueError(f"{name} is not a number a record holds")


#: The shape of every call line the recorder writes (``Recorder._flush_locked``): kind, seq, the part
#: that is the same for every call of one kind at one place (rank, group, op, ..., site), time. A line of
#: exactly this shape is parsed by parsing its middle once per distinct middle; anything else (spaces,
#: other key orders, other kinds) goes through ``json.loads`` as before. Both give the same dict.
_CALL_LINE = re.compile(
    rb'\{"schema":"commdoctor\.hooks/1","kind":"(enter|exit)","seq":(-?(?:0|[1-9][0-9]{0,18})),'
    rb'(.+),"time":(-?(?:0|[1-9][0-9]{0,30})\.[0-9]{1,30})\}\n?\Z', re.S)
#: Keys that must not appear in a line's middle: a duplicate would override the ones outside it.
_OUTER = frozenset({"schema", "kind", "seq", "time"})
_MISS = object()
_MEMO_MAX = 4096
_INF = float("inf")


def _template(mid: bytes) -> dict[str, Any] | None:
    """The middle of a call line as its fields, validated once, or None when the line needs the slow path."""
    try:
        obj = json.loads("{" + mid.decode("utf-8") + "}", parse_constant=_no_constant)
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None
    if not isinstance(obj, dict) or not _OUTER.isdisjoint(obj) or mid.count(b'"rank":') != 1:
        return None  # (one "rank" key, once: the bulk reader of hook_records puts each file's own rank there)
    if damaged({"schema": SCHEMA, "kind": "enter", "seq": 0, **obj, "time": 0.0}) is not None:
        return None
    return obj


def parse_line(raw: bytes, memo: dict[bytes, Any]) -> tuple[str, int, float, dict[str, Any]] | dict[str, Any] | None:
    """One line of a records file (at most ``max_line`` bytes, with or without its newline) as
    ``iter_entries`` yields it. ``memo`` caches the parsed middles of call lines (one per reader)."""
    m = _CALL_LINE.match(raw)
    if m is not None:
        kind, seq_b, mid, time_b = m.groups()
        tpl = memo.get(mid, _MISS)
        if tpl is _MISS:
            tpl = _template(mid)
            if len(memo) >= _MEMO_MAX:  # hostile input with endless distinct middles: stay bounded
                memo.clear()
            memo[mid] = tpl
        if tpl is not None:
            seq, t = int(seq_b), float(time_b)
            if -(1 << 63) <= seq < (1 << 63) and -_INF < t < _INF:
                return ("enter" if kind == b"enter" else "exit"), seq, t, tpl
    try:
        d = json.loads(raw.decode("utf-8"), parse_constant=_no_constant)
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None
    if not isinstance(d, dict) or d.get("schema") != SCHEMA or damaged(d) is not None:
        return None
    return d


def iter_entries(path: str, max_line: int = 1 << 20) -> Iterator[tuple[str, int, float, dict[str, Any]] | dict[str, Any] | None]:
    """``iter_lines``, with the recorder's call lines given as ``(kind, seq, time, fields)`` tuples.

    ``fields`` (rank, group, op, dtype, shapes, ...) is one dict shared by every line with the same
    middle: readers must not change it. A tuple stands for exactly the dict ``iter_lines`` yields for
    that line (``{"schema", "kind", "seq", **fields, "time"}``); every other line is yielded as
    ``iter_lines`` yields it. A call line costs one regex match and a dict look-up instead of a JSON
    parse and a field-by-field check.
    """
    from commdoctor.core.safeopen import open_input

    memo: dict[bytes, Any] = {}
    with open_input(path) as f:
        readline = f.readline
        while True:
            raw = readline(max_line + 1)
            if not raw:
                break
            if len(raw) > max_line and not raw.endswith(b"\n"):
                while raw and not raw.endswith(b"\n"):  # the rest of the over-long line
                    raw = readline(max_line + 1)
                yield None
                continue
            yield parse_line(raw, memo)


def iter_lines(path: str, max_line: int = 1 << 20) -> Iterator[dict[str, Any] | None]:
    """Yield each parsed line of a records file, or None for a line that is not a record.

    Memory stays bounded by ``max_line`` whatever the file holds: an over-long
    line (binary junk without newlines) is skipped in ``max_line`` steps. A line
    whose known fields have the wrong types (``damaged``) is not a record either.
    The file is opened through ``safeopen.open_input``: a FIFO is waited on only
    briefly and a device is refused.
    """
    for x in iter_entries(path, max_line):
        if type(x) is tuple:
            kind, seq, t, tpl = x
            yield {"schema": SCHEMA, "kind": kind, "seq": seq, **tpl, "time": t}
        else:
            yield x  # type: ignore[misc]


def _readable(path: str) -> Iterator[tuple[str, int, float, dict[str, Any]] | dict[str, Any] | None]:
    """``iter_entries``, ending quietly where the file cannot be read (a FIFO nobody writes, a device, an I/O error)."""
    try:
        yield from iter_entries(path)
    except OSError:
        return


def call_record(x: tuple[str, int, float, dict[str, Any]] | dict[str, Any]) -> CallRecord:
    """The CallRecord of an ``iter_entries`` item (a call tuple or a parsed enter/exit line)."""
    if type(x) is tuple:
        kind, seq, t, tpl = x
        x = {"kind": kind, "seq": seq, **tpl, "time": t}
    return CallRecord.from_dict(x)  # type: ignore[arg-type]


class ProgressFold:
    """Folds record lines, file by file, into each rank's progress (what ``read_progress`` returns).

    Only the last enter and exit of each rank become CallRecords, once, at ``result()``: a rank's
    records hold thousands of calls and the progress needs two of them.
    """

    def __init__(self) -> None:
        self.out: dict[int, RankProgress] = {}
        self._last: dict[int, list[Any]] = {}  # rank -> [last enter item, last exit item]
        self._path = ""
        self._prog: RankProgress | None = None
        self._bad = 0

    def begin(self, path: str) -> None:
        self._path, self._prog, self._bad = path, None, 0

    def bad(self) -> None:
        self._bad += 1

    def _rank(self, rank: int) -> RankProgress:
        prog = self._prog
        if prog is None or prog.rank != rank:
            prog = self.out.get(rank)
            if prog is None:
                prog = self.out[rank] = RankProgress(rank=rank, path=self._path)
                self._last[rank] = [None, None]
            self._prog = prog
        prog.path = self._path  # the newest file of the rank (after its rotated predecessor)
        return prog

    def call(self, rank: int, item: tuple[str, int, float, dict[str, Any]]) -> None:
        self._rank(rank)
        self._last[rank][0 if item[0] == "enter" else 1] = item

    def line(self, d: dict[str, Any]) -> None:
        rank = _rank(d.get("rank"))
        if rank is None:
            self._bad += 1
            return
        prog = self._rank(rank)
        kind = d.get("kind")
        if kind == "header":
            prog.host, prog.pid, prog.world_size = d.get("host"), d.get("pid"), world_size(d.get("world_size"))
        elif kind == "enter":
            self._last[rank][0] = d
        elif kind == "exit":
            self._last[rank][1] = d
        elif kind == "mismatch":
            prog.mismatches.append(d)
        elif kind == "warning":
            prog.warnings.append(str(d.get("message", "")))

    def end(self) -> None:
        if self._prog is not None:
            self._prog.bad_lines += self._bad
        self._bad = 0

    def result(self) -> dict[int, RankProgress]:
        for rank, (e, x) in self._last.items():
            prog = self.out[rank]
            try:
                prog.last_entered = call_record(e) if e is not None else None
                prog.last_completed = call_record(x) if x is not None else None
            except (TypeError, ValueError):
                prog.bad_lines += 1
        return self.out


def read_progress(paths: Iterable[str]) -> dict[int, RankProgress]:
    """Fold records files (or directories holding them) into each rank's progress."""
    files: list[str] = []
    for p in paths:
        if os.path.isdir(p):
            files += sorted(os.path.join(p, n) for n in os.listdir(p) if n.startswith(FILE_PREFIX) and n.endswith(".jsonl"))
        elif os.path.exists(p):
            files.append(p)
    fold = ProgressFold()
    for path in with_rotated(files):
        fold.begin(path)
        for x in _readable(path):
            if type(x) is tuple:
                fold.call(x[3]["rank"], x)
            elif x is None:
                fold.bad()
            else:
                fold.line(x)  # type: ignore[arg-type]
        fold.end()
    return fold.result()
