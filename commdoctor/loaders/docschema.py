"""Typed shapes of the files commdoctor reads back: a saved report, item by item.

Promise: ``report_from_doc(doc)`` turns a parsed ``--json`` report into a
``Report`` whatever the document holds. Each result, finding, evidence line and
remedy is validated against a frozen msgspec type (``strict=False`` only for
what JSON cannot spell, such as an int written as a float); an item that does
not fit is dropped and named in the returned problems ("results[3].findings[0]:
Expected `str`, got `int` - at `$.title`"), and every other item is kept. The
report's own header must fit, or the whole document is refused with that
message. Imported only by the readers that need it (msgspec is a compiled
wheel; the hooks never import this).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Optional, Union

import msgspec

from commdoctor.core.model import CAUSES, CheckResult, Evidence, Finding, Remedy, Report

# Numbers a reader turns into per-rank work are bounded like the hooks' records (records.MAX_WORLD):
# a claimed world or rank of 2**62 is damage, and would otherwise cost memory per claimed rank.
_MAX_WORLD = 1 << 22
Rank = Annotated[int, msgspec.Meta(ge=0, lt=_MAX_WORLD)]
World = Annotated[int, msgspec.Meta(gt=0, le=_MAX_WORLD)]
Small = Annotated[int, msgspec.Meta(ge=-(1 << 31), lt=1 << 31)]  # pids, thread ids, line numbers

SeverityName = Literal["info", "warning", "error"]
StatusName = Literal["passed", "failed", "skipped", "crashed", "timed_out"]
StageName = Literal["environment", "interfaces", "rendezvous", "pg_init", "collectives", "logs", "hang"]


class EvidenceDoc(msgspec.Struct, frozen=True, forbid_unknown_fields=False):
    source: str
    text: str
    line: Optional[Small] = None
    rank: Optional[Rank] = None
    host: Optional[str] = None


class RemedyDoc(msgspec.Struct, frozen=True):
    summary: str
    steps: tuple[str, ...] = ()
    env: dict[str, str] = {}
    docs: Optional[str] = None


class FindingDoc(msgspec.Struct, frozen=True):
    code: str
    symbol: str
    severity: SeverityName
    title: str
    cause: Optional[str] = None
    detail: str = ""
    ranks: tuple[Rank, ...] = ()
    hosts: tuple[str, ...] = ()
    evidence: tuple[Any, ...] = ()  # each item validated alone (EvidenceDoc), so one bad line drops only itself
    remedy: Optional[Any] = None  # RemedyDoc, validated alone
    consequence_of: Optional[str] = None


class ResultDoc(msgspec.Struct, frozen=True):
    check: str
    stage: StageName
    status: StatusName
    title: str = ""
    findings: tuple[Any, ...] = ()  # FindingDoc each
    summary: str = ""
    details: tuple[str, ...] = ()
    reason: str = ""
    error: str = ""
    duration_s: float = 0.0
    data: dict[str, Any] = {}


class ReportHead(msgspec.Struct, frozen=True):
    # Required as in commdoctor/schema/report.schema.json: without them it is not a report of ours.
    schema_version: str
    tool_version: str
    mode: str
    created: str
    host: str
    results: tuple[Any, ...]  # ResultDoc each
    argv: tuple[str, ...] = ()
    interrupted: bool = False
    environment: dict[str, Any] = {}
    job: Optional[dict[str, Any]] = None
    nodes: tuple[Any, ...] = ()


def _fit(obj: Any, typ: type[Any], where: str, problems: list[str]) -> Any:
    try:
        return msgspec.convert(obj, typ, strict=False)
    except msgspec.ValidationError as e:
        problems.append(f"{where}: {e}")
        return None


def _evidence(items: tuple[Any, ...], where: str, problems: list[str]) -> tuple[Evidence, ...]:
    out = []
    for i, e in enumerate(items):
        ok = _fit(e, EvidenceDoc, f"{where}.evidence[{i}]", problems)
        if ok is not None:
            out.append(Evidence(source=ok.source, text=ok.text, line=ok.line, rank=ok.rank, host=ok.host))
    return tuple(out)


def _finding(obj: Any, where: str, problems: list[str]) -> Finding | None:
    f = _fit(obj, FindingDoc, where, problems)
    if f is None:
        return None
    remedy = None
    if f.remedy is not None:
        r = _fit(f.remedy, RemedyDoc, f"{where}.remedy", problems)
        if r is not None:
            remedy = Remedy(summary=r.summary, steps=r.steps, env=dict(r.env), docs=r.docs)
    cause = f.cause
    if cause is not None and cause not in CAUSES:
        problems.append(f"{where}: unknown cause {cause!r} left out")
        cause = None
    return Finding(code=f.code, symbol=f.symbol, severity=_sev(f.severity), title=f.title, cause=cause,
                   detail=f.detail, ranks=f.ranks, hosts=f.hosts, evidence=_evidence(f.evidence, where, problems),
                   remedy=remedy, consequence_of=f.consequence_of)


def _sev(name: str) -> Any:
    from commdoctor.core.model import Severity

    return Severity(name)


def _result(obj: Any, where: str, problems: list[str]) -> CheckResult | None:
    from commdoctor.core.model import Stage, Status

    r = _fit(obj, ResultDoc, where, problems)
    if r is None:
        return None
    findings = [f for i, x in enumerate(r.findings) if (f := _finding(x, f"{where}.findings[{i}]", problems)) is not None]
    dur = r.duration_s if r.duration_s == r.duration_s and abs(r.duration_s) < 1e12 else 0.0
    return CheckResult(check=r.check, stage=Stage(r.stage), title=r.title, status=Status(r.status), findings=findings,
                       summary=r.summary, details=list(r.details), reason=r.reason, error=r.error, duration_s=dur,
                       data=dict(r.data))


def report_from_doc(doc: Any) -> tuple[Report, list[str]]:
    """A ``Report`` from a parsed document, and the items left out (see the module docstring).

    Raises ``ValueError`` when the document is not a report at all (not an object, no
    readable ``schema_version``, a schema of another major version).
    """
    from commdoctor.core.model import SCHEMA_VERSION

    if not isinstance(doc, dict):
        raise ValueError(f"a JSON {type(doc).__name__}, not a report object")
    problems: list[str] = []
    if "schema_version" not in doc or "results" not in doc:
        raise ValueError("JSON, but not a commdoctor report (no 'schema_version' and 'results')")
    version = doc.get("schema_version")
    if not isinstance(version, str) or version.split(".")[0] != SCHEMA_VERSION.split(".")[0]:
        raise ValueError(f"report schema {version!r} is not readable by this version "
                         f"(reads {SCHEMA_VERSION.split('.')[0]}.x)")
    try:
        head = msgspec.convert(doc, ReportHead, strict=False)
    except msgspec.ValidationError as e:
        raise ValueError(f"not a commdoctor report: a damaged or foreign report ({e})") from None
    results = [r for i, x in enumerate(head.results) if (r := _result(x, f"results[{i}]", problems)) is not None]
    if head.results and not results:
        raise ValueError(f"a damaged or foreign report: not one result reads ({problems[0]})")
    return Report(tool_version=head.tool_version, mode=head.mode, created=head.created, host=head.host,
                  argv=list(head.argv), environment=dict(head.environment), results=results,
                  schema_version=head.schema_version, interrupted=head.interrupted,
                  job=dict(head.job) if head.job is not None else None,
                  nodes=[dict(n) for n in head.nodes if isinstance(n, dict)]), problems


# -- saved stacks: py-spy dump --json, and commdoctor's own snapshot ---------------------------------


class PySpyFrameDoc(msgspec.Struct, frozen=True):
    name: str = "?"
    filename: str = "?"
    line: Optional[Small] = None
    short_filename: Optional[str] = None
    module: Optional[str] = None
    locals: Any = None


class PySpyThreadDoc(msgspec.Struct, frozen=True):
    pid: Optional[Small] = None
    thread_id: Union[int, str, None] = None
    thread_name: Optional[str] = None
    os_thread_id: Optional[Small] = None
    active: Optional[bool] = None
    owns_gil: Optional[bool] = None
    frames: tuple[Any, ...] = ()


class FrameDoc(msgspec.Struct, frozen=True):
    function: str = "?"
    file: str = "?"
    line: Optional[Small] = None
    short_file: str = ""
    native: bool = False


class ThreadDoc(msgspec.Struct, frozen=True):
    name: str = ""
    thread_id: Union[str, int, None] = None
    os_thread_id: Optional[Small] = None
    active: Optional[bool] = None
    owns_gil: Optional[bool] = None
    frames: tuple[Any, ...] = ()


class ProcessStackDoc(msgspec.Struct, frozen=True):
    pid: Optional[Small] = None
    threads: tuple[Any, ...] = ()
    command: Optional[str] = None


class RankDoc(msgspec.Struct, frozen=True):
    rank: Rank
    pid: Optional[Small] = None
    host: str = ""
    proc_state: str = "unknown"
    stack: Optional[Any] = None
    stack_error: Optional[str] = None
    stack_why: Optional[str] = None
    stack_hint: Optional[str] = None
    cpu_s: Optional[float] = None
    command: Optional[str] = None
    local_rank: Optional[Rank] = None
    # The saved classification: read defensively by snapshot._saved_sources (its quoted source lines let a
    # snapshot taken elsewhere classify alike), so it stays untyped here.
    classification: Optional[Any] = None


class SnapshotDoc(msgspec.Struct, frozen=True):
    ranks: tuple[Any, ...] = ()
    source: str = "saved"
    world_size: Optional[World] = None
    host: str = ""
    taken_at: Optional[float] = None
    elapsed_s: Optional[float] = None
    notes: tuple[str, ...] = ()
    job: Optional[dict[str, Any]] = None


def _items(items: tuple[Any, ...], typ: type[Any], where: str, problems: list[str]) -> list[Any]:
    out = []
    for i, x in enumerate(items):
        ok = _fit(x, typ, f"{where}[{i}]", problems)
        if ok is not None:
            out.append(ok)
    return out


def _threads(items: tuple[Any, ...], where: str, problems: list[str]) -> list[dict[str, Any]]:
    out = []
    for t in _items(items, ThreadDoc, where, problems):
        frames = _items(t.frames, FrameDoc, f"{where}.frames", problems)
        out.append(dict(msgspec.to_builtins(t), frames=[msgspec.to_builtins(f) for f in frames]))
    return out


def clean_stacks(doc: Any) -> tuple[Any, list[str]]:
    """A saved stack document with every item typed: py-spy's thread list, or commdoctor's snapshot.

    Returns the same shape as plain data (for the existing readers) with each thread,
    frame or rank that does not fit left out and named. ``ValueError`` when the
    document is neither shape.
    """
    problems: list[str] = []
    if isinstance(doc, list) or (isinstance(doc, dict) and "frames" in doc):
        threads = []
        for i, t in enumerate(doc if isinstance(doc, list) else [doc]):
            th = _fit(t, PySpyThreadDoc, f"threads[{i}]", problems)
            if th is None:
                continue
            frames = _items(th.frames, PySpyFrameDoc, f"threads[{i}].frames", problems)
            threads.append(dict(msgspec.to_builtins(th), frames=[msgspec.to_builtins(f) for f in frames]))
        return threads, problems
    if isinstance(doc, dict) and "threads" in doc:
        ps = _fit(doc, ProcessStackDoc, "stack", problems)
        if ps is None:
            raise ValueError(problems[0])
        return dict(msgspec.to_builtins(ps), threads=_threads(ps.threads, "threads", problems)), problems
    if isinstance(doc, dict) and "ranks" in doc:
        snap = _fit(doc, SnapshotDoc, "snapshot", problems)
        if snap is None:
            raise ValueError(problems[0])
        ranks = []
        for i, r in enumerate(_items(snap.ranks, RankDoc, "ranks", problems)):
            rd = msgspec.to_builtins(r)
            if r.stack is not None:
                ps = _fit(r.stack, ProcessStackDoc, f"ranks[{i}].stack", problems)
                rd["stack"] = None if ps is None else dict(
                    msgspec.to_builtins(ps), threads=_threads(ps.threads, f"ranks[{i}].stack.threads", problems))
            ranks.append(rd)
        return dict(msgspec.to_builtins(snap), ranks=ranks), problems
    raise ValueError("neither py-spy's thread list nor a commdoctor snapshot")


def load_report(path: str) -> tuple[Any, list[str]]:
    """A saved ``--json`` report as a ``Report``, and the items left out or repaired, by name.

    Raises ``OSError`` (cannot be read) or ``ValueError`` (not a report). One bad
    result, finding or evidence line is left out and named; the rest is kept
    (this module's types).
    """
    from commdoctor.core.safeopen import parse_json, read_limited

    doc, notes = parse_json(read_limited(path))
    report, problems = report_from_doc(doc)
    return report, notes + problems
