"""A small job on the NCCL-like test backend (tests/fakenccl.py) that hangs on purpose, as the GPU captures do.

It follows ../shared/gpu/job.py, the job of the H100 captures, with its waits where a GPU job has them:
collectives return at once (``FAKENCCL_STREAM_WAIT=1``) and a rank waits for the GPU afterwards, in a
``barrier()`` at the end of each step (NCCL's barrier blocks the host until the device ran everything
before it). So a rank whose peer never comes is not inside the collective: it waits one line later.

``CDH_SCENARIO``: ``straggler`` (the last rank sleeps in load_batch at step ``CDH_STEP``: the others
wait in the step's barrier with its all_reduce pending) or ``mismatch`` (at that step the last rank
calls broadcast where the others call all_reduce; every rank then waits in the barrier).
``CDH_READY_DIR`` gets ``<stage>.rank<N>`` files as in hangjob.py. Lines the tests look for carry a
``# MARK:name`` comment.
"""

from __future__ import annotations

import os
import sys
import time
from datetime import timedelta

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

import tests.fakenccl  # noqa: E402,F401 - registers the backend

SCENARIO = os.environ.get("CDH_SCENARIO", "straggler")
RANK = int(os.environ.get("RANK", "0"))
WORLD = int(os.environ.get("WORLD_SIZE", "1"))
STEP = int(os.environ.get("CDH_STEP", "3"))
READY = os.environ.get("CDH_READY_DIR")


def mark(stage: str) -> None:
    if READY:
        with open(os.path.join(READY, f"{stage}.rank{RANK}"), "w") as f:
            f.write(str(os.getpid()))


def load_batch(step: int) -> torch.Tensor:
    if SCENARIO == "straggler" and RANK == WORLD - 1 and step == STEP:
        time.sleep(3600)  # MARK:async-sleep
    return torch.randn(32, 16)


def main() -> int:
    dist.init_process_group("fakenccl", timeout=timedelta(seconds=float(os.environ.get("CDH_PG_TIMEOUT", "300"))))
    for step in range(1 << 20):
        x = load_batch(step)  # MARK:async-load
        t = torch.full((1 << 10,), float(RANK + 1)) + x.sum() * 0
        if SCENARIO == "mismatch" and step == STEP and RANK == WORLD - 1:
            dist.broadcast(t, src=RANK)  # MARK:async-broadcast
        else:
            dist.all_reduce(t)  # MARK:async-allreduce
        dist.barrier()  # MARK:async-barrier
        if step == STEP - 1:
            mark("steady")
    return 0


if __name__ == "__main__":
    sys.exit(main())
