"""The network preflight against real failures between two "hosts" (network namespaces).

For each scenario the real CLI (``python -m commdoctor run --select NET,RDZV
--json``) runs inside the namespace, and a real 2-host gloo job (one rank per
namespace, env://) runs under the same conditions: the test asserts that
commdoctor's verdict matches what happens to the job, and that the job
succeeds once the remedy commdoctor printed is applied.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import have_torch
from tests.netlab import Lab, clean_env, codes, parallel, result, why_not

pytestmark = [
    pytest.mark.netns,
    pytest.mark.skipif(why_not() is not None, reason=str(why_not())),
    pytest.mark.skipif(not have_torch(), reason="torch is not installed (the jobs and the store handshake need it)"),
]
needs_iptables = pytest.mark.skipif(shutil.which("iptables") is None,
                                    reason="iptables is missing (apt-get install -y iptables)")
SELECT = ("--select", "NET,RDZV")


@pytest.fixture(scope="module")
def lab() -> Any:
    tag = f"{os.getpid() % 1000:03d}"
    lab = Lab(tag).up()
    try:
        yield lab
    finally:
        lab.down()


def errors(doc: dict[str, Any]) -> list[str]:
    return [f["code"] for f in doc["findings"] if f["severity"] == "error"]


def job_ok(job: dict[str, dict[str, Any]]) -> bool:
    return all(r.get("ok") for r in job.values())


def job_text(job: dict[str, dict[str, Any]]) -> str:
    return "\n".join(f"{k}: {r.get('error')}\n{r.get('stderr')}" for k, r in job.items())


def test_healthy_pair(lab: Lab) -> None:
    # On the master before the job: port free, rendezvous on this host.
    doc, _, _ = lab.a.commdoctor(*SELECT, env=lab.job_env(29501, 0))
    assert errors(doc) == [] and doc["verdict"] is None, doc["findings"]
    assert "free" in result(doc, "rdzv.port")["summary"]
    # On the worker, with rank 0's store up: every check passes, and the handshake is real.
    lab.a.start([sys.executable, "tests/net_job.py", "store"], lab.job_env(29501, 0, LIFE="60"), ready="ready",
                fork=True)
    doc, _, _ = lab.b.commdoctor(*SELECT, env=lab.job_env(29501, 1))
    lab.a.stop_all()
    assert doc["verdict"] is None, doc["findings"]
    sel = result(doc, "net.selection")
    assert sel["data"]["selection"]["gloo"]["picks"] == [{"interface": "cdn0", "address": lab.b.addr}]
    assert sel["data"]["selection"]["nccl"]["picks"][0] == {"interface": "cdn0", "address": lab.b.addr}
    assert f"Gloo: cdn0 {lab.b.addr}" in sel["summary"]
    assert result(doc, "net.route")["summary"].startswith(f"{lab.a.addr} via cdn0")
    assert result(doc, "rdzv.store")["status"] == "passed" and "answered" in result(doc, "rdzv.store")["summary"]
    assert "not filtered" in result(doc, "rdzv.ports")["summary"]
    # ... and the real job agrees.
    job = lab.job(29502)
    assert job_ok(job), job_text(job)


def test_hostname_on_127_0_1_1_on_both_hosts(lab: Lab) -> None:
    # An image cloned onto every node: each host's own name on the Debian/Ubuntu 127.0.1.1 line.
    lab.a.hosts_file(f"127.0.1.1 {lab.a.hostname}\n{lab.b.addr} {lab.b.hostname}\n")
    lab.b.hosts_file(f"127.0.1.1 {lab.b.hostname}\n{lab.a.addr} {lab.a.hostname}\n")
    try:
        docs = parallel(lambda: lab.a.commdoctor(*SELECT, env=lab.job_env(29511, 0)),
                        lambda: lab.b.commdoctor(*SELECT, env=lab.job_env(29511, 1)))
        for host, (doc, _, _) in zip((lab.a, lab.b), docs):
            f = codes(doc)["NET030"]
            assert doc["verdict"]["code"] == "NET030" and f["severity"] == "error" and f["cause"] == "hostname_resolution"
            assert f"hostname {host.hostname} resolves to 127.0.1.1" in f["title"]
            assert {"source": "/etc/hosts", "text": f"127.0.1.1 {host.hostname}", "line": 2, "rank": None,
                    "host": None} in f["evidence"]
            assert f["remedy"]["env"]["GLOO_SOCKET_IFNAME"] == "cdn0"
            assert f"'{host.addr} {host.hostname}'" in f["remedy"]["steps"][0]
            assert not {"NET010", "NET040"} & set(codes(doc))  # one cause, one finding
            remedy = f["remedy"]["env"]
        # The job as it is, and with the remedy as printed (GLOO_SOCKET_IFNAME on every node), side by side.
        (doc, _, _), job, fixed = parallel(
            lambda: lab.b.commdoctor(*SELECT, env=lab.job_env(29513, 1, **remedy)),
            lambda: lab.job(29512),
            lambda: lab.job(29514, extra_a=remedy, extra_b=remedy))
        assert not job_ok(job)
        text = job_text(job)
        assert "connectFullMesh" in text and "127.0.1.1" in text, text
        assert "NET030" not in codes(doc)
        assert result(doc, "net.selection")["data"]["selection"]["gloo"]["picks"][0]["interface"] == "cdn0"
        assert job_ok(fixed), job_text(fixed)
    finally:
        lab.healthy_hosts()


def test_decoy_bridge_holds_the_hostname_address(lab: Lab) -> None:
    # Host b's name resolves to an address on an empty bridge (an idle docker0 looks like this),
    # which sorts below the master's address: the master must connect to it, and cannot.
    lab.b.ip("link", "add", "cdndecoy", "type", "bridge")
    lab.b.ip("addr", "add", f"10.201.{lab.net - 1}.2/24", "dev", "cdndecoy")
    lab.b.ip("link", "set", "cdndecoy", "up")
    decoy = f"10.201.{lab.net - 1}.2"
    lab.b.hosts_file(f"{decoy} {lab.b.hostname}\n{lab.a.addr} {lab.a.hostname}\n")
    try:
        doc, _, _ = lab.b.commdoctor(*SELECT, env=lab.job_env(29521, 1))
        f = codes(doc)["NET011"]
        assert doc["verdict"]["code"] == "NET011" and f["severity"] == "error"
        assert f["title"].startswith(f"Gloo will use cdndecoy ({decoy}), a bridge with no member ports")
        assert f["cause"] == "hostname_resolution"
        assert f["remedy"]["env"] == {"GLOO_SOCKET_IFNAME": "cdn0"}
        assert any("cdndecoy: bridge" in e["text"] and "ports: none" in e["text"] for e in f["evidence"])
        assert "NET030" not in codes(doc)  # the hostname is a real local address: one finding, not two
        job, fixed = parallel(lambda: lab.job(29522), lambda: lab.job(29523, extra_b=f["remedy"]["env"]))
        # The master fails to reach the advertised address (torch does not say which); host b waits silently.
        assert not job_ok(job)
        assert "Network is unreachable" in (job["a"].get("error") or ""), job_text(job)
        assert job["b"]["hung"] or not job["b"]["ok"]
        assert job_ok(fixed), job_text(fixed)
    finally:
        lab.b.ip("link", "del", "cdndecoy")
        lab.healthy_hosts()


def test_interface_that_does_not_exist(lab: Lab) -> None:
    bad = {"GLOO_SOCKET_IFNAME": "eth9"}
    doc, _, _ = lab.b.commdoctor(*SELECT, env=lab.job_env(29531, 1, **bad))
    f = codes(doc)["NET001"]
    assert doc["verdict"]["code"] == "NET001" and f["severity"] == "error" and f["cause"] == "wrong_interface"
    assert f["title"] == "GLOO_SOCKET_IFNAME names 'eth9', which this host does not have"
    assert "Unable to find address for: eth9" in f["detail"]
    assert f["remedy"]["env"] == {"GLOO_SOCKET_IFNAME": "cdn0"}
    assert f"cdn0 ({lab.b.addr}" in f["remedy"]["steps"][0]  # the interfaces that do exist
    assert {"source": "env", "text": "GLOO_SOCKET_IFNAME=eth9", "line": None, "rank": None, "host": None} in f["evidence"]
    job, fixed = parallel(lambda: lab.job(29532, extra_b=bad), lambda: lab.job(29533, extra_b=f["remedy"]["env"]))
    assert not job_ok(job) and "Unable to find address for: eth9" in job["b"]["error"], job_text(job)
    assert job_ok(fixed), job_text(fixed)


def test_port_held_by_another_process(lab: Lab) -> None:
    holder = lab.a.start([sys.executable, "tests/net_job.py", "hold", "29541"], clean_env(LIFE="60"), ready="ready")
    try:
        doc, _, _ = lab.a.commdoctor(*SELECT, env=lab.job_env(29541, 0))
        f = codes(doc)["RDZV020"]
        assert doc["verdict"]["code"] == "RDZV020" and f["severity"] == "error" and f["cause"] == "port_conflict"
        assert f"held by pid {holder.pid} (" in f["title"] and "tests/net_job.py hold 29541" in f["title"]
        free = f["remedy"]["env"]["MASTER_PORT"]
        assert free.isdigit() and free != "29541"
        # From the worker: the port answers, but not as a TCPStore. And the jobs, as they are and on the free port.
        (doc_b, _, _), job, fixed = parallel(lambda: lab.b.commdoctor(*SELECT, env=lab.job_env(29541, 1)),
                                             lambda: lab.job(29541), lambda: lab.job(int(free)))
        assert doc_b["verdict"]["code"] == "RDZV030", doc_b["findings"]
        assert not job_ok(job)
        assert "address already in use" in job["a"]["error"].lower() or "errno: 98" in job["a"]["error"].lower(), \
            job_text(job)
        assert job_ok(fixed), job_text(fixed)
    finally:
        lab.a.stop_all()


@needs_iptables
def test_firewall_drop_and_reject(lab: Lab) -> None:
    # On the interface other hosts come in through (a firewall that also blocks lo would stop rank 0 itself).
    lab.a.iptables("-I", "INPUT", "-i", "cdn0", "-p", "tcp", "--dport", "29551", "-j", "DROP")
    lab.a.iptables("-I", "INPUT", "-i", "cdn0", "-p", "tcp", "--dport", "29552", "-j", "REJECT")
    try:
        parallel(*(lambda p=p: lab.a.start([sys.executable, "tests/net_job.py", "store"], lab.job_env(p, 0, LIFE="60"),
                                            ready="ready", fork=True) for p in (29551, 29552)))
        # Default --timeout (15 s): DROP is told apart within seconds, not after torch's 18-35 s.
        (doc, secs, _), (doc2, _, _) = parallel(lambda: lab.b.commdoctor(*SELECT, env=lab.job_env(29551, 1)),
                                                lambda: lab.b.commdoctor(*SELECT, env=lab.job_env(29552, 1)))
        f = codes(doc)["RDZV012"]
        assert doc["verdict"]["code"] == "RDZV012" and f["cause"] == "firewall_or_port_blocked"
        assert secs < 15.0, secs
        assert any("connect 10.201" in e["text"] and ": timeout" in e["text"] for e in f["evidence"])
        assert {r["check"]: r["status"] for r in doc["results"]}["rdzv.store"] == "skipped"
        f = codes(doc2)["RDZV011"]
        assert doc2["verdict"]["code"] == "RDZV011" and f["cause"] == "firewall_or_port_blocked"
        assert f"ICMP type 3 code 3 from {lab.a.addr}" in f["title"]
        assert "--dport 29552 -j ACCEPT" in f["remedy"]["summary"]
        lab.a.stop_all()
        # Both jobs fail the way torch reports all of these: a client timeout with no cause.
        for job in parallel(lambda: lab.job(29551, timeout=3), lambda: lab.job(29552, timeout=3)):
            assert not job_ok(job)
            assert "timed out" in (job["b"].get("error") or "") or job["b"]["hung"], job_text(job)
    finally:
        lab.a.stop_all()
        lab.a.iptables("-F", "INPUT")
    # The remedy (open the port) makes the job work.
    job = lab.job(29551)
    assert job_ok(job), job_text(job)


@needs_iptables
def test_only_master_port_open(lab: Lab) -> None:
    lab.a.iptables("-A", "INPUT", "-i", "lo", "-j", "ACCEPT")
    lab.a.iptables("-A", "INPUT", "-p", "tcp", "--dport", "29561", "-j", "ACCEPT")
    lab.a.iptables("-A", "INPUT", "-m", "conntrack", "--ctstate", "ESTABLISHED,RELATED", "-j", "ACCEPT")
    lab.a.iptables("-A", "INPUT", "-p", "tcp", "-j", "DROP")
    try:
        lab.a.start([sys.executable, "tests/net_job.py", "store"], lab.job_env(29561, 0, LIFE="60"), ready="ready",
                    fork=True)
        doc, secs, _ = lab.b.commdoctor(*SELECT, env=lab.job_env(29561, 1))
        assert result(doc, "rdzv.store")["status"] == "passed"
        f = codes(doc)["RDZV040"]
        assert doc["verdict"]["code"] == "RDZV040" and f["severity"] == "warning"
        assert "drops connections to port" in f["title"] and "32768-60999" in f["remedy"]["summary"]
    finally:
        lab.a.stop_all()
        lab.a.iptables("-F", "INPUT")


def test_dns_route_and_arp_told_apart(lab: Lab) -> None:
    doc, secs, _ = lab.b.commdoctor(*SELECT, env=lab.job_env(29571, 1, MASTER_ADDR="cdn-no-such-host.invalid"))
    assert doc["verdict"]["code"] == "RDZV001" and doc["verdict"]["cause"] == "hostname_resolution"
    assert "does not resolve" in doc["verdict"]["title"]
    assert result(doc, "rdzv.reach")["status"] == "skipped" and "blocked by RDZV001" in result(doc, "rdzv.reach")["reason"]

    doc, secs, _ = lab.b.commdoctor(*SELECT, env=lab.job_env(29571, 1, MASTER_ADDR="10.201.99.1"))
    assert doc["verdict"]["code"] == "NET050" and doc["verdict"]["cause"] == "rendezvous_unreachable"
    assert result(doc, "rdzv.reach")["reason"] == "blocked by NET050"

    # An address on this host's network that nobody holds: ARP fails in about 3 s.
    doc, secs, _ = lab.b.commdoctor(*SELECT, env=lab.job_env(29571, 1, MASTER_ADDR=f"10.201.{lab.net}.77"))
    f = doc["verdict"]
    assert f["code"] == "RDZV013" and "ARP" in f["title"], doc["findings"]
    assert secs < 15.0


@needs_iptables
def test_resolver_that_never_answers_is_cut_short(lab: Lab) -> None:
    # Host b's resolver is host a, which drops DNS: getaddrinfo alone would wait 2 x 5 s per name.
    resolv = Path("/etc/netns") / lab.b.ns / "resolv.conf"
    resolv.write_text(f"nameserver {lab.a.addr}\noptions timeout:5 attempts:2\n")
    lab.a.iptables("-I", "INPUT", "-i", "cdn0", "-p", "udp", "--dport", "53", "-j", "DROP")
    try:
        doc, secs, _ = lab.b.commdoctor(*SELECT, "--timeout", "6", env=lab.job_env(29581, 1, MASTER_ADDR="master.cdn-test"))
        assert doc["verdict"]["code"] == "RDZV002", doc["findings"]
        assert "did not finish within" in doc["verdict"]["title"]
        assert secs < 12, secs
    finally:
        lab.a.iptables("-F", "INPUT")
        resolv.unlink(missing_ok=True)


def test_no_job_reports_each_backends_interface(lab: Lab) -> None:
    doc, _, _ = lab.b.commdoctor(*SELECT, env=clean_env())
    sel = result(doc, "net.selection")
    assert sel["status"] == "passed"
    assert sel["data"]["environment"]["interfaces_chosen"] == {"nccl": "cdn0", "gloo": "cdn0", "tp": "cdn0"}
    assert result(doc, "rdzv.endpoint")["status"] == "skipped"
    assert "MASTER_ADDR" in result(doc, "rdzv.endpoint")["reason"]
    assert doc["environment"]["interfaces_chosen"]["gloo"] == "cdn0"
    # The console shows the same.
    p = lab.b.run([sys.executable, "-m", "commdoctor", "run", *SELECT], env=clean_env(NO_COLOR="1"))
    assert f"Interface each backend will use: NCCL: cdn0 {lab.b.addr}; Gloo: cdn0 {lab.b.addr}" in p.stdout, p.stdout
