"""One view function per model type, returning rich renderables.

Promise: the console and the TUI draw findings, check results and reports
with these functions only, so both show the same thing.
"""

from __future__ import annotations

from typing import Any, Mapping

from rich.console import Group, RenderableType
from rich.text import Text

from commdoctor.core.model import CheckResult, Finding, Report, Severity, Status
from commdoctor.core.model import Evidence, Remedy  # for the views added for the TUI
from commdoctor.render.theme import ASCII, STYLE, Glyphs, severity_glyph, status_key


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


def not_applicable(r: CheckResult) -> bool:
    """A check skipped only because an optional input was not given (``SkipCheck(not_applicable=True)``).

    It has no bearing on the question the command answers, so the console and the
    TUI leave it out unless asked (``-v``); the report and JSON keep it as skipped.
    """
    return r.status is Status.SKIPPED and isinstance(r.data, Mapping) and r.data.get("not_applicable") is True


def summary_view(report: Report, g: Glyphs, elapsed_s: float | None = None, verbose: int = 0) -> RenderableType:
    if not verbose and any(not_applicable(r) for r in report.results):
        import dataclasses

        report = dataclasses.replace(report, results=[r for r in report.results if not not_applicable(r)])
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
    incomplete = report.incomplete()
    if report.unreadable():
        line.append("Nothing readable: ", style="bold magenta")
        line.append("not one input could be read, so nothing was diagnosed (exit status 2)\n")
    elif incomplete and v:
        line.append("Incomplete: ", style="bold magenta")
        line.append("; ".join(incomplete) + " (the verdict above may not be the whole story)\n")
    elif incomplete:
        line.append("Verdict: incomplete", style="bold magenta")
        line.append(f" (no errors or warnings found, but {'; '.join(incomplete)})\n")
    elif not v:
        line.append("Verdict: healthy", style="bold green")
        line.append(" (no errors or warnings)\n")
    line.append(f"{n} check{'s' if n != 1 else ''}: {', '.join(status_bits) or 'none'}")
    if sev_bits:
        line.append(f"; findings: {', '.join(sev_bits)}")
    if elapsed_s is not None:
        line.append(f" ({elapsed_s:.1f} s)")
    return line


# -- additions shared with the TUI: evidence, remedies, ranks --------------------


def evidence_view(e: Evidence, width: int | None = None) -> Text:
    """One piece of evidence on one line: where (file:line, rank, host), then the verbatim text."""
    where = e.source + (f":{e.line}" if e.line else "")
    who = ", ".join(x for x in (f"rank {e.rank}" if e.rank is not None else "", e.host or "") if x)
    t = Text()
    t.append(where, style=STYLE["code"])
    if who:
        t.append(f" [{who}]", style="dim")
    text = e.text if width is None or len(e.text) <= width else e.text[: max(width - 3, 1)] + "..."
    t.append(f": {text}", style=STYLE["evidence"])
    return t


def remedy_view(r: Remedy, g: Glyphs) -> RenderableType:
    """A remedy in full: the summary, numbered steps, the settings to try, the docs link."""
    lines: list[Text] = []
    head = Text()
    head.append(f"{g.remedy} ", style=STYLE["remedy"])
    head.append(r.summary, style=STYLE["remedy"])
    lines.append(head)
    for i, s in enumerate(r.steps, 1):
        lines.append(Text(f"  {i}. {s}"))
    if r.env:
        lines.append(Text("  settings to try:", style="dim"))
        for k, v in r.env.items():
            lines.append(Text(f"    {k}={v}", style="bold"))
    if r.docs:
        lines.append(Text(f"  see {r.docs}", style="dim"))
    return Group(*lines)


def remedy_shell(r: Remedy) -> str:
    """The remedy's settings as shell lines a user can paste (steps as comments when no settings)."""
    import shlex

    if r.env:
        return "\n".join(f"export {k}={shlex.quote(str(v))}" for k, v in r.env.items()) + "\n"
    return "".join(f"# {s}\n" for s in (r.summary, *r.steps))


def finding_detail_view(f: Finding, g: Glyphs) -> RenderableType:
    """Everything about one finding except its evidence and remedy (which the TUI lists apart)."""
    head = finding_view(Finding(code=f.code, symbol=f.symbol, severity=f.severity, title=f.title,
                                ranks=f.ranks, hosts=f.hosts), g, indent="")
    meta = Text()
    meta.append(f"severity {f.severity.value}", style=STYLE[f.severity])
    if f.cause:
        meta.append(f"  cause {f.cause}", style="dim")
    if f.consequence_of:
        meta.append(f"  follows from {f.consequence_of}", style="dim")
    parts: list[RenderableType] = [head, meta]
    if f.detail:
        parts.append(Text(f.detail))
    return Group(*parts)


def rank_view(rank: Mapping[str, Any], g: Glyphs, cited: bool = False) -> RenderableType:
    """One rank of a job (the ``data["ranks"]`` shape of docs/tui.md): state, op, call site, stack."""
    from commdoctor.render.theme import rank_state

    st = rank_state(str(rank.get("state") or "unknown"))
    head = Text()
    head.append(f"rank {rank.get('rank')}", style=STYLE["code"])
    if rank.get("host"):
        head.append(f" on {rank['host']}")
    if rank.get("pid"):
        head.append(f" (pid {rank['pid']})", style="dim")
    head.append(f"  [{st.letter}] {st.label}", style=st.style)
    if rank.get("op"):
        head.append(f": {rank['op']}", style=st.style)
    if cited:
        head.append(f"  {g.warning} named by the verdict", style=STYLE[Severity.WARNING])
    lines: list[RenderableType] = [head]
    detail = str(rank.get("detail") or "")
    if rank.get("site") and str(rank["site"]) not in detail:  # the hang stage's own words already name it
        lines.append(Text(f"  at {rank['site']}"))
    if detail:
        lines.append(Text(f"  {detail}", style="dim"))
    stack = rank.get("stack") or []
    if stack:
        lines.append(Text("  stack (innermost first):", style="dim"))
        for fr in stack:
            lines.append(Text(f"    {stack_frame_text(fr)}"))
    elif rank.get("stack_error"):
        lines.append(Text(f"  no stack: {rank['stack_error']}", style="dim"))
    else:
        lines.append(Text("  no stack in this report", style="dim"))
    for t in rank.get("threads") or []:  # the process's other threads, after the one that tells the story
        if not isinstance(t, Mapping) or not t.get("frames"):
            continue
        lines.append(Text(f"  thread {t.get('name') or '?'}:", style="dim"))
        for fr in t["frames"]:
            lines.append(Text(f"    {stack_frame_text(fr)}"))
    return Group(*lines)


def stack_frame_text(frame: Any) -> str:
    """A stack frame as one line, whether the report holds it as text or as a dict."""
    if isinstance(frame, Mapping):
        fn = frame.get("function") or frame.get("name") or "?"
        where = frame.get("short_file") or frame.get("file") or frame.get("filename") or ""
        line = frame.get("line")
        return f"{fn} ({where}{f':{line}' if line else ''})" if where else str(fn)
    return str(frame)


# -- the nodes of a multi-node run (console, TUI and `commdoctor report` share the rows) --------

NODE_COLUMNS = ("node", "host", "status", "address", "mtu", "errors", "warnings", "last stage")


def node_rows(report: Report) -> list[list[str]]:
    """One row per node of a multi-node report (``report.nodes``), as plain strings."""
    rows = []
    for n in report.nodes:
        addr = n.get("address") or "-"
        if n.get("interface"):
            addr += f" ({n['interface']})"
        counts = n.get("counts") or {}
        reported = n.get("status") == "reported"
        rows.append([str(n.get("node", "?")), str(n.get("host") or "?"), str(n.get("status") or "?"), addr,
                     str(n.get("mtu") or "-"), str(counts.get("error", 0)) if reported else "-",
                     str(counts.get("warning", 0)) if reported else "-", str(n.get("last_stage") or "-")])
    return rows


def nodes_view(report: Report, g: Glyphs) -> RenderableType:
    """The per-node table, with the node's status coloured as a check's would be."""
    from rich.table import Table

    from rich import box

    t = Table(title=f"{len(report.nodes)} nodes", title_justify="left", show_edge=False, pad_edge=False,
              box=box.SIMPLE if g is not ASCII else box.ASCII)
    for c in NODE_COLUMNS:
        t.add_column(c, no_wrap=c in ("node", "status", "mtu"))
    for row in node_rows(report):
        style = {"reported": STYLE["passed"], "never joined": STYLE["failed"], "stopped": STYLE["failed"]}.get(row[2], "")
        errs = row[5]
        t.add_row(row[0], row[1], Text(row[2], style=style), row[3], row[4],
                  Text(errs, style=STYLE[Severity.ERROR] if errs not in ("0", "-") else ""), row[6], row[7])
    return t
