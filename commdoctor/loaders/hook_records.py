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
from dataclasses import dataclass, field
import re
from array import array
from itertools import compress, repeat
from operator import itemgetter
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
        self.times = array("d")
        self.done = array("d")  # time of the exit record, NaN when none
        self.pids = array("l")  # index into paths
        self._index: dict[int, int] | None = None

    def add(self, seq: int, sid: int, line: int, t: float, pid: int) -> None:
        self.seqs.append(seq)
        self.sids.append(sid)
        self.lines.append(line)
        self.times.append(t)
        self.done.append(_NAN)
        self.pids.append(pid)
        self._index = None

    def extend(self, seqs: array[int], sids: array[int], lines: array[int], times: array[float], pid: int) -> None:
        self.seqs.extend(seqs)
        self.sids.extend(sids)
        self.lines.extend(lines)
        self.times.extend(times)
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
        for arr in (self.seqs, self.sids, self.lines, self.times, self.done, self.pids):
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
        return Call(self.rank, self.group, self.seqs[i], op, reduce_op, dtype, shapes, root, site, self.times[i],
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
        for r, h in sorted(self.history.items()):
            by.setdefault(h.signature(), []).append(r)
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
    key: tuple[int, int]
    rank: int
    enters: list[int]  # line indexes
    exits: list[int]
    times_e: list[bytes]
    times_x: list[bytes]


def _signature(lines: list[bytes]) -> _Signature | None:
    """A digest of a file's call lines with times and the file's rank left out: two files with equal
    digests made the same calls in the same order. None when the file is not the recorder's plain output.

    Every step is a C loop (map, compress, join): this runs on every file of a 1,024-rank job."""
    is_e = list(map(bytes.startswith, lines, repeat(_PE)))
    is_x = list(map(bytes.startswith, lines, repeat(_PX)))
    enters = list(compress(range(len(lines)), is_e))
    if not enters:
        return None
    exits = list(compress(range(len(lines)), is_x))
    calls = list(compress(lines, is_e)) + list(compress(lines, is_x))
    parts = list(map(bytes.rpartition, calls, repeat(b',"time":')))
    if not all(map(itemgetter(1), parts)):
        return None
    heads = list(map(itemgetter(0), parts))
    tails = list(map(itemgetter(2), parts))
    m = _RANK.search(heads[0])
    if m is None:
        return None
    ne = len(enters)
    # Exits in sorted order: calls complete in an order that depends on timing (an async call's exit is
    # written when its work is seen done), and what a file's exits give (each group's last completed seq)
    # does not depend on their order. Enters keep theirs: that order is what the check compares.
    text = b"\n".join(heads[:ne]) + b"\x00" + b"\n".join(sorted(heads[ne:]))
    if b'"rank":#' in text or _TIMES.fullmatch(b"\n".join(tails) + b"\n") is None:
        return None
    text = text.replace(b',"rank":' + m.group(1) + b",", b',"rank":#,')
    # The interpreter's own (seeded) hash and the length: a collision needs 2^64 tries and the seed.
    return _Signature((hash(text), len(text)), int(m.group(1)), enters, exits,
                      tails[:ne], tails[ne:])


def _read_lines(path: str) -> list[bytes] | None:
    """The file's lines, or None when it is too large to hold (then it is streamed)."""
    from commdoctor.core.safeopen import open_input

    with open_input(path) as f:
        data = f.read(BULK_MAX + 1)
    if len(data) > BULK_MAX:
        return None
    lines = data.split(b"\n")
    if lines[-1] == b"":
        lines.pop()
    return lines


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

    def read(self, path: str, pid: int) -> None:
        self.fold.begin(path)
        try:
            lines = _read_lines(path)
            if lines is None:  # too large to hold: line by line
                for n, x in enumerate(records.iter_entries(path, MAX_LINE), 1):
                    self.item(n, x, path, pid)
            else:
                self.read_lines(lines, path, pid)
        except OSError:
            self.bad += 1
        self.fold.end()

    def read_lines(self, lines: list[bytes], path: str, pid: int) -> None:
        sig = _signature(lines) if max(map(len, lines), default=0) <= MAX_LINE else None
        shape = self.shapes.get(sig.key) if sig is not None else None
        if sig is not None and shape is not None and records._rank(sig.rank) is not None:
            self.like(shape, sig, lines, path, pid)
            return
        # Read every line; when the file is the recorder's plain output of one rank, keep its shape.
        parse, memo = records.parse_line, self.memo
        collect: dict[str, list[Any]] | None = {} if sig is not None and sig.key not in self.shapes else None
        plain = collect is not None
        enters = set(sig.enters) if sig is not None else set()
        exits = set(sig.exits) if sig is not None else set()
        completed: dict[str, int] = {}
        j = 0
        for i, raw in enumerate(lines):
            n = i + 1
            if len(raw) > MAX_LINE:
                x: Any = None
            else:
                x = parse(raw, memo)
            if type(x) is tuple:
                if plain and (x[3]["rank"] != sig.rank or (i not in enters and i not in exits)):  # type: ignore[union-attr]
                    plain = False
                self.call(n, x, pid, collect if plain else None, j)
                if x[0] == "enter":
                    j += 1
                elif plain and x[1] >= 0:
                    gname = str(x[3]["group"])
                    completed[gname] = max(completed.get(gname, -1), x[1])
            else:
                if plain and (i in enters or i in exits):
                    plain = False
                self.item(n, x, path, pid)
        if sig is not None and sig.key not in self.shapes:
            self.shapes[sig.key] = _Shape(sig.rank, {g: (array("q", v[0]), array("q", v[1]), array("q", v[2]))
                                                     for g, v in (collect or {}).items()}, completed) if plain else None

    def like(self, shape: _Shape, sig: _Signature, lines: list[bytes], path: str, pid: int) -> None:
        """A file whose call lines are another file's, but for its rank and times: those come from it."""
        rank = sig.rank
        te = list(map(float, map(bytes.rstrip, sig.times_e, repeat(b"}"))))
        tx = list(map(float, map(bytes.rstrip, sig.times_x, repeat(b"}"))))
        top = max(max(te, default=-_INF), max(tx, default=-_INF))
        if top > -_INF:
            self.seen(rank, top)
        for gname, (pos, seqs, sids) in shape.groups.items():
            g = self.groups.setdefault(gname, GroupPicture(gname))
            h = self.hist(g, rank)
            enters = sig.enters
            h.extend(seqs, sids, array("q", map(int.__add__, map(enters.__getitem__, pos), repeat(1))),
                     array("d", map(te.__getitem__, pos)), pid)
            if len(h.seqs) > 2 * KEEP:
                self.cut = h.keep_last(KEEP) or self.cut
        for gname, seq in shape.completed.items():
            g = self.groups.setdefault(gname, GroupPicture(gname))
            if seq > g.completed.get(rank, -1):
                g.completed[rank] = seq
        memo = self.memo
        for idx in (sig.enters, sig.exits):  # the progress: this rank's last enter and exit
            if idx:
                x = records.parse_line(lines[idx[-1]], memo)
                if type(x) is tuple:
                    self.fold.call(rank, x)
        other = [True] * len(lines)
        for idx in (sig.enters, sig.exits):
            for i in idx:
                other[i] = False
        for i in compress(range(len(lines)), other):
            raw = lines[i]
            self.item(i + 1, None if len(raw) > MAX_LINE else records.parse_line(raw, memo), path, pid)

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


def load(paths: Iterable[str], progress: Any = None) -> HookRecords | None:
    """Everything the records say, or None when ``paths`` hold no records file.

    One pass over each file (the ranks' progress is folded in the same pass). The recorder's call
    lines take the fast path of ``records.parse_line``; a rank's calls are kept as arrays
    (``History``). A file whose call lines are, but for the rank and the times, those of a file
    already read (ranks of one job that made the same calls) is read in bulk: its times, line
    numbers and other lines from it, the parsed calls from the first. So the cost is one parse per
    distinct history plus a few byte operations per line, and memory a few bytes a call.
    ``progress(what, done, total)``, when given, is called before each file (the callers' meters).
    """
    files = find_files(paths)
    if not files:
        return None
    ld = _Loader(files)
    for pid, path in enumerate(files):
        if progress is not None:
            progress("reading records", pid, len(files))
        ld.read(path, pid)
    return ld.result()


def register(facts: Any, paths: Iterable[str], progress: Any = None) -> bool:
    """Provide the ``hook_records`` fact when ``paths`` hold records; True if they did."""
    rec = load(paths, progress)
    if rec is None:
        return False
    facts.provide(FACT, rec)
    return True
