"""The parallel run's longest-first order (tests/conftest.py): what a free worker is handed next.

The scheduler itself runs in every parallel run (tests/test_parallel.py starts one with two workers);
these tests pin the choice it makes and the durations file it reads.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import DEFAULT_S, _bare_nodeid, load_durations, longest_unit


def test_the_unit_expected_to_take_longest_goes_first() -> None:
    queue = {
        "tests/a.py::test_fast": {"tests/a.py::test_fast": False},
        "lab": {"tests/b.py::test_one@lab": False, "tests/b.py::test_two@lab": False},
        "tests/c.py::test_child_pytest": {"tests/c.py::test_child_pytest": False},
    }
    took = {"tests/a.py::test_fast": 0.1, "tests/b.py::test_one": 20.0, "tests/b.py::test_two": 1.0,
            "tests/c.py::test_child_pytest": 60.0}
    costs: dict[str, float] = {}
    assert longest_unit(queue, took, costs) == "tests/c.py::test_child_pytest"
    assert costs["lab"] == 21.0  # a group counts the sum of its tests, looked up without "@group"
    del queue["tests/c.py::test_child_pytest"]
    assert longest_unit(queue, took, costs) == "lab"


def test_a_test_missing_from_the_file_counts_the_default() -> None:
    queue = {"tests/new.py::test_x": {"tests/new.py::test_x": False},
             "tests/a.py::test_fast": {"tests/a.py::test_fast": False}}
    assert longest_unit(queue, {"tests/a.py::test_fast": DEFAULT_S / 2}, {}) == "tests/new.py::test_x"
    # equal costs: the earlier unit (xdist's own order) wins
    assert longest_unit(queue, {}, {}) == "tests/new.py::test_x"


def test_group_suffix_is_dropped_but_not_inside_a_parameter() -> None:
    assert _bare_nodeid("tests/b.py::test_one@netns:tests/b.py") == "tests/b.py::test_one"
    assert _bare_nodeid("tests/b.py::test_mail[a@b]") == "tests/b.py::test_mail[a@b]"
    assert _bare_nodeid("tests/b.py::test_mail[a@b]@grp") == "tests/b.py::test_mail[a@b]"


def test_a_missing_or_damaged_file_leaves_the_order_to_xdist(tmp_path: Path) -> None:
    assert load_durations(tmp_path / "none.json") == {}
    bad = tmp_path / "bad.json"
    for text in ("{", "[1, 2]", '{"t": "slow"}', "\x00"):
        bad.write_text(text)
        assert load_durations(bad) == {}, text
    good = tmp_path / "good.json"
    good.write_text(json.dumps({"tests/a.py::test_x": 2}))
    assert load_durations(good) == {"tests/a.py::test_x": 2.0}


def test_cpu_profile_counts_a_test_and_the_children_it_waits_for(tmp_path: Path) -> None:
    """``--cpu-profile DIR`` (tests/conftest.py), in a real pytest run: a test that burns CPU itself and one whose
    child process burns it are each charged with it, under their own ids."""
    import os
    import subprocess
    import sys

    repo = Path(__file__).resolve().parent.parent
    burn = "x = 0\nfor i in range(4_000_000):\n    x += i\n"
    (tmp_path / "test_burn.py").write_text(
        "import subprocess, sys\n"
        f"BURN = {burn!r}\n"
        "def test_itself():\n    exec(BURN)\n"
        "def test_child():\n    subprocess.run([sys.executable, '-c', BURN], check=True, timeout=120)\n"
        "def test_idle():\n    pass\n")
    out = tmp_path / "prof"
    p = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "tests.conftest", "-p", "no:cacheprovider",
                        "--cpu-profile", str(out), str(tmp_path / "test_burn.py")], capture_output=True, text=True,
                       timeout=300, cwd=str(tmp_path), env={**os.environ, "PYTHONPATH": str(repo)})
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    rows = {r["id"].split("::")[-1]: r for f in out.glob("*.jsonl") for r in map(json.loads, f.read_text().splitlines())}
    assert set(rows) == {"test_itself", "test_child", "test_idle"}, rows
    assert rows["test_itself"]["self"] >= 0.1 and rows["test_itself"]["children"] < 0.05, rows
    assert rows["test_child"]["children"] >= 0.1 and rows["test_child"]["self"] < rows["test_child"]["children"], rows
    assert rows["test_idle"]["self"] + rows["test_idle"]["children"] < 0.05, rows
