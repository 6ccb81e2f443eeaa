"""What the frameworks around the collectives say when a distributed job fails, read for what each message means in
its source: PaddlePaddle's launchers, TCPStore and NCCL-id exchange, TensorFlow's collective ops, Horovod's
coordinator and horovodrun, Lightning's, accelerate's and Ray Train's launch checks, the dynamic loader, torchrun's
agent hung up. Each row has its line (the format string filled in as the library prints it, or a thread's line) and
a near-miss that must not match.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from logs.test_corpus import diagnose_lines
from logs.test_rule_rows import check_row

ROWS = [
    # (rule id, line, near-miss)
    # -- PaddlePaddle ----------------------------------------------------------------------------------------
    ("paddle_trainer_failed", "ERROR 2024-05-29 10:12:03,123 launch_utils.py:648] ABORT!!! Out of all 8 trainers, the "
                              "trainer process with rank=[3] was aborted. Please check its log.",
     "INFO 2024-05-29 10:12:03,123 launch_utils.py:560] Local start 8 processes. First process distributed environment "
     "info (Only For Debug):"),
    ("paddle_trainer_failed", "LAUNCH ERROR 2024-05-29 10:12:03,123 Container rank 3 status failed cmd ['/usr/bin/python',"
                              " '-u', 'train.py'] code 1 log log/workerlog.3",
     "LAUNCH INFO 2024-05-29 10:12:03,123 Container rank 3 status running cmd ['/usr/bin/python', '-u', 'train.py'] "
     "code None log log/workerlog.3"),
    ("paddle_store_unreachable", "ValueError: (InvalidArgument) Network 10.10.0.1:6170 cannot be connected. (at "
                                 "/paddle/paddle/phi/core/distributed/store/tcp_utils.cc:126)",
     "I0529 10:12:03.123456 12345 tcp_utils.cc:107] Retry to connect to 10.10.0.1:6170 while the server is not yet "
     "listening."),
    ("paddle_store_bind", "ValueError: (InvalidArgument) Bind network on IP_ANY:6170 failed. (at "
                          "/paddle/paddle/phi/core/distributed/store/tcp_utils.cc:174)",
     "I0529 10:12:03.123456 12345 tcp_utils.cc:130] Successfully connected to 10.10.0.1:6170"),
    ("paddle_store_workers", "ValueError: (InvalidArgument) TCPStore timeouted and not all workers got ready.",
     "I0529 10:12:03.123456 12345 tcp_store.cc:290] all workers got ready"),
    ("paddle_exchange_timeout", "RuntimeError: (Unavailable) connect addr=10.10.0.2:36677 timeout, failed reason: "
                                "Connection refused (at /paddle/paddle/fluid/platform/gen_comm_id_helper.cc:128)",
     "W0529 10:12:03.123456 12345 gen_comm_id_helper.cc:136] connect addr=10.10.0.2:36677 failed 1 times with reason: "
     "Connection refused retry after 0.5 seconds"),
    ("paddle_retry", "W0529 10:12:03.123456 12345 gen_comm_id_helper.cc:136] connect addr=10.10.0.2:36677 failed 1 times "
                     "with reason: Connection refused retry after 0.5 seconds",
     "RuntimeError: (Unavailable) connect addr=10.10.0.2:36677 timeout, failed reason: Connection refused"),
    ("paddle_host_unresolved", "ValueError: (InvalidArgument) Fail to get host by name node-1. (at "
                               "/paddle/paddle/fluid/platform/gen_comm_id_helper.cc:275)",
     "W0529 10:12:03.123456 12345 gen_comm_id_helper.cc:273] gethostbyname node-1 error!"),
    ("paddle_gpu_count", "ValueError: (InvalidArgument) Device id must be less than GPU count, but received id is: 2. "
                         "GPU count is: 1. (at /paddle/paddle/phi/backends/gpu/cuda/cuda_info.cc:86)",
     "W0529 10:12:03.123456 12345 gpu_resources.cc:119] Please NOTE: device: 2, GPU Compute Capability: 8.0, Driver "
     "API Version: 12.2, Runtime API Version: 12.0"),
    ("paddle_gpu_count", "RuntimeError: the number of visible devices(2) is less than the number of spawn processes(4), "
                         "please ensure that the correct `nprocs` argument is passed or the environment variable "
                         "`CUDA_VISIBLE_DEVICES` is correctly configured.",
     "INFO: the number of visible devices is 4"),
    ("paddle_env_missing", "ValueError: paddle.distributed initialize error, environment variable PADDLE_TRAINER_ID is "
                           "needed, but not set.",
     "UserWarning: Currently not a parallel execution environment, `paddle.distributed.init_parallel_env` will not do "
     "anything."),
    ("paddle_nccl_shm", "OSError: (External) NCCL error(2), unhandled system error.  Detail: No space left on device",
     "OSError: (External) NCCL error(2), unhandled system error."),
    ("paddle_dynamic_check", "ValueError: (InvalidArgument) Tensors in communication are expected to have matching "
                             "sizes.",
     "I0529 10:42:03.123456 12345 nccl_dynamic_check.cc:40] Dynamic check of tensor shapes in communication passed"),
    ("paddle_comm_timeout", "W0529 10:42:03.123456 12345 comm_task_manager.cc:176] Find timeout start but not finish "
                            "task:group_key:group_0,group_ranks:[0,1,2,3,4,5,6,7],global_rank:3,local_rank:3,"
                            "comm_count:1842,op:allreduce,started:1,completed:0,numel:4096,nranks:8",
     "I0529 10:42:03.123456 12345 comm_task_manager.cc:134] Find last group comm task:part:0/1,group_key:group_2,"
     "group_ranks:[0,2,4,6],global_rank:2,local_rank:2,comm_count:10,op:broadcast,started:1,completed:1"),
    # paddle.distributed.spawn words torch.multiprocessing's report of a child killed by a signal with a capital P.
    ("spawn_signal", "Exception: Process 2 terminated with signal SIGKILL.",
     "Exception: Process 1 terminated with the following error:"),
    # -- the dynamic loader --------------------------------------------------------------------------------
    ("lib_missing", "ImportError: libnccl.so.2: cannot open shared object file: No such file or directory",
     "node1:12:12 [0] NCCL INFO NET/Plugin: Could not find: libnccl-net.so. Using internal network plugin."),
    ("lib_missing", "paddle.fluid.core_avx.EnforceNotMet: Failed to find dynamic library: libnccl.so ( libnccl.so: "
                    "cannot open shared object file: No such file or directory )",
     "node1:12:12 [0] NCCL INFO NET/Plugin : dlerror=libnccl-net.so: cannot open shared object file: No such file or "
     "directory No plugin found (libnccl-net.so), using internal implementation"),
    ("lib_missing", "python: error while loading shared libraries: libcudart.so.12: cannot open shared object file: No "
                    "such file or directory",
     "ImportError: libc10_cuda.so: cannot open shared object file: No such file or directory"),
    # -- TensorFlow ------------------------------------------------------------------------------------------
    ("tf_collective_shape", "tensorflow.python.framework.errors_impl.InvalidArgumentError: Shape mismatch in the "
                            "collective instance 100. Op at device /job:worker/replica:0/task:1/device:GPU:0 expected "
                            "shape [1024] but another member in the group expected shape [2048].",
     "tensorflow.python.framework.errors_impl.InvalidArgumentError: Incompatible shapes: [1024] vs. [2048]"),
    ("tf_collective_timeout", "tensorflow.python.framework.errors_impl.DeadlineExceededError: Collective has timed out "
                              "waiting for other workers.",
     "tensorflow.python.framework.errors_impl.DeadlineExceededError: Deadline Exceeded"),
    ("tf_cluster_config", "tensorflow.python.framework.errors_impl.InternalError: Task 3 was not defined in job "
                          "\"worker\"",
     "INFO:tensorflow:Enabled multi-worker collective ops with available devices: ['/job:worker/replica:0/task:3/"
     "device:CPU:0']"),
    ("tf_gpu_oom", "tensorflow.python.framework.errors_impl.ResourceExhaustedError: OOM when allocating tensor with "
                   "shape[64,1024,1024] and type float on /job:worker/replica:0/task:0/device:GPU:0 by allocator "
                   "GPU_0_bfc",
     "tensorflow.python.framework.errors_impl.ResourceExhaustedError: OOM when allocating tensor with shape[64,1024] "
     "and type float on /job:localhost/replica:0/task:0/device:CPU:0 by allocator cpu"),
    # -- Horovod ------------------------------------------------------------------------------------------------
    ("horovod_mismatch", "horovod.common.exceptions.HorovodInternalError: Mismatched ALLREDUCE tensor shapes: One rank "
                         "sent a tensor of shape [128, 10], but another rank sent a tensor of shape [128, 12].",
     "horovod.common.exceptions.HorovodInternalError: ncclCommInitRank failed: unhandled system error"),
    ("horovod_mismatch", "horovod.common.exceptions.HorovodInternalError: Mismatched data types: One rank had type "
                         "float32, but another rank had type float16.",
     "RuntimeError: Mismatched data types in the model's config"),
    ("horovod_no_common_if", "Exception: Unable to find a set of common task-to-task communication interfaces: [(0, "
                             "{'eth0': [('10.0.0.1', 12345)]}), (1, {'ens5': [('10.0.0.2', 12345)]})]",
     "Checking whether extension tensorflow was built with MPI."),
    ("horovod_tasks_timeout", "horovod.runner.common.util.timeout.TimeoutException: Timed out waiting for tasks to "
                              "start. Please check connectivity between servers. You may need to increase the "
                              "--start-timeout parameter if you have too many servers.",
     "horovod.runner.common.util.timeout.TimeoutException: Timed out waiting for available slots."),
    ("horovod_slots", "ValueError: Requested more processes (16) than there are available slots (8)",
     "ValueError: Requested more processes than a Python list can hold"),
    ("store_wait_timeout", "RuntimeError: Horovod could not be initialized: [/tmp/pip-install/horovod/common/gloo/"
                           "http_store.cc:54] Wait timeout after 30 seconds for key(s): global_0",
     "[/tmp/pip-install/horovod/common/gloo/http_store.cc:54] Wait for key(s): global_0"),
    # -- Lightning, accelerate, Ray Train -----------------------------------------------------------------------
    ("lightning_shape", "ValueError: You set `devices=8` in Lightning, but the number of tasks per node configured in "
                        "SLURM `--ntasks-per-node=1` does not match. HINT: Set `devices=1`.",
     "Initializing distributed: GLOBAL_RANK: 0, MEMBER: 1/8"),
    ("lightning_shape", "ValueError: You set `num_nodes=1` in Lightning, but the number of nodes configured in SLURM "
                        "`--nodes=2` does not match. HINT: Set `num_nodes=2`.",
     "All distributed processes registered. Starting with 16 processes"),
    ("lightning_child_failed", "[rank: 3] Child process with PID 48213 terminated with code 1. Forcefully terminating all "
                               "other processes to avoid zombies 🧟",
     "[rank: 3] Child process with PID 48213 started"),
    ("accelerate_port", "ConnectionError: Tried to launch distributed communication on port `29500`, but another "
                        "process is utilizing it. Please specify a different port (such as using the "
                        "`--main_process_port` flag or specifying a different `main_process_port` in your config file) "
                        "and rerun your script.",
     "UserWarning: Port `29500` is already in use. Accelerate will attempt to launch in a standalone-like mode by "
     "finding an open port automatically for this session."),
    ("accelerate_rtx4000", "NotImplementedError: Using RTX 4000 series doesn't support faster communication broadband "
                           "via P2P or IB. Please set `NCCL_P2P_DISABLE=\"1\"` and `NCCL_IB_DISABLE=\"1\" or use "
                           "`accelerate launch` which will do this automatically.",
     "07/24/2026 11:58:44 - WARNING - accelerate.commands.launch - Using RTX 4000 series which doesn't support faster "
     "communication speedups. Ensuring P2P and IB communications are disabled."),
    ("parallel_sizes", "[rank0]: RuntimeError: world_size (12) is not divisible by 8",
     "[rank0]: AssertionError: num_attention_heads (12) must be a multiple of tensor_model_parallel_size (8)."),
    ("parallel_sizes", "[rank0]: AssertionError: Invalid parallel dims: dp_replicate(1) * dp_shard(2) * cp(1) * tp(4) * "
                       "pp(2) != WORLD_SIZE(8)",
     "[titan] 2026-03-02 10:14:55,120 - root - INFO - Building 1-D device mesh with ['dp_shard'], [8]"),
    ("ray_workers_unplaced", "ray.train.v2._internal.exceptions.WorkerGroupStartupTimeoutError: The worker group startup "
                             "timed out after 60.0 seconds waiting for 16 workers.",
     "ray.train.v2._internal.exceptions.WorkerGroupStartupFailedError: At least one of the worker actors failed to "
     "initialize."),
    # -- LLM servers: vLLM, SGLang, TensorRT-LLM, lmdeploy ---------------------------------------------------------
    ("worker_pool_died", "(EngineCore_DP0 pid=41532) ERROR 11-29 03:25:31 [multiproc_executor.py:381] Worker proc "
                         "VllmWorker-3 died unexpectedly (exit code: -9), shutting down executor.",
     "(EngineCore_DP0 pid=41532) INFO 11-29 03:25:31 [multiproc_executor.py:520] Worker proc VllmWorker-3 ready"),
    ("worker_pool_died", "RuntimeError: Rank 2 scheduler died during initialization (exit code: -9). If exit code is -9 "
                         "(SIGKILL), a common cause is the OS OOM killer. Run `dmesg -T | grep -i oom` to check.",
     "[2026-11-29 03:30:15 TP2] Scheduler initialization finished"),
    ("serving_shape", "ValueError: World size (16) is larger than the number of available GPUs (8) in this node. If this "
                      "is intentional and you are using:",
     "INFO 11-29 03:05:01 [config.py:1020] World size 8, 8 GPUs available in this node"),
    ("serving_shape", "[TensorRT-LLM][ERROR] tensorrt_llm::common::TllmException: [TensorRT-LLM][ERROR] Assertion "
                      "failed: MPI size 4 != TP size 8 * PP size 1 * CP Size 1",
     "[TensorRT-LLM][INFO] MPI size: 8, MPI local size: 8, rank: 0"),
    ("shm_preflight", "(EngineCore_DP0 pid=41532) RuntimeError: Insufficient space in /dev/shm for shared-memory "
                      "allocation: 160 MiB required, 64 MiB free. Increase /dev/shm",
     "(EngineCore_DP0 pid=41532) INFO 11-29 03:12:44 [shm_broadcast.py:289] Allocated 160 MiB in /dev/shm"),
    ("serving_port_busy", "ValueError: nccl_port at 30009 is not available in 30 seconds. nccl_port is used by a process "
                          "already.",
     "[2026-11-29 03:29:55] server_args: nccl_port=30009 dist_init_port=5000"),
    ("serving_nic_missing", "[2026-11-29 03:29:51] ValueError: You must specify a valid interface name. Can not get "
                            "local ip from NIC. Please verify whether SGLANG_LOCAL_IP_NIC is set correctly.",
     "[2026-11-29 03:29:51] Using local ip 10.0.0.11 from NIC eth0"),
    # -- cloud: Google's TCPX/TCPXO plugins, Kubernetes' events ---------------------------------------------------
    ("gcp_rxdm", "gke-a3-pool-node-1:231:412 [3] NCCL WARN NET/GPUDirectTCPX register failed against "
                 "receive_datapath_manager, UNAVAILABLE: connect to /run/tcpx/rx_rule_manager failed",
     "gke-a3-pool-node-1:231:412 [3] NCCL INFO NET/GPUDirectTCPX : GPUDirectTCPX enable: 1"),
    ("gcp_rxdm", "a3mega-node-0:1842:1960 [2] NCCL WARN NET/FasTrak 2025-03-04T09:12:41.382115-08:00: Timeout: RxDM not "
                 "ready on a3mega-node-0 after 600 seconds: UNAVAILABLE",
     "a3mega-node-0:1842:1960 [2] NCCL INFO NET/FasTrak 2025-03-04T09:12:41.382115-08:00: RxDM ready"),
    ("ifname_missing", "gke-a3-pool-node-1:231:412 [3] NCCL WARN NET/GPUDirectTCPX : no ctrl interface found",
     "gke-a3-pool-node-1:231:412 [3] NCCL INFO NET/GPUDirectTCPX ctrl interface eth0"),
    ("ifname_missing", "a3mega-node-0:1842:1960 [2] NCCL WARN NET/FasTrak 2025-03-04T09:12:41.382115-08:00: No interfaces "
                       "found for ctrl dev name eth0",
     "a3mega-node-0:1842:1960 [2] NCCL INFO NET/FasTrak 2025-03-04T09:12:41.382115-08:00: Found 8 interfaces"),
    ("k8s_unschedulable", "  Warning  FailedScheduling  30s  default-scheduler  0/8 nodes are available: 8 Insufficient "
                          "nvidia.com/gpu. preemption: 0/8 nodes are available: 8 No preemption victims found for "
                          "incoming pod.",
     "  Normal  Scheduled  30s  default-scheduler  Successfully assigned default/worker-1 to gke-a3-pool-node-1"),
    ("k8s_pod_lost", "  Warning  Evicted  4m  kubelet  The node was low on resource: memory. Threshold quantity: 100Mi, "
                     "available: 81204Ki.",
     "  Warning  Evicted  1m  kubelet  Pod ephemeral local storage usage exceeds the total limit of containers 20Gi."),
    ("k8s_pod_lost", "  Warning  PyTorchJobFailed  30s  pytorchjob-controller  PyTorchJob llm-pretrain is failed because "
                     "1 Worker replica(s) failed.",
     "  Normal  PyTorchJobRunning  30s  pytorchjob-controller  PyTorchJob llm-pretrain is running."),
    ("k8s_shm_evicted", "  Warning  Evicted  2m  kubelet  Usage of EmptyDir volume \"dshm\" exceeds the limit \"1Gi\". ",
     "  Normal  Created  2m  kubelet  Created container pytorch with EmptyDir volume dshm"),
    # gloo's ibverbs transport (transport/ibverbs/pair.cc), pytorch/gloo#147.
    ("gloo_ibv_completion", "wc->status == IBV_WC_SUCCESS. 5 vs 0. Send for slot 0: Work Request Flushed Error",
     "node1:12:12 [0] NCCL INFO NET/IB : Using [0]qedr0:1/RoCE ; OOB eth0:192.168.10.100<0>"),
    # -- torchrun's agent hung up; torch 2.4-2.5's spelling of the libuv error; MVAPICH2's verbs channel -------------
    ("agent_hangup", "WARNING:torch.distributed.elastic.agent.server.api:Received 1 death signal, shutting down workers",
     "WARNING:torch.distributed.elastic.agent.server.api:Received 15 death signal, shutting down workers"),
    ("agent_hangup", "torch.distributed.elastic.multiprocessing.api.SignalException: Process 4190 got signal: 1",
     "torch.distributed.elastic.multiprocessing.api.SignalException: Process 4190 got signal: 15"),
    ("libuv_missing", "RuntimeError: use_libuv was requested but PyTorch was build without libuv support",
     "[I1127 14:35:51.6 TCPStore.cpp:271] [c10d - debug] The server has started on port = 29500, use_libuv = 1"),
    ("ib_create_bare", "0.260s: job.exception type=exec severity=0 MPI_Abort: Fatal error in MPI_Init: Other MPI error, "
                       "error stack: MPIR_Init_thread(493)....:  MPID_Init(419)...........: channel initialization "
                       "failed MPIDI_CH3_Init(550)......:  MPIDI_CH3I_RDMA_init(446):  rdma_iba_hca_init(1636)..: "
                       "cannot create cq ",
     "MPIDI_CH3I_RDMA_init(446):  rdma_iba_hca_init(1636)..: Failed to open HCA number 0"),
]


@pytest.mark.parametrize(("rule", "line", "near"), ROWS, ids=[f"{r[0]}-{i}" for i, r in enumerate(ROWS)])
def test_row_matches_its_line_and_not_the_near_miss(rule: str, line: str, near: str) -> None:
    check_row(rule, line, near)


def _verdict(tmp_path: Path, *lines: str) -> dict:
    return next(f for f in diagnose_lines(tmp_path / "node.log", *lines)["findings"] if f["cause"])


@pytest.mark.parametrize(("lines", "code", "cause", "said"), [
    # Paddle's launcher names the trainer and its log; -9 is the kernel's SIGKILL.
    (("ERROR 2024-05-29 10:12:03,123 manager.py:105] ABORT!!! ABORT!!! ABORT!!!",
      "ERROR 2024-05-29 10:12:03,124 manager.py:106] ERROR rank 2 error with exit code -9, check log for detail."),
     "LOG060", "peer_process_died", "trainer rank 2 fail, killed by SIGKILL"),
    (("ValueError: (InvalidArgument) Bind network on IP_ANY:6170 failed. (at "
      "/paddle/paddle/phi/core/distributed/store/tcp_utils.cc:174)",), "LOG010", "port_conflict", "6170"),
    (("RuntimeError: (Unavailable) connect addr=10.10.0.2:36677 timeout, failed reason: Connection refused (at "
      "/paddle/paddle/fluid/platform/gen_comm_id_helper.cc:128)",), "LOG011", "rendezvous_unreachable", "10.10.0.2:36677"),
    (("OSError: (External) NCCL error(2), unhandled system error.  Detail: No space left on device",
      "Please try one of the following solutions:",
      "1. export NCCL_SHM_DISABLE=1;"), "ENV030", "shm_too_small", ""),
    (("MemoryError: (ResourceExhausted) Out of memory error on GPU 0. Cannot allocate 1.250000GB memory on GPU 0, "
      "78.500000GB memory has been allocated and available memory is only 512.000000MB.",), "LOG031", "cuda_oom", ""),
    (("W0531 10:12:03.123456 12345 dynamic_loader.cc:139] Failed to find dynamic library: libnccl.so ( libnccl.so: "
      "cannot open shared object file: No such file or directory )",), "LOG113", "other", "libnccl.so could not be loaded"),
    (("Traceback (most recent call last):", "ImportError: libcuda.so.1: cannot open shared object file: No such file or "
      "directory"), "LOG113", "other", "libcuda.so.1"),
    (("ValueError: You requested to find 8 devices but this machine only has 4 GPUs.",), "LOG066", "launcher_misconfig",
     "8 GPUs were asked for on a machine that shows 4"),
    (("horovod.common.exceptions.HorovodInternalError: Mismatched operations: One rank did an ALLREDUCE, but another "
      "rank did an BROADCAST.",), "LOG050", "collective_mismatch", ""),
    (("WARNING:torch.distributed.elastic.agent.server.api:Received 1 death signal, shutting down workers",
      "WARNING:torch.distributed.elastic.multiprocessing.api:Sending process 4193 closing signal SIGHUP",
      "WARNING:torch.distributed.elastic.multiprocessing.api:Sending process 4194 closing signal SIGHUP"),
     "LOG112", "other", "hung up (SIGHUP)"),
])
def test_the_verdict_says_what_the_message_means(tmp_path: Path, lines: tuple, code: str, cause: str, said: str) -> None:
    f = _verdict(tmp_path, *lines)
    assert (f["code"], f["cause"]) == (code, cause), f
    assert said in f["title"] + " " + f.get("detail", ""), f


def test_paddle_retries_while_peers_start_are_no_failure(tmp_path: Path) -> None:
    """A healthy Paddle job's start: its trainers retry until the others listen, then go on."""
    doc = diagnose_lines(tmp_path / "workerlog.0",
                         "W0529 10:12:03.123456 12345 gen_comm_id_helper.cc:136] connect addr=10.10.0.2:36677 failed 1 "
                         "times with reason: Connection refused retry after 0.5 seconds",
                         "W0529 10:12:04.123456 12345 gen_comm_id_helper.cc:136] connect addr=10.10.0.2:36677 failed 2 "
                         "times with reason: Connection refused retry after 1 seconds",
                         "I0529 10:12:05.123456 12345 tcp_utils.cc:107] Retry to connect to 10.10.0.1:6170 while the "
                         "server is not yet listening.",
                         "[2024-05-29 10:12:09,001] [    INFO] - loss: 2.3125, learning_rate: 1e-05, global_step: 10")
    assert not [f for f in doc["findings"] if f["cause"]], doc["findings"]


def test_the_agent_stopped_by_sigterm_is_not_called_hung_up(tmp_path: Path) -> None:
    f = _verdict(tmp_path, "torch.distributed.elastic.multiprocessing.api.SignalException: Process 4190 got signal: 15")
    assert f["code"] == "LOG060" and "SIGTERM" in f["title"]


def test_open_mpis_bind_einval_is_not_an_interface_choice(tmp_path: Path) -> None:
    """bind() refused with EINVAL is the kernel rejecting Open MPI's arguments (open-mpi/ompi#5815 on macOS); an
    interface's address not on the host would be EADDRNOTAVAIL. It stays an unrecognised failure, quoted."""
    doc = diagnose_lines(tmp_path / "mpirun.log",
                         "[GRP-MBP][[39843,1],0][btl_tcp_endpoint.c:731:mca_btl_tcp_endpoint_start_connect] bind() "
                         "failed: Invalid argument (22)",
                         "[GRP-MBP:04122] *** An error occurred in MPI_Bcast")
    assert not [f for f in doc["findings"] if f["cause"]]
    assert [f["code"] for f in doc["findings"] if f["severity"] == "error"] == ["LOG080"]


def test_running_out_of_file_descriptors_explains_the_failed_binds(tmp_path: Path) -> None:
    """open-mpi/ompi#7246: 16 nodes x 64 ranks over TCP. bind() of each outgoing socket fails with EADDRINUSE, and
    the same output cannot open a help file for "Too many open files": the open-file limit, not a taken port or an
    interface, is what to raise."""
    lines = ("[cn8][[311,1],510][../../../../../../opal/mca/btl/tcp/btl_tcp_endpoint.c:730:"
             "mca_btl_tcp_endpoint_start_connect] bind on local address (10.115.79.16:0) failed",
             ": Address already in use (98)",
             "Sorry!  You were supposed to get help about:",
             "    accept failed",
             "But I couldn't open the help file:",
             "    /usr/share/openmpi/help-mpi-btl-tcp.txt: Too many open files.  Sorry!")
    f = _verdict(tmp_path, *lines)
    assert (f["code"], f["cause"]) == ("LOG082", "other"), f
    # Without it, the same bind failure is the transport's interface, as before.
    assert _verdict(tmp_path, *lines[:2])["code"] == "LOG023"


def test_nccl_comm_id_from_a_container_on_dockers_default_bridge(tmp_path: Path) -> None:
    """NVIDIA/nccl#331: NCCL_COMM_ID names the host's address; inside a container on docker's default bridge the only
    interface is 172.17.0.3, so no interface is on that network and the bind fails: the container's network is what
    to change (--network=host), not the address."""
    lines = ("e82c50601d13:213:213 [0] include/socket.h:197 NCCL WARN Net : No interface found in the same subnet as "
             "remote address 192.168.0.91<27030>",
             "e82c50601d13:213:213 [0] NCCL INFO Bootstrap : Using [0]eth0:172.17.0.3<0>",
             "e82c50601d13:213:213 [0] include/socket.h:333 NCCL WARN Call to bind failed : Cannot assign requested "
             "address")
    f = _verdict(tmp_path, *lines)
    assert (f["code"], f["cause"]) == ("LOG020", "wrong_interface"), f
    assert "172.17.0.3" in f["title"] and "--network=host" in f["detail"]
    # On a routed network of its own, the same warning is NCCL_COMM_ID's address, as before.
    routed = (lines[0], lines[1].replace("172.17.0.3", "10.1.2.3"), lines[2])
    assert _verdict(tmp_path, *routed)["code"] == "LOG011"


def test_nvml_not_finding_a_local_gpu_by_bus_id_is_a_task_confined_to_its_own(tmp_path: Path) -> None:
    """NVIDIA/nccl#1066: two ranks of one Slurm node, each started with --gpus-per-task, each see one GPU; NCCL's NVML
    lookup of the other rank's GPU by bus id finds nothing. The 2.5 preview's lookup by index stays NCCL's own."""
    f = _verdict(tmp_path, "gcn6:1080061:1080359 [0] misc/nvmlwrap.cc:181 NCCL WARN nvmlDeviceGetHandleByPciBusId() "
                           "failed: Not Found")
    assert (f["code"], f["cause"]) == ("LOG066", "launcher_misconfig") and "--gpus-per-task" in f["title"]
    f = _verdict(tmp_path, "node1:12:12 [0] misc/nvmlwrap.cc:63 NCCL WARN nvmlDeviceGetHandleByIndex() failed: Invalid "
                           "Argument")
    assert (f["code"], f["cause"]) == ("LOG070", "nccl_internal_bug")


def test_fsdp_all_gather_timeouts_name_the_rank_that_did_not_log_one(tmp_path: Path) -> None:
    """An all-gather's NumelOut is NumelIn times the group's size: ranks 1-3 of a group of 4 timed out, so rank 0 is
    the one that never arrived, though no line names the world size. The message wrapped inside the word
    "Timeout" as a terminal copied it (meta-pytorch/torchtune#1165) is still read as one."""
    lines = [f"[rank{r}]:[E ProcessGroupNCCL.cpp:563] [Rank {r}] Watchdog caught collective operation timeout: "
             f"WorkNCCL(SeqNum=537, OpType=_ALLGATHER_BASE, NumelIn=131072512, NumelOut=524290048, Timeo"
             for r in (3, 1, 2)]
    doc = diagnose_lines(tmp_path / "node.log", *[x for ln in lines for x in
                                                  (ln, "ut(ms)=600000) ran for 600055 milliseconds before timing out.")])
    f = next(f for f in doc["findings"] if f["cause"])
    assert (f["code"], f["cause"]) == ("LOG051", "collective_timeout_straggler"), f
    assert "rank(s) 0 never logged a timeout" in f["title"] and "600 s" in f["title"], f["title"]
    # An all-reduce's counts say nothing of the group's size.
    doc = diagnose_lines(tmp_path / "ar.log", *[ln.replace("_ALLGATHER_BASE", "ALLREDUCE").replace("524290048", "131072512")
                                                for ln in lines])
    assert "rank(s) 0 never logged" not in next(f for f in doc["findings"] if f["cause"])["title"]


def test_pods_placed_after_a_failed_scheduling_are_no_finding(tmp_path: Path) -> None:
    """kubectl describe of a pod that waited for the autoscaler: FailedScheduling, then the scheduler placed it."""
    pending = ("  Warning  FailedScheduling  3m  default-scheduler  0/4 nodes are available: 4 Insufficient "
               "nvidia.com/gpu. preemption: 0/4 nodes are available: 4 No preemption victims found for incoming pod.")
    placed = "  Normal   Scheduled         1m  default-scheduler  Successfully assigned default/worker-1 to gpu-node-5"
    assert _verdict(tmp_path, pending)["code"] == "LOG066"
    doc = diagnose_lines(tmp_path / "describe.txt", pending, placed)
    assert not [f for f in doc["findings"] if f["cause"]], doc["findings"]


def test_the_cuda_runtime_missing_is_not_called_the_driver(tmp_path: Path) -> None:
    """libcudart (the toolkit's runtime) and libcuda (the driver's library) differ by a prefix, not by what to fix."""
    runtime = _verdict(tmp_path, "python: error while loading shared libraries: libcudart.so.12: cannot open shared "
                                 "object file: No such file or directory")
    driver = _verdict(tmp_path, "ImportError: libcuda.so.1: cannot open shared object file: No such file or directory")
    assert runtime["code"] == driver["code"] == "LOG113"
    assert "driver" not in runtime["detail"] and "runtime" in runtime["detail"]
    assert "driver's own library" in driver["detail"]
