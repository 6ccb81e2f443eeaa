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
        # The same port number over UDP answers every datagram with two bytes: the path-MTU probe's echo.
        self.udp: socket.socket | None = None
        try:
            self.udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            self.udp.bind((address, self.port))
            self.udp.settimeout(0.2)
            threading.Thread(target=self._echo, name=f"mesh-echo:{self.port}", daemon=True).start()
        except OSError:
            self.udp = None

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

    def _echo(self) -> None:
        udp = self.udp
        while udp is not None and not self._stop.is_set():
            try:
                data, peer = udp.recvfrom(65535)
                udp.sendto(b"ok" + len(data).to_bytes(4, "big"), peer)
            except socket.timeout:
                continue
            except OSError:
                return

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
        for sk in (self.sock, self.udp):
            try:
                if sk is not None:
                    sk.close()
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


IP_MTU_DISCOVER, IP_PMTUDISC_DO = 10, 2  # linux/in.h: set Don't Fragment, never fragment locally
IPV4_UDP_OVERHEAD = 28  # 20-byte IPv4 header + 8-byte UDP header


def udp_echo(address: str, port: int, payload: int, timeout: float = 0.7, tries: int = 3) -> dict[str, Any]:
    """Send one datagram of ``payload`` bytes with Don't Fragment set to a ``Listener``; did its echo come back?"""
    out: dict[str, Any] = {"payload": payload, "ok": False, "error": None}
    try:
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    except OSError as e:
        out["error"] = e.strerror or str(e)
        return out
    try:
        s.setsockopt(socket.IPPROTO_IP, IP_MTU_DISCOVER, IP_PMTUDISC_DO)
        s.connect((address, port))
        s.settimeout(timeout)
        for _ in range(tries):  # UDP may lose one datagram on a busy host; a black hole loses them all
            try:
                s.send(b"m" * payload)
                data = s.recv(16)
                if data.startswith(b"ok"):
                    out["ok"] = True
                    return out
            except socket.timeout:
                continue
        out["error"] = f"no echo within {tries} x {timeout:g} s"
    except OSError as e:
        out["error"] = e.strerror or str(e)  # EMSGSIZE: larger than this host's own route MTU
    finally:
        s.close()
    return out


def path_mtu(address: str, port: int, mtu: int) -> dict[str, Any]:
    """Whether full-size packets (``mtu`` bytes) reach ``address`` unfragmented while small ones do."""
    small = udp_echo(address, port, 64)
    big = udp_echo(address, port, max(64, mtu - IPV4_UDP_OVERHEAD)) if small["ok"] else None
    return {"mtu": mtu, "small": small, "big": big,
            "black_hole": bool(small["ok"] and big is not None and not big["ok"])}
