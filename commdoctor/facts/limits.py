"""The locked-memory limit and the RDMA devices it matters for, as one fact.

Promise: pure. commdoctor.probes.env measures (getrlimit, /sys/class/infiniband); env.memlock,
the backend advice and the MPI interface check read the same ``LockedMemory``. ``to_dict`` gives
the JSON reports have always carried under ``data["memlock"]``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

PORT_ATTRS = ("state", "phys_state", "link_layer", "rate")


@dataclass(frozen=True, slots=True)
class RdmaPort:
    """One port of an InfiniBand / RoCE device, as sysfs shows it (an attribute sysfs lacks is None)."""

    port: str
    state: str | None = None
    phys_state: str | None = None
    link_layer: str | None = None
    rate: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"port": self.port}
        for a in PORT_ATTRS:
            v = getattr(self, a)
            if v is not None:
                out[a] = v
        return out


@dataclass(frozen=True, slots=True)
class RdmaDevice:
    """An RDMA device (mlx5_0, ...) and its ports."""

    name: str
    ports: tuple[RdmaPort, ...] = ()

    @classmethod
    def from_sysfs(cls, d: Mapping[str, Any]) -> RdmaDevice:
        """From the probe's reading of /sys/class/infiniband (``probes.env.rdma_devices``)."""
        ports = tuple(RdmaPort(str(p.get("port", "?")), *(p.get(a) for a in PORT_ATTRS))
                      for p in d.get("ports") or () if isinstance(p, Mapping))
        return cls(str(d.get("name", "?")), ports)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "ports": [p.to_dict() for p in self.ports]}


@dataclass(frozen=True, slots=True)
class LockedMemory:
    """RLIMIT_MEMLOCK of this process (None: unlimited) and the RDMA devices that need pinned memory."""

    soft_bytes: int | None
    hard_bytes: int | None
    rdma_devices: tuple[RdmaDevice, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"soft_bytes": self.soft_bytes, "hard_bytes": self.hard_bytes,
                "rdma_devices": [d.to_dict() for d in self.rdma_devices]}
