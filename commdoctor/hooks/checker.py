"""Cross-rank verification of collective calls: what each rank compares, and when.

Promise: standard library only, no I/O of its own (it is handed a ``send``
function), every wait bounded. Each rank tells the members of a group, for every
collective it enters, the call's fingerprint and call site; every rank then
compares the same entries and reaches the same verdict, so all members raise
together, naming every rank's call.

A fingerprint is ``op|reduce_op|dtype|shapes|root|device`` (see ``FIELDS``): the
things that must agree across ranks for a collective to pair up correctly. The
call site is not part of it (rank-dependent branches may call matching
collectives from different lines), but sites are used to recognise a skipped
or reordered call of the same shape: the call-site sequences of two ranks are
then shifted by one (see ``_find_shift``).

Verdicts: ``None`` (agree), a ``Mismatch`` (disagree; every rank raises or, in
report mode, logs), or ``UNVERIFIED`` (a peer did not answer in time and the
call went on unchecked; checked later when the peer's entry arrives).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable

FIELDS = ("op", "reduce_op", "dtype", "shapes", "root", "device")
FIELD_TITLES = {"op": "operation", "reduce_op": "reduce op", "dtype": "dtype", "shapes": "shapes",
                "root": "root rank", "device": "device type"}
#: How many past sequence numbers per group are kept for shift detection and messages.
HISTORY = 16


def make_fp(op: str, reduce_op: str | None, dtype: str | None, shapes: str, root: int | None, device: str | None) -> str:
    return f"{op}|{reduce_op or ''}|{dtype or ''}|{shapes}|{'' if root is None else root}|{device or ''}"


def split_fp(fp: str) -> dict[str, str]:
    parts = fp.split("|")
    parts += [""] * (len(FIELDS) - len(parts))
    return dict(zip(FIELDS, parts))


def describe(fp: str, site: str | None = None) -> str:
    """``all_reduce(SUM) float32 [[1024]] at train.py:88``."""
    d = split_fp(fp)
    out = d["op"] + (f"({d['reduce_op']})" if d["reduce_op"] else "")
    if d["dtype"]:
        out += f" {d['dtype']}"
    shapes = d["shapes"]
    if shapes.startswith("[[") and shapes.endswith("]]"):
        out += " " + shapes[1:-1].replace("],[", "], [").replace("-1", "*")
    elif shapes and shapes != "[]":
        out += f" {shapes}"
    if d["root"]:
        out += f" root={d['root']}"
    if site:
        out += f" at {site}"
    return out


def ranks_text(ranks: "list[int] | tuple[int, ...]") -> str:
    rs = sorted(ranks)
    out: list[str] = []
    i = 0
    while i < len(rs):
        j = i
        while j + 1 < len(rs) and rs[j + 1] == rs[j] + 1:
            j += 1
        out.append(str(rs[i]) if i == j else (f"{rs[i]}, {rs[j]}" if j == i + 1 else f"{rs[i]}-{rs[j]}"))
        i = j + 1
    return ("rank " if len(rs) == 1 else "ranks ") + ", ".join(out)


@dataclass
class Mismatch:
    """Ranks disagree. ``text`` is the message every rank raises or logs."""

    kind: str  # fingerprint | order | shift | left | p2p | remote
    group: str
    seq: int
    text: str
    calls: list[dict[str, Any]] = field(default_factory=list)  # one per rank: rank, op, ..., site
    differ: list[str] = field(default_factory=list)
    origin: int | None = None  # rank that detected it (for "remote")
    who: list[int] = field(default_factory=list)  # the rank(s) out of step (shift, order, left)

    def detail(self) -> dict[str, Any]:
        return {"kind": self.kind, "group": self.group, "seq": self.seq, "differ": list(self.differ),
                "calls": list(self.calls), "origin": self.origin, "who": list(self.who)}


class _Unverified:
    def __repr__(self) -> str:
        return "UNVERIFIED"


UNVERIFIED: Any = _Unverified()
STALL = "stall"


@dataclass
class GroupState:
    name: str
    members: tuple[int, ...]  # global ranks, in group-rank order
    desc: str = ""
    seq: int = 0  # this rank's next sequence number in this group
    p2p_seq: int = 0  # point-to-point calls count down from -1 (checked pairwise, not in the group's order)
    entries: dict[int, dict[int, tuple[str, str]]] = field(default_factory=dict)  # seq -> rank -> (fp, site)
    verdicts: dict[int, Any] = field(default_factory=dict)  # seq -> None | Mismatch | UNVERIFIED
    gone: dict[int, tuple[str, int]] = field(default_factory=dict)  # rank -> (why, its last seq) once it left
    p2p_count: dict[tuple[str, int, int], int] = field(default_factory=dict)  # (dir, peer, tag) -> next index
    others: tuple[int, ...] = ()  # members but this rank (set by the checker)
    last_key: Any = None  # (fp, site) of this rank's previous call in this group
    steps: set[Any] = field(default_factory=set)  # (previous call, call) pairs this rank has made

    def title(self) -> str:
        who = ranks_text(self.members)
        return f"{self.desc or 'group ' + self.name} ({who})"


class Checker:
    """One per rank. Thread-safe: callers enter from training threads, messages arrive on the reader thread."""

    def __init__(self, rank: int, send: Callable[..., None], *,
                 on_mismatch: Callable[[Mismatch], None], check_sites: bool = True,
                 pump: Callable[[float], bool] | None = None,
                 queue: Callable[[tuple[Any, Any]], None] | None = None) -> None:
        self.rank = rank
        self._send = send
        # Takes (peers, fields) of a message that may go out with the next batch (the mesh's queue);
        # without one, such messages are sent with ``send(..., later=True)``.
        self._queue = queue
        # Reads and files peers' messages, waiting up to its argument; False when another thread reads.
        self._pump = pump
        # Poll this long before sleeping in select: a peer entering the same call within it is seen
        # without a sleep and wake-up, which on a loaded machine costs more than the poll.
        self.spin_s = 0.0
        self._on_mismatch = on_mismatch
        self.check_sites = check_sites
        self._lock = threading.Lock()
        self.cond = threading.Condition(self._lock)
        self._waiting = 0  # threads in cond.wait: nobody to wake, no notify (it costs a few µs)
        self.groups: dict[str, GroupState] = {}
        self.stopped: set[int] = set()  # peers that stopped checking (uninstall, lost channel)
        self.active = True
        self.poison: Mismatch | None = None  # the first mismatch this rank learnt of
        self._p2p: dict[tuple[str, int, int, int, int], dict[str, tuple[str, str, str]]] = {}
        self._reported: set[tuple[str, int]] = set()

    # -- groups ---------------------------------------------------------------

    def add_group(self, name: str, members: "tuple[int, ...]", desc: str = "") -> GroupState:
        with self.cond:
            g = self.groups.get(name)
            if g is None:
                g = self.groups[name] = GroupState(name=name, members=tuple(members), desc=desc)
            elif not g.members:  # peers' entries arrived before the group existed here: keep them
                g.members, g.desc = tuple(members), desc
                for s in list(g.entries):
                    self._maybe_verify(g, s)
            g.others = tuple(m for m in g.members if m != self.rank)
            return g

    def drop_group(self, name: str) -> None:
        with self.cond:
            self.groups.pop(name, None)

    # -- collectives ----------------------------------------------------------

    def publish(self, g: GroupState, seq: int, fp: str, site: str, later: bool = False,
                entry: tuple[str, str] | None = None) -> None:
        """Record our own entry and tell the other members (call before ``wait``).

        ``later``: the entry of a call that does not wait for the verdict goes out with the next
        batch (the hooks' ticker writes every 50 ms), sparing the caller a system call.
        ``entry``: the caller's ``(fp, site)`` tuple, if it has one (saves building another).
        """
        msg = ("C", g.name, str(seq), fp, site)
        if not later:  # send first: the peers learn of it as early as possible
            self._send(g.others, msg)
        elif self._queue is not None:
            self._queue((g.others, msg))
        else:
            self._send(g.others, msg, later=True)
        with self._lock:
            e = g.entries.get(seq)
            if e is None:
                e = g.entries[seq] = {}
            e[self.rank] = entry or (fp, site)
            if len(e) >= len(g.members) or self.stopped or g.gone:
                self._maybe_verify(g, seq)
            if not seq & 15:
                self._prune(g, seq)

    def wait(self, g: GroupState, seq: int, timeout: float, expired: Any = UNVERIFIED) -> Any:
        """The verdict on call ``seq`` once every member entered it, or ``expired`` after ``timeout`` s.

        For a call the caller waits on anyway, ``timeout`` is the group's own
        timeout and ``expired`` is STALL; for an async call it is short and
        ``expired`` is UNVERIFIED: the call goes on unchecked, and is checked
        when the late entries arrive.
        """
        deadline = time.monotonic() + timeout
        spin_until: float | None = None
        while True:
            with self.cond:
                if self.poison is not None:  # the first mismatch this rank learnt of explains the rest
                    return self.poison
                if seq in g.verdicts:
                    return g.verdicts[seq]
                if not self.active:
                    return UNVERIFIED
                left = self._left_before(g, seq)
                if left is not None:
                    return self._conclude(g, seq, left)
                now = time.monotonic()
                if now >= deadline:
                    if expired is UNVERIFIED:
                        g.verdicts[seq] = UNVERIFIED
                    return expired
                if self._pump is None:
                    self._waiting += 1
                    try:
                        self.cond.wait(min(deadline - now, 0.5))
                    finally:
                        self._waiting -= 1
                    continue
            # Read the peers' messages in this thread: the kernel wakes it when they arrive.
            if spin_until is None:
                spin_until = now + self.spin_s
            wait_s = 0.0 if now < spin_until else min(deadline - now, 0.05)
            if not self._pump(wait_s):
                with self.cond:  # another thread is reading; it notifies when it files something
                    if seq not in g.verdicts:
                        self._waiting += 1
                        try:
                            self.cond.wait(0.005)
                        finally:
                            self._waiting -= 1

    def _left_before(self, g: GroupState, seq: int) -> Mismatch | None:
        """A member that left the group (destroyed it, uninstalled, exited) before reaching ``seq``."""
        if not g.gone:
            return None
        mine = g.entries.get(seq, {}).get(self.rank)
        if mine is None:
            return None
        gone = [(r, why, last) for r, (why, last) in g.gone.items() if last < seq and r not in g.entries.get(seq, {})]
        if not gone:
            return None
        present = sorted(g.entries.get(seq, {}))
        calls = [_call(r, *g.entries[seq][r]) for r in present]
        lines = [f"  {ranks_text([r])}: {describe(*g.entries[seq][r])}" for r in present]
        for r, why, last in gone:
            calls.append({"rank": r, "op": None, "site": None, "left": why, "last_seq": last})
            lines.append(f"  {ranks_text([r])}: made no such call; it {why} after #{last}")
        text = (f"{ranks_text(present)} entered collective #{seq} of {g.title()}, but "
                f"{ranks_text([r for r, _, _ in gone])} left without making it "
                f"(a skipped collective, or a rank that stopped early):\n" + "\n".join(lines))
        return Mismatch("left", g.name, seq, text, calls, ["presence"], who=[r for r, _, _ in gone])

    def _maybe_verify(self, g: GroupState, seq: int) -> None:
        """Decide on ``seq`` if every member still checking has entered it (caller holds the lock)."""
        if seq in g.verdicts and g.verdicts[seq] is not UNVERIFIED:
            return
        left = self._left_before(g, seq)
        if left is not None:  # a member left before this call: that is the verdict, not "the rest agree"
            self._conclude(g, seq, left)
            return
        got = g.entries.get(seq, {})
        if self.stopped or g.gone:
            need: Any = [m for m in g.members if m not in self.stopped and m not in g.gone]
        else:
            need = g.members
        for m in need:
            if m not in got:
                return
        if len(got) == len(need):
            # The common case: every member sent the same entry (same fingerprint, same site), so
            # neither the fingerprints nor the sites can disagree. Compared by identity first:
            # a rank's own entries are the same tuple object call after call.
            first = None
            for v in got.values():
                if first is None:
                    first = v
                elif v is not first and v != first:
                    break
            else:
                self._conclude(g, seq, None)
                return
        verdict = self._compare(g, seq, got)
        self._conclude(g, seq, verdict)

    def _conclude(self, g: GroupState, seq: int, verdict: Mismatch | None) -> Mismatch | None:
        g.verdicts[seq] = verdict
        if verdict is not None:
            self._raise_flag(verdict)
            self.cond.notify_all()
        elif self._waiting:
            self.cond.notify_all()
        return verdict

    def _raise_flag(self, m: Mismatch) -> None:
        key = (m.group, m.seq)
        if key in self._reported:
            return
        self._reported.add(key)
        if self.poison is None:
            self.poison = m
        try:
            self._on_mismatch(m)
        except Exception:  # noqa: BLE001 - reporting must not break checking
            pass

    def _compare(self, g: GroupState, seq: int, got: dict[int, tuple[str, str]]) -> Mismatch | None:
        fps = {fp for fp, _ in got.values()}
        if len(fps) > 1:
            return self._fp_mismatch(g, seq, got)
        if self.check_sites:
            return self._find_shift(g, seq)
        return None

    def _fp_mismatch(self, g: GroupState, seq: int, got: dict[int, tuple[str, str]]) -> Mismatch:
        by: dict[tuple[str, str], list[int]] = {}
        for r in sorted(got):
            by.setdefault(got[r], []).append(r)
        parts = [split_fp(fp) for fp, _ in by]
        differ = [f for f in FIELDS if len({p[f] for p in parts}) > 1]
        if "op" in differ:  # another operation: its other fields differ as a matter of course
            differ = ["op"]
        # Largest agreeing set first: usually "everyone but one".
        rows = sorted(by.items(), key=lambda kv: (-len(kv[1]), kv[1]))
        width = max(len(ranks_text(rs)) for _, rs in rows)
        lines = [f"  {ranks_text(rs) + ':':<{width + 1}} {describe(fp, site)}" for (fp, site), rs in rows]
        what = ", ".join(FIELD_TITLES[f] for f in differ)
        text = f"ranks disagree on collective #{seq} of {g.title()}: they differ in {what}\n" + "\n".join(lines)
        calls = [_call(r, *got[r]) for r in sorted(got)]
        return Mismatch("fingerprint", g.name, seq, text, calls, differ)

    def _find_shift(self, g: GroupState, seq: int) -> Mismatch | None:
        """Same fingerprints, but the call sites show two calls paired with the wrong partners.

        Two patterns, over the sites of the last calls of two ranks a and b:
        - crossed: a called X then Y where b called Y then X (two calls swapped);
        - shifted: b's sites run one behind a's for two calls (b's site at s is
          a's at s-1, b's at s-1 is a's at s-2): b skipped a's call s-1.
        Legitimate rank-dependent branches calling matching collectives from
        different lines fit neither pattern.
        """
        e0, e1, e2 = g.entries.get(seq, {}), g.entries.get(seq - 1, {}), g.entries.get(seq - 2, {})
        ranks = sorted(e0)
        if len({e0[r][1] for r in ranks}) < 2:
            return None
        pairs = []
        for a in ranks:
            for b in ranks:
                if a == b or a not in e1 or b not in e1:
                    continue
                a0, a1, b0, b1 = e0[a][1], e1[a][1], e0[b][1], e1[b][1]
                if a0 != b0 and a1 != b1:
                    pairs.append((a, b, a0, a1, b0, b1))
        for a, b, a0, a1, b0, b1 in pairs:  # the shifted pattern first: it rests on three calls
            if a in e2 and b0 == a1 and b1 == e2[a][1]:
                fp_skipped, site_skipped = e1[a]
                text = (f"call order differs at collective #{seq - 1} of {g.title()}: "
                        f"{ranks_text([b])} made no call matching {ranks_text([a])}'s "
                        f"{describe(fp_skipped, site_skipped)}; its calls are one behind since, "
                        f"so collectives of the same shape paired with the wrong partners "
                        f"(a skipped collective, or two collectives called in the other order):\n"
                        f"  #{seq - 1}: {ranks_text([a])} {describe(*e1[a])}; {ranks_text([b])} {describe(*e1[b])}\n"
                        f"  #{seq}: {ranks_text([a])} {describe(*e0[a])}; {ranks_text([b])} {describe(*e0[b])}")
                calls = [_call(r, *e[r], seq=s) for r in (a, b) for s, e in ((seq - 1, e1), (seq, e0))]
                return Mismatch("shift", g.name, seq - 1, text, calls, ["order"], who=[b])
        for a, b, a0, a1, b0, b1 in pairs:
            if a < b and a0 == b1 and a1 == b0:
                text = (f"call order differs at collectives #{seq - 1} and #{seq} of {g.title()}: "
                        f"{ranks_text([a])} called them in one order, {ranks_text([b])} in the other, "
                        f"so collectives of the same shape paired with the wrong partners:\n"
                        f"  {ranks_text([a])}: #{seq - 1} {describe(*e1[a])}, then #{seq} {describe(*e0[a])}\n"
                        f"  {ranks_text([b])}: #{seq - 1} {describe(*e1[b])}, then #{seq} {describe(*e0[b])}")
                calls = [_call(r, *e[r], seq=s) for r in (a, b) for s, e in ((seq - 1, e1), (seq, e0))]
                return Mismatch("order", g.name, seq - 1, text, calls, ["order"], who=[a, b])
        return None

    def _prune(self, g: GroupState, seq: int) -> None:
        old = seq - HISTORY
        if old > 0 and len(g.entries) > HISTORY + 16:
            for s in [s for s in g.entries if s < old]:
                del g.entries[s]
                g.verdicts.pop(s, None)

    # -- point to point ---------------------------------------------------------

    def p2p(self, g: GroupState, direction: str, peer: int, tag: int, fp: str, site: str) -> Mismatch | None:
        """A send or recv: tell the peer; compare with its side if it is already known."""
        key_local = (direction, peer, tag)
        with self.cond:
            idx = g.p2p_count.get(key_local, 0)
            g.p2p_count[key_local] = idx + 1
        src, dst = (self.rank, peer) if direction == "send" else (peer, self.rank)
        self._send([peer], ("P", g.name, str(src), str(dst), str(tag), str(idx), direction, fp, site))
        return self._p2p_entry(g.name, src, dst, tag, idx, direction, fp, site)

    def _p2p_entry(self, group: str, src: int, dst: int, tag: int, idx: int, direction: str, fp: str, site: str) -> Mismatch | None:
        key = (group, src, dst, tag, idx)
        with self.cond:
            d = self._p2p.setdefault(key, {})
            d[direction] = (fp, site, "")
            if len(d) < 2:
                if len(self._p2p) > 4096:  # unmatched entries (recv_anysource, ...) must not grow forever
                    for k in list(self._p2p)[:1024]:
                        del self._p2p[k]
                return None
            del self._p2p[key]
            (sfp, ssite, _), (rfp, rsite, _) = d["send"], d["recv"]
            if _p2p_bytes(sfp) == _p2p_bytes(rfp):
                return None
            text = (f"point-to-point #{idx} from rank {src} to rank {dst} (tag {tag}) in group {group} does not match: "
                    f"rank {src} sent {describe(sfp, ssite)}; rank {dst} receives into {describe(rfp, rsite)}")
            m = Mismatch("p2p", group, idx, text,
                         [_call(src, sfp, ssite), _call(dst, rfp, rsite)], ["dtype/size"])
            self._raise_flag(m)
            self.cond.notify_all()
            return m

    # -- messages from peers ----------------------------------------------------

    def on_message(self, peer: int, f: list[str]) -> None:
        kind = f[0]
        if kind == "C":  # collective entry: group, seq, fp, site
            with self._lock:
                g = self.groups.get(f[1])
                if g is None:  # the group is not created here yet: keep the entry for when it is
                    g = self.groups[f[1]] = GroupState(name=f[1], members=())
                seq = int(f[2])
                e = g.entries.get(seq)
                if e is None:
                    e = g.entries[seq] = {}
                e[peer] = (f[3], f[4])
                if g.members and (len(e) >= len(g.members) or self.stopped or g.gone):
                    self._maybe_verify(g, seq)
                    if self._waiting:
                        self.cond.notify_all()
        elif kind == "P":
            self._p2p_entry(f[1], int(f[2]), int(f[3]), int(f[4]), int(f[5]), f[6], f[7], f[8])
        elif kind == "D":  # peer destroyed a group (or left): group, its last seq, why
            with self.cond:
                g = self.groups.get(f[1])
                if g is not None:
                    g.gone[peer] = (f[3] if len(f) > 3 else "destroyed the group", int(f[2]))
                    for s in list(g.entries):
                        self._maybe_verify(g, s)
                self.cond.notify_all()
        elif kind == "S":  # peer stopped checking: do not wait for it any more
            with self.cond:
                self.stopped.add(peer)
                for g in self.groups.values():
                    for s in list(g.entries):
                        self._maybe_verify(g, s)
                self.cond.notify_all()
        elif kind == "M":  # a peer found a mismatch: group, seq, text
            with self.cond:
                if self.poison is None:
                    text = f[3].replace("\x1e", "\n")
                    m = Mismatch("remote", f[1], int(f[2]), f"rank {peer} reported: {text}", origin=peer)
                    self._raise_flag(m)
                self.cond.notify_all()

    def peer_left(self, peer: int, why: str) -> None:
        """A peer's channel closed: treat it as no longer checking."""
        with self.cond:
            self.stopped.add(peer)
            for g in self.groups.values():
                for s in list(g.entries):
                    self._maybe_verify(g, s)
            self.cond.notify_all()

    def stop(self) -> None:
        with self.cond:
            self.active = False
            self.cond.notify_all()

    def tell_mismatch(self, peers: list[int], m: Mismatch) -> None:
        self._send(peers, ("M", m.group, str(m.seq), m.text.replace("\n", "\x1e")))

    def tell_destroyed(self, g: GroupState, why: str = "destroyed the group") -> None:
        self._send([p for p in g.members if p != self.rank], ("D", g.name, str(g.seq - 1), why))


def _call(rank: int, fp: str, site: str, seq: int | None = None) -> dict[str, Any]:
    d: dict[str, Any] = {"rank": rank, **split_fp(fp), "site": site or None}
    for k in ("reduce_op", "dtype", "root", "device"):
        if d[k] == "":
            d[k] = None
    if d["root"] is not None:
        try:
            d["root"] = int(d["root"])
        except ValueError:
            pass
    if seq is not None:
        d["seq"] = seq
    return d


def _p2p_bytes(fp: str) -> tuple[str, int]:
    """What must agree between a send and its recv: dtype and element count (gloo moves bytes)."""
    d = split_fp(fp)
    return d["dtype"], numel_of(d["shapes"])


def numel_of(shapes: str) -> int:
    """Total elements of a shapes text like ``[[2, 3], [4]]`` (-1 when it cannot be read)."""
    import json

    try:
        total = 0
        for s in json.loads(shapes):
            n = 1
            for d in s:
                n *= int(d)
            total += n
        return total
    except (ValueError, TypeError):
        return -1
