#!/usr/bin/env python3
"""Time to a hang verdict on a real hung 4-rank job, beside reading the stacks by hand.

usage: python bench/hang_attach.py [ROUNDS] [RANKS]

Starts tests/integration/hangjob.py under torchrun (gloo, RANKS ranks, default
4; the last rank sleeps in its dataset while the others wait in all_reduce),
then runs, interleaved, ROUNDS times (default 5), in fresh processes:
  - `py-spy dump --pid P` for each rank, one after the other (what users do by hand),
  - `commdoctor hang --pid P...` (discovery, py-spy in parallel, classification, verdict),
  - `commdoctor hang --pid P... --native` (native frames too),
and prints medians and ratios. The job is killed at the end.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from commdoctor.probes.env import find_py_spy  # noqa: E402
from tests.integration.hang_jobs import start_torchrun  # noqa: E402


def timed(argv: list[str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(argv, capture_output=True, timeout=300, cwd=str(REPO))
    return time.perf_counter() - t0


def main() -> int:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    world = int(sys.argv[2]) if len(sys.argv) > 2 else 4
    py_spy = find_py_spy() or "py-spy"
    with start_torchrun("straggler", world) as job:
        job.wait("steady", timeout=300)
        time.sleep(1.0)
        pids = [str(p) for _, p in sorted(job.rank_pids().items())]
        cd = [sys.executable, "-m", "commdoctor", "hang", "--pid", *pids, "--json"]
        by_hand: list[float] = []
        ours: list[float] = []
        native: list[float] = []
        for _ in range(rounds):
            t0 = time.perf_counter()
            for p in pids:
                subprocess.run([py_spy, "dump", "--pid", p], capture_output=True, timeout=60)
            by_hand.append(time.perf_counter() - t0)
            ours.append(timed(cd))
            native.append(timed(cd + ["--native"]))
    m_hand, m_ours, m_native = (statistics.median(x) for x in (by_hand, ours, native))
    print(f"{world} hung ranks, {rounds} rounds, {os.cpu_count()} CPUs (medians)")
    print(f"  py-spy dump, rank by rank (stacks only)   {m_hand:6.2f} s")
    print(f"  commdoctor hang --pid ... (verdict)       {m_ours:6.2f} s   ratio {m_ours / m_hand:5.2f}")
    print(f"  commdoctor hang --pid ... --native        {m_native:6.2f} s   ratio {m_native / m_hand:5.2f}")
    print(f"  all runs of commdoctor hang: {', '.join(f'{x:.2f}' for x in ours)} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
