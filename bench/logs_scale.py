"""``commdoctor logs --json`` at job scale: a folder of N 1 MB rank logs and one file of the same size, beside ``grep -c WARN``.

usage: python bench/logs_scale.py [--n 8 64 256 1024] [--keep DIR] [--before CHECKOUT]

For each N it writes (with ../shared/tools/gen_nccl_log.py) one N MB
NCCL_DEBUG=INFO log, splits it at line boundaries into N files of 1 MB named
``rank0.log`` ... ``rank{N-1}.log`` in a job folder, and keeps the whole file
too. With the page cache warmed for both (``cat``), it then times in one run,
each in a child measured with wait4 (wall, CPU = user+sys, peak RSS):
  1. ``grep -c WARN`` on the N files, and ``commdoctor logs --json FOLDER``;
  2. ``grep -c WARN`` on the single file, and ``commdoctor logs --json FILE``;
and prints both ratios to grep (bytecode compiled beforehand, as an installed package has it). CPU
counts the worker processes a folder is scanned by (wait4 includes the children a child reaped);
peak RSS is the largest one process, parent or worker. With --before, another checkout's commdoctor (say main's) is
timed too, on the same files in the same run, right after this one, so the two can be compared
side by side. The machine is shared: ratios taken in one
run are what to compare; absolute seconds include the neighbours' load.
The split files are not one process each (gen_nccl_log.py interleaves 32
ranks), so only rank0.log carries the NCCL init lines -- the per-file fixed
costs and per-candidate-line work are what this measures.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
GEN_CANDIDATES = [REPO.parent.parent / "shared" / "tools" / "gen_nccl_log.py", Path("/work/shared/tools/gen_nccl_log.py")]
MB = 1024 * 1024


def timed_child(cmd: list[str], env: dict[str, str] | None = None, cwd: Path | None = None) -> tuple[float, float, int, bytes]:
    """(wall s, child CPU s, peak RSS KiB, stdout) of one child, measured with wait4.

    ``cwd``: where the child runs. ``python -m`` puts its working folder first on sys.path, ahead of
    PYTHONPATH, so a child started inside a checkout would import that checkout's package whatever
    PYTHONPATH says: the commdoctor children run in the data folder.
    """
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, cwd=cwd)
    out = p.stdout.read() if p.stdout else b""
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    p.returncode = os.waitstatus_to_exitcode(status)
    return wall, ru.ru_utime + ru.ru_stime, ru.ru_maxrss, out


def child_env(checkout: Path, root: Path) -> dict[str, str]:
    """The environment a child runs commdoctor of ``checkout`` in, with its bytecode cached.

    An installed package has its modules compiled once (pip writes the .pyc files); a shell with
    PYTHONDONTWRITEBYTECODE would compile all of them again in every run (0.2 s CPU here), which is
    not what a user pays. The bytecode goes under the bench's own folder, not into the checkout.
    """
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = str(checkout)
    env["PYTHONPYCACHEPREFIX"] = str(root / "pycache" / checkout.name)
    return env


def make_job(gen: Path, root: Path, n: int) -> tuple[Path, Path]:
    """(folder of n 1 MB rank logs, one n MB file); reused when already there."""
    whole = root / f"whole-{n}.log"
    folder = root / f"job-{n}"
    if not whole.exists():
        subprocess.run([sys.executable, str(gen), str(whole), str(n)], check=True)
    if not (folder / f"rank{n - 1}.log").exists():
        folder.mkdir(parents=True, exist_ok=True)
        with open(whole, "rb") as f:
            rank = 0
            while rank < n:
                chunk = f.read(MB)
                rest = f.readline()  # end each file on a line boundary
                if not chunk and not rest:
                    break
                (folder / f"rank{rank}.log").write_bytes(chunk + rest)
                rank += 1
    return folder, whole


def row(label: str, g: tuple[float, float, int, bytes], c: tuple[float, float, int, bytes], mb: float) -> str:
    return (f"{label:22s} grep wall {g[0]:6.2f} s cpu {g[1]:6.2f} s | commdoctor wall {c[0]:6.2f} s cpu {c[1]:6.2f} s"
            f" ({mb / max(c[1], 1e-9):5.0f} MB/s cpu) peak {c[2] / 1024:6.1f} MB | ratio wall {c[0] / max(g[0], 1e-9):5.1f}x"
            f" cpu {c[1] / max(g[1], 1e-9):5.1f}x")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, nargs="+", default=[8, 64, 256, 1024], help="numbers of 1 MB rank files")
    ap.add_argument("--keep", metavar="DIR", help="generate into (or reuse) DIR and keep it")
    ap.add_argument("--before", metavar="CHECKOUT", help="also time the commdoctor of this checkout (e.g. /work/main)")
    ap.add_argument("--one-process", action="store_true",
                    help="also time the folder with --jobs 1 (no worker processes), to tell the workers' share")
    a = ap.parse_args()
    gen = next((g for g in GEN_CANDIDATES if g.exists()), None)
    if gen is None:
        print("gen_nccl_log.py not found (../shared/tools)", file=sys.stderr)
        return 2
    root = Path(a.keep) if a.keep else Path(tempfile.mkdtemp(prefix="commdoctor-scale-"))
    root.mkdir(parents=True, exist_ok=True)
    env = child_env(REPO, root)
    env_before = child_env(Path(a.before).resolve(), root) if a.before else None
    cd = [sys.executable, "-m", "commdoctor", "logs", "--json"]
    tiny = root / "tiny.log"
    tiny.write_bytes(b"host:1:1 [0] NCCL INFO NCCL version 2.21.5+cuda12.4\n")
    for e in (env, env_before):
        if e is not None:  # compile (and cache) the bytecode once, before anything is timed
            subprocess.run([*cd, str(tiny)], env=e, cwd=root, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
        for n in a.n:
            folder, whole = make_job(gen, root, n)
            files = sorted(str(p) for p in folder.iterdir())
            mb = sum(os.path.getsize(p) for p in files) / 1e6
            subprocess.run(["cat", *files, str(whole)], stdout=subprocess.DEVNULL, check=True)  # warm the cache for both
            gf = timed_child(["grep", "-c", "WARN", *files])
            cf = timed_child([*cd, str(folder)], env, root)
            gw = timed_child(["grep", "-c", "WARN", str(whole)])
            cw = timed_child([*cd, str(whole)], env, root)
            print(row(f"{n:5d} files x 1 MB", gf, cf, mb))
            print(row(f"{'':5s} one {mb:6.0f} MB file", gw, cw, mb))
            if a.one_process:
                c1 = timed_child([*cd, "--jobs", "1", str(folder)], env, root)
                print(row(f"{'':5s} folder, --jobs 1", gf, c1, mb))
            if env_before is not None:
                bf = timed_child([*cd, str(folder)], env_before, root)
                bw = timed_child([*cd, str(whole)], env_before, root)
                print(row(f"{'':5s} before: folder", gf, bf, mb))
                print(row(f"{'':5s} before: one file", gw, bw, mb))
            sys.stdout.flush()
        return 0
    finally:
        if not a.keep:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
