"""The errors the hooks raise inside training code.

Promise: no torch import. Both derive from RuntimeError as well as from
commdoctor's error root, so code that already catches the backend's
RuntimeError on a failed collective catches these too.
"""

from __future__ import annotations

from typing import Any

from commdoctor.core.errors import CommDoctorError


class CollectiveMismatchError(CommDoctorError, RuntimeError):
    """Ranks called different collectives (op, shapes, dtype, reduce op, root, order, or a skipped call).

    ``mismatch.calls`` lists every rank's call (rank, op, reduce_op, dtype,
    shapes, root, device, site); ``mismatch.kind`` says how it was found.
    """

    def __init__(self, message: str, mismatch: Any = None, rank: int | None = None) -> None:
        super().__init__(message, title="collective mismatch")
        self.mismatch = mismatch
        self.rank = rank

    def __str__(self) -> str:
        return self.message


class CollectiveStallError(CommDoctorError, RuntimeError):
    """A rank waited the group's whole timeout for others to enter the same collective."""

    def __init__(self, message: str, rank: int | None = None) -> None:
        super().__init__(message, title="collective stalled")
        self.rank = rank

    def __str__(self) -> str:
        return self.message
