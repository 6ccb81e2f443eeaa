"""Start real hung jobs (hangjob.py) for the tests, and always stop them.

Every wait is bounded; ``Job.stop`` kills each process the job started, and its
descendants, by pid (SIGKILL also ends a SIGSTOPped rank).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import psutil

from tests.ports import free_port

HERE = Path(__file__).resolve().parent
SCRIPT = HERE / "hangjob.py"
REPO = HERE.parent.parent


def mark_line(name: str) -> int:
    """Line number of the ``# MARK:name`` comment in hangjob.py."""
    for i, line in enumerate(SCRIPT.read_text().splitlines(), 1):
        if re.search(rf"# MARK:{re.escape(name)}\b", line):
            return i
    raise AssertionError(f"no MARK:{name} in {SCRIPT}")


def base_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.setdefault("OMP_NUM_THREADS", "1")
    env.pop("TORCH_DISTRIBUTED_DEBUG", None)
    env.update(extra or {})
    return env


@dataclass
class Job:
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)
    ready: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="cdh-ready-")))
    world: int = 0
    logs: list[Path] = field(default_factory=list)

    @property
    def pids(self) -> list[int]:
        return [p.pid for p in self.procs]

    def rank_pids(self) -> dict[int, int]:
        """rank -> pid, from the marks the ranks wrote."""
        out: dict[int, int] = {}
        for f in self.ready.iterdir():
            m = re.match(r".*\.rank(\d+)$", f.name)
            if m and f.read_text().strip().isdigit():
                out[int(m.group(1))] = int(f.read_text().strip())
        return out

    def wait(self, stage: str, ranks: Sequence[int] | None = None, timeout: float = 120.0) -> None:
        want = set(range(self.world) if ranks is None else ranks)
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            have = {int(m.group(1)) for f in self.ready.iterdir() if (m := re.match(rf"{stage}\.rank(\d+)$", f.name))}
            if want <= have:
                return
            if any(p.poll() is not None for p in self.procs) and stage != "fr":
                break
            time.sleep(0.2)
        raise AssertionError(f"ranks {sorted(want)} did not reach {stage!r} within {timeout:g} s; "
                             f"have {sorted(f.name for f in self.ready.iterdir())}; logs:\n{self.tail()}")

    def tail(self) -> str:
        out = []
        for lf in self.logs:
            try:
                out.append(f"--- {lf.name}\n" + "\n".join(lf.read_text(errors="replace").splitlines()[-15:]))
            except OSError:
                pass
        return "\n".join(out)

    def stop(self) -> None:
        victims: list[psutil.Process] = []
        for p in self.procs:
            try:
                root = psutil.Process(p.pid)
                victims += root.children(recursive=True) + [root]
            except psutil.NoSuchProcess:
                pass
        for v in victims:
            try:
                v.send_signal(signal.SIGKILL)
            except psutil.NoSuchProcess:
                pass
        for p in self.procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass

    def __enter__(self) -> Job:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def start_plain(scenario: str, world: int, env: dict[str, str] | None = None,
                prefix: Sequence[Sequence[str]] | None = None, master: str = "127.0.0.1",
                script: Path = SCRIPT) -> Job:
    """Ranks as plain processes with RANK / WORLD_SIZE set (no launcher); ``script``: a copy of
    hangjob.py elsewhere (its path matters to some tests)."""
    job = Job(world=world)
    port = free_port()
    for r in range(world):
        e = base_env({"RANK": str(r), "LOCAL_RANK": str(r), "WORLD_SIZE": str(world), "MASTER_ADDR": master,
                      "MASTER_PORT": str(port), "CDH_SCENARIO": scenario, "CDH_READY_DIR": str(job.ready),
                      **(env or {})})
        log = job.ready.parent / f"{job.ready.name}-rank{r}.log"
        job.logs.append(log)
        argv = [*(prefix[r] if prefix else []), sys.executable, str(script)]
        with open(log, "wb") as lf:
            job.procs.append(subprocess.Popen(argv, env=e, stdout=lf, stderr=subprocess.STDOUT,
                                              stdin=subprocess.DEVNULL, start_new_session=True))
    return job


def torchrun_argv(world: int, port: int) -> list[str]:
    return [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", str(world),
            "--master-addr", "127.0.0.1", "--master-port", str(port), "--monitor-interval", "0.5", str(SCRIPT)]


def start_torchrun(scenario: str, world: int, env: dict[str, str] | None = None) -> Job:
    job = Job(world=world)
    e = base_env({"CDH_SCENARIO": scenario, "CDH_READY_DIR": str(job.ready), **(env or {})})
    log = job.ready.parent / f"{job.ready.name}-torchrun.log"
    job.logs.append(log)
    with open(log, "wb") as lf:
        job.procs.append(subprocess.Popen(torchrun_argv(world, free_port()), env=e, stdout=lf,
                                          stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True))
    return job
