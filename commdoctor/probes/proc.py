"""Bounded subprocesses: every child commdoctor starts is killed at its deadline.

Promise: ``run_bounded`` returns within ``timeout`` plus a small grace period
whatever the child does, killing its whole process group on overrun.
"""

from __future__ import annotations

import os
import signal
import subprocess
from dataclasses import dataclass
from typing import Mapping, Sequence


@dataclass
class Completed:
    returncode: int | None
    stdout: str
    stderr: str
    timed_out: bool


def kill_group(p: subprocess.Popen[str]) -> None:
    """Kill a child started with ``start_new_session=True`` and all it spawned."""
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        try:
            p.kill()
        except ProcessLookupError:
            pass


def run_bounded(
    argv: Sequence[str],
    timeout: float,
    env: Mapping[str, str] | None = None,
    input: str | None = None,
    cwd: str | None = None,
) -> Completed:
    try:
        p = subprocess.Popen(
            list(argv),
            stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            errors="replace",
            env=dict(env) if env is not None else None,
            cwd=cwd,
            start_new_session=True,
        )
    except OSError as e:
        return Completed(None, "", f"{type(e).__name__}: {e}", False)
    try:
        out, err = p.communicate(input=input, timeout=timeout)
        return Completed(p.returncode, out, err, False)
    except subprocess.TimeoutExpired:
        kill_group(p)
        try:
            out, err = p.communicate(timeout=2)
        except subprocess.TimeoutExpired:
            out, err = "", ""
        return Completed(p.returncode, out or "", err or "", True)
