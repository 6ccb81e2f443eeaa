"""The NCCL-like test backend (tests/fakenccl.py) checked against what the GPU captures show NCCL does.

The hooks' tests run on this backend as well as on gloo; these tests make sure it really punishes
what NCCL punishes (../shared/gpu-captures/hooks/hooks-ddp-healthy-nccl.log: ``Work WorkNCCL(SeqNum=1,
OpType=ALLGATHER, ...) timed out in blocking wait``, then SIGABRT) and allows what NCCL allows.
The run is the last scenario of the shared fakenccl job (tests/hooks_support.py), without hooks.
"""

from __future__ import annotations

import re
import signal

from tests.conftest import needs_torch
from hooks_support import SHARED, explain, job

pytestmark = needs_torch


@SHARED["fakenccl"]  # reads the shared fakenccl job
def test_async_work_untimed_wait_and_future_do_no_harm() -> None:
    res = job("fake_check@plain", "fakenccl")
    why = explain(res)
    for r in res:
        assert r["error"] is None and "result" in r, why
        assert r.get("completed_at_once") is False, why  # the call returned before the operation ran
        # wait() without a timeout waited for the late peer; the future holds the outputs
        assert r["result"] == [[2.0] * 4, True, [[2.0] * 4]], why


@SHARED["fakenccl"]  # reads the shared fakenccl job
def test_expired_timed_wait_takes_the_process_down_as_nccl_does() -> None:
    """Rank 0 waits 200 ms for an all_reduce rank 1 is 3 s late for: NCCL's lines, then SIGABRT.
    Rank 1's operation then fails (its peer is gone) and its watchdog takes it down too: torchrun
    reported exitcode -6 for every rank of the captured job."""
    r0, r1 = res = job("fake_check@plain", "fakenccl")
    why = explain(res)
    assert r0["returncode"] == -signal.SIGABRT and "survived" not in r0, why
    assert re.search(r"\[Rank 0\] Work WorkNCCL\(SeqNum=2, OpType=ALLREDUCE, NumelIn=4, NumelOut=4, "
                     r"Timeout\(ms\)=30000\) timed out in blocking wait\.", r0["stderr"]), why
    assert "[Rank 0] To avoid data inconsistency, we are taking the entire process down." in r0["stderr"], why
    assert r1["returncode"] == -signal.SIGABRT, why
    assert "[Rank 1] To avoid data inconsistency, we are taking the entire process down." in r1["stderr"], why


_ONE_RANK = r"""
import datetime, json, os, sys
sys.path.insert(0, os.path.join(os.getcwd(), "tests"))
import torch, torch.distributed as dist
import fakenccl
import commdoctor.hooks as hooks
hooks.install(records_dir=None)
out = {}
for i, backend in enumerate(("gloo", "fakenccl")):
    dist.init_process_group(backend, store=dist.HashStore(), rank=0, world_size=1,
                            timeout=datetime.timedelta(seconds=30))
    w = dist.group.WORLD
    t = torch.ones(3)
    dist.all_reduce(t)  # fakenccl: 300 ms of communicator set-up, far past a 50 ms wait slice
    work = dist.all_reduce(t, async_op=True)
    work.wait()
    try:
        from commdoctor.hooks.group import poll_safe
        polled, bare = poll_safe(w._cd_inner)
    except ImportError:  # hooks without a per-backend decision (main at 1c28f6e)
        polled, bare = ["?"], None
    out[backend] = {"polled": sorted(polled), "bare": bare, "result": t.tolist(), "wrapped": type(w).__name__}
    dist.destroy_process_group()
print("OUT " + json.dumps(out), flush=True)
"""


def test_hooks_decide_per_backend_and_never_time_a_wait_on_the_nccl_like_one() -> None:
    """One-rank groups in one process: gloo's calls may be waited on in timed slices, fakenccl's may not,
    and a hooked fakenccl call whose communicator takes 300 ms to set up completes (on main at 1c28f6e
    the hooks' first 50 ms slice expired and the backend took the process down)."""
    import json
    import os
    import subprocess
    import sys

    from tests.conftest import REPO

    env = dict(os.environ, PYTHONPATH=str(REPO), FAKENCCL_INIT_MS="300", OMP_NUM_THREADS="1")
    p = subprocess.run([sys.executable, "-c", _ONE_RANK], capture_output=True, text=True, env=env, timeout=120,
                       cwd=str(REPO))
    got = [ln for ln in p.stdout.splitlines() if ln.startswith("OUT ")]
    assert p.returncode == 0 and got, p.stderr[-3000:]
    out = json.loads(got[0][4:])
    assert out["gloo"]["polled"] == ["cpu", "cuda"] and out["gloo"]["bare"] is True, out
    assert out["fakenccl"]["polled"] == [] and out["fakenccl"]["bare"] is False, out
    for backend in ("gloo", "fakenccl"):
        assert out[backend]["wrapped"] == "HookedProcessGroup" and out[backend]["result"] == [1.0] * 3, out
    assert "timed out in blocking wait" not in p.stderr
