"""The hooks' records read back offline: `commdoctor records DIR` on records written by real gloo jobs."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path
from typing import Any

import pytest

from commdoctor.core import records
from commdoctor.loaders import hook_records
from tests.conftest import findings, needs_torch, run_json
from hooks_support import (NO_CHANNEL, OK3, SHARED, SHARED_RUN, UNEVEN3, explain, job, on_backends, run_job, shared_run,
                           site, start_job, stop_job)

pytestmark = needs_torch


def codes(doc: dict[str, Any]) -> list[str]:
    return [f["code"] for f in doc["findings"]]


@pytest.fixture(scope="module")
def straggler(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real hang: rank 1 stops calling collectives, rank 0 waits in all_reduce #2; killed once its
    records show it waited 5 s."""
    d = tmp_path_factory.mktemp("straggler")
    procs = start_job("straggler", 2, str(d))
    try:
        deadline = time.monotonic() + 120
        entered = None
        while time.monotonic() < deadline:
            prog = records.read_progress([str(d)])
            e = prog.get(0).last_entered if 0 in prog else None
            if e is not None and e.seq == 2:
                entered = time.monotonic()
                break
            time.sleep(0.2)
        assert entered is not None, "rank 0 never reached its third all_reduce: " + "".join(
            p.stderr.read() if p.poll() is not None else "" for p in procs)
        # Heartbeats every second: kept running until rank 0's records show a wait of over 5 s (not a
        # snapshot), read as the tests below read it; polled rather than a fixed 7 s.
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            rec = hook_records.load([str(d)])
            g = rec.groups.get("0")
            if g is not None and 0 in g.entered and rec.last_seen.get(0, 0.0) - g.entered[0].time >= 5.0:
                break
            time.sleep(0.2)
        else:
            raise AssertionError("rank 0's records never showed a wait of 5 s")
    finally:
        stop_job(procs)
    return d


def test_straggler_names_the_rank_that_never_came(straggler: Path) -> None:
    doc, p = run_json("records", str(straggler))
    assert p.returncode == 1, p.stderr
    f = findings(doc, "HOOK010")
    assert len(f) == 1, doc["findings"]
    f = f[0]
    assert f["severity"] == "error" and f["cause"] == "collective_timeout_straggler"
    assert f["ranks"] == [1, 0]
    assert f["title"] == (f"rank 1 never entered #2 (its last call, all_reduce(SUM) float32 [4] #1 at "
                          f"{site('straggler')}, completed), while rank 0 waits in all_reduce(SUM) float32 [4] #2 at "
                          f"{site('straggler')}"), f["title"]
    waited = float(f["detail"].split("had waited ")[1].split(" s")[0])
    assert waited >= 5.0, f["detail"]
    assert any(e["rank"] == 1 and e["line"] for e in f["evidence"])
    assert codes(doc) == ["HOOK010"]


def test_loader_contract_on_a_hung_job(straggler: Path) -> None:
    prog = records.read_progress([str(straggler)])
    assert prog[0].in_flight is not None and prog[0].in_flight.seq == 2
    assert prog[1].in_flight is None and prog[1].last_completed.seq == 1
    rec = hook_records.load([str(straggler)])
    assert rec.world_size == 2 and rec.bad_lines == 0
    assert rec.last_seen[0] - rec.groups["0"].entered[0].time >= 5.0  # the heartbeat


@pytest.mark.parametrize("backend", on_backends("redop@record"))
def test_record_mode_mismatch_is_found_offline(backend: str) -> None:
    """Hooks only recording (no checking): SUM on one rank, MAX on the other, silently wrong numbers
    from the backend; the records still show it, naming both lines. The scenario of each backend's
    shared job (hooks installed with mode="record")."""
    res = job("redop@record", backend)
    tmp_path = Path(res[0]["records"])
    assert all(r["error"] is None and "result" in r for r in res), explain(res)  # the numbers came back (wrong ones)
    doc, p = run_json("records", str(tmp_path))
    assert p.returncode == 1
    f = findings(doc, "HOOK005")
    assert len(f) == 1 and "differ in reduce op" in f[0]["title"], doc["findings"]
    texts = " ".join(e["text"] for e in f[0]["evidence"])
    assert "all_reduce(SUM)" in texts and "all_reduce(MAX)" in texts and site("redop") in texts
    assert not findings(doc, "HOOK001")


@SHARED_RUN["uneven3"]
def test_recorded_mismatch_reported_once_with_every_rank() -> None:
    res = shared_run(*UNEVEN3)  # the 3-rank job test_hooks_mismatch reads too
    assert all(r["error"] == "CollectiveMismatchError" for r in res), explain(res)
    doc, _ = run_json("records", res[0]["records"], "-v")
    assert codes(doc) == ["HOOK001"], doc["findings"]  # one finding, not one per rank; no progress noise
    f = doc["findings"][0]
    assert f["ranks"] == [0, 1, 2] and "differ in shapes" in f["title"]
    assert any("ranks 0, 1:" in e["text"] for e in f["evidence"]) and any("rank 2:" in e["text"] for e in f["evidence"])


@SHARED["fakenccl"]
def test_recorded_mismatch_on_an_nccl_like_backend() -> None:
    """The DDP job whose last all_reduce is SUM on rank 0 and MAX on rank 1, on fakenccl: the records
    hold the mismatch once, and no rank appears stuck in a call (none was handed to the backend)."""
    res = job("ddp_opmismatch", "fakenccl")
    assert all(r["error"] == "CollectiveMismatchError" for r in res), explain(res)
    doc, _ = run_json("records", res[0]["records"], "-v")
    assert codes(doc) == ["HOOK001"], doc["findings"]
    f = doc["findings"][0]
    assert f["ranks"] == [0, 1] and "differ in reduce op" in f["title"], f
    texts = " ".join(e["text"] for e in f["evidence"])
    assert site("ddp_sum") in texts and site("ddp_max") in texts, texts


@SHARED_RUN["ok3"]
def test_missing_rank_and_damaged_lines(tmp_path: Path) -> None:
    """The healthy 3-rank job's records (shared with test_hooks_basic), copied, then one rank's file removed and
    another's cut mid-line and followed by junk."""
    res = shared_run(*OK3)
    assert all(r["error"] is None for r in res), explain(res)
    tmp_path = tmp_path / "records"
    shutil.copytree(res[0]["records"], tmp_path)
    os.remove(records.record_path(str(tmp_path), 2))
    with open(records.record_path(str(tmp_path), 1), "ab") as f:
        f.write(b'{"schema":"commdoctor.hooks/1","kind":"enter","rank":1,"gro')  # a cut last line
        f.write(b"\x00\xff binary junk\n")
    doc, p = run_json("records", str(tmp_path))
    assert sorted(codes(doc)) == ["HOOK012", "HOOK021"], doc["findings"]
    assert findings(doc, "HOOK012")[0]["ranks"] == [2]
    assert p.returncode == 0  # a warning and an info: below --fail-on error


@SHARED_RUN["no_channel"]
def test_channel_off_is_reported() -> None:
    res = shared_run(*NO_CHANNEL)  # the job test_hooks_basic's side-channel test reads too
    assert all(r["error"] is None for r in res), explain(res)
    doc, _ = run_json("records", res[0]["records"])
    f = findings(doc, "HOOK020")
    assert len(f) == 1 and f[0]["ranks"] == [0, 1], doc["findings"]


def test_records_command_usage_errors(tmp_path: Path) -> None:
    from tests.conftest import run_cli

    p = run_cli("records", str(tmp_path / "nope"))
    assert p.returncode == 2 and "no such file" in p.stderr
    p = run_cli("records", str(tmp_path))
    assert p.returncode == 2 and "no commdoctor.hooks records" in p.stderr
    bad = tmp_path / "hooks-rank0.jsonl"
    bad.write_bytes(b"\x00" * 100 + b"\nnot json\n")
    doc, p = run_json("records", str(tmp_path))
    assert p.returncode == 0 and codes(doc) == ["HOOK021"], doc


def test_killed_job_loses_nothing_already_flushed(tmp_path: Path) -> None:
    """SIGKILL leaves no chance to flush: what the background thread wrote on its timer (records every
    50 ms, the store's progress key at most every 0.5 s) must already hold every call made before."""
    import datetime

    import torch.distributed as dist

    from hooks_support import free_port

    port = free_port()
    procs = start_job("crash", 2, str(tmp_path), env={"MASTER_PORT": str(port)})
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            prog = records.read_progress([str(tmp_path)])
            if all(r in prog and prog[r].last_entered is not None and prog[r].last_entered.seq == 49 for r in (0, 1)):
                break
            assert all(p.poll() is None for p in procs), explain_procs(procs)
            time.sleep(0.1)
        else:
            raise AssertionError("the ranks never reached their 50th all_reduce: " + explain_procs(procs))
        time.sleep(1.0)  # the store's progress is at most 0.5 s (+ one 50 ms tick) behind
        client = dist.TCPStore("127.0.0.1", port, is_master=False, timeout=datetime.timedelta(seconds=30))
        store = dist.PrefixStore("0/", dist.PrefixStore("default_pg", client))  # the default group's store
        stored = {r: json.loads(store.get(f"commdoctor.hooks/v1/progress/{r}")) for r in (0, 1)}
    finally:
        for p in procs:
            p.kill()  # SIGKILL: no atexit, no last flush
        stop_job(procs)
    for r in (0, 1):
        assert stored[r]["entered"]["seq"] == 49 and stored[r]["completed"]["seq"] == 49, stored
        assert stored[r]["completed"]["site"] == site("crash")
        lines = [d for d in records.iter_lines(records.record_path(str(tmp_path), r)) if d]
        enters = [d["seq"] for d in lines if d.get("kind") == "enter"]
        exits = [d["seq"] for d in lines if d.get("kind") == "exit"]
        assert enters == list(range(50)) and sorted(exits) == list(range(50)), (enters, exits)
    prog = records.read_progress([str(tmp_path)])
    assert prog[0].last_completed.seq == 49 and prog[1].last_completed.seq == 49


def explain_procs(procs: list[Any]) -> str:
    return " | ".join(f"rank {i} rc={p.poll()}" for i, p in enumerate(procs))


def test_ranks_killed_right_after_the_mismatch_keep_it_in_their_records(tmp_path: Path) -> None:
    """Each rank is SIGKILLed the moment CollectiveMismatchError reaches it (as when a launcher kills
    the job): the mismatch and the call that met it must already be in its records."""
    res = run_job("redop", 2, env={"HOOKS_KILL_ON_ERROR": "1"}, records=str(tmp_path))
    assert all(r["returncode"] == -9 for r in res), explain(res)
    for r in (0, 1):
        lines = [d for d in records.iter_lines(records.record_path(str(tmp_path), r)) if d]
        kinds = [d.get("kind") for d in lines]
        assert "mismatch" in kinds, kinds
        assert any(d.get("kind") == "enter" and d.get("reduce_op") == ("MAX" if r == 1 else "SUM")
                   and d.get("site") == site("redop") for d in lines), lines[-3:]
    doc, p = run_json("records", str(tmp_path))
    assert p.returncode == 1
    assert codes(doc) == ["HOOK001"], doc["findings"]

