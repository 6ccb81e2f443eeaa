"""Public failure threads, round 15 (the development half; its held-out half is scored as a total only).

Readings the earlier rounds lacked: a process dialling an address on docker's default bridge from another network
(a peer that advertised its container's bridge address), and Open MPI's TCP transport dropping a connection that
arrived from an address the peer never published (masquerading, non-routed interfaces). Each rule row has a real
line from the thread and a near-miss that must not match.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from logs.test_corpus import diagnose_lines
from logs.test_rule_rows import check_row

ROWS = [
    # (rule id, real line, near-miss)
    # Open MPI's btl_tcp_proc.c at btl_base_verbose (horovod/horovod#209); its connect attempt is no failure.
    ("mpi_btl_tcp_nomatch", "[mydocker01:06805] btl: tcp: Match incoming connection from [[27443,1],1] 44.128.0.4 with "
                            "locally known IP 2.2.2.77 failed (iface 0/4)!",
     "[mydocker01:06805] btl: tcp: attempting to connect() to [[27443,1],1] address 2.2.2.77 on port 1024"),
]


@pytest.mark.parametrize("rule, line, near", ROWS, ids=[f"{r[0]}-{i}" for i, r in enumerate(ROWS)])
def test_row_matches_its_line_and_not_the_near_miss(rule: str, line: str, near: str) -> None:
    check_row(rule, line, near)


def _causes(tmp_path: Path, line: str) -> list[tuple[str, str]]:
    return [(f["code"], f["cause"]) for f in diagnose_lines(tmp_path / "ray.log", line)["findings"] if f["cause"]]


def test_a_store_on_docker_default_bridge_dialled_from_another_network(tmp_path: Path) -> None:
    """OpenRLHF/OpenRLHF#265: vLLM's Ray workers on 10.0.1.75 time out connecting to 172.17.0.2, docker's bridge."""
    line = ("(RayWorkerVllm pid=207931, ip=10.0.1.75) [E socket.cpp:922] [c10d] The client socket has timed out after "
            "1800s while trying to connect to (172.17.0.2, 44737).")
    assert _causes(tmp_path, line)[0] == ("LOG020", "wrong_interface")


def test_the_same_timeout_from_the_bridge_itself_is_not_the_bridge(tmp_path: Path) -> None:
    """From an address on the same bridge (containers of one host), 172.17.0.2 is reachable: the usual reading."""
    line = ("(RayWorkerVllm pid=207931, ip=172.17.0.3) [E socket.cpp:922] [c10d] The client socket has timed out after "
            "1800s while trying to connect to (172.17.0.2, 44737).")
    assert _causes(tmp_path, line)[0] == ("LOG011", "rendezvous_unreachable")
