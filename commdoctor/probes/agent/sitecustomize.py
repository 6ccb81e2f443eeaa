"""commdoctor's helper inside the ranks of a job started by ``commdoctor run -- <launcher> ...``.

Promise: does nothing at all unless COMMDOCTOR_WATCH_DIR and RANK are set;
then starts one daemon thread, imports nothing heavy (it uses torch only if
the program itself has imported torch.distributed and initialised a process
group), never raises into the program, and writes only under
COMMDOCTOR_WATCH_DIR:

- ``progress/rank<R>.json`` about once a second: the flight recorder's
  per-group status (last enqueued / completed collective), read with
  ``_dump_nccl_trace_json`` for NCCL groups and ``_dump_fr_trace_json`` for
  the others, without collectives (tens of microseconds); the watcher calls
  "no progress" when these stop moving on every rank.
- when the watcher touches ``fr-request``: the flight-recorder dumps of the
  groups this rank has, ``fr/nccl_rank<R>.pkl`` from ``_dump_nccl_trace``
  (NCCL's own recorder: ``_dump_fr_trace`` holds no NCCL entries, see
  FIELD-NOTES "NCCL on a real GPU") and ``fr/rank<R>.pkl`` from
  ``_dump_fr_trace`` (gloo and the rest); each at once without stacks, then
  replaced by the version with stacks (whose first call imports torch._dynamo
  and takes seconds). commdoctor's reader merges one rank's files. The thread
  runs while the main thread waits, because torch releases the GIL in
  ``Work.wait`` and NCCL's waits happen on the GPU.

It is loaded as ``sitecustomize`` through PYTHONPATH and then imports the
``sitecustomize`` that was there before it (if any), so a site's own
customisation keeps working.
"""

from __future__ import annotations

import os
import sys


def _write(path: str, data: bytes) -> None:
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


#: (file name prefix, dump API, status API) per recorder; the NCCL one exists only in CUDA builds.
RECORDERS = (("nccl_rank", "_dump_nccl_trace", "_dump_nccl_trace_json"),
             ("rank", "_dump_fr_trace", "_dump_fr_trace_json"))


def recorder_status(c10d: object) -> dict[str, dict[str, object]]:
    """{file prefix: pg_status} for each recorder that holds at least one group in this process."""
    import json

    out: dict[str, dict[str, object]] = {}
    for prefix, _, status_api in RECORDERS:
        fn = getattr(c10d, status_api, None)
        if fn is None:
            continue
        status = json.loads(fn(False, False)).get("pg_status") or {}
        if status:
            out[prefix] = status
    return out


def dump_recorders(c10d: object, fr_dir: str, rank: str, prefixes: object) -> list[str]:
    """Write each named recorder's dump, fast version first; returns the files written."""
    written: list[str] = []
    for prefix, dump_api, _ in RECORDERS:
        fn = getattr(c10d, dump_api, None)
        if fn is None or prefix not in prefixes:  # type: ignore[operator]
            continue
        path = os.path.join(fr_dir, f"{prefix}{rank}.pkl")
        # Without stacks first: instant. With stacks the first call imports torch._dynamo
        # (about 800 modules, seconds), so that version replaces it when it is ready.
        _write(path, fn(True, False, False))
        written.append(path)
    for prefix, dump_api, _ in RECORDERS:
        fn = getattr(c10d, dump_api, None)
        if fn is not None and prefix in prefixes:  # type: ignore[operator]
            _write(os.path.join(fr_dir, f"{prefix}{rank}.pkl"), fn(True, True, False))
    return written


def _loop(watch_dir: str, rank: str, period: float) -> None:
    import json
    import time

    pid = os.getpid()
    request = os.path.join(watch_dir, "fr-request")
    progress = os.path.join(watch_dir, "progress", f"rank{rank}.json")
    fr_dir = os.path.join(watch_dir, "fr")
    seen_request: float | None = None
    try:
        seen_request = os.stat(request).st_mtime
    except OSError:
        pass
    for _ in range(1 << 62):  # ends with the process (daemon thread)
        time.sleep(period)
        if os.getpid() != pid:
            return  # a fork of the rank (a DataLoader worker): not ours to report
        mp = sys.modules.get("multiprocessing")
        parent_process = getattr(mp, "parent_process", None)  # absent while the job is still importing it
        try:
            if parent_process is not None and parent_process() is not None:
                return  # a spawned helper (DataLoader worker) inherits RANK; it is not the rank
        except Exception:  # noqa: BLE001 - asked again next time
            continue
        dist = sys.modules.get("torch.distributed")
        c10d = sys.modules.get("torch._C._distributed_c10d")
        if dist is None or c10d is None:
            continue
        try:
            if not dist.is_initialized():
                continue
            by_recorder = recorder_status(c10d)
            if not by_recorder:
                continue  # TORCH_FR_BUFFER_SIZE=0: no status to report; the watcher samples stacks instead
            status: dict[str, object] = {}
            for prefix, groups in by_recorder.items():
                status.update({(g if prefix == "rank" else f"nccl:{g}"): v for g, v in groups.items()})
            _write(progress, json.dumps({"rank": int(rank), "pid": pid, "time": time.time(),
                                         "pg_status": status}).encode())
            try:
                m = os.stat(request).st_mtime
            except OSError:
                m = None
            if m is not None and m != seen_request:
                seen_request = m
                dump_recorders(c10d, fr_dir, rank, by_recorder)
        except Exception:  # noqa: BLE001 - the training job must never notice us
            time.sleep(period * 4)


def _start() -> None:
    watch_dir = os.environ.get("COMMDOCTOR_WATCH_DIR")
    rank = os.environ.get("RANK")
    if not watch_dir or rank is None or not rank.isdigit():
        return
    try:
        import threading

        period = float(os.environ.get("COMMDOCTOR_AGENT_PERIOD", "1.0"))
        threading.Thread(target=_loop, args=(watch_dir, rank, period), name="commdoctor-agent",
                         daemon=True).start()
    except Exception:  # noqa: BLE001
        pass


def _chain() -> None:
    """Run the sitecustomize this one hides (later on sys.path), if there is one."""
    try:
        import importlib.machinery
        import importlib.util

        here = os.path.dirname(os.path.abspath(__file__))
        path = [p for p in sys.path if os.path.abspath(p or ".") != here]
        spec = importlib.machinery.PathFinder.find_spec("sitecustomize", path)
        if spec is None or spec.loader is None:
            return
        mod = importlib.util.module_from_spec(spec)
        sys.modules["_commdoctor_chained_sitecustomize"] = mod
        spec.loader.exec_module(mod)
    except Exception:  # noqa: BLE001 - their failure is theirs; Python itself would only warn
        pass


_start()
_chain()
