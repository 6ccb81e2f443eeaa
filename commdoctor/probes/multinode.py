"""``commdoctor run`` inside a job of several nodes: every node checks itself, node 0 gathers the facts.

Promise: a source of facts, not a pipeline. ``NodeRun.exchange`` does the
cross-node steps before the local checks, ``NodeRun.gather`` publishes this
node's report and, on node 0, gathers every node's as the ``multinode`` fact;
the checks that judge them (commdoctor.checks.multinode) run in the one
pipeline (``commdoctor.pipeline.run.run_gathered``), chosen by ``commdoctor run``.
Every wait has a deadline, so a node that never comes, or stops half
way, becomes a finding naming it and what was last seen of it, never a hang.
The exchange goes through the job's own store (commdoctor.probes.jobstore):
torchrun's agent store, or one rank 0 hosts under srun / mpirun. This module
imports neither torch, rich nor textual at module level; the probes it calls
import torch when the job's store is first opened.

The sequence on each node's leader (local rank 0; other local ranks check in
and leave):

1. open the store; write ``node/<i>/stage/joined``; start two listeners (the
   master port number, except on node 0 where the store holds it, and an
   ephemeral port); publish ``node/<i>/info`` (host, versions, NCCL_*/GLOO_*
   settings, interfaces, the address each backend will use, MTU, ports);
2. node 0 waits up to ``join_timeout`` for the others and publishes the roster;
3. every member connects to every other member's ports and reads node 0's
   clock; node 0 waits for everyone's results and names the members whose
   ports all answer for the bandwidth test;
4. those members build a gloo group on the same store and swap 4 MiB with each
   partner in rounds of disjoint pairs;
5. every node runs the local checks (trimmed: one local bandwidth size) and
   publishes its report; node 0 waits and gathers; the pipeline then runs the
   cross-node checks (commdoctor.checks.multinode) on what node 0 gathered, and
   node 0 writes one report with every node.

A job of one node with several processes (``Job.single_node``: torchrun
``--standalone --nproc-per-node N``, ``srun -N1``, ``mpirun`` on one host) takes
the same path with one node: steps 3 and 4 have nobody to talk to and are
left out, the local checks keep their full process-group test, and the only
cross-node check run is the gather (whether every local rank checked in).
"""

from __future__ import annotations

import os
import socket
import sys
import threading
import time
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Callable, Sequence

from commdoctor.core.jobctx import Job
from commdoctor.core.model import CheckResult, Finding, Report, Severity, Stage, Status

if TYPE_CHECKING:
    from commdoctor.pipeline.run import Gathered

#: Settings each node publishes, for the cross-node settings check to compare (which may differ: SETTING_EXEMPT
#: in commdoctor.checks.multinode).
SETTING_PREFIXES = ("NCCL_", "GLOO_", "TORCH_NCCL_", "TORCH_GLOO_")

STAGES = ("joined", "mesh done", "bandwidth done", "local checks started", "local checks done", "reported")

LOCAL_PG_SIZES = (256 << 10,)  # one size: the cross-node test measures the network; see docs/multinode.md
HEARTBEAT_S = 1.0  # each node writes node/<i>/alive this often while it runs
STALE_S = 10.0  # node 0 stops waiting for a node whose heartbeat has not changed for this long
#: A node that wrote its ``joined`` stage but not yet its info when --join-timeout ran out (a slow start on a
#: loaded machine: the local facts it publishes take seconds) gets this much longer, while its heartbeat goes on.
JOIN_GRACE_S = 8.0

# -- one budget for the whole run (docs/multinode.md, "One deadline") ----------------------------------
#: What each later step is kept, in seconds, when an earlier one waits: the mesh (2 s connects, the path-MTU
#: echo's 3 x 0.7 s twice, the clock), the bandwidth plan and pair test, the local checks, and node 0's
#: gather, cross-node checks and printing. A wait ends when what is left of the run falls to what the steps
#: after it are kept, so the report comes before the deadline whichever step a fault stalls.
KEEP_MESH_S = 7.0
KEEP_BANDWIDTH_S = 6.0
KEEP_LOCAL_S = 12.0
KEEP_REPORT_S = 5.0
#: The shortest wait worth making once the budget is nearly spent (a bound, never a hang).
MIN_WAIT_S = 0.5


def default_deadline(join_timeout: float, pg_timeout: float, timeout: float) -> float:
    """The run's budget when ``--deadline`` is not given: about what the steps' own limits add up to when each
    runs into its limit (the join on both sides, the local checks at their timeouts, a minute for the mesh,
    the bandwidth test and the report), so no step is shortened. With the defaults (30, 60, 15): 195 s."""
    return 2 * join_timeout + pg_timeout + timeout + 60.0


class RunBudget:
    """The run's one deadline, from this process's start; every wait below is computed from what is left.

    ``until(keep, cap)``: the moment a wait must end: ``cap`` seconds from now at most, and early
    enough that ``keep`` seconds remain for the steps after it (never in the past: at least
    ``MIN_WAIT_S`` from now, so a spent budget still polls once).
    """

    #: A budget shorter than this keeps proportionally less for each step (the KEEP_* add up to 30 s).
    FULL_S = 60.0

    def __init__(self, total_s: float, t0: float | None = None) -> None:
        self.t0 = time.monotonic() if t0 is None else t0
        self.total_s = float(total_s)
        self.end = self.t0 + self.total_s
        self.scale = min(1.0, self.total_s / self.FULL_S)

    def left(self) -> float:
        return self.end - time.monotonic()

    def keep(self, seconds: float) -> float:
        """What a step is kept, in this budget (scaled down in a short one)."""
        return seconds * self.scale

    def until(self, keep: float, cap: float | None = None) -> float:
        now = time.monotonic()
        at = self.end - self.keep(keep)
        if cap is not None:
            at = min(at, now + cap)
        return max(at, now + MIN_WAIT_S)

    def seconds(self, keep: float, cap: float, floor: float = MIN_WAIT_S) -> float:
        """A timeout to hand a probe: ``until(keep, cap)`` as seconds from now, at least ``floor``."""
        return max(floor, self.until(keep, cap) - time.monotonic())


def settings(environ: dict[str, str] | None = None) -> dict[str, str]:
    env = os.environ if environ is None else environ
    return {k: v for k, v in sorted(env.items()) if k.startswith(SETTING_PREFIXES)}


def node_label(info: dict[str, Any] | None, node: int, job: Job) -> str:
    """How a node is named in findings: its host name, else the launcher's name for it, else node-N."""
    if info and info.get("host"):
        return str(info["host"])
    return job.name_of(node) or f"node-{node:02d}"


def _choices(job: Job, ifaces_raw: list[dict[str, Any]], env: dict[str, str], gpu: bool) -> dict[str, Any]:
    """The interface and address NCCL and gloo will use on this node (commdoctor.core.netselect's rules)."""
    from commdoctor.core import netselect as ns
    from commdoctor.checks.net import resolved_list
    from commdoctor.probes import net

    ifaces = ns.interfaces_from(ifaces_raw)
    host = net.hostname_facts(timeout=3.0)
    out: dict[str, Any] = {"hostname_resolves": [a["address"] for a in host.get("addresses") or ()]}
    for name, choice in (("nccl", ns.nccl_select(ifaces, env)),
                         ("gloo", ns.gloo_select(ifaces, env, host.get("hostname") or socket.gethostname(),
                                                 resolved_list(host)))):
        d = choice.to_dict()
        prim = choice.primary
        if prim:
            iface = next((i for i in ifaces if i.name == prim[0]), None)
            a = next((x for x in iface.addrs if x.address == prim[1]), None) if iface else None
            d["interface"], d["address"] = prim
            d["mtu"] = iface.mtu if iface else None
            d["prefixlen"] = a.prefixlen if a else None
            d["exists"] = iface is not None
        out[name] = d
    out["gpu"] = gpu
    # The backend the job's traffic will take here: NCCL with GPUs, gloo without.
    out["primary"] = "nccl" if out["gpu"] else "gloo"
    return out


class NodeRun:
    """One node's part in the multi-node run: ``exchange`` before the local checks, ``gather`` after them."""

    def __init__(self, job: Job, options: Any, argv: Sequence[str] = (), join_timeout: float = 30.0,
                 say: Callable[[str], None] | None = None, deadline: float | None = None,
                 t0: float | None = None) -> None:
        self.job = job
        self.options = options
        self.argv = list(argv)
        self.join_timeout = join_timeout
        self.say = say or (lambda text: None)
        self.host = socket.gethostname()
        self.store: Any = None
        self.store_error: str | None = None
        self.t0 = time.monotonic()  # --join-timeout counts from here, as the other nodes' joins do
        # The one budget (``--deadline``, from ``t0``: the process's start): every wait below is derived from it.
        self.budget = RunBudget(deadline if deadline is not None else
                                default_deadline(join_timeout, float(options.pg_timeout), float(options.timeout)),
                                t0)
        self.wall0 = time.time()
        self.roster: dict[str, Any] | None = None
        self.listeners: list[Any] = []
        self.notes: list[str] = []
        self.info: dict[str, Any] = {}
        self.remote: list[Any] = []  # NodeReported events for the other nodes, made at the gather
        self.last_stage = "starting"
        self._beats = 0
        self._hb_stop = threading.Event()
        self._seen: dict[int, tuple[Any, float]] = {}  # node -> (last heartbeat value, when it changed here)
        self.gone: set[int] = set()  # nodes whose heartbeat stopped
        self.posted = False  # this node's report is in the store
        self.post_error: str | None = None
        # Set when the launcher stops the run (SIGTERM, Ctrl-C): every wait below ends at once, and node 0
        # reports what it has (docs/multinode.md, "When the launcher stops the run").
        self.stop = threading.Event()
        self.interrupted_at: float | None = None  # seconds after t0
        #: Node 0, once the mesh is judged: called with what is known of every node (the ``multinode`` fact's
        #: shape, no reports yet), so a fault that stops the job is said at once, not after the local checks.
        self.on_mesh: Callable[[dict[str, Any]], None] | None = None
        self.gathered: Gathered | None = None
        #: Facts of the local checks to start computing once joined (``commdoctor run`` names those its plan needs).
        self.prefetch: tuple[str, ...] = ()

    def interrupt(self) -> None:
        """The run was stopped: end every wait now, and keep the store's own operations short."""
        if self.stop.is_set():
            return
        self.interrupted_at = round(time.monotonic() - self.t0, 3)
        self.stop.set()
        self.notes.append(f"the run was interrupted {self.interrupted_at:.1f} s after this node's start, "
                          f"during '{self.last_stage}'")
        if self.store is not None:
            try:
                from datetime import timedelta

                self.store.raw.set_timeout(timedelta(seconds=2))  # a store going away costs 2 s, not 10
            except Exception:  # noqa: BLE001 - the store may be gone already
                pass

    def _peek(self, key: str) -> Any:
        """``store.peek`` that never raises: a store that went away (the launcher stopping) reads as empty."""
        if self.store is None:
            return None
        try:
            return self.store.peek(key)
        except Exception:  # noqa: BLE001 - what was not read is reported as not seen
            return None

    # -- store helpers ---------------------------------------------------------------------------

    def key(self, node: int, what: str) -> str:
        return f"node/{node}/{what}"

    def stage(self, name: str, **extra: Any) -> None:
        if self.store is None:
            return
        self.last_stage = name
        rec = {"stage": name, "time": time.time(), "after_s": round(time.monotonic() - self.t0, 3), **extra}
        try:
            self.store.put(self.key(self.job.node, f"stage/{name}"), rec)
            self.store.put(self.key(self.job.node, "last"), rec)
        except Exception as e:  # noqa: BLE001 - a store that went away is recorded, not fatal
            self.notes.append(f"could not write stage {name!r}: {type(e).__name__}: {e}")

    def _heartbeat(self) -> None:
        while not self._hb_stop.wait(HEARTBEAT_S):
            self._beats += 1
            try:
                self.store.put(self.key(self.job.node, "alive"), {"beat": self._beats, "stage": self.last_stage})
            except Exception:  # noqa: BLE001 - the store went away: node 0 sees the heartbeat stop
                return

    def wait_nodes(self, nodes: Sequence[int], what: str, deadline: float) -> set[int]:
        """Node 0: wait until every node in ``nodes`` has published ``what``, its heartbeat stops, or ``deadline``.

        A heartbeat that has not changed for STALE_S means the node is gone (killed, hung hard, cut off): waiting
        longer for it would only delay the report. Returns the nodes that published.
        """
        have: set[int] = set()
        while True:
            now = time.monotonic()
            for i in nodes:
                if i in have or i in self.gone:
                    continue
                if self._peek(self.key(i, what)) is not None:
                    have.add(i)
                    continue
                beat = self._peek(self.key(i, "alive"))
                prev = self._seen.get(i)
                if prev is None or prev[0] != beat:
                    self._seen[i] = (beat, now)
                elif now - prev[1] > STALE_S:
                    self.gone.add(i)
            if all(i in have or i in self.gone for i in nodes) or now >= deadline or self.stop.is_set():
                return have
            self.stop.wait(0.2)

    def open_store(self) -> bool:
        from commdoctor.probes.jobstore import JobStore, StoreError

        try:
            # Connecting is part of joining: what is left after it must still hold every later step.
            keep = KEEP_MESH_S + KEEP_BANDWIDTH_S + KEEP_LOCAL_S + KEEP_REPORT_S
            self.store = JobStore(self.job, connect_timeout=self.budget.seconds(keep, min(self.join_timeout, 30.0), 1.0))
            threading.Thread(target=self._heartbeat, name="commdoctor-heartbeat", daemon=True).start()
            return True
        except StoreError as e:
            self.store_error = str(e)
        except Exception as e:  # noqa: BLE001 - torch missing or broken: the local checks say more
            self.store_error = f"{type(e).__name__}: {e}"
        return False

    # -- phase 1: join and publish ---------------------------------------------------------------------

    def join(self, ctx: Any) -> None:
        """``ctx``: the local checks' context; the facts read here (interfaces, nvidia-smi, GPUs) are
        computed once and serve the local checks too."""
        from commdoctor.probes import mesh
        from commdoctor.probes.jobstore import versions

        self.stage("joined", host=self.host, pid=os.getpid(), rank=self.job.rank)
        eph = mesh.Listener(0)
        self.listeners.append(eph)
        master_port: int | None = None
        master_why = None
        if self.job.node == 0:
            master_port = self.job.master_port  # the store itself listens there
        elif self.job.master_port:
            lst, master_why = mesh.try_listen(int(self.job.master_port))
            if lst is not None:
                self.listeners.append(lst)
                master_port = lst.port
        ifaces = ctx.fact("net_interfaces")
        env = settings()
        vers = versions()
        smi = ctx.fact("nvidia_smi")
        vers["driver"] = smi.get("driver") if smi.get("present") else None
        self.info = {
            "node": self.job.node, "rank": self.job.rank, "host": self.host, "pid": os.getpid(),
            "launcher": self.job.launcher, "time": time.time(), "versions": vers, "settings": env,
            "interfaces": ifaces, "choices": _choices(self.job, ifaces, dict(os.environ), bool(ctx.fact("net_gpu"))),
            "ports": {"master": master_port, "master_error": master_why, "ephemeral": eph.port},
            "python": sys.version.split()[0],
        }
        self.store.put(self.key(self.job.node, "info"), self.info)

    def wait_roster(self) -> None:
        job = self.job
        keep = KEEP_MESH_S + KEEP_BANDWIDTH_S + KEEP_LOCAL_S + KEEP_REPORT_S
        if job.coordinator:
            deadline = min(self.t0 + self.join_timeout, self.budget.until(keep))
            keys = [self.key(i, "info") for i in range(job.nnodes)]
            have = self._wait_joins(keys, deadline)
            late = [i for i in range(job.nnodes) if self.key(i, "info") not in have
                    and self._peek(self.key(i, "stage/joined")) is not None]
            if late and not self.stop.is_set():
                # Seen joining, still publishing: not "never joined". Its heartbeat stopping ends the wait early.
                got = self.wait_nodes(late, "info", min(time.monotonic() + JOIN_GRACE_S, self.budget.until(keep)))
                have |= {self.key(i, "info") for i in got}
            members = [i for i in range(job.nnodes) if self.key(i, "info") in have]
            self.roster = {"members": members, "missing": [i for i in range(job.nnodes) if i not in members],
                           "nnodes": job.nnodes, "expected": job.expected_nodes,
                           "waited_s": round(time.monotonic() - self.t0, 3)}
            self.store.put("roster", self.roster)
        else:
            # Node 0 waits join_timeout from its own start; ours may have begun a little earlier or later, so
            # this node waits a little longer (part of the mesh step's share) than node 0's join can last.
            got = self.store.wait(["roster"], min(self.t0 + self.join_timeout + 15.0,
                                                  self.budget.until(keep - KEEP_MESH_S / 2)), stop=self.stop)
            self.roster = self.store.peek("roster") if got else None

    def _wait_joins(self, keys: Sequence[str], deadline: float) -> set[str]:
        """``store.wait`` in one-second slices, so a terminal shows how many nodes have joined
        (render/progress.py: never with --json or in a pipe). The deadline is the same."""
        import sys

        from commdoctor.render.progress import progress

        show = not self.options.extra.get("json") and sys.stderr.isatty()
        with progress(len(keys), "waiting for the nodes to join", enabled=show) as meter:
            while True:
                have = self.store.wait(keys, min(deadline, time.monotonic() + 1.0), stop=self.stop)
                meter.update(len(have))
                if len(have) == len(keys) or time.monotonic() >= deadline or self.stop.is_set():
                    return have

    # -- phase 2: reachability and clock ---------------------------------------------------------

    def mesh(self) -> None:
        from commdoctor.probes import mesh

        if not self.roster:
            return
        me = self.job.node
        targets: list[tuple[str, str, int]] = []
        infos: dict[int, dict[str, Any]] = {}
        for j in self.roster["members"]:
            if j == me:
                continue
            info = self.store.peek(self.key(j, "info")) or {}
            infos[j] = info
            ch = info.get("choices") or {}
            addr = (ch.get(ch.get("primary", "gloo")) or {}).get("address")
            if not addr:
                continue
            ports = info.get("ports") or {}
            if ports.get("master"):
                targets.append((f"{j}:master", addr, int(ports["master"])))
            if ports.get("ephemeral"):
                targets.append((f"{j}:ephemeral", addr, int(ports["ephemeral"])))
        after = KEEP_BANDWIDTH_S + KEEP_LOCAL_S + KEEP_REPORT_S  # what the steps after the mesh are kept
        results = mesh.probe_all(targets, timeout=self.budget.seconds(after, 2.0, 0.2))
        # Full-size packets along each path (Don't Fragment), in parallel: an MTU black hole loses them all.
        own = (self.info.get("choices") or {})
        mtu = (own.get(own.get("primary", "gloo")) or {}).get("mtu")
        paths: dict[str, Any] = {}
        if mtu and 576 <= int(mtu) <= 65536:
            def one(j: int, addr: str, port: int) -> None:
                paths[str(j)] = mesh.path_mtu(addr, port, int(mtu))

            ts = []
            for label, addr, port in targets:
                j, _, kind = label.partition(":")
                if kind == "ephemeral" and not addr.startswith("127."):
                    ts.append(threading.Thread(target=one, args=(int(j), addr, port), daemon=True))
            for t in ts:
                t.start()
            mtu_end = self.budget.until(after, 6.0)
            for t in ts:
                t.join(max(0.0, mtu_end - time.monotonic()))
        clock: dict[str, Any] | None = None
        if me != 0 and 0 in infos:
            ch = infos[0].get("choices") or {}
            addr = (ch.get(ch.get("primary", "gloo")) or {}).get("address")
            eph = (infos[0].get("ports") or {}).get("ephemeral")
            if addr and eph:
                clock = mesh.clock_offset(addr, int(eph), timeout=self.budget.seconds(after, 2.0, 0.2))
        self.store.put(self.key(me, "mesh"), {"probes": results, "clock": clock, "paths": dict(paths)})
        self.stage("mesh done")

    def plan_bandwidth(self) -> list[int]:
        """Node 0: the members whose ephemeral ports every other member reached (gloo needs them all)."""
        if not self.roster:
            return []
        members = list(self.roster["members"])
        if self.job.coordinator:
            self.wait_nodes([i for i in members if i != self.job.node], "mesh",
                            self.budget.until(KEEP_BANDWIDTH_S / 2 + KEEP_LOCAL_S + KEEP_REPORT_S, 20.0))
            # Edges where either direction failed; drop the node with most of them until none is left.
            broken: set[tuple[int, int]] = set()
            silent = []
            for i in members:
                m = self.store.peek(self.key(i, "mesh"))
                if m is None:
                    silent.append(i)
                    continue
                for p in m.get("probes") or ():
                    j, _, kind = str(p.get("label", "")).partition(":")
                    if kind == "ephemeral" and p.get("outcome") != "open" and j.isdigit() and int(j) in members:
                        broken.add((min(i, int(j)), max(i, int(j))))
            chosen = [i for i in members if i not in silent]
            while True:
                live = [e for e in broken if e[0] in chosen and e[1] in chosen]
                if not live:
                    break
                worst = max(chosen, key=lambda i: (sum(i in e for e in live), i))
                chosen.remove(worst)
            if len(chosen) < 2:
                chosen = []
            self.store.put("bwplan", {"members": chosen, "excluded": [i for i in members if i not in chosen]})
            if self.on_mesh is not None:
                try:
                    self.on_mesh(self.preview())
                except Exception as e:  # noqa: BLE001 - an early word is a courtesy; the report still comes
                    self.notes.append(f"could not judge the mesh early: {type(e).__name__}: {e}")
            return chosen
        if not self.store.wait(["bwplan"], self.budget.until(KEEP_BANDWIDTH_S / 3 + KEEP_LOCAL_S + KEEP_REPORT_S, 40.0),
                               stop=self.stop):
            return []
        plan = self.store.peek("bwplan") or {}
        return [int(x) for x in plan.get("members") or ()]

    def preview(self) -> dict[str, Any]:
        """Node 0, after the mesh: what is known of each member so far, in the ``multinode`` fact's shape (the
        checks that judge reachability, interfaces and versions can run on it; no node has reported yet)."""
        job = self.job
        nodes = []
        for i in (self.roster or {}).get("members") or ():
            info = self.info if i == job.node else self._peek(self.key(i, "info"))
            nodes.append({"node": i, "info": info, "host": node_label(info, i, job), "mesh": self._peek(self.key(i, "mesh")),
                          "status": "joined", "stages": {}, "report": None})
        return {"job": self.job_section(), "roster": self.roster, "nodes": nodes, "store_error": self.store_error,
                "local_node": job.node, "checkins": {}}

    def bandwidth(self, members: list[int]) -> None:
        from commdoctor.probes.jobstore import pair_bandwidth

        me = self.job.node
        if me not in members:
            return
        # gloo's timeout bounds each exchange; what is left before the local checks' share bounds the test.
        gloo_s = self.budget.seconds(KEEP_LOCAL_S + KEEP_REPORT_S, 20.0, 1.0)
        # In a thread: gloo blocks in C++ (its constructor, each wait) where no signal handler runs, and the
        # main thread must stay free to hear the launcher stop the run. Each pair is bounded by gloo_s.
        box: dict[str, Any] = {}

        def test() -> None:
            try:
                box["res"] = pair_bandwidth(self.store, members.index(me), len(members), timeout=gloo_s)
            except Exception as e:  # noqa: BLE001 - recorded as the test's error
                box["error"] = f"{type(e).__name__}: {e}"

        t = threading.Thread(target=test, name="commdoctor-bandwidth", daemon=True)
        t.start()
        # gloo's timeout bounds its constructor and each of a pair's five exchanges (one small, four timed)
        rounds = max(1, len(members) - 1 + len(members) % 2)
        t.join(gloo_s * (5 * rounds + 1) + 5.0)
        res = box.get("res") or {"member": members.index(me), "size": len(members), "pairs": {},
                                 "error": box.get("error") or "the pair test overran its deadline"}
        # Pairs by node index, not by position in the group.
        res["pairs"] = {str(members[int(k)]): v for k, v in res["pairs"].items()}
        res["members"] = members
        self.store.put(self.key(me, "bw"), res)
        self.stage("bandwidth done")

    def close_listeners(self) -> None:
        for lst in self.listeners:
            lst.close()
        self.listeners.clear()

    # -- before the local checks: join, reachability, bandwidth ------------------------------------------

    @staticmethod
    def _prefetch(ctx: Any, names: Sequence[str]) -> None:
        """Start slow facts of the local checks now, in the background, once this node has joined: the torch
        probe imports torch in a child process (seconds, over ten on a busy host), which then overlaps with
        the wait for the roster and the mesh instead of adding to the local checks. Facts are computed once;
        the check that asks later waits for this computation."""
        def get(name: str) -> None:
            try:
                ctx.fact(name)
            except BaseException:  # noqa: BLE001 - the check that asks sees the same error
                pass

        for name in names:
            if ctx.facts.has(name):
                threading.Thread(target=get, args=(name,), name=f"commdoctor-prefetch-{name}", daemon=True).start()

    def _known_store(self, ctx: Any) -> None:
        """This process is a client of the job's store already: that is the TCPStore handshake the rendezvous
        checks would make again in a child process (which must import torch first, 10 s and more on a busy
        host, and then reads as "not a TCPStore" when it runs out of time). The handshake fact reuses it."""
        st = self.store
        hs: dict[str, Any] = {"ok": True, "connect_s": st.connect_s, "via": "this process's connection to the job's store"}
        try:
            import torch

            hs["torch"] = torch.__version__
            hs["num_keys"] = int(st.raw.num_keys())
        except Exception:  # noqa: BLE001 - the count is a detail
            pass
        ctx.facts.provide("net_store_known", {f"{self.job.master_addr}:{self.job.master_port}": hs})

    def exchange(self, ctx: Any) -> None:
        """Open the job's store and do every cross-node step that comes before the local checks (1-4 in
        the module docstring). Failures are kept in ``notes``/``store_error``: the local checks still run."""
        job = self.job
        if self.open_store():
            self._known_store(ctx)
            try:
                if job.single_node:
                    self.say(f"rank {job.rank} (local rank 0 of {job.local_world_size} on {self.host}): checks this "
                             f"host for the job; the other local ranks check in at "
                             f"{job.master_addr}:{job.master_port}")
                else:
                    self.say(f"node {job.node} ({self.host}): joined the job's store at "
                             f"{job.master_addr}:{job.master_port}")
                self.join(ctx)
                if self.prefetch:
                    self._prefetch(ctx, self.prefetch)
                self.wait_roster()
                if self.roster and not job.single_node:
                    self.say(f"node {job.node}: {len(self.roster['members'])} of {job.expected_nodes} nodes present")
                    self.mesh()
                    members = self.plan_bandwidth()
                    self.bandwidth(members)
            except Exception as e:  # noqa: BLE001 - the local checks still run; the failure is reported
                import traceback

                self.notes.append(f"cross-node phase failed: {type(e).__name__}: {e}")
                self.notes.append(traceback.format_exc()[-2000:])
            finally:
                self.close_listeners()
        self.stage("local checks started")
        self.fit_local_checks()

    # -- after the local checks: publish, and on node 0 gather -------------------------------------------

    def gather(self, local: Report) -> Gathered:
        """Publish this node's report; on node 0, wait for every node's and gather them as facts.

        Returns what the judging checks (commdoctor.checks.multinode) run on: on node 0 the ``multinode``
        fact and the report merging every node's results; elsewhere the ``multinode_node`` fact (whether
        this node's results reached node 0) and this node's own report.
        """
        from commdoctor.pipeline.run import Context, Facts, Gathered

        job = self.job
        if local.interrupted:
            self.interrupt()
        self.stage("local checks done")
        local.job = self.job_section()
        if self.store is not None:
            try:
                self.store.put(self.key(job.node, "report"), local.to_dict())
                self.posted = True
                self.stage("reported")
            except Exception as e:  # noqa: BLE001 - then node 0 reports us as stopped after "local checks done"
                self.post_error = f"could not publish this node's report: {type(e).__name__}: {e}"
                self.notes.append(self.post_error)
        if not job.coordinator:
            self._hb_stop.set()
            facts = Facts()
            facts.provide("multinode_node", self.own_view())
            self.gathered = Gathered(Context(options=replace(self.options, mode="node"), facts=facts), local)
            return self.gathered
        self.gathered = self.gather_nodes(local)
        return self.gathered

    def fit_local_checks(self) -> None:
        """Shorten the local checks' own limits (``--timeout``, ``--pg-timeout``) to what is left of the run.

        Node 0 keeps ``KEEP_REPORT_S`` for the gather and the report; another node one second more, so its
        report is in the store before node 0 stops waiting. The checks run one after another and each normally
        ends within its limit; a few seconds go to the checks without one. Said in the job section's notes.
        """
        keep = self.budget.keep(KEEP_REPORT_S + (0.0 if self.job.coordinator else 1.0) + 8.0)
        spare = self.budget.left() - keep
        opts = self.options
        timeout = min(float(opts.timeout), max(2.0, round(spare * 0.25, 1)))
        pg_timeout = min(float(opts.pg_timeout), max(3.0, round(spare * 0.6, 1)))
        if (timeout, pg_timeout) != (float(opts.timeout), float(opts.pg_timeout)):
            self.notes.append(f"the run's deadline ({self.budget.total_s:g} s) left {max(0.0, spare):.0f} s for "
                              f"this node's local checks: network probes {timeout:g} s (--timeout "
                              f"{float(opts.timeout):g}), process-group test {pg_timeout:g} s (--pg-timeout "
                              f"{float(opts.pg_timeout):g})")
            opts.timeout, opts.pg_timeout = timeout, pg_timeout

    def job_section(self) -> dict[str, Any]:
        # The launcher's notes (the defaults taken for MASTER_ADDR / MASTER_PORT) first, then the run's own.
        return {**self.job.to_dict(), "store_error": self.store_error, "notes": [*self.job.notes, *self.notes]}

    def own_view(self) -> dict[str, Any]:
        """A non-zero node's own view of the gather, for the check that judges it (NodeSentCheck)."""
        return {"host": self.host, "where": f"{self.job.master_addr}:{self.job.master_port}",
                "store_error": self.store_error, "roster": self.roster, "posted": self.posted,
                "post_error": self.post_error, "waited": self.join_timeout + 15}

    # -- node 0: gather and compare ------------------------------------------------------------------

    def gather_nodes(self, local: Report) -> Gathered:
        from commdoctor.pipeline.run import Context, Facts, Gathered

        job = self.job
        members = list((self.roster or {}).get("members") or [])
        # The others' reports until the run's deadline less the time the report itself needs.
        deadline = self.budget.until(KEEP_REPORT_S)
        if self.store is not None:
            self.wait_nodes([i for i in members if i != job.node], "report", deadline)
        self._hb_stop.set()
        nodes: list[dict[str, Any]] = []
        for i in range(job.expected_nodes):
            nodes.append(self.node_record(i, local))
        # Nodes the rendezvous never numbered (torchrun --nnodes MIN:MAX) have no index of their own: name
        # them from the expected host names (--expect-hosts) that no node reported as its own.
        if job.node_names and job.nnodes < job.expected_nodes:
            seen = {(n.get("info") or {}).get("host") for n in nodes}
            spare = [h for h in job.node_names if h not in seen]
            for n in nodes:
                if n["node"] >= job.nnodes and spare:
                    n["host"] = spare.pop(0)
        data = {"job": self.job_section(), "roster": self.roster, "nodes": nodes, "store_error": self.store_error,
                "local_node": job.node, "checkins": self.checkins(nodes)}
        mctx = Context(options=replace(self.options, mode="multinode"), facts=Facts())
        mctx.facts.provide("multinode", data)
        merged = merge_results(local, nodes, job.node)
        self.remote = node_events(local, nodes, job.node)
        agg = Report(tool_version=local.tool_version, mode=local.mode, created=local.created, host=local.host,
                     argv=local.argv, environment=dict(local.environment), results=merged,
                     interrupted=local.interrupted)
        agg.job = {**self.job_section(), "checkins": data["checkins"]}
        if not job.single_node:  # one node: no table of nodes, the job section says it all
            agg.environment["nodes"] = len([n for n in nodes if n["status"] == "reported"])
            agg.nodes = [_public(n) for n in nodes]
        if self.store is not None:
            try:
                self.store.put("done", {"time": time.time()})
            except Exception:  # noqa: BLE001 - nobody waits on it for long
                pass
        return Gathered(mctx, agg, list(self.remote))

    def checkins(self, nodes: Sequence[dict[str, Any]]) -> dict[str, Any]:
        """The local ranks > 0 of each reporting node, and which of them never checked in (bounded wait)."""
        lws = self.job.local_world_size
        out: dict[str, Any] = {"local_world_size": lws, "checked_in": {}, "missing": {}}
        if lws <= 1 or self.store is None:
            return out
        want: dict[int, list[int]] = {}
        for n in nodes:
            rank = (n.get("info") or {}).get("rank")
            if n["status"] == "reported" and isinstance(rank, int):
                want[n["node"]] = [rank + k for k in range(1, lws)]
        keys = [f"checkin/{r}" for rs in want.values() for r in rs]
        # They check in at start: long since done, late (the join timeout, from our own start, covers a slow
        # start as it does for nodes), or never.
        try:
            have = self.store.wait(keys, min(max(self.t0 + self.join_timeout, time.monotonic() + 5.0),
                                             self.budget.until(KEEP_REPORT_S - 2.0)), stop=self.stop)
        except Exception:  # noqa: BLE001 - a store gone away (the launcher stopping): nobody seen checking in
            have = set()
        for i, rs in want.items():
            gone = [r for r in rs if f"checkin/{r}" not in have]
            if gone:
                out["missing"][str(i)] = gone
            out["checked_in"][str(i)] = [r for r in rs if f"checkin/{r}" in have]
        return out

    def node_record(self, i: int, local: Report) -> dict[str, Any]:
        """What node 0 knows of node ``i``: its info, stages, mesh and bandwidth results, and its report."""
        peek = self._peek
        info = self.info if i == self.job.node else peek(self.key(i, "info"))
        label = node_label(info, i, self.job) if i < self.job.nnodes else f"node-{i:02d}"
        rec: dict[str, Any] = {"node": i, "info": info, "host": label,
                               "last": peek(self.key(i, "last")), "stages": {}}
        for s in STAGES:
            v = peek(self.key(i, f"stage/{s}"))
            if v is not None:
                rec["stages"][s] = v
        rec["mesh"] = peek(self.key(i, "mesh"))
        rec["heartbeat_stopped"] = i in self.gone
        rec["bw"] = peek(self.key(i, "bw"))
        if i == self.job.node:
            rep: dict[str, Any] | None = local.to_dict()
        else:
            rep = peek(self.key(i, "report"))
        rec["report"] = rep
        if i >= self.job.nnodes:
            rec["status"] = "never joined"
            rec["why"] = f"the launcher started {self.job.nnodes} nodes of the {self.job.expected_nodes} asked for"
        elif info is None and rec["last"] is None:
            rec["status"] = "never joined"
            if self.stop.is_set():
                rec["why"] = (f"nothing was seen of it in the {self.interrupted_at or 0:.1f} s before the run was "
                              "interrupted")
        elif rep is None:
            # Stopped by the launcher, node 0 cannot tell a node still at work from one that hung, unless its
            # heartbeat had already stopped: "running" says only that no report had come yet.
            rec["status"] = "running" if self.stop.is_set() and i not in self.gone else "stopped"
        else:
            rec["status"] = "reported"
        return rec


def _public(n: dict[str, Any]) -> dict[str, Any]:
    """The per-node entry of the report (docs/json-schema.md, ``nodes``)."""
    info = n.get("info") or {}
    ch = info.get("choices") or {}
    prim = ch.get(ch.get("primary") or "gloo") or {}
    rep = n.get("report") or {}
    counts = rep.get("counts") or {}
    last = n.get("last") or {}
    return {
        "node": n["node"], "host": n["host"], "rank": info.get("rank"), "status": n["status"],
        "address": prim.get("address"), "interface": prim.get("interface"), "mtu": prim.get("mtu"),
        "backend": ch.get("primary"), "versions": info.get("versions") or {},
        "last_stage": last.get("stage"), "stages": {k: v.get("after_s") for k, v in (n.get("stages") or {}).items()},
        "counts": {k: counts.get(k, 0) for k in ("error", "warning", "info")},
        "verdict": rep.get("verdict"),
        "results": [{k: r.get(k) for k in ("check", "status", "summary")} for r in rep.get("results") or ()],
        "why": n.get("why"),
    }


_STATUS_WEIGHT = {Status.SKIPPED: 0, Status.PASSED: 1, Status.TIMED_OUT: 2, Status.CRASHED: 3, Status.FAILED: 4}


def merge_results(local: Report, nodes: Sequence[dict[str, Any]], me: int) -> list[CheckResult]:
    """Node 0's results, with every other node's findings folded in, each tagged with its host.

    The same finding on several nodes becomes one finding naming every host;
    a check's status is the worst any node had (each node's own status stays
    in the report's ``nodes`` section).
    """
    out = [CheckResult.from_dict(r.to_dict()) for r in local.results]
    by_name = {r.check: r for r in out}
    own_host = next((n["host"] for n in nodes if n["node"] == me), local.host)

    def tag(f: Finding, host: str) -> Finding:
        return f if host in f.hosts else replace(f, hosts=tuple(f.hosts) + (host,))

    for r in out:
        r.findings = [tag(f, own_host) for f in r.findings]
    for n in nodes:
        if n["node"] == me or not n.get("report"):
            continue
        for rd in n["report"].get("results") or ():
            try:
                other = CheckResult.from_dict(rd)
            except (KeyError, ValueError):
                continue
            mine = by_name.get(other.check)
            if mine is None:
                mine = CheckResult(check=other.check, stage=other.stage, title=other.title, status=other.status,
                                   summary=f"{n['host']}: {other.summary}")
                out.append(mine)
                by_name[other.check] = mine
            elif _STATUS_WEIGHT.get(other.status, 0) > _STATUS_WEIGHT.get(mine.status, 0):
                mine.details.append(f"{n['host']}: {other.status.value}: {other.reason or other.summary}")
                mine.status = other.status
            for f in other.findings:
                same = next((k for k, g in enumerate(mine.findings)
                             if (g.code, g.title, g.detail) == (f.code, f.title, f.detail)), None)
                if same is None:
                    mine.findings.append(tag(f, n["host"]))
                else:
                    mine.findings[same] = tag(mine.findings[same], n["host"])
    return out


def node_events(local: Report, nodes: Sequence[dict[str, Any]], me: int) -> list[Any]:
    """For each other node, one result holding what it found that this node did not (for the console and TUI)."""
    from commdoctor.pipeline.run import NodeReported

    mine = {(f.code, f.title, f.detail) for r in local.results for f in r.findings}
    out = []
    for n in nodes:
        if n["node"] == me:
            continue
        pub = _public(n)
        rep = n.get("report") or {}
        title = f"Local checks on {n['host']}"
        r = CheckResult(check=f"node.{n['node']}", stage=Stage.ENVIRONMENT, title=title, status=Status.PASSED)
        if n["status"] != "reported":
            r.status = Status.SKIPPED
            r.reason = n["status"] + (f" (last seen: {pub['last_stage']})" if pub.get("last_stage") else "")
        for rd in rep.get("results") or ():
            try:
                res = CheckResult.from_dict(rd)
            except (KeyError, ValueError):
                continue
            for f in res.findings:
                if (f.code, f.title, f.detail) not in mine:
                    r.findings.append(replace(f, hosts=tuple(f.hosts) or (n["host"],)))
            if res.status in (Status.CRASHED, Status.TIMED_OUT):
                r.details.append(f"{res.check}: {res.status.value}: {res.reason}")
        if any(f.severity is Severity.ERROR for f in r.findings):
            r.status = Status.FAILED
        c = pub["counts"]
        if n["status"] == "reported":
            same = c.get("error", 0) + c.get("warning", 0) + c.get("info", 0) - len(r.findings)
            r.summary = (f"{len(rep.get('results') or ())} checks; errors: {c.get('error', 0)}, warnings: "
                         f"{c.get('warning', 0)}" + (f" ({same} also on node {me}, shown there)" if same > 0 else ""))
        out.append(NodeReported(r, node=pub))
    return out


def checkin(job: Job, say: Callable[[str], None]) -> int:
    """A local rank other than 0: record that it was here, and leave the node's work to local rank 0."""
    from commdoctor.probes.jobstore import JobStore, StoreError

    try:
        st = JobStore(job, connect_timeout=20.0)
        st.put(f"checkin/{job.rank}", {"host": socket.gethostname(), "node": job.node, "time": time.time()})
    except (StoreError, Exception) as e:  # noqa: BLE001 - said, and the exit code shows it
        say(f"rank {job.rank}: could not check in with the job's store: {e}")
        return 1
    if job.single_node:
        say(f"rank {job.rank} (local rank {job.local_rank} of {job.local_world_size}): checked in; local rank 0 "
            "checks this host and prints the report")
    else:
        say(f"rank {job.rank} (local rank {job.local_rank} on node {job.node}): local rank 0 checks this node; "
            "results go to node 0")
    return 0


def severity_of(findings: Sequence[Finding]) -> Severity | None:
    return max((f.severity for f in findings), key=lambda s: s.rank, default=None)
