"""The rank grid: one row per host, one cell per rank, coloured and lettered by state.

The letter keeps the grid readable without colour (NO_COLOR, a monochrome
terminal, a screenshot in a ticket); a ``*`` marks ranks a finding names.
"""

from __future__ import annotations

from collections import Counter

from rich.text import Text
from textual.message import Message
from textual.widgets import DataTable

from commdoctor.render.theme import rank_state
from commdoctor.tui.state import RankRow, hosts_of


def legend(ranks: list[RankRow], cited: set[int], code: str | None = None) -> Text:
    """State counts, most common first, naming the ranks of the rare states (the odd ones out)."""
    counts = Counter(r.state for r in ranks)
    t = Text(no_wrap=False)
    t.append(f"{len(ranks)} ranks on {len(hosts_of(ranks))} host{'s' if len(hosts_of(ranks)) != 1 else ''}: ")
    for i, (state, n) in enumerate(counts.most_common()):
        st = rank_state(state)
        if i:
            t.append("  ")
        t.append(f"{st.letter} {st.label} {n}", style=st.style)
        if n <= 3 and n < len(ranks):
            t.append(f" (rank{'s' if n > 1 else ''} {','.join(str(r.rank) for r in ranks if r.state == state)})",
                     style=st.style)
    if cited:
        t.append(f"   * named by the verdict{f' ({code})' if code else ''}", style="bold")
    return t


class RankGrid(DataTable):
    class RankChosen(Message):
        def __init__(self, rank: RankRow, opened: bool) -> None:
            super().__init__()
            self.rank = rank
            self.opened = opened  # True: selected (enter/click); False: only highlighted

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, cursor_type="cell", show_row_labels=True)
        self.cells: dict[tuple[int, int], RankRow] = {}
        self._sig: tuple = ()

    def sync(self, ranks: list[RankRow], cited: set[int]) -> None:
        sig = (tuple((r.rank, r.host, r.state, r.op, r.site, len(r.stack)) for r in ranks), tuple(sorted(cited)))
        if sig == self._sig:
            return
        self._sig = sig
        self.clear(columns=True)
        self.cells.clear()
        groups = hosts_of(ranks)
        width = max((len(v) for v in groups.values()), default=0)
        for i in range(width):
            self.add_column(f"{i:>3}", key=f"c{i}")
        for y, (host, rows) in enumerate(groups.items()):
            cells = []
            for x, r in enumerate(rows):
                st = rank_state(r.state)
                mark = "*" if r.rank in cited else " "
                cells.append(Text(f"{r.rank:>4} {st.letter}{mark}", style=st.style + (" underline" if mark == "*" else "")))
                self.cells[(y, x)] = r
            cells += [Text("")] * (width - len(rows))
            # A saved stack carries no host name: say so rather than print an empty or "?" label.
            label = Text(host, style="bold") if host else Text("host ?", style="dim")
            self.add_row(*cells, label=label, key=host or "-")

    def _rank_at(self, row: int, col: int) -> RankRow | None:
        return self.cells.get((row, col))

    def on_data_table_cell_highlighted(self, event: DataTable.CellHighlighted) -> None:
        event.stop()
        r = self._rank_at(event.coordinate.row, event.coordinate.column)
        if r is not None:
            self.post_message(self.RankChosen(r, False))

    def on_data_table_cell_selected(self, event: DataTable.CellSelected) -> None:
        event.stop()
        r = self._rank_at(event.coordinate.row, event.coordinate.column)
        if r is not None:
            self.post_message(self.RankChosen(r, True))

    def select_rank(self, rank: int) -> bool:
        for (y, x), r in self.cells.items():
            if r.rank == rank:
                self.move_cursor(row=y, column=x)
                return True
        return False
