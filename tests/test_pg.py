"""The process-group stage against real gloo groups, including injected faults."""

from __future__ import annotations

import time

import pytest

from commdoctor.checks.pg import GlooGroupCheck
from commdoctor.probes.pg_init import run_local_group
from tests.conftest import findings, needs_torch, result, run_json, torch_build


@needs_torch
def test_second_rank_never_starts_yields_a_finding_within_the_deadline() -> None:
    t0 = time.monotonic()
    res = run_local_group("gloo", 2, timeout=8.0, start_ranks=[0], sizes=())
    elapsed = time.monotonic() - t0
    assert elapsed < 8.0 + 8.0, f"the probe must hold its deadline, took {elapsed:.1f} s"
    fs = list(GlooGroupCheck().evaluate(res))
    assert fs[0].code == "PG002", [f.code for f in fs]
    assert fs[0].title == "rank(s) 1 never joined the gloo process group within 8 s"
    assert fs[0].ranks == (1,)
    assert any(e.text == "process was never started" for e in fs[0].evidence)
    # Rank 0's own timeout, if it reported one, is a consequence, not the headline.
    assert all(f.consequence_of == "PG002" for f in fs[1:])


@needs_torch
def test_missing_gloo_interface_is_reported_with_glooss_own_error() -> None:
    doc, p = run_json("run", "--select", "PG", "--pg-timeout", "20", env={"GLOO_SOCKET_IFNAME": "eth9"})
    assert p.returncode == 1, p.stderr
    f = findings(doc)[0]
    assert f["code"] == "PG001" and f["cause"] == "wrong_interface"
    assert any("Unable to find address for: eth9" in e["text"] for e in f["evidence"])
    assert "GLOO_SOCKET_IFNAME" in f["remedy"]["summary"]
    assert result(doc, "pg.gloo")["status"] == "failed"


@needs_torch
def test_asking_for_nccl_on_a_cpu_build_is_a_finding_not_a_traceback() -> None:
    doc, p = run_json("run", "--select", "PG", "--backend", "nccl")
    r = result(doc, "pg.nccl")
    host = torch_build()  # asked of torch once per test process (cached), not once more here
    if host["nccl"] and host["gpus"]:
        pytest.skip("this host really has NCCL and GPUs")
    assert p.returncode == 1
    f = findings(doc, "PG007")[0]
    assert f["cause"] == "backend_unavailable" and r["status"] == "failed"
    assert "gloo" in f["remedy"]["summary"]
    assert result(doc, "pg.gloo")["status"] == "skipped"


@needs_torch
def test_world_size_four_verifies_every_collective() -> None:
    res = run_local_group("gloo", 4, timeout=60.0, sizes=(64 << 10,))
    fs = list(GlooGroupCheck().evaluate(res))
    assert fs == []
    for r in range(4):
        evs = res["ranks"][str(r)]["events"]
        assert [e["op"] for e in evs if e["event"] == "collective"] == \
            ["all_reduce", "all_gather", "broadcast", "reduce_scatter", "all_to_all"]
        assert all(e["ok"] is not False for e in evs if e["event"] == "collective")
        bw = [e for e in evs if e["event"] == "bw"][0]
        assert bw["busbw_gbps"] == pytest.approx(bw["algbw_gbps"] * 2 * 3 / 4)
