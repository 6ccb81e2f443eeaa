"""Open a user-named input file without ever blocking on it; read compressed streams as far as they go.

Promise: standard library only, cheap to import. ``open_input(path)`` opens a
regular file at once; a named pipe (FIFO) is opened without blocking and
waits at most ``FIFO_WAIT_S`` for a process to write to it, so a pipe nobody
writes to is an ``OSError`` naming the path, not a hang; anything else (a
device like /dev/zero, a socket, a directory) is an ``OSError`` saying what it
is. ``Salvaging(stream)`` wraps a decompressing reader so that a truncated or
damaged .gz/.bz2/.xz yields every byte before the damage, then records the
error in ``.error`` and ends, instead of losing the last buffered block.
"""

from __future__ import annotations

import errno
import io
import lzma
import os
import stat
import time
import zlib
from typing import BinaryIO

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


class Salvaging(io.RawIOBase):
    """Read a decompressing stream chunk by chunk; on damage keep what came before and stop.

    ``read(n)`` on a gzip/bz2/lzma file object fills its whole buffer before
    returning, so a truncated archive raises and the bytes decoded so far are
    lost. Reading with ``read1`` returns each decoded chunk as it comes; the
    error ends the stream and is kept in ``error`` for the caller to report.
    """

    def __init__(self, inner: BinaryIO, under: BinaryIO | None = None) -> None:
        self._inner = inner
        self._under = under  # the compressed file, closed with us (GzipFile leaves its fileobj open)
        self.error: str = ""

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


class Utf16ToUtf8(io.RawIOBase):
    """A UTF-16 byte stream (with its BOM) read as UTF-8, chunk by chunk (PowerShell's ``>`` writes UTF-16)."""

    def __init__(self, inner: BinaryIO, under: BinaryIO | None = None) -> None:
        import codecs

        self._inner = inner
        self._under = under
        self._dec = codecs.getincrementaldecoder("utf-16")("replace")
        self._out = b""
        self._eof = False

    def readable(self) -> bool:
        return True

    def readinto(self, b: bytearray | memoryview) -> int:  # type: ignore[override]
        while not self._out and not self._eof:
            chunk = self._inner.read(65536)
            self._eof = not chunk
            self._out = self._dec.decode(chunk, final=self._eof).encode("utf-8", "replace")
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
