"""What a check is: a rules table, a docstring that documents it, and ``run``.

Promise: a check declares every code it can emit in ``rules`` (code, symbol,
severity, cause, title and remedy templates), so ``commdoctor checks``,
``commdoctor explain`` and docs/findings/ are generated from the same table
the check uses. ``run`` yields findings made with ``self.finding(CODE, ...)``
and may set a one-line summary and machine-readable data on the run handle.
Checks never touch the live world directly: they ask the context for facts,
which come from probes (live) or loaders (offline).
"""

from __future__ import annotations

import inspect
import re
import string
import textwrap
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Iterable, Iterator, Mapping, Sequence

from commdoctor.checks.wording import describe
from commdoctor.core.model import CAUSES, Evidence, Finding, Remedy, Severity, Stage, aliases_of

if TYPE_CHECKING:
    from commdoctor.core.context import CheckRun

CODE_RE = re.compile(r"^[A-Z]{2,5}\d{3}$")
SYMBOL_RE = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
DOC_HEADINGS = ("What it checks", "Why it matters", "Known limits")


@dataclass(frozen=True)
class Rule:
    """One code a check can emit. Strings may hold ``{name}`` placeholders."""

    code: str
    symbol: str
    severity: Severity
    title: str
    remedy: str
    cause: str | None = None
    steps: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    # Words for placeholders when no finding fills them (explain, docs); see checks/wording.py.
    examples: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not CODE_RE.match(self.code):
            raise ValueError(f"bad finding code {self.code!r}")
        if not SYMBOL_RE.match(self.symbol):
            raise ValueError(f"bad symbol {self.symbol!r} for {self.code}")
        if self.cause is not None and self.cause not in CAUSES:
            raise ValueError(f"{self.code}: unknown cause {self.cause!r}")


class _Missing:
    def __init__(self, key: str) -> None:
        self.key = key


class _Formatter(string.Formatter):
    """str.format that leaves a missing placeholder visible (with its spec) instead of raising."""

    def get_value(self, key: Any, args: Sequence[Any], kwargs: Mapping[str, Any]) -> Any:
        if isinstance(key, str) and key not in kwargs:
            return _Missing(key)
        return super().get_value(key, args, kwargs)

    def convert_field(self, value: Any, conversion: str | None) -> Any:
        return value if isinstance(value, _Missing) else super().convert_field(value, conversion)

    def format_field(self, value: Any, format_spec: str) -> str:
        if isinstance(value, _Missing):
            return "{" + value.key + (":" + format_spec if format_spec else "") + "}"
        return super().format_field(value, format_spec)


_FORMATTER = _Formatter()


def fill(template: str, params: Mapping[str, Any]) -> str:
    return _FORMATTER.vformat(template, (), params)


class Check:
    """Base class. Subclasses set the class attributes and implement ``run``.

    The subclass docstring is user documentation with three headings:
    "What it checks", "Why it matters", "Known limits".
    """

    name: ClassVar[str]  # dotted, e.g. "env.shm"
    stage: ClassVar[Stage]
    title: ClassVar[str]  # one line, shown beside the status glyph
    rules: ClassVar[tuple[Rule, ...]] = ()
    requires: ClassVar[tuple[str, ...]] = ()  # check names that must not have failed
    timeout_s: ClassVar[float] = 10.0
    modes: ClassVar[frozenset[str]] = frozenset({"run"})
    # Codes another check declares and judges, that this check also reports (the log diagnosis reports
    # ENV030 when a log proves /dev/shm too small): selecting them runs this check too.
    borrows: ClassVar[tuple[str, ...]] = ()

    def run(self, run: CheckRun) -> Iterable[Finding]:  # pragma: no cover - abstract
        raise NotImplementedError

    def deadline(self, options: Any) -> float:
        """Seconds this check may take. Subclasses tie it to user options."""
        return self.timeout_s

    # -- helpers for subclasses -------------------------------------------------

    @classmethod
    def rule(cls, code: str) -> Rule:
        for r in cls.rules:
            if r.code == code:
                return r
        raise KeyError(f"{cls.name} declares no rule {code}")

    def finding(
        self,
        code: str,
        *,
        detail: str = "",
        evidence: Sequence[Evidence] = (),
        ranks: Sequence[int] = (),
        hosts: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        steps: Sequence[str] | None = None,
        severity: Severity | None = None,
        cause: str | None = None,
        consequence_of: str | None = None,
        **params: Any,
    ) -> Finding:
        """Build a finding from rule ``code``; ``params`` fill the rule's placeholders.

        ``severity`` and ``cause`` override the rule's where one code covers
        cases of different weight or origin (the code's meaning stays the same).
        """
        r = self.rule(code)
        remedy = Remedy(
            summary=fill(r.remedy, params),
            steps=tuple(fill(s, params) for s in (steps if steps is not None else r.steps)),
            env={k: fill(v, params) for k, v in (env if env is not None else r.env).items()},
            docs=f"docs/findings/{code}.md",
        )
        return Finding(
            code=code,
            symbol=r.symbol,
            severity=severity or r.severity,
            title=fill(r.title, params),
            cause=cause or r.cause,
            detail=fill(detail, params) if detail else "",
            ranks=tuple(ranks),
            hosts=tuple(hosts),
            evidence=tuple(evidence),
            remedy=remedy,
            consequence_of=consequence_of,
            aliases=aliases_of(code),
        )

    @classmethod
    def codes(cls) -> tuple[str, ...]:
        return tuple(r.code for r in cls.rules)

    @classmethod
    def reported_codes(cls) -> tuple[str, ...]:
        """Every code this check can report: its own and the ones it borrows."""
        return (*cls.codes(), *(c for c in cls.borrows if c not in cls.codes()))

    @classmethod
    def documentation(cls) -> dict[str, str]:
        """The docstring split under its headings (plus "summary": the first paragraph)."""
        doc = inspect.cleandoc(cls.__doc__ or "")
        parts: dict[str, str] = {}
        current = "summary"
        buf: list[str] = []
        for line in doc.splitlines():
            head = line.strip().rstrip(":")
            if head in DOC_HEADINGS:
                parts[current] = "\n".join(buf).strip()
                current, buf = head, []
            else:
                buf.append(line)
        parts[current] = "\n".join(buf).strip()
        return parts


def selected(code: str, select: Sequence[str], ignore: Sequence[str], aliases: Sequence[str] | None = None) -> bool:
    """Linter-style prefix matching: the longest matching prefix decides; a tie ignores.

    A code answers to its old names too (``aliases``; by default the ones commdoctor.core.model.ALIASES
    gives it): ``--select LOG030`` keeps ENV030, ``--ignore LOG0`` drops it, as it dropped LOG030.
    """
    names = [code.upper(), *(a.upper() for a in (aliases_of(code) if aliases is None else aliases))]
    sel = max((len(p) for p in select for n in names if n.startswith(p.upper())), default=None)
    if select and sel is None:
        return False
    ign = max((len(p) for p in ignore for n in names if n.startswith(p.upper())), default=None)
    return ign is None or (sel or 0) > ign


def explain_text(check: type[Check], code: str | None = None) -> str:
    """Plain-text documentation of a check, or of one of its codes."""
    doc = check.documentation()
    out: list[str] = []
    rules: Iterator[Rule] = iter(check.rules if code is None else [check.rule(code)])
    for r in rules:
        out.append(f"{r.code} {r.symbol} ({r.severity.value}{', cause ' + r.cause if r.cause else ''})")
        out.append(f"  {describe(r.title, r)}")
        out.append(f"  Remedy: {describe(r.remedy, r)}")
        for s in r.steps:
            out.append(f"    - {describe(s, r)}")
        for k, v in r.env.items():
            out.append(f"    {k}={describe(v, r)}")
    out.append("")
    out.append(f"Check {check.name} (stage {check.stage.value}): {check.title}")
    if doc.get("summary"):
        out.append(textwrap.indent(doc["summary"], "  "))
    for h in DOC_HEADINGS:
        if doc.get(h):
            out.append("")
            out.append(h)
            out.append(textwrap.indent(doc[h], "  "))
    return "\n".join(out).rstrip() + "\n"
