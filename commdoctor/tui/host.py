"""The app as its screens see it: what a screen may read and ask of the app that shows it.

Promise: the screens type ``self.app`` with ``ScreenHost`` and never import the
app (commdoctor.tui.app), which imports the screens to push them; the app
subclasses it and fills it in. Declared here once, so the two stay one-way.
"""

from __future__ import annotations

from textual.app import App

from commdoctor.core.model import CheckResult, Finding
from commdoctor.render.theme import Glyphs
from commdoctor.tui.state import RankRow, RunState


class ScreenHost(App[int]):
    """Attributes and actions the screens use; ``CommDoctorApp`` sets and implements every one."""

    state: RunState
    g: Glyphs
    heading: str
    ascii_only: bool
    saved: bool
    log_only: bool
    initial_tab: str
    shown_files: dict[str, dict[int, Finding]] | None
    meter_text: str | None  # a long check's progress meter, shown in the verdict bar

    def screen_ready(self) -> None:
        raise NotImplementedError

    def log_files(self) -> dict[str, dict[int, Finding]]:
        raise NotImplementedError

    def open_finding(self, f: Finding) -> None:
        raise NotImplementedError

    def open_check(self, r: CheckResult) -> None:
        raise NotImplementedError

    def open_rank(self, r: RankRow, cited: bool) -> None:
        raise NotImplementedError
