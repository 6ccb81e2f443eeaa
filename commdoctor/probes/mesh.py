"""Sockets for the cross-node checks: listeners the other nodes connect to, connection probes, a clock.

Promise: plain sockets only (no torch). A ``Listener`` accepts on one port
from a background thread and answers two tiny requests: ``T`` (this host's
wall clock, for skew) and anything else by closing. Every accept, read and
connect is bounded; ``close`` stops the thread within a second. The only
traffic is to the addresses the other nodes of this job published.
"""

from __future__ import annotations

import socket
import struct
import threading
import time
from typing import Any, Sequence

from commdoctor.probes.net import tcp_connect


class Listener:
    """A TCP listener on ``port`` (0: one the kernel picks from the ephemeral range)."""

    def __init__(self, port: int = 0, address: str = "0.0.0.0") -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind((address, port))
        self.sock.listen(64)
        self.sock.settimeout(0.2)
        self.port = int(self.sock.getsockname()[1])
        self.accepted = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, name=f"mesh-listener:{self.port}", daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            self.accepted += 1
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    @staticmethod
    def _answer(conn: socket.socket) -> None:
        try:
            conn.settimeout(2.0)
            while True:
                req = conn.recv(1)
                if req != b"T":
                    return
                conn.sendall(struct.pack("!d", time.time()))
        except OSError:
            pass
        finally:
            conn.close()

    def close(self) -> None:
        self._stop.set()
        try:
            self.sock.close()
        except OSError:
            pass
        self._thread.join(1.0)


def try_listen(port: int) -> tuple[Listener | None, str | None]:
    """A listener on ``port``, or the reason it could not be had (port taken, no permission)."""
    try:
        return Listener(port), None
    except OSError as e:
        return None, e.strerror or str(e)


def probe_all(targets: Sequence[tuple[str, str, int]], timeout: float) -> list[dict[str, Any]]:
    """``tcp_connect`` to every (label, address, port) at once; each result carries its label."""
    out: list[dict[str, Any] | None] = [None] * len(targets)

    def one(n: int, label: str, addr: str, port: int) -> None:
        r = tcp_connect(addr, port, timeout)
        r["label"] = label
        out[n] = r

    threads = [threading.Thread(target=one, args=(n, *t), daemon=True) for n, t in enumerate(targets)]
    for t in threads:
        t.start()
    end = time.monotonic() + timeout + 3.0
    for t in threads:
        t.join(max(0.0, end - time.monotonic()))
    return [r or {"label": lbl, "address": a, "port": p, "outcome": "timeout", "error": "the probe overran its deadline"}
            for (lbl, a, p), r in zip(targets, out)]


def clock_offset(address: str, port: int, samples: int = 5, timeout: float = 2.0) -> dict[str, Any]:
    """The peer's wall clock minus ours, from the round trip with the smallest delay (NTP's idea)."""
    best: tuple[float, float] | None = None
    try:
        with socket.create_connection((address, port), timeout=timeout) as s:
            s.settimeout(timeout)
            for _ in range(samples):
                t0 = time.time()
                s.sendall(b"T")
                buf = b""
                while len(buf) < 8:
                    chunk = s.recv(8 - len(buf))
                    if not chunk:
                        raise OSError("the peer closed the connection")
                    buf += chunk
                t1 = time.time()
                (peer,) = struct.unpack("!d", buf)
                rtt = t1 - t0
                off = peer - (t0 + t1) / 2
                if best is None or rtt < best[0]:
                    best = (rtt, off)
    except OSError as e:
        if best is None:
            return {"ok": False, "error": e.strerror or str(e)}
    if best is None:
        return {"ok": False, "error": "no sample"}
    return {"ok": True, "offset_s": round(best[1], 6), "rtt_s": round(best[0], 6)}
