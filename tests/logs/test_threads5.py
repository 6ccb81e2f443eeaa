"""Public failure threads, round 5 (fixtures/logs/threads/*/PROVENANCE.md names each thread).

Each rule row has a real line and a near-miss that must not match; the fixtures run through `commdoctor logs
--json` as a user would (the fixture test of test_threads.py, with this round's cases).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from logs import test_threads as round1
from logs.test_corpus import diagnose_file
from logs.test_rule_rows import check_row

ROWS = [
    # (rule id, real line, near-miss)
    # accelerate/commands/launch.py: the launcher's own check of the main process port before torch starts.
    ("accelerate_port_in_use", "ConnectionError: Tried to launch distributed communication on port `29144`, but "
     "another process is utilizing it. Please specify a different port (such as using the `--main_process_port` flag "
     "or specifying a different `main_process_port` in your config file) and rerun your script. To automatically use "
     "the next open port (on a single node), you can set this to `0`.",  # huggingface/accelerate#2955
     "Tried to launch distributed communication on port `29500`."),
    # Slurm task/cgroup: "Detected %u oom_kill event%s in %ps. Some of the step tasks have been OOM Killed." (older
    # "oom-kill event(s) in step ... cgroup"); srun: "srun: error: {node}: task(s) {ids}: Out Of Memory".
    ("slurm_oom_kill", "slurmstepd: error: Detected 1 oom_kill event in StepId=440575.0. Some of the step tasks have "
     "been OOM Killed.",  # chrisknewman/tusas#149
     "slurmstepd: error: *** STEP 440575.0 ON nid001277 CANCELLED AT 2023-12-05T07:16:01 ***"),
    ("slurm_oom_kill", "srun: error: nid001277: tasks 1-3: Out Of Memory",  # chrisknewman/tusas#149
     "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 76.00 MiB."),
    ("slurm_oom_kill", "slurmstepd: error: Detected 2 oom-kill event(s) in step 3756240.batch cgroup.",  # lanl/PyBNF#118
     "srun: error: node107: task 0: Exited with exit code 1"),
    # slurmstepd's "*** STEP|JOB id ON node CANCELLED AT time [DUE TO ...] ***" and srun's "task N: <strsignal>"
    # (lines quoted in public job notes); srun's own step messages and an exit status are not these.
    ("slurm_cancelled", "slurmstepd: error: *** STEP 18958691.0 ON wbl009 CANCELLED AT 2021-04-08T15:43:02 DUE TO TIME "
     "LIMIT ***",
     "srun: Job step aborted: Waiting up to 32 seconds for job step to finish."),
    ("slurm_cancelled", "slurmstepd: error: *** STEP 255506.0 ON ramses16304 CANCELLED AT 2024-12-20T14:27:46 ***",
     "srun: Terminating StepId=255506.0"),
    ("srun_task_signal", "srun: error: wbl009: task 0: Killed",
     "srun: error: node107: task 0: Exited with exit code 1"),
    # kubectl describe pod: "Last State: Terminated / Reason: OOMKilled / Exit Code: 137" (the Kubernetes docs'
    # simmemleak example); `kubectl get pods` shows OOMKilled as the STATUS (the docs' memory-demo-2 example).
    ("k8s_oom_killed", "        Reason:       OOMKilled",
     "        Reason:       Error"),
    ("k8s_oom_killed", "memory-demo-2   0/1     OOMKilled   2          24s",
     "memory-demo-2   0/1     CrashLoopBackOff   2          40s"),
    # torch/csrc/DataLoader.cpp: "DataLoader worker (pid {pid}) is killed by signal: {strsignal}." SIGKILL reads
    # "Killed"; a Bus error names /dev/shm and is the shm rule's.
    ("dataloader_killed", "RuntimeError: DataLoader worker (pid 13772) is killed by signal: Killed.",  # CompVis/latent-diffusion#76
     "RuntimeError: DataLoader worker (pid 3855) is killed by signal: Bus error. It is possible that dataloader's "
     "workers are out of shared memory. Please try to raise your shared memory limit."),  # ultralytics/yolov3#1151
    # deepspeed/launcher/launch.py sigkill_handler: "{cmd} exits with return code = {returncode}"; -N is signal N.
    ("process_died", "[2023-04-07 13:09:33,220] [ERROR] [launch.py:324:sigkill_handler] ['/usr/bin/python3', '-u', "
     "'run_clm.py', '--local_rank=0'] exits with return code = -9",  # deepspeedai/DeepSpeed#3160
     "[2024-02-24 04:37:50,021] [ERROR] [launch.py:321:sigkill_handler] ['/usr/bin/python3', '-u', 'train.py'] exits "
     "with return code = 1"),  # huggingface/accelerate#2468: the rank raised; its traceback is the cause
    # ray/exceptions.py ActorDiedError / RayActorError; an exception raised in the actor's own code reads differently.
    ("ray_actor_died", "ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this task.",  # Simple-Efficient/RL-Factory#8
     "ray.exceptions.ActorDiedError: The actor died because of an error raised in its creation task, "
     "ray::RayWorkerWrapper.__init__() (pid=4009, ip=10.0.0.1)"),
    ("ray_actor_died", "ray.exceptions.RayActorError: The actor died unexpectedly before finishing this task.",  # ray-project/ray#18586
     "ray.exceptions.RayTaskError(ValueError): ray::TaskRunner.run() (pid=18948, ip=10.164.37.106)"),
    # rccl/src/init.cc: WARN("Missing \"iommu=pt\" from kernel command line which can lead to system instablity or hang!")
    ("rccl_iommu", "supllm:402:402 [0] /longer_pathname_so_that_rpms_can_support_packaging_the_debug_info_for_all_os_"
     "profiles/src/out/ubuntu-22.04/22.04/build/rccl/hipify/src/init.cc:179 NCCL WARN Missing \"iommu=pt\" from kernel "
     "command line which can lead to system instablity or hang!",  # ROCm/vllm#390
     "[    0.000000] Command line: BOOT_IMAGE=/vmlinuz-6.8.0 root=/dev/sda1 ro amd_iommu=on iommu=pt"),
    # init.cc: WARN("Invalid config blocking attribute value %d"); -2147483648 is NCCL >= 2.17's "unset" marker
    # reaching an older libnccl. Another value is a program setting a wrong value, not two libraries.
    ("nccl_config_undef", "dsw-226-64b7566f8b-xz9j6:71868:71868 [0] init.cc:1270 NCCL WARN Invalid config blocking "
     "attribute value -2147483648",  # NVIDIA/Megatron-LM#596
     "node:1:1 [0] init.cc:1270 NCCL WARN Invalid config blocking attribute value 2"),
    # torch/distributed/rendezvous.py _env_error: a process no launcher started; a tcp:// URL without a port is
    # a different mistake (the URL itself).
    ("env_rendezvous_unset", "ValueError: Error initializing torch.distributed using env:// rendezvous: environment "
     "variable RANK expected, but not set",  # HRNet/HRNet-Semantic-Segmentation#35
     "ValueError: Error initializing torch.distributed using tcp:// rendezvous: port number missing"),
    ("env_rendezvous_unset", "ValueError: Error initializing torch.distributed using env:// rendezvous: environment "
     "variable MASTER_ADDR expected, but not set",  # pytorch/pytorch#39832
     "[W socket.cpp:601] [c10d] The client socket has failed to connect to [localhost]:29500 (errno: 99 - Cannot "
     "assign requested address)."),
    ("env_rendezvous_unset", "KeyError: 'RANK'",  # facebookresearch/DeeperCluster#2: os.environ['RANK'] in plain python
     "KeyError: 'RANKING'"),
    # Open MPI's rmaps help text, horovodrun's own check, srun's step creation: more processes than slots.
    ("launch_slots", "There are not enough slots available in the system to satisfy the 2 slots ",  # horovod/horovod#978
     "mpirun noticed that process rank 0 with PID 0 on node gpu01 exited on signal 9 (Killed)."),
    ("launch_slots", "ValueError: Process number should not be larger than total available slots.",  # horovod/horovod#2090
     "ValueError: Process number should not be larger than total available GPUs."),
    ("launch_slots", "srun: error: Unable to create step for job 99825: More processors requested than permitted",
     "srun: error: Unable to create step for job 99825: Requested node configuration is not available"),
    # NCCL < 2.12 ibvwrap: "Call to ibv_create_qp failed" with no errno; later versions append "with error %s".
    ("ib_create_bare", "hai-a100-3:3778851:3779883 [4] ibvwrap.c:130 NCCL WARN Call to ibv_create_qp failed",  # NVIDIA/nccl#562
     "node08:1:1 [0] misc/ibvwrap.cc:280 NCCL WARN Call to ibv_create_qp failed with error Invalid argument"),
    ("ib_create_bare", "spark01:2683:2826 [0] misc/ibvwrap.cc:268 NCCL WARN Call to ibv_create_cq failed",  # NVIDIA/nccl#380
     "spark01:2683:2826 [0] misc/ibvwrap.cc:268 NCCL WARN Call to ibv_create_cq failed with error Cannot allocate "
     "memory"),
]


@pytest.mark.parametrize("rule, line, near", ROWS, ids=[f"{r[0]}-{i}" for i, r in enumerate(ROWS)])
def test_row_matches_its_line_and_not_the_near_miss(rule: str, line: str, near: str) -> None:
    check_row(rule, line, near)


def test_slurm_oom_kill_names_the_tasks_and_outranks_the_cancelled_step(tmp_path: Path) -> None:
    p = tmp_path / "slurm.out"
    p.write_text((round1.FIX / "tusas-149-srun-tasks-oom-killed" / "log.txt").read_text())
    first = diagnose_file(p)["findings"][0]
    assert (first["code"], first["cause"]) == ("LOG060", "peer_process_died")
    assert "1-3" in first["title"] and "nid001277" in first["title"]


def test_accelerate_port_check_names_the_port(tmp_path: Path) -> None:
    p = tmp_path / "launch.log"
    p.write_text((round1.FIX / "accelerate-2955-main-process-port-taken" / "log.txt").read_text())
    first = diagnose_file(p)["findings"][0]
    assert (first["code"], first["cause"]) == ("LOG010", "port_conflict") and "29144" in first["title"]


def test_deepspeed_return_code_names_the_signal_and_an_abort_after_a_timeout_is_the_echo(tmp_path: Path) -> None:
    p = tmp_path / "ds.log"
    p.write_text((round1.FIX / "deepspeed-3232-launcher-return-code-9" / "log.txt").read_text())
    first = diagnose_file(p)["findings"][0]
    assert (first["code"], first["cause"]) == ("LOG060", "peer_process_died") and "SIGKILL" in first["title"]
    q = tmp_path / "abort.log"  # return code -6 after a watchdog timeout: the timeout is the cause, the abort follows
    q.write_text("[rank0]:[E ProcessGroupNCCL.cpp:474] [Rank 0] Watchdog caught collective operation timeout: "
                 "WorkNCCL(SeqNum=3, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=1800000) ran for 1800668 "
                 "milliseconds before timing out.\n[2023-04-07 13:09:33,220] [ERROR] [launch.py:324:sigkill_handler] "
                 "['python', '-u', 'train.py', '--local_rank=0'] exits with return code = -6\n")
    assert diagnose_file(q)["findings"][0]["cause"] != "peer_process_died"


def test_rccl_iommu_warning_is_the_cause_of_a_failed_job_and_a_risk_in_a_working_one(tmp_path: Path) -> None:
    warn = ("supllm:402:402 [0] /x/rccl/hipify/src/init.cc:179 NCCL WARN Missing \"iommu=pt\" from kernel command line "
            "which can lead to system instablity or hang!\n")
    p = tmp_path / "hang.log"
    p.write_text(warn + "[rank0]:[E ProcessGroupNCCL.cpp:474] [Rank 0] Watchdog caught collective operation timeout: "
                 "WorkNCCL(SeqNum=3, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600668 "
                 "milliseconds before timing out.\n")
    first = diagnose_file(p)["findings"][0]
    assert (first["code"], first["cause"], first["severity"]) == ("LOG038", "p2p_acs_iommu", "error")
    q = tmp_path / "ok.log"  # the same warning in a job that initialised and ran: only a warning
    q.write_text(warn + "supllm:402:402 [0] NCCL INFO comm 0x7f1 rank 0 nranks 2 cudaDev 0 busId 3000 - Init COMPLETE\n")
    assert all(f["severity"] != "error" for f in diagnose_file(q)["findings"])


def test_slurm_cancel_is_named_and_a_timeout_before_it_stays_first(tmp_path: Path) -> None:
    cancel = ("slurmstepd: error: *** STEP 18958691.0 ON wbl009 CANCELLED AT 2021-04-08T15:43:02 DUE TO TIME LIMIT ***\n"
              "srun: error: wbl009: task 0: Killed\n")
    p = tmp_path / "cancel.log"  # a job Slurm stopped at its time limit is not healthy
    p.write_text(cancel)
    first = diagnose_file(p)["findings"][0]
    assert (first["code"], first["cause"]) == ("LOG060", "peer_process_died") and "time limit" in first["title"]
    q = tmp_path / "hang.log"  # the job hung first: the timeout is the cause, the cancel what followed
    q.write_text("[rank1]:[E ProcessGroupNCCL.cpp:474] [Rank 1] Watchdog caught collective operation timeout: "
                 "WorkNCCL(SeqNum=3, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=1800000) ran for 1800668 "
                 "milliseconds before timing out.\n" + cancel)
    assert diagnose_file(q)["findings"][0]["cause"] == "collective_timeout_straggler"


def test_dataloader_bus_error_stays_shared_memory(tmp_path: Path) -> None:
    p = tmp_path / "bus.log"  # a worker killed by SIGBUS is /dev/shm, not host memory
    p.write_text("RuntimeError: DataLoader worker (pid 3855) is killed by signal: Bus error. It is possible that "
                 "dataloader's workers are out of shared memory. Please try to raise your shared memory limit.\n")
    causes = [f["cause"] for f in diagnose_file(p)["findings"]]
    assert causes[0] == "shm_too_small" and "peer_process_died" not in causes[:1]


# (fixture, the first cause `commdoctor logs --json` must give, causes that must be among the first three)
FIXTURES = [
    ("accelerate-2955-main-process-port-taken", "port_conflict", ()),
    ("tusas-149-srun-tasks-oom-killed", "peer_process_died", ()),
    ("latentdiffusion-76-ddp-dataloader-killed", "peer_process_died", ()),
    ("nccl-562-pyxis-create-qp-memlock", "rlimit_memlock", ()),
    ("deepspeed-3232-launcher-return-code-9", "peer_process_died", ()),
    ("rlfactory-8-ray-actor-died", "peer_process_died", ()),
    ("rocmvllm-390-rccl-missing-iommu-pt", "p2p_acs_iommu", ()),
    ("vllm-1726-two-nccl-wheels-blocking-int-min", "version_mismatch", ()),
    ("horovod-978-not-enough-slots", "launcher_misconfig", ()),
    ("hrnet-35-rank-not-set-no-launcher", "launcher_misconfig", ()),
]


@pytest.mark.parametrize("slug, first, top3", FIXTURES, ids=[f[0] for f in FIXTURES])
def test_public_thread_fixture_round5(slug: str, first: str | None, top3: tuple[str, ...]) -> None:
    round1.test_public_thread_fixture(slug, first, top3)


# NCCL prints its interface list on the "NET/Socket : Using" line ("[0]eno1:172.18.40.41<0> [1]veth...<0>"); posts
# often wrap it, the header alone and one "[N]name:addr<0>" per line. Oneflow-Inc/oneflow#3586's list, wrapped so.
_WRAPPED = ("worker:101542:101542 [0] NCCL INFO NET/Socket : Using\n"
            "[0]eno1:172.18.40.41<0>\n"
            "[1]veth25f2e72:fe80::380d:bfff:fe5b:54d2%veth25f2e72<0>\n")
_SYSTEM_ERROR = "ncclSystemError: System call (socket, malloc, munmap, etc) failed\n"


def test_interface_list_wrapped_one_item_per_line_is_still_read(tmp_path: Path) -> None:
    p = tmp_path / "wrapped.log"
    p.write_text(_SYSTEM_ERROR + _WRAPPED)
    first = diagnose_file(p)["findings"][0]
    assert (first["code"], first["cause"]) == ("LOG020", "wrong_interface") and "veth25f2e72" in first["title"]
    assert "eno1" not in first["title"]


def test_interface_items_without_their_header_are_not_an_interface_list(tmp_path: Path) -> None:
    p = tmp_path / "noheader.log"  # the same items after an unrelated line: nothing says they are NCCL's interfaces
    p.write_text(_SYSTEM_ERROR + "worker:101542:101542 [0] NCCL INFO Using network Socket\n"
                 + "".join(_WRAPPED.splitlines(keepends=True)[1:]))
    assert "LOG020" not in [f["code"] for f in diagnose_file(p)["findings"]]


def test_wrapped_interface_list_of_a_working_job_is_only_the_warning_the_one_line_list_gives(tmp_path: Path) -> None:
    done = "worker:101542:101934 [0] NCCL INFO comm 0x7f1 rank 0 nranks 2 cudaDev 0 busId 18000 - Init COMPLETE\n"
    p = tmp_path / "wrapped.log"
    p.write_text(_WRAPPED + done)
    q = tmp_path / "oneline.log"
    q.write_text(" ".join(_WRAPPED.splitlines()) + "\n" + done)
    got = [(f["code"], f["severity"]) for f in diagnose_file(p)["findings"] if f["cause"]]
    assert got == [(f["code"], f["severity"]) for f in diagnose_file(q)["findings"] if f["cause"]]
    assert got == [("LOG020", "warning")]
