"""One deadline for a multi-node run: node 0's report comes before ``--deadline``, whatever stalls.

Real processes with Slurm's variables on loopback (rank 0 hosts the job's store), as in
tests/test_multinode_units.py. Every wait of the run (connecting, the join, the mesh,
the bandwidth plan, the local checks' own limits, the gather) is derived from what is
left of the one budget, so a join timeout or check limits longer than the deadline
are cut to it, and the report says so. The two-host firewall case is in
tests/integration/test_multinode_deadline.py (network namespaces).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from typing import Any

import pytest

from commdoctor.probes.multinode import RunBudget, default_deadline
from tests.conftest import REPO, have_torch
from tests import ports

SCRUB = ("MASTER_", "RANK", "WORLD", "SLURM_", "TORCHELASTIC", "LOCAL_", "OMPI_", "PMI", "GROUP_")


def _free_port() -> int:
    return ports.free_port()


def _start(rank: int, port: int, cwd: Any, *extra: str) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(SCRUB)}
    env.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), PYTHONPATH=str(REPO), SLURM_PROCID=str(rank),
               SLURM_NTASKS="2", SLURM_LOCALID="0", SLURM_NNODES="2", SLURM_NODEID=str(rank), SLURM_JOB_ID="7")
    return subprocess.Popen([sys.executable, "-m", "commdoctor", "run", "--json", *extra], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, cwd=str(cwd))


def _finish(procs: list[subprocess.Popen[str]], timeout: float) -> list[tuple[str, str, float]]:
    out = []
    t0 = time.monotonic()
    try:
        for p in procs:
            so, se = p.communicate(timeout=timeout)
            out.append((so, se, time.monotonic() - t0))
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
            p.wait(5)
    return out


def test_budget_keeps_time_for_the_later_steps() -> None:
    b = RunBudget(100.0, t0=time.monotonic())
    now = time.monotonic()
    assert b.until(keep=10.0) == pytest.approx(now + 90.0, abs=0.5)  # the wait ends with 10 s left
    assert b.until(keep=10.0, cap=2.0) == pytest.approx(now + 2.0, abs=0.5)  # or at its own limit
    short = RunBudget(30.0, t0=time.monotonic())  # a short budget keeps each step proportionally less
    assert short.until(keep=10.0) == pytest.approx(time.monotonic() + 25.0, abs=0.5)
    spent = RunBudget(5.0, t0=time.monotonic() - 60.0)
    assert spent.until(keep=10.0) >= time.monotonic() + 0.4  # spent: one short bounded wait, never the past
    assert default_deadline(30.0, 60.0, 15.0) == 195.0


@pytest.mark.skipif(not have_torch(), reason="needs torch")
def test_a_node_that_never_comes_is_named_before_the_deadline(tmp_path: Any) -> None:
    """--join-timeout 90 but --deadline 30: node 0 stops waiting for node 1 in time to report by 30 s."""
    port = _free_port()
    t0 = time.monotonic()
    ((out, err, _),) = _finish([_start(0, port, tmp_path, "--join-timeout", "90", "--deadline", "30",
                                       "--pg-timeout", "30")], timeout=120)
    wall = time.monotonic() - t0
    doc = json.loads(out)
    (f,) = [x for x in doc["findings"] if x["code"] == "MN001"]
    assert f["title"].startswith("node-01 never joined: nothing was seen of it within"), f["title"]
    assert [n["status"] for n in doc["nodes"]] == ["reported", "never joined"]
    # the local checks were fitted to what was left, and the report says so
    notes = " ".join(doc["job"]["notes"])
    assert "the run's deadline (30 s) left" in notes and "--pg-timeout 30" in notes, notes
    assert wall < 30 + 3, f"node 0's report came after {wall:.1f} s (deadline 30 s, from its start)"  # exit, flush


@pytest.mark.skipif(not have_torch(), reason="needs torch")
def test_a_node_that_stops_answering_is_reported_as_stopped_in_time(tmp_path: Any) -> None:
    """Node 1 joins, then is frozen (SIGSTOP: no heartbeat, no report): node 0 names it within its deadline."""
    import select

    port = _free_port()
    args = ("--join-timeout", "20", "--deadline", "45", "--select", "MN")
    p0, p1 = _start(0, port, tmp_path, *args), _start(1, port, tmp_path, *args)
    t0 = time.monotonic()
    try:
        assert p1.stderr is not None
        seen, end = "", time.monotonic() + 60
        while "nodes present" not in seen and time.monotonic() < end:
            r, _, _ = select.select([p1.stderr], [], [], 0.5)
            if r:
                line = p1.stderr.readline()
                if not line:
                    break
                seen += line
        assert "nodes present" in seen, seen
        os.kill(p1.pid, signal.SIGSTOP)
        ((out, err, _),) = _finish([p0], timeout=120)
        wall = time.monotonic() - t0
    finally:
        if p1.poll() is None:
            os.kill(p1.pid, signal.SIGCONT)
            p1.kill()
        p1.wait(5)
    doc = json.loads(out)
    assert doc["nodes"][1]["status"] == "stopped", doc["nodes"]
    (f,) = [x for x in doc["findings"] if x["code"] == "MN002"]
    assert "(node 1) stopped after '" in f["title"]
    assert wall < 45 + 3, f"node 0's report came after {wall:.1f} s"
