"""Two "hosts" (network namespaces) under real torchrun, one firewalled, with a run deadline (issue 18 item 5).

Node b drops every new TCP connection that is not to the master port, as in
test_multinode.py's firewall case, but here the run is given ``--deadline 40`` with
the default ``--join-timeout`` (30 s) and ``--pg-timeout`` (60 s): limits whose sum
is far past the deadline. Node 0's report must still come before 40 s from its
start, name the firewalled node, and say that the local checks were fitted to the
deadline. A second run firewalls b completely (the master port too): b still
reaches node 0's store (its own connections out are answered) but nobody reaches
b: node 0 names it unreachable within the deadline. Prefix cdm-d, subnet 10.203.9.0/24.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from tests.conftest import needs_tool
from tests.mnlab import Job, Lab3, codes, why_not

pytestmark = [pytest.mark.netns, pytest.mark.skipif(why_not() is not None, reason=why_not() or ""),
              needs_tool("iptables")]

PORT = 29680
DEADLINE = 40.0


@pytest.fixture(scope="module")
def lab() -> Any:
    lab = Lab3("d", 9, n=2)
    try:
        lab.up()
        yield lab
    finally:
        lab.down()


def _run(lab: Lab3, port: int, keep_master: bool) -> tuple[dict[str, Job], float]:
    lab.reset()
    b = lab.hosts[1]
    try:
        if keep_master:
            b.iptables("-A", "INPUT", "-p", "tcp", "--dport", str(port), "-j", "ACCEPT")
        b.iptables("-A", "INPUT", "-p", "tcp", "-m", "conntrack", "--ctstate", "NEW", "-i", "cdm0", "-j", "DROP")
        t0 = time.monotonic()
        out = lab.torchrun(port, ["--deadline", f"{DEADLINE:g}"], nnodes="2", deadline=DEADLINE + 40)
        return out, time.monotonic() - t0
    finally:
        lab.reset()


@pytest.fixture(scope="module")
def master_port_only(lab: Lab3) -> tuple[dict[str, Job], float]:
    return _run(lab, PORT, keep_master=True)


@pytest.fixture(scope="module")
def nothing_in(lab: Lab3) -> tuple[dict[str, Job], float]:
    return _run(lab, PORT + 1, keep_master=False)


def test_firewalled_node_is_named_before_the_deadline(master_port_only: tuple[dict[str, Job], float]) -> None:
    out, wall = master_port_only
    a, b = out["cdmda"], out["cdmdb"]
    print(f"\nb firewalled, --deadline {DEADLINE:g}: node 0 printed after {a.elapsed:.1f} s (torchrun's start)")
    doc = a.report()
    # torchrun's own start-up (a few seconds) comes before commdoctor's clock starts.
    assert a.elapsed < DEADLINE + 8, f"node 0's report came after {a.elapsed:.1f} s"
    (f,) = codes(doc)["MN041"]
    assert f["hosts"] == ["cdmdb"] and f["title"].startswith(f"cdmdb accepts the master port {PORT} but not")
    assert [n["status"] for n in doc["nodes"]] == ["reported", "reported"], doc["nodes"]
    assert b.rc == 0 and "results went to node 0" in b.err


def test_node_nobody_reaches_is_named_before_the_deadline(nothing_in: tuple[dict[str, Job], float]) -> None:
    out, wall = nothing_in
    a = out["cdmda"]
    print(f"\nb takes no connection in, --deadline {DEADLINE:g}: node 0 printed after {a.elapsed:.1f} s")
    doc = a.report()
    assert a.elapsed < DEADLINE + 8, f"node 0's report came after {a.elapsed:.1f} s"
    (f,) = codes(doc)["MN040"]
    assert "cdmdb" in f["hosts"], f
    assert [n["host"] for n in doc["nodes"]] == ["cdmda", "cdmdb"]
