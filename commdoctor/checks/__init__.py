"""The built-in checks, in one explicit tuple.

Promise: importing this package imports every check module, but no check
imports torch, rich or textual at module level, so ``commdoctor checks`` and
``commdoctor explain`` stay fast and work without torch.
"""

from __future__ import annotations

from commdoctor.checks.base import Check
from commdoctor.checks.env import ENV_CHECKS
from commdoctor.checks.hooks import HOOK_CHECKS
from commdoctor.checks.pg import PG_CHECKS

BUILTIN_CHECKS: tuple[type[Check], ...] = (*ENV_CHECKS, *PG_CHECKS,
                                           *HOOK_CHECKS)


def all_checks() -> tuple[type[Check], ...]:
    return BUILTIN_CHECKS


def find_code(code: str) -> type[Check] | None:
    """The check that declares ``code`` (first one when shared)."""
    code = code.upper()
    for c in BUILTIN_CHECKS:
        if code in c.codes():
            return c
    return None


def find_check(name: str) -> type[Check] | None:
    for c in BUILTIN_CHECKS:
        if c.name == name:
            return c
    return None
