"""Shared memory (/dev/shm) as one fact, from statvfs on a live host or from the lines a log holds.

Promise: pure (no I/O here: the live probe in commdoctor.probes.env measures, this module only
holds and reads); ``shm_from_log`` reads only the verbatim evidence lines it is given. The wording
it understands is NCCL's own (src/misc/shmutils.cc: "Error while creating shared memory segment
%s (size %zu)", "failed to extend %s to %ld bytes", posix_fallocate / ftruncate failures with
strerror), torch's ("unable to allocate shared memory(shm)"), and the kernel's SIGBUS when a
mapping /dev/shm cannot back is touched.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Sequence

from commdoctor.core.model import Evidence
from commdoctor.parsing.lines import SIGBUS_DEATH

#: What went wrong, as a log says it. ``None`` for a live measurement (the check judges the numbers).
NO_SPACE, DENIED, SIGBUS, CREATE_FAILED = "no_space", "denied", "sigbus", "create_failed"

_SIZE = re.compile(r"\(size (\d{1,20})\)|\bto (\d{1,20}) bytes|\bsize[= ](\d{1,20})\b")
_NO_SPACE = re.compile(r"No space left|ENOSPC|errno 28\b|insufficient shared memory|too small")
_DENIED = re.compile(r"Permission denied|EACCES|Read-only file system|EROFS")
_SIGBUS = re.compile(SIGBUS_DEATH)


@dataclass(frozen=True, slots=True)
class SharedMemory:
    """/dev/shm on one host: its size, free space and writability, and what a failure said.

    ``origin`` is "probe" (measured here: ``size_bytes`` and ``free_bytes`` are set when ``exists``)
    or "log" (proven by lines: ``failure`` says what went wrong, ``requested_bytes`` the segment
    that could not be made when the line gives it; sizes are unknown). ``host`` is None for the host
    commdoctor runs on.
    """

    path: str = "/dev/shm"
    origin: str = "probe"
    exists: bool | None = None
    size_bytes: int | None = None
    free_bytes: int | None = None
    writable: bool | None = None
    fstype: str | None = None
    error: str | None = None  # why statvfs failed (probe)
    failure: str | None = None  # NO_SPACE, DENIED, SIGBUS, CREATE_FAILED (log)
    requested_bytes: int | None = None
    host: str | None = None
    evidence: tuple[Evidence, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (for a probe: the keys env.shm has always published under data["shm"])."""
        if self.origin == "probe":
            if not self.exists:
                return {"path": self.path, "exists": False, "error": self.error}
            return {"path": self.path, "exists": True, "size_bytes": self.size_bytes, "free_bytes": self.free_bytes,
                    "writable": self.writable, "fstype": self.fstype}
        return {"path": self.path, "origin": self.origin, "failure": self.failure,
                "requested_bytes": self.requested_bytes, "host": self.host}


def shm_from_log(evidence: Sequence[Evidence]) -> SharedMemory:
    """The fact the lines prove: which failure (the most telling one any line names) and the size asked for."""
    failure = CREATE_FAILED
    requested: int | None = None
    path = "/dev/shm"
    seen = set()
    for e in evidence:
        t = e.text
        if _DENIED.search(t):
            seen.add(DENIED)
        if _NO_SPACE.search(t):
            seen.add(NO_SPACE)
        if _SIGBUS.search(t):
            seen.add(SIGBUS)
        m = _SIZE.search(t)
        if m and requested is None:
            requested = int(next(g for g in m.groups() if g))
        p = re.search(r"(/dev/shm/[\w.\-]{1,128})", t)
        if p and path == "/dev/shm":
            path = p.group(1)
    for kind in (DENIED, NO_SPACE, SIGBUS):  # a named errno says more than "creating failed"
        if kind in seen:
            failure = kind
            break
    host = next((e.host for e in evidence if e.host), None)
    return SharedMemory(path=path, origin="log", exists=None if failure != DENIED else True,
                        writable=False if failure == DENIED else None, failure=failure,
                        requested_bytes=requested, host=host, evidence=tuple(evidence))
