"""Discovery of a job's processes with psutil, and py-spy attach failures explained, on real processes."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Iterator

import pytest

from commdoctor.probes.procs import ProcInfo, _launcher_of, describe, discover, group_jobs, inspect_pid
from commdoctor.probes.snapshot import expected_local_ranks, snapshot_pids
from tests.conftest import needs_root, needs_tool

SLEEPER = "import os, sys, time\nif len(sys.argv) > 1: os.fork()\ntime.sleep(120)\n"


def start(env: dict[str, str], fork: bool = False, prefix: list[str] | None = None,
          exe: str = sys.executable) -> subprocess.Popen[bytes]:
    e = {k: v for k, v in os.environ.items() if k not in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE")}
    e.update(env)
    argv = [*(prefix or []), exe, "-c", SLEEPER] + (["fork"] if fork else [])
    return subprocess.Popen(argv, env=e, start_new_session=True)


def stop(*ps: subprocess.Popen[bytes]) -> None:
    import psutil

    for p in ps:
        try:
            for c in psutil.Process(p.pid).children(recursive=True):
                c.kill()
        except psutil.NoSuchProcess:
            pass
        p.kill()
        p.wait(timeout=10)


def wait_started(p: subprocess.Popen[bytes], want_children: int = 0) -> None:
    import psutil

    for _ in range(100):
        try:
            proc = psutil.Process(p.pid)
            if len(proc.children()) >= want_children and "-c" in " ".join(proc.cmdline()):
                return
        except psutil.NoSuchProcess:
            pass
        time.sleep(0.05)


def test_a_process_with_rank_in_its_environment_is_found_and_its_fork_is_not() -> None:
    port = str(40000 + os.getpid() % 20000)
    p = start({"RANK": "0", "LOCAL_RANK": "0", "WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": port},
              fork=True)
    try:
        wait_started(p, want_children=1)
        jobs, _ = discover()
        mine = [j for j in jobs if j.key == f"rendezvous:127.0.0.1:{port}"]
        assert len(mine) == 1, [j.key for j in jobs]
        job = mine[0]
        assert [(w.pid, w.rank, w.local_rank, w.world_size) for w in job.ranks] == [(p.pid, 0, 0, 2)]
        assert job.ranks[0].state in ("sleeping", "running")
        assert expected_local_ranks(job) == [0, 1]  # rank 1 should be here and is not
    finally:
        stop(p)


def test_describe_marks_a_vanished_pid_as_exited() -> None:
    p = start({"RANK": "1"})
    pid = p.pid
    stop(p)
    job, _ = describe([pid])
    assert job.ranks[0].state == "exited"


def test_launcher_detection_from_command_lines() -> None:
    assert _launcher_of(["/usr/bin/python3", "/usr/local/bin/torchrun", "--nproc-per-node", "4", "t.py"], "python3") == ("agent", "torchrun")
    assert _launcher_of(["python", "-m", "torch.distributed.run", "t.py"], "python") == ("agent", "torchrun")
    assert _launcher_of(["mpirun", "-np", "4", "python", "t.py"], "mpirun") == ("launcher", "mpirun")
    assert _launcher_of(["srun", "python", "t.py"], "srun") == ("launcher", "srun")
    assert _launcher_of(["python", "t.py"], "python") == (None, None)


def test_grouping_by_launcher_and_helpers_left_out() -> None:
    agent = ProcInfo(pid=10, role="launcher", launcher="mpirun", state="sleeping")
    w = [ProcInfo(pid=11 + r, ppid=10, role="worker", rank=r, local_rank=r, world_size=2, state="sleeping",
                  env={"OMPI_COMM_WORLD_SIZE": "2"}) for r in range(2)]
    helper = ProcInfo(pid=20, ppid=11, role="worker", rank=0, local_rank=0, world_size=2, state="sleeping")
    (job,) = group_jobs([agent, *w, helper], host="h")
    assert [p.pid for p in job.ranks] == [11, 12] and job.agent is agent and job.world_size == 2


@pytest.fixture
def open_tmp() -> Iterator[Path]:
    """A temporary folder another user can read (pytest's tmp_path is private to root)."""
    d = Path(tempfile.mkdtemp(prefix="cdh-procs-"))
    d.chmod(0o755)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def _nobody_python(tmp_path: Path) -> tuple[str, str]:
    """A system python another user can run, with a copy of psutil it can import."""
    import psutil

    py = shutil.which("python3", path="/usr/bin:/bin")
    if not py or subprocess.run([py, "-c", "import sys; assert sys.version_info[:2] == %r" % (sys.version_info[:2],)],
                                capture_output=True).returncode:
        pytest.skip("no system python3 of this version that another user can run")
    lib = tmp_path / "lib"
    shutil.copytree(os.path.dirname(psutil.__file__), lib / "psutil")
    for d in (tmp_path, lib):
        d.chmod(0o755)
    subprocess.run(["chmod", "-R", "a+rX", str(lib)], check=True)
    return py, str(lib)


NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]


@needs_root
@needs_tool("setpriv")
def test_unreadable_environment_is_reported_not_raised(open_tmp: Path) -> None:
    """commdoctor as another user than the rank's: /proc/PID/environ is refused; discovery says so."""
    py, lib = _nobody_python(open_tmp)
    target = start({"RANK": "5", "WORLD_SIZE": "8"})
    try:
        wait_started(target)
        repo = str(Path(__file__).resolve().parent.parent)
        prog = ("import json\nfrom commdoctor.probes.procs import inspect_pid, discover\n"
                f"i = inspect_pid({target.pid}); jobs, notes = discover()\n"
                "print(json.dumps({'env_error': i.env_error, 'rank': i.rank, 'notes': notes}))")
        out = subprocess.run([*NOBODY, "env", f"PYTHONPATH={lib}:{repo}", py, "-c", prog], capture_output=True,
                             text=True, timeout=60, cwd="/")
        import json

        assert out.stdout.strip(), out.stderr
        d = json.loads(out.stdout.strip().splitlines()[-1])
        assert d["rank"] is None and "permission denied reading /proc" in d["env_error"], d
        assert "run commdoctor as the job's user or as root" in d["env_error"]
        assert any("could not be read" in n for n in d["notes"]), d
    finally:
        stop(target)


@needs_root
@needs_tool("setpriv", "capsh")
def test_py_spy_refused_says_why_and_how_to_allow_it(open_tmp: Path) -> None:
    """Root without CAP_SYS_PTRACE (as in a container) against another user's rank: HANG001 with the fix."""
    py, _ = _nobody_python(open_tmp)
    target = start({"RANK": "0", "WORLD_SIZE": "1"}, prefix=NOBODY, exe=py)
    try:
        wait_started(target)
        repo = str(Path(__file__).resolve().parent.parent)
        cmd = f"cd {repo} && {sys.executable} -m commdoctor hang --pid {target.pid} --json"
        out = subprocess.run(["capsh", "--drop=cap_sys_ptrace", "--", "-c", cmd], capture_output=True, text=True,
                             timeout=120)
        import json

        doc = json.loads(out.stdout)
        (f,) = [f for f in doc["findings"] if f["code"] == "HANG001"]
        assert f["severity"] == "error" and f["cause"] == "environment_misconfig"
        assert "uid 65534" in f["remedy"]["summary"] and "CAP_SYS_PTRACE" in f["remedy"]["summary"]
        assert "ermission denied" in f["evidence"][0]["text"]
    finally:
        stop(target)


def test_py_spy_on_a_non_python_process_says_so() -> None:
    p = subprocess.Popen(["sleep", "30"], start_new_session=True)
    try:
        s = snapshot_pids([p.pid], timeout=10)
        (v,) = s.ranks.values()
        assert v.stack is None and v.stack_why in ("not_python", "failed") and v.stack_error
    finally:
        p.kill()
        p.wait()


def test_inspect_pid_of_self_reads_environment() -> None:
    i = inspect_pid(os.getpid())
    assert i.state in ("running", "sleeping") and i.env_error is None


def test_expected_ranks_here_never_claims_another_hosts_ranks() -> None:
    from commdoctor.probes.procs import Job

    def w(rank: int, env: dict[str, str]) -> ProcInfo:
        return ProcInfo(pid=100 + rank, role="worker", rank=rank, local_rank=rank % 4, world_size=8, env=env)

    remote = {"MASTER_ADDR": "10.0.0.1"}
    job = Job(key="j", ranks=[w(r, remote) for r in range(3)], world_size=8)
    assert expected_local_ranks(job) == []  # ranks 3-7 may well run on other hosts
    job = Job(key="j", ranks=[w(r, {**remote, "LOCAL_WORLD_SIZE": "4"}) for r in (4, 5, 7)], world_size=8,
              local_world_size=4)
    assert expected_local_ranks(job) == [4, 5, 6, 7]  # this node holds 4-7: rank 6 is missing here
    job = Job(key="j", ranks=[w(r, {"MASTER_ADDR": "127.0.0.1"}) for r in range(3)], world_size=4)
    assert expected_local_ranks(job) == [0, 1, 2, 3]
