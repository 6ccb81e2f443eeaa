"""Real 2-rank jobs asking for a backend this CPU build lacks, and gloo carrying the tensors the hooks watch.

Every job here is a real torchrun job on 127.0.0.1 (torch 2.13 CPU build: gloo only). What cannot exist here
is a CUDA tensor: the hooks' notice is exercised on CPU tensors by widening the watched device types
(COMMDOCTOR_HOOKS_WATCH_DEVICES=cpu), and the device decision itself on the real backend map of real groups.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO, findings, needs_torch, neutral_env, run_json, skip_if_built_with, torch_build
from tests import ports

pytestmark = needs_torch


def _port() -> int:
    return ports.free_port()


def _torchrun(args: list[str], env: dict[str, str] | None = None, cwd: Path = REPO, timeout: float = 180,
              nproc: int = 2) -> subprocess.CompletedProcess[str]:
    e = {**neutral_env(), "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1", **(env or {})}
    argv = [sys.executable, "-m", "torch.distributed.run", "--nnodes", "1", "--nproc-per-node", str(nproc),
            "--master-addr", "127.0.0.1", "--master-port", str(_port()), *args]
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=e, cwd=str(cwd))


@pytest.mark.parametrize("backend, why, fallback", [
    ("nccl", "NCCL", "Use gloo on this host"),
    ("mpi", "MPI", "Build torch from source against your MPI"),
])
def test_job_asking_for_missing_backend_gets_a_finding(tmp_path: Path, backend: str, why: str, fallback: str) -> None:
    skip_if_built_with(backend)
    p = _torchrun([str(REPO / "fixtures/logs/backend_job.py"), backend])
    assert p.returncode != 0 and f"doesn't have {why} built in" in p.stderr
    log = tmp_path / "job.log"
    log.write_text(p.stdout + p.stderr)
    doc, cli = run_json("logs", str(log))
    first = next(f for f in doc["findings"] if f["cause"])
    assert (first["code"], first["cause"]) == ("LOG043", "other")
    assert backend in first["title"] and first["remedy"]["summary"].startswith(fallback)
    assert "Traceback" not in cli.stderr


@pytest.mark.parametrize("backend", ["nccl", "mpi"])
def test_commdoctor_run_under_torchrun_gives_the_advisor_finding(tmp_path: Path, backend: str) -> None:
    skip_if_built_with(backend)
    # The advice for this host: NCCL where torch sees a GPU and has NCCL, gloo otherwise (docs/backends.md).
    host = torch_build()
    advice = "use nccl here" if host["gpus"] and host["nccl"] else "use gloo here"
    logs = tmp_path / "ranks"
    p = _torchrun(["--log-dir", str(logs), "--redirects", "3", "-m", "commdoctor", "run", "--no-tui", "--json",
                   "--select", "BK", "--job-backend", backend])
    outs = sorted(logs.rglob("stdout.log"))
    errs = sorted(logs.rglob("stderr.log"))
    assert len(outs) == 2, p.stderr[-2000:]
    docs = [json.loads(o.read_text()) for o in outs if o.read_text().strip()]
    assert docs, "no rank finished its report"  # torchrun stops the other rank once one exits 1
    for doc in docs:
        [f] = findings(doc, "BK003")
        assert backend in f["title"] and f["cause"] == "backend_unavailable" and f["remedy"]["summary"]
        assert findings(doc, "BK001")[0]["title"].startswith(advice)
    for e in errs:
        assert "Traceback" not in e.read_text()


def test_hooks_name_the_cause_when_init_asks_for_nccl(tmp_path: Path) -> None:
    skip_if_built_with("nccl")
    logs = tmp_path / "ranks"
    p = _torchrun(["--log-dir", str(logs), "--redirects", "2", str(REPO / "tests/backend_hooks_job.py"), "nccl", "1", "4"],
                  cwd=tmp_path)
    # torchrun stops the other rank as soon as one fails, so a rank may be gone before its init;
    # every rank that reached init said it once, before torch's own error, which is untouched.
    reached = 0
    for err in sorted(logs.rglob("stderr.log")):
        text = err.read_text()
        if "doesn't have NCCL built in" not in text:
            continue
        reached += 1
        said = [ln for ln in text.splitlines() if ln.startswith("commdoctor.hooks: BK003")]
        assert len(said) == 1, text[-2000:]
        assert "does not have it. Use gloo on this host" in said[0]
        assert text.index(said[0]) < text.index("RuntimeError: Distributed package doesn't have NCCL built in")
    assert reached >= 1, p.stderr[-2000:]


def test_hooks_time_gloo_calls_once_and_records_them(tmp_path: Path) -> None:
    p = _torchrun([str(REPO / "tests/backend_hooks_job.py"), "gloo", "12", "262144"], cwd=tmp_path,
                  env={"COMMDOCTOR_HOOKS_WATCH_DEVICES": "cpu"})
    assert p.returncode == 0, p.stderr[-3000:]
    notices = [ln for ln in p.stderr.splitlines() if ln.startswith("commdoctor.hooks: cpu tensors go through gloo")]
    assert len(notices) == 1  # group rank 0 prints it, once
    assert "all_reduce of 1 MiB took" in notices[0] and "commdoctor run" in notices[0]
    recs = tmp_path / "commdoctor-hooks"
    lines = [json.loads(ln) for f in sorted(recs.glob("hooks-rank*.jsonl")) for ln in f.read_text().splitlines()]
    backend = [d for d in lines if d["kind"] == "backend"]
    assert sorted(d["rank"] for d in backend) == [0, 1]
    assert all(d["bytes"] == 1 << 20 and d["time_s"] > 0 and d["calls"] == 5 for d in backend)
    doc, _ = run_json("records", str(recs))
    [f] = findings(doc, "HOOK030")
    assert f["ranks"] == [0, 1] and "went through gloo on the default group" in f["title"]
    assert f["remedy"]["summary"].startswith('Pass backend="cpu:gloo,cuda:nccl"')
    assert findings(doc, "HOOK020") == []  # the notice is not a "checking stopped" warning


def test_unwatched_devices_are_not_timed(tmp_path: Path) -> None:
    """Default watch (cuda): CPU tensors through gloo are what gloo is for, so nothing is said or recorded."""
    p = _torchrun([str(REPO / "tests/backend_hooks_job.py"), "gloo", "8", "1024"], cwd=tmp_path)
    assert p.returncode == 0, p.stderr[-3000:]
    assert "go through gloo" not in p.stderr
    text = "".join(f.read_text() for f in (tmp_path / "commdoctor-hooks").glob("*.jsonl"))
    assert '"kind":"backend"' not in text


DECIDE = """
import os, sys, torch, torch.distributed as dist
from commdoctor.hooks.backendwatch import backend_names, watches
os.environ.update(MASTER_ADDR="127.0.0.1")
for spec, port in zip(sys.argv[1::2], sys.argv[2::2]):
    os.environ["MASTER_PORT"] = port
    dist.init_process_group(spec, rank=0, world_size=1)
    names = backend_names(dist.group.WORLD)
    print(spec, sorted(names.items()), sorted(watches(names, frozenset({"cuda"}))), flush=True)
    dist.destroy_process_group()
"""
SPECS = ("gloo", "cpu:gloo")


@pytest.fixture(scope="module")
def decided() -> dict[str, str]:
    """One process (torch imported once) makes a real group of each spec in turn and prints the decision."""
    argv = [a for spec in SPECS for a in (spec, str(_port()))]
    p = subprocess.run([sys.executable, "-c", DECIDE, *argv], capture_output=True, text=True, timeout=60,
                       env={**os.environ, "PYTHONPATH": str(REPO)})
    assert p.returncode == 0, p.stderr[-2000:]
    return dict(ln.split(" ", 1) for ln in p.stdout.splitlines() if ln.split(" ", 1)[0] in SPECS)


@pytest.mark.parametrize("spec, names, watched", [
    ("gloo", [("cpu", "gloo"), ("cuda", "gloo")], ["cuda"]),  # gloo takes CUDA tensors too: watched
    ("cpu:gloo", [("cpu", "gloo")], []),  # CUDA tensors have no backend here: nothing to watch
])
def test_decision_on_real_groups(decided: dict[str, str], spec: str, names: list, watched: list) -> None:
    assert decided.get(spec) == f"{names} {watched}", decided
