"""The data model every part of commdoctor speaks: findings, check results, reports.

Promise: this module imports only the standard library, so the checks, the
pipeline, the hooks and the offline loaders can all use it without pulling in
rich, textual or torch. Every type round-trips through plain JSON
(``to_dict`` / ``from_dict``) exactly, so a report written by one process can
be read back by another, or months later by ``commdoctor view``.
"""

from __future__ import annotations

import enum
from dataclasses import asdict, dataclass, field, fields
from typing import Any, Mapping

#: Version of the JSON document written by ``--json`` (docs/json-schema.md).
#: Bump the major number when a field changes meaning or disappears.
#: 1.2: findings carry ``aliases`` (the old codes of the same diagnosis).
SCHEMA_VERSION = "1.2"

#: Old codes that now name the same diagnosis as another code: one check judges one kind of fact
#: whether a live probe or a log produced it, so the log-only codes became aliases of the live ones.
#: An alias is never reused; ``--select`` / ``--ignore`` and ``commdoctor explain`` still accept it.
ALIASES: Mapping[str, str] = {
    "LOG030": "ENV030",  # /dev/shm too small, full or not writable
    "LOG021": "NET001",  # the interface a setting names is not there
}


def canonical_code(code: str) -> str:
    """The code that now names the diagnosis ``code`` named (itself when it is no alias)."""
    code = code.upper()
    return ALIASES.get(code, code)


def aliases_of(code: str) -> tuple[str, ...]:
    """The old codes that name the same diagnosis as ``code``, sorted."""
    return tuple(sorted(a for a, c in ALIASES.items() if c == code.upper()))

#: Root-cause vocabulary, shared with ../shared/corpus/README.md so that results
#: can be compared across tools. A finding's ``cause`` is one of these or None
#: (for purely informational findings).
CAUSES: frozenset[str] = frozenset(
    {
        "wrong_interface",
        "firewall_or_port_blocked",
        "port_conflict",
        "rendezvous_unreachable",
        "hostname_resolution",
        "shm_too_small",
        "ib_misconfig",
        "rlimit_memlock",
        "p2p_acs_iommu",
        "p2p_driver_bug",
        "fabric_manager_nvls",
        "cuda_oom",
        "driver_cuda_mismatch",
        "version_mismatch",
        "duplicate_gpu",
        "collective_mismatch",
        "collective_timeout_straggler",
        "peer_process_died",
        "launcher_misconfig",
        "nccl_internal_bug",
        "hardware_fault",
        "other",
        # Causes that are not failures of the corpus kind, but still explain
        # what a user should change: the live checks' advice (a backend this
        # build lacks, a setting spelt wrong). A log's verdict on a failed job
        # uses the corpus's labels only (tests/logs/test_rule_rows.py).
        "performance_setting",
        "environment_misconfig",
        "backend_unavailable",
    }
)


class Severity(str, enum.Enum):
    INFO = "info"
    WARNING = "warning"
    ERROR = "error"

    @property
    def rank(self) -> int:
        return _SEVERITY_RANK[self]


_SEVERITY_RANK = {Severity.INFO: 0, Severity.WARNING: 1, Severity.ERROR: 2}


class Status(str, enum.Enum):
    """How a check ended. Orthogonal to the severity of what it found."""

    PASSED = "passed"
    FAILED = "failed"
    SKIPPED = "skipped"
    CRASHED = "crashed"
    TIMED_OUT = "timed_out"


class Stage(str, enum.Enum):
    """Stages in causal order: an earlier stage's failure explains a later one's."""

    ENVIRONMENT = "environment"
    INTERFACES = "interfaces"
    RENDEZVOUS = "rendezvous"
    PG_INIT = "pg_init"
    COLLECTIVES = "collectives"
    LOGS = "logs"
    HANG = "hang"

    @property
    def order(self) -> int:
        return _STAGE_ORDER[self]


_STAGE_ORDER = {s: i for i, s in enumerate(Stage)}


@dataclass(frozen=True)
class Evidence:
    """One piece of verbatim evidence: where it came from and what it said."""

    source: str  # a file path, "env", "probe:<name>", "stack:rank3", ...
    text: str  # verbatim, never paraphrased
    line: int | None = None  # 1-based line number in ``source`` when it is a file
    rank: int | None = None
    host: str | None = None


@dataclass(frozen=True)
class Remedy:
    """What to change. ``summary`` is one imperative line; the rest is optional."""

    summary: str
    steps: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)  # settings to try
    docs: str | None = None  # a link or a docs/ path

    def to_dict(self) -> dict[str, Any]:
        return {"summary": self.summary, "steps": list(self.steps), "env": dict(self.env), "docs": self.docs}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Remedy:
        return cls(
            summary=d["summary"],
            steps=tuple(d.get("steps") or ()),
            env=dict(d.get("env") or {}),
            docs=d.get("docs"),
        )


@dataclass(frozen=True)
class Finding:
    """A diagnosis that stands on its own: code, cause, evidence and remedy together."""

    code: str  # area prefix + 3 digits, e.g. "ENV010"; never reused
    symbol: str  # kebab-case name, e.g. "shm-too-small"
    severity: Severity
    title: str
    cause: str | None = None  # from CAUSES
    detail: str = ""
    ranks: tuple[int, ...] = ()
    hosts: tuple[str, ...] = ()
    evidence: tuple[Evidence, ...] = ()
    remedy: Remedy | None = None
    consequence_of: str | None = None  # code of the finding this one follows from
    aliases: tuple[str, ...] = ()  # old codes of the same diagnosis (ALIASES), matched by --select / --ignore

    def __post_init__(self) -> None:
        if self.cause is not None and self.cause not in CAUSES:
            raise ValueError(f"finding {self.code}: unknown cause {self.cause!r}")

    def to_dict(self) -> dict[str, Any]:
        out = {
            "code": self.code,
            "symbol": self.symbol,
            "severity": self.severity.value,
            "title": self.title,
            "cause": self.cause,
            "detail": self.detail,
            "ranks": list(self.ranks),
            "hosts": list(self.hosts),
            "evidence": [asdict(e) for e in self.evidence],
            "remedy": self.remedy.to_dict() if self.remedy else None,
            "consequence_of": self.consequence_of,
        }
        if self.aliases:  # only codes with old names carry it, so documents of other codes read as in 1.1
            out["aliases"] = list(self.aliases)
        return out

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Finding:
        return cls(
            code=d["code"],
            symbol=d["symbol"],
            severity=Severity(d["severity"]),
            title=d["title"],
            cause=d.get("cause"),
            detail=d.get("detail", ""),
            ranks=tuple(d.get("ranks") or ()),
            hosts=tuple(d.get("hosts") or ()),
            evidence=tuple(Evidence(**e) for e in d.get("evidence") or ()),
            remedy=Remedy.from_dict(d["remedy"]) if d.get("remedy") else None,
            consequence_of=d.get("consequence_of"),
            aliases=tuple(d.get("aliases") or ()),
        )


@dataclass
class CheckResult:
    """How one check ended, and what it found."""

    check: str  # dotted check name, e.g. "env.shm"
    stage: Stage
    title: str  # one-line description of the check
    status: Status
    findings: list[Finding] = field(default_factory=list)
    summary: str = ""  # one line of facts shown beside the check (what it saw)
    details: list[str] = field(default_factory=list)  # further facts, shown with -v
    reason: str = ""  # why skipped / what timed out, and how to supply what was missing
    error: str = ""  # traceback text when crashed
    duration_s: float = 0.0
    data: dict[str, Any] = field(default_factory=dict)  # machine-readable facts (JSON-safe)

    @property
    def worst(self) -> Severity | None:
        if not self.findings:
            return None
        return max((f.severity for f in self.findings), key=lambda s: s.rank)

    def to_dict(self) -> dict[str, Any]:
        return {
            "check": self.check,
            "stage": self.stage.value,
            "title": self.title,
            "status": self.status.value,
            "findings": [f.to_dict() for f in self.findings],
            "summary": self.summary,
            "details": list(self.details),
            "reason": self.reason,
            "error": self.error,
            "duration_s": round(self.duration_s, 4),
            "data": self.data,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> CheckResult:
        return cls(
            check=d["check"],
            stage=Stage(d["stage"]),
            title=d.get("title", ""),
            status=Status(d["status"]),
            findings=[Finding.from_dict(f) for f in d.get("findings") or ()],
            summary=d.get("summary", ""),
            details=list(d.get("details") or ()),
            reason=d.get("reason", ""),
            error=d.get("error", ""),
            duration_s=float(d.get("duration_s", 0.0)),
            data=dict(d.get("data") or {}),
        )


@dataclass
class Report:
    """Everything one run produced. JSON round-trips it exactly."""

    tool_version: str
    mode: str  # "run", "logs", "hang", ...
    created: str  # ISO 8601, UTC
    host: str
    argv: list[str] = field(default_factory=list)
    environment: dict[str, Any] = field(default_factory=dict)
    results: list[CheckResult] = field(default_factory=list)
    schema_version: str = SCHEMA_VERSION
    interrupted: bool = False
    # A multi-node run (commdoctor run under torchrun / srun / mpirun): where this process sat in the job,
    # and, in node 0's report, one entry per node (docs/json-schema.md). Absent from single-host reports.
    job: dict[str, Any] | None = None
    nodes: list[dict[str, Any]] = field(default_factory=list)

    def findings(self) -> list[Finding]:
        """All findings, likeliest root cause first.

        Causes before their consequences, then most severe first, then in
        causal (stage) order, then in the order each check reported them.
        """
        present = {f.code for r in self.results for f in r.findings}
        ordered: list[tuple[int, int, int, int, int, Finding]] = []
        for ri, r in enumerate(self.results):
            for fi, f in enumerate(r.findings):
                follows = int(bool(f.consequence_of and f.consequence_of in present))
                ordered.append((follows, -f.severity.rank, r.stage.order, ri, fi, f))
        ordered.sort(key=lambda t: t[:5])
        return [t[5] for t in ordered]

    def verdict(self) -> Finding | None:
        """The headline: the first error in causal (stage) order, else the first warning.

        A finding marked as the consequence of another is never the headline
        while its cause is present. Informational findings are never a verdict.
        """
        for f in self.findings():
            if f.severity is not Severity.INFO:
                return f
        return None

    def incomplete(self) -> list[str]:
        """Why the diagnosis is incomplete (interrupted; checks that crashed or timed out); empty when complete."""
        why = ["the run was interrupted"] if self.interrupted else []
        for st in (Status.CRASHED, Status.TIMED_OUT):
            names = [r.check for r in self.results if r.status is st]
            if names:
                why.append(f"{len(names)} check{'s' if len(names) != 1 else ''} {st.value.replace('_', ' ')} "
                           f"({', '.join(names[:5])}{', ...' if len(names) > 5 else ''})")
        return why

    def unreadable(self) -> bool:
        """Whether inputs were given and not one could be read (a FIFO nobody wrote to, a zip, /dev/zero).

        Offline checks publish what they read under ``data["inputs"]``: one entry per
        input with its ``error``, the ``lines`` read and the binary lines skipped.
        """
        for r in self.results:
            inputs = r.data.get("inputs") if isinstance(r.data, dict) else None
            if isinstance(inputs, list) and inputs and all(
                    isinstance(i, dict) and i.get("error")
                    and (_int0(i.get("lines")) <= _int0(i.get("skipped_binary")) or "all NUL bytes" in str(i["error"]))
                    for i in inputs):
                return True
        return False

    def outcome(self) -> str:
        """The run in one word: "unreadable" (no input could be read), "incomplete" (interrupted, a check
        crashed or timed out: it wins over anything found), then "errors", "warnings", "healthy".

        A report that could not look everywhere must not read as healthy, nor as a
        complete diagnosis: the findings it has are kept, and its exit status says
        it is incomplete (docs/cli.md, "Exit codes").
        """
        if self.unreadable():
            return "unreadable"
        if self.incomplete():
            return "incomplete"
        worst = max((f.severity.rank for f in self.findings()), default=-1)
        if worst >= Severity.ERROR.rank:
            return "errors"
        return "warnings" if worst >= Severity.WARNING.rank else "healthy"

    def counts(self) -> dict[str, int]:
        out = {s.value: 0 for s in Status}
        for r in self.results:
            out[r.status.value] += 1
        for sev in Severity:
            out[sev.value] = sum(1 for f in self.findings() if f.severity is sev)
        return out

    def to_dict(self) -> dict[str, Any]:
        v = self.verdict()
        out = {
            "schema_version": self.schema_version,
            "tool_version": self.tool_version,
            "mode": self.mode,
            "created": self.created,
            "host": self.host,
            "argv": list(self.argv),
            "interrupted": self.interrupted,
            "outcome": self.outcome(),
            "environment": self.environment,
            "verdict": v.to_dict() if v else None,
            "counts": self.counts(),
            "results": [r.to_dict() for r in self.results],
            # Flat, ordered view for consumers that only want the diagnoses.
            "findings": [f.to_dict() for f in self.findings()],
        }
        if self.job is not None:
            out["job"] = self.job
        if self.nodes:
            out["nodes"] = self.nodes
        return out

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Report:
        major = str(d.get("schema_version", "")).split(".")[0]
        if major != SCHEMA_VERSION.split(".")[0]:
            raise ValueError(
                f"report schema {d.get('schema_version')!r} is not readable by this version "
                f"(reads {SCHEMA_VERSION.split('.')[0]}.x)"
            )
        names = {f.name for f in fields(cls)}
        kw = {k: d[k] for k in ("tool_version", "mode", "created", "host") if k in names}
        return cls(
            **kw,
            argv=list(d.get("argv") or ()),
            environment=dict(d.get("environment") or {}),
            results=[CheckResult.from_dict(r) for r in d.get("results") or ()],
            schema_version=d["schema_version"],
            interrupted=bool(d.get("interrupted", False)),
            job=dict(d["job"]) if isinstance(d.get("job"), dict) else None,
            nodes=[dict(n) for n in d.get("nodes") or () if isinstance(n, dict)],
        )


def _int0(v: Any) -> int:
    return v if isinstance(v, int) and not isinstance(v, bool) else 0
