"""The NET and RDZV checks as functions of facts (no root, no network).

Interface lists are real captures (fixtures/net/); the other facts are what the
probes return, written out for each case. The checks run through the real
pipeline, so gating, severity and verdicts are what a user would see.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from commdoctor.checks import BUILTIN_CHECKS
from commdoctor.core.model import Report
from commdoctor.pipeline.run import Context, Facts, Options, RunFinished, plan, run_checks
from commdoctor.probes.net import Budget
from tests.conftest import REPO

FIX = REPO / "fixtures" / "net"


def ifaces(name: str) -> list[dict[str, Any]]:
    return json.loads((FIX / name / "interfaces.json").read_text())


def hostname(name: str, *addrs: str, lines: tuple[tuple[int, str], ...] = (), bindable: bool | None = None,
             error: str | None = None) -> dict[str, Any]:
    return {"hostname": name, "canonname": name, "error": error, "timed_out": False, "elapsed_s": 0.001,
            "hosts_file": "/etc/hosts", "hosts_lines": [{"line": n, "text": t} for n, t in lines],
            "addresses": [{"family": "inet6" if ":" in a else "inet", "address": a,
                           "bindable": (a.startswith("127.") or a in ("::1", "192.0.2.2", "fd00::2", "10.201.200.10"))
                           if bindable is None else bindable} for a in addrs]}


def endpoint(host: str, port: int | None, *, source: str = "MASTER_ADDR/MASTER_PORT", kind: str = "env",
             addrs: tuple[str, ...] = (), local: bool = False, route_dev: str | None = "eth0",
             settings: tuple[str, ...] = ()) -> dict[str, Any]:
    return {
        "endpoint": {"host": host, "port": port, "source": source, "kind": kind,
                     "settings": list(settings) or [f"MASTER_ADDR={host}", f"MASTER_PORT={port}"], "problems": []},
        "resolved": {"host": host, "addresses": [{"family": "inet", "address": a} for a in addrs], "error": None},
        "local": [local for _ in addrs],
        "routes": [] if local else [{"address": a, "dev": route_dev, "src": None, "gateway": None, "type": "unicast",
                                     "error": None if route_dev else "Network is unreachable"} for a in addrs],
    }


def run(env: dict[str, str], *, iface_list: str = "vm", host: dict[str, Any] | None = None,
        eps: list[dict[str, Any]] | None = None, remote: bool | None = None, why: str = "",
        reach: dict[str, Any] | None = None, store: dict[str, Any] | None = None,
        extra: dict[str, Any] | None = None, gpu: bool = False, select: tuple[str, ...] = ("NET", "RDZV")) -> Report:
    facts = Facts()
    for k, v in {
        "net_budget": Budget(15.0), "net_env": env, "net_interfaces": ifaces(iface_list),
        "net_hostname": host or hostname("vm", "127.0.0.1", lines=((3, "127.0.0.1 vm"),)),
        "net_gpu": gpu, "net_rdzv": {"endpoints": eps or [], "agents": [], "peers_remote": remote, "peers_why": why},
        "net_reach": reach or {"endpoints": []}, "net_store": store or {"endpoints": []},
        "net_extra_port": extra or {"endpoints": []}, "comm_env": env, "launcher_env": env, "mpi_env": env,
    }.items():
        facts.provide(k, v)
    opts = Options(select=select)
    ctx = Context(options=opts, facts=facts)
    report = None
    for ev in run_checks(plan([c() for c in BUILTIN_CHECKS], opts), ctx):
        if isinstance(ev, RunFinished):
            report = ev.report
    assert report is not None
    for r in report.results:
        assert r.status.value != "crashed", r.error
    return report


def find(report: Report, code: str) -> Any:
    hits = [f for f in report.findings() if f.code == code]
    assert hits, [f"{f.code}: {f.title}" for f in report.findings()]
    return hits[0]


def status(report: Report, check: str) -> tuple[str, str]:
    r = next(r for r in report.results if r.check == check)
    return r.status.value, r.reason


def test_no_job_reports_choices_and_the_loopback_hostname_as_information() -> None:
    rep = run({})
    sel = next(r for r in rep.results if r.check == "net.selection")
    assert sel.summary == "NCCL: eth0 192.0.2.2; Gloo: lo 127.0.0.1 (hostname vm); TensorPipe: lo 127.0.0.1 (hostname vm)"
    f = find(rep, "NET030")
    assert f.severity.value == "info" and "fine for a job on this host alone" in f.title
    assert f.remedy.env == {"GLOO_SOCKET_IFNAME": "eth0", "TP_SOCKET_IFNAME": "eth0"}
    assert rep.verdict() is None
    assert status(rep, "rdzv.endpoint")[0] == "skipped" and status(rep, "net.route")[0] == "skipped"


def test_same_hostname_problem_is_an_error_for_a_multi_host_job() -> None:
    eps = [endpoint("10.0.0.1", 29500, addrs=("10.0.0.1",))]
    rep = run({"MASTER_ADDR": "10.0.0.1", "MASTER_PORT": "29500"}, eps=eps, remote=True, why="rank 0 is on another host",
              select=("NET",))
    f = rep.verdict()
    assert f is not None and f.code == "NET030" and f.severity.value == "error"
    assert [c.code for c in rep.findings()] == ["NET030"]  # one cause, one finding (no NET010, no NET040)


def test_single_host_job_says_nothing_about_loopback() -> None:
    eps = [endpoint("127.0.0.1", 29500, addrs=("127.0.0.1",), local=True)]
    rep = run({"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29500", "WORLD_SIZE": "2", "LOCAL_WORLD_SIZE": "2"},
              eps=eps, remote=False, select=("NET",))
    assert [f.code for f in rep.findings()] == []


def test_gloo_given_ncc_exclusion_syntax() -> None:
    rep = run({"GLOO_SOCKET_IFNAME": "^lo,docker"}, select=("NET", "ENV054"))
    f = find(rep, "NET004")
    assert f.consequence_of == "ENV054" and f.remedy.env == {"GLOO_SOCKET_IFNAME": "eth0"}
    assert "Unable to find address for: ^lo" in f.detail
    assert rep.verdict().code == "ENV054"  # the syntax error is the cause; NET004 says what gloo will do
    assert "NET001" not in [x.code for x in rep.findings()]


def test_address_where_a_name_belongs() -> None:
    rep = run({"NCCL_SOCKET_IFNAME": "192.0.2.2"}, select=("NET",))
    f = find(rep, "NET003")
    assert f.remedy.summary == "Give the interface's name instead: NCCL_SOCKET_IFNAME=eth0"
    assert "192.0.2.2 is on eth0" in f.detail
    rep = run({"GLOO_SOCKET_IFNAME": "192.0.2."}, select=("NET",))
    assert find(rep, "NET003").remedy.env == {"GLOO_SOCKET_IFNAME": "eth0"}


def test_interface_without_address() -> None:
    rep = run({"GLOO_SOCKET_IFNAME": "eth1peer"}, iface_list="multi-nic",
              host=hostname("cap", "10.201.200.10"), select=("NET",))
    f = find(rep, "NET002")
    assert f.severity.value == "error" and "eth1peer" in f.title
    assert any("eth1peer: veth" in e.text for e in f.evidence)


def test_one_character_setting() -> None:
    rep = run({"NCCL_SOCKET_IFNAME": "e"}, select=("NET",))
    f = find(rep, "NET005")
    assert f.severity.value == "warning" and f.remedy.env == {"NCCL_SOCKET_IFNAME": "eth0"}


def test_partial_nccl_list_is_a_warning_and_tensorpipe_falls_back() -> None:
    eps = [endpoint("10.0.0.1", 29500, addrs=("10.0.0.1",))]
    rep = run({"NCCL_SOCKET_IFNAME": "eth0,ens5", "TP_SOCKET_IFNAME": "ens5"}, eps=eps, remote=True,
              why="rank 0 is on another host", select=("NET001",))
    by_var = {f.title.split()[0]: f for f in rep.findings()}
    assert by_var["NCCL_SOCKET_IFNAME"].severity.value == "warning"
    assert "NCCL uses what the other entries match: eth0 192.0.2.2" in by_var["NCCL_SOCKET_IFNAME"].detail
    assert by_var["TP_SOCKET_IFNAME"].severity.value == "error"
    assert "127.0.0.1" in by_var["TP_SOCKET_IFNAME"].detail


def test_nccl_advertises_another_network_than_the_route_to_the_master() -> None:
    # multi-nic: NCCL's default picks ib0 (10.201.201.0/24) while the master is reached through eth0.
    eps = [endpoint("10.201.200.1", 29500, addrs=("10.201.200.1",), route_dev="eth0")]
    rep = run({"MASTER_ADDR": "10.201.200.1", "MASTER_PORT": "29500"}, iface_list="multi-nic",
              host=hostname("cap", "10.201.200.10"), eps=eps, remote=True, why="rank 0 is on another host", gpu=True,
              select=("NET",))
    f = find(rep, "NET040")
    assert f.title == ("MASTER_ADDR 10.201.200.1 is reached through eth0, but NCCL will use ib0 (10.201.201.10), "
                       "not on that network")
    assert f.remedy.env == {"NCCL_SOCKET_IFNAME": "eth0"} and f.severity.value == "warning"
    # Without a GPU and without NCCL settings, NCCL is not judged.
    rep = run({"MASTER_ADDR": "10.201.200.1", "MASTER_PORT": "29500"}, iface_list="multi-nic",
              host=hostname("cap", "10.201.200.10"), eps=eps, remote=True, why="x", select=("NET",))
    assert "NET040" not in [x.code for x in rep.findings()]


def test_nccl_and_gloo_on_different_networks() -> None:
    rep = run({"NCCL_SOCKET_IFNAME": "ib0"}, iface_list="multi-nic", host=hostname("cap", "10.201.200.10"),
              select=("NET020",))
    f = find(rep, "NET020")
    assert f.severity.value == "info" and "ib0 (10.201.201.0/24)" in f.title and "eth0 (10.201.200.0/24)" in f.title


def test_container_bridge_chosen_by_nccl_setting() -> None:
    eps = [endpoint("10.201.200.1", 29500, addrs=("10.201.200.1",), route_dev="eth0")]
    rep = run({"NCCL_SOCKET_IFNAME": "docker0", "MASTER_ADDR": "10.201.200.1", "MASTER_PORT": "29500"},
              iface_list="multi-nic", host=hostname("cap", "10.201.200.10"), eps=eps, remote=True,
              why="rank 0 is on another host", select=("NET",))
    f = find(rep, "NET011")
    assert f.title.startswith("NCCL will use docker0 (172.17.0.1), a container or VM bridge")
    assert f.cause == "wrong_interface" and f.remedy.env == {"NCCL_SOCKET_IFNAME": "eth0"}


def test_gloo_family_differs_from_the_master() -> None:
    eps = [endpoint("10.0.0.1", 29500, addrs=("10.0.0.1",))]
    rep = run({"MASTER_ADDR": "10.0.0.1", "MASTER_PORT": "29500"}, host=hostname("vm", "fd00::2", "192.0.2.2"),
              eps=eps, remote=True, why="rank 0 is on another host", select=("NET",))
    f = find(rep, "NET033")
    assert "fd00::2 (IPv6)" in f.title and "IPv4" in f.title


def test_hostname_that_is_not_local_and_one_that_does_not_resolve() -> None:
    eps = [endpoint("10.0.0.1", 29500, addrs=("10.0.0.1",))]
    common = dict(eps=eps, remote=True, why="rank 0 is on another host", select=("NET",))
    rep = run({"MASTER_ADDR": "10.0.0.1"}, host=hostname("vm", "10.9.9.9"), **common)  # type: ignore[arg-type]
    assert rep.verdict().code == "NET031"
    rep = run({"MASTER_ADDR": "10.0.0.1"}, host=hostname("vm", error="getaddrinfo: Name or service not known (gai error -2)"),
              **common)  # type: ignore[arg-type]
    f = rep.verdict()
    assert f.code == "NET032" and "gai error -2" in f.title


def test_no_route_blocks_the_connection_check() -> None:
    eps = [endpoint("10.99.0.1", 29500, addrs=("10.99.0.1",), route_dev=None)]
    rep = run({"MASTER_ADDR": "10.99.0.1", "MASTER_PORT": "29500"}, eps=eps, remote=True, why="x",
              host=hostname("vm", "192.0.2.2"), reach={"endpoints": [{"endpoint": eps[0]["endpoint"], "connects": []}]})
    assert rep.verdict().code == "NET050"
    assert status(rep, "rdzv.reach") == ("skipped", "blocked by NET050")
    assert status(rep, "rdzv.store") == ("skipped", "blocked by rdzv.reach (skipped)")


def test_loopback_master_addr_for_a_multi_host_job() -> None:
    eps = [endpoint("localhost", 29500, addrs=("127.0.0.1",), local=True)]
    rep = run({"MASTER_ADDR": "localhost", "MASTER_PORT": "29500", "WORLD_SIZE": "8", "LOCAL_WORLD_SIZE": "4"}, eps=eps,
              remote=True, why="the job spans hosts (WORLD_SIZE=8 > LOCAL_WORLD_SIZE=4)", select=("RDZV003",))
    f = find(rep, "RDZV003")
    assert f.title == "MASTER_ADDR=localhost is a loopback address, but the job spans hosts (WORLD_SIZE=8 > LOCAL_WORLD_SIZE=4)"
    assert "192.0.2.2" in f.remedy.summary


def test_c10d_store_not_hosted_when_hostname_is_loopback() -> None:
    eps = [endpoint("192.0.2.2", 29400, source="PET_RDZV_ENDPOINT", kind="c10d", addrs=("192.0.2.2",), local=True,
                    settings=("PET_RDZV_BACKEND=c10d", "PET_RDZV_ENDPOINT=192.0.2.2:29400"))]
    rep = run({"PET_RDZV_ENDPOINT": "192.0.2.2:29400", "PET_RDZV_BACKEND": "c10d"}, eps=eps, remote=None,
              select=("RDZV004",))
    f = find(rep, "RDZV004")
    assert "--rdzv-endpoint=vm:29400" in f.remedy.summary and "is_host=1" in f.remedy.summary
    rep = run({"PET_RDZV_ENDPOINT": "192.0.2.2:29400", "PET_RDZV_BACKEND": "c10d"}, eps=eps,
              host=hostname("vm", "192.0.2.2"), select=("RDZV004",))
    assert rep.findings() == []


def _holder(env: dict[str, str] | None = None, parents: list[int] | None = None) -> dict[str, Any]:
    return {"address": "::", "port": 29500, "pid": 4242, "name": "python", "cmdline": ["python", "train.py"],
            "env": env or {}, "ancestor": False, "parents": parents or [1]}


@pytest.mark.parametrize(("holder", "source", "want"), [
    (_holder(), "MASTER_ADDR/MASTER_PORT", "error"),
    (_holder({"MASTER_PORT": "29500"}), "MASTER_ADDR/MASTER_PORT", "warning"),  # another torch job on the port
    (_holder(parents=[77, 1]), "torchrun (pid 77)", None),  # the torchrun agent's own store
])
def test_port_holder_judgement(holder: dict[str, Any], source: str, want: str | None) -> None:
    ep = endpoint("192.0.2.2", 29500, addrs=("192.0.2.2",), local=True, source=source)
    reach = {"endpoints": [{"endpoint": ep["endpoint"], "connects": [],
                            "listeners": {"listeners": [holder]}, "bind": {"ok": False, "error": "Address in use"}}]}
    rep = run({"MASTER_ADDR": "192.0.2.2", "MASTER_PORT": "29500"}, eps=[ep], reach=reach, select=("RDZV02",))
    got = [f for f in rep.findings() if f.code == "RDZV020"]
    if want is None:
        assert got == [] and "this job's store" in next(r for r in rep.results if r.check == "rdzv.port").summary
    else:
        assert got[0].severity.value == want and "pid 4242 (python train.py)" in got[0].title
        port = got[0].remedy.env.get("MASTER_PORT") or got[0].remedy.env.get("--master-port")
        assert port is None or port != "29500"


def test_store_handshake_skipped_when_the_budget_ran_out() -> None:
    ep = endpoint("10.0.0.1", 29500, addrs=("10.0.0.1",))
    reach = {"endpoints": [{"endpoint": ep["endpoint"], "connects": [{"address": "10.0.0.1", "port": 29500,
                                                                     "outcome": "open", "elapsed_s": 0.001}]}]}
    store = {"endpoints": [{"endpoint": ep["endpoint"], "handshake": {"ok": False, "stage": "budget", "address": "10.0.0.1",
                                                                      "error": "--timeout 3 s ran out before the handshake"}}]}
    rep = run({"MASTER_ADDR": "10.0.0.1", "MASTER_PORT": "29500"}, eps=[ep], reach=reach, store=store, remote=True,
              why="x", select=("RDZV",))
    st, reason = status(rep, "rdzv.store")
    assert st == "skipped" and "larger --timeout" in reason
    assert "RDZV030" not in [f.code for f in rep.findings()]


def test_any_setting_value_gives_findings_not_crashes() -> None:
    from hypothesis import given, settings
    from hypothesis import strategies as st

    text = st.text(alphabet=st.sampled_from(list("^=,:. eth0lo19docker[]%-")), max_size=16)

    @settings(max_examples=60, deadline=None)
    @given(nccl=text, gloo=text, tp=text, fam=st.sampled_from(["", "AF_INET", "AF_INET6", "x"]))
    def one(nccl: str, gloo: str, tp: str, fam: str) -> None:
        env = {"NCCL_SOCKET_IFNAME": nccl, "GLOO_SOCKET_IFNAME": gloo, "TP_SOCKET_IFNAME": tp, "NCCL_SOCKET_FAMILY": fam}
        rep = run(env, iface_list="multi-nic", host=hostname("cap", "10.201.200.10"), gpu=True, select=("NET",))
        for f in rep.findings():
            assert f.remedy is not None and f.remedy.summary and "{" not in f.title, f.title

    one()


def test_an_nccl_exclude_list_that_leaves_no_interface_is_named() -> None:
    """NCCL_SOCKET_IFNAME=^eth,lo (prefixes to leave out) on a host whose only other interfaces hold no address:
    NCCL fails at init with "Bootstrap : no socket interface found" (the H200 capture
    fixtures/logs/nccl-ifname-exclude-all). Near-miss: ^docker,lo leaves eth0, and nothing is said."""
    rep = run({"NCCL_SOCKET_IFNAME": "^eth,lo"}, select=("NET",))
    f = find(rep, "NET001")
    assert f.title == "NCCL_SOCKET_IFNAME names 'eth', 'lo' to leave out (its leading ^), which leaves this host no " \
                      "interface with an address"
    assert f.remedy.env == {"NCCL_SOCKET_IFNAME": "eth0"} and "no socket interface found" in f.detail
    assert "NET001" not in [x.code for x in run({"NCCL_SOCKET_IFNAME": "^docker,lo"}, select=("NET",)).findings()]
