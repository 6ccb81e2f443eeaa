"""Launch a job with diagnosis switched on, and notice when it stops making progress.

Promise: ``prepare_env`` says exactly which variables it set (it never
overrides one the user set). ``Watcher`` starts the command in its own
session, finds its ranks (descendants with RANK in their environment), and
``wait_for_stall`` returns once no progress was seen for ``hang_after``
seconds, or None when the job ended. Progress is, in order of precision:
hooks records (last completed collective per rank), the in-process agent's
flight-recorder status (last completed collective per group and rank), and
otherwise the ranks' stacks sampled with py-spy (a rank whose stack does not
change). Every wait is bounded by the job's life and ``interval``;
``kill`` ends the job's whole process tree by pid.
"""

from __future__ import annotations

import glob
import json
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import IO, Any, Mapping, Sequence

import psutil

from commdoctor.loaders.flight_recorder import rank_from_name
from commdoctor.probes.procs import inspect_pid

AGENT_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "agent")


def hooks_env() -> dict[str, str]:
    """The variables that switch commdoctor.hooks on, when that package is installed.

    The hooks module is written separately; it names its switch (if it has one)
    in ``ENV_SWITCH`` / ``ENV_ENABLE``. Only importing it is attempted here.
    """
    try:
        import importlib

        hooks = importlib.import_module("commdoctor.hooks")
    except Exception:  # noqa: BLE001 - absent or broken: run without hooks
        return {}
    out: dict[str, str] = {}
    for name in ("ENV_SWITCH", "ENV_ENABLE", "ENV_AUTO"):
        var = getattr(hooks, name, None)
        if isinstance(var, str) and var:
            out[var] = "1"
    return out


def prepare_env(base: Mapping[str, str], watch_dir: str, agent: bool = True) -> tuple[dict[str, str], dict[str, str]]:
    """(environment for the job, the variables commdoctor set in it)."""
    from commdoctor.core.records import ENV_DIR

    env = dict(base)
    wanted: dict[str, str] = {
        "NCCL_DEBUG": "INFO",
        "NCCL_DEBUG_FILE": os.path.join(watch_dir, "logs", "nccl.%h.%p.log"),
        "TORCH_FR_BUFFER_SIZE": "2000",
        "TORCH_FR_DUMP_TEMP_FILE": os.path.join(watch_dir, "fr-torch", "nccl_trace_rank_"),
        "COMMDOCTOR_WATCH_DIR": watch_dir,
    }
    h = hooks_env()
    if h:
        wanted[ENV_DIR] = os.path.join(watch_dir, "records")
        wanted.update(h)
    set_: dict[str, str] = {}
    for k, v in wanted.items():
        if k not in env:
            env[k] = v
            set_[k] = v
    if agent:
        env["PYTHONPATH"] = AGENT_DIR + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        set_["PYTHONPATH"] = AGENT_DIR + " (prepended: commdoctor's agent, loaded as sitecustomize)"
    for sub in ("logs", "fr", "fr-torch", "progress", "records"):
        os.makedirs(os.path.join(watch_dir, sub), exist_ok=True)
    return env, set_


@dataclass
class Stall:
    stalled_s: float  # seconds without progress when noticed
    signal: str  # what progress was measured by
    pids: list[int] = field(default_factory=list)
    noticed_at: float = 0.0  # monotonic


class Watcher:
    def __init__(self, argv: Sequence[str], watch_dir: str, hang_after: float, interval: float | None = None,
                 agent: bool = True, env: Mapping[str, str] | None = None, stdout: IO[Any] | int | None = None,
                 stack_timeout: float = 5.0, capture: str | None = None) -> None:
        self.argv = list(argv)
        self.watch_dir = os.path.abspath(watch_dir)
        self.hang_after = hang_after
        self.interval = interval if interval is not None else max(0.5, min(2.0, hang_after / 5))
        self.env, self.env_set = prepare_env(env if env is not None else os.environ, self.watch_dir, agent)
        self.stdout = stdout
        self.stack_timeout = stack_timeout
        self.proc: subprocess.Popen[bytes] | None = None
        self.started_at = 0.0
        #: A file that receives a copy of everything the job writes (its stdout and stderr as they come), passed on
        #: unchanged where they would have gone. Only asked for where those are no terminal, so the job sees the same
        #: kind of file descriptor (a pipe or a file: not a tty) with or without the copy.
        self.capture = capture
        self._copiers: list[threading.Thread] = []

    # -- the job ------------------------------------------------------------------------

    def start(self) -> subprocess.Popen[bytes]:
        self.started_at = time.monotonic()
        if self.capture is None:
            self.proc = subprocess.Popen(self.argv, env=self.env, stdout=self.stdout, stdin=subprocess.DEVNULL,
                                         start_new_session=True)
            return self.proc
        out_fd = self.stdout if isinstance(self.stdout, int) else (self.stdout.fileno() if self.stdout is not None
                                                                   else sys.stdout.fileno())
        sink = open(self.capture, "ab")  # noqa: SIM115 - closed by the last copier
        self.proc = subprocess.Popen(self.argv, env=self.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     stdin=subprocess.DEVNULL, start_new_session=True)
        lock = threading.Lock()
        left = [2]

        def copy(src: IO[bytes], dst_fd: int) -> None:
            try:
                while True:
                    chunk = os.read(src.fileno(), 65536)
                    if not chunk:
                        break
                    try:
                        os.write(dst_fd, chunk)
                    except OSError:
                        pass  # our own output closed: the job's copy in the file goes on
                    with lock:
                        sink.write(chunk)
                        sink.flush()
            finally:
                src.close()
                with lock:
                    left[0] -= 1
                    if not left[0]:
                        sink.close()

        assert self.proc.stdout is not None and self.proc.stderr is not None
        self._copiers = [threading.Thread(target=copy, args=(self.proc.stdout, out_fd), daemon=True),
                         threading.Thread(target=copy, args=(self.proc.stderr, sys.stderr.fileno()), daemon=True)]
        for t in self._copiers:
            t.start()
        return self.proc

    def drain(self, timeout: float = 5.0) -> None:
        """Wait (bounded) for the copies of the job's output to reach the capture file: a process that outlives the
        job (a daemon holding the pipe) does not hold commdoctor."""
        end = time.monotonic() + timeout
        for t in self._copiers:
            t.join(max(0.0, end - time.monotonic()))

    def tree(self) -> list[psutil.Process]:
        if self.proc is None:
            return []
        try:
            root = psutil.Process(self.proc.pid)
            return [root, *root.children(recursive=True)]
        except psutil.NoSuchProcess:
            return []

    def workers(self) -> list[int]:
        """The ranks: processes of the job with RANK / LOCAL_RANK set, without their helpers."""
        infos = [inspect_pid(p.pid) for p in self.tree()]
        ranks = [i for i in infos if i.role == "worker"]
        by_pid = {i.pid: i for i in ranks}
        top = [i for i in ranks if not (i.ppid in by_pid and by_pid[i.ppid].rank == i.rank)]
        if not top and self.proc is not None and infos:
            # A single process without RANK: that process is the job.
            return [self.proc.pid]
        return [i.pid for i in sorted(top, key=lambda i: (i.rank if i.rank is not None else 1 << 30, i.pid))]

    def kill(self, sig: int = signal.SIGKILL) -> None:
        for p in reversed(self.tree()):
            try:
                p.send_signal(sig)
            except psutil.NoSuchProcess:
                pass
        if self.proc is not None:
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass

    def interrupt(self, grace: float = 10.0) -> None:
        """Ctrl-C for the job (its own session does not get the terminal's)."""
        if self.proc is None or self.proc.poll() is not None:
            return
        try:
            os.killpg(self.proc.pid, signal.SIGINT)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            self.proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            self.kill()

    # -- progress -------------------------------------------------------------------------

    def _heartbeats(self) -> tuple[Any, ...] | None:
        sig = []
        for f in sorted(glob.glob(os.path.join(self.watch_dir, "progress", "rank*.json"))):
            try:
                with open(f, encoding="utf-8") as fh:
                    d = json.load(fh)
            except (OSError, ValueError):
                continue
            status = d.get("pg_status") or {}
            if not status:
                continue
            sig.append((d.get("rank"), tuple(sorted((str(g), str(s.get("last_completed_collective")),
                                                     str(s.get("last_enqueued_collective")))
                                                    for g, s in status.items() if isinstance(s, dict)))))
        return tuple(sig) if sig else None

    def _records(self) -> tuple[Any, ...] | None:
        from commdoctor.core.records import read_progress

        d = os.path.join(self.watch_dir, "records")
        if not os.path.isdir(d) or not os.listdir(d):
            return None
        prog = read_progress([d])
        sig = tuple((r, (p.last_completed.group, p.last_completed.seq) if p.last_completed else None,
                     (p.last_entered.group, p.last_entered.seq) if p.last_entered else None)
                    for r, p in sorted(prog.items()))
        return sig or None

    def _stacks(self, pids: Sequence[int]) -> tuple[Any, ...] | None:
        from commdoctor.probes.stacks import take_stacks

        if not pids:
            return None
        res = take_stacks(pids, timeout=self.stack_timeout)
        sig = []
        for pid in pids:
            r = res.get(pid)
            main = r.stack.main if r is not None and r.stack is not None else None
            frames = tuple((f.function, f.file, f.line) for f in main.frames) if main else None
            sig.append((pid, frames))
        return tuple(sig)

    def sample(self, pids: Sequence[int]) -> tuple[str, tuple[Any, ...] | None]:
        """(what progress is measured by, a value that changes when the job progresses)."""
        rec = self._records()
        hb = self._heartbeats()
        if rec is not None or hb is not None:
            kinds = [k for k, v in (("hooks records", rec), ("flight-recorder status", hb)) if v is not None]
            return " and ".join(kinds), (rec, hb)
        return "stacks sampled with py-spy", self._stacks(pids)

    def wait_for_stall(self, on_sample: Any = None) -> Stall | None:
        """Block until no progress for ``hang_after`` seconds (a Stall) or the job ends (None)."""
        assert self.proc is not None, "start() first"
        kind: str | None = None
        last: Any = object()
        changed = time.monotonic()
        while self.proc.poll() is None:
            pids = self.workers()
            k, sig = self.sample(pids)
            now = time.monotonic()
            if k != kind or sig != last or sig is None:
                kind, last, changed = k, sig, now
            elif now - changed >= self.hang_after:
                return Stall(stalled_s=now - changed, signal=k, pids=pids, noticed_at=now)
            if on_sample is not None:
                on_sample(k, now - changed)
            end = time.monotonic() + self.interval
            while time.monotonic() < end and self.proc.poll() is None:
                time.sleep(min(0.2, self.interval))
        return None

    def request_fr_dumps(self, ranks: int, timeout: float = 3.0, straggling: float = 4.0) -> int:
        """Ask the agents for full flight-recorder dumps; returns how many arrived in time.

        Once some ranks have answered, the others get ``straggling`` seconds more: their agents work (a loaded
        host, a first dump that imports more of torch), and a verdict on a mismatch formed without one rank's
        dump would leave that rank out of it."""
        req = os.path.join(self.watch_dir, "fr-request")
        t0 = time.time()
        with open(req, "w") as f:
            f.write(str(t0))
        os.utime(req, (t0, t0))
        end = time.monotonic() + timeout
        fresh = 0
        extended = False
        while True:
            # An NCCL rank writes nccl_rank<R>.pkl, a gloo one rank<R>.pkl, a rank with both kinds two files.
            seen = set()
            for p in glob.glob(os.path.join(self.watch_dir, "fr", "*rank*.pkl")):
                try:
                    if os.path.getmtime(p) >= t0 - 0.01:
                        seen.add(rank_from_name(p))
                except OSError:
                    continue  # replaced between the listing and the look
            fresh = len(seen - {None})
            if fresh >= ranks:
                break
            if time.monotonic() >= end:
                # Decided after the limit passed, not just before it: a loaded host that oversleeps the last
                # tick must still give the ranks that have not answered their extra time.
                if not fresh or extended:
                    break
                end += straggling
                extended = True
            time.sleep(0.1)
        return fresh


def default_watch_dir() -> str:
    base = os.environ.get("TMPDIR") or "/tmp"
    return os.path.join(base, f"commdoctor-run-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}")

