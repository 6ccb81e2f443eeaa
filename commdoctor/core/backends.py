"""What to do when a job asks for a backend its torch build lacks, in one place.

Promise: plain data. The backend advisor (BK003), the log rule for the same
failure and the hooks inside a job that fails to start all say the same words.
"""

from __future__ import annotations

#: Backend name -> what to do when torch was built without it.
FALLBACK: dict[str, str] = {
    "nccl": "Use gloo on this host (backend=\"gloo\"), or install a CUDA build of torch on a host with GPUs",
    "mpi": "Build torch from source against your MPI (official wheels have no MPI), or use gloo",
    "ucc": "Build torch with USE_UCC=1, or use gloo for CPU tensors and nccl for CUDA tensors",
    "gloo": "Install an official torch wheel (gloo is built into every Linux and macOS wheel)",
}
