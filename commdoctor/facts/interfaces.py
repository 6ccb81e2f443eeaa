"""An interface setting (NCCL_SOCKET_IFNAME, GLOO_SOCKET_IFNAME, ...) against the interfaces a host has.

Promise: pure. The live side is built by the interface check from the interface probe's facts
(commdoctor.checks.net); ``interface_from_log`` reads the verbatim lines a log holds, in the
libraries' own words: gloo's "Unable to find address for: NAME" (gloo/transport/tcp/device.cc),
NCCL's "Bootstrap : no socket interface found" and "no device found matching NAME, verify
NCCL_..._IFNAME" (src/bootstrap.cc, src/misc/socket.cc), NET/Socket's "no interface found",
Open MPI's include/exclude parameters and UCX's device lists.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from commdoctor.core.model import Evidence

#: The setting a library reads, by library.
VAR_OF = {"nccl": "NCCL_SOCKET_IFNAME", "gloo": "GLOO_SOCKET_IFNAME", "tp": "TP_SOCKET_IFNAME", "ucx": "UCX_NET_DEVICES"}

_GLOO = re.compile(r"Unable to find address for:? ?(?P<name>[^\s,]{1,64})")
_NCCL_VAR = re.compile(r"no device found (?:matching|after excluding) (?:exactly )?(?P<name>[^\s,]{1,64}),? verify (?P<var>NCCL_\w{1,40}IFNAME)")
_NCCL = re.compile(r"[Nn]o socket interface found|NET/Socket : no interface found")
_MPI_VAR = re.compile(r"\b(?P<var>(?:btl|oob)_tcp_if_(?:include|exclude))\b")
_UCX = re.compile(r"UCX|ucp_|no usable transports")


@dataclass(frozen=True, slots=True)
class InterfaceSetting:
    """A setting that names interfaces, and the names the host does not have.

    ``origin`` "probe": checked on this host (``available`` lists its interfaces, ``picks`` what the
    library will use of the other entries). ``origin`` "log": a library said it found no such
    interface on ``host``; a log cannot tell a missing interface from one without an address
    (``address_unknown``), and ``value`` is what the log's environment lines showed, if any.
    """

    var: str
    value: str | None = None
    missing: tuple[str, ...] = ()
    library: str | None = None  # nccl, gloo, tp, openmpi, ucx
    origin: str = "probe"
    host: str | None = None
    available: tuple[str, ...] = ()
    picks: str | None = None
    address_unknown: bool = False
    evidence: tuple[Evidence, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"var": self.var, "value": self.value, "missing": list(self.missing), "library": self.library,
                "origin": self.origin, "host": self.host}


def interface_from_log(evidence: Sequence[Evidence], env: Mapping[str, Sequence[str]] | None = None,
                       hint: str | None = None) -> InterfaceSetting:
    """The setting the lines prove wrong: which variable (from the wording), which names, on which host.

    ``env`` is what the log's own environment lines showed (NCCL's "NCCL_SOCKET_IFNAME set by
    environment to X"): it gives the value when a line names no interface. ``hint`` is a name or
    setting a rule already read from the lines.
    """
    env = env or {}
    var: str | None = None
    lib: str | None = None
    names: list[str] = []
    for e in evidence:
        t = e.text
        if m := _NCCL_VAR.search(t):
            var, lib = var or m.group("var"), lib or "nccl"
            names.append(m.group("name"))
        elif m := _GLOO.search(t):
            var, lib = var or VAR_OF["gloo"], lib or "gloo"
            if m.group("name"):
                names.append(m.group("name"))
        elif _NCCL.search(t):
            var, lib = var or VAR_OF["nccl"], lib or "nccl"
        elif m := _MPI_VAR.search(t):
            var, lib = var or m.group("var"), lib or "openmpi"
        elif _UCX.search(t):
            var, lib = var or VAR_OF["ucx"], lib or "ucx"
    values = list(env.get(var or "", ()))
    value = values[0] if values else None
    if not names and value and lib in ("nccl", "gloo"):
        names = [p.split(":", 1)[0] for p in value.lstrip("^=").split(",") if p]
    if not names and hint and not hint.startswith(("in ", "UCX ", "the ")):
        names = [hint]
    host = next((e.host for e in evidence if e.host), None)
    return InterfaceSetting(var=var or "GLOO_SOCKET_IFNAME / NCCL_SOCKET_IFNAME", value=value,
                            missing=tuple(dict.fromkeys(names)), library=lib, origin="log", host=host,
                            address_unknown=True, evidence=tuple(evidence))
