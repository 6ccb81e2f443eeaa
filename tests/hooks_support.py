"""Run real multi-process gloo jobs of tests/hooks_worker.py and collect each rank's result."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
WORKER = REPO / "tests" / "hooks_worker.py"


def free_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def site(name: str) -> str:
    """``tests/hooks_worker.py:LINE`` of the line tagged ``# SITE:name``."""
    for i, line in enumerate(WORKER.read_text().splitlines(), 1):
        if line.rstrip().endswith(f"# SITE:{name}"):
            return f"tests/hooks_worker.py:{i}"
    raise KeyError(name)


def start_job(scenario: str, world: int, records: str, env: dict[str, str] | None = None) -> list[subprocess.Popen]:
    """Start the ranks and return at once (for jobs the test ends itself)."""
    port = free_port()
    procs = []
    for r in range(world):
        e = dict(os.environ)
        e.update({"RANK": str(r), "WORLD_SIZE": str(world), "LOCAL_RANK": str(r), "MASTER_ADDR": "127.0.0.1",
                  "MASTER_PORT": str(port), "PYTHONPATH": str(REPO), "COMMDOCTOR_HOOKS_DIR": records,
                  "OMP_NUM_THREADS": "1", "GLOO_TIMEOUT": "600"})
        e.update(env or {})
        procs.append(subprocess.Popen([sys.executable, str(WORKER), scenario], cwd=str(REPO), env=e,
                                      stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True))
    return procs


def stop_job(procs: list[subprocess.Popen]) -> None:
    for p in procs:
        if p.poll() is None:
            p.kill()
    for p in procs:
        p.communicate(timeout=30)


def run_job(scenario: str, world: int = 2, env: dict[str, str] | None = None, timeout: float = 150,
            records: str | None = None) -> list[dict[str, Any]]:
    """Start ``world`` ranks, wait for all (killing them at ``timeout``), return each rank's RESULT."""
    port = free_port()
    rec = records or tempfile.mkdtemp(prefix="cd-hooks-")
    procs = []
    for r in range(world):
        e = dict(os.environ)
        e.update({"RANK": str(r), "WORLD_SIZE": str(world), "LOCAL_RANK": str(r), "MASTER_ADDR": "127.0.0.1",
                  "MASTER_PORT": str(port), "PYTHONPATH": str(REPO), "COMMDOCTOR_HOOKS_DIR": rec,
                  "OMP_NUM_THREADS": "1", "COMMDOCTOR_HOOKS_SETUP_TIMEOUT": "60"})
        e.update(env or {})
        procs.append(subprocess.Popen([sys.executable, str(WORKER), scenario], cwd=str(REPO), env=e,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    deadline = time.monotonic() + timeout
    out = []
    for r, p in enumerate(procs):
        try:
            so, se = p.communicate(timeout=max(1.0, deadline - time.monotonic()))
            killed = False
        except subprocess.TimeoutExpired:
            for q in procs:
                q.kill()
            so, se = p.communicate()
            killed = True
        res: dict[str, Any] = {"rank": r, "missing": True}
        for line in so.splitlines():
            if line.startswith("RESULT "):
                res = json.loads(line[7:])
        res.update(returncode=p.returncode, stderr=se, stdout=so, killed=killed, records=rec)
        out.append(res)
    return out


def explain(results: list[dict[str, Any]]) -> str:
    """Everything about a job, for assertion messages."""
    parts = []
    for r in results:
        parts.append(f"--- rank {r['rank']} rc={r.get('returncode')} killed={r.get('killed')} error={r.get('error')}\n"
                     f"{r.get('message', '')}\n{r.get('traceback', '')}\nstderr:\n{r.get('stderr', '')[-2500:]}")
    return "\n".join(parts)


def last_enter(r: dict[str, Any]) -> float | None:
    """When this rank entered its last collective, from its own progress records."""
    from commdoctor import records

    path = records.record_path(r["records"], r["rank"])
    if not os.path.exists(path):
        return None
    t = None
    for d in records.iter_lines(path):
        if d and d.get("kind") == "enter":
            t = d["time"]
    return t


def detection_delay(results: list[dict[str, Any]]) -> float:
    """Seconds from the last rank reaching the call where ranks differ to the last rank raising.

    A rank reaches it when it enters it (its records say when); a rank that
    never enters one (it left) reaches it at its last mark.
    """
    reached = []
    for r in results:
        t = last_enter(r) if r.get("error") else None
        reached.append(t if t is not None else max(r.get("marks") or [0.0]))
    return max(r["t_raise"] for r in results if r.get("t_raise")) - max(reached)


def sites_in(message: str) -> set[str]:
    return set(re.findall(r"tests/hooks_worker\.py:\d+", message))
