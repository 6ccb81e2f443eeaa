"""Start worker.py's ranks of one host with torch.multiprocessing.spawn instead of torchrun (gen.py's ``launcher: spawn``).

usage: python spawn.py --nnodes N --nproc-per-node P --node-rank R --master-addr A --master-port PORT --init tcp|env WORKER
Each spawned process gets RANK = R * P + local rank and WORLD_SIZE = N * P; with ``--init tcp`` the worker calls
init_process_group(init_method="tcp://A:PORT", rank=..., world_size=...), with ``env`` it reads MASTER_ADDR/PORT.
Rank 0 (on the node of rank 0) hosts the store, as in a hand-written multi-node script.
"""
import argparse
import os
import runpy

import torch.multiprocessing as mp


def one(local: int, a: argparse.Namespace) -> None:
    os.environ.update(RANK=str(a.node_rank * a.nproc_per_node + local), LOCAL_RANK=str(local),
                      WORLD_SIZE=str(a.nnodes * a.nproc_per_node), MASTER_ADDR=a.master_addr,
                      MASTER_PORT=str(a.master_port), INIT_METHOD=a.init)
    runpy.run_path(a.worker, run_name="__main__")


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    for opt in ("--nnodes", "--nproc-per-node", "--node-rank", "--master-port"):
        ap.add_argument(opt, type=int, required=True)
    ap.add_argument("--master-addr", required=True)
    ap.add_argument("--init", choices=("tcp", "env"), default="tcp")
    ap.add_argument("worker")
    a = ap.parse_args()
    mp.spawn(one, args=(a,), nprocs=a.nproc_per_node, join=True)
