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
    # -- launch checks of DeepSpeed, torchtitan, vLLM, Lightning, accelerate, TensorRT-LLM, lmdeploy ------------------
    ("launch_rank_conflict", "AssertionError: MPI world size 16 does not match torch world size 8",
     "[2026-08-22 12:00:05,214] [INFO] [comm.py:895:mpi_discovery] Discovered MPI settings of world_rank=0, local_rank=0, "
     "world_size=16, master_addr=10.0.0.4, master_port=29500"),
    ("launch_rank_conflict", "[rank1]: AssertionError: LOCAL_RANK (0) != OMPI_COMM_WORLD_LOCAL_RANK (1), not sure how to "
                             "proceed as we're seeing conflicting local rank info.",
     "[rank1]: OMPI_COMM_WORLD_LOCAL_RANK (1) read from the environment"),
    ("launch_rank_conflict", "[rank3]: AssertionError: Mismatch in local rank setting, args.local_rank=0 but "
                             "env['LOCAL_RANK']=3.",
     "[rank3]: args.local_rank=3 env['LOCAL_RANK']=3"),
    ("launch_rank_conflict", "[rank6]: ValueError: LOCAL_RANK=6 is outside the visible cuda device count (4). If each "
                             "process is launched with a single visible cuda device, set the visible-device mask per "
                             "process so device_count() returns 1.",
     "[titan] 2026-03-02 10:14:55,120 - root - INFO - cuda device count (8), LOCAL_RANK=6"),
    ("launch_rank_conflict", "RuntimeError: zero.Init resolved a process group of world_size=1, but the launcher "
                             "environment reports WORLD_SIZE=8. A single-rank process group was likely initialized "
                             "before zero.Init ran",
     "[2026-08-22 12:00:05,330] [INFO] [partition_parameters.py:348:__exit__] finished initializing model - num_params = "
     "291, num_elems = 6.74B"),
    ("launch_rank_conflict", "RuntimeError: External launcher initialized the default process group without a CPU (gloo) "
                             "backend. vLLM requires both CPU and device backends.",
     "INFO 11-29 03:03:58 [parallel_state.py:1165] world_size=2 rank=0 local_rank=0 distributed_init_method=env:// "
     "backend=nccl"),
    ("batch_world", "[rank0]: AssertionError: Check batch related parameters. train_batch_size is not equal to "
                    "micro_batch_per_gpu * gradient_acc_step * world_size 256 != 4 * 8 * 16",
     "[2026-03-02 10:14:55,120] [INFO] [config.py:1003:print]   train_batch_size ............. 256"),
    ("batch_world", "[rank0]: AssertionError: global batch size (256) is not divisible by micro batch size (2) times "
                    "data parallel size (12)",
     "[rank0]: setting number of micro-batches to constant 16"),
    ("serving_gpus_short", "ValueError: The number of required GPUs exceeds the total number of available GPUs in the "
                           "placement group. Required number of devices: 8. Total number of devices: 4.",
     "INFO 11-29 03:05:20 [ray_utils.py:380] Using the existing placement group"),
    ("serving_gpus_short", "WARNING 11-29 03:05:01 [ray_utils.py:293] Tensor parallel size (16) exceeds available GPUs "
                           "(8). This may result in Ray placement group allocation failures.",
     "INFO 11-29 03:05:01 [ray_utils.py:300] Tensor parallel size (8), available GPUs (8)"),
    ("serving_gpus_short", "ValueError: Invalid data parallel configuration: nnodes (3) must be divisible by the number "
                           "of data parallel node groups (2 = data_parallel_size 4 / data_parallel_size_local 2)",
     "INFO 11-29 03:05:01 [parallel.py:512] data parallel configuration: nnodes (2), data_parallel_size 4"),
    ("serving_frontend_silent", "(EngineCore_DP2 pid=3121) RuntimeError: Did not receive response from front-end "
                                "process within 5 minutes",
     "(EngineCore_DP2 pid=3121) INFO 11-29 03:05:01 [core.py:1380] Received response from front-end process"),
    ("serving_barrier_timeout", "RuntimeError: Barrier timed out after 300.00 seconds",
     "INFO 11-29 03:05:01 [utils.py:440] Barrier passed after 3.20 seconds"),
    ("serving_ring_wait", "(EngineCore_DP0 pid=41532) INFO 11-29 03:41:07 [shm_broadcast.py:878] No available shared "
                          "memory broadcast block found in 60 seconds. This typically happens when some processes are "
                          "hanging or doing some time-consuming work (e.g. compilation, weight/kv cache quantization).",
     "(EngineCore_DP0 pid=41532) INFO 11-29 03:41:07 [shm_broadcast.py:300] vLLM message queue communication handle: "
     "Handle(local_reader_ranks=[1, 2, 3], buffer_handle=(3, 4194304, 6, 'psm_f3b1'))"),
    ("serving_rank_unloaded", "[2026-11-29 03:31:07 TP3] ValueError: TP rank 3 could finish the model loading, but there "
                              "are other ranks that didn't finish loading. It is likely due to unexpected failures (e.g., "
                              "OOM) or a slow node.",
     "[2026-11-29 03:31:07 TP3] Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, avail mem=61.20 GB"),
    ("serving_child_quit", "[2026-11-29 03:31:08] Received sigquit from a child process. It usually means the child "
                           "failed.",
     "[2026-11-29 03:31:08] Received sigterm, shutting down"),
    ("launch_args", "RuntimeError: You set `--ntasks=8` in your SLURM bash script, but this variable is not supported. "
                    "HINT: Use `--ntasks-per-node=8` instead.",
     "SLURM_NTASKS_PER_NODE=8"),
    ("launch_args", "ValueError: n_workers must be equal to the number of processes in MPI, got 8 vs 4",
     "[TensorRT-LLM][INFO] MPI size: 8, MPI local size: 8, rank: 0"),
    ("launch_args", "[TensorRT-LLM][WARNING] gpusPerNode is 8 and mpiSize is 8, but only 1 GPUs detected, which is "
                    "smaller than min(mpiSize, gpusPerNode). gpusPerNode will be set to 1",
     "[TensorRT-LLM][INFO] gpusPerNode is 8 and mpiSize is 8"),
    ("ray_worker_died", "ray.exceptions.WorkerCrashedError: The worker died unexpectedly while executing this task. "
                        "Check python-core-worker-*.log files for more information.",
     "(raylet) A worker died or exited before it was scheduled a task"),
    ("sigterm_from_outside", "[rank: 5] Received SIGTERM: 15",
     "[rank: 5] Received SIGUSR1: 10"),
    ("ray_placement_wait", "INFO 11-29 03:05:20 [ray_utils.py:223] Waiting for creating a placement group of specs for "
                           "30 seconds. specs=[{'node:10.0.0.11': 0.001, 'GPU': 1.0}, {'GPU': 1.0}].",
     "INFO 11-29 03:05:20 [ray_utils.py:230] Created a placement group of specs=[{'GPU': 1.0}, {'GPU': 1.0}]"),
    ("store_get_timeout", "RuntimeError: Unable to get the NCCLUniqueID from the store within 180 seconds.",
     "2026-07-01 10:02:11,404\tINFO nccl_collective_group.py:110 -- Got the NCCLUniqueID from the store."),
    ("ddp_unused_params", "RuntimeError: It looks like your LightningModule has parameters that were not used in "
                          "producing the loss returned by training_step. If this is intentional, you must enable the "
                          "detection of unused parameters in DDP",
     "[rank: 0] Parameters that were not used in producing the loss: none"),
    ("cuda_forked", "RuntimeError: Lightning can't create new processes if CUDA is already initialized. Did you manually "
                    "call `torch.cuda.*` functions",
     "RuntimeError: Lightning can't create new processes in a Jupyter notebook with strategy='ddp'"),
    # -- the servers' memory and address checks; Megatron's rerun check; vLLM's P2P probe ----------------------
    ("serving_gpu_mem", "(Worker_TP1 pid=41790) ValueError: Free memory on device cuda:1 (61.2/79.19 GiB) on startup is "
                        "less than desired GPU memory utilization (0.9, 71.27 GiB). Decrease GPU memory utilization or "
                        "reduce GPU memory used by other processes.",
     "(Worker_TP1 pid=41790) INFO 11-29 03:10:12 [gpu_worker.py:298] Available KV cache memory: 61.20 GiB"),
    ("serving_gpu_mem", "[2026-11-29 03:31:07 TP3] The memory capacity is unbalanced. Some GPUs may be occupied by other "
                        "processes. pre_model_load_memory=41.7, local_gpu_memory=78.9, local_gpu_memory * 0.9=71.01",
     "[2026-11-29 03:31:07 TP3] Load weight begin. avail mem=78.90 GB"),
    ("serving_gpu_mem", "[2026-11-29 03:31:07 TP3] RuntimeError: Not enough memory. Please try to increase "
                        "--mem-fraction-static. Current value: mem_fraction_static=0.88",
     "[2026-11-29 03:31:07 TP3] KV Cache is allocated. #tokens: 412345, K size: 18.90 GB, V size: 18.90 GB"),
    ("serving_no_ip", "/usr/local/lib/python3.12/dist-packages/vllm/utils/network_utils.py:85: UserWarning: Failed to get "
                      "the IP address, using 0.0.0.0 by default. The value can be set by the environment variable "
                      "VLLM_HOST_IP or HOST_IP.",
     "INFO 11-29 03:04:11 [network_utils.py:60] Using the IP address 10.0.0.11 (VLLM_HOST_IP)"),
    ("serving_no_ip", "ValueError: Can not get local ip",
     "ValueError: Can not get local ip from NIC. Please verify whether SGLANG_LOCAL_IP_NIC is set correctly."),
    ("megatron_rerun_gpu", "[rank5]: Second rerun: unexpected result is not reproducible on a different GPU, therefore was "
                           "likely incorrect (0.8123 != nan)",
     "[rank5]: Second rerun: unexpected result is reproducible on a different GPU, therefore was likely correct"),
    ("serving_p2p_probe", "WARNING 11-29 03:09:58 [all_reduce_utils.py:319] Two processes do not agree on the P2P access "
                          "status on 0 -> 3, treat as disabled.",
     "INFO 11-29 03:09:41 [all_reduce_utils.py:380] generating GPU P2P access cache in "
     "/root/.cache/vllm/gpu_p2p_access_cache_for_0,1,2,3.json"),
    # -- NCCL's RAS service and its ncclras report; Kubernetes' device manager; preemption notes -----------------
    ("ras_version_mismatch", "node-7:5510:5602 [0] NCCL WARN NCCL version mismatch with remote peer 10.0.3.9<58120> "
                             "(local: 2.23.4, remote 2.21.5)",
     "node-7:5510:5602 [0] NCCL INFO NCCL version 2.23.4+cuda12.4"),
    ("ras_report_dead", "  1 job process is considered dead (unreachable via the RAS network)",
     "  0 job processes are unreachable via the RAS network"),
    ("ras_report_counts", "  Communicator ranks have different AllReduce operation counts",
     "  Communicator ranks have the same AllReduce operation counts"),
    ("k8s_gpu_withdrawn", "  Warning  UnexpectedAdmissionError  12s  kubelet  Allocate failed due to requested number of "
                          "devices unavailable for nvidia.com/gpu. Requested: 8, Available: 7, which is unexpected",
     "  Normal  Scheduled  30s  default-scheduler  Successfully assigned default/worker-1 to gpu-node-3"),
    ("k8s_pod_lost", "  Warning  PyTorchJobRestarting  2m  pytorchjob-controller  PyTorchJob llm-pretrain is restarting "
                     "because 1 Worker replica(s) failed.",
     "  Normal  PyTorchJobRestarting  2m  pytorchjob-controller  PyTorchJob llm-pretrain is restarting."),
    ("sigterm_from_outside", "[NeMo I 2026-03-02 11:02:17 preemption:94] Received SIGTERM, saving checkpoint and exiting",
     "[NeMo I 2026-03-02 11:02:17 preemption:60] Preemption is supported only on GPUs"),
    # -- oneCCL (uxlfoundation/oneCCL) and torch-ccl ---------------------------------------------------------------
    ("ccl_kvs_connect", "2025:03:21-10:15:02:(48213) |CCL_ERROR| internal_kvs.cpp:606 kvs_init: connection time (120) >= "
                        "limit (120)",
     "2025:03:21-10:15:02:(48213) |CCL_WARN| port [29500] is busy, connecting as client"),
    ("ccl_kvs_get_timeout", "2025:03:21-10:15:02:(48213) |CCL_ERROR| pmi_resizable_simple_internal.cpp:343 kvs_get_value: "
                            "KVS get error: timeout limit: 60 > 60, prefix: CCL_BARRIER_FULL0, key: 3",
     "2025:03:21-10:15:02:(48213) |CCL_ERROR| internal_kvs_server.hpp:124 get: read/write error: Connection reset by peer"),
    ("ccl_iface_missing", "2025:03:21-10:15:02:(48213) |CCL_ERROR| internal_kvs.cpp:325 fill_local_host_ip: can't find "
                          "interface ib0 to get host IP",
     "2025:03:21-10:15:02:(48213) |CCL_WARN| interface ib0 has no IPv6 address, using IPv4"),
    ("ccl_launch_env", "2025:03:21-10:15:02:(48213) |CCL_ERROR| internal_kvs.cpp:664 set_sin_addr: inet_pton error - "
                       "invalid network address, af: 2, src: node-0",
     "2025:03:21-10:15:02:(48213) |CCL_WARN| could not get local_idx/count from environment variables, trying to get "
     "them from ATL"),
    ("ccl_kvs_lost", "2025:03:21-10:15:02:(48213) |CCL_ERROR| internal_kvs_server.hpp:124 get: read/write error: "
                     "Connection reset by peer",
     "[rank1]: RuntimeError: read/write error: the dataset file is truncated"),
    ("ccl_provider", "2024:08:21-10:24:26:( 4456) |CCL_ERROR| atl_ofi_helper.cpp:907 atl_ofi_get_prov_list: can't create "
                     "providers for name shm",
     "2025:03:21-10:15:02:(48213) |CCL_WARN| can not open network providers with hmem support"),
    ("ccl_mr_nomem", "RuntimeError: oneCCL: atl_ofi.cpp:1173 get: EXCEPTION: failed to register mr, ret: -12, strerror: "
                     "Cannot allocate memory, buf: 0x7f3a2c000000, len: 67108864",
     "RuntimeError: oneCCL: atl_ofi.cpp:1173 get: EXCEPTION: failed to register mr, ret: -22, strerror: Invalid argument"),
    ("ccl_ze_result", "RuntimeError: oneCCL: ze_call.cpp:43 do_call: EXCEPTION: ze error at zeMemAllocDevice, code: "
                      "ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY",
     "RuntimeError: oneCCL: ze_call.cpp:43 do_call: EXCEPTION: ze error at zeMemOpenIpcHandle, code: "
     "ZE_RESULT_ERROR_INVALID_ARGUMENT"),
    ("ccl_pidfd_denied", "RuntimeError: oneCCL: ze_fd_manager.cpp:396 convert_fd_pidfd: EXCEPTION: pidfd_getfd failed: "
                         "convert_from_fd: 57, fd: -1, handle: 42, errno: Operation not permitted",
     "RuntimeError: oneCCL: ze_fd_manager.cpp:332 pidfd_open: EXCEPTION: pidfd_open failed: fd: -1, pid: 48217, errno: "
     "No such process"),
    ("ccl_entry_expired", "RuntimeError: oneCCL: entry.cpp:96 do_progress: EXCEPTION: entry RECV 0x55d0c2a8e3f0 update "
                          "time expired",
     "2025:03:21-10:15:02:(48213) |CCL_WARN| entry RECV 0x55d0c2a8e3f0 update time 30 s"),
    ("lib_missing", "2025:03:21-10:15:02:(48213) |CCL_WARN| dlopen (libfabric.so): libfabric.so: cannot open shared object "
                    "file: No such file or directory",
     "2025:03:21-10:15:02:(48213) |CCL_WARN| dlopen (libfabric.so): loaded from /opt/intel/oneapi/lib/libfabric.so"),
    ("ccl_ofi_peer", "2025:03:21-10:15:02:(48213) |CCL_ERROR| atl_ofi.cpp:944 prov_ep_handle_cq_err: fi_cq_readerr: err: 5, "
                     "prov_err: Input/output error(5)",
     "2025:03:21-10:15:02:(48213) |CCL_WARN| fi_cq_read returned no completions"),
    # -- Slurm and its PMIx plugin --------------------------------------------------------------------------------
    ("slurm_oom_kill", "slurmstepd: error: StepId=4183920.0 exceeded memory limit (68719476736 > 64424509440), being killed",
     "slurmstepd: StepId=4183920.0 hit memory limit at least once during execution. This may or may not result in some "
     "failure."),
    ("slurm_request", "sbatch: error: Batch job submission failed: Requested node configuration is not available",
     "sbatch: Submitted batch job 4183920"),
    ("slurm_request", "srun: Job 4183920 step creation temporarily disabled, retrying (Requested nodes are busy)",
     "srun: Step created for StepId=4183920.1"),
    ("slurm_request", "srun: error: Invalid MPI type 'pmix', --mpi=list for acceptable types",
     "srun: MPI types are..."),
    ("slurm_pmix_net", "slurmstepd: error:  mpi/pmix_v4: pmixp_dconn_connect: gpu-a017 [0]: pmixp_dconn.h:245: Cannot "
                       "establish direct connection to gpu-a018 (1)",
     "slurmstepd: error:  mpi/pmix_v4: pmixp_dconn_connect: gpu-a017 [0]: pmixp_dconn.h:245: direct connection to "
     "gpu-a018 (1) established"),
    ("slurm_pmix_net", "slurmstepd: error:  mpi/pmix_v4: _tcp_connect: gpu-a017 [0]: pmixp_dconn_tcp.c:112: Can't find "
                       "address for host gpu-a018, check slurm.conf",
     "slurmd: error: Can't find the state file, check slurm.conf"),
    ("slurm_pmix_net", "slurmstepd: error:  mpi/pmix_v4: pmixp_coll_tree_reset_if_to: gpu-a017 [0]: pmixp_coll_tree.c:1314: "
                       "0x7f2a6c00a6f0: collective timeout seq=0",
     "[rank0]: RuntimeError: NCCL collective timeout seq=0"),
    ("srun_node_lost", "srun: error: Cannot communicate with node 3.  Aborting job.",
     "srun: error: Cannot communicate with the controller, retrying"),
    # -- RCCL's own wording (hipified) --------------------------------------------------------------------------------
    ("cuda_oom", "node01:40213:40290 [0] /opt/rocm-5.4.3/rccl/src/init.cc:1016 NCCL WARN HIP failure 'out of memory'",
     "node01:40213:40290 [0] /opt/rocm-5.4.3/rccl/src/init.cc:1016 NCCL WARN HIP failure 'invalid device ordinal'"),
    ("p2p_unsupported", "node01:40213:40290 [0] /opt/rocm/rccl/src/transport/p2p.cc:238 NCCL WARN hipIpcGetMemHandle failed "
                        ": invalid argument",
     "node01:40213:40290 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC"),
    # -- the NVIDIA driver's own lines --------------------------------------------------------------------------------
    ("gpu_init_failed", "Mar  3 14:21:07 node17 kernel: NVRM: GPU 0000:3b:00.0: RmInitAdapter failed! (0x62:0x55:2477)",
     "Mar  3 14:21:07 node17 kernel: NVRM: GPU 0000:3b:00.0: RmInitAdapter succeeded"),
    ("gpu_init_failed", "        Remapping Failure Occurred        : Yes",
     "        Remapping Failure Occurred        : No"),
    ("gdrcopy_abi", "ERR:  The minimum required gdrdrv driver version is 2.4 but the current gdrdrv version is 2.3",
     "INFO: gdrdrv version 2.4 loaded"),
    # -- aws-ofi-nccl and libfabric's EFA provider ----------------------------------------------------------------------
    ("ofi_peer_unreachable", "ip-172-31-10-5:18234:18234 [0] NCCL WARN NET/OFI Request 0x7f3c2c0f8a80 (SEND) completed with "
                             "error: err: 103, flags: 2056, prov_errno: 4124, strerror: Unresponsive receiver (connection "
                             "previously established)",
     "ip-172-31-10-5:18234:18234 [0] NCCL INFO NET/OFI Request 0x7f3c2c0f8a80 (SEND) completed"),
    ("ofi_peer_unreachable", "libfabric:18234:1724312345::efa:ep_ctrl:efa_rdm_cq_process_prov_errno():631<warn> The peer of "
                             "address fi_addr_efa://[fe80::2b:11ff:fe90:4c02]:0:902 becomes unresponsive",
     "libfabric:18234:1724312345::efa:ep_ctrl:efa_rdm_ep_open():120<info> The peer of address "
     "fi_addr_efa://[fe80::2b:11ff:fe90:4c02]:0:902 is inserted"),
    ("ofi_nomem", "ip-172-31-10-5:18234:18234 [0] NCCL WARN NET/OFI Couldn't create domain. RC: -12, ERROR: Cannot allocate "
                  "memory",
     "ip-172-31-10-5:18234:18234 [0] NCCL WARN NET/OFI Couldn't create domain. RC: -22, ERROR: Invalid argument"),
    ("ofi_nomem", "libfabric:18234:1724312345::efa:ep_ctrl:efa_qp_create():343<warn> ibv_create_qp failed. errno: 12",
     "libfabric:18234:1724312345::efa:ep_ctrl:efa_qp_create():343<warn> ibv_create_qp failed. errno: 22"),
    ("ofi_gdr_off", "ip-172-31-10-5:18234:18234 [0] NCCL WARN NET/OFI GDR disabled on GDR-supported instance type "
                    "p4d.24xlarge",
     "ip-172-31-10-5:18234:18234 [0] NCCL INFO NET/OFI Support for global registrations: true"),
    # -- the servers' disaggregated and data-parallel paths ------------------------------------------------------------
    ("serving_peer_gone", "[2025-11-29 03:41:07 DP0 TP0] Decode transfer failed for request rank=0 with exception "
                          "KVTransferError(bootstrap_room=8421): Failed to get kvcache from prefill instance, it might be dead",
     "[2025-11-29 03:41:07 DP0 TP0] Got kvcache from prefill instance 10.0.0.12:8998"),
    ("serving_peer_gone", "RuntimeError: Process EngineCore_DP0 (PID: 41532) died with exit code 1",
     "INFO 11-29 03:41:07 [utils.py:580] Process EngineCore_DP0 (PID: 41532) started"),
    ("serving_bootstrap", "(Worker_TP0 pid=2211) ERROR 11-29 03:41:07 [mooncake_connector.py:2611] Failed to connect to "
                          "bootstrap server 10.0.0.12:8998 (ConnectError): All connection attempts failed",
     "(Worker_TP0 pid=2211) INFO 11-29 03:41:07 [mooncake_connector.py:2600] Connected to bootstrap server 10.0.0.12:8998"),
    ("serving_bootstrap", "[TM][WARN][1129 03:41:07.123456] Failed to connect to store after 12 retries: unable to connect "
                          "to 10.0.0.12:29551",
     "[TM][WARN][1129 03:41:07.123456] Retrying to connect to store 10.0.0.12:29551"),
    ("engine_dead", "vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. See stack trace (above) "
                    "for the root cause.",
     "(EngineCore_DP0 pid=41532) INFO 11-29 03:41:07 [core.py:90] EngineCore started"),
    ("launch_args", "RuntimeError: Check failed: intra_n_ranks_ == intra_n_ranks (8 vs. 4) The number of ranks in each "
                    "node should be same.",
     "[TM][INFO] intra_n_ranks 8"),
    ("lib_missing", "ImportError: DeepEP is not available. Please install DeepEP package from "
                    "https://github.com/deepseek-ai/deepep. Original import error: libnvshmem_host.so.3: cannot open "
                    "shared object file: No such file or directory",
     "INFO: libnvshmem_host.so.3 loaded from /usr/local/lib/python3.12/dist-packages/nvidia/nvshmem/lib"),
    ("ib_async", "node1:123:456 [0] NCCL WARN NET/IB : mlx5_0:1 Got async event : port error",
     "ImportError: DeepEP is not available. Original import error: libnvshmem_host.so.3"),
    # -- JAX/XLA, a second pass; DeepSpeed's and ColossalAI's launch checks -----------------------------------------
    ("xla_gpu_oom", "jax.errors.JaxRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to allocate 17179869184 "
                    "bytes.",
     "jax.errors.JaxRuntimeError: RESOURCE_EXHAUSTED: Too many open files"),
    ("xla_topology_wait", "jax.errors.JaxRuntimeError: INTERNAL: Getting local topologies failed: Error 1: GetKeyValue() "
                          "timed out with key: cuda:local_topology/cuda/1 and duration: 2m",
     "I0808 14:03:10.001234 2841 topology_util.cc:150] Got local topologies from 2 processes"),
    ("jax_launch_args", "ValueError: process_id and num_processes must be nonnegative, with process_id < num_processes. Got "
                        "process_id=8, num_processes=8.",
     "INFO:jax._src.distributed:Starting JAX distributed service on 10.0.0.11:1234 with process_id=0, num_processes=8"),
    ("jax_sync_mismatch", "AssertionError: sync_global_devices name mismatch ('checkpoint_save'). Expected: [2851147264 "
                          "2851147264 1630287543 2851147264]; got: 2851147264.",
     "INFO: sync_global_devices('checkpoint_save') done"),
    ("jax_rpc_server", "jax.errors.JaxRuntimeError: UNKNOWN: Failed to start RPC server",
     "I0808 14:03:10.001234 2841 service.cc:100] Started RPC server on 10.0.0.11:1234"),
    ("cuda_dso_mismatch", "E0808 09:00:00.223344 1201 cuda_diagnostics.cc:287] kernel version 535.104.5 does not match DSO "
                          "version 550.54.15 -- cannot find working devices in this configuration",
     "I0808 09:00:00.223344 1201 cuda_diagnostics.cc:200] kernel driver version is 550.54.15"),
    ("launch_rank_conflict", "RuntimeError: Could not find 'RANK' in the torch environment, visit https://www.colossalai.org/ "
                             "for more information on launching with torch",
     "RuntimeError: Could not find the checkpoint in /ckpt, visit https://www.colossalai.org/ for more information"),
    ("parallel_sizes", "AssertionError: World size 6 is not divisible by tp_size 4 * pp_size 1",
     "INFO: World size 8, tp_size 4, pp_size 2"),
    ("sigterm_from_outside", "[2026-08-22 10:14:03,512] [INFO] [launch.py:346:sigkill_handler] Main process received SIGTERM, "
                        "exiting",
     "[2026-08-22 10:14:03,512] [INFO] [launch.py:351:main] Process 1234 exits successfully."),
    # -- UCX, a second pass -------------------------------------------------------------------------------------------
    ("ucx_netdev_missing", "[1715656364.118587] [gpu-a017:48213:0]     ucp_context.c:1508 UCX  WARN  network device "
                           "'mlx5_4:1' is not available, please use one or more of: 'eno1'(tcp), 'mlx5_0:1'(ib)",
     "[1715656364.118587] [gpu-a017:48213:0]     ucp_context.c:1508 UCX  INFO  network device 'mlx5_0:1' is available"),
    ("ucx_gid", "[1715656364.118587] [gpu-a017:48213:0]       ib_device.c:1433 UCX  ERROR invalid gid[3] on mlx5_0:1",
     "[1715656364.118587] [gpu-a017:48213:0]       ib_device.c:1433 UCX  DEBUG using gid[3] on mlx5_0:1"),
    ("ucx_gdr_off", "[1715656364.118587] [gpu-a017:48213:0]           ib_md.c:1449 UCX  ERROR mlx5_0: Couldn't enable "
                    "GPUDirect RDMA. Please make sure nv_peer_mem, amdgpu plugin, or Intel Xe driver is installed correctly, "
                    "or dmabuf is supported.",
     "[1715656364.118587] [gpu-a017:48213:0]           ib_md.c:1449 UCX  DEBUG mlx5_0: GPUDirect RDMA is enabled"),
    ("ucx_memlock", "[1715656364.118587] [gpu-a017:48213:0]        ib_iface.c:1377 UCX  ERROR mlx5_0: ibv_create_cq(cqe=4096) "
                    "failed: Cannot allocate memory : Please set max locked memory (ulimit -l) to 'unlimited'",
     "[1715656364.118587] [gpu-a017:48213:0]        ib_iface.c:1377 UCX  ERROR mlx5_0: ibv_create_cq(cqe=4096) failed: "
     "Invalid argument"),
    ("ucx_cma_denied", "[1715656364.118587] [gpu-a017:48213:0]          cma_ep.c:85   UCX  ERROR process_vm_readv(pid=39211 "
                       "{0x7f2a3c000000,65536}-->{0x7f9b10000000,65536}) returned -1: Operation not permitted",
     "[1715656364.118587] [gpu-a017:48213:0]          cma_ep.c:85   UCX  ERROR process_vm_readv(pid=39211 "
     "{0x7f2a3c000000,65536}-->{0x7f9b10000000,65536}) returned -1: No such process"),
    ("ucx_ep_error", "[1715656364.118587] [gpu-a017:48213:0]          ucp_ep.c:1661 UCX  ERROR ep 0x7f2a3c008000: error "
                     "'Endpoint timeout' on rc_mlx5/mlx5_0:1 will not be handled since no error callback is installed",
     "[1715656364.118587] [gpu-a017:48213:0]          ucp_ep.c:1661 UCX  DEBUG ep 0x7f2a3c008000: error callback installed"),
    ("ib_async", "[1715656364.118587] [gpu-a017:48213:0]       ib_device.c:530  UCX  ERROR IB Async event on mlx5_0: local "
                 "work queue catastrophic error on QPN 0x1a2b",
     "[1715656364.118587] [gpu-a017:48213:0]       ib_device.c:530  UCX  DEBUG IB events on mlx5_0 are handled"),
    ("nofile", "[1715656364.118587] [gpu-a017:48213:0]            sock.c:47   UCX  ERROR socket create failed: the maximal "
               "number of files that could be opened simultaneously was reached, try to increase the limit",
     "[1715656364.118587] [gpu-a017:48213:0]            sock.c:47   UCX  ERROR socket create failed: Address family not "
     "supported by protocol"),
    # -- transformers, accelerate and TRL --------------------------------------------------------------------------
    ("trl_vllm_server", "ConnectionError: The vLLM server can't be reached at http://10.0.0.5:8000 after 240.0 seconds. "
                        "Make sure the server is running by running `trl vllm-serve`.",
     "INFO:trl.generation.vllm_client:Server is not up yet. Retrying in 2.0 seconds..."),
    ("trl_same_gpu", "RuntimeError: Attempting to use the same CUDA device (UUID: GPU-3b8a9c1e-5d7f-2a40-9e61-0c4f7b2d8e13) "
                     "for multiple distinct roles/ranks within the same communicator.",
     "INFO: vLLM server on CUDA device (UUID: GPU-3b8a9c1e-5d7f-2a40-9e61-0c4f7b2d8e13)"),
    ("parallel_sizes", "RuntimeError: The parallel mesh requires 8 processes, but world_size is 4.",
     "INFO: The parallel mesh uses 8 processes, world_size is 8."),
    ("accelerate_rtx4000", "11/29/2026 06:20:15 - WARNING - accelerate.big_modeling - We've detected an older driver with an "
                           "RTX 4000 series GPU. These drivers have issues with P2P.",
     "11/29/2026 06:20:15 - INFO - accelerate.big_modeling - RTX 4000 series GPU with driver 550.54"),
    # -- torch 2.3+ ---------------------------------------------------------------------------------------------------
    ("watchdog_timeout", "[rank0]:[E1108 10:40:59.900000000 ProcessGroupNCCL.cpp:1803] [PG ID 0 PG GUID 0(default_pg) Rank 0] "
                         "Work timeout is detected by watchdog at work: 5218, last enqueued NCCL work: 5219, last completed "
                         "NCCL work: 5217.",
     # torch 2.7+ says this of an NCCL error too (the real capture of a killed peer, fixtures/logs/nccl-peer-died)
     "[rank0]:[E1124 22:41:27.645376883 ProcessGroupNCCL.cpp:2303] [PG ID 0 PG GUID 0(default_pg) Rank 0]  failure "
     "detected by watchdog at work sequence id: 14 PG status: last enqueued work: 17, last completed work: 13"),
    ("watchdog_timeout", "[rank0]:[E1108 11:00:00.000000000 ProcessGroupNCCL.cpp:742] [Rank 0] Work WorkNCCL(SeqNum=12, "
                         "OpType=BARRIER, NumelIn=1, NumelOut=1, Timeout(ms)=1800000) timed out in blocking wait.",
     "[rank0]:[I1108 11:00:00.000000000 ProcessGroupNCCL.cpp:742] [Rank 0] Work WorkNCCL(SeqNum=12, OpType=BARRIER, "
     "NumelIn=1, NumelOut=1, Timeout(ms)=1800000) completed."),
    ("exit_barrier", "torch.distributed.DistStoreError: Timed out waiting on barrier on rank 0, for key prefix: "
                     "torchelastic/agent/terminal_state (world_size=4, missing_ranks=[rank 2 (node3)], timeout=300)",
     "I1108 10:41:00.123000 1234 torch/distributed/elastic/agent/server/api.py:1000] Done waiting for other agents. "
     "Elapsed: 0.5 seconds"),
    ("device_mesh_world", "RuntimeError: DeviceMesh only support homogeneous hardware, but found 12 ranks and 8 cuda devices!",
     "INFO: DeviceMesh('cuda', [0, 1, 2, 3, 4, 5, 6, 7])"),
    ("worker_unkillable", "E1108 10:41:00.123000 1234 torch/distributed/elastic/multiprocessing/api.py:906] Process 8263 did "
                          "not exit after SIGKILL within 30s; abandoning and continuing teardown.",
     "W1108 10:41:00.123000 1234 torch/distributed/elastic/multiprocessing/api.py:888] Unable to shutdown process 8263 via "
     "Signals.SIGTERM, forcefully exiting via Signals.SIGKILL"),
    ("no_gpu_visible", "[rank0]: AssertionError: Megatron requires CUDA.",
     "[rank0]: > initializing torch distributed ... Megatron requires CUDA 12 or later for TP overlap"),
    # -- HPC fabrics and MPI stacks ---------------------------------------------------------------------------------
    ("hpc_fabric_memlock", "libfabric:48213:1724237823::cxi:mr:cxip_scalable_iomm_init():235<warn> nid001234: "
                           "mlockall(MCL_CURRENT | MCL_FUTURE) failed: -12",
     "libfabric:48213:1724237823::cxi:mr:cxip_scalable_iomm_init():235<info> nid001234: mlockall(MCL_CURRENT | "
     "MCL_FUTURE) done"),
    ("hpc_fabric_memlock", "[node01:mpi_rank_0][cm_qp_conn_create] src/mpid/ch3/channels/mrail/src/gen2/rdma_iba_priv.c:2810: "
                           "Failed to create QP. Error: 12 (Cannot allocate memory)",
     "[node01:mpi_rank_0][cm_qp_conn_create] Failed to create QP. Error: 22 (Invalid argument)"),
    ("hpc_fabric_down", "libfabric:48213:1724237823::cxi:core:cxip_get_if():143<info> nid001234: Interface cxi2 link down.",
     "libfabric:48213:1724237823::cxi:core:cxip_get_if():143<info> nid001234: Interface cxi2 link up."),
    ("hpc_fabric_vni", "libfabric:48213:1724237823::cxi:core:cxip_if_valid_rgroup_vni():228<warn> nid001234: Invalid VNI "
                       "1234 for cxi0 and svc_id 5",
     "libfabric:48213:1724237823::cxi:core:cxip_if_valid_rgroup_vni():228<info> nid001234: VNI 1234 for cxi0 and "
     "svc_id 5"),
    ("mvapich_no_hca", "rdma_open_hca(1365)..........: No active HCAs found on the system!!! (errno 0)",
     "rdma_open_hca(1365)..........: 2 active HCAs found on the system"),
    ("mpich_shm_resize", "MPL_shm_seg_create_and_attach: unable to resize the shared memory object /mpich_shar_tmpXXXX to "
                         "size 33554432 (errno 28)",
     "MPL_shm_seg_create_and_attach: unable to resize the shared memory object /mpich_shar_tmpXXXX to size 33554432 "
     "(errno 22)"),
    ("pmi_both_envs", "MPIR_pmi_init(134): Auto-detection of PMI version failed. Found both env vars PMI_SIZE and "
                      "PMIX_NAMESPACE. There is likely something wrong with the runtime environment! Aborting.",
     "MPIR_pmi_init(134): PMI version auto-detected: PMIx (PMIX_NAMESPACE)"),
    ("hydra_proxy_firewall", "[proxy:0:1@node02] main (proxy/pmip.c:101): unable to connect to server node01 at port 39157 "
                             "(check for firewalls!)",
     "[proxy:0:1@node02] main (proxy/pmip.c:101): connected to server node01 at port 39157"),
    ("device_map_distributed", "ValueError: You can't train a model that has been loaded with `device_map='auto'` in any "
                               "distributed mode. Please rerun your script specifying `--num_processes=1` or by launching "
                               "with `python {{myscript.py}}`.",
     "11/29/2026 06:20:14 - INFO - accelerate.utils.modeling - Loading the model with device_map='auto' on 1 process"),
    # -- SIGBUS as the launchers report it ----------------------------------------------------------------------
    ("sigbus", "[2023-07-20 10:00:00,000] [ERROR] [launch.py:321:sigkill_handler] ['/usr/bin/python', '-u', 'train.py', "
               "'--local_rank=0'] exits with return code = -7",
     "[2023-07-20 10:00:00,000] [ERROR] [launch.py:321:sigkill_handler] ['/usr/bin/python', '-u', 'train.py', "
     "'--local_rank=0'] exits with return code = -9"),
    ("sigbus", "ERROR 2024-05-29 10:12:03,124 manager.py:106] ERROR rank 2 error with exit code -7, check log for detail.",
     "ERROR 2024-05-29 10:12:03,124 manager.py:106] ERROR rank 2 error with exit code -70, check log for detail."),
    # -- Open MPI's signal handler (opal/util/stacktrace.c) ----------------------------------------------------
    ("process_died", "[rtptest1621:405884] *** Process received signal ***",
     "[rtptest1621:405884] *** End of error message ***"),
    # -- MPI / UCX stacks without CUDA support -------------------------------------------------------------------
    ("mpi_no_cuda_support", "The user requested CUDA support with the --mca mpi_cuda_support 1 flag",
     "[node1:1234] mca_common_cuda: CUDA support is enabled (mpi_cuda_support 1)"),
    ("crash_frame_fn", " 1 0x000000000003ea99 ucp_dt_pack()  /opt/ucx-source/src/ucp/dt/dt.c:120",
     "[1715656364.118587] [gpu-a017:48213:0] ucp_worker.c:1783 UCX  INFO  ep_cfg[0]: tag(rc_mlx5/mlx5_0:1) 0x000000000003ea99"),
    ("crash_head", "==== backtrace (tid: 296459) ====", "=== Stack trace of rank 3 (py-spy dump) ==="),
    ("crash_frame", " 3  /opt/tiger/nccl/lib/libnccl.so(+0x120057) [0x7ff1c18c1057]",
     "node1:10:10 [0] NCCL INFO NET/Plugin: Loaded net plugin NCCL RDMA Plugin (v8) from /opt/lib/libnccl-net.so"),
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


def test_a_ranks_own_error_that_stopped_the_job_alone_is_not_a_dead_peer(tmp_path: Path) -> None:
    """A configuration check raised on rank 0 and torchrun stopped the others: nothing in the communication failed,
    so the verdict names the error and says so, rather than asking why a process died."""
    doc = diagnose_lines(
        tmp_path / "train.log",
        "[rank0]: Traceback (most recent call last):",
        "[rank0]:   File \"/workspace/pretrain_gpt.py\", line 241, in <module>",
        "[rank0]: ValueError: num_attention_heads (28) must be a multiple of tensor_model_parallel_size (8).",
        "W0302 10:14:58.120000 140 torch/distributed/elastic/multiprocessing/api.py:897] Sending process 4191 closing "
        "signal SIGTERM",
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ")
    f = next(f for f in doc["findings"] if f["cause"])
    assert (f["code"], f["cause"]) == ("LOG115", "other"), f
    assert "num_attention_heads (28)" in f["title"] and "rank 0" in f["title"]


def test_a_ranks_own_error_that_others_timed_out_on_is_a_dead_peer(tmp_path: Path) -> None:
    """The same error with another rank's watchdog timing out in the collective rank 0 never reached: the others'
    failure follows from rank 0 ending, which LOG060 says."""
    doc = diagnose_lines(
        tmp_path / "train.log",
        "[rank0]: ValueError: checkpoint key lm_head.weight not found in the state dict",
        "[rank1]:[E ProcessGroupNCCL.cpp:563] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=15, "
        "OpType=ALLREDUCE, NumelIn=1048576, NumelOut=1048576, Timeout(ms)=600000) ran for 600055 milliseconds before "
        "timing out.")
    f = next(f for f in doc["findings"] if f["cause"])
    assert (f["code"], f["cause"]) == ("LOG060", "peer_process_died"), f


def test_ranks_missing_from_a_late_timeout_make_a_straggler_not_a_library_hang(tmp_path: Path) -> None:
    """meta-pytorch/torchtune#1165: three of four ranks time out in the same all-gather after 15,000 collectives and
    rank 0 never does (it died saving a checkpoint). A deadlock inside NCCL would hold every rank; the one missing is
    elsewhere."""
    lines = [f"[rank{r}]:[E ProcessGroupNCCL.cpp:563] [Rank {r}] Watchdog caught collective operation timeout: "
             "WorkNCCL(SeqNum=15037, OpType=_ALLGATHER_BASE, NumelIn=131072512, NumelOut=524290048, Timeout(ms)=600000) "
             "ran for 600055 milliseconds before timing out." for r in (3, 1, 2)]
    f = next(f for f in diagnose_lines(tmp_path / "train.log", *lines)["findings"] if f["cause"])
    assert (f["code"], f["cause"]) == ("LOG051", "collective_timeout_straggler"), f
    assert "rank(s) 0 never logged a timeout" in f["title"]


def test_oneccl_errors_are_errors_and_its_time_is_no_rank(tmp_path: Path) -> None:
    """oneCCL tags its failures |CCL_ERROR| after "YYYY:MM:DD-HH:MM:SS:( PID)": an unrecognised failure, quoted, never
    "healthy", and the year is not read as an srun task number."""
    doc = diagnose_lines(tmp_path / "worker.log",
                         "2024:08:21-10:24:26:( 4456) |CCL_ERROR| base_thread.cpp:98 set_cpu_affinity: worker 0 is not "
                         "pinned to CPU 63")
    errs = [f for f in doc["findings"] if f["severity"] == "error"]
    assert [f["code"] for f in errs] == ["LOG080"], doc["findings"]
    assert "2024" not in str(errs[0].get("ranks")) and "rank(s) 2024" not in errs[0]["title"]


@pytest.mark.parametrize(("lines", "code", "cause", "said"), [
    # intel/ipex-llm#11877: oneCCL in a container started without --shm-size could not open libfabric's shm provider.
    (("2024:08:21-10:24:26:( 4456) |CCL_ERROR| atl_ofi_helper.cpp:867 atl_ofi_get_prov_list: fi_getinfo error: ret -61, "
      "providers 0",
      "2024:08:21-10:24:26:( 4456) |CCL_ERROR| atl_ofi_helper.cpp:907 atl_ofi_get_prov_list: can't create providers for "
      "name shm",
      "2024:08:21-10:24:26:( 4456) |CCL_ERROR| atl_ofi.cpp:243 init: can't find suitable provider",
      "failed to initialize ATL"), "ENV030", "shm_too_small", "shared-memory provider"),
    (("2025:03:21-10:15:02:(48213) |CCL_ERROR| atl_ofi_helper.cpp:907 atl_ofi_get_prov_list: can't create providers for "
      "name psm3",
      "RuntimeError: oneCCL: atl_ofi_comm.cpp:276 init_transport: EXCEPTION: failed to initialize ATL"),
     "LOG116", "other", "psm3"),
    (("RuntimeError: oneCCL: ze_event_wait_entry.cpp:32 check_event_status: EXCEPTION: ze error at zeEventQueryStatus, "
      "code: ZE_RESULT_ERROR_DEVICE_LOST",), "LOG037", "hardware_fault", "DEVICE_LOST"),
    (("2025:03:21-10:15:02:(48213) |CCL_ERROR| internal_kvs.cpp:325 fill_local_host_ip: can't find interface ib0 to get "
      "host IP",), "NET001", "wrong_interface", "ib0"),
])
def test_oneccl_messages_mean_what_its_source_says(tmp_path: Path, lines: tuple, code: str, cause: str, said: str) -> None:
    f = _verdict(tmp_path, *lines)
    assert (f["code"], f["cause"]) == (code, cause), f
    assert said in f["title"] + " " + f.get("detail", ""), f


def test_an_xid_45_caused_by_an_earlier_xid_is_that_xids_fault(tmp_path: Path) -> None:
    """Xid 45 alone is the driver tearing down a process's channels (its own fault); newer drivers add which Xid
    caused it, and Xid 79 is the board falling off the bus."""
    f = _verdict(tmp_path, "Mar  3 14:21:07 node17 kernel: NVRM: Xid (PCI:0000:3b:00): 45, pid=48213, name=python, "
                           "Ch 00000008 caused by previous Xid 79")
    assert (f["code"], f["cause"]) == ("LOG037", "hardware_fault"), f
    f = _verdict(tmp_path, "Mar  3 14:21:07 node17 kernel: NVRM: Xid (PCI:0000:3b:00): 45, pid=48213, name=python, "
                           "Ch 00000008")
    assert (f["code"], f["cause"]) == ("LOG081", "other"), f


@pytest.mark.parametrize(("line", "code", "cause"), [
    # EFA never heard from the peer: the security group's self rule, or another availability zone.
    ("ip-172-31-10-5:18234:18234 [0] NCCL WARN NET/OFI Request 0x7f11e80a2c40 (SEND) completed with error: err: 113, "
     "flags: 2056, prov_errno: 15, strerror: Unreachable remote - never received a response", "LOG025",
     "firewall_or_port_blocked"),
    # EFA had the connection and the peer stopped answering: the peer process went away (or its host).
    ("ip-172-31-10-5:18234:18234 [0] NCCL WARN NET/OFI Request 0x7f3c2c0f8a80 (SEND) completed with error: err: 103, "
     "flags: 2056, prov_errno: 4124, strerror: Unresponsive receiver (connection previously established)", "LOG061",
     "peer_process_died"),
    ("Libfabric EFA provider has encountered an internal error: Libfabric error: (103) Connection aborted EFA internal "
     "error: (4126) Unresponsive receiver (reachable by EFA device but handshake failed) Your application will now "
     "abort().", "LOG061", "peer_process_died"),
])
def test_efa_tells_a_peer_never_reached_from_one_that_went_away(tmp_path: Path, line: str, code: str, cause: str) -> None:
    f = _verdict(tmp_path, line)
    assert (f["code"], f["cause"]) == (code, cause), f


def test_a_traceback_cut_at_the_main_process_first_call_site_is_the_barrier(tmp_path: Path) -> None:
    """hiyouga/LlamaFactory#360: rank 0 tokenised alone for 29:55 while another rank waited in main_process_first();
    the posted traceback ends at the `with training_args.main_process_first(...)` call site and contextlib's
    __enter__, before transformers' own frame. A `with` line stands in a traceback only when entering or leaving the
    block raised: the barrier."""
    f = _verdict(tmp_path,
                 "Running tokenizer on dataset:  88%|████████▊ | 383700/433643 [29:55<03:25, 2432.70 examples/s]"
                 "Traceback (most recent call last):",
                 '  File "/workspace/src/llmtuner/dsets/preprocess.py", line 160, in preprocess_dataset',
                 '    with training_args.main_process_first(desc="dataset map pre-processing"):',
                 '  File "/usr/lib/python3.10/contextlib.py", line 135, in __enter__',
                 "    return next(self.gen)")
    assert (f["code"], f["cause"]) == ("LOG051", "collective_timeout_straggler"), f
    assert "main_process_first" in f["title"]
