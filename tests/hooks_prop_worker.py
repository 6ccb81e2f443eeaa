"""One rank of a long-lived 2-rank job for the property test (tests/test_hooks_property.py), on gloo or,
with ``HOOKS_BACKEND=fakenccl``, on the NCCL-like test backend (tests/fakenccl.py).

Reads one JSON command per line on stdin: a list of collective calls. Runs them
with commdoctor.hooks installed, hashes every output, uninstalls the hooks,
runs the same calls on the same (now unwrapped) groups, hashes again,
reinstalls, and prints ``REPLY {"hooked": [...], "plain": [...]}``. Inputs are
drawn from a generator seeded by the command, so both runs see the same numbers.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import os
import sys
from typing import Any

import torch
import torch.distributed as dist

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(1, os.path.dirname(os.path.abspath(__file__)))
import commdoctor.hooks as hooks  # noqa: E402

BACKEND = os.environ.get("HOOKS_BACKEND", "gloo")
if BACKEND == "fakenccl":
    import fakenccl  # noqa: E402,F401 - registers the backend

DTYPES = {"float32": torch.float32, "float64": torch.float64, "int32": torch.int32, "int64": torch.int64}
OPS = {"SUM": dist.ReduceOp.SUM, "MAX": dist.ReduceOp.MAX, "MIN": dist.ReduceOp.MIN, "PRODUCT": dist.ReduceOp.PRODUCT}


def _h(*ts: torch.Tensor) -> str:
    h = hashlib.sha1()
    for t in ts:
        h.update(f"{t.dtype}{tuple(t.shape)}".encode())
        h.update(t.contiguous().view(torch.uint8).numpy().tobytes())
    return h.hexdigest()[:16]


def _tensor(gen: torch.Generator, dtype: str, shape: list[int]) -> torch.Tensor:
    dt = DTYPES[dtype]
    if dt.is_floating_point:
        return torch.randn(shape, generator=gen, dtype=dt)
    return torch.randint(-3, 4, shape, generator=gen, dtype=dt)


def run(calls: list[dict[str, Any]], seed: int, sub: Any) -> list[str]:
    r, w = dist.get_rank(), dist.get_world_size()
    gen = torch.Generator().manual_seed(seed * 7919 + r)
    out: list[str] = []
    for c in calls:
        op, dtype, shape = c["op"], c.get("dtype", "float32"), c.get("shape", [2])
        t = _tensor(gen, dtype, shape)
        async_op = c.get("async", False)
        group = sub if c.get("sub") else None
        work = None
        if op == "all_reduce":
            work = dist.all_reduce(t, op=OPS[c["redop"]], group=group, async_op=async_op)
            res = [t]
        elif op == "broadcast":
            work = dist.broadcast(t, src=c["root"], group=group, async_op=async_op)
            res = [t]
        elif op == "reduce":
            work = dist.reduce(t, dst=c["root"], op=OPS[c["redop"]], group=group, async_op=async_op)
            res = [t]
        elif op == "all_gather":
            outs = [torch.zeros_like(t) for _ in range(w)]
            work = dist.all_gather(outs, t, group=group, async_op=async_op)
            res = outs
        elif op == "all_gather_into_tensor":
            o = torch.zeros((w * shape[0], *shape[1:]), dtype=t.dtype)
            work = dist.all_gather_into_tensor(o, t, group=group, async_op=async_op)
            res = [o]
        elif op == "reduce_scatter_tensor":
            big = _tensor(gen, dtype, [w * shape[0], *shape[1:]])
            work = dist.reduce_scatter_tensor(t, big, op=OPS[c["redop"]], group=group, async_op=async_op)
            res = [t]
        elif op == "all_to_all_single":
            inp = _tensor(gen, dtype, [w * shape[0], *shape[1:]])
            o = torch.zeros_like(inp)
            work = dist.all_to_all_single(o, inp, group=group, async_op=async_op)
            res = [o]
        elif op == "gather":
            lst = [torch.zeros_like(t) for _ in range(w)] if r == c["root"] else None
            work = dist.gather(t, lst, dst=c["root"], group=group, async_op=async_op)
            res = lst or [t]
        elif op == "scatter":
            lst = [_tensor(gen, dtype, shape) for _ in range(w)] if r == c["root"] else None
            work = dist.scatter(t, lst, src=c["root"], group=group, async_op=async_op)
            res = [t]
        elif op == "barrier":
            work = dist.barrier(group=group, async_op=async_op)
            res = []
        elif op == "send_recv":
            if r == c["root"]:
                work = dist.isend(t, dst=1 - r) if async_op else dist.send(t, dst=1 - r)
            else:
                work = dist.irecv(t, src=1 - r) if async_op else dist.recv(t, src=1 - r)
            res = [t]
        else:
            raise ValueError(op)
        if async_op and work is not None and not isinstance(work, int):
            work.wait()
        out.append(_h(*res))
    return out


def main() -> None:
    dist.init_process_group(BACKEND, timeout=datetime.timedelta(seconds=60))
    sub = dist.new_group([0, 1])  # a second group over the same ranks: its own sequence numbers
    hooks.install()
    for line in sys.stdin:
        if not line.strip():
            continue
        cmd = json.loads(line)
        if cmd.get("quit"):
            break
        try:
            hooked = run(cmd["calls"], cmd["seed"], sub)
            hooks.uninstall()
            assert type(dist.group.WORLD).__name__ != "HookedProcessGroup"  # the real group again
            plain = run(cmd["calls"], cmd["seed"], sub)
            hooks.install()
            reply = {"hooked": hooked, "plain": plain}
        except Exception as e:  # noqa: BLE001 - reported to the test
            import traceback

            reply = {"error": f"{type(e).__name__}: {e}", "traceback": traceback.format_exc()[-2000:]}
        print("REPLY " + json.dumps(reply), flush=True)
    hooks.uninstall()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
