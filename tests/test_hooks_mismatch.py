"""Real jobs (2 to 4 ranks) where ranks call different collectives: every rank must raise,
naming every rank's call and line, long before any backend timeout (gloo's is 30 s here).

Each case runs on gloo and on tests/fakenccl.py, the test backend that behaves as NCCL does on a GPU
(asynchronous work; a timed wait that expires takes the process down): there the hooks must find the
same mismatches without ever giving the backend's work a timed wait."""

from __future__ import annotations

import pytest

from tests.conftest import needs_torch
from hooks_support import (BACKENDS, SHARED, SHARED_RUN, detection_delay, explain, job, not_taken_down, on_backends,
                           run_job, shares_job, site, sites_in, subgroup_job)

pytestmark = needs_torch

#: Generous: the box is shared and loaded. The measured figures are in docs/hooks.md and bench/README.md.
DETECT_S = 5.0

CASES = {
    # scenario: (world, differ, sites that must be named, text that must appear)
    "op": (2, ["op"], ["op0", "op1"], ["all_reduce(SUM)", "broadcast"]),
    "shape": (2, ["shapes"], ["shape"], ["[4]", "[8]"]),
    "dtype": (2, ["dtype"], ["dtype"], ["float32", "float64"]),
    "redop": (2, ["reduce_op"], ["redop"], ["all_reduce(SUM)", "all_reduce(MAX)"]),
    "root": (2, ["root"], ["root"], ["root=0", "root=1"]),
    "barrier": (2, ["op"], ["barrier", "barrier_ar"], ["barrier", "all_reduce"]),
    "order": (2, ["shapes"], ["order_a0", "order_b1"], ["[4]", "[8]"]),
    "ddp": (2, ["dtype"], ["ddp"], ["float32", "float64"]),
    "ddp_model": (2, ["dtype"], ["ddp_model"], ["broadcast"]),
    "uneven": (3, ["shapes"], ["uneven"], ["ranks 0, 1:", "rank 2:"]),
    "later": (2, ["reduce_op"], ["later0", "later1"], ["all_reduce(SUM)", "all_reduce(MAX)"]),
    "reinit": (2, ["dtype"], ["reinit"], ["float64", "float32", "collective #1 of the default group"]),
}


#: Cases that need a job of their own (3 ranks; a second init_process_group): gloo only.
GLOO_ONLY = ("uneven", "reinit")


@pytest.mark.parametrize("backend,scenario", [
    pytest.param(b, s, marks=[SHARED[b]] if shares_job(s, b, CASES[s][0]) else
                 [SHARED_RUN["uneven3"]] if (b, s) == ("gloo", "uneven") else [])
    for b in BACKENDS for s in sorted(CASES) if b == "gloo" or s not in GLOO_ONLY])
def test_fingerprint_mismatch_raises_on_every_rank(backend: str, scenario: str) -> None:
    world, differ, sites, texts = CASES[scenario]
    res = job(scenario, backend, world)
    why = explain(res)
    assert all(r["error"] == "CollectiveMismatchError" for r in res), why
    for r in res:
        m = r["mismatch"]
        assert m["kind"] == "fingerprint", why
        assert set(differ) <= set(m["differ"]), why
        assert {c["rank"] for c in m["calls"]} == set(range(world)), why
        for s in sites:
            assert site(s) in r["message"], f"{site(s)} not named on rank {r['rank']}\n{why}"
        for t in texts:
            assert t in r["message"], f"{t!r} not in rank {r['rank']}'s message\n{why}"
        assert f"[rank {r['rank']}]" in r["message"]
        assert "result" not in r, "the mismatched call ran and returned numbers"
    # Every rank names the same calls: they all compared the same entries.
    assert len({frozenset(sites_in(r["message"])) for r in res}) == 1, why
    assert detection_delay(res) < DETECT_S, why
    # Nobody was killed by gloo's own size check or taken down by the backend, nobody hung until the 30 s timeout.
    assert not_taken_down(res), why
    assert not any("EnforceNotMet" in r["stderr"] for r in res), why


@SHARED["fakenccl"]
def test_sum_against_max_in_a_ddp_job_on_an_nccl_like_backend() -> None:
    """The GPU capture's reduce-op job (../shared/gpu/job.py, JOB_FAULT=opmismatch) on fakenccl: DDP
    steps that agree, then rank 1 all_reduces with MAX where rank 0 uses SUM. On main at 1c28f6e the
    hooks took both processes down at DDP's first collective (a 50 ms timed wait expired, as in
    gpu-captures/hooks/hooks-opmismatch-nccl.log); now every rank raises within 1 s, naming both ops
    and lines, and neither is taken down."""
    res = job("ddp_opmismatch", "fakenccl")
    why = explain(res)
    assert all(r["error"] == "CollectiveMismatchError" for r in res), why
    for r in res:
        assert r["mismatch"]["differ"] == ["reduce_op"], why
        assert "all_reduce(SUM) float32 [64] at " + site("ddp_sum") in r["message"], why
        assert "all_reduce(MAX) float32 [64] at " + site("ddp_max") in r["message"], why
        assert "result" not in r, "the mismatched call returned numbers"
    assert detection_delay(res) < 1.0, why
    assert not_taken_down(res), why


@SHARED["fakenccl"]
def test_late_rank_on_an_nccl_like_backend_does_not_hold_the_others_and_still_releases_them() -> None:
    """On fakenccl, with the gate bounded at 0.3 s: rank 0 is not held until rank 1 comes (1.5 s late;
    an NCCL collective does not hold the CPU, and holding it could deadlock a job), its call goes to
    the backend unchecked, and rank 0 waits for it. When rank 1 comes with MAX, both raise: rank 1
    before its call is enqueued, rank 0 from inside its wait, released by the background verdict."""
    res = job("late_mismatch@raise:0.3", "fakenccl")
    why = explain(res)
    assert all(r["error"] == "CollectiveMismatchError" for r in res), why
    for r in res:
        assert site("late_sum") in r["message"] and site("late_max") in r["message"], why
        assert "all_reduce(SUM)" in r["message"] and "all_reduce(MAX)" in r["message"], why
    assert "_wait_done" in res[0]["traceback"], why  # raised from the wait, not from the gate
    assert "in before" in res[1]["traceback"], why  # rank 1: at the gate, before its call was enqueued
    assert res[0]["t_raise"] - res[1]["marks"][-1] < 1.0, why  # rank 0 released within 1 s of rank 1's coming
    assert not_taken_down(res), why


@pytest.mark.parametrize("backend", on_backends("skip"))
def test_skipped_collective_of_same_shape(backend: str) -> None:
    """Rank 1 skips one of two same-shape all_reduces: the calls pair off by one, which only the
    call sites show; every rank raises at the next call, naming the skipped call's line."""
    res = job("skip", backend)
    why = explain(res)
    assert all(r["error"] == "CollectiveMismatchError" for r in res), why
    for r in res:
        assert r["mismatch"]["kind"] == "shift", why
        assert "rank 1 made no call matching rank 0's" in r["message"], why
        assert site("skip_b") in r["message"] and site("skip_a") in r["message"], why
    assert detection_delay(res) < DETECT_S, why
    assert not_taken_down(res), why


@pytest.mark.parametrize("backend", on_backends("order_same"))
def test_swapped_collectives_of_same_shape(backend: str) -> None:
    res = job("order_same", backend)
    why = explain(res)
    assert all(r["error"] == "CollectiveMismatchError" for r in res), why
    assert all(r["mismatch"]["kind"] == "order" for r in res), why
    assert all({site("same_a"), site("same_b")} <= sites_in(r["message"]) for r in res), why
    assert all("rank 0 called them in one order, rank 1 in the other" in r["message"] for r in res), why
    assert detection_delay(res) < DETECT_S, why


@pytest.mark.parametrize("backend", on_backends("skip_last"))
def test_rank_that_leaves_before_the_last_collective(backend: str) -> None:
    """Rank 1 makes one all_reduce fewer and destroys the group: rank 0 is told at once."""
    res = job("skip_last", backend)
    why = explain(res)
    r0, r1 = res
    assert r1["error"] is None, why
    assert r0["error"] == "CollectiveMismatchError", why
    assert r0["mismatch"]["kind"] == "left", why
    assert "rank 1: made no such call; it destroyed the group after #1" in r0["message"], why
    assert site("skip_last") in r0["message"], why
    assert detection_delay(res) < DETECT_S, why


@SHARED_RUN["subgroup"]
@pytest.mark.parametrize("backend", BACKENDS)
def test_subgroup_mismatch_reaches_bystanders(backend: str) -> None:
    """4 ranks: ranks 0 and 2 disagree in their own group; ranks 1 and 3, waiting in a world
    barrier for them, raise too (told by the side channel), naming the original disagreement.
    Both backends in one 4-rank job, a group each (gloo's first: fakenccl may take a process down)."""
    res = subgroup_job(backend)
    why = explain(res)
    assert all(r["error"] == "CollectiveMismatchError" for r in res), why
    for r in (res[0], res[2]):
        assert r["mismatch"]["kind"] == "fingerprint" and r["mismatch"]["differ"] == ["reduce_op"], why
        assert "ranks 0, 2" in r["message"] and site("sub") in r["message"], why
    for r in (res[1], res[3]):
        assert r["mismatch"]["kind"] == "remote", why
        # either witness's report may arrive first; each names the disagreement at the same site
        assert ("rank 0 reported" in r["message"] or "rank 2 reported" in r["message"]) and site("sub") in r["message"], why
    assert detection_delay(res) < DETECT_S, why
