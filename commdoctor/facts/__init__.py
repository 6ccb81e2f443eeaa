"""Facts: what a probe observed on a live host, or what a log line proves, as frozen typed records.

Promise: standard library and commdoctor.core.model only (no torch, rich or textual), so every layer may
import it. A fact says the same thing whoever produced it: ``SharedMemory`` comes from statvfs on a
live host (commdoctor.probes.env) or from NCCL's "failed to extend /dev/shm/..." line in a log
(``shm_from_log``), and one check judges it with one code. Facts are immutable
(``@dataclass(frozen=True, slots=True)``): a check reads attributes, never string keys, and
cannot change what another check will read. ``to_dict`` gives the JSON form reports have always
carried for the probe's facts.
"""

from __future__ import annotations

from commdoctor.facts.access import PtraceAccess
from commdoctor.facts.interfaces import InterfaceSetting, interface_from_log
from commdoctor.facts.limits import LockedMemory, RdmaDevice, RdmaPort
from commdoctor.facts.shm import SharedMemory, shm_from_log

PROBE, LOG = "probe", "log"

__all__ = ["LOG", "PROBE", "InterfaceSetting", "LockedMemory", "PtraceAccess", "RdmaDevice", "RdmaPort",
           "SharedMemory",
           "interface_from_log", "shm_from_log"]
