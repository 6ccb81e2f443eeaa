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
from array import array
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from commdoctor import records

FACT = "hook_records"
#: Per group and rank, how many past entries are kept to find where ranks first disagree.
KEEP = 20000
_NAN = float("nan")


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


def load(paths: Iterable[str]) -> HookRecords | None:
    """Everything the records say, or None when ``paths`` hold no records file.

    One pass over each file (the ranks' progress is folded in the same pass). The recorder's call
    lines take the fast path of ``records.iter_entries``; a rank's calls are kept as arrays
    (``History``), so memory and time grow with the number of lines and little else.
    """
    files = find_files(paths)
    if not files:
        return None
    fold = records.ProgressFold()
    groups: dict[str, GroupPicture] = {}
    interned: dict[str, dict[tuple[Any, ...], int]] = {}  # group -> static -> sid
    by_tpl: dict[int, tuple[dict[str, Any], str, int]] = {}  # id(fields) -> (fields kept alive, group, sid)
    mismatches: list[tuple[int, int, dict[str, Any]]] = []
    warnings: list[tuple[int, int, str, str]] = []
    backend: list[tuple[int, int, str, dict[str, Any]]] = []
    world: int | None = None
    bad = 0
    last_time: float | None = None
    last_seen: dict[int, float] = {}
    cut = False

    def sid_of(gname: str, g: GroupPicture, static: tuple[Any, ...]) -> int:
        table = interned.setdefault(gname, {})
        k = (static[0], static[1], static[2], repr(static[3]), static[4], static[5])
        sid = table.get(k)
        if sid is None:
            sid = table[k] = len(g.statics)
            g.statics.append(static)
        return sid

    def hist(g: GroupPicture, rank: int, gname: str) -> History:
        h = g.history.get(rank)
        if h is None:
            h = g.history[rank] = History(rank, gname, g.statics, files)
        return h

    for pid, path in enumerate(files):
        fold.begin(path)
        try:
            items = records.iter_entries(path)
            n = 0
            for x in items:
                n += 1
                if type(x) is tuple:  # an enter/exit line as the recorder writes it
                    kind, seq, t, tpl = x
                    rank = tpl["rank"]
                    fold.call(rank, x)
                    if last_time is None or t > last_time:
                        last_time = t
                    if t > last_seen.get(rank, t - 1.0):
                        last_seen[rank] = t
                    if seq < 0:
                        continue
                    hit = by_tpl.get(id(tpl))
                    if hit is None:
                        gname = str(tpl["group"])
                        g = groups.setdefault(gname, GroupPicture(gname))
                        static = (str(tpl.get("op")), tpl.get("reduce_op"), tpl.get("dtype"), tpl.get("shapes"),
                                  tpl.get("root"), tpl.get("site"))
                        hit = by_tpl[id(tpl)] = (tpl, gname, sid_of(gname, g, static))
                    gname, sid = hit[1], hit[2]
                    g = groups[gname]
                    if kind == "enter":
                        h = hist(g, rank, gname)
                        h.add(seq, sid, n, t, pid)
                        if len(h.seqs) > 2 * KEEP:
                            cut = h.keep_last(KEEP) or cut
                    else:
                        if seq > g.completed.get(rank, -1):
                            g.completed[rank] = seq
                        h0 = g.history.get(rank)
                        if h0 is not None:
                            h0.complete(seq, t)
                    continue
                if x is None:
                    fold.bad()
                    bad += 1
                    continue
                d: dict[str, Any] = x  # type: ignore[assignment]
                fold.line(d)
                try:
                    rank = records._rank(d.get("rank"))
                    if rank is None:
                        raise ValueError("no rank")
                    kind = d.get("kind")
                    t = d.get("time")
                    if isinstance(t, (int, float)):
                        last_time = t if last_time is None else max(last_time, t)
                        last_seen[rank] = max(last_seen.get(rank, t), t)
                    if kind == "header":
                        ws = records.world_size(d.get("world_size"))
                        if ws is not None:
                            world = max(world or 0, ws)
                    elif kind in ("enter", "exit"):
                        seq = d["seq"]
                        if type(seq) is not int or not isinstance(d["group"], (str, int)):
                            raise ValueError("seq must be an int, group a name")
                        tf = float(t or 0.0)  # before the group is made: a damaged line leaves no empty group behind
                        if tf != tf or tf in (float("inf"), float("-inf")):
                            raise ValueError("time is not a number")
                        if seq < 0:  # point-to-point and unchecked calls: not part of a group's order
                            continue
                        gname = str(d["group"])
                        g = groups.setdefault(gname, GroupPicture(gname))
                        if kind == "enter":
                            static = (str(d.get("op")), d.get("reduce_op"), d.get("dtype"), d.get("shapes"),
                                      d.get("root"), d.get("site"))
                            h = hist(g, rank, gname)
                            h.add(seq, sid_of(gname, g, static), n, tf, pid)
                            if len(h.seqs) > 2 * KEEP:
                                cut = h.keep_last(KEEP) or cut
                        else:
                            g.completed[rank] = max(g.completed.get(rank, -1), seq)
                            h0 = g.history.get(rank)
                            if h0 is not None:
                                h0.complete(seq, tf)
                    elif kind == "mismatch":
                        if not isinstance(d.get("detail"), dict):
                            raise ValueError("a mismatch record without its detail")
                        mismatches.append((rank, n, d))
                    elif kind == "warning":
                        warnings.append((rank, n, path, str(d.get("message", ""))))
                    elif kind == "backend" and len(backend) < 4096:  # commdoctor.hooks.backendwatch's notice
                        if not all(isinstance(d.get(k), (int, float)) and not isinstance(d.get(k), bool)
                                   for k in ("bytes", "time_s")):
                            raise ValueError("a backend notice without its figures")
                        backend.append((rank, n, path, d))
                except (KeyError, TypeError, ValueError, ArithmeticError):
                    bad += 1
        except OSError:
            bad += 1
        fold.end()
    # A group seen only in exit records (its enter lines damaged or cut off) tells no check where a rank is.
    groups = {k: g for k, g in groups.items() if g.history}
    for g in groups.values():
        for r, h in g.history.items():
            cut = h.keep_last(KEEP) or cut
            g.entered[r] = h.call_at(len(h.seqs) - 1)  # the last enter line read, as before
    return HookRecords(paths=files, ranks=fold.result(), groups=groups, mismatches=mismatches, warnings=warnings,
                       world_size=world, bad_lines=bad, last_time=last_time, last_seen=last_seen,
                       truncated=cut, backend=backend)


def register(facts: Any, paths: Iterable[str]) -> bool:
    """Provide the ``hook_records`` fact when ``paths`` hold records; True if they did."""
    rec = load(paths)
    if rec is None:
        return False
    facts.provide(FACT, rec)
    return True
