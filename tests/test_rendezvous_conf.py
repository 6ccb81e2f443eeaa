"""Reading a job's rendezvous settings (commdoctor.core.rendezvous): env://, torchrun's PET_* and command lines."""

from __future__ import annotations

import os

import pytest

from commdoctor.core import rendezvous as rz


def test_env_endpoint() -> None:
    (ep,) = rz.endpoints({"MASTER_ADDR": "10.0.0.1", "MASTER_PORT": "29500"})
    assert (ep.host, ep.port, ep.kind, ep.source) == ("10.0.0.1", 29500, "env", "MASTER_ADDR/MASTER_PORT")
    assert ep.settings == ["MASTER_ADDR=10.0.0.1", "MASTER_PORT=29500"] and not ep.problems
    (ep,) = rz.endpoints({"MASTER_ADDR": "10.0.0.1"})
    assert ep.port is None and "MASTER_PORT is not set" in ep.problems[0]
    (ep,) = rz.endpoints({"MASTER_ADDR": "10.0.0.1", "MASTER_PORT": "29500x"})
    assert ep.port is None and "not a port number" in ep.problems[0]


def test_torchrun_env_endpoints() -> None:
    (ep,) = rz.endpoints({"PET_RDZV_BACKEND": "c10d", "PET_RDZV_ENDPOINT": "node1"})
    assert (ep.host, ep.port, ep.kind) == ("node1", 29400, "c10d")  # c10d's default port
    (ep,) = rz.endpoints({"PET_RDZV_BACKEND": "c10d", "PET_RDZV_ENDPOINT": "[fd00::1]:1234"})
    assert (ep.host, ep.port) == ("fd00::1", 1234) and ep.label == "[fd00::1]:1234"
    (ep,) = rz.endpoints({"PET_MASTER_ADDR": "10.0.0.2", "PET_MASTER_PORT": "23456"})
    assert (ep.host, ep.port, ep.kind) == ("10.0.0.2", 23456, "env")  # static rendezvous: the master's store
    assert rz.endpoints({"PET_RDZV_BACKEND": "c10d", "PET_RDZV_ENDPOINT": "localhost:0"}) == []  # single node
    (ep,) = rz.endpoints({"PET_RDZV_BACKEND": "etcd", "PET_RDZV_ENDPOINT": "etcd.local"})
    assert (ep.port, ep.kind) == (2379, "etcd")


def test_duplicates_collapse() -> None:
    eps = rz.endpoints({"MASTER_ADDR": "10.0.0.1", "MASTER_PORT": "29500", "PET_MASTER_ADDR": "10.0.0.1",
                        "PET_MASTER_PORT": "29500"})
    assert len(eps) == 1


@pytest.mark.parametrize(("argv", "want"), [
    (["/usr/bin/python3", "/usr/local/bin/torchrun", "--nnodes", "2", "--rdzv-backend=c10d",
      "--rdzv-endpoint", "10.0.0.1:29400", "--max-restarts", "3", "train.py", "--master-port", "1"],
     {"nnodes": "2", "rdzv_backend": "c10d", "rdzv_endpoint": "10.0.0.1:29400"}),
    (["python", "-m", "torch.distributed.run", "--nproc_per_node=8", "--master_addr=10.1.1.1",
      "--master_port", "23456", "-m", "pkg.train"],
     {"nproc_per_node": "8", "master_addr": "10.1.1.1", "master_port": "23456"}),
    (["torchrun", "--standalone", "--nproc-per-node", "4", "t.py"], {"standalone": "1", "nproc_per_node": "4"}),
    (["python", "train.py", "--rdzv-endpoint", "x:1"], None),
])
def test_parse_torchrun_argv(argv: list[str], want: dict[str, str] | None) -> None:
    assert rz.parse_torchrun_argv(argv) == want


def test_agents_become_endpoints() -> None:
    agents = [{"pid": 7, "cmdline": ["torchrun", "--nnodes=2", "--master-addr", "10.2.2.2", "--master-port", "29555",
                                     "t.py"]},
              {"pid": 8, "cmdline": ["torchrun", "--standalone", "t.py"]}]
    (ep,) = rz.endpoints({}, agents)
    assert (ep.host, ep.port, ep.source) == ("10.2.2.2", 29555, "torchrun (pid 7)")
    assert "--master-addr=10.2.2.2" in ep.settings


@pytest.mark.parametrize(("env", "local", "want"), [
    ({}, None, None),
    ({"WORLD_SIZE": "4", "LOCAL_WORLD_SIZE": "4"}, True, False),
    ({"WORLD_SIZE": "8", "LOCAL_WORLD_SIZE": "4"}, True, True),
    ({"PET_NNODES": "1:4"}, True, True),
    ({"PET_NNODES": "1"}, True, False),
    ({"SLURM_NNODES": "2"}, None, True),
    ({}, False, True),
    ({}, True, None),
])
def test_peers_remote(env: dict[str, str], local: bool | None, want: bool | None) -> None:
    assert rz.peers_remote(env, local)[0] is want


def test_torchrun_is_host_uses_the_hostname_not_the_interfaces() -> None:
    # endpoint given as this host's interface address, hostname resolving to the Debian 127.0.1.1 line
    assert not rz.torchrun_is_host("10.0.0.5", "node1", [("node1", "127.0.1.1")], ["10.0.0.5"])
    assert rz.torchrun_is_host("10.0.0.5", "node1", [("node1", "10.0.0.5")], ["10.0.0.5"])
    assert rz.torchrun_is_host("node1", "node1", [], [])
    assert rz.torchrun_is_host("localhost", "x", [], [])
    assert rz.torchrun_is_host("node1.example", "node1", [("node1.example", "10.0.0.5")], ["10.0.0.5"])
    assert rz.torchrun_is_host("alias", "node1", [("node1", "10.0.0.5")], ["10.0.0.5"])  # same address


def test_parse_endpoint_problems() -> None:
    assert rz.parse_endpoint("h:abc", 29400)[2] is not None
    assert rz.parse_endpoint("[fd00::1", 29400)[2] is not None
    assert rz.parse_endpoint("", 29400) == ("localhost", 29400, None)


def test_a_torchrun_agent_running_here_is_checked_unless_told_to_leave_other_jobs_alone() -> None:
    """A live process that looks like another job's torchrun agent (its argv names the master): a plain
    ``commdoctor run`` checks that job's rendezvous; with COMMDOCTOR_FIND_JOBS=0 it leaves it alone (a shared
    node; this suite, whose tests run jobs side by side)."""
    import json
    import socket
    import subprocess
    import sys
    import time

    import psutil

    from tests.conftest import REPO

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    agent = subprocess.Popen(["bash", "-c", f"exec -a torchrun {sys.executable} -c 'import time; time.sleep(60)' "
                                            f"--master-addr 127.0.0.1 --master-port {port} train.py"])
    try:
        for _ in range(100):
            try:
                if psutil.Process(agent.pid).cmdline()[:1] == ["torchrun"]:
                    break
            except psutil.Error:
                pass
            time.sleep(0.05)
        base = {k: v for k, v in os.environ.items() if not k.startswith(("MASTER_", "PET_", "COMMDOCTOR_FIND"))}
        docs = {}
        for find in ("1", "0"):
            p = subprocess.run([sys.executable, "-m", "commdoctor", "run", "--json", "--select", "RDZV"], cwd=str(REPO),
                               env={**base, "PYTHONPATH": str(REPO), "COMMDOCTOR_FIND_JOBS": find},
                               capture_output=True, text=True, timeout=120)
            docs[find] = {r["check"]: r for r in json.loads(p.stdout)["results"]}
    finally:
        agent.kill()
        agent.wait(5)
    found = docs["1"]["rdzv.endpoint"]
    assert found["status"] == "passed" and f"torchrun (pid {agent.pid}) 127.0.0.1:{port}" in found["summary"], found
    left = docs["0"]["rdzv.endpoint"]
    assert left["status"] == "skipped" and "no rendezvous is configured here" in left["reason"], left
