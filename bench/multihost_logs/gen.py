"""Make real two-host gloo job logs that failed in known ways (issue #16), one folder per case.

usage (root; about 10 min on 2 busy cores):
    python bench/multihost_logs/gen.py OUT [--only NAME,...] [--jobs 2]

Two "hosts" are network namespaces ``mhl-<k>-a`` (master, 10.209.<k>.1) and
``mhl-<k>-b`` (10.209.<k>.2) joined by one veth pair, each with its own host
name (``unshare --uts``) and /etc/hosts (/etc/netns/NAME/hosts). Nothing else is
in them, so no packet leaves. On each host ``torchrun --nnodes 2`` runs
``worker.py`` (all_reduce + barrier steps); its stdout and stderr go to one file
per host, as a user saves them (``torchrun ... > node0.log 2>&1``).

Each scenario runs twice: run 1 plain, run 2 with TORCH_DISTRIBUTED_DEBUG=DETAIL
and TORCH_CPP_LOG_LEVEL=INFO (and a variation of the fault where there is one).
A case is ``OUT/<split>/<scenario>-<run>/logs/*.log`` plus ``truth.json``
(root_cause: a label of /work/shared/corpus/README.md, "none" for a healthy run);
score with ``python /work/shared/tools/score_corpus.py OUT/dev --dir``.
The split is fixed before tuning: run 2 of every third scenario is ``holdout``,
the rest ``dev``. Round 2's scenarios (``NEW``) go to ``new-dev`` / ``new-holdout``
(``NEW_HOLDOUT`` names the held-out run of each) and ``new-holdout4`` for run 4.
Round 3's faults (``R3``) go to ``r3-dev`` / ``r3-holdout`` (``R3_HOLDOUT``) and ``r3-holdout4`` for run 4.
Runs 3, 4 and 5 (``--runs 5``) are later held-out sets of every scenario: ``holdoutN``, ``new-holdoutN``, ``r3-holdoutN``.
``--capture NAME`` saves the hosts' output another way (``CAPTURES``: torchrun --tee/--redirects with
--log-dir, LOGLEVEL, python logging with times, srun labels, ANSI colours, the torchrun script, mp.spawn
with tcp:// or env://) into ``OUT/cap-NAME``.
``--k0`` moves the labs' numbers (namespace names, addresses) clear of another gen.py. Every job is bounded (``DEADLINE``); the namespaces and their
/etc/netns folders are removed on any exit (also Ctrl-C / SIGTERM).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
WORKER = str(HERE / "worker.py")
CAPTURE = str(HERE / "capture.py")
SPAWN = str(HERE / "spawn.py")
DEADLINE = 75.0  # seconds one job may run, all hosts together
GRACE = 25.0  # after the first host exits non-zero, how long the others may still write
SCRUB = ("MASTER_", "GLOO_", "NCCL_", "TORCH_", "PET_", "TORCHELASTIC", "RANK", "WORLD_SIZE", "LOCAL_RANK",
         "LOCAL_WORLD_SIZE", "SLURM_", "OMPI_", "FAULT", "PG_TIMEOUT")
PORT = 29500
_labs: list["Lab"] = []
_lock = threading.Lock()


def sh(*argv: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    p = subprocess.run(list(argv), capture_output=True, text=True, timeout=20)
    if check and p.returncode:
        raise RuntimeError(f"{' '.join(argv)}: {p.stderr.strip()}")
    return p


class Host:
    def __init__(self, ns: str, name: str, addr: str) -> None:
        self.ns, self.name, self.addr = ns, name, addr
        self.procs: list[subprocess.Popen[bytes]] = []

    def hosts(self, text: str) -> None:
        d = Path("/etc/netns") / self.ns
        d.mkdir(parents=True, exist_ok=True)
        (d / "hosts").write_text("127.0.0.1 localhost\n" + text)

    def start(self, cmd: list[str], env: dict[str, str], out: Path | None, shm: str = "",
              capture: str = "", node: int = 0) -> subprocess.Popen[bytes]:
        if capture:  # the host's output goes through a filter first (bash for pipefail: the launcher's status stays)
            cmd = ["bash", "-c", f'set -o pipefail; "$@" 2>&1 | {sys.executable} -u {CAPTURE} {capture} {node}',
                   "bash", *cmd]
        mount = f' && mount -t tmpfs -o size={shm} shm /dev/shm' if shm else ""
        argv = ["ip", "netns", "exec", self.ns, "unshare", "--uts", "--mount", "--", "sh", "-c",
                'hostname "$0"' + mount + ' && exec "$@"', self.name, *cmd]
        f = open(out, "wb") if out else subprocess.DEVNULL
        p = subprocess.Popen(argv, stdout=f, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        if out:
            f.close()  # type: ignore[union-attr]
        self.procs.append(p)
        return p

    def iptables(self, *args: str) -> None:
        sh("ip", "netns", "exec", self.ns, "iptables", "-w", "5", *args)

    def cap(self, p: subprocess.Popen[bytes], limit: str) -> None:
        """Put the process (and so the children it starts) in a memory cgroup of ``limit`` bytes, like a container's."""
        cg = Path("/sys/fs/cgroup/memory") / self.ns
        cg.mkdir(exist_ok=True)
        (cg / "memory.limit_in_bytes").write_text(limit)
        (cg / "cgroup.procs").write_text(str(p.pid))

    def stop(self) -> None:
        for p in self.procs:
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
        self.procs.clear()
        cg = Path("/sys/fs/cgroup/memory") / self.ns
        if cg.exists():  # the job's processes in a session of their own (torchrun's workers)
            for pid in (cg / "cgroup.procs").read_text().split():
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except ProcessLookupError:
                    pass
        for _ in range(50):
            try:
                cg.rmdir() if cg.exists() else None
                break
            except OSError:  # its last processes are still exiting
                time.sleep(0.1)


class Lab:
    def __init__(self, k: int, net: str = "10.209") -> None:
        self.k = k
        self.a = Host(f"mhl-{k}-a", f"mhl{k}a", f"{net}.{k}.1")
        self.b = Host(f"mhl-{k}-b", f"mhl{k}b", f"{net}.{k}.2")

    def up(self) -> "Lab":
        with _lock:
            _labs.append(self)
        self.down()
        for h in (self.a, self.b):
            sh("ip", "netns", "add", h.ns)
            sh("ip", "-n", h.ns, "link", "set", "lo", "up")
        va, vb = f"mhl{self.k}a", f"mhl{self.k}b"
        sh("ip", "link", "add", va, "type", "veth", "peer", "name", vb)
        for h, v in ((self.a, va), (self.b, vb)):
            sh("ip", "link", "set", v, "netns", h.ns)
            sh("ip", "-n", h.ns, "link", "set", v, "name", "eth0")
            sh("ip", "-n", h.ns, "addr", "add", f"{h.addr}/24", "dev", "eth0")
            sh("ip", "-n", h.ns, "link", "set", "eth0", "up")
            sh("ip", "-n", h.ns, "route", "add", "unreachable", "default")
        self.names()
        return self

    def names(self, a_extra: str = "", b_extra: str = "") -> None:
        base = f"{self.a.addr} {self.a.name}\n{self.b.addr} {self.b.name}\n"
        self.a.hosts(a_extra + base)
        self.b.hosts(b_extra + base)

    def down(self) -> None:
        for h in (self.a, self.b):
            h.stop()
            sh("ip", "netns", "del", h.ns, check=False)
            shutil.rmtree(Path("/etc/netns") / h.ns, ignore_errors=True)


def cleanup(*_: object) -> None:
    with _lock:
        labs = list(_labs)
    for lab in labs:
        lab.down()


def env_for(extra: dict[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(SCRUB)}
    env.update(PYTHONUNBUFFERED="1", OMP_NUM_THREADS="1")
    env.update(extra)
    return env


# name -> (label, {run: setup}); a setup says what differs from a healthy job on each host.
# Keys: env_a/env_b, args_a/args_b (torchrun arguments replaced), master_b (MASTER address b uses),
# hosts_a/hosts_b (extra /etc/hosts lines), fw_b (iptables rules on b), squat (a listener on a's port).
DETAIL = {"TORCH_DISTRIBUTED_DEBUG": "DETAIL", "TORCH_CPP_LOG_LEVEL": "INFO"}
SCENARIOS: dict[str, tuple[str, dict[int, dict]]] = {
    "healthy": ("none", {1: {}, 2: {"env": DETAIL}}),
    "healthy-2proc": ("none", {1: {"nproc": 2}, 2: {"nproc": 2, "env": DETAIL}}),
    "rank-killed": ("peer_process_died", {1: {"fault": "kill"}, 2: {"fault": "kill", "env": DETAIL, "nproc": 2,
                                                                      "fault_rank": 3}}),
    "rank-raises": ("peer_process_died", {1: {"fault": "raise"}, 2: {"fault": "raise", "env": DETAIL}}),
    "host-memory": ("peer_process_died", {1: {"fault": "memory"}, 2: {"fault": "memory", "env": DETAIL}}),
    "straggler": ("collective_timeout_straggler", {1: {"fault": "straggler"}, 2: {"fault": "straggler", "env": DETAIL}}),
    "mismatch-op": ("collective_mismatch", {1: {"fault": "mismatch_op"}, 2: {"fault": "mismatch_op", "env": DETAIL}}),
    "mismatch-size": ("collective_mismatch", {1: {"fault": "mismatch_size"}, 2: {"fault": "mismatch_size", "env": DETAIL}}),
    "firewall-gloo": ("firewall_or_port_blocked", {1: {"fw_b": "gloo"}, 2: {"fw_b": "gloo", "env": DETAIL}}),
    "firewall-store": ("firewall_or_port_blocked", {1: {"fw_b": "store"}, 2: {"fw_b": "store", "env": DETAIL}}),
    "wrong-master": ("rendezvous_unreachable", {1: {"master_b": "10.209.{k}.99"},
                                                2: {"master_b": "10.209.{k}.2", "env": DETAIL}}),
    "bad-hostname": ("hostname_resolution", {1: {"master": "trainmaster", "hosts_a": "10.209.{k}.1 trainmaster\n"},
                                             2: {"master": "trainmaster", "hosts_a": "10.209.{k}.1 trainmaster\n",
                                                 "hosts_b": "127.0.1.1 trainmaster\n", "env": DETAIL}}),
    "port-conflict": ("port_conflict", {1: {"squat": True}, 2: {"squat": True, "env": DETAIL}}),
    "wrong-ifname": ("wrong_interface", {1: {"env_b": {"GLOO_SOCKET_IFNAME": "eth1"}},
                                         2: {"env_b": {"GLOO_SOCKET_IFNAME": "ib0"}, "env": DETAIL}}),
    "wrong-nnodes": ("launcher_misconfig", {1: {"nnodes_b": "3"}, 2: {"node_rank_b": "0", "env": DETAIL}}),
}
HOLDOUT = {name for i, name in enumerate(SCENARIOS) if i % 3 == 2}  # their run 2 only
# Round 2 (issue #16): faults and wordings the first 15 lack. Run 1 plain with one rank per host, run 2
# with DETAIL and two ranks per host (the faulty rank is then rank 3, on host b). Which run of each is
# held out was fixed here before any of them was run: run 2 of the even-numbered ones, run 1 of the odd.
# More keys: port_b (the master port b uses), absent_a (host a never starts its torchrun), linkdown_b
# (b's interface goes down once b has logged step 2), nproc_a/nproc_b (ranks per host), net (the labs'
# first two octets instead of 10.209).
NEW: dict[str, tuple[str, dict]] = {
    # Gloo on host a binds and advertises a loopback address. Of a pair of gloo ranks only one connects, and in
    # 10.209.K.x labs that was always the rank with the loopback address, to the other's real one: the job
    # passed (tried on a and on b). In 192.168.K.x (net) the peer connects, to its own loopback, as users see it.
    "hosts-loopback": ("hostname_resolution", {"hosts_a": "127.0.1.1 mhl{k}a\n", "net": "192.168"}),
    "ifname-lo": ("wrong_interface", {"env_a": {"GLOO_SOCKET_IFNAME": "lo"}, "net": "192.168"}),
    "wrong-port": ("rendezvous_unreachable", {"port_b": PORT + 1}),
    "master-absent": ("rendezvous_unreachable", {"absent_a": True}),
    "rank-segv": ("peer_process_died", {"fault": "segv"}),
    "raise-early": ("peer_process_died", {"fault": "raise_early"}),
    "barrier-skipped": ("collective_mismatch", {"fault": "skip_barrier"}),
    "link-down": ("hardware_fault", {"linkdown_b": True}),
    "healthy-uneven": ("none", {"nproc_a": 2, "nproc_b": 1}),
    # Added after the nine above were scored (same rules for the held-out run). memcap_b: host b's torchrun runs
    # in a memory cgroup of that size; sigterm_b: b's torchrun gets SIGTERM once b has logged step 2 (a preemption,
    # scancel, a pod evicted); unnamed_b: b's /etc/hosts lacks b's own name.
    "oom-killed": ("peer_process_died", {"fault": "grow", "memcap_b": str(2 << 30)}),
    "preempted": ("peer_process_died", {"sigterm_b": True}),
    "rank-exits": ("peer_process_died", {"fault": "exit"}),
    "hostname-unknown": ("hostname_resolution", {"unnamed_b": True, "net": "192.168"}),
}
NEW_HOLDOUT = {(name, 2 if i % 2 == 0 else 1) for i, name in enumerate(NEW)}
for _name, (_label, _fault) in NEW.items():
    _two = {"nproc": 2, **({"fault_rank": 3} if "fault" in _fault else {})}
    SCENARIOS[_name] = (_label, {1: dict(_fault), 2: {**_fault, **_two, "env": DETAIL}})
# Round 3 (issue #16): more faults real two-host jobs hit. Run 1 plain with one rank per host; run 2 with DETAIL, two
# ranks per host (the faulty rank is rank 3) and a capture of R3_CAPTURE. The held-out run of each (R3_HOLDOUT) was fixed
# here before any of them was run. More keys: shm_b (size of host b's /dev/shm, a tmpfs of its own mount namespace),
# restarts (torchrun --max-restarts), c10d (the c10d rendezvous at a's address), rdzv_id_b (the --rdzv-id host b uses).
R3: dict[str, tuple[str, dict]] = {
    "dtype-mismatch": ("collective_mismatch", {"fault": "mismatch_dtype"}),
    "reorder": ("collective_mismatch", {"fault": "reorder"}),
    "late-init": ("collective_timeout_straggler", {"fault": "late_init"}),
    "crash-loop": ("peer_process_died", {"fault": "raise", "restarts": 2}),
    "rdzv-id": ("launcher_misconfig", {"c10d": True, "rdzv_id_b": "job-b"}),
    "shm-small": ("shm_too_small", {"fault": "loader", "shm_b": "1m"}),
}
R3_CAPTURE = {"dtype-mismatch": "srun", "reorder": "logging-ts", "late-init": "tee", "crash-loop": "ansi",
              "rdzv-id": "torchrun", "shm-small": "redirects-cat"}
R3_HOLDOUT = {("dtype-mismatch", 2), ("reorder", 1), ("late-init", 2), ("crash-loop", 1), ("rdzv-id", 2), ("shm-small", 1)}
# How a host's output is saved (--capture NAME, or R3_CAPTURE): merged into the run's setup. tee/redirects: torchrun's
# --tee/--redirects 3 with --log-dir (cat: the ranks' files are appended to the host's file after the job, as a
# user gathers them; without it the file holds the agent's output only); filter: capture.py's modes; launcher:
# run (python -m torch.distributed.run), torchrun (the console script) or spawn (spawn.py, init tcp:// or env://).
CAPTURES: dict[str, dict] = {
    "tee": {"tee": "3"},
    "redirects": {"redirects": "3"},
    "redirects-cat": {"redirects": "3", "cat": True},
    "loglevel-debug": {"env": {"LOGLEVEL": "DEBUG"}},
    "loglevel-info": {"env": {"LOGLEVEL": "INFO", "TORCH_CPP_LOG_LEVEL": "INFO"}},
    "detail": {"env": {"TORCH_DISTRIBUTED_DEBUG": "DETAIL"}},
    "logging-ts": {"env": {"LOGFMT": "1"}, "filter": "ts"},
    "srun": {"filter": "label"},
    "ansi": {"filter": "ansi"},
    "torchrun": {"launcher": "torchrun"},
    "spawn-tcp": {"launcher": "spawn", "init": "tcp"},
    "spawn-env": {"launcher": "spawn", "init": "env"},
}
for _name, (_label, _fault) in R3.items():
    _two = {"nproc": 2, **({"fault_rank": 3} if "fault" in _fault else {})}
    SCENARIOS[_name] = (_label, {1: dict(_fault), 2: {**_fault, **_two, "env": DETAIL, "capture": R3_CAPTURE[_name]}})
# Run 3 (a second held-out set, made after the first was scored): run 2's fault with TORCH_DISTRIBUTED_DEBUG=INFO.
INFO = {"TORCH_DISTRIBUTED_DEBUG": "INFO", "TORCH_CPP_LOG_LEVEL": "INFO"}
# Run 4 (a third held-out set, made after the second was scored): run 1's fault, two ranks per host (the
# faulty rank is rank 3, on host b).
for _label, _runs in SCENARIOS.values():
    if 3 in _runs:
        continue
    _runs[3] = {**_runs[2], "env": INFO}
    _runs[4] = {**_runs[1], "nproc": 2, **({"fault_rank": 3} if "fault" in _runs[1] else {})}
# Run 5 (a fourth held-out set, made after the third was scored): run 4's fault (two ranks per host), each host's
# output saved through torchrun's --tee 3, so every rank's lines carry torchrun's "[default0]:" prefix.
for _label, _runs in SCENARIOS.values():
    _runs[5] = {**_runs[4], "tee": "3"}

# Round 5 (issue #16, 29 Nov): faults no earlier round had. Run 1 plain with one rank per host, run 2 with DETAIL and
# two ranks per host (the faulty rank is rank 3, on host b). The held-out run of each (R5_HOLDOUT) was fixed here
# before any of them was run. hosts_b maps the master's name to an address nobody has; fw_b "gloo-reject" and
# "store-reject" answer the connections with a TCP reset (iptables REJECT) instead of dropping them.
R5: dict[str, tuple[str, dict]] = {
    "hosts-wrong-ip": ("hostname_resolution", {"master": "trainmaster", "hosts_a": "10.209.{k}.1 trainmaster\n",
                                               "hosts_b": "10.209.{k}.77 trainmaster\n"}),
    "fw-reject-gloo": ("firewall_or_port_blocked", {"fw_b": "gloo-reject"}),
    "fw-reject-store": ("firewall_or_port_blocked", {"fw_b": "store-reject"}),
    "fewer-steps": ("collective_mismatch", {"fault": "fewer_steps"}),
    "rank-stopped": ("collective_timeout_straggler", {"fault": "sigstop"}),
}
R5_HOLDOUT = {(name, 1 if i % 2 == 0 else 2) for i, name in enumerate(R5)}
for _name, (_label, _fault) in R5.items():
    _two = {"nproc": 2, **({"fault_rank": 3} if "fault" in _fault else {})}
    # Runs 3 and 4, made after the round's readings were written and scored once: run 2's fault with
    # TORCH_DISTRIBUTED_DEBUG=INFO, and run 1's with two ranks per host; run 5 (made after runs 3-4 were used):
    # run 4's, saved through torchrun's --tee 3.
    SCENARIOS[_name] = (_label, {1: dict(_fault), 2: {**_fault, **_two, "env": DETAIL},
                                 3: {**_fault, **_two, "env": INFO}, 4: {**_fault, **_two},
                                 5: {**_fault, **_two, "tee": "3"}})

# Round 6 (issue #16, 30 Nov): the faulty rank is rank 0, on the master host whose torchrun holds the store, and a host
# that dies whole. Run 1 plain with one rank per host; run 2 with DETAIL and two ranks per host (rank 0's faults stay on
# rank 0). Every run was scored before any reading was written (R6_HOLDOUT: the runs kept unread after that).
# delay_a: host a's torchrun starts this many seconds after b's; sigkill_b: every process of host b gets SIGKILL once b
# has logged step 2 (the node lost: power, kernel panic, the OOM killer taking the launcher too).
R6: dict[str, tuple[str, dict]] = {
    "r0-killed": ("peer_process_died", {"fault": "kill", "fault_rank": 0}),
    "r0-straggler": ("collective_timeout_straggler", {"fault": "straggler", "fault_rank": 0}),
    "r0-mismatch-size": ("collective_mismatch", {"fault": "mismatch_size", "fault_rank": 0}),
    "r0-raises": ("peer_process_died", {"fault": "raise", "fault_rank": 0}),
    "master-late": ("none", {"delay_a": 20.0}),
    "node-lost": ("peer_process_died", {"sigkill_b": True}),
}
R6_HOLDOUT = {(name, 2 if i % 2 == 0 else 1) for i, name in enumerate(R6)}
for _name, (_label, _fault) in R6.items():
    # Runs 3 and 4, made after the round's readings were written and scored once: run 2's fault with
    # TORCH_DISTRIBUTED_DEBUG=INFO, and run 1's with two ranks per host.
    SCENARIOS[_name] = (_label, {1: dict(_fault), 2: {**_fault, "nproc": 2, "env": DETAIL},
                                 3: {**_fault, "nproc": 2, "env": INFO}, 4: {**_fault, "nproc": 2}})
# Round 7 (issue #16, 30 Nov): the launcher told the wrong host (labels as ../shared/corpus/README.md defines them: a
# wrong MASTER_ADDR is rendezvous_unreachable, a wrong node rank launcher_misconfig). master_b: the address host b uses as MASTER_ADDR
# (b's own: nobody listens there); swap: host a runs --node-rank 1 and host b --node-rank 0, both with a's address.
R7: dict[str, tuple[str, dict]] = {
    "master-addr-is-b": ("rendezvous_unreachable", {"master_b": "10.209.{k}.2"}),
    "node-rank-swapped": ("launcher_misconfig", {"swap": True}),
}
# Round 8 (issue #16, 30 Nov): hosts_b maps host b's own name to host a's address (gloo binds the address its host
# name resolves to; the job passed every run: only one side of a gloo pair connects, so "none"); fw_a "gloo": host a, not b, lets only the store's port through; nnodes_a: host a's --nnodes.
R7.update({
    "b-name-is-a-addr": ("none", {"hosts_b": "10.209.{k}.1 mhl{k}b\n"}),
    "fw-a-gloo": ("firewall_or_port_blocked", {"fw_a": "gloo"}),
    "nnodes-a-1": ("launcher_misconfig", {"nnodes_a": "1"}),
    # Round 9: a package missing on host b (rank 1 fails to import before init_process_group); host a, the store's,
    # preempted (its torchrun gets SIGTERM once a has logged step 2).
    "b-import-error": ("peer_process_died", {"fault": "import_error"}),
    "a-preempted": ("peer_process_died", {"sigterm_a": True}),
    # Round 10: rank 1's DataLoader worker killed; rank 1 saves a checkpoint to a full disk (host b's /dev/shm of
    # 1 MB as its checkpoint folder); host a's GLOO_SOCKET_IFNAME names an interface it lacks.
    "loader-killed": ("peer_process_died", {"fault": "loader_kill"}),
    "disk-full": ("peer_process_died", {"fault": "disk_full", "shm_b": "1m", "env_b": {"CKPT_DIR": "/dev/shm"}}),
    "a-ifname-missing": ("wrong_interface", {"env_a": {"GLOO_SOCKET_IFNAME": "ib0"}}),
    # Round 11: rank 0, on the store's host, finishes a step early (exit 0), exits 3 of its own check, segfaults.
    "r0-fewer-steps": ("collective_mismatch", {"fault": "fewer_steps", "fault_rank": 0}),
    "r0-exits": ("peer_process_died", {"fault": "exit", "fault_rank": 0}),
    "r0-segv": ("peer_process_died", {"fault": "segv", "fault_rank": 0}),
    # Round 12: rank 0 on the store's host killed by the OOM killer (memcap_a: host a's memory cgroup), stopped
    # (SIGSTOP), calling barrier before its all_reduce.
    "r0-oom-killed": ("peer_process_died", {"fault": "grow", "fault_rank": 0, "memcap_a": str(2 << 30)}),
    "r0-stopped": ("collective_timeout_straggler", {"fault": "sigstop", "fault_rank": 0}),
    "r0-reorder": ("collective_mismatch", {"fault": "reorder", "fault_rank": 0}),
})
for _name, (_label, _fault) in R7.items():
    SCENARIOS[_name] = (_label, {1: dict(_fault), 2: {**_fault, "nproc": 2, "env": DETAIL},
                                 3: {**_fault, "nproc": 2, "env": INFO}, 4: {**_fault, "nproc": 2}})


def with_capture(setup: dict, capture: str) -> dict:
    c = CAPTURES[capture]
    return {**setup, **c, "env": {**setup.get("env", {}), **c.get("env", {})}}


def run_case(name: str, run: int, k: int, out_root: Path, capture: str = "") -> str:
    label, runs = SCENARIOS[name]
    setup = runs[run]
    if capture or setup.get("capture"):
        setup = with_capture(setup, capture or setup["capture"])
    s = {key: (v.format(k=k) if isinstance(v, str) else v) for key, v in setup.items()}
    split = f"cap-{capture}" if capture else \
        (f"r6-holdout{run}" if run >= 3 else "r6-holdout" if (name, run) in R6_HOLDOUT else "r6-dev") if name in R6 else \
        (f"r12-run{run}" if name in ("r0-oom-killed", "r0-stopped", "r0-reorder") else
         f"r11-run{run}" if name in ("r0-fewer-steps", "r0-exits", "r0-segv") else
         f"r10-run{run}" if name in ("loader-killed", "disk-full", "a-ifname-missing") else
         f"r9-run{run}" if name in ("b-import-error", "a-preempted") else
         f"r8-run{run}" if name in ("b-name-is-a-addr", "fw-a-gloo", "nnodes-a-1") else f"r7-run{run}") if name in R7 else \
        (f"r5-holdout{run}" if run >= 3 else "r5-holdout" if (name, run) in R5_HOLDOUT else "r5-dev") if name in R5 else \
        (f"r3-holdout{run}" if run >= 3 else "r3-holdout" if (name, run) in R3_HOLDOUT else "r3-dev") if name in R3 else (f"new-holdout{run}" if run >= 3 else "new-holdout" if (name, run) in NEW_HOLDOUT else "new-dev") \
        if name in NEW else \
        f"holdout{run}" if run >= 3 else "holdout" if run == 2 and name in HOLDOUT else "dev"
    case = out_root / split / f"{name}-{run}"
    shutil.rmtree(case, ignore_errors=True)
    (case / "logs").mkdir(parents=True)
    lab = Lab(k, s.get("net", "10.209")).up()
    try:
        lab.names(s.get("hosts_a", ""), s.get("hosts_b", ""))
        if s.get("unnamed_b"):
            lab.b.hosts(f"{lab.a.addr} {lab.a.name}\n")
        if s.get("fw_b") == "gloo":  # b lets only the store's port through: no other TCP connection in or out
            lab.b.iptables("-A", "INPUT", "-p", "tcp", "--syn", "-j", "DROP")
            lab.b.iptables("-A", "OUTPUT", "-p", "tcp", "--syn", "!", "--dport", str(PORT), "-j", "DROP")
        if s.get("fw_a") == "gloo":  # a lets only its store's port through: no other TCP connection in or out
            lab.a.iptables("-A", "INPUT", "-p", "tcp", "--syn", "!", "--dport", str(PORT), "-j", "DROP")
            lab.a.iptables("-A", "OUTPUT", "-p", "tcp", "--syn", "-o", "eth0", "-j", "DROP")
        if s.get("fw_b") == "store":  # b may not reach the master's store port
            lab.b.iptables("-A", "OUTPUT", "-p", "tcp", "--dport", str(PORT), "-j", "DROP")
        reset = ("-j", "REJECT", "--reject-with", "tcp-reset")
        if s.get("fw_b") == "gloo-reject":  # as "gloo", but every other connection is refused, not dropped
            lab.b.iptables("-A", "INPUT", "-p", "tcp", "--syn", *reset)
            lab.b.iptables("-A", "OUTPUT", "-p", "tcp", "--syn", "!", "--dport", str(PORT), *reset)
        if s.get("fw_b") == "store-reject":  # b's connections to the master's store port are refused
            lab.b.iptables("-A", "OUTPUT", "-p", "tcp", "--dport", str(PORT), *reset)
        if s.get("squat"):  # another program already listens on the master port of a
            lab.a.start([sys.executable, "-c", "import socket,time;s=socket.socket();"
                         f"s.bind(('0.0.0.0',{PORT}));s.listen(8);time.sleep({DEADLINE + 10})"], env_for({}), None)
            time.sleep(1.0)
        procs = {}
        order = ((1, lab.b), (0, lab.a)) if s.get("delay_a") else ((0, lab.a), (1, lab.b))
        for i, h in order:
            b = h is lab.b
            if not b and s.get("absent_a"):
                continue
            if not b and s.get("delay_a"):
                time.sleep(float(s["delay_a"]))  # b's torchrun waits for a's store meanwhile
            nproc = str(s.get("nproc_b" if b else "nproc_a", s.get("nproc", 1)))
            master = s.get("master_b") if b and s.get("master_b") else s.get("master", lab.a.addr)
            nnodes = s.get("nnodes_b", "2") if b else s.get("nnodes_a", "2")
            node_rank = s.get("node_rank_b", "1") if b else "0"
            if s.get("swap"):
                node_rank = "0" if b else "1"
            port = str(s.get("port_b", PORT) if b else PORT)
            launcher = s.get("launcher", "run")
            logdir = case / "ranks" / f"node{i}"
            if launcher == "spawn":
                cmd = [sys.executable, SPAWN, "--nnodes", nnodes, "--nproc-per-node", nproc, "--node-rank", node_rank,
                       "--master-addr", master, "--master-port", port, "--init", s.get("init", "tcp"), WORKER]
            else:
                where = ["--rdzv-backend", "c10d", "--rdzv-endpoint", f"{master}:{port}",
                         "--rdzv-id", s.get("rdzv_id_b", f"job{k}") if b else f"job{k}"] if s.get("c10d") else \
                    ["--node-rank", node_rank, "--master-addr", master, "--master-port", port]
                out_opts = []
                if s.get("tee") or s.get("redirects"):
                    logdir.mkdir(parents=True)
                    out_opts = ["--tee", s["tee"]] if s.get("tee") else ["--redirects", s["redirects"]]
                    out_opts += ["--log-dir", str(logdir)]
                head = [str(Path(sys.executable).parent / "torchrun")] if launcher == "torchrun" else \
                    [sys.executable, "-m", "torch.distributed.run"]
                cmd = [*head, "--nnodes", nnodes, "--nproc-per-node", nproc, *where, *out_opts,
                       "--rdzv-conf", "join_timeout=30" if s.get("c10d") else "timeout=30",
                       "--max-restarts", str(s.get("restarts", 0)), WORKER]
            extra = dict(s.get("env", {}))
            extra.update(s.get("env_b" if b else "env_a", {}))
            if s.get("fault"):
                extra.update(FAULT=s["fault"], FAULT_RANK=str(s.get("fault_rank", 1)))
            procs[h.name] = h.start(cmd, env_for(extra), case / "logs" / f"node{i}.log",
                                    shm=s.get("shm_b", "") if b else "", capture=s.get("filter", ""), node=i)
            if b and s.get("memcap_b"):
                h.cap(procs[h.name], s["memcap_b"])
            if not b and s.get("memcap_a"):
                h.cap(procs[h.name], s["memcap_a"])
        t0 = time.monotonic()
        failed_at = None
        down = False
        while time.monotonic() - t0 < DEADLINE:
            if s.get("sigterm_a") and not down and b"step 2" in (case / "logs" / "node0.log").read_bytes():
                procs[lab.a.name].send_signal(signal.SIGTERM)  # to a's launcher, the store's host, as a scheduler does
                down = True
            if (s.get("linkdown_b") or s.get("sigterm_b") or s.get("sigkill_b")) and not down \
                    and b"step 2" in (case / "logs" / "node1.log").read_bytes():
                if s.get("linkdown_b"):
                    sh("ip", "-n", lab.b.ns, "link", "set", "eth0", "down")  # the cable is pulled mid-training
                elif s.get("sigkill_b"):  # the whole host at once: every process in its namespace (workers too)
                    for pid in sh("ip", "netns", "pids", lab.b.ns, check=False).stdout.split():
                        try:
                            os.kill(int(pid), signal.SIGKILL)
                        except ProcessLookupError:
                            pass
                else:
                    procs[lab.b.name].send_signal(signal.SIGTERM)  # to b's launcher, as a scheduler does
                down = True
            rcs = [p.poll() for p in procs.values()]
            if all(rc is not None for rc in rcs):
                break
            if failed_at is None and any(rc not in (None, 0) for rc in rcs):
                failed_at = time.monotonic()
            if failed_at is not None and time.monotonic() - failed_at > GRACE:
                break
            time.sleep(0.2)
        rcs = {n: p.poll() for n, p in procs.items()}
        secs = time.monotonic() - t0
    finally:
        lab.down()
    if s.get("cat"):  # the ranks' own files after the agent's output, as a user gathers them into one file per host
        for i in range(2):
            with open(case / "logs" / f"node{i}.log", "ab") as f:
                for part in sorted((case / "ranks" / f"node{i}").rglob("*.log")):
                    f.write(part.read_bytes())
    shutil.rmtree(case / "ranks", ignore_errors=True)
    truth = {"source": f"bench/multihost_logs/gen.py {name} run {run}", "root_cause": label,
             "evidence": f"scenario {name}, run {run}: {json.dumps(setup, sort_keys=True)}",
             "fix": "", "confidence": "high", "torch_version": torch_version(),
             "exit": {n: ("killed at deadline" if rc is None else rc) for n, rc in rcs.items()},
             "seconds": round(secs, 1)}
    (case / "truth.json").write_text(json.dumps(truth, indent=1) + "\n")
    return f"{split}/{name}-{run}: {label} exit {truth['exit']} in {secs:.0f} s"


def torch_version() -> str:
    import torch
    return str(torch.__version__)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--only", default="")
    ap.add_argument("--runs", default="1,2")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--capture", default="", choices=["", *CAPTURES],
                    help="save the hosts' output this way (CAPTURES); the cases go to OUT/cap-NAME")
    ap.add_argument("--k0", type=int, default=10, help="first lab number (10.209.K.x), to run beside another gen.py")
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("needs root (network namespaces)")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    todo = [(n, r) for n in (a.only.split(",") if a.only else SCENARIOS) for r in map(int, a.runs.split(","))]
    out = Path(a.out)
    try:
        with ThreadPoolExecutor(a.jobs) as ex:
            futs = [ex.submit(run_case, n, r, a.k0 + i, out, a.capture) for i, (n, r) in enumerate(todo)]
            for f in futs:
                print(f.result(), flush=True)
    finally:
        cleanup()


if __name__ == "__main__":
    main()
