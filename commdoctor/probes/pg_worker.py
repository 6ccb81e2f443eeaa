"""One rank of commdoctor's local process-group test (run as a child process).

Promise: prints one JSON object per line on stdout describing how far it got
(``joined``, one ``collective`` per verified op, ``bw`` per measured size,
``done``), or an ``error`` line with the backend's own error text. The parent
(commdoctor.probes.pg_init) enforces the deadline and kills it.

usage: python -m commdoctor.probes.pg_worker RANK WORLD BACKEND INIT_METHOD TIMEOUT_S SIZES [DEVICE]
"""

from __future__ import annotations

import json
import sys
import time
import traceback


def emit(**kw: object) -> None:
    sys.stdout.write(json.dumps(kw) + "\n")
    sys.stdout.flush()


# nccl-tests' bus bandwidth factors (doc/PERFORMANCE.md in nccl-tests):
# what each rank's link carries relative to the algorithm bandwidth.
def bus_factor(op: str, n: int) -> float:
    if op == "all_reduce":
        return 2 * (n - 1) / n
    if op in ("all_gather", "reduce_scatter", "all_to_all"):
        return (n - 1) / n
    return 1.0  # broadcast, reduce


def main(argv: list[str]) -> int:
    rank, world, backend, init_method = int(argv[0]), int(argv[1]), argv[2], argv[3]
    timeout_s, sizes = float(argv[4]), [int(s) for s in argv[5].split(",") if s]
    device_type = argv[6] if len(argv) > 6 else ("cuda" if backend == "nccl" else "cpu")
    emit(event="started", rank=rank, pid=__import__("os").getpid())
    try:
        from datetime import timedelta

        import torch
        import torch.distributed as dist
    except Exception as e:  # noqa: BLE001 - reported to the parent as data
        emit(event="error", stage="import", type=type(e).__name__, message=str(e))
        return 1
    stage = "init"
    try:
        device = torch.device("cpu")
        if device_type == "cuda":
            n = torch.cuda.device_count()
            torch.cuda.set_device(rank % max(n, 1))
            device = torch.device("cuda", rank % max(n, 1))
        emit(event="init", rank=rank)  # reached init_process_group: from here it waits for its peers
        t0 = time.perf_counter()
        dist.init_process_group(backend, init_method=init_method, rank=rank, world_size=world,
                                timeout=timedelta(seconds=timeout_s))
        emit(event="joined", rank=rank, init_s=time.perf_counter() - t0)

        def sync() -> None:
            if device.type == "cuda":
                torch.cuda.synchronize(device)

        # Verify numbers: each op's result is known in closed form.
        stage = "all_reduce"
        x = torch.full((1024,), float(rank + 1), device=device)
        dist.all_reduce(x)
        want = world * (world + 1) / 2
        ok = bool(torch.all(x == want))
        emit(event="collective", op=stage, ok=ok, expected=want, got=float(x[0]))

        stage = "all_gather"
        outs = [torch.empty(256, device=device) for _ in range(world)]
        dist.all_gather(outs, torch.full((256,), float(rank), device=device))
        got = [float(o[0]) for o in outs]
        emit(event="collective", op=stage, ok=got == [float(r) for r in range(world)], expected=list(range(world)), got=got)

        stage = "broadcast"
        b = torch.full((256,), 42.0 if rank == 0 else -1.0, device=device)
        dist.broadcast(b, src=0)
        emit(event="collective", op=stage, ok=bool(torch.all(b == 42.0)), expected=42.0, got=float(b[0]))

        stage = "reduce_scatter"
        try:
            inp = torch.arange(world * 256, dtype=torch.float32, device=device)
            out = torch.empty(256, device=device)
            dist.reduce_scatter_tensor(out, inp)
            want_rs = float(rank * 256) * world
            emit(event="collective", op=stage, ok=float(out[0]) == want_rs, expected=want_rs, got=float(out[0]))
        except (RuntimeError, NotImplementedError) as e:
            if "not supported" in str(e).lower() or "not implemented" in str(e).lower() or isinstance(e, NotImplementedError):
                emit(event="collective", op=stage, ok=None, unsupported=str(e).splitlines()[0])
            else:
                raise

        stage = "all_to_all"
        a_in = torch.full((world * 64,), float(rank), device=device)
        a_out = torch.empty(world * 64, device=device)
        dist.all_to_all_single(a_out, a_in)
        got_a = [float(a_out[i * 64]) for i in range(world)]
        emit(event="collective", op=stage, ok=got_a == [float(r) for r in range(world)], expected=list(range(world)), got=got_a)

        # Bandwidth, with nccl-tests' definitions: algbw = bytes / time.
        stage = "bandwidth"
        for nbytes in sizes:
            n = max(1, nbytes // 4)
            t = torch.ones(n, device=device)
            for _ in range(2):
                dist.all_reduce(t)
            sync()
            dist.barrier()
            iters = 5 if nbytes >= (8 << 20) else 20
            t0 = time.perf_counter()
            for _ in range(iters):
                dist.all_reduce(t)
            sync()
            dt = (time.perf_counter() - t0) / iters
            algbw = nbytes / dt / 1e9
            emit(event="bw", op="all_reduce", bytes=nbytes, time_s=dt, algbw_gbps=algbw,
                 busbw_gbps=algbw * bus_factor("all_reduce", world))
        stage = "destroy"
        dist.barrier()
        dist.destroy_process_group()
        emit(event="done", rank=rank)
        return 0
    except Exception as e:  # noqa: BLE001 - the backend's own error text is the evidence
        emit(event="error", stage=stage, type=type(e).__name__, message=str(e), traceback=traceback.format_exc()[-4000:])
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
