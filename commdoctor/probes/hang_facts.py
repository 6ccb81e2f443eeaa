"""Fact providers for the hang mode: the snapshot, records, dumps, logs and NCCL RAS.

Promise: each provider reads what the options name (``--pid``, ``--stacks``,
``--records``, ``--fr``, ``--logs``) and, for a live job, what the ranks'
own environment points at (COMMDOCTOR_HOOKS_DIR, TORCH_FR_DUMP_TEMP_FILE,
NCCL_DEBUG_FILE, COMMDOCTOR_WATCH_DIR); none raises for a missing or
unreadable file (that becomes data). The RAS probe connects to localhost
only, with a short deadline.
"""

from __future__ import annotations

import glob
import os
import socket
from typing import Any

from commdoctor.loaders.hang_logs import HangLogs, load_hang_logs
from commdoctor.facts.snapshot import HangSnapshot


def _extra(ctx: Any) -> dict[str, Any]:
    return dict(ctx.options.extra or {})


def snapshot(ctx: Any) -> HangSnapshot | None:
    x = _extra(ctx)
    timeout = float(x.get("stack_timeout", 10.0))
    native = bool(x.get("native", False))
    if x.get("snapshot") is not None:  # taken already (wrapper mode)
        snap: HangSnapshot = x["snapshot"]
        return snap
    if x.get("stacks"):
        from commdoctor.loaders.stacks import load_snapshot

        return load_snapshot(x["stacks"])
    if x.get("pids"):
        from commdoctor.probes.snapshot import snapshot_pids

        return snapshot_pids(x["pids"], timeout=timeout, native=native)
    if x.get("attach"):
        from commdoctor.probes.snapshot import snapshot_local

        match = x["attach"] if isinstance(x["attach"], str) else None
        return snapshot_local(timeout=timeout, native=native, match=match)
    return None


def _rank_env(ctx: Any) -> list[dict[str, str]]:
    """The kept environment of every rank of a live snapshot."""
    snap = ctx.fact("hang_snapshot")
    if snap is None or not snap.job:
        return []
    return [dict(p.get("env") or {}) for p in snap.job.get("ranks") or ()]


def records_dirs(ctx: Any) -> list[str]:
    x = _extra(ctx)
    dirs = list(x.get("records") or ())
    from commdoctor.core.records import ENV_DIR

    for env in _rank_env(ctx):
        d = env.get(ENV_DIR)
        if d and d not in dirs:
            dirs.append(d)
    if x.get("watch_dir"):
        d = os.path.join(x["watch_dir"], "records")
        if d not in dirs:
            dirs.append(d)
    return [d for d in dirs if os.path.exists(d)]


def hook_progress(ctx: Any) -> dict[int, Any]:
    """Each rank's progress (``records.read_progress``'s answer), read by the records loader: it reads
    a 1,024-rank job's files in bulk where ``read_progress`` parses every line."""
    from commdoctor.loaders import hook_records
    from commdoctor.core.records import FILE_PREFIX

    files: list[str] = []
    for p in records_dirs(ctx):
        if os.path.isdir(p):
            try:
                names = sorted(os.listdir(p))
            except OSError:
                continue
            files += [os.path.join(p, n) for n in names if n.startswith(FILE_PREFIX) and n.endswith(".jsonl")]
        else:
            files.append(p)
    return hook_records.progress_of(hook_records.find_files(files), progress=_progress(ctx, "hooks records")) \
        if files else {}


def fr_paths(ctx: Any) -> list[str]:
    x = _extra(ctx)
    paths = list(x.get("fr") or ())
    for env in _rank_env(ctx):
        prefix = env.get("TORCH_FR_DUMP_TEMP_FILE")
        if prefix:
            paths += [p for p in glob.glob(prefix + "*") if p not in paths]
        wd = env.get("COMMDOCTOR_WATCH_DIR")
        if wd and os.path.join(wd, "fr") not in paths:
            paths.append(os.path.join(wd, "fr"))
    if x.get("watch_dir"):
        d = os.path.join(x["watch_dir"], "fr")
        if d not in paths:
            paths.append(d)
    return [p for p in paths if os.path.exists(p)]


def flight_recorder(ctx: Any) -> tuple[list[Any], list[str]] | None:
    from commdoctor.loaders.flight_recorder import load_dumps_at_scale

    paths = fr_paths(ctx)
    if not paths:
        return None
    return load_dumps_at_scale(paths, progress=_progress(ctx))


def _progress(ctx: Any, source: str = "flight recorder") -> Any:
    """A meter for reading flight-recorder dumps or hooks records (render/progress.py: on a terminal, after a
    second, inside the console's status line); None with --json or when stderr is not a terminal."""
    import sys

    from commdoctor.render.progress import Progress

    if getattr(ctx.options, "extra", {}).get("json") or not sys.stderr.isatty():
        return None
    meters: dict[str, Progress] = {}

    def report(what: str, done: int, total: int) -> None:
        m = meters.get(what)
        if m is None:
            for old in meters.values():
                old.clear()
            m = meters[what] = Progress(total, f"{source}: {what}", enabled=True)
        m.update(done + 1)
        if done + 1 >= total:
            m.clear()

    return report


def hang_logs(ctx: Any) -> HangLogs:

    x = _extra(ctx)
    paths = list(x.get("logs") or ())
    for env in _rank_env(ctx):
        pattern = env.get("NCCL_DEBUG_FILE")
        if pattern:
            g = pattern.replace("%h", "*").replace("%p", "*")
            paths += [p for p in glob.glob(g) if p not in paths]
    if x.get("watch_dir"):
        paths += [p for p in glob.glob(os.path.join(x["watch_dir"], "logs", "*")) if p not in paths]
    snap = ctx.fact("hang_snapshot")
    pid_rank = {v.pid: r for r, v in snap.ranks.items() if v.pid} if snap is not None else {}
    return load_hang_logs(paths, pid_rank)


def nccl_ras(ctx: Any, timeout: float = 1.0) -> dict[str, Any] | None:
    """Ask NCCL's RAS service (NCCL 2.24+) for the job status, on the address the ranks use (localhost:28028)."""
    x = _extra(ctx)
    if x.get("stacks") and not x.get("pids") and not x.get("attach"):
        return None  # offline: the job is not here
    addr = "localhost:28028"
    for env in _rank_env(ctx):
        if env.get("NCCL_RAS_ADDR"):
            addr = env["NCCL_RAS_ADDR"]
            break
    host, _, port_s = addr.rpartition(":")
    host = host or "localhost"
    try:
        port = int(port_s)
    except ValueError:
        return {"addr": addr, "reachable": False, "error": "NCCL_RAS_ADDR has no port"}
    if host not in ("localhost", "127.0.0.1", "::1"):
        return {"addr": addr, "host": host, "port": port, "reachable": False,
                "error": "not localhost: commdoctor asks RAS on this host only"}
    out: dict[str, Any] = {"addr": addr, "host": host, "port": port, "reachable": False}
    try:
        with socket.create_connection((host, port), timeout=timeout) as s:
            out["reachable"] = True
            s.settimeout(5.0)
            # The client protocol is text: a version line, then commands (docs: "echo verbose status | nc").
            s.sendall(b"CLIENT PROTOCOL 2\nVERBOSE STATUS\n")
            chunks: list[bytes] = []
            total = 0
            while total < 64 << 10:
                try:
                    b = s.recv(8192)
                except socket.timeout:
                    break
                if not b:
                    break
                chunks.append(b)
                total += len(b)
            out["text"] = b"".join(chunks).decode("utf-8", "replace")
    except OSError as e:
        out["error"] = f"{type(e).__name__}: {e}"
    return out
