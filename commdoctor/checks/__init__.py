"""The built-in checks, in one explicit tuple.

Promise: importing this package is cheap and imports no check module;
``BUILTIN_CHECKS`` is built on first access (so the pipeline can import
``checks.base`` while check modules import the pipeline). No check imports
torch, rich or textual at module level, so ``commdoctor checks`` and
``commdoctor explain`` stay fast and work without torch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from commdoctor.checks.base import Check

_BUILTIN: tuple[type[Check], ...] | None = None


def all_checks() -> tuple[type[Check], ...]:
    global _BUILTIN
    if _BUILTIN is None:
        from commdoctor.checks.backends import BACKEND_CHECKS
        from commdoctor.checks.env import ENV_CHECKS
        from commdoctor.checks.hooks import HOOK_CHECKS
        from commdoctor.checks.hooks_backend import HOOK_BACKEND_CHECKS
        from commdoctor.checks.mpi import MPI_CHECKS
        from commdoctor.checks.hang import HANG_CHECKS
        from commdoctor.checks.logs import LOG_CHECKS
        from commdoctor.checks.multinode import MN_CHECKS
        from commdoctor.checks.net import NET_CHECKS
        from commdoctor.checks.pg import PG_CHECKS
        from commdoctor.checks.rdzv import RDZV_CHECKS

        _BUILTIN = (*ENV_CHECKS, *NET_CHECKS, *RDZV_CHECKS, *PG_CHECKS, *BACKEND_CHECKS, *LOG_CHECKS, *HOOK_CHECKS)
        _BUILTIN = (*_BUILTIN, *HANG_CHECKS)
        _BUILTIN = (*_BUILTIN, *MPI_CHECKS, *HOOK_BACKEND_CHECKS)
        _BUILTIN = (*_BUILTIN, *MN_CHECKS)
    return _BUILTIN


def __getattr__(name: str) -> Any:
    if name == "BUILTIN_CHECKS":
        return all_checks()
    raise AttributeError(name)


def find_code(code: str) -> type[Check] | None:
    """The check that declares ``code`` (first one when shared)."""
    code = code.upper()
    for c in all_checks():
        if code in c.codes():
            return c
    return None


def find_check(name: str) -> type[Check] | None:
    for c in all_checks():
        if c.name == name:
            return c
    return None
