"""MPI, PMI, Slurm and UCX variables of this process: the launcher context an MPI or UCC job runs in.

Promise: reads the environment only (no MPI library is loaded), returning plain data.
"""

from __future__ import annotations

import os

#: Prefixes of the variables Open MPI (OMPI_*, PMIX_*), MPICH / Intel MPI (PMI_*, MPI_LOCAL*, HYDRA_*,
#: I_MPI_*, MPIR_CVAR_*), Slurm (SLURM_*), UCX (UCX_*) and UCC (UCC_*) read or set.
MPI_PREFIXES = ("OMPI_", "PMIX_", "PMI_", "MPI_LOCALRANKID", "MPI_LOCALNRANKS", "HYDRA_", "HYD_", "I_MPI_", "MPIR_CVAR_",
                "SLURM_", "UCX_", "UCC_", "PRTE_", "PRRTE_")


def mpi_env(environ: dict[str, str] | None = None) -> dict[str, str]:
    """Every variable of the MPI launchers, Slurm, UCX and UCC present in this process."""
    env = os.environ if environ is None else environ
    return {k: v for k, v in env.items() if k.startswith(MPI_PREFIXES)}
