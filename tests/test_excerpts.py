"""Bounded excerpts: every kept line is the real line with its real number, across chunk edges."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from commdoctor.render import excerpts


def _real_lines(data: bytes) -> list[bytes]:
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines = lines[:-1]
    return lines


def _kept(x: excerpts.FileExcerpt) -> dict[int, str]:
    return {b.start + i: ln for b in x.blocks for i, ln in enumerate(b.lines)}


line_st = st.one_of(
    st.sampled_from([b"[rank0]: step 1", b"[rank1]: RuntimeError: boom", b"node01:10:11 [0] NCCL WARN oops",
                     b"3: Traceback (most recent call last)", b"", b"plain text", b"\xff\xfe junk \x1b[31mred\x1b[0m"]),
    st.binary(max_size=90).map(lambda b: b.replace(b"\n", b" ")),
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=st.lists(line_st, max_size=120), trailing=st.booleans(), gz=st.booleans(), cite=st.integers(1, 130))
def test_kept_lines_are_the_real_lines(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, lines: list[bytes],
                                       trailing: bool, gz: bool, cite: int) -> None:
    monkeypatch.setattr(excerpts, "CHUNK", 97)  # tiny chunks: windows cross chunk edges all the time
    monkeypatch.setattr(excerpts, "CONTEXT_BYTES", 300)
    data = b"\n".join(lines) + (b"\n" if trailing and lines else b"")
    path = tmp_path / ("x.log.gz" if gz else "x.log")
    path.write_bytes(gzip.compress(data) if gz else data)
    x = excerpts.excerpt_file(str(path), cited={cite: "CITED"}, before=3, after=4, head=2, tail=3, max_line=50,
                              max_bytes=1 << 20)
    real = _real_lines(data)
    assert x.lines == len(real) and x.size == len(data)
    for n, text in _kept(x).items():
        want, _ = excerpts._decode(real[n - 1], 50)
        assert text == want, (n, text, want)
    kept = _kept(x)
    if 1 <= cite <= len(real):
        assert cite in kept  # a cited line is always there (the budget is large here)
        assert all(n in kept for n in range(max(1, cite - 3), min(len(real), cite + 4) + 1))
    for h in x.first_errors:
        assert excerpts.ERROR_RE.search(real[h.line - 1]) and h.line in kept
    if real:
        assert all(n in kept for n in range(max(1, len(real) - 2), len(real) + 1))  # the tail


def test_budget_drops_windows_and_says_so(tmp_path: Path) -> None:
    lines = [f"[rank{r}]: RuntimeError: failure {r} " + "x" * 200 for r in range(16)]
    filler = ["ok " * 40] * 200
    data = "\n".join(sum(([ln, *filler] for ln in lines), [])) + "\n"
    path = tmp_path / "many.log"
    path.write_text(data)
    x = excerpts.excerpt_file(str(path), max_bytes=20_000)
    assert len(x.first_errors) == 16
    assert sum(len(t) + 10 for b in x.blocks for t in b.lines) <= 20_000
    assert any("first error of rank" in o for o in x.omitted)
    assert "# omitted (size bound): first error of rank" in x.text()


def test_line_key_knows_every_prefix() -> None:
    from commdoctor.render.excerpts import line_key

    assert line_key(b"[2026-11-24 22:43:00] vm:1192:1213 [0] misc/socket.cc:72 NCCL WARN socketProgress: x") == "vm:1192"
    assert line_key(b"[1,3]<stderr>:RuntimeError: boom") == "rank 3"
    assert line_key(b"[rank0]:[E1124 ProcessGroupNCCL.cpp:689] x") == "rank 0"
    assert line_key(b"[default2]:x") == "rank 2" and line_key(b"5: x") == "rank 5" and line_key(b"plain") == ""
