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
from commdoctor.rules.base import CONTEXT, Cand, Code, W, completed, hits, own_reading

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
        return [own_reading(hs)]
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
    """Every candidate cause the run model supports, likeliest root cause first (notes only, when the job did
    not fail: see ``settle``)."""
    out: list[Cand] = []
    for _phase, _i, step in STEPS:
        out.extend(step(m, out))
    return settle(m, order(merge(out)))


def recovered(m: Any) -> list[Any]:
    """The launcher's restarts, when every failure the logs show came before a restart in its own file and the
    job went on after it (torchrun --max-restarts: a worker failed, the group was restarted and ran). A job that
    still failed ends with the launcher's failure summary, so any summary entry means it did not recover."""
    elastic = getattr(m, "elastic", [])
    restarts = [f.ev for f in elastic if f.agent and f.ev is not None] + [h.ev for h in m.hits.get("agent_restart", [])]
    if not restarts or any(not f.agent for f in elastic):
        return []
    last: dict[str, int] = {}
    for ev in restarts:
        last[ev.source] = max(last.get(ev.source, 0), ev.line)
    failures = [h.ev for hs in m.hits.values() for h in hs if h.sig.role != CONTEXT]
    failures += [ev for ev, _seq, _kind in m.unmatched_errors] + [ev for _t, _msg, ev, _seq in m.exceptions]
    if any(ev.line >= last.get(ev.source, -1) for ev in failures):
        return []  # an error after the last restart (or in a file with none): the restarted job failed too
    went_on = getattr(m, "last_ok", {})
    if any(went_on.get(src, 0) <= line for src, line in last.items()):
        return []  # nothing after the restart: the logs do not show the job going on
    return restarts


def connected(m: Any) -> list[Any]:
    """Lines that say NCCL connected its channels, when every communicator the logs show reached Init COMPLETE."""
    comms = getattr(m, "comms", ())
    hs = m.hits.get("nccl_connected", [])
    if not hs or not comms or any(c.state not in ("Init COMPLETE", "Destroy COMPLETE") for c in comms):
        return []
    return [hs[0].ev]


def settle(m: Any, cands: list[Cand]) -> list[Cand]:
    """Notes harmless in the job's own context carry no cause.

    When the logs show the job did not fail (no error any rule knows or not, no non-zero exit, no timeout) and
    that it reached its end, what the rules found are risks of the setup the job did not run into (a docker
    bridge in NCCL's interface list, an environment override): each stays as a note and names no cause. Errors
    the launcher recovered from (a restart after which the job went on without error) are notes too."""
    if not cands:
        return cands
    again = recovered(m)
    if again:
        why = (f"The launcher restarted the workers ({again[-1].source}:{again[-1].line}) and the job went on "
               f"without another error: a failure it recovered from, not what stopped it.")
    else:
        if any(not c.weak for c in cands) or m.elastic or any(w.timed_out for w in m.watchdog) or m.unmatched_errors:
            return cands
        ended = completed(m)
        if not ended:
            # No end logged (a hang leaves exactly this), but an interface that peers cannot reach is a risk only until
            # connections are made: NCCL connecting every channel, each communicator initialised, says they were.
            linked = connected(m)
            if linked:
                why = (f"NCCL connected its channels over these interfaces ({linked[0].source}:{linked[0].line}), every "
                       f"communicator completed its init and no error was logged: a risk the job did not run into.")
                for c in cands:
                    if c.cause == "wrong_interface":
                        c.note = why
            return cands
        why = (f"The job reached its end ({ended[0].source}:{ended[0].line}: {ended[0].text.strip()[:120]}) and no "
               f"error was logged: a risk it did not run into, not the cause of a failure.")
    for c in cands:
        c.note = why
        c.consequence = False
    return cands


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
        # A risk of the setup (weak) stays what it is beside a failure: a warning of its own, not an echo of it.
        if c.tier >= 5 and primary.tier < 5 and not c.weak:
            c.consequence = True
        ordered.append(c)
    ordered.extend(cons)
    return ordered
