"""Classify one log line: NCCL debug output, torch/c10d messages, tracebacks, MPI/UCX errors.

Promise: ``clean`` and ``classify`` are total functions of their input. They
never raise and run in time linear in the line length (every regular
expression here is anchored or bounded and has no nested quantifiers), so a
hostile line costs at most a few microseconds per kilobyte.

What a line can carry, outermost first:

- launcher prefixes, possibly several: ``3: `` (torchrun ``--tee``/srun ``-l``), a time the capture
  added (``ts``: ``Nov 27 20:36:31 ``; ``kubectl logs --timestamps``: ``2026-11-27T20:36:31.1Z ``),
  ``[rank3]:`` (torch >= 2.2), ``[default0]:`` (torchrun log redirects),
  ``[1,3]<stderr>:`` (Open MPI's ``mpirun --tag-output``: job, rank; horovodrun's ``[3]<stderr>:``),
  ``(Actor pid=12, ip=10.0.0.1) `` (Ray), ANSI colour codes, or the ``[0m``
  left behind when a terminal's escape byte was lost in copying;
- an NCCL header ``[timestamp] host:pid:tid [dev] `` (timestamp since 2.26;
  the device since 2.3), then ``file:line [(func)] NCCL WARN msg``,
  ``NCCL INFO msg``, ``time func:line NCCL TRACE msg`` or ``NCCL CALL msg``.
  NCCL 2.0-2.2 wrote ``WARN``/``INFO`` without the ``NCCL`` word;
- a glog header from c10d: ``[E415 21:17:08.996 ProcessGroupNCCL.cpp:552] msg``, or the same
  shape without brackets from torch's Python logging (``E1124 22:41:11.358000 1062 torch/x.py:986] msg``).
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass, field
from typing import Any

#: Longest line we parse; the rest is cut (and counted by the reader).
MAX_LINE = 16384

_ANSI = re.compile(r"\x1b\[[0-9;?]{0,20}[ -/]{0,3}[@-~]|\x1b[@-Z\\-_]")
# A colour code whose escape byte was lost when the log was copied: "[0m", "[1;31m".
_ANSI_RESIDUE = re.compile(r"^(?:\[\d{1,3}(?:;\d{1,3}){0,4}m ?)+")
# ... or written out by syslog, which escapes control characters as '#' and three octal digits ("#033[2m").
_ANSI_SYSLOG = re.compile(r"#033\[[0-9;?]{0,20}[A-Za-z]")
_CTRL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
# A log copied from a web page's source or an HTML export keeps its characters as entities: NCCL's "10.0.0.1&lt;0&gt;",
# torch's "Cuda failure &#39;out of memory&#39;".
_ENTITY = re.compile(r"&(?:lt|gt|amp|quot|apos|nbsp|#\d{1,7}|#[xX][0-9a-fA-F]{1,6});")

# -- launcher prefixes ---------------------------------------------------------------
#: MPICH's and Intel MPI's mpiexec -prepend-rank (Intel MPI's I_MPI_DEBUG too): "[3] text". NCCL's own device field on a
#: line cut from its header ("[3] include/shm.h:28 NCCL WARN", "[0] NCCL INFO ...") has the same shape: what follows
#: it (a "file:line" and the level, or the level alone) leaves it to the NCCL reader. Read from text and from bytes.
_MPI_PREPEND_RANK = (r"\[(?P<mprank>\d{1,6})\] (?=\S)"
                     r"(?![^\s:\[\]]{1,200}:\d{0,7} (?:NCCL )?(?:WARN|INFO|TRACE)\b|(?:NCCL )?(?:WARN|INFO|TRACE)\b)")
#: The prefixes as alternatives; ``_PREFIXES`` reads them from text, ``RAW_HEAD`` below from bytes.
_PREFIX_ALTS = (
    # A post's own framing: e-mail or Markdown quote marks ("> > ", with any indentation after them), and a terminal
    # colour code whose escape byte was lost ("[0m") after them. (A log indented as a whole, a Markdown code block, is
    # read less that indentation: commdoctor.core.safeopen.Unwrapping; a line's own indentation is the log's.)
    r"(?:>[ \t]*){1,8}|(?:\[\d{1,3}(?:;\d{1,3}){0,4}m ?){1,8}"
    r"|\[rank(?P<rank>\d{1,6})\]:\s?"  # torch >= 2.2: "[rank3]:[E... ]"
    r"|\[default(?P<local>\d{1,6})\]:\s?"  # torchrun --log-dir / --tee with role "default"
    r"|\[?\d\d:\d\d:\d\d(?:[.,]\d{1,9})?\]? "  # a clock, bare or bracketed (before srun's "3: ", which "20:" also is)
    # oneCCL's time and pid ("2024:08:21-10:24:26:( 4456) |CCL_ERROR| ..."), which "2024: " would otherwise read as a task
    r"|\d{4}:\d\d:\d\d-\d\d:\d\d:\d\d:\( {0,8}\d{1,10}\) "
    r"|(?P<task>\d{1,6}): ?"  # torchrun --tee / srun -l: "3: "
    # mpirun --tag-output: "[1,3]<stderr>:"; horovodrun: "[3]<stderr>:", with --prefix-output-with-timestamp after
    # time.asctime()'s "Tue Jun  9 20:10:40 2020" (no space between).
    r"|(?:[A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \d{4})?\[(?:\d{1,9},)?(?P<mpirank>\d{1,6})\]<std(?:out|err)>: ?"
    # Ray: "(RayWorkerWrapper pid=12, ip=10.0.0.1) ", and Ray 1.x's "(pid=12) " with no actor name
    r"|\((?:(?P<actor>[A-Za-z_][\w.]{0,80}) )?pid=(?P<apid>\d{1,10})(?:, ip=(?P<aip>[\d.:a-fA-F]{1,45}))?\) ?"
    # pdsh (DeepSpeed's multi-node launcher) and pssh name the node a line came from: "worker-1: ", "10.0.0.12: ". A
    # node name holds a digit; an exception's type ("RuntimeError: ", "mpi4py.MPI.Exception: ") is not one.
    # docker compose names the container of each line, padded to the longest name: "trainer-1  | " (Compose v2),
    # "proj_worker_1  | " (v1).
    r"|[A-Za-z0-9][\w.\-]{0,62}[-_]\d{1,4} {1,40}\| ?"
    r"|(?=[\w.\-]{0,62}\d)(?![\w.\-]{0,62}(?:Error|Exception|Warning|Exit|Interrupt|Failure|Timeout): )"
    r"[A-Za-z0-9][\w.\-]{0,62}: "
    # grep's file name over several files (grep -r / -H, with -n its line number): "logs/LOG1.3.txt:", "rank0.log:12:".
    r"|[\w.~/\-]{0,200}\.(?:txt|log|out|err|stdout|stderr)(?::\d{1,9})?:(?=\S)"
    r"|" + _MPI_PREPEND_RANK +  # mpiexec -prepend-rank
    # A time the capture put in front of every line: moreutils ``ts`` ("Nov 27 20:36:31 "), kubectl/docker logs
    # --timestamps ("2026-11-27T20:36:31.123456789Z "), ISO stamps with or without brackets ("[2026-11-27 20:36:31] ").
    # Other loggers' times: Go's and glog's "2026/11/27 20:36:31 ", seconds since the epoch in brackets
    # ("[1764275791.123456] ", UCX's and dmesg's shape). A bare or bracketed clock ("[20:36:31] ") is read above.
    r"|\d{4}/\d\d/\d\d \d\d:\d\d:\d\d(?:[.,]\d{1,9})? |\[ {0,12}\d{1,10}\.\d{1,9}\] "
    # syslog and journalctl add the host and the process: "Nov 27 20:36:31 node1 python[1234]: ".
    r"|[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d(?:\.\d{1,9})? (?:[\w.\-]{1,63} (?:[\w.\-/@]{1,63}\[\d{1,10}\]|kernel): )?"
    # (containerd's log files add the stream and a partial/full tag: "2026-11-27T20:36:31.1Z stderr F ").
    r"|\[?\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d{1,9})?(?:Z|[+-]\d\d:?\d\d)?\]? (?:std(?:out|err) [FP] )?"
)
_PREFIXES = re.compile(r"^(?:" + _PREFIX_ALTS + r")")

# -- NCCL --------------------------------------------------------------------------
# Optional timestamp (NCCL_DEBUG_TIMESTAMP_FORMAT, default "[%F %T] " on WARN since 2.26),
# then host:pid:tid, then an optional [cudaDev].
_NCCL_HEAD = re.compile(
    r"(?:\[\d{4}-\d\d-\d\d[ T][\d:.,]{1,20}\] )?"
    r"(?P<host>[^\s:\[\]()]{1,255}):(?P<pid>\d{1,10}):(?P<tid>\d{1,10}) "
    r"(?:\[(?P<dev>-?\d{1,5})\] )?"
)
# A network plugin's WARN names its function where NCCL names a file: aws-ofi-nccl logs __PRETTY_FUNCTION__, a C++
# signature ("ncclResult_t nccl_ofi_tuner_init_v1(size_t, size_t, ncclDebugLogger_t):270 NCCL WARN ...").
_NCCL_WARN = re.compile(
    r"(?P<file>[^\s:]{1,200}|[A-Za-z_][^:()]{0,200}\([^()]{0,300}\)):(?P<line>\d{0,7})(?: \((?P<func>[^()\s]{1,120})\))?"
    r" (?:NCCL )?WARN(?![A-Za-z]) ?(?P<msg>.*)"
)
_NCCL_INFO = re.compile(r"(?:NCCL )?INFO ?(?P<msg>.*)")
_NCCL_TRACE = re.compile(r"(?P<ts>[\d.]{1,30}) (?P<func>\S{1,120}):(?P<line>\d{1,7}) NCCL TRACE ?(?P<msg>.*)")
_NCCL_CALL = re.compile(r"NCCL CALL ?(?P<msg>.*)")
# Lines cut from their header (posts often drop it): "[3] include/shm.h:28 NCCL WARN ...",
# "graph/xml.h:77 NCCL WARN ...", "NCCL WARN NET/IB : ...", "NCCL INFO graph/topo.cc:380 -> 3",
# "misc/ibvwrap.cu:60 WARN Failed to open libibverbs.so[.1]" (2.0-era, no NCCL word). The file is a whole
# token (nothing of its class just before it): searched along a line, the pattern then tries the file once
# per token instead of scanning up to 200 characters from every position of a long word.
_NCCL_HEADLESS = re.compile(
    r"(?:\[(?P<dev>-?\d{1,5})\] )?(?:(?<![^\s:\[\]])(?P<file>[^\s:\[\]]{1,200}):(?P<line>\d{0,7}) )?"
    r"(?P<nccl>NCCL )?(?P<level>WARN|INFO|TRACE)(?![A-Za-z]) ?(?P<msg>.*)"
)
_WORD = re.compile(r"\w")
_RETCODE = re.compile(r"^(?P<file>[^\s:]{1,200}):(?P<line>\d{1,7}) -> (?P<code>\d{1,3})(?P<rest>.*)$")
_VERSION = re.compile(r"NCCL version:? ?(?P<v>\d{1,2}\.\d{1,3}\.\d{1,4})(?:[-+][\w.+-]{0,40})?")

# -- torch / c10d ----------------------------------------------------------------------
_GLOG = re.compile(
    r"\[(?P<lvl>[IWEF])(?:\d{3,4})?\s?(?:[\d:.]{6,30}\s)?(?:\d{1,10}\s)?(?P<file>(?:[A-Za-z]:)?[\w.\-/\\]{0,200}\.[A-Za-z]{1,4}):(?P<line>\d{1,7})\]\s?(?P<msg>.*)"
)
# (A Windows build names its sources with the build machine's path: "[W C:\\actions-runner\\...\\socket.cpp:601]". The
# source has an extension: "[WCS-164320:29458]", Open MPI's host and pid, is no warning of file CS-164320.)
# torch's Python logging (torch.distributed.elastic, 2.x) in glog's shape without brackets:
# "E1124 22:41:11.358000 1062 torch/distributed/elastic/multiprocessing/api.py:986] failed (exitcode: 1) ...".
_PYGLOG = re.compile(
    r"(?P<lvl>[IWEF])\d{4} [\d:.]{6,30} \d{1,10} (?P<file>[\w.\-/]{1,200}\.py):(?P<line>\d{1,7})\] ?(?P<msg>.*)"
)
# NCCL's result class, which torch prints on the line after "NCCL error in: ..." and NCCL-based programs print alone
# ("ncclSystemError: System call (e.g. socket, malloc) or external library call failed or device error."), reads
# like an exception of its own: the class names what failed. TensorFlow 1.x re-raises an op's error from
# Session.run as "UnknownError (see above for traceback): MESSAGE".
_EXC = re.compile(
    r"^(?:[\w.]{1,200}\.)?(?P<type>[A-Z]\w{0,80}(?:Error|Exception|Exit|Interrupt|Failure|Timeout)|KeyboardInterrupt|Exception"
    r"|nccl(?:System|Internal|Remote|UnhandledCuda|InvalidUsage|InvalidArgument)Error)"
    r"(?: \(see above for traceback\))?(?::\s?(?P<msg>.*))?$"
)
_TRACEBACK = "Traceback (most recent call last):"
#: IPython's and Jupyter's header: the exception's type, padding, then "Traceback (most recent call last)", no colon.
_IPY_TRACEBACK = re.compile(r"[A-Za-z_][\w.]{0,200}\s{2,}Traceback \(most recent call last\)$")


@dataclass(slots=True)
class Record:
    """What one line says. ``kind`` picks which fields matter.

    kinds: ``nccl`` (level, host, pid, tid, dev, file, line, func, msg),
    ``version`` (version), ``c10d`` (level, file, msg), ``exception``
    (exc_type, msg), ``traceback``, ``text`` (msg is the whole line).
    """

    kind: str
    msg: str
    level: str = ""
    host: str | None = None
    pid: int | None = None
    tid: int | None = None
    dev: int | None = None
    file: str | None = None
    line: int | None = None
    func: str | None = None
    retcode: int | None = None
    version: str | None = None
    exc_type: str | None = None
    rank: int | None = None  # from a launcher prefix, when there is one
    task: int | None = None  # "3: " prefixes: torchrun/srun task index
    actor: str | None = None  # Ray actor "Name pid=N"
    actor_ip: str | None = None  # the address in Ray's prefix, when it names one (an actor on another node)
    text: str = ""  # the cleaned line, verbatim (evidence)
    extra: dict[str, Any] = field(default_factory=dict)


def clean(raw: bytes) -> tuple[str | None, int]:
    """Bytes of one line -> (text, flags). ``None`` means binary junk to skip.

    flags: bit 1 invalid UTF-8 replaced, bit 2 cut at MAX_LINE, bit 4 ANSI removed.
    """
    flags = 0
    if len(raw) > MAX_LINE:
        raw = raw[:MAX_LINE]
        flags |= 2
    if b"\x00" in raw:
        # NUL bytes: a binary file, or a record torn by a crash. Keep the longest
        # printable stretch only when it still looks like text.
        parts = [p for p in raw.split(b"\x00") if p.strip()]
        if not parts:
            return None, flags
        raw = max(parts, key=len)
        flags |= 8
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        text = raw.decode("utf-8", "replace")
        flags |= 1
        # Mostly undecodable bytes: binary junk rather than a mis-encoded log line.
        if text.count("\ufffd") * 4 > len(text):
            return None, flags
    if "\x1b" in text:
        text = _ANSI.sub("", text)
        flags |= 4
    if "#033[" in text:
        text = _ANSI_SYSLOG.sub("", text)
        flags |= 4
    if "&" in text and ";" in text:
        text = _ENTITY.sub(_entity, text)
    text = text.rstrip("\r\n")
    if "\r" in text:  # progress bars: keep what was last drawn
        text = text.rsplit("\r", 1)[-1] if text.rsplit("\r", 1)[-1].strip() else text.replace("\r", "")
    if text[:1] == "[" and "m" in text[:30]:
        stripped = _ANSI_RESIDUE.sub("", text)
        if stripped != text:
            text = stripped
            flags |= 4
    if _CTRL.search(text):
        text = _CTRL.sub("", text)
        if not text.strip():
            return None, flags
    return text, flags


def _entity(m: re.Match[str]) -> str:
    c = html.unescape(m.group(0))
    return " " if c == "\xa0" else c


def strip_prefixes(text: str, rec: Record | None = None) -> str:
    """Remove launcher prefixes (any number, any order), noting rank/task/actor on ``rec``."""
    for _ in range(6):
        m = _PREFIXES.match(text)
        if not m or m.end() == 0:
            break
        if rec is not None:
            if m.group("rank") is not None:
                rec.rank = int(m.group("rank"))
            elif m.group("mpirank") is not None:
                rec.rank = int(m.group("mpirank"))
            elif m.group("mprank") is not None:
                rec.rank = int(m.group("mprank"))
            elif m.group("task") is not None and rec.task is None:
                rec.task = int(m.group("task"))
            elif m.group("local") is not None and rec.task is None:
                rec.task = int(m.group("local"))
            elif m.group("apid") is not None:
                rec.actor_ip = m.group("aip")
                rec.actor = (f"{m.group('actor')} " if m.group("actor") else "") + f"pid={m.group('apid')}" \
                    + (f" ip={rec.actor_ip}" if rec.actor_ip else "")
        text = text[m.end():]
    return text


def _int(s: str | None) -> int | None:
    if not s:
        return None
    try:
        return int(s)
    except ValueError:
        return None


def _nccl_body(rec: Record, body: str) -> Record | None:
    """Fill ``rec`` from what follows the NCCL header; None when it is not NCCL output."""
    if body.startswith("NCCL INFO") or body.startswith("INFO "):
        m = _NCCL_INFO.match(body)
        rec.level = "INFO"
    elif body.startswith("NCCL CALL"):
        m = _NCCL_CALL.match(body)
        rec.level = "CALL"
    elif "WARN" in body[:400]:
        m = _NCCL_WARN.match(body)
        if m:
            rec.level = "WARN"
            rec.file, rec.line, rec.func = m.group("file"), _int(m.group("line")), m.group("func")
        elif body.startswith("NCCL WARN") or body.startswith("WARN "):
            m = _NCCL_HEADLESS.match(body)
            rec.level = "WARN"
    elif "NCCL TRACE" in body[:400]:
        m = _NCCL_TRACE.match(body)
        if m:
            rec.level = "TRACE"
            rec.func, rec.line = m.group("func"), _int(m.group("line"))
    else:
        m = None
    if not m:
        return None
    rec.kind = "nccl"
    rec.msg = m.group("msg").strip()
    if rec.level == "INFO":
        r = _RETCODE.match(rec.msg)
        if r:
            rec.file, rec.line, rec.retcode = r.group("file"), _int(r.group("line")), _int(r.group("code"))
    return rec


def classify(text: str) -> Record:
    """One cleaned line -> a Record (``kind="text"`` when nothing more specific applies)."""
    rec = Record(kind="text", msg="", text=text)
    body = strip_prefixes(text, rec)
    # NCCL with its full header.
    if ":" in body[:300]:
        m = _NCCL_HEAD.match(body)
        if m is not None:
            rec.host = m.group("host")
            rec.pid, rec.tid, rec.dev = _int(m.group("pid")), _int(m.group("tid")), _int(m.group("dev"))
            got = _nccl_body(rec, body[m.end():])
            if got is not None:
                return got
            rec.host = rec.pid = rec.tid = rec.dev = None
    if body.startswith("NCCL version") or (body.startswith("NCCL ") and "version" in body[:20]):
        v = _VERSION.search(body)
        if v:
            rec.kind, rec.version, rec.msg = "version", v.group("v"), body
            return rec
    # NCCL without a header (cut by the poster, or NCCL 2.0-era formats).
    idx = body.find("WARN")
    if idx == -1:
        idx = body.find("NCCL INFO")
    if idx != -1 and idx < 260:
        h = _NCCL_HEADLESS.search(body, max(0, idx - 230) if idx > 230 else 0)
        # A level tag with no message after it ("... both on CUDA device 1a000" from NCCL INFO.) is a sentence
        # that names NCCL's output, not a line of it: the line is read as text, whole.
        if h is not None and (h.group("nccl") or h.group("file")) and h.start("level") == idx + (5 if body.startswith("NCCL", idx) else 0) \
                and _WORD.search(h.group("msg")):
            rec.kind, rec.level = "nccl", h.group("level")
            rec.dev, rec.file, rec.line = _int(h.group("dev")), h.group("file"), _int(h.group("line"))
            rec.msg = h.group("msg").strip()
            if rec.level == "INFO":
                r = _RETCODE.match(rec.msg)
                if r:
                    rec.file, rec.line, rec.retcode = r.group("file"), _int(r.group("line")), _int(r.group("code"))
            return rec
    # c10d / glog.
    if body[:1] == "[" or "] " in body[:120]:
        g = _GLOG.search(body, 0, 200) if "[" in body[:200] else None
        if g is not None and g.start() < 120:
            g = _GLOG.match(body, g.start()) or g  # the first search saw only 200 characters
            rec.kind, rec.level, rec.file, rec.line = "c10d", g.group("lvl"), g.group("file"), _int(g.group("line"))
            rec.msg = g.group("msg").strip()
            return rec
    if body[1:5].isdigit() and body[:1] in "IWEF":
        g = _PYGLOG.match(body)
        if g is not None:
            rec.kind, rec.level, rec.file, rec.line = "c10d", g.group("lvl"), g.group("file"), _int(g.group("line"))
            rec.msg = g.group("msg").strip()
            return rec
    s = body.strip()
    # (a logger's message may run into it: SGLang's "Scheduler hit an exception: Traceback (most recent call last):")
    if s.startswith(_TRACEBACK) or s.endswith(_TRACEBACK) \
            or (s.endswith("(most recent call last)") and _IPY_TRACEBACK.match(s)):
        rec.kind, rec.msg = "traceback", s
        return rec
    e = _EXC.match(s)
    if e is not None:
        rec.kind, rec.exc_type, rec.msg = "exception", e.group("type"), (e.group("msg") or "").strip()
        return rec
    v = _VERSION.search(body) if "NCCL version" in body else None
    if v is not None:
        rec.extra["nccl_version"] = v.group("v")
    rec.msg = s
    return rec


# -- raw lines (bytes): who wrote a line and how bad it is, without decoding it -----------------------------
# The TUI's log view and the report's excerpts read gigabytes through mmap and decide per line from bytes.
# They use these, so a prefix commdoctor knows is known everywhere (``classify`` reads the same prefixes
# from text).

#: The launcher and capture prefixes ``classify`` strips from text (the same alternatives, up to six, any order), after
#: the indentation of a pasted block, then NCCL's optional timestamp and its "host:pid:tid [".
RAW_HEAD = re.compile(
    rb"^\s{0,8}(?:(?:" + _PREFIX_ALTS.encode() + rb") ?){0,6}"
    rb"(?:\[\d{4}-\d\d-\d\d[ T][\d:.,]{1,20}\] )?"
    rb"(?:(?P<host>[A-Za-z0-9][\w.\-]{0,254}):(?P<pid>\d{1,10}):\d{1,10} \[)?"
)
#: NCCL's communicator line, which ties its host:pid to a rank ("... NCCL INFO ... rank 3 nranks 8 ...").
RAW_NCCL_RANK = re.compile(rb"NCCL INFO [^\n]{0,300}?\brank (?P<rank>\d{1,7}) nranks \d{1,7}")
#: Slurm's commands reporting their own failures ("srun: error: node-1: task 3: Exited with exit code 1",
#: "slurmstepd: error: ...", "srun: fatal: ...") and the C++ runtime's std::terminate handler (libstdc++
#: __verbose_terminate_handler: an exception nobody caught; SIGABRT follows). The log reader (text, anchored after the
#: prefixes for Slurm) and the raw level below (bytes) share these.
SLURM_REPORT = r"(?:srun|sbatch|salloc|sattach|slurmstepd(?:-[\w.\-]{1,64})?): (?:error|fatal): "
CXX_TERMINATE = r"\bterminate called (?:after throwing an instance of|without an active exception)"
#: The exception's own message, which the handler prints on the next line ("  what():  Failed to set cuda device"):
#: the failure itself, where std::terminate's line only says that nothing caught it.
CXX_WHAT = r"^\s{0,8}what\(\):\s{1,8}\S"
#: A process that died of SIGBUS, as the kernel, Python and the launchers say it: "Bus error", "Signal 7 (SIGBUS)",
#: torchrun's "exitcode: -7", DeepSpeed's "exits with return code = -7", Paddle's "error with exit code -7", torch's
#: DataLoader "Unexpected bus error". The log rule and the shared-memory fact read it the same way.
SIGBUS_DEATH = (r"Bus error|SIGBUS|Signal 7 \(|exitcode\s*:?\s*-7\b|[Uu]nexpected bus error|\breturn code = -7\b"
                r"|\bwith exit code -7\b")
#: oneCCL's failure tags ("2024:08:21-10:24:26:( 4456) |CCL_ERROR| atl_ofi.cpp:243 init: ...").
ONECCL_ERROR = r"\|CCL_(?:ERROR|FATAL)\|"
# NCCL has no ERROR level: its WARN lines report failures, so they count as errors here (oneCCL's |CCL_ERROR| tag
# too); so do Python logging's
# CRITICAL, Slurm's reports and the C++ runtime's terminate (the log reader counts them too), tried only on lines
# that hold one of RAW_ERROR_RARE_WORDS, so the common line pays for one pattern.
RAW_ERROR = re.compile(rb"NCCL WARN|\bERROR\b|" + ONECCL_ERROR.encode()
                       + rb"|\bFATAL\b|Error:|Traceback \(most recent call last\)|(?:^|\n|\]:)\[E\d{4} ")
RAW_ERROR_RARE_WORDS = (b"CRITICAL", b": error: ", b": fatal: ", b"terminate called")
RAW_ERROR_RARE = re.compile(rb"\bCRITICAL\b|\b" + SLURM_REPORT.encode() + rb"|" + CXX_TERMINATE.encode())
RAW_WARNING = re.compile(rb"\bWARN(?:ING)?\b|\|CCL_WARN\||\bWarning\b|(?:^|\n|\]:)\[W\d{4} ")
#: Lines worth showing around a failure (broader than RAW_ERROR: timeouts, failed calls, signals).
RAW_TROUBLE = re.compile(
    rb"NCCL WARN|NCCL ERROR|Traceback \(most recent call last\)|\b[A-Z]\w*(?:Error|Exception)\b|"
    rb"\bnccl(?:System|Internal|Remote|UnhandledCuda|Invalid)\w*\b|\bterminate called\b|Segmentation fault|"
    rb"SIGABRT|SIGSEGV|SIGKILL|EnforceNotMet|Watchdog caught|[Tt]imed out|timeout|unhandled (?:system|cuda) error|"
    rb"CUDA error|\bERROR\b|\bFATAL\b|\bCRITICAL\b|\bfailed\b|: (?:error|fatal): "
)
#: A fast literal prefilter for RAW_TROUBLE (Python's re is slow on the full pattern over gigabytes).
RAW_TROUBLE_PREFILTER = re.compile(
    rb"Error|Exception|WARN|Traceback|terminate|Segmentation|SIGABRT|SIGSEGV|SIGKILL|EnforceNotMet|Watchdog|"
    rb"imed out|timeout|unhandled|ERROR|FATAL|CRITICAL|failed|nccl|: error: |: fatal: "
)


@dataclass(frozen=True, slots=True)
class RawOwner:
    """Who wrote a raw line, as far as its prefixes say: a rank (launcher prefix) and/or NCCL's host:pid."""

    rank: int | None = None  # [rankN]:, mpirun's [job,N]<stderr>:, or srun/torchrun's "N: "
    host: bytes | None = None
    pid: int | None = None
    local: int | None = None  # torchrun's [defaultN]: (a local rank)


def raw_owner(line: bytes) -> RawOwner:
    m = RAW_HEAD.match(line)
    if m is None:
        return RawOwner()
    r = m.group("rank") or m.group("mpirank") or m.group("mprank") or m.group("task")
    pid, local = m.group("pid"), m.group("local")
    return RawOwner(int(r) if r is not None else None, m.group("host"), int(pid) if pid is not None else None,
                    int(local) if local is not None else None)


def raw_level(line: bytes) -> str:
    """"error", "warn" or "info"."""
    if RAW_ERROR.search(line) or (any(w in line for w in RAW_ERROR_RARE_WORDS) and RAW_ERROR_RARE.search(line)):
        return "error"
    if RAW_WARNING.search(line):
        return "warn"
    return "info"

