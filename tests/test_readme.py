"""The README's console examples stay in step with what the commands print.

A fenced block that follows a ``<!-- readme-example: CMD -->`` comment is the
output of ``CMD`` run from the repository root (offline commands only, with
NO_COLOR set so the glyphs are plain ASCII). Every line of the block, except
the ``$ CMD`` line and ``...`` lines (which stand for lines the README leaves
out), must appear in the real output, in the same order. Durations, the
version and the log search engine are compared loosely because they vary from
machine to machine; everything a user reads is compared exactly. A change in
the output fails here with the README's block and the real output side by side.
"""
from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"

MARK = re.compile(r"^<!-- readme-example: (?P<cmd>.+?) -->\s*$")

# What varies between machines and runs, replaced by a placeholder on both sides.
LOOSE = [
    (re.compile(r"\(\d+(\.\d+)? s\)$"), "(N s)"),
    (re.compile(r"^commdoctor \d+\.\d+\.\d+\S*"), "commdoctor VERSION"),
    (re.compile(r"\(search: [\w-]+\)"), "(search: ENGINE)"),
]

# Commands the examples may run: offline ones only (no torch, no network, no job).
OFFLINE = {"logs", "hang", "view", "checks", "explain", "records"}


def normalize(line: str) -> str:
    line = line.rstrip()
    for pattern, repl in LOOSE:
        line = pattern.sub(repl, line)
    return line


def examples(text: str) -> list[tuple[int, str, list[str]]]:
    """(line number, command, expected lines) for every marked console block."""
    lines = text.splitlines()
    found: list[tuple[int, str, list[str]]] = []
    i = 0
    while i < len(lines):
        m = MARK.match(lines[i])
        if not m:
            i += 1
            continue
        cmd = m.group("cmd")
        start = i + 1
        if start >= len(lines) or not lines[start].startswith("```"):
            raise AssertionError(f"README.md:{i + 1}: readme-example mark not followed by a fenced block")
        body: list[str] = []
        j = start + 1
        while j < len(lines) and not lines[j].startswith("```"):
            body.append(lines[j])
            j += 1
        if j >= len(lines):
            raise AssertionError(f"README.md:{start + 1}: fenced block never closes")
        found.append((i + 1, cmd, body))
        i = j + 1
    return found


def expected_lines(cmd: str, body: list[str]) -> list[str]:
    out = []
    for line in body:
        if line.strip() == "...":
            continue
        if line.startswith("$ "):
            # The prompt line must show the command that is run, or the reader is misled.
            assert line[2:].strip() == cmd, f"block shows `{line[2:]}` but is checked against `{cmd}`"
            continue
        out.append(normalize(line))
    return out


def in_order(expected: list[str], actual: list[str]) -> int | None:
    """Index into expected of the first line not found in order in actual, or None."""
    pos = 0
    for k, line in enumerate(expected):
        while pos < len(actual) and actual[pos] != line:
            pos += 1
        if pos == len(actual):
            return k
        pos += 1
    return None


EXAMPLES = examples(README.read_text(encoding="utf-8"))


def test_readme_has_examples() -> None:
    # The marks are what keeps the README honest; losing them silently would not fail below.
    assert len(EXAMPLES) >= 3


@pytest.mark.parametrize("lineno,cmd,body", EXAMPLES, ids=[f"L{n}" for n, _, _ in EXAMPLES])
def test_readme_example_matches_output(lineno: int, cmd: str, body: list[str]) -> None:
    argv = shlex.split(cmd)
    assert argv[0] == "commdoctor" and len(argv) > 1 and argv[1] in OFFLINE, (
        f"README.md:{lineno}: only offline commands can be examples, got `{cmd}`"
    )
    env = dict(os.environ, NO_COLOR="1", COLUMNS="200", PYTHONPATH=str(ROOT))
    proc = subprocess.run(
        [sys.executable, "-m", "commdoctor", *argv[1:]],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=60,
    )
    assert proc.returncode in (0, 1), f"`{cmd}` exited {proc.returncode}:\n{proc.stderr}"
    actual = [normalize(x) for x in proc.stdout.splitlines()]
    expected = expected_lines(cmd, body)
    missing = in_order(expected, actual)
    if missing is not None:
        pytest.fail(
            f"README.md:{lineno}: `{cmd}` no longer prints this line (in this order):\n"
            f"  {expected[missing]}\n\n"
            "README block:\n" + "\n".join(body) + "\n\nreal output:\n" + proc.stdout
        )


def test_cli_doc_names_every_command_and_option() -> None:
    """docs/cli.md promises every command and every option: a new one must be documented there."""
    import argparse

    from commdoctor.cli import build_parser

    doc = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    parser = build_parser()
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    assert subs, "commdoctor's parser has no commands"
    missing: list[str] = []
    for name, sub in subs[0].choices.items():
        if f"## `commdoctor {name}`" not in doc and f"`commdoctor {name}`" not in doc:
            missing.append(f"command {name}")
        for action in sub._actions:
            for opt in action.option_strings:
                if opt in ("-h", "--help"):
                    continue
                if f"`{opt}" not in doc and f"{opt}`" not in doc and f" {opt} " not in doc:
                    missing.append(f"{name} {opt}")
    assert not missing, f"docs/cli.md does not mention: {missing}"
