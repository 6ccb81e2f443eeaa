"""Public failure threads, round 27: JAX and XLA's coordination service.

``jax.distributed.initialize`` starts XLA's coordination service on process 0 and connects every process to it. Its
messages name processes as tasks (``/job:jax_worker/replica:0/task:N``, N = process_id) and list them on the lines
after the message. Three readings: a connect barrier that expired (processes never started or never connected), a
task that stopped sending heartbeats (it died; the others are terminated with that message), and any other barrier
that expired (a task late or absent).
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
