"""A small training-like gloo job for torchrun (run by gen.py on each "host"; not a test).

Each step all_reduces a "gradient", every few steps a barrier, like a data-parallel
loop. FAULT (with FAULT_RANK, default 1) makes one rank fail at step FAULT_STEP:
  kill       the rank SIGKILLs itself (a crash, an OOM-kill)
  raise      the rank raises an exception from its own code
  straggler  the rank sleeps STRAGGLE seconds (past the group's timeout) before the step
  mismatch_op    the rank broadcasts where the others all_reduce
  mismatch_size  the rank all_reduces a tensor of another size
  memory     the rank asks for more host memory than there is (torch's allocator fails)
  segv       the rank dies of a real segmentation fault (reads address 0)
  raise_early    the rank fails to open its data before the first collective (a real FileNotFoundError)
  skip_barrier   the rank skips the first barrier at or after FAULT_STEP (rank-dependent control flow)
  grow       the rank keeps allocating host memory until the kernel's OOM killer ends it (gen.py caps its host's memory)
  exit       the rank's own check fails and it exits with status 3, no exception
  mismatch_dtype the rank all_reduces a float64 tensor where the others send float32
  reorder    the rank calls barrier before its all_reduce (the others: all_reduce, then barrier later)
  late_init  the rank sleeps LATE seconds before init_process_group (slow data/model loading before init)
  loader     every rank reads a batch through a DataLoader with worker processes (they pass tensors through
             /dev/shm; gen.py makes one host's /dev/shm tiny)
  fewer_steps    the rank's loop ends at FAULT_STEP (its data ran out first): it leaves the group and exits 0
  sigstop    the rank stops itself (SIGSTOP) before the step: alive, holding its connections, doing nothing
  loader_kill    the rank's DataLoader worker process is killed (SIGKILL, as the OOM killer picks it) mid-epoch
  disk_full      the rank saves a checkpoint to CKPT_DIR (gen.py gives its host a tiny one): no space left
  import_error   the rank fails to import a module its code needs, before init_process_group (a package missing on
             one host)
and two that leave the job healthy (healthy.py):
  fail_once  the rank raises at FAULT_STEP on torchrun's first attempt only; the restart then works
  warnings   a DataLoader warning and the program's own warning lines before the loop, then exit 0
PG_TIMEOUT is the process group's timeout in seconds. INIT_METHOD=tcp (spawn.py) initialises from tcp://MASTER_ADDR:
MASTER_PORT with RANK and WORLD_SIZE; LOGFMT=1 prints through python logging with timestamps (and logs an
uncaught exception through it), as many training scripts do.
"""
import datetime
import os
import signal
import sys
import time
import warnings

import torch
import torch.distributed as dist

fault = os.environ.get("FAULT", "none")
bad = int(os.environ.get("FAULT_RANK", "1"))
at = int(os.environ.get("FAULT_STEP", "3"))
steps = int(os.environ.get("STEPS", "8"))
if os.environ.get("LOGFMT"):
    import logging
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s [%(name)s] %(message)s")
    _log = logging.getLogger("train")
    print = lambda msg, **_: _log.info(msg)  # noqa: E731,A001
    sys.excepthook = lambda *e: _log.critical("training failed", exc_info=e)
if fault == "import_error" and int(os.environ.get("RANK", "0")) == bad:
    import flash_attn_kernels  # noqa: F401  (installed on the other hosts only)
if fault == "late_init" and int(os.environ.get("RANK", "0")) == bad:
    time.sleep(float(os.environ.get("LATE", "30")))
_timeout = datetime.timedelta(seconds=float(os.environ.get("PG_TIMEOUT", "10")))
if os.environ.get("INIT_METHOD") == "tcp":
    dist.init_process_group("gloo", init_method=f"tcp://{os.environ['MASTER_ADDR']}:{os.environ['MASTER_PORT']}",
                            rank=int(os.environ["RANK"]), world_size=int(os.environ["WORLD_SIZE"]), timeout=_timeout)
else:
    dist.init_process_group("gloo", timeout=_timeout)
rank, world = dist.get_rank(), dist.get_world_size()
print(f"rank {rank}/{world} on {os.uname().nodename}: process group ready", flush=True)
if fault == "raise_early" and rank == bad:
    open(f"/nonexistent/data/shard-{rank:05d}.bin", "rb")
if fault == "warnings":
    from torch.utils.data import DataLoader, TensorDataset
    for _ in DataLoader(TensorDataset(torch.arange(32.0)), batch_size=8, num_workers=6):
        pass
    warnings.warn("gradient clipping disabled: max_norm is 0")
    print(f"WARNING: rank {rank}: loss scale overflow at step 0, skipping update", flush=True)
grad = torch.ones(1024)
for step in range(steps):
    me = rank == bad and step == at
    if me and fault == "kill":
        print(f"rank {rank}: step {step}", flush=True)
        os.kill(os.getpid(), signal.SIGKILL)
    if me and fault == "fail_once" and os.environ.get("TORCHELASTIC_RESTART_COUNT", "0") == "0":
        raise RuntimeError(f"transient: shard file busy on rank {rank}, step {step}")
    if me and fault == "raise":
        raise ValueError(f"batch {step} has 0 samples after filtering (rank {rank})")
    if me and fault == "segv":
        print(f"rank {rank}: step {step}", flush=True)
        import ctypes
        ctypes.string_at(0)
    if me and fault == "grow":
        hoard = []
        while True:
            hoard.append(torch.ones(16 << 20))  # 64 MB, written, so resident
    if me and fault == "exit":
        print(f"rank {rank}: loss is nan at step {step}, stopping", flush=True)
        sys.exit(3)
    if me and fault == "fewer_steps":
        print(f"rank {rank}: no more batches after step {step - 1}", flush=True)
        break
    if me and fault == "sigstop":
        print(f"rank {rank}: step {step}", flush=True)
        os.kill(os.getpid(), signal.SIGSTOP)
    if me and fault == "loader_kill":
        from torch.utils.data import DataLoader, Dataset

        class _Shards(Dataset):
            def __len__(self) -> int:
                return 64

            def __getitem__(self, i: int) -> torch.Tensor:
                if i == 40:
                    os.kill(os.getpid(), signal.SIGKILL)  # the kernel's OOM killer picks the loader worker
                time.sleep(0.01)
                return torch.ones(4)

        for _batch in DataLoader(_Shards(), batch_size=8, num_workers=2):
            pass
    if me and fault == "disk_full":
        torch.save({"model": torch.ones(1 << 20)}, os.path.join(os.environ.get("CKPT_DIR", "/dev/shm"), "ckpt.pt"))
    if me and fault == "straggler":
        time.sleep(float(os.environ.get("STRAGGLE", "25")))
    if me and fault == "memory":
        big = torch.empty(1 << 46, dtype=torch.uint8)
    if step == at and fault == "loader":
        from torch.utils.data import DataLoader, TensorDataset
        for batch, in DataLoader(TensorDataset(torch.ones(16, 1 << 18)), batch_size=8, num_workers=2):
            grad += batch.sum() * 0
    if me and fault == "reorder":
        dist.barrier()
    if me and fault == "mismatch_dtype":
        dist.all_reduce(torch.ones(1024, dtype=torch.float64))
    elif me and fault == "mismatch_op":
        dist.broadcast(grad, 0)
    elif me and fault == "mismatch_size":
        dist.all_reduce(torch.ones(512))
    else:
        dist.all_reduce(grad)
    if step % 3 == 2 and not (fault == "skip_barrier" and rank == bad and step >= at):
        dist.barrier()
    grad = torch.ones(1024)
    print(f"rank {rank}: step {step} loss {1.0 / (step + 1):.4f}", flush=True)
    time.sleep(0.2)
dist.destroy_process_group()
print(f"rank {rank}: done", flush=True)
sys.exit(0)
