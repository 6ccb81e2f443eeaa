"""Rules for NCCL's own messages: its WARN lines (NCCL 2.0 to 2.28 wording), bootstrap, transports, topology.

Promise: rule rows only (see commdoctor.rules.base), each written from the
format string in NCCL's source (``WARN("...")`` in src/misc/socket.cc,
src/transport/net_ib.cc, src/init.cc, src/bootstrap.cc, src/graph/*). NCCL's
INFO lines are read only by context rows and by the run model: NCCL reports
failures as WARN. Functions below the table hold what one line cannot decide.
"""

from __future__ import annotations

import re
from typing import Any, Sequence

from commdoctor.core.model import Evidence
from commdoctor.parsing.lines import classify
from commdoctor.rules.base import (CONTEXT, E, NCCL_FN, PHASE_LAST, ROOT, W, Cand, Code, ModelRule, cand, completed,
                                   crash_stacks, ctx, frame_fn, frame_lib, group, hits, job_failed, lines_under,
                                   local_ranks_only, own_reading, sig, single_node, trace_files, uses_ib, version_tuple)

#: Settings that are meant to differ between processes or hosts: their values differing says nothing.
PER_PROCESS_VARS = frozenset({"NCCL_HOSTID", "NCCL_DEBUG_FILE", "NCCL_TOPO_DUMP_FILE", "NCCL_GRAPH_DUMP_FILE",
                              "CUDA_VISIBLE_DEVICES", "NCCL_COMM_ID"})


def _ib_reg_mr(m: Any, hs: list[Any], found: list[Cand]) -> list[Cand]:
    """ibv_reg_dmabuf_mr refused with EOPNOTSUPP: the kernel's or IB driver's DMA-BUF support is missing, and this
    NCCL (2.12-2.13 era) used DMA-BUF without falling back to nvidia-peermem, which later releases do
    (NVIDIA/nccl#778). Other refusals are the GPUDirect RDMA path (the row's own reading)."""
    dmabuf = [h for h in hs if "dmabuf" in h.ev.text and "not supported" in h.ev.text]
    rest = [h for h in hs if h not in dmabuf]
    out = []
    if dmabuf:
        out.append(cand("LOG070", "nccl_internal_bug", 3, dmabuf, params={
            "what": "NCCL registered GPU memory through DMA-BUF, which this kernel / IB driver does not support "
                    "(ibv_reg_dmabuf_mr: Operation not supported), and did not fall back"},
            detail="DMA-BUF registration needs a recent kernel and IB driver (MLNX_OFED 5.5+ or the inbox driver of "
                   "kernel 5.12+). NCCL releases that fall back to nvidia-peermem when it is refused avoid this; so "
                   "does NCCL_DMABUF_ENABLE=0 with nvidia-peermem loaded.",
            alts=[("ib_misconfig", "an IB driver too old for DMA-BUF is the node's: updating MLNX_OFED also fixes it")]))
    if rest:
        out.append(own_reading(rest))
    return out

#: What EFA says of a peer it had a connection with and lost (efa_errno.h, efa_strerror.c): the peer process went
#: away, or its host failed -- unlike "Unreachable remote - never received a response", a peer never reached.
_EFA_PEER_GONE = re.compile(r"Unresponsive receiver|becomes unresponsive|peer process no longer being present")


def _ofi_peer_unreachable(m: Any, hs: list[Any], found: list[Cand]) -> list[Cand]:
    gone = [h for h in hs if _EFA_PEER_GONE.search(h.ev.text)]
    out = []
    if gone:
        out.append(cand("LOG061", "peer_process_died", 5, gone, consequence=bool(found),
                        detail="EFA had a connection to the peer, or reached its device, and the peer stopped answering: "
                               "its process ended (read its own log: an OOM kill, a crash) or its host failed.",
                        alts=[("hardware_fault", "with the peer process alive, its host's EFA device or link failed: "
                                                 "check the instance's status and the peer's dmesg")]))
    hs = [h for h in hs if h not in gone]
    if not hs:
        return out
    av = [h for h in hs if "address vector" in h.ev.text]
    return [cand("LOG025", "firewall_or_port_blocked", 3 if av else 5, av + [h for h in hs if h not in av],
                 detail="NCCL's EFA plugin could not reach a peer's EFA device"
                        + (" (libfabric would not take its address)" if av else " (its transfers completed with errors)")
                        + ". EFA traffic flows only when the instances' security group allows all inbound and all "
                          "outbound traffic to and from the security group itself, and only between instances of one "
                          "availability zone; ping and NCCL_NET=Socket working says nothing about that rule.",
                 alts=[("other", "instances in different availability zones or placement groups cannot reach each "
                                 "other over EFA at all"),
                       ("peer_process_died", "a peer that died mid-run fails the transfers to it the same way: "
                                             "read its own log")])] + out

def _no_algo(m: Any, hs: list[Any], found: list[Cand]) -> list[Cand]:
    """enqueue.cc: no algorithm and protocol pair can run this collective. NCCL 2.26 on appends " NCCL_ALGO was set to
    X." / " NCCL_PROTO was set to Y." and returns ncclInvalidUsage when either is set (the setting ruled every pair
    out), ncclInternalError otherwise. Older releases print only "Error : no algorithm/protocol available"; NCCL's
    own "NCCL_ALGO set by environment to" INFO line then says whether a setting was in force."""
    named = group(hs, "why") or ""
    env = [v for v in ("NCCL_ALGO", "NCCL_PROTO") if v in named or v in m.env]
    if env:
        vals = ", ".join(f"{v}={next(iter(m.env[v]), '?')}" if v in m.env else v for v in env)
        return [cand("LOG092", "other", 2, hs, params={"settings": vals})]
    return [cand("LOG070", "nccl_internal_bug", 3, hs, params={"what": "NCCL found no algorithm/protocol for a "
                                                                     "collective, with no NCCL_ALGO/NCCL_PROTO in force"})]


def _comm_id(hs: list[Any]) -> dict[str, Any]:
    addr = group(hs, "addr")
    return {"endpoint": f"NCCL_COMM_ID {addr}" if addr else "the address in NCCL_COMM_ID",
            "how": "no local interface is on its network" if addr else "the value is malformed"}


def _dup_gpu(m: Any, hs: list[Any], found: list[Cand]) -> list[Cand]:
    g = hs[0].groups
    a, b, bus = g.get("a") or g.get("a2"), g.get("b") or g.get("b2"), g.get("bus") or g.get("bus2")
    what = (f"ranks {a} and {b} both use the GPU at bus id {bus}" if a and b
            else "several ranks of one communicator use the same GPU")
    c = cand("LOG034", "duplicate_gpu", 1, hs, params={"what": what})
    if a and b:
        c.ranks |= {int(str(a)), int(str(b))}
    return [c]


def _ib_qp(m: Any, hs: list[Any], found: list[Cand]) -> list[Cand]:
    c = cand("LOG036", "ib_misconfig", 2, hs, alts=[
        ("hardware_fault", "if the GID/route is right on every node, a bad link times out the same way: check "
                           "ibstat port state and error counters")])
    ll = [g for g in m.gid_table if g[1].lower().startswith("fe80")]
    if ll:
        c.evidence.extend(g[3] for g in ll[:2])
        c.detail = (f"GID index {', '.join(str(g[0]) for g in ll[:4])} hold link-local (fe80::) addresses, which "
                    "are not routable between nodes; pick the index whose GID maps to the routable address.")
    return [c]


#: ibv_event_type_str of the QP events a work request of this process caused (IBV_EVENT_QP_ACCESS_ERR, _QP_REQ_ERR):
#: a memory key or access right the request used was refused, or the request itself was malformed for the QP. The
#: port and the cable are fine; registration (GPUDirect RDMA, DMA-BUF), the path settings (MTU, GID) or the
#: library's use of the verbs are not.
_QP_REQUEST_EVENTS = re.compile(r"local access violation work queue error|invalid request local work queue error")


#: ibv_event_type_str of events that report a change, not a fault (an address added to the RoCE netdev changes
#: the GID table; a subnet manager that moves or re-registers ports): NCCL prints every async event it gets.
_INFO_EVENTS = re.compile(r"async event ?: ?(?:GID table change|LID change|P_Key change|SM change|client reregistration"
                          r"|port active|communication established|send queue drained|last WQE reached"
                          r"|SRQ limit reached)", re.IGNORECASE)


def _ib_async(m: Any, hs: list[Any], found: list[Cand]) -> list[Cand]:
    hs = [h for h in hs if not _INFO_EVENTS.search(h.ev.text)]
    qp = [h for h in hs if _QP_REQUEST_EVENTS.search(h.ev.text)]
    port = [h for h in hs if h not in qp]
    out = []
    if port:
        dev = group(port, "dev", "dev3")
        ev_what = group(port, "what2", "what", "what3")
        what = "the InfiniBand port reported errors" + (f" ({dev}: {ev_what.strip()})" if dev and ev_what else "")
        out.append(cand("LOG037", "hardware_fault", 1, port, params={"what": what}))
    if qp:
        out.append(cand("LOG036", "ib_misconfig", 2, qp,
                        detail="The HCA refused a work request of this process on its queue pair (an access violation "
                               "or an invalid request): a memory region or key it used, or a path attribute of the "
                               "connection, is wrong for the fabric. The port itself reported nothing.",
                        alts=[("p2p_acs_iommu", "RDMA on GPU memory registered through nvidia-peermem/DMA-BUF fails "
                                                "this way when the PCIe path or the IOMMU interferes: "
                                                "NCCL_NET_GDR_LEVEL=LOC working says so"),
                              ("nccl_internal_bug", "appearing only after an NCCL upgrade or with NCCL's internal IB "
                                                    "plugin but not with another (NVIDIA/nccl#1524, #1710): the previous "
                                                    "release or the other plugin works")]))
    return out


def _ib_incompatible(m: Any, hs: list[Any], found: list[Cand]) -> list[Cand]:
    counts = [x for x in hs if x.groups.get("min")]
    links = [x for x in hs if x not in counts]
    out = []
    if links:
        out.append(cand("LOG036", "ib_misconfig", 1, links,
                        detail="NCCL was asked to connect or merge NICs of different link types (InfiniBand with "
                               "RoCE/Ethernet); select NICs of one link type with NCCL_IB_HCA on every node."))
    if counts:
        g = counts[0].groups
        out.append(cand("LOG036", "ib_misconfig", 2, counts,
                        detail=f"Ranks see different numbers of network devices (from {g.get('min')} to {g.get('max')}): "
                               "NCCL_IB_HCA or the plugin selects a different set on some nodes.",
                        alts=[("hardware_fault", "a NIC or port that is down on one node drops out of its count: "
                                                 "ibstat on every node shows which port is not Active")]))
    return out


def _net_counts_ignored(m: Any, found: list[Cand], _unused: list[Cand]) -> list[Cand]:
    """NCCL 2.30.3 and later go on when ranks have different numbers of NICs (NCCL_IGNORE_NET_MISMATCH=1 by default)
    and say so at INFO only. Channels NCCL places on a NIC a peer lacks wait for it forever (NVIDIA/nccl#2428: a
    second eRDMA device one node could not open, a silent hang). A cause when the job failed or hung with nothing
    more specific; a risk in a job that went on."""
    hs = hits(m, "net_counts_ignored")
    if not hs or completed(m) or any(c.cause and not c.weak and c.tier <= 4 for c in found):
        return []
    short = sorted({int(h.groups["rank"]) for h in hs if h.groups.get("rank")})
    counts = next((h for h in hs if h.groups.get("min")), None)
    span = f" (from {counts.groups['min']} to {counts.groups['max']})" if counts else ""
    failing = job_failed(m, found) or bool(m.watchdog)
    c = cand("LOG036", "ib_misconfig", 4 if failing else 7, hs, weak=not failing,
                 detail=f"Ranks have different numbers of network devices{span}"
                        + (f"; short: rank {', '.join(map(str, short[:8]))}" if short else "")
                        + ". NCCL went on (NCCL_IGNORE_NET_MISMATCH), and channels it places on a NIC a peer does not "
                          "have wait for that peer forever. Make every node expose the same NICs (NCCL_IB_HCA, the "
                          "container's RDMA devices, a port that is down), or set NCCL_IGNORE_NET_MISMATCH=0 to stop "
                          "at set-up instead.",
                 alts=[("hardware_fault", "a NIC or port that is down on one node drops out of its count")])
    c.ranks.update(short[:16])
    return [c]


def _network_failed_early(m: Any, found: list[Cand]) -> bool:
    """Nothing else explains the failure and the job never ran: no peer's own failure, no collective completed."""
    if any(c.cause and not c.consequence for c in found):  # another rule names the cause, however weakly
        return False
    if any(c.cause == "peer_process_died" and not c.consequence for c in found):
        return False
    ran = any(w.seq > 1 for w in m.watchdog) or any(done > 1 for _q, done, _e in m.progress.values())
    return not ran


_TRANSPORT_FILES = ("net_socket", "net.h", "net.cc", "net_ib")


def _closed_in_transport(m: Any, h: Any) -> bool:
    """A closed connection of the host's network transport: NCCL's error trace on that host runs through the transport's
    files and not through its bootstrap."""
    if "closed by" not in h.ev.text:
        return False
    files = trace_files(m, h.ev.host)
    return any(f.startswith(_TRANSPORT_FILES) for f in files) and not any("bootstrap" in f for f in files)


def _system_error(m: Any, found: list[Cand], _unused: list[Cand]) -> list[Cand]:
    """NCCL's ncclSystemError ("unhandled system error") or ncclRemoteError with nothing that says why.

    ncclSystemError is NCCL's result for a failed system call (src/include/checks.h SYSCHECK: socket, connect,
    send, poll, open, fallocate, mmap): NCCL_DEBUG=WARN names the call. Between hosts the calls that fail are the
    sockets of bootstrap and of the Socket transport, over an interface the peer cannot reach (a container's bridge
    address, loopback, the wrong NIC of several). ncclRemoteError ("remote process exited or there was a network
    error") is what a rank sees when its peer's connection dropped: with no peer reporting a failure of its own and
    no collective completed, the connections never worked. With a peer's own error in the logs, the closed-connection
    rule makes this the echo of that failure instead."""
    hs = hits(m, "nccl_system_error") + hits(m, "nccl_proxy_failed")
    # With no error line at all, NCCL's own trace through its bootstrap (result 2 or 6) stands for it: the WARN
    # and torch's exception were cut from what was posted, the trace says which path failed.
    chain = [] if hs or m.unmatched_errors else hits(m, "nccl_bootstrap_chain")
    hs = hs or chain
    if not hs or not _network_failed_early(m, found):
        return []
    # The interfaces each rank chose are in the logs and none is unusable (the bad_interfaces rule reads them): the
    # logs then speak against the interface, and the lines are quoted as an unrecognised failure instead.
    if any(hi.bootstrap or hi.net_socket for hi in m.hosts.values()):
        return []
    # A connection reset (ECONNRESET) was established first: the peer's host dropped it (its process exited, a link
    # failed). An address that leads to the wrong place is refused, times out or is closed during bootstrap instead.
    if any("reset by peer" in h.ev.text or "ECONNRESET" in h.ev.text for h in hits(m, "conn_lost")):
        return []
    # So was a connection NCCL's network transport closed mid-transfer ("Connection closed by remote peer" with the
    # trace through net_socket.cc / net.h, not bootstrap.cc): transport connections exist only once the communicator
    # was set up, so the peer's process went away (pytorch/elastic#134: workers killed on purpose).
    if any(_closed_in_transport(m, h) for h in hits(m, "conn_lost")):
        return []
    sysc = [h for h in hs if h.groups.get("sys") or h.sig.id == "nccl_proxy_failed" or h.groups.get("code") == "2"]
    remote = [h for h in hs if not h.groups.get("sys") and h.groups.get("code") != "2"]
    use = sysc or remote
    # A trace through bootstrap.cc is a failed bootstrap socket, never the /dev/shm segment of one host.
    if sysc and local_ranks_only(m) and not chain:
        # Ranks of one host talk over P2P and shared memory: the system call that fails there is the /dev/shm
        # segment of the SHM transport or the proxy (shmutils.cc: open/fallocate/mmap under /dev/shm), which a
        # container's 64 MB /dev/shm (docker without --ipc=host or --shm-size, a pod without a memory-backed
        # /dev/shm) or stale nccl-* files there run out of (NVIDIA/nccl#473: nccl-tests in docker, fixed by --ipc=host).
        return [cand("LOG030", "shm_too_small", 7, sysc,
                     detail="NCCL's system call failed (ncclSystemError) with no line saying which, and the ranks share "
                            "one host, where NCCL's transports are P2P and shared memory: the usual failing call is the "
                            "/dev/shm segment. NCCL_DEBUG=WARN names the call.",
                     alts=[("wrong_interface", "if some ranks do run on other hosts, an interface the peer cannot reach "
                                               "fails the bootstrap sockets the same way"),
                           ("peer_process_died", "a peer that crashed without its log in view leaves the same error")])]
    what = ("NCCL's system call failed (ncclSystemError) and no other line says which or why" if sysc
            else "a peer's connection dropped (ncclRemoteError) before any collective completed, and no peer reports "
                 "a failure of its own")
    if chain:
        what = ("NCCL's own error trace runs through its bootstrap (bootstrap.cc -> " + str(chain[0].groups.get("code"))
                + "): a bootstrap socket failed, and the line naming the call is not in the log")
    alts = [("shm_too_small", "on one host (no network between the ranks) the failing call is the /dev/shm segment: "
                              "a container's 64 MB /dev/shm; NCCL_DEBUG=WARN names the call")] if sysc and not chain else []
    alts += [("firewall_or_port_blocked", "if each rank advertised a routable address, a firewall dropping NCCL's "
                                          "ephemeral ports fails the same sockets"),
             ("peer_process_died", "a peer that crashed without its log in view leaves the same error: read every "
                                   "rank's first error")]
    return [cand("LOG028", "wrong_interface", 7, use, params={"what": what}, alts=alts)]


def _internal_error(m: Any, hs: list[Any], found: list[Cand]) -> list[Cand]:
    """NCCL's ncclInternalError with nothing else that says why.

    NCCL_SOCKET_IFNAME that matches no interface on a host leaves NCCL with no address to bootstrap from; NCCL
    goes on and fails later in ncclSocketInit with an internal error (NVIDIA/nccl#1837), with no "Bootstrap : Using"
    line on that host: a value set for the job, in a log with no such line, is the likeliest reason (nccl-tests#219:
    two hosts naming their NIC differently). NCCL 2.18 also returned ncclInternalError for failed network calls
    (its maintainers: 'with NCCL 2.18, all network errors will be erroneously reported as Internal Error')."""
    vals = sorted(m.env.get("NCCL_SOCKET_IFNAME", {})) + [str(h.groups.get("val")) for h in hits(m, "ifname_assigned")]
    named = [v for v in vals if v and not v.startswith("^")]
    if named and not any(hi.bootstrap for hi in m.hosts.values()):
        return [cand("LOG021", "wrong_interface", 3, hs, params={"iface": named[0].lstrip("=")},
                     detail=f"NCCL_SOCKET_IFNAME={named[0]} is set and no rank logged the interface it bootstraps "
                            "from: where no interface of that name exists (hosts name their NICs differently), NCCL has "
                            "no address and fails later with an internal error. List every host's name "
                            "(NCCL_SOCKET_IFNAME=eth0,enp6s0) or a prefix they share.",
                     alts=[("nccl_internal_bug", "if every host has that interface, rerun with NCCL_DEBUG=WARN: the WARN "
                                                 "line before the internal error names the failing check")])]
    noprov = hits(m, "verbs_no_provider")
    if noprov and not any(c.cause and not c.weak and not c.consequence for c in found):
        # rdma-core found the HCA's uverbs device but no user-space provider library for it (libmlx5 missing, as
        # in a container built without rdma-core's providers): the verbs calls NCCL makes on that device fail.
        return [cand("LOG036", "ib_misconfig", 7, noprov[:1] + hs[:2],
                     detail=f"libibverbs found {group(noprov, 'dev') or 'an RDMA device'} but no user-space driver for "
                            "it (the provider library, e.g. libmlx5 from rdma-core, is missing, typically inside a "
                            "container), and NCCL then failed with an internal error. Install the providers in the "
                            "image (rdma-core / libibverbs-providers) or keep NCCL off IB (NCCL_IB_DISABLE=1).",
                     alts=[("nccl_internal_bug", "if NCCL_IB_DISABLE=1 fails the same way, the internal error is "
                                                 "NCCL's own: rerun with NCCL_DEBUG=INFO for the WARN line before it")])]
    vers = {str(h.groups.get("ver") or h.groups["ver2"]) for h in hs if h.groups.get("ver") or h.groups.get("ver2")}
    vers |= set(m.versions)
    if vers and all(v.startswith("2.18") for v in vers) and _network_failed_early(m, found):
        # 2.18 returned ncclInternalError where other releases return ncclSystemError/ncclRemoteError: read it as the
        # bare system error is read (LOG028), with NCCL's own defect as the alternative.
        return [cand("LOG028", "wrong_interface", 8, hs, params={
            "what": "NCCL 2.18 reported an 'internal error', which is how 2.18 reports a failed network call, before any "
                    "collective completed"},
            detail="NCCL 2.18 returns ncclInternalError for network calls that fail (its maintainers: with 2.18 all "
                   "network errors are reported as 'internal error'; 2.19 names them). At start-up the failing call is "
                   "most often a socket over an interface the peer cannot reach.",
            alts=[("nccl_internal_bug", "if NCCL_DEBUG=WARN shows no failed socket or IB call before it, it is a check "
                                        "inside NCCL: another release (2.19+) either works or names the error"),
                  ("firewall_or_port_blocked", "a firewall dropping NCCL's ports fails the same sockets"),
                  ("peer_process_died", "a peer that exited without its log in view leaves the same error")])]
    alts = [("other", "NCCL also returns 'internal error' for setups it rejects (topology files, plugins): rerun with "
                      "NCCL_DEBUG=INFO to see the WARN line before it"),
            ("duplicate_gpu", "NCCL before 2.7 had no 'Duplicate GPU detected' check: two ranks on one GPU failed init "
                              "with an internal error (give each process its own GPU: set_device(local_rank))")]
    if any(v.startswith("2.18") for v in vers):
        alts.insert(0, ("wrong_interface", "NCCL 2.18 reports failed network calls as internal errors (2.19 names them): "
                                           "with NCCL_DEBUG=WARN the line before it shows a socket that failed over an "
                                           "interface the peer cannot reach"))
    return [cand("LOG070", "nccl_internal_bug", 8, hs,
                 params={"what": "NCCL reported an internal error and no other line says why"}, alts=alts)]


def _smem_exceeds(m: Any, found: list[Cand], _unused: list[Cand]) -> list[Cand]:
    """NCCL's kernels need more shared memory than the GPU gives one kernel: NCCL then returns ncclSystemError for
    every communicator (enqueue.cc), whatever the transports. The release predates the GPU's architecture."""
    hs = hits(m, "nccl_smem_exceeds")
    if not hs:
        return []
    return [cand("LOG070", "nccl_internal_bug", 2, hs,
                 params={"what": f"its kernels ask for {group(hs, 'want') or 'more'} bytes of shared memory and this GPU "
                                 f"allows {group(hs, 'have') or 'less'}: this NCCL release predates the GPU"},
                 detail="An NCCL release that does not know this GPU sizes its kernels' shared memory for older "
                        "architectures, so no kernel can be set up and every collective fails (NCCL_P2P_DISABLE does not "
                        "help). Use an NCCL built for the GPU (Blackwell RTX 50xx: 2.26.2 or later, from a newer torch "
                        "wheel or nvidia-nccl-cu12).",
                 alts=[("driver_cuda_mismatch", "a driver older than the CUDA the NCCL build targets fails GPU setup "
                                                "too: compare nvidia-smi's CUDA version with NCCL's '+cudaX.Y'")])]


#: GeForce boards whose PCIe peer-to-peer NCCL cannot use: Ada (RTX 40xx) and Blackwell (RTX 50xx) consumer cards.
_NO_P2P_GEFORCE = re.compile(r"GeForce RTX (?:40|50)\d0")


def _input_ends(m: Any, slack: int, after: Sequence[Evidence] = ()) -> list[Evidence]:
    """Each input's last NCCL line (read or not) where the input stops there: at most ``slack`` lines follow it, or a
    line of ``after`` (the user's interrupt) does."""
    return [Evidence(source=st.path, text=st.last_nccl_text, line=st.last_nccl_line,
                     host=classify(st.last_nccl_text).host if st.last_nccl_text else None)
            for st in m.inputs if st.last_nccl_line and (st.lines - st.last_nccl_line <= slack or any(
                ev.source == st.path and ev.line > st.last_nccl_line for ev in after))]


def _tests_stuck(m: Any) -> list[Evidence]:
    """Where nccl-tests on one host shows it stopped before its first size: its results' header, or (with
    NCCL_DEBUG=INFO) NCCL's last line after every communicator completed, with at most a few lines after it."""
    size = {st.path: st.lines for st in m.inputs}
    heads = [h.ev for h in hits(m, "nccl_tests_results_head") if size.get(h.ev.source, 0) - h.ev.line <= _TAIL_LINES]
    if any(c.state in _GONE for c in m.comms):
        return []
    if m.comms and not any(c.state == "Init COMPLETE" for c in m.comms):
        return []  # still setting up: _init_stalled's
    done = _input_ends(m, _TAIL_LINES + 2) if m.comms else []
    return (heads + done)[:2]


def _tests_p2p_hang(m: Any, found: list[Cand], _unused: list[Cand]) -> list[Cand]:
    """nccl-tests on one host that stops before its first size, with no error: a hang in the first collective.

    nccl-tests runs no code of its own between collectives, so on one host the collective's only paths are GPU
    peer-to-peer and shared memory.
    - GeForce RTX 40xx/50xx boards have no working PCIe peer-to-peer, yet drivers of their first releases reported it
      as supported, so NCCL picks its P2P transport and the first collective never completes (NVIDIA/nccl-tests#117:
      two RTX 4090 hang where two 2080 Ti run; NCCL_P2P_DISABLE=1 runs): LOG039.
    - Other boards: PCIe ACS or an IOMMU redirecting peer traffic to the root complex, which drops or stalls it
      (NCCL's troubleshooting guide; VMs and servers with VT-d/ACS on; NVIDIA/nccl#104, 8 M40s on two PCIe trees):
      LOG038, a warning, once the log shows where it stopped: the results' header as its last lines, or NCCL's
      communicators set up (Init COMPLETE) and nothing after. A log that stops inside the set-up is _init_stalled's.
    NCCL 1.x's own tests list their GPUs as "#   Rank %2d uses device %2d [0x%02x] %s", one process driving all of
    them: one host."""
    rows = hits(m, "nccl_tests_rank")
    if len(rows) < 2 or single_node(m) is None:
        rows = hits(m, "nccl_tests_device")  # NCCL 1.x: one process, so one host
    if len(rows) < 2 or hits(m, "nccl_tests_row") or hits(m, "nccl_tests_passed") \
            or any(c.cause and not c.consequence for c in found):
        return []
    gpus = [h for h in rows if _NO_P2P_GEFORCE.search(str(h.groups.get("gpu") or ""))]
    if len(gpus) >= 2:
        return [cand("LOG039", "p2p_driver_bug", 6, gpus, params={},
                     detail=f"nccl-tests listed {len(gpus)} {group(gpus, 'gpu')} boards on one host and stopped before "
                            "its first size. GeForce RTX 40xx/50xx boards have no working PCIe peer-to-peer, but early "
                            "drivers for them report it, so NCCL's P2P transport is chosen and the collective hangs. A "
                            "driver that reports no P2P for the board, or NCCL_P2P_DISABLE=1, lets NCCL use shared "
                            "memory instead.",
                     alts=[("p2p_acs_iommu", "on boards whose P2P does work, ACS/IOMMU redirection hangs the same way: "
                                             "lspci -vvv | grep ACSCtl")])]
    if m.unmatched_errors or m.tracebacks or m.elastic:
        return []
    last = _tests_stuck(m)
    if not last:
        return []  # nccl-tests' own output (or something else) goes on, or the log does not show where it stopped
    hung = cand("LOG038", "p2p_acs_iommu", 8, rows[:2], n=2,
                weak=True, params={"what": f"nccl-tests on one host ({len(rows)} GPUs) stopped before its first size, "
                                           "with no error"},
                detail="nccl-tests runs nothing between its collectives, and on one host a collective moves its data "
                       "over GPU peer-to-peer or shared memory. A first collective that never completes with no error "
                       "is the signature of PCIe ACS or an IOMMU (VT-d/AMD-Vi) redirecting peer traffic, common in "
                       "virtual machines and on servers whose GPUs sit behind PCIe switches; NCCL_P2P_DISABLE=1 "
                       "running the test confirms it. (This reads the log as the test's whole output.)",
                alts=[("p2p_driver_bug", "consumer boards whose driver reports P2P they lack hang the same way: "
                                         "`nvidia-smi topo -p2p r`, a newer driver")])
    hung.evidence.extend(last[:1])
    return [hung]


#: Where a process's last NCCL line says its communicator set-up had got to. Computing and connecting the channels:
#: "Channel 00/02 : 0 1" and "Ring 00 : 0 1" (the rings), "Trees", "P2P Chunksize", transport lines ("Channel 00/0 :
#: 0[0] -> 1[1] via P2P/IPC", "... via NET/IB/0"). Connected: "Connected all rings" / "trees", "Connected NVLS".
#: Set up: "- Init COMPLETE", and "Launch mode" (printed once, at the first collective, up to 2.4's ncclCommInitAll
#: that says no Init COMPLETE). Gone: a communicator destroyed, aborted or failed.
_AT_CHANNELS = re.compile(r"\b(?:Channel|Ring) \d{1,3}(?:/\d{1,3})? ?:|\bTrees?\b|P2P Chunksize|\bvia (?:P2P|SHM|NET|NVLS|"
                          r"CollNet)|\bnChannels\b|\bpattern \d")
_AT_CONNECTED = re.compile(r"Connected (?:all (?:rings|trees)|NVLS|collnet)", re.I)
_VIA_NET = re.compile(r"\bvia NET/")
_SET_UP = re.compile(r"- Init COMPLETE\b|Launch mode")
_GONE = ("Destroy COMPLETE", "Abort COMPLETE", "Init FAILED")
#: How many lines may follow a process's last NCCL line in its input for the log to be read as stopping there
#: (a shell prompt, a "^C", a launcher's banner).
_TAIL_LINES = 5


def _span(m: Any) -> str | None:
    """"hosts" when the job's NCCL processes run on more than one host, "one" when they share one, None when the logs
    do not say: NCCL's host:pid prefixes, nccl-tests' table of ranks, "nNodes" (2.19 on), a network transport; a single
    host named, with several of its ranks' GPUs in view or torchrun's warning that it starts several processes there,
    is read as the whole job."""
    hosts = {r.host for r in m.ranks.values() if r.host and r.last_nccl is not None}
    listed = {h.groups.get("host") for h in hits(m, "nccl_tests_rank")}
    nodes = [h.groups.get("n") for h in hits(m, "nccl_nnodes")]
    if len(hosts) > 1 or len(listed) > 1 or any(n and n != "1" for n in nodes) \
            or any(k.startswith("NET/") or k == "CollNet" for k in m.transport_kinds):
        return "hosts"
    if local_ranks_only(m) or (len(hosts) == 1 and any(k.startswith(("P2P", "SHM")) for k in m.transport_kinds)):
        return "one"
    ranks = [r for r in m.ranks.values() if r.last_nccl is not None]
    if len(hosts) != 1:
        return None
    sizes = {c.nranks for c in m.comms}
    if len(sizes) == 1 and len(_gpus(ranks)) >= next(iter(sizes)) > 1:
        return "one"  # every rank of the communicator is on this host's list
    if not sizes and any(len(r.devs) > 1 for r in ranks):
        return "one"  # one process driving several GPUs (ncclCommInitAll: nccl-tests -g N, DataParallel)
    if hits(m, "torchrun_local_procs") and not hits(m, "nccl_nnodes"):
        return "one"  # torchrun started several ranks on the only host the logs name
    return None


def _gpus(ranks: list[Any]) -> set[tuple[Any, Any]]:
    """(process, GPU) pairs the NCCL lines name."""
    return {(r.pid, d) for r in ranks for d in (r.devs or {r.cuda_dev})}


_EXCERPT = (" (This reads the logs as the job's whole output: an excerpt cut there, of a job that went on, reads the "
            "same.)")


def _init_stalled(m: Any, found: list[Cand], _unused: list[Cand]) -> list[Cand]:
    """The logs stop inside NCCL's communicator set-up, or right after it, and nothing failed: a hang there.

    With NCCL_DEBUG=INFO every communicator that finishes its set-up says "comm %p rank %d nranks %d ... - Init
    COMPLETE" (init.cc, 2.4.2 on; ncclCommInitAll too from 2.5). A log showing the set-up's INFO lines (bootstrap,
    channels), no error, and nothing of the job's own after NCCL's last line is a job that hung where NCCL stopped:
    - across hosts, before Init COMPLETE: the ranks first exchange addresses over TCP (bootstrap) and then connect
      their channels, each on ports the OS picks: a host firewall, a security group or network policy that lets only
      the rendezvous port through, or a sidecar proxy that intercepts the pods' TCP, hangs exactly here
      (NVIDIA/nccl#1638: Istio's envoy); with InfiniBand carrying the channels, a hang while connecting them is the
      RDMA set-up (GID index, subnet). From 2.22 NCCL connects channels at the first collective, after Init COMPLETE:
      a log that stops on those "via NET/..." lines is the same stall;
    - on one host, before or after Init COMPLETE: the channels are GPU peer-to-peer and shared memory, and the first
      collective runs on them. PCIe ACS or an IOMMU (VT-d) redirecting peer traffic hangs the first transfers
      (NVIDIA/nccl#257: intel_iommu=off fixed it; NCCL_P2P_DISABLE=1 runs).
    A user who stopped the job (KeyboardInterrupt, torchrun stopped by SIGINT/SIGTERM) confirms the hang."""
    # The user stopping the job: Python's KeyboardInterrupt, or torchrun's agent stopped by SIGINT/SIGTERM.
    stopped = [h.ev for h in hits(m, "user_interrupt")] + [h.ev for h in hits(m, "agent_signalled")
                                                         if h.groups.get("sig") in ("2", "15")]
    told = {(ev.source, ev.line) for ev in stopped}
    if any(c.cause and not c.weak and not all((x.source, x.line) in told for x in c.evidence) for c in found) \
            or m.elastic or completed(m) or m.watchdog or m.progress or hits(m, "nccl_tests_row") \
            or any(c.state in _GONE for c in m.comms):
        return []
    if any((ev.source, ev.line) not in told for ev, _seq, _kind in m.unmatched_errors) or (m.tracebacks and not stopped):
        return []
    if any(version_tuple(v) < (2, 4, 2) for v in m.versions):
        return []  # no "Init COMPLETE" line to miss
    ranks = [r for r in m.ranks.values() if r.last_nccl is not None]
    if not ranks or not (any(h.bootstrap or h.net_socket or h.net_ib for h in m.hosts.values()) or m.comms
                         or m.transports) or any("opCount" in r.last_nccl.text for r in ranks):
        return []
    # Where each input stops: its last NCCL line (read or not), with at most a few lines after it (or the user's
    # interrupt after it).
    ends = _input_ends(m, _TAIL_LINES, stopped)
    if not ends or any(any(f"- {g}" in e.text for g in _GONE) or "opCount" in e.text for e in ends):
        return []
    span = _span(m)
    if span is None:
        return []
    set_up = any(c.state == "Init COMPLETE" for c in m.comms) or any(_SET_UP.search(e.text) for e in ends) \
        or any(_SET_UP.search(r.last_nccl.text) for r in ranks)
    if set_up and span == "hosts" and not all(_VIA_NET.search(e.text) for e in ends):
        return []  # set up, and not stopped connecting its network channels: the program's own wait, not NCCL's
    at_end = {(e.source, e.line) for e in ends}
    mine = [r.last_nccl for r in ranks if (r.last_nccl.source, r.last_nccl.line) not in at_end]
    shown = ends[:2] + list({e.host: e for e in mine}.values())[:3 - min(2, len(ends))]
    where = ("at the first collective, connecting its network channels (after Init COMPLETE)" if set_up and span == "hosts"
             else "in the first collective, after its communicators were set up" if set_up
             else "while setting up its channels" if any(_AT_CHANNELS.search(e.text) for e in ends)
             else "after connecting its channels" if any(_AT_CONNECTED.search(e.text) for e in ends)
             else "before its channels")
    hosts = {r.host for r in ranks if r.host}
    seen = f"{len(ranks)} NCCL process(es) on {len(hosts) or '?'} host(s)" + (
        "; torchrun started several processes there" if span == "one" and hits(m, "torchrun_local_procs") else "")
    stop = f"; the user then stopped the job ({stopped[0].text.strip()[:60]})" if stopped else ""
    who = {r.rank for r in ranks if r.rank is not None}
    if span == "one":
        if len(_gpus(ranks)) < 2 and max((c.nranks for c in m.comms), default=0) < 2 and not hits(m, "torchrun_local_procs"):
            return []
        return [Cand("LOG038", "p2p_acs_iommu", 6 if stopped else 8, 10**9 - 1, shown + stopped[:1], weak=not stopped,
                     ranks=who, hosts=hosts,
                     params={"what": ("the logs stop in NCCL's first collective, after its communicators were set up"
                                      if set_up else f"the logs stop while NCCL was setting up its communicators ({where})")
                                     + f", on one host, with no error ({seen}{stop})"},
                     detail=("Every communicator completed its set-up and nothing followed: the first collective never "
                             "finished. " if set_up else "No communicator reached Init COMPLETE. ")
                            + "Between GPUs of one host NCCL moves data over PCIe/NVLink peer-to-peer and shared "
                            "memory; a hang there with no error is the signature of PCIe ACS or an IOMMU (VT-d/AMD-Vi) "
                            "redirecting peer traffic, common in virtual machines and on servers with ACS enabled. "
                            "NCCL_P2P_DISABLE=1 running the job confirms it." + _EXCERPT,
                     alts=[("p2p_driver_bug", "consumer GPUs (GeForce) whose driver reports P2P they lack hang the "
                                              "same way: `nvidia-smi topo -p2p r` and a newer driver tell them apart"),
                           ("collective_timeout_straggler" if set_up else "shm_too_small",
                            "a rank of the program busy elsewhere (data loading, evaluation on rank 0) leaves the others "
                            "waiting the same way: `commdoctor hang` shows each rank's stack" if set_up else
                            "in a container, a /dev/shm too small for NCCL's shared-memory transport: df -h /dev/shm "
                            "(docker's default is 64 MB)")])]
    ib = uses_ib(m)
    rdma = ib and (set_up or where == "while setting up its channels")
    alts = [("wrong_interface", "an interface whose address the other hosts cannot route (a second NIC, a bridge) "
                                "stalls the same way: check the Bootstrap lines' interface on every host and pin "
                                "NCCL_SOCKET_IFNAME")]
    if rdma:
        alts.insert(0, ("firewall_or_port_blocked", "the TCP side of the set-up crosses the same firewall: `nc -zv` "
                                                    "from each host to the other on a high port"))
    elif ib:
        alts.append(("ib_misconfig", "with InfiniBand/RoCE carrying the channels, a wrong GID index or subnet stalls "
                                     "their connection: NCCL_IB_GID_INDEX, ibv_devinfo"))
    return [Cand("LOG108", "ib_misconfig" if rdma else "firewall_or_port_blocked", 6 if stopped else 8, 10**9 - 1,
                 shown + stopped[:1], weak=not stopped, ranks=who, hosts=hosts,
                 params={"what": f"{where}, across hosts ({seen}{stop})"},
                 detail=("Every communicator completed its set-up, then NCCL (2.22 and later connect channels at the "
                         "first collective) stopped connecting its network channels. " if set_up else
                         "No communicator reached Init COMPLETE and no error was logged. ")
                        + "NCCL's set-up between hosts opens TCP connections on ports the OS picks (not MASTER_PORT): "
                        "first the bootstrap ring that exchanges the ranks' addresses, then one connection per channel "
                        "unless InfiniBand carries them. A firewall, a security group or network policy that lets only "
                        "the rendezvous port through, or a service-mesh sidecar that intercepts the pods' traffic leaves "
                        "every rank waiting without an error." + _EXCERPT
                        + (" The stall is while connecting channels that run over InfiniBand/RoCE: the RDMA connection "
                           "set-up (GID index, subnet, link layer) is the first suspect." if rdma else ""),
                 alts=alts)]


def _jobs_apart(heads: list[Any], rows: list[Any], done: list[int], cmds: list[int]) -> list[Any]:
    """In one file: a second header before any rank row or result, or one rank number from two processes with no
    result between them. The two lines that show it; none when the file shows one job (or runs pasted one after
    the other: a command line starting the test again, CMDS, lies between them)."""
    if len(heads) >= 2 and not any(x < heads[1].seq for x in [r.seq for r in rows] + done) \
            and not any(heads[0].seq < c < heads[1].seq for c in cmds):
        return heads[:2]
    first: dict[str, Any] = {}
    for r in rows:
        seen = first.setdefault(str(r.groups.get("rank")), r)
        if seen.groups.get("pid") != r.groups.get("pid") and not any(seen.seq < d < r.seq for d in done + cmds):
            return [seen, r]
    return []


def _zero(value: str | None) -> bool:
    try:
        return value is not None and float(value) == 0.0
    except ValueError:
        return False


def _results_apart(results: list[Any], summaries: list[Any], heads: list[Any]) -> list[Any]:
    """In one file: one row (size, type, op, root) printed twice in a row with no bus bandwidth (a world of one rank
    moves nothing: busbw is 0), or a second "Out of bounds values" summary with no result row since the first. One
    job prints each row once, then its summary; several processes each running the test alone print theirs
    interleaved. (A run repeated with -N prints a size again each cycle, with its bandwidth, and one summary.)"""
    for a, b in zip(results, results[1:]):
        key = ("size", "type", "op", "root")
        alone = all(_zero(x.groups.get("busbw")) for x in (a, b))
        if alone and all(a.groups.get(k) == b.groups.get(k) for k in key) and not any(a.seq < h.seq < b.seq for h in heads):
            return [a, b]
    for a, b in zip(summaries, summaries[1:]):
        if not any(a.seq < h.seq < b.seq for h in results + heads):
            return [a, b]
    return []


def _nccl_tests_apart(m: Any, found: list[Cand], _unused: list[Cand]) -> list[Cand]:
    """nccl-tests started by mpirun, where each process ran the test as a job of its own.

    The test prints its header ("# nThread 1 nGpus 8 minBytes ...") once per job, from the job's first process, then
    one "#  Rank N ... Pid P on HOST" row per rank. A binary built without MPI (make MPI=1) or against another MPI than
    the mpirun that starts it sees a world of one in every process: each prints the header and numbers its ranks from 0,
    and the hosts never talk to each other (NVIDIA/nccl-tests#213). In one file that shows as a second header before
    any rank row, or a rank listed by two processes with no result row between them (two runs pasted one after the
    other have their results, the first one's "Test NCCL failure" lines, or the command that started the second, in
    between: NVIDIA/nccl-tests#124, ROCm/rccl#1129). Without those lines, a row printed twice in a row or two summaries
    with no result between them show the same."""
    heads, rows = hits(m, "nccl_tests_header"), hits(m, "nccl_tests_rank")
    results, summaries = hits(m, "nccl_tests_row"), hits(m, "nccl_tests_passed")
    # a run that failed has ended too: a header after its failure lines starts another run pasted after it
    done = [h.seq for h in results + summaries + hits(m, "nccl_tests_failed")]
    cmds = hits(m, "nccl_tests_cmd")
    why: list[Any] = []
    for src in sorted({h.ev.source for h in heads + rows + results + summaries}):
        why = (_jobs_apart([h for h in heads if h.ev.source == src], [h for h in rows if h.ev.source == src], done,
                           [h.seq for h in cmds if h.ev.source == src])
               or _results_apart([h for h in results if h.ev.source == src],
                                 [h for h in summaries if h.ev.source == src], heads))
        if why:
            break
    if not why:
        return []
    return [cand("LOG066", "launcher_misconfig", 3, why, params={
        "what": "every MPI process ran nccl-tests as a job of its own (its header, rank 0, rows or summary printed by each)"},
        detail="nccl-tests built without MPI support (make MPI=1 MPI_HOME=...) or against another MPI than the mpirun "
               "that started it sees one process in each, so every process runs alone on its own GPUs and the hosts "
               "never communicate. Rebuild with MPI=1 against the MPI whose mpirun you use (ldd all_reduce_perf shows "
               "which libmpi it loads); one header and ranks 0..N-1 across all hosts is a job that works.")]


def _bare_cuda_error(m: Any, found: list[Cand], _unused: list[Cand]) -> list[Cand]:
    """NCCL's ncclUnhandledCudaError ("unhandled cuda error") with no reason line and nothing else naming a cause.

    A CUDA call inside NCCL failed (src/include/checks.h CUDACHECK) and the WARN that names it ("Cuda failure N
    'reason'") is not in the logs. The failures public threads resolved are NCCL releases with a defect in their
    CUDA memory or P2P setup (fixed in a later release: NVIDIA/nccl#1024 for 2.18.5), peer access that the GPUs or
    the platform do not support (consumer GPUs, VMs, WSL), and a driver older than NCCL's CUDA."""
    hs = hits(m, "nccl_unhandled_cuda")
    if not hs or any(c.cause and not c.weak and not c.consequence for c in found):
        return []
    return [cand("LOG070", "nccl_internal_bug", 7, hs,
                 params={"what": "a CUDA call inside NCCL failed (ncclUnhandledCudaError) and no line says which"},
                 detail="Rerun with NCCL_DEBUG=WARN: the 'Cuda failure' line names the call. Known NCCL defects in "
                        "its CUDA memory setup fail this way and a newer (or the previous) NCCL release works.",
                 alts=[("p2p_driver_bug", "GPUs whose peer access does not work (consumer cards, VMs, WSL) fail the same "
                                          "way: NCCL_P2P_DISABLE=1 working says so"),
                       ("driver_cuda_mismatch", "a driver older than the CUDA NCCL was built for fails its first CUDA "
                                                "calls: compare nvidia-smi's CUDA version with NCCL's '+cudaX.Y'")])]


def _invalid_usage(m: Any, found: list[Cand], _unused: list[Cand]) -> list[Cand]:
    """NCCL's ncclInvalidUsage ("invalid usage") with its reason line ("Last error: ...") not in the logs.

    NCCL returns ncclInvalidUsage for a call the library rejects: at communicator init that is above all two ranks
    on one GPU (init.cc: WARN("Duplicate GPU detected : rank %d and rank %d both on CUDA device %lx")), next an
    NCCL_SOCKET_IFNAME that matches no interface ("Bootstrap : no socket interface found"). A traceback cut
    before torch's "Last error:" line keeps only the class; with no other line naming a cause and no collective
    completed, the duplicate GPU is the likeliest reading."""
    hs = hits(m, "nccl_invalid_usage")
    if not hs or not _network_failed_early(m, found):
        return []
    # A WARN of NCCL's that no rule reads is the reason line, in the logs after all: quoted as unexplained (LOG080),
    # never overruled by a guess (an NCCL_ALGO value of a release newer than these rules, say).
    if any(" NCCL WARN " in ev.text for ev, _seq, _k in m.unmatched_errors):
        return []
    return [cand("LOG034", "duplicate_gpu", 7, hs, params={"what": "NCCL rejected the communicator as invalid usage "
                                                                  "and the reason line is not in the logs"},
                 alts=[("wrong_interface", "'Bootstrap : no socket interface found' after it means NCCL_SOCKET_IFNAME "
                                           "matched no interface on that host"),
                       ("launcher_misconfig", "ranks started with a world size or rank the others do not share are "
                                              "rejected the same way: NCCL_DEBUG=WARN prints the reason")])]


def _argcheck(m: Any, hs: list[Any], found: list[Cand]) -> list[Cand]:
    """NCCL refused a call's arguments (argcheck.cc): name what the caller got wrong."""
    gone = [h for h in hs if h.groups.get("gone") or h.groups.get("corrupt") or h.groups.get("n") == "0"]
    dev = [h for h in hs if h.groups.get("dev") is not None]
    if gone:
        what = "a call on a communicator that no longer exists (destroyed, or never fully created)"
        detail = ("NCCL found the communicator already destroyed or its fields empty: the program (or the framework's "
                  "NCCL wrapper) used it after ncclCommDestroy/abort, or used it from inside the group call that was "
                  "still creating it (torch 1.3's torch.cuda.nccl with NCCL 2.5, pytorch/pytorch#29014).")
    elif dev:
        h = dev[0]
        what = (f"{h.groups.get('op')}'s {h.groups.get('buf')} is on GPU {h.groups.get('dev')}, the communicator on GPU "
                f"{h.groups.get('ncdev')}")
        detail = ("A tensor on another GPU than the communicator's: the rank did not select its own GPU before "
                  "creating its tensors (torch.cuda.set_device(local_rank)), or moved them to cuda:0.")
    else:
        what = hs[0].ev.text.split("WARN", 1)[-1].strip()[:160]
        detail = "The program passed NCCL an argument it cannot use; the call and the argument are named in the line."
    # A non-blocking communicator still in progress is often one whose set-up is stuck on something else (a peer that
    # never connects): anything else the logs name comes first.
    pending = all("before the previous operation returned" in h.ev.text for h in hs)
    return [cand("LOG098", "other", 7 if pending else 3, hs, params={"what": what}, detail=detail,
                 alts=[("nccl_internal_bug", "if the program is unchanged and a new NCCL release brought this, the "
                                             "framework's use of NCCL may have relied on behaviour NCCL no longer has")])]


def _net_not_found(m: Any, hs: list[Any], found: list[Cand]) -> list[Cand]:
    """NCCL_NET names a network this node did not load: InfiniBand missing, or a plugin's network whose plugin NCCL
    did not find."""
    net = (group(hs, "net") or "").strip()
    if net and net.upper() not in ("IB", "SOCKET"):
        return [cand("LOG123", "other", 1, hs + hits(m, "net_plugin_none")[:1], params={"net": net},
                     detail="The network is a plugin's: NCCL loads libnccl-net-<NCCL_NET_PLUGIN>.so (libnccl-net.so when "
                            "unset) from the library path, and a plugin name or file that does not match leaves only "
                            "its internal IB and Socket networks ('NET/Plugin: Could not find ...').",
                     alts=[("ib_misconfig", "the plugin loaded but found no device of its fabric (EFA, Slingshot CXI): "
                                            "its own lines before this one say so")])]
    return [cand("LOG036", "ib_misconfig", 1, hs,
                 detail="NCCL_NET asks for a network this node cannot load (no InfiniBand device or verbs library, or a "
                        "plugin that is not installed).")]


def _efa_versions(m: Any, hs: list[Any], found: list[Cand]) -> list[Cand]:
    """libfabric's EFA provider on a peer of another libfabric release. The zero-copy receive error is a failure; the
    connection-ID warning alone says the job can go on: a cause only when the job failed."""
    if not (any("matching the local and remote" in h.ev.text for h in hs) or job_failed(m, found)):
        return []
    return [cand("LOG126", "version_mismatch", 2, hs,
                 alts=[("other", "with the same libfabric everywhere, the zero-copy receive mode itself "
                                 "(FI_EFA_USE_ZCPY_RX=0 turns it off)")])]


def _invalid_argument(m: Any, found: list[Cand], _unused: list[Cand]) -> list[Cand]:
    """NCCL's ncclInvalidArgument ("invalid argument") at start-up with its reason line not in the logs.

    At communicator creation NCCL returns ncclInvalidArgument when the rank it is given is not in 0..nranks-1
    (init.cc: WARN("Invalid rank requested : %d/%d")): processes started with ranks beyond the world size the
    program passed, as when a launcher starts more tasks (srun --ntasks-per-node, torchrun --nproc-per-node) than the
    job's own world-size setting. A collective's bad root or buffer gives the same code, but only once collectives
    run; with none completed and nothing else named, the launch is the likeliest reading. A weak reading (tier 7):
    any rule that names a cause comes first."""
    hs = hits(m, "nccl_invalid_argument")
    if not hs or hits(m, "nccl_argcheck") or hits(m, "ofi_tuner_refused") or not _network_failed_early(m, found):
        return []
    return [cand("LOG066", "launcher_misconfig", 7, hs, params={"what": "NCCL rejected an argument at start-up (invalid "
                                                                       "argument) and the reason line is not in the logs"},
                 detail="NCCL returns 'invalid argument' at communicator creation when a process's rank is not below "
                        "the world size it was given. Compare the number of processes the launcher started with the "
                        "world size the program uses; NCCL_DEBUG=WARN prints 'Invalid rank requested : rank/nranks'.",
                 alts=[("other", "if collectives ran before, a collective called with a root or buffer NCCL rejects "
                                 "(a program bug) gives the same code: NCCL_DEBUG=WARN names the argument")])]


def _ib_completion(m: Any, hs: list[Any], found: list[Cand]) -> list[Cand]:
    """An RDMA completion error: protection/access codes point at GPUDirect; retries exhausted at the link.
    Status 5 (flushed) is the echo of a connection already broken: the closed-connection rule reads it."""
    # Status 4 (IBV_WC_LOC_PROT_ERR) and vendor syndrome 0x51 (81) are GPU memory the NIC may not touch: GPUDirect
    # through ACS/IOMMU (NVIDIA/nccl#928). 9-11 (remote invalid request, remote access, remote operation) are the
    # peer's HCA refusing what arrived: a path or key setting of the connection (MTU, GID, access rights).
    gdr = [h for h in hs if h.groups.get("code") == "4" or h.groups.get("vendor") == "81"
           or "Local protection error" in str(h.groups.get("ucx") or "")]
    remote = [h for h in hs if h not in gdr and (h.groups.get("code") in ("9", "10", "11") or h.groups.get("ucx"))]
    flush = [h for h in hs if h.groups.get("code") == "5"]
    retry = [h for h in hs if h not in gdr and h not in flush and h not in remote]
    out = []
    if remote:
        out.append(cand("LOG036", "ib_misconfig", 2, remote,
                        detail="The peer's HCA rejected an RDMA request (remote access, invalid request or operation "
                               "error): the connection's settings do not fit the path - an MTU larger than the switches "
                               "carry, a GID of another subnet, or access rights the memory region lacks.",
                        alts=[("p2p_acs_iommu", "GPU memory the peer's NIC may not write (GPUDirect through ACS/IOMMU) "
                                                "is refused the same way: NCCL_NET_GDR_LEVEL=LOC working says so"),
                              ("hardware_fault", "errors on one node or cable only, after a long healthy run, point at "
                                                 "a failing link")]))
    if gdr:
        out.append(cand("LOG038", "p2p_acs_iommu", 2, gdr, params={"what": "RDMA to or from GPU memory failed (GPUDirect)"}, alts=[
            ("hardware_fault", "protection errors only on some nodes, with NCCL_NET_GDR_LEVEL=LOC working, still point at "
                               "ACS/IOMMU; errors that follow one cable or port point at hardware")]))
    if retry:
        # Status 12 (IBV_WC_RETRY_EXC_ERR): the sender never got an ACK, the remote NIC is not reachable over RDMA.
        # Alone, that is most often a fabric NCCL cannot route over (GID index, traffic class, a NIC of another rail:
        # NVIDIA/nccl#426 fixed by NCCL_IB_GID_INDEX); a failing link also reports port events, which the ib_async row
        # reads as hardware_fault at tier 1, so it still comes first when the HCA said so.
        ran = any(w.seq > 100 for w in m.watchdog) or any(done > 100 for _q, done, _e in m.progress.values())
        if ran:  # hundreds of collectives went through first: the fabric worked, so a link or NIC went bad
            out.append(cand("LOG037", "hardware_fault", 2, retry, params={"what": "RDMA transfers ran out of retries "
                                                                              "after the job had been running"}, alts=[
                ("ib_misconfig", "a wrong GID index or traffic class fails from the first transfer, not mid-run"),
                ("peer_process_died", "a peer that died mid-transfer leaves the same completion error: look for its own error")]))
            return out
        out.append(cand("LOG036", "ib_misconfig", 2, retry,
                        detail="RDMA sends to a peer ran out of retries without an acknowledgement: the NICs cannot "
                               "reach each other over RoCE/IB with the GID index, traffic class or NICs chosen.",
                        alts=[("hardware_fault", "errors after a long healthy run, on one node or cable only, or with port "
                                             "events (ibstat error counters) point at a failing link"),
                              ("peer_process_died", "a peer that died mid-transfer leaves the same completion error: "
                                                    "look for its own error")]))
    return out


def _pci_realpath(m: Any, hs: list[Any], found: list[Cand]) -> list[Cand]:
    """Only NCCL's WARN (its init fails there); the same words at INFO level are a probe NCCL recovers from."""
    warn = [h for h in hs if (h.rec.level or "WARN") != "INFO"]
    if not warn:
        return []
    return [own_reading(warn, code="LOG070", params={
        "what": "its topology detection cannot find the GPU's PCI device in /sys (WSL is supported only from NCCL 2.11; "
                "a container or VM may hide /sys)"})]


def _topo(m: Any, hs: list[Any], found: list[Cand]) -> list[Cand]:
    """A topology file NCCL rejected: written for another release, or one NCCL before 2.8 could not read."""
    wrongver = [h for h in hs if "wrong version" in h.ev.text]
    rest = [h for h in hs if h not in wrongver]
    out = []
    if wrongver:
        out.append(cand("LOG071", "other", 2, wrongver,
                        detail="The XML given through NCCL_TOPO_FILE / NCCL_GRAPH_FILE was written for another NCCL "
                               "release; regenerate it with this NCCL (NCCL_TOPO_DUMP_FILE) or stop injecting it."))
    if rest:
        new = bool(m.versions) and all(version_tuple(v) >= (2, 8) for v in m.versions)
        cause, alt = ("other", "nccl_internal_bug") if new else ("nccl_internal_bug", "other")
        tell = ("NCCL before 2.8 filled CPU attributes only for sockets whose GPUs were in use, so a topology file "
                "describing the whole machine failed when fewer GPUs ran; 2.8 fixed it")
        tell2 = ("on NCCL 2.8 or later the file itself is wrong or does not match this machine (often a static XML "
                 "injected by a network plugin through NCCL_TOPO_FILE)")
        out.append(cand("LOG071", cause, 2, rest, alts=[(alt, tell2 if alt == "other" else tell)],
                        detail=tell if cause == "nccl_internal_bug" else tell2))
    return out


def _socket_truncated(m: Any, hs: list[Any], found: list[Cand]) -> list[Cand]:
    g = hs[0].groups
    return [cand("LOG050", "collective_mismatch", 2, hs,
                 detail=f"A peer sent {g.get('got')} bytes where this rank expected {g.get('want')}: the ranks ran "
                        "different operations or sizes, or differ in NCCL_PROTO / NCCL_ALGO / buffer settings.",
                 alts=[("version_mismatch", "ranks on different NCCL versions size their messages differently"),
                       ("launcher_misconfig", "NCCL_* settings that differ between nodes change message sizes: "
                                              "compare the 'set by environment' lines per node")])]


def _mismatched_collective(m: Any, hs: list[Any], found: list[Cand]) -> list[Cand]:
    """NCCL's own mismatch check. When each rank blames a different peer, a program mistake is not the cause:
    data arriving corrupted between the pairs is (GPUDirect through PCIe switches with ACS on)."""
    blamed = {h.groups.get("rank") for h in hs if h.groups.get("rank")}
    reporters = {(h.ev.host, h.rec.pid, h.rec.dev) for h in hs}
    if len(blamed) >= 2 and len(reporters) >= 2:
        return [cand("LOG038", "p2p_acs_iommu", 2, hs, n=4,
                     params={"what": "each rank blames a different peer for a collective mismatch"},
                     detail=f"{len(reporters)} ranks each name a different peer ({', '.join(sorted(blamed, key=int))}): "
                            "a mistake in the program would make them agree on one culprit. Data arriving "
                            "corrupted between the pairs (GPUDirect RDMA through PCIe switches with ACS "
                            "enabled) is the known cause of this pattern.",
                     alts=[("collective_mismatch", "if the ranks named are ones whose code path differs (rank-dependent "
                                                   "control flow), it is a real mismatch: NCCL_DEBUG_SUBSYS=COLL shows each call"),
                           ("hardware_fault", "errors confined to one node pair after ACS is off point at the NIC or cable")])]
    return [cand("LOG050", "collective_mismatch", 2, hs, alts=[
        ("p2p_acs_iommu", "when several ranks each blame a different peer, corrupted GPUDirect transfers are the cause")])]


#: NCCL's collectives whose arguments every rank of the communicator must give alike (Send/Recv pair up instead).
_COLLECTIVES = frozenset({"AllReduce", "Broadcast", "Reduce", "AllGather", "ReduceScatter"})


def _coll_args_differ(m: Any, found: list[Cand], _unused: list[Cand]) -> list[Cand]:
    """Processes whose NCCL_DEBUG_SUBSYS=COLL lines show the same collective call of one communicator with different
    arguments: a mismatch, whatever happens after it.

    enqueue.cc logs every call as "%s: opCount %lx sendbuff %p recvbuff %p count %zu datatype %d op %d root %d comm %p
    [nranks=%d] stream %p" (2.4 to today). A communicator's opCount counts its calls, so the calls with one opCount on
    every rank are one collective, which NCCL requires to have the same operation, count, type, reduction and root
    everywhere; if they differ, the ranks wait on each other forever or exchange the wrong bytes (NVIDIA/nccl#147:
    rank 0 broadcast 25,503,912 elements where the others broadcast 53, under DDP with mixed precision). Only the
    largest communicator is compared (the world's: smaller ones of one size may be different groups doing different
    work), and only processes that show one such communicator."""
    calls = hits(m, "nccl_coll_call")
    if len(calls) < 2:
        return []
    world = max(int(h.groups.get("n") or 0) for h in calls)
    if world < 2:
        return []
    by_proc: dict[tuple[Any, Any], list[Any]] = {}
    for h in calls:
        if int(h.groups.get("n") or 0) == world:
            by_proc.setdefault((h.rec.host or h.ev.source, h.rec.pid), []).append(h)
    at: dict[str, dict[tuple[Any, Any], Any]] = {}
    for proc, hs in by_proc.items():
        if len({h.groups.get("comm") for h in hs}) != 1:
            continue  # two communicators of the world's size in one process: their opCounts are not comparable
        seen: dict[str, list[Any]] = {}
        for h in hs:
            seen.setdefault(str(h.groups.get("opc")), []).append(h)
        for opc, same in seen.items():
            if len(same) == 1 and same[0].groups.get("op") in _COLLECTIVES:
                at.setdefault(opc, {})[proc] = same[0]
    for opc in sorted(at, key=lambda x: int(x, 16)):
        procs = at[opc]
        if len(procs) < 2:
            continue
        shape = {p: tuple(h.groups.get(k) for k in ("op", "count", "dt", "redop", "root")) for p, h in procs.items()}
        kinds: dict[tuple[Any, ...], list[Any]] = {}
        for p, k in shape.items():
            kinds.setdefault(k, []).append(p)
        if len(kinds) < 2:
            continue
        ordered = sorted(kinds.values(), key=len)
        odd, usual = ordered[0], ordered[-1]

        def said(p: Any) -> str:
            h = procs[p]
            g = h.groups
            where = f"{p[0]} pid {p[1]}" + (f" (GPU {h.rec.dev})" if h.rec.dev is not None else "")
            return f"{where}: {g.get('op')} of {g.get('count')} elements, type {g.get('dt')}, root {g.get('root')}"
        lines = [procs[odd[0]], procs[usual[0]]]
        return [cand("LOG050", "collective_mismatch", 2, lines, n=2,
                     detail=f"Call {int(opc, 16) + 1} of the {world}-rank communicator differs between processes: "
                            f"{said(odd[0])}; {said(usual[0])}"
                            + (f" (and {len(usual) - 1} more like it)" if len(usual) > 1 else "")
                            + ". NCCL requires every rank to make the same call; the ranks then wait on each other or "
                              "exchange the wrong bytes. Find where the program's sequence of collectives differs "
                              "between ranks (a rank-dependent branch, tensors of another size or type).",
                     alts=[("version_mismatch", "ranks running different builds of the program or library issue "
                                                "different calls the same way: compare versions on every node")])]
    return []


#: What to do about a process that fell back to NCCL's sockets while its peers use InfiniBand/RoCE.
_SOCKET_FALLBACK_FIX = ("that node's IB stack (driver, /dev/infiniband in the container, NCCL_IB_HCA) is what to fix, or "
                        "NCCL_IB_DISABLE=1 on every node to use sockets everywhere.")


def _networks_differ(m: Any, found: list[Cand], _unused: list[Cand]) -> list[Cand]:
    """Processes of one job that chose different NCCL networks: some InfiniBand/RoCE, others sockets.

    init.cc logs the network a communicator will use ("Using network IB", "Using network Socket", a plugin's name).
    NCCL takes the first network that initialises on each process, so a process that found no usable HCA ("NET/IB :
    No device found.") falls back to sockets while its peers use IB, and every connection between the two kinds fails
    or hangs (NVIDIA/nccl-tests#188: "socketFinalizeAccept: wrong type 4 != 3" between nodes where IB worked on one
    only)."""
    nets: dict[str, dict[tuple[Any, Any], Any]] = {}
    for h in hits(m, "nccl_using_network"):
        nets.setdefault(str(h.groups.get("net")), {}).setdefault((h.rec.host or h.ev.source, h.rec.pid), h)
    if "Socket" not in nets or len(nets) < 2:
        return []
    sock = nets["Socket"]
    other = next(n for n in sorted(nets) if n != "Socket")
    fast = nets[other]
    nodev = [h for h in hits(m, "ib_no_device") if (h.rec.host or h.ev.source, h.rec.pid) in sock]
    lines = nodev[:1] + list(sock.values())[:1] + list(fast.values())[:1]

    def who(ps: Any) -> str:
        return ", ".join(f"{p[0]} pid {p[1]}" for p in sorted(ps, key=str)[:4]) + (" ..." if len(ps) > 4 else "")
    return [cand("LOG036", "ib_misconfig", 3, lines,
                 detail=f"{len(sock)} process(es) use NCCL's socket network ({who(sock)}) while {len(fast)} use "
                        f"{other} ({who(fast)}). NCCL does not mix networks between ranks: connections between the "
                        "two kinds fail or hang. The processes on sockets found no usable InfiniBand/RoCE device"
                        + (" ('NET/IB : No device found.')" if nodev else "") + ": " + _SOCKET_FALLBACK_FIX,
                 alts=[("version_mismatch", "a node whose NCCL or net plugin differs picks another network the same "
                                            "way: compare the 'NCCL version' and NET/Plugin lines")])]


_HSN = re.compile(r"hsn\d{1,3}:")


def _slingshot_sockets(m: Any, found: list[Cand], _unused: list[Cand]) -> list[Cand]:
    """NCCL or RCCL on HPE Slingshot over TCP sockets: its socket network lists the Slingshot NICs (hsn0, hsn1, ...),
    no net plugin was loaded and no InfiniBand device found, and the job failed.

    Slingshot NICs (Cassini, libfabric's cxi provider) carry RDMA only through libfabric: NCCL and RCCL reach them
    through the aws-ofi-nccl / aws-ofi-rccl plugin. Without it they fall back to TCP over the hsn interfaces, which is
    slow and breaks under load (ROCm/rccl#1026: connections between nodes failed once more than one GCD per node took
    part; installing aws-ofi-rccl fixed it). The centres' modules load the plugin (OLCF, LUMI, NERSC, CSCS docs)."""
    if completed(m) or not job_failed(m, found):
        return []
    if any(c.cause and not c.weak and not c.consequence and c.tier <= 3 for c in found):
        return []
    if hits(m, "net_plugin_loaded") or any(h.net_ib for h in m.hosts.values()):
        return []
    hsn = [(host, k, ev) for host, h in sorted(m.hosts.items(), key=lambda x: str(x[0])) for k, ev in h.net_socket.items()
           if _HSN.match(k)]
    if not hsn:
        return []
    names = sorted({k.split(":", 1)[0] for _h, k, _e in hsn})
    evs = [hsn[0][2]] + [h.ev for h in hits(m, "net_plugin_none")[:1]]
    return [Cand("LOG131", "other", 4, evs[0].line, evs, hosts={h for h, _k, _e in hsn if h},
                 params={"ifaces": ", ".join(names[:4]) + (" ..." if len(names) > 4 else "")})]


def _nccl_versions(m: Any, found: list[Cand], _unused: list[Cand]) -> list[Cand]:
    """Ranks that load different NCCL versions (the 'NCCL version' line of each host)."""
    if len(m.versions) < 2:
        return []
    host_versions = {v: h for v, h in m.version_hosts.items() if h}
    # Every version on one and the same host: not ranks of a job that disagree (a host has one NCCL install per
    # environment) but two runs pasted together, or a program whose own NCCL sits beside torch's (vLLM's pynccl loads
    # the libnccl.so.2 on the library path; vllm-project/vllm#5484 pasted a torchrun test with torch's 2.20.5 above a
    # vLLM run on 2.21.5).
    if len(host_versions) == len(m.versions) and len({h for hs in host_versions.values() for h in hs}) == 1:
        return []
    order = sorted(m.versions, key=version_tuple)
    per = "; ".join(f"{v} on {', '.join(sorted(host_versions.get(v, {'?'})))}" for v in order)
    return [Cand("LOG040", "version_mismatch", 1, 0, [m.versions[v] for v in order],
                 params={"what": f"ranks load different NCCL versions ({per})"},
                 hosts={h for v in host_versions.values() for h in v})]


def _net_plugins(m: Any, found: list[Cand], _unused: list[Cand]) -> list[Cand]:
    """Hosts that run different network stacks: one loads an external net plugin (libnccl-net.so: HPC-X's RDMA/SHARP
    plugin, aws-ofi-nccl), another finds none and uses NCCL's internal IB/Socket transport. NCCL's net plugin carries
    every inter-node byte, and two different ones do not speak the same wire protocol: connections between such hosts
    hang or fail (NVIDIA/nccl#1634: a 2-node nccl-tests hang with no error between nodes with and without HPC-X's)."""
    loaded = {h.ev.host: h for h in hits(m, "net_plugin_loaded") if h.ev.host}
    none = {h.ev.host: h for h in hits(m, "net_plugin_none") if h.ev.host}
    with_p, without = set(loaded) - set(none), set(none) - set(loaded)
    if not with_p or not without:
        return []
    a, b = sorted(with_p)[0], sorted(without)[0]
    path = loaded[a].groups.get("path") or loaded[a].groups.get("name") or "an external plugin"
    return [Cand("LOG040", "version_mismatch", 2, 0, [loaded[a].ev, none[b].ev], hosts=with_p | without,
                 params={"what": f"hosts run different NCCL network plugins ({path} on {', '.join(sorted(with_p)[:3])}; "
                                 f"NCCL's internal transport on {', '.join(sorted(without)[:3])})"},
                 detail="Install the same net plugin on every node (or none: NCCL_NET_PLUGIN=none), the same way the "
                        "NCCL library itself must match; LD_LIBRARY_PATH differing between nodes (an HPC-X init script "
                        "sourced on some) is the usual way one ends up with it.")]


def _env_differs(m: Any, found: list[Cand], _unused: list[Cand]) -> list[Cand]:
    """An NCCL setting that differs between ranks (a risk). Settings meant to differ per process are left out."""
    differ = {var: vals for var, vals in m.env.items() if len(vals) > 1 and var not in PER_PROCESS_VARS}
    if not differ:
        return []
    var, vals = sorted(differ.items())[0]
    return [Cand("LOG042", "launcher_misconfig", 8, 10**9, list(vals.values())[:4], weak=True,
                 params={"var": var, "values": ", ".join(sorted(vals)[:4])})]


def _graph_file(m: Any, found: list[Cand], _unused: list[Cand]) -> list[Cand]:
    """NCCL_GRAPH_FILE in a job that failed: NCCL imports fixed rings and trees from that XML instead of searching
    (graph/search.cc reads it in ncclTopoCompute), and one written for another machine or GPU count breaks the
    communicator (graph/search.cc "XML Import Channel : dev N not found", or a failed init with no line of its own).
    NCCL's developers keep it for experiments, not production; images ship it in /etc/nccl.conf."""
    vals = m.env.get("NCCL_GRAPH_FILE")
    if not vals or not (m.unmatched_errors or any(not c.weak and not c.consequence for c in found)):
        return []
    path = sorted(vals)[0]
    return [Cand("LOG071", "other", 5, 10**9, list(vals.values())[:2],
                 detail=f"NCCL_GRAPH_FILE={path} makes NCCL use the rings and trees written in that file instead of "
                        "computing them for this machine; a file made for another GPU count or topology fails here. "
                        "Unset it (check /etc/nccl.conf and ~/.nccl.conf too).",
                 alts=[("nccl_internal_bug", "if the job still fails with NCCL_GRAPH_FILE unset, the error lines before "
                                             "this one name the cause")])]


def _nvml_hidden(m: Any, hs: list[Any], found: list[Cand]) -> list[Cand]:
    hidden = [h for h in hs if "PciBusId" in h.ev.text and "Not Found" in str(h.groups.get("err") or "")]
    rest = [h for h in hs if h not in hidden]
    out = [own_reading(rest)] if rest else []
    if hidden:
        out.append(cand("LOG066", "launcher_misconfig", 3, hidden, params={
            "what": "NVML cannot see the other GPUs of this node from this process: each task is confined to its own "
                    "GPU (Slurm's --gpus-per-task with ConstrainDevices, a container given only its /dev/nvidiaN), so "
                    "NCCL cannot find NVLink or P2P between the local ranks"},
            detail="Give the tasks of one node all of its GPUs (Slurm: --gpus-per-node, or --gpu-bind=none with "
                   "--gpus-per-task; a container: every /dev/nvidiaN) and let each rank pick its own with LOCAL_RANK.",
            alts=[("nccl_internal_bug", "with every GPU visible to every task, an NVML that does not know a GPU CUDA "
                                        "reports is NCCL's or the driver's")]))
    return out


def _ras_counts(m: Any, hs: list[Any], found: list[Cand]) -> list[Cand]:
    """ncclras's MISMATCH details: which way the ranks named one by one differ from the most common count.

    ncclras prints the most common operation counts first and the ranks outside them one by one. Ranks that launched
    fewer operations than the rest are behind: still in their own code (a sleep, a slow step, a data loader), or
    stuck before their next collective; the rest ran ahead, since NCCL launches are asynchronous (the RAS example's
    rank 7, made to sleep, at operation 60 while seven ranks were at 64). Ranks that launched more than the rest
    issued collectives the others never did: a mismatch."""
    rows = hits(m, "ras_rank_count")
    many = [int(h.groups["many"]) for h in rows if h.groups.get("many")]
    single = [(int(h.groups["rank"]), int(h.groups.get("n") or 0), h) for h in rows if h.groups.get("rank")]
    if not many or not single:
        return [own_reading(hs)]
    usual = many[0]  # ncclras prints the most frequent count first
    behind = [x for x in single if x[1] < usual]
    if not behind or len(behind) < len(single):
        return [own_reading(hs)]
    names = ", ".join(f"rank {r}" for r, _n, _h in behind[:4]) + (" and others" if len(behind) > 4 else "")
    return [Cand("LOG130", "collective_timeout_straggler", 4, hs[0].seq, [hs[0].ev] + [h.ev for _r, _n, h in behind[:2]],
                 ranks={r for r, _n, _h in behind},
                 params={"who": names, "op": group(hs, "op") or "collective", "n": str(behind[0][1]), "usual": str(usual)},
                 alts=[("collective_mismatch", "if the ranks behind skipped a collective the others called (a "
                                               "rank-dependent branch), they are not late but off the sequence")])]


_NET_KINDS = {"3": "socket", "4": "IB"}


def _socket_kinds(m: Any, hs: list[Any], found: list[Cand]) -> list[Cand]:
    """One side of a network connection on NCCL's IB network (NetIb, 4), the other on its socket network (NetSocket,
    3): the ranks do not use the same network. NCCL takes the first network that initialises in each process, so
    they differ when the settings that choose it (NCCL_IB_DISABLE, NCCL_NET, NCCL_IB_HCA) reach some ranks only
    (NVIDIA/nccl-tests#360: exported in the launch script, not passed with mpirun -x) or when a node has no usable
    HCA ('NET/IB : No device found', NVIDIA/nccl-tests#188)."""
    pair = {str(group(hs, "got")), str(group(hs, "want"))}
    if pair != {"3", "4"}:
        return []
    ours = _NET_KINDS[str(group(hs, "want"))]
    theirs = _NET_KINDS[str(group(hs, "got"))]
    nodev = hits(m, "ib_no_device")
    what = (f"this rank uses NCCL's {ours} network and a peer connected over its {theirs} network: the ranks chose "
            "different networks")
    if nodev:
        return [cand("LOG036", "ib_misconfig", 3, hs + nodev[:1],
                     detail=f"{what}. A process that found no usable InfiniBand/RoCE device ('NET/IB : No device "
                            "found') falls back to sockets while its peers use IB: " + _SOCKET_FALLBACK_FIX,
                     alts=[("launcher_misconfig", "NCCL_IB_DISABLE or NCCL_NET set for some ranks only picks the "
                                                  "network the same way")])]
    return [cand("LOG066", "launcher_misconfig", 3, hs, params={"what": what},
                 detail="NCCL takes the first network that initialises in each process; ranks end up on different "
                        "ones when NCCL_IB_DISABLE, NCCL_NET or NCCL_IB_HCA reach some ranks only. mpirun passes the "
                        "environment to remote ranks only with -x VAR (srun passes it; a per-node launch script must "
                        "set it on every node); 'Using network' in NCCL_DEBUG=INFO output shows each rank's choice.",
                 alts=[("ib_misconfig", "if one node has no usable HCA, NCCL chose sockets there by itself")])]


#: Settings that take a transport away from NCCL.
_DISABLES = ("NCCL_P2P_DISABLE", "NCCL_SHM_DISABLE", "NCCL_NET_DISABLE_INTRA", "NCCL_IB_DISABLE", "NCCL_P2P_LEVEL",
             "NCCL_NET", "NCCL_NVLS_ENABLE", "NCCL_COLLNET_ENABLE")


def _no_transport(m: Any, hs: list[Any], found: list[Cand]) -> list[Cand]:
    """No transport between two ranks, with the settings in force that take transports away, where the logs show
    them ("NCCL_P2P_DISABLE set by environment to 1")."""
    set_ = [f"{k}={sorted(m.env[k])[0]}" for k in _DISABLES if m.env.get(k)]
    return [cand("LOG133", "other", 2, hs, params={"a": group(hs, "a", "a2") or "?", "b": group(hs, "b", "b2") or "?"},
                 detail=("Settings in force: " + ", ".join(set_) + ". " if set_ else "")
                        + "NCCL tries P2P, shared memory, the network and CollNet for each pair of ranks and uses the "
                          "first that accepts it; here every one refused.")]


def _proxy_pool_deadlock(m: Any, hs: list[Any], found: list[Cand]) -> list[Cand]:
    """ncclLocalOpAppend in a stack counts only beside the proxy thread's sleep in ncclProxyGetPostedOps in the same
    file: a launching thread there alone may be waiting on a proxy that is busy."""
    srcs = {h.ev.source for h in hits(m, "proxy_posted_wait")}
    both = [h for h in hs if h.ev.source in srcs]
    return [own_reading(both)] if both else []


def _cumem_host_probe(m: Any, hs: list[Any], found: list[Cand]) -> list[Cand]:
    """The probe's frame counts only in a crash (a crash handler's head, a bus error, a launcher's record of a signal):
    the same name in an INFO trace of a working job says nothing."""
    crashed = hits(m, "crash_head") or hits(m, "sigbus") or any(f.signal for f in m.elastic)
    return [own_reading(hs)] if crashed else []


def _comm_id_reach(m: Any, hs: list[Any], found: list[Cand]) -> list[Cand]:
    """NCCL_COMM_ID's address on no local network. From a container on docker's default bridge (its only address in
    172.17.0.0/16) that is the container's network, not the address: the host's address is on no interface inside
    it, and no other host reaches 172.17.x (NVIDIA/nccl#331)."""
    bridged = sorted({k for hi in m.hosts.values() for k in hi.bootstrap if k.split(":", 1)[-1].startswith("172.17.")})
    if not group(hs, "addr") or not bridged:
        return [own_reading(hs)]
    c = cand("LOG020", "wrong_interface", 2, hs,
             params={"what": f"{bridged[0]}, an address on docker's default bridge network, where no other host "
                             f"reaches it and NCCL_COMM_ID's {group(hs, 'addr')} is on no interface"},
             detail="The container runs on docker's default bridge: its only interface has a private 172.17.x address "
                    "behind NAT. Run the containers with --network=host (and --ipc=host), or on a network the hosts "
                    "route between, so NCCL sees the host's own interfaces.")
    c.evidence.extend(hi.bootstrap[k] for hi in m.hosts.values() for k in hi.bootstrap if k in bridged[:1])
    return [c]


def _bad_family(m: Any, hs: list[Any], found: list[Cand]) -> list[Cand]:
    """ncclSocketInit refusing an address "with family N": a handle from a peer whose NCCL lays it out differently, or
    (NVIDIA/nccl#1837, reproduced by its reporter) an address never filled in because NCCL_SOCKET_IFNAME matched no
    interface and NCCL went on without one: then no "Bootstrap : Using <iface>" line appears."""
    ifname = m.env.get("NCCL_SOCKET_IFNAME")
    if ifname and not any(hi.bootstrap for hi in m.hosts.values()) and len(m.versions) < 2:
        val = sorted(ifname)[0]
        return [cand("LOG021", "wrong_interface", 2, hs, params={"iface": val},
                     detail=f"NCCL_SOCKET_IFNAME={val} matched no interface on this host (no 'Bootstrap : Using' line "
                            "follows it), so NCCL later connected to an address it never filled in.",
                     alts=[("version_mismatch", "ranks on different NCCL versions exchange handles this NCCL cannot read "
                                                "and fail the same way: compare the 'NCCL version' lines per host")])]
    # One NCCL on one host lays every handle out the same way. There a garbage handle on a point-to-point channel
    # ("Channel 01/1 : 0[0] -> 1[1] [send] via NET/Socket/0") is a peer that sent something else at that step: sends and
    # receives that do not pair (NVIDIA/nccl#2057: both ranks called ncclSend before ncclRecv, outside
    # ncclGroupStart/End; grouping them, or swapping the order on one rank, fixed it).
    hosts = {h for h in m.hosts if h}
    p2p = [ev for ev in m.transports.values() if "[send] via" in ev.text or "[receive] via" in ev.text]
    if p2p and len(hosts) <= 1 and len(m.versions) < 2:
        c = cand("LOG050", "collective_mismatch", 3, hs,
                     detail="The address came from a peer's point-to-point set-up, on one host with one NCCL: the "
                            "peer was not at the matching step. Sends and receives between two ranks must pair: put "
                            "each exchange in ncclGroupStart/ncclGroupEnd (torch: batch_isend_irecv), or order them "
                            "send-then-recv on one rank and recv-then-send on the other.",
                     alts=[("nccl_internal_bug", "if every send has its receive in the same group, the handle was "
                                                 "corrupted inside NCCL")])
        c.evidence.append(p2p[0])
        return [c]
    return [cand("LOG040", "version_mismatch", 3, hs, params={"what": "a peer sent a connection handle this NCCL cannot read"},
                 alts=[("nccl_internal_bug", "with one NCCL version on every node (compare the 'NCCL version' lines per "
                                             "host), a corrupted handle points at NCCL or at the framework broadcasting it")])]


def _host_alloc(m: Any, hs: list[Any], found: list[Cand]) -> list[Cand]:
    """NCCL's malloc refused: a limit on the process's memory, or (a size beyond any host's memory) a size NCCL
    computed wrong."""
    size = group(hs, "size", "size2")
    n = int(size) if size and size.isdigit() else None
    if n is not None and n >= 2**40:
        return [cand("LOG070", "nccl_internal_bug", 3, hs, params={
            "what": f"it asked for {n / 2**40:.0f} TiB of host memory, more than any host has"},
            detail="No host has this much memory: the size NCCL asked for was computed from a wrong value (a count "
                   "or a size that wrapped around, a corrupt topology or configuration). Note what NCCL was doing "
                   "just before (its INFO lines) and move to a newer NCCL.",
            alts=[("other", "a program that hands NCCL an absurd count or size (a negative number cast to size_t) "
                            "makes it ask for such memory too")])]
    what = "memory" if n is None else f"{n / 2**30:.1f} GiB" if n >= 2**30 else f"{n / 2**20:.1f} MiB"
    return [cand("LOG140", "other", 3, hs, params={"what": what})]


def _msg_truncated(m: Any, hs: list[Any], found: list[Cand]) -> list[Cand]:
    """A bootstrap message of the wrong size, in NCCL's bootstrap: NVSHMEM's copy of that code (its bootstrap_uid
    module) is another library, where a peer that exited mid-exchange leaves it (a consequence of that peer's error)."""
    own = [h for h in hs if "nvshmem" not in h.ev.text.lower()]
    return [own_reading(own)] if own else []


def _nvshmem_unreachable(m: Any, hs: list[Any], found: list[Cand]) -> list[Cand]:
    """NVSHMEM reached no peer: its network transport between nodes, CUDA peer-to-peer within one. Its summary
    ("building transport map failed") alone is also what a PE prints when a peer left the exchange first."""
    named = [h for h in hs if h.groups.get("peer")]
    local = local_ranks_only(m)
    what = (f"GPU {group(named, 'gpu')} reaches none of its transports to peer GPU {group(named, 'peer')}" if named
            else "it could not build its map of which transport reaches each peer GPU")
    net = ("ib_misconfig", "between nodes, NVSHMEM's InfiniBand transport: the HCAs (ibv_devinfo), GPUDirect RDMA "
                           "(lsmod | grep nvidia_peermem, or a dma-buf capable driver) and NVSHMEM_REMOTE_TRANSPORT")
    p2p = ("p2p_acs_iommu", "within a node, CUDA peer-to-peer between the GPUs (nvidia-smi topo -p2p r; ACS and "
                            "the IOMMU on PCIe systems)")
    cause, alts = (p2p[0], [net]) if local else (net[0], [p2p])
    if not named:
        alts.append(("peer_process_died", "if another process's own error came first, it left the exchange and this "
                                          "is its echo"))
    return [cand("LOG142", cause, 3 if named else 4, named or hs, params={"what": what}, alts=alts)]


def _nccl_setting(m: Any, hs: list[Any], found: list[Cand]) -> list[Cand]:
    """A setting NCCL refused, named."""
    lst = group(hs, "list", "list2")
    if lst is not None:
        bad = group(hs, "token")
        # Which variable: the one NCCL said it took from the environment with this very value.
        var = next((v for v in ("NCCL_ALGO", "NCCL_PROTO") if lst in m.env.get(v, ())), "NCCL_ALGO or NCCL_PROTO")
        names = {"NCCL_ALGO": "an algorithm", "NCCL_PROTO": "a protocol"}.get(var, "an algorithm or protocol")
        what = (f"{var} ('{lst}') " + (
            "has an entry after the first without a collective prefix ('allreduce:...')" if bad is None else
            f"names '{bad}' before ':', which is not a collective NCCL knows" if group(hs, "kind") == "prefix" else
            f"names '{bad}', which is not {names} this NCCL knows"))
    else:
        what = (f"NCCL_NET_FORCE_MERGE names NICs it cannot merge ({group(hs, 'merge')})" if group(hs, "merge") else
                "NCCL_WORK_FIFO_DEPTH is below its minimum")
    return [cand("LOG143", "other", 1, hs, params={"what": what})]

SIGNATURES = (
    # NCCL's RAS service (src/ras/ras.cc) rejects a RAS connection from a process of another NCCL release: "NCCL
    # version mismatch with remote peer %s (local: %s, remote %s)" -- two installs in one job, said outright.
    sig("ras_version_mismatch", ("version mismatch with remote peer",),
       r"NCCL version mismatch with remote peer (?P<peer>\S{1,80}) \(local: (?P<local>[\d.]{3,12}), remote (?P<remote>[\d.]{3,12})\)",
       "version_mismatch", ROOT, 2, "processes of one job run different NCCL releases",
       code="LOG040", params=lambda hs: {"what": f"this process runs NCCL {group(hs, 'local')}, the one at "
                                                 f"{group(hs, 'peer')} runs {group(hs, 'remote')}"}),
    # The ncclras client's status report (src/ras/client_support.cc), which users paste when a job hangs: the DEAD
    # section ("%d job process%s considered dead (unreachable via the RAS network)", then "Process %d on node %s
    # managing GPU..." for each) and a communicator's MISMATCH details ("Communicator ranks have different %s
    # operation counts", "%d ranks have not launched any operations": some ranks are behind, or called other
    # collectives).
    sig("ras_report_dead", ("considered dead (unreachable via the RAS network)",),
       r"(?P<n>\d{1,7}) job process(?:es are| is) considered dead \(unreachable via the RAS network\)",
       "peer_process_died", ROOT, 5, "NCCL's RAS service cannot reach some processes of the job any more",
       code="LOG060", params=lambda hs: {"what": f"{group(hs, 'n')} process(es) of the job are dead or unreachable "
                                                 "(ncclras: the DEAD section names their node and GPU)"}),
    sig("ras_report_counts", ("operation counts", "have not launched any operations"),
       r"Communicator ranks have different (?P<op>\w{1,20}) operation counts"
       r"|(?P<n>\d{1,7}) ranks? ha(?:ve|s) not launched any operations",
       "collective_mismatch", ROOT, 4, "the ranks of a communicator launched different numbers of collectives",
       code="LOG050", build=_ras_counts,
       alts=[("collective_timeout_straggler", "a rank that is only late (still in its own code) also shows fewer "
                                              "operations: its stack tells which")]),
    # The lines under it: the most common counts as "%d ranks have launched up to operation %ld", the ranks outside
    # them one by one as "Rank %d has launched up to operation %ld -- GPU ... managed by process ..." (or "has not
    # launched any operations"). Read by _ras_counts.
    ctx("ras_rank_count", ("launched up to operation", "has not launched any operations"),
        r"^\s{0,8}(?:(?P<k>\d{1,7}) ranks have launched up to operation (?P<many>\d{1,20})"
        r"|Rank (?P<rank>\d{1,7}) has (?:launched up to operation (?P<n>\d{1,20})|not launched any operations))",
        "how many operations of one kind each rank of a communicator launched (ncclras)"),
    # misc/socket.cc socketFinalizeAccept: WARN("socketFinalizeAccept: wrong type %d != %d", type, sock->type) (2.28:
    # "socketFinalizeAccept from %s: wrong type %d != %d", naming the peer): the
    # connection that arrived says it is of another kind than the listening socket (include/socket.h: 3 NetSocket, 4
    # NetIb). 4 != 3: a peer on NCCL's IB network connected to this rank's socket network: the ranks chose different
    # networks. Read by _socket_kinds.
    sig("socket_wrong_type", ("wrong type",),
       r"socketFinalizeAccept(?: from \S{1,80})?: wrong type (?P<got>\d{1,3}) != (?P<want>\d{1,3})",
       "launcher_misconfig", ROOT, 3, "a peer connected with another kind of NCCL connection than this rank expects",
       code="LOG066", build=_socket_kinds),
    sig("comm_id_invalid", ("NCCL_COMM_ID", "pair found", "same subnet as remote address"),
       r"Invalid NCCL_COMM_ID|No valid (?:<IPv4_or_hostname>|\[IPv6\]):<?port>? pair found"
       r"|No interface found in the same subnet as remote address (?P<addr>[^\s<]{1,80})",
       "rendezvous_unreachable", ROOT, 2, "NCCL_COMM_ID (the bootstrap root's address) is malformed or not reachable from this host",
       code="LOG011", params=_comm_id, build=_comm_id_reach,
       detail="NCCL_COMM_ID names the bootstrap root as <ipv4>:<port>, [<ipv6>]:<port> or <host>:<port>; every rank "
              "must reach it over one of its own interfaces.",
       alts=[("wrong_interface", "if the address is right, NCCL_SOCKET_IFNAME may exclude the only interface on that network")]),
    # RCCL (init.cc) also checks the GPU's virtual id: "Duplicate virtualId detected : rank %d and rank %d both on GPU
    # device %lx virtualId %d".
    sig("duplicate_gpu", ("Duplicate GPU", "Multiple Ranks are using the same GPU", "using the same NVML device",
                          "Duplicate virtualId"),
       r"Duplicate GPU detected ?: rank (?P<a>\d+) and rank (?P<b>\d+) both on CUDA device (?P<bus>\w+)"
       r"|Duplicate virtualId detected ?: rank (?P<a2>\d+) and rank (?P<b2>\d+) both on GPU device (?P<bus2>\w+)"
       r"|Multiple Ranks are using the same GPU|communicator has multiple ranks using the same NVML device",
       "duplicate_gpu", ROOT, 1, "two ranks use the same GPU",
       build=_dup_gpu),
    # -- InfiniBand / RoCE -------------------------------------------------------------------------
    sig("ib_qp", ("ibv_modify_qp", "GID", "gid"),
       r"(?:Call to )?ibv_modify_qp failed|[Gg][Ii][Dd] ?[Ii]ndex.{0,40}(?:invalid|not (?:found|valid)|fail)|[Ii]nvalid GID|ncclIbGetGidIndex\w* failed",
       "ib_misconfig", ROOT, 2, "an RDMA queue pair could not be brought up (GID index, routing or HCA selection)",
       build=_ib_qp),
    sig("gid_table", ("GID[",),
       r"GID\[\s*(?P<idx>\d+)\]:\s+(?P<gid>[0-9a-fA-F:.]+),\s*RoCE\s*(?P<ver>v\d)",
       None, CONTEXT, 9, "a RoCE GID table entry"),
    sig("ib_async", ("async event", "Async event", "catastrophic", "port error", "LINK_DOWN", "async fatal event"),
       r"Got async event ?: ?(?P<what>[\w ]{1,40})|local catastrophic error|\bport error|LINK_DOWN"  # not "import error"
       # (UCX's uct/ib/base/ib_device.c: "IB Async event on %s: %s")
       r"|IB Async event on (?P<dev3>\S{1,40}): (?P<what3>[\w ]{1,60})"
       r"|(?P<dev>[\w\-]{1,32}:\d{1,3}) async fatal event(?: on \w{1,4} \([^)]{0,40}\))?[^:]{0,200}: (?P<what2>[\w ]{1,60})",
       "hardware_fault", ROOT, 1, "the HCA reported port or device events (a flapping or failing link)",
       build=_ib_async),
    # ibv_wc_status_str(IBV_WC_RETRY_EXC_ERR) is "transport retry counter exceeded"; UCX's mlx5 transport
    # (ib_mlx5_log.c) says "Transport retry count exceeded on DEV:PORT/RoCE (synd 0x15 vend 0x81 ...)".
    sig("ib_completion", ("completion", "retry exceeded", "Retry Exceeded", "retry count", "error on "),
       r"Got completion (?:from peer \S+ )?with (?:error ?|status=)(?:\w+\()?(?P<code>\d+)\)?(?:.{0,80}?vendor[ _]err(?:or)? ?=?(?P<vendor>\d+))?"
       r"|[Tt]ransport retry count(?:er)? exceeded|[Rr]etry [Ee]xceeded"
       # UCX's mlx5 transport names the completion's syndrome: "Remote access error on mlx5_0:1/RoCE (synd 0x13 ...)".
       r"|(?P<ucx>Remote access error|Remote invalid request error|Remote OP error|Local protection error) on [\w\-]{1,32}:\d{1,3}",
       "hardware_fault", ROOT, 2, "an RDMA work request completed with an error",
       build=_ib_completion),
    sig("ib_incompatible", ("incompatible devices", "is incompatible with the local", "mixed local Net device counts",
                           "mixed local CollNet device counts"),
       r"Attempted to (?:connect|merge) incompatible devices|device is incompatible with the local"
       r"|Detected mixed local (?:Coll)?Net device counts across ranks \(min (?P<min>\d+), max (?P<max>\d+)\)",
       "ib_misconfig", ROOT, 2, "the ranks' RDMA NICs do not match (link types mixed, or a different NIC count per node)",
       build=_ib_incompatible),
    # misc/ibvwrap.cc: "Call to ibv_reg_dmabuf_mr failed with error Cannot allocate memory". A DMA-BUF registration
    # pins no pages of the process (the kernel's ib_umem_dmabuf_get, unlike ib_umem_get, is not charged to
    # RLIMIT_MEMLOCK): ENOMEM is the GPU's exported aperture (BAR1) or the NIC's translation tables running out for
    # the size NCCL registers (vllm-project/vllm#19613: an oversized NCCL_BUFFSIZE; the default fixed it).
    sig("ib_reg_dmabuf_nomem", ("ibv_reg_dmabuf_mr",),
       r"ibv_reg_dmabuf_mr\w* failed with error (?:Cannot allocate memory|ENOMEM)",
       "other", ROOT, 2, "the NIC could not map that much GPU memory through DMA-BUF",
       code="LOG102",
       detail="NCCL registers its buffers with the NIC through DMA-BUF, which pins nothing in the process, so the "
              "locked-memory limit is not what ran out: the GPU's BAR1 aperture or the NIC's memory translation "
              "tables could not take the registration. It grows with NCCL_BUFFSIZE, the channel count "
              "(NCCL_MIN_NCHANNELS/NCCL_MAX_NCHANNELS) and buffers a program registers itself."),
    sig("ib_reg_mr", ("ibv_reg_mr", "ibv_reg_dmabuf_mr"),
       r"(?:Call to )?ibv_reg_(?:dmabuf_)?mr\w* failed with error (?P<err>Bad address|Invalid argument|Operation not permitted|Operation not supported)",
       "p2p_acs_iommu", ROOT, 3, "registering GPU memory with the NIC (GPUDirect RDMA) failed",
       code="LOG038", build=_ib_reg_mr,
       params=lambda hs: {"what": f"the NIC could not register GPU memory for GPUDirect RDMA ({group(hs, 'err')})"},
       detail="ibv_reg_mr on a GPU buffer needs the nvidia-peermem module (or DMA-BUF support) and a PCIe path the "
              "IOMMU lets through.",
       alts=[("p2p_driver_bug", "GPUs without GPUDirect RDMA support (most consumer boards) fail the same "
                                "way: NCCL_NET_GDR_LEVEL=LOC (or NCCL_NET_GDR_DISABLE=1) avoids it"),
             ("ib_misconfig", "lsmod | grep nvidia_peermem empty: load the module on every node")]),
    # init.cc (before 2.19): WARN("Error: network %s not found.", NCCL_NET); plugin/net.cc (2.19 on):
    # WARN("Failed to initialize any NET plugin"). NCCL's internal Socket network always initialises unless
    # NCCL_NET (or a plugin) rules it out, so either line says the network asked for is not on this node. Not
    # the INFO "Failed to initialize NET plugin IB" of a healthy job that falls back to Socket.
    # A plugin's network ("AWS Libfabric", aws-ofi-nccl's) is there only when its library was loaded: NCCL looks
    # for libnccl-net-<NCCL_NET_PLUGIN>.so, and a name that matches no file leaves the internal networks alone.
    sig("net_not_found", ("network", "NCCL_NET", "any NET plugin"),
       r"Error: network (?P<net>[^\n]{0,60}?) not found|NCCL_NET.{0,40}not found|Failed to initialize any NET plugin",
       "ib_misconfig", ROOT, 1, "NCCL_NET names a network (IB, a plugin) this node cannot load",
       code="LOG036", build=_net_not_found),
    # -- versions, bootstrap, topology --------------------------------------------------------------
    sig("nccl_version_mismatch", ("Mismatched NCCL version", "NCCL version mismatch"),
       r"Mismatched NCCL version detected|NCCL version mismatch",
       "version_mismatch", ROOT, 1, "ranks run different NCCL versions",
       code="LOG040", params=lambda hs: {"what": "NCCL itself found ranks on different versions"}),
    # init.cc: WARN("Invalid config blocking attribute value %d"). NCCL >= 2.17's ncclConfig_t marks an unset field
    # with INT_MIN (-2147483648); an older libnccl.so loaded in the same process (two nvidia-nccl-cu* wheels, a stray
    # library on LD_LIBRARY_PATH) rejects it. The program was built against one NCCL and runs another.
    sig("nccl_config_undef", ("Invalid config blocking attribute",),
       r"Invalid config blocking attribute value -2147483648",
       "version_mismatch", ROOT, 1, "the process loaded an older libnccl than torch was built against",
       code="LOG040", params=lambda hs: {"what": "torch passed a newer NCCL's config (blocking = INT_MIN, unset) to an "
                                                 "older libnccl loaded in the same process"},
       detail="Two NCCL libraries are installed (e.g. nvidia-nccl-cu11 and nvidia-nccl-cu12 side by side, or a "
              "libnccl.so.2 on LD_LIBRARY_PATH) and the older one was loaded: `pip list | grep nccl`, and keep the "
              "one that matches torch (torch.cuda.nccl.version())."),
    # "invalid data type" is NCCL 1.x's ncclGetErrorString(ncclInvalidType); NCCL 2 has no such code (a type it does
    # not know is "invalid argument" with the WARN "%s : invalid type %d"). A program built for NCCL 2 (Horovod,
    # TensorFlow) whose process loaded an NCCL 1 library (conda's nccl 1.x ahead on the library path) gets it for its
    # first collective: the enums of the two releases differ.
    sig("nccl1_loaded", ("invalid data type",),
       r"\bnccl\w{2,40} failed: invalid data type\b|NCCL error[^\n]{0,200}?\binvalid data type\b",
       "version_mismatch", ROOT, 2, "the process loaded an NCCL 1.x library under a program built for NCCL 2",
       code="LOG040", params=lambda hs: {"what": "the program was built for NCCL 2 and the process loaded an NCCL 1.x "
                                                 "library (its 'invalid data type' error)"},
       detail="Find which libnccl the process loads (`ldd` on the framework's library, LD_LIBRARY_PATH, a conda "
              "environment's own nccl package) and keep only the NCCL 2 release the program was built against."),
    sig("bad_family", ("is neither AF_INET",),
       r"with family (?P<fam>\d+) is neither AF_INET",
       "version_mismatch", ROOT, 3, "a peer sent a connection handle this NCCL cannot read, or NCCL found no interface",
       build=_bad_family),
    # socket.cc / socket.h: WARN("[socketInit: ]Socket creation failed : %s", strerror(errno)) after socket(family, ...)
    # with the family of the address NCCL picked. EAFNOSUPPORT: the kernel has no such family (IPv6 disabled while
    # the chosen interface, or NCCL_COMM_ID, is IPv6; or no interface was found, leaving the address unset). Other
    # errnos (EMFILE, ENOBUFS) are resource limits, not the interface.
    sig("socket_family", ("Socket creation failed",),
       r"Socket creation failed : Address family not supported by protocol",
       "wrong_interface", ROOT, 2, "NCCL made a socket for an address family this kernel does not support",
       code="LOG020",
       params=lambda hs: {"what": "its address is of a family this kernel does not support (an IPv6 address with "
                                  "IPv6 disabled, or no usable interface found at all)"},
       detail="NCCL opens its sockets with the family of the address it chose (from NCCL_SOCKET_IFNAME, the first "
              "usable interface, or NCCL_COMM_ID); the kernel refused that family.",
       alts=[("rendezvous_unreachable", "an IPv6 NCCL_COMM_ID on a host without IPv6 fails the same way: give the "
                                        "root's IPv4 address (NCCL_SOCKET_FAMILY=AF_INET keeps NCCL on IPv4)")]),
    sig("msg_truncated", ("Message truncated",),
       r"Message truncated ?: received (?P<got>[\d,]+) bytes instead of (?P<want>[\d,]+)",
       "nccl_internal_bug", ROOT, 3, "a bootstrap message had an unexpected size",
       code="LOG070", params=lambda hs: {"what": "a bootstrap message arrived with the wrong size"}, build=_msg_truncated,
       alts=[("version_mismatch", "mixed NCCL versions exchange structures of different sizes and fail exactly like this: "
                                  "compare 'NCCL version' on every node before blaming NCCL")]),
    sig("topo_attr", ("Attribute", "XML", "xml"),
       r"Attribute (?P<attr>\S+) of node (?P<node>\S+) not found|XML (?:[Pp]arse|[Ff]ile) [Ee]rror|[Ee]rror parsing XML"
       r"|XML (?:Topology|Graph) has wrong version",
       "nccl_internal_bug", ROOT, 2, "NCCL could not use the topology description (often an injected NCCL_TOPO_FILE)",
       build=_topo),
    # graph/xml.cc: "Could not open XML topology file %s : %s" (NCCL_TOPO_FILE) and "Could not open XML graph file %s :
    # %s" (NCCL_GRAPH_FILE): the setting names a file this process cannot read (not mounted in the container, a path
    # of another node). A setting's fault, not NCCL's.
    sig("topo_file_missing", ("Could not open XML",),
       r"Could not open XML (?P<kind>topology|graph) file (?P<path>\S{1,300}) : (?P<err>[^\n]{1,80})",
       "other", ROOT, 1, "the topology or graph file an NCCL setting names cannot be opened",
       code="LOG071",
       detail="NCCL_TOPO_FILE (topology) or NCCL_GRAPH_FILE (graph) names a file this process cannot open: mount it "
              "into the container at that path on every node, or unset the variable (a network plugin or image "
              "may set NCCL_TOPO_FILE for another instance type)."),
    # NCCL's checks of its own bookkeeping, which no setting or peer can fail: proxy.cc's op pools and lists ("Proxy
    # append mismatch", "Proxy append out of bound(s)", "Proxy append on running operation", "List loop at element",
    # "Active/Free list loop", "Element %d of pool %d has been lost", "Could not find pool of op", "Inactive op has next
    # set!", "Unable to post incomplete proxy op chain", its async responses ("Mismatched response size for opId",
    # "Couldn't find opId", "Attempting to dequeue nonexistent async opId"), enqueue.cc's "Unknown pattern" and
    # "Sendrecv plan not aligned for self", init.cc's "P2p schedule creation has bugs.", graph/search.cc's "Could not
    # find rev link for", net_ib.cc's "could not find mr %p inside cache" and "sendReq(%p)->events=...". A defect of
    # that release, or the program writing over NCCL's memory.
    sig("nccl_self_check", ("Proxy append", "loop at element", "has been lost", "Could not find pool of op",
                            "Inactive op has next set", "incomplete proxy op chain", "response size for opId",
                            "Couldn't find opId", "nonexistent async opId", "Unknown pattern", "plan not aligned for self",
                            "schedule creation has bugs", "Could not find rev link", "inside cache of"),
       r"Proxy append (?:mismatch|out of bounds?|on running operation)|(?:Active |Free )?[Ll]ist loop at element \d"
       r"|Element \d{1,9} of pool \d{1,9} has been lost|Could not find pool of op|Inactive op has next set"
       r"|Unable to post incomplete proxy op chain|Mismatched response size for opId|Couldn't find opId"
       r"|Attempting to dequeue nonexistent async opId|Unknown pattern(?: for collective)? \d"
       r"|Sendrecv plan not aligned for self|P2p schedule creation has bugs|Could not find rev link for"
       r"|could not find mr \S{1,20} inside cache of",
       "nccl_internal_bug", ROOT, 6, "one of NCCL's checks of its own bookkeeping failed",
       code="LOG070", params=lambda hs: {"what": "a check of its own bookkeeping failed"},
       detail="The message is NCCL finding its own state inconsistent (its proxy's operation pools and lists, its "
              "plans, its topology search): nothing a setting or a peer controls. Move to another NCCL release; if it "
              "stays, look for the program writing past its buffers into NCCL's memory (compute-sanitizer).",
       alts=[("other", "memory corruption by the program itself (an out-of-bounds write into NCCL's host memory)")]),
    # init.cc (2.30.3 on, where NCCL_IGNORE_NET_MISMATCH defaults to 1): the same count check at INFO, "Detected mixed
    # local Net device counts across ranks (min %d, max %d). Ignoring due to NCCL_IGNORE_NET_MISMATCH." after "Rank %d
    # has %d local Net devices (max %d)." for each rank short of NICs. Read by _net_counts_ignored.
    ctx("net_counts_ignored", ("mixed local Net device counts", "local Net devices (max"),
        r"Detected mixed local Net device counts across ranks \(min (?P<min>\d{1,4}), max (?P<max>\d{1,4})\)\. Ignoring"
        r"|Rank (?P<rank>\d{1,7}) has (?P<n>\d{1,4}) local Net devices \(max (?P<max2>\d{1,4})\)",
        "ranks have different numbers of network devices and NCCL went on"),
    # graph/xml.cc's parser reads only the files NCCL_TOPO_FILE and NCCL_GRAPH_FILE name (its own topology it builds
    # in memory): "XML Parse : Unexpected EOF", "Expected (double) quote.", "expected >, got '%c'", "unterminated %s",
    # "Unexpected value with name %s". The file is malformed or cut short.
    sig("topo_xml_parse", ("XML Parse :",),
       r"XML Parse : (?P<what>Unexpected EOF|Expected \(double\) quote|expected >, got '.{1,4}'|unterminated \S{1,40}"
       r"|Unexpected value with name \S{1,60})",
       "other", ROOT, 1, "the topology or graph file an NCCL setting names is not well-formed XML",
       code="LOG071",
       detail="NCCL parses text XML only from the files NCCL_TOPO_FILE (topology) and NCCL_GRAPH_FILE (graph) name: "
              "the file is malformed or cut short. Use a complete file written for this machine (an NCCL_TOPO_DUMP_FILE "
              "dump of it is one), or unset the variable."),
    # transport.cc selectTransport: WARN("No transport found for rank %d[%lx] -> rank %d[%lx]") when P2P, SHM, NET
    # and CollNet all refuse the pair: settings that disable each one NCCL could use between them.
    sig("no_transport", ("No transport found for rank", "has no transport for"),
       r"No transport found for rank (?P<a>\d{1,7})\[[0-9a-fA-F]{1,16}\] -> rank (?P<b>\d{1,7})"
       r"|Rank (?P<a2>\d{1,7}) has no transport for \w{1,8} peer (?P<b2>\d{1,7})",
       "other", ROOT, 2, "NCCL found no transport it may use between two ranks",
       code="LOG133", build=_no_transport),
    # A crash under misc/cudawrap.cc's ncclCuMemHostEnable (2.23 on): at its first communicator NCCL probes whether
    # the driver can allocate host memory through cuMem (cuMemCreate with a host NUMA location), and some driver and
    # system combinations crash inside that call (NVIDIA/nccl#2106: NUMA nodes without memory; NCCL_CUMEM_HOST_ENABLE=0
    # avoided it). Read only with a crash in the same logs.
    sig("cumem_host_probe", ("ncclCuMemHostEnable",),
       r"\bncclCuMemHostEnable\b",
       "other", ROOT, 3, "the CUDA driver crashed in NCCL's probe of host cuMem allocations", code="LOG081",
       params=lambda hs: {"what": "the driver crashed in cuMemCreate under NCCL's probe of host memory allocations "
                                  "(ncclCuMemHostEnable)"},
       build=_cumem_host_probe,
       detail="NCCL (2.23 and later) asks the driver, at its first communicator, to create host memory through cuMem "
              "on the process's NUMA node; the crash is inside the driver's cuMemCreate. NCCL_CUMEM_HOST_ENABLE=0 skips "
              "that path; a newer driver, or a system whose NUMA nodes all have memory, avoids the fault.",
       alts=[("nccl_internal_bug", "if the crash stays with NCCL_CUMEM_HOST_ENABLE=0, NCCL's own set-up")]),
    # dev_runtime.cc (2.29 on): a program built against a newer NCCL's device API running with an older libnccl
    # ("NCCL library is too old. This application was compiled with NCCL version %s, but is running with NCCL %s").
    sig("nccl_lib_too_old", ("NCCL library is too old", "NCCL library is not backwards compatible"),
       r"NCCL library is (?:too old|not backwards compatible)\. This application was compiled with NCCL version "
       r"(?P<built>\S{1,20}),? but is running with NCCL (?P<run>\S{1,20})",
       "version_mismatch", ROOT, 1, "the program was built against another NCCL than the one it loaded",
       code="LOG040", params=lambda hs: {"what": f"the program was built against NCCL {group(hs, 'built') or '?'} "
                                                 f"and loaded {group(hs, 'run') or 'another'}"}),
    # NVSHMEM (DeepEP's and other expert-parallel kernels' communication library; NVIDIA/nvshmem src/host/topo/topo.cpp)
    # asks each of its transports whether it reaches every peer GPU and stops when none does: "%s:%d: [GPU %d] Peer GPU
    # %d is not accessible, exiting ..."; init.cu then reports "building transport map failed". Between nodes the
    # reaching transport is its InfiniBand one (IBRC, IBGDA; libfabric), which needs the HCAs and GPUDirect RDMA
    # (nvidia-peermem or dma-buf) on every node (deepseek-ai/DeepEP#223: nvidia-peermem not loaded); within a node,
    # CUDA peer-to-peer between the GPUs.
    sig("nvshmem_peer_unreachable", ("is not accessible, exiting", "building transport map failed"),
       r"\[GPU (?P<gpu>\d{1,5})\] Peer GPU (?P<peer>\d{1,5}) is not accessible, exiting"
       r"|(?P<map>building transport map failed)",
       "ib_misconfig", ROOT, 3, "NVSHMEM found no transport that reaches a peer GPU", build=_nvshmem_unreachable),
    # NVSHMEM shares its GPU memory with the processes it takes for this host's through Unix sockets at
    # /tmp/nvshmem-socket-<sender>-<receiver> (src/host/util/sockets.cpp), and takes a process for this host's when the
    # hash of its hostname is this one's (util.cpp nvshmemu_getHostHash hashes gethostname() alone). sendmsg() failing
    # with ENOENT, perror's "IPC failure: Sending data over socket failed: No such file or directory", then
    # NVSHMEMI_IPC_CHECK's "Fatal IPC Failure", means the peer's socket is not in this /tmp: hosts with one hostname
    # (deepseek-ai/DeepEP#316, two nodes both named the same) or processes of one host in containers with their own /tmp.
    sig("nvshmem_ipc_peer_absent", ("Sending data over socket failed: No such file",),
       r"IPC failure: Sending data over socket failed: No such file or directory",
       "hostname_resolution", ROOT, 2, "NVSHMEM took a process for this host's whose socket is not on this host",
       code="LOG148",
       alts=[("launcher_misconfig", "processes of one host started in separate containers, each with its own /tmp: "
                                    "share /tmp (and the IPC namespace, --ipc=host) between them")]),
    # NCCL 2.8-2.11 ran a remote allocation service on every rank (bootstrap.cc ncclRemoteMemAllocationService): a
    # thread accepting any connection on the bootstrap listening address, reading a size from it and cudaCalloc-ing
    # that many bytes for the peer. A connection that is not NCCL's (a port scanner, a cloud's health probe) closes
    # early or sends a meaningless size: the read fails ("Connection closed by remote peer") or the allocation does
    # (alloc.h "Cuda failure 'out of memory'"), and the thread logs "[Rem Allocator] Allocation failed (segment %d,
    # fd %d)". NCCL 2.12 removed the service (NVIDIA/nccl#844: Azure ML, fixed by NCCL 2.17).
    sig("nccl_rem_alloc", ("[Rem Allocator] Allocation failed",),
       r"\[Rem Allocator\] Allocation failed \(segment -?\d{1,4}, fd -?\d{1,7}\)",
       "nccl_internal_bug", ROOT, 1, "NCCL's remote allocation service (2.8-2.11) served a connection that was not a "
                                     "peer's", code="LOG149"),
    # Settings NCCL refuses outright (ncclInvalidUsage): enqueue.cc (2.14-2.21) "'NCCL_WORK_FIFO_DEPTH=%d' is too small.
    # Minimum value is %d"; graph/topo.cc (2.26 on) "TOPO/NET : Could not force merge NICs %s. Please specify a valid
    # NCCL_NET_FORCE_MERGE string."; graph/tuning.cc's parseList (2.24 on) for NCCL_ALGO and NCCL_PROTO, at every
    # communicator's init: "Unrecognized element token \"%s\" when parsing \"%s\"" (an algorithm or protocol it does
    # not know), "Unrecognized prefix token ..." (a collective it does not know before ':'), "All entries except the
    # first must have a prefix: \"%s\"". Before 2.24 an unknown name was ignored without a word.
    sig("nccl_setting_rejected", ("NCCL_WORK_FIFO_DEPTH=", "NCCL_NET_FORCE_MERGE", "token \"", "must have a prefix: \""),
       r"'(?P<fifo>NCCL_WORK_FIFO_DEPTH=-?\d{1,12})' is too small\. Minimum value is \d{1,9}"
       r"|Could not force merge NICs (?P<merge>\S{0,200})\. Please specify a valid NCCL_NET_FORCE_MERGE string"
       r"|Unrecognized (?P<kind>element|prefix) token \"(?P<token>[^\"]{0,80})\" when parsing \"(?P<list>[^\"]{0,300})\""
       r"|All entries except the first must have a prefix: \"(?P<list2>[^\"]{0,300})\"",
       "other", ROOT, 2, "NCCL refused one of its settings", build=_nccl_setting),
    # The dynamic loader's "LIB: undefined symbol: ncclX" (ImportError on `import torch`, or a program's own start):
    # LIB was linked against an NCCL that has ncclX, and the libnccl.so.2 found first at run time is older
    # (pytorch/pytorch#104417: torch 2.2's libtorch_cuda.so needs ncclCommRegister, NCCL 2.19, and loaded an older
    # libnccl from LD_LIBRARY_PATH).
    sig("nccl_symbol_missing", ("undefined symbol: nccl", "undefined symbol: pnccl"),
       r"(?:(?P<lib>[^\s:]{1,300}\.so[\w.]{0,12}): )?undefined symbol: (?P<sym>p?nccl[A-Z]\w{1,60})",
       "version_mismatch", ROOT, 1, "a library was built against a newer NCCL than the libnccl the process loaded",
       code="LOG040", params=lambda hs: {"what": (
           f"{str(group(hs, 'lib') or 'the program').rsplit('/', 1)[-1]} needs {group(hs, 'sym')}, which the libnccl "
           "it loaded lacks: an older NCCL than the one it was built against")},
       detail="The dynamic loader found a libnccl.so.2 without a function the library was linked against: the NCCL "
              "it loads is older than the one it was built with. A libnccl on LD_LIBRARY_PATH (a CUDA toolkit's, a "
              "conda package's, /usr/lib's) shadows the one the build expects (torch's nvidia-nccl-cu* wheel): `ldd` "
              "on the library shows which file it takes.",
       alts=[("other", "if the missing symbol is one every NCCL has (ncclCommInitRank, ncclAllReduce), the library "
                       "was linked without NCCL at all: its build, not the versions")]),
    # A stack dump (gdb, py-spy --native) of a hung process with the launching thread in proxy.cc's ncclLocalOpAppend,
    # which yields until the proxy thread frees a slot of the op pool it shares with it, while the proxy thread sleeps
    # in ncclProxyGetPostedOps waiting for ops to be posted. Each waits for the other: ops were lost from the pool.
    # NVIDIA/nccl#2353 (2.29.2 on aarch64: a compare-and-swap that may fail spuriously leaked freed ops; fixed in 2.29.3).
    sig("proxy_pool_deadlock", ("ncclLocalOpAppend",),
       r"(?:^|[\s`])ncclLocalOpAppend\b",
       "nccl_internal_bug", ROOT, 4, "the thread launching NCCL's work waits for a free proxy op while the proxy thread "
                                    "sleeps", code="LOG070", build=_proxy_pool_deadlock,
       params=lambda hs: {"what": "its proxy op pool is empty while the proxy thread sleeps (ncclLocalOpAppend waits "
                                  "on ncclProxyGetPostedOps)"},
       detail="The thread that launches NCCL's work is in ncclLocalOpAppend, yielding until the proxy thread frees one "
              "of the ops they share, and the proxy thread is asleep in ncclProxyGetPostedOps because nothing was "
              "posted: neither can move, so ops were lost from the pool. NCCL 2.29.2 lost them on aarch64 (a "
              "compare-and-swap allowed to fail spuriously; fixed in 2.29.3). Move to a newer NCCL."),
    ctx("proxy_posted_wait", ("ncclProxyGetPostedOps",), r"(?:^|[\s`])ncclProxyGetPostedOps\b",
        "a stack frame of NCCL's proxy thread waiting for ops to be posted"),
    # A stack dump (py-spy, gdb, lldb) of a hung process with a thread inside NCCL's communicator abort: ncclCommAbort
    # (commReclaim, commFree joining NCCL's threads) or torch's ProcessGroupNCCL::abort waiting on it. The abort itself
    # did not return: NCCL releases with abort defects (2.18's multithreaded abort, NVIDIA/nccl#992; 2.25.1's,
    # pytorch/pytorch#149153) do this after whatever error made torch abort.
    sig("comm_abort_stuck", ("ncclCommAbort", "ProcessGroupNCCL::abort", "commReclaim"),
       r"(?:^|[\s`])(?:c10d::ProcessGroupNCCL::abort|(?:c10d::NCCLComm::)?ncclCommAbort|commReclaim)(?: ?\(| \+ \d)",
       "nccl_internal_bug", ROOT, 5, "a thread of the hung process is inside NCCL's communicator abort, which did not return",
       code="LOG070", params=lambda hs: {"what": "a thread is stuck in the communicator's abort (ncclCommAbort never "
                                                 "returned)"},
       detail="A stack taken while the process hung shows it aborting its NCCL communicator and waiting there. Aborting "
              "is how torch ends a communicator after an error or a timeout; an abort that never returns is a defect of "
              "that NCCL release (fixed abort hangs: 2.19.1, 2.26.2). Look above the abort for the error that started it, "
              "and move to a newer NCCL."),
    # NCCL's misc/nvmlwrap.cc: "nvmlDeviceGetHandleByIndex() failed: %s" / "...ByPciBusId() failed: %s". NVML does
    # not know the GPU CUDA gave NCCL: the NCCL 2.5 preview's index lookup under CUDA_VISIBLE_DEVICES (NVIDIA/nccl#255),
    # fixed in the release; or a container exposing the device to CUDA and not to NVML. By bus id, "Not Found" is a
    # GPU of this node this process may not open: NCCL looks up every local rank's GPU to find NVLink and P2P paths,
    # and a task confined to its own GPU (Slurm's --gpus-per-task with ConstrainDevices, a container given only its
    # own /dev/nvidiaN) cannot see the others (NVIDIA/nccl#1066).
    sig("nvml_handle_failed", ("nvmlDeviceGetHandleBy",),
       r"nvmlDeviceGetHandleBy(?:Index|PciBusId)(?:_v2)?\(\) failed: (?P<err>[^\n]{1,80})",
       "nccl_internal_bug", ROOT, 3, "NCCL could not find its GPU in NVML",
       code="LOG070", params=lambda hs: {"what": f"NVML does not know the GPU CUDA gave NCCL ({(group(hs, 'err') or 'failed').strip()})"},
       build=_nvml_hidden,
       detail="NCCL asks NVML for the GPU it runs on. An NCCL release that looks GPUs up by index (the 2.5 preview) "
              "gets the wrong one under CUDA_VISIBLE_DEVICES; the released version looks them up by PCI bus id.",
       alts=[("other", "in a container, NVML must see the same GPUs as CUDA: expose the device nodes and "
                       "/usr/lib libnvidia-ml of the host's driver (nvidia-container-toolkit)")]),
    sig("ring_broken", ("does not loop back to start", "does not contain rank"),
       r"ring (?P<ring>\d{1,6}) does not (?:loop back to start|contain rank)",
       "nccl_internal_bug", ROOT, 3, "ranks computed rings that do not agree (NCCL's topology search differs between ranks)",
       code="LOG070", params=lambda hs: {"what": "the ranks computed rings that do not join up"},
       detail="Each rank searches the topology on its own; when their results disagree the rings do not close. Known "
              "NCCL defects (uninitialised link speeds, fixed in 2.20) do this.",
       alts=[("hostname_resolution", "ranks that disagree on which of them share a node (NCCL_HOSTID set, "
                                     "identical host names) compute different rings"),
             ("version_mismatch", "ranks on different NCCL versions search differently: compare 'NCCL version' per node")]),
    sig("peer_mapping", ("peer mapping resources exhausted", "TooManyPeers", "TOO_MANY_PEERS"),
       r"peer mapping resources exhausted|cudaErrorTooManyPeers|CUDA_ERROR_TOO_MANY_PEERS",
       "nccl_internal_bug", ROOT, 3, "more GPUs than CUDA lets one GPU map as peers over PCIe (8)",
       code="LOG070", params=lambda hs: {"what": "a GPU ran out of CUDA peer mappings (at most 8 peers over PCIe)"},
       detail="CUDA lets one GPU map at most 8 peers over PCIe; NCCL releases that open P2P to every GPU of a larger "
              "machine hit it.",
       alts=[("p2p_driver_bug", "NCCL_P2P_LEVEL=PXB (or NCCL_P2P_DISABLE=1) keeps P2P to near GPUs only")]),
    sig("socket_truncated", ("message truncated : receiving",),
       r"NET/Socket : (?:peer (?P<peer>\S{1,120}) )?message truncated : receiving (?P<got>\d+) bytes instead of (?P<want>\d+)",
       "collective_mismatch", ROOT, 2, "a peer sent more data than this rank posted for: the ranks' operations or settings differ",
       build=_socket_truncated),
    sig("nccl_error_class", ("internal error", "ncclInternalError"),
       # torch's "NCCL error in: ..., internal error - please report ...", NCCL's own class line, and nccl-tests'
       # NCCLCHECK ("%s: Test NCCL failure %s:%d '%s / %s'" with ncclGetErrorString(ncclInternalError)).
       r"ncclInternalError: Internal check failed|NCCL error[^\n]{0,200}?internal error - please report(?:[^\n]{0,200}?NCCL version (?P<ver>\d{1,2}\.\d{1,3}(?:\.\d{1,3})?))?"
       # vLLM's pynccl wrapper: RuntimeError(f"NCCL error: {ncclGetErrorString(result)}"), after ncclCommInitRank too.
       r"|\bNCCL error: internal error\b"
       # Horovod's "ncclCommInitRank failed: internal error"; CuPy's NcclError names NCCL's enum.
       r"|\bnccl\w{2,40} failed: internal error\b|\bNCCL_ERROR_INTERNAL_ERROR\b"
       r"|Test NCCL failure \S{1,200}:\d{1,6} 'internal error\b"
       # torch before NCCL 2.12's wording, and torch 1.x's "NCCL Error 3: internal error" (ncclInternalError is 3).
       r"|NCCL Error 3: internal error|NCCL error in: \S{1,300}, internal error, NCCL version (?P<ver2>\d{1,2}\.\d{1,3}(?:\.\d{1,3})?)",
       "nccl_internal_bug", ROOT, 8, "NCCL reported an internal error and no other line says why",
       build=_internal_error),
    # ncclMaxSharedMem in enqueue.cc (ncclInitKernelsForDevice): [W]ARN/INFO("[cudaArch %d ]ncclMaxSharedMem %d exceeds
    # device/fn maxSharedMem %zu") and ncclSystemError: NCCL's kernels ask for more shared memory than this GPU gives
    # a kernel. NCCL 2.25 on Blackwell GPUs (RTX 50xx, sm_120) does this; 2.26.2 fixed it (NVIDIA/nccl#1637).
    # enqueue.cc (ncclInitKernelsForDevice): INFO (2.25) / WARN (later) "[cudaArch %d ]ncclMaxSharedMem %d exceeds
    # device/fn maxSharedMem %zu", then ncclSystemError: NCCL's kernels ask for more shared memory than this GPU
    # gives a kernel. NCCL 2.25 on Blackwell RTX 50xx (sm_120) does this; 2.26.2 fixed it (NVIDIA/nccl#1637). A
    # context row because 2.25 printed it at INFO level; _smem_exceeds makes it the cause.
    ctx("nccl_smem_exceeds", ("ncclMaxSharedMem",),
        r"ncclMaxSharedMem (?P<want>\d{1,9}) exceeds device/fn maxSharedMem (?P<have>\d{1,9})",
        "NCCL's kernels need more shared memory than this GPU allows (an NCCL release older than the GPU)"),
    # graph/xml.cc (ncclTopoGetPciNode / getPciPath, 2.7-2.9): WARN("Could not find real path of %s", busPath) when
    # realpath() of /sys/class/pci_bus/<domain:bus>/../../<busid> fails, then ncclSystemError: NCCL cannot read the
    # GPU's PCI device in sysfs. WSL exposes no PCI tree there and NCCL supported WSL only from 2.11; a container or
    # VM whose /sys hides the host's PCI devices fails the same way. The INFO line a NIC gives
    # ("NCCL INFO Could not find real path of /sys/class/net/eth0/device") is harmless.
    sig("nccl_pci_realpath", ("Could not find real path of /sys/class/pci_bus",),
       r"Could not find real path of (?P<path>/sys/class/pci_bus/[\w:./]{1,200})",
       "nccl_internal_bug", ROOT, 2, "NCCL could not find the GPU's PCI device in sysfs (WSL before NCCL 2.11, or a /sys that hides it)",
       build=_pci_realpath,
       detail="NCCL builds its topology from /sys/class/pci_bus. Under WSL2 that tree does not exist: NCCL before 2.11 "
              "does not support WSL, so use a newer PyTorch/NCCL there. In a container or VM, mount the host's /sys or "
              "describe the machine with NCCL_TOPO_FILE.",
       alts=[("other", "on a native Linux host with NCCL 2.11 or newer, a container or VM that hides /sys gives the same "
                       "line: mount /sys or set NCCL_TOPO_FILE")]),
    # graph/topo.h (ncclTopoIdToIndex): WARN("Could not find %s with id %lx", topoNodeTypeStr[type], id) -- a search
    # result or a peer's graph names a device (a NET, a GPU) this rank's topology does not have, and init fails.
    # NCCL 2.25/2.26 do this across nodes on InfiniBand (NVIDIA-NeMo/Speech#13996, fixed by 2.27.3). Not graph/
    # search.cc's "Could not find a path for pattern N, falling back to simple order", which NCCL recovers from.
    sig("nccl_topo_id_missing", ("with id",),
       r"Could not find (?P<kind>GPU|PCI|NVS|CPU|NIC|NET|GIN) with id (?P<id>(?:0x)?[0-9a-fA-F]{1,20})\b",
       "nccl_internal_bug", ROOT, 3, "NCCL's topology search referred to a device this rank's topology does not have",
       code="LOG070", params=lambda hs: {"what": f"its topology has no {group(hs, 'kind') or 'device'} with id "
                                                 f"{group(hs, 'id') or '?'}, which its graph search expected"},
       detail="Each rank searches its own topology; when a search result or a peer's graph names a device this rank "
              "does not have, init fails. NCCL 2.25-2.26 do this on multi-node InfiniBand jobs (fixed in 2.27).",
       alts=[("version_mismatch", "ranks on different NCCL releases exchange graphs they do not agree on: compare "
                                  "'NCCL version' on every node"),
             ("ib_misconfig", "nodes that select different NICs (NCCL_IB_HCA, a port down on one node) have different "
                              "NET ids")]),
    # graph/paths.cc (ncclTopoCheckP2p / path setup): WARN("Failed to find reverse path from remNode %d/%lx nlinks %d
    # to node %d/%lx") -- NCCL's topology has a link one way and none back, which its search cannot use. A release
    # that predates the platform (mila-iqia/milabench#183: NCCL 2.14 on H100, fine with 2.18) builds such a graph.
    sig("nccl_reverse_path", ("Failed to find reverse path",),
       r"Failed to find reverse path from remNode (?P<rem>\d{1,3}/[0-9a-fA-F]{1,16}) nlinks \d{1,4} to node (?P<node>\d{1,3}/[0-9a-fA-F]{1,16})",
       "nccl_internal_bug", ROOT, 3, "NCCL's topology has a link with no way back between two devices",
       code="LOG070", params=lambda hs: {"what": f"its topology has a link from {group(hs, 'rem') or '?'} to "
                                                 f"{group(hs, 'node') or '?'} with no path back"},
       detail="NCCL builds its topology from /sys and NVML; a release older than the platform (H100 support came with "
              "NCCL 2.15) or a virtualised PCI tree gives it links it cannot follow back. Another NCCL release, "
              "usually a newer one, reads the machine right.",
       alts=[("other", "a topology injected with NCCL_TOPO_FILE that does not describe this machine fails the same "
                       "way: unset it")]),
    sig("nccl_mismatched_collective", ("Mismatched collective",),
       r"Mismatched collective detected.{0,80}?around rank (?P<rank>\d+)",
       "collective_mismatch", ROOT, 2, "NCCL saw a peer run a different operation",
       build=_mismatched_collective),
    sig("launcher_rank_count", ("Bootstrap Root", "already checked in"),
       r"Bootstrap Root : mismatch in (?:rank count|info)|rank (?P<rank>\d+) of (?P<n>\d+) ranks has already checked in",
       "launcher_misconfig", ROOT, 1, "the launcher started a different number of ranks than the job expects, or the same rank twice",
       code="LOG062", params=lambda hs: {"what": "NCCL's bootstrap saw the wrong number of ranks, or one rank twice"}),
    # ncclGetErrorString (src/misc/... / nccl.h.in): ncclSystemError -> "unhandled system error", ncclRemoteError ->
    # "remote process exited or there was a network error". Torch echoes them in "NCCL error in: FILE:LINE, <text>";
    # programs echo them in their own words (pytorch/pytorch#23363 printed "unhanled system error"). Read only when
    # nothing else explains the failure (see _system_error); the WARN lines before it, when there are any, say more.
    ctx("nccl_system_error", ("system error", "ncclSystemError", "remote process exited", "ncclRemoteError",
                              "unhanled system", "System call"),
        r"(?P<sys>\bunhand?led system error\b|ncclSystemError|System call \(e\.g\. socket, malloc\) or external library call failed)"
        r"|remote process exited or there was a network error|ncclRemoteError",
        "NCCL's error code for a failed system call or a dropped peer connection, with no reason given (read by the "
        "nccl_error_code model rule, which names a cause only when nothing else does)"),
    # NCCLCHECK's trace (include/checks.h): INFO("%s:%d -> %d", __FILE__, __LINE__, res) on every frame an error
    # passes through. A chain through bootstrap.cc/.cu with result 2 (ncclSystemError) or 6 (ncclRemoteError) is a
    # socket of NCCL's bootstrap that failed, even where the WARN line naming the call was not posted (NVIDIA/nccl#1000:
    # only "misc/socket.cc:567 -> 2 ... bootstrap.cc:270 -> 2" lines, fixed by NCCL_SOCKET_IFNAME). The loader
    # offers these trace lines to this row alone; _system_error reads them as the bare system error.
    ctx("nccl_bootstrap_chain", ("bootstrap.c",),
        r"\bbootstrap\.(?:cc|cu|cpp):\d{1,6} -> (?P<code>[26])\b",
        "NCCL's error trace passed through its bootstrap with a system (2) or remote (6) result"),
    # -- from NCCL's message catalogue (every WARN format string of 2.4 to 2.30, read for what it means) ------------
    # group.cc / enqueue.cc (2.12 on): a group holds a send to (or receive from) the rank itself with no matching
    # receive (send) in the same group. Point-to-point calls that do not pair up: the program's, not the network's.
    sig("self_sendrecv", ("to self without a matching",),
       r"Trying to (?P<op>send|recv) to self without a matching (?:recv|send)",
       "collective_mismatch", ROOT, 2, "a rank sent to (or received from) itself with no matching call in the same group",
       code="LOG050",
       detail="NCCL pairs a rank's send to itself with its receive from itself inside one group "
              "(ncclGroupStart/End, torch's batch_isend_irecv). One of the two is missing: the program's send/recv "
              "lists differ in length or order on this rank."),
    # enqueue.cc: "Error : no algorithm/protocol available" (2.7-2.23), "... for function %s with datatype %s.%s%s"
    # (2.26 on, naming NCCL_ALGO / NCCL_PROTO when set). See _no_algo.
    sig("no_algo", ("o algorithm/protocol available",),
       r"[Nn]o algorithm/protocol available(?: for function (?P<fn>\w{1,40}) with datatype (?P<dt>\w{1,40})\.(?P<why>[^\n]{0,300}))?",
       "other", ROOT, 2, "NCCL found no algorithm and protocol that can run a collective",
       build=_no_algo),
    # net_ib.cc ncclIbRoceGetVersionNum (2.23-2.25): "NET/IB: open failed in ncclIbRoceGetVersionNum: %s" / "read
    # failed ...": NCCL reads /sys/class/infiniband/<dev>/ports/<port>/gid_attrs/types/<index> to learn a GID's RoCE
    # version, and in containers (macvlan or SR-IOV sub-interfaces) entries of the host's GID table are missing or
    # unreadable. NCCL 2.26 handles those entries (NVIDIA/nccl#1573).
    sig("roce_gid_types", ("ncclIbRoceGetVersionNum",),
       r"(?P<op>open|read) failed in ncclIbRoceGetVersionNum: (?P<err>[^\n]{1,80})",
       "nccl_internal_bug", ROOT, 2, "NCCL could not read a RoCE GID's type from sysfs (a container's partial GID table)",
       code="LOG070", params=lambda hs: {"what": "it could not read a RoCE GID's type from sysfs "
                                                 f"({group(hs, 'err') or 'error'}), as NCCL 2.23-2.25 do in containers"},
       detail="NCCL 2.23-2.25 read every GID's RoCE version from /sys/class/infiniband/<dev>/ports/<port>/gid_attrs/"
              "types/, which containers with macvlan or SR-IOV sub-interfaces show only in part. NCCL 2.26 handles "
              "it; before that, NCCL_IB_GID_INDEX set to an index every container has avoids the lookup.",
       alts=[("ib_misconfig", "if the GID index NCCL picked is not the container's own, NCCL_IB_GID_INDEX fixes it "
                              "on any release")]),
    # net_ib.cc (2.21-2.23): NICs merged into one virtual device differ between the two ends ("Can't merge net
    # devices with different link_layer", "Local mergedDev=%s has a different number of devices=%d as remoteDev=").
    sig("ib_merge_mismatch", ("Can't merge net devices", "has a different number of devices"),
       r"Can't merge net devices with different link_layer|mergedDev=?\s?\S{1,64} has a different number of devices",
       "ib_misconfig", ROOT, 2, "the two ends of an RDMA connection merged different NICs (InfiniBand with RoCE, or "
       "a different count)",
       code="LOG036",
       detail="NCCL merges a rank's NICs into one virtual device and expects the same on both ends. Nodes whose "
              "NICs differ (an InfiniBand and a RoCE port, or fewer NICs) need the same NCCL_IB_HCA everywhere, or "
              "NCCL_IB_MERGE_NICS=0."),
    # graph/search.cc (2.12-2.18): "Rank %d requires NIC %d but that NIC is not available for rank %d": the ranks of
    # a node disagree on the NICs they can use (NCCL_IB_HCA or the devices a container sees differ between ranks).
    sig("nic_unavailable", ("but that NIC is not available",),
       r"Rank (?P<a>\d{1,7}) requires NIC (?P<nic>\d{1,4}) but that NIC is not available for rank (?P<b>\d{1,7})",
       "ib_misconfig", ROOT, 2, "ranks of one node see different NICs",
       code="LOG036",
       detail="NCCL's search gave a channel a NIC that another rank of the node does not have: the ranks were "
              "started with different NCCL_IB_HCA / NCCL_SOCKET_IFNAME values, or their containers expose different "
              "RDMA devices. Give every rank of a node the same NICs."),
    # -- context ----------------------------------------------------------------------------------
    # proxy.cc: WARN("[Proxy Service %d] Failed to execute operation %s from rank %d, retcode %d") and the service
    # thread's "Error encountered progressing operation=%s, res=%d, closing connection": the proxy could not set up
    # a connection for a rank (Connect/Setup of a transport) with a system (2) or internal (3) result. The WARN line
    # before it, when there is one, says which call; alone it reads as NCCL's bare system error (_system_error).
    ctx("nccl_proxy_failed", ("Failed to execute operation", "Error encountered progressing operation"),
        r"Failed to execute operation (?P<op>Connect|Setup|SharedInit|Init|ConnectAll) from rank \d{1,7}, retcode [23]\b"
        r"|Error encountered progressing operation=(?P<op2>Connect|Setup|SharedInit|Init), res=[23], closing connection",
        "NCCL's proxy could not set up a transport connection for a rank (a failed system call or check)"),
    # rdma-core (libibverbs/init.c): "libibverbs: Warning: no userspace device-specific driver found for %s" -- a
    # uverbs device with no provider library to drive it. Harmless for a job that never uses RDMA; read by
    # _internal_error when NCCL then fails with nothing else said.
    # aws-ofi-nccl (nccl_ofi_ofiutils.c): "OFI fi_getinfo() call failed: %s" with fi_strerror; -FI_ENODATA ("No data
    # available") is libfabric offering no provider that matches what the plugin asks for (EFA on AWS): no EFA device
    # in this process's view (a container started without /dev/infiniband, an instance type without EFA) or a
    # libfabric without the provider (aws/aws-ofi-nccl#1020).
    # Newer releases open the provider through their ofiutils helper and say "Couldn't open a fabric provider(
    # using ofiutils helper). RC: %d, ERROR: %s" for the same -FI_ENODATA.
    sig("ofi_plugin_no_provider", ("fi_getinfo() call failed", "Couldn't open a fabric provider"),
       r"fi_getinfo\(\) call failed: (?P<err>No data available|[\w ]{1,60})"
       r"|Couldn't open a fabric provider(?: using ofiutils helper)?\. RC: -?\d{1,5}, ERROR: (?P<err2>No data available)",
       "other", ROOT, 3, "NCCL's OFI net plugin found no libfabric provider it can use on this node",
       code="LOG089", params=lambda hs: {"what": f"NCCL's OFI plugin found no libfabric provider "
                                                 f"(fi_getinfo: {group(hs, 'err', 'err2') or 'failed'})"},
       alts=[("ib_misconfig", "if fi_info -p efa lists the devices inside the job, the provider name or FI_* settings "
                              "the job passes do not match them")]),
    # libfabric's EFA provider lists the node's RDMA devices at fi_getinfo (prov/efa/src/efa_device.c): one it cannot
    # open ("efa_device_construct_gid(): ibv_open_device failed! errno: 2", then efa_device_list_initialize()'s
    # "efa_device_construct_gid failed for device_idx N, err=-2") ends the whole list before libfabric 2.3, so the
    # provider offers nothing and fi_getinfo returns -61 (ofiwg/libfabric#12708: a pod on an EFA node that also saw
    # the node's ConnectX devices through /dev/infiniband; NCCL fell back to TCP; libfabric PR #12744 goes on past it).
    sig("efa_device_open", ("efa_device_construct_gid failed", "efa_device_construct_gid():"),
       r"efa_device_construct_gid failed for device_idx (?P<idx>\d{1,4}), err=(?P<err>-?\d{1,5})"
       r"|efa_device_construct_gid\(\):\d{1,6}<warn> ibv_open_device failed! errno: (?P<errno>\d{1,5})",
       "other", ROOT, 3, "libfabric's EFA provider could not open an RDMA device it lists, and offered none",
       code="LOG089", params=lambda hs: {"what": "libfabric's EFA provider could not open an RDMA device it lists "
                                                 f"(errno {group(hs, 'errno') or str(group(hs, 'err') or '?').lstrip('-')}) "
                                                 "and so offered none"},
       detail="One RDMA device the EFA provider cannot open (errno 2: its device file is not in the container) ends "
              "its device list in libfabric releases without ofiwg/libfabric#12744, and NCCL goes on over TCP or "
              "fails. Expose only the EFA devices to the container (the EFA device plugin, not a hostPath of the "
              "host's whole /dev/infiniband), or use a libfabric that skips such a device.",
       alts=[("ib_misconfig", "the EFA devices themselves unopenable (the efa driver not loaded on the node)")]),
    # libfabric's EFA provider about its peer's libfabric: the help text of FI_EFA_ERR_INVALID_PKT_TYPE_ZCPY_RX
    # (prov/efa/src/efa_strerror.c: "This error is detected locally. Please consider matching the local and remote
    # libfabric versions, or turning off the zero-copy recv feature by setting FI_EFA_USE_ZCPY_RX=0") and efa_av.c's
    # "An incoming packet does NOT have connection ID in its header. This means the peer is using an older version
    # of libfabric." The nodes run different EFA installers.
    sig("efa_libfabric_versions", ("matching the local and remote libfabric versions",
                                   "does NOT have connection ID in its header"),
       r"Please consider matching the local and remote libfabric versions"
       r"|An incoming packet does NOT have connection ID in its header",
       "version_mismatch", ROOT, 2, "the EFA nodes of the job run different libfabric versions",
       code="LOG126", build=_efa_versions),
    # aws-ofi-nccl's EFA path refuses a libfabric older than the one it was written for ("EFA provider requires at
    # least libfabric version 1.22.0."): the node's EFA installer (which ships libfabric) predates the plugin.
    sig("ofi_libfabric_old", ("EFA provider requires at least libfabric version",),
       r"EFA provider requires at least libfabric version (?P<want>\d{1,2}\.\d{1,3}(?:\.\d{1,3})?)",
       "other", ROOT, 1, "the node's libfabric is older than NCCL's OFI plugin needs",
       code="LOG089", params=lambda hs: {"what": f"libfabric is older than the {group(hs, 'want') or 'release'} "
                                                 "NCCL's OFI plugin needs for EFA"},
       detail="aws-ofi-nccl checks the libfabric it loaded. Update the EFA installer on the node (it ships "
              "libfabric), or use the plugin release that came with the installed libfabric; a container must see "
              "the host's or its own matching copy (LD_LIBRARY_PATH, /opt/amazon/efa)."),
    # aws-ofi-nccl's tuner through the v1 tuner interface, the one NCCL 2.19 and 2.20 load: it refuses to start when
    # NCCL_ALGO or NCCL_PROTO is set and returns ncclInvalidArgument, so communicator creation fails ("NCCL Error 4:
    # invalid argument"). Through the v2 interface and later (NCCL 2.21 on) the plugin logs the same words at INFO,
    # with "Defaulting to internal tuner", and the job runs: only the WARN is a failure (aws/aws-ofi-nccl#982; the
    # plugin itself sets NCCL_PROTO on some platforms).
    sig("ofi_tuner_refused", ("tuner plugin can not be loaded",),
       r"The tuner plugin can not be loaded when explicitly choosing an algorithm or protocol(?!.{0,80}Defaulting)",
       "version_mismatch", ROOT, 1, "the OFI plugin's tuner refused an NCCL too old for its fallback while NCCL_ALGO or "
                                    "NCCL_PROTO was set",
       code="LOG099", params=lambda hs: {"what": "aws-ofi-nccl's tuner, loaded through the interface of NCCL 2.19-2.20, "
                                                 "refuses NCCL_ALGO/NCCL_PROTO instead of handing back to NCCL's tuner"}),
    # aws-ofi-nccl: fi_av_insert of the peer's EFA address failed ("Unable to insert remote address into address
    # vector for device %d. RC: %s"; "CM: ..." in newer releases), and a request that completed with an error
    # ("NET/OFI Request %p completed with error. RC: %d", libfabric efa's "rxr_cq_write_tx_error ... prov_err"). EFA
    # reaches a peer only when the security group allows all traffic to and from itself, both ways, and only within
    # one availability zone: a rule missing there is what these threads found (aws/aws-ofi-nccl#156, #663).
    # Newer plugins say "Request %p (%s) completed with error: err: %d, flags: %ld, prov_errno: %d, strerror: %s, ..."
    # with EFA's own words for the provider error, and libfabric's EFA provider logs "The peer of address %s becomes
    # unresponsive" and aborts with "Libfabric EFA provider has encountered an internal error: ... Unresponsive
    # receiver ..."; its help texts ("The peer is not reachable by the EFA device ... security group rules", "The
    # connection was previously established via handshake ... peer process no longer being present") say which.
    sig("ofi_peer_unreachable", ("Unable to insert remote address", "completed with error", "rxr_cq_write_tx_error",
                                 "efa_rdm_pke_handle_tx_error", "efa_rdm_txe_handle_error", "becomes unresponsive",
                                 "EFA provider has encountered an internal error", "not reachable by the EFA device",
                                 "previously established via handshake", "failed to complete a handshake"),
       r"Unable to insert remote address into address vector|NET/OFI Request \S{1,40} completed with error\. RC: -?\d{1,5}"
       r"|NET/OFI Request \S{1,40} \(\w{1,20}\) completed with error: err: \d{1,5}"
       r"|rxr_cq_write_tx_error\(?\)?:?\d{0,5}<warn>|efa_rdm_(?:pke|txe)_handle_(?:tx_)?error"
       r"|The peer of address \S{1,120} becomes unresponsive|EFA provider has encountered an internal error: [^\n]{0,200}"
       r"Unresponsive receiver|The peer is not reachable by the EFA device"
       r"|connection was previously established via handshake|libfabric failed to complete a handshake",
       "firewall_or_port_blocked", ROOT, 4, "the EFA network plugin could not reach a peer (security group, zone)",
       build=_ofi_peer_unreachable),
    # aws-ofi-nccl's RDMA protocol (nccl_ofi_rdma), connecting a multi-rail device: "Unexpected number of remote rails
    # for dev %d. Expected %d but got %d". Each side groups its NICs into rails from its own topology, and the peer's
    # device came with another count: the hosts grouped their NICs differently (NICs missing or grouped otherwise on
    # one host, another topology file or plugin release). NVIDIA/nccl#1913: p5 hosts with 1 to 3 rails per device;
    # OFI_NCCL_FORCE_NUM_RAILS gave every device the same count.
    sig("ofi_rails_differ", ("Unexpected number of remote rails",),
       r"Unexpected number of remote rails for dev (?P<dev>\d{1,4})\. Expected (?P<want>\d{1,4}) but got (?P<got>\d{1,4})",
       "other", ROOT, 2, "the network plugin's rails differ between two hosts (a device has another number of NICs on "
                         "the peer)", code="LOG137",
       params=lambda hs: {"what": f"device {group(hs, 'dev')} has {group(hs, 'want')} rail(s) here and "
                                  f"{group(hs, 'got')} on the peer"}),
    # aws-ofi-nccl's and libfabric EFA's resource creation failing with ENOMEM (nccl_ofi_ofiutils.c "Couldn't create
    # domain|allocate endpoint|create completion queue|register memory region with regattr. RC: -12, ERROR: Cannot
    # allocate memory"; efa_base_ep.c "ibv_create_qp failed. errno: 12"; efa_rdm_cq.c "Unable to create extended CQ:
    # Cannot allocate memory"): creating queues and registering host memory pin pages, which the locked-memory limit
    # caps.
    # The EFA provider's fatal report (efa_base_ep_write_eq_error's "Libfabric EFA provider has encountered an internal
    # error:", then "Libfabric error: (%d) %s" and "EFA internal error: (%d) %s") with FI_ENOMEM is the same: posting
    # its receive buffers grows a registered pool (awslabs/awsome-distributed-ai#647, with a memlock limit of 64 KiB).
    sig("ofi_nomem", ("RC: -12, ERROR: Cannot allocate memory", "ibv_create_qp failed. errno: 12",
                      "Unable to create extended CQ: Cannot allocate memory", "Libfabric error: (-12)"),
       r"NET/OFI Couldn't (?:create domain|allocate endpoint|create completion queue|register memory region with regattr)"
       r"\. RC: -12, ERROR: Cannot allocate memory"
       r"|efa_qp_create\(\)[^\n]{0,40}ibv_create_qp failed\. errno: 12|Unable to create extended CQ: Cannot allocate memory"
       r"|Libfabric error: \(-12\) Cannot allocate memory",
       "rlimit_memlock", ROOT, 2, "the EFA plugin or provider could not create its queues or register memory (ENOMEM)",
       code="LOG035", alts=[("other", "with `ulimit -l unlimited` in force, registering GPU memory fails this way when "
                                      "GPUDirect RDMA is missing (nvidia-peermem, or dma-buf)")]),
    # aws-ofi-nccl (platform-aws.cpp): "GDR disabled on GDR-supported instance type %s" and libfabric EFA
    # (efa_hmem.c): "Failed to register CUDA buffer with the EFA device, FI_HMEM transfers that require peer to peer
    # support will fail." -- the instance has GPUDirect RDMA, the node's software does not offer it.
    sig("ofi_gdr_off", ("GDR disabled on GDR-supported instance type", "Failed to register CUDA buffer with the EFA device"),
       r"GDR disabled on GDR-supported instance type (?P<inst>[\w.\-]{1,40})"
       r"|Failed to register CUDA buffer with the EFA device",
       "other", ROOT, 4, "the EFA plugin runs without GPUDirect RDMA on an instance that has it",
       code="LOG101", params=lambda hs: {"what": f"EFA on {group(hs, 'inst') or 'this instance'}"}),
    # aws-ofi-nccl register_mr_buffers: "Unable to register memory (type = %d) for device %d. RC: %d, Error: %s" --
    # type 2 is FI_HMEM_CUDA, GPU memory. EINVAL there is libfabric refusing the registration NCCL asks for: NCCL
    # 2.19+ with the libfabric of an EFA installer older than 1.29 (aws/aws-ofi-nccl#584), or no GPUDirect RDMA.
    sig("ofi_register_gpu_mem", ("Unable to register memory (type = 2)",),
       r"Unable to register memory \(type = 2\) for device \d{1,3}\. RC: -?(?P<rc>\d{1,5})",
       "nccl_internal_bug", ROOT, 3, "the EFA network plugin could not register GPU memory with libfabric",
       code="LOG070", params=lambda hs: {"what": "the OFI plugin could not register GPU memory (libfabric RC "
                                                  f"-{group(hs, 'rc') or '?'}): this NCCL and the node's libfabric/EFA "
                                                  "installer do not work together"},
       detail="NCCL 2.19 and later register GPU buffers in a way that the libfabric of older EFA installers (before "
              "1.29) refuses. Update the EFA installer (libfabric) on the nodes, or use the NCCL that the image or AMI "
              "was built with.",
       alts=[("p2p_acs_iommu", "without GPUDirect RDMA support on the node (nvidia-peermem / dmabuf not available), "
                               "GPU memory registration fails the same way")]),
    ctx("verbs_no_provider", ("no userspace device-specific driver",),
        r"no userspace device-specific driver found for (?P<dev>\S{1,200})",
        "libibverbs found an RDMA device but no user-space provider library (libmlx5) for it"),
    # ncclGetErrorString(ncclInvalidUsage): "invalid usage" (later "invalid usage (run with NCCL_DEBUG=WARN for
    # details)"); torch adds "ncclInvalidUsage: This usually reflects invalid usage of NCCL library." Read by
    # _invalid_usage when the reason line after it is missing.
    ctx("nccl_invalid_usage", ("invalid usage", "ncclInvalidUsage"),
        # vLLM's and SGLang's pynccl wrappers: RuntimeError(f"NCCL error: {ncclGetErrorString(result)}").
        # Horovod ("ncclCommInitRank failed: invalid usage") and CuPy (NcclError: NCCL_ERROR_INVALID_USAGE, NCCL's enum).
        r"NCCL error[^\n]{0,300}?, invalid usage\b|\bncclInvalidUsage\b|'invalid usage\b|\bNCCL error: invalid usage\b"
        r"|\bnccl\w{2,40} failed: invalid usage\b|\bNCCL_ERROR_INVALID_USAGE\b",
        "NCCL's result code for a call it rejects (invalid usage), without the reason"),
    # misc/argcheck.cc checks each call's arguments before it is enqueued: "%s : invalid root %d (root should be in
    # the 0..%d range)" (the last number is nRanks: 0 is a communicator no longer alive), "%s : invalid type %d",
    # "%s : invalid reduction operation %d", "%s : %s %p is not a valid pointer", "%s : %s allocated on device %d
    # mismatchs with NCCL device %d", "%s : %s argument is NULL", "Error: corrupted comm object detected"; init.cc
    # "comm %p has already been destroyed". The caller passed them (ncclInvalidArgument follows).
    sig("nccl_argcheck", ("invalid root", "invalid type", "invalid reduction operation", "unknown to this communicator",
                          "is not a valid pointer", "mismatchs with NCCL device", "argument is NULL",
                          "corrupted comm object", "has already been destroyed"),
       r"(?P<op>\w{1,40}) : (?:invalid root -?\d{1,9} \(root should be in the 0\.\.(?P<n>-?\d{1,9}) range\)"
       r"|invalid type -?\d{1,9}|invalid reduction operation -?\d{1,9}|reduction operation -?\d{1,9} unknown to this communicator"
       r"|\w{1,20} (?:\S{1,20} )?is not a valid pointer|(?P<buf>\w{1,20}) allocated on device (?P<dev>-?\d{1,4}) mismatchs? with "
       r"NCCL device (?P<ncdev>-?\d{1,4})|\w{1,20} argument is NULL)"
       r"|(?P<corrupt>corrupted comm object detected)|comm (?:0x)?[0-9a-fA-F]{1,16} has already been (?P<gone>destroyed)",
       "other", ROOT, 3, "NCCL rejected the arguments of a call before running it",
       code="LOG098", build=_argcheck),
    # NCCL's checks of how a program uses its API (init.cc, group.cc, enqueue.cc, bootstrap.cc; 2.26 to today), each
    # returning ncclInvalidArgument or ncclInvalidUsage: a config attribute out of range ("Invalid config blocking
    # attribute value %d"; HEAD spells one "Invalig"), a config not made with NCCL_CONFIG_INITIALIZER, ncclCommInitRank
    # or ncclCommInitAll given impossible ranks or devices, blocking and non-blocking communicators (or captured and
    # uncaptured streams) in one group, ncclGroupEnd without ncclGroupStart, an FP8 reduction below sm90, user-created
    # reduction ops misused, ncclCommGetUniqueId with NCCL_COMM_ID set. The caller is the program or its framework.
    sig("nccl_api_misuse", ("nvalid config", "Invali", "NCCL_CONFIG_INITIALIZER", "improper usage of ncclCommInitRank",
                            "exceeds ndev=", "nonblocking communicators", "can be CUDA graph captured",
                            "not in a group call", "all uncaptured or all captured", "FP8 reduction support",
                            "ncclRedOpDestroy :", "user-created ncclRedOp_t", "should not be called when NCCL_COMM_ID",
                            "mixing different streams within a group", "in graph mode while others not",
                            "before the previous operation returned ncclSuccess", "invalid device count",
                            "NCCL_SIM_INFO_INITIALIZER"),
       r"Invali[dg] config \w{1,40} attribute value -?\d{1,12}|ncclConfig_t argument not initialized via NCCL_CONFIG_INITIALIZER"
       r"|Invalid config min/max channels attribute value -?\d{1,12}/-?\d{1,12}"
       r"|ncclSimInfo_t argument not initialized via NCCL_SIM_INFO_INITIALIZER"
       r"|improper usage of ncclCommInitRank: nId = -?\d{1,9}, nranks=-?\d{1,9}|Invalid device count requested : -?\d{1,9}"
       r"|invalid device count \(-?\d{1,9}\) requested|Invalid device -?\d{1,9} \(totalnDev=\d{1,9}\)|rank -?\d{1,9} exceeds ndev=\d{1,9}"
       r"|Blocking and nonblocking communicators are not allowed in the same group"
       r"|Either none or all communicators in a ncclGroup\(\) can be CUDA graph captured|ncclGroupEnd: not in a group call"
       r"|Streams given to a communicator within a NCCL group must either be all uncaptured or all captured"
       r"|FP8 reduction support begins with sm90|ncclRedOpDestroy : +(?:operator is a NCCL builtin|operator is garbage"
       r"|invalid communicator passed|operator unknown to this communicator)"
       r"|Data type supplied to user-created ncclRedOp_t does not match|ncclCommGetUniqueId should not be called when NCCL_COMM_ID is set"
       # 2.4-2.12 (enqueue.cc, group.cc): a group call on several streams, or mixing captured and uncaptured communicators.
       r"|mixing different streams within a group call is not supported|Illegal to have some communicators in graph mode while others not"
       # init.cc ncclCommEnsureReady (2.14 on): a call on a non-blocking communicator whose previous operation (its
       # initialisation, a split) still reports ncclInProgress: the caller must poll ncclCommGetAsyncError first.
       r"|Attempt to use communicator before the previous operation returned ncclSuccess",
       "other", ROOT, 3, "NCCL rejected how the program uses its API (a config, a group, a device, a reduction op)",
       code="LOG098", build=_argcheck),
    # ncclGetErrorString(ncclInvalidArgument): "invalid argument" (later "invalid argument (run with NCCL_DEBUG=WARN
    # for details)"); torch adds "ncclInvalidArgument: Invalid value for an argument."; old torch/horovod print "NCCL
    # Error 4: invalid argument". A CUDA call's 'invalid argument' ("Cuda failure 1 'invalid argument'") is not this.
    # Read by _invalid_argument when the reason line is missing.
    ctx("nccl_invalid_argument", ("invalid argument", "ncclInvalidArgument"),
        r"NCCL error[^\n]{0,300}?, invalid argument\b|\bncclInvalidArgument\b|NCCL Error 4: invalid argument"
        r"|\bNCCL error: invalid argument\b|Test NCCL failure \S{1,200}:\d{1,6} 'invalid argument\b"
        r"|\bnccl\w{2,40} failed: invalid argument\b|\bNCCL_ERROR_INVALID_ARGUMENT\b",
        "NCCL's result code for an argument it rejects (invalid argument), without the reason"),
    # NCCL's net plugin loader (src/plugin/net.cc; 2.1x-2.2x wording): the path of a libnccl-net.so it loaded and the
    # plugin's name, or that it found none and uses the internal transports. Read per host by _net_plugins.
    ctx("net_plugin_loaded", ("Plugin Path :", "Loaded net plugin"),
        r"Plugin Path : (?P<path>\S{0,300}libnccl-net\S{0,40})|NET/Plugin ?: ?Loaded net plugin (?P<name>[^(]{1,80}?) \(v\d{1,3}\)",
        "NCCL loaded an external network plugin (libnccl-net.so)"),
    ctx("net_plugin_none", ("libnccl-net", "No plugin found"),
        r"NET/Plugin ?: ?(?:No plugin found|Could not find: (?:\S{1,80} )?libnccl-net\S{0,80}\.so|Plugin load returned \d{1,4} ?: ?libnccl-net\.so"
        r"|Plugin load \(libnccl-net\.so\) returned)|dlerror=libnccl-net\.so",
        "NCCL found no network plugin and uses its internal IB/Socket transports"),
    sig("lib_nccl", ("WorkNCCL", "NCCL WARN", "NCCL error", "ncclSystemError", "ncclInternalError", "ncclRemoteError",
                    "NCCL version", "NCCL_SOCKET_IFNAME"),
       r"WorkNCCL|NCCL WARN|NCCL error|nccl(?:System|Internal|Remote)Error|NCCL version|NCCL_SOCKET_IFNAME",
       None, CONTEXT, 9, "a line written by NCCL or torch's NCCL process group"),
    sig("ibverbs_missing", ("libibverbs",),
       r"Failed to open libibverbs", None, CONTEXT, 9, "no InfiniBand verbs library: NCCL uses sockets (harmless on non-IB hosts)",
       harmless=True),
    # RCCL (src/init.cc) at WARN level on every start where the kernel balances NUMA pages: "NUMA auto balancing enabled
    # which can lead to variability in the RCCL performance! Disable by \"sudo sysctl kernel.numa_balancing=0\"": a note
    # on performance, the job goes on.
    ctx("rccl_numa_note", ("NUMA auto balancing enabled",), r"NUMA auto balancing enabled which can lead to variability",
        "RCCL's note that the kernel's NUMA balancing can make its performance vary (harmless)", harmless=True),
    # net_ib.cc (2.1x on): WARN("Could not find real path of %s (%s)", devName, devicePath) and NCCL goes on without
    # the NIC's PCI path (VMs, containers). The older form without the parenthesis (a GPU's bus path) returns an error.
    ctx("ib_sysfs_note", ("Could not find real path of",), r"Could not find real path of \S{1,64} \(/sys/class/infiniband/",
        "NCCL could not read an InfiniBand NIC's PCI path (virtual machines, containers) and went on", harmless=True),
    # net_ib.cc ncclIbInit: when wrap_ibv_open_device fails, WARN("NET/IB : Unable to open device %s") and
    # `continue` to the next device (ibvwrap.cc first says WARN("Call to ibv_open_device failed")); with none left
    # NCCL says "NET/IB : No device found." and uses its socket transport. A container without the IB devices
    # passed in prints both in jobs that work; what fails, if anything, says so in its own words.
    ctx("ib_open_note", ("Unable to open device", "Call to ibv_open_device failed"),
        r"NET/IB : Unable to open device \S{1,64}\s*$|Call to ibv_open_device failed\s*$",
        "NCCL could not open an InfiniBand device and skipped it (a socket transport takes over)", harmless=True),
    # The same loop (transport/net_ib/init.cc from 2.29) skips a device it opened but could not query ("NET/IB : Unable
    # to query device %s", after ibvwrap's "Call to ibv_query_device failed") and a port it could not query ("NET/IB :
    # Unable to query port_num %d"; "Unable to query port %d" in 2.4-2.18), and goes on with the others.
    ctx("ib_query_note", ("Unable to query device", "Unable to query port"),
        r"NET/IB : Unable to query (?:device \S{1,64}|port_num \d{1,3}|port \d{1,3})\s*$",
        "NCCL could not query an InfiniBand device or port and skipped it", harmless=True),
    # WARNs after which NCCL goes on as it says: a setting it ignored or clamped (init.cc NCCL_WORK_FIFO_BYTES not a power
    # of 2; net_socket.cc NCCL_SOCKET_NTHREADS / NCCL_NSOCKS_PERTHREAD over the maximum, "setting ... to %d"; shm.cc
    # NCCL_SHM_LOCALITY; graph/topo.cc NCCL_NET_MERGE_POLICY unknown, "defaulting to ALL"; init.cc both CTA policies
    # set, "Unsetting"; param_registry.cc a parameter registered twice), a fallback it took (graph/search.cc "falling
    # back to simple order"; net_ib "remote FLID configured as zero ... using dlid as fallback"; proxy.cc no thread
    # context with an old driver, "disabling") or a dump it skipped (graph/xml.cc NCCL_TOPO_DUMP_FILE it cannot open,
    # nvlink detection without NVML). A job that fails says so in other words.
    ctx("nccl_goes_on_note", ("is being ignored", "greater than the maximum allowed", "Ignoring SHM locality",
                              "defaulting to ALL", "Unsetting", "Duplicate registration for key", "falling back to simple",
                              "using dlid as fallback", "due to old driver, disabling", "not dumping topology",
                              "Skipping nvlink detection", "Limiting value to", "cap it to", "set both to",
                              "set it to 0", "disabling CollNet", "Cannot initialize CollNet", "Multi-GPU CC Off",
                              "ignoring address", "must be a multiple of", "(maximum", "(minimum",
                              "Invalid NCCL_COMM_BLOCKING", "NCCL_OOB_NET_IFNAME", "ignoring NCCL_ALGO=COLLNET",
                              "User asked for a m", "NCCL_MIN_NRINGS set to", "not using it", "POOL_SIZE has invalid",
                              "Failed to find CUDA library"),
        r"NCCL_WORK_FIFO_(?:BYTES|DEPTH)=\d{1,20} is being ignored because it is not a power of 2"
        # init.cc's config checks that clamp a value and go on (2.18-2.23): CGA cluster size, min/max CTAs, splitShare;
        # CollNet left out where it cannot run (2.7-2.21); confidential computing without multi-GPU protection (2.23).
        r"|NCCL_CGA_CLUSTER_SIZE value \d{1,9} is too big\. Limiting value to|(?:min|max)CTAs \d{1,9} is larger than "
        r"(?:#channels upper limit \d{1,9}, cap it to|maxCTAs \d{1,9}, set both to)|splitShare -?\d{1,9} is not a valid value "
        r"0/1, set it to 0|CollNet currently only supports up to \d{1,4} GPUs per node, disabling CollNet"
        r"|Cannot initialize CollNet, using \S{1,40} instead|CC On, Multi-GPU CC Off"
        # net_ib.cc (2.21-2.23) reading NCCL_IB_ADDR_FAMILY / the GID's address: "NET/IB: Ip address '%s' is invalid for
        # family %s, ignoring address".
        r"|NET/IB: Ip address '[^']{0,80}' is invalid for family \S{1,20}, ignoring address"
        r"|NET/Socket : (?:NCCL_SOCKET_NTHREADS|the total number of sockets) is greater than the maximum allowed, setting"
        r"|Ignoring SHM locality, must be 1|NCCL_NET_MERGE_POLICY: unknown value '[^']{0,80}', defaulting to ALL"
        r"|Both NCCL_CTA_POLICY_ZERO and NCCL_CTA_POLICY_EFFICIENCY are set in CTAPolicy \(\d{1,6}\)\. Unsetting"
        r"|PARAM: Duplicate registration for key \"[^\"]{0,80}\", ignoring"
        r"|Could not find a path for pattern \d{1,3}, falling back to simple order"
        r"|remote FLID configured as zero even when endpoints are on different subnets, using dlid as fallback"
        r"|Unable to create thread context due to old driver, disabling|Unable to open \S{1,300}, not dumping topology"
        r"|No NVML device handle\. Skipping nvlink detection"
        # graph/tuning.cc (2.7-2.26) clamping NCCL_NTHREADS / NCCL_LL128_NTHREADS; init.cc (2.14) ignoring a
        # NCCL_COMM_BLOCKING that is neither 0 nor 1; bootstrap.cc (2.23) an NCCL_OOB_NET_IFNAME matching no device;
        # tuning.cc (2.10-2.18) NCCL_ALGO=COLLNET where CollNet cannot run; connect.cc (2.7-2.26) and rings.cc (2.4)
        # channel and ring counts out of range; net.cc (2.21 on) a device-unpack plugin of another version, left
        # unused; gin_host.cc (2.28) a GIN pool size out of range, replaced by the default. misc/cudawrap.cc (2.14-2.20)
        # "Failed to find CUDA library in %s (NCCL_CUDA_PATH=%s)" / "... %s (NCCL_CUDA_PATH='%s') : %s": its own dlopen
        # of libcuda.so (a name many hosts lack beside libcuda.so.1) failed, and init.cc ignores that result
        # ((void)ncclCudaLibraryInit()): NCCL goes on through the CUDA runtime (NVIDIA/nccl-tests#115 went on to its
        # real hang). No libcuda at all stops the CUDA runtime first, in its own words.
        r"|Invalid \w{1,40} -?\d{1,12} \((?:must be a multiple of|maximum|minimum) \d{1,12}\)"
        r"|Invalid NCCL_COMM_BLOCKING value -?\d{1,12}|no device found matching NCCL_OOB_NET_IFNAME=\S{0,100}, ignoring"
        r"|CollNet is not supported or fails to initialize, ignoring NCCL_ALGO=COLLNET"
        r"|User asked for a (?:minimum of -?\d{1,9} channels, limiting to|maximum of -?\d{1,9} channels, setting it to) \d{1,9}"
        r"|NCCL_MIN_NRINGS set to a value greater than (?:NCCL_MAX_NRINGS, ignoring NCCL_MIN_NRINGS|the maximum number of rings)"
        r"|NCCL_DEVICE_UNPACK plugin has incompatible version -?\d{1,9}, this NCCL build is compatible with \d{1,9}, not using it"
        r"|NCCL_GIN_(?:SIGNAL|COUNTER)_POOL_SIZE has invalid value"
        r"|Failed to find CUDA library (?:in )?\S{0,300} \(NCCL_CUDA_PATH=",
        "NCCL ignored or adjusted a setting, or took a fallback, and went on", harmless=True),
    # transport/net_ib/common.cc (2.28 on), NCCL's async-event thread: "NET/IB : %s:%d GID table changed" for
    # IBV_EVENT_GID_CHANGE, an address added to or removed from the port's netdev (before 2.28 the same event read
    # "async event: GID table change", which _ib_async counts as a change, not a fault). NCCL only logs it.
    ctx("ib_gid_change_note", ("GID table changed",), r"NET/IB : \S{1,64}:\d{1,3} GID table changed\s*$",
        "the port's GID table changed (an address added or removed on its netdev); NCCL only logs it", harmless=True),
    # -- how the job ended (read by commdoctor.rules.engine.completed) ---------------------------------------------
    # init.cc: INFO("comm %p rank %d nranks %d cudaDev %d busId %lx - Destroy COMPLETE") once ncclCommDestroy has
    # freed a communicator; a communicator torn down after an error says "Abort COMPLETE" instead.
    ctx("nccl_destroyed", ("Destroy COMPLETE",), r"comm \S{1,20} rank \d{1,7} nranks \d{1,7} .{0,80}- Destroy COMPLETE",
        "a communicator was destroyed normally (ncclCommDestroy): the job reached its end", harmless=True),
    # init.cc / transport.cc: INFO(NCCL_INIT, "Connected all rings" [", use ring PXN %d GDR %d"]) and "Connected all
    # trees" once every channel's connections to its ring/tree peers are made (at init, or at the first collective
    # with runtime connection): the interfaces NCCL listed carried those connections.
    ctx("nccl_connected", ("Connected all",), r"Connected all (?:rings|trees)\b",
        "NCCL connected every ring or tree channel to its peers"),
    # nccl-tests common.cu: PRINT("# Out of bounds values : %d %s", errors, errors ? "FAILED" : "OK") after the
    # last size, then "# Avg bus bandwidth": the test checked every result and found none wrong.
    ctx("nccl_tests_passed", ("Out of bounds values",), r"Out of bounds values\s{0,4}: 0 OK",
        "nccl-tests ran every size and found no wrong value: the test completed", harmless=True),
    # nccl-tests common.h: a failed call ends the process's run with "%s: Test NCCL failure %s:%d '%s / %s'" (or
    # "Test CUDA failure %s:%d '%s'"), then " .. %s pid %d: Test failure %s:%d" once per function it unwinds through.
    ctx("nccl_tests_failed", ("Test NCCL failure", "Test CUDA failure", ": Test failure "),
        r"(?:: Test (?:NCCL|CUDA) failure|^\s{0,4}\.\. \S{1,255} pid \d{1,10}: Test failure) \S{1,200}:\d{1,6}\b",
        "nccl-tests stopped on a failed NCCL or CUDA call: that run ended here"),
    # The command that starts a test of nccl-tests (rccl-tests keeps the names), as a shell session pasted with its
    # output shows it: "$ ./build/all_reduce_perf -b 8 -e 128M -f 2 -g 2", or inside an mpirun line.
    ctx("nccl_tests_cmd", ("_perf",),
        r"(?:^|[\s/])(?:all_reduce|all_gather|alltoall|broadcast|reduce_scatter|reduce|sendrecv|scatter|gather|hypercube)"
        r"_perf(?:_mpi)?(?:\s{1,8}-{1,2}\w|\s*$)",
        "a command line that starts one of nccl-tests' tests"),
    # nccl-tests common.cu after the last size: "# Out of bounds values : %d FAILED" -- its check of every result found
    # that many values different from what the collective must give (the #wrong column counts them per size). The data
    # NCCL moved was wrong: a defect of that release for this GPU, transport or algorithm (NVIDIA/nccl#1906: NVLS
    # allgather out of rank order), peer-to-peer writes the platform does not carry through (GPUs passed to a VM,
    # NVIDIA/nccl#2335), an unsupported tuning variable (NCCL_CHUNK_SIZE, NVIDIA/nccl#2408), or failing hardware.
    sig("nccl_tests_wrong", ("Out of bounds values",), r"Out of bounds values\s{0,4}: (?P<n>[1-9]\d{0,12}) FAILED",
       "nccl_internal_bug", ROOT, 5, "nccl-tests found wrong values in the collectives' results",
       code="LOG070", params=lambda hs: {"what": f"nccl-tests found {group(hs, 'n')} wrong value(s) in its results"},
       detail="nccl-tests checks every result against what the collective must give; these differed, so the data NCCL "
              "moved was wrong. Narrow it down: NCCL_ALGO / NCCL_PROTO (one algorithm or protocol at fault points at "
              "NCCL), NCCL_P2P_DISABLE=1 (right then: the platform's peer-to-peer path), another NCCL release, and any "
              "NCCL_* tuning variable set that NCCL does not document.",
       alts=[("p2p_acs_iommu", "if NCCL_P2P_DISABLE=1 gives right results, peer-to-peer writes that the platform does "
                               "not carry through (GPUs passed to a VM, an IOMMU)"),
             ("hardware_fault", "if one GPU or link is always involved, its memory or NVLink: nvidia-smi -q (ECC, "
                                "retired pages), Xid 48/63/64/74 in dmesg")]),
    # nccl-tests common.cu, once per job before its list of ranks: "# nThread %d nGpus %d minBytes %ld maxBytes %ld ...".
    ctx("nccl_tests_header", ("nThread",), r"^#\s{0,4}nThread\s{1,4}\d{1,4}\s{1,4}nGpus\s{1,4}\d{1,4}\b",
        "nccl-tests' header, printed once by each job it runs"),
    # nccl-tests prints every rank of the job before the first size: "#  Rank %2d Group %2d Pid %6d on %10s
    # device %2d [%s] %s" (older releases: no Group column). One host for every rank: a single-node job.
    ctx("nccl_tests_rank", (" Pid ",), r"^#?\s{0,4}Rank\s{1,4}(?P<rank>\d{1,7})(?:\s{1,4}Group\s{1,4}\d{1,7})?\s{1,4}Pid\s{1,10}"
        r"(?P<pid>\d{1,10}) on\s{1,64}(?P<host>\S{1,255}) device\s{1,4}\d{1,4}(?:\s{1,4}\[[^\]]{1,40}\]\s{1,4}(?P<gpu>\S.{0,79}?))?\s*$",
        "nccl-tests' list of the job's ranks with their host and GPU"),
    # init.cc: INFO("Using network %s", comm->ncclNet->name) once a communicator has its network (IB, Socket, or a
    # plugin's name), and net_ib.cc's INFO("NET/IB : No device found.") when no HCA is usable. Read by _networks_differ.
    ctx("nccl_using_network", ("Using network",), r"\bUsing network (?P<net>[A-Za-z][\w\-]{0,40})\s*$",
        "the network an NCCL communicator uses"),
    ctx("ib_no_device", ("No device found",), r"NET/IB ?: ?No device found", "NCCL found no usable InfiniBand device"),
    # enqueue.cc, with NCCL_DEBUG_SUBSYS=COLL (2.4 to today): "%s: opCount %lx sendbuff %p recvbuff %p count %zu datatype
    # %d op %d root %d comm %p [nranks=%d] stream %p", one line a call. Read by _coll_args_differ.
    ctx("nccl_coll_call", ("opCount",),
        r"(?P<op>[A-Za-z]{2,24}): opCount (?P<opc>[0-9a-fA-F]{1,16}) sendbuff \S{1,24} recvbuff \S{1,24} count "
        r"(?P<count>\d{1,20}) datatype (?P<dt>\d{1,3}) op (?P<redop>\d{1,3}) root (?P<root>-?\d{1,7}) comm "
        r"(?P<comm>\S{1,24}) \[nranks=(?P<n>\d{1,7})\]",
        "an NCCL collective call with its arguments (NCCL_DEBUG_SUBSYS=COLL)"),
    # NCCL 1.x's own single-process tests (test/single/*_test.cu): "#   Rank %2d uses device %2d [0x%02x] %s", one
    # process driving every GPU listed (the '#' is often lost in a post).
    ctx("nccl_tests_device", ("uses device",),
        r"^#?\s{0,6}Rank\s{1,4}(?P<rank>\d{1,5}) uses device\s{1,4}(?P<dev>\d{1,3}) \[0x[0-9a-fA-F]{1,8}\]\s{1,4}"
        r"(?P<gpu>\S.{0,79}?)\s*$", "NCCL 1.x's test listing the GPUs its one process drives"),
    # The header of nccl-tests' results, printed once its communicators are set up and before its first size:
    # "#       size         count      type   redop    root     time   algbw   busbw #wrong ..." (2.x), NCCL 1.x's
    # tests "bytes  N  type  op  time  algbw  busbw  res ...".
    ctx("nccl_tests_results_head", ("algbw",),
        r"^#?\s{0,60}(?:size|bytes)\s{1,16}(?:count|N)\s{1,16}type\b.{0,80}?\balgbw\s{1,8}busbw\b",
        "nccl-tests' results header: the test is about to run its first size"),
    # nccl-tests' result row: size, count, type, redop, root, then times and bandwidths ("%12li  %12li  %8s  %6s  %6i"):
    # the test got past its first collective.
    ctx("nccl_tests_row", ("float", "half", "double", "int8", "int32", "int64", "bfloat16"),
        r"^\s{0,20}(?P<size>\d{1,14})\s{1,20}\d{1,14}\s{1,12}(?P<type>float|half|double|bfloat16|u?int8|u?int32|u?int64"
        r"|f8e\w{1,6})\s{1,12}(?P<op>sum|prod|max|min|avg|none|mulsum)\s{1,12}(?P<root>-?\d{1,7})"
        r"(?:\s{1,12}[\d.]{1,14}\s{1,12}[\d.]{1,14}\s{1,12}(?P<busbw>[\d.]{1,14}))?",
        "a result row of nccl-tests: the collective of that size completed"),
    # init.cc (2.19 on): INFO("comm %p rank %d nRanks %d nNodes %d localRanks %d localRank %d MNNVL %d"): how many
    # hosts the communicator spans. Read by local_ranks_only.
    ctx("nccl_nnodes", ("nNodes",), r"comm \S{1,20} rank \d{1,7} nRanks \d{1,7} nNodes (?P<n>\d{1,6}) localRanks",
        "how many hosts an NCCL communicator spans"),
    # ncclGetErrorString(ncclUnhandledCudaError) is "unhandled cuda error"; torch adds "ncclUnhandledCudaError: Call to
    # CUDA function failed." and, from 2.x on, "Last error:" with NCCL's WARN ("Cuda failure N 'reason'"). Read by
    # _bare_cuda_error when nothing else names a cause.
    ctx("nccl_unhandled_cuda", ("unhandled cuda error", "ncclUnhandledCudaError"),
        r"\bunhandled cuda error\b|\bncclUnhandledCudaError\b|NCCL_ERROR_UNHANDLED_CUDA_ERROR",
        "NCCL's result code for a failed CUDA call, without the call's reason"),
    # transport/net_ib/gdaki/gin_host_gdaki.cc (2.28 on): DOCACHECK's "DOCA failure %d" (a doca_error_t: 4 not supported,
    # 7 no memory, 21 DOCA_ERROR_DRIVER, a verbs call refused) while NCCL sets up GPU-initiated networking (GIN) over
    # GDAKI, the GPU posting to the NIC's queue pairs itself: NCCL's newest network path. NVIDIA/nccl#2237: 2.30.7
    # connected its queue pairs without the global routing header IB ports with IBV_QPF_GRH_REQUIRED need (fixed after).
    sig("gdaki_doca", ("DOCA failure",),
       r"\bDOCA failure (?P<err>\d{1,4})\b",
       "nccl_internal_bug", ROOT, 4, "NCCL's GPU-initiated networking over GDAKI failed in DOCA while setting up",
       code="LOG070", params=lambda hs: {"what": "its GPU-initiated networking (GIN over GDAKI) failed in DOCA with "
                                                 f"{_doca_error(group(hs, 'err'))}"},
       detail="GIN lets kernels post network operations themselves; over GDAKI NCCL builds the NIC's queue pairs through "
              "DOCA GPUNetIO, and one of those calls failed. The path is new (NCCL 2.28 on) and the regular IB transport "
              "does not use it: NCCL_GIN_TYPE=2 sends GIN through NCCL's proxy thread instead, NCCL_GIN_ENABLE=0 turns "
              "it off. NCCL 2.30.7 failed this way (DOCA error 21) on IB ports that require a global routing header; "
              "a newer NCCL fixed it.",
       alts=[("ib_misconfig", "if the proxy path (NCCL_GIN_TYPE=2) fails too, the NIC's set-up: firmware, driver "
                              "(DOCA/OFED), GID and routing")]),
    # graph/xml.cc: NCCL reads the machine's topology into an XML tree of fixed size ("Error : XML parser is limited to
    # %d nodes" / "... %d subnodes", xml.h "too many XML nodes (max %d)"; NCCL_TOPO_XML_MAX_NODES, 256 in 2.29): a
    # machine with more GPUs, NICs and PCI switches than that release provides for (32 NICs on AWS p5, NVIDIA/nccl#2160).
    sig("nccl_xml_limit", ("XML parser is limited to", "too many XML nodes", "too many XML subnodes"),
       r"XML parser is limited to (?P<n>\d{1,7}) (?P<what>nodes|subnodes)|too many XML (?P<what2>nodes|subnodes) \(max (?P<n2>\d{1,7})\)",
       "nccl_internal_bug", ROOT, 3, "the machine's topology has more elements than this NCCL release's XML tree holds",
       code="LOG070", params=lambda hs: {"what": "this machine's topology is larger than its topology tree holds (at most "
                                                 f"{group(hs, 'n', 'n2') or 'a fixed number of'} "
                                                 f"{group(hs, 'what', 'what2') or 'nodes'})"},
       detail="NCCL reads the GPUs, NICs, PCI switches and CPUs into a tree of fixed size set when it was built. A machine "
              "with more of them (dozens of NICs, virtual functions exposed to the container) does not fit. A newer NCCL "
              "may hold more; hiding devices the job does not use (NCCL_IB_HCA, fewer VFs in the container) makes the "
              "tree smaller.",
       alts=[("other", "a topology file (NCCL_TOPO_FILE) that lists more than the machine has is read into the same tree")]),
    # allocator.cc (2.27 on), carving a range of NCCL's symmetric-memory virtual address space for a registered window:
    # "Allocation failed. No suitable space found to accommodate size=0x%lx within limit=0x%lx". The space is NCCL's own,
    # sized at set-up; registrations that never free theirs use it up. NCCL 2.30.7 counted each registration of one
    # buffer as a new allocation (NVIDIA/nccl#2331, fixed on the dev branch after it).
    sig("nccl_space_alloc", ("No suitable space found",),
       r"Allocation failed\. No suitable space found to accommodate size=(?P<size>0x[0-9a-fA-F]{1,16}) within "
       r"limit=(?P<limit>0x[0-9a-fA-F]{1,16})",
       "nccl_internal_bug", ROOT, 3, "NCCL's symmetric-memory address space had no room for a registered window",
       code="LOG070", params=lambda hs: {"what": "its symmetric-memory address space is used up (a window of "
                                                 f"{_gib(group(hs, 'size'))} did not fit within {_gib(group(hs, 'limit'))})"},
       detail="NCCL reserves one virtual address range per communicator for symmetric memory windows "
              "(ncclCommWindowRegister) and carves every registration from it. A registration that finds no free range "
              "means earlier ones were never given back: NCCL 2.30 counted every registration of the same buffer as a "
              "new one. Register each buffer once (deregister windows you drop), and move to a newer NCCL.",
       alts=[("other", "a program that registers new buffers without ncclCommWindowDeregister uses the space up too")]),
    # NCCL's host allocations (include/alloc.h ncclCalloc/ncclRealloc: "Failed to malloc %ld bytes"; misc/utils.cc:
    # "Unrecoverable error detected: malloc(size=%llu) returned null.", the address map's "calloc(%zu entries) returned
    # null" / "malloc(%d entries) returned null"), then ncclSystemError. Linux overcommits memory, so malloc refuses
    # only a size beyond what the process may map: a limit on its address space (ulimit -v, a scheduler's memory
    # limit enforced that way, vm.overcommit_memory=2) or a size no host has, which is a size NCCL computed wrong.
    sig("nccl_host_alloc", ("Failed to malloc", "returned null"),
       r"Failed to malloc (?P<size>\d{1,20}) bytes|Unrecoverable error detected: malloc\(size=(?P<size2>\d{1,20})\) "
       r"returned null|address map \w{1,12} failed: (?:c|m)alloc\(\d{1,12} entries\) returned null",
       "other", ROOT, 3, "NCCL could not allocate host memory", build=_host_alloc),
    # AddressSanitizer's report of a memory error (compiler-rt asan_report.cpp): "==PID==ERROR: AddressSanitizer: KIND on
    # address ...", then the access's stack, one frame a line: "    #4 0x558b6aaa58b0 in FUNC(ARGS) FILE:LINE" or
    # "    #2 0x7b0fde03b306  (/path/lib.so+0x3b306)". Read by _asan_in_nccl.
    ctx("asan_report", ("AddressSanitizer:",), r"ERROR: AddressSanitizer: (?P<kind>[\w-]{3,60})",
        "AddressSanitizer stopped the process on a memory error"),
    ctx("asan_frame", (" in ", "+0x"), r"^\s{0,12}#\d{1,3} 0x[0-9a-fA-F]{1,16} {1,2}(?:in (?P<fn>[\w:~<>]{1,200}))?(?P<rest>.{0,400})",
        "a frame of AddressSanitizer's stack"),
    # NCCL_SOCKET_IFNAME given on a command line or in a script (mpirun -x, export, env, docker -e); NCCL's own
    # "NCCL_SOCKET_IFNAME set by environment to" INFO line is read by the run model (m.env).
    ctx("ifname_assigned", ("NCCL_SOCKET_IFNAME=",), r"(?<![\w])NCCL_SOCKET_IFNAME=['\"]?(?P<val>[=^]{0,2}[\w.:,\-]{1,64})",
        "NCCL_SOCKET_IFNAME set on a command line or in a script"),
)


def _crashed_in_nccl(m: Any, found: list[Cand], _unused: list[Cand]) -> list[Cand]:
    """A process that crashed with the faulting frame, the first below its signal handler's, in libnccl: NCCL's own code
    faulted (NVIDIA/nccl#1996: a use-after-free in RAS's peer update on a background thread; NCCL_RAS_ENABLE=0 avoided
    it until the fix). A fault in malloc or in the program's own libraries says nothing of NCCL."""
    at = []
    for stack in crash_stacks(m):
        # glibc frames with no symbol just below the handler are its signal return; the first named frame faulted.
        top = next((f for f in stack if not (frame_lib(f) == "libc" and not frame_fn(f))), None)
        if top is not None and frame_lib(top) == "libnccl":
            at.append(top)
    if not at:
        return []
    sym = group(at, "sym", "fn")
    return [cand("LOG070", "nccl_internal_bug", 3, at[:2], params={
        "what": "a process crashed (segmentation fault) inside libnccl itself"
                + (f" ({sym})" if sym else "") + ", below the signal handler's frames"},
        detail="The frame that faulted is NCCL's own code, not the program's or the allocator's: a defect of this NCCL "
               "release (NCCL 2.27's RAS thread crashed this way: NCCL_RAS_ENABLE=0 avoided it until the fix) or memory "
               "NCCL was given that someone else freed. Look up the release notes of the next NCCL release.",
        alts=[("other", "memory corrupted elsewhere in the process (a CUDA extension, a buffer freed while NCCL uses "
                        "it) also faults inside NCCL: the same crash with another NCCL release points back at the program")])]


#: doca_error_t values NCCL's GDAKI code reports (doca_error.h).
_DOCA_ERRORS = {"4": "not supported", "6": "invalid value", "7": "no memory", "8": "initialization failure",
                "16": "not found", "20": "operating system call failure", "21": "DOCA_ERROR_DRIVER, a driver call failed",
                "22": "unexpected", "31": "device fatal error"}


def _doca_error(num: str | None) -> str:
    """'error 21 (DOCA_ERROR_DRIVER, a driver call failed)' from DOCA's number."""
    name = _DOCA_ERRORS.get(num or "")
    return f"error {num or '?'}" + (f" ({name})" if name else "")


def _gib(hexsize: str | None) -> str:
    """A byte count NCCL printed in hex ("0x2171600000") as GiB ("133.4 GiB"), or '?'."""
    try:
        return f"{int(hexsize or '', 16) / 2**30:.1f} GiB"
    except ValueError:
        return "?"


#: AddressSanitizer's own frames and the C library's, which its interceptors stand in for: never the code at fault.
_ASAN_RUNTIME = re.compile(r"compiler-rt|sanitizer_common|/asan/|libasan|libclang_rt|^(?:__interceptor_|__asan_|___?interceptor)"
                           r"|^(?:v?sn?printf|mem(?:cpy|set|move|cmp)|str\w{2,8}|malloc|free|calloc|realloc|operator)$")
#: Libraries that do not own the memory they are handed (the driver's, NVML's, the C library's): a fault inside them
#: is their caller's buffer.
_ASAN_CALLEE = re.compile(r"lib(?:nvidia-ml|cuda|c|pthread|stdc\+\+|dl)[.\-]")


def _asan_in_nccl(m: Any, found: list[Cand], _unused: list[Cand]) -> list[Cand]:
    """AddressSanitizer stopped the process and the first frame of its stack whose code owns the memory is NCCL's.

    Frames of the sanitizer's runtime (its interceptors of vsnprintf, memcpy) and of libraries that write into the
    buffer they are given (NVML, libcuda, libc) come first; the caller below them handed over the buffer. When that
    caller is NCCL (a function ncclX / pncclX, a file under nccl's src/, libnccl), NCCL's memory was wrong: NVIDIA/nccl#2325,
    NCCL's copy of nvmlPciInfo_t older than the driver's, so NVML wrote past a stack buffer in ncclNvmlDeviceGetPciInfo."""
    reports = hits(m, "asan_report")
    if not reports:
        return []
    at = []
    for frame in sorted(lines_under(m, "asan_frame", reports, 40), key=lambda h: h.seq):
        fn, rest = frame.groups.get("fn") or "", frame.groups.get("rest") or ""
        if _ASAN_RUNTIME.search(fn) or _ASAN_RUNTIME.search(rest) or _ASAN_CALLEE.search(rest):
            continue
        if NCCL_FN.match(fn) or "nccl/src/" in rest or "libnccl" in rest:
            at.append(frame)
        break  # the first frame that owns the memory decides
    if not at:
        return []
    kind = group(reports, "kind") or "memory error"
    fn = group(at, "fn") or "NCCL's code"
    return [cand("LOG070", "nccl_internal_bug", 3, reports[:1] + at[:1], params={
        "what": f"AddressSanitizer found a {kind} in {fn}"},
        detail="The first frame below the sanitizer's and the system libraries' own is NCCL's: NCCL handed a buffer of "
               "the wrong size, or used memory it had freed. NCCL 2.30's copy of NVML's PCI-info structure was smaller "
               "than the driver's and NVML wrote past it (fixed in 2.31.2). Look up the next NCCL release's notes.",
        alts=[("other", "a buffer the program gave NCCL (a tensor freed while NCCL used it) faults inside NCCL too: "
                        "the frames below NCCL's show who called it")])]


MODEL_RULES = (
    ModelRule("nccl_asan", _asan_in_nccl, "AddressSanitizer's memory error whose first frame that owns the memory is "
                                          "NCCL's"),
    ModelRule("nccl_invalid_usage", _invalid_usage, "NCCL's invalid-usage code with its reason line missing",
              phase=PHASE_LAST),
    ModelRule("nccl_invalid_argument", _invalid_argument, "NCCL's invalid-argument code at start-up with its reason "
              "line missing", phase=PHASE_LAST),
    ModelRule("nccl_error_code", _system_error, "NCCL's system/remote error code with nothing else explaining it",
              phase=PHASE_LAST),
    ModelRule("tests_p2p_hang", _tests_p2p_hang, "nccl-tests on one host that never completes a size",
              phase=PHASE_LAST),
    ModelRule("nccl_init_stalled", _init_stalled, "NCCL's communicator set-up where the logs stop, with no error",
              phase=PHASE_LAST),
    ModelRule("net_counts_ignored", _net_counts_ignored, "ranks with different numbers of NICs that NCCL went on with, "
                                                          "in a job that failed or hung"),
    ModelRule("slingshot_sockets", _slingshot_sockets, "NCCL/RCCL over TCP sockets on Slingshot NICs without the "
                                                        "libfabric plugin, in a job that failed"),
    ModelRule("nccl_crashed", _crashed_in_nccl, "a crash whose faulting frame is in libnccl"),
    ModelRule("nccl_smem", _smem_exceeds, "NCCL's kernels need more shared memory than the GPU allows"),
    ModelRule("nccl_tests_apart", _nccl_tests_apart, "nccl-tests run by each MPI process as a job of its own"),
    ModelRule("nccl_cuda_code", _bare_cuda_error, "NCCL's unhandled-CUDA-error code with nothing else explaining it",
              phase=PHASE_LAST),
    ModelRule("nccl_networks_differ", _networks_differ, "processes of one job that chose different NCCL networks"),
    ModelRule("nccl_coll_args_differ", _coll_args_differ, "one collective call of a communicator with different "
                                                           "arguments on different processes (NCCL's COLL lines)"),
    ModelRule("nccl_versions_differ", _nccl_versions, "ranks that load different NCCL versions", phase=0),
    ModelRule("net_plugins_differ", _net_plugins, "hosts that load different NCCL network plugins", phase=0),
    ModelRule("env_differs", _env_differs, "an NCCL setting that differs between ranks"),
    ModelRule("graph_file", _graph_file, "NCCL_GRAPH_FILE set in a job that failed"),
)

CODES = (
    Code("LOG130", "ras-rank-behind", E, "ncclras: {who} launched fewer {op} operations ({n}) than the other ranks "
         "({usual}): late, or stuck before its next collective",
         "Take the stack of the rank behind while the job waits (py-spy dump, commdoctor hang): its own code (a slow "
         "step, a data loader, I/O on one node) is what the others wait for; a collective the others called and it "
         "skipped is a rank-dependent branch",
         cause="collective_timeout_straggler", steps=("ncclras -v while the job waits names each rank's process and node",)),
    Code("LOG131", "slingshot-without-plugin", E, "NCCL/RCCL ran over TCP sockets on the Slingshot NICs ({ifaces}): "
         "no libfabric plugin was loaded",
         "Load the aws-ofi-nccl / aws-ofi-rccl plugin built for the system's libfabric (cxi provider): the site's "
         "module, or its lib directory on LD_LIBRARY_PATH (NCCL_NET_PLUGIN names it in NCCL 2.19 and later); "
         "'NET/OFI Selected provider is cxi' in NCCL_DEBUG=INFO output shows it works",
         cause="other", env={"NCCL_DEBUG": "INFO"}),
    Code("LOG133", "no-transport", E, "NCCL found no transport between rank {a} and rank {b}",
         "Unset the settings that disable NCCL's transports (NCCL_P2P_DISABLE together with NCCL_SHM_DISABLE leaves "
         "ranks of one host only the network, which NCCL_NET_DISABLE_INTRA or a missing network then takes away); "
         "'set by environment to' lines in NCCL_DEBUG=INFO output show which are set",
         cause="other", env={"NCCL_DEBUG": "INFO"}),
    Code("LOG108", "nccl-init-stalled", W, "the logs stop while NCCL was setting up its communicators, {what}",
         "Open the ports NCCL uses between the hosts, not only MASTER_PORT (host firewall, security groups, Kubernetes "
         "network policies, service-mesh sidecars), and pin NCCL_SOCKET_IFNAME to the interface the hosts share",
         cause="firewall_or_port_blocked",
         steps=("nc -zv <other host> <high port> from each host, with `nc -l <port>` listening on the other",
                "NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET on every host: the Bootstrap lines name each interface")),
    Code("LOG028", "nccl-system-error", E, "NCCL failed on a network call with no other error to explain it: {what}",
         "Pin the interface the hosts share on every node (NCCL_SOCKET_IFNAME, GLOO_SOCKET_IFNAME; in containers run "
         "with host networking), then rerun with NCCL_DEBUG=WARN to see which call failed",
         cause="wrong_interface", env={"NCCL_SOCKET_IFNAME": "<iface>", "NCCL_DEBUG": "WARN"},
         steps=("NCCL_DEBUG=INFO: the 'Bootstrap : Using' line of every rank shows the address its peers must reach",)),
    Code("LOG036", "ib-misconfigured", E, "an RDMA connection could not be set up (GID index, HCA or routing)",
         "Select the GID index that maps to the routable address, the same on every node, and the right HCAs",
         cause="ib_misconfig", env={"NCCL_IB_GID_INDEX": "<index of the routable RoCE v2 GID>", "NCCL_IB_HCA": "<hca list>"},
         steps=("show_gids (or ibv_devinfo -v) lists each GID and its address",)),
    Code("LOG140", "host-memory-refused", E, "NCCL could not allocate {what} of host memory: the process may not map more",
         "Linux refuses an allocation only past a limit: check the process's address-space limit (ulimit -v, which a "
         "batch system may set from the job's memory request), vm.overcommit_memory=2 with the node's memory taken "
         "(free -g: other jobs, a data loader's workers); a container's memory limit kills instead (dmesg)",
         cause="other"),
    Code("LOG142", "nvshmem-peer-unreachable", E, "NVSHMEM could not reach a peer GPU: {what}",
         "Between nodes NVSHMEM needs its InfiniBand transport: every node's HCAs up and GPUDirect RDMA loaded "
         "(modprobe nvidia-peermem, or a driver with dma-buf); within a node, CUDA peer-to-peer between the GPUs",
         cause="ib_misconfig"),
    Code("LOG148", "nvshmem-host-mixup", E, "NVSHMEM took processes of other hosts (or containers) for this host's: "
                                            "the socket it shares memory through is not here",
         "Give every host its own hostname (hostnamectl set-hostname; docker run --hostname, or the pod's own name): "
         "NVSHMEM groups processes by the hash of their hostname alone; processes of one host in separate containers "
         "need a shared /tmp",
         cause="hostname_resolution", steps=("hostname on every node: the names must differ",)),
    Code("LOG149", "nccl-remote-allocator", E, "NCCL's remote allocation service (NCCL 2.8-2.11) took a connection that "
                                               "was not from a peer: the out-of-memory beside it is a meaningless size "
                                               "it read, not the GPU's memory",
         "Use NCCL 2.12 or newer, which has no such service; until then keep other programs (port scanners, health "
         "probes) from connecting to the job's ports",
         cause="nccl_internal_bug"),
    Code("LOG143", "nccl-setting-rejected", E, "NCCL refused one of its settings: {what}",
         "Unset the variable, or give it a value NCCL accepts; NCCL also reads its settings from /etc/nccl.conf and "
         "~/.nccl.conf, and a container image or a module may set them for you",
         cause="other"),
    Code("LOG137", "ofi-rails-differ", E, "the hosts' network plugin grouped their NICs into different rails: {what}",
         "Give every host the same rail layout: the same NICs up and visible on every host (fi_info -p efa), the same "
         "aws-ofi-nccl release and topology, or one rail count for all devices (OFI_NCCL_FORCE_NUM_RAILS)",
         cause="other", env={"OFI_NCCL_FORCE_NUM_RAILS": "<the same count on every host>"}),
    Code("LOG123", "nccl-net-plugin-not-loaded", E, "NCCL_NET asks for the network '{net}', which no network "
         "plugin loaded here provides",
         "Install the plugin that provides it (aws-ofi-nccl for 'AWS Libfabric') where NCCL finds it, and make "
         "NCCL_NET_PLUGIN name its file (libnccl-net-<name>.so) or leave NCCL_NET_PLUGIN unset; or unset NCCL_NET",
         cause="other", env={"NCCL_DEBUG_SUBSYS": "INIT,NET (shows the plugin NCCL looked for)"}),
    Code("LOG126", "libfabric-versions-differ", E, "the nodes run different libfabric versions (EFA)",
         "Install the same EFA installer (and so the same libfabric) on every node, in the image or on the hosts; "
         "`fi_info --version` on each node shows it", cause="version_mismatch",
         env={"FI_EFA_USE_ZCPY_RX": "0 (if the versions already match)"}),
    Code("LOG040", "nccl-versions-differ", E, "NCCL versions disagree: {what}",
         "Install the same NCCL on every node (one torch wheel / nvidia-nccl-cu* version, no stray libnccl on LD_LIBRARY_PATH)",
         cause="version_mismatch", steps=("python -c 'import torch; print(torch.cuda.nccl.version())' on every node",)),
    Code("LOG042", "env-overrides-differ", W, "{var} is set differently across ranks ({values})",
         "Set NCCL_* variables the same way on every node (one launcher environment)", cause="launcher_misconfig"),
    Code("LOG092", "algo-proto-setting-unusable", E, "no NCCL algorithm/protocol can run a collective under {settings}",
         "Unset NCCL_ALGO and NCCL_PROTO (let NCCL choose), or allow more than one value (NCCL_PROTO=^LL128 excludes "
         "one instead of forcing one)",
         cause="other", steps=("env | grep -E 'NCCL_(ALGO|PROTO)' on every node, and in the job's launcher config",)),
    Code("LOG102", "dmabuf-registration-nomem", E, "the NIC could not register NCCL's GPU buffers (DMA-BUF, out of memory)",
         "Unset NCCL buffer and channel overrides (NCCL_BUFFSIZE, NCCL_MIN_NCHANNELS, NCCL_MAX_NCHANNELS) or lower "
         "them; check the GPU's BAR1 memory in use and, for the NIC, its firmware's translation limits",
         cause="other", steps=("env | grep -E 'NCCL_(BUFFSIZE|M(IN|AX)_NCHANNELS|NCHANNELS)'",
                               "nvidia-smi -q -d MEMORY: BAR1 Memory Usage (Total, Used) on the failing node")),
    Code("LOG099", "nccl-plugin-mismatch", E, "NCCL's plugin does not work with this NCCL release: {what}",
         "Use NCCL 2.21 or later with this plugin, or a plugin release that hands back to NCCL's tuner; until then "
         "unset NCCL_ALGO and NCCL_PROTO in the job's environment",
         cause="version_mismatch", steps=("NCCL_DEBUG=INFO: the 'NCCL version' line and the plugin's 'NET/OFI' version line",
                                          "env | grep -E 'NCCL_(ALGO|PROTO|TUNER)'")),
    Code("LOG098", "nccl-call-rejected", E, "NCCL rejected a call's arguments: {what}",
         "Fix the call the line names (the program's, or the framework's NCCL wrapper: a version with the fix)",
         cause="other", env={"NCCL_DEBUG": "WARN (names the call and the argument)"}),
    Code("LOG070", "nccl-internal-error", E, "NCCL failed internally: {what}",
         "Try another NCCL release (newer, or the previous one that worked) after ruling out mixed versions",
         cause="nccl_internal_bug"),
    Code("LOG071", "topology-rejected", E, "NCCL rejected the topology description",
         "Stop injecting NCCL_TOPO_FILE (or use one that describes this machine), or move to an NCCL release that accepts it",
         cause="nccl_internal_bug"),
)
