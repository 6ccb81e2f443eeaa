"""Rules for gloo's own messages (gloo/transport/tcp, gloo/common/linux, torch's ProcessGroupGloo).

Promise: rule rows only (see commdoctor.rules.base), written from gloo's
``GLOO_ENFORCE`` texts and its IoException messages.
"""

from __future__ import annotations

import re
from typing import Any

from commdoctor.rules.base import CONTEXT, ROOT, Cand, after_restart, cand, group, own_reading, sig


#: The time of day at the head of a torch log line ("E1127 14:37:18.098000 22127 ..."; glog's own form).
_WHEN = re.compile(r"^\[?[EWIF](?P<md>\d{4}) (?P<h>\d\d):(?P<m>\d\d):(?P<s>\d\d(?:\.\d{1,9})?)")


def _exit_times(m: Any) -> dict[str, tuple[str, float]]:
    """When each file's launcher saw its worker fail (its "failed (exitcode: N)" line): file -> (month-day, seconds)."""
    out: dict[str, tuple[str, float]] = {}
    for f in m.elastic:
        w = _WHEN.match(f.ev.text) if f.ev is not None and not f.root else None
        if w:
            t = (w.group("md"), int(w.group("h")) * 3600 + int(w.group("m")) * 60 + float(w.group("s")))
            old = out.get(f.ev.source)
            if old is None or t < old:
                out[f.ev.source] = t
    return out


def _failed_together(m: Any, hs: list[Any], late: list[int]) -> bool:
    """The ranks that logged no timeout lost their connection within a second or two of the waiting ranks giving
    up: they were blocked inside a collective too (a late rank meets the closed connection only when it arrives)."""
    lost = [h for h in m.hits.get("conn_lost", []) if h.ev.rank in late]
    if not lost or {h.ev.rank for h in lost} != set(late):
        return False
    when = _exit_times(m)
    waited = [when[h.ev.source] for h in hs if h.ev.source in when]
    gone = [when[h.ev.source] for h in lost if h.ev.source in when]
    if not waited or not gone or len({t[0] for t in waited + gone}) != 1:
        return False
    return max(t[1] for t in gone) - min(t[1] for t in waited) <= 2.0


def _recv_timeout(m: Any, hs: list[Any], found: list[Cand]) -> list[Cand]:
    """Every rank timed out in a send/recv: nobody was late, so the collectives did not pair up (a mismatch)."""
    known = {r.rank for r in m.ranks.values() if r.rank is not None} | {f.rank for f in m.elastic if f.rank is not None}
    world = max(known) + 1 if known else 0
    # A rank that printed nothing torch prefixes with its rank is still one of the launchers' workers: each launcher
    # names its workers' pids when one fails (its "failed (exitcode: N) ... (pid: P)" and summary lines) and when it
    # stops the others ("Sending process P closing signal SIGTERM": every worker but the one that failed, so a host
    # ran at least one more). Without restarts (whose new workers have new pids) and without a launcher stopped from
    # outside (which signals all its workers), more workers than ranks seen means ranks that logged nothing.
    if not m.hits.get("agent_restart") and not m.hits.get("agent_death_signal") and not m.hits.get("agent_hangup"):
        per: dict[str, int] = {}
        closing = m.hits.get("agent_closing_worker", [])
        sources = {h.ev.source for h in closing} | {f.ev.source for f in m.elastic if f.ev}
        for src in sources | {r.source for r in m.ranks.values() if r.source}:
            seen = {r.rank for r in m.ranks.values() if r.rank is not None and r.source == src}
            named = {f.pid for f in m.elastic if f.pid and f.ev and f.ev.source == src}
            stopped = {h.groups.get("pid") for h in closing if h.ev.source == src}
            per[src] = max(len(seen), len(named), 1 + len(stopped) if stopped else 0)
        world = max(world, sum(per.values()))
    waited = {h.ev.rank for h in hs if h.ev.rank is not None}
    # The tracebacks say which call each timed-out rank was in: two different collectives cannot pair up.
    calls: dict[str, list[Any]] = {}
    for h in hs:
        fn = getattr(m, "raised_in", {}).get((h.ev.source, h.ev.line))
        if fn:
            calls.setdefault(fn, []).append(h)
    if len(calls) >= 2:
        names = sorted(calls)
        return [cand("LOG050", "collective_mismatch", 3, [v[0] for v in calls.values()] + hs, detail=(
            f"Ranks timed out waiting inside different collectives ({', '.join(names)}, by their tracebacks): calls that "
            "do not pair up wait until the timeout. Make every rank call the same collectives in the same order."),
            alts=[("collective_timeout_straggler", "if one of these calls was legitimately reached later by a rank "
                                                    "still busy elsewhere, the wait is a straggler's")])]
    # And which line of the program made the call: the same collective from different lines is another order.
    raised_at = getattr(m, "raised_at", {})
    sites: dict[str, list[Any]] = {}
    for h in hs:
        at = raised_at.get((h.ev.source, h.ev.line))
        if at:
            sites.setdefault(at, []).append(h)
    if len(calls) == 1 and len(sites) >= 2:
        fn = next(iter(calls))
        lines = sorted(sites)
        return [cand("LOG050", "collective_mismatch", 3, [v[0] for v in sites.values()] + hs, detail=(
            f"Ranks timed out in {fn} called from different lines of the program ({', '.join(lines[:4])}, by their "
            "tracebacks): each waits for a partner that is at another call, so they pair up out of order. Make every "
            "rank reach the same collectives in the same order."),
            alts=[("collective_timeout_straggler", "if one of these lines was legitimately reached later by a rank "
                                                    "still busy elsewhere, the wait is a straggler's")])]
    everyone = world >= 2 and len(waited) >= world and all(r in waited for r in range(world))
    same_line = len(calls) == 1 and len(sites) == 1 and len(next(iter(sites.values()))) == len(hs)
    # Only between hosts can the path itself fail: on one host (loopback) the same picture is a size that depends on
    # the rank (gloo's ring allreduce times out on every rank then, from 3 ranks up).
    hosts = {f.host for f in m.elastic if f.host} | {r.host for r in m.ranks.values() if r.host}
    if everyone and same_line and len(hosts) >= 2:
        fn, where = next(iter(calls)), next(iter(sites))  # one of each: the same call from the same line
        return [cand("LOG037", "hardware_fault", 5, hs, params={
            "what": f"every rank waited in the same {fn} ({where}) until it timed out: the transfers between them stopped"},
            detail=f"Every rank (0 to {world - 1}) was inside the same collective, called from the same line of the "
                   f"program ({fn} at {where}, by their tracebacks), and every one of them timed out: nobody was late "
                   "and the calls pair up, so the data between the ranks stopped moving. A link or interface that went "
                   "down, a network partition, or an MTU black hole (small messages pass, full-size packets vanish) "
                   "does this. Test the path between the hosts (ping -M do -s 8972, iperf3) while the job runs.",
            alts=[("collective_mismatch", "a tensor whose size depends on the rank, at that same line, also leaves "
                                          "every rank waiting: TORCH_DISTRIBUTED_DEBUG=DETAIL checks the shapes"),
                  ("firewall_or_port_blocked", "a firewall rule added while the job ran cuts its connections the same way")])]
    if everyone:
        return [cand("LOG050", "collective_mismatch", 5, hs,
                     detail=f"Every rank (0 to {world - 1}) timed out inside a collective: nobody was late, so the ranks "
                            "were in collectives that do not pair up (a different operation, size or order).",
                     alts=[("collective_timeout_straggler", "if one rank's log is missing from this set, it may simply "
                                                            "have arrived late: check that every rank's output is here"),
                           ("hardware_fault", "a network partition or an MTU black hole between the hosts times out "
                                              "every rank the same way: if the code paths are identical, test the network")])]
    # gloo does not name the peer it waited for; ranks of the job that logged no timeout are the candidates.
    late = [r for r in range(world) if r not in waited][:8] if world >= 2 and waited else []
    if late and _failed_together(m, hs, late):
        return [cand("LOG050", "collective_mismatch", 5, hs + [h for h in m.hits.get("conn_lost", []) if h.ev.rank in late][:2],
                     detail=f"Rank(s) {', '.join(map(str, sorted(waited)))} timed out in a collective, and rank(s) "
                            f"{', '.join(map(str, late))} lost the connection within two seconds of that (their launchers' "
                            "exit times): they were inside a collective too, not away. Ranks waiting in collectives that do "
                            "not pair up (another operation, size or order) time out like this; TORCH_DISTRIBUTED_DEBUG="
                            "DETAIL names the calls.",
                     alts=[("collective_timeout_straggler", "if the hosts' clocks differ by seconds, the times cannot tell: "
                                                            "a late rank meets the closed connection only when it arrives")])]
    who = (f"rank(s) {', '.join(map(str, late))} logged no timeout: the late rank is among them" if late
           else "gloo does not name the peer it waited for")
    c = cand("LOG054", "collective_timeout_straggler", 6, hs, params={"who": who}, alts=[
        ("collective_mismatch", "gloo gives this same timeout when ranks call different collectives (all_reduce against "
                                "broadcast); TORCH_DISTRIBUTED_DEBUG=DETAIL names the mismatch within milliseconds"),
        ("peer_process_died", "a peer that hung or died without closing its sockets also leaves the recv waiting: "
                              "take stacks (commdoctor hang) while it waits")])
    c.ranks |= set(late)
    return [c]


FULL_MESH_ALTS = [
    ("hostname_resolution", "gloo advertises the address its host name resolves to: if that is 127.0.1.1 or another "
                            "host's address (getent hosts $(hostname)), fix the name or set GLOO_SOCKET_IFNAME"),
    ("firewall_or_port_blocked", "gloo connects on ephemeral ports: a firewall that opens only the master port lets the "
                                 "store work and the mesh fail")]


def _connect_timeout(m: Any, hs: list[Any], found: list[Cand]) -> list[Cand]:
    """gloo's connect to a peer timed out; in workers torchrun restarted after a failed attempt, that failure's echo
    (the peers of the old attempt are gone or elsewhere), as for a refused mesh."""
    again = after_restart(m, hs)
    first = [h for h in hs if h not in again]
    out = []
    if again:
        out.append(cand("LOG025", "firewall_or_port_blocked", 6, again, consequence=True,
                        detail="These connections were made by workers torchrun started again after one of this host's "
                               "workers had failed: the first failure, not the network, is what to look at."))
    if first:
        out.append(own_reading(first))
    return out


def _full_mesh(m: Any, hs: list[Any], found: list[Cand]) -> list[Cand]:
    """connectFullMesh failed: the mesh of a group torchrun restarted after a failed attempt is that failure's echo."""
    again = after_restart(m, hs)
    first = [h for h in hs if h not in again]
    out = []
    if again:
        out.append(cand("LOG022", "wrong_interface", 6, again, consequence=True,
                        params={"how": "not established by workers the launcher restarted after a failed attempt"}))
    if first:
        out.append(cand("LOG022", "wrong_interface", 5, first, alts=FULL_MESH_ALTS,
                        params={"how": "not established when the gloo group was created (connectFullMesh)"}))
    return out


SIGNATURES = (
    # gloo/transport/ibverbs/pair.cc: GLOO_ENFORCE_EQ(wc->status, IBV_WC_SUCCESS, ...) on a completion, printed as
    # "wc->status == IBV_WC_SUCCESS. 5 vs 0. Send for slot 0: Work Request Flushed Error". A send that never completed
    # on a fresh queue pair (5: flushed, the QP had gone to error; 12: retries exceeded) is a path the RDMA addresses
    # do not make: on RoCE most often GID index 0, the link-local GID, where the routable one is another index
    # (pytorch/gloo#147).
    sig("gloo_ibv_completion", ("wc->status == IBV_WC_SUCCESS",),
        r"wc->status == IBV_WC_SUCCESS\. (?P<st>\d{1,3}) vs 0\. (?P<what>[^\n]{0,120})",
        "ib_misconfig", ROOT, 3, "gloo's ibverbs transport saw a send or receive fail on its queue pair",
        code="LOG036",
        detail="gloo's ibverbs transport uses the port and GID index it is given (port 1, index 0 by default); on "
               "RoCE, index 0 is usually the link-local fe80:: GID, which no other host can route to. show_gids lists "
               "each index with its address.",
        alts=[("hardware_fault", "if the GID is routable and the same path fails with ib_send_bw, check the link "
                                 "and switch (ibv_devinfo port state, counters)")]),
    # gloo/transport/tcp/device.cc: with no interface named, gloo resolves this host's name and binds to the first
    # address it can; GLOO_ENFORCE(rp != nullptr, "Unable to find address for: ", attr.hostname) when none works.
    # The interface lookup words its failure the same way but checks ifa (a row of the system family reads that).
    sig("gloo_hostname_address", ("rp != nullptr",),
       r"rp != nullptr\. Unable to find address for:? ?(?P<host>\S{1,255})",
       "hostname_resolution", ROOT, 1, "gloo found no address of this host's name it could bind to",
       code="LOG015", params=lambda hs: {"what": f"host name {group(hs, 'host') or '?'} (to an address of this host)"},
       detail="With no GLOO_SOCKET_IFNAME, gloo looks up the machine's own host name and binds to one of the addresses "
              "it gets; the name resolved to nothing this host can bind (a name missing from /etc/hosts or DNS, or one "
              "pointing at another machine). Fix the name, or set GLOO_SOCKET_IFNAME to the routable interface.",
       alts=[("wrong_interface", "naming the interface (GLOO_SOCKET_IFNAME) sidesteps the name lookup altogether")]),
    # torch's GlooDeviceFactory (makeTCPDevice on Linux, makeUVDevice on Windows and macOS): TORCH_CHECK that an
    # interface (GLOO_SOCKET_IFNAME) or a host name was given, "GlooDeviceFactory::makeUVDevice(): interface or
    # hostname can't be empty". Without GLOO_SOCKET_IFNAME torch passes the machine's own name: the machine has none
    # (RVC-Project/Retrieval-based-Voice-Conversion-WebUI#724: a Windows PC with a blank name, fixed by naming it).
    sig("gloo_no_hostname", ("hostname can't be empty",),
       r"GlooDeviceFactory::make\w{1,12}Device\(\): interface or hostname can't be empty",
       "hostname_resolution", ROOT, 1, "gloo had neither an interface nor a host name to bind to",
       code="LOG015", params=lambda hs: {"what": "an empty host name (this machine has none, and gloo binds to its name "
                                                 "without GLOO_SOCKET_IFNAME)"},
       detail="Without GLOO_SOCKET_IFNAME torch hands gloo the machine's host name, and the name came back empty. "
              "Give the machine a name (hostnamectl set-hostname; on Windows, rename the PC) or set "
              "GLOO_SOCKET_IFNAME to the interface to use.",
       alts=[("wrong_interface", "naming the interface (GLOO_SOCKET_IFNAME) sidesteps the host name altogether")]),
    sig("family_mismatch", ("ss_family",),
       r"ss1\.ss_family == ss2\.ss_family\. (?P<a>\d{1,6}) vs (?P<b>\d{1,6})",
       "hostname_resolution", ROOT, 1, "the host name resolves to an address of another family (IPv6 ::1 against IPv4)",
       code="LOG013", params=lambda hs: {"addr": "an IPv6 address (::1)"},
       detail="The host name resolves to an IPv6 address on one side and IPv4 on the other."),
    sig("gloo_recv_timeout", ("Timed out waiting", "operation to complete"),
       r"Timed out waiting (?P<ms>\d+) ?ms for (?P<op>recv|send) operation to complete",
       "collective_timeout_straggler", ROOT, 5, "a gloo send/recv did not complete within the timeout",
       build=_recv_timeout),
    # gloo/transport/tcp/pair.cc: GLOO_ERROR_MSG("Connect timeout ", peer) -- the TCP connect to a peer's
    # advertised address got no answer within the timeout: dropped on the way, or an address not routed here.
    sig("gloo_connect_timeout", ("Connect timeout",), r"Connect timeout (?:\[(?P<peer>[^\]\s]{1,64})\]:(?P<port>\d{1,5}))?",
        "firewall_or_port_blocked", ROOT, 4, "gloo's connection to a peer timed out",
        code="LOG025", build=_connect_timeout,
        alts=[("wrong_interface", "an address that is not routed between the hosts (a docker bridge, a second NIC) times "
                                  "out the same way: GLOO_SOCKET_IFNAME names the interface gloo advertises")]),
    # pair.cc: a pending operation outlived the process group's timeout and gloo closed the pair.
    sig("gloo_pair_timeout", ("Application timeout caused pair closure",), r"Application timeout caused pair closure",
        "collective_timeout_straggler", ROOT, 6, "a gloo operation outlived its timeout and gloo closed the connection",
        code="LOG054", params=lambda hs: {"who": "gloo closed the connection when the operation outlived its timeout"},
        alts=[("collective_mismatch", "gloo times out the same way when ranks call different collectives; "
                                      "TORCH_DISTRIBUTED_DEBUG=DETAIL names the mismatch"),
              ("peer_process_died", "a peer that hung or died without closing its sockets leaves the same timeout")]),
    # pair.cc in sync mode: a blocking read or write to a peer returned EAGAIN after the timeout (GLOO_ERROR_MSG("Read
    # timeout ", peer) / "Write timeout "): the peer sent (or took) nothing for that long, as with an unbound buffer.
    sig("gloo_io_timeout", ("Read timeout", "Write timeout"),
        r"pair\.cc:\d{1,5}\] (?P<op>Read|Write) timeout(?: \[(?P<peer>[^\]\s]{1,64})\]:(?P<port>\d{1,5}))?",
        "collective_timeout_straggler", ROOT, 5, "a gloo read or write to a peer did not complete within the timeout",
        code="LOG054", params=lambda hs: {"who": (f"gloo's write to peer {group(hs, 'peer') or '?'} did not finish"
                                                  if group(hs, "op") == "Write" else
                                                  f"gloo's read from peer {group(hs, 'peer') or '?'} got nothing")
                                                 + " within the timeout"},
        alts=[("peer_process_died", "a peer that hung or died without closing its sockets leaves the same timeout"),
              ("collective_mismatch", "ranks that called different collectives wait on each other the same way")]),
    # gloo/context.cc: GLOO_ENFORCE_LT(rank, size) -- a process was given a rank not below the world size it was
    # given ("rank < size. 2 vs 2"): the launcher started more processes, or other ranks, than the job's world size.
    sig("gloo_rank_size", ("rank < size",),
        r"rank < size\. (?P<rank>\d{1,7}) vs (?P<size>\d{1,7})",
        "launcher_misconfig", ROOT, 1, "a process got a rank not below the world size",
        code="LOG066", params=lambda hs: {"what": f"a process has rank {group(hs, 'rank') or '?'} in a world of "
                                                  f"{group(hs, 'size') or '?'}"}),
    # torch's ProcessGroupGloo wraps gloo's mesh set-up error: "Gloo connectFullMesh failed with <gloo's reason>".
    # The ranks could not all connect to the addresses they advertised; the reason, when a row knows it, is more precise.
    sig("gloo_full_mesh", ("connectFullMesh failed",), r"Gloo connectFullMesh failed with",
        "wrong_interface", ROOT, 5, "gloo could not connect every pair of ranks when the group was created",
        code="LOG022", build=_full_mesh,
        exclude=("gloo_connect_timeout", "peer_refused", "connect_loopback", "connect_link_local", "family_mismatch",
                 "ifname_missing", "connect_timeout"),
        alts=[("hostname_resolution", "gloo advertises the address its host name resolves to: if that is 127.0.1.1 or "
                                      "another host's address (getent hosts $(hostname)), fix the name or set GLOO_SOCKET_IFNAME"),
              ("firewall_or_port_blocked", "gloo connects on ephemeral ports: a firewall that opens only the master port "
                                           "lets the store work and the mesh fail")]),
    sig("lib_gloo", ("ProcessGroupGloo", "gloo", "Gloo", "GLOO_"),
       r"ProcessGroupGloo|\bgloo(?:/|::|\b)|\bGloo\b|GLOO_SOCKET_IFNAME",
       None, CONTEXT, 9, "a line written by gloo or torch's gloo process group"),
)

CODES = ()
