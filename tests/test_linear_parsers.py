"""Rewritten patterns take exactly the lines their quadratic versions took, with the same parts, in linear time.

The frame lines of ``py-spy dump``'s text output were read with
``^\\s+(.*?) \\(([^()]*?)(?::(\\d+))?\\)\\s*$``, quadratic on one long line of spaces;
``parsing.stacks._frame_parts`` reads them with string methods. Here the two are
compared on every frame line of the real py-spy captures and on generated lines
built from the characters that decide a match (spaces, tabs, parentheses, colons,
digits of two scripts), and the new one is timed on the hostile line. The MPI
rows' leading ``\\w+`` now starts a word: the same matches (a search's leftmost
match always started one), checked on their real lines and on generated ones.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from commdoctor.parsing.stacks import _frame_parts, parse_stack_text
from commdoctor.rules import mpi

ROOT = Path(__file__).resolve().parents[1]
OLD_FRAME = re.compile(r"^\s+(.*?) \(([^()]*?)(?::(\d+))?\)\s*$")


def _old(raw: str) -> tuple[str, str, str | None] | None:
    m = OLD_FRAME.match(raw)
    return (m.group(1), m.group(2), m.group(3)) if m else None


def _capture_lines() -> list[str]:
    paths = sorted((ROOT / "fixtures" / "hang").rglob("*.txt"))
    lines = [ln for p in paths for ln in p.read_text(encoding="utf-8", errors="replace").splitlines()]
    assert sum(1 for ln in lines if ln.startswith("    ")) > 100, "the py-spy captures should hold frame lines"
    return lines


def test_frame_lines_of_real_captures_read_as_before() -> None:
    lines = _capture_lines()
    for ln in lines:
        assert _frame_parts(ln) == _old(ln), ln
    # and the reading itself: a Python frame with its line, a native one without
    assert _frame_parts("    synchronize (torch/cuda/__init__.py:1162)") == ("synchronize", "torch/cuda/__init__.py", "1162")
    assert _frame_parts("    0x7fcd5442a1ca (libc.so.6)") == ("0x7fcd5442a1ca", "libc.so.6", None)


# Near-misses and edges of the old pattern's meaning, each compared with it.
EDGES = [
    "  (x.py:1)", " (x.py:1)", "\t(x.py:1)", " \t (x.py:1)", "    (a) (b.py:1)", "    f (a(b).py:1)", "    f (a.py:1) ",
    "    f (a.py:1)x", "    f(a.py:1)", "f (a.py:1)", "    f (a.py:)", "    f (a.py:1:2)", "    f (a.py:\u0663)",
    "    f (a.py:x1)", "    f ()", "    f ( )", "    f (a.py:1))", "    f (a.py:1)\u00a0", "\u00a0 f (a.py:1)",
    "    f  (a.py:1)", "    f (:1)", "    ", "", "    f (a.py:1\n)",
]


@pytest.mark.parametrize("line", EDGES)
def test_frame_edges_read_as_before(line: str) -> None:
    assert _frame_parts(line) == _old(line)


@settings(max_examples=600, deadline=None, derandomize=True)
@given(st.text(alphabet=" \t()::1\u0663a.\u00a0x", max_size=24))
def test_generated_frame_lines_read_as_before(line: str) -> None:
    assert _frame_parts(line) == _old(line)


@pytest.mark.parametrize("line", [" " * 200_000, " " * 100_000 + "(", "    f (" + "(" * 100_000 + ")",
                                  "  " + "a (" * 50_000 + ")", " " + ":" * 200_000 + ")"])
def test_frame_reader_is_linear_on_hostile_lines(line: str) -> None:
    """The old pattern took minutes on the first line; a whole dump of such lines reads in well under a second."""
    t0 = time.perf_counter()
    _frame_parts(line)
    parse_stack_text('Thread 0x1 (idle): "MainThread"\n' + line + "\n")
    assert time.perf_counter() - t0 < 1.0


def test_line_number_of_5000_digits_keeps_the_frame() -> None:
    """int() refuses 4,300 digits and more: the text reader raised ValueError on such a frame; now the frame
    stays with its line unknown, and the frames beside it are read as usual."""
    text = ('Thread 0x1 (idle): "MainThread"\n    f (x.py:' + "9" * 5000 + ")\n    g (y.py:12)\n")
    st_ = parse_stack_text(text)
    frames = st_.threads[0].frames
    assert [(f.function, f.file, f.line) for f in frames] == [("f", "x.py", None), ("g", "y.py", 12)]


def _sig(sig_id: str) -> re.Pattern[str]:
    return next(s.pattern for s in mpi.SIGNATURES if s.id == sig_id)


def _unanchored(rx: re.Pattern[str]) -> re.Pattern[str]:
    assert rx.pattern.startswith(r"(?<!\w)")
    return re.compile(rx.pattern[len(r"(?<!\w)"):], rx.flags)


MPI_LINES = [
    ("mpi_daemon_connect", "ORTE was unable to reliably start one or more daemons."),
    ("mpi_daemon_connect", "PRTE has lost communication with a remote daemon."),
    ("mpi_daemon_connect", "ORTE is unable to establish a communication connection to the"),
    ("mpi_daemon_connect", "An ORTE daemon has unexpectedly failed after launch and before"),
    ("mpi_daemon_connect", "[node1:1234] xORTE is unable to establish a communication connection to the"),
    ("mpirun_signal", "mpirun noticed that process rank 3 with PID 4242 on node node07 exited on signal 11 "
                      "(Segmentation fault)."),
    ("mpirun_signal", "prterun noticed that process rank 0 with PID 0 on node n1 exited on signal 9 (Killed)."),
]


@pytest.mark.parametrize("sig_id,line", MPI_LINES)
def test_mpi_rows_match_as_before(sig_id: str, line: str) -> None:
    new = _sig(sig_id)
    old = _unanchored(new)
    a, b = new.search(line), old.search(line)
    assert a is not None and b is not None
    assert (a.span(), a.groupdict()) == (b.span(), b.groupdict())


@settings(max_examples=400, deadline=None, derandomize=True)
@given(st.lists(st.sampled_from(["ORTE", "PRTE", "xx", "_", "7", " ", "-", "mpirun",
                                 " is unable to establish a communication connection to the",
                                 " daemon has unexpectedly failed after launch", " noticed that process rank 1 with PID 2",
                                 " on node h exited on signal 9", " (Killed)"]), max_size=8).map("".join))
def test_generated_mpi_lines_match_as_before(line: str) -> None:
    for sig_id in ("mpi_daemon_connect", "mpirun_signal"):
        new = _sig(sig_id)
        a, b = new.search(line), _unanchored(new).search(line)
        assert (a and (a.span(), a.groupdict())) == (b and (b.span(), b.groupdict())), (sig_id, line)


@pytest.mark.parametrize("sig_id", ["mpi_daemon_connect", "mpirun_signal"])
def test_mpi_rows_are_linear_on_a_run_of_word_characters(sig_id: str) -> None:
    t0 = time.perf_counter()
    _sig(sig_id).search("a" * 100_000)
    _sig(sig_id).search("a " * 50_000)
    assert time.perf_counter() - t0 < 1.0
