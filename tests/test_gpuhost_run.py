"""`commdoctor run` on a GPU host: a group of one rank claims no bandwidth, the advisor compares only groups
that moved bytes between ranks, and an NVIDIA image's own variables stay quiet.

The one-rank group is real (gloo, `--world-size 1`); the GPU host is the H100 capture in
../shared/gpu-captures/host (what `commdoctor run --json` recorded there), fed to the same code.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from commdoctor.checks.backends import BackendAdvisorCheck, no_comparison_reason, ratio_text
from commdoctor.checks.env import EnvVarsCheck
from commdoctor.checks.pg import GlooCudaGroupCheck, NcclGroupCheck
from commdoctor.core.model import CheckResult, Stage, Status
from commdoctor.pipeline.run import CheckRun, Context, Facts, Options
from tests.conftest import REPO, needs_torch, neutral_env, result, run_json

CAPTURE = Path("/work/shared/gpu-captures/host/commdoctor-run.json")
needs_capture = pytest.mark.skipif(not CAPTURE.is_file(), reason="the H100 capture is not on this machine")

NO_BW = "no bandwidth: with one rank nothing crosses between ranks"
NOT_COMPARED = "one rank per group: nothing crossed between ranks, so no speed comparison"


@pytest.fixture(scope="module")
def one_rank(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], str]:
    """One real `commdoctor run --world-size 1` (gloo), as JSON, and the same report as the console prints it."""
    doc, p = run_json("run", "--world-size", "1", "--select", "PG,BK", "--pg-timeout", "60", timeout=150)
    assert p.returncode == 0, p.stderr[-3000:]
    saved = tmp_path_factory.mktemp("onerank") / "report.json"
    saved.write_text(json.dumps(doc), encoding="utf-8")
    v = subprocess.run([sys.executable, "-m", "commdoctor", "view", "--no-tui", "-v", str(saved)],
                       capture_output=True, text=True, timeout=60, env=neutral_env(), cwd=str(REPO))
    assert v.returncode == 0, v.stderr[-3000:]
    return doc, v.stdout


@needs_torch
def test_a_real_one_rank_group_says_what_it_proves_and_claims_no_bandwidth(one_rank: tuple[dict[str, Any], str]) -> None:
    doc, text = one_rank
    r = result(doc, "pg.gloo")
    assert r["status"] == "passed"
    assert r["summary"].startswith("gloo, 1 rank: init ")
    assert r["summary"].endswith("all_reduce, all_gather, broadcast, reduce_scatter, all_to_all verified: "
                                 f"the gloo install works; {NO_BW}"), r["summary"]
    assert r["data"]["bandwidth"] == [] and r["data"]["between_ranks"] is False
    assert r["data"]["no_bandwidth"] == NO_BW
    # What the console shows: the same facts, and no figure that reads like a speed.
    line = next(ln for ln in text.splitlines() if "(pg.gloo," in ln)
    assert "gloo, 1 rank: init" in line and NO_BW in line
    assert "GB/s" not in text and "busbw" not in text and "algbw" not in text
    assert "speed needs 2 or more ranks: commdoctor run --world-size 2" in text


@needs_torch
def test_the_advisor_beside_a_one_rank_cpu_group_compares_nothing(one_rank: tuple[dict[str, Any], str]) -> None:
    # No GPU here: nccl and gloo on CUDA tensors never ran, so there is neither a figure nor a reason to give.
    doc, _ = one_rank
    adv = result(doc, "backend.advisor")
    assert adv["data"]["measured"] is None and adv["data"]["not_compared"] is None
    assert "faster" not in adv["findings"][0]["title"]


def _capture() -> dict[str, dict[str, Any]]:
    return {r["check"]: r for r in json.loads(CAPTURE.read_text(encoding="utf-8"))["results"]}


def _events(data: dict[str, Any]) -> dict[str, Any]:
    """The worker's events behind one captured pg.* result (what run_local_group returned on the H100)."""
    evs: list[dict[str, Any]] = [{"event": "init"}, {"event": "joined", "init_s": data["init_s"]}]
    evs += [{"event": "collective", "op": op, "ok": True} for op in data["verified"]]
    evs += data["bandwidth"] + [{"event": "done"}]
    world = data["world_size"]
    return {"backend": data["backend"], "world_size": world, "timeout_s": 60.0, "elapsed_s": data["elapsed_s"],
            "ranks": {str(r): {"events": evs, "stderr": [], "returncode": 0} for r in range(world)}}


def _check_run(name: str) -> tuple[CheckRun, CheckResult]:
    res = CheckResult(check=name, stage=Stage.PG_INIT, title=name, status=Status.PASSED)
    return CheckRun(Context(options=Options(mode="run"), facts=Facts()), res), res


@needs_capture
@pytest.mark.parametrize("check", [NcclGroupCheck, GlooCudaGroupCheck])
def test_the_h100_one_gpu_groups_claim_no_bandwidth(check: type[NcclGroupCheck]) -> None:
    captured = _capture()[check.name]["data"]
    assert captured["world_size"] == 1 and captured["bandwidth"], "the capture holds what 0.1.0 measured"
    run, res = _check_run(check.name)
    assert list(check().evaluate(_events(captured), run)) == []
    backend = captured["backend"]
    assert res.summary.endswith(f"verified: the {backend} install works; {NO_BW}"), res.summary
    assert res.summary.startswith(f"{backend}, 1 rank: ")
    shown = res.summary + "\n".join(res.details)
    assert "GB/s" not in shown and "889" not in shown and "busbw" not in shown
    assert "speed needs 2 or more ranks: a host with 2 or more GPUs" in res.details[0]
    assert res.data["bandwidth"] == [] and res.data["between_ranks"] is False


@needs_capture
def test_the_advisor_on_the_h100_capture_says_why_it_does_not_compare() -> None:
    cap = _capture()
    pg = {name.split(".", 1)[1]: r["data"] for name, r in cap.items() if name.startswith("pg.")}
    facts = cap["backend.advisor"]["data"]["facts"]
    run, res = _check_run("backend.advisor")
    f = BackendAdvisorCheck().recommend(facts, pg, run)
    assert f.code == "BK001"
    assert f.title.endswith(f"keep gloo for CPU tensors; {NOT_COMPARED}"), f.title
    assert "faster" not in f.title and "25.3" not in f.title
    assert res.data["measured"] is None and res.data["not_compared"] == NOT_COMPARED
    # The 2-rank CPU gloo group moved bytes, but it is not what NCCL would replace: no figure from it either.
    assert ratio_text(pg) is None


def _group(world: int, seconds: float) -> dict[str, Any]:
    return {"world_size": world, "bandwidth": [{"bytes": 16 << 20, "time_s": seconds}]}


def test_two_rank_groups_on_both_backends_are_compared() -> None:
    pg = {"nccl": _group(2, 0.001), "gloo_cuda": _group(2, 0.0094)}
    assert ratio_text(pg) == "nccl is 9.4x faster than gloo for 16 MiB all_reduce on this host"
    assert no_comparison_reason(pg) is None
    # Near miss: one side of one rank is enough to stop the comparison.
    assert ratio_text({"nccl": _group(1, 0.001), "gloo_cuda": _group(2, 0.0094)}) is None
    assert no_comparison_reason({"nccl": _group(2, 0.001), "gloo_cuda": _group(1, 0.0094)}) == NOT_COMPARED
    # A group that failed measured nothing: no figure, and the reason says so.
    failed = {"nccl": {"world_size": 2, "bandwidth": []}, "gloo_cuda": _group(2, 0.0094)}
    assert ratio_text(failed) is None and "measured no bandwidth" in (no_comparison_reason(failed) or "")


@needs_capture
def test_every_variable_of_the_h100_image_stays_quiet() -> None:
    env = _capture()["env.vars"]["data"]["variables"]
    assert env.get("NCCL_VERSION") == "2.28.3-1"
    ctx = Context(options=Options(mode="run"), facts=Facts())
    ctx.facts.provide("comm_env", dict(env))
    res = CheckResult(check="env.vars", stage=Stage.ENVIRONMENT, title="", status=Status.PASSED)
    assert [f.code for f in EnvVarsCheck().run(CheckRun(ctx, res))] == []
    assert res.data["image_metadata"] == ["NCCL_VERSION"]
