"""``commdoctor hang --json --fr`` on NCCL flight-recorder sets of 8 to 4,096 ranks.

Each set is made by ``scale_fr.py`` (the project's shared tool) from the real 3-rank H100
capture ``fixtures/hang/nccl/straggler3/fr``: torch's default ring (2,000 entries per rank), one
odd rank, as a straggler, as a mismatch (broadcast where the others all_reduce, then a barrier: the
odd rank's status differs) and as ``same-status`` (every rank waits in its last call, the odd rank's
a broadcast: one status class, told apart by the entries' names). Each run is
the whole CLI in a fresh interpreter, as a user runs it; it prints wall time, the peak RSS of that
process and whether the verdict named the odd rank with the right code.

    python bench/hang_fr_scale.py [--ranks 8,64,128,512,1024,4096] [--faults straggler,mismatch,same-status]
        [--odd K|random] [--at SEQ|random]
        [--scale-fr PATH/scale_fr.py] [--work DIR]

Sets are large (about 255 KB per rank); each is deleted after its run.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SRC = REPO / "fixtures" / "hang" / "nccl" / "straggler3" / "fr"
WANT = {"straggler": "HANG010", "mismatch": "HANG011", "same-status": "HANG011"}


def same_status(d: Path, n: int, odd: int) -> None:
    """The odd rank's dump made like the others' (same pg_status, same calls) but for its last entry, a
    broadcast where every other rank's is an all_reduce: every rank waits at the same sequence number,
    so the ranks fall in one status class and only the entries tell them apart."""
    import pickle

    other = 0 if odd != 0 else 1
    doc = pickle.loads((d / f"nccl_trace_rank_{other}").read_bytes())  # our own scale_fr output: trusted
    doc["entries"][-1] = dict(doc["entries"][-1], profiling_name="nccl:broadcast")
    (d / f"nccl_trace_rank_{odd}").write_bytes(pickle.dumps(doc))


def run_one(scale_fr: str, work: Path, n: int, fault: str, odd: int | None = None,
            at: int | None = None) -> tuple[float, float, str, bool]:
    d = work / f"{fault}{n}"
    if odd is None:
        odd = n * 3 // 4 + 1 if n > 4 else n - 1
    at = 2000 - 8 if at is None else at  # scale_fr.py's own default: the mismatch 8 calls before the end
    subprocess.run([sys.executable, scale_fr, str(SRC), str(d), str(n), "--odd", str(odd), "--at", str(at),
                    "--fault", "mismatch" if fault == "same-status" else fault], check=True, capture_output=True)
    if fault == "same-status":
        same_status(d, n, odd)
    try:
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        t0 = time.perf_counter()
        p = subprocess.run([sys.executable, "-m", "commdoctor", "hang", "--json", "--fr", str(d)],
                           capture_output=True, text=True, env=env, timeout=600)
        wall = time.perf_counter() - t0
        # ru_maxrss of children is the largest child so far: each run is larger than the one before.
        rss_mb = max(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, before) / 1024
        v = (json.loads(p.stdout).get("verdict") or {}) if p.stdout.strip() else {}
        ok = v.get("code") == WANT[fault] and v.get("ranks") == [odd]
        if fault == "mismatch":  # the sequence number, both calls, and which ranks called the odd one
            ok = ok and f"#{at} is all_reduce" in v.get("title", "") and f"broadcast on rank {odd}" in v.get("title", "")
        return wall, rss_mb, f"{v.get('code')} ranks {v.get('ranks')}" + (f" #{at}" if fault == "mismatch" else ""), ok
    finally:
        shutil.rmtree(d, ignore_errors=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ranks", default="8,64,128,512,1024,4096")
    ap.add_argument("--faults", default="straggler,mismatch,same-status")
    ap.add_argument("--scale-fr", default=str(REPO.parent / "shared" / "tools" / "scale_fr.py"))  # ../shared beside the checkout
    ap.add_argument("--work", default=None)
    ap.add_argument("--odd", default=None, help="the odd rank (default 3n/4 + 1; 'random': drawn for each set)")
    ap.add_argument("--at", default=None,
                    help="the mismatch's sequence number (default 1992; 'random': drawn for each set, 2-1999)")
    a = ap.parse_args()
    if not os.path.exists(a.scale_fr):
        print(f"scale_fr.py not found at {a.scale_fr}: give --scale-fr", file=sys.stderr)
        return 2
    work = Path(a.work or tempfile.mkdtemp(prefix="cd-frscale-"))
    work.mkdir(parents=True, exist_ok=True)
    print(f"{'ranks':>6} {'entries':>9} {'fault':>10} {'wall s':>8} {'us/entry':>9} {'peak RSS MB':>12}  verdict")
    bad = 0
    for n in (int(x) for x in a.ranks.split(",")):
        for fault in a.faults.split(","):
            odd = random.randrange(n) if a.odd == "random" else None if a.odd is None else int(a.odd)
            at = random.randrange(2, 2000) if a.at == "random" else None if a.at is None else int(a.at)
            wall, rss, text, ok = run_one(a.scale_fr, work, n, fault, odd, at)
            bad += not ok
            print(f"{n:>6} {n * 2000:>9} {fault:>10} {wall:>8.2f} {wall / (n * 2000) * 1e6:>9.2f} {rss:>12.0f}  "
                  f"{text}{'' if ok else '  WRONG'}", flush=True)
    shutil.rmtree(work, ignore_errors=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
