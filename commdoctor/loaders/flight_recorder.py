"""Read torch flight-recorder dumps (gloo and NCCL; pickle and JSON) and find who is missing.

Promise: standard library only, and safe on hostile input: pickles are read
with an unpickler that refuses every global (a flight-recorder dump holds only
dicts, lists, tuples, strings and numbers), so a crafted file cannot run
code; a file that is not a dump becomes an error string, never an exception.

Where torch's own analyzer (torchfrtrace) goes wrong, and what this does:

- gloo dumps key ``pg_config`` by the group's *name* as gloo registered it
  (``''``), while entries name the group as ``('0', 'default_pg')``;
  torchfrtrace looks up ``('0', 0)`` and dies with ``KeyError``. Here a
  group's members come from the config entry with the same name, else the same
  description, else (for the default group) the largest config, else from the
  ranks whose dumps mention the group.
- torchfrtrace shows the stack of a rank that *waits*. Here the verdict names
  the *missing* rank (the one that never entered the collective the others
  wait in) with its own last entry and call site, and the waiting ranks
  separately.
- gloo entries always say state ``scheduled``; completion is ``retired``.
"""

from __future__ import annotations

import ast
import io
import json
import os
import pickle
import re
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

from commdoctor.parsing.stacks import Frame, call_site


#: What a key of a dict or a member of a set may be in a dump: hashing it costs time linear in its size.
_SCALARS = (str, bytes, int, float, bool, type(None))


def _refuse(what: str) -> Any:
    def load(self: Any) -> None:
        raise pickle.UnpicklingError(f"refusing {what}: not a flight-recorder dump")
    return load


def _scalar_keys(items: Iterable[Any]) -> None:
    for k in items:
        if not isinstance(k, _SCALARS):
            raise pickle.UnpicklingError(f"a {type(k).__name__} as a dict key or set member: not a flight-recorder dump")


#: Python's own unpickler (the C one offers no hook at the opcodes below).
_PyUnpickler: Any = pickle._Unpickler


class _SafeUnpickler(_PyUnpickler):
    """Python's own unpickler, with every opcode that reaches code refused and every hashed value checked.

    Globals are refused by name, and every opcode that could call one is refused (REDUCE, BUILD, NEWOBJ, OBJ,
    extension codes, persistent ids). A dict key or set member must be a plain scalar: a tuple of tuples
    sharing memo references is hashed once per path through it, so 150 bytes of pickle could hold the C
    unpickler for hours inside one ``hash`` that nothing can interrupt. The pure-Python unpickler is the
    one whose dict and set opcodes can be checked; it reads a 2,000-entry dump (260 kB) in about 40 ms.
    """

    dispatch: dict[int, Any] = dict(_PyUnpickler.dispatch)
    # GLOBAL, STACK_GLOBAL and INST reach ``find_class``, which refuses them by name.
    for _op, _what in ((pickle.OBJ, "an instance"), (pickle.REDUCE, "a call"), (pickle.BUILD, "an object's state"),
                       (pickle.NEWOBJ, "an instance"), (pickle.NEWOBJ_EX, "an instance"),
                       (pickle.EXT1, "an extension code"), (pickle.EXT2, "an extension code"),
                       (pickle.EXT4, "an extension code"), (pickle.PERSID, "a persistent id"),
                       (pickle.BINPERSID, "a persistent id"), (pickle.NEXT_BUFFER, "an out-of-band buffer")):
        dispatch[_op[0]] = _refuse(_what)
    del _op, _what

    def find_class(self, module: str, name: str) -> Any:  # noqa: D401 - pickle API
        raise pickle.UnpicklingError(f"refusing to load {module}.{name}: not a flight-recorder dump")

    def _load_setitem(self) -> None:
        _scalar_keys(self.stack[-2:-1])
        _PyUnpickler.load_setitem(self)

    # After a MARK the pure-Python unpickler's ``stack`` holds only the items since the mark.
    def _load_setitems(self) -> None:
        _scalar_keys(self.stack[0::2])
        _PyUnpickler.load_setitems(self)

    def _load_dict(self) -> None:
        _scalar_keys(self.stack[0::2])
        _PyUnpickler.load_dict(self)

    def _load_additems(self) -> None:
        _scalar_keys(self.stack)
        _PyUnpickler.load_additems(self)

    def _load_frozenset(self) -> None:
        _scalar_keys(self.stack)
        _PyUnpickler.load_frozenset(self)

    dispatch[pickle.SETITEM[0]] = _load_setitem
    dispatch[pickle.SETITEMS[0]] = _load_setitems
    dispatch[pickle.DICT[0]] = _load_dict
    dispatch[pickle.ADDITEMS[0]] = _load_additems
    dispatch[pickle.FROZENSET[0]] = _load_frozenset


def _pickle_trouble(data: bytes, e: BaseException) -> str:
    """Why a pickle could not be read, in words: a dump cut short says so rather than the unpickler's error."""
    if not data.rstrip(b"\n").endswith(pickle.STOP):
        return "cut short: it does not end as a pickle does (a truncated dump: the rank died while writing it, or the copy was cut)"
    return f"unreadable pickle: {str(e)[:200]}"


def safe_loads(data: bytes) -> Any:
    """Unpickle plain data only: no global is ever resolved, no opcode that calls anything is obeyed, and
    no value that is costly to hash is hashed (see ``_SafeUnpickler``). Building the objects costs time
    linear in the bytes; walking them is what memo references can make explode, so every walk of the
    result spends from a ``Budget``."""
    try:
        return _SafeUnpickler(io.BytesIO(data)).load()
    except pickle.UnpicklingError:
        raise
    except Exception as e:  # noqa: BLE001 - struct.error, UnicodeDecodeError, MemoryError...: all one answer
        raise pickle.UnpicklingError(f"{type(e).__name__}: {str(e)[:200]}") from None


class BudgetExceeded(ValueError):
    """A dump describes more elements than its size allows: a crafted file (memo references)."""


class Budget:
    """Elements one may visit while reading a dump. Memo references let a few hundred bytes of
    pickle describe 2^30 nodes, each visited anew by any walk; a depth cap bounds nothing there.
    A real dump has fewer elements than bytes, so the default allows a few per byte."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.spent = 0

    @classmethod
    def for_bytes(cls, n: int) -> Budget:
        # Every element costs at least one byte of pickle or JSON, each memo reference two: a file that
        # was not crafted cannot describe more elements than it has bytes. Real dumps (torch's pickles of
        # 4 kB to 260 kB, gloo's JSON) hold 0.05-0.25 elements per byte.
        return cls(max(20_000, n))

    def spend(self, n: int = 1) -> None:
        self.spent += n
        if self.spent > self.limit:
            raise BudgetExceeded(f"more than {self.limit} elements: not a flight-recorder dump torch wrote "
                                 f"(shared references describe more data than the file holds)")


def to_plain(obj: Any, budget: Budget, depth: int = 0) -> Any:
    """A JSON-safe copy of unpickled data (dicts, lists, strings, numbers), within ``budget``."""
    budget.spend()
    if depth > 64:
        return "[... nested too deep]"
    if isinstance(obj, (Mapping, list, tuple, set, frozenset)) and budget.spent + len(obj) > budget.limit:
        budget.spend(len(obj))  # a container larger than what is left: refused before it is walked
    if isinstance(obj, Mapping):
        return {_text(k, f"[a {type(k).__name__} key]"): to_plain(v, budget, depth + 1) for k, v in obj.items()}
    if isinstance(obj, (list, tuple, set, frozenset)):
        return [to_plain(v, budget, depth + 1) for v in obj]
    if isinstance(obj, (bytes, bytearray)):
        return bytes(obj[:256]).decode("utf-8", "replace")
    if isinstance(obj, float) and (obj != obj or obj in (float("inf"), float("-inf"))):
        return None
    if isinstance(obj, int) and not isinstance(obj, bool) and not -_INT_MAX <= obj < _INT_MAX:
        return f"[an integer of {obj.bit_length()} bits]"  # JSON writers refuse 4,300 digits and more
    if isinstance(obj, str):
        # Paid for by length too (an element is about 8 characters of JSON): one string shared by memo
        # references would otherwise be copied, written and redacted once per reference.
        budget.spend(len(obj) // 8)
        return _clean(obj)
    if obj is None or isinstance(obj, (int, float, bool)):
        return obj
    return _text(obj, f"[{type(obj).__name__}]")


#: The largest file read as a dump. torch's default ring of 2,000 entries pickles to about 260 kB; a
#: hostile pickle is decoded by the pure-Python unpickler at about 7 MB of dense opcodes per CPU second.
MAX_DUMP_BYTES = 64 << 20


def read_plain(path: str, max_bytes: int = MAX_DUMP_BYTES, max_elements: int | None = None) -> Any:
    """One dump (pickle or JSON) as plain JSON-safe data, for reports and bundles; the one reader
    of raw dumps besides ``read_dump``. Raises ValueError (or OSError) with a reason.

    At most ``max_elements`` elements are copied (and never more than the file has bytes): the newest
    entries first, so a dump that is too large keeps its last entries and says how many it left out."""
    with open(path, "rb") as f:
        data = f.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise ValueError(f"larger than {max_bytes} bytes: not a flight-recorder dump")
    budget = Budget.for_bytes(len(data))
    if max_elements is not None:
        budget.limit = min(budget.limit, max_elements)
    if data.lstrip()[:1] in (b"{", b"["):
        try:
            doc = json.loads(data.decode("utf-8", "replace"))
        except (ValueError, RecursionError) as e:
            raise ValueError(f"not valid JSON: {str(e)[:200]}") from None
    else:
        try:
            doc = safe_loads(data)
        except (pickle.UnpicklingError, EOFError, ValueError, TypeError, IndexError, KeyError,
                AttributeError, MemoryError, RecursionError) as e:
            raise ValueError(_pickle_trouble(data, e)) from None
    try:
        entries = doc.get("entries") if isinstance(doc, Mapping) else None
        if not isinstance(entries, (list, tuple)):
            return to_plain(doc, budget)
        out = {_text(k, f"[a {type(k).__name__} key]"): to_plain(v, budget, 1) for k, v in doc.items() if k != "entries"}
        kept: list[Any] = []
        for ent in reversed(entries):
            try:
                kept.append(to_plain(ent, budget, 2))
            except BudgetExceeded:
                if not kept:
                    raise  # not even the newest entry fits: no dump torch wrote
                break
        kept.reverse()
        out["entries"] = kept
        if len(kept) < len(entries):
            out["commdoctor_note"] = (f"kept the last {len(kept)} of {len(entries)} entries: the rest would pass "
                                      f"the budget of {budget.limit} elements")
        return out
    except RecursionError:
        raise ValueError("nested too deep to be a flight-recorder dump") from None


@dataclass(frozen=True)
class FREntry:
    record_id: int
    pg_id: int | None
    pg_name: str
    pg_desc: str
    seq: int  # collective_seq_id (p2p_seq_id for point-to-point)
    op: str  # "all_reduce", "barrier", ... (profiling name without the backend prefix)
    backend: str  # "gloo", "nccl", ...
    state: str
    retired: bool
    is_p2p: bool = False
    input_sizes: tuple[tuple[int, ...], ...] = ()
    input_dtypes: tuple[str, ...] = ()
    output_sizes: tuple[tuple[int, ...], ...] = ()
    frames: tuple[Frame, ...] = ()  # innermost first
    time_created_ns: int | None = None
    timeout_ms: int | None = None

    @property
    def completed(self) -> bool:
        return self.state == "completed" or self.retired

    @property
    def user_frame(self) -> Frame | None:
        """Where the user's code made this call (not a Python backend's own frames under it)."""
        return call_site(self.frames)

    def describe(self) -> str:
        site = self.user_frame
        shape = ""
        if self.input_sizes:
            shape = " " + ",".join("x".join(map(str, s)) or "scalar" for s in self.input_sizes)
            if self.input_dtypes:
                shape += " " + ",".join(self.input_dtypes)
        return (f"{self.op} #{self.seq}{shape}"
                + (f" called at {site.where} ({site.function})" if site else "")
                + (" [completed]" if self.completed else f" [{self.state}, not completed]"))

    def fingerprint(self) -> tuple[Any, ...]:
        return (self.op, self.input_sizes, self.input_dtypes)


@dataclass
class FRDump:
    rank: int | None
    path: str
    fmt: str  # "pickle" | "json"
    version: str = ""
    backend: str = ""
    pg_config: dict[str, dict[str, Any]] = field(default_factory=dict)
    pg_status: dict[str, dict[str, int]] = field(default_factory=dict)
    entries: list[FREntry] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


#: Ranks are below this (as the hooks' records and saved reports are bounded): a larger number is not a rank.
MAX_RANK = 2 ** 22
#: The longest ``pg_config`` member list read as text (2^22 ranks of up to 9 characters each).
_MAX_RANKS_TEXT = 9 * MAX_RANK

_RANK_IN_NAME = re.compile(r"(\d+)(?:\.(?:pkl|pickle|json|bin|dump))?$")


def rank_from_name(path: str) -> int | None:
    """torch names dumps PREFIX + rank (``nccl_trace_rank_3``); commdoctor ``fr-rank3.pkl``."""
    m = _RANK_IN_NAME.search(os.path.basename(path))
    if not m or len(m.group(1)) > 7:
        return None
    rank = int(m.group(1))
    return rank if rank < MAX_RANK else None


#: No field of a real dump (sequence numbers, sizes, nanosecond times) leaves a signed 64-bit integer.
_INT_MAX = 2 ** 63


def _clean(v: str) -> str:
    """The text without lone surrogates (JSON's ``"\\ud800"``, pickle's surrogatepass), which no file can hold."""
    try:
        v.encode("utf-8")
        return v
    except UnicodeEncodeError:
        return v.encode("utf-8", "replace").decode("utf-8")


def _text(v: Any, default: str = "", limit: int = 4096) -> str:
    """A text field of a dump. Only strings and numbers are turned into text: ``str`` of a tuple whose
    members share memo references would print 2^depth of them."""
    if isinstance(v, str):
        return _clean(v[:limit])
    if isinstance(v, bool) or isinstance(v, float):
        return str(v)
    if isinstance(v, int):
        return str(v) if -_INT_MAX <= v < _INT_MAX else default
    if isinstance(v, (bytes, bytearray)):
        return bytes(v[:limit]).decode("utf-8", "replace")
    return default


def _config(v: Mapping[Any, Any], budget: Budget) -> dict[str, Any]:
    """One ``pg_config`` entry with text values (a member list as text or as a list of integers)."""
    out: dict[str, Any] = {}
    budget.spend(len(v))
    for k, x in v.items():
        if isinstance(x, (list, tuple)):
            budget.spend(len(x))
            out[_text(k)] = [i for i in x if type(i) is int and -_INT_MAX <= i < _INT_MAX]
        else:
            text = _text(x, limit=_MAX_RANKS_TEXT)
            # Text is paid for by its length: one string shared by memo references among many groups would
            # otherwise be parsed and analysed once per group (50 groups of 262,144 ranks: 13 s from 2 MB).
            budget.spend(len(text))
            out[_text(k)] = text
    return out


def _int(v: Any, default: int | None = None) -> int | None:
    """An integer field, or ``default`` when the value is none: wrong-typed, NaN or infinite, a string
    of thousands of digits, or outside 64 bits (a real dump never is; Python would print it for ever)."""
    if isinstance(v, str) and len(v) > 24:
        return default
    try:
        n = int(v)
    except (TypeError, ValueError, OverflowError):
        return default
    return n if -_INT_MAX <= n < _INT_MAX else default


#: torch refuses tensors of more dimensions than this; a size list is one tensor's shape.
MAX_DIMS = 64


def _sizes(v: Any, budget: Budget) -> tuple[tuple[int, ...], ...]:
    if not isinstance(v, (list, tuple)):
        return ()
    budget.spend(len(v))
    out = []
    for s in v:
        if isinstance(s, (list, tuple)):
            if len(s) > MAX_DIMS:
                raise BudgetExceeded(f"a tensor of {len(s)} dimensions: not a flight-recorder dump torch wrote")
            budget.spend(len(s))
            out.append(tuple(x if type(x) is int and -_INT_MAX <= x < _INT_MAX else (_int(x, 0) or 0) for x in s))
    return tuple(out)


def _frames(v: Any, budget: Budget) -> tuple[Frame, ...]:
    if not isinstance(v, (list, tuple)):
        return ()
    budget.spend(len(v))
    out = []
    for f in v:
        if isinstance(f, Mapping):
            fn = _text(f.get("filename")) or "?"
            out.append(Frame(function=_text(f.get("name")) or "?", file=fn, line=_int(f.get("line")),
                             short_file=_short(fn)))
    return tuple(out)


def _dtypes(v: Any, budget: Budget) -> tuple[str, ...]:
    if not isinstance(v, (list, tuple)):
        return ()
    budget.spend(len(v))
    return tuple(_text(x, "?", 64) for x in v)


def _short(path: str) -> str:
    p = path.replace("\\", "/")
    for marker in ("/site-packages/", "/dist-packages/"):
        if marker in p:
            return p.split(marker, 1)[1]
    return os.path.basename(p)


def parse_dump(doc: Any, path: str, fmt: str, rank: int | None, budget: Budget | None = None) -> FRDump:
    """Typed entries from an unpickled (or JSON) dump; every element visited is spent from ``budget``."""
    if not isinstance(doc, Mapping) or "entries" not in doc and "pg_config" not in doc:
        raise ValueError("not a flight-recorder dump (no 'entries' or 'pg_config')")
    budget = budget or Budget(10_000_000)
    d = FRDump(rank=rank, path=path, fmt=fmt, version=_text(doc.get("version"), "", 64))
    cfg = doc.get("pg_config") or {}
    if isinstance(cfg, Mapping):
        for k, v in cfg.items():
            if isinstance(v, Mapping):
                d.pg_config[_text(k, "?")] = _config(v, budget)
    st = doc.get("pg_status") or {}
    if isinstance(st, Mapping):
        for k, v in st.items():
            if isinstance(v, Mapping):
                budget.spend(len(v))
                d.pg_status[_text(k, "?")] = {_text(kk, "?"): _int(vv, -1) for kk, vv in v.items()}  # type: ignore[misc]
    backends: set[str] = set()
    entries = doc.get("entries") or ()
    if not isinstance(entries, (list, tuple)):
        raise ValueError("'entries' is not a list")
    for e in entries:
        budget.spend(24)
        if not isinstance(e, Mapping):
            d.notes.append("an entry is not a mapping; skipped")
            continue
        pg = e.get("process_group") or ("", "")
        pg_name, pg_desc = (_text(pg[0], "?"), _text(pg[1], "?")) if isinstance(pg, (list, tuple)) and len(pg) >= 2 \
            else (_text(pg, "?"), "")
        prof = _text(e.get("profiling_name"), "?", 256) or "?"
        backend, _, op = prof.partition(":") if ":" in prof else ("", "", prof)
        if op.startswith("_"):  # nccl:_allgather_base and friends
            op = op.lstrip("_")
        backends.add(backend)
        is_p2p = bool(e.get("is_p2p"))
        seq = _int(e.get("p2p_seq_id") if is_p2p else e.get("collective_seq_id"), -1)
        d.entries.append(FREntry(
            record_id=_int(e.get("record_id"), -1) or 0, pg_id=_int(e.get("pg_id")), pg_name=pg_name, pg_desc=pg_desc,
            seq=seq if seq is not None else -1, op=op, backend=backend, state=_text(e.get("state"), "", 64),
            retired=bool(e.get("retired")), is_p2p=is_p2p, input_sizes=_sizes(e.get("input_sizes"), budget),
            input_dtypes=_dtypes(e.get("input_dtypes"), budget),
            output_sizes=_sizes(e.get("output_sizes"), budget), frames=_frames(e.get("frames"), budget),
            time_created_ns=_int(e.get("time_created_ns")), timeout_ms=_int(e.get("timeout_ms"))))
    d.backend = ",".join(sorted(b for b in backends if b)) or ""
    return d


def read_dump(path: str, rank: int | None = None, max_bytes: int = MAX_DUMP_BYTES) -> FRDump:
    """One dump file; raises ValueError (with a message a user can act on) when it is not one."""
    size = os.path.getsize(path)
    if size > max_bytes:
        raise ValueError(f"{size} bytes is larger than a flight-recorder dump can be ({max_bytes} allowed)")
    with open(path, "rb") as f:
        data = f.read()
    if rank is None:
        rank = rank_from_name(path)
    head = data.lstrip()[:1]
    if head == b"{":
        try:
            doc = json.loads(data.decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError) as e:
            raise ValueError(f"not valid JSON: {e}") from None
        return parse_dump(doc, path, "json", rank, Budget.for_bytes(len(data)))
    if data[:1] == b"\x80":
        try:
            doc = safe_loads(data)
        except (pickle.UnpicklingError, EOFError, ValueError, TypeError, IndexError, KeyError,
                AttributeError, MemoryError, RecursionError) as e:
            raise ValueError(_pickle_trouble(data, e)) from None
        return parse_dump(doc, path, "pickle", rank, Budget.for_bytes(len(data)))
    raise ValueError("neither a pickle nor a JSON flight-recorder dump")


def dump_files(paths: Iterable[str]) -> list[str]:
    out: list[str] = []
    for p in paths:
        if os.path.isdir(p):
            for n in sorted(os.listdir(p)):
                full = os.path.join(p, n)
                if os.path.isfile(full) and not n.startswith(".") and not n.endswith(".tmp"):
                    out.append(full)
        elif os.path.isfile(p):
            out.append(p)
    return out


def load_dumps(paths: Iterable[str]) -> tuple[list[FRDump], list[str]]:
    """Every readable dump under ``paths`` (files or folders), and one error line per unreadable file."""
    dumps: list[FRDump] = []
    errors: list[str] = []
    for f in dump_files(paths):
        try:
            d = read_dump(f)
        except (OSError, ValueError) as e:
            errors.append(f"{f}: {e}")
            continue
        if d.rank is None:
            errors.append(f"{f}: cannot tell which rank wrote it (name dumps PREFIX<rank>, as torch does)")
            continue
        dumps.append(d)
    # Several dumps of one rank: torch's own on timeout (TORCH_FR_DUMP_TEMP_FILE) beside the agent's,
    # or NCCL's recorder beside the generic one. They are merged; where two hold the same call, the
    # newer file's entry wins (the watchdog may have marked it completed since).
    by_rank: dict[int, list[FRDump]] = {}
    for d in dumps:
        by_rank.setdefault(d.rank, []).append(d)  # type: ignore[arg-type]
    return [merge_dumps(by_rank[r]) for r in sorted(by_rank)], errors


def merge_dumps(dumps: Sequence[FRDump]) -> FRDump:
    """One rank's dumps as one: groups, status and entries of all, the newest file first."""
    if len(dumps) == 1:
        return dumps[0]
    ordered = sorted(dumps, key=lambda d: _mtime(d.path), reverse=True)
    newest = ordered[0]
    out = FRDump(rank=newest.rank, path=", ".join(d.path for d in ordered), fmt=newest.fmt, version=newest.version)
    seen: set[tuple[str, bool, int]] = set()
    backends: set[str] = set()
    for d in ordered:
        for k, v in d.pg_config.items():
            out.pg_config.setdefault(k, v)
        for k, st in d.pg_status.items():
            out.pg_status.setdefault(k, st)
        for e in d.entries:
            key = (e.pg_name, e.is_p2p, e.seq)
            if key not in seen:
                seen.add(key)
                out.entries.append(e)
        backends.update(b for b in d.backend.split(",") if b)
        out.notes += d.notes
    out.entries.sort(key=lambda e: (e.pg_name, e.seq))
    out.backend = ",".join(sorted(backends))
    return out


def _mtime(path: str) -> float:
    try:
        return os.path.getmtime(path)
    except OSError:
        return 0.0


# -- analysis ---------------------------------------------------------------------------


@dataclass
class GroupState:
    """One process group across the dumps: who waits in what, who never arrived, where calls differ.

    NCCL entries stay ``scheduled`` until the watchdog marks them ``completed`` (``started`` only
    with TORCH_NCCL_ENABLE_TIMING), and a rank's Python has moved on long before: "waiting" here
    means "has collectives enqueued that never completed", whatever the rank's stack shows.
    """

    name: str
    desc: str
    ranks: list[int]  # global ranks in the group
    membership_from: str  # how the member list was found
    front_seq: int = -1  # the collective the waiting ranks wait in (else the newest any member entered)
    front_op: str | None = None
    waiting: dict[int, FREntry] = field(default_factory=dict)  # rank -> its oldest collective never completed
    pending: dict[int, list[FREntry]] = field(default_factory=dict)  # rank -> every such collective, oldest first
    missing: dict[int, FREntry | None] = field(default_factory=dict)  # never entered front: their last entry
    no_dump: list[int] = field(default_factory=list)
    last: dict[int, FREntry | None] = field(default_factory=dict)
    last_seq: dict[int, int] = field(default_factory=dict)  # newest sequence number each rank enqueued
    mismatch_seq: int | None = None
    mismatch: dict[int, FREntry] = field(default_factory=dict)  # rank -> its entry at mismatch_seq

    @property
    def stuck(self) -> bool:
        return bool(self.waiting)

    def to_dict(self) -> dict[str, Any]:
        def e(x: FREntry | None) -> Any:
            return x.describe() if x else None

        return {"name": self.name, "desc": self.desc, "ranks": self.ranks, "membership_from": self.membership_from,
                "front_seq": self.front_seq, "front_op": self.front_op,
                "waiting": {str(r): e(x) for r, x in self.waiting.items()},
                "missing": {str(r): e(x) for r, x in self.missing.items()}, "no_dump": self.no_dump,
                "last_seq": {str(r): s for r, s in self.last_seq.items()},
                "mismatch_seq": self.mismatch_seq, "mismatch": {str(r): e(x) for r, x in self.mismatch.items()}}


def _rank_list(text: str) -> list[int] | None:
    """torch's member list as it writes it (``"[0, 1, 2]"``), in time linear in its length; None otherwise.
    (``ast.literal_eval`` builds a syntax tree first: tens of bytes per rank, and hostile text of any shape.)"""
    t = text.strip()
    if len(t) > _MAX_RANKS_TEXT or len(t) < 2 or t[0] + t[-1] not in ("[]", "()"):
        return None
    body = t[1:-1].strip().rstrip(",")
    if not body:
        return []
    out = []
    for part in body.split(","):
        part = part.strip()
        if not part.isdigit() or len(part) > 7 or not part.isascii():
            return None
        out.append(int(part))
    return out


def _members(name: str, desc: str, dumps: Sequence[FRDump], seen_ranks: set[int]) -> tuple[list[int], str]:
    configs: list[dict[str, Any]] = []
    seen: set[tuple[str, str, str, str]] = set()  # 1,024 ranks hold the same config 1,024 times
    for d in dumps:
        for k, v in d.pg_config.items():
            sig = (k, str(v.get("name")), str(v.get("desc")), str(v.get("ranks")))
            if sig not in seen:
                seen.add(sig)
                configs.append({"key": k, **v})

    def ranks_of(c: Mapping[str, Any]) -> list[int] | None:
        r = c.get("ranks")
        val = _rank_list(r) if isinstance(r, str) else r
        if isinstance(val, (list, tuple)) and len(val) <= MAX_RANK and all(
                type(x) is int and 0 <= x < MAX_RANK for x in val):
            return sorted(val)
        return None

    for how, pred in (
        ("pg_config key", lambda c: c["key"] == name),
        ("pg_config name", lambda c: str(c.get("name", "")) == name and name != ""),
        ("pg_config desc", lambda c: desc and str(c.get("desc", "")) == desc),
    ):
        for c in configs:
            if pred(c):
                r = ranks_of(c)
                if r:
                    return r, how
    if desc == "default_pg" or name == "0":
        best: list[int] | None = None
        for c in configs:
            r = ranks_of(c)
            if r and (best is None or len(r) > len(best)):
                best = r
        if best:
            return best, "largest pg_config (the default group; gloo keys its config by another name)"
    return sorted(seen_ranks), "ranks whose dumps mention the group"


def analyze(dumps: Sequence[FRDump]) -> list[GroupState]:
    """Per process group: what the waiting ranks wait in, which ranks never entered it (their last
    sequence number is lower), and the first sequence number at which ranks recorded different calls.

    A rank waits when it has collectives that never completed: entries neither ``completed`` nor
    retired and newer than the group's ``last_completed_collective``. ``last_started_collective``
    is not used: NCCL leaves it at -1 unless timing is switched on."""
    per_group: dict[str, dict[int, list[FREntry]]] = {}
    descs: dict[str, str] = {}
    pg_ids: dict[str, int | None] = {}
    # Ranks read at scale share their class reader's entry list: split each list once.
    split: dict[int, dict[str, list[FREntry]]] = {}
    for d in dumps:
        if d.rank is None:
            continue
        groups = split.get(id(d.entries))
        if groups is None:
            groups = {}
            for e in d.entries:
                if e.is_p2p:
                    continue  # point-to-point sequence numbers are per pair; compared separately by nobody yet
                groups.setdefault(e.pg_name, []).append(e)
                descs.setdefault(e.pg_name, e.pg_desc)
                pg_ids.setdefault(e.pg_name, e.pg_id)
            for ents in groups.values():
                ents.sort(key=lambda e: e.seq)
            split[id(d.entries)] = groups
        for name, ents in groups.items():
            per_group.setdefault(name, {})[d.rank] = ents
    by_rank = {d.rank: d for d in dumps if d.rank is not None}
    out: list[GroupState] = []
    for name, ranks_entries in sorted(per_group.items()):
        members, how = _members(name, descs.get(name, ""), dumps, set(ranks_entries))
        gs = GroupState(name=name, desc=descs.get(name, ""), ranks=members, membership_from=how)
        for r in members:
            if r not in by_rank:
                gs.no_dump.append(r)
                continue
            ents = ranks_entries.get(r, [])
            last = ents[-1] if ents else None
            gs.last[r] = last
            enq = last.seq if last else -1
            done_upto = -1
            status = by_rank[r].pg_status.get(str(pg_ids.get(name)))
            if status:
                enq = max(enq, status.get("last_enqueued_collective", -1) or -1)
                done_upto = status.get("last_completed_collective", -1) or -1
            gs.last_seq[r] = enq
            # Collectives of a group complete in order: the pending ones are the tail of the list.
            pend: list[FREntry] = []
            for e in reversed(ents):
                if e.completed or e.seq <= done_upto:
                    break
                pend.append(e)
            pend.reverse()
            if pend:
                gs.pending[r] = pend
                gs.waiting[r] = pend[0]
        if gs.waiting:
            # What the waiting ranks wait in: the oldest collective one of them never saw complete.
            # A rank whose last sequence number is below it never entered it: it is behind.
            wait_seq = min(e.seq for e in gs.waiting.values())
            gs.front_seq = wait_seq
            gs.front_op = next(e.op for e in gs.waiting.values() if e.seq == wait_seq)
            for r in members:
                if r in gs.last_seq and r not in gs.waiting and gs.last_seq[r] < wait_seq:
                    gs.missing[r] = gs.last.get(r)
        else:
            gs.front_seq = max(gs.last_seq.values(), default=-1)
            gs.front_op = next((e.op for e in gs.last.values() if e is not None and e.seq == gs.front_seq), None)
        # Divergence: the first sequence number at which two ranks recorded different calls.
        # Ranks holding the very same entry list are compared once.
        sharing: dict[int, list[int]] = {}
        lists: dict[int, list[FREntry]] = {}
        for r, ents_list in ranks_entries.items():
            sharing.setdefault(id(ents_list), []).append(r)
            lists[id(ents_list)] = ents_list
        common: dict[int, dict[int, FREntry]] = {}
        for key, ents_list in lists.items():
            for e in ents_list:
                common.setdefault(e.seq, {})[key] = e
        for seq in sorted(common):
            at = common[seq]
            counted = sum(len(sharing[k]) for k in at)
            if counted >= 2 and len({e.fingerprint() for e in at.values()}) > 1:
                gs.mismatch_seq = seq
                gs.mismatch = dict(sorted((r, e) for k, e in at.items() for r in sharing[k]))
                break
        out.append(gs)
    return out


# -- reading at scale -----------------------------------------------------------------------
#
# A dump of torch's default ring (2,000 entries) takes ~30 ms to unpickle on this kind of machine:
# 1,024 ranks would take half a minute before any analysis. The verdict needs each group's last
# sequence numbers first (``pg_status``, written before the entries), then the entries only where
# ranks differ. So: read every dump's header with a small walker that stops at the entries, put the
# ranks in classes by their status, and read entries in full for one rank of each class (and for
# every rank of a small job). Ranks of a class are given their class reader's entries; the notes
# say so.

#: Up to this many dumps, every dump is read in full.
FULL_READ_RANKS = 16

_OP_SIZE = {b"q": 1, b"h": 1, b"r": 4, b"j": 4, b"K": 1, b"M": 2, b"J": 4, b"G": 8, b"\x95": 8, b"\x80": 1}


def read_header(data: bytes, max_ops: int = 50_000, where: list[int] | None = None) -> dict[str, Any] | None:
    """The top-level keys of a pickled dump that come before ``entries`` (version, pg_config,
    pg_status), without building the entries; None when the pickle is not laid out that way or uses
    an opcode this walker does not know (the caller then reads the whole dump). ``where``, when
    given, receives the offset just past the ``entries`` key and the memo's size there."""
    stack: list[Any] = []
    marks: list[int] = []
    memo: dict[int, Any] = {}
    i, n = 0, len(data)
    for _ in range(max_ops):
        if i >= n:
            return None
        op = data[i:i + 1]
        i += 1
        try:
            if op in (b"\x80", b"\x95"):
                i += _OP_SIZE[op]
            elif op == b"}":
                stack.append({})
            elif op == b"]":
                stack.append([])
            elif op == b")":
                stack.append(())
            elif op == b"(":
                marks.append(len(stack))
            elif op == b"\x94":
                memo[len(memo)] = stack[-1]
            elif op in (b"q", b"r"):
                size = _OP_SIZE[op]
                memo[int.from_bytes(data[i:i + size], "little")] = stack[-1]
                i += size
            elif op in (b"h", b"j"):
                size = _OP_SIZE[op]
                stack.append(memo[int.from_bytes(data[i:i + size], "little")])
                i += size
            elif op in (b"\x8c", b"X", b"\x8d"):
                size = {b"\x8c": 1, b"X": 4, b"\x8d": 8}[op]
                length = int.from_bytes(data[i:i + size], "little")
                i += size
                text = data[i:i + length].decode("utf-8", "replace")
                i += length
                if text == "entries" and len(marks) == 1 and stack and isinstance(stack[0], dict):
                    top = dict(stack[0])
                    pairs = stack[marks[0]:]
                    for k in range(0, len(pairs) - 1, 2):
                        if isinstance(pairs[k], str):
                            top[pairs[k]] = pairs[k + 1]
                    if where is not None:
                        where.extend((i, len(memo)))
                    return top
                stack.append(text)
            elif op == b"K":
                stack.append(data[i])
                i += 1
            elif op == b"M":
                stack.append(int.from_bytes(data[i:i + 2], "little"))
                i += 2
            elif op == b"J":
                stack.append(int.from_bytes(data[i:i + 4], "little", signed=True))
                i += 4
            elif op == b"\x8a":
                length = data[i]
                stack.append(int.from_bytes(data[i + 1:i + 1 + length], "little", signed=True))
                i += 1 + length
            elif op == b"N":
                stack.append(None)
            elif op in (b"\x88", b"\x89"):
                stack.append(op == b"\x88")
            elif op == b"s":
                v, k = stack.pop(), stack.pop()
                if not isinstance(k, _SCALARS):
                    return None  # hashing a nested tuple costs what it describes, not what it takes: see _SafeUnpickler
                stack[-1][k] = v
            elif op == b"u":
                m = marks.pop()
                items = stack[m:]
                del stack[m:]
                if not all(isinstance(k, _SCALARS) for k in items[0::2]):
                    return None
                for k in range(0, len(items) - 1, 2):
                    stack[-1][items[k]] = items[k + 1]
            elif op == b"a":
                v = stack.pop()
                stack[-1].append(v)
            elif op == b"e":
                m = marks.pop()
                items = stack[m:]
                del stack[m:]
                stack[-1].extend(items)
            elif op in (b"\x85", b"\x86", b"\x87"):
                k = {b"\x85": 1, b"\x86": 2, b"\x87": 3}[op]
                items = stack[-k:]
                del stack[-k:]
                stack.append(tuple(items))
            elif op == b"t":
                m = marks.pop()
                items = stack[m:]
                del stack[m:]
                stack.append(tuple(items))
            else:
                return None  # not in the header's vocabulary: read it all
        except (IndexError, KeyError, TypeError, AttributeError):
            return None
    return None


def _ref(i: int) -> bytes:
    """The pickle bytes that fetch memo entry ``i`` (BINGET or LONG_BINGET)."""
    return b"h" + bytes([i]) if i < 256 else b"j" + i.to_bytes(4, "little")


_INT_OPS = rb"(?:K[\s\S]|M[\s\S]{2}|J[\s\S]{4}" + b"".join(
    rb"|\x8a" + re.escape(bytes([k])) + rb"[\s\S]{" + str(k).encode() + rb"}" for k in range(1, 9)) + rb")"


#: How many of a dump's last entries the name digest covers.
TAIL = 64


def ops_digest(data: bytes, pos: int, memo_len: int, max_ops: int = 2_000) -> int | None:
    """A digest of the sequence of ``profiling_name`` values of a dump's entries, read from the pickle's
    bytes without unpickling them; None when the layout is not the one torch writes.

    Every entry after the first names its keys by memo reference, in a fixed order: ``op_id``, an int,
    ``profiling_name``, then the name (a memo reference to a name already seen, or the text the first
    time). The first entry is walked (from ``pos``, just past the ``entries`` key, where the memo holds
    ``memo_len`` objects) to learn which memo slots hold the two keys; one regex then finds every
    entry's name. Two dumps with the same status and the same digest made the same calls in the same
    order, as far as their names say; a different digest means their entries must be read. Only the
    last ``TAIL`` entries count: a rank whose calls differ only further back shares its class's read."""
    import pickletools

    count, slots, want = memo_len, {}, {"op_id", "profiling_name"}
    last: Any = None
    try:
        for k, (op, arg, _) in enumerate(pickletools.genops(data[pos:pos + 65536])):
            if k > max_ops:
                return None
            if op.name == "MEMOIZE":
                if last in want and last not in slots:
                    slots[last] = count
                    if len(slots) == 2:
                        break
                count += 1
            elif op.name in ("PUT", "BINPUT", "LONG_BINPUT", "STOP"):
                return None
            last = arg if op.name in ("SHORT_BINUNICODE", "BINUNICODE", "BINUNICODE8") else None
    except (ValueError, IndexError):
        return None
    if len(slots) != 2:
        return None
    pat = re.compile(re.escape(_ref(slots["op_id"])) + _INT_OPS + re.escape(_ref(slots["profiling_name"]))
                     + rb"(h[\s\S]|j[\s\S]{4}|\x8c[\s\S][^\x94]{0,255}\x94)")
    # The tail is what a hang is about (and all a rank's divergent entries hold): scan a window at the
    # end, doubled until it holds TAIL names or reaches the entries' start; a 2,000-entry dump then costs
    # a tenth of a full scan.
    size = 32768
    while True:
        start = max(pos, len(data) - size)
        names = pat.findall(data, start)
        if len(names) > TAIL or start == pos:
            break
        size *= 2
    # A window may begin inside an entry: the first match is left out unless the scan began at the entries.
    names = names[-TAIL:] if len(names) > TAIL else names
    return hash((len(names), b"\x00".join(names)))


def _status_of(header: Mapping[str, Any]) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    st = header.get("pg_status")
    if isinstance(st, Mapping):
        for k, v in st.items():
            if isinstance(v, Mapping):
                out[_text(k, "?")] = {_text(kk, "?"): (_int(vv, -1) if _int(vv, -1) is not None else -1)  # type: ignore[misc]
                               for kk, vv in v.items()}
    return out


def load_dumps_at_scale(paths: Iterable[str], full_read_ranks: int = FULL_READ_RANKS,
                        progress: Any = None) -> tuple[list[FRDump], list[str]]:
    """``load_dumps`` for many ranks: entries read in full for one rank per distinct status (see above)."""
    files = dump_files(paths)
    if len(files) <= full_read_ranks:
        return load_dumps(paths)
    errors: list[str] = []
    headers: list[tuple[str, int, dict[str, Any]]] = []  # the bytes are not kept: 4,096 dumps are a gigabyte
    rest: list[str] = []
    for k, f in enumerate(files):
        if progress is not None:
            progress("reading dump headers", k, len(files))
        rank = rank_from_name(f)
        if rank is None:
            errors.append(f"{f}: cannot tell which rank wrote it (name dumps PREFIX<rank>, as torch does)")
            continue
        try:
            with open(f, "rb") as fh:
                data = fh.read(MAX_DUMP_BYTES + 1)
        except OSError as e:
            errors.append(f"{f}: {e.strerror or e}")
            continue
        where: list[int] = []
        head = read_header(data, where=where) if data[:1] == b"\x80" else None
        if head is None or not _status_of(head):
            rest.append(f)
            continue
        # Ranks of one status class may still have called different collectives at the same sequence
        # number (every rank waits in #N, one in a broadcast): the digest of their calls' names tells.
        head["\x00ops"] = ops_digest(data, where[0], where[1])
        headers.append((f, rank, head))
        del data
    classes: dict[Any, list[tuple[str, int, dict[str, Any]]]] = {}
    for item in headers:
        st = _status_of(item[2])
        key = (tuple(sorted((g, s.get("last_enqueued_collective", -1), s.get("last_completed_collective", -1))
                            for g, s in st.items())), item[2].pop("\x00ops", None))
        classes.setdefault(key, []).append(item)
    dumps: list[FRDump] = []
    for k, members in enumerate(classes.values()):
        if progress is not None:
            progress("reading entries", k, len(classes))
        members.sort(key=lambda it: it[1])
        rep_path, rep_rank, _ = members[0]
        rep_data = b""
        try:
            with open(rep_path, "rb") as fh:
                rep_data = fh.read(MAX_DUMP_BYTES + 1)
            if len(rep_data) > MAX_DUMP_BYTES:
                raise ValueError(f"larger than {MAX_DUMP_BYTES} bytes: not a flight-recorder dump")
            rep = parse_dump(safe_loads(rep_data), rep_path, "pickle", rep_rank, Budget.for_bytes(len(rep_data)))
        except (OSError, pickle.UnpicklingError, EOFError, ValueError, TypeError, IndexError, KeyError,
                AttributeError, MemoryError, RecursionError) as e:
            why = str(e)[:200] if isinstance(e, (OSError, ValueError)) else _pickle_trouble(rep_data, e)
            errors.append(f"{rep_path}: unreadable: {why}")
            rest.extend(p for p, *_ in members[1:])
            continue
        dumps.append(rep)
        for path, rank, head in members[1:]:
            d = FRDump(rank=rank, path=path, fmt="pickle", version=_text(head.get("version"), "", 64),
                       backend=rep.backend, pg_status=_status_of(head), entries=rep.entries,
                       notes=[f"entries taken from rank {rep_rank}'s dump: same sequence status in every group"])
            cfg = head.get("pg_config")
            if isinstance(cfg, Mapping):
                own = {_text(kk, "?"): _config(v, Budget(1 << 24)) for kk, v in cfg.items() if isinstance(v, Mapping)}
                # Every rank holds the same member lists (4,096 ranks: 20 kB each): share the reader's.
                d.pg_config = rep.pg_config if own == rep.pg_config else own
            dumps.append(d)
    if rest:
        more, errs = load_dumps(rest)
        dumps += more
        errors += errs
    by_rank: dict[int, list[FRDump]] = {}
    for d in dumps:
        by_rank.setdefault(d.rank, []).append(d)  # type: ignore[arg-type]
    return [merge_dumps(by_rank[r]) for r in sorted(by_rank)], errors
