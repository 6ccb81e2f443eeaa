"""LogIndex and FilterScan against an independent reading of the same bytes."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from commdoctor.tui import logindex
from commdoctor.tui.logindex import FilterScan, LogFilter, LogIndex, level_of, parse_ranks

GEN = Path("/work/shared/tools/gen_nccl_log.py")


def oracle_lines(data: bytes) -> list[bytes]:
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    return lines


def show(raw: bytes) -> str:
    return logindex.display(raw[: logindex.MAX_LINE])


@pytest.fixture
def small_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Blocks of 64 bytes, so a few KiB cross hundreds of block boundaries."""
    monkeypatch.setattr(logindex, "BLOCK", 64)
    monkeypatch.setattr(logindex, "CHUNK", 256)


def check_all(path: Path) -> LogIndex:
    data = path.read_bytes()
    want = oracle_lines(data)
    ix = LogIndex(str(path))
    ix.index_all()
    assert ix.complete
    assert ix.line_count() == len(want)
    for n, raw in enumerate(want):
        got = ix.read(n)
        assert got == [show(raw)], (n, raw)
    assert ix.read(len(want)) == []
    assert ix.read(0, len(want) + 5) == [show(r) for r in want]
    return ix


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.binary(max_size=150).map(lambda b: b.replace(b"\n", b"")), max_size=40),
       st.booleans())
def test_random_content_reads_back_line_for_line(tmp_path_factory: pytest.TempPathFactory, lines: list[bytes],
                                                 trailing: bool) -> None:
    old_block = logindex.BLOCK
    logindex.BLOCK = 64
    try:
        p = tmp_path_factory.mktemp("ix") / "x.log"
        data = b"\n".join(lines) + (b"\n" if trailing and lines else b"")
        p.write_bytes(data)
        check_all(p)
    finally:
        logindex.BLOCK = old_block


def test_edge_files(tmp_path: Path, small_blocks: None) -> None:
    cases = {
        "empty": b"",
        "one-no-newline": b"hello",
        "only-newlines": b"\n\n\n",
        "crlf": b"a\r\nb\r\n",
        "binary": bytes(range(256)) * 3,
        "utf8-split-across-blocks": ("é" * 100 + "\n" + "ü" * 50).encode(),
    }
    for name, data in cases.items():
        p = tmp_path / name
        p.write_bytes(data)
        check_all(p)
    ix = LogIndex(str(tmp_path / "binary"))
    assert all("\x1b" not in s and "\x00" not in s for s in ix.read(0, 10))  # no terminal control


def test_huge_line_is_cut_not_loaded(tmp_path: Path) -> None:
    p = tmp_path / "huge.log"
    p.write_bytes(b"start\n" + b"x" * (logindex.MAX_LINE * 4) + b"\nend\n")
    ix = LogIndex(str(p))
    ix.index_all()
    assert ix.line_count() == 3
    start, huge, end = ix.read(0, 3)
    assert start == "start" and end == "end"
    assert len(huge) <= logindex.MAX_LINE + 2 and huge.endswith("…")


def test_first_screen_needs_one_block(tmp_path: Path) -> None:
    """Before any background indexing, the first lines read and the count is an estimate."""
    p = tmp_path / "big.log"
    line = b"node01:1:2 [0] NCCL INFO some line of text that is long enough\n"
    p.write_bytes(line * (3 * logindex.BLOCK // len(line) + 10))
    ix = LogIndex(str(p))
    assert not ix.complete and ix.progress < 1
    assert ix.read(0, 3) == [line.decode().rstrip("\n")] * 3
    est = ix.line_count()
    ix.start_indexing()
    for _ in range(200):
        if ix.complete:
            break
        time.sleep(0.05)
    exact = ix.line_count()
    assert ix.complete and exact == p.read_bytes().count(b"\n")
    assert abs(est - exact) / exact < 0.05
    ix.close()


def test_levels() -> None:
    assert level_of(b"node02:1019:3019 [3] include/alloc.h:114 NCCL WARN Cuda failure 'out of memory'") == "error"
    assert level_of(b"[rank0]:[E1121 06:01:02.000 ProcessGroupNCCL.cpp:616] Watchdog caught") == "error"
    assert level_of(b"Traceback (most recent call last):") == "error"
    assert level_of(b"[rank1]:[W1121 06:01:02.000 ProcessGroupNCCL.cpp:100] Warning: ...") == "warn"
    assert level_of(b"UserWarning: something") == "info"  # no word boundary before Warning
    assert level_of(b"torch/distributed/x.py:1: UserWarning: WARNING: deprecated") == "warn"
    assert level_of(b"node00:1:2 [0] NCCL INFO Connected all rings") == "info"


def test_parse_ranks() -> None:
    assert parse_ranks("3") == {3}
    assert parse_ranks("0-3, 7") == {0, 1, 2, 3, 7}
    assert parse_ranks("") == frozenset()
    for bad in ("x", "3-1", "-2", "1-"):
        with pytest.raises(ValueError):
            parse_ranks(bad)


@pytest.fixture(scope="module")
def nccl_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real-format 32-rank NCCL log from the shared generator (2 MB: many chunks with CHUNK patched)."""
    if not GEN.exists():
        pytest.skip("shared log generator missing")
    p = tmp_path_factory.mktemp("nccl") / "job.log"
    subprocess.run([sys.executable, str(GEN), str(p), "2"], check=True, timeout=120)
    return p


def _oracle(lines: list[bytes], pid_rank: dict[tuple[bytes, bytes], int], filt: LogFilter) -> list[int]:
    """Which lines pass, worked out with plain string operations (not the module's regexes)."""
    out = []
    for i, l in enumerate(lines):
        rank = host = None
        if l.startswith(b"[rank"):
            rank = int(l[5:l.index(b"]")])
        elif b": " in l[:4] and l.split(b": ", 1)[0].isdigit():
            rank = int(l.split(b": ", 1)[0])
        elif l.count(b":") >= 2 and b" [" in l:
            h, pid = l.split(b":")[:2]
            if pid.isdigit():
                host = h.decode()
                rank = pid_rank.get((h, pid))
        if host is None and rank is not None:
            host = {r: h.decode() for (h, _), r in pid_rank.items()}.get(rank)
        if filt.ranks and rank not in filt.ranks:
            continue
        if filt.hosts and host not in filt.hosts:
            continue
        if filt.level == "error" and b"NCCL WARN" not in l:  # the only error form this generator writes
            continue
        out.append(i)
    return out


def test_filters_match_an_independent_reading(nccl_log: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(logindex, "CHUNK", 256 * 1024)
    lines = oracle_lines(nccl_log.read_bytes())
    pid_rank = {}
    for l in lines:
        if b" nranks " in l:
            h, pid = l.split(b":")[:2]
            pid_rank[(h, pid)] = int(l.split(b" rank ")[1].split()[0])
    assert len(pid_rank) == 32
    ix = LogIndex(str(nccl_log))
    for filt in (LogFilter(ranks=frozenset({19})), LogFilter(ranks=frozenset(range(8, 12))),
                 LogFilter(hosts=frozenset({"node02"})), LogFilter(level="error"),
                 LogFilter(ranks=frozenset({19}), level="error"), LogFilter(hosts=frozenset({"node00"}), ranks=frozenset({19}))):
        scan = FilterScan(ix, filt)
        scan.start()
        assert scan.wait(120), f"scan of {filt} did not finish"
        want = _oracle(lines, pid_rank, filt)
        assert list(scan.matches) == want, filt.describe()
    # The buried failure: exactly one NCCL WARN line, on rank 19.
    scan = FilterScan(ix, LogFilter(ranks=frozenset({19}), level="error"))
    scan.run()
    assert len(scan.matches) == 1 and "out of memory" in ix.read_at(scan.offsets[0])[0]
    ix.index_all()
    assert ix.read(scan.matches[0]) == ix.read_at(scan.offsets[0])
    full = FilterScan(ix, LogFilter(hosts=frozenset({"node03"})))
    full.run()
    assert [ix.read(n) for n in full.matches[::97]] == [ix.read_at(o) for o in full.offsets[::97]]
    ix.close()


def test_close_while_scanning_is_safe(nccl_log: Path) -> None:
    ix = LogIndex(str(nccl_log))
    ix.start_indexing()
    scans = [FilterScan(ix, LogFilter(hosts=frozenset({"node01"}))) for _ in range(2)]
    for s in scans:
        s.start()
    ix.close()
    assert ix.closed
    assert all(not (s._thread and s._thread.is_alive()) for s in scans)  # noqa: SLF001


def test_lines_are_attributed_with_every_prefix_commdoctor_knows(tmp_path: Path) -> None:
    """NCCL 2.26+ puts a timestamp before host:pid on WARN lines (the H100 captures); mpirun tags with [job,rank]."""
    p = tmp_path / "job.log"
    p.write_bytes(
        b"vm:1191:1191 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId 18000 commId 0x9 - Init START\n"
        b"vm:1192:1192 [0] NCCL INFO comm 0x2 rank 1 nranks 2 cudaDev 0 nvmlDev 0 busId 18000 commId 0x9 - Init START\n"
        b"[2026-11-24 22:43:00] vm:1192:1213 [0] misc/socket.cc:72 NCCL WARN socketProgress: Connection closed by remote peer\n"
        b"[1,3]<stderr>:RuntimeError: boom\n"
        b"[rank0]:[E1124 22:41:59.778 ProcessGroupNCCL.cpp:689] [Rank 0] Watchdog caught collective operation timeout\n")
    ix = LogIndex(str(p))
    ix.index_all()
    lines = [ln.encode() for ln in ix.read(0, 5)]
    ix.learn(p.read_bytes())
    assert [ix.rank_of(ln) for ln in lines] == [0, 1, 1, 3, 0]
    assert ix.host_of(lines[2]) == "vm"
    for rank, want in ((1, [1, 2]), (3, [3])):
        scan = FilterScan(ix, LogFilter(ranks=frozenset({rank})))
        scan.run()
        assert list(scan.matches) == want
    ix.close()


def test_horovodrun_ranks_and_slurm_errors_pass_the_filters(tmp_path: Path) -> None:
    """The filters' literal prefilter finds every line the full check accepts: horovodrun's "[3]<stderr>:" for a rank;
    the C++ runtime's "terminate called", Slurm's "srun: error:" and Python logging's CRITICAL for the error level."""
    p = tmp_path / "job.log"
    p.write_bytes(b"[0]<stdout>:epoch 1\n"
                  b"Tue Jun  9 20:10:40 2020[3]<stderr>:terminate called after throwing an instance of 'gloo::IoException'\n"
                  b"srun: error: node-1: task 3: Exited with exit code 1\n"
                  b"2024-05-01 10:00:00,123 - trainer - CRITICAL - rank 3 lost\n"
                  b"srun: job 5 queued and waiting for resources\n")
    ix = LogIndex(str(p))
    rank3 = FilterScan(ix, LogFilter(ranks=frozenset({3})))
    rank3.run()
    errors = FilterScan(ix, LogFilter(level="error"))
    errors.run()
    assert list(rank3.matches) == [1]
    assert list(errors.matches) == [1, 2, 3]
    ix.close()


def test_mpiexec_prepend_rank_lines_pass_the_rank_filter_and_nccls_device_field_does_not(tmp_path: Path) -> None:
    p = tmp_path / "job.log"
    p.write_bytes(b"[1] About to call MPI_Init\n"
                  b"[3] About to throw 0\n"
                  b"[3] terminate called after throwing an instance of 'int'\n"
                  b"[3] include/shm.h:28 NCCL WARN Call to posix_fallocate failed : No space left on device\n")
    ix = LogIndex(str(p))
    rank3 = FilterScan(ix, LogFilter(ranks=frozenset({3})))
    rank3.run()
    assert list(rank3.matches) == [1, 2]
    ix.close()
