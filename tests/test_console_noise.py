"""The console shows what bears on the question (issue 20, "Noise").

Real ``commdoctor logs`` and ``hang`` runs on real captures: the hooks checks,
which need records these runs were not given, are not listed as skipped and
leave no empty stage heading; ``-v`` and ``--json`` still have them; a skip
that does bear on the answer (``hang`` without stacks) is still shown.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
STAGES = ("environment", "interfaces", "rendezvous", "pg_init", "collectives", "logs", "hang")
HOOKS_CHECKS = {"hooks.mismatch", "hooks.records", "hooks.backend", "hooks.progress"}


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_COLOR": "1"}
    return subprocess.run([sys.executable, "-m", "commdoctor", *args], capture_output=True, text=True, timeout=120,
                          cwd=str(REPO), env=env, stdin=subprocess.DEVNULL)


def sections(out: str) -> dict[str, list[str]]:
    """Stage heading -> the lines printed under it (up to the next blank line)."""
    found: dict[str, list[str]] = {}
    cur: list[str] | None = None
    for line in out.splitlines():
        if line in STAGES:
            cur = found.setdefault(line, [])
        elif not line.strip():
            cur = None
        elif cur is not None:
            cur.append(line)
    return found


CASES = {
    "logs": ("logs", "fixtures/logs/nccl-peer-died"),
    "hang": ("hang", "--stacks", "fixtures/hang/straggler"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_checks_not_given_their_input_are_not_listed(case: str) -> None:
    p = cli(*CASES[case])
    assert p.returncode == 1, p.stderr
    out = p.stdout
    assert "commdoctor.hooks" not in out and "no progress records given" not in out
    assert "skipped" not in out
    secs = sections(out)
    assert secs, out
    for name, lines in secs.items():
        assert any(ln.startswith("[") for ln in lines), f"stage {name!r} printed with no check under it:\n{out}"
    assert "2 checks: 1 passed, 1 failed;" in out  # counts what is shown


@pytest.mark.parametrize("case", sorted(CASES))
def test_verbose_and_json_still_have_them(case: str) -> None:
    v = cli(*CASES[case], "-v")
    assert v.stdout.count("skipped: no progress records given") == 4, v.stdout
    assert "6 checks: 1 passed, 1 failed, 4 skipped" in v.stdout
    j = cli(*CASES[case], "--json")
    doc = json.loads(j.stdout)
    skipped = {r["check"]: r for r in doc["results"] if r["status"] == "skipped"}
    assert set(skipped) == HOOKS_CHECKS
    assert all(r["data"].get("not_applicable") is True and r["reason"] for r in skipped.values())
    assert doc["counts"]["skipped"] == 4


def test_a_skip_that_bears_on_the_answer_is_still_shown() -> None:
    """``hang`` on flight-recorder dumps alone: no stacks is part of the answer, so it is said."""
    p = cli("hang", "--fr", "fixtures/hang/mismatch/fr")
    assert "[-] Ranks and their stacks" in p.stdout and "skipped: no stacks" in p.stdout
    assert "commdoctor.hooks" not in p.stdout
    assert "2 checks: 1 failed, 1 skipped;" in p.stdout
