"""Two "hosts" made of network namespaces, for the network tests (a helper, not a test module).

Each host is a namespace ``cdn-<tag>-<letter>`` with one interface ``cdn0`` on
a veth pair to the other host (10.201.<net>.0/24), its own /etc/hosts
(/etc/netns/NAME/hosts, bind-mounted by ``ip netns exec``) and its own hostname
(``unshare --uts``). Nothing else is in the namespaces, so no packet leaves
them. Everything started here is bounded and killed on teardown; the
namespaces and their /etc/netns folders are deleted.
"""

from __future__ import annotations

import json
import os
import select
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from tests import zygote

REPO = Path(__file__).resolve().parent.parent
JOB = str(REPO / "tests" / "net_job.py")

#: Variables of the outer environment that would leak into a test's scenario.
SCRUB = ("MASTER_", "GLOO_", "NCCL_", "TP_SOCKET", "PET_", "TORCHELASTIC", "RANK", "WORLD_SIZE", "LOCAL_RANK",
         "LOCAL_WORLD_SIZE", "SLURM_", "OMPI_", "NO_COLOR")


def why_not() -> str | None:
    """The reason these tests cannot run here, or None."""
    if os.geteuid() != 0:
        return "needs root to create network namespaces"
    for tool in ("ip", "unshare"):
        if shutil.which(tool) is None:
            return f"{tool} is missing (iproute2 / util-linux)"
    return None


def sh(*argv: str, check: bool = True, timeout: float = 20) -> subprocess.CompletedProcess[str]:
    p = subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout)
    if check and p.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)}: {p.stderr.strip() or p.stdout.strip()}")
    return p


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(SCRUB)}
    env["PYTHONUNBUFFERED"] = "1"
    env.update(extra)
    return env


@dataclass
class Host:
    ns: str
    hostname: str
    addr: str
    iface: str = "cdn0"
    procs: list[subprocess.Popen[str]] = field(default_factory=list)

    def hosts_file(self, text: str) -> None:
        d = Path("/etc/netns") / self.ns
        d.mkdir(parents=True, exist_ok=True)
        (d / "hosts").write_text("127.0.0.1 localhost\n" + text)

    def argv(self, cmd: list[str]) -> list[str]:
        return ["ip", "netns", "exec", self.ns, "unshare", "--uts", "--", "sh", "-c",
                'hostname "$0" && exec "$@"', self.hostname, *cmd]

    def ip(self, *args: str) -> subprocess.CompletedProcess[str]:
        return sh("ip", "-n", self.ns, *args)

    def iptables(self, *args: str) -> None:
        sh("ip", "netns", "exec", self.ns, "iptables", "-w", "5", *args)

    def run(self, cmd: list[str], env: dict[str, str], timeout: float = 120) -> subprocess.CompletedProcess[str]:
        return subprocess.run(self.argv(cmd), capture_output=True, text=True, timeout=timeout, env=env, cwd=str(REPO))

    def start(self, cmd: list[str], env: dict[str, str], ready: str | None = None,
              wait: float = 30, fork: bool = False) -> subprocess.Popen[str]:
        """Start ``cmd`` on this host. ``fork``: a Python script forked from this host's zygote (tests/zygote.py,
        started in the namespace once per lab; torch imported once), for processes nothing finds by their
        command line."""
        if fork and cmd[0] == sys.executable:
            p = zygote.spawn(cmd[1:], env=env, cwd=str(REPO), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             start_new_session=True, zygote=self.ns, wrap=self.argv)
        else:
            p = subprocess.Popen(self.argv(cmd), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                                 cwd=str(REPO), start_new_session=True)
        self.procs.append(p)
        if ready:
            end = time.monotonic() + wait
            assert p.stdout is not None
            fd = p.stdout.fileno()
            buf = b""
            while time.monotonic() < end:
                r, _, _ = select.select([fd], [], [], 0.1)
                if r:
                    chunk = os.read(fd, 4096)
                    buf += chunk
                    if ready.encode() in buf:
                        break
                    if not chunk and p.poll() is not None:
                        raise RuntimeError(f"{cmd} exited early: {p.stderr.read() if p.stderr else ''}")
            else:
                raise RuntimeError(f"{cmd} did not print {ready!r} within {wait} s")
        return p

    def commdoctor(self, *args: str, env: dict[str, str], timeout: float = 120) -> tuple[dict[str, Any], float, str]:
        """``commdoctor run ARGS --json`` on this host: (report, seconds, stderr)."""
        t0 = time.monotonic()
        p = self.run([sys.executable, "-m", "commdoctor", "run", *args, "--json"], env=env, timeout=timeout)
        elapsed = time.monotonic() - t0
        try:
            return json.loads(p.stdout), elapsed, p.stderr
        except ValueError:
            raise AssertionError(f"not JSON (rc={p.returncode}):\n{p.stdout[-2000:]}\n{p.stderr[-3000:]}")

    def stop_all(self) -> None:
        for p in self.procs:
            kill(p)
        self.procs.clear()

    def warm_zygote(self) -> None:
        zygote.warm(self.ns, self.argv)

    def stop_zygote(self) -> None:
        zygote.stop(self.ns)


def kill(p: subprocess.Popen[str]) -> None:
    if p.poll() is None:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            try:
                p.kill()  # not a group leader (a rank forked by a zygote without a session of its own)
            except ProcessLookupError:
                pass
    try:
        p.wait(timeout=5)
    except subprocess.TimeoutExpired:
        pass


class Lab:
    """Host a (10.201.<net>.1, the master) and host b (10.201.<net>.2), one veth pair between them."""

    def __init__(self, tag: str, net: int = 1) -> None:
        self.tag = tag
        self.net = net
        self.a = Host(f"cdn-{tag}-a", f"cdn{tag}a", f"10.201.{net}.1")
        self.b = Host(f"cdn-{tag}-b", f"cdn{tag}b", f"10.201.{net}.2")

    def up(self) -> Lab:
        self.down()
        va, vb = f"cdn{self.tag}a", f"cdn{self.tag}b"
        for h in (self.a, self.b):
            sh("ip", "netns", "add", h.ns)
            h.ip("link", "set", "lo", "up")
        sh("ip", "link", "add", va, "type", "veth", "peer", "name", vb)
        sh("ip", "link", "set", va, "netns", self.a.ns)
        sh("ip", "link", "set", vb, "netns", self.b.ns)
        for h, v in ((self.a, va), (self.b, vb)):
            h.ip("link", "set", v, "name", h.iface)
            h.ip("addr", "add", f"{h.addr}/24", "dev", h.iface)
            h.ip("link", "set", h.iface, "up")
        self.healthy_hosts()
        return self

    def healthy_hosts(self) -> None:
        names = f"{self.a.addr} {self.a.hostname}\n{self.b.addr} {self.b.hostname}\n"
        self.a.hosts_file(names)
        self.b.hosts_file(names)

    def down(self) -> None:
        for h in (self.a, self.b):
            h.stop_all()
            h.stop_zygote()
            sh("ip", "netns", "del", h.ns, check=False)
            shutil.rmtree(Path("/etc/netns") / h.ns, ignore_errors=True)

    def job_env(self, port: int, rank: int, **extra: str) -> dict[str, str]:
        base = dict(MASTER_ADDR=self.a.addr, MASTER_PORT=str(port), RANK=str(rank), WORLD_SIZE="2",
                    LOCAL_WORLD_SIZE="1", LOCAL_RANK="0")
        return clean_env(**{**base, **extra})

    def job(self, port: int, extra_a: dict[str, str] | None = None, extra_b: dict[str, str] | None = None,
            timeout: float = 6.0, deadline: float = 45.0) -> dict[str, dict[str, Any]]:
        """A real 2-host gloo job (rank 0 on a, rank 1 on b): what each rank reported.

        Stops at the first failure plus a short grace (the other rank would
        otherwise wait for its whole timeout), or at ``deadline``.
        """
        # Both hosts' zygotes up first: a zygote's first start imports torch, and rank 0's timeout must not run
        # while the other host's is still doing that (seen under load: rank 1 started 9 s after rank 0).
        self.a.warm_zygote()
        self.b.warm_zygote()
        procs = {
            "a": self.a.start([sys.executable, JOB, "rank"], self.job_env(port, 0, JOB_TIMEOUT=str(timeout), **(extra_a or {})),
                              fork=True),
            "b": self.b.start([sys.executable, JOB, "rank"], self.job_env(port, 1, JOB_TIMEOUT=str(timeout), **(extra_b or {})),
                              fork=True),
        }
        end = time.monotonic() + deadline
        failed_at: float | None = None
        while time.monotonic() < end:
            codes = {k: p.poll() for k, p in procs.items()}
            if all(c is not None for c in codes.values()):
                break
            if failed_at is None and any(c not in (None, 0) for c in codes.values()):
                failed_at = time.monotonic()
            if failed_at is not None and time.monotonic() > failed_at + 3.0:
                break
            time.sleep(0.1)
        out: dict[str, dict[str, Any]] = {}
        for k, p in procs.items():
            hung = p.poll() is None
            kill(p)
            so, se = p.communicate(timeout=5) if p.stdout else ("", "")
            line = next((ln for ln in reversed((so or "").splitlines()) if ln.startswith("{")), None)
            rec: dict[str, Any] = json.loads(line) if line else {"ok": False, "error": None}
            rec["hung"] = hung and line is None
            rec["returncode"] = p.returncode
            rec["stderr"] = (se or "")[-3000:]
            out[k] = rec
        return out


def parallel(*calls: Callable[[], Any], timeout: float = 120) -> list[Any]:
    """Run independent steps at once (most of a failing job's time is waiting); results in order."""
    out: list[Any] = [None] * len(calls)
    errs: list[BaseException] = []

    def one(n: int, fn: Callable[[], Any]) -> None:
        try:
            out[n] = fn()
        except BaseException as e:  # noqa: BLE001 - re-raised in the caller
            errs.append(e)

    threads = [threading.Thread(target=one, args=(n, fn), daemon=True) for n, fn in enumerate(calls)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout)
    if errs:
        raise errs[0]
    return out


def codes(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {f["code"]: f for f in doc["findings"]}


def result(doc: dict[str, Any], check: str) -> dict[str, Any]:
    return next(r for r in doc["results"] if r["check"] == check)
