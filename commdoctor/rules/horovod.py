"""Rules for Horovod's own messages, in the same causes as torch's.

Promise: rule rows only (see commdoctor.rules.base), written from Horovod's stall inspector
(horovod/common/stall_inspector.cc: CheckForStalledTensors) and its shut-down error (horovod/common/common.h,
SHUT_DOWN_ERROR). NCCL's, MPI's and gloo's failures under Horovod are read by their own families.

The stall inspector's message is one log record over several lines: the warning, "Missing ranks:", then one line per
rank that has not submitted tensors the others have, ``R: [name, name ...]`` (``R!`` when that rank is past
HOROVOD_STALL_SHUTDOWN_TIME_SECONDS and Horovod shuts down). ``horovod_missing_rank`` reads those lines.
"""

from __future__ import annotations

import re
from typing import Any

from commdoctor.rules.base import CONSEQUENCE, PHASE_ECHOES, ROOT, E, Cand, Code, cand, ctx, group, hits, lines_under, sig


def _missing(m: Any, hs: list[Any]) -> dict[int, set[str]]:
    """Rank -> the tensors it has not submitted, from the rank lines under each stall message (within 65 lines)."""
    out: dict[int, set[str]] = {}
    for t in lines_under(m, "horovod_missing_rank", hs, 65):
        # "R!: [...]" keeps its rank in the message; "R: [...]" is read as a launcher's "N: " prefix (the record's
        # task), behind any other prefix (horovodrun's "[1,0]<stderr>:").
        rank = t.groups.get("rank") or (str(t.rec.task) if t.rec.task is not None else None)
        if rank is not None:
            names = str(t.groups.get("names") or "").split(",")
            out.setdefault(int(rank), set()).update(n.strip() for n in names if n.strip() not in ("", "..."))
    return out


def _missing_per_tensor(m: Any) -> dict[int, set[str]]:
    """Rank -> tensors, from releases before 0.16.1, which print one line per stalled tensor."""
    out: dict[int, set[str]] = {}
    for t in hits(m, "horovod_missing_old"):
        for r in re.findall(r"\d{1,6}", str(t.groups.get("ranks") or "")):
            out.setdefault(int(r), set()).add(str(t.groups.get("name")))
    return out


def _stall(m: Any, hs: list[Any], found: list[Cand]) -> list[Cand]:
    missing = _missing(m, hs)
    for r, v in _missing_per_tensor(m).items():
        missing.setdefault(r, set()).update(v)
    secs = next((str(h.groups["secs"]) for h in hs if h.groups.get("secs")), "?")
    ranks = sorted(missing)
    names = sorted({n for v in missing.values() for n in v})
    # Rank a lacks tensor X that rank b submitted, and b lacks Y that a submitted: they are not at the same step
    # behind one another, they submitted different tensors.
    differ = [(a, b) for a in ranks for b in ranks if a < b and missing[a] - missing[b] and missing[b] - missing[a]]
    who = ", ".join(map(str, ranks[:8])) + (" ..." if len(ranks) > 8 else "") if ranks else "ranks the lines do not name"
    if differ:
        a, b = differ[0]
        c = cand("LOG050", "collective_mismatch", 3, hs,
                 detail=f"Rank {a} never submitted {sorted(missing[a] - missing[b])[0]}, which rank {b} did, and rank "
                        f"{b} never submitted {sorted(missing[b] - missing[a])[0]}, which rank {a} did: the ranks reduce "
                        "different tensors (a rank-dependent branch, parameters unused on some ranks, names that differ "
                        "between ranks).",
                 alts=[("collective_timeout_straggler", "if the names are the same tensors under names that differ by "
                                                        "rank, the ranks are in step: name them alike")])
    else:
        tensor = names[0] + (f" and {len(names) - 1} more" if len(names) > 1 else "") if names else "tensors"
        # Horovod's maintainers name an uneven split of the data (one rank runs more batches than another) as the
        # most common cause (horovod/horovod#2420); a rank still busy elsewhere (validation on one rank) comes next.
        c = cand("LOG105", "collective_mismatch", 5, hs,
                 params={"secs": secs, "who": who, "tensors": tensor},
                 detail="The ranks named have not submitted what the others are waiting to reduce. Most often they "
                        "ran out of batches first (the dataset split unevenly across ranks: shard() without "
                        "drop_remainder, a sampler without padding), so the others are a step ahead, alone.",
                 alts=[("collective_timeout_straggler", "a rank still busy elsewhere (validation or checkpointing on "
                                                        "one rank, a slow input pipeline) arrives late the same way: "
                                                        "if the warning stops and training goes on, it was late"),
                       ("peer_process_died", "a rank that exited never submits them either: its own log ends with "
                                             "why")])
    if ranks:
        c.ranks = set(ranks)  # the ranks named are the ones the others wait for, not the ones that printed it
    return [c]


def _shut_down(m: Any, hs: list[Any], found: list[Cand]) -> list[Cand]:
    return [cand("LOG060", "peer_process_died", 6, hs, consequence=True,
                 params={"what": "Horovod shut down after an exception on one of the ranks, or a rank that had "
                                 "finished was asked for another collective"},
                 alts=[("collective_mismatch", "if no rank logged an exception, one rank ran out of batches first "
                                               "(uneven data per rank) and left while the others still reduced: "
                                               "give every rank the same number of steps")])]


SIGNATURES = (
    sig("horovod_stall", ("waiting for remainder of ranks",),
        r"submitted to be reduced, gathered or broadcasted by subset of ranks and are waiting for remainder of ranks "
        r"for more than (?P<secs>\d{1,9}) seconds",
        "collective_mismatch", ROOT, 5, "Horovod's stall inspector: some ranks have not submitted tensors the "
                                                 "others are waiting to reduce",
        build=_stall, fails=True),
    # Needles: the names Horovod gives the tensors it reduces (TensorFlow's HorovodAllreduce_*, PyTorch's
    # allreduce.<param> and allreduce.noname.N), not "]", which nearly every log line holds.
    ctx("horovod_missing_rank", ("Horovod", "horovod", "allreduce.", "broadcast.", "allgather.", "alltoall.",
                                 "reducescatter.", "noname"),
        r"^\s{0,8}(?:(?P<rank>\d{1,6})!?: ?)?\[(?P<names>[^\[\]\n]{1,2000})\]\s*$",
        "a rank and the tensors it has not submitted, under a stall message"),
    # Before 0.16.1 (horovod#920) each stalled tensor had a line of its own, before or after the warning:
    # "NAME [missing ranks: 1, 3]", the first after "Stalled ops:".
    ctx("horovod_missing_old", ("[missing ranks: ",),
        r"(?:Stalled ops: ?)?(?:(?<=Stalled ops:)|(?<![^\s\[\]]))(?P<name>[^\s\[\]]{1,300}) \[missing ranks: (?P<ranks>\d{1,6}(?:, ?\d{1,6}){0,200})\]",
        "a tensor some ranks have not submitted (Horovod before 0.16.1)"),
    # The coordinator's check of each request before it runs (horovod/common/controller.cc ConstructResponse):
    # "Mismatched ALLREDUCE tensor shapes: One rank sent a tensor of shape [...], but another rank sent a tensor of
    # shape [...]", "Mismatched data types: One rank had type T, but another rank had type U", "Mismatched
    # operations: One rank did an A, but another rank did an B", "Mismatched ALLGATHER tensor shapes: ...", "Mismatched
    # root ranks: ...", "Mismatched reduce operations: ...", "Mismatched prescale factors ..." -- the ranks submitted
    # the same tensor name with different contents or calls.
    sig("horovod_mismatch", ("Mismatched ",),
        r"Mismatched (?P<what>(?:ALL\w{3,10}|BROADCAST|REDUCESCATTER|ALLTOALL) tensor shapes|data types|operations"
        r"|root ranks|(?:reduce|allreduce) operations|prescale factors|postscale factors|devices|process sets?)[^\n]{0,8}:"
        r" ?One rank",
        "collective_mismatch", ROOT, 1, "Horovod's coordinator found ranks submitting one tensor name with different "
                                        "shapes, types or operations",
        code="LOG050"),
    # horovod/runner/driver/driver_service.py: "Unable to find a set of common task-to-task communication
    # interfaces: [...]" -- horovodrun's probe found no interface on which every host reaches every other.
    sig("horovod_no_common_if", ("Unable to find a set of common task-to-task communication interfaces",),
        r"Unable to find a set of common task-to-task communication interfaces",
        "wrong_interface", ROOT, 2, "horovodrun found no network interface every host can reach the others on",
        code="LOG020", params=lambda hs: {"what": "horovodrun found no interface on which every host reaches every "
                                                  "other (interface names or subnets differ between hosts)"}),
    # horovod/runner/util/network.py and gloo_run.py: "Timed out waiting for tasks to start. Please check
    # connectivity between servers." -- the task services horovodrun started over ssh never called back to it.
    sig("horovod_tasks_timeout", ("Timed out waiting for tasks to start",),
        r"Timed out waiting for tasks to start",
        "firewall_or_port_blocked", ROOT, 3, "horovodrun's task services on the hosts never reached back to it",
        code="LOG011", params=lambda hs: {"endpoint": "horovodrun's driver service",
                                          "how": "the task services it started on the hosts never connected back"},
        alts=[("launcher_misconfig", "if ssh to a host fails or Horovod is not installed in that host's Python, the "
                                     "task service never starts there")]),
    # horovod/runner/launch.py (and gloo_run): "Requested more processes (%d) than there are available slots (%d)".
    sig("horovod_slots", ("than there are available slots",),
        r"Requested more processes \((?P<np>\d{1,6})\) than there are available slots \((?P<slots>\d{1,6})\)",
        "launcher_misconfig", ROOT, 2, "horovodrun was asked for more processes than its hosts have slots",
        code="LOG066", params=lambda hs: {"what": f"-np {group(hs, 'np')} with {group(hs, 'slots')} slots in -H/"
                                                  "--hostfile"}),
    sig("horovod_shut_down", ("Horovod has been shut down",),
        r"Horovod has been shut down\. This (?:was|has been) caused by an exception on one of the ranks",
        "peer_process_died", CONSEQUENCE, 6, "Horovod stopped every rank after one failed or finished early",
        build=_shut_down, phase=PHASE_ECHOES),
)

CODES = (
    Code("LOG105", "horovod-stall", E, "Horovod waited over {secs} s for rank(s) {who} to submit {tensors}",
         "Give every rank the same number of steps (shard with drop_remainder, pad the sampler), then check what "
         "the ranks named were doing (a rank-0-only step, an exception); every rank must submit the same tensors "
         "each step",
         cause="collective_mismatch",
         steps=("HOROVOD_STALL_CHECK_TIME_SECONDS sets when this is printed; HOROVOD_STALL_SHUTDOWN_TIME_SECONDS "
                "when Horovod gives up",)),
)

__all__ = ["CODES", "SIGNATURES"]
