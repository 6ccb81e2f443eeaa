"""The job's own TCPStore, and a gloo pair test over it (torch, imported here and only when called).

Promise: every operation is bounded. ``connect`` returns within its timeout
whether the store answers, refuses, or accepts and never replies; ``wait``
polls with ``check`` instead of a blocking ``get``; ``pair_bandwidth`` gives
gloo its own timeout and returns what each pair measured or the backend's
error text. This module is imported only by ``commdoctor run`` inside a
multi-node job (which needs torch anyway); ``commdoctor logs`` never reaches it.

Under torchrun the agent already hosts a TCPStore at MASTER_ADDR:MASTER_PORT
and every worker is a client (TORCHELASTIC_USE_AGENT_STORE); under srun,
mpirun or plain env:// rank 0 hosts one there, as torch's env:// init would.
All keys live under ``commdoctor/<run id>/`` so a later job on the same
store, or the training job itself, never reads them.
"""

from __future__ import annotations

import json
import threading
import time
from datetime import timedelta
from typing import Any, Sequence

from commdoctor.core.jobctx import Job
from commdoctor.probes.net import with_deadline


class StoreError(Exception):
    """The job's store could not be reached or answered wrongly; the message says which and where."""


class JobStore:
    """A prefixed view of the job's TCPStore with bounded, JSON-valued operations."""

    def __init__(self, job: Job, connect_timeout: float = 20.0, op_timeout: float = 10.0) -> None:
        import torch.distributed as dist

        self.job = job
        self._lock = threading.Lock()
        host, port = job.master_addr or "", int(job.master_port or 0)
        master = job.hosts_store
        t0 = time.monotonic()

        def make() -> Any:
            return dist.TCPStore(host, port, is_master=master, wait_for_workers=False,
                                 timeout=timedelta(seconds=connect_timeout), multi_tenant=master)

        # torch's client retries until its timeout; a server that accepts and never answers can outlast it.
        ok, store, err = with_deadline(make, connect_timeout + 5.0)
        self.connect_s = round(time.monotonic() - t0, 3)
        where = f"{host}:{port}"
        if not ok:
            raise StoreError(f"no answer from the job's store at {where} within {connect_timeout + 5.0:g} s")
        if err is not None:
            text = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
            verb = "host" if master else "reach"
            raise StoreError(f"could not {verb} the job's store at {where}: {type(err).__name__}: {text}")
        assert store is not None  # with_deadline finished without an error: the constructor returned it
        store.set_timeout(timedelta(seconds=op_timeout))
        self.raw = store
        self.store = dist.PrefixStore(f"commdoctor/{job.run_id}/", store)

    def put(self, key: str, value: Any) -> None:
        with self._lock:
            self.store.set(key, json.dumps(value, default=str))

    def peek(self, key: str) -> Any:
        """The value at ``key``, or None when it is not there (never blocks)."""
        with self._lock:
            if not self.store.check([key]):
                return None
            raw = self.store.get(key)
        try:
            return json.loads(raw)
        except ValueError:
            return None

    def wait(self, keys: Sequence[str], deadline: float, poll: float = 0.2,
             stop: threading.Event | None = None) -> set[str]:
        """Poll until every key exists, ``deadline`` (monotonic) passes or ``stop`` is set; the keys that exist."""
        have: set[str] = set()
        while True:
            for k in keys:
                if k not in have:
                    with self._lock:
                        if self.store.check([k]):
                            have.add(k)
            if len(have) == len(keys) or time.monotonic() >= deadline or (stop is not None and stop.is_set()):
                return have
            if stop is not None:
                stop.wait(poll)
            else:
                time.sleep(poll)


def versions() -> dict[str, Any]:
    """torch, its CUDA build and NCCL as this interpreter loads them (torch is already imported here)."""
    import torch
    import torch.distributed as dist

    out: dict[str, Any] = {"torch": torch.__version__, "cuda": torch.version.cuda, "nccl": None}
    try:
        if dist.is_nccl_available():
            v = torch.cuda.nccl.version()
            out["nccl"] = ".".join(map(str, v)) if isinstance(v, tuple) else str(v)
    except Exception as e:  # noqa: BLE001 - recorded; a broken CUDA install must not stop the gather
        out["nccl_error"] = f"{type(e).__name__}: {e}"
    return out


def pairings(n: int) -> list[list[tuple[int, int]]]:
    """Rounds of disjoint pairs covering every pair of ``n`` members once (the circle method)."""
    ids: list[int | None] = list(range(n)) + ([None] if n % 2 else [])
    m = len(ids)
    rounds = []
    for _ in range(m - 1):
        pairs = []
        for i in range(m // 2):
            a, b = ids[i], ids[m - 1 - i]
            if a is not None and b is not None:
                pairs.append((min(a, b), max(a, b)))
        rounds.append(sorted(pairs))
        ids = [ids[0], ids[-1], *ids[1:-1]]
    return rounds


def pair_bandwidth(store: JobStore, me: int, size: int, nbytes: int = 4 << 20, iters: int = 4,
                   timeout: float = 20.0, passes: int = 2) -> dict[str, Any]:
    """A gloo group of ``size`` members on the job's store; each pair swaps ``nbytes`` both ways, in rounds.

    Returns this member's view: for each partner, seconds per exchange and
    GB/s per direction, or the error gloo raised. Gloo picks its interface
    exactly as the job's own gloo group would (GLOO_SOCKET_IFNAME, else the
    hostname), so a wrong setting on one node shows here too.

    The ``iters`` timed exchanges of a pair are split over ``passes`` passes
    over the whole schedule, and the pair keeps its best: a burst of load on
    one node (a data loader, another job) slows the pair it happens to hit
    several times over for a moment, while a slow link is slow in every pass.
    Splitting them keeps the test as long as one pass of ``iters``.
    """
    import torch
    import torch.distributed as dist

    out: dict[str, Any] = {"member": me, "size": size, "bytes": nbytes, "iters": iters, "passes": max(1, passes), "pairs": {}, "error": None}
    t0 = time.monotonic()
    try:
        pg: Any = dist.ProcessGroupGloo(dist.PrefixStore("bw/", store.store), me, size, timedelta(seconds=timeout))
    except Exception as e:  # noqa: BLE001 - gloo's own words are the evidence
        out["error"] = f"{type(e).__name__}: {str(e).strip().splitlines()[0] if str(e).strip() else ''}"
        out["stage"] = "init"
        return out
    out["init_s"] = round(time.monotonic() - t0, 3)
    small = torch.zeros(1024, dtype=torch.uint8)
    small_in = torch.empty_like(small)
    big = torch.ones(nbytes, dtype=torch.uint8)
    big_in = torch.empty_like(big)
    pair_no = 0
    per_pass = max(1, iters // max(1, passes))
    best_s: dict[int, float] = {}
    failed: set[int] = set()
    for n_pass in range(max(1, passes)):
        if n_pass and failed:  # a pair failed: its error stands, and no later pass waits on it again
            break
        for rnd in pairings(size):
            for a, b in rnd:
                pair_no += 1
                if me not in (a, b):
                    continue
                peer = b if me == a else a
                # Both sides derive the same tags from the pair's place in the schedule.
                tag = pair_no * (per_pass + 2)
                try:
                    # A small swap first: the connection is set up and both sides are here before the clock starts.
                    w = [pg.send([small], peer, tag), pg.recv([small_in], peer, tag)]
                    for x in w:
                        x.wait()
                    for k in range(per_pass):
                        s = time.perf_counter()
                        w = [pg.send([big], peer, tag + 1 + k), pg.recv([big_in], peer, tag + 1 + k)]
                        for x in w:
                            x.wait()
                        best_s[peer] = min(best_s.get(peer, float("inf")), time.perf_counter() - s)
                    best = best_s[peer]
                    out["pairs"][str(peer)] = {"time_s": round(best, 6), "gbps": round(nbytes / best / 1e9, 4)}
                except Exception as e:  # noqa: BLE001 - one failed pair does not end the test of the others
                    failed.add(peer)
                    if peer not in best_s:  # a later pass's failure leaves the figure an earlier one measured
                        out["pairs"][str(peer)] = {"error": f"{type(e).__name__}: "
                                                            f"{str(e).strip().splitlines()[0][:300]}"}
    out["elapsed_s"] = round(time.monotonic() - t0, 3)
    try:
        del pg
    except Exception:  # noqa: BLE001 - teardown only
        pass
    return out
