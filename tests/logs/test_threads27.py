"""Public failure threads, round 27: JAX and XLA's coordination service, and Horovod's stall inspector.

``jax.distributed.initialize`` starts XLA's coordination service on process 0 and connects every process to it. Its
messages name processes as tasks (``/job:jax_worker/replica:0/task:N``, N = process_id) and list them on the lines
after the message. Three readings: a connect barrier that expired (processes never started or never connected), a
task that stopped sending heartbeats (it died; the others are terminated with that message), and any other barrier
that expired (a task late or absent). Horovod's stall inspector lists, under its warning, each rank that has not
submitted tensors the others wait to reduce: most often ranks that ran out of batches first (an uneven split of the
data), so a mismatch naming them, with a late rank as the alternative; ranks that submitted different tensors are a
mismatch outright. XLA's own rendezvous of a collective's local participants, when it times out, is a participant
that never reached the collective.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from logs.test_corpus import diagnose_file
from logs.test_rule_rows import check_row

# ayaka14732/llama-2-jax#20: one process started with num_processes=8
_CONNECT = ("jaxlib.xla_extension.XlaRuntimeError: DEADLINE_EXCEEDED: Barrier timed out. Barrier_id: PjRT_Client_Connect. "
            "Timed out task names:")
# marin-community/levanter#432: a barrier the program itself calls (multihost_broadcast_sync)
_USER_BARRIER = ("jaxlib.xla_extension.XlaRuntimeError: DEADLINE_EXCEEDED: Barrier timed out. Barrier_id: "
                 "multihost_broadcast_sync0. Timed out task names:")
# JAX's multi-process documentation: the other processes after `kill -9` of process 3
_TERMINATING = ("F0926 17:26:32.075587  157988 client.h:77] Terminating process because the JAX distributed service "
                "detected fatal errors. This most likely indicates that another task died; see the other task logs for "
                "more details. Disable Python buffering, i.e. `python -u`, to be sure to see all the previous output. "
                "absl::Status: UNAVAILABLE: The following tasks are unhealthy (stopped sending heartbeats):")
_POLLED = ("E0926 17:26:32.075402  157988 coordination_service_agent.cc:332] Polled an error from coordination service "
           "(this can be an error from this or another task).")

_GRPC = ("failed to connect to all addresses; last error: UNKNOWN: ipv4:127.0.0.1:50135: Failed to connect to remote "
         "host: Connection refused")
_CONTROLLER = ("E0926 17:25:02.000000  157990 client.cc:110] Failed to connect to distributed JAX controller: waited too "
               "long for some tasks to show up. This may be due to 1) some tasks crashed earlier before connecting, 2) "
               "some tasks were never scheduled, or 3) scheduling delays.")

_ID_WAIT = ("E0000 00:00:1743713172.513857  698835 pjrt_stream_executor_client.cc:3072] Execution of replica 0 failed: "
            "DEADLINE_EXCEEDED: GetKeyValue() timed out with key: devices=[0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,"
            "18,19,20,21,22,23,24,25,26,27,28,29]; stream=0; groups=[[0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,"
            "20,21,22,23,24,25,26,27,28,29]]; root_device=0; num_local_participants=2 and duration: 10m "
            "[type.googleapis.com/tensorflow.CoordinationServiceError='']")

ROWS = [
    # (rule id, real line, near-miss)
    # CheckBarrierTimeout's message; a timed-out key lookup is another wait (GetKeyValue), not a barrier
    ("xla_barrier_timeout", _CONNECT,
     "jaxlib.xla_extension.XlaRuntimeError: DEADLINE_EXCEEDED: GetKeyValue() timed out with key: jax_local_topology/0"),
    # the PjRt client's fatal callback; the agent's note that it polled an error says nothing of which task died
    ("xla_task_died", _TERMINATING, _POLLED),
    # the older wording (xla/pjrt/distributed/client.h before the service was renamed) and the service's own message
    ("xla_task_died", "Terminating process because the coordinator detected missing heartbeats. This most likely "
                      "indicates that another task died; see the other task logs for more details.",
     "Terminating process because the worker was asked to shut down"),
    ("xla_task_died", "UNAVAILABLE: Task /job:jax_worker/replica:0/task:1 heartbeat timeout. This indicates that the "
                      "remote task has failed, got preempted, or crashed unexpectedly.",
     "/job:jax_worker/replica:0/task:1 has disconnected from coordination service."),
    # gRPC's channel error as a client prints it when nothing listens at the address (a public write-up of a stopped
    # gRPC server); the same words without gRPC's clause are a plain refused connection, read elsewhere
    ("xla_grpc_unreachable", _GRPC, "Failed to connect to remote host: Connection refused"),
    # the PjRt client's message after its connect deadline (xla/pjrt/distributed/client.cc); its success line is not
    ("xla_controller", _CONTROLLER, "I0926 17:20:02.100000  157990 client.cc:134] Connected to distributed JAX controller"),
    # the wait for an NCCL clique's id (EnzymeAD/Enzyme-JAX#623, 8 processes on 8 nodes); the same wait for another key
    # (the processes' topology at start-up) is not a clique
    ("xla_nccl_id_wait", _ID_WAIT, "DEADLINE_EXCEEDED: GetKeyValue() timed out with key: jax_local_topology/1 and "
                                   "duration: 5m"),
    # RegisterTaskAsync; a disconnect request from an unknown task is not a registration
    ("xla_unexpected_task", "INVALID_ARGUMENT: Unexpected task registered with task_name=/job:jax_worker/replica:0/task:8",
     "INVALID_ARGUMENT: Unexpected disconnect request with task_name=/job:jax_worker/replica:0/task:8"),
    # the service's list of tasks, one a line; a task named inside a sentence is not the list
    ("xla_task_name", "/job:jax_worker/replica:0/task:6",
     "The first task at the barrier: /job:jax_worker/replica:0/task:0. Some timed out task names:"),
]


@pytest.mark.parametrize("rule, line, near", ROWS, ids=[f"{r[0]}-{i}" for i, r in enumerate(ROWS)])
def test_row_matches_its_line_and_not_the_near_miss(rule: str, line: str, near: str) -> None:
    check_row(rule, line, near)


def _findings(tmp_path: Path, text: str) -> list[dict]:
    p = tmp_path / "job.log"
    p.write_text(text)
    return [f for f in diagnose_file(p)["findings"] if f["cause"]]


def test_processes_that_never_connected_are_the_launch_naming_each_task(tmp_path: Path) -> None:
    got = _findings(tmp_path, (
        "  File \"/root/llama-2-jax/train.py\", line 89, in main\n"
        "    jax.distributed.initialize(coordinator_address=\"localhost\", num_processes=8, process_id=0)\n"
        f"{_CONNECT}\n/job:jax_worker/replica:0/task:1\n/job:jax_worker/replica:0/task:6\n"))
    assert (got[0]["code"], got[0]["cause"]) == ("LOG062", "launcher_misconfig")
    assert "task 1, task 6" in got[0]["title"]
    assert "rendezvous_unreachable" in [f["cause"] for f in got[1:]]


def test_a_task_that_stopped_heartbeating_is_the_dead_peer_named(tmp_path: Path) -> None:
    got = _findings(tmp_path, f"{_POLLED}\n{_TERMINATING}\n/job:jax_worker/replica:0/task:3\n")
    assert (got[0]["code"], got[0]["cause"]) == ("LOG103", "peer_process_died")
    assert got[0]["title"].endswith("lost task 3")


def test_a_barrier_of_the_program_is_a_late_task_unless_one_died(tmp_path: Path) -> None:
    barrier = f"{_USER_BARRIER}\n/job:jax_worker/replica:0/task:3\n/job:jax_worker/replica:0/task:0\n"
    got = _findings(tmp_path, barrier)
    assert (got[0]["code"], got[0]["cause"]) == ("LOG104", "collective_timeout_straggler")
    assert "multihost_broadcast_sync0" in got[0]["title"] and "task 3, task 0" in got[0]["title"]
    # the same barrier after the service lost a task: the task died, the barrier is its echo
    died = _findings(tmp_path, f"{_TERMINATING}\n/job:jax_worker/replica:0/task:3\n{barrier}")
    assert died[0]["cause"] == "peer_process_died"
    assert "LOG104" not in [f["code"] for f in died]


def test_the_services_progress_notes_carry_no_cause(tmp_path: Path) -> None:
    # LogConnectStatusLocked's INFO lines while processes connect, in a job that went on
    assert _findings(tmp_path, (
        "I0926 17:20:01.000100  157988 coordination_service.cc:637] Waiting for 1/2 tasks to connect.\n"
        "I0926 17:20:01.000120  157988 coordination_service.cc:639] Example stragglers:\n"
        "/job:jax_worker/replica:0/task:1\n"
        "I0926 17:20:02.100000  157990 coordination_service_agent.cc:369] Coordination agent has successfully "
        "connected.\n")) == []


def test_a_coordinator_nobody_listens_at_is_the_endpoint_named_unless_the_job_failed_first(tmp_path: Path) -> None:
    line = f"jaxlib.xla_extension.XlaRuntimeError: UNAVAILABLE: {_GRPC}\n"
    got = _findings(tmp_path, line)
    assert (got[0]["code"], got[0]["cause"]) == ("LOG011", "rendezvous_unreachable")
    assert "127.0.0.1:50135 (Connection refused)" in got[0]["title"]
    # before, a refused connection was read as the interface: that reading no longer comes first, nor at all
    assert "wrong_interface" not in [f["cause"] for f in got[:1]]
    # clients print the same while a job comes down after its own failure: then it follows that failure
    oom = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 GiB. GPU 0 has a total capacity of "
           "79.10 GiB of which 3.06 GiB is free.\n")
    after = _findings(tmp_path, oom + line)
    assert after[0]["cause"] == "cuda_oom"
    assert [f["consequence_of"] for f in after if f["code"] == "LOG011"] == ["LOG031"]


def test_the_clients_own_connect_timeout_is_the_launch_once(tmp_path: Path) -> None:
    got = _findings(tmp_path, f"{_CONTROLLER}\n")
    assert (got[0]["code"], got[0]["cause"]) == ("LOG062", "launcher_misconfig")
    both = _findings(tmp_path, f"{_CONTROLLER}\n{_CONNECT}\n/job:jax_worker/replica:0/task:1\n")
    assert [f["code"] for f in both].count("LOG062") == 1
    assert "task 1" in both[0]["title"]


# DEKHTIARJonathan/HVD_TF_Worker_Desync_BugReport (linked from a Horovod issue): a worker that desynchronised
_HVD_WARN = ("[2021-02-02 21:19:07.345988: W /tmp/pip-install-dxtho7yu/horovod_0bde588442554cf4b80c76441efc4e03/horovod/"
             "common/stall_inspector.cc:105] One or more tensors were submitted to be reduced, gathered or broadcasted by "
             "subset of ranks and are waiting for remainder of ranks for more than 10 seconds. This may indicate that "
             "different ranks are trying to submit different tensors or that only subset of ranks is submitting tensors, "
             "which will cause deadlock. ")
_HVD_RANK0 = ("0: [cond_1/then/_10/cond_1/SGD/PartitionedCall/DistributedSGD_Allreduce/cond/then/_79/DistributedSGD_"
              "Allreduce/cond/HorovodAllreduce_grads_0]")
_HVD_SHUT = ("tensorflow.python.framework.errors_impl.UnknownError:  Horovod has been shut down. This was caused by an "
             "exception on one of the ranks or an attempt to allreduce, allgather or broadcast a tensor after one of the "
             "ranks finished execution. If the shutdown was caused by an exception, you should see the exception in the "
             "log before the first shutdown message.")

HVD_ROWS = [
    # the warning; Horovod's note that the shutdown time is ignored is configuration, not a stall
    ("horovod_stall", _HVD_WARN, "HOROVOD_STALL_SHUTDOWN_TIME_SECONDS is less than HOROVOD_STALL_CHECK_TIME_SECONDS, "
                                 "will not shutdown."),
    # one line per rank under "Missing ranks:"; a line that goes on after the bracket is not one of them
    ("horovod_missing_rank", _HVD_RANK0, "[2021-02-02 21:19:07.345988: W stall_inspector.cc:105] One or more tensors"),
    # before 0.16.1, one line per tensor (horovod/horovod#1012); the older "ready ranks" form (horovod/horovod#530)
    # names the ranks that are *not* missing
    ("horovod_missing_old", "[1,0]<stderr>:[2019-04-13 13:53:31.851547: W horovod/common/operations.cc:588] "
                            "HorovodBroadcast_global_step_0 [missing ranks: 1]",
     "Stalled ops: HorovodBroadcast_InceptionV3_Logits_Conv2d_1c_1x1_weights_0 [ready ranks: 5, 6, 3, 1, 4, 0]"),
    # the shut-down error (horovod/common/common.h); Horovod's elastic reset note is another message
    ("horovod_shut_down", _HVD_SHUT, "Horovod has been shut down"),
]


@pytest.mark.parametrize("rule, line, near", HVD_ROWS, ids=[f"{r[0]}-{i}" for i, r in enumerate(HVD_ROWS)])
def test_horovod_row_matches_its_line_and_not_the_near_miss(rule: str, line: str, near: str) -> None:
    check_row(rule, line, near)


def test_a_horovod_stall_names_the_rank_the_others_wait_for_before_the_shutdown(tmp_path: Path) -> None:
    got = _findings(tmp_path, "1/1 - 3s - loss: nan\nrank 0 completed step...\n\n\n" + _HVD_WARN + "\nMissing ranks:\n"
                    + _HVD_RANK0 + "\n\n\n" + _HVD_SHUT + "\n")
    assert (got[0]["code"], got[0]["cause"]) == ("LOG105", "collective_mismatch")
    assert got[0]["title"].startswith("Horovod waited over 10 s for rank(s) 0 to submit cond_1/")
    assert got[0]["ranks"] == [0]
    assert "collective_timeout_straggler" in [f["cause"] for f in got[1:3]]
    # the shut-down that follows is its consequence
    assert [f["consequence_of"] for f in got if f["code"] == "LOG060"] == ["LOG105"]


def test_ranks_that_each_lack_what_the_other_submitted_are_a_mismatch(tmp_path: Path) -> None:
    got = _findings(tmp_path, _HVD_WARN + "\nMissing ranks:\n0: [allreduce.fc.weight]\n1: [allreduce.fc.bias]\n")
    assert (got[0]["code"], got[0]["cause"]) == ("LOG050", "collective_mismatch")
    assert "Rank 0 never submitted allreduce.fc.weight, which rank 1 did" in got[0]["detail"]
    # ranks missing the same tensors are behind together, not in disagreement
    same = _findings(tmp_path, _HVD_WARN + "\nMissing ranks:\n2: [allreduce.fc.weight]\n3: [allreduce.fc.weight]\n")
    assert (same[0]["code"], same[0]["ranks"]) == ("LOG105", [2, 3])


def test_the_per_tensor_lines_of_old_releases_name_the_rank(tmp_path: Path) -> None:
    old = ("[1,0]<stderr>:[2019-04-13 13:53:31.851506: W horovod/common/operations.cc:588] HorovodBroadcast_dense_1_bias_"
           "Momentum_0 [missing ranks: 1]\n[1,0]<stderr>:[2019-04-13 13:54:31.854655: W horovod/common/operations.cc:588] "
           + _HVD_WARN.split("] ", 1)[1] + "\n")
    got = _findings(tmp_path, old)
    assert (got[0]["code"], got[0]["ranks"]) == ("LOG105", [1])
    assert "HorovodBroadcast_dense_1_bias_Momentum_0" in got[0]["title"]


def test_rank_lines_behind_horovodrun_prefixes_keep_their_own_rank(tmp_path: Path) -> None:
    # horovod/horovod#2640: horovodrun prefixes every line with the rank that printed it ("[0]<stderr>:"); the rank
    # the line is about comes after that prefix (and "R!" marks one past the shutdown time)
    lines = [f"[0]<stderr>:{_HVD_WARN}", "[0]<stderr>:Missing ranks:"] + [
        f"[0]<stderr>:{r}: [allreduce.noname.222700]" for r in ("1", "2", "3!")]
    got = _findings(tmp_path, "\n".join(lines) + "\n")
    assert (got[0]["code"], got[0]["ranks"]) == ("LOG105", [1, 2, 3])
    assert "rank(s) 1, 2, 3 to submit allreduce.noname.222700" in got[0]["title"]


def test_the_service_reporting_its_own_process_silent_is_a_stall_not_a_death(tmp_path: Path) -> None:
    # jax-ml/jax#23599: one process on one node, slow to start (pinned host memory); the service runs in process 0,
    # so the process it reports was the one printing
    own = ("2024-10-09 15:47:38.568412: E external/xla/xla/tsl/distributed_runtime/coordination/coordination_service.cc"
           ":1170] /job:jax_worker/replica:0/task:0 has been set to ERROR in coordination service: UNAVAILABLE: Task "
           "/job:jax_worker/replica:0/task:0 heartbeat timeout. This indicates that the remote task has failed, got "
           "preempted, or crashed unexpectedly. Check the task logs for an earlier error to debug further. "
           "[type.googleapis.com/tensorflow.CoordinationServiceError='']")
    got = _findings(tmp_path, own + "\n")
    assert (got[0]["code"], got[0]["cause"]) == ("LOG106", "collective_timeout_straggler")
    # the same report about another task is that task gone
    other = _findings(tmp_path, own.replace("task:0", "task:2") + "\n")
    assert (other[0]["code"], other[0]["title"]) == ("LOG103", "JAX's coordination service lost task 2")


def test_a_wait_for_an_nccl_clique_id_names_the_root_process(tmp_path: Path) -> None:
    got = _findings(tmp_path, _ID_WAIT + "\n")
    assert (got[0]["code"], got[0]["cause"]) == ("LOG107", "collective_timeout_straggler")
    assert got[0]["title"] == ("processes waited 10m for the NCCL id of a 30-device clique: the process of root device 0 "
                               "never published it")


# xla/service/rendezvous.cc (AwaitAndLogIfStuck), its format strings filled as a JAX job on 4 local GPUs prints them
_CLIQUE_NAME = "initialize clique for rank 3; clique=devices=[0,1,2,3]; stream=0; run_id=1873"
_STUCK = (f"E0926 17:26:32.075587  157988 rendezvous.cc:38] [id=3] This thread has been waiting for `{_CLIQUE_NAME}` "
          "for 10 seconds and may be stuck. Expected 4 threads to join the rendezvous, but not all of them arrived on "
          "time.")
_TERMINATED = (f"F0926 17:26:52.075587  157988 rendezvous.cc:71] [id=3] Termination timeout for `{_CLIQUE_NAME}` of "
               "30 seconds exceeded. Exiting to ensure a consistent program state. Expected 4 threads to join the "
               "rendezvous, but only 3 of them arrived on time.")
_UNSTUCK = (f"E0926 17:26:40.075587  157988 rendezvous.cc:60] [id=3] This thread is unstuck waiting for `{_CLIQUE_NAME}` "
            "after 18.2s. Threads joined rendezvous with significant delay, system can be overloaded and theads make "
            "progess at different rate. Warning above was a false-positive. Perhaps the timeout is too short.")


def test_xla_rendezvous_row_matches_its_lines_and_not_the_unstuck_note() -> None:
    check_row("xla_rendezvous_stuck", _STUCK, _UNSTUCK)
    check_row("xla_rendezvous_stuck", _TERMINATED, "Error: Command timed out after 60 seconds. The command may be stuck")
    check_row("xla_rendezvous_unstuck", _UNSTUCK, _STUCK)


def test_a_rendezvous_that_timed_out_names_the_collective_and_who_arrived(tmp_path: Path) -> None:
    got = _findings(tmp_path, f"{_STUCK}\n{_TERMINATED}\n")
    assert got[0]["code"] == "LOG109" and got[0]["cause"] == "collective_timeout_straggler"
    assert "initialize clique for rank 3" in got[0]["title"] and "3 of 4 arrived" in got[0]["title"]
    assert "firewall_or_port_blocked" in {f["cause"] for f in got[1:]}  # an NCCL clique: the network is an alternative


def test_a_rendezvous_that_completed_after_its_warning_is_no_cause(tmp_path: Path) -> None:
    assert _findings(tmp_path, f"{_STUCK}\n{_UNSTUCK}\n") == []


def test_a_rendezvous_after_a_dead_task_is_its_echo(tmp_path: Path) -> None:
    got = _findings(tmp_path, f"{_TERMINATING}\n/job:jax_worker/replica:0/task:3\n{_STUCK}\n")
    assert got[0]["code"] == "LOG103"
    assert any(f["code"] == "LOG109" and f["consequence_of"] for f in got[1:])
