"""Hooks records of many ranks: the fast readers give what the line-by-line reader gives, and the
findings name the odd rank in a few words.

Sets are written by the hooks' own writer (commdoctor.hooks.recorder.Recorder, driven on a simulated
clock by bench/records_scale.py), as a training job's ranks would write them.
"""

from __future__ import annotations

import importlib.util
import json
import os
from pathlib import Path
from typing import Any

import pytest

from commdoctor.core import records
from commdoctor.loaders import hook_records
from tests.conftest import run_json

REPO = Path(__file__).resolve().parent.parent


def _bench() -> Any:
    spec = importlib.util.spec_from_file_location("records_scale", REPO / "bench" / "records_scale.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


# -- one line: the fast path gives json.loads' answer, or steps aside --------------------------------

def _reference(raw: bytes) -> dict[str, Any] | None:
    """What iter_lines gave before the fast path: json.loads, then the schema and type checks."""
    try:
        d = json.loads(raw.decode("utf-8"), parse_constant=records._no_constant)
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None
    if not isinstance(d, dict) or d.get("schema") != records.SCHEMA or records.damaged(d) is not None:
        return None
    return d


GOOD = (b'{"schema":"commdoctor.hooks/1","kind":"enter","seq":7,"rank":3,"group":"0","op":"all_reduce",'
        b'"reduce_op":"SUM","dtype":"float32","shapes":[[4]],"numel":4,"peer":null,"root":null,"device":"cpu",'
        b'"async_op":false,"site":"train.py:9","time":1764000000.123456}')
LINES = [
    GOOD,
    GOOD.replace(b'"kind":"enter"', b'"kind":"exit"'),
    GOOD.replace(b'"seq":7', b'"seq":-3'),                       # point-to-point numbering
    GOOD.replace(b'"seq":7', b'"seq":07'),                       # not JSON
    GOOD.replace(b'"seq":7', b'"seq":99999999999999999999'),     # past 64 bits: damaged
    GOOD.replace(b'1764000000.123456', b'1e5'),                  # JSON, but not the writer's form
    GOOD.replace(b'1764000000.123456', b'17'),                   # an int time: JSON gives an int
    GOOD.replace(b'1764000000.123456', b'NaN'),
    GOOD.replace(b'"rank":3', b'"rank":3,"seq":8'),              # a duplicate key overrides the outer seq
    GOOD.replace(b'"rank":3', b'"rank":3,"rank":5'),             # two ranks: the last one counts
    GOOD.replace(b'"rank":3', b'"rank":4194304'),                # beyond MAX_WORLD: damaged
    GOOD.replace(b'"shapes":[[4]]', b'"shapes":"x"'),            # wrong type: damaged
    GOOD.replace(b'train.py:9', b'tr\xffin.py:9'),               # not UTF-8
    GOOD.replace(b'train.py:9', b'train.py:9\\",\\"rank\\":7'),  # an escaped quote inside the site
    GOOD.replace(b'","op"', b'", "op"'),                        # a space: JSON, not the writer's form
    GOOD[:-1],                                                   # cut short
    GOOD + b" ",
]


def test_a_call_line_reads_as_json_loads_reads_it(tmp_path: Path) -> None:
    f = tmp_path / "hooks-rank3.jsonl"
    f.write_bytes(b"\n".join(LINES) + b"\n")
    got = list(records.iter_lines(str(f)))
    want = [_reference(raw) for raw in LINES]
    assert got == want
    # The fast path did serve the plain lines (a tuple per line), and stepped aside for the others.
    kinds = [type(x).__name__ for x in records.iter_entries(str(f))]
    assert kinds[:3] == ["tuple", "tuple", "tuple"] and "dict" in kinds and "NoneType" in kinds


# -- a whole set: bulk reading equals reading line by line -------------------------------------------

def _norm(rec: hook_records.HookRecords | None) -> Any:
    assert rec is not None

    def call(c: hook_records.Call) -> Any:
        return [c.rank, c.group, c.seq, c.op, c.reduce_op, c.dtype, repr(c.shapes), c.root, c.site, c.time,
                os.path.basename(c.path), c.line]

    return {
        "ranks": {r: [p.host, p.pid, p.world_size, repr(p.last_entered), repr(p.last_completed), p.bad_lines,
                      os.path.basename(p.path or ""), repr(p.mismatches), p.warnings] for r, p in rec.ranks.items()},
        "groups": {k: {"entered": {r: call(c) for r, c in g.entered.items()}, "completed": g.completed,
                       "history": {r: [call(h[s]) for s in sorted(h)] for r, h in g.history.items()}}
                   for k, g in rec.groups.items()},
        "rest": [repr(rec.mismatches), rec.warnings, rec.world_size, rec.bad_lines, rec.last_time,
                 sorted(rec.last_seen.items()), rec.truncated],
    }


def test_a_large_set_read_in_bulk_is_what_reading_every_line_gives(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    bench = _bench()
    d = tmp_path / "set"
    bench.make_set(d, 24, 120, "mismatch", 13, 4)
    # Damage: a cut last line, a time that is not a number, a line of another rank, junk bytes.
    for r, old, new in ((2, None, None), (5, b'"time":', b'"time":"x",'), (7, b'"rank":7,', b'"rank":8,'),
                        (9, None, b"\xff\xfe junk")):
        p = d / f"hooks-rank{r}.jsonl"
        data = p.read_bytes()
        if r == 2:
            data = data[:-40]
        elif old is None:
            data += new or b""
        else:
            assert new is not None
            i = data.index(b'"kind":"enter"', len(data) // 2)
            j = data.index(old, i)
            data = data[:j] + new + data[j + len(old):]
        p.write_bytes(data)
    calls: list[int] = []
    real_like = hook_records._Loader.like

    def counting_like(self: Any, *a: Any) -> None:
        calls.append(a[1].rank)
        real_like(self, *a)

    monkeypatch.setattr(hook_records._Loader, "like", counting_like)
    bulk = _norm(hook_records.load([str(d)]))
    assert len(calls) >= 15  # most ranks were read in bulk (4 timings, the odd rank, the damaged ones apart)
    monkeypatch.setattr(hook_records, "BULK_MAX", -1)  # every file line by line
    assert _norm(hook_records.load([str(d)])) == bulk
    assert bulk["rest"][3] >= 3  # the damaged lines are counted


# -- what a user sees at scale --------------------------------------------------------------------------

@pytest.fixture(scope="module")
def sets(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, int], tuple[Path, int, str]]:
    bench = _bench()
    root = tmp_path_factory.mktemp("recsets")
    out = {}
    for fault, odd in (("straggler", 0), ("straggler", 37), ("mismatch", 63), ("silent", 5)):
        d = root / f"{fault}{odd}"
        seq, op = bench.make_set(d, 64, 150, fault, odd, 3)
        out[(fault, odd)] = (d, seq, op)
    return out


@pytest.mark.parametrize("fault,odd", [("straggler", 0), ("straggler", 37), ("mismatch", 63), ("silent", 5)])
def test_records_of_64_ranks_name_the_odd_rank_in_a_few_words(sets: Any, fault: str, odd: int) -> None:
    d, seq, op = sets[(fault, odd)]
    doc, _ = run_json("records", str(d))
    v = doc["verdict"]
    others = ", ".join(x for x in (f"0-{odd - 1}" if odd > 1 else "0" if odd == 1 else "",
                                   f"{odd + 1}-63" if odd < 63 else "") if x)
    others = others.replace(", ", " and ")
    if fault == "straggler":
        assert v["code"] == "HOOK010" and v["ranks"][0] == odd
        assert v["title"].startswith(f"rank {odd} never entered #{seq} ")
        assert f"while ranks {others} wait in all_reduce(SUM)" in v["title"]
    else:
        assert v["code"] == "HOOK005" and f"#{seq} of the default group" in v["title"]
        texts = [e["text"] for e in v["evidence"]]
        assert texts[0].startswith(f"rank {odd} entered {op}") and f"#{seq}" in texts[0]
        assert texts[1].startswith(f"ranks {others} entered all_reduce(SUM)")
    assert len(v["evidence"]) <= 3  # one line per distinct call, not one per rank
    if fault != "silent":
        hang, _ = run_json("hang", "--records", str(d))
        assert hang["verdict"]["code"] in ("HANG010", "HANG011") and f"rank {odd}" in hang["verdict"]["title"]
