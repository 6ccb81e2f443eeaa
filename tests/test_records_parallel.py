"""Hooks records read by more than one process: the same answer as one process gives, whatever a worker does.

Sets are written by the hooks' own writer (commdoctor.hooks.recorder.Recorder, driven on a simulated
clock by bench/records_scale.py). The odd rank and the fault's place are drawn at random each run (the
draw is in every assertion's message), so the readers are not tuned to one rank.
"""

from __future__ import annotations

import os
import random
import shutil
from pathlib import Path
from typing import Any

import pytest

from commdoctor.checks.hooks import HookMismatchCheck, HookProgressCheck
from commdoctor.loaders import hook_records
from tests.test_records_scale import _bench, _norm

N = 40
CALLS = 120


@pytest.fixture(scope="module")
def drawn(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    rng = random.Random(int.from_bytes(os.urandom(4), "big"))
    odd = rng.randrange(N)
    fault = rng.choice(["straggler", "mismatch", "silent"])
    d = tmp_path_factory.mktemp("parallel") / "set"
    seq, op = _bench().make_set(d, N, CALLS, fault, odd, 3)
    # Damage on two other ranks: a cut last line, junk bytes appended.
    r1, r2 = rng.sample([r for r in range(N) if r != odd], 2)
    p1, p2 = d / f"hooks-rank{r1}.jsonl", d / f"hooks-rank{r2}.jsonl"
    p1.write_bytes(p1.read_bytes()[:-30])
    p2.write_bytes(p2.read_bytes() + b"\xff\xfe junk\n")
    return {"dir": d, "odd": odd, "fault": fault, "seq": seq, "op": op,
            "draw": f"odd rank {odd}, fault {fault} at #{seq}, damaged ranks {r1} and {r2}"}


def _parallel(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Let a small set be read by workers; return the list that counts the workers' answers collected."""
    monkeypatch.setattr(hook_records, "PARALLEL_FILES", 4)
    monkeypatch.setattr(hook_records, "PARALLEL_BYTES", 0)
    got: list[int] = []
    real = hook_records._Workers._collect

    def counting(self: Any, first: int, end: int, pid: int, fd: int) -> None:
        real(self, first, end, pid, fd)
        got.append(sum(1 for i in range(first, end) if i in self.got))

    monkeypatch.setattr(hook_records._Workers, "_collect", counting)
    return got


def test_workers_give_what_one_process_gives(drawn: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    one = _norm(hook_records.load([str(drawn["dir"])], workers=1))
    got = _parallel(monkeypatch)
    three = _norm(hook_records.load([str(drawn["dir"])], workers=3))
    assert got and sum(got) >= N // 2, (got, drawn["draw"])  # the workers did scan most files
    assert three == one, drawn["draw"]
    assert one["rest"][3] >= 2, drawn["draw"]  # the damaged lines are counted either way


def test_a_worker_that_fails_costs_nothing_but_time(drawn: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    one = _norm(hook_records.load([str(drawn["dir"])], workers=1))
    got = _parallel(monkeypatch)

    def broken(path: str) -> Any:
        raise RuntimeError("a worker's bug")  # in the forked worker: it exits 1 without an answer

    monkeypatch.setattr(hook_records, "_scan_path", broken)
    assert _norm(hook_records.load([str(drawn["dir"])], workers=2)) == one, drawn["draw"]
    assert got == [0], drawn["draw"]  # the worker was asked, answered nothing, and its files were read here


def test_the_drawn_fault_is_named_with_workers(drawn: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    _parallel(monkeypatch)
    rec = hook_records.load([str(drawn["dir"])], workers=2)
    assert rec is not None
    odd, seq, op = drawn["odd"], drawn["seq"], drawn["op"]
    if drawn["fault"] == "straggler":
        found = [f for f in HookProgressCheck().evaluate(rec) if f.code == "HOOK010"]
        assert [f.ranks[0] for f in found] == [odd], drawn["draw"]
        assert found[0].title.startswith(f"rank {odd} never entered #{seq} "), (found[0].title, drawn["draw"])
    else:
        found = [f for f in HookMismatchCheck().evaluate(rec) if f.code == "HOOK005"]
        assert len(found) == 1 and f"#{seq} of the default group" in found[0].title, drawn["draw"]
        texts = [e.text for e in found[0].evidence]
        assert texts[0].startswith(f"rank {odd} entered {op}") and f"#{seq}" in texts[0], (texts, drawn["draw"])
        assert len(texts) == 2 and texts[1].startswith("ranks "), (texts, drawn["draw"])


def test_ranks_read_in_bulk_share_their_calls_and_parse_times_when_asked(drawn: dict[str, Any]) -> None:
    rec = hook_records.load([str(drawn["dir"])], workers=1)
    assert rec is not None
    hist = rec.groups["0"].history
    bulk = [h for h in hist.values() if h._raw is not None]
    assert len(bulk) >= N // 2, drawn["draw"]  # most ranks' times are still the file's text
    shared = {(id(h.seqs), id(h.sids)) for h in bulk}
    assert len(shared) <= 4, drawn["draw"]  # one pair of arrays per distinct history, not per rank
    h = bulk[0]
    last = h.time_at(len(h.seqs) - 1)
    mid = h.time_at(len(h.seqs) // 2)
    assert h._raw is not None  # one or two times read without parsing the rest
    assert list(h.times)[-1] == last and h.times[len(h.seqs) // 2] == mid and h._raw is None
    assert all(a <= b for a, b in zip(h.times, h.times[1:])), drawn["draw"]  # enters in the order written


def test_a_large_file_of_tiny_lines_is_streamed_not_split(tmp_path: Path) -> None:
    """Millions of three-byte lines would cost some 40 bytes each as a list: such a file is read line by line."""
    p = tmp_path / "hooks-rank0.jsonl"
    p.write_bytes(b"ab\n" * ((hook_records.SHORT_LINES_FROM // 3) + 10))
    assert hook_records._read_lines(str(p)) is None
    q = tmp_path / "hooks-rank1.jsonl"
    q.write_bytes(b"ab\n" * 1000)
    assert hook_records._read_lines(str(q)) == [b"ab"] * 1000


def _progress_view(ranks: dict[int, Any]) -> Any:
    return {r: [p.host, p.pid, p.world_size, repr(p.last_entered), repr(p.last_completed), repr(p.mismatches),
                p.warnings, os.path.basename(p.path or "")] for r, p in ranks.items()}


def test_hang_reads_each_ranks_ends_as_the_full_reader_does(drawn: dict[str, Any], monkeypatch: pytest.MonkeyPatch,
                                                            tmp_path: Path) -> None:
    """``progress_of`` (what ``hang --records`` reads) from heads and tails equals every line read, a mismatch
    and a warning record in the middle of a file included."""
    d = tmp_path / "set"
    shutil.copytree(drawn["dir"], d)
    extra = d / "hooks-rank1.jsonl"
    lines = extra.read_bytes().split(b"\n")
    mid = len(lines) // 2
    lines.insert(mid, b'{"schema":"commdoctor.hooks/1","kind":"warning","rank":1,"message":"side channel lost",'
                      b'"time":1764000001.5}')
    lines.insert(mid, b'{"schema":"commdoctor.hooks/1","kind":"mismatch","rank":1,"group":"0","seq":3,'
                      b'"message":"x","detail":{"kind":"fingerprint"},"time":1764000001.25}')
    extra.write_bytes(b"\n".join(lines))
    files = hook_records.find_files([str(d)])
    full = hook_records.load(files, workers=1)
    assert full is not None
    monkeypatch.setattr(hook_records, "TAILS_FROM", 2)
    seen: list[int] = []
    tails = hook_records.progress_of(files, progress=lambda what, done, total: seen.append(done))
    assert _progress_view(tails) == _progress_view(full.ranks), drawn["draw"]
    assert tails[1].mismatches and tails[1].warnings == ["side channel lost"]
    assert seen == list(range(len(files)))


def test_a_worker_stuck_on_a_lock_it_inherited_is_given_up_on(drawn: dict[str, Any],
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """A worker forked while another thread held a lock blocks on it forever: after WORKER_WAIT_S past the
    reader's own share it is killed and its files read here, with the answer one process gives."""
    import threading
    import time

    one = _norm(hook_records.load([str(drawn["dir"])], workers=1))
    got = _parallel(monkeypatch)
    held = threading.Lock()
    taken, done = threading.Event(), threading.Event()

    def holder() -> None:
        with held:
            taken.set()
            done.wait(120)

    real = hook_records._scan_path

    def locks(path: str) -> Any:
        held.acquire(timeout=60)  # in the worker nobody is left to release it (bounded: a test never hangs)
        return real(path)

    monkeypatch.setattr(hook_records, "_scan_path", locks)
    monkeypatch.setattr(hook_records, "WORKER_WAIT_S", 1.0)
    t = threading.Thread(target=holder, daemon=True)
    t.start()
    assert taken.wait(10)
    try:
        t0 = time.monotonic()
        two = _norm(hook_records.load([str(drawn["dir"])], workers=2))
        took = time.monotonic() - t0
    finally:
        done.set()
        t.join(10)
    assert took < 40, (took, drawn["draw"])  # the wait was bounded, not the worker's 60 s
    assert got == [0], drawn["draw"]
    assert two == one, drawn["draw"]


def test_a_file_is_read_whole_up_to_the_cap_whatever_its_size_said(tmp_path: Path) -> None:
    """``_read_capped`` asks for a file's size so as not to make a 256 MB buffer for a 1 MB file; it still
    reads what a file holds past that size (it grew), a pipe (no size) up to the cap, and says "more"."""
    import io
    import threading

    p = tmp_path / "r.jsonl"
    body = b"x" * 5000 + b"\n"
    for cap, want in ((10000, body), (5001, body), (5000, body), (100, body[:101])):
        p.write_bytes(body)
        with open(p, "rb") as f:
            assert hook_records._read_capped(f, cap) == want, cap
    p.write_bytes(b"")
    with open(p, "rb") as f:
        assert hook_records._read_capped(f, 100) == b""
    # A file that grows between the size asked and the read: what it holds is read, to the cap.
    p.write_bytes(body)
    with open(p, "rb") as f, open(p, "ab") as g:
        real = os.fstat
        grown: list[bool] = []

        def fstat_then_grow(fd: int) -> Any:
            st = real(fd)
            if not grown:
                g.write(b"y" * 3000)
                g.flush()
                grown.append(True)
            return st

        try:
            os.fstat = fstat_then_grow  # type: ignore[assignment]
            got = hook_records._read_capped(f, 100000)
        finally:
            os.fstat = real  # type: ignore[assignment]
    assert got == body + b"y" * 3000
    # A pipe: no size to go by, read to its end.
    r, w = os.pipe()

    def write() -> None:
        with os.fdopen(w, "wb") as out:
            out.write(body * 30)

    t = threading.Thread(target=write, daemon=True)
    t.start()
    with io.BufferedReader(io.FileIO(r, "rb")) as f:
        assert hook_records._read_capped(f, 1 << 20) == body * 30
    t.join(10)
