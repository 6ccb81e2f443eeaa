"""How fast commdoctor.hooks catches each kind of mismatch, in real gloo jobs (2 to 4 ranks).

usage: python bench/hooks_detection.py [--runs N]

Runs the mismatch scenarios of tests/hooks_worker.py (the same jobs the tests
run) and prints, for each, the time from the last rank entering the call where
ranks differ (from its own progress records) to the last rank raising
CollectiveMismatchError: the median and the worst of N runs.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "tests"))
sys.path.insert(0, REPO)

SCENARIOS = [("op", 2), ("shape", 2), ("dtype", 2), ("redop", 2), ("root", 2), ("barrier", 2), ("order", 2),
             ("skip", 2), ("order_same", 2), ("skip_last", 2), ("later", 2), ("ddp", 2), ("ddp_model", 2),
             ("uneven", 3), ("subgroup", 4)]


def main() -> int:
    from hooks_support import detection_delay, run_job

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--runs", type=int, default=3)
    args = p.parse_args()
    print(f"{'scenario':12} {'ranks':>5} {'median':>9} {'worst':>9}  kind")
    for name, world in SCENARIOS:
        delays, kinds = [], set()
        for _ in range(args.runs):
            res = run_job(name, world)
            if not any(r.get("error") == "CollectiveMismatchError" for r in res):
                print(f"{name:12} {world:5}  no mismatch error: {[r.get('error') for r in res]}")
                break
            delays.append(detection_delay(res))
            kinds |= {r["mismatch"]["kind"] for r in res if r.get("mismatch")}
        if delays:
            print(f"{name:12} {world:5} {statistics.median(delays) * 1e3:7.1f} ms {max(delays) * 1e3:7.1f} ms  "
                  f"{', '.join(sorted(kinds))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
