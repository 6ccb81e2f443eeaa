"""The TUI on a real multi-node report: a Nodes tab lists every node; findings name their hosts."""

from __future__ import annotations

import asyncio
from typing import Any

from tests.conftest import REPO
from tuikit import make_app, screen_text

REPORT = REPO / "fixtures" / "multinode" / "faults-3-nodes.json"


def test_nodes_tab_lists_every_node_and_findings_name_hosts() -> None:
    app = make_app(path=REPORT)

    async def main() -> None:
        async with app.run_test(size=(120, 34)) as pilot:
            await pilot.pause()
            tabs = app.main.query_one("#tabs")
            assert str(tabs.get_tab("nodes").label) == "Nodes (3)"
            codes = [f.code for f in app.main.query_one("#findings-table").findings]
            assert {"MN041", "MN032", "MN031", "NET010"} <= set(codes)
            await app.action_tab("nodes")
            await pilot.pause()
            text = screen_text(app)
            for host in ("cdmfa", "cdmfb", "cdmfc"):
                assert host in text
            assert "10.203.6.2 (cdm0)" in text and "1400" in text

    asyncio.run(asyncio.wait_for(main(), timeout=120))


def test_single_host_report_has_no_nodes_tab(canned: Any) -> None:
    app = make_app(path=canned("run-mixed"))

    async def main() -> None:
        async with app.run_test(size=(100, 30)) as pilot:
            await pilot.pause()
            assert "nodes" in app.main.hidden

    asyncio.run(asyncio.wait_for(main(), timeout=120))
