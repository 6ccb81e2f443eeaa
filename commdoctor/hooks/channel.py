"""The hooks' side channel: one TCP connection between every pair of ranks.

Promise: standard library only, every wait bounded. Ranks find each other
through the job's store (any object with ``set``/``get``/``wait`` taking keys,
as torch's stores do), then exchange short text lines: fields separated by
``\\x1f``, one message per ``\\n``. Senders write directly from the calling
thread. There is no reader thread: whoever needs messages calls ``pump``,
which reads what has arrived (waiting up to its timeout) and files it through
the callback, one reader at a time. A rank waiting for its peers' entries
pumps in its own thread, so the kernel wakes it directly when they arrive: a
reader thread would add two thread wake-ups per call, which on a loaded
machine cost far more than the message (measured: +1.2 ms per all_reduce on
this 2-core box under load, against +20 µs for a direct read). A background
ticker pumps without waiting every few milliseconds for the rest.
Any socket error marks the peer lost and calls ``on_lost`` once, so the hooks
can stop checking with one warning instead of failing the training job.

Why our own sockets and not the store: a TCPStore round trip costs 50 to 130 µs
from Python (FIELD-NOTES), while a line on an open socket costs a few µs to
send, and the one-way latency on loopback is 15 to 20 µs.
"""

from __future__ import annotations

import collections
import os
import select
import socket
import threading
import time
from typing import Any, Callable

from commdoctor.hooks.checker import ranks_text

SEP = "\x1f"
KEY_PREFIX = "commdoctor.hooks/v1/"


class ChannelError(Exception):
    """The side channel could not be set up (peers missing, no address, ...)."""


def local_address(store: Any) -> str:
    """The address peers should use to reach this rank.

    ``COMMDOCTOR_HOOKS_ADDR`` wins; otherwise the local end of a route to the
    store's host (the interface that already reaches the rendezvous), or
    loopback when the store is not a TCP store.
    """
    env = os.environ.get("COMMDOCTOR_HOOKS_ADDR")
    if env:
        return env
    host = None
    s = store
    for _ in range(8):  # PrefixStore chains are short; bound the walk anyway
        host = getattr(s, "host", None)
        if host or not hasattr(s, "underlying_store"):
            break
        s = s.underlying_store
    host = host or os.environ.get("MASTER_ADDR")
    if not host:
        return "127.0.0.1"
    try:
        infos = socket.getaddrinfo(host, 1, socket.AF_INET, socket.SOCK_DGRAM)
        probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            probe.connect(infos[0][4])  # no packet is sent for UDP connect
            return str(probe.getsockname()[0])
        finally:
            probe.close()
    except OSError:
        return "127.0.0.1"


class Mesh:
    """Connections from this rank to every other rank of the job."""

    def __init__(self, rank: int, world_size: int, on_message: Callable[[int, list[str]], None],
                 on_lost: Callable[[int, str], None]) -> None:
        self.rank = rank
        self.world_size = world_size
        self._on_message = on_message
        self._on_lost = on_lost
        self._socks: dict[int, socket.socket] = {}
        self._send_locks: dict[int, threading.Lock] = {}
        self._bufs: dict[int, bytes] = {}
        self._lost: set[int] = set()
        self._closed = False
        self._rlock = threading.Lock()  # one reader at a time; others wait on the checker's condition
        self._later: collections.deque[tuple[Any, Any]] = collections.deque()  # (peers, fields) not yet encoded
        #: Queue (peers, fields) for the next ``flush``: ``send(peers, fields, later=True)`` without
        #: the call's overhead (deque.append is atomic: no lock on the caller's path).
        self.queue = self._later.append
        self._out: dict[int, list[bytes]] = {}  # peer -> encoded messages not yet written
        self._out_lock = threading.Lock()

    # -- setup ----------------------------------------------------------------

    def connect(self, store: Any, timeout: float, tag: str = "") -> None:
        """Publish our address in ``store`` and connect to every peer within ``timeout`` s."""
        import datetime

        deadline = time.monotonic() + timeout
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            addr = local_address(store)
            listener.bind((addr if addr != "0.0.0.0" else "", 0))
            listener.listen(max(8, self.world_size))
            port = listener.getsockname()[1]
            prefix = KEY_PREFIX + (tag + "/" if tag else "")
            store.set(f"{prefix}addr/{self.rank}", f"{addr}:{port}")
            # Lower ranks accept, higher ranks connect: each pair opens exactly one socket.
            accepted: dict[int, socket.socket] = {}
            expect = set(range(self.rank + 1, self.world_size))

            def accept_all() -> None:
                listener.settimeout(0.2)
                while expect - set(accepted) and time.monotonic() < deadline:
                    try:
                        c, _ = listener.accept()
                    except socket.timeout:
                        continue
                    except OSError:
                        return
                    c.settimeout(max(0.1, deadline - time.monotonic()))
                    try:
                        hello = _read_line(c, deadline)
                        f = hello.split(SEP)
                        peer = int(f[1])
                        if f[0] != "H" or peer not in expect or peer in accepted:
                            c.close()
                            continue
                    except (OSError, ValueError, IndexError):
                        c.close()
                        continue
                    accepted[peer] = c

            t = threading.Thread(target=accept_all, name="commdoctor-hooks-accept", daemon=True)
            t.start()
            for peer in range(self.rank):
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                key = f"{prefix}addr/{peer}"
                try:
                    store.wait([key], datetime.timedelta(seconds=left))
                    host, _, p = bytes(store.get(key)).decode().rpartition(":")
                    c = socket.create_connection((host, int(p)), timeout=max(0.1, deadline - time.monotonic()))
                    c.sendall(f"H{SEP}{self.rank}\n".encode())
                except (OSError, ValueError, RuntimeError) as e:  # store timeouts are RuntimeError subclasses
                    raise ChannelError(f"cannot reach rank {peer}'s side channel: {e}") from e
                self._socks[peer] = c
            t.join(max(0.0, deadline - time.monotonic()) + 0.5)
            self._socks.update(accepted)
            missing = sorted(set(range(self.world_size)) - {self.rank} - set(self._socks))
            if missing:
                raise ChannelError(f"ranks {ranks_text(missing)} did not join the side channel within {timeout:g} s "
                                   "(are the hooks installed on every rank?)")
        except BaseException:
            for c in self._socks.values():
                c.close()
            self._socks.clear()
            raise
        finally:
            listener.close()
        for peer, c in self._socks.items():
            c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            # A peer that stops reading would block our sends: give up after 10 s
            # (the channel is then lost, and checking stops) rather than stall training.
            c.settimeout(10.0)
            self._send_locks[peer] = threading.Lock()
            self._bufs[peer] = b""

    # -- sending --------------------------------------------------------------

    def send(self, peers: "list[int] | tuple[int, ...]", fields: "tuple[str, ...] | list[str]", *,
             later: bool = False) -> None:
        """Send one message to ``peers``; with ``later``, queue it for the next ``flush`` (encoded and
        written there, one write per peer for many messages, off the caller's path). Order per peer
        is kept either way: an immediate send first writes what is queued."""
        if later:
            self._later.append((peers, fields))  # deque.append: atomic, no lock on the caller's path
            return
        self._encode_later()
        data = (SEP.join(fields) + "\n").encode("utf-8", "replace")
        for p in peers:
            if p == self.rank or p in self._lost:
                continue
            c = self._socks.get(p)
            if c is None:
                continue
            try:
                with self._send_locks[p]:
                    queued = self._take(p)
                    c.sendall(queued + data if queued else data)
            except OSError as e:
                self._lose(p, f"send failed: {e}")

    def _encode_later(self) -> None:
        q = self._later
        if not q:
            return
        # Gathered as text per peer and encoded once per peer: a batch of many short lines.
        texts: dict[int, list[str]] = {}
        rank = self.rank
        while q:
            peers, fields = q.popleft()
            line = SEP.join(fields)
            for p in peers:
                if p != rank:
                    t = texts.get(p)
                    if t is None:
                        texts[p] = [line]
                    else:
                        t.append(line)
        with self._out_lock:
            for p, t in texts.items():
                t.append("")
                self._out.setdefault(p, []).append("\n".join(t).encode("utf-8", "replace"))

    def _take(self, p: int) -> bytes:
        if not self._out:
            return b""
        with self._out_lock:
            q = self._out.pop(p, None)
        return b"".join(q) if q else b""

    def flush(self) -> None:
        """Write what ``send(later=True)`` queued."""
        self._encode_later()
        if not self._out:
            return
        for p in list(self._out):
            c = self._socks.get(p)
            if c is None or p in self._lost:
                with self._out_lock:
                    self._out.pop(p, None)
                continue
            try:
                with self._send_locks[p]:
                    data = self._take(p)
                    if data:
                        c.sendall(data)
            except OSError as e:
                self._lose(p, f"send failed: {e}")

    def peers(self) -> list[int]:
        return [p for p in self._socks if p not in self._lost]

    # -- receiving ------------------------------------------------------------

    def pump(self, timeout: float) -> bool:
        """Read and dispatch what has arrived, waiting up to ``timeout`` s for something to arrive.

        Returns False at once when another thread is reading (the caller should
        wait on its condition: that reader dispatches and notifies).
        """
        if not self._rlock.acquire(blocking=False):
            return False
        try:
            if self._closed:
                return True
            socks = [c for p, c in self._socks.items() if p not in self._lost]
            if not socks:
                if timeout > 0:
                    time.sleep(min(timeout, 0.05))
                return True
            try:
                ready, _, _ = select.select(socks, [], [], max(0.0, timeout))
            except (OSError, ValueError):
                return True
            for c in ready:
                peer = next((p for p, s in self._socks.items() if s is c), None)
                if peer is None or peer in self._lost:
                    continue
                try:
                    chunk = c.recv(65536)
                except (BlockingIOError, socket.timeout, InterruptedError):
                    continue
                except OSError as e:
                    self._lose(peer, f"receive failed: {e}")
                    continue
                if not chunk:
                    self._lose(peer, "connection closed")
                    continue
                buf = self._bufs[peer] + chunk
                end = buf.rfind(b"\n") + 1
                self._bufs[peer] = buf[end:]
                if not end:
                    continue
                on_message = self._on_message
                for line in buf[:end - 1].decode("utf-8", "replace").split("\n"):
                    try:
                        on_message(peer, line.split(SEP))
                    except Exception as e:  # noqa: BLE001 - a bad message must not break the reader
                        self._on_lost_safe(peer, f"bad message from rank {peer}: {e!r}")
            return True
        finally:
            self._rlock.release()

    def _lose(self, peer: int, why: str) -> None:
        if peer in self._lost or self._closed:
            return
        self._lost.add(peer)
        self._on_lost_safe(peer, why)

    def _on_lost_safe(self, peer: int, why: str) -> None:
        try:
            self._on_lost(peer, why)
        except Exception:  # noqa: BLE001 - callbacks are ours; never kill the reader
            pass

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        got = self._rlock.acquire(timeout=1.0)  # let a reader in select finish (bounded by its timeout)
        try:
            for c in self._socks.values():
                try:
                    c.close()
                except OSError:
                    pass
        finally:
            if got:
                self._rlock.release()


def _read_line(c: socket.socket, deadline: float, limit: int = 256) -> str:
    buf = b""
    while not buf.endswith(b"\n"):
        if time.monotonic() > deadline or len(buf) > limit:
            raise ValueError("no hello")
        b = c.recv(1)
        if not b:
            raise ValueError("closed")
        buf += b
    return buf[:-1].decode()


