"""What a log rule is: one row that says what it matches, what that means and which finding it gives.

Promise: pure data types and small helpers, standard library and
commdoctor.core.model only (loaders, parsing and checks may all import this; it
imports none of them). A ``Signature`` is one rule row: the literal words that
must appear (a cheap substring test done first), a bounded regular
expression written from the library's own format string, the cause it points
to, its causal *role* (``root``: explains itself; ``consequence``: what a rank
sees when something else failed first; ``context``: a fact that helps decide,
never a verdict), its *tier* (lower = more specific, decides between roots
that coexist), what it means, the finding code it gives, and optionally a
named function for what one line cannot say alone (several lines, ranks or
the run model). A ``ModelRule`` is a row that reads the run model instead of
lines (versions across hosts, interfaces chosen, watchdog records). A
``Code`` is the finding a code stands for: its title, remedy, settings and
steps (``commdoctor.checks.logs`` turns codes into its rules, and
``docs/findings`` is generated from them).
"""

from __future__ import annotations

import re
import signal
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from commdoctor.core.model import Evidence, Severity

ROOT, CONSEQUENCE, CONTEXT = "root", "consequence", "context"
E, W, I = Severity.ERROR, Severity.WARNING, Severity.INFO

#: Settings that make NCCL and torch say more; the remedy of findings that need more lines.
NCCL_DEBUG_ENV = {"NCCL_DEBUG": "INFO", "NCCL_DEBUG_SUBSYS": "INIT,NET,ENV", "TORCH_DISTRIBUTED_DEBUG": "DETAIL"}
#: A name of NCCL's API or its internals (ncclX, and pncclX, the names its API is built under).
NCCL_FN = re.compile(r"\bp?nccl[A-Z]")

#: When a rule runs: line rules that stand alone first, then rules that weigh what was found before them.
PHASE_LINES, PHASE_DEATHS, PHASE_ECHOES, PHASE_WATCHDOG, PHASE_SETUP, PHASE_LAST = 0, 1, 2, 3, 4, 5
#: After every rule of every family: what no rule explained (the unrecognised-failure finding) is known only then.
PHASE_UNRECOGNISED = 6


@dataclass
class Cand:
    """One explanation the logs support, before it becomes a Finding."""

    code: str
    cause: str | None  # None: a failure whose cause the logs do not tell (LOG080)
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
    #: Set when the logs show the job did not fail of it (it completed, or recovered): why, for the user.
    #: Such a candidate is shown as a note and names no cause (see commdoctor.rules.engine.settle).
    note: str = ""


#: A rule's own logic: (run model, this rule's hits, candidates found so far) -> candidates.
Build = Callable[[Any, list[Any], list[Cand]], list[Cand]]


@dataclass(frozen=True)
class Signature:
    """One line rule (see the module docstring)."""

    id: str
    needles: tuple[str, ...]  # at least one must occur (case-sensitive) before the regex runs
    pattern: re.Pattern[str]
    cause: str | None
    role: str
    tier: int
    meaning: str
    code: str | None = None  # the finding it gives (None: context, or read by the rule named in ``read_by``)
    params: Callable[[list[Any]], dict[str, Any]] | None = None
    detail: str = ""
    alts: tuple[tuple[str, str], ...] = ()
    exclude: tuple[str, ...] = ()  # lines another (more specific) rule already explains
    build: Build | None = None
    always: bool = False  # run ``build`` even without a hit (it also reads the run model)
    phase: int = PHASE_LINES
    read_by: str = ""  # a root signature without a code of its own: the rule whose build reads it
    harmless: bool = False  # a context note that a working job prints at error level: not an unrecognised error
    fails: bool = False  # printed at warning level, yet says on its own that the job could not go on (counts as a failure)

    def search(self, text: str) -> re.Match[str] | None:
        for n in self.needles:
            if n in text:
                return self.pattern.search(text)
        return None


@dataclass(frozen=True)
class ModelRule:
    """A rule over the run model (not one line): versions per host, interfaces, launch shape."""

    id: str
    build: Build
    meaning: str
    phase: int = PHASE_SETUP


@dataclass(frozen=True)
class Code:
    """What a finding code says to the user: one per code, whatever rules give it."""

    code: str
    symbol: str
    severity: Severity
    title: str
    remedy: str
    cause: str | None = None
    steps: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)


def sig(id: str, needles: tuple[str, ...], pattern: str, cause: str | None, role: str, tier: int, meaning: str,
        **kw: Any) -> Signature:
    """A rule row; ``kw`` are the optional fields of Signature (code, params, detail, alts, ...)."""
    if "alts" in kw:
        kw["alts"] = tuple(kw["alts"])
    return Signature(id, needles, re.compile(pattern), cause, role, tier, meaning, **kw)


def ctx(id: str, needles: tuple[str, ...], pattern: str, meaning: str, cause: str | None = None,
        harmless: bool = False) -> Signature:
    """A context row: read by other rules, never a verdict (``harmless``: nor an error to report)."""
    return Signature(id, needles, re.compile(pattern), cause, CONTEXT, 9, meaning, harmless=harmless)


#: What a child killed by a signal usually means, for rows that read a launcher's report of one.
KILLED_BY_SIGNAL = ("SIGKILL is almost always the kernel's out-of-memory killer (dmesg: 'Out of memory: Killed process') "
                    "or the scheduler enforcing a memory or time limit; SIGSEGV/SIGABRT is a crash of native code in "
                    "that process.")


# -- helpers the rules' functions share ----------------------------------------------------------------


def hits(m: Any, sig_id: str, exclude: tuple[str, ...] = ()) -> list[Any]:
    """The hits of one signature, less the lines that one of ``exclude`` also matched."""
    got: list[Any] = m.hits.get(sig_id, [])
    if exclude and got:
        lines = {(h.ev.source, h.ev.line) for x in exclude for h in m.hits.get(x, [])}
        if lines:
            got = [h for h in got if (h.ev.source, h.ev.line) not in lines]
    return got


def out_of_fds(m: Any, hs: list[Any]) -> bool:
    """The process that failed on a socket also says it is out of file descriptors ("Too many open files"): then
    its failed binds and accepts follow from that (open-mpi/ompi#7246: 64 ranks a node, each with a TCP connection
    to every other, bind() on an ephemeral port giving EADDRINUSE beside EMFILE), not from a taken port or an
    interface."""
    srcs = {h.ev.source for h in hs}
    return any(h.ev.source in srcs for h in m.hits.get("nofile", []))


def ranks_hosts(hs: list[Any]) -> tuple[set[int], set[str]]:
    ranks = {h.ev.rank for h in hs if h.ev.rank is not None}
    hosts = {h.ev.host for h in hs if h.ev.host}
    return ranks, hosts


def cand(code: str, cause: str, tier: int, hs: list[Any], n: int = 3, **kw: Any) -> Cand:
    """A candidate from hits: the first ``n`` lines as evidence, their ranks and hosts."""
    ranks, hosts = ranks_hosts(hs)
    return Cand(code, cause, tier, min(h.seq for h in hs), [h.ev for h in hs[:n]], ranks=ranks, hosts=hosts, **kw)


def own_reading(hs: list[Any], code: str | None = None, **over: Any) -> Cand:
    """What the hits' row reads in them without a build of its own (the engine's candidate for a plain row), for a
    build that keeps that reading for some of its hits. ``code`` and keyword arguments replace the row's."""
    s = hs[0].sig
    kw: dict[str, Any] = {"params": s.params(hs) if s.params else {}, "detail": s.detail, "alts": list(s.alts),
                          "consequence": s.role == CONSEQUENCE, **over}
    return cand(code or s.code, s.cause, s.tier, hs, **kw)


def not_remote_alloc(m: Any, hs: list[Any]) -> list[Any]:
    """The hits, less the lines of the thread in which NCCL's remote allocation service (2.8-2.11) logged
    "[Rem Allocator] Allocation failed": its failed read and its allocation of a meaningless size are LOG149's."""
    served = {(h.rec.host, h.rec.pid, h.rec.tid) for h in m.hits.get("nccl_rem_alloc", []) if h.rec.tid is not None}
    return [h for h in hs if (h.rec.host, h.rec.pid, h.rec.tid) not in served] if served else hs


def group(hs: list[Any], *names: str) -> str | None:
    """The first non-empty value of any of the named groups across the hits."""
    for h in hs:
        for n in names:
            v = h.groups.get(n)
            if v:
                return str(v)
    return None


#: Exceptions torch.distributed raises about the job's communication (not a rank's own code failing).
_COMM_EXCEPTIONS = ("DistError", "DistNetworkError", "DistStoreError", "DistBackendError", "DistQueueEmptyError",
                    "ChildFailedError", "SignalException", "RendezvousError", "RendezvousConnectionError",
                    "RendezvousTimeoutError", "RendezvousClosedError", "RendezvousStateError")


#: Words of an exception raised by the communication stack itself (its own errors, not the program's).
_COMM_WORDS = re.compile(r"NCCL|nccl|[Gg]loo|c10d|ProcessGroup|[Cc]ollective|TCPStore|[Ss]ocket|\bMPI\b|\bUC[CX]\b"
                         r"|[Rr]endezvous|[Ww]atchdog|[Cc]ommunicator|[Tt]imed out|[Tt]imeout")
#: The names of the communication libraries and runtimes an error line of theirs carries (NCCL and its kin, gloo, c10d,
#: torch.distributed's own errors, MPI and its runtimes, UCX's layers, verbs, libfabric). Narrower than the words above,
#: which also take an exception about timeouts, sockets or collectives for the communication's.
_LIB_WORDS = re.compile(r"NCCL|RCCL|HCCL|oneCCL|\bCCL\b|[Gg]loo|c10d|ProcessGroup|Dist(?:Backend|Network|Store)Error"
                        r"|Rendezvous\w{0,20}Error|\bMPI|PMIx|\bORTE\b|\bUC[CPSTX]\b|\buc[pst]_|ibv_|libfabric|\bfi_[a-z]")


def in_library_words(text: str) -> bool:
    """TEXT names a communication library or runtime: an error line of theirs, not of the program's own code."""
    return _LIB_WORDS.search(text) is not None


def raised_ranks(m: Any) -> dict[int, Any]:
    """Ranks whose own code raised: an exception that no rule reads as a communication failure (a ValueError in
    the training loop, torch's allocator running out of host memory), by rank, the first one each.

    Such a rank is the first to fail; its peers' closed connections and timeouts follow from it."""
    own = {(ev.source, ev.line) for ev, _seq, kind in m.unmatched_errors if kind == "exception"}
    read = {(h.ev.source, h.ev.line) for hs in m.hits.values() for h in hs}  # lines a rule (even a context row) reads
    # An exception printed without a rank prefix (a host running one rank under plain torchrun) is the rank that
    # input's launcher reports exiting with a status of its own, when it reports exactly one.
    exited: dict[Any, set[int]] = {}
    for f in m.elastic:
        if f.ev is not None and f.rank is not None and f.signal is None and f.exitcode is not None and f.exitcode > 0:
            exited.setdefault(f.ev.source, set()).add(f.rank)
    out: dict[int, Any] = {}
    for typ, _msg, ev, _seq in m.exceptions:
        rank = ev.rank
        if rank is None and len(exited.get(ev.source, ())) == 1:
            rank = next(iter(exited[ev.source]))
        if rank is None or (ev.source, ev.line) not in own or (ev.source, ev.line) in read or typ in _COMM_EXCEPTIONS \
                or _COMM_WORDS.search(_msg):
            continue
        out.setdefault(rank, ev)
    return out


#: Rows that are the launcher's own report of a rank it ended or saw end, not a sign that the other ranks failed.
_LAUNCH_ECHO = ("process_died", "agent_closing_worker")
#: The launcher's own exceptions when a worker failed (torchrun's ChildFailedError, its agent's SignalException).
_LAUNCHER_EXCEPTIONS = ("ChildFailedError", "SignalException")
#: A launcher's report of a child that failed (torchrun's, torch.multiprocessing.spawn's): the child's error, not its
#: own (torchrun's SignalException is the launcher itself being signalled).
CHILD_REPORTS = ("ChildFailedError", "ProcessRaisedException", "ProcessExitedException")


def peers_failed(m: Any) -> bool:
    """Whether the logs show more than one rank's own error: a watchdog, a line a rule reads as a failure, or an
    exception of the communication stack on any rank. Without any, a rank that raised stopped the job alone."""
    if m.watchdog:
        return True
    if any(h.sig.role != CONTEXT and not h.sig.harmless for sid, hs in m.hits.items() if sid not in _LAUNCH_ECHO
           for h in hs):
        return True
    return any(typ not in _LAUNCHER_EXCEPTIONS and (typ in _COMM_EXCEPTIONS or _COMM_WORDS.search(msg))
               for typ, msg, _ev, _seq in m.exceptions)


#: A traceback frame outside torch.distributed's launchers (run.py, launch.py, elastic/): the program's own.
_PROGRAM_FRAME = re.compile(r'\s{0,40}File "(?![^"]{0,400}torch/distributed/(?:run|launch)\.py")'
                            r'(?![^"]{0,400}torch/distributed/elastic/)[^"\n]{1,400}", line \d{1,7}, in \S')


def quiet_exits(m: Any) -> list[Any]:
    """Launcher failure records of ranks that exited with a status of their own (exit code > 0, no signal) having
    logged no error at all: the rank ended itself (sys.exit(3) on a bad loss, a failed check). A rank that fails in
    a collective or raises logs that first."""
    spoke = {ri.rank for ri in m.ranks.values() if ri.rank is not None and ri.first_error is not None}
    # A host running one rank prints its errors without a rank prefix: any error line of that file (other than
    # its launcher's own report of the exit) may be the rank's.
    loud = {h.ev.source for hs in m.hits.values() for h in hs
            if h.sig.role != CONTEXT and h.ev.rank is None and h.sig.id not in ("process_died", "agent_signalled")}
    # torchrun --tee prefixes a worker's lines with its local rank ("[default0]:"), which the lines alone cannot turn
    # into a global rank: an error in the same file under the failed worker's local rank is that worker's.
    # An error no row reads as a failure of its own (NCCL's "unhandled system error" raised without a rank prefix, a
    # context row's line) is still the rank's error; the launcher's own ChildFailedError traceback is not.
    tail = {(ev.source, ev.line) for typ, _msg, ev, _seq in m.exceptions if typ in _LAUNCHER_EXCEPTIONS}
    loud |= {ev.source for ev, _seq, _kind in m.unmatched_errors if ev.rank is None and (ev.source, ev.line) not in tail}
    # A traceback whose header was cut from the post, starting at a frame of the program (not the launcher's own
    # run.py / elastic frames): the process raised, even though its exception line is not in what was posted.
    loud |= {ev.source for ev in m.tracebacks if ev.rank is None and _PROGRAM_FRAME.match(ev.text)}
    local = {(h.ev.source, h.ev.rank) for hs in m.hits.values() for h in hs if h.sig.role != CONTEXT and h.ev.rank is not None}
    local |= {(ev.source, ev.rank) for ev, _seq, _kind in m.unmatched_errors if ev.rank is not None}
    return [f for f in m.elastic if f.rank is not None and f.signal is None and f.exitcode is not None
            and f.exitcode > 0 and f.rank not in spoke and (f.ev is None or f.ev.source not in loud)
            and not (f.ev is not None and f.local_rank is not None and (f.ev.source, f.local_rank) in local)]


_STAMP = re.compile(r"^(?:\[rank\d+\]:)?\[?[EWIF](?P<md>\d{3,4}) (?P<h>\d\d):(?P<m>\d\d):(?P<s>\d\d(?:\.\d{1,9})?)")


def stamp(text: str) -> tuple[str, float] | None:
    """The month-day and the second of the day of a glog-shaped line ("[E1127 20:36:51.78 ..." or torch's Python
    logging "E1127 20:36:51.554000 ..."), or None."""
    w = _STAMP.match(text)
    # torch's C++ logging does not pad the month ("[E606 ..." is June 6); Python's logging does ("E0606").
    return (w.group("md").zfill(4), int(w.group("h")) * 3600 + int(w.group("m")) * 60 + float(w.group("s"))) if w else None


def after_store_host_failed(m: Any, hs: list[Any]) -> list[Any]:
    """The connect failures logged after another host's launcher had already reported its workers failed ("failed
    (exitcode: N)", same day, earlier clock): with torchrun the store lives in the launcher of the master host, which
    shuts it down when its workers fail, so a rank that comes to the store only then (a rank slow to reach
    init_process_group) finds nothing there. Empty unless every timed failure of a host came after such a line."""
    gone: list[tuple[str, float, str]] = []
    for f in getattr(m, "elastic", ()):
        t = stamp(f.ev.text) if f.agent and f.ev is not None else None
        if t:
            gone.append((t[0], t[1], f.ev.source))
    if not gone:
        return []
    late: list[Any] = []
    by_src: dict[str, list[Any]] = {}
    for h in hs:
        by_src.setdefault(h.ev.source, []).append(h)
    for src, mine in by_src.items():
        times = [t for t in (stamp(h.ev.text) for h in mine) if t]  # an exception's own line carries no clock
        if times and all(any(g[2] != src and g[0] == t[0] and g[1] < t[1] for g in gone) for t in times):
            late.extend(mine)
    return late


def after_restart(m: Any, hs: list[Any]) -> list[Any]:
    """The hits that come after this host's launcher had already reported a failed worker in the same file
    ("failed (exitcode: N) local_rank: ..."), i.e. from workers torchrun started again (--max-restarts): a
    restarted group connecting to peers of the failed attempt is refused or times out because of that failure."""
    first: dict[str, int] = {}
    for f in getattr(m, "elastic", ()):
        if f.agent and f.ev is not None:
            first[f.ev.source] = min(first.get(f.ev.source, f.ev.line), f.ev.line)
    return [h for h in hs if h.ev.source in first and h.ev.line > first[h.ev.source]]


def lines_under(m: Any, sig_id: str, hs: list[Any], span: int) -> list[Any]:
    """The hits of ``sig_id`` on the ``span`` lines below any of ``hs`` in the same file: the continuation lines of a
    message printed over several lines (the tasks under a coordination-service error, the ranks under a stall)."""
    heads = {(h.ev.source, h.ev.line) for h in hs if h.ev.line is not None}
    return [t for t in hits(m, sig_id)
            if t.ev.line is not None and any((t.ev.source, t.ev.line - k) in heads for k in range(1, span + 1))]


#: The signal handler's own frames, above the one that faulted: UCX's handler (libucs, ucs_handle_error), libpthread's
#: signal return (__restore_rt), libSegFault.
_HANDLER_FRAME = re.compile(r"^(?:libucs|libpthread|libSegFault)|^(?:ucs_handle_error|ucs_debug_\w+|ucs_error_\w+|__restore_rt)$")


def signal_name(num: str | int | None) -> str:
    """A signal's name from its number ("9" -> "SIGKILL"); "signal N" for a number that names none."""
    try:
        return signal.Signals(int(num or "")).name
    except ValueError:
        return f"signal {num}"


def aborted_for_a_reason(m: Any, found: list[Any]) -> bool:
    """A process that aborted itself (SIGABRT, std::terminate) did so for a reason these logs show: torch's watchdog
    after a collective timeout or a communicator error ("we are taking the entire process down"), or another error a
    rule reads or quotes. The abort is then what followed, not the cause."""
    return bool(m.watchdog or m.hits.get("watchdog_timeout") or m.hits.get("watchdog_abort") or m.unmatched_errors
                or any(c.cause and not c.consequence for c in found))


def uses_ib(m: Any) -> bool:
    """NCCL's InfiniBand/RoCE network is in the logs: an HCA in a NET/IB list, or a channel over NET/IB."""
    return any(h.net_ib for h in m.hosts.values()) or any(k.startswith("NET/IB") for k in m.transport_kinds)


def job_failed(m: Any, found: list[Any]) -> bool:
    """The logs show the job failed or hung: an error no rule read, a watchdog report, or a finding that is not a
    weak risk. A warning a working job also prints is a cause only then."""
    return bool(m.unmatched_errors or m.watchdog) or any(c.tier <= 6 and not c.weak for c in found)


SELF_ABORT = ("Signal 6 (SIGABRT) is the process aborting itself: torch's watchdog takes a rank down after a collective "
              "timeout or a communicator error, so the error it logged before is the cause.")


def frame_fn(f: Any) -> str:
    """A backtrace frame's function (gdb's and UCX's "in F ()" / "F()", glibc's "lib.so(F+0x..)"), or ''."""
    return str(f.groups.get("fn") or f.groups.get("sym") or "")


def frame_lib(f: Any) -> str:
    """A backtrace frame's library, without its path and version ("libnccl"), or ''."""
    return str(f.groups.get("name") or "")


def crash_stacks(m: Any, span: int = 24) -> list[list[Any]]:
    """The native backtraces of crashes: for each signal handler's report (the crash_head row), the frames printed
    under it (crash_frame, crash_frame_fn) in order, less the handler's own frames above the one that faulted."""
    heads = hits(m, "crash_head")
    if not heads:
        return []
    frames = {(f.ev.source, f.ev.line): f for f in lines_under(m, "crash_frame", heads, span)
              + lines_under(m, "crash_frame_fn", heads, span)}
    stacks: dict[tuple[str, int], list[Any]] = {}
    for (src, line), f in sorted(frames.items()):
        head = max((h.ev.line for h in heads if h.ev.source == src and h.ev.line < line), default=-1)
        stack = stacks.setdefault((src, head), [])
        if not stack and (_HANDLER_FRAME.search(frame_lib(f)) or _HANDLER_FRAME.search(frame_fn(f))):
            continue
        stack.append(f)
    return [s for s in stacks.values() if s]


def missing_ranks(world: int, seen: Any, limit: int = 64) -> list[int]:
    """The first ``limit`` ranks below ``world`` not in ``seen``: a log may claim 10^7 ranks,
    and ``set(range(world))`` of that took seconds and gigabytes for a three-line file."""
    out: list[int] = []
    for r in range(world):
        if r not in seen:
            out.append(r)
            if len(out) >= limit:
                break
    return out


#: Context rows whose line says the job reached its end (a communicator destroyed normally, nccl-tests' final
#: check passed, the launcher saw its workers exit 0).
ENDED = ("nccl_destroyed", "nccl_tests_passed", "agent_succeeded")


def completed(m: Any) -> list[Any]:
    """Lines that say the job reached its end, unless a communicator was aborted or failed to start."""
    if any(c.state in ("Abort COMPLETE", "Init FAILED") for c in getattr(m, "comms", ())):
        return []
    return [m.hits[s][0].ev for s in ENDED if m.hits.get(s)]


def single_node(m: Any) -> str | None:
    """The host every rank of the job ran on, when the logs list them all there (nccl-tests' table of ranks);
    None when the job spans hosts or the logs do not say."""
    rows = m.hits.get("nccl_tests_rank", [])
    hosts = {h.groups.get("host") for h in rows}
    ranks = {h.groups.get("rank") for h in rows}
    if len(hosts) != 1 or m.hit_counts.get("nccl_tests_rank", 0) > len(rows) or ranks != {str(i) for i in range(len(ranks))}:
        return None
    return next(iter(hosts))


def local_ranks_only(m: Any) -> bool:
    """The failing communicator's ranks share one host, as far as the logs tell: nccl-tests' table lists one host,
    or every NCCL init line says nNodes 1 (init.cc: "comm %p rank %d nRanks %d nNodes %d localRanks %d ..."), or
    the processes are vLLM's multiprocessing workers (its MultiprocExecutor starts the tensor-parallel workers of
    one node; across nodes vLLM's workers are Ray actors, whose output lines carry the actor's node address).
    Between ranks of one host NCCL's transports are P2P and shared memory (/dev/shm), not the network."""
    if single_node(m):
        return True
    nn = m.hits.get("nccl_nnodes", [])
    if nn and all(h.groups.get("n") == "1" for h in nn):
        return True
    if not m.hits.get("vllm_local_worker"):
        return False
    # Ray's prefix names an actor on another node with its address ("(RayWorkerWrapper pid=N, ip=A)").
    return not any(getattr(h.rec, "actor_ip", None) for hs in m.hits.values() for h in hs)


def trace_files(m: Any, host: str | None) -> set[str]:
    """The NCCL source files in ``host``'s error traces ("file:line -> N"), all its processes together; empty when the
    host is unknown."""
    if not host:
        return set()
    return {f for k, fs in getattr(m, "retcode_files", {}).items() if k.startswith(host + ":") for f in fs}


def version_tuple(v: str) -> tuple[int, ...]:
    try:
        return tuple(int(x) for x in v.split(".")[:3])
    except ValueError:
        return (0,)
