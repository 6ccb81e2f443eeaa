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
