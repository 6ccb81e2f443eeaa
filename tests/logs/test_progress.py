"""The progress meter: drawn on a terminal after its delay, silent otherwise (pipes, --json)."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

from commdoctor.render import progress as progress_mod
from commdoctor.render.progress import progress

REPO = Path(__file__).resolve().parents[2]


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_meter_draws_on_a_terminal_after_the_delay_and_clears(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(progress_mod, "DELAY_S", 0.0)
    out = Tty()
    with progress(200, "reading logs", stream=out) as p:
        p.advance(100)
    text = out.getvalue()
    assert "reading logs: 100/200 (50%)" in text
    assert text.endswith("\r\x1b[K")  # the line is cleared, so the report starts on a clean line


def test_meter_is_silent_off_a_terminal_and_before_its_delay(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(progress_mod, "DELAY_S", 0.0)
    pipe = io.StringIO()
    with progress(10, "x", stream=pipe) as p:
        p.advance(5)
    assert pipe.getvalue() == ""
    monkeypatch.setattr(progress_mod, "DELAY_S", 60.0)
    tty = Tty()
    with progress(10, "x", stream=tty) as p:
        p.advance(5)
    assert tty.getvalue() == ""  # a short scan prints nothing


def test_logs_json_in_a_pipe_writes_no_meter(tmp_path: Path) -> None:
    log = tmp_path / "rank0.log"
    log.write_text("node01:1:1 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>\n" * 2000)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    r = subprocess.run([sys.executable, "-m", "commdoctor", "logs", "--json", str(log)],
                       capture_output=True, text=True, timeout=120, env=env)
    assert "reading logs" not in r.stderr
    assert r.stdout.lstrip().startswith("{")
