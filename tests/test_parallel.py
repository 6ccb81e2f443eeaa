"""The suite's parallel run keeps together what must stay together (tests/conftest.py, docs/testing.md).

A child pytest with two workers runs test_netselect.py (some of its tests share a module-scoped
fixture, others do not) and the network-namespace tests of test_multinode.py with every test
deselected but their collection; the worker that ran each test is read from ``-v``.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections import defaultdict

from tests.conftest import REPO


def test_tests_sharing_a_module_fixture_run_on_one_worker() -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    p = subprocess.run([sys.executable, "-m", "pytest", "-v", "-n", "2", "-p", "no:cacheprovider", "tests/test_netselect.py"],
                       capture_output=True, text=True, timeout=240, cwd=str(REPO), env=env)
    assert p.returncode == 0, p.stdout[-3000:]
    workers: dict[str, set[str]] = defaultdict(set)
    for m in re.finditer(r"^\[(gw\d+)\] .*? PASSED (\S+)", p.stdout, re.M):
        gw, nodeid = m.groups()
        workers["grouped" if nodeid.endswith("@tests/test_netselect.py") else "free"].add(gw)
    # The group is in the test ids, so xdist saw it; and the grouped tests all ran on one worker.
    assert len(workers["grouped"]) == 1, workers
    assert workers["free"], workers  # the other tests of the module are still spread freely


def test_namespace_tests_are_grouped_per_module() -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    code = ("import pytest, sys\n"
            "class P:\n"
            "    @pytest.hookimpl(trylast=True)\n"
            "    def pytest_collection_modifyitems(self, items):\n"
            "        for i in items:\n"
            "            m = [x.args[0] for x in i.iter_markers('xdist_group')]\n"
            "            print('GROUP', i.nodeid, m)\n"
            "sys.exit(pytest.main(['--co', '-q', '-n0', '-p', 'no:cacheprovider', 'tests/integration/test_multinode.py',"
            " 'tests/test_net_scenarios.py', 'tests/test_fresh_machine.py'], plugins=[P()]))\n")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=str(REPO), env=env)
    groups = {m.group(1): m.group(2) for m in re.finditer(r"^GROUP (\S+) \['([^']*)'\]", p.stdout, re.M)}
    if not groups:  # the modules skip at collection where namespaces cannot be built (no root, no ip)
        assert p.returncode in (0, 5), p.stdout[-3000:] + p.stderr[-3000:]
        return
    for nodeid, group in groups.items():
        module = nodeid.split("::")[0]
        want = "tests/integration/test_multinode.py" if module == "tests/test_fresh_machine.py" else module
        assert group == f"netns:{want}", (nodeid, group)


def test_heavy_tests_run_at_most_one_per_core_while_light_ones_fill_in(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """With more workers than cores, the tests recorded as heavy in the CPU file hold one slot per core, so no
    more of them than cores run at once; the light ones run beside them on the extra worker."""
    cores = os.cpu_count() or 1
    stamps = tmp_path / "stamps"
    stamps.mkdir()
    mod = tmp_path / "test_slots_demo.py"
    mod.write_text(
        "import os, time, pytest\n"
        f"STAMPS = {str(stamps)!r}\n"
        "def _run(name, s):\n"
        "    t0 = time.time(); time.sleep(s)\n"
        "    open(os.path.join(STAMPS, name), 'w').write(f'{t0} {time.time()}')\n"
        "@pytest.mark.parametrize('i', range(%d))\n"
        "def test_heavy(i):\n"
        "    _run(f'heavy{i}', 1.5)\n"
        "@pytest.mark.parametrize('i', range(6))\n"
        "def test_light(i):\n"
        "    _run(f'light{i}', 0.5)\n" % (2 * cores + 2))
    cpu = tmp_path / "cpu.json"
    cpu.write_text("{" + ", ".join(f'"test_slots_demo.py::test_heavy[{i}]": 9.0' for i in range(2 * cores + 2)) + "}")
    env = {**os.environ, "PYTHONPATH": str(REPO), "COMMDOCTOR_TEST_CPU_FILE": str(cpu)}
    p = subprocess.run([sys.executable, "-m", "pytest", "-q", "-n", str(cores + 1), "-p", "tests.conftest",
                        "-p", "no:cacheprovider", "--rootdir", str(tmp_path), "-c", os.devnull, str(mod)],
                       capture_output=True, text=True, timeout=240, cwd=str(tmp_path), env=env)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    spans = {f.name: tuple(map(float, f.read_text().split())) for f in stamps.iterdir()}
    assert len(spans) == 2 * cores + 2 + 6

    def most_at_once(names: list[str]) -> int:
        edges = sorted([(spans[n][0], 1) for n in names] + [(spans[n][1], -1) for n in names])
        now = peak = 0
        for _, d in edges:
            now += d
            peak = max(peak, now)
        return peak

    heavy = [n for n in spans if n.startswith("heavy")]
    assert most_at_once(heavy) <= cores  # never more heavies than cores at once
    assert most_at_once(list(spans)) > cores  # the extra worker ran light tests beside them
