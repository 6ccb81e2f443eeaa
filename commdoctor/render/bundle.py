"""Gather a report's raw material, make it safe to share, and pack it deterministically.

Promise: ``gather`` reads every input under size bounds (excerpts, not whole
files) and never raises on bad input: an unreadable input becomes a line in
``Material.problems``. ``sanitize`` passes every string through one
``Redactor`` (discovery first, so the anonymization mapping is complete before
anything is written and is the same for every file). ``write_bundle`` writes a
tar.gz whose bytes depend only on its content: sorted names, fixed owner and
mode, every mtime (tar and gzip) set to the report's ``created`` time.
Flight-recorder pickles are read with an unpickler that builds only plain
containers and scalars, never classes or functions.
"""

from __future__ import annotations

import gzip
import io
import json
import os
import re
import tarfile
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Callable, Iterable, Mapping, Sequence

from commdoctor.core import records as hook_records
from commdoctor.core.model import Report
from commdoctor.render import excerpts
from commdoctor.render.redact import Redactor
from commdoctor.render.report import Excerpt, Material

ROOT = "commdoctor-bundle"


@dataclass
class Limits:
    """Size bounds (bytes of text before compression)."""

    log_file: int = 256 << 10
    logs_total: int = 3 << 20
    record_file: int = 128 << 10
    records_total: int = 1 << 20
    stack_file: int = 256 << 10
    stacks_total: int = 1 << 20
    fr_file: int = 512 << 10
    fr_total: int = 2 << 20
    max_files: int = 256


@dataclass
class Raw:
    """Material as read, before redaction."""

    report: Report
    system: dict[str, Any] | None = None
    logs: list[tuple[str, excerpts.FileExcerpt]] = field(default_factory=list)
    records: list[tuple[str, excerpts.FileExcerpt]] = field(default_factory=list)
    progress: list[dict[str, Any]] = field(default_factory=list)
    stacks: list[tuple[str, str]] = field(default_factory=list)
    fr: list[tuple[str, Any]] = field(default_factory=list)
    cmdlines: list[tuple[str, str]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


# -- gathering -------------------------------------------------------------------


def _cited(report: Report) -> list[tuple[str, int | None, str, str]]:
    """(source, line, text, code) of every evidence line the findings cite."""
    out = []
    for f in report.findings():
        for e in f.evidence:
            out.append((e.source, e.line, e.text, f.code))
    return out


def _matches(source: str, path: str) -> bool:
    if not source or source.startswith(("probe:", "env", "stack:", "hooks:")):
        return False
    if os.path.realpath(source) == os.path.realpath(path):
        return True
    s, p = source.replace("\\", "/").lstrip("./"), path.replace("\\", "/")
    return p.endswith("/" + s) or os.path.basename(s) == os.path.basename(p) and "/" not in s


def _budgeted(paths: Sequence[str], per_file: int, total: int) -> Iterable[tuple[str, int]]:
    left = total
    for p in paths:
        yield p, max(8 << 10, min(per_file, left))
        left = max(0, left - per_file)


def _list(paths: Sequence[str], limit: int) -> tuple[list[str], list[str]]:
    """``excerpts.list_files``, less the links found in a folder that point out of it.

    A report is made to be shared: a ``latest.log`` link to ``/etc/passwd`` or ``~/.netrc``
    in a log folder must not carry that file into it. Such links are listed (so the user
    sees what was left out and why) and never opened. A file named on the command line
    is the user's own choice and is read even if it is a link.
    """
    files, problems = excerpts.list_files(paths, limit)
    folders = [(os.path.abspath(p), os.path.realpath(p)) for p in paths if os.path.isdir(p)]
    kept = []
    for f in files:
        full = os.path.abspath(f)
        home = next(((a, r) for a, r in folders if full.startswith(a.rstrip(os.sep) + os.sep)), None)
        if home is not None:
            real = os.path.realpath(f)
            if not real.startswith(home[1].rstrip(os.sep) + os.sep):
                problems.append(f"{f}: a link to a file outside {home[0]}, listed and not read")
                continue
        kept.append(f)
    return kept, problems


def gather(report: Report, system: Mapping[str, Any] | None = None, *, logs: Sequence[str] = (),
           records: Sequence[str] = (), stacks: Sequence[str] = (), fr: Sequence[str] = (),
           cmdlines: Sequence[str] = (), limits: Limits | None = None,
           on_bytes: Callable[[int], None] | None = None) -> Raw:
    """Read the report's material under ``limits``; ``on_bytes(n)`` as each n bytes are read (a meter)."""
    lim = limits or Limits()
    tick = on_bytes or (lambda n: None)
    raw = Raw(report=report, system=dict(system) if system else None)
    cited = _cited(report)

    files, problems = _list(logs, lim.max_files)
    raw.problems += [f"--logs {p}" for p in problems]
    for path, budget in _budgeted(files, lim.log_file, lim.logs_total):
        lines = {ln: code for src, ln, _, code in cited if ln and _matches(src, path)}
        texts = [(t, code) for src, ln, t, code in cited if not ln and _matches(src, path)]
        x = excerpts.excerpt_file(path, lines, texts, max_bytes=budget, on_bytes=on_bytes)
        if x.error:
            raw.problems.append(f"--logs {path}: {x.error}")
        raw.logs.append((path, x))

    rfiles, problems = _list(records, lim.max_files)
    raw.problems += [f"--records {p}" for p in problems]
    for path, budget in _budgeted(rfiles, lim.record_file, lim.records_total):
        x = excerpts.excerpt_file(path, interest=excerpts.RECORD_RE, prefilter=None, before=0, after=0,
                                  head=5, tail=60, max_keys=64, max_line=4000, max_bytes=budget, on_bytes=on_bytes)
        raw.records.append((path, x))
    if rfiles:
        try:
            prog = hook_records.read_progress(rfiles)
            raw.progress = [_progress_row(p) for _, p in sorted(prog.items())]
        except (OSError, ValueError) as e:
            raw.problems.append(f"--records: {e}")

    sfiles, problems = _list(stacks, lim.max_files)
    raw.problems += [f"--stacks {p}" for p in problems]
    for path, budget in _budgeted(sfiles, lim.stack_file, lim.stacks_total):
        try:
            with open(path, "rb") as f:
                data = f.read(budget + 1)
            tick(_size(path))
            text = data[:budget].decode("utf-8", "replace")
            if len(data) > budget:
                text += f"\n[... cut at {budget} bytes by commdoctor]"
            raw.stacks.append((path, text))
        except OSError as e:
            raw.problems.append(f"--stacks {path}: {e.strerror or e}")

    ffiles, problems = _list(fr, lim.max_files)
    raw.problems += [f"--fr {p}" for p in problems]
    for path, budget in _budgeted(ffiles, lim.fr_file, lim.fr_total):
        raw.fr.append((path, read_fr_dump(path, budget)))
        tick(_size(path))

    if report.argv:
        raw.cmdlines.append(("the command that made the report", " ".join(report.argv)))
    for c in cmdlines:
        raw.cmdlines.append(("given with --cmdline", c))
    procs = ((system or {}).get("sections", {}).get("launcher", {}) or {}).get("job_processes")
    if isinstance(procs, list):
        for p in procs:
            raw.cmdlines.append((f"running process {p.get('pid')} ({p.get('role')})", p.get("cmdline", "")))
    return raw


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def material_bytes(*groups: Sequence[str], max_files: int = Limits.max_files) -> int:
    """The bytes ``gather`` will read from these inputs (files and folders): a meter's total."""
    total = 0
    for paths in groups:
        total += sum(_size(f) for f in _list(paths, max_files)[0])
    return total


def _progress_row(p: hook_records.RankProgress) -> dict[str, Any]:
    def call(c: hook_records.CallRecord | None) -> str:
        if c is None:
            return "-"
        return f"{c.op} #{c.seq} ({c.group})" + (f" at {c.site}" if c.site else "")

    return {"rank": p.rank, "host": p.host, "pid": p.pid, "last entered": call(p.last_entered),
            "last completed": call(p.last_completed), "in flight": call(p.in_flight),
            "mismatches": len(p.mismatches), "warnings": len(p.warnings), "bad lines": p.bad_lines}


def read_fr_dump(path: str, budget: int) -> Any:
    """A flight-recorder dump (torch's pickle or JSON form) as JSON-safe data, trimmed to ``budget``.
    Read by the one flight-recorder reader (commdoctor.loaders.flight_recorder: no globals, a budget
    of elements); a file it refuses becomes a note."""
    from commdoctor.loaders.flight_recorder import read_plain

    try:
        # A real dump's JSON takes about 20 characters per element (its keys, names and frames): what passes
        # budget // 8 elements is over the size bound anyway, and its newest entries are what is kept.
        obj = read_plain(path, max_elements=budget // 8)
    except OSError as e:
        return {"unreadable": e.strerror or str(e)}
    except ValueError as e:
        return {"unreadable": f"not a flight-recorder dump commdoctor can read ({str(e)[:200]})"}
    text = json.dumps(obj, ensure_ascii=False)
    if len(text) > budget and isinstance(obj, dict) and isinstance(obj.get("entries"), list):
        n = len(obj["entries"])
        keep = n
        while keep > 1 and len(text) > budget:
            keep //= 2
            trimmed = dict(obj, entries=obj["entries"][-keep:])
            text = json.dumps(trimmed, ensure_ascii=False)
        obj = dict(obj, entries=obj["entries"][-keep:], commdoctor_note=f"kept the last {keep} of {n} entries (size bound)")
    elif len(text) > budget:
        obj = {"unreadable": f"dump of {len(text)} characters is over the {budget} byte bound and has no entries list to trim"}
    return obj


# -- sanitizing --------------------------------------------------------------------


def _label(path: str) -> str:
    return path


def redact_lines(lines: list[str], red: Redactor) -> list[str]:
    """Redact lines one by one, keeping their count; PEM blocks that span lines go whole."""
    out: list[str] = []
    in_key = False
    for i, ln in enumerate(lines):
        if re.search(r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY-----", ln):
            in_key = not re.search(r"-----END[A-Z0-9 ]*PRIVATE KEY-----", ln)
            red.counts["private-key"] += 1
            out.append(re.sub(r"-----BEGIN.*", "[REDACTED:private-key]", red.text(ln.split("-----BEGIN")[0]) + "-----BEGIN"))
            continue
        if in_key:
            if re.search(r"-----END[A-Z0-9 ]*PRIVATE KEY-----", ln):
                in_key = False
            out.append("[REDACTED:private-key]")
            continue
        if re.search(r"-----END[A-Z0-9 ]*PRIVATE KEY-----", ln):
            # The start of this block was before the excerpt: blank what we already kept of it.
            j = len(out) - 1
            while j >= 0 and re.fullmatch(r"\s*(?:\d+ \| )?[A-Za-z0-9+/=]*\s*|\[REDACTED:[a-z0-9-]+\]", out[j]):
                out[j] = "[REDACTED:private-key]"
                j -= 1
            red.counts["private-key"] += 1
            out.append("[REDACTED:private-key]")
            continue
        out.append(red.text(ln))
    return out


def _excerpt_text(x: excerpts.FileExcerpt, label: str, red: Redactor) -> str:
    head = x.text(label).split("\n# --- ", 1)[0]
    parts = [red.text(head).rstrip("\n")]
    width = len(str(x.lines or 1))
    for b in x.blocks:
        reasons = "; ".join(b.reasons) or "context"
        parts.append(f"\n# --- lines {b.start}-{b.end}: {red.text(reasons)}")
        lines = redact_lines(list(b.lines), red)
        parts += [f"{b.start + i:>{width}} | {ln}" for i, ln in enumerate(lines)]
    return "\n".join(parts) + "\n"


def sanitize(raw: Raw, anonymize: bool = False) -> tuple[Material, Redactor]:
    red = Redactor(anonymize=anonymize)
    rep_dict = raw.report.to_dict()
    # Discovery first: every host, user and address the material holds.
    red.discover(rep_dict, raw.system or {})
    for path, x in raw.logs + raw.records:
        red.discover(path)
        for b in x.blocks:
            red.discover("\n".join(b.lines))
    for path, text in raw.stacks:
        red.discover(path, text)
    for path, dump in raw.fr:
        red.discover(path, dump)
    for src, cmd in raw.cmdlines:
        red.discover(cmd)
    red.discover(raw.progress)

    report = Report.from_dict(red.obj(rep_dict))
    system = red.obj(raw.system) if raw.system else None
    m = Material(report=report, system=system)
    for path, x in raw.logs:
        label = red.text(_label(path))
        m.logs.append(Excerpt(name=label, size=x.size, lines=x.lines, text=_excerpt_text(x, label, red),
                              first_errors=[(h.line, red.text(h.key), redact_lines([h.text], red)[0]) for h in x.first_errors],
                              omitted=[red.text(o) for o in x.omitted]))
    for path, x in raw.records:
        label = red.text(_label(path))
        m.records.append(Excerpt(name=label, size=x.size, lines=x.lines, text=_excerpt_text(x, label, red),
                                 omitted=[red.text(o) for o in x.omitted]))
    m.progress = red.obj(raw.progress)
    m.stacks = [(red.text(p), "\n".join(redact_lines(t.split("\n"), red))) for p, t in raw.stacks]
    m.fr = [(red.text(p), red.obj(d)) for p, d in raw.fr]
    m.cmdlines = [(red.text(s), red.text(c)) for s, c in raw.cmdlines]
    m.problems = [red.text(p) for p in raw.problems]
    return m, red


# -- writing -----------------------------------------------------------------------


def epoch_of(created: str) -> int:
    """The report's creation time as a Unix time (0 when it cannot be read): the bundle's mtime."""
    try:
        return max(0, int(datetime.fromisoformat(created.replace("Z", "+00:00")).timestamp()))
    except (ValueError, AttributeError):
        return 0


def _safe_name(i: int, label: str) -> str:
    base = os.path.basename(label.rstrip("/")) or "file"
    base = re.sub(r"[^A-Za-z0-9._-]+", "_", base)[:80]
    return f"{i:02d}-{base}"


def bundle_files(m: Material, report_md: str, report_html: str, report_json: str) -> dict[str, bytes]:
    """Every file of the bundle (name inside the bundle -> bytes)."""
    files: dict[str, str] = {
        "report.md": report_md,
        "report.html": report_html,
        "report.json": report_json,
    }
    if m.system is not None:
        files["system.json"] = json.dumps(m.system, indent=2, ensure_ascii=False) + "\n"
    for i, x in enumerate(m.logs, 1):
        files[f"logs/{_safe_name(i, x.name)}.excerpt.txt"] = x.text
    for i, x in enumerate(m.records, 1):
        files[f"records/{_safe_name(i, x.name)}.excerpt.txt"] = x.text
    for i, (name, text) in enumerate(m.stacks, 1):
        files[f"stacks/{_safe_name(i, name)}.txt"] = text
    for i, (name, dump) in enumerate(m.fr, 1):
        files[f"flight-recorder/{_safe_name(i, name)}.json"] = json.dumps(dump, indent=1, ensure_ascii=False) + "\n"
    if m.cmdlines:
        files["cmdlines.txt"] = "".join(f"# {s}\n{c}\n\n" for s, c in m.cmdlines)
    readme = [
        "# commdoctor bundle\n",
        "Made by `commdoctor report --bundle`. Every file was redacted: secrets are replaced by",
        "`[REDACTED:kind]`. Logs and hook records are excerpts (windows of lines around cited evidence",
        "and first errors, plus head and tail), with their original line numbers.\n",
        "| file | bytes |", "|---|---|",
    ]
    readme += [f"| `{n}` | {len(t.encode())} |" for n, t in sorted(files.items())]
    files["README.md"] = "\n".join(readme) + "\n"
    return {f"{ROOT}/{k}": v.encode("utf-8") for k, v in files.items()}


def write_bundle(path: str, files: Mapping[str, bytes], mtime: int) -> int:
    """Write a reproducible tar.gz; returns its size in bytes."""
    buf = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buf, mtime=mtime, compresslevel=9) as gz:
        with tarfile.open(fileobj=gz, mode="w", format=tarfile.GNU_FORMAT) as tar:
            dirs = sorted({os.path.dirname(n) for n in files} | {ROOT})
            for d in dirs:
                ti = tarfile.TarInfo(d)
                ti.type, ti.mode, ti.mtime = tarfile.DIRTYPE, 0o755, mtime
                tar.addfile(ti)
            for name in sorted(files):
                data = files[name]
                ti = tarfile.TarInfo(name)
                ti.size, ti.mode, ti.mtime = len(data), 0o644, mtime
                tar.addfile(ti, io.BytesIO(data))
    out = buf.getvalue()
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(out)
    os.replace(tmp, path)
    return len(out)
