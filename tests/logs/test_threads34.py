"""Public failure threads, rounds 55 and 56 and their development reading.

Rounds 55 and 56 came from issue threads of NVIDIA/nccl, nccl-tests, ROCm/rccl and the projects around them (SGLang,
vLLM, Lightning, DeepSpeed, torchtitan, Open MPI, UCC). What they taught, each read from what the message means in its program:

- CUDA's own words for a fault on GPU memory count wherever a program prints them, not only after "CUDA error:";
- RCCL's P2P transport refused a HIP IPC handle with 'invalid argument' as well as 'invalid device pointer': the
  host's kernel driver lacks the IPC calls of the ROCm user space it runs;
- HIP refuses a launch larger than the kernel's launch bounds, and the kernel does not run;
- a build that failed (the compiler's errors, make's report) is a failure, never a healthy log;
- a logger's message that runs into "Traceback (most recent call last):" is a traceback's header;
- a program's own check of cudaMalloc saying "out of memory" is the GPU out of memory, ahead of what follows from it;
- UCC logs its errors as UCX does ("UCC  ERROR"): errors, never a healthy log.
"""

from __future__ import annotations

from pathlib import Path

from logs.test_corpus import diagnose_file
from logs.test_rule_rows import check_row


def _diagnose(tmp_path: Path, text: str, name: str = "job.log") -> dict:
    p = tmp_path / name
    p.write_text(text)
    return diagnose_file(p)


def _found(tmp_path: Path, text: str) -> list[dict]:
    return [f for f in _diagnose(tmp_path, text)["findings"] if f["cause"]]


# NVIDIA/nccl#2430: a reproducer on three H200s printed what cudaGetErrorString() said after its own words.
_REPRO = ("CUDA_VISIBLE_DEVICES=0,1,2 NCCL_COMM_SPLIT_SHARE_RESOURCES=1 NCCL_ALGO=NVLS ./nvls_split_share 3 child_first 2\n"
          "rank 0: child  allreduce OK (0 wrong of 67108864)\n"
          "rank 0: parent sync: an illegal memory access was encountered\n"
          "RESULT: FAIL (child_first, child nvlsCTAs=2)\n")


def test_cudaS_words_for_a_memory_fault_after_a_programS_own_are_a_failed_cuda_call(tmp_path: Path) -> None:
    check_row("cuda_failure", "rank 0: parent sync: an illegal memory access was encountered",
              "compute-sanitizer: checked for an illegal memory access, 0 errors")
    got = _found(tmp_path, _REPRO)
    assert got and got[0]["code"] == "LOG081", got
    assert "an illegal memory access was encountered" in got[0]["title"]


# ROCm/rccl#1454: rccl-tests on an Arch host (kernel 6.12, its in-tree amdgpu) with ROCm 6.2's user space.
_RCCL_IPC_ARG = (
    "UVOSLinux:31965:31965 [0] NCCL INFO Kernel version: 6.12.3-arch1-1\n"
    "RCCL version 2.20.5+hip6.2 Unknown\n"
    "UVOSLinux:31965:31973 [1] /usr/src/debug/rccl/build/hipify/src/transport/p2p.cc:235 NCCL WARN hipIpcGetMemHandle "
    "failed : invalid argument\n"
    "UVOSLinux:31965:31973 [1] /usr/src/debug/rccl/build/hipify/src/transport/p2p.cc:237 NCCL WARN Cuda failure "
    "'invalid argument'\n"
    "UVOSLinux:31965:31973 [1] NCCL INFO /usr/src/debug/rccl/build/hipify/src/transport/p2p.cc:646 -> 1\n")


def test_rcclS_p2p_transport_refused_an_ipc_handle_as_an_invalid_argument_is_the_hosts_kernel_driver(
        tmp_path: Path) -> None:
    got = _found(tmp_path, _RCCL_IPC_ARG)
    assert (got[0]["code"], got[0]["cause"]) == ("LOG138", "driver_cuda_mismatch"), got[0]
    # the same refusal is not also read as a driver that mishandles peer access
    assert "LOG039" not in [f["code"] for f in got]
    # NCCL's own transport (not hipified) giving 'invalid argument' is another failed call, not ROCm's driver
    nccl = _found(tmp_path, "gpu1:77:88 [1] transport/p2p.cc:230 NCCL WARN Cuda failure 'invalid argument'\n")
    assert nccl and "LOG138" not in [f["code"] for f in nccl]


# ROCm/rccl#1072: rccl-tests rebuilt with a 512-thread block for its check kernel, over HIP's default bound of 256.
_BOUNDS = ("Launch params (512, 1, 1) are larger than launch bounds (256) for kernel _Z9deltaKernIfLi512EEvPvS0_mPd "
           "please add __launch_bounds__ to kernel define or use --gpu-max-threads-per-block recompile program ! ")


def test_a_launch_larger_than_the_kernels_launch_bounds_did_not_run(tmp_path: Path) -> None:
    check_row("hip_launch_bounds", _BOUNDS, "Launch params (256, 1, 1) are within the launch bounds (256)")
    got = _found(tmp_path, "all_reduce_perf -g 1 -n 20 -b 1M -e 1G -f 2\n" + (_BOUNDS + "\n") * 3)
    assert (got[0]["code"], got[0]["cause"]) == ("LOG081", "other"), got[0]
    assert "512 threads per block, over the 256" in got[0]["title"]


# NVIDIA/nccl-tests#354: nccl-tests' newest sources built against NCCL headers without the GIN device API.
_BUILD = ('alltoall.cu(218): error: expected a ";"\n'
          "    ncclBarrierSession<ncclCoopCta> bar { ncclCoopCta(), ncclTeamTagWorld(), gin, blockIdx.x };\n"
          "                                        ^\n"
          'alltoall.cu(235): error: identifier "ncclGin_SignalInc" is undefined\n'
          '22 errors detected in the compilation of "alltoall.cu".\n'
          "make[1]: *** [Makefile:59: /tmp/nccl-tests/build/alltoall.o] Error 2\n"
          "make: *** [Makefile:20: src.build] Error 2\n")


def test_a_build_that_failed_is_a_failure_named_by_its_first_compiler_error(tmp_path: Path) -> None:
    check_row("build_failed", 'alltoall.cu(218): error: expected a ";"',
              "[rank0]: RuntimeError: CUDA error: an illegal memory access was encountered")
    check_row("build_failed", "make[1]: *** [Makefile:59: /tmp/nccl-tests/build/alltoall.o] Error 2",
              "train.py:12: UserWarning: error: the value was clipped")
    check_row("build_failed", "src/init.cc:12:10: fatal error: nccl.h: No such file or directory",
              "init.cc:12 NCCL WARN Error: some other thing")
    doc = _diagnose(tmp_path, _BUILD)
    got = [f for f in doc["findings"] if f["cause"]]
    assert (got[0]["code"], got[0]["cause"]) == ("LOG139", "other"), got
    assert 'expected a ";"' in got[0]["title"]
    assert doc["verdict"]["code"] == "LOG139"
    # NCCL's names among the errors bring the headers' version as the alternative; a build of anything else does not
    assert "version_mismatch" in [f["cause"] for f in got]
    plain = _found(tmp_path, "foo.c:12:5: error: unknown type name 'x'\nmake: *** [Makefile:3: foo.o] Error 1\n")
    assert [f["cause"] for f in plain] == ["other"], plain


# sgl-project/sglang#3794: SGLang's scheduler logs its message and the traceback on one line; the post ends there.
_SGLANG = ("[2025-02-23 06:02:12 TP1] sglang is using nccl==2.21.5\n"
           "[2025-02-23 06:02:12 TP3] sglang is using nccl==2.21.5\n"
           "[2025-02-23 06:04:22 TP7] Scheduler hit an exception: Traceback (most recent call last):\n")


def test_a_loggers_message_running_into_a_traceback_header_is_a_failure_not_a_healthy_log(tmp_path: Path) -> None:
    doc = _diagnose(tmp_path, _SGLANG)
    assert doc["verdict"]["code"] == "LOG080", doc["verdict"]
    # the same start-up lines without it: no verdict at all
    assert _diagnose(tmp_path, _SGLANG.rsplit("\n", 2)[0] + "\n")["verdict"] is None


# NVIDIA/multi-gpu-programming-models#14: the samples' CUDA_RT_CALL check; the first allocation failed, and the
# errors after it come from using the buffer it never got.
_JACOBI = ('ERROR: CUDA RT call "cudaMalloc(&a_new, nx * ny * sizeof(real))" in line 378 of file jacobi.cpp failed with '
           'out of memory (2).\n'
           'ERROR: CUDA RT call "cudaMemset(a_new, 0, nx * ny * sizeof(real))" in line 381 of file jacobi.cpp failed with '
           'invalid argument (1).\n'
           'ERROR: CUDA RT call "cudaDeviceSynchronize()" in line 385 of file jacobi.cpp failed with an illegal memory '
           'access was encountered (700).\n')


def test_a_programS_own_check_of_cudamalloc_out_of_memory_comes_before_what_follows_from_it(tmp_path: Path) -> None:
    check_row("cuda_oom", _JACOBI.splitlines()[0],
              'ERROR: CUDA RT call "cudaMemset(a_new, 0, nx * ny * sizeof(real))" in line 381 of file jacobi.cpp failed '
              "with invalid argument (1).")
    got = _found(tmp_path, _JACOBI)
    assert (got[0]["code"], got[0]["cause"]) == ("LOG031", "cuda_oom"), got[0]
    assert "not NCCL's" in got[0]["title"] and "torch" not in got[0]["title"]


# openucx/ucc#1041: one rank's UCC context failed to open a CUDA IPC handle (UCC's log, ucc_log.h on ucs's logger).
_UCC = ("[1730117228.178968] [dgx1v-loki-23:3000 :0]   tl_cuda_cache.c:231  UCC  ERROR ipc-cache: failed to open ipc mem "
        "handle. addr:0x7f65a8000000 len:16777216 err:201\n"
        "[1730120424.285612] [dgx1v-loki-23:26352:0]     ucc_context.c:817  UCC  DEBUG ctx create epilog for mlx5 failed: "
        "Unhandled error\n")


def test_ucc_errors_are_errors(tmp_path: Path) -> None:
    doc = _diagnose(tmp_path, _UCC)
    assert doc["verdict"]["code"] == "LOG080", doc["verdict"]
    assert "tl_cuda_cache.c:231" in doc["verdict"]["title"]
    # its DEBUG lines alone are not
    assert _diagnose(tmp_path, _UCC.splitlines()[1] + "\n")["verdict"] is None


# vllm-project/vllm#5484: a torchrun test (torch's NCCL 2.20.5) and then a vLLM run (its pynccl on the system's
# 2.21.5) on one workstation, pasted together; both hung while NCCL set up (the GPUs could not reach each other).
_TWO_NCCLS = (
    "omega:53277:53277 [0] NCCL INFO Bootstrap : Using wlp38s0:192.168.1.19<0>\n"
    "omega:53277:53277 [0] NCCL INFO cudaDriverVersion 12060\n"
    "NCCL version 2.20.5+cuda12.4\n"
    "omega:53278:53278 [1] NCCL INFO cudaDriverVersion 12060\n"
    "omega:53278:53278 [1] NCCL INFO Bootstrap : Using wlp38s0:192.168.1.19<0>\n"
    "INFO 11-11 14:17:08 pynccl.py:69] vLLM is using nccl==2.21.5\n"
    "omega:18302:18445 [0] NCCL INFO Bootstrap : Using wlp38s0:192.168.1.19<0>\n"
    "omega:18302:18445 [0] NCCL INFO cudaDriverVersion 12060\n"
    "NCCL version 2.21.5+cuda12.4\n"
    "omega:18565:18565 [1] NCCL INFO cudaDriverVersion 12060\n"
    "omega:18565:18565 [1] NCCL INFO Bootstrap : Using wlp38s0:192.168.1.19<0>\n")


def test_two_nccl_versions_on_one_host_are_not_ranks_that_disagree(tmp_path: Path) -> None:
    assert "LOG040" not in [f["code"] for f in _found(tmp_path, _TWO_NCCLS)]
    # the same two versions on two hosts are
    other_host = _TWO_NCCLS.replace("omega:18", "delta:18")
    assert _found(tmp_path, other_host)[0]["code"] == "LOG040"


# pytorch/pytorch#104417: torch 2.2's libtorch_cuda.so, with an older libnccl.so.2 first on the loader's path.
_IMPORT = (">>> import torch\nTraceback (most recent call last):\n  File \"<stdin>\", line 1, in <module>\n"
           "ImportError: /home/user/.local/lib/python3.10/site-packages/torch/lib/libtorch_cuda.so: undefined symbol: "
           "ncclCommRegister\n")


def test_a_library_missing_an_nccl_symbol_loaded_an_older_nccl_than_it_was_built_against(tmp_path: Path) -> None:
    check_row("nccl_symbol_missing", _IMPORT.splitlines()[-1],
              "ImportError: /usr/lib/libfoo.so: undefined symbol: cublasLtMatmul")
    got = _found(tmp_path, _IMPORT)
    assert (got[0]["code"], got[0]["cause"]) == ("LOG040", "version_mismatch"), got[0]
    assert "libtorch_cuda.so needs ncclCommRegister" in got[0]["title"]


# gpustack/gpustack#1640: a worker node's serving backend brought its own Ray into a cluster started with another.
_RAY = ("RuntimeError: Version mismatch: The cluster was started with:\n    Ray: 2.43.0\n    Python: 3.11.10\n"
        "This process on node 10.18.215.196 was started with:\n    Ray: 2.44.1\n    Python: 3.11.10\n")


def test_ray_refusing_a_process_of_another_version_is_a_version_mismatch(tmp_path: Path) -> None:
    check_row("ray_version_mismatch", _RAY.splitlines()[0], "RuntimeError: Version mismatch between checkpoint and model")
    got = _found(tmp_path, _RAY)
    assert (got[0]["code"], got[0]["cause"]) == ("LOG141", "version_mismatch"), got[0]


# deepseek-ai/DeepEP#223: NVSHMEM between two nodes without nvidia-peermem; every PE's summary, then its bootstrap
# (NVSHMEM's own copy of NCCL's socket code) finding the peers gone. The named line is NVSHMEM's topo.cpp format.
_NVSHMEM = ("/sgl-workspace/nvshmem/src/host/init/init.cu:998: non-zero status: 7 building transport map failed\n"
            "/sgl-workspace/nvshmem/src/host/init/init.cu:nvshmemi_check_state_and_init:1080: nvshmem initialization "
            "failed, exiting\n"
            "/sgl-workspace/nvshmem/src/modules/bootstrap/uid/ncclSocket/ncclsocket_socket.cpp:socketProgressOpt:39: "
            "socketProgressOpt: Call to recv from 10.179.114.196<38229> failed : Broken pipe\n"
            "/sgl-workspace/nvshmem/src/modules/bootstrap/uid/bootstrap_uid.cpp:bootstrap_net_recv:99: Message "
            "truncated : received 58 bytes instead of 8\n")
_PEER = "src/host/topo/topo.cpp:488: [GPU 3] Peer GPU 9 is not accessible, exiting ... "


def test_nvshmem_reaching_no_peer_is_its_network_transport_not_ncclS_bootstrap(tmp_path: Path) -> None:
    check_row("nvshmem_peer_unreachable", _PEER, "[GPU 3] Peer GPU 9 is accessible over transport 1")
    got = _found(tmp_path, _NVSHMEM)
    assert (got[0]["code"], got[0]["cause"]) == ("LOG142", "ib_misconfig"), got[0]
    assert "LOG070" not in [f["code"] for f in got]
    got = _found(tmp_path, _PEER + "\n" + _NVSHMEM)
    assert "GPU 3 reaches none of its transports to peer GPU 9" in got[0]["title"]
    # NCCL's own bootstrap receiving a message of the wrong size stays NCCL's
    nccl = _found(tmp_path, "node1:11:12 [0] bootstrap.cc:99 NCCL WARN Message truncated : received 58 bytes instead "
                            "of 8\n")
    assert nccl[0]["code"] == "LOG070"


# RVC-Project/Retrieval-based-Voice-Conversion-WebUI#724: torch on a Windows PC whose name was blank.
_NO_NAME = ('  File "C:\\\\rvc\\\\runtime\\\\lib\\\\site-packages\\\\torch\\\\distributed\\\\distributed_c10d.py", line 994, in '
            "_new_process_group_helper\n"
            "    backend_class = ProcessGroupGloo(backend_prefix_store, group_rank, group_size, timeout=timeout)\n"
            "RuntimeError: GlooDeviceFactory::makeUVDevice(): interface or hostname can't be empty\n")


def test_gloo_with_neither_an_interface_nor_a_host_name_is_a_machine_without_a_name(tmp_path: Path) -> None:
    check_row("gloo_no_hostname", _NO_NAME.splitlines()[-1],
              "RuntimeError: GlooDeviceFactory::makeTCPDevice(): unknown interface name eth9")
    got = _found(tmp_path, _NO_NAME)
    assert (got[0]["code"], got[0]["cause"]) == ("LOG015", "hostname_resolution"), got[0]
    assert "empty host name" in got[0]["title"]
