"""Hang verdicts on real NCCL hangs (fixtures/hang/nccl, captured on an H100; see its provenance.md).

On NCCL a collective returns before the data moved: the waiting ranks sit in
``torch.cuda.synchronize()`` and the flight recorder's entries stay ``scheduled``
(``last_started_collective`` is -1). The verdict must rest on the dumps' sequence
numbers and still name the odd rank's line from its stack.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path
from typing import Any

import pytest

from commdoctor.loaders.flight_recorder import analyze, load_dumps, read_dump
from commdoctor.loaders.stacks import load_snapshot
from commdoctor.probes.agent import sitecustomize as agent
from tests.conftest import findings, run_json

NCCL = Path(__file__).resolve().parent.parent / "fixtures" / "hang" / "nccl"


def verdict(*args: str) -> dict[str, Any]:
    doc, p = run_json("hang", *args)
    assert p.returncode == 1, p.stderr[-2000:]
    v = doc["verdict"]
    assert v is not None
    return dict(v)


def case(name: str, stacks: bool) -> list[str]:
    args = ["--fr", str(NCCL / name / "fr")]
    return args + (["--stacks", str(NCCL / name / "snapshot.json")] if stacks else [])


def test_straggler_with_stacks_names_rank_2_in_load_batch() -> None:
    v = verdict(*case("straggler3", stacks=True))
    assert v["code"] == "HANG010" and v["ranks"] == [2] and v["cause"] == "collective_timeout_straggler"
    assert "rank 2 is sleeping" in v["title"] and "job.py:46 (load_batch)" in v["title"]
    # What ranks 0-1 wait in comes from the dumps: #16 (DDP's bucket, from the autograd thread), then #17.
    assert "ranks 0 and 1 wait for it in all_reduce #16" in v["title"] and "#17 at job.py:69" in v["title"]
    assert "waits on the GPU at job.py:71" in v["title"]
    assert "all 0 ranks" not in json.dumps(v)


def test_straggler_from_the_dumps_alone_names_rank_2() -> None:
    v = verdict(*case("straggler3", stacks=False))
    assert v["code"] == "HANG010" and v["ranks"] == [2]
    assert "rank 2 never entered all_reduce #16" in v["title"]
    assert any(e["source"] == "flight recorder:rank2" and "its last call: all_reduce #15" in e["text"]
               for e in v["evidence"])


@pytest.mark.parametrize("stacks", [True, False], ids=["with-stacks", "dumps-only"])
def test_mismatch_names_seq_17_both_ops_and_rank_2(stacks: bool) -> None:
    v = verdict(*case("mismatch3", stacks=stacks))
    assert v["code"] == "HANG011" and v["ranks"] == [2] and v["cause"] == "collective_mismatch"
    assert "#17 is all_reduce at job.py:69 on ranks 0 and 1, broadcast at job.py:63 on rank 2" in v["title"]
    assert "job.py:63" in v["remedy"]["summary"]
    if stacks:  # where each side got stuck after it: rank 2 went on to the barrier
        assert "rank 2 in barrier at job.py:74" in v["detail"]


def test_nccl_dumps_read_as_scheduled_until_completed() -> None:
    dumps, errors = load_dumps([str(NCCL / "straggler3" / "fr")])
    assert not errors and [d.rank for d in dumps] == [0, 1, 2]
    assert all(d.backend == "nccl" and d.pg_status["0"]["last_started_collective"] == -1 for d in dumps)
    (g,) = analyze(dumps)
    assert {r: e.seq for r, e in g.waiting.items()} == {0: 16, 1: 16}
    assert {r: [e.seq for e in p] for r, p in g.pending.items()} == {0: [16, 17], 1: [16, 17]}
    assert g.last_seq == {0: 17, 1: 17, 2: 15} and list(g.missing) == [2]
    assert g.front_seq == 16 and g.mismatch_seq is None


def test_mismatch_dumps_diverge_at_17_though_every_call_completed() -> None:
    dumps, _ = load_dumps([str(NCCL / "mismatch3" / "fr")])
    (g,) = analyze(dumps)
    assert g.mismatch_seq == 17 and {r: e.op for r, e in g.mismatch.items()} == {
        0: "all_reduce", 1: "all_reduce", 2: "broadcast"}
    assert all(e.completed for e in g.mismatch.values())  # NCCL paired them silently
    assert sorted(g.waiting) == [0, 1] and not g.missing  # rank 2 is ahead (#26), not behind


def _two_ranks(tmp_path: Path, rank0: str, rank1: str) -> Path:
    """The 2-rank pictures of the watch transcripts, from real py-spy text dumps of the same job."""
    d = tmp_path / "stacks"
    d.mkdir()
    shutil.copy(rank0, d / "rank0.txt")
    shutil.copy(rank1, d / "rank1.txt")
    return d


def test_watch_straggler2_picture_is_a_straggler_not_healthy(tmp_path: Path) -> None:
    # commdoctor-watch-straggler2.txt: rank 0 in torch.cuda.synchronize, rank 1 in load_batch; 0.1.0 said
    # HANG015 "no rank waits in a collective" and watched on until the job ended.
    d = _two_ranks(tmp_path, str(NCCL / "straggler3" / "pyspy-713.txt"), str(NCCL / "straggler3" / "pyspy-715.txt"))
    v = verdict("--stacks", str(d))
    assert v["code"] == "HANG010" and v["ranks"] == [1]
    assert "job.py:46 (load_batch)" in v["title"] and "rank 0 waits for it" in v["title"]


def test_watch_mismatch2_picture_is_a_mismatch_not_a_straggler(tmp_path: Path) -> None:
    # commdoctor-watch-mismatch2.txt: rank 0 in torch.cuda.synchronize, rank 1 in barrier; 0.1.0 blamed
    # rank 0 (the one waiting on the GPU) as a straggler.
    d = _two_ranks(tmp_path, str(NCCL / "mismatch3" / "pyspy-449.txt"), str(NCCL / "mismatch3" / "pyspy-451.txt"))
    v = verdict("--stacks", str(d))
    assert v["code"] == "HANG011" and "rank 1 in barrier at job.py:74" in v["title"]
    assert "rank 0 in torch.cuda synchronize at job.py:71" in v["title"]


def test_saved_snapshot_keeps_the_line_text_it_was_classified_by() -> None:
    # The job's files are not on this machine: the snapshot's own quote of job.py:46 says "time.sleep".
    snap = load_snapshot([str(NCCL / "straggler3" / "snapshot.json")])
    assert not os.path.exists("/workspace/job.py")
    assert snap.ranks[2].describe() == "sleeping (time.sleep) at job.py:46 (load_batch)"
    assert snap.ranks[0].classification.state.value == "cuda_sync"


class _C10dWithNccl:
    """The dump APIs of a CUDA build of torch, answering with a real NCCL capture: NCCL groups
    are in ``_dump_nccl_trace`` and absent from ``_dump_fr_trace`` (flight-recorder-apis.txt)."""

    def __init__(self, dump: bytes) -> None:
        self.dump = dump

    def _dump_nccl_trace(self, collectives: bool, stacks: bool, only_active: bool) -> bytes:
        return self.dump

    def _dump_nccl_trace_json(self, collectives: bool, only_active: bool) -> bytes:
        return json.dumps({"pg_status": {"0": {"last_enqueued_collective": "17", "last_started_collective": "-1",
                                                "last_completed_collective": "15"}}}).encode()

    def _dump_fr_trace(self, collectives: bool, stacks: bool, only_active: bool) -> bytes:
        raise AssertionError("no non-NCCL group: the generic recorder must not be dumped")

    def _dump_fr_trace_json(self, collectives: bool, only_active: bool) -> bytes:
        return json.dumps({"pg_status": {}}).encode()


def test_agent_dumps_the_nccl_recorder_for_nccl_groups(tmp_path: Path) -> None:
    c10d = _C10dWithNccl((NCCL / "straggler3" / "fr" / "nccl_trace_rank_0").read_bytes())
    status = agent.recorder_status(c10d)
    assert list(status) == ["nccl_rank"]
    written = agent.dump_recorders(c10d, str(tmp_path), "0", status)
    assert [os.path.basename(p) for p in written] == ["nccl_rank0.pkl"]
    d = read_dump(written[0])
    assert d.rank == 0 and d.backend == "nccl" and len(d.entries) == 17


def test_one_ranks_dumps_are_merged(tmp_path: Path) -> None:
    """torch's dump on timeout beside the agent's: one rank, entries of both, the newer entry kept."""
    src = NCCL / "straggler3" / "fr"
    for r in range(3):
        shutil.copy(src / f"nccl_trace_rank_{r}", tmp_path / f"nccl_trace_rank_{r}")
    shutil.copy(src / "nccl_trace_rank_0", tmp_path / "nccl_rank0.pkl")
    old = time.time() - 60
    os.utime(tmp_path / "nccl_trace_rank_0", (old, old))
    dumps, errors = load_dumps([str(tmp_path)])
    assert not errors and [d.rank for d in dumps] == [0, 1, 2]
    assert len(dumps[0].entries) == 17 and dumps[0].path.startswith(str(tmp_path / "nccl_rank0.pkl"))
    (g,) = analyze(dumps)
    assert list(g.missing) == [2]


LOGS = Path(__file__).resolve().parent.parent / "fixtures" / "logs"


def test_a_group_member_with_no_dump_is_named_not_a_stall_below_python() -> None:
    """fixtures/logs/nccl-fewer-steps: rank 1 of 2 returned early, so only rank 0 dumped. The dump's pg_config lists
    ranks [0, 1]: the verdict names rank 1 as the one that left (HANG012), never "none is elsewhere" (HANG013)."""
    v = verdict("--fr", str(LOGS / "nccl-fewer-steps" / "fr"))
    assert v["code"] == "HANG012" and v["ranks"] == [1]
    assert v["title"].startswith("rank 1 left no flight-recorder dump (it had most likely exited); rank 0 waits for it "
                                 "in all_reduce #12")


def test_every_member_dumped_keeps_the_dumps_own_verdict() -> None:
    """Near-miss: both ranks dumped (a float64 all_reduce against a float32 one): the calls differ, HANG011."""
    v = verdict("--fr", str(LOGS / "nccl-dtype-mismatch" / "fr"))
    assert v["code"] == "HANG011" and v["cause"] == "collective_mismatch"
    assert "all_reduce 4096 Float" in v["title"] and "all_reduce 4096 Double" in v["title"]


def test_a_rank_the_dumps_show_behind_outranks_a_missing_dump(tmp_path: Path) -> None:
    """Near-miss of the member with no dump: straggler3's dumps without rank 0's. Rank 2's own dump shows it behind:
    that is the verdict (HANG010), not rank 0's absence from the set given."""
    for r in (1, 2):
        shutil.copy(NCCL / "straggler3" / "fr" / f"nccl_trace_rank_{r}", tmp_path / f"nccl_trace_rank_{r}")
    v = verdict("--fr", str(tmp_path))
    assert v["code"] == "HANG010" and v["ranks"] == [2]
