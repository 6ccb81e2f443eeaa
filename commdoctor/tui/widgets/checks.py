"""The checks table: one row per check, grouped by stage, with live status and elapsed time."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import DataTable

from commdoctor.core.model import Status
from commdoctor.render.theme import STYLE, Glyphs, live_glyph, status_key
from commdoctor.tui.state import PENDING, RUNNING, CheckRow, RunState

COLUMNS = (("status", "status"), ("check", "check"), ("time", "time"), ("result", "result"))
STAGE_ROW = "stage:"  # key prefix of the header row above each stage's checks


class ChecksTable(DataTable):
    """Rows keyed by check name; ``sync`` redraws from the state (cheap: only changed cells)."""

    def __init__(self, glyphs: Glyphs, ascii_only: bool, *, id: str | None = None) -> None:
        super().__init__(id=id, cursor_type="row", zebra_stripes=False)
        self.g = glyphs
        self.ascii_only = ascii_only
        self._shown: dict[str, tuple[Text, ...]] = {}

    def on_mount(self) -> None:
        # Fixed widths where content changes while a run is live, so columns never jump.
        widths = {"status": 13, "time": 7}
        for key, label in COLUMNS:
            self.add_column(label, key=key, width=widths.get(key))

    def cells(self, row: CheckRow, state: RunState) -> tuple[Text, ...]:
        if row.state in (PENDING, RUNNING):
            glyph = Text(live_glyph(row.state, self.ascii_only) + f" {row.state}", style=STYLE[row.state])
        else:
            r = row.result
            key = status_key(Status(row.state), r.worst if r else None)
            label = {"warned": "warning"}.get(key, key.replace("_", " "))
            glyph = Text(f"{getattr(self.g, key)} {label}", style=STYLE[key])
        el = state.elapsed(row)
        time_cell = Text("" if el is None else f"{el:5.1f} s", style="dim" if row.state != RUNNING else STYLE[RUNNING])
        if row.result is not None:
            r = row.result
            res = r.reason if r.status in (Status.SKIPPED, Status.TIMED_OUT, Status.CRASHED) and r.reason else r.summary
            if r.findings:
                codes = ", ".join(dict.fromkeys(f.code for f in r.findings))
                res = f"{codes}: {res}" if res else codes
        else:
            res = ""
        return (glyph, Text(row.title), time_cell, Text(res, style="dim"))

    def sync(self, state: RunState) -> None:
        shown = state.shown_rows()
        for name in [n for n in self._shown if not n.startswith(STAGE_ROW) and n not in shown]:
            self.remove_row(name)  # listed while pending, then skipped for an input not given
            del self._shown[name]
        stages = {STAGE_ROW + r.stage.value for r in shown.values()}
        for key in [k for k in self._shown if k.startswith(STAGE_ROW) and k not in stages]:
            self.remove_row(key)  # a stage heading with nothing under it is not shown
            del self._shown[key]
        for name, row in shown.items():
            cells = self.cells(row, state)
            old = self._shown.get(name)
            if old is None:
                stage_key = STAGE_ROW + row.stage.value
                if stage_key not in self._shown:
                    self.add_row(Text(""), Text(row.stage.value, style=STYLE["stage"]), Text(""), Text(""),
                                 key=stage_key)
                    self._shown[stage_key] = ()
                self.add_row(*cells, key=name)
            elif old != cells:
                for (col, _), new, was in zip(COLUMNS, cells, old):
                    if new != was:
                        self.update_cell(name, col, new, update_width=col in ("check", "result"))
            self._shown[name] = cells
