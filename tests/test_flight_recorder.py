"""commdoctor's own flight-recorder reader on real gloo dumps (fixtures/hang/*/fr, see capture.py)."""

from __future__ import annotations

import os
import pickle
import shutil
from pathlib import Path

import pytest

from commdoctor.loaders.flight_recorder import analyze, load_dumps, rank_from_name, read_dump
from tests.hang_fixtures import mark_line

FIX = Path(__file__).resolve().parent.parent / "fixtures" / "hang"


@pytest.mark.parametrize("sub", ["fr", "fr/json"])
def test_straggler_dump_names_the_missing_rank_not_the_waiting_ones(sub: str) -> None:
    dumps, errors = load_dumps([str(FIX / "straggler" / sub)])
    assert not errors and sorted(d.rank for d in dumps) == [0, 1, 2, 3]
    (g,) = analyze(dumps)
    assert g.ranks == [0, 1, 2, 3]  # found although gloo keys pg_config by '' and entries by ('0', 'default_pg')
    assert g.front_op == "all_reduce"
    assert sorted(g.waiting) == [0, 1, 2]
    assert sorted(g.missing) == [3]
    last = g.missing[3]
    assert last is not None and last.completed and last.seq == g.front_seq - 1


def test_pickle_dump_carries_the_user_line_of_each_call() -> None:
    dumps, _ = load_dumps([str(FIX / "straggler" / "fr")])
    (g,) = analyze(dumps)
    site = g.waiting[0].user_frame
    assert site is not None and site.where == f"hangjob.py:{mark_line('straggler-allreduce')}"


def test_gloo_entries_are_scheduled_and_completion_is_retired() -> None:
    d = read_dump(str(FIX / "straggler" / "fr" / "rank0.pkl"))
    assert d.fmt == "pickle" and d.backend == "gloo"
    assert {e.state for e in d.entries} == {"scheduled"}
    assert [e.completed for e in d.entries][-1] is False and all(e.completed for e in d.entries[:-1])
    assert "" in d.pg_config  # the key torchfrtrace trips over


def test_mismatch_dump_finds_the_diverging_sequence_number() -> None:
    dumps, _ = load_dumps([str(FIX / "mismatch" / "fr")])
    (g,) = analyze(dumps)
    assert g.mismatch_seq is not None
    ops = {r: e.op for r, e in g.mismatch.items()}
    assert ops == {0: "all_reduce", 1: "all_reduce", 2: "broadcast"}
    assert g.mismatch[2].user_frame.where == f"hangjob.py:{mark_line('mismatch-broadcast')}"  # type: ignore[union-attr]


def test_rank_comes_from_the_file_name() -> None:
    assert rank_from_name("/tmp/nccl_trace_rank_12") == 12
    assert rank_from_name("fr-rank3.pkl") == 3 and rank_from_name("rank0.json") == 0
    assert rank_from_name("dump.pkl") is None


def test_a_pickle_that_would_run_code_is_refused(tmp_path: Path) -> None:
    class Evil:
        def __reduce__(self):  # type: ignore[no-untyped-def]
            return (os.system, ("touch " + str(tmp_path / "pwned"),))

    p = tmp_path / "rank0.pkl"
    p.write_bytes(pickle.dumps({"entries": [Evil()]}))
    dumps, errors = load_dumps([str(tmp_path)])
    assert not dumps and len(errors) == 1 and "refusing" in errors[0]
    assert not (tmp_path / "pwned").exists()


def test_bad_files_become_errors_not_exceptions(tmp_path: Path) -> None:
    good = FIX / "straggler" / "fr" / "rank0.pkl"
    (tmp_path / "rank1.pkl").write_bytes(good.read_bytes()[:100])  # truncated
    (tmp_path / "rank2.json").write_text("{not json")
    (tmp_path / "rank3.json").write_text('{"hello": 1}')
    (tmp_path / "rank4.bin").write_bytes(os.urandom(64))
    shutil.copy(good, tmp_path / "dump.pkl")  # no rank in the name
    dumps, errors = load_dumps([str(tmp_path)])
    assert dumps == [] and len(errors) == 5


def test_the_cli_reads_dumps_alone_and_names_rank_3() -> None:
    from tests.conftest import findings, run_json

    doc, p = run_json("hang", "--fr", str(FIX / "straggler" / "fr"))
    (f,) = findings(doc, "HANG010")
    assert f["ranks"] == [3] and f["cause"] == "collective_timeout_straggler"
    assert f"hangjob.py:{mark_line('straggler-allreduce')}" in f["title"]
    assert any(e["source"] == "flight recorder:rank3" for e in f["evidence"])


def _memo_bomb(levels: int = 30) -> bytes:
    """A pickle of a few hundred bytes whose memo references describe 2**levels list nodes."""
    shared: list[object] = []
    for _ in range(levels):
        shared = [shared, shared]
    return pickle.dumps({"entries": [{"profiling_name": "nccl:all_reduce", "input_sizes": shared}]}, protocol=2)


def test_a_memo_bomb_is_refused_within_its_budget(tmp_path: Path) -> None:
    import time

    from commdoctor.loaders.flight_recorder import read_plain
    from commdoctor.render.bundle import read_fr_dump

    p = tmp_path / "rank0.pkl"
    p.write_bytes(_memo_bomb())
    assert len(p.read_bytes()) < 400
    t0 = time.monotonic()
    with pytest.raises(ValueError, match="elements"):
        read_plain(str(p))
    dumps, errors = load_dumps([str(tmp_path)])  # hang's reading walks only what it knows: bounded too
    assert not errors and len(dumps[0].entries) == 1
    note = read_fr_dump(str(p), 1 << 20)  # the bundle's, the same reader
    assert "elements" in note["unreadable"]
    assert time.monotonic() - t0 < 5


def test_the_bundle_reads_dumps_with_the_loaders_reader() -> None:
    from commdoctor.render import bundle

    assert not hasattr(bundle, "_PlainUnpickler")
    doc = bundle.read_fr_dump(str(FIX / "straggler" / "fr" / "rank0.pkl"), 1 << 20)
    assert isinstance(doc, dict) and doc["entries"] and "pg_status" in doc


@pytest.mark.parametrize("case,odd,code", [("straggler3", 77, "HANG010"), ("mismatch3", 41, "HANG011")])
def test_a_large_set_is_read_by_status_class_and_names_the_odd_rank(tmp_path: Path, case: str, odd: int,
                                                                     code: str) -> None:
    """96 ranks (above the full-read limit) made of the real NCCL capture: rank 2's dump for the odd
    rank, rank 0's for every other. Only one dump per distinct status is read in full."""
    from commdoctor.loaders.flight_recorder import FULL_READ_RANKS, load_dumps_at_scale
    from tests.conftest import run_json

    src = FIX / "nccl" / case / "fr"
    n = 96
    assert n > FULL_READ_RANKS
    blobs = {}
    for k in (0, 2):  # the group's members say 96 ranks, as they would in such a job
        doc = pickle.loads((src / f"nccl_trace_rank_{k}").read_bytes())  # our own fixture: trusted
        doc["pg_config"]["0"]["ranks"] = str(list(range(n)))
        blobs[k] = pickle.dumps(doc)
    for r in range(n):
        (tmp_path / f"nccl_trace_rank_{r}").write_bytes(blobs[2 if r == odd else 0])
    dumps, errors = load_dumps_at_scale([str(tmp_path)])
    assert not errors and [d.rank for d in dumps] == list(range(n))
    assert sum(1 for d in dumps if not d.notes) == 2  # read in full: one per status class
    doc, p = run_json("hang", "--fr", str(tmp_path))
    v = doc["verdict"]
    assert v["code"] == code and v["ranks"] == [odd]
    assert "reading" not in p.stderr  # no progress line with --json or in a pipe
    others = f"ranks 0-{odd - 1} and {odd + 1}-{n - 1}"
    if code == "HANG011":
        assert f"#17 is all_reduce at job.py:69 on {others}, broadcast at job.py:63 on rank {odd}" in v["title"]
    else:
        assert f"rank {odd} never entered all_reduce #16" in v["title"] and others in v["title"]
