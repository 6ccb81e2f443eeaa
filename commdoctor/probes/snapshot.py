"""Take a hang snapshot of a live job: processes, states and every rank's stack at once.

Promise: returns within the stack deadline plus a few seconds whatever the
ranks do; never raises for a process that vanishes or cannot be traced (that
becomes data on the rank). Ranks the job's own settings expect on this host
but that no process holds are listed as ``missing``.
"""

from __future__ import annotations

import socket
import time
from typing import Sequence

from commdoctor.probes.procs import Job, assign_ranks, describe, discover, inspect_pid
from commdoctor.probes.stacks import take_stacks
from commdoctor.snapshot import HangSnapshot, RankView


def expected_local_ranks(job: Job) -> list[int]:
    """Global ranks this host should hold, from WORLD_SIZE / LOCAL_WORLD_SIZE / LOCAL_RANK."""
    ws, lws = job.world_size, job.local_world_size
    known = [p for p in job.ranks if p.rank is not None]
    # A rendezvous on a loopback address means every rank runs here, whatever LOCAL_WORLD_SIZE says.
    loopback = any(p.env.get("MASTER_ADDR", "").startswith("127.") or p.env.get("MASTER_ADDR") in ("localhost", "::1")
                   for p in job.ranks)
    if ws and (lws == ws or loopback):
        return list(range(ws))
    if lws and known:
        bases = {p.rank - p.local_rank for p in known if p.local_rank is not None}  # type: ignore[operator]
        if len(bases) == 1:
            base = bases.pop()
            return [base + i for i in range(lws)]
    return []


def snapshot_job(job: Job, timeout: float = 10.0, native: bool = False, notes: Sequence[str] = ()) -> HangSnapshot:
    t0 = time.monotonic()
    host = job.host or socket.gethostname()
    snap = HangSnapshot(source="live", world_size=job.world_size, host=host, taken_at=time.time(),
                        notes=list(notes), job=job.to_dict())
    by_rank = assign_ranks(job)
    snap.notes.extend(job.warnings)
    # Refresh states: discovery may be seconds old.
    for r, p in by_rank.items():
        fresh = inspect_pid(p.pid, host)
        state = fresh.state if fresh.state != "unknown" else p.state
        snap.ranks[r] = RankView(rank=r, pid=p.pid, host=host, proc_state=state, cpu_s=fresh.cpu_s or p.cpu_s,
                                 command=p.command, local_rank=p.local_rank)
    for r in expected_local_ranks(job):
        if r not in snap.ranks:
            snap.ranks[r] = RankView(rank=r, host=host, proc_state="missing")
    alive = [v.pid for v in snap.ranks.values() if v.pid is not None and not v.dead]
    stopped = [v.pid for v in snap.ranks.values() if v.pid is not None and v.proc_state == "stopped"]
    stacks = take_stacks(alive, timeout=timeout, native=native, stopped=stopped)
    for v in snap.ranks.values():
        res = stacks.get(v.pid) if v.pid is not None else None
        if res is None:
            continue
        if res.ok:
            v.stack = res.stack
        else:
            v.stack_error, v.stack_why, v.stack_hint = res.error, res.why, res.hint
            if res.why == "exited":
                v.proc_state = "exited"
    snap.elapsed_s = time.monotonic() - t0
    return snap


def snapshot_pids(pids: Sequence[int], timeout: float = 10.0, native: bool = False) -> HangSnapshot:
    job, notes = describe(pids)
    return snapshot_job(job, timeout=timeout, native=native, notes=notes)


def snapshot_local(timeout: float = 10.0, native: bool = False, match: str | None = None) -> HangSnapshot:
    """The largest distributed job on this host whose command line contains ``match``
    (any job when None); the others are named in the notes."""
    jobs, notes = discover()
    if match:
        left = [j for j in jobs if not any(match in p.command for p in [*j.ranks, *([j.agent] if j.agent else [])])]
        jobs = [j for j in jobs if j not in left]
        if left:
            notes.append(f"{len(left)} other job(s) on this host do not match {match!r}")
    if not jobs:
        return HangSnapshot(source="live", host=socket.gethostname(), taken_at=time.time(),
                            notes=notes + ["no distributed job found on this host (no torchrun agent, no process "
                                           "with RANK or LOCAL_RANK in its environment, no mpirun/srun children)"])
    for other in jobs[1:]:
        notes.append(f"another job on this host was left out: {other.key} with {len(other.ranks)} rank(s) "
                     f"(pids {', '.join(str(p.pid) for p in other.ranks)}); use commdoctor hang --pid to choose")
    return snapshot_job(jobs[0], timeout=timeout, native=native, notes=notes)
