"""Nasty input on the offline entry points: never a traceback, never a hang, nothing readable lost.

Each test builds real files (truncated archives, named pipes, sockets,
dangling links, damaged records) under tmp_path and runs the real CLI in a
subprocess with a timeout, asserting what a user sees: the exit code of
docs/cli.md, a message naming the file, and the diagnosis of what could be read.
"""

from __future__ import annotations

import gzip
import json
import lzma
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.conftest import REPO, run_cli
from tests.logs.test_cli import OOM_LOG

FAST_FIFO = {"COMMDOCTOR_FIFO_WAIT_S": "1"}


def _codes(doc: dict) -> list[str]:
    return [f["code"] for f in doc["findings"]]


def _json(p) -> dict:  # type: ignore[no-untyped-def]
    assert "Traceback" not in p.stderr, p.stderr[-3000:]
    return json.loads(p.stdout)


def _filler(n: int) -> bytes:
    # Incompressible-ish lines after the failure, so the cut lands well after it.
    return b"".join(b"worker step %d loss %s\n" % (i, os.urandom(12).hex().encode()) for i in range(n))


@pytest.mark.parametrize("ext, compress", [("gz", gzip.compress), ("xz", lzma.compress)])
def test_truncated_archive_keeps_the_lines_before_the_cut(tmp_path: Path, ext: str, compress) -> None:  # type: ignore[no-untyped-def]
    whole = compress(OOM_LOG.encode() + _filler(4000))
    f = tmp_path / f"rank1.log.{ext}"
    f.write_bytes(whole[: len(whole) * 3 // 4])  # the node died while the archive was being written
    doc = _json(p := run_cli("logs", str(f), "--json", timeout=60))
    assert p.returncode == 1
    assert "LOG031" in _codes(doc), "the OOM before the cut must still be diagnosed"
    note = next(x for x in doc["findings"] if x["code"] == "LOG001")
    assert str(f) in note["title"] and "EOFError" in note["title"]


def test_directory_with_special_files_still_diagnoses_the_logs(tmp_path: Path) -> None:
    d = tmp_path / "logs"
    d.mkdir()
    (d / "rank0.log").write_text("nodeA:1:1 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>\n")
    outside = tmp_path / "elsewhere.log"
    outside.write_text(OOM_LOG)
    (d / "latest.log").symlink_to(outside)  # a link to a real log is read
    (d / "dangling.log").symlink_to(tmp_path / "gone.log")
    (d / "loop").symlink_to(d)  # a directory loop is not followed
    os.mkfifo(d / "pipe.log")  # nobody writes to it: must not be waited on
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(d / "agent.sock"))
    try:
        t0 = time.monotonic()
        doc = _json(p := run_cli("logs", str(d), "--json", timeout=60))
        assert time.monotonic() - t0 < 30
    finally:
        sock.close()
    assert p.returncode == 1 and "LOG031" in _codes(doc)
    notes = {x["title"] for x in doc["findings"] if x["code"] == "LOG001"}
    assert any("dangling.log" in n and "dangling symlink" in n for n in notes), notes
    assert any("pipe.log" in n and "named pipe" in n for n in notes), notes
    assert any("agent.sock" in n and "socket" in n for n in notes), notes
    read = [i["path"] for i in next(r for r in doc["results"] if "inputs" in (r.get("data") or {}))["data"]["inputs"] if not i["error"]]
    assert sorted(os.path.basename(x) for x in read) == ["latest.log", "rank0.log"]


def test_named_pipe_without_writer_is_bounded_and_with_writer_is_read(tmp_path: Path) -> None:
    fifo = tmp_path / "job.pipe"
    os.mkfifo(fifo)
    t0 = time.monotonic()
    doc = _json(p := run_cli("logs", str(fifo), "--json", env=FAST_FIFO, timeout=60))
    assert time.monotonic() - t0 < 30
    assert p.returncode == 2 and doc["outcome"] == "unreadable"  # nothing readable is not "healthy"
    note = next(x for x in doc["findings"] if x["code"] == "LOG001")
    assert str(fifo) in note["title"] and "no process wrote" in note["title"]

    def write() -> None:
        time.sleep(0.3)
        with open(fifo, "w") as w:  # blocks until the CLI opens the pipe; bounded by the CLI's wait
            w.write(OOM_LOG)

    t = threading.Thread(target=write, daemon=True)
    t.start()
    doc = _json(p := run_cli("logs", str(fifo), "--json", env={"COMMDOCTOR_FIFO_WAIT_S": "20"}, timeout=60))
    t.join(10)
    assert p.returncode == 1 and "LOG031" in _codes(doc)


def test_a_device_is_refused_not_read_forever() -> None:
    p = run_cli("logs", "/dev/zero", timeout=60)
    assert p.returncode == 2 and "/dev/zero" in p.stderr and "a device" in p.stderr and "Traceback" not in p.stderr


def _rec(**kw) -> str:  # type: ignore[no-untyped-def]
    return json.dumps({"schema": "commdoctor.hooks/1", **kw})


def test_damaged_records_are_counted_never_crash(tmp_path: Path) -> None:
    s = "commdoctor.hooks/1"
    r0 = [
        _rec(kind="header", rank=0, world_size=2, host="h", pid=10, started=1.0),
        _rec(kind="enter", rank=0, group="0", seq=0, op="all_reduce", time=2.0),
        _rec(kind="exit", rank=0, group="0", seq=0, op="all_reduce", time=3.0),
        _rec(kind="enter", rank=0, group="0", seq=1, op="all_reduce", time=4.0),
        # NaN / Infinity are not JSON; json.loads takes them, int() of them raised OverflowError
        '{"schema":"%s","kind":"enter","rank":0,"group":"0","seq":Infinity,"op":"x","time":NaN}' % s,
        '{"schema":"%s","kind":"enter","rank":Infinity,"group":"0","seq":1,"op":"x","time":1}' % s,
        '{"schema":"%s","kind":"enter","rank":0,"group":"0","seq":1e400,"op":"x","time":1}' % s,
        _rec(kind="header", rank=0, world_size=10 ** 12),  # once hung: set(range(world_size))
        _rec(kind="enter", rank=0, group="0", seq=5, op="x", time="noon"),  # once left an empty group: crash
        _rec(kind="mismatch", rank=0, detail="not a dict"),  # once a false HOOK001 error
        _rec(kind="backend", rank=0),  # once a HOOK030 of "None bytes"
        "[1, 2]", '"text"', "null",
    ]
    r1 = [
        _rec(kind="header", rank=1, world_size=2, host="h", pid=11, started=1.0),
        _rec(kind="enter", rank=1, group="0", seq=0, op="all_reduce", time=2.0),
        _rec(kind="exit", rank=1, group="0", seq=0, op="all_reduce", time=3.0),
    ]
    (tmp_path / "hooks-rank0.jsonl").write_text("\n".join(r0) + "\n")
    (tmp_path / "hooks-rank1.jsonl").write_bytes(("\n".join(r1) + "\n").encode() + os.urandom(3000) + b'{"schema":"comm')
    doc = _json(p := run_cli("records", str(tmp_path), "--json", timeout=60))
    assert p.returncode in (0, 1), p.stderr[-2000:]
    assert all(r["status"] != "crashed" for r in doc["results"]), [r for r in doc["results"] if r["status"] == "crashed"]
    codes = _codes(doc)
    assert "HOOK001" not in codes and "HOOK030" not in codes
    damaged = next(x for x in doc["findings"] if x["code"] == "HOOK021")
    assert int(damaged["title"].split()[0]) >= 11
    # What is readable is still diagnosed: rank 0 entered #1, rank 1 never did.
    assert "HOOK010" in codes or any("rank 1" in x["title"] for x in doc["findings"]), codes


def test_records_reader_skips_an_overlong_line_in_bounded_steps(tmp_path: Path) -> None:
    from commdoctor.core import records

    f = tmp_path / "hooks-rank0.jsonl"
    f.write_bytes(b"x" * (3 << 20) + b"\n" + _rec(kind="header", rank=0, world_size=1).encode() + b"\n")
    out = list(records.iter_lines(str(f), max_line=1 << 16))
    assert out[0] is None and out[1] is not None and out[1]["rank"] == 0 and len(out) == 2


def test_report_from_a_pipe_or_device_is_a_usage_error(tmp_path: Path) -> None:
    fifo = tmp_path / "r.json"
    os.mkfifo(fifo)
    for src, words in ((fifo, "no process wrote"), ("/dev/zero", "a device")):
        t0 = time.monotonic()
        p = run_cli("report", "--from", str(src), "-o", str(tmp_path / "out"), env=FAST_FIFO, timeout=60)
        assert time.monotonic() - t0 < 30
        assert p.returncode == 2 and str(src) in p.stderr and words in p.stderr and "Traceback" not in p.stderr


def test_report_bundle_names_special_files_and_does_not_wait_on_them(tmp_path: Path) -> None:
    d = tmp_path / "logs"
    d.mkdir()
    (d / "good.log").write_text(OOM_LOG)
    os.mkfifo(d / "pipe.log")
    (d / "dangling.log").symlink_to(tmp_path / "gone")
    t0 = time.monotonic()
    p = run_cli("report", "--no-checks", "--no-system", "--logs", str(d), "/dev/zero",
                "--bundle", str(tmp_path / "b.tar.gz"), "-o", str(tmp_path / "r"), timeout=60)
    assert time.monotonic() - t0 < 30
    assert p.returncode == 0, p.stderr[-2000:]
    md = (tmp_path / "r.md").read_text().replace("\\", "")
    assert "pipe.log: a named pipe, left out" in md
    assert "dangling.log: No such file or directory (a dangling symlink)" in md
    assert "/dev/zero: a device" in md
    assert "out of memory" in md


@pytest.mark.parametrize("name, encode", [
    # Lines ended by a lone CR, longer than one 16 kB "line": the failure sits after the cut.
    ("cr.log", lambda text: (_filler(400).decode() + text).replace("\n", "\r").encode()),
    # PowerShell's `>` writes UTF-16 with a byte-order mark.
    ("utf16.log", lambda text: text.encode("utf-16")),
])
def test_lone_cr_and_utf16_logs_are_read_line_by_line(tmp_path: Path, name: str, encode) -> None:  # type: ignore[no-untyped-def]
    f = tmp_path / name
    f.write_bytes(encode(OOM_LOG))
    doc = _json(p := run_cli("logs", str(f), "--json", timeout=60))
    assert p.returncode == 1
    first = doc["findings"][0]
    assert first["code"] == "LOG031" and first["ranks"] == [1]
    assert first["evidence"][0]["line"] == (406 if name == "cr.log" else 6)


def test_a_claimed_world_of_ten_million_ranks_costs_nothing(tmp_path: Path) -> None:
    f = tmp_path / "w.log"
    f.write_text("nodeA:1:2 [0] NCCL INFO comm 0x55 rank 0 nranks 9999999 cudaDev 0 busId 1000 - Init START\n"
                 "[I] GLOBAL_RANK: 0, MEMBER: 1/9999999\n")
    t0 = time.monotonic()
    doc = _json(p := run_cli("logs", str(f), "--json", timeout=60))
    # It took 10 s and 2 GB (set(range(world))); now well under a second of work. The bound is generous for a busy box.
    assert time.monotonic() - t0 < 8
    f62 = next(x for x in doc["findings"] if x["code"] == "LOG062")
    assert "of 9999999" in f62["title"] and "missing: 1, 2, 3" in f62["title"]


@pytest.mark.parametrize("argv, words", [
    (("run", "--select", "NOPE"), "no code starts with 'NOPE'"),  # ran nothing and said "healthy", exit 0
    (("logs", "-", "--ignore", "LOG9"), "no code starts with 'LOG9'"),
    (("explain", "XYZ999"), "no code or check named 'XYZ999'"),
    (("checks", "extra"), "unrecognized arguments: extra"),
    (("nope",), "invalid choice: 'nope'"),
    (("hang", "--pid", "abc"), "give process ids as numbers"),
])
def test_usage_errors_are_one_clear_line_and_exit_2(argv: tuple[str, ...], words: str) -> None:
    p = run_cli(*argv, input="", timeout=60)
    assert p.returncode == 2, (p.returncode, p.stderr[-2000:])
    errors = [ln for ln in p.stderr.splitlines() if ln.startswith("commdoctor: error:")]
    assert len(errors) == 1 and words in errors[0] and "Traceback" not in p.stderr


def test_hang_on_a_pid_that_does_not_exist_is_a_usage_error() -> None:
    """It used to attach to nothing and say "rank 0 exited", exit 0."""
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait(30)
    for pid in (4_000_000, gone.pid):  # above Linux's pid_max (2^22); a process that has exited
        t0 = time.monotonic()
        p = run_cli("hang", "--pid", str(pid), "--json", timeout=60)
        assert time.monotonic() - t0 < 30 and "Traceback" not in p.stderr
        assert p.returncode == 2 and p.stdout == "", (p.returncode, p.stdout[:500])
        assert f"--pid {pid}: no such process" in p.stderr


# -- exit codes that never lie (docs/cli.md, "Exit codes") ---------------------------------------------


@pytest.mark.parametrize("argv", [
    ("run", "--timeout", "nan"), ("run", "--timeout", "inf"), ("run", "--timeout", "1e999"),
    ("run", "--pg-timeout", "nan"), ("run", "--join-timeout", "-1"), ("hang", "--stack-timeout", "nan"),
    ("report", "--from", "x.json", "--timeout=-inf"),
])
def test_seconds_that_are_not_a_number_of_seconds_are_usage_errors(argv: tuple[str, ...]) -> None:
    p = run_cli(*argv, timeout=60)
    assert p.returncode == 2 and "Traceback" not in p.stderr, p.stderr[-2000:]
    errors = [ln for ln in p.stderr.splitlines() if ln.startswith("commdoctor: error:")]
    option = next(a for a in argv if a.startswith("--") and a != "--from").split("=")[0]
    assert len(errors) == 1 and "is not a number of seconds" in errors[0] and option in errors[0]


def _healthy_and_failing(tmp_path: Path) -> tuple[Path, Path]:
    ok = tmp_path / "ok.log"
    ok.write_text("".join(f"step {i} loss 0.{i}\n" for i in range(2000)))
    bad = tmp_path / "oom.log"
    bad.write_text(OOM_LOG)
    return ok, bad


@pytest.mark.parametrize("how", ["pipe closed by the reader", "stdout closed"])
def test_a_closed_stdout_ends_quietly_with_the_reports_own_status(tmp_path: Path, how: str) -> None:
    """`commdoctor ... | head -1` and `>&-`: no traceback, and the status is the diagnosis's, not 1 or 0 by accident."""
    env = dict(os.environ, PYTHONPATH=str(REPO))
    for log, want in zip(_healthy_and_failing(tmp_path), (0, 1)):
        argv = [sys.executable, "-m", "commdoctor", "logs", str(log), "-v"]
        if how == "stdout closed":
            p = subprocess.run(["sh", "-c", 'exec "$@" >&-', "sh", *argv], capture_output=False, stderr=subprocess.PIPE,
                               text=True, env=env, timeout=120)
        else:
            r, w = os.pipe()
            os.close(r)  # the reader is gone before the first line: every write meets EPIPE
            try:
                p = subprocess.run(argv, stdout=w, stderr=subprocess.PIPE, text=True, env=env, timeout=120)
            finally:
                os.close(w)
        assert p.returncode == want, (log.name, p.returncode, p.stderr[-2000:])
        assert "Traceback" not in p.stderr and "Exception ignored" not in p.stderr, p.stderr[-2000:]


def test_nothing_readable_is_a_usage_error_and_says_why(tmp_path: Path) -> None:
    import zipfile

    ok, bad = _healthy_and_failing(tmp_path)
    z = tmp_path / "logs.zip"
    with zipfile.ZipFile(z, "w") as zf:
        zf.write(bad, "oom.log")
    doc = _json(p := run_cli("logs", str(z), "--json", timeout=60))
    assert p.returncode == 2 and doc["outcome"] == "unreadable"
    note = next(x for x in doc["findings"] if x["code"] == "LOG001")
    assert "logs.zip" in note["title"] and "a zip archive" in note["title"] and "unpack it" in note["title"]
    # /dev/zero on stdin: cut after 64 MiB of NULs, not read for the 24-hour stdin deadline.
    t0 = time.monotonic()
    with open("/dev/zero", "rb") as zero:
        p = subprocess.run([sys.executable, "-m", "commdoctor", "logs", "-", "--json"], stdin=zero, capture_output=True,
                           text=True, timeout=120, env=dict(os.environ, PYTHONPATH=str(REPO)))
    assert time.monotonic() - t0 < 60 and p.returncode == 2, (p.returncode, p.stderr[-2000:])
    assert "all NUL bytes" in json.dumps(_json(p)["findings"])
    # One readable input beside an unreadable one: diagnosed as usual, the bad one named.
    doc = _json(p := run_cli("logs", str(z), str(bad), "--json", timeout=60))
    assert p.returncode == 1 and "LOG031" in _codes(doc) and doc["outcome"] == "errors"


def test_a_decompression_bomb_is_cut_by_its_ratio(tmp_path: Path) -> None:
    """512 MiB of newlines in a few hundred kB of gzip: cut at 200:1, named, in seconds."""
    import zlib

    f = tmp_path / "bomb.log.gz"
    co = zlib.compressobj(9, zlib.DEFLATED, 31)
    chunk = b"\n" * (1 << 20)
    with open(f, "wb") as out:
        out.write(co.compress(OOM_LOG.encode()))
        for _ in range(512):
            out.write(co.compress(chunk))
        out.write(co.flush())
    assert f.stat().st_size < 2 << 20
    t0 = time.monotonic()
    doc = _json(p := run_cli("logs", str(f), "--json", timeout=120))
    took = time.monotonic() - t0
    assert took < 30, took
    assert p.returncode == 1 and "LOG031" in _codes(doc)  # what came before the cut is diagnosed
    note = next(x for x in doc["findings"] if x["code"] == "LOG001")
    assert "ratio" in note["title"] and "decompression bomb" in note["title"]


def test_crash_or_timeout_beside_a_finding_is_incomplete_exit_4() -> None:
    from commdoctor.commands.common import exit_code
    from commdoctor.core.model import CheckResult, Report, Severity, Stage, Status
    from tests.test_pipeline import Boom, Fails, Sleepy
    from commdoctor.pipeline.run import Context, Facts, Options, RunFinished, run_checks

    for other in (Boom, Sleepy):
        ctx = Context(options=Options(mode="run"), facts=Facts())
        rep = [e for e in run_checks([Fails(), other()], ctx) if isinstance(e, RunFinished)][0].report
        assert rep.verdict() is not None and rep.verdict().code == "TST003"  # the finding is kept
        assert rep.outcome() == "incomplete" and rep.to_dict()["outcome"] == "incomplete"
        assert exit_code(rep, Severity.ERROR) == 4 and exit_code(rep, Severity.WARNING) == 4
    # Interrupted wins, and a run with nothing wrong is healthy.
    rep = Report(tool_version="0", mode="run", created="", host="h", interrupted=True)
    assert rep.outcome() == "incomplete" and exit_code(rep, Severity.ERROR) == 130
    rep = Report(tool_version="0", mode="run", created="", host="h",
                 results=[CheckResult(check="a", stage=Stage.ENVIRONMENT, title="a", status=Status.PASSED)])
    assert rep.outcome() == "healthy" and exit_code(rep, Severity.ERROR) == 0


def _report_json(tmp_path: Path, **changes) -> Path:  # type: ignore[no-untyped-def]
    ok, _ = _healthy_and_failing(tmp_path)
    p = run_cli("logs", str(ok), "--json", timeout=60)
    doc = json.loads(p.stdout)
    doc.update(changes)
    out = tmp_path / "saved.json"
    out.write_text(json.dumps(doc))
    return out


def test_an_interrupted_report_is_titled_incomplete_not_healthy(tmp_path: Path) -> None:
    saved = _report_json(tmp_path, interrupted=True)
    p = run_cli("report", "--from", str(saved), "-o", str(tmp_path / "r"), timeout=120)
    assert p.returncode == 130, p.stderr[-2000:]
    md = (tmp_path / "r.md").read_text()
    assert md.startswith("# commdoctor report: incomplete")
    assert "Verdict: incomplete" in md and "Verdict: healthy" not in md and "the run was interrupted" in md


def test_report_output_paths_create_nothing_and_lose_nothing(tmp_path: Path) -> None:
    saved = _report_json(tmp_path)
    missing = tmp_path / "nonexistent"
    t0 = time.monotonic()
    p = run_cli("report", "--from", str(saved), "-o", str(missing / "dir" / "r"), timeout=120)
    assert p.returncode == 2 and not missing.exists() and time.monotonic() - t0 < 60
    assert f"the folder {missing / 'dir'} does not exist" in p.stderr and "Traceback" not in p.stderr
    # A folder that exists but cannot be written (procfs refuses new files, even to root).
    p = run_cli("report", "--from", str(saved), "-o", "/proc/commdoctor-r", "--bundle", "/proc/commdoctor-b.tar.gz",
                timeout=120)
    assert p.returncode == 2 and "Traceback" not in p.stderr, p.stderr[-2000:]
    import re
    import shutil

    where = re.findall(r"could not write (\S+) \(.*?\); wrote (\S+) instead", p.stderr)
    assert sorted(os.path.basename(a) for a, _ in where) == ["commdoctor-b.tar.gz", "commdoctor-r.html", "commdoctor-r.md"]
    try:
        assert len({os.path.dirname(b) for _, b in where}) == 1  # one folder for all of them
        md = next(b for a, b in where if a.endswith(".md"))
        assert Path(md).read_text().startswith("# commdoctor report:")
    finally:
        shutil.rmtree(os.path.dirname(where[0][1]), ignore_errors=True)


# -- one way in: every reader bounded, typed item by item --------------------------------------------


def _no_crash(doc: dict) -> None:  # type: ignore[type-arg]
    crashed = [(r["check"], r["reason"]) for r in doc["results"] if r["status"] in ("crashed", "timed_out")]
    assert crashed == [], crashed


@pytest.mark.parametrize("what", ["device", "fifo"])
def test_view_of_a_device_or_a_silent_fifo_is_refused_in_time(tmp_path: Path, what: str) -> None:
    path = "/dev/zero"
    if what == "fifo":
        path = str(tmp_path / "r.json")
        os.mkfifo(path)
    t0 = time.monotonic()
    p = run_cli("view", path, "--no-tui", env=FAST_FIFO, timeout=60)
    assert time.monotonic() - t0 < 30 and p.returncode == 2, (p.returncode, p.stderr[-2000:])
    assert path in p.stderr and ("a device" in p.stderr or "named pipe" in p.stderr) and "Traceback" not in p.stderr


def _pyspy(line: object, frames: object = None) -> str:
    frame = '{"name": "all_reduce", "filename": "/x/distributed_c10d.py", "short_filename": "distributed_c10d.py", "line": %s}' % line
    return ('[{"pid": 10, "thread_id": 1, "thread_name": "MainThread", "active": true, "owns_gil": false, "frames": %s}]'
            % (frames if frames is not None else f"[{frame}]"))


def test_saved_stacks_with_bad_values_name_the_item_and_read_the_rest(tmp_path: Path) -> None:
    d = tmp_path / "stacks"
    d.mkdir()
    (d / "rank0.json").write_text(_pyspy("Infinity"))  # not JSON: read as an unknown line, and said
    (d / "rank1.json").write_text(_pyspy(88, frames="true"))  # a thread whose frames are not a list
    (d / "rank2.json").write_text(_pyspy(88))
    (d / "rank3.json").write_text(_pyspy('"eighty"'))  # a line that is not a number: that frame goes
    doc = _json(p := run_cli("hang", "--stacks", str(d), "--json", timeout=60))
    _no_crash(doc)
    assert p.returncode in (0, 1), p.stderr[-2000:]
    text = json.dumps(doc)
    assert "rank1.json: threads[0]: Expected `array`, got `bool` - at `$.frames`" in text
    assert "rank0.json: Infinity is not a JSON number: read as null" in text
    assert "distributed_c10d.py:88" in text  # rank 2, untouched, is diagnosed as before


def _records_dir(tmp_path: Path, damage: dict) -> Path:  # type: ignore[type-arg]
    d = tmp_path / "rec"
    d.mkdir(exist_ok=True)
    for r in range(2):
        lines = [_rec(kind="header", rank=r, world_size=2, host="h", pid=100 + r, started=1.0)]
        for seq in range(3):
            call = dict(rank=r, group="0", seq=seq, op="all_reduce", reduce_op="SUM", dtype="float32", shapes=[[4]],
                        numel=4, async_op=False, site="train.py:9", time=2.0 + seq)
            lines.append(_rec(kind="enter", **call))
            if not (r == 1 and seq == 2):
                lines.append(_rec(kind="exit", **dict(call, time=2.5 + seq)))
        if r == 1:
            lines.append(_rec(kind="enter", **{**call, "seq": 3, **damage}))  # the damaged line
            lines.append(_rec(kind="exit", **dict(call, seq=3)))  # its exit survives alone
        (d / f"hooks-rank{r}.jsonl").write_text("\n".join(lines) + "\n")
    return d


@pytest.mark.parametrize("damage", [{"seq": [3]}, {"shapes": "4x4"}, {"shapes": [[2 ** 80]]}, {"time": "soon"},
                                    {"op": None}, {"group": {"a": 1}}, {"async_op": "yes"}, {"root": 1.5}],
                         ids=lambda d: next(iter(d)))
@pytest.mark.parametrize("cmd", ["records", "hang"])
def test_hook_records_with_wrong_typed_fields_are_counted_not_crashed(tmp_path: Path, damage: dict, cmd: str) -> None:  # type: ignore[type-arg]
    d = _records_dir(tmp_path, damage)
    argv = ("records", str(d)) if cmd == "records" else ("hang", "--records", str(d))
    doc = _json(p := run_cli(*argv, "--json", timeout=60))
    _no_crash(doc)
    assert p.returncode in (0, 1), p.stderr[-2000:]
    from commdoctor.core.records import read_progress

    prog = read_progress([str(d)])
    assert prog[1].bad_lines == 1 and prog[1].last_entered is not None and prog[1].last_entered.seq == 2


def test_a_number_of_five_thousand_digits_does_not_take_the_log_diagnosis_down(tmp_path: Path) -> None:
    f = tmp_path / "rank0.log"
    f.write_text("max locked memory       (kbytes, -l) " + "9" * 5000 + "\n" + OOM_LOG
                 + "max locked memory       (kbytes, -l) 64\n")
    doc = _json(p := run_cli("logs", str(f), "--json", timeout=60))
    _no_crash(doc)
    assert p.returncode == 1 and {"LOG031", "LOG035"} <= set(_codes(doc))


_MUTANTS = {
    "lone surrogate": lambda d: d["results"][0].update(summary="\ud800 half a pair"),
    "deep nesting": lambda d: d["results"][0]["data"].update(deep="DEEP"),  # made 5000 deep in the text below
    "finding title not text": lambda d: d["results"][-1]["findings"][0].update(title=["a"]),
    "severity unknown": lambda d: d["results"][-1]["findings"][0].update(severity=7),
    "evidence not a list": lambda d: d["results"][-1]["findings"][0].update(evidence=True),
    "status unknown": lambda d: d["results"][0].update(status="exploded"),
    "duration huge": lambda d: d["results"][0].update(duration_s=1e308),
    "ranks of text": lambda d: d["results"][-1]["findings"][0].update(ranks="0,1"),
}


@pytest.mark.parametrize("name", list(_MUTANTS))
def test_a_damaged_saved_report_shows_every_good_item_and_names_the_bad_one(tmp_path: Path, name: str) -> None:
    log = tmp_path / "rank0.log"
    log.write_text(OOM_LOG)
    base = json.loads(run_cli("logs", str(log), "--json", timeout=60).stdout)
    base["results"].append(json.loads(json.dumps(next(r for r in base["results"] if r["findings"]))))
    _MUTANTS[name](base)
    saved = tmp_path / "saved.json"
    saved.write_text(json.dumps(base).replace('"DEEP"', "[" * 5000 + "]" * 5000))
    for argv in (("view", str(saved), "--no-tui"), ("report", "--from", str(saved), "-o", str(tmp_path / "r"),
                                                    "--bundle", str(tmp_path / "b.tar.gz"))):
        p = run_cli(*argv, timeout=120)
        assert "Traceback" not in p.stderr and p.returncode in (0, 1, 4), (argv[0], p.returncode, p.stderr[-2000:])
        out = p.stdout + (tmp_path / "r.md").read_text() if argv[0] == "report" else p.stdout
        assert "LOG031" in out, argv  # the good copy of the finding is still there


def test_hang_records_given_as_a_silent_fifo_do_not_crash_the_verdict(tmp_path: Path) -> None:
    fifo = tmp_path / "hooks-rank0.jsonl"
    os.mkfifo(fifo)
    t0 = time.monotonic()
    doc = _json(p := run_cli("hang", "--records", str(fifo), "--json", env=FAST_FIFO, timeout=60))
    assert time.monotonic() - t0 < 30
    _no_crash(doc)
    assert p.returncode != 4, p.stderr[-2000:]
