"""Helpers shared by the TUI tests (imported as ``tuikit``: tests/tui is on sys.path under pytest)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Awaitable, Callable

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "fixtures" / "tui"


def fixture_report(name: str) -> Any:
    """A canned report (fixtures/tui/NAME.json, made by fixtures/tui/make.py; see PROVENANCE.md)."""
    from commdoctor.core.model import Report

    return Report.from_dict(json.loads((FIXTURES / f"{name}.json").read_text()))


def make_app(name: str | None = None, path: Path | None = None, **kw: Any):  # type: ignore[no-untyped-def]
    """The TUI on a canned report (by name) or on a report file (by path)."""
    from commdoctor.tui.app import CommDoctorApp

    if path is None and name is not None:
        path = FIXTURES / f"{name}.json"
    report = None
    if path is not None:
        from commdoctor.commands.view import load

        report = load(str(path))
    kw.setdefault("heading", f"view {path.name}" if path else "view")
    kw.setdefault("cwd", str(path.parent) if path else os.getcwd())
    return CommDoctorApp(report=report, source=str(path) if path else None, **kw)


def screen_text(app: Any) -> str:
    """What the terminal shows, as plain text (rows joined by newlines)."""
    strips = app.screen._compositor.render_strips()  # noqa: SLF001 - the composed cells of the screen
    return "\n".join("".join(seg.text for seg in strip).rstrip() for strip in strips)


def run_cli(*args: str, env: dict[str, str] | None = None, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """``commdoctor ARGS`` in a fresh interpreter with stdout a pipe (no terminal), as a script runs it."""
    e = dict(os.environ)
    e.pop("NO_COLOR", None)
    e.update(env or {})
    return subprocess.run([sys.executable, "-m", "commdoctor", *args], capture_output=True, text=True,
                          timeout=timeout, env=e, cwd=str(REPO), stdin=subprocess.DEVNULL)


def showing(app: Any, screen_cls: type) -> bool:
    """The active screen is a ``screen_cls`` and is mounted (keys sent before that can be lost)."""
    scr = app.screen
    return isinstance(scr, screen_cls) and scr.is_mounted and bool(scr.query("Footer"))


def drive(app: Any, script: Callable[[Any], Awaitable[None]], size: tuple[int, int] = (100, 30)) -> None:
    """Run ``script(pilot)`` against ``app`` in a headless terminal of ``size`` (bounded: 120 s)."""
    async def main() -> None:
        async with app.run_test(size=size) as pilot:
            await pilot.pause()
            await script(pilot)

    asyncio.run(asyncio.wait_for(main(), timeout=120))


async def until(pilot: Any, cond: Callable[[], bool], timeout: float = 30.0, what: str = "condition") -> None:
    """Wait (bounded) for ``cond``, letting the app process messages meanwhile."""
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while not cond():
        if loop.time() > end:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        await pilot.pause(0.05)
