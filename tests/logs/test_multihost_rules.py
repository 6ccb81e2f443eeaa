"""What decides the verdict of a two-host job, on real lines of fixtures/logs/multihost (torch 2.13, gloo).

Each test has the lines that give the cause and a near-miss where one fact is missing and the verdict must
not follow: the rank whose own code raised is the root cause and the barrier that named it is the echo; a
store connect that timed out while the store's own host shows it listening is a drop (or a name this host
cannot resolve), not a store that is absent.
"""

from __future__ import annotations

from pathlib import Path

from logs.test_corpus import diagnose_file

STORE_WAITED = ("Traceback (most recent call last):\n"
                "torch.distributed.DistStoreError: Timed out after 31 seconds waiting for clients. 1/2 clients joined.\n")
TIMED_OUT = ("[E1127 14:38:37.016141373 socket.cpp:1028] [c10d] The client socket has timed out after 30000ms while trying "
             "to connect to (10.209.28.1, 29500).\n")
NAME_TIMED_OUT = ("[W1127 14:41:53.862918500 socket.cpp:764] [c10d] The IPv6 network addresses of (trainmaster, 29500) cannot "
                  "be retrieved (gai error: -3 - Temporary failure in name resolution).\n"
                  "[E1127 14:42:15.761169273 socket.cpp:1028] [c10d] The client socket has timed out after 30000ms while "
                  "trying to connect to (trainmaster, 29500).\n")
NO_ROUTE = ("[W1127 14:38:24.420143530 socket.cpp:764] [c10d] The client socket has failed to connect to [::]:60570 "
            "(errno: 113 - No route to host).\n")
BARRIER = ("[rank0]:[E1127 14:36:05.790244404 ProcessGroupGloo.cpp:2901] [Rank 0]: Rank 1 failed to pass monitoredBarrier "
           "in 10000 ms\n[rank0]: RuntimeError: [Rank 0]: Ranks 1 failed to pass monitoredBarrier in 10000 ms\n")
RAISED = ("[rank1]: Traceback (most recent call last):\n"
          "[rank1]: ValueError: batch 3 has 0 samples after filtering (rank 1)\n")


def _causes(tmp_path: Path, **files: str) -> list[str]:
    d = tmp_path / "logs"
    d.mkdir()
    for name, text in files.items():
        (d / f"{name}.log").write_text(text)
    return [f["cause"] for f in diagnose_file(d)["findings"] if f.get("cause")]


def test_store_up_and_connect_silently_timed_out_is_a_firewall(tmp_path: Path) -> None:
    assert _causes(tmp_path, node0=STORE_WAITED, node1=TIMED_OUT)[0] == "firewall_or_port_blocked"


def test_without_the_store_hosts_log_it_stays_unreachable(tmp_path: Path) -> None:
    assert _causes(tmp_path, node1=TIMED_OUT)[0] == "rendezvous_unreachable"


def test_no_route_to_host_is_a_wrong_address_not_a_firewall(tmp_path: Path) -> None:
    assert _causes(tmp_path, node0=STORE_WAITED, node1=NO_ROUTE + TIMED_OUT)[0] == "rendezvous_unreachable"


def test_store_up_and_its_name_unknown_here_is_hostname_resolution(tmp_path: Path) -> None:
    assert _causes(tmp_path, node0=STORE_WAITED, node1=NAME_TIMED_OUT)[0] == "hostname_resolution"


def test_unknown_name_without_the_store_hosts_log_is_not_hostname_resolution(tmp_path: Path) -> None:
    assert _causes(tmp_path, node1=NAME_TIMED_OUT)[0] != "hostname_resolution"


def test_barrier_naming_a_rank_that_raised_is_its_echo(tmp_path: Path) -> None:
    assert _causes(tmp_path, node0=BARRIER, node1=RAISED)[0] == "peer_process_died"


def test_barrier_naming_a_rank_that_did_not_fail_is_a_straggler(tmp_path: Path) -> None:
    assert _causes(tmp_path, node0=BARRIER, node1="rank 1: step 2 loss 0.3333\n")[0] == "collective_timeout_straggler"


def test_a_distributed_error_is_not_a_rank_raising_on_its_own(tmp_path: Path) -> None:
    other = RAISED.replace("ValueError: batch 3 has 0 samples after filtering (rank 1)",
                           "torch.distributed.DistNetworkError: The client socket has timed out after 30000ms")
    assert _causes(tmp_path, node0=BARRIER, node1=other)[0] != "peer_process_died"
