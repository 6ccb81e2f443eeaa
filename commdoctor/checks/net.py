"""Interfaces stage: which network each backend will use on this host, and whether others can reach it.

Promise: every check here is a function of facts (``net_interfaces``,
``net_env``, ``net_hostname``, ``net_rdzv``; commdoctor.probes.net in a live
run). The selection rules themselves live in commdoctor.core.netselect. Severity
follows what is known of the job: an interface other hosts cannot reach is an
error when the job has peers on other hosts, and informational when no job is
configured here (it is fine for a job on one host).
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import Any, Iterator, Sequence

from commdoctor.core import netselect as ns
from commdoctor.checks.base import Check, Rule
from commdoctor.core.errors import SkipCheck
from commdoctor.facts import LOG
from commdoctor.facts.interfaces import InterfaceSetting
from commdoctor.core.model import Evidence, Finding, Severity, Stage
from commdoctor.core.context import CheckRun

E, W, I = Severity.ERROR, Severity.WARNING, Severity.INFO

VAR = {"nccl": "NCCL_SOCKET_IFNAME", "gloo": "GLOO_SOCKET_IFNAME", "tp": "TP_SOCKET_IFNAME"}
NAME = {"nccl": "NCCL", "gloo": "Gloo", "tp": "TensorPipe"}
DOCS = "docs/network.md"


@dataclass
class NetView:
    """Everything the interface checks need, computed once from the facts."""

    ifaces: list[ns.Interface]
    env: dict[str, str]
    hostname: dict[str, Any]
    rdzv: dict[str, Any]
    remote: bool | None
    remote_why: str
    nccl: ns.Choice
    gloo: ns.Choice
    tp: ns.Choice
    nccl_relevant: bool
    route: dict[str, Any] | None  # the route to the first remote address of the first endpoint
    master_addr: str | None  # that address
    good: ns.Interface | None  # the interface a remedy should name

    def iface(self, name: str) -> ns.Interface | None:
        return next((i for i in self.ifaces if i.name == name), None)

    def good_name(self) -> str:
        return self.good.name if self.good else "<interface that reaches the other hosts>"

    def good_addr(self) -> str:
        if self.good is None:
            return "<this host's address on that network>"
        a = self.good.first(ns.INET) or self.good.first()
        return a.address if a else "?"

    def available(self) -> str:
        shown = [f"{i.name} ({', '.join(a.address for a in i.addrs[:2]) or 'no address'})" for i in self.ifaces]
        return ", ".join(shown) or "none"

    def weight(self, if_unknown: Severity = I) -> Severity | None:
        """Severity of a finding that matters only when peers are on other hosts; None: do not report."""
        if self.remote is True:
            return E
        if self.remote is None:
            return if_unknown
        return None

    def job_phrase(self) -> str:
        return {True: f" while {self.remote_why}", None: " (fine for a job on this host alone)",
                False: ""}[self.remote]


def resolved_list(h: dict[str, Any]) -> list[ns.Resolved] | None:
    if h.get("error") and not h.get("addresses"):
        return None
    return [ns.Resolved(a["family"], a["address"], a.get("bindable")) for a in h.get("addresses") or ()]


def nccl_version(run: CheckRun) -> tuple[int, int] | None:
    """NCCL's version when env.torch already found it in this run (it is not probed for this)."""
    r = run.ctx.results.get("env.torch")
    v = ((r.data.get("environment") or {}).get("nccl_version") if r else None) or ""
    parts = v.split(".")
    return (int(parts[0]), int(parts[1])) if len(parts) >= 2 and parts[0].isdigit() and parts[1].isdigit() else None


def view(run: CheckRun) -> NetView:
    ifaces = ns.interfaces_from(run.fact("net_interfaces"))
    env = dict(run.fact("net_env"))
    h = run.fact("net_hostname")
    rdzv = run.fact("net_rdzv")
    resolved = resolved_list(h)
    host = h.get("hostname") or "?"
    nccl = ns.nccl_select(ifaces, env, nccl_version(run))
    gloo = ns.gloo_select(ifaces, env, host, resolved)
    tp = ns.tp_select(ifaces, env, host, resolved)
    route = None
    master = None
    for row in rdzv.get("endpoints") or ():
        for r in row.get("routes") or ():
            route, master = r, r.get("address")
            break
        if route:
            break
    opts = run.options
    gpu = False
    try:
        gpu = bool(run.fact("net_gpu"))
    except KeyError:
        pass
    relevant = ("nccl" in opts.backends or any(k.startswith(("NCCL_SOCKET", "NCCL_COMM_ID")) for k in env) or gpu)
    good = ns.recommend(ifaces, prefer=(route or {}).get("dev"))
    return NetView(ifaces, env, h, rdzv, rdzv.get("peers_remote"), rdzv.get("peers_why") or "", nccl, gloo, tp,
                   relevant, route, master, good)


def hostname_issue(v: NetView) -> str | None:
    """"loopback", "not_local" or "unresolvable" when the hostname leads gloo/TensorPipe to a loopback address."""
    h = v.hostname
    addrs = h.get("addresses") or []
    if not addrs:
        return "unresolvable"
    res = resolved_list(h) or []
    usable = [r for r in res if (r.bindable if r.bindable is not None else ns.is_local_address(r.address, v.ifaces))]
    if not usable:
        return "not_local"
    first = usable[0]
    if ns.IfAddr(first.family, first.address).loopback:
        return "loopback"
    return None


def _ev_choice(c: ns.Choice, v: NetView) -> list[Evidence]:
    ev = []
    if c.setting:
        ev.append(Evidence("env", c.setting))
    ev.append(Evidence(f"rule:{c.backend}", c.rule))
    for n, a in c.picks[:3]:
        i = v.iface(n)
        if i is not None:
            ev.append(Evidence("interfaces", _iface_line(i)))
    return ev


def _iface_line(i: ns.Interface) -> str:
    state = "up" if i.running else ("up, no carrier" if i.up else "down")
    extra = []
    if i.link_kind and i.link_kind != i.kind:
        extra.append(i.link_kind)
    if i.master:
        extra.append(f"port of {i.master}")
    if i.kind == "bridge":
        extra.append(f"ports: {', '.join(i.ports) or 'none'}")
    addrs = " ".join(a.text() for a in i.addrs) or "no address"
    return f"{i.name}: {i.kind}{' (' + ', '.join(extra) + ')' if extra else ''}, {state}, mtu {i.mtu}, {addrs}"


class NetCheck(Check):
    """Base of the network checks: a deadline tied to --timeout, and remedy settings filled from the finding."""

    def deadline(self, options: Any) -> float:
        return float(options.timeout) + 10.0

    def finding(self, code: str, **kw: Any) -> Finding:
        if kw.get("env") is None and isinstance(kw.get("var"), str) and kw["var"].isupper():
            val = kw.get("suggest") or kw.get("route_dev") or kw.get("good")
            if isinstance(val, str) and val and not val.startswith("<"):
                kw["env"] = {kw["var"]: val}
        return super().finding(code, **kw)


class InterfacesCheck(NetCheck):
    """This host's network interfaces, and whether the interface settings name real ones.

    What it checks:
        Lists every interface (kind: loopback, bridge, veth, tunnel,
        InfiniBand/IPoIB, physical, other virtual; up or down; MTU; addresses)
        and reads NCCL_SOCKET_IFNAME, GLOO_SOCKET_IFNAME and TP_SOCKET_IFNAME
        with each backend's own grammar: names this host lacks, interfaces
        without an address (a bond's member, a link that lost its address), IP
        addresses or subnets given where names are expected, values NCCL or
        torch silently ignore (one character or less), and NCCL's ``^``/``=``
        syntax given to gloo.
    Why it matters:
        Gloo fails at once with "Unable to find address for: NAME"; NCCL fails
        with "Bootstrap : no socket interface found" or, with a partial list,
        quietly uses what matched; TensorPipe only logs a warning and listens
        on 127.0.0.1, so the job hangs instead.
    Known limits:
        Interface names differ between hosts (eth0 here, ens5 there): run
        commdoctor on every node. InfiniBand HCAs (NCCL_IB_HCA) are not
        checked here.
    """

    name = "net.interfaces"
    stage = Stage.INTERFACES
    title = "Network interfaces and interface settings"
    rules = (
        Rule("NET001", "interface-not-found", E, "{var} names {names}, which {lacks}",
             "Set {var} to an interface {owner} has: {var}={suggest}", cause="wrong_interface",
             steps=("Interfaces here: {available}",),
             examples={"lacks": "this host does not have (from a log: which the host that logged it does not "
                                "have, or which holds no address)", "owner": "this host (every node)"}),
        Rule("NET002", "interface-without-address", E, "{var} names {names}, which has no IP address",
             "Name the interface that holds the address: {var}={suggest}", cause="wrong_interface",
             steps=("ip -br addr shows which interface holds each address (a bond or bridge holds its members' address)",)),
        Rule("NET003", "address-instead-of-interface", E, "{var}={value} gives an address where an interface name is expected",
             "Give the interface's name instead: {var}={suggest}", cause="wrong_interface"),
        Rule("NET004", "gloo-takes-exclude-literally", E,
             "gloo will look for an interface literally named {piece!r} and fail at init",
             "List the interfaces by exact name: GLOO_SOCKET_IFNAME={suggest}", cause="wrong_interface",
             env={"GLOO_SOCKET_IFNAME": "{suggest}"}),
        Rule("NET005", "interface-setting-ignored", W, "{var}={value!r} is ignored: it is read only when longer than one character",
             "Give the full interface name: {var}={suggest}", cause="environment_misconfig"),
    )

    def run(self, run: CheckRun) -> Iterator[Finding]:
        v = view(run)
        run.data["interfaces"] = [i.to_dict() for i in v.ifaces]
        up = [i for i in v.ifaces if i.running]
        down = [i.name for i in v.ifaces if not i.running]
        run.summary("; ".join(f"{i.name} {', '.join(a.text() for a in i.addrs if not a.link_local)[:60] or 'no address'} ({i.kind})"
                              for i in up) + (f"; down or no carrier: {', '.join(down)}" if down else ""))
        for i in v.ifaces:
            run.detail(_iface_line(i))
        yield from self._settings(v)

    def _settings(self, v: NetView) -> Iterator[Finding]:
        for backend in ("nccl", "gloo", "tp"):
            var = VAR[backend]
            value = v.env.get(var)
            if value is None:
                continue
            ev = [Evidence("env", f"{var}={value}")]
            suggest = v.good_name()
            if value == "":
                continue  # exported empty: the backends treat it as unset
            if backend in ("nccl", "gloo") and len(value) <= 1:
                yield self.finding("NET005", var=var, value=value, suggest=suggest, evidence=ev)
                continue
            if backend == "gloo" and (value.startswith(("^", "=")) or ",^" in value):
                spec = ns.parse_nccl_list(value)
                meant = [i.name for i in v.ifaces if spec.matches(i.name) and i.addrs and i.kind != "loopback"]
                piece = value.split(",")[0]
                yield self.finding(
                    "NET004", piece=piece, suggest=",".join(meant) or suggest, evidence=ev,
                    detail=f"gloo has no exclusion syntax: it takes {piece!r} as an interface name, and torch raises "
                           f"\"Unable to find address for: {piece}\" when the process group starts"
                           + (f"; under NCCL's rule {value!r} means {', '.join(meant)}" if meant else ""),
                    consequence_of="ENV054")
                continue
            pieces = [p.split(":", 1)[0] for p in value.lstrip("^=").split(",")] if backend == "nccl" else \
                value.split(",") if backend == "gloo" else [value]
            addr_like = ns.names_like(value)
            if addr_like:
                hit = ns.interface_for_address(addr_like[0], v.ifaces)
                yield self.finding("NET003", var=var, value=value, suggest=hit.name if hit else suggest, evidence=ev,
                                   detail=(f"{addr_like[0]} is on {hit.name}" if hit else
                                           f"no interface here holds {addr_like[0]}") +
                                          f"; {NAME[backend]} matches interface names"
                                          + (" by prefix" if backend == "nccl" else " exactly"))
                pieces = [p for p in pieces if p not in addr_like]
            choice = getattr(v, backend)
            missing = [p for p in choice.missing if p not in addr_like]
            if backend == "nccl" and value.lstrip().startswith("^") and not choice.picks and not addr_like:
                # Prefixes to leave out that leave nothing: NCCL fails at init ("Bootstrap : no socket interface
                # found", seen on an H200 with ^eth,lo,docker,veth,ib,en,br).
                left = tuple(x for x in value.lstrip()[1:].split(",") if x)
                fact = InterfaceSetting(var=var, value=value, missing=left, library=backend,
                                        available=tuple(i.name for i in v.ifaces), evidence=tuple(ev))
                yield from self.judge(fact, suggest=suggest, available=v.available(),
                                      detail="NCCL fails at init: \"Bootstrap : no socket interface found\"")
                continue
            if missing and not (backend == "nccl" and value.startswith("^")):
                sev = E
                detail = ""
                if backend == "nccl" and choice.picks:
                    sev = W
                    detail = f"NCCL uses what the other entries match: {choice.text()}"
                elif backend == "nccl":
                    detail = "NCCL fails at init: \"Bootstrap : no socket interface found\""
                elif backend == "gloo":
                    detail = f"torch raises \"Unable to find address for: {missing[0]}\" when the process group starts"
                else:
                    detail = "TensorPipe logs a warning and listens on 127.0.0.1: RPC peers on other hosts cannot connect"
                    sev = v.weight(W) or W
                near = [p for p in missing if p.strip() != p and p.strip() in {i.name for i in v.ifaces}]
                if near:
                    detail += f"; {near[0]!r} has spaces around {near[0].strip()!r}"
                fact = InterfaceSetting(var=var, value=value, missing=tuple(missing), library=backend,
                                        available=tuple(i.name for i in v.ifaces),
                                        picks=choice.text() if choice.picks else None, evidence=tuple(ev))
                yield from self.judge(fact, suggest=suggest, available=v.available(), severity=sev, detail=detail)
            if choice.no_address:
                holder = None
                for n in choice.no_address:
                    i = v.iface(n)
                    if i is not None and i.master and v.iface(i.master) and v.iface(i.master).addrs:  # type: ignore[union-attr]
                        holder = i.master
                yield self.finding("NET002", var=var, names=", ".join(choice.no_address), suggest=holder or suggest,
                                   evidence=ev + [Evidence("interfaces", _iface_line(i)) for n in choice.no_address
                                                  if (i := v.iface(n)) is not None],
                                   severity=E if choice.error or backend != "nccl" else W,
                                   detail=(f"{choice.no_address[0]} is a port of {holder}, which holds the address"
                                           if holder else "an interface without an address cannot be bound"))


    def judge(self, fact: InterfaceSetting, *, suggest: str = "", available: str = "", severity: Severity | None = None,
              detail: str = "", ranks: Sequence[int] = (), consequence_of: str | None = None,
              env: dict[str, str] | None = None) -> Iterator[Finding]:
        """NET001 from one interface-setting fact, whether this host's interfaces or a log proved the names missing.

        A log names the host that lacked the interface (or the interface's address: the
        libraries' words do not tell which), not the interfaces it has, so its remedy points there.
        """
        names = ", ".join(repr(m) for m in fact.missing)
        where = "this host" if fact.origin != LOG else f"host {fact.host}" if fact.host else "the host that logged it"
        lacks = f"{where} does not have" + (", or which holds no address" if fact.origin == LOG else "")
        if (fact.value or "").lstrip().startswith("^") and names:
            # A leading ^ makes the list one of prefixes to leave out: nothing was missing, everything was left out.
            names += " to leave out (its leading ^)"
            lacks = f"leaves {where} no interface with an address"
        if fact.origin == LOG:
            yield self.finding(
                "NET001", var=fact.var, names=names or "an interface", lacks=lacks,
                owner="every node", suggest=suggest or "<an interface every node has>", evidence=fact.evidence,
                ranks=ranks, hosts=(fact.host,) if fact.host else (), detail=detail, consequence_of=consequence_of,
                severity=severity, env=env, steps=(f"ip -br addr on {where} lists its interfaces and their addresses",))
            return
        yield self.finding("NET001", var=fact.var, names=names, lacks=lacks, owner="this host",
                           suggest=suggest, available=available, evidence=fact.evidence, severity=severity, detail=detail)

class HostnameCheck(NetCheck):
    """What this host's name resolves to, and what gloo and TensorPipe will therefore bind.

    What it checks:
        Resolves gethostname() as gloo does (getaddrinfo, then bind(2) on each
        address in turn) and reads the /etc/hosts lines that name it: the
        Debian/Ubuntu "127.0.1.1 HOSTNAME" line, a name that resolves to no
        address of this host, or a name that does not resolve at all.
    Why it matters:
        Without GLOO_SOCKET_IFNAME, gloo listens on the first address the
        hostname resolves to that it can bind, and tells the other ranks to
        connect there. 127.0.1.1 can be bound, so gloo advertises it and other
        hosts connect to themselves ("Connection refused" on one side, a silent
        hang on the other). A name that resolves to no local address, or to
        nothing, makes gloo fall back to 127.0.0.1 with only a warning.
    Known limits:
        Gloo opens each connection from the higher address of a pair to the
        lower: a loopback address that sorts above every peer's address can go
        unnoticed until a peer with a higher address, or with the same mistake,
        joins. commdoctor reports it either way.
    """

    name = "net.hostname"
    stage = Stage.INTERFACES
    title = "Hostname resolution"
    rules = (
        Rule("NET030", "hostname-resolves-to-loopback", E, "hostname {host} resolves to {addr}, a loopback address{job}",
             "Set GLOO_SOCKET_IFNAME={iface} (and TP_SOCKET_IFNAME={iface} for RPC) on every node, or map {host} to {good} in {hosts_file}",
             cause="hostname_resolution",
             steps=("In {hosts_file}, replace the line '{line}' with '{good} {host}'",),
             env={"GLOO_SOCKET_IFNAME": "{iface}", "TP_SOCKET_IFNAME": "{iface}"}),
        Rule("NET031", "hostname-not-on-this-host", E,
             "hostname {host} resolves to {addrs}, which no interface of this host holds: gloo falls back to 127.0.0.1{job}",
             "Make {host} resolve to this host's address {good} ({hosts_file} or DNS), or set GLOO_SOCKET_IFNAME={iface}",
             cause="hostname_resolution", env={"GLOO_SOCKET_IFNAME": "{iface}", "TP_SOCKET_IFNAME": "{iface}"}),
        Rule("NET032", "hostname-does-not-resolve", E,
             "hostname {host} does not resolve ({error}): gloo falls back to 127.0.0.1{job}",
             "Add '{good} {host}' to {hosts_file} (or DNS), or set GLOO_SOCKET_IFNAME={iface}",
             cause="hostname_resolution", env={"GLOO_SOCKET_IFNAME": "{iface}", "TP_SOCKET_IFNAME": "{iface}"}),
    )

    def run(self, run: CheckRun) -> Iterator[Finding]:
        v = view(run)
        h = v.hostname
        host = h.get("hostname") or "?"
        addrs = h.get("addresses") or []
        run.data["hostname"] = h
        shown = ", ".join(f"{a['address']}{'' if a.get('bindable', True) else ' (not on this host)'}" for a in addrs)
        run.summary(f"{host} -> {shown or 'nothing (' + str(h.get('error')) + ')'}"
                    + (f" ({h.get('elapsed_s', 0):.2f} s)" if (h.get("elapsed_s") or 0) > 0.5 else ""))
        issue = hostname_issue(v)
        if issue is None:
            return
        users = [NAME[b] for b in ("gloo", "tp") if getattr(v, b).via_hostname]
        if not users:
            run.detail(f"not used for interface selection: GLOO_SOCKET_IFNAME and TP_SOCKET_IFNAME are set")
            return
        sev = v.weight()
        if sev is None:
            run.detail(f"{' and '.join(users)} will use a loopback address: fine for this single-host job")
            return
        ev = [Evidence(h.get("hosts_file", "/etc/hosts"), ln["text"], line=ln["line"]) for ln in h.get("hosts_lines") or ()]
        ev.append(Evidence("getaddrinfo", f"{host} -> {shown or h.get('error')}"))
        params = dict(host=host, iface=v.good_name(), good=v.good_addr(), hosts_file=h.get("hosts_file", "/etc/hosts"),
                      job=v.job_phrase())
        detail = f"{' and '.join(users)} will advertise a loopback address that other hosts cannot reach"
        if issue == "loopback":
            first = next(a for a in addrs if a.get("bindable", True))
            line = next((ln["text"] for ln in h.get("hosts_lines") or () if ln["text"].split()[0] == first["address"]),
                        f"{first['address']} {host}")
            if first["address"] == "::1":
                detail += "; with IPv4 peers gloo also fails with 'ss1.ss_family == ss2.ss_family. 2 vs 10'"
            yield self.finding("NET030", addr=first["address"], line=line, evidence=ev, severity=sev, detail=detail, **params)
        elif issue == "not_local":
            yield self.finding("NET031", addrs=", ".join(a["address"] for a in addrs), evidence=ev, severity=sev,
                               detail=detail + " (torch warns: \"Unable to resolve hostname to a (local) address\")", **params)
        else:
            yield self.finding("NET032", error=h.get("error") or "no address", evidence=ev, severity=sev, detail=detail,
                               **params)


class SelectionCheck(NetCheck):
    """Which interface and address NCCL, Gloo and TensorPipe will use here, by each one's own rules.

    What it checks:
        Applies NCCL's interface rules (NCCL_SOCKET_IFNAME prefixes, ``^``
        and ``=``, NCCL_SOCKET_FAMILY; by default ib* first, then anything
        but docker*/lo*, virbr* too from NCCL 2.28), gloo's
        (GLOO_SOCKET_IFNAME, else the hostname's address) and TensorPipe's
        (TP_SOCKET_IFNAME, else the hostname) to this host's interfaces, then
        asks of each choice: is it loopback, a container or VM bridge, the host
        side of a veth pair, a tunnel, a link-local address, an interface that
        is down; do NCCL and Gloo use different networks; is the rendezvous
        host reached through a different interface than the one a backend
        advertises; does gloo's address family match the master's.
    Why it matters:
        Each rank tells the others "reach me at ADDRESS". An address on lo,
        docker0, a veth or a link-local network is valid here and unreachable
        from every other host: the job hangs at its first collective or fails
        with "Connection refused" / "No route to host", far from the cause.
    Known limits:
        Reachability between hosts is inferred from this host's routes; only a
        run on every node (or a real job) proves that every pair can connect.
        NCCL's rules are those of its socket code; an NCCL net plugin may
        choose differently.
    """

    name = "net.selection"
    stage = Stage.INTERFACES
    title = "Interface each backend will use"
    rules = (
        Rule("NET010", "loopback-interface", E, "{backend} will use {iface} ({addr}), a loopback interface{job}",
             "Set {var}={good}", cause="wrong_interface"),
        Rule("NET011", "container-bridge-interface", E, "{backend} will use {iface} ({addr}), {what}{job}",
             "Set {var}={good}", cause="wrong_interface"),
        Rule("NET012", "veth-interface", E, "{backend} will use {iface} ({addr}), the host side of a container's veth pair{job}",
             "Set {var}={good}", cause="wrong_interface"),
        Rule("NET013", "tunnel-interface", W, "{backend} will use {iface} ({addr}), a tunnel or VPN interface{job}",
             "Set {var}={good} unless every host of the job is on this tunnel", cause="wrong_interface"),
        Rule("NET014", "link-local-address", E, "{backend} will use {addr} on {iface}, a link-local address{job}",
             "Set {var}={good} (an interface with a routable address)", cause="wrong_interface"),
        Rule("NET015", "interface-down", E, "{backend} will use {iface}, which is {state}",
             "Bring {iface} up (ip link set {iface} up) or set {var}={good}", cause="wrong_interface"),
        Rule("NET020", "backends-on-different-networks", W,
             "NCCL will use {n_iface} ({n_net}) and Gloo {g_iface} ({g_net}): two networks",
             "Make sure both networks connect every host, or give both the same interface: "
             "NCCL_SOCKET_IFNAME={g_iface} / GLOO_SOCKET_IFNAME={n_iface}", cause="wrong_interface"),
        Rule("NET033", "address-family-mismatch", E,
             "{backend} will use {addr} ({fam}) while the rendezvous address {master} is {mfam}",
             "Make the hostname resolve to an {mfam} address first, or set {var}={good}", cause="hostname_resolution"),
        Rule("NET040", "master-via-another-interface", W,
             "MASTER_ADDR {master} is reached through {route_dev}, but {backend} will use {iface} ({addr}), not on that network",
             "Set {var}={route_dev}, unless {iface}'s network connects every host of the job",
             cause="wrong_interface"),
    )

    def run(self, run: CheckRun) -> Iterator[Finding]:
        v = view(run)
        choices = [v.nccl, v.gloo, v.tp]
        run.data["selection"] = {c.backend: c.to_dict() for c in choices}
        run.data["recommended"] = v.good.name if v.good else None
        run.data["peers_remote"] = v.remote
        run.data["peers_why"] = v.remote_why
        run.data["environment"] = {"interfaces_chosen": {c.backend: (c.primary[0] if c.primary else None) for c in choices}}

        def short(c: ns.Choice) -> str:
            if c.error:
                return f"{NAME[c.backend]}: fails ({c.error})"
            p = c.primary
            tail = f" (hostname {v.hostname.get('hostname')})" if c.via_hostname and not c.setting else ""
            tail = " (loopback fallback)" if c.fallback_loopback else tail
            return f"{NAME[c.backend]}: {p[0]} {p[1]}{tail}" if p else f"{NAME[c.backend]}: nothing"

        run.summary("; ".join(short(c) for c in choices))
        for c in choices:
            run.detail(f"{NAME[c.backend]}: {c.rule} -> {c.text()}")
            for n in c.notes:
                run.detail(f"  {n}")
        run.detail(f"peers: {v.remote_why}")

        skip_hostname = hostname_issue(v) is not None
        flagged: set[str] = set()
        for c in choices:
            if c.error or not c.picks:
                flagged.add(c.backend)
                continue  # net.interfaces reports settings that fail
            if c.backend == "nccl" and not v.nccl_relevant:
                continue
            if c.backend == "tp" and "TP_SOCKET_IFNAME" not in v.env:
                continue  # TensorPipe (RPC) only matters where it is configured; its hostname case is NET03x
            if c.via_hostname and not c.setting and (skip_hostname or c.fallback_loopback):
                flagged.add(c.backend)
                continue  # the hostname check (NET030-032) reports this cause once
            f = self._judge(c, v)
            if f is not None:
                flagged.add(c.backend)
                yield f
        yield from self._cross(v, flagged)

    def _judge(self, c: ns.Choice, v: NetView) -> Finding | None:
        name, addr = c.primary  # type: ignore[misc]
        i = v.iface(name)
        why = ns.suspicious(i, addr)
        if why is None:
            return None
        var = VAR[c.backend]
        cause = "hostname_resolution" if c.via_hostname and not c.setting else "wrong_interface"
        params = dict(backend=NAME[c.backend], iface=name, addr=addr, var=var, good=v.good_name(), job=v.job_phrase())
        ev = _ev_choice(c, v)
        hint = ""
        if c.via_hostname and not c.setting:
            hint = (f"; gloo chose it because hostname {v.hostname.get('hostname')} resolves to {addr}: "
                    f"map the hostname to {v.good_addr()} instead, or set {var}")
        if why == "down":
            sev = E if v.remote is not False else W
            state = "down" if i is not None and not i.up else "up but without carrier (no cable, no peer, or an empty bridge)"
            return self.finding("NET015", state=state, evidence=ev, severity=sev, cause=cause, detail=hint.lstrip("; "),
                                **params)
        code = {"loopback": "NET010", "container_bridge": "NET011", "veth": "NET012", "tunnel": "NET013",
                "link_local": "NET014"}[why]
        weight = v.weight()
        if weight is None:
            return None
        sev = weight
        if code == "NET013" and sev is E:
            sev = W  # a VPN that spans every host is a legitimate choice
        extra: dict[str, Any] = {}
        if code == "NET011" and i is not None:
            idle = not i.ports or not i.running
            if i.name.startswith(ns.CONTAINER_BRIDGE_PREFIXES):
                extra["what"] = "a container or VM bridge" + (" with nothing attached" if idle else "")
            else:
                extra["what"] = "a bridge with no member ports (an idle docker0 looks like this)"
        detail = f"other hosts cannot reach {addr}" + hint
        return self.finding(code, evidence=ev, severity=sev, cause=cause, detail=detail, **params, **extra)

    def _cross(self, v: NetView, flagged: set[str]) -> Iterator[Finding]:
        master = v.master_addr
        route_dev = (v.route or {}).get("dev")
        # Family: gloo binds one family; a peer of the other family fails in gloo's pairing.
        if master and not v.gloo.error and v.gloo.picks and "gloo" not in flagged:
            ga = v.gloo.primary[1]  # type: ignore[index]
            gf, mf = (":" in ga), (":" in master)
            if gf != mf:
                fam = {True: "IPv6", False: "IPv4"}
                yield self.finding("NET033", backend="Gloo", addr=ga, fam=fam[gf], master=master, mfam=fam[mf],
                                   var="GLOO_SOCKET_IFNAME", good=v.good_name(),
                                   evidence=_ev_choice(v.gloo, v),
                                   detail="gloo fails with 'ss1.ss_family == ss2.ss_family' when the two sides differ")
                flagged.add("gloo")
        # A backend advertising an interface that is not on the way to the master.
        if master and route_dev and v.remote:
            for c in (v.nccl, v.gloo):
                if c.error or not c.picks or c.backend in flagged or (c.backend == "nccl" and not v.nccl_relevant):
                    continue
                name, addr = c.primary  # type: ignore[misc]
                i = v.iface(name)
                if name == route_dev or i is None:
                    continue
                mip = ipaddress.ip_address(master)
                on_net = any((n := a.network()) is not None and n.version == mip.version and mip in n for a in i.addrs)
                if on_net:
                    continue
                flagged.add(c.backend)
                yield self.finding("NET040", master=master, route_dev=route_dev, backend=NAME[c.backend], iface=name,
                                   addr=addr, var=VAR[c.backend],
                                   evidence=[Evidence("route", f"{master} via {route_dev}"
                                                      + (f" src {v.route.get('src')}" if v.route and v.route.get("src") else "")
                                                      + (f" gateway {v.route.get('gateway')}" if v.route and v.route.get("gateway") else ""))]
                                   + _ev_choice(c, v))
        # NCCL and Gloo on different networks.
        if v.nccl_relevant and "nccl" not in flagged and "gloo" not in flagged and v.nccl.picks and v.gloo.picks \
                and not v.nccl.error and not v.gloo.error:
            (n_if, n_addr), (g_if, g_addr) = v.nccl.primary, v.gloo.primary  # type: ignore[misc]
            ni, gi = v.iface(n_if), v.iface(g_if)
            n_net, g_net = _net_of(ni, n_addr), _net_of(gi, g_addr)
            if n_if != g_if and n_net != g_net:
                sev = W if v.remote else I
                if v.remote is False:
                    return
                yield self.finding("NET020", n_iface=n_if, n_net=n_net, g_iface=g_if, g_net=g_net, severity=sev,
                                   evidence=_ev_choice(v.nccl, v) + _ev_choice(v.gloo, v))


def _net_of(i: ns.Interface | None, addr: str) -> str:
    if i is not None:
        for a in i.addrs:
            if a.address == addr and a.network() is not None:
                return str(a.network())
    return addr


class RouteCheck(NetCheck):
    """The route from this host to the rendezvous host: which interface, which source address.

    What it checks:
        Asks the kernel (ip route get; no packet is sent) how it would reach
        every address MASTER_ADDR (or torchrun's rendezvous endpoint) resolves
        to: through which interface, from which source address, via which
        gateway; or that it has no route at all.
    Why it matters:
        With no route, every rank's connection to the store fails with "No
        route to host" or "Network is unreachable" (torch prints neither
        clearly: its client retries until its timeout). The interface the
        route uses is also the one the backends should advertise (see NET040).
    Known limits:
        Policy routing by source address or by mark (ip rule) can send real
        traffic another way than a plain lookup shows.
    """

    name = "net.route"
    stage = Stage.INTERFACES
    title = "Route to the rendezvous host"
    rules = (
        Rule("NET050", "no-route-to-master", E, "this host has no route to {target}: {error}",
             "Check that {var} is rank 0's address on a network this host is on (here: {nets}), or add a route to it",
             cause="rendezvous_unreachable"),
    )

    def run(self, run: CheckRun) -> Iterator[Finding]:
        rdzv = run.fact("net_rdzv")
        rows = rdzv.get("endpoints") or []
        if not rows:
            raise SkipCheck("no rendezvous is configured here (MASTER_ADDR and torchrun's PET_RDZV_ENDPOINT are unset)")
        ifaces = ns.interfaces_from(run.fact("net_interfaces"))
        parts = []
        data = []
        for row in rows:
            ep = row["endpoint"]
            res = row.get("resolved") or {}
            if not res.get("addresses"):
                parts.append(f"{ep['host']}: does not resolve (see the rendezvous stage)")
                continue
            if all(row.get("local") or [False]):
                parts.append(f"{ep['host']} is this host")
                continue
            for r in row.get("routes") or ():
                data.append(r)
                if r.get("dev"):
                    parts.append(f"{r['address']} via {r['dev']}" + (f" src {r['src']}" if r.get("src") else "")
                                 + (f" gateway {r['gateway']}" if r.get("gateway") else ""))
                else:
                    nets = ", ".join(sorted({f"{i.name} {a.text()}" for i in ifaces for a in i.addrs
                                             if not a.loopback and not a.link_local})) or "none"
                    var = "MASTER_ADDR" if ep.get("kind") == "env" else "the rendezvous endpoint"
                    target = r["address"] if r["address"] == ep["host"] else f"{r['address']} ({ep['host']})"
                    yield self.finding("NET050", target=target, error=r.get("error") or "unreachable",
                                       var=var, nets=nets,
                                       evidence=[Evidence("ip route get", f"{r['address']}: {r.get('error') or r.get('type')}")]
                                       + [Evidence("env", s) for s in ep.get("settings") or ()])
        run.data["routes"] = data
        run.summary("; ".join(parts) or "nothing to route")


NET_CHECKS: tuple[type[Check], ...] = (InterfacesCheck, HostnameCheck, SelectionCheck, RouteCheck)
