"""How big a bundle a large log set gives, and what making it costs, beside `grep -c` on the same files.

usage: python bench/bench_report_bundle.py [MEGABYTES] [--keep]

Generates a multi-rank NCCL log of MEGABYTES (default 1024) with
shared/tools/gen_nccl_log.py (one real failure buried in the middle), then in
one run measures, side by side:
  - `grep -c NCCL` over the file (the floor: one pass at memory speed),
  - `commdoctor report --no-checks --no-system --logs FILE --bundle OUT` (a fresh interpreter),
and prints wall times, their ratio, commdoctor's peak RSS, the input size and
the bundle size (and the ratio of the two). The log goes to /tmp and is
removed afterwards unless --keep is given.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def _gen_tool() -> Path:
    for p in (REPO.parent / "shared" / "tools" / "gen_nccl_log.py", Path("/work/shared/tools/gen_nccl_log.py")):
        if p.exists():
            return p
    sys.exit("gen_nccl_log.py not found beside the repository (shared/tools/)")


def _timed(argv: list[str], **kw: object) -> tuple[float, subprocess.CompletedProcess[bytes]]:
    t = time.perf_counter()
    p = subprocess.run(argv, capture_output=True, **kw)  # type: ignore[call-overload]
    return time.perf_counter() - t, p


def main() -> None:
    mb = float(next((a for a in sys.argv[1:] if not a.startswith("--")), "1024"))
    keep = "--keep" in sys.argv
    work = Path(tempfile.mkdtemp(prefix="commdoctor-bench-report-"))
    log = work / "job.log"
    t = time.perf_counter()
    subprocess.run([sys.executable, str(_gen_tool()), str(log), str(mb)], check=True)
    print(f"generated {log.stat().st_size / 2**20:.0f} MiB in {time.perf_counter() - t:.1f} s")
    try:
        # Warm the page cache the same way for both contenders.
        subprocess.run(["cat", str(log)], stdout=subprocess.DEVNULL, check=True)
        tg, g = _timed(["grep", "-c", "NCCL", str(log)])
        before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        env = dict(os.environ, PYTHONPATH=str(REPO))
        tc, c = _timed([sys.executable, "-m", "commdoctor", "report", "--no-checks", "--no-system", "--logs", str(log),
                        "--bundle", str(work / "b.tar.gz"), "-o", str(work / "r")], env=env)
        peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        if c.returncode != 0:
            sys.exit(c.stderr.decode()[-2000:])
        size_in = log.stat().st_size
        size_out = (work / "b.tar.gz").stat().st_size
        with tarfile.open(work / "b.tar.gz") as tar:
            unpacked = sum(m.size for m in tar.getmembers())
        print(f"grep -c NCCL:        {tg:7.2f} s  ({size_in / 2**20 / tg:7.0f} MiB/s)  -> {g.stdout.decode().strip()} lines")
        print(f"commdoctor report:   {tc:7.2f} s  ({size_in / 2**20 / tc:7.0f} MiB/s)  ratio to grep {tc / tg:.1f}x")
        print(f"peak RSS (children): {max(peak, before) / 1024:.0f} MiB")
        print(f"input {size_in / 2**20:.0f} MiB -> bundle {size_out / 2**10:.0f} KiB compressed, "
              f"{unpacked / 2**10:.0f} KiB unpacked ({size_in / size_out:.0f}x smaller); "
              f"report.md {(work / 'r.md').stat().st_size / 2**10:.0f} KiB, r.html {(work / 'r.html').stat().st_size / 2**10:.0f} KiB")
    finally:
        if not keep:
            for p in sorted(work.rglob("*"), reverse=True):
                p.unlink() if p.is_file() else p.rmdir()
            work.rmdir()
        else:
            print(f"kept {work}")


if __name__ == "__main__":
    main()
