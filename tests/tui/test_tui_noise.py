"""The TUI, live, leaves out the checks a run was not given input for (issue 20, "Noise").

A real ``logs`` pipeline (every built-in check of that mode, on a real log
capture) drives the app: the hooks checks are listed while pending, then go
away with their empty stage headings once they skip for want of records.
"""

from __future__ import annotations

import asyncio
from typing import Any

from tuikit import REPO, screen_text


def test_live_logs_run_drops_the_checks_it_was_not_given_input_for(monkeypatch: Any) -> None:
    import commdoctor.checks  # noqa: F401 - pipeline must not be the first import
    from commdoctor.checks import BUILTIN_CHECKS
    from commdoctor.loaders.logs import load_logs
    from commdoctor.core.model import Severity
    from commdoctor.pipeline.run import Context, Facts, Options, plan, run_checks
    from commdoctor.tui.app import CommDoctorApp
    from commdoctor.tui.widgets.checks import ChecksTable

    logs = str(REPO / "fixtures" / "logs" / "nccl-peer-died")
    opts = Options(mode="logs", fail_on=Severity.ERROR, inputs=(logs,))
    monkeypatch.setenv("COMMDOCTOR_PROGRESS_DELAY_S", "0")

    def load(c: Any) -> Any:  # as `commdoctor logs` reads them: with a meter
        from commdoctor.render.progress import progress

        with progress(None, "reading logs (bytes)") as meter:
            return load_logs(c.options.inputs, on_bytes=meter.advance)

    ctx = Context(options=opts, facts=Facts({"log_model": load}))
    checks = plan([c() for c in BUILTIN_CHECKS], opts)
    assert {"hooks.mismatch", "hooks.records", "hooks.backend", "hooks.progress"} <= {c.name for c in checks}
    app = CommDoctorApp(events=run_checks(checks, ctx, ["commdoctor", "logs", logs]), heading="logs")
    shown: list[str | None] = []
    real = app._meter  # noqa: SLF001 - record what the verdict bar was given

    def record(text: str | None) -> None:
        shown.append(text)
        real(text)

    monkeypatch.setattr(app, "_meter", record)

    async def main() -> None:
        async with app.run_test(size=(120, 30)) as pilot:
            end = asyncio.get_running_loop().time() + 60
            while not app.state.done:
                assert asyncio.get_running_loop().time() < end, "the run did not finish"
                await pilot.pause(0.05)
            await pilot.press("1")
            await pilot.pause(0.3)
            text = screen_text(app)
            table = app.main.query_one(ChecksTable)
            keys = [str(k.value) for k in table.rows]
            assert keys == ["stage:logs", "logs.inputs", "logs.diagnose"], keys
            assert "Checks (2)" in text and "2 checks: 1 passed, 1 failed" in text
            assert "commdoctor.hooks" not in text and "collectives" not in text
        # The scan's meter went to the verdict bar (not to stderr, under the screen), and was taken away.
        assert any(t and t.startswith("reading logs (bytes): ") for t in shown), shown
        assert shown[-1] is None and app.meter_text is None

    asyncio.run(asyncio.wait_for(main(), timeout=120))
