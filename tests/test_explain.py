"""`commdoctor explain` reads well for every code: no raw template placeholders."""

from __future__ import annotations

import re

import pytest

from commdoctor.checks import BUILTIN_CHECKS
from commdoctor.checks.wording import BY_CODE, GENERIC, SUFFIXES, placeholders
from commdoctor.cli import main as cli_main
from tests.conftest import run_cli

ALL_CODES = sorted({r.code for c in BUILTIN_CHECKS for r in c.rules})
# A placeholder left in the text: "{name}" or the "<name>" fallback of an unknown name.
BRACE = re.compile(r"\{[a-z_][a-z0-9_]*(![rsa])?(:[^}\s]*)?\}")


def test_every_code_is_covered() -> None:
    assert len(ALL_CODES) > 150


@pytest.mark.parametrize("code", ALL_CODES)
def test_explain_shows_no_placeholder(code: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main(["explain", code]) == 0
    out = capsys.readouterr().out
    head = out.split("\nCheck ", 1)[0]  # the rule's own lines: title, remedy, steps, settings
    assert not BRACE.search(head), f"{code} shows a raw placeholder:\n{head}"
    assert "  " not in head.splitlines()[1].strip(), f"{code}: a missing word left a double space:\n{head}"
    assert " ()" not in head, f"{code}: a missing word left empty brackets:\n{head}"


def test_every_placeholder_has_a_wording() -> None:
    # New placeholder names must get words (wording.GENERIC, BY_CODE or Rule.examples), not the bare fallback.
    missing = []
    for c in BUILTIN_CHECKS:
        for r in c.rules:
            for t in (r.title, r.remedy, *r.steps, *r.env.values()):
                for name in placeholders(t):
                    if not (name in r.examples or name in BY_CODE.get(r.code, {}) or name in GENERIC
                            or name in SUFFIXES):
                        missing.append(f"{r.code}:{name}")
    assert not missing, missing


def test_explain_hang010_as_a_user_runs_it() -> None:
    p = run_cli("explain", "HANG010")
    assert p.returncode == 0, p.stderr
    assert "{odd_word}" not in p.stdout and "{" not in p.stdout.split("\nCheck ")[0]
    assert "rank <N> is elsewhere (in <function>); ranks <ranks> wait for it in <collective>" in p.stdout


def test_findings_pages_show_no_placeholder() -> None:
    from commdoctor.render.docsgen import pages

    bad = [name for name, text in pages().items() if BRACE.search(text.split("## The check")[0])]
    assert not bad, bad
