"""Start a real local process group in child processes, under a deadline.

Promise: ``run_local_group`` returns within ``timeout`` plus a few seconds,
whatever the ranks do (never arrive, hang in a collective, abort in C++). It
returns plain data: what each rank reported, its exit status and the tail of
its stderr, where backends write their own errors.
"""

from __future__ import annotations

import json
import os
import queue
import socket
import subprocess
import sys
import threading
import time
from typing import Any, Sequence

from commdoctor.probes.proc import kill_group

DEFAULT_SIZES = (64 << 10, 1 << 20, 16 << 20)
LAUNCHER_PREFIXES = ("TORCHELASTIC_", "MASTER_", "GROUP_", "ROLE_")
#: What a launcher sets for the job's own process group; the local test is a group of its own.
LAUNCHER_VARS = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE")
_PKG_PARENT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def _reader(stream: Any, rank: int, kind: str, q: queue.Queue[tuple[int, str, str | None]]) -> None:
    for line in iter(stream.readline, ""):
        q.put((rank, kind, line))
    q.put((rank, kind, None))


def run_local_group(
    backend: str = "gloo",
    world_size: int = 2,
    timeout: float = 60.0,
    sizes: Sequence[int] = DEFAULT_SIZES,
    start_ranks: Sequence[int] | None = None,
    env: dict[str, str] | None = None,
    device: str | None = None,
) -> dict[str, Any]:
    """Run commdoctor's process-group test; ``start_ranks`` leaves the others out (fault injection)."""
    port = free_port()
    init_method = f"tcp://127.0.0.1:{port}"
    ranks = list(range(world_size)) if start_ranks is None else list(start_ranks)
    # The ranks' own timeout stays inside ours, so that they report before we kill them.
    rank_timeout = max(5.0, timeout - 5.0)
    child_env = dict(os.environ if env is None else env)
    # Under torchrun (or srun/mpirun) the launcher's variables would make the local ranks join the job's store
    # instead of their own: TORCHELASTIC_USE_AGENT_STORE turns even rank 0 into a client that nobody serves.
    for k in [k for k in child_env if k.startswith(LAUNCHER_PREFIXES) or k in LAUNCHER_VARS]:
        del child_env[k]
    child_env["PYTHONPATH"] = _PKG_PARENT + (os.pathsep + child_env["PYTHONPATH"] if child_env.get("PYTHONPATH") else "")
    child_env.setdefault("PYTHONUNBUFFERED", "1")
    q: queue.Queue[tuple[int, str, str | None]] = queue.Queue()
    procs: dict[int, subprocess.Popen[str]] = {}
    out: dict[str, Any] = {
        "backend": backend, "device": device or ("cuda" if backend == "nccl" else "cpu"), "world_size": world_size, "init_method": init_method, "started_ranks": ranks,
        "timeout_s": timeout, "ranks": {}, "timed_out": False,
    }
    start = time.monotonic()
    for r in ranks:
        argv = [sys.executable, "-m", "commdoctor.probes.pg_worker", str(r), str(world_size), backend, init_method,
                str(rank_timeout), ",".join(str(s) for s in sizes), device or ("cuda" if backend == "nccl" else "cpu")]
        try:
            p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                                 text=True, errors="replace", env=child_env, start_new_session=True)
        except OSError as e:
            out["ranks"][str(r)] = {"events": [], "returncode": None, "stderr": [f"could not start: {e}"]}
            continue
        procs[r] = p
        out["ranks"][str(r)] = {"events": [], "returncode": None, "stderr": [], "pid": p.pid}
        for stream, kind in ((p.stdout, "out"), (p.stderr, "err")):
            threading.Thread(target=_reader, args=(stream, r, kind, q), daemon=True).start()

    open_streams = 2 * len(procs)
    first_error_at: float | None = None
    deadline = start + timeout
    while open_streams and time.monotonic() < deadline:
        # Once a rank has failed, its peers get a short grace period to report theirs.
        if first_error_at is not None and time.monotonic() > first_error_at + 5.0:
            break
        try:
            rank, kind, line = q.get(timeout=0.1)
        except queue.Empty:
            continue
        if line is None:
            open_streams -= 1
            continue
        rec = out["ranks"][str(rank)]
        if kind == "err":
            rec["stderr"].append(line.rstrip("\n"))
            del rec["stderr"][:-60]
            continue
        try:
            ev = json.loads(line)
        except ValueError:
            rec["stderr"].append(line.rstrip("\n"))
            continue
        rec["events"].append(ev)
        if ev.get("event") == "error" and first_error_at is None:
            first_error_at = time.monotonic()
    # Still-open streams without an error reported mean the ranks ran into our deadline.
    out["timed_out"] = bool(open_streams) and first_error_at is None
    for r, p in procs.items():
        if p.poll() is None:
            kill_group(p)
            out["ranks"][str(r)]["killed"] = True
        try:
            p.wait(timeout=3)
        except subprocess.TimeoutExpired:
            pass
        out["ranks"][str(r)]["returncode"] = p.returncode
    # Drain what arrived while we stopped them.
    while True:
        try:
            rank, kind, line = q.get_nowait()
        except queue.Empty:
            break
        if line is None:
            continue
        rec = out["ranks"][str(rank)]
        if kind == "err":
            rec["stderr"].append(line.rstrip("\n"))
        else:
            try:
                rec["events"].append(json.loads(line))
            except ValueError:
                rec["stderr"].append(line.rstrip("\n"))
    out["elapsed_s"] = time.monotonic() - start
    return out
