"""``commdoctor hang --records DIR`` shows a meter on a terminal while it reads the records, and none with
``--json`` or in a pipe (the meter itself: commdoctor/render/progress.py; ``records``: test_progress_tty.py)."""

from __future__ import annotations

from pathlib import Path

from tests.test_progress_tty import run_pipe, run_tty
from tests.test_records_scale import _bench


def test_hang_records_shows_progress_on_a_terminal_only(tmp_path: Path) -> None:
    d = tmp_path / "hooks"
    _bench().make_set(d, 12, 60, "straggler", 5, 2)
    rc, term, _ = run_tty("hang", "--records", str(d))
    assert "hooks records: reading files: " in term, term[:2000]
    assert "flight recorder" not in term
    rc, term, out = run_tty("hang", "--records", str(d), "--json", stdout_tty=False)
    assert "hooks records: reading" not in term and out.lstrip().startswith("{")
    p = run_pipe("hang", "--records", str(d))
    assert "hooks records: reading" not in p.stderr + p.stdout
    assert "rank 5" in p.stdout  # the verdict is still there
