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


def child_env(env: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of the local test's ranks: the launcher's variables out, this commdoctor importable."""
    child = dict(os.environ if env is None else env)
    # Under torchrun (or srun/mpirun) the launcher's variables would make the local ranks join the job's store
    # instead of their own: TORCHELASTIC_USE_AGENT_STORE turns even rank 0 into a client that nobody serves.
    for k in [k for k in child if k.startswith(LAUNCHER_PREFIXES) or k in LAUNCHER_VARS]:
        del child[k]
    child["PYTHONPATH"] = _PKG_PARENT + (os.pathsep + child["PYTHONPATH"] if child.get("PYTHONPATH") else "")
    child.setdefault("PYTHONUNBUFFERED", "1")
    return child


# -- the torch probe's interpreter, kept for rank 0 ---------------------------------------------------------
# `run` asks a child interpreter what torch has (importing torch takes seconds, more on a GPU host) and then
# starts the local test's ranks, each importing torch again. The probe's child can instead stay: once it has
# printed its facts it waits on its stdin, and the local test hands it rank 0's arguments, so one import
# less stands between the user and the verdict. A child nobody hands a rank to leaves when stdin closes
# (at the latest when this process ends).
_WARM_TAIL = r"""
sys.stdout.write(json.dumps(gather()) + "\n")
sys.stdout.flush()
line = sys.stdin.readline()
if not line.strip():
    sys.exit(0)
import runpy
sys.argv = ["commdoctor.probes.pg_worker", *json.loads(line)]
runpy.run_module("commdoctor.probes.pg_worker", run_name="__main__", alter_sys=True)
"""
_warm: list[tuple[subprocess.Popen[str], dict[str, str]]] = []
_warm_lock = threading.Lock()


def _close_warm() -> None:
    with _warm_lock:
        kept = list(_warm)
        _warm.clear()
    for p, _ in kept:
        try:
            if p.stdin is not None:
                p.stdin.close()  # the child reads EOF and leaves
            p.wait(timeout=2)
        except (OSError, subprocess.TimeoutExpired):
            kill_group(p)


def probe_torch_and_stay(code: str, timeout: float) -> tuple[int | None, str, str, bool]:
    """Run the torch probe ``code`` (which defines ``gather()``) in a child that stays for rank 0.

    Returns (exit status or None while it runs on, its facts line, its stderr when it ended, timed out), as
    ``run_bounded`` would; a child that answered is kept for ``run_local_group``.
    """
    env = child_env()
    try:
        p = subprocess.Popen([sys.executable, "-c", code + _WARM_TAIL], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, errors="replace", env=env, start_new_session=True)
    except OSError as e:
        return None, "", f"{type(e).__name__}: {e}", False
    got: queue.Queue[str] = queue.Queue()
    assert p.stdout is not None
    threading.Thread(target=lambda: got.put(p.stdout.readline() if p.stdout else ""), daemon=True).start()
    try:
        line = got.get(timeout=timeout)
    except queue.Empty:
        kill_group(p)
        p.wait(timeout=5)
        return p.returncode, "", "", True
    if not line.strip():  # it ended without facts: what it printed says why
        try:
            out, err = p.communicate(timeout=5)
        except subprocess.TimeoutExpired:
            kill_group(p)
            out, err = p.communicate()
        return p.returncode, out or "", err or "", False
    with _warm_lock:
        first = not _warm
        _warm.append((p, env))
    if first:
        import atexit

        atexit.register(_close_warm)
    return None, line, "", False


def _take_warm(env: dict[str, str]) -> subprocess.Popen[str] | None:
    """A kept probe child started with ``env`` and still waiting, or None."""
    with _warm_lock:
        _warm[:] = [(p, penv) for p, penv in _warm if p.poll() is None]  # gone (killed, crashed): forget it
        for i, (p, penv) in enumerate(_warm):
            if penv == env:
                del _warm[i]
                return p
    return None


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
    cenv = child_env(env)
    q: queue.Queue[tuple[int, str, str | None]] = queue.Queue()
    procs: dict[int, subprocess.Popen[str]] = {}
    out: dict[str, Any] = {
        "backend": backend, "device": device or ("cuda" if backend == "nccl" else "cpu"), "world_size": world_size, "init_method": init_method, "started_ranks": ranks,
        "timeout_s": timeout, "ranks": {}, "timed_out": False,
    }
    start = time.monotonic()
    warm = _take_warm(cenv)
    for r in ranks:
        args = [str(r), str(world_size), backend, init_method, str(rank_timeout), ",".join(str(s) for s in sizes),
                device or ("cuda" if backend == "nccl" else "cpu")]
        p = None
        if warm is not None:  # the torch probe's interpreter, torch imported already, takes the first rank
            try:
                assert warm.stdin is not None
                warm.stdin.write(json.dumps(args) + "\n")
                warm.stdin.close()
                p = warm
            except (OSError, ValueError):
                kill_group(warm)
            warm = None
        try:
            if p is None:
                p = subprocess.Popen([sys.executable, "-m", "commdoctor.probes.pg_worker", *args], stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True, errors="replace",
                                     env=cenv, start_new_session=True)
        except OSError as e:
            out["ranks"][str(r)] = {"events": [], "returncode": None, "stderr": [f"could not start: {e}"]}
            continue
        procs[r] = p
        out["ranks"][str(r)] = {"events": [], "returncode": None, "stderr": [], "pid": p.pid}
        for stream, kind in ((p.stdout, "out"), (p.stderr, "err")):
            threading.Thread(target=_reader, args=(stream, r, kind, q), daemon=True).start()

    if warm is not None:  # no rank to hand it (none was started)
        kill_group(warm)
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
