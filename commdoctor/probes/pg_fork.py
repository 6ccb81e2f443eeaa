"""The local process-group test's ranks, forked from the interpreter that imported torch for the probe.

Promise: ``serve`` runs in the torch probe's child (``pg_init.probe_torch_and_stay``) once the parent hands it
the test's first rank. Where it is safe it forks the other ranks from this interpreter, torch already
imported, so each rank costs a fork instead of an interpreter that imports torch again (1.5-2 s of CPU on a
CPU host, more on a GPU host); a real process each, in a real process group, as torch.multiprocessing's fork
start method gives. Safe means a torch built without CUDA or ROCm and ranks on the CPU: forking a process
that has started a GPU runtime leaves the child unable to use it. Anything else is refused with the reason,
and the parent starts those ranks as fresh interpreters, as before.

The parent and this child talk over a Unix socket whose end this child inherits (its number is the child's
``sys.argv[1]``). Each request carries one rank's arguments and the write ends of its stdout and stderr
pipes (SCM_RIGHTS), so the parent reads every rank on pipes of its own; the reply is the forked rank's pid,
and when a rank ends its exit status follows on the same socket (the parent cannot wait for a process that
is not its child). Forked ranks stay in this child's process group, so the parent's kill of the group
reaches them, and they die with this child (PR_SET_PDEATHSIG); this child leaves only after its forked
ranks did. Imports nothing at module level beyond the standard library.
"""

from __future__ import annotations

import json
import os
import runpy
import socket
import sys
import threading
import traceback
import warnings
from typing import Any

#: How long the child waits for the parent's next request before it runs its own rank.
REQUEST_WAIT_S = 30.0
_PR_SET_PDEATHSIG = 1


#: ``COMMDOCTOR_FORK_RANKS=0`` starts every rank as an interpreter of its own, as on a GPU build.
FORK_ENV = "COMMDOCTOR_FORK_RANKS"


def fork_allowed() -> bool:
    return os.environ.get(FORK_ENV, "1").strip().lower() not in ("0", "no", "false", "off")


def refusal(args: list[str]) -> str | None:
    """Why a rank with these arguments cannot be forked from this interpreter, or None when it can."""
    if not fork_allowed():
        return f"{FORK_ENV}=0"
    torch = sys.modules.get("torch")
    version = getattr(torch, "version", None)
    if torch is None or version is None:
        return "torch is not imported here"
    if getattr(version, "cuda", None) or getattr(version, "hip", None):
        return "a torch build with a GPU runtime is not forked"
    device = args[6] if len(args) > 6 else "cpu"
    if device != "cpu":
        return f"ranks on {device} are not forked"
    if not hasattr(socket, "recv_fds") or not hasattr(os, "fork"):
        return "this platform cannot pass pipes to a forked rank"
    return None


def run_worker(args: list[str]) -> int:
    """Run commdoctor.probes.pg_worker here with ``args``; its exit status."""
    sys.argv = ["commdoctor.probes.pg_worker", *args]
    try:
        runpy.run_module("commdoctor.probes.pg_worker", run_name="__main__", alter_sys=True)
    except SystemExit as e:
        return e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    return 0


def _die_with_parent(parent: int) -> None:
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, 9, 0, 0, 0)  # SIGKILL when the forking process ends
    except (OSError, AttributeError):
        pass
    if os.getppid() != parent:  # it ended before the line above took effect
        os._exit(1)


def _fork(args: list[str], out_fd: int, err_fd: int, sock: socket.socket, env: dict[str, str] | None = None) -> int:
    parent = os.getpid()
    sys.stdout.flush()
    sys.stderr.flush()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # Python 3.12+: fork with torch's thread alive
        pid = os.fork()
    if pid:
        return pid
    code = 1
    try:
        _die_with_parent(parent)
        os.dup2(out_fd, 1)
        os.dup2(err_fd, 2)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        for fd in (null, out_fd, err_fd):
            os.close(fd)
        sock.close()
        if env is not None:  # the rank's own environment: without the launcher's variables (pg_init.child_env)
            os.environ.clear()
            os.environ.update(env)
        code = run_worker(args)
    except BaseException:  # noqa: BLE001 - the rank's stderr says what went wrong; the status says it ended
        traceback.print_exc()
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


def _send(sock: socket.socket, lock: threading.Lock, msg: dict[str, Any]) -> None:
    try:
        with lock:
            sock.sendall(json.dumps(msg).encode() + b"\n")
    except OSError:
        pass  # the parent is gone: nobody to tell


def _reap(pid: int, sock: socket.socket, lock: threading.Lock) -> None:
    try:
        _, status = os.waitpid(pid, 0)
    except ChildProcessError:
        return
    _send(sock, lock, {"pid": pid, "returncode": os.waitstatus_to_exitcode(status)})


def fork_requested(sock: socket.socket, wait: float | None = REQUEST_WAIT_S) -> list[threading.Thread]:
    """Answer the parent's requests until it says it is done: fork each rank it asks for, or say why not.
    ``wait``: how long to wait for the next request (None: until the parent says it is done or goes away)."""
    lock = threading.Lock()
    reapers: list[threading.Thread] = []
    sock.settimeout(wait)
    while True:
        try:
            msg, fds, _, _ = socket.recv_fds(sock, 1 << 16, 2)
        except OSError:  # timed out or closed: the parent gave up asking
            break
        try:
            req = json.loads(msg.decode() or "{}")
            if not req.get("args") or len(fds) != 2:
                break  # "done", or nothing usable
            why = refusal(req["args"])
            if why is not None:
                _send(sock, lock, {"pid": None, "why": why})
                continue
            env = req.get("env")
            pid = _fork(req["args"], fds[0], fds[1], sock, env if isinstance(env, dict) else None)
            t = threading.Thread(target=_reap, args=(pid, sock, lock), daemon=True)
            t.start()
            reapers.append(t)
            _send(sock, lock, {"pid": pid})
        finally:
            for fd in fds:
                os.close(fd)
    return reapers


def serve_forks(sock: socket.socket, parent: int) -> None:
    """The rank server (``pg_init.start_rank_server``), a fork of ``parent``: fork every rank the parent asks for
    until it says it is done or goes away, then wait for the ranks (their own timeouts bound them) and leave."""
    import signal

    _die_with_parent(parent)
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):  # not the command's handlers: a launcher's
        signal.signal(sig, signal.SIG_DFL)  # signal ends the server and its ranks
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):  # the launcher's console is not ours to write to
        os.dup2(null, fd)
    os.close(null)
    reapers = fork_requested(sock, wait=None)
    for t in reapers:
        t.join(600.0)


def serve(req: Any, sock_fd: int) -> int:
    """The probe's child, handed ``req`` on its stdin: fork the ranks the parent asks for, then run the first
    rank here and leave once every forked rank has ended. Returns this rank's exit status."""
    if isinstance(req, list):  # one rank, nothing to fork
        return run_worker([str(a) for a in req])
    args = [str(a) for a in req["args"]]
    reapers: list[threading.Thread] = []
    if req.get("fork") and sock_fd >= 0:
        try:
            sock = socket.socket(fileno=sock_fd)
        except OSError:
            sock = None
        if sock is not None:
            reapers = fork_requested(sock)
    try:
        return run_worker(args)
    finally:
        # A forked rank outlives this one for at most its own timeout; the parent's deadline kills us all.
        limit = float(args[4]) + 30.0 if len(args) > 4 else 60.0
        for t in reapers:
            t.join(limit)
