"""Installing the hooks: wrap every process group, connect the ranks, record and check each call.

Promise: ``install`` works before or after ``init_process_group`` and
``uninstall`` puts every process group back and restores torch's functions.
Nothing here can stop training on its own account: if the side channel cannot
be set up or is lost, one warning says that checking stopped, and recording
goes on. Only a real disagreement between ranks raises (in "raise" mode).

How a call is checked (the gate). Before a collective is handed to the real
process group, this rank sends its fingerprint and call site to the other
members and waits until their entries for the same sequence number arrive;
all members compare the same entries and reach the same verdict. A
disagreeing call is therefore never handed to gloo: no rank is killed by
gloo's size check (``op.preamble.length <= op.nbytes``), no rank hangs in it,
and no wrong numbers come back. The wait costs about one one-way message
(15 to 30 µs on loopback): the slowest rank finds the others' entries already
there. A blocking call waits as long as the group's timeout (then
``CollectiveStallError`` names the ranks that never came); an async call
(``async_op=True``, DDP's buckets) waits at most ``async_gate_s`` and then goes
on unchecked, so that patterns where a peer needs this rank's later work before
it can enter (async collective, then a send it waits for) cannot deadlock; such
a call is checked when the late entries arrive, and its work handle raises the
mismatch on ``wait``. Point-to-point calls are checked the same way, after the
fact, except that a side that finds its peer's entry already there checks
before sending.

On a backend whose timed wait is destructive or unknown (NCCL: an expired
``Work.wait(timeout)`` aborts the communicator and the process; see
``group.POLL_SAFE``), every collective is gated, for at most ``async_gate_s``
(such a backend's collectives do not hold the CPU, and a program may rely on
that), and the hooks never wait on its work with a timeout of their own.

Where the error appears: in the thread that made the call, from inside the
collective function (``dist.all_reduce``, DDP's backward, ...), on every member
rank; ranks outside the group raise at their next collective, because the
detecting rank tells every rank of the job.
"""

from __future__ import annotations

import atexit
import os
import sys
import threading
import time
import warnings
import weakref
from dataclasses import dataclass, field
from typing import Any, Iterator

from commdoctor.hooks.checker import STALL, UNVERIFIED, Checker, GroupState, Mismatch, describe, ranks_text
from commdoctor.hooks.errors import CollectiveMismatchError, CollectiveStallError

MODES = ("raise", "report", "record", "off")
TICK_S = 0.05
GATES = ("novel", "always", "never")


class HooksWarning(UserWarning):
    """Something the hooks want the user to know; training goes on."""


@dataclass
class Config:
    mode: str = "raise"  # raise | report (log instead) | record (no checking) | off
    records_dir: str | None = "commdoctor-hooks"  # None: no records file
    gate: str = "novel"  # which calls wait for the others' entries before running: novel | always | never
    async_gate_s: float = 1.0  # how long an async call waits for the others' entries
    setup_timeout_s: float = 60.0  # how long to wait for every rank to join the side channel
    check_sites: bool = True  # also catch skipped/reordered calls of the same shape by their call sites
    max_ranks: int = 512  # above this many ranks the side channel is not built (record only)
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_env(cls, **overrides: Any) -> Config:
        env = os.environ
        c = cls()
        c.mode = env.get("COMMDOCTOR_HOOKS_MODE", c.mode).strip().lower() or c.mode
        if "COMMDOCTOR_HOOKS_DIR" in env:
            c.records_dir = env["COMMDOCTOR_HOOKS_DIR"] or None
        c.gate = env.get("COMMDOCTOR_HOOKS_GATE", c.gate).strip().lower() or c.gate
        for name, attr in (("COMMDOCTOR_HOOKS_ASYNC_GATE", "async_gate_s"),
                           ("COMMDOCTOR_HOOKS_SETUP_TIMEOUT", "setup_timeout_s")):
            if env.get(name):
                try:
                    setattr(c, attr, float(env[name]))
                except ValueError:
                    warnings.warn(f"commdoctor.hooks: ignoring {name}={env[name]!r} (not a number)", HooksWarning,
                                  stacklevel=3)
        if env.get("COMMDOCTOR_HOOKS_CHECK_SITES"):
            c.check_sites = env["COMMDOCTOR_HOOKS_CHECK_SITES"].strip() not in ("0", "false", "no", "off")
        for k, v in overrides.items():
            if v is None and k != "records_dir":
                continue
            if not hasattr(c, k):
                raise TypeError(f"install() got an unexpected keyword argument {k!r}")
            setattr(c, k, v)
        from commdoctor.core.errors import CommDoctorError

        if c.mode not in MODES:
            raise CommDoctorError(f"commdoctor.hooks mode {c.mode!r}: choose one of {', '.join(MODES)}")
        if c.gate not in GATES:
            raise CommDoctorError(f"commdoctor.hooks gate {c.gate!r}: choose one of {', '.join(GATES)}")
        return c


class Hooks:
    """The hooks of one installation: wrappers, recorder, side channel, checker."""

    def __init__(self, config: Config) -> None:
        self.config = config
        self.enabled = config.mode != "off"
        self.rank = -1
        self.world_size = 0
        self.recorder: Any = None
        self.mesh: Any = None
        self.checker: Checker | None = None
        self.wrappers: list[weakref.ref[Any]] = []
        self.world: Any = None  # the default group's wrapper
        self._pid = os.getpid()
        self._warned: set[str] = set()
        self._bye: set[int] = set()
        self._lost: dict[int, str] = {}
        self._closing = False
        self._stop = threading.Event()
        self._ticker: threading.Thread | None = None
        self._lock = threading.Lock()

    # -- lifecycle ---------------------------------------------------------------------

    def start_world(self, rank: int, world_size: int, store: Any) -> None:
        """The default group exists: open the records and connect to the other ranks."""
        import torch

        from commdoctor.hooks.recorder import Recorder

        self.rank, self.world_size = rank, world_size
        if self.recorder is None:
            self.recorder = Recorder(rank, world_size, self.config.records_dir, torch_version=torch.__version__,
                                     thread=False)
            if self.recorder.error:
                self.warn(self.recorder.error + "; progress records are off")
            self._ticker = threading.Thread(target=self._tick, name="commdoctor-hooks", daemon=True)
            self._ticker.start()
        self.recorder.store = store
        if self.config.mode in ("raise", "report") and world_size > 1:
            if world_size > self.config.max_ranks:
                self.warn(f"{world_size} ranks is more than max_ranks={self.config.max_ranks}: "
                          "calls are recorded but not checked across ranks")
                return
            self._connect(store)

    def _connect(self, store: Any) -> None:
        from commdoctor.hooks.channel import ChannelError, Mesh

        checker_box: list[Checker] = []

        def on_message(peer: int, fields: list[str]) -> None:
            if fields and fields[0] == "B":  # the peer is ending cleanly: its closing socket is no failure
                self._bye.add(peer)
                checker_box[0].peer_left(peer, "bye")
                return
            checker_box[0].on_message(peer, fields)

        mesh = Mesh(self.rank, self.world_size, on_message, self._on_lost)
        checker = Checker(self.rank, mesh.send, on_mismatch=self._on_mismatch, check_sites=self.config.check_sites,
                          pump=mesh.pump, queue=mesh.queue)
        checker_box.append(checker)
        try:
            global _epoch
            _epoch += 1  # every rank installs at the same points, so epochs agree; keys of an earlier install are not reused
            mesh.connect(store, self.config.setup_timeout_s, tag=f"e{_epoch}")
        except (ChannelError, OSError, RuntimeError, ValueError) as e:
            mesh.close()
            self.warn(f"cross-rank checking is off: {e}. Calls are still recorded.")
            return
        self.mesh, self.checker = mesh, checker

    def _tick(self) -> None:
        """One background thread, every 50 ms: writes the queued entries of ungated calls, reads the
        messages that arrived while no call waited (late entries, mismatch notices for bystanders,
        goodbyes) without waiting, and writes the records. One thread woken 20 times a second."""
        last = 0.0
        while not self._stop.is_set():
            m = self.mesh
            if m is not None:
                try:
                    m.flush()
                    m.pump(0.0)
                except Exception:  # noqa: BLE001 - the next tick retries
                    pass
            now = time.monotonic()
            r = self.recorder
            if r is not None and now - last >= r.interval:
                last = now
                try:
                    r.flush(force=False)
                except Exception as e:  # noqa: BLE001 - recording must never break training
                    self.warn(f"recording stopped: {e!r}")
                    self.recorder = None
            self._stop.wait(TICK_S)

    def end_world(self, why: str) -> None:
        """The default group is being destroyed, or the process exits: say goodbye and stop."""
        if os.getpid() != self._pid:
            return
        c, m = self.checker, self.mesh
        self._closing = True  # peers ending at the same time close their sockets under us: no warning
        if c is not None and m is not None:
            m.flush()
            for g in list(c.groups.values()):
                if g.members and self.rank in g.members:
                    c.tell_destroyed(g, why)
            m.send(m.peers(), ("B",))
            c.stop()
            m.close()
        self.checker, self.mesh = None, None
        self._closing = False
        if self.recorder is not None:
            self.recorder.flush()
            self.recorder.store = None

    def close(self, why: str = "uninstalled the hooks") -> None:
        self.end_world(why)
        self._stop.set()
        if self._ticker is not None and self._ticker is not threading.current_thread() and os.getpid() == self._pid:
            self._ticker.join(2.0)
        if self.recorder is not None and os.getpid() == self._pid:
            self.recorder.close()
        self.enabled = False

    # -- group state -------------------------------------------------------------------------

    def group_state(self, w: Any) -> GroupState:
        import torch.distributed.distributed_c10d as c10d

        ranks = c10d._world.pg_group_ranks.get(w)
        if ranks:
            members = tuple(g for g, _ in sorted(ranks.items(), key=lambda kv: kv[1]))
        else:
            members = (self.rank,)
        name = str(w.group_name)
        desc = "the default group" if w is self.world else f"group {name}" + (
            f" ({w.group_desc})" if w.group_desc not in ("", "undefined") else "")
        if self.checker is not None:
            g = self.checker.add_group(name, members, desc)
        else:
            g = GroupState(name=name, members=members, desc=desc)
        w._cd_state = g
        return g

    def group_ended(self, w: Any) -> None:
        g = w._cd_state
        c = self.checker
        if g is not None and c is not None and self.mesh is not None:
            c.tell_destroyed(g)
            c.drop_group(g.name)
        w._cd_state = None
        if w is self.world:
            self.end_world("destroyed the default group")
            self.world = None

    # -- per call ------------------------------------------------------------------------------

    def recorder_enter(self, call: tuple[Any, ...]) -> None:
        r = self.recorder
        if r is not None:
            r._q.append(("enter", call, _now()))

    def failed(self, call: tuple[Any, ...], err: BaseException) -> None:
        r = self.recorder
        if r is not None:
            r._q.append(("failed", call, _now(), f"{type(err).__name__}: {err}"[:500]))

    def track(self, call: tuple[Any, ...], work: Any) -> list[Any] | None:
        """Watch ``work`` for completion; the returned entry lets a wait mark it done at once."""
        r = self.recorder
        if r is not None and work is not None:
            entry = [work, call, None]
            r._pending.append(entry)
            return entry
        return None

    def before(self, w: Any, g: GroupState, seq: int, fp: str, site: str, async_op: bool, call: tuple[Any, ...],
               gate_all: bool = False) -> bool:
        """Publish the call; wait for the verdict if it is gated. True when it was checked (and agreed) before it runs.

        ``gate_all``: the call goes to a backend whose work the hooks cannot wait on in slices (NCCL,
        any backend not known to be safe): once it is handed over, a mismatch can no longer release
        the ranks that wait for it (their GPU stream waits for a peer that never comes), so it is
        gated whatever ``gate`` says, unless the user chose ``never``, for at most ``async_gate_s``."""
        c = self.checker
        if c is None or not c.active or len(g.members) < 2:
            return True
        raising = self.config.mode == "raise"
        if raising and c.poison is not None:
            raise self._error(c.poison)
        if self._lost:
            self._say_lost(g)
        gate = self.config.gate
        key = (fp, site)  # also this rank's entry, as the checker stores it
        if gate == "novel":
            # Gate a call when this rank has not made this call after the previous one before:
            # the first time round a loop, and wherever this rank's path changes. A loop that
            # repeats itself runs ungated and is checked as the entries arrive.
            step = (g.last_key, key)
            g.last_key = key
            gated = step not in g.steps
            if gated:
                if len(g.steps) > 65536:
                    g.steps.clear()
                g.steps.add(step)
            gated = gated or gate_all
        else:
            gated = gate == "always" or (gate_all and gate != "never")
        c.publish(g, seq, fp, site, later=not gated, entry=key)
        if not gated:
            v = c.poison or g.verdicts.get(seq)  # the others may be ahead: then it is decided already
            if v is not None and v is not UNVERIFIED and raising:
                raise self._error(v)
            return False
        if async_op or gate_all:
            # On a backend whose collectives do not hold the CPU (NCCL: "blocking" calls return once
            # enqueued), a program may rely on running past a collective (to a send its peer waits
            # for before it enters): holding it here until the peers come could deadlock a job that
            # runs without the hooks. Bounded like an async call; checked later if the time runs out.
            v = c.wait(g, seq, self.config.async_gate_s, UNVERIFIED)
        else:
            v = c.wait(g, seq, w._cd_timeout_s(), STALL)
        if v is None:
            return True
        if v is UNVERIFIED:
            return False
        if v is STALL:
            err = self._stall(g, seq, fp, site, w._cd_timeout_s())
            if raising:
                raise err
            self.warn(str(err))
            return False
        if raising:
            raise self._error(v)
        return False

    def poisoned(self) -> Mismatch | None:
        c = self.checker
        return c.poison if c is not None and self.config.mode == "raise" else None

    def before_p2p(self, w: Any, g: GroupState, direction: str, peer: int, tag: int, fp: str, site: str) -> None:
        c = self.checker
        if c is None or not c.active or peer < 0:
            return
        raising = self.config.mode == "raise"
        if raising and c.poison is not None:
            raise self._error(c.poison)
        if self._lost:
            self._say_lost(g)
        peer_global = g.members[peer] if 0 <= peer < len(g.members) else peer
        m = c.p2p(g, direction, peer_global, tag, fp, site)
        if m is not None and raising:
            raise self._error(m)

    def raise_if_known(self, where: tuple[str, int], err: BaseException | None) -> None:
        """From a work handle's wait: raise the mismatch that explains this call, if the hooks know one.

        When the call failed (``err``), a peer that found a mismatch may have raised and left: its
        notice can still be on the way, so read the channel for a moment before giving up.
        """
        c, m = self.checker, self.mesh
        if c is None or self.config.mode != "raise":
            return
        if c.poison is None and err is not None and m is not None:
            end = time.monotonic() + 0.3
            while c.poison is None and time.monotonic() < end:
                if not m.pump(0.02):
                    time.sleep(0.005)
        if c.poison is not None:
            raise self._error(c.poison) from err

    # -- outcomes ----------------------------------------------------------------------------

    def _error(self, m: Mismatch) -> CollectiveMismatchError:
        # About to raise: put the records (the mismatch line, the call that met it) on disk now, not
        # at the next tick. A launcher that sees one rank fail kills the others at once (torchrun
        # sends SIGTERM: no atexit), which would lose up to 50 ms of their records. No store
        # write here: the store may be gone with the rank that hosted it.
        r = self.recorder
        if r is not None:
            try:
                r.flush(force=False, store=False)
            except Exception:  # noqa: BLE001 - recording must never hide the mismatch
                pass
        return CollectiveMismatchError(f"[rank {self.rank}] {m.text}", m, self.rank)

    def _stall(self, g: GroupState, seq: int, fp: str, site: str, timeout: float) -> CollectiveStallError:
        got = g.entries.get(seq, {})
        missing = [r for r in g.members if r not in got]
        lines = []
        for r in missing:
            seen = [(s, e[r]) for s, e in g.entries.items() if r in e]
            if seen:
                s, (rfp, rsite) = max(seen)
                lines.append(f"  rank {r}: last entered #{s}: {describe(rfp, rsite)}")
            else:
                lines.append(f"  rank {r}: entered no collective of this group that this rank saw")
        return CollectiveStallError(
            f"[rank {self.rank}] waited {timeout:g} s in collective #{seq} of {g.title()} "
            f"({describe(fp, site)}) for {ranks_text(missing)}, which never entered it:\n" + "\n".join(lines),
            self.rank)

    def _on_mismatch(self, m: Mismatch) -> None:
        """Once per mismatch, from whichever thread found it: record it, tell bystanders, log in report mode."""
        if self.recorder is not None:
            self.recorder.event("mismatch", {"group": m.group, "seq": m.seq, "message": m.text, "detail": m.detail()})
        c, mesh = self.checker, self.mesh
        if m.kind != "remote" and c is not None and mesh is not None:
            g = c.groups.get(m.group)
            members = g.members if g is not None else ()
            involved = sorted({int(x["rank"]) for x in m.calls if "rank" in x} | set(members))
            # Every rank that found it tells the bystanders (they keep the first report): a witness that then raises
            # and leaves the group has said why on its channel before its departure reaches them, so a bystander
            # never reads that departure as a skipped collective.
            if involved and self.rank in involved:
                c.tell_mismatch([p for p in mesh.peers() if p not in involved], m)
        if self.config.mode == "report":
            self.warn(f"[rank {self.rank}] {m.text}", key=f"mismatch:{m.group}:{m.seq}")

    def _on_lost(self, peer: int, why: str) -> None:
        c = self.checker
        if c is not None:
            c.peer_left(peer, why)
        if c is not None and c.active and peer not in self._bye and not self._closing:
            # Said when a call would have been checked against that rank: a job that is ending
            # (peers exiting at slightly different times) must not print a false alarm.
            self._lost[peer] = why

    def _say_lost(self, g: GroupState) -> None:
        for peer in g.members:
            why = self._lost.get(peer)
            if why is not None and peer not in self._bye:
                self.warn(f"lost the side channel to rank {peer} ({why}); calls are no longer checked against "
                          "that rank (training continues, recording continues)", key="lost")
                return

    def warn(self, msg: str, key: str | None = None) -> None:
        key = key or msg
        with self._lock:
            if key in self._warned:
                return
            self._warned.add(key)
        if self.recorder is not None:
            self.recorder.event("warning", {"message": msg})
        # A plain write, not warnings.warn: it must appear once even from threads and under -W filters.
        try:
            sys.stderr.write(f"commdoctor.hooks: {msg}\n")
            sys.stderr.flush()
        except (OSError, ValueError):
            pass


_now = time.time


# -- wrapping the process groups ----------------------------------------------------------------

_current: Hooks | None = None
_epoch = 0
_orig_helper: Any = None
_install_lock = threading.RLock()


_TABLES = ("pg_map", "pg_names", "pg_group_ranks", "pg_backend_config", "pg_to_tag")


def _alias(src: Any, dst: Any) -> None:
    """Make torch's bookkeeping know ``dst`` exactly as it knows ``src`` (both stay usable)."""
    import torch.distributed.distributed_c10d as c10d

    w = c10d._world
    for name in _TABLES:
        d = getattr(w, name)
        if src in d and dst not in d:
            d[dst] = d[src]


def _promote(old: Any, new: Any) -> None:
    """``new`` becomes the group torch hands out: the default group, tag lookups, the name registry."""
    import torch.distributed.distributed_c10d as c10d
    from torch._C._distributed_c10d import _register_process_group, _unregister_process_group

    w = c10d._world
    for lst in w.tags_to_pg.values():
        for i, p in enumerate(lst):
            if p is old:
                lst[i] = new
    if w.default_pg is old:
        c10d._update_default_pg(new)
    name = new.group_name
    if name:
        try:
            _unregister_process_group(name)
        except (RuntimeError, KeyError):
            pass
        _register_process_group(name, new)


def _forget(pg: Any) -> None:
    import torch.distributed.distributed_c10d as c10d

    w = c10d._world
    for name in (*_TABLES, "pg_coalesce_state"):
        getattr(w, name).pop(pg, None)


def _swap(old: Any, new: Any) -> None:
    """Replace ``old`` by ``new`` in torch's bookkeeping (``old`` is forgotten)."""
    _alias(old, new)
    _promote(old, new)
    _forget(old)


def _wrap(pg: Any, h: Hooks, keep_old: bool = False) -> Any:
    """Wrap ``pg``. ``keep_old``: handles to ``pg`` that the program already holds keep working
    (as aliases of the real group: their calls go straight to it, unchecked)."""
    import torch.distributed as dist

    from commdoctor.hooks.group import HookedProcessGroup

    if pg is None or pg is dist.GroupMember.NON_GROUP_MEMBER or isinstance(pg, HookedProcessGroup):
        return pg
    w = HookedProcessGroup(pg, h)
    _alias(pg, w)
    _promote(pg, w)
    if not keep_old:
        _forget(pg)
    h.wrappers.append(weakref.ref(w))
    return w


def _patched_helper(*args: Any, **kwargs: Any) -> Any:
    try:
        pg, store = _orig_helper(*args, **kwargs)
    except RuntimeError as e:  # e.g. "doesn't have NCCL built in": name the cause and the fallback, then torch's error
        from commdoctor.hooks import backendwatch

        backendwatch.init_failed(e)
        raise
    h = _current
    if h is None or not h.enabled:
        return pg, store
    from commdoctor.hooks.group import HookedProcessGroup

    if isinstance(pg, HookedProcessGroup):  # an existing group found by tag
        return pg, store
    ranks = args[2] if len(args) > 2 else kwargs.get("global_ranks_in_group")
    w = _wrap(pg, h)
    if w is not pg and not ranks:  # the default group: start the world on it
        h.world = w
        try:
            h.start_world(w.rank(), w.size(), store)
        except Exception as e:  # noqa: BLE001 - the hooks must never break init_process_group
            h.warn(f"could not start: {e!r}; the process group works without hooks")
    return w, store


def install(**config: Any) -> Hooks:
    """Switch the hooks on, before or after ``init_process_group``; returns the running hooks.

    Keyword arguments override the environment (``COMMDOCTOR_HOOKS_MODE``,
    ``COMMDOCTOR_HOOKS_DIR``, ...): ``mode`` ("raise", "report", "record",
    "off"), ``records_dir``, ``async_gate_s``, ``setup_timeout_s``,
    ``check_sites``. Call it at the same point on every rank. A second call
    returns the hooks already running.
    """
    global _current, _orig_helper
    import torch.distributed as dist
    import torch.distributed.distributed_c10d as c10d

    with _install_lock:
        if _current is not None:
            return _current
        h = Hooks(Config.from_env(**config))
        if not h.enabled:
            return h
        _current = h
        _orig_helper = c10d._new_process_group_helper
        c10d._new_process_group_helper = _patched_helper
        atexit.register(_at_exit)
        if dist.is_available() and dist.is_initialized():
            from commdoctor.hooks.group import HookedProcessGroup

            default = c10d._get_default_group()
            groups = list(c10d._world.pg_map)
            # Wrappers left from an earlier install (aliases now) come back to life: handles to
            # them that the program holds are checked again.
            revived = {id(p._cd_inner): p for p in groups if isinstance(p, HookedProcessGroup)}
            for w in revived.values():
                w._cd_hooks, w._cd_state = h, None
                _promote(w._cd_inner, w)
                h.wrappers.append(weakref.ref(w))
            for pg in groups:
                if isinstance(pg, HookedProcessGroup) or id(pg) in revived:
                    w = pg if isinstance(pg, HookedProcessGroup) else revived[id(pg)]
                else:
                    w = _wrap(pg, h, keep_old=True)
                if pg is default or (isinstance(pg, HookedProcessGroup) and pg._cd_inner is default):
                    h.world = w
            store = c10d._world.pg_map[h.world][1]
            try:
                h.start_world(h.world.rank(), h.world.size(), store)
            except Exception as e:  # noqa: BLE001
                h.warn(f"could not start: {e!r}; the process groups work without hooks")
        return h


def uninstall() -> None:
    """Put every process group back as it was and stop recording and checking."""
    global _current, _orig_helper
    import torch.distributed.distributed_c10d as c10d

    with _install_lock:
        h = _current
        if h is None:
            return
        if c10d._new_process_group_helper is _patched_helper:
            c10d._new_process_group_helper = _orig_helper
        _current, _orig_helper = None, None
        for ref in h.wrappers:
            w = ref()
            if w is None:
                continue
            if w in c10d._world.pg_map:
                # The real group is handed out again; handles to the wrapper that the program
                # holds (DDP, new_group's result) stay known to torch and pass straight through.
                _alias(w, w._cd_inner)
                _promote(w, w._cd_inner)
            w._cd_hooks = None
        h.close()
        try:
            atexit.unregister(_at_exit)
        except Exception:  # noqa: BLE001
            pass


def current() -> Hooks | None:
    return _current


def _at_exit() -> None:
    h = _current
    if h is not None and os.getpid() == h._pid:
        try:
            h.close("exited")
        except Exception:  # noqa: BLE001 - never fail interpreter shutdown
            pass


def _after_fork_in_child() -> None:
    # DataLoader workers and other forked children must not speak on the parent's sockets.
    h = _current
    if h is not None:
        h.enabled = False


os.register_at_fork(after_in_child=_after_fork_in_child)


def iter_wrappers() -> Iterator[Any]:
    h = _current
    if h is None:
        return
    for ref in h.wrappers:
        w = ref()
        if w is not None:
            yield w
