"""Where this process sits in a multi-node job, read from its launcher's variables.

Promise: pure functions of an environment mapping (and, optionally, the
launcher's command line); nothing here touches the network or imports torch.
``detect`` says whether ``commdoctor run`` was started by torchrun, srun or
mpirun (Open MPI or a PMI launcher such as MPICH's hydra) across more than one
node, or with several processes on one node, which node it is on, whether it
is that node's leader (local rank 0: the one process per node that does the
node's work) and where the job's store is.

Where the store is (docs/multinode.md):

- torchrun: the agent's TCPStore at MASTER_ADDR:MASTER_PORT, which torchrun
  sets for its workers; with ``TORCHELASTIC_USE_AGENT_STORE=True`` every worker
  is a client (rank 0 included), as torch's own ``env://`` init does.
- srun, mpirun: rank 0 hosts a TCPStore at MASTER_ADDR:MASTER_PORT.
  Both are required, except under Slurm, where MASTER_ADDR defaults to the
  first host of SLURM_JOB_NODELIST and MASTER_PORT to 29500.
- one node (several processes, ``Job.single_node``): srun and mpirun need
  neither: MASTER_ADDR defaults to 127.0.0.1 (every process is on this host)
  and MASTER_PORT to 29500.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import Any, Mapping, Sequence

DEFAULT_PORT = 29500


@dataclass(frozen=True)
class Job:
    """This process's place in a multi-node job."""

    launcher: str  # "torchrun", "slurm", "openmpi", "pmi"
    rank: int
    world_size: int
    local_rank: int
    local_world_size: int
    node: int  # this node's index, 0..nnodes-1
    nnodes: int  # nodes the launcher started
    master_addr: str | None
    master_port: int | None
    agent_store: bool  # torchrun: the agent hosts the store; every worker is a client
    run_id: str
    expected_nodes: int  # nodes the job was asked for (torchrun --nnodes MIN:MAX gives MAX)
    node_names: tuple[str, ...] = ()  # host names by node index when the launcher says (SLURM_JOB_NODELIST)
    sources: tuple[str, ...] = ()  # the variables that decided, for evidence
    problem: str | None = None  # why the job's store cannot be found (what to set)
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def leader(self) -> bool:
        """Local rank 0 does the node's work; other local ranks only check in."""
        return self.local_rank == 0

    @property
    def single_node(self) -> bool:
        """Several processes on one node: local rank 0 checks the host, nothing is compared across nodes."""
        return self.expected_nodes <= 1

    @property
    def coordinator(self) -> bool:
        return self.leader and self.node == 0

    @property
    def hosts_store(self) -> bool:
        """Whether this process must host the TCPStore (rank 0, when no agent does)."""
        return not self.agent_store and self.rank == 0

    def name_of(self, node: int) -> str | None:
        return self.node_names[node] if 0 <= node < len(self.node_names) else None

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["node_names"] = list(self.node_names)
        d["sources"] = list(self.sources)
        d["notes"] = list(self.notes)
        return d


def _int(env: Mapping[str, str], *keys: str) -> tuple[int | None, str | None]:
    for k in keys:
        v = (env.get(k) or "").strip()
        if re.fullmatch(r"\d+", v):
            return int(v), k
    return None, None


def expand_hostlist(text: str) -> list[str]:
    """Slurm's compressed host list: ``node-[01-03,07],gpu5`` -> node-01, node-02, node-03, node-07, gpu5.

    One bracket group per name (what Slurm writes for ordinary clusters); a
    malformed piece is kept as it is.
    """
    out: list[str] = []
    # Split on commas outside brackets.
    parts, depth, cur = [], 0, ""
    for ch in text.strip():
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth = max(0, depth - 1)
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    for p in (x.strip() for x in parts):
        if not p:
            continue
        m = re.fullmatch(r"([^\[\]]*)\[([^\]]+)\]([^\[\]]*)", p)
        if not m:
            out.append(p)
            continue
        head, body, tail = m.groups()
        for r in body.split(","):
            r = r.strip()
            mm = re.fullmatch(r"(\d+)-(\d+)", r)
            if mm:
                lo, hi = mm.groups()
                width = len(lo)
                if int(hi) - int(lo) > 100000:
                    out.append(p)  # absurd: keep it as text rather than build a huge list
                    break
                out.extend(f"{head}{n:0{width}d}{tail}" for n in range(int(lo), int(hi) + 1))
            elif r.isdigit():
                out.append(f"{head}{r}{tail}")
            else:
                out.append(f"{head}[{r}]{tail}")
    return out


def _nnodes_max(text: str | None) -> int | None:
    if not text:
        return None
    m = re.fullmatch(r"\s*(\d+)\s*(?::\s*(\d+)\s*)?", text)
    if not m:
        return None
    return int(m.group(2) or m.group(1))


def detect(env: Mapping[str, str], agent_argv: Sequence[str] | None = None,
           node_names: Sequence[str] = ()) -> Job | None:
    """The job this process belongs to, or None when it is alone: one process on one node.

    A job of one node with several processes (``torchrun --standalone
    --nproc-per-node 2``, ``srun -N1 -n4``, ``mpirun -np 2`` on one host) is a
    job too (``Job.single_node``): its local rank 0 checks the host and the
    others only check in, so the host gets one report instead of one per
    process.

    ``agent_argv``: torchrun's command line (the parent process), which holds
    ``--nnodes MIN:MAX`` when workers cannot see it. ``node_names``: host names
    by node index given by the user (``--expect-hosts``), used when the
    launcher does not list them.
    """
    job = _detect(env, agent_argv)
    if job is None:
        return None
    names = tuple(node_names) or job.node_names
    expected = max(job.expected_nodes, len(names) if node_names else 0, job.nnodes)
    if expected <= 1 and job.local_world_size <= 1:
        return None
    if expected <= 1 and job.launcher == "slurm" and not (env.get("SLURM_STEP_ID") or env.get("SLURM_STEPID")):
        # A batch script run without srun sees the allocation's SLURM_NTASKS too, but it is one
        # process: only an srun step (which sets the step id) has the other tasks to wait for.
        return None
    from dataclasses import replace

    job = replace(job, node_names=names, expected_nodes=expected)
    if expected <= 1 and job.launcher != "torchrun":
        job = _one_node_store(job, env)
    return job


def _one_node_store(job: Job, env: Mapping[str, str]) -> Job:
    """srun / mpirun on one node: every process is on this host, so the store needs no address from the user."""
    from dataclasses import replace

    notes = [n for n in job.notes if not n.startswith("MASTER_ADDR unset")]
    addr, port = job.master_addr, job.master_port
    if not (env.get("MASTER_ADDR") or "").strip():
        addr = "127.0.0.1"
        notes.append("MASTER_ADDR unset: 127.0.0.1 (one node)")
    if port is None:
        port = DEFAULT_PORT
        notes.append(f"MASTER_PORT unset: {DEFAULT_PORT}")
    return replace(job, master_addr=addr, master_port=port, problem=None, notes=tuple(notes))


def _detect(env: Mapping[str, str], agent_argv: Sequence[str] | None) -> Job | None:
    addr = (env.get("MASTER_ADDR") or "").strip() or None
    port, _ = _int(env, "MASTER_PORT")
    if "TORCHELASTIC_RUN_ID" in env:
        rank, _ = _int(env, "RANK")
        world, _ = _int(env, "WORLD_SIZE")
        lrank, _ = _int(env, "LOCAL_RANK")
        lws, _ = _int(env, "LOCAL_WORLD_SIZE")
        node, _ = _int(env, "GROUP_RANK")
        nn, _ = _int(env, "GROUP_WORLD_SIZE")
        if rank is None or world is None:
            return None
        lws = lws or 1
        nn = nn or max(1, world // lws)
        node = node if node is not None else rank // lws
        expected = nn
        argv_nn = None
        if agent_argv:
            from commdoctor.core.rendezvous import parse_torchrun_argv

            parsed = parse_torchrun_argv(agent_argv) or {}
            argv_nn = parsed.get("nnodes")
        mx = _nnodes_max(env.get("PET_NNODES") or argv_nn)
        if mx:
            expected = max(expected, mx)
        restart = env.get("TORCHELASTIC_RESTART_COUNT", "0")
        problem = None if addr and port else "torchrun did not set MASTER_ADDR/MASTER_PORT for its workers"
        return Job("torchrun", rank, world, lrank or 0, lws, node, nn, addr, port,
                   agent_store=env.get("TORCHELASTIC_USE_AGENT_STORE", "").lower() == "true",
                   run_id=f"{env['TORCHELASTIC_RUN_ID']}.{restart}", expected_nodes=expected,
                   sources=("TORCHELASTIC_RUN_ID", "RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK",
                            "GROUP_WORLD_SIZE"), problem=problem)
    if "SLURM_PROCID" in env and "SLURM_NTASKS" in env:
        rank, _ = _int(env, "SLURM_PROCID")
        world, _ = _int(env, "SLURM_NTASKS", "SLURM_STEP_NUM_TASKS")
        lrank, _ = _int(env, "SLURM_LOCALID")
        nn, _ = _int(env, "SLURM_NNODES", "SLURM_STEP_NUM_NODES", "SLURM_JOB_NUM_NODES")
        node, _ = _int(env, "SLURM_NODEID")
        if rank is None or world is None:
            return None
        nn = nn or 1
        m = re.match(r"\s*(\d+)", env.get("SLURM_NTASKS_PER_NODE") or "")
        lws = int(m.group(1)) if m else max(1, world // nn)
        node = node if node is not None else rank // max(1, lws)
        names = tuple(expand_hostlist(env.get("SLURM_STEP_NODELIST") or env.get("SLURM_JOB_NODELIST") or ""))
        notes = []
        if addr is None and names:
            addr = names[0]
            notes.append(f"MASTER_ADDR unset: the first host of the node list, {addr}")
        if port is None:
            port = DEFAULT_PORT
            notes.append(f"MASTER_PORT unset: {DEFAULT_PORT}")
        problem = None if addr else "set MASTER_ADDR to the first node's address (SLURM_JOB_NODELIST is unset)"
        run_id = f"slurm.{env.get('SLURM_JOB_ID', '0')}.{env.get('SLURM_STEP_ID', '0')}"
        return Job("slurm", rank, world, lrank or 0, lws, node, nn, addr, port, agent_store=False, run_id=run_id,
                   expected_nodes=nn, node_names=names if len(names) == nn else (),
                   sources=("SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", "SLURM_NNODES", "SLURM_NODEID"),
                   problem=problem, notes=tuple(notes))
    for launcher, rk, sk, lk, lsk in (
        ("openmpi", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
         "OMPI_COMM_WORLD_LOCAL_SIZE"),
        ("pmi", "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS"),
    ):
        if rk in env and sk in env:
            rank, _ = _int(env, rk)
            world, _ = _int(env, sk)
            lrank, _ = _int(env, lk)
            lws, _ = _int(env, lsk)
            if rank is None or world is None:
                return None
            lws = lws or 1
            # mpirun fills nodes slot by slot by default: rank // ranks-per-node is the node.
            node = rank // lws
            nn = max(1, -(-world // lws))
            problem = None if addr and port else "set MASTER_ADDR (rank 0's host) and MASTER_PORT (a free port) " \
                                                 "for every rank, e.g. mpirun -x MASTER_ADDR=node-01 -x MASTER_PORT=29500"
            run_id = f"{launcher}.{env.get('OMPI_MCA_ess_base_jobid') or env.get('PMI_JOBID') or '0'}"
            return Job(launcher, rank, world, lrank or 0, lws, node, nn, addr, port, agent_store=False, run_id=run_id,
                       expected_nodes=nn, sources=(rk, sk, lk, lsk), problem=problem)
    return None
