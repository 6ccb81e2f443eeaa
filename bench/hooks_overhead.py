"""What commdoctor.hooks costs, beside what TORCH_DISTRIBUTED_DEBUG=DETAIL costs, measured side by side.

usage: python bench/hooks_overhead.py [--reps N] [--quick] [--json] [--code DIR]

Starts one gloo job of 2 ranks on 127.0.0.1 with five groups over the same
two ranks: a plain gloo group, a second plain group (the A/A control: its
ratio to the first shows how far this machine lets the measurement itself
be off), a group created under DETAIL (torch wraps it in
_ProcessGroupWrapper), and two groups wrapped by commdoctor.hooks (mode
"raise", records on): "hooks" with the default gate, "always" with every call
gated (``gate="always"``). For all_reduce at 4 KiB, 64 KiB, 1 MiB and 16 MiB
the five take turns call by call (one round = one call on each, in an order
that rotates every round), so that load from other processes on the machine
hits all of them alike. A small DDP training step (Linear 256-256-256-10,
batch 32), once with DDP's default buckets (one all_reduce of 524 KiB per step)
and once with bucket_cap_mb=0.25 (two of about 256 KiB), takes turns between a
plain, a hooked and a second plain model in runs of 40 steps (``--ddp-steps`` in all per model), so that the work the
hooks' background thread does every 50 ms lands mostly in the hooked runs.

The table shows, per size: the median time per call of each; hooks/plain, the
median over blocks of rounds of (hooks' time in the block / plain's time in
the same block), with the 25th-75th percentile of those block ratios; the
total ratio over all rounds with a 95% confidence interval (bootstrap over
blocks); DETAIL/plain and gate=always/plain the same way; the A/A control;
and the hooks' own CPU time per call in µs (the calling thread's CPU beyond
plain's, plus the hooks' background thread's, per hooked call), also as a
share of plain's time per call. The CPU figure is the precise one: on a loaded
machine the time ratios move by several percent from run to run (watch the
A/A column), the CPU cost does not. DDP under DETAIL segfaults in torch
2.13 (FIELD-NOTES), so it runs in a job of its own and the table says what
became of it.

``--code DIR`` measures the hooks of another checkout (e.g. main's) with this
same script, for before/after figures taken back to back.

Goal (issue 5): hooks/plain <= 1.05 from 64 KiB up, and below DETAIL at every size.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import time

SIZES = [(4 << 10, "4 KiB"), (64 << 10, "64 KiB"), (1 << 20, "1 MiB"), (16 << 20, "16 MiB")]
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
#: Which commdoctor's hooks to measure (a checkout's root); this one by default (--code).
CODE = os.environ.get("COMMDOCTOR_BENCH_CODE") or REPO
KINDS = ("plain", "hooks", "always", "detail", "plain2")
DDP_RUN = 40  # DDP steps per model before the next model's turn (one block of the statistics)
#: (row label, DDP's bucket_cap_mb): DDP's default (25 MB; the model's 524 KiB of gradients fit DDP's
#: 1 MiB first bucket: one all_reduce per step), and 0.25 MB (two buckets of about 256 KiB: two calls).
DDP_CONFIGS = (("DDP 1 bkt", 25.0), ("DDP 2 bkt", 0.25))


def _block(nbytes: int) -> int:
    """Rounds per block (a block ratio compares sums over this many rounds)."""
    return 20 if nbytes <= 64 << 10 else (10 if nbytes <= 1 << 20 else 2)


def worker(args: argparse.Namespace) -> None:
    import torch
    import torch.distributed as dist

    sys.path.insert(0, CODE)
    import commdoctor.hooks as hooks
    from commdoctor.hooks import core

    rank = int(os.environ["RANK"])
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    if args.ddp_detail:
        # DDP under DETAIL in a job of its own: it crashed in 2.13; report what happens.
        dist.set_debug_level(dist.DebugLevel.DETAIL)
        g = dist.new_group([0, 1])
        dist.set_debug_level(dist.DebugLevel.OFF)
        ddp, opt, x = _ddp(torch, g)
        t = [_timed_step(ddp, opt, x)[0] for _ in range(15)]
        if rank == 0:
            print("RESULT " + json.dumps({"ddp_detail": t}), flush=True)
        dist.destroy_process_group()
        return

    plain = dist.new_group([0, 1])
    plain2 = dist.new_group([0, 1])  # a second plain group: the A/A control of the measurement itself
    dist.set_debug_level(dist.DebugLevel.DETAIL)
    detail = dist.new_group([0, 1])
    dist.set_debug_level(dist.DebugLevel.OFF)
    hooks.install(mode="raise", records_dir=args.records_dir)
    # install() after init wraps every group, and the handles held from before stay aliases of
    # the real groups: calls through ``plain`` and ``detail`` go straight to them, unhooked.
    hooked = dist.new_group([0, 1])
    always = dist.new_group([0, 1])
    assert type(hooked).__name__ == "HookedProcessGroup" and type(plain) is dist.ProcessGroup
    groups = {"plain": plain, "hooks": hooked, "always": always, "detail": detail, "plain2": plain2}
    gates = {"plain": "novel", "hooks": "novel", "always": "always", "detail": "novel", "plain2": "novel"}
    h = core.current()
    cfg = h.config
    pc, tt = time.perf_counter, time.thread_time
    out: dict[str, dict[str, list[float]]] = {}
    for nbytes, label in SIZES:
        t = torch.zeros(nbytes // 4)  # zeros: the sums stay finite call after call
        rounds = _block(nbytes) * max(3, args.reps if nbytes < 16 << 20 else (args.reps + 1) // 2)
        for name in KINDS:  # warm up every group at this size
            cfg.gate = gates[name]
            for _ in range(3):
                dist.all_reduce(t, group=groups[name])
        wall: dict[str, list[float]] = {k: [] for k in KINDS}
        cpu: dict[str, list[float]] = {k: [] for k in KINDS}
        dist.barrier(group=plain)
        k0 = _ticker_cpu(h)
        for i in range(rounds):
            j = i % len(KINDS)
            for name in KINDS[j:] + KINDS[:j]:
                g = groups[name]
                cfg.gate = gates[name]
                c0, t0 = tt(), pc()
                dist.all_reduce(t, group=g)
                t1, c1 = pc(), tt()
                wall[name].append(t1 - t0)
                cpu[name].append(c1 - c0)
        ticker = (_ticker_cpu(h) - k0) / (2 * rounds)  # per hooked call (hooks and always)
        out[label] = {**wall, **{"cpu_" + k: v for k, v in cpu.items()}, "ticker": [ticker],
                      "block": [_block(nbytes)]}
    cfg.gate = "novel"
    # A small DDP step: forward, backward (bucketed all_reduce by the reducer), optimizer; with
    # DDP's default buckets (one per step here) and with two smaller ones.
    dk = ("plain", "hooks", "plain2")
    for label, cap in DDP_CONFIGS:
        models = {k: _ddp(torch, groups[k], cap) for k in dk}
        ddp: dict[str, list[float]] = {k: [] for k in dk}
        ddp.update({"cpu_" + k: [] for k in dk})
        dist.barrier(group=plain)
        k0 = _ticker_cpu(h)
        # Runs of DDP_RUN steps per model in turn, not single steps: the hooks' background thread
        # (records, side channel) works every 50 ms on what the hooked steps left; a run of ~0.1 s
        # lets most of that work land in the hooked run instead of being spread over plain's steps.
        runs = max(3, args.ddp_steps // DDP_RUN)
        for i in range(runs):
            for name in dk[i % 3:] + dk[:i % 3]:
                for _ in range(DDP_RUN):
                    w, c = _timed_step(*models[name])
                    ddp[name].append(w)
                    ddp["cpu_" + name].append(c)
        ddp["ticker"] = [(_ticker_cpu(h) - k0) / (runs * DDP_RUN)]
        ddp["block"] = [DDP_RUN]
        out[label] = ddp
    if rank == 0:
        print("RESULT " + json.dumps(out), flush=True)
    hooks.uninstall()
    dist.destroy_process_group()


def _ticker_cpu(h) -> float:  # type: ignore[no-untyped-def]
    """CPU seconds the hooks' background thread has used (its per-thread CPU clock; 0 without one)."""
    t = getattr(h, "_ticker", None)
    try:
        return time.clock_gettime(time.pthread_getcpuclockid(t.ident))
    except (AttributeError, OSError, TypeError):
        return 0.0


def _ddp(torch, group, cap: float = 0.25):  # type: ignore[no-untyped-def]
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Linear(256, 256), torch.nn.ReLU(), torch.nn.Linear(256, 256), torch.nn.ReLU(),
                            torch.nn.Linear(256, 10))
    ddp = torch.nn.parallel.DistributedDataParallel(m, process_group=group, bucket_cap_mb=cap)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.01)
    x = torch.randn(32, 256)
    for _ in range(3):
        _step(ddp, opt, x)
    return ddp, opt, x


def _step(ddp, opt, x) -> None:  # type: ignore[no-untyped-def]
    opt.zero_grad(set_to_none=True)
    ddp(x).square().mean().backward()
    opt.step()


def _timed_step(ddp, opt, x) -> tuple[float, float]:  # type: ignore[no-untyped-def]
    """(wall, calling thread's CPU) of one step."""
    c0, t0 = time.thread_time(), time.perf_counter()
    _step(ddp, opt, x)
    return time.perf_counter() - t0, time.thread_time() - c0


def _launch(extra: list[str], timeout: float) -> tuple[dict | None, str]:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    procs = []
    for r in range(2):
        env = dict(os.environ, RANK=str(r), WORLD_SIZE="2", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port),
                   PYTHONPATH=CODE, OMP_NUM_THREADS="1")
        env.pop("TORCH_DISTRIBUTED_DEBUG", None)
        procs.append(subprocess.Popen([sys.executable, os.path.abspath(__file__), "--worker", *extra], env=env,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    result, notes = None, []
    for r, p in enumerate(procs):
        try:
            so, se = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            for q in procs:
                q.kill()
            so, se = p.communicate()
            notes.append(f"rank {r} killed after {timeout:g} s")
        for line in so.splitlines():
            if line.startswith("RESULT "):
                result = json.loads(line[7:])
        if p.returncode:
            import signal

            sig = -p.returncode if p.returncode < 0 else None
            notes.append(f"rank {r} " + (f"died of {signal.Signals(sig).name}" if sig else f"exited {p.returncode}"))
            if result is None and not extra:
                sys.stderr.write(se[-3000:])
    return result, "; ".join(notes)


def _blocks(a: list[float], b: list[float], block: int) -> tuple[float, float, float]:
    """Median and quartiles over blocks of ``block`` rounds of sum(a) / sum(b): each kind's time
    against plain's in the same rounds."""
    n = min(len(a), len(b)) // block
    ratios = sorted(sum(a[i * block:(i + 1) * block]) / sum(b[i * block:(i + 1) * block]) for i in range(n))
    if not ratios:
        return float("nan"), float("nan"), float("nan")
    q = statistics.quantiles(ratios, n=4) if len(ratios) >= 2 else [ratios[0]] * 3
    return statistics.median(ratios), q[0], q[2]


def _overall(a: list[float], b: list[float], block: int, n_boot: int = 1000) -> tuple[float, float, float]:
    """sum(a) / sum(b) over every round (the ratio of total times), and its 95% confidence interval
    from resampling blocks of rounds (a bootstrap; blocks keep neighbouring rounds together)."""
    import random

    n = min(len(a), len(b)) // block
    sa = [sum(a[i * block:(i + 1) * block]) for i in range(n)]
    sb = [sum(b[i * block:(i + 1) * block]) for i in range(n)]
    if not n:
        return float("nan"), float("nan"), float("nan")
    rng = random.Random(5)
    boots = []
    for _ in range(n_boot):
        pick = [rng.randrange(n) for _ in range(n)]
        boots.append(sum(sa[i] for i in pick) / sum(sb[i] for i in pick))
    boots.sort()
    return sum(sa) / sum(sb), boots[int(0.025 * n_boot)], boots[int(0.975 * n_boot) - 1]


def _fmt_t(s: float) -> str:
    return f"{s * 1e6:.1f} us" if s < 1e-2 else f"{s * 1e3:.2f} ms"


def _load() -> str:
    return "/".join(f"{x:.1f}" for x in os.getloadavg())


def main() -> int:
    global CODE
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--reps", type=int, default=30, help="blocks of rounds per size (default 30; 16 MiB: half)")
    p.add_argument("--quick", action="store_true", help="5 blocks: a smoke run, not a measurement")
    p.add_argument("--json", action="store_true", help="print the raw timings as JSON")
    p.add_argument("--code", default=None, help="root of the commdoctor checkout whose hooks to measure")
    p.add_argument("--ddp-steps", type=int, default=0,
                   help=f"DDP steps per model (default 20 x reps; taken in runs of {DDP_RUN})")
    p.add_argument("--no-ddp-detail", action="store_true", help="skip the job that runs DDP under DETAIL")
    p.add_argument("--records-dir", default=None, help=argparse.SUPPRESS)
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--ddp-detail", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.quick:
        args.reps = 5
    args.ddp_steps = args.ddp_steps or 20 * args.reps
    if args.worker:
        worker(args)
        return 0
    if args.code:
        CODE = os.environ["COMMDOCTOR_BENCH_CODE"] = os.path.abspath(args.code)
    import tempfile

    rec = tempfile.mkdtemp(prefix="cd-bench-hooks-")
    load0, t0 = _load(), time.time()
    res, note = _launch(["--reps", str(args.reps), "--ddp-steps", str(args.ddp_steps), "--records-dir", rec],
                        timeout=900)
    if res is None:
        print(f"the benchmark job failed: {note}", file=sys.stderr)
        return 1
    ddp_detail, dnote = (None, "skipped") if args.no_ddp_detail else _launch(["--ddp-detail"], timeout=300)
    if args.json:
        print(json.dumps({"timings": res, "ddp_detail": ddp_detail, "ddp_detail_note": dnote, "code": CODE}))
        return 0
    import torch

    print(f"commdoctor.hooks overhead: gloo, 2 ranks on 127.0.0.1, torch {torch.__version__}, {os.cpu_count()} CPUs; "
          f"hooks from {CODE}")
    print(f"load average (1/5/15 min) {load0} at the start, {_load()} at the end; {time.time() - t0:.0f} s; "
          f"calls taken in turn; ratios: median over {args.reps} blocks of rounds (16 MiB: half as many) of the"
          f" block's time over plain's in the same block; total: all rounds' time over plain's; A/A: a second"
          f" plain group over the first (1 when the measurement is fair)")
    print(f"{'':9} {'plain':>9} {'hooks':>9} {'hooks/plain [p25-p75]':>22} {'total [95% CI]':>21}"
          f" {'DETAIL/plain [p25-p75]':>23} {'always/plain':>12} {'A/A total [95% CI]':>23}"
          f" {'hooks CPU/call':>14} {'of plain':>8} {'(caller+bg)':>14}")
    below_detail = True
    verdicts: list[str] = []
    shares: list[str] = []
    for label in [lbl for _, lbl in SIZES] + [lbl for lbl, _ in DDP_CONFIGS]:
        t = res[label]
        block = t["block"][0]
        pl, hk = statistics.median(t["plain"]), statistics.median(t["hooks"])
        r, lo, hi = _blocks(t["hooks"], t["plain"], block)
        tot, clo, chi = _overall(t["hooks"], t["plain"], block)
        if "detail" in t:
            dr, dlo, dhi = _blocks(t["detail"], t["plain"], block)
            dcol = f"{dr:6.2f}x [{dlo:.2f}-{dhi:.2f}]"
            if not (hk < statistics.median(t["detail"]) and r < dr):
                below_detail = False
        elif ddp_detail:
            dt = statistics.median(ddp_detail["ddp_detail"])
            dcol = f"{dt / pl:6.2f}x (own job)"
            if hk >= dt:
                below_detail = False
        else:
            dcol = "crashed"
        always = f"{_blocks(t['always'], t['plain'], block)[0]:11.3f}x" if "always" in t else f"{'-':>12}"
        aa, alo, ahi = _overall(t["plain2"], t["plain"], block)  # plain against plain: should be 1
        # The hooks' own CPU per call: the caller thread's beyond plain's, plus the background thread's.
        caller = statistics.mean(t["cpu_hooks"]) - statistics.mean(t["cpu_plain"])
        extra = caller + t["ticker"][0]
        print(f"{label:9} {_fmt_t(pl):>9} {_fmt_t(hk):>9} {r:8.3f}x [{lo:.3f}-{hi:.3f}] {tot:7.3f}x [{clo:.3f}-{chi:.3f}]"
              f" {dcol:>23} {always} {aa:9.3f}x [{alo:.3f}-{ahi:.3f}]"
              f" {extra * 1e6:11.1f} us {extra / pl * 100:7.1f}%"
              f" ({caller * 1e6:.0f}+{t['ticker'][0] * 1e6:.0f} us)")
        if label != "4 KiB":
            # The total ratio's confidence interval decides: below 1.05, above it, or not resolved.
            v = "met" if chi <= 1.05 else "NOT met" if clo > 1.05 else "not resolved"
            if not alo <= 1.0 <= ahi:  # the control itself is off: this run's intervals cannot be trusted
                v = f"not resolved (the A/A control is {aa:.3f}x)"
            verdicts.append(f"{label} {v} (total {tot:.3f}x, 95% CI {clo:.3f}-{chi:.3f})")
            shares.append(f"{label} {extra / pl * 100:.1f}%")
    if ddp_detail is None:
        print(f"DDP under DETAIL: {dnote or 'no result'} (torch 2.13 segfaults there; see FIELD-NOTES)")
    print("goal (issue 5), hooks <= 1.05x plain from 64 KiB up (and the DDP steps), by the total time ratio's 95% CI:")
    print("  " + "; ".join(verdicts))
    print("  the hooks' CPU per call as a share of plain's time per call (the overhead if all of it lay on the "
          "critical path): " + ", ".join(shares))
    print("below DETAIL at every size: " + ("met" if below_detail else "NOT met"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
