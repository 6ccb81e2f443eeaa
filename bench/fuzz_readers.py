"""The long fuzz run of every reader of untrusted input: tracebacks, slow inputs and peak memory.

usage: python bench/fuzz_readers.py [--n 10000] [--reader logs|stacks|records|report|fr] [--seed S]
                                    [--keep DIR [--keep-over S]]
       python bench/fuzz_readers.py --replay FILE [--replay FILE ...]

Runs the generators of tests/fuzz_inputs.py (the same ones tests/test_fuzz_readers.py
runs on a small budget) for ``--n`` inputs per reader, each through the real reader
and what consumes it, in this process. Prints one JSON line per reader: inputs run,
bugs (a traceback, or a check that crashed or timed out), inputs over 10 s, the
slowest input, the mean, and the process's peak RSS. Exit status 1 when any bug or
slow input was seen. Run the readers as separate processes to use several cores.

Every input is timed twice: wall seconds and CPU seconds (this process's, all its
threads, plus any child processes it waited for). On a loaded machine wall time
says more about the neighbours than about the input, so "over 10 s" is judged by
CPU; the wall figures are printed beside it. ``--keep DIR`` saves each input that
raised, or took more than ``--keep-over`` seconds (CPU or wall, default 2), as one
JSON file; ``--replay FILE`` runs such a file again alone and prints its times, so a
slow input can be told from a busy machine.
"""

from __future__ import annotations

import argparse
import base64
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


def _cpu() -> float:
    """CPU seconds of this process (every thread) and of the children it has waited for."""
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def encode_input(x: Any) -> Any:
    """A generated input (bytes, or a dict of file name to bytes) as JSON."""
    if isinstance(x, (bytes, bytearray)):
        return {"b64": base64.b64encode(bytes(x)).decode()}
    return {"files": {str(k): base64.b64encode(v).decode() for k, v in x.items()}}


def decode_input(doc: Any) -> Any:
    if "b64" in doc:
        return base64.b64decode(doc["b64"])
    return {k: base64.b64decode(v) for k, v in doc["files"].items()}


def timed(feed: Any, x: Any) -> tuple[str | None, str | None, float, float]:
    """(outcome, traceback, wall s, CPU s) of one input."""
    t0, c0 = time.perf_counter(), _cpu()
    out = err = None
    try:
        out = feed(x)
    except Exception:  # noqa: BLE001 - counted, and the first few kept for the report
        err = traceback.format_exc()[-1500:]
    return out, err, time.perf_counter() - t0, _cpu() - c0


def replay(path: str) -> dict[str, Any]:
    with open(path) as f:
        saved = json.load(f)
    reader = saved["reader"]
    _, feed = F.READERS[reader]
    if reader == "report":
        F.base_report()
    x = decode_input(saved["input"])
    # Twice: the first run also pays for importing the checks it reaches; the second is the input's own cost.
    first = timed(feed, x)
    out, err, wall, cpu = timed(feed, x)
    return {"replay": path, "reader": reader, "outcome": out, "bug": err or first[1], "wall_s": round(wall, 3),
            "cpu_s": round(cpu, 3), "first_run": {"wall_s": round(first[2], 3), "cpu_s": round(first[3], 3)},
            "was": {k: saved.get(k) for k in ("wall_s", "cpu_s", "load")},
            "load": round(os.getloadavg()[0], 1),
            "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)}


def run(reader: str, n: int, seed_: int, keep: str | None = None, keep_over: float = 2.0) -> dict[str, Any]:
    strategy, feed = F.READERS[reader]
    if reader == "report":
        F.base_report()
    times: list[float] = []
    cpus: list[float] = []
    bugs: list[str] = []
    kept: list[str] = []
    outcomes: dict[str, int] = {}
    if keep:
        os.makedirs(keep, exist_ok=True)

    def one(x: Any) -> None:
        out, err, wall, cpu = timed(feed, x)
        if err is None:
            outcomes[str(out)] = outcomes.get(str(out), 0) + 1
        else:
            bugs.append(err)
        times.append(wall)
        cpus.append(cpu)
        if keep and (err is not None or wall > keep_over or cpu > keep_over):
            name = os.path.join(keep, f"{reader}-{len(times):05d}-{'bug' if err else 'slow'}.json")
            with open(name, "w") as f:
                json.dump({"reader": reader, "index": len(times), "seed": seed_, "wall_s": round(wall, 3),
                           "cpu_s": round(cpu, 3), "load": round(os.getloadavg()[0], 1), "bug": err,
                           "input": encode_input(x)}, f)
            kept.append(name)
        if len(times) % 1000 == 0:  # partial figures, so a run stopped early still says what it saw
            print(json.dumps(_figures(reader, times, cpus, bugs, kept) | {"progress": len(times)}), flush=True)

    # Generation only (no shrinking, no database): every example is a new input, and a bug does not stop the run.
    prop = seed(seed_)(settings(max_examples=n, deadline=None, database=None, phases=[Phase.generate],
                                suppress_health_check=list(HealthCheck))(given(strategy)(one)))
    t0 = time.perf_counter()
    prop()
    wall = time.perf_counter() - t0
    return _figures(reader, times, cpus, bugs, kept) | {
        "wall_s": round(wall, 1), "outcomes": outcomes, "first_bugs": bugs[:3]}


def _figures(reader: str, times: list[float], cpus: list[float], bugs: list[str], kept: list[str]) -> dict[str, Any]:
    n = max(1, len(times))
    return {"reader": reader, "inputs": len(times), "bugs": len(bugs),
            "over_10s_cpu": sum(c > SLOW_S for c in cpus), "over_10s_wall": sum(t > SLOW_S for t in times),
            "slowest_cpu_s": round(max(cpus, default=0.0), 3), "slowest_wall_s": round(max(times, default=0.0), 3),
            "mean_cpu_ms": round(1000 * sum(cpus) / n, 1), "mean_wall_ms": round(1000 * sum(times) / n, 1),
            "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
            "load": round(os.getloadavg()[0], 1), "kept": len(kept)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=10000)
    ap.add_argument("--reader", choices=sorted(F.READERS), action="append")
    ap.add_argument("--seed", type=int, default=20261125)
    ap.add_argument("--keep", metavar="DIR", help="save each input that raised or was slow here, one JSON file each")
    ap.add_argument("--keep-over", type=float, default=2.0, metavar="S",
                    help="an input is kept when its CPU or wall seconds pass this (default 2)")
    ap.add_argument("--replay", metavar="FILE", action="append", help="run one input saved by --keep, alone")
    args = ap.parse_args()
    bad = False
    if args.replay:
        for path in args.replay:
            res = replay(path)
            print(json.dumps(res), flush=True)
            bad = bad or bool(res["bug"] or res["cpu_s"] > SLOW_S)
        return 1 if bad else 0
    for reader in args.reader or sorted(F.READERS):
        res = run(reader, args.n, args.seed, args.keep, args.keep_over)
        print(json.dumps(res), flush=True)
        bad = bad or bool(res["bugs"] or res["over_10s_cpu"] or res["peak_rss_mb"] >= 1024)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
