"""Findings from commdoctor.hooks' progress records: mismatched collectives, and where each rank is.

Promise: pure functions of the ``hook_records`` fact (commdoctor/loaders/hook_records.py);
standard library only, so ``commdoctor logs`` and ``commdoctor records`` run without torch.
"""

from __future__ import annotations

import dataclasses
import itertools
from typing import Any, Iterator

from commdoctor.checks.base import Check, Rule
from commdoctor.core.errors import SkipCheck
from commdoctor.loaders.hook_records import FACT, Call, GroupPicture, HookRecords
from commdoctor.core.model import Evidence, Finding, Severity, Stage
from commdoctor.core.context import CheckRun

E, W, I = Severity.ERROR, Severity.WARNING, Severity.INFO
MODES = frozenset({"records", "logs", "hang"})
#: A rank that has waited this long in a call its peers never entered is hung, not caught mid-step.
HUNG_S = 5.0

FIX_MISMATCH = ("Make every rank call the same collectives, in the same order, with the same shapes, dtype, "
                "reduce op and root: compare the lines named for each rank")
STEPS_MISMATCH = (
    "Look for rank-dependent control flow around the named lines: `if rank == 0:` blocks, early `break`/`continue`, "
    "data-dependent branches (a NaN loss skipping a step, an uneven last batch), rank-0-only evaluation or logging",
    "Collectives inside such branches must be called by every rank of the group, or by none",
    "Re-run with commdoctor.hooks (mode raise) to stop at the first disagreement, before the backend sees it",
)


def _rec(run: CheckRun) -> HookRecords:
    facts = run.ctx.facts
    if not facts.has(FACT):
        # Not given at all: these checks do not bear on a `logs` or `hang` run without records.
        raise SkipCheck("no progress records given: pass the directory commdoctor.hooks wrote "
                        "(COMMDOCTOR_HOOKS_DIR, default ./commdoctor-hooks)", not_applicable=True)
    rec = run.fact(FACT)
    if rec is None:
        raise SkipCheck("no hooks-rank*.jsonl files in the paths given")
    return rec


def _group_title(group: str) -> str:
    return "the default group" if group == "0" else f"group {group}"


#: Above this many ranks, runs of ranks are written as ranges and evidence is given per distinct call.
MANY = 8


def _ranks(rs: Any) -> str:
    rs = sorted(set(rs))
    if len(rs) > MANY:  # "ranks 0-768 and 770-1023", not a thousand numbers
        from commdoctor.checks.hang import ranks_text

        return "ranks " + ranks_text(rs)
    return ("rank " if len(rs) == 1 else "ranks ") + ", ".join(map(str, rs))


def _by_call(calls: dict[int, Call]) -> list[tuple[list[int], Call]]:
    """Ranks grouped by the call they made (what must agree), largest group first."""
    groups: dict[Any, list[int]] = {}
    for r, c in sorted(calls.items()):
        groups.setdefault(c.key(), []).append(r)
    return sorted(((rs, calls[rs[0]]) for rs in groups.values()), key=lambda x: (-len(x[0]), x[0][0]))


class HookMismatchCheck(Check):
    """Mismatched collectives found by commdoctor.hooks, or visible in its records.

    What it checks:
        Reads the ``mismatch`` records the hooks wrote when ranks disagreed
        (different operation, shapes, dtype, reduce op or root; a skipped or
        reordered call; a rank that left before a call the others made; a
        send whose receive does not match) and reports each once, with every
        rank's call and line of code. It also compares, call by call, what
        every rank entered (the ``enter`` records, kept whatever the hooks'
        mode): the first call where ranks' records disagree is reported even
        when the hooks only recorded (mode "record") or only logged ("report").
    Why it matters:
        A collective mismatch either hangs the job until the backend's timeout
        (10 to 30 minutes) with a message that names no rank and no line, kills
        a rank inside the backend (gloo's "op.preamble.length <= op.nbytes"), or,
        worse, returns wrong numbers silently (a reduce op or a skipped call of
        the same shape). TORCH_DISTRIBUTED_DEBUG=DETAIL misses both of the last.
    Known limits:
        Only calls that went through commdoctor.hooks are recorded. The
        record-by-record comparison needs every rank's file; it compares the
        last 20000 calls of each group. Sequence numbers count from the
        moment the hooks were installed, so every rank must install them at
        the same point.
    """

    name = "hooks.mismatch"
    stage = Stage.COLLECTIVES
    title = "Collectives called alike on every rank (commdoctor.hooks records)"
    modes = MODES
    rules = (
        Rule("HOOK001", "collective-mismatch", E,
             "ranks called different collectives at #{seq} of {group}: they differ in {what}",
             FIX_MISMATCH, cause="collective_mismatch", steps=STEPS_MISMATCH),
        Rule("HOOK002", "collective-order-mismatch", E,
             "{who} skipped or reordered a collective at #{seq} of {group}: calls of the same shape paired with the "
             "wrong partners", FIX_MISMATCH, cause="collective_mismatch", steps=STEPS_MISMATCH),
        Rule("HOOK003", "rank-left-before-collective", E,
             "{left} left {group} without making collective #{seq}, which {present} entered",
             "Find why {left} stopped early (a skipped collective, a loop with fewer iterations, an early return or "
             "exit on that rank) and make it make the same calls as the others", cause="collective_mismatch",
             steps=STEPS_MISMATCH),
        Rule("HOOK004", "p2p-mismatch", E,
             "a send and its receive do not match ({detail})",
             "Send and receive the same number of elements of the same dtype, with matching src/dst and tags",
             cause="collective_mismatch"),
        Rule("HOOK005", "records-show-collective-mismatch", E,
             "the records show ranks calling different collectives at #{seq} of {group}: they differ in {what}",
             FIX_MISMATCH, cause="collective_mismatch", steps=STEPS_MISMATCH),
    )

    def run(self, run: CheckRun) -> Iterator[Finding]:
        rec = _rec(run)
        yield from self.evaluate(rec, run)

    def evaluate(self, rec: HookRecords, run: CheckRun | None = None) -> Iterator[Finding]:
        seen: set[tuple[str, int]] = set()
        found = 0
        # 1. What the hooks recorded. Bystanders record "remote" copies: report the original.
        by_key: dict[tuple[str, int, str], list[tuple[int, int, dict[str, Any]]]] = {}
        for rank, line, d in rec.mismatches:
            det = _detail(d)
            key = (str(det.get("group", d.get("group"))), int(det.get("seq", d.get("seq", -1)) or 0),
                   str(det.get("kind", "")))
            by_key.setdefault(key, []).append((rank, line, d))
        originals = {k: v for k, v in by_key.items() if k[2] != "remote"}
        first: dict[str, str] = {}
        for (group, seq, kind), items in sorted(originals.items(), key=lambda kv: (kv[0][0], kv[0][1])):
            seen.add((group, seq))
            found += 1
            f = self._recorded(rec, group, seq, kind, items)
            if group in first:  # a later disagreement in the same group follows from the first one
                f = dataclasses.replace(f, consequence_of=first[group], severity=W)
            else:
                first[group] = f.code
            yield f
        if not originals:
            for (group, seq, _), items in by_key.items():  # only bystanders' copies survived
                seen.add((group, seq))
                found += 1
                yield self._recorded(rec, group, seq, "fingerprint", items)
        # 2. What every rank entered, compared call by call.
        for g in sorted(rec.groups.values(), key=lambda g: g.group):
            first_diff = self._first_disagreement(g)
            if first_diff is None:
                continue
            seq, calls = first_diff
            if any(sg == g.group and s <= seq + 1 for sg, s in seen):
                continue  # the hooks already named it (the order kinds name seq-1)
            found += 1
            yield self._offline(rec, g, seq, calls)
        if run is not None:
            run.summary(f"{rec.summary()}; {found} disagreement(s)" if found else
                        f"{rec.summary()}; every call agreed on every rank")

    def _recorded(self, rec: HookRecords, group: str, seq: int, kind: str,
                  items: list[tuple[int, int, dict[str, Any]]]) -> Finding:
        rank0, line0, d0 = items[0]
        det = _detail(d0)
        calls = [c for c in det.get("calls") or [] if isinstance(c, dict)]
        msg = str(d0.get("message", ""))
        path = (rec.ranks[rank0].path if rank0 in rec.ranks else None) or "records"
        ev = [Evidence(path, ln.strip(), line=line0, rank=rank0) for ln in msg.splitlines() if ln.strip()]
        ranks = sorted({int(c["rank"]) for c in calls if "rank" in c} | {r for r, _, _ in items})
        differ = [str(x) for x in det.get("differ") or []]
        what = ", ".join(_FIELD.get(x, x) for x in differ) or "what they called"
        gt = _group_title(group)
        if kind in ("shift", "order"):
            who = [int(x) for x in det.get("who") or []] or ranks[1:]
            return self.finding("HOOK002", who=_ranks(who), seq=seq, group=gt, ranks=ranks, evidence=ev)
        if kind == "left":
            left = [int(c["rank"]) for c in calls if c.get("left")]
            present = [int(c["rank"]) for c in calls if not c.get("left")]
            return self.finding("HOOK003", left=_ranks(left), present=_ranks(present), seq=seq, group=gt,
                                ranks=ranks, evidence=ev)
        if kind == "p2p":
            return self.finding("HOOK004", detail=msg.split(": ", 1)[-1][:200], ranks=ranks, evidence=ev)
        return self.finding("HOOK001", seq=seq, group=gt, what=what, ranks=ranks, evidence=ev)

    @staticmethod
    def _first_disagreement(g: GroupPicture) -> tuple[int, dict[int, Call]] | None:
        if len(g.history) < 2:
            return None
        # Ranks with identical histories agree with each other at every seq: compare one rank per class,
        # and find the seq in each rank of a class at its representative's position (no index per rank).
        classes = g.classes()
        if len(classes) < 2:
            return None
        reps = [g.history[c[0]] for c in classes]
        index = [h.index() for h in reps]
        common = set.intersection(*(set(ix) for ix in index))
        for seq in sorted(common):
            if len({g.key_of(h.sids[ix[seq]]) for h, ix in zip(reps, index)}) > 1:
                return seq, {r: g.history[r].call_at(ix[seq]) for rs, ix in zip(classes, index) for r in rs}
        return None

    def _offline(self, rec: HookRecords, g: GroupPicture, seq: int, calls: dict[int, Call]) -> Finding:
        keys = {r: c.key() for r, c in calls.items()}
        names = ("op", "reduce_op", "dtype", "shapes", "root")
        differ = [n for i, n in enumerate(names) if len({k[i] for k in keys.values()}) > 1]
        if len(calls) > MANY:  # one line per distinct call, naming its ranks
            ev = [Evidence(c.path, f"{_ranks(rs)} entered {c.describe()}", line=c.line, rank=rs[0])
                  for rs, c in reversed(_by_call(calls))]
        else:
            ev = [Evidence(c.path, f"rank {r} entered {c.describe()}", line=c.line, rank=r)
                  for r, c in sorted(calls.items())]
        return self.finding("HOOK005", seq=seq, group=_group_title(g.group),
                            what=", ".join(_FIELD.get(x, x) for x in differ), ranks=sorted(calls), evidence=ev)


_FIELD = {"op": "operation", "reduce_op": "reduce op", "dtype": "dtype", "shapes": "shapes", "root": "root rank",
          "device": "device type", "order": "call order", "presence": "which ranks made the call",
          "dtype/size": "dtype or size"}


class HookProgressCheck(Check):
    """Where every rank is, from commdoctor.hooks' progress records: who waits, and for whom.

    What it checks:
        For each process group, the last collective each rank entered and the
        last it completed (the ``enter`` and ``exit`` records). When some ranks
        wait inside a collective that another rank never entered, it names that
        rank and where it is: "rank 3 is stuck in all_reduce #1041 at
        train.py:88 while ranks 0-2 wait in all_reduce #1042 at train.py:90".
        When every rank is inside the same call, the code agrees and the stall
        is below it. A rank of the job that wrote no records is named too.
    Why it matters:
        A hung job's backend error (after its 10 to 30 minute timeout) blames
        the ranks that waited, not the one that never came. The records say
        which rank is behind and on which line, without attaching a debugger.
    Known limits:
        The records end when a rank stops writing: a rank killed mid-step
        looks like one that stopped. The hooks write a heartbeat every second;
        waits shorter than 5 s are reported as information (a snapshot taken
        mid-step), not as a hang. Calls made outside the hooks are not seen.
    """

    name = "hooks.progress"
    stage = Stage.HANG
    title = "Every rank's progress (commdoctor.hooks records)"
    modes = MODES
    rules = (
        Rule("HOOK010", "rank-behind-collective", E,
             "{behind} {where}, while {waiting} {wait_verb} in {call}",
             "Find out what {behind} is doing instead (commdoctor hang takes every rank's stack); a rank that is "
             "slow on purpose (rank-0-only evaluation, checkpointing, data preparation) needs the others to wait "
             "in a barrier with a longer timeout, or the work moved off the critical path",
             cause="collective_timeout_straggler",
             steps=("If the late rank is doing rank-0-only work: raise the timeout of init_process_group, or do "
                    "that work on every rank / before the collectives start",
                    "If it is stuck in another collective: the ranks called collectives in a different order "
                    "(see the hooks.mismatch findings)")),
        Rule("HOOK011", "all-ranks-in-same-collective", W,
             "every rank of {group} is inside {call}; the calls agree, so the stall is below them",
             "Look below the code: the network and rendezvous checks (commdoctor run), the backend's own logs "
             "(NCCL_DEBUG=INFO), and whether a peer process died (dmesg, the launcher's output)"),
        Rule("HOOK012", "rank-without-records", W,
             "{missing} of the {world}-rank job wrote no progress records",
             "Check that {missing} started and installed commdoctor.hooks (same launcher, same COMMDOCTOR_HOOKS_DIR), "
             "and that its records directory was collected"),
    )

    def run(self, run: CheckRun) -> Iterator[Finding]:
        rec = _rec(run)
        yield from self.evaluate(rec, run)

    def evaluate(self, rec: HookRecords, run: CheckRun | None = None, now: float | None = None) -> Iterator[Finding]:
        covered = _mismatch_seqs(rec)
        lines: list[str] = []
        for g in sorted(rec.groups.values(), key=lambda g: g.group):
            lines.append(_group_line(g))
            for f in self._group(rec, g, covered.get(g.group), now):
                if covered:  # the job stopped at a mismatch: where ranks stood follows from it
                    f = dataclasses.replace(f, consequence_of=_first_code(rec), severity=I)
                yield f
        if rec.world_size:
            # Bounded: a damaged header may claim millions of ranks; name the first 256 missing.
            missing = [r for r in itertools.islice((r for r in range(rec.world_size) if r not in rec.ranks), 256)]
            if missing:
                yield self.finding("HOOK012", missing=_ranks(missing), world=rec.world_size, ranks=missing,
                                   evidence=[Evidence(p, "records found for " + _ranks(sorted(rec.ranks))) for p in
                                             rec.paths[:1]])
        if run is not None:
            run.summary("; ".join(lines) or "no collective recorded")
            for r, p in sorted(rec.ranks.items()):
                e, x = p.last_entered, p.last_completed
                run.detail(f"rank {r}: last entered {e.op} #{e.seq} (group {e.group}) at {e.site}" if e else
                           f"rank {r}: entered nothing")
                if x is not None:
                    run.detail(f"rank {r}: last completed {x.op} #{x.seq} (group {x.group})")

    def _group(self, rec: HookRecords, g: GroupPicture, mismatch_seq: int | None, now: float | None) -> Iterator[Finding]:
        flight = {r: c for r in g.entered if (c := g.in_flight(r)) is not None}
        if not flight:
            return
        top = max(c.seq for c in flight.values())
        if mismatch_seq is not None and top >= mismatch_seq:
            return  # the ranks stopped at a mismatch: hooks.mismatch reports it
        waiting = {r: c for r, c in flight.items() if c.seq == top}
        behind = sorted(r for r, c in g.entered.items() if c.seq < top)
        ref = now if now is not None else rec.last_time
        waited = max(0.0, (max(rec.last_seen.get(r, ref or 0.0) for r in waiting) if ref else 0.0)
                     - max(c.time for c in waiting.values()))
        sample = waiting[min(waiting)]
        call = sample.describe()
        if behind:
            for b in behind:
                c = g.entered[b]
                if g.in_flight(b) is not None:
                    where = f"is stuck in {c.describe()}"
                else:
                    where = f"never entered #{top} (its last call, {c.describe()}, completed)"
                sev = None if waited >= HUNG_S else I
                detail = (f"{_ranks(waiting)} had waited {waited:.1f} s when the records end" + ("" if waited >= HUNG_S else
                          ": maybe a snapshot taken mid-step rather than a hang"))
                ev = [Evidence(c.path, f"rank {b} last entered {c.describe()}", line=c.line, rank=b)]
                ev += _waiting_evidence(waiting)
                yield self.finding("HOOK010", behind=_ranks([b]), where=where, waiting=_ranks(waiting),
                                   wait_verb="waits" if len(waiting) == 1 else "wait", call=call,
                                   ranks=[b, *sorted(waiting)], evidence=ev, detail=detail, severity=sev)
            return
        members = set(g.entered)
        if set(waiting) == members and len(members) > 1 and len({c.key() for c in waiting.values()}) == 1:
            sev = None if waited >= HUNG_S else I
            ev = _waiting_evidence(waiting)
            yield self.finding("HOOK011", group=_group_title(g.group), call=call, ranks=sorted(waiting), evidence=ev,
                               detail=f"they waited {waited:.1f} s before the records end", severity=sev)


def _waiting_evidence(waiting: dict[int, Call]) -> list[Evidence]:
    if len(waiting) > MANY:
        return [Evidence(c.path, f"{_ranks(rs)} entered {c.describe()}", line=c.line, rank=rs[0])
                for rs, c in _by_call(waiting)]
    return [Evidence(w.path, f"rank {r} entered {w.describe()}", line=w.line, rank=r) for r, w in sorted(waiting.items())]


def _detail(d: dict[str, Any]) -> dict[str, Any]:
    det = d.get("detail")
    return det if isinstance(det, dict) else {}


def _first_code(rec: HookRecords) -> str:
    kinds = {str(_detail(d).get("kind", "")) for _, _, d in rec.mismatches}
    for kind, code in (("fingerprint", "HOOK001"), ("shift", "HOOK002"), ("order", "HOOK002"), ("left", "HOOK003"),
                       ("p2p", "HOOK004")):
        if kind in kinds:
            return code
    return "HOOK001"


def _mismatch_seqs(rec: HookRecords) -> dict[str, int]:
    out: dict[str, int] = {}
    for _, _, d in rec.mismatches:
        det = _detail(d)
        try:
            g, s = str(det.get("group", d.get("group"))), int(det.get("seq", d.get("seq", -1)))
        except (TypeError, ValueError):
            continue
        out[g] = min(out.get(g, s), s)
    return out


def _group_line(g: GroupPicture) -> str:
    done = [g.completed.get(r, -1) for r in g.entered]
    flight = [r for r in g.entered if g.in_flight(r) is not None]
    head = f"{_group_title(g.group)}: {len(g.entered)} rank(s)"
    if not flight:
        return head + f", all done through #{min(done)}" if done and min(done) == max(done) else \
            head + f", completed up to #{min(done)}..#{max(done)}"
    return head + f", {_ranks(flight)} inside a call"


class HookRecordsCheck(Check):
    """The records themselves: whether the hooks could check, and whether the files are whole.

    What it checks:
        The ``warning`` records (the side channel between ranks could not be
        set up or was lost, so calls went unchecked from then on) and lines
        that could not be read (a rank killed mid-write leaves a truncated last
        line).
    Why it matters:
        Findings from records whose checking stopped say less: a mismatch after
        that point would only show in the record-by-record comparison.
    Known limits:
        A rank that was killed before its first flush (every 50 ms) leaves
        nothing to read.
    """

    name = "hooks.records"
    stage = Stage.LOGS
    title = "commdoctor.hooks records complete and checking on"
    modes = MODES
    rules = (
        Rule("HOOK020", "hooks-checking-stopped", W,
             "cross-rank checking was off or stopped on {who}: {message}",
             "Let the ranks reach each other on the hooks' side channel (a TCP port per rank on the address that "
             "routes to MASTER_ADDR; set COMMDOCTOR_HOOKS_ADDR to choose it), and install the hooks on every rank",
             env={"COMMDOCTOR_HOOKS_ADDR": "<this host's address on the training network>"}),
        Rule("HOOK021", "records-damaged", I, "{n} line(s) of the records could not be read",
             "Nothing to do unless a rank's whole history is missing: a rank killed while writing leaves a cut line"),
    )

    def run(self, run: CheckRun) -> Iterator[Finding]:
        rec = _rec(run)
        yield from self.evaluate(rec, run)

    def evaluate(self, rec: HookRecords, run: CheckRun | None = None) -> Iterator[Finding]:
        by_msg: dict[str, list[tuple[int, int, str]]] = {}
        for rank, line, path, msg in rec.warnings:
            by_msg.setdefault(msg.split(";")[0], []).append((rank, line, path))
        for msg, where in by_msg.items():
            ranks = sorted({r for r, _, _ in where})
            yield self.finding("HOOK020", who=_ranks(ranks), message=msg, ranks=ranks,
                               evidence=[Evidence(p, msg, line=ln, rank=r) for r, ln, p in where[:8]])
        if rec.bad_lines:
            yield self.finding("HOOK021", n=rec.bad_lines,
                               evidence=[Evidence(p, "records file") for p in rec.paths[:4]])
        if run is not None:
            run.summary(f"{len(rec.paths)} file(s)" + (f", {rec.bad_lines} unreadable line(s)" if rec.bad_lines else "")
                        + (", histories cut to the last 20000 calls per group" if rec.truncated else ""))


HOOK_CHECKS: tuple[type[Check], ...] = (HookMismatchCheck, HookProgressCheck, HookRecordsCheck)
