"""A free TCP port for a test's job, below the kernel's ephemeral range.

Binding port 0 returns a port from the ephemeral range (net.ipv4.ip_local_port_range, 32768-60999 by default), the
range the kernel also hands every outgoing connection its local port from. Between the moment the test releases such a
port and the moment the job's TCPStore listens on it, any connection of the tests running beside it can take it as its
local port: the store then fails with EADDRINUSE (seen once in six full runs with four workers). A port below the range
is never given out that way; a random one, checked by binding it, is free of other listeners too."""

from __future__ import annotations

import random
import socket

_RNG = random.SystemRandom()
#: The lowest port picked: above the well-known and most registered service ports.
LOW = 20000


def _ephemeral_low() -> int:
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def free_port() -> int:
    """A port nothing listens on, below the ephemeral range where it has room; else one the kernel picks."""
    high = _ephemeral_low()
    for _ in range(100 if high - LOW >= 1000 else 0):
        port = _RNG.randrange(LOW, high)
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        return port
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
