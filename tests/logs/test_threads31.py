"""Public failure threads, round 46 and its development reading.

Lines a library writes only on the path of an error are that error, whatever their level: DDP's reducer logs each
parameter that got no gradient at INFO just before it raises "Expected to have finished reduction in the prior
iteration".
"""

from __future__ import annotations

from pathlib import Path

from logs.test_corpus import diagnose_file
from logs.test_rule_rows import check_row

def _first(tmp_path: Path, text: str, name: str = "job.log") -> dict:
    p = tmp_path / name
    p.write_text(text)
    found = [f for f in diagnose_file(p)["findings"] if f["cause"]]
    assert found, "no finding with a cause"
    return found[0]


# Nixtla/neuralforecast#1110: AutoTFT under DDP on several GPUs, TORCH_DISTRIBUTED_DEBUG on; the terminal wrapped
# each line (kept as posted). The TFT built a static-covariate encoder that never took part in the loss.
_UNUSED = """\
[rank1]:[I816 21:41:23.034545571 reducer.cpp:1989] [Rank 1] Parameter: static_encoder.context_grns.3.glu.lin.bias did not get gradient i
n backwards pass.
[rank1]:[I816 21:41:23.034555851 reducer.cpp:1989] [Rank 1] Parameter: static_encoder.context_grns.3.glu.lin.weight did not get gradient
 in backwards pass.
"""


def test_the_reducers_info_lines_about_parameters_without_gradient_are_the_unused_parameter_error(tmp_path: Path) -> None:
    check_row("ddp_unused_params", _UNUSED.splitlines()[0],
              # reducer.cpp's note under static_graph / find_unused_parameters: a parameter it already knows is unused
              "[rank0]:[I816 21:41:23.03 reducer.cpp:1467] [Rank 0]: Parameter lin.bias at index 3 is marked as unused.")
    check_row("ddp_unused_params",
              "RuntimeError: ... Parameters which did not receive grad for rank 1: static_encoder.context_grns.3.glu.lin.bias",
              "Parameters which received grad for rank 1: lin.bias")
    got = _first(tmp_path, _UNUSED, "rank1.log")
    assert (got["code"], got["cause"]) == ("LOG095", "other")
    assert got["ranks"] == [1] and "static_encoder" in got["evidence"][0]["text"]


# deepspeedai/DeepSpeed#6497: a script started with plain python, DeepSpeed 0.15.2; the host's hostname (GNU inetutils)
# has no -I, which DeepSpeed's MPI discovery runs to find the master address.
_NO_I = """\
[2024-09-05 04:11:37,288] [INFO] [comm.py:667:init_distributed] Not using the DeepSpeed or dist launchers, attempting to detect MPI environment...
hostname: invalid option -- 'I'
Try 'hostname --help' or 'hostname --usage' for more information.
Traceback (most recent call last):
  File "/code/git/learnable-activations/mflow.py", line 384, in run_experiment
    model_engine, optimizer = prepare_deepspeed_model(model, args)
"""


def test_a_hostname_without_the_all_addresses_option_is_named(tmp_path: Path) -> None:
    check_row("hostname_no_I", _NO_I.splitlines()[1], "hostname: invalid option -- 'x'")
    # deepspeedai/DeepSpeed#826: DeepSpeed 0.3.x ran it through subprocess (64: EX_USAGE, the option refused)
    check_row("hostname_no_I",
              "subprocess.CalledProcessError: Command '['hostname -I']' returned non-zero exit status 64.",
              "subprocess.CalledProcessError: Command '['hostname -I']' returned non-zero exit status 1.")
    got = _first(tmp_path, _NO_I, "train.log")
    assert (got["code"], got["cause"]) == ("LOG120", "other")
    assert "MASTER_ADDR" in got["remedy"]["summary"] and "inetutils" in got["detail"]


# pytorch/pytorch#188567: symm_mem.rendezvous with the NCCL backend as the group's first NCCL use (8x H100, NCCL
# 2.29.7); torch's message was wrapped after the file name (kept as posted). init_process_group(device_id=...) fixed it.
_WINDOW = """\
torch.distributed.DistBackendError: NCCL error in: .../torch/csrc/distributed/c10d/symm_mem/NCCLSymmetricMemory.cu:174,
invalid argument (run with NCCL_DEBUG=WARN for details), NCCL version 2.29.7
Failed to window register segment with ptr 0x..., size 20971520 on rank 0
"""


def test_a_refused_symmetric_memory_window_is_the_programs_set_up_of_the_group(tmp_path: Path) -> None:
    check_row("symm_mem_window", _WINDOW.splitlines()[2],
              # NCCL's own INFO line when registration works (NCCL 2.27+)
              "node1:1234:1240 [0] NCCL INFO Registered window segment ptr 0x7f0000000000 size 20971520")
    got = _first(tmp_path, _WINDOW, "rank0.log")
    assert (got["code"], got["cause"]) == ("LOG098", "other")
    assert "device_id" in got["detail"] and "rank 0" in got["title"]


def test_an_exception_naming_a_launchers_variable_as_missing_is_the_launch(tmp_path: Path) -> None:
    """A variable a launcher sets (MASTER_ADDR, RANK, SLURM_PROCID, ...) said to be missing in any stack's words is a
    process started without that launcher (LOG066); a warning that one is unset, or another complaint about one, is
    not."""
    # PaddlePaddle's gloo wrapper (paddle/distributed/parallel.py) and PyTorch-Lightning-style Slurm detection
    line = ("AssertionError: The environment variable 'MASTER_ADDR' and 'MASTER_PORT' must be specified, for example "
            "'export MASTER_ADDR=127.0.0.1' and 'export MASTER_PORT=6170'.")
    check_row("launch_env_missing", line, "UserWarning: MASTER_ADDR not set, using localhost")
    check_row("launch_env_missing", "RuntimeError: SLURM_PROCID not found in environment. Not running inside a SLURM step?",
              "ValueError: MASTER_ADDR 10.0.0.1 is not reachable")
    got = _first(tmp_path, line + "\n")
    assert (got["code"], got["cause"]) == ("LOG066", "launcher_misconfig") and "MASTER_ADDR" in got["title"]


# OLCF's Summit user guide, known issues: CUDA-aware Spectrum MPI with more than one resource set per node.
_PAMI_IPC = """\
[0]Error opening IPC Memhandle from peer:1, invalid argument
CUDA level IPC failure: this has been observed in environments where cgroups separate the visible GPUs between ranks. The option -x PAMI_DISABLE_IPC=1 can be used to disable CUDA level IPC.[:] *** Process received signal ***
"""


def test_gpu_memory_ipc_between_isolated_ranks_is_named_before_the_crash_it_causes(tmp_path: Path) -> None:
    check_row("gpu_ipc_isolated", _PAMI_IPC.splitlines()[0], "[0]Error opening IPC Memhandle from peer:1, out of memory")
    got = _first(tmp_path, _PAMI_IPC)
    assert (got["code"], got["cause"]) == ("LOG121", "other") and "PAMI_DISABLE_IPC" in got["remedy"]["summary"]


# OLCF's Summit user guide: Spectrum MPI's PMIx and a launch-time message over its 16 MB default.
_PMIX = """\
A received msg header indicates a size that is too large:
 Requested size: 25836785
 Size limit: 16777216
If you believe this msg is legitimate, please increase the
max msg size via the ptl_base_max_msg_size parameter.
"""


def test_pmix_refusing_a_large_start_up_message_names_its_limit(tmp_path: Path) -> None:
    check_row("pmix_msg_size", _PMIX.splitlines()[0], "A received msg header indicates a size of 120 bytes")
    got = _first(tmp_path, _PMIX)
    assert (got["code"], got["cause"]) == ("LOG122", "other")
    assert "PMIX_MCA_ptl_base_max_msg_size" in got["remedy"]["summary"]


def test_cray_mpich_asked_for_gpu_support_without_its_gtl_library(tmp_path: Path) -> None:
    # LUMI training materials (May 2023 exercises): a CPU-only program built with craype-accel-host loaded
    line = ("MPICH ERROR [Rank 0] [job id 3605521.0] [Tue May 30 12:41:09 2023] [nid002042] - Abort(-1) (rank 0 in "
            "comm 0): MPIDI_CRAY_init: GPU_SUPPORT_ENABLED is requested, but GTL library is not linked")
    check_row("mpi_no_cuda_support", line, "MPIDI_CRAY_init: GPU_SUPPORT_ENABLED is requested, GTL library linked")
    got = _first(tmp_path, line + "\n")
    assert (got["code"], got["cause"]) == ("LOG119", "other") and "GTL" in got["title"]
    assert "craype-accel" in got["detail"]


# CSCS Alps documentation, NCCL known issues: NCCL_NET_PLUGIN=ofi where the uenv's plugin file has another name.
_NET = """\
nid006365:180142:180163 [0] NCCL INFO NET/Plugin: Could not find: ofi libnccl-net-ofi.so. Using internal network plugin.
nid006365:180142:180163 [0] net.cc:626 NCCL WARN Error: network AWS Libfabric not found.
"""


def test_nccl_net_naming_a_plugins_network_that_was_not_loaded_is_the_plugin_setting(tmp_path: Path) -> None:
    check_row("net_not_found", _NET.splitlines()[1],
              "nid006365:180142:180163 [0] NCCL INFO NET/Plugin: Loaded net plugin AWS Libfabric (v7)")
    check_row("net_plugin_none", _NET.splitlines()[0],
              "nid006365:180142:180163 [0] NCCL INFO NET/Plugin: Loaded net plugin AWS Libfabric (v7)")
    got = _first(tmp_path, _NET)
    assert (got["code"], got["cause"]) == ("LOG123", "other") and "'AWS Libfabric'" in got["title"]
    # NCCL_NET=IB on a node without InfiniBand stays the InfiniBand set-up
    got = _first(tmp_path, "node1:1:2 [0] NCCL WARN Error: network IB not found.\n", "ib.log")
    assert (got["code"], got["cause"]) == ("LOG036", "ib_misconfig")


def test_an_mpi_error_class_names_what_the_call_got_wrong(tmp_path: Path) -> None:
    # Open MPI's fatal handler (OLCF Summit guide: complex datatypes on GPU buffers in IBM's collectives)
    ompi = """\
[h35n05:113506] coll:ibm:allreduce: GPU awareness in PAMI requested. It is not safe to defer to another component.
[h35n05:113506] *** An error occurred in MPI_Allreduce
[h35n05:113506] *** MPI_ERR_UNSUPPORTED_OPERATION: operation not supported
"""
    check_row("mpi_error_class", ompi.splitlines()[2], "[h35n05:113506] *** MPI_ERR_OTHER: known error not in list")
    got = _first(tmp_path, ompi)
    assert (got["code"], got["cause"]) == ("LOG124", "other") and "does not support" in got["title"]
    # MPICH's error stack: a receive smaller than what was sent is the ranks disagreeing on the message
    mpich = ("Fatal error in PMPI_Recv: Message truncated, error stack:\n"
             "PMPI_Recv(200): MPI_Recv(buf=0x7ffd, count=1, MPI_INT, src=0, tag=0, MPI_COMM_WORLD, status=0x1) failed\n")
    check_row("mpi_error_class", mpich.splitlines()[0], "Fatal error in PMPI_Barrier: Other MPI error, error stack:")
    got = _first(tmp_path, mpich, "mpich.log")
    assert (got["code"], got["cause"]) == ("LOG050", "collective_mismatch") and "MPI_Recv" in got["detail"]


def test_cray_mpich_refusing_a_rank_that_spans_numa_nodes_names_the_rank_and_its_binding(tmp_path: Path) -> None:
    # OLCF's PyTorch guide for Frontier, troubleshooting "MPICH mpi4py Errors"
    log = """\
MPICH ERROR: Unable to use a NIC_POLICY of 'NUMA'. Rank 4 is not confined to a single NUMA node.  There are 4 numa_nodes detected (rc=0).
MPICH ERROR [Rank 0] [job id 2853270.0] [Fri Dec 13 13:41:36 2024] [frontier05084] - Abort(2665871) (rank 0 in comm 0): Fatal error in PMPI_Init_thread: Other MPI error, error stack:
MPIDI_CRAY_ofi_get_nic_index(1801)....: OFI invalid value for environment variable
"""
    check_row("mpich_nic_policy", log.splitlines()[0], "MPICH: using a NIC_POLICY of 'NUMA' for rank 4")
    got = _first(tmp_path, log)
    assert (got["code"], got["cause"]) == ("LOG125", "other") and "rank 4" in got["title"]
    assert "--cpu-bind" in got["remedy"]["summary"]


def test_paddles_check_of_the_drivers_cuda_against_its_build_is_the_driver(tmp_path: Path) -> None:
    # paddle/phi/backends/gpu/gpu_resources.cc, the error (driver and cuDNN) and the glog warning (driver alone)
    err = ("ValueError: (InvalidArgument) The installed Paddle is compiled with CUDA12/cuDNN9,but CUDA/cuDNN version in "
           "your machine is CUDA11/cuDNN8. which will cause serious incompatible bug.")
    warn = ("W0529 10:12:03.123456 12345 gpu_resources.cc:196] WARNING: device: 0. The installed Paddle is compiled with "
            "CUDA 12.0, but CUDA runtime version in your machine is 11.8, which may cause serious incompatible bug.")
    check_row("paddle_cuda_older", err, "I0529 10:12:03.123456 12345 gpu_resources.cc:96] The installed Paddle is "
                                        "compiled with CUDA 12.0")
    check_row("paddle_cuda_older", warn, "W0529 gpu_resources.cc:119] Please NOTE: device: 0, GPU Compute Capability: "
                                         "8.0, Driver API Version: 12.2, Runtime API Version: 12.0")
    got = _first(tmp_path, err + "\n")
    assert (got["code"], got["cause"]) == ("LOG032", "driver_cuda_mismatch")


_EFA_OLD_PEER = ("libfabric:18234:1724312345::efa:ep_ctrl:efa_av_reverse_lookup_rdm_conn():109<warn> An incoming packet "
                 "does NOT have connection ID in its header.\n")


def test_libfabric_on_a_peer_of_another_release_is_the_versions_when_the_job_failed(tmp_path: Path) -> None:
    """libfabric's EFA provider names a peer of another release: its zero-copy receive error is a failure; its
    warning that a peer's packets lack a connection ID says the job can go on, so it is a cause only when the job
    failed."""
    zcpy = ("libfabric:18234:1724312345::efa:cq:efa_show_help():109<info> This error is detected locally. Please "
            "consider matching the local and remote libfabric versions, or turning off the zero-copy recv feature by "
            "setting FI_EFA_USE_ZCPY_RX=0 in the environment")
    check_row("efa_libfabric_versions", zcpy, "libfabric:18234::efa:core:efa_device_init():120<info> libfabric 1.22.0")
    got = _first(tmp_path, zcpy + "\n")
    assert (got["code"], got["cause"]) == ("LOG126", "version_mismatch")
    p = tmp_path / "healthy.log"
    p.write_text(_EFA_OLD_PEER + "[rank0] step 100 loss 1.02\n")
    assert [f for f in diagnose_file(p)["findings"] if f["cause"]] == []
    got = _first(tmp_path, _EFA_OLD_PEER + "RuntimeError: NCCL communicator was aborted on rank 3.\n", "failed.log")
    assert (got["code"], got["cause"]) == ("LOG126", "version_mismatch")


def test_process_group_wrappers_shape_check_is_a_collective_mismatch(tmp_path: Path) -> None:
    # pytorch/pytorch docs/source/distributed.md (TORCH_DISTRIBUTED_DEBUG=DETAIL): one rank's tensor has another shape
    log = """\
work = default_pg.allreduce([tensor], opts)
RuntimeError: Error when verifying shape tensors for collective ALLREDUCE on rank 0. This likely indicates that input shapes into the collective are mismatched across ranks. Got shapes:  10
[ torch.LongTensor{1} ]
"""
    check_row("collective_mismatch", log.splitlines()[1],
              "[rank0]:[I1129 ProcessGroupWrapper.cpp:570] verifying shape tensors for collective ALLREDUCE")
    got = _first(tmp_path, log)
    assert (got["code"], got["cause"]) == ("LOG050", "collective_mismatch")


def test_the_flight_recorder_analysers_earlier_wordings_of_a_missing_rank(tmp_path: Path) -> None:
    """fr_trace's report of ranks with no entry for a collective, in the words of torch 2.4 and 2.5-2.6 as well: the
    missing ranks are named (a late rank, or one on another path)."""
    # pytorch/tutorials prototype_source/flight_recorder_tutorial.rst (torchfrtrace's output)
    tut = """\
Not all ranks joining collective 5 at entry 4
group info: 0:default_pg
collective: nccl:all_reduce
missing ranks: {1}
input sizes: [[3, 4]]
"""
    check_row("fr_analysis_missing", tut.splitlines()[0], "All ranks joining collective 5 at entry 4")
    got = _first(tmp_path, tut)
    assert got["code"] == "LOG051" and "rank(s) 1 never called it" in got["title"] and "#5" in got["title"]
    old = ("Not all ranks joining collective for group 0:default_pg collective nccl:all_reduce  Missing ranks are {1, 3}"
           "  [[3, 4]] [[3, 4]] 4 scheduled\n")
    got = _first(tmp_path, old, "old.log")
    assert got["code"] == "LOG051" and "rank(s) 1,3 never called it" in got["title"]
    also = [f["cause"] for f in diagnose_file(tmp_path / "old.log")["findings"] if f["code"] == "LOG090"]
    assert "collective_mismatch" in also  # the other reading: those ranks skipped it


def test_the_remote_shell_not_finding_mpis_daemon_is_named_before_the_runtimes_report(tmp_path: Path) -> None:
    # horovod/horovod docs/troubleshooting.rst, "bash: orted: command not found"
    log = """\
bash: orted: command not found
--------------------------------------------------------------------------
ORTE was unable to reliably start one or more daemons.
This usually is caused by:
"""
    check_row("mpi_daemon_not_found", log.splitlines()[0], "bash: ortedx: command not found")
    check_row("mpi_daemon_not_found", "bash: line 1: /opt/ompi/bin/prted: No such file or directory",
              "[node2:01234] orted: command line: orted -mca ess env")
    got = _first(tmp_path, log)
    assert (got["code"], got["cause"]) == ("LOG063", "other") and "`orted` was not found" in got["title"]


def test_nvidia_smis_fabric_state_in_progress_is_the_fabric_not_ready(tmp_path: Path) -> None:
    # NVIDIA GPU Operator troubleshooting (nvidia-smi -q on an HGX node whose fabric manager has not registered it)
    log = """\
Fabric
     State                             : In Progress
     Status                            : N/A
     CliqueId                          : N/A
"""
    check_row("nvsmi_fabric_state", log.splitlines()[1], "     State                             : Completed")
    got = _first(tmp_path, log)
    assert (got["code"], got["cause"]) == ("LOG033", "fabric_manager_nvls") and "In Progress" in got["detail"]
    # a State line outside the Fabric section is not this
    p = tmp_path / "other.log"
    p.write_text("Scheduler\n    State : In Progress\n")
    assert [f for f in diagnose_file(p)["findings"] if f["cause"]] == []


def test_nccl_1s_invalid_data_type_under_a_program_built_for_nccl_2_is_the_versions(tmp_path: Path) -> None:
    """"invalid data type" is NCCL 1.x's error string (NCCL 2 has no such code). TensorFlow 1.x re-raises an op's error
    as "UnknownError (see above for traceback): ...", which is an exception line like any other."""
    # horovod/horovod docs/troubleshooting.rst, "ncclAllReduce failed: invalid data type" (conda's NCCL 1 loaded)
    line = "UnknownError (see above for traceback): ncclAllReduce failed: invalid data type"
    check_row("nccl1_loaded", line, "UnknownError (see above for traceback): ncclAllReduce failed: invalid argument")
    got = _first(tmp_path, line + "\n")
    assert (got["code"], got["cause"]) == ("LOG040", "version_mismatch") and "NCCL 1.x" in got["title"]
    # the TF1 exception line with a message no rule reads is still a failure, not a healthy run
    got = _first(tmp_path, "UnknownError (see above for traceback): Could not open model.pb\n", "tf.log")
    assert got["code"] == "LOG080"


def test_no_break_spaces_of_a_log_copied_from_a_web_page_read_as_spaces(tmp_path: Path) -> None:
    # pmodels/mpich's FAQ (wiki source): Hydra's report of a rank killed by SIGSEGV, its spaces no-break (U+00A0)
    log = ("=====================================================================================\n"
           "=   BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES\n"
           "=   EXIT CODE: 11\n"
           "APPLICATION TERMINATED WITH THE EXIT STRING: Segmentation fault (signal 11)\n").replace(" ", "\u00a0")
    p = tmp_path / "mpich.log"
    p.write_bytes(log.encode())
    found = [f for f in diagnose_file(p)["findings"] if f["cause"]]
    assert (found[0]["code"], found[0]["cause"]) == ("LOG060", "peer_process_died") and "SIGSEGV" in found[0]["title"]


def test_open_mpis_openib_locked_memory_message_is_read_from_its_first_line(tmp_path: Path) -> None:
    # Open MPI's FAQ (openfabrics, "ib-locked-pages"): the help text wraps after "allocate some"
    log = """\
The OpenIB BTL failed to initialize while trying to allocate some
locked memory.  This typically can indicate that the memlock limits
are set too low.  For most HPC installations, the memlock limits
"""
    check_row("memlock", log.splitlines()[0], "The OpenIB BTL failed to initialize while trying to allocate some CQs")
    got = _first(tmp_path, log)
    assert (got["code"], got["cause"]) == ("LOG035", "rlimit_memlock")


def test_mpis_daemon_missing_a_library_on_another_node_is_the_non_interactive_shells_path(tmp_path: Path) -> None:
    # pmodels/mpich's FAQ: an Intel-compiled MPICH whose runtime path only an interactive shell sets
    line = ("hydra_pmi_proxy: error while loading shared libraries: libimf.so: cannot open shared object file: No such "
            "file or directory")
    check_row("mpi_daemon_not_found", line,
              "python: error while loading shared libraries: libpython3.10.so.1.0: cannot open shared object file")
    got = _first(tmp_path, line + "\n")
    assert (got["code"], got["cause"]) == ("LOG063", "other") and "libimf.so" in got["title"]


def test_open_mpis_rma_sync_error_names_the_call_from_the_line_above(tmp_path: Path) -> None:
    # Open MPI's FAQ (general tuning): the Intel MPI Benchmarks freeing a window inside an open access epoch
    log = """\
[node01.example.com:2228] *** An error occurred in MPI_Win_free
[node01.example.com:2228] *** on win
[node01.example.com:2228] *** MPI_ERR_RMA_SYNC: error while executing rma sync
[node01.example.com:2228] *** MPI_ERRORS_ARE_FATAL (your MPI job will now abort)
"""
    got = _first(tmp_path, log)
    assert (got["code"], got["cause"]) == ("LOG124", "other")
    assert got["title"].startswith("MPI rejected the program's call: MPI_Win_free was called out of")


def test_slurms_munge_rejecting_a_credential_names_clocks_or_keys(tmp_path: Path) -> None:
    # Slurm's FAQ ("clock"): a node whose clock is behind
    log = """\
error: Munge decode failed: Expired credential
ENCODED: Wed May 12 12:34:56 2008
DECODED: Wed May 12 12:01:12 2008
"""
    check_row("slurm_munge", log.splitlines()[0], "debug: Munge decode succeeded")
    got = _first(tmp_path, log)
    assert (got["code"], got["cause"]) == ("LOG127", "other") and "clocks differ" in got["title"]
    got = _first(tmp_path, "slurmd: error: Munge decode failed: Invalid credential\n", "key.log")
    assert "munge keys differ" in got["title"]


def test_open_mpi_1s_signal_handler_report_is_a_crash(tmp_path: Path) -> None:
    # open-mpi.org FAQ (troubleshooting, "libopal-apparent-segv"): the program dereferenced NULL; Open MPI 1.x's handler
    log = """\
Signal:11 info.si_errno:0(Success) si_code:1(SEGV_MAPERR)
Failing at addr:(nil)
[0] func:/opt/ompi/lib/libopen-pal.so.0(opal_backtrace_print+0x2b) [0x2a958de8a7]
*** End of error message ***
"""
    check_row("process_died", log.splitlines()[0], "Signal:11 handler installed")
    got = _first(tmp_path, log)
    assert (got["code"], got["cause"]) == ("LOG060", "peer_process_died")


# bigscience-workshop/bigscience train/tr11-176B-ml/chronicles.md, "2022-04-30 hanging at eval": py-spy of the hung
# BLOOM eval, grouped by stack (consecutive heads share the stack under the last); one process sits in its DataLoader.
_PYSPY = """\
Thread 599212 (active): "MainThread"
Thread 599213 (active): "MainThread"
    broadcast (torch/distributed/distributed_c10d.py:1191)
    _bcast_pipe_scalar (deepspeed/runtime/pipe/engine.py:542)
    eval_batch (deepspeed/runtime/pipe/engine.py:455)

Thread 688514 (idle): "MainThread"
    wait (threading.py:306)
    get (queue.py:179)
    _try_get_data (torch/utils/data/dataloader.py:1011)

Thread 686181 (active): "MainThread"
    all_reduce (torch/distributed/distributed_c10d.py:1316)
    _reduce_outputs (deepspeed/runtime/pipe/engine.py:519)
"""


def test_pasted_py_spy_stacks_name_the_process_outside_every_collective(tmp_path: Path) -> None:
    """py-spy dumps of a hung job pasted in a log: main threads inside torch.distributed calls wait for the one that
    is in none (pipeline groups put the waiting ones in different calls, which is no mismatch by itself)."""
    got = _first(tmp_path, _PYSPY)
    assert (got["code"], got["cause"]) == ("LOG128", "collective_timeout_straggler")
    assert got["title"].startswith("py-spy shows 3 of 4 main threads waiting in broadcast and other calls while 1 is")
    assert 'Thread 688514 (idle): "MainThread"' in got["evidence"][0]["text"]
    # every process inside a call: nothing here says who is late
    p = tmp_path / "all_in.log"
    p.write_text("".join(line + "\n" for line in _PYSPY.splitlines()[:5]))
    assert [f for f in diagnose_file(p)["findings"] if f["code"] == "LOG128"] == []


def test_a_process_in_uninterruptible_sleep_beside_waiting_ranks_is_the_one_they_wait_for(tmp_path: Path) -> None:
    """huggingface/m4-logs tr_141 (leap of faith, try3): rank 0 blocked in the file system (ps state Dl), the others in
    a barrier; py-spy could not attach to it (its own error, not the job's)."""
    log = """\
Thread 280064 (active): "MainThread"
    barrier (torch/distributed/distributed_c10d.py:2784)
    wait_for_everyone (accelerate/utils/other.py:81)

Process 280058: ...
Error: Failed to suspend process
Reason: EPERM: Operation not permitted

USER         PID %CPU %MEM    VSZ   RSS TTY      STAT START   TIME COMMAND
ura81os   280058  117  4.6 17517200480 24494736 ? Dl  00:36 291:14 python
ura81os   280059 87.9  4.4 17508566232 23526964 ? Rl  00:36 217:52 python
"""
    check_row("ps_d_state", log.splitlines()[9], log.splitlines()[10])
    got = _first(tmp_path, log)
    assert (got["code"], got["cause"]) == ("LOG129", "collective_timeout_straggler") and "280058" in got["title"]
    assert all(f["code"] != "LOG080" for f in diagnose_file(tmp_path / "job.log")["findings"])


def test_torchs_desync_report_names_the_lagging_rank_under_the_watchdog_timeout(tmp_path: Path) -> None:
    """stas00/ml-engineering debug/pytorch.md ("diagnosing NCCL collective hangs"): rank 0 called an extra all_reduce;
    the watchdog of rank 0 timed out and TORCH_NCCL_DESYNC_DEBUG's report names rank 1, which the verdict now does."""
    log = """\
[Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=2, OpType=ALLREDUCE, NumelIn=4, NumelOut=4, Timeout(ms)=8000) ran for 8097 milliseconds before timing out.
 - [0] Timeout at collective: ALLREDUCE, #3
 - To our best knowledge, the lagging/dead/mismatched ranks that caused the desync are:
     [1] finished collective #2, but didn't join collective #3 (count from 1)
"""
    check_row("desync_lagging", log.splitlines()[3], " - [0] Timeout at collective: ALLREDUCE, #3")
    got = _first(tmp_path, log)
    assert got["code"] == "LOG051" and "rank 1 finished collective #2 but never joined #3" in got["title"]
    assert 1 in got["ranks"]
    got = _first(tmp_path, log.replace("[1] finished collective #2, but didn't join collective #3",
                                       "[1, 3] joined but didn't finish collective #3"), "mid.log")
    assert "rank 1,3 joined collective #3 but never finished it" in got["title"]


def test_torchfts_lighthouse_losing_a_replicas_heartbeat_is_that_replica_gone(tmp_path: Path) -> None:
    # pytorch/torchft examples/ddp_proactive/README.md (at f5ee704): replica group 0 exits; the lighthouse notices
    log = """\
2025-05-22T11:47:49.435 [INFO] [torchft::lighthouse] - Replica train_ddp_0:782b3df7-ac82-4d1c-9c95-ff05b4c2ddb6 timed out (last heartbeat: Instant { tv_sec: 5334992, tv_nsec: 45173926 }), sending failure notification.
2025-05-22T11:47:49.435 [INFO] [torchft::lighthouse] - New failure detected, resetting all participants for quorum formation.
"""
    check_row("torchft_heartbeat_lost", log.splitlines()[0],
              "2025-05-22T11:47:49.435 [INFO] [torchft::lighthouse] - Replica train_ddp_0 sent heartbeat")
    got = _first(tmp_path, log)
    assert (got["code"], got["cause"]) == ("LOG060", "peer_process_died") and "train_ddp_0 stopped" in got["title"]
