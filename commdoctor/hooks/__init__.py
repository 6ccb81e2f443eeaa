"""commdoctor.hooks: catch mismatched collectives across ranks, and record every rank's progress.

Promise: importing this package is cheap and imports neither torch nor rich
nor textual; ``install()`` imports torch (the hooks live in the training
process). Switch the hooks on in one of three ways::

    import commdoctor.hooks
    commdoctor.hooks.install()          # before or after init_process_group

    with commdoctor.hooks.enabled():    # on for a block, then everything is restored
        ...

    torchrun --nproc-per-node 4 -m commdoctor.hooks train.py --lr 0.1   # no code change

When ranks call different collectives (another op, shape, dtype, reduce op or
root, a skipped or reordered call), every rank raises
``CollectiveMismatchError`` naming each rank's call and line of code, before
the call reaches the backend. Each rank writes its progress to
``$COMMDOCTOR_HOOKS_DIR/hooks-rank{N}.jsonl`` (commdoctor/core/records.py), which
``commdoctor logs`` and the hang diagnosis read. See docs/hooks.md.
"""

from __future__ import annotations

import contextlib
from typing import Any, Iterator

from commdoctor.hooks.errors import CollectiveMismatchError, CollectiveStallError

__all__ = ["CollectiveMismatchError", "CollectiveStallError", "enabled", "install", "installed", "uninstall"]


def install(**config: Any) -> Any:
    """Switch the hooks on (idempotent). See ``commdoctor.hooks.core.Config`` for the settings."""
    from commdoctor.hooks import core

    return core.install(**config)


def uninstall() -> None:
    """Restore every process group and torch function; stop recording and checking."""
    import sys

    core = sys.modules.get("commdoctor.hooks.core")
    if core is not None:
        core.uninstall()


def installed() -> bool:
    import sys

    core = sys.modules.get("commdoctor.hooks.core")
    return core is not None and core.current() is not None


@contextlib.contextmanager
def enabled(**config: Any) -> Iterator[Any]:
    """``with commdoctor.hooks.enabled(): ...``: the hooks are on inside the block only."""
    was = installed()
    h = install(**config)
    try:
        yield h
    finally:
        if not was:
            uninstall()
