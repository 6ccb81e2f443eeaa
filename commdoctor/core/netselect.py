"""Which network interface each backend will use, reproduced from the backends' own rules.

Promise: pure functions of plain data (this host's interfaces, the environment,
what the hostname resolves to). Nothing here touches the network, so the same
answers come from a live probe, from a saved report, or from a test's list.

The rules are read from the backends' sources (see docs/network.md):

- NCCL (``ncclFindInterfaces`` in src/misc/socket.cc, the prefix matching in
  src/misc/utils.cc and the interface walk in src/os/linux.cc): with
  ``NCCL_SOCKET_IFNAME`` (longer than one character) only the interfaces it
  names; otherwise ``ib*`` first, then an interface in the subnet of
  ``NCCL_COMM_ID``, then anything but ``docker*``/``lo*`` (and ``virbr*`` from
  2.28), then ``docker*``, then ``lo*`` (then ``virbr*``). The list grammar:
  comma-separated prefixes, a leading ``^`` excludes, a following ``=`` asks
  for exact names, ``:N`` after a name is a port and is ignored for sockets.
  IPv6 loopback addresses never count; from 2.28 on only running interfaces
  (IFF_RUNNING) count. One entry per interface: its first address in
  getifaddrs order (IPv4 of every interface by index, then IPv6).
- Gloo (torch's ProcessGroupGloo and gloo's tcp device): with
  ``GLOO_SOCKET_IFNAME`` (longer than one character) every comma-separated
  name exactly, each bound to its interface's first address; a name with no
  address fails with "Unable to find address for: NAME". Otherwise the first
  address the hostname resolves to that can be bound; if none can, 127.0.0.1.
- TensorPipe (torch RPC): ``TP_SOCKET_IFNAME`` names one interface; when it has
  no address, or the hostname gives none, it silently uses 127.0.0.1.
"""

from __future__ import annotations

import ipaddress
from dataclasses import asdict, dataclass, field
from typing import Any, Iterable, Mapping, Sequence

INET, INET6 = "inet", "inet6"

#: Interface kinds, from most to least suspicious for traffic between hosts.
KINDS = ("loopback", "bridge", "veth", "tunnel", "virtual", "infiniband", "physical")

#: Names that container runtimes and hypervisors give their bridges.
CONTAINER_BRIDGE_PREFIXES = ("docker", "br-", "virbr", "cni", "podman", "lxcbr", "lxdbr", "cbr", "kube-bridge",
                             "weave", "flannel", "vmnet", "vboxnet")
#: ip -d link "info_kind" values that carry traffic through a tunnel or overlay.
TUNNEL_LINK_KINDS = frozenset({"tun", "wireguard", "vxlan", "geneve", "gre", "gretap", "ip6gre", "ip6gretap", "ipip",
                               "sit", "ip6tnl", "vti", "vti6", "xfrm", "erspan"})
#: ARPHRD_* link types of tunnels (if_arp.h): none (tun, wireguard), ipip, ip6 tunnel, sit, ipgre, ip6gre.
TUNNEL_LINK_TYPES = frozenset({65534, 768, 769, 776, 778, 823})
ARPHRD_INFINIBAND, ARPHRD_LOOPBACK = 32, 772
#: Bonds, VLANs and macvlans sit on top of real NICs and carry real traffic.
STACKED_LINK_KINDS = frozenset({"bond", "team", "vlan", "macvlan", "ipvlan", "macvtap", "ipvtap"})

NCCL_MAX_IFS = 16  # MAX_IFS in NCCL's socket.h: entries of NCCL_SOCKET_IFNAME beyond it are ignored
NCCL_RUNNING_ONLY_SINCE = (2, 28)  # the release that added the IFF_RUNNING filter and the virbr rule


@dataclass(frozen=True)
class IfAddr:
    family: str  # INET or INET6
    address: str  # without a %scope suffix
    prefixlen: int | None = None

    @property
    def ip(self) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
        return ipaddress.ip_address(self.address)

    @property
    def loopback(self) -> bool:
        return self.ip.is_loopback

    @property
    def link_local(self) -> bool:
        return self.ip.is_link_local

    def network(self) -> ipaddress.IPv4Network | ipaddress.IPv6Network | None:
        if self.prefixlen is None:
            return None
        return ipaddress.ip_interface(f"{self.address}/{self.prefixlen}").network

    def text(self) -> str:
        return f"{self.address}/{self.prefixlen}" if self.prefixlen is not None else self.address


@dataclass(frozen=True)
class Interface:
    """One network interface as the kernel reports it."""

    name: str
    index: int
    kind: str  # one of KINDS
    up: bool  # IFF_UP: configured up
    running: bool  # IFF_RUNNING: up and with carrier (what NCCL 2.28+ asks for)
    mtu: int | None = None
    addrs: tuple[IfAddr, ...] = ()  # in the kernel's (getifaddrs) order for this interface
    link_kind: str | None = None  # ip -d link "info_kind" (veth, bridge, vxlan, ...) when known
    master: str | None = None  # the bridge or bond this interface is a port of
    ports: tuple[str, ...] = ()  # for a bridge: its member ports
    speed_mbps: int | None = None

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["addrs"] = [{**asdict(a), "link_local": a.link_local} for a in self.addrs]
        d["ports"] = list(self.ports)
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Interface:
        return cls(
            name=d["name"], index=int(d.get("index") or 0), kind=d.get("kind") or "virtual",
            up=bool(d.get("up")), running=bool(d.get("running")), mtu=d.get("mtu"),
            addrs=tuple(IfAddr(a["family"], a["address"], a.get("prefixlen")) for a in d.get("addrs") or ()),
            link_kind=d.get("link_kind"), master=d.get("master"), ports=tuple(d.get("ports") or ()),
            speed_mbps=d.get("speed_mbps"),
        )

    def first(self, family: str | None = None) -> IfAddr | None:
        for a in self.addrs:
            if family is None or a.family == family:
                return a
        return None

    @property
    def container_bridge(self) -> bool:
        """A bridge that belongs to a container runtime or hypervisor, or that no port feeds.

        An empty bridge keeps its carrier on recent kernels, so "no member
        ports" is read from the bridge's port list, not from its state.
        """
        if self.kind != "bridge":
            return False
        return self.name.startswith(CONTAINER_BRIDGE_PREFIXES) or not self.ports or not self.running

    @property
    def bridge_port(self) -> bool:
        """The host side of a container's veth pair, or another port of a bridge."""
        return self.master is not None and self.kind in ("veth", "tunnel", "virtual")


def classify(name: str, *, link_type: int | None = None, link_kind: str | None = None, loopback: bool = False,
             has_device: bool = False, is_bridge: bool = False, devtype: str | None = None) -> str:
    """The kind of an interface from what sysfs and ``ip -d link`` say about it."""
    if loopback or link_type == ARPHRD_LOOPBACK:
        return "loopback"
    if link_type == ARPHRD_INFINIBAND:
        return "infiniband"
    if is_bridge or link_kind == "bridge" or devtype == "bridge":
        return "bridge"
    if link_kind == "veth":
        return "veth"
    if link_kind in TUNNEL_LINK_KINDS or (link_type in TUNNEL_LINK_TYPES) or devtype in ("wireguard", "vxlan"):
        return "tunnel"
    if has_device:
        return "physical"
    if link_kind in STACKED_LINK_KINDS or devtype in ("vlan", "bond"):
        return "virtual"
    if link_kind is None and name.startswith("veth"):
        return "veth"  # no ip(8) to ask: the name is the best hint left
    return "virtual"


def ifaddrs_order(ifaces: Sequence[Interface]) -> list[tuple[Interface, IfAddr]]:
    """(interface, address) pairs in the order getifaddrs(3) returns them on Linux.

    The kernel dumps addresses family by family (IPv4, then IPv6) and, within a
    family, interface by interface in index order; within one interface it keeps
    its own order (for IPv6: global before link-local).
    """
    out: list[tuple[Interface, IfAddr]] = []
    by_index = sorted(ifaces, key=lambda i: i.index)
    for fam in (INET, INET6):
        for i in by_index:
            out.extend((i, a) for a in i.addrs if a.family == fam)
    return out


def local_addresses(ifaces: Sequence[Interface]) -> set[str]:
    return {a.address for i in ifaces for a in i.addrs}


def is_local_address(address: str, ifaces: Sequence[Interface]) -> bool:
    """Whether a socket can bind ``address`` here: it is on an interface, or inside loopback's network."""
    try:
        ip = ipaddress.ip_address(address.split("%")[0])
    except ValueError:
        return False
    if ip.is_loopback:
        return True  # Linux routes all of 127.0.0.0/8 (and ::1) to lo
    for i in ifaces:
        for a in i.addrs:
            if a.address == str(ip):
                return True
    return False


def interface_of(address: str, ifaces: Sequence[Interface]) -> Interface | None:
    """The interface holding ``address`` (any 127.x address belongs to the loopback interface)."""
    try:
        ip = ipaddress.ip_address(address.split("%")[0])
    except ValueError:
        return None
    for i in ifaces:
        if any(a.address == str(ip) for a in i.addrs):
            return i
    if ip.is_loopback:
        return next((i for i in ifaces if i.kind == "loopback"), None)
    return None


# -- NCCL ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class NcclSpec:
    """A parsed NCCL interface list (NCCL_SOCKET_IFNAME and friends)."""

    exclude: bool
    exact: bool
    entries: tuple[str, ...]

    def matches(self, name: str) -> bool:
        if not self.entries:
            hit = True  # NCCL: an empty list matches everything
        elif self.exact:
            hit = name in self.entries
        else:
            hit = any(name.startswith(p) for p in self.entries)
        return hit != self.exclude


def parse_nccl_list(value: str) -> NcclSpec:
    """NCCL's grammar: ``^`` first excludes, then ``=`` asks for exact names; entries split on commas.

    Each entry may carry ``:port`` (meaningful for IB HCAs only). Empty entries
    are dropped, as strtok does. Only the first 16 entries count.
    """
    v = value
    exclude = v.startswith("^")
    if exclude:
        v = v[1:]
    exact = v.startswith("=")
    if exact:
        v = v[1:]
    entries = []
    for tok in v.split(","):
        name = tok.split(":", 1)[0]
        if name:
            entries.append(name)
    return NcclSpec(exclude, exact, tuple(entries[:NCCL_MAX_IFS]))


def nccl_family(env: Mapping[str, str]) -> str | None:
    v = env.get("NCCL_SOCKET_FAMILY")
    return {"AF_INET": INET, "AF_INET6": INET6}.get(v or "")


def nccl_find(ifaces: Sequence[Interface], prefix_list: str, family: str | None = None,
              running_only: bool = True, max_ifs: int = NCCL_MAX_IFS) -> list[tuple[Interface, IfAddr]]:
    """One NCCL interface walk (``ncclOsFindInterfaces``) with a prefix list."""
    spec = parse_nccl_list(prefix_list)
    found: list[tuple[Interface, IfAddr]] = []
    seen: set[str] = set()
    for i, a in ifaddrs_order(ifaces):
        if len(found) >= max_ifs:
            break
        if running_only and not i.running:
            continue
        if family is not None and a.family != family:
            continue
        if a.family == INET6 and a.loopback:
            continue
        if not spec.matches(i.name):
            continue
        if i.name in seen:
            continue
        seen.add(i.name)
        found.append((i, a))
    return found


@dataclass
class Choice:
    """What one backend will bind to on this host, and which rule decided."""

    backend: str  # "nccl", "gloo", "tp"
    setting: str | None  # "NCCL_SOCKET_IFNAME=^lo" when a variable decided, else None
    rule: str  # plain words: which rule chose
    picks: list[tuple[str, str]] = field(default_factory=list)  # (interface, address); first = primary
    error: str | None = None  # what the backend will say when nothing fits
    via_hostname: bool = False  # the choice came from resolving the hostname
    fallback_loopback: bool = False  # the backend gave up and used 127.0.0.1
    missing: list[str] = field(default_factory=list)  # names in the setting this host lacks
    no_address: list[str] = field(default_factory=list)  # names that exist but hold no address
    notes: list[str] = field(default_factory=list)  # version differences and other remarks

    @property
    def primary(self) -> tuple[str, str] | None:
        return self.picks[0] if self.picks else None

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["picks"] = [{"interface": n, "address": a} for n, a in self.picks]
        return d

    def text(self) -> str:
        if self.error:
            return f"fails ({self.error})"
        if not self.picks:
            return "nothing"
        return ", ".join(f"{n} {a}" for n, a in self.picks[:4]) + (f" (+{len(self.picks) - 4})" if len(self.picks) > 4 else "")


def _names(ifaces: Sequence[Interface]) -> set[str]:
    return {i.name for i in ifaces}


def nccl_select(ifaces: Sequence[Interface], env: Mapping[str, str],
                version: tuple[int, int] | None = None) -> Choice:
    """NCCL's socket interfaces (the first one is the bootstrap interface).

    ``version`` (major, minor) picks the rule set; None means "the newest", and
    a note records what releases before 2.28 would choose when that differs.
    """
    if version is None:
        newest = _nccl_select(ifaces, env, running_only=True, virbr=True)
        older = _nccl_select(ifaces, env, running_only=False, virbr=False)
        if older.picks != newest.picks or older.error != newest.error:
            newest.notes.append(f"NCCL before 2.28 (which also counts interfaces that are down or without carrier, "
                                f"and does not set virbr* aside) would use: {older.text()}")
        return newest
    new = tuple(version) >= NCCL_RUNNING_ONLY_SINCE
    return _nccl_select(ifaces, env, running_only=new, virbr=new)


def _nccl_select(ifaces: Sequence[Interface], env: Mapping[str, str], running_only: bool, virbr: bool) -> Choice:
    fam = nccl_family(env)
    value = env.get("NCCL_SOCKET_IFNAME")
    if value is not None and len(value) > 1:
        picks = nccl_find(ifaces, value, fam, running_only)
        c = Choice("nccl", f"NCCL_SOCKET_IFNAME={value}", f"NCCL_SOCKET_IFNAME={value}",
                   picks=[(i.name, a.address) for i, a in picks])
        spec = parse_nccl_list(value)
        if not spec.exclude:
            names = _names(ifaces)
            for e in spec.entries:
                hits = [n for n in names if (n == e if spec.exact else n.startswith(e))]
                if not hits:
                    c.missing.append(e)
                elif not any(i.addrs for i in ifaces if i.name in hits):
                    c.no_address.append(e)
        if not picks:
            c.error = "Bootstrap : no socket interface found"
        return c
    notes = []
    if value is not None:
        notes.append(f"NCCL_SOCKET_IFNAME={value!r} is ignored: NCCL reads it only when longer than one character")
    steps: list[tuple[str, str]] = [("ib", "interfaces named ib* come first")]
    comm_id = env.get("NCCL_COMM_ID")
    if comm_id and len(comm_id) > 1:
        steps.append(("@comm_id", "an interface in the subnet of NCCL_COMM_ID"))
    rest = "^docker,lo,virbr" if virbr else "^docker,lo"
    steps.append((rest, "no ib* interface: any interface but docker*, lo*" + (", virbr*" if virbr else "")))
    steps.append(("docker", "nothing else: docker*"))
    steps.append(("lo", "nothing else: lo*"))
    if virbr:
        steps.append(("virbr", "nothing else: virbr*"))
    for prefixes, words in steps:
        if prefixes == "@comm_id":
            picks = _nccl_subnet_match(ifaces, comm_id or "")
        else:
            picks = nccl_find(ifaces, prefixes, fam, running_only)
        if picks:
            return Choice("nccl", None, f"default order: {words}", picks=[(i.name, a.address) for i, a in picks],
                          notes=notes)
    return Choice("nccl", None, "default order: no usable interface at all", error="Bootstrap : no socket interface found",
                  notes=notes)


def _nccl_subnet_match(ifaces: Sequence[Interface], comm_id: str) -> list[tuple[Interface, IfAddr]]:
    host = comm_id.rsplit(":", 1)[0].strip("[]")
    try:
        ip = ipaddress.ip_address(host.split("%")[0])
    except ValueError:
        return []  # a name: NCCL resolves it; a probe would have to, too
    for i, a in ifaddrs_order(ifaces):
        net = a.network()
        if net is not None and a.ip.version == ip.version and ip in net:
            return [(i, a)]
    return []


# -- Gloo and TensorPipe -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Resolved:
    """One address the hostname resolved to, in getaddrinfo order, and whether bind(2) took it."""

    family: str
    address: str
    bindable: bool | None = None  # None: not tried (offline); computed from the interfaces then


def _bindable(r: Resolved, ifaces: Sequence[Interface]) -> bool:
    return r.bindable if r.bindable is not None else is_local_address(r.address, ifaces)


def gloo_device_for_interface(name: str, ifaces: Sequence[Interface]) -> IfAddr | None:
    """gloo's lookupAddrForIface: the interface's first IPv4/IPv6 address in getifaddrs order, up or not."""
    for i, a in ifaddrs_order(ifaces):
        if i.name == name:
            return a
    return None


def gloo_select(ifaces: Sequence[Interface], env: Mapping[str, str], hostname: str,
                resolved: Sequence[Resolved] | None) -> Choice:
    """Gloo's devices: GLOO_SOCKET_IFNAME's interfaces, else the hostname's first bindable address.

    ``resolved`` is None when the hostname did not resolve at all.
    """
    value = env.get("GLOO_SOCKET_IFNAME")
    if value is not None and len(value) > 1:
        # torch splits on ',' keeping empty pieces between commas (std::getline);
        # an empty piece means "use the hostname" for that device.
        pieces = value.split(",")
        if value.endswith(","):
            pieces = pieces[:-1]
        c = Choice("gloo", f"GLOO_SOCKET_IFNAME={value}", f"GLOO_SOCKET_IFNAME={value}")
        names = _names(ifaces)
        for p in pieces:
            if p == "":
                sub = _gloo_hostname(ifaces, hostname, resolved)
                c.picks.extend(sub.picks)
                c.via_hostname = True
                continue
            a = gloo_device_for_interface(p, ifaces)
            if a is not None:
                c.picks.append((p, a.address))
                continue
            (c.missing if p not in names else c.no_address).append(p)
            if c.error is None:
                c.error = f"Unable to find address for: {p}"
        if c.error:
            c.picks = []  # torch raises while creating the devices: the group never starts
        return c
    c = _gloo_hostname(ifaces, hostname, resolved)
    if value is not None:
        c.notes.append(f"GLOO_SOCKET_IFNAME={value!r} is ignored: torch reads it only when longer than one character")
    return c


def _gloo_hostname(ifaces: Sequence[Interface], hostname: str, resolved: Sequence[Resolved] | None) -> Choice:
    if resolved:
        for r in resolved:
            if _bindable(r, ifaces):
                i = interface_of(r.address, ifaces)
                return Choice("gloo", None, f"GLOO_SOCKET_IFNAME unset: the first local address hostname {hostname} resolves to",
                              picks=[(i.name if i else "?", r.address)], via_hostname=True)
        why = f"hostname {hostname} resolves only to addresses that are not on this host"
    else:
        why = f"hostname {hostname} does not resolve"
    lo = interface_of("127.0.0.1", ifaces)
    return Choice("gloo", None, f"GLOO_SOCKET_IFNAME unset and {why}: gloo falls back to the loopback address",
                  picks=[(lo.name if lo else "lo", "127.0.0.1")], via_hostname=True, fallback_loopback=True)


def tp_select(ifaces: Sequence[Interface], env: Mapping[str, str], hostname: str,
              resolved: Sequence[Resolved] | None) -> Choice:
    """TensorPipe's address (torch RPC): TP_SOCKET_IFNAME's interface, else the hostname; 127.0.0.1 on failure."""
    value = env.get("TP_SOCKET_IFNAME")
    if value is not None:
        c = Choice("tp", f"TP_SOCKET_IFNAME={value}", f"TP_SOCKET_IFNAME={value}")
        a = gloo_device_for_interface(value, ifaces)
        if a is not None:
            c.picks.append((value, a.address))
        else:
            (c.missing if value not in _names(ifaces) else c.no_address).append(value)
            c.fallback_loopback = True
            c.picks.append(("lo", "127.0.0.1"))
            c.notes.append("TensorPipe only logs a warning and listens on 127.0.0.1")
        return c
    g = _gloo_hostname(ifaces, hostname, resolved)  # the same bind-first-address walk
    g.backend = "tp"
    g.rule = g.rule.replace("GLOO_SOCKET_IFNAME", "TP_SOCKET_IFNAME").replace("gloo falls", "TensorPipe falls")
    return g


# -- helpers for checks ----------------------------------------------------------------------------


def suspicious(iface: Interface | None, address: str) -> str | None:
    """Why an interface/address cannot carry traffic from other hosts, or None.

    Returns one of: "loopback", "link_local", "container_bridge", "veth",
    "tunnel", "down".
    """
    try:
        ip = ipaddress.ip_address(address.split("%")[0])
    except ValueError:
        return None
    if ip.is_loopback or (iface is not None and iface.kind == "loopback"):
        return "loopback"
    if ip.is_link_local:
        return "link_local"
    if iface is None:
        return None
    if iface.container_bridge:
        return "container_bridge"
    if iface.kind == "veth" and (iface.master is not None or not any(not a.link_local for a in iface.addrs)):
        return "veth"
    if iface.kind == "tunnel":
        return "tunnel"
    if not iface.running:
        return "down"
    return None


def recommend(ifaces: Sequence[Interface], prefer: str | None = None) -> Interface | None:
    """The interface to name in a remedy: ``prefer`` (the route to the master) when usable, else the best other."""
    by_name = {i.name: i for i in ifaces}
    if prefer and prefer in by_name:
        p = by_name[prefer]
        a = p.first(INET) or p.first()
        if a and suspicious(p, a.address) is None:
            return p
    rank = {k: n for n, k in enumerate(("physical", "infiniband", "virtual", "veth", "bridge", "tunnel", "loopback"))}
    good = []
    for i in ifaces:
        a = i.first(INET) or next((x for x in i.addrs if not x.link_local), None)
        if a is None or suspicious(i, a.address) is not None:
            continue
        good.append((0 if a.family == INET else 1, rank.get(i.kind, 9), i.index, i))
    good.sort(key=lambda t: t[:3])
    return good[0][3] if good else None


def names_like(value: str) -> list[str]:
    """Pieces of an interface setting that look like an IP address or a subnet prefix, not a name."""
    out = []
    for p in value.lstrip("^=").split(","):
        p = p.strip().split(":", 1)[0] if p.count(":") <= 1 else p.strip()
        if not p:
            continue
        try:
            ipaddress.ip_address(p.split("%")[0])
            out.append(p)
            continue
        except ValueError:
            pass
        try:
            ipaddress.ip_network(p, strict=False)
            out.append(p)
            continue
        except ValueError:
            pass
        stripped = p.rstrip(".")
        parts = stripped.split(".")
        if 1 < len(parts) <= 4 and all(x.isdigit() and int(x) < 256 for x in parts):
            out.append(p)  # a dotted prefix such as 192.168.99.
    return out


def interface_for_address(text: str, ifaces: Sequence[Interface]) -> Interface | None:
    """The interface whose address or network matches an address or prefix given where a name was expected."""
    t = text.strip()
    try:
        ip = ipaddress.ip_address(t.split("%")[0])
    except ValueError:
        ip = None
    if ip is not None:
        hit = interface_of(str(ip), ifaces)
        if hit:
            return hit
        for i in ifaces:
            for a in i.addrs:
                n = a.network()
                if n is not None and ip.version == n.version and ip in n:
                    return i
        return None
    try:
        net = ipaddress.ip_network(t, strict=False)
        for i in ifaces:
            if any(a.ip.version == net.version and a.ip in net for a in i.addrs):
                return i
        return None
    except ValueError:
        pass
    prefix = t if t.endswith(".") else t + "."
    for i in ifaces:
        if any(a.family == INET and a.address.startswith(prefix) for a in i.addrs):
            return i
    return None


def interfaces_from(data: Iterable[Mapping[str, Any]]) -> list[Interface]:
    return [Interface.from_dict(d) for d in data]
