#!/usr/bin/env python3
"""Time to first screen when the TUI's log view opens a 1 GB log (goal: under 2 s). Measured, not asserted.

usage: python bench/tui_log_open.py [--mb 1024] [--keep PATH] [--no-tmux]

Generates a multi-rank NCCL log with /work/shared/tools/gen_nccl_log.py into /tmp
(deleted afterwards unless --keep), then measures, side by side:

1. LogIndex: open + first 50 lines, for the big log and for a 10 MB one (the ratio
   shows the first screen does not grow with the file), against reading the file
   whole and splitting it into lines (what a naive viewer does first).
2. The app, headless (textual's run_test): from constructing the app to the first
   frame that shows the log's first line.
3. The real command in tmux: from launching ``commdoctor view --log BIG`` to
   capture-pane showing the first line (what a user waits for), best of 3.
4. What runs in the background afterwards: the full line index and two filters.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shlex
import shutil
import subprocess
import sys
import time
import uuid

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)
GEN = "/work/shared/tools/gen_nccl_log.py"


def generate(path: str, mb: float) -> float:
    t = time.perf_counter()
    subprocess.run([sys.executable, GEN, path, str(mb)], check=True)
    return time.perf_counter() - t


def first_lines(path: str) -> tuple[float, list[str]]:
    from commdoctor.tui.logindex import LogIndex

    t = time.perf_counter()
    ix = LogIndex(path)
    lines = ix.read(0, 50)
    dt = time.perf_counter() - t
    ix.close()
    return dt, lines


def naive(path: str) -> float:
    t = time.perf_counter()
    with open(path, "rb") as fh:
        n = len(fh.read().splitlines())
    assert n > 0
    return time.perf_counter() - t


def headless(path: str, first: str) -> float:
    import commdoctor.checks  # noqa: F401 - the pipeline cannot be imported first
    from commdoctor.tui.app import CommDoctorApp

    async def main() -> float:
        t = time.perf_counter()
        app = CommDoctorApp(report=None, logs=[path], heading="bench")
        async with app.run_test(size=(120, 40)) as pilot:
            end = time.monotonic() + 60
            while time.monotonic() < end:
                strips = app.screen._compositor.render_strips()  # noqa: SLF001
                if any(first in "".join(s.text for s in strip) for strip in strips):
                    return time.perf_counter() - t
                await pilot.pause(0.01)
        raise RuntimeError("first line never shown")

    return asyncio.run(main())


def in_tmux(path: str, first: str) -> float:
    sock = f"cdbench-{uuid.uuid4().hex[:8]}"
    cmd = f"cd {shlex.quote(REPO)} && PYTHONPATH={shlex.quote(REPO)} {shlex.quote(sys.executable)} -m commdoctor view --log {shlex.quote(path)}; sleep 60"
    t = time.perf_counter()
    subprocess.run(["tmux", "-L", sock, "new-session", "-d", "-x", "120", "-y", "40", cmd], check=True)
    try:
        end = time.monotonic() + 60
        while time.monotonic() < end:
            out = subprocess.run(["tmux", "-L", sock, "capture-pane", "-p"], capture_output=True, text=True).stdout
            if first in out:
                return time.perf_counter() - t
            time.sleep(0.02)
        raise RuntimeError("first line never on screen")
    finally:
        subprocess.run(["tmux", "-L", sock, "kill-server"], capture_output=True)


def background(path: str) -> dict[str, float]:
    from commdoctor.tui.logindex import FilterScan, LogFilter, LogIndex

    out = {}
    ix = LogIndex(path)
    t = time.perf_counter()
    ix.index_all()
    out["full line index"] = time.perf_counter() - t
    out["lines"] = ix.line_count()
    for name, f in (("filter rank 19", LogFilter(ranks=frozenset({19}))),
                    ("filter level=error", LogFilter(level="error"))):
        sc = FilterScan(ix, f)
        t = time.perf_counter()
        sc.run()
        out[name] = time.perf_counter() - t
        out[name + " matches"] = len(sc.matches)
    ix.close()
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=float, default=1024)
    ap.add_argument("--keep", metavar="PATH", help="reuse/keep this big log instead of a temporary one")
    ap.add_argument("--no-tmux", action="store_true")
    a = ap.parse_args()
    big = a.keep or f"/tmp/cd-bench-{os.getpid()}.log"
    small = f"/tmp/cd-bench-{os.getpid()}-small.log"
    try:
        if not os.path.exists(big):
            print(f"generating {a.mb:g} MB log ... ", end="", flush=True)
            print(f"{generate(big, a.mb):.1f} s")
        generate(small, 10)
        size = os.path.getsize(big)
        print(f"big log: {big} ({size / 2**30:.2f} GiB); small log: 10 MB; load: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
        with open(big, "rb") as fh:
            first = fh.readline().decode().strip()[:60]
        # warm the page cache the same way for every contender
        naive(small)
        d_big, lines = first_lines(big)
        d_small, _ = first_lines(small)
        d_naive = naive(big)
        assert lines and lines[0].startswith(first[:40])
        print(f"1. LogIndex open + 50 lines: 1 GB {d_big * 1000:.1f} ms, 10 MB {d_small * 1000:.1f} ms "
              f"(ratio {d_big / d_small:.2f}); read whole + split 1 GB {d_naive:.2f} s "
              f"({d_naive / d_big:.0f}x slower)")
        h = headless(big, first)
        h_small = headless(small, first)
        print(f"2. TUI headless, app start to first screen: 1 GB {h:.2f} s, 10 MB {h_small:.2f} s (ratio {h / h_small:.2f})")
        if not a.no_tmux and shutil.which("tmux"):
            runs = [in_tmux(big, first) for _ in range(3)]
            runs_small = [in_tmux(small, first) for _ in range(3)]
            print(f"3. commdoctor view --log in tmux, launch to first line on screen: 1 GB best {min(runs):.2f} s "
                  f"(runs {', '.join(f'{r:.2f}' for r in runs)}); 10 MB best {min(runs_small):.2f} s "
                  f"(ratio {min(runs) / min(runs_small):.2f}); goal < 2 s")
        bg = background(big)
        print(f"4. background on 1 GB: full line index {bg['full line index']:.2f} s ({bg['lines']:,} lines); "
              f"filter rank 19 {bg['filter rank 19']:.2f} s ({bg['filter rank 19 matches']:,} lines); "
              f"filter errors {bg['filter level=error']:.2f} s ({bg['filter level=error matches']:,} lines)")
    finally:
        for p in ([] if a.keep else [big]) + [small]:
            if os.path.exists(p):
                os.unlink(p)
    return 0


if __name__ == "__main__":
    sys.exit(main())
