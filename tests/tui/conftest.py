"""Fixtures for the TUI tests: canned reports copied to tmp, a stable version, the snapshot extension.

The canned reports (fixtures/tui/*.json) are made by fixtures/tui/make.py with
the real model classes; see fixtures/tui/PROVENANCE.md.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from tuikit import FIXTURES

try:  # pytest-textual-snapshot 1.0.0 sets the old attribute name; syrupy 7 reads this one.
    import pytest_textual_snapshot

    pytest_textual_snapshot.SVGImageExtension.file_extension = "svg"
except ImportError:  # pragma: no cover - the dev extra installs it
    @pytest.fixture
    def snap_compare() -> None:
        pytest.skip("pytest-textual-snapshot is not installed (pip install -e '.[dev]')")


@pytest.fixture
def canned(tmp_path: Path):  # type: ignore[no-untyped-def]
    """Copy the canned reports (and their logs) into tmp_path, so exports land there; NAME -> path."""

    def copy(name: str) -> Path:
        dst = tmp_path / "canned"
        if not dst.exists():
            shutil.copytree(FIXTURES, dst, ignore=shutil.ignore_patterns("*.py", "*.md", "__pycache__"))
        return dst / f"{name}.json"

    return copy


@pytest.fixture
def stable_version(monkeypatch: pytest.MonkeyPatch) -> None:
    """Snapshots must not change with every release: the verdict bar shows this version instead."""
    import commdoctor.tui.screens.main as main

    monkeypatch.setattr(main, "__version__", "X.Y.Z")
