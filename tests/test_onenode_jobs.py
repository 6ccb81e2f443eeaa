"""``commdoctor run`` under a launcher on ONE node with several processes: one report, from local rank 0.

Real jobs on 127.0.0.1: torchrun ``--standalone --nproc-per-node 2`` (its agent's store, gloo on loopback),
and mpirun's / srun's variables set on real processes (neither launcher is installed here; the processes
read them exactly as they would under it). A local rank that never checks in is a real process that
exits before running commdoctor (a shell wrapper under ``torchrun --no-python``) or one never started.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO, findings, lines_except_warnings, needs_torch, result, run_json
from tests import ports

pytestmark = needs_torch

SCRUB = ("MASTER_", "RANK", "WORLD", "SLURM_", "TORCHELASTIC", "LOCAL_", "OMPI_", "PMI", "MPI_", "GROUP_")


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(SCRUB)}
    env.update(PYTHONPATH=str(REPO), OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1", **extra)
    return env


def _port() -> int:
    return ports.free_port()


def _standalone(tmp_path: Path, *args: str, timeout: float = 240,
                env: dict[str, str] | None = None) -> tuple[subprocess.CompletedProcess[str], dict[int, tuple[str, str]]]:
    """torchrun --standalone --nproc-per-node 2 ARGS, each local rank's stdout and stderr in its own file."""
    logs = tmp_path / "ranks"
    argv = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
            "--log-dir", str(logs), "--redirects", "3", *args]
    p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=env or _env(), cwd=str(tmp_path))
    ranks: dict[int, tuple[str, str]] = {}
    for out in logs.rglob("stdout.log"):
        err = out.with_name("stderr.log")
        ranks[int(out.parent.name)] = (out.read_text(), err.read_text() if err.exists() else "")
    return p, ranks


# Every interpreter of the job, at its exit: whether it had imported torch. A rank forked from one that had
# (commdoctor.probes.pg_fork) ends with os._exit, as a forked child does, and is not an interpreter of its own.
_RECORDER = """\
import atexit, json, os, sys
def _record():
    with open(os.environ["CD_TEST_PROCS"], "a") as f:
        argv = [a for a in sys.orig_argv[1:5] if a != "-u"]  # torchrun starts its workers unbuffered
        f.write(json.dumps({"argv": argv, "torch": "torch" in sys.modules}) + "\\n")
atexit.register(_record)
"""


def test_torchrun_standalone_gives_one_report_from_local_rank_0(tmp_path: Path) -> None:
    import jsonschema

    from tests.conftest import torch_build

    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(_RECORDER)
    procs = tmp_path / "procs.jsonl"
    env = _env(CD_TEST_PROCS=str(procs))
    env["PYTHONPATH"] = f"{site}{os.pathsep}{env['PYTHONPATH']}"
    p, ranks = _standalone(tmp_path, "-m", "commdoctor", "run", "--json", env=env)
    assert sorted(ranks) == [0, 1], p.stderr[-2000:]
    (out0, err0), (out1, err1) = ranks[0], ranks[1]
    # Local rank 1: nothing on stdout, one line on stderr (besides warnings other libraries print on their
    # own, such as torch's "Failed to initialize NumPy" where numpy is not installed).
    assert out1 == ""
    assert lines_except_warnings(err1) == [
        "commdoctor: rank 1 (local rank 1 of 2): checked in; local rank 0 checks this host and prints the report"]
    # Local rank 0: the whole report, knowing it is one process of a 2-process torchrun job.
    doc = json.loads(out0)
    jsonschema.validate(doc, json.loads((REPO / "commdoctor" / "schema" / "report.schema.json").read_text()))
    job = doc["job"]
    assert (job["launcher"], job["rank"], job["world_size"], job["local_world_size"]) == ("torchrun", 0, 2, 2)
    assert (job["nnodes"], job["expected_nodes"], job["agent_store"], job["store_error"]) == (1, 1, True, None)
    assert job["checkins"] == {"local_world_size": 2, "checked_in": {"0": [1]}, "missing": {}}
    assert "nodes" not in doc  # one node: no table of nodes
    checks = {r["check"]: r for r in doc["results"]}
    assert checks["pg.gloo"]["status"] == "passed"  # the full local process-group test ran, once
    assert "rank 0 of 2, local rank 0 of 2" in checks["env.launcher"]["summary"]
    gather = checks["mn.gather"]
    assert gather["status"] == "passed" and gather["title"] == "Every process of the job checked in"
    assert gather["summary"] == f"2 of 2 processes on {socket.gethostname()} checked in (torchrun job on one node)"
    # Nothing cross-node was run with nobody to compare with.
    assert not [c for c in checks if c.startswith("mn.") and c != "mn.gather"]
    assert not [f for f in doc["findings"] if f["code"].startswith("MN")]
    assert "Traceback" not in err0 and p.returncode == 0, err0[-2000:]
    # torch is imported by torchrun's agent and the two `commdoctor run` processes (for the job's store), and
    # by nobody else: on a CPU build local rank 0 forks a server before its first thread, and that server forks
    # the local test's two ranks (commdoctor.probes.pg_init.start_rank_server).
    with_torch = sorted(" ".join(r["argv"][:2]) for r in map(json.loads, procs.read_text().splitlines()) if r["torch"])
    if not torch_build().get("gpu_runtime"):
        assert with_torch == ["-m commdoctor", "-m commdoctor", "-m torch.distributed.run"], with_torch


def test_torchrun_local_rank_that_leaves_before_checking_in_is_named(tmp_path: Path) -> None:
    """Local rank 1 exits 0 without running commdoctor: rank 0 waits --join-timeout and names it (MN003)."""
    script = (f'if [ "$LOCAL_RANK" = 1 ]; then echo "rank 1 left"; exit 0; fi; '
              f'exec {sys.executable} -m commdoctor run --json --select MN --join-timeout 3')
    p, ranks = _standalone(tmp_path, "--no-python", "sh", "-c", script)
    assert sorted(ranks) == [0, 1], p.stderr[-2000:]
    assert ranks[1][0].strip() == "rank 1 left"
    doc = json.loads(ranks[0][0])
    (f,) = findings(doc, "MN003")
    assert f["ranks"] == [1] and f["hosts"] == [socket.gethostname()]
    assert f["title"] == f"local rank(s) 1 on {socket.gethostname()} never checked in"
    assert f["severity"] == "warning" and f["cause"] == "peer_process_died"
    assert doc["job"]["checkins"]["missing"] == {"0": [1]}
    assert result(doc, "mn.gather")["summary"].startswith("1 of 2 processes on ")


def _spawn(env: dict[str, str], *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "commdoctor", "run", "--json", "--select", "MN", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=str(REPO))


def _finish(procs: list[subprocess.Popen[str]], timeout: float = 150) -> list[tuple[str, str, int]]:
    outs = []
    try:
        for p in procs:
            out, err = p.communicate(timeout=timeout)
            outs.append((out, err, p.returncode))
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
            p.wait(5)
    return outs


def _mpi(rank: int, port: int) -> dict[str, str]:
    # mpirun -np 2 on one host; no MASTER_ADDR (one node: 127.0.0.1); MASTER_PORT free, not 29500, on a shared box
    return _env(OMPI_COMM_WORLD_RANK=str(rank), OMPI_COMM_WORLD_SIZE="2", OMPI_COMM_WORLD_LOCAL_RANK=str(rank),
                OMPI_COMM_WORLD_LOCAL_SIZE="2", MASTER_PORT=str(port))


def test_mpirun_on_one_host_needs_no_master_addr() -> None:
    port = _port()
    (out0, err0, rc0), (out1, err1, rc1) = _finish([_spawn(_mpi(0, port), "--join-timeout", "20"),
                                                    _spawn(_mpi(1, port), "--join-timeout", "20")])
    doc = json.loads(out0)
    assert (doc["job"]["launcher"], doc["job"]["master_addr"], doc["job"]["master_port"]) == ("openmpi", "127.0.0.1", port)
    assert "MASTER_ADDR unset: 127.0.0.1 (one node)" in doc["job"]["notes"]
    assert result(doc, "mn.gather")["status"] == "passed" and findings(doc) == [], err0[-2000:]
    assert rc0 == 0 and rc1 == 0 and out1 == ""
    assert "rank 1 (local rank 1 of 2): checked in; local rank 0 checks this host" in err1
    assert "checked alone" not in err0 + err1


def test_srun_task_never_started_is_named_within_the_join_timeout() -> None:
    """srun -N1 -n3 where task 2 never starts: local rank 0 names it after --join-timeout, and does not hang."""
    port = _port()
    env = _env(SLURM_PROCID="0", SLURM_NTASKS="3", SLURM_LOCALID="0", SLURM_NNODES="1", SLURM_NODEID="0",
               SLURM_JOB_ID="9", SLURM_STEP_ID="0", MASTER_PORT=str(port))
    lead = _spawn(env, "--join-timeout", "4")
    one = _spawn({**env, "SLURM_PROCID": "1", "SLURM_LOCALID": "1"}, "--join-timeout", "4")
    (out0, err0, rc0), (out1, err1, rc1) = _finish([lead, one])
    doc = json.loads(out0)
    (f,) = findings(doc, "MN003")
    assert f["ranks"] == [2] and "local rank(s) 2 on " in f["title"] and "(node" not in f["title"]
    assert doc["job"]["checkins"]["checked_in"] == {"0": [1]}
    assert rc1 == 0 and out1 == "" and "rank 1 (local rank 1 of 3): checked in" in err1


def test_this_node_only_and_plain_rank_variables_keep_the_per_process_report() -> None:
    # A local rank > 0 of a one-node mpirun job with --this-node-only: its own full report, no store.
    doc, p = run_json("run", "--select", "ENV02", "--this-node-only", env=_mpi(1, 1))
    assert "job" not in doc and p.returncode == 0 and "checked in" not in p.stderr
    assert [r["check"] for r in doc["results"]] and not [r for r in doc["results"] if r["check"].startswith("mn.")]
    # RANK/WORLD_SIZE/MASTER_* without a launcher: this host checked against a job, as before.
    doc, p = run_json("run", "--select", "ENV02",
                      env=_env(RANK="1", WORLD_SIZE="2", LOCAL_WORLD_SIZE="2", MASTER_ADDR="127.0.0.1",
                               MASTER_PORT="1"))
    assert "job" not in doc and "checked" not in p.stderr


def test_one_process_under_torchrun_is_untouched(tmp_path: Path) -> None:
    logs = tmp_path / "ranks"
    argv = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "1",
            "-m", "commdoctor", "run", "--json", "--select", "ENV02"]
    p = subprocess.run(argv, capture_output=True, text=True, timeout=180, env=_env(), cwd=str(tmp_path))
    doc: dict[str, Any] = json.loads(p.stdout)
    assert "job" not in doc and p.returncode == 0 and "local rank 0" not in p.stderr
