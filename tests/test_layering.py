"""Layers point one way: checked in fresh interpreters by inspecting sys.modules."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.conftest import REPO

HEAVY = ("torch", "rich", "textual")


def loaded_after(code: str) -> set[str]:
    prog = code + "\nimport sys, json\nprint(json.dumps(sorted(sys.modules)))"
    p = subprocess.run([sys.executable, "-c", prog], capture_output=True, text=True, timeout=60, cwd=str(REPO))
    assert p.returncode == 0, p.stderr
    mods = set(json.loads(p.stdout.strip().splitlines()[-1]))
    return {m.split(".")[0] for m in mods}


@pytest.mark.parametrize("module", ["commdoctor.model", "commdoctor.checks", "commdoctor.pipeline", "commdoctor.records",
                                    "commdoctor.errors", "commdoctor.cli"])
def test_core_modules_import_neither_torch_nor_rich_nor_textual(module: str) -> None:
    top = loaded_after(f"import {module}")
    assert not top & set(HEAVY), f"{module} pulled in {sorted(top & set(HEAVY))}"


@pytest.mark.parametrize("argv", [["--version"], ["checks"], ["explain", "ENV030"], ["checks", "--json"]])
def test_offline_commands_run_without_torch_or_ui_libraries(argv: list[str]) -> None:
    top = loaded_after(
        "import io, contextlib\nfrom commdoctor.cli import main\n"
        f"with contextlib.redirect_stdout(io.StringIO()):\n    rc = main({argv!r})\nassert rc == 0, rc"
    )
    assert "torch" not in top and "textual" not in top


def test_every_rule_template_formats() -> None:
    from commdoctor.checks import BUILTIN_CHECKS
    from commdoctor.checks.base import fill

    for c in BUILTIN_CHECKS:
        doc = c.documentation()
        assert doc.get("What it checks") and doc.get("Why it matters") and doc.get("Known limits"), c.name
        for r in c.rules:
            for t in (r.title, r.remedy, *r.steps, *r.env.values()):
                fill(t, {})  # raises on malformed braces
