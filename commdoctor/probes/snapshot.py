"""Take a hang snapshot of a live job: processes, states and every rank's stack at once.

Promise: returns within the stack deadline plus a few seconds whatever the
ranks do; never raises for a process that vanishes or cannot be traced (that
becomes data on the rank). Ranks the job's own settings expect on this host
but that no process holds are listed as ``missing``.
"""

from __future__ import annotations

import re
import socket
import time
from typing import Sequence

from commdoctor.probes.procs import Job, assign_ranks, describe, discover, inspect_pid
from commdoctor.probes.stacks import take_stacks
from commdoctor.parsing.stacks import RankState
from commdoctor.facts.snapshot import HangSnapshot, RankView


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


#: Command-line words of processes that are never "the job": our own runs and test runners
#: (a pytest run that starts gloo ranks has RANK in some of its children's environments).
_TOOLING = re.compile(r"(^|[\\/\s])(commdoctor|pytest|py\.test)(\s|$|\.py|/__main__)|-m\s+(commdoctor|pytest)\b")


def is_tooling(job: Job) -> bool:
    """A job whose launcher or ranks run commdoctor itself or a test runner."""
    procs = [*job.ranks, *([job.agent] if job.agent else [])]
    return any(_TOOLING.search(p.command) for p in procs)


def job_line(job: Job, snap: HangSnapshot | None = None, now: float | None = None) -> str:
    """'torchrun pid 812, 3 rank(s) (pids 813 814 815), running 2 min, 2 of 3 wait in communication'."""
    now = now or time.time()
    launcher = (f"{job.agent.launcher or job.agent.name} pid {job.agent.pid}" if job.agent
                else "no launcher")
    starts = [p.create_time for p in job.ranks if p.create_time]
    age = f", running {_duration(now - min(starts))}" if starts else ""
    text = f"{launcher}, {len(job.ranks)} rank(s) (pids {' '.join(str(p.pid) for p in job.ranks)}){age}"
    if snap is not None:
        text += f", {_waiting(snap)} of {len(snap.ranks)} wait in communication"
    return text


def _duration(s: float) -> str:
    return f"{s:.0f} s" if s < 120 else f"{s / 60:.0f} min" if s < 7200 else f"{s / 3600:.1f} h"


def _waiting(snap: HangSnapshot) -> int:
    return sum(1 for v in snap.ranks.values()
               if not v.dead and (v.state.waiting or v.state is RankState.CUDA_SYNC))


def snapshot_local(timeout: float = 10.0, native: bool = False, match: str | None = None) -> HangSnapshot:
    """The stuck distributed job on this host whose command line contains ``match`` (any job when
    None). Never a silent choice: with several jobs, each is looked at, the one whose ranks wait in
    communication is taken, and the snapshot's ``choice`` says which was taken and why, listing the
    others. commdoctor's own runs and test runners are never the job."""
    jobs, notes = discover()
    tooling = [j for j in jobs if is_tooling(j)]
    jobs = [j for j in jobs if j not in tooling]
    for j in tooling:
        notes.append(f"left out {j.key}: it runs commdoctor or a test runner, not a job to diagnose")
    if match:
        left = [j for j in jobs if not any(match in p.command for p in [*j.ranks, *([j.agent] if j.agent else [])])]
        jobs = [j for j in jobs if j not in left]
        if left:
            notes.append(f"{len(left)} other job(s) on this host do not match {match!r}")
    if not jobs:
        return HangSnapshot(source="live", host=socket.gethostname(), taken_at=time.time(),
                            notes=notes + ["no distributed job found on this host (no torchrun agent, no process "
                                           "with RANK or LOCAL_RANK in its environment, no mpirun/srun children)"])
    if len(jobs) == 1:
        return snapshot_job(jobs[0], timeout=timeout, native=native, notes=notes)
    # Several jobs: look at each (bounded: the first eight, largest first) and take the stuck one.
    looked = [(j, snapshot_job(j, timeout=timeout, native=native, notes=list(notes))) for j in jobs[:8]]
    stuck = [(j, sn) for j, sn in looked if _waiting(sn)]
    if len(stuck) == 1:
        chosen, snap = stuck[0]
        why = "the only one whose ranks wait in communication"
    elif stuck:
        chosen, snap = max(stuck, key=lambda js: (_waiting(js[1]), len(js[0].ranks)))
        why = (f"{len(stuck)} of them have ranks waiting in communication; this one has the most: name another "
               f"with commdoctor hang --pid PID...")
    else:
        chosen, snap = looked[0]
        why = "no rank of any of them waits in communication; this is the largest: name another with --pid"
    now = time.time()
    others = [f"{j.key}: {job_line(j, sn, now)}" for j, sn in looked if j is not chosen]
    others += [f"{j.key}: {job_line(j, None, now)} (not looked at)" for j in jobs[8:]]
    snap.choice = (f"{len(jobs)} jobs on this host; diagnosing {chosen.key} ({job_line(chosen, snap, now)}): {why}. "
                   f"Other job(s): " + "; ".join(others))
    snap.notes.append(snap.choice)
    return snap
