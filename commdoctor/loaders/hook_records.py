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
from typing import Any, Callable, Iterable

from commdoctor import records

FACT = "hook_records"
#: Per group and rank, how many past entries are kept to find where ranks first disagree.
KEEP = 20000


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


@dataclass
class GroupPicture:
    """Where each rank is in one process group."""

    group: str
    entered: dict[int, Call] = field(default_factory=dict)  # rank -> last call entered
    completed: dict[int, int] = field(default_factory=dict)  # rank -> last seq completed
    history: dict[int, dict[int, Call]] = field(default_factory=dict)  # rank -> seq -> call (last KEEP)

    def in_flight(self, rank: int) -> Call | None:
        e = self.entered.get(rank)
        if e is None or self.completed.get(rank, -1) >= e.seq:
            return None
        return e


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


def load(paths: Iterable[str], on_bytes: Callable[[int], None] | None = None) -> HookRecords | None:
    """Everything the records say, or None when ``paths`` hold no records file.

    ``on_bytes(n)`` reports the work for a meter: the files are read twice (each rank's
    progress, then every call), so the total is twice ``records_bytes(paths)``.
    """
    files = find_files(paths)
    if not files:
        return None
    ranks = records.read_progress(files)
    sizes = {p: _size(p) for p in files} if on_bytes is not None else {}
    if on_bytes is not None:
        on_bytes(sum(sizes.values()))
    groups: dict[str, GroupPicture] = {}
    mismatches: list[tuple[int, int, dict[str, Any]]] = []
    warnings: list[tuple[int, int, str, str]] = []
    backend: list[tuple[int, int, str, dict[str, Any]]] = []
    world: int | None = None
    bad = 0
    last_time: float | None = None
    last_seen: dict[int, float] = {}
    truncated = False
    for path in files:
        if on_bytes is not None:
            on_bytes(sizes.get(path, 0))
        try:
            lines = list(_numbered(path))
        except OSError:
            bad += 1
            continue
        for n, d in lines:
            if d is None:
                bad += 1
                continue
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
                    g = groups.setdefault(str(d["group"]), GroupPicture(str(d["group"])))
                    if kind == "enter":
                        c = Call(rank, str(d["group"]), seq, str(d.get("op")), d.get("reduce_op"), d.get("dtype"),
                                 d.get("shapes"), d.get("root"), d.get("site"), tf, path, n)
                        g.entered[rank] = c
                        h = g.history.setdefault(rank, {})
                        h[seq] = c
                        if len(h) > KEEP:
                            truncated = True
                            for s in sorted(h)[: len(h) - KEEP]:
                                del h[s]
                    else:
                        g.completed[rank] = max(g.completed.get(rank, -1), seq)
                        c0 = g.history.get(rank, {}).get(seq)
                        if c0 is not None:
                            c0.completed = tf
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
    # A group seen only in exit records (its enter lines damaged or cut off) tells no check where a rank is.
    groups = {k: g for k, g in groups.items() if g.entered}
    return HookRecords(paths=files, ranks=ranks, groups=groups, mismatches=mismatches, warnings=warnings,
                       world_size=world, bad_lines=bad, last_time=last_time, last_seen=last_seen,
                       truncated=truncated, backend=backend)


def _numbered(path: str) -> Iterable[tuple[int, dict[str, Any] | None]]:
    for i, d in enumerate(records.iter_lines(path), 1):
        yield i, d


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def records_bytes(paths: Iterable[str]) -> int:
    """The bytes of the records files ``paths`` name (a meter's unit)."""
    return sum(_size(p) for p in find_files(paths))


def register(facts: Any, paths: Iterable[str], on_bytes: Callable[[int], None] | None = None) -> bool:
    """Provide the ``hook_records`` fact when ``paths`` hold records; True if they did."""
    rec = load(paths, on_bytes)
    if rec is None:
        return False
    facts.provide(FACT, rec)
    return True
