"""The README's test command on a fresh machine: tests that need a system tool skip with the reason, never error.

CI installs iptables, tmux and chromium (the README's optional line) so that the tests using them run;
a fresh machine has none of them. This runs those tests again, in a child pytest whose PATH holds
every command of this one except those three, and asserts that each skips, naming the missing tool.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO

HIDDEN = ("iptables", "tmux", "chromium", "chromium-browser", "google-chrome")

# Every test that uses one of the hidden tools.
USERS = [
    "tests/integration/test_multinode.py::test_firewall_that_lets_only_the_master_port_through",
    "tests/integration/test_multinode.py::test_one_node_with_another_mtu",
    "tests/tui/test_tui_tmux.py",
    "tests/test_report_cli.py::test_html_renders_in_headless_chromium",
]


def path_without(tools: tuple[str, ...], into: Path) -> str:
    """A one-folder PATH with a link to every command on this PATH but TOOLS (first one found wins)."""
    into.mkdir()
    for d in os.environ.get("PATH", "").split(os.pathsep):
        if not d or not os.path.isdir(d):
            continue
        for name in sorted(os.listdir(d)):
            src = os.path.join(d, name)
            if name in tools or (into / name).exists() or not (os.path.isfile(src) and os.access(src, os.X_OK)):
                continue
            (into / name).symlink_to(src)
    return str(into)


# Were a test of test_multinode not to skip, it would build that module's namespaces: run beside it, never with it.
@pytest.mark.xdist_group("netns:tests/integration/test_multinode.py")
@pytest.mark.netns
def test_tests_needing_a_missing_tool_skip_with_the_reason(tmp_path: Path) -> None:
    env = {**os.environ, "PATH": path_without(HIDDEN, tmp_path / "bin"), "PYTHONPATH": str(REPO)}
    p = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rs", "-n0", "-p", "no:cacheprovider", *USERS],
                       capture_output=True, text=True, timeout=240, cwd=str(REPO), env=env)
    out = p.stdout + p.stderr
    # pytest's closing line (a plugin may print warnings after it)
    summary = next((ln for ln in reversed(out.splitlines()) if re.search(r"\bin [\d.]+s\b", ln)), out[-300:])
    assert p.returncode == 0, out[-4000:]
    assert re.search(r"\b\d+ skipped\b", summary) and not re.search(r"passed|failed|error", summary), summary
    reasons = [ln for ln in out.splitlines() if ln.startswith("SKIPPED")]
    assert reasons and all(re.search(r"iptables|tmux|chromium|needs root|is missing", ln) for ln in reasons), reasons
