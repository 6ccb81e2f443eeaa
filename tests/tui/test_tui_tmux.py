"""The real ``commdoctor view`` in a real terminal (tmux): send keys, read the screen with capture-pane."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Iterator

import pytest

from tuikit import FIXTURES, REPO

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")


class Tmux:
    """One detached tmux server of our own (its own socket), killed at the end."""

    def __init__(self, width: int = 100, height: int = 30) -> None:
        self.sock = f"cdtui-{uuid.uuid4().hex[:8]}"
        self.width, self.height = width, height

    def tmux(self, *args: str, check: bool = True) -> str:
        p = subprocess.run(["tmux", "-L", self.sock, *args], capture_output=True, text=True, timeout=20)
        if check and p.returncode != 0:
            raise AssertionError(f"tmux {' '.join(args)}: {p.stderr}")
        return p.stdout

    def start(self, command: str, env: dict[str, str] | None = None) -> None:
        envs = " ".join(f"{k}={shlex.quote(v)}" for k, v in (env or {}).items())
        # After the command, print its exit status and keep the pane open so it can be read.
        shell = f"cd {shlex.quote(str(REPO))} && env {envs} {command}; echo COMMDOCTOR-EXIT=$?; sleep 120"
        self.tmux("new-session", "-d", "-x", str(self.width), "-y", str(self.height), "-s", "t", shell)

    def screen(self, escapes: bool = False) -> str:
        return self.tmux("capture-pane", "-p", *(["-e"] if escapes else []), "-t", "t")

    def keys(self, *keys: str) -> None:
        for k in keys:
            self.tmux("send-keys", "-t", "t", k)
            time.sleep(0.15)

    def wait_for(self, pattern: str, timeout: float = 60.0) -> str:
        end = time.monotonic() + timeout
        text = ""
        while time.monotonic() < end:
            text = self.screen()
            if re.search(pattern, text):
                return text
            time.sleep(0.2)
        raise AssertionError(f"{pattern!r} not on screen within {timeout} s; screen was:\n{text}")

    def close(self) -> None:
        self.tmux("kill-server", check=False)


@pytest.fixture
def term() -> Iterator[Tmux]:
    t = Tmux()
    try:
        yield t
    finally:
        t.close()


def view_cmd(*args: str) -> str:
    return " ".join([shlex.quote(sys.executable), "-m", "commdoctor", "view", *map(shlex.quote, args)])


def env() -> dict[str, str]:
    # The repo first, then whatever PYTHONPATH already carries (on some hosts, the dependencies themselves).
    path = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p)
    return {"PYTHONPATH": path, "TERM": "xterm-256color"}


def test_view_in_a_terminal(term: Tmux) -> None:
    term.start(view_cmd(str(FIXTURES / "hang-16ranks.json")), env())
    first = term.wait_for(r"Verdict: HANG901")
    assert "Findings (2)" in first and "Ranks (16)" in first
    assert re.search(r"error\s+HANG901\s+rank 11 on node-b", first)  # the findings list, most severe first
    term.keys("3")
    grid = term.wait_for(r"node-b\s+8 C")
    assert re.search(r"node-a\s+0 C\s+1 C", grid)
    assert "11 L*" in grid  # the odd rank, marked as named by the verdict
    term.keys("Enter")  # on rank 0: its stack
    stack = term.wait_for(r"stack \(innermost first\)")
    assert "all_reduce" in stack and "train.py:88" in stack
    # Back to the grid before the next key: an escape byte followed too closely by "2" reads as Alt+2 (the app
    # waits a moment after ESC for the rest of a key sequence), which a loaded machine makes likely.
    term.keys("Escape")
    term.wait_for(r"node-b\s+8 C")
    term.keys("2", "Enter")
    detail = term.wait_for(r"Evidence")
    assert "stack:rank11" in detail
    term.keys("q")
    done = term.wait_for(r"COMMDOCTOR-EXIT=\d+")
    assert "COMMDOCTOR-EXIT=1" in done  # the report holds an error: exit 1, as documented


def test_view_jumps_to_log_evidence(term: Tmux, tmp_path: Path) -> None:
    dst = tmp_path / "r"
    shutil.copytree(FIXTURES, dst, ignore=shutil.ignore_patterns("*.py", "*.md"))
    term.start(view_cmd(str(dst / "logs-job.json")), env())
    term.wait_for(r"Verdict: LOG901")
    term.keys("Enter")
    term.wait_for(r"Evidence \(enter or e opens")
    term.keys("e")
    log = term.wait_for(r"680▶ node02:1019:3019 \[3\] include/alloc.h:114 NCCL WARN")
    assert "line 680 of 1,389" in log
    term.keys("s")
    saved = term.wait_for(r"logs-job-support\.|support report")
    end = time.monotonic() + 60  # the report is written beside the screen: wait for the file, bounded
    while not (dst / "logs-job-support.json").exists() and time.monotonic() < end:
        time.sleep(0.2)
    assert (dst / "logs-job-support.json").exists() and (dst / "logs-job-support.md").exists(), saved
    term.keys("q")
    term.wait_for(r"COMMDOCTOR-EXIT=1")


def test_no_color_has_no_hue(term: Tmux) -> None:
    term.start(view_cmd(str(FIXTURES / "run-mixed.json")), {**env(), "NO_COLOR": "1", "COLORTERM": "truecolor"})
    term.wait_for(r"Verdict: ENV022")
    time.sleep(0.5)
    raw = term.screen(escapes=True)
    colours = re.findall(r"\x1b\[[0-9;]*?(?:38|48);2;(\d+);(\d+);(\d+)", raw)
    hues = {(r, g, b) for r, g, b in colours if len({r, g, b}) > 1}
    assert colours, "expected the screen to be drawn with explicit (grey) colours"
    assert not hues, f"colours with a hue under NO_COLOR: {sorted(hues)[:5]}"
    term.keys("q")
    term.wait_for(r"COMMDOCTOR-EXIT=\d+")
