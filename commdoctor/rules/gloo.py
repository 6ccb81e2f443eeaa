"""Rules for gloo's own messages (gloo/transport/tcp, gloo/common/linux, torch's ProcessGroupGloo).

Promise: rule rows only (see commdoctor.rules.base), written from gloo's
``GLOO_ENFORCE`` texts and its IoException messages.
"""

from __future__ import annotations

from typing import Any

from commdoctor.rules.base import CONTEXT, ROOT, Cand, cand, ctx, sig


def _recv_timeout(m: Any, hs: list[Any], found: list[Cand]) -> list[Cand]:
    """Every rank timed out in a send/recv: nobody was late, so the collectives did not pair up (a mismatch)."""
    known = {r.rank for r in m.ranks.values() if r.rank is not None} | {f.rank for f in m.elastic if f.rank is not None}
    world = max(known) + 1 if known else 0
    waited = {h.ev.rank for h in hs if h.ev.rank is not None}
    if world >= 2 and len(waited) >= world and all(r in waited for r in range(world)):
        return [cand("LOG050", "collective_mismatch", 5, hs,
                     detail=f"Every rank (0 to {world - 1}) timed out inside a collective: nobody was late, so the ranks "
                            "were in collectives that do not pair up (a different operation, size or order).",
                     alts=[("collective_timeout_straggler", "if one rank's log is missing from this set, it may simply "
                                                            "have arrived late: check that every rank's output is here"),
                           ("hardware_fault", "a network partition or an MTU black hole between the hosts times out "
                                              "every rank the same way: if the code paths are identical, test the network")])]
    return [cand("LOG054", "collective_timeout_straggler", 6, hs, alts=[
        ("collective_mismatch", "gloo gives this same timeout when ranks call different collectives (all_reduce against "
                                "broadcast); TORCH_DISTRIBUTED_DEBUG=DETAIL names the mismatch within milliseconds"),
        ("peer_process_died", "a peer that hung or died without closing its sockets also leaves the recv waiting: "
                              "take stacks (commdoctor hang) while it waits")])]


SIGNATURES = (
    sig("family_mismatch", ("ss_family",),
       r"ss1\.ss_family == ss2\.ss_family\. (?P<a>\d+) vs (?P<b>\d+)",
       "hostname_resolution", ROOT, 1, "the host name resolves to an address of another family (IPv6 ::1 against IPv4)",
       code="LOG013", params=lambda hs: {"addr": "an IPv6 address (::1)"},
       detail="The host name resolves to an IPv6 address on one side and IPv4 on the other."),
    sig("gloo_recv_timeout", ("Timed out waiting", "operation to complete"),
       r"Timed out waiting (?P<ms>\d+) ?ms for (?P<op>recv|send) operation to complete",
       "collective_timeout_straggler", ROOT, 5, "a gloo send/recv did not complete within the timeout",
       build=_recv_timeout),
    sig("lib_gloo", ("ProcessGroupGloo", "gloo", "Gloo", "GLOO_"),
       r"ProcessGroupGloo|\bgloo(?:/|::|\b)|\bGloo\b|GLOO_SOCKET_IFNAME",
       None, CONTEXT, 9, "a line written by gloo or torch's gloo process group"),
)

CODES = ()
