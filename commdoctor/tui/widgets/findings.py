"""The findings table: most severe first, code and title, the ranks and hosts they concern."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import DataTable

from commdoctor.core.model import Finding
from commdoctor.render.theme import STYLE, Glyphs, severity_glyph


class FindingsTable(DataTable):
    def __init__(self, glyphs: Glyphs, *, id: str | None = None) -> None:
        super().__init__(id=id, cursor_type="row")
        self.g = glyphs
        self.findings: list[Finding] = []

    def on_mount(self) -> None:
        self.add_column("severity", key="sev")
        self.add_column("code", key="code")
        self.add_column("title", key="title")
        self.add_column("where", key="where")

    def sync(self, findings: list[Finding]) -> bool:
        """Show ``findings``; True when the list changed. The cursor stays on the same finding."""
        if [f.to_dict() for f in findings] == [f.to_dict() for f in self.findings]:
            return False
        keep = self.current()
        self.clear()
        self.findings = list(findings)
        for i, f in enumerate(self.findings):
            where = []
            if f.ranks:
                where.append(f"rank{'s' if len(f.ranks) > 1 else ''} {','.join(map(str, f.ranks))}")
            if f.hosts:
                where.append(",".join(f.hosts))
            self.add_row(
                Text(f"{severity_glyph(self.g, f.severity)} {f.severity.value}", style=STYLE[f.severity]),
                Text(f.code, style=STYLE["code"]),
                Text(f.title),
                Text(" ".join(where), style="dim"),
                key=str(i),
            )
        if keep is not None and keep in self.findings:
            self.move_cursor(row=self.findings.index(keep))
        return True

    def current(self) -> Finding | None:
        if not self.findings or self.cursor_row is None or not (0 <= self.cursor_row < len(self.findings)):
            return None
        return self.findings[self.cursor_row]
