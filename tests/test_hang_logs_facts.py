"""The hang stage's log facts: the loader loads, the hang check diagnoses (issue 16: loaders never judge)."""

from __future__ import annotations

from pathlib import Path

from commdoctor.checks.hang import log_signals
from commdoctor.loaders.hang_logs import HangLogs, load_hang_logs

FIX = Path(__file__).resolve().parent.parent / "fixtures" / "hang" / "logs"


def test_the_loader_returns_the_run_model_and_no_verdict() -> None:
    files = sorted(str(p) for p in FIX.glob("rank*.log"))
    facts = load_hang_logs(files + ["/nonexistent/rank9.log"], {})
    assert facts.paths == tuple(files)  # a file that is not there is left out
    assert facts.model is not None and facts.lines == ()
    assert not hasattr(facts.model, "code")  # facts, not findings


def test_a_model_the_diagnosis_cannot_read_falls_back_to_the_scan_of_the_files() -> None:
    files = sorted(str(p) for p in FIX.glob("rank*.log"))
    broken = HangLogs(tuple(files), {}, model=object())  # the engine raises on it
    lines = log_signals(broken)
    assert lines and all("code" not in ln for ln in lines)
    assert any("Timed out waiting" in ln["text"] for ln in lines)
    assert {ln["rank"] for ln in lines} & {0, 1, 2}  # the rank from each file's name


def test_no_log_files_give_no_lines() -> None:
    assert log_signals(load_hang_logs(["/nonexistent/a.log"])) == []
    assert log_signals(None) == []
