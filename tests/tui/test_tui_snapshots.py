"""Snapshots of every screen for the canned reports (pytest-textual-snapshot; SVGs in __snapshots__).

Regenerate after an intended change with ``python -m pytest tests/tui/test_snapshots.py
--snapshot-update`` and look at the SVGs before committing them. The canned reports
are fixtures/tui/*.json (see PROVENANCE.md there).
"""

from __future__ import annotations

import threading
from typing import Any

import pytest

from tuikit import fixture_report, make_app, screen_text, showing, until

pytestmark = pytest.mark.usefixtures("stable_version")

SMALL = (80, 24)
LARGE = (160, 48)


async def ready(pilot: Any) -> None:
    """run_before runs as soon as the app starts: wait (bounded) until the main screen is mounted."""
    for _ in range(400):
        if pilot.app.screen_stack and pilot.app.screen.query("#tabs"):
            break
        await pilot.pause(0.05)
    await pilot.pause()


async def settle(pilot: Any) -> None:
    """Let background indexing/filtering finish so a log screen is the same every time (bounded)."""
    from commdoctor.tui.widgets.logview import LogView

    for _ in range(200):
        views = pilot.app.screen.query(LogView)
        if not any(v.busy for v in views):
            break
        await pilot.pause(0.05)
    await pilot.pause(0.3)  # the view polls every 0.2 s


def test_run_findings_80x24(snap_compare: Any) -> None:
    assert snap_compare(make_app("run-mixed"), terminal_size=SMALL)


def test_run_checks_80x24(snap_compare: Any) -> None:
    """Every status: passed, warning, failed, crashed, timed out, skipped; grouped by stage."""
    assert snap_compare(make_app("run-mixed"), press=["1"], terminal_size=SMALL)


def test_run_crashed_check_detail(snap_compare: Any) -> None:
    assert snap_compare(make_app("run-mixed"), press=["1", "down", "down", "enter"], terminal_size=SMALL)


def test_run_finding_remedy_with_settings(snap_compare: Any) -> None:
    assert snap_compare(make_app("run-mixed"), press=["down", "down", "down", "down", "enter"], terminal_size=SMALL)


def test_run_no_color(snap_compare: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    assert snap_compare(make_app("run-mixed"), terminal_size=SMALL)


def test_run_large_terminal(snap_compare: Any) -> None:
    assert snap_compare(make_app("run-mixed"), terminal_size=LARGE)


def test_hang_rank_grid_80x24(snap_compare: Any) -> None:
    """16 ranks on 2 hosts; the cursor on rank 11, the odd one out, shows its stack below."""
    async def to_rank_11(pilot: Any) -> None:
        from commdoctor.tui.widgets.ranks import RankGrid

        await ready(pilot)
        await pilot.press("3")
        await pilot.pause()
        pilot.app.screen.query_one(RankGrid).select_rank(11)
        # The detail pane follows the cursor by message.
        await until(pilot, lambda: "rank 11 on node-b" in screen_text(pilot.app), timeout=20, what="rank 11's detail")

    assert snap_compare(make_app("hang-16ranks"), terminal_size=SMALL, run_before=to_rank_11)


def test_hang_rank_grid_large(snap_compare: Any) -> None:
    assert snap_compare(make_app("hang-16ranks"), press=["3"], terminal_size=LARGE)


def test_hang_stack_screen(snap_compare: Any) -> None:
    async def open_rank_11(pilot: Any) -> None:
        from commdoctor.tui.screens.detail import StackScreen
        from commdoctor.tui.widgets.ranks import RankGrid

        await ready(pilot)
        await pilot.press("3")
        await pilot.pause()
        pilot.app.screen.query_one(RankGrid).select_rank(11)
        await pilot.pause()
        await pilot.press("enter")
        for _ in range(200):
            if showing(pilot.app, StackScreen):
                break
            await pilot.pause(0.05)

    assert snap_compare(make_app("hang-16ranks"), terminal_size=SMALL, run_before=open_rank_11)


def test_hang_findings(snap_compare: Any) -> None:
    assert snap_compare(make_app("hang-16ranks"), terminal_size=SMALL)


def test_logs_finding_evidence(snap_compare: Any) -> None:
    assert snap_compare(make_app("logs-job"), press=["enter"], terminal_size=SMALL)


def test_logs_jump_to_evidence(snap_compare: Any) -> None:
    async def jump(pilot: Any) -> None:
        from commdoctor.tui.screens.detail import FindingScreen

        await ready(pilot)
        await pilot.press("enter")
        for _ in range(200):
            if showing(pilot.app, FindingScreen):
                break
            await pilot.pause(0.05)
        await pilot.press("e")
        for _ in range(200):
            if pilot.app.screen.query("#tabs") and pilot.app.screen.query_one("#tabs").active == "log":
                break
            await pilot.pause(0.05)
        await settle(pilot)
        # The toast saying where we jumped is transient; the snapshot is of the log itself.
        pilot.app.clear_notifications()
        await pilot.pause()

    assert snap_compare(make_app("logs-job"), terminal_size=SMALL, run_before=jump)


def test_logs_filtered_by_rank(snap_compare: Any) -> None:
    async def filt(pilot: Any) -> None:
        await ready(pilot)
        await pilot.press("4")
        await pilot.click("#f-rank")
        await pilot.press("1", "9", "enter")
        await settle(pilot)

    assert snap_compare(make_app("logs-job"), terminal_size=SMALL, run_before=filt)


def test_live_run_in_progress(snap_compare: Any) -> None:
    """Pipeline events replayed from the canned run, held while the 8th check runs (clock fixed)."""
    import commdoctor.checks  # noqa: F401 - the pipeline cannot be imported first (circular on main)
    from commdoctor.pipeline.run import CheckFinished, CheckStarted, RunStarted
    from commdoctor.tui.app import CommDoctorApp

    report = fixture_report("run-mixed")
    gate = threading.Event()
    now = [100.0]

    def events():  # type: ignore[no-untyped-def]
        rs = report.results
        yield RunStarted(tuple((r.check, r.stage, r.title) for r in rs))
        for r in rs[:7]:
            yield CheckStarted(r.check, r.stage, r.title)
            yield CheckFinished(r)
        yield CheckStarted(rs[7].check, rs[7].stage, rs[7].title)
        gate.wait(60)

    app = CommDoctorApp(events=events(), heading="commdoctor X.Y.Z: checking this host", clock=lambda: now[0])

    async def wait_running(pilot: Any) -> None:
        await ready(pilot)
        for _ in range(400):
            row = pilot.app.state.rows.get(report.results[7].check)
            if row is not None and row.state == "running":
                break
            await pilot.pause(0.05)
        now[0] += 12.4  # the running check has run for 12.4 s when the screen is taken
        pilot.app.main.tick()  # what the 0.5 s timer does; called here so a loaded machine cannot skip it
        await pilot.pause()

    try:
        assert snap_compare(app, terminal_size=SMALL, run_before=wait_running)
    finally:
        gate.set()
