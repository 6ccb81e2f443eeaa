"""Find the few lines worth parsing in a byte stream, in constant memory.

Promise: ``scan(stream)`` reads fixed-size blocks and yields ``(line_number,
raw_bytes)`` for every line that contains one of the keywords of
commdoctor.parsing.signatures (and, separately, every *new* peer-to-peer
transport line), never holding more than one block plus one cut line. A line
longer than ``MAX_LINE`` bytes is cut there and the rest of it skipped (and
counted); a stream without a single newline is handled the same way. The
multi-keyword search runs in C: Hyperscan when it is installed, else one
regular expression per keyword group with the standard library.

Why blocks and not ``for line in f``: a gigabyte of NCCL INFO output is about
eight million lines, and even a bare Python loop over them costs more than
the whole budget. Real problems are in a handful of lines; the search finds
them at memory speed and only those are decoded.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import BinaryIO, Callable, Iterator

from commdoctor.parsing.lines import MAX_LINE
from commdoctor.parsing.signatures import keywords

BLOCK = 4 << 20

# Peer-to-peer transport lines ("Channel 00/0 : 0[0] -> 1[1] via P2P/IPC/read", "Ring 00 : 2[3d000] ->
# 3[3e000] via direct shared memory", NCCL 2.0's "0 -> 1 via P2P/IPC", "CollNet 00/0 : 3 [send] via
# COLLNET/..."). They repeat for every channel; a set of what they say is all the model keeps.
TRANSPORT_RES = tuple(
    # One expression per leading word, each starting with a literal (the regex engine then finds
    # candidates with a fast substring search), one unbounded but linear group: the rest of the line.
    re.compile(word + rb" \d+(?:/\d+)? : ?(\d[^\r\n]*)")
    for word in (b"Channel", b"Ring", b"CollNet")
)
TRANSPORT_OLD_RE = re.compile(rb"INFO (\d+ -> \d+ via [^\r\n]*)")


@dataclass
class ScanStats:
    bytes: int = 0
    lines: int = 0
    candidates: int = 0
    overlong: int = 0  # lines cut at MAX_LINE
    nul_bytes: int = 0


#: Patterns whose mere presence in a block decides whether (and which) transport expressions run
#: on it: the leading words of transport lines (the fourth is NCCL 2.0's "INFO 0 -> 1 via P2P/IPC"),
#: a communicator being set up, and each kind of transport.
FLAG_PATTERNS: tuple[bytes, ...] = (
    rb"Channel ", rb"Ring ", rb"CollNet ", rb"INFO \d+ -> \d+ via ", rb" n[Rr]anks \d",
    rb"via P2P/IPC", rb"via P2P/CUMEM", rb"via P2P/direct", rb"via P2P", rb"via SHM", rb"via direct shared memory",
    rb"via NET/IB", rb"via NET/Socket", rb"via NET/", rb"via COLLNET", rb"via NVLS",
)
FLAG_COMM = 4
FLAG_KINDS = frozenset(range(5, len(FLAG_PATTERNS)))
_FLAG_RES = tuple(re.compile(p) for p in FLAG_PATTERNS)


class Prefilter:
    """Offsets of keyword hits in a block, and which FLAG_PATTERNS occur in it. Subclasses pick the engine."""

    name = "base"

    def hits(self, block: bytes, tick: Callable[[int], None] | None = None) -> tuple[list[int], set[int]]:
        """``tick(n)``, when given, is called as the search gets through ``n`` more bytes of the block."""
        raise NotImplementedError  # pragma: no cover - abstract


class HyperscanPrefilter(Prefilter):
    """All keywords (and the flag patterns, reported once each) in one pass, in C at memory speed."""

    name = "hyperscan"

    def __init__(self, words: tuple[str, ...]) -> None:
        import hyperscan

        self._n = len(words)
        exprs = [re.escape(w).encode() for w in words] + list(FLAG_PATTERNS)
        flags = [0] * len(words) + [hyperscan.HS_FLAG_SINGLEMATCH] * len(FLAG_PATTERNS)
        self._db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
        self._db.compile(expressions=exprs, ids=list(range(len(exprs))), elements=len(exprs), flags=flags)

    def hits(self, block: bytes, tick: Callable[[int], None] | None = None) -> tuple[list[int], set[int]]:
        out: list[int] = []
        seen: set[int] = set()
        add, n = out.append, self._n

        def on_match(id_: int, _from: int, to: int, _flags: int, _ctx: object) -> None:
            if id_ < n:
                add(to)
            else:
                seen.add(id_ - n)

        self._db.scan(block, match_event_handler=on_match)
        if tick is not None:
            tick(len(block))  # a block takes milliseconds here: once per block is often enough
        return out, seen


class StdlibPrefilter(Prefilter):
    """Pure Python fallback (no wheel for this platform): one alternation run by ``re``; about 20x slower."""

    name = "re"

    def __init__(self, words: tuple[str, ...]) -> None:
        self._re = re.compile(b"|".join(re.escape(w.encode()) for w in sorted(words, key=len, reverse=True)))

    #: Bytes searched between two ticks: a 4 MiB block takes seconds with ``re``, too long for a meter.
    STEP = 256 << 10

    def hits(self, block: bytes, tick: Callable[[int], None] | None = None) -> tuple[list[int], set[int]]:
        if tick is None:
            return [m.end() for m in self._re.finditer(block)], {i for i, f in enumerate(_FLAG_RES) if f.search(block)}
        # Line-aligned stretches: no keyword or flag pattern spans a newline, so the hits are the
        # same as one search of the whole block.
        out: list[int] = []
        flags: set[int] = set()
        start, n = 0, len(block)
        while start < n:
            nl = block.find(b"\n", min(start + self.STEP, n) - 1)
            end = n if nl == -1 else nl + 1
            out += [m.end() for m in self._re.finditer(block, start, end)]
            flags.update(i for i, f in enumerate(_FLAG_RES) if i not in flags and f.search(block, start, end))
            tick(end - start)
            start = end
        return out, flags


def make_prefilter(engine: str = "auto", words: tuple[str, ...] | None = None) -> Prefilter:
    """The fastest engine available (``engine``: auto, hyperscan, re)."""
    words = words or keywords()
    if engine in ("auto", "hyperscan"):
        try:
            return HyperscanPrefilter(words)
        except ImportError:
            if engine == "hyperscan":
                raise
    return StdlibPrefilter(words)


@dataclass
class Scanner:
    """Yields candidate lines of one stream; ``transports`` collects transport lines seen."""

    prefilter: Prefilter
    on_transport: Callable[[int, bytes, bytes], None] | None = None
    #: Called with the bytes of each stretch searched (a progress meter: a 300 MB file is one long scan).
    on_block: Callable[[int], None] | None = None
    stats: ScanStats = field(default_factory=ScanStats)
    _seen_transports: set[bytes] = field(default_factory=set)
    _kinds_seen: set[int] = field(default_factory=set)

    def scan(self, stream: BinaryIO, block_size: int = BLOCK) -> Iterator[tuple[int, bytes]]:
        st = self.stats
        carry = b""
        skipping = False  # inside the unkept tail of an over-long line
        line_no = 1  # number of the first line in the current block
        cr_lines = None  # decided on the first block: a file ending its lines with a lone CR
        while True:
            data = stream.read(block_size)
            final = not data
            if cr_lines is None and data:
                # CR without any LF in the first block: lines end with CR (classic Mac, some Windows tools).
                # Read CR as the end of a line (same length, so byte counts hold); otherwise the whole file
                # is one line, cut at MAX_LINE, and every failure after its first 16 kB is lost.
                cr_lines = b"\r" in data and b"\n" not in data
            if cr_lines and data:
                data = data.replace(b"\r", b"\n")
            if skipping:
                nl = data.find(b"\n")
                st.bytes += len(data)
                if nl == -1:
                    if final:
                        break
                    continue
                data = data[nl + 1:]  # the cut line was already counted when its head was parsed
                st.bytes -= len(data)  # counted again below
                skipping = False
            st.bytes += len(data)
            buf = carry + data if carry else data
            if final:
                if not buf:
                    break
                body, carry = buf, b""
            else:
                cut = buf.rfind(b"\n")
                if cut == -1:
                    if len(buf) > MAX_LINE:
                        # One line longer than we keep: parse its head, skip the rest.
                        body, carry, skipping = buf[:MAX_LINE] + b"\n", b"", True
                        st.overlong += 1
                    else:
                        carry = buf
                        continue
                else:
                    body, carry = buf[:cut + 1], buf[cut + 1:]
                    if len(carry) > MAX_LINE:
                        st.overlong += 1
                        body, carry, skipping = body + carry[:MAX_LINE] + b"\n", b"", True
            yield from self._block(body, line_no)
            n = body.count(b"\n")
            if body and not body.endswith(b"\n"):
                n += 1
            line_no += n
            st.lines += n
            if final:
                break

    def _block(self, body: bytes, first_line: int) -> Iterator[tuple[int, bytes]]:
        st = self.stats
        if b"\x00" in body:
            st.nul_bytes += body.count(b"\x00")
        hits, flags = self.prefilter.hits(body, self.on_block)
        if self.on_transport is not None and flags & {0, 1, 2, 3} and self._wanted(flags, first_line == 1):
            self._transports(body, first_line, flags)
        if not hits:
            return
        pos_line, pos = first_line, 0
        last_start = -1
        rfind, find, count = body.rfind, body.find, body.count
        for end in sorted(hits) if len(hits) > 1 else hits:
            start = rfind(b"\n", 0, end) + 1
            if start == last_start:
                continue
            if start < pos:  # hits are sorted, so this cannot happen; keep the invariant anyway
                continue
            pos_line += count(b"\n", pos, start)
            pos = start
            last_start = start
            stop = find(b"\n", end)
            if stop == -1:
                stop = len(body)
            st.candidates += 1
            yield pos_line, body[start:stop]

    def _wanted(self, flags: set[int], first_block: bool) -> bool:
        """Whether this block may say something new about transports.

        Transport lines repeat for every channel and, in long runs, every time a
        connection is re-established; what they say changes only when a
        communicator is set up or a kind of transport appears that this stream
        has not shown yet. Other blocks are not searched for them (a new peer
        pair over an already-seen transport, connected lazily mid-run, is then
        missed from the pair list: documented in docs/logs.md).
        """
        kinds = flags & FLAG_KINDS
        if first_block or FLAG_COMM in flags or not kinds <= self._kinds_seen or (3 in flags and not kinds):
            self._kinds_seen |= kinds
            return True
        return False

    @staticmethod
    def _transport_res(flags: set[int]) -> list[re.Pattern[bytes]]:
        out = [TRANSPORT_RES[i] for i in (0, 1, 2) if i in flags]
        if 3 in flags:
            out.append(TRANSPORT_OLD_RE)
        return out

    def _transports(self, body: bytes, first_line: int, flags: set[int]) -> None:
        # One pass per pattern: the first time a key shows in this stream, its line is reported
        # (in pattern order, then position). The regex scan of the block itself remains the main
        # per-file cost at job scale (bench/README.md, "Logs at job scale").
        seen = self._seen_transports
        assert self.on_transport is not None
        report = self.on_transport
        for rx in self._transport_res(flags):
            for m in rx.finditer(body):
                key = m.group(1)
                if key in seen:
                    continue
                seen.add(key)
                start = body.rfind(b"\n", 0, m.start()) + 1
                stop = body.find(b"\n", m.end())
                line = first_line + body.count(b"\n", 0, start)
                report(line, body[start:stop if stop != -1 else len(body)], key)
        if len(seen) > 200000:  # a pathological log: keep memory bounded
            seen.clear()
