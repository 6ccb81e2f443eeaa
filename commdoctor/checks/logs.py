"""Logs stage: diagnose a failed job from its saved output (``commdoctor logs``).

Promise: the checks turn what commdoctor.rules.engine found into findings;
they hold no rule of their own. ``diagnose`` (re-exported here) is a pure
function of the run model built by commdoctor.loaders.logs and returns
candidate causes already in causal order (the likeliest root cause first,
then other independent failures, then consequences). The codes a finding
can carry are declared with their rules in commdoctor.rules.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Iterator

from commdoctor.checks.base import Check, Rule
from commdoctor.core.backends import FALLBACK
from commdoctor.core.errors import SkipCheck
from commdoctor.core.ifvars import LIBRARIES, applies_to, iface_env
from commdoctor.facts import interface_from_log, shm_from_log
from commdoctor.core.safeopen import UNWRAPPED
from commdoctor.core.model import ALIASES, Evidence, Finding, Severity, Stage, canonical_code
from commdoctor.core.context import CheckRun
from commdoctor.rules import CODES, FAMILY_OF, SIGNATURES
from commdoctor.rules.base import NCCL_DEBUG_ENV, Cand, version_tuple
from commdoctor.rules.engine import ALSO_POSSIBLE, diagnose, merge, order

__all__ = ["LOG_CHECKS", "Cand", "LogDiagnosisCheck", "LogInputsCheck", "diagnose", "libraries", "merge", "order"]

E, W, I = Severity.ERROR, Severity.WARNING, Severity.INFO
ALL_IFACE_VARS = frozenset(iface_env(()))
#: Findings about which interface a library uses, and the libraries their remedy always concerns.
IFACE_CODES: dict[str, set[str]] = {
    "LOG013": set(), "LOG020": set(), "LOG021": set(), "LOG022": set(), "LOG024": set(),
    "LOG023": {"openmpi"}, "LOG026": {"openmpi"}, "LOG027": {"ucx"},
}


def _rule(c: Any) -> Rule:
    return Rule(c.code, c.symbol, c.severity, c.title, c.remedy, cause=c.cause, steps=c.steps, env=c.env)


def libraries(m: Any) -> set[str]:
    """Which communication libraries wrote the logs (keys of commdoctor.core.ifvars.LIBRARIES)."""
    seen = {lib for lib in LIBRARIES if m.hit_counts.get(f"lib_{lib}")}
    if m.versions or m.comms:
        seen.add("nccl")
    if any(m.hit_counts.get(k) for k in ("mpi_btl_tcp", "mpi_tcp_peer", "mpi_if_setting", "mpirun_signal", "mpirun_exit")):
        seen.add("openmpi")
    if any(m.hit_counts.get(k) for k in ("ucx_no_devices", "ucx_unreachable")):
        seen.add("ucx")
    if any(m.hit_counts.get(k) for k in ("hydra_connect", "mpich_bad_termination")):
        seen.add("mpich")
    return seen



def _log_model(run: CheckRun) -> Any:
    try:
        return run.fact("log_model")
    except KeyError:
        raise SkipCheck("no log files were given (commdoctor logs FILE|DIR|-)") from None


class LogInputsCheck(Check):
    """What was read: files, lines, and what had to be skipped.

    What it checks:
        Reads every input once (plain, gzip, bzip2 or xz; a directory is read
        recursively, '-' is stdin), finds the lines worth parsing with a
        multi-keyword search, and counts what it could not use: binary junk,
        invalid UTF-8, over-long lines cut at 16 KiB, archives that end early.
    Why it matters:
        A diagnosis is only as good as what was read: a truncated archive or a
        log without NCCL_DEBUG=INFO output hides the lines that name a cause.
    Known limits:
        Lines are only decoded when they contain a known keyword, so counts of
        junk cover those lines (NUL bytes are counted everywhere).
    """

    name = "logs.inputs"
    stage = Stage.LOGS
    title = "Log files read"
    modes = frozenset({"logs"})
    timeout_s = 3600.0
    rules = (
        Rule("LOG001", "log-input-unreadable", W, "could not read all of {path}: {error}",
             "Check that the file is complete (a copy cut short, a truncated .gz) and readable, then run again"),
        Rule("LOG002", "log-nothing-recognised", I, "no NCCL, torch or launcher output found in {n} input(s)",
             "Capture the job's output with NCCL_DEBUG=INFO (and TORCH_DISTRIBUTED_DEBUG=DETAIL) so failures leave lines to read",
             env=NCCL_DEBUG_ENV),
        Rule("LOG003", "log-junk-skipped", I, "{n} line(s) could not be read as text and were skipped or repaired",
             "Nothing to do; binary junk, bad encodings and over-long lines are skipped and counted"),
    )

    def deadline(self, options: Any) -> float:
        return float(options.extra.get("deadline_s", self.timeout_s))

    def run(self, run: CheckRun) -> Iterator[Finding]:
        m = _log_model(run)
        total = sum(s.bytes for s in m.inputs)
        run.summary(f"{len(m.inputs)} input(s), {total / 1e6:.1f} MB, {m.lines_seen} lines; "
                    f"{sum(s.candidates for s in m.inputs)} parsed (search: {m.engine})")
        run.data["inputs"] = [s.to_dict() for s in m.inputs]
        run.data["engine"] = m.engine
        if m.notes:  # how the reading went when not as planned (a stuck worker process; its files read here)
            run.data["notes"] = list(m.notes)
            for note in m.notes:
                run.detail(note)
        for s in m.inputs:
            run.detail(f"{s.path}: {s.bytes} bytes, {s.lines} lines, {s.candidates} parsed"
                       + (f", {s.compression}" if s.compression else "")
                       + (f", {UNWRAPPED[s.unwrapped]}" if s.unwrapped else ""))
            if s.error:
                yield self.finding("LOG001", path=s.path, error=s.error,
                                   evidence=[Evidence(s.path, s.error)])
        junk = sum(s.skipped_binary + s.bad_encoding + s.overlong for s in m.inputs)
        if junk:
            yield self.finding("LOG003", n=junk, evidence=[Evidence(s.path, f"{s.skipped_binary} binary, {s.bad_encoding} "
                                                                             f"mis-encoded, {s.overlong} over-long lines; {s.nul_bytes} NUL bytes")
                                                           for s in m.inputs if s.skipped_binary + s.bad_encoding + s.overlong][:5])
        if not any(s.candidates for s in m.inputs) and not m.transports:
            yield self.finding("LOG002", n=len(m.inputs))


class LogDiagnosisCheck(Check):
    """Diagnose the failure in saved logs: the root cause, the rank and host where it started, and the fix.

    What it checks:
        Every line that matches a known failure signature of NCCL (2.0 to
        current), torch/c10d, gloo, the elastic agent, Open MPI, MPICH, UCX,
        Horovod, JAX/XLA's coordination service, TensorFlow, PaddlePaddle, oneCCL,
        the training frameworks' and LLM servers' launch checks, or
        Kubernetes' events, plus the model of the run
        built from NCCL_DEBUG=INFO output (versions, interfaces, transports,
        communicators, environment overrides, watchdog records, where each
        input's NCCL output stops). Findings come
        in causal order: the most specific failure first (by kind, then by
        time), other independent failures next, then other known causes of the
        same signature with what tells them apart, and last the consequences
        ("Connection closed by remote peer", broken pipes, watchdog timeouts
        on the ranks that waited), each naming the finding it follows from. In
        a watchdog timeout, the rank with the lowest SeqNum (or fewest
        enqueued collectives), or the rank that never logged one, is named as
        the straggler. The result's data holds a per-rank summary (rank, host,
        GPU, busId, interface, transports, NCCL version, last state, first
        error).
    Why it matters:
        In a job of many ranks, most of the errors are echoes: the rank that
        ran out of memory logs one line, while every other rank logs closed
        connections and timeouts. Reading them in causal order is what turns
        gigabytes of output into one fix.
    Known limits:
        Order across files without timestamps is the order the files were
        given (directories are read sorted). Signatures shared by several
        causes are reported with every known cause, the likeliest first; the
        logs alone cannot always decide (a closed connection from a killed
        peer and from a failing link look the same).
    """

    name = "logs.diagnose"
    stage = Stage.LOGS
    title = "Diagnosis from the logs"
    modes = frozenset({"logs"})
    requires = ()
    timeout_s = 3600.0
    # A rule row that still says LOG030 or LOG021 proves a fact another check judges (ENV030, NET001):
    # the finding is that check's, so its code is not declared here, only borrowed.
    rules = tuple(_rule(c) for c in sorted((*CODES, ALSO_POSSIBLE), key=lambda c: c.code) if c.code not in ALIASES)
    borrows = tuple(sorted(set(ALIASES.values())))

    def deadline(self, options: Any) -> float:
        return float(options.extra.get("deadline_s", self.timeout_s))

    def run(self, run: CheckRun) -> Iterator[Finding]:
        m = _log_model(run)
        found = diagnose(m)
        libs = libraries(m)
        run.data["libraries"] = sorted(libs)
        summary = self._summary(run, m)
        # What the job did not fail of (it completed, recovered, or connected over the interface at risk): notes,
        # never a verdict, that name no cause; the rest is diagnosed as before.
        notes = [c for c in found if c.note]
        cands = [c for c in found if not c.note]
        run.summary(summary + ("" if cands else "; no failure found")
                    + (f"; {len(notes)} note(s) on what the job did not fail of" if notes else ""))
        if notes and not cands:
            run.data["outcome"] = {"failed": False, "why": notes[0].note}
        if not cands:
            yield from self._notes(notes, libs, m)
            return
        primary = cands[0]
        first_rank = sorted(primary.ranks)[0] if primary.ranks else None
        first_host = sorted(primary.hosts)[0] if primary.hosts else None
        where = "".join([f" on rank {first_rank}" if first_rank is not None else "", f" ({first_host})" if first_host else ""])
        at = primary.evidence[0] if primary.evidence else None
        run.data["verdict"] = {"code": canonical_code(primary.code), "cause": primary.cause, "rank": first_rank, "host": first_host,
                               "at": f"{at.source}:{at.line}" if at else None}
        roots = [c for c in cands if not c.consequence]
        cons = [c for c in cands if c.consequence]
        for i, c in enumerate(roots):
            sev = W if c.weak else E
            yield self._emit(c, sev, None, libs, m)
            if i == 0:
                shown = {c.cause}
                for alt, tell in c.alts:
                    if alt in shown or len(shown) > 3:
                        continue
                    shown.add(alt)
                    yield self.finding("LOG090", alt=alt.replace("_", " "), tell=tell, cause=alt, severity=W,
                                       evidence=c.evidence[:1], detail=f"An alternative to {canonical_code(c.code)} ({c.cause}).")
        head = canonical_code(primary.code)
        for c in cons:
            c.detail = (c.detail + " " if c.detail else "") + f"Follows from {head}{f' ({primary.cause})' if primary.cause else ''}{where}."
            yield self._emit(c, E, head, libs, m)
        yield from self._notes(notes, libs, m)

    def _notes(self, notes: list[Cand], libs: set[str], m: Any) -> Iterator[Finding]:
        """What the job did not fail of, as informational findings that name no cause (each says why)."""
        for c in notes:
            c.detail = (c.detail + " " if c.detail else "") + c.note
            yield replace(self._emit(c, I, None, libs, m), cause=None)

    def _emit(self, c: Cand, sev: Severity, after: str | None, libs: set[str], m: Any) -> Finding:
        if c.code in ALIASES:
            return self._judged_elsewhere(c, sev, after, libs, m)
        rule = self.rule(c.code)
        params = dict(c.params)
        if "backend" in params and "fallback" not in params:
            params["fallback"] = FALLBACK.get(str(params["backend"]), FALLBACK["gloo"])
        for k in ("what", "how", "who", "op", "timeout", "endpoint", "joined", "world", "addr", "host", "addrs",
                  "iface", "port", "nets", "var", "values", "versions", "late", "a", "b", "bus", "backend", "fallback"):
            params.setdefault(k, "?")
        env, detail = None, c.detail
        if c.cause == "wrong_interface" or c.code in IFACE_CODES:
            # Name the setting of the library that carries this job (all of them when the logs do not say).
            libs = libs | IFACE_CODES.get(c.code, set())
            env = {**{k: v for k, v in rule.env.items() if k not in ALL_IFACE_VARS}, **iface_env(libs)}
            detail = (detail + " " if detail else "") + f"Interface settings by library: {applies_to(libs)}."
        return self.finding(c.code, evidence=c.evidence[:6], ranks=sorted(c.ranks), hosts=sorted(c.hosts),
                            cause=c.cause if c.cause != rule.cause else None, severity=sev if sev != rule.severity else None,
                            detail=detail, consequence_of=after, env=env, **params)

    def _judged_elsewhere(self, c: Cand, sev: Severity, after: str | None, libs: set[str], m: Any) -> Finding:
        """The fact the lines prove, judged by the check that owns the diagnosis (one code for run and logs)."""
        from commdoctor.checks.env import ShmCheck
        from commdoctor.checks.net import InterfacesCheck

        ranks = tuple(sorted(c.ranks))
        evidence = c.evidence[:6]
        if canonical_code(c.code) == "ENV030":
            fact = shm_from_log(evidence)
            f = next(ShmCheck().judge(fact, ranks=ranks, detail=c.detail, consequence_of=after))
        else:
            env_seen = {k: sorted(v) for k, v in m.env.items()} if isinstance(getattr(m, "env", None), dict) else {}
            iface = interface_from_log(evidence, env_seen, hint=str(c.params.get("iface") or "") or None)
            # Name the setting of the library that carries this job: the one whose words the lines are.
            libs = libs | IFACE_CODES.get(c.code, set()) | ({iface.library} if iface.library in LIBRARIES else set())
            env = dict(iface_env(libs))
            detail = (c.detail + " " if c.detail else "") + f"Interface settings by library: {applies_to(libs)}."
            f = next(InterfacesCheck().judge(iface, severity=E, detail=detail, ranks=ranks, consequence_of=after, env=env))
        # Severity as the diagnosis weighed it (a weak root is a warning); hosts as every line gave them.
        return replace(f, severity=sev, hosts=tuple(sorted(c.hosts)) or f.hosts, cause=c.cause or f.cause)

    def _summary(self, run: CheckRun, m: Any) -> str:
        rows = m.summary_rows()
        run.data["ranks"] = rows[:4096]
        run.data["nccl_versions"] = {v: sorted(m.version_hosts.get(v, set())) for v in m.versions}
        run.data["torch_versions"] = sorted(m.torch_versions)
        run.data["hosts"] = {h: {"nccl_versions": sorted(hi.versions), "bootstrap": list(hi.bootstrap)[:8],
                                 "net_socket": list(hi.net_socket)[:8], "net_ib": list(hi.net_ib)[:8], "oob": sorted(hi.oob)[:4],
                                 "network": sorted(hi.network), "env": {k: v[0] for k, v in hi.env.items()},
                                 "driver": hi.driver, "pids": len(hi.pids)}
                             for h, hi in list(m.hosts.items())[:512]}
        run.data["communicators"] = [c.to_dict() for c in m.comms[:512]]
        run.data["transports"] = dict(m.transport_kinds)
        run.data["plugins"] = sorted(m.plugins)
        # Every rule row that matched a line, with what it means: how the verdict was reached, for --json readers.
        run.data["rules_matched"] = [
            {"rule": s.id, "family": FAMILY_OF.get(s.id), "role": s.role, "cause": s.cause, "meaning": s.meaning,
             "lines": m.hit_counts.get(s.id, 0)}
            for s in SIGNATURES if m.hit_counts.get(s.id)][:256]
        if m.flight_files:
            run.data["flight_recorder"] = {"files": len(m.flight_files), "errors": m.flight_errors[:8],
                                           "groups": [g.to_dict() for g in m.flight[:16] if hasattr(g, "to_dict")]}
        run.data["env_overrides"] = {k: sorted(v) for k, v in m.env.items()}
        run.data["watchdog"] = [{"rank": w.rank, "pg": w.pg, "seq": w.seq, "op": w.op, "numel_in": w.numel_in,
                                 "numel_out": w.numel_out, "timeout_ms": w.timeout_ms, "ran_ms": w.ran_ms,
                                 "timed_out": w.timed_out, "at": f"{w.ev.source}:{w.ev.line}"} for w in m.watchdog[:256]]
        firsts = sorted((r for r in m.ranks.values() if r.first_error is not None), key=lambda r: r.first_error_seq or 0)
        run.data["first_errors"] = [{"rank": r.rank, "host": r.host, "pid": r.pid, "at": f"{r.first_error.source}:{r.first_error.line}",
                                     "text": r.first_error.text[:300]} for r in firsts[:256] if r.first_error]
        hosts = len({r["host"] for r in rows if r["host"]} | set(m.hosts) - {"?"})
        versions = ", ".join(sorted(m.versions, key=version_tuple)) or "unknown"
        for r in rows[:64]:
            bits = [f"rank {r['rank']}" if r["rank"] is not None else "rank ?", r["host"] or "",
                    f"pid {r['pid']}" if r["pid"] else "", f"GPU {r['gpu']}" if r["gpu"] is not None else "",
                    f"busId {r['busId']}" if r["busId"] else "", f"via {r['interface']}" if r["interface"] else "",
                    "transports " + ",".join(r["transports"]) if r["transports"] else "",
                    f"NCCL {r['nccl_version']}" if r["nccl_version"] else "", r["last_state"] or "",
                    f"first error at {r['first_error_at']}" if r["first_error_at"] else ""]
            run.detail("; ".join(b for b in bits if b))
        return (f"{len(rows)} process(es) on {hosts} host(s); NCCL {versions}; "
                f"{len(m.comms)} communicator(s); transports: {', '.join(sorted(m.transport_kinds)) or 'none seen'}")


LOG_CHECKS: tuple[type[Check], ...] = (LogInputsCheck, LogDiagnosisCheck)
