"""Hypothesis generators of hostile input, one per reader, and the readers they feed.

Shared by tests/test_fuzz_readers.py (a small fixed budget in CI) and
bench/fuzz_readers.py (10,000+ inputs per reader). Each generator starts from a
real shape (a log with NCCL lines, py-spy's --json, the hooks' JSON lines, a
``--json`` report) and damages it the ways files from other machines are
damaged: wrong types, NaN and Infinity, deep nesting, huge numbers, lone
surrogates, binary junk, truncation, compression and archives. Each ``feed_*``
runs the real reader and what consumes its output, in this process, and
returns a short description of what came out; it raises only on a bug.
"""

from __future__ import annotations

import bz2
import contextlib
import copy
import gzip
import io
import json
import lzma
import os
import pickle
import tempfile
import zipfile
from typing import Any

from hypothesis import strategies as st

# -- values that break readers -------------------------------------------------------------------

WEIRD = st.sampled_from([None, True, False, 0, -1, 7, 2 ** 63, 2 ** 80, -2 ** 70, 1.5, 1e308, -0.0, "", "x", "\ud800",
                         "A" * 5000, "9" * 5000, [], {}, [1, "a"], [[None]], {"a": [None]}, [[2 ** 80]], "NaN"])
LEAF = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False, allow_infinity=False),
                 st.text(max_size=40), WEIRD)
JSONISH = st.recursive(LEAF, lambda kids: st.one_of(st.lists(kids, max_size=4),
                                                    st.dictionaries(st.text(max_size=8), kids, max_size=4)),
                       max_leaves=12)


def _damage_json_text(draw: st.DrawFn, text: str) -> str:
    """Text-level damage JSON cannot express: NaN/Infinity, deep nesting, truncation, junk."""
    op = draw(st.integers(0, 6))
    if op == 0:
        return text.replace("1", "Infinity", 1) if "1" in text else text
    if op == 1:
        depth = draw(st.sampled_from([70, 900, 5000]))
        return text.replace("[]", "[" * depth + "]" * depth, 1) if "[]" in text else "[" * depth + "]" * depth
    if op == 2:
        return text[: draw(st.integers(0, max(0, len(text))))]
    if op == 3:
        pos = draw(st.integers(0, len(text)))
        return text[:pos] + draw(st.text(max_size=20)) + text[pos:]
    return text


def _mutate(draw: st.DrawFn, obj: Any, n: int) -> Any:
    """Replace ``n`` values anywhere in ``obj`` (a JSON document) by wrong-typed ones."""
    doc = json.loads(json.dumps(obj))
    for _ in range(n):
        paths: list[tuple[Any, Any]] = []
        stack: list[Any] = [doc]
        while stack:
            o = stack.pop()
            items = list(o.items()) if isinstance(o, dict) else list(enumerate(o)) if isinstance(o, list) else []
            for k, v in items:
                paths.append((o, k))
                stack.append(v)
        if not paths:
            break
        parent, key = draw(st.sampled_from(paths))
        # A copy: WEIRD's lists and dicts are shared objects, and a later mutation that lands inside one would
        # grow it for every input after (the long stacks run's memory blow-up was this, not the reader).
        parent[key] = copy.deepcopy(draw(JSONISH))
    return doc


# -- logs --------------------------------------------------------------------------------------------

LOG_LINES = [
    "node01:1019:3019 [3] NCCL INFO Bootstrap : Using eth0:10.1.0.1<0>",
    "NCCL version 2.21.5+cuda12.4",
    "node01:1019:3019 [3] include/alloc.h:114 NCCL WARN Cuda failure 'out of memory'",
    "[rank1]:[E415 21:17:08.9 ProcessGroupNCCL.cpp:552] [Rank 1] Watchdog caught collective operation timeout: "
    "WorkNCCL(SeqNum=3, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600001 milliseconds",
    "max locked memory       (kbytes, -l) 64",
    "RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:534] Connection closed by peer [10.0.3.1]:29500",
    "torch.distributed.elastic.multiprocessing.api: [ERROR] failed (exitcode: -9) local_rank: 0 (pid: 12)",
]


@st.composite
def log_files(draw: st.DrawFn) -> dict[str, bytes]:
    """One or two log files: real lines and junk, maybe compressed, truncated, zipped, UTF-16 or all NUL."""
    out: dict[str, bytes] = {}
    for i in range(draw(st.integers(1, 2))):
        lines = draw(st.lists(st.one_of(st.sampled_from(LOG_LINES), st.text(max_size=120),
                                        st.sampled_from(["9" * 5000, "x" * 70000, "\x1b[31mred\x1b[0m", "\r"])),
                              max_size=20))
        data = "\n".join(lines).encode("utf-8", "surrogatepass")
        if draw(st.booleans()):
            data += draw(st.binary(max_size=200))
        how = draw(st.sampled_from(["plain", "plain", "gz", "bz2", "xz", "zip", "utf16", "nul"]))
        name = f"rank{i}.log"
        if how == "gz":
            data, name = gzip.compress(data), name + ".gz"
        elif how == "bz2":
            data, name = bz2.compress(data), name + ".bz2"
        elif how == "xz":
            data, name = lzma.compress(data), name + ".xz"
        elif how == "zip":
            buf = io.BytesIO()
            with zipfile.ZipFile(buf, "w") as z:
                z.writestr("rank.log", data)
            data = buf.getvalue()
        elif how == "utf16":
            data = data.decode("utf-8", "replace").encode("utf-16")
        elif how == "nul":
            data = b"\x00" * draw(st.integers(0, 4096)) + data
        if how != "plain" and draw(st.booleans()):
            data = data[: draw(st.integers(0, len(data)))]  # the node died while writing
        out[name] = data
    return out


# -- saved stacks -------------------------------------------------------------------------------------

def _pyspy_doc(rank: int) -> list[dict[str, Any]]:
    return [{"pid": 100 + rank, "thread_id": 1, "thread_name": "MainThread", "os_thread_id": 100 + rank,
             "owns_gil": False, "active": True, "frames": [
                 {"name": "wait", "filename": "/usr/lib/python3/dist-packages/torch/distributed/distributed_c10d.py",
                  "module": None, "short_filename": "distributed_c10d.py", "line": 2501, "locals": None},
                 {"name": "train_step", "filename": "/job/train.py", "module": None, "short_filename": "train.py",
                  "line": 88, "locals": None}]}]


def _snapshot_doc() -> dict[str, Any]:
    return {"ranks": [{"rank": r, "pid": 100 + r, "host": "node01", "proc_state": "sleeping", "stack": {
        "pid": 100 + r, "command": "python train.py", "threads": [{"name": "MainThread", "thread_id": "1",
                                                                   "os_thread_id": 100 + r, "active": True, "owns_gil": False,
                                                                   "frames": [{"function": "all_reduce", "file": "/job/train.py",
                                                                               "line": 88, "short_file": "train.py", "native": False}]}]},
        "cpu_s": 1.5, "command": "python train.py", "local_rank": r} for r in range(2)],
        "source": "saved", "world_size": 2, "host": "node01", "taken_at": 1.0, "elapsed_s": 0.1, "notes": [], "job": None}


@st.composite
def stack_files(draw: st.DrawFn) -> dict[str, bytes]:
    out: dict[str, bytes] = {}
    if draw(st.booleans()):
        doc = _mutate(draw, _snapshot_doc(), draw(st.integers(0, 4)))
        out["snapshot.json"] = _damage_json_text(draw, json.dumps(doc)).encode("utf-8", "surrogatepass")
    else:
        for r in range(draw(st.integers(1, 3))):
            doc = _mutate(draw, _pyspy_doc(r), draw(st.integers(0, 3)))
            out[f"rank{r}.json"] = _damage_json_text(draw, json.dumps(doc)).encode("utf-8", "surrogatepass")
        if draw(st.booleans()):
            out["states.json"] = json.dumps(_mutate(draw, {"0": {"pid": 100, "proc_state": "sleeping"}},
                                                    draw(st.integers(0, 2)))).encode("utf-8", "surrogatepass")
    return out


# -- hook records -------------------------------------------------------------------------------------

def _records(rank: int, calls: int) -> list[dict[str, Any]]:
    s = "commdoctor.hooks/1"
    out: list[dict[str, Any]] = [{"schema": s, "kind": "header", "rank": rank, "world_size": 2, "host": "h", "pid": 1,
                                  "started": 1.0, "torch": "2.13.0"}]
    for seq in range(calls):
        call = {"schema": s, "seq": seq, "rank": rank, "group": "0", "op": "all_reduce", "reduce_op": "SUM",
                "dtype": "float32", "shapes": [[4]], "numel": 4, "peer": None, "root": None, "device": "cpu",
                "async_op": False, "site": "train.py:9", "time": 2.0 + seq}
        out.append(dict(call, kind="enter"))
        out.append(dict(call, kind="exit", time=2.5 + seq))
    out.append({"schema": s, "kind": "alive", "rank": rank, "time": 9.0})
    out.append({"schema": s, "kind": "mismatch", "rank": rank, "group": "0", "seq": 1, "message": "m",
                "detail": {"kind": "op", "calls": [{"rank": 0, "op": "all_reduce"}, {"rank": 1, "op": "broadcast"}]}})
    out.append({"schema": s, "kind": "warning", "rank": rank, "message": "side channel lost", "time": 3.0})
    return out


@st.composite
def record_files(draw: st.DrawFn) -> dict[str, bytes]:
    out: dict[str, bytes] = {}
    for r in range(draw(st.integers(1, 3))):
        lines = []
        for rec in _records(r, draw(st.integers(0, 4))):
            if draw(st.integers(0, 4)) == 0:
                rec = dict(rec)
                rec[draw(st.sampled_from(sorted(rec) + ["detail", "shapes", "seq", "time"]))] = draw(JSONISH)
            text = json.dumps(rec)
            if draw(st.integers(0, 9)) == 0:
                text = _damage_json_text(draw, text)
            lines.append(text)
        data = "\n".join(lines).encode("utf-8", "surrogatepass")
        if draw(st.integers(0, 5)) == 0:
            data += draw(st.binary(max_size=100))
        out[f"hooks-rank{r}.jsonl"] = data
    return out


# -- saved reports -------------------------------------------------------------------------------------

def base_report() -> dict[str, Any]:
    """A real ``commdoctor logs --json`` report (made once per process, from a real log)."""
    global _BASE
    if _BASE is None:
        from commdoctor.render.jsonout import dumps
        from commdoctor.commands.view import events_of  # noqa: F401 - view's loader is what the fuzz feeds

        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, "rank0.log")
            with open(p, "w") as f:
                f.write("\n".join(LOG_LINES) + "\n")
            report = _run_logs([p])
        _BASE = json.loads(dumps(report))
    return _BASE


_BASE: dict[str, Any] | None = None


@st.composite
def report_docs(draw: st.DrawFn) -> bytes:
    doc = _mutate(draw, base_report(), draw(st.integers(0, 5)))
    return _damage_json_text(draw, json.dumps(doc)).encode("utf-8", "surrogatepass")


# -- feeding the real readers ------------------------------------------------------------------------

def _write(d: str, files: dict[str, bytes]) -> None:
    for name, data in files.items():
        with open(os.path.join(d, name), "wb") as f:
            f.write(data)


def _run_logs(paths: list[str]) -> Any:
    from commdoctor.checks import BUILTIN_CHECKS
    from commdoctor.loaders.logs import load_logs
    from commdoctor.pipeline.run import Context, Facts, Options, RunFinished, plan, run_checks

    opts = Options(mode="logs", inputs=tuple(paths))
    # The stdlib prefilter: the same builder and checks, without compiling a hyperscan database per input.
    ctx = Context(options=opts, facts=Facts({"log_model": lambda c: load_logs(c.options.inputs, engine="re")}))
    return next(e.report for e in run_checks(plan([c() for c in BUILTIN_CHECKS], opts), ctx) if isinstance(e, RunFinished))


def _crashed(report: Any) -> list[str]:
    from commdoctor.core.model import Status

    return [f"{r.check}: {r.error.strip().splitlines()[-1] if r.error else r.reason}"
            for r in report.results if r.status in (Status.CRASHED, Status.TIMED_OUT)]


class ReaderBug(AssertionError):
    """A reader or a check let hostile input through as an exception."""


def feed_logs(files: dict[str, bytes]) -> str:
    with tempfile.TemporaryDirectory() as d:
        _write(d, files)
        report = _run_logs([os.path.join(d, n) for n in sorted(files)])
    bad = _crashed(report)
    if bad:
        raise ReaderBug("; ".join(bad))
    return report.outcome()


def _cli(argv: list[str]) -> tuple[int, str, str]:
    from commdoctor import cli

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = cli.main(argv)
    if rc == 3 or "Traceback" in err.getvalue():
        raise ReaderBug(err.getvalue()[-2000:])
    return rc, out.getvalue(), err.getvalue()


def _checked(rc: int, out: str, err: str) -> str:
    if rc == 2 and not out:
        return "refused"
    doc = json.loads(out)
    bad = [f"{r['check']}: {(r.get('error') or r.get('reason') or '').strip().splitlines()[-1:]}"
           for r in doc["results"] if r["status"] in ("crashed", "timed_out")]
    if bad:
        raise ReaderBug("; ".join(bad))
    return str(doc["outcome"])


def feed_stacks(files: dict[str, bytes]) -> str:
    with tempfile.TemporaryDirectory() as d:
        _write(d, files)
        return _checked(*_cli(["hang", "--stacks", d, "--json"]))


def feed_records(files: dict[str, bytes]) -> str:
    with tempfile.TemporaryDirectory() as d:
        _write(d, files)
        return _checked(*_cli(["records", d, "--json"]))


def feed_report(data: bytes) -> str:
    with tempfile.TemporaryDirectory() as d:
        p = os.path.join(d, "saved.json")
        with open(p, "wb") as f:
            f.write(data)
        rc, _, _ = _cli(["view", p, "--no-tui"])
    return f"exit {rc}"


# -- flight-recorder dumps ---------------------------------------------------------------------------
#
# Real dumps: NCCL's pickles from an H100 run (fixtures/hang/nccl/straggler3, torch 2.10, NCCL 2.28.9) and
# torch's JSON dumps of a gloo job (fixtures/hang/straggler/fr/json). Each input is a folder of 1-3 such
# dumps, damaged the ways a file from another machine or an attacker can be: wrong-typed values anywhere;
# pickles whose memo references describe 2^20-2^40 elements in a few hundred bytes (also as a dict key or
# set member, where the C unpickler would hash every one); globals (GLOBAL, STACK_GLOBAL, INST, OBJ, REDUCE,
# NEWOBJ, BUILD, persistent ids, extension codes) that would create a canary folder if anything resolved
# them; size lists of up to 10^6 elements shared by every entry; one member list named by up to 400 groups;
# integers of 5,000 digits, NaN, sets and bytes; flipped, inserted and cut bytes; JSON with Infinity/NaN,
# deep nesting (up to 100,000) and truncation.

FIX = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fixtures", "hang")
_FR_BASE: dict[str, list[Any]] = {}


def fr_bases() -> dict[str, list[Any]]:
    """The real dumps, decoded once: {"pickle": [doc, ...], "json": [doc, ...]}."""
    if not _FR_BASE:
        from commdoctor.loaders.flight_recorder import safe_loads

        pk = os.path.join(FIX, "nccl", "straggler3", "fr")
        js = os.path.join(FIX, "straggler", "fr", "json")
        _FR_BASE["pickle"] = [safe_loads(open(os.path.join(pk, n), "rb").read()) for n in sorted(os.listdir(pk))]
        _FR_BASE["json"] = [json.load(open(os.path.join(js, n))) for n in sorted(os.listdir(js))]
    return _FR_BASE


def canary() -> str:
    """The folder a resolved pickle global would create (one per process: generation and feeding share it)."""
    return os.path.join(tempfile.gettempdir(), f"commdoctor-fr-canary-{os.getpid()}")


class _Mkdir:
    """Pickles as a call of os.mkdir(canary()): STACK_GLOBAL/GLOBAL + REDUCE, the shape of every pickle exploit."""

    def __reduce__(self) -> Any:
        return (os.mkdir, (canary(),))


def _global_payloads() -> list[bytes]:
    """Hand-written pickles that name ``posix.mkdir`` by every opcode that can reach a global."""
    c = canary().encode()
    n = len(c).to_bytes(1, "little") if len(c) < 256 else b""
    out = [
        b"cposix\nmkdir\n(V" + c + b"\ntR.",  # GLOBAL + REDUCE (protocol 0)
        b"(V" + c + b"\niposix\nmkdir\n.",  # INST
        b"(cposix\nmkdir\nV" + c + b"\no.",  # OBJ
        b"\x80\x02cposix\nmkdir\nV" + c + b"\n\x85\x81.",  # NEWOBJ on a global
        b"\x80\x02}(U\x07entriesq\x00]q\x01}q\x02bcposix\nmkdir\nq\x03.",  # BUILD into a dict, then a global
        b"\x80\x02(U\x01xP0\nt.",  # PERSID
        b"\x80\x02K\x01Q.",  # BINPERSID
        b"\x80\x02\x82\x01.",  # EXT1 (copyreg's extension registry)
        b"\x80\x02\x83\x01\x00.",  # EXT2
        b"\x80\x02\x84\x01\x00\x00\x00.",  # EXT4
    ]
    if n:
        out.append(b"\x80\x04\x8c\x05posix\x8c\x05mkdir\x93\x8c" + n + c + b"\x85R.")  # STACK_GLOBAL + REDUCE
    out.append(pickle.dumps({"version": "2.10", "entries": [_Mkdir()]}, protocol=4))
    return out


def _tuple_bomb(depth: int) -> bytes:
    """Pickle opcodes that leave one tuple of 2^depth leaves on the stack: each level is two memo references."""
    out = b"K\x01\x85q\x00"
    for i in range(depth):
        out += b"h" + bytes([i]) + b"h" + bytes([i]) + b"\x86q" + bytes([i + 1])
    return out


def _hash_bombs(depth: int) -> list[bytes]:
    """A shared tuple where it gets hashed: a dict key (SETITEMS, SETITEM, DICT) or a set member (ADDITEMS,
    FROZENSET). Hashing a tuple is not cached, so 300 bytes cost 2^depth steps inside one C call."""
    t = _tuple_bomb(depth)
    return [b"\x80\x02}(" + t + b"K\x01u.", b"\x80\x02}" + t + b"K\x01s.", b"\x80\x02(" + t + b"K\x01d.",
            b"\x80\x04\x8f(" + t + b"\x90.", b"\x80\x04(" + t + b"\x91.",
            # the same inside a dump: entries: [{KEY: 1}]
            b"\x80\x02}(X\x07\x00\x00\x00entries](}(" + t + b"K\x01ueu."]


def _bomb(kind: str, depth: int) -> Any:
    """2^depth leaves in ``depth`` memo references: every walk that does not count visits each."""
    x: Any = [1] if kind != "str" else "9" * 64
    for _ in range(depth):
        x = [x, x] if kind == "list" else (x, x) if kind == "tuple" else {"a": x, "b": x} if kind == "dict" else [x, x]
    return x


def _places(doc: Any) -> list[tuple[Any, Any]]:
    """Every (container, key) in a decoded dump, for putting a value anywhere."""
    out: list[tuple[Any, Any]] = []
    stack = [doc]
    while stack and len(out) < 5000:
        o = stack.pop()
        if isinstance(o, dict):
            for k, v in o.items():
                out.append((o, k))
                stack.append(v)
        elif isinstance(o, list):
            for k, v in enumerate(o):
                out.append((o, k))
                stack.append(v)
    return out


def _thaw(obj: Any) -> Any:
    """A mutable copy (tuples as lists) of a decoded dump; the base documents are never changed."""
    if isinstance(obj, dict):
        return {k: _thaw(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_thaw(v) for v in obj]
    return obj


PICKLE_ONLY = st.sampled_from(["bytes", "set", "nan", "inf", "bigint", "bytearray", "frozenset", "tuple"])


def _pickle_value(kind: str) -> Any:
    return {"bytes": b"\xff" * 300, "set": {1, 2, 3}, "nan": float("nan"), "inf": float("-inf"),
            "bigint": 10 ** 5000, "bytearray": bytearray(b"x" * 10), "frozenset": frozenset(["a"]),
            "tuple": ("0", "default_pg", "extra")}[kind]


@st.composite
def _fr_pickle(draw: st.DrawFn) -> bytes:
    bases = fr_bases()["pickle"]
    doc = _thaw(bases[draw(st.integers(0, len(bases) - 1))])
    for _ in range(draw(st.integers(0, 3))):  # values of the wrong type (JSON-like, or what only a pickle holds)
        places = _places(doc)
        parent, key = draw(st.sampled_from(places))
        parent[key] = copy.deepcopy(draw(JSONISH)) if draw(st.booleans()) else _pickle_value(draw(PICKLE_ONLY))
    attack = draw(st.sampled_from(["none", "none", "bomb", "huge-sizes", "global", "many-entries", "hash-bomb",
                                   "shared-members"]))
    if attack == "bomb":
        places = _places(doc)
        parent, key = draw(st.sampled_from(places))
        parent[key] = _bomb(draw(st.sampled_from(["list", "tuple", "dict"])), draw(st.sampled_from([20, 30, 40])))
    elif attack == "huge-sizes" and doc.get("entries") and isinstance(doc["entries"], list):
        big = [1] * draw(st.sampled_from([10 ** 3, 10 ** 5, 10 ** 6]))
        e = doc["entries"][-1]
        if isinstance(e, dict):
            e = dict(e, input_sizes=[big] * 10, output_sizes=[big] * 10)
            doc["entries"] = doc["entries"] + [e] * draw(st.sampled_from([1, 100, 5000]))  # one object, referenced
    elif attack == "many-entries" and isinstance(doc.get("entries"), list) and doc["entries"]:
        doc["entries"] = doc["entries"] * draw(st.sampled_from([10, 200]))
    elif attack == "global":
        return draw(st.sampled_from(_global_payloads()))
    elif attack == "shared-members" and isinstance(doc.get("entries"), list) and doc["entries"]:
        # One member list, pickled once, named by many groups that entries use: analysed once per group.
        ranks = str(list(range(draw(st.sampled_from([3, 2 ** 12, 2 ** 16])))))
        groups = draw(st.sampled_from([2, 50, 400]))
        doc["pg_config"] = {str(g): {"name": str(g), "desc": f"g{g}", "ranks": ranks} for g in range(groups)}
        last = doc["entries"][-1]
        if isinstance(last, dict):
            doc["entries"] = doc["entries"] + [dict(last, process_group=[str(g), f"g{g}"]) for g in range(groups)]
    elif attack == "hash-bomb":
        return draw(st.sampled_from(_hash_bombs(draw(st.sampled_from([20, 40, 200])))))
    try:
        data = pickle.dumps(doc, protocol=draw(st.integers(0, 5)))
    except ValueError:  # protocols 0 and 1 write an integer of 5,000 digits as text, which Python refuses
        data = pickle.dumps(doc, protocol=4)
    how = draw(st.sampled_from(["keep", "keep", "keep", "cut", "flip", "insert"]))
    if how == "cut":
        data = data[: draw(st.integers(0, len(data)))]
    elif how == "flip":
        for _ in range(draw(st.integers(1, 8))):
            i = draw(st.integers(0, len(data) - 1))
            data = data[:i] + bytes([draw(st.integers(0, 255))]) + data[i + 1:]
    elif how == "insert":
        i = draw(st.integers(0, len(data)))
        data = data[:i] + draw(st.binary(min_size=1, max_size=12)) + data[i:]
    return data


@st.composite
def _fr_json(draw: st.DrawFn) -> bytes:
    bases = fr_bases()["json"]
    doc = _mutate(draw, bases[draw(st.integers(0, len(bases) - 1))], draw(st.integers(0, 4)))
    text = json.dumps(doc)
    if draw(st.integers(0, 3)) == 0:  # NaN where a number belongs (json.dumps writes it, json.loads takes it)
        text = text.replace('"timeout_ms": 300000', '"timeout_ms": NaN', 1).replace('"line": ', '"line": -Infinity, "x": ', 1)
    if draw(st.integers(0, 5)) == 0:
        depth = draw(st.sampled_from([1000, 100_000]))
        text = text.replace('"entries": [', '"entries": [' + "[" * depth + "]" * depth + ", ", 1)
    return _damage_json_text(draw, text).encode("utf-8", "surrogatepass")


@st.composite
def fr_files(draw: st.DrawFn) -> dict[str, bytes]:
    """A folder of 1-3 flight-recorder dumps, pickle or JSON, each maybe damaged (see above)."""
    out: dict[str, bytes] = {}
    for r in range(draw(st.integers(1, 3))):
        fmt = draw(st.sampled_from(["pickle", "pickle", "json"]))
        data = draw(_fr_pickle()) if fmt == "pickle" else draw(_fr_json())
        name = draw(st.sampled_from([f"nccl_trace_rank_{r}", f"rank{r}.json", f"rank{r}.pkl", "dump"]))
        out[name if name not in out else f"{name}-{r}"] = data
    return out


def feed_fr(files: dict[str, bytes]) -> str:
    """``hang --fr DIR --json``, then ``report --fr DIR`` with a bundle; a created canary is a resolved global."""
    with tempfile.TemporaryDirectory() as d:
        fr = os.path.join(d, "fr")
        os.mkdir(fr)
        _write(fr, files)
        try:
            got = _checked(*_cli(["hang", "--fr", fr, "--json"]))
            rc, _, _ = _cli(["report", "--no-checks", "--no-system", "--fr", fr, "-o", os.path.join(d, "r"),
                             "--bundle", os.path.join(d, "b.tar.gz")])
        finally:
            if os.path.exists(canary()):
                os.rmdir(canary())
                raise ReaderBug("a pickle global was resolved: the canary folder was created")
    return f"{got}, report exit {rc}"


READERS = {"logs": (log_files(), feed_logs), "stacks": (stack_files(), feed_stacks),
           "records": (record_files(), feed_records), "report": (report_docs(), feed_report),
           "fr": (fr_files(), feed_fr)}
