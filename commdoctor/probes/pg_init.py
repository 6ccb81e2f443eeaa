"""Start a real local process group in child processes, under a deadline.

Promise: ``run_local_group`` returns within ``timeout`` plus a few seconds,
whatever the ranks do (never arrive, hang in a collective, abort in C++). It
returns plain data: what each rank reported, its exit status and the tail of
its stderr, where backends write their own errors.
"""

from __future__ import annotations

import json
import os
import queue
import random
import signal
import socket
import subprocess
import sys
import threading
import time
from typing import Any, Sequence

from commdoctor.probes.proc import kill_group

DEFAULT_SIZES = (64 << 10, 1 << 20, 16 << 20)
LAUNCHER_PREFIXES = ("TORCHELASTIC_", "MASTER_", "GROUP_", "ROLE_")
#: What a launcher sets for the job's own process group; the local test is a group of its own.
LAUNCHER_VARS = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE")
_PKG_PARENT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


#: The lowest port free_port picks: above the well-known and most registered service ports.
LOW_PORT = 20000
_RNG = random.SystemRandom()


def free_port(host: str = "127.0.0.1") -> int:
    """A port nothing listens on for the local group's store, below the kernel's ephemeral range where it has room.

    Binding port 0 hands out a port of the ephemeral range (net.ipv4.ip_local_port_range), the range every outgoing
    connection on the host also takes its local port from: between this check and the store listening, any of them
    can take it and the store fails with EADDRINUSE. A port below the range is never given out that way."""
    from commdoctor.probes.net import ephemeral_range

    high = (ephemeral_range() or (32768, 60999))[0]
    for _ in range(100 if high - LOW_PORT >= 1000 else 0):
        port = _RNG.randrange(LOW_PORT, high)
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            try:
                s.bind((host, port))
            except OSError:
                continue
        return port
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def child_env(env: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of the local test's ranks: the launcher's variables out, this commdoctor importable."""
    child = dict(os.environ if env is None else env)
    # Under torchrun (or srun/mpirun) the launcher's variables would make the local ranks join the job's store
    # instead of their own: TORCHELASTIC_USE_AGENT_STORE turns even rank 0 into a client that nobody serves.
    for k in [k for k in child if k.startswith(LAUNCHER_PREFIXES) or k in LAUNCHER_VARS]:
        del child[k]
    child["PYTHONPATH"] = _PKG_PARENT + (os.pathsep + child["PYTHONPATH"] if child.get("PYTHONPATH") else "")
    child.setdefault("PYTHONUNBUFFERED", "1")
    return child


# -- the torch probe's interpreter, kept for rank 0 ---------------------------------------------------------
# `run` asks a child interpreter what torch has (importing torch takes seconds, more on a GPU host) and then
# starts the local test's ranks, each importing torch again. The probe's child can instead stay: once it has
# printed its facts it waits on its stdin, and the local test hands it rank 0's arguments, so one import
# less stands between the user and the verdict. A child nobody hands a rank to leaves when stdin closes
# (at the latest when this process ends).
_WARM_TAIL = r"""
sys.stdout.write(json.dumps(gather()) + "\n")
sys.stdout.flush()
line = sys.stdin.readline()
if not line.strip():
    sys.exit(0)
from commdoctor.probes.pg_fork import serve
sys.exit(serve(json.loads(line), int(sys.argv[1]) if len(sys.argv) > 1 else -1))
"""
_warm: list[tuple[subprocess.Popen[str], dict[str, str]]] = []
#: The parent's end of each kept child's socket (commdoctor.probes.pg_fork), by the child's pid.
_links: dict[int, socket.socket] = {}
_warm_lock = threading.Lock()


def _close_warm() -> None:
    with _warm_lock:
        kept = list(_warm)
        _warm.clear()
        for link in _links.values():
            link.close()
        _links.clear()
    for p, _ in kept:
        try:
            if p.stdin is not None:
                p.stdin.close()  # the child reads EOF and leaves
            p.wait(timeout=2)
        except (OSError, subprocess.TimeoutExpired):
            kill_group(p)


def probe_torch_and_stay(code: str, timeout: float) -> tuple[int | None, str, str, bool]:
    """Run the torch probe ``code`` (which defines ``gather()``) in a child that stays for rank 0.

    Returns (exit status or None while it runs on, its facts line, its stderr when it ended, timed out), as
    ``run_bounded`` would; a child that answered is kept for ``run_local_group``.
    """
    env = child_env()
    link: socket.socket | None = None
    theirs: socket.socket | None = None
    try:
        link, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    except (OSError, AttributeError):
        pass
    try:
        argv = [sys.executable, "-c", code + _WARM_TAIL] + ([str(theirs.fileno())] if theirs is not None else [])
        p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             errors="replace", env=env, start_new_session=True,
                             pass_fds=(theirs.fileno(),) if theirs is not None else ())
    except OSError as e:
        for s in (link, theirs):
            if s is not None:
                s.close()
        return None, "", f"{type(e).__name__}: {e}", False
    finally:
        if theirs is not None:
            theirs.close()
    got: queue.Queue[str] = queue.Queue()
    assert p.stdout is not None
    threading.Thread(target=lambda: got.put(p.stdout.readline() if p.stdout else ""), daemon=True).start()
    try:
        line = got.get(timeout=timeout)
    except queue.Empty:
        kill_group(p)
        p.wait(timeout=5)
        return p.returncode, "", "", True
    if not line.strip():  # it ended without facts: what it printed says why
        if link is not None:
            link.close()
        try:
            out, err = p.communicate(timeout=5)
        except subprocess.TimeoutExpired:
            kill_group(p)
            out, err = p.communicate()
        return p.returncode, out or "", err or "", False
    with _warm_lock:
        first = not _warm
        _warm.append((p, env))
        if link is not None:
            _links[p.pid] = link
    if first:
        import atexit

        atexit.register(_close_warm)
    return None, line, "", False


_pending: list[threading.Thread] = []
#: The rank server forked by this process (``start_rank_server``): its pid and the link to it.
_server: dict[str, Any] = {}


def start_rank_server() -> bool:
    """Under a launcher, where this process imports torch anyway (for the job's store): import it now, while this
    process has no thread of its own yet, and fork a server that forks the local test's ranks later (a CPU build
    of torch only; commdoctor.probes.pg_fork). The test then costs no torch import at all. False where it did
    not start (a GPU build, threads running, torch missing or broken): the ranks then start as before."""
    from commdoctor.probes.pg_fork import fork_allowed

    if _server or threading.active_count() != 1 or not hasattr(os, "fork") or not hasattr(socket, "send_fds") \
            or not fork_allowed():
        return False
    try:
        import torch
        import torch.distributed  # noqa: F401 - what every rank imports, loaded once here
    except BaseException:  # noqa: BLE001 - a broken torch is for the checks to report, not this speed-up
        return False
    if torch.version.cuda or getattr(torch.version, "hip", None):
        return False  # forking a process that may start a GPU runtime is unsafe: ranks start as interpreters
    try:
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    except OSError:
        return False
    parent = os.getpid()
    sys.stdout.flush()
    sys.stderr.flush()
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # Python 3.12+: torch's own thread is alive
        pid = os.fork()
    if pid == 0:  # the server: never returns into the command
        code = 0
        try:
            mine.close()
            from commdoctor.probes.pg_fork import serve_forks

            serve_forks(theirs, parent)
        except BaseException:  # noqa: BLE001 - nobody to tell; the parent falls back to new interpreters
            code = 1
        finally:
            os._exit(code)
    theirs.close()
    _server.update(pid=pid, link=_Link(mine))
    import atexit

    atexit.register(_stop_server)
    return True


def _stop_server() -> None:
    link = _server.pop("link", None)
    pid = _server.pop("pid", None)
    if link is not None:
        link.done()
        link.sock.close()
    if pid is not None:
        try:
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            pass


def keep_one_in_background(code: str, timeout: float) -> None:
    """Start a child as ``probe_torch_and_stay`` does without waiting for it: for a process that has torch's facts
    already (under a launcher) and whose local test still needs an interpreter with torch imported."""
    if _server:
        return  # the rank server forks every rank: no interpreter to keep
    t = threading.Thread(target=probe_torch_and_stay, args=(code, timeout), name="commdoctor-keep-warm", daemon=True)
    with _warm_lock:
        _pending.append(t)
    t.start()


def _take_warm(env: dict[str, str], wait: float = 0.0) -> subprocess.Popen[str] | None:
    """A kept probe child started with ``env`` and still waiting, or None; waits up to ``wait`` s for one still
    importing torch (started by ``keep_one_in_background``): starting a new interpreter would take as long."""
    with _warm_lock:
        pending = list(_pending)
        _pending.clear()
    end = time.monotonic() + wait
    for t in pending:
        t.join(max(0.0, end - time.monotonic()))
    with _warm_lock:
        for p, _ in _warm:
            if p.poll() is not None:  # gone (killed, crashed): forget it
                link = _links.pop(p.pid, None)
                if link is not None:
                    link.close()
        _warm[:] = [(p, penv) for p, penv in _warm if p.poll() is None]
        for i, (p, penv) in enumerate(_warm):
            if penv == env:
                del _warm[i]
                return p
    return None


class _Link:
    """The parent's end of a socket to a process that forks ranks (a kept child, the rank server): asks it to
    fork ranks, and hears when they end."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.buf = b""
        self.ended: dict[int, int] = {}  # pid -> exit status, as the forking process's waitpid gave it
        self.replies: list[dict[str, Any]] = []  # answers to fork requests, in order
        self.closed = False
        self.lock = threading.Lock()

    def _pump(self, timeout: float) -> None:
        """Take in what the other side has sent, waiting up to ``timeout`` for something to come."""
        try:
            self.sock.settimeout(timeout if timeout > 0 else 0.0)
            data = self.sock.recv(1 << 16)
        except (BlockingIOError, socket.timeout):
            return
        except OSError:
            data = b""
        if not data:
            self.closed = True
            return
        self.buf += data
        while b"\n" in self.buf:
            raw, self.buf = self.buf.split(b"\n", 1)
            try:
                msg = json.loads(raw)
            except ValueError:
                continue
            if "returncode" in msg:
                self.ended[int(msg["pid"])] = int(msg["returncode"])
            else:
                self.replies.append(msg)

    def fork(self, args: list[str], out_w: int, err_w: int, env: dict[str, str] | None = None,
             timeout: float = 10.0) -> tuple[int | None, str]:
        """Ask for one rank with ``args`` and environment ``env`` writing to these pipes; (its pid, "") or (None,
        why not)."""
        with self.lock:
            if self.closed:
                return None, "the forking process is gone"
            try:
                socket.send_fds(self.sock, [json.dumps({"args": args, "env": env}).encode()], [out_w, err_w])
            except (OSError, AttributeError) as e:
                return None, f"{type(e).__name__}: {e}"
            end = time.monotonic() + timeout
            while not self.replies and not self.closed and time.monotonic() < end:
                self._pump(max(0.0, min(0.5, end - time.monotonic())))
            if not self.replies:
                # No answer in time: whatever it does later, this link is not asked again.
                self.closed = True
                return None, "the forking process did not answer"
            msg = self.replies.pop(0)
            return (int(msg["pid"]), "") if msg.get("pid") else (None, str(msg.get("why") or "refused"))

    def done(self) -> None:
        with self.lock:
            try:
                socket.send_fds(self.sock, [b"{}"], [])
            except (OSError, AttributeError):
                pass

    def status(self, pid: int) -> int | None:
        with self.lock:
            if pid not in self.ended and not self.closed:
                self._pump(0)
            return self.ended.get(pid)


class _ForkedRank:
    """A rank forked by the kept child: what ``run_local_group`` uses of a Popen (pid, pipes, poll, wait, kill)."""

    def __init__(self, pid: int, link: _Link, out_r: int, err_r: int) -> None:
        self.pid = pid
        self.link = link
        self.stdout = open(out_r, encoding="utf-8", errors="replace")  # noqa: SIM115 - closed with the rank
        self.stderr = open(err_r, encoding="utf-8", errors="replace")  # noqa: SIM115
        self.returncode: int | None = None
        self.killed = False

    def _gone(self) -> bool:
        try:
            with open(f"/proc/{self.pid}/stat", "rb") as f:
                return f.read().rsplit(b")", 1)[-1].split()[0] in (b"Z", b"X")
        except OSError:
            return True

    def poll(self) -> int | None:
        if self.returncode is None:
            rc = self.link.status(self.pid)
            if rc is not None:
                self.returncode = rc
            elif self.link.closed and self._gone():  # its forking process ended first and took it along
                self.returncode = -signal.SIGKILL
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        end = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if end is not None and time.monotonic() > end:
                raise subprocess.TimeoutExpired(f"forked rank {self.pid}", timeout or 0.0)
            time.sleep(0.05)
        assert self.returncode is not None
        return self.returncode

    def kill(self) -> None:
        self.killed = True
        try:
            os.kill(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def _fork_ranks(warm: subprocess.Popen[str], rest: list[list[str]], env: dict[str, str]) -> list[_ForkedRank | None]:
    """Ask the kept child ``warm`` to fork a rank for each of ``rest``; None where it did not."""
    with _warm_lock:
        sock = _links.pop(warm.pid, None)
    if sock is None:
        return [None] * len(rest)
    link = _Link(sock)
    got: list[_ForkedRank | None] = []
    for args in rest:
        if got and got[-1] is None:  # refused once (why is the same for the rest): start them as before
            got.append(None)
            continue
        got.append(_fork_one(link, args, env))
    link.done()
    return got


def _fork_one(link: _Link, args: list[str], env: dict[str, str]) -> _ForkedRank | None:
    """One rank with ``args`` and ``env`` forked over ``link``, on pipes of its own; None where that did not happen."""
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    pid, _why = link.fork(args, out_w, err_w, env)
    os.close(out_w)
    os.close(err_w)
    if pid is None:
        os.close(out_r)
        os.close(err_r)
        return None
    return _ForkedRank(pid, link, out_r, err_r)


def _reader(stream: Any, rank: int, kind: str, q: queue.Queue[tuple[int, str, str | None]]) -> None:
    for line in iter(stream.readline, ""):
        q.put((rank, kind, line))
    q.put((rank, kind, None))


def run_local_group(
    backend: str = "gloo",
    world_size: int = 2,
    timeout: float = 60.0,
    sizes: Sequence[int] = DEFAULT_SIZES,
    start_ranks: Sequence[int] | None = None,
    env: dict[str, str] | None = None,
    device: str | None = None,
) -> dict[str, Any]:
    """Run commdoctor's process-group test; ``start_ranks`` leaves the others out (fault injection)."""
    port = free_port()
    init_method = f"tcp://127.0.0.1:{port}"
    ranks = list(range(world_size)) if start_ranks is None else list(start_ranks)
    # The ranks' own timeout stays inside ours, so that they report before we kill them.
    rank_timeout = max(5.0, timeout - 5.0)
    cenv = child_env(env)
    q: queue.Queue[tuple[int, str, str | None]] = queue.Queue()
    procs: dict[int, Any] = {}  # a Popen, or a _ForkedRank (the same few methods)
    device = device or ("cuda" if backend == "nccl" else "cpu")
    out: dict[str, Any] = {
        "backend": backend, "device": device, "world_size": world_size, "init_method": init_method, "started_ranks": ranks,
        "timeout_s": timeout, "ranks": {}, "timed_out": False,
    }
    warm = _take_warm(cenv, wait=max(5.0, timeout / 2))
    start = time.monotonic()
    argsets = {r: [str(r), str(world_size), backend, init_method, str(rank_timeout), ",".join(str(s) for s in sizes),
                   device] for r in ranks}
    forked: dict[int, _ForkedRank] = {}
    if _server and ranks:  # every rank forked by the rank server (start_rank_server), where it can
        link: _Link = _server["link"]
        for r in ranks:
            f = _fork_one(link, argsets[r], cenv)
            if f is None:
                break
            forked[r] = f
    for r in ranks:
        p: Any = forked.get(r)
        if p is None and warm is not None and not forked:  # the torch probe's interpreter, torch imported already, takes the first rank
            try:
                assert warm.stdin is not None
                rest = [x for x in ranks if x != r]
                warm.stdin.write(json.dumps({"args": argsets[r], "fork": bool(rest)}) + "\n")
                warm.stdin.close()
                p = warm
                # and forks the others where that is safe (a CPU build of torch: commdoctor.probes.pg_fork)
                for x, f in zip(rest, _fork_ranks(warm, [argsets[x] for x in rest], cenv) if rest else []):
                    if f is not None:
                        forked[x] = f
            except (OSError, ValueError):
                kill_group(warm)
            warm = None
        try:
            if p is None:
                p = subprocess.Popen([sys.executable, "-m", "commdoctor.probes.pg_worker", *argsets[r]],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
                                     errors="replace", env=cenv, start_new_session=True)
        except OSError as e:
            out["ranks"][str(r)] = {"events": [], "returncode": None, "stderr": [f"could not start: {e}"]}
            continue
        procs[r] = p
        out["ranks"][str(r)] = {"events": [], "returncode": None, "stderr": [], "pid": p.pid}
        if r in forked:
            out["ranks"][str(r)]["forked"] = True
        for stream, kind in ((p.stdout, "out"), (p.stderr, "err")):
            threading.Thread(target=_reader, args=(stream, r, kind, q), daemon=True).start()

    if warm is not None:  # no rank to hand it (none was started)
        kill_group(warm)
    open_streams = 2 * len(procs)
    first_error_at: float | None = None
    deadline = start + timeout
    while open_streams and time.monotonic() < deadline:
        # Once a rank has failed, its peers get a short grace period to report theirs.
        if first_error_at is not None and time.monotonic() > first_error_at + 5.0:
            break
        try:
            rank, kind, line = q.get(timeout=0.1)
        except queue.Empty:
            continue
        if line is None:
            open_streams -= 1
            continue
        rec = out["ranks"][str(rank)]
        if kind == "err":
            rec["stderr"].append(line.rstrip("\n"))
            del rec["stderr"][:-60]
            continue
        try:
            ev = json.loads(line)
        except ValueError:
            rec["stderr"].append(line.rstrip("\n"))
            continue
        rec["events"].append(ev)
        if ev.get("event") == "error" and first_error_at is None:
            first_error_at = time.monotonic()
    # Still-open streams without an error reported mean the ranks ran into our deadline.
    out["timed_out"] = bool(open_streams) and first_error_at is None
    for r, p in procs.items():
        if p.poll() is None:
            kill_group(p)
            out["ranks"][str(r)]["killed"] = True
        try:
            p.wait(timeout=3)
        except subprocess.TimeoutExpired:
            pass
        out["ranks"][str(r)]["returncode"] = p.returncode
    # Drain what arrived while we stopped them.
    while True:
        try:
            rank, kind, line = q.get_nowait()
        except queue.Empty:
            break
        if line is None:
            continue
        rec = out["ranks"][str(rank)]
        if kind == "err":
            rec["stderr"].append(line.rstrip("\n"))
        else:
            try:
                rec["events"].append(json.loads(line))
            except ValueError:
                rec["stderr"].append(line.rstrip("\n"))
    for f in forked.values():
        if f.link is not _server.get("link"):
            f.link.sock.close()
    out["elapsed_s"] = time.monotonic() - start
    return out
