"""A job for the backend tests, run under torchrun: hooks on, then init_process_group(BACKEND) and STEPS all_reduces.

usage: torchrun --nproc-per-node 2 tests/backend_hooks_job.py BACKEND STEPS NUMEL

BACKEND ``fakenccl`` is the NCCL-like test backend of tests/fakenccl.py (registered here first).
"""

from __future__ import annotations

import sys

import torch
import torch.distributed as dist

import commdoctor.hooks


def main() -> None:
    backend, steps, numel = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    if backend == "fakenccl":
        import os

        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import fakenccl  # noqa: F401 - registers the backend
    commdoctor.hooks.install()
    dist.init_process_group(backend)
    t = torch.ones(numel)
    for _ in range(steps):
        dist.all_reduce(t)
    dist.barrier()
    print(f"rank {dist.get_rank()} done: {t[0].item()}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
