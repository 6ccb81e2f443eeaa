"""Rules for torch.distributed's own messages: c10d stores and rendezvous, ProcessGroupNCCL's watchdog, collectives.

Promise: rule rows only (see commdoctor.rules.base), each written from the
format strings in torch's source (torch/csrc/distributed/c10d/TCPStore*.cpp,
socket.cpp, ProcessGroupNCCL.cpp, distributed_c10d.py, elastic/rendezvous).
Functions below the table hold what one line cannot decide alone: which rank
was late in a watchdog timeout, and whether the ranks waited in different
collectives (a mismatch) or in the same one (a straggler or a hang).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import Any

from commdoctor.rules.base import (
    CONSEQUENCE, CONTEXT, E, KILLED_BY_SIGNAL, PHASE_DEATHS, PHASE_WATCHDOG, ROOT, SELF_ABORT, Cand, Code, ModelRule,
    aborted_for_a_reason, after_store_host_failed, cand, completed, ctx, group, hits, lines_under, missing_ranks,
    own_reading, quiet_exits, raised_ranks, sig, stamp, uses_ib,
)


def _spawn_signal(m: Any, hs: list[Any], found: list[Cand]) -> list[Cand]:
    """torch.multiprocessing.spawn's report of a child a signal ended; SIGABRT with a reason in the logs is its echo."""
    sig_ = group(hs, "sig")
    c = cand("LOG060", "peer_process_died", 3, hs, detail=KILLED_BY_SIGNAL, params={
        "what": f"process {group(hs, 'rank') or '?'} was killed by {sig_ or 'a signal'} (torch.multiprocessing.spawn)"})
    if sig_ == "SIGABRT" and aborted_for_a_reason(m, found):
        c.tier, c.consequence, c.detail = 7, True, SELF_ABORT
    return [c]


def _backend_not_built(m: Any, hs: list[Any], found: list[Cand]) -> list[Cand]:
    nb = sorted(hs, key=lambda h: "built in" not in h.ev.text)  # torch's error before its warning
    be = (group(nb[:1], "backend", "backend2") or "?").lower()
    return [cand("LOG043", "other", 1, nb, params={"backend": be},
                 detail=f"This torch build has no {be.upper()} backend. gloo is built into every torch wheel and carries "
                        "CPU tensors (and CUDA tensors, slowly) everywhere.")]


def _device_without_backend(m: Any, hs: list[Any], found: list[Cand]) -> list[Cand]:
    """No backend for a tensor's device type: a CPU tensor on a CUDA-only group is the program's; an accelerator
    besides CUDA with none is its collective library missing from the group."""
    dev = (group(hs, "device") or "?").lower()
    if dev in ("cpu", "cuda", "?"):
        return [own_reading(hs)]
    return [cand("LOG145", "other", 1, hs, params={"device": dev},
                 detail=f"The group has no backend for {dev} tensors: it was created without {dev}'s collective "
                        "library, or that library could not be loaded and the job went on with gloo, which carries "
                        "CPU (and CUDA) tensors only. A warning that the library could not be loaded, earlier in the "
                        "log, names what is missing.",
                 alts=[("other", f"a group created on purpose for other devices only (backend=\"gloo\") that a "
                                 f"{dev} tensor reached by mistake")])]


def _unique_id(m: Any, hs: list[Any], found: list[Cand]) -> list[Cand]:
    late = hs[0].groups.get("src") or "0"
    return [cand("LOG052", "collective_timeout_straggler", 4, hs, params={"late": late}, alts=[
        ("peer_process_died", f"if rank {late} crashed before creating the communicator, its own traceback says so"),
        ("collective_mismatch", f"if rank {late} never calls this collective (rank-dependent code), it never publishes the id")])]


def _barrier_peer(m: Any, hs: list[Any], found: list[Cand]) -> list[Cand]:
    """A rank that reached monitored_barrier got an error from rank 0 (the barrier's coordinator). torch puts the
    transport's error under it ("Original exception:"): a closed connection is rank 0 gone, but a gloo send/recv that
    timed out is rank 0 alive and elsewhere (late, or stuck) for the whole timeout, unless rank 0 failed itself."""
    r = hs[0].groups.get("rank")
    timed = lines_under(m, "gloo_recv_timeout", hs, 14)
    # Killed by a signal counts as failed, but not by the SIGTERM its launcher sends every rank once one has failed.
    failed = set(raised_ranks(m)) | {f.rank for f in m.elastic if f.rank is not None and f.exitcode != -15
                                     and "SIGTERM" not in (f.signal or "")
                                     and (f.signal or (f.exitcode is not None and f.exitcode < 0))}
    failed |= {f.rank for f in quiet_exits(m)}
    if timed and r and r.isdigit() and int(r) not in failed:
        ms = next((t.groups.get("ms") for t in timed if t.groups.get("ms")), None)
        c = cand("LOG051", "collective_timeout_straggler", 4, hs[:2] + timed[:1], params={
            "op": "monitored_barrier", "timeout": f"{ms} ms" if ms else "its timeout",
            "who": f"rank {r} never answered the ranks waiting in it (its connections stayed open: late, or stuck "
                   "elsewhere)"},
            alts=[("peer_process_died", f"if rank {r}'s host went away whole (power, a kernel panic), its connections "
                                        "would not close either: look for its own last lines")])
        c.ranks = {int(r)}
        return [c]
    c = cand("LOG060", "peer_process_died", 5, hs, params={"what": f"rank {r} failed while monitored_barrier waited for it"})
    if r:
        c.ranks = {int(r)}
    return [c]


def _file_name(source: Any) -> str:
    """An input's file name, without its folders (a title names the file, the evidence gives the path)."""
    return str(source).replace("\\", "/").rsplit("/", 1)[-1]


def _loud_sources(m: Any) -> set[Any]:
    """The inputs that hold any error: a failure signature's line, an error no row reads, a traceback, a launcher's
    report of a failed worker."""
    loud = {h.ev.source for hits_ in m.hits.values() for h in hits_ if h.sig.role != CONTEXT}
    loud |= {ev.source for ev, _seq, _kind in m.unmatched_errors}
    loud |= {ev.source for ev in m.tracebacks}
    loud |= {f.ev.source for f in m.elastic if f.ev is not None}
    return loud


def _store_gone_in_rank_exchange(m: Any, hs: list[Any], found: list[Cand]) -> list[Cand]:
    """A launcher lost the job's store (its connection closed) inside ``_assign_worker_ranks``, where torchrun's
    agents exchange their nodes' keys before any worker starts, while every other input (the store's host) holds no
    error at all: the store's host never waited for this node. Its launcher ran a job of its own (a smaller --nnodes,
    another rendezvous) and closed the store when that ended."""
    gone = [c for c in hits(m, "conn_lost") if c.ev.line is not None and any(
        c.ev.source == h.ev.source and h.ev.line is not None and 0 < c.ev.line - h.ev.line <= 12 for h in hs)]
    if not gone:
        return []
    mine = {c.ev.source for c in gone}
    others = {i.path for i in m.inputs if i.lines and not i.error} - mine
    if not others or others & _loud_sources(m):
        return []
    name = _file_name(gone[0].ev.source)
    return [cand("LOG062", "launcher_misconfig", 3, gone[:1] + hs[:1], params={
        "what": f"the launcher of {name} lost the store while the nodes' agents exchanged their keys, and the store's "
                "host ran its own ranks without an error: it never counted that node (its --nnodes, or another "
                "rendezvous)"},
        detail="torchrun's agents assign the workers' ranks (_assign_worker_ranks) by exchanging each node's key in the "
               "store that node rank 0's launcher holds. This node's launcher lost that store in the middle of it, before "
               "any worker of its own started, and the store's host shows no failure: it ran a job that did not include "
               "this node, and closed the store when that job ended. Give every node the same --nnodes and rendezvous "
               "(--rdzv-id, --master-addr/--master-port).",
        alts=[("peer_process_died", "if the store host's log posted is not all it printed, its launcher may have died "
                                    "instead: its own last lines say")])]


def _vanished(m: Any, hs: list[Any], named: set[int]) -> dict[int, str]:
    """rank -> the input holding its output, for every rank in ``named`` whose output is in an input other than the
    barrier's report, and that input holds no error, traceback or launcher report at all: it just ends. Empty unless
    every rank in ``named`` is such a rank."""
    if not named:
        return {}
    src = {ri.rank: ri.source for ri in m.ranks.values() if ri.rank in named and ri.source}
    if set(src) != named or any(ri.first_error is not None for ri in m.ranks.values() if ri.rank in named):
        return {}
    files = set(src.values())
    if files & {h.ev.source for h in hs}:
        return {}
    return {} if files & _loud_sources(m) else {r: _file_name(src[r]) for r in sorted(named)}


_REACHED = re.compile(r"Rank (?P<rank>\d+) successfully reached monitoredBarrier")


def _reached_meanwhile(m: Any, hs: list[Any], named: set[int]) -> list[Any]:
    """Lines of every rank that rank 0 named as not passing monitored_barrier saying it did reach the barrier
    ("Rank N successfully reached monitoredBarrier, but received errors ... from rank 0"), logged within three seconds
    of rank 0's line: each side waited for the other at the same time. Empty unless every named rank says so."""
    when = [t for t in (stamp(h.ev.text) for h in hs) if t]
    if not named or not when:
        return []
    out: dict[int, Any] = {}
    for h in hits(m, "monitored_barrier_peer"):
        r, t = _REACHED.search(h.ev.text), stamp(h.ev.text)
        if r and t and int(r.group("rank")) in named and \
                any(t[0] == w[0] and abs(t[1] - w[1]) <= 3.0 for w in when):
            out.setdefault(int(r.group("rank")), h)
    return list(out.values()) if set(out) == named else []


def _stopped_from_outside(m: Any, hs: list[Any], named: set[int]) -> set[int]:
    """Named ranks whose own log shows their launcher signalled from outside (a scheduler's preemption or time
    limit: "Received 15 death signal, shutting down workers") no later than rank 0 gave up on the barrier: they
    were stopped, not late."""
    when = [t for t in (stamp(h.ev.text) for h in hs) if t]
    if not named or not when:
        return set()
    gone: dict[str, tuple[str, float]] = {}
    for h in hits(m, "agent_death_signal"):
        t = stamp(h.ev.text)
        if t and (h.ev.source not in gone or t[1] < gone[h.ev.source][1]):
            gone[h.ev.source] = t
    out = set()
    for ri in m.ranks.values():
        t = gone.get(ri.source or "")
        if ri.rank in named and t and any(t[0] == w[0] and t[1] <= w[1] for w in when):
            out.add(ri.rank)
    return out


def _monitored_barrier(m: Any, hs: list[Any], found: list[Cand]) -> list[Cand]:
    """monitored_barrier names the ranks that did not arrive; a named rank whose own code raised or that was killed
    did not arrive because it had failed (that failure is the root cause), otherwise it was late."""
    named = {int(x) for h in hs for x in (h.groups.get("ranks") or "").replace(",", " ").split()
             if x.isdigit() and len(x) < 8}
    failed = set(raised_ranks(m)) | {f.rank for f in m.elastic
                                     if f.rank is not None and (f.signal or (f.exitcode is not None and f.exitcode < 0))}
    # A rank that ended itself (rules.launcher.quiet_exits) did not arrive because it was gone.
    failed |= {f.rank for f in quiet_exits(m)}
    who = f"rank(s) {', '.join(map(str, sorted(named))) or '?'} did not reach monitored_barrier"
    ms = next((h.groups.get("ms") for h in hs if h.groups.get("ms")), None)
    said = {"op": "monitored_barrier", "timeout": f"{ms} ms" if ms else "its timeout"}
    stopped = _stopped_from_outside(m, hs, named)
    failed |= stopped
    if stopped and named <= failed:
        sigs = hits(m, "agent_death_signal")
        where = sorted({h.ev.source for h in sigs})
        gone = cand("LOG060", "peer_process_died", 3, sigs[:2] + hits(m, "agent_signalled")[:1] + hs[:1], params={
            "what": f"rank(s) {', '.join(map(str, sorted(stopped)))} were stopped: their launcher was signalled from "
                    f"outside the job ({', '.join(where[:2])}) before rank 0 gave up on monitored_barrier"},
            detail="The launcher of the ranks that rank 0 waited for received a signal from outside the job (a "
                   "scheduler's preemption or time limit, a node drain, Ctrl-C) and stopped its workers, before rank 0's "
                   "monitored_barrier gave up on them. They did not arrive because they were gone; the barrier's "
                   "error and the other ranks' closed connections follow from that.",
            alts=[("collective_timeout_straggler", "if the scheduler stopped the job for running past its time limit, "
                                                   "it may have been waiting on a stuck rank before: read each rank's "
                                                   "last lines before the signal")])
        gone.ranks = set(stopped)
        return [gone, cand("LOG051", "collective_timeout_straggler", 6, hs,
                           params={**said, "who": who + " (they had been stopped)"}, consequence=True)]
    vanished = _vanished(m, hs, named - failed)
    if vanished and named <= failed | set(vanished):
        files = sorted(set(vanished.values()))
        c = cand("LOG060", "peer_process_died", 3, hs, params={
            "what": f"rank(s) {', '.join(map(str, sorted(vanished)))} stopped mid-run: {', '.join(files[:2])} "
                    f"{'ends' if len(files) == 1 else 'end'} without an error, an exit status or the launcher's report, "
                    "so the host went away whole, its launcher too"},
            detail="Rank 0 waited in monitored_barrier for ranks whose own output stops in the middle of the run: no "
                   "error, no traceback, no exit status, no failure summary from their launcher. A rank that is late "
                   "or stuck still gets its launcher's report when the job is torn down; output that simply ends is a "
                   "host that died with everything on it: a node crash or power loss, a kernel panic, the OOM killer or "
                   "the scheduler's SIGKILL taking the launcher too.",
            alts=[("collective_timeout_straggler", "if that output was copied before the job ended, the ranks may only "
                                                   "have been late: their last lines say where they were"),
                  ("hardware_fault", "a host that went away whole may have failed in hardware: its system log says")])
        c.ranks = set(vanished)
        return [c, cand("LOG051", "collective_timeout_straggler", 6, hs,
                        params={**said, "who": who + " (their host had gone)"}, consequence=True)]
    there = _reached_meanwhile(m, hs, named)
    if named and not named & failed and there:
        return [cand("LOG037", "hardware_fault", 2, hs + there[:2], params={
            "what": f"rank(s) {', '.join(map(str, sorted(named)))} reached monitored_barrier, yet rank 0 never heard from "
                    "them: messages between the ranks were lost"},
            detail="Rank 0 says the named ranks did not pass monitored_barrier, and those ranks say, within seconds of "
                   "it, that they reached it and then heard nothing back from rank 0. Both sides were there: the messages "
                   "between them were lost on the way (a link or interface that went down, a network partition, a "
                   "switch or cable fault), not delayed by a slow rank.",
            alts=[("firewall_or_port_blocked", "a firewall rule added while the job ran cuts connections the same way"),
                  ("collective_timeout_straggler", "if the hosts' clocks differ by more than a few seconds, the times "
                                                   "cannot tell a rank that arrived late")])]
    if named & failed:
        return [cand("LOG051", "collective_timeout_straggler", 6, hs, params={**said, "who": who + " (it had failed first)"},
                     consequence=True)]
    return [cand("LOG051", "collective_timeout_straggler", 3, hs, params={**said, "who": who})]


_IP = re.compile(r"[\d.]{7,15}|[0-9a-fA-F:]{2,39}")


def _store_up(m: Any) -> list[Any]:
    """Lines of the store's own host saying the store was listening: TCPStore's "Timed out after N seconds waiting
    for clients" (it listened all along) or its DETAIL note "The server has started on port"."""
    return hits(m, "store_wait_clients") + hits(m, "store_started")


def _dialled(h: Any) -> tuple[str, str]:
    """(address, port) a store connect that failed was dialling ("" where the line does not say)."""
    return (h.groups.get("host") or h.groups.get("host2") or "", h.groups.get("port") or "")


def _store_host_stranded(m: Any, timed: list[Any]) -> tuple[Any, Any, str] | None:
    """(the store's "started" line, that input's own timed-out connect, the address) when the host that started the
    store then timed out connecting to MASTER_ADDR, and every connect that timed out, on any host, dialled that one
    address and that port: the store is up on one host, and MASTER_ADDR names another where nothing listens."""
    targets = {_dialled(h) for h in timed}
    if len(targets) != 1 or not all(targets.pop()):
        return None
    addr, port = _dialled(timed[0])
    if hits(m, "store_wait_clients") or any(h.groups.get("host") == addr for h in hits(m, "store_connected")):
        return None  # the store was reached at that address (or waited there for its clients): not this
    for s in hits(m, "store_started"):
        if s.groups.get("sport") not in (None, "", port):
            continue
        mine = next((h for h in timed if h.ev.source == s.ev.source and (h.ev.line or 0) > (s.ev.line or 0)), None)
        if mine is not None and len({h.ev.source for h in timed}) > 1:
            return s, mine, f"{addr}:{port}"
    return None


def _store_connect(m: Any, hs: list[Any], alts: list[tuple[str, str]]) -> list[Cand]:
    """A rank's connection to the store timed out. Whether the store was up (its own host's log says so) and how the
    connect failed tell a name that does not resolve on this host, and a silent drop, from a store that is not there."""
    timed = [h for h in hs if "timed out" in h.ev.text]
    up = _store_up(m)
    stranded = _store_host_stranded(m, timed)
    if stranded:
        started, mine, addr = stranded
        return [cand("LOG153", "launcher_misconfig", 2, [started, mine] + [h for h in timed if h is not mine][:1],
                     params={"addr": addr},
                     detail="torchrun's static rendezvous has the launcher of node rank 0 start the store on its own "
                            "host, then connect to it at MASTER_ADDR like every other node. This host started the "
                            "store (\"The server has started on port\"), then could not reach MASTER_ADDR itself, and "
                            "the other hosts dialled that same address: MASTER_ADDR is another machine, where nothing "
                            "listens. Node rank 0 was given to the wrong host (node ranks swapped, or --node-rank 0 "
                            "on a host that is not MASTER_ADDR), or MASTER_ADDR names the wrong machine on every host.",
                     alts=[("rendezvous_unreachable", "if MASTER_ADDR is this host's address on a network it does not "
                                                      "reach itself by (a NAT or load-balancer address), the address is "
                                                      "what is wrong")])]
    if timed and up:
        names = {h.groups.get("host") or h.groups.get("host2") or "" for h in timed} - {""}
        # socket.cpp looks the name up (IPv6 lookups map IPv4 addresses, AI_V4MAPPED) before connecting; when that
        # lookup failed for this very name and no connection was ever tried, the name is unknown on this host.
        unknown = [h for h in hits(m, "ipv6_lookup_note") if (h.groups.get("host") or "") in names and "gai error" in h.ev.text]
        refused = [h for h in hits(m, "peer_refused") + m.warn_hits.get("peer_refused", [])] + hits(m, "store_not_listening")
        # Where the store's own host reached it ("TCP client connected to host H:P"): a rank that timed out on
        # another address was given a wrong one, whatever happened to its packets.
        at = {h.groups.get("host") for h in hits(m, "store_connected") if h.groups.get("host")}
        wrong_address = bool(at) and not names & at
        # The port the store listens on ("The server has started on port = P", or where its own host reached it):
        # a rank that tried another port was given a wrong MASTER_PORT; nothing listens there, whatever the network.
        listen = {h.groups.get("sport") for h in hits(m, "store_started") + hits(m, "store_connected")} - {None, ""}
        tried = {h.groups.get("port") for h in timed} - {None, ""}
        if listen and tried and not tried & listen:
            return [cand("LOG011", "rendezvous_unreachable", 2, timed + up[:1], params={
                "endpoint": f"{sorted(names)[0] if names else '?'}:{sorted(tried)[0]}",
                "how": f"timed out connecting to port {sorted(tried)[0]}, while the store listened on port "
                       f"{sorted(listen)[0]}"},
                detail="The store was up on one port (its own host's log says which), and this host tried another: "
                       "MASTER_PORT (--master-port, --rdzv-endpoint) differs between the hosts. Give every host the same.",
                alts=[("port_conflict", "if the store host moved to another port because its own was taken, "
                                        "the other hosts still use the old one")])]
        if wrong_address or not names:
            pass  # the address itself is in question: LOG011 below
        elif refused and all(_IP.fullmatch(n) for n in names) and names & at \
                and all("refused" in h.ev.text or "listening yet" in h.ev.text for h in refused):
            # Refused on every try at the very address and port the store's own host connected to: the store
            # listened there all along, so what refused this host's connections was on the way, not the store.
            return [cand("LOG029", "firewall_or_port_blocked", 2, timed + refused[:1],
                         detail="The store was up at this address and port (its own host connected to it), yet every "
                                "connection from this host was refused until the timeout: a firewall rule that "
                                "rejects (iptables REJECT, a security group or network policy that resets) sits "
                                "between them. Open the store port, and the ports the backend uses, between the hosts.",
                         alts=[("rendezvous_unreachable", "if this host reaches that address somewhere else (another "
                                                          "machine with the same address on its network), the store "
                                                          "host is not the one it talks to")])]
        elif unknown and not refused:
            return [cand("LOG015", "hostname_resolution", 2, timed + unknown[:1],
                         params={"what": f"the store host's name {sorted(names)[0]!r} on this host"},
                         detail="The store was up (its own host's log shows it listening), but this host could not "
                                "resolve its name: add it to this host's /etc/hosts or DNS, or use the address.",
                         alts=[("rendezvous_unreachable", "if the name is meant to appear later (a master pod not yet "
                                                          "scheduled), the worker started too early")])]
        elif refused and not unknown and not any(_IP.fullmatch(n) for n in names) \
                and all("refused" in h.ev.text or "listening yet" in h.ev.text for h in refused):
            # Refused on every try, by name, while the store listened elsewhere: the name resolves here to an
            # address where nothing listens (127.0.1.1 from /etc/hosts, a stale entry).
            return [cand("LOG015", "hostname_resolution", 2, timed + refused[:1],
                         params={"what": f"the store host's name {sorted(names)[0]!r} on this host (refused there)"},
                         detail="The store was up (its own host's log shows it listening), but connecting to its name "
                                "from this host was refused on every try: the name resolves here to another address "
                                "(getent hosts NAME; Debian-style /etc/hosts map host names to 127.0.1.1).",
                         alts=[("firewall_or_port_blocked", "a firewall that rejects (not drops) the store's port also "
                                                            "refuses: if the name resolves right, check the firewall")])]
        elif refused and not unknown and not any(_IP.fullmatch(n) for n in names) \
                and all("No route to host" in h.ev.text or "EHOSTUNREACH" in h.ev.text for h in refused):
            # No host answered at the address the name gave this host (EHOSTUNREACH: ARP went unanswered), while
            # the store listened on its own host: the name resolves here to an address nobody has (a stale
            # /etc/hosts or DNS entry). By address rather than name, the same is a wrong MASTER_ADDR (LOG011).
            return [cand("LOG015", "hostname_resolution", 2, timed + refused[:1],
                         params={"what": f"the store host's name {sorted(names)[0]!r} (to an address that answers, "
                                         "on this host)"},
                         detail="The store was up (its own host's log shows it listening), but this host found no "
                                "route to the address its name gives here, on every try: the name resolves here to "
                                "an address no machine has (getent hosts NAME on each host; /etc/hosts, DNS).",
                         alts=[("firewall_or_port_blocked", "a firewall that rejects with icmp-host-prohibited "
                                                            "(firewalld's default) also says No route to host: if the "
                                                            "name resolves right, check the store host's firewall")])]
        elif not unknown and not refused:
            return [cand("LOG025", "firewall_or_port_blocked", 2, timed + up[:1],
                         detail="The store was up (its own host's log shows it listening), yet this host's connection "
                                "to it got no answer at all (no refusal, no 'No route to host'): packets to the store's "
                                "port are dropped on the way, as a firewall or security group does.",
                         alts=[("rendezvous_unreachable", "a MASTER_ADDR that names another, routed but silent address "
                                                          "also times out: compare it with the store host's address")])]
    if not up and len({h.ev.source for h in timed}) > 1 and len({_dialled(h) for h in timed}) == 1:
        # Several hosts' logs, each only a client timing out at one address, none hosting the store: if these are all
        # the job's nodes, node rank 0 (whose launcher starts the store) is among them but not at that address.
        alts = [("launcher_misconfig", "if these are every node's logs, node rank 0 is among them yet nothing listens "
                                       "at MASTER_ADDR: its --node-rank and MASTER_ADDR name different hosts"),
                *[a for a in alts if a[0] != "launcher_misconfig"]]
    return [cand("LOG011", "rendezvous_unreachable", 3, hs, params={
        "endpoint": next((f"{x.groups.get('host') or x.groups.get('host2')}:{x.groups.get('port') or '?'}"
                          for x in hs if x.groups.get("host") or x.groups.get("host2")), "the store"),
        "how": "timed out connecting"}, alts=alts)]


#: Docker's default bridge network (docker0): an address there is private to the host it lives on.
_DOCKER0 = re.compile(r"172\.17\.\d{1,3}\.\d{1,3}")


def _docker_bridge_target(hs: list[Any]) -> list[Any]:
    """Connections that timed out dialling an address on docker's default bridge (172.17.0.0/16) from a process whose
    own address (Ray's "(Actor pid=N, ip=A)" prefix) is on another network: the peer advertised the address of its
    container's bridge, which no other host can reach."""
    return [h for h in hs if _DOCKER0.fullmatch(h.groups.get("host") or h.groups.get("host2") or "")
            and h.rec.actor_ip and not _DOCKER0.fullmatch(h.rec.actor_ip)]


def _store_connect_rule(m: Any, hs: list[Any], found: list[Cand]) -> list[Cand]:
    bridge = _docker_bridge_target(hs)
    if bridge:
        g = bridge[0].groups
        return [cand("LOG020", "wrong_interface", 2, bridge, params={
            "what": f"{g.get('host') or g.get('host2')} is an address on docker's default bridge, dialled from "
                    f"{bridge[0].rec.actor_ip}"},
            detail="172.17.0.0/16 is the network docker gives containers on its default bridge: each host has its own, "
                   "reachable from no other host. The process listening there advertised its container's bridge "
                   "address. Run the containers with host networking, or name the interface the hosts share "
                   "(GLOO_SOCKET_IFNAME / NCCL_SOCKET_IFNAME, and the framework's own address setting, e.g. "
                   "VLLM_HOST_IP, MASTER_ADDR).",
            alts=[("firewall_or_port_blocked", "if the hosts really share a 172.17.0.0/16 network, packets to that "
                                               "port are being dropped")])]
    late = after_store_host_failed(m, hs)
    out = []
    if late:
        hs = [h for h in hs if h not in late]
        out.append(cand("LOG011", "rendezvous_unreachable", 6, late, consequence=True, params={
            "endpoint": "the store", "how": "only after the store's host had already failed and shut it down"},
            detail="This rank came to the store after the master host's launcher had reported its own workers failed "
                   "(its store goes with it): what made them fail (often this rank being late) is the cause."))
    return out + (_store_connect(m, hs, STORE_CONNECT_ALTS) if hs else [])


RDZV_CONNECTION_ALTS = [
    ("hostname_resolution", "the c10d rendezvous advertises host names: if a node's name is missing from DNS or "
                            "/etc/hosts, peers cannot reach the store it hosts (getent hosts $(hostname) on each node)"),
    ("firewall_or_port_blocked", "if the store host is up and resolvable, the port may be closed between nodes "
                                 "(platforms that expose only some ports); `nc -zv HOST PORT` tells")]

RDZV_TIMEOUT_ALTS = [("launcher_misconfig", "a node that was never started (wrong --nnodes, a pending job step) looks the "
                                             "same: count the agents that logged 'Starting elastic'")]


def _rdzv_apart(m: Any) -> tuple[list[Any], list[Any]]:
    """The elastic rendezvous timed out while every launcher whose log is here had reached its store: the nodes that
    lost the connection had it until then (the store lives in a launcher and leaves with it when that launcher gives
    up). Returns (the timeouts, the connection losses) when two or more logs show this and nothing failed to reach
    the store, else two empty lists. Every launcher reached the store and still the rendezvous never filled: they
    were not in one rendezvous."""
    timed = hits(m, "rdzv_timeout")
    lost = hits(m, "rdzv_connection")
    if not timed or hits(m, "store_connect_timeout") + hits(m, "name_resolution"):
        return [], []
    # "TCP client connected to host", or a connection that was there and closed ("Failed to recv, got 0 bytes").
    connected = {h.ev.source for h in hits(m, "store_connected") + hits(m, "conn_lost")}
    if any(h.ev.source not in connected for h in lost):
        return [], []
    if len({h.ev.source for h in timed} | {h.ev.source for h in lost}) < 2 or not lost:
        return [], []
    return timed, lost


def _rdzv_connection(m: Any, hs: list[Any], found: list[Cand]) -> list[Cand]:
    _timed, lost = _rdzv_apart(m)
    rest = [h for h in hs if h not in lost]
    out = []
    if lost:
        out.append(cand("LOG011", "rendezvous_unreachable", 6, lost, consequence=True, params={
            "endpoint": "the c10d rendezvous store", "how": "lost its connection when the store's launcher gave up"}))
    if rest:
        out.append(cand("LOG011", "rendezvous_unreachable", 3, rest, params={
            "endpoint": "the c10d rendezvous store", "how": "lost its connection"}, alts=RDZV_CONNECTION_ALTS))
    return out


def _rdzv_timeout(m: Any, hs: list[Any], found: list[Cand]) -> list[Cand]:
    """The elastic rendezvous timed out. On one node: the others never came (not started, or could not reach it).
    On every node whose log is here, with no failure to reach the store: each launcher was up and reached the
    store, and each waited for the others in vain, so they were not in the same rendezvous (a different --rdzv-id,
    --rdzv-endpoint or --nnodes per node)."""
    nodes = {h.ev.source for h in hs} | {h.ev.host for h in hs if h.ev.host}
    _timed, lost = _rdzv_apart(m)
    if lost:
        return [cand("LOG062", "launcher_misconfig", 3, hs[:2] + lost[:2], params={
            "what": "the rendezvous timed out on one node while another was connected to its store all along (it lost "
                    "the connection only when the first gave up): the nodes were not in one rendezvous (the same "
                    "--rdzv-id, --rdzv-endpoint and --nnodes on every node?)"},
            alts=[("rendezvous_unreachable", "if the connected node's log shows it joining a different endpoint, "
                                             "it waited at another store")])]
    reach = hits(m, "store_connect_timeout") + hits(m, "rdzv_connection") + hits(m, "peer_refused") + hits(m, "name_resolution")
    if len({h.ev.source for h in hs}) >= 2 and len(nodes) >= 2 and not reach:
        return [cand("LOG062", "launcher_misconfig", 3, hs, params={
            "what": "every node's launcher timed out waiting in the rendezvous for the others: they were up but not in "
                    "one rendezvous (the same --rdzv-id, --rdzv-endpoint and --nnodes on every node?)"},
            alts=[("rendezvous_unreachable", "if the nodes' --rdzv-endpoint differ, each may have waited at its own store")])]
    return [cand("LOG012", "rendezvous_unreachable", 4, hs, params={"joined": ""}, alts=RDZV_TIMEOUT_ALTS)]


def _store_barrier(m: Any, hs: list[Any], found: list[Cand]) -> list[Cand]:
    """Ranks missing from the store barrier. A launcher or a rendezvous that fails leaves a node's ranks out together;
    one rank of three or more missing is more often one process late or dead, so those come first among the
    alternatives."""
    g = hs[0].groups
    late = ("collective_timeout_straggler", "a rank still busy before init_process_group (preparing data, a logger "
                                            "such as wandb waiting on its server) arrives late: py-spy dump on it "
                                            "shows where")
    died = ("peer_process_died", "ranks that crashed before init also never reach the barrier: look for their own "
                                 "errors")
    unreachable = ("rendezvous_unreachable", "ranks that cannot reach MASTER_ADDR never join either")
    world, joined = g.get("world"), g.get("joined")
    if world and joined and world.isdigit() and joined.isdigit() and int(joined) > int(world):
        # torch's barrier adds 1 to a key per arriving rank and waits for the count to equal the world size: a count
        # past it was added to by processes of another run, so the store outlives runs (a file:// init file left
        # from earlier runs: wenet-e2e/wenet#1097, 287 for 6) or more processes than the world use it.
        return [cand("LOG150", "other", 2, hs, params={"what": f"{joined} arrivals for a world of {world}"},
                     alts=[("launcher_misconfig", "if the store is fresh (tcp:// or env://), more processes than "
                                                  "WORLD_SIZE joined it: two jobs on one MASTER_ADDR:MASTER_PORT, "
                                                  "or a launcher starting too many tasks")])]
    one_missing = bool(world and joined and world.isdigit() and joined.isdigit()
                       and int(world) >= 3 and int(world) - int(joined) == 1)
    return [cand("LOG062", "launcher_misconfig", 3, hs,
                 params={"what": f"{joined} of {world} ranks reached the store barrier"},
                 alts=[late, died, unreachable] if one_missing else [died, unreachable, late])]


def _torch_versions(m: Any, found: list[Cand], _unused: list[Cand]) -> list[Cand]:
    if len(m.torch_versions) < 2:
        return []
    return [Cand("LOG041", "version_mismatch", 1, 0, list(m.torch_versions.values())[:4],
                 params={"versions": ", ".join(sorted(m.torch_versions))})]


def _behind_completed(progress: dict[int, tuple[int, int, Any]]) -> tuple[int, list[int], list[int]] | None:
    """A collective that completed on one rank while another rank still waits in the collective of that number.

    Progress is each rank's first report after the failure (last enqueued, last completed). Ranks that run the
    same collectives complete collective #N together, so rank A having completed #N while rank B waits in its
    own #N means their #N were different calls (NCCL can pair a broadcast with an all_reduce of the same size
    and complete both): returns (N, the ranks that completed it, the ranks still waiting in it)."""
    for r, (enq, done, _ev) in sorted(progress.items()):
        stuck = done + 1
        if enq < stuck:
            continue  # nothing in flight on r
        ahead = sorted(a for a, (_e, d, _v) in progress.items() if a != r and d >= stuck)
        if ahead:
            waiting = sorted(b for b, (e, d, _v) in progress.items() if d + 1 == stuck and e >= stuck)
            return stuck, ahead, waiting
    return None


@dataclass(frozen=True)
class _FlightSays:
    """What the flight recorder's analysis says, in plain values (read once, defensively)."""

    kind: str  # "mismatch" or "straggler"
    seq: int  # the sequence number where calls differ, or the newest one the others wait in
    op: str
    group: str
    entries: dict[int, str]  # rank -> its entry at seq (mismatch) or its last entry (straggler), described


def _flight_verdict(m: Any) -> _FlightSays | None:
    """What flight-recorder dumps beside the logs say (commdoctor.loaders.flight_recorder's analysis): ranks
    that recorded different calls at one sequence number, or ranks that never entered the collective the
    others wait in. None when there are no dumps, or their analysis does not have the shape expected."""
    try:
        for g in m.flight:
            if getattr(g, "mismatch_seq", None) is not None and getattr(g, "mismatch", None):
                return _FlightSays("mismatch", int(g.mismatch_seq), "", str(g.desc or g.name),
                                   {int(r): e.describe() for r, e in g.mismatch.items()})
        for g in m.flight:
            if getattr(g, "waiting", None) and getattr(g, "missing", None):
                return _FlightSays("straggler", int(g.front_seq), str(g.front_op or "?"), str(g.desc or g.name),
                                   {int(r): (e.describe() if e is not None else "none recorded") for r, e in g.missing.items()})
    except (AttributeError, TypeError, ValueError):
        return None
    return None


def _fr_evidence(m: Any, entries: dict[int, str]) -> list[Any]:
    from commdoctor.core.model import Evidence

    files: dict[int, str] = {}
    for f in m.flight_files:
        for r in entries:
            if f.endswith(f"_{r}") or f.endswith(f"rank{r}") or f.endswith(f"_{r}.json") or f.endswith(f"_{r}.pkl"):
                files.setdefault(r, f)
    return [Evidence(source=files.get(r, "flight recorder"), text=text, rank=r) for r, text in sorted(entries.items())][:4]


#: Collectives whose output holds one piece per rank of the group (all-gather) or whose input does (reduce-scatter).
_GATHERS = re.compile(r"_?ALLGATHER(?:_BASE|_COALESCED|_INTO_TENSOR_COALESCED)?$")
_SCATTERS = re.compile(r"_?REDUCE_SCATTER(?:_BASE|_TENSOR_COALESCED)?$")


def _gathered_world(recs: list[Any]) -> int:
    """The group size an all-gather's or reduce-scatter's element counts give (NumelOut = N x NumelIn, or the
    reverse): FSDP's timeouts are these. Only when every rank that timed out is below it, as in the default group."""
    top = max((x.rank for x in recs if x.rank is not None), default=-1)
    for w in recs:
        nin, nout = w.numel_in or 0, w.numel_out or 0
        if nin <= 0 or nout <= 0:
            continue
        big, small = (nout, nin) if _GATHERS.match(w.op or "") else (nin, nout) if _SCATTERS.match(w.op or "") else (0, 1)
        n = big // small if big % small == 0 else 0
        if top < n <= 100_000 and n > 1 and w.pg in (None, "0"):
            return n
    return 0


def _all_inside(m: Any, recs: list[Any], evs: list[Any], seq: int, op: str, ranks: set[int], maxseq: int) -> list[Cand]:
    """Every rank of the job timed out in one collective: none was late, so the collective itself did not progress.

    In the job's first collective that is its connections: NCCL connects its channels there (at init before 2.22, at
    the first collective from 2.22), across hosts over the ports the OS picks (a firewall or security group that lets
    only the rendezvous port through, or an interface the hosts do not share) and on one host over peer-to-peer and
    shared memory (PCIe ACS or an IOMMU redirecting peer traffic). After collectives went through, a hang with every
    rank inside is the library, the GPU or the link."""
    hosts = {ri.host for ri in m.ranks.values() if ri.rank in ranks and ri.host} | {w.ev.host for w in recs if w.ev.host}
    if not hosts:
        return []
    if maxseq <= 1:
        if len(hosts) >= 2:
            return [Cand("LOG134", "ib_misconfig" if uses_ib(m) else "firewall_or_port_blocked", 5, seq, evs, ranks=ranks,
                         hosts=hosts, params={"op": op, "what": f"the connections between its {len(hosts)} hosts never "
                                                                 "completed"},
                         alts=[("wrong_interface", "an interface the hosts do not share (docker0, a second NIC) makes the "
                                                   "same hang: pin NCCL_SOCKET_IFNAME / NCCL_IB_HCA"),
                               ("collective_timeout_straggler", "if a rank's timeout is missing from these logs, it may "
                                                                "only have been late")])]
        return [Cand("LOG134", "p2p_acs_iommu", 5, seq, evs, ranks=ranks, hosts=hosts,
                     params={"op": op, "what": "the GPUs' peer-to-peer or shared-memory traffic on this host never went "
                                               "through"},
                     alts=[("p2p_driver_bug", "if NCCL_P2P_DISABLE=1 runs and ACS/IOMMU are off, the GPUs' or driver's "
                                              "peer-to-peer support")])]
    return [Cand("LOG053", "nccl_internal_bug", 5, seq, evs, ranks=ranks, hosts=hosts,
                 params={"what": f"every rank timed out inside {op} after {maxseq - 1} collectives went through: none "
                                 "was late to it"},
                 alts=[("hardware_fault", "a GPU or link that stopped mid-job hangs every rank the same way: Xid errors "
                                          "in dmesg, the NICs' error counters"),
                       ("collective_mismatch", "ranks that called the same collective on different streams or groups in "
                                               "another order deadlock alike: the flight recorder shows each rank's calls")])]


#: The watchdog's lines that torch prints after any failure it caught ("Received a dump signal due to a collective
#: timeout from this local rank", "Some NCCL operations have failed or timed out"), not after a timeout alone.
_ANY_FAILURE = ("due to a collective timeout", "operations have failed or timed out")


def _watchdog(m: Any, hs: list[Any], found: list[Cand]) -> list[Cand]:
    """Watchdog timeouts: a straggler, ranks in different collectives, a hang in the library, or the echo of
    an earlier failure."""
    recs = [w for w in m.watchdog if w.timed_out]
    fr = _flight_verdict(m)
    if not recs and not hs and fr is None:
        return []
    if not recs and hs and all(any(g in h.ev.text for g in _ANY_FAILURE) for h in hs):
        # torch (2.7 on) prints these for whatever failure its watchdog caught, a timeout or an NCCL error: on an H200
        # a rank whose all_reduce failed with ncclRemoteError ("raised the following async exception") when its peer
        # exited printed both within a second, "collective timeout" and all. Where every rank that printed them had
        # its collective fail of an error and none timed out, they are no timeout.
        errored = {w.rank for w in m.watchdog if not w.timed_out}
        if errored and {h.ev.rank for h in hs} <= errored:
            return []
    evs = [w.ev for w in recs[:3]] or [h.ev for h in hs[:3]]
    seq = min([w.order for w in recs] + [h.seq for h in hs] + ([] if recs or hs else [10**9]))
    timed: dict[int, int] = {}
    for w in recs:
        if w.rank is not None:
            timed[w.rank] = min(timed.get(w.rank, w.seq), w.seq)
    world = max([c.nranks for c in m.comms] + [0])
    if not world and m.progress:
        world = max(m.progress) + 1
    if not world:
        world = _gathered_world(recs)
    progress = m.progress
    strong_root = [c for c in found if c.tier <= 5 and not c.consequence]
    # -- ranks in different collectives: the flight recorder's entries, or progress that cannot pair up --------
    if not strong_root:
        if fr is not None and fr.kind == "mismatch":
            calls_txt = "; ".join(f"rank {r}: {text}" for r, text in sorted(fr.entries.items()))
            return [Cand("LOG050", "collective_mismatch", 2, seq, _fr_evidence(m, fr.entries) + evs[:2], ranks=set(fr.entries),
                         detail=f"The flight recorder shows the ranks called different collectives at sequence number "
                                f"{fr.seq} of group {fr.group}: {calls_txt}.")]
        behind = _behind_completed(progress)
        if behind is not None:
            n, ahead, waiting = behind
            ev_ranks = ahead[:2] + waiting[:2]
            return [Cand("LOG050", "collective_mismatch", 2, seq, [progress[r][2] for r in ev_ranks] + evs[:2],
                         ranks=set(ahead) | set(waiting),
                         detail=f"Rank(s) {', '.join(map(str, ahead))} completed collective #{n} while rank(s) "
                                f"{', '.join(map(str, waiting))} still wait in their #{n}: the ranks' #{n} were different "
                                "calls (another operation, or one rank called a collective the others skipped). The "
                                "flight recorder (TORCH_NCCL_DUMP_ON_TIMEOUT=1) shows each rank's calls.",
                         alts=[("collective_timeout_straggler", "if one rank's report is missing from these logs it may "
                                                                "simply have been late: check every rank's output is here")])]
    # -- who was late ----------------------------------------------------------------------------------------
    who = ""
    late: set[int] = set()
    missing = missing_ranks(world, timed) if world and timed else []  # ranks of the group that logged no timeout
    if fr is not None and fr.kind == "straggler":
        late = set(fr.entries)
        last = "; ".join(f"rank {r}'s last: {text}" for r, text in sorted(fr.entries.items())[:4])
        who = (f"rank {', '.join(map(str, sorted(late)))} never reached the collective the others wait in "
               f"(#{fr.seq} {fr.op}, flight recorder): it is the straggler ({last})")
        evs = _fr_evidence(m, fr.entries) + evs
    lag = hits(m, "desync_lagging")
    if not who and lag:
        # torch's desync report (TORCH_NCCL_DESYNC_DEBUG) names the ranks itself, from every rank's trace in the store.
        parts = []
        for h in lag[:3]:
            g = h.groups
            rs = (g.get("fin") or g.get("mid") or g.get("never") or "").replace(" ", "")
            late |= {int(x) for x in rs.split(",") if x.isdigit()}
            parts.append(f"rank {rs} finished collective #{g.get('n')} but never joined #{g.get('next')}" if g.get("fin")
                         else f"rank {rs} joined collective #{g.get('n2')} but never finished it" if g.get("mid")
                         else f"rank {rs} never joined any collective")
        who = "; ".join(dict.fromkeys(parts)) + " (torch's desync report): the straggler, or a rank on another path"
        evs = [h.ev for h in lag[:2]] + evs
    if not who and progress:
        low = min(v[0] for v in progress.values())
        late = {r for r, v in progress.items() if v[0] == low}
        if len(late) < len(progress):
            who = f"rank {', '.join(map(str, sorted(late)))} enqueued the fewest collectives (last {low}): it is the straggler"
            evs = [progress[r][2] for r in sorted(late)][:2] + evs
    if not who and missing:
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
    # ProcessGroupNCCL::barrier() is an all-reduce of a one-element tensor: "OpType=ALLREDUCE, NumelIn=1" in the
    # watchdog's message is a barrier (or a scalar sync), which a rank busy elsewhere (saving a checkpoint,
    # evaluating on rank 0) reaches late however many collectives went through before; it says nothing of a deadlock.
    barrier = bool(recs) and all(w.op == "ALLREDUCE" and w.numel_in == 1 for w in recs)
    # Several ranks timed out in the same collective and, by the group's own size, some never did: those are
    # elsewhere (late, or dead without a word in this log), which a deadlock inside the library does not explain.
    absent = len(timed) >= 2 and bool(missing)
    if ((maxseq >= 10000 and not barrier and not absent) or graph) and not busy and fr is None:
        return [Cand("LOG053", "nccl_internal_bug", 5, seq, evs + [h.ev for h in graph[:1]], ranks=ranks,
                     params={"what": f"a collective hung after {maxseq} had completed ({op})"},
                     detail=f"{who}. Hanging after tens of thousands of successful collectives, with no rank reporting an "
                            "error, points at a deadlock inside the library (CUDA graphs mixing captured and uncaptured NCCL "
                            "work are a known cause) rather than a slow rank.",
                     alts=[("collective_timeout_straggler", "if one rank was busy elsewhere (evaluation, checkpointing) its "
                                                            "stack shows it outside any collective: take stacks while it hangs"),
                           ("hardware_fault", "a stuck GPU or link also hangs collectives: look for Xid errors in dmesg")])]
    # Every rank of the job (NCCL's own nranks) timed out in the same collective: nobody was late to it.
    world_nccl = max([c.nranks for c in m.comms] + [0])
    if (not busy and fr is None and not lag and world_nccl >= 2 and set(timed) == set(range(world_nccl))
            and len(set(timed.values())) == 1 and len({w.pg for w in recs}) == 1):
        inside = _all_inside(m, recs, evs, seq, op, set(timed), maxseq)
        if inside:
            return inside
    return [Cand("LOG051", "collective_timeout_straggler", 5, seq, evs + [h.ev for h in busy[:1]], params=params, ranks=ranks,
                 detail=(f"While the others waited, the logs show a rank busy elsewhere: '{busy[0].ev.text[:120]}'." if busy else ""),
                 alts=[("nccl_internal_bug", "if every rank is inside the same collective (same SeqNum everywhere, stacks in "
                                             "NCCL), nobody is late: it is a hang in the library or the network"),
                       ("collective_mismatch", "a rank that skipped this collective or called another one also never "
                                               "arrives: compare the OpType/SeqNum each rank logged (flight recorder)")])]


def _hooks_report(m: Any, hs: list[Any], found: list[Cand]) -> list[Cand]:
    """commdoctor.hooks' own report of a mismatch, with each rank's call from the lines under it."""
    calls = [h.groups.get("call") for h in lines_under(m, "hooks_rank_call", hs, 4)]
    said = "; ".join(list(dict.fromkeys(c for c in calls if c))[:4])
    what = group(hs, "what")
    return [cand("LOG050", "collective_mismatch", 1, hs,
                 detail=("commdoctor.hooks compared every rank's call before it ran" + (f": they differ in {what}" if what
                         else "") + (f" ({said})" if said else "") + ". The line each rank names is where to look."))]


def _fr_missing(m: Any, hs: list[Any], found: list[Cand]) -> list[Cand]:
    """The analyser's ranks missing from a collective: they never called it (late, or on another path)."""
    listed = lines_under(m, "fr_analysis_missing_list", hs, 8)
    ranks = group(listed, "ranks") or group(hs, "ranks")
    who = f"rank(s) {ranks.replace(' ', '')} never called it (the flight recorder has no entry of theirs)" if ranks \
        else "some ranks never called it (the flight recorder has no entry of theirs)"
    return [cand("LOG051", "collective_timeout_straggler", 4, hs + listed[:1], params={
        "op": f"collective #{group(hs, 'seq', 'seq2') or '?'} (flight recorder)", "timeout": "the process group's timeout", "who": who},
        alts=[("collective_mismatch", "if those ranks went on to other collectives (their own entries after this one), "
                                      "they skipped it: a rank-dependent branch around the call")])]

STORE_CONNECT_ALTS = [("firewall_or_port_blocked", "a firewall that drops packets also makes connects time out; `nc -zv HOST PORT` from "
                                          "the failing node hangs (dropped) rather than failing at once (nothing listening)"),
             ("hostname_resolution", "if MASTER_ADDR is a name, check it resolves to the same routable address everywhere "
                                     "(getent hosts NAME); a 'gai error' warning beside it says it did not resolve")]

SIGNATURES = (
    # torch/cuda/__init__.py (_check_capability): "{name} with CUDA capability sm_{cc} is not compatible with the current
    # PyTorch installation. The current PyTorch install supports CUDA capabilities {arch list}." -- torch found no
    # kernels of its build (nor of a compatible major) for this GPU, so its CUDA calls and its bundled NCCL's fail
    # ('no kernel image is available', 'named symbol not found'). A GPU the build does list is not this warning.
    sig("torch_gpu_arch_unsupported", ("is not compatible with the current PyTorch installation",),
       r"with CUDA capability (?P<sm>sm_\d{2,3}) is not compatible with the current PyTorch installation",
       "nccl_internal_bug", ROOT, 2, "the PyTorch build (and the NCCL it carries) has no kernels for this GPU",
       code="LOG085", params=lambda hs: {"what": f"PyTorch was not built for {group(hs, 'sm') or 'this GPU'}"}),
    # commdoctor.hooks' own reports (hooks/checker.py), raised in the training code as CollectiveMismatchError or, in
    # report mode, written as "commdoctor.hooks: [rank R] ...": "ranks disagree on collective #N of GROUP: they differ
    # in WHAT" with a line per rank under it ("  rank 0: all_reduce(SUM) float32 [16384] at job.py:69"); "call order
    # differs at collective(s) #N ..."; "point-to-point #N from rank A to rank B (tag T) in group G does not match".
    # The hooks compared every rank's call before it ran: the mismatch, said outright.
    sig("hooks_report", ("ranks disagree on collective #", "call order differs at collective", "does not match: rank"),
        r"\[rank \d{1,7}\] (?:ranks disagree on collective #\d{1,12} of .{1,300}?: they differ in (?P<what>[\w ,/]{1,80})"
        r"|call order differs at collectives? #\d{1,12}"
        r"|point-to-point #\d{1,12} from rank \d{1,7} to rank \d{1,7} \(tag -?\d{1,12}\) in group \S{1,80} does not match)",
        "collective_mismatch", ROOT, 1, "commdoctor.hooks found ranks calling different collectives", code="LOG050",
        build=_hooks_report),
    ctx("hooks_rank_call", (": all_reduce", ": broadcast", ": reduce", ": all_gather", ": all_to_all", ": gather",
                            ": scatter", ": barrier", ": send", ": recv"),
        r"^\s{0,8}(?P<call>ranks? [\d, and-]{1,80}:\s{1,40}\w{1,40}(?:\(\w{1,16}\))? \S.{0,240})$",
        "a rank's call under commdoctor.hooks' report", harmless=True),
    # The flight recorder's analyser (torch/distributed/flight_recorder/components/utils.py error_analysis, run as
    # `python -m torch.distributed.flight_recorder.fr_trace`) prints what it found per collective: a rank that sent
    # something else ("Collective sequence number: N has errors" with "error msg: Culprit rank R; Error type:
    # SIZE_OR_SYNTAX_MISMATCH", COLLECTIVE_TYPE_MISMATCH, COLLECTIVE_DTYPE_MISMATCH), all_to_all sizes that do not add
    # up ("Input/output mismatch in the collective sequence number: N"), and giving up on a group ("Too many
    # mismatches for process_group N: NAME aborting"). COLLECTIVE_STATE_MISMATCH (completed on one rank, scheduled on
    # another) is no different call. Ranks with no entry for the collective ("Not all ranks joining collective,
    # sequence number: N" and "missing ranks: {...}" under it) never called it: late, or on another path.
    sig("fr_analysis_mismatch", ("Input/output mismatch in the collective", "Error type: ", "Too many mismatches for process_group"),
        r"Input/output mismatch in the collective sequence number: \d{1,12}"
        r"|(?:Culprit rank (?P<culprit>\d{1,7}); )?Error type: (?P<kind>SIZE_OR_SYNTAX_MISMATCH|COLLECTIVE_TYPE_MISMATCH"
        r"|COLLECTIVE_DTYPE_MISMATCH)\b|Too many mismatches for process_group \S{1,40}: ?\S{0,80} aborting",
        "collective_mismatch", ROOT, 2, "the flight recorder's analyser found ranks that called different collectives",
        code="LOG050"),
    # (Its earlier wordings: "Not all ranks joining collective 5 at entry 4" (torch 2.5-2.6, the flight recorder
    # tutorial's output) and "Not all ranks joining collective for group 0:default_pg collective nccl:all_reduce
    # Missing ranks are {1}" (tools/flight_recorder, torch 2.4).)
    # `ps aux` / `ps -eo` rows of the job's processes: USER PID %CPU %MEM VSZ RSS TTY STAT START TIME COMMAND, a STAT
    # starting with D for a process of the job (python, torchrun's workers) -- read by _stuck_in_kernel.
    ctx("ps_d_state", (" Dl ", " D ", " Ds ", " D+ ", " Dl+ ", " Dsl ", " DN ", " Dsl+ "),
        r"^\S{1,32}\s{1,8}(?P<pid>\d{1,10})\s{1,8}[\d.]{1,6}\s{1,8}[\d.]{1,6}\s{1,8}\d{1,14}\s{1,8}\d{1,14}\s{1,8}\S{1,12}"
        r"\s{1,8}D[<NLsl+]{0,5}\s{1,8}\S{1,8}\s{1,8}[\d:]{1,12}\s{1,8}(?:\S{0,200}/)?python",
        "a process of the job in uninterruptible sleep (ps state D)"),
    # py-spy's and strace's own failures to attach to a process (ptrace refused: another user's process, or
    # kernel.yama.ptrace_scope) are the debugging tool's, not the job's.
    ctx("tool_attach_refused", ("Failed to suspend process", "ptrace(PTRACE_"),
        r"^Error: Failed to suspend process$|^strace: attach: ptrace\(PTRACE_\w{1,12}, \d{1,10}\): Operation not permitted",
        "a debugger (py-spy, strace) could not attach to a process", harmless=True),
    # torchft's lighthouse (src/lighthouse.rs), the coordinator of fault-tolerant replica groups: "Replica %s timed out
    # (last heartbeat: ...), sending failure notification" once a replica group's heartbeats stop -- its processes
    # exited or hang -- then "New failure detected, resetting all participants for quorum formation." The other
    # groups' closed store connections that follow are its echo.
    sig("torchft_heartbeat_lost", ("timed out (last heartbeat",),
        r"Replica (?P<replica>\S{1,200}) timed out \(last heartbeat",
        "peer_process_died", ROOT, 4, "torchft's lighthouse stopped hearing from a replica group",
        code="LOG060", fails=True,
        params=lambda hs: {"what": f"the replica group {(group(hs, 'replica') or '?').split(':')[0]} stopped sending "
                                   "heartbeats to torchft's lighthouse (its processes exited, were killed or hang)"},
        alts=[("collective_timeout_straggler", "a replica whose training loop is stuck (not dead) stops its heartbeats "
                                               "too: its own log or stack tells which")]),
    # torch's desync report (TORCH_NCCL_DESYNC_DEBUG=1, c10d TraceUtils.h analyzeLaggingRanks / analyzeMissingRanks),
    # under a watchdog timeout: "[1] finished collective #2, but didn't join collective #3 (count from 1)", "[1, 2]
    # joined but didn't finish collective #2 (count from 1)", "ranks [3] are the lagging ranks that caused this
    # timeout. They never joined any collectives". Read by _watchdog, which names those ranks.
    ctx("desync_lagging", ("but didn't join collective", "joined but didn't finish collective", "are the lagging ranks"),
        r"\[(?P<fin>\d{1,7}(?:, ?\d{1,7}){0,63})\] finished collective #(?P<n>\d{1,12}), but didn't join collective #(?P<next>\d{1,12})"
        r"|\[(?P<mid>\d{1,7}(?:, ?\d{1,7}){0,63})\] joined but didn't finish collective #(?P<n2>\d{1,12})"
        r"|ranks \[(?P<never>\d{1,7}(?:, ?\d{1,7}){0,63})\] are the lagging ranks that caused this timeout",
        "the ranks torch's desync report found lagging (TORCH_NCCL_DESYNC_DEBUG)"),
    sig("fr_analysis_missing", ("Not all ranks joining collective",),
        r"Not all ranks joining collective(?:, sequence number: (?P<seq>\d{1,12})| (?P<seq2>\d{1,12}) at entry \d{1,12}"
        r"| for group \S{1,120} collective \S{1,80}\s{1,4}Missing ranks are \{(?P<ranks>[\d, ]{1,400})\})",
        "collective_timeout_straggler", ROOT, 4, "the flight recorder's analyser found ranks that never called a collective",
        code="LOG051", build=_fr_missing),
    ctx("fr_analysis_missing_list", ("missing ranks:",), r"^\s{0,8}missing ranks: \{(?P<ranks>[\d, ]{1,400})\}",
        "the ranks the flight recorder's analyser found missing from a collective"),
    # NCCLUtils.hpp C10D_CHECK_TIMEOUT (torch 2.2 on): a non-blocking NCCL call (ncclCommInitRankConfig, ncclCommSplit,
    # finalize) still in progress when the process group's timeout ran out: "NCCL timeout in: %s:%d, %s". The set-up
    # is collective: a rank that never reached it (busy elsewhere, or gone) leaves the others waiting there.
    sig("nccl_nonblocking_timeout", ("NCCL timeout in:",),
        r"\bNCCL timeout in: (?P<where>\S{1,300}?):\d{1,6}",
        "collective_timeout_straggler", ROOT, 5, "a non-blocking NCCL set-up call did not complete within the timeout",
        code="LOG051", params=lambda hs: {"op": "NCCL's communicator set-up (non-blocking init or split)",
                                          "timeout": "the process group's timeout",
                                          "who": "a rank never reached the set-up (busy elsewhere, or gone), or the "
                                                 "set-up itself hangs"},
        alts=[("nccl_internal_bug", "if every rank reached init_process_group / new_group, NCCL's set-up hung: rerun "
                                    "with NCCL_DEBUG=INFO to see where it stops")]),
    # ProcessGroupNCCL's error propagation (torch 2.7 on, TORCH_NCCL_PROPAGATE_ERROR): a rank that hit an NCCL error
    # writes it to the store and the others' watchdogs read it: "remote error detected from rank: %d". That rank's
    # own log says what failed; here it is only the news of it.
    sig("nccl_remote_error_rank", ("remote error detected from rank",),
        r"\bremote error detected from rank: ?(?P<rank>\d{1,7})",
        "peer_process_died", CONSEQUENCE, 6, "another rank reported an NCCL error first (torch's error propagation)",
        code="LOG060", params=lambda hs: {"what": f"rank {group(hs, 'rank')} failed first: its NCCL error reached "
                                                  "this rank through the store; its own log says what failed"}),
    # -- stores and rendezvous ----------------------------------------------------------------------
    # torch 1.x's TCPStore client said "connect() timed out. Original timeout was %d ms." for the same failure.
    sig("store_connect_timeout", ("client socket has timed out", "failed to connect to", "timed out after",
                                  "connect() timed out"),
       r"connect\(\) timed out\. Original timeout was \d+ ?ms|client socket has timed out after \d+ ?m?s while trying to connect to \(?(?P<host>[^,\s)]{1,255}),? ?(?P<port>\d{1,5})?"
       r"|client socket has failed to connect to (?:any (?:network )?address of )?\(?\[?(?P<host2>[^\]\s,)]{1,255})",
       "rendezvous_unreachable", ROOT, 3, "a rank could not connect to the rendezvous store",
       code="LOG011", build=_store_connect_rule,
       params=lambda hs: {"endpoint": next((f"{x.groups.get('host') or x.groups.get('host2')}:{x.groups.get('port') or '?'}"
                                            for x in hs if x.groups.get("host") or x.groups.get("host2")), "the store"),
                          "how": "timed out connecting"},
       alts=STORE_CONNECT_ALTS),
    sig("store_wait_clients", ("waiting for clients", "clients joined"),
       r"[Tt]imed out after (?P<secs>\d+) seconds waiting for clients\. (?P<joined>\d+)/(?P<world>\d+) clients joined",
       "rendezvous_unreachable", ROOT, 3, "the store on rank 0 waited for ranks that never connected",
       code="LOG012", params=lambda hs: {"joined": f" ({hs[0].groups.get('joined')}/{hs[0].groups.get('world')} joined)"},
       alts=[("launcher_misconfig", "if fewer processes were started than WORLD_SIZE (check the launcher's "
                                    "task count), nobody failed to connect: they never existed"),
             ("peer_process_died", "a rank that crashed before init_process_group also never joins: look for its own traceback")]),
    sig("rdzv_connection", ("RendezvousConnectionError", "connection to the C10d store has failed"),
       r"RendezvousConnectionError|connection to the C10d store has failed",
       "rendezvous_unreachable", ROOT, 3, "the elastic agent lost (or never had) its connection to the c10d rendezvous store",
       build=_rdzv_connection),
    # torchelastic's etcd rendezvous logs "Etcd machines: " + str(client.machines) when it connects: python-etcd's
    # list of the client URLs the etcd cluster advertises (/v2/machines), which the client, made with
    # allow_reconnect=True, goes to from then on. A server started with a local address as its advertised URL
    # (--advertise-client-urls http://0.0.0.0:2379, or 127.0.0.1, localhost) sends every agent on another host to
    # itself (pytorch/elastic#113: endpoint 172.20.74.130:2379, machines ['http://0.0.0.0:2379'], then "host not
    # found"; the etcd server's set-up was what the reporter fixed).
    sig("etcd_advertises_local", ("Etcd machines:",),
       r"Etcd machines: \[[^\]\n]{0,400}?'https?://(?P<addr>0\.0\.0\.0|127\.\d{1,3}\.\d{1,3}\.\d{1,3}|localhost|\[::1?\])"
       r"(?::\d{1,5})?/?'",
       "rendezvous_unreachable", ROOT, 4, "the etcd server advertises a local address as its client URL",
       code="LOG151", params=lambda hs: {"addr": group(hs, "addr") or "?"},
       # A risk until it fails: agents on the etcd host itself reach it there (a one-node job runs).
       build=lambda m, hs, found: [own_reading(hs, weak=True)]),
    sig("rdzv_timeout", ("RendezvousTimeoutError", "RendezvousClosedError"),
       r"Rendezvous(?:Timeout|Closed)Error",
       "rendezvous_unreachable", ROOT, 4, "the elastic rendezvous did not complete: not every node arrived",
       build=_rdzv_timeout),
    sig("store_barrier", ("store based barrier", "store_based_barrier"),
       r"store based barrier.{0,200}?\(world_size=(?P<world>\d+), (?:worker_count|num_workers_joined)=(?P<joined>\d+)",
       "launcher_misconfig", ROOT, 3, "process-group init waited for ranks that never joined the store barrier",
       build=_store_barrier),
    sig("backend_not_built", ("doesn't have", "support is not compiled"),
       r"Distributed package doesn't have (?P<backend>NCCL|MPI|UCC|Gloo|\w+) built in"
       r"|for (?P<backend2>nccl|mpi|ucc) backend, but (?:NCCL|MPI|UCC) support is not compiled",
       "other", ROOT, 1, "init_process_group asked for a backend this torch build does not have",
       build=_backend_not_built),
    # ProcessGroup::getBackend(DeviceType) (torch/csrc/distributed/c10d/ProcessGroup.hpp): a group keeps one backend per
    # device type; a collective on a tensor whose device type has none (a CPU tensor on a group made with "nccl" alone)
    # raises this on the rank that passed it, before anything is sent.
    # An accelerator other than CUDA (xpu, hpu, npu, mps) without a backend is the group made without that device's
    # collective library (xccl, ccl, hccl), or with it failing to load (intel/torch-xpu-ops#1328: oneCCL's XPU part
    # did not load and the job went on with gloo): _device_without_backend.
    sig("device_without_backend", ("No backend type associated",),
       r"No backend type associated with device type (?P<device>\w+)",
       "other", ROOT, 1, "a collective got a tensor on a device type the group has no backend for",
       code="LOG044", params=lambda hs: {"device": group(hs, "device") or "?"}, build=_device_without_backend,
       detail="A process group holds one backend per device type. A group created with backend \"nccl\" has one for "
              "CUDA tensors only, so a collective on a CPU tensor finds none and raises on the rank that passed it, "
              "before anything is sent; the ranks then exit with this error."),
    # ProcessGroupNCCL's collectives check their inputs (check_gpu_single_tensor / check_gpu_tensors_same_device in
    # ProcessGroupNCCL.cpp): "Tensors must be CUDA and dense", raised on the rank that passed a CPU or sparse tensor.
    sig("tensor_not_cuda", ("Tensors must be CUDA and dense",),
       r"Tensors must be CUDA and dense",
       "other", ROOT, 1, "an NCCL collective got a tensor that is not a dense CUDA tensor",
       code="LOG044", params=lambda hs: {"device": "CPU (or sparse)"}),
    # A compiled extension (a communication library's torch bindings, apex, flash-attn, DeepSpeed's ops) links against
    # torch's C++ API; the loader refusing one of its symbols in torch's namespaces (mangled _ZN3c10.., _ZN2at..,
    # _ZN5torch..) means it was built against another torch: another release, or the other C++ string ABI, whose
    # symbols say std::__cxx11 (intel/torch-ccl#16: built with the new ABI, run on a pip torch with the old one).
    sig("ext_built_for_other_torch", ("undefined symbol: _Z",),
       r"(?P<lib>[\w./+-]{1,300}\.so[\w.]{0,20}): undefined symbol: (?P<sym>_Z\w{0,8}?(?:3c10|2at|5torch)\d\w{0,400})",
       "version_mismatch", ROOT, 1, "a compiled extension was built against another torch than the one it runs with",
       code="LOG146", params=lambda hs: {"lib": str(group(hs, "lib") or "an extension").rsplit("/", 1)[-1],
                                         "abi": " (its symbol has the new C++ string ABI, std::__cxx11)"
                                                if "__cxx11" in str(group(hs, "sym")) else ""}),
    # TCPStore.cpp: a store created with use_libuv=True (the default from torch 2.4) in a build without libuv, as the
    # Windows and some source builds of 2.4 were: "use_libuv was requested but PyTorch was built without libuv
    # support, run with USE_LIBUV=0 to disable it." (torch 2.4-2.5 spelt it "was build without": pytorch#139990.)
    sig("libuv_missing", ("use_libuv was requested",),
       r"use_libuv was requested but PyTorch was buil[dt] without libuv support",
       "other", ROOT, 1, "the store asked for libuv, which this torch build lacks",
       code="LOG093"),
    # distributed_c10d.py _get_default_group: "Default process group has not been initialized, please make sure to
    # call init_process_group." A distributed call (a collective, get_rank, SyncBatchNorm, DDP) ran in a process that
    # never created the default group: most often a script meant for torchrun started with plain python, or a
    # launcher flag the program reads to call init_process_group left out.
    sig("pg_not_initialized", ("Default process group has not been initialized", "Default process group is not initialized"),
       r"Default process group (?:has not been|is not) initialized",
       "launcher_misconfig", ROOT, 4, "a distributed call ran before (or without) init_process_group",
       code="LOG094",
       alts=[("other", "if the job was launched as intended, the program calls a distributed API on a path that runs "
                       "before init_process_group (an import-time barrier, a SyncBatchNorm in single-GPU evaluation)")]),
    # ProcessGroupNCCL's constructor: "ProcessGroupNCCL is only supported with GPUs, no GPUs found!" -- this process
    # sees no CUDA device at all.
    # DeepSpeed's runner (launcher/runner.py) counts the devices before starting anything: "Unable to proceed, no GPU
    # resources available" is the same empty device list, seen by the launcher.
    # ... and torch's own check of the device count (c10/cuda/CUDAFunctions.cpp: "No CUDA GPUs are available"; a ROCm
    # build hipifies it to "No HIP GPUs are available"), CUDA's cudaErrorNoDevice (100, "no CUDA-capable device is
    # detected").
    # (Megatron-LM's initialize_megatron checks torch.cuda.is_available() first: "Megatron requires CUDA.")
    sig("no_gpu_visible", ("no GPUs found", "no GPU resources available", "No CUDA GPUs are available",
                           "No HIP GPUs are available", "no CUDA-capable device is detected", "Megatron requires CUDA"),
       r"ProcessGroupNCCL is only supported with GPUs, no GPUs found|Unable to proceed, no GPU resources available"
       r"|\bNo (?:CUDA|HIP) GPUs are available|\bno CUDA-capable device is detected|AssertionError: Megatron requires CUDA\.",
       "launcher_misconfig", ROOT, 2, "the process asked for NCCL but sees no GPU",
       code="LOG066", params=lambda hs: {"what": "the process that created an NCCL group sees no GPU"},
       detail="CUDA found no device in this process: the job step was given no GPUs (srun without --gpus/--gres, a "
              "container started without --gpus / the NVIDIA runtime, a pod without nvidia.com/gpu), or "
              "CUDA_VISIBLE_DEVICES is empty or names no device.",
       alts=[("driver_cuda_mismatch", "if the job does hold GPUs, a driver that is not loaded or too old for this "
                                      "CUDA hides them: nvidia-smi inside the job says which")]),
    # torch/csrc/distributed/c10d/reducer.cpp: DDP's next forward found the previous iteration's reduction unfinished
    # because some parameters got no gradient ("Expected to have finished reduction in the prior iteration before
    # starting a new one. This error indicates that your module has parameters that were not used in producing
    # loss."). Raised on the rank itself; the ranks' allreduce buckets no longer agree.
    # With TORCH_DISTRIBUTED_DEBUG=INFO/DETAIL the same check first logs each such parameter at INFO ("[Rank N]
    # Parameter: NAME did not get gradient in backwards pass.") and appends "Parameters which did not receive grad
    # for rank N: ..." to the error: both are written only on this error's path.
    sig("ddp_unused_params", ("Expected to have finished reduction in the prior iteration",
                              "has parameters that were not used in producing the loss",
                              "did not get gradient", "did not receive grad for rank"),
       # Lightning's rewording of DDP's error (pytorch/strategies/ddp.py): "It looks like your LightningModule has
       # parameters that were not used in producing the loss returned by training_step."
       r"Expected to have finished reduction in the prior iteration before starting a new one"
       r"|It looks like your LightningModule has parameters that were not used in producing the loss"
       r"|\[Rank \d{1,6}\] Parameter: \S+ did not get gradient\b|Parameters which did not receive grad for rank \d",
       "other", ROOT, 1, "DDP found parameters that took no part in the loss",
       code="LOG095", fails=True),
    # torch's NCCL backend of symmetric memory (c10d/symm_mem/NCCLSymmetricMemory.cu) registers each buffer as an
    # NCCL window (ncclCommWindowRegister) at rendezvous: "Failed to window register segment with ptr P, size S on
    # rank R" after NCCL's result. NCCL refuses the window when the group's communicator does not exist yet (c10d
    # creates it at the group's first collective unless init_process_group got device_id) or when the buffer is not
    # memory NCCL can map (not from symm_mem's allocator / cuMem).
    sig("symm_mem_window", ("Failed to window register segment",),
        r"Failed to window register segment with ptr \S{1,40}, size (?P<size>\d{1,16}) on rank (?P<rank>\d{1,6})",
        "other", ROOT, 3, "NCCL refused to register a symmetric-memory buffer as a window",
        code="LOG098", params=lambda hs: {"what": "registering a symmetric-memory buffer as an NCCL window "
                                                  f"(torch's symm_mem rendezvous, rank {group(hs, 'rank')})"},
        detail="The NCCL backend of torch's symmetric memory needs the group's NCCL communicator created before "
               "symm_mem.rendezvous: c10d creates it lazily, at the first collective, unless init_process_group (or "
               "new_group) is given device_id. Pass device_id=torch.device('cuda', local_rank), or run a collective "
               "on the group first; the buffer must come from symm_mem.empty.",
        alts=[("nccl_internal_bug", "with an initialised communicator and symm_mem.empty buffers, the NCCL release "
                                    "(windows need 2.27 or later) or its CUMEM/NVLS support on this system")]),
    # torch.multiprocessing.spawn: ProcessExitedException("process %d terminated with signal %s") -- mp.spawn's report
    # of a child killed by a signal (SIGKILL: the kernel's OOM killer, or the scheduler). paddle.distributed.spawn
    # words it "Process %d terminated with signal %s.".
    # A child that died of SIGABRT aborted itself: after a watchdog timeout or another error in the logs, that error
    # is the cause and the death what followed (as torchrun's exitcode -6).
    sig("spawn_signal", ("terminated with signal",),
       r"[Pp]rocess (?P<rank>\d{1,6}) terminated with signal (?P<sig>SIG[A-Z]{2,8})",
       "peer_process_died", ROOT, 3, "mp.spawn reports a process killed by a signal",
       code="LOG060", build=_spawn_signal, phase=PHASE_DEATHS),
    # torch/cuda/__init__.py _lazy_init: "Cannot re-initialize CUDA in forked subprocess. To use CUDA with
    # multiprocessing, you must use the 'spawn' start method": a child forked from a process that had already used
    # CUDA (worker pools, vLLM's VLLM_WORKER_MULTIPROC_METHOD=fork, DataLoader workers touching the GPU).
    sig("cuda_forked", ("Cannot re-initialize CUDA in forked subprocess", "can't create new processes if CUDA is already",
                        "CUDA has been initialized before the `notebook_launcher`"),
       # Lightning's and accelerate's checks before they fork (fabric/strategies/launchers/multiprocessing.py
       # "Lightning can't create new processes if CUDA is already initialized"; accelerate/launchers.py "CUDA has
       # been initialized before the `notebook_launcher` could create a forked subprocess").
       r"Cannot re-initialize CUDA in forked subprocess|Lightning can't create new processes if CUDA is already initialized"
       r"|CUDA has been initialized before the `notebook_launcher` could create a forked subprocess",
       "other", ROOT, 1, "a process forked after CUDA was initialised tried to use CUDA",
       code="LOG096"),
    # -- collectives and their timeouts --------------------------------------------------------------
    sig("collective_mismatch", ("mismatch between collectives", "CollectiveFingerPrint", "collective mismatch", "doesn't match expected size",
                               "op.preamble.length", "op.preamble.roffset", "inconsistent collective", "Mismatch between collectives",
                               "appears not to match", "DDP expects same model", "due to shape mismatches",
                               "Error when verifying shape tensors"),
       # ProcessGroupWrapper names collectives by CollectiveFingerPrint both in its mismatch error and, under DETAIL with
       # TORCH_CPP_LOG_LEVEL=INFO, in its trace of every collective ("] Running collective: CollectiveFingerPrint(...)"):
       # the trace says nothing went wrong.
       r"[Dd]etected mismatch between collectives|inconsistent collective|(?<!Running collective: )CollectiveFingerPrint"
       r"|collective mismatch"
       # gloo tcp/pair.cc, reading a peer's payload: into an unbound buffer ("op.preamble.length <= op.nbytes", "Received
       # data size doesn't match expected size") or a bound one ("op.preamble.roffset + op.preamble.length <=
       # op.buf->size_"): the peer sent more than this rank posted for that slot.
       r"|Received data size doesn't match expected size|op\.preamble\.length <= op\.nbytes"
       r"|op\.preamble\.roffset \+ op\.preamble\.length <= op\.buf->size_"
       r"|appears not to match (?:sizes|strides) of the same param in process|DDP expects same model across all ranks"
       # accelerate's operation check (utils/operations.py verify_operation, under ACCELERATE_DEBUG_MODE) before a
       # gather/reduce: "Cannot apply desired operation due to shape mismatches. All shapes across devices must be valid."
       r"|Cannot apply desired operation due to shape mismatches"
       # ProcessGroupWrapper (DETAIL) all-gathers each collective's input shapes before running it: "Error when
       # verifying shape tensors for collective ALLREDUCE on rank 0. This likely indicates that input shapes into the
       # collective are mismatched across ranks. Got shapes: ..."
       r"|Error when verifying shape tensors for collective",
       "collective_mismatch", ROOT, 1, "ranks called different collectives, or the same one with different sizes",
       code="LOG050", exclude=("wrapper_barrier_error",)),
    # (Ray's collective library, util/collective/collective_group/nccl_collective_group.py, waits the same way for the
    # id rank 0 puts in a named actor: "Unable to get the NCCLUniqueID from the store within {} seconds.")
    sig("store_get_timeout", ("ncclUniqueId", "store->get", "Socket Timeout", "wait timeout", "Unable to get the NCCLUniqueID"),
       r"retrieving ncclUniqueId from \[(?P<src>\d+)\].{0,200}?(?:Socket Timeout|[Tt]imeout|timed out)|store->get\([^)]{0,80}\) got error: (?:Socket Timeout|[Tt]imeout)"
       r"|Unable to get the NCCLUniqueID from the store within \d{1,6} seconds",
       "collective_timeout_straggler", ROOT, 4, "a rank waited in the store for rank 0's NCCL unique id until the timeout",
       build=_unique_id),
    # torch/distributed/elastic/agent/server/api.py: each node's agent writes its node's key
    # (torchelastic/role_info/<node rank>, assigned_ranks/...) and waits for every node's. A wait timeout on
    # those keys is the launchers not agreeing on the nodes: a node rank used twice, a wrong --nnodes, a node
    # not started; not a rank late in a collective.
    # elastic/agent/server/api.py _assign_worker_ranks: a frame of the agent's own traceback when it lost the store
    # while the nodes' keys were exchanged (read with the closed connection under it).
    sig("agent_rank_exchange", ("_assign_worker_ranks",), r"\bin _assign_worker_ranks\b",
        "launcher_misconfig", ROOT, 3, "a launcher lost the job's store while the nodes' agents exchanged their keys",
        code="LOG062", build=_store_gone_in_rank_exchange),
    sig("agent_keys_wait", ("wait timeout after",), r"wait timeout after (?P<ms>\d+) ?ms, keys: \S{0,100}torchelastic/",
        "launcher_misconfig", ROOT, 3, "the launchers (torchrun's agents) waited for a node's key that no node wrote",
        code="LOG062", params=lambda hs: {"what": "the nodes' agents waited for each other's node keys (torchelastic/"
                                                  "role_info): two nodes with one --node-rank, or --nnodes larger than "
                                                  "the nodes started"},
        alts=[("peer_process_died", "a node whose agent died before writing its key looks the same: look for its own "
                                    "error"),
              ("rendezvous_unreachable", "a node that could not reach the store never writes its key either")]),
    # gloo's own stores (rendezvous/file_store.cc, hash_store.cc, redis_store.cc; Horovod's HTTP store derives from
    # them) say it as GLOO_THROW_IO_EXCEPTION("Wait timeout for key(s): ", keys): the keys are the ranks whose
    # addresses the full-mesh rendezvous waited for. Horovod's http_store.cc: "Wait timeout after %d seconds for
    # key(s): %s".
    # torchrun's exit barrier (elastic/agent/server/api.py _exit_barrier, elastic/utils/store.py barrier): each node's
    # agent waits, once its workers ended, for the others' to end too: "Timed out waiting on barrier on rank 0, for
    # key prefix: torchelastic/agent/terminal_state (world_size=4, missing_ranks=[rank 2 (node3)], timeout=300)",
    # "Error waiting on exit barrier. Elapsed: 300.46 seconds" -- the node named still runs (a hang, or slow).
    sig("exit_barrier", ("torchelastic/agent/terminal_state", "Error waiting on exit barrier"),
       r"Timed out waiting on barrier on rank \d{1,6}, for key prefix: torchelastic/agent/terminal_state[^\n]{0,80}?"
       r"missing_ranks=\[(?P<missing>[^\]]{1,200})\]|Error waiting on exit barrier\. Elapsed: [\d.]{1,10} seconds",
       "collective_timeout_straggler", ROOT, 6, "torchrun's agents waited for a node whose workers never ended",
       code="LOG055", params=lambda hs: {"what": (
           f"torchrun's exit barrier: {group(hs, 'missing')} never ended its workers (they still ran, or hung)"
           if group(hs, "missing") else "torchrun's exit barrier: another node's workers never ended")}),
    # DeviceMesh (torch/distributed/device_mesh.py): "Mesh should not be bigger than default world size %d, but found %d
    # ranks!", "DeviceMesh only support homogeneous hardware, but found %d ranks and %d %s devices!".
    sig("device_mesh_world", ("Mesh should not be bigger than default world size", "DeviceMesh only support homogeneous hardware"),
       r"Mesh should not be bigger than default world size (?P<world>\d{1,6}), but found (?P<n>\d{1,6}) ranks"
       r"|DeviceMesh only support homogeneous hardware, but found (?P<ranks>\d{1,6}) ranks and (?P<dev>\d{1,4}) \w{1,10} devices",
       "launcher_misconfig", ROOT, 2, "the device mesh does not fit the processes or GPUs started",
       code="LOG066", params=lambda hs: {"what": (
           f"a device mesh of {group(hs, 'n')} ranks in a world of {group(hs, 'world')}" if group(hs, "n") else
           f"{group(hs, 'ranks')} ranks on nodes of {group(hs, 'dev')} GPUs: DeviceMesh needs the same number of "
           "processes on every node, one per GPU")}),
    # torchrun tearing down a worker that ignores SIGKILL (elastic/multiprocessing/api.py): "Process %d did not exit
    # after SIGKILL within %ds; abandoning and continuing teardown. Worker may be in uninterruptible kernel sleep (e.g.
    # wedged on GPU/NIC)" -- a process stuck in the kernel, on a device that stopped answering.
    sig("worker_unkillable", ("did not exit after SIGKILL within",),
       r"Process \d{1,10} did not exit after SIGKILL within \d{1,5}s",
       "hardware_fault", ROOT, 4, "a worker stayed in the kernel after SIGKILL (a GPU or NIC that stopped answering)",
       code="LOG037", params=lambda hs: {"what": "a worker could not be killed (stuck in the kernel on its GPU or NIC: "
                                                 "dmesg shows the device; the host may need a reboot)"}),
    sig("store_wait_timeout", ("wait timeout after", "Socket Timeout", "waitForInput", "Wait timeout for key", "Wait timeout after"),
       r"wait timeout after (?P<ms>\d+) ?ms, keys: (?P<keys>\S{1,200})|(?:DistStoreError|RuntimeError|DistNetworkError): Socket Timeout"
       r"|waitForInput: socket (?:SocketImpl\([^)\n]{0,200}\)|\S{1,200}) timed out after (?P<ms2>\d+) ?ms|Wait timeout (?:after \d{1,6} seconds )?for key\(s\): (?P<gkeys>[^\n]{0,200})",
       "collective_timeout_straggler", ROOT, 5, "a rank waited in the store for a key another rank never wrote",
       code="LOG055", exclude=("store_get_timeout", "agent_keys_wait"),
       params=lambda hs: {"what": f"keys {group(hs, 'keys', 'gkeys')}" if group(hs, "keys", "gkeys") else "the store read timed out"},
       alts=[("peer_process_died", "the rank that should have written the key may have died first: "
                                   "look for its own error or exit code"),
             ("launcher_misconfig", "a rank that was never started never writes its key: check the "
                                    "launcher's task count against the world size")]),
    sig("monitored_barrier_peer", ("received errors while waiting for send/recv",),
       r"received errors while waiting for send/recv from rank (?P<rank>\d+)",
       "peer_process_died", ROOT, 5, "monitored_barrier got an error from a peer instead of its reply",
       build=_barrier_peer),
    sig("monitored_barrier", ("monitoredBarrier", "failed to pass monitoredBarrier"),
       r"[Rr]anks? (?P<ranks>[\d, ]+) failed to pass monitoredBarrier(?: in (?P<ms>\d{1,9}) ms)?",
       "collective_timeout_straggler", ROOT, 3, "monitored_barrier named ranks that did not arrive",
       build=_monitored_barrier),
    sig("rpc_timeout", ("RPC call to",),
       r"RPC call to (?P<what>\S+) timed out",
       "nccl_internal_bug", ROOT, 5, "a serving engine's workers stopped answering inside a model step",
       code="LOG053", params=lambda hs: {"what": "the engine's workers stopped answering inside a model step"},
       detail="The workers hang inside a step without an error of their own: a deadlock in collectives (notably NCCL "
              "collectives captured in CUDA graphs across nodes) is the known cause.",
       alts=[("collective_timeout_straggler", "if one worker is merely slow (loading, compiling), a "
                                              "longer RPC timeout lets it finish; a true deadlock never does"),
             ("peer_process_died", "a worker that died leaves the same RPC timeout: look for its exit")]),
    # torch 2.5-2.6's watchdog says "Work timeout is detected by watchdog at work: N, last enqueued NCCL work: E, last
    # completed NCCL work: C" (torch 2.7 on says " failure detected by watchdog at work sequence id: N ..." for a
    # timeout and for an NCCL error alike, so that one is no timeout: the real captures show it after a peer died);
    # TORCH_NCCL_BLOCKING_WAIT=1 makes the caller's wait raise "Work WorkNCCL(...) timed out in blocking wait.".
    sig("watchdog_timeout", ("Watchdog caught", "before timing out", "checkTimeout", "ncclCommWatchdog", "Timeout at NCCL work",
                            "failed or timed out", "collective timeout", "watchdog got stuck", "Heartbeat monitor timed out",
                            "due to ProcessGroupNCCL watchdog hang", "Work timeout is detected by watchdog",
                            "timed out in blocking wait"),
       # The heartbeat monitor's own exit (ProcessGroupNCCL.cpp, torch 2.3 on): "Terminating the process after
       # attempting to dump debug info, due to ProcessGroupNCCL watchdog hang." -- the same stuck watchdog.
       r"Watchdog caught collective operation timeout|ran for \d+ milliseconds before timing out|WorkNCCL::checkTimeout"
       r"|ncclCommWatchdog|Timeout at NCCL work|operations have failed or timed out|due to a collective timeout"
       r"|watchdog got stuck|Heartbeat monitor timed out|due to ProcessGroupNCCL watchdog hang"
       r"|Work timeout is detected by watchdog at work|\) timed out in blocking wait",
       "collective_timeout_straggler", CONSEQUENCE, 6, "a collective did not complete within the process-group timeout",
       build=_watchdog, always=True, phase=PHASE_WATCHDOG),
    # -- context ----------------------------------------------------------------------------------
    # socket.cpp's formatSockAddr warns when it cannot name the peer of a socket for a log message
    # (getnameinfo failed: err=-3 is EAI_AGAIN). The connection itself is made by address; nothing failed.
    # ProcessGroupNCCL.cpp: the watchdog ending the process on purpose after a failure it reported before.
    ctx("watchdog_abort", ("taking the entire process down", "watchdog thread terminated with exception"),
        r"we are taking the entire process down|[Ww]atchdog thread terminated with exception",
        "torch's watchdog aborted this process after a failure it logged before (SIGABRT follows)"),
    # TCPStore.cpp (TORCH_CPP_LOG_LEVEL=INFO): "The server has started on port = N." -- the store is listening.
    ctx("store_started", ("The server has started on port",), r"The server has started on port(?: = (?P<sport>\d{1,5}))?",
        "the rendezvous store is listening on this host", harmless=True),
    # ProcessGroupWrapper.cpp (TORCH_DISTRIBUTED_DEBUG=DETAIL): before each collective the wrapper runs a
    # monitored barrier; "Monitored Barrier encountered error running collective: <fingerprint>. Error: <why>"
    # quotes the fingerprint of the collective it was about to run and the barrier's own failure (a peer
    # gone or late). It is not a mismatch: that says "Detected mismatch between collectives".
    ctx("wrapper_barrier_error", ("Monitored Barrier encountered error",),
        r"ProcessGroupWrapper: Monitored Barrier encountered error running collective",
        "the DETAIL wrapper's barrier before a collective failed (a peer gone or late), quoting that collective"),
    # socket.cpp / TCPStore.cpp: the client reached the store (after any retries it logged before).
    ctx("store_connected", ("The client socket has connected to", "TCP client connected to host"),
        r"The client socket has connected to|TCP client connected to host (?P<host>[^\s:]{1,255}|\[[^\]]{1,64}\]):(?P<sport>\d{1,5})",
        "this process's connection to the store succeeded", harmless=True),
    # socket.cpp: "No socket on {} is listening yet, will retry." -- its wording for a refused connect (ECONNREFUSED)
    # to the store, which it retries until its timeout.
    ctx("store_not_listening", ("is listening yet",), r"No socket on \((?P<host>[^,\s)]{1,255}), ?(?P<port>\d{1,5})\) is listening yet",
        "a connect to the store was refused (nothing listened at that address yet); torch retries it", harmless=True),
    ctx("client_hostname_note", ("hostname of the client socket cannot be retrieved",),
        r"hostname of the client socket cannot be retrieved", "torch could not name a peer's address for a log message (harmless)"),
    sig("cudagraph_hint", ("graph", "Graph", "enforce_eager", "enforce-eager"),
       r"[Cc][Uu][Dd][Aa] ?[Gg]raph|cudagraph|CUDAGraph|enforce[_-]eager|graph capture",
       None, CONTEXT, 9, "CUDA graphs are in use"),
    # A traceback's frame inside transformers' / accelerate's main_process_first(): the other ranks wait in a barrier
    # there while the main process prepares data alone (tokenising, map(), caching). Read by _waited_for_main. A
    # traceback cut before that frame still shows the call site, `with args.main_process_first(...):`: a `with` line
    # stands in a traceback only when entering or leaving the block raised, and both are that barrier.
    ctx("main_first_frame", ("main_process_first",),
        r'File "[^"\n]{1,400}", line \d{1,7}, in main_process_first\b|^\s{0,12}with [\w.\[\]]{1,80}\.main_process_first\(',
        "a rank raised while waiting for the main process inside main_process_first()"),
    # A progress bar (tqdm) of data preparation with its elapsed time: HF datasets' "Map: 47%|...| 1695000/3634744
    # [30:09<33:25, 967.30 examples/s]", with the desc a program gives map() ("Running tokenizer on dataset"), filter()
    # and "Generating train split". Read by _prep_outlived_timeout.
    ctx("prep_bar", ("okeniz", "Map", "Filter", " split:", "reprocess", "re-process", "Grouping texts"),
        r"(?P<what>Running tokenizer on [\w ]{1,40}|[\w ]{0,40}[Tt]okeniz\w{0,10}[\w ]{0,40}|Map|Filter|Generating \w{1,20} split"
        r"|[\w ]{0,40}[Pp]re-?process\w{0,10}[\w ]{0,40}|Grouping texts[\w ]{0,40})(?: \(num_proc=\d{1,4}\))?:\s{0,3}(?P<pct>\d{1,3})%\|"
        r"[^|\n]{0,300}\|[^\[\n]{0,60}\[(?P<elapsed>(?:\d{1,3}:)?\d{1,2}:\d\d)<",
        "a process was preparing data (a progress bar with its elapsed time)"),
    # Checkpoint saves as frameworks log them: HF Trainer "Saving model checkpoint to {dir}", DeepSpeed "[Torch]
    # Checkpoint {tag} is about to be saved!", and a program's own "Saving latest/best checkpoint ...".
    sig("busy_hint", ("Generating", "pre-processing", "okeniz", "main_process_first", "checkpoint", "Checkpoint", "Saving",
                      "valuat", "map "),
       r"Generating \w+ split|pre-?processing|[Tt]okeniz|main_process_first|[Ss]aving (?:[\w-]{1,20} ){0,2}checkpoint"
       r"|[Cc]heckpoint \S{1,80} is about to be saved|[Ee]valuat\w+",
       None, CONTEXT, 9, "a rank was busy outside collectives (data preparation, checkpointing, evaluation)"),
)


def _traces_differ(m: Any, found: list[Cand], _unused: list[Cand]) -> list[Cand]:
    """The ranks' last collectives as ProcessGroupWrapper traced them (TORCH_DISTRIBUTED_DEBUG=DETAIL with
    TORCH_CPP_LOG_LEVEL=INFO) are not the same one, and the log goes no further.

    Ranks that run the same program trace the same collectives in the same order, so a job that ends in step leaves
    each rank's last trace equal. Where the log stops with ranks at different collectives and nothing else failing:
    - a rank's collective #N traced differently on another rank (operation, shape, dtype) is a mismatch;
    - a rank behind, whose last collective the ranks ahead traced the same way, is only behind (a job still running,
      a late rank): no finding;
    - a rank behind whose number the log does not show on the ranks ahead (a post of the last lines only) is read as
      ranks at different collectives, with the late rank as the alternative
      (Lightning-AI/pytorch-lightning#19106: metrics logged under different keys per rank, so a different number of
      object broadcasts)."""
    traced = {r: t for r, t in getattr(m, "traced", {}).items() if t}
    if len(traced) < 2 or completed(m) or any(c.cause and not c.weak for c in found):
        return []
    last = {r: t[-1] for r, t in traced.items()}
    groups: dict[tuple[int | None, str], list[int]] = {}
    for r, (seq, fp, _ev, _order) in sorted(last.items()):
        groups.setdefault((seq, fp), []).append(r)
    if len(groups) < 2:
        return []
    # The same number traced differently on two ranks, in what the log kept of each.
    at: dict[int, tuple[str, int]] = {}
    by: dict[int, set[int]] = {}  # collective number -> the ranks that traced it
    differs = None
    for r, kept in sorted(traced.items()):
        for seq, fp, _ev, _order in kept:
            if seq is None:
                continue
            by.setdefault(seq, set()).add(r)
            seen = at.setdefault(seq, (fp, r))
            if seen[0] != fp and differs is None:
                differs = (seq, seen[1], seen[0], r, fp)
    seqs = [k[0] for k in groups]
    if differs is None and None not in seqs:
        top = max(q for q in seqs if q is not None)
        # every rank behind is at a collective a rank ahead traced alike: behind, not apart
        if all(by.get(q, set()) - set(groups[(q, fp)]) for q, fp in groups if q is not None and q != top):
            return []

    def where(key: tuple[int | None, str]) -> str:
        seq, fp = key
        ranks = groups[key]
        who = f"rank {ranks[0]}" if len(ranks) == 1 else f"ranks {', '.join(map(str, ranks[:8]))}"
        return f"{who} at {'#' + str(seq) + ' ' if seq is not None else ''}{fp}"

    keys = sorted(groups, key=lambda k: (len(groups[k]), k[0] or 0))
    evs = [last[groups[k][0]][2] for k in keys][:4]
    order = min(t[3] for t in last.values())
    if differs is not None:
        seq, r1, fp1, r2, fp2 = differs
        return [Cand("LOG050", "collective_mismatch", 3, order, evs, ranks=set(last),
                     detail=f"ProcessGroupWrapper (TORCH_DISTRIBUTED_DEBUG=DETAIL) traced collective #{seq} as {fp1} on "
                            f"rank {r1} and as {fp2} on rank {r2}: the ranks issued different collectives. Where the log "
                            f"stops: {'; '.join(where(k) for k in keys[:4])}.")]
    return [Cand("LOG050", "collective_mismatch", 5, order, evs, ranks=set(last),
                 detail="The ranks' last traced collectives (ProcessGroupWrapper, TORCH_DISTRIBUTED_DEBUG=DETAIL) are "
                        f"not the same: {'; '.join(where(k) for k in keys[:4])}. Ranks running the same code trace "
                        "the same collectives in the same order; where the log stops they were at different ones. "
                        "Look for a collective issued under a rank-dependent condition (metrics or objects that differ "
                        "per rank, an early exit, evaluation on one rank).",
                 alts=[("collective_timeout_straggler", "if the ranks at lower numbers were still busy and the "
                                                         "log was cut before they caught up, this is a late rank")])]


def _failed_unexplained(m: Any, found: list[Cand]) -> bool:
    """The job failed (a traceback, an error, an exception, a watchdog timeout), did not finish, and no finding names
    a cause for it. An exit after a raise (LOG060 at tier 7) is that traceback's echo, not another cause."""
    failed = m.tracebacks or m.unmatched_errors or m.exceptions or any(w.timed_out for w in m.watchdog)
    return bool(failed) and not completed(m) and not any(c.cause and not c.weak and c.tier < 7 for c in found)


def _waited_for_main(m: Any, found: list[Cand], _unused: list[Cand]) -> list[Cand]:
    """A rank's traceback runs through main_process_first() (transformers' TrainingArguments, accelerate), and nothing
    else explains the failure.

    main_process_first() makes every other rank wait in a barrier until the main process has done the work alone
    (tokenising, dataset.map, caching) and joined the barrier itself. A rank can leave that barrier with an error in two
    ways: the main process died (its own error, another rule) or it took longer than the process group's timeout (30
    minutes by default): a straggler by design (hiyouga/ChatGLM-Efficient-Tuning#137: a 6.8M-example tokenisation at
    30:11 when the waiting rank failed)."""
    hs = hits(m, "main_first_frame")
    if not hs or not _failed_unexplained(m, found):
        return []
    busy = [h for h in hits(m, "busy_hint") if "main_process_first" not in h.ev.text][:1]
    return [cand("LOG051", "collective_timeout_straggler", 5, hs + busy,
                 params={"op": "the barrier in main_process_first()", "timeout": "the process group's timeout",
                         "who": "the main process was still preparing data alone while this rank waited"},
                 detail="main_process_first() holds every other rank in a barrier until the main process has finished "
                        "its data preparation (tokenising, map(), caching). Work that takes longer than the process "
                        "group's timeout (30 minutes by default) fails the waiting ranks"
                        + (f"; the log shows it: '{busy[0].ev.text[:120]}'." if busy else "."),
                 alts=[("peer_process_died", "if the main process died during the preparation (out of memory), its own "
                                             "error is the cause: look for it in rank 0's output")])]


def _minutes(clock: str) -> float:
    """tqdm's elapsed time ("30:09", "1:02:03") in minutes."""
    parts = [int(x) for x in clock.split(":")]
    return (parts[-3] * 60 if len(parts) == 3 else 0) + parts[-2] + parts[-1] / 60


def _prep_outlived_timeout(m: Any, found: list[Cand], _unused: list[Cand]) -> list[Cand]:
    """A process's data-preparation progress bar had run ten minutes or more when the job failed, and nothing else
    explains the failure.

    Work one process does while the others already wait in a collective or a barrier (tokenising on one node,
    dataset.map on rank 0) holds them there; they give up after the process group's timeout (30 minutes by default,
    10 minutes for NCCL groups in torch 2.2 and later) and raise, often in the middle of that process's bar
    (hiyouga/LLaMA-Factory: worker 1 tokenising at 30:09 when the traceback came). The last bar before the first
    failure is the one read."""
    bars = hits(m, "prep_bar")
    if not bars or not _failed_unexplained(m, found):
        return []
    # a job of several processes, as the logs show it (a rank named, a launcher's record, a watchdog, a traceback
    # inside torch.distributed): one process's long preprocessing and its own crash is not a wait
    if not (any(ri.rank is not None for ri in m.ranks.values()) or m.elastic or m.watchdog or m.raised_in):
        return []
    first = min([ev.line for ev in m.tracebacks if ev.source == bars[0].ev.source] or [10**12])
    before = [h for h in bars if h.ev.source != bars[0].ev.source or h.ev.line <= first] or bars
    bar = before[-1]
    # a bar at 100 % is work that finished; under ten minutes is shorter than any default timeout
    if bar.groups.get("pct") == "100" or _minutes(bar.groups["elapsed"]) < 9.9:
        return []
    what = (bar.groups.get("what") or "data preparation").strip()
    return [cand("LOG051", "collective_timeout_straggler", 5, [bar],
                 params={"op": "the other ranks' collective", "timeout": "the process group's timeout",
                         "who": f"a process was still in '{what}' after {bar.groups['elapsed']} when the job failed"},
                 detail=f"A process's progress bar ('{what}') had run for {bar.groups['elapsed']} when the failure came. "
                        "Ranks that reach a collective or a barrier while one process prepares data alone wait for it, "
                        "and give up after the process group's timeout (30 minutes by default, 10 minutes for NCCL "
                        "groups in torch 2.2 and later).",
                 alts=[("peer_process_died", "if the preparing process itself died (out of host memory), its own error "
                                             "is the cause")])]


def _stacks_one_elsewhere(m: Any, found: list[Cand], _unused: list[Cand]) -> list[Cand]:
    """py-spy dumps of a hung job's processes pasted in the logs: some main threads wait inside a torch.distributed
    call while others are in none. Those others hold everyone (a DataLoader deadlock, a filesystem wait, work one
    rank does alone); with pipeline or tensor groups the waiting ones may sit in different calls, which says nothing
    by itself, so only the ones outside every call are read."""
    main = [t for t in m.pyspy if t.name == "MainThread"] or list(m.pyspy)
    waiting = [t for t in main if t.call]
    late = [t for t in main if not t.call]
    if len(main) < 2 or not waiting or not late or any(c.tier <= 3 and not c.consequence for c in found):
        return []
    calls = Counter(t.call for t in waiting)
    op = calls.most_common(1)[0][0] or ""
    evs = [t.ev for t in late[:2]] + [waiting[0].ev]
    return [Cand("LOG128", "collective_timeout_straggler", 4, min(t.order for t in late), evs,
                 ranks={t.ev.rank for t in late if t.ev.rank is not None},
                 params={"waiting": f"{len(waiting)} of {len(main)}", "op": op + ("" if len(calls) == 1 else " and other calls"),
                         "late": f"{len(late)}", "late_are": "is" if len(late) == 1 else "are"},
                 alts=[("collective_mismatch", "if the process outside went on past a collective the others wait in "
                                               "(a rank-dependent branch), it skipped that call")])]


def _stuck_in_kernel(m: Any, found: list[Cand], _unused: list[Cand]) -> list[Cand]:
    """`ps` rows of the job's processes pasted beside a hang: a process in state D (uninterruptible sleep, inside a
    system call the kernel cannot interrupt: I/O, most often a network or parallel file system that stopped
    answering) while the others wait in a collective is the one they wait for."""
    d = hits(m, "ps_d_state")
    waiting = any(t.call for t in m.pyspy) or any(w.timed_out for w in m.watchdog)
    if not d or not waiting or any(c.tier <= 3 and not c.consequence for c in found):
        return []
    pids = sorted({str(h.groups.get("pid")) for h in d})
    return [cand("LOG129", "collective_timeout_straggler", 3, d, params={"pid": ", ".join(pids[:4])},
                 alts=[("hardware_fault", "a device or node whose driver stopped answering leaves the process in D "
                                          "state the same way: dmesg on that node")])]


MODEL_RULES = (
    ModelRule("torch_versions_differ", _torch_versions, "ranks that run different torch versions", phase=0),
    ModelRule("stuck_in_kernel", _stuck_in_kernel, "a process of a hung job in uninterruptible sleep (ps state D)"),
    ModelRule("stacks_one_elsewhere", _stacks_one_elsewhere, "py-spy dumps in the logs: main threads outside every "
                                                             "torch.distributed call while the others wait in one"),
    ModelRule("waited_for_main", _waited_for_main, "a rank that failed waiting for the main process in main_process_first()"),
    ModelRule("prep_outlived_timeout", _prep_outlived_timeout, "a process still preparing data when the others failed "
                                                                "after the process group's timeout"),
    ModelRule("wrapper_traces_differ", _traces_differ, "ranks whose last traced collectives differ where the log stops"),
)

CODES = (
    Code("LOG153", "store-host-not-master-addr", E, "node rank 0 started the store on its own host, but MASTER_ADDR "
         "({addr}) names another machine, where nothing listens: every host timed out dialling it",
         "Run --node-rank 0 on the host MASTER_ADDR names, or set MASTER_ADDR (--master-addr) on every node to the "
         "address of the host that runs node rank 0",
         cause="launcher_misconfig"),
    Code("LOG011", "rendezvous-unreachable", E, "a rank could not reach {endpoint} ({how})",
         "Check MASTER_ADDR/--rdzv-endpoint from the failing node: it must name the rendezvous host's routable address, with the port open and the master already started",
         cause="rendezvous_unreachable", steps=("nc -zv MASTER_ADDR MASTER_PORT from a worker node",
                                                "commdoctor run on each node checks the rendezvous stage")),
    Code("LOG012", "ranks-never-joined", E, "the rendezvous waited for ranks that never arrived{joined}",
         "Find out why the missing ranks did not start or connect: check the launcher's task count and their own logs",
         cause="rendezvous_unreachable"),
    Code("LOG041", "torch-versions-differ", E, "ranks run different torch versions ({versions})",
         "Run the same torch build on every node", cause="version_mismatch"),
    Code("LOG043", "backend-not-built", E, "the job asked for {backend}, which this torch build does not have",
         "{fallback}", cause="other",
         steps=("python -c 'import torch.distributed as d; print(d.is_nccl_available(), d.is_mpi_available(), "
                "d.is_ucc_available())' shows what this build has", "commdoctor run --job-backend BACKEND advises on this host")),
    Code("LOG150", "store-outlives-runs", E, "the store barrier counted more ranks than the world: {what}; the "
                                             "store holds arrivals of an earlier run",
         "Delete the init file before each run (init_method='file://...' must name a file that does not exist yet, or "
         "is empty), or give every run a new one; a tcp:// or env:// store is new with each job",
         cause="other"),
    Code("LOG151", "etcd-advertises-local-address", E, "the etcd rendezvous server advertises {addr} as its client "
                                                       "address: agents on other hosts are sent to themselves",
         "Start etcd with an address the other hosts reach: --advertise-client-urls http://<this host's IP>:2379 (it "
         "may still listen on 0.0.0.0 with --listen-client-urls); etcdctl member list shows what it advertises",
         cause="rendezvous_unreachable"),
    Code("LOG145", "accelerator-without-backend", E, "the group has no backend for {device} tensors: the device's "
                                                     "collective library is missing from it",
         "Create the group with the device's backend (init_process_group(\"xccl\") for Intel XPU where this torch "
         "has it, \"ccl\" with oneccl_bindings_for_pytorch where it does not; \"hccl\" for Gaudi and Ascend) and make "
         "sure its library loads: `python -c 'import torch.distributed as d; print(d.is_xccl_available())'`",
         cause="other"),
    Code("LOG146", "extension-built-for-other-torch", E, "{lib} was built against another torch than the one it runs "
                                                         "with{abi}",
         "Install the extension's build for this torch (same torch release, CUDA and C++ ABI), or rebuild it here: "
         "pip install --no-build-isolation --force-reinstall --no-cache-dir PACKAGE; "
         "`python -c 'import torch; print(torch.__version__, torch.compiled_with_cxx11_abi())'` shows what it must match",
         cause="version_mismatch"),
    Code("LOG093", "store-libuv-missing", E, "the TCPStore asked for libuv, which this torch build does not have",
         "Turn libuv off for the store: USE_LIBUV=0 in the environment (or init_method=\"env://?use_libuv=0\"), or "
         "use a torch build with libuv (the Windows wheels from 2.4.1 on fall back by themselves)",
         cause="other", env={"USE_LIBUV": "0"}),
    Code("LOG094", "process-group-not-initialized", E, "a distributed call ran in a process with no default process group",
         "Start the job through its launcher (torchrun --nproc-per-node=N script.py, or the program's own "
         "--launcher/--distributed option), or call torch.distributed.init_process_group before the first "
         "distributed call",
         cause="launcher_misconfig",
         steps=("the traceback's last frame of your code is the call that needed the group",)),
    Code("LOG095", "ddp-unused-parameters", E, "DDP found parameters that got no gradient in the last iteration",
         "Pass find_unused_parameters=True to DistributedDataParallel, or make every parameter take part in the loss "
         "on every rank (TORCH_DISTRIBUTED_DEBUG=DETAIL names the unused ones)",
         cause="other", env={"TORCH_DISTRIBUTED_DEBUG": "DETAIL (names the parameters)"}),
    Code("LOG096", "cuda-in-forked-child", E, "a process forked after CUDA was initialised tried to use CUDA",
         "Start worker processes with the 'spawn' method (torch.multiprocessing.set_start_method(\"spawn\"), "
         "mp.spawn, VLLM_WORKER_MULTIPROC_METHOD=spawn), or do not touch CUDA in the parent before forking",
         cause="other"),
    Code("LOG044", "tensor-device-without-backend", E, "a collective got a {device} tensor, and the group has no backend for {device} tensors",
         "Move the tensor to this rank's GPU before the collective (tensor.to(device)), or create the group with a backend "
         "per device: init_process_group(\"cpu:gloo,cuda:nccl\")",
         cause="other",
         steps=("the traceback's last frame of your code is the collective that got the tensor",)),
    Code("LOG050", "collective-mismatch", E, "ranks called different collectives, or the same one with different sizes",
         "Make every rank issue the same collectives in the same order with the same shapes (no rank-dependent control flow around them)",
         cause="collective_mismatch", env={"TORCH_DISTRIBUTED_DEBUG": "DETAIL"}),
    Code("LOG051", "collective-timeout-straggler", E, "{op} timed out after {timeout}: {who}",
         "Find what the late rank was doing (rank-0-only evaluation, data preparation, checkpointing) and run it on every rank, or before the process group starts; raise the timeout only for known-slow phases",
         cause="collective_timeout_straggler", steps=("commdoctor hang takes the stacks of every rank while it waits",)),
    Code("LOG128", "stacks-one-elsewhere", E, "py-spy shows {waiting} main threads waiting in {op} while {late} "
         "{late_are} in no torch.distributed call, holding the others",
         "Read the stacks of the processes outside the call: what they wait on (a DataLoader worker, a file system, "
         "work one rank does alone) is what to fix; `commdoctor hang` takes every rank's stack with its rank",
         cause="collective_timeout_straggler"),
    Code("LOG129", "process-in-d-state", E, "process {pid} is stuck in the kernel (ps state D, uninterruptible "
         "sleep) while the others wait for it in a collective",
         "A process in state D waits on I/O the kernel cannot interrupt, most often a network or parallel file system "
         "(NFS, Lustre, GPFS) that stopped answering: on its node read `cat /proc/PID/stack`, `dmesg` and the file "
         "system's health; it goes on only once that call returns (or the node is rebooted)",
         cause="collective_timeout_straggler"),
    Code("LOG052", "waited-for-unique-id", E, "ranks timed out waiting for rank {late} to publish NCCL's unique id",
         "Rank {late} was busy (preprocessing, tokenizing) when the first collective ran: do that work before the process group starts, or raise the timeout",
         cause="collective_timeout_straggler"),
    Code("LOG134", "first-collective-hung", E, "every rank of the job timed out in its first collective ({op}): {what}",
         "Nobody was late: the first collective's connections never completed. Across hosts, open the ports NCCL uses "
         "between them (not only MASTER_PORT: host firewalls, security groups, network policies) and pin "
         "NCCL_SOCKET_IFNAME / NCCL_IB_HCA to interfaces the hosts share; on one host, NCCL_P2P_DISABLE=1 tells "
         "whether peer-to-peer traffic (PCIe ACS, IOMMU) is what hangs",
         cause="firewall_or_port_blocked", env={"NCCL_DEBUG": "INFO"}),
    Code("LOG053", "collective-hang", E, "collectives hung: {what}",
         "Run without CUDA graphs (e.g. vLLM --enforce-eager) to confirm, then upgrade NCCL; take stacks of every rank while it hangs",
         cause="nccl_internal_bug", env={"NCCL_GRAPH_MIXING_SUPPORT": "0"}),
    Code("LOG054", "recv-timeout", E, "a gloo send/recv timed out: {who}",
         "Find which rank did not take part: take stacks (commdoctor hang) or rerun with TORCH_DISTRIBUTED_DEBUG=DETAIL",
         cause="collective_timeout_straggler", env={"TORCH_DISTRIBUTED_DEBUG": "DETAIL"}),
    Code("LOG055", "store-wait-timeout", E, "a rank waited in the store for a key another rank never wrote ({what})",
         "Find the rank that should have written it: a rank busy elsewhere (data preparation, evaluation on rank 0) "
         "or one that died or never started; move slow work before the process group starts or raise the timeout",
         cause="collective_timeout_straggler", steps=("commdoctor hang takes the stacks of every rank while it waits",)),
)
