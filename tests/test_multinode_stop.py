"""A multi-node run stopped by its launcher: node 0 prints what it saw, at once, marked interrupted (exit 130).

Real processes with Slurm's variables on loopback (rank 0 hosts the job's store), as in
tests/test_multinode_deadline_loopback.py, and a real SIGTERM, as torchrun passes on when it is
itself stopped (``timeout 60 torchrun ...``) and Slurm sends at a job's time limit or on scancel.
No network namespaces: these run wherever torch does. The torchrun variant on two namespace hosts
is in tests/integration/test_multinode_deadline.py.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from typing import Any, Callable

import pytest

from tests.conftest import REPO, have_torch
from tests import ports

pytestmark = pytest.mark.skipif(not have_torch(), reason="needs torch")

SCRUB = ("MASTER_", "RANK", "WORLD", "SLURM_", "TORCHELASTIC", "LOCAL_", "OMPI_", "PMI", "GROUP_")
#: From the signal to the exit, report printed: "within a second or two" on an idle host; this allows for a
#: loaded one (the report's own figures are printed by the tests).
AFTER_SIGNAL_S = 6.0


def _free_port() -> int:
    return ports.free_port()


class Proc:
    """``commdoctor run`` as one Slurm task; every line of stdout and stderr kept as it comes, with its time."""

    def __init__(self, rank: int, port: int, cwd: Any, *extra: str, env: dict[str, str] | None = None) -> None:
        more = env or {}
        env = {k: v for k, v in os.environ.items() if not k.startswith(SCRUB)}
        env.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), PYTHONPATH=str(REPO), PYTHONUNBUFFERED="1",
                   SLURM_PROCID=str(rank), SLURM_NTASKS="2", SLURM_LOCALID="0", SLURM_NNODES="2",
                   SLURM_NODEID=str(rank), SLURM_JOB_ID="9", **more)
        self.t0 = time.monotonic()
        self.p = subprocess.Popen([sys.executable, "-m", "commdoctor", "run", *extra], stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True, env=env, cwd=str(cwd))
        self.out: list[tuple[float, str]] = []
        self.err: list[tuple[float, str]] = []
        self._threads = [threading.Thread(target=self._pump, args=(s, into), daemon=True)
                         for s, into in ((self.p.stdout, self.out), (self.p.stderr, self.err))]
        for t in self._threads:
            t.start()

    def _pump(self, stream: Any, into: list[tuple[float, str]]) -> None:
        for line in stream:
            into.append((time.monotonic() - self.t0, line))

    def until(self, pred: Callable[[str], bool], which: str = "err", timeout: float = 90.0) -> float:
        """Wait (bounded) for a line of stdout or stderr matching ``pred``; when it came."""
        lines = self.err if which == "err" else self.out
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            for t, line in list(lines):
                if pred(line):
                    return t
            if self.p.poll() is not None and all(not x.is_alive() for x in self._threads):
                break
            time.sleep(0.1)
        raise AssertionError(f"no such line within {timeout:g} s (rc={self.p.poll()}):\n{self.text('out')[-2000:]}\n"
                             f"{self.text('err')[-3000:]}")

    def finish(self, timeout: float) -> float:
        """Wait for the exit; seconds it took."""
        t = time.monotonic()
        try:
            self.p.wait(timeout)
        finally:
            if self.p.poll() is None:
                self.p.kill()
                self.p.wait(5)
            for x in self._threads:
                x.join(5)
        return time.monotonic() - t

    def text(self, which: str) -> str:
        return "".join(line for _, line in (self.out if which == "out" else self.err))


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_signal_while_node_0_waits_for_a_node_gives_the_partial_report(sig: signal.Signals, tmp_path: Any) -> None:
    """Node 1 never starts; node 0 waits for it (--join-timeout 60) and is sent SIGTERM (a launcher) or SIGINT
    (Ctrl-C): it prints the JSON report of what it saw at once, marked interrupted, naming node 1 as never
    seen, and exits 130."""
    port = _free_port()
    p0 = Proc(0, port, tmp_path, "--json", "--join-timeout", "60")
    try:
        joined = p0.until(lambda ln: "joined the job's store" in ln)
        time.sleep(1.0)  # inside the join wait (60 s long), not at its start
        p0.p.send_signal(sig)
        took = p0.finish(30)
    finally:
        if p0.p.poll() is None:
            p0.p.kill()
    print(f"\n{sig.name} {joined + 1:.1f} s after the start, during the join: exit {took:.2f} s later")
    assert p0.p.returncode == 130, p0.text("err")[-3000:]
    assert took < AFTER_SIGNAL_S, f"node 0 took {took:.1f} s to print its report after SIGTERM"
    doc = json.loads(p0.text("out"))
    assert doc["interrupted"] is True and doc["outcome"] == "incomplete"
    assert [n["status"] for n in doc["nodes"]] == ["reported", "never joined"]
    (f,) = [x for x in doc["findings"] if x["code"] == "MN001"]
    assert f["title"].startswith("node-01 never joined: nothing was seen of it in the ")
    assert f["title"].endswith(" s before the run was interrupted"), f["title"]
    assert any("interrupted" in n and "during 'joined'" in n for n in doc["job"]["notes"]), doc["job"]["notes"]
    assert "Traceback" not in p0.text("err")


def test_sigterm_to_every_node_during_the_local_checks(tmp_path: Any) -> None:
    """Both nodes joined and are running their local checks when both get SIGTERM (scancel, a Slurm time
    limit): node 0 prints its console report of what it has, titled incomplete, with both nodes in its
    table; node 1 leaves quietly with one line. Both exit 130."""
    port = _free_port()
    args = ("--no-tui", "--join-timeout", "60")
    # Node 1's local test starts its ranks as new interpreters (as on a GPU host: seconds), so that it is still
    # at work when node 0 prints its first local check; with forked ranks it can be done by then.
    p0, p1 = Proc(0, port, tmp_path, *args), Proc(1, port, tmp_path, *args, env={"COMMDOCTOR_FORK_RANKS": "0"})
    try:
        p0.until(lambda ln: "nodes present" in ln)
        # The first local check's line on node 0's console: the local checks are under way.
        seen = p0.until(lambda ln: "PyTorch and its communication backends" in ln, which="out")
        for p in (p0, p1):
            p.p.send_signal(signal.SIGTERM)
        took = p0.finish(30)
        p1.finish(30)
    finally:
        for p in (p0, p1):
            if p.p.poll() is None:
                p.p.kill()
    print(f"\nSIGTERM {seen:.1f} s after node 0's start, in its local checks: node 0 exited {took:.2f} s later")
    out = p0.text("out")
    assert p0.p.returncode == 130, p0.text("err")[-3000:]
    assert took < AFTER_SIGNAL_S, f"node 0 took {took:.1f} s to print its report after SIGTERM"
    assert "[ok] PyTorch and its communication backends" in out  # what ran before the signal is kept
    assert "the run was interrupted" in out.split("Verdict:")[-1], out[-3000:]  # the verdict says incomplete
    assert "Verdict: healthy" not in out
    rows = [ln.split("|")[0].strip() for ln in out.splitlines() if ln[:1].isdigit() and "|" in ln]
    assert rows == ["0", "1"], out[-3000:]  # the nodes table: both nodes, whatever node 1 had sent
    # node 1: one line on stderr, nothing on stdout, no traceback
    assert p1.p.returncode == 130 and p1.text("out") == ""
    assert "node 1 (" in p1.text("err") and "stopped (SIGTERM)" in p1.text("err"), p1.text("err")[-2000:]
    assert "Traceback" not in p1.text("err") + p0.text("err")
