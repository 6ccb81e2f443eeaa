"""The job of bench/multihost_logs/healthy.py: worker.py's loop (gloo all_reduce + barrier steps), healthy; not a test.
VARIANT: plain | fail_once (rank FAULT_RANK raises on the first attempt only; torchrun restarts and it works)
         | warnings (a DataLoader warning and the program's own warning lines, then exit 0)
"""
import datetime, os, sys, time, warnings
import torch
import torch.distributed as dist

variant = os.environ.get("VARIANT", "plain")
bad = int(os.environ.get("FAULT_RANK", "1"))
restart = int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0"))
dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=20))
rank, world = dist.get_rank(), dist.get_world_size()
print(f"rank {rank}/{world} on {os.uname().nodename}: process group ready (attempt {restart})", flush=True)
if variant == "warnings":
    from torch.utils.data import DataLoader, TensorDataset
    dl = DataLoader(TensorDataset(torch.arange(32.0)), batch_size=8, num_workers=6)
    for _ in dl:
        pass
    warnings.warn("gradient clipping disabled: max_norm is 0")
    print(f"WARNING: rank {rank}: loss scale overflow at step 0, skipping update", flush=True)
grad = torch.ones(1024)
for step in range(6):
    if variant == "fail_once" and rank == bad and step == 2 and restart == 0:
        raise RuntimeError(f"transient: shard file busy on rank {rank}, step {step}")
    dist.all_reduce(grad)
    if step % 3 == 2:
        dist.barrier()
    grad = torch.ones(1024)
    print(f"rank {rank}: step {step} loss {1.0 / (step + 1):.4f}", flush=True)
    time.sleep(0.2)
dist.destroy_process_group()
print(f"rank {rank}: done", flush=True)
sys.exit(0)
