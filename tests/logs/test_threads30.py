"""Public failure threads, round 43: the fabric manager's own log.

nvidia-fabricmanager writes its log (/var/log/fabricmanager.log) as "[Mon D YYYY hh:mm:ss] [LEVEL] [tid N] message". Its
errors about the NVLink SHARP multicast teams CUDA asks of it for NCCL, or about its switches and links, say the NVSwitch
fabric is in a bad state; its INFO lines about the same teams are its ordinary traffic.
"""

from __future__ import annotations

from pathlib import Path

from logs.test_corpus import diagnose_file
from logs.test_rule_rows import check_row

# NVIDIA/nccl#1043: nccl-tests hung or aborted with NCCL 2.18/2.19 (NVLS) on one node, not with 2.16; the node's fabric
# manager log, posted from it. Rebooting the node fixed it.
_FM = """\
[Oct 31 2023 20:59:37] [INFO] [tid 527113] Received an inband message:  Message header details: magic Id:adbc request Id:37f37b2d0f6aa49b status:0 type:4 length:14
Message payload details:Team release request: Team Handle:ed8c03d28a369634 Flags:0

[Oct 31 2023 20:59:37] [ERROR] [tid 527118] failed to release multicast team with handle 17117060486525261364, cannot find the team
[Oct 31 2023 21:11:20] [ERROR] [tid 527118] failed to find the GPU handle 12766911663723876521 in the multicast team request setup 4285537028137661651.
[Oct 31 2023 21:11:20] [INFO] [tid 526859] Sending inband response message:  Message header details: magic Id:adbc request Id:3b794938a9edb4d3 status:57 type:3 length:24
"""


def test_the_fabric_managers_errors_about_multicast_teams_are_the_fabric(tmp_path: Path) -> None:
    check_row("fm_log_error", _FM.splitlines()[3],
              "[Oct 31 2023 20:59:37] [INFO] [tid 527113] Received an inband message: Team release request: multicast team")
    p = tmp_path / "fabricmanager.log"
    p.write_text(_FM)
    found = [f for f in diagnose_file(p)["findings"] if f["cause"]]
    assert (found[0]["code"], found[0]["cause"]) == ("LOG033", "fabric_manager_nvls")
    assert "multicast team" in found[0]["evidence"][0]["text"] and "reset or reboot the node" in found[0]["detail"]


def test_the_fabric_managers_ordinary_traffic_is_no_failure(tmp_path: Path) -> None:
    p = tmp_path / "fabricmanager.log"
    p.write_text("".join(line + "\n" for line in _FM.splitlines() if "[ERROR]" not in line))
    assert [f for f in diagnose_file(p)["findings"] if f["cause"]] == []


# Wan-Video/Wan2.2#176: generate.py on 4 GPUs with --ulysses_size 8 (the sequence-parallel size must be the world size).
_WAN = """\
[rank0]:   File "/opt/nas/n/xugang/Wan2.2/generate.py", line 343, in generate
[rank0]:     assert args.ulysses_size == world_size, f"The number of ulysses_size should be equal to the world size."
[rank0]: AssertionError: The number of ulysses_size should be equal to the world size.
"""


def test_an_exception_over_the_world_size_is_the_launch_not_fitting_the_job(tmp_path: Path) -> None:
    """Any stack's own check that the world size (the processes the launch started) divides, equals or fits its
    parallel layout is the launch not matching the job (LOG066), whatever its words."""
    check_row("parallel_sizes", _WAN.splitlines()[2],
              # Pai-Megatron-Patch#332: a tensor's shape against the tensor-parallel size, no world size in it
              "[rank0]: AssertionError: First dimension of the tensor should be divisible by tensor parallel size")
    # verl-project/verl#1785: one GPU per pod, tensor parallel 2 asked of the rollout
    check_row("parallel_sizes", "AssertionError: rollout world_size: 1 is not divisible by infer_tp: 2",
              "AssertionError: rollout batch_size: 1 is not divisible by infer_tp: 2")
    p = tmp_path / "job.log"
    p.write_text(_WAN)
    found = [f for f in diagnose_file(p)["findings"] if f["cause"]]
    assert (found[0]["code"], found[0]["cause"]) == ("LOG066", "launcher_misconfig")
    assert "should be equal to the world size" in found[0]["title"]


def test_a_constraint_between_the_model_and_a_parallel_size_is_the_programs(tmp_path: Path) -> None:
    p = tmp_path / "job.log"
    p.write_text("[rank0]: AssertionError: First dimension of the tensor should be divisible by tensor parallel size\n")
    found = [f for f in diagnose_file(p)["findings"] if f["cause"]]
    assert [f["cause"] for f in found] == ["other"] and found[0]["code"] != "LOG066"  # rank 0's own error (LOG115)


# apptainer/apptainer#769: Open MPI + UCX ranks started by the host's mpirun, each in its own `apptainer exec` of a
# non-setuid install (one user namespace, and PID namespace view, per rank): the peer's /proc link does not exist here.
_APPTAINER = """\
[1665612809.408366] [sh03-01n71:20358:0]       mm_posix.c:194  UCX  ERROR open(file_name=/proc/20353/fd/18 flags=0x0) failed: No such file or directory
[1665612809.408388] [sh03-01n71:20358:0]          mm_ep.c:154  UCX  ERROR mm ep failed to connect to remote FIFO id 0xc000000480004f81: Shared memory error
[sh03-01n71.int:20358] pml_ucx.c:419  Error: ucp_ep_create(proc=0) failed: Shared memory error
"""


def test_a_peers_proc_link_missing_in_this_namespace_is_not_dev_shm(tmp_path: Path) -> None:
    check_row("ucx_shm_attach", _APPTAINER.splitlines()[0],
              "[1665612809.408366] [sh03-01n71:20358:0]       mm_posix.c:194  UCX  ERROR open(file_name=/proc/20353/fd/18 "
              "flags=0x0) failed: Too many open files")
    p = tmp_path / "mpi.log"
    p.write_text(_APPTAINER)
    found = [f for f in diagnose_file(p)["findings"] if f["cause"]]
    assert (found[0]["code"], found[0]["cause"]) == ("LOG084", "other")
    assert "another namespace" in found[0]["title"] and found[1]["cause"] == "shm_too_small"  # the alternative


# pytorch/pytorch#70546: an RPC test's TensorPipe agent could not listen (the CI job's log, as a maintainer quoted it).
_TP = """\
2021-12-17T19:38:54.0780097Z   test_tensorpipe_set_default_timeout (__main__.TensorPipeTensorPipeAgentRpcTest) ... terminate called after throwing an instance of 'std::runtime_error'
2021-12-17T19:38:54.0783014Z   what():  In listenFromLoop at tensorpipe/transport/uv/uv.h:176 "rv < 0: address already in use"
2021-12-17T19:38:54.0856026Z SIGABRT(6), PID: 11052, Thread 11052: 
"""


def test_tensorpipes_listen_failure_is_the_port_taken(tmp_path: Path) -> None:
    check_row("port_in_use", _TP.splitlines()[1],
              '  what():  In connectFromLoop at tensorpipe/transport/uv/uv.h:176 "rv < 0: connection refused"')
    p = tmp_path / "ci.log"
    p.write_text(_TP)
    found = [f for f in diagnose_file(p)["findings"] if f["cause"]]
    assert (found[0]["code"], found[0]["cause"]) == ("LOG010", "port_conflict")
    assert found[0]["title"] == "port (not named in the message) is already in use on the rendezvous host"
    assert found[1]["code"] == "LOG060" and found[1]["consequence_of"] == "LOG010"  # the abort on that exception


# A Korean blog (9566.tistory.com/568): two GPUs in one pod, the first ALLREDUCE timed out and mp.spawn reported the
# rank that the watchdog took down.
_SPAWN_ABRT = """\
Watchdog caught collective operation timeout:
WorkNCCL(SeqNum=1, OpType=ALLREDUCE)

c10::DistBackendError: watchdog thread terminated with exception
process 1 terminated with signal SIGABRT
"""


def test_a_spawned_rank_the_watchdog_aborted_follows_from_the_timeout(tmp_path: Path) -> None:
    p = tmp_path / "job.log"
    p.write_text(_SPAWN_ABRT)
    found = [f for f in diagnose_file(p)["findings"] if f["cause"]]
    assert found[0]["code"] == "LOG051"
    died = next(f for f in found if f["code"] == "LOG060")
    assert died["consequence_of"] == "LOG051" and "aborting itself" in died["detail"]
    # the same report with no reason in the logs, or of another signal, is the death itself
    q = tmp_path / "alone.log"
    q.write_text("process 1 terminated with signal SIGABRT\n")
    assert [(f["code"], f["consequence_of"]) for f in diagnose_file(q)["findings"] if f["cause"]][:1] == [("LOG060", None)]
    r = tmp_path / "killed.log"
    r.write_text("process 1 terminated with signal SIGKILL\n" + "".join(_SPAWN_ABRT.splitlines(True)[:2]))
    assert [f["code"] for f in diagnose_file(r)["findings"] if f["cause"]][:1] == ["LOG060"]


def test_the_launchers_hostfile_that_cannot_be_used_is_the_launch() -> None:
    # The lines as the launchers' format strings print them: MPICH's Hydra (HYDU_parse_hostfile), ColossalAI's CLI.
    check_row("launcher_hostfile", "[mpiexec@node01] HYDU_parse_hostfile (lib/utils/args.c:324): unable to open host "
                                   "file: hosts.txt",
              "[mpiexec@node01] HYDU_parse_hostfile (lib/utils/args.c:324): reading host file: hosts.txt")
    check_row("launcher_hostfile", "Error: found duplicate host node-1 in the hostfile",
              "[INFO] Using hostfile at ./hostfile with 2 hosts")


def test_a_hostfile_the_launcher_cannot_open_is_named(tmp_path: Path) -> None:
    p = tmp_path / "launch.log"
    p.write_text("Error: Unable to find the hostfile, no such file: ./hostfile\n")
    found = [f for f in diagnose_file(p)["findings"] if f["cause"]]
    assert (found[0]["code"], found[0]["cause"]) == ("LOG066", "launcher_misconfig")
    assert "cannot be opened" in found[0]["title"]


# huggingface/accelerate#1831: notebook_launcher refused to fork in a Jupyter kernel where an import had initialised
# CUDA; the head of IPython's traceback, as posted.
_IPY = """\
ValueError                                Traceback (most recent call last)
Cell In[7], line 1
----> 1 notebook_launcher(run, num_processes = 2)
File ~/anaconda3/envs/pytorch_p310/lib/python3.10/site-packages/accelerate/launchers.py:123, in notebook_launcher(function, args, num_processes, mixed_precision, use_port)
"""


def test_ipythons_traceback_is_a_failure_never_healthy(tmp_path: Path) -> None:
    p = tmp_path / "notebook.log"
    p.write_text(_IPY)
    found = diagnose_file(p)["findings"]
    assert found and found[0]["code"] == "LOG080" and "traceback" in found[0]["title"]
    q = tmp_path / "note.log"
    q.write_text("Note: Traceback (most recent call last) is printed below when a step fails\n")
    assert [f for f in diagnose_file(q)["findings"] if f["code"] == "LOG080"] == []
