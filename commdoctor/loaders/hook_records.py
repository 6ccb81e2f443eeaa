"""Load commdoctor.hooks progress records (``hooks-rank{N}.jsonl``) into facts for the checks.

Promise: standard library only (``commdoctor logs`` never imports torch), never
raises on bad input: unreadable files, junk lines and truncated last lines are
counted and skipped. ``load(paths)`` accepts files and directories (a
directory is searched one level deep, so a bundle of per-node folders works)
and returns ``HookRecords``: each rank's progress (``records.read_progress``,
unchanged), the mismatches the hooks recorded, and, per process group, where
every rank is: the last call it entered and the last it completed, with the
record line that says so. ``register(facts, paths)`` provides the fact
``hook_records`` to a pipeline run when records are found.
"""

from __future__ import annotations

import os
import pickle
import re
import select
import signal
import stat
import time
from array import array
from dataclasses import dataclass, field
from itertools import compress, repeat
from operator import itemgetter, not_, or_
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from commdoctor.core import records

FACT = "hook_records"
#: Per group and rank, how many past entries are kept to find where ranks first disagree.
KEEP = 20000
_NAN = float("nan")
_INF = float("inf")


@dataclass
class Call:
    """One entered call, as a rank recorded it; ``line`` is its line in ``path``."""

    rank: int
    group: str
    seq: int
    op: str
    reduce_op: str | None
    dtype: str | None
    shapes: Any
    root: int | None
    site: str | None
    time: float
    path: str
    line: int
    completed: float | None = None  # time of its exit record, if any

    def key(self) -> tuple[Any, ...]:
        """What must agree across ranks (all_to_all's shapes legitimately differ)."""
        shapes = None if self.op.startswith("all_to_all") else repr(self.shapes)
        return (self.op, self.reduce_op, self.dtype, shapes, self.root)

    def describe(self) -> str:
        out = self.op + (f"({self.reduce_op})" if self.reduce_op else "")
        if self.dtype:
            out += f" {self.dtype}"
        if isinstance(self.shapes, list) and self.shapes:
            out += " " + ", ".join(str(s).replace(" ", "") for s in self.shapes)
        if self.root is not None:
            out += f" root={self.root}"
        return out + f" #{self.seq}" + (f" at {self.site}" if self.site else "")


class History(Mapping[int, Call]):
    """One rank's entered calls in one group, seq -> Call, held as arrays (a few bytes a call, not a
    Call object): 1,024 ranks of 2,000 calls each would otherwise be two million objects. A Call is
    made when one is looked up."""

    def __init__(self, rank: int, group: str, statics: list[tuple[Any, ...]], paths: list[str]) -> None:
        self.rank, self.group = rank, group
        self._statics, self._paths = statics, paths
        self.seqs = array("q")
        self.sids = array("q")  # index into statics: (op, reduce_op, dtype, shapes, root, site)
        self.lines = array("q")
        self._times = array("d")
        #: The times of a file read in bulk as it wrote them (``T}`` lines), parsed when first asked for:
        #: the checks need one or two of a rank's two thousand.
        self._raw: bytes | None = None
        self._shared = False  # seqs and sids are the arrays of a file read line by line: copy before changing
        self.done = array("d")  # time of the exit record, NaN when none
        self.pids = array("l")  # index into paths
        self._index: dict[int, int] | None = None

    @property
    def times(self) -> array[float]:
        if self._raw is not None:
            self._times = array("d", map(float, self._raw.replace(b"}", b"").split()))
            self._raw = None
        return self._times

    def time_at(self, i: int) -> float:
        if self._raw is not None and -len(self.seqs) <= i < len(self.seqs):  # one number, not all of them
            if i in (-1, len(self.seqs) - 1):
                return float(self._raw.rpartition(b"\n")[2].rstrip(b"}"))
            i %= len(self.seqs)
            return float(self._raw.split(b"\n", i + 1)[i].rstrip(b"}"))
        return self.times[i]

    def _own(self) -> None:
        if self._shared:
            self.seqs, self.sids, self._shared = array("q", self.seqs), array("q", self.sids), False
        self.times  # (parsed before anything is appended to them)

    def add(self, seq: int, sid: int, line: int, t: float, pid: int) -> None:
        self._own()
        self.seqs.append(seq)
        self.sids.append(sid)
        self.lines.append(line)
        self._times.append(t)
        self.done.append(_NAN)
        self.pids.append(pid)
        self._index = None

    def extend(self, seqs: array[int], sids: array[int], lines: array[int], times: array[float] | bytes,
               pid: int) -> None:
        """Append calls; ``times`` may be the file's own text of them (see ``_raw``), and when this history
        is empty ``seqs`` and ``sids`` are kept as they are (shared with the file they were parsed from)."""
        if not self.seqs and not self._raw:
            self.seqs, self.sids, self._shared = seqs, sids, True
            self.lines = lines  # (the caller's own array, made for this history)
            if isinstance(times, bytes):
                self._raw = times
            else:
                self._times = array("d", times)
        else:
            self._own()
            self.seqs.extend(seqs)
            self.sids.extend(sids)
            self.lines.extend(lines)
            self._times.extend(array("d", map(float, times.replace(b"}", b"").split())) if isinstance(times, bytes)
                               else times)
        self.done.extend(array("d", [_NAN]) * len(seqs))
        self.pids.extend(array("l", [pid]) * len(seqs))
        self._index = None

    def complete(self, seq: int, t: float) -> None:
        """The exit of ``seq``: calls complete soon after they are entered, so look back a little only."""
        seqs = self.seqs
        for i in range(len(seqs) - 1, max(-1, len(seqs) - 65), -1):
            if seqs[i] == seq:
                self.done[i] = t
                return

    def keep_last(self, n: int) -> bool:
        """Drop all but the last ``n`` calls; True if any were dropped."""
        if len(self.seqs) <= n:
            return False
        self._own()
        for arr in (self.seqs, self.sids, self.lines, self._times, self.done, self.pids):
            del arr[: len(arr) - n]
        self._index = None
        return True

    def index(self) -> dict[int, int]:
        """seq -> position (a seq entered twice: the later one, as a dict of calls would hold)."""
        if self._index is None:
            self._index = {s: i for i, s in enumerate(self.seqs)}
        return self._index

    def signature(self) -> bytes:
        """Equal for two ranks exactly when they entered the same calls at the same seqs."""
        return self.seqs.tobytes() + b"|" + self.sids.tobytes()

    def call_at(self, i: int) -> Call:
        op, reduce_op, dtype, shapes, root, site = self._statics[self.sids[i]]
        done = self.done[i]
        return Call(self.rank, self.group, self.seqs[i], op, reduce_op, dtype, shapes, root, site, self.time_at(i),
                    self._paths[self.pids[i]], self.lines[i], None if done != done else done)

    def __getitem__(self, seq: int) -> Call:
        return self.call_at(self.index()[seq])

    def __iter__(self) -> Iterator[int]:
        return iter(self.index())

    def __len__(self) -> int:
        return len(self.index())


@dataclass
class GroupPicture:
    """Where each rank is in one process group."""

    group: str
    entered: dict[int, Call] = field(default_factory=dict)  # rank -> last call entered
    completed: dict[int, int] = field(default_factory=dict)  # rank -> last seq completed
    history: dict[int, History] = field(default_factory=dict)  # rank -> seq -> call (last KEEP)
    #: (op, reduce_op, dtype, shapes, root, site) of each distinct call; History.sids index it.
    statics: list[tuple[Any, ...]] = field(default_factory=list)

    def in_flight(self, rank: int) -> Call | None:
        e = self.entered.get(rank)
        if e is None or self.completed.get(rank, -1) >= e.seq:
            return None
        return e

    def classes(self) -> list[list[int]]:
        """Ranks grouped by identical histories (same calls at the same seqs), largest class first."""
        by: dict[bytes, list[int]] = {}
        seen: dict[tuple[int, int], bytes] = {}  # ranks read in bulk share their arrays: one signature each
        for r, h in sorted(self.history.items()):
            k = (id(h.seqs), id(h.sids))
            sig = seen.get(k)
            if sig is None:
                sig = seen[k] = h.signature()
            by.setdefault(sig, []).append(r)
        return sorted(by.values(), key=lambda rs: (-len(rs), rs[0]))

    def key_of(self, sid: int) -> tuple[Any, ...]:
        """What must agree across ranks for a distinct call (as ``Call.key``)."""
        op, reduce_op, dtype, shapes, root, _ = self.statics[sid]
        return (op, reduce_op, dtype, None if op.startswith("all_to_all") else repr(shapes), root)


@dataclass
class HookRecords:
    paths: list[str]
    ranks: dict[int, records.RankProgress]
    groups: dict[str, GroupPicture]
    mismatches: list[tuple[int, int, dict[str, Any]]]  # (rank, line, record), as recorded
    warnings: list[tuple[int, int, str, str]]  # (rank, line, path, message)
    world_size: int | None
    bad_lines: int
    last_time: float | None  # the latest time any record carries: "now" for the records
    last_seen: dict[int, float] = field(default_factory=dict)  # rank -> latest time in its records (heartbeats too)
    truncated: bool = False  # histories were cut to the last KEEP calls
    backend: list[tuple[int, int, str, dict[str, Any]]] = field(default_factory=list)  # (rank, line, path, record)

    def summary(self) -> str:
        n = sum(1 for g in self.groups.values() for _ in g.entered)
        return (f"{len(self.ranks)} rank(s)" + (f" of {self.world_size}" if self.world_size else "")
                + f", {len(self.groups)} group(s), {n} rank-group histories, {len(self.mismatches)} mismatch record(s)")


def find_files(paths: Iterable[str]) -> list[str]:
    """Records files named by ``paths`` (files, or directories searched one level deep)."""
    out: list[str] = []

    def scan(d: str, depth: int) -> None:
        try:
            names = sorted(os.listdir(d))
        except OSError:
            return
        for n in names:
            p = os.path.join(d, n)
            if n.startswith(records.FILE_PREFIX) and n.endswith(".jsonl") and os.path.isfile(p):
                out.append(p)
            elif depth > 0 and os.path.isdir(p):
                scan(p, depth - 1)

    for p in paths:
        if os.path.isdir(p):
            scan(p, 1)
        elif os.path.isfile(p):
            out.append(p)
    return records.with_rotated(dict.fromkeys(out))


#: Files larger than this are read line by line (a records file rotates at 64 MiB).
BULK_MAX = 256 << 20
#: Past this size a file of lines shorter than any record's (48 bytes on average) is streamed, not split.
SHORT_LINES_FROM = 8 << 20
MAX_LINE = 1 << 20
_PE = b'{"schema":"commdoctor.hooks/1","kind":"enter","seq":'
_PX = b'{"schema":"commdoctor.hooks/1","kind":"exit","seq":'
_RANK = re.compile(rb',"rank":((?:0|[1-9][0-9]{0,6})),')
#: Every call line's time, as JSON writes it and the recorder writes it (so ``float`` reads it as JSON would).
_TIMES = re.compile(rb'(?:-?(?:0|[1-9][0-9]{0,30})\.[0-9]{1,30}\}\n)*')


@dataclass
class _Shape:
    """What a file's call lines said, kept to read other ranks' files with the same calls in bulk."""

    rank: int
    groups: dict[str, tuple[array[int], array[int], array[int]]]  # group -> (positions among enters, seqs, sids)
    completed: dict[str, int]  # group -> last seq completed in this file


@dataclass
class _Signature:
    """What one pass of C loops over a file's lines says (``_scan``): enough to read it in bulk.

    Picklable and small (a few arrays and strings), so a worker process can scan files and send it back."""

    key: tuple[int, int]
    rank: int
    enters: array[int]  # line numbers (1-based) of the enter lines
    exits: array[int]  # line numbers of the exit lines
    te: bytes  # each enter line's time as written, one "T}" a line (History parses them when asked)
    top: float  # the latest time on a call or heartbeat line
    last_e: bytes  # the last enter line and the last exit line (b"": none), for the rank's progress
    last_x: bytes
    others: list[tuple[int, bytes]]  # every other line (header, warnings, damage): number, bytes


#: The lines ``_scan`` takes apart: calls, and heartbeats (``alive``: only their time counts).
_PA = b'{"schema":"commdoctor.hooks/1","kind":"alive","rank":'
_TIMED = (_PE, _PX, _PA)
#: Where the second letter of the kind is in those lines (n: enter, x: exit, l: alive), as selectors.
_KIND_AT = len(b'{"schema":"commdoctor.hooks/1","kind":"e')
_SEL_E = bytes(int(c == ord("n")) for c in range(256))
_SEL_X = bytes(int(c == ord("x")) for c in range(256))
_SEL_A = bytes(int(c == ord("l")) for c in range(256))
#: Unix times of 2001-2286 in JSON's decimal form, as the recorder writes them: every one has ten digits
#: before the point, so the largest sorts last as text too.
_T10 = re.compile(rb'(?:1[0-9]{9}\.[0-9]{1,30}\}\n)*')
#: What each call line's rank becomes in the digest: eight characters, longer than any rank (seven digits).
_NO_RANK = b',"rank":########,'
_NO_RANK_G = _NO_RANK + b'"group":'


def _short_lines(data: bytes) -> bool:
    """True when no line of ``data`` is longer than ``MAX_LINE`` (a newline in every half of it)."""
    step = MAX_LINE // 2
    return all(data.find(b"\n", i, i + step) >= 0 for i in range(0, len(data) - step + 1, step))


def _scan(lines: list[bytes]) -> _Signature | None:
    """A digest of a file's call lines with times and the file's rank left out: two files with equal
    digests made the same calls in the same order. None when the file is not the recorder's plain output.

    Every step is a C loop over the lines (map, compress, join, translate) or over the whole text: this
    runs on every file of a 1,024-rank job, and a Python step per line would cost more than the rest."""
    n = len(lines)
    is_t = list(map(bytes.startswith, lines, repeat(_TIMED)))
    numbers = list(compress(range(1, n + 1), is_t))
    timed = list(compress(lines, is_t))
    if not timed:
        return None
    kinds = bytes(map(bytes.__getitem__, timed, repeat(_KIND_AT)))
    sel_e, sel_x, sel_a = kinds.translate(_SEL_E), kinds.translate(_SEL_X), kinds.translate(_SEL_A)
    parts = list(map(bytes.rpartition, timed, repeat(b',"time":')))
    heads = list(map(itemgetter(0), parts))
    tails = list(map(itemgetter(2), parts))
    eh = list(compress(heads, sel_e))
    m = _RANK.search(eh[0]) if eh else None
    if m is None:
        return None
    rank = m.group(1)
    ah = list(compress(heads, sel_a))
    if ah and ah.count(_PA + rank) != len(ah):
        return None  # a heartbeat of another form or rank: line by line
    # Exits in sorted order: calls complete in an order that depends on timing (an async call's exit is
    # written when its work is seen done), and what a file's exits give (each group's last completed seq)
    # does not depend on their order. Enters keep theirs: that order is what the check compares.
    xh = sorted(compress(heads, sel_x))
    text = b"\n".join(eh) + b"\x00" + b"\n".join(xh)
    # The recorder writes "group" after "rank": a token ending in it is found faster than one ending in a
    # comma (the substring search stops on every comma of the JSON): 0.81 against 0.98 ms a rank file.
    token = b',"rank":' + rank + b',"group":'
    keyed = text.replace(token, _NO_RANK_G)
    if len(keyed) - len(text) != (len(eh) + len(xh)) * (len(_NO_RANK_G) - len(token)):
        return None  # a call line without its rank, or with a second one: line by line
    times = b"\n".join(tails) + b"\n"  # (an empty tail: no time on the line, and the check below fails)
    if _T10.fullmatch(times) is not None:
        top = float(max(times.split(b"}\n")))
    elif _TIMES.fullmatch(times) is not None:  # other times, still JSON's decimal form
        top = max(map(float, times.replace(b"}\n", b"\n").split()))
    else:
        return None
    enters = array("q", compress(numbers, sel_e))
    exits = array("q", compress(numbers, sel_x))
    others = [(i + 1, lines[i]) for i in compress(range(n), map(not_, is_t))]
    # The interpreter's own (seeded) hash and the length: a collision needs 2^64 tries and the seed. A forked
    # worker keeps its parent's seed, so keys made there compare with the parent's.
    return _Signature((hash(keyed), len(keyed)), int(rank), enters, exits, b"\n".join(compress(tails, sel_e)), top,
                      lines[enters[-1] - 1], lines[exits[-1] - 1] if exits else b"", others)


def _is_call(x: Any) -> bool:
    """An enter or exit record, whichever way its line was parsed."""
    return type(x) is tuple or (type(x) is dict and x.get("kind") in ("enter", "exit"))


def _read_capped(f: Any, cap: int) -> bytes:
    """Up to ``cap + 1`` bytes of ``f`` (more than ``cap``: the caller's sign that there was more).

    Asks for the file's size first: ``read(cap + 1)`` with a cap of 256 MB has the buffer made that large
    before a 1 MB file fills it (mapped and given back on every file: a sixth of ``records``' time on
    1,024 ranks). A file that grew since, or a pipe (no size), is read on up to the cap as before."""
    try:
        size = max(0, os.fstat(f.fileno()).st_size)
    except Exception:  # noqa: BLE001 - no descriptor (a pipe's wrapper): no size to go by
        size = 0
    data = f.read(min(size, cap) + 1)
    if len(data) <= min(size, cap):  # at its end (the file was no larger than its size said)
        return data
    if len(data) > cap:
        return data
    return data + f.read(cap + 1 - len(data))


def _read_lines(path: str) -> list[bytes] | None:
    """The file's lines, or None when it is too large to hold as lines (then it is streamed): over
    ``BULK_MAX`` bytes, or large and made of lines far shorter than any record's (a list of millions of tiny
    lines costs some 40 bytes each)."""
    from commdoctor.core.safeopen import open_input

    with open_input(path) as f:
        data = _read_capped(f, BULK_MAX)
    if len(data) > BULK_MAX or (len(data) > SHORT_LINES_FROM and data.count(b"\n") > len(data) // 48):
        return None
    lines = _Lines(data.split(b"\n"))
    if lines[-1] == b"":
        lines.pop()
    lines.short = len(data) <= MAX_LINE or _short_lines(data)
    return lines


class _Lines(list[bytes]):
    """A file's lines, knowing whether any is longer than ``MAX_LINE`` (a line so long is damage)."""

    short = False


def _scan_if_short(lines: list[bytes]) -> _Signature | None:
    return _scan(lines) if getattr(lines, "short", False) else None


def _scan_path(path: str) -> _Signature | None | bool:
    """``_scan`` of a file, for a worker: False when the parent must read it itself (not a regular file,
    unreadable, too large to hold); None when it is not the recorder's plain output."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return False  # a named pipe is read once, by the parent
        lines = _read_lines(path)
        return False if lines is None else _scan_if_short(lines)
    except (OSError, ValueError, TypeError, MemoryError):
        return False


class _Loader:
    def __init__(self, files: list[str]) -> None:
        self.files = files
        self.fold = records.ProgressFold()
        self.groups: dict[str, GroupPicture] = {}
        self.interned: dict[str, dict[tuple[Any, ...], int]] = {}  # group -> static -> sid
        self.by_tpl: dict[int, tuple[dict[str, Any], str, int]] = {}  # id(fields) -> (fields kept alive, group, sid)
        self.mismatches: list[tuple[int, int, dict[str, Any]]] = []
        self.warnings: list[tuple[int, int, str, str]] = []
        self.backend: list[tuple[int, int, str, dict[str, Any]]] = []
        self.world: int | None = None
        self.bad = 0
        self.last_time: float | None = None
        self.last_seen: dict[int, float] = {}
        self.cut = False
        self.shapes: dict[tuple[int, int], _Shape | None] = {}
        self.memo: dict[bytes, Any] = {}

    def sid_of(self, gname: str, g: GroupPicture, static: tuple[Any, ...]) -> int:
        table = self.interned.setdefault(gname, {})
        k = (static[0], static[1], static[2], repr(static[3]), static[4], static[5])
        sid = table.get(k)
        if sid is None:
            sid = table[k] = len(g.statics)
            g.statics.append(static)
        return sid

    def hist(self, g: GroupPicture, rank: int) -> History:
        h = g.history.get(rank)
        if h is None:
            h = g.history[rank] = History(rank, g.group, g.statics, self.files)
        return h

    def seen(self, rank: int, t: float) -> None:
        if self.last_time is None or t > self.last_time:
            self.last_time = t
        if t > self.last_seen.get(rank, t - 1.0):
            self.last_seen[rank] = t

    def call(self, n: int, x: tuple[str, int, float, dict[str, Any]], pid: int,
             shape: dict[str, list[Any]] | None, j: int) -> None:
        """A call line on the fast path; ``shape`` collects what the file's enters said (j: which enter)."""
        kind, seq, t, tpl = x
        rank = tpl["rank"]
        self.fold.call(rank, x)
        self.seen(rank, t)
        if seq < 0:
            return
        hit = self.by_tpl.get(id(tpl))
        if hit is None:
            gname = str(tpl["group"])
            g = self.groups.setdefault(gname, GroupPicture(gname))
            static = (str(tpl.get("op")), tpl.get("reduce_op"), tpl.get("dtype"), tpl.get("shapes"),
                      tpl.get("root"), tpl.get("site"))
            hit = self.by_tpl[id(tpl)] = (tpl, gname, self.sid_of(gname, g, static))
        gname, sid = hit[1], hit[2]
        g = self.groups[gname]
        if kind == "enter":
            h = self.hist(g, rank)
            h.add(seq, sid, n, t, pid)
            if shape is not None:
                pos, seqs, sids = shape.setdefault(gname, [[], [], []])
                pos.append(j)
                seqs.append(seq)
                sids.append(sid)
            if len(h.seqs) > 2 * KEEP:
                self.cut = h.keep_last(KEEP) or self.cut
        else:
            if seq > g.completed.get(rank, -1):
                g.completed[rank] = seq
            h0 = g.history.get(rank)
            if h0 is not None:
                h0.complete(seq, t)

    def line(self, n: int, d: dict[str, Any], path: str, pid: int) -> None:
        """Any other line (and call lines off the fast path), as parsed by json."""
        self.fold.line(d)
        try:
            rank = records._rank(d.get("rank"))
            if rank is None:
                raise ValueError("no rank")
            kind = d.get("kind")
            t = d.get("time")
            if isinstance(t, (int, float)):
                self.last_time = t if self.last_time is None else max(self.last_time, t)
                self.last_seen[rank] = max(self.last_seen.get(rank, t), t)
            if kind == "header":
                ws = records.world_size(d.get("world_size"))
                if ws is not None:
                    self.world = max(self.world or 0, ws)
            elif kind in ("enter", "exit"):
                seq = d["seq"]
                if type(seq) is not int or not isinstance(d["group"], (str, int)):
                    raise ValueError("seq must be an int, group a name")
                tf = float(t or 0.0)  # before the group is made: a damaged line leaves no empty group behind
                if tf != tf or tf in (float("inf"), float("-inf")):
                    raise ValueError("time is not a number")
                if seq < 0:  # point-to-point and unchecked calls: not part of a group's order
                    return
                gname = str(d["group"])
                g = self.groups.setdefault(gname, GroupPicture(gname))
                if kind == "enter":
                    static = (str(d.get("op")), d.get("reduce_op"), d.get("dtype"), d.get("shapes"),
                              d.get("root"), d.get("site"))
                    h = self.hist(g, rank)
                    h.add(seq, self.sid_of(gname, g, static), n, tf, pid)
                    if len(h.seqs) > 2 * KEEP:
                        self.cut = h.keep_last(KEEP) or self.cut
                else:
                    g.completed[rank] = max(g.completed.get(rank, -1), seq)
                    h0 = g.history.get(rank)
                    if h0 is not None:
                        h0.complete(seq, tf)
            elif kind == "mismatch":
                if not isinstance(d.get("detail"), dict):
                    raise ValueError("a mismatch record without its detail")
                self.mismatches.append((rank, n, d))
            elif kind == "warning":
                self.warnings.append((rank, n, path, str(d.get("message", ""))))
            elif kind == "backend" and len(self.backend) < 4096:  # commdoctor.hooks.backendwatch's notice
                if not all(isinstance(d.get(k), (int, float)) and not isinstance(d.get(k), bool)
                           for k in ("bytes", "time_s")):
                    raise ValueError("a backend notice without its figures")
                self.backend.append((rank, n, path, d))
        except (KeyError, TypeError, ValueError, ArithmeticError):
            self.bad += 1

    def item(self, n: int, x: Any, path: str, pid: int) -> None:
        if type(x) is tuple:
            self.call(n, x, pid, None, 0)
        elif x is None:
            self.fold.bad()
            self.bad += 1
        else:
            self.line(n, x, path, pid)

    def read(self, path: str, pid: int, scanned: _Signature | None | bool = False) -> None:
        """One file. ``scanned``: what a worker's ``_scan_path`` said of it (False: nothing, read it here)."""
        self.fold.begin(path)
        try:
            if not (isinstance(scanned, _Signature) and self.bulk(scanned, path, pid)):
                lines = _read_lines(path)
                if lines is None:  # too large to hold: line by line
                    for n, x in enumerate(records.iter_entries(path, MAX_LINE), 1):
                        self.item(n, x, path, pid)
                elif scanned is False:
                    self.read_lines(lines, path, pid, _scan_if_short(lines))
                else:  # scanned here or by a worker, and not read in bulk
                    self.read_lines(lines, path, pid, scanned if isinstance(scanned, _Signature) else None, tried=True)
        except OSError:
            self.bad += 1
        self.fold.end()

    def bulk(self, sig: _Signature, path: str, pid: int) -> bool:
        """Read a file in bulk when a file with the same calls was read line by line; False: it was not."""
        shape = self.shapes.get(sig.key)
        if shape is None or records._rank(sig.rank) is None:
            return False
        memo = self.memo
        items = [(n, records.parse_line(raw, memo)) for n, raw in sig.others]
        if any(_is_call(x) for _, x in items):
            return False  # a call in a form the scan did not see (another key order, spaces): line by line
        self.like(shape, sig, path, pid, items)
        return True

    def read_lines(self, lines: list[bytes], path: str, pid: int, sig: _Signature | None, tried: bool = False) -> None:
        if sig is not None and not tried and self.bulk(sig, path, pid):
            return
        # Read every line; when the file is the recorder's plain output of one rank, keep its shape.
        parse, memo = records.parse_line, self.memo
        collect: dict[str, list[Any]] | None = {} if sig is not None and sig.key not in self.shapes else None
        plain = collect is not None
        enters = set(sig.enters) if sig is not None else set()
        exits = set(sig.exits) if sig is not None else set()
        completed: dict[str, int] = {}
        j = 0
        for n, raw in enumerate(lines, 1):
            if len(raw) > MAX_LINE:
                x: Any = None
            else:
                x = parse(raw, memo)
            if type(x) is tuple:
                if plain and (x[3]["rank"] != sig.rank or (n not in enters and n not in exits)):  # type: ignore[union-attr]
                    plain = False
                self.call(n, x, pid, collect if plain else None, j)
                if x[0] == "enter":
                    j += 1
                elif plain and x[1] >= 0:
                    gname = str(x[3]["group"])
                    completed[gname] = max(completed.get(gname, -1), x[1])
            else:
                if plain and (n in enters or n in exits or _is_call(x)):
                    plain = False  # a call line the fast path did not take: another file may differ there
                self.item(n, x, path, pid)
        if sig is not None and sig.key not in self.shapes:
            self.shapes[sig.key] = _Shape(sig.rank, {g: (array("q", v[0]), array("q", v[1]), array("q", v[2]))
                                                     for g, v in (collect or {}).items()}, completed) if plain else None

    def like(self, shape: _Shape, sig: _Signature, path: str, pid: int, items: list[tuple[int, Any]]) -> None:
        """A file whose call lines are another file's, but for its rank and times: those come from it, with
        its line numbers and its other lines (``items``, parsed)."""
        memo = self.memo
        rank = sig.rank
        if sig.top > -_INF:
            self.seen(rank, sig.top)
        enters = sig.enters
        for gname, (pos, seqs, sids) in shape.groups.items():
            g = self.groups.setdefault(gname, GroupPicture(gname))
            h = self.hist(g, rank)
            if len(pos) == len(enters):  # (positions rise: these are all of them, in order)
                h.extend(seqs, sids, enters, sig.te, pid)
            else:
                te = array("d", map(float, sig.te.replace(b"}", b"").split()))
                h.extend(seqs, sids, array("q", map(enters.__getitem__, pos)), array("d", map(te.__getitem__, pos)), pid)
            if len(h.seqs) > 2 * KEEP:
                self.cut = h.keep_last(KEEP) or self.cut
        for gname, seq in shape.completed.items():
            g = self.groups.setdefault(gname, GroupPicture(gname))
            if seq > g.completed.get(rank, -1):
                g.completed[rank] = seq
        for raw in (sig.last_e, sig.last_x):  # the progress: this rank's last enter and exit
            x = records.parse_line(raw, memo) if raw else None
            if type(x) is tuple:
                self.fold.call(rank, x)
        for n, x in items:
            self.item(n, x, path, pid)

    def result(self) -> HookRecords:
        # A group seen only in exit records (its enter lines damaged or cut off) tells no check where a rank is.
        groups = {k: g for k, g in self.groups.items() if g.history}
        for g in groups.values():
            for r, h in g.history.items():
                self.cut = h.keep_last(KEEP) or self.cut
                g.entered[r] = h.call_at(len(h.seqs) - 1)  # the last enter line read, as before
        return HookRecords(paths=self.files, ranks=self.fold.result(), groups=groups, mismatches=self.mismatches,
                           warnings=self.warnings, world_size=self.world, bad_lines=self.bad,
                           last_time=self.last_time, last_seen=self.last_seen, truncated=self.cut,
                           backend=self.backend)


#: Below this many files, or bytes, every file is read in this process (a worker costs a fork and a pipe).
PARALLEL_FILES = 48
PARALLEL_BYTES = 32 << 20
#: A worker that has not answered this long after the reader finished its own share is given up on
#: (its files are read here): seconds, or this many times what the reader's own share took.
WORKER_WAIT_S = 20.0


def workers_default() -> int:
    """Processes to read with (``COMMDOCTOR_RECORDS_WORKERS``): the CPUs this process may run on that the
    machine's load leaves free, at most 4. On a busy machine a worker only shares our CPU: at load 14-19
    on 2 cores, two processes took 3-29 % more CPU than one and were slower in wall time in four runs of
    six (bench/README.md, "Round 4")."""
    try:
        return max(1, min(16, int(os.environ["COMMDOCTOR_RECORDS_WORKERS"])))
    except (KeyError, ValueError):
        pass
    from commdoctor.loaders.cpus import spare_cpus

    return max(1, min(4, spare_cpus()))


class _Workers:
    """Files scanned (``_scan_path``) by forked worker processes while the reader reads its own share.

    The reader takes the first files; each worker a later slice, sent back as one pickle through a pipe
    when done. Whatever goes wrong with a worker (no fork, a crash, a garbled answer, past its wait) only
    means its files are read here, as they would be with one process."""

    def __init__(self, files: list[str], n: int) -> None:
        self.got: dict[int, _Signature | None | bool] = {}
        self.pending: list[tuple[int, int, int, int]] = []  # (first, end, pid, fd)
        self.t0 = time.monotonic()
        self.own = len(files)
        if n < 2 or len(files) < PARALLEL_FILES or not hasattr(os, "fork"):
            return
        total = 0
        for f in files:
            try:
                total += os.stat(f).st_size
            except OSError:
                pass
        if total < PARALLEL_BYTES:
            return
        # The reader also does the bulk reading of every file and the line-by-line reads: a smaller share.
        self.own = cut = max(1, int(len(files) * 0.8 / n))
        step = -(-(len(files) - cut) // (n - 1))
        for first in range(cut, len(files), step):
            end = min(len(files), first + step)
            started = _fork_scan(files[first:end])
            if started is None:
                break  # (the files no worker took are read here: ``get`` says False for them)
            self.pending.append((first, end, *started))
        if not self.pending:
            self.own = len(files)

    def get(self, i: int) -> _Signature | None | bool:
        if i < self.own:
            return False
        if i not in self.got:
            while self.pending and self.pending[0][0] <= i:
                self._collect(*self.pending.pop(0))
        return self.got.pop(i, False)

    def _collect(self, first: int, end: int, pid: int, fd: int) -> None:
        limit = time.monotonic() + max(WORKER_WAIT_S, 2.0 * (time.monotonic() - self.t0))
        chunks: list[bytes] = []
        ok = False
        try:
            while True:
                left = limit - time.monotonic()
                if left <= 0 or not select.select([fd], [], [], left)[0]:
                    break
                b = os.read(fd, 1 << 20)
                if not b:
                    ok = True
                    break
                chunks.append(b)
        except OSError:
            pass
        finally:
            os.close(fd)
        if not ok:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        try:
            _, status = os.waitpid(pid, 0)
        except OSError:
            status = 1
        if not ok or status != 0:
            return
        data = b"".join(chunks)
        chunks.clear()  # (not held twice while the answer is unpickled)
        try:
            got = pickle.loads(data)  # our own worker's answer, through our own pipe
        except Exception:  # noqa: BLE001 - a garbled answer: read those files here
            return
        finally:
            del data
        if isinstance(got, list) and len(got) == end - first:
            self.got.update(zip(range(first, end), got))

    def close(self) -> None:
        for first, end, pid, fd in self.pending:
            self._collect(first, end, pid, fd)
        self.pending.clear()


def _fork_scan(paths: list[str]) -> tuple[int, int] | None:
    """Fork a worker that scans ``paths`` and writes the list of answers to a pipe: (its pid, the read end)."""
    try:
        r, w = os.pipe()
    except OSError:
        return None
    try:
        pid = os.fork()
    except OSError:
        os.close(r)
        os.close(w)
        return None
    if pid == 0:  # the worker: scan, answer, leave without running the parent's exit handlers
        code = 1
        try:
            os.close(r)
            data = pickle.dumps([_scan_path(p) for p in paths], protocol=pickle.HIGHEST_PROTOCOL)
            view = memoryview(data)
            while view:
                view = view[os.write(w, view):]
            code = 0
        except BaseException:  # noqa: BLE001 - the parent reads these files itself
            pass
        finally:
            os._exit(code)
    os.close(w)
    return pid, r


def load(paths: Iterable[str], progress: Any = None, workers: int | None = None) -> HookRecords | None:
    """Everything the records say, or None when ``paths`` hold no records file.

    One pass over each file (the ranks' progress is folded in the same pass). The recorder's call
    lines take the fast path of ``records.parse_line``; a rank's calls are kept as arrays
    (``History``). A file whose call lines are, but for the rank and the times, those of a file
    already read (ranks of one job that made the same calls) is read in bulk: its times, line
    numbers and other lines from it, the parsed calls from the first. So the cost is one parse per
    distinct history plus a few C loops over each file's lines, and memory a few bytes a call.
    Many files (a job of hundreds of ranks) are scanned by ``workers`` processes (default: one per
    CPU the machine's load leaves free, at most 4; forked, each scanning a slice of the files while this
    one reads its own).
    ``progress(what, done, total)``, when given, is called before each file (the callers' meters).
    """
    files = find_files(paths)
    if not files:
        return None
    ld = _Loader(files)
    pool = _Workers(files, workers_default() if workers is None else workers)
    try:
        for pid, path in enumerate(files):
            if progress is not None:
                progress("reading files", pid, len(files))
            ld.read(path, pid, pool.get(pid))
    finally:
        pool.close()
    return ld.result()


#: From this many files, ``progress_of`` reads each file's head and tail, not every line.
TAILS_FROM = 48
_KINDS_ANYWHERE = (b'"mismatch"', b'"warning"')  # records a rank's progress keeps wherever they are


def progress_of(files: list[str], progress: Any = None) -> dict[int, records.RankProgress]:
    """Each rank's progress (what ``records.read_progress`` and ``load(...).ranks`` give) for the hang
    diagnosis, which needs each rank's last enter and exit, its header and its mismatch and warning records.

    From ``TAILS_FROM`` files on, a file is not read line by line: its first line, the lines that hold
    "mismatch" or "warning" (found by a byte search) and its lines from the end back to its last enter and
    last exit (heartbeats skipped unparsed) are parsed; ``bad_lines`` then counts only the damaged lines
    among those. A job of 1,024 ranks costs a byte search per file, not a parse of four million lines."""
    files = list(files)
    if len(files) < TAILS_FROM:
        rec = load(files, progress)
        return rec.ranks if rec is not None else {}
    from commdoctor.core.safeopen import open_input

    fold = records.ProgressFold()
    memo: dict[bytes, Any] = {}
    for k, path in enumerate(files):  # (``find_files``' list: a rotated file before its successor)
        if progress is not None:
            progress("reading files", k, len(files))
        fold.begin(path)
        try:
            with open_input(path) as f:
                data = _read_capped(f, BULK_MAX)
        except OSError:
            fold.bad()
            fold.end()
            continue
        _fold_ends(fold, data[:BULK_MAX], memo)
        fold.end()
    return fold.result()


def _line_at(data: bytes, i: int) -> tuple[int, int]:
    """The bounds of the line holding offset ``i``."""
    start = data.rfind(b"\n", 0, i) + 1
    end = data.find(b"\n", i)
    return start, len(data) if end < 0 else end


def _fold_ends(fold: records.ProgressFold, data: bytes, memo: dict[bytes, Any]) -> None:
    def take(raw: bytes) -> Any:
        x = None if len(raw) > MAX_LINE else records.parse_line(raw, memo)
        if x is None:
            if raw.strip():
                fold.bad()
        elif isinstance(x, dict):
            fold.line(x)
        return x

    first = _line_at(data, 0)
    starts = {first[0]}
    take(data[first[0]:first[1]])
    # Mismatch and warning records, in file order, wherever they are.
    found = set()
    for word in _KINDS_ANYWHERE:
        i = data.find(word, first[1])
        while i >= 0:
            b, e = _line_at(data, i)
            found.add((b, e))
            i = data.find(word, e)
    for b, e in sorted(found):
        if b not in starts:
            starts.add(b)
            x = records.parse_line(data[b:e], memo) if e - b <= MAX_LINE else None
            if type(x) is dict and x.get("kind") in ("mismatch", "warning"):
                fold.line(x)
    # From the end back to the last enter and the last exit (the progress needs those two).
    want = {"enter", "exit"}
    end = len(data)
    while want and end > first[1]:
        b = data.rfind(b"\n", 0, end - 1) + 1 if end > 0 else 0
        raw = data[b:end]
        end = b
        if b in starts or raw.startswith(_PA) or not raw.strip(b"\n"):
            continue  # the first line (read), a heartbeat, an empty end
        x = records.parse_line(raw, memo) if len(raw) <= MAX_LINE else None
        if type(x) is tuple:
            if x[0] in want:
                want.discard(x[0])
                fold.call(x[3]["rank"], x)
        elif type(x) is dict and x.get("kind") in want:
            want.discard(x["kind"])
            fold.line(x)
        elif x is None and raw.strip():
            fold.bad()


def register(facts: Any, paths: Iterable[str], progress: Any = None) -> bool:
    """Provide the ``hook_records`` fact when ``paths`` hold records; True if they did."""
    rec = load(paths, progress)
    if rec is None:
        return False
    facts.provide(FACT, rec)
    return True
