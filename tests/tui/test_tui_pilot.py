"""Drive the TUI as a user would (textual's Pilot): select, jump, filter, copy, export, quit."""

from __future__ import annotations

import json
import re
import threading
from pathlib import Path
from typing import Any

import pytest

from tuikit import drive, make_app, screen_text, showing, until





def test_select_a_finding_shows_detail_evidence_and_remedy(canned: Any) -> None:
    app = make_app(path=canned("run-mixed"))

    async def script(pilot: Any) -> None:
        from commdoctor.tui.screens.detail import FindingScreen

        assert app.main.query_one("#tabs").active == "findings"
        # Errors first: ENV022 (the verdict), PG006; then warnings ENV030, ENV040, ENV052.
        table = app.main.query_one("#findings-table")
        assert [f.code for f in table.findings][:5] == ["ENV022", "PG006", "ENV030", "ENV040", "ENV052"]
        for _ in range(4):
            await pilot.press("down")
        await pilot.press("enter")
        await until(pilot, lambda: showing(app, FindingScreen), what="the finding screen")
        assert app.screen.finding.code == "ENV052"
        text = screen_text(app)
        assert "NCCL_P2P_DISABLE=1 turns off peer-to-peer" in text
        assert "env: NCCL_P2P_DISABLE=1" in text  # the evidence
        assert "export NCCL_P2P_DISABLE=0" in text  # the selectable block
        await pilot.press("y")
        assert app.clipboard == "export NCCL_P2P_DISABLE=0\n"
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, FindingScreen), what="back to the list")

    drive(app, script)


def test_jump_to_evidence_opens_the_log_at_the_cited_line(canned: Any) -> None:
    path = canned("logs-job")
    app = make_app(path=path)
    lines = (path.parent / "logs" / "job.log").read_text().splitlines()
    oom = next(i for i, l in enumerate(lines) if "Cuda failure 'out of memory'" in l)

    async def script(pilot: Any) -> None:
        from commdoctor.tui.widgets.logview import LogView

        await pilot.press("enter")  # the first finding: LOG901
        await pilot.pause()
        await pilot.press("e")
        await until(pilot, lambda: app.main.query_one("#tabs").active == "log", what="the log tab")
        view = app.main.query_one(LogView)
        await until(pilot, lambda: view.line_at(view.cursor) == oom, what="the cursor on the cited line")
        await pilot.pause(0.2)
        text = screen_text(app)
        assert f"{oom + 1}▶ node02:1019:3019 [3] include/alloc.h:114 NCCL WARN Cuda failure" in text
        top = view.scroll_offset.y
        assert top <= oom < top + view.size.height  # on screen, not only the cursor
        # n / N walk the cited lines: 2 evidence lines of LOG901 and 1 of LOG902 in this file.
        cited = sorted(view.cited)
        assert len(cited) == 3 and oom in cited
        await pilot.press("n")
        assert view.line_at(view.cursor) == cited[cited.index(oom) + 1]

    drive(app, script)


def _rank19_oracle(lines: list[str]) -> list[int]:
    """Lines of rank 19, counted independently of the log view's code: NCCL lines of pid 1019
    on node02 (NCCL's init line ties pid 1019 to rank 19), torch's [rank19]: and srun's 19: prefixes."""
    return [i for i, l in enumerate(lines)
            if l.startswith(("node02:1019:", "[rank19]:", "19: "))]


def test_filter_the_log_by_rank(canned: Any) -> None:
    path = canned("logs-job")
    app = make_app(path=path)
    lines = (path.parent / "logs" / "job.log").read_text().splitlines()
    want = _rank19_oracle(lines)
    assert len(want) > 20

    async def script(pilot: Any) -> None:
        from commdoctor.tui.widgets.logview import LogView

        await pilot.press("4")
        await until(pilot, lambda: app.main.query_one("#tabs").active == "log", what="the log tab")
        await pilot.click("#f-rank")
        await pilot.press("1", "9", "enter")
        view = app.main.query_one(LogView)
        await until(pilot, lambda: view.scan is not None and view.scan.done, what="the filter scan")
        assert list(view.scan.matches) == want
        await pilot.pause(0.2)
        text = screen_text(app)
        body = [l for l in text.splitlines() if re.match(r"^\s*\d+[▶ ] ", l)]  # rows of the log view
        assert len(body) > 10, text
        assert all("node02:1019:" in l or "[rank19]:" in l or " 19: " in l for l in body), "\n".join(body)
        assert f"filter rank 19: {len(want):,} lines" in text
        # Clearing the filter brings every line back, with the cursor kept on the same line.
        here = view.line_at(view.cursor)
        inp = app.main.query_one("#f-rank")
        inp.value = ""
        await pilot.click("#f-rank")
        await pilot.press("enter")
        await until(pilot, lambda: view.scan is None, what="the filter to clear")
        assert view.rows() == len(lines)
        assert view.line_at(view.cursor) == here

    drive(app, script)


def test_bad_rank_filter_says_why_and_keeps_the_view(canned: Any) -> None:
    app = make_app(path=canned("logs-job"))

    async def script(pilot: Any) -> None:
        from commdoctor.tui.widgets.logview import LogView

        await pilot.press("4")
        await pilot.click("#f-rank")
        await pilot.press("x", "enter")
        await pilot.pause(0.2)
        view = app.main.query_one(LogView)
        assert view.scan is None
        assert any("not a rank" in str(n.message) for n in app._notifications)  # noqa: SLF001

    drive(app, script)


def test_export_writes_the_report_next_to_the_input(canned: Any) -> None:
    path = canned("hang-16ranks")
    app = make_app(path=path)

    async def script(pilot: Any) -> None:
        await pilot.press("s")
        await until(pilot, lambda: bool(app.exported), what="the export")

    drive(app, script)
    from commdoctor.core.model import Report

    outs = sorted(Path(p) for p in app.exported)
    assert [p.name for p in outs] == [f"hang-16ranks-support.{x}" for x in ("html", "json", "md")]
    assert all(p.parent == path.parent for p in outs)
    back = Report.from_dict(json.loads(outs[1].read_text()))  # redacted, and reopened by `commdoctor view`
    assert [r.check for r in back.results] == [r["check"] for r in json.loads(path.read_text())["results"]]


def test_quit_returns_and_ranks_lead_to_stacks() -> None:
    app = make_app("hang-16ranks")

    async def script(pilot: Any) -> None:
        from commdoctor.tui.screens.detail import StackScreen
        from commdoctor.tui.widgets.ranks import RankGrid

        await pilot.press("3")
        grid = app.main.query_one(RankGrid)
        await until(pilot, lambda: grid.has_focus, what="the rank grid")
        assert grid.row_count == 2 and len(grid.columns) == 8  # 2 hosts x 8 ranks
        assert grid.select_rank(11)
        await pilot.pause()
        detail = screen_text(app)
        assert "rank 11 on node-b" in detail and "read (data.py:41)" in detail
        await pilot.press("enter")
        await until(pilot, lambda: showing(app, StackScreen), what="the stack screen")
        assert app.screen.rank.rank == 11
        await pilot.press("escape")
        await pilot.press("q")
        await until(pilot, lambda: app.return_value is not None or not app.is_running, what="the app to exit")

    drive(app, script)
    assert app.return_value == 0


def test_live_run_shows_status_while_checks_run() -> None:
    """Real pipeline events, real checks: a check that blocks shows RUNNING with its elapsed time."""
    import commdoctor.checks  # noqa: F401
    from commdoctor.checks.base import Check, Rule
    from commdoctor.core.model import Severity
    from commdoctor.checks.env import LauncherCheck, ShmCheck
    from commdoctor.core.model import Stage
    from commdoctor.pipeline.run import Context, Facts, Options, plan, run_checks
    from commdoctor.probes import live_providers
    from commdoctor.tui.app import CommDoctorApp

    gate = threading.Event()

    class Blocks(Check):
        """A check that waits for the test (bounded).

        What it checks:
            Nothing; it holds the run so the test can look at it.
        Why it matters:
            Test only.
        Known limits:
            Test only.
        """

        name = "test.blocks"
        stage = Stage.COLLECTIVES
        title = "A check that waits"
        timeout_s = 60.0
        rules = (Rule("TST901", "test-only", Severity.INFO, "never emitted", "nothing"),)

        def run(self, run: Any):  # type: ignore[no-untyped-def]
            gate.wait(30)
            run.summary("released")
            return ()

    opts = Options(mode="run")
    checks = [LauncherCheck(), ShmCheck(), Blocks()]
    ctx = Context(options=opts, facts=Facts(live_providers()))
    app = CommDoctorApp(events=run_checks(plan(checks, opts), ctx, ["commdoctor", "run"]), heading="test")

    async def script(pilot: Any) -> None:
        st = app.state
        await until(pilot, lambda: st.rows.get("test.blocks") is not None and st.rows["test.blocks"].state == "running",
                    what="the blocking check to start")
        await pilot.pause(0.6)
        text = screen_text(app)
        assert "running" in text and "A check that waits" in text
        assert st.rows["env.launcher"].state == "passed"
        gate.set()
        await until(pilot, lambda: st.done, what="the run to finish")
        await pilot.pause(0.2)
        text = screen_text(app)
        assert "released" in text
        assert "3 checks: 3 passed" in text

    try:
        drive(app, script)
    finally:
        gate.set()


def test_a_broken_event_source_is_shown_not_fatal() -> None:
    """If the pipeline itself raises (a bug), the TUI says so and keeps what it had."""
    import commdoctor.checks  # noqa: F401
    from commdoctor.pipeline.run import CheckFinished, RunStarted
    from commdoctor.tui.app import CommDoctorApp
    from tuikit import fixture_report

    rep = fixture_report("run-mixed")

    def events():  # type: ignore[no-untyped-def]
        yield RunStarted(tuple((r.check, r.stage, r.title) for r in rep.results))
        yield CheckFinished(rep.results[0])
        raise RuntimeError("pipeline exploded")

    app = CommDoctorApp(events=events(), heading="test")

    async def script(pilot: Any) -> None:
        await until(pilot, lambda: app.state.failure is not None, what="the failure")
        await pilot.pause(0.2)
        text = screen_text(app)
        assert "commdoctor hit a bug" in text and "RuntimeError: pipeline exploded" in text
        assert app.state.rows[rep.results[0].check].state == "passed"
        assert app.final_report().interrupted

    drive(app, script)


def test_mouse_tabs_and_rank_cells() -> None:
    """Everything the keys do, the mouse does too: a click on a tab, a click on a rank's cell."""
    app = make_app("hang-16ranks")

    async def script(pilot: Any) -> None:
        await pilot.click("#--content-tab-ranks")
        await until(pilot, lambda: app.main.query_one("#tabs").active == "ranks", what="the ranks tab")
        await pilot.pause(0.2)
        assert "rank 13 on node-b" not in screen_text(app)
        # Click where rank 13's cell is drawn on the screen.
        rows = screen_text(app).splitlines()
        (y, x), = [(n, line.index("13 C")) for n, line in enumerate(rows) if "13 C" in line]
        await pilot.click(offset=(x + 1, y))
        await until(pilot, lambda: "rank 13 on node-b" in screen_text(app), what="rank 13's detail")

    drive(app, script)
