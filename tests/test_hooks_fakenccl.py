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
from hooks_support import explain, job

pytestmark = needs_torch


def test_async_work_untimed_wait_and_future_do_no_harm() -> None:
    res = job("fake_check@plain", "fakenccl")
    why = explain(res)
    for r in res:
        assert r.get("completed_at_once") is False, why  # the call returned before the operation ran
        # wait() without a timeout waited for the late peer; the future holds the outputs
        assert r["result"] == [[2.0] * 4, True, [[2.0] * 4]], why


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
