"""Read saved job output (files, directories, .gz/.bz2/.xz, stdin) into a model of the run.

Promise: ``load_logs(paths)`` streams every input once, in constant memory
whatever the size (every collection in the model is capped), and returns a
``RunModel``: NCCL versions per host, communicators, interfaces chosen for
bootstrap and data, transports between peers, plugins, settings overridden by
the environment, torch watchdog records per rank, elastic failure summaries,
and every line that matched a known failure signature, with its file, line
number and verbatim text. Bad input (binary junk, bad encodings, over-long
lines, truncated archives, unreadable files) is skipped and counted in
``RunModel.inputs``; it never raises, except ``LogInputError`` for a path that
does not exist, which the command reports as a usage error.
"""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import os
import re
import stat
import sys
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any, BinaryIO, Callable, Generator, Iterable, Iterator

from commdoctor.core.errors import CommDoctorError
from commdoctor.core.model import Evidence
from commdoctor.parsing.lines import CXX_TERMINATE, CXX_WHAT, ONECCL_ERROR, SLURM_REPORT, Record, classify, clean
from commdoctor.parsing.scan import NUMPY_AFTER, Prefilter, Scanner, make_prefilter, numpy_lines
from commdoctor.parsing.signatures import CONTEXT, Signature, match_all
from commdoctor.core.safeopen import (Salvaging, Unwrapping, Utf16ToUtf8, guarded_stdin, kind_of, open_input, refuse_container,
                                      common_indent, unwrap_kind)

#: Causes that stop a job while its processes connect (store, names, interfaces, ports).
SETUP_CAUSES = frozenset({"rendezvous_unreachable", "port_conflict", "hostname_resolution", "wrong_interface",
                          "firewall_or_port_blocked"})
TRACED_KEPT = 4  # collectives kept per rank from ProcessGroupWrapper's trace (RunModel.traced)
MAX_HITS_PER_SIG = 64  # evidence kept per signature (the count goes on)
MAX_COMMS = 4096
MAX_RANKS = 65536
MAX_WATCHDOG = 4096
MAX_EXCEPTIONS = 256
MAX_EVIDENCE_TEXT = 2000

_COMM = re.compile(
    r"comm (?P<ptr>0x[0-9a-fA-F]{1,16}|\(nil\)) rank (?P<rank>\d{1,7}) n[Rr]anks (?P<nranks>\d{1,7})"
    r"(?: nNodes (?P<nnodes>\d{1,6}))?(?: localRanks (?P<lranks>\d{1,4}))?(?: localRank (?P<lrank>\d{1,4}))?"
    r"(?: cudaDev (?P<dev>-?\d{1,4}))?(?: nvmlDev (?P<nvml>\d{1,4}))?(?: busId (?P<bus>[0-9a-fA-F]{1,16}))?"
    r"(?: commId (?P<cid>0x[0-9a-fA-F]{1,16}))?"
)
# nccl-tests' NCCLCHECK / CUDACHECK ("%s: Test NCCL failure %s:%d '%s / %s'", "Test CUDA failure %s:%d '%s'"; older
# releases print "NCCL failure %s:%d '%s'") and its trace (" .. %s pid %d: Test failure %s:%d"): plain text, but the
# test failed, so a log holding only them is a failure (LOG080 quotes it), never healthy. So is its closing check
# finding wrong values ("# Out of bounds values : %d %s" with FAILED): the run completed, its results did not hold.
_NCCL_TESTS_FAIL = re.compile(r"\b(?:NCCL|CUDA) failure \S{1,200}:\d{1,6} '|: Test failure \S{1,200}:\d{1,6}\s*$"
                              r"|Out of bounds values\s{0,4}: ?[1-9]\d{0,12} FAILED")
# UCX's own log lines ("[ts] [host:pid:tid] file:line UCX ERROR msg", ucs/debug/log.c) at FATAL or ERROR level, and
# UCC's, which logs through the same code ("tl_cuda_cache.c:231  UCC  ERROR ipc-cache: failed to open ipc mem handle").
_UCX_ERROR = re.compile(r"\bUC[XC]\s{1,8}(?:ERROR|FATAL)\b")
#: oneCCL's failure tags (parsing.lines.ONECCL_ERROR).
_ONECCL_ERROR = re.compile(ONECCL_ERROR)
#: The C++ runtime's std::terminate (parsing.lines.CXX_TERMINATE): an error even when nothing else says which.
_CXX_TERMINATE = re.compile(CXX_TERMINATE)
#: A program's own error report at the start of its line ("[2022-01-13 14:50:23] Error: NCCL error 2 'unhandled system
#: error' - ...": Marian; Hydra's "[mpiexec@host] Error: ..."), words after it; "Error: 0.05" is a metric.
_ERROR_HEAD = re.compile(r"(?:\[[\w@.\-:]{1,120}\] )?(?:Error|Fatal error|FATAL ERROR): {1,4}[A-Za-z'\"]")
_CXX_WHAT = re.compile(CXX_WHAT)
#: MPI libraries' fatal-error reports: Open MPI's errhandler ("*** An error occurred in MPI_Init", "MPI_ABORT was invoked
#: on rank N"), MPICH's and Intel MPI's ("Fatal error in PMPI_Init_thread: Other MPI error, error stack:",
#: "Abort(N) on node N (rank N in comm N): Fatal error in ..."). Errors even when no rule knows the reason under them.
_MPI_FATAL = re.compile(r"\*\*\* An error occurred in \w{1,40}|\bFatal error in P?MPI_\w{1,40}"
                        r"|\*\*\* (?:The \w{1,60}\(\) function|An MPI function) was called (?:before MPI_INIT|after MPI_FINALIZE)"
                        r"|\bMPI_ABORT was invoked on rank \d|^Abort\(\d{1,12}\) on node \d|^internal ABORT - process \d"
                        # MPICH's error string with its stack ("Other MPI error, error stack:"), as mpi4py raises it
                        r"|\b[A-Z][\w ]{2,60} error, error stack:"
                        # MPICH Hydra's error report (HYDU_error_printf: "[mpiexec@host] func (file:line): msg", "at"
                        # for "@" before 3.3, "[proxy:0:1@host]" on a node); its other output names no function and file
                        r"|^\[(?:mpiexec|proxy:[\d:]{1,20})(?:@| at )[^\]\s]{1,255}\] \w{1,80} \([^()\s]{1,300}:\d{1,6}\):")
#: Python logging at ERROR or CRITICAL, in the formats of the tools around a job (the timestamp may already be cut
#: off as a prefix): logging's default "ERROR:root:msg", DeepSpeed's "[2024-05-01 10:00:00,123] [ERROR] [launch.py:325:
#: sigkill_handler] msg" (pdsh puts "host: " first), vLLM's "ERROR 04-06 20:46:48 [core.py:238] msg" (and "ERROR
#: [core.py:238] msg" where a plugin's logger leaves the time out: vllm-project/vllm-ascend workers), the common
#: "%(asctime)s - %(name)s - %(levelname)s - %(message)s", Ray's "asctime<TAB>ERROR tune.py:773 -- msg", hydra's
#: "[asctime][name][ERROR] - msg", loguru's "asctime | ERROR    | msg". A failure even when no rule knows what it says.
_PYLOG_ERROR = re.compile(
    r"^(?:[\w.\-]{1,64}: )?(?:\[?\d{4}-\d\d-\d\d[ T][\d:,.]{5,15}\]?[ \t]?)?"
    r"(?:\[(?:ERROR|CRITICAL)\] |(?:ERROR|CRITICAL) [\w.\-]{1,80}:\d{1,6} -- |(?:ERROR|CRITICAL):[\w.\-]{0,80}:"
    r"|(?:ERROR|CRITICAL) \d\d-\d\d \d\d:\d\d:\d\d |(?:ERROR|CRITICAL) \[[\w.\-]{1,80}:\d{1,6}\] "
    r"|- (?:[\w.\-]{1,80} - )?(?:ERROR|CRITICAL) - |\[[\w.\-]{1,80}\]\[(?:ERROR|CRITICAL)\]|\| (?:ERROR|CRITICAL)\s{0,8}\| )")
#: Slurm's commands' own failure reports (parsing.lines.SLURM_REPORT): errors even when no rule reads them.
_SLURM_ERROR = re.compile("^" + SLURM_REPORT)
_COMM_STATE = re.compile(r"- (?P<state>Init START|Init COMPLETE|Init FAILED|Abort COMPLETE|Destroy COMPLETE)\s*$")
# An interface name is a whole token (nothing of its class just before it), so finditer tries it once per token.
_IFACE = re.compile(r"(?:\[\d{1,3}\])?(?<![^\s:<>\[\];])(?P<name>[^\s:<>\[\];]{1,64}):(?P<addr>[0-9a-fA-F.:%\w\-]{1,80})<\d{1,5}>")
# NCCL prints its interface list on the "Bootstrap : Using" / "NET/Socket : Using" line itself ("[0]eth0:10.0.0.1<0>
# [1]..."); a post that wraps the list puts the header alone on a line and each "[N]name:addr<port>" on its own.
_IFACE_HEAD = re.compile(r"(?:^|\s)(?P<what>Bootstrap|NET/Socket|NET) ?: Using\s*$")
_IFACE_ONLY = re.compile(r"^\s*\[\d{1,3}\][^\s:<>\[\];]{1,64}:[0-9a-fA-F.:%\w\-]{1,80}<\d{1,5}>\s*$")
_IB_DEV = re.compile(r"\[\d{1,3}\](?P<dev>[\w\-.]{1,64}):(?P<port>\d{1,3})/(?P<link>\w{1,10})")
_ENV_SET = re.compile(r"(?P<var>[A-Z][A-Z0-9_]{2,63}) set by environment to (?P<val>\S{0,200}?)\.?$")
_PLUGIN = re.compile(r"(?:Loaded|Using|loaded) (?P<kind>net|coll|tuner|profiler|env|gin|external)? ?plugin:? ?(?P<name>[^,;]{1,80})|"
                     r"NET/OFI (?:Initializing|Using) (?P<ofi>[^\s,;]{1,60}(?: [\d.]{1,20})?)")
_NETWORK = re.compile(r"Using network (?P<net>[^\r\n]{1,60})")
_WORK = re.compile(
    r"Work(?P<backend>NCCL|Gloo|UCC)?\(SeqNum=(?P<seq>\d{1,12}), OpType=(?P<op>\w{1,40})"
    r"(?:, NumelIn=(?P<nin>-?\d{1,15}), NumelOut=(?P<nout>-?\d{1,15}))?(?:, Timeout\(ms\)=(?P<tmo>\d{1,12}))?"
    # A post that wrapped the message ends the line after a field: the rest is on the next line (_WORK_TAIL).
    # (a terminal's copy may cut the word itself: ", Timeo" then "ut(ms)=...").
    r"(?:\)|(?P<cut>,(?: ?T(?:i(?:m(?:e(?:o(?:u(?:t)?)?)?)?)?)?)?)\s*$)"
    r"(?: ran for (?P<ran>\d{1,15}) milliseconds before timing out)?"
)
_WORK_TAIL = re.compile(r"^\s*(?:(?:Timeout|imeout|meout|eout|out|ut|t)?\(ms\)=(?P<tmo>\d{1,12})\))?"
                        r"(?: ran for (?P<ran>\d{1,15}) milliseconds before timing out)?")
_RANK_IN_MSG = re.compile(r"\[(?:PG ID \S{1,40} PG GUID \S{1,80} )?Rank (?P<rank>\d{1,7})\]|\[rank(?P<rank2>\d{1,7})\]|^\[(?P<rank3>\d{1,7})\] is ")
# ProcessGroupWrapper (TORCH_DISTRIBUTED_DEBUG=DETAIL, TORCH_CPP_LOG_LEVEL=INFO) traces every collective before it
# checks it against the other ranks: "[Rank 1] Running collective: CollectiveFingerPrint(SequenceNumber=3,
# OpType=BROADCAST, TensorShape=[1], TensorDtypes=Long, TensorDeviceTypes=...)" (no SequenceNumber before torch 2.0).
_TRACED = re.compile(r"Rank (?P<rank>\d{1,7})\] Running collective: CollectiveFingerPrint\("
                     r"(?:SequenceNumber=(?P<seq>\d{1,12}), )?(?P<fp>OpType=[^\n]{1,2000}?)(?:, TensorDeviceTypes=|\)?$)")
_PG_IN_MSG = re.compile(r"PG GUID (?P<pg>\S{1,80}) Rank")
_PROGRESS = re.compile(r"[Ll]ast enqueued (?:NCCL )?work: (?P<enq>-?\d{1,12}), last completed (?:NCCL )?work: (?P<done>-?\d{1,12})")
_TIMEOUT_AT = re.compile(r"Timeout at NCCL work: (?P<seq>\d{1,12})")
_MEMBER = re.compile(r"GLOBAL_RANK: (?P<rank>\d{1,7}), MEMBER: (?P<member>\d{1,7})/(?P<world>\d{1,7})")
_ELASTIC_FIELD = re.compile(r"^\s{0,8}(?P<key>host|rank|exitcode|traceback|error_file|time)\s*:\s?(?P<val>.*)$")
_ELASTIC_RANK = re.compile(r"(?P<rank>-?\d{1,7})(?: \(local_rank: (?P<local>\d{1,6})\))?")
_ELASTIC_EXIT = re.compile(r"(?P<code>-?\d{1,5})(?: \(pid: (?P<pid>\d{1,10})\))?")
#: The head of one log record as torch's Python logger (torchrun) and glog print it: level, date, time to the
#: microsecond or nanosecond, pid (Python), file:line. A multi-line record repeats it on every line.
_RECORD_HEAD = re.compile(r"(?:\[rank\d{1,7}\]:)?\[?[EWIF]\d{4} \d\d:\d\d:\d\d\.\d{6,9} (?:\d{1,10} )?[^\s\]]{1,300}:\d{1,6}\] ")
# A traceback frame inside torch.distributed's collective API: File ".../distributed_c10d.py", line 3252, in all_reduce
_C10D_FRAME = re.compile(r'distributed_c10d\.py", line \d{1,7}, in (?P<fn>[a-z_]{1,40})$')
#: py-spy's text dump (`py-spy dump --pid P`), as posts of hung jobs paste it: a thread's head ('Thread 688510
#: (active): "MainThread"', 'Thread 0x7F2A (idle+gil): "MainThread"') and, innermost first, its frames
#: ("    broadcast (torch/distributed/distributed_c10d.py:1191)").
_PYSPY_THREAD = re.compile(r'^\s{0,8}Thread (?:0x[0-9A-Fa-f]{1,16}|\d{1,10}) \((?P<state>active|idle)[^)]{0,20}\): '
                           r'"(?P<name>[^"]{0,80})"')
_PYSPY_C10D = re.compile(r"^\s{1,16}(?P<fn>\w{1,60}) \([^()\s]{0,300}distributed_c10d\.py:\d{1,7}\)")
MAX_PYSPY = 1024  # py-spy threads kept per run
#: A traceback frame of the program itself (not torch's, not the interpreter's): where it called into torch.
_CODE_FRAME = re.compile(r'File "(?P<path>[^"<]{1,400}?(?P<file>[^"/\\]{1,120}\.py))", line (?P<line>\d{1,7}), in ')
#: Any traceback frame: File "path", line N, in name.
_ANY_FRAME = re.compile(r'\s{0,40}File "[^"\n]{1,400}", line \d{1,7}, in \S')
_AGENT_FAIL = re.compile(r"failed \(exitcode: (?P<code>-?\d{1,5})\) local_rank: (?P<local>\d{1,6}) \(pid: (?P<pid>\d{1,10})\)")
_SIGNAL = re.compile(r"Signal (?P<sig>\d{1,3}) \((?P<name>SIG\w{1,10})\)")
_TOPO_ROW = re.compile(r"^\s*GPU(?P<gpu>\d{1,3})\s+(?P<cells>(?:(?:X|SYS|SOC|NODE|PHB|PXB|PIX|NV\d{1,2})\s+){1,64})")
_TORCH_VERSION = re.compile(r"(?:PyTorch|[Tt]orch) version:? ?(?P<v>\d{1,2}\.\d{1,3}\.\d{1,3}[\w.+]{0,30})")
_NCCL_VERSION_ANY = re.compile(r"NCCL version:? ?(?P<v>\d{1,2}\.\d{1,3}\.\d{1,4})")
_DRIVER = re.compile(r"(?:Driver Version|cudaDriverVersion):? ?(?P<v>[\d.]{2,20})")
_TRANSPORT_KEY = re.compile(
    r"^(?P<src>\d{1,7})(?:\[(?P<sdev>\w{1,16})\])?(?: ?-> ?(?P<dst>\d{1,7})(?:\[(?P<ddev>\w{1,16})\])?)?(?: \[(?P<dir>send|receive)\])? via (?P<via>.{1,80})$"
)


class LogInputError(CommDoctorError):
    """A named input does not exist or is not a file, directory or '-'."""


@dataclass
class InputStat:
    path: str
    bytes: int = 0
    lines: int = 0
    candidates: int = 0
    skipped_binary: int = 0
    bad_encoding: int = 0
    overlong: int = 0
    ansi: int = 0
    nul_bytes: int = 0
    compression: str = ""
    unwrapped: str = ""  # how the input was unwrapped: a key of commdoctor.core.safeopen.UNWRAPPED, or ""
    error: str = ""
    #: Its last line written by NCCL: number and text (where NCCL was when the log stops); 0 and "" when none.
    last_nccl_line: int = 0
    last_nccl_text: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k != "last_nccl_text"}


@dataclass
class Hit:
    """One line that matched a signature."""

    sig: Signature
    ev: Evidence
    seq: int  # global order of the line across all inputs
    groups: dict[str, str | None]
    rec: Record


@dataclass
class Comm:
    ptr: str
    rank: int
    nranks: int
    host: str | None
    pid: int | None
    cuda_dev: int | None = None
    nvml_dev: int | None = None
    bus_id: str | None = None
    comm_id: str | None = None
    nnodes: int | None = None
    state: str = ""
    ev: Evidence | None = None

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k != "ev"}


@dataclass
class PySpyThread:
    """One thread of a py-spy dump pasted in the logs: its head line, and the torch.distributed call it is in (the
    innermost distributed_c10d.py frame), None when no frame of it is in one."""

    ev: Evidence
    name: str
    state: str
    order: int  # the order read (RunModel's sequence), for ordering findings
    call: str | None = None


@dataclass
class Watchdog:
    rank: int | None
    pg: str | None
    seq: int
    op: str
    numel_in: int | None
    numel_out: int | None
    timeout_ms: int | None
    ran_ms: int | None
    timed_out: bool
    ev: Evidence
    order: int


@dataclass
class ElasticFailure:
    root: bool
    host: str | None = None
    rank: int | None = None
    local_rank: int | None = None
    exitcode: int | None = None
    pid: int | None = None
    signal: str | None = None
    traceback: str | None = None
    ev: Evidence | None = None
    agent: bool = False  # the agent's own "failed (exitcode: N) local_rank: ..." line, not its final summary


@dataclass
class RankInfo:
    """Everything the logs say about one process (NCCL's host:pid, or a torch rank)."""

    key: str
    rank: int | None = None
    host: str | None = None
    pid: int | None = None
    cuda_dev: int | None = None
    bus_id: str | None = None
    nranks: int | None = None
    bootstrap: list[str] = field(default_factory=list)  # "eth0:10.0.0.1"
    net: list[str] = field(default_factory=list)
    transports: set[str] = field(default_factory=set)
    nccl_version: str | None = None
    state: str = ""
    first_error: Evidence | None = None
    first_error_seq: int | None = None
    last_seq: int = 0
    source: str | None = None  # the input this process's lines came from first
    #: This process's last NCCL line (read or a transport line): where NCCL was when its log stops.
    last_nccl: Evidence | None = None
    devs: set[int] = field(default_factory=set)  # the GPUs its NCCL lines name ("[dev]"): more than one when it drives several
    _last_nccl_at: tuple[str, int, Any] | None = field(default=None, repr=False, compare=False)

    def to_dict(self) -> dict[str, Any]:
        return {
            "rank": self.rank, "host": self.host, "pid": self.pid, "gpu": self.cuda_dev, "busId": self.bus_id,
            "nranks": self.nranks, "interface": ", ".join(self.bootstrap[:3]) or None, "net": ", ".join(self.net[:3]) or None,
            "transports": sorted(self.transports), "nccl_version": self.nccl_version, "last_state": self.state or None,
            "first_error": self.first_error.text[:300] if self.first_error else None,
            "first_error_at": f"{self.first_error.source}:{self.first_error.line}" if self.first_error else None,
        }


@dataclass
class HostInfo:
    name: str
    versions: set[str] = field(default_factory=set)
    pids: set[int] = field(default_factory=set)
    bootstrap: dict[str, Evidence] = field(default_factory=dict)  # "if:addr" -> first line
    net_socket: dict[str, Evidence] = field(default_factory=dict)
    net_ib: dict[str, Evidence] = field(default_factory=dict)  # "mlx5_0:1/IB"
    oob: set[str] = field(default_factory=set)
    network: set[str] = field(default_factory=set)
    env: dict[str, tuple[str, Evidence]] = field(default_factory=dict)
    driver: str | None = None


@dataclass
class RunModel:
    inputs: list[InputStat] = field(default_factory=list)
    versions: dict[str, Evidence] = field(default_factory=dict)  # NCCL version -> first line
    version_hosts: dict[str, set[str]] = field(default_factory=dict)
    torch_versions: dict[str, Evidence] = field(default_factory=dict)
    hosts: dict[str, HostInfo] = field(default_factory=dict)
    comms: list[Comm] = field(default_factory=list)
    ranks: dict[str, RankInfo] = field(default_factory=dict)
    transports: dict[str, Evidence] = field(default_factory=dict)  # "0->1 P2P/IPC" -> first line
    transport_kinds: dict[str, int] = field(default_factory=dict)
    plugins: dict[str, Evidence] = field(default_factory=dict)
    env: dict[str, dict[str, Evidence]] = field(default_factory=dict)  # VAR -> value -> first line
    hits: dict[str, list[Hit]] = field(default_factory=dict)
    #: Root signatures seen only on torch's warning lines ([W ...] [c10d]): retries and notes torch goes on
    #: past (a connect retried until the store is up, an IPv6 lookup beside a working IPv4 one). They join
    #: ``hits`` only when the job shows a failure; in a job that worked they explain nothing.
    warn_hits: dict[str, list[Hit]] = field(default_factory=dict)
    hit_counts: dict[str, int] = field(default_factory=dict)
    watchdog: list[Watchdog] = field(default_factory=list)
    progress: dict[int, tuple[int, int, Evidence]] = field(default_factory=dict)  # rank -> (enqueued, completed)
    elastic: list[ElasticFailure] = field(default_factory=list)
    members: dict[int, dict[int, Evidence]] = field(default_factory=dict)  # world -> global rank -> line
    topology: dict[str, Evidence] = field(default_factory=dict)  # link kind -> first row showing it
    gid_table: list[tuple[int, str, str, Evidence]] = field(default_factory=list)
    exceptions: list[tuple[str, str, Evidence, int]] = field(default_factory=list)
    unmatched_errors: list[tuple[Evidence, int, str]] = field(default_factory=list)  # evidence, seq, kind
    #: Python's "Traceback (most recent call last):" headers (the first few): a process raised, even when the
    #: exception's own line was cut from what was posted.
    tracebacks: list[Evidence] = field(default_factory=list)
    retcode_files: dict[str, set[str]] = field(default_factory=dict)  # rank key -> NCCL source files in "-> N" chains
    flight: list[Any] = field(default_factory=list)  # flight-recorder group states (loaders.flight_recorder.analyze)
    flight_files: list[str] = field(default_factory=list)
    flight_errors: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # how the inputs were read, when it went other than planned
    #: Per input, the number of its last line that the job wrote going on normally (read, not an error, not the
    #: launcher's): whether a job went on after its launcher restarted the workers.
    last_ok: dict[str, int] = field(default_factory=dict)
    #: Global rank -> the last collectives ProcessGroupWrapper traced on it (TORCH_DISTRIBUTED_DEBUG=DETAIL), oldest
    #: first, up to TRACED_KEPT: (sequence number or None, "OpType=..., TensorShape=..., TensorDtypes=...", the line,
    #: order read).
    traced: dict[int, deque[tuple[int | None, str, Evidence, int]]] = field(default_factory=dict)
    #: (input, line) of an exception -> the torch.distributed call its traceback was in (the innermost
    #: ``distributed_c10d.py ... in all_reduce`` frame before it): which collective each rank waited in.
    raised_in: dict[tuple[str, int], str] = field(default_factory=dict)
    #: The same exceptions -> the program's own line that made that call ("train.py:64"), where the traceback shows it.
    raised_at: dict[tuple[str, int], str] = field(default_factory=dict)
    #: The threads of py-spy dumps pasted in the logs, in order read (up to MAX_PYSPY).
    pyspy: list[PySpyThread] = field(default_factory=list)
    lines_seen: int = 0
    engine: str = ""

    def first(self, sig: str) -> Hit | None:
        hs = self.hits.get(sig)
        return hs[0] if hs else None

    def summary_rows(self) -> list[dict[str, Any]]:
        rows = [r.to_dict() for r in self.ranks.values()]
        rows.sort(key=lambda d: (d["rank"] is None, d["rank"] if d["rank"] is not None else 0, d["host"] or "", d["pid"] or 0))
        return rows


class _Builder:
    """Feeds classified lines into a RunModel; holds the little state multi-line messages need."""

    def __init__(self, model: RunModel) -> None:
        self.m = model
        self.seq = 0
        self._sig_cache: dict[str, list[tuple[Signature, dict[str, str | None]]]] = {}
        self._pid_rank: dict[tuple[str, int], int] = {}
        self._last_host: dict[tuple[str, int | None], str] = {}
        self._quiet: dict[str, str] = {}  # file -> the head of a harmless multi-line log record still being read
        self._tb_files: set[str] = set()  # inputs where a traceback (header or frame) was seen
        self._c10d_call: dict[tuple[str, int | None], str] = {}  # (file, rank) -> last collective call in a traceback
        #: (file, rank) -> the program's own frame last seen in a traceback ("train.py:64"), and the one that called
        #: torch.distributed (the program frame before the traceback's first distributed_c10d.py frame).
        self._code_frame: dict[tuple[str, int | None], str] = {}
        self._c10d_site: dict[tuple[str, int | None], str] = {}
        #: file -> the py-spy threads whose frames are being read (heads on consecutive lines share one stack)
        self._pyspy_cur: dict[str, list[PySpyThread]] = {}
        #: A watchdog message wrapped over lines, as posts show it: file -> the line that said "Watchdog caught
        #: collective operation timeout:" and nothing more (its number, its rank), and the record whose fields went on
        #: to the next line.
        self._watchdog_head: dict[str, tuple[int, int | None]] = {}
        self._watchdog_cut: dict[str, tuple[int, Watchdog]] = {}
        # An interface-list header posted alone: file -> (which list, host); its items follow one per line (keyed by
        # file alone: a leading "[N]" of an item reads like a launcher's rank tag).
        self._iface_head: dict[str, tuple[str, str]] = {}
        self._elastic_root: bool | None = None
        self._elastic_cur: ElasticFailure | None = None
        self._last_error_line: tuple[str, int] | None = None
        self._transport_keys: dict[bytes, tuple[str, str] | None] = {}
        #: A transport line's record by what comes before its leading word (see _transport_head).
        self._heads: dict[bytes, Record] = {}
        #: What a transport line says that depends on its bytes alone (key, label, kind, head), by the line:
        #: a folder of rank logs reports the same lines once per file (the bench's 1,024 files: 65,536 reports, 1,024 lines).
        self._transport_lines: dict[bytes, tuple[bytes, str, str, bytes | None]] = {}

    # -- helpers ---------------------------------------------------------------
    def rank_of(self, rec: Record) -> int | None:
        if rec.rank is not None:
            return rec.rank
        if rec.host is not None and rec.pid is not None:
            r = self._pid_rank.get((rec.host, rec.pid))
            if r is not None:
                return r
        if rec.kind in ("c10d", "exception", "text") and rec.msg:
            m = _RANK_IN_MSG.search(rec.msg[:300])
            if m:
                return int(m.group("rank") or m.group("rank2") or m.group("rank3"))
        return rec.task if rec.kind != "nccl" or rec.host is None else None

    def rank_info(self, rec: Record, rank: int | None, src: str) -> RankInfo | None:
        if rec.host is not None and rec.pid is not None:
            key = f"{rec.host}:{rec.pid}"
        elif rank is not None:
            key = f"rank{rank}"
        else:
            return None
        ri = self.m.ranks.get(key)
        if ri is None:
            if len(self.m.ranks) >= MAX_RANKS:
                return None
            ri = self.m.ranks[key] = RankInfo(key=key, rank=rank, host=rec.host, pid=rec.pid, source=src)
        if ri.rank is None and rank is not None:
            ri.rank = rank
        if ri.cuda_dev is None and rec.dev is not None:
            ri.cuda_dev = rec.dev
        ri.last_seq = self.seq
        return ri

    def host_info(self, host: str) -> HostInfo:
        h = self.m.hosts.get(host)
        if h is None:
            h = self.m.hosts[host] = HostInfo(host)
        return h

    def ev(self, src: str, line: int, rec: Record, rank: int | None) -> Evidence:
        text = rec.text if len(rec.text) <= MAX_EVIDENCE_TEXT else rec.text[:MAX_EVIDENCE_TEXT] + "..."
        return Evidence(source=src, text=text, line=line, rank=rank, host=rec.host)

    # -- the line handler ------------------------------------------------------
    def line(self, src: str, line_no: int, text: str) -> None:
        self.seq += 1
        rec = classify(text)
        rank = self.rank_of(rec)
        ri = self.rank_info(rec, rank, src)
        msg = rec.msg
        ctx = (src, rec.task)
        if "(active" in text or "(idle" in text:
            t = _PYSPY_THREAD.match(text)
            if t:
                # Heads on consecutive lines share the stack under the last of them (a dump grouped by stack, as
                # posts of many processes show it).
                group_ = self._pyspy_cur.get(src)
                if group_ is None or group_[-1].ev.line != line_no - 1:
                    group_ = self._pyspy_cur[src] = []
                if len(self.m.pyspy) < MAX_PYSPY:
                    th = PySpyThread(self.ev(src, line_no, rec, rank), t.group("name"), t.group("state"), self.seq)
                    self.m.pyspy.append(th)
                    group_.append(th)
        if "distributed_c10d.py" in text:
            cur = self._pyspy_cur.get(src)
            if cur and cur[0].call is None:
                p = _PYSPY_C10D.match(text)
                if p:
                    for th in cur:
                        th.call = p.group("fn")
            f = _C10D_FRAME.search(text)
            if f:
                key = (src, rank)
                if key not in self._c10d_call and key in self._code_frame:
                    self._c10d_site[key] = self._code_frame[key]
                self._c10d_call[key] = f.group("fn")
        elif '", line ' in text and "File " in text:
            f = _CODE_FRAME.search(text)
            if f and "/torch/" not in f.group("path") and "site-packages/" not in f.group("path"):
                self._code_frame[(src, rank)] = f"{f.group('file')}:{f.group('line')}"
        elif rec.kind == "exception" and self._c10d_call:
            key = (src, rank)
            fn = self._c10d_call.pop(key, None)
            site = self._c10d_site.pop(key, None)
            self._code_frame.pop(key, None)
            if fn and len(self.m.raised_in) < MAX_EXCEPTIONS:
                self.m.raised_in[(src, line_no)] = fn
                if site:
                    self.m.raised_at[(src, line_no)] = site
        if rec.host:
            self._last_host[ctx] = rec.host
            self.host_info(rec.host).pids.add(rec.pid or 0)
        kind = rec.kind
        head = self._iface_head.pop(src, None) if self._iface_head else None
        if head is not None and _IFACE_ONLY.match(text):
            self.iface_items(head, text, rec, src, line_no)
            self._iface_head[src] = head
            return
        if "Using" in text:
            hm = _IFACE_HEAD.search(msg or text)
            if hm:
                self._iface_head[src] = ("bootstrap" if hm.group("what") == "Bootstrap" else "net_socket",
                                         rec.host or self._last_host.get(ctx) or "?")

        if kind == "version":
            self.version(rec.version or "", src, line_no, rec, self._last_host.get(ctx), ri)
            return
        if kind == "nccl":
            if ri is not None:
                ri._last_nccl_at = (src, line_no, rec)
                if rec.dev is not None and len(ri.devs) < 16:
                    ri.devs.add(rec.dev)
            self.nccl(rec, src, line_no, rank, ri)
        elif kind in ("c10d", "text", "exception"):
            self.torch_side(rec, src, line_no, rank, ri)
        # Signatures: on the message (for NCCL lines) or the whole line less launcher prefixes.
        subject = msg if kind in ("nccl", "c10d") else (f"{rec.exc_type}: {msg}" if kind == "exception" else msg or text)
        if kind == "nccl" and rec.level == "INFO" and rec.retcode is not None:
            if ri is not None and rec.file:
                files = self.m.retcode_files.setdefault(ri.key, set())
                if len(files) < 64:
                    files.add(os.path.basename(rec.file))
            if rec.retcode in (2, 6) and "bootstrap.c" in text:
                # A bootstrap socket's failure: the one trace a rule reads, where the WARN line was not posted.
                hs = self.m.hits.setdefault("nccl_bootstrap_chain", [])
                if len(hs) < MAX_HITS_PER_SIG:
                    for sig, groups in self.signatures(msg or text):
                        if sig.id == "nccl_bootstrap_chain":
                            self.m.hit_counts[sig.id] = self.m.hit_counts.get(sig.id, 0) + 1
                            hs.append(Hit(sig, self.ev(src, line_no, rec, rank), self.seq, groups, rec))
            return  # "file:line -> N" is a trace of an error already reported by a WARN
        quiet = self._quiet.get(src)
        if quiet is not None:
            if text.startswith(quiet):
                return  # the rest of a harmless record (logger.exception's traceback under the same head)
            del self._quiet[src]
        if kind == "traceback" or (kind == "text" and src not in self._tb_files
                                   and _ANY_FRAME.match(subject) is not None):
            # A header, or a frame of a traceback whose header was cut from the post (its first frame stands for it)
            self._tb_files.add(src)
            if len(self.m.tracebacks) < 4:
                self.m.tracebacks.append(self.ev(src, line_no, rec, rank))
        matched = self.signatures(subject)
        if any(s.harmless for s, _ in matched):
            rec_head = _RECORD_HEAD.match(text)
            if rec_head:
                self._quiet[src] = rec_head.group(0)
        if kind == "nccl" and rec.level != "WARN":
            # NCCL reports failures as WARN; its INFO lines ("Call to connect returned Connection refused,
            # retrying") describe retries and setup, which only context signatures may read.
            matched = [(s, g) for s, g in matched if s.role == CONTEXT]
        if kind == "exception" and rec.exc_type:
            if len(self.m.exceptions) < MAX_EXCEPTIONS:
                self.m.exceptions.append((rec.exc_type, msg, self.ev(src, line_no, rec, rank), self.seq))
        is_error = (kind == "nccl" and rec.level == "WARN") or (kind == "c10d" and rec.level in ("E", "F")) or kind == "exception" \
            or (kind == "text" and bool(_NCCL_TESTS_FAIL.search(subject) or _UCX_ERROR.search(subject)
                                        or _ONECCL_ERROR.search(subject)
                                        or _CXX_TERMINATE.search(subject) or _CXX_WHAT.match(subject)
                                        or (subject[:1] in "EF[" and _ERROR_HEAD.match(subject) is not None)
                                        or _MPI_FATAL.search(subject)
                                        or (("ERROR" in subject or "CRITICAL" in subject)
                                            and _PYLOG_ERROR.match(subject) is not None)
                                        or (subject[:1] == "s" and _SLURM_ERROR.match(subject) is not None)))
        warning = kind == "c10d" and rec.level in ("W", "I")
        roots = [s for s, _ in matched if s.role != CONTEXT] if not warning else []
        for sig, groups in matched:
            if warning and sig.role != CONTEXT:
                wh = self.m.warn_hits.setdefault(sig.id, [])
                if len(wh) < MAX_HITS_PER_SIG:
                    wh.append(Hit(sig, self.ev(src, line_no, rec, rank), self.seq, groups, rec))
                continue
            hs = self.m.hits.setdefault(sig.id, [])
            self.m.hit_counts[sig.id] = self.m.hit_counts.get(sig.id, 0) + 1
            if len(hs) < MAX_HITS_PER_SIG:
                hs.append(Hit(sig, self.ev(src, line_no, rec, rank), self.seq, groups, rec))
        if not is_error and not roots and "distributed/elastic/" not in text:
            self.m.last_ok[src] = line_no
        if (roots or is_error) and ri is not None and ri.first_error is None:
            ri.first_error, ri.first_error_seq = self.ev(src, line_no, rec, rank), self.seq
        if is_error and not roots and len(self.m.unmatched_errors) < MAX_EXCEPTIONS:
            # Not errors of their own: NCCL's notes on optional libraries, and the elastic agent's "failed
            # (exitcode: N)" (the launcher reporting a rank's exit, which the failure summary rules read).
            if not (kind == "nccl" and msg.startswith("NET/Plugin")) and not _AGENT_FAIL.search(msg) \
                    and not any(s.harmless for s, _ in matched):
                self.m.unmatched_errors.append((self.ev(src, line_no, rec, rank), self.seq, kind))

    def finish(self) -> None:
        """Fold what the launcher's failure summary says into the per-rank records; let warnings count
        only in a job that failed."""
        m = self.m
        for info in m.ranks.values():
            at, info._last_nccl_at = info._last_nccl_at, None
            if at is not None:
                src, line_no, what = at
                rec = what
                if isinstance(what, bytes):  # a transport line, classified only now (its own text, not its head's)
                    text, _ = clean(what)
                    rec = classify(text) if text is not None else None
                if rec is not None:
                    info.last_nccl = self.ev(src, line_no, rec, info.rank)
        said = [hs[0].sig for hs in m.hits.values() if hs and hs[0].sig.role != CONTEXT]
        failed = bool(m.unmatched_errors) or bool(m.elastic) or any(w.timed_out for w in m.watchdog) or bool(said) \
            or any(hs and hs[0].sig.fails for hs in m.warn_hits.values()) or bool(m.tracebacks)
        # Warnings say how connecting went (retries, lookups): they matter when the job failed while connecting
        # (an error line says so), or when no rule explains its errors; not when it failed later, having connected.
        connecting = any(s.cause in SETUP_CAUSES for s in said)
        if failed and (connecting or not said):
            for sig_id, warned in m.warn_hits.items():
                hs = m.hits.setdefault(sig_id, [])
                hs.extend(warned)
                hs.sort(key=lambda h: h.seq)
                del hs[MAX_HITS_PER_SIG:]
                m.hit_counts[sig_id] = m.hit_counts.get(sig_id, 0) + len(warned)
        for f in self.m.elastic:
            if f.rank is None:
                continue
            ri = next((r for r in self.m.ranks.values() if r.rank == f.rank), None)
            if ri is None:
                if len(self.m.ranks) >= MAX_RANKS:
                    continue
                ri = self.m.ranks[f"rank{f.rank}"] = RankInfo(key=f"rank{f.rank}", rank=f.rank)
            ri.host = ri.host or f.host
            ri.pid = ri.pid or f.pid
            if f.exitcode is not None:
                ri.state = f"exited {f.exitcode}" + (f" ({f.signal})" if f.signal else "") + (" - first to fail" if f.root else "")

    def signatures(self, subject: str) -> list[tuple[Signature, dict[str, str | None]]]:
        got = self._sig_cache.get(subject)
        if got is None:
            got = [(s, m.groupdict()) for s, m in match_all(subject)]
            if len(self._sig_cache) > 20000:
                self._sig_cache.clear()
            self._sig_cache[subject] = got
        return got

    def version(self, v: str, src: str, line_no: int, rec: Record, host: str | None, ri: RankInfo | None) -> None:
        if not v:
            return
        ev = Evidence(src, rec.text[:MAX_EVIDENCE_TEXT], line_no, host=host)
        self.m.versions.setdefault(v, ev)
        if host:
            self.m.version_hosts.setdefault(v, set()).add(host)
            self.host_info(host).versions.add(v)
            for r in self.m.ranks.values():
                if r.host == host and r.nccl_version is None:
                    r.nccl_version = v

    def iface_items(self, head: tuple[str, str], text: str, rec: Record, src: str, line_no: int) -> None:
        """One "[N]name:addr<port>" item of an interface list whose header line stood alone."""
        which, host = head
        h = self.host_info(host)
        target = h.bootstrap if which == "bootstrap" else h.net_socket
        for i in _IFACE.finditer(text):
            if len(target) < 16:
                target.setdefault(f"{i.group('name')}:{i.group('addr')}",
                                  Evidence(src, text[:MAX_EVIDENCE_TEXT], line_no, host=rec.host))

    def nccl(self, rec: Record, src: str, line_no: int, rank: int | None, ri: RankInfo | None) -> None:
        msg = rec.msg
        if rec.level != "INFO":
            return
        host = rec.host
        if "NCCL version" in msg:
            v = _NCCL_VERSION_ANY.search(msg)
            if v:
                self.version(v.group("v"), src, line_no, rec, host, ri)
            return
        if "comm " in msg and ("nranks" in msg or "nRanks" in msg):
            m = _COMM.search(msg)
            if m:
                self.comm(m, rec, src, line_no, ri)
                return
        if msg.startswith("Bootstrap") or msg.startswith("NET/Socket : Using") or msg.startswith("NET : Using"):
            ifs = [f"{i.group('name')}:{i.group('addr')}" for i in _IFACE.finditer(msg)]
            if host and ifs:
                h = self.host_info(host)
                target = h.bootstrap if msg.startswith("Bootstrap") else h.net_socket
                for i in ifs[:16]:
                    target.setdefault(i, self.ev(src, line_no, rec, rank))
            if ri is not None and ifs:
                lst = ri.bootstrap if msg.startswith("Bootstrap") else ri.net
                if not lst:
                    lst.extend(ifs[:8])
            return
        if msg.startswith("NET/IB") and "Using" in msg:
            devs = [f"{d.group('dev')}:{d.group('port')}/{d.group('link')}" for d in _IB_DEV.finditer(msg)]
            oob = msg.split("OOB", 1)[1].strip() if "OOB" in msg else ""
            if host:
                h = self.host_info(host)
                for d in devs[:16]:
                    h.net_ib.setdefault(d, self.ev(src, line_no, rec, rank))
                if oob:
                    h.oob.add(oob[:100])
            if ri is not None and not ri.net:
                ri.net.extend(devs[:8])
            return
        if "set by environment to" in msg:
            m = _ENV_SET.search(msg)
            if m:
                var, val = m.group("var"), m.group("val").rstrip(".")
                vals = self.m.env.setdefault(var, {})
                if len(vals) < 32:
                    vals.setdefault(val, self.ev(src, line_no, rec, rank))
                if host:
                    self.host_info(host).env.setdefault(var, (val, self.ev(src, line_no, rec, rank)))
            return
        if "Using network" in msg:
            m = _NETWORK.search(msg)
            if m and host:
                self.host_info(host).network.add(m.group("net").strip())
            return
        if "lugin" in msg or "NET/OFI" in msg:
            m = _PLUGIN.search(msg)
            if m:
                name = (m.group("name") or m.group("ofi") or "").strip()
                if name and len(self.m.plugins) < 64:
                    label = f"{m.group('kind') or 'net'} plugin: {name}" if m.group("name") else f"aws-ofi-nccl: {name}"
                    self.m.plugins.setdefault(label, self.ev(src, line_no, rec, rank))
            elif "No plugin found" in msg and len(self.m.plugins) < 64:
                self.m.plugins.setdefault("net plugin: none (internal)", self.ev(src, line_no, rec, rank))
            return
        if "cudaDriverVersion" in msg and host:
            drv = _DRIVER.search(msg)
            if drv:
                self.host_info(host).driver = drv.group("v")
            return
        if "NVLS multicast support is available" in msg and ri is not None:
            ri.transports.add("NVLS")
            self.m.transport_kinds["NVLS"] = self.m.transport_kinds.get("NVLS", 0) + 1

    def comm(self, m: re.Match[str], rec: Record, src: str, line_no: int, ri: RankInfo | None) -> None:
        state = _COMM_STATE.search(rec.msg)
        rank = int(m.group("rank"))
        c = Comm(ptr=m.group("ptr"), rank=rank, nranks=int(m.group("nranks")), host=rec.host, pid=rec.pid,
                 cuda_dev=int(m.group("dev")) if m.group("dev") else None,
                 nvml_dev=int(m.group("nvml")) if m.group("nvml") else None, bus_id=m.group("bus"),
                 comm_id=m.group("cid"), nnodes=int(m.group("nnodes")) if m.group("nnodes") else None,
                 state=state.group("state") if state else "", ev=self.ev(src, line_no, rec, rank))
        if rec.host is not None and rec.pid is not None:
            self._pid_rank.setdefault((rec.host, rec.pid), rank)
        if ri is not None:
            if ri.rank is None:
                ri.rank = rank
            ri.nranks = ri.nranks or c.nranks
            if c.cuda_dev is not None:
                ri.cuda_dev = c.cuda_dev
            if c.bus_id:
                ri.bus_id = c.bus_id
            if c.state:
                ri.state = c.state
        for old in self.m.comms:
            if old.ptr == c.ptr and old.host == c.host and old.pid == c.pid:
                if c.state:
                    old.state = c.state
                return
        if len(self.m.comms) < MAX_COMMS:
            self.m.comms.append(c)

    def torch_side(self, rec: Record, src: str, line_no: int, rank: int | None, ri: RankInfo | None) -> None:
        msg = rec.msg or rec.text
        if "Work" in msg and "SeqNum=" in msg:
            w = _WORK.search(msg)
            if w and len(self.m.watchdog) < MAX_WATCHDOG:
                pg = _PG_IN_MSG.search(msg)
                head_line, head_rank = self._watchdog_head.pop(src, (None, None))
                headed = head_line is not None and line_no - head_line <= 2
                # (TORCH_NCCL_BLOCKING_WAIT=1: the caller's wait() gives up instead, "Work WorkNCCL(...) timed out in
                # blocking wait.")
                timed_out = bool(w.group("ran")) or "Watchdog caught" in msg or headed or "timed out in blocking wait" in msg
                if rank is None:
                    rank = head_rank
                wd = Watchdog(
                    rank=rank, pg=pg.group("pg") if pg else None, seq=int(w.group("seq")), op=w.group("op"),
                    numel_in=int(w.group("nin")) if w.group("nin") else None,
                    numel_out=int(w.group("nout")) if w.group("nout") else None,
                    timeout_ms=int(w.group("tmo")) if w.group("tmo") else None,
                    ran_ms=int(w.group("ran")) if w.group("ran") else None, timed_out=timed_out,
                    ev=self.ev(src, line_no, rec, rank), order=self.seq)
                self.m.watchdog.append(wd)
                if w.group("cut"):
                    self._watchdog_cut[src] = (line_no, wd)
                if ri is not None:
                    ri.state = f"{'timed out in' if timed_out else 'failed in'} {w.group('op')} SeqNum={w.group('seq')}"
        elif src in self._watchdog_cut:
            at, wd = self._watchdog_cut.pop(src)
            t = _WORK_TAIL.match(msg) if line_no == at + 1 else None
            if t and (t.group("tmo") or t.group("ran")):
                if t.group("tmo") and wd.timeout_ms is None:
                    wd.timeout_ms = int(t.group("tmo"))
                if t.group("ran"):
                    wd.ran_ms, wd.timed_out = int(t.group("ran")), True
        if "Running collective: CollectiveFingerPrint" in msg:
            t = _TRACED.search(msg)
            if t is not None and (int(t.group("rank")) in self.m.traced or len(self.m.traced) < MAX_RANKS):
                r = int(t.group("rank"))
                self.m.traced.setdefault(r, deque(maxlen=TRACED_KEPT)).append(
                    (int(t.group("seq")) if t.group("seq") else None, t.group("fp"), self.ev(src, line_no, rec, r),
                     self.seq))
        if msg.rstrip().endswith("Watchdog caught collective operation timeout:"):
            self._watchdog_head[src] = (line_no, rank)
        if "ast enqueued" in msg and rank is not None:
            p = _PROGRESS.search(msg)
            if p:
                # The first report of a rank is its state when the failure was detected; later ones (after a
                # straggler woke up, or the dump) describe what happened since and would hide who was behind.
                self.m.progress.setdefault(rank, (int(p.group("enq")), int(p.group("done")), self.ev(src, line_no, rec, rank)))
        elif "Timeout at NCCL work" in msg and rank is not None:
            t = _TIMEOUT_AT.search(msg)
            if t:
                self.m.progress.setdefault(rank, (int(t.group("seq")), int(t.group("seq")) - 1, self.ev(src, line_no, rec, rank)))
        if "GLOBAL_RANK" in msg:
            mm = _MEMBER.search(msg)
            if mm:
                world = int(mm.group("world"))
                ranks = self.m.members.setdefault(world, {})
                if len(ranks) < 4096:
                    ranks.setdefault(int(mm.group("rank")), self.ev(src, line_no, rec, rank))
        if "ersion" in msg:
            tv = _TORCH_VERSION.search(msg)
            if tv:
                self.m.torch_versions.setdefault(tv.group("v"), self.ev(src, line_no, rec, rank))
            nv = _NCCL_VERSION_ANY.search(msg)
            if nv:
                self.version(nv.group("v"), src, line_no, rec, None, ri)
            if "Driver Version" in msg:
                d = _DRIVER.search(msg)
                if d:
                    self.m.hosts.setdefault("?", HostInfo("?")).driver = d.group("v")
        if "GPU" in msg[:12]:
            t = _TOPO_ROW.match(msg)
            if t:
                for cell in t.group("cells").split():
                    if cell != "X":
                        kind = "NV" if cell.startswith("NV") else cell
                        self.m.topology.setdefault(kind, self.ev(src, line_no, rec, rank))
        if "GID[" in msg and len(self.m.gid_table) < 256:
            from commdoctor.parsing.signatures import BY_ID

            g = BY_ID["gid_table"].pattern.search(msg)
            if g:
                self.m.gid_table.append((int(g.group("idx")), g.group("gid"), g.group("ver"), self.ev(src, line_no, rec, rank)))
        self.elastic(rec, msg, src, line_no, rank)

    def elastic(self, rec: Record, msg: str, src: str, line_no: int, rank: int | None) -> None:
        if "Root Cause" in msg:
            self._elastic_root, self._elastic_cur = True, None
            return
        if msg.startswith("Failures:") or msg.strip() == "Failures:":
            self._elastic_root, self._elastic_cur = False, None
            return
        if "exitcode" in msg and "local_rank" in msg:
            a = _AGENT_FAIL.search(msg)
            if a:
                self.m.elastic.append(ElasticFailure(root=False, local_rank=int(a.group("local")), exitcode=int(a.group("code")),
                                                     pid=int(a.group("pid")), ev=self.ev(src, line_no, rec, rank), agent=True))
                return
        if self._elastic_root is None:
            return
        f = _ELASTIC_FIELD.match(msg)  # inside the summary's root-cause block, less any prefix or indentation
        if not f:
            return
        key, val = f.group("key"), f.group("val").strip()
        cur = self._elastic_cur
        if key == "host" or cur is None:
            if len(self.m.elastic) >= 256:
                return
            cur = self._elastic_cur = ElasticFailure(root=bool(self._elastic_root), ev=self.ev(src, line_no, rec, rank))
            self.m.elastic.append(cur)
        if key == "host":
            cur.host = val
        elif key == "rank":
            r = _ELASTIC_RANK.match(val)
            if r:
                cur.rank = int(r.group("rank"))
                cur.local_rank = int(r.group("local")) if r.group("local") else None
        elif key == "exitcode":
            e = _ELASTIC_EXIT.match(val)
            if e:
                cur.exitcode = int(e.group("code"))
                cur.pid = int(e.group("pid")) if e.group("pid") else None
                cur.ev = self.ev(src, line_no, rec, rank)
        elif key == "traceback":
            cur.traceback = val[:300]
            s = _SIGNAL.search(val)
            if s:
                cur.signal = s.group("name")

    def transport(self, src: str, line_no: int, raw: bytes, key: bytes) -> None:
        known = self._transport_lines.get(raw)
        if known is not None and known[0] == key:
            _, label, kind, head = known
        else:
            if key in self._transport_keys:
                parsed = self._transport_keys[key]
            else:
                # What a key says depends on the key alone, and every rank log of a job repeats the same few:
                # read each once (a folder of 1,024 rank logs reports each key once per file).
                parsed = _parse_transport_key(key)
                if len(self._transport_keys) < 4096:
                    self._transport_keys[key] = parsed
            if parsed is None:
                return
            pair, kind = parsed
            label = f"{pair} {kind}"
            head = _transport_head(raw, key)
            if len(self._transport_lines) < 4096 and len(raw) <= 512:  # bounded: 4,096 short lines, ~3 MB at most
                self._transport_lines[raw] = (key, label, kind, head)
        rec = self._heads.get(head) if head is not None else None
        if rec is None or (label not in self.m.transports and len(self.m.transports) < 4096):
            text, _ = clean(raw)
            if text is None:
                return
            rec = classify(text)
            if head is not None and _head_decides(rec, text, len(head)) and len(self._heads) < 4096:
                self._heads[head] = rec
        rank = self.rank_of(rec)
        ri = self.rank_info(rec, rank, src)
        if label not in self.m.transports and len(self.m.transports) < 4096:
            self.m.transports[label] = self.ev(src, line_no, rec, rank)
        self.m.transport_kinds[kind] = self.m.transport_kinds.get(kind, 0) + 1
        if ri is not None:
            ri._last_nccl_at = (src, line_no, raw)
            if len(ri.transports) < 16:
                ri.transports.add(kind)


#: Bytes that clean() keeps as they are (printable ASCII): a line holding any other (controls, DEL, anything not
#: ASCII) is classified whole.
_PLAIN = bytes(range(0x20, 0x7f))  # deleted by translate: what is left of a line is what clean() would change
_TRANSPORT_WORDS = (b"Channel ", b"Ring ", b"CollNet ")


def _transport_head(raw: bytes, key: bytes) -> bytes | None:
    """What a transport line says before its leading word ("host:pid:tid [dev] NCCL INFO "), or None.

    A stream's transport lines are hundreds of lines with one or two such heads (its process and
    thread), and the head alone decides who wrote the line: classifying each head once, not each
    line, was a quarter of the time on a folder of rank logs (bench/README.md, "Round 3"). None when
    the line holds bytes that ``clean`` would rewrite (it is then classified whole).
    """
    if raw.endswith(b"\r"):  # a CRLF file's lines: clean() drops the CR
        raw = raw[:-1]
        if key.endswith(b"\r"):
            key = key[:-1]
    if raw.translate(None, _PLAIN) or not raw.endswith(key):
        return None
    end = len(raw) - len(key)
    # The word sits just before the key ("Channel 00/0 : "); any split works that is the same for every
    # line (the cache is keyed by it, and _head_decides checks the message starts there), so look close.
    for w in _TRANSPORT_WORDS:
        word = raw.rfind(w, max(0, end - 24), end)
        if word >= 0:
            return raw[:word]
    return raw[:end]  # NCCL 2.0's "INFO 0 -> 1 via": the key follows the head


def _head_decides(rec: Record, text: str, n: int) -> bool:
    """Whether ``rec``'s writer fields follow from the first ``n`` characters of ``text`` alone.

    True for an NCCL INFO line whose header (launcher prefixes, host:pid:tid, device, "NCCL INFO ")
    lies inside those characters and whose message is all the rest: classify() reads the header
    from the start of the line and takes the message whole, so any line with the same head and a
    plain tail gets the same host, pid, device, rank and task. rank_of() reads the message only for
    records that are not NCCL's.
    """
    return (rec.kind == "nccl" and rec.level == "INFO" and rec.host is not None and rec.retcode is None
            and len(text) > n and rec.msg == text[n:])


def _parse_transport_key(key: bytes) -> tuple[str, str] | None:
    """("src->dst", transport kind) of what follows a transport line's channel, or None if it is not one."""
    tail, _ = clean(key.split(b"\r", 1)[0])  # the key runs to the end of the line; its text, to a CR
    if tail is None:
        return None
    m = _TRANSPORT_KEY.match(tail.strip())
    if not m:
        return None
    dst = m.group("dst")
    return f"{m.group('src')}->{dst if dst is not None else '?'}", transport_kind(m.group("via").strip())


def transport_kind(via: str) -> str:
    """Normalise what follows "via" to a transport name: P2P/IPC, P2P/CUMEM, SHM, NET/IB, NVLS, CollNet..."""
    v = via.strip()
    up = v.upper()
    if up.startswith("P2P/CUMEM") or "CUMEM" in up:
        return "P2P/CUMEM"
    if up.startswith("P2P/IPC"):
        return "P2P/IPC"
    if up.startswith("P2P/DIRECT") or up.startswith("P2P/COMMON"):
        return "P2P/direct"
    if up.startswith("P2P"):
        return "P2P"
    if up.startswith("SHM") or "SHARED MEMORY" in up:
        return "SHM"
    if up.startswith("COLLNET"):
        return "CollNet"
    if up.startswith("NVLS"):
        return "NVLS"
    if up.startswith("NET/"):
        parts = v.split("/")
        return "NET/" + (parts[1] if len(parts) > 1 else "?")
    return v.split("/")[0][:20]


# -- opening inputs -------------------------------------------------------------------------

def expand(paths: Iterable[str]) -> list[str]:
    """Files to read, in a stable order: directories are walked (sorted), '-' is stdin."""
    return expand_all(paths)[0]


def expand_all(paths: Iterable[str]) -> tuple[list[str], list[tuple[str, str]]]:
    """``expand``, plus what a directory walk found and could not read: (path, why) pairs.

    Inside a directory, a symlink to a regular file is read (once: files are
    deduplicated by their real path); a dangling link, a named pipe, a socket
    or a device is left out and named, so the user learns it was not read.
    """
    out: list[str] = []
    skipped: list[tuple[str, str]] = []
    seen: set[str] = set()

    def add(path: str) -> None:
        real = os.path.realpath(path) if path != "-" else path
        if real not in seen:
            seen.add(real)
            out.append(path)

    for p in paths:
        if p == "-":
            out.append(p)
            continue
        if not os.path.lexists(p):
            raise LogInputError(f"{p}: no such file or directory (give log files, directories, or - for stdin)")
        if os.path.isdir(p):
            for root, dirs, files in os.walk(p, followlinks=False):
                dirs.sort()
                for name in sorted(files):
                    full = os.path.join(root, name)
                    try:
                        mode = os.stat(full).st_mode  # follows a symlink to its target
                    except OSError as e:
                        skipped.append((full, f"skipped: {e.strerror or e}" + (" (a dangling symlink)" if os.path.islink(full) else "")))
                        continue
                    if stat.S_ISREG(mode):
                        add(full)
                    else:
                        skipped.append((full, f"skipped: {kind_of(mode)}, not a log file"))
            continue
        try:
            mode = os.stat(p).st_mode
        except OSError as e:
            raise LogInputError(f"{p}: {e.strerror} (a dangling symlink?)" if os.path.islink(p) else f"{p}: {e.strerror}") from None
        if not (stat.S_ISREG(mode) or stat.S_ISFIFO(mode)):
            # A device like /dev/zero would never end: refuse rather than hang.
            raise LogInputError(f"{p}: {kind_of(mode)}, not a log file (pipe it through stdin with - if you mean to)")
        add(p)
    return out, skipped


def _open(path: str, st: InputStat) -> BinaryIO:
    # A named pipe waits (bounded) for its writer; nothing else that is not a regular file is opened.
    raw: BinaryIO = guarded_stdin() if path == "-" else open_input(path)
    head = raw.peek(512)[:512] if hasattr(raw, "peek") else b""
    refuse_container(head)  # a zip or tar read as text would be noise diagnosed as "healthy"
    inner: BinaryIO | None = None
    if head[:2] == b"\x1f\x8b":
        st.compression = "gzip"
        inner = gzip.GzipFile(fileobj=raw, mode="rb")  # type: ignore[assignment]
    elif head[:3] == b"BZh":
        st.compression = "bzip2"
        inner = bz2.BZ2File(raw)  # type: ignore[assignment]
    elif head[:6] == b"\xfd7zXZ\x00":
        st.compression = "xz"
        inner = lzma.LZMAFile(raw)  # type: ignore[assignment]
    if inner is None:
        if head[:2] in (b"\xff\xfe", b"\xfe\xff") and path != "-":
            # A UTF-16 log (its byte-order mark first): every other byte is NUL, nothing would match.
            st.compression = "utf-16"
            return io.BufferedReader(Utf16ToUtf8(raw))
        return raw
    # Decoded chunk by chunk, so a truncated archive (a node that died while writing) gives every line before the cut.
    return Salvaging(inner, None if path == "-" else raw)  # type: ignore[return-value]


def _unwrap(stream: BinaryIO, st: InputStat) -> BinaryIO:
    """``stream``, or its lines of text where its head shows a log saved as JSON records, with escaped line breaks or
    indented as a whole."""
    buffered: Any = stream if hasattr(stream, "peek") else io.BufferedReader(stream, 1 << 16)
    try:
        head: bytes = buffered.peek(1 << 16)[:1 << 16]
    except (OSError, ValueError):
        return buffered
    st.unwrapped = unwrap_kind(head)
    if not st.unwrapped:
        return buffered
    return io.BufferedReader(Unwrapping(buffered, st.unwrapped, common_indent(head) if st.unwrapped == "indented" else b""))


def load_logs(paths: Iterable[str], engine: str = "auto", progress: Any = None,
              skipped: Iterable[tuple[str, str]] = (), on_bytes: Callable[[int], None] | None = None,
              jobs: int | None = None) -> RunModel:
    """Read every input and build the run model (see the module docstring).

    ``skipped``: (path, why) pairs an earlier ``expand_all`` left out, to be reported with the rest.
    ``progress(stat)`` is called after each input; ``on_bytes(n)`` after each block of ``n`` bytes
    read, whatever the engine (a meter for one big file; with worker processes, after each file).
    ``jobs``: how many processes may scan files (None: as many as there are cores, for a large enough
    set of files; 1: none but this one). The model is the same either way.
    """
    paths = list(paths)
    files, more = expand_all(paths)
    files, fr_files = split_flight_dumps(paths, files)
    skipped = [*skipped, *more]
    model = RunModel()
    b = _Builder(model)
    sizes = _sizes(files)
    if sum(max(s, 0) for s in sizes) > NUMPY_AFTER:
        numpy_lines()  # before any worker starts, so that each of them has it without importing it again
    prefilter = make_prefilter(engine)
    model.engine = prefilter.name
    model.inputs += [InputStat(path=p, error=why) for p, why in skipped]
    n = _workers(sizes, jobs)
    results = _scan_in_workers(files, sizes, prefilter, n, model.notes) if n > 1 else None
    try:
        for path in files:
            _load_one(model, b, path, next(results) if results is not None else None, prefilter, progress, on_bytes)
    finally:
        if results is not None:
            results.close()  # stops the workers now, whatever happened here
    b.finish()
    if fr_files:
        _read_flight(model, fr_files)
    return model


def _load_one(model: RunModel, b: _Builder, path: str, got: _Scanned | None, prefilter: Prefilter,
              progress: Any, on_bytes: Callable[[int], None] | None) -> None:
    """One input into the model: from what a worker found, or (``got`` None) read here."""
    if got is not None:
        st, events = got
        model.inputs.append(st)
        for ev in events:
            if len(ev) == 2:
                _feed(b, st, *ev)
            else:
                b.transport(st.path, *ev)
        if on_bytes is not None:
            on_bytes(st.bytes)
    else:
        st = InputStat(path="<stdin>" if path == "-" else path)
        model.inputs.append(st)
        src = st.path

        def on_line(ln: int, raw: bytes, _st: InputStat = st) -> None:
            _feed(b, _st, ln, raw)

        def on_transport(ln: int, raw: bytes, key: bytes, _s: str = src) -> None:
            b.transport(_s, ln, raw, key)

        _read_input(path, st, prefilter, on_line, on_transport, on_bytes)
    model.lines_seen += st.lines
    if progress is not None:
        progress(st)


def _feed(b: _Builder, st: InputStat, line_no: int, raw: bytes) -> None:
    """One candidate line of input ``st`` into the model."""
    text, flags = clean(raw)
    if flags & 1:
        st.bad_encoding += 1
    if flags & 4:
        st.ansi += 1
    if text is None:
        st.skipped_binary += 1
        return
    if not text.strip():
        return
    b.line(st.path, line_no, text)


def _read_input(path: str, st: InputStat, prefilter: Prefilter, on_line: Callable[[int, bytes], None],
                on_transport: Callable[[int, bytes, bytes], None], on_bytes: Callable[[int], None] | None) -> None:
    """Scan one input: its candidate lines to ``on_line``, its new transport lines to ``on_transport``
    (in the order the scanner finds them), its counts and any error into ``st``."""
    scanner = Scanner(prefilter, on_transport=on_transport, on_block=on_bytes)
    stream: BinaryIO | None = None
    try:
        stream = _open(path, st)
        for line_no, raw in scanner.scan(_unwrap(stream, st)):
            on_line(line_no, raw)
    except (OSError, EOFError, ValueError, lzma.LZMAError, zlib_error()) as e:
        st.error = f"{e.strerror}" if isinstance(e, OSError) and e.strerror and not e.filename else f"{type(e).__name__}: {e}"
    finally:
        if stream is not None and path != "-":
            try:
                stream.close()
            except OSError:
                pass
    if not st.error and isinstance(stream, Salvaging) and stream.error:
        st.error = f"{stream.error} (the lines before the damage were read)"
    s = scanner.stats
    st.bytes, st.lines, st.candidates, st.overlong, st.nul_bytes = s.bytes, s.lines, s.candidates, s.overlong, s.nul_bytes
    if s.last_nccl is not None:
        text, _ = clean(s.last_nccl[1])
        if text is not None:
            st.last_nccl_line, st.last_nccl_text = s.last_nccl[0], text[:MAX_EVIDENCE_TEXT]


# -- scanning files in worker processes ------------------------------------------------------
# A job's folder holds a file per rank. Each costs a few milliseconds of work in Python (its first
# block searched for transport lines, every block's lines counted) that no C search removes, so a
# 1,024-file folder is CPU-bound in one interpreter: on two cores, two processes halve its wall time.
# Workers only scan: each returns a file's candidate and transport lines, in order, and the model is
# built here from them exactly as from a file read here (rank joins and first-seen order depend on it).

#: Total bytes below which a set of files is read here: forking and feeding workers costs more than it saves.
PARALLEL_MIN_BYTES = 32 << 20
PARALLEL_MIN_FILES = 4
#: A file larger than this is read here, in its turn (its lines stream into the model; a worker's would be held).
PARALLEL_MAX_FILE = 64 << 20
#: Bytes of lines a worker holds for one file before it gives the file back to be read here (memory stays flat).
WORKER_MAX_HELD = 8 << 20
MAX_WORKERS = 8
#: Seconds a worker may send nothing (no result, no sign of life) before it is taken for stuck, stopped,
#: and its files read here. A working worker sends a sign of life at least once a second of scanning
#: (after each block past that), so only one that makes no progress at all (a lock it inherited held
#: by a thread that no longer exists in it, a read that never returns) comes near this.
WORKER_SILENT_S = 10.0
#: Seconds of scanning between a worker's signs of life.
BEAT_S = 1.0
_BEAT = 0  # a sign of life down a worker's pipe (results are a tuple or None)

_worker_prefilter: Prefilter | None = None  # the parent's, inherited by each forked worker
_worker_beat: Callable[[int], None] | None = None  # in a worker: sends its signs of life
_Event = tuple[int, bytes] | tuple[int, bytes, bytes]
_Scanned = tuple[InputStat, list[_Event]]


def _sizes(files: list[str]) -> list[int]:
    """Each input's size; -1 for stdin and for anything that is not a regular file (read here, never by a worker)."""
    out = []
    for f in files:
        try:
            st = os.stat(f) if f != "-" else None
        except OSError:
            st = None
        out.append(st.st_size if st is not None and stat.S_ISREG(st.st_mode) else -1)
    return out


def _workers(sizes: list[int], jobs: int | None) -> int:
    """How many worker processes to scan with (1: none)."""
    if jobs is None:
        env = os.environ.get("COMMDOCTOR_JOBS", "")
        jobs = int(env) if env.isdigit() else None
    if jobs is not None and jobs <= 1:
        return 1
    small = [s for s in sizes if 0 <= s <= PARALLEL_MAX_FILE]
    if jobs is None and (len(small) < PARALLEL_MIN_FILES or sum(small) < PARALLEL_MIN_BYTES):
        return 1
    import multiprocessing

    if "fork" not in multiprocessing.get_all_start_methods():
        return 1  # a fresh interpreter per worker (spawn) costs more than a folder of logs saves
    if jobs is None:
        from commdoctor.loaders.cpus import spare_cpus

        jobs = spare_cpus()  # on a busy machine a second process only shares our CPU, for more work in all
        if jobs <= 1:
            return 1
    return max(1, min(jobs, MAX_WORKERS, len(small)))


def _scan_file(path: str) -> _Scanned | None:
    """In a worker: one file's candidate lines and transport lines, in the order they were found,
    or None when they came to more than WORKER_MAX_HELD bytes (the file is then read in the parent)."""
    assert _worker_prefilter is not None
    st = InputStat(path=path)
    events: list[_Event] = []
    held = [0]

    class Full(Exception):
        pass

    def on_line(ln: int, raw: bytes) -> None:
        events.append((ln, raw))
        held[0] += len(raw)
        if held[0] > WORKER_MAX_HELD:
            raise Full

    def on_transport(ln: int, raw: bytes, key: bytes) -> None:
        events.append((ln, raw, key))
        held[0] += len(raw)

    try:
        _read_input(path, st, _worker_prefilter, on_line, on_transport, _worker_beat)
    except Full:
        return None
    return st, events


def _worker_main(paths: list[str], conn: Any) -> None:
    """A worker: scan its share of the files in order and send each result (None: read it in the parent).

    Nothing it meets may reach the user's terminal from here: a failure on a file sends None, and the
    parent reads that file itself, failing (or not) exactly as a run without workers would.
    """
    import signal

    # Ctrl-C reaches the whole process group: the reader stops the workers; a worker must not print a traceback.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    global _worker_beat
    last = [time.monotonic()]

    def beat(_n: int) -> None:  # after each block scanned: a sign of life once a second
        now = time.monotonic()
        if now - last[0] >= BEAT_S:
            last[0] = now
            conn.send(_BEAT)

    _worker_beat = beat
    try:
        for path in paths:
            try:
                got = _scan_file(path)
            except Exception:  # noqa: BLE001 - the parent reads this file again and reports what happens
                got = None
            conn.send(got)
            last[0] = time.monotonic()
    except (OSError, EOFError):  # the parent is gone or stopped reading
        pass
    finally:
        conn.close()


#: Bytes a worker's pipe holds (Linux lets an unprivileged process ask for up to 1 MiB): about a hundred
#: rank logs' results, so a worker goes on while the reader waits for the other one or for a core.
PIPE_BYTES = 1 << 20


def _widen(conn: Any) -> None:
    try:
        import fcntl

        fcntl.fcntl(conn.fileno(), getattr(fcntl, "F_SETPIPE_SZ", 1031), PIPE_BYTES)
    except (ImportError, OSError, ValueError):
        pass  # a pipe of the default size (64 KiB) only means less running ahead


def _scan_in_workers(files: list[str], sizes: list[int], prefilter: Prefilter, n: int,
                     notes: list[str] | None = None) -> Generator[_Scanned | None, None, None]:
    """Per file, in order: what a worker found, or None (read this one here).

    Worker k scans files k, k+n, k+2n... of those small enough and sends each result down its own
    pipe as it goes; results are taken in file order, so a worker runs at most a pipe's worth ahead
    (memory stays flat however many files). A worker that dies (killed, out of memory) leaves its
    files to be read here; none is waited on past its death. One that sends nothing, not even a sign
    of life, for WORKER_SILENT_S is stopped and its files read here too, with a line in ``notes``:
    workers are forked from a check's thread, so one may inherit a lock that nobody will release.
    """
    import multiprocessing

    global _worker_prefilter
    ctx = multiprocessing.get_context("fork")
    todo = [i for i, s in enumerate(sizes) if 0 <= s <= PARALLEL_MAX_FILE]
    owner = {i: j % n for j, i in enumerate(todo)}
    conns: list[Any] = []
    procs: list[Any] = []
    _worker_prefilter = prefilter
    try:
        for k in range(n):
            r, w = ctx.Pipe(duplex=False)
            _widen(w)
            p = ctx.Process(target=_worker_main, args=([files[i] for i in todo[k::n]], w), daemon=True,
                            name=f"commdoctor-logs-{k}")
            try:
                p.start()
            finally:
                w.close()  # the worker holds the only writing end: its death reads as the end of the pipe
            conns.append(r)
            procs.append(p)
    except OSError:  # no more processes to be had: those started work, the rest is read here
        pass
    finally:
        _worker_prefilter = None
    alive = [True] * len(procs)
    try:
        for i in range(len(files)):
            who = owner.get(i)
            got: _Scanned | None = None
            if who is not None and who < len(procs) and alive[who]:
                got = _take(conns[who], procs[who])
                if got is _STUCK:
                    alive[who] = False
                    got = None
                    procs[who].kill()
                    procs[who].join(5)
                    if notes is not None:
                        notes.append(f"a worker process sent nothing for {WORKER_SILENT_S:g} s while scanning {files[i]};"
                                     f" it was stopped and its files were read in the main process")
                elif got is _GONE:
                    alive[who] = False
                    got = None
            yield got
    finally:
        for p in procs:
            if p.is_alive():
                p.terminate()
        for p in procs:
            p.join(5)
        for c in conns:
            c.close()


_STUCK: Any = object()  # the worker sent nothing for WORKER_SILENT_S
_GONE: Any = object()  # the worker is dead, its pipe empty


def _take(conn: Any, proc: Any) -> Any:
    """A worker's next result (a file's scan or None), skipping its signs of life; _STUCK or _GONE."""
    quiet_until = time.monotonic() + WORKER_SILENT_S
    try:
        while True:
            left = quiet_until - time.monotonic()
            if left <= 0:
                return _STUCK
            if not conn.poll(min(1.0, left)):
                if not proc.is_alive() and not conn.poll(0):
                    return _GONE
                continue
            got = conn.recv()
            if type(got) is not int:
                return got
            quiet_until = time.monotonic() + WORKER_SILENT_S
    except (EOFError, OSError):
        return _GONE


#: torch names a rank's flight-recorder dump PREFIX<rank> (TORCH_FR_DUMP_TEMP_FILE, default /tmp/nccl_trace_rank_).
_FR_NAME = re.compile(r"trace_rank_?\d{1,7}(?:\.json|\.pkl)?$")
MAX_FR_FILES = 4096


def _is_dump(path: str) -> bool:
    """A flight-recorder dump by its name and first bytes (a pickle, or JSON), not a log to scan."""
    if not _FR_NAME.search(os.path.basename(path)):
        return False
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return False  # a pipe named like a dump is read as the log it was given as (opening it here would block)
        with open(path, "rb") as f:
            head = f.read(2)
    except OSError:
        return False
    return head[:1] == b"\x80" or head[:1] == b"{"


def split_flight_dumps(paths: list[str], files: list[str]) -> tuple[list[str], list[str]]:
    """The inputs less flight-recorder dumps, and the dumps: those among the inputs plus those beside a log
    file given alone (its folder's ``fr/`` sub-folder, or trace files next to it), as a job's folder holds them."""
    dumps = [f for f in files if f != "-" and _is_dump(f)]
    is_dump = set(dumps)
    logs = [f for f in files if f not in is_dump]
    seen = set(dumps)
    folders: dict[str, None] = {}  # each folder once, however many of its files were given
    for p in paths:
        if p != "-" and os.path.isfile(p):
            folders.setdefault(os.path.dirname(os.path.abspath(p)), None)
    for folder in folders:
        for d in (os.path.join(folder, "fr"), folder):
            try:
                names = sorted(os.listdir(d)) if os.path.isdir(d) else []
            except OSError:
                continue
            for n in names[:MAX_FR_FILES * 2]:
                full = os.path.join(d, n)
                if full not in seen and os.path.isfile(full) and _is_dump(full):
                    seen.add(full)
                    dumps.append(full)
    return logs, dumps[:MAX_FR_FILES]


def _read_flight(model: RunModel, fr_files: list[str]) -> None:
    """The flight recorder's view of the same job, through its own loader; bad dumps become error lines."""
    from commdoctor.loaders import flight_recorder

    model.flight_files = fr_files
    try:
        dumps, errors = flight_recorder.load_dumps(fr_files)
        model.flight = list(flight_recorder.analyze(dumps)) if dumps else []
        model.flight_errors = list(errors)[:16]
    except Exception as e:  # noqa: BLE001 - the dumps are a second opinion: a bad set must not cost the log verdict
        model.flight_errors = [f"flight recorder: {type(e).__name__}: {e}"]


def zlib_error() -> type[BaseException]:
    import zlib

    return zlib.error


def iter_text(data: bytes) -> Iterator[str]:  # small helper for tests and fuzzing
    for raw in io.BytesIO(data):
        t, _ = clean(raw)
        if t is not None:
            yield t
