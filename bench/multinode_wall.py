"""Wall time of a healthy 3-node `commdoctor run` under torchrun, beside one standalone `commdoctor run` (root).

usage: python bench/multinode_wall.py [REPEATS]

Three network namespaces on one bridge (tests/mnlab.py) share this machine's cores, so the 3-node run
does three nodes' local checks at once; the ratio says what the gathering and the cross-node checks
cost beyond that. Prints each measurement and the medians side by side.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.mnlab import Lab3, clean_env  # noqa: E402


def main() -> int:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    lab = Lab3("w", 5).up()
    multi, single = [], []
    try:
        for k in range(n):
            t0 = time.monotonic()
            out = lab.torchrun(29700 + k, ["--join-timeout", "20"])
            multi.append(time.monotonic() - t0)
            doc = out["cdmwa"].report()
            ok = [x["status"] for x in doc["nodes"]] == ["reported"] * 3
            t0 = time.monotonic()
            p = lab.master.run([sys.executable, "-m", "commdoctor", "run", "--json"], env=clean_env(), timeout=300)
            single.append(time.monotonic() - t0)
            print(f"run {k + 1}: 3 nodes {multi[-1]:.1f} s (every node reported: {ok}); "
                  f"one standalone run {single[-1]:.1f} s (rc {p.returncode})", flush=True)
    finally:
        lab.down()
    m, s = statistics.median(multi), statistics.median(single)
    print(f"median: 3-node job {m:.1f} s, standalone {s:.1f} s, ratio {m / s:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
