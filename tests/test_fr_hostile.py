"""Hostile flight-recorder dumps through ``hang --fr --json`` and ``report --fr --bundle`` (issue #18).

Each case puts one crafted file as rank 1 beside a real NCCL dump (rank 0, from an H100 run) and runs
both commands in this process. A file that is no dump becomes one HANG020 finding naming it; rank 0's
dump is still read; no command takes a traceback or blows up on the bad file (``BLOWUP_S`` of CPU: the
failures these files caught cost 13 s or never ended; each takes under a second alone, and
bench/fuzz_readers.py measures the speed); a pickle global is never resolved (its payload would create
a folder).
"""

from __future__ import annotations

import json
import os
import pickle
import resource
import tarfile
from pathlib import Path
from typing import Any

import pytest

import fuzz_inputs as F

NCCL = Path(__file__).resolve().parent.parent / "fixtures" / "hang" / "nccl" / "straggler3" / "fr"
GLOO_JSON = Path(__file__).resolve().parent.parent / "fixtures" / "hang" / "straggler" / "fr" / "json"


#: CPU seconds one command may take on a hostile file: far below what a blow-up costs, far above the 0.8 s the
#: largest case takes alone (2.0 s was measured with the suite's four workers on two cores).
BLOWUP_S = 5.0


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _nccl_doc() -> dict[str, Any]:
    return pickle.loads((NCCL / "nccl_trace_rank_1").read_bytes())  # a real dump of this repository's fixtures


def _memo_bomb() -> bytes:
    """The issue's 252-byte pickle: memo references that describe 2^30 list nodes."""
    shared: list[Any] = []
    for _ in range(30):
        shared = [shared, shared]
    return pickle.dumps({"entries": [{"profiling_name": "nccl:all_reduce", "input_sizes": shared}]}, protocol=2)


def _huge_sizes() -> bytes:
    """About 5 MB: one real entry repeated 1,000 times, holding ten size lists of 250,000 elements."""
    doc = _nccl_doc()
    lists = [[1] * 250_000 for _ in range(10)]
    entry = dict(doc["entries"][-1], input_sizes=lists, output_sizes=lists)
    return pickle.dumps(dict(doc, entries=[entry] * 1000), protocol=4)


def _shared_members(n: int, groups: int) -> bytes:
    """2 MB: one member list of ``n`` ranks, pickled once and referenced by ``groups`` groups that entries use
    (analysed once per group, it cost 13 s of CPU)."""
    doc = _nccl_doc()
    ranks = str(list(range(n)))
    cfg = {str(g): {"name": str(g), "desc": f"g{g}", "ranks": ranks} for g in range(groups)}
    entries = [dict(e, process_group=(str(g), f"g{g}")) for g in range(groups) for e in doc["entries"][-2:]]
    return pickle.dumps(dict(doc, pg_config=cfg, entries=entries), protocol=4)


def _json_doc(**change: Any) -> dict[str, Any]:
    doc = json.loads((GLOO_JSON / "rank1.json").read_text())
    doc["entries"][-1].update(change)
    return doc


#: name -> (bytes of rank 1's file, whether it must be refused as no dump). The memo bomb is refused by the
#: bundle's copy, which walks every element; hang's reader takes only the fields it knows (one entry, whose
#: size list holds no integers) and reads it.
CASES: dict[str, tuple[Any, bool]] = {
    "memo bomb": (_memo_bomb, True),
    "ten 250,000-element size lists in 1,000 entries": (_huge_sizes, True),
    "a dict key of 2^40 shared tuples": (lambda: F._hash_bombs(40)[-1], True),
    "a set of 2^40 shared tuples": (lambda: F._hash_bombs(40)[3], True),
    "REDUCE of a global": (lambda: F._global_payloads()[-1], True),
    "INST": (lambda: F._global_payloads()[1], True),
    "persistent id": (lambda: F._global_payloads()[5], True),
    "truncated pickle": (lambda: (NCCL / "nccl_trace_rank_1").read_bytes()[:2000], True),
    "100,000-deep JSON": (lambda: b'{"entries": [' + b"[" * 100_000 + b"]" * 100_000 + b"]}", True),
    "JSON with Infinity and NaN": (lambda: json.dumps(_json_doc(timeout_ms=float("inf"), collective_seq_id=float("nan")))
                                   .encode(), False),
    'JSON "input_dtypes": 7': (lambda: json.dumps(_json_doc(input_dtypes=7, input_sizes=True, frames=[7])).encode(),
                               False),
    "a 5,000-digit sequence number and member list": (lambda: pickle.dumps(dict(
        _nccl_doc(), pg_config={"0": {"name": "0", "desc": "default_pg", "ranks": "[" + "9" * 5000 + "]"}},
        entries=[dict(e, collective_seq_id=10 ** 5000, input_sizes=[[10 ** 5000]]) for e in _nccl_doc()["entries"]]),
        protocol=4), False),
    "a member list nested 100,000 deep": (lambda: pickle.dumps(dict(
        _nccl_doc(), pg_config={"0": {"name": "0", "desc": "default_pg", "ranks": "[" * 100_000}}), protocol=4), False),
    "one 262,144-rank member list shared by 50 groups": (lambda: _shared_members(2 ** 18, 50), True),
    "lone surrogates": (lambda: json.dumps(_json_doc(profiling_name="gloo:\ud800", state="\udfff")).encode(), False),
}


@pytest.fixture(scope="module", autouse=True)
def _warm() -> None:
    """Import what the commands reach once, so the timings below are the input's own."""
    F.feed_fr({"nccl_trace_rank_0": (NCCL / "nccl_trace_rank_0").read_bytes()})


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_hostile_dump_is_one_finding_and_the_good_one_is_still_read(case: str, tmp_path: Path) -> None:
    make, refused = CASES[case]
    fr = tmp_path / "fr"
    fr.mkdir()
    (fr / "nccl_trace_rank_0").write_bytes((NCCL / "nccl_trace_rank_0").read_bytes())
    bad = fr / "nccl_trace_rank_1"
    bad.write_bytes(make())

    c0 = _cpu()
    rc, out, _ = F._cli(["hang", "--fr", str(fr), "--json"])  # raises on a traceback or exit 3
    hang_cpu = _cpu() - c0
    doc = json.loads(out)
    assert not [r for r in doc["results"] if r["status"] in ("crashed", "timed_out")]
    named = [f for f in doc["findings"] if f["code"] == "HANG020"]
    if refused and case != "memo bomb":
        assert len(named) == 1 and str(bad) in json.dumps(named[0]), named
    else:
        assert not named, named
    signals = next(r for r in doc["results"] if r["check"] == "hang.verdict")["data"]["signals"]
    assert any("flight-recorder dumps of" in s for s in signals), signals  # rank 0 is still diagnosed
    assert hang_cpu < BLOWUP_S, f"hang --fr took {hang_cpu:.2f} s of CPU"

    c0 = _cpu()
    rc, _, _ = F._cli(["report", "--no-checks", "--no-system", "--fr", str(fr), "-o", str(tmp_path / "r"),
                       "--bundle", str(tmp_path / "b.tar.gz")])
    report_cpu = _cpu() - c0
    assert rc in (0, 1)
    with tarfile.open(tmp_path / "b.tar.gz") as t:
        names = t.getnames()
        copies = [n for n in names if n.startswith("commdoctor-bundle/flight-recorder/")]
        assert len(copies) == 2, names
        rank1 = json.loads(t.extractfile(sorted(copies)[1]).read())  # type: ignore[union-attr]
    assert ("unreadable" in rank1) == refused, rank1
    assert report_cpu < BLOWUP_S, f"report --fr took {report_cpu:.2f} s of CPU"
    assert not os.path.exists(F.canary())


def test_a_truncated_dump_is_named_as_cut_short(tmp_path: Path) -> None:
    """A rank that died while writing its dump leaves a pickle cut short: the finding says so in words,
    not with the unpickler's own error; a whole dump that is otherwise broken keeps the unpickler's reason."""
    fr = tmp_path / "fr"
    fr.mkdir()
    (fr / "nccl_trace_rank_0").write_bytes((NCCL / "nccl_trace_rank_0").read_bytes())
    whole = (NCCL / "nccl_trace_rank_1").read_bytes()
    bad = fr / "nccl_trace_rank_1"
    bad.write_bytes(whole[: len(whole) // 2])
    _, out, _ = F._cli(["hang", "--fr", str(fr), "--json"])
    named = [f for f in json.loads(out)["findings"] if f["code"] == "HANG020"]
    assert len(named) == 1 and "cut short" in json.dumps(named[0]), named

    # Near-miss: a complete pickle (it ends with STOP) that is still unreadable is not called truncated.
    bad.write_bytes(b"\x80\x04\x95\xff\x00\x00\x00\x00\x00\x00\x00.")
    _, out, _ = F._cli(["hang", "--fr", str(fr), "--json"])
    named = [f for f in json.loads(out)["findings"] if f["code"] == "HANG020"]
    assert len(named) == 1 and "cut short" not in json.dumps(named[0]) and "unreadable" in json.dumps(named[0]), named
