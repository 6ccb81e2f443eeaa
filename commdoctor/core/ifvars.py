"""Which setting pins the network interface, per communication library.

Promise: plain data plus two pure helpers, shared by the log rules and the
live interface checks, so a finding about an interface names the setting of
the library that actually carries the job: NCCL_SOCKET_IFNAME for NCCL,
GLOO_SOCKET_IFNAME for gloo, Open MPI's btl/oob include lists, UCX_NET_DEVICES
for UCX (and UCC, which runs over UCX), Hydra's interface for MPICH and Intel
MPI. When the library is not known, every one of them is listed.
"""

from __future__ import annotations

from typing import Iterable

#: Display names, in the order findings list them.
LIBRARIES: dict[str, str] = {
    "nccl": "NCCL",
    "gloo": "gloo",
    "openmpi": "Open MPI",
    "ucx": "UCX/UCC",
    "mpich": "MPICH/Intel MPI (Hydra)",
}

#: The variables that name the interface for each library ("<iface>" is filled by the caller).
IFACE_VARS: dict[str, tuple[str, ...]] = {
    "nccl": ("NCCL_SOCKET_IFNAME",),
    "gloo": ("GLOO_SOCKET_IFNAME",),
    # btl_tcp carries MPI messages; oob_tcp carries the runtime's own traffic (mpirun <-> daemons <-> ranks).
    "openmpi": ("OMPI_MCA_btl_tcp_if_include", "OMPI_MCA_oob_tcp_if_include"),
    "ucx": ("UCX_NET_DEVICES",),
    # Hydra (mpiexec of MPICH and Intel MPI) reads HYDRA_IFACE; Intel MPI also I_MPI_HYDRA_IFACE.
    "mpich": ("HYDRA_IFACE",),
}


def iface_env(libraries: Iterable[str], value: str = "<iface>") -> dict[str, str]:
    """The interface settings for ``libraries`` (all of them when none is known), in a stable order."""
    wanted = [lib for lib in LIBRARIES if lib in set(libraries)] or list(LIBRARIES)
    return {var: value for lib in wanted for var in IFACE_VARS[lib]}


def applies_to(libraries: Iterable[str]) -> str:
    """'NCCL (NCCL_SOCKET_IFNAME)' or, when unknown, every library with its setting."""
    wanted = [lib for lib in LIBRARIES if lib in set(libraries)]
    shown = wanted or list(LIBRARIES)
    text = "; ".join(f"{LIBRARIES[lib]}: {' and '.join(IFACE_VARS[lib])}" for lib in shown)
    return text if wanted else f"library not known from the input, so every one: {text}"
