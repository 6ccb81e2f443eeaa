"""Random access to the lines of a log of any size, without reading it whole.

Promise: opening a log costs one 1 MiB block, whatever the file's size, so the
first screen of a multi-gigabyte log shows at once. The file is memory-mapped;
the index is the count of newlines in each fixed 1 MiB block (4 KiB of index
per GiB), filled by ``index_all`` in a background thread while the user reads.
A line's offset is found from the block counts and the newline positions of
one block, computed on demand and cached. Filters (rank, host, level) scan the
map in line-aligned chunks with one compiled prefilter pattern per chunk, so
only candidate lines reach Python. Standard library only; no textual, no rich.

Which rank and host a line belongs to is read from the prefixes launchers and
libraries write (``[rank3]:`` from torch, ``3: `` from ``srun -l``, NCCL's
``host:pid:tid [dev]`` whose pid is tied to a rank by NCCL's own
``comm ... rank R nranks N`` init line). This is attribution for display, not
diagnosis: the log analyzer owns the meaning of lines.
"""

from __future__ import annotations

import bisect
import mmap
import os
import threading
from array import array
from collections import OrderedDict
from dataclasses import dataclass
from typing import Callable

from commdoctor.parsing.lines import RAW_ERROR_RARE_WORDS, RAW_NCCL_RANK, raw_level, raw_owner

BLOCK = 1 << 20  # bytes per index block
CHUNK = 4 << 20  # bytes per filter-scan chunk
MAX_LINE = 16 * 1024  # bytes of one line ever decoded for display
_CACHE_BLOCKS = 64

# Control characters would drive the terminal; show them as U+FFFD instead (tabs become spaces).
_CTRL = {i: "\ufffd" for i in (*range(0, 9), *range(10, 32), 127)}

LEVELS = ("all", "warn", "error")  # "warn" shows warnings and errors

#: How bad a line is: commdoctor.parsing.lines knows (NCCL's WARN is its error level).
level_of = raw_level


def parse_ranks(text: str) -> frozenset[int]:
    """``"3"``, ``"0-3,7"`` -> ranks. Raises ValueError with a message a user can act on."""
    out: set[int] = set()
    for part in text.replace(" ", "").split(","):
        if not part:
            continue
        lo, sep, hi = part.partition("-")
        try:
            a = int(lo)
            b = int(hi) if sep else a
        except ValueError:
            raise ValueError(f"{part!r} is not a rank or a range of ranks (e.g. 3 or 0-7,12)") from None
        if a < 0 or b < a or b - a > 100_000:
            raise ValueError(f"{part!r} is not a valid range of ranks")
        out.update(range(a, b + 1))
    return frozenset(out)


@dataclass(frozen=True)
class LogFilter:
    ranks: frozenset[int] = frozenset()
    hosts: frozenset[str] = frozenset()
    level: str = "all"

    @property
    def active(self) -> bool:
        return bool(self.ranks or self.hosts or self.level != "all")

    def describe(self) -> str:
        bits = []
        if self.ranks:
            bits.append("rank " + _ranges(sorted(self.ranks)))
        if self.hosts:
            bits.append("host " + ",".join(sorted(self.hosts)))
        if self.level != "all":
            bits.append({"warn": "warnings and errors", "error": "errors"}[self.level])
        return ", ".join(bits) or "none"


def _ranges(xs: list[int]) -> str:
    out, i = [], 0
    while i < len(xs):
        j = i
        while j + 1 < len(xs) and xs[j + 1] == xs[j] + 1:
            j += 1
        out.append(str(xs[i]) if i == j else f"{xs[i]}-{xs[j]}")
        i = j + 1
    return ",".join(out)


def display(raw: bytes) -> str:
    return raw.rstrip(b"\r").decode("utf-8", "replace").expandtabs(4).translate(_CTRL)


class LogIndex:
    """A memory-mapped log with a lazily built line index. Thread-safe for one indexer and many readers."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._file = open(path, "rb")
        self.size = os.fstat(self._file.fileno()).st_size
        self._mm: mmap.mmap | bytes = (
            mmap.mmap(self._file.fileno(), 0, access=mmap.ACCESS_READ) if self.size else b""
        )
        self.nblocks = (self.size + BLOCK - 1) // BLOCK
        self._cum: list[int] = [0]  # _cum[i]: newlines in bytes [0, i*BLOCK), for indexed blocks
        self._cache: OrderedDict[int, array] = OrderedDict()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        # Attribution learned from the log itself (NCCL init lines).
        self.rank_of_pid: dict[tuple[bytes, int], int] = {}
        self.host_of_rank: dict[int, str] = {}
        self.closed = False
        self.scans: list[FilterScan] = []  # stopped and joined by close() before the map goes
        self.index_blocks(1)  # the first screen never waits for the rest

    # -- indexing ---------------------------------------------------------------

    @property
    def complete(self) -> bool:
        return len(self._cum) - 1 >= self.nblocks

    @property
    def progress(self) -> float:
        return 1.0 if not self.nblocks else (len(self._cum) - 1) / self.nblocks

    def index_blocks(self, n: int) -> bool:
        """Index up to ``n`` more blocks; True when the whole file is indexed."""
        mm = self._mm
        for _ in range(n):
            i = len(self._cum) - 1
            if i >= self.nblocks or self._stop.is_set():
                break
            block = mm[i * BLOCK: min(self.size, (i + 1) * BLOCK)]
            if b" nranks " in block:
                self.learn(block)
            self._cum.append(self._cum[-1] + block.count(b"\n"))
        return self.complete

    def index_all(self, on_progress: Callable[[float], None] | None = None) -> None:
        while not self.index_blocks(16) and not self._stop.is_set():
            if on_progress:
                on_progress(self.progress)
        if on_progress:
            on_progress(self.progress)

    def start_indexing(self) -> None:
        """Index the rest of the file in a daemon thread (it never keeps the process alive)."""
        if self._thread is None and not self.complete:
            self._thread = threading.Thread(target=self.index_all, name=f"logindex:{os.path.basename(self.path)}",
                                            daemon=True)
            self._thread.start()

    def learn(self, data: bytes) -> None:
        """Tie NCCL's ``host:pid`` to ranks from its init lines (found by a literal, then matched)."""
        p = data.find(b" nranks ")
        while p >= 0:
            ls = data.rfind(b"\n", 0, p) + 1
            le = data.find(b"\n", p)
            line = data[ls:len(data) if le < 0 else le]
            who = raw_owner(line)
            m = RAW_NCCL_RANK.search(line) if who.host is not None and who.pid is not None else None
            if m and who.host is not None and who.pid is not None:
                rank = int(m.group("rank"))
                self.rank_of_pid[(who.host, who.pid)] = rank
                self.host_of_rank.setdefault(rank, who.host.decode("utf-8", "replace"))
            if le < 0:
                break
            p = data.find(b" nranks ", le)

    # -- lines --------------------------------------------------------------------

    def line_count(self) -> int:
        """Lines in the file when fully indexed; an estimate from the indexed part until then."""
        nl = self._cum[-1]
        if self.complete:
            tail = 1 if self.size and self._mm[self.size - 1: self.size] != b"\n" else 0
            return nl + tail
        seen = min(self.size, (len(self._cum) - 1) * BLOCK)
        return max(nl + 1, int(nl * self.size / max(seen, 1)))

    def _newlines(self, block: int) -> array:
        with self._lock:
            hit = self._cache.get(block)
            if hit is not None:
                self._cache.move_to_end(block)
                return hit
        start, end = block * BLOCK, min(self.size, (block + 1) * BLOCK)
        data = self._mm[start:end]
        pos = array("q")
        p = data.find(b"\n")
        while p >= 0:
            pos.append(start + p)
            p = data.find(b"\n", p + 1)
        with self._lock:
            self._cache[block] = pos
            while len(self._cache) > _CACHE_BLOCKS:
                self._cache.popitem(last=False)
        return pos

    def offset(self, n: int) -> int | None:
        """Byte offset where 0-based line ``n`` starts; None if it is not indexed yet or past the end."""
        if n < 0:
            return None
        if n == 0:
            return 0 if self.size else None
        cum = self._cum
        i = bisect.bisect_left(cum, n)
        if i >= len(cum):
            return None
        j = i - 1
        nl = self._newlines(j)
        off = nl[n - cum[j] - 1] + 1
        return off if off < self.size else None

    def read(self, n: int, count: int = 1) -> list[str]:
        """Up to ``count`` lines from line ``n`` (fewer at the end or where not indexed yet)."""
        return self.read_at(self.offset(n), count)

    def read_at(self, off: int | None, count: int = 1) -> list[str]:
        """Up to ``count`` lines from byte offset ``off`` (a line start), index or not."""
        out: list[str] = []
        mm = self._mm
        while off is not None and off < self.size and len(out) < count:
            end = mm.find(b"\n", off, off + MAX_LINE + 1)
            if end < 0 and self.size - off <= MAX_LINE:
                end = self.size  # the last line, without a newline
            if end < 0:
                # No newline within MAX_LINE: show the head of a huge line and find where it ends.
                head_end = min(self.size, off + MAX_LINE)
                out.append(display(mm[off:head_end]) + " …")
                nxt = mm.find(b"\n", head_end)
                off = None if nxt < 0 else nxt + 1
                continue
            out.append(display(mm[off:end]))
            off = end + 1
        return out

    def raw(self, n: int) -> bytes | None:
        off = self.offset(n)
        if off is None:
            return None
        end = self._mm.find(b"\n", off)
        return self._mm[off:(self.size if end < 0 else end)][:MAX_LINE]

    # -- attribution --------------------------------------------------------------

    def rank_of(self, line: bytes) -> int | None:
        who = raw_owner(line)
        if who.rank is not None:
            return who.rank
        if who.host is not None and who.pid is not None:
            return self.rank_of_pid.get((who.host, who.pid))
        return None

    def host_of(self, line: bytes) -> str | None:
        who = raw_owner(line)
        if who.host is not None:
            return who.host.decode("utf-8", "replace")
        r = who.rank if who.rank is not None else self.rank_of(line)
        return self.host_of_rank.get(r) if r is not None else None

    def close(self) -> None:
        self._stop.set()
        threads = [self._thread] + [sc._thread for sc in self.scans]
        for sc in self.scans:
            sc.cancel()
        for t in threads:
            if t is not None:
                t.join(timeout=5)
        if isinstance(self._mm, mmap.mmap) and not any(t is not None and t.is_alive() for t in threads):
            self._mm.close()
        self._file.close()
        self.closed = True


class FilterScan:
    """Line numbers of the lines that pass a filter, found in a background thread.

    ``matches`` grows while the scan runs; readers may use it at any time.
    """

    def __init__(self, index: LogIndex, filt: LogFilter) -> None:
        self.index = index
        self.filter = filt
        self.matches = array("q")  # 0-based line numbers
        self.offsets = array("q")  # where each of those lines starts: readable before the index gets there
        self.scanned = 0  # bytes
        self.done = False
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def progress(self) -> float:
        return 1.0 if self.done or not self.index.size else self.scanned / self.index.size

    def start(self) -> None:
        self.index.scans = [sc for sc in self.index.scans if not sc.done and not sc._stop.is_set()] + [self]
        self._thread = threading.Thread(target=self.run, name="logfilter", daemon=True)
        self._thread.start()

    def cancel(self) -> None:
        self._stop.set()

    def wait(self, timeout: float) -> bool:
        if self._thread is not None:
            self._thread.join(timeout)
        return self.done

    def _needles(self) -> list[bytes]:
        """Literals at least one of which every passing line contains (found with bytes.find, at memory speed).

        Each is searched in the chunk with a leading newline, so ``b"\\n3: "`` also finds the first line.
        """
        f, ix = self.filter, self.index
        if f.ranks:
            out = []
            for r in sorted(f.ranks):
                # torch, srun/torchrun, mpirun --tag-output, horovodrun, mpiexec -prepend-rank (MPICH, Intel MPI)
                out += [b"[rank%d]:" % r, b"\n%d: " % r, b",%d]<std" % r, b"[%d]<std" % r, b"\n[%d] " % r]
            for (h, p), r in ix.rank_of_pid.items():
                if r in f.ranks:
                    out += [b"\n%s:%d:" % (h, p), b"]:%s:%d:" % (h, p), b"] %s:%d:" % (h, p)]  # "] ": NCCL's timestamp
            return out
        if f.hosts:
            out = []
            for host in sorted(f.hosts):
                out += [b"\n%s:" % host.encode(), b"]:%s:" % host.encode(), b"] %s:" % host.encode()]
            for r, rank_host in ix.host_of_rank.items():
                if rank_host in f.hosts:
                    out += [b"[rank%d]:" % r, b"\n%d: " % r]
            return out
        out = [b"WARN", b"ERROR", b"FATAL", b"Error:", b"Traceback (most", b"[E", *RAW_ERROR_RARE_WORDS]
        if f.level == "warn":
            out += [b"Warning", b"[W"]  # "WARNING" is found by "WARN"
        return out

    def accept(self, line: bytes) -> bool:
        f, ix = self.filter, self.index
        if f.ranks and ix.rank_of(line) not in f.ranks:
            return False
        if f.hosts and ix.host_of(line) not in f.hosts:
            return False
        if f.level != "all":
            lvl = level_of(line)
            if lvl == "info" or (f.level == "error" and lvl != "error"):
                return False
        return True

    def run(self) -> None:
        ix, mm = self.index, self.index._mm
        size = ix.size
        s, base = 0, 0  # chunk start (always just after a newline) and its line number
        while s < size and not self._stop.is_set():
            e = min(size, s + CHUNK)
            if e < size:
                nl = mm.rfind(b"\n", s, e)
                e = nl + 1 if nl >= 0 else (mm.find(b"\n", e) + 1 or size)
            data = b"\n" + mm[s:e]  # a leading newline lets patterns anchor on "\n" for the first line too
            if b" nranks " in data:
                ix.learn(data)
            starts: set[int] = set()
            for needle in self._needles():  # rebuilt per chunk: pids learned so far widen it
                p = data.find(needle)
                while p >= 0:
                    ls = data.rfind(b"\n", 0, p + 1) + 1
                    starts.add(ls)
                    nxt = data.find(b"\n", p + 1)
                    if nxt < 0:
                        break
                    p = data.find(needle, nxt if needle[:1] == b"\n" else nxt + 1)
            last, seen = 0, 0
            for ls in sorted(starts):
                le = data.find(b"\n", ls)
                le = len(data) if le < 0 else le
                seen += data.count(b"\n", last, ls)
                last = ls
                if self.accept(data[ls:le]):
                    self.offsets.append(s + ls - 1)  # -1: the leading newline is not in the file
                    self.matches.append(base + seen - 1)
            base += data.count(b"\n") - 1
            s = e
            self.scanned = s
        self.done = not self._stop.is_set()

