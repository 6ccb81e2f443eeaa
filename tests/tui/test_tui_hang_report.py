"""The TUI on a real ``commdoctor hang --json`` report (issue 20): the Ranks tab and the ``s`` key.

The report is made here by the real command from real py-spy captures of a hung
gloo job (fixtures/hang/straggler, see its provenance.md), so the rank data is
exactly the shape the hang stage writes; the live NCCL report of
fixtures/hang/nccl/mismatch3 (an H100, threads without frames) is read too.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tuikit import REPO, drive, make_app, run_cli, screen_text, showing, until

HANG = REPO / "fixtures" / "hang"
SIZE = (110, 36)
SECRET = "hf_Zq8xLmP3vR7tY2uW9kJ4nB6cD1eF5gH0aS"




def told(app: Any, words: str) -> bool:
    """The app has shown a notification (a toast) containing ``words``."""
    return any(words in str(n.message) for n in app._notifications)  # noqa: SLF001


@pytest.fixture(scope="module")
def hang_report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``commdoctor hang --stacks ... --fr ... --json`` on the real straggler capture, saved as a user would."""
    d = tmp_path_factory.mktemp("hangreport")
    p = run_cli("hang", "--stacks", str(HANG / "straggler"), "--fr", str(HANG / "straggler" / "fr"), "--json")
    assert p.returncode == 1, p.stderr  # an error finding: the straggler
    out = d / "hang.json"
    out.write_text(p.stdout)
    assert json.loads(p.stdout)["mode"] == "hang"
    return out


def test_ranks_tab_shows_each_ranks_state_call_site_and_frames(hang_report: Path) -> None:
    app = make_app(path=hang_report)

    async def script(pilot: Any) -> None:
        from commdoctor.tui.screens.detail import StackScreen
        from commdoctor.tui.widgets.ranks import RankGrid

        await pilot.press("3")
        grid = app.main.query_one(RankGrid)
        await until(pilot, lambda: grid.has_focus, what="the rank grid")
        text = screen_text(app)
        assert "4 ranks on 1 host" in text and "L in data loading 1 (rank 3)" in text
        assert re.search(r"0 C\s+1 C\s+2 C\s+3 L\*", text), text
        assert grid.select_rank(3)
        await pilot.pause()
        text = screen_text(app)
        assert "rank 3 (pid 32352)" in text and "in data loading: DataLoader" in text
        assert "inside hangjob.py:66 (Data.__getitem__)" in text
        assert "Data.__getitem__ (hangjob.py:66)" in text  # a frame, one per line
        assert "{'" not in text and "'threads'" not in text and "'frames'" not in text  # never a raw dict
        await pilot.press("enter")
        await until(pilot, lambda: showing(app, StackScreen), what="the stack screen")
        text = screen_text(app)
        assert text.lstrip().startswith("rank 3") and " on ?" not in text and " on \n" not in text
        assert "straggler (hangjob.py:72)" in text and "main (hangjob.py:121)" in text
        assert "{'" not in text
        await pilot.press("escape")

    drive(app, script, SIZE)


def test_ranks_tab_of_a_live_nccl_report_picks_the_thread_that_waits(tmp_path: Path) -> None:
    """The H100 capture: each rank has an idle thread with no frames, then MainThread in a CUDA sync."""
    src = HANG / "nccl" / "mismatch3" / "commdoctor-hang-live.json"
    path = tmp_path / src.name
    shutil.copy(src, path)
    app = make_app(path=path)

    async def script(pilot: Any) -> None:
        from commdoctor.tui.widgets.ranks import RankGrid

        await pilot.press("3")
        grid = app.main.query_one(RankGrid)
        await until(pilot, lambda: grid.has_focus, what="the rank grid")
        assert grid.select_rank(2)
        await pilot.pause()
        text = screen_text(app)
        assert "rank 2 on vm (pid 451)" in text and "waiting in a barrier: barrier" in text
        assert "<module> (job.py:74)" in text
        assert "{'" not in text
        assert grid.select_rank(0)
        await pilot.pause()
        text = screen_text(app)
        assert "synchronize (torch/cuda/__init__.py:1162)" in text and "<module> (job.py:71)" in text

    drive(app, script, SIZE)


def test_s_writes_the_redacted_support_report_that_report_writes(hang_report: Path, tmp_path: Path) -> None:
    """``s`` on a hang report opened with its log: the same Markdown/HTML as ``commdoctor report --from``."""
    work = tmp_path / "job"
    work.mkdir()
    report = work / "hang.json"
    shutil.copy(hang_report, report)
    log = work / "rank0.log"  # the real log of a hung gloo job, with a token a launcher echoed
    log.write_text(f"export HF_TOKEN={SECRET}\n" + (HANG / "logs" / "rank0.log").read_text())
    app = make_app(path=report, logs=[str(log)])

    async def script(pilot: Any) -> None:
        await pilot.press("s")
        await until(pilot, lambda: bool(app.exported), what="the support report")
        await until(pilot, lambda: told(app, "Support report (redacted)"), what="the message")

    drive(app, script, SIZE)
    md, html, js = (work / f"hang-support.{x}" for x in ("md", "html", "json"))
    assert sorted(app.exported) == sorted(map(str, (md, html, js)))
    text = md.read_text()
    assert text.startswith("# commdoctor report: HANG010 rank 3 is in data loading")
    assert "## Verdict" in text and "## Findings" in text
    for p in (md, html, js):
        body = p.read_text()
        assert SECRET not in body, p
    assert "[REDACTED:hf-token]" in text  # the log's excerpt is in, redacted
    assert json.loads(js.read_text())["environment"]["redaction"]["total"] >= 1
    # What `commdoctor report` itself writes from the same report and log, byte for byte.
    ref = run_cli("report", "--from", str(report), "--logs", str(log), "--md", str(tmp_path / "ref.md"),
                  "--html", str(tmp_path / "ref.html"))
    assert ref.returncode == 1, ref.stderr
    assert (tmp_path / "ref.md").read_text() == text
    assert (tmp_path / "ref.html").read_text() == html.read_text()
    # And `commdoctor view` reopens the JSON it wrote.
    back = run_cli("view", "--no-tui", str(js))
    assert "Verdict: HANG010" in back.stdout, back.stderr


def test_every_documented_key_is_bound() -> None:
    """docs/tui.md's key table against the bindings the app and its screens declare."""
    from commdoctor.tui.app import CommDoctorApp
    from commdoctor.tui.screens.detail import CheckScreen, FindingScreen, StackScreen
    from commdoctor.tui.screens.main import MainScreen
    from commdoctor.tui.widgets.logview import LogView

    bound: set[str] = set()
    for cls in (CommDoctorApp, MainScreen, CheckScreen, FindingScreen, StackScreen, LogView):
        for b in cls.BINDINGS:
            bound.update(k.strip() for k in b.key.split(","))  # type: ignore[union-attr]
    doc = (REPO / "docs" / "tui.md").read_text()
    table = doc[doc.index("| where | key | does |"):doc.index("- **Verdict bar**")]
    names = {"↑": "up", "↓": "down", "PgUp": "pageup", "PgDn": "pagedown", "esc": "escape"}
    # enter and the arrows are the widgets' own (DataTable, OptionList); the rest must be ours.
    builtin = {"enter", "up", "down", "arrows"}
    documented = set()
    for row in table.splitlines()[2:]:
        cells = row.split("|")
        if len(cells) > 2:
            documented.update(names.get(k, k) for k in re.findall(r"`([^`]+)`", cells[2]))
    assert {"q", "s", "1", "2", "3", "4", "escape", "e", "y", "n", "N", "p", "g", "G"} <= documented
    assert documented - builtin <= bound, sorted(documented - builtin - bound)


def test_keys_on_a_real_hang_report_do_what_the_docs_say(hang_report: Path, tmp_path: Path) -> None:
    report = tmp_path / "hang.json"
    shutil.copy(hang_report, report)
    app = make_app(path=report)

    async def script(pilot: Any) -> None:
        from textual.widgets import TabbedContent

        from commdoctor.tui.screens.detail import FindingScreen

        tabs = app.main.query_one(TabbedContent)
        for key, tab in (("1", "checks"), ("3", "ranks"), ("2", "findings")):
            await pilot.press(key)
            await until(pilot, lambda: tabs.active == tab, what=f"the {tab} tab")
        await pilot.press("4")  # no log file: the tab is hidden and the app says why
        await until(pilot, lambda: told(app, "No log file"), what="the no-log message")
        await pilot.press("enter")
        await until(pilot, lambda: showing(app, FindingScreen), what="the finding")
        assert app.screen.finding.code == "HANG010"
        await pilot.press("e")  # stack:rankN evidence is not a file: said, not a crash
        await until(pilot, lambda: told(app, "No evidence of this finding is a file"), what="the e message")
        await pilot.press("y")
        await until(pilot, lambda: told(app, "Copied the remedy steps"), what="the copy message")
        await pilot.press("escape")
        await until(pilot, lambda: len(app.screen_stack) == 1, what="the main screen")
        await pilot.press("q")
        await until(pilot, lambda: not app.is_running, what="the app to exit")

    drive(app, script, SIZE)
    assert app.return_value == 0


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
def test_real_hang_report_in_a_real_terminal(hang_report: Path, tmp_path: Path) -> None:
    """``commdoctor view hang.json`` under tmux: the rank's frames on screen, ``s`` writes the report."""
    import time

    from test_tui_tmux import Tmux, env, view_cmd

    report = tmp_path / "hang.json"
    shutil.copy(hang_report, report)
    term = Tmux(width=110, height=36)
    try:
        term.start(view_cmd(str(report)), env())
        term.wait_for(r"Verdict: HANG010")
        term.keys("3")
        # the grid has the focus, on rank 0; its frames fill the pane beside it a moment after the row (waited for both)
        first = term.wait_for(r"rank 0 \(pid 32343\)[\s\S]*all_reduce \(torch/distributed/distributed_c10d\.py:3252\)"
                              r"|all_reduce \(torch/distributed/distributed_c10d\.py:3252\)[\s\S]*rank 0 \(pid 32343\)")
        assert "{'" not in first
        term.keys("Right", "Right", "Right")
        shown = term.wait_for(r"Data\.__getitem__ \(hangjob\.py:66\)")
        assert "rank 3 (pid 32352)" in shown and "{'" not in shown
        term.keys("s")
        md = tmp_path / "hang-support.md"
        end = time.monotonic() + 60
        while not (md.exists() and (tmp_path / "hang-support.html").exists()) and time.monotonic() < end:
            time.sleep(0.2)
        assert md.read_text().startswith("# commdoctor report: HANG010"), term.screen()
        term.keys("q")
        assert "COMMDOCTOR-EXIT=1" in term.wait_for(r"COMMDOCTOR-EXIT=\d+")
    finally:
        term.close()
