"""Take the Python stacks of many processes at once with py-spy, each under a deadline.

Promise: ``take_stacks`` returns within ``timeout`` plus a small grace period
whatever the targets do, one ``StackResult`` per pid. It runs the real
``py-spy dump --json`` (``--native`` on request) for every pid in parallel;
a stopped process (SIGSTOP, a debugger) is read with ``--nonblocking``
because py-spy cannot suspend it. When py-spy cannot attach, the result says
exactly why (kernel.yama.ptrace_scope, a missing CAP_SYS_PTRACE in a
container, another user's process, a process that exited, not a Python
process) and how to allow it. Never raises.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from commdoctor.facts.access import PtraceAccess
from commdoctor.parsing.stacks import ProcessStack, parse_stack_text
from commdoctor.probes.proc import run_bounded


@dataclass
class StackResult:
    pid: int
    stack: ProcessStack | None = None
    error: str | None = None  # py-spy's own words (first lines), verbatim
    why: str | None = None  # no_py_spy, ptrace_scope, cap_sys_ptrace, other_user, exited, not_python, timeout, failed
    hint: str | None = None  # how to allow it
    elapsed_s: float = 0.0
    argv: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.stack is not None and bool(self.stack.threads)

    def to_dict(self) -> dict[str, Any]:
        return {"pid": self.pid, "ok": self.ok, "stack": self.stack.to_dict() if self.stack else None,
                "error": self.error, "why": self.why, "hint": self.hint, "elapsed_s": round(self.elapsed_s, 3),
                "argv": list(self.argv)}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> StackResult:
        return cls(pid=int(d["pid"]), stack=ProcessStack.from_dict(d["stack"]) if d.get("stack") else None,
                   error=d.get("error"), why=d.get("why"), hint=d.get("hint"),
                   elapsed_s=float(d.get("elapsed_s") or 0.0), argv=list(d.get("argv") or ()))


def _short_error(text: str) -> str:
    """py-spy's message without its Rust backtrace."""
    keep: list[str] = []
    for line in text.splitlines():
        if line.strip().startswith("Stack backtrace:"):
            break
        if line.strip():
            keep.append(line.rstrip())
    return "\n".join(keep[:8])


def explain_attach_failure(stderr: str, pid: int, ptrace: PtraceAccess | None, alive: bool,
                           owner_uid: int | None = None) -> tuple[str, str]:
    """(why, hint) for a failed ``py-spy dump``; ``ptrace`` is probes.env.ptrace_facts() (None: unknown)."""
    low = stderr.lower()
    scope, cap, uid, container = ((ptrace.yama_ptrace_scope, ptrace.cap_sys_ptrace, ptrace.uid, ptrace.container)
                                  if ptrace is not None else (None, None, None, None))
    if not alive:
        return "exited", f"process {pid} exited before its stack could be taken"
    denied = "permission denied" in low or "operation not permitted" in low or "os error 1)" in low \
        or "os error 13" in low
    if denied:
        if owner_uid is not None and uid is not None and owner_uid != uid and not cap:
            return ("other_user",
                    f"process {pid} belongs to uid {owner_uid} and commdoctor runs as uid {uid} without "
                    f"CAP_SYS_PTRACE: run commdoctor as that user or as root (sudo -E commdoctor ...)")
        if scope is not None and scope >= 3:
            return ("ptrace_scope",
                    "kernel.yama.ptrace_scope=3 forbids ptrace entirely until the next reboot; "
                    "no tool can read stacks on this host (set it to 1 or lower in /etc/sysctl.d and reboot)")
        if scope == 2:
            return ("ptrace_scope",
                    "kernel.yama.ptrace_scope=2 allows ptrace only with CAP_SYS_PTRACE: run commdoctor as root, "
                    "or 'sudo setcap cap_sys_ptrace+ep $(readlink -f $(which py-spy))'")
        if cap is False and container:
            return ("cap_sys_ptrace",
                    f"this {container} container lacks CAP_SYS_PTRACE: start it with '--cap-add SYS_PTRACE' "
                    "(docker/podman) or add SYS_PTRACE to securityContext.capabilities.add (Kubernetes)")
        if scope == 1 and not cap:
            return ("ptrace_scope",
                    "kernel.yama.ptrace_scope=1 lets a process trace only its own descendants: run commdoctor as "
                    "root (sudo -E), or 'sudo sysctl -w kernel.yama.ptrace_scope=0' (until reboot), or launch the "
                    "job through 'commdoctor run -- torchrun ...' so its ranks are commdoctor's descendants")
        if cap is False:
            return ("cap_sys_ptrace",
                    "commdoctor runs without CAP_SYS_PTRACE (dropped by the container runtime or by capsh/"
                    "systemd): grant it ('--cap-add SYS_PTRACE', 'setcap cap_sys_ptrace+ep' on py-spy) or run "
                    "as root with full capabilities")
        return ("ptrace_denied",
                "the kernel refused ptrace: run commdoctor as root (sudo -E) or as the job's user; check "
                "kernel.yama.ptrace_scope and CAP_SYS_PTRACE (commdoctor run checks both in env.ptrace)")
    if "failed to find python version" in low or "not a python" in low or "failed to find a python interpreter" in low:
        return "not_python", f"process {pid} is not a Python interpreter py-spy understands"
    if "no such file or directory" in low or "no such process" in low:
        return "exited", f"process {pid} exited before its stack could be taken"
    return "failed", "py-spy could not read this process (its own message is shown); try again, or with --native off"


def _one(pid: int, py_spy: str, timeout: float, native: bool, nonblocking: bool, ptrace: PtraceAccess | None,
         env: Mapping[str, str]) -> StackResult:
    argv = [py_spy, "dump", "--pid", str(pid), "--json"]
    if native:
        argv.append("--native")
    if nonblocking:
        argv.append("--nonblocking")
    t0 = time.monotonic()
    c = run_bounded(argv, timeout=timeout, env=env)
    res = StackResult(pid=pid, argv=argv, elapsed_s=time.monotonic() - t0)
    if c.timed_out:
        res.why, res.error = "timeout", f"py-spy did not answer within {timeout:g} s"
        res.hint = "the process may be in uninterruptible I/O (state D) or the host is overloaded; retry with a longer --timeout"
        return res
    if c.returncode == 0 and c.stdout.strip():
        res.stack = parse_stack_text(c.stdout, pid)
        if not res.ok:
            res.why, res.error = "failed", "py-spy answered but no thread could be parsed"
        return res
    err = _short_error(c.stderr or c.stdout)
    # A process stopped by a signal cannot be suspended again: read it without suspending.
    if not nonblocking and "failed to suspend" in err.lower():
        return _one(pid, py_spy, max(1.0, timeout - res.elapsed_s), native, True, ptrace, env)
    alive = _alive(pid)
    owner = _owner(pid)
    res.error = err or f"py-spy exited with status {c.returncode}"
    res.why, res.hint = explain_attach_failure(err, pid, ptrace, alive, owner)
    return res


def _alive(pid: int) -> bool:
    try:
        import psutil

        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except Exception:  # noqa: BLE001 - gone, or unreadable: treat as gone
        return False


def _owner(pid: int) -> int | None:
    try:
        return os.stat(f"/proc/{pid}").st_uid
    except OSError:
        return None


def take_stacks(pids: Sequence[int], timeout: float = 10.0, native: bool = False,
                stopped: Sequence[int] = (), py_spy: str | None = None,
                ptrace: PtraceAccess | None = None) -> dict[int, StackResult]:
    """Stacks of every pid, taken in parallel; each py-spy call has ``timeout`` seconds."""
    from commdoctor.probes.env import find_py_spy, ptrace_facts

    exe = py_spy or find_py_spy()
    if not exe:
        return {pid: StackResult(pid=pid, why="no_py_spy", error="py-spy is not installed",
                                 hint="pip install py-spy (commdoctor depends on it; it needs no root for your own "
                                      "processes where kernel.yama.ptrace_scope is 0)") for pid in pids}
    if ptrace is None:
        try:
            ptrace = ptrace_facts()
        except OSError:
            ptrace = None
    env = dict(os.environ)
    env.pop("RUST_BACKTRACE", None)
    out: dict[int, StackResult] = {}
    lock = threading.Lock()
    stopped_set = set(stopped)

    def work(pid: int) -> None:
        try:
            r = _one(pid, exe, timeout, native, pid in stopped_set, ptrace, env)
        except Exception as e:  # noqa: BLE001 - a probe reports, never raises
            r = StackResult(pid=pid, why="failed", error=f"{type(e).__name__}: {e}")
        with lock:
            out[pid] = r

    threads = [threading.Thread(target=work, args=(pid,), daemon=True, name=f"py-spy:{pid}") for pid in pids]
    for t in threads:
        t.start()
    end = time.monotonic() + timeout * 2 + 3  # a retry with --nonblocking may follow a first try
    for t in threads:
        t.join(max(0.0, end - time.monotonic()))
    for pid in pids:
        out.setdefault(pid, StackResult(pid=pid, why="timeout", error="no answer from py-spy in time"))
    return out
