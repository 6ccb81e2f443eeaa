"""Diagnosis: one loop over the rule tables, then the candidates put in causal order.

Promise: ``diagnose(model)`` is a pure function of the run model built by
commdoctor.loaders.logs (standard library only; no checks, no torch). It
runs every rule of commdoctor.rules, phase by phase (rules of a later phase
see what earlier ones found: a closed connection is an echo only when
something explains it), merges candidates of one code and cause, and orders
them: the likeliest root cause first, then other independent failures, then
consequences, each of which the check marks as following from the first.
"""

from __future__ import annotations

from typing import Any, Callable

from commdoctor.rules import MODEL_RULES, SIGNATURES
from commdoctor.rules.base import CONSEQUENCE, CONTEXT, Cand, Code, W, cand, hits

#: Shown after the verdict: another cause the same lines support, and what tells them apart.
ALSO_POSSIBLE = Code("LOG090", "also-possible", W, "the same signature is also explained by {alt}", "{tell}", cause="other")

_Step = tuple[int, int, Callable[[Any, list[Cand]], list[Cand]]]


def _line_step(s: Any) -> Callable[[Any, list[Cand]], list[Cand]]:
    def run(m: Any, found: list[Cand]) -> list[Cand]:
        hs = hits(m, s.id, s.exclude)
        if not hs and not s.always:
            return []
        if s.build is not None:
            return s.build(m, hs, found)
        return [cand(s.code, s.cause, s.tier, hs, params=s.params(hs) if s.params else {}, detail=s.detail,
                     alts=list(s.alts), consequence=s.role == CONSEQUENCE)]
    return run


def _model_step(r: Any) -> Callable[[Any, list[Cand]], list[Cand]]:
    return lambda m, found: r.build(m, found, [])


def _steps() -> list[_Step]:
    steps: list[_Step] = []
    for i, s in enumerate(SIGNATURES):
        if s.role != CONTEXT and (s.code is not None or s.build is not None):
            steps.append((s.phase, i, _line_step(s)))
    for j, r in enumerate(MODEL_RULES):
        steps.append((r.phase, len(SIGNATURES) + j, _model_step(r)))
    steps.sort(key=lambda t: (t[0], t[1]))
    return steps


STEPS = _steps()


def diagnose(m: Any) -> list[Cand]:
    """Every candidate cause the run model supports, likeliest root cause first."""
    out: list[Cand] = []
    for _phase, _i, step in STEPS:
        out.extend(step(m, out))
    return order(merge(out))


def merge(cands: list[Cand]) -> list[Cand]:
    """One candidate per (code, cause): evidence, ranks and hosts pooled, the earliest and strongest kept."""
    out: dict[tuple[str, str | None], Cand] = {}
    for c in cands:
        k = (c.code, c.cause)
        old = out.get(k)
        if old is None:
            out[k] = c
            continue
        if (c.consequence, c.tier) < (old.consequence, old.tier):  # the stronger one says what it is
            old.params, old.detail = c.params, c.detail or old.detail
            old.evidence = (c.evidence[:] + [e for e in old.evidence if e not in c.evidence])[:6]
        old.tier = min(old.tier, c.tier)
        old.seq = min(old.seq, c.seq)
        for e in c.evidence:
            if len(old.evidence) < 6 and e not in old.evidence:
                old.evidence.append(e)
        old.ranks |= c.ranks
        old.hosts |= c.hosts
        old.alts.extend(a for a in c.alts if a not in old.alts)
        old.consequence = old.consequence and c.consequence
        old.weak = old.weak and c.weak
    return list(out.values())


def order(cands: list[Cand]) -> list[Cand]:
    """Causal order: specific before generic, then earliest first; mark what follows from the first."""
    roots = sorted((c for c in cands if not c.consequence), key=lambda c: (c.weak, c.tier, c.seq))
    cons = sorted((c for c in cands if c.consequence), key=lambda c: (c.tier, c.seq))
    if not roots and cons:
        first = cons.pop(0)
        first.consequence = False
        roots = [first]
    if not roots:
        return []
    primary = roots[0]
    ordered = [primary]
    for c in roots[1:]:
        if (c.tier >= 5 and primary.tier < 5) or (c.weak and not primary.weak):
            c.consequence = c.tier >= 5
        ordered.append(c)
    ordered.extend(cons)
    return ordered
