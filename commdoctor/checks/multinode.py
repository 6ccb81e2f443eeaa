"""Cross-node checks: what only shows when the nodes of one job are compared (codes MN0xx).

Promise: pure functions of the ``multinode`` fact that node 0 assembles from
what every node published in the job's store (commdoctor.probes.multinode), or, on
the other nodes, of ``multinode_node`` (whether their results reached node 0).
The pipeline runs them after the local checks of ``commdoctor run`` inside a
job (modes "multinode" and "node"); they never touch the network themselves,
and import no torch.
"""

from __future__ import annotations

import ipaddress
import statistics
from collections import defaultdict
from typing import Any, Iterator

from commdoctor.checks.base import Check, Rule
from commdoctor.core.errors import SkipCheck
from commdoctor.core.model import Evidence, Finding, Severity, Stage

E, W, I = Severity.ERROR, Severity.WARNING, Severity.INFO

MODES = frozenset({"multinode"})
SKEW_LIMIT_S = 1.0  # wall clocks further apart than this make logs and timeouts across nodes disagree
SLOW_FACTOR = 5.0
#: Per-node settings that legitimately differ (paths with %h, ranks): the settings check leaves them out.
SETTING_EXEMPT = ("NCCL_DEBUG_FILE", "NCCL_HOSTID", "NCCL_COMM_ID")
STALE_S = 10.0  # commdoctor.probes.multinode.STALE_S: a heartbeat unchanged this long means the node is gone  # a pair or node this many times below the others is an outlier


def _data(run: Any) -> dict[str, Any]:
    d: dict[str, Any] = run.fact("multinode")
    if d.get("store_error"):
        raise SkipCheck(f"the job's store could not be used: {d['store_error']}")
    return d


def _present(d: dict[str, Any]) -> list[dict[str, Any]]:
    return [n for n in d["nodes"] if n.get("info")]


def _host(n: dict[str, Any]) -> str:
    return str(n["host"])


def _groups(values: dict[str, str]) -> str:
    """'a, b: X; c: Y', most common value first."""
    by: dict[str, list[str]] = defaultdict(list)
    for host, v in values.items():
        by[v].append(host)
    order = sorted(by.items(), key=lambda kv: (-len(kv[1]), kv[0]))
    return "; ".join(f"{', '.join(hosts)}: {v}" for v, hosts in order)


def _odd(values: dict[str, str]) -> list[str]:
    """The hosts whose value differs from the most common one (all but the largest group)."""
    by: dict[str, list[str]] = defaultdict(list)
    for host, v in values.items():
        by[v].append(host)
    order = sorted(by.items(), key=lambda kv: (-len(kv[1]), kv[0]))
    return [h for _, hosts in order[1:] for h in hosts]


class GatherCheck(Check):
    """Every node of the job checked in and sent its results to node 0.

    What it checks:
        Node 0 waits (``--join-timeout``) for every node the launcher started,
        and for as many as the job asked for (torchrun ``--nnodes MIN:MAX``
        gives MAX; Slurm's node list names them). Each node writes a stage
        key to the job's store as it goes (joined, mesh done, bandwidth done,
        local checks started, local checks done, reported), so a node that
        stops half way is named with the last stage seen and when. With
        several processes per node, local ranks other than 0 only check in;
        one that never does (within ``--join-timeout`` of local rank 0's
        start, or 5 s after its local checks) is named too. A job on one
        node with several processes (``torchrun --standalone
        --nproc-per-node N``) is checked this way too: local rank 0 checks
        the host and this check says whether every other process checked in.
    Why it matters:
        A node that never joins makes every other rank wait in
        ``init_process_group`` until its timeout, with no word about which
        node is missing (torch says only "1/2 clients joined").
    Known limits:
        With torchrun's c10d rendezvous and a fixed ``--nnodes N``, or its
        static rendezvous, a missing node stops the launch before any worker
        starts: commdoctor never runs, and torchrun's own RendezvousTimeoutError
        (or a silent wait) is all there is. Use ``--nnodes MIN:MAX`` so the
        job starts without the missing node and commdoctor can name it (with
        ``--expect-hosts`` for its host name).
    """

    name = "mn.gather"
    stage = Stage.RENDEZVOUS
    title = "Every node joined and reported"
    modes = MODES
    rules = (
        Rule("MN001", "node-never-joined", E, "{who} never joined: {seen}",
             "Start commdoctor on {who} with the same launcher settings, and check that it can reach "
             "{store} (commdoctor run --select NET,RDZV on that node)", cause="launcher_misconfig",
             steps=("Look at the launcher's output on that node: did torchrun, srun or mpirun start there at all?",
                    "With torchrun use --nnodes MIN:MAX (e.g. 2:3) so that the others start without it")),
        Rule("MN002", "node-stopped", E, "{who} stopped after '{stage}' ({ago}): it never reported",
             "Look at the output of commdoctor on {who}; run commdoctor run there alone to see which check stalls",
             cause="peer_process_died"),
        Rule("MN003", "local-rank-never-checked-in", W, "local rank(s) {rank_list} on {who} never checked in",
             "Look at the launcher's output on {who} for those ranks: a process that never starts or dies at once "
             "leaves the job waiting for it", cause="peer_process_died"),
        Rule("MN004", "job-store-unreachable", E, "this node could not use the job's store at {where}",
             "Make MASTER_ADDR:MASTER_PORT reach node 0 from every node (see the RDZV findings), or set them "
             "for srun / mpirun", cause="rendezvous_unreachable",
             steps=("The error was: {error}",)),
        Rule("MN005", "no-roster", E, "node 0 never published the list of nodes (waited {waited} s)",
             "Check that node 0 runs commdoctor too, with the same launcher and MASTER_ADDR/MASTER_PORT",
             cause="rendezvous_unreachable"),
    )

    def run(self, run: Any) -> Iterator[Finding]:
        d = run.fact("multinode")
        job = d["job"]
        store = f"the job's store at {job.get('master_addr')}:{job.get('master_port')}"
        if d.get("store_error"):
            yield self.finding("MN004", where=f"{job.get('master_addr')}:{job.get('master_port')}",
                               error=d["store_error"])
            return
        waited = (d.get("roster") or {}).get("waited_s")
        ok: list[str] = []
        running: list[str] = []  # the run was interrupted before these reported (their heartbeat still going)
        for n in d["nodes"]:
            i = n["node"]
            who = n["host"] if n["host"] == f"node-{i:02d}" else f"{n['host']} (node {i})"
            if n["status"] == "never joined":
                if n.get("why"):
                    seen = n["why"]
                else:
                    seen = f"nothing was seen of it within {waited if waited is not None else '?'} s"
                yield self.finding("MN001", who=who, seen=seen, store=store, hosts=[n["host"]],
                                   detail=f"node 0 waited {waited} s for it" if waited is not None else "",
                                   evidence=[Evidence("store", f"no key node/{i}/stage/joined")])
            elif n["status"] == "stopped":
                last = n.get("last") or {}
                stage = last.get("stage") or "?"
                ago = f"{last.get('after_s', '?')} s after it started" if last else "no time recorded"
                if n.get("heartbeat_stopped"):
                    ago += f"; its heartbeat stopped for {STALE_S:g} s"
                yield self.finding("MN002", who=who, stage=stage, ago=ago, hosts=[n["host"]],
                                   evidence=[Evidence("store", f"node/{i}/last = {last}")])
            elif n["status"] == "running":
                last = n.get("last") or {}
                running.append(f"{n['host']} (last stage '{last.get('stage') or '?'}', {last.get('after_s', '?')} s "
                               "after its start)")
            else:
                ok.append(n["host"])
        one_node = job.get("expected_nodes", 2) <= 1
        checkins = d.get("checkins") or {}
        for i_text, ranks in (checkins.get("missing") or {}).items():
            n = next((x for x in d["nodes"] if str(x["node"]) == i_text), None)
            if n is None:
                continue
            yield self.finding("MN003", rank_list=", ".join(map(str, ranks)),
                               who=n["host"] if one_node else f"{n['host']} (node {n['node']})",
                               ranks=ranks, hosts=[n["host"]],
                               evidence=[Evidence("store", f"no key checkin/{r}") for r in ranks])
        run.data["nodes"] = {n["host"]: n["status"] for n in d["nodes"]}
        if one_node:
            lws = int(checkins.get("local_world_size") or job.get("local_world_size") or 1)
            came = 1 + sum(len(v) for v in (checkins.get("checked_in") or {}).values())
            run.summary(f"{came} of {lws} processes on {', '.join(ok) or '?'} checked in "
                        f"({job.get('launcher', '?')} job on one node)")
        else:
            run.summary(f"{len(ok)} of {len(d['nodes'])} nodes reported: {', '.join(ok) or 'none'}"
                        + (f"; the run was interrupted before {', '.join(running)} reported" if running else ""))


class OneNodeGatherCheck(GatherCheck):
    """The gather check of a job on one node (several processes): the same check and codes, titled for it.

    Not registered on its own (``mn.gather`` is): ``commdoctor.probes.multinode`` runs it in place of the
    cross-node checks when the job has one node.
    """

    title = "Every process of the job checked in"


class NodeSentCheck(GatherCheck):
    """The gather as a node other than node 0 sees it: whether its results reached node 0.

    Not registered on its own (``mn.gather`` is): ``commdoctor run`` runs it on every node but node 0,
    on the ``multinode_node`` fact, with the gather check's codes (MN004, MN005).
    """

    modes = frozenset({"node"})

    def run(self, run: Any) -> Iterator[Finding]:
        d = run.fact("multinode_node")
        if d.get("store_error"):
            yield self.finding("MN004", where=d["where"], error=d["store_error"], hosts=[d["host"]])
            run.summary("this node's results could not reach node 0")
        elif not d.get("roster"):
            yield self.finding("MN005", hosts=[d["host"]], waited=f"{d['waited']:g}")
        elif not d.get("posted"):
            yield self.finding("MN004", where=d["where"], error=d.get("post_error") or "?", hosts=[d["host"]])
            run.summary("this node's results could not reach node 0")
        else:
            run.summary(f"results sent to node 0 through the store at {d['where']}")


class VersionsCheck(Check):
    """torch, NCCL, CUDA and the GPU driver are the same on every node.

    What it checks:
        Each node reports the versions its own interpreter loads (torch,
        torch's CUDA build, the NCCL torch loads, and the driver nvidia-smi
        reports); node 0 compares them and names the nodes that differ from
        the most common value.
    Why it matters:
        NCCL's wire protocol changes between releases; nodes that load
        different NCCL (or torch) versions fail at init, hang, or corrupt
        results without saying why.
    Known limits:
        Compares what the interpreter running commdoctor loads; a training
        script run with another interpreter or LD_LIBRARY_PATH may load other
        libraries. Nodes without GPUs report no NCCL and no driver, and are
        left out of those comparisons.
    """

    name = "mn.versions"
    stage = Stage.ENVIRONMENT
    title = "Versions agree across nodes"
    modes = MODES
    rules = (
        Rule("MN010", "versions-differ", E, "{what} differs across nodes: {groups}",
             "Install the same {what} on every node ({odd} differ from the rest)", cause="version_mismatch",
             steps=("Check with: python -c 'import torch; print(torch.__version__, torch.version.cuda, "
                    "torch.cuda.nccl.version())' on each node",)),
    )

    def run(self, run: Any) -> Iterator[Finding]:
        nodes = _present(_data(run))
        seen = []
        for key, what in (("torch", "torch"), ("nccl", "NCCL"), ("cuda", "torch's CUDA build"), ("driver", "the NVIDIA driver")):
            vals = {_host(n): str((n["info"].get("versions") or {}).get(key)) for n in nodes
                    if (n["info"].get("versions") or {}).get(key)}
            if not vals:
                continue
            seen.append(f"{what} {_groups(vals)}" if len(set(vals.values())) > 1 else f"{what} {next(iter(vals.values()))}")
            if len(set(vals.values())) > 1:
                odd = _odd(vals)
                yield self.finding("MN010", what=what, groups=_groups(vals), odd=", ".join(odd), hosts=odd,
                                   evidence=[Evidence(f"node:{h}", f"{key}={v}", host=h) for h, v in vals.items()])
        run.summary("; ".join(seen) if seen else "no versions reported")


class SettingsCheck(Check):
    """NCCL_* and GLOO_* settings are the same on every node.

    What it checks:
        Every NCCL_*, GLOO_*, TORCH_NCCL_* and TORCH_GLOO_* variable set on
        any node, node by node ("unset" counts as a value). NCCL_DEBUG_FILE,
        NCCL_HOSTID and NCCL_COMM_ID are left out: they differ per node on
        purpose.
    Why it matters:
        Settings that change NCCL's protocol, algorithm or transport
        (NCCL_PROTO, NCCL_ALGO, NCCL_IB_DISABLE, NCCL_P2P_LEVEL, ...) must
        agree, or nodes build incompatible communicators and hang. An
        interface setting that differs is often the one node where the job
        script was edited by hand.
    Known limits:
        Interface names may differ legitimately between unlike nodes
        (eth0 and ens5); what counts for those is where the interfaces lead,
        which mn.interfaces checks. Only commdoctor's own environment is
        seen: set the variables the same way for commdoctor as for the job.
    """

    name = "mn.settings"
    stage = Stage.ENVIRONMENT
    title = "NCCL_* / GLOO_* settings agree across nodes"
    modes = MODES
    rules = (
        Rule("MN020", "settings-differ", W, "{var} differs across nodes: {groups}",
             "Set {var} the same way on every node (the odd ones: {odd}), in the job script rather than in a "
             "node's shell profile", cause="environment_misconfig"),
    )

    def run(self, run: Any) -> Iterator[Finding]:
        nodes = _present(_data(run))
        names = sorted({k for n in nodes for k in (n["info"].get("settings") or {})} - set(SETTING_EXEMPT))
        differ = 0
        for var in names:
            vals = {_host(n): (n["info"].get("settings") or {}).get(var, "unset") for n in nodes}
            if len(set(vals.values())) <= 1:
                continue
            differ += 1
            odd = _odd(vals)
            cause = "wrong_interface" if var.endswith("SOCKET_IFNAME") else None
            yield self.finding("MN020", var=var, groups=_groups(vals), odd=", ".join(odd), hosts=odd, cause=cause,
                               evidence=[Evidence(f"node:{h}", f"{var}={v}" if v != "unset" else f"{var} unset", host=h)
                                         for h, v in vals.items()])
        run.summary(f"{len(names)} set, {differ} differ" if names else "no NCCL_*/GLOO_* settings on any node")


def _net(address: str, prefixlen: int | None) -> ipaddress.IPv4Network | ipaddress.IPv6Network | None:
    try:
        return ipaddress.ip_interface(f"{address}/{prefixlen}").network if prefixlen is not None else None
    except ValueError:
        return None


class InterfacesCheck(Check):
    """The interface each node will use exists there, the nodes' addresses share a subnet, and MTUs agree.

    What it checks:
        On every node, the interface and address NCCL and gloo will use
        (NCCL_SOCKET_IFNAME / GLOO_SOCKET_IFNAME, else each backend's own
        rules, as commdoctor.core.netselect reproduces them); then, across nodes:
        that each backend found an address, that each node's address lies in
        the subnet most nodes share, that the MTU of the chosen interfaces
        is the same, and that a full-size packet (the sender's MTU, Don't
        Fragment set) reaches each other node while a small one does. NCCL's choice is compared when a node has a
        GPU or sets NCCL_SOCKET_IFNAME; gloo's always.
    Why it matters:
        One node on loopback, a docker bridge or another network makes its
        peers connect to an address that leads nowhere; an MTU that differs
        drops the large frames of the bigger side (an MTU black hole) and
        collectives stall once messages grow.
    Known limits:
        Nodes on different subnets behind a router are legitimate in some
        clusters: a node outside the common subnet is a warning unless its
        address is a loopback or link-local one. The path probe is UDP to the
        gloo address on an ephemeral port: a firewall that drops UDP there
        (small packets too) leaves the path untested, and IPv6 paths are not
        probed.
    """

    name = "mn.interfaces"
    stage = Stage.INTERFACES
    title = "Each node's interface, subnet and MTU agree"
    modes = MODES
    rules = (
        Rule("MN030", "no-interface-on-node", E, "{backend} on {host} has no interface to use: {error}",
             "Set {var} on {host} to an interface that exists there and carries the other nodes' subnet",
             cause="wrong_interface"),
        Rule("MN031", "not-on-common-subnet", E,
             "{backend} on {host} will use {address} ({iface}), outside {subnet} that {others} share",
             "Make {backend} use the interface on {subnet} on {host}: set {var} to it there", cause="wrong_interface"),
        Rule("MN033", "mtu-black-hole", E,
             "full-size packets ({size} bytes, Don't Fragment) from {src} to {dst} are lost while small ones arrive",
             "Make the MTU the same along the path from {src} to {dst} (interfaces, bridges, switches), or lower "
             "{src}'s to the smallest on the path", cause="other",
             steps=("TCP between them works until a segment is full-size; then transfers stall without an error",
                    "Check with: ping -M do -s {payload} {address} on {src}")),
        Rule("MN032", "mtu-differs", E, "MTU of the interfaces {backend} uses differs across nodes: {groups}",
             "Give every node's {backend} interface the same MTU (ip link set dev IFACE mtu N) - {odd} differ",
             cause="other",
             steps=("A larger MTU on one side drops full-size frames to the other when path MTU discovery is "
                    "blocked: collectives stall once messages grow",)),
    )

    def run(self, run: Any) -> Iterator[Finding]:
        nodes = _present(_data(run))
        if len(nodes) < 2:
            raise SkipCheck("fewer than two nodes reported")
        use_nccl = any((n["info"].get("choices") or {}).get("gpu") or "NCCL_SOCKET_IFNAME" in (n["info"].get("settings") or {})
                       for n in nodes)
        summary = []
        for backend, var in (("gloo", "GLOO_SOCKET_IFNAME"), ("nccl", "NCCL_SOCKET_IFNAME")):
            if backend == "nccl" and not use_nccl:
                continue
            label = "NCCL" if backend == "nccl" else "gloo"
            rows = {}
            for n in nodes:
                c = (n["info"].get("choices") or {}).get(backend) or {}
                if c.get("error") or not c.get("address"):
                    yield self.finding("MN030", backend=label, host=_host(n), var=var, hosts=[_host(n)],
                                       error=c.get("error") or "nothing chosen",
                                       evidence=[Evidence(f"node:{_host(n)}", c.get("rule") or "", host=_host(n))])
                    continue
                rows[_host(n)] = c
            summary.append(f"{label}: " + ", ".join(f"{h} {c['interface']} {c['address']}" for h, c in rows.items()))
            # The subnet most nodes share: count, for each node's network, the nodes whose address lies in it.
            best, best_members = None, []  # type: tuple[Any, list[str]]
            for h, c in rows.items():
                net = _net(c["address"], c.get("prefixlen"))
                if net is None or ipaddress.ip_address(c["address"]).is_loopback:
                    continue
                members = [h2 for h2, c2 in rows.items() if ipaddress.ip_address(c2["address"]) in net]
                if len(members) > len(best_members):
                    best, best_members = net, members
            if best is not None and len(best_members) >= 2:
                for h, c in rows.items():
                    if h in best_members:
                        continue
                    ip = ipaddress.ip_address(c["address"])
                    sev = E if (ip.is_loopback or ip.is_link_local) else W
                    yield self.finding("MN031", backend=label, host=h, address=c["address"], iface=c["interface"],
                                       subnet=str(best), others=", ".join(best_members), var=var, hosts=[h], severity=sev,
                                       evidence=[Evidence(f"node:{h}", f"{c.get('rule')}: {c['interface']} {c['address']}",
                                                          host=h)])
            mtus = {h: str(c.get("mtu")) for h, c in rows.items() if c.get("mtu") and not
                    ipaddress.ip_address(c["address"]).is_loopback}
            if len(set(mtus.values())) > 1:
                odd = _odd(mtus)
                yield self.finding("MN032", backend=label, groups=_groups({h: f"mtu {m}" for h, m in mtus.items()}),
                                   odd=", ".join(odd), hosts=odd,
                                   evidence=[Evidence(f"node:{h}", f"{rows[h]['interface']} mtu {m}", host=h)
                                             for h, m in mtus.items()])
            elif mtus:
                summary[-1] += f" (mtu {next(iter(mtus.values()))})"
        # Along each path: a Don't-Fragment datagram of the sender's MTU, echoed by the receiver's listener.
        by_node = {n["node"]: n for n in nodes}
        differ = len({str(((n["info"].get("choices") or {}).get("gloo") or {}).get("mtu")) for n in nodes}) > 1
        tried = 0
        for n in nodes:
            for j_text, p in ((n.get("mesh") or {}).get("paths") or {}).items():
                tried += 1
                dst = by_node.get(int(j_text)) if j_text.isdigit() else None
                if not p.get("black_hole") or dst is None:
                    continue
                big = p.get("big") or {}
                addr = next((q.get("address") for q in (n.get("mesh") or {}).get("probes") or ()
                             if str(q.get("label", "")).startswith(f"{j_text}:")), "?")
                yield self.finding("MN033", src=_host(n), dst=_host(dst), size=p.get("mtu"), address=addr,
                                   payload=big.get("payload"), hosts=[_host(n), _host(dst)],
                                   consequence_of="MN032" if differ else None,
                                   evidence=[Evidence(f"node:{_host(n)}",
                                                      f"udp {addr}: 64 bytes echoed; {big.get('payload')} bytes with DF: "
                                                      f"{big.get('error')}", host=_host(n))])
        if tried:
            summary.append(f"{tried} paths tried with full-size packets")
        run.summary("; ".join(summary))


class ReachCheck(Check):
    """Every node reaches every other node's address on the master port and on an ephemeral port.

    What it checks:
        Each node listens on the master port number (node 0's store already
        does) and on a port from the ephemeral range, publishes its chosen
        address and ports, and then opens a TCP connection to every other
        node's, with a 2 s deadline each (a full mesh, both directions).
    Why it matters:
        The rendezvous uses only the master port, but gloo and NCCL connect
        every pair of ranks on ephemeral ports. A firewall or security group
        that lets only the master port through passes the rendezvous and then
        hangs the first collective ("connectFullMesh failed", or a silent
        timeout).
    Known limits:
        Probes TCP from commdoctor's process; NCCL over InfiniBand/RoCE uses
        other paths. An ephemeral port is one port of the range: a firewall
        that opens only part of the range may pass it.
    """

    name = "mn.reach"
    stage = Stage.RENDEZVOUS
    title = "Full-mesh TCP reachability between nodes"
    modes = MODES
    rules = (
        Rule("MN040", "node-unreachable", E, "{src} cannot reach {dst} at {address}: {outcomes}",
             "Open TCP between the nodes on {address} (firewall, security group, routing), or make the job use an "
             "interface the nodes share", cause="firewall_or_port_blocked"),
        Rule("MN041", "only-master-port-open", E,
             "{dst} accepts the master port {mport} but not ephemeral port {eport} from {srcs}: {outcome}",
             "Open the ephemeral port range on {dst} to the other nodes (a firewall lets only the master port "
             "through): gloo and NCCL connect every pair of ranks on ephemeral ports",
             cause="firewall_or_port_blocked",
             steps=("See the range with: cat /proc/sys/net/ipv4/ip_local_port_range",
                    "e.g. iptables -I INPUT -p tcp -s SUBNET --dport LOW:HIGH -j ACCEPT on {dst}")),
    )

    def run(self, run: Any) -> Iterator[Finding]:
        d = _data(run)
        nodes = {n["node"]: n for n in _present(d)}
        if len(nodes) < 2:
            raise SkipCheck("fewer than two nodes reported")
        # dst -> kind -> list of (src host, result)
        seen: dict[int, dict[str, list[tuple[str, dict[str, Any]]]]] = defaultdict(lambda: defaultdict(list))
        tried = opened = 0
        for i, n in nodes.items():
            for p in (n.get("mesh") or {}).get("probes") or ():
                jt, _, kind = str(p.get("label", "")).partition(":")
                if not jt.isdigit() or int(jt) not in nodes:
                    continue
                seen[int(jt)][kind].append((_host(n), p))
                tried += 1
                opened += p.get("outcome") == "open"
        only_master: list[str] = []
        for j, kinds in sorted(seen.items()):
            dst = _host(nodes[j])
            master = {s: p for s, p in kinds.get("master", ())}
            eph = {s: p for s, p in kinds.get("ephemeral", ())}
            blocked_eph = [s for s, p in eph.items() if p.get("outcome") != "open"]
            m_ok = [s for s in blocked_eph if (master.get(s) or {}).get("outcome") == "open"]
            if m_ok:
                p0 = eph[m_ok[0]]
                only_master.append(dst)
                yield self.finding("MN041", dst=dst, srcs=", ".join(m_ok), mport=master[m_ok[0]]["port"],
                                   eport=p0["port"], outcome=_outcome(p0), hosts=[dst],
                                   evidence=[Evidence(f"node:{s}", f"connect {p['address']}:{master[s]['port']} open; "
                                                      f"{p['address']}:{p['port']} {_outcome(p)}", host=s)
                                             for s, p in eph.items() if s in m_ok])
            for s in blocked_eph:
                if s in m_ok:
                    continue
                mp = master.get(s)
                if mp is not None and mp.get("outcome") == "open":
                    continue
                p = eph[s]
                outs = f"ephemeral port {p['port']}: {_outcome(p)}" + (
                    f", master port {mp['port']}: {_outcome(mp)}" if mp else "")
                loop = _is_loopback(p["address"])
                yield self.finding("MN040", src=s, dst=dst, address=p["address"], outcomes=outs, hosts=[s, dst],
                                   cause="wrong_interface" if loop else None,
                                   detail=f"{p['address']} is a loopback address: {dst} advertises an address only it "
                                          "can reach (see mn.interfaces)" if loop else "",
                                   evidence=[Evidence(f"node:{s}", f"connect {p['address']}:{p['port']} {_outcome(p)}",
                                                      host=s)])
        run.data["probes"] = {"tried": tried, "open": opened}
        run.summary(f"{opened} of {tried} connections between {len(nodes)} nodes opened")


def _is_loopback(address: str) -> bool:
    try:
        return ipaddress.ip_address(address.split("%")[0]).is_loopback
    except ValueError:
        return False


def _outcome(p: dict[str, Any]) -> str:
    o = p.get("outcome") or "?"
    return {"timeout": "no answer (dropped)", "refused": "refused (nothing listens)",
            "rejected": "rejected by a firewall", "unreachable": "unreachable"}.get(o, o) + (
        f" after {p['elapsed_s']} s" if o == "timeout" and p.get("elapsed_s") else "")


class ClockCheck(Check):
    """The nodes' wall clocks agree with node 0's.

    What it checks:
        Each node asks node 0's listener for its wall-clock time five times
        and keeps the sample with the shortest round trip (as NTP does): the
        offset is accurate to half that round trip.
    Why it matters:
        Logs, flight-recorder dumps and timeouts from different nodes can
        only be lined up when their clocks agree; a node whose clock jumps
        also makes certificate and Kerberos checks fail on shared storage.
    Known limits:
        Only the wall clock is compared; torch's own timeouts use the
        monotonic clock and are not affected by skew. The limit is 1 s.
    """

    name = "mn.clock"
    stage = Stage.ENVIRONMENT
    title = "Clocks agree across nodes"
    modes = MODES
    rules = (
        Rule("MN050", "clock-skew", W, "{host}'s clock is {offset} s {direction} node 0's ({ref})",
             "Synchronise the clocks (chrony or systemd-timesyncd against the same servers) on {host}",
             cause="other"),
    )

    def run(self, run: Any) -> Iterator[Finding]:
        d = _data(run)
        nodes = _present(d)
        ref = next((_host(n) for n in nodes if n["node"] == 0), "node 0")
        offs = {}
        for n in nodes:
            c = (n.get("mesh") or {}).get("clock")
            if not c or not c.get("ok"):
                continue
            off = -float(c["offset_s"])  # node 0 minus this node -> this node minus node 0
            offs[_host(n)] = (off, float(c.get("rtt_s") or 0))
            if abs(off) > SKEW_LIMIT_S:
                yield self.finding("MN050", host=_host(n), offset=f"{abs(off):.3f}",
                                   direction="ahead of" if off > 0 else "behind", ref=ref, hosts=[_host(n)],
                                   evidence=[Evidence(f"node:{_host(n)}", f"offset {off:+.6f} s, round trip {c.get('rtt_s')} s",
                                                      host=_host(n))])
        if not offs:
            raise SkipCheck("no node measured its clock against node 0's")
        run.data["offsets_s"] = {h: o for h, (o, _) in offs.items()}
        run.summary("offset from " + ref + ": " + ", ".join(f"{h} {o * 1000:+.1f} ms" for h, (o, _) in offs.items()))


class BandwidthCheck(Check):
    """A gloo bandwidth test between every pair of nodes, naming a slow link or a slow node.

    What it checks:
        The nodes whose ports all answered build a gloo group on the job's
        store (so gloo picks its interface as the job will) and, in rounds of
        disjoint pairs, swap 4 MiB both ways with each partner (best of four).
        A pair more than 5 times slower than the typical fast pair is a slow
        link; a node whose every pair is that slow, while pairs without it
        are fast, is a slow node.
    Why it matters:
        A collective runs at the speed of its slowest link: one degraded
        cable, NIC or node throttles the whole job, and shows only as a job
        that is slower than it should be.
    Known limits:
        TCP through gloo, whatever NCCL would use (InfiniBand, NVLink); with
        two nodes there is one pair and nothing to compare it with. Figures
        on a busy host vary by 2 to 3 times; only larger gaps are reported.
    """

    name = "mn.bandwidth"
    stage = Stage.COLLECTIVES
    title = "Bandwidth between each pair of nodes (gloo)"
    modes = MODES
    rules = (
        Rule("MN060", "slow-pair", W, "the link between {a} and {b} is slow: {gbps} GB/s, {ratio}x below the {ref} GB/s "
             "of the other pairs",
             "Check the path between {a} and {b}: link speed and errors (ethtool -S), traffic shaping (tc qdisc), "
             "a congested switch port", cause="hardware_fault"),
        Rule("MN061", "slow-node", W, "{host} is slow with every partner ({pairs}), {ratio}x below the pairs "
             "without it ({ref} GB/s)",
             "Check {host}'s network: link speed (ethtool), errors, traffic shaping (tc qdisc show), CPU load",
             cause="hardware_fault"),
        Rule("MN062", "pair-test-failed", E, "gloo between {a} and {b} failed: {error}",
             "Fix reachability between {a} and {b} first (mn.reach, mn.interfaces); gloo connects on ephemeral "
             "ports with the interface GLOO_SOCKET_IFNAME names", cause="firewall_or_port_blocked"),
    )

    def run(self, run: Any) -> Iterator[Finding]:
        d = _data(run)
        nodes = {n["node"]: n for n in _present(d)}
        bws: dict[int, dict[str, Any]] = {i: n["bw"] for i, n in nodes.items() if n.get("bw")}
        if len(bws) < 2:
            raise SkipCheck("fewer than two nodes took part in the bandwidth test (see mn.reach)")
        pairs: dict[tuple[int, int], float] = {}
        for i, res in bws.items():
            if res.get("error"):
                for j in res.get("members") or ():
                    if j != i and i < j:
                        yield self.finding("MN062", a=_host(nodes[i]), b=_host(nodes[j]) if j in nodes else f"node {j}",
                                           error=res["error"], hosts=[_host(nodes[i])])
                continue
            for j_text, r in (res.get("pairs") or {}).items():
                j = int(j_text)
                key = (min(i, j), max(i, j))
                if r.get("error"):
                    if i < j:
                        yield self.finding("MN062", a=_host(nodes[i]), b=_host(nodes[j]) if j in nodes else f"node {j}",
                                           error=r["error"], hosts=[_host(nodes[i])])
                    continue
                # Both sides time the same exchange; keep the slower view.
                pairs[key] = min(pairs.get(key, float("inf")), float(r["gbps"]))
        if not pairs:
            return
        name = {i: _host(n) for i, n in nodes.items()}
        run.data["pairs_gbps"] = {f"{name[a]}-{name[b]}": g for (a, b), g in sorted(pairs.items())}
        run.summary(", ".join(f"{name[a]}-{name[b]} {g:.3g} GB/s" for (a, b), g in sorted(pairs.items())))
        if len(pairs) < 3:
            return
        vals = sorted(pairs.values(), reverse=True)
        top = vals[: max(1, (len(vals) + 1) // 2)]
        ref = statistics.median(top)
        slow = {k for k, g in pairs.items() if g * SLOW_FACTOR < ref}
        explained: set[tuple[int, int]] = set()
        for i in sorted(nodes):
            mine = {k: g for k, g in pairs.items() if i in k}
            others = [g for k, g in pairs.items() if i not in k]
            if not mine or not others or not all(k in slow for k in mine):
                continue
            ref_other = statistics.median(others)
            worst = max(mine.values())
            if worst * SLOW_FACTOR >= ref_other:
                continue
            explained |= set(mine)
            yield self.finding("MN061", host=name[i], ratio=f"{ref_other / max(worst, 1e-9):.0f}", ref=f"{ref_other:.3g}",
                               pairs=", ".join(f"{name[b if a == i else a]} {g:.3g} GB/s" for (a, b), g in mine.items()),
                               hosts=[name[i]],
                               evidence=[Evidence("probe:gloo", f"{name[a]}-{name[b]}: {g:.4g} GB/s")
                                         for (a, b), g in sorted(pairs.items())])
        for (a, b) in sorted(slow - explained):
            g = pairs[(a, b)]
            yield self.finding("MN060", a=name[a], b=name[b], gbps=f"{g:.3g}", ratio=f"{ref / max(g, 1e-9):.0f}",
                               ref=f"{ref:.3g}", hosts=[name[a], name[b]],
                               evidence=[Evidence("probe:gloo", f"{name[x]}-{name[y]}: {v:.4g} GB/s")
                                         for (x, y), v in sorted(pairs.items())])


MN_CHECKS: tuple[type[Check], ...] = (GatherCheck, VersionsCheck, SettingsCheck, InterfacesCheck, ReachCheck,
                                      ClockCheck, BandwidthCheck)
