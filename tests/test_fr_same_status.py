"""Flight-recorder sets above the full-read limit where every rank has the same sequence status but
one rank called something else: the status classes alone cannot tell them apart, the entries' names do.

Built from the real H100 capture (fixtures/hang/nccl/mismatch3/fr, rank 0's dump for every rank), the
odd rank's dump changed in one entry's name only.
"""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest

from tests.conftest import run_json

FIX = Path(__file__).resolve().parent.parent / "fixtures" / "hang" / "nccl" / "mismatch3" / "fr"
N = 40


def _set(d: Path, odd: int, back: int) -> int:
    """N ranks; the odd rank's entry ``back`` from the end is a broadcast. Returns its sequence number."""
    doc = pickle.loads((FIX / "nccl_trace_rank_0").read_bytes())  # our own fixture: trusted
    doc["pg_config"]["0"]["ranks"] = str(list(range(N)))
    same = pickle.dumps(doc)
    e = doc["entries"][-back]
    doc["entries"][-back] = dict(e, profiling_name="nccl:broadcast")
    d.mkdir()
    for r in range(N):
        (d / f"nccl_trace_rank_{r}").write_bytes(pickle.dumps(doc) if r == odd else same)
    return int(e["collective_seq_id"])


@pytest.mark.parametrize("odd,back", [(0, 1), (29, 1), (39, 3)])
def test_one_class_of_status_with_a_rank_that_called_something_else(tmp_path: Path, odd: int, back: int) -> None:
    from commdoctor.loaders.flight_recorder import FULL_READ_RANKS, load_dumps_at_scale

    assert N > FULL_READ_RANKS
    seq = _set(tmp_path / "fr", odd, back)
    dumps, errors = load_dumps_at_scale([str(tmp_path / "fr")])
    assert not errors and sum(1 for d in dumps if not d.notes) == 2  # the odd rank read on its own
    doc, _ = run_json("hang", "--fr", str(tmp_path / "fr"))
    v = doc["verdict"]
    assert v["code"] == "HANG011" and v["ranks"] == [odd], v["title"]
    assert f"#{seq} is all_reduce" in v["title"] and f"broadcast at job.py:69 on rank {odd}" in v["title"]


def test_ranks_with_the_same_calls_still_share_one_read(tmp_path: Path) -> None:
    from commdoctor.loaders.flight_recorder import load_dumps_at_scale

    doc = pickle.loads((FIX / "nccl_trace_rank_0").read_bytes())
    doc["pg_config"]["0"]["ranks"] = str(list(range(N)))
    for r in range(N):
        for e in doc["entries"]:  # each rank's own times: the bytes differ, the calls do not
            e["time_created_ns"] += 1000 * r
        (tmp_path / f"nccl_trace_rank_{r}").write_bytes(pickle.dumps(doc))
    dumps, errors = load_dumps_at_scale([str(tmp_path)])
    assert not errors and len(dumps) == N and sum(1 for d in dumps if not d.notes) == 1
