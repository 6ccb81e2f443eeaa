"""Long work shows a meter on a real terminal and nothing in a pipe or with --json (issues 19 and 20).

Each command runs in a fresh interpreter with a real pseudo-terminal
(``pty.openpty``) as its stderr, as a user's shell gives it, or with pipes, as a
script does. ``COMMDOCTOR_PROGRESS_DELAY_S=0`` lets a meter draw at once, so the
inputs stay small; it also shows that the silence in a pipe or with --json is
the rule, not the delay.
"""

from __future__ import annotations

import json
import os
import pty
import select
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.conftest import needs_torch
from tests.netlab import parallel

REPO = Path(__file__).resolve().parent.parent
ENV = {**os.environ, "PYTHONPATH": str(REPO), "COMMDOCTOR_PROGRESS_DELAY_S": "0", "NO_COLOR": "1"}


def run_tty(*args: str, stdout_tty: bool = True, timeout: float = 120,
            env: dict[str, str] | None = None) -> tuple[int, str, str]:
    """``commdoctor ARGS`` with stderr (and stdout unless told) on a pseudo-terminal: (rc, terminal, stdout).

    The terminal text is everything written to the pty, escapes included.
    """
    master, slave = pty.openpty()
    out = None if stdout_tty else subprocess.PIPE
    p = subprocess.Popen([sys.executable, "-m", "commdoctor", *args], cwd=str(REPO), env=env or ENV,
                         stdin=subprocess.DEVNULL, stdout=slave if stdout_tty else out, stderr=slave)
    os.close(slave)
    chunks: list[bytes] = []
    # stdout is drained while the child runs: a --json document larger than the pipe's buffer
    # would otherwise block the child's write until the timeout below.
    got: list[bytes] = []
    reader = None
    if not stdout_tty and p.stdout is not None:
        reader = threading.Thread(target=lambda: got.append(p.stdout.read()), daemon=True)  # type: ignore[union-attr]
        reader.start()
    end = time.monotonic() + timeout
    try:
        while time.monotonic() < end:
            ready, _, _ = select.select([master], [], [], 0.2)
            if ready:
                try:
                    data = os.read(master, 65536)
                except OSError:  # EIO: the child closed the terminal
                    data = b""
                if not data:
                    break
                chunks.append(data)
            elif p.poll() is not None:
                break
        rc = p.wait(timeout=max(1.0, end - time.monotonic()))
        if reader is not None:
            reader.join(timeout=max(1.0, end - time.monotonic()))
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        os.close(master)
    return rc, b"".join(chunks).decode("utf-8", "replace"), b"".join(got).decode("utf-8", "replace")


def run_pipe(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "commdoctor", *args], cwd=str(REPO), env=env or ENV,
                          capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)


@pytest.fixture(scope="module")
def big_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """About 1.5 MB of a real job's NCCL_DEBUG=INFO output (fixtures/logs/nccl-peer-died), repeated."""
    src = REPO / "fixtures" / "logs" / "nccl-peer-died"
    text = "".join(p.read_text(errors="replace") for p in sorted(src.glob("*.log")))
    assert len(text) > 10000
    out = tmp_path_factory.mktemp("biglog") / "rank0.log"
    out.write_text(text * (1_500_000 // len(text) + 1))
    return out


def test_logs_re_engine_shows_progress_within_one_file(big_log: Path) -> None:
    """The 314 MB report: --engine re read one big file with no meter. Now it moves within the file."""
    rc, term, _ = run_tty("logs", "--engine", "re", str(big_log))
    assert rc in (0, 1), term
    draws = [ln for ln in term.split("\r") if ln.startswith("reading logs (bytes): ")]
    assert len(draws) >= 2, term[:3000]  # more than one draw while one file is read
    assert any("%)" in d and not d.startswith("reading logs (bytes): 0/") for d in draws)
    assert "Verdict" in term


def test_logs_meter_silent_in_a_pipe_and_with_json(big_log: Path) -> None:
    p = run_pipe("logs", str(big_log))
    assert "reading logs" not in p.stderr + p.stdout and "Verdict" in p.stdout
    rc, term, out = run_tty("logs", "--json", str(big_log), stdout_tty=False)
    assert "reading logs" not in term and out.lstrip().startswith("{")


def test_report_shows_progress_reading_its_material(big_log: Path, tmp_path: Path) -> None:
    src = REPO / "fixtures" / "tui" / "logs-job.json"
    rc, term, _ = run_tty("report", "--from", str(src), "--logs", str(big_log), "-o", str(tmp_path / "r"))
    assert (tmp_path / "r.md").exists(), term
    assert "reading the report's material (bytes): " in term
    rc, term, out = run_tty("report", "--from", str(src), "--logs", str(big_log), "--json", stdout_tty=False)
    assert "reading the report's material" not in term and out.lstrip().startswith("{")
    p = run_pipe("report", "--from", str(src), "--logs", str(big_log), "-o", str(tmp_path / "q"))
    assert "reading the report's material" not in p.stderr and (tmp_path / "q.md").exists()


def test_records_show_progress_on_a_big_set(tmp_path: Path) -> None:
    """Records written with the hooks' own record type: 4 ranks x 300 calls."""
    from commdoctor.core.records import SCHEMA, CallRecord, record_path

    d = tmp_path / "hooks"
    d.mkdir()
    for rank in range(4):
        lines = [json.dumps({"schema": SCHEMA, "kind": "header", "rank": rank, "world_size": 4, "time": 0.0})]
        for seq in range(300):
            for kind in ("enter", "exit"):
                lines.append(CallRecord(kind=kind, rank=rank, group="0", seq=seq, op="all_reduce", time=1.0 + seq,
                                        reduce_op="SUM", dtype="float32", shapes=[[4]], numel=4,
                                        site="train.py:10").to_json())
        Path(record_path(str(d), rank)).write_text("\n".join(lines) + "\n")
    rc, term, _ = run_tty("records", str(d))
    assert "reading hook records (files): " in term, term[:2000]
    p = run_pipe("records", str(d))
    assert "reading hook records" not in p.stderr + p.stdout
    rc, term, out = run_tty("records", "--json", str(d), stdout_tty=False)
    assert "reading hook records" not in term and out.lstrip().startswith("{")


def test_hang_fr_shows_progress_on_a_big_set(tmp_path: Path) -> None:
    """64 dumps (the real dumps of a hung gloo job, fixtures/hang/mismatch/fr, copied under more ranks)."""
    d = tmp_path / "fr"
    d.mkdir()
    for i in range(64):
        shutil.copy(REPO / "fixtures" / "hang" / "mismatch" / "fr" / f"rank{i % 3}.pkl", d / f"rank{i}.pkl")
    rc, term, _ = run_tty("hang", "--fr", str(d))
    assert "flight recorder: reading dump headers: " in term, term[:2000]
    rc, term, out = run_tty("hang", "--fr", str(d), "--json", stdout_tty=False)
    assert "flight recorder" not in term and out.lstrip().startswith("{")
    p = run_pipe("hang", "--fr", str(d))
    assert "flight recorder: reading" not in p.stderr


JOB = """\
import os, socket, sys, time, torch, torch.distributed as dist
s = socket.socket(); s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]; s.close()
dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=0, world_size=1)
x = torch.ones(4)
for _ in range(3):
    dist.all_reduce(x)
# No progress from here on: stay until the watcher has begun its diagnosis (it asks for the flight recorder
# in its watch folder), and a little longer for it to read this process; at most 60 s.
asked, end = os.path.join(sys.argv[1], "fr-request"), time.monotonic() + 60
while not os.path.exists(asked) and time.monotonic() < end:
    time.sleep(0.2)
time.sleep(2)
"""


@needs_torch
def test_watch_mode_counts_the_seconds_without_progress(tmp_path: Path) -> None:
    """``run --hang-after 3 -- python job.py``: a real gloo rank that stops making progress."""
    job = tmp_path / "job.py"
    job.write_text(JOB)
    env = {**ENV, "RANK": "0", "WORLD_SIZE": "1"}
    w, w2 = str(tmp_path / "w"), str(tmp_path / "w2")
    # The two jobs are independent and spend their time waiting out --hang-after: they run at once.
    (rc, term, _), p = parallel(
        lambda: run_tty("run", "--hang-after", "3", "--watch-dir", w, "--", sys.executable, str(job), w, env=env),
        lambda: run_pipe("run", "--hang-after", "3", "--watch-dir", w2, "--", sys.executable, str(job), w2, env=env),
        timeout=150)
    assert "no progress from the job (" in term and "/3 s (" in term, term[-3000:]
    assert "commdoctor: no progress for" in term
    assert "no progress for" in p.stderr and "no progress from the job (" not in p.stderr + p.stdout


@needs_torch
def test_node_0_shows_the_nodes_joining(tmp_path: Path) -> None:
    """Node 0 of a 2-node srun job whose node 1 never comes: the join wait counts the nodes present."""
    from tests.test_multinode_units import free_port, launcher_env

    env = {**launcher_env("srun", 0, free_port()), "PYTHONPATH": str(REPO), "COMMDOCTOR_PROGRESS_DELAY_S": "0",
           "NO_COLOR": "1"}
    args = ("run", "--no-tui", "--select", "MN", "--join-timeout", "3")
    env2 = {**env, "MASTER_PORT": str(free_port())}
    (rc, term, _), (rc2, term2, out) = parallel(lambda: run_tty(*args, env=env),
                                                lambda: run_tty(*args, "--json", env=env2, stdout_tty=False), timeout=150)
    assert "waiting for the nodes to join: 1/2 (50%)" in term, term[-3000:]
    assert "waiting for the nodes to join" not in term2 and out.lstrip().startswith("{")
