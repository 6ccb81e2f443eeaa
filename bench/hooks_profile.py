"""Where commdoctor.hooks spends its time per call: profiles of a 2-rank gloo job.

usage: python bench/hooks_profile.py [--calls N] [--what allreduce|ddp] [--plain]
                                     [--cprofile FILE] [--phases] [--stub] [--code DIR]

Starts 2 ranks on 127.0.0.1 with the hooks installed (mode "raise", records
on; ``--plain``: without) and runs N all_reduce calls of 4 KiB or N small DDP
steps. Rank 0 prints the mean wall time per call, its calling thread's CPU
time per call, the background thread's CPU time per call, and the cost of
describe_call / user_site / make_fp each in a tight loop. Other modes:

- ``--cprofile FILE``: rank 0's loop under cProfile, top entries printed.
- ``--phases``: rank 0 runs a copy of the hot path of a blocking all_reduce
  with a clock between its steps (``PHASE_CLOCK=cpu``: the thread's CPU clock),
  the other rank calls dist.all_reduce as usual: µs per call per step, live.
  Keep the copy in step with ``HookedProcessGroup._cd_collective``.
- ``--stub``: the hooks' own cost without the backend: the wrapper's real group
  is replaced by a stub returning a completed handle, beside the same loop
  through the wrapper with the hooks off (warm caches: a floor, not the live
  cost; a collective's wait leaves the caches cold, 3 to 5 times slower).
- ``--code DIR``: measure the hooks of another checkout (e.g. main's, exported
  with ``git archive main commdoctor | tar -x -C DIR``).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
#: Which commdoctor to measure (a checkout's root); this repository's by default. Lets the same
#: script time another version of the hooks, e.g. main's: ``--code /path/to/main``.
CODE = os.environ.get("COMMDOCTOR_BENCH_CODE") or REPO


def _ticker_cpu(h) -> float:  # type: ignore[no-untyped-def]
    t = getattr(h, "_ticker", None)
    try:
        return time.clock_gettime(time.pthread_getcpuclockid(t.ident))
    except (AttributeError, OSError, TypeError):
        return 0.0


def worker(args: argparse.Namespace) -> None:
    import torch
    import torch.distributed as dist

    sys.path.insert(0, CODE)
    import commdoctor.hooks as hooks
    from commdoctor.hooks import core

    rank = int(os.environ["RANK"])
    torch.set_num_threads(1)
    if not args.plain:
        hooks.install(mode="raise", records_dir=args.records_dir)
    dist.init_process_group("gloo")
    h = core.current()
    t = torch.ones(1024)
    if args.what == "ddp":
        m = torch.nn.Sequential(torch.nn.Linear(256, 256), torch.nn.ReLU(), torch.nn.Linear(256, 256),
                                torch.nn.ReLU(), torch.nn.Linear(256, 10))
        ddp = torch.nn.parallel.DistributedDataParallel(m, bucket_cap_mb=0.25)
        opt = torch.optim.SGD(ddp.parameters(), lr=0.01)
        x = torch.randn(32, 256)

        def step() -> None:
            opt.zero_grad(set_to_none=True)
            ddp(x).square().mean().backward()
            opt.step()
    else:
        def step() -> None:
            dist.all_reduce(t)
    for _ in range(20):
        step()
    dist.barrier()
    if args.stub:
        out = _stub(h, t, args.calls, rank)
        dist.barrier()
        if rank == 0:
            print("RESULT " + json.dumps(out), flush=True)
        hooks.uninstall()
        dist.destroy_process_group()
        return
    if args.phases and h is not None and args.what == "allreduce":
        ph = _phases(h, t, args.calls, rank)
        dist.barrier()
        if rank == 0:
            print("RESULT " + json.dumps({"phases_us": ph}), flush=True)
        hooks.uninstall()
        dist.destroy_process_group()
        return
    prof = None
    if args.cprofile and rank == 0:
        import cProfile

        prof = cProfile.Profile()
    k0, c0, t0 = (_ticker_cpu(h) if h else 0.0), time.thread_time(), time.perf_counter()
    if prof:
        prof.enable()
    for _ in range(args.calls):
        step()
    if prof:
        prof.disable()
    wall = (time.perf_counter() - t0) / args.calls
    cpu = (time.thread_time() - c0) / args.calls
    tick = ((_ticker_cpu(h) - k0) / args.calls) if h else 0.0
    dist.barrier()
    out = {"wall_us": wall * 1e6, "cpu_us": cpu * 1e6, "ticker_us": tick * 1e6}
    if h is not None and rank == 0:
        out["parts_us"] = _parts(h, t)
    if rank == 0:
        print("RESULT " + json.dumps(out), flush=True)
        if prof:
            import pstats

            prof.dump_stats(args.cprofile)
            pstats.Stats(args.cprofile).sort_stats("tottime").print_stats(25)
    hooks.uninstall()
    dist.destroy_process_group()


class _StubGroup:
    """Stands in for gloo under the wrapper: every allreduce returns an already completed handle."""

    def __init__(self, done) -> None:  # type: ignore[no-untyped-def]
        self.done = done

    def allreduce(self, *args, **kw):  # type: ignore[no-untyped-def]
        return self.done


def _stub(h, t, calls: int, rank: int) -> dict[str, float]:  # type: ignore[no-untyped-def]
    """The hooks' own cost per dist.all_reduce, without the backend: the wrapper's real group is
    replaced by a stub returning a completed handle. Both ranks run the loop (entries go out and are
    checked as usual). Compared with the same loop over the stub without the wrapper."""
    import torch.distributed as dist
    import torch.distributed.distributed_c10d as c10d

    w = c10d._get_default_group()
    real = w._cd_inner
    done = real.allreduce([t])
    done.wait()
    stub = _StubGroup(done)
    out: dict[str, float] = {}
    if os.environ.get("STUB_PROFILE") and rank == 0:
        import cProfile
        import pstats

        w._cd_inner = stub
        cProfile.runctx("for _ in range(calls): dist.all_reduce(t)", globals(), {"calls": calls, "dist": dist, "t": t},
                        "/tmp/hp/stub.prof")
        w._cd_inner = real
        pstats.Stats("/tmp/hp/stub.prof").sort_stats("tottime").print_stats(22)
    elif os.environ.get("STUB_PROFILE"):
        w._cd_inner = stub
        for _ in range(calls):
            dist.all_reduce(t)
        w._cd_inner = real
    # "bare": the same loop through the wrapper with the hooks off (dist.all_reduce's own Python
    # work, the wrapper's delegation and the stub): the floor under the hooks' own cost.
    for name in ("bare", "hooks", "bare", "hooks"):
        dist.barrier()
        k0, c0, t0 = _ticker_cpu(h), time.thread_time(), time.perf_counter()
        w._cd_inner = stub
        if name == "bare":
            w._cd_hooks = None
        try:
            for _ in range(calls):
                dist.all_reduce(t)
        finally:
            w._cd_inner, w._cd_hooks = real, h
        wall, cpu, tick = time.perf_counter() - t0, time.thread_time() - c0, _ticker_cpu(h) - k0
        for k, v in (("wall", wall), ("cpu", cpu), ("ticker", tick)):
            key = f"{name}_{k}_us"
            out[key] = min(out.get(key, 1e9), v / calls * 1e6)
        time.sleep(0.2)  # let the background thread catch up (its work is counted for the block)
        if name == "hooks":
            out["hooks_ticker_us"] = min(out.get("hooks_ticker_us", 1e9), (_ticker_cpu(h) - k0) / calls * 1e6)
    return out


def _phases(h, t, calls: int, rank: int) -> dict[str, float]:  # type: ignore[no-untyped-def]
    """Rank 0 runs a copy of HookedProcessGroup._cd_collective with a clock between its steps (the
    other rank calls dist.all_reduce as usual): µs per call spent in each step, wall clock."""
    import torch.distributed as dist
    import torch.distributed.distributed_c10d as c10d

    from commdoctor.hooks import group as gm
    from commdoctor.hooks.callsite import user_site
    from commdoctor.hooks.checker import make_fp

    w = c10d._get_default_group()
    assert isinstance(w, gm.HookedProcessGroup)
    if rank != 0:
        for _ in range(calls):
            dist.all_reduce(t)
        return {}
    pc = time.thread_time if os.environ.get("PHASE_CLOCK") == "cpu" else time.perf_counter
    names = ("describe", "site", "lock+seq+record", "gate+publish", "enqueue", "entry", "wait")
    acc = dict.fromkeys(names, 0.0)
    fast = getattr(gm, "_fast_describe", None)
    for _ in range(calls):
        opts = dist.AllreduceOptions()
        opts.reduceOp = dist.ReduceOp.SUM
        opts.asyncOp = False
        args, kw = ([t], opts), {}
        t0 = pc()
        d = fast("allreduce", args, kw) if fast else None
        if d is None:
            op, red, dtype, shapes, fp_shapes, root, dev, async_op = gm.describe_call("allreduce", args, kw)
            fp = make_fp(op, red, dtype, fp_shapes, root, dev)
        else:
            op, red, dtype, shapes, fp, root, dev, async_op = d
        t1 = pc()
        site = user_site(1)
        t2 = pc()
        r = h.recorder
        w._cd_lock.acquire()
        g = w._cd_state or h.group_state(w)
        seq = g.seq
        g.seq = seq + 1
        call = (g.name, seq, op, red, dtype, shapes, None, root, dev, async_op, site)
        r._q.append(("enter", call, time.time()))
        t3 = pc()
        h.before(w, g, seq, fp, site, async_op, call)
        t4 = pc()
        work = w._cd_inner.allreduce(*args)
        w._cd_lock.release()
        t5 = pc()
        entry = [work, call, None]
        r._pending.append(entry)
        t6 = pc()
        if hasattr(gm, "_wait"):
            gm._wait(work, h, (g.name, seq), entry)
        else:
            gm.HookedWork(work, h, g.name, seq, entry).wait()
        t7 = pc()
        for k, x, y in zip(names, (t0, t1, t2, t3, t4, t5, t6), (t1, t2, t3, t4, t5, t6, t7)):
            acc[k] += y - x
    return {k: round(v / calls * 1e6, 1) for k, v in acc.items()}


def _parts(h, t) -> dict[str, float]:  # type: ignore[no-untyped-def]
    """Each hot-path step on the live objects, timed in a loop of its own (µs per call)."""
    import torch.distributed as dist

    from commdoctor.hooks import group as gm
    from commdoctor.hooks.callsite import user_site
    from commdoctor.hooks.checker import make_fp

    opts = dist.AllreduceOptions()
    opts.reduceOp = dist.ReduceOp.SUM
    opts.asyncOp = False
    args = ([t], opts)
    n = 20000
    res: dict[str, float] = {}

    def timeit(name: str, fn) -> None:  # type: ignore[no-untyped-def]
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        res[name] = (time.perf_counter() - t0) / n * 1e6

    timeit("describe_call", lambda: gm.describe_call("allreduce", args, {}))
    timeit("user_site", lambda: user_site(1))
    d = gm.describe_call("allreduce", args, {})
    timeit("make_fp", lambda: make_fp(d[0], d[1], d[2], d[4], d[5], d[6]))
    return res


def launch(extra: list[str], env_extra: dict[str, str]) -> tuple[dict | None, str]:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    procs = []
    for r in range(2):
        env = dict(os.environ, RANK=str(r), WORLD_SIZE="2", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port),
                   OMP_NUM_THREADS="1", **env_extra)
        env["PYTHONPATH"] = CODE
        procs.append(subprocess.Popen([sys.executable, os.path.abspath(__file__), "--worker", *extra], env=env,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    res, text = None, ""
    for p in procs:
        so, se = p.communicate(timeout=600)
        for line in so.splitlines():
            if line.startswith("RESULT "):
                res = json.loads(line[7:])
            else:
                text += line + "\n"
        if p.returncode:
            text += se[-2000:]
    return res, text


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--calls", type=int, default=2000)
    p.add_argument("--what", choices=("allreduce", "ddp"), default="allreduce")
    p.add_argument("--cprofile", default="")
    p.add_argument("--plain", action="store_true", help="no hooks (the baseline)")
    p.add_argument("--phases", action="store_true", help="time each step of the hot path on the live job")
    p.add_argument("--stub", action="store_true", help="the hooks' own cost per call, gloo replaced by a stub")
    p.add_argument("--records-dir", default=None)
    p.add_argument("--code", default=None, help="root of the commdoctor checkout to measure (default: this one)")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.worker:
        worker(args)
        return 0
    if args.code:
        global CODE
        CODE = os.environ["COMMDOCTOR_BENCH_CODE"] = os.path.abspath(args.code)
    import tempfile

    extra = ["--calls", str(args.calls), "--what", args.what]
    if args.cprofile:
        extra += ["--cprofile", args.cprofile]
    if args.plain:
        extra += ["--plain"]
    if args.phases:
        extra += ["--phases"]
    if args.stub:
        extra += ["--stub"]
    extra += ["--records-dir", args.records_dir or tempfile.mkdtemp(prefix="cd-prof-hooks-")]
    res, text = launch(extra, {})
    print(text)
    print(json.dumps(res, indent=1))
    return 0 if res else 1


if __name__ == "__main__":
    sys.exit(main())
