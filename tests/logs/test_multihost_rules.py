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


# Lines of the DETAIL runs (TORCH_DISTRIBUTED_DEBUG=DETAIL, TORCH_CPP_LOG_LEVEL=INFO) of the same jobs.
RETRY = ("[I1127 14:41:53.739784833 socket.cpp:931] [c10d - trace] The server socket on [79d0:0:a61b:0:55f6::]:41197 "
         "is not yet listening (errno: 111 - Connection refused), will retry.\n")
CONNECTED = "[I1127 14:41:53.038158423 TCPStore.cpp:316] [c10d - debug] TCP client connected to host 10.209.11.1:29500\n"
MESH = ("[E1127 14:42:54.035900568 ProcessGroupGloo.cpp:67] Gloo connectFullMesh failed with [/__w/pytorch/pytorch/"
        "third_party/gloo/gloo/transport/tcp/pair.h:311] Connect timeout [none]\n")
NAME_REFUSED = (RETRY * 3 + "[E1127 14:43:33.741748491 socket.cpp:1028] [c10d] The client socket has timed out after "
                "30000ms while trying to connect to (trainmaster, 29500).\n")
WRAPPER = ("[rank1]: RuntimeError: ProcessGroupWrapper: Monitored Barrier encountered error running collective: "
           "CollectiveFingerPrint(SequenceNumber=4, OpType=ALLREDUCE, TensorShape=[1024], TensorDtypes=Float). Error: \n"
           "[rank1]: [/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:553] Connection closed by peer "
           "[10.209.21.1]:7092. This is typically caused by a remote worker crashing.\n")
AGENT_KEYS = ("torch.distributed.DistStoreError: wait timeout after 30000ms, keys: /none/torchelastic/role_info/0, "
              "/none/torchelastic/role_info/1\n")


def test_a_store_refusal_retried_past_is_not_the_cause(tmp_path: Path) -> None:
    assert _causes(tmp_path, node0=MESH, node1=RETRY + CONNECTED + MESH)[0] == "firewall_or_port_blocked"


def test_a_store_refusal_never_retried_past_still_counts(tmp_path: Path) -> None:
    assert "rendezvous_unreachable" in _causes(tmp_path, node0=MESH, node1=RETRY + MESH)


def test_store_up_and_its_name_refused_here_is_hostname_resolution(tmp_path: Path) -> None:
    assert _causes(tmp_path, node0=STORE_WAITED, node1=NAME_REFUSED)[0] == "hostname_resolution"


def test_store_up_and_an_address_refused_is_not_hostname_resolution(tmp_path: Path) -> None:
    by_ip = NAME_REFUSED.replace("(trainmaster, 29500)", "(10.209.31.2, 29500)")
    assert _causes(tmp_path, node0=STORE_WAITED, node1=by_ip)[0] == "rendezvous_unreachable"


def test_the_detail_wrappers_barrier_error_is_not_a_mismatch(tmp_path: Path) -> None:
    assert _causes(tmp_path, node0=BARRIER, node1=WRAPPER)[0] == "collective_timeout_straggler"


def test_a_real_mismatch_under_detail_still_is_one(tmp_path: Path) -> None:
    real = ("[rank1]: RuntimeError: Detected mismatch between collectives on ranks. Rank 1 is running collective: "
            "CollectiveFingerPrint(SequenceNumber=4, OpType=BROADCAST, TensorShape=[1024], TensorDtypes=Float), but Rank 0 "
            "is running collective: CollectiveFingerPrint(SequenceNumber=4, OpType=ALLREDUCE).\n")
    assert _causes(tmp_path, node0=BARRIER, node1=real)[0] == "collective_mismatch"


def test_agents_waiting_for_each_others_node_keys_is_a_launcher_misconfig(tmp_path: Path) -> None:
    assert _causes(tmp_path, node0=AGENT_KEYS, node1=AGENT_KEYS)[0] == "launcher_misconfig"


def test_a_store_wait_for_the_programs_own_keys_is_not(tmp_path: Path) -> None:
    own = AGENT_KEYS.replace("/none/torchelastic/role_info/0, /none/torchelastic/role_info/1", "/default_pg/0//cpu//0")
    assert _causes(tmp_path, node0=own)[0] == "collective_timeout_straggler"


# Without DETAIL gloo says only that rank 0's recv timed out and rank 1's connection closed; the launchers' exit
# times (each host's "failed (exitcode: 1)" line) tell whether rank 1 was blocked in a collective then or away.
RECV_TIMEOUT = ("[rank0]: RuntimeError: [/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:78] "
                "Timed out waiting 10000ms for recv operation to complete\n")
CLOSED = ("[rank1]: RuntimeError: [/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:553] Connection closed "
          "by peer [10.209.22.1]:27531. This is typically caused by a remote worker crashing.\n")
AGENT = ("E1127 {t} 22126 site-packages/torch/distributed/elastic/multiprocessing/api.py:1002] failed (exitcode: 1) "
         "local_rank: 0 (pid: 22363) of binary: /root/.pyenv/versions/3.11.7/bin/python\n")


def test_a_peer_that_lost_its_connection_as_the_waiter_gave_up_was_in_another_collective(tmp_path: Path) -> None:
    got = _causes(tmp_path, node0=RECV_TIMEOUT + AGENT.format(t="14:37:18.186000"),
                  node1=CLOSED + AGENT.format(t="14:37:18.098000"))
    assert got[0] == "collective_mismatch"


def test_a_peer_that_met_the_closed_connection_later_was_late(tmp_path: Path) -> None:
    got = _causes(tmp_path, node0=RECV_TIMEOUT + AGENT.format(t="14:36:53.043000"),
                  node1=CLOSED + AGENT.format(t="14:37:06.841000"))
    assert got[0] == "collective_timeout_straggler"


# TORCH_CPP_LOG_LEVEL=INFO without DETAIL: torch logs a refused connect to the store as "No socket on (H, P) is
# listening yet, will retry", and the store's own host the address it reached it at.
STORE_HOST = ("[I1127 14:50:48.260881587 TCPStore.cpp:271] [c10d - debug] The server has started on port = 29500.\n"
              "[I1127 14:50:48.261505562 TCPStore.cpp:316] [c10d - debug] TCP client connected to host 10.209.20.1:29500\n"
              + STORE_WAITED)
OWN_ADDRESS = ("[E1127 14:51:13.279250509 socket.cpp:1028] [c10d] The client socket has timed out after 30000ms while "
               "trying to connect to (10.209.20.2, 29500).\n"
               "[I1127 14:51:40.271059614 socket.cpp:881] [c10d] No socket on (10.209.20.2, 29500) is listening yet, "
               "will retry.\n")


def test_a_rank_timing_out_on_another_address_than_the_stores_had_a_wrong_address(tmp_path: Path) -> None:
    assert _causes(tmp_path, node0=STORE_HOST, node1=OWN_ADDRESS)[0] == "rendezvous_unreachable"


def test_a_silent_timeout_on_the_stores_own_address_is_a_firewall(tmp_path: Path) -> None:
    same = OWN_ADDRESS.split("\n")[0].replace("10.209.20.2", "10.209.20.1") + "\n"
    assert _causes(tmp_path, node0=STORE_HOST, node1=same)[0] == "firewall_or_port_blocked"


def test_nothing_listening_at_the_stores_name_here_is_hostname_resolution(tmp_path: Path) -> None:
    by_name = OWN_ADDRESS.replace("10.209.20.2", "trainmaster")
    store = STORE_HOST.replace("host 10.209.20.1:29500", "host trainmaster:29500")
    assert _causes(tmp_path, node0=store, node1=by_name)[0] == "hostname_resolution"


def test_an_error_of_the_communication_stack_is_not_the_programs_own(tmp_path: Path) -> None:
    other = RAISED.replace("ValueError: batch 3 has 0 samples after filtering (rank 1)",
                           "RuntimeError: NCCL communicator was aborted on rank 1.")
    assert "peer_process_died" not in _causes(tmp_path, node0=BARRIER, node1=other)[:1]


# Round 2 (bench/multihost_logs/gen.py ifname-lo, wrong-port, link-down): real lines of those jobs; the timed-out
# connect is wrong-port's, with the lab's address of the store lines' job (192.168.171.1) so that only the port differs.
STORE_ON_29500 = ("[I1127 17:39:08.166102034 TCPStore.cpp:271] [c10d - debug] The server has started on port = 29500.\n"
                  "[I1127 17:39:08.166701422 TCPStore.cpp:316] [c10d - debug] TCP client connected to host "
                  "192.168.171.1:29500\n")
TIMED_OUT_29501 = ("[E1127 17:35:56.751216428 socket.cpp:1028] [c10d] The client socket has timed out after 30000ms while "
                   "trying to connect to (192.168.171.1, 29501).\n")


def test_a_rank_trying_another_port_than_the_store_listens_on_has_a_wrong_master_port(tmp_path: Path) -> None:
    assert _causes(tmp_path, node0=STORE_ON_29500 + STORE_WAITED, node1=TIMED_OUT_29501)[0] == "rendezvous_unreachable"


def test_a_silent_timeout_on_the_port_the_store_listens_on_stays_a_firewall(tmp_path: Path) -> None:
    same = TIMED_OUT_29501.replace("29501", "29500")
    assert _causes(tmp_path, node0=STORE_ON_29500 + STORE_WAITED, node1=same)[0] == "firewall_or_port_blocked"


CUT_OFF = ("[rank0]:[E1127 17:38:12.832135261 ProcessGroupGloo.cpp:2901] [Rank 0]: Rank 2 failed to pass monitoredBarrier "
           "in 10000 ms\n[rank0]:[E1127 17:38:12.832163568 ProcessGroupGloo.cpp:2901] [Rank 0]: Rank 3 failed to pass "
           "monitoredBarrier in 10000 ms\n[rank0]:[E1127 17:38:12.832169371 ProcessGroupGloo.cpp:67] [Rank 0]: Ranks 2, 3 "
           "failed to pass monitoredBarrier in 10000 ms\n")
THERE = ("[rank3]:[E1127 17:38:12.827189622 ProcessGroupGloo.cpp:67] Rank 3 successfully reached monitoredBarrier, but "
         "received errors while waiting for send/recv from rank 0. Please check rank 0 logs for faulty rank.\n"
         "[rank2]:[E1127 17:38:12.834947542 ProcessGroupGloo.cpp:67] Rank 2 successfully reached monitoredBarrier, but "
         "received errors while waiting for send/recv from rank 0. Please check rank 0 logs for faulty rank.\n")


def test_ranks_named_by_the_barrier_that_say_they_were_there_meanwhile_lost_the_network(tmp_path: Path) -> None:
    assert _causes(tmp_path, node0=CUT_OFF, node1=THERE)[0] == "hardware_fault"


def test_a_named_rank_that_reached_the_barrier_only_later_was_late(tmp_path: Path) -> None:
    late = THERE.replace("17:38:12.8", "17:38:27.8")
    assert _causes(tmp_path, node0=CUT_OFF, node1=late)[0] == "collective_timeout_straggler"


def test_one_named_rank_never_there_is_not_a_network_cut(tmp_path: Path) -> None:
    only3 = THERE.splitlines(keepends=True)[0]
    assert _causes(tmp_path, node0=CUT_OFF, node1=only3)[0] != "hardware_fault"


# healthy-uneven-2 (host b's log): b's worker finished, then its launcher's exit barrier lost the store, whose host
# (the master) had finished first and closed it. torchrun logs that with logger.exception and exits 0.
_AGENT = 'E1127 17:43:46.451000 7330 site-packages/torch/distributed/elastic/agent/server/api.py:1008] '
EXIT_BARRIER = ("rank 2: done\n"
                '[W1127 17:43:46.092916666 TCPStore.cpp:138] [c10d] recvValueWithTimeout failed on SocketImpl(fd='
                '3, addr=[2c01::30df:438a:fe7f:0]:35395, remote=[6f98:ae59:8c55:0:9a:ae59:8c55:0]:21634): Failed '
                'to recv, got 0 bytes. Connection was likely closed. Did the remote server shutdown or crash?' "\n"
                + _AGENT + 'Error waiting on exit barrier. Elapsed: 0.015603303909301758 seconds' + "\n"
                + _AGENT + 'Traceback (most recent call last):' + "\n"
                + _AGENT + '  File "/root/.pyenv/versions/3.11.7/lib/python3.11/site-packages/torch/distributed/elastic/agen'
                't/server/api.py", line 994, in _exit_barrier' + "\n"
                + _AGENT + '    store_util.barrier(' + "\n"
                + _AGENT + '  File "/root/.pyenv/versions/3.11.7/lib/python3.11/site-packages/torch/distributed/elastic/util'
                's/store.py", line 201, in barrier' + "\n"
                + _AGENT + '    store.wait([last_member_key])' + "\n"
                + _AGENT + 'torch.distributed.DistNetworkError: Failed to recv, got 0 bytes. Connection was likely closed. D'
                'id the remote server shutdown or crash?' + "\n"
                )


def test_a_launchers_failed_exit_barrier_after_its_workers_finished_is_no_failure(tmp_path: Path) -> None:
    d = tmp_path / "logs"
    d.mkdir()
    (d / "node1.log").write_text(EXIT_BARRIER)
    doc = diagnose_file(d)
    assert [f["code"] for f in doc["findings"] if f.get("cause") or f["code"] == "LOG080"] == []


def test_the_same_closed_connection_outside_the_exit_barrier_still_counts(tmp_path: Path) -> None:
    lines = EXIT_BARRIER.splitlines()
    other = "\n".join(x for x in lines if "Error waiting on exit barrier" not in x) + "\n"  # a record of its own
    assert _causes(tmp_path, node1=other)[0] == "peer_process_died"


# rank-exits-2: rank 3 (host b) ends itself with sys.exit(3) and logs nothing; rank 0's barrier names it.
FIX = Path(__file__).resolve().parents[2] / "fixtures" / "logs" / "multihost"


def test_a_named_rank_that_exited_with_its_own_status_having_logged_nothing_ended_itself(tmp_path: Path) -> None:
    logs = FIX / "rank-exits-2" / "logs"
    d = tmp_path / "logs"
    d.mkdir()
    for f in logs.iterdir():
        (d / f.name).write_text(f.read_text())
    first = diagnose_file(d)["findings"][0]
    assert first["cause"] == "peer_process_died" and "rank 3" in first["title"] and "logged no error" in first["title"]


def test_a_rank_that_exited_with_status_1_after_an_error_of_its_own_is_not_said_to_have_ended_itself(tmp_path: Path) -> None:
    logs = FIX / "rank-exits-2" / "logs"
    d = tmp_path / "logs"
    d.mkdir()
    (d / "node0.log").write_text((logs / "node0.log").read_text())
    own = ("[E1127 17:49:47.016141373 ProcessGroupGloo.cpp:67] [/__w/pytorch/pytorch/third_party/gloo/gloo/transport/"
           "tcp/unbound_buffer.cc:78] Timed out waiting 10000ms for recv operation to complete\n")
    (d / "node1.log").write_text(own + (logs / "node1.log").read_text())
    assert all("logged no error" not in f["title"] for f in diagnose_file(d)["findings"])


# A crash loop (bench/multihost_logs crash-loop-2: torchrun --max-restarts 2, rank 3 raises at step 3 every attempt):
# host b's launcher reports the failed worker, starts the workers again, and their mesh is refused by peers of the
# failed attempt. The refusal after the restart is that failure's echo; without the launcher's line before it, the
# same refusal is a network problem of its own.
AGENT_FAILED = ("E1127 20:38:12.350000 31167 site-packages/torch/distributed/elastic/multiprocessing/api.py:1002] failed "
                "(exitcode: 1) local_rank: 1 (pid: 31193) of binary: /root/.pyenv/versions/3.11.7/bin/python\n")
MESH_REFUSED = ("[E1127 20:38:14.268456007 ProcessGroupGloo.cpp:67] Gloo connectFullMesh failed with [/__w/pytorch/pytorch/"
                "third_party/gloo/gloo/transport/tcp/pair.cc:152] timed out connecting: SO_ERROR: Connection refused, "
                "remote=[10.209.127.1]:3488$3\n"
                "RuntimeError: Gloo connectFullMesh failed with [/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/"
                "pair.cc:152] timed out connecting: SO_ERROR: Connection refused, remote=[10.209.127.1]:3488$3\n")


def test_a_restarted_groups_refused_mesh_is_the_first_failures_echo(tmp_path: Path) -> None:
    got = _causes(tmp_path, node1=RAISED + AGENT_FAILED + MESH_REFUSED)
    assert got[0] == "peer_process_died"


def test_a_refused_mesh_with_no_failed_attempt_before_it_is_the_network(tmp_path: Path) -> None:
    got = _causes(tmp_path, node1=MESH_REFUSED + RAISED + AGENT_FAILED)
    assert got[0] == "wrong_interface"


# A rank late to init_process_group (bench/multihost_logs late-init-1: rank 1 sleeps 30 s first). Host a's rank 0 gives
# up waiting for rank 1's key, its launcher reports the failure and takes the store down; rank 1 then finds no store.
# Its connect failures, later by the clock than the store host's failure, are the echo; earlier, they are the cause.
A_WAITED = ("torch.distributed.DistStoreError: wait timeout after 10000ms, keys: /default_pg/0//cpu//0/1\n"
            "E1127 20:36:51.554000 29515 site-packages/torch/distributed/elastic/multiprocessing/api.py:1002] failed "
            "(exitcode: 1) local_rank: 0 (pid: 29528) of binary: /root/.pyenv/versions/3.11.7/bin/python\n")
B_NO_STORE = ("[W1127 {t} socket.cpp:764] [c10d] The client socket has failed to connect to 173.85.0.0:1203 (errno: 113 - "
              "No route to host).\n"
              "[E1127 {t} socket.cpp:818] [c10d] The client socket has failed to connect to any network address of "
              "(10.209.124.1, 29500).\n"
              "[E1127 {t} TCPStore.cpp:328] [c10d] TCP client failed to connect/validate to host 10.209.124.1:29500 - "
              "timed out (try=1, timeout=10000ms): The client socket has failed to connect to any network address of "
              "(10.209.124.1, 29500).\n")


def test_a_rank_that_finds_the_store_gone_after_its_host_failed_is_the_echo(tmp_path: Path) -> None:
    got = _causes(tmp_path, node0=A_WAITED, node1=B_NO_STORE.format(t="20:37:17.203287610"))
    assert got[0] == "collective_timeout_straggler"


def test_a_rank_that_could_not_reach_the_store_before_anything_failed_is_the_cause(tmp_path: Path) -> None:
    got = _causes(tmp_path, node0=A_WAITED, node1=B_NO_STORE.format(t="20:36:41.203287610"))
    assert got[0] == "rendezvous_unreachable"


# Two launchers that each timed out in the c10d rendezvous (bench/multihost_logs rdzv-id-1: host b's --rdzv-id
# differs): both were up and reached the store, and neither found the other. One node's timeout alone says only that
# the others never came.
RDZV_TIMED_OUT = ("Traceback (most recent call last):\n"
                  "torch.distributed.elastic.rendezvous.api.RendezvousTimeoutError\n")


def test_every_node_timing_out_in_the_rendezvous_is_a_launcher_mismatch(tmp_path: Path) -> None:
    assert _causes(tmp_path, node0=RDZV_TIMED_OUT, node1=RDZV_TIMED_OUT)[0] == "launcher_misconfig"


def test_one_node_timing_out_in_the_rendezvous_stays_unreachable(tmp_path: Path) -> None:
    assert _causes(tmp_path, node0=RDZV_TIMED_OUT)[0] == "rendezvous_unreachable"
    (tmp_path / "b").mkdir()
    got = _causes(tmp_path / "b", node0=RDZV_TIMED_OUT, node1=TIMED_OUT + RDZV_TIMED_OUT)
    assert got[0] != "launcher_misconfig"


# torch.multiprocessing.spawn on each host (bench/multihost_logs --capture spawn-tcp, mismatch-op-1): no rank prefixes,
# both ranks time out in a gloo recv; only their tracebacks say one waited in all_reduce and the other in broadcast.
SPAWN_TIMEOUT = ("Traceback (most recent call last):\n"
                 "torch.multiprocessing.spawn.ProcessRaisedException: \n\n"
                 "-- Process 0 terminated with the following error:\n"
                 "Traceback (most recent call last):\n"
                 '  File "/work/wt/multihost3/bench/multihost_logs/worker.py", line 100, in <module>\n'
                 "    dist.{call}\n"
                 '  File "/root/.pyenv/versions/3.11.7/lib/python3.11/site-packages/torch/distributed/c10d_logger.py", '
                 "line 83, in wrapper\n"
                 "    return func(*args, **kwargs)\n"
                 '  File "/root/.pyenv/versions/3.11.7/lib/python3.11/site-packages/torch/distributed/distributed_c10d.py", '
                 "line {line}, in {fn}\n"
                 "    work.wait()\n"
                 "RuntimeError: [/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:78] Timed out "
                 "waiting 10000ms for recv operation to complete\n")


def test_ranks_timed_out_in_different_collectives_is_a_mismatch(tmp_path: Path) -> None:
    got = _causes(tmp_path, node0=SPAWN_TIMEOUT.format(call="all_reduce(grad)", line=3252, fn="all_reduce"),
                  node1=SPAWN_TIMEOUT.format(call="broadcast(grad, 0)", line=3151, fn="broadcast"))
    assert got[0] == "collective_mismatch"


def test_ranks_timed_out_in_the_same_collective_are_not_a_mismatch(tmp_path: Path) -> None:
    one = SPAWN_TIMEOUT.format(call="all_reduce(grad)", line=3252, fn="all_reduce")
    assert _causes(tmp_path, node0=one, node1=one)[0] != "collective_mismatch"


# link-down-1: host b's interface went down at step 3; both ranks time out in the same all_reduce, called from the
# same line of worker.py (their tracebacks say so).
MULTIHOST = Path(__file__).resolve().parents[2] / "fixtures" / "logs" / "multihost"


def _case(name: str) -> dict[str, str]:
    return {p.stem: p.read_text() for p in sorted((MULTIHOST / name / "logs").glob("*.log"))}


def test_every_rank_timed_out_in_the_same_call_from_the_same_line_lost_the_network(tmp_path: Path) -> None:
    assert _causes(tmp_path, **_case("link-down-1"))[0] == "hardware_fault"


def test_the_same_collective_called_from_different_lines_is_a_mismatch(tmp_path: Path) -> None:
    logs = _case("link-down-1")
    logs["node1"] = logs["node1"].replace('worker.py", line 64, in <module>', 'worker.py", line 71, in <module>')
    assert _causes(tmp_path, **logs)[0] == "collective_mismatch"


def test_the_call_is_read_from_tracebacks_of_any_install_path(tmp_path: Path) -> None:
    # A conda or system Python: no ".../versions/..." in the path (which alone made such frames worth reading).
    conda = SPAWN_TIMEOUT.replace("/root/.pyenv/versions/3.11.7/lib/python3.11", "/opt/conda/lib/python3.10")
    got = _causes(tmp_path, node0=conda.format(call="all_reduce(grad)", line=3252, fn="all_reduce"),
                  node1=conda.format(call="broadcast(grad, 0)", line=3151, fn="broadcast"))
    assert got[0] == "collective_mismatch"


# preempted-2: host b's torchrun got SIGTERM ("Received 15 death signal" at 17:51:31.18); rank 0's monitored_barrier
# then named ranks 2 and 3, host b's ranks, at 17:51:31.87.
def test_ranks_whose_launcher_was_signalled_before_the_barrier_gave_up_were_stopped(tmp_path: Path) -> None:
    d = tmp_path / "logs"
    d.mkdir()
    for name, text in _case("preempted-2").items():
        (d / f"{name}.log").write_text(text)
    doc = diagnose_file(d)
    first = next(f for f in doc["findings"] if f.get("cause"))
    assert first["cause"] == "peer_process_died" and "2, 3 were stopped" in first["title"]


def test_a_launcher_signalled_only_after_the_barrier_gave_up_does_not_explain_it(tmp_path: Path) -> None:
    logs = _case("preempted-2")
    logs["node1"] = logs["node1"].replace("W1127 17:51:31.179000 27867", "W1127 17:52:31.179000 27867")
    assert _causes(tmp_path, **logs)[0] == "collective_timeout_straggler"


# crash-loop-1: torchrun --max-restarts 2, rank 1 raises at step 3 on every attempt; the third attempt's gloo mesh
# times out connecting ("Connect timeout [none]") after host a's launcher had reported the failed worker.
def test_a_mesh_timeout_in_restarted_workers_is_the_first_failures_echo(tmp_path: Path) -> None:
    assert _causes(tmp_path, **_case("crash-loop-1"))[0] == "peer_process_died"


def test_a_mesh_timeout_with_no_failed_attempt_before_it_is_the_network(tmp_path: Path) -> None:
    line = next(ln for ln in _case("crash-loop-1")["node0"].splitlines() if "Connect timeout" in ln)
    assert _causes(tmp_path, node0=line + "\n")[0] == "firewall_or_port_blocked"


# crash-loop-2-rerun: in the last attempt torchrun SIGTERMs the workers left once rank 3 raised; its summary lists
# them with exitcode -15.
def test_workers_the_launcher_stopped_itself_do_not_hide_the_rank_that_raised(tmp_path: Path) -> None:
    d = tmp_path / "logs"
    d.mkdir()
    for name, text in _case("crash-loop-2-rerun").items():
        (d / f"{name}.log").write_text(text)
    first = next(f for f in diagnose_file(d)["findings"] if f.get("cause"))
    assert first["cause"] == "peer_process_died" and "rank 3" in first["title"] and "raised" in first["title"]


def test_a_sigterm_exit_the_launcher_did_not_send_is_not_its_echo(tmp_path: Path) -> None:
    logs = {k: "\n".join(ln for ln in v.splitlines() if "closing signal" not in ln) + "\n"
            for k, v in _case("crash-loop-2-rerun").items()}
    d = tmp_path / "logs"
    d.mkdir()
    for name, text in logs.items():
        (d / f"{name}.log").write_text(text)
    first = next(f for f in diagnose_file(d)["findings"] if f.get("cause"))
    assert "raised an error of its own" not in first["title"]


# late-init-2-rerun (torchrun --tee 3): host b's worker of local rank 0 is global rank 2; its store timeout is logged
# under "[default0]:" and torchrun's summary says "rank: 2 (local_rank: 0)".
def test_a_tee_workers_error_under_its_local_rank_counts_as_its_own(tmp_path: Path) -> None:
    d = tmp_path / "logs"
    d.mkdir()
    for name, text in _case("late-init-2-rerun").items():
        (d / f"{name}.log").write_text(text)
    findings = diagnose_file(d)["findings"]
    assert not any("having logged no error" in f["title"] for f in findings)
    assert [f["cause"] for f in findings if f.get("cause")][0] == "collective_timeout_straggler"


def test_a_tee_worker_that_logged_nothing_still_ended_itself(tmp_path: Path) -> None:
    logs = _case("late-init-2-rerun")
    logs["node1"] = "\n".join(ln for ln in logs["node1"].splitlines() if not ln.startswith("[default0]:")) + "\n"
    d = tmp_path / "logs"
    d.mkdir()
    for name, text in logs.items():
        (d / f"{name}.log").write_text(text)
    assert any("rank 2" in f["title"] and "having logged no error" in f["title"] for f in diagnose_file(d)["findings"])


# rdzv-id-2-rerun: host b runs with another --rdzv-id. Host a's rendezvous times out (RendezvousTimeoutError); host b
# was connected to host a's store all along ("TCP client connected to host") and loses it when host a gives up.
def test_a_node_connected_to_the_store_while_the_rendezvous_timed_out_was_in_another_rendezvous(tmp_path: Path) -> None:
    assert _causes(tmp_path, **_case("rdzv-id-2-rerun"))[0] == "launcher_misconfig"


def test_the_store_hosts_rendezvous_timeout_alone_is_nodes_not_arriving(tmp_path: Path) -> None:
    assert _causes(tmp_path, node0=_case("rdzv-id-2-rerun")["node0"])[0] == "rendezvous_unreachable"


def test_both_nodes_timed_out_and_one_lost_the_store_it_had_is_still_another_rendezvous(tmp_path: Path) -> None:
    # rdzv-id-4-rerun: plain logs; host b's "Failed to recv, got 0 bytes" says it had been connected.
    assert _causes(tmp_path, **_case("rdzv-id-4-rerun"))[0] == "launcher_misconfig"


def test_a_node_that_never_reached_the_store_is_not_another_rendezvous(tmp_path: Path) -> None:
    logs = _case("rdzv-id-4-rerun")  # without the line proving the connection, the loss may be a failed connect
    logs["node1"] = "\n".join(ln for ln in logs["node1"].splitlines() if "Failed to recv" not in ln) + "\n"
    assert _causes(tmp_path, **logs)[0] != "launcher_misconfig"


# A one-rank host prints its worker's errors without a rank prefix. NCCL's "unhandled system error" raised there is
# read by a context row (the NCCL result), not a failure row of its own: it is still the rank's error, so torchrun's
# "exitcode: 1" for that rank is not a rank that ended itself having logged nothing.
_TORCHRUN_TAIL = """E0501 10:00:01.000000 1200 torch/distributed/elastic/multiprocessing/api.py:869] failed (exitcode: 1) local_rank: 0 (pid: 1234) of binary: /usr/bin/python
Traceback (most recent call last):
  File "/usr/bin/torchrun", line 8, in <module>
    sys.exit(main())
torch.distributed.elastic.multiprocessing.errors.ChildFailedError: 
============================================================
train.py FAILED
------------------------------------------------------------
Failures:
  <NO_OTHER_FAILURES>
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2024-05-01_10:00:01
  host      : node1
  rank      : 0 (local_rank: 0)
  exitcode  : 1 (pid: 1234)
  error_file: <N/A>
  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html
============================================================
"""


def test_an_unprefixed_nccl_error_is_the_failed_ranks_own(tmp_path: Path) -> None:
    p = tmp_path / "node1.log"
    p.write_text("RuntimeError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1269, unhandled "
                 "system error, NCCL version 2.14.3\n" + _TORCHRUN_TAIL)
    findings = diagnose_file(p)["findings"]
    assert not any("having logged no error" in f["title"] for f in findings)
    assert [f["code"] for f in findings if f.get("cause")][0] == "LOG028"
    # Near-miss: the launcher's own ChildFailedError traceback is not the rank's error.
    p.write_text(_TORCHRUN_TAIL)
    assert any("rank 0" in f["title"] and "having logged no error" in f["title"] for f in diagnose_file(p)["findings"])


def _torchrun_summary(host: str, rank: int, code: int, name: str, clock: str) -> str:
    """torchrun's failure report in the shape of the H100 capture nccl-straggler (torch 2.11)."""
    return (f"E1124 {clock}.728000 1166 torch/distributed/elastic/multiprocessing/api.py:986] failed (exitcode: {code}) "
            f"local_rank: 0 (pid: 1191) of binary: /opt/torch/.venv/bin/python3\n"
            "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: \n"
            "======================================================\n/workspace/job.py FAILED\n"
            "------------------------------------------------------\nFailures:\n  <NO_OTHER_FAILURES>\n"
            "------------------------------------------------------\nRoot Cause (first observed failure):\n[0]:\n"
            f"  time      : 2026-11-24_{clock}\n  host      : {host}\n  rank      : {rank} (local_rank: 0)\n"
            f"  exitcode  : {code} (pid: 1191)\n  error_file: <N/A>\n"
            f"  traceback : Signal {-code} ({name}) received by PID 1191\n"
            "======================================================\n")


_TIMED_OUT = ("[rank0]:[E1124 22:43:34.225519341 ProcessGroupNCCL.cpp:689] [Rank 0] Watchdog caught collective operation "
              "timeout: WorkNCCL(SeqNum=25, OpType=ALLREDUCE, NumelIn=16384, NumelOut=16384, Timeout(ms)=15000) ran for "
              "15073 milliseconds before timing out.\n")


def test_a_rank_killed_on_another_node_is_what_the_timed_out_ranks_waited_on(tmp_path: Path) -> None:
    """Each node's torchrun names its own first failure: the node whose rank the OOM killer took says SIGKILL, the
    other its rank aborting (SIGABRT) once the collective with the dead rank timed out. The kill is the cause."""
    first = _causes(tmp_path, nodeA=_TIMED_OUT + _torchrun_summary("nodeA", 0, -6, "SIGABRT", "22:43:35"),
                    nodeB=_torchrun_summary("nodeB", 1, -9, "SIGKILL", "22:43:19"))
    assert first[:2] == ["peer_process_died", "collective_timeout_straggler"]
    top = next(f for f in diagnose_file(tmp_path / "logs")["findings"] if f.get("cause"))
    assert "rank 1 on nodeB was killed by SIGKILL" in top["title"]


def test_a_kill_after_the_timeout_is_not_what_the_ranks_waited_on(tmp_path: Path) -> None:
    """Near-miss: the SIGKILL's own clock is after the first timeout, so it followed (a rank stuck in the abort and
    killed), and the timeout stays the reading."""
    first = _causes(tmp_path, nodeA=_TIMED_OUT + _torchrun_summary("nodeA", 0, -6, "SIGABRT", "22:43:35"),
                    nodeB=_torchrun_summary("nodeB", 1, -9, "SIGKILL", "22:44:05"))
    assert first[0] == "collective_timeout_straggler"


# Round 5 (bench/multihost_logs gen.py R5, 29 Nov): real lines of its development runs.
# hosts-wrong-ip-2: host b's /etc/hosts gives the master's name an address nobody has; the store is up on host a.
WRONG_IP_STORE = ("[I1129 23:50:29.340485285 TCPStore.cpp:271] [c10d - debug] The server has started on port = 29500.\n"
                  "[I1129 23:50:29.340989575 TCPStore.cpp:316] [c10d - debug] TCP client connected to host "
                  "trainmaster:29500\n" + STORE_WAITED)
WRONG_IP = ("[W1129 23:50:32.364318160 socket.cpp:764] [c10d] The client socket has failed to connect to "
            "[f130:0:9616:0:55d7::]:39125 (errno: 113 - No route to host).\n"
            "[E1129 23:51:05.420444023 TCPStore.cpp:328] [c10d] TCP client failed to connect/validate to host "
            "trainmaster:29500 - timed out (try=4, timeout=30000ms): The client socket has failed to connect to any "
            "network address of (trainmaster, 29500). The client socket has failed to connect to 215.85.0.0:39129 "
            "(errno: 113 - No route to host).\n")


def test_no_route_to_the_stores_name_while_it_listened_is_the_name_giving_a_wrong_address(tmp_path: Path) -> None:
    got = _causes(tmp_path, node0=WRONG_IP_STORE, node1=WRONG_IP)
    assert got[0] == "hostname_resolution" and "firewall_or_port_blocked" in got, got


def test_no_route_to_the_stores_address_is_still_a_wrong_address(tmp_path: Path) -> None:
    by_ip = WRONG_IP.replace("trainmaster", "10.209.151.77")
    got = _causes(tmp_path, node0=WRONG_IP_STORE.replace("trainmaster", "10.209.151.1"), node1=by_ip)
    assert got[0] != "hostname_resolution", got


# fw-reject-store-2: host b's connections to the store port get a TCP reset (iptables REJECT), DETAIL's trace lines.
STORE_UP = ("[I1129 23:55:39.062310779 TCPStore.cpp:271] [c10d - debug] The server has started on port = 29500.\n"
            "[I1129 23:55:39.062814228 TCPStore.cpp:316] [c10d - debug] TCP client connected to host 10.209.163.1:29500\n"
            + STORE_WAITED)
STORE_REJECTED = ("[I1129 23:55:39.148633512 socket.cpp:931] [c10d - trace] The server socket on "
                  "[1130:0:cef7:0:5580::]:53686 is not yet listening (errno: 111 - Connection refused), will retry.\n"
                  "[E1129 23:56:06.381383050 socket.cpp:1028] [c10d] The client socket has timed out after 30000ms "
                  "while trying to connect to (10.209.163.1, 29500).\n")


def test_refused_at_the_address_the_store_host_itself_reached_is_a_rejecting_firewall(tmp_path: Path) -> None:
    got = _causes(tmp_path, node0=STORE_UP, node1=STORE_REJECTED)
    assert got[0] == "firewall_or_port_blocked", got


def test_refused_at_another_address_than_the_store_hosts_is_a_wrong_address(tmp_path: Path) -> None:
    got = _causes(tmp_path, node0=STORE_UP, node1=STORE_REJECTED.replace("10.209.163.1", "10.209.163.2"))
    assert got[0] == "rendezvous_unreachable", got


# fw-reject-gloo-1: host b rejects every TCP connection but the store's; its rank's gloo pair to rank 0 is refused while
# rank 0 waits for it on host a.
PAIR_REFUSED = ("[/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/debug_logger.cc:9] ERROR failed to connect, "
                "willRetry=1, retry=1, retryLimit=3, rank=1, size=2, local=[10.209.160.2]:18596, "
                "remote=[10.209.160.1]:49042$1, error=SO_ERROR: Connection refused, remote=[10.209.160.1]:49042$1\n")
PAIR_WAITED = ("[E1129 23:55:59.937438769 ProcessGroupGloo.cpp:67] Gloo connectFullMesh failed with [/__w/pytorch/pytorch/"
               "third_party/gloo/gloo/transport/tcp/pair.h:311] Connect timeout [none]\n")


def test_a_gloo_pair_refused_on_its_own_subnet_while_the_peer_waited_is_a_rejecting_firewall(tmp_path: Path) -> None:
    got = _causes(tmp_path, node0=PAIR_WAITED, node1=PAIR_REFUSED)
    assert got[0] == "firewall_or_port_blocked" and "wrong_interface" in got, got


def test_a_gloo_pair_refused_at_an_address_of_another_network_stays_the_interface(tmp_path: Path) -> None:
    other = PAIR_REFUSED.replace("remote=[10.209.160.1]", "remote=[172.17.0.1]")
    assert _causes(tmp_path, node0=PAIR_WAITED, node1=other)[0] == "wrong_interface"


# fewer-steps-1: rank 1 (host b) ends its loop a step early and exits 0; rank 0's next all_reduce loses the connection.
CUT = ("[rank0]: RuntimeError: [/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:537] Read error "
       "[10.209.164.2]:52883: Connection reset by peer. This is typically caused by a remote worker hanging or bugs in "
       "the application. Check the logs of the remote worker before reporting an error. GLHF!\n")
FINISHED = ("rank 1: done\n"
            "E1129 23:56:36.509000 595 torch/distributed/elastic/agent/server/api.py:1008] Error waiting on exit barrier. "
            "Elapsed: 0.09369444847106934 seconds\n")


def test_a_peer_whose_workers_all_finished_left_the_collective_unmatched(tmp_path: Path) -> None:
    got = _causes(tmp_path, node0=CUT, node1=FINISHED)
    assert got[0] == "collective_mismatch" and "peer_process_died" in got, got


def test_a_peer_that_did_not_finish_is_still_a_dead_peer(tmp_path: Path) -> None:
    got = _causes(tmp_path, node0=CUT, node1="rank 1: step 2 loss 0.3333\n")
    assert got[0] == "peer_process_died", got


# Runs 3-4 of round 5 (two ranks per host; scored once, then used for development).
ROOT_CAUSE = ("Root Cause (first observed failure):\n[0]:\n  time      : 2026-11-30_00:08:11\n  host      : {host}\n"
              "  rank      : {rank} (local_rank: {local})\n  exitcode  : {code} (pid: {pid}) \n  error_file: <N/A>\n"
              "  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html\n"
              "============================================================\n")
SUMMARY = ("torch.distributed.elastic.multiprocessing.errors.ChildFailedError: \n"
           "============================================================\n/work/main/bench/multihost_logs/worker.py FAILED\n"
           "------------------------------------------------------------\n")
# fewer-steps-4: rank 3 (host b) ends its loop early and exits 0; ranks 0 and 1 (host a) and 2 (host b) lose it.
LOST_A = ("[rank0]: RuntimeError: [/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:537] Read error "
          "[10.209.177.2]:6353: Connection reset by peer. This is typically caused by a remote worker hanging or bugs "
          "in the application.\n"
          "[rank1]: RuntimeError: [/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:553] Connection "
          "closed by peer [10.209.177.2]:47762. This is typically caused by a remote worker crashing.\n"
          "W1130 00:08:11.729000 19233 torch/distributed/elastic/multiprocessing/api.py:1028] Sending process 19239 "
          "closing signal SIGTERM\n" + SUMMARY + "Failures:\n[1]:\n  time      : 2026-11-30_00:08:11\n"
          "  host      : mhl177a\n  rank      : 1 (local_rank: 1)\n  exitcode  : -15 (pid: 19239)  (SIGTERM)\n"
          "  error_file: <N/A>\n  traceback : Signal 15 (SIGTERM) received by PID 19239\n"
          "------------------------------------------------------------\n"
          + ROOT_CAUSE.format(host="mhl177a", rank=0, local=0, code=1, pid=19238))
LOST_B = ("[rank2]: RuntimeError: [/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:553] Connection "
          "closed by peer [10.209.177.2]:13740. This is typically caused by a remote worker crashing.\n"
          + SUMMARY + "Failures:\n  <NO_OTHER_FAILURES>\n------------------------------------------------------------\n"
          + ROOT_CAUSE.format(host="mhl177b", rank=2, local=0, code=1, pid=19240))


def test_a_peer_every_failed_rank_lost_and_no_launcher_reports_finished_early(tmp_path: Path) -> None:
    got = _causes(tmp_path, node0=LOST_A, node1=LOST_B)
    assert got[0] == "collective_mismatch", got


def test_a_peer_its_launcher_reports_killed_is_a_dead_peer(tmp_path: Path) -> None:
    killed = LOST_B.replace("  <NO_OTHER_FAILURES>\n", "[1]:\n  time      : 2026-11-30_00:08:11\n  host      : mhl177b\n"
                            "  rank      : 3 (local_rank: 1)\n  exitcode  : -9 (pid: 19241)  (SIGKILL)\n"
                            "  error_file: <N/A>\n  traceback : Signal 9 (SIGKILL) received by PID 19241\n")
    got = _causes(tmp_path, node0=LOST_A, node1=killed)
    assert got[0] != "collective_mismatch", got


# rank-stopped-4: rank 3 (host b) stops itself with SIGSTOP; ranks 0-2 time out in the same all_reduce. Rank 3 logs
# nothing torch prefixes with its rank: only host b's launcher stopping a second worker says it was there.
WAITED_A = ("[rank1]: RuntimeError: [/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:78] "
            "Timed out waiting 10000ms for recv operation to complete\n"
            "[rank0]: RuntimeError: [/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:129] "
            "Timed out waiting 10000ms for send operation to complete\n")
WAITED_B = ("[rank2]: RuntimeError: [/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:78] "
            "Timed out waiting 10000ms for recv operation to complete\n"
            "W1130 00:08:32.329000 19302 torch/distributed/elastic/multiprocessing/api.py:1028] Sending process 19321 "
            "closing signal SIGTERM\n")


def test_a_worker_the_launcher_had_to_stop_is_the_rank_that_logged_no_timeout(tmp_path: Path) -> None:
    got = _causes(tmp_path, node0=WAITED_A, node1=WAITED_B)
    assert got[0] == "collective_timeout_straggler", got


def test_without_a_stopped_worker_every_rank_timing_out_stays_a_mismatch(tmp_path: Path) -> None:
    got = _causes(tmp_path, node0=WAITED_A, node1=WAITED_B.split("W1130")[0])
    assert got[0] == "collective_mismatch", got
