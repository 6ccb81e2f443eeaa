#!/usr/bin/env python3
"""Cold-start time of `commdoctor --version` and `commdoctor checks` against `python -c pass`.

Runs the three commands interleaved, N rounds, in fresh interpreters, and prints
medians and the ratio to plain Python start-up. Measured side by side in one run
because these machines are noisy.

usage: python bench/startup.py [ROUNDS]
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time

ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 15
CMDS = {
    "python -c pass": [sys.executable, "-c", "pass"],
    "commdoctor --version": [sys.executable, "-m", "commdoctor", "--version"],
    "commdoctor checks": [sys.executable, "-m", "commdoctor", "checks"],
    "commdoctor explain ENV030": [sys.executable, "-m", "commdoctor", "explain", "ENV030"],
}


def once(argv: list[str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - t0


def main() -> None:
    times: dict[str, list[float]] = {k: [] for k in CMDS}
    for k, argv in CMDS.items():  # warm the page cache
        once(argv)
    for _ in range(ROUNDS):
        for k, argv in CMDS.items():
            times[k].append(once(argv))
    base = statistics.median(times["python -c pass"])
    print(f"{'command':<28}{'median ms':>10}{'ratio':>8}")
    for k, ts in times.items():
        m = statistics.median(ts)
        print(f"{k:<28}{m * 1e3:>10.1f}{m / base:>8.2f}x")


if __name__ == "__main__":
    main()
