"""Public failure threads, round 60, and their development reading.

Round 60 came from the trackers of JAX, TensorFlow, Intel's XPU stack, NVSHMEM and DeepEP, libfabric, timm and
Open-Llama. What they taught, each read from what the message means in its program:

- a framework that cannot load NCCL, or was built without its ops, has no backend for the job's collectives (cause
  `other` in the corpus's vocabulary, which has no label for it; the code says which);
- a group with no backend for an accelerator other than CUDA lacks that device's collective library, where a CPU
  tensor on a CUDA-only group is the program's mistake;
- an extension refused by the loader on one of torch's own C++ symbols was built for another torch;
- a script that refuses the --local-rank argument its launcher passes is a launch mistake;
- the driver's stale copy of the NVLink fabric state stops every multicast mapping;
- NVSHMEM takes processes for this host's by hostname alone, so a peer socket missing from /tmp is hosts sharing a
  name (hostname_resolution, as the corpus defines it);
- libfabric's EFA provider gives up on all devices when it cannot open one it lists.
"""

from __future__ import annotations

from pathlib import Path

from logs.test_corpus import diagnose_file
from logs.test_rule_rows import check_row


def _found(tmp_path: Path, text: str) -> list[dict]:
    p = tmp_path / "job.log"
    p.write_text(text)
    return [f for f in diagnose_file(p)["findings"] if f["cause"]]


# jax-ml/jax#18391: a jaxlib for a local CUDA with no NCCL installed; the first all-reduce loads it.
_JAX_NO_NCCL = (
    "jaxlib.xla_extension.XlaRuntimeError: INTERNAL: Failed to execute XLA Runtime executable: run time error: custom "
    "call 'xla.gpu.all_reduce' failed:\n"
    "external/xla/xla/service/gpu/nccl_utils.cc:133: NCCL operation ncclGetUniqueId(&id) failed: Unable to load NCCL "
    "library. Multi-GPU collectives will not work.;\n"
    "current tracing scope: all-reduce-start; current profiling annotation:\n")


def test_xla_unable_to_load_nccl_is_nccl_missing(tmp_path: Path) -> None:
    check_row("xla_nccl_not_loaded", _JAX_NO_NCCL.splitlines()[1],
              "2023-11-02 10:00:01.000: I tensorflow/stream_executor/platform/default/dso_loader.cc:53] Successfully "
              "opened dynamic library libnccl.so.2")
    got = _found(tmp_path, _JAX_NO_NCCL)
    assert got[0]["code"] == "LOG113" and got[0]["cause"] == "other", got
    assert "NCCL" in got[0]["title"]


# tensorflow/tensorflow#44281: MirroredStrategy on Windows, whose TensorFlow has no NCCL kernels.
_TF_NO_NCCL = (
    "No OpKernel was registered to support Op 'NcclAllReduce' used by {{node NcclAllReduce}} with these attrs: "
    "[reduction=\"sum\", shared_name=\"c1\", T=DT_FLOAT, num_devices=2]\n"
    "Registered devices: [CPU, GPU, XLA_CPU, XLA_GPU]\n"
    "Registered kernels:\n"
    "  <no registered kernels>\n")


def test_tensorflow_without_nccl_kernels_has_no_nccl_backend(tmp_path: Path) -> None:
    check_row("tf_no_nccl_kernels", _TF_NO_NCCL.splitlines()[0],
              "No OpKernel was registered to support Op 'CudnnRNN' used by {{node cudnn_rnn}} with these attrs")
    got = _found(tmp_path, _TF_NO_NCCL)
    assert got[0]["code"] == "LOG144" and got[0]["cause"] == "other", got
    assert "NcclAllReduce" in got[0]["title"]


# intel/torch-xpu-ops#1328: oneCCL's XPU part did not load, the job went on with gloo, FSDP gathered xpu tensors.
_XPU_GLOO = (
    "oneccl_bindings_for_pytorch/__init__.py:25: UserWarning: Warning: Cannot load xpu CCL. CCL doesnt work for XPU "
    "device due to libintel-ext-pt-gpu.so: cannot open shared object file: No such file or directory\n"
    "[2025-01-28 09:35:38][I][ezpz/dist:823] Using device='xpu' with backend='DDP' + 'gloo' for distributed training.\n"
    "[rank0]:     work = group._allgather_base(output_tensor, input_tensor, opts)\n"
    "[rank0]: RuntimeError: No backend type associated with device type xpu\n")


def test_no_backend_for_an_accelerator_besides_cuda_is_its_collective_library_missing(tmp_path: Path) -> None:
    got = _found(tmp_path, _XPU_GLOO)
    assert got[0]["code"] == "LOG145" and got[0]["cause"] == "other", got
    assert "xpu" in got[0]["title"] and "collective library" in got[0]["title"]


def test_a_cpu_tensor_on_a_cuda_only_group_stays_the_programs_mistake(tmp_path: Path) -> None:
    got = _found(tmp_path, "[rank1]: RuntimeError: No backend type associated with device type cpu\n")
    assert got[0]["code"] == "LOG044" and got[0]["cause"] == "other", got
    assert "collective library" not in got[0]["title"]


def test_libnccl_missing_says_what_nccl_needs(tmp_path: Path) -> None:
    nccl = _found(tmp_path, "ImportError: libnccl.so.2: cannot open shared object file: No such file or directory\n")
    assert nccl[0]["code"] == "LOG113" and nccl[0]["cause"] == "other", nccl
    assert "nvidia-nccl-cu" in nccl[0]["detail"]


# intel/torch-ccl#16: the bindings built with the new C++ string ABI, imported into a pip torch built with the old one.
_ABI = (
    "$ python -c \"import torch; import torch_ccl\"\n"
    "Traceback (most recent call last):\n"
    "  File \"<string>\", line 1, in <module>\n"
    "ImportError: /home/u/miniconda3/envs/ccl_test/lib/python3.8/site-packages/torch_ccl-1.1.0+3141686-py3.8-linux-"
    "x86_64.egg/torch_ccl/lib/libtorch_ccl.so: undefined symbol: "
    "_ZN3c105ErrorC1ENS_14SourceLocationENSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEE\n")


def test_an_extension_refused_on_a_torch_symbol_was_built_for_another_torch(tmp_path: Path) -> None:
    check_row("ext_built_for_other_torch", _ABI.splitlines()[-1],
              "ImportError: /opt/app/libfoo.so: undefined symbol: _ZN4absl12lts_2023080212log_internal9LogMessageD1Ev")
    got = _found(tmp_path, _ABI)
    assert got[0]["code"] == "LOG146" and got[0]["cause"] == "version_mismatch", got
    assert "libtorch_ccl.so" in got[0]["title"] and "__cxx11" in got[0]["title"]


# huggingface/pytorch-image-models#1728: distributed_train.sh (torch.distributed.launch) under torch 2.x.
_LOCAL_RANK = (
    "train.py: error: unrecognized arguments: --local-rank=0\n"
    "FutureWarning: The module torch.distributed.launch is deprecated\n"
    "and will be removed in future. Use torchrun.\n"
    "Note that --use-env is set by default in torchrun\n")


def test_a_script_refusing_the_launchers_local_rank_argument_is_a_launch_mistake(tmp_path: Path) -> None:
    check_row("local_rank_arg", _LOCAL_RANK.splitlines()[0], "train.py: error: unrecognized arguments: --epochs-total=3")
    got = _found(tmp_path, _LOCAL_RANK)
    assert got[0]["code"] == "LOG147" and got[0]["cause"] == "launcher_misconfig", got
    assert "--local-rank=0" in got[0]["title"]


# NVIDIA/nvshmem#40: NVSHMEM's NVLS team set-up on an H200 node, and the driver's reason in dmesg.
_FABRIC = (
    "/home/u/Nvshmem/src/host/team/team_internal_nvls.cpp:254: non-zero status: 401 cuMemMap failed to map "
    "274877906944 bytes handle at address: 0x1320000000 offset 0 on device 7\n"
    "/home/u/Nvshmem/src/host/mem/mem_heap.cpp:1573: non-zero status: 7 Mapping mem size 274877906944 to MC group "
    "101602722380032 failed\n"
    "[1891044.581319] NVRM: nvCheckOkFailedNoLog: Check failed: NVLink fabric state cached by the driver is out of sync "
    "[NV_ERR_FABRIC_STATE_OUT_OF_SYNC] (0x00000087) returned from status @ mem_multicast_fabric.c:2917\n")


def test_the_drivers_stale_nvlink_fabric_state_is_the_fabric(tmp_path: Path) -> None:
    check_row("nvrm_fabric_out_of_sync", _FABRIC.splitlines()[-1],
              "[  12.345678] NVRM: GPU 0000:18:00.0: NVLink fabric state: registration completed")
    got = _found(tmp_path, _FABRIC)
    assert got[0]["code"] == "LOG033" and got[0]["cause"] == "fabric_manager_nvls", got


# deepseek-ai/DeepEP#316: two nodes with one hostname; NVSHMEM took the other node's processes for this one's.
_SAME_NAME = (
    "IPC failure: Sending data over socket failed: No such file or directory\n"
    "/dvs/p4/build/sw/rel/gpgpu/toolkit/r12.8/main_nvshmem/src/host/mem/mem_heap.cpp:exchange_heap_memory_handle:775: "
    "Fatal IPC Failure\n")


def test_nvshmem_missing_a_peer_socket_is_hosts_sharing_a_name(tmp_path: Path) -> None:
    check_row("nvshmem_ipc_peer_absent", _SAME_NAME.splitlines()[0],
              "IPC failure: Sending data over socket failed: Connection refused")
    got = _found(tmp_path, _SAME_NAME)
    assert got[0]["code"] == "LOG148" and got[0]["cause"] == "hostname_resolution", got
    assert "launcher_misconfig" in [f["cause"] for f in got[1:]]


# ofiwg/libfabric#12708: an EFA pod that also saw the node's ConnectX devices through /dev/infiniband.
_EFA = (
    "libfabric:...:efa:ep_data:efa_device_construct_gid():47<warn> ibv_open_device failed! errno: 2\n"
    "libfabric:...:efa:fabric:efa_device_list_initialize():302<warn> efa_device_construct_gid failed for device_idx 0, "
    "err=-2\n"
    "libfabric:...:core:core:fi_getinfo_():1391<warn> fi_getinfo: provider efa output empty list\n"
    "fi_getinfo: -61 (No data available)\n")


def test_the_efa_provider_giving_up_on_an_unopenable_device_is_named(tmp_path: Path) -> None:
    check_row("efa_device_open", _EFA.splitlines()[1],
              "host:1:1 [0] NCCL INFO NET/IB : Unable to open device mlx5_0")
    got = _found(tmp_path, _EFA)
    assert got[0]["code"] == "LOG089" and got[0]["cause"] == "other", got
    assert "errno 2" in got[0]["title"]


# s-JoL/Open-Llama#47: seven of eight ranks in the store barrier while one sat in wandb.
_BARRIER = (
    "I0510 07:28:04.417845 139863945226048 distributed_c10d.py:337] Waiting in store based barrier to initialize "
    "process group for rank: 2, key: store_based_barrier_key:2 (world_size=8, worker_count=7, timeout=0:30:00)\n")


def test_one_rank_missing_from_the_store_barrier_is_first_of_all_late(tmp_path: Path) -> None:
    got = _found(tmp_path, _BARRIER)
    assert got[0]["code"] == "LOG062", got
    assert got[1]["cause"] == "collective_timeout_straggler", got
    # half the ranks missing (a node's worth) is not one process late
    half = _found(tmp_path, _BARRIER.replace("worker_count=7", "worker_count=4"))
    assert half[0]["code"] == "LOG062" and half[1]["cause"] == "peer_process_died", half


# volcengine/verl#1431 (round 61): the SGLang rollout took its memory back after the trainer's step, and the trainer's
# ranks then timed out in their all-gather.
_SAVER = (
    "[2025-05-09 17:37:48] (WorkerDict pid=60511) [torch_memory_saver.cpp] CUresult error  result=2 "
    "file=csrc/torch_memory_saver.cpp func=cu_mem_create line=103\n"
    "[2025-05-09 17:37:48] (WorkerDict pid=60510) [rank3]:[E509 17:37:47.665078263 ProcessGroupNCCL.cpp:629] [Rank 3] "
    "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1420, OpType=COALESCED, NumelIn=48660480, "
    "NumelOut=778567680, Timeout(ms)=1800000) ran for 1800083 milliseconds before timing out.\n")


def test_a_paused_engine_refused_its_memory_back_is_the_gpu_out_of_memory(tmp_path: Path) -> None:
    check_row("memory_saver_oom", _SAVER.splitlines()[0],
              "[torch_memory_saver.cpp] CUresult error  result=1 file=csrc/torch_memory_saver.cpp func=cu_mem_map line=88")
    got = _found(tmp_path, _SAVER)
    assert got[0]["code"] == "LOG031" and got[0]["cause"] == "cuda_oom", got
    assert "cu_mem_create" in got[0]["title"]


# TideDra/lmm-r1#43 (round 62): vLLM woke up from sleep mode beside the trainer and its allocator found no memory.
_WAKE = (
    "(ActorModelRayActor pid=348952)   File \"/usr/local/lib/python3.10/dist-packages/vllm/device_allocator/cumem.py\", "
    "line 75, in create_and_map\n"
    "(ActorModelRayActor pid=348952)     python_create_and_map(*allocation_handle)\n"
    "(ActorModelRayActor pid=348952) RuntimeError: CUDA Error: out of memory at /workspace/csrc/cumem_allocator.cpp:62\n")


def test_vllms_allocator_out_of_memory_on_waking_is_the_gpu_out_of_memory(tmp_path: Path) -> None:
    check_row("cuda_oom", _WAKE.splitlines()[-1], "RuntimeError: CUDA Error: invalid argument at "
                                                  "/workspace/csrc/cumem_allocator.cpp:62")
    got = _found(tmp_path, _WAKE)
    assert got[0]["code"] == "LOG031" and got[0]["cause"] == "cuda_oom", got


# microsoft/LoRA#79 (round 63): torch 2.x's launcher with a script that declares --local_rank; the log kept argparse's
# usage line and not its error line.
_USAGE = (
    "/home/u/.local/lib/python3.8/site-packages/torch/distributed/launch.py:181: FutureWarning: The module "
    "torch.distributed.launch is deprecated\n"
    "and will be removed in future. Use torchrun.\n"
    "Note that --use-env is set by default in torchrun.\n"
    "If your script expects `--local-rank` argument to be set, please\n"
    "change it to read from `os.environ['LOCAL_RANK']` instead. See \n"
    "  warnings.warn(\n"
    "usage: gpt2_ft.py [-h] [--platform PLATFORM] [--local_rank LOCAL_RANK] [--rank RANK] [--device DEVICE] "
    "[--world_size WORLD_SIZE]\n")


def test_a_usage_line_without_the_launchers_spelling_is_the_refused_local_rank(tmp_path: Path) -> None:
    check_row("usage_local_rank", _USAGE.splitlines()[-1],
              "usage: gpt2_ft.py [-h] [--local-rank LOCAL_RANK] [--rank RANK]")
    got = _found(tmp_path, _USAGE)
    assert got[0]["code"] == "LOG147" and got[0]["cause"] == "launcher_misconfig", got
    # the usage line alone (a -h, or a torch 1.x launcher, which passed --local_rank) is no finding
    assert not _found(tmp_path, _USAGE.splitlines()[-1] + "\n")


# vllm-project/vllm#3688 (round 61): NCCL 2.18.1 under vLLM's Ray workers, gone with 2.19.3 (NVIDIA/nccl#957).
_NCCL_ARG = (
    "(RayWorkerVllm pid=4028887) ERROR 03-28 21:38:23 ray_utils.py:44] torch.distributed.DistBackendError: NCCL error "
    "in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1333, unhandled cuda error (run with NCCL_DEBUG=INFO for "
    "details), NCCL version 2.18.1\n"
    "(RayWorkerVllm pid=4028887) ERROR 03-28 21:38:23 ray_utils.py:44] ncclUnhandledCudaError: Call to CUDA function "
    "failed.\n"
    "(RayWorkerVllm pid=4028887) ERROR 03-28 21:38:23 ray_utils.py:44] Last error:\n"
    "(RayWorkerVllm pid=4028887) ERROR 03-28 21:38:23 ray_utils.py:44] Cuda failure 'invalid argument'\n")


def test_a_cuda_call_nccl_made_refused_as_invalid_is_nccls_own(tmp_path: Path) -> None:
    got = _found(tmp_path, _NCCL_ARG)
    assert got[0]["code"] == "LOG070" and got[0]["cause"] == "nccl_internal_bug", got
    assert "driver_cuda_mismatch" in [f["cause"] for f in got[1:3]]
    # NCCL's own WARN line says the same (NVIDIA/TensorRT-LLM#4238, 2.25.1's kernel launch)
    warn = _found(tmp_path, "GENOA-06:4766:4766 [1] enqueue.cc:1500 NCCL WARN Cuda failure 1 'invalid argument'\n")
    assert warn[0]["code"] == "LOG070", warn
    # the program's own CUDA call refused is not NCCL's
    own = _found(tmp_path, "RuntimeError: CUDA error: invalid argument\n")
    assert own[0]["code"] == "LOG081" and own[0]["cause"] == "other", own


# Project-HAMi/HAMi#1894 (round 60): vLLM's Ascend workers log "ERROR [file.py:N]" without the time; no rule reads
# the NPU's error, and the log is a failure all the same, never healthy.
_NPU = (
    "(Worker pid=6871) ERROR [multiproc_executor.py:800] RuntimeError: ExchangeDevice:build/CMakeFiles/torch_npu.dir/"
    "compiler_depend.ts:253 NPU function error: c10_npu::SetDevice(device), error code is 507033\n"
    "(Worker pid=6871) ERROR [multiproc_executor.py:800]         open device 1 failed, runtime result = 507033.\n")


def test_a_logger_error_line_without_its_time_is_an_error(tmp_path: Path) -> None:
    p = tmp_path / "job.log"
    p.write_text(_NPU)
    doc = diagnose_file(p)
    assert doc["findings"] and doc["findings"][0]["code"] == "LOG080", doc["findings"]
    assert "NPU function error" in doc["findings"][0]["title"]
    # the same words at INFO are no failure
    p.write_text("(Worker pid=6871) INFO [multiproc_executor.py:800] retrying open device 1\n")
    assert not [f for f in diagnose_file(p)["findings"] if f["code"] == "LOG080"]
