"""Documentation that is generated or promised stays true."""

from __future__ import annotations

import re

from commdoctor.render.docsgen import pages
from tests.conftest import REPO


def test_findings_pages_match_the_checks() -> None:
    want = pages()
    target = REPO / "docs" / "findings"
    have = {p.name: p.read_text(encoding="utf-8") for p in target.glob("*.md")}
    stale = sorted(n for n in want if have.get(n) != want[n])
    extra = sorted(set(have) - set(want))
    assert not stale and not extra, (
        f"docs/findings/ drifted from the checks (stale: {stale[:5]}, extra: {extra[:5]}); "
        "run: python -m commdoctor.render.docsgen")


def readme_commands() -> list[str]:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```(?:sh|bash|console)?\n(.*?)```", text, re.S)
    return [b.strip() for b in blocks[:2]]


def test_readme_starts_with_the_two_setup_commands_and_ci_runs_the_second() -> None:
    install, tests = readme_commands()
    assert install.count("\n") == 0 and tests.count("\n") == 0, "each setup step is one command line"
    assert install.startswith("pip install torch==2.13.0") and install.endswith("commdoctor run")
    assert "pytest" in tests and tests.startswith("pip install torch==2.13.0")
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    assert tests in ci, ".ci/run must run the README's test command verbatim"


def test_json_schema_doc_names_the_current_version() -> None:
    from commdoctor.core.model import SCHEMA_VERSION

    text = (REPO / "docs" / "json-schema.md").read_text(encoding="utf-8")
    assert f"schema_version` is `{SCHEMA_VERSION}`" in text
