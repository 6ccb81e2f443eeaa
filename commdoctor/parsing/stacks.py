"""Stacks of a rank: parse py-spy's output into frames and say what the rank is doing.

Promise: pure functions of text (standard library only; no torch, no side
effects except reading a source line with ``linecache`` when the file is on
this host). ``parse_stack_text`` reads ``py-spy dump --json`` output and
``py-spy dump`` text output (with or without ``--native``); ``classify``
turns one process's stack into a ``Classification``: inside a collective
(which op, through which wrapper), in a barrier, in rendezvous, in data
loading, in a CUDA synchronisation, in checkpoint I/O, sleeping, or computing,
with the innermost user frame and the user frame that called into the library
("the line of code"). Unknown or garbled input yields an empty stack, never
an exception.
"""

from __future__ import annotations

import collections
import enum
import json
import linecache
import os
import re
import sys
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence


class RankState(str, enum.Enum):
    """What a rank is doing, from its stack and its process state."""

    COLLECTIVE = "collective"  # waiting inside a collective or point-to-point call
    BARRIER = "barrier"
    RENDEZVOUS = "rendezvous"  # init_process_group / new_group / store waits
    DATA_LOADING = "data_loading"
    CUDA_SYNC = "cuda_sync"
    CHECKPOINT_IO = "checkpoint_io"
    SLEEPING = "sleeping"
    COMPUTING = "computing"
    STOPPED = "stopped"  # SIGSTOP / traced: not scheduled at all
    EXITED = "exited"
    ZOMBIE = "zombie"
    UNKNOWN = "unknown"  # no stack (could not attach, no dump)

    @property
    def waiting(self) -> bool:
        """Blocked on other ranks (a communication call or a rendezvous)."""
        return self in (RankState.COLLECTIVE, RankState.BARRIER, RankState.RENDEZVOUS)

    @property
    def dead(self) -> bool:
        return self in (RankState.EXITED, RankState.ZOMBIE)

    @property
    def label(self) -> str:
        return _LABELS[self]


_LABELS = {
    RankState.COLLECTIVE: "in a collective",
    RankState.BARRIER: "in a barrier",
    RankState.RENDEZVOUS: "in rendezvous",
    RankState.DATA_LOADING: "in data loading",
    RankState.CUDA_SYNC: "in a CUDA synchronisation",
    RankState.CHECKPOINT_IO: "in checkpoint I/O",
    RankState.SLEEPING: "sleeping",
    RankState.COMPUTING: "computing",
    RankState.STOPPED: "stopped",
    RankState.EXITED: "exited",
    RankState.ZOMBIE: "a zombie (exited, not reaped)",
    RankState.UNKNOWN: "unknown",
}


@dataclass(frozen=True)
class Frame:
    """One frame, innermost first in a stack. ``line`` is None for native frames."""

    function: str
    file: str  # full path as py-spy saw it, or the short name when that is all there is
    line: int | None = None
    short_file: str = ""
    native: bool = False

    @property
    def where(self) -> str:
        name = self.short_file or os.path.basename(self.file)
        return f"{name}:{self.line}" if self.line is not None else name

    @property
    def path_where(self) -> str:
        """file:line with the full path (what an editor opens)."""
        return f"{self.file}:{self.line}" if self.line is not None else self.file

    def to_dict(self) -> dict[str, Any]:
        return {"function": self.function, "file": self.file, "line": self.line,
                "short_file": self.short_file, "native": self.native}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Frame:
        return cls(function=str(d.get("function", "?")), file=str(d.get("file", "?")),
                   line=_int_or_none(d.get("line")), short_file=str(d.get("short_file") or ""),
                   native=bool(d.get("native", False)))


@dataclass(frozen=True)
class ThreadStack:
    name: str
    frames: tuple[Frame, ...]  # innermost first
    thread_id: str | None = None
    os_thread_id: int | None = None
    active: bool | None = None
    owns_gil: bool | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "thread_id": self.thread_id, "os_thread_id": self.os_thread_id,
                "active": self.active, "owns_gil": self.owns_gil, "frames": [f.to_dict() for f in self.frames]}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ThreadStack:
        return cls(name=str(d.get("name", "")), thread_id=d.get("thread_id"),
                   os_thread_id=_int_or_none(d.get("os_thread_id")), active=d.get("active"),
                   owns_gil=d.get("owns_gil"),
                   frames=tuple(Frame.from_dict(f) for f in d.get("frames") or () if isinstance(f, dict)))


@dataclass(frozen=True)
class ProcessStack:
    pid: int | None
    threads: tuple[ThreadStack, ...]
    command: str | None = None

    @property
    def main(self) -> ThreadStack | None:
        for t in self.threads:
            if t.name == "MainThread":
                return t
        # py-spy names the main thread by its OS id == pid when it cannot read names.
        for t in self.threads:
            if self.pid is not None and t.os_thread_id == self.pid:
                return t
        return self.threads[0] if self.threads else None

    def to_dict(self) -> dict[str, Any]:
        return {"pid": self.pid, "command": self.command, "threads": [t.to_dict() for t in self.threads]}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ProcessStack:
        return cls(pid=_int_or_none(d.get("pid")), command=d.get("command"),
                   threads=tuple(ThreadStack.from_dict(t) for t in d.get("threads") or () if isinstance(t, dict)))


def _int_or_none(v: Any) -> int | None:
    try:
        return int(v) if v is not None and not isinstance(v, bool) else None
    except (TypeError, ValueError):
        return None


# -- parsing -------------------------------------------------------------------

@dataclass
class StackBudget:
    """A budget of work for reading stacks from files: frames per thread, threads per process, frames in all.

    Memory and time of a read follow the frames kept, so these bound both whatever a file
    claims. A real thread is at most about a thousand Python frames deep (the interpreter's
    recursion limit) plus its native ones; a thread past ``frames_per_thread`` keeps its
    innermost frames (what it is doing, and the user frame that called into the library)
    and its outermost ``OUTER_KEPT`` (the entry point). ``frames_left`` is spent across
    every file of one read. Each cut is one line in ``notes``.
    """

    frames_per_thread: int = 2000
    threads: int = 256
    frames_left: int = 200_000
    notes: list[str] = field(default_factory=list)
    cuts: int = 0  # every cut, noted or not (``notes`` keeps the first MAX_NOTES)

    #: Notes kept: a file of ten thousand deep threads is one summary, not ten thousand lines.
    MAX_NOTES = 50

    #: Outermost frames kept of a thread that is cut.
    OUTER_KEPT = 16

    def allowed(self) -> int:
        """Frames the next thread may keep."""
        return max(0, min(self.frames_per_thread, self.frames_left))

    def plan(self, n: int, where: str) -> tuple[int, int]:
        """(innermost, outermost) frames to keep of a thread of ``n``; spends them, and notes a cut."""
        allowed = self.allowed()
        if n <= allowed:
            self.frames_left -= n
            return n, 0
        outer = min(self.OUTER_KEPT, allowed // 2)
        self.frames_left -= allowed
        why = ("the read's budget of frames was spent" if allowed < self.frames_per_thread
               else f"over {self.frames_per_thread} frames")
        self.note(f"{where}: {n} frames, {allowed} kept (innermost {allowed - outer}, outermost {outer}): {why}")
        return allowed - outer, outer

    def note(self, text: str) -> None:
        self.cuts += 1
        if len(self.notes) < self.MAX_NOTES:
            self.notes.append(text)

    def keep(self, frames: Sequence[Any], where: str) -> list[Any]:
        """``frames`` (innermost first) within the budget; a cut is noted, naming ``where``."""
        inner, outer = self.plan(len(frames), where)
        return list(frames[:inner]) + (list(frames[len(frames) - outer:]) if outer else [])

    def keep_threads(self, threads: Sequence[Any], where: str) -> list[Any]:
        if len(threads) <= self.threads:
            return list(threads)
        self.note(f"{where}: {len(threads)} threads, the first {self.threads} kept")
        return list(threads[: self.threads])


#: py-spy's text is split into lines a block at a time: a file of short lines never becomes one list of them all.
_BLOCK = 1 << 20


def _lines(text: str) -> Iterable[str]:
    """``text.splitlines()``, a block at a time (blocks end after a newline, so no line or CRLF is split)."""
    start, n = 0, len(text)
    while start < n:
        end = text.find("\n", min(n, start + _BLOCK))
        end = n if end < 0 else end + 1
        yield from text[start:end].splitlines()
        start = end


_PROC_RE = re.compile(r"^Process (\d+): (.*)$")
_THREAD_RE = re.compile(r'^Thread (0x[0-9a-fA-F]+|\d+) \(([^)]*)\)(?:: "(.*)")?\s*$')


def _frame_parts(raw: str) -> tuple[str, str, str | None] | None:
    r"""(function, where, line digits or None) of one frame line of ``py-spy dump``'s text, or None.

    ``"    func (file.py:12)"``, native ``"    func (libfoo.so)"`` or ``"    0x7f.. (libc.so.6)"``: indented,
    then the function, a space, and a last parenthesised part holding no parentheses, ``:digits`` at its end
    being the line number. Written with string methods rather than the regex this replaces
    (``^\s+(.*?) \(([^()]*?)(?::(\d+))?\)\s*$``, whose leading ``\s+`` and lazy ``.*?`` split a run of spaces
    every possible way: quadratic on one long line of them), and taking exactly the lines that regex took, with
    the same parts: the function empty when the indentation itself ends in " (" and is at least two long.
    """
    if not raw[:1].isspace():
        return None
    body = raw.rstrip()  # the trailing \s*: rstrip() and the regex's \s mean the same (str.isspace) characters
    if not body.endswith(")"):
        return None
    close = len(body) - 1
    open_ = body.rfind("(", 0, close)
    if open_ < 1 or ")" in body[open_ + 1:close] or body[open_ - 1] != " ":
        return None
    indent = len(raw) - len(raw.lstrip())
    if open_ - 1 >= indent:
        func = body[indent:open_ - 1]
        if "\n" in func:  # the regex's "." stops at a newline (lines come from splitlines: defensive)
            return None
    elif indent >= 2:  # "  (x.py:1)": the indentation's last space is the separator, the function is empty
        func = ""
    else:
        return None
    inner = body[open_ + 1:close]
    colon = inner.rfind(":")
    digits = inner[colon + 1:] if colon >= 0 else ""
    if digits and digits.isdecimal():  # \d is a Unicode decimal digit, as isdecimal() is
        return func, inner[:colon], digits
    return func, inner, None


def parse_pyspy_json(text: str, pid: int | None = None) -> ProcessStack:
    """``py-spy dump --json`` output: a list of threads, each with frames."""
    try:
        doc = json.loads(text)
    except ValueError:
        return ProcessStack(pid=pid, threads=())
    return parse_pyspy_doc(doc, pid)


def parse_pyspy_doc(doc: Any, pid: int | None = None) -> ProcessStack:
    """``py-spy dump --json`` output already parsed (a list of threads), or our own saved form of one process."""
    if isinstance(doc, dict):  # our own saved form
        if "threads" in doc:
            return ProcessStack.from_dict(doc)
        doc = [doc]
    if not isinstance(doc, list):
        return ProcessStack(pid=pid, threads=())
    threads: list[ThreadStack] = []
    for t in doc:
        if not isinstance(t, dict):
            continue
        if pid is None:
            pid = _int_or_none(t.get("pid"))
        frames = []
        for f in t.get("frames") or ():
            if not isinstance(f, dict):
                continue
            fname = str(f.get("filename") or "?")
            line = _int_or_none(f.get("line"))
            native = not fname.endswith(".py") and line in (None, 0) and not fname.startswith("<")
            frames.append(Frame(function=str(f.get("name") or "?"), file=fname,
                                line=None if native else line,
                                short_file=str(f.get("short_filename") or os.path.basename(fname)), native=native))
        name = t.get("thread_name")
        threads.append(ThreadStack(name=str(name) if name else str(t.get("thread_id", "")),
                                   frames=tuple(frames), thread_id=str(t.get("thread_id")) if t.get("thread_id") is not None else None,
                                   os_thread_id=_int_or_none(t.get("os_thread_id")), active=t.get("active"),
                                   owns_gil=t.get("owns_gil")))
    return ProcessStack(pid=pid, threads=tuple(threads))


def parse_pyspy_text(text: str, pid: int | None = None, budget: StackBudget | None = None,
                     label: str = "stack") -> ProcessStack:
    """``py-spy dump`` text output (also with ``--native``); with ``budget``, threads and frames past it are
    counted, not kept (a cut is noted in the budget, naming ``label`` and the thread)."""
    command = None
    threads: list[ThreadStack] = []
    cur_name: str | None = None
    cur_tid: str | None = None
    cur_state = ""
    frames: list[Frame] = []
    # With a budget, a thread keeps at most ``cap`` frames from its head and a ring of its last few; the rest
    # are only counted, so a file of millions of frames costs the frames kept (StackBudget.plan says which).
    cap = budget.allowed() if budget is not None else -1
    seen = 0
    ring: collections.deque[Frame] = collections.deque(maxlen=StackBudget.OUTER_KEPT)
    dropped_threads = 0

    def flush() -> None:
        nonlocal dropped_threads
        if cur_name is None:
            return
        kept: list[Frame] = frames
        if budget is not None:
            if len(threads) >= budget.threads:
                dropped_threads += 1
                return
            inner, outer = budget.plan(seen, f"{label}: thread {cur_name}")
            # frames + ring ends where the thread ends (the ring holds the last frames past the head).
            kept = frames[:inner] + ((frames + list(ring))[-outer:] if outer else [])
        osid = _int_or_none(cur_tid) if cur_tid and not cur_tid.startswith("0x") else None
        threads.append(ThreadStack(name=cur_name, frames=tuple(kept), thread_id=cur_tid, os_thread_id=osid,
                                   active="active" in cur_state, owns_gil="gil" in cur_state))

    for raw in _lines(text):
        m = _PROC_RE.match(raw)
        if m:
            # int() refuses 4,300 digits and more; a pid past 32 bits is no pid.
            n = _int_or_none(m.group(1)) if len(m.group(1)) <= 10 else None
            pid = pid if pid is not None else (n if n is not None and n < 1 << 31 else None)
            command = m.group(2)
            continue
        m = _THREAD_RE.match(raw)
        if m:
            flush()
            cur_tid, cur_state = m.group(1), m.group(2)
            cur_name = m.group(3) if m.group(3) is not None else cur_tid
            frames, seen = [], 0
            ring.clear()
            cap = budget.allowed() if budget is not None else -1
            continue
        if cur_name is None:
            continue
        parts = _frame_parts(raw)
        if parts:
            func, where, line = parts
            # A line number past 32 bits is nonsense (and int() refuses 4,300 digits and more): the frame stays,
            # its line unknown, as the saved forms' validation (docschema) treats one.
            lineno = int(line) if line and len(line) <= 10 else None
            frame = Frame(function=func, file=where, line=lineno if lineno is not None and lineno < 1 << 31 else None,
                          short_file=where, native=line is None)
            seen += 1
            if cap < 0 or len(frames) < cap:
                frames.append(frame)
            elif budget is not None:
                ring.append(frame)
    flush()
    if dropped_threads and budget is not None:
        budget.note(f"{label}: {len(threads) + dropped_threads} threads, the first {budget.threads} kept")
    return ProcessStack(pid=pid, threads=tuple(threads), command=command)


def parse_stack_text(text: str, pid: int | None = None) -> ProcessStack:
    """Either py-spy format, told apart by the first non-blank character."""
    head = text.lstrip()[:1]
    if head in ("[", "{"):
        return parse_pyspy_json(text, pid)
    return parse_pyspy_text(text, pid)


# -- telling user code from library code -----------------------------------------

_STDLIB = frozenset(getattr(sys, "stdlib_module_names", ())) | {"threading", "queue", "selectors", "socket"}
_THIRD_PARTY = frozenset({
    "torch", "torchvision", "torchaudio", "numpy", "transformers", "accelerate", "deepspeed", "lightning",
    "pytorch_lightning", "datasets", "apex", "triton", "safetensors", "tqdm", "wandb", "huggingface_hub",
    "commdoctor", "sitecustomize", "pybind11", "functorch", "_pytest", "pytest",
})
_LIB_PATH_RE = re.compile(r"[\\/](site|dist)-packages[\\/]|[\\/]lib[\\/]python\d+(\.\d+)?[\\/]|^<frozen |^<string>$")


_PKG_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # this installed commdoctor package
_pkg_modules: frozenset[str] | None = None


def _package_modules() -> frozenset[str]:
    """Every .py file of the installed package, relative to it ('hooks/pg.py', 'cli.py')."""
    global _pkg_modules
    if _pkg_modules is None:
        found: set[str] = set()
        for root, dirs, files in os.walk(_PKG_DIR):
            dirs[:] = [d for d in dirs if not d.startswith((".", "__pycache__"))]
            rel = os.path.relpath(root, _PKG_DIR).replace(os.sep, "/")
            found.update((n if rel == "." else f"{rel}/{n}") for n in files if n.endswith(".py"))
        _pkg_modules = frozenset(found)
    return _pkg_modules


def _is_commdoctor(path: str) -> bool:
    """A frame of commdoctor itself: under the installed package's own folder, or (stacks from another
    host) a path ending in ``commdoctor/`` + one of its module files. A job that merely lives in a
    folder called commdoctor (any clone of this repository) is the user's code."""
    p = path.replace("\\", "/")
    pkg = _PKG_DIR.replace("\\", "/").rstrip("/") + "/"
    if p.startswith(pkg):
        return True
    if "/commdoctor/" not in p:
        return False
    mods = _package_modules()
    # Every place the segment starts ('/opt/commdoctor/commdoctor/cli.py' has two, overlapping).
    i = p.find("/commdoctor/")
    while i >= 0:
        if p[i + len("/commdoctor/"):] in mods:
            return True
        i = p.find("/commdoctor/", i + 1)
    return False


def is_library(frame: Frame) -> bool:
    """True for frames of Python itself, installed packages, torch and commdoctor."""
    if frame.native:
        return True
    f = frame.file
    if _LIB_PATH_RE.search(f):
        return True
    if _is_commdoctor(f):
        return True
    if os.path.isabs(f):
        return False
    # A short name only (text dumps): decide by its first component.
    first = re.split(r"[\\/]", frame.short_file or f)[0]
    mod = first[:-3] if first.endswith(".py") else first
    return mod in _STDLIB or mod in _THIRD_PARTY or first.startswith("<")


def _read_source_line(frame: Frame | None) -> str | None:
    return source_line(frame)


def source_line(frame: Frame | None) -> str | None:
    """The source text of a Python frame, when its file is readable on this host."""
    if frame is None or frame.native or frame.line is None or not os.path.isabs(frame.file):
        return None
    try:
        text = linecache.getline(frame.file, frame.line)
    except (OSError, UnicodeDecodeError, MemoryError):
        return None
    return text.strip() or None


# -- classification -----------------------------------------------------------------

#: torch.distributed's Python entry points and the op a user would call them by.
C10D_OPS: dict[str, str] = {
    n: n for n in (
        "all_reduce", "all_reduce_coalesced", "all_gather", "all_gather_into_tensor", "all_gather_coalesced",
        "all_gather_object", "reduce_scatter", "reduce_scatter_tensor", "broadcast", "broadcast_object_list",
        "reduce", "gather", "gather_object", "scatter", "scatter_object_list", "all_to_all", "all_to_all_single",
        "send", "recv", "isend", "irecv", "batch_isend_irecv", "send_object_list", "recv_object_list",
    )
}
C10D_OPS.update({"_all_gather_base": "all_gather_into_tensor", "_reduce_scatter_base": "reduce_scatter_tensor"})
BARRIER_FUNCS = {"barrier": "barrier", "monitored_barrier": "monitored_barrier",
                 "_store_based_barrier": "store-based barrier"}
RDZV_FUNCS = {"init_process_group", "new_group", "new_subgroups", "new_subgroups_by_enumeration",
              "_new_group_with_tag", "_new_process_group_helper", "init_device_mesh", "rendezvous",
              "_create_c10d_store", "_env_rendezvous_handler", "_tcp_rendezvous_handler"}

#: Framework internals that issue collectives from C++ or through helpers: (path part, function) -> (op, via).
INTERNAL_OPS: tuple[tuple[str, str, str, str], ...] = (
    ("torch/nn/parallel/distributed.py", "_sync_buffers", "broadcast", "DistributedDataParallel (buffer sync)"),
    ("torch/nn/parallel/distributed.py", "_sync_module_buffers", "broadcast", "DistributedDataParallel (buffer sync)"),
    ("torch/nn/parallel/distributed.py", "_default_broadcast_coalesced", "broadcast", "DistributedDataParallel"),
    ("torch/nn/parallel/distributed.py", "_distributed_broadcast_coalesced", "broadcast", "DistributedDataParallel"),
    ("torch/nn/parallel/distributed.py", "_check_global_requires_backward_grad_sync", "all_reduce",
     "DistributedDataParallel (join)"),
    ("torch/nn/parallel/distributed.py", "_match_all_reduce_for_bwd_pass", "all_reduce", "DistributedDataParallel (join)"),
    ("torch/nn/parallel/distributed.py", "_match_unused_params_allreduce", "all_reduce",
     "DistributedDataParallel (join)"),
    ("torch/distributed/utils.py", "_verify_param_shape_across_processes", "all_gather",
     "DistributedDataParallel.__init__ (parameter shape check)"),
    ("torch/distributed/utils.py", "_sync_module_states", "broadcast", "DistributedDataParallel.__init__ (module state sync)"),
    ("torch/distributed/utils.py", "_sync_params_and_buffers", "broadcast", "DistributedDataParallel.__init__"),
    ("torch/distributed/fsdp/_runtime_utils.py", "_unshard", "all_gather", "FSDP (unshard)"),
    ("torch/distributed/fsdp/_flat_param.py", "_all_gather_flat_param", "all_gather", "FSDP (unshard)"),
    ("torch/distributed/fsdp/_runtime_utils.py", "_reduce_grad", "reduce_scatter", "FSDP (gradient reduce)"),
    ("torch/distributed/fsdp/_runtime_utils.py", "_reduce_grad_no_shard", "all_reduce", "FSDP (gradient reduce)"),
    ("torch/distributed/fsdp/_fully_shard/_fsdp_collectives.py", "foreach_all_gather", "all_gather", "FSDP2 (unshard)"),
    ("torch/distributed/fsdp/_fully_shard/_fsdp_collectives.py", "foreach_all_gather_copy_out", "all_gather",
     "FSDP2 (unshard)"),
    ("torch/distributed/fsdp/_fully_shard/_fsdp_collectives.py", "foreach_reduce", "reduce_scatter",
     "FSDP2 (gradient reduce)"),
    ("torch/distributed/fsdp/_fully_shard/_fsdp_param_group.py", "wait_for_unshard", "all_gather", "FSDP2 (unshard)"),
    ("torch/distributed/_composable/fsdp/", "foreach_all_gather", "all_gather", "FSDP2 (unshard)"),
    ("torch/distributed/_composable/fsdp/", "foreach_reduce", "reduce_scatter", "FSDP2 (gradient reduce)"),
)
FUNCTIONAL_FILE = "torch/distributed/_functional_collectives.py"
VIA_BY_PATH: tuple[tuple[str, str], ...] = (
    ("torch/nn/parallel/distributed.py", "DistributedDataParallel"),
    ("torch/distributed/fsdp/_fully_shard/", "FSDP2"),
    ("torch/distributed/_composable/fsdp/", "FSDP2"),
    ("torch/distributed/fsdp/", "FSDP"),
    ("torch/distributed/checkpoint/", "torch.distributed.checkpoint"),
    ("torch/distributed/tensor/", "DTensor"),
    ("torch/distributed/pipelining/", "pipelining"),
)

_NATIVE_COLLECTIVE = re.compile(r"c10d::.*(wait|Work|allreduce|allgather|broadcast|barrier|reduce_scatter|alltoall)|"
                                r"gloo::|ncclKernel|ProcessGroupNCCL|ProcessGroupGloo", re.I)
_NATIVE_CUDA_SYNC = re.compile(r"cuda(Stream|Device|Event)Synchronize|cu(Stream|Ctx|Event)Synchronize|cudaMemcpy\b")
_NATIVE_SLEEP = re.compile(r"^(clock_nanosleep|nanosleep|__nanosleep|usleep|sleep)$")
_SRC_SLEEP = re.compile(r"\b(time\.)?sleep\(")
_SRC_WAIT = re.compile(r"\.wait\(\s*\)|\.wait\(\s*timeout")
_SRC_CUDA_SYNC = re.compile(r"cuda\.synchronize\(|\.synchronize\(\)")
# Reading a tensor's value on the host waits for every kernel queued before it, NCCL's included:
# a rank that stays on such a line waits on the GPU (FIELD-NOTES, "NCCL on a real GPU").
_SRC_HOST_READ = re.compile(r"\.(item|cpu|tolist|numpy)\(\s*\)")
_SRC_IO = re.compile(r"\b(torch\.save|torch\.load|save_file|load_file|np\.save|pickle\.dump|json\.dump|"
                     r"shutil\.copy\w*|os\.fsync|\.write\(|\.flush\(|\.save_pretrained\(|dcp\.save|dcp\.load)")
_IO_FILES = ("torch/serialization.py", "safetensors/", "torch/distributed/checkpoint/", "shutil.py", "pickle.py",
             "zipfile.py", "gzip.py", "tarfile.py")
_CUDA_SYNC_FUNCS = {("torch/cuda/__init__.py", "synchronize"), ("torch/cuda/streams.py", "synchronize"),
                    ("torch/cuda/streams.py", "wait_event"), ("torch/cuda/streams.py", "wait_stream"),
                    ("torch/cuda/graphs.py", "synchronize")}
_DATA_FILES = ("torch/utils/data/",)
_IDLE_WAIT_FUNCS = {"wait", "join", "_wait_for_tstate_lock", "acquire", "get", "result"}


@dataclass(frozen=True)
class Classification:
    """What one rank's stack says it is doing."""

    state: RankState
    op: str | None = None  # "all_reduce", "broadcast", "DataLoader", "torch.save", ...
    via: str | None = None  # "DistributedDataParallel", "FSDP2 (unshard)", ...
    frame: Frame | None = None  # the library frame that decided it
    user_frame: Frame | None = None  # innermost frame of the user's own code
    call_site: Frame | None = None  # the user frame that called into ``frame``
    source: str | None = None  # source text of ``call_site`` when readable here
    user_source: str | None = None  # source text of ``user_frame`` when it differs from the call site
    thread: str | None = None
    reason: str = ""  # one line: why this state
    frames: tuple[Frame, ...] = field(default=(), compare=False)  # the thread's stack, innermost first

    @property
    def where(self) -> str | None:
        site = self.call_site or self.user_frame
        return site.where if site else None

    @property
    def signature(self) -> tuple[str, str | None, str | None]:
        """What makes two ranks "in the same place": state, op and user line."""
        return (self.state.value, self.op, self.where)

    def describe(self) -> str:
        """One line a user reads: 'in all_reduce at train.py:28 (main)'."""
        what = self.state.label
        if self.state in (RankState.COLLECTIVE, RankState.BARRIER, RankState.RENDEZVOUS) and self.op:
            what = f"in {self.op}"
        elif self.op and self.state not in (RankState.EXITED, RankState.ZOMBIE, RankState.STOPPED):
            what = f"{self.state.label} ({self.op})"
        if self.via:
            what += f" via {self.via}"
        site = self.call_site or self.user_frame
        if site is not None:
            what += f" at {site.where} ({site.function})"
        if self.user_frame is not None and self.call_site is not None and self.user_frame != self.call_site:
            what += f", inside {self.user_frame.where} ({self.user_frame.function})"
        return what

    def to_dict(self) -> dict[str, Any]:
        return {
            "state": self.state.value, "op": self.op, "via": self.via,
            "frame": self.frame.to_dict() if self.frame else None,
            "user_frame": self.user_frame.to_dict() if self.user_frame else None,
            "call_site": self.call_site.to_dict() if self.call_site else None,
            "source": self.source, "user_source": self.user_source, "thread": self.thread, "reason": self.reason, "where": self.where,
            "describe": self.describe(),
        }


def _path(f: Frame) -> str:
    return f.file.replace("\\", "/") if os.path.isabs(f.file) else (f.short_file or f.file).replace("\\", "/")


def _func(f: Frame) -> str:
    # py-spy qualifies methods: "DistributedDataParallel._sync_buffers", "x.<locals>.wrapper".
    return f.function.rsplit(".", 1)[-1]


def _in(path: str, part: str) -> bool:
    return part in path or path.startswith(part)


def _user_frames(frames: Sequence[Frame]) -> list[int]:
    return [i for i, f in enumerate(frames) if not is_library(f)]


def _caller_user(frames: Sequence[Frame], idx: int) -> Frame | None:
    """The first user frame outward (toward main) of frames[idx], or frames[idx] itself if user code."""
    for f in frames[idx:]:
        if not is_library(f):
            return f
    return None


#: torch.distributed's Python entry points: a frame inward of these runs under the call (a backend written in
#: Python, registered with torch, is called back from inside it), so it is not where the call was made.
_C10D_ENTRY_FILES = ("torch/distributed/distributed_c10d.py", "torch/distributed/c10d_logger.py")


def call_site(frames: Sequence[Frame]) -> Frame | None:
    """The user's frame that made a recorded torch.distributed call (frames innermost first).

    The first user frame outward of the outermost torch.distributed entry point, or the innermost user
    frame when the stack holds no such entry point (a native backend's recorder stack).
    """
    entry = [i for i, f in enumerate(frames) if any(_in(_path(f), part) for part in _C10D_ENTRY_FILES)]
    return _caller_user(frames, entry[-1]) if entry else _caller_user(frames, 0)


def _via(frames: Sequence[Frame], start: int) -> str | None:
    for f in frames[start:]:
        p = _path(f)
        for part, name in VIA_BY_PATH:
            if _in(p, part):
                return name
    return None


#: Source text saved with a snapshot, by (file, line): what ``source_line`` would have read on
#: the job's host, for reading the snapshot where the job's files are not.
Sources = Mapping[tuple[str, int], str]


def classify_thread(frames: Sequence[Frame], thread: str | None = None, read_source: bool = True,
                    sources: Sources | None = None) -> Classification:
    """Classify one thread's stack (innermost first)."""
    frames = tuple(frames)

    def source_line(frame: Frame | None) -> str | None:
        if sources and frame is not None and frame.line is not None:
            saved = sources.get((frame.file, frame.line))
            if saved:
                return saved
        return _read_source_line(frame)

    users = _user_frames(frames)
    user_frame = frames[users[0]] if users else None
    if not frames:
        return Classification(RankState.UNKNOWN, thread=thread, reason="empty stack", frames=frames)

    def done(state: RankState, idx: int | None, op: str | None = None, via: str | None = None,
             reason: str = "") -> Classification:
        frame = frames[idx] if idx is not None else None
        site = _caller_user(frames, idx) if idx is not None else user_frame
        src = source_line(site) if read_source else None
        usrc = source_line(user_frame) if read_source and user_frame is not None and user_frame != site else None
        return Classification(state, op=op, via=via, frame=frame, user_frame=user_frame, call_site=site,
                              source=src, user_source=usrc, thread=thread, reason=reason, frames=frames)

    # 1. torch.distributed Python entry points. The outermost one names the op the
    #    user called (all_gather_object calls all_gather inside).
    c10d_idx = [i for i, f in enumerate(frames) if _in(_path(f), "torch/distributed/distributed_c10d.py")]
    op_idx: int | None = None
    kind: RankState | None = None
    for i in c10d_idx:
        fn = _func(frames[i])
        if fn in C10D_OPS:
            op_idx, kind = i, RankState.COLLECTIVE
        elif fn in BARRIER_FUNCS:
            op_idx, kind = i, RankState.BARRIER
        elif fn in RDZV_FUNCS:
            op_idx, kind = i, RankState.RENDEZVOUS
    # Framework internals that hide the collective in C++ (DDP, FSDP).
    internal: tuple[int, str, str] | None = None
    for i, f in enumerate(frames):
        p, fn = _path(f), _func(f)
        for part, name, i_op, i_via in INTERNAL_OPS:
            if fn == name and _in(p, part):
                internal = (i, i_op, i_via)
                break
        if internal:
            break
    if op_idx is not None and kind is not None:
        fn = _func(frames[op_idx])
        if kind is RankState.COLLECTIVE:
            c_op = C10D_OPS[fn]
            via = internal[2] if internal and internal[0] > op_idx else _via(frames, op_idx + 1)
            return done(kind, op_idx, op=c_op, via=via, reason=f"torch.distributed.{fn} is on the stack")
        if kind is RankState.BARRIER:
            return done(kind, op_idx, op=BARRIER_FUNCS[fn], via=_via(frames, op_idx + 1),
                        reason=f"torch.distributed.{fn} is on the stack")
        return done(kind, op_idx, op=fn, via=_via(frames, op_idx + 1),
                    reason=f"torch.distributed.{fn} is on the stack (rendezvous or group creation)")
    if internal is not None:
        i, op, via = internal
        return done(RankState.COLLECTIVE, i, op=op, via=via, reason=f"{frames[i].function} issues {op} from C++")
    for i, f in enumerate(frames):
        p = _path(f)
        if _in(p, FUNCTIONAL_FILE):
            # Outermost functional-collective frame names the op.
            j = max(k for k, g in enumerate(frames) if _in(_path(g), FUNCTIONAL_FILE))
            return done(RankState.COLLECTIVE, j, op=_func(frames[j]), via="functional collectives",
                        reason="torch.distributed._functional_collectives is on the stack")
        if _in(p, "torch/distributed/elastic/utils/store.py") or _in(p, "torch/distributed/elastic/rendezvous/"):
            state = RankState.BARRIER if _func(f) in ("barrier", "synchronize") else RankState.RENDEZVOUS
            return done(state, i, op=f"elastic {_func(f)}", reason="torch elastic store wait")
        if _in(p, "torch/distributed/rendezvous.py"):
            return done(RankState.RENDEZVOUS, i, op=_func(f), reason="torch.distributed rendezvous")

    # 2. Native frames (py-spy --native) name what Python frames cannot.
    for i, f in enumerate(frames):
        if not f.native:
            continue
        if _NATIVE_COLLECTIVE.search(f.function):
            return done(RankState.COLLECTIVE, i, op=_native_op(frames), via=_via(frames, i),
                        reason=f"native frame {f.function[:80]}")
        if _NATIVE_CUDA_SYNC.search(f.function):
            return done(RankState.CUDA_SYNC, i, op=f.function.split("(")[0][:60], reason="native CUDA synchronisation")

    # 3. Data loading: anything under torch.utils.data (the outermost such frame).
    data_idx = [i for i, f in enumerate(frames) if any(_in(_path(f), p) for p in _DATA_FILES)]
    if data_idx:
        j = max(data_idx)
        detail = "DataLoader"
        inner = _user_frames(frames[:j])
        sleeping = False
        if inner:
            src = source_line(frames[inner[0]]) if read_source else None
            sleeping = bool(src and _SRC_SLEEP.search(src))
        elif any(_in(_path(f), "queue.py") or _in(_path(f), "multiprocessing/") for f in frames[:j]):
            detail = "DataLoader (waiting for worker processes)"
        reason = "torch.utils.data is on the stack"
        if inner:
            reason += f"; the dataset's code at {frames[inner[0]].where} is running" + (" time.sleep" if sleeping else "")
        return done(RankState.DATA_LOADING, j, op=detail, reason=reason)

    # 4. CUDA synchronisation through torch.cuda.
    for i, f in enumerate(frames):
        if (_path(f).split("site-packages/")[-1], _func(f)) in _CUDA_SYNC_FUNCS or \
                any(_in(_path(f), part) and _func(f) == fn for part, fn in _CUDA_SYNC_FUNCS):
            return done(RankState.CUDA_SYNC, i, op=f"torch.cuda {_func(f)}", reason="torch.cuda synchronisation")

    # 5. Checkpoint and file I/O.
    for i, f in enumerate(frames):
        p = _path(f)
        if any(_in(p, part) for part in _IO_FILES):
            j = max(k for k, g in enumerate(frames) if any(_in(_path(g), part) for part in _IO_FILES))
            op = "torch.save/load" if "torch/serialization.py" in _path(frames[j]) else _func(frames[j])
            return done(RankState.CHECKPOINT_IO, j, op=op, reason=f"{frames[j].where} ({frames[j].function}) is on the stack")

    # 6. The innermost frame is the user's (or a stdlib wait): read its line.
    top = frames[0]
    if any(f.native and _NATIVE_SLEEP.match(f.function.split("(")[0].strip()) for f in frames[:3]):
        return done(RankState.SLEEPING, users[0] if users else 0, op="sleep", reason="native sleep")
    if users and users[0] == 0 and read_source:
        src = source_line(top)
        if src:
            if _SRC_SLEEP.search(src):
                return done(RankState.SLEEPING, 0, op="time.sleep", reason=f"the line is: {src}")
            if _SRC_WAIT.search(src):
                return done(RankState.COLLECTIVE, 0, op="wait on an async work", reason=f"the line is: {src}")
            if _SRC_CUDA_SYNC.search(src):
                return done(RankState.CUDA_SYNC, 0, op="synchronize", reason=f"the line is: {src}")
            m = _SRC_HOST_READ.search(src)
            if m:
                return done(RankState.CUDA_SYNC, 0, op=f".{m.group(1)}() (waits for the GPU)",
                            reason=f"the line reads a tensor on the host: {src}")
            if _SRC_IO.search(src):
                return done(RankState.CHECKPOINT_IO, 0, op="file write", reason=f"the line is: {src}")
    if _path(top).endswith("threading.py") and _func(top) in _IDLE_WAIT_FUNCS:
        return done(RankState.COMPUTING, 0, op="waiting on a thread or lock", reason="threading wait is innermost")
    return done(RankState.COMPUTING, users[0] if users else 0,
                reason="no communication, data-loading, synchronisation or I/O frame on the stack")


def _native_op(frames: Sequence[Frame]) -> str:
    for f in frames:
        low = f.function.lower()
        for key, op in (("allreduce", "all_reduce"), ("allgather", "all_gather"), ("broadcast", "broadcast"),
                        ("reduce_scatter", "reduce_scatter"), ("alltoall", "all_to_all"), ("barrier", "barrier")):
            if key in low:
                return op
    return "collective (native wait)"


_THREAD_PRIORITY = {RankState.COLLECTIVE: 0, RankState.BARRIER: 1, RankState.RENDEZVOUS: 2, RankState.CUDA_SYNC: 3,
                    RankState.DATA_LOADING: 4, RankState.CHECKPOINT_IO: 5}
#: Threads that are ours, torch's or Python's plumbing, never the training loop.
_BACKGROUND_THREAD = re.compile(r"commdoctor|pt_elastic|pt_autograd|QueueFeederThread|_pin_memory|Thread-\d+ \(_pin_memory_loop\)")


def classify(stack: ProcessStack, read_source: bool = True, sources: Sources | None = None) -> Classification:
    """Classify a process from its main thread; when the main thread only waits on a
    thread, the most telling of the other threads decides (training loops run in
    threads in some frameworks)."""
    main = stack.main
    if main is None:
        return Classification(RankState.UNKNOWN, reason="no threads in the stack")
    c = classify_thread(main.frames, main.name, read_source, sources)
    if c.state is RankState.COMPUTING and c.op == "waiting on a thread or lock":
        best: Classification | None = None
        for t in stack.threads:
            if t is main or _BACKGROUND_THREAD.search(t.name or ""):
                continue
            tc = classify_thread(t.frames, t.name, read_source, sources)
            if tc.state in _THREAD_PRIORITY and (best is None or _THREAD_PRIORITY[tc.state] < _THREAD_PRIORITY[best.state]):
                best = tc
        if best is not None:
            return best
    return c


def group_by_signature(items: Iterable[tuple[int, Classification]]) -> list[tuple[tuple[str, str | None, str | None], list[int]]]:
    """Ranks grouped by (state, op, user line), largest group first, then by lowest rank."""
    groups: dict[tuple[str, str | None, str | None], list[int]] = {}
    for rank, c in items:
        groups.setdefault(c.signature, []).append(rank)
    out = [(k, sorted(v)) for k, v in groups.items()]
    out.sort(key=lambda kv: (-len(kv[1]), kv[1][0]))
    return out
