"""Detail screens: one check, one finding (evidence and remedy), one rank's stack.

Promise: each draws with the shared view functions (commdoctor.render.views),
so the TUI shows exactly what the console shows with -vv, plus what only an
interactive screen can offer: jumping to evidence and copying a remedy.
"""

from __future__ import annotations

from typing import Iterable

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Label, OptionList, Static, TextArea
from textual.widgets.option_list import Option

from commdoctor.core.model import CheckResult, Finding
from commdoctor.render.theme import Glyphs
from commdoctor.render.views import (evidence_view, finding_detail_view, rank_view, remedy_shell, remedy_view,
                                     result_view)
from commdoctor.tui.messages import JumpToEvidence
from commdoctor.tui.state import RankRow, resolve_source


class CheckScreen(Screen):
    """One check in full: status, summary, details, reason and the traceback of a crash."""

    BINDINGS = [Binding("escape", "app.pop_screen", "Back")]

    def __init__(self, result: CheckResult, glyphs: Glyphs) -> None:
        super().__init__()
        self.result = result
        self.g = glyphs

    def compose(self) -> ComposeResult:
        r = self.result
        yield Static(Text(f" {r.check} ({r.stage.value}) · {r.duration_s:.2f} s", style="bold"), classes="title-bar")
        with VerticalScroll(id="check-body"):
            yield Static(result_view(r, self.g, verbose=2), id="check-view")
        yield Footer()


class FindingScreen(Screen):
    """A finding: what, where (evidence, each jumping to its file and line), and what to do."""

    BINDINGS = [
        Binding("escape", "app.pop_screen", "Back"),
        Binding("e", "evidence", "Evidence"),
        Binding("y", "copy", "Copy remedy"),
    ]

    def __init__(self, finding: Finding, glyphs: Glyphs, bases: Iterable[str]) -> None:
        super().__init__()
        self.finding = finding
        self.g = glyphs
        self.bases = list(bases)
        self.files = [resolve_source(e.source, self.bases) for e in finding.evidence]

    def compose(self) -> ComposeResult:
        f = self.finding
        yield Static(Text(f" {f.code} {f.symbol}", style="bold"), classes="title-bar")
        with VerticalScroll(id="finding-body"):
            yield Static(finding_detail_view(f, self.g), id="finding-head")
            n_files = sum(1 for p in self.files if p)
            hint = f" (enter or e opens the log at the line)" if n_files else ""
            yield Label(f"Evidence{hint}", classes="section")
            if f.evidence:
                opts = []
                for i, (e, path) in enumerate(zip(f.evidence, self.files)):
                    t = evidence_view(e)
                    if path is None and e.line:
                        t.append("  (file not found here)", style="dim")
                    opts.append(Option(t, id=f"ev{i}"))
                yield OptionList(*opts, id="evidence")
            else:
                yield Static(Text("  none recorded", style="dim"))
            yield Label("Remedy", classes="section")
            if f.remedy:
                yield Static(remedy_view(f.remedy, self.g), id="remedy")
                yield Label("To copy (y copies it; or select with the mouse)", classes="section")
                text = remedy_shell(f.remedy)
                area = TextArea(text, read_only=True, id="copyblock", soft_wrap=True, show_line_numbers=False)
                area.styles.height = min(12, text.count("\n") + 2)
                yield area
            else:
                yield Static(Text("  none recorded", style="dim"))
        yield Footer()

    def action_copy(self) -> None:
        if not self.finding.remedy:
            self.notify("This finding has no remedy to copy.", severity="warning")
            return
        text = remedy_shell(self.finding.remedy)
        self.app.copy_to_clipboard(text)
        n = len(self.finding.remedy.env)
        what = f"{n} setting{'s' if n != 1 else ''}" if n else "the remedy steps"
        self.notify(f"Copied {what} to the clipboard (also shown in the block below).", title="copied")

    def action_evidence(self) -> None:
        ol = self.query("#evidence")
        idx = ol.first(OptionList).highlighted if ol else None
        order = ([idx] if idx is not None else []) + list(range(len(self.files)))
        for i in order:
            if self._jump(i):
                return
        self.notify("No evidence of this finding is a file on this machine.", severity="warning")

    @on(OptionList.OptionSelected, "#evidence")
    def _selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        if not self._jump(event.option_index):
            e = self.finding.evidence[event.option_index]
            self.notify(f"{e.source} is not a file on this machine.", severity="warning")

    def _jump(self, i: int) -> bool:
        if i is None or not (0 <= i < len(self.files)) or self.files[i] is None:
            return False
        e = self.finding.evidence[i]
        self.app.post_message(JumpToEvidence(self.files[i] or "", max(0, (e.line or 1) - 1)))
        return True


class StackScreen(Screen):
    """One rank: state, collective, call site and the whole stack."""

    BINDINGS = [Binding("escape", "app.pop_screen", "Back")]

    def __init__(self, rank: RankRow, glyphs: Glyphs, cited: bool) -> None:
        super().__init__()
        self.rank = rank
        self.g = glyphs
        self.cited = cited

    def compose(self) -> ComposeResult:
        r = self.rank
        where = f" on {r.host}" if r.host else ""
        yield Static(Text(f" rank {r.rank}{where}", style="bold"), classes="title-bar")
        with VerticalScroll(id="stack-body"):
            yield Static(rank_view(r.as_dict(), self.g, self.cited), id="stack-view")
        yield Footer()
