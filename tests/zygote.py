"""Start a job's ranks by forking an interpreter that has imported torch already (tests only).

Every rank of a test job is a Python process that imports torch: about 1.5 s of CPU each, most of
the suite's CPU. A zygote imports torch once per test worker and forks a rank per request; the
fork runs the rank's script as ``python SCRIPT ARGS`` would (its argv, environment, working
folder, stdin/stdout/stderr), so each rank is still a real process with its own real process
group over real sockets, as torch.multiprocessing's fork start method gives. What differs from a
fresh interpreter: modules torch imported are already loaded, and /proc/PID/cmdline is the
zygote's, so tests that find jobs by their command line (``hang``) start their ranks fresh.

A zygote can also live somewhere else: ``spawn(..., zygote=KEY, wrap=FN)`` starts zygote KEY with
``FN(its command line)``, e.g. inside a network namespace and UTS namespace (tests/netlab.py), so the
ranks it forks are on that "host"; ``stop(KEY)`` ends it and its ranks before the namespace goes.

``spawn(argv, env=..., cwd=..., stdin=..., stdout=..., stderr=...)`` returns a ``Rank`` that acts
as the ``subprocess.Popen`` it replaces (pid, poll, wait, communicate, kill, returncode; text
pipes). Where the zygote cannot start, ``spawn`` falls back to ``subprocess.Popen``.

The zygote itself (``python tests/zygote.py SOCKET``) is single-threaded when it forks: it serves
one Unix socket, and each connection carries one request (JSON, then the three descriptors) and,
later, the rank's exit status. It leaves when its parent (the test worker) is gone.
"""

from __future__ import annotations

import atexit
import json
import os
import select
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import IO, Any, Callable, Sequence

HERE = Path(__file__).resolve().parent

# -- the zygote's side ---------------------------------------------------------------------------------


def _run_rank(argv: list[str], env: dict[str, str], cwd: str) -> int:
    """In the forked child: become ``python *argv`` and return its exit status."""
    import runpy

    os.chdir(cwd)
    os.environ.clear()
    os.environ.update(env)
    script = argv[0]
    sys.argv = list(argv)
    extra = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    sys.path[:] = [os.path.dirname(os.path.abspath(script))] + extra + [p for p in sys.path[1:] if p not in extra]
    if env.get("PYTHONUNBUFFERED"):
        sys.stdout.reconfigure(line_buffering=True, write_through=True)
        sys.stderr.reconfigure(line_buffering=True, write_through=True)
    try:
        runpy.run_path(script, run_name="__main__")
        code = 0
    except SystemExit as e:
        c = e.code
        code = c if isinstance(c, int) else (0 if c is None else 1)
        if not isinstance(c, int) and c is not None:
            print(c, file=sys.stderr)
    except BaseException:  # noqa: BLE001 - what the interpreter would print, then its status
        import traceback

        traceback.print_exc()
        code = 1
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        pass
    return code


def _recv_request(conn: socket.socket) -> tuple[dict[str, Any], list[int]]:
    head = b""
    while len(head) < 4:
        chunk = conn.recv(4 - len(head))
        if not chunk:
            raise EOFError
        head += chunk
    n = struct.unpack("!I", head)[0]
    body, fds, _, _ = socket.recv_fds(conn, n, 3)
    while len(body) < n:
        more = conn.recv(n - len(body))
        if not more:
            raise EOFError
        body += more
    return json.loads(body), list(fds)


def serve(path: str) -> None:
    import torch  # noqa: F401 - what every rank would import: once, here
    import torch.distributed  # noqa: F401
    import torch.nn  # noqa: F401

    parent = os.getppid()
    lsock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    lsock.bind(path)
    lsock.listen(64)
    print("ready", flush=True)
    waiting: dict[int, socket.socket] = {}  # child pid -> the connection that asked for it
    while os.getppid() == parent:
        ready, _, _ = select.select([lsock], [], [], 0.05)
        if ready:
            conn, _ = lsock.accept()
            try:
                req, fds = _recv_request(conn)
            except (EOFError, OSError, ValueError):
                conn.close()
                continue
            sys.stdout.flush()
            sys.stderr.flush()
            pid = os.fork()
            if pid == 0:  # the rank
                code = 1
                try:
                    if req.get("session"):  # a process group of its own, as Popen(start_new_session=True) gives
                        os.setsid()
                    lsock.close()
                    for c in waiting.values():
                        c.close()
                    conn.close()
                    for target, fd in zip((0, 1, 2), fds):
                        os.dup2(fd, target)
                    for fd in fds:
                        if fd > 2:
                            os.close(fd)
                    code = _run_rank(req["argv"], req["env"], req["cwd"])
                finally:
                    os._exit(code)
            for fd in fds:
                os.close(fd)
            conn.sendall(struct.pack("!i", pid))
            waiting[pid] = conn
        while waiting:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            conn = waiting.pop(pid, None)
            if conn is not None:
                try:
                    conn.sendall(struct.pack("!i", os.waitstatus_to_exitcode(status)))
                except OSError:
                    pass
                conn.close()
    for pid in list(waiting):  # the worker is gone: so are its ranks
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


# -- the test's side -----------------------------------------------------------------------------------


class Rank:
    """A forked rank, used as the ``subprocess.Popen`` it stands for."""

    def __init__(self, pid: int, conn: socket.socket, args: list[str], stdin: IO[Any] | None,
                 stdout: IO[Any] | None, stderr: IO[Any] | None) -> None:
        self.pid, self.args, self._conn = pid, args, conn
        self.stdin, self.stdout, self.stderr = stdin, stdout, stderr
        self.returncode: int | None = None

    def _status(self, timeout: float | None) -> int | None:
        if self.returncode is not None:
            return self.returncode
        ready, _, _ = select.select([self._conn], [], [], timeout)
        if not ready:
            return None
        data = b""
        while len(data) < 4:
            chunk = self._conn.recv(4 - len(data))
            if not chunk:  # the zygote went away without a status: the rank was killed with it
                self.returncode = -signal.SIGKILL
                break
            data += chunk
        else:
            self.returncode = struct.unpack("!i", data)[0]
        self._conn.close()
        return self.returncode

    def poll(self) -> int | None:
        return self._status(0)

    def wait(self, timeout: float | None = None) -> int:
        rc = self._status(timeout)
        if rc is None:
            raise subprocess.TimeoutExpired(self.args, timeout or 0)
        return rc

    def communicate(self, input: Any = None, timeout: float | None = None) -> tuple[Any, Any]:
        """Read stdout and stderr to their ends and wait, as Popen.communicate does (no ``input``)."""
        if not hasattr(self, "_readers"):
            self._out: dict[str, list[Any]] = {"stdout": [], "stderr": []}
            self._readers = []
            if self.stdin is not None:
                self.stdin.close()
            for name in ("stdout", "stderr"):
                stream = getattr(self, name)
                if stream is not None:
                    t = threading.Thread(target=lambda s=stream, n=name: self._out[n].append(s.read()), daemon=True)
                    t.start()
                    self._readers.append(t)
        deadline = None if timeout is None else time.monotonic() + timeout
        for t in self._readers:
            t.join(None if deadline is None else max(0.0, deadline - time.monotonic()))
            if t.is_alive():
                raise subprocess.TimeoutExpired(self.args, timeout or 0)
        self.wait(None if deadline is None else max(0.0, deadline - time.monotonic()))
        got = tuple(("".join(self._out[n]) if self._out[n] else None) if getattr(self, n) is not None else None
                    for n in ("stdout", "stderr"))
        return got[0], got[1]

    def send_signal(self, sig: int) -> None:
        if self.returncode is None:
            try:
                os.kill(self.pid, sig)
            except ProcessLookupError:
                pass

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)



_lock = threading.Lock()
_zygotes: dict[str, dict[str, Any]] = {}


def _start(key: str = "", wrap: Callable[[list[str]], list[str]] | None = None) -> str | None:
    """The socket of this process's zygote ``key``, started on first use; None where it cannot start.

    ``wrap`` turns the zygote's command line into the one that starts it somewhere else, e.g. inside a network
    namespace (``ip netns exec NS ...``, tests/netlab.py): the ranks it forks are then in that namespace."""
    with _lock:
        z = _zygotes.get(key)
        if z is not None:
            return str(z["path"]) if z["proc"].poll() is None else None
        folder = tempfile.mkdtemp(prefix="cd-zygote-")
        path = os.path.join(folder, "s")
        env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "PYTHONPATH": str(HERE.parent)}
        cmd = [sys.executable, str(HERE / "zygote.py"), path]
        proc = subprocess.Popen(wrap(cmd) if wrap else cmd, stdout=subprocess.PIPE, stdin=subprocess.DEVNULL, env=env,
                                text=True)
        _zygotes[key] = {"path": path, "proc": proc}
        atexit.register(_stop, proc)
        ready, _, _ = select.select([proc.stdout], [], [], 120)
        line = proc.stdout.readline() if ready and proc.stdout else ""
        if line.strip() != "ready":
            proc.kill()
            return None
        return path


def warm(key: str = "", wrap: Callable[[list[str]], list[str]] | None = None) -> bool:
    """Start zygote ``key`` now (torch imported, seconds under load) rather than on the first spawn: ranks that must
    start together then fork within milliseconds of each other. False where it cannot start (spawn falls back)."""
    return _start(key, wrap) is not None


def stop(key: str) -> None:
    """Stop zygote ``key`` (and every rank it forked that still runs) now, e.g. before its namespace goes."""
    with _lock:
        z = _zygotes.pop(key, None)
    if z is not None:
        _stop(z["proc"])


def _stop(proc: subprocess.Popen[str]) -> None:
    """Kill the zygote and reap it, so that its CPU (and its ranks') counts as this process's children's."""
    proc.kill()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        pass


def _end(fd: Any, mode: str) -> tuple[int | None, IO[Any] | None]:
    """(descriptor for the rank, our end of a pipe or None) for a Popen-style stdin/stdout/stderr value."""
    if fd == subprocess.PIPE:
        r, w = os.pipe()
        mine, theirs = (w, r) if mode == "w" else (r, w)
        return theirs, os.fdopen(mine, mode, encoding="utf-8", errors="replace")
    if fd is None or fd == subprocess.DEVNULL:
        return os.open(os.devnull, os.O_RDWR), None
    return (fd if isinstance(fd, int) else fd.fileno()), None


def spawn(argv: Sequence[str], env: dict[str, str] | None = None, cwd: str | None = None, stdin: Any = None,
          stdout: Any = None, stderr: Any = None, start_new_session: bool = False, zygote: str = "",
          wrap: Callable[[list[str]], list[str]] | None = None) -> Any:
    """``subprocess.Popen([sys.executable, *argv], ..., text=True)``, forked from the zygote where it runs.

    ``None`` for a stream means DEVNULL here (a rank's output never goes to the test's terminal).
    ``zygote``/``wrap``: which zygote, and how it is started (``_start``); the fallback Popen uses ``wrap`` too."""
    args = [sys.executable, *argv]
    path = _start(zygote, wrap)
    if path is None:
        return subprocess.Popen(wrap(args) if wrap else args, env=env, cwd=cwd,
                                stdin=stdin if stdin is not None else subprocess.DEVNULL, stdout=stdout, stderr=stderr,
                                text=True, start_new_session=start_new_session)
    ends = [_end(stdin, "w"), _end(stdout, "r"), _end(stderr, "r")]
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.connect(path)
        body = json.dumps({"argv": list(argv), "env": dict(os.environ if env is None else env),
                           "cwd": cwd or os.getcwd(), "session": start_new_session}).encode()
        conn.sendall(struct.pack("!I", len(body)))
        socket.send_fds(conn, [body], [e[0] for e in ends])
        data = b""
        while len(data) < 4:
            chunk = conn.recv(4 - len(data))
            if not chunk:
                raise OSError("the zygote closed the connection")
            data += chunk
        pid = struct.unpack("!i", data)[0]
    finally:
        for (theirs, _), given in zip(ends, (stdin, stdout, stderr)):
            if given in (subprocess.PIPE, None, subprocess.DEVNULL) and theirs is not None:
                os.close(theirs)
    return Rank(pid, conn, args, ends[0][1], ends[1][1], ends[2][1])


if __name__ == "__main__":
    serve(sys.argv[1])
