"""The log view: a virtual, scrolling window on a log of any size, with filters and cited lines.

Promise: only the rows on screen are ever read from disk (through
``LogIndex``); indexing and filtering run in background threads and the view
polls them, so the first screen of a multi-gigabyte log appears at once and
the interface never blocks on the file.
"""

from __future__ import annotations

import os
from typing import Any

from rich.style import Style
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.events import Click
from textual.geometry import Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.widgets import Input, Label, Select, Static

from commdoctor.core.model import Finding
from commdoctor.render.theme import STYLE
from commdoctor.tui.logindex import LEVELS, FilterScan, LogFilter, LogIndex, level_of, parse_ranks

_MAX_WIDTH = 4000  # columns the view scrolls to the right at most


class LogView(ScrollView, can_focus=True):
    """Rows are file lines, or the lines that pass the filter. ``cursor`` is a row."""

    BINDINGS = [
        Binding("up", "cursor(-1)", "Up", show=False),
        Binding("down", "cursor(1)", "Down", show=False),
        Binding("pageup", "page(-1)", "Page up", show=False),
        Binding("pagedown", "page(1)", "Page down", show=False),
        Binding("home,g", "edge(0)", "Top", show=False),
        Binding("end,G", "edge(1)", "Bottom", show=False),
        Binding("n", "cited(1)", "Next cited"),
        Binding("N,p", "cited(-1)", "Prev cited", show=False),
    ]

    cursor: reactive[int] = reactive(0, always_update=True)

    class Moved(Message):
        """The cursor moved or the content changed; the pane updates its status line."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.index: LogIndex | None = None
        self.scan: FilterScan | None = None
        self.cited: dict[int, Finding] = {}
        self._width = 40
        self._poll_timer: Any = None

    # -- content -------------------------------------------------------------------

    def show(self, index: LogIndex, cited: dict[int, Finding]) -> None:
        self._cancel_scan()
        self.index, self.cited = index, dict(cited)
        self._width = 40
        index.start_indexing()
        self.cursor = 0
        self.scroll_to(0, 0, animate=False)
        self._resize()
        self._ensure_polling()

    def set_filter(self, filt: LogFilter) -> None:
        if self.index is None:
            return
        keep = self.line_at(self.cursor)
        self._cancel_scan()
        if filt.active:
            self.scan = FilterScan(self.index, filt)
            self.scan.start()
        self.cursor = 0
        self.scroll_to(0, 0, animate=False)
        self._resize()
        self._ensure_polling()
        if keep is not None and not filt.active:
            self.goto_line(keep)

    def _cancel_scan(self) -> None:
        if self.scan is not None:
            self.scan.cancel()
            self.scan = None

    def rows(self) -> int:
        if self.index is None:
            return 0
        if self.scan is not None:
            return len(self.scan.matches)
        return self.index.line_count()

    def line_at(self, row: int) -> int | None:
        """The 0-based file line shown at ``row``."""
        if self.index is None or row < 0:
            return None
        if self.scan is not None:
            m = self.scan.matches
            return m[row] if row < len(m) else None
        return row

    def row_of(self, line: int) -> int | None:
        if self.scan is None:
            return line
        import bisect

        m = self.scan.matches
        i = bisect.bisect_left(m, line)
        return i if i < len(m) and m[i] == line else None

    def goto_line(self, line: int) -> bool:
        """Put the cursor on file line ``line`` (0-based), centred. False if the filter hides it."""
        row = self.row_of(line)
        if row is None:
            return False
        self.cursor = row
        self._center()
        # Right after a tab switch the view may not be laid out yet: centre again once it is.
        self.call_after_refresh(self._center)
        return True

    def _center(self) -> None:
        self.scroll_to(y=max(0, self.cursor - self.size.height // 2), animate=False)

    @property
    def busy(self) -> bool:
        return self.index is not None and (not self.index.complete or (self.scan is not None and not self.scan.done))

    def _ensure_polling(self) -> None:
        if self._poll_timer is None:
            self._poll_timer = self.set_interval(0.2, self._poll)

    def _poll(self) -> None:
        self._resize()
        self.post_message(self.Moved())
        if not self.busy and self._poll_timer is not None:
            self._poll_timer.stop()
            self._poll_timer = None

    def _resize(self) -> None:
        gutter = self._gutter_width()
        self.virtual_size = Size(min(_MAX_WIDTH, self._width + gutter + 2), self.rows())
        self.refresh()

    def _gutter_width(self) -> int:
        total = self.index.line_count() if self.index else 1
        return max(4, len(str(total)))

    # -- drawing ---------------------------------------------------------------------

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        row = scroll_y + y
        width = self.size.width
        base = self.rich_style
        line_no = self.line_at(row)
        if line_no is None or self.index is None:
            if self.index is not None and row == 0:
                msg = "(no line matches the filter yet)" if self.scan is not None else "(empty file)"
                return Strip(Text(msg, style="dim").render(self.app.console)).crop_extend(0, width, base)
            return Strip.blank(width, base)
        if self.scan is not None and row < len(self.scan.offsets):
            got = self.index.read_at(self.scan.offsets[row], 1)  # found by the scan: no index needed
        else:
            got = self.index.read(line_no, 1)
        if not got:
            text = Text(" " * self._gutter_width() + "  …indexing", style="dim")
        else:
            content = got[0]
            if len(content) > self._width:
                self._width = min(_MAX_WIDTH, len(content))
            text = self._line_text(line_no, content, row == self.cursor)
        strip = Strip(text.render(self.app.console), text.cell_len)
        return strip.crop_extend(scroll_x, scroll_x + width, base).apply_offsets(scroll_x, y)

    def _line_text(self, line_no: int, content: str, is_cursor: bool) -> Text:
        text = Text(style=self.rich_style, no_wrap=True, end="")
        cited = line_no in self.cited
        text.append(f"{line_no + 1:>{self._gutter_width()}}", style=STYLE["log.lineno"])
        text.append("▶ " if cited else "  ", style=STYLE["log.cited"] if cited else "")
        lvl = level_of(content.encode("utf-8", "replace"))
        style = {"error": STYLE["log.error"], "warn": STYLE["log.warn"]}.get(lvl, "")
        if cited:
            style = STYLE["log.cited"]
        text.append(content, style=style)
        if is_cursor and self.has_focus:
            text.stylize(Style(reverse=True) if not cited else Style(underline=True, reverse=True))
        elif is_cursor:
            text.stylize(Style(underline=True))
        return text

    # -- keys and mouse -------------------------------------------------------------------

    def watch_cursor(self, old: int, new: int) -> None:
        self.refresh()
        self.post_message(self.Moved())

    def _clamp(self, row: int) -> int:
        return max(0, min(row, max(0, self.rows() - 1)))

    def _follow(self) -> None:
        h = max(1, self.size.height)
        top = self.scroll_offset.y
        if self.cursor < top:
            self.scroll_to(y=self.cursor, animate=False)
        elif self.cursor >= top + h:
            self.scroll_to(y=self.cursor - h + 1, animate=False)

    def action_cursor(self, delta: int) -> None:
        self.cursor = self._clamp(self.cursor + delta)
        self._follow()

    def action_page(self, direction: int) -> None:
        self.cursor = self._clamp(self.cursor + direction * max(1, self.size.height - 1))
        self._follow()

    def action_edge(self, end: int) -> None:
        self.cursor = self._clamp(self.rows() - 1 if end else 0)
        self._follow()

    def action_cited(self, direction: int) -> None:
        if not self.cited:
            self.notify("No line of this file is cited by a finding.", severity="warning")
            return
        here = self.line_at(self.cursor) or 0
        lines = sorted(self.cited)
        cands = [x for x in lines if (x > here if direction > 0 else x < here)]
        target = (cands[0] if direction > 0 else cands[-1]) if cands else (lines[0] if direction > 0 else lines[-1])
        if not self.goto_line(target):
            self.notify(f"Line {target + 1} is hidden by the filter.", severity="warning")

    def on_click(self, event: Click) -> None:
        self.focus()
        row = self.scroll_offset.y + event.y
        if self.line_at(row) is not None:
            self.cursor = row

    def on_focus(self) -> None:
        self.refresh()

    def on_blur(self) -> None:
        self.refresh()

    def on_unmount(self) -> None:
        self._cancel_scan()


class LogPane(Vertical):
    """File choice, filters (rank, host, level), a status line and the view."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.files: dict[str, dict[int, Finding]] = {}  # path -> cited lines
        self.indexes: dict[str, LogIndex] = {}
        self.current: str | None = None
        self.error: str | None = None

    def compose(self) -> ComposeResult:
        with Horizontal(id="log-filters"):
            yield Label("rank ", classes="flabel")
            yield Input(placeholder="3 or 0-7", id="f-rank", compact=True)
            yield Label(" host ", classes="flabel")
            yield Input(placeholder="name", id="f-host", compact=True)
            yield Label(" level ", classes="flabel")
            yield Select([(lv, lv) for lv in LEVELS], value="all", allow_blank=False, id="f-level", compact=True)
        yield Select([], prompt="log file", id="f-file", compact=True)
        yield Static("", id="log-status")
        yield LogView(id="logview")

    @property
    def view(self) -> LogView:
        return self.query_one(LogView)

    def set_files(self, files: dict[str, dict[int, Finding]]) -> None:
        """Known log files and their cited lines (the first one opens when none is open)."""
        for p, c in files.items():
            self.files[os.path.abspath(p)] = dict(c)
        self._refresh_choices()
        if self.current is None and self.files:
            self.open(next(iter(self.files)))
        elif self.current is not None:
            self.view.cited = self.files.get(self.current, {})
            self.view.refresh()

    def _refresh_choices(self) -> None:
        sel = self.query_one("#f-file", Select)
        with sel.prevent(Select.Changed):
            sel.set_options([(os.path.basename(p) + ("" if not c else f"  ({len(c)} cited)"), p)
                             for p, c in self.files.items()])
            if self.current is not None:
                sel.value = self.current
        sel.display = len(self.files) > 1

    def open(self, path: str) -> bool:
        path = os.path.abspath(path)
        if path == self.current:
            return True
        try:
            ix = self.indexes.get(path) or LogIndex(path)
        except OSError as e:
            self.notify(f"Cannot open {path}: {e.strerror or e}", severity="error")
            return False
        self.indexes[path] = ix
        self.files.setdefault(path, {})
        self.current = path
        self._refresh_choices()
        self.view.show(ix, self.files[path])
        self.view.set_filter(self._filter(quiet=True) or LogFilter())
        self._status()
        return True

    def jump(self, path: str, line: int) -> bool:
        if not self.open(path):
            return False
        if not self.view.goto_line(line):
            # The filter hides the cited line: clear it rather than show the wrong place.
            self._clear_filters()
            self.view.set_filter(LogFilter())
            self.view.goto_line(line)
        self.view.focus()
        return True

    def _clear_filters(self) -> None:
        for wid in ("#f-rank", "#f-host"):
            inp = self.query_one(wid, Input)
            with inp.prevent(Input.Changed):
                inp.value = ""
        lvl = self.query_one("#f-level", Select)
        with lvl.prevent(Select.Changed):
            lvl.value = "all"

    def _filter(self, quiet: bool = False) -> LogFilter | None:
        rank_text = self.query_one("#f-rank", Input).value
        host_text = self.query_one("#f-host", Input).value
        try:
            ranks = parse_ranks(rank_text)
        except ValueError as e:
            if not quiet:
                self.notify(str(e), severity="error", title="rank filter")
            return None
        hosts = frozenset(h.strip() for h in host_text.split(",") if h.strip())
        level = self.query_one("#f-level", Select).value
        return LogFilter(ranks=ranks, hosts=hosts, level=str(level) if level in LEVELS else "all")

    def apply_filter(self) -> None:
        filt = self._filter()
        if filt is not None:
            self.view.set_filter(filt)
            self._status()

    @on(Input.Submitted)
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.apply_filter()
        self.view.focus()

    @on(Select.Changed, "#f-level")
    def _level(self, event: Select.Changed) -> None:
        event.stop()
        self.apply_filter()

    @on(Select.Changed, "#f-file")
    def _file(self, event: Select.Changed) -> None:
        event.stop()
        if isinstance(event.value, str):
            self.open(event.value)

    @on(LogView.Moved)
    def _moved(self, event: LogView.Moved) -> None:
        event.stop()
        self._status()

    def _status(self) -> None:
        v = self.view
        if v.index is None:
            self.query_one("#log-status", Static).update(Text("no log file", style="dim"))
            return
        ix = v.index
        total = ix.line_count()
        line = v.line_at(v.cursor)
        t = Text(no_wrap=True, overflow="ellipsis")
        t.append(os.path.basename(ix.path), style="bold")
        t.append(f"  line {line + 1 if line is not None else '-'} of {'' if ix.complete else '~'}{total:,}")
        if not ix.complete:
            t.append(f" (indexing {ix.progress:.0%})", style="dim")
        if v.scan is not None:
            t.append(f"  filter {v.scan.filter.describe()}: {len(v.scan.matches):,} lines", style="bold")
            if not v.scan.done:
                t.append(f" (scanning {v.scan.progress:.0%})", style="dim")
        if v.cited:
            t.append(f"  {len(v.cited)} cited (n/p)", style=STYLE["log.cited"])
        self.query_one("#log-status", Static).update(t)

    def on_unmount(self) -> None:
        for ix in self.indexes.values():
            ix.close()
