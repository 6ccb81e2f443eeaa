"""A small gloo training job that hangs on purpose, for commdoctor's hang tests.

Run under torchrun, or as plain processes with RANK / WORLD_SIZE / MASTER_ADDR /
MASTER_PORT set. ``CDH_SCENARIO`` picks the hang; ``CDH_ODD_RANK`` the rank
that misbehaves (default: the last); ``CDH_READY_DIR`` gets a file
``<stage>.rank<N>`` when a rank reaches a stage, so a test waits on files, not
on time. ``CDH_FR_DIR``: when ``<dir>/go`` appears, every rank writes its
flight-recorder dump (``_dump_fr_trace``) to ``<dir>/rank<N>.pkl`` and the JSON
variant to ``<dir>/json/rank<N>.json``.

Lines the tests look for carry a ``# MARK:name`` comment.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from datetime import timedelta

import torch
import torch.distributed as dist

SCENARIO = os.environ.get("CDH_SCENARIO", "straggler")
RANK = int(os.environ.get("RANK", "0"))
WORLD = int(os.environ.get("WORLD_SIZE", "1"))
ODD = int(os.environ.get("CDH_ODD_RANK", str(WORLD - 1)))
READY = os.environ.get("CDH_READY_DIR")
FR_DIR = os.environ.get("CDH_FR_DIR")


def mark(stage: str) -> None:
    if READY:
        with open(os.path.join(READY, f"{stage}.rank{RANK}"), "w") as f:
            f.write(str(os.getpid()))


def fr_dumper() -> None:
    import torch._C._distributed_c10d as c10d

    go = os.path.join(FR_DIR or "", "go")
    for _ in range(6000):  # bounded: 10 minutes
        if os.path.exists(go):
            break
        time.sleep(0.1)
    else:
        return
    data = c10d._dump_fr_trace(True, True, False)
    with open(os.path.join(FR_DIR or "", f"rank{RANK}.pkl.tmp"), "wb") as f:
        f.write(data)
    os.rename(os.path.join(FR_DIR or "", f"rank{RANK}.pkl.tmp"), os.path.join(FR_DIR or "", f"rank{RANK}.pkl"))
    os.makedirs(os.path.join(FR_DIR or "", "json"), exist_ok=True)
    with open(os.path.join(FR_DIR or "", "json", f"rank{RANK}.json"), "wb") as f:
        f.write(c10d._dump_fr_trace_json(True, False))
    mark("fr")


class Data(torch.utils.data.Dataset):
    def __len__(self) -> int:
        return 1 << 20

    def __getitem__(self, i: int) -> torch.Tensor:
        if RANK == ODD and i >= 8:
            time.sleep(3600)  # MARK:dataset-sleep
        return torch.ones(4)


def straggler() -> None:
    loader = torch.utils.data.DataLoader(Data(), batch_size=4)
    for step, batch in enumerate(loader):  # MARK:loader-next
        x = batch.sum(0)
        dist.all_reduce(x)  # MARK:straggler-allreduce
        if step == 1:
            mark("steady")


def mismatch() -> None:
    x = torch.ones(4)
    dist.all_reduce(x)
    mark("steady")
    if RANK == ODD:
        dist.broadcast(x, src=0)  # MARK:mismatch-broadcast
        dist.all_reduce(x)
    else:
        dist.all_reduce(x)  # MARK:mismatch-allreduce
        dist.broadcast(x, src=0)


def stopped() -> None:
    x = torch.ones(1 << 20)
    dist.all_reduce(x)
    mark("steady")
    # The odd rank is stopped while it waits inside the loop's all_reduce: it enters at once, the others
    # a second later, so the stop (after 0.5 s) never catches it between two calls.
    if RANK == ODD:
        def stop_me() -> None:
            time.sleep(0.5)
            os.kill(os.getpid(), signal.SIGSTOP)
        threading.Thread(target=stop_me, daemon=True).start()
    else:
        time.sleep(1.0)
    for _ in range(1 << 30):
        dist.all_reduce(x)  # MARK:loop-allreduce


def loop() -> None:
    x = torch.ones(1 << 16)
    dist.all_reduce(x)
    mark("steady")
    for _ in range(1 << 30):
        dist.all_reduce(x)  # MARK:net-allreduce


def main() -> int:
    if SCENARIO == "dead" and RANK == ODD:
        mark("steady")
        time.sleep(3600)  # MARK:slow-start (the test kills this rank here)
    if SCENARIO == "dead":
        mark("steady")
    dist.init_process_group("gloo", timeout=timedelta(seconds=float(os.environ.get("CDH_PG_TIMEOUT", "300"))))  # MARK:init
    if FR_DIR:
        threading.Thread(target=fr_dumper, daemon=True, name="fr-dumper").start()
    {"straggler": straggler, "mismatch": mismatch, "stopped": stopped, "loop": loop}[SCENARIO]()
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
