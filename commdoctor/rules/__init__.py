"""The log rules, one module per family: every rule declared once, as a table row.

Promise: ``SIGNATURES`` (every line rule, in evaluation order), ``BY_ID``,
``MODEL_RULES`` (rules over the run model) and ``CODES`` (what each finding
code says) are plain data gathered from the family modules below; importing
this package imports only the standard library and commdoctor.core.model.
Adding a rule is one row in its family's table plus a test with a real line
and a near-miss (tests/logs/test_rule_rows.py).
"""

from __future__ import annotations

from commdoctor.rules import gloo, horovod, launcher, mpi, nccl, oneccl, paddle, system, torch, xla
from commdoctor.rules.base import CONSEQUENCE, CONTEXT, ROOT, Code, ModelRule, Signature

FAMILIES = (("system", system), ("nccl", nccl), ("torch", torch), ("gloo", gloo), ("mpi", mpi), ("xla", xla), ("horovod", horovod),
            ("paddle", paddle), ("oneccl", oneccl), ("launcher", launcher))

SIGNATURES: tuple[Signature, ...] = tuple(s for _, mod in FAMILIES for s in mod.SIGNATURES)
BY_ID: dict[str, Signature] = {s.id: s for s in SIGNATURES}
MODEL_RULES: tuple[ModelRule, ...] = tuple(r for _, mod in FAMILIES for r in getattr(mod, "MODEL_RULES", ()))
CODES: tuple[Code, ...] = tuple(c for _, mod in FAMILIES for c in mod.CODES)
FAMILY_OF: dict[str, str] = {s.id: name for name, mod in FAMILIES for s in mod.SIGNATURES}

__all__ = ["BY_ID", "CODES", "CONSEQUENCE", "CONTEXT", "FAMILIES", "FAMILY_OF", "MODEL_RULES", "ROOT", "SIGNATURES"]


def _check() -> None:
    """Table invariants, checked once at import: a mistake here is a bug in a row, found before any log is read."""
    if len(BY_ID) != len(SIGNATURES):
        raise ValueError("two rule rows share an id")
    for s in SIGNATURES:
        if s.role == CONTEXT:
            continue
        if s.code is None and s.build is None and s.read_by not in BY_ID:
            raise ValueError(f"rule {s.id}: a root or consequence row needs a code, a build function or read_by")
        for x in s.exclude:
            if x not in BY_ID:
                raise ValueError(f"rule {s.id}: excludes unknown rule {x}")


_check()
