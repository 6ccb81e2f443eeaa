"""What the GPU driver, CUDA and the worker pools around a job (Ray, vLLM) say when they fail, read for what each
message means in its source: NVIDIA's Xid table, torch's and nvidia-smi's driver errors, the raylet's memory
monitor, vLLM's multiproc executor. Each row has its line and a near-miss that must not match.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from logs.test_corpus import diagnose_lines
from logs.test_rule_rows import check_row

ROWS = [
    # (rule id, line, near-miss)
    # torch/cuda (cudaErrorNoDevice / no driver) and nvidia-smi; a driver that answers prints its version.
    ("driver_too_old", "RuntimeError: Found no NVIDIA driver on your system. Please check that you have an NVIDIA GPU "
                       "and installed a driver from http://www.nvidia.com/Download/index.aspx",
     "| NVIDIA-SMI 550.54.15              Driver Version: 550.54.15      CUDA Version: 12.4     |"),
    ("driver_too_old", "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the "
                       "latest NVIDIA driver is installed and running.",
     "NVIDIA-SMI couldn't find libnvidia-ml.so library in your system."),
    ("driver_too_old", "RuntimeError: CUDA driver initialization failed, you might not have a CUDA gpu.",
     "RuntimeError: CUDA error: initialization error"),
    # cudaGetErrorString: the driver lacks an entry point the runtime needs (36), its JIT is older than the PTX (222);
    # a kernel with no binary for this GPU is a build question, not the driver's age.
    ("driver_too_old", "RuntimeError: CUDA error: API call is not supported in the installed CUDA driver",
     "RuntimeError: CUDA error: operation not supported"),
    ("driver_too_old", "node1:12:12 [0] include/alloc.h:48 NCCL WARN Cuda failure 'the provided PTX was compiled with an "
                       "unsupported toolchain.'",
     "node1:12:12 [0] include/alloc.h:48 NCCL WARN Cuda failure 'device kernel image is invalid'"),
    # cudaErrorDevicesUnavailable (46) in CUDA 11 and later; "no CUDA-capable device" is a different error (100).
    ("gpu_busy", "RuntimeError: CUDA error: all CUDA-capable devices are busy or unavailable",
     "RuntimeError: CUDA error: no CUDA-capable device is detected"),
    # ROCm: RCCL's own WARNs (init.cc, misc/rocmwrap.cc, include/rocmwrap.h) and torch's HIP wording; the INFO lines
    # around them are no failure.
    ("duplicate_gpu", "node1:12:12 [1] init.cc:921 NCCL WARN Duplicate virtualId detected : rank 1 and rank 0 both on GPU "
                      "device 2c000 virtualId 0",
     "node1:12:12 [1] NCCL INFO rank 1 on GPU device 2c000 virtualId 1"),
    ("driver_too_old", "node1:12:12 [0] misc/rocmwrap.cc:105 NCCL WARN ROCr Driver version found is 60140. Minimum "
                       "requirement is 60240",
     "node1:12:12 [0] NCCL INFO ROCr version 1.14"),
    ("cuda_failure", "node1:12:12 [0] include/rocmwrap.h:27 NCCL WARN ROCr failure 'HSA_STATUS_ERROR_OUT_OF_RESOURCES'",
     "node1:12:12 [0] NCCL INFO ROCr: hsa_amd_portable_export_dmabuf found"),
    ("cuda_failure", "Cannot retrieve Static function, error: 218",
     ":0:/longer_pathname.../hipamd/src/hip_platform.cpp:110 : 3010170007 us:"),
    ("cuda_oom", "torch.OutOfMemoryError: HIP out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
                 "63.98 GiB of which 1.02 GiB is free.",
     "HIP memory usage: 2.00 GiB allocated"),
    ("rccl_iommu", 'node1:12:12 [0] init.cc:122 NCCL WARN Missing "amd_iommu=on" from kernel command line which can lead '
                   'to system instablity or hang!',
     "node1:12:12 [0] NCCL INFO Kernel command line: amd_iommu=on iommu=pt"),
    # DeepSpeed's runner (launcher/runner.py): the hostfile and --launcher checks, the device count; its warning that
    # it runs on local resources alone is no failure.
    ("ds_hostfile", "ValueError: Hostfile contains a bad entry: worker-1 slot=8, unable to proceed with launching",
     "[2024-05-01 10:00:00,123] [WARNING] [runner.py:202:fetch_hostfile] Unable to find hostfile, will proceed with "
     "training with local resources only."),
    ("ds_hostfile", "ValueError: Num nodes is >1 but no extra nodes available via hostfile",
     "[2024-05-01 10:00:00,123] [INFO] [runner.py:568:main] cmd = /usr/bin/python -u -m deepspeed.launcher.launch"),
    ("ds_hostfile", "RuntimeError: launcher 'pdsh' not installed.",
     "[2024-05-01 10:00:00,123] [INFO] [multinode_runner.py:80:get_cmd] Running on the following workers: worker-1"),
    ("no_gpu_visible", "RuntimeError: Unable to proceed, no GPU resources available",
     "[2024-05-01 10:00:00,123] [INFO] [real_accelerator.py:203:get_accelerator] Setting ds_accelerator to cuda (auto "
     "detect)"),
    # vLLM's V1 executor's monitor; its workers' other lines are no failure (they only say the workers are local).
    ("worker_pool_died", "ERROR 04-06 20:46:48 [multiproc_executor.py:140] Worker proc VllmWorker-1 died unexpectedly, "
                         "shutting down executor.",
     "INFO 04-06 20:46:48 [multiproc_executor.py:140] Worker proc VllmWorker-1 started"),
    # Triton's launcher quoting the driver's error; its autotuner's notes are no failure.
    ("cuda_failure", "RuntimeError: Triton Error [CUDA]: an illegal memory access was encountered",
     "Triton autotuning for function _fwd_kernel finished after 2.31s"),
    # Slurm's ESLURM_INVALID_TASK_MEMORY; a step that got its memory is no failure.
    ("slurm_unsatisfiable", "srun: error: Unable to create step for job 123: Memory required by task is not available",
     "srun: job 123 queued and waiting for resources"),
    # Ray's raylet and vLLM's multiproc executor; a worker that started is no failure.
    ("worker_pool_died", "(raylet) node_manager.cc:3069: 1 Workers (tasks / actors) killed due to memory pressure (OOM), "
                         "0 Workers crashed due to other errors on node 5f3d",
     "(raylet) node_manager.cc:3069: 0 Workers (tasks / actors) killed due to memory pressure (OOM), 0 Workers crashed"),
    ("worker_pool_died", "ERROR 11-28 10:00:00 multiproc_worker_utils.py:120] Worker VllmWorkerProcess pid 1234 died, "
                         "exit code: -9",
     "INFO 11-28 10:00:00 multiproc_worker_utils.py:215] Worker ready; awaiting tasks"),
    # Open MPI's runtime (help-oob-tcp.txt) and MPICH's tcp netmod; the launch's own banner is no failure.
    ("ompi_oob_tcp", "A process or daemon was unable to complete a TCP connection",
     "A high-performance Open MPI point-to-point messaging module was unable to find any relevant network interfaces:"),
    ("mpich_gethostbyname", "MPID_nem_tcp_init(373).......: gethostbyname failed, node-1 (errno 1)",
     "MPID_nem_tcp_init(373).......: fail failed"),
]


@pytest.mark.parametrize("rule, line, near", ROWS, ids=[f"{r[0]}-{i}" for i, r in enumerate(ROWS)])
def test_row_matches_its_line_and_not_the_near_miss(rule: str, line: str, near: str) -> None:
    check_row(rule, line, near)


def _first(tmp_path: Path, line: str) -> dict:
    return diagnose_lines(tmp_path / "node.log", line)["findings"][0]


@pytest.mark.parametrize("xid, line", [
    ("13", "[  123.456789] NVRM: Xid (PCI:0000:1b:00): 13, pid=1234, Graphics SM Warp Exception on (GPC 0, TPC 0, SM 0): "
           "Out Of Range Address"),
    ("31", "[  123.456789] NVRM: Xid (PCI:0000:1b:00): 31, pid=1234, Ch 00000010, intr 00000000. MMU Fault: ENGINE GRAPHICS "
           "GPCCLIENT_T1_0 faulted @ 0x7f3a_1c000000. Fault is of type FAULT_PDE ACCESS_TYPE_READ"),
])
def test_xids_of_the_process_own_fault_are_not_failing_hardware(tmp_path: Path, xid: str, line: str) -> None:
    """NVIDIA's Xid table puts 13 and 31 on the application first (an illegal address in a kernel)."""
    f = _first(tmp_path, line)
    assert (f["code"], f["cause"]) == ("LOG081", "other")
    assert f"Xid {xid}" in f["detail"]


@pytest.mark.parametrize("line", [
    "[  123.456789] NVRM: Xid (PCI:0000:1b:00): 79, pid=1234, GPU has fallen off the bus.",
    "[  123.456789] NVRM: Xid (PCI:0000:1b:00): 48, pid=1234, An uncorrectable double bit error (DBE) has been detected "
    "on GPU in the framebuffer at partition 0, subpartition 0.",
], ids=["xid79", "xid48"])
def test_board_xids_stay_hardware(tmp_path: Path, line: str) -> None:
    assert _first(tmp_path, line)["cause"] == "hardware_fault"


def test_no_driver_is_not_called_too_old(tmp_path: Path) -> None:
    f = _first(tmp_path, ROWS[1][1])
    assert (f["code"], f["cause"]) == ("LOG032", "driver_cuda_mismatch")
    assert "not loaded" in f["detail"]


def test_an_mpi_fatal_error_no_rule_knows_is_a_failure(tmp_path: Path) -> None:
    """Open MPI's errhandler report with an error class no rule reads: an unrecognised failure quoting it, not healthy."""
    doc = diagnose_lines(tmp_path / "mpirun.log", "[node-1:12345] *** An error occurred in MPI_Init",
                         "[node-1:12345] *** reported by process [1234,0]", "[node-1:12345] *** on a NULL communicator",
                         "[node-1:12345] *** Unknown error",
                         "[node-1:12345] *** MPI_ERRORS_ARE_FATAL (processes in this communicator will now abort,")
    f = doc["findings"][0]
    assert (f["code"], f["cause"]) == ("LOG080", None) and "MPI_Init" in f["title"]
    assert doc["outcome"] == "errors"


@pytest.mark.parametrize("lines", [
    ("hipErrorNoBinaryForGpu: Unable to find code object for all current devices!",),
    (":0:/longer_pathname.../hipamd/src/hip_platform.cpp:110 : 3010170007 us:",
     "Cannot retrieve Static function, error: 218", "Aborted (core dumped)"),
])
def test_a_rocm_build_without_the_gpus_architecture_is_named_before_the_crash(tmp_path: Path, lines: tuple) -> None:
    """HIP finds no code object for the GPU (a distribution RCCL without gfx906, ROCm/rocm-systems#2805): the build,
    which comes before the abort it causes."""
    f = next(f for f in diagnose_lines(tmp_path / "node.log", *lines)["findings"] if f["cause"])
    assert (f["code"], f["cause"]) == ("LOG081", "other")
    assert "architecture" in f["title"] and "GPU_TARGETS" in f["detail"]


def test_cuda_initialisation_error_in_torch_words_is_not_the_fabric(tmp_path: Path) -> None:
    f = _first(tmp_path, "RuntimeError: CUDA error: initialization error")
    assert (f["code"], f["cause"]) == ("LOG081", "other") and "spawn" in f["detail"]


@pytest.mark.parametrize("line, said", [
    ("ValueError: Hostfile contains multiple entries for worker-1, unable to proceed with launching", "worker-1 twice"),
    ("ValueError: Hostname 'worker-3' not found in hostfile", "--include/--exclude names worker-3"),
    ("ValueError: Hostfile is empty or not formatted correctly, unable to proceed with launching.", "HOST slots=N"),
])
def test_deepspeeds_hostfile_errors_say_what_to_fix(tmp_path: Path, line: str, said: str) -> None:
    f = _first(tmp_path, line)
    assert (f["code"], f["cause"]) == ("LOG066", "launcher_misconfig") and said in f["title"]
