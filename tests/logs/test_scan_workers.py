"""A job folder read by worker processes gives the model one process gives, and so does each transport line
whose writer is read from its head once.

Workers (``loaders.logs._scan_in_workers``) are real forked processes here; what they send back is
replayed into the model in file order. Every comparison is against ``jobs=1``, the plain reading.
"""

from __future__ import annotations

import dataclasses
import gzip
import os
import re
from pathlib import Path
from typing import Any

import pytest

from commdoctor.loaders import logs
from commdoctor.loaders.logs import load_logs


def _plain(obj: Any) -> Any:
    """The model as plain data, so two models compare field by field (sets sorted, patterns by their text)."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: _plain(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, dict):
        return {repr(k): _plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_plain(v) for v in obj]
    if isinstance(obj, (set, frozenset)):
        return sorted(repr(_plain(v)) for v in obj)
    if isinstance(obj, re.Pattern):
        return obj.pattern
    if obj is None or isinstance(obj, (str, int, float, bool, bytes)):
        return obj
    return repr(obj)


def _rank_log(rank: int, lines: int = 3000) -> bytes:
    """One rank's NCCL_DEBUG=INFO log: its communicator, transport lines all through it, training steps."""
    host, pid, tid = f"node{rank // 4}", 1000 + rank, 2000 + rank
    head = f"{host}:{pid}:{tid} [{rank % 4}] NCCL INFO "
    out = [f"{host}:{pid}:{pid} [{rank % 4}] NCCL INFO Bootstrap : Using eth0:10.0.0.{rank + 1}<0>",
           "NCCL version 2.21.5+cuda12.4",
           f"{head}comm 0x{0x55d0 + rank:x} rank {rank} nranks 8 cudaDev {rank % 4} busId {rank}000 - Init START"]
    for i in range(lines):
        peer = (rank + 1 + i % 3) % 8
        if i % 4 == 0:
            out.append(f"{head}Channel {i % 16:02d}/0 : {rank}[{rank % 4}] -> {peer}[{peer % 4}] via P2P/IPC/read")
        elif i % 4 == 1:
            out.append(f"{head}Channel {i % 16:02d}/1 : {rank}[{rank % 4}] -> {peer}[{peer % 4}] [send] via NET/IB/0/GDRDMA")
        else:
            out.append(f"[rank{rank}]:{rank}: step {i} loss 2.{i % 97:02d}")
    return ("\n".join(out) + "\n").encode()


@pytest.fixture(scope="module")
def job(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder of 9 inputs of every kind the reader meets: plain rank logs, a gzip, CRLF, bad bytes, a failure."""
    d = tmp_path_factory.mktemp("job")
    for r in range(6):
        (d / f"rank{r}.log").write_bytes(_rank_log(r))
    (d / "rank6.log.gz").write_bytes(gzip.compress(_rank_log(6)))
    (d / "rank7.log").write_bytes(_rank_log(7).replace(b"\n", b"\r\n"))
    failing = (_rank_log(3, 400).replace(b"node0:", b"node9:")
               + b"node9:1003:2003 [3] include/alloc.h:114 NCCL WARN Cuda failure 'out of memory'\n"
               + b"node9:1003:2003 [3] NCCL INFO transport/p2p.cc:200 -> 1\n"
               + b"\x1b[31mnode9:1003:2003 [3] NCCL INFO Channel 00/0 : 3[3] -> 9[1] via SHM/direct/direct\x1b[0m\n"
               + b"node9:1003:2003 [3] NCCL INFO Channel 01/0 : 3[3] -> 5[1] via P2P/IPC \xff\xfe\n"
               + b"[rank3]:[E1121 06:01:02.000000 ProcessGroupNCCL.cpp:552] [Rank 3] Watchdog caught collective"
               + b" operation timeout: WorkNCCL(SeqNum=9, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000)"
               + b" ran for 600021 milliseconds before timing out.\n")
    (d / "zz-failing.log").write_bytes(failing)
    return d


def _spy(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Which files a worker's result came back for (True) or were read here (False)."""
    seen: list[bool] = []
    real = logs._scan_in_workers

    def spy(*a: Any, **k: Any) -> Any:
        for got in real(*a, **k):
            seen.append(got is not None)
            yield got

    monkeypatch.setattr(logs, "_scan_in_workers", spy)
    return seen


def test_workers_give_the_model_one_process_gives(job: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    one = load_logs([str(job)], jobs=1)
    seen = _spy(monkeypatch)
    many = load_logs([str(job)], jobs=3)
    assert seen == [True] * 9  # every file came from a worker
    assert _plain(many) == _plain(one)
    # The parts a user reads, by name: the buried failure, the joins, the transports of every file.
    oom = many.first("cuda_oom")
    assert oom is not None and (oom.ev.source, oom.ev.line) == (str(job / "zz-failing.log"), 404)
    assert many.first("watchdog_timeout") is not None
    assert {st.compression for st in many.inputs} == {"", "gzip"}
    assert len(many.ranks) >= 9 and "3->9 SHM" in many.transports
    assert many.lines_seen == one.lines_seen == sum(st.lines for st in one.inputs)


def test_a_file_too_full_for_a_worker_is_read_here(job: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    one = load_logs([str(job)], jobs=1)
    monkeypatch.setattr(logs, "WORKER_MAX_HELD", 1000)  # inherited by the forked workers
    seen = _spy(monkeypatch)
    many = load_logs([str(job)], jobs=2)
    assert False in seen and True in seen  # the failing file's lines come to more than 1000 bytes
    assert _plain(many) == _plain(one)


def test_a_worker_that_dies_leaves_its_files_to_be_read_here(job: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    one = load_logs([str(job)], jobs=1)
    real = logs._scan_file

    def dies_on_rank2(path: str) -> Any:
        if path.endswith("rank2.log"):
            os._exit(9)  # as a worker killed by the OOM killer: no result, no goodbye
        return real(path)

    monkeypatch.setattr(logs, "_scan_file", dies_on_rank2)
    seen = _spy(monkeypatch)
    many = load_logs([str(job)], jobs=2)
    assert seen[:2] == [True, True] and seen.count(False) >= 1  # rank2 and the rest of its worker's share
    assert _plain(many) == _plain(one)


def test_small_sets_and_stdin_stay_in_one_process(job: Path) -> None:
    files = sorted(str(p) for p in job.iterdir())
    sizes = logs._sizes(files)
    assert logs._workers(sizes, None) == 1  # under PARALLEL_MIN_BYTES: forking would cost more than it saves
    assert logs._workers(sizes, 1) == 1
    assert logs._workers([100 << 20] * 8, None) == 1  # every file too big for a worker
    assert logs._sizes(["-"]) == [-1]


def test_a_transport_lines_writer_read_from_its_head_is_the_one_read_from_the_whole_line(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Heads of every shape: launcher prefixes, a timestamp, an ANSI residue, CRLF, bytes clean() rewrites,
    # NCCL 2.0's headless form, a line that is not NCCL's; and a communicator line that ties host:pid to a
    # rank only after that process's first transport lines (the rank must follow it, not the first line's).
    lines = [
        b"[rank5]:h1:11:21 [1] NCCL INFO Channel 00/0 : 5[1] -> 6[2] via P2P/IPC",
        b"[rank5]:h1:11:21 [1] NCCL INFO Channel 01/0 : 5[1] -> 7[3] via P2P/IPC",
        b"3: h2:12:22 [2] NCCL INFO Channel 00/0 : 3[2] -> 4[3] via SHM/direct/direct",
        b"h3:13:23 [0] NCCL INFO Channel 00/1 : 0[0] -> 1[1] [send] via NET/IB/0/GDRDMA",
        b"h3:13:23 [0] NCCL INFO comm 0x1 rank 12 nranks 16 cudaDev 0 busId 1000 - Init START",
        b"h3:13:23 [0] NCCL INFO Channel 01/1 : 0[0] -> 2[2] [send] via NET/IB/0/GDRDMA",
        b"[2026-01-02 03:04:05.678] h4:14:24 [3] NCCL INFO Ring 00 : 3[3] -> 0[0] via P2P/CUMEM",
        b"[0mh5:15:25 [1] NCCL INFO Channel 00/0 : 1[1] -> 2[2] via P2P/IPC",
        b"h6:16:26 [2] NCCL INFO Channel 00/0 : 2[2] -> 3[3] via P2P/IPC\r",
        b"h6:16:26 [2] NCCL INFO Channel 01/0 : 2[2] -> 4[3] via P2P/IPC \xc3\xa9",
        b"h6:16:26 [2] NCCL INFO Channel 02/0 : 2[2] -> 5[3] via P2P/IPC\x07",
        b"INFO 0 -> 1 via P2P/IPC",
        b"INFO 1 -> 2 via P2P/IPC",
        b"h7:17:27 [0] NCCL INFO CollNet 00/0 : 3 [send] via COLLNET/IB/0",
        # Not NCCL's: the rank is in the tail, and the second line's pair and kind are the first's.
        b"some tool: Channel 00/0 : 7 -> 8 via NET/Socket/0 [rank7]",
        b"some tool: Channel 01/0 : 7 -> 8 via NET/Socket/1 [rank8]",
    ]
    log = tmp_path / "heads.log"
    log.write_bytes(b"\n".join(lines) + b"\n")
    cached = load_logs([str(log)], jobs=1)
    heads: list[int] = []
    real = logs._Builder.transport

    def count(self: logs._Builder, *a: Any) -> None:
        real(self, *a)
        heads.append(len(self._heads))

    monkeypatch.setattr(logs._Builder, "transport", count)
    load_logs([str(log)], jobs=1)
    assert heads and heads[-1] >= 4  # the NCCL heads were kept (not every line classified whole)
    monkeypatch.setattr(logs, "_head_decides", lambda *a: False)  # every line classified whole
    whole = load_logs([str(log)], jobs=1)
    assert _plain(cached) == _plain(whole)
    assert cached.ranks["h3:13"].rank == 12 and cached.ranks["rank8"].transports == {"NET/Socket"} and {"SHM", "NET/IB", "P2P/CUMEM"} <= set(cached.transport_kinds)


def test_a_transport_line_seen_in_an_earlier_file_gives_what_reading_it_afresh_gives(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Every rank log of a folder is a new stream, so the same transport lines are reported once per file;
    # what a line says by its bytes alone is kept from the first report. The writer's rank must still
    # follow what is learned later (h3:13 is tied to rank 12 only by the second file), a line under
    # another key must not take the kept one's, and the counts must count every report.
    lines = [
        b"h3:13:23 [0] NCCL INFO Channel 00/1 : 0[0] -> 1[1] [send] via NET/IB/0/GDRDMA",
        b"[rank5]:h1:11:21 [1] NCCL INFO Channel 00/0 : 5[1] -> 6[2] via P2P/IPC",
        b"h6:16:26 [2] NCCL INFO Channel 00/0 : 2[2] -> 3[3] via P2P/IPC\r",
        b"h6:16:26 [2] NCCL INFO Channel 01/0 : 2[2] -> 4[3] via P2P/IPC \xc3\xa9",
        b"INFO 0 -> 1 via P2P/IPC",
        b"some tool: Channel 01/0 : 7 -> 8 via NET/Socket/1 [rank8]",
        # Matched by two expressions, under two keys.
        b"h8:18:28 [0] NCCL INFO Channel 00/0 : 1 -> 2 via P2P/IPC INFO 3 -> 4 via SHM",
    ]
    files = []
    for i in range(4):
        extra = [b"h3:13:23 [0] NCCL INFO comm 0x1 rank 12 nranks 16 cudaDev 0 busId 1000 - Init START"] if i == 1 else []
        f = tmp_path / f"rank{i}.log"
        f.write_bytes(b"\n".join(extra + lines) + b"\n")
        files.append(str(f))
    kept: list[int] = []
    real = logs._Builder.transport

    def spy(self: logs._Builder, *a: Any) -> None:
        real(self, *a)
        kept.append(len(self._transport_lines))

    monkeypatch.setattr(logs._Builder, "transport", spy)
    memo = load_logs(files, jobs=1)
    assert 0 < kept[-1] < len(kept)  # lines were kept and found again

    def afresh(self: logs._Builder, *a: Any) -> None:
        self._transport_lines.clear()
        real(self, *a)

    monkeypatch.setattr(logs._Builder, "transport", afresh)
    fresh = load_logs(files, jobs=1)
    assert _plain(memo) == _plain(fresh)
    assert memo.transport_kinds == fresh.transport_kinds and sum(memo.transport_kinds.values()) >= 4 * 6
    assert memo.ranks["h3:13"].rank == 12


def test_a_worker_stuck_on_a_lock_it_inherited_is_stopped_and_its_files_read_here(
        job: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The workers are forked from the check's thread: a lock another thread held at that moment is held
    forever in the child. A worker that blocks on one sends nothing; the reader stops it after
    WORKER_SILENT_S and reads its files itself, and the run says so."""
    import contextlib
    import io
    import json
    import threading
    import time

    from commdoctor.cli import main

    one = load_logs([str(job)], jobs=1)
    held = threading.Lock()
    taken, done = threading.Event(), threading.Event()

    def holder() -> None:  # another thread of this process, holding the lock while the workers are forked
        with held:
            taken.set()
            done.wait(120)

    real = logs._scan_file

    def locks_on_rank2(path: str) -> Any:
        if path.endswith("rank2.log"):
            # In the worker nobody is left to release it (bounded, so that a reader that waited forever fails the test).
            held.acquire(timeout=40)
        return real(path)

    monkeypatch.setattr(logs, "_scan_file", locks_on_rank2)
    monkeypatch.setattr(logs, "WORKER_SILENT_S", 2.0)
    seen = _spy(monkeypatch)
    t = threading.Thread(target=holder, daemon=True)
    t.start()
    assert taken.wait(10)
    try:
        t0 = time.monotonic()
        many = load_logs([str(job)], jobs=2)
        took = time.monotonic() - t0
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            rc = main(["logs", str(job), "--json", "--jobs", "2"])
    finally:
        done.set()
        t.join(10)
    assert took < 30, took  # about WORKER_SILENT_S past the work itself, not the worker's 40 s
    assert seen[:2] == [True, True] and seen[2] is False and seen.count(False) >= 1
    assert _plain({**dataclasses.asdict(many), "notes": []}) == _plain({**dataclasses.asdict(one), "notes": []})
    assert len(many.notes) == 1 and str(job / "rank2.log") in many.notes[0] and "stopped" in many.notes[0]
    assert many.first("cuda_oom") is not None  # the verdict still comes
    doc = json.loads(out.getvalue())
    inputs = next(r for r in doc["results"] if r["check"] == "logs.inputs")
    assert inputs["status"] == "passed" and "rank2.log" in inputs["data"]["notes"][0], inputs
    assert doc["findings"][0]["code"] == "LOG031", doc["findings"][0]
    assert rc == 1


def test_a_slow_worker_that_shows_signs_of_life_is_waited_for(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A worker scanning a file for longer than WORKER_SILENT_S is not taken for stuck: it sends a sign of
    life after each block once BEAT_S has passed."""
    import time

    from commdoctor.parsing.scan import Scanner

    for r in range(4):
        (tmp_path / f"rank{r}.log").write_bytes(_rank_log(r, 20000))  # about 1.4 MB: several blocks
    one = load_logs([str(tmp_path)], jobs=1)
    parent = os.getpid()
    real = Scanner._block

    def slow_block(self: Any, body: bytes, first_line: int) -> Any:
        if os.getpid() != parent:
            time.sleep(0.3)  # a worker on a very busy machine
        return real(self, body, first_line)

    monkeypatch.setattr(Scanner, "_block", slow_block)
    monkeypatch.setattr(logs, "WORKER_SILENT_S", 1.0)
    monkeypatch.setattr(logs, "BEAT_S", 0.1)
    seen = _spy(monkeypatch)
    many = load_logs([str(tmp_path)], jobs=2)
    assert seen == [True] * 4  # every file from a worker, each taking over a second
    assert many.notes == []
    assert _plain(many) == _plain(one)


def test_the_default_takes_workers_only_for_cpus_the_load_leaves_free(monkeypatch: pytest.MonkeyPatch) -> None:
    """On a busy machine a worker only shares our CPU (bench/README.md, "Round 4"): the default is one process
    there, and one per free CPU on an idle machine; --jobs / COMMDOCTOR_JOBS still decide when given."""
    from commdoctor.loaders import cpus, hook_records

    monkeypatch.setattr(os, "sched_getaffinity", lambda _pid: {0, 1})
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    monkeypatch.delenv("COMMDOCTOR_JOBS", raising=False)
    monkeypatch.delenv("COMMDOCTOR_RECORDS_WORKERS", raising=False)
    big = [1 << 20] * 64  # a folder worth forking for
    assert cpus.others_running("0.50 0.40 0.30 3/120 999\n") == 2  # runnable now, less this process
    assert cpus.others_running("junk") is None
    real_now = cpus.others_running()
    assert real_now is None or real_now >= 0
    monkeypatch.setattr(cpus, "others_running", lambda: None)  # the average alone first
    for load, spare in ((0.0, 2), (0.4, 2), (1.0, 1), (1.7, 1), (16.0, 1)):
        monkeypatch.setattr(os, "getloadavg", lambda load=load: (load, load, load))
        assert cpus.spare_cpus() == spare, load
        assert logs._workers(big, None) == spare, load
        assert logs._workers(big, 2) == 2  # asked for: whatever the load
        assert hook_records.workers_default() == spare, load  # the records reader likewise
    monkeypatch.setenv("COMMDOCTOR_JOBS", "2")
    assert logs._workers(big, None) == 2
    monkeypatch.setenv("COMMDOCTOR_RECORDS_WORKERS", "2")
    assert hook_records.workers_default() == 2
    # Affinity narrower than the machine: the load is the machine's, taken as a share of all its CPUs.
    monkeypatch.setattr(os, "cpu_count", lambda: 16)
    monkeypatch.setattr(os, "getloadavg", lambda: (8.0, 8.0, 8.0))
    assert cpus.spare_cpus() == 1
    monkeypatch.setattr(os, "getloadavg", lambda: (1.0, 1.0, 1.0))
    assert cpus.spare_cpus() == 2
    # The average still counting a run of ours that just ended, nothing else runnable now: both CPUs.
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    monkeypatch.setattr(os, "getloadavg", lambda: (1.0, 0.8, 0.5))
    monkeypatch.setattr(cpus, "others_running", lambda: 0)
    assert cpus.spare_cpus() == 2
    monkeypatch.setattr(os, "getloadavg", lambda: (16.0, 16.0, 16.0))
    monkeypatch.setattr(cpus, "others_running", lambda: 12)  # busy both ways
    assert cpus.spare_cpus() == 1
