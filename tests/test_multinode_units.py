"""Multi-node pieces without namespaces: launcher detection, the pair schedule, the cross-node checks as
functions of what nodes publish, merging, the report's nodes section, and a real 2-node run on loopback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from itertools import combinations
from typing import Any

import pytest

from tests.conftest import REPO, have_torch

from commdoctor.core.jobctx import detect, expand_hostlist
from commdoctor.core.model import CheckResult, Finding, Report, Severity, Stage, Status
from tests import ports


# -- launcher detection ----------------------------------------------------------------------------

TORCHRUN = {"TORCHELASTIC_RUN_ID": "r1", "RANK": "4", "WORLD_SIZE": "6", "LOCAL_RANK": "0", "LOCAL_WORLD_SIZE": "2",
            "GROUP_RANK": "2", "GROUP_WORLD_SIZE": "3", "MASTER_ADDR": "10.0.0.1", "MASTER_PORT": "29500",
            "TORCHELASTIC_USE_AGENT_STORE": "True"}


def test_torchrun_node_leader_and_agent_store() -> None:
    job = detect(TORCHRUN)
    assert job is not None
    assert (job.launcher, job.node, job.nnodes, job.leader, job.coordinator) == ("torchrun", 2, 3, True, False)
    assert job.agent_store and not job.hosts_store and job.expected_nodes == 3
    assert not detect({**TORCHRUN, "LOCAL_RANK": "1", "RANK": "5"}).leader  # type: ignore[union-attr]


def test_torchrun_elastic_range_from_the_agents_command_line() -> None:
    env = {**TORCHRUN, "GROUP_WORLD_SIZE": "2", "WORLD_SIZE": "4", "GROUP_RANK": "0", "RANK": "0"}
    argv = [sys.executable, "-m", "torch.distributed.run", "--nnodes", "2:3", "--nproc-per-node", "2", "-m",
            "commdoctor", "run"]
    job = detect(env, agent_argv=argv)
    assert job is not None and (job.nnodes, job.expected_nodes) == (2, 3)
    named = detect(env, agent_argv=argv, node_names=["h1", "h2", "h3"])
    assert named is not None and named.node_names == ("h1", "h2", "h3")


def test_one_process_alone_is_not_a_job() -> None:
    assert detect({**TORCHRUN, "WORLD_SIZE": "1", "LOCAL_WORLD_SIZE": "1", "GROUP_WORLD_SIZE": "1", "GROUP_RANK": "0",
                   "RANK": "0"}) is None
    assert detect({"SLURM_PROCID": "0", "SLURM_NTASKS": "1", "SLURM_NNODES": "1"}) is None
    assert detect({"OMPI_COMM_WORLD_RANK": "0", "OMPI_COMM_WORLD_SIZE": "1", "OMPI_COMM_WORLD_LOCAL_SIZE": "1"}) is None
    assert detect({"RANK": "0", "WORLD_SIZE": "2", "MASTER_ADDR": "10.0.0.1", "MASTER_PORT": "29500"}) is None
    assert detect({}) is None


def test_several_processes_on_one_node_are_a_one_node_job() -> None:
    """torchrun --standalone --nproc-per-node 2: local rank 0 leads (and coordinates), local rank 1 checks in."""
    one = {**TORCHRUN, "WORLD_SIZE": "2", "GROUP_WORLD_SIZE": "1", "GROUP_RANK": "0", "RANK": "0", "LOCAL_RANK": "0"}
    job = detect(one)
    assert job is not None and job.single_node and job.coordinator and (job.nnodes, job.expected_nodes) == (1, 1)
    other = detect({**one, "RANK": "1", "LOCAL_RANK": "1"})
    assert other is not None and other.single_node and not other.leader
    # torchrun --nnodes 1:2 on one node is still a (possibly) two-node job
    argv = ["torchrun", "--nnodes", "1:2", "--nproc-per-node", "2", "-m", "commdoctor", "run"]
    assert not detect(one, agent_argv=argv).single_node  # type: ignore[union-attr]


def test_srun_and_mpirun_on_one_node_need_no_master_addr() -> None:
    mpi = detect({"OMPI_COMM_WORLD_RANK": "1", "OMPI_COMM_WORLD_SIZE": "2", "OMPI_COMM_WORLD_LOCAL_RANK": "1",
                  "OMPI_COMM_WORLD_LOCAL_SIZE": "2"})
    assert mpi is not None and mpi.single_node and mpi.problem is None and not mpi.leader
    assert (mpi.master_addr, mpi.master_port) == ("127.0.0.1", 29500) and "MASTER_ADDR unset: 127.0.0.1 (one node)" in mpi.notes
    slurm = detect({"SLURM_PROCID": "0", "SLURM_NTASKS": "4", "SLURM_LOCALID": "0", "SLURM_NNODES": "1",
                    "SLURM_JOB_NODELIST": "gpu-07", "MASTER_PORT": "29611", "SLURM_STEP_ID": "0"})
    assert slurm is not None and slurm.single_node and slurm.hosts_store and slurm.local_world_size == 4
    assert (slurm.master_addr, slurm.master_port) == ("127.0.0.1", 29611)
    given = detect({"PMI_RANK": "0", "PMI_SIZE": "2", "MPI_LOCALRANKID": "0", "MPI_LOCALNRANKS": "2",
                    "MASTER_ADDR": "n1", "MASTER_PORT": "1234"})
    assert given is not None and (given.master_addr, given.master_port, given.notes) == ("n1", 1234, ())



def test_a_batch_script_on_one_node_is_not_a_job() -> None:
    """sbatch --ntasks=4 runs the script once, with the allocation's SLURM_NTASKS: no srun step id, so
    there are no other tasks to wait for; under srun (step id set) the same variables are a job."""
    env = {"SLURM_PROCID": "0", "SLURM_NTASKS": "4", "SLURM_LOCALID": "0", "SLURM_NNODES": "1",
           "SLURM_JOB_NODELIST": "gpu-07", "SLURM_JOB_ID": "12"}
    assert detect(env) is None
    assert detect({**env, "SLURM_STEPID": "0"}) is not None

def test_slurm_defaults_from_the_node_list() -> None:
    env = {"SLURM_PROCID": "3", "SLURM_NTASKS": "4", "SLURM_LOCALID": "1", "SLURM_NNODES": "2", "SLURM_NODEID": "1",
           "SLURM_JOB_ID": "77", "SLURM_NTASKS_PER_NODE": "2(x2)", "SLURM_JOB_NODELIST": "gpu-[07-08]"}
    job = detect(env)
    assert job is not None
    assert (job.launcher, job.node, job.local_world_size, job.leader) == ("slurm", 1, 2, False)
    assert (job.master_addr, job.master_port, job.hosts_store) == ("gpu-07", 29500, False)
    assert job.node_names == ("gpu-07", "gpu-08")
    assert "SLURM_JOB_NODELIST" not in " ".join(job.notes) and any("first host" in n for n in job.notes)


def test_openmpi_and_pmi_need_master_addr() -> None:
    env = {"OMPI_COMM_WORLD_RANK": "2", "OMPI_COMM_WORLD_SIZE": "4", "OMPI_COMM_WORLD_LOCAL_RANK": "0",
           "OMPI_COMM_WORLD_LOCAL_SIZE": "2"}
    job = detect(env)
    assert job is not None and (job.launcher, job.node, job.nnodes) == ("openmpi", 1, 2)
    assert job.problem and "mpirun -x MASTER_ADDR" in job.problem
    pmi = detect({"PMI_RANK": "0", "PMI_SIZE": "2", "MPI_LOCALRANKID": "0", "MPI_LOCALNRANKS": "1",
                  "MASTER_ADDR": "n1", "MASTER_PORT": "1234"})
    assert pmi is not None and pmi.hosts_store and pmi.problem is None and pmi.coordinator


@pytest.mark.parametrize("text,want", [
    ("node-[01-03,07],gpu5", ["node-01", "node-02", "node-03", "node-07", "gpu5"]),
    ("a,b", ["a", "b"]),
    ("n[8-10]x", ["n8x", "n9x", "n10x"]),
    ("", []),
    ("bad[", ["bad["]),
])
def test_expand_hostlist(text: str, want: list[str]) -> None:
    assert expand_hostlist(text) == want


@pytest.mark.parametrize("n", [2, 3, 4, 5, 8])
def test_pairings_cover_every_pair_once_in_disjoint_rounds(n: int) -> None:
    from commdoctor.probes.jobstore import pairings

    rounds = pairings(n)
    seen = [p for r in rounds for p in r]
    assert sorted(seen) == sorted(combinations(range(n), 2))
    for r in rounds:
        members = [x for p in r for x in p]
        assert len(members) == len(set(members))


# -- the cross-node checks as functions of what the nodes published ----------------------------------

def node(i: int, host: str, addr: str, *, mtu: int = 1500, settings: dict[str, str] | None = None,
         torch: str = "2.13.0", probes: list[dict[str, Any]] | None = None, bw: dict[str, Any] | None = None,
         nccl_addr: str | None = None, clock: float | None = 0.0) -> dict[str, Any]:
    ch = {"gpu": False, "primary": "gloo",
          "gloo": {"interface": "eth0", "address": addr, "prefixlen": 24, "mtu": mtu, "rule": "hostname"},
          "nccl": {"interface": "lo" if nccl_addr == "127.0.0.1" else "eth0", "address": nccl_addr or addr,
                   "prefixlen": 8 if nccl_addr == "127.0.0.1" else 24, "mtu": mtu, "rule": "NCCL_SOCKET_IFNAME"}}
    info = {"node": i, "host": host, "versions": {"torch": torch, "cuda": None, "nccl": None, "driver": None},
            "settings": settings or {}, "choices": ch, "ports": {"master": 29500, "ephemeral": 40000 + i}}
    return {"node": i, "host": host, "info": info, "status": "reported", "stages": {}, "last": {"stage": "reported"},
            "mesh": {"probes": probes or [], "clock": None if clock is None else {"ok": True, "offset_s": clock,
                                                                                   "rtt_s": 0.001}},
            "bw": bw, "report": {}}


def probe(j: int, kind: str, addr: str, outcome: str = "open") -> dict[str, Any]:
    return {"label": f"{j}:{kind}", "address": addr, "port": 29500 if kind == "master" else 40000 + j,
            "outcome": outcome, "elapsed_s": 2.0 if outcome == "timeout" else 0.001}


def run_mn(nodes: list[dict[str, Any]], store_error: str | None = None) -> Report:
    from commdoctor.checks.multinode import MN_CHECKS
    from commdoctor.pipeline.run import Context, Facts, Options, run_one

    ctx = Context(options=Options(mode="multinode"), facts=Facts())
    job = {"master_addr": "10.0.0.1", "master_port": 29500}
    ctx.facts.provide("multinode", {"job": job, "roster": {"waited_s": 10.0}, "nodes": nodes,
                                    "store_error": store_error})
    rep = Report(tool_version="t", mode="run", created="now", host="a")
    for c in MN_CHECKS:
        r = run_one(c(), ctx)
        assert r.status is not Status.CRASHED, r.error
        rep.results.append(r)
    return rep


def by_code(rep: Report) -> dict[str, list[Finding]]:
    out: dict[str, list[Finding]] = {}
    for f in rep.findings():
        out.setdefault(f.code, []).append(f)
    return out


ADDR = {0: "10.0.0.1", 1: "10.0.0.2", 2: "10.0.0.3"}


def mesh(me: int, blocked: dict[int, str] | None = None) -> list[dict[str, Any]]:
    blocked = blocked or {}
    return [probe(j, k, ADDR[j], blocked.get(j, "open") if k == "ephemeral" else "open")
            for j in ADDR if j != me for k in ("master", "ephemeral")]


def test_healthy_nodes_give_no_finding() -> None:
    bw = {i: {"pairs": {str(j): {"gbps": 1.0} for j in ADDR if j != i}} for i in ADDR}
    rep = run_mn([node(i, h, ADDR[i], probes=mesh(i), bw=bw[i]) for i, h in enumerate("abc")])
    assert rep.findings() == []
    assert "3 of 3 nodes reported" in rep.results[0].summary


def test_versions_settings_mtu_and_subnet_name_the_odd_node() -> None:
    nodes = [node(0, "a", ADDR[0], settings={"NCCL_SOCKET_IFNAME": "eth0"}),
             node(1, "b", ADDR[1], settings={"NCCL_SOCKET_IFNAME": "lo"}, nccl_addr="127.0.0.1", torch="2.12.0"),
             node(2, "c", ADDR[2], settings={"NCCL_SOCKET_IFNAME": "eth0"}, mtu=9000)]
    c = by_code(run_mn(nodes))
    assert [f.hosts for f in c["MN010"]] == [("b",)] and c["MN010"][0].cause == "version_mismatch"
    assert c["MN020"][0].title == "NCCL_SOCKET_IFNAME differs across nodes: a, c: eth0; b: lo"
    (sub,) = c["MN031"]
    assert sub.hosts == ("b",) and sub.severity is Severity.ERROR and "outside 10.0.0.0/24 that a, c share" in sub.title
    (mtu,) = [f for f in c["MN032"] if f.title.startswith("MTU of the interfaces gloo")]
    assert mtu.hosts == ("c",) and "a, b: mtu 1500; c: mtu 9000" in mtu.title


def test_path_mtu_black_hole_follows_from_the_mtu_difference() -> None:
    nodes = [node(0, "a", ADDR[0], probes=mesh(0)), node(1, "b", ADDR[1], probes=mesh(1), mtu=1400)]
    nodes[0]["mesh"]["paths"] = {"1": {"mtu": 1500, "black_hole": True, "small": {"ok": True},
                                       "big": {"ok": False, "payload": 1472, "error": "no echo within 3 x 0.7 s"}}}
    nodes[1]["mesh"]["paths"] = {"0": {"mtu": 1400, "black_hole": False, "small": {"ok": True}, "big": {"ok": True}}}
    c = by_code(run_mn(nodes))
    (f,) = c["MN033"]
    assert f.hosts == ("a", "b") and f.consequence_of == "MN032"
    assert f.title == "full-size packets (1500 bytes, Don't Fragment) from a to b are lost while small ones arrive"
    assert "ping -M do -s 1472 10.0.0.2" in f.remedy.steps[1]  # type: ignore[union-attr]


def test_only_master_port_and_unreachable_are_told_apart() -> None:
    nodes = [node(0, "a", ADDR[0], probes=mesh(0, {2: "timeout"})),
             node(1, "b", ADDR[1], probes=mesh(1, {2: "timeout"})),
             node(2, "c", ADDR[2], probes=[probe(0, "master", ADDR[0]), probe(0, "ephemeral", ADDR[0]),
                                            probe(1, "master", ADDR[1], "timeout"),
                                            probe(1, "ephemeral", ADDR[1], "timeout")])]
    c = by_code(run_mn(nodes))
    (only,) = c["MN041"]
    assert only.hosts == ("c",) and "accepts the master port 29500 but not ephemeral port 40002 from a, b" in only.title
    (un,) = c["MN040"]
    assert un.hosts == ("c", "b") and un.title.startswith("c cannot reach b at 10.0.0.2")


def test_slow_node_and_slow_pair() -> None:
    def bw(pairs: dict[int, float]) -> dict[str, Any]:
        return {"pairs": {str(j): {"gbps": g} for j, g in pairs.items()}}

    fast, slow = 1.0, 0.005
    nodes = [node(0, "a", ADDR[0], bw=bw({1: fast, 2: slow})), node(1, "b", ADDR[1], bw=bw({0: fast, 2: slow})),
             node(2, "c", ADDR[2], bw=bw({0: slow, 1: slow}))]
    c = by_code(run_mn(nodes))
    assert [f.hosts for f in c["MN061"]] == [("c",)] and "MN060" not in c
    # Four nodes, one bad link: a pair, not a node.
    four = {0: "10.0.0.1", 1: "10.0.0.2", 2: "10.0.0.3", 3: "10.0.0.4"}
    g = {(a, b): (slow if (a, b) == (1, 2) else fast) for a, b in combinations(range(4), 2)}
    nodes4 = [node(i, "abcd"[i], four[i], bw=bw({j: g[(min(i, j), max(i, j))] for j in four if j != i}))
              for i in four]
    c4 = by_code(run_mn(nodes4))
    assert [f.hosts for f in c4["MN060"]] == [("b", "c")] and "MN061" not in c4


def test_missing_and_stopped_nodes_and_clock_skew() -> None:
    gone = {"node": 2, "host": "c", "info": None, "status": "never joined", "last": None, "stages": {}}
    stopped = node(1, "b", ADDR[1], clock=-3.5)
    stopped.update(status="stopped", last={"stage": "local checks started", "after_s": 4.2})
    c = by_code(run_mn([node(0, "a", ADDR[0], clock=None), stopped, gone]))
    assert c["MN001"][0].title == "c (node 2) never joined: nothing was seen of it within 10.0 s"
    assert c["MN002"][0].title == "b (node 1) stopped after 'local checks started' (4.2 s after it started): it never reported"
    assert c["MN050"][0].title == "b's clock is 3.500 s ahead of node 0's (a)"


def test_store_error_is_one_finding_and_the_rest_skip() -> None:
    rep = run_mn([], store_error="could not reach the job's store at 10.0.0.1:29500: timeout")
    assert [f.code for f in rep.findings()] == ["MN004"]
    assert all(r.status is Status.SKIPPED for r in rep.results[1:])


# -- merging and the report -----------------------------------------------------------------------------

def test_merge_tags_hosts_and_joins_identical_findings() -> None:
    from commdoctor.probes.multinode import merge_results

    f = Finding(code="ENV040", symbol="x", severity=Severity.WARNING, title="same")
    g = Finding(code="ENV030", symbol="y", severity=Severity.ERROR, title="only on b")
    local = Report(tool_version="t", mode="run", created="now", host="a",
                   results=[CheckResult("env.x", Stage.ENVIRONMENT, "x", Status.PASSED, findings=[f])])
    other = Report(tool_version="t", mode="run", created="now", host="b",
                   results=[CheckResult("env.x", Stage.ENVIRONMENT, "x", Status.FAILED, findings=[f, g])])
    merged = merge_results(local, [{"node": 0, "host": "a"}, {"node": 1, "host": "b", "report": other.to_dict()}], 0)
    (r,) = merged
    assert [(x.code, x.hosts) for x in r.findings] == [("ENV040", ("a", "b")), ("ENV030", ("b",))]
    assert r.status is Status.FAILED and local.results[0].findings[0].hosts == ()


def test_report_round_trips_nodes_and_validates() -> None:
    import jsonschema

    schema = json.loads((REPO / "commdoctor" / "schema" / "report.schema.json").read_text())
    rep = Report(tool_version="t", mode="run", created="now", host="a",
                 job={"launcher": "slurm", "rank": 0, "world_size": 2, "node": 0, "nnodes": 2, "expected_nodes": 2},
                 nodes=[{"node": 0, "host": "a", "status": "reported", "mtu": 1500, "stages": {"joined": 1.0}},
                        {"node": 1, "host": "b", "status": "never joined"}])
    d = rep.to_dict()
    jsonschema.validate(d, schema)
    assert Report.from_dict(json.loads(json.dumps(d))).to_dict() == d
    assert "nodes" not in Report(tool_version="t", mode="run", created="now", host="a").to_dict()


# -- real 2-node jobs on loopback (srun's and mpirun's variables on real processes) ---------------------

SCRUB = ("MASTER_", "RANK", "WORLD", "SLURM_", "TORCHELASTIC", "LOCAL_", "OMPI_", "PMI", "GROUP_")


def launcher_env(kind: str, rank: int, port: int) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(SCRUB)}
    env.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), PYTHONPATH=str(REPO))
    if kind == "srun":
        env.update(SLURM_PROCID=str(rank), SLURM_NTASKS="2", SLURM_LOCALID="0", SLURM_NNODES="2",
                   SLURM_NODEID=str(rank), SLURM_JOB_ID="5")
    else:
        env.update(OMPI_COMM_WORLD_RANK=str(rank), OMPI_COMM_WORLD_SIZE="2", OMPI_COMM_WORLD_LOCAL_RANK="0",
                   OMPI_COMM_WORLD_LOCAL_SIZE="1")
    return env


def free_port() -> int:
    return ports.free_port()


def start(kind: str, rank: int, port: int, cwd: Any, *extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "commdoctor", "run", "--json", "--select", "MN", *extra],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=launcher_env(kind, rank, port), cwd=str(cwd))


@pytest.mark.skipif(not have_torch(), reason="needs torch")
@pytest.mark.parametrize("kind", ["srun", "mpirun"])
def test_two_nodes_on_loopback_gather_at_node_0(kind: str, tmp_path: Any) -> None:
    port = free_port()
    procs = [start(kind, r, port, tmp_path, "--join-timeout", "20") for r in (0, 1)]
    outs = []
    try:
        for p in procs:
            outs.append(p.communicate(timeout=150))
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait(5)
    doc = json.loads(outs[0][0])
    assert doc["job"]["launcher"] == ("slurm" if kind == "srun" else "openmpi")
    assert [n["status"] for n in doc["nodes"]] == ["reported", "reported"], outs[0][1][-2000:]
    assert next(r for r in doc["results"] if r["check"] == "mn.reach")["status"] == "passed"
    assert "results went to node 0 (127.0.0.1)" in outs[1][1]
    one = json.loads(outs[1][0])
    assert one["job"]["node"] == 1 and "nodes" not in one


@pytest.mark.skipif(not have_torch(), reason="needs torch")
def test_node_killed_half_way_is_named_with_its_last_stage(tmp_path: Any) -> None:
    """Node 1 is killed once it has joined: node 0 names it, says what it last saw, and does not hang."""
    import select

    port = free_port()
    short = ("--join-timeout", "20", "--pg-timeout", "1", "--timeout", "1")
    p0 = start("srun", 0, port, tmp_path, *short)
    p1 = start("srun", 1, port, tmp_path, *short)
    try:
        assert p1.stderr is not None
        seen, end = "", time.monotonic() + 60
        while "nodes present" not in seen and time.monotonic() < end:  # it joined and read the roster
            r, _, _ = select.select([p1.stderr], [], [], 0.5)
            if r:
                line = p1.stderr.readline()
                if not line:
                    break
                seen += line
        assert "nodes present" in seen, seen
        p1.kill()
        t0 = time.monotonic()
        out, err = p0.communicate(timeout=120)
        waited = time.monotonic() - t0
    finally:
        for p in (p0, p1):
            if p.poll() is None:
                p.kill()
            p.wait(5)
    doc = json.loads(out)
    (f,) = [x for x in doc["findings"] if x["code"] == "MN002"]
    assert f["hosts"] and f["title"].startswith(f"{f['hosts'][0]} (node 1) stopped after '")
    assert "its heartbeat stopped for 10 s" in f["title"]
    assert doc["nodes"][1]["status"] == "stopped" and doc["nodes"][1]["last_stage"] in ("joined", "mesh done")
    assert waited < 60  # the heartbeat ends the wait long before the report deadline (pg + net timeouts + 30 s)


def test_support_report_has_a_nodes_section(tmp_path: Any) -> None:
    from tests.conftest import run_cli

    src = REPO / "fixtures" / "multinode" / "faults-3-nodes.json"
    p = run_cli("report", "--from", str(src), "-o", str(tmp_path / "r"))
    assert p.returncode in (0, 1), p.stderr
    md = (tmp_path / "r.md").read_text()
    section = md.split("## Nodes", 1)[1].split("\n## ", 1)[0]
    rows = [ln for ln in section.splitlines() if ln.startswith("| ") and "cdmf" in ln]
    assert rows == ["| 0 | cdmfa | reported | 10.203.6.1 (cdm0) | 1500 | 0 | 0 | reported |",
                    "| 1 | cdmfb | reported | 10.203.6.2 (cdm0) | 1400 | 1 | 0 | reported |",
                    "| 2 | cdmfc | reported | 10.203.6.3 (cdm0) | 1500 | 0 | 0 | reported |"]
    assert "MN041" in md


def _srun_two_per_node(ranks: Any, port: int, cwd: Any, join_timeout: float = 20) -> list[subprocess.Popen[str]]:
    """`commdoctor run --json --select MN` as the given ranks of srun with 2 nodes x 2 tasks."""
    procs = []
    for rank in ranks:
        env = launcher_env("srun", rank, port)
        env.update(SLURM_NTASKS="4", SLURM_LOCALID=str(rank % 2), SLURM_NODEID=str(rank // 2),
                   SLURM_NTASKS_PER_NODE="2(x2)")
        procs.append(subprocess.Popen([sys.executable, "-m", "commdoctor", "run", "--json", "--select", "MN",
                                       "--join-timeout", f"{join_timeout:g}"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                      text=True, env=env, cwd=str(cwd)))
    return procs


@pytest.mark.skipif(not have_torch(), reason="needs torch")
def test_local_rank_that_never_checks_in_is_named(tmp_path: Any) -> None:
    """srun --ntasks-per-node 2 on 2 nodes, rank 3 (local rank 1 of node 1) never started: local rank 0 of each node
    works, local rank 1 of node 0 checks in and leaves, and MN003 names rank 3 and its host."""
    port = free_port()
    # Node 0 waits the whole join timeout for rank 3; the three that come check in within seconds when the machine is
    # idle, and took more than 10 s once under a full parallel suite with other work beside it.
    procs = _srun_two_per_node(range(3), port, tmp_path, join_timeout=15)
    outs = []
    try:
        for p in procs:
            outs.append((p.communicate(timeout=150), p.returncode))
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
            p.wait(5)
    doc = json.loads(outs[0][0][0])
    (f,) = [x for x in doc["findings"] if x["code"] == "MN003"]
    assert f["ranks"] == [3] and f["title"].startswith("local rank(s) 3 on ") and f["title"].endswith("(node 1) never checked in")
    assert [n["node"] for n in doc["nodes"]] == [0, 1] and all(n["status"] == "reported" for n in doc["nodes"])
    (out, err), rc = outs[1]
    assert rc == 0 and out == ""
    assert "rank 1 (local rank 1 on node 0): local rank 0 checks this node" in err
    (out, err), rc = outs[2]
    assert rc == 0 and "results went to node 0" in err


def test_a_loopback_address_that_nobody_reaches_is_an_interface_problem() -> None:
    nodes = [node(0, "a", ADDR[0], probes=[probe(1, "master", "127.0.0.1", "refused"),
                                            probe(1, "ephemeral", "127.0.0.1", "refused")]),
             node(1, "b", "127.0.0.1", probes=mesh(1))]
    (f,) = by_code(run_mn(nodes))["MN040"]
    assert f.cause == "wrong_interface" and f.title.startswith("a cannot reach b at 127.0.0.1: ephemeral port")
    assert "loopback address" in f.detail


@pytest.mark.parametrize("name", ["healthy-3-nodes.json", "faults-3-nodes.json"])
def test_real_multinode_reports_follow_the_schema(name: str) -> None:
    import jsonschema

    schema = json.loads((REPO / "commdoctor" / "schema" / "report.schema.json").read_text())
    doc = json.loads((REPO / "fixtures" / "multinode" / name).read_text())
    jsonschema.validate(doc, schema)
    assert [n["status"] for n in doc["nodes"]] == ["reported"] * 3
    assert doc["job"]["launcher"] == "torchrun" and doc["job"]["expected_nodes"] == 3


def test_this_node_only_and_a_job_without_master_addr_are_checked_alone() -> None:
    from tests.conftest import run_json

    base = {k: v for k, v in os.environ.items() if not k.startswith(SCRUB)}
    mpi = dict(base, OMPI_COMM_WORLD_RANK="1", OMPI_COMM_WORLD_SIZE="2", OMPI_COMM_WORLD_LOCAL_RANK="0",
               OMPI_COMM_WORLD_LOCAL_SIZE="1")
    doc, p = run_json("run", "--select", "ENV02", env=mpi)
    assert "job" not in doc and "nodes" not in doc
    assert "node 1 of a 2-node openmpi job, checked alone: set MASTER_ADDR" in p.stderr
    doc, p = run_json("run", "--select", "ENV02", "--this-node-only",
                      env=dict(mpi, MASTER_ADDR="127.0.0.1", MASTER_PORT="1"))
    assert "job" not in doc and "checked alone" not in p.stderr and p.returncode == 0


_PAIR_BW = r"""
import json, sys, threading
from datetime import timedelta
from types import SimpleNamespace
import torch.distributed as dist
from commdoctor.probes.jobstore import pair_bandwidth
port = int(sys.argv[1])
master = dist.TCPStore("127.0.0.1", port, is_master=True, wait_for_workers=False, timeout=timedelta(seconds=30))
out = {}
def member(i):
    store = master if i == 0 else dist.TCPStore("127.0.0.1", port, is_master=False, timeout=timedelta(seconds=30))
    out[i] = pair_bandwidth(SimpleNamespace(store=dist.PrefixStore("t/", store)), i, 3, nbytes=1 << 20, iters=4,
                            timeout=30.0)
ts = [threading.Thread(target=member, args=(i,)) for i in range(3)]
[t.start() for t in ts]
[t.join(60) for t in ts]
print(json.dumps(out))
"""


@pytest.mark.skipif(not have_torch(), reason="needs torch")
def test_pair_bandwidth_times_every_pair_in_two_passes_over_a_real_gloo_group() -> None:
    """Three members of a real gloo group on loopback: every member has a figure for both partners, measured
    over two passes of the schedule (two exchanges each: as long as one pass of four), and no error."""
    p = subprocess.run([sys.executable, "-c", _PAIR_BW, str(free_port())], capture_output=True, text=True, timeout=120,
                       env={**os.environ, "PYTHONPATH": str(REPO)})
    assert p.returncode == 0, p.stderr[-3000:]
    out = json.loads(p.stdout.strip().splitlines()[-1])
    assert sorted(out) == ["0", "1", "2"]
    for me, res in out.items():
        assert res["error"] is None and res["passes"] == 2 and res["iters"] == 4, res
        peers = sorted(res["pairs"])
        assert peers == sorted({"0", "1", "2"} - {me}), res
        assert all(r.get("gbps", 0) > 0 and "error" not in r for r in res["pairs"].values()), res


@pytest.mark.skipif(not have_torch(), reason="needs torch")
def test_a_node_seen_joining_is_waited_for_past_the_join_timeout() -> None:
    """Node 0 with a 1 s --join-timeout, on a real TCPStore: node 1 writes its ``joined`` stage at once and its
    info 2.5 s later (a slow start on a loaded machine); node 2 never writes anything. Node 1 is in the roster,
    node 2 is missing, and the wait ended with node 1's info, not at the grace's end."""
    import threading

    from commdoctor.core.context import Options
    from commdoctor.core.jobctx import Job
    from commdoctor.probes.jobstore import JobStore
    from commdoctor.probes.multinode import JOIN_GRACE_S, NodeRun

    port = free_port()
    common = dict(launcher="slurm", world_size=3, local_world_size=1, local_rank=0, nnodes=3, master_addr="127.0.0.1",
                  master_port=port, agent_store=False, run_id="grace", expected_nodes=3)
    node0 = NodeRun(Job(rank=0, node=0, **common), Options(mode="multinode"), join_timeout=1.0)
    assert node0.open_store()
    node0.store.put(node0.key(0, "info"), {"node": 0})
    client = JobStore(Job(rank=1, node=1, **common), connect_timeout=10.0)
    stop = threading.Event()

    def node1() -> None:
        client.put("node/1/stage/joined", {"stage": "joined"})
        beat, t_info = 0, time.monotonic() + 2.5
        while not stop.wait(0.3):
            beat += 1
            client.put("node/1/alive", {"beat": beat})
            if time.monotonic() >= t_info and client.peek("node/1/info") is None:
                client.put("node/1/info", {"node": 1})

    t = threading.Thread(target=node1, daemon=True)
    t.start()
    t0 = time.monotonic()
    try:
        node0.wait_roster()
    finally:
        stop.set()
        t.join(5)
    waited = time.monotonic() - t0
    assert node0.roster is not None
    assert node0.roster["members"] == [0, 1] and node0.roster["missing"] == [2]
    assert 2.0 < waited < 1.0 + JOIN_GRACE_S - 1.0, waited
