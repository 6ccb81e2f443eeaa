"""Public failure threads, round 9 (fixtures/logs/threads/*/PROVENANCE.md names each thread).

Messages whose meaning is spread over lines or left to a code: NCCL's NVLS bind warning, which names the fabric
manager on a line of its own after the CUDA error; NCCL's "invalid argument" at start-up, which its init returns for a
rank outside the world size (a launch that starts more processes than the job declares); and a watchdog timeout
after a program's own "Saving ... checkpoint" line (a rank busy saving, not a hang in the library). Each rule row has
a real line and a near-miss that must not match; the fixtures run through `commdoctor logs --json` as a user would.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from logs import test_threads as round1
from logs.test_corpus import diagnose_file
from logs.test_rule_rows import check_row

ROWS = [
    # (rule id, real line, near-miss)
    # transport/nvls.cc: "Failed to bind NVLink SHARP (NVLS) Multicast memory of size %zu ...: CUDA error %d '%s'.\n
    # This is usually caused by a system or configuration error in the Fabric Manager or NVSwitches." The advice to
    # disable NVLS on its own is not the failure.
    ("fabric_not_ready", "Failed to bind NVLink SHARP (NVLS) Multicast memory of size 2097152:",  # pytorch/ci-infra#541
     "NCCL INFO NVLS multicast support is available on dev 0 (NVLS_NCHANNELS 16)"),
    ("fabric_not_ready", "This is usually caused by a system or configuration error in the Fabric Manager or NVSwitches.",
     "Disable NVLS (NCCL_NVLS_ENABLE=0) if you wish to avoid this error in the future."),
    # init.cc: WARN("Invalid rank requested : %d/%d", myrank, nranks); a rank inside the range is NCCL's init INFO.
    ("nccl_rank_range", "job-pytorch-distr-nccl-1612503130-4b919e08-worker-1:25:25 [0] init.cc:981 NCCL WARN Invalid "
     "rank requested : 2/2",  # Azure/AML-Kubernetes#58
     "n1:4242:4300 [0] NCCL INFO ncclCommInitRank comm 0x55 rank 1 nranks 2 cudaDev 1 busId 1b000 - Init COMPLETE"),
    # ncclGetErrorString(ncclInvalidArgument) as torch quotes it; a CUDA call's 'invalid argument' is another failure.
    ("nccl_invalid_argument", "RuntimeError: NCCL error in: /pytorch/torch/lib/c10d/../c10d/NCCLUtils.hpp:82, invalid "
     "argument, NCCL version 2.4.8",  # facebookresearch/ParlAI#3084
     "gpu46:78367:78492 [0] transport/nvls.cc:244 NCCL WARN Cuda failure 1 'invalid argument'"),  # NVIDIA/nccl#1562
    # nv-fabricmanager's start-up check against the loaded driver; the driver's own version banner is not it.
    ("fabric_manager_down", "Nov 05 13:55:26 node1 nv-fabricmanager[104230]: fabric manager NVIDIA GPU driver interface "
     "version 550.127.05 don't match with driver version 550.120. Please update with matching NVIDIA driver package.",
     "| NVIDIA-SMI 550.120                Driver Version: 550.120        CUDA Version: 12.4     |"),
    # systemctl status: the unit's ExecStart exited non-zero (pytorch/pytorch#129749); a clean exit is not a failure.
    ("fabric_manager_down", "    Process: 444114 ExecStart=/usr/bin/nv-fabricmanager -c /usr/share/nvidia/nvswitch/"
     "fabricmanager.cfg (code=exited, status=1/FAILURE)",
     "    Process: 444114 ExecStart=/usr/bin/nv-fabricmanager -c /usr/share/nvidia/nvswitch/fabricmanager.cfg "
     "(code=exited, status=0/SUCCESS)"),
    ("fabric_manager_down", "Aug 11 06:47:54 sprocket systemd[1]: nvidia-fabricmanager.service: Failed with result "
     "'exit-code'.", "Aug 11 06:47:54 sprocket systemd[1]: Started NVIDIA fabric manager service."),
    # Intel MPI's Hydra could not start its proxy on a node (Azure/az-hop#906; 2019's wording from firemodels/fds#8508);
    # the launch arguments it prints before trying are not the failure (volcano-sh/volcano#2398).
    ("hydra_bstrap", "[mpiexec@hb120v3-3] check_exit_codes (../../../../../src/pm/i_hydra/libhydra/demux/hydra_demux_poll"
     ".c:117): unable to run bstrap_proxy on hb120v3-3.internal.cloudapp.net (pid 12608, exit code 256)",
     "[mpiexec@mpi-test-launcher-0] Launch arguments: /usr/bin/ssh -q -x mpi-test-worker-0.mpi-test /opt/intel/oneapi/mpi/"
     "2021.6.0//bin//hydra_bstrap_proxy --upstream-host mpi-test-launcher-0 --upstream-port 42983 --pgid 0"),
    ("hydra_bstrap", "[mpiexec@runner-d8zbrqlyc-project-80-concurrent-0] Error: Unable to run bstrap_proxy on "
     "localhost:2 (pid 13546, exit code 65280)",  # BLAST-WarpX/warpx#6980: no sshd in the CI container
     "[mpiexec@runner-d8zbrqlyc-project-80-concurrent-0] Launch arguments: /usr/bin/ssh -q -x localhost "
     "hydra_bstrap_proxy --upstream-host runner --upstream-port 40123"),
    ("hydra_bstrap", "mpiexec@machine1] check_exit_codes (../../../../../src/pm/i_hydra/libhydra/demux/hydra_demux_poll.c:"
     "114): unable to run proxy on machine2.eu.airbus.corp (pid 39814)",
     "[mpiexec@machine1] main (../../../../../src/pm/i_hydra/mpiexec/mpiexec.c:1881): running the job"),
    # UCX could not attach a peer's shared-memory segment (openucx/ucx#8511; the /proc link refused in a container,
    # openucx/ucx#4511); a peer with no transport at all is the unreachable row's.
    ("ucx_shm_attach", "[1665173472.252818] [slurm-slehpc15-james-hpc-pg0-12:44314:0]           mm_ep.c:159  UCX  ERROR   "
     "mm ep failed to connect to remote FIFO id 0xa0000: Shared memory error",
     "[slurm-slehpc15-james-hpc-pg0-12:44311] pml_ucx.c:419  Error: ucp_ep_create(proc=502) failed: Destination is "
     "unreachable"),
    ("ucx_shm_attach", "[1688710000.495329] [c7:2019617:0]       mm_posix.c:195  UCX  ERROR open(file_name=/proc/2019618/"
     "fd/20 flags=0x0) failed: Permission denied",
     "[1688710000.495329] [c7:2019617:0]       mm_posix.c:195  UCX  ERROR open(file_name=/dev/shm/ucx_shm_posix_7a "
     "flags=0x0) failed: No such file or directory"),
    # Slurm's step request the allocation cannot satisfy (radical-cybertools/radical.pilot#2109); busy nodes are
    # a wait, not a wrong request.
    ("slurm_unsatisfiable", "srun: error: Unable to create step for job XXXX: Requested node configuration is not available",
     "srun: error: Unable to create step for job 4321: Requested nodes are busy"),
    ("slurm_unsatisfiable", "srun: error: Unable to create step for job XXXX: Invalid generic resource (gres) specification",
     "srun: error: Unable to create step for job XXXX: Job/step already completing or completed"),
    # Open MPI's help text when the program is missing on a node; the "N total processes failed to start" after it
    # says how many, not why.
    ("mpi_exec_missing", "mpirun was unable to launch the specified application as it could not access",
     "8 total processes failed to start"),
    # srun's node-fail handler; a task that exited on its own is not a lost node.
    ("srun_node_fail", "srun: error: Node failure on jean-zay-iam37",  # a public training log, then "Job step aborted"
     "srun: error: gpu-node-12: task 3: Exited with exit code 1"),
    # nvidia-smi cannot open a board it lists; "No devices were found" is another state.
    ("gpu_handle_lost", "Unable to determine the device handle for GPU 0000:0B:00.0: Unknown Error",
     "No devices were found"),  # NVIDIA/open-gpu-kernel-modules#387 (fixed by reseating the GPU)
    ("gpu_handle_lost", "Unable to determine the device handle for GPU0000:03:00.0: Unknown Error",  # rwth-i6/returnn#1486
     "Unable to determine the device handle for GPU0000:03:00.0: Not Supported"),
    # A program's own checkpoint-save line; loading one is not a rank busy while the others wait.
    ("busy_hint", "2026-02-18 10:28:25,496 - root - INFO - Saving latest checkpoint model trained for 3 complete epochs",
     "2026-02-18 10:28:25,496 - root - INFO - Loaded latest checkpoint from /ckpt/latest.tar"),  # ai2cm/ace#851
    # DeepSpeed's engine before torch.save of a tag.
    ("busy_hint", "[2024-05-01 10:00:00,000] [INFO] [logging.py:96:log_dist] [Rank 0] [Torch] Checkpoint global_step500 "
     "is about to be saved!",
     "[2024-05-01 10:00:00,000] [INFO] [logging.py:96:log_dist] [Rank 0] Checkpoint global_step500 loaded"),
]

FIXTURES = [
    # (slug, first cause, causes that must be among the first three)
    # NVLS bind failure quoted over three lines: the fabric manager, the bare CUDA failure after it.
    ("ci-infra-541-nvls-bind-401-fm-off", "fabric_manager_nvls", ()),
    # 16 srun tasks for a world size of 2: NCCL's invalid argument at start-up read as the launch.
    ("parlai-3084-world-size-2-of-16-tasks", "launcher_misconfig", ("other",)),
    # NCCL's own rank-range WARN on a Kubernetes worker: the job numbered a worker 2 in a world of 2.
    ("amlk8s-58-invalid-rank-2-of-2", "launcher_misconfig", ()),
    # A watchdog timeout one timeout after "Saving latest checkpoint": the saving rank is late; a library hang second.
    ("ace-851-rank0-checkpoint-watchdog", "collective_timeout_straggler", ("nccl_internal_bug",)),
    # `systemctl status nvidia-fabricmanager` showing the unit failed: the fabric manager is down.
    ("pytorch-129749-fm-failed-systemctl", "fabric_manager_nvls", ()),
    # nvidia-smi cannot open a GPU that fell off the bus (reseated to fix).
    ("ogkm-387-gpu-off-bus-reseat", "hardware_fault", ()),
    # UCX refused a peer's /proc link inside apptainer: that refusal, not /dev/shm's size or the network.
    ("ucx-4511-apptainer-proc-link", "other", ("shm_too_small",)),
    # srun rejecting steps the allocation cannot satisfy (gres, node configuration).
    ("radicalpilot-2109-srun-gres-node-config", "launcher_misconfig", ()),
    # Intel MPI's Hydra in a CI container without sshd: the launcher, not the program.
    ("warpx-6980-impi-hydra-no-sshd", "launcher_misconfig", ()),
    # NCCL 2.18's bare "internal error" on two machines: 2.18 reports failed network calls this way.
    ("rhkb-2-18-internal-error-multinode-ifname", "wrong_interface", ("nccl_internal_bug",)),
]


@pytest.mark.parametrize("rule, line, near", ROWS, ids=[f"{r[0]}-{i}" for i, r in enumerate(ROWS)])
def test_row_matches_its_line_and_not_the_near_miss(rule: str, line: str, near: str) -> None:
    check_row(rule, line, near)


@pytest.mark.parametrize("slug, first, top3", FIXTURES, ids=[f[0] for f in FIXTURES])
def test_public_thread_fixture(slug: str, first: str, top3: tuple[str, ...]) -> None:
    round1.check_fixture(slug, first, top3)


def test_invalid_argument_after_collectives_ran_is_not_read_as_the_launch(tmp_path: Path) -> None:
    p = tmp_path / "rank0.log"  # collectives completed: a bad root or buffer of a later call, not the rank range
    p.write_text("".join(f"[rank0]:[I ProcessGroupNCCL.cpp:1] [Rank 0] WorkNCCL(SeqNum={i}, OpType=ALLREDUCE) completed\n"
                         for i in range(1, 4))
                 + "[rank0]:[E ProcessGroupNCCL.cpp:2] [Rank 0] Watchdog caught collective operation timeout: "
                   "WorkNCCL(SeqNum=40, OpType=BROADCAST, NumelIn=8, NumelOut=8, Timeout(ms)=600000) ran for 600100 "
                   "milliseconds before timing out.\n"
                 + "RuntimeError: NCCL error in: ProcessGroupNCCL.cpp:1296, invalid argument, NCCL version 2.10.3\n")
    assert "launcher_misconfig" not in [f["cause"] for f in diagnose_file(p)["findings"]][:1]


def test_invalid_argument_gives_way_to_a_named_cause(tmp_path: Path) -> None:
    p = tmp_path / "rank0.log"  # the rank-range WARN itself is the finding; the bare code adds no second guess
    p.write_text("n1:42:42 [0] init.cc:1702 NCCL WARN Invalid rank requested : 3/2\n"
                 "RuntimeError: NCCL error in: NCCLUtils.hpp:82, invalid argument, NCCL version 2.18.1\n")
    fs = [f for f in diagnose_file(p)["findings"] if f["cause"]]
    assert fs[0]["cause"] == "launcher_misconfig" and "rank 3 of a world of 2" in fs[0]["title"]
    assert sum(1 for f in fs if f["code"] == "LOG066") == 1


INTERNAL = ("torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1333, "
            "internal error - please report this issue to the NCCL developers, NCCL version {v}\n")


@pytest.mark.parametrize("version, first", [("2.18.1", "wrong_interface"),  # NVIDIA/nccl#1092's title
                                            ("2.19.3", "nccl_internal_bug"), ("2.21.5", "nccl_internal_bug")])
def test_bare_internal_error_is_a_network_call_only_in_nccl_2_18(tmp_path: Path, version: str, first: str) -> None:
    p = tmp_path / "rank0.log"  # 2.18 returned ncclInternalError for failed network calls; 2.19+ names them
    p.write_text(INTERNAL.format(v=version))
    causes = [f["cause"] for f in diagnose_file(p)["findings"] if f["cause"]]
    assert causes[0] == first
    if first == "wrong_interface":  # the library's own defect stays the alternative
        assert "nccl_internal_bug" in causes[:3]


def test_nccl_2_18_internal_error_after_an_oom_stays_behind_the_oom(tmp_path: Path) -> None:
    p = tmp_path / "rank0.log"  # another rule names the cause: the 2.18 reading adds no network guess above it
    p.write_text("n1:42:50 [0] include/alloc.h:178 NCCL WARN Cuda failure 'out of memory'\n" + INTERNAL.format(v="2.18.1"))
    causes = [f["cause"] for f in diagnose_file(p)["findings"] if f["cause"]]
    assert causes[0] == "cuda_oom" and "wrong_interface" not in causes[:1]


STATUS = ("\u25cf {unit}.service - {desc}\n"
          "     Loaded: loaded (/lib/systemd/system/{unit}.service; enabled; vendor preset: enabled)\n"
          "     Active: {state} since Mon 2024-07-01 14:43:57 UTC; 5s ago\n")


def test_systemd_active_line_counts_only_under_the_fabric_manager_unit(tmp_path: Path) -> None:
    down = tmp_path / "down.log"
    down.write_text(STATUS.format(unit="nvidia-fabricmanager", desc="NVIDIA fabric manager service",
                                  state="failed (Result: exit-code)"))
    assert [f["cause"] for f in diagnose_file(down)["findings"]][:1] == ["fabric_manager_nvls"]
    other = tmp_path / "other.log"  # the fabric manager runs; another unit (persistenced) failed: not the fabric
    other.write_text(STATUS.format(unit="nvidia-fabricmanager", desc="NVIDIA fabric manager service",
                                   state="active (running)")
                     + STATUS.format(unit="nvidia-persistenced", desc="NVIDIA Persistence Daemon",
                                     state="failed (Result: exit-code)"))
    assert "fabric_manager_nvls" not in [f["cause"] for f in diagnose_file(other)["findings"]]


def test_ucx_shared_memory_error_is_not_read_as_an_unreachable_peer(tmp_path: Path) -> None:
    p = tmp_path / "rank.log"  # openucx/ucx#8511: the endpoint failed on the shared-memory segment, not the network
    p.write_text("[1665173472.252802] [slurm-slehpc15-james-hpc-pg0-12:44314:0]         mm_sysv.c:56   UCX  ERROR   "
                 "shmat(shmid=655360) failed: Invalid argument\n"
                 "[slurm-slehpc15-james-hpc-pg0-12:44311] pml_ucx.c:419  Error: ucp_ep_create(proc=502) failed: Shared "
                 "memory error\n")
    causes = [f["cause"] for f in diagnose_file(p)["findings"] if f["cause"]]
    assert causes[0] == "shm_too_small" and "wrong_interface" not in causes


def test_ucx_proc_link_refusal_explains_the_shared_memory_error(tmp_path: Path) -> None:
    p = tmp_path / "rank.log"  # openucx/ucx#4511: ranks in an apptainer container; UCX_POSIX_USE_PROC_LINK=n worked
    p.write_text("[1688710000.495329] [c7:2019617:0]       mm_posix.c:195  UCX  ERROR open(file_name=/proc/2019618/fd/20 "
                 "flags=0x0) failed: Permission denied\n"
                 "[1688710000.495363] [c7:2019617:0]          mm_ep.c:155  UCX  ERROR mm ep failed to connect to remote "
                 "FIFO id 0xc0000005001ed122: Shared memory error\n"
                 "[c7:2019617] ../../../../../ompi/mca/pml/ucx/pml_ucx.c:424  Error: ucp_ep_create(proc=1) failed: Shared "
                 "memory error\n")
    fs = [f for f in diagnose_file(p)["findings"] if f["cause"]]
    assert (fs[0]["code"], fs[0]["cause"]) == ("LOG084", "other")
    assert "wrong_interface" not in [f["cause"] for f in fs]
