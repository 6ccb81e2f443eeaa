"""Bounded excerpts of large text files (logs, hook records) for a report bundle.

Promise: one sequential pass over each file, whatever its size (plain or
gzip), in fixed-size chunks: memory stays bounded and nothing is read twice.
What is kept: windows of lines around each line a finding cites, around the
first error of each rank (or host:pid) in the file, the head and the tail;
each line is cut at ``max_line`` characters and a file's excerpt at
``max_bytes``. Windows that do not fit are listed as omitted, never silently
dropped. Lines keep their 1-based numbers, so evidence ``file:line`` can be
found in the excerpt. Bad bytes are decoded with replacement, never raised.
Standard library only.
"""

from __future__ import annotations

import gzip
import os
import re
import stat
from dataclasses import dataclass, field
from typing import IO, Callable, Iterable, Mapping

from commdoctor.parsing.lines import RAW_TROUBLE, RAW_TROUBLE_PREFILTER, raw_owner
from commdoctor.core.safeopen import kind_of, open_input

CHUNK = 4 << 20  # bytes read at a time
CONTEXT_BYTES = 64 << 10  # how far back/forward a window may reach for its lines

#: What makes a line an error worth a window (the first per rank counts), and its literal prefilter:
#: commdoctor.parsing.lines knows a line.
ERROR_RE = RAW_TROUBLE
ERROR_PREFILTER = RAW_TROUBLE_PREFILTER
#: Hook records worth keeping whatever their place.
RECORD_RE = re.compile(rb'"kind"\s*:\s*"(?:header|mismatch|warning)"')


def line_key(line: bytes) -> str:
    """Which rank (or host:pid) a line belongs to, from its launcher or NCCL prefix; "" if none."""
    who = raw_owner(line)
    r = who.rank if who.rank is not None else who.local
    if r is not None:
        return f"rank {r}"
    if who.host is not None and who.pid is not None:
        return f"{who.host.decode('ascii', 'replace')}:{who.pid}"
    return ""


@dataclass
class Hit:
    line: int
    reason: str
    key: str = ""
    text: str = ""


@dataclass
class Block:
    """Consecutive lines of one file: ``lines[i]`` is line ``start + i``."""

    start: int
    lines: list[str]
    reasons: list[str] = field(default_factory=list)

    @property
    def end(self) -> int:
        return self.start + len(self.lines) - 1


@dataclass
class FileExcerpt:
    path: str
    size: int  # bytes read (uncompressed)
    lines: int
    blocks: list[Block]
    first_errors: list[Hit]
    cited: list[Hit]
    omitted: list[str]
    truncated_lines: int = 0
    error: str | None = None

    def text(self, label: str | None = None) -> str:
        """The excerpt as a file: a header, then each block with line numbers."""
        out = [f"# excerpt of {label or self.path}: {self.size} bytes, {self.lines} lines; "
               f"{sum(len(b.lines) for b in self.blocks)} lines kept"]
        if self.error:
            out.append(f"# could not read all of it: {self.error}")
        for o in self.omitted:
            out.append(f"# omitted (size bound): {o}")
        width = len(str(self.lines or 1))
        for b in self.blocks:
            out.append(f"\n# --- lines {b.start}-{b.end}: {'; '.join(b.reasons) or 'context'}")
            out += [f"{b.start + i:>{width}} | {ln}" for i, ln in enumerate(b.lines)]
        return "\n".join(out) + "\n"


def _open(path: str) -> IO[bytes]:
    # A named pipe waits (bounded) for a writer; a device or socket is refused: neither may hang a report.
    f = open_input(path)
    magic = f.peek(2)[:2] if hasattr(f, "peek") else b""
    if magic == b"\x1f\x8b" and f.seekable():
        return gzip.GzipFile(fileobj=f)  # type: ignore[return-value]
    return f


def _decode(raw: bytes, max_line: int) -> tuple[str, bool]:
    raw = raw.rstrip(b"\r\n")
    cut = len(raw) > max_line
    if cut:
        raw = raw[:max_line]
    # ANSI colour codes carry nothing a reader of a ticket needs.
    text = re.sub(r"\x1b\[[0-9;]*[A-Za-z]", "", raw.decode("utf-8", "replace"))
    text = "".join(ch if ch >= " " or ch == "\t" else "\ufffd" for ch in text)
    return (text + " [... line cut by commdoctor]" if cut else text), cut


class _Window:
    def __init__(self, anchor: int, reason: str, priority: int) -> None:
        self.anchor = anchor
        self.reason = reason
        self.priority = priority
        self.lines: dict[int, bytes] = {}
        self.need_after = 0


def excerpt_file(
    path: str,
    cited: Mapping[int, str] | None = None,
    cited_texts: Iterable[tuple[str, str]] = (),
    *,
    interest: re.Pattern[bytes] = ERROR_RE,
    prefilter: re.Pattern[bytes] | None = ERROR_PREFILTER,
    before: int = 10,
    after: int = 15,
    head: int = 25,
    tail: int = 40,
    max_keys: int = 16,
    max_line: int = 600,
    max_bytes: int = 256 << 10,
    on_bytes: Callable[[int], None] | None = None,
) -> FileExcerpt:
    """Read ``path`` once and keep what a reader of a ticket needs from it.

    ``cited`` maps line numbers to why they matter (a finding's code);
    ``cited_texts`` are (verbatim text, reason) pairs for evidence without a
    line number: the first line containing the text is kept.
    """
    cited = dict(cited or {})
    texts = [(t.strip().encode("utf-8", "replace")[:max_line], r) for t, r in cited_texts if t and t.strip()][:32]
    windows: list[_Window] = []
    pending: list[_Window] = []
    first: dict[str, Hit] = {}
    cited_hits: list[Hit] = []
    head_lines: list[bytes] = []
    tail_buf = b""
    line_no = 1  # number of the first line in the current chunk
    prev = b""  # the end of the previous chunk (whole lines), for context before a hit
    size = 0
    error = None
    try:
        f = _open(path)
    except OSError as e:
        return FileExcerpt(path, 0, 0, [], [], [], [], error=f"{e.strerror or e}")
    with f:
        carry = b""
        while True:
            try:
                data = f.read(CHUNK)
            except (OSError, EOFError, gzip.BadGzipFile) as e:  # truncated gzip: keep what we read
                if size == 0 and not carry and isinstance(f, gzip.GzipFile):
                    f.close()  # gzip's magic bytes but no gzip stream: read it as it is
                    f = open(path, "rb")
                    continue
                error = f"{type(e).__name__}: {e}"
                data = b""
            eof = not data
            size += len(data)
            if data and on_bytes is not None:
                on_bytes(len(data))  # a progress meter: a big log is read whole
            buf = carry + data
            if not eof:
                cut = buf.rfind(b"\n") + 1
                if cut == 0 and len(buf) < CHUNK * 2:
                    carry = buf  # one very long line: wait for its end, but only so long
                    continue
                if cut == 0:
                    cut = len(buf)
                chunk, carry = buf[:cut], buf[cut:]
            else:
                chunk, carry = buf, b""
            if not chunk:
                break
            n_lines = chunk.count(b"\n") + (0 if chunk.endswith(b"\n") else 1)
            # Windows still waiting for lines after their anchor take them from here.
            if pending:
                head_part = chunk[:CONTEXT_BYTES]
                complete = head_part.split(b"\n")
                if head_part.endswith(b"\n") or len(chunk) > CONTEXT_BYTES:
                    complete = complete[:-1]
                for w in pending:
                    take = complete[:w.need_after]
                    for i, ln in enumerate(take):
                        w.lines[line_no + i] = ln
                    short = len(take) < w.need_after and len(chunk) <= CONTEXT_BYTES
                    w.need_after = w.need_after - len(take) if short else 0
                pending = [w for w in pending if w.need_after > 0]
            if line_no == 1:
                parts = chunk[:CONTEXT_BYTES].split(b"\n")
                if chunk.endswith(b"\n") or len(chunk) > CONTEXT_BYTES:
                    parts = parts[:-1]  # an empty piece after the last newline, or a line cut short
                head_lines = parts[:head]
            anchors: list[tuple[int, int, str, int]] = []  # (offset of line start, line number, reason, priority)
            # Cited line numbers in this chunk.
            want = sorted(n for n in cited if line_no <= n < line_no + n_lines)
            if want:
                pos, cur = 0, line_no
                for n in want:
                    while cur < n:
                        pos = chunk.find(b"\n", pos) + 1
                        cur += 1
                    anchors.append((pos, n, cited[n], 0))
            for t, reason in list(texts):
                i = chunk.find(t)
                if i >= 0:
                    s = chunk.rfind(b"\n", 0, i) + 1
                    anchors.append((s, line_no + chunk.count(b"\n", 0, s), reason, 0))
                    texts.remove((t, reason))
            # First error per rank.
            if len(first) < max_keys:
                pos, cur = 0, line_no
                for m in (prefilter or interest).finditer(chunk):
                    s = chunk.rfind(b"\n", 0, m.start()) + 1
                    if s < pos:
                        continue  # a second match on a line already seen
                    end = chunk.find(b"\n", s)
                    line = chunk[s:end if end >= 0 else len(chunk)]
                    if prefilter is not None and not interest.search(line):
                        continue
                    cur += chunk.count(b"\n", pos, s)
                    pos = s
                    key = line_key(line)
                    if key not in first:
                        first[key] = Hit(cur, f"first error{' of ' + key if key else ''}", key, _decode(line, max_line)[0])
                        anchors.append((s, cur, first[key].reason, 1))
                        if len(first) >= max_keys:
                            break
            for s, n, reason, prio in anchors:
                w = _Window(n, reason, prio)
                back = chunk[max(0, s - CONTEXT_BYTES):s]
                pieces = back.split(b"\n")[:-1] if back else []
                if s >= CONTEXT_BYTES:
                    pieces = pieces[1:]  # the first piece may start mid-line
                else:
                    pieces = (prev.split(b"\n")[:-1] if prev else []) + pieces
                blines = pieces[-before:] if before else []
                for i, ln in enumerate(blines):
                    w.lines[n - len(blines) + i] = ln
                fwd_data = chunk[s:s + CONTEXT_BYTES]
                fwd = fwd_data.split(b"\n")
                if fwd_data.endswith(b"\n") or s + CONTEXT_BYTES < len(chunk):
                    fwd = fwd[:-1]  # nothing after the last newline, or a line cut short
                got = fwd[:after + 1]
                for i, ln in enumerate(got):
                    w.lines[n + i] = ln
                if len(got) < after + 1 and s + CONTEXT_BYTES >= len(chunk):
                    w.need_after = after + 1 - len(got)
                    pending.append(w)
                windows.append(w)
                if prio == 0:
                    cited_hits.append(Hit(n, reason, line_key(w.lines.get(n, b"")), _decode(w.lines.get(n, b""), max_line)[0]))
            keep = chunk[-CONTEXT_BYTES:]
            prev = keep[keep.find(b"\n") + 1:] if len(chunk) > CONTEXT_BYTES else chunk
            tail_keep = (tail_buf + chunk)[-CONTEXT_BYTES:]
            tail_buf = tail_keep
            line_no += chunk.count(b"\n")
            if eof:
                break
    f.close()  # the plain-file reopen above is not the object the with-block closes
    total = line_no - 1 + (0 if not tail_buf or tail_buf.endswith(b"\n") else 1)
    # The tail: the last lines, numbered back from the end.
    tl = tail_buf.split(b"\n")
    if tl and tl[-1] == b"":
        tl = tl[:-1]
    tl = tl[1:] if len(tail_buf) >= CONTEXT_BYTES and len(tl) > tail else tl  # first may be partial
    tail_lines = tl[-tail:]
    tw = _Window(total, "tail", 3)
    for i, ln in enumerate(tail_lines):
        tw.lines[total - len(tail_lines) + 1 + i] = ln
    hw = _Window(1, "head", 2)
    for i, ln in enumerate(head_lines[:total]):
        hw.lines[i + 1] = ln
    windows += [hw, tw]
    return _assemble(path, size, total, windows, list(first.values()), cited_hits, max_line, max_bytes,
                     [f"cited text not found: {r}" for _, r in texts], error)


def _assemble(path: str, size: int, total: int, windows: list[_Window], first: list[Hit], cited: list[Hit],
              max_line: int, max_bytes: int, notes: list[str], error: str | None) -> FileExcerpt:
    kept: dict[int, str] = {}
    reasons: dict[int, list[str]] = {}
    used = 0
    omitted = list(notes)
    cut_lines = 0
    for w in sorted(windows, key=lambda w: (w.priority, w.anchor)):
        new = {n: ln for n, ln in w.lines.items() if n not in kept and n >= 1}
        decoded = {n: _decode(ln, max_line) for n, ln in new.items()}
        cost = sum(len(t) + 10 for t, _ in decoded.values())
        if used + cost > max_bytes and w.lines:
            omitted.append(f"{w.reason} (line {w.anchor})")
            continue
        used += cost
        for n, (t, c) in decoded.items():
            kept[n] = t
            cut_lines += c
        if w.lines:
            reasons.setdefault(w.anchor, []).append(f"{w.reason} (line {w.anchor})" if w.reason not in ("head", "tail") else w.reason)
    blocks: list[Block] = []
    for n in sorted(kept):
        if blocks and n == blocks[-1].end + 1:
            blocks[-1].lines.append(kept[n])
        else:
            blocks.append(Block(n, [kept[n]]))
        for r in reasons.get(n, []):
            blocks[-1].reasons.append(r)
    # A reason anchored at a line not kept (e.g. head of an empty file) stays out.
    return FileExcerpt(path, size, total, blocks, sorted(first, key=lambda h: h.line), cited, omitted, cut_lines, error)


def list_files(paths: Iterable[str], limit: int = 256) -> tuple[list[str], list[str]]:
    """Files named, or found (recursively, sorted) under folders named; and what could not be used."""
    files: list[str] = []
    problems: list[str] = []
    for p in paths:
        if os.path.isdir(p):
            for root, dirs, names in os.walk(p):
                dirs.sort()
                for n in sorted(names):
                    full = os.path.join(root, n)
                    try:
                        mode = os.stat(full).st_mode
                    except OSError as e:
                        problems.append(f"{full}: {e.strerror or e}" + (" (a dangling symlink)" if os.path.islink(full) else ""))
                        continue
                    if stat.S_ISREG(mode):
                        files.append(full)
                    else:  # found by a walk, a pipe or socket is not the user's log: name it, do not wait on it
                        problems.append(f"{full}: {kind_of(mode)}, left out")
        elif os.path.isfile(p):
            files.append(p)
        elif os.path.exists(p):
            mode = os.stat(p).st_mode
            if stat.S_ISFIFO(mode):  # named on the command line: read it (open_input bounds the wait)
                files.append(p)
            else:
                problems.append(f"{p}: {kind_of(mode)}, not a file")
        else:
            problems.append(f"{p}: no such file or folder")
    seen: set[str] = set()
    out = []
    for f in files:
        real = os.path.realpath(f)
        if real not in seen:
            seen.add(real)
            out.append(f)
    if len(out) > limit:
        problems.append(f"{len(out) - limit} more files left out (at most {limit})")
    return out[:limit], problems
