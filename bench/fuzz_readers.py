"""The long fuzz run of every reader of untrusted input: tracebacks, slow inputs and peak memory.

usage: python bench/fuzz_readers.py [--n 10000] [--reader logs|stacks|records|report] [--seed S]

Runs the generators of tests/fuzz_inputs.py (the same ones tests/test_fuzz_readers.py
runs on a small budget) for ``--n`` inputs per reader, each through the real reader
and what consumes it, in this process. Prints one JSON line per reader: inputs run,
bugs (a traceback, or a check that crashed or timed out), inputs over 10 s, the
slowest input, the mean, and the process's peak RSS. Exit status 1 when any bug or
slow input was seen. Run the readers as separate processes to use several cores.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time
import traceback
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests"))

from hypothesis import HealthCheck, Phase, given, seed, settings  # noqa: E402

import fuzz_inputs as F  # noqa: E402

SLOW_S = 10.0


def run(reader: str, n: int, seed_: int) -> dict[str, Any]:
    strategy, feed = F.READERS[reader]
    if reader == "report":
        F.base_report()
    times: list[float] = []
    bugs: list[str] = []
    outcomes: dict[str, int] = {}

    def one(x: Any) -> None:
        t0 = time.perf_counter()
        try:
            out = feed(x)
            outcomes[out] = outcomes.get(out, 0) + 1
        except Exception:  # noqa: BLE001 - counted, and the first few kept for the report
            bugs.append(traceback.format_exc()[-1500:])
        times.append(time.perf_counter() - t0)
        if len(times) % 1000 == 0:  # partial figures, so a run stopped early still says what it saw
            print(json.dumps({"reader": reader, "progress": len(times), "bugs": len(bugs),
                              "over_10s": sum(t > SLOW_S for t in times), "slowest_s": round(max(times), 3),
                              "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)}),
                  flush=True)

    # Generation only (no shrinking, no database): every example is a new input, and a bug does not stop the run.
    prop = seed(seed_)(settings(max_examples=n, deadline=None, database=None, phases=[Phase.generate],
                                suppress_health_check=list(HealthCheck))(given(strategy)(one)))
    t0 = time.perf_counter()
    prop()
    wall = time.perf_counter() - t0
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"reader": reader, "inputs": len(times), "bugs": len(bugs), "over_10s": sum(t > SLOW_S for t in times),
            "slowest_s": round(max(times, default=0.0), 3), "mean_ms": round(1000 * sum(times) / max(1, len(times)), 1),
            "wall_s": round(wall, 1), "peak_rss_mb": round(rss_mb), "outcomes": outcomes, "first_bugs": bugs[:3]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=10000)
    ap.add_argument("--reader", choices=sorted(F.READERS), action="append")
    ap.add_argument("--seed", type=int, default=20261125)
    args = ap.parse_args()
    bad = False
    for reader in args.reader or sorted(F.READERS):
        res = run(reader, args.n, args.seed)
        print(json.dumps(res), flush=True)
        bad = bad or bool(res["bugs"] or res["over_10s"] or res["peak_rss_mb"] >= 1024)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
