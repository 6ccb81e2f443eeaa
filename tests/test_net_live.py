"""The network probes against this machine's real interfaces, resolver and loopback sockets."""

from __future__ import annotations

import ctypes
import ctypes.util
import json
import shutil
import socket
import subprocess
import sys
import time
from datetime import timedelta

import pytest

from commdoctor.core import netselect as ns
from commdoctor.probes import net
from tests.conftest import REPO, needs_torch, run_json
from tests.netlab import clean_env, parallel


class _Sockaddr(ctypes.Structure):
    _fields_ = [("sa_family", ctypes.c_ushort), ("sa_data", ctypes.c_ubyte * 14)]


class _Ifaddrs(ctypes.Structure):
    pass


_Ifaddrs._fields_ = [("ifa_next", ctypes.POINTER(_Ifaddrs)), ("ifa_name", ctypes.c_char_p), ("ifa_flags", ctypes.c_uint),
                     ("ifa_addr", ctypes.POINTER(_Sockaddr)), ("ifa_netmask", ctypes.POINTER(_Sockaddr)),
                     ("ifa_ifu", ctypes.POINTER(_Sockaddr)), ("ifa_data", ctypes.c_void_p)]


def libc_getifaddrs() -> list[tuple[str, str, bool]]:
    """(name, address, IFF_RUNNING) in the order libc's getifaddrs(3) returns them: what NCCL and gloo walk."""
    libc = ctypes.CDLL(ctypes.util.find_library("c"))
    head = ctypes.POINTER(_Ifaddrs)()
    assert libc.getifaddrs(ctypes.byref(head)) == 0
    out = []
    try:
        q = head
        while q:
            e = q.contents
            if e.ifa_addr and e.ifa_addr.contents.sa_family in (socket.AF_INET, socket.AF_INET6):
                fam = e.ifa_addr.contents.sa_family
                base = ctypes.cast(e.ifa_addr, ctypes.c_void_p).value or 0
                raw = ctypes.string_at(base + 4, 4) if fam == socket.AF_INET else ctypes.string_at(base + 8, 16)
                out.append((e.ifa_name.decode(), socket.inet_ntop(fam, raw), bool(e.ifa_flags & 0x40)))
            q = e.ifa_next
    finally:
        libc.freeifaddrs(head)
    return out


def test_interface_order_and_running_flags_match_libc() -> None:
    ifaces = ns.interfaces_from(net.interfaces())
    libc = libc_getifaddrs()
    assert [(n, a) for n, a, _ in libc] == [(i.name, a.address) for i, a in ns.ifaddrs_order(ifaces)]
    running = {i.name: i.running for i in ifaces}
    assert all(running[n] == r for n, _, r in libc)
    lo = next(i for i in ifaces if i.name == "lo")
    assert lo.kind == "loopback" and lo.addrs[0].address == "127.0.0.1" and lo.addrs[0].prefixlen == 8


def test_resolve_is_bounded_and_says_why() -> None:
    r = net.resolve("localhost", timeout=5)
    assert "127.0.0.1" in [a["address"] for a in r["addresses"]] and r["error"] is None
    r = net.resolve("cdn-no-such-host.invalid", timeout=5)
    assert r["addresses"] == [] and r["error"] and (r["gai_code"] is not None or r["timed_out"])
    t0 = time.monotonic()
    ok, _, _ = net.with_deadline(lambda: time.sleep(5), 0.2)
    assert not ok and time.monotonic() - t0 < 2


def test_tcp_connect_open_and_refused_on_loopback() -> None:
    with socket.socket() as srv:
        srv.bind(("127.0.0.1", 0))
        srv.listen()
        port = srv.getsockname()[1]
        r = net.tcp_connect("127.0.0.1", port, timeout=3)
        assert r["outcome"] == "open"
        found = net.listeners(port)
        assert found["error"] is None
        mine = [x for x in found["listeners"] if x.get("pid") == __import__("os").getpid()]
        assert mine and mine[0]["address"] == "127.0.0.1" and sys.executable.split("/")[-1][:6] in " ".join(mine[0]["cmdline"])
        assert net.can_listen("127.0.0.1", port)["ok"] is False
    r = net.tcp_connect("127.0.0.1", port, timeout=3)
    assert r["outcome"] == "refused" and r["errno"] == "ECONNREFUSED" and r["icmp"] is None


def test_route_lookup_sends_nothing_and_names_the_device() -> None:
    r = net.route_get("127.0.0.1")
    assert r["error"] is None and r["src"] == "127.0.0.1"
    if shutil.which("ip"):
        assert r["dev"] == "lo" and r["via"] == "ip route get"
    else:  # ip(8) is not installed (e.g. some GPU images): the kernel's source address, by a UDP connect
        assert r["dev"] is None and r["via"] == "udp connect"


@needs_torch
def test_store_handshake_real_and_fake() -> None:
    import torch.distributed as dist  # the test process may import torch; commdoctor's probe does it in a child

    store = dist.TCPStore("127.0.0.1", 0, is_master=True, wait_for_workers=False, timeout=timedelta(seconds=10))
    store.set("k", "v")
    with socket.socket() as srv:  # accepts, answers nothing like a store
        srv.bind(("127.0.0.1", 0))
        srv.listen()
        t0 = time.monotonic()
        real, fake = parallel(lambda: net.store_handshake("127.0.0.1", store.port, timeout=30),
                              lambda: net.store_handshake("127.0.0.1", srv.getsockname()[1], timeout=12))
    assert real["ok"] is True and real["num_keys"] >= 1 and real["torch"].startswith("2.")
    # torch's client waits on a silent server past its own timeout: the probe ends it
    assert fake["ok"] is False and fake.get("error") and time.monotonic() - t0 < 25


def test_layering_no_torch_no_rich() -> None:
    code = ("import sys, commdoctor.core.netselect, commdoctor.core.rendezvous, commdoctor.probes.net, "
            "commdoctor.checks.net, commdoctor.checks.rdzv; "
            "print([m for m in ('torch', 'rich', 'textual') if m in sys.modules])")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=str(REPO), timeout=60)
    assert p.stdout.strip() == "[]", p.stderr


def test_cli_on_this_host_reports_each_backend() -> None:
    doc, p = run_json("run", "--select", "NET", env=clean_env())
    sel = next(r for r in doc["results"] if r["check"] == "net.selection")
    assert sel["status"] in ("passed", "failed")
    assert set(sel["data"]["selection"]) == {"nccl", "gloo", "tp"}
    assert all(r["status"] != "crashed" for r in doc["results"]), [r["error"] for r in doc["results"]]
    assert sel["summary"].startswith("NCCL: ")
    json.dumps(doc)  # JSON-safe all the way down
