"""The support-ticket report: one document, written as Markdown and as self-contained HTML.

Promise: a pure function of its input (a sanitized ``Material``): no clock, no
network, no randomness, so the same input gives byte-identical files. The
document is built once as a small tree of blocks (headings, paragraphs,
tables, code, collapsible details) and written by two writers, so the
Markdown (for a GitHub issue) and the HTML (for a browser; inline CSS, no
script, no external asset, a Content-Security-Policy that forbids fetching
anything) always say the same thing. Every piece of text is escaped for its
format; verbatim material (evidence, log lines, command output) goes in code
blocks whose fences cannot be broken by the text inside them. Standard library
only; it diagnoses nothing.
"""

from __future__ import annotations

import html
import json
import re
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence, Union

from commdoctor.core.model import Finding, Report, Severity, Status

# -- the document tree ----------------------------------------------------------

Span = tuple[str, str]  # (style, text): style is "", "b", "code" or "i"
Inline = Union[str, Sequence[Span]]


@dataclass
class H:
    level: int
    text: str
    anchor: str = ""


@dataclass
class P:
    spans: Inline


@dataclass
class Table:
    headers: list[str]
    rows: list[list[Inline]]


@dataclass
class Code:
    text: str
    lang: str = "text"


@dataclass
class Details:
    summary: str
    blocks: list[Any]
    open: bool = False


@dataclass
class UL:
    items: list[Inline]


Block = Union[H, P, Table, Code, Details, UL]


def spans(x: Inline) -> list[Span]:
    return [("", x)] if isinstance(x, str) else list(x)


# -- Markdown (GitHub) ---------------------------------------------------------

_MD_SPECIAL = re.compile(r"([\\`*_\[\]<>|#~@&])")


def md_text(s: str) -> str:
    """Plain text safe in a GitHub paragraph or table cell: markup characters backslash-escaped."""
    s = _MD_SPECIAL.sub(r"\\\1", s.replace("\r", ""))
    return s.replace("\n", "<br>")


def md_code_span(s: str) -> str:
    s = s.replace("\n", " ").replace("|", "\\|")
    run = max((len(m) for m in re.findall(r"`+", s)), default=0)
    tick = "`" * (run + 1)
    pad = " " if s.startswith("`") or s.endswith("`") or not s.strip() else ""
    return f"{tick}{pad}{s}{pad}{tick}"


def md_inline(x: Inline) -> str:
    out = []
    for style, text in spans(x):
        if style == "code":
            out.append(md_code_span(text))
        elif style == "b":
            out.append(f"**{md_text(text)}**")
        elif style == "i":
            out.append(f"*{md_text(text)}*")
        else:
            out.append(md_text(text))
    return "".join(out)


def md_fence(text: str, lang: str = "text") -> str:
    run = max((len(m) for m in re.findall(r"`{3,}|~{3,}", text)), default=0)
    fence = "`" * max(3, run + 1)
    return f"{fence}{lang}\n{text.rstrip(chr(10))}\n{fence}"


def to_markdown(blocks: Sequence[Any]) -> str:
    out: list[str] = []
    for b in blocks:
        if isinstance(b, H):
            out.append("#" * b.level + " " + md_text(b.text))
        elif isinstance(b, P):
            out.append(md_inline(b.spans))
        elif isinstance(b, Table):
            if not b.rows:
                continue
            rows = ["| " + " | ".join(md_text(h) for h in b.headers) + " |",
                    "|" + "|".join("---" for _ in b.headers) + "|"]
            for r in b.rows:
                cells = [md_inline(c) if c != "" else " " for c in r] + [" "] * (len(b.headers) - len(r))
                rows.append("| " + " | ".join(cells) + " |")
            out.append("\n".join(rows))
        elif isinstance(b, Code):
            out.append(md_fence(b.text, b.lang))
        elif isinstance(b, UL):
            out.append("\n".join("- " + md_inline(i) for i in b.items))
        elif isinstance(b, Details):
            inner = to_markdown(b.blocks).rstrip("\n")
            out.append(f"<details{' open' if b.open else ''}><summary>{html.escape(b.summary)}</summary>\n\n{inner}\n\n</details>")
    return "\n\n".join(out) + "\n"


# -- HTML ----------------------------------------------------------------------

CSS = """
:root { color-scheme: light; }
body { font: 14px/1.5 -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; color: #1f2328; margin: 0; background: #fff; }
main { max-width: 1100px; margin: 0 auto; padding: 24px 32px 64px; }
h1 { font-size: 26px; border-bottom: 1px solid #d0d7de; padding-bottom: 8px; }
h2 { font-size: 20px; border-bottom: 1px solid #d8dee4; padding-bottom: 6px; margin-top: 32px; }
h3 { font-size: 16px; margin-top: 24px; }
code, pre { font: 12px/1.45 ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; }
code { background: #eff1f3; padding: 1px 4px; border-radius: 4px; }
pre { background: #f6f8fa; border: 1px solid #d0d7de; border-radius: 6px; padding: 10px 12px; overflow-x: auto; white-space: pre; }
pre code { background: none; padding: 0; }
table { border-collapse: collapse; margin: 8px 0 16px; display: block; overflow-x: auto; max-width: 100%; }
th, td { border: 1px solid #d0d7de; padding: 4px 10px; text-align: left; vertical-align: top; }
th { background: #f6f8fa; }
tr:nth-child(2n) td { background: #fbfcfd; }
details { margin: 8px 0; }
summary { cursor: pointer; color: #0969da; }
.sev-error { color: #cf222e; font-weight: 600; }
.sev-warning { color: #9a6700; font-weight: 600; }
.sev-info { color: #0969da; }
.verdict { border-left: 4px solid #cf222e; background: #fff5f5; padding: 8px 16px; margin: 12px 0; }
.verdict.healthy { border-color: #1a7f37; background: #f0fff4; }
"""

_SEV_WORDS = {"error": "sev-error", "warning": "sev-warning", "info": "sev-info"}


def html_inline(x: Inline) -> str:
    out = []
    for style, text in spans(x):
        t = html.escape(text).replace("\n", "<br>")
        if style == "code":
            out.append(f"<code>{t}</code>")
        elif style == "b":
            cls = _SEV_WORDS.get(text)
            out.append(f'<strong class="{cls}">{t}</strong>' if cls else f"<strong>{t}</strong>")
        elif style == "i":
            out.append(f"<em>{t}</em>")
        else:
            out.append(t)
    return "".join(out)


def to_html(blocks: Sequence[Any], title: str) -> str:
    body = _html_blocks(blocks)
    return (
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; img-src data:\">\n"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
        f"<title>{html.escape(title)}</title>\n<style>{CSS}</style>\n</head>\n<body>\n<main>\n{body}</main>\n</body>\n</html>\n"
    )


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:60] or "section"


def _html_blocks(blocks: Sequence[Any]) -> str:
    out: list[str] = []
    for b in blocks:
        if isinstance(b, H):
            out.append(f'<h{b.level} id="{_slug(b.anchor or b.text)}">{html.escape(b.text)}</h{b.level}>')
        elif isinstance(b, P):
            cls = ""
            first = spans(b.spans)[:1]
            if first and first[0] == ("b", "Verdict:"):
                cls = ' class="verdict"'
            elif first and first[0] == ("b", "Verdict: incomplete"):
                cls = ' class="verdict"'
            elif first and first[0] == ("b", "Verdict: healthy"):
                cls = ' class="verdict healthy"'
            out.append(f"<p{cls}>{html_inline(b.spans)}</p>")
        elif isinstance(b, Table):
            if not b.rows:
                continue
            head = "".join(f"<th>{html.escape(h)}</th>" for h in b.headers)
            rows = "".join("<tr>" + "".join(f"<td>{html_inline(c)}</td>" for c in r) + "</tr>" for r in b.rows)
            out.append(f"<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>")
        elif isinstance(b, Code):
            out.append(f"<pre><code>{html.escape(b.text.rstrip(chr(10)))}</code></pre>")
        elif isinstance(b, UL):
            out.append("<ul>" + "".join(f"<li>{html_inline(i)}</li>" for i in b.items) + "</ul>")
        elif isinstance(b, Details):
            out.append(f"<details{' open' if b.open else ''}><summary>{html.escape(b.summary)}</summary>\n"
                       f"{_html_blocks(b.blocks)}</details>")
    return "\n".join(out) + "\n"


# -- what goes in ----------------------------------------------------------------


@dataclass
class Excerpt:
    """One file's bounded excerpt, already redacted."""

    name: str  # as shown (redacted, anonymized)
    size: int
    lines: int
    text: str  # the excerpt file (line-numbered blocks)
    first_errors: list[tuple[int, str, str]] = field(default_factory=list)  # (line, rank key, text)
    omitted: list[str] = field(default_factory=list)


@dataclass
class Material:
    """Everything a report shows, already redacted (and anonymized when asked)."""

    report: Report
    system: dict[str, Any] | None = None
    logs: list[Excerpt] = field(default_factory=list)
    records: list[Excerpt] = field(default_factory=list)
    progress: list[dict[str, Any]] = field(default_factory=list)  # per rank, from hook records
    stacks: list[tuple[str, str]] = field(default_factory=list)  # (name, text)
    fr: list[tuple[str, Any]] = field(default_factory=list)  # (name, parsed dump or {"unreadable": why})
    cmdlines: list[tuple[str, str]] = field(default_factory=list)  # (where from, command line)
    problems: list[str] = field(default_factory=list)  # inputs that could not be used, and why
    redaction: dict[str, Any] = field(default_factory=dict)
    attachments: list[tuple[str, int]] = field(default_factory=list)  # bundle files (path, bytes)


# -- building the document ---------------------------------------------------------

MAX_EVIDENCE = 8
MAX_ROWS = 128
MAX_EXCERPTS_SHOWN = 6


def _sev(f: Finding) -> Span:
    return ("b", f.severity.value)


def _finding_blocks(i: int, f: Finding) -> list[Any]:
    out: list[Any] = [H(3, f"{i}. {f.code} {f.symbol}: {f.title}", anchor=f"finding-{i}-{f.code}")]
    meta: list[Span] = [("", "Severity "), _sev(f)]
    if f.cause:
        meta += [("", ", cause "), ("code", f.cause)]
    if f.ranks:
        meta += [("", f", rank{'s' if len(f.ranks) > 1 else ''} "), ("code", ", ".join(map(str, f.ranks)))]
    if f.hosts:
        meta += [("", ", host" + ("s " if len(f.hosts) > 1 else " ")), ("code", ", ".join(f.hosts))]
    if f.consequence_of:
        meta += [("", ", follows from "), ("code", f.consequence_of)]
    out.append(P(meta + [("", ".")]))
    if f.detail:
        out.append(P(f.detail))
    if f.evidence:
        lines = []
        for e in f.evidence[:MAX_EVIDENCE]:
            where = e.source + (f":{e.line}" if e.line else "")
            who = " ".join(x for x in (f"rank {e.rank}" if e.rank is not None else "", e.host or "") if x)
            lines.append(f"{where}{' (' + who + ')' if who else ''}: {e.text}")
        if len(f.evidence) > MAX_EVIDENCE:
            lines.append(f"(+{len(f.evidence) - MAX_EVIDENCE} more in report.json)")
        out.append(P([("b", "Evidence")]))
        out.append(Code("\n".join(lines)))
    if f.remedy:
        out.append(P([("b", "Remedy:"), ("", " " + f.remedy.summary)]))
        items: list[Inline] = [s for s in f.remedy.steps]
        items += [[("", "try "), ("code", f"{k}={v}")] for k, v in f.remedy.env.items()]
        if f.remedy.docs:
            items.append([("", "documentation: "), ("code", f.remedy.docs)])
        if items:
            out.append(UL(items))
    return out


def _scalar(v: Any) -> str:
    if isinstance(v, dict) and set(v) == {"unavailable"}:
        return f"unavailable: {v['unavailable']}"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if v is None:
        return "-"
    if isinstance(v, (list, tuple)) and all(not isinstance(x, (dict, list)) for x in v):
        return ", ".join(map(str, v)) if v else "-"
    if isinstance(v, (dict, list)):
        return json.dumps(v, sort_keys=False, ensure_ascii=False)
    return str(v)


def _get(d: Any, *path: str) -> Any:
    for p in path:
        if not isinstance(d, Mapping):
            return None
        d = d.get(p)
    return d


def _bytes(n: Any) -> str:
    if not isinstance(n, int):
        return _scalar(n)
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} B"


def key_facts(system: Mapping[str, Any]) -> list[list[Inline]]:
    s = system.get("sections", {})
    t = s.get("torch", {}) or {}
    rows: list[tuple[str, Any]] = [
        ("host", f"{_scalar(_get(s, 'host', 'hostname'))} ({_scalar(_get(s, 'host', 'os'))}, {_scalar(_get(s, 'host', 'arch'))})"),
        ("kernel", _get(s, "host", "kernel")),
        ("python", _get(s, "host", "python")),
        ("torch", t.get("version") if isinstance(t, Mapping) and t.get("installed") else (t.get("reason") if isinstance(t, Mapping) else t)),
        ("CUDA (torch build)", t.get("cuda_build") if isinstance(t, Mapping) else None),
        ("cuDNN", t.get("cudnn") if isinstance(t, Mapping) else None),
        ("NCCL (runtime, ncclGetVersion)", _get(s, "nccl", "runtime")),
        ("NCCL (torch compiled with)", _get(s, "nccl", "compiled")),
        ("NVIDIA driver", _get(s, "gpu", "driver")),
        ("CUDA supported by driver", _get(s, "gpu", "cuda_driver_api")),
        ("GPUs", len(_get(s, "gpu", "gpus")) if isinstance(_get(s, "gpu", "gpus"), list) else _get(s, "gpu", "gpus")),
        ("backends", ", ".join(k for k, v in (t.get("backends") or {}).items() if v) if isinstance(t, Mapping) and t.get("backends") else None),
        ("container", _get(s, "container", "kind")),
        ("launcher", _get(s, "launcher", "detected")),
        ("/dev/shm", f"{_bytes(_get(s, 'limits', 'dev_shm', 'size_bytes'))} ({_bytes(_get(s, 'limits', 'dev_shm', 'free_bytes'))} free)"
         if isinstance(_get(s, "limits", "dev_shm", "size_bytes"), int) else _get(s, "limits", "dev_shm")),
        ("locked memory (ulimit -l)", _bytes(_get(s, "limits", "ulimits", "memlock", "soft"))),
        ("hostname resolves to", _get(s, "network", "hostname_resolves_to")),
    ]
    ifs = _get(s, "network", "interfaces")
    if isinstance(ifs, list):
        parts = [f"{i.get('name')} {'up' if i.get('up') else 'down'} mtu {i.get('mtu')} {' '.join(i.get('ipv4') or [])}".strip()
                 for i in ifs]
        rows.append(("interfaces", "; ".join(parts)))
    ib = _get(s, "infiniband", "devices")
    if isinstance(ib, list):
        rows.append(("RDMA devices", "; ".join(
            f"{d.get('name')}: " + ", ".join(f"port {p.get('port')} {p.get('state')} {p.get('link_layer')}" for p in d.get("ports", []))
            for d in ib) or "none"))
    else:
        rows.append(("RDMA devices", ib))
    return [[k, _scalar(v)] for k, v in rows if v is not None]


def _section_blocks(name: str, data: Any) -> list[Any]:
    """A generic, readable rendering of one sysinfo section."""
    if isinstance(data, Mapping) and set(data) == {"unavailable"}:
        return [P(f"unavailable: {data['unavailable']}")]
    out: list[Any] = []
    rows: list[list[Inline]] = []
    for k, v in (data.items() if isinstance(data, Mapping) else [("value", data)]):
        if isinstance(v, Mapping) and "command" in v and "output" in v:
            out.append(P([("b", k), ("", ": "), ("code", v["command"]), ("", f" (exit {v.get('rc')})")]))
            out.append(Code(v["output"] or "(no output)"))
        elif isinstance(v, list) and v and all(isinstance(x, Mapping) for x in v):
            cols: list[str] = []
            for x in v:
                for c in x:
                    if c not in cols:
                        cols.append(c)
            out.append(P([("b", k)]))
            out.append(Table(cols, [[_scalar(x.get(c)) for c in cols] for x in v[:MAX_ROWS]]))
        elif name == "env" and k == "variables" and isinstance(v, Mapping):
            out.append(P([("b", "variables")]))
            out.append(Code("\n".join(f"{a}={b}" for a, b in v.items()) or "(none)"))
        elif isinstance(v, Mapping) and v and all(not isinstance(x, (Mapping, list)) or set(x) == {"unavailable"} or
                                                    (isinstance(x, Mapping) and all(not isinstance(y, (Mapping, list)) for y in x.values()))
                                                    for x in v.values()):
            for kk, vv in v.items():
                rows.append([f"{k}.{kk}", _scalar(vv)])
        else:
            rows.append([k, _scalar(v)])
    return ([Table(["item", "value"], rows)] if rows else []) + out


def rank_tables(report: Report) -> list[tuple[str, list[str], list[list[Inline]]]]:
    """Per-rank tables found in the checks' data: any list of dicts that each carry a ``rank``."""
    found: list[tuple[str, list[str], list[list[Inline]]]] = []

    def visit(obj: Any, where: str, depth: int) -> None:
        if depth > 4 or len(found) >= 8:
            return
        if isinstance(obj, list) and obj and all(isinstance(x, Mapping) and isinstance(x.get("rank"), int) for x in obj):
            cols = ["rank"]
            for x in obj:
                for c, v in x.items():
                    if c not in cols and (not isinstance(v, (Mapping, list)) or isinstance(v, list) and len(v) <= 8
                                          and all(not isinstance(y, (Mapping, list)) for y in v)):
                        cols.append(c)
            if "host" in cols:
                cols.insert(1, cols.pop(cols.index("host")))
            cols = cols[:10]
            table: list[list[Inline]] = [[_scalar(x.get(c)) for c in cols] for x in sorted(obj, key=lambda x: x["rank"])[:MAX_ROWS]]
            found.append((where, cols, table))
            return
        if isinstance(obj, Mapping):
            for k, v in obj.items():
                visit(v, f"{where}.{k}", depth + 1)

    for r in report.results:
        visit(r.data, r.check, 0)
    return found


def findings_by_rank(report: Report) -> list[list[Inline]]:
    by: dict[int, list[str]] = {}
    hosts: dict[int, set[str]] = {}
    for f in report.findings():
        for rk in f.ranks:
            by.setdefault(rk, [])
            if f.code not in by[rk]:
                by[rk].append(f.code)
            hosts.setdefault(rk, set()).update(f.hosts)
    out: list[list[Inline]] = [[str(rk), ", ".join(sorted(hosts.get(rk, ()))) or "-", ", ".join(codes)]
                               for rk, codes in sorted(by.items())]
    return out[:MAX_ROWS]


def redaction_line(red: Mapping[str, Any]) -> list[Span]:
    secrets = red.get("secrets") or {}
    total = red.get("total", 0)
    out: list[Span] = [("b", "Redaction:"), ("", f" {total} secret{'s' if total != 1 else ''} replaced")]
    if secrets:
        out.append(("", " (" + ", ".join(f"{k} {v}" for k, v in secrets.items()) + ")"))
    if red.get("anonymized"):
        a = red.get("aliases") or {}
        out.append(("", "; hostnames, addresses and user names replaced by aliases ("
                    + ", ".join(f"{k.replace('_', ' ')}: {v}" for k, v in a.items() if v) + ")"))
    else:
        out.append(("", "; hostnames and addresses are shown as they are (use --anonymize to replace them)"))
    return out + [("", ".")]


def build(m: Material) -> tuple[str, list[Any]]:
    """The document: (title, blocks)."""
    rep = m.report
    v = rep.verdict()
    incomplete = rep.incomplete()
    title = (f"commdoctor report: {v.code} {v.title}" if v else
             "commdoctor report: incomplete" if incomplete else "commdoctor report: no errors or warnings")
    b: list[Any] = [H(1, title)]
    c = rep.counts()
    meta: list[Span] = [("", f"commdoctor {rep.tool_version}, mode "), ("code", rep.mode), ("", ", host "),
                        ("code", rep.host), ("", ", created "), ("code", rep.created),
                        ("", f". {len(rep.results)} check{'s' if len(rep.results) != 1 else ''}"
                         + (": " + ", ".join(f"{c[s.value]} {s.value.replace('_', ' ')}" for s in Status if c.get(s.value))
                            if rep.results else " ran") + ".")]
    b.append(P(meta))
    b.append(P(redaction_line(m.redaction)))
    if rep.interrupted:
        b.append(P([("b", "Interrupted:"), ("", " the run was stopped before every check finished.")]))

    b.append(H(2, "Verdict"))
    if v:
        vs: list[Span] = [("b", "Verdict:"), ("", " "), ("code", v.code), ("", f" {v.symbol}: {v.title} ("), _sev(v)]
        if v.cause:
            vs += [("", ", cause "), ("code", v.cause)]
        vs.append(("", ")"))
        if v.remedy:
            vs += [("", ". Remedy: "), ("", v.remedy.summary)]
        b.append(P(vs))
        if incomplete:
            b.append(P([("b", "Incomplete:"), ("", " " + "; ".join(incomplete) + ", so this may not be the whole story.")]))
    elif incomplete:
        b.append(P([("b", "Verdict: incomplete"), ("", " (no errors or warnings found, but " + "; ".join(incomplete) + ")")]))
    else:
        b.append(P([("b", "Verdict: healthy"), ("", " (no errors or warnings found by the checks that ran)")]))

    fs = rep.findings()
    b.append(H(2, "Findings"))
    if fs:
        b.append(Table(["#", "severity", "code", "title", "cause", "ranks", "hosts"],
                       [[str(i), [("b", f.severity.value)], [("code", f.code)], f.title, f.cause or "-",
                         ", ".join(map(str, f.ranks)) or "-", ", ".join(f.hosts) or "-"] for i, f in enumerate(fs, 1)]))
        for i, f in enumerate(fs, 1):
            b += _finding_blocks(i, f)
    else:
        b.append(P("No findings."))

    b.append(H(2, "Checks"))
    if not rep.results:
        b.append(P("No checks ran (--no-checks, or a report of material only)."))
    b.append(Table(["stage", "check", "status", "summary"],
                   [[r.stage.value, [("code", r.check)], r.status.value.replace("_", " "),
                     r.summary or r.reason or "-"] for r in rep.results]))
    if rep.nodes:
        from commdoctor.render.views import NODE_COLUMNS, node_rows

        b.append(H(2, "Nodes"))
        b.append(P(f"A multi-node run: node 0 gathered the results of {len(rep.nodes)} nodes; findings above name "
                   "the hosts they concern."))
        b.append(Table(list(NODE_COLUMNS), [list(r) for r in node_rows(rep)]))
    crashed = [r for r in rep.results if r.status is Status.CRASHED and r.error]
    for r in crashed:
        b.append(Details(f"{r.check} crashed: traceback", [Code(r.error)]))

    b.append(H(2, "Per-rank summary"))
    any_rank = False
    by_rank = findings_by_rank(rep)
    if by_rank:
        any_rank = True
        b.append(P([("b", "Findings by rank")]))
        b.append(Table(["rank", "hosts", "codes"], by_rank))
    for where, cols, rows in rank_tables(rep):
        any_rank = True
        b.append(P([("b", "From"), ("", " "), ("code", where)]))
        b.append(Table(cols, rows))
    if m.progress:
        any_rank = True
        b.append(P([("b", "From the hooks' progress records")]))
        cols = list(m.progress[0])
        b.append(Table(cols, [[_scalar(p.get(k)) for k in cols] for p in m.progress[:MAX_ROWS]]))
    firsts = [(x.name, ln, key, text) for x in m.logs for ln, key, text in x.first_errors]
    if firsts:
        any_rank = True
        b.append(P([("b", "First error of each rank in the logs")]))
        b.append(Table(["file", "line", "rank", "text"],
                       [[x, str(ln), key or "-", [("code", text[:300])]] for x, ln, key, text in firsts[:MAX_ROWS]]))
    if not any_rank:
        b.append(P("No per-rank data: the report holds no rank-level results; give --logs, --records or --stacks, "
                   "or a report from `commdoctor logs` or a hang diagnosis."))

    b.append(H(2, "Environment"))
    if m.system:
        b.append(Table(["fact", "value"], key_facts(m.system)))
        for name, data in (m.system.get("sections") or {}).items():
            b.append(Details(f"{name}", _section_blocks(name, data)))
    else:
        b.append(P("This host's environment was not collected (a saved report was given with --from; "
                   "add --system to collect the environment of the host running commdoctor)."))
    if rep.environment:
        extra = {k: val for k, val in rep.environment.items() if k not in ("system", "redaction")}
        if extra:
            b.append(Details("environment facts published by the checks", [Code(json.dumps(extra, indent=2, ensure_ascii=False, default=str), "json")]))

    if m.logs:
        b.append(H(2, "Logs"))
        b.append(Table(["file", "bytes", "lines", "first errors", "left out"],
                       [[[("code", x.name)], str(x.size), str(x.lines), str(len(x.first_errors)),
                         "; ".join(x.omitted) or "-"] for x in m.logs]))
        # The report stays small enough to paste into an issue; the bundle has every excerpt whole.
        for x in m.logs[:MAX_EXCERPTS_SHOWN]:
            b.append(Details(f"excerpt of {x.name}", [Code(_short_excerpt(x.text))]))
        if len(m.logs) > MAX_EXCERPTS_SHOWN:
            b.append(P(f"Excerpts of {len(m.logs) - MAX_EXCERPTS_SHOWN} more files are in the bundle (--bundle)."))
    if m.records:
        b.append(H(2, "Hook records"))
        b.append(Table(["file", "bytes", "lines"], [[[("code", x.name)], str(x.size), str(x.lines)] for x in m.records]))
    if m.stacks:
        b.append(H(2, "Stacks"))
        for name, text in m.stacks:
            b.append(Details(f"stacks: {name}", [Code(_head(text, 120))]))
    if m.fr:
        b.append(H(2, "Flight recorder"))
        frows: list[list[Inline]] = []
        for name, dump in m.fr:
            if isinstance(dump, Mapping) and "unreadable" in dump:
                frows.append([[("code", name)], "-", f"unreadable: {dump['unreadable']}"])
            else:
                entries = dump.get("entries") if isinstance(dump, Mapping) else None
                frows.append([[("code", name)], str(len(entries)) if isinstance(entries, list) else "-",
                             _scalar(dump.get("commdoctor_note")) if isinstance(dump, Mapping) and dump.get("commdoctor_note") else "-"])
        b.append(Table(["dump", "entries", "note"], frows))
    if m.cmdlines:
        b.append(H(2, "Command lines"))
        b.append(Code("\n".join(f"# {src}\n{cmd}" for src, cmd in m.cmdlines)))
    if m.problems:
        b.append(H(2, "Inputs not used"))
        b.append(UL(list(m.problems)))
    if m.attachments:
        b.append(H(2, "Bundle contents"))
        b.append(Table(["file", "bytes"], [[[("code", p)], str(n) if n >= 0 else "-"] for p, n in m.attachments]))
    b.append(H(2, "About this report"))
    b.append(P("Made by commdoctor report. Secrets (keys, tokens, passwords, URL credentials, authorization "
               "headers, private keys) are always replaced by [REDACTED:kind]; only their counts are reported. "
               "Read it before you post it: redaction finds known shapes of secrets, not every secret."))
    return title, b


def _head(text: str, n: int) -> str:
    lines = text.splitlines()
    return "\n".join(lines[:n]) + (f"\n[... {len(lines) - n} more lines in the bundle]" if len(lines) > n else "")


def _short_excerpt(text: str, limit: int = 100) -> str:
    """The first-error windows of an excerpt, trimmed for the report (the bundle has all of it)."""
    return _head(text, limit)


def render(m: Material) -> tuple[str, str]:
    """(markdown, html) for the same document."""
    title, blocks = build(m)
    return to_markdown(blocks), to_html(blocks, title)


def severity_counts(findings: Iterable[Finding]) -> dict[str, int]:
    return {s.value: sum(1 for f in findings if f.severity is s) for s in Severity}
