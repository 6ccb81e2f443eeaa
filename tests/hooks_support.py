"""Run real multi-process jobs of tests/hooks_worker.py (gloo, or the NCCL-like fakenccl) and collect each rank's result."""

from __future__ import annotations

import json
import os
import re
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest

from tests import zygote
from tests import ports

REPO = Path(__file__).resolve().parent.parent
WORKER = REPO / "tests" / "hooks_worker.py"


def free_port() -> int:
    return ports.free_port()


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
        procs.append(zygote.spawn([str(WORKER), scenario], cwd=str(REPO), env=e, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.PIPE))
    return procs


def stop_job(procs: list[subprocess.Popen]) -> None:
    for p in procs:
        if p.poll() is None:
            p.kill()
    for p in procs:
        p.communicate(timeout=30)


def run_job(scenario: str, world: int = 2, env: dict[str, str] | None = None, timeout: float = 150,
            records: str | None = None, backend: str = "gloo") -> list[dict[str, Any]]:
    """Start ``world`` ranks, wait for all (killing them at ``timeout``), return each rank's RESULT."""
    return _run(scenario, world, env, timeout, records, backend)


def run_many(scenarios: list[str], world: int = 2, env: dict[str, str] | None = None, timeout: float = 240,
             records: str | None = None, backend: str = "gloo") -> dict[str, list[dict[str, Any]]]:
    """Several scenarios in one job (one process group each): scenario -> each rank's RESULT.

    A scenario whose RESULT a rank never printed (the job died or hung there) gets that rank's
    stderr and return code, so the test says where the job stopped."""
    per_rank = _run(",".join(scenarios), world, env, timeout, records, backend, many=True)
    out: dict[str, list[dict[str, Any]]] = {}
    for spec in scenarios:
        rows = []
        for r, results in enumerate(per_rank):
            got = [x for x in results if x.get("scenario") == spec]
            row = dict(got[0]) if got else {"rank": r, "missing": True, "error": "no RESULT", "records": "",
                                            "returncode": results[-1].get("returncode"),
                                            "killed": results[-1].get("killed")}
            row["stderr"] = _part(results[-1].get("stderr", ""), spec)
            rows.append(row)
        out[spec] = rows
    return out


def _part(stderr: str, spec: str) -> str:
    """What the job wrote on stderr while running scenario ``spec`` (the worker marks each start)."""
    head = f"=== scenario {spec}\n"
    if head not in stderr:
        return stderr
    return stderr.split(head, 1)[1].split("=== scenario ", 1)[0]


def _run(scenario: str, world: int, env: dict[str, str] | None, timeout: float, records: str | None,
         backend: str, many: bool = False) -> Any:
    """run_job for one scenario ([rank results]) or, ``many``, several ([[rank 0's results], ...])."""
    port = free_port()
    rec = records or tempfile.mkdtemp(prefix="cd-hooks-")
    procs = []
    for r in range(world):
        e = dict(os.environ)
        e.update({"RANK": str(r), "WORLD_SIZE": str(world), "LOCAL_RANK": str(r), "MASTER_ADDR": "127.0.0.1",
                  "MASTER_PORT": str(port), "PYTHONPATH": str(REPO), "COMMDOCTOR_HOOKS_DIR": rec,
                  "OMP_NUM_THREADS": "1", "COMMDOCTOR_HOOKS_SETUP_TIMEOUT": "60", "HOOKS_BACKEND": backend,
                  "HOOKS_MANY": "1" if many else ""})
        e.update(env or {})
        procs.append(zygote.spawn([str(WORKER), scenario], cwd=str(REPO), env=e, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE))
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
        got = [json.loads(line[7:]) for line in so.splitlines() if line.startswith("RESULT ")]
        # A rank that printed no RESULT (it died, or never got as far) says so in "error", so that the
        # test's assertion shows explain() instead of failing on a missing key.
        got = got or [{"rank": r, "missing": True, "error": "no RESULT"}]
        for res in got:
            res.update(returncode=p.returncode, stderr=se, stdout=so, killed=killed)
            res.setdefault("records", rec)
        out.append(got)
    if many:
        return out
    return [rows[-1] for rows in out]


def explain(results: list[dict[str, Any]]) -> str:
    """Everything about a job, for assertion messages."""
    parts = []
    for r in results:
        parts.append(f"--- rank {r['rank']} rc={r.get('returncode')} killed={r.get('killed')} error={r.get('error')}\n"
                     f"{r.get('message', '')}\n{r.get('traceback', '')}\nstderr:\n{r.get('stderr', '')[-2500:]}")
    return "\n".join(parts)


def last_enter(r: dict[str, Any]) -> float | None:
    """When this rank entered its last collective, from its own progress records."""
    from commdoctor.core import records

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


#: Backends the hooks' tests run on: real gloo, and tests/fakenccl.py, which behaves as NCCL does on a
#: GPU (asynchronous work; an expired timed wait takes the process down).
BACKENDS = ("gloo", "fakenccl")

#: The scenarios of the one 2-rank fakenccl job that the hooks' tests share (each on a group of its
#: own; tests/hooks_worker.py run_many). ``fake_check@plain`` takes its process down on purpose: last.
FAKE_SCENARIOS = ["ok", "ddp_train", "ddp_train@plain", "ddp_opmismatch", "op", "shape", "dtype", "redop", "root",
                  "barrier", "order", "ddp", "ddp_model", "later", "skip", "order_same", "skip_last",
                  "redop@report", "redop@record", "channel_lost", "late_mismatch@raise:0.3", "fake_check@plain"]
_fake: dict[str, list[dict[str, Any]]] = {}


def fake_job() -> dict[str, list[dict[str, Any]]]:
    """The shared fakenccl job's results (run once per test session, on first use)."""
    if not _fake:
        # A peer may stall for over a second on this loaded 2-core box; the gate's bound (1 s by
        # default) is raised so that every call is still checked before it reaches the backend.
        _fake.update(run_many(FAKE_SCENARIOS, 2, backend="fakenccl", records=tempfile.mkdtemp(prefix="cd-fake-"),
                              env={"COMMDOCTOR_HOOKS_ASYNC_GATE": "10"}))
    return _fake


#: The scenarios of the one 2-rank gloo job that the hooks' tests share, as on fakenccl: each scenario
#: started its own job before, and every rank's torch import (about 2.5 s of CPU) made them the
#: slowest part of the hooks' tests. Scenarios that need a job of their own (another world size, their
#: own environment, a second init_process_group) are not listed.
GLOO_SCENARIOS = ["op", "shape", "dtype", "redop", "root", "barrier", "order", "ddp", "ddp_model", "later", "skip",
                  "order_same", "skip_last", "redop@report", "redop@record", "channel_lost"]
_gloo: dict[str, list[dict[str, Any]]] = {}


def gloo_job() -> dict[str, list[dict[str, Any]]]:
    """The shared gloo job's results (run once per test session, on first use)."""
    if not _gloo:
        # As on fakenccl: DDP's bucket calls are asynchronous, and their gate (1 s by default) must outlast
        # a peer's stall on a loaded machine, or a call goes to gloo unchecked and waits out its timeout.
        _gloo.update(run_many(GLOO_SCENARIOS, 2, backend="gloo", records=tempfile.mkdtemp(prefix="cd-gloo-"),
                              env={"COMMDOCTOR_HOOKS_ASYNC_GATE": "10"}))
    return _gloo


def shares_job(scenario: str, backend: str, world: int = 2) -> bool:
    """Whether ``job(scenario, backend, world)`` reads the backend's shared job."""
    return world == 2 and (backend == "fakenccl" or scenario in GLOO_SCENARIOS)


#: The tests reading one shared job stay on one xdist worker (tests/conftest.py keeps an xdist_group
#: together), so that job runs once per run rather than once per worker.
SHARED = {b: pytest.mark.xdist_group(f"hooks-job:{b}") for b in BACKENDS}


def on_backends(scenario: str) -> list[Any]:
    """``BACKENDS`` as parameters, each marked to run beside the other readers of its shared job."""
    return [pytest.param(b, marks=SHARED[b]) if shares_job(scenario, b) else b for b in BACKENDS]


def job(scenario: str, backend: str, world: int = 2, env: dict[str, str] | None = None,
        records: str | None = None) -> list[dict[str, Any]]:
    """Each rank's result of ``scenario`` on ``backend``: the shared job's where it runs the scenario
    (2 ranks, no environment or records folder of the test's own), else a job of its own."""
    if backend == "gloo":
        if world == 2 and env is None and records is None and scenario in GLOO_SCENARIOS:
            return gloo_job()[scenario]
        if env is None and records is None:  # a job of its own that another test may read too
            return shared_run(scenario, world, {})
        return run_job(scenario, world, env=env, records=records)
    if world != 2:
        return run_many([scenario], world, backend=backend, records=records or tempfile.mkdtemp(prefix="cd-fake-"),
                        env={"COMMDOCTOR_HOOKS_ASYNC_GATE": "10", **(env or {})})[scenario]
    return fake_job()[scenario]


_subgroup: dict[str, list[dict[str, Any]]] = {}


def subgroup_job(backend: str) -> list[dict[str, Any]]:
    """The 4-rank subgroup mismatch on ``backend``: one job runs it on gloo, then on fakenccl (a group each;
    tests/hooks_worker.py ``SCENARIO#BACKEND``), instead of a 4-rank job per backend."""
    if not _subgroup:
        got = run_many(["subgroup", "subgroup#fakenccl"], 4, backend="gloo", records=tempfile.mkdtemp(prefix="cd-sub-"),
                       env={"COMMDOCTOR_HOOKS_ASYNC_GATE": "10"})
        _subgroup.update(gloo=got["subgroup"], fakenccl=got["subgroup#fakenccl"])
    return _subgroup[backend]


def _torch_teardown_abort(r: dict[str, Any]) -> bool:
    """A rank that printed its RESULT, then died of SIGABRT with nothing on stderr but C++'s
    "terminate called without an active exception": torch's own exit with a gloo group never destroyed
    (the worker lets a rank that raised exit as a script whose exception escapes would; gloo's worker
    threads still hold work while the interpreter is torn down: pytorch/pytorch#190489, #179291). It
    comes after the scenario, from no Python code (the hooks run none in C++), about once in 20-60 runs."""
    lines = [ln for ln in r.get("stderr", "").splitlines() if ln.strip()]
    return (r.get("returncode") == -6 and "error" in r
            and lines == ["terminate called without an active exception"])


def not_taken_down(results: list[dict[str, Any]]) -> bool:
    """No rank was killed, died of a signal or was taken down by the backend during the scenario.

    On fakenccl the shared job ends with a deliberate SIGABRT (its last scenario), so there it
    means: every rank printed the scenario's result and nothing on stderr says the backend took
    the process down."""
    for r in results:
        if r.get("missing") or r.get("killed"):
            return False
        if r.get("scenario") is None and (r.get("returncode") or 0) < 0 and not _torch_teardown_abort(r):
            return False
        if "taking the entire process down" in r.get("stderr", "") or "timed out in blocking wait" in r.get("stderr", ""):
            return False
    return True


#: Jobs of their own (not the shared many-scenario ones) that more than one test only reads: the same
#: scenario, world size and environment. Each runs once per session, with a records folder of its own;
#: a test that changes the records works on a copy. Readers of one carry its ``xdist_group`` (below).
_runs: dict[tuple[str, int, tuple[tuple[str, str], ...]], list[dict[str, Any]]] = {}

#: The 3-rank "ok" job (hooks installed before init, the default) and the 2-rank "ok" job whose side
#: channel cannot start (rank 0 advertises an address it cannot bind).
OK3 = ("ok", 3, {"HOOKS_INSTALL": "before"})
NO_CHANNEL = ("ok", 2, {"COMMDOCTOR_HOOKS_ADDR": "192.0.2.1", "COMMDOCTOR_HOOKS_SETUP_TIMEOUT": "3"})
#: And the 3-rank "uneven" mismatch (no environment of its own), which test_hooks_mismatch and test_hooks_records read.
UNEVEN3 = ("uneven", 3, {})
SHARED_RUN = {name: pytest.mark.xdist_group(f"hooks-run:{name}") for name in ("ok3", "no_channel", "uneven3", "subgroup")}


def shared_run(scenario: str, world: int, env: dict[str, str]) -> list[dict[str, Any]]:
    """``run_job(scenario, world, env=env)``, run once per session for the tests that read it."""
    key = (scenario, world, tuple(sorted(env.items())))
    if key not in _runs:
        _runs[key] = run_job(scenario, world, env=env, records=tempfile.mkdtemp(prefix="cd-run-"))
    return _runs[key]
