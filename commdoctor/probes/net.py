"""Live network facts: interfaces, name resolution, routes, TCP reachability, port holders, TCPStore.

Promise: every function returns plain, JSON-safe data within its own deadline,
whatever the network does (a resolver that never answers, an address that
drops packets, a port that answers garbage). Nothing here sends a packet
anywhere but to the address it was asked about: route lookups ask the kernel
(``ip route get``, or a UDP socket connected without sending), and the only
traffic is one TCP handshake per address. torch is imported only in a child
process (``store_handshake``).
"""

from __future__ import annotations

import errno
import ipaddress
import json
import os
import select
import shutil
import socket
import struct
import sys
import threading
import time
from typing import Any, Callable, Sequence, TypeVar

from commdoctor.core.netselect import INET, INET6, IfAddr, Interface, classify
from commdoctor.probes.proc import run_bounded

T = TypeVar("T")

#: Environment variables the network checks read (the offline loaders supply the same).
NET_ENV_PREFIXES = ("NCCL_SOCKET_", "NCCL_COMM_ID", "GLOO_SOCKET_IFNAME", "TP_SOCKET_IFNAME", "MASTER_", "PET_",
                    "WORLD_SIZE", "LOCAL_WORLD_SIZE", "RANK", "LOCAL_RANK", "TORCHELASTIC_RUN_ID", "SLURM_NNODES",
                    "SLURM_JOB_NUM_NODES", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_SIZE")


class Budget:
    """The network preflight's shared time budget (``--timeout``), started at first use."""

    def __init__(self, total: float) -> None:
        self.total = float(total)
        self.start = time.monotonic()

    def left(self) -> float:
        return max(0.0, self.start + self.total - time.monotonic())

    def slice(self, cap: float, keep: float = 0.0) -> float:
        """At most ``cap`` seconds, leaving ``keep`` seconds of the budget for what follows."""
        return max(0.2, min(cap, self.left() - keep))


def net_env(environ: dict[str, str] | None = None) -> dict[str, str]:
    env = os.environ if environ is None else environ
    return {k: v for k, v in env.items() if k.startswith(NET_ENV_PREFIXES)}


def with_deadline(fn: Callable[[], T], timeout: float) -> tuple[bool, T | None, BaseException | None]:
    """Run ``fn`` in a daemon thread: (finished, value, exception). An overrun thread is abandoned.

    getaddrinfo has no timeout of its own; a resolver that never answers would
    otherwise hold the run.
    """
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = fn()
        except BaseException as e:  # noqa: BLE001 - handed back to the caller
            box["error"] = e

    t = threading.Thread(target=target, daemon=True, name="net-probe")
    t.start()
    t.join(timeout)
    if t.is_alive():
        return False, None, None
    return True, box.get("value"), box.get("error")


# -- interfaces --------------------------------------------------------------------------------------


def _read(path: str) -> str | None:
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return None


def _ip_link_details(timeout: float = 3.0) -> dict[str, dict[str, Any]]:
    """``ip -d -j link`` by name: link kind (veth, bridge, vxlan...) and master; {} without ip(8)."""
    ip = shutil.which("ip")
    if not ip:
        return {}
    r = run_bounded([ip, "-d", "-j", "link", "show"], timeout=timeout)
    if r.timed_out or r.returncode != 0:
        return {}
    try:
        rows = json.loads(r.stdout or "[]")
    except ValueError:
        return {}
    return {str(row["ifname"]): row for row in rows if isinstance(row, dict) and row.get("ifname")}


def interfaces(sys_root: str = "/sys/class/net") -> list[dict[str, Any]]:
    """Every interface: name, index, kind, up/running, MTU, addresses (in kernel order), bridge relations."""
    import psutil

    addrs = psutil.net_if_addrs()
    try:
        stats = psutil.net_if_stats()
    except OSError:
        stats = {}
    details = _ip_link_details()
    names = list(dict.fromkeys([*addrs.keys(), *(os.listdir(sys_root) if os.path.isdir(sys_root) else [])]))
    out: list[Interface] = []
    for name in names:
        base = os.path.join(sys_root, name)
        flags_text = _read(os.path.join(base, "flags"))
        flags = int(flags_text, 16) if flags_text and flags_text.startswith("0x") else 0
        operstate = _read(os.path.join(base, "operstate")) or ""
        st = stats.get(name)
        up = bool(flags & 0x1) if flags_text else bool(st and st.isup)
        st_flags = getattr(st, "flags", "") or ""
        # IFF_RUNNING is what getifaddrs reports; sysfs "flags" omits it, operstate carries it.
        running = ("running" in st_flags.split(",")) if st_flags else (up and operstate in ("up", "unknown"))
        d = details.get(name, {})
        link_kind = (d.get("linkinfo") or {}).get("info_kind")
        link_type_text = _read(os.path.join(base, "type"))
        uevent = _read(os.path.join(base, "uevent")) or ""
        devtype = next((ln.split("=", 1)[1] for ln in uevent.splitlines() if ln.startswith("DEVTYPE=")), None)
        kind = classify(name, link_type=int(link_type_text) if link_type_text and link_type_text.isdigit() else None,
                        link_kind=link_kind, loopback=bool(flags & 0x8),
                        has_device=os.path.exists(os.path.join(base, "device")),
                        is_bridge=os.path.isdir(os.path.join(base, "bridge")), devtype=devtype)
        master = d.get("master")
        if master is None:
            m = os.path.join(base, "master")
            master = os.path.basename(os.path.realpath(m)) if os.path.islink(m) else None
        ports: tuple[str, ...] = ()
        if kind == "bridge":
            try:
                ports = tuple(sorted(os.listdir(os.path.join(base, "brif"))))
            except OSError:
                ports = ()
        ifaddrs = []
        for a in addrs.get(name, ()):
            fam = INET if a.family == socket.AF_INET else INET6 if a.family == socket.AF_INET6 else None
            if fam is None:
                continue
            ifaddrs.append(IfAddr(fam, a.address.split("%")[0], _prefixlen(a.netmask)))
        index_text = _read(os.path.join(base, "ifindex"))
        out.append(Interface(
            name=name, index=int(index_text) if index_text and index_text.isdigit() else int(d.get("ifindex") or 0),
            kind=kind, up=up, running=running, mtu=(st.mtu if st else None) or d.get("mtu"), addrs=tuple(ifaddrs),
            link_kind=link_kind, master=master, ports=ports, speed_mbps=(st.speed or None) if st else None,
        ))
    out.sort(key=lambda i: i.index)
    return [i.to_dict() for i in out]


def _prefixlen(netmask: str | None) -> int | None:
    if not netmask:
        return None
    try:
        return bin(int(ipaddress.ip_address(netmask.split("%")[0]))).count("1")
    except ValueError:
        return None


# -- names ---------------------------------------------------------------------------------------------


def _family(f: int) -> str:
    return INET if f == socket.AF_INET else INET6 if f == socket.AF_INET6 else str(f)


def resolve(host: str, timeout: float, port: int | None = None) -> dict[str, Any]:
    """Every address ``host`` resolves to (getaddrinfo, TCP), in order, under a deadline."""
    t0 = time.monotonic()
    ok, infos, err = with_deadline(lambda: socket.getaddrinfo(host, port, 0, socket.SOCK_STREAM, 0,
                                                              socket.AI_CANONNAME), timeout)
    out: dict[str, Any] = {"host": host, "addresses": [], "error": None, "gai_code": None, "timed_out": False}
    if not ok:
        out["timed_out"] = True
        out["error"] = f"the resolver did not answer within {timeout:g} s"
    elif err is not None:
        if isinstance(err, socket.gaierror):
            out["gai_code"] = err.errno
            out["error"] = f"getaddrinfo: {err.strerror} (gai error {err.errno})"
        else:
            out["error"] = f"{type(err).__name__}: {err}"
    else:
        seen = set()
        canon = ""
        for fam, _, _, cname, sa in infos or ():
            canon = canon or cname
            a = str(sa[0]).split("%")[0]
            if (fam, a) in seen:
                continue
            seen.add((fam, a))
            out["addresses"].append({"family": _family(fam), "address": a})
        out["canonname"] = canon
    out["elapsed_s"] = round(time.monotonic() - t0, 4)
    return out


def _can_bind(family: str, address: str) -> bool:
    fam = socket.AF_INET if family == INET else socket.AF_INET6
    try:
        with socket.socket(fam, socket.SOCK_STREAM) as s:
            s.bind((address, 0))
        return True
    except OSError:
        return False


def hostname_facts(timeout: float = 5.0, hosts_file: str = "/etc/hosts") -> dict[str, Any]:
    """The hostname, what it resolves to (with a real bind(2) per address, as gloo tries), and /etc/hosts lines."""
    name = socket.gethostname()
    r = resolve(name, timeout)
    for a in r["addresses"]:
        a["bindable"] = _can_bind(a["family"], a["address"])
    r["hostname"] = name
    lines = []
    try:
        with open(hosts_file, errors="replace") as f:
            for n, line in enumerate(f, 1):
                words = line.split("#", 1)[0].split()
                if len(words) >= 2 and name in words[1:]:
                    lines.append({"line": n, "text": line.rstrip("\n")})
    except OSError:
        pass
    r["hosts_file"] = hosts_file
    r["hosts_lines"] = lines
    return r


# -- routes --------------------------------------------------------------------------------------------


def route_get(address: str, timeout: float = 2.0) -> dict[str, Any]:
    """The kernel's route to ``address``: device, source address, gateway. No packet is sent."""
    out: dict[str, Any] = {"address": address, "dev": None, "src": None, "gateway": None, "type": None, "error": None}
    ip = shutil.which("ip")
    if ip:
        r = run_bounded([ip, "-j", "route", "get", address], timeout=timeout)
        if not r.timed_out and r.returncode == 0:
            try:
                rows = json.loads(r.stdout or "[]")
                row = rows[0] if rows else {}
                out.update(dev=row.get("dev"), src=row.get("prefsrc"), gateway=row.get("gateway"),
                           type=row.get("type") or "unicast", via="ip route get")
                return out
            except (ValueError, IndexError, AttributeError):
                pass
        elif not r.timed_out:
            msg = (r.stderr or r.stdout).strip()
            out["error"] = msg or f"ip route get exited with status {r.returncode}"
            out["type"] = "unreachable" if "unreachable" in msg.lower() else "error"
            out["via"] = "ip route get"
            return out
    # Without ip(8): connect a UDP socket (sends nothing) and read the source address the kernel picked.
    try:
        fam = socket.AF_INET6 if ":" in address else socket.AF_INET
        with socket.socket(fam, socket.SOCK_DGRAM) as s:
            s.connect((address, 9))
            out.update(src=s.getsockname()[0], type="unicast", via="udp connect")
    except OSError as e:
        out.update(error=f"{e.strerror or e}", type="unreachable" if e.errno in (errno.ENETUNREACH, errno.EHOSTUNREACH)
                   else "error", via="udp connect")
    return out


def neighbour(address: str, timeout: float = 2.0) -> str | None:
    """The ARP/NDP state of an on-link address (REACHABLE, FAILED, INCOMPLETE...), when ip(8) knows it."""
    ip = shutil.which("ip")
    if not ip:
        return None
    r = run_bounded([ip, "-j", "neigh", "show", address], timeout=timeout)
    try:
        rows = json.loads(r.stdout or "[]") if not r.timed_out and r.returncode == 0 else []
    except ValueError:
        return None
    for row in rows:
        st = row.get("state")
        if st:
            return ",".join(st) if isinstance(st, list) else str(st)
    return None


# -- TCP ----------------------------------------------------------------------------------------------


def _icmp_socket(family: int) -> socket.socket | None:
    """A raw ICMP socket to see who rejected a connection (needs CAP_NET_RAW); None without it."""
    try:
        if family == socket.AF_INET:
            s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
        else:
            s = socket.socket(socket.AF_INET6, socket.SOCK_RAW, socket.IPPROTO_ICMPV6)
        s.setblocking(False)
        return s
    except OSError:
        return None


def _icmp_for(raw: socket.socket, family: int, dst: str, dport: int, sport: int) -> dict[str, Any] | None:
    """The ICMP destination-unreachable message about our SYN (dst:dport from sport), if one came."""
    for _ in range(256):
        try:
            pkt, addr = raw.recvfrom(4096)
        except (BlockingIOError, InterruptedError):
            return None
        except OSError:
            return None
        try:
            if family == socket.AF_INET:
                ihl = (pkt[0] & 0x0F) * 4
                typ, code = pkt[ihl], pkt[ihl + 1]
                inner = pkt[ihl + 8:]
                iihl = (inner[0] & 0x0F) * 4
                idst = socket.inet_ntop(socket.AF_INET, inner[16:20])
                proto = inner[9]
                isport, idport = struct.unpack("!HH", inner[iihl:iihl + 4])
                if typ != 3:
                    continue
            else:
                typ, code = pkt[0], pkt[1]  # the kernel strips the IPv6 header for raw ICMPv6
                inner = pkt[8:]
                idst = socket.inet_ntop(socket.AF_INET6, inner[24:40])
                proto = inner[6]
                isport, idport = struct.unpack("!HH", inner[40:44])
                if typ != 1:
                    continue
        except (IndexError, struct.error, ValueError, OSError):
            continue
        if proto == 6 and idst == dst and idport == dport and isport == sport:
            return {"from": addr[0], "type": typ, "code": code}
    return None


def tcp_connect(address: str, port: int, timeout: float, watch_icmp: bool = True) -> dict[str, Any]:
    """One TCP handshake to ``address:port`` under a deadline; says how it ended.

    outcome: "open" (connected), "refused" (a TCP reset: nothing listens),
    "rejected" (an ICMP unreachable came back: a firewall's REJECT),
    "timeout" (no answer: dropped packets, a firewall's DROP, or nobody at that
    address), "unreachable" (no route, or no host answered ARP/NDP), "error".
    """
    fam = socket.AF_INET6 if ":" in address else socket.AF_INET
    out: dict[str, Any] = {"address": address, "port": port, "outcome": "error", "errno": None, "error": None,
                           "elapsed_s": None, "icmp": None}
    raw = _icmp_socket(fam) if watch_icmp else None
    t0 = time.monotonic()
    try:
        s = socket.socket(fam, socket.SOCK_STREAM)
    except OSError as e:
        out["error"] = str(e)
        return out
    try:
        s.setblocking(False)
        rc: int | None = s.connect_ex((address, port))
        if rc in (errno.EINPROGRESS, errno.EWOULDBLOCK, errno.EALREADY):
            _, w, _ = select.select([], [s], [], max(0.0, timeout))
            rc = s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) if w else None
        out["elapsed_s"] = round(time.monotonic() - t0, 4)
        try:
            sport = s.getsockname()[1]
        except OSError:
            sport = 0
        if rc is None:
            out.update(outcome="timeout", error=f"no answer within {timeout:g} s")
        elif rc == 0:
            out["outcome"] = "open"
        else:
            out.update(errno=errno.errorcode.get(rc, str(rc)), error=os.strerror(rc))
            if raw is not None and rc in (errno.ECONNREFUSED, errno.EHOSTUNREACH, errno.ENETUNREACH, errno.EACCES,
                                          errno.EPERM):
                time.sleep(0.02)  # the ICMP message is queued with the error, but let it land
                out["icmp"] = _icmp_for(raw, fam, address, port, sport)
            if rc == errno.ECONNREFUSED:
                out["outcome"] = "rejected" if out["icmp"] else "refused"
            elif rc in (errno.EHOSTUNREACH, errno.ENETUNREACH):
                # An ICMP message from the target itself (or a router) with an admin-prohibited code is a firewall.
                icmp = out["icmp"]
                admin = icmp is not None and icmp.get("code") in ((9, 10, 13) if fam == socket.AF_INET else (1,))
                out["outcome"] = "rejected" if admin else "unreachable"
            elif rc in (errno.ETIMEDOUT,):
                out["outcome"] = "timeout"
            elif rc in (errno.EACCES, errno.EPERM):
                out["outcome"] = "rejected"  # a local OUTPUT rule
    except OSError as e:
        out.update(errno=errno.errorcode.get(e.errno or 0), error=e.strerror or str(e),
                   outcome="unreachable" if e.errno in (errno.ENETUNREACH, errno.EHOSTUNREACH) else "error",
                   elapsed_s=round(time.monotonic() - t0, 4))
    finally:
        s.close()
        if raw is not None:
            raw.close()
    return out


def connect_all(addresses: Sequence[str], port: int, timeout: float) -> list[dict[str, Any]]:
    """``tcp_connect`` to every address at once (torch tries them in turn; we need not wait for each)."""
    results: list[dict[str, Any] | None] = [None] * len(addresses)

    def one(n: int, a: str) -> None:
        results[n] = tcp_connect(a, port, timeout)

    threads = [threading.Thread(target=one, args=(n, a), daemon=True) for n, a in enumerate(addresses)]
    for t in threads:
        t.start()
    end = time.monotonic() + timeout + 2.0
    for t in threads:
        t.join(max(0.0, end - time.monotonic()))
    return [r or {"address": a, "port": port, "outcome": "timeout", "error": "the probe overran its deadline"}
            for a, r in zip(addresses, results)]


# -- processes ------------------------------------------------------------------------------------------


def listeners(port: int, timeout: float = 5.0) -> dict[str, Any]:
    """Who listens on TCP ``port`` here: address, pid, command line, and whether it belongs to this job."""
    import psutil

    def scan() -> list[dict[str, Any]]:
        rows = []
        for c in psutil.net_connections(kind="tcp"):
            if c.status != psutil.CONN_LISTEN or not c.laddr or c.laddr.port != port:
                continue
            row: dict[str, Any] = {"address": c.laddr.ip, "port": port, "pid": c.pid}
            if c.pid:
                try:
                    p = psutil.Process(c.pid)
                    row["name"] = p.name()
                    row["cmdline"] = p.cmdline()
                    try:
                        env = p.environ()
                        row["env"] = {k: env[k] for k in ("MASTER_PORT", "MASTER_ADDR", "TORCHELASTIC_RUN_ID",
                                                          "PET_RDZV_ENDPOINT") if k in env}
                    except (psutil.AccessDenied, psutil.ZombieProcess, OSError):
                        pass
                    row["ancestor"] = c.pid in {q.pid for q in psutil.Process().parents()}
                    row["parents"] = [q.pid for q in p.parents()]
                except (psutil.NoSuchProcess, psutil.AccessDenied):
                    pass
            rows.append(row)
        return rows

    ok, rows, err = with_deadline(scan, timeout)
    if not ok:
        return {"port": port, "listeners": [], "error": f"listing sockets did not finish within {timeout:g} s"}
    if err is not None:
        return {"port": port, "listeners": [], "error": f"{type(err).__name__}: {err}"}
    return {"port": port, "listeners": rows or [], "error": None}


def can_listen(address: str, port: int) -> dict[str, Any]:
    """Try to bind ``address:port`` as TCPStore would (SO_REUSEADDR); the errno says why not."""
    fam = socket.AF_INET6 if ":" in address else socket.AF_INET
    try:
        with socket.socket(fam, socket.SOCK_STREAM) as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind((address, port))
        return {"ok": True, "error": None}
    except OSError as e:
        return {"ok": False, "errno": errno.errorcode.get(e.errno or 0), "error": e.strerror or str(e)}


def _netns(pid: str) -> int | None:
    try:
        return os.stat(f"/proc/{pid}/ns/net").st_ino
    except OSError:
        return None


def torchrun_agents(timeout: float = 3.0) -> list[dict[str, Any]]:
    """torchrun / torch.distributed.run processes on this host, with their command lines."""
    import psutil

    from commdoctor.core.rendezvous import TORCHRUN_MARKERS

    def scan() -> list[dict[str, Any]]:
        rows = []
        me = os.getpid()
        mine = _netns("self")
        for p in psutil.process_iter(["pid", "cmdline"]):
            cmd = p.info.get("cmdline") or []
            if p.info["pid"] == me or not cmd:
                continue
            head = " ".join(cmd[:3])
            # An agent in another network namespace (a container, another "host") is not this host's job.
            if any(m in head for m in TORCHRUN_MARKERS) and _netns(str(p.info["pid"])) == mine is not None:
                rows.append({"pid": p.info["pid"], "cmdline": cmd})
        return rows

    ok, rows, _ = with_deadline(scan, timeout)
    return (rows or []) if ok else []


_STORE_PROBE = r"""
import json, sys, time
host, port, timeout = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
out = {"ok": False}
t0 = time.monotonic()
try:
    from datetime import timedelta
    import torch
    import torch.distributed as dist
    out["torch"] = torch.__version__
except Exception as e:
    out["error"] = f"{type(e).__name__}: {e}"; out["stage"] = "import"
    print(json.dumps(out)); sys.exit(0)
out["import_s"] = round(time.monotonic() - t0, 3)
t1 = time.monotonic()

def handshake():
    try:
        s = dist.TCPStore(host, port, is_master=False, timeout=timedelta(seconds=timeout), wait_for_workers=False)
        out["connect_s"] = round(time.monotonic() - t1, 4)
        try:
            out["num_keys"] = int(s.num_keys())
        except Exception as e:
            out["num_keys_error"] = f"{type(e).__name__}: {e}"
        out["ok"] = True
    except Exception as e:
        out["error"] = f"{type(e).__name__}: {str(e).strip().splitlines()[0] if str(e).strip() else ''}"
        out["stage"] = "handshake"
        out["connect_s"] = round(time.monotonic() - t1, 4)

# torch's client can wait on a server that accepts and never answers far past its own timeout
import os, threading
t = threading.Thread(target=handshake, daemon=True)
t.start()
t.join(timeout + 1.0)
if t.is_alive():
    out.update(stage="handshake", connect_s=round(time.monotonic() - t1, 4),
               error=f"no TCPStore answer within {timeout + 1.0:g} s: the port accepted the connection but never replied")
print(json.dumps(out))
sys.stdout.flush()
os._exit(0)
"""


def store_handshake(host: str, port: int, timeout: float) -> dict[str, Any]:
    """A real TCPStore client handshake (torch in a child process) within ``timeout`` seconds overall."""
    # The store's own timeout leaves time for importing torch; the child is killed at our deadline regardless.
    inner = max(1.0, min(3.0, timeout - 3.0))
    t0 = time.monotonic()
    r = run_bounded([sys.executable, "-c", _STORE_PROBE, host, str(port), str(inner)], timeout=timeout)
    elapsed = round(time.monotonic() - t0, 3)
    if r.timed_out:
        return {"ok": False, "stage": "deadline", "error": f"no answer from the TCPStore client within {timeout:g} s",
                "elapsed_s": elapsed}
    line = r.stdout.strip().splitlines()[-1] if r.stdout.strip() else ""
    try:
        out: dict[str, Any] = json.loads(line)
    except ValueError:
        tail = [ln for ln in (r.stderr or "").strip().splitlines() if ln.strip()][-3:]
        return {"ok": False, "stage": "crash", "error": f"the TCPStore probe exited with status {r.returncode}",
                "stderr": tail, "elapsed_s": elapsed}
    out["elapsed_s"] = elapsed
    out["timeout_s"] = inner
    return out


def ephemeral_range() -> tuple[int, int] | None:
    text = _read("/proc/sys/net/ipv4/ip_local_port_range")
    try:
        lo, hi = (int(x) for x in (text or "").split())
        return lo, hi
    except ValueError:
        return None


def gpu_present() -> bool:
    """Whether this host has NVIDIA or AMD GPUs (device nodes), without importing anything."""
    return any(os.path.exists(p) for p in ("/dev/nvidiactl", "/dev/nvidia0", "/dev/kfd")) or bool(
        os.path.isdir("/proc/driver/nvidia/gpus") and os.listdir("/proc/driver/nvidia/gpus"))


# -- composite facts (what the checks ask for) ------------------------------------------------------


def rendezvous_facts(ctx: Any) -> dict[str, Any]:
    """The job's rendezvous endpoints, each resolved, marked local or not, with its route."""
    from commdoctor.core import netselect, rendezvous

    budget: Budget = ctx.fact("net_budget")
    env: dict[str, str] = ctx.fact("net_env")
    ifaces = netselect.interfaces_from(ctx.fact("net_interfaces"))
    given = bool(env.get("MASTER_ADDR") or any(k.startswith("PET_") for k in env))
    # Without settings of its own, commdoctor looks at the torchrun agents running here (a job that hangs now),
    # unless told to leave other jobs alone (COMMDOCTOR_FIND_JOBS=0: a shared node, or a test suite).
    find = os.environ.get("COMMDOCTOR_FIND_JOBS", "1").strip() not in ("0", "no", "false")
    agents = [] if given or not find else torchrun_agents(timeout=min(3.0, budget.left()))
    eps = rendezvous.endpoints(env, agents)
    if agents and "PET_NNODES" not in env:
        from commdoctor.core.rendezvous import parse_torchrun_argv

        nn = [a for a in (parse_torchrun_argv(x.get("cmdline") or []) or {} for x in agents) if a.get("nnodes")]
        if nn:
            env = {**env, "PET_NNODES": nn[0]["nnodes"]}
    rows = []
    for ep in eps:
        row: dict[str, Any] = {"endpoint": ep.to_dict()}
        try:
            lit = ipaddress.ip_address(ep.host.split("%")[0])
            res: dict[str, Any] = {"host": ep.host, "addresses": [{"family": INET if lit.version == 4 else INET6,
                                                                   "address": str(lit)}],
                                   "error": None, "literal": True, "elapsed_s": 0.0}
        except ValueError:
            res = resolve(ep.host, timeout=budget.slice(5.0, keep=2.0))
        row["resolved"] = res
        addrs = [a["address"] for a in res.get("addresses") or ()]
        row["local"] = [netselect.is_local_address(a, ifaces) for a in addrs]
        row["routes"] = [route_get(a, timeout=min(2.0, max(0.2, budget.left()))) for a in addrs
                         if not netselect.is_local_address(a, ifaces)]
        rows.append(row)
    first_local: bool | None = None
    if rows and rows[0]["local"]:
        first_local = all(rows[0]["local"]) if rows[0]["local"] else None
    remote, why = rendezvous.peers_remote(env, first_local)
    return {"endpoints": rows, "agents": agents, "peers_remote": remote, "peers_why": why}


def reach_facts(ctx: Any) -> dict[str, Any]:
    """TCP connection to every address of every endpoint; for an endpoint on this host, who holds its port."""
    budget: Budget = ctx.fact("net_budget")
    rdzv = ctx.fact("net_rdzv")
    out = []
    for row in rdzv["endpoints"]:
        ep = row["endpoint"]
        port = ep.get("port")
        addrs = [a["address"] for a in (row.get("resolved") or {}).get("addresses") or ()]
        item: dict[str, Any] = {"endpoint": ep, "connects": [], "listeners": None, "bind": None}
        if port is None or not addrs:
            out.append(item)
            continue
        if any(row["local"]):
            item["listeners"] = listeners(port, timeout=min(5.0, max(0.5, budget.left())))
            item["bind"] = can_listen("::" if socket.has_ipv6 else "0.0.0.0", port)
        item["connects"] = connect_all(addrs, port, timeout=budget.slice(5.0, keep=1.0))
        for c in item["connects"]:
            if c.get("outcome") in ("timeout", "unreachable"):
                c["neighbour"] = neighbour(c["address"], timeout=1.0)
        out.append(item)
    return {"endpoints": out}


def store_facts(ctx: Any) -> dict[str, Any]:
    """A TCPStore handshake with each endpoint that accepted a connection."""
    budget: Budget = ctx.fact("net_budget")
    reach = ctx.fact("net_reach")
    # Inside a job (commdoctor.probes.multinode) this process is already a client of the job's store: its
    # handshake, keyed "host:port", stands for the one a child process would make again.
    known: dict[str, Any] = ctx.fact("net_store_known") if ctx.facts.has("net_store_known") else {}
    out = []
    for item in reach["endpoints"]:
        ep = item["endpoint"]
        open_addrs = [c["address"] for c in item.get("connects") or () if c.get("outcome") == "open"]
        if not open_addrs or ep.get("kind") == "etcd":
            out.append({"endpoint": ep, "handshake": None})
            continue
        same = known.get(f"{ep.get('host')}:{ep.get('port')}")
        if same is not None:
            out.append({"endpoint": ep, "handshake": {**same, "address": open_addrs[0]}})
            continue
        if budget.left() < 2.0:
            # Too little of --timeout is left to import torch and shake hands: say so rather than fail.
            out.append({"endpoint": ep, "handshake": {"ok": False, "stage": "budget", "address": open_addrs[0],
                                                      "error": f"--timeout {budget.total:g} s ran out before the handshake"}})
            continue
        hs = store_handshake(open_addrs[0], int(ep["port"]), timeout=budget.slice(10.0))
        hs["address"] = open_addrs[0]
        out.append({"endpoint": ep, "handshake": hs})
    return {"endpoints": out}


def extra_port_facts(ctx: Any) -> dict[str, Any]:
    """Probe one closed port in the master's ephemeral range: does a firewall let more than MASTER_PORT through?"""
    budget: Budget = ctx.fact("net_budget")
    reach = ctx.fact("net_reach")
    rng = ephemeral_range() or (32768, 60999)
    out = []
    for item in reach["endpoints"]:
        ep = item["endpoint"]
        opened = [c for c in item.get("connects") or () if c.get("outcome") == "open"]
        if not opened or item.get("listeners") is not None:
            out.append({"endpoint": ep, "probe": None})
            continue
        if budget.left() < 1.0:
            out.append({"endpoint": ep, "probe": None, "skipped": f"--timeout {budget.total:g} s ran out"})
            continue
        port = rng[0] + (int(ep["port"]) * 7919) % max(1, rng[1] - rng[0])
        res = tcp_connect(opened[0]["address"], port, timeout=budget.slice(3.0))
        out.append({"endpoint": ep, "probe": res, "range": list(rng)})
    return {"endpoints": out}
