"""Hang stage: which rank holds the job up, in what state, at which line of code.

Promise: the checks are pure functions of facts: ``hang_snapshot`` (every
rank's process state and classified stack, live or saved), ``hook_progress``
(commdoctor.core.records), ``flight_recorder`` (dumps read by
commdoctor.loaders.flight_recorder), ``hang_logs`` (the job's logs, loaded
by commdoctor.loaders.hang_logs; the log diagnosis runs on them here) and
``nccl_ras``. Any of them may be
absent; each finding says which signals it rests on, with the stack lines or
records as evidence.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Iterable, Iterator, Mapping, Sequence

from commdoctor.checks.base import Check, Rule
from commdoctor.core.errors import SkipCheck
from commdoctor.loaders.hang_logs import HangLogs, rank_of, scan_signs
from commdoctor.core.model import Evidence, Finding, Severity, Stage, canonical_code
from commdoctor.parsing.stacks import RankState

if TYPE_CHECKING:
    from commdoctor.core.context import CheckRun

E, W, I = Severity.ERROR, Severity.WARNING, Severity.INFO

FACTS = ("hang_snapshot", "hook_progress", "flight_recorder", "hang_logs", "nccl_ras")


def optional_fact(run: CheckRun, name: str, default: Any = None) -> Any:
    """A fact that may have no provider in this mode (absent signal, not an error)."""
    if not run.ctx.facts.has(name):
        return default
    return run.fact(name)


def log_signals(facts: HangLogs | None) -> list[dict[str, Any]]:
    """The log lines that matter to a hang verdict: the log diagnosis's first three causes, each with up to
    three evidence lines and its code; the loader's small scan when there is no run model or the diagnosis
    of it fails (a log that defeats the analyzer must not cost the verdict its other signals)."""
    if facts is None:
        return []
    if facts.model is None:
        return list(facts.lines)
    try:
        from commdoctor.rules.engine import diagnose

        # Already merged and in causal order; notes (what the job did not fail of) name no cause here either.
        cands = [c for c in diagnose(facts.model) if not c.note]
    except Exception:  # noqa: BLE001 - see the docstring
        return scan_signs(facts.paths, facts.pid_rank)
    out: list[dict[str, Any]] = []
    for c in cands[:3]:
        for e in c.evidence[:3]:
            rank = e.rank if e.rank is not None else rank_of(e.source, facts.pid_rank)
            out.append({"source": e.source, "line": e.line, "text": e.text, "rank": rank, "code": c.code,
                        "cause": c.cause})
    return out


def ranks_text(ranks: Iterable[int]) -> str:
    """'3', '0, 1 and 2', '0-5' (runs of 3 or more are collapsed)."""
    rs = sorted(set(ranks))
    if not rs:
        return "none"
    parts: list[str] = []
    i = 0
    while i < len(rs):
        j = i
        while j + 1 < len(rs) and rs[j + 1] == rs[j] + 1:
            j += 1
        if j - i >= 2:
            parts.append(f"{rs[i]}-{rs[j]}")
        else:
            parts.extend(str(x) for x in rs[i:j + 1])
        i = j + 1
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


def plural(ranks: Sequence[int]) -> str:
    return "rank" if len(set(ranks)) == 1 else "ranks"


def verb(ranks: Sequence[int]) -> str:
    """'waits' after one rank, 'wait' after several."""
    return "waits" if len(set(ranks)) == 1 else "wait"


# -- one view of "where each rank is" from sequence-numbered sources (FR, hooks) ------------


@dataclass
class SeqView:
    source: str  # "flight recorder" | "hooks"
    group: str
    front_seq: int
    front_op: str | None
    waiting: dict[int, str] = field(default_factory=dict)  # rank -> call site (file:line) or ""
    waiting_text: dict[int, str] = field(default_factory=dict)
    behind: dict[int, str] = field(default_factory=dict)  # rank -> its last call, described
    mismatch_seq: int | None = None
    mismatch: dict[int, str] = field(default_factory=dict)  # rank -> its call at mismatch_seq
    no_data: list[int] = field(default_factory=list)
    #: what the waiting ranks wait in, for a sentence: "all_reduce #16 (then #17 at job.py:69)"
    wait_what: str | None = None
    #: the calls at mismatch_seq, alike ones together: [("broadcast 16384 Float at job.py:63", [2]), ...]
    mismatch_calls: list[tuple[str, list[int]]] = field(default_factory=list)

    @property
    def group_text(self) -> str:
        """'group 0 (default_pg)'; gloo's recorder names no group, and 'group ' would read as a typo."""
        return f"group {self.group}" if self.group else "the unnamed group"


def _call_text(e: Any, sizes: bool = True, dtypes: bool = True) -> str:
    """One recorded call in a sentence: 'broadcast at job.py:63', 'all_reduce 16384 Float at job.py:69'."""
    shape = ",".join("x".join(map(str, s)) or "scalar" for s in e.input_sizes) if sizes else ""
    types = ",".join(e.input_dtypes) if dtypes else ""
    site = e.user_frame
    return f"{e.op}" + (f" {shape}" if shape else "") + (f" {types}" if types else "") + (
        f" at {site.where}" if site else "")


def seq_views_from_fr(groups: Iterable[Any]) -> list[SeqView]:
    out = []
    for g in groups:
        v = SeqView(source="flight recorder", group=f"{g.name} ({g.desc})" if g.desc else g.name,
                    front_seq=g.front_seq, front_op=g.front_op, no_data=list(g.no_dump))
        for r, e in g.waiting.items():
            site = e.user_frame
            v.waiting[r] = site.where if site else ""
            v.waiting_text[r] = e.describe()
        for r, e in g.missing.items():
            v.behind[r] = e.describe() if e else "no collective recorded"
        if g.waiting:
            # The oldest call the waiting ranks wait in; when it has no Python caller (DDP's gradient
            # all_reduce comes from the autograd thread), the next one that has one says where.
            first = min(g.waiting.values(), key=lambda e: e.seq)
            v.wait_what = f"{first.op} #{first.seq}"
            if first.user_frame is not None:
                v.wait_what += f" at {first.user_frame.where}"
            else:
                later = [e for pend in g.pending.values() for e in pend if e.seq > first.seq and e.user_frame]
                if later:
                    nxt = min(later, key=lambda e: e.seq)
                    v.wait_what += f" (then {nxt.op} #{nxt.seq} at {nxt.user_frame.where})"
        if g.mismatch_seq is not None:
            v.mismatch_seq = g.mismatch_seq
            v.mismatch = {r: e.describe() for r, e in g.mismatch.items()}
            # Name what differs: the op alone when ops differ, else the sizes, else the dtypes.
            ents = list(g.mismatch.values())
            ops_differ = len({e.op for e in ents}) > 1
            sizes_differ = len({e.input_sizes for e in ents}) > 1
            by_call: dict[str, list[int]] = {}
            for r, e in sorted(g.mismatch.items()):
                text = _call_text(e, sizes=not ops_differ, dtypes=not ops_differ and not sizes_differ)
                by_call.setdefault(text, []).append(r)
            v.mismatch_calls = sorted(by_call.items(), key=lambda kv: (-len(kv[1]), kv[1][0]))
        out.append(v)
    return out


def seq_views_from_records(progress: Mapping[int, Any]) -> list[SeqView]:
    by_group: dict[str, dict[int, Any]] = {}
    for r, p in progress.items():
        if p.last_entered is not None:
            by_group.setdefault(p.last_entered.group, {})[r] = p
    out = []
    for group, ranks in sorted(by_group.items()):
        front = max(p.last_entered.seq for p in ranks.values())
        front_ops = [p.last_entered.op for p in ranks.values() if p.last_entered.seq == front]
        v = SeqView(source="hooks", group=group, front_seq=front, front_op=front_ops[0] if front_ops else None)
        for r, p in sorted(ranks.items()):
            e = p.last_entered
            desc = f"{e.op} #{e.seq}" + (f" at {e.site}" if e.site else "")
            if p.in_flight is not None and e.seq == front:
                v.waiting[r] = e.site or ""
                v.waiting_text[r] = desc + " (entered, not completed)"
            elif e.seq < front:
                v.behind[r] = desc + (" (completed)" if p.in_flight is None else " (entered, not completed)")
        at_front = {r: p.last_entered for r, p in ranks.items() if p.last_entered.seq == front}
        if len({(e.op, tuple(map(tuple, e.shapes)), e.dtype, e.reduce_op, e.root) for e in at_front.values()}) > 1:
            v.mismatch_seq = front
            v.mismatch = {r: f"{e.op} #{e.seq} {e.dtype or ''} {e.shapes}" + (f" at {e.site}" if e.site else "")
                          for r, e in sorted(at_front.items())}
        for r, p in sorted(ranks.items()):
            for m in p.mismatches:
                v.mismatch_seq = v.mismatch_seq if v.mismatch_seq is not None else m.get("seq")
                v.mismatch.setdefault(r, str(m.get("detail") or m)[:300])
        if not v.waiting:
            v.behind.clear()  # nobody waits: ranks at different sequence numbers are just running
        out.append(v)
    return out


def _waits(state: RankState) -> bool:
    """Waiting in communication, an asynchronous backend's waits on the GPU included."""
    return state.waiting or state is RankState.CUDA_SYNC


def _group_texts(by_rank: Mapping[int, str]) -> list[tuple[str, list[int]]]:
    g: dict[str, list[int]] = {}
    for r, t in sorted(by_rank.items()):
        g.setdefault(t, []).append(r)
    return sorted(g.items(), key=lambda kv: (-len(kv[1]), kv[1][0]))


def _has_progress(progress: Any) -> bool:
    return bool(progress) and isinstance(progress, Mapping)


class HangRanksCheck(Check):
    """Every rank of the job: its process state and what its stack says it is doing.

    What it checks:
        For each rank (found by ``commdoctor run --attach``, given with
        ``commdoctor hang --pid``, or read from saved stacks), the process
        state (running, sleeping, stopped, zombie, exited) and the Python
        stack taken with py-spy, classified as: inside a collective (which
        op, through DDP/FSDP when they issue it, and the user's line), in a
        barrier, in rendezvous, in data loading, in a CUDA synchronisation, in
        checkpoint I/O, sleeping or computing. Ranks in the same state at the
        same line are grouped; the summary names the odd ones. Without
        ``--pid``, when several jobs run on the host, each is looked at and
        the one whose ranks wait in communication is diagnosed; HANG004 says
        which, why, and lists the others (commdoctor's own runs and pytest
        runs are never taken for the job).
    Why it matters:
        A hung job's ranks all look alike from outside; their stacks do not.
        Reading them by hand means attaching to every rank with py-spy or gdb.
    Known limits:
        Python frames only unless ``--native`` is given, so a collective
        issued from C++ (DDP's gradient all_reduce during backward) shows as
        computing inside backward. Stacks need ptrace permission
        (kernel.yama.ptrace_scope, CAP_SYS_PTRACE); when it is missing the
        finding says how to allow it. Only ranks on this host are seen.
    """

    name = "hang.ranks"
    stage = Stage.HANG
    title = "Ranks and their stacks"
    modes = frozenset({"hang"})
    timeout_s = 60.0
    rules = (
        Rule("HANG001", "stacks-unavailable", W, "the stack of {ranks_word} {ranks_text} could not be taken: {why}",
             "{hint}", cause="environment_misconfig"),
        Rule("HANG002", "rank-unknown", W, "pid {pid}: its rank is unknown ({why})",
             "Run commdoctor as the job's user or as root so it can read /proc/PID/environ, or give the ranks' pids "
             "in rank order with commdoctor hang --pid", cause="environment_misconfig"),
        Rule("HANG004", "several-jobs", I, "{choice}",
             "To diagnose another of the jobs, name its ranks (or its launcher): commdoctor hang --pid PID..."),
        Rule("HANG003", "no-job-found", W, "no distributed job found {where}",
             "Run commdoctor on the host where the ranks run, as their user or root, or name the ranks with "
             "commdoctor hang --pid PID..."),
    )

    def deadline(self, options: Any) -> float:
        return float(options.extra.get("stack_timeout", 10.0)) * 3 + 30.0

    def run(self, run: CheckRun) -> Iterator[Finding]:
        snap = optional_fact(run, "hang_snapshot")
        if snap is None:
            raise SkipCheck("no stacks: give --pid PID... or --stacks DIR (hooks records and flight-recorder dumps "
                            "are read by hang.verdict)")
        if not snap.ranks:
            where = "on this host" if snap.source == "live" else "in the saved stacks"
            yield self.finding("HANG003", where=where,
                               evidence=[Evidence("probe:procs", n) for n in snap.notes] or
                               [Evidence("probe:procs", "no process with RANK/LOCAL_RANK, no torchrun/mpirun/srun")])
            run.summary("no ranks")
            return
        views = snap.ranks
        # HANG001: grouped by reason, so ten ranks denied for one reason make one finding.
        by_why: dict[str, list[int]] = {}
        for r, v in views.items():
            if not v.dead and v.stack is None and v.stack_why and v.stack_why != "exited":
                by_why.setdefault(v.stack_why, []).append(r)
        for why, ranks in sorted(by_why.items()):
            v0 = views[ranks[0]]
            all_failed = all(views[r].stack is None for r in views if not views[r].dead)
            yield self.finding(
                "HANG001", ranks_word=plural(ranks), ranks_text=ranks_text(ranks), why=why.replace("_", " "),
                hint=v0.stack_hint or "see py-spy's message", ranks=ranks,
                severity=E if all_failed else W,
                cause="environment_misconfig" if why in ("ptrace_scope", "cap_sys_ptrace", "other_user",
                                                          "ptrace_denied", "no_py_spy") else "other",
                evidence=[Evidence(f"py-spy:rank{r}", views[r].stack_error or why, rank=r) for r in ranks[:4]])
        for note in snap.notes:
            if "rank unknown" in note and "permission denied" in note:
                pid = note.split(":", 1)[0].replace("pid", "").strip()
                yield self.finding("HANG002", pid=pid, why="permission denied reading its environment",
                                   evidence=[Evidence("probe:procs", note)])
        groups: dict[tuple[str, str | None, str | None], list[int]] = {}
        for r, v in sorted(views.items()):
            c = v.classification
            key = (v.state.value, c.op if not v.dead else None, c.where if not v.dead else None)
            groups.setdefault(key, []).append(r)
        ordered = sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[1][0]))
        parts = []
        for (state, g_op, g_where), ranks in ordered:
            label = RankState(state).label if not (g_op and RankState(state).waiting) else f"in {g_op}"
            parts.append(f"{ranks_text(ranks)}: {label}" + (f" at {g_where}" if g_where else ""))
        if snap.choice:
            run.data["choice"] = snap.choice
            yield self.finding("HANG004", choice=snap.choice, evidence=[Evidence("probe:procs", snap.choice)])
        run.summary(f"{len(views)} rank{'s' if len(views) != 1 else ''} — " + "; ".join(parts)
                    + (f" (stacks in {snap.elapsed_s:.1f} s)" if snap.elapsed_s else ""))
        for r, v in sorted(views.items()):
            run.detail(f"rank {r} pid {v.pid} [{v.proc_state}]: {v.describe()}")
        run.data["ranks"] = [v.to_dict() for _, v in sorted(views.items())]
        run.data["groups"] = [{"state": k[0], "op": k[1], "where": k[2], "ranks": rs} for k, rs in ordered]
        run.data["notes"] = list(snap.notes)
        if snap.elapsed_s is not None:
            run.data["elapsed_s"] = round(snap.elapsed_s, 3)


def _dead_words(v: Any) -> str:
    if v.proc_state == "missing":
        return "is not running on this host"
    if v.proc_state == "zombie":
        return "has exited (a zombie its parent has not reaped)"
    return "has exited"


def _ev_stack(r: int, v: Any, limit: int = 4) -> list[Evidence]:
    """Evidence for one rank: its lines of code (with their source when readable here), then
    the decisive frames of its stack, innermost first."""
    c = v.classification
    if v.dead:
        return [Evidence(f"proc:rank{r}", v.describe(), rank=r, host=v.host or None)]
    src = f"stack:rank{r}"
    out: list[Evidence] = []
    if c.user_source and c.user_frame is not None:
        out.append(Evidence(src, f"{c.user_frame.where} in {c.user_frame.function}: {c.user_source}", rank=r,
                            host=v.host or None))
    if c.source and c.call_site is not None:
        out.append(Evidence(src, f"{c.call_site.where} in {c.call_site.function}: {c.source}", rank=r,
                            host=v.host or None))
    if not out or v.proc_state == "stopped":
        out.insert(0, Evidence(src, v.describe(), rank=r, host=v.host or None))
    shown = 0
    for f in c.frames:
        if shown >= limit:
            break
        if f == c.frame or f == c.call_site or f == c.user_frame or shown < 2:
            out.append(Evidence(src, f"  {f.function} ({f.where})", rank=r))
            shown += 1
    return out


class HangVerdictCheck(Check):
    """The verdict on a hung job: straggler, mismatched collectives, a dead rank, or a stall below Python.

    What it checks:
        Combines every signal present: the ranks' classified stacks and
        process states (hang.ranks), the hooks' progress records (last
        collective entered and completed per rank), torch flight-recorder
        dumps (gloo and NCCL, pickle and JSON; read by commdoctor itself,
        naming the rank that never entered the collective the others wait
        in) and log lines. Then: a rank that exited or was stopped while the
        others wait (HANG012, HANG014); ranks waiting in different collectives
        or at different lines, or records that disagree at one sequence number
        (HANG011); most ranks waiting in one collective while others are
        elsewhere (HANG010, the straggler, named with its state and line); all
        ranks waiting in the same collective with none elsewhere (HANG013: the
        stall is below Python, in the network or a peer on another host).
    Why it matters:
        A backend timeout names the rank that waited, after 10 to 30 minutes.
        The rank to look at is the one that is not waiting, and its line of code.
    Known limits:
        Sees the ranks on this host (and dumps or records from others); in a
        multi-node job, a straggler on another host makes this host's ranks
        look like HANG013 until stacks from that host are added. Without
        native frames, DDP's gradient all_reduce inside backward shows as
        computing. Flight-recorder entries of point-to-point calls are not
        compared.
    """

    name = "hang.verdict"
    stage = Stage.HANG
    title = "Hang verdict"
    modes = frozenset({"hang"})
    timeout_s = 60.0
    rules = (
        Rule("HANG010", "straggler", E,
             "{odd_word} {odd_text} {odd_state}; {wait_word} {wait_text} {wait_verb} for it in {op}{at}",
             "Find why {odd_word} {odd_text} does not reach {op}: it is {odd_state_short}. If the delay is legitimate "
             "(evaluation, checkpointing or data preparation on some ranks), do it on every rank or raise the "
             "process-group timeout", cause="collective_timeout_straggler",
             steps=("Open {odd_site} and see what it waits on{odd_hint}",
                    "If only some ranks do extra work (rank 0 evaluates or saves), put a barrier after it on every rank, "
                    "or run it on all ranks",
                    "Raising the timeout only helps a slow rank, never a stuck one: init_process_group(timeout=...)")),
        Rule("HANG011", "collective-mismatch", E, "ranks called different collectives: {groups_text}",
             "Make every rank call the same collectives in the same order: look for a rank-dependent branch "
             "around {sites}", cause="collective_mismatch",
             steps=("Compare the calls listed in the evidence: each group of ranks waits for the others in a call they "
                    "will never make",
                    "commdoctor.hooks names such a mismatch within a second, with every rank's line (docs/hooks.md)",
                    "TORCH_DISTRIBUTED_DEBUG=DETAIL also catches op, shape and dtype differences (at a cost per call)"),
             env={"TORCH_DISTRIBUTED_DEBUG": "DETAIL"}),
        Rule("HANG012", "peer-process-died", E,
             "{dead_word} {dead_text} {dead_state}; {wait_word} {wait_text} {wait_verb} for it in {op}{at}",
             "Find why {dead_word} {dead_text} ended (its own log, its exit status, the OOM killer in dmesg); the other "
             "ranks cannot finish {op} without it and will wait until their timeout",
             cause="peer_process_died",
             steps=("Read the last lines {dead_word} {dead_text} wrote (torchrun: its error file; NCCL: its "
                    "NCCL_DEBUG_FILE)",
                    "dmesg -T | grep -i -E 'killed process|out of memory' shows the OOM killer",
                    "Stop the survivors (they will not recover) and restart the job; torchrun --max-restarts can do "
                    "it for you")),
        Rule("HANG013", "stalled-in-collective", E,
             "all {n} ranks{scope} wait in {op}{at}, none is elsewhere: the stall is below Python",
             "Look below the Python level: the network between the ranks, a peer that stopped answering, or a "
             "rank on another host; start with the NCCL logs and the interface and rendezvous checks",
             cause="other",
             steps=("{logs_step}",
                    "Run 'commdoctor run' on every node: its interface and rendezvous stages find unreachable "
                    "peers, wrong interfaces and blocked ports",
                    "{ras_step}",
                    "{remote_step}"),
             env={"NCCL_DEBUG": "INFO", "NCCL_DEBUG_SUBSYS": "INIT,NET"}),
        Rule("HANG014", "rank-stopped", E,
             "{stopped_word} {stopped_text} is stopped (SIGSTOP or a debugger); {wait_word} {wait_text} {wait_verb} for it in {op}{at}",
             "Resume {stopped_word} {stopped_text} (kill -CONT {pids}) or detach the debugger that holds it",
             cause="other"),
        Rule("HANG015", "not-waiting-in-communication", I,
             "no rank waits in a collective: {states_text}",
             "This is not a communication hang: look at what the ranks are doing (the stacks above); if they make no "
             "progress, the line each one is at is where to start"),
        Rule("HANG016", "no-rank-running", W, "no rank of the job is running: {states_text}",
             "The job has ended, or these are not its pids: read its logs (commdoctor logs) for why it ended; "
             "a hang diagnosis needs live ranks, saved stacks (--stacks) or dumps (--fr)"),
        Rule("HANG020", "flight-recorder-unreadable", W, "a flight-recorder dump could not be read: {path}",
             "Give commdoctor the files torch wrote (TORCH_FR_DUMP_TEMP_FILE prefix + rank, or "
             "_dump_fr_trace/_dump_fr_trace_json output) with the rank number at the end of each name"),
    )

    def deadline(self, options: Any) -> float:
        return 30.0

    def run(self, run: CheckRun) -> Iterator[Finding]:
        snap = optional_fact(run, "hang_snapshot")
        progress = optional_fact(run, "hook_progress") or {}
        fr = optional_fact(run, "flight_recorder")
        logs = log_signals(optional_fact(run, "hang_logs"))
        ras = optional_fact(run, "nccl_ras")
        views = dict(snap.ranks) if snap is not None else {}
        seq_views: list[SeqView] = []
        signals: list[str] = []
        if views:
            signals.append(f"stacks of {sum(1 for v in views.values() if v.stack is not None)} rank(s)")
        if fr is not None:
            dumps, errors = fr
            for err in errors:
                path, _, why = err.partition(": ")
                yield self.finding("HANG020", path=path, evidence=[Evidence(path, why)])
            if dumps:
                from commdoctor.loaders.flight_recorder import analyze

                seq_views += seq_views_from_fr(analyze(dumps))
                shared = sum(1 for d in dumps if d.notes and d.notes[0].startswith("entries taken from"))
                signals.append(f"flight-recorder dumps of {len(dumps)} rank(s)" + (
                    f" (entries read in full for {len(dumps) - shared}, one per distinct sequence status; "
                    f"the other {shared} share their class's entries)" if shared else ""))
        if _has_progress(progress):
            seq_views += seq_views_from_records(progress)
            signals.append(f"hooks records of {len(progress)} rank(s)")
        if logs:
            signals.append(f"{len(logs)} log line(s)")
        run.data["signals"] = signals
        run.data["sequence_views"] = [sv.__dict__ for sv in seq_views]
        if not views and not seq_views:
            raise SkipCheck("nothing to diagnose: no stacks, no hooks records, no readable flight-recorder dumps")
        run.summary("signals: " + ", ".join(signals))

        all_ranks = sorted(set(views) | {r for sv in seq_views for r in (*sv.waiting, *sv.behind, *sv.mismatch)})

        # Where each rank is: the live stack or process state first, then sequence sources.
        def state_of(r: int) -> tuple[RankState, str | None, str | None]:
            v = views.get(r)
            if v is not None and (v.dead or v.proc_state == "stopped" or v.stack is not None):
                c = v.classification
                return v.state, c.op, c.where
            for sv in seq_views:
                if r in sv.waiting:
                    return RankState.COLLECTIVE, sv.front_op, sv.waiting[r] or None
            return RankState.UNKNOWN, None, None

        states = {r: state_of(r) for r in all_ranks}
        dead = [r for r in all_ranks if views.get(r) is not None and views[r].dead]
        stopped = [r for r in all_ranks if views.get(r) is not None and views[r].proc_state == "stopped"]
        behind = sorted({r for sv in seq_views for r in sv.behind})
        # Waiting in communication: inside a collective, a barrier or rendezvous; or waiting on the GPU
        # (on NCCL the collective returns at once and the rank waits in synchronize(), .item() or the
        # next collective); or, by the sequence numbers, holding collectives that never completed.
        seq_waiting = {r for sv in seq_views for r in sv.waiting}
        waiting = [r for r in all_ranks if r not in stopped and r not in dead
                   and (_waits(states[r][0]) or (r in seq_waiting and r not in behind))]
        run.data["waiting"], run.data["dead"], run.data["stopped"], run.data["behind"] = waiting, dead, stopped, behind

        def seq_evidence(ranks: Iterable[int], kinds: Sequence[str] = ("waiting", "behind"),
                         limit: int = 8) -> list[Evidence]:
            # A few ranks' lines tell the story; 4,095 alike ones would bury it.
            ranks = list(ranks)
            out = []
            for sv in seq_views:
                shown = [r for r in ranks if r in sv.waiting_text or r in sv.behind]
                if len(shown) > limit:
                    out.append(Evidence(f"{sv.source}", f"{sv.group_text}: {len(shown)} ranks; the first "
                                                         f"{limit} are shown"))
                for r in shown[:limit]:
                    if "waiting" in kinds and r in sv.waiting_text:
                        out.append(Evidence(f"{sv.source}:rank{r}", f"{sv.group_text}: {sv.waiting_text[r]}", rank=r))
                    if "behind" in kinds and r in sv.behind:
                        out.append(Evidence(f"{sv.source}:rank{r}",
                                            f"{sv.group_text}: never entered {sv.front_op} #{sv.front_seq}; "
                                            f"its last call: {sv.behind[r]}", rank=r))
            return out

        def wait_groups(ranks: Iterable[int]) -> list[tuple[tuple[str | None, str | None], list[int]]]:
            g: dict[tuple[str | None, str | None], list[int]] = {}
            for r in ranks:
                _, op, where = states[r]
                g.setdefault((op, where), []).append(r)
            return sorted(g.items(), key=lambda kv: (-len(kv[1]), kv[1][0]))

        def wait_evidence(ranks: Sequence[int], per_group: int = 1) -> list[Evidence]:
            ev: list[Evidence] = []
            for _, rs in wait_groups(ranks):
                for r in rs[:per_group]:
                    if r in views and views[r].stack is not None:
                        ev += _ev_stack(r, views[r], limit=3)
            return ev + seq_evidence(ranks, ("waiting",))

        if views and all(v.dead for v in views.values()) and not seq_views:
            yield self.finding("HANG016", states_text="; ".join(
                f"rank {r} {v.describe()}" for r, v in sorted(views.items())), ranks=sorted(views),
                evidence=[e for r in sorted(views) for e in _ev_stack(r, views[r])][:8])
            return
        seq_mismatch = [sv for sv in seq_views if sv.mismatch]
        if not waiting and not seq_mismatch:
            if not any(sv.waiting for sv in seq_views):
                states_text = "; ".join(
                    f"rank {r} {views[r].describe() if r in views else states[r][0].label}" for r in all_ranks)
                yield self.finding("HANG015", states_text=states_text, ranks=all_ranks,
                                   evidence=[e for r in all_ranks if r in views for e in _ev_stack(r, views[r], 2)][:12])
                return

        main_wait = wait_groups(waiting)
        (w_op, w_where), w_ranks = main_wait[0] if main_wait else ((None, None), [])
        at = f" at {w_where}" if w_where else ""
        op = w_op or "a collective"
        # The sequence numbers know which collective the waiting ranks wait in; their stacks only
        # where their Python is now (on NCCL: a later line that waits on the GPU).
        seq_wait = next((sv for sv in seq_views if sv.waiting and sv.wait_what), None)
        if seq_wait is not None and seq_wait.wait_what:
            op = seq_wait.wait_what
            gpu = [r for r in w_ranks if states[r][0] is RankState.CUDA_SYNC]
            at = f"; their Python waits on the GPU at {w_where}" if gpu and w_where else ""
        headline: str | None = None

        # 1. Dead ranks the others wait for.
        if dead and waiting:
            d_states = sorted({_dead_words(views[r]) for r in dead})
            ev = [e for r in dead for e in _ev_stack(r, views[r])]
            ev += [e for r in dead for e in self._last_known(r, progress, seq_views)]
            ev += wait_evidence(waiting)
            ev += self._log_evidence(logs, dead)
            yield self.finding("HANG012", dead_word=plural(dead), dead_text=ranks_text(dead),
                               dead_state=" / ".join(d_states),
                               wait_word=plural(waiting), wait_verb=verb(waiting), wait_text=ranks_text(waiting),
                               op=op, at=at,
                               ranks=dead, evidence=ev,
                               detail=f"{len(waiting)} rank(s) wait; " + "; ".join(
                                   f"rank {r}: {views[r].describe()}" for r in dead))
            headline = "HANG012"

        # 1b. Members of a recorded group that left no dump while the others dumped and wait: on NCCL every live rank
        # dumps once one signals it (through the store), so such a rank had most likely exited already (returned
        # early or crashed). Seen on an H200: rank 1 of 2 returned after its data ran out; only rank 0's dump exists.
        # Only where the dumps at hand name nobody else: a rank they show behind, or calls that differ, say more than
        # dumps missing from the set given (a subset of a large job's dumps, collected from some hosts).
        no_dump = sorted({r for sv in seq_views for r in sv.no_data} - set(all_ranks))
        if not headline and no_dump and waiting and not behind and not seq_mismatch \
                and not (snap is not None and snap.world_size):
            ev = wait_evidence(waiting) + self._log_evidence(logs, no_dump)
            yield self.finding("HANG012", dead_word=plural(no_dump), dead_text=ranks_text(no_dump),
                               dead_state="left no flight-recorder dump (it had most likely exited)" if len(no_dump) == 1
                               else "left no flight-recorder dumps (they had most likely exited)",
                               wait_word=plural(waiting), wait_verb=verb(waiting), wait_text=ranks_text(waiting),
                               op=op, at=at,
                               ranks=no_dump, evidence=ev,
                               detail=f"The dumps' process-group membership lists rank(s) {ranks_text(no_dump)}, and no "
                                      "dump of theirs is here while the others' are. A rank that returned normally "
                                      "(its data ran out, a stop condition only it met) ran fewer collectives than the "
                                      "others, a mismatch; one that crashed is a dead peer; its exit status and last "
                                      "lines decide. A dump written elsewhere (another host's TORCH_FR_DUMP_TEMP_FILE) "
                                      "looks the same: add it.")
            headline = "HANG012"

        # 2. Stopped ranks.
        if stopped and waiting:
            ev = [e for r in stopped for e in _ev_stack(r, views[r])] + wait_evidence(waiting)
            yield self.finding("HANG014", stopped_word=plural(stopped), stopped_text=ranks_text(stopped),
                               wait_word=plural(waiting), wait_verb=verb(waiting), wait_text=ranks_text(waiting),
                               op=op, at=at,
                               pids=" ".join(str(views[r].pid) for r in stopped), ranks=stopped, evidence=ev,
                               detail="; ".join(f"rank {r}: {views[r].describe()}" for r in stopped),
                               consequence_of=headline)
            headline = headline or "HANG014"

        # 3. Ranks waiting in different collectives (or records/dumps that disagree at one sequence number).
        distinct = [g for g in main_wait if g[0][0] is not None]
        if len(distinct) > 1 or seq_mismatch:
            groups_text = "; ".join(f"{plural(rs)} {ranks_text(rs)} in {gop or '?'}" + (f" at {gw}" if gw else "")
                                    for (gop, gw), rs in main_wait)
            site_set = {gw for (_, gw), _ in main_wait if gw}
            odd: list[int] = []
            detail = ""
            if len(main_wait) > 1 and len(main_wait[-1][1]) < len(main_wait[0][1]):
                (o_op, o_where), odd = main_wait[-1]
                detail = (f"the odd one{'s' if len(odd) > 1 else ''}: {plural(odd)} {ranks_text(odd)} "
                          f"in {o_op}" + (f" at {o_where}" if o_where else "")
                          + f", while {len(main_wait[0][1])} rank(s) wait in {main_wait[0][0][0]}")
            if seq_mismatch:
                # The sequence numbers say what each rank called at the first place they differ; that
                # is the mismatch itself, where the stacks show only where each rank got stuck after it.
                sv = seq_mismatch[0]
                calls = sv.mismatch_calls or _group_texts(sv.mismatch)
                groups_text = f"#{sv.mismatch_seq} is " + ", ".join(
                    f"{t} on {plural(rs)} {ranks_text(rs)}" for t, rs in calls) + f" ({sv.source}, {sv.group_text})"
                if len(calls) > 1 and len(calls[-1][1]) < len(calls[0][1]):
                    odd = calls[-1][1]
                    detail = (f"the odd one{'s' if len(odd) > 1 else ''}: {plural(odd)} {ranks_text(odd)} called "
                              f"{calls[-1][0]} as #{sv.mismatch_seq}, where {plural(calls[0][1])} {ranks_text(calls[0][1])} called "
                              f"{calls[0][0]}")
                    site_set = {t.rsplit(" at ", 1)[1] for t, _ in calls[1:] if " at " in t} or site_set
                called = {t.split(" ", 1)[0] for t, _ in calls}
                if site_set and not any(" at " in t for t, _ in calls) and \
                        not any(gop in called for (gop, _), _ in main_wait):
                    # An asynchronous backend (NCCL): the ranks went past the calls that differ and wait
                    # in a later one, and a recorder dumped without stacks does not say where they were
                    # made. The stacks' lines are then where to start looking back from, not the calls.
                    site_set = {f"the lines before {', '.join(sorted(site_set))} (where the ranks wait now, "
                                f"past #{sv.mismatch_seq})"}
                now = "; ".join(f"{plural(rs)} {ranks_text(rs)} " + (f"in {gop}" if gop else "waiting")
                                + (f" at {gw}" if gw else "") for (gop, gw), rs in main_wait if rs)
                if now and any(r in views for r in waiting):
                    detail += ("; " if detail else "") + f"where their stacks are now: {now}"
                elsewhere_now = [r for r in odd if r in views and r not in waiting]
                if elsewhere_now:
                    detail += "; " + "; ".join(f"rank {r} {views[r].describe()}" for r in elsewhere_now)
            sites = ", ".join(sorted(site_set)) or "the calls in the evidence"
            ev = [e for _, rs in main_wait for r in rs[:1] if r in views and views[r].stack is not None
                  for e in _ev_stack(r, views[r], limit=3)]
            if not seq_mismatch:
                ev += seq_evidence(waiting, ("waiting",))
            for sv in seq_mismatch:
                if len(sv.mismatch) > 8:  # one line per distinct call, the odd one first, not 16 alike ranks
                    ev += [Evidence(f"{sv.source}:rank{rs[0]}", f"{sv.group_text} #{sv.mismatch_seq}: "
                                                               f"{plural(rs)} {ranks_text(rs)}: {t}", rank=rs[0])
                           for t, rs in sorted(_group_texts(sv.mismatch), key=lambda g: (len(g[1]), g[1][0]))[:16]]
                else:
                    ev += [Evidence(f"{sv.source}:rank{r}", f"{sv.group_text} #{sv.mismatch_seq}: {t}", rank=r)
                           for r, t in sv.mismatch.items()]
            yield self.finding("HANG011", groups_text=groups_text, sites=sites, detail=detail,
                               ranks=sorted(odd) if odd else sorted(set(waiting) | {r for sv in seq_mismatch
                                                                                  for r in sv.mismatch}),
                               evidence=ev, consequence_of=headline)
            headline = headline or "HANG011"
            return

        # 4. A straggler: the others wait in one collective, these ranks are elsewhere.
        elsewhere = [r for r in all_ranks if r not in waiting and r not in dead and r not in stopped
                     and (states[r][0] is not RankState.UNKNOWN or r in behind)]
        if elsewhere and waiting:
            groups: dict[tuple[RankState, str | None, str | None], list[int]] = {}
            for r in elsewhere:
                groups.setdefault(states[r], []).append(r)
            for (state, s_op, s_where), rs in sorted(groups.items(), key=lambda kv: kv[1][0]):
                v0 = views.get(rs[0])
                if state is RankState.UNKNOWN:
                    first = f"{seq_wait.front_op} #{seq_wait.front_seq}" if seq_wait is not None else op
                    odd_state = f"never entered {first} (without its stack, where it is now is unknown)"
                    short = "elsewhere (take its stack: commdoctor hang --pid PID on its host)"
                    site = "its last call in the evidence"
                else:
                    c = v0.classification if v0 is not None else None
                    odd_state = ("is " if len(rs) == 1 else "are ") + (c.describe() if c else state.label)
                    short = state.label + (f" ({s_op})" if s_op else "")
                    inner = c.user_frame if c else None
                    site = (inner.path_where if inner else None) or (s_where or "the line in the evidence")
                hint = {
                    RankState.DATA_LOADING: " (a slow or stuck dataset, storage, or a DataLoader worker)",
                    RankState.CHECKPOINT_IO: " (slow storage; saving on one rank while the others go on)",
                    RankState.SLEEPING: " (a sleep or a retry loop)",
                    RankState.CUDA_SYNC: " (a GPU kernel that does not finish, or a collective queued before it)",
                    RankState.COMPUTING: " (work that only this rank does, or an endless loop)",
                }.get(state, "")
                ev = [e for r in rs if r in views for e in _ev_stack(r, views[r], limit=5)]
                ev += seq_evidence(rs, ("behind",))
                ev += wait_evidence(waiting)
                yield self.finding("HANG010", odd_word=plural(rs), odd_text=ranks_text(rs), odd_state=odd_state,
                                   odd_state_short=short, odd_site=site, odd_hint=hint,
                                   wait_word=plural(waiting), wait_verb=verb(waiting), wait_text=ranks_text(waiting),
                                   op=op, at=at,
                                   ranks=rs, evidence=ev, consequence_of=headline)
            return

        if headline or not waiting:
            return
        # 5. Everyone waits in the same place: the cause is below Python.
        unknown = [r for r in all_ranks if states[r][0] is RankState.UNKNOWN and r not in behind]
        world = snap.world_size if snap is not None else None
        observed = len(all_ranks)
        remote = ""
        scope = ""
        if world and world > observed:
            scope = f" on this host ({observed} of {world})"
            remote = (f"The other {world - observed} rank(s) run elsewhere: run 'commdoctor hang' (or commdoctor run "
                      f"--attach) on their hosts; the straggler may be among them")
        elif unknown:
            remote = f"Rank(s) {ranks_text(unknown)} could not be read (HANG001): their state decides between a " \
                     f"straggler and a network stall"
        else:
            remote = "If one rank's host is overloaded or swapping, it answers late: check load and memory there"
        log_files = sorted({str(e.get("source")) for e in logs if e.get("source")})
        # The analyzer's rule rows may still say an old code (LOG030): name the diagnosis as run and logs do.
        codes = sorted({f"{canonical_code(str(e['code']))} ({e.get('cause')})" for e in logs if e.get("code")})
        logs_step = ("Read the NCCL/torch logs for errors and the last lines of each rank: " + ", ".join(log_files[:6])
                     + (f"; the log analyzer found {', '.join(codes[:3])} (commdoctor logs FILES -v)" if codes else "")
                     if log_files else "Rerun with NCCL_DEBUG=INFO and NCCL_DEBUG_FILE=/tmp/nccl.%h.%p.log (commdoctor run -- "
                                       "torchrun ... does it for you) and read the last lines of each rank")
        if ras and ras.get("reachable"):
            ras_step = (f"NCCL RAS answers on {ras.get('addr')}: run 'ncclras -v' or "
                        f"'echo verbose status | nc {ras.get('host')} {ras.get('port')}' for NCCL's own view of "
                        "unresponsive peers")
        else:
            ras_step = ("NCCL RAS (NCCL 2.24+) was not reachable on " + (ras.get("addr") if ras else "localhost:28028")
                        + "; with NCCL jobs, 'ncclras -v' on a node of the job lists unresponsive peers")
        ev = wait_evidence(waiting, per_group=2) + self._log_evidence(logs, waiting)
        if ras and ras.get("reachable") and ras.get("text"):
            ev.append(Evidence(f"nccl-ras:{ras.get('addr')}", str(ras["text"])[:500]))
        yield self.finding("HANG013", n=len(waiting), scope=scope, op=op, at=at, logs_step=logs_step,
                           ras_step=ras_step, remote_step=remote, ranks=waiting, evidence=ev)

    @staticmethod
    def _last_known(r: int, progress: Mapping[int, Any], seq_views: Sequence[SeqView]) -> list[Evidence]:
        out = []
        p = progress.get(r) if progress else None
        if p is not None:
            if p.last_completed is not None:
                c = p.last_completed
                out.append(Evidence(f"hooks:rank{r}", f"last completed: {c.op} #{c.seq}" + (f" at {c.site}" if c.site else ""),
                                    rank=r))
            if p.in_flight is not None:
                e = p.in_flight
                out.append(Evidence(f"hooks:rank{r}", f"entered, never completed: {e.op} #{e.seq}"
                                    + (f" at {e.site}" if e.site else ""), rank=r))
        for sv in seq_views:
            if sv.source == "flight recorder" and r in sv.behind:
                out.append(Evidence(f"flight-recorder:rank{r}", f"last entry: {sv.behind[r]}", rank=r))
        return out

    @staticmethod
    def _log_evidence(logs: Sequence[Mapping[str, Any]], ranks: Sequence[int]) -> list[Evidence]:
        out = []
        want = set(ranks)
        for e in logs:
            r = e.get("rank")
            if r is None or r in want:
                out.append(Evidence(str(e.get("source", "log")), str(e.get("text", ""))[:300], line=e.get("line"),
                                    rank=r))
            if len(out) >= 6:
                break
        return out


HANG_CHECKS: tuple[type[Check], ...] = (HangRanksCheck, HangVerdictCheck)
