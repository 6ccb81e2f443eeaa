"""net.mpi over the environment of a real process: what commdoctor run reports and checks for MPI and UCX settings.

mpirun and srun are not installed here; the launchers' variables are set on the real `commdoctor run`
process, which reads them exactly as it would under mpirun. Interface names come from this host.
"""

from __future__ import annotations

import pytest

from commdoctor.checks.mpi import launcher_context, selected
from commdoctor.core import netselect as ns
from commdoctor.probes import net
from tests.conftest import findings, result, run_json


def _up() -> str:
    """A running interface of this host with an IPv4 address other than loopback (eth0 here)."""
    for i in ns.interfaces_from(net.interfaces()):
        if i.running and i.kind != "loopback" and i.first(ns.INET):
            return i.name
    return "lo"


def _run(env: dict[str, str]) -> dict:
    doc, p = run_json("run", "--no-tui", "--select", "NET06", env=env, timeout=120)
    assert "Traceback" not in p.stderr
    return doc


def test_open_mpi_context_and_missing_interface() -> None:
    doc = _run({"OMPI_COMM_WORLD_RANK": "1", "OMPI_COMM_WORLD_SIZE": "4", "OMPI_COMM_WORLD_LOCAL_RANK": "1",
                "OMPI_COMM_WORLD_LOCAL_SIZE": "2", "OMPI_MCA_pml": "ob1", "OMPI_MCA_btl_tcp_if_include": "eth9"})
    r = result(doc, "net.mpi")
    assert "Open MPI rank 1 of 4 (local 1 of 2)" in r["summary"] and "pml=ob1" in r["summary"]
    [f] = findings(doc, "NET060")
    assert "eth9" in f["title"] and f["cause"] == "wrong_interface"
    assert f["remedy"]["env"] == {"OMPI_MCA_btl_tcp_if_include": _up()}
    assert "OMPI_MCA_oob_tcp_if_include" in f["detail"]  # the Open MPI settings, not NCCL's or gloo's


def test_cidr_must_match_the_interface_network_exactly() -> None:
    up = _up()
    i = next(x for x in ns.interfaces_from(net.interfaces()) if x.name == up)
    a = i.first(ns.INET)
    assert a is not None and a.prefixlen
    import ipaddress

    exact = str(ipaddress.ip_network(f"{a.address}/{a.prefixlen}", strict=False))
    wider = str(ipaddress.ip_network(f"{a.address}/{max(a.prefixlen - 8, 1)}", strict=False))
    assert findings(_run({"OMPI_MCA_btl_tcp_if_include": exact}), "NET060") == []
    [f] = findings(_run({"OMPI_MCA_btl_tcp_if_include": wider}), "NET060")
    assert wider in f["title"]


def test_exclude_list_without_loopback_and_both_lists() -> None:
    doc = _run({"OMPI_MCA_btl_tcp_if_exclude": "docker0", "OMPI_MCA_btl_tcp_if_include": _up()})
    [w] = findings(doc, "NET063")
    assert w["remedy"]["env"] == {"OMPI_MCA_btl_tcp_if_exclude": "lo,docker0"}
    assert findings(doc, "NET062")
    assert findings(_run({"OMPI_MCA_btl_tcp_if_exclude": "lo,docker0"}), "NET063") == []


def test_ucx_device_missing_and_libraries_disagree() -> None:
    doc = _run({"UCX_NET_DEVICES": "mlx5_0:1", "UCX_TLS": "rc,sm,self", "NCCL_SOCKET_IFNAME": "lo",
                "OMPI_MCA_btl_tcp_if_include": _up()})
    [f] = findings(doc, "NET065")
    assert "mlx5_0:1" in f["title"] and f["cause"] == "ib_misconfig"
    [d] = findings(doc, "NET064")
    assert "NCCL_SOCKET_IFNAME=lo" in d["title"] and "OMPI_MCA_btl_tcp_if_include" in d["title"]
    assert "UCX_NET_DEVICES=mlx5_0:1" in result(doc, "net.mpi")["summary"]


def test_down_interface_named_for_hydra() -> None:
    down = next((i.name for i in ns.interfaces_from(net.interfaces()) if not i.up), None)
    if down is None:
        pytest.skip("every interface of this host is up")
    [f] = findings(_run({"HYDRA_IFACE": down, "PMI_RANK": "0", "PMI_SIZE": "2"}), "NET061")
    assert down in f["title"] and "down" in f["title"]


def test_no_mpi_variables_no_findings() -> None:
    doc = _run({})
    assert findings(doc) == [] and "no MPI" in result(doc, "net.mpi")["summary"]


def test_context_words_for_slurm_and_pmi() -> None:
    ctx = launcher_context({"SLURM_JOB_ID": "77", "SLURM_PROCID": "3", "SLURM_NTASKS": "8", "SLURM_JOB_NODELIST": "n[1-2]",
                            "PMI_RANK": "3", "PMI_SIZE": "8", "MPI_LOCALRANKID": "1", "I_MPI_HYDRA_IFACE": "ib0"})
    assert ctx["slurm"] == {"job": "77", "rank": "3", "ntasks": "8", "nodes": "n[1-2]"}
    assert ctx["pmi"]["local_rank"] == "1" and ctx["hydra"] == {"I_MPI_HYDRA_IFACE": "ib0"}


def test_ucx_grammar() -> None:
    ifaces = ns.interfaces_from(net.interfaces())
    hit, missing, rdma = selected("ucx", f"{_up()},mlx5_1:1,nosuch0", ifaces)
    assert hit == {_up()} and missing == ["nosuch0"] and rdma == ["mlx5_1:1"]
    assert selected("ucx", "all", ifaces)[0] == {i.name for i in ifaces}
