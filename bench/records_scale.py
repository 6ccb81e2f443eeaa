"""``commdoctor records --json`` and ``commdoctor hang --records DIR --json`` on hooks records of 8 to 4,096 ranks.

Each records directory is written by the hooks' own writer (``commdoctor.hooks.recorder.Recorder``,
the code that runs inside a training process) on a synthetic training loop: a broadcast of the
parameters, then per step two DDP gradient buckets (all_reduce issued from C++, no Python site),
a loss all_reduce, every 50 steps an all_gather of metrics and every 500 a checkpoint barrier.
The writer runs on a simulated clock (calls take 2-20 ms, the background thread flushes every
50 ms, a heartbeat every second), so each rank's file interleaves its enter, exit and alive
lines as a real one does. ``--variants`` distinct timings are written once per set and given to
the ranks in turn, their rank and pid put in, the way ``scale_fr.py`` scales flight-recorder
dumps: same calls on every rank, one odd rank.

Faults (``--faults``):
  straggler  every rank completes calls 0..C-2; the others enter C-1 and wait 30 s; the odd rank never
             enters it (HOOK010 naming the odd rank);
  mismatch   at call C-1 the odd rank enters broadcast where the others enter all_reduce, and every
             rank waits in it (HOOK005 naming the odd rank and the call);
  silent     at call C/2 the odd rank's all_reduce reduces with MAX where the others use SUM; the job
             goes on to its end (wrong numbers, no hang: HOOK005 naming the odd rank and the call).

Each command runs in a fresh interpreter, as a user runs it; the script prints wall time, the
peak RSS of that process and whether the verdict is right.

    python bench/records_scale.py [--ranks 8,64,256,1024,4096] [--calls 2000] [--faults straggler,mismatch,silent]
        [--odd K|random] [--work DIR] [--keep]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from commdoctor.hooks import recorder as recorder_mod  # noqa: E402

PLACEHOLDER = 4194303  # a rank number no set uses; replaced by each rank's own
F32 = "float32"


class _Clock:
    """Stands in for the ``time`` module inside the recorder: simulated seconds."""

    def __init__(self, t0: float) -> None:
        self.now = t0

    def time(self) -> float:
        return self.now


class _Work:
    def __init__(self, clock: _Clock, done_at: float | None) -> None:
        self.clock, self.done_at = clock, done_at

    def is_completed(self) -> bool:
        return self.done_at is not None and self.clock.now >= self.done_at


def calls_of(n_calls: int, world: int) -> list[tuple[Any, ...]]:
    """The training loop's calls, as the hooks queue them:
    (group, seq, op, reduce_op, dtype, shapes_json, peer, root, device, async_op, site)."""
    out: list[tuple[Any, ...]] = [("0", 0, "broadcast", None, F32, "[[4096, 1024]]", None, 0, "cpu", False, "train.py:41")]
    step = 0
    while len(out) < n_calls:
        step += 1
        out.append(("0", 0, "all_reduce", "SUM", F32, "[[6553600]]", None, None, "cpu", True, None))
        out.append(("0", 0, "all_reduce", "SUM", F32, "[[1048576]]", None, None, "cpu", True, None))
        out.append(("0", 0, "all_reduce", "SUM", F32, "[[1]]", None, None, "cpu", False, "train.py:97"))
        if step % 50 == 0:
            out.append(("0", 0, "all_gather_into_tensor", None, F32, f"[[{8 * world}], [8]]", None, None, "cpu", False,
                        "train.py:120"))
        if step % 500 == 0:
            out.append(("0", 0, "barrier", None, "uint8", "[[1]]", None, None, "cpu", False, "train.py:131"))
    return [c[:1] + (i,) + c[2:] for i, c in enumerate(out[:n_calls])]


def write_variant(path: str, world: int, calls: list[tuple[Any, ...]], seed: int, hang_at: int | None,
                  skip_from: int | None) -> None:
    """One rank's records, written by the real Recorder on a simulated clock. ``hang_at``: that call never
    completes (the rank waits in it); ``skip_from``: calls from there on are never entered."""
    rng = random.Random(seed)
    clock = _Clock(1_764_000_000.0 + rng.uniform(0, 0.5))
    saved = recorder_mod.time
    recorder_mod.time = clock  # type: ignore[assignment]
    try:
        d = os.path.dirname(path)
        rec = recorder_mod.Recorder(PLACEHOLDER, world, d, thread=False, torch_version="2.13.0+cpu", max_bytes=1 << 40)
        tick = clock.now + 0.05
        for c in calls[:skip_from]:
            clock.now += rng.uniform(0.002, 0.02)
            done = None if c[1] == hang_at else clock.now + rng.uniform(0.0005, 0.01)
            rec.enter(c, _Work(clock, done))
            if clock.now >= tick:
                rec.flush(force=False, store=False)
                tick = clock.now + 0.05
        end = clock.now + (30.0 if hang_at is not None or skip_from is not None else 0.2)
        while clock.now < end:  # the hang: only heartbeats (and the last completions) from here on
            clock.now += 0.05
            rec.flush(force=False, store=False)
        rec.close()
    finally:
        recorder_mod.time = saved
    os.replace(recorder_mod.records.record_path(d, PLACEHOLDER), path)


def make_set(out: Path, n: int, n_calls: int, fault: str, odd: int, variants: int) -> tuple[int, str]:
    """Write hooks-rank{0..n-1}.jsonl into ``out``; return (the seq the verdict must name, the odd call's op)."""
    out.mkdir(parents=True, exist_ok=True)
    tmp = out / ".variants"
    tmp.mkdir(exist_ok=True)
    calls = calls_of(n_calls, n)
    last = n_calls - 1
    odd_calls = list(calls)
    if fault == "straggler":
        seq, rest_hang, odd_hang, odd_skip = last, last, None, last
    elif fault == "mismatch":
        c = calls[last]
        odd_calls[last] = (c[0], c[1], "broadcast", None, c[4], c[5], None, 0, c[8], False, "train.py:97")
        seq, rest_hang, odd_hang, odd_skip = last, last, last, None
    else:  # silent: a reduce op that differs, the job goes on
        seq = n_calls // 2
        while calls[seq][2] != "all_reduce":
            seq += 1
        odd_calls[seq] = calls[seq][:3] + ("MAX",) + calls[seq][4:]
        rest_hang = odd_hang = odd_skip = None  # type: ignore[assignment]
    texts = []
    for v in range(variants):
        p = str(tmp / f"v{v}.jsonl")
        write_variant(p, n, calls, 1000 + v, rest_hang, None)
        texts.append(Path(p).read_text())
    p = str(tmp / "odd.jsonl")
    write_variant(p, n, odd_calls, 999, odd_hang, odd_skip)
    odd_text = Path(p).read_text()
    shutil.rmtree(tmp)
    pid = os.getpid()
    for r in range(n):
        t = odd_text if r == odd else texts[r % variants]
        t = t.replace(f'"rank":{PLACEHOLDER},', f'"rank":{r},').replace(f'"pid":{pid},', f'"pid":{100000 + r},')
        (out / f"hooks-rank{r}.jsonl").write_text(t)
    return seq, odd_calls[seq][2] if fault != "straggler" else calls[seq][2]


CODE = REPO  # whose commdoctor the timed commands run (--code: another checkout, for before/after)


def run_child(cmd: list[str]) -> tuple[float, float, float, dict[str, Any], str]:
    """Wall s, CPU s (user + system, from wait4: this child alone), peak RSS MB, its JSON, its stderr's tail."""
    env = {**os.environ, "PYTHONPATH": str(CODE)}
    with tempfile.TemporaryFile() as fo, tempfile.TemporaryFile() as fe:
        t0 = time.perf_counter()
        p = subprocess.Popen(cmd, stdout=fo, stderr=fe, env=env, cwd=str(CODE))  # -m puts the cwd first on sys.path
        _, status, ru = os.wait4(p.pid, 0)
        wall = time.perf_counter() - t0
        p.returncode = os.waitstatus_to_exitcode(status)
        fo.seek(0)
        fe.seek(0)
        out, err = fo.read().decode(), fe.read().decode(errors="replace")
    try:
        doc = json.loads(out)
    except ValueError:
        doc = {}
    return wall, ru.ru_utime + ru.ru_stime, ru.ru_maxrss / 1024, doc, err[-600:]


def judge(doc: dict[str, Any], odd: int, seq: int, op: str, fault: str, command: str) -> tuple[str, bool]:
    v = doc.get("verdict") or {}
    code = v.get("code")
    text = f"{code} {v.get('title', '')[:150]}"
    ranks = v.get("ranks") or []
    if command == "records":
        want = "HOOK010" if fault == "straggler" else "HOOK005"
        ok = code == want and odd in ranks and f"rank {odd}" in json.dumps(v)
        if fault != "straggler":
            ok = ok and f"#{seq}" in v.get("title", "") and op in json.dumps(v)
        return text, ok
    # hang --records: the hang verdict must name the odd rank
    ok = code is not None and f"{odd}" in json.dumps(v) and (len(ranks) < 8 or odd in ranks)
    return text, ok


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ranks", default="8,64,256,1024,4096")
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--faults", default="straggler,mismatch,silent")
    ap.add_argument("--odd", default=None, help="the odd rank (default 3n/4 + 1; 'random': drawn for each set)")
    ap.add_argument("--variants", type=int, default=8)
    ap.add_argument("--work", default=None)
    ap.add_argument("--keep", action="store_true", help="keep the sets (under --work)")
    ap.add_argument("--no-hang", action="store_true", help="time `records` only")
    ap.add_argument("--code", action="append", default=[], metavar="DIR",
                    help="time this checkout's commdoctor too, on the same sets (repeatable: before/after)")
    a = ap.parse_args()
    global CODE
    codes = [str(REPO)] + [str(Path(c).resolve()) for c in a.code]
    work = Path(a.work or tempfile.mkdtemp(prefix="cd-recscale-"))
    work.mkdir(parents=True, exist_ok=True)
    print(f"{'ranks':>6} {'lines':>9} {'MB':>7} {'fault':>9} {'command':>14} {'wall s':>7} {'CPU s':>6} {'us/line':>8} "
          f"{'peak RSS MB':>11}  verdict", flush=True)
    bad = 0
    for n in (int(x) for x in a.ranks.split(",")):
        for fault in a.faults.split(","):
            if a.odd == "random":
                odd = random.randrange(n)
            else:
                odd = int(a.odd) if a.odd is not None else (n * 3 // 4 + 1 if n > 4 else n - 1)
            d = work / f"{fault}{n}"
            seq, op = make_set(d, n, a.calls, fault, odd, a.variants)
            files = list(d.iterdir())
            mb = sum(f.stat().st_size for f in files) / 1e6
            lines = sum(1 for f in files[:1] for _ in f.open()) * n
            cmds = [("records", [sys.executable, "-m", "commdoctor", "records", "--json", str(d)])]
            if not a.no_hang and fault != "silent":
                cmds.append(("hang", [sys.executable, "-m", "commdoctor", "hang", "--json", "--records", str(d)]))
            for (name, cmd), code in ((c, k) for c in cmds for k in codes):
                CODE = Path(code)
                if len(codes) > 1:
                    name = f"{name}@{Path(code).name}"
                wall, cpu, rss, doc, err = run_child(cmd)
                text, ok = judge(doc, odd, seq, op, fault, name.split("@")[0])
                bad += not ok
                print(f"{n:>6} {lines:>9} {mb:>7.0f} {fault:>9} {name:>14} {wall:>7.2f} {cpu:>6.2f} {cpu / lines * 1e6:>8.2f} "
                      f"{rss:>11.0f}  {text}{'' if ok else '  WRONG (odd rank ' + str(odd) + ')'}"
                      + ('' if doc else '  ' + err.strip().splitlines()[-1] if err.strip() else ''), flush=True)
            if not a.keep:
                shutil.rmtree(d, ignore_errors=True)
    if not a.keep:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
