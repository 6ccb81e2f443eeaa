"""Rendezvous stage: can this host reach the job's store, and is the store's port free on the master?

Promise: each check is a function of facts (``net_rdzv``, ``net_reach``,
``net_store``, ``net_extra_port``; commdoctor.probes.net in a live run), all
gathered within the network budget (``--timeout``). torch reports a closed
port, an unknown name and an unroutable address alike, as a client timeout
after 18 to 35 s; these checks tell them apart within seconds.
"""

from __future__ import annotations

import ipaddress
import socket
from typing import Any, Iterator, Sequence

from commdoctor.checks.base import Rule
from commdoctor.checks.net import NetCheck
from commdoctor.core.errors import SkipCheck
from commdoctor.core.model import Evidence, Finding, Severity, Stage
from commdoctor.core.context import CheckRun

E, W, I = Severity.ERROR, Severity.WARNING, Severity.INFO

NO_JOB = ("no rendezvous is configured here: MASTER_ADDR/MASTER_PORT and torchrun's PET_RDZV_ENDPOINT are unset "
          "(set them as the job does to test its rendezvous from this host)")


def _var(ep: dict[str, Any]) -> str:
    """The setting that names the endpoint's host, as the user gave it."""
    src = ep.get("source") or ""
    via_endpoint = ep.get("kind") != "env" or any("RDZV_ENDPOINT" in s or "rdzv-endpoint" in s
                                                  for s in ep.get("settings") or ())
    if src.startswith("MASTER_ADDR"):
        return "MASTER_ADDR"
    if src.startswith("PET_"):
        return "PET_RDZV_ENDPOINT" if via_endpoint else "PET_MASTER_ADDR"
    return "--rdzv-endpoint" if via_endpoint else "--master-addr"


def _port_var(ep: dict[str, Any]) -> str:
    v = _var(ep)
    return {"MASTER_ADDR": "MASTER_PORT", "PET_MASTER_ADDR": "PET_MASTER_PORT", "--master-addr": "--master-port"}.get(v, v)


def _port_value(ep: dict[str, Any], port: int | str) -> str:
    """What to give ``_port_var(ep)`` to move the endpoint to ``port``."""
    return f"{ep['host']}:{port}" if _port_var(ep) in ("PET_RDZV_ENDPOINT", "--rdzv-endpoint") else str(port)


def _label(ep: dict[str, Any], address: str | None = None) -> str:
    h = address or ep["host"]
    h = f"[{h}]" if ":" in h else h
    return f"{h}:{ep.get('port')}"


def _settings_ev(ep: dict[str, Any]) -> list[Evidence]:
    src = "env" if (ep.get("source") or "").startswith(("MASTER", "PET_")) else ep.get("source") or "settings"
    return [Evidence(src, s) for s in ep.get("settings") or ()]


def _rows(run: CheckRun) -> list[dict[str, Any]]:
    rows = run.fact("net_rdzv").get("endpoints") or []
    if not rows:
        raise SkipCheck(NO_JOB)
    return rows


def _is_local(row: dict[str, Any]) -> bool:
    return bool(row.get("local")) and all(row["local"])


class EndpointCheck(NetCheck):
    """Where the job's rendezvous is, and what its host name resolves to.

    What it checks:
        Reads the env:// variables (MASTER_ADDR, MASTER_PORT), torchrun's
        settings (PET_RDZV_ENDPOINT, PET_RDZV_BACKEND, PET_MASTER_ADDR, and the
        command lines of torchrun agents running on this host) and resolves
        each endpoint's host under a deadline, listing every address. It also
        asks whether a loopback endpoint is given to a job that spans hosts,
        and, for torchrun's c10d rendezvous, whether torchrun will recognise
        this host as the one that hosts the store.
    Why it matters:
        An unknown name shows in torch only as a warning ("gai error: -2")
        beside a client timeout after 18 to 35 s. torchrun decides who hosts
        the c10d store by comparing the endpoint with what the hostname
        resolves to: when the hostname resolves to 127.0.1.1, no node hosts it
        and every agent waits until RendezvousConnectionError.
    Known limits:
        Names are resolved here; another node may resolve them differently
        (its own /etc/hosts).
    """

    name = "rdzv.endpoint"
    stage = Stage.RENDEZVOUS
    title = "Rendezvous endpoint"
    rules = (
        Rule("RDZV001", "endpoint-does-not-resolve", E, "{var} host {host} does not resolve: {error}",
             "Set {var} to rank 0's IP address, or make {host} resolvable on every node (DNS or /etc/hosts)",
             cause="hostname_resolution"),
        Rule("RDZV002", "resolver-timeout", E, "resolving {host} did not finish within {timeout:g} s",
             "Fix the resolver (/etc/resolv.conf, nsswitch.conf), or give {var} an IP address",
             cause="hostname_resolution"),
        Rule("RDZV003", "loopback-endpoint-for-multi-host-job", E,
             "{var}={host} is a loopback address, but {why}",
             "Set {var} to the first node's routable address, the same on every node{hint}",
             cause="rendezvous_unreachable"),
        Rule("RDZV004", "c10d-store-not-hosted-here", E,
             "torchrun will not host the c10d store on this host, although {addr} is its address",
             "Give the endpoint by this host's name (--rdzv-endpoint={hostname}:{port}), make {hostname} resolve to {addr}, "
             "or pass --rdzv-conf is_host=1 on this node only", cause="hostname_resolution"),
        Rule("RDZV005", "endpoint-setting-unreadable", E, "{source}: {problem}",
             "Give the endpoint as HOST:PORT (IPv6 as [ADDR]:PORT)", cause="launcher_misconfig"),
    )

    def run(self, run: CheckRun) -> Iterator[Finding]:
        rdzv = run.fact("net_rdzv")
        rows = _rows(run)
        h = run.fact("net_hostname")
        parts = []
        run.data["endpoints"] = [r["endpoint"] for r in rows]
        run.data["peers_remote"] = rdzv.get("peers_remote")
        for row in rows:
            ep, res = row["endpoint"], row.get("resolved") or {}
            var = _var(ep)
            ev = _settings_ev(ep)
            for p in ep.get("problems") or ():
                if ep.get("source", "").startswith("MASTER_ADDR"):
                    continue  # env.launcher reports MASTER_PORT (ENV022, ENV023)
                yield self.finding("RDZV005", source=ep["source"], problem=p, evidence=ev)
            addrs = [a["address"] for a in res.get("addresses") or ()]
            if res.get("timed_out"):
                yield self.finding("RDZV002", host=ep["host"], timeout=float(res.get("elapsed_s") or 0), var=var,
                                   evidence=ev + [Evidence("getaddrinfo", res.get("error") or "")])
                parts.append(f"{ep['host']}: resolver timed out")
                continue
            if not addrs:
                yield self.finding("RDZV001", host=ep["host"], error=res.get("error") or "no address", var=var,
                                   evidence=ev + [Evidence("getaddrinfo", res.get("error") or "no address")],
                                   detail="torch's client would only retry until its timeout and then report "
                                          "'The client socket has timed out ... while trying to connect'")
                parts.append(f"{ep['host']}: does not resolve")
                continue
            local = _is_local(row)
            where = "this host is the master" if local else "rank 0 is on another host"
            parts.append(f"{ep['source']} {_label(ep)} -> {', '.join(addrs)} ({where}"
                         + (f", {ep['kind']} store" if ep.get("kind") == "c10d" else "") + ")")
            remote, why = rdzv.get("peers_remote"), rdzv.get("peers_why") or ""
            loop = all(ipaddress.ip_address(a).is_loopback for a in addrs)
            if loop and remote:
                yield self.finding("RDZV003", var=var, host=ep["host"], why=why, evidence=ev,
                                   hint=f" (this host's is {_routable(run)})" if _routable(run) else "",
                                   detail="each node would look for rank 0's store on itself")
            if ep.get("kind") == "c10d" and local and not loop:
                from commdoctor.core.rendezvous import torchrun_is_host

                infos = [(h.get("canonname") or "", a["address"]) for a in h.get("addresses") or ()]
                if not torchrun_is_host(ep["host"], h.get("hostname") or "", infos, addrs):
                    yield self.finding(
                        "RDZV004", addr=addrs[0], hostname=h.get("hostname"), port=ep.get("port"),
                        evidence=ev + [Evidence("getaddrinfo", f"{h.get('hostname')} -> "
                                                + ", ".join(a["address"] for a in h.get("addresses") or ()))],
                        detail="torchrun compares the endpoint with what the hostname resolves to, not with the "
                               "interfaces' addresses; every agent then connects as a client and waits until "
                               "RendezvousConnectionError")
        run.summary("; ".join(parts))


def _routable(run: CheckRun) -> str | None:
    from commdoctor.core import netselect as ns

    ifaces = ns.interfaces_from(run.fact("net_interfaces"))
    good = ns.recommend(ifaces)
    a = good.first(ns.INET) if good else None
    return a.address if a else None


def _agent_pid(ep: dict[str, Any]) -> int | None:
    src = ep.get("source") or ""
    if src.startswith("torchrun (pid "):
        digits = src[len("torchrun (pid "):].rstrip(")")
        return int(digits) if digits.isdigit() else None
    return None


def _free_port(near: int) -> int | None:
    for p in list(range(near + 1, min(65535, near + 50))) + [0]:
        try:
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
                s.bind(("0.0.0.0", p))
                return int(s.getsockname()[1])
        except OSError:
            continue
    return None


def _short_cmd(cmdline: Sequence[str], limit: int = 100) -> str:
    """A command line on one line: ``python -c`` scripts hold newlines, which broke the console layout."""
    text = " ".join(" ".join(str(a).split()) for a in cmdline)
    return text if len(text) <= limit else text[: limit - 3].rstrip() + "..."


def _answers_as_store(run: CheckRun, ep: dict[str, Any]) -> bool:
    """Whether the store handshake (rdzv.store's fact) succeeded on this endpoint."""
    for item in run.fact("net_store").get("endpoints") or ():
        if item.get("endpoint") == ep:
            return bool((item.get("handshake") or {}).get("ok"))
    return False


class PortCheck(NetCheck):
    """On the master host: is the rendezvous port free, and if not, which process holds it.

    What it checks:
        When MASTER_ADDR (or the c10d endpoint) is an address of this host,
        lists the sockets listening on the port with their process id and
        command line (psutil), and tries to bind the port as TCPStore does.
        A holder that is this job's own store (an ancestor of commdoctor, the
        same torchrun run id) is expected, and so is a holder that answers the
        TCPStore handshake (rank 0's store is already up: commdoctor runs
        beside the job); another torch job using the same MASTER_PORT is a
        warning; any other process is an error.
    Why it matters:
        Rank 0 creating the store on a taken port fails with "address already
        in use" (errno 98); a second job started on the same port can instead
        join the first job's store and hang both.
    Known limits:
        Sockets of other network namespaces (containers) are not visible.
    """

    name = "rdzv.port"
    stage = Stage.RENDEZVOUS
    title = "Rendezvous port on this host"
    requires = ("rdzv.endpoint",)
    rules = (
        Rule("RDZV020", "port-in-use", E, "port {port} is already held by {holder}",
             "Stop {stop} or give the job a free port: {port_var}={free_value}", cause="port_conflict",
             steps=("ss -ltnp 'sport = :{port}' shows the holder",)),
        Rule("RDZV021", "store-listens-on-loopback-only", E, "port {port} listens only on {addr}{job}",
             "Make the service on port {port} listen on all addresses (or this host's routable one)",
             cause="rendezvous_unreachable"),
    )

    def run(self, run: CheckRun) -> Iterator[Finding]:
        rows = _rows(run)
        rdzv = run.fact("net_rdzv")
        local_rows = [r for r in rows if _is_local(r) and r["endpoint"].get("port")]
        if not local_rows:
            raise SkipCheck("the rendezvous is on another host; run commdoctor there to check its port")
        items = {(i["endpoint"]["host"], i["endpoint"]["port"]): i for i in run.fact("net_reach")["endpoints"]}
        env = run.fact("net_env")
        parts = []
        for row in local_rows:
            ep = row["endpoint"]
            port = int(ep["port"])
            item = items.get((ep["host"], port)) or {}
            lst = (item.get("listeners") or {}).get("listeners") or []
            bind = item.get("bind") or {}
            if not lst and bind.get("ok", True):
                parts.append(f"port {port} is free (rank 0 will create the store)")
                continue
            agent = _agent_pid(ep)
            ours = [x for x in lst if x.get("ancestor") or (agent is not None and (
                x.get("pid") == agent or agent in (x.get("parents") or ()))) or (
                env.get("TORCHELASTIC_RUN_ID") and (x.get("env") or {}).get("TORCHELASTIC_RUN_ID") == env.get("TORCHELASTIC_RUN_ID"))]
            if ours and len(ours) == len(lst):
                parts.append(f"port {port} is held by this job's store (pid {ours[0].get('pid')})")
                continue
            others = [x for x in lst if x not in ours]
            x = others[0] if others else {}
            cmd = _short_cmd(x.get("cmdline") or []) or x.get("name") or "an unknown process"
            pid = x.get("pid")
            holder = f"pid {pid} ({cmd})" if pid else "a process commdoctor cannot see (another user or container)"
            if _answers_as_store(run, ep):
                # A TCPStore answers on the job's port: rank 0's store is already up (commdoctor runs beside
                # or inside the job). Rank 0 has created it, so "rank 0 will fail" would be false; whether it
                # is this job's store or a stale one, only the user can tell, so say what it is and move on.
                parts.append(f"port {port} is held by a running TCPStore, {holder}: rank 0's store is up "
                             "(if that is not the job you are checking, stop it or give the job another port)")
                continue
            torch_job = str((x.get("env") or {}).get("MASTER_PORT")) == str(port)
            ev = [Evidence("psutil", f"{y.get('address')}:{port} LISTEN pid={y.get('pid')} {_short_cmd(y.get('cmdline') or [], 300)}")
                  for y in others] or [Evidence("bind", f"port {port}: {bind.get('error')}")]
            free = _free_port(port)
            yield self.finding("RDZV020", port=port, holder=holder, stop=f"pid {pid}" if pid else "the process holding it",
                               port_var=_port_var(ep), free_value=_port_value(ep, free) if free else "<a free port>",
                               severity=W if torch_job else E, evidence=ev + _settings_ev(ep),
                               env={_port_var(ep): _port_value(ep, free)} if free and _port_var(ep).isupper() else None,
                               detail=("another torch job uses this port (its MASTER_PORT is the same): if it is the job "
                                       "you are diagnosing, this is expected; a new job on this port fails with "
                                       "'address already in use'" if torch_job else
                                       "rank 0 will fail to create its store: 'address already in use' (errno 98)"))
            remote = rdzv.get("peers_remote")
            loop = [y for y in lst if str(y.get("address")) in ("127.0.0.1", "::1") or str(y.get("address")).startswith("127.")]
            if loop and len(loop) == len(lst) and remote:
                yield self.finding("RDZV021", port=port, addr=loop[0].get("address"),
                                   job=f" while {rdzv.get('peers_why')}", evidence=ev)
            parts.append(f"port {port} held by {holder}")
        run.summary("; ".join(parts))


class ReachCheck(NetCheck):
    """A TCP connection to the rendezvous port, under a deadline, telling refused, rejected, dropped and unreachable apart.

    What it checks:
        Connects to every address of the endpoint at once (no data is sent).
        A TCP reset means nothing listens; an ICMP port-unreachable (seen on a
        raw socket when commdoctor runs as root) means a firewall's REJECT; no
        answer within the deadline means packets are dropped (a firewall's
        DROP, a security group) or nobody has that address; "no route" and a
        failed ARP/NDP lookup mean the address is not on any reachable network.
    Why it matters:
        torch's store client retries each of these silently and reports them
        all as "The client socket has timed out after ... while trying to
        connect" after 18 to 35 s (nothing at all for 90 s with default
        timeouts). The remedies differ: start rank 0, open the firewall, or
        correct MASTER_ADDR.
    Known limits:
        A REJECT that answers with a TCP reset (--reject-with tcp-reset) looks
        exactly like a closed port. Without root, ICMP rejects also look like
        closed ports. On the master host itself, a closed port is expected
        before rank 0 starts.
    """

    name = "rdzv.reach"
    stage = Stage.RENDEZVOUS
    title = "Connection to the rendezvous port"
    requires = ("rdzv.endpoint", "net.route")
    rules = (
        Rule("RDZV010", "nothing-listening", E, "nothing listens on {label} (connection refused)",
             "Start rank 0 (or the node that hosts the store) first, and give every node the same {port_var}={port}",
             cause="rendezvous_unreachable"),
        Rule("RDZV011", "port-rejected-by-firewall", E, "a firewall rejects connections to {label} ({icmp})",
             "Allow TCP port {port} from the job's hosts on {host} (e.g. iptables -I INPUT -p tcp --dport {port} -j ACCEPT), "
             "and the ports gloo and NCCL open (see RDZV040)", cause="firewall_or_port_blocked"),
        Rule("RDZV012", "port-filtered", E, "no answer from {label} within {timeout:.1f} s: packets are dropped",
             "Allow TCP port {port} through the firewall or security group in front of {host}; "
             "if {host} is not rank 0's address, correct {var}", cause="firewall_or_port_blocked"),
        Rule("RDZV013", "master-unreachable", E, "{address} cannot be reached: {why}",
             "Set {var} to rank 0's address on a network this host shares with it", cause="rendezvous_unreachable"),
        Rule("RDZV014", "connect-failed", E, "connecting to {label} failed: {error}",
             "See the error; check {var} and {port_var}", cause="other"),
        Rule("RDZV015", "some-addresses-fail", W, "{host} resolves to {n} addresses and {bad} cannot be reached ({outcome})",
             "Make {host} resolve only to the address rank 0 listens on, or give {var} that address",
             cause="hostname_resolution"),
    )

    def run(self, run: CheckRun) -> Iterator[Finding]:
        _rows(run)
        reach = run.fact("net_reach")
        rdzv_rows = {(r["endpoint"]["host"], r["endpoint"].get("port")): r for r in run.fact("net_rdzv")["endpoints"]}
        parts = []
        run.data["connects"] = []
        for item in reach["endpoints"]:
            ep = item["endpoint"]
            row = rdzv_rows.get((ep["host"], ep.get("port"))) or {}
            cs = item.get("connects") or []
            run.data["connects"].extend(cs)
            if ep.get("port") is None:
                parts.append(f"{ep['host']}: no port to test ({'; '.join(ep.get('problems') or []) or 'unset'})")
                continue
            if not cs:
                continue
            local = _is_local(row)
            ok = [c for c in cs if c.get("outcome") == "open"]
            bad = [c for c in cs if c.get("outcome") != "open"]
            if ok:
                parts.append(f"{_label(ep, ok[0]['address'])} accepts connections ({(ok[0].get('elapsed_s') or 0) * 1e3:.1f} ms)")
                if bad:
                    b = bad[0]
                    yield self.finding("RDZV015", host=ep["host"], n=len(cs), bad=b["address"], outcome=b.get("outcome"),
                                       var=_var(ep), evidence=[self._ev(c, ep) for c in cs])
                continue
            if local and all(c.get("outcome") == "refused" for c in cs):
                parts.append(f"nothing listens on port {ep['port']} yet: rank 0 will create the store here")
                continue
            yield self._failure(bad, ep, run)
            parts.append(f"{_label(ep)}: {bad[0].get('outcome')}")
        run.summary("; ".join(parts))

    @staticmethod
    def _ev(c: dict[str, Any], ep: dict[str, Any]) -> Evidence:
        t = f"connect {_label(ep, c['address'])}: {c.get('outcome')}"
        if c.get("error"):
            t += f" ({str(c['errno']) + ': ' if c.get('errno') else ''}{c['error']})"
        if c.get("elapsed_s") is not None:
            t += f" after {c['elapsed_s']:.3f} s"
        if c.get("icmp"):
            t += f"; ICMP type {c['icmp']['type']} code {c['icmp']['code']} from {c['icmp']['from']}"
        if c.get("neighbour"):
            t += f"; neighbour state {c['neighbour']}"
        return Evidence("probe:tcp", t)

    def _failure(self, bad: list[dict[str, Any]], ep: dict[str, Any], run: CheckRun) -> Finding:
        order = ("rejected", "refused", "timeout", "unreachable", "error")
        c = sorted(bad, key=lambda c: order.index(c.get("outcome")) if c.get("outcome") in order else 9)[0]
        ev = [self._ev(x, ep) for x in bad] + _settings_ev(ep)
        common = dict(label=_label(ep, c["address"]), port=ep["port"], host=ep["host"], var=_var(ep),
                      port_var=_port_var(ep), evidence=ev)
        out = c.get("outcome")
        if out == "refused":
            return self.finding("RDZV010", **common,
                                detail="a TCP reset came back: the host is there but no process listens on the port "
                                       "(torch's client retries quietly until its timeout)")
        if out == "rejected":
            icmp = c.get("icmp") or {}
            what = f"ICMP type {icmp.get('type')} code {icmp.get('code')} from {icmp.get('from')}" if icmp else c.get("error")
            return self.finding("RDZV011", icmp=what, **common)
        nb = c.get("neighbour") or ""
        if out in ("timeout", "unreachable") and ("FAILED" in nb or "INCOMPLETE" in nb):
            return self.finding("RDZV013", address=c["address"], **common,
                                why="no host on this host's local network answers ARP/NDP for it",
                                detail=f"the kernel reports '{c.get('error')}', but the route exists: the address is on "
                                       f"a directly attached network and nobody holds it (a wrong MASTER_ADDR, or rank 0's "
                                       f"host is down)")
        if out == "timeout":
            return self.finding("RDZV012", timeout=float(c.get("elapsed_s") or 0), **common,
                                detail="the SYN got no answer at all: a firewall DROP rule or security group, or an "
                                       "address nobody uses behind a router")
        if out == "unreachable":
            return self.finding("RDZV013", address=c["address"], why=f"{c.get('errno')}: {c.get('error')}", **common)
        return self.finding("RDZV014", error=f"{c.get('errno')}: {c.get('error')}", **common)


class StoreCheck(NetCheck):
    """A real TCPStore client handshake with the rendezvous port.

    What it checks:
        Starts a child process that imports torch and connects a
        torch.distributed.TCPStore client (is_master=False) with a short
        timeout, then asks for the number of keys.
    Why it matters:
        A port that accepts TCP connections may belong to another service (a
        web server, a second job's agent on a reused port, a proxy). torch then
        fails with "Connection reset by peer" or waits for its whole timeout.
    Known limits:
        Needs torch in this interpreter. etcd rendezvous endpoints are only
        tested for TCP.
    """

    name = "rdzv.store"
    stage = Stage.RENDEZVOUS
    title = "TCPStore handshake"
    requires = ("rdzv.reach",)
    rules = (
        Rule("RDZV030", "not-a-tcpstore", E, "{label} accepts connections but does not answer as a TCPStore: {error}",
             "Another service holds port {port} on {host}: give the job a free port ({port_var}) and check {var}",
             cause="port_conflict"),
    )

    def run(self, run: CheckRun) -> Iterator[Finding]:
        _rows(run)
        st = run.fact("net_store")
        parts = []
        for item in st["endpoints"]:
            ep, hs = item["endpoint"], item.get("handshake")
            if hs is None:
                continue
            label = _label(ep, hs.get("address"))
            if hs.get("ok"):
                parts.append(f"{label} answered in {(hs.get('connect_s') or 0) * 1e3:.0f} ms"
                             + (f", {hs['num_keys']} key{'s' if hs['num_keys'] != 1 else ''}"
                                if hs.get("num_keys") is not None else "")
                             + (f" (torch {hs.get('torch')})" if hs.get("torch") else ""))
                continue
            if hs.get("stage") == "budget":
                raise SkipCheck(f"{hs.get('error')} (give a larger --timeout)")
            if hs.get("stage") == "import":
                raise SkipCheck(f"torch cannot be imported here ({hs.get('error')}): the handshake needs it")
            yield self.finding("RDZV030", label=label, error=hs.get("error") or "no answer", port=ep["port"],
                               host=ep["host"], var=_var(ep), port_var=_port_var(ep),
                               evidence=[Evidence("probe:tcpstore", f"{hs.get('error')} (after {hs.get('connect_s') or hs.get('elapsed_s')} s)")]
                               + [Evidence("probe:tcpstore", ln) for ln in hs.get("stderr") or ()])
            parts.append(f"{label}: not a TCPStore")
        if not parts:
            raise SkipCheck("no rendezvous port accepted a connection yet (nothing to shake hands with)")
        run.summary("; ".join(parts))


class ExtraPortsCheck(NetCheck):
    """Whether the master lets through more than MASTER_PORT: gloo and NCCL listen on ports of their own.

    What it checks:
        When the rendezvous port answered, connects once to an unused port in
        the ephemeral range (net.ipv4.ip_local_port_range) on the same host. A
        reset means the port is simply closed (not filtered); silence or an
        ICMP reject means a firewall passes only chosen ports.
    Why it matters:
        The store is only the meeting point: every gloo pair and NCCL's
        bootstrap and socket transport listen on ports chosen by the kernel
        from the ephemeral range. With only MASTER_PORT open, the rendezvous
        succeeds and the job then hangs in init_process_group or at its first
        collective.
    Known limits:
        Tests the master only, and one port of the range; other hosts' firewalls
        matter as much (run commdoctor on each).
    """

    name = "rdzv.ports"
    stage = Stage.RENDEZVOUS
    title = "Ports beyond the rendezvous port"
    requires = ("rdzv.reach",)
    rules = (
        Rule("RDZV040", "only-master-port-open", W,
             "{host} {verb} connections to port {probe} while {port} answers: the ports gloo and NCCL open will be blocked",
             "Allow TCP {lo}-{hi} (net.ipv4.ip_local_port_range) between the job's hosts, not only {port}",
             cause="firewall_or_port_blocked",
             steps=("gloo and NCCL bind port 0: the kernel picks from net.ipv4.ip_local_port_range; narrow it with "
                    "sysctl on every host if the firewall must stay tight",)),
    )

    def run(self, run: CheckRun) -> Iterator[Finding]:
        _rows(run)
        res = run.fact("net_extra_port")
        parts = []
        for item in res["endpoints"]:
            ep, pr = item["endpoint"], item.get("probe")
            if pr is None:
                continue
            rng = item.get("range") or [32768, 60999]
            out = pr.get("outcome")
            ev = Evidence("probe:tcp", f"connect {_label(ep, pr['address']).rsplit(':', 1)[0]}:{pr['port']}: {out}"
                          + (f" ({pr.get('error')})" if pr.get("error") else "")
                          + (f"; ICMP type {pr['icmp']['type']} code {pr['icmp']['code']}" if pr.get("icmp") else ""))
            if out in ("timeout", "rejected"):
                yield self.finding("RDZV040", host=ep["host"], verb="drops" if out == "timeout" else "rejects",
                                   probe=pr["port"], port=ep["port"], lo=rng[0], hi=rng[1], evidence=[ev])
                parts.append(f"port {pr['port']}: {out}")
            else:
                parts.append(f"port {pr['port']} on {ep['host']} is {'open' if out == 'open' else 'closed, not filtered'}: "
                             f"gloo's and NCCL's own ports ({rng[0]}-{rng[1]}) should be reachable")
        if not parts:
            ran_out = [i.get("skipped") for i in res["endpoints"] if i.get("skipped")]
            raise SkipCheck(f"{ran_out[0]} (give a larger --timeout)" if ran_out else
                            "only tested from a worker host, once the rendezvous port answers")
        run.summary("; ".join(parts))


RDZV_CHECKS = (EndpointCheck, PortCheck, ReachCheck, StoreCheck, ExtraPortsCheck)
