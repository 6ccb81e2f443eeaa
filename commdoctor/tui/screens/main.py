"""The main screen: verdict bar, then tabs for checks, findings, ranks and the log, then the keys.

Promise: draws ``RunState`` only; ``sync`` can be called after every event
and touches only what changed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Group
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Static, TabbedContent, TabPane

from commdoctor import __version__
from commdoctor.render.theme import STYLE
from commdoctor.render.views import finding_view, nodes_view, rank_view, summary_view
from commdoctor.tui.state import RunState, cited_ranks
from commdoctor.tui.widgets.checks import STAGE_ROW, ChecksTable
from commdoctor.tui.widgets.findings import FindingsTable
from commdoctor.tui.widgets.logview import LogPane
from commdoctor.tui.widgets.ranks import RankGrid, legend

if TYPE_CHECKING:
    from commdoctor.tui.host import ScreenHost

TABS = ("checks", "findings", "ranks", "log")


class Tabs(TabbedContent):
    """Tabs that change only when asked (a key, a click on a tab), never because focus moved.

    textual's TabbedContent switches to any pane that receives focus. A screen that resumes
    restores its old focus late, which then fought the tab just chosen (jumping to evidence
    flipped back to the findings, sometimes back and forth). Here focus follows the tab, not
    the other way round.
    """

    def _on_tab_pane_focused(self, event: TabPane.Focused) -> None:
        event.prevent_default()
        event.stop()


class MainScreen(Screen):
    app: ScreenHost

    # Focus is given by tab (focus_tab), never to "the first focusable widget": that one sits in
    # the Checks tab, and focusing it would switch to that tab.
    AUTO_FOCUS = None

    BINDINGS = [
        Binding("1", "app.tab('checks')", "Checks"),
        Binding("2", "app.tab('findings')", "Findings"),
        Binding("3", "app.tab('ranks')", "Ranks"),
        Binding("4", "app.tab('log')", "Log"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.hidden: set[str] = set()

    def compose(self) -> ComposeResult:
        app = self.app
        yield Static("", id="verdict")
        with Tabs(initial=app.initial_tab, id="tabs"):
            with TabPane("Checks", id="checks"):
                yield ChecksTable(app.g, app.ascii_only, id="checks-table")
            with TabPane("Findings", id="findings"):
                with Vertical(id="findings-box"):
                    yield FindingsTable(app.g, id="findings-table")
                    with VerticalScroll(id="finding-preview"):
                        yield Static("", id="finding-preview-text")
            with TabPane("Ranks", id="ranks"):
                with Vertical(id="ranks-box"):
                    yield Static("", id="rank-legend")
                    yield RankGrid(id="rank-grid")
                    with VerticalScroll(id="rank-detail"):
                        yield Static(Text("Move over a rank to see its stack; enter opens it.", style="dim"),
                                     id="rank-detail-text")
            with TabPane("Log", id="log"):
                yield LogPane(id="log-pane")
            with TabPane("Nodes", id="nodes"):  # a multi-node run only (hidden otherwise)
                with VerticalScroll(id="nodes-box"):
                    yield Static("", id="nodes-text")
        yield Footer()

    def on_mount(self) -> None:
        self.sync()
        self.focus_tab(self.app.initial_tab)
        self.app.screen_ready()

    # -- redraw --------------------------------------------------------------------------

    def sync(self) -> None:
        app = self.app
        st: RunState = app.state
        self.query_one("#verdict", Static).update(self._verdict(st))
        self.query_one(ChecksTable).sync(st)
        findings = st.findings()
        table = self.query_one(FindingsTable)
        if table.sync(findings):
            self._preview()
        tabs = self.query_one(TabbedContent)
        n = len(findings)
        tabs.get_tab("checks").label = f"Checks ({len(st.shown_rows())})"
        tabs.get_tab("findings").label = f"Findings ({n})"
        ranks = st.ranks()
        if ranks:
            self._show("ranks", True)
            tabs.get_tab("ranks").label = f"Ranks ({len(ranks)})"
            verdict = st.verdict()
            cited = cited_ranks(verdict)
            self.query_one(RankGrid).sync(ranks, cited)
            self.query_one("#rank-legend", Static).update(legend(ranks, cited, verdict.code if verdict else None))
        else:
            self._show("ranks", False)
        rep = st.report
        if rep is not None and rep.nodes:
            self._show("nodes", True)
            tabs.get_tab("nodes").label = f"Nodes ({len(rep.nodes)})"
            self.query_one("#nodes-text", Static).update(nodes_view(rep, app.g))
        else:
            self._show("nodes", False)
        files = app.log_files()
        pane = self.query_one(LogPane)
        if files:
            self._show("log", True)
            if files != app.shown_files:
                app.shown_files = files
                pane.set_files(files)
        else:
            self._show("log", False)

    def _verdict(self, st: RunState) -> Group:
        app = self.app
        head = Text(no_wrap=True, overflow="ellipsis")
        if not app.heading.startswith("commdoctor"):
            head.append(f"commdoctor {__version__} ", style="bold")
        head.append(app.heading, style="dim")
        if st.failure:
            return Group(head, Text("The checks stopped: commdoctor hit a bug (the traceback is printed on exit; "
                                    "please report it).", style=STYLE["failed"]),
                         Text(st.failure.strip().splitlines()[-1], style="dim"))
        if app.log_only:
            return Group(head, Text("No report open: viewing logs only ('commdoctor logs FILE' diagnoses them).",
                                    style="dim"))
        if st.report is not None:
            elapsed = None if app.saved else (st.finished_at or st.started) - st.started
            summary = summary_view(st.report, app.g, elapsed)
            if isinstance(summary, Text):  # one line each: the bar must not eat a small terminal
                summary.no_wrap, summary.overflow = True, "ellipsis"
            return Group(head, summary)
        running = st.running()
        done = sum(1 for r in st.rows.values() if r.result is not None)
        line = Text()
        if running is not None:
            line.append(f"{app.g.running} running: ", style=STYLE["running"])
            line.append(running.title)
            el = st.elapsed(running)
            if el is not None:
                line.append(f" ({el:.0f} s)", style="dim")
            if app.meter_text:
                line.append(f"  {app.meter_text}", style="dim")
        else:
            line.append("starting…" if not st.rows else "waiting for the next check…", style="dim")
        line.append(f"   {done}/{len(st.rows)} checks done", style="dim")
        return Group(head, line)

    def tick(self) -> None:
        """Refresh elapsed times while a check runs."""
        st = self.app.state
        if st.running() is not None:
            self.query_one(ChecksTable).sync(st)
            self.query_one("#verdict", Static).update(self._verdict(st))

    # -- findings ---------------------------------------------------------------------------

    def _preview(self) -> None:
        f = self.query_one(FindingsTable).current()
        wide = self.has_class("-wide")  # room for every evidence line and the steps
        body = finding_view(f, self.app.g, verbose=int(wide), indent="") if f else Text(
            "No findings." if self.app.state.done else "No findings yet.", style="dim")
        hint = Text("enter: evidence and remedy", style="dim") if f else Text("")
        self.query_one("#finding-preview-text", Static).update(Group(body, hint))

    @on(DataTable.RowHighlighted, "#findings-table")
    def _finding_highlighted(self, event: DataTable.RowHighlighted) -> None:
        self._preview()

    @on(DataTable.RowSelected, "#findings-table")
    def _finding_selected(self, event: DataTable.RowSelected) -> None:
        f = self.query_one(FindingsTable).current()
        if f is not None:
            self.app.open_finding(f)

    @on(DataTable.RowSelected, "#checks-table")
    def _check_selected(self, event: DataTable.RowSelected) -> None:
        name = str(event.row_key.value)
        row = self.app.state.rows.get(name)
        if name.startswith(STAGE_ROW):
            return
        if row is None or row.result is None:
            self.notify("This check has not finished yet.")
            return
        self.app.open_check(row.result)

    # -- ranks ------------------------------------------------------------------------------

    @on(RankGrid.RankChosen)
    def _rank(self, event: RankGrid.RankChosen) -> None:
        cited = event.rank.rank in cited_ranks(self.app.state.verdict())
        if event.opened:
            self.app.open_rank(event.rank, cited)
        else:
            self.query_one("#rank-detail-text", Static).update(rank_view(event.rank.as_dict(), self.app.g, cited))

    # -- tabs ---------------------------------------------------------------------------------

    def _show(self, tab: str, shown: bool) -> None:
        if shown == (tab not in self.hidden):
            return
        tabs = self.query_one(TabbedContent)
        if shown:
            self.hidden.discard(tab)
            tabs.show_tab(tab)
        else:
            self.hidden.add(tab)
            tabs.hide_tab(tab)

    def show_tab(self, tab: str) -> bool:
        if tab in self.hidden:
            return False
        tabs = self.query_one(TabbedContent)
        tabs.active = tab
        self.focus_tab(tab)
        return True

    def focus_tab(self, tab: str) -> None:
        target = {"checks": "#checks-table", "findings": "#findings-table", "ranks": "#rank-grid",
                  "log": "#logview", "nodes": "#nodes-box"}[tab]
        self.query_one(target).focus()

    @on(TabbedContent.TabActivated)
    def _activated(self, event: TabbedContent.TabActivated) -> None:
        if event.pane.id in TABS:
            self.call_after_refresh(self._focus_if_active, event.pane.id)

    def _focus_if_active(self, tab: str) -> None:
        if self.query_one(TabbedContent).active == tab:  # a later choice wins over a stale one
            self.focus_tab(tab)

    def log_pane(self) -> LogPane:
        return self.query_one(LogPane)
