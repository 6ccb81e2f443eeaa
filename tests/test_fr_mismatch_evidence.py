"""A flight-recorder mismatch among many ranks: the evidence gives one line per distinct call, the odd
rank's first, where it gave the first 16 ranks' lines (all alike, the odd rank's call missing when it is a
high rank). Sets built as tests/test_fr_same_status.py builds them, from the real H100 capture."""

from __future__ import annotations

import random
from pathlib import Path

from tests.conftest import run_json
from tests.test_fr_same_status import N, _set


def test_the_odd_ranks_call_is_in_the_evidence_whatever_its_rank(tmp_path: Path) -> None:
    odd = random.Random().choice([N - 1, N - 2, 17 + random.randrange(N - 19)])  # past the first 16
    seq = _set(tmp_path / "fr", odd, 1)
    doc, _ = run_json("hang", "--fr", str(tmp_path / "fr"))
    v = doc["verdict"]
    assert v["code"] == "HANG011" and v["ranks"] == [odd], (odd, v["title"])
    texts = [e["text"] for e in v["evidence"] if f"#{seq}:" in e["text"]]
    assert len(texts) == 2, (odd, texts)
    assert f"rank {odd}: broadcast" in texts[0], (odd, texts)
    assert "all_reduce" in texts[1] and texts[1].split(": ")[1].startswith("ranks 0-"), (odd, texts)
