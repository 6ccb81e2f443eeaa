"""The wrapping process group: a Python subclass of ``dist.ProcessGroup`` around the real one.

Promise: every collective and point-to-point method that C++ callers (DDP's
reducer, functional collectives, FSDP, DeviceMesh) or Python's ``dist.*``
reach is recorded, checked with the other ranks, then handed to the real
process group with the caller's own arguments, unchanged; the real backend's
work handle is returned as it is (or, for a call that went on unchecked, a thin
``dist.Work`` that delegates to it). Results are therefore bit for bit those of
the real group. Every other method and property delegates to the real group.

Why a subclass and not patched functions: DDP's reducer and functional
collectives call the process group from C++, through pybind's trampoline for
Python subclasses; patching torch.distributed's functions sees none of those
calls (FIELD-NOTES: "0 calls seen"). A dispatcher kernel deadlocks on gloo.

Waiting is decided per backend. The wrapper waits on a backend's work with
short timed waits (to be released by a mismatch found meanwhile) only where
the backend is known to let a caller wait again after a timed wait ran out:
gloo (``POLL_SAFE``). On NCCL an expired ``Work.wait(timeout)`` is a
collective timeout: the communicator is aborted and the process taken down
with SIGABRT (gpu-captures/hooks/hooks-ddp-healthy-nccl.log). There, and on
every backend not known to be safe (MPI, UCC, XCCL, out-of-tree ones), the
hooks never give the work a timeout of their own: every collective is checked
with the other ranks before it is handed to the backend, and a wait watches the
work's future on an event of the hooks' own, then calls the backend's wait
with the caller's own timeout (none unless the caller gave one).
"""

from __future__ import annotations

import datetime
import sys
import threading
import time
from typing import Any, Callable

import torch
import torch.distributed as dist

from commdoctor.hooks import backendwatch
from commdoctor.hooks.callsite import site_of, user_site
from commdoctor.hooks.checker import make_fp
from commdoctor.hooks.errors import CollectiveMismatchError

_now = time.time

_SLICE_S = 0.05
#: Backends whose Work.wait(timeout) only reports that the time ran out, so the hooks may wait on
#: their work in slices (FIELD-NOTES: "gloo lets you wait again"). Every other backend is treated as
#: one whose timed wait may be destructive (NCCL), until shown otherwise.
POLL_SAFE = frozenset({"gloo"})
_SLICE = datetime.timedelta(seconds=_SLICE_S)
_NO_TIMEOUT = datetime.timedelta(0)

_Tensor = torch.Tensor
_ReduceOp = dist.ReduceOp
_AllreduceOptions = dist.AllreduceOptions
_dtype_names: dict[Any, str] = {}
_redop_names: dict[Any, str] = {}
_shape_texts: dict[Any, str] = {}

BT = dist.ProcessGroup.BackendType
_BACKEND_TYPES = {"gloo": BT.GLOO, "nccl": BT.NCCL, "ucc": BT.UCC, "mpi": BT.MPI}
if hasattr(BT, "XCCL"):
    _BACKEND_TYPES["xccl"] = BT.XCCL


def _dtype(t: _Tensor) -> str:
    d = t.dtype
    s = _dtype_names.get(d)
    if s is None:
        s = _dtype_names[d] = str(d).replace("torch.", "")
    return s


def _redop(op: Any) -> str:
    """SUM / MAX / ... from a ReduceOp or its RedOpType (cached by the enum's value)."""
    key = getattr(op, "op", op)  # ReduceOp -> RedOpType
    v = getattr(key, "value", key)
    s = _redop_names.get(v)
    if s is None:
        s = getattr(key, "name", None) or str(key).rpartition(".")[2]
        try:
            _redop_names[v] = s
        except TypeError:  # unhashable custom op: do not cache
            pass
    return s


def _is_opts(o: Any) -> bool:
    return hasattr(o, "asyncOp")


def _shape(t: _Tensor) -> str:
    size = t.shape
    s = _shape_texts.get(size)
    if s is None:
        s = "[" + ",".join([str(d) for d in size]) + "]"
        if len(_shape_texts) > 4096:
            _shape_texts.clear()
        _shape_texts[size] = s
    return s


def _devtype(t: _Tensor) -> str:
    return "cpu" if t.is_cpu else t.device.type


def _flat(xs: Any) -> list[_Tensor]:
    """Tensors from a tensor, a list of tensors or a list of lists of tensors."""
    if isinstance(xs, _Tensor):
        return [xs]
    out: list[_Tensor] = []
    for x in xs or ():
        if isinstance(x, _Tensor):
            out.append(x)
        else:
            out.extend(y for y in x if isinstance(y, _Tensor))
    return out


def _opts(args: tuple[Any, ...], kwargs: dict[str, Any], pos: int) -> Any:
    if len(args) > pos:
        return args[pos]
    return kwargs.get("opts")


def _async(opts: Any) -> bool:
    # Options objects default to asyncOp=True (C++ callers such as DDP's
    # reducer); dist.* sets it False for blocking calls.
    return bool(getattr(opts, "asyncOp", True))


# Each describer returns (tensors whose dtype/shape must agree, reduce op, root, async, shapes override).
Described = tuple[list[_Tensor], "str | None", "int | None", bool, "str | None"]


def _d_allreduce(args: tuple[Any, ...], kw: dict[str, Any]) -> Described:
    if len(args) == 2 and not kw and type(args[0]) is list:  # dist.all_reduce and DDP's reducer
        opts = args[1]
        if type(opts) is _AllreduceOptions:
            return args[0], _redop(opts.reduceOp), None, opts.asyncOp, None
    opts = _opts(args, kw, 1)
    if _is_opts(opts):
        return _flat(args[0]), _redop(opts.reduceOp), None, _async(opts), None
    op = opts if opts is not None else kw.get("op", _ReduceOp.SUM)
    return _flat(args[0]), _redop(op), None, True, None


def _d_broadcast(args: tuple[Any, ...], kw: dict[str, Any]) -> Described:
    opts = _opts(args, kw, 1)
    if _is_opts(opts):
        return _flat(args[0]), None, int(opts.rootRank), _async(opts), None
    return _flat(args[0]), None, int(opts if opts is not None else kw.get("root", 0)), True, None


def _d_reduce(args: tuple[Any, ...], kw: dict[str, Any]) -> Described:
    opts = _opts(args, kw, 1)
    if _is_opts(opts):
        return _flat(args[0]), _redop(opts.reduceOp), int(opts.rootRank), _async(opts), None
    op = args[2] if len(args) > 2 else kw.get("op", _ReduceOp.SUM)
    return _flat(args[0]), _redop(op), int(opts if opts is not None else kw.get("root", 0)), True, None


def _d_inputs(pos_in: int, pos_opts: int) -> Callable[..., Described]:
    """(outputs, inputs, opts) where only the inputs must agree (all_gather's outputs are per rank)."""
    def d(args: tuple[Any, ...], kw: dict[str, Any]) -> Described:
        opts = _opts(args, kw, pos_opts)
        return _flat(args[pos_in]), None, None, _async(opts) if _is_opts(opts) else True, None
    return d


def _d_single(reduce: bool) -> Callable[..., Described]:
    """(output, input, opts): both shapes must agree across ranks."""
    def d(args: tuple[Any, ...], kw: dict[str, Any]) -> Described:
        opts = _opts(args, kw, 2)
        ts = _flat(args[1]) + _flat(args[0])
        if not _is_opts(opts):
            return ts, (_redop(opts) if opts is not None else "SUM") if reduce else None, None, True, None
        return ts, _redop(opts.reduceOp) if reduce else None, None, _async(opts), None
    return d


def _d_pairs(reduce: bool) -> Callable[..., Described]:
    """(outputs, inputs, opts) of the coalesced / list forms: every tensor's shape must agree."""
    def d(args: tuple[Any, ...], kw: dict[str, Any]) -> Described:
        opts = _opts(args, kw, 2)
        ts = _flat(args[1]) + _flat(args[0])
        if not _is_opts(opts):
            return ts, (_redop(opts) if opts is not None else "SUM") if reduce else None, None, True, None
        return ts, _redop(opts.reduceOp) if reduce else None, None, _async(opts), None
    return d


def _d_all_to_all_single(args: tuple[Any, ...], kw: dict[str, Any]) -> Described:
    out, inp = args[0], args[1]
    opts = _opts(args, kw, 4)
    if not _is_opts(opts):
        opts = None
    splits = [s for s in args[2:4] if isinstance(s, (list, tuple))]
    if any(splits):
        # Uneven splits legitimately differ per rank: only the dtype and the trailing dimensions must agree.
        shapes = "[[-1" + "".join("," + str(d) for d in inp.shape[1:]) + "]]"  # -1: differs per rank
        return [inp, out], None, None, _async(opts), shapes
    return [inp, out], None, None, _async(opts), None


def _d_all_to_all(args: tuple[Any, ...], kw: dict[str, Any]) -> Described:
    opts = _opts(args, kw, 2)
    ins = _flat(args[1])
    return ins, None, None, _async(opts) if _is_opts(opts) else True, "[" + ",".join(["[-1]"] * len(ins)) + "]"


def _d_rooted(pos: int) -> Callable[..., Described]:
    """gather (inputs at 1) and scatter (outputs at 0): the non-list side and the root must agree."""
    def d(args: tuple[Any, ...], kw: dict[str, Any]) -> Described:
        opts = _opts(args, kw, 2)
        if _is_opts(opts):
            return _flat(args[pos]), None, int(opts.rootRank), _async(opts), None
        return _flat(args[pos]), None, int(opts if opts is not None else kw.get("root", 0)), True, None
    return d


def _d_barrier(args: tuple[Any, ...], kw: dict[str, Any]) -> Described:
    opts = _opts(args, kw, 0)
    return [], None, None, _async(opts) if _is_opts(opts) else True, None


#: method name -> (op name shown to users, describer). Names follow torch.distributed's functions.
COLLECTIVES: dict[str, tuple[str, Callable[..., Described]]] = {
    "allreduce": ("all_reduce", _d_allreduce),
    "allreduce_coalesced": ("all_reduce_coalesced", _d_allreduce),
    "broadcast": ("broadcast", _d_broadcast),
    "reduce": ("reduce", _d_reduce),
    "allgather": ("all_gather", _d_inputs(1, 2)),
    "allgather_coalesced": ("all_gather_coalesced", _d_inputs(1, 2)),
    "all_gather_single": ("all_gather_into_tensor", _d_single(False)),
    "_allgather_base": ("all_gather_into_tensor", _d_single(False)),
    "all_gather_single_coalesced": ("all_gather_into_tensor_coalesced", _d_pairs(False)),
    "allgather_into_tensor_coalesced": ("all_gather_into_tensor_coalesced", _d_pairs(False)),
    "reduce_scatter": ("reduce_scatter", _d_pairs(True)),
    "reduce_scatter_single": ("reduce_scatter_tensor", _d_single(True)),
    "_reduce_scatter_base": ("reduce_scatter_tensor", _d_single(True)),
    "reduce_scatter_single_coalesced": ("reduce_scatter_tensor_coalesced", _d_pairs(True)),
    "reduce_scatter_tensor_coalesced": ("reduce_scatter_tensor_coalesced", _d_pairs(True)),
    "all_to_all_single": ("all_to_all_single", _d_all_to_all_single),
    "alltoall_base": ("all_to_all_single", _d_all_to_all_single),
    "alltoall": ("all_to_all", _d_all_to_all),
    "gather": ("gather", _d_rooted(1)),
    "scatter": ("scatter", _d_rooted(0)),
    "barrier": ("barrier", _d_barrier),
}

#: Methods that only delegate (everything else a caller may reach on a ProcessGroup).
DELEGATED = (
    "_end_coalescing", "_get_backend_name", "_get_sequence_number_for_group", "_set_sequence_number_for_group",
    "_start_coalescing", "_register_on_completion_hook", "_set_group_desc", "_set_group_name", "abort",
    "set_timeout", "get_group_store", "split_group", "merge_remote_group", "_enable_collectives_timing",
    "_id", "_backend_id", "_has_hooks", "_wait_for_pending_works",
)


def describe_call(method: str, args: tuple[Any, ...], kw: dict[str, Any]) -> tuple[str, str | None, str | None, str, str, int | None, str | None, bool]:
    """(op, reduce_op, dtype, shapes, fingerprint shapes, root, device type, async) of a call; never raises.

    The fingerprint's shapes equal the real ones except where ranks may
    legitimately differ (uneven all_to_all), where -1 stands for "any".
    """
    op, d = COLLECTIVES[method]
    try:
        tensors, red, root, async_op, fp_shapes = d(args, kw)
    except Exception:  # noqa: BLE001 - an unusual call form: record what we can, never fail the call
        return op, None, None, "[]", "?", None, None, True
    if tensors:
        if len(tensors) == 1:
            t = tensors[0]
            dtype, dev, shapes = _dtype(t), _devtype(t), "[" + _shape(t) + "]"
        else:
            dts = [_dtype(t) for t in tensors]
            dtype = dts[0] if len(set(dts)) == 1 else ",".join(dts)
            dev = _devtype(tensors[0])
            shapes = "[" + ",".join([_shape(t) for t in tensors]) + "]"
    else:
        dtype, dev, shapes = None, None, "[]"
    return op, red, dtype, shapes, fp_shapes or shapes, root, dev, async_op


_BroadcastOptions = dist.BroadcastOptions
try:  # the Python frame under which the autograd engine runs backward (and so DDP's reducer)
    from torch.autograd.graph import _engine_run_backward as _erb

    _ENGINE_RUN: Any = _erb.__code__
except (ImportError, AttributeError):  # another torch: no such frame, every handle is wrapped
    _ENGINE_RUN = None
#: (method, dtype, size, device, reduce op, async) -> describe_call's answer with the fingerprint made.
_fast_cache: dict[tuple[Any, ...], tuple[str, str | None, str | None, str, str, int | None, str | None, bool]] = {}


def _fast_describe(method: str, args: tuple[Any, ...], kw: dict[str, Any]) -> Any:
    """describe_call with the fingerprint, for the commonest form (one tensor in a list and an
    options object: dist.all_reduce, dist.broadcast and DDP's buckets), from a cache keyed on what
    the answer depends on; None for every other form (the caller describes it in full).

    Reading the key costs a few attribute reads; the answer (names, shape text, fingerprint) is
    formatted once per distinct call instead of on every call."""
    if kw or len(args) != 2:
        return None
    ts, opts = args
    if type(ts) is not list or len(ts) != 1:
        return None
    t = ts[0]
    if not isinstance(t, _Tensor):
        return None
    to = type(opts)
    if to is _AllreduceOptions:
        if method != "allreduce":
            return None
        # hash(ReduceOp) is its RedOpType's value (SUM 0, MAX 4, ...): one call into pybind instead of
        # three for .op.value, which cost ~10 µs together right after the reducer's C++ (cold caches).
        key: tuple[Any, ...] = (t.dtype, t.size(), t.is_cpu or t.device.type, hash(opts.reduceOp), opts.asyncOp)
    elif to is _BroadcastOptions:
        if method != "broadcast":
            return None
        key = (t.dtype, t.size(), t.is_cpu or t.device.type, -1 - opts.rootRank, opts.asyncOp)
    else:
        return None
    d = _fast_cache.get(key)
    if d is None:
        op, red, dtype, shapes, fp_shapes, root, dev, async_op = describe_call(method, args, kw)
        d = (op, red, dtype, shapes, make_fp(op, red, dtype, fp_shapes, root, dev), root, dev, async_op)
        if len(_fast_cache) > 4096:
            _fast_cache.clear()
        _fast_cache[key] = d
    return d


def _wait(inner: Any, h: Any, where: tuple[str, int], entry: list[Any] | None,
          timeout: datetime.timedelta = _NO_TIMEOUT) -> Any:
    """Wait for a collective's real work handle in slices, so that a mismatch found meanwhile releases
    this rank (the call never completes then), and turn a failure caused by a mismatch (a peer that
    raised and left) into that mismatch. A successful wait marks the recorder's entry completed.
    Returns what the real handle's wait returned."""
    try:
        ok = _poll(inner, h, where, timeout)
    except RuntimeError as e:
        if not isinstance(e, CollectiveMismatchError):
            h.raise_if_known(where, e)
        raise
    c = h.checker
    if c is not None and c.poison is not None:
        h.raise_if_known(where, None)
    if entry is not None and entry[2] is None:
        entry[2] = time.time()
    return ok


#: What c10d's Work::wait(timeout) raises when the slice runs out before the work completes (Work.cpp).
_SLICE_EXPIRED = "Operation timed out!"


def _poll(inner: Any, h: Any, where: tuple[str, int], timeout: datetime.timedelta) -> Any:
    """inner.wait(timeout) in slices of 50 ms, checking for a mismatch between them.

    A "timed out" error is only the slice running out while the work is not completed. The backend's own
    failures can say "timed out" too (gloo: "Timed out waiting 1800000ms for recv operation"), but then the
    work has completed, with that error: waiting again would rethrow it at once, for ever. A work that
    completed between the slice running out and the check (a peer arriving just then, often on a loaded
    machine) said Work::wait's own words: it is waited for once more, which returns or rethrows the work's
    own error; after that those words are the work's."""
    limit = timeout.total_seconds() if timeout else None
    start = time.monotonic()
    retried = False
    while True:
        left = None if limit is None else limit - (time.monotonic() - start)
        step = _SLICE_S if left is None else max(0.001, min(_SLICE_S, left))
        try:
            return inner.wait(_SLICE if left is None else datetime.timedelta(seconds=step))
        except RuntimeError as e:
            if "timed out" not in str(e).lower():
                raise
            try:
                done = inner.is_completed()
            except RuntimeError:
                raise e from None
            if done and (retried or _SLICE_EXPIRED not in str(e)):
                raise
            retried = done
            if h.poisoned() is not None:
                h.raise_if_known(where, None)
            if left is not None and left <= step:
                raise


def _wait_done(inner: Any, h: Any, where: tuple[str, int], entry: list[Any] | None,
               timeout: datetime.timedelta = _NO_TIMEOUT) -> Any:
    """_wait for a backend whose timed wait must not be used (NCCL: an expired one aborts the process).

    The work's future completing sets an event of our own; this thread waits on that event in
    slices, so a mismatch found meanwhile still releases it, and never gives the work a timeout of
    its own. Then the backend's own wait runs with the caller's timeout, and no other: on NCCL it
    orders the streams (the future completes when the kernel is enqueued); elsewhere the work is
    done by then. A backend without futures gets the caller's wait as it is."""
    limit = timeout.total_seconds() if timeout else None
    start = time.monotonic()
    done = threading.Event()
    try:
        inner.get_future().add_done_callback(lambda _f: done.set())
        watch = True
    except (RuntimeError, AttributeError, TypeError):  # a work without a future ("getFuture not implemented")
        watch = False
    while watch and not done.wait(_SLICE_S):
        if h.poisoned() is not None:
            h.raise_if_known(where, None)
        if limit is not None and time.monotonic() - start >= limit:
            break
    try:
        if limit is None:
            ok = inner.wait()
        else:  # the caller asked for a timeout: theirs, less what has passed, as the backend would count it
            ok = inner.wait(datetime.timedelta(seconds=max(0.001, limit - (time.monotonic() - start))))
    except RuntimeError as e:
        if not isinstance(e, CollectiveMismatchError):
            h.raise_if_known(where, e)
        raise
    c = h.checker
    if c is not None and c.poison is not None:
        h.raise_if_known(where, None)
    if entry is not None and entry[2] is None:
        entry[2] = time.time()
    return ok


def poll_safe(inner: Any) -> tuple[frozenset[str], bool]:
    """(device types whose calls may be waited on in timed slices, whether device-less calls may be).

    A device type qualifies when the backend that carries it is in POLL_SAFE; a group whose
    backends cannot be read (a Python process group, another wrapper) qualifies for nothing."""
    try:
        names = backendwatch.backend_names(inner)
    except Exception:  # noqa: BLE001 - unknown: treat as unsafe
        names = {}
    safe = frozenset(d for d, b in names.items() if b in POLL_SAFE)
    return safe, bool(names) and len(safe) == len(names)


class HookedWork(dist.Work):
    """The real work handle, wrapped: waits so that a mismatch found meanwhile releases the waiting
    rank (in timed slices where the backend allows it, else on the work's future), and turns a failure
    caused by a mismatch (a peer that raised and left) into that mismatch."""

    def __init__(self, inner: Any, hooks: Any, group: str, seq: int, entry: list[Any] | None = None,
                 polls: bool = True) -> None:
        super().__init__()
        self._cd_inner = inner
        self._cd_hooks = hooks
        self._cd_where = (group, seq)
        self._cd_entry = entry  # the recorder's pending entry: a successful wait marks the call completed
        self._cd_polls = polls  # False: the backend's timed wait is destructive or unknown (NCCL, ...)

    def _cd_check(self, err: BaseException | None = None) -> None:
        h = self._cd_hooks
        if h is not None:
            h.raise_if_known(self._cd_where, err)

    def wait(self, timeout: datetime.timedelta = _NO_TIMEOUT) -> bool:
        inner, h = self._cd_inner, self._cd_hooks
        if h is not None and self._cd_where[1] >= 0:
            if self._cd_polls:
                ok = _wait(inner, h, self._cd_where, self._cd_entry, timeout)
            else:
                ok = _wait_done(inner, h, self._cd_where, self._cd_entry, timeout)
            return bool(ok) if ok is not None else True
        try:  # unhooked, or point-to-point: gloo's recv cannot be polled safely
            ok = inner.wait(timeout) if timeout else inner.wait()
        except RuntimeError as e:
            if h is not None and not isinstance(e, CollectiveMismatchError):
                h.raise_if_known(self._cd_where, e)
            raise
        if h is not None:
            h.raise_if_known(self._cd_where, None)
        entry = self._cd_entry
        if entry is not None and entry[2] is None:
            entry[2] = time.time()
        return bool(ok) if ok is not None else True

    def is_completed(self) -> bool:
        return bool(self._cd_inner.is_completed())

    def is_success(self) -> bool:
        return bool(self._cd_inner.is_success())

    def exception(self) -> Any:
        return self._cd_inner.exception()

    def source_rank(self) -> int:
        return int(self._cd_inner.source_rank())

    def _source_rank(self) -> int:
        return int(self._cd_inner._source_rank())

    def result(self) -> list[_Tensor]:
        return self._cd_inner.result()

    def synchronize(self) -> None:
        self._cd_inner.synchronize()

    def get_future(self) -> Any:
        return self._cd_inner.get_future()

    def get_future_result(self) -> Any:
        return self._cd_inner.get_future_result()

    def block_current_stream(self) -> None:
        self._cd_inner.block_current_stream()

    def _get_op_type(self) -> Any:
        return self._cd_inner._get_op_type()

    def _get_duration(self) -> float:
        return float(self._cd_inner._get_duration())


class HookedProcessGroup(dist.ProcessGroup):
    """Records and checks every call, then hands it to ``inner`` unchanged."""

    def __init__(self, inner: dist.ProcessGroup, hooks: Any) -> None:
        super().__init__(inner.rank(), inner.size())  # type: ignore[call-arg]  # (rank, size) form
        self._cd_inner = inner
        self._cd_hooks = hooks
        self._cd_lock = threading.Lock()
        self._cd_state: Any = None
        self._cd_timeout: float | None = None
        self._cd_watch = backendwatch.for_group(inner, hooks)  # None unless CUDA tensors would go through gloo
        # Which calls the hooks may wait on in timed slices (gloo); all others are checked before they
        # reach the backend and never get a timed wait (module docstring).
        self._cd_polled, self._cd_polled_bare = poll_safe(inner)
        # C++ code that does not go through the virtual methods (DDP's logger,
        # ProcessGroup::getBackend) must find the real backends on this object.
        default = _BACKEND_TYPES.get(inner.name(), BT.CUSTOM)
        super()._set_default_backend(default)
        for dev in inner._device_types:
            device = torch.device(dev)
            try:
                backend = inner._get_backend(device)
            except RuntimeError:
                continue
            kind = _BACKEND_TYPES.get(type(backend).__name__.replace("ProcessGroup", "").lower(), default)
            super()._register_backend(device, kind, backend)

    # -- identity ----------------------------------------------------------------------

    def getBackendName(self) -> str:
        return self._cd_inner.name()

    def name(self) -> str:
        return self._cd_inner.name()

    def getGroupName(self) -> str:
        return self._cd_inner.group_name

    def setGroupName(self, name: str) -> None:
        self._cd_inner._set_group_name(name)  # type: ignore[arg-type]

    def getGroupDesc(self) -> str:
        return self._cd_inner.group_desc

    def setGroupDesc(self, desc: str) -> None:
        self._cd_inner._set_group_desc(desc)

    @property
    def group_name(self) -> Any:
        return self._cd_inner.group_name

    @property
    def group_desc(self) -> str:
        return self._cd_inner.group_desc

    @property
    def bound_device_id(self) -> Any:
        return self._cd_inner.bound_device_id

    @bound_device_id.setter
    def bound_device_id(self, v: Any) -> None:
        self._cd_inner.bound_device_id = v

    @property
    def _device_types(self) -> Any:
        return self._cd_inner._device_types

    def _get_backend(self, device: Any) -> Any:
        return self._cd_inner._get_backend(device)

    def shutdown(self) -> None:
        h = self._cd_hooks
        if h is not None:
            h.group_ended(self)
        else:  # after uninstall this is an alias of the real group: destroying it destroys both
            import torch.distributed.distributed_c10d as c10d

            inner = self._cd_inner
            if inner in c10d._world.pg_map and c10d._world.default_pg is not inner:
                for name in ("pg_map", "pg_names", "pg_group_ranks", "pg_backend_config", "pg_to_tag",
                             "pg_coalesce_state"):
                    getattr(c10d._world, name).pop(inner, None)
        self._cd_inner.shutdown()

    def __repr__(self) -> str:
        return f"<commdoctor.hooks wrapping {self._cd_inner!r}>"

    # -- the hot path ------------------------------------------------------------------

    def _cd_timeout_s(self) -> float:
        t = self._cd_timeout
        if t is None:
            try:
                dev = self._cd_inner._device_types[0]
                t = self._cd_inner._get_backend(torch.device(dev)).options._timeout.total_seconds()
            except (AttributeError, IndexError, RuntimeError):
                try:  # a Python process group that keeps a backend's options itself
                    t = getattr(self._cd_inner, "options")._timeout.total_seconds()
                except (AttributeError, RuntimeError):
                    t = 1800.0
            self._cd_timeout = t = float(t) if t and t > 0 else 1800.0
        return t

    def _cd_collective(self, method: str, args: tuple[Any, ...], kw: dict[str, Any]) -> Any:
        h = self._cd_hooks
        if h is None or not h.enabled:
            return getattr(self._cd_inner, method)(*args, **kw)
        d = _fast_describe(method, args, kw)
        if d is None:
            op, red, dtype, shapes, fp_shapes, root, dev, async_op = describe_call(method, args, kw)
            fp = make_fp(op, red, dtype, fp_shapes, root, dev)
        else:
            op, red, dtype, shapes, fp, root, dev, async_op = d
        try:
            caller = sys._getframe(2)  # whoever called the method (0: here, 1: the method)
        except ValueError:  # no Python frame at all: a C++ caller on a thread of its own
            caller = None
        site = site_of(caller)
        r = h.recorder
        with self._cd_lock:
            g = self._cd_state or h.group_state(self)
            seq = g.seq
            g.seq = seq + 1
            call = (g.name, seq, op, red, dtype, shapes, None, root, dev, async_op, site)
            if r is not None:
                r._q.append(("enter", call, _now()))
            polls = dev in self._cd_polled if dev else self._cd_polled_bare
            h.before(self, g, seq, fp, site, async_op, call, not polls)
            try:
                if self._cd_watch is not None and dev in self._cd_watch.devices:
                    work = self._cd_watch.call(method, args, kw, op, dev)
                else:
                    work = getattr(self._cd_inner, method)(*args, **kw)
            except BaseException as e:  # the backend refused the call: it ended here, say so
                h.failed(call, e)
                raise
        if work is None:
            return work
        if r is not None:
            entry: list[Any] | None = [work, call, None]
            r._pending.append(entry)
        elif h.checker is None:
            return work
        else:
            entry = None
        # Even a call checked before it ran can be cut short by a mismatch elsewhere (a
        # peer that raised and exited): waiting for it in slices turns that into the mismatch it was.
        if not async_op and dev == "cpu" and polls:
            # A blocking call on CPU tensors (dist.* with async_op=False): its caller waits for it at
            # once anyway, so wait here, and hand back the real handle, already complete: its
            # wait() returns at once. This spares a Work object and a Python wait per call (~9 µs
            # of CPU per call on this loaded 2-core box). Other devices keep their handle's own
            # wait semantics (NCCL's wait only orders streams).
            _wait(work, h, (g.name, seq), entry)
            return work
        if caller is None or caller.f_code is _ENGINE_RUN:
            # Issued from C++ inside backward, with no Python in between: DDP's reducer, which
            # reads only the handle's future and never waits on the handle itself, so a wrapper
            # would change nothing but cost ~10 µs of the caller's time per bucket (and one more
            # crossing into Python for get_future). The recorder polls the real handle.
            return work
        return HookedWork(work, h, g.name, seq, entry, polls)

    def _cd_p2p(self, method: str, direction: str, args: tuple[Any, ...], kw: dict[str, Any]) -> Any:
        h = self._cd_hooks
        if h is None or not h.enabled:
            return getattr(self._cd_inner, method)(*args, **kw)
        try:
            tensors = _flat(args[0])
            peer = int(args[1]) if method != "recv_anysource" else -1
            tag = int(args[2]) if len(args) > 2 else int(kw.get("tag", 0)) if method != "recv_anysource" else int(args[1])
            dtype = _dtype(tensors[0]) if tensors else None
            dev = _devtype(tensors[0]) if tensors else None
            shapes = "[" + ",".join([_shape(t) for t in tensors]) + "]"
        except Exception:  # noqa: BLE001 - unusual call form: pass it on unrecorded
            return getattr(self._cd_inner, method)(*args, **kw)
        site = user_site(3)
        with self._cd_lock:
            g = self._cd_state or h.group_state(self)
            # Point-to-point calls are numbered apart from collectives: -1, -2, ... per group.
            g.p2p_seq -= 1
            call = (g.name, g.p2p_seq, direction, None, dtype, shapes, peer, None, dev, True, site)
            h.recorder_enter(call)
            h.before_p2p(self, g, direction, peer, tag, make_fp(direction, None, dtype, shapes, None, dev), site)
            try:
                work = getattr(self._cd_inner, method)(*args, **kw)
            except BaseException as e:
                h.failed(call, e)
                raise
        entry = h.track(call, work)
        return HookedWork(work, h, g.name, call[1], entry) if work is not None else work

    def send(self, *args: Any, **kw: Any) -> Any:
        return self._cd_p2p("send", "send", args, kw)

    def recv(self, *args: Any, **kw: Any) -> Any:
        return self._cd_p2p("recv", "recv", args, kw)

    def recv_anysource(self, *args: Any, **kw: Any) -> Any:
        return self._cd_p2p("recv_anysource", "recv", args, kw)

    def monitored_barrier(self, *args: Any, **kw: Any) -> Any:
        # Not gated: its purpose is to name the ranks that do not arrive, which
        # it could not do if we held every rank until all arrived. Recorded only.
        h = self._cd_hooks
        if h is not None and h.enabled:
            with self._cd_lock:
                g = self._cd_state or h.group_state(self)
                g.p2p_seq -= 1  # not part of the checked sequence: numbered with the unchecked calls
                call = (g.name, g.p2p_seq, "monitored_barrier", None, None, "[]", None, None, None, False, user_site(2))
                h.recorder_enter(call)
            try:
                return getattr(self._cd_inner, "monitored_barrier")(*args, **kw)
            finally:
                h.track(call, _Done())
        return getattr(self._cd_inner, "monitored_barrier")(*args, **kw)


class _Done:
    def is_completed(self) -> bool:
        return True


def _make_collective(method: str) -> Callable[..., Any]:
    def m(self: HookedProcessGroup, *args: Any, **kw: Any) -> Any:
        return self._cd_collective(method, args, kw)
    m.__name__ = method
    m.__qualname__ = f"HookedProcessGroup.{method}"
    return m


def _make_delegate(method: str) -> Callable[..., Any]:
    def m(self: HookedProcessGroup, *args: Any, **kw: Any) -> Any:
        return getattr(self._cd_inner, method)(*args, **kw)
    m.__name__ = method
    m.__qualname__ = f"HookedProcessGroup.{method}"
    return m


for _m in COLLECTIVES:
    setattr(HookedProcessGroup, _m, _make_collective(_m))
for _m in DELEGATED:
    if hasattr(dist.ProcessGroup, _m):
        setattr(HookedProcessGroup, _m, _make_delegate(_m))
