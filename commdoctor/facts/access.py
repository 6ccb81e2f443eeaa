"""What this process may do to others: attach with ptrace (py-spy), as one fact.

Promise: pure. commdoctor.probes.env measures (procfs, capabilities, PATH); env.ptrace judges it and
the stack reader (commdoctor.probes.stacks) reads it to say why an attach failed. ``to_dict`` gives
the JSON reports have always carried under ``data["ptrace"]``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class PtraceAccess:
    """The ptrace rules this process lives under. None where the host does not say (no Yama LSM, no procfs)."""

    uid: int
    yama_ptrace_scope: int | None = None
    cap_sys_ptrace: bool | None = None
    py_spy: str | None = None  # path of the py-spy binary, if any
    container: str | None = None  # docker, kubernetes, ... when this runs in one

    def to_dict(self) -> dict[str, Any]:
        return {"uid": self.uid, "yama_ptrace_scope": self.yama_ptrace_scope, "cap_sys_ptrace": self.cap_sys_ptrace,
                "py_spy": self.py_spy, "container": self.container}
