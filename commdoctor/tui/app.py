"""The commdoctor TUI: the view an engineer keeps open over SSH while a job is sick.

Promise: it diagnoses nothing. It consumes pipeline events (a live run) or a
saved ``Report``; a background thread iterates the events and posts one
message per event; every screen draws ``RunState`` with the shared view
functions and theme. Styles live in app.tcss. NO_COLOR is honoured by textual
(monochrome), and every state also has a glyph or letter, so nothing is told
by colour alone.
"""

from __future__ import annotations

import os
import threading
import time
import traceback
from typing import Callable, Iterable, Sequence

from textual.binding import Binding

from commdoctor.core.model import CheckResult, Finding, Report
from commdoctor.render.theme import glyphs
from commdoctor.tui import export as export_mod
from commdoctor.tui.host import ScreenHost
from commdoctor.tui.messages import CheckBegan, CheckEnded, JumpToEvidence, RunBegan, RunBroke, RunEnded, message_for
from commdoctor.tui.screens.detail import CheckScreen, FindingScreen, StackScreen
from commdoctor.tui.screens.main import MainScreen
from commdoctor.tui.state import RankRow, RunState, cited_lines


class CommDoctorApp(ScreenHost):
    CSS_PATH = "app.tcss"
    TITLE = "commdoctor"
    ENABLE_COMMAND_PALETTE = False
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (120, "-wide")]
    BINDINGS = [
        Binding("q", "quit", "Quit"),
        Binding("s", "save_report", "Save report"),
    ]

    def __init__(
        self,
        *,
        events: Iterable[object] | None = None,
        report: Report | None = None,
        source: str | None = None,
        logs: Sequence[str] = (),
        heading: str = "",
        clock: Callable[[], float] = time.monotonic,
        ascii_only: bool = False,
        cwd: str | None = None,
    ) -> None:
        super().__init__()
        self.events = events
        self.saved = events is None
        self.state = RunState.from_report(report, clock) if report is not None else RunState(clock)
        self.log_only = events is None and report is None
        if self.log_only:
            self.state.report = Report(tool_version="", mode="view", created="", host="")
        self.source = source
        self.logs = [os.path.abspath(p) for p in logs]
        self.heading = heading
        self.ascii_only = ascii_only
        self.g = glyphs(ascii_only)
        self.cwd = cwd or os.getcwd()
        self.shown_files: dict[str, dict[int, Finding]] | None = None
        self.exported: list[str] = []
        self._stop = threading.Event()
        self._pump: threading.Thread | None = None
        self._saving = False
        #: A long check's progress (render/progress.py), shown in the verdict bar while it runs.
        self.meter_text: str | None = None
        has_findings = bool(self.state.findings())
        self.initial_tab = ("findings" if has_findings else "log" if (report is None and logs and self.saved)
                            else "checks")

    def get_default_screen(self) -> MainScreen:
        return MainScreen()

    @property
    def main(self) -> MainScreen:
        return self.screen_stack[0]  # type: ignore[return-value]

    # -- events in --------------------------------------------------------------------

    def screen_ready(self) -> None:
        """Called once the main screen is mounted: start consuming events."""
        if self.events is not None and self._pump is None:
            # A daemon thread, not a textual thread worker: those run in the loop's default
            # executor, which interpreter exit joins, so quitting during a 60 s check would
            # hang until the check's deadline. The pipeline's own checks are daemons too.
            from commdoctor.render import progress

            # Meters would write to stderr, under the screen (textual says stderr is a terminal): they
            # go to the verdict bar instead. Set from a check's thread; the next tick draws it.
            progress.set_display(self._meter)
            self._pump = threading.Thread(target=self._consume, name="commdoctor-events", daemon=True)
            self._pump.start()
            self.set_interval(0.5, self._tick)

    def _consume(self) -> None:
        assert self.events is not None
        try:
            for ev in self.events:
                self.post_message(message_for(ev))
                if self._stop.is_set():
                    break
        except Exception:  # noqa: BLE001 - a bug in a sink's source: shown in the TUI, not a dead screen
            self.post_message(RunBroke(traceback.format_exc()))

    def _meter(self, text: str | None) -> None:
        self.meter_text = text

    def on_unmount(self) -> None:
        if self.events is not None:
            from commdoctor.render import progress

            progress.set_display(None)

    def _tick(self) -> None:
        if isinstance(self.screen_stack[0], MainScreen):
            self.screen_stack[0].tick()

    def _apply(self, event: object) -> None:
        self.state.apply(event)
        self.main.sync()

    def on_run_began(self, message: RunBegan) -> None:
        self._apply(message.event)

    def on_check_began(self, message: CheckBegan) -> None:
        self._apply(message.event)

    def on_check_ended(self, message: CheckEnded) -> None:
        self._apply(message.event)

    def on_run_ended(self, message: RunEnded) -> None:
        self._apply(message.event)

    def on_run_broke(self, message: RunBroke) -> None:
        self.state.failure = message.error
        self.main.sync()
        self.notify(message.error.strip().splitlines()[-1], title="commdoctor hit a bug", severity="error",
                    timeout=30)

    # -- what the screens ask ---------------------------------------------------------------

    def bases(self) -> list[str]:
        out = [self.cwd]
        if self.source:
            out.append(os.path.dirname(os.path.abspath(self.source)))
        out += [os.path.dirname(p) for p in self.logs]
        return list(dict.fromkeys(out))

    def log_files(self) -> dict[str, dict[int, Finding]]:
        files: dict[str, dict[int, Finding]] = {p: {} for p in self.logs if os.path.isfile(p)}
        for p, lines in cited_lines(self.state.findings(), self.bases()).items():
            files.setdefault(os.path.abspath(p), {}).update(lines)
        return files

    def open_finding(self, f: Finding) -> None:
        self.push_screen(FindingScreen(f, self.g, self.bases()))

    def open_check(self, r: CheckResult) -> None:
        self.push_screen(CheckScreen(r, self.g))

    def open_rank(self, r: RankRow, cited: bool) -> None:
        self.push_screen(StackScreen(r, self.g, cited))

    async def _to_main(self) -> None:
        # Await each pop: the main screen restores its old focus on resume, which would
        # otherwise switch the tabs back after we chose one.
        while len(self.screen_stack) > 1:
            await self.pop_screen()

    async def on_jump_to_evidence(self, message: JumpToEvidence) -> None:
        # Choose the tab and focus the log view *before* leaving the detail screen: the main
        # screen restores its remembered focus when it resumes, and a focus inside another tab
        # would switch the tabs back. Remembering the log view makes every focus event agree.
        main = self.main
        main.show_tab("log")
        pane = main.log_pane()
        ok = pane.jump(message.path, message.line)
        await self._to_main()
        if ok:
            pane.view.goto_line(message.line)  # centre again now that the view has its size
            pane.view.focus()
            self.notify(f"{os.path.basename(message.path)}:{message.line + 1}", title="evidence")

    # -- actions -------------------------------------------------------------------------------

    async def action_tab(self, tab: str) -> None:
        await self._to_main()
        if not self.main.show_tab(tab):
            what = {"ranks": "No rank data in this report (it comes from the hang diagnosis).",
                    "log": "No log file: pass --log FILE, or open a report whose evidence cites files."}[tab]
            self.notify(what, severity="warning")

    def action_save_report(self) -> None:
        if self.log_only:
            self.notify("No report is open (only logs); 'commdoctor logs FILE' makes one.", severity="warning")
            return
        if self._saving:
            self.notify("Already writing the support report.", severity="warning")
            return
        self._saving = True
        report = self.state.partial_report()
        # Excerpts of every log the user has open or a finding cites go in, around the cited lines.
        logs = list(self.log_files())
        source = self.source or (self.logs[0] if self.logs else None)
        # A thread: excerpting big logs must not freeze the screen (the reads are bounded anyway).
        threading.Thread(target=self._save, args=(report, source, logs), name="commdoctor-save", daemon=True).start()
        self.notify("Writing the support report…", title="support report", timeout=5)

    def _save(self, report: Report, source: str | None, logs: list[str]) -> None:
        try:
            paths, msg = export_mod.export(report, source, self.cwd, logs=logs)
        except OSError as e:
            self.call_from_thread(self._saved, [], f"Could not write the report: {e}", "error")
            return
        self.call_from_thread(self._saved, paths, msg, "information")

    def _saved(self, paths: list[str], msg: str, severity: str) -> None:
        self._saving = False
        self.exported += paths
        self.notify(msg, title="support report", severity=severity, timeout=15)  # type: ignore[arg-type]

    async def action_quit(self) -> None:
        self._stop.set()
        self.exit(0)

    def final_report(self) -> Report:
        return self.state.partial_report()
