"""The backend advisor: one test per rule of the decision table, and the real facts of this host."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from commdoctor.checks.backends import JobBackend, advise, ratio_text
from tests.conftest import REPO, findings, needs_torch, result, run_json, skip_if_built_with

CPU_BUILD = {"nccl": False, "gloo": True, "mpi": False, "ucc": False}
CUDA_BUILD = {"nccl": True, "gloo": True, "mpi": False, "ucc": False}
MPI_BUILD = {"nccl": False, "gloo": True, "mpi": True, "ucc": False}
IB = [{"name": "mlx5_0", "ports": [{"port": "1", "state": "4: ACTIVE", "link_layer": "InfiniBand"}]}]


@pytest.mark.parametrize(
    "facts,backend,reason_has",
    [
        ({"gpus": 8, "built": CUDA_BUILD}, "nccl", "only backend that uses NVLink"),
        ({"gpus": 8, "built": CPU_BUILD}, "gloo", "install a CUDA build of torch"),
        ({"gpus": 0, "built": MPI_BUILD, "rdma_devices": IB, "ipoib_interfaces": []}, "mpi", "without IP over IB"),
        ({"gpus": 0, "built": MPI_BUILD, "rdma_devices": IB, "ipoib_interfaces": ["ib0"]}, "gloo", "needs only TCP"),
        ({"gpus": 0, "built": MPI_BUILD, "launcher": ["openmpi"]}, "mpi", "launched by mpirun"),
        ({"gpus": 0, "built": CPU_BUILD, "launcher": ["openmpi"]}, "gloo", "needs only TCP"),
        ({"gpus": 0, "built": CPU_BUILD}, "gloo", "CPU tensors"),
    ],
)
def test_decision_table(facts: dict, backend: str, reason_has: str) -> None:
    adv = advise(facts)
    assert adv["backend"] == backend and reason_has in adv["reason"]


def test_device_maps_parse_and_flag_unknown_names() -> None:
    jb = JobBackend.parse("cpu:gloo,cuda:nccl", "env")
    assert jb.per_device == {"cpu": "gloo", "cuda": "nccl"} and not jb.errors
    assert JobBackend.parse("gloo", "env").per_device == {"cpu": "gloo", "cuda": "gloo"}
    assert JobBackend.parse("ncl", "env").errors == ["'ncl' is not a backend torch knows (nccl, gloo, mpi, ucc)"]
    assert JobBackend.parse("cpu:,cuda:nccl", "env").errors == ["'cpu:' is not DEVICE:BACKEND"]


def test_measured_ratio_is_stated_with_the_size() -> None:
    pg = {"nccl": {"world_size": 2, "bandwidth": [{"bytes": 16 << 20, "time_s": 0.001}]},
          "gloo_cuda": {"world_size": 2, "bandwidth": [{"bytes": 16 << 20, "time_s": 0.0094}]}}
    assert ratio_text(pg) == "nccl is 9.4x faster than gloo for 16 MiB all_reduce on this host"
    assert ratio_text({"gloo": {"bandwidth": []}}) is None


@needs_torch
def test_this_cpu_host_gets_gloo_with_the_reason() -> None:
    doc, p = run_json("run", "--select", "BK")
    f = findings(doc, "BK001")[0]
    built = doc["results"][0]["data"]["facts"]["built"]
    if built.get("nccl"):
        pytest.skip("this host's torch has NCCL")
    assert f["title"].startswith("use gloo here (cpu:gloo)") and f["severity"] == "info"
    assert p.returncode == 0


@needs_torch
@pytest.mark.parametrize("spec,code", [("nccl", "BK003"), ("mpi", "BK003"), ("ucc", "BK003"), ("cpu:gloo,cuda:ncll", "BK004")])
def test_asking_for_a_backend_this_build_lacks_is_a_finding(spec: str, code: str) -> None:
    skip_if_built_with(spec)
    doc, p = run_json("run", "--select", "BK", "--job-backend", spec)
    adv = result(doc, "backend.advisor")
    assert "facts" in adv["data"], adv  # the advisor ran on the torch probe's facts
    if adv["data"]["facts"]["built"].get(spec):
        pytest.skip(f"this build has {spec}")
    assert p.returncode == 1
    f = findings(doc, code)[0]
    assert f["severity"] == "error" and f["remedy"]["summary"]
    if code == "BK003":
        assert f["title"] == f"the job asks for {spec} but this torch build does not have it"
        assert f["cause"] == "backend_unavailable"


@needs_torch
def test_backend_from_the_environment_is_read() -> None:
    doc, p = run_json("run", "--select", "BK", env={"PL_TORCH_DISTRIBUTED_BACKEND": "nccl"})
    if result(doc, "backend.advisor")["data"]["facts"]["built"].get("nccl"):
        pytest.skip("this build has nccl")
    f = findings(doc, "BK003")[0]
    assert f["evidence"][0] == {"source": "env PL_TORCH_DISTRIBUTED_BACKEND", "text": "nccl", "line": None, "rank": None, "host": None}


@needs_torch
def test_the_advisor_alone_waits_for_a_slow_torch_import(tmp_path: Path) -> None:
    """`--select BK`: the advisor runs the torch probe itself. A CUDA build imported cold on a busy host takes
    longer than a check's default 10 s (an H100 host, 16 test workers: the advisor timed out with no facts)."""
    slow = tmp_path / "slow-import"
    slow.mkdir()
    # Only the probe's child (python -c ...) is slowed; commdoctor itself (python -m) starts as usual.
    (slow / "sitecustomize.py").write_text("import sys, time\nif sys.orig_argv[1:2] == ['-c']:\n    time.sleep(12)\n")
    doc, p = run_json("run", "--select", "BK", env={"PYTHONPATH": f"{slow}{os.pathsep}{REPO}"}, timeout=150)
    adv = result(doc, "backend.advisor")
    assert adv["status"] == "passed" and adv["data"]["facts"]["built"]["gloo"] is True, adv
    assert findings(doc, "BK001")
