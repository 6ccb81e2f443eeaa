"""Watch mode (`commdoctor run --hang-after N -- torchrun ...`) on an asynchronous backend like NCCL.

The jobs (asyncjob.py) run on tests/fakenccl.py with ``FAKENCCL_STREAM_WAIT=1``: collectives return at
once and the ranks wait one line later, in the step's barrier, as NCCL jobs wait in
``torch.cuda.synchronize()`` or a later collective (../shared/gpu-captures/hangs). The verdict must come
within 10 s of --hang-after and rest on the flight recorder: which rank is behind, which calls differ.
One job per scenario; every wait is bounded and every process is killed.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterator

import psutil
import pytest

from tests.conftest import REPO, needs_tool, needs_torch, run_json
from tests.integration.hang_jobs import HERE, Job, base_env

pytestmark = [needs_torch, needs_tool("py-spy"), pytest.mark.usefixtures("pyspy_can_attach"), pytest.mark.slow]

JOB = HERE / "asyncjob.py"
HANG_AFTER = 5.0


def line(name: str) -> int:
    for i, text in enumerate(JOB.read_text().splitlines(), 1):
        if f"# MARK:{name}" in text:
            return i
    raise AssertionError(f"no MARK:{name} in {JOB}")


class Watched:
    def __init__(self, text: str, took: float | None, rc: int | None, watch: Path, stderr: str) -> None:
        self.text, self.took, self.rc, self.watch, self.stderr = text, took, rc, watch, stderr


def _kill_tree(pids: list[int]) -> None:
    victims: list[psutil.Process] = []
    for pid in pids:
        try:
            pr = psutil.Process(pid)
            victims += [pr, *pr.children(recursive=True)]
        except psutil.NoSuchProcess:
            pass
    for v in victims:
        try:
            v.kill()
        except psutil.NoSuchProcess:
            pass


def watch_job(scenario: str, tmp: Path) -> Watched:
    """Run the job under `commdoctor run --hang-after 5 --kill-on-hang`; time the verdict from the hang's start."""
    from tests.ports import free_port

    ready, watch = tmp / "ready", tmp / "watch"
    ready.mkdir()
    env = base_env({"CDH_SCENARIO": scenario, "CDH_READY_DIR": str(ready), "FAKENCCL_STREAM_WAIT": "1",
                    "NO_COLOR": "1"})
    argv = [sys.executable, "-m", "commdoctor", "run", "--hang-after", str(HANG_AFTER), "--kill-on-hang",
            "--watch-dir", str(watch), "--", sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "3",
            "--master-addr", "127.0.0.1", "--master-port", str(free_port()), "--monitor-interval", "0.5", str(JOB)]
    err_path = tmp / "stderr.log"
    with open(err_path, "wb") as err:
        p = subprocess.Popen(argv, cwd=str(REPO), env=env, stdout=subprocess.PIPE, stderr=err,
                             start_new_session=True)
    job = Job(procs=[p], ready=ready, world=3)
    try:
        job.wait("steady", timeout=240)
        t_hang = time.monotonic()  # the next step is the one that hangs
        assert p.stdout is not None
        fd = p.stdout.fileno()
        os.set_blocking(fd, False)
        buf, took = b"", None
        end = time.monotonic() + HANG_AFTER + 60
        while time.monotonic() < end:
            try:
                chunk = os.read(fd, 65536)
            except BlockingIOError:
                chunk = None
            if chunk == b"":
                break  # commdoctor ended (it stops the job after the verdict)
            if chunk:
                buf += chunk
                if took is None and (b"\nVerdict:" in buf or buf.startswith(b"Verdict:")):
                    took = time.monotonic() - t_hang
            else:
                time.sleep(0.1)
        try:
            rc = p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            rc = None
        return Watched(buf.decode(errors="replace"), took, rc, watch, err_path.read_text(errors="replace"))
    finally:
        _kill_tree([p.pid, *job.rank_pids().values()])
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass


@pytest.fixture(scope="module")
def straggler(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Watched]:
    yield watch_job("straggler", tmp_path_factory.mktemp("async-straggler"))


@pytest.fixture(scope="module")
def mismatch(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Watched]:
    yield watch_job("mismatch", tmp_path_factory.mktemp("async-mismatch"))


def _verdict(w: Watched) -> str:
    assert w.took is not None, f"no verdict\n{w.text[-4000:]}\n{w.stderr[-3000:]}"
    return next(ln for ln in w.text.splitlines() if ln.startswith("Verdict:"))


def test_straggler_is_named_with_its_line_within_ten_seconds(straggler: Watched) -> None:
    v = _verdict(straggler)
    print(f"\nasync straggler: verdict {straggler.took:.1f} s after the hang began (hang-after {HANG_AFTER:g} s)")
    assert straggler.took is not None and straggler.took <= HANG_AFTER + 10, \
        f"verdict {straggler.took:.1f} s after the hang began"
    assert v.startswith("Verdict: HANG010 rank 2 is sleeping"), v
    assert f"asyncjob.py:{line('async-sleep')} (load_batch)" in v
    # The recorder knows what the others wait in; their stacks are one line later, in the barrier.
    assert "ranks 0 and 1 wait for it in all_reduce #" in v
    assert f"0 and 1: in barrier at asyncjob.py:{line('async-barrier')}" in straggler.text
    assert "measured by flight-recorder status" in straggler.stderr
    assert sorted(p.name for p in (straggler.watch / "fr").glob("rank*.pkl")) == ["rank0.pkl", "rank1.pkl", "rank2.pkl"]
    assert straggler.rc == 1 and "stopping the job (--kill-on-hang)" in straggler.stderr


def test_mismatch_names_both_calls_from_the_recorder_within_ten_seconds(mismatch: Watched) -> None:
    v = _verdict(mismatch)
    print(f"\nasync mismatch: verdict {mismatch.took:.1f} s after the hang began (hang-after {HANG_AFTER:g} s)")
    assert mismatch.took is not None and mismatch.took <= HANG_AFTER + 10, \
        f"verdict {mismatch.took:.1f} s after the hang began"
    assert v.startswith("Verdict: HANG011 ranks called different collectives: #"), v
    # Each rank writes its recorder's dump without stacks at once and with them a moment later (their first
    # call imports torch._dynamo), so a verdict may come while some ranks' dumps carry stacks. A line it
    # names must be the one that made the call, never the test backend's own (fakenccl.py under torch).
    m = re.search(r"is all_reduce(?: at asyncjob\.py:(\d+))? on ranks 0 and 1, "
                  r"broadcast(?: at asyncjob\.py:(\d+))? on rank 2 \(flight recorder", v)
    assert m, v
    assert m.group(1) in (None, str(line("async-allreduce"))) and m.group(2) in (None, str(line("async-broadcast"))), v
    assert "group )" not in v  # gloo's recorder names no group
    assert f"0-2: in barrier at asyncjob.py:{line('async-barrier')}" in mismatch.text
    if m.group(1) is None and m.group(2) is None:
        # Every rank is already past the calls that differ: the remedy looks back from where they wait.
        assert f"around the lines before asyncjob.py:{line('async-barrier')} (where the ranks wait now, past #" \
            in mismatch.text
    else:  # the remedy points at the line a recorder stack gave
        assert re.search(r"look for a rank-dependent branch around [^\n]*asyncjob\.py:"
                         f"({line('async-broadcast')}|{line('async-allreduce')})", mismatch.text), mismatch.text
    assert "HANG010" not in mismatch.text  # not a straggler: every rank waits
    assert mismatch.rc == 1


def test_the_agents_dumps_alone_give_the_same_verdicts(straggler: Watched, mismatch: Watched) -> None:
    """`commdoctor hang --fr WATCH_DIR/fr` after the job: the recorder alone names the rank behind and the calls."""
    doc, p = run_json("hang", "--fr", str(straggler.watch / "fr"))
    v = doc["verdict"]
    assert v["code"] == "HANG010" and v["ranks"] == [2], (v, p.stderr[-2000:])
    assert "rank 2 never entered all_reduce #" in v["title"]
    doc, p = run_json("hang", "--fr", str(mismatch.watch / "fr"))
    v = doc["verdict"]
    assert v["code"] == "HANG011" and v["ranks"] == [2], (v, p.stderr[-2000:])
    assert "is all_reduce on ranks 0 and 1, broadcast on rank 2" in v["title"]
