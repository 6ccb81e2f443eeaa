"""Open a user-named input file without ever blocking on it; read compressed streams as far as they go.

Promise: standard library only, cheap to import. ``open_input(path)`` opens a
regular file at once; a named pipe (FIFO) is opened without blocking and
waits at most ``FIFO_WAIT_S`` for a process to write to it, so a pipe nobody
writes to is an ``OSError`` naming the path, not a hang; anything else (a
device like /dev/zero, a socket, a directory) is an ``OSError`` saying what it
is. ``refuse_container(head)`` names a zip, tar, 7z, zstd, pickle or binary
that a text reader must not read as text. ``Salvaging(stream)`` wraps a
decompressing reader so that a truncated or damaged .gz/.bz2/.xz yields every
byte before the damage, then records the error in ``.error`` and ends, instead
of losing the last buffered block; it also ends a stream whose output passes
``MAX_RATIO`` times its compressed input (a decompression bomb).
``parse_json`` is the one way in for JSON documents: size capped,
NaN/Infinity refused, nesting and element counts bounded, lone surrogates
repaired; ``commdoctor.loaders.docschema.load_report`` then types a saved report item by item.
"""

from __future__ import annotations

import errno
import io
import lzma
import os
import re
import stat
import time
import zlib
from typing import Any, BinaryIO

def _fifo_wait() -> float:
    try:
        return min(600.0, max(0.0, float(os.environ.get("COMMDOCTOR_FIFO_WAIT_S", "5"))))
    except ValueError:
        return 5.0


#: How long a named pipe may stay without a writer before we give up on it (COMMDOCTOR_FIFO_WAIT_S).
FIFO_WAIT_S = _fifo_wait()


def kind_of(mode: int) -> str:
    """What a file of this mode is, in words a user reads."""
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISFIFO(mode):
        return "a named pipe"
    return "not a regular file"


class _Prefixed(io.RawIOBase):
    """A pipe's fd with the bytes already read from it put back in front."""

    def __init__(self, fd: int, head: bytes) -> None:
        self._fd = fd
        self._head = head

    def readable(self) -> bool:
        return True

    def readinto(self, b: bytearray | memoryview) -> int:  # type: ignore[override]
        if self._head:
            n = min(len(b), len(self._head))
            b[:n] = self._head[:n]
            self._head = self._head[n:]
            return n
        data = os.read(self._fd, len(b))
        b[:len(data)] = data
        return len(data)

    def close(self) -> None:
        if not self.closed:
            try:
                os.close(self._fd)
            finally:
                super().close()


def _open_fifo(path: str, wait_s: float) -> BinaryIO:
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # never blocks, even with no writer
    deadline = time.monotonic() + wait_s
    head = b""
    try:
        while True:
            try:
                head = os.read(fd, 65536)
            except BlockingIOError:
                break  # a writer holds the pipe open and has not written yet: read it blocking
            if head:
                break
            # b"": no writer (yet, or any more). Wait a little for one, bounded.
            if time.monotonic() >= deadline:
                raise OSError(errno.ENODATA, f"a named pipe that no process wrote to within {wait_s:g} s")
            time.sleep(0.05)
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return io.BufferedReader(_Prefixed(fd, head))


def open_input(path: str, fifo_wait_s: float | None = None) -> BinaryIO:
    """Open ``path`` for reading in binary, bounded in time (see the module docstring)."""
    mode = os.stat(path).st_mode  # follows symlinks; a dangling one raises FileNotFoundError
    if stat.S_ISREG(mode):
        return open(path, "rb")  # noqa: SIM115 - the caller closes it
    if stat.S_ISFIFO(mode):
        return _open_fifo(path, FIFO_WAIT_S if fifo_wait_s is None else fifo_wait_s)
    raise OSError(errno.EINVAL, f"{kind_of(mode)}, not a regular file")


#: Formats a text reader must not read as text: (magic at offset 0, what it is, what to do).
_CONTAINERS: tuple[tuple[bytes, str], ...] = (
    (b"PK\x03\x04", "a zip archive"),
    (b"PK\x05\x06", "an empty zip archive"),
    (b"7z\xbc\xaf\x27\x1c", "a 7-Zip archive"),
    (b"\x28\xb5\x2f\xfd", "a Zstandard archive"),
    (b"Rar!\x1a\x07", "a RAR archive"),
    (b"\x7fELF", "an executable (ELF)"),
    (b"%PDF-", "a PDF document"),
    (b"\x89PNG", "a PNG image"),
    (b"\x80\x02", "a Python pickle"),
    (b"\x80\x04", "a Python pickle"),
    (b"\x80\x05", "a Python pickle"),
)


def refuse_container(head: bytes) -> None:
    """Raise ``OSError`` naming what ``head`` is, when it starts a format no text reader should read.

    A zip of logs read as text gives a few lines of compressed noise and a "healthy"
    verdict; naming the format tells the user to unpack it. gzip, bzip2 and xz are
    not refused: the readers decompress them.
    """
    for magic, what in _CONTAINERS:
        if head.startswith(magic):
            raise OSError(errno.EINVAL, f"{what}, not a text log (unpack it and give the files or folder)")
    if len(head) >= 262 and head[257:262] == b"ustar":
        raise OSError(errno.EINVAL, "a tar archive, not a text log (unpack it: tar -xf FILE, and give the folder)")


#: A stream whose first this many bytes are all NUL is not a log (``logs - < /dev/zero``).
NUL_LIMIT = 64 << 20


class NulGuard(io.RawIOBase):
    """A stream that raises ``OSError`` when its first ``NUL_LIMIT`` bytes are all NUL.

    Logs of a node that crashed can hold a hole of NULs, so NULs alone stop nothing;
    but nothing but NULs for 64 MiB is a device or a sparse file, and reading it to
    the end (for /dev/zero, never) would only spend the deadline.
    """

    def __init__(self, inner: BinaryIO, limit: int = NUL_LIMIT) -> None:
        self._inner = inner
        self._limit = limit
        self._seen = 0
        self._text = False

    def readable(self) -> bool:
        return True

    def readinto(self, b: bytearray | memoryview) -> int:  # type: ignore[override]
        data = self._inner.read1(len(b)) if hasattr(self._inner, "read1") else self._inner.read(len(b))
        if not self._text and data:
            if data.count(0) == len(data):
                self._seen += len(data)
                if self._seen >= self._limit:
                    raise OSError(errno.EINVAL, f"the first {self._seen >> 20} MiB are all NUL bytes: "
                                  "not a log (a device or an empty sparse file?)")
            else:
                self._text = True
        b[:len(data)] = data
        return len(data)


def guarded_stdin() -> BinaryIO:
    """Standard input for a text reader: buffered (it can be peeked) and cut when it is nothing but NULs."""
    import sys

    return io.BufferedReader(NulGuard(sys.stdin.buffer))


#: Decompressed bytes allowed per compressed byte once past ``RATIO_FREE`` bytes of output.
MAX_RATIO = 200
RATIO_FREE = 64 << 20


class Salvaging(io.RawIOBase):
    """Read a decompressing stream chunk by chunk; on damage keep what came before and stop.

    ``read(n)`` on a gzip/bz2/lzma file object fills its whole buffer before
    returning, so a truncated archive raises and the bytes decoded so far are
    lost. Reading with ``read1`` returns each decoded chunk as it comes; the
    error ends the stream and is kept in ``error`` for the caller to report.
    """

    def __init__(self, inner: BinaryIO, under: BinaryIO | None = None, max_ratio: int = MAX_RATIO) -> None:
        self._inner = inner
        self._under = under  # the compressed file, closed with us (GzipFile leaves its fileobj open)
        self.error: str = ""
        self._out = 0
        self._max_ratio = max_ratio

    def readable(self) -> bool:
        return True

    def readinto(self, b: bytearray | memoryview) -> int:  # type: ignore[override]
        if self.error:
            return 0
        try:
            data = self._inner.read1(len(b)) if hasattr(self._inner, "read1") else self._inner.read(len(b))
        except (OSError, EOFError, ValueError, zlib.error, lzma.LZMAError) as e:  # BadGzipFile is an OSError
            self.error = f"{type(e).__name__}: {e}"
            return 0
        self._out += len(data)
        if self._out > RATIO_FREE and self._under is not None and self._max_ratio:
            # A decompression bomb (2 MB of gzip holding 2 GiB of newlines) is cut, not read for minutes.
            try:
                used = max(1, self._under.tell())
            except (OSError, ValueError):
                used = 0
            if used and self._out > used * self._max_ratio:
                self.error = (f"decompressed {self._out >> 20} MiB from {max(1, used >> 10)} KiB, over the "
                              f"{self._max_ratio}:1 ratio a log reaches (a decompression bomb?); read that far")
        b[:len(data)] = data
        return len(data)

    def close(self) -> None:
        if not self.closed:
            try:
                self._inner.close()
                if self._under is not None:
                    self._under.close()
            finally:
                super().close()


class _Converting(io.RawIOBase):
    """A byte stream read through a conversion, chunk by chunk: subclasses say what one chunk becomes (``_eof`` is
    set when the chunk given is the last, empty one)."""

    def __init__(self, inner: BinaryIO) -> None:
        self._inner = inner
        self._out = b""
        self._eof = False

    def _convert(self, chunk: bytes) -> bytes:
        raise NotImplementedError

    def readable(self) -> bool:
        return True

    def readinto(self, b: bytearray | memoryview) -> int:  # type: ignore[override]
        while not self._out and not self._eof:
            chunk = self._inner.read(65536)
            self._eof = not chunk
            self._out = self._convert(chunk)
        n = min(len(b), len(self._out))
        b[:n] = self._out[:n]
        self._out = self._out[n:]
        return n

    def close(self) -> None:
        if not self.closed:
            try:
                self._inner.close()
            finally:
                super().close()


class Utf16ToUtf8(_Converting):
    """A UTF-16 byte stream (with its BOM) read as UTF-8, chunk by chunk (PowerShell's ``>`` writes UTF-16)."""

    def __init__(self, inner: BinaryIO, under: BinaryIO | None = None) -> None:
        import codecs

        super().__init__(inner)
        self._under = under
        self._dec = codecs.getincrementaldecoder("utf-16")("replace")

    def _convert(self, chunk: bytes) -> bytes:
        return self._dec.decode(chunk, final=self._eof).encode("utf-8", "replace")


# -- logs saved in another format than lines of text -----------------------------------------------
# A log collector's export (docker's json-file, Kubernetes log shippers, a structured logger) writes each line as a
# JSON record; a log pasted from a Python string or a JSON field has its line breaks written out as "\\n". Read as
# they are, their NCCL headers and glog heads sit inside a record or one long line and nothing is recognised.

#: Fields that hold the line itself in one JSON record per line: docker/Kubernetes ("log"), structured loggers
#: ("message", "msg"), journald's JSON export ("MESSAGE"), Google Cloud Logging ("textPayload").
JSON_LOG_FIELDS = ("log", "message", "msg", "MESSAGE", "textPayload")
_ESCAPE = re.compile(rb'\\(?:(n|r\\n)|(t)|(["\'\\])|(?:x1[bB]|u001[bB]|033|e))')
#: The start of an escape at the end of a chunk, cut there.
_ESCAPE_CUT = re.compile(rb'\\+(?:r\\?|u(?:0(?:01?)?)?|x1?|03?)?\Z')
#: How an input was unwrapped, as the input line of `commdoctor logs` says it.
UNWRAPPED = {"json-lines": "read as JSON records (each record's line)",
             "escaped-newlines": "its written-out line breaks (\\n) read as line breaks",
             "indented": "read less the indentation all its lines have"}
#: A JSON record longer than this without its newline is passed on as it is (memory stays bounded).
_MAX_RECORD = 1 << 20


def _json_line(line: bytes) -> bytes | None:
    """The text one JSON record carries, or None when ``line`` is not such a record."""
    import json

    try:
        doc = json.loads(line)
    except (ValueError, RecursionError):
        return None
    if not isinstance(doc, dict):
        return None
    for k in JSON_LOG_FIELDS:
        v = doc.get(k)
        if isinstance(v, str):
            out = v.encode("utf-8", "surrogatepass")
            return out if out.endswith(b"\n") else out + b"\n"
    return None


def common_indent(head: bytes) -> bytes:
    """The indentation every line of ``head`` starts with (a Markdown code block's four spaces, a tab), or b"".

    Only the complete lines count, at least two that are not blank; a log's own indentation (traceback code lines,
    the launcher's summary fields) is on some lines only, so it is never common to all."""
    lines = [ln for ln in head.split(b"\n")[:-1] if ln.strip()]
    if len(lines) < 2:
        return b""
    lead = [ln[:len(ln) - len(ln.lstrip(b" \t"))] for ln in lines]
    first = min(lead, key=len)
    common = first if all(x.startswith(first) for x in lead) else b""
    return common if len(common) >= 2 or common == b"\t" else b""


def unwrap_kind(head: bytes) -> str:
    """How the text of a log starting with ``head`` is wrapped: "json-lines", "escaped-newlines", "indented" or ""."""
    body = head.lstrip()
    if body[:1] == b"{":
        first, nl, _ = body.partition(b"\n")
        if nl and _json_line(first) is not None:
            return "json-lines"
    escaped = head.count(b"\\n")
    if escaped >= 2 and escaped > 2 * head.count(b"\n"):
        return "escaped-newlines"
    if common_indent(head):
        return "indented"
    return ""


class Unwrapping(_Converting):
    """The lines of a log saved as JSON records (``json-lines``), with its line breaks escaped (``escaped-newlines``)
    or indented as a whole (``indented``), chunk by chunk: each record's text, the text with its escapes undone, or
    each line less the indentation all of them have."""

    def __init__(self, inner: BinaryIO, kind: str, indent: bytes = b"") -> None:
        super().__init__(inner)
        self.kind = kind
        self._indent = indent  # "indented": what every line starts with, removed
        self._pending = b""

    def _line(self, line: bytes) -> bytes:
        """One whole line of a ``json-lines`` or ``indented`` input, unwrapped."""
        if self.kind == "indented":
            return line[len(self._indent):] if line.startswith(self._indent) else line
        text = _json_line(line) if line.lstrip()[:1] == b"{" else None
        return line if text is None else text

    def _convert(self, chunk: bytes) -> bytes:
        data = self._pending + chunk
        if self.kind != "escaped-newlines":  # line by line: keep back the line the chunk cut
            end = len(data) if self._eof else data.rfind(b"\n") + 1
            if end == 0 and len(data) > _MAX_RECORD:
                end = len(data)
            self._pending = data[end:]
            return b"".join(self._line(ln) for ln in data[:end].splitlines(keepends=True))
        # escaped-newlines: keep back an escape the chunk may have cut (with the run of backslashes it ends), which
        # the next chunk completes
        end = len(data)
        if not self._eof:
            cut = _ESCAPE_CUT.search(data, max(0, len(data) - 6))
            if cut is not None:
                end = cut.start()
                while end > 0 and data[end - 1:end] == b"\\":
                    end -= 1
        self._pending = data[end:]
        return _ESCAPE.sub(_unescape, data[:end])


def _unescape(m: re.Match[bytes]) -> bytes:
    if m.group(1):
        return b"\n"
    if m.group(2):
        return b"\t"
    if m.group(3):
        return m.group(3)
    return b"\x1b"


# -- one way in for JSON documents (reports, saved stacks) ----------------------------------------

#: A saved report is a few hundred kB; far more than this is not one (and would only cost memory).
MAX_JSON_BYTES = 256 << 20
#: Deeper than this no document of ours goes; deeper input is cut there (renderers recurse).
MAX_JSON_DEPTH = 64
#: Elements visited while cleaning a document: a budget of work, not of depth alone.
MAX_JSON_NODES = 4_000_000


def read_limited(path: str, max_bytes: int = MAX_JSON_BYTES) -> bytes:
    """The bytes of ``path`` (bounded wait on a FIFO, devices refused), or ``OSError`` when over ``max_bytes``."""
    with open_input(path) as f:
        data = f.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise OSError(errno.EFBIG, f"over {max_bytes >> 20} MiB, far more than this kind of file holds")
    return data


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def parse_json(data: bytes, max_depth: int = MAX_JSON_DEPTH, max_nodes: int = MAX_JSON_NODES,
               nonfinite_as_null: bool = False) -> tuple[Any, list[str]]:
    """Parse untrusted JSON into plain data that every reader and renderer can walk safely.

    ``ValueError`` for what is not JSON (NaN and Infinity included, nesting too deep
    for the parser, more than ``max_nodes`` elements). Otherwise the document, with
    lone surrogates replaced by U+FFFD (they cannot be written as UTF-8) and anything
    nested deeper than ``max_depth`` replaced by a note; the second value lists what
    was changed, for the reader to report. ``nonfinite_as_null``: NaN and Infinity
    become null (a frame's line unknown) and are noted, instead of refusing the file.
    """
    import json

    text = data.decode("utf-8-sig", "replace")
    notes: list[str] = []

    def as_null(name: str) -> Any:
        if len(notes) < 20:
            notes.append(f"{name} is not a JSON number: read as null")
        return None

    constant = as_null if nonfinite_as_null else _no_constant
    try:
        doc = json.loads(text, parse_constant=constant)
    except RecursionError:
        # Too deep for the parser's stack: cut the deep parts out of the text and keep the rest.
        text, cut = _cut_deep(text, max_depth)
        notes.append(f"{cut} value(s) nested deeper than {max_depth} levels were left out")
        try:
            doc = json.loads(text, parse_constant=constant)
        except RecursionError:
            raise ValueError("nested too deep for a JSON document of ours") from None
    budget = [max_nodes]

    def fix_str(s: str) -> str:
        try:
            s.encode("utf-8")
            return s
        except UnicodeEncodeError:
            if len(notes) < 20:
                notes.append("lone surrogate characters replaced by U+FFFD")
            return s.encode("utf-8", "replace").decode("utf-8")

    # Iterative, so a deep document costs no stack: (container, key, value, depth).
    root: list[Any] = [doc]
    stack: list[tuple[Any, Any, Any, int]] = [(root, 0, doc, 0)]
    while stack:
        parent, key, value, depth = stack.pop()
        budget[0] -= 1
        if budget[0] < 0:
            raise ValueError(f"more than {max_nodes} elements, far more than a document of ours holds")
        if isinstance(value, str):
            fixed = fix_str(value)
            if fixed is not value:
                parent[key] = fixed
        elif isinstance(value, (dict, list)):
            if depth >= max_depth:
                parent[key] = f"[nested deeper than {max_depth} levels: left out]"
                if len(notes) < 20:
                    notes.append(f"a value nested deeper than {max_depth} levels was left out")
                continue
            if isinstance(value, dict):
                if any(isinstance(k, str) and fix_str(k) is not k for k in value):
                    value = {fix_str(k): v for k, v in value.items()}
                    parent[key] = value
                for k, v in value.items():
                    stack.append((value, k, v, depth + 1))
            else:
                for i, v in enumerate(value):
                    stack.append((value, i, v, depth + 1))
    return root[0], notes


_JSON_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]')


def _cut_deep(text: str, max_depth: int) -> tuple[str, int]:
    """``text`` with every array or object opened below ``max_depth`` replaced by a string, in one pass.

    Strings are skipped whole (a bracket inside one is text), so the cut follows the
    document's real structure; what remains parses without deep recursion.
    """
    out: list[str] = []
    depth, start, last, cut = 0, -1, 0, 0
    for m in _JSON_TOKEN.finditer(text):
        tok = m.group(0)
        if tok[0] == '"':
            continue
        if tok in "[{":
            depth += 1
            if depth == max_depth and start < 0:
                start = m.start()
        else:
            if depth == max_depth and start >= 0:
                out.append(text[last:start])
                out.append(f'"[nested deeper than {max_depth} levels: left out]"')
                last, start = m.end(), -1
                cut += 1
            depth -= 1
    out.append(text[last:])
    return "".join(out), cut
