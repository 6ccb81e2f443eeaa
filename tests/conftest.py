"""Shared test helpers: run the real CLI in a subprocess, check for root and tools."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parent.parent


def run_cli(*args: str, env: dict[str, str] | None = None, timeout: float = 180, prefix: list[str] | None = None,
            input: str | None = None) -> subprocess.CompletedProcess[str]:
    """Run ``commdoctor ARGS`` as a user would, in a fresh interpreter."""
    e = dict(os.environ)
    e.pop("NO_COLOR", None)
    e.update(env or {})
    argv = [*(prefix or []), sys.executable, "-m", "commdoctor", *args]
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=e, input=input, cwd=str(REPO))


def run_json(*args: str, **kw: Any) -> tuple[dict[str, Any], subprocess.CompletedProcess[str]]:
    p = run_cli(*args, "--json", **kw)
    try:
        return json.loads(p.stdout), p
    except ValueError as e:
        raise AssertionError(f"stdout is not JSON ({e}); rc={p.returncode}\nstdout:\n{p.stdout[-3000:]}\nstderr:\n{p.stderr[-3000:]}")


def findings(doc: dict[str, Any], code: str | None = None) -> list[dict[str, Any]]:
    return [f for f in doc["findings"] if code is None or f["code"] == code]


def result(doc: dict[str, Any], check: str) -> dict[str, Any]:
    for r in doc["results"]:
        if r["check"] == check:
            return r
    raise AssertionError(f"no result for {check}: {[r['check'] for r in doc['results']]}")


def have_torch() -> bool:
    try:
        import importlib.util

        return importlib.util.find_spec("torch") is not None
    except Exception:
        return False


needs_torch = pytest.mark.skipif(not have_torch(), reason="torch is not installed (pip install torch==2.13.0)")
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (network namespaces, mounts, capabilities)")


def needs_tool(*tools: str) -> pytest.MarkDecorator:
    missing = [t for t in tools if shutil.which(t) is None]
    return pytest.mark.skipif(bool(missing), reason=f"missing tools: {', '.join(missing)}")
