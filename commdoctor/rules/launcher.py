"""Rules for launchers and the processes they start: torchrun's failure summary, srun, signals, missing ranks.

Promise: rule rows only (see commdoctor.rules.base), written from what
torch.distributed.elastic prints (``exitcode: -9``, ``Signal 9 (SIGKILL)
received by PID``, its "Root Cause (first observed failure)" block), the
kernel's OOM killer and the shell. A process that died is a root cause
unless the logs say why it died (its own error, or a watchdog that took it
down on purpose).
"""

from __future__ import annotations

import re
from typing import Any

from commdoctor.rules.base import (CONSEQUENCE, E, KILLED_BY_SIGNAL, PHASE_DEATHS, PHASE_LAST, ROOT, SELF_ABORT, W, Cand,
                                   Code, ModelRule, aborted_for_a_reason, cand, ctx, group, hits, missing_ranks,
                                   own_reading, peers_failed, quiet_exits, raised_ranks, sig, signal_name, stamp)

#: torch's prefix on each line a rank prints ("[rank1]: "), and torchrun --tee's ("[default0]:").
_RANK_PREFIX = re.compile(r"^\s{0,8}\[(?:rank|default)\d{1,7}\]:\s?")


def _hydra_execvp(m: Any, hs: list[Any], found: list[Cand]) -> list[Cand]:
    f = group(hs, "file") or "?"
    if f.rsplit("/", 1)[-1] == "hydra_pmi_proxy":
        return [cand("LOG066", "other", 2, hs, params={
            "what": "Hydra could not start its own proxy (hydra_pmi_proxy not found beside mpiexec or on PATH)"},
            detail="mpiexec starts hydra_pmi_proxy on every node before any rank: a proxy it cannot execute is an MPICH "
                   "install that is incomplete, moved, or not on PATH on that node (a build tree's libtool wrapper, "
                   "a bin directory missing from PATH). Run the installed mpiexec with its bin directory on PATH.")]
    return [cand("LOG066", "launcher_misconfig", 2, hs, params={
        "what": f"Hydra could not execute {f} ({group(hs, 'err') or 'failed'}) on a node"})]


def _process_died(m: Any, hs: list[Any], found: list[Cand]) -> list[Cand]:
    """A rank killed or crashed: from the launcher's summary (the first to fail) or the line that says so."""
    roots = [f for f in m.elastic if f.root]
    killed = [f for f in m.elastic if f.signal or (f.exitcode is not None and f.exitcode < 0)]
    el = roots or killed
    raised = raised_ranks(m)
    # Workers the launcher itself stopped once another worker had failed ("Sending process PID closing signal
    # SIGTERM") end with -15 in its summary: that failure's echo, not a kill from outside.
    closed = {h.groups.get("pid") for h in hits(m, "agent_closing_worker")}
    killed_elsewhere = [f for f in killed if str(f.pid) not in closed]
    if raised and not killed_elsewhere and not any(c.tier <= 4 and not c.consequence for c in found):
        # Each node's launcher names its own first failure; the rank whose own code raised failed first, and
        # the other ranks' closed connections and timeouts follow from it.
        r, ev = sorted(raised.items())[0]
        said = _RANK_PREFIX.sub("", ev.text, count=1)[:160]  # the error as the rank printed it, without torch's "[rankN]:"
        f = next((x for x in el if x.rank == r), None)
        where = f" on {f.host}" if f is not None and f.host else ""
        evs = [ev] + [x.ev for x in el if x.rank == r and x.ev][:1]
        hosts = {f.host} if f is not None and f.host else set()
        if not peers_failed(m):
            # Nothing else failed: no timeout, no closed connection, no communication error anywhere. The job
            # stopped on that error alone, and the launcher stopping the other ranks is what followed.
            return [Cand("LOG115", "other", 4, ev_seq(m, ev), evs, ranks={r}, hosts=hosts,
                         params={"who": f"rank {r}{where}", "what": said})]
        c = Cand("LOG060", "peer_process_died", 4, ev_seq(m, ev), evs,
                 params={"what": f"rank {r}{where} raised an error of its own: {said}"},
                 ranks={r}, hosts=hosts,
                 detail="Nothing killed it: its own code raised (the traceback above the quoted line says where), "
                        "the process ended, and the other ranks lost their connections to it. Fix that error; the "
                        "others' errors are its echo.")
        return [c]
    if not hs and not el:
        return []
    evs = [f.ev for f in el if f.ev][:2] + [h.ev for h in hs[:2]]
    seq = min([h.seq for h in hs] + [0 if el else 10**12])
    quiet = quiet_exits(m)
    who = _killed_from_outside(m, el) or next((f for f in el if f in quiet), None) or next((f for f in el), None)
    if who is not None and who.ev is not None:
        evs = [who.ev] + [e for e in evs if e is not who.ev]
    what = "a rank was killed or crashed"
    exc = [h for h in hs if _terminated(h)]
    terminated = bool(exc) and len(exc) == len(hs)  # nothing but std::terminate's own lines
    if terminated:
        # std::terminate: the process aborted on an exception nothing caught (abort() follows, SIGABRT).
        h = exc[0]
        what = (f"rank {h.ev.rank}" if h.ev.rank is not None else "a process") + (
            f" aborted on an uncaught C++ exception ('{h.groups['exc']}')" if h.groups.get("exc")
            else " aborted: std::terminate was called with no exception in flight")
    ds = next((h.groups["dscode"] for h in hs if h.groups.get("dscode")), None)
    if who is None and ds is not None:
        what = f"a rank was killed by {signal_name(-int(ds))} (DeepSpeed's launcher: return code {ds})"
    if who is not None:
        bits = [f"rank {who.rank}" if who.rank is not None else "a rank", f"on {who.host}" if who.host else ""]
        sgn = who.signal or (f"signal {-who.exitcode}" if who.exitcode is not None and who.exitcode < 0 else None)
        what = " ".join(b for b in bits if b) + (f" was killed by {sgn}" if sgn else f" exited with status {who.exitcode}")
    killed9 = (who is not None and who.signal == "SIGKILL") or (who is None and ds == "-9")
    detail = ("SIGKILL comes from the kernel's OOM killer (dmesg: 'Out of memory: Killed process'), a scheduler "
              "enforcing limits, or a manual kill." if killed9 else "")
    if terminated and who is None:
        detail = ("std::terminate ends a process (abort(), SIGABRT) when an exception escapes every handler: the "
                  "ranks that wait on it then hang or lose their connections. The line after it ('what(): ...') "
                  "says what the exception was about; the code that threw it is the place to look.")
    c = Cand("LOG060", "peer_process_died", 5, seq, [e for e in evs if e is not None], params={"what": what},
             detail=detail)
    if who is not None and who.rank is not None:
        c.ranks.add(who.rank)
    if who is None:
        c.ranks.update(h.ev.rank for h in exc if h.ev.rank is not None)
    if who is not None and who.host:
        c.hosts.add(who.host)
    if who is not None and who in quiet:
        c.params["what"] += " having logged no error: its own code ended it (sys.exit, os._exit), not a failure it met"
        c.tier = 4
        c.evidence = [e for e in [who.ev] + [x for x in c.evidence if x is not who.ev] if e is not None]
    elif who is not None and who.signal is None and (who.exitcode or 0) > 0:
        c.tier = 7  # it raised: its own traceback is the root cause, the exit is what followed
        c.consequence = bool(found) or bool(m.unmatched_errors)
    elif _aborted_itself(m, who, hs, found):
        # SIGABRT is a process ending itself (abort(), std::terminate): torch's NCCL watchdog does it on purpose
        # after a collective timeout or an NCCL error ("we are taking the entire process down"). What made it
        # abort is the root cause; the exit is what followed.
        c.tier = 7
        c.consequence = True
        c.detail = ("The process aborted itself (std::terminate, then SIGABRT) on the exception its 'what():' line "
                    "names, as torch's watchdog does on purpose after a collective timeout or a communicator error: "
                    "that error is the cause." if exc else SELF_ABORT)
    return [c]


#: The launcher each of ColossalAI's launch_from_* entry points reads its environment from.
_COLOSSAL_LAUNCHER = {"torch": "torchrun", "SLURM": "srun", "OpenMPI": "mpirun"}


def _rank_conflict(hs: list[Any]) -> str:
    g = hs[0].groups
    if g.get("mpi"):
        return f"MPI gives {g['what']} {g['mpi']} where torch.distributed has {g['torch']}: two launchers set the ranks"
    if g.get("lr"):
        return (f"LOCAL_RANK {g['lr']} and Open MPI's local rank {g['olr']} disagree: a launcher was started under "
                "mpirun, or LOCAL_RANK is exported for every process")
    if g.get("env"):
        return (f"--local_rank={g['arg']} on the command line but LOCAL_RANK={g['env']} in the environment (a "
                "hard-coded --local_rank)")
    if g.get("nolr"):
        return "the script was started without a launcher that sets LOCAL_RANK (plain python, srun or mpirun)"
    if g.get("over"):
        return (f"local rank {g['over']} on a node that shows {g['ndev']} GPU(s): more processes per node than "
                "visible GPUs")
    if g.get("slots"):
        return "the hostfile or the processes per node do not match the GPUs each node has"
    if g.get("cvar"):
        return (f"ColossalAI's launch_from_{g['cenv'].lower()} found no {g['cvar']}: the script was not started by "
                f"{_COLOSSAL_LAUNCHER[g['cenv']]}")
    if g.get("ws"):
        return (f"a process group of one rank was created before the framework's own, while the launcher started "
                f"{g['ws']}: every rank holds the whole model")
    return "the process group was created with NCCL only, without the gloo CPU backend vLLM needs"


def _launch_args(g: dict[str, Any]) -> str:
    if g.get("ntasks"):
        return f"--ntasks={g['ntasks']} in the Slurm script, which Lightning does not read: use --ntasks-per-node"
    if g.get("lr"):
        return "LOCAL_RANK was set for the process that launches the others (an exported LOCAL_RANK)"
    if g.get("gpus"):
        return "GPUs were asked for that this machine does not have (devices / gpu ids against nvidia-smi)"
    if g.get("addr"):
        return "a multi-node launch without MASTER_ADDR (rank 0's address)"
    if g.get("two"):
        return "a multi-GPU launch with fewer than two processes or GPU ids"
    if g.get("nw"):
        return f"{g['nw']} workers were asked for and MPI started {g['np']}"
    if g.get("mpi"):
        return f"{g['mpi']} MPI processes on a node where {g['det']} GPU(s) are visible"
    if g.get("pernode"):
        return "the nodes run different numbers of ranks (lmdeploy needs the same number on each)"
    if g.get("headless"):
        return "an engine on another node was started without --headless"
    if g.get("cfg"):
        return "the data-parallel engines were started with different settings (every node needs the same command line)"
    if g.get("ibgpu"):
        return f"GPU {g['ibgpu']} has no InfiniBand device in the transfer engine's mapping (the devices listed per GPU)"
    return "lmdeploy's distributed start without its address variables (LMDEPLOY_DP_MASTER_ADDR / LMDEPLOY_DIST_INIT_ADDR)"


def ev_seq(m: Any, ev: Any) -> int:
    """The global order of an exception line (for ordering candidates)."""
    return next((seq for _t, _m, e, seq in m.exceptions if e is ev), 0)


def _terminated(h: Any) -> bool:
    """A process_died hit on std::terminate's own line."""
    return bool(h.groups.get("exc") or h.groups.get("noexc"))


#: Signals that end a process from outside or on a fault, never torch's own abort after a timeout: the kernel's OOM
#: killer or a scheduler (SIGKILL), a crash (SIGSEGV), /dev/shm unable to back a mapping (SIGBUS).
_HARD_DEATHS = ("SIGKILL", "SIGSEGV", "SIGBUS")


def _killed_from_outside(m: Any, el: list[Any]) -> Any:
    """Of the failures the launchers name first (one per node), the rank killed or crashed, when the logs do not show
    it dying after the others' collective timeouts.

    Each node's torchrun names its own first failure: on the node of a rank the OOM killer took, that rank (-9); on
    the other nodes, their ranks aborting once their collectives with it timed out (-6). The kill is what the others
    waited on. One that came after the first timeout (both clocks in the logs) followed from it instead."""
    hard = [f for f in el if (f.signal or (signal_name(-f.exitcode) if (f.exitcode or 0) < 0 else None)) in _HARD_DEATHS]
    if not hard or len(hard) == len(el):
        return None
    timeouts = [t for t in (stamp(w.ev.text) for w in m.watchdog if w.timed_out and w.ev is not None) if t]
    first = min(timeouts, key=lambda t: t[1]) if timeouts else None
    agents = [x for x in m.elastic if x.agent and x.ev is not None]
    for f in hard:
        # The agent's own "failed (exitcode: -9) ..." line of the same file carries its clock; the summary does not.
        own = next((x for x in agents if f.ev is not None and x.ev.source == f.ev.source and x.exitcode == f.exitcode), None)
        t = stamp(own.ev.text) if own is not None else None
        if first is not None and t is not None and t[0] == first[0] and t[1] > first[1]:
            continue
        return f
    return None


def _aborted_itself(m: Any, who: Any, hs: list[Any], found: list[Cand]) -> bool:
    """The dead rank aborted (SIGABRT, std::terminate), and the logs say why: a watchdog timeout, an error a rule
    explains, or one it does not."""
    if who is not None:
        abrt = who.signal == "SIGABRT" or who.exitcode == -6
    else:
        # "Aborted (core dumped)" is how a shell or srun reports a child ended by SIGABRT.
        abrt = bool(hs) and all(h.groups.get("name") == "SIGABRT" or h.groups.get("sig") == "6"
                                or "-6" in (h.groups.get("code"), h.groups.get("dscode")) or h.groups.get("abrt")
                                or h.groups.get("pyabrt")
                                or _terminated(h) for h in hs)
    return abrt and aborted_for_a_reason(m, found)


def _ranks_missing(m: Any, found: list[Cand], _unused: list[Cand]) -> list[Cand]:
    """Global ranks that never started, from torch's GLOBAL_RANK/MEMBER lines."""
    out = []
    # Lightning's rank 0 prints "All distributed processes registered. Starting with {world_size} processes" once every
    # rank joined the process group (lightning/fabric/utilities/distributed.py): the other ranks' lines were not posted.
    joined = {int(h.groups["n"]) for h in hits(m, "lightning_all_registered")}
    for world, seen in m.members.items():
        if world in joined:
            continue
        missing = missing_ranks(world, seen)
        if missing and len(seen) < world:
            out.append(Cand("LOG062", "launcher_misconfig", 3, 0, list(seen.values())[:4],
                            params={"what": f"only global rank(s) {', '.join(map(str, sorted(seen)))} of {world} ever started"
                                            f" (missing: {', '.join(map(str, missing[:8]))})"}))
    return out


#: Causes of a rank that could not join the rendezvous (its store, its address): what a launch that started fewer
#: nodes than the job expects looks like from the nodes that did start.
_RENDEZVOUS_FAILED = ("rendezvous_unreachable", "firewall_or_port_blocked", "hostname_resolution")


def _local_only(m: Any, found: list[Cand], _unused: list[Cand]) -> list[Cand]:
    """DeepSpeed's launcher found no hostfile and started this node's processes alone, and the rendezvous failed.

    deepspeed/launcher/runner.py (fetch_hostfile) warns "Unable to find hostfile, will proceed with training with local
    resources only" and launches on this node only: on a single node that is every run's harmless note. When the same
    log shows the rendezvous failing (a store timeout, a traceback through init_process_group's rendezvous), the
    program expected ranks of other nodes that the launcher never started (EleutherAI/gpt-neox#671)."""
    hs = hits(m, "ds_no_hostfile")
    if not hs:
        return []
    rdzv = [c for c in found if c.cause in _RENDEZVOUS_FAILED]
    frames = hits(m, "rendezvous_frame")
    # Another cause (a port already in use, a rank that died) explains a failed rendezvous on one node as well.
    if (not rdzv and not frames) or any(c.cause and not c.weak and c.cause not in _RENDEZVOUS_FAILED for c in found):
        return []
    return [cand("LOG066", "launcher_misconfig", 1, hs + frames[:1],
                 params={"what": "DeepSpeed's launcher found no hostfile and started this node's processes only, while "
                                 "the job waits in its rendezvous for ranks of other nodes"},
                 detail="Pass the hostfile to the deepspeed launcher (--hostfile, default /job/hostfile) on the node "
                        "that starts the job; the world size the program expects then starts on every node it names.")]


def _agent_signalled(hs: list[Any]) -> dict[str, Any]:
    g = hs[0].groups
    return {"what": f"the launcher (torchrun's agent, pid {g.get('pid')}) was stopped from outside by {signal_name(g.get('sig'))}"}


def _unschedulable(m: Any, hs: list[Any], found: list[Cand]) -> list[Cand]:
    """Pods the scheduler could not place, less those of an input that shows a pod placed after them."""
    placed = {h.ev.source: h.seq for h in hits(m, "k8s_scheduled")}
    hs = [h for h in hs if not (h.ev.source in placed and placed[h.ev.source] > h.seq)]
    return [own_reading(hs)] if hs else []


def _slurm_cancelled(m: Any, hs: list[Any], found: list[Cand]) -> list[Cand]:
    """Slurm cancelled the job or step: a lost node is the hardware; a time limit, preemption or scancel stopped it
    from outside, and whatever kept it running that long (a hang) is what to look for."""
    why = (group(hs, "why") or "").upper()
    ids = group(hs, "id") or "?"
    node = group(hs, "node") or "?"
    if "NODE FAILURE" in why:
        return [cand("LOG037", "hardware_fault", 3, hs, params={"what": f"Slurm lost node {node} and cancelled {ids}"})]
    what = {"TIME LIMIT": "at its time limit", "PREEMPTION": "for preemption"}.get(why, "from outside (scancel)")
    return [cand("LOG060", "peer_process_died", 5 if why == "PREEMPTION" else 7, hs,
                 params={"what": f"Slurm cancelled {ids} on {node} {what}"},
                 alts=[("collective_timeout_straggler", "a job that ran into its time limit often hung first: the "
                                                        "last lines of each rank before the cancel show where")])]


def _srun_task_signal(m: Any, hs: list[Any], found: list[Cand]) -> list[Cand]:
    """srun's "task N: Killed|Terminated|...": after Slurm cancelled the step it is that cancel's echo."""
    cancelled = bool(m.hits.get("slurm_cancelled"))
    return [cand("LOG060", "peer_process_died", 7 if cancelled else 6, hs, consequence=cancelled,
                 params={"what": f"srun reports task(s) {group(hs, 'tasks') or '?'} on {group(hs, 'node') or '?'} "
                                 f"ended by a signal ({group(hs, 'sig') or '?'})"})]

def _slots_what(hs: list[Any]) -> dict[str, Any]:
    n = group(hs, "n")
    if n:
        return {"what": f"{n} processes requested, more than the hosts or the allocation offer"}
    if any("Memory required by task" in h.ev.text for h in hs):
        return {"what": "Slurm cannot give each task the memory it asks for (--mem-per-cpu / --mem-per-gpu times the "
                        "tasks is more than the nodes or the allocation have)"}
    if any("node configuration" in h.ev.text or "generic resource" in h.ev.text for h in hs):
        return {"what": "Slurm cannot place the step or allocation as requested (node configuration or GPUs/gres that "
                        "the partition or the job's allocation does not have)"}
    return {"what": "more processes requested than the hosts or the allocation offer"}


def _ssh_client(m: Any, hs: list[Any], found: list[Cand]) -> list[Cand]:
    """Why ssh to a node failed decides the cause: nothing listening, a filter on the way, or a name that does not
    resolve."""
    h = hs[0]
    g = h.groups
    host = g.get("host") or g.get("host2") or "a node"
    err = g.get("err") or ""
    if g.get("host2"):
        return [cand("LOG065", "hostname_resolution", 1, hs, params={"host": host},
                     detail=f"ssh could not resolve {host}: the hostfile names a host this node cannot look up "
                            "(DNS or /etc/hosts).")]
    if err in ("Connection timed out", "No route to host", "Network is unreachable"):
        return [cand("LOG065", "firewall_or_port_blocked", 2, hs, params={"host": host},
                     detail=f"ssh to {host} port {g.get('port')} got '{err}': packets to that port are dropped or "
                            "rejected on the way (a firewall or security group), or the address is not reachable.",
                     alts=[("rendezvous_unreachable", "if the address itself is wrong (a stale hostfile, a pod IP from "
                                                      "another network), no host answers there at all")])]
    if err:  # refused or reset: the host answered, but no ssh server listens on that port
        return [cand("LOG065", "launcher_misconfig", 1, hs, params={"host": host},
                     detail=f"ssh to {host} port {g.get('port')} was refused: the host is up but no ssh server listens "
                            "there (a container or pod without sshd, or sshd on another port: set it in ~/.ssh/config "
                            "or the launcher's ssh arguments, e.g. plm_rsh_args \"-p PORT\").",
                     alts=[("firewall_or_port_blocked", "a firewall that rejects instead of dropping gives 'Connection "
                                                        "refused' too: nc -zv HOST 22 from the first node")])]
    return [cand("LOG065", "launcher_misconfig", 1, hs, params={"host": host},
                 detail="ssh reached the node but could not log in without a password (no key for this user, or an "
                        "unknown host key): the launcher needs passwordless ssh between the nodes.")]


def _parallel_sizes_what(hs: list[Any]) -> str:
    world = group(hs, "world", "world2", "world3", "world4", "world5", "world6", "world7", "world8", "world9")
    if world:
        return (f"{world} processes were started, which the tensor/pipeline/context/expert/data parallel sizes do not "
                "divide (nodes x GPUs per node against the parallel config)")
    return ("the number of processes started does not fit the parallel sizes the job asks for "
            f"({(group(hs, 'said') or '').strip()[:120]})")


def _usage_local_rank(m: Any, hs: list[Any], found: list[Cand]) -> list[Cand]:
    """argparse's usage line declaring --local_rank and not --local-rank, in a log where torch 2.x's launcher said it
    passes --local-rank: the script refused its argument."""
    if not hits(m, "launch_passes_local_rank"):
        return []
    hs = [h for h in hs if "--local-rank" not in h.ev.text]
    return [cand("LOG147", "launcher_misconfig", 2, hs, params={"arg": "--local-rank=N"})] if hs else []


def _ds_hostfile_what(hs: list[Any]) -> str:
    """What DeepSpeed's runner refused, in the words of the setting to fix."""
    if group(hs, "dup"):
        return f"the hostfile lists {group(hs, 'dup')} twice (one 'HOST slots=N' line per host)"
    if group(hs, "bad"):
        return f"a hostfile line is not 'HOST slots=N': {group(hs, 'bad')}"
    if group(hs, "missing"):
        return f"--include/--exclude names {group(hs, 'missing')}, which the hostfile does not list"
    if group(hs, "launcher"):
        return f"--launcher {group(hs, 'launcher')}, whose program is not installed on this node"
    if "Num nodes" in hs[0].ev.text:
        return "--num_nodes is above 1 but DeepSpeed found no hostfile (-H/--hostfile, default /job/hostfile)"
    return "the hostfile is empty or has no 'HOST slots=N' line"


SIGNATURES = (
    # torch/distributed/elastic/agent/server/api.py: the agent enters its exit barrier only once its own workers
    # all SUCCEEDED, and logs a failure of that wait ("Error waiting on exit barrier", logger.exception) and goes
    # on: usually the store's host finished first and closed the store. Its own traceback (a closed connection)
    # is no failure of the job; a real one shows on the host whose workers failed.
    ctx("exit_barrier_error", ("Error waiting on exit barrier",), r"Error waiting on exit barrier",
        "this host's workers all finished; waiting for the other hosts' launchers failed (harmless)", harmless=True),
    # -- the training frameworks' own launch checks ----------------------------------------------------------
    # Lightning (fabric/plugins/environments/slurm.py, torchelastic.py; utilities/device_parser.py;
    # accelerators/cuda.py): the devices or nodes it was told to use do not match what SLURM or torchrun started,
    # or what the machine has.
    sig("lightning_shape", ("in Lightning, but the", "But your machine only has", "devices but this machine only has"),
        r"You set `(?P<set>devices=\d{1,5}|num_nodes=\d{1,5})`(?: and `num_nodes=\d{1,5}`)? in Lightning, but the "
        r"(?:number of tasks per node configured in SLURM `(?P<slurm>--ntasks-per-node=\d{1,5})`|number of nodes "
        r"configured in SLURM `(?P<slurm2>--nodes=\d{1,5})`|product \([^)\n]{1,30}\) does not match the world size "
        r"\((?P<world>\d{1,6})\))"
        r"|You requested gpu: (?P<want>\[[\d, ]{1,100}\])\s{0,4}But your machine only has: (?P<have>\[[\d, ]{0,100}\])"
        r"|You requested to find (?P<n>\d{1,4}) devices but this machine only has (?P<m>\d{1,4}) GPUs",
        "launcher_misconfig", ROOT, 2, "Lightning was told to use devices or nodes the launch does not have",
        code="LOG066", params=lambda hs: {"what": (
            f"Lightning's {group(hs, 'set')} does not match {group(hs, 'slurm', 'slurm2')}" if group(hs, "slurm", "slurm2")
            else f"Lightning's {group(hs, 'set')} does not match the world size {group(hs, 'world')} torchrun started"
            if group(hs, "world") else
            f"Lightning was asked for GPUs {group(hs, 'want')} on a machine that shows {group(hs, 'have')}"
            if group(hs, "want") else
            f"{group(hs, 'n')} GPUs were asked for on a machine that shows {group(hs, 'm')}")}),
    # Lightning's subprocess launcher (strategies/launchers/subprocess_script.py): "Child process with PID %d
    # terminated with code %d. Forcefully terminating all other processes to avoid zombies" -- one local rank
    # exited; its own error is above in the same output.
    sig("lightning_child_failed", ("Forcefully terminating all other processes",),
        r"Child process with PID (?P<pid>\d{1,10}) terminated with code (?P<code>-?\d{1,4})\. Forcefully terminating",
        "peer_process_died", ROOT, 6, "Lightning saw one of its processes exit and stopped the others",
        code="LOG060", params=lambda hs: {"what": f"a Lightning process (pid {group(hs, 'pid')}) exited with code "
                                                  f"{group(hs, 'code')} and Lightning stopped the others"},
        detail=KILLED_BY_SIGNAL),
    # accelerate (utils/launch.py): "Tried to launch distributed communication on port `P`, but another process is
    # utilizing it." -- a multi-node launch cannot move to another port by itself, as its one-node warning does.
    sig("accelerate_port", ("but another process is utilizing it",),
        r"Tried to launch distributed communication on port `(?P<port>\d{1,5})`, but another process is utilizing it",
        "port_conflict", ROOT, 1, "accelerate's main process port is taken on this node",
        code="LOG010", params=lambda hs: {"port": group(hs, "port") or "?"}),
    # accelerate (state.py): on GeForce RTX 40xx it refuses to start unless P2P and IB are off ("Using RTX 4000
    # series doesn't support faster communication broadband via P2P or IB. Please set `NCCL_P2P_DISABLE="1"` ...");
    # `accelerate launch` sets them itself and only warns.
    # (accelerate's big_modeling.py warns the same of the driver: "We've detected an older driver with an RTX 4000
    # series GPU. These drivers have issues with P2P.")
    sig("accelerate_rtx4000", ("Using RTX 4000 series doesn't support", "older driver with an RTX 4000 series GPU"),
        r"Using RTX 4000 series doesn't support faster communication broadband via P2P or IB"
        r"|We've detected an older driver with an RTX 4000 series GPU\. These drivers have issues with P2P",
        "p2p_driver_bug", ROOT, 2, "accelerate refused to start on RTX 40xx boards with NCCL's P2P enabled",
        code="LOG039"),
    # The model-parallel stacks' checks that the processes started fit the parallel sizes asked for: Megatron-LM
    # (core/parallel_state.py "world_size (%d) is not divisible by %d", arguments.py "world size (%d) is not
    # divisible by total_model_size", "... must be divisible by total world_size: tensor_model_parallel_size ..."),
    # torchtitan (distributed/parallel_dims.py "Invalid parallel dims: dp_replicate(..) * ... != WORLD_SIZE(..)"),
    # DeepSpeed's pipeline topology ("num_stages (%d) must divide distributed world size (%d)").
    sig("parallel_sizes", ("is not divisible by", "must be divisible by total world_size", "Invalid parallel dims",
                           "must divide distributed world size", "must be equal to the world size(",
                           "is not valid with the current list of valid GPU counts", "The parallel mesh requires",
                           "must be divisible by dp_replicate_size", "must divide world size", "divisible", "divide",
                           "factor of", "be equal", "must equal", "should equal", "incompatible with", "not match", "doesn't match", "evenly"),
        r"world[_ ]size:? \(?(?P<world>\d{1,6})\)? (?:is not divisible by|must be divisible by total world_size)"
        r"|Invalid parallel dims: [^\n]{1,200}!= WORLD_SIZE\((?P<world2>\d{1,6})\)"
        r"|num_stages \(\d{1,6}\) must divide distributed world size \((?P<world3>\d{1,6})\)"
        # ColossalAI (booster/plugin/hybrid_parallel_plugin.py "World size %d is not divisible by tp_size %d * pp_size
        # %d"; cluster/process_group_mesh.py "The product of the size(%d) must be equal to the world size(%d)") and
        # DeepSpeed's elasticity ("World size (%d) is not valid with the current list of valid GPU counts")
        r"|World size (?P<world4>\d{1,6}) is not divisible by tp_size \d{1,6}"
        r"|The product of the size\(\d{1,6}\) must be equal to the world size\((?P<world5>\d{1,6})\)"
        r"|World size \((?P<world6>\d{1,6})\) is not valid with the current list of valid GPU counts"
        # transformers (distributed/utils.py "The parallel mesh requires %d processes, but world_size is %d";
        # configuration_utils.py "WORLD_SIZE (%d) must be divisible by dp_replicate_size * fsdp_size * pp_size (%d)")
        # and TRL's colocated vLLM ("tensor_parallel_size (%d) must divide world size (%d) evenly")
        r"|The parallel mesh requires \d{1,6} processes, but world_size is (?P<world7>\d{1,6})"
        r"|WORLD_SIZE \((?P<world8>\d{1,6})\) must be divisible by dp_replicate_size"
        r"|tensor_parallel_size \(\d{1,6}\) must divide world size \((?P<world9>\d{1,6})\) evenly"
        # Any other stack's check in its own words: an exception raised because the world size (the processes the
        # launch started) must divide, equal or fit something ("AssertionError: world size should be divisible by
        # parameter parallel size", "MPI world size 16 does not match torch world size 8"). A constraint between the
        # model and a parallel size alone ("attention heads must be divisible by tensor parallel size") is the
        # program's configuration, not the launch's.
        r"|(?:Error|Exception)\w{0,40}: (?=[^\n]{0,300}?(?:\bworld[_ ]size\b|\bWORLD_SIZE\b"
        r"|\bnumber of (?:processes|ranks|GPUs|nodes)\b))(?=[^\n]{0,300}?(?:\bdivisible\b|\bmust divide\b|\bshould divide\b"
        r"|\ba factor of\b|\b(?:must|should) (?:be )?equal\b|\bincompatible with\b|\bdoes not match\b|\bdoesn't match\b|\bevenly\b))(?P<said>[^\n]{1,200})",
        "launcher_misconfig", ROOT, 2, "the processes started do not fit the parallel sizes the job asks for",
        code="LOG066", params=lambda hs: {"what": _parallel_sizes_what(hs)}),
    # The LLM servers' checks of the GPUs and processes a deployment asks for: vLLM (config/parallel.py "World size
    # (N) is larger than the number of available GPUs (M) in this node", executor/ray_utils.py "Cannot provide a
    # placement group requiring N GPUs ... within S seconds"), lmdeploy (pytorch/ray.py "Cannot provide a placement
    # group of ..."), TensorRT-LLM (runtime/worldConfig.cpp "MPI size %d != TP size %d * PP size %d * CP Size %d"),
    # SGLang (validation: "tp_size must be divisible by number of nodes").
    sig("serving_shape", ("is larger than the number of available GPUs", "Cannot provide a placement group",
                          "!= TP size", "mpiSize == tp * pp", "tp_size must be divisible by number of nodes"),
        r"World size \((?P<world>\d{1,6})\) is larger than the number of available GPUs \((?P<gpus>\d{1,4})\) in this node"
        r"|Cannot provide a placement group (?:requiring (?P<need>\d{1,6}) GPUs|of )"
        r"|MPI size (?P<mpi>\d{1,6}) != TP size (?P<tp>\d{1,6}) \* PP size (?P<pp>\d{1,6})"
        # TensorRT-LLM before 0.9 checked the same with TLLM_CHECK, which prints the condition itself
        # (Tlntin/Qwen-TensorRT-LLM#123: engines built for TP 4 run under mpirun -n 2).
        r"|Assertion failed: (?P<mpicheck>mpiSize == tp \* pp)"
        r"|tp_size must be divisible by number of nodes",
        "launcher_misconfig", ROOT, 2, "the server was started with more GPUs or another process count than it has",
        code="LOG066", params=lambda hs: {"what": (
            f"a world of {group(hs, 'world')} GPUs on a node that shows {group(hs, 'gpus')} (more nodes need "
            "--nnodes, or Ray)" if group(hs, "world") else
            f"{group(hs, 'mpi')} MPI processes for TP {group(hs, 'tp')} x PP {group(hs, 'pp')}" if group(hs, "mpi") else
            "the MPI process count is not the engine's TP x PP (mpirun -n must equal the number of engine ranks)"
            if group(hs, "mpicheck") else
            "Ray never had free GPUs for the placement group the tensor/pipeline sizes need (ray status)"
            if "placement group" in hs[0].ev.text else
            "the tensor x pipeline size does not divide among the nodes")}),
    # Ray Train (v2/_internal/exceptions.py, backend_executor.py): the workers (and their GPUs) it asked the
    # cluster for never all came up: "The worker group startup timed out after %s seconds waiting for %d workers"
    # and, before v2, "Placement group creation timed out."
    # What a framework checks about its own launch when it starts, each written from its source:
    # DeepSpeed (comm/comm.py mpi_discovery: "MPI rank {} does not match torch rank {}", "MPI world size {} does not
    # match torch world size {}"; runtime/engine.py: "LOCAL_RANK ({}) != OMPI_COMM_WORLD_LOCAL_RANK ({})", "Mismatch in
    # local rank setting, args.local_rank={} but env['LOCAL_RANK']={}", "DeepSpeed requires the LOCAL_RANK environment
    # variable"; launcher/multinode_runner.py: "MPICH requires same number of devices per node"; utils/groups.py:
    # "num_gpus not equal to device per node"; zero/partition_parameters.py: "zero.Init resolved a process group of
    # world_size=1, but the launcher environment reports WORLD_SIZE={}"), torchtitan (tools/utils.py: "LOCAL_RANK must
    # be set before selecting a local device", "LOCAL_RANK={} is outside the visible {} device count ({})") and vLLM
    # (parallel_state.py: "External launcher initialized the default process group without a CPU (gloo) backend").
    # Two launchers setting different ranks, a script started without one, more processes than GPUs.
    sig("launch_rank_conflict", ("does not match torch", "OMPI_COMM_WORLD_LOCAL_RANK (", "Mismatch in local rank setting",
                                 "requires the LOCAL_RANK environment", "LOCAL_RANK must be set", "device count (",
                                 "requires same number of devices per node", "in the torch environment, visit",
                                 "in the SLURM environment, visit", "in the OpenMPI environment, visit", "num_gpus not equal to device per node",
                                 "resolved a process group of world_size=1", "without a CPU (gloo) backend"),
        r"MPI (?P<what>rank|world size) (?P<mpi>\d{1,6}) does not match torch (?:rank|world size) (?P<torch>\d{1,6})"
        r"|LOCAL_RANK \((?P<lr>\d{1,4})\) != OMPI_COMM_WORLD_LOCAL_RANK \((?P<olr>\d{1,4})\)"
        r"|Mismatch in local rank setting, args\.local_rank=(?P<arg>-?\d{1,4}) but env\['LOCAL_RANK'\]=(?P<env>\d{1,4})"
        r"|(?P<nolr>DeepSpeed requires the LOCAL_RANK environment variable|LOCAL_RANK must be set before selecting a local device)"
        r"|LOCAL_RANK=(?P<over>\d{1,4}) is outside the visible \w{1,10} device count \((?P<ndev>\d{1,4})\)"
        r"|(?P<slots>(?:MPICH|Intel MPI|mvapich) requires same number of devices per node|num_gpus not equal to device per node)"
        r"|zero\.Init resolved a process group of world_size=1, but the launcher environment reports WORLD_SIZE=(?P<ws>\d{1,6})"
        r"|(?P<gloo>External launcher initialized the default process group without a CPU \(gloo\) backend)"
        # (ColossalAI's launch_from_torch / _slurm / _openmpi, colossalai/initialize.py: "Could not find 'RANK' in the
        # torch environment, visit ...")
        r"|Could not find '(?P<cvar>\w{1,40})' in the (?P<cenv>torch|SLURM|OpenMPI) environment",
        "launcher_misconfig", ROOT, 2, "the ranks the process was given do not agree with its launch",
        code="LOG066", params=lambda hs: {"what": _rank_conflict(hs)}),
    # The batch sizes against the data-parallel world the launch formed: DeepSpeed (runtime/config.py "Check batch
    # related parameters. train_batch_size is not equal to micro_batch_per_gpu * gradient_acc_step * world_size
    # {} != {} * {} * {}") and Megatron-LM (num_microbatches_calculator.py "global batch size ({}) is not divisible by
    # micro batch size ({}) times data parallel size ({})"). Written for one GPU count, started on another.
    sig("batch_world", ("train_batch_size is not equal to micro_batch_per_gpu", "times data parallel size ("),
        r"train_batch_size is not equal to micro_batch_per_gpu \* gradient_acc_step \* world_size "
        r"\d{1,9} != \d{1,9} \* \d{1,9} \* (?P<world>\d{1,6})"
        r"|global batch size \(\d{1,9}\) is not divisible by micro batch size \(\d{1,9}\) times data parallel size "
        r"\((?P<dp>\d{1,6})\)",
        "launcher_misconfig", ROOT, 2, "the batch sizes were set for another number of processes than were started",
        code="LOG066", params=lambda hs: {"what": (
            f"the batch sizes do not divide among the data-parallel world of {group(hs, 'world', 'dp')} this launch "
            "formed (written for another number of GPUs or nodes, or the script ran without its launcher)")},
        detail="Either the launch started another number of processes than the configuration was written for (compare "
               "the world size in the message with nodes x GPUs), or the batch sizes need setting for this one: leave "
               "DeepSpeed's train_batch_size to be derived (set only the micro batch and accumulation steps), and "
               "make Megatron's global batch a multiple of micro batch x data-parallel size."),
    # vLLM's checks of what Ray gave it (v1/executor/ray_utils.py: "The number of required GPUs exceeds the total
    # number of available GPUs in the placement group. Required number of devices: {}. Total number of devices: {}.";
    # the warning "Tensor parallel size (%d) exceeds available GPUs (%d)", fatal unless other nodes join the cluster)
    # and of a multi-node data-parallel launch (config/parallel.py "Invalid data parallel configuration: nnodes ({})
    # must be divisible by ..."); SGLang's argument check "multi-node data-parallel replicas are not supported".
    sig("serving_gpus_short", ("exceeds the total number of available GPUs", "exceeds available GPUs",
                               "Invalid data parallel configuration", "multi-node data-parallel replicas are not supported"),
        r"(?:The number of required GPUs exceeds the total number of available GPUs in the placement group\.?"
        r"(?: Required number of devices: (?P<need>\d{1,6})\. Total number of devices: (?P<have>\d{1,6}))?)"
        r"|Tensor parallel size \((?P<need2>\d{1,6})\) exceeds available GPUs \((?P<have2>\d{1,6})\)"
        r"|Invalid data parallel configuration: nnodes \((?P<nnodes>\d{1,5})\) must be divisible"
        r"|multi-node data-parallel replicas are not supported",
        "launcher_misconfig", ROOT, 3, "the server asks for more GPUs, or another layout, than its nodes give it",
        code="LOG066", params=lambda hs: {"what": (
            f"{group(hs, 'need', 'need2')} GPUs are needed where Ray has {group(hs, 'have', 'have2')} (ray status: the "
            "other nodes must have joined the cluster)" if group(hs, "need", "need2") else
            "more GPUs are needed than Ray's placement group has (ray status: the other nodes must have joined the "
            "cluster)" if "placement group" in hs[0].ev.text else
            f"--nnodes {group(hs, 'nnodes')} does not fit the data-parallel size per node" if group(hs, "nnodes") else
            "data-parallel replicas across nodes are not supported (use attention DP)")}),
    # vLLM's data-parallel engines (v1/engine/core.py): a headless engine connected to the front-end's handshake
    # address and heard nothing for HANDSHAKE_TIMEOUT_MINS: "Did not receive response from front-end process within
    # {} minutes" (the front-end node not started, another address or port, or traffic to it dropped). DeepSpeed's
    # runner (launcher/runner.py): "Unable to detect suitable master address via `hostname -I`" (no --master_addr, and
    # `ssh FIRST_HOST hostname -I` gave nothing).
    sig("serving_frontend_silent", ("Did not receive response from front-end process",
                                    "Unable to detect suitable master address"),
        r"Did not receive response from front-end process within (?P<min>\d{1,4}) minutes"
        r"|Unable to detect suitable master address via `hostname -I`",
        "rendezvous_unreachable", ROOT, 3, "a process never heard from the address it was told to start from",
        code="LOG011", params=lambda hs: {
            "endpoint": "the vLLM front-end (--data-parallel-address / --data-parallel-rpc-port)" if group(hs, "min")
            else "the first host of the hostfile (to find the master address)",
            "how": f"no reply in {group(hs, 'min')} minutes" if group(hs, "min") else
                   "`hostname -I` over ssh gave no address; pass --master_addr"}),
    # `hostname -I` (every address of the host) is an option of the net-tools/Debian hostname only: GNU inetutils' and
    # BSD/macOS's hostname reject it ("hostname: invalid option -- 'I'", "hostname: illegal option -- I"). DeepSpeed's
    # init_distributed runs it when no launcher set RANK/MASTER_ADDR ("Not using the DeepSpeed or dist launchers,
    # attempting to detect MPI environment...", comm/comm.py mpi_discovery), and launch scripts build MASTER_ADDR
    # from it: the address discovery fails on such a host, before any process group.
    # (DeepSpeed before 0.3.14 ran it through subprocess.check_output: "CalledProcessError: Command '['hostname -I']'
    # returned non-zero exit status 64", 64 being EX_USAGE, the option refused.)
    sig("hostname_no_I", ("hostname: invalid option", "hostname: illegal option", "hostname -I"),
        r"^hostname: (?:invalid|illegal) option -- '?I'?$"
        r"|CalledProcessError: Command '\[?'?hostname -I'?\]?' returned non-zero exit status 64\b",
        "other", ROOT, 2, "this host's `hostname` has no -I, so finding the master address from it failed",
        code="LOG120",
        detail="`hostname -I` exists only in the net-tools/Debian hostname; GNU inetutils (Arch, some containers) and "
               "BSD/macOS reject it. DeepSpeed calls it to find the master address when the script was started "
               "without a launcher (its MPI discovery); launch scripts often set MASTER_ADDR=$(hostname -I ...)."),
    # vLLM's StatelessProcessGroup (distributed/utils.py, a TCPStore-based group for data-parallel coordination and
    # weight sync): "Barrier timed out after {:.2f} seconds" -- some rank never wrote its arrival key.
    sig("serving_barrier_timeout", ("Barrier timed out after",),
        r"Barrier timed out after (?P<s>[\d.]{1,10}) seconds",
        "collective_timeout_straggler", ROOT, 6, "a rank never arrived at a store barrier",
        code="LOG051", params=lambda hs: {"op": "a store barrier (vLLM's stateless group)", "timeout": f"{group(hs, 's')} s",
                                          "who": "a rank never arrived (it is busy elsewhere, or it died)"}),
    # The shared-memory ring the engine uses to hand each step to its TP workers (vLLM
    # device_communicators/shm_broadcast.py "No available shared memory broadcast block found in %d seconds. This
    # typically happens when some processes are hanging or doing some time-consuming work"; SGLang's copy "No
    # available block found in %s second."): a worker has not taken the previous step. A worker stuck or slow;
    # whatever holds it (a hung collective, a dead peer) is the cause when the logs show it.
    sig("serving_ring_wait", ("No available shared memory broadcast block found", "No available block found in"),
        r"No available (?:shared memory broadcast )?block found in (?P<s>\d{1,6}) seconds?",
        "collective_timeout_straggler", ROOT, 8, "a worker of the server stopped taking its steps",
        code="LOG051", params=lambda hs: {"op": "the engine's hand-off of a step to its workers",
                                          "timeout": f"{group(hs, 's')} s",
                                          "who": "a worker has not taken the previous step: it hangs (often in a "
                                                 "collective) or is busy (compilation, loading)"}),
    # SGLang (model_executor/.../load_model_utils.py): after loading weights the TP ranks meet in a monitored
    # barrier: "TP rank {} could finish the model loading, but there are other ranks that didn't finish loading. It
    # is likely due to unexpected failures (e.g., OOM) or a slow node." (entrypoints/engine.py, in the launcher:
    # "Received sigquit from a child process. It usually means the child failed." -- that child's own error says why.)
    sig("serving_rank_unloaded", ("could finish the model loading, but there are other ranks",),
        r"TP rank (?P<r>\d{1,5}) could finish the model loading, but there are other ranks that didn't finish loading",
        "peer_process_died", ROOT, 5, "another rank of the server never finished loading the model",
        code="LOG060", params=lambda hs: {"what": f"TP rank {group(hs, 'r')} loaded the model and another rank never "
                                                  "did (it died, often out of memory, or its node is far slower)"}),
    sig("serving_child_quit", ("Received sigquit from a child process",),
        r"Received sigquit from a child process",
        "peer_process_died", CONSEQUENCE, 7, "a child process of the server failed and signalled the launcher",
        code="LOG060", params=lambda hs: {"what": "a child process of the server (scheduler, detokenizer) failed; its "
                                                  "own error, above this line, says why"}),
    # More launch checks, each from its source: Lightning (fabric/plugins/environments/slurm.py "You set `--ntasks={}`
    # in your SLURM bash script, but this variable is not supported"; pytorch/strategies/launchers/subprocess_script.py
    # "Lightning attempted to launch new distributed processes with `local_rank > 0`"; accelerators' "You requested gpu:
    # [...] But your machine only has: [...]"), accelerate (state.py "Tried to launch on distributed with multinode, but
    # `MASTER_ADDR` env was not set"; commands/launch.py "You need to use at least 2 processes to use `--multi_gpu`",
    # "Less than two GPU ids were configured"), TensorRT-LLM (llmapi/mpi_session.py "n_workers must be equal to the number
    # of processes in MPI, got {} vs {}"; runtime/worldConfig.cpp "gpusPerNode is {} and mpiSize is {}, but only {} GPUs
    # detected") and lmdeploy (executor/ray_executor.py "DP > 1 requires \"LMDEPLOY_DP_MASTER_ADDR\"").
    sig("launch_args", ("in your SLURM bash script, but this variable is not supported", "new distributed processes with `local_rank > 0`",
                        "But your machine only has", "multinode, but `MASTER_ADDR` env was not set",
                        "at least 2 processes to use `--multi_gpu`", "Less than two GPU ids were configured",
                        "must be equal to the number of processes in MPI", "GPUs detected, which is smaller than",
                        "DP > 1 requires", "LMDEPLOY_DIST_INIT_ADDR not set", "number of ranks in each node should be same",
                        "must use --headless", "Configuration mismatch detected for engine", "No IB devices configured for GPU"),
        r"You set `--ntasks=(?P<ntasks>\d{1,6})` in your SLURM bash script, but this variable is not supported"
        r"|(?P<lr>Lightning attempted to launch new distributed processes with `local_rank > 0`)"
        r"|(?P<gpus>But your machine only has: \[[\d, ]{0,200}\])"
        r"|(?P<addr>Tried to launch on distributed with multinode, but `MASTER_ADDR` env was not set)"
        r"|(?P<two>You need to use at least 2 processes to use `--multi_gpu`|Less than two GPU ids were configured)"
        r"|n_workers must be equal to the number of processes in MPI, got (?P<nw>\d{1,6}) vs (?P<np>\d{1,6})"
        r"|mpiSize is (?P<mpi>\d{1,6}), but only (?P<det>\d{1,4}) GPUs detected"
        r"|(?P<dp>DP > 1 requires \"LMDEPLOY_DP_MASTER_ADDR\"|LMDEPLOY_DIST_INIT_ADDR not set)"
        r"|(?P<pernode>The number of ranks in each node should be same)"
        r"|(?P<headless>Remote engine \d{1,5} must use --headless)"
        r"|(?P<cfg>Configuration mismatch detected for engine \d{1,5})"
        r"|No IB devices configured for GPU (?P<ibgpu>\d{1,3})",
        "launcher_misconfig", ROOT, 2, "the launch's arguments or environment do not fit the job",
        code="LOG066", params=lambda hs: {"what": _launch_args(hs[0].groups)}),
    # torch.distributed.launch passes each worker its local rank as an argument, "--local-rank=N" from torch 2.0 (the
    # underscore spelling before), unless --use-env; a script whose argparse does not declare that spelling stops with
    # argparse's "error: unrecognized arguments: --local-rank=0" (huggingface/pytorch-image-models#1728). torchrun
    # passes none and sets LOCAL_RANK.
    sig("local_rank_arg", ("unrecognized arguments:",),
        r"error: unrecognized arguments:.{0,200}?(?P<arg>--local[-_]rank)(?:=(?P<n>\d{1,4}))?",
        "launcher_misconfig", ROOT, 1, "the script does not accept the local-rank argument its launcher passes",
        code="LOG147", params=lambda hs: {"arg": f"{group(hs, 'arg') or '--local-rank'}={group(hs, 'n') or 'N'}"}),
    # The same refusal where the log keeps argparse's "usage: SCRIPT [...] [--local_rank LOCAL_RANK] ..." line but
    # not its error line (microsoft/LoRA#79): argparse prints its usage only on an error or -h, and torch 2.x's
    # launcher (whose deprecation warning says "If your script expects `--local-rank` argument to be set") passes the
    # hyphen spelling, which such a script does not declare (_usage_local_rank).
    ctx("launch_passes_local_rank", ("If your script expects `--local-rank`",),
        r"If your script expects `--local-rank` argument to be set",
        "torch.distributed.launch (torch 2.0 on) passes --local-rank to the script"),
    sig("usage_local_rank", ("[--local_rank",),
        r"^\s{0,8}usage: \S{1,200}.{0,3000}?\[--local_rank[ \]]",
        "launcher_misconfig", ROOT, 2, "the script declares --local_rank only, and its launcher passes --local-rank",
        code="LOG147", build=_usage_local_rank),
    # Ray's check of every process joining a cluster (_private/utils.py check_version_info): "Version mismatch: The
    # cluster was started with:" then its Ray and Python versions, "This process on node ADDR was started with:" and
    # this one's. A node with another Ray (gpustack/gpustack#1640: a serving backend that brought its own) is refused.
    sig("ray_version_mismatch", ("Version mismatch: The cluster was started with",),
       r"Version mismatch: The cluster was started with:?",
       "version_mismatch", ROOT, 1, "a process joined a Ray cluster with another Ray or Python version than the cluster's",
       code="LOG141", params=lambda hs: {"what": "Ray or Python (the Ray cluster refused a process started with other "
                                                 "versions than its own)"}),
    # Ray's reports of a worker that died, each the first sign in the driver's log: ray/exceptions.py "The worker died
    # unexpectedly while executing this task" (WorkerCrashedError), Ray Train v2 "At least one of the worker actors
    # failed to initialize", lmdeploy's executor "Ray worker exited.".
    sig("ray_worker_died", ("The worker died unexpectedly while executing", "worker actors failed to initialize",
                            "Ray worker exited."),
        r"(?P<crash>The worker died unexpectedly while executing this task)"
        r"|(?P<init>At least one of the worker actors failed to initialize)"
        r"|(?P<lmd>Ray worker exited\.)",
        "peer_process_died", ROOT, 5, "a Ray worker process of the job died",
        code="LOG060", params=lambda hs: {"what": (
            "a worker failed while it started (its own log says why)" if group(hs, "init")
            else "a Ray worker process died (its raylet log and dmesg say why: OOM, a crash)")}),
    # A framework's own signal handler saying something outside the job stopped it (a scheduler's preemption or time
    # limit, scancel): Lightning's "[rank: N] Received SIGTERM: 15", NeMo's preemption callback "Received SIGTERM,
    # saving checkpoint and exiting" (utils/callbacks/preemption.py), DeepSpeed's launcher "Main process received
    # SIGTERM, exiting" (launch.py sigkill_handler).
    sig("sigterm_from_outside", ("Received SIGTERM: ", "Received SIGTERM, saving checkpoint and exiting",
                                 "Main process received SIGTERM, exiting"),
        r"\[rank: (?P<rank>\d{1,6})\] Received SIGTERM: 15|(?P<nemo>Received SIGTERM, saving checkpoint and exiting)"
        r"|(?P<ds>Main process received SIGTERM, exiting)",
        "peer_process_died", ROOT, 5, "a rank or the launcher was sent SIGTERM from outside the job",
        code="LOG060", params=lambda hs: {"what": (
            (f"rank {group(hs, 'rank')}" if group(hs, "rank") else "DeepSpeed's launcher" if group(hs, "ds") else "a rank")
            + " was sent SIGTERM from outside the job (preemption, a time limit, scancel)"
            + (" and stopped after saving a checkpoint" if group(hs, "nemo") else " and stopped its ranks" if group(hs, "ds")
               else ""))}),
    # Ray's placement wait (vLLM v1/executor/ray_utils.py, lmdeploy pytorch/ray.py): "Waiting for creating a placement
    # group of specs for N seconds. specs=[...]. Check `ray status`": the cluster does not (yet) have the GPUs asked
    # for; repeated until it does. Ends the log when the other nodes never joined.
    sig("ray_placement_wait", ("Waiting for creating a placement group of specs",),
        r"Waiting for creating a placement group of specs for (?P<s>\d{1,6}) seconds",
        "launcher_misconfig", ROOT, 7, "Ray has not got the GPUs the server asks for",
        code="LOG066", params=lambda hs: {"what": "Ray waits for GPUs it does not have for the placement group (ray "
                                                  "status: the other nodes must join the cluster, with their GPUs)"}),
    # The servers' disaggregated prefill/decode and data-parallel paths, from their sources: a peer instance gone
    # (SGLang disaggregation/common/conn.py "Failed to get kvcache from prefill instance, it might be dead", mooncake
    # "Decode instance could be dead, remote mooncake session %s is not alive", "Lost connection with prefill instance
    # (bootstrap_addr: %s)"; vLLM v1/utils.py "Process %s (PID: %d) died with exit code %d"), and vLLM's stateless
    # group losing a member ("Barrier departure timed out", "Failed to signal barrier arrival").
    sig("serving_peer_gone", ("it might be dead", "could be dead, remote mooncake session", "Lost connection with prefill instance",
                              "Lost connection with decode instance", "died with exit code", "Barrier departure timed out",
                              "Failed to signal barrier arrival"),
        r"Failed to get kvcache from prefill instance, it might be dead"
        r"|Decode instance could be dead, remote mooncake session (?P<sess>\S{1,80}) is not alive"
        r"|Lost connection with (?:prefill|decode) instance \(bootstrap_addr: (?P<addr>\S{1,80})\)"
        r"|Process (?P<proc>EngineCore\w{0,20}|ApiServer\w{0,20}|DPCoordinator\w{0,20}) \(PID: \d{1,9}\) died with exit code (?P<code>-?\d{1,3})"
        r"|Barrier departure timed out after [\d.]{1,10} seconds|Failed to signal barrier arrival",
        "peer_process_died", ROOT, 5, "another instance or process of the server went away",
        code="LOG060", params=lambda hs: {"what": (
            f"the server's {group(hs, 'proc')} process died (exit code {group(hs, 'code')}); its own error above says why"
            if group(hs, "proc") else
            f"the other instance of a prefill/decode pair went away ({group(hs, 'addr', 'sess')})"
            if group(hs, "addr", "sess") else
            "a member of the server's process group went away (its own log says why)")}),
    # Their bootstrap and key-value stores unreachable: vLLM's Mooncake connector ("Failed to connect to bootstrap
    # server %s (%s)", "Failed to register %s with the Mooncake bootstrap server at %s after %d attempts"), SGLang's
    # ("Prefill instance failed to register to bootstrap server after %d retries"), NIXL's handshake
    # ("NIXL transfer failure: handshake_failed"), lmdeploy TurboMind's TCP store ("Failed to connect to store after
    # %d retries: unable to connect to %s").
    sig("serving_bootstrap", ("Failed to connect to bootstrap server", "with the Mooncake bootstrap server at",
                              "failed to register to bootstrap server", "NIXL transfer failure: handshake_failed",
                              "Failed to connect to store after"),
        r"Failed to connect to bootstrap server (?P<ep>\S{1,80}) \(|with the Mooncake bootstrap server at (?P<ep2>\S{1,120}) after"
        r"|instance failed to register to bootstrap server after \d{1,4} retries"
        r"|NIXL transfer failure: handshake_failed[^\n]{0,400}?'remote_host': '(?P<host>[^']{1,80})', 'remote_port': (?P<port>\d{1,5})"
        r"|NIXL transfer failure: handshake_failed"
        r"|Failed to connect to store after \d{1,4} retries: unable to connect to (?P<ep3>\S{1,80})",
        "rendezvous_unreachable", ROOT, 3, "a server instance could not reach the bootstrap or store it starts from",
        code="LOG011", params=lambda hs: {
            "endpoint": group(hs, "ep", "ep2", "ep3") or (f"{group(hs, 'host')}:{group(hs, 'port')}" if group(hs, "host")
                                                          else "the server's bootstrap endpoint"),
            "how": "connection failed"},
        alts=[("firewall_or_port_blocked", "the bootstrap, NIXL side-channel and transfer ports must be open between "
                                           "the instances' nodes")]),
    # vLLM's engine core died: what the API process says after it (v1/engine/exceptions.py "EngineDeadError:
    # EngineCore encountered an issue. See stack trace (above) for the root cause."; core.py "EngineCore encountered
    # a fatal error.") -- the error above it is the cause.
    sig("engine_dead", ("EngineCore encountered an issue", "EngineCore encountered a fatal error"),
        r"EngineCore encountered (?:an issue|a fatal error)",
        "peer_process_died", CONSEQUENCE, 7, "vLLM's engine core died; its own error above says why",
        code="LOG060", params=lambda hs: {"what": "vLLM's engine core died (EngineDeadError): the error above it says why"}),
    # TRL's trainer and its vLLM server (trl/generation/vllm_client.py "The vLLM server can't be reached at %s after %s
    # seconds", async_grpo's "Timed out after %ss waiting for vLLM server at %s"), and the server's refusal of a
    # trainer on one of its own GPUs (trl/scripts/vllm_serve.py "Attempting to use the same CUDA device (UUID: %s) for
    # multiple distinct roles/ranks within the same communicator").
    # A model placed across GPUs by device_map inside a distributed launch: accelerate refuses to train it
    # (accelerator.py "You can't train a model that has been loaded with `device_map='auto'` in any distributed mode.";
    # "... that has been loaded in 8-bit or 4-bit precision on multiple devices in any distributed mode") -- every rank
    # would spread its copy over every GPU of the node.
    sig("device_map_distributed", ("loaded with `device_map='auto'` in any distributed mode",
                                   "on multiple devices in any distributed mode"),
        r"You can't train a model that has been loaded with `device_map='auto'` in any distributed mode"
        r"|You can't train a model that has been loaded in 8-bit or 4-bit precision on multiple devices in any distributed mode",
        "launcher_misconfig", ROOT, 2, "a model spread over the node's GPUs by device_map was launched on several ranks",
        code="LOG066", params=lambda hs: {"what": "the model was loaded with device_map='auto' (spread over every GPU) "
                                                  "in a job of several ranks: load it on the rank's own GPU "
                                                  "(device_map={'': local_rank}), or run one process"}),
    sig("trl_vllm_server", ("The vLLM server can't be reached at", "waiting for vLLM server at"),
        r"The vLLM server can't be reached at (?P<url>\S{1,120}) after|Timed out after \d{1,6}s waiting for vLLM server at (?P<url2>\S{1,120}?)\.?\s",
        "rendezvous_unreachable", ROOT, 2, "the trainer could not reach its vLLM server",
        code="LOG011", params=lambda hs: {"endpoint": f"the vLLM server at {group(hs, 'url', 'url2')}",
                                          "how": "no answer (trl vllm-serve not running there, still loading, or its "
                                                 "port closed)"}),
    sig("trl_same_gpu", ("for multiple distinct roles/ranks within the same communicator",),
        r"Attempting to use the same CUDA device \(UUID: (?P<uuid>[\w\-]{1,60})\) for multiple distinct roles/ranks",
        "duplicate_gpu", ROOT, 1, "the trainer and the vLLM server were given the same GPU",
        code="LOG034", params=lambda hs: {"what": f"the trainer and the vLLM server on {group(hs, 'uuid')} (give the "
                                                  "server its own GPUs: CUDA_VISIBLE_DEVICES for each)"}),
    sig("ray_workers_unplaced", ("worker group startup timed out", "Placement group creation timed out"),
        r"The worker group startup timed out after [\d.]{1,10} seconds waiting for (?P<n>\d{1,6}) workers"
        r"|Placement group creation timed out",
        "launcher_misconfig", ROOT, 3, "Ray Train could not place all the workers it was asked for",
        code="LOG066", params=lambda hs: {"what": f"Ray could not place the {group(hs, 'n') or 'requested'} workers "
                                                  "ScalingConfig asks for (num_workers x resources_per_worker against "
                                                  "the cluster's free GPUs)"}),
    # The agent's handler (torch/distributed/elastic/multiprocessing/api.py, TORCHELASTIC_SIGNALS_TO_HANDLE,
    # default "SIGTERM,SIGINT,SIGHUP,SIGQUIT") catching SIGHUP: the terminal or SSH session the launcher was started
    # from closed. torchrun installs that handler itself, so `nohup` (which only sets SIGHUP to ignored before exec)
    # does not protect it; the agent then stops every worker (ultralytics#918). "Received 1 death signal, shutting
    # down workers" (Python 3.11+; "Signals.SIGHUP" before) or "SignalException: Process P got signal: 1".
    sig("agent_hangup", ("death signal, shutting down workers", "got signal: 1"),
        r"Received (?:Signals\.)?(?:SIGHUP|1) death signal, shutting down workers"
        r"|SignalException: Process \d{1,10} got signal: 1\b",
        "other", ROOT, 3, "the launcher received SIGHUP: the terminal or SSH session that started it closed",
        code="LOG112",
        detail="torchrun's agent handles SIGHUP by stopping every worker, and it installs that handler itself, so "
               "starting it under `nohup` does not keep it alive when the terminal or SSH session closes. Nothing in "
               "the job failed: the workers' closing signals and exits that follow are the launcher stopping them."),
    # torch/distributed/elastic/multiprocessing/api.py: the agent's own handler raises
    # SignalException(f"Process {pid} got signal: {sig}") when something outside the job (a scheduler's time
    # limit, preemption, Ctrl-C, `timeout`) signals the launcher; it then stops its workers.
    sig("agent_signalled", ("got signal:",), r"SignalException: Process (?P<pid>\d{1,10}) got signal: (?P<sig>\d{1,3})",
        "peer_process_died", ROOT, 7, "the launcher was stopped by a signal from outside the job",
        code="LOG060", params=_agent_signalled,
        detail="The launcher did not fail: something outside the job stopped it (a scheduler's time limit, "
               "preemption, Ctrl-C, `timeout`). If the job had stopped making progress before, it hung: "
               "`commdoctor hang` takes every rank's stacks while it waits.",
        alts=[("collective_timeout_straggler", "a job stopped for running too long may have been waiting on a late or "
                                               "stuck rank: look at the last lines of each rank before the signal")]),
    # torch/distributed/run.py warns, when it starts more than one process on its node (nproc_per_node > 1) and
    # OMP_NUM_THREADS is unset: "Setting OMP_NUM_THREADS environment variable for each process to be 1 in default, ...".
    # Read by nccl._span: this node runs several ranks (GPUs).
    ctx("torchrun_local_procs", ("Setting OMP_NUM_THREADS environment variable for each process",),
        r"Setting OMP_NUM_THREADS environment variable for each process to be \d{1,4} in default",
        "torchrun started more than one process on this node", harmless=True),
    # Python's report of Ctrl-C (SIGINT) in the program itself: the last line of its traceback. A user stopped it;
    # after a job that stopped making progress, that confirms a hang (read by nccl._init_stalled).
    ctx("user_interrupt", ("KeyboardInterrupt",), r"^KeyboardInterrupt:?\s*$", "the user stopped the program (Ctrl-C)",
        harmless=True),
    # The same agent's warning as it stops its workers: logger.warning("Received %s death signal, shutting down
    # workers", e.sigval) -- a Signals member, printed "15" by Python 3.11+ and "Signals.SIGTERM" before. Its glog-
    # shaped head says when the workers of that host began to go.
    ctx("agent_death_signal", ("death signal, shutting down workers",),
        r"Received (?:Signals\.)?(?P<sig>SIG[A-Z]{2,8}|\d{1,3}) death signal, shutting down workers",
        "the launcher was signalled and stopped its workers"),
    # torch/distributed/elastic/multiprocessing/api.py, as the agent stops its workers (after one failed, or when it
    # was signalled itself): logger.warning("Sending process %s closing signal %s", pid, sig.name).
    ctx("agent_closing_worker", ("closing signal",), r"Sending process (?P<pid>\d{1,10}) closing signal (?P<sig>SIG[A-Z]{2,8})",
        "the launcher stopped one of its workers"),
    # A worker that must run the SSH server an MPI launcher reaches it through (Kubeflow's MPI Operator runs
    # /usr/sbin/sshd in each worker pod) in an image without it: bash's "...: /usr/sbin/sshd: No such file or
    # directory" (or "command not found"). mpirun then reaches no worker (NVIDIA/cloudai#720: an NGC image).
    sig("sshd_missing", ("sshd: No such file", "sshd: command not found"),
       r"(?P<path>/?[\w/]{0,40}sshd): (?:No such file or directory|command not found)",
       "launcher_misconfig", ROOT, 2, "a worker could not start the SSH server the MPI launcher connects through",
       code="LOG066", params=lambda hs: {"what": f"the workers cannot start {group(hs, 'path') or 'sshd'} (not in the "
                                                 "image), so the MPI launcher reaches none of them"}),
    # deepspeed/launcher/runner.py parse_resource_filter: --include/--exclude name a GPU slot the hostfile does not
    # give that host ("No slot '{slot}' specified on host '{hostname}'"; older releases: "No slot N specificied on host
    # H", sic): the hostfile's slots= must cover the GPUs named (deepspeedai/DeepSpeed#3625).
    sig("ds_slot_missing", ("No slot",),
       r"No slot '?(?P<slot>\d{1,4})'? specifi(?:c?i)?ed on host '?(?P<host>[\w.\-]{1,255})",
       "launcher_misconfig", ROOT, 1, "DeepSpeed's --include/--exclude named a GPU slot the hostfile does not declare",
       code="LOG066", params=lambda hs: {"what": f"--include/--exclude names slot {group(hs, 'slot')} on "
                                                 f"{group(hs, 'host')}, which the hostfile's slots= do not cover"}),
    # deepspeed/launcher/runner.py's hostfile checks (_parse_hostfile: "HOST slots=N" per line, each host once;
    # parse_resource_filter: --include/--exclude hosts must be in it; main: --num_nodes > 1 with no hostfile, or a
    # --launcher whose program is missing). Each stops the launch before any rank starts.
    sig("ds_hostfile", ("Hostfile contains", "Hostfile is empty", "not found in hostfile", "no extra nodes available",
                        "not installed."),
       r"Hostfile contains (?:multiple entries for (?P<dup>\S{1,255}), |a bad entry: (?P<bad>[^\n]{0,200}?), )unable to proceed"
       r"|Hostfile is empty or not formatted correctly|Hostname '(?P<missing>[^'\n]{1,255})' not found in hostfile"
       r"|Num nodes is >1 but no extra nodes available via hostfile|launcher '(?P<launcher>[\w\-]{1,40})' not installed\.",
       "launcher_misconfig", ROOT, 1, "DeepSpeed's launcher refused its hostfile or launcher setting",
       code="LOG066", params=lambda hs: {"what": _ds_hostfile_what(hs)}),
    # The other launchers' hostfile checks: MPICH's Hydra (HYDU_parse_hostfile "unable to open host file: %s"), Open
    # MPI's ("Open RTE was unable to open the hostfile:"), ColossalAI's CLI ("Unable to find the hostfile, no such
    # file: %s", "found duplicate host %s in the hostfile", "hostfile and hosts are mutually exclusive").
    sig("launcher_hostfile", ("host file", "hostfile"),
       r"unable to open (?:the )?host ?file|Unable to find the hostfile, no such file"
       r"|found duplicate host (?P<dup>\S{1,255}) in the hostfile|hostfile and hosts are mutually exclusive",
       "launcher_misconfig", ROOT, 1, "the launcher could not use the hostfile it was given",
       code="LOG066", params=lambda hs: {"what": (
           f"the hostfile lists {group(hs, 'dup')} twice" if group(hs, "dup") else
           "the launcher was given both a hostfile and a host list" if "mutually exclusive" in hs[0].ev.text else
           "the hostfile the launcher was given cannot be opened (its path, as seen on the node that starts the job)")}),
    # MPICH's Hydra (utils/launch/launch.c HYDU_create_process): "execvp error on file %s (%s)". Its own proxy
    # (hydra_pmi_proxy) missing is a broken or misplaced MPICH install (pmodels/mpich#1106, #1161); any other file is
    # the program the launch named, not found on that node.
    sig("hydra_execvp", ("execvp error on file",),
       r"execvp error on file (?P<file>\S{1,400}?) \((?P<err>[^)]{1,60})",
       "launcher_misconfig", ROOT, 2, "MPICH's launcher could not execute a file it needed", build=_hydra_execvp),
    # Hydra's mpiexec reading a node proxy's control socket (pm/pmiserv/pmiserv_cb.c control_cb, proxy_init_cb:
    # HYDU_ASSERT(!closed)): the connection closed, so that node's hydra_pmi_proxy exited before or while starting its
    # ranks. Posts often wrap the line after "assert". execvp's line, when there, says which file; else the proxy could
    # not start there for a reason of that node (pmodels/mpich#1872: the working directory missing on it).
    sig("hydra_proxy_closed", ("): assert",),
       r"(?:control_cb|proxy_init_cb) \([^()\s]{1,300}:\d{1,6}\): assert(?: \(!closed\) failed|\s*$)",
       "other", ROOT, 3, "a node's Hydra proxy closed its connection to mpiexec before its ranks ran",
       code="LOG066", params=lambda hs: {"what": "a node's MPI proxy (hydra_pmi_proxy) exited before its ranks ran"},
       detail="mpiexec lost the connection to the proxy it starts on each node. The proxy could not run there: "
              "the current directory (mpiexec starts every rank in it, unless -wdir says otherwise) or the program "
              "does not exist on that node, its MPICH install differs, or it was killed. Run mpiexec from a directory "
              "every node has (a shared file system), or pass -wdir; mpiexec -verbose shows the proxy's own error.",
       exclude=("hydra_execvp",)),
    sig("invalid_device", ("invalid device ordinal", "InvalidDevice", "INVALID_DEVICE"),
       r"invalid device ordinal|cudaErrorInvalidDevice|CUDA_ERROR_INVALID_DEVICE",
       "launcher_misconfig", ROOT, 1, "a rank asked for a GPU that does not exist: more ranks per node than GPUs, or a wrong local rank",
       code="LOG062", params=lambda hs: {"what": "a rank asked for a GPU index this node does not have"},
       detail="More processes per node than GPUs (--nproc-per-node, --ntasks-per-node), or a local rank computed from "
              "the wrong variable, asks CUDA for a device that does not exist."),
    # deepspeed/launcher/runner.py: with a hostfile it first runs `ssh -o PasswordAuthentication=no HOST hostname`
    # (and `ssh HOST hostname -I` to find the master address) and raises "Using hostfile at {path} but host={host}
    # was not reachable via ssh. ..." when that fails. Exit status 255 is ssh's own failure (no key, refused, no
    # route), not the remote command's; nothing of the job started.
    sig("launcher_ssh", ("was not reachable via ssh", "exit status 255"),
       r"Using hostfile at \S{1,300} but host=(?P<host>[\w.\-:\[\]]{1,255}) was not reachable via ssh"
       r"|Command '\[?'?ssh (?:-o \S{1,60} |-p \d{1,5} )*(?P<host2>[\w.\-]{1,255}) hostname(?: -I)?'?\]?' returned non-zero exit status 255",
       "launcher_misconfig", ROOT, 1, "the launcher could not ssh to a node of its hostfile, so the job never started there",
       code="LOG065", params=lambda hs: {"host": hs[0].groups.get("host") or hs[0].groups.get("host2") or "?"}),
    # OpenSSH's client (ssh.c/sshconnect.c): "ssh: connect to host %s port %s: %s" (strerror of the failed connect),
    # "ssh: Could not resolve hostname %s: %s", "Permission denied (%s)." and "Host key verification failed.". MPI
    # launchers (Open MPI/PRTE's plm_rsh, Hydra), pdsh and deepspeed start every remote node through ssh, so these
    # lines say why a node's daemon never started; the runtime's own "lost communication with a remote daemon" and
    # any refused connection after them follow from it.
    sig("ssh_client", ("ssh: connect to host", "Could not resolve hostname", "Permission denied (",
                       "Host key verification failed"),
       r"ssh: connect to host (?P<host>[\w.\-:\[\]()]{1,255}) port (?P<port>\d{1,5}): (?P<err>Connection refused|Connection timed out"
       r"|No route to host|Network is unreachable|Connection reset by peer)"
       r"|ssh: Could not resolve hostname (?P<host2>[\w.\-]{1,255}):"
       # pdsh prefixes the host and ssh the user@host it logged in as: "localhost: jiaming@localhost: Permission denied
       # (publickey,password)." (deepspeedai/DeepSpeed#5709: the autotuner's pdsh launch to localhost).
       r"|^(?:\S{1,255}: ){0,2}(?P<auth>Permission denied \((?:publickey|password|keyboard-interactive|gssapi)[\w,\-]{0,80}\)\.|Host key verification failed\.)\s*$",
       "launcher_misconfig", ROOT, 1, "the launcher could not open ssh to a node, so nothing of the job started there",
       build=_ssh_client),
    # pdsh (DeepSpeed's multi-node runner) reports ssh's own failure, exit status 255, after ssh's reason line (which
    # the ssh_client row reads when it was posted).
    sig("pdsh_ssh_failed", ("ssh exited with exit code 255",),
       r"pdsh@[\w.\-]{1,255}: (?P<host>[\w.\-]{1,255}): ssh exited with exit code 255",
       "launcher_misconfig", ROOT, 3, "pdsh could not run the job on a node over ssh",
       code="LOG065", params=lambda hs: {"host": group(hs, "host") or "a node"},
       detail="ssh itself failed (exit status 255): the node refused the login (no passwordless key for this user, "
              "an unknown host key) or could not be reached. `ssh NODE true` from the first node, as the job's user, "
              "shows which.",
       alts=[("hostname_resolution", "a host name in the hostfile that does not resolve fails the same way"),
             ("firewall_or_port_blocked", "port 22 filtered between the nodes fails the same way")]),
    # subprocess.CalledProcessError's text for a child killed by a signal: "Command '[...]' died with
    # <Signals.SIGKILL: 9>." (torch.distributed.launch before torchrun, accelerate, DeepSpeed's launcher).
    sig("subprocess_signal", ("died with <Signals.",),
       r"died with <Signals\.(?P<sig>SIG[A-Z]{2,8}): (?P<num>\d{1,2})>",
       "peer_process_died", ROOT, 3, "a launcher's child process was killed by a signal",
       code="LOG060", params=lambda hs: {"what": f"a process the launcher started was killed by {group(hs, 'sig') or 'a signal'}"},
       detail=KILLED_BY_SIGNAL),
    # torch/distributed/rendezvous.py `_env_error`: "Error initializing torch.distributed using env:// rendezvous:
    # environment variable {RANK|WORLD_SIZE|MASTER_ADDR|MASTER_PORT} expected, but not set" -- the script called
    # init_process_group("env://") in a process no launcher started (plain `python train.py`).
    # The same missing launch, read by the program itself: os.environ["LOCAL_RANK"] and kin raise KeyError.
    sig("env_rendezvous_unset", ("expected, but not set", "KeyError: 'LOCAL_RANK'", "KeyError: 'RANK'",
                                 "KeyError: 'WORLD_SIZE'", "KeyError: 'LOCAL_WORLD_SIZE'", "KeyError: 'MASTER_ADDR'",
                                 "KeyError: 'MASTER_PORT'"),
       r"env:// rendezvous: environment variable (?P<var>[A-Z_]{2,32}) expected, but not set"
       r"|^KeyError: '(?P<var2>LOCAL_RANK|RANK|WORLD_SIZE|LOCAL_WORLD_SIZE|MASTER_ADDR|MASTER_PORT)'\s*$",
       "launcher_misconfig", ROOT, 1, "the process was started without a launcher: the env:// rendezvous variables are missing",
       code="LOG066", params=lambda hs: {"what": f"{group(hs, 'var', 'var2') or 'RANK'} is not set, so this process was not "
                                                 "started by a launcher (torchrun, srun, mpirun)"}),
    # The same missing launch in any stack's words: an exception whose message names a variable a launcher sets
    # (torchrun's MASTER_ADDR/MASTER_PORT/RANK/WORLD_SIZE/LOCAL_RANK/NODE_RANK, Slurm's SLURM_PROCID/SLURM_NTASKS/...,
    # Open MPI's OMPI_COMM_WORLD_*, PMI's PMI_RANK/PMI_SIZE) as not set, missing or required (Paddle's "The
    # environment variable 'MASTER_ADDR' and 'MASTER_PORT' must be specified", "SLURM_PROCID not found in environment.
    # Not running inside a SLURM step?"). An exception only: a warning that a variable is unset and a default is
    # used is a working job's note.
    sig("launch_env_missing", ("MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "LOCAL_RANK", "NODE_RANK", "RANK'", "RANK ",
                               "SLURM_", "OMPI_COMM_WORLD_", "PMI_RANK", "PMI_SIZE", "PMIX_RANK"),
       r"^(?:[\w.]{1,80}\.)?\w{0,60}(?:Error|Exception): (?:[^\n]{0,200}?[\s'\"`(\[{])?"
       r"(?P<var>MASTER_ADDR|MASTER_PORT|WORLD_SIZE|LOCAL_WORLD_SIZE|LOCAL_RANK|NODE_RANK|GROUP_RANK|RANK"
       r"|SLURM_[A-Z_]{2,24}|OMPI_COMM_WORLD_[A-Z_]{2,16}|PMIX?_RANK|PMI_SIZE)\b['\"`]?"
       r"[^\n]{0,120}?\b(?:(?:is |was |are )?not (?:been )?(?:set|found|defined|specified|provided|available|in (?:the |current )?env)"
       r"|must be (?:set|specified|provided|defined|given)|(?:is |are )?required|(?:is |are )?missing|unset\b)",
       "launcher_misconfig", ROOT, 2, "a process found a variable its launcher sets missing",
       code="LOG066", exclude=("env_rendezvous_unset",),
       params=lambda hs: {"what": f"{group(hs, 'var')} is not set in this process: it was not started by the launcher "
                                  "the program expects (torchrun, srun, mpirun), or the launch script does not export it"}),
    # NCCL's ncclCommInitRank (init.cc) checks its arguments first: WARN("Invalid rank requested : %d/%d", myrank,
    # nranks) and ncclInvalidArgument when a rank is not in 0..nranks-1 -- a process started with a rank beyond the
    # world size the program passed (more tasks launched than the job declares, a rank offset applied twice).
    sig("nccl_rank_range", ("Invalid rank requested",), r"Invalid rank requested : (?P<rank>-?\d{1,9})/(?P<n>-?\d{1,9})",
       "launcher_misconfig", ROOT, 1, "a process asked NCCL for a rank outside the world size it was given",
       code="LOG066", params=lambda hs: {"what": f"a process was given rank {group(hs, 'rank')} of a world of "
                                                 f"{group(hs, 'n')}: more processes were launched than the world size "
                                                 "the program declares"}),
    # Open MPI (help-orte-rmaps-base.txt): "There are not enough slots available in the system to satisfy the N slots
    # that were requested by the application"; horovodrun: "Process number should not be larger than total available
    # slots."; srun: "Unable to create step for job N: More processors requested than permitted".
    sig("launch_slots", ("not enough slots available", "larger than total available slots", "More processors requested"),
       r"There are not enough slots available in the system to satisfy the (?P<n>\d{1,6})\s*(?:slots)?"
       r"|Process number should not be larger than total available slots"
       r"|Unable to create (?:job )?step(?: for job \d{1,12})?: More processors requested than permitted",
       "launcher_misconfig", ROOT, 1, "the launcher was asked for more processes than the hosts or allocation offer",
       code="LOG066", params=_slots_what),
    # Slurm's slurm_strerror for a step or an allocation no node can satisfy as asked (ESLURM_REQUESTED_NODE_CONFIG_
    # UNAVAILABLE "Requested node configuration is not available", ESLURM_INVALID_GRES "Invalid generic resource (gres)
    # specification"), as srun/salloc print it: the request (GPUs, CPUs or memory per task, gres names) does not match
    # the partition's nodes or the job's allocation. A request that waits for busy nodes is not this.
    # ESLURM_INVALID_TASK_MEMORY "Memory required by task is not available": --mem-per-cpu/--mem-per-gpu times the
    # tasks asks more memory than the nodes (or the allocation) have.
    sig("slurm_unsatisfiable", ("Requested node configuration is not available", "Invalid generic resource",
                                "Memory required by task is not available"),
       r"Unable to (?:create (?:job )?step(?: for job [\w.]{1,20})?|allocate resources): (?:Requested node configuration "
       r"is not available|Invalid generic resource \(gres\) specification|Memory required by task is not available)",
       "launcher_misconfig", ROOT, 1, "Slurm cannot place the step or allocation as requested",
       code="LOG066", params=_slots_what),
    # srun (src/srun/srun_job.c, launch plugin): "task %d launch failed: %s" and "%ps aborted before step completely
    # launched."; "timeout waiting for task launch, started %d of %d tasks": slurmd could not start the step's
    # tasks at all - the MPI/PMI plugin asked for (--mpi=pmix) that the node or the container does not support, a
    # container (pyxis/enroot) that failed to start, a prolog that failed. Nothing of the program ran.
    sig("slurm_launch_failed", ("launch failed", "aborted before step completely launched", "timeout waiting for task launch"),
       r"srun: error: task (?P<task>\d{1,7})(?:-\d{1,7})? launch failed: (?P<why>[^\n]{1,160})"
       r"|aborted before step completely launched"
       r"|timeout waiting for task launch, started (?P<got>\d{1,7}) of (?P<want>\d{1,7}) tasks",
       "launcher_misconfig", ROOT, 2, "Slurm could not start the step's tasks, so no rank ran",
       code="LOG066", params=lambda hs: {"what": "srun could not launch the step's tasks"
                                                 + (f" ({group(hs, 'why')})" if group(hs, "why") else "")},
       detail="srun got the allocation but slurmd could not start the tasks: the PMI plugin requested (--mpi=pmix) "
              "not supported by the node or the container (--mpi=pmi2 or none is the usual workaround), a container "
              "image that failed to start (pyxis/enroot), or a prolog script that failed.",
       alts=[("hardware_fault", "a node whose slurmd stopped answering fails its launch the same way: sinfo -R "
                                "shows it drained or down")]),
    # slurmstepd (exec_task): "execve(): %s: %m" -- the step's program does not exist on the node (a PATH set by a
    # module or a virtual environment that the step does not inherit, a binary on a disk the node lacks).
    sig("slurm_execve", ("execve():",),
       r"slurmstepd: error: execve\(\): (?P<prog>[^:\n]{1,200}): (?:No such file or directory|Permission denied)",
       "launcher_misconfig", ROOT, 1, "the step's program was not found on the node",
       code="LOG066", params=lambda hs: {"what": f"{group(hs, 'prog') or 'the program'} was not found (or not executable) "
                                                 "on the node the step ran on"},
       detail="slurmstepd could not execute the command: it is not on the PATH the step inherits (load the module or "
              "activate the environment inside the job script) or not installed on that node."),
    # Slurm's MUNGE authentication (plugins/auth/munge: error("Munge decode failed: %s", munge_strerror)): a
    # credential another node encoded is "Expired credential" or "Rewound credential" when the two clocks differ by more
    # than its lifetime (5 minutes), "Invalid credential" when the nodes' munge keys differ. Steps and jobs between
    # those nodes fail to launch.
    sig("slurm_munge", ("Munge decode failed",),
       r"Munge decode failed: (?P<why>Expired credential|Rewound credential|Invalid credential|Credential replayed"
       r"|Unauthorized credential[^\n]{0,60}|Munged communication error|Socket communication error)",
       "other", ROOT, 2, "Slurm's MUNGE authentication rejected a credential between nodes",
       code="LOG127", params=lambda hs: {"what": (
           "its timestamp is outside the credential's lifetime: the nodes' clocks differ"
           if group(hs, "why") in ("Expired credential", "Rewound credential") else
           "the nodes' munge keys differ" if group(hs, "why") == "Invalid credential" else
           f"{group(hs, 'why')}: munged is not running or not reachable on the node")}),
    # accelerate/commands/launch.py checks the main process port before starting torch's launcher and raises
    # ConnectionError("Tried to launch distributed communication on port `{port}`, but another process is utilizing
    # it. ..."): a process on this host already listens on that port (a second job, a stale run).
    sig("accelerate_port_in_use", ("but another process is utilizing it",),
       r"Tried to launch distributed communication on port `?(?P<port>\d{1,5})`?, but another process is utilizing it",
       "port_conflict", ROOT, 1, "accelerate found the main process port already taken on this host",
       code="LOG010", params=lambda hs: {"port": hs[0].groups.get("port") or "?"}),
    # Slurm's task/cgroup plugin, after a step: "Detected %u oom_kill event%s in %ps. Some of the step tasks have been
    # OOM Killed." (older: "Detected %u oom-kill event(s) in step %u.%u cgroup. Some of your processes may have been
    # killed by the cgroup out-of-memory handler."), and srun's "srun: error: {node}: task(s) {ids}: Out Of Memory".
    # The kernel killed tasks of the job for exceeding their memory limit: host memory, not GPU memory.
    sig("slurm_oom_kill", ("oom_kill event", "oom-kill event", "Out Of Memory", "exceeded memory limit ("),
       r"Detected \d{1,9} oom[_-]kill events?(?:\(s\))? in (?P<step>[\w.=]{1,60})"
       r"|srun: error: (?P<node>[\w.\-]{1,255}): tasks? (?P<tasks>[\d,\-]{1,60}): Out Of Memory"
       # (jobacct_gather's own limit, without the cgroup plugin: "StepId=%s exceeded memory limit (%lu > %lu), being
       # killed")
       r"|(?P<acct>StepId=[\w.]{1,40}) exceeded memory limit \(\d{1,20} > \d{1,20}\), being killed",
       "peer_process_died", ROOT, 3, "Slurm killed tasks of the job for running out of host memory",
       code="LOG060", params=lambda hs: {"what": "Slurm's cgroup killed " + (
           f"task(s) {group(hs, 'tasks')} on {group(hs, 'node')}" if group(hs, "tasks") else "tasks of the step")
           + " for exceeding their host-memory limit (OOM kill)"},
       detail="The step's memory limit (--mem, --mem-per-cpu, --mem-per-gpu) is below what the job uses (data "
              "loader workers, pinned buffers, a dataset read into memory); the other ranks' errors follow from it."),
    # slurmstepd: "*** JOB|STEP {id} ON {node} CANCELLED AT {time} [DUE TO TIME LIMIT|PREEMPTION|NODE FAILURE] ***";
    # srun: "srun: error: {node}: task(s) {ids}: {strsignal}" for tasks a signal ended (Killed, Terminated, ...).
    # srun's node-fail handler: error("Node failure on %s", nodelist) when slurmctld reports a node of the step down
    # (the same loss slurmstepd reports as "CANCELLED ... DUE TO NODE FAILURE").
    sig("srun_node_fail", ("Node failure on",), r"srun: error: Node failure on (?P<node>[\w.\-\[\],]{1,255})",
       "hardware_fault", ROOT, 3, "Slurm lost a node of the job (srun: Node failure)",
       code="LOG037", params=lambda hs: {"what": f"Slurm lost node {group(hs, 'node') or '?'} (srun: Node failure)"},
       alts=[("peer_process_died", "a node that rebooted or was taken down by an administrator is lost the same way: "
                                   "sinfo -R / scontrol show node give Slurm's reason")]),
    sig("slurm_cancelled", ("CANCELLED AT",),
       r"\*\*\* (?:JOB|STEP) (?P<id>[\w.+]{1,40}) ON (?P<node>[\w.\-\[\],]{1,255}) CANCELLED AT \S{1,40}"
       r"(?: DUE TO (?P<why>TIME LIMIT|PREEMPTION|NODE FAILURE))?",
       "peer_process_died", ROOT, 7, "Slurm cancelled the job or step (time limit, preemption, scancel or a lost node)",
       build=_slurm_cancelled, fails=True),
    # What Slurm refuses at submission or step creation, from its error strings (common/slurm_errno.c, srun/opt.c,
    # srun/launch.c): the request does not fit the allocation or the cluster, or srun steps inside one job compete
    # for its resources ("step creation temporarily disabled, retrying (Requested nodes are busy)": a second srun
    # waiting for the first's GPUs, which --overlap or --exact changes).
    sig("slurm_request", ("Requested node configuration is not available", "Insufficient GRES available",
                          "Invalid generic resource (gres) specification", "step creation temporarily disabled",
                          "Invalid MPI type"),
       r"(?P<conf>Requested node configuration is not available|Insufficient GRES available in allocation"
       r"|Invalid generic resource \(gres\) specification)"
       r"|(?P<busy>step creation temporarily disabled, retrying \(Requested nodes are busy\))"
       r"|Invalid MPI type '(?P<mpi>[\w.]{1,20})'",
       "launcher_misconfig", ROOT, 4, "Slurm could not give the job or its step what it asked for",
       code="LOG066", params=lambda hs: {"what": (
           "the resources asked for (--gres/--gpus, nodes, memory) are not in the partition or the allocation"
           if group(hs, "conf") else
           "an srun step waits for GPUs another step of the same job holds (srun --overlap, or --exact per step)"
           if group(hs, "busy") else
           f"srun --mpi={group(hs, 'mpi')} names an MPI plugin this Slurm does not have (srun --mpi=list)")}),
    # Slurm's PMIx plugin (plugins/mpi/pmix): the direct connections between the nodes' slurmstepd for the PMIx
    # exchange ("Cannot establish direct connection to %s (%d)", "_tcp_connect: ... Cannot establish the
    # connection"), a node's name it cannot resolve ("Can't find address for host %s, check slurm.conf"), and its
    # fence between the nodes timing out ("collective timeout seq=%d").
    sig("slurm_pmix_net", ("Cannot establish direct connection to", "Cannot establish the connection",
                           "Can't find address for host", "collective timeout seq="),
       r"Cannot establish direct connection to (?P<peer>[\w.\-]{1,255})|pmixp_dconn_tcp\.c:\d{1,6}: Cannot establish the connection"
       r"|Can't find address for host (?P<host>[\w.\-]{1,255}), check slurm\.conf"
       r"|mpi/pmix\w{0,6}: [^\n]{0,200}collective timeout seq=\d{1,9}",
       "firewall_or_port_blocked", ROOT, 3, "Slurm's PMIx plugin could not connect the nodes of the step",
       build=lambda m, hs, found: [
           cand("LOG015", "hostname_resolution", 2, hs, params={"what": f"{group(hs, 'host')} (a node's name in slurm.conf)"})
           if group(hs, "host") else
           cand("LOG063", "firewall_or_port_blocked", 3, hs, params={"what": (
               f"Slurm's PMIx plugin could not connect to {group(hs, 'peer')}" if group(hs, "peer") else
               "Slurm's PMIx plugin could not connect the nodes (its TCP connections or its fence timed out)")},
                alts=[("peer_process_died", "a node whose slurmstepd or tasks died never answers either"),
                      ("wrong_interface", "SLURM_PMIXP_... / PMIX_MCA_ptl_tcp_if_include choose the interface it uses")])]),
    # srun losing the step's node (api/step_launch.c): "Cannot communicate with node %d.  Aborting job." and
    # "_step_io_error_handler: aborting, io error with slurmstepd on node %d".
    sig("srun_node_lost", ("Cannot communicate with node", "io error with slurmstepd on node"),
       r"Cannot communicate with node (?P<n>\d{1,6})\.|io error with slurmstepd on node (?P<n2>\d{1,6})",
       "hardware_fault", ROOT, 5, "srun lost contact with a node of the step",
       code="LOG037", params=lambda hs: {"what": f"srun lost contact with node {group(hs, 'n', 'n2')} of the step"},
       alts=[("peer_process_died", "a node that rebooted, or whose slurmstepd was killed, is lost the same way: "
                                   "sinfo -R and the node's own logs say which")]),
    sig("srun_task_signal", ("srun: error:",),
       r"srun: error: (?P<node>[\w.\-]{1,255}): tasks? (?P<tasks>[\d,\-]{1,60}): (?P<sig>Killed|Terminated|Aborted"
       r"|Segmentation fault|Bus error)\b",
       "peer_process_died", ROOT, 6, "srun reports tasks a signal ended",
       build=_srun_task_signal, fails=True),
    # Kubernetes (kubectl describe pod): a container's "Last State: Terminated / Reason: OOMKilled / Exit Code: 137",
    # and `kubectl get pods` STATUS "OOMKilled": the kernel killed the container at its memory limit (host memory).
    sig("k8s_oom_killed", ("OOMKilled",),
       r"Reason:\s{0,40}OOMKilled\b|^\s*(?P<pod>[a-z0-9][\w.\-]{0,252})\s+\d+/\d+\s+OOMKilled\s",
       "peer_process_died", ROOT, 3, "Kubernetes killed a container at its memory limit (OOMKilled)",
       code="LOG060", params=lambda hs: {"what": "Kubernetes OOM-killed " + (
           f"pod {group(hs, 'pod')}" if group(hs, "pod") else "a container") + " at its memory limit (host memory)"},
       detail="The container's memory limit (resources.limits.memory) is below what the rank uses on the host "
              "(data loader workers, pinned buffers, /dev/shm counted against the pod); the other ranks' errors "
              "follow from it."),
    # Kubernetes' own events (kubectl describe / get events): the kubelet evicting a pod for the node's memory
    # ("The node was low on resource: memory."), the scheduler preempting it ("Preempted by pod ..."); the training
    # operator's summary ("PyTorchJob J is failed because N Worker replica(s) failed.", MPIJob the same).
    sig("k8s_pod_lost", ("The node was low on resource: memory", "Preempted by pod", "replica(s) failed"),
       r"The node was low on resource: memory|Preempted by pod \S{1,80}"
       r"|(?P<kind>PyTorchJob|MPIJob|TFJob|PaddleJob|XGBoostJob|JAXJob|TrainJob) \S{1,253} is (?:failed|restarting) "
       r"because (?P<n>\d{1,6}) (?P<role>\w{1,20}) replica\(s\) failed",
       "peer_process_died", ROOT, 5, "Kubernetes evicted or preempted a pod of the job, or the operator saw one fail",
       code="LOG060", params=lambda hs: {"what": (
           f"{group(hs, 'n')} {group(hs, 'role')} pod(s) of the {group(hs, 'kind')} failed (the operator's summary: "
           "that pod's own log says why)" if group(hs, "kind") else
           "Kubernetes evicted a pod of the job for the node's memory" if "low on resource" in hs[0].ev.text else
           "the scheduler preempted a pod of the job for another pod")}),
    # The kubelet's device manager (pkg/kubelet/cm/devicemanager/manager.go): "Allocate failed due to requested number of
    # devices unavailable for nvidia.com/gpu. Requested: %d, Available: %d, which is unexpected" -- the scheduler
    # counted GPUs the device plugin has since withdrawn (the NVIDIA plugin marks a GPU unhealthy on a critical Xid).
    sig("k8s_gpu_withdrawn", ("requested number of devices unavailable for nvidia.com/gpu",),
       r"requested number of devices unavailable for nvidia\.com/gpu\. Requested: (?P<req>\d{1,4}), Available: (?P<av>\d{1,4})",
       "hardware_fault", ROOT, 4, "a GPU of the node was withdrawn as unhealthy after the pod was scheduled",
       code="LOG037", params=lambda hs: {"what": f"the node offers {group(hs, 'av')} of the {group(hs, 'req')} GPUs the pod "
                                                 "asked for: the device plugin withdrew one as unhealthy (an Xid in "
                                                 "the node's kernel log)"},
       alts=[("driver_cuda_mismatch", "a device plugin that lost the driver (after a driver update) withdraws every GPU "
                                      "of the node: kubectl describe node shows the nvidia.com/gpu capacity")]),
    # The scheduler cannot place the job's pods ("0/N nodes are available: N Insufficient nvidia.com/gpu", untolerated
    # taints, node affinity): they stay Pending, and the pods that did start wait in the rendezvous for them.
    # A pod the scheduler placed later (the autoscaler added a node) says "Successfully assigned NS/POD to NODE".
    sig("k8s_unschedulable", ("nodes are available:",),
       r"0/(?P<n>\d{1,6}) nodes are available: (?P<why>[^\n]{1,200}?)(?:\. preemption:|\.\s*$|$)",
       "launcher_misconfig", ROOT, 3, "Kubernetes could not schedule pods of the job",
       code="LOG066", build=_unschedulable, params=lambda hs: {"what": f"pods of the job could not be scheduled on any of "
                                                 f"{group(hs, 'n')} nodes ({(group(hs, 'why') or '')[:120]}), so the "
                                                 "ranks that started wait for them"}),
    ctx("k8s_scheduled", ("Successfully assigned",), r"Successfully assigned \S{1,253} to \S{1,253}",
        "the scheduler placed a pod after all", harmless=True),
    # torch/csrc/DataLoader.cpp: "DataLoader worker (pid {pid}) is killed by signal: {strsignal}." A worker killed by
    # SIGKILL ("Killed") is the kernel's OOM killer or a cgroup limit taking it: the rank raises and dies with it.
    # (Bus error names /dev/shm, which the shm rule reads.)
    sig("dataloader_killed", ("is killed by signal: Killed",),
       r"DataLoader worker \(pid\(?s?\)? ?(?P<pid>[\d, ]{1,60})\) is killed by signal: Killed",
       "peer_process_died", ROOT, 4, "a data-loader worker was killed (SIGKILL), most often by the OOM killer",
       code="LOG060", params=lambda hs: {"what": f"a DataLoader worker (pid {hs[0].groups.get('pid') or '?'}) was "
                                                 "killed by SIGKILL, most often the kernel's OOM killer: host memory"},
       detail="Each worker holds its own copy of what the dataset keeps in memory; with several ranks per node "
              "host memory runs out. Fewer workers (num_workers), a smaller prefetch, or more memory for the job."),
    # ray/exceptions.py: ActorDiedError (RayActorError before Ray 2.9) "The actor died unexpectedly before finishing
    # this task." and "The actor is dead because its worker process has died." -- the process behind a rank (a vLLM
    # or verl worker) ended without raising: killed (OOM killer, ray stop) or crashed. ("... because of an error raised
    # in its creation task" is the actor's own exception, not this.)
    sig("ray_actor_died", ("The actor died unexpectedly", "its worker process has died"),
       r"The actor died unexpectedly before finishing this task|The actor is dead because its worker process has died",
       "peer_process_died", ROOT, 5, "a Ray actor's worker process died without raising (killed or crashed)",
       code="LOG060", params=lambda hs: {"what": "a Ray actor's worker process died (killed or crashed)"},
       detail="Ray's own log for the dead worker (and dmesg on its node) says which: the OOM killer, `ray stop`, or "
              "a crash such as SIGSEGV. The other workers' errors follow from it."),
    # Ray's raylet: its memory monitor killing workers ("N Workers (tasks / actors) killed due to memory pressure
    # (OOM), M Workers crashed due to other errors on node ...") and a worker lost to a system error ("A worker died or
    # was killed while executing a task by an unexpected system error."); vLLM's multiproc executor when a worker
    # process ends ("Worker VllmWorkerProcess pid %d died, exit code: %d").
    # vLLM's V1 engine (v1/executor/multiproc_executor.py) says "Worker proc %s died unexpectedly, shutting down
    # executor." when its monitor sees a worker process end.
    sig("worker_pool_died", ("killed due to memory pressure", "A worker died or was killed", "Worker VllmWorkerProcess pid",
                             "died unexpectedly", "running low on memory", "scheduler died during initialization",
                             "crashed with exit code"),
       # (a post may wrap the line after "tasks /"; "0 Workers ... killed" reports crashes of other kinds only)
       r"(?:(?P<n>[1-9]\d{0,5}) Workers \(tasks / )?(?<! 0 Workers \(tasks / )(?<!^0 Workers \(tasks / )"
       r"actors\) killed due to memory pressure \((?P<oom>OOM)\)"
       r"|(?P<oom2>Task was killed due to the node running low on memory)"
       r"|A worker died or was killed while executing a task by an unexpected system error"
       r"|Worker VllmWorkerProcess pid (?P<pid>\d{1,9}) died, exit code: (?P<code>-?\d{1,3})"
       r"|Worker proc \S{1,60} died unexpectedly(?: \(exit code: (?P<code2>-?\d{1,3})\))?, shutting down executor"
       r"|RayWorkerProc rank=\S{1,40} died unexpectedly, shutting down executor"
       # SGLang's launcher (entrypoints/engine.py, utils/watchdog.py): "Rank R scheduler died during initialization
       # (exit code: C)", "Subprocess NAME (pid=P) crashed with exit code C. Triggering SIGQUIT for cleanup..."
       r"|Rank \d{1,5} scheduler died during initialization \(exit code: (?P<code3>-?\d{1,3})\)"
       r"|Subprocess \S{1,60} \(pid=\d{1,9}\) crashed with exit code (?P<code4>-?\d{1,3})",
       "peer_process_died", ROOT, 4, "a worker process of the job died (killed, or out of memory)",
       code="LOG060", params=lambda hs: {"what": "Ray killed workers for lack of host memory (OOM)" if group(hs, "oom", "oom2")
                                         else "a worker process died" + (
                                             f" (exit code {group(hs, 'code', 'code2', 'code3', 'code4')})"
                                             if group(hs, "code", "code2", "code3", "code4") else "")},
       detail="The other ranks' errors follow from it. Host memory (the raylet's memory monitor, the kernel's OOM "
              "killer: dmesg) is the usual reason; an exit code of -9 is SIGKILL, -11 a crash (SIGSEGV)."),
    # deepspeed/launcher/launch.py's sigkill_handler logs "{cmd} exits with return code = {returncode}" for the first
    # local rank that ends; Popen gives -N for a process killed by signal N (a positive code is the rank raising,
    # whose own traceback says why).
    # The C++ runtime's std::terminate ("terminate called after throwing an instance of 'T'", then what() and abort()):
    # a process ending itself on an exception nothing caught; torch's watchdog ends a rank this way on purpose.
    # CPython's faulthandler, when enabled, says the same of a process it sees abort: "Fatal Python error: Aborted",
    # then each thread's stack ("Current thread 0x... (most recent call first):").
    # Open MPI's signal handler (opal/util/stacktrace.c) starts its report with "[host:pid] *** Process received
    # signal ***", then "Signal: Segmentation fault (11)" and the frames: a post may hold its first line only. Open MPI
    # 1.x's handler started with "Signal:11 info.si_errno:0(Success) si_code:1(SEGV_MAPERR)".
    sig("process_died", ("Signal ", "SIGKILL", "exitcode", "Killed", "SIGSEGV", "Segmentation fault", "core dumped", "oom-kill", "OOM",
                         "exits with return code = -", "terminate called", "Fatal Python error: Aborted",
                         "Process received signal", "==== backtrace", "info.si_errno:"),
       r"Signal (?P<sig>\d+) \((?P<name>SIG\w+)\) received by PID (?P<pid>\d+)|exitcode\s*:?\s*(?P<code>-\d+)"
       r"|exits with return code = (?P<dscode>-\d{1,3})\b"
       r"|^Killed$|Killed process \d+|oom-kill|Out of memory: Kill|Segmentation fault|SIGSEGV|(?P<abrt>\bAborted )?\(core dumped\)"
       r"|Fatal Python error: (?P<pyabrt>Aborted)\b"
       r"|\*\*\* Process received signal \*\*\*|^(?:\[[^\]\s]{1,80}\] ?)?Signal:\d{1,2} info\.si_errno:"
       r"|^\s{0,4}==== backtrace(?: \(tid: ?\d{1,10}\))? ====$"
       r"|\bterminate called (?:after throwing an instance of '(?P<exc>[^'\s]{1,120})'|without an active exceptio(?P<noexc>n))",
       "peer_process_died", ROOT, 5, "a process was killed or crashed",
       build=_process_died, always=True, phase=PHASE_DEATHS),
    # -- how the job ended (read by commdoctor.rules.engine.completed / recovered) ---------------------------------------------
    # torch/distributed/elastic/agent/server/api.py, at INFO (torchrun's LOGLEVEL=INFO): "[%s] worker group
    # successfully finished. Waiting %s seconds for other agents to finish." once every worker of the node exited 0,
    # and from the exit barrier "Local worker group finished (WorkerState.SUCCEEDED). ...".
    # deepspeed/launcher/runner.py fetch_hostfile: no hostfile at the path given (default /job/hostfile), so the launcher
    # runs on this node only. Harmless on one node; read by _local_only.
    ctx("ds_no_hostfile", ("Unable to find hostfile",),
        r"Unable to find hostfile, will proceed with training with local resources only",
        "DeepSpeed's launcher found no hostfile and runs this node's processes only", harmless=True),
    # The code line of a traceback through init_process_group's rendezvous (distributed_c10d.py:
    # "store, rank, world_size = next(rendezvous_iterator)"): the process failed or was stopped while joining.
    ctx("rendezvous_frame", ("rendezvous_iterator",), r"= next\(rendezvous_iterator\)",
        "a traceback through init_process_group's rendezvous (the process was joining the job)"),
    ctx("lightning_all_registered", ("All distributed processes registered",),
        r"All distributed processes registered\. Starting with (?P<n>\d{1,7}) processes",
        "Lightning's rank 0: every rank of the world joined the process group"),
    ctx("agent_succeeded", ("successfully finished", "WorkerState.SUCCEEDED"),
        r"worker group successfully finished|Local worker group finished \(WorkerState\.SUCCEEDED\)",
        "the launcher saw every worker of its node exit 0", harmless=True),
    # The same loop, when restarts are left: "[%s] Worker group %s. %s/%s attempts left; will restart worker group"; and
    # on a healthy node when another node rejoins the rendezvous (its own workers having failed): "[%s] Detected %s new
    # nodes from group_rank=%s; will restart worker group".
    ctx("agent_restart", ("will restart worker group",),
        r"Worker group (?:FAILED|UNHEALTHY)\. \d{1,6}/\d{1,6} attempts left; will restart worker group"
        r"|Detected \d{1,6} new nodes from group_rank=\d{1,6}; will restart worker group",
        "the launcher restarts its workers: after a failure (--max-restarts not used up), or when a node rejoins",
        harmless=True),
    # vLLM's multiprocessing executor (vllm/executor/multiproc_worker_utils.py, vllm/v1/executor/multiproc_executor.py)
    # starts one worker process per GPU of its own node ("VllmWorkerProcess pid=N", "(VllmWorker rank=N pid=M)");
    # vLLM's workers on other nodes are Ray actors (prefix "(RayWorkerWrapper pid=N, ip=A)", read by the line parser
    # into the record's actor). Read by local_ranks_only.
    ctx("vllm_local_worker", ("multiproc_executor", "multiproc_worker_utils", "VllmWorkerProcess", "VllmWorker rank="),
        r"multiproc_(?:executor|worker_utils)\.py|\(VllmWorkerProcess pid=\d|\(VllmWorker rank=\d",
        "a worker of vLLM's multiprocessing executor (one node's GPUs)"),
)


def _user_stopped(m: Any, found: list[Cand], _unused: list[Cand]) -> list[Cand]:
    """Python's KeyboardInterrupt and nothing else failed: the user stopped the job, where its traceback says.

    A hang leaves no error; people stop the job and post the traceback. It says where each process was: in which
    torch.distributed call (and from which line of the program), or elsewhere. It names no cause: with NCCL a
    collective returns before it completes, so a process that waits on a hung one is often stopped in the next call
    that synchronises (`.item()`, `torch.cuda.synchronize()`), not in the collective."""
    hs = hits(m, "user_interrupt")
    if not hs or any(c.cause and not c.weak for c in found):
        return []
    said = {(h.ev.source, h.ev.line) for h in hs}
    if any((ev.source, ev.line) not in said for ev, _s, _k in m.unmatched_errors):
        return []
    where = []
    for h in hs[:8]:
        key = (h.ev.source, h.ev.line)
        fn, site = m.raised_in.get(key), m.raised_at.get(key)
        who = f"rank {h.ev.rank}" if h.ev.rank is not None else "a process"
        where.append(f"{who} in {fn}()" + (f" called at {site}" if site else "") if fn else
                     f"{who} outside torch.distributed" + (f" ({site})" if site else ""))
    return [Cand("LOG110", None, 9, hs[0].seq, [h.ev for h in hs][:4], weak=True,
                 ranks={h.ev.rank for h in hs if h.ev.rank is not None}, hosts={h.ev.host for h in hs if h.ev.host},
                 params={"what": "; ".join(dict.fromkeys(where))})]


#: A data connection of a collective closed by the peer (gloo's pair, NCCL's sockets): the job was past its set-up.
_PEER_CLOSED = ("Connection reset by peer", "Connection closed by peer", "Connection closed by remote peer",
                "Socket closed [")
#: The peer's address in gloo's words: "Read error [A]:P: Connection reset by peer", "Connection closed by peer [A]:P".
_PEER_AT = re.compile(r"(?:Read error|Connection closed by peer) \[(?P<addr>[^\]\s]{1,64})\]:\d{1,5}")


def _stopped_by_launcher(m: Any, reports: list[Any]) -> set[int]:
    """The reported workers their own launcher stopped once another had failed: -15 after its "Sending process P
    closing signal SIGTERM" (by pid, or in the same input when the pid is not given)."""
    closing = m.hits.get("agent_closing_worker", [])
    pids = {str(h.groups.get("pid")) for h in closing}
    files = {h.ev.source for h in closing}
    return {f.rank for f in reports if f.exitcode == -15
            and (str(f.pid) in pids or (f.ev is not None and f.ev.source in files))}


def _only_lost_their_peer(m: Any, reports: list[Any], lost: Any) -> bool:
    """Every worker a launcher reports failed lost its peer inside a collective (``lost``: the ranks whose connection
    was cut) and at most was then ended by torch's watchdog (SIGABRT after the failure it logged), or was stopped by its
    own launcher once another had failed (-15 after "Sending process P closing signal SIGTERM"): none failed of anything
    else or was killed from outside, so a peer they lost that no report names ended with status 0."""
    stopped = _stopped_by_launcher(m, reports)
    aborted = {h.ev.rank for h in m.hits.get("watchdog_abort", [])}
    for f in reports:
        if f.rank in stopped:
            continue
        killed = bool(f.signal) or (f.exitcode is not None and f.exitcode < 0)
        own_abort = f.rank in aborted and (f.signal == "SIGABRT" or f.exitcode == -6)
        if f.rank not in lost or (killed and not own_abort):
            return False
    return True


def _exited_zero(m: Any, cut: list[Any]) -> tuple[str, Any] | None:
    """One launcher's job, every rank of it on this host: the workers it reports failed all lost a peer inside a
    collective, and ranks of the job are in no report and logged no error. torchrun reports every worker that failed
    (an exit status, a signal); one it does not report ended with status 0, so it had left the collectives early.
    Seen on an H200 (fixtures/logs/nccl-fewer-steps): rank 1 ran out of data and returned, and rank 0's all_reduce
    failed at once with ncclRemoteError ("Connection closed by remote peer"); with gloo on one host, the ranks left
    lose it at a loopback address ("Connection closed by peer [127.0.0.1]:P": a peer on this host)."""
    reports = [f for f in m.elastic if not f.agent and f.rank is not None]
    if not reports or len({f.ev.source for f in reports if f.ev is not None}) != 1:
        return None
    world = max([c.nranks for c in m.comms] + [0])
    if world:
        if len({c.host for c in m.comms}) != 1 or {c.rank for c in m.comms} != set(range(world)):
            return None  # ranks on other hosts (their launchers' reports not here) or ranks this log does not show
        ranks = set(range(world))
    else:
        # No NCCL lines: the peer every lost connection names is on this host (a loopback address), and the ranks
        # are those the log shows (the launcher's reports, the ranks' own prefixes) and any below them.
        addrs = [g.group("addr") for g in (_PEER_AT.search(h.ev.text) for h in cut) if g]
        if not addrs or len(addrs) < len(cut) or not all(a.startswith("127.") or a == "::1" for a in addrs):
            return None
        ranks = set(range(max([f.rank for f in reports] + [ri.rank for ri in m.ranks.values() if ri.rank is not None]) + 1))
    lost = {h.ev.rank for h in cut if h.ev.rank is not None}
    if not _only_lost_their_peer(m, reports, lost):
        return None
    gone = sorted(ranks - {f.rank for f in reports})
    spoke = {ri.rank for ri in m.ranks.values() if ri.first_error is not None} | set(raised_ranks(m))
    if not lost or spoke & set(gone) or (not gone and world):
        return None
    # Without NCCL's lines a rank above every rank the log shows has no number here: the peer at the loopback
    # address is still a worker of this launcher that it does not report.
    who = (f"rank {gone[0]}" if len(gone) == 1 else f"ranks {', '.join(map(str, gone))}") if gone \
        else "a rank of this host"
    waiting = f"rank {sorted(lost)[0]} was" if len(lost) == 1 else f"ranks {', '.join(map(str, sorted(lost)))} were"
    return (f"{who} exited with status 0 (in none of the launcher's reports of failures, no error logged) while "
            f"{waiting} still in a collective with it"), reports[0].ev


def _finished_early(m: Any, found: list[Cand], _unused: list[Cand]) -> list[Cand]:
    """Ranks still in a collective lost a peer that had finished: it exited 0.

    torchrun's agent enters its exit barrier only once every worker of its node SUCCEEDED ("worker group successfully
    finished" at INFO, "Error waiting on exit barrier" when that wait fails). A rank elsewhere whose collective then
    lost its connection to a peer did not lose a dead peer: the peer's program ended its loop without this collective,
    so the ranks ran different numbers of collectives (uneven data, a stop condition only some ranks meet).

    With several workers per host the finished one's siblings fail too, and no exit barrier comes. Then: every worker
    the launchers report failed lost its connection to a peer at one address, on two hosts or more, and no launcher
    reports a worker killed or failing of anything else; the peer they all lost is in no launcher's report, so it
    exited 0 (a dead peer is reported by its launcher: an exit code, a signal)."""
    # The rank whose connection was cut failed of it, and nothing of its own: an error of another kind before it
    # (a crash, its own exception) is a cause that rules name for themselves.
    if any(c.cause and not c.consequence and c.code not in ("LOG060", "LOG061") and not c.weak for c in found):
        return []
    finished = [h for s in ("agent_succeeded", "exit_barrier_error") for h in m.hits.get(s, [])]
    done = {h.ev.source for h in finished}
    cut = [h for h in m.hits.get("conn_lost", []) if h.ev.source not in done
           and any(w in h.ev.text for w in _PEER_CLOSED)]
    if not cut:
        return []
    early = None if finished else _exited_zero(m, cut)
    if finished:
        host = finished[0].ev.host or f"the host of {finished[0].ev.source}"
        what = f"the ranks of {host} finished while ranks of another host were still in a collective with them"
        ev = finished[0].ev
    elif early is not None:
        what, ev = early
    else:
        reports = [f for f in m.elastic if not f.agent and f.rank is not None]
        # A worker its own launcher stopped once a sibling had failed lost its connection to that sibling, not to the
        # peer the job lost: its line is an echo of the echo.
        stopped = _stopped_by_launcher(m, reports)
        first = [h for h in cut if h.ev.rank not in stopped] or cut
        lost = {h.ev.rank: _PEER_AT.search(h.ev.text) for h in first if h.ev.rank is not None}
        addrs = {g.group("addr") for g in lost.values() if g}
        if len(addrs) != 1 or None in lost.values() or len({h.ev.source for h in first}) < 2 or not reports:
            return []
        if not _only_lost_their_peer(m, reports, set(lost) | stopped):
            return []  # a worker that failed of something else, or was killed: the peer's own end is reported
        what, ev = (f"the ranks of the host at {next(iter(addrs))} (one of them, in no launcher's report of failures) "
                    "finished while ranks of another host were still in a collective with them"), reports[0].ev
    evidence = [cut[0].ev] + ([ev] if ev is not None else [])
    return [Cand("LOG152", "collective_mismatch", 3, min(h.seq for h in cut), evidence,
                 ranks={h.ev.rank for h in cut if h.ev.rank is not None}, hosts={h.ev.host for h in cut if h.ev.host},
                 params={"what": what},
                 alts=[("peer_process_died", "a program that ends itself with status 0 on an error (sys.exit(0) in a "
                                             "handler) looks the same, as does a host whose log is missing: read the "
                                             "last lines of every rank")])]


MODEL_RULES = (
    ModelRule("user_stopped", _user_stopped, "the user stopped the job (KeyboardInterrupt) and nothing else failed",
              phase=PHASE_LAST),
    ModelRule("ranks_missing", _ranks_missing, "global ranks that never started"),
    ModelRule("finished_early", _finished_early, "one host's workers all finished while another host's ranks were "
                                                 "still in a collective with them", phase=PHASE_LAST),
    ModelRule("local_only", _local_only, "DeepSpeed's launcher started one node of a multi-node job"),
)

CODES = (
    Code("LOG141", "framework-versions-differ", E, "the nodes run different versions of {what}",
         "Install the same versions on every node (the lines after the error name both); a package that brings its "
         "own copy (a serving backend, a virtualenv per node) is the usual source",
         cause="version_mismatch"),
    Code("LOG060", "process-died", E, "{what}",
         "Find why that process died (OOM killer in dmesg, a segfault, preemption); the other ranks' errors are the echo",
         cause="peer_process_died"),
    Code("LOG065", "launcher-ssh-failed", E, "the launcher could not reach {host} over ssh, so no rank started there",
         "Make passwordless ssh work from the first node to every node of the hostfile (same port, key and user), or on one node drop the hostfile; under a scheduler without ssh, start each node's launcher through the scheduler",
         cause="launcher_misconfig", steps=("ssh -o PasswordAuthentication=no {host} hostname from the first node",)),
    Code("LOG115", "own-error", E, "{who} stopped on an error of its own code: {what}",
         "Fix what its traceback names: the communication did not fail, the other ranks were stopped because this "
         "one ended", cause="other"),
    Code("LOG120", "hostname-without-all-addresses", E, "this host's `hostname` does not know -I, so the master address could "
         "not be found from it",
         "Start the job through a launcher that sets MASTER_ADDR and MASTER_PORT (deepspeed, torchrun, mpirun), or set "
         "them yourself; where a script needs this host's address use `hostname -i` or `ip -4 -o addr show`",
         cause="other"),
    Code("LOG127", "slurm-auth-failed", E, "Slurm's authentication (MUNGE) rejected a credential: {what}",
         "Keep every node's clock in sync (chrony/ntpd: `date` on each node), give every node the same "
         "/etc/munge/munge.key and keep munged running; `munge -n | ssh NODE unmunge` tests a pair of nodes",
         cause="other"),
    Code("LOG152", "ranks-finished-early", E, "{what}: the ranks ran different numbers of collectives",
         "Make every rank run the same collectives: the same number of steps and batches on every rank "
         "(DistributedSampler with drop_last, or the Join context manager for uneven inputs), and a stop condition "
         "decided on all ranks together (all_reduce the flag)",
         cause="collective_mismatch"),
    Code("LOG147", "local-rank-argument-refused", E, "the script refused {arg}, the argument its launcher passes",
         "Launch with torchrun, which passes no argument (the script reads int(os.environ[\"LOCAL_RANK\"])), or declare "
         "both spellings: parser.add_argument(\"--local-rank\", \"--local_rank\", type=int); "
         "torch.distributed.launch spells it --local-rank from torch 2.0",
         cause="launcher_misconfig"),
    Code("LOG066", "launch-setup", E, "the launch does not match the job: {what}",
         "Start one process per GPU through the launcher and ask only for what the allocation has: torchrun "
         "--nproc-per-node=<GPUs>, mpirun -np N -H host:slots, or srun with --ntasks matching the allocation",
         cause="launcher_misconfig"),
    Code("LOG062", "ranks-missing", E, "the launcher started the wrong set of ranks: {what}",
         "Make the launcher start one task per rank (e.g. SLURM --ntasks-per-node = GPUs per node) matching the world size the program expects",
         cause="launcher_misconfig"),
    Code("LOG112", "launcher-hung-up", E, "the launcher was hung up (SIGHUP): the terminal or SSH session it ran in "
         "closed, and it stopped its workers",
         "Start the job detached from the terminal: inside tmux or screen, with `setsid nohup torchrun ... > train.log "
         "2>&1 &`, or through the scheduler (sbatch); on a torch that reads TORCHELASTIC_SIGNALS_TO_HANDLE, "
         "setting it to SIGTERM,SIGINT leaves SIGHUP to nohup",
         cause="other"),
    Code("LOG110", "user-stopped", W, "the job was stopped by the user (KeyboardInterrupt): {what}",
         "If it had stopped making progress, take every rank's stack while it hangs (commdoctor hang, or "
         "`commdoctor run -- CMD`), and rerun with NCCL_DEBUG=INFO and TORCH_DISTRIBUTED_DEBUG=DETAIL: the logs then "
         "show where each rank waits"),
)
