"""`commdoctor logs --json` (its pipeline, in this process) on real two-host torchrun gloo jobs (fixtures/logs/multihost, see its PROVENANCE.md).

Each case is a folder with one log per host, as a user saves them, and the cause the job was made to fail
with; healthy runs must get no cause at all. The jobs themselves are made by bench/multihost_logs/gen.py
(too slow for the suite); these are their saved output.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from logs.test_corpus import diagnose_file

ROOT = Path(__file__).resolve().parents[2]
CASES = sorted(p for p in (ROOT / "fixtures" / "logs" / "multihost").iterdir() if (p / "truth.json").exists())


def test_there_are_cases_of_each_kind() -> None:
    labels = {json.loads((c / "truth.json").read_text())["root_cause"] for c in CASES}
    assert len(CASES) >= 12 and "none" in labels and len(labels) >= 8


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_logs_names_the_cause_of_a_two_host_job(case: Path) -> None:
    want = json.loads((case / "truth.json").read_text())["root_cause"]
    doc = diagnose_file(case / "logs")  # `logs --json` in this process (tests/logs/test_cli.py runs the command)
    causes = [f["cause"] for f in doc["findings"] if f.get("cause")]
    if want == "none":
        assert causes == [], f"a healthy job got {causes}"
    else:
        assert causes and causes[0] == want, f"want {want}, got {causes[:3]}"
