"""A log reads the same whatever form it reached us in.

People post logs with pdsh's or syslog's prefix on every line, quoted in a reply ("> "), indented as a Markdown code block, copied from a web page's source
(``&lt;0&gt;``, ``&#39;``), exported by a log collector as one JSON record per line (docker's json-file, Kubernetes
shippers), with containerd's stream tags, or pasted from a Python string with its line breaks written out ("\\n").
Each form of a real capture must give the verdict the capture gives as it was written.
"""

from __future__ import annotations

import html
import io
import json
from pathlib import Path

import pytest

from commdoctor.core.safeopen import Unwrapping, common_indent, unwrap_kind
from commdoctor.parsing.lines import classify, clean, raw_owner
from logs.test_corpus import diagnose_file

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "logs"
# Real NCCL captures from a GPU (an interface that does not exist, two ranks on one GPU) and a real torchrun gloo job
# whose rank was killed (its elastic summary's root-cause block names the rank).
CAPTURES = ["nccl-bad-ifname", "nccl-dupgpu", "gloo-rank-killed"]


def _quote(s: str) -> str:
    return "".join("> " + ln for ln in s.splitlines(True))


def _indent(s: str) -> str:
    return "".join("    " + ln for ln in s.splitlines(True))


def _html(s: str) -> str:
    return html.escape(s)


def _k8s_json(s: str) -> str:
    return "".join(json.dumps({"log": ln if ln.endswith("\n") else ln + "\n", "stream": "stderr",
                               "time": "2026-11-28T10:00:00.123456789Z"}) + "\n" for ln in s.splitlines(True))


def _containerd(s: str) -> str:
    return "".join("2026-11-28T10:00:00.123456789Z stderr F " + ln for ln in s.splitlines(True))


def _escaped(s: str) -> str:
    return s.replace("\n", "\\n")


def _pdsh(s: str) -> str:
    return "".join("worker-1: " + ln for ln in s.splitlines(True))


def _syslog(s: str) -> str:
    return "".join("Nov 28 10:00:00 node1 python[1234]: " + ln for ln in s.splitlines(True))


def _go_time(s: str) -> str:
    return "".join("2026/11/28 10:00:00 " + ln for ln in s.splitlines(True))


def _clock(s: str) -> str:
    return "".join("[10:00:00] " + ln for ln in s.splitlines(True))


def _epoch(s: str) -> str:
    return "".join("[1764324000.123456] " + ln for ln in s.splitlines(True))


FORMS = {"go-time": _go_time, "clock": _clock, "epoch": _epoch, "pdsh": _pdsh, "syslog": _syslog, "quote": _quote, "indent": _indent, "html": _html, "k8s-json": _k8s_json, "containerd": _containerd,
         "escaped-newlines": _escaped}


def _verdict(path: Path) -> list[tuple[str, str, str]]:
    return [(f["code"], f["cause"], f["title"]) for f in diagnose_file(path)["findings"] if f["cause"]]


@pytest.mark.parametrize("capture", CAPTURES)
def test_each_pasted_form_of_a_capture_gives_its_verdict(tmp_path: Path, capture: str) -> None:
    original = FIXTURES / capture / "torchrun.log"
    want = _verdict(original)
    assert want, f"{capture} has a verdict as written"
    text = original.read_text(encoding="utf-8")
    for name, form in FORMS.items():
        p = tmp_path / f"{name}.log"
        p.write_text(form(text), encoding="utf-8")
        assert _verdict(p) == want, name


def test_the_input_line_says_how_it_was_read(tmp_path: Path) -> None:
    text = (FIXTURES / "nccl-dupgpu" / "torchrun.log").read_text(encoding="utf-8")
    for form, kind in ((_k8s_json, "json-lines"), (_escaped, "escaped-newlines"), (_indent, "indented"), (_quote, "")):
        p = tmp_path / "x.log"
        p.write_text(form(text), encoding="utf-8")
        inputs = next(r for r in diagnose_file(p)["results"] if r["check"] == "logs.inputs")["data"]["inputs"]
        assert inputs[0]["unwrapped"] == kind


def test_only_an_indentation_every_line_has_is_the_posts() -> None:
    log = b"".join(b"    node1:1:2 [0] NCCL INFO Channel %02d/02 :    0   1\n" % i for i in range(4))
    assert (unwrap_kind(log), common_indent(log)) == ("indented", b"    ")
    data = log + b"\n      Traceback (most recent call last):\n"
    assert io.BufferedReader(Unwrapping(io.BytesIO(data), "indented", b"    ")).read() == \
        log.replace(b"    node1", b"node1") + b"\n  Traceback (most recent call last):\n"
    # a log's own indentation, on some of its lines (a traceback's code lines, torchrun's summary fields), stays
    own = (b'Traceback (most recent call last):\n  File "train.py", line 3, in <module>\n    main()\n'
           b"RuntimeError: NCCL error\n  host      : node1\n  rank      : 0 (local_rank: 0)\n")
    assert (unwrap_kind(own), common_indent(own)) == ("", b"")


def test_logs_that_only_hold_json_or_escapes_are_read_as_they_are() -> None:
    # JSON with no field holding a line (a flight-recorder dump, a config) is not a collector's export
    assert unwrap_kind(b'{"version": "2.10", "pg_config": {}}\n{"entries": []}\n') == ""
    # one record per line, but the first line is a plain one: read as plain text
    assert unwrap_kind(b'starting\n{"log": "x\\n"}\n') == ""
    # a real log with one Python repr holding escapes among its lines keeps its lines
    log = b"".join(b"node1:1:2 [0] NCCL INFO Channel %02d/02 :    0   1\n" % i for i in range(8))
    assert unwrap_kind(log + b"ValueError: 'a\\nb\\nc' is not a valid choice\n" + log) == ""
    assert unwrap_kind(b"one line\\ntwo\\nthree\\n") == "escaped-newlines"


@pytest.mark.parametrize("kind, data", [
    ("escaped-newlines", rb'h:1:2 [0] init.cc:1 NCCL WARN Cuda failure \'out of memory\'\r\nline\n\u001b[0m\\\\path "q"\n'
                         rb"\\\\n\\"),
    ("json-lines", b'{"log":"h:1:2 [0] NCCL WARN x\\n","stream":"stderr"}\n{"message":"y"}\nplain\n{"a":1}\n{"log":"z'),
])
def test_unwrapping_does_not_depend_on_where_reads_cut_the_stream(kind: str, data: bytes) -> None:
    whole = io.BufferedReader(Unwrapping(io.BytesIO(data), kind)).read()
    for size in range(1, 12):
        u = Unwrapping(io.BytesIO(b""), kind)
        out = b"".join(u._convert(data[i:i + size]) for i in range(0, len(data), size))
        u._eof = True
        assert out + u._convert(b"") == whole, size
    if kind == "escaped-newlines":
        assert whole == b"h:1:2 [0] init.cc:1 NCCL WARN Cuda failure 'out of memory'\nline\n\x1b[0m\\\\path \"q\"\n\\\\n\\"
    else:
        assert whole == b'h:1:2 [0] NCCL WARN x\ny\nplain\n{"a":1}\n{"log":"z'


def test_a_posts_framing_is_a_prefix_and_entities_are_characters() -> None:
    rec = classify("> > [rank3]:[E415 21:17:08.996 ProcessGroupNCCL.cpp:552] Watchdog caught collective operation timeout")
    assert (rec.kind, rec.level, rec.rank) == ("c10d", "E", 3)
    rec = classify(">   [0m ip-1:2:3 [0] NCCL INFO Using network Socket")
    assert (rec.kind, rec.host, rec.msg) == ("nccl", "ip-1", "Using network Socket")
    rec = classify("2026-11-28T10:00:00.1Z stderr F h:1:2 [0] NCCL INFO x")
    assert (rec.kind, rec.host) == ("nccl", "h")
    # a bare clock is a time, not srun's task number ("12:" of "12:00:00")
    rec = classify("12:00:00.5 RuntimeError: x")
    assert (rec.kind, rec.task, rec.exc_type) == ("exception", None, "RuntimeError")
    assert classify("3: h:1:2 [0] NCCL WARN x y").task == 3
    rec = classify("(pid=4242) h:1:2 [0] NCCL INFO x")  # Ray 1.x names no actor
    assert (rec.kind, rec.actor) == ("nccl", "pid=4242")
    # pdsh's node name holds a digit; an exception's type, even one with a digit, is no node
    assert classify("10.0.0.12: [rank3]:[E415 21:17:08.996 ProcessGroupNCCL.cpp:552] x").rank == 3
    rec = classify("mpi4py.MPI.Exception: Other MPI error")
    assert (rec.kind, rec.exc_type) == ("exception", "Exception")
    assert classify("RuntimeError: NCCL error").exc_type == "RuntimeError"
    assert raw_owner(b"> [rank3]: text").rank == 3
    text, _ = clean(b"h:1:2 [0] NCCL WARN Cuda failure &#39;out of memory&#39; at 10.0.0.1&lt;0&gt;")
    assert text == "h:1:2 [0] NCCL WARN Cuda failure 'out of memory' at 10.0.0.1<0>"
    # what only looks like an entity stays as written; NCCL's device field is still a device, not a quote or rank
    assert clean(b"AT&T &foo; a&b;")[0] == "AT&T &foo; a&b;"
    rec = classify("[3] include/shm.h:28 NCCL WARN Error while creating shared memory segment")
    assert (rec.kind, rec.dev, rec.rank) == ("nccl", 3, None)


# Every form with a per-line prefix: the TUI's log view and the report's excerpts (raw_owner, from bytes) must know
# the same owner of a line that the log reader (classify, from text) knows.
LINE_FORMS = {"go-time": _go_time, "clock": _clock, "epoch": _epoch, "pdsh": _pdsh, "syslog": _syslog, "quote": _quote,
              "containerd": _containerd, "ray": lambda s: "(RayWorkerWrapper pid=12, ip=10.0.0.1) " + s,
              "ray-1": lambda s: "(pid=12) " + s, "ansi-residue": lambda s: "[0m " + s}


@pytest.mark.parametrize("form", sorted(LINE_FORMS))
@pytest.mark.parametrize("line, rank, host", [
    ("[rank3]:[E1128 10:00:00.1 ProcessGroupNCCL.cpp:552] Watchdog caught collective operation timeout", 3, None),
    ("[1,5]<stderr>:node1:22:33 [1] NCCL INFO Using network Socket", 5, "node1"),
    ("7: gpu-a12:100:200 [3] misc/socket.cc:50 NCCL WARN Net : Connection closed by remote peer", 7, "gpu-a12"),
    ("ip-172-31-0-137:14605:14673 [0] NCCL INFO Bootstrap : Using ens5:172.31.0.137<0>", None, "ip-172-31-0-137"),
])
def test_the_raw_reader_knows_a_lines_owner_in_every_form(form: str, line: str, rank: int | None,
                                                           host: str | None) -> None:
    text = LINE_FORMS[form](line + "\n").rstrip("\n")
    rec = classify(text)
    who = raw_owner(text.encode())
    assert (rec.rank if rec.rank is not None else rec.task, rec.host) == (rank, host)
    assert (who.rank, who.host.decode() if who.host else None) == (rank, host)
