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
from typing import Any, BinaryIO, Callable, Iterator

from commdoctor.parsing.lines import MAX_LINE
from commdoctor.parsing.signatures import keywords

BLOCK = 256 << 10

# Peer-to-peer transport lines ("Channel 00/0 : 0[0] -> 1[1] via P2P/IPC/read", "Ring 00 : 2[3d000] ->
# 3[3e000] via direct shared memory", NCCL 2.0's "0 -> 1 via P2P/IPC", "CollNet 00/0 : 3 [send] via
# COLLNET/..."). They repeat for every channel; a set of what they say is all the model keeps.
TRANSPORT_RES = tuple(
    # One expression per leading word, each starting with a literal (the regex engine then finds
    # candidates with a fast substring search), one unbounded but linear group: the rest of the line,
    # a CR included (a class of one byte runs ~30% faster than [^\r\n] in ``re``, and this expression
    # reads a quarter of every rank log; the reader cuts a key at its CR).
    re.compile(word + rb" \d+(?:/\d+)? : ?(\d[^\n]*)")
    for word in (b"Channel", b"Ring", b"CollNet")
)
TRANSPORT_OLD_RE = re.compile(rb"INFO (\d+ -> \d+ via [^\n]*)")


#: A line of a stream with its number (1-based).
NumberedLine = tuple[int, bytes]


@dataclass
class ScanStats:
    bytes: int = 0
    lines: int = 0
    candidates: int = 0
    overlong: int = 0  # lines cut at MAX_LINE
    nul_bytes: int = 0
    transport_bytes: int = 0  # bytes the transport expressions read (the per-stream cost at job scale)
    #: The stream's last line written by NCCL (" NCCL INFO ", " NCCL WARN "), read or not, as (line number, bytes);
    #: looked for in its last two blocks only (where a log stops, not what it said before).
    last_nccl: NumberedLine | None = None


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


#: NCCL's "Connected all rings" / "Connected all trees" (INFO, once per communicator and rank at each set-up).
#: The rules read only that it was said (rules/engine.connected takes the first line), and a long job's log
#: repeats it for every communicator it builds: the throughput bench's log has one in every six lines, nearly
#: all of its keyword hits, each costing a candidate line to parse. Past REPEATED_KEEP in one input an engine
#: that knows which keyword matched reports no more of it, and the scanner yields no more of its short lines
#: whatever the engine.
REPEATED_WORD = "Connected all"
REPEATED_KEEP = 64
_REPEATED = REPEATED_WORD.encode()


class Prefilter:
    """Offsets of keyword hits in a block, and which FLAG_PATTERNS occur in it. Subclasses pick the engine.

    ``known``: the kinds of transport a stream has shown already, for a block after its first. An engine
    may then leave out the patterns that can no longer change anything (those kinds, and the leading
    words of transport lines) and return ``lean=True``; the scanner looks for the leading words itself
    in the rare block that still needs them.
    """

    name = "base"
    scanned = 0  # bytes searched so far, by every stream: what decides the large-input paths
    #: How many more hits of REPEATED_WORD the current stream may report (see ``start_stream``).
    repeat_left = REPEATED_KEEP

    def start_stream(self) -> None:
        """A new input begins: its first REPEATED_KEEP hits of REPEATED_WORD count again."""
        self.repeat_left = REPEATED_KEEP

    def hits(self, block: bytes, known: frozenset[int] | None = None,
             tick: Callable[[int], None] | None = None) -> tuple[list[int], set[int], bool]:
        """``tick(n)``, when given, is called as the search gets through ``n`` more bytes of the block."""
        raise NotImplementedError  # pragma: no cover - abstract


#: Bytes scanned before a lean database (see HyperscanPrefilter) is worth compiling: 0.1-0.3 s the first
#: time (later runs load it from the cache folder), against ~1 ms per MB saved.
LEAN_AFTER = 16 << 20
#: Bytes scanned before numpy is worth importing to count lines: 0.17 s against 0.53 ms per MB (a reader
#: that knows its inputs' sizes imports it at once past this, see ``numpy_lines``).
NUMPY_AFTER = 256 << 20
MAX_LEAN = 8


class HyperscanPrefilter(Prefilter):
    """All keywords (and the flag patterns, reported once each) in one pass, in C at memory speed."""

    name = "hyperscan"

    def __init__(self, words: tuple[str, ...]) -> None:
        import hyperscan

        self._hs = hyperscan
        self._words = [re.escape(w).encode() for w in words]
        self._n = len(words)
        self._repeated = words.index(REPEATED_WORD) if REPEATED_WORD in words else -1
        self._db = self._compile(list(range(len(FLAG_PATTERNS))))
        self._full_ids = list(range(len(FLAG_PATTERNS)))
        self._lean: dict[frozenset[int], tuple[Any, list[int]]] = {}
        self.scanned = 0

    def _compile(self, flag_ids: list[int]) -> Any:
        hs = self._hs
        exprs = self._words + [FLAG_PATTERNS[i] for i in flag_ids]
        flags = [0] * self._n + [hs.HS_FLAG_SINGLEMATCH] * len(flag_ids)
        path = _db_cache_path(hs, exprs, flags)
        db = _load_db(hs, path, exprs) if path else None
        if db is None:
            db = hs.Database(mode=hs.HS_MODE_BLOCK)
            db.compile(expressions=exprs, ids=list(range(len(exprs))), elements=len(exprs), flags=flags)
            if path:
                _save_db(hs, path, db)
        return db

    def _lean_db(self, known: frozenset[int]) -> tuple[Any, list[int]] | None:
        # Transport lines repeat all through a long log (a generated job log has one in four): the
        # patterns of their words and of the kinds already seen then fire on most lines, and with them
        # the search costs 2.5x what the keywords alone cost, though a stream can learn nothing more
        # from them. Past the first block only the new kinds and a communicator's setup matter.
        got = self._lean.get(known)
        if got is None:
            if len(self._lean) >= MAX_LEAN:
                return None
            ids = [FLAG_COMM] + sorted(FLAG_KINDS - known)
            got = self._lean[known] = (self._compile(ids), ids)
        return got

    def hits(self, block: bytes, known: frozenset[int] | None = None,
             tick: Callable[[int], None] | None = None) -> tuple[list[int], set[int], bool]:
        out: list[int] = []
        seen: set[int] = set()
        add, n = out.append, self._n
        self.scanned += len(block)
        db, ids, lean = self._db, self._full_ids, False
        if known is not None and self.scanned > LEAN_AFTER:
            got = self._lean_db(known)
            if got is not None:
                (db, ids), lean = got, True

        rep = self._repeated

        def on_match(id_: int, _from: int, to: int, _flags: int, _ctx: object) -> None:
            if id_ < n:
                if id_ == rep:
                    if self.repeat_left <= 0:
                        return
                    self.repeat_left -= 1
                add(to)
            else:
                seen.add(ids[id_ - n])

        db.scan(block, match_event_handler=on_match)
        if tick is not None:
            tick(len(block))  # a block takes milliseconds here: once per block is often enough
        return out, seen, lean


def _db_cache_path(hs: Any, exprs: list[bytes], flags: list[int]) -> str | None:
    """Where a compiled database of these patterns is kept between runs (None: nowhere to keep it).

    Compiling the keyword database costs 0.1-0.3 s of CPU on every run, a third of the start of
    ``commdoctor logs`` and a tenth of reading a gigabyte; loading the compiled form costs well under
    a millisecond. The name hashes the patterns, the library's version and the machine, so a new rule
    or another CPU gets a database of its own. COMMDOCTOR_CACHE_DIR picks the folder ("" turns it off).
    """
    import hashlib
    import os
    import platform

    folder = os.environ.get("COMMDOCTOR_CACHE_DIR")
    if folder is None:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        folder = os.path.join(base, "commdoctor")
    if not folder:
        return None
    h = hashlib.sha256(repr((getattr(hs, "__version__", "?"), platform.machine(), exprs, flags)).encode())
    return os.path.join(folder, f"hs-{h.hexdigest()[:32]}.db")


def _load_db(hs: Any, path: str, exprs: list[bytes]) -> Any:
    """The database kept at ``path``, or None when it is missing or does not work as compiled."""
    try:
        with open(path, "rb") as f:
            data = f.read(64 << 20)
        db = hs.loadb(data, mode=hs.HS_MODE_BLOCK)
        db.scratch = hs.Scratch(db)  # a loaded database comes without one (python-hyperscan issue 153)
        # A torn or foreign file must not cost a verdict: the first pattern must still be found.
        probe = re.sub(rb"\\(.)", rb"\1", exprs[0])
        got: list[int] = []
        db.scan(b" " + probe + b" ", match_event_handler=lambda i, _f, _t, _fl, _c: got.append(i))
        return db if 0 in got else None
    except Exception:  # noqa: BLE001 - any failure here only means compiling again
        return None


def _save_db(hs: Any, path: str, db: Any) -> None:
    import os

    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "wb") as f:
            f.write(hs.dumpb(db))
        os.replace(tmp, path)  # whole or not at all, whatever runs beside us
    except Exception:  # noqa: BLE001 - a read-only home only means compiling next time too
        pass


class StdlibPrefilter(Prefilter):
    """Pure Python fallback (no wheel for this platform): one alternation run by ``re``; about 20x slower."""

    name = "re"

    def __init__(self, words: tuple[str, ...]) -> None:
        self._re = re.compile(b"|".join(re.escape(w.encode()) for w in sorted(words, key=len, reverse=True)))

    #: Bytes searched between two ticks: a 4 MiB block takes seconds with ``re``, too long for a meter.
    STEP = 256 << 10

    def hits(self, block: bytes, known: frozenset[int] | None = None,
             tick: Callable[[int], None] | None = None) -> tuple[list[int], set[int], bool]:
        self.scanned += len(block)
        if tick is None:
            return ([m.end() for m in self._re.finditer(block)],
                    {i for i, f in enumerate(_FLAG_RES) if f.search(block)}, False)
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
        return out, flags, False


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


_numpy: Any = None  # the module once imported; False when it is not installed


def numpy_lines() -> bool:
    """Import numpy to count lines from now on (whether it could be). For a caller that knows a large
    input is coming: the import costs ~0.17 s of CPU here, counting with it ~0.13 ms per MB against 0.66."""
    global _numpy
    if _numpy is None:
        try:
            import numpy

            _numpy = numpy
        except ImportError:
            _numpy = False
    return _numpy is not False


def count_lines(body: bytes, large: bool) -> int:
    """Newlines in ``body``: with numpy once it is imported (``large``: worth importing it now), else ``bytes.count``."""
    if (_numpy or (large and numpy_lines())) and len(body) >= 4096:
        return int(_numpy.count_nonzero(_numpy.frombuffer(body, dtype=_numpy.uint8) == 10))
    return body.count(b"\n")


_NCCL_WORDS = (b" NCCL INFO ", b" NCCL WARN ")


def _last_nccl(tail: tuple[bytes, int, bytes, int]) -> tuple[int, bytes] | None:
    """(line number, bytes) of the last NCCL line in a stream's last two blocks (each with its first line's number)."""
    for body, first in ((tail[2], tail[3]), (tail[0], tail[1])):
        at = max(body.rfind(w) for w in _NCCL_WORDS)
        if at >= 0:
            start = body.rfind(b"\n", 0, at) + 1
            stop = body.find(b"\n", at)
            return first + body.count(b"\n", 0, start), body[start:stop if stop >= 0 else len(body)][:MAX_LINE]
    return None


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
    _repeats: int = 0  # candidate lines of the stream holding REPEATED_WORD

    def scan(self, stream: BinaryIO, block_size: int = BLOCK) -> Iterator[tuple[int, bytes]]:
        st = self.stats
        self.prefilter.start_stream()
        self._repeats = 0
        carry = b""
        skipping = False  # inside the unkept tail of an over-long line
        line_no = 1  # number of the first line in the current block
        cr_lines = None  # decided on the first block: a file ending its lines with a lone CR
        tail: tuple[bytes, int, bytes, int] = (b"", 0, b"", 0)
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
            if b"\xa0" in data and b"\xc2\xa0" in data:  # (one byte first: memchr, a hundred times faster)
                # No-break spaces (U+00A0) where a log was copied from a web page or a wiki: the keywords and the
                # rules are written with plain spaces. One byte shorter each: the bytes read are counted back.
                n = len(data)
                data = data.replace(b"\xc2\xa0", b" ")
                st.bytes += n - len(data)
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
            if final:
                if not carry:
                    break
                body, carry = carry, b""
            else:
                cut = data.rfind(b"\n")  # (a carried head holds no newline: the last one is this block's)
                if cut == -1:
                    buf = carry + data if carry else data
                    if len(buf) > MAX_LINE:
                        # One line longer than we keep: parse its head, skip the rest.
                        body, carry, skipping = buf[:MAX_LINE] + b"\n", b"", True
                        st.overlong += 1
                    else:
                        carry = buf
                        continue
                else:
                    # The carried head and this block up to its last newline, copied once (a block is 256 kB,
                    # and a folder of rank logs is all blocks: two copies a block were 4% of its time).
                    body = b"".join((carry, memoryview(data)[:cut + 1])) if carry else data[:cut + 1]
                    carry = data[cut + 1:]
                    if len(carry) > MAX_LINE:
                        st.overlong += 1
                        body, carry, skipping = body + carry[:MAX_LINE] + b"\n", b"", True
            yield from self._block(body, line_no)
            n = count_lines(body, self.prefilter.scanned > NUMPY_AFTER)
            if body and not body.endswith(b"\n"):
                n += 1
            tail = (tail[2], tail[3], body, line_no)  # the last two blocks, each with the number of its first line
            line_no += n
            st.lines += n
            if final:
                break
        st.last_nccl = _last_nccl(tail)

    def _block(self, body: bytes, first_line: int) -> Iterator[tuple[int, bytes]]:
        st = self.stats
        if b"\x00" in body:
            st.nul_bytes += body.count(b"\x00")
        first = first_line == 1
        known = frozenset(self._kinds_seen) if self.on_transport is not None and not first else None
        hits, flags, lean = self.prefilter.hits(body, known, self.on_block)
        if lean and flags:
            # A lean search (see Prefilter) reports only a communicator's setup and kinds not seen yet;
            # the leading words of transport lines are looked for here, in the few blocks that have those.
            flags |= {i for i in (0, 1, 2, 3) if _FLAG_RES[i].search(body)}
        if self.on_transport is not None and flags & {0, 1, 2, 3} and self._wanted(flags, first):
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
            line = body[start:stop]
            if _REPEATED in line:
                self._repeats += 1
                if self._repeats > REPEATED_KEEP and len(line) < 200:
                    continue
            st.candidates += 1
            yield pos_line, line

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
        # The first time a key shows in this stream, its line is reported (in pattern order, then
        # position). Transport lines are many (a generated job log has one in four) and their keys few,
        # so the keys are collected and deduplicated in C (findall, dict.fromkeys) and only a new key
        # costs Python work: finding the line it first shows on. A per-match loop here was two thirds
        # of the time on a folder of 1 MB rank logs (bench/README.md, "Logs at job scale").
        seen = self._seen_transports
        assert self.on_transport is not None
        report = self.on_transport
        self.stats.transport_bytes += len(body)
        for rx in self._transport_res(flags):
            new = [k for k in dict.fromkeys(rx.findall(body)) if k not in seen]
            pos, line = 0, first_line  # first appearances come in order: each search goes on from the last
            for key in new:
                seen.add(key)
                hit = self._first_match(rx, body, key, pos)
                if hit is None:  # cannot happen (findall saw it); skip rather than report a wrong line
                    continue
                start, stop = hit
                line += body.count(b"\n", pos, start)
                pos = start
                report(line, body[start:stop], key)
        if len(seen) > 200000:  # a pathological log: keep memory bounded
            seen.clear()

    @staticmethod
    def _first_match(rx: re.Pattern[bytes], body: bytes, key: bytes, pos: int) -> tuple[int, int] | None:
        """(start, stop) of the first line at or after ``pos`` where ``rx`` matches with ``key`` as its group.

        A bare ``find`` of the key may land inside a longer one ("0[0] -> 1[1] via X" in "10[0] -> 1[1]
        via X"), so each place found is checked by matching the line it is on; no pattern spans a line,
        so matching that line alone gives the same matches as the scan of the whole block.
        """
        find, rfind = body.find, body.rfind
        q = find(key, pos)
        while q != -1:
            start = rfind(b"\n", 0, q) + 1
            stop = find(b"\n", q)
            if stop == -1:
                stop = len(body)
            # Each expression's group runs to the end of the line, so a line holds at most one match: its first.
            m = rx.search(body, start, stop)
            if m is not None and m.start(1) == q and m.group(1) == key:
                return start, stop
            q = find(key, q + 1)
        return None
