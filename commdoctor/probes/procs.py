"""Find the processes of a distributed job on this host, and what each one is.

Promise: ``discover`` and ``describe`` return plain data and never raise for
a process that vanishes or cannot be read: a permission error on
``/proc/PID/environ`` becomes ``env_error`` on that process (with what to do),
a vanished process becomes state ``exited``. They recognise torchrun / torch
elastic agents and their workers, any process with RANK or LOCAL_RANK in its
environment (and the MPI / Slurm equivalents), and the children of mpirun /
srun. Workers are grouped into jobs (one per launcher, or per rendezvous
address when there is none), with rank, local rank, host, pid and state.
"""

from __future__ import annotations

import os
import socket
from dataclasses import asdict, dataclass, field
from typing import Any, Iterable, Sequence

import psutil

#: Environment variables that say "this process is rank N", in order of trust.
RANK_VARS = ("RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID")
LOCAL_RANK_VARS = ("LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID")
WORLD_VARS = ("WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS")
KEEP_ENV = ("MASTER_ADDR", "MASTER_PORT", "TORCHELASTIC_RUN_ID", "LOCAL_WORLD_SIZE", "GROUP_RANK", "NODE_RANK",
            "NCCL_DEBUG", "NCCL_DEBUG_FILE", "TORCH_FR_DUMP_TEMP_FILE", "TORCH_FR_BUFFER_SIZE", "COMMDOCTOR_HOOKS_DIR",
            "COMMDOCTOR_WATCH_DIR", "NCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME", "NCCL_RAS_ENABLE", "NCCL_RAS_ADDR",
            "SLURM_JOB_ID", "OMPI_COMM_WORLD_SIZE")

_ELASTIC_MARKERS = ("torchrun", "torch.distributed.run", "torch.distributed.launch", "torch/distributed/run.py",
                    "torch/distributed/launch.py")
_MPI_LAUNCHERS = ("mpirun", "mpiexec", "orterun", "prterun", "prte", "orted", "prted", "hydra_pmi_proxy",
                  "mpiexec.hydra")
_SLURM_LAUNCHERS = ("srun", "slurmstepd")


@dataclass
class ProcInfo:
    pid: int
    ppid: int | None = None
    name: str = ""
    cmdline: list[str] = field(default_factory=list)
    state: str = "unknown"  # running, sleeping, stopped, zombie, exited, disk_sleep, idle, unknown
    role: str = "process"  # worker, agent (torchrun), launcher (mpirun/srun), process
    launcher: str | None = None  # torchrun, mpirun, srun
    rank: int | None = None
    local_rank: int | None = None
    world_size: int | None = None
    host: str = ""
    username: str | None = None
    create_time: float | None = None
    cpu_s: float | None = None  # user + system CPU seconds so far
    env: dict[str, str] = field(default_factory=dict)  # the KEEP_ENV subset only
    env_error: str | None = None
    agent_pid: int | None = None  # the torchrun agent / launcher this worker belongs to

    @property
    def command(self) -> str:
        return " ".join(self.cmdline) if self.cmdline else self.name

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ProcInfo:
        names = cls.__dataclass_fields__
        return cls(**{k: v for k, v in d.items() if k in names})


@dataclass
class Job:
    """The workers of one job on this host, and its launcher when there is one."""

    key: str
    ranks: list[ProcInfo] = field(default_factory=list)  # workers, by rank
    agent: ProcInfo | None = None
    world_size: int | None = None
    local_world_size: int | None = None
    host: str = ""
    warnings: list[str] = field(default_factory=list)

    @property
    def missing_local_ranks(self) -> list[int]:
        """Local ranks the job's own settings expect on this host but no process holds."""
        if not self.local_world_size:
            return []
        have = {p.local_rank for p in self.ranks if p.local_rank is not None}
        return [lr for lr in range(self.local_world_size) if lr not in have]

    def to_dict(self) -> dict[str, Any]:
        return {"key": self.key, "ranks": [p.to_dict() for p in self.ranks],
                "agent": self.agent.to_dict() if self.agent else None, "world_size": self.world_size,
                "local_world_size": self.local_world_size, "host": self.host, "warnings": list(self.warnings),
                "missing_local_ranks": self.missing_local_ranks}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Job:
        return cls(key=d.get("key", ""), ranks=[ProcInfo.from_dict(p) for p in d.get("ranks") or ()],
                   agent=ProcInfo.from_dict(d["agent"]) if d.get("agent") else None,
                   world_size=d.get("world_size"), local_world_size=d.get("local_world_size"),
                   host=d.get("host", ""), warnings=list(d.get("warnings") or ()))


_STATE = {
    psutil.STATUS_RUNNING: "running", psutil.STATUS_SLEEPING: "sleeping", psutil.STATUS_DISK_SLEEP: "disk_sleep",
    psutil.STATUS_STOPPED: "stopped", psutil.STATUS_TRACING_STOP: "stopped", psutil.STATUS_ZOMBIE: "zombie",
    psutil.STATUS_DEAD: "exited", psutil.STATUS_IDLE: "idle",
}


def _int(v: str | None) -> int | None:
    try:
        return int(v) if v not in (None, "") else None
    except ValueError:
        return None


def _first(env: dict[str, str], names: Sequence[str]) -> int | None:
    for n in names:
        if n in env:
            v = _int(env[n])
            if v is not None:
                return v
    return None


def env_permission_hint(pid: int, owner: str | None) -> str:
    me = _username()
    who = f"user {owner}" if owner else "another user"
    return (f"permission denied reading /proc/{pid}/environ (the process belongs to {who}; commdoctor runs as "
            f"{me}): run commdoctor as the job's user or as root, or pass the ranks with --pid")


def _username() -> str:
    try:
        import pwd

        return pwd.getpwuid(os.geteuid()).pw_name
    except (ImportError, KeyError):
        return str(os.geteuid()) if hasattr(os, "geteuid") else "?"


def _launcher_of(cmdline: Sequence[str], name: str) -> tuple[str | None, str | None]:
    """(role, launcher) from a command line."""
    joined = " ".join(cmdline[:4])
    base = os.path.basename(cmdline[0]) if cmdline else name
    if any(m in joined for m in _ELASTIC_MARKERS):
        return "agent", "torchrun"
    if base in _MPI_LAUNCHERS or name in _MPI_LAUNCHERS:
        return "launcher", "mpirun"
    if base in _SLURM_LAUNCHERS or name in _SLURM_LAUNCHERS:
        return "launcher", "srun"
    return None, None


def inspect_pid(pid: int, host: str | None = None) -> ProcInfo:
    """Everything commdoctor needs to know about one process; never raises."""
    host = host or socket.gethostname()
    info = ProcInfo(pid=pid, host=host)
    try:
        p = psutil.Process(pid)
        with p.oneshot():
            info.ppid = p.ppid()
            info.name = p.name()
            try:
                info.cmdline = p.cmdline()
            except (psutil.AccessDenied, psutil.ZombieProcess):
                info.cmdline = []
            info.state = _STATE.get(p.status(), str(p.status()))
            info.create_time = p.create_time()
            try:
                info.username = p.username()
            except (psutil.AccessDenied, KeyError):
                info.username = None
            try:
                t = p.cpu_times()
                info.cpu_s = round(t.user + t.system, 3)
            except (psutil.AccessDenied, psutil.ZombieProcess):
                pass
    except psutil.NoSuchProcess:
        info.state = "exited"
        return info
    except psutil.AccessDenied as e:
        info.env_error = f"cannot read process {pid}: {e}"
        return info
    role, launcher = _launcher_of(info.cmdline, info.name)
    if role:
        info.role, info.launcher = role, launcher
    env: dict[str, str] = {}
    if info.state == "zombie":
        info.env_error = "a zombie has no environment left to read (it exited; its parent has not reaped it)"
    else:
        try:
            env = psutil.Process(pid).environ()
        except psutil.AccessDenied:
            info.env_error = env_permission_hint(pid, info.username)
        except psutil.ZombieProcess:
            info.state = "zombie"
            info.env_error = "a zombie has no environment left to read"
        except psutil.NoSuchProcess:
            info.state = "exited"
        except OSError as e:  # e.g. EIO on some kernels' hidepid mounts
            info.env_error = f"cannot read /proc/{pid}/environ: {e}"
    info.rank = _first(env, RANK_VARS)
    info.local_rank = _first(env, LOCAL_RANK_VARS)
    info.world_size = _first(env, WORLD_VARS)
    info.env = {k: env[k] for k in KEEP_ENV if k in env}
    if info.role == "process" and (info.rank is not None or info.local_rank is not None):
        info.role = "worker"
    return info


def _ancestors(pid: int, limit: int = 32) -> list[int]:
    out: list[int] = []
    try:
        p: psutil.Process | None = psutil.Process(pid)
        while p is not None and len(out) < limit:
            p = p.parent()
            if p is None:
                break
            out.append(p.pid)
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        pass
    return out


def _job_key(w: ProcInfo) -> str:
    if w.agent_pid is not None:
        return f"agent:{w.agent_pid}"
    addr = w.env.get("MASTER_ADDR")
    port = w.env.get("MASTER_PORT")
    if addr or port:
        return f"rendezvous:{addr or '?'}:{port or '?'}"
    if w.env.get("SLURM_JOB_ID"):
        return f"slurm:{w.env['SLURM_JOB_ID']}"
    return f"parent:{w.ppid}"


def group_jobs(procs: Iterable[ProcInfo], host: str | None = None) -> list[Job]:
    """Workers grouped into jobs; helpers of a worker (DataLoader workers, forks that
    inherited RANK) are left out. Largest job first."""
    procs = list(procs)
    by_pid = {p.pid: p for p in procs}
    agents = {p.pid: p for p in procs if p.role in ("agent", "launcher")}
    workers = [p for p in procs if p.role == "worker" or (p.role == "process" and p.state in ("zombie", "exited")
                                                          and p.ppid in agents)]
    worker_pids = {w.pid for w in workers}
    jobs: dict[str, Job] = {}
    for w in workers:
        parent = by_pid.get(w.ppid) if w.ppid is not None else None
        # A child of a worker with the same rank is that rank's helper process.
        if parent is not None and parent.pid in worker_pids and parent.rank == w.rank:
            continue
        if w.agent_pid is None:
            for a in [w.ppid, *_ancestors(w.pid)]:
                if a in agents:
                    w.agent_pid = a
                    break
        key = _job_key(w)
        job = jobs.setdefault(key, Job(key=key, host=host or w.host))
        job.ranks.append(w)
        if w.agent_pid is not None and job.agent is None:
            job.agent = agents.get(w.agent_pid)
    for job in jobs.values():
        job.ranks.sort(key=lambda p: (p.rank if p.rank is not None else 1 << 30, p.local_rank or 0, p.pid))
        sizes = {p.world_size for p in job.ranks if p.world_size}
        job.world_size = max(sizes) if sizes else None
        if len(sizes) > 1:
            job.warnings.append(f"ranks disagree on WORLD_SIZE: {sorted(sizes)}")
        lws = {_int(p.env.get("LOCAL_WORLD_SIZE")) for p in job.ranks} - {None}
        job.local_world_size = max(lws) if lws else None  # type: ignore[type-var]
        seen: dict[int, int] = {}
        for p in job.ranks:
            if p.rank is not None:
                if p.rank in seen:
                    job.warnings.append(f"rank {p.rank} is held by two processes ({seen[p.rank]} and {p.pid})")
                seen[p.rank] = p.pid
        denied = [p.pid for p in job.ranks if p.env_error and "permission" in p.env_error]
        if denied:
            job.warnings.append(f"environment unreadable for pid(s) {', '.join(map(str, denied))}: ranks unknown")
    return sorted(jobs.values(), key=lambda j: (-len(j.ranks), j.key))


def discover(host: str | None = None, exclude: Iterable[int] = ()) -> tuple[list[Job], list[str]]:
    """Every distributed job on this host. Returns (jobs, notes); notes say what could not be read."""
    host = host or socket.gethostname()
    skip = {os.getpid(), *_ancestors(os.getpid()), *exclude}
    procs: list[ProcInfo] = []
    notes: list[str] = []
    denied = 0
    for p in psutil.process_iter(["pid", "name", "cmdline"]):
        if p.pid in skip:
            continue
        try:
            cmd = p.info.get("cmdline") or []
            name = p.info.get("name") or ""
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
        # Only Python processes and launchers can be ranks or agents: reading
        # every process's environment would be slow and pointless.
        role, _ = _launcher_of(cmd, name)
        if role is None and "python" not in name.lower() and not any("python" in c for c in cmd[:1]):
            continue
        info = inspect_pid(p.pid, host)
        if info.env_error and "permission" in info.env_error:
            denied += 1
        if info.role in ("worker", "agent", "launcher") or (info.env_error and "python" in info.name.lower()):
            procs.append(info)
    if denied:
        notes.append(f"{denied} Python process(es) of other users could not be read (permission denied on "
                     f"/proc/PID/environ); run as root or as the job's user to see them")
    # Zombie / exited children of agents belong to the job too (a rank that died).
    agent_pids = {p.pid for p in procs if p.role in ("agent", "launcher")}
    for a in agent_pids:
        try:
            for c in psutil.Process(a).children():
                if c.pid not in {q.pid for q in procs}:
                    info = inspect_pid(c.pid, host)
                    if info.state in ("zombie", "exited"):
                        procs.append(info)
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            pass
    procs = [p for p in procs if p.role != "process" or p.state in ("zombie", "exited")]
    return group_jobs(procs, host), notes


def describe(pids: Sequence[int], host: str | None = None) -> tuple[Job, list[str]]:
    """The job made of exactly these pids (an agent's pid stands for its workers)."""
    host = host or socket.gethostname()
    notes: list[str] = []
    procs: list[ProcInfo] = []
    seen: set[int] = set()
    for pid in pids:
        info = inspect_pid(pid, host)
        if info.role == "agent" or info.role == "launcher":
            kids: list[int] = []
            try:
                kids = [c.pid for c in psutil.Process(pid).children(recursive=True)]
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                pass
            workers = [inspect_pid(k, host) for k in kids]
            workers = [w for w in workers if w.role == "worker" or w.state == "zombie"]
            for w in workers:
                w.agent_pid = pid
            top = [w for w in workers if not any(o.pid == w.ppid and o.rank == w.rank for o in workers)]
            notes.append(f"pid {pid} is a {info.launcher} launcher; diagnosing its {len(top)} worker(s)")
            for w in top:
                if w.pid not in seen:
                    seen.add(w.pid)
                    procs.append(w)
            continue
        if info.pid in seen:
            continue
        seen.add(info.pid)
        if info.role == "process" and info.state not in ("exited", "zombie"):
            info.role = "worker"  # the user named it: treat it as a rank even without RANK in its env
            if info.env_error is None:
                notes.append(f"pid {pid} has no RANK or LOCAL_RANK in its environment; numbered by its position")
        elif info.role == "process":
            info.role = "worker"
        procs.append(info)
    job = Job(key="pids:" + ",".join(map(str, pids)), host=host, ranks=procs)
    sizes = {p.world_size for p in procs if p.world_size}
    job.world_size = max(sizes) if sizes else None
    lws = {_int(p.env.get("LOCAL_WORLD_SIZE")) for p in procs} - {None}
    job.local_world_size = max(lws) if lws else None  # type: ignore[type-var]
    agents = {p.agent_pid for p in procs if p.agent_pid is not None}
    if len(agents) == 1:
        job.agent = inspect_pid(next(iter(agents)), host)
    return job, notes


def assign_ranks(job: Job) -> dict[int, ProcInfo]:
    """rank -> process. Processes whose rank is unknown get the lowest free numbers,
    in the order given, and a note in ``job.warnings``."""
    out: dict[int, ProcInfo] = {}
    unknown: list[ProcInfo] = []
    for p in job.ranks:
        if p.rank is not None and p.rank not in out:
            out[p.rank] = p
        else:
            unknown.append(p)
    nxt = 0
    for p in unknown:
        while nxt in out:
            nxt += 1
        out[nxt] = p
        job.warnings.append(f"pid {p.pid}: rank unknown ({p.env_error or 'no RANK in its environment'}); "
                            f"shown as rank {nxt}")
    return dict(sorted(out.items()))
