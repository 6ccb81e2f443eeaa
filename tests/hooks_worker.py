"""One rank of a real job with commdoctor.hooks, on gloo or on the NCCL-like test backend, for tests/test_hooks_*.py.

usage: python tests/hooks_worker.py SCENARIO   (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT in the environment)
       python tests/hooks_worker.py SCENARIO,SCENARIO[@MODE],...   (several in one job, one group each)

``HOOKS_BACKEND`` picks the backend: ``gloo`` (default) or ``fakenccl`` (tests/fakenccl.py:
asynchronous work, and an expired timed wait aborts the process, as on NCCL). With several
scenarios, each runs on a process group of its own, made from one store, with the hooks installed
before it (``@report``/``@record``: in that mode; ``@plain``: no hooks) and removed after it; each
prints its own RESULT line, with its records in ``$COMMDOCTOR_HOOKS_DIR/SCENARIO[@MODE]``.
``SCENARIO#BACKEND`` runs that scenario's group on BACKEND instead (one job for both backends).

Prints one line ``RESULT {json}`` on stdout: the error the scenario raised (type,
message, the mismatch's calls), the time the rank reached the diverging call
(``marks``) and the time it raised, so the test can check every rank and the
time to detection. Line numbers of the diverging calls are tagged ``# SITE:name``
so the test can find them without hard-coding numbers.
"""

from __future__ import annotations

import datetime
import json
import os
import sys
import time
import traceback

import torch
import torch.distributed as dist

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(1, os.path.dirname(os.path.abspath(__file__)))
import commdoctor.hooks as hooks  # noqa: E402

BACKEND = os.environ.get("HOOKS_BACKEND", "gloo")
if BACKEND == "fakenccl":
    import fakenccl  # noqa: E402,F401 - registers the backend

MARKS: list[float] = []
OUT: dict = {}


def mark() -> None:
    MARKS.append(time.time())


def s_ok(r: int, w: int) -> None:
    """Every kind of call, with results checked against closed forms."""
    t = torch.full((4,), float(r + 1))
    dist.all_reduce(t)
    assert torch.equal(t, torch.full((4,), float(sum(range(1, w + 1))))), t
    work = dist.all_reduce(t, op=dist.ReduceOp.MAX, async_op=True)
    assert work.wait()
    b = torch.full((3,), float(r))
    dist.broadcast(b, src=w - 1)
    assert torch.equal(b, torch.full((3,), float(w - 1)))
    out = [torch.zeros(2) for _ in range(w)]
    dist.all_gather(out, torch.full((2,), float(r)))
    assert [int(o[0]) for o in out] == list(range(w))
    big = torch.zeros(2 * w)
    dist.all_gather_into_tensor(big, torch.full((2,), float(r)))
    rs = torch.zeros(2)
    dist.reduce_scatter_tensor(rs, torch.ones(2 * w))
    assert torch.equal(rs, torch.full((2,), float(w)))
    a2a = torch.zeros(w)
    dist.all_to_all_single(a2a, torch.arange(w, dtype=torch.float32) + 10 * r)
    assert a2a.tolist() == [10.0 * s + r for s in range(w)]
    dist.barrier()
    if r == 0:
        dist.send(torch.full((5,), 7.0), dst=1)
    elif r == 1:
        x = torch.zeros(5)
        dist.recv(x, src=0)
        assert x.tolist() == [7.0] * 5
    sub = dist.new_group([0, 1])
    if r in (0, 1):
        s = torch.ones(2)
        dist.all_reduce(s, group=sub)
        assert s.tolist() == [2.0, 2.0]
    m = torch.nn.Linear(4, 4)
    ddp = torch.nn.parallel.DistributedDataParallel(m)
    ddp(torch.randn(2, 4)).sum().backward()
    import torch.distributed._functional_collectives as fc

    y = fc.all_reduce(torch.ones(3), "sum", dist.group.WORLD)
    assert torch.equal(fc.wait_tensor(y), torch.full((3,), float(w)))
    # FSDP2 over a DeviceMesh: functional collectives from C++, on a group DeviceMesh made.
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard

    mesh = init_device_mesh("cpu", (w,))
    torch.manual_seed(0)
    fs = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.Linear(8, 8))
    fully_shard(fs, mesh=mesh)
    fs(torch.randn(2, 8)).sum().backward()
    OUT["fsdp_ops"] = sorted(_ops_seen())
    # The last entered/completed call is in the job's store too (written every 50 ms when it changes).
    import json as _json

    from commdoctor.hooks import core

    core.current().recorder.flush()
    store = dist.distributed_c10d._get_default_store()
    OUT["store_progress"] = _json.loads(store.get(f"commdoctor.hooks/v1/progress/{r}"))
    # Rank 0 hosts the store: nobody goes on until every rank has read its key, and rank 0 (which may then end, and
    # the store with it) goes on only after every other rank's last call to the store has come back: a rank still
    # inside its wait when the store's process ends gets "Connection reset by peer".
    store.set(f"test/read-progress/{r}", "1")
    store.wait([f"test/read-progress/{k}" for k in range(w)])
    if r:
        store.set(f"test/done-with-store/{r}", "1")
    else:
        store.wait([f"test/done-with-store/{k}" for k in range(1, w)])
    OUT["wrapped"] = type(dist.group.WORLD).__name__
    OUT["backend"] = dist.get_backend()
    OUT["completed"] = _completed()
    dist.destroy_process_group(sub) if r in (0, 1) else None


def _ops_seen() -> set[str]:
    """Ops this rank's hooks recorded so far (from its records file)."""
    from commdoctor.core import records
    from commdoctor.hooks import core

    core.current().recorder.flush()
    path = records.record_path(core.current().config.records_dir, dist.get_rank())
    return {d["op"] for d in records.iter_lines(path) if d and d.get("kind") == "enter"}


def _completed() -> bool:
    """Whether every call this rank's hooks recorded so far is marked completed in its records."""
    from commdoctor.core import records
    from commdoctor.hooks import core

    for _ in range(40):  # the recorder marks calls nobody waited on when it next looks (every 50 ms)
        core.current().recorder.flush()
        path = records.record_path(core.current().config.records_dir, dist.get_rank())
        lines = [d for d in records.iter_lines(path) if d]
        enters = {(d["group"], d["seq"]) for d in lines if d.get("kind") == "enter" and d["seq"] >= 0}
        exits = {(d["group"], d["seq"]) for d in lines if d.get("kind") == "exit"}
        if enters <= exits:
            return True
        time.sleep(0.05)
    return False


def _ddp_steps(r: int, w: int, steps: int, fault: str | None = None) -> list[str]:
    """A small DDP training loop, as ../shared/gpu/job.py runs it on the GPU: forward, backward,
    optimizer step, then one all_reduce of a tensor per step. ``fault="opmismatch"``: the last rank
    reduces with MAX in the last step. Returns the hash of the parameters after each step."""
    import hashlib

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(32, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
    ddp = torch.nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
    gen = torch.Generator().manual_seed(1000 + r)
    hashes = []
    for step in range(steps):
        loss = ddp(torch.randn(8, 32, generator=gen)).square().mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        t = torch.full((64,), float(r + 1))
        if fault == "opmismatch" and step == steps - 1:
            mark()
            if r == w - 1:
                dist.all_reduce(t, op=dist.ReduceOp.MAX)  # SITE:ddp_max
            else:
                dist.all_reduce(t)  # SITE:ddp_sum
        else:
            dist.all_reduce(t)
        h = hashlib.sha1()
        for p in model.parameters():
            h.update(p.detach().numpy().tobytes())
        h.update(t.numpy().tobytes())
        hashes.append(h.hexdigest()[:16])
    return hashes


def s_ddp_train(r: int, w: int) -> None:
    """A healthy DDP job: what its parameters are after each of 4 steps (the test compares with and without hooks)."""
    OUT["result"] = _ddp_steps(r, w, 4)


def s_ddp_opmismatch(r: int, w: int) -> None:
    """The GPU capture's reduce-op job: DDP steps that agree, then SUM against MAX on the last rank."""
    OUT["result"] = _ddp_steps(r, w, 4, "opmismatch")


def s_fake_check(r: int, w: int) -> None:
    """The test backend itself (run @plain, last in its job): an untimed wait waits, is_completed and
    the future answer without harm; then rank 0's timed wait expires while rank 1 is late, which
    must take the process down as NCCL does."""
    t = torch.ones(4)
    if r == 1:
        time.sleep(0.5)
    work = dist.all_reduce(t, async_op=True)
    OUT["completed_at_once"] = work.is_completed()
    fut = work.get_future()
    work.wait()
    OUT["result"] = [t.tolist(), fut.done(), [x.tolist() for x in fut.value()]]
    print("RESULT " + json.dumps({"rank": r, "error": None, "scenario": "fake_check@plain", **OUT}), flush=True)
    if r == 1:
        time.sleep(3)
    work = dist.all_reduce(t, async_op=True)
    work.wait(datetime.timedelta(milliseconds=200))  # rank 0: expires, and NCCL takes the process down
    OUT["survived"] = True


def s_late_mismatch(r: int, w: int) -> None:
    """Rank 1 comes 1.5 s late to a call where it uses MAX and rank 0 SUM. Run with a short gate
    (``@raise:0.3``) on fakenccl: rank 0's call is not held past the gate, goes to the backend
    unchecked, and rank 0 waits for it; the verdict reached in the background when rank 1 comes
    must release that wait. Rank 1 then completes rank 0's call behind the hooks' back, so the
    shared job's next scenario finds the backend clean (NCCL would abort the job instead)."""
    t = torch.ones(4)
    dist.all_reduce(t)
    if r == 1:
        time.sleep(1.5)
    mark()
    if r == 0:
        dist.all_reduce(t)  # SITE:late_sum
        return
    try:
        dist.all_reduce(t, op=dist.ReduceOp.MAX)  # SITE:late_max
    finally:
        time.sleep(1.0)  # rank 0 is released by the verdict first, not by this call completing
        inner = dist.group.WORLD._cd_inner
        inner.allreduce([torch.ones(4)], dist.AllreduceOptions()).wait()


def s_op(r: int, w: int) -> None:
    t = torch.ones(4)
    dist.all_reduce(t)
    mark()
    if r == 0:
        dist.all_reduce(t)  # SITE:op0
    else:
        dist.broadcast(t, src=0)  # SITE:op1


def s_shape(r: int, w: int) -> None:
    mark()
    dist.all_reduce(torch.ones(4 if r == 0 else 8))  # SITE:shape


def s_dtype(r: int, w: int) -> None:
    mark()
    dist.all_reduce(torch.ones(4, dtype=torch.float32 if r == 0 else torch.float64))  # SITE:dtype


def s_redop(r: int, w: int) -> None:
    t = torch.full((4,), float(r + 1))
    mark()
    dist.all_reduce(t, op=dist.ReduceOp.SUM if r != w - 1 else dist.ReduceOp.MAX)  # SITE:redop
    OUT["result"] = t.tolist()  # must never be reached: the numbers would be wrong


def s_root(r: int, w: int) -> None:
    t = torch.full((4,), float(r))
    mark()
    dist.broadcast(t, src=0 if r == 0 else 1)  # SITE:root
    OUT["result"] = t.tolist()


def s_skip(r: int, w: int) -> None:
    a, b = torch.ones(4), torch.ones(4)
    for i in range(3):
        mark()
        dist.all_reduce(a)  # SITE:skip_a
        if not (r == 1 and i == 1):
            mark()
            dist.all_reduce(b)  # SITE:skip_b
    dist.barrier()


def s_skip_last(r: int, w: int) -> None:
    a = torch.ones(4)
    for _ in range(3 if r == 0 else 2):
        mark()
        dist.all_reduce(a)  # SITE:skip_last
    if r == 1:
        mark()
        dist.destroy_process_group()  # SITE:skip_last_destroy


def s_barrier(r: int, w: int) -> None:
    t = torch.ones(4)
    if r == 1:
        mark()
        dist.barrier()  # SITE:barrier
    mark()
    dist.all_reduce(t)  # SITE:barrier_ar


def s_order(r: int, w: int) -> None:
    a, b = torch.ones(4), torch.ones(8)
    mark()
    if r == 0:
        dist.all_reduce(a)  # SITE:order_a0
        dist.all_reduce(b)
    else:
        dist.all_reduce(b)  # SITE:order_b1
        dist.all_reduce(a)


def s_order_same(r: int, w: int) -> None:
    """The same two calls, same shape, in the other order on rank 1 (one line per call)."""
    a, b = torch.ones(4), torch.full((4,), 2.0)
    calls = [lambda: dist.all_reduce(a),  # SITE:same_a
             lambda: dist.all_reduce(b)]  # SITE:same_b
    for f in calls if r == 0 else calls[::-1]:
        mark()
        f()
    OUT["result"] = [a.tolist(), b.tolist()]


def s_later(r: int, w: int) -> None:
    """Three agreeing rounds, then rank 1 changes its reduce op: rank 0's call is one it made
    before (it runs ungated and waits in gloo), rank 1's is new (gated): both must raise."""
    t = torch.ones(4)
    for i in range(4):
        mark()
        if r == 1 and i == 3:
            dist.all_reduce(t, op=dist.ReduceOp.MAX)  # SITE:later1
        else:
            dist.all_reduce(t)  # SITE:later0
    OUT["result"] = t.tolist()


def s_straggler(r: int, w: int) -> None:
    """Rank 1 stops making calls (sleeps) before the third all_reduce; the test kills the job."""
    t = torch.ones(4)
    for i in range(3):
        if r == 1 and i == 2:
            time.sleep(600)  # SITE:straggler_sleep
        dist.all_reduce(t)  # SITE:straggler


def s_crash(r: int, w: int) -> None:
    """50 all_reduce calls, then both ranks wait (the test reads the store, then kills them with SIGKILL)."""
    t = torch.ones(4)
    for _ in range(50):
        dist.all_reduce(t)  # SITE:crash
    time.sleep(600)


def s_stall(r: int, w: int) -> None:
    """Rank 1 stops making calls for longer than the group's timeout (GLOO_TIMEOUT=3 in the test)."""
    t = torch.ones(4)
    dist.all_reduce(t)
    if r == 1:
        time.sleep(8)
        return
    mark()
    dist.all_reduce(t)  # SITE:stall


def s_reinit(r: int, w: int) -> None:
    """destroy_process_group, then init again (as an elastic restart does): still wrapped, still checked."""
    from commdoctor.hooks.group import HookedProcessGroup

    t = torch.ones(4)
    dist.all_reduce(t)
    # torchrun's restarts keep the agent's store and give each round a prefix of its own. Opening a
    # second store on the same port instead races: a rank that gets there first joins the old one.
    store = dist.distributed_c10d._get_default_store()
    dist.destroy_process_group()
    assert not dist.is_initialized()
    dist.init_process_group("gloo", store=dist.PrefixStore("restart1/", store), rank=r, world_size=w,
                            timeout=datetime.timedelta(seconds=30))
    assert isinstance(dist.group.WORLD, HookedProcessGroup)
    t = torch.ones(4)
    dist.all_reduce(t)
    assert t.tolist() == [float(w)] * 4
    mark()
    dist.all_reduce(torch.ones(4, dtype=torch.float64 if r == 0 else torch.float32))  # SITE:reinit


def s_ddp(r: int, w: int) -> None:
    """Rank 1's model is float64: DDP's shape check passes, its gradient buckets differ in dtype."""
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.Linear(8, 8))
    if r == 1:
        m = m.double()
    ddp = torch.nn.parallel.DistributedDataParallel(m, init_sync=False)
    x = torch.randn(4, 8, dtype=m[0].weight.dtype)
    loss = ddp(x).sum()
    mark()
    loss.backward()  # SITE:ddp


def s_ddp_model(r: int, w: int) -> None:
    """Rank 1's model is float64 and DDP syncs module states at construction: caught there."""
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.Linear(8, 8))
    if r == 1:
        m = m.double()
    mark()
    torch.nn.parallel.DistributedDataParallel(m)  # SITE:ddp_model


def s_subgroup(r: int, w: int) -> None:
    """4 ranks: ranks 0 and 2 disagree inside group [0, 2]; ranks 1 and 3 are bystanders."""
    g02 = dist.new_group([0, 2])
    g13 = dist.new_group([1, 3])
    # Every rank has its groups before 0 and 2 fail: a bystander still connecting g13 through rank 0's store when
    # rank 0 exits got "Connection reset by peer" instead of the mismatch (a loaded machine, 2 cores).
    dist.barrier()
    t = torch.ones(4)
    if r in (0, 2):
        mark()
        dist.all_reduce(t, group=g02, op=dist.ReduceOp.SUM if r == 0 else dist.ReduceOp.MIN)  # SITE:sub
    else:
        dist.all_reduce(t, group=g13)
        mark()
        dist.barrier()  # SITE:bystander


def s_uneven(r: int, w: int) -> None:
    """3 ranks: ranks 0 and 1 agree, rank 2 calls with another shape."""
    mark()
    dist.all_reduce(torch.ones(6 if r < 2 else 5))  # SITE:uneven


def s_channel_lost(r: int, w: int) -> None:
    """Rank 1 breaks its side channel mid-run: one warning, the job goes on with right results."""
    import socket

    from commdoctor.hooks import core

    t = torch.ones(4)
    dist.all_reduce(t)
    if r == 1:
        mesh = core.current().mesh
        for s in list(mesh._socks.values()):
            s.shutdown(socket.SHUT_RDWR)
    for _ in range(5):
        t = torch.ones(4)
        dist.all_reduce(t)
        assert t.tolist() == [float(w)] * 4
    OUT["result"] = t.tolist()


def s_uninstall(r: int, w: int) -> None:
    import torch.distributed.distributed_c10d as c10d
    from torch._C._distributed_c10d import _resolve_process_group

    from commdoctor.hooks.group import HookedProcessGroup

    helper_before = OUT.pop("_helper")
    g = dist.new_group(list(range(w)))
    assert isinstance(dist.group.WORLD, HookedProcessGroup) and isinstance(g, HookedProcessGroup)
    t = torch.ones(2)
    dist.all_reduce(t, group=g)
    hooks.uninstall()
    assert c10d._new_process_group_helper is helper_before
    assert type(dist.group.WORLD) is dist.ProcessGroup, type(dist.group.WORLD)
    assert dist.get_backend() == "gloo" and dist.group.WORLD.name() == "gloo"
    assert type(_resolve_process_group(dist.group.WORLD.group_name)) is dist.ProcessGroup
    assert type(_resolve_process_group(g.group_name)) is dist.ProcessGroup
    # A handle obtained while the hooks were on keeps working, for every kind of call.
    dist.all_reduce(t, group=g)
    dist.broadcast(t, src=w - 1, group=g)
    assert dist.get_process_group_ranks(g) == list(range(w))
    g2 = dist.new_group(list(range(w)))
    assert type(g2) is dist.ProcessGroup
    dist.all_reduce(t, group=g2)
    dist.all_reduce(t)  # 1 -> 2 -> 4 (-> broadcast) -> 8 -> 16
    OUT["result"] = t.tolist()
    # and on again, after init, over a world that already has groups; old handles stay usable
    hooks.install()
    assert isinstance(dist.group.WORLD, HookedProcessGroup)
    dist.broadcast(t, src=0, group=g2)
    mark()
    dist.all_reduce(torch.ones(3 if r == 0 else 2))  # SITE:reinstalled


SCENARIOS = {k[2:]: v for k, v in globals().items() if k.startswith("s_")}


def _timeout() -> datetime.timedelta:
    return datetime.timedelta(seconds=float(os.environ.get("GLOO_TIMEOUT", "30")))


def _run(name: str, r: int, w: int) -> dict:
    res: dict = {"rank": r, "error": None}
    try:
        SCENARIOS[name](r, w)
    except Exception as e:  # noqa: BLE001 - reported to the test
        if os.environ.get("HOOKS_KILL_ON_ERROR"):  # as a launcher that kills every rank once one fails
            import signal

            os.kill(os.getpid(), signal.SIGKILL)
        res["t_raise"] = time.time()
        res["error"] = type(e).__name__
        res["message"] = str(e)
        m = getattr(e, "mismatch", None)
        if m is not None:
            res["mismatch"] = m.detail()
        res["traceback"] = traceback.format_exc()[-3000:]
    res["marks"] = list(MARKS)
    res.update({k: v for k, v in OUT.items() if not k.startswith("_")})
    return res


def run_many(specs: list[str], r: int, w: int) -> None:
    """Several scenarios in one job: each on a group of its own, the ranks lined up between them."""
    store = dist.TCPStore(os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]), w, r == 0,
                          timeout=datetime.timedelta(seconds=120))
    base = os.environ.get("COMMDOCTOR_HOOKS_DIR") or "commdoctor-hooks"
    for i, spec in enumerate(specs):
        name, _, mode = spec.partition("@")
        mode, _, gate = mode.partition(":")  # @raise:0.3: the gate's bound (async_gate_s) for this scenario
        name, _, backend = name.partition("#")  # subgroup#fakenccl: this scenario's group on fakenccl
        backend = backend or BACKEND
        if backend == "fakenccl":
            import fakenccl  # noqa: F401 - registers the backend (once)
        MARKS.clear()
        OUT.clear()
        sys.stderr.write(f"=== scenario {spec}\n")  # the test gives each scenario its own part of stderr
        sys.stderr.flush()
        store.set(f"ready/{i}/{r}", "1")  # every rank has finished the scenario before
        store.wait([f"ready/{i}/{q}" for q in range(w)], datetime.timedelta(seconds=120))
        rec = os.path.join(base, spec)
        if mode != "plain":
            hooks.install(mode=mode or "raise", records_dir=rec, async_gate_s=float(gate) if gate else None)
        dist.init_process_group(backend, store=dist.PrefixStore(f"scenario{i}/", store), rank=r, world_size=w,
                                timeout=_timeout())
        res = _run(name, r, w)
        res.update(scenario=spec, records=rec)
        print("RESULT " + json.dumps(res), flush=True)
        try:
            if dist.is_initialized():
                dist.destroy_process_group()
        except Exception:  # noqa: BLE001
            pass
        hooks.uninstall()


def main() -> None:
    name = sys.argv[1]
    r, w = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    import torch.distributed.distributed_c10d as c10d

    if "," in name or "@" in name or os.environ.get("HOOKS_MANY"):
        run_many(name.split(","), r, w)
        return
    OUT["_helper"] = c10d._new_process_group_helper
    when = os.environ.get("HOOKS_INSTALL", "before")
    if when == "before":
        hooks.install()
    dist.init_process_group(BACKEND, timeout=_timeout())
    if when == "after":
        hooks.install()
    res = _run(name, r, w)
    print("RESULT " + json.dumps(res), flush=True)
    try:
        if dist.is_initialized() and res["error"] is None:
            dist.destroy_process_group()
    except Exception:  # noqa: BLE001
        pass
    # A rank that raised exits at once, as a training script whose exception escapes would.


if __name__ == "__main__":
    main()
