"""Logs stage: diagnose a failed job from its saved output (``commdoctor logs``).

Promise: ``diagnose(model)`` is a pure function of the run model built by
commdoctor.loaders.logs; it returns candidate causes already in causal order
(the likeliest root cause first, then other independent failures, then other
explanations of the same signature, then consequences). The checks only turn
those into findings. Rules read what a message *means* (see
commdoctor.parsing.signatures), never which file it came from.
"""

from __future__ import annotations

import ipaddress
import re
import signal
from dataclasses import dataclass, field
from typing import Any, Iterator

from commdoctor.checks.base import Check, Rule
from commdoctor.checks.backends import FALLBACK
from commdoctor.errors import SkipCheck
from commdoctor.ifvars import LIBRARIES, applies_to, iface_env
from commdoctor.model import Evidence, Finding, Severity, Stage
from commdoctor.pipeline import CheckRun

E, W, I = Severity.ERROR, Severity.WARNING, Severity.INFO
IFNAME_ENV = iface_env(("nccl", "gloo"))
ALL_IFACE_VARS = frozenset(iface_env(()))
#: Findings about which interface a library uses, and the libraries their remedy always concerns.
IFACE_CODES: dict[str, set[str]] = {
    "LOG013": set(), "LOG020": set(), "LOG021": set(), "LOG022": set(), "LOG024": set(),
    "LOG023": {"openmpi"}, "LOG026": {"openmpi"}, "LOG027": {"ucx"},
}
NCCL_DEBUG_ENV = {"NCCL_DEBUG": "INFO", "NCCL_DEBUG_SUBSYS": "INIT,NET,ENV", "TORCH_DISTRIBUTED_DEBUG": "DETAIL"}

# -- candidates ---------------------------------------------------------------------------------


@dataclass
class Cand:
    """One explanation the logs support, before it becomes a Finding."""

    code: str
    cause: str
    tier: int  # 1 = specific root cause ... 9 = unexplained error
    seq: int  # when it was first seen (global line order)
    evidence: list[Evidence]
    params: dict[str, Any] = field(default_factory=dict)
    detail: str = ""
    ranks: set[int] = field(default_factory=set)
    hosts: set[str] = field(default_factory=set)
    alts: list[tuple[str, str]] = field(default_factory=list)  # (cause, what tells it apart)
    weak: bool = False  # a risk seen in the setup, not a failure the logs show
    consequence: bool = False  # always a consequence (closed connections, timeouts on waiting ranks)
    severity: Severity | None = None



def _missing(world: int, seen: Any, limit: int = 64) -> list[int]:
    """The first ``limit`` ranks below ``world`` not in ``seen``: a log may claim 10^7 ranks,
    and ``set(range(world))`` of that took seconds and gigabytes for a three-line file."""
    out: list[int] = []
    for r in range(world):
        if r not in seen:
            out.append(r)
            if len(out) >= limit:
                break
    return out

def _ranks_hosts(hits: list[Any]) -> tuple[set[int], set[str]]:
    ranks = {h.ev.rank for h in hits if h.ev.rank is not None}
    hosts = {h.ev.host for h in hits if h.ev.host}
    return ranks, hosts


def _cand(code: str, cause: str, tier: int, hits: list[Any], n: int = 3, **kw: Any) -> Cand:
    ranks, hosts = _ranks_hosts(hits)
    return Cand(code, cause, tier, min(h.seq for h in hits), [h.ev for h in hits[:n]], ranks=ranks, hosts=hosts, **kw)


_STORE_WORDS = re.compile(r"TCPStore|[Ss]tore|rendezvous|[Rr]endezvous|MASTER_|client socket|c10d|init_method|tcp://")
_LINK_LOCAL6 = re.compile(r"^fe80:", re.I)
_VIRTUAL_IF = re.compile(r"^(?:docker\d*|veth\w*|virbr\d*|br-\w+|cni\d*|flannel[\w.]*|cali\w+|tunl\d*|vxlan[\w.]*|lxcbr\d*|kube-ipvs\d*|podman\d*)$")


def _addr_problem(name: str, addr: str) -> str | None:
    a = addr.split("%")[0]
    if name == "lo" or a.startswith("127.") or a == "::1":
        return "loopback"
    if _LINK_LOCAL6.match(a) or a.startswith("169.254."):
        return "link-local"
    if _VIRTUAL_IF.match(name):
        return "a virtual bridge"
    return None


def _version_tuple(v: str) -> tuple[int, ...]:
    try:
        return tuple(int(x) for x in v.split(".")[:3])
    except ValueError:
        return (0,)


def diagnose(m: Any) -> list[Cand]:
    """Every candidate cause the run model supports, likeliest root cause first."""
    H = m.hits
    out: list[Cand] = []

    def hs(sig: str, exclude: tuple[str, ...] = ()) -> list[Any]:
        got = H.get(sig, [])
        if exclude:
            lines = {(h.ev.source, h.ev.line) for x in exclude for h in H.get(x, [])}
            got = [h for h in got if (h.ev.source, h.ev.line) not in lines]
        return got

    # -- rendezvous and host names ------------------------------------------------------------
    if hs("port_in_use"):
        h = hs("port_in_use")
        port = next((x.groups.get("port") for x in h if x.groups.get("port")), None) or "?"
        out.append(_cand("LOG010", "port_conflict", 1, h, params={"port": port}))
    if hs("store_connect_timeout"):
        h = hs("store_connect_timeout")
        ep = next((f"{x.groups.get('host') or x.groups.get('host2')}:{x.groups.get('port') or '?'}" for x in h
                   if x.groups.get("host") or x.groups.get("host2")), "the store")
        out.append(_cand("LOG011", "rendezvous_unreachable", 3, h, params={"endpoint": ep, "how": "timed out connecting"}, alts=[
            ("firewall_or_port_blocked", "a firewall that drops packets also makes connects time out; `nc -zv HOST PORT` from the "
                                         "failing node hangs (dropped) rather than failing at once (nothing listening)"),
            ("hostname_resolution", "if MASTER_ADDR is a name, check it resolves to the same routable address everywhere "
                                    "(getent hosts NAME); a 'gai error' warning beside it says it did not resolve")]))
    if hs("store_wait_clients"):
        h = hs("store_wait_clients")
        g = h[0].groups
        out.append(_cand("LOG012", "rendezvous_unreachable", 3, h, params={"joined": g.get("joined"), "world": g.get("world")},
                         alts=[("launcher_misconfig", "if fewer processes were started than WORLD_SIZE (check the launcher's "
                                                      "task count), nobody failed to connect: they never existed"),
                               ("peer_process_died", "a rank that crashed before init_process_group also never joins: "
                                                     "look for its own traceback")]))
    if hs("rdzv_connection"):
        out.append(_cand("LOG011", "rendezvous_unreachable", 3, hs("rdzv_connection"),
                         params={"endpoint": "the c10d rendezvous store", "how": "lost its connection"}, alts=[
            ("hostname_resolution", "the c10d rendezvous advertises host names: if a node's name is missing from DNS or "
                                    "/etc/hosts, peers cannot reach the store it hosts (getent hosts $(hostname) on each node)"),
            ("firewall_or_port_blocked", "if the store host is up and resolvable, the port may be closed between nodes "
                                         "(platforms that expose only some ports); `nc -zv HOST PORT` tells")]))
    if hs("rdzv_timeout"):
        out.append(_cand("LOG012", "rendezvous_unreachable", 4, hs("rdzv_timeout"), params={"joined": "?", "world": "?"},
                         alts=[("launcher_misconfig", "a node that was never started (wrong --nnodes, a pending job step) "
                                                      "looks the same: count the agents that logged 'Starting elastic'")]))
    nr = hs("name_resolution")
    own = [h for h in nr if "Unable to resolve hostname" in h.ev.text]
    other = [h for h in nr if h not in own]
    own += hs("own_hostname")
    if own:
        out.append(_cand("LOG015", "hostname_resolution", 1, own, params={"what": "this host's own name"}))
    if other:
        out.append(_cand("LOG015", "rendezvous_unreachable", 2, other, params={"what": "the rendezvous host"}, alts=[
            ("hostname_resolution", "if the name exists but resolves wrongly (127.0.1.1, a stale /etc/hosts entry), fix the "
                                    "resolver; if it does not exist yet (a master pod not started), the workers started too early")]))
    if hs("ifname_missing"):
        h = hs("ifname_missing")
        iface = next((x.groups.get("iface") or x.groups.get("iface2") or x.groups.get("iface3") for x in h
                      if x.groups.get("iface") or x.groups.get("iface2") or x.groups.get("iface3")), "")
        out.append(_cand("LOG021", "wrong_interface", 1, h, params={"iface": iface or "the named interface"}))
    if hs("family_mismatch"):
        out.append(_cand("LOG013", "hostname_resolution", 1, hs("family_mismatch"),
                         params={"addr": "an IPv6 address (::1)"},
                         detail="The host name resolves to an IPv6 address on one side and IPv4 on the other."))
    if hs("comm_id_invalid"):
        h = hs("comm_id_invalid")
        addr = next((x.groups["addr"] for x in h if x.groups.get("addr")), None)
        out.append(_cand("LOG011", "rendezvous_unreachable", 2, h,
                         params={"endpoint": f"NCCL_COMM_ID {addr}" if addr else "the address in NCCL_COMM_ID",
                                 "how": "no local interface is on its network" if addr else "the value is malformed"},
                         detail="NCCL_COMM_ID names the bootstrap root as <ipv4>:<port>, [<ipv6>]:<port> or <host>:<port>; "
                                "every rank must reach it over one of its own interfaces.",
                         alts=[("wrong_interface", "if the address is right, NCCL_SOCKET_IFNAME may exclude the only "
                                                   "interface on that network")]))
    if hs("connect_link_local"):
        h = hs("connect_link_local")
        addr = h[0].groups.get("addr") or "fe80::"
        out.append(_cand("LOG020", "wrong_interface", 1, h, params={"what": f"{addr} is link-local (valid on one link only)"},
                         alts=[("hostname_resolution", "if the host name resolves to that link-local address (getent hosts), "
                                                       "fix the name rather than the interface setting")]))
    if hs("connect_loopback"):
        h = hs("connect_loopback")
        addr = h[0].groups.get("addr") or "127.0.0.1"
        out.append(_cand("LOG013", "hostname_resolution", 1, h, params={"addr": addr}, alts=[
            ("wrong_interface", "if GLOO_SOCKET_IFNAME/NCCL_SOCKET_IFNAME=lo was set explicitly, the setting (not the "
                                "resolver) chose loopback; `getent hosts $(hostname)` printing 127.x says it is the resolver")]))
    if hs("mpi_btl_tcp") or hs("mpi_tcp_peer", exclude=("mpi_btl_tcp",)):
        peer = hs("mpi_tcp_peer", exclude=("mpi_btl_tcp",))
        reach = [h for h in peer if "reach each other" in h.ev.text]
        tcp = hs("mpi_btl_tcp") + [h for h in peer if h not in reach]
        if tcp:
            out.append(_cand("LOG023", "wrong_interface", 1, tcp))
        if reach:
            out.append(_cand("LOG026", "wrong_interface", 2, reach, alts=[
                ("environment_misconfig", "a btl list without 'self' (--mca btl tcp instead of tcp,self) fails the same way; "
                                          "so does a list that keeps only a fabric one of the hosts lacks (openib, ofi)")]))
    out.extend(_mpi_ucx(m, hs))
    refused = hs("peer_refused", exclude=("connect_loopback", "connect_link_local", "mpi_btl_tcp", "port_in_use", "hydra_connect",
                                          "ucx_unreachable", "comm_id_invalid"))
    store_ref = [h for h in refused if _STORE_WORDS.search(h.ev.text)]
    peer_ref = [h for h in refused if h not in store_ref]
    if store_ref:
        out.append(_cand("LOG011", "rendezvous_unreachable", 3, store_ref,
                         params={"endpoint": "the rendezvous store", "how": "was refused or had no route"}, alts=[
            ("firewall_or_port_blocked", "'Connection refused' from a host that is up means nothing listens there yet (master "
                                         "not started) or a firewall rejects; 'No route to host' means a wrong MASTER_ADDR or routing")]))
    if peer_ref:
        out.append(_cand("LOG022", "wrong_interface", 3, peer_ref, params={"how": "refused or unreachable"}, alts=[
            ("firewall_or_port_blocked", "if the address is the peer's right one, a host firewall rejecting the port gives the "
                                         "same error: compare the address with the peer's routable IP"),
            ("peer_process_died", "a peer that already exited refuses connections too: look for its own error first")]))
    timeouts = hs("connect_timeout", exclude=("peer_refused", "connect_loopback", "connect_link_local", "ib_qp"))
    if timeouts:
        out.append(_cand("LOG025", "firewall_or_port_blocked", 4, timeouts, alts=[
            ("wrong_interface", "an address that is not routed (a docker bridge, a second NIC) times out the same way: check "
                                "which interface each rank advertised")]))

    # -- host resources, GPU, driver ----------------------------------------------------------------
    if hs("shm"):
        out.append(_cand("LOG030", "shm_too_small", 1, hs("shm")))
    bus = hs("sigbus", exclude=("shm",))
    if bus:
        out.append(_cand("LOG030", "shm_too_small", 3, bus,
                         detail="A process died of SIGBUS (bus error, signal 7). Touching a shared-memory mapping that "
                                "/dev/shm cannot back raises it: NCCL before 2.9 and torch's DataLoader workers map shared "
                                "memory this way, and containers give /dev/shm 64 MB by default.",
                         alts=[("hardware_fault", "with /dev/shm roomy (df -h /dev/shm), a SIGBUS from a file-backed mapping "
                                                  "on failing storage or memory is the other source: check dmesg")]))
    if hs("cuda_oom"):
        out.append(_cand("LOG031", "cuda_oom", 1, hs("cuda_oom")))
    if hs("driver_too_old"):
        out.append(_cand("LOG032", "driver_cuda_mismatch", 1, hs("driver_too_old")))
    if hs("fabric_not_ready"):
        out.append(_cand("LOG033", "fabric_manager_nvls", 1, hs("fabric_not_ready")))
    if hs("duplicate_gpu"):
        h = hs("duplicate_gpu")
        g = h[0].groups
        ranks = {int(g["a"]), int(g["b"])} if g.get("a") and g.get("b") else set()
        what = (f"ranks {g['a']} and {g['b']} both use the GPU at bus id {g.get('bus')}" if g.get("a") and g.get("b")
                else "several ranks of one communicator use the same GPU")
        c = _cand("LOG034", "duplicate_gpu", 1, h, params={"what": what})
        c.ranks |= ranks
        out.append(c)
    if hs("gpu_busy"):
        out.append(_cand("LOG034", "duplicate_gpu", 4, hs("gpu_busy"),
                         params={"what": "a GPU refused a new context because another process holds it"},
                         detail="A GPU in EXCLUSIVE_PROCESS compute mode accepts one process: a second rank mapped to the "
                                "same GPU (a missing torch.cuda.set_device, CUDA_VISIBLE_DEVICES the same for every rank) "
                                "is refused this way.",
                         alts=[("other", "if every rank has its own GPU, another job or a stale process holds it "
                                         "(nvidia-smi lists the processes; nvidia-smi -q | grep 'Compute Mode')"),
                               ("hardware_fault", "a GPU that fell into an error state is also unavailable: dmesg shows Xid errors")]))
    if hs("gpu_hw"):
        out.append(_cand("LOG037", "hardware_fault", 1, hs("gpu_hw"), params={"what": "the GPU reported a hardware error"}))
    cf = hs("cuda_failure", exclude=("cuda_oom", "driver_too_old", "fabric_not_ready", "gpu_hw", "gpu_busy", "peer_mapping", "p2p_unsupported"))
    nvls = [h for h in cf if "nvls" in (h.rec.file or "").lower() or "NVLS" in h.ev.text or "ulticast" in h.ev.text]
    unknown = [h for h in cf if h not in nvls and ("unknown error" in h.ev.text or h.groups.get("num") == "999")]
    rest = [h for h in cf if h not in nvls and h not in unknown]
    if nvls:
        out.append(_cand("LOG033", "fabric_manager_nvls", 1, nvls, alts=[
            ("hardware_fault", "if the fabric manager reports healthy and `nvidia-smi -q` shows Xid errors, a GPU or NVSwitch "
                               "is failing; NCCL_NVLS_ENABLE=0 working only avoids the path")]))
    if unknown:
        out.append(_cand("LOG037", "hardware_fault", 5, unknown, params={"what": "CUDA reported an unknown error (999)"}, alts=[
            ("fabric_manager_nvls", "on NVSwitch systems error 999 often follows a fabric manager restart without a GPU reset")]))
    if rest:
        out.append(_cand("LOG081", "other", 5, rest))
    ml = hs("memlock")
    # Length first: int() of a 5,000-digit number raises (Python's 4300-digit limit) and took the whole diagnosis down.
    lim = [h for h in hs("memlock_limit") if (h.groups.get("kb") or "").isdigit()
           and len(h.groups["kb"].lstrip("0")) <= 5 and int(h.groups["kb"]) <= 65536]
    if ml:
        out.append(_cand("LOG035", "rlimit_memlock", 1, ml + lim, n=4))
    elif lim:
        out.append(_cand("LOG035", "rlimit_memlock", 3, lim))

    # -- InfiniBand / PCIe ---------------------------------------------------------------------------
    if hs("ib_qp"):
        h = hs("ib_qp")
        c = _cand("LOG036", "ib_misconfig", 2, h, alts=[
            ("hardware_fault", "if the GID/route is right on every node, a bad link times out the same way: check "
                               "ibstat port state and error counters")])
        ll = [g for g in m.gid_table if g[1].lower().startswith("fe80")]
        if ll:
            c.evidence.extend(g[3] for g in ll[:2])
            c.detail = (f"GID index {', '.join(str(g[0]) for g in ll[:4])} hold link-local (fe80::) addresses, which "
                        "are not routable between nodes; pick the index whose GID maps to the routable address.")
        out.append(c)
    if hs("ib_async"):
        h = hs("ib_async")
        dev = next((x.groups["dev"] for x in h if x.groups.get("dev")), None)
        ev_what = next((x.groups.get("what2") or x.groups.get("what") for x in h if x.groups.get("what2") or x.groups.get("what")), None)
        what = "the InfiniBand port reported errors" + (f" ({dev}: {ev_what.strip()})" if dev and ev_what else "")
        out.append(_cand("LOG037", "hardware_fault", 1, h, params={"what": what}))
    inc = hs("ib_incompatible")
    if inc:
        counts = [x for x in inc if x.groups.get("min")]
        links = [x for x in inc if x not in counts]
        if links:
            out.append(_cand("LOG036", "ib_misconfig", 1, links,
                             detail="NCCL was asked to connect or merge NICs of different link types (InfiniBand with "
                                    "RoCE/Ethernet); select NICs of one link type with NCCL_IB_HCA on every node."))
        if counts:
            g = counts[0].groups
            out.append(_cand("LOG036", "ib_misconfig", 2, counts,
                             detail=f"Ranks see different numbers of network devices (from {g.get('min')} to {g.get('max')}): "
                                    "NCCL_IB_HCA or the plugin selects a different set on some nodes.",
                             alts=[("hardware_fault", "a NIC or port that is down on one node drops out of its count: "
                                                      "ibstat on every node shows which port is not Active")]))
    if hs("ib_reg_mr"):
        h = hs("ib_reg_mr")
        out.append(_cand("LOG038", "p2p_acs_iommu", 3, h,
                         params={"what": f"the NIC could not register GPU memory for GPUDirect RDMA ({h[0].groups.get('err')})"},
                         detail="ibv_reg_mr on a GPU buffer needs the nvidia-peermem module (or DMA-BUF support) and a PCIe "
                                "path the IOMMU lets through.",
                         alts=[("p2p_driver_bug", "GPUs without GPUDirect RDMA support (most consumer boards) fail the same "
                                                  "way: NCCL_NET_GDR_LEVEL=LOC (or NCCL_NET_GDR_DISABLE=1) avoids it"),
                               ("ib_misconfig", "lsmod | grep nvidia_peermem empty: load the module on every node")]))
    comp = hs("ib_completion")
    gdr = [h for h in comp if h.groups.get("code") in ("4", "10", "11") or h.groups.get("vendor") == "81"]
    flush = [h for h in comp if h.groups.get("code") == "5"]
    retry = [h for h in comp if h not in gdr and h not in flush]
    if gdr:
        out.append(_cand("LOG038", "p2p_acs_iommu", 2, gdr, params={"what": "RDMA to or from GPU memory failed (GPUDirect)"}, alts=[
            ("hardware_fault", "protection errors only on some nodes, with NCCL_NET_GDR_LEVEL=LOC working, still point at "
                               "ACS/IOMMU; errors that follow one cable or port point at hardware")]))
    if retry:
        out.append(_cand("LOG037", "hardware_fault", 2, retry, params={"what": "RDMA transfers ran out of retries"}, alts=[
            ("ib_misconfig", "retries exhausted on every connection from the start usually mean a wrong GID index or "
                             "traffic class rather than a failing link"),
            ("peer_process_died", "a peer that died mid-transfer leaves the same completion error: look for its own error")]))
    if hs("acs_iommu"):
        out.append(_cand("LOG038", "p2p_acs_iommu", 2, hs("acs_iommu"), params={"what": "ACS/IOMMU is redirecting PCIe peer traffic"}))
    if hs("p2p_unsupported"):
        out.append(_cand("LOG039", "p2p_driver_bug", 2, hs("p2p_unsupported"), alts=[
            ("p2p_acs_iommu", "if the GPUs do support P2P, ACS/IOMMU blocking the path gives similar failures: "
                              "`lspci -vvv | grep ACSCtl` shows SrcValid+ on the bridges")]))

    # -- NCCL itself ----------------------------------------------------------------------------------
    versions = {v for v in m.versions}
    host_versions = {v: hs_ for v, hs_ in m.version_hosts.items() if hs_}
    if hs("nccl_version_mismatch"):
        out.append(_cand("LOG040", "version_mismatch", 1, hs("nccl_version_mismatch"), params={"what": "NCCL itself found ranks on different versions"}))
    if len(versions) > 1:
        evs = [m.versions[v] for v in sorted(versions, key=_version_tuple)]
        per = "; ".join(f"{v} on {', '.join(sorted(host_versions.get(v, {'?'})))}" for v in sorted(versions, key=_version_tuple))
        out.append(Cand("LOG040", "version_mismatch", 1, 0, evs,
                        params={"what": f"ranks load different NCCL versions ({per})"},
                        hosts={h for v in host_versions.values() for h in v}))
    if len(m.torch_versions) > 1:
        out.append(Cand("LOG041", "version_mismatch", 1, 0, list(m.torch_versions.values())[:4],
                        params={"versions": ", ".join(sorted(m.torch_versions))}))
    if hs("bad_family"):
        out.append(_cand("LOG040", "version_mismatch", 3, hs("bad_family"),
                         params={"what": "a peer sent a connection handle this NCCL cannot read"}, alts=[
            ("nccl_internal_bug", "with one NCCL version on every node (compare the 'NCCL version' lines per host), a "
                                  "corrupted handle points at NCCL or at the framework broadcasting it")]))
    if hs("msg_truncated"):
        c = _cand("LOG070", "nccl_internal_bug", 3, hs("msg_truncated"),
                  params={"what": "a bootstrap message arrived with the wrong size"}, alts=[
            ("version_mismatch", "mixed NCCL versions exchange structures of different sizes and fail exactly like this: "
                                 "compare 'NCCL version' on every node before blaming NCCL")])
        out.append(c)
    wrongver = [h for h in hs("topo_attr") if "wrong version" in h.ev.text]
    if wrongver:
        out.append(_cand("LOG071", "other", 2, wrongver,
                         detail="The XML given through NCCL_TOPO_FILE / NCCL_GRAPH_FILE was written for another NCCL "
                                "release; regenerate it with this NCCL (NCCL_TOPO_DUMP_FILE) or stop injecting it."))
    if hs("ring_broken"):
        out.append(_cand("LOG070", "nccl_internal_bug", 3, hs("ring_broken"),
                         params={"what": "the ranks computed rings that do not join up"},
                         detail="Each rank searches the topology on its own; when their results disagree the rings do not "
                                "close. Known NCCL defects (uninitialised link speeds, fixed in 2.20) do this.",
                         alts=[("hostname_resolution", "ranks that disagree on which of them share a node (NCCL_HOSTID set, "
                                                       "identical host names) compute different rings"),
                               ("version_mismatch", "ranks on different NCCL versions search differently: compare 'NCCL version' per node")]))
    if hs("peer_mapping"):
        out.append(_cand("LOG070", "nccl_internal_bug", 3, hs("peer_mapping"),
                         params={"what": "a GPU ran out of CUDA peer mappings (at most 8 peers over PCIe)"},
                         detail="CUDA lets one GPU map at most 8 peers over PCIe; NCCL releases that open P2P to every GPU "
                                "of a larger machine hit it.",
                         alts=[("p2p_driver_bug", "NCCL_P2P_LEVEL=PXB (or NCCL_P2P_DISABLE=1) keeps P2P to near GPUs only")]))
    if hs("socket_truncated"):
        h = hs("socket_truncated")
        g = h[0].groups
        out.append(_cand("LOG050", "collective_mismatch", 2, h,
                         detail=f"A peer sent {g.get('got')} bytes where this rank expected {g.get('want')}: the ranks ran "
                                "different operations or sizes, or differ in NCCL_PROTO / NCCL_ALGO / buffer settings.",
                         alts=[("version_mismatch", "ranks on different NCCL versions size their messages differently"),
                               ("environment_misconfig", "NCCL_* settings that differ between nodes change message sizes: "
                                                         "compare the 'set by environment' lines per node")]))
    if hs("nccl_error_class"):
        out.append(_cand("LOG070", "nccl_internal_bug", 8, hs("nccl_error_class"),
                         params={"what": "NCCL reported an internal error and no other line says why"},
                         alts=[("other", "NCCL also returns 'internal error' for setups it rejects (topology files, "
                                         "plugins): rerun with NCCL_DEBUG=INFO to see the WARN line before it")]))
    if hs("topo_attr", exclude=()) and [h for h in hs("topo_attr") if h not in wrongver]:
        new = bool(versions) and all(_version_tuple(v) >= (2, 8) for v in versions)
        cause, alt = ("other", "nccl_internal_bug") if new else ("nccl_internal_bug", "other")
        tell = ("NCCL before 2.8 filled CPU attributes only for sockets whose GPUs were in use, so a topology file "
                "describing the whole machine failed when fewer GPUs ran; 2.8 fixed it")
        tell2 = ("on NCCL 2.8 or later the file itself is wrong or does not match this machine (often a static XML "
                 "injected by a network plugin through NCCL_TOPO_FILE)")
        out.append(_cand("LOG071", cause, 2, [h for h in hs("topo_attr") if h not in wrongver], alts=[(alt, tell2 if alt == "other" else tell)],
                         detail=tell if cause == "nccl_internal_bug" else tell2))
    mc = hs("nccl_mismatched_collective")
    if mc:
        blamed = {h.groups.get("rank") for h in mc if h.groups.get("rank")}
        reporters = {(h.ev.host, h.rec.pid, h.rec.dev) for h in mc}
        if len(blamed) >= 2 and len(reporters) >= 2:
            out.append(_cand("LOG038", "p2p_acs_iommu", 2, mc, n=4,
                             params={"what": "each rank blames a different peer for a collective mismatch"},
                             detail=f"{len(reporters)} ranks each name a different peer ({', '.join(sorted(blamed, key=int))}): "
                                    "a mistake in the program would make them agree on one culprit. Data arriving "
                                    "corrupted between the pairs (GPUDirect RDMA through PCIe switches with ACS "
                                    "enabled) is the known cause of this pattern.",
                             alts=[("collective_mismatch", "if the ranks named are ones whose code path differs (rank-dependent "
                                                           "control flow), it is a real mismatch: NCCL_DEBUG_SUBSYS=COLL shows each call"),
                                   ("hardware_fault", "errors confined to one node pair after ACS is off point at the NIC or cable")]))
        else:
            out.append(_cand("LOG050", "collective_mismatch", 2, mc, alts=[
                ("p2p_acs_iommu", "when several ranks each blame a different peer, corrupted GPUDirect transfers are the cause")]))
    if hs("launcher_rank_count"):
        out.append(_cand("LOG062", "launcher_misconfig", 1, hs("launcher_rank_count"),
                         params={"what": "NCCL's bootstrap saw the wrong number of ranks, or one rank twice"}))

    if hs("invalid_device"):
        out.append(_cand("LOG062", "launcher_misconfig", 1, hs("invalid_device"),
                         params={"what": "a rank asked for a GPU index this node does not have"},
                         detail="More processes per node than GPUs (--nproc-per-node, --ntasks-per-node), or a local "
                                "rank computed from the wrong variable, asks CUDA for a device that does not exist."))
    if hs("store_barrier"):
        h = hs("store_barrier")
        g = h[0].groups
        out.append(_cand("LOG062", "launcher_misconfig", 3, h,
                         params={"what": f"{g.get('joined')} of {g.get('world')} ranks reached the store barrier"},
                         alts=[("peer_process_died", "ranks that crashed before init also never reach the barrier: "
                                                     "look for their own errors"),
                               ("rendezvous_unreachable", "ranks that cannot reach MASTER_ADDR never join either")]))
    if hs("net_not_found"):
        out.append(_cand("LOG036", "ib_misconfig", 1, hs("net_not_found"),
                         detail="NCCL_NET asks for a network this node cannot load (no InfiniBand device or verbs "
                                "library, or a plugin that is not installed)."))
    if hs("nofile"):
        out.append(_cand("LOG082", "other", 2, hs("nofile")))
    # -- collectives ----------------------------------------------------------------------------------
    if hs("collective_mismatch"):
        out.append(_cand("LOG050", "collective_mismatch", 1, hs("collective_mismatch")))
    if hs("store_get_timeout"):
        h = hs("store_get_timeout")
        late = h[0].groups.get("src") or "0"
        c = _cand("LOG052", "collective_timeout_straggler", 4, h, params={"late": late}, alts=[
            ("peer_process_died", f"if rank {late} crashed before creating the communicator, its own traceback says so"),
            ("collective_mismatch", f"if rank {late} never calls this collective (rank-dependent code), it never publishes the id")])
        out.append(c)
    sw = hs("store_wait_timeout", exclude=("store_get_timeout",))
    if sw:
        keys = next((x.groups["keys"] for x in sw if x.groups.get("keys")), None)
        out.append(_cand("LOG055", "collective_timeout_straggler", 5, sw,
                         params={"what": f"keys {keys}" if keys else "the store read timed out"},
                         alts=[("peer_process_died", "the rank that should have written the key may have died first: "
                                                     "look for its own error or exit code"),
                               ("launcher_misconfig", "a rank that was never started never writes its key: check the "
                                                      "launcher's task count against the world size")]))
    mbp = hs("monitored_barrier_peer")
    if mbp:
        r = mbp[0].groups.get("rank")
        c = _cand("LOG060", "peer_process_died", 5, mbp, params={"what": f"rank {r} failed while monitored_barrier waited for it"})
        if r:
            c.ranks = {int(r)}
        out.append(c)
    if hs("monitored_barrier"):
        h = hs("monitored_barrier")
        out.append(_cand("LOG051", "collective_timeout_straggler", 3, h,
                         params={"who": f"rank(s) {h[0].groups.get('ranks', '?').strip()} did not reach monitored_barrier"}))
    known = {r.rank for r in m.ranks.values() if r.rank is not None} | {f.rank for f in m.elastic if f.rank is not None}
    world = max(known) + 1 if known else 0
    waited = {h.ev.rank for h in hs("gloo_recv_timeout") if h.ev.rank is not None}
    if world >= 2 and len(waited) >= world and all(r in waited for r in range(world)):
        out.append(_cand("LOG050", "collective_mismatch", 5, hs("gloo_recv_timeout"),
                         detail=f"Every rank (0 to {world - 1}) timed out inside a collective: nobody was late, so the ranks "
                                "were in collectives that do not pair up (a different operation, size or order).",
                         alts=[("collective_timeout_straggler", "if one rank's log is missing from this set, it may simply "
                                                                "have arrived late: check that every rank's output is here"),
                               ("hardware_fault", "a network partition or an MTU black hole between the hosts times out "
                                                  "every rank the same way: if the code paths are identical, test the network")]))
    elif hs("gloo_recv_timeout"):
        out.append(_cand("LOG054", "collective_timeout_straggler", 6, hs("gloo_recv_timeout"), alts=[
            ("collective_mismatch", "gloo gives this same timeout when ranks call different collectives (all_reduce against "
                                    "broadcast); TORCH_DISTRIBUTED_DEBUG=DETAIL names the mismatch within milliseconds"),
            ("peer_process_died", "a peer that hung or died without closing its sockets also leaves the recv waiting: "
                                  "take stacks (commdoctor hang) while it waits")]))
    if hs("rpc_timeout"):
        out.append(_cand("LOG053", "nccl_internal_bug", 5, hs("rpc_timeout"),
                         params={"what": "the engine's workers stopped answering inside a model step"},
                         detail="The workers hang inside a step without an error of their own: a deadlock in collectives "
                                "(notably NCCL collectives captured in CUDA graphs across nodes) is the known cause.",
                         alts=[("collective_timeout_straggler", "if one worker is merely slow (loading, compiling), a "
                                                                "longer RPC timeout lets it finish; a true deadlock never does"),
                               ("peer_process_died", "a worker that died leaves the same RPC timeout: look for its exit")]))

    # -- processes that died --------------------------------------------------------------------------
    died = hs("process_died")
    roots = [f for f in m.elastic if f.root]
    killed = [f for f in m.elastic if f.signal or (f.exitcode is not None and f.exitcode < 0)]
    el = roots or killed
    if died or el:
        evs = [f.ev for f in el if f.ev][:2] + [h.ev for h in died[:2]]
        seq = min([h.seq for h in died] + [0 if el else 10**12])
        who = next((f for f in el), None)
        what = "a rank was killed or crashed"
        if who is not None:
            bits = [f"rank {who.rank}" if who.rank is not None else "a rank", f"on {who.host}" if who.host else ""]
            sig = who.signal or (f"signal {-who.exitcode}" if who.exitcode is not None and who.exitcode < 0 else None)
            what = " ".join(b for b in bits if b) + (f" was killed by {sig}" if sig else f" exited with status {who.exitcode}")
        c = Cand("LOG060", "peer_process_died", 5, seq, [e for e in evs if e is not None], params={"what": what},
                 detail=("SIGKILL comes from the kernel's OOM killer (dmesg: 'Out of memory: Killed process'), a scheduler "
                         "enforcing limits, or a manual kill." if who is not None and who.signal == "SIGKILL" else ""))
        if who is not None and who.rank is not None:
            c.ranks.add(who.rank)
        if who is not None and who.host:
            c.hosts.add(who.host)
        if who is not None and who.signal is None and (who.exitcode or 0) > 0:
            c.tier = 7  # it raised: its own traceback is the root cause, the exit is what followed
            c.consequence = bool(out) or bool(m.unmatched_errors)
        out.append(c)

    # -- lost connections: consequences, unless nothing else explains them ---------------------------
    lost = hs("conn_lost", exclude=("peer_refused", "connect_link_local"))
    flush = hs("ib_completion") and [h for h in hs("ib_completion") if h.groups.get("code") == "5"] or []
    if lost or flush:
        h = lost or flush
        in_bootstrap = any("bootstrap" in f for h_ in h for k, files in m.retcode_files.items() for f in files
                           if h_.ev.host and k.startswith(h_.ev.host + ":")) or any("ootstrap" in x.ev.text for x in h)
        if in_bootstrap and not any(c.tier <= 5 for c in out):
            out.append(_cand("LOG022", "wrong_interface", 6, h, params={"how": "closed during NCCL's bootstrap"},
                             detail="Connections closed while ranks were still exchanging addresses. A rank that "
                                    "advertised an address every host has (docker0's 172.17.0.1, loopback) makes its "
                                    "peers connect to the wrong process, which closes the connection.",
                             alts=[("peer_process_died", "if a peer failed during init (out of memory, a crash), its own "
                                                         "error comes first in its log: this is then only the echo")]))
        else:
            out.append(_cand("LOG061", "peer_process_died", 6, h, consequence=True, alts=[
                ("hardware_fault", "a failing link or NIC (InfiniBand port errors, resets between healthy processes) looks "
                                   "the same from here: if no peer reports dying, check the fabric between the two hosts")]))

    # -- watchdog timeouts and stragglers ---------------------------------------------------------------
    out.extend(_watchdog(m, out))

    # -- from the run model: interfaces, host names, launchers, topology -------------------------------
    # A bad interface explains connection failures and the hangs they leave (timeouts at the first collectives).
    failing_net = any(c.code in ("LOG022", "LOG025", "LOG061", "LOG011", "LOG051", "LOG053", "LOG054") for c in out)
    bad_ifs: list[tuple[str, str, Evidence]] = []
    for host, hi in m.hosts.items():
        first_boot = next(iter(hi.bootstrap.items()), None)
        # NET/Socket lists every interface it could use; they carry data only when the network is Socket.
        socket_data = not hi.network or any("Socket" in n for n in hi.network)
        cands = (list(hi.net_socket.items()) if socket_data else []) + ([first_boot] if first_boot else [])
        for item, ev in cands:
            name, _, addr = item.partition(":")
            prob = _addr_problem(name, addr)
            if prob and (item, prob, ev) not in bad_ifs:
                bad_ifs.append((item, prob, ev))
    if bad_ifs:
        desc = "; ".join(f"{i} is {p}" for i, p, _ in bad_ifs[:3])
        out.append(Cand("LOG020", "wrong_interface", 2 if failing_net else 7, 0 if failing_net else 10**9,
                        [e for _, _, e in bad_ifs[:3]], params={"what": desc}, weak=not failing_net,
                        hosts={e.host for _, _, e in bad_ifs if e.host}))
    dup_hosts = []
    for host, hi in m.hosts.items():
        boot = {i.partition(":")[2].split("%")[0] for i in hi.bootstrap}
        boot = {a for a in boot if a and not _addr_problem("", a)}
        if len(boot) > 1 and len(hi.pids) > 1:
            dup_hosts.append((host, sorted(boot), list(hi.bootstrap.values())[:2]))
    if dup_hosts:
        host, addr_list, evs = dup_hosts[0]
        out.append(Cand("LOG014", "hostname_resolution", 2, 0, evs, params={"host": host, "addrs": ", ".join(addr_list[:4])},
                        hosts={host}))
    subnets: dict[str, Evidence] = {}
    for host, hi in m.hosts.items():
        for item, ev in list(hi.bootstrap.items())[:1]:
            a = item.partition(":")[2].split("%")[0]
            try:
                ip = ipaddress.ip_address(a)
            except ValueError:
                continue
            if ip.version == 4 and not ip.is_loopback and not ip.is_link_local:
                subnets.setdefault(str(ipaddress.ip_network(f"{a}/16", strict=False)), ev)
    if len(subnets) > 1:
        out.append(Cand("LOG024", "wrong_interface", 8, 10**9, list(subnets.values())[:4], weak=True,
                        params={"nets": ", ".join(sorted(subnets))}))
    differ = {var: vals for var, vals in m.env.items() if len(vals) > 1}
    if differ:
        var, vals = sorted(differ.items())[0]
        out.append(Cand("LOG042", "environment_misconfig", 8, 10**9, list(vals.values())[:4], weak=True,
                        params={"var": var, "values": ", ".join(sorted(vals)[:4])}))
    for world, seen in m.members.items():
        missing = _missing(world, seen)
        if missing and len(seen) < world:
            out.append(Cand("LOG062", "launcher_misconfig", 3, 0, list(seen.values())[:4],
                            params={"what": f"only global rank(s) {', '.join(map(str, sorted(seen)))} of {world} ever started"
                                            f" (missing: {', '.join(map(str, missing[:8]))})"}))
    pcie = {k for k in m.topology if k in ("PIX", "PXB", "PHB", "NODE")}
    if pcie and "NV" not in m.topology:
        out.append(Cand("LOG038", "p2p_acs_iommu", 7, 10**9, [m.topology[k] for k in sorted(pcie)][:3], weak=True,
                        params={"what": f"GPUs talk over PCIe ({', '.join(sorted(pcie))}) where ACS/IOMMU can block peer traffic"},
                        detail="The topology shows GPU pairs joined only through PCIe switches or host bridges. A hang or "
                               "corruption between exactly those pairs, gone with NCCL_P2P_DISABLE=1, is the ACS/IOMMU signature.",
                        alts=[("p2p_driver_bug", "consumer GPUs whose driver claims P2P support they lack fail the same way; "
                                                 "`nvidia-smi topo -p2p r` and a driver update tell them apart")]))

    # -- errors no rule explains -------------------------------------------------------------------------
    unexplained = [(ev, seq) for ev, seq, _k in m.unmatched_errors
                   if not any(ev.line == x.line and ev.source == x.source for c in out for x in c.evidence)]
    if unexplained and not any(c.tier <= 6 for c in out):
        evs = [e for e, _ in unexplained[:4]]
        out.append(Cand("LOG080", "other", 9, unexplained[0][1], evs,
                        ranks={e.rank for e in evs if e.rank is not None}, hosts={e.host for e in evs if e.host}))
    return order(merge(out))


def libraries(m: Any) -> set[str]:
    """Which communication libraries wrote the logs (keys of commdoctor.ifvars.LIBRARIES)."""
    seen = {lib for lib in LIBRARIES if m.hit_counts.get(f"lib_{lib}")}
    if m.versions or m.comms:
        seen.add("nccl")
    if any(m.hit_counts.get(k) for k in ("mpi_btl_tcp", "mpi_tcp_peer", "mpi_if_setting", "mpirun_signal", "mpirun_exit")):
        seen.add("openmpi")
    if any(m.hit_counts.get(k) for k in ("ucx_no_devices", "ucx_unreachable")):
        seen.add("ucx")
    if any(m.hit_counts.get(k) for k in ("hydra_connect", "mpich_bad_termination")):
        seen.add("mpich")
    return seen


def _signal_name(num: str | None) -> str:
    try:
        return signal.Signals(int(num or "")).name
    except ValueError:
        return f"signal {num}"


def _mpi_ucx(m: Any, hs: Any) -> list[Cand]:
    """Open MPI, MPICH/Hydra, PMI and UCX failures, in the same causes as NCCL's and gloo's."""
    out: list[Cand] = []
    setting = hs("mpi_if_setting")
    if setting:
        param = next((h.groups.get("param") for h in setting if h.groups.get("param")), None)
        out.append(_cand("LOG021", "wrong_interface", 1, setting,
                         params={"iface": f"in {param}" if param else "in Open MPI's interface include/exclude list"},
                         detail="Open MPI reads btl_tcp_if_include / btl_tcp_if_exclude (MPI traffic) and oob_tcp_if_include "
                                "/ oob_tcp_if_exclude (the runtime's own traffic): names must exist on every node, CIDR "
                                "subnets must match an interface's network exactly, and include and exclude cannot both be set."))
    left_out = [h for h in hs("ucx_no_devices") if h.groups.get("dev")]
    if left_out:
        out.append(_cand("LOG027", "wrong_interface", 1, left_out,
                         params={"what": f"the peer is reached through {left_out[0].groups['dev']}, which UCX_NET_DEVICES leaves out"}))
    nodev = [h for h in hs("ucx_no_devices") if h not in left_out]
    if nodev:
        g = nodev[0].groups
        out.append(_cand("LOG021", "wrong_interface", 1, nodev,
                         params={"iface": f"UCX asked for ({g.get('asked') or '?'})"},
                         detail="UCX_NET_DEVICES / UCX_TLS name devices or transports this host does not have "
                                "(ucx_info -d lists the ones it has)."))
    unreach = hs("ucx_unreachable")
    if unreach:
        what = next((f"no {h.groups['what']} transport to {h.groups.get('peer') or 'a peer'}" for h in unreach if h.groups.get("what")),
                    "Destination is unreachable")
        out.append(_cand("LOG027", "wrong_interface", 2, unreach, params={"what": what}, alts=[
            ("ib_misconfig", "when the hosts share an InfiniBand/RoCE fabric, a device list or GID that differs between "
                             "hosts (UCX_NET_DEVICES=mlx5_0:1 on one, mlx5_1:1 on the other) leaves no common transport"),
            ("firewall_or_port_blocked", "UCX's TCP transport and its connection setup need open ports between the hosts")]))
    daemons = hs("mpi_daemon_connect")
    if daemons:
        lost = [h for h in daemons if "lost communication" in h.ev.text]
        start = [h for h in daemons if h not in lost]
        rt = (daemons[0].groups.get("rt") or "mpirun").upper()
        if start:
            noconn = any("establish a communication connection" in h.ev.text for h in start)
            out.append(_cand("LOG063", "wrong_interface" if noconn else "launcher_misconfig", 2 if noconn else 3, start,
                             params={"what": f"{rt} could not start or reach its daemons on the other nodes"},
                             detail=f"{rt}'s daemons connect back to mpirun over TCP (the oob_tcp interfaces). Besides a "
                                    "missing route or interface, daemons fail to start when the MPI installation is not on "
                                    "the same path on every node or ssh to a node is refused.",
                             alts=[("launcher_misconfig" if noconn else "wrong_interface",
                                    "if `ssh NODE which orted prted` works from the first node, it is the network: pin "
                                    "oob_tcp_if_include to the interface the nodes share; if not, fix PATH/LD_LIBRARY_PATH "
                                    "(or mpirun --prefix)"),
                                   ("firewall_or_port_blocked", "a firewall between the nodes stops the daemons' connection "
                                                                "back to mpirun the same way")]))
        if lost:
            out.append(_cand("LOG063", "peer_process_died", 5, lost, params={"what": f"{rt} lost a daemon on another node"},
                             alts=[("hardware_fault", "a node that dropped off the network (a failing NIC or link) loses its "
                                                      "daemon the same way: check the node's own logs and dmesg")]))
    hydra = hs("hydra_connect")
    if hydra:
        g = hydra[0].groups
        err = (g.get("err") or "").lower()
        cause = "firewall_or_port_blocked" if "refused" in err or "timed out" in err else "wrong_interface"
        out.append(_cand("LOG063", cause, 2, hydra,
                         params={"what": f"Hydra could not connect from {g.get('src')} to {g.get('dst')} ({g.get('err')})"},
                         alts=[("hostname_resolution", f"if {g.get('dst')} resolves to another address on {g.get('src')} "
                                                       "(getent hosts NAME), fix the name; -iface / HYDRA_IFACE pins the interface")]))
    pmi = hs("pmi_error")
    if pmi:
        gp: dict[str, str | None] = next((h.groups for h in pmi if h.groups.get("launcher")), {})
        what = (f"the job was started directly by {gp['launcher']}, and this MPI has no support for its PMI" if gp.get("launcher")
                else "the processes could not initialise the launcher's PMI/PMIx")
        out.append(_cand("LOG064", "launcher_misconfig", 1, pmi, params={"what": what}))
    sig = hs("mpirun_signal")
    if sig:
        g = sig[0].groups
        name = f"signal {g.get('sig')} ({g['name']})" if g.get("name") else _signal_name(g.get("sig"))
        c = _cand("LOG060", "peer_process_died", 5, sig,
                  params={"what": f"rank {g.get('rank')} on {g.get('host')} was killed by {name} ({g.get('tool')} reports it)"})
        if g.get("rank"):
            c.ranks.add(int(g["rank"]))
        if g.get("host"):
            c.hosts.add(g["host"])
        out.append(c)
    bad = hs("mpich_bad_termination")
    if bad:
        code = next((h.groups.get("code") for h in bad if h.groups.get("code")), None)
        said = next((h.groups.get("what") for h in bad if h.groups.get("what")), None)
        # Hydra's EXIT CODE is the signal number, or 128 + the signal as a shell reports it (139: SIGSEGV).
        sig = str(int(code) - 128) if code and int(code) > 128 else code
        what = (f"a rank was killed by {_signal_name(sig)} (Hydra: EXIT CODE {code}" + (f", {said})" if said else ")")
                if sig else "a rank ended badly (Hydra: BAD TERMINATION)")
        out.append(_cand("LOG060", "peer_process_died", 5, bad, params={"what": what},
                         detail="SIGKILL (9) usually comes from the kernel's OOM killer (dmesg: 'Out of memory: Killed "
                                "process'), a scheduler enforcing limits or a manual kill; SIGSEGV (11) is a crash."))
    ex = hs("mpirun_exit")
    if ex:
        gx: dict[str, str | None] = next((h.groups for h in ex if h.groups.get("rank")), {})
        out.append(_cand("LOG060", "peer_process_died", 7, ex, consequence=True,
                         params={"what": f"rank {gx['rank']} exited with an error status" if gx.get("rank")
                                 else "a rank exited with an error status (mpirun reports it)"}))
    nb = sorted(hs("backend_not_built"), key=lambda h: "built in" not in h.ev.text)  # torch's error before its warning
    if nb:
        g = nb[0].groups
        be = (g.get("backend") or g.get("backend2") or "?").lower()
        c = _cand("LOG043", "backend_unavailable", 1, nb, params={"backend": be, "fallback": FALLBACK.get(be, FALLBACK["gloo"])},
                  detail=f"This torch build has no {be.upper()} backend. gloo is built into every torch wheel and carries "
                         "CPU tensors (and CUDA tensors, slowly) everywhere.")
        out.append(c)
    return out


def _watchdog(m: Any, found: list[Cand]) -> list[Cand]:
    """Watchdog timeouts: a straggler, a hang in the library, or the echo of an earlier failure."""
    recs = [w for w in m.watchdog if w.timed_out]
    hits = m.hits.get("watchdog_timeout", [])
    if not recs and not hits:
        return []
    evs = [w.ev for w in recs[:3]] or [h.ev for h in hits[:3]]
    seq = min([w.order for w in recs] + [h.seq for h in hits])
    timed: dict[int, int] = {}
    for w in recs:
        if w.rank is not None:
            timed[w.rank] = min(timed.get(w.rank, w.seq), w.seq)
    world = max([c.nranks for c in m.comms] + [0])
    if not world and m.progress:
        world = max(m.progress) + 1
    progress = m.progress
    who = ""
    late: set[int] = set()
    if progress:
        low = min(v[0] for v in progress.values())
        late = {r for r, v in progress.items() if v[0] == low}
        if len(late) < len(progress):
            who = f"rank {', '.join(map(str, sorted(late)))} enqueued the fewest collectives (last {low}): it is the straggler"
            evs = [progress[r][2] for r in sorted(late)][:2] + evs
    if not who and world and timed:
        missing = _missing(world, timed)
        if missing:
            late = set(missing)
            who = f"rank(s) {', '.join(map(str, missing[:8]))} never logged a timeout: the straggler is among them"
    if not who and len(set(timed.values())) > 1:
        low = min(timed.values())
        late = {r for r, s in timed.items() if s == low}
        who = f"rank {', '.join(map(str, sorted(late)))} is behind (lowest SeqNum {low}): it is the straggler"
    if not who and timed:
        others = "the other ranks" if len(timed) == 1 else "a rank that logged nothing"
        who = (f"rank(s) {', '.join(map(str, sorted(timed)))} timed out waiting; {others} did not arrive"
               if len(timed) < (world or 10**9) else "every rank that logged waits in the same collective")
    if not who:
        who = "which rank was late is not in this excerpt (the timeout's own message names the waiting rank only)"
    op = next((f"{w.op} SeqNum={w.seq}" for w in recs), "a collective")
    tmo = next((w.timeout_ms for w in recs if w.timeout_ms), None)
    params = {"who": who, "op": op, "timeout": f"{tmo / 1000:g} s" if tmo else "the timeout"}
    busy = m.hits.get("busy_hint", [])
    graph = m.hits.get("cudagraph_hint", [])
    maxseq = max([w.seq for w in recs] + [0])
    ranks = set(timed) | late
    by_seq: dict[tuple[str | None, int], set[tuple[str, int | None]]] = {}
    for w in m.watchdog:
        by_seq.setdefault((w.pg, w.seq), set()).add((w.op, w.numel_in))
    split = [(k, v) for k, v in by_seq.items() if len(v) > 1]
    strong_root = [c for c in found if c.tier <= 5 and not c.consequence]
    if split and not strong_root:
        (pg, sq), calls = split[0]
        evs2 = [w.ev for w in m.watchdog if w.seq == sq][:4]
        return [Cand("LOG050", "collective_mismatch", 2, min(w.order for w in m.watchdog if w.seq == sq), evs2, ranks=ranks,
                     detail=f"At SeqNum {sq} the ranks ran different operations: "
                            + "; ".join(f"{op} of {n if n is not None else '?'} elements" for op, n in sorted(calls, key=str)) + ".")]
    if strong_root:
        # The ranks that waited; the one that failed first is named by the finding this follows from.
        return [Cand("LOG051", "collective_timeout_straggler", 6, seq, evs, params=params, ranks=set(timed) or ranks,
                     consequence=True)]
    if (maxseq >= 10000 or graph) and not busy:
        return [Cand("LOG053", "nccl_internal_bug", 5, seq, evs + [h.ev for h in graph[:1]], ranks=ranks,
                     params={"what": f"a collective hung after {maxseq} had completed ({op})"},
                     detail=f"{who}. Hanging after tens of thousands of successful collectives, with no rank reporting an "
                            "error, points at a deadlock inside the library (CUDA graphs mixing captured and uncaptured NCCL "
                            "work are a known cause) rather than a slow rank.",
                     alts=[("collective_timeout_straggler", "if one rank was busy elsewhere (evaluation, checkpointing) its "
                                                            "stack shows it outside any collective: take stacks while it hangs"),
                           ("hardware_fault", "a stuck GPU or link also hangs collectives: look for Xid errors in dmesg")])]
    c = Cand("LOG051", "collective_timeout_straggler", 5, seq, evs + [h.ev for h in busy[:1]], params=params, ranks=ranks,
             detail=(f"While the others waited, the logs show a rank busy elsewhere: '{busy[0].ev.text[:120]}'." if busy else ""),
             alts=[("nccl_internal_bug", "if every rank is inside the same collective (same SeqNum everywhere, stacks in "
                                         "NCCL), nobody is late: it is a hang in the library or the network"),
                   ("collective_mismatch", "a rank that skipped this collective or called another one also never "
                                           "arrives: compare the OpType/SeqNum each rank logged (flight recorder)")])
    return [c]


def merge(cands: list[Cand]) -> list[Cand]:
    """One candidate per (code, cause): evidence, ranks and hosts pooled, the earliest and strongest kept."""
    out: dict[tuple[str, str], Cand] = {}
    for c in cands:
        k = (c.code, c.cause)
        old = out.get(k)
        if old is None:
            out[k] = c
            continue
        old.tier = min(old.tier, c.tier)
        old.seq = min(old.seq, c.seq)
        for e in c.evidence:
            if len(old.evidence) < 6 and e not in old.evidence:
                old.evidence.append(e)
        old.ranks |= c.ranks
        old.hosts |= c.hosts
        old.alts.extend(a for a in c.alts if a not in old.alts)
        old.consequence = old.consequence and c.consequence
        old.weak = old.weak and c.weak
    return list(out.values())


def order(cands: list[Cand]) -> list[Cand]:
    """Causal order: specific before generic, then earliest first; mark what follows from the first."""
    roots = sorted((c for c in cands if not c.consequence), key=lambda c: (c.weak, c.tier, c.seq))
    cons = sorted((c for c in cands if c.consequence), key=lambda c: (c.tier, c.seq))
    if not roots and cons:
        first = cons.pop(0)
        first.consequence = False
        roots = [first]
    if not roots:
        return []
    primary = roots[0]
    ordered = [primary]
    for c in roots[1:]:
        if (c.tier >= 5 and primary.tier < 5) or (c.weak and not primary.weak):
            c.consequence = c.tier >= 5
        ordered.append(c)
    ordered.extend(cons)
    return ordered


# -- the checks ---------------------------------------------------------------------------------------


def _log_model(run: CheckRun) -> Any:
    try:
        return run.fact("log_model")
    except KeyError:
        raise SkipCheck("no log files were given (commdoctor logs FILE|DIR|-)") from None


class LogInputsCheck(Check):
    """What was read: files, lines, and what had to be skipped.

    What it checks:
        Reads every input once (plain, gzip, bzip2 or xz; a directory is read
        recursively, '-' is stdin), finds the lines worth parsing with a
        multi-keyword search, and counts what it could not use: binary junk,
        invalid UTF-8, over-long lines cut at 16 KiB, archives that end early.
    Why it matters:
        A diagnosis is only as good as what was read: a truncated archive or a
        log without NCCL_DEBUG=INFO output hides the lines that name a cause.
    Known limits:
        Lines are only decoded when they contain a known keyword, so counts of
        junk cover those lines (NUL bytes are counted everywhere).
    """

    name = "logs.inputs"
    stage = Stage.LOGS
    title = "Log files read"
    modes = frozenset({"logs"})
    timeout_s = 3600.0
    rules = (
        Rule("LOG001", "log-input-unreadable", W, "could not read all of {path}: {error}",
             "Check that the file is complete (a copy cut short, a truncated .gz) and readable, then run again"),
        Rule("LOG002", "log-nothing-recognised", I, "no NCCL, torch or launcher output found in {n} input(s)",
             "Capture the job's output with NCCL_DEBUG=INFO (and TORCH_DISTRIBUTED_DEBUG=DETAIL) so failures leave lines to read",
             env=NCCL_DEBUG_ENV),
        Rule("LOG003", "log-junk-skipped", I, "{n} line(s) could not be read as text and were skipped or repaired",
             "Nothing to do; binary junk, bad encodings and over-long lines are skipped and counted"),
    )

    def deadline(self, options: Any) -> float:
        return float(options.extra.get("deadline_s", self.timeout_s))

    def run(self, run: CheckRun) -> Iterator[Finding]:
        m = _log_model(run)
        total = sum(s.bytes for s in m.inputs)
        run.summary(f"{len(m.inputs)} input(s), {total / 1e6:.1f} MB, {m.lines_seen} lines; "
                    f"{sum(s.candidates for s in m.inputs)} parsed (search: {m.engine})")
        run.data["inputs"] = [s.to_dict() for s in m.inputs]
        run.data["engine"] = m.engine
        for s in m.inputs:
            run.detail(f"{s.path}: {s.bytes} bytes, {s.lines} lines, {s.candidates} parsed"
                       + (f", {s.compression}" if s.compression else ""))
            if s.error:
                yield self.finding("LOG001", path=s.path, error=s.error,
                                   evidence=[Evidence(s.path, s.error)])
        junk = sum(s.skipped_binary + s.bad_encoding + s.overlong for s in m.inputs)
        if junk:
            yield self.finding("LOG003", n=junk, evidence=[Evidence(s.path, f"{s.skipped_binary} binary, {s.bad_encoding} "
                                                                             f"mis-encoded, {s.overlong} over-long lines; {s.nul_bytes} NUL bytes")
                                                           for s in m.inputs if s.skipped_binary + s.bad_encoding + s.overlong][:5])
        if not any(s.candidates for s in m.inputs) and not m.transports:
            yield self.finding("LOG002", n=len(m.inputs))


class LogDiagnosisCheck(Check):
    """Diagnose the failure in saved logs: the root cause, the rank and host where it started, and the fix.

    What it checks:
        Every line that matches a known failure signature of NCCL (2.0 to
        current), torch/c10d, gloo, the elastic agent, Open MPI or UCX, plus
        the model of the run built from NCCL_DEBUG=INFO output (versions,
        interfaces, transports, communicators, environment overrides, watchdog
        records). Findings come in causal order: the most specific failure
        first (by kind, then by time), other independent failures next, then
        other known causes of the same signature with what tells them apart,
        and last the consequences ("Connection closed by remote peer", broken
        pipes, watchdog timeouts on the ranks that waited), each naming the
        finding it follows from. In a watchdog timeout, the rank with the
        lowest SeqNum (or fewest enqueued collectives), or the rank that
        never logged one, is named as the straggler. The result's data holds
        a per-rank summary (rank, host, GPU, busId, interface, transports,
        NCCL version, last state, first error).
    Why it matters:
        In a job of many ranks, most of the errors are echoes: the rank that
        ran out of memory logs one line, while every other rank logs closed
        connections and timeouts. Reading them in causal order is what turns
        gigabytes of output into one fix.
    Known limits:
        Order across files without timestamps is the order the files were
        given (directories are read sorted). Signatures shared by several
        causes are reported with every known cause, the likeliest first; the
        logs alone cannot always decide (a closed connection from a killed
        peer and from a failing link look the same).
    """

    name = "logs.diagnose"
    stage = Stage.LOGS
    title = "Diagnosis from the logs"
    modes = frozenset({"logs"})
    requires = ()
    timeout_s = 3600.0
    rules = (
        Rule("LOG010", "port-in-use", E, "port {port} is already in use on the rendezvous host",
             "Give each concurrent job its own port (--master-port / --rdzv-endpoint HOST:0 picks a free one), or stop the stale job holding it",
             cause="port_conflict", steps=("ss -ltnp | grep :{port} shows the process holding it",)),
        Rule("LOG011", "rendezvous-unreachable", E, "a rank could not reach {endpoint} ({how})",
             "Check MASTER_ADDR/--rdzv-endpoint from the failing node: it must name the rendezvous host's routable address, with the port open and the master already started",
             cause="rendezvous_unreachable", steps=("nc -zv MASTER_ADDR MASTER_PORT from a worker node",
                                                    "commdoctor run on each node checks the rendezvous stage")),
        Rule("LOG012", "ranks-never-joined", E, "the rendezvous waited for ranks that never arrived ({joined}/{world} joined)",
             "Find out why the missing ranks did not start or connect: check the launcher's task count and their own logs",
             cause="rendezvous_unreachable"),
        Rule("LOG013", "address-is-loopback", E, "a rank advertised {addr} to its peers, which they cannot reach",
             "Make the host name resolve to the routable address (/etc/hosts maps it to 127.0.1.1 on Debian/Ubuntu), or name the interface explicitly",
             cause="hostname_resolution", env={"GLOO_SOCKET_IFNAME": "<iface>", "NCCL_SOCKET_IFNAME": "<iface>"},
             steps=("getent hosts $(hostname) should print the address peers use",)),
        Rule("LOG014", "duplicate-hostnames", E, "host name {host} is used by machines with different addresses ({addrs})",
             "Give every machine (and container) a unique host name: NCCL groups ranks by host name and treats same-named machines as one node",
             cause="hostname_resolution"),
        Rule("LOG015", "name-not-resolved", E, "{what} could not be resolved",
             "Use a name that resolves on every node (or the IP address), and start workers only once it exists",
             cause="hostname_resolution", steps=("getent hosts NAME on the failing node",)),
        Rule("LOG020", "unusable-interface-selected", E, "NCCL/gloo selected an interface peers cannot use: {what}",
             "Name the routable interface explicitly on every node so loopback, link-local and bridge devices are never used",
             cause="wrong_interface", env=IFNAME_ENV),
        Rule("LOG021", "interface-not-found", E, "the interface {iface} named for the job does not exist or has no address",
             "Set GLOO_SOCKET_IFNAME / NCCL_SOCKET_IFNAME to an interface that exists on every node (ip -br addr)",
             cause="wrong_interface", env=IFNAME_ENV),
        Rule("LOG022", "peer-unreachable", E, "connections between ranks were {how}",
             "Check the address each rank advertised (NCCL_DEBUG=INFO 'Bootstrap : Using' lines) and pin the routable interface",
             cause="wrong_interface", env=IFNAME_ENV),
        Rule("LOG023", "mpi-interface", E, "Open MPI's TCP transport connected over an interface the peers cannot use",
             "Restrict Open MPI to the routable interface: mpirun --mca btl_tcp_if_include <iface> --mca oob_tcp_if_include <iface>",
             cause="wrong_interface", env={"OMPI_MCA_btl_tcp_if_include": "<iface>", "NCCL_SOCKET_IFNAME": "<iface>"}),
        Rule("LOG026", "mpi-peers-unreachable", E, "Open MPI found no transport that reaches every peer",
             "Let Open MPI use a transport the hosts share: keep 'self' in the btl list and restrict tcp to the shared network "
             "(btl_tcp_if_include), or use UCX (--mca pml ucx)",
             cause="wrong_interface", env={"OMPI_MCA_btl": "self,tcp (plus vader/sm on one host)", "OMPI_MCA_btl_tcp_if_include": "<iface>"}),
        Rule("LOG027", "ucx-unreachable", E, "UCX found no transport between two processes: {what}",
             "Name devices every host has and that reach each other (UCX_NET_DEVICES, UCX_TLS); `ucx_info -d` lists them per host",
             cause="wrong_interface", env={"UCX_NET_DEVICES": "<iface or mlx5_N:port>", "UCX_TLS": "<e.g. rc,ud,sm,self or tcp,sm,self>"}),
        Rule("LOG024", "subnets-differ", W, "hosts bootstrap over addresses in different networks ({nets})",
             "Check that every host uses the interface of the shared network (NCCL_SOCKET_IFNAME) and that routes exist between them",
             cause="wrong_interface"),
        Rule("LOG025", "connection-timed-out", E, "connections to a peer timed out",
             "Open the ports the job uses between the nodes (store port, NCCL's ephemeral ports) or pin a routable interface",
             cause="firewall_or_port_blocked"),
        Rule("LOG030", "shm-too-small", E, "shared memory (/dev/shm) is too small, full or not writable",
             "Give the container a larger /dev/shm (docker --shm-size=8g or --ipc=host; a memory-backed emptyDir at /dev/shm in Kubernetes) and remove stale nccl-* files",
             cause="shm_too_small", steps=("df -h /dev/shm inside the container",), env={"NCCL_SHM_DISABLE": "1 (slower fallback)"}),
        Rule("LOG031", "cuda-oom", E, "the GPU ran out of memory while NCCL allocated its buffers",
             "Create the process group and communicators before large allocations, or lower the memory the model takes (sharding, smaller batch)",
             cause="cuda_oom", env={"NCCL_BUFFSIZE": "1048576 (smaller buffers)"}),
        Rule("LOG032", "driver-too-old", E, "the NVIDIA driver is older than the CUDA runtime NCCL/torch were built with",
             "Upgrade the driver to one that supports this CUDA version, or install the torch/NCCL build for the installed driver",
             cause="driver_cuda_mismatch", steps=("nvidia-smi shows the driver and the highest CUDA it supports",)),
        Rule("LOG033", "fabric-not-ready", E, "the NVSwitch fabric is not ready (nvidia-fabricmanager)",
             "Start nvidia-fabricmanager (matching the driver version) and reset the GPUs after any fabric manager restart, or reboot the node",
             cause="fabric_manager_nvls", steps=("systemctl status nvidia-fabricmanager", "nvidia-smi -q | grep -A2 Fabric"),
             env={"NCCL_NVLS_ENABLE": "0 (only avoids the NVLS path)"}),
        Rule("LOG034", "duplicate-gpu", E, "two ranks share one GPU: {what}",
             "Give every rank its own GPU: torch.cuda.set_device(local_rank) before init_process_group, and check CUDA_VISIBLE_DEVICES per rank",
             cause="duplicate_gpu"),
        Rule("LOG035", "memlock-too-low", E, "the locked-memory limit is too low for RDMA",
             "Raise the memlock limit for the job: ulimit -l unlimited (limits.conf, the scheduler's propagated limits, docker --ulimit memlock=-1)",
             cause="rlimit_memlock"),
        Rule("LOG036", "ib-misconfigured", E, "an RDMA connection could not be set up (GID index, HCA or routing)",
             "Select the GID index that maps to the routable address, the same on every node, and the right HCAs",
             cause="ib_misconfig", env={"NCCL_IB_GID_INDEX": "<index of the routable RoCE v2 GID>", "NCCL_IB_HCA": "<hca list>"},
             steps=("show_gids (or ibv_devinfo -v) lists each GID and its address",)),
        Rule("LOG037", "hardware-fault", E, "hardware fault: {what}",
             "Find the node and port raising the errors and repair or drain it (cables, transceivers, GPUs); no setting fixes failing hardware",
             cause="hardware_fault", steps=("ibstat / ibqueryerrors for links", "dmesg | grep -i xid for GPUs")),
        Rule("LOG038", "p2p-blocked", E, "peer-to-peer traffic is blocked or corrupted: {what}",
             "Disable ACS on the PCIe bridges between GPUs and NICs (BIOS, or setpci at boot) and IOMMU redirection (iommu=pt / BIOS VT-d)",
             cause="p2p_acs_iommu", env={"NCCL_P2P_DISABLE": "1 (confirms it; slower)", "NCCL_NET_GDR_LEVEL": "LOC"},
             steps=("lspci -vvv | grep ACSCtl: SrcValid+ means ACS is on",)),
        Rule("LOG039", "p2p-unsupported", E, "the driver refuses or mishandles GPU peer-to-peer access",
             "Update the GPU driver, or disable P2P for this system",
             cause="p2p_driver_bug", env={"NCCL_P2P_DISABLE": "1"}),
        Rule("LOG040", "nccl-versions-differ", E, "NCCL versions disagree: {what}",
             "Install the same NCCL on every node (one torch wheel / nvidia-nccl-cu* version, no stray libnccl on LD_LIBRARY_PATH)",
             cause="version_mismatch", steps=("python -c 'import torch; print(torch.cuda.nccl.version())' on every node",)),
        Rule("LOG041", "torch-versions-differ", E, "ranks run different torch versions ({versions})",
             "Run the same torch build on every node", cause="version_mismatch"),
        Rule("LOG042", "env-overrides-differ", W, "{var} is set differently across ranks ({values})",
             "Set NCCL_* variables the same way on every node (one launcher environment)", cause="environment_misconfig"),
        Rule("LOG043", "backend-not-built", E, "the job asked for {backend}, which this torch build does not have",
             "{fallback}", cause="backend_unavailable",
             steps=("python -c 'import torch.distributed as d; print(d.is_nccl_available(), d.is_mpi_available(), "
                    "d.is_ucc_available())' shows what this build has", "commdoctor run --job-backend BACKEND advises on this host")),
        Rule("LOG050", "collective-mismatch", E, "ranks called different collectives, or the same one with different sizes",
             "Make every rank issue the same collectives in the same order with the same shapes (no rank-dependent control flow around them)",
             cause="collective_mismatch", env={"TORCH_DISTRIBUTED_DEBUG": "DETAIL"}),
        Rule("LOG051", "collective-timeout-straggler", E, "{op} timed out after {timeout}: {who}",
             "Find what the late rank was doing (rank-0-only evaluation, data preparation, checkpointing) and run it on every rank, or before the process group starts; raise the timeout only for known-slow phases",
             cause="collective_timeout_straggler", steps=("commdoctor hang takes the stacks of every rank while it waits",)),
        Rule("LOG052", "waited-for-unique-id", E, "ranks timed out waiting for rank {late} to publish NCCL's unique id",
             "Rank {late} was busy (preprocessing, tokenizing) when the first collective ran: do that work before the process group starts, or raise the timeout",
             cause="collective_timeout_straggler"),
        Rule("LOG053", "collective-hang", E, "collectives hung: {what}",
             "Run without CUDA graphs (e.g. vLLM --enforce-eager) to confirm, then upgrade NCCL; take stacks of every rank while it hangs",
             cause="nccl_internal_bug", env={"NCCL_GRAPH_MIXING_SUPPORT": "0"}),
        Rule("LOG055", "store-wait-timeout", E, "a rank waited in the store for a key another rank never wrote ({what})",
             "Find the rank that should have written it: a rank busy elsewhere (data preparation, evaluation on rank 0) "
             "or one that died or never started; move slow work before the process group starts or raise the timeout",
             cause="collective_timeout_straggler", steps=("commdoctor hang takes the stacks of every rank while it waits",)),
        Rule("LOG054", "recv-timeout", E, "a gloo send/recv timed out without naming the peer",
             "Find which rank did not take part: take stacks (commdoctor hang) or rerun with TORCH_DISTRIBUTED_DEBUG=DETAIL",
             cause="collective_timeout_straggler", env={"TORCH_DISTRIBUTED_DEBUG": "DETAIL"}),
        Rule("LOG060", "process-died", E, "{what}",
             "Find why that process died (OOM killer in dmesg, a segfault, preemption); the other ranks' errors are the echo",
             cause="peer_process_died"),
        Rule("LOG061", "connection-lost", E, "connections to peers were closed or reset",
             "Read the first error of the peer named in the message: a dead peer explains this; if every peer is healthy, check the network between the hosts",
             cause="peer_process_died"),
        Rule("LOG062", "ranks-missing", E, "the launcher started the wrong set of ranks: {what}",
             "Make the launcher start one task per rank (e.g. SLURM --ntasks-per-node = GPUs per node) matching the world size the program expects",
             cause="launcher_misconfig"),
        Rule("LOG063", "mpi-runtime-unreachable", E, "the MPI launcher's runtime failed between nodes: {what}",
             "Check that every node runs the same MPI install on the same path and that the nodes reach each other on the "
             "interface the runtime uses (pin it: oob_tcp_if_include for Open MPI, -iface / HYDRA_IFACE for Hydra)",
             cause="launcher_misconfig", env={"OMPI_MCA_oob_tcp_if_include": "<iface>", "HYDRA_IFACE": "<iface>"},
             steps=("ssh NODE 'which mpirun; echo $LD_LIBRARY_PATH' from the first node",)),
        Rule("LOG064", "pmi-mismatch", E, "the MPI processes could not use the launcher's PMI: {what}",
             "Launch with the PMI the MPI library was built for (srun --mpi=pmix; `srun --mpi=list` shows the choices), or "
             "start the job with that MPI's own mpirun/mpiexec",
             cause="launcher_misconfig"),
        Rule("LOG070", "nccl-internal-error", E, "NCCL failed internally: {what}",
             "Try another NCCL release (newer, or the previous one that worked) after ruling out mixed versions",
             cause="nccl_internal_bug"),
        Rule("LOG071", "topology-rejected", E, "NCCL rejected the topology description",
             "Stop injecting NCCL_TOPO_FILE (or use one that describes this machine), or move to an NCCL release that accepts it",
             cause="nccl_internal_bug"),
        Rule("LOG080", "unexplained-error", E, "an error no rule explains",
             "Read the evidence lines; rerun with NCCL_DEBUG=INFO and TORCH_DISTRIBUTED_DEBUG=DETAIL for more context",
             cause="other", env=NCCL_DEBUG_ENV),
        Rule("LOG081", "cuda-failure", E, "a CUDA call failed inside NCCL",
             "Read the CUDA error in the evidence; check dmesg for Xid errors and nvidia-smi for the GPU's state",
             cause="other"),
        Rule("LOG082", "too-many-open-files", E, "the open-file limit is too low for the job's connections",
             "Raise the open-file limit for the job (ulimit -n 1048576; limits.conf or the scheduler's propagated limits)",
             cause="other"),
        Rule("LOG090", "also-possible", W, "the same signature is also explained by {alt}",
             "{tell}", cause="other"),
    )

    def deadline(self, options: Any) -> float:
        return float(options.extra.get("deadline_s", self.timeout_s))

    def run(self, run: CheckRun) -> Iterator[Finding]:
        m = _log_model(run)
        cands = diagnose(m)
        libs = libraries(m)
        run.data["libraries"] = sorted(libs)
        summary = self._summary(run, m)
        run.summary(summary + ("" if cands else "; no failure found"))
        if not cands:
            return
        primary = cands[0]
        first_rank = sorted(primary.ranks)[0] if primary.ranks else None
        first_host = sorted(primary.hosts)[0] if primary.hosts else None
        where = "".join([f" on rank {first_rank}" if first_rank is not None else "", f" ({first_host})" if first_host else ""])
        at = primary.evidence[0] if primary.evidence else None
        run.data["verdict"] = {"code": primary.code, "cause": primary.cause, "rank": first_rank, "host": first_host,
                               "at": f"{at.source}:{at.line}" if at else None}
        roots = [c for c in cands if not c.consequence]
        cons = [c for c in cands if c.consequence]
        for i, c in enumerate(roots):
            sev = W if c.weak else E
            yield self._emit(c, sev, None, libs)
            if i == 0:
                shown = {c.cause}
                for alt, tell in c.alts:
                    if alt in shown or len(shown) > 3:
                        continue
                    shown.add(alt)
                    yield self.finding("LOG090", alt=alt.replace("_", " "), tell=tell, cause=alt, severity=W,
                                       evidence=c.evidence[:1], detail=f"An alternative to {c.code} ({c.cause}).")
        for c in cons:
            c.detail = (c.detail + " " if c.detail else "") + f"Follows from {primary.code} ({primary.cause}){where}."
            yield self._emit(c, E, primary.code, libs)

    def _emit(self, c: Cand, sev: Severity, after: str | None, libs: set[str]) -> Finding:
        rule = self.rule(c.code)
        params = dict(c.params)
        for k in ("what", "how", "who", "op", "timeout", "endpoint", "joined", "world", "addr", "host", "addrs",
                  "iface", "port", "nets", "var", "values", "versions", "late", "a", "b", "bus", "backend", "fallback"):
            params.setdefault(k, "?")
        env, detail = None, c.detail
        if c.cause == "wrong_interface" or c.code in IFACE_CODES:
            # Name the setting of the library that carries this job (all of them when the logs do not say).
            libs = libs | IFACE_CODES.get(c.code, set())
            env = {**{k: v for k, v in rule.env.items() if k not in ALL_IFACE_VARS}, **iface_env(libs)}
            detail = (detail + " " if detail else "") + f"Interface settings by library: {applies_to(libs)}."
        return self.finding(c.code, evidence=c.evidence[:6], ranks=sorted(c.ranks), hosts=sorted(c.hosts),
                            cause=c.cause if c.cause != rule.cause else None, severity=sev if sev != rule.severity else None,
                            detail=detail, consequence_of=after, env=env, **params)

    def _summary(self, run: CheckRun, m: Any) -> str:
        rows = m.summary_rows()
        run.data["ranks"] = rows[:4096]
        run.data["nccl_versions"] = {v: sorted(m.version_hosts.get(v, set())) for v in m.versions}
        run.data["torch_versions"] = sorted(m.torch_versions)
        run.data["hosts"] = {h: {"nccl_versions": sorted(hi.versions), "bootstrap": list(hi.bootstrap)[:8],
                                 "net_socket": list(hi.net_socket)[:8], "net_ib": list(hi.net_ib)[:8], "oob": sorted(hi.oob)[:4],
                                 "network": sorted(hi.network), "env": {k: v[0] for k, v in hi.env.items()},
                                 "driver": hi.driver, "pids": len(hi.pids)}
                             for h, hi in list(m.hosts.items())[:512]}
        run.data["communicators"] = [c.to_dict() for c in m.comms[:512]]
        run.data["transports"] = dict(m.transport_kinds)
        run.data["plugins"] = sorted(m.plugins)
        run.data["env_overrides"] = {k: sorted(v) for k, v in m.env.items()}
        run.data["watchdog"] = [{"rank": w.rank, "pg": w.pg, "seq": w.seq, "op": w.op, "numel_in": w.numel_in,
                                 "numel_out": w.numel_out, "timeout_ms": w.timeout_ms, "ran_ms": w.ran_ms,
                                 "timed_out": w.timed_out, "at": f"{w.ev.source}:{w.ev.line}"} for w in m.watchdog[:256]]
        firsts = sorted((r for r in m.ranks.values() if r.first_error is not None), key=lambda r: r.first_error_seq or 0)
        run.data["first_errors"] = [{"rank": r.rank, "host": r.host, "pid": r.pid, "at": f"{r.first_error.source}:{r.first_error.line}",
                                     "text": r.first_error.text[:300]} for r in firsts[:256] if r.first_error]
        hosts = len({r["host"] for r in rows if r["host"]} | set(m.hosts) - {"?"})
        versions = ", ".join(sorted(m.versions, key=_version_tuple)) or "unknown"
        for r in rows[:64]:
            bits = [f"rank {r['rank']}" if r["rank"] is not None else "rank ?", r["host"] or "",
                    f"pid {r['pid']}" if r["pid"] else "", f"GPU {r['gpu']}" if r["gpu"] is not None else "",
                    f"busId {r['busId']}" if r["busId"] else "", f"via {r['interface']}" if r["interface"] else "",
                    "transports " + ",".join(r["transports"]) if r["transports"] else "",
                    f"NCCL {r['nccl_version']}" if r["nccl_version"] else "", r["last_state"] or "",
                    f"first error at {r['first_error_at']}" if r["first_error_at"] else ""]
            run.detail("; ".join(b for b in bits if b))
        return (f"{len(rows)} process(es) on {hosts} host(s); NCCL {versions}; "
                f"{len(m.comms)} communicator(s); transports: {', '.join(sorted(m.transport_kinds)) or 'none seen'}")


LOG_CHECKS: tuple[type[Check], ...] = (LogInputsCheck, LogDiagnosisCheck)
