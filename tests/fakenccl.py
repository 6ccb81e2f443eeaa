"""``fakenccl``: a test backend that behaves, on CPU tensors, as the captures show NCCL does.

Importing this module registers the backend with torch
(``dist.Backend.register_backend("fakenccl", ..., extended_api=True)``);
``dist.init_process_group("fakenccl")`` then gives a group whose collectives
behave the way ProcessGroupNCCL's do on a GPU, in the ways that matter to code
that wraps a process group (../shared/gpu-captures/hooks/, FIELD-NOTES "NCCL on
a real GPU"):

- **Asynchronous.** Every call returns a work handle at once. The operation is
  handed to a real gloo process group on the caller's thread, as NCCL enqueues
  on the caller's thread: torch's flight recorder then records it at the call,
  with the caller's Python stack (the user's line), as it records NCCL's
  collectives (gpu-captures/hangs/*/fr). Works complete later, in call order, on
  a thread of the group (its "stream"). The first collective of a group also
  sets up the communicator (``FAKENCCL_INIT_MS``, 100 ms by default: NCCL
  creates its communicator lazily at the first collective; the capture's first
  ALLGATHER was still running after 74 ms), so it completes no sooner.
- **A timed wait that expires is destructive.** ``work.wait(timeout)`` whose
  timeout passes before the operation completed prints NCCL's lines
  (``Work WorkNCCL(SeqNum=N, OpType=...) timed out in blocking wait``,
  ``To avoid data inconsistency, we are taking the entire process down.``),
  marks the group aborted and kills the process with SIGABRT, as
  ProcessGroupNCCL's blocking wait and watchdog do. gloo lets a caller wait
  again; NCCL does not.
- **An operation that fails** (the peer left, gloo's own timeout) takes the
  process down the same way, as NCCL's watchdog does with its default
  ``TORCH_NCCL_ASYNC_ERROR_HANDLING=3`` (``FAKENCCL_ASYNC_ERROR_HANDLING=0``
  turns that off: the error is then raised by ``wait``).
- ``wait()`` without a timeout blocks until the operation is done (the tensors
  are on the CPU: there is no stream to order instead); ``is_completed()``
  only asks; ``get_future()`` completes with the outputs when the operation
  is done, so DDP's reducer works.

- ``FAKENCCL_STREAM_WAIT=1`` models the host side of a GPU job as well: ``wait()``
  without a timeout only orders the work (on a GPU it makes the current stream
  wait and returns at once), so a rank whose peer never comes is not held inside
  the collective; it goes on, and waits at the next call that needs the GPU to
  finish. Here that is ``barrier()``, whose wait blocks the host until the stream
  has run everything before it (ProcessGroupNCCL's barrier synchronises the
  device), or ``synchronize()``, this module's ``torch.cuda.synchronize()``.
  Off by default: code that reads a tensor right after ``wait()`` on CPU needs
  the blocking wait.

What it does not model: CUDA streams beyond that (by default ``wait()`` returns
after the data moved; on a GPU it returns before), NCCL's own size checks (a
size mismatch on NCCL can succeed silently; gloo's check stops it here).
"""

from __future__ import annotations

import datetime
import os
import queue
import sys
import threading
import time
from typing import Any, Callable

import torch
import torch.distributed as dist

NAME = "fakenccl"

#: ProcessGroup method -> NCCL's OpType name, for the method names the wrapper and torch's callers use.
OP_TYPES = {
    "allreduce": "ALLREDUCE", "allreduce_coalesced": "ALLREDUCE_COALESCED", "broadcast": "BROADCAST",
    "reduce": "REDUCE", "allgather": "ALLGATHER", "allgather_coalesced": "ALLGATHER_COALESCED",
    "all_gather_single": "_ALLGATHER_BASE", "_allgather_base": "_ALLGATHER_BASE",
    "all_gather_single_coalesced": "COALESCED", "allgather_into_tensor_coalesced": "COALESCED",
    "reduce_scatter": "REDUCE_SCATTER", "reduce_scatter_single": "_REDUCE_SCATTER_BASE",
    "_reduce_scatter_base": "_REDUCE_SCATTER_BASE", "reduce_scatter_single_coalesced": "COALESCED",
    "reduce_scatter_tensor_coalesced": "COALESCED", "all_to_all_single": "ALLTOALL_BASE",
    "alltoall_base": "ALLTOALL_BASE", "alltoall": "ALLTOALL", "gather": "GATHER", "scatter": "SCATTER",
    "barrier": "BARRIER", "send": "SEND", "recv": "RECV", "recv_anysource": "RECVANYSOURCE",
}
#: (position of the inputs, position of the outputs) in each method's arguments, for NumelIn/NumelOut.
_IO = {"allgather": (1, 0), "allgather_coalesced": (1, 0), "all_gather_single": (1, 0), "_allgather_base": (1, 0),
       "all_gather_single_coalesced": (1, 0), "allgather_into_tensor_coalesced": (1, 0), "reduce_scatter": (1, 0),
       "reduce_scatter_single": (1, 0), "_reduce_scatter_base": (1, 0), "reduce_scatter_single_coalesced": (1, 0),
       "reduce_scatter_tensor_coalesced": (1, 0), "all_to_all_single": (1, 0), "alltoall_base": (1, 0),
       "alltoall": (1, 0), "gather": (0, 1), "scatter": (1, 0)}
_P2P = ("send", "recv", "recv_anysource")


def _numel(x: Any) -> int:
    if isinstance(x, torch.Tensor):
        return int(x.numel())
    if isinstance(x, (list, tuple)):
        return sum(_numel(y) for y in x)
    return 0


def _stamp(rank: int) -> str:
    """The prefix of a c10d error line: ``[rank0]:[E1124 22:49:36.274229929 fakenccl.py:0]``."""
    t = time.time()
    lt = time.localtime(t)
    return (f"[rank{rank}]:[E{lt.tm_mon:02d}{lt.tm_mday:02d} {time.strftime('%H:%M:%S', lt)}."
            f"{int((t % 1) * 1e9):09d} fakenccl.py]")


class FakeNcclWork(dist.Work):
    """The handle of one operation: completes when the group's stream has run it."""

    def __init__(self, pg: FakeNcclProcessGroup, seq: int, op_type: str, numel_in: int, numel_out: int) -> None:
        super().__init__()
        self._pg = pg
        self.seq = seq
        self.op_type = op_type
        self.numel_in, self.numel_out = numel_in, numel_out
        self.started = time.monotonic()
        self._done = threading.Event()
        self._error: BaseException | None = None
        self._value: Any = []
        self._fut: torch.futures.Future[Any] = torch.futures.Future()

    def describe(self) -> str:
        return (f"WorkNCCL(SeqNum={self.seq}, OpType={self.op_type}, NumelIn={self.numel_in}, "
                f"NumelOut={self.numel_out}, Timeout(ms)={int(self._pg.timeout_s * 1000)})")

    def _finish(self, value: Any, error: BaseException | None) -> None:
        self._value, self._error = value, error
        try:  # the future first: whoever wait() releases may read it at once
            if error is None:
                self._fut.set_result(value)
            else:
                self._fut.set_exception(error)
        finally:
            self._done.set()

    def wait(self, timeout: datetime.timedelta = datetime.timedelta(0)) -> bool:
        secs = timeout.total_seconds() if timeout else 0.0
        if secs <= 0 and self._pg.stream_wait and self.op_type != "BARRIER":
            return True  # the stream waits, not the host (see FAKENCCL_STREAM_WAIT)
        if secs > 0:
            if not self._done.wait(secs):
                # ProcessGroupNCCL: a blocking wait that times out is a collective timeout.
                self._pg.take_down(self, "blocking wait")
        else:
            # Until done: the operation ends either way, by its result or by gloo's own timeout.
            while not self._done.wait(1.0):
                pass
        if self._error is not None:
            raise self._error
        return True

    def is_completed(self) -> bool:
        return self._done.is_set()

    def is_success(self) -> bool:
        return self._done.is_set() and self._error is None

    def exception(self) -> Any:
        return self._error

    def get_future(self) -> torch.futures.Future[Any]:
        return self._fut

    def result(self) -> Any:
        self.wait()
        return self._value

    def synchronize(self) -> None:
        self.wait()


class FakeNcclProcessGroup(dist.ProcessGroup):
    """A Python process group whose every call runs later, in order, on a real gloo group."""

    def __init__(self, store: Any, rank: int, size: int, timeout: datetime.timedelta) -> None:
        super().__init__(rank, size)  # type: ignore[call-arg]
        self._rank, self._size = rank, size
        self.timeout_s = timeout.total_seconds() if timeout else 1800.0
        self.options = dist.ProcessGroupGloo._Options()  # as a backend keeps it: callers read options._timeout
        self.options._timeout = timeout
        gloo = dist.ProcessGroupGloo(store, rank, size, timeout)
        real = dist.ProcessGroup(store, rank, size)
        real._set_default_backend(dist.ProcessGroup.BackendType.GLOO)
        real._register_backend(torch.device("cpu"), dist.ProcessGroup.BackendType.GLOO, gloo)
        self._real = real
        self._gloo = gloo
        self._name = ""
        self._desc = ""
        self._seq = 0
        self._lock = threading.Lock()
        self.aborted = False
        self._closed = False
        self._init_s = float(os.environ.get("FAKENCCL_INIT_MS", "100")) / 1000.0
        self._first = True
        self._async_errors = os.environ.get("FAKENCCL_ASYNC_ERROR_HANDLING", "3") != "0"
        self.stream_wait = os.environ.get("FAKENCCL_STREAM_WAIT") == "1"
        self._last: FakeNcclWork | None = None
        _GROUPS.append(self)
        self._pending: queue.Queue[Any] = queue.Queue()
        self._threads = [threading.Thread(target=self._run_completion, name="fakenccl-stream", daemon=True)]
        for t in self._threads:
            t.start()

    # -- identity, as torch and the wrapper ask for it ------------------------------------

    def getBackendName(self) -> str:
        return NAME

    def name(self) -> str:
        return NAME

    def getGroupName(self) -> str:
        return self._name

    def setGroupName(self, name: str) -> None:
        self._name = name

    def getGroupDesc(self) -> str:
        return self._desc

    def setGroupDesc(self, desc: str) -> None:
        self._desc = desc

    @property
    def group_name(self) -> str:
        return self._name

    @property
    def group_desc(self) -> str:
        return self._desc

    def _set_group_name(self, name: str) -> None:
        self._name = name

    def _set_group_desc(self, desc: str) -> None:
        self._desc = desc

    def rank(self) -> int:
        return self._rank

    def size(self) -> int:
        return self._size

    # -- operations --------------------------------------------------------------------------

    def _enqueue(self, method: str, args: tuple[Any, ...], kw: dict[str, Any]) -> FakeNcclWork:
        if self.aborted:
            raise dist.DistBackendError(f"[Rank {self._rank}] NCCL communicator was aborted on rank {self._rank}.")
        i, o = _IO.get(method, (0, 0))
        try:
            n_in, n_out = _numel(args[i]), _numel(args[o])
        except IndexError:
            n_in = n_out = 0
        # One lock for the number and the hand-over: gloo needs the calls in the same order on every rank.
        with self._lock:
            self._seq += 1
            work = FakeNcclWork(self, self._seq, OP_TYPES[method], n_in, n_out)
            self._last = work
            first = self._first and method not in _P2P
            if first:
                self._first = False
            try:
                inner = getattr(self._real, method)(*args, **kw)
            except BaseException as e:  # noqa: BLE001 - the operation failed: its work says so
                self._pending.put((None, work, e, False))
                return work
        if method in _P2P:
            # Sends and receives complete on their own (NCCL runs them on a stream per peer pair);
            # completing them in order with the collectives could block an exchange.
            threading.Thread(target=self._complete, args=(inner, work, None), daemon=True,
                             name="fakenccl-p2p").start()
        else:
            self._pending.put((inner, work, None, first))
        return work

    def _run_completion(self) -> None:
        """The group's stream: works complete in call order."""
        while True:
            item = self._pending.get()
            if item is None:
                return
            inner, work, error, first = item
            if first:
                time.sleep(self._init_s)  # the communicator is set up at the first collective
            self._complete(inner, work, error)

    def _complete(self, inner: Any, work: FakeNcclWork, error: BaseException | None) -> None:
        value: Any = []
        if error is None and inner is not None:
            try:
                inner.wait()
            except BaseException as e:  # noqa: BLE001
                error = e
            else:
                try:  # the outputs, as NCCL's future holds them (DDP's reducer reads them)
                    value = inner.get_future().value()
                except Exception:  # noqa: BLE001 - some gloo handles have no future value
                    value = []
        if error is not None and self._async_errors and not self._closed:
            self.take_down(work, "watchdog", error)
        work._finish(value, error)

    def take_down(self, work: FakeNcclWork, how: str, error: BaseException | None = None) -> None:
        """What ProcessGroupNCCL does with a collective that timed out or failed: say so, abort, SIGABRT."""
        self.aborted = True
        r = self._rank
        ran = int((time.monotonic() - work.started) * 1000)
        lines = []
        if error is None:
            lines.append(f"{_stamp(r)} [Rank {r}] Watchdog caught collective operation timeout: {work.describe()} "
                         f"ran for {ran} milliseconds before timing out.")
        if how == "blocking wait":
            lines.append(f"{_stamp(r)} [Rank {r}] Work {work.describe()} timed out in blocking wait.")
        else:
            lines.append(f"{_stamp(r)} [Rank {r}] Collective {work.describe()} raised the following async "
                         f"exception: {str(error).splitlines()[0] if error else 'timeout'}")
        lines.append(f"{_stamp(r)} [Rank {r}] Some NCCL operations have failed or timed out. Due to the asynchronous "
                     "nature of CUDA kernels, subsequent GPU operations might run on corrupted/incomplete data.")
        lines.append(f"{_stamp(r)} [Rank {r}] To avoid data inconsistency, we are taking the entire process down.")
        try:
            sys.stderr.write("\n".join(lines) + "\n")
            sys.stderr.flush()
        finally:
            os.abort()

    def shutdown(self) -> None:
        self._closed = True
        self._pending.put(None)
        for t in self._threads:  # what was enqueued runs to its end first, as NCCL's destroy waits for it
            t.join(min(self.timeout_s, 10.0))
        try:
            self._real.shutdown()
        except RuntimeError:
            pass

    def abort(self) -> None:
        self.shutdown()


def _method(name: str) -> Callable[..., FakeNcclWork]:
    def m(self: FakeNcclProcessGroup, *args: Any, **kw: Any) -> FakeNcclWork:
        return self._enqueue(name, args, kw)
    m.__name__ = name
    return m


for _name in OP_TYPES:
    setattr(FakeNcclProcessGroup, _name, _method(_name))


#: Every group of this process: ``synchronize()`` waits for each one's stream, as a device does.
_GROUPS: list[FakeNcclProcessGroup] = []


def synchronize() -> None:
    """``torch.cuda.synchronize()`` for fakenccl: the host waits until every group's stream ran what it was given."""
    for pg in list(_GROUPS):
        work = pg._last
        if work is not None and not pg._closed:
            while not work._done.wait(1.0):
                pass


def _create(common: Any, _options: Any) -> FakeNcclProcessGroup:
    return FakeNcclProcessGroup(common.store, common.group_rank, common.group_size, common.timeout)


def register() -> None:
    """Make ``init_process_group("fakenccl")`` available in this process (idempotent)."""
    if NAME.upper() not in dist.Backend._plugins:
        dist.Backend.register_backend(NAME, _create, extended_api=True, devices=["cpu"])


register()
