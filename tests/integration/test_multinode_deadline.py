"""Two "hosts" (network namespaces) under real torchrun, one firewalled, with a run deadline (issue 18 item 5).

Node b drops every new TCP connection that is not to the master port, as in
test_multinode.py's firewall case, but here the run is given ``--deadline 40`` with
the default ``--join-timeout`` (30 s) and ``--pg-timeout`` (60 s): limits whose sum
is far past the deadline. Node 0's report must still come before 40 s from its
start, name the firewalled node, and say that the local checks were fitted to the
deadline. A second run firewalls b completely (the master port too): b still
reaches node 0's store (its own connections out are answered) but nobody reaches
b: node 0 names it unreachable within the deadline.

Then with the DEFAULT options (no --deadline: 195 s), as a user runs it under ``timeout 60 torchrun``:
the firewall case must be named by node 0 within 30 s of its start (on stderr, as soon as the mesh
is judged) and its whole report must follow without waiting on the blocked node; and when torchrun is stopped (SIGTERM, as
``timeout`` and Slurm send) while node 0 waits for a node b whose worker never runs commdoctor,
node 0 prints the report of what it saw at once, marked interrupted. Four torchrun jobs on one lab
of two namespaces: about 3 minutes under this machine's shared load (each job 30-50 s).
Prefix cdm-d, subnet 10.203.9.0/24.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time
from typing import Any, Callable

import pytest

from tests.conftest import needs_tool
from tests.mnlab import Job, Lab3, clean_env, codes, why_not

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
    # said on stderr as soon as the mesh was judged, before the local checks
    assert "commdoctor: node 0: MN040 cdmda cannot reach cdmdb at 10.203.9.2" in a.err, a.err[-3000:]
    assert a.elapsed < DEADLINE + 8, f"node 0's report came after {a.elapsed:.1f} s"
    (f,) = codes(doc)["MN040"]
    assert "cdmdb" in f["hosts"], f
    assert [n["host"] for n in doc["nodes"]] == ["cdmda", "cdmdb"]


# -- the default options, and the launcher stopping the run ----------------------------------------------


class Streamed:
    """One host's torchrun, its stdout and stderr kept line by line with when each came (from torchrun's start)."""

    def __init__(self, lab: Lab3, k: int, port: int, entry: list[str]) -> None:
        h = lab.hosts[k]
        run = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "1", "--nnodes", str(len(lab.hosts)),
               "--master-addr", lab.master.addr, "--master-port", str(port), "--node-rank", str(k), *entry]
        self.t0 = time.monotonic()
        self.p = h.start(run, clean_env(LOGLEVEL="WARNING"))
        self.out: list[tuple[float, str]] = []
        self.err: list[tuple[float, str]] = []
        self.threads = [threading.Thread(target=self._pump, args=(st, into), daemon=True)
                        for st, into in ((self.p.stdout, self.out), (self.p.stderr, self.err))]
        for t in self.threads:
            t.start()

    def _pump(self, stream: Any, into: list[tuple[float, str]]) -> None:
        for line in stream:
            into.append((time.monotonic() - self.t0, line))

    def when(self, pred: Callable[[str], bool], timeout: float) -> float | None:
        """When a stderr line matching ``pred`` came, waiting for it up to ``timeout`` (None: it never came)."""
        end = time.monotonic() + timeout
        while True:
            hit = next((t for t, line in list(self.err) if pred(line)), None)
            if hit is not None or time.monotonic() > end or (self.p.poll() is not None and
                                                             not any(t.is_alive() for t in self.threads)):
                return hit
            time.sleep(0.1)

    def finish(self, timeout: float) -> None:
        try:
            self.p.wait(timeout)
        except subprocess.TimeoutExpired:
            pass
        finally:
            if self.p.poll() is None:
                self.p.kill()
                self.p.wait(5)
            for t in self.threads:
                t.join(5)

    def doc(self) -> dict[str, Any]:
        text = "".join(line for _, line in self.out)
        assert "{" in text, f"no JSON (rc={self.p.returncode}):\n{text[-2000:]}\n{''.join(x for _, x in self.err)[-4000:]}"
        return dict(json.loads(text[text.find("{"):text.rfind("}") + 1]))

    def report_at(self) -> float:
        """When the JSON report's last line came."""
        return max(t for t, line in self.out if line.strip())


@pytest.fixture(scope="module")
def defaults_firewalled(lab: Lab3) -> tuple[Streamed, Streamed]:
    """b drops every new connection but the master port's; both nodes run ``commdoctor run --json`` with the
    default options (no --deadline)."""
    lab.reset()
    port = PORT + 2
    b = lab.hosts[1]
    try:
        b.iptables("-A", "INPUT", "-p", "tcp", "--dport", str(port), "-j", "ACCEPT")
        b.iptables("-A", "INPUT", "-p", "tcp", "-m", "conntrack", "--ctstate", "NEW", "-i", "cdm0", "-j", "DROP")
        jobs = (Streamed(lab, 0, port, ["-m", "commdoctor", "run", "--json"]),
                Streamed(lab, 1, port, ["-m", "commdoctor", "run", "--json"]))
        for j in jobs:
            j.finish(150)
        return jobs
    finally:
        lab.reset()


def test_with_the_defaults_the_firewalled_node_is_named_within_30_s(defaults_firewalled: tuple[Streamed, Streamed]) -> None:
    a, b = defaults_firewalled
    doc = a.doc()
    joined = a.when(lambda ln: "node 0 (cdmda): joined the job's store" in ln, 0)
    said = a.when(lambda ln: "node 0: MN041 cdmdb accepts the master port" in ln, 0)
    assert joined is not None and said is not None, "".join(x for _, x in a.err)[-3000:]
    # node 0's own start, from its first stderr line and the time its report gives for that stage
    start = joined - doc["nodes"][0]["stages"]["joined"]
    print(f"\ndefaults, b firewalled: node 0 started {start:.1f} s after torchrun; named cdmdb {said - start:.1f} s "
          f"after its start; whole report {a.report_at() - start:.1f} s after its start "
          f"({a.report_at():.1f} s after torchrun's)")
    assert said - start < 30, f"node 0 named the firewalled node {said - start:.1f} s after its start"
    # The whole report follows the local checks: 31 s after node 0's start at a load average of 16 on this
    # 2-core VM, 46 s at 21 (torch imported by their child processes). Far from the 195 s default deadline:
    # nothing waits on the blocked node. (Under a launcher's limit the partial report covers the rest.)
    assert a.report_at() - start < 60, f"node 0's report came {a.report_at() - start:.1f} s after its start"
    (f,) = codes(doc)["MN041"]
    assert f["hosts"] == ["cdmdb"] and f["cause"] == "firewall_or_port_blocked"
    assert f["title"].startswith(f"cdmdb accepts the master port {PORT + 2} but not ephemeral port"), f["title"]
    assert [n["status"] for n in doc["nodes"]] == ["reported", "reported"]
    # One member left once b is excluded: no gloo pair test is tried (it would wait on b's dropped ports).
    bw = next(r for r in doc["results"] if r["check"] == "mn.bandwidth")
    assert not bw["data"].get("pairs_gbps"), bw
    # the job's store answered this process already: no second handshake in a child (which, slow to import
    # torch on a busy host, used to read as RDZV030 "not a TCPStore" on the job's own store)
    assert "RDZV030" not in codes(doc)
    store = next(r for r in doc["results"] if r["check"] == "rdzv.store")
    assert store["status"] == "passed" and "answered in" in store["summary"], store
    assert b.p.returncode == 0 and any("results went to node 0" in x for _, x in b.err)


def test_torchrun_stopped_while_node_0_waits_prints_what_it_saw(lab: Lab3) -> None:
    """b's torchrun joins the rendezvous but its worker never runs commdoctor (``sleep``); node 0 waits for it
    (default --join-timeout 30) and torchrun on a is sent SIGTERM, as ``timeout`` or Slurm would."""
    lab.reset()
    port = PORT + 3
    a = Streamed(lab, 0, port, ["-m", "commdoctor", "run", "--json"])
    b = Streamed(lab, 1, port, ["--no-python", "sleep", "90"])
    try:
        joined = a.when(lambda ln: "node 0 (cdmda): joined the job's store" in ln, 90)
        assert joined is not None, "".join(x for _, x in a.err)[-3000:]
        time.sleep(1.0)
        t = time.monotonic()
        a.p.send_signal(signal.SIGTERM)  # torchrun itself: it passes SIGTERM on to its worker
        a.finish(40)
        took = time.monotonic() - t
    finally:
        for j in (a, b):
            if j.p.poll() is None:
                j.p.kill()
            j.finish(5)
        lab.reset()
    doc = a.doc()
    print(f"\ntorchrun on a stopped {joined + 1:.1f} s after its start: report {a.report_at() - joined - 1:.1f} s "
          f"after the signal, torchrun gone {took:.1f} s after it")
    assert a.report_at() - (joined + 1.0) < 10, "node 0's report came too late after SIGTERM"
    assert doc["interrupted"] is True and doc["outcome"] == "incomplete"
    assert [(n["host"], n["status"]) for n in doc["nodes"]] == [("cdmda", "reported"), ("node-01", "never joined")]
    (f,) = codes(doc)["MN001"]
    assert f["title"].startswith("node-01 never joined: nothing was seen of it in the ")
    assert f["title"].endswith("before the run was interrupted")
