"""Real hung gloo jobs (torchrun or plain processes, 3 or 4 ranks), diagnosed by the real CLI.

Each test starts a job from hangjob.py, waits (bounded) until the hang is in
place, runs ``commdoctor`` in a fresh interpreter as a user would, and asserts
that the verdict names the right rank, state and line. Jobs are always killed.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Iterator

import pytest

from tests.conftest import REPO, findings, needs_root, needs_tool, needs_torch, result, run_json
from tests.integration.hang_jobs import Job, base_env, mark_line, start_plain, start_torchrun, torchrun_argv

pytestmark = [needs_torch, needs_tool("py-spy"), pytest.mark.usefixtures("pyspy_can_attach")]
LINE = mark_line


def verdict(doc: dict[str, Any]) -> dict[str, Any]:
    v = doc["verdict"]
    assert v is not None, json.dumps(doc["results"], indent=1)[:3000]
    return v


@pytest.fixture(scope="module")
def straggler(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Job, Path]]:
    """torchrun, 4 ranks: rank 3 sleeps in its dataset while 0-2 wait in all_reduce."""
    fr = tmp_path_factory.mktemp("fr")
    job = start_torchrun("straggler", 4, {"CDH_FR_DIR": str(fr)})
    with job:
        job.wait("steady", timeout=240)
        time.sleep(1.0)
        yield job, fr


def test_hang_on_4_ranks_names_the_straggler_quickly(straggler: tuple[Job, Path]) -> None:
    job, _ = straggler
    pids = job.rank_pids()
    t0 = time.monotonic()
    doc, p = run_json("hang", "--pid", *[str(pids[r]) for r in range(4)])
    elapsed = time.monotonic() - t0
    v = verdict(doc)
    assert v["code"] == "HANG010" and v["ranks"] == [3] and v["cause"] == "collective_timeout_straggler"
    assert "data loading" in v["title"]
    assert f"hangjob.py:{LINE('loader-next')}" in v["title"] and f"hangjob.py:{LINE('dataset-sleep')}" in v["title"]
    assert f"ranks 0-2 wait for it in all_reduce at hangjob.py:{LINE('straggler-allreduce')}" in v["title"]
    assert any("time.sleep(3600)" in e["text"] for e in v["evidence"])  # the dataset's own line, read here
    # The issue asks for 10 s on 4 ranks; the bound is generous for a shared 2-core box (figures in bench/README.md).
    assert elapsed < 30, f"commdoctor hang took {elapsed:.1f} s"
    print(f"\ncommdoctor hang on 4 ranks: verdict in {elapsed:.2f} s (fresh interpreter, whole CLI)")
    groups = result(doc, "hang.ranks")["data"]["groups"]
    assert [g["ranks"] for g in groups] == [[0, 1, 2], [3]]


def test_run_attach_finds_the_torchrun_job_by_itself(straggler: tuple[Job, Path]) -> None:
    job, _ = straggler
    agent = job.procs[0]
    doc, p = run_json("run", "--attach", f"--master-port {torchrun_port(agent.pid)}")
    v = verdict(doc)
    assert v["code"] == "HANG010" and v["ranks"] == [3], p.stderr
    ranks = result(doc, "hang.ranks")["data"]["ranks"]
    assert sorted(r["pid"] for r in ranks) == sorted(job.rank_pids().values())


def torchrun_port(agent_pid: int) -> str:
    import psutil

    cmd = psutil.Process(agent_pid).cmdline()
    return cmd[cmd.index("--master-port") + 1]


def test_flight_recorder_dump_of_the_live_job_names_the_missing_rank(straggler: tuple[Job, Path]) -> None:
    job, fr = straggler
    (fr / "go").write_text("")
    job.wait("fr", timeout=120)
    doc, _ = run_json("hang", "--fr", str(fr))  # the dumps alone, as torchfrtrace would get them
    v = verdict(doc)
    assert v["code"] == "HANG010" and v["ranks"] == [3]
    # The dumps name the collective by its sequence number, and its line.
    assert re.search(rf"all_reduce #\d+ at hangjob.py:{LINE('straggler-allreduce')}", v["title"]), v["title"]
    ev = [e for e in v["evidence"] if e["source"] == "flight recorder:rank3"]
    assert ev and "never entered all_reduce" in ev[0]["text"]
    doc, _ = run_json("hang", "--fr", str(fr / "json"))  # the JSON variant too
    assert verdict(doc)["ranks"] == [3]


def test_saved_snapshot_gives_the_same_verdict_offline(straggler: tuple[Job, Path], tmp_path: Path) -> None:
    job, _ = straggler
    pids = job.rank_pids()
    save = tmp_path / "snap.json"
    live, _ = run_json("hang", "--pid", *map(str, pids.values()), "--save", str(save))
    offline, _ = run_json("hang", "--stacks", str(save))
    assert verdict(offline)["title"] == verdict(live)["title"]


@pytest.fixture(scope="module")
def clone_script(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """hangjob.py in a clone of this repository: a folder called commdoctor (the default clone's name)."""
    clone = tmp_path_factory.mktemp("clone") / "src" / "commdoctor" / "tests" / "integration"
    clone.mkdir(parents=True)
    script = clone / "hangjob.py"
    script.write_text((REPO / "tests" / "integration" / "hangjob.py").read_text())
    return script


@pytest.fixture(scope="module")
def mismatch(clone_script: Path) -> Iterator[Job]:
    """3 plain ranks: rank 2 broadcasts while 0 and 1 all_reduce, run from a folder named commdoctor as in a
    default clone. Three tests read it (one job, not three)."""
    with start_plain("mismatch", 3, script=clone_script) as job:
        job.wait("steady", timeout=240)
        time.sleep(1.5)
        yield job


def test_collectives_in_a_different_order(mismatch: Job) -> None:
    doc, _ = run_json("hang", "--pid", *map(str, mismatch.rank_pids().values()))
    v = verdict(doc)
    assert v["code"] == "HANG011" and v["cause"] == "collective_mismatch"
    assert f"rank 2 in broadcast at hangjob.py:{LINE('mismatch-broadcast')}" in v["title"]
    assert f"ranks 0 and 1 in all_reduce at hangjob.py:{LINE('mismatch-allreduce')}" in v["title"]
    assert "odd one: rank 2" in v["detail"]


def test_a_job_in_a_folder_named_commdoctor_keeps_its_lines(mismatch: Job, clone_script: Path) -> None:
    """A clone of this repository is a folder called commdoctor: its jobs are the user's code, not ours."""
    doc, _ = run_json("hang", "--pid", *map(str, mismatch.rank_pids().values()))
    v = verdict(doc)
    assert v["code"] == "HANG011"
    assert f"rank 2 in broadcast at hangjob.py:{LINE('mismatch-broadcast')}" in v["title"]
    assert f"ranks 0 and 1 in all_reduce at hangjob.py:{LINE('mismatch-allreduce')}" in v["title"]
    ranks = result(doc, "hang.ranks")["data"]["ranks"]
    assert "/commdoctor/" in str(clone_script)
    assert ranks[2]["classification"]["call_site"]["file"] == str(clone_script)


def test_a_killed_rank_the_others_wait_for() -> None:
    """Rank 2 is killed before it joins; 0 and 1 wait for it in init_process_group."""
    with start_plain("dead", 3) as job:
        job.wait("steady", timeout=240)
        time.sleep(1.5)
        pids = job.rank_pids()
        os.kill(pids[2], signal.SIGKILL)
        time.sleep(0.5)
        doc, _ = run_json("hang", "--pid", *[str(pids[r]) for r in range(3)])  # the zombie among them
        v = verdict(doc)
        assert v["code"] == "HANG012" and v["ranks"] == [2] and v["cause"] == "peer_process_died"
        assert "zombie" in v["title"]
        assert f"ranks 0 and 1 wait for it in init_process_group at hangjob.py:{LINE('init')}" in v["title"]
        job.procs[2].wait(timeout=10)  # reaped: now no process holds rank 2 at all
        doc, _ = run_json("hang", "--pid", str(pids[0]), str(pids[1]))
        v = verdict(doc)
        assert v["code"] == "HANG012" and v["ranks"] == [2] and "not running on this host" in v["title"]


def test_a_stopped_peer_inside_the_collective() -> None:
    """Rank 2 stops itself (SIGSTOP) inside the all_reduce loop; 0 and 1 wait in the same all_reduce."""
    with start_plain("stopped", 3) as job:
        job.wait("steady", timeout=240)
        pids = job.rank_pids()
        import psutil

        for _ in range(100):
            if psutil.Process(pids[2]).status() == psutil.STATUS_STOPPED:
                break
            time.sleep(0.1)
        time.sleep(1.0)
        doc, _ = run_json("hang", "--pid", *[str(pids[r]) for r in range(3)])
    v = verdict(doc)
    assert v["code"] == "HANG014" and v["ranks"] == [2]
    assert f"ranks 0 and 1 wait for it in all_reduce at hangjob.py:{LINE('loop-allreduce')}" in v["title"]
    ranks = {r["rank"]: r for r in result(doc, "hang.ranks")["data"]["ranks"]}
    assert ranks[2]["proc_state"] == "stopped" and ranks[2]["classification"]["state"] == "collective"


class Netns:
    """Three rank namespaces on one bridge (in a namespace of its own): cdh-<id>-{0,1,2,b}, 10.202.S.0/24."""

    def __init__(self, n: int) -> None:
        self.id = f"{os.getpid() % 100000}"
        self.subnet = f"10.202.{os.getpid() % 250}"
        self.n = n
        self.names = [f"cdh-{self.id}-{i}" for i in range(n)]
        self.bridge = f"cdh-{self.id}-b"

    def ip(self, *args: str) -> None:
        subprocess.run(["ip", *args], check=True, capture_output=True, timeout=30)

    def __enter__(self) -> Netns:
        try:
            self.ip("netns", "add", self.bridge)
            self.ip("-n", self.bridge, "link", "add", "br0", "type", "bridge")
            self.ip("-n", self.bridge, "link", "set", "br0", "up")
            for i, ns in enumerate(self.names):
                self.ip("netns", "add", ns)
                self.ip("link", "add", "cdh0", "netns", ns, "type", "veth", "peer", "name", f"p{i}", "netns", self.bridge)
                self.ip("-n", ns, "addr", "add", f"{self.subnet}.{i + 1}/24", "dev", "cdh0")
                self.ip("-n", ns, "link", "set", "cdh0", "up")
                self.ip("-n", ns, "link", "set", "lo", "up")
                self.ip("-n", self.bridge, "link", "set", f"p{i}", "master", "br0")
                self.ip("-n", self.bridge, "link", "set", f"p{i}", "up")
        except BaseException:
            self.__exit__()
            raise
        return self

    def cut(self, i: int) -> None:
        self.ip("-n", self.bridge, "link", "set", f"p{i}", "down")

    def __exit__(self, *exc: object) -> None:
        for ns in [*self.names, self.bridge]:
            subprocess.run(["ip", "netns", "del", ns], capture_output=True, timeout=30)


@needs_root
@needs_tool("ip")
@pytest.mark.netns
def test_all_ranks_blocked_in_one_collective_when_a_link_goes_down() -> None:
    """Ranks in three namespaces; rank 2's link is set down mid-loop: everyone waits in the same all_reduce."""
    with Netns(3) as net:
        prefix = [["ip", "netns", "exec", ns] for ns in net.names]
        with start_plain("loop", 3, {"GLOO_SOCKET_IFNAME": "cdh0"}, prefix=prefix, master=f"{net.subnet}.1") as job:
            job.wait("steady", timeout=240)
            time.sleep(0.5)
            net.cut(2)
            time.sleep(3.0)  # in-flight calls drain; every rank then blocks in the next all_reduce
            pids = job.rank_pids()
            doc, _ = run_json("hang", "--pid", *[str(pids[r]) for r in range(3)])
    v = verdict(doc)
    assert v["code"] == "HANG013" and v["ranks"] == [0, 1, 2], v
    assert f"all 3 ranks wait in all_reduce at hangjob.py:{LINE('net-allreduce')}" in v["title"]
    steps = " ".join(v["remedy"]["steps"])
    assert "interface and rendezvous" in steps and "RAS" in steps


def test_wrapper_mode_diagnoses_within_its_no_progress_time(tmp_path: Path) -> None:
    """commdoctor run --hang-after 5 -- torchrun ...: the verdict comes while the job still runs."""
    ready = tmp_path / "ready"
    ready.mkdir()
    watch = tmp_path / "watch"
    env = base_env({"CDH_SCENARIO": "straggler", "CDH_READY_DIR": str(ready), "NO_COLOR": "1"})
    from tests.ports import free_port

    hang_after = 5.0
    argv = [sys.executable, "-m", "commdoctor", "run", "--hang-after", str(hang_after), "--watch-dir", str(watch),
            "--", *torchrun_argv(3, free_port())]
    err = open(tmp_path / "stderr.log", "w")  # noqa: SIM115 - closed in finally
    p = subprocess.Popen(argv, cwd=str(REPO), env=env, stdout=subprocess.PIPE, stderr=err,
                         start_new_session=True)
    job = Job(procs=[p], ready=ready, world=3)
    try:
        job.wait("steady", timeout=240)
        t_hang = time.monotonic()  # rank 2 starts sleeping in its dataset right after this mark
        # Read raw bytes: a buffered readline would hide lines that select() no longer reports.
        assert p.stdout is not None
        fd = p.stdout.fileno()
        os.set_blocking(fd, False)
        buf = b""
        t_verdict = None
        interrupted = False
        end = time.monotonic() + hang_after + 60
        while time.monotonic() < end and t_verdict is None:
            # Ctrl-C while the stall is being diagnosed (py-spy and the dumps take seconds): the verdict still
            # comes out whole, and the stuck job is left running as after a verdict, not handed the Ctrl-C.
            if not interrupted and "diagnosing" in (tmp_path / "stderr.log").read_text(errors="replace"):
                os.kill(p.pid, signal.SIGINT)
                interrupted = True
            try:
                chunk = os.read(fd, 65536)
            except BlockingIOError:
                chunk = None
            if chunk == b"":
                break
            if chunk:
                buf += chunk
                if b"\nVerdict:" in buf or buf.startswith(b"Verdict:"):
                    t_verdict = time.monotonic()
            else:
                time.sleep(0.1)
        out = [buf.decode(errors="replace")]
        text = "".join(out)
        assert t_verdict is not None, text + "\n" + (tmp_path / "stderr.log").read_text()[-3000:]
        took = t_verdict - t_hang
        assert took <= hang_after + 10, f"verdict {took:.1f} s after the hang began"
        assert "HANG010" in text and "rank 2" in text and f"hangjob.py:{LINE('dataset-sleep')}" in text
        ranks = job.rank_pids()
        import psutil

        assert all(psutil.Process(pid).is_running() for pid in ranks.values()), "the job must be left running"
        assert list((watch / "fr").glob("rank*.pkl")), "the agent's flight-recorder dumps"
        assert list((watch / "progress").glob("rank*.json"))
        print(f"\nwrapper: verdict {took:.1f} s after the hang began (hang-after {hang_after:g} s)")
        assert interrupted
        p.wait(timeout=30)  # the Ctrl-C held during the diagnosis: commdoctor stops watching, the job stays
        assert p.returncode == 1
        assert "stopped watching; the job keeps running" in (tmp_path / "stderr.log").read_text()
        assert all(psutil.Process(pid).is_running() for pid in ranks.values())
    finally:
        import psutil

        victims = []
        for pid in [p.pid, *job.rank_pids().values()]:
            try:
                pr = psutil.Process(pid)
                victims += [pr, *pr.children(recursive=True)]
            except psutil.NoSuchProcess:
                pass
        # The torchrun agent is a child of commdoctor; after commdoctor exits, find it from the ranks' parents.
        for pid in job.rank_pids().values():
            try:
                parent = psutil.Process(pid).parent()
                if parent is not None and "torch.distributed.run" in " ".join(parent.cmdline()):
                    victims.append(parent)
            except psutil.NoSuchProcess:
                pass
        for v in victims:
            try:
                v.kill()
            except psutil.NoSuchProcess:
                pass
        if p.poll() is None:
            p.kill()
        p.wait(timeout=10)
        err.close()


def test_hang_without_pid_says_which_of_two_jobs_it_took_and_why(mismatch: Job) -> None:
    """Two jobs on the host: one hung in its collectives, one whose ranks only sleep. No silent choice."""
    idle: list[subprocess.Popen[bytes]] = []
    job = mismatch
    try:
        for r in range(2):  # a second job: RANK set, nothing communicates
            idle.append(subprocess.Popen(
                [sys.executable, "-c", "import time; time.sleep(300)"],
                env=base_env({"RANK": str(r), "WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "1"}),
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, start_new_session=True))
        import psutil

        end = time.monotonic() + 60  # each sleeper has become its own program (exec done) before we look
        while time.monotonic() < end and not all("time.sleep(300)" in " ".join(psutil.Process(q.pid).cmdline())
                                                 for q in idle):
            time.sleep(0.05)
        doc, p = run_json("hang")
    finally:
        for q in idle:
            q.kill()
            q.wait(timeout=10)
    (choice,) = findings(doc, "HANG004")
    title = choice["title"]
    pids = job.rank_pids()
    hung = " ".join(str(pids[r]) for r in sorted(pids))
    sleepers = " ".join(str(q.pid) for q in idle)
    # Both jobs are listed with what was seen of them (other tests' jobs may run beside them on a
    # shared machine, so which one is taken is asserted only when these two are the only ones).
    assert re.search(rf"\(pids {hung}\), running [^,]+, 3 of 3 wait in communication", title), title
    assert re.search(rf"\(pids {sleepers}\), running [^,]+, 0 of 2 wait in communication", title), title
    if title.startswith("2 jobs on this host"):
        assert f"(pids {hung})" in title.split("Other job(s):")[0]
        assert "the only one whose ranks wait in communication" in title
        assert verdict(doc)["code"] == "HANG011"


def test_hang_pid_of_no_process_is_a_usage_error() -> None:
    from tests.conftest import run_cli

    p = run_cli("hang", "--pid", "999999")
    assert p.returncode == 2 and "--pid 999999: no such process" in p.stderr and not p.stdout
