"""One view function per model type, returning rich renderables.

Promise: the console and the TUI draw findings, check results and reports
with these functions only, so both show the same thing.
"""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.text import Text

from commdoctor.model import CheckResult, Finding, Report, Severity, Status
from commdoctor.render.theme import STYLE, Glyphs, severity_glyph, status_key


def finding_view(f: Finding, g: Glyphs, verbose: int = 0, indent: str = "    ") -> RenderableType:
    lines: list[Text] = []
    head = Text(indent)
    head.append(f"{severity_glyph(g, f.severity)} ", style=STYLE[f.severity])
    head.append(f"{f.code} ", style=STYLE["code"])
    head.append(f"{f.symbol}: ", style=STYLE[f.severity])
    head.append(f.title)
    if f.ranks:
        head.append(f"  [rank{'s' if len(f.ranks) > 1 else ''} {', '.join(map(str, f.ranks))}]", style="dim")
    if f.hosts:
        head.append(f"  [{', '.join(f.hosts)}]", style="dim")
    lines.append(head)
    if f.severity is Severity.INFO and not verbose:
        return Group(*lines)  # an informational note stays one line unless asked for more
    sub = indent + "  "
    if f.detail:
        lines.append(Text(sub + f.detail))
    if f.consequence_of:
        lines.append(Text(sub + f"(follows from {f.consequence_of})", style="dim"))
    shown = f.evidence if verbose else f.evidence[:1]
    for e in shown:
        where = e.source + (f":{e.line}" if e.line else "")
        text = e.text if verbose or len(e.text) <= 160 else e.text[:157] + "..."
        lines.append(Text(f"{sub}{where}: {text}", style=STYLE["evidence"]))
    if not verbose and len(f.evidence) > 1:
        lines.append(Text(f"{sub}(+{len(f.evidence) - 1} more evidence lines with -v)", style="dim"))
    if f.remedy:
        r = Text(sub)
        r.append(f"{g.remedy} ", style=STYLE["remedy"])
        r.append(f.remedy.summary, style=STYLE["remedy"])
        lines.append(r)
        if verbose:
            for s in f.remedy.steps:
                lines.append(Text(f"{sub}    - {s}"))
            for k, v in f.remedy.env.items():
                lines.append(Text(f"{sub}    {k}={v}", style="bold"))
    return Group(*lines)


def result_view(r: CheckResult, g: Glyphs, verbose: int = 0) -> RenderableType:
    key = status_key(r.status, r.worst)
    head = Text()
    head.append(getattr(g, key), style=STYLE[key])
    head.append(f" {r.title}")
    if r.summary:
        head.append(f": {r.summary}", style="dim" if r.status is Status.PASSED and not r.findings else "")
    if verbose:
        head.append(f"  ({r.check}, {r.duration_s:.2f} s)", style="dim")
    parts: list[RenderableType] = [head]
    if r.status in (Status.SKIPPED, Status.TIMED_OUT, Status.CRASHED) and r.reason:
        parts.append(Text(f"    {r.status.value.replace('_', ' ')}: {r.reason}", style=STYLE[key]))
    if r.status is Status.CRASHED and verbose and r.error:
        parts.append(Text("    " + r.error.rstrip().replace("\n", "\n    "), style="dim"))
    if verbose:
        for d in r.details:
            parts.append(Text(f"    {d}", style="dim"))
    for f in r.findings:
        parts.append(finding_view(f, g, verbose))
    return Group(*parts)


def summary_view(report: Report, g: Glyphs, elapsed_s: float | None = None) -> RenderableType:
    c = report.counts()
    n = len(report.results)
    status_bits = [f"{c[s.value]} {s.value.replace('_', ' ')}" for s in Status if c[s.value]]
    sev_bits = [f"{c[s.value]} {s.value}{'s' if c[s.value] != 1 and s is not Severity.INFO else ''}"
                for s in (Severity.ERROR, Severity.WARNING, Severity.INFO) if c[s.value]]
    line = Text()
    v = report.verdict()
    if v:
        line.append("Verdict: ", style=STYLE["verdict"])
        line.append(f"{v.code} ", style=STYLE["code"])
        line.append(v.title, style=STYLE[v.severity])
        if v.remedy:
            line.append(f"\n  {g.remedy} {v.remedy.summary}", style=STYLE["remedy"])
        line.append("\n")
    elif report.interrupted:
        line.append("Interrupted before all checks ran.\n", style="yellow")
    elif c["crashed"] or c["timed_out"]:
        line.append("Verdict: incomplete", style="bold magenta")
        line.append(f" (no errors or warnings, but {c['crashed'] + c['timed_out']} check(s) crashed or timed out)\n")
    else:
        line.append("Verdict: healthy", style="bold green")
        line.append(" (no errors or warnings)\n")
    line.append(f"{n} check{'s' if n != 1 else ''}: {', '.join(status_bits) or 'none'}")
    if sev_bits:
        line.append(f"; findings: {', '.join(sev_bits)}")
    if elapsed_s is not None:
        line.append(f" ({elapsed_s:.1f} s)")
    return line
