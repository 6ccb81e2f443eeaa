"""Public failure threads, round 53 and its development reading.

Most of round 53 came from issue threads archived whole (post and comments) in other repositories: NVIDIA/nccl,
nccl-tests and ROCm threads of 2025-2026. What they taught, each read from what the message means in its program:

- a process that is late shows it without an error of its own: a data-preparation progress bar still running past
  the process group's timeout, a traceback cut at a barrier, ncclras counts below the others';
- NCCL's own words for settings that reach some ranks only (its socket kinds), transports all refused, NVML missing,
  NIC counts it went on with, and its checks of its own bookkeeping;
- the system under it: an RDMA port with no link, Slingshot without its plugin, a library cut short on disk, the
  driver crashing in NCCL's host cuMem probe, an adapter out of memory keys.

A traceback whose header was cut from a post is still a raise: a rank whose launcher record says "exitcode 1" after
frames of its own program did not end quietly, and what those frames were doing is the place to look.
"""

from __future__ import annotations

from pathlib import Path

from logs.test_corpus import diagnose_file
from logs.test_rule_rows import check_row


def _found(tmp_path: Path, text: str, name: str = "job.log") -> list[dict]:
    p = tmp_path / name
    p.write_text(text)
    return [f for f in diagnose_file(p)["findings"] if f["cause"]]


# huggingface/transformers#17106: run_clm.py under torchrun, the non-main ranks waiting in main_process_first() while
# rank 0 tokenised a large dataset alone; they failed after the 30-minute process-group timeout. The paste starts
# inside the traceback (its header and the exception line were cut) and ends with torchrun's summary.
_MAIN_FIRST = """\
  File "./code/gpt2/run_clm.py", line 414, in main
    with training_args.main_process_first(desc="dataset map tokenization"):
  File "/usr/lib/python3.8/contextlib.py", line 113, in __enter__
  File "./code/gpt2/run_clm.py", line 414, in main
    with training_args.main_process_first(desc="dataset map tokenization"):
  File "/usr/lib/python3.8/contextlib.py", line 113, in __enter__

  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html
Root Cause (first observed failure):
[0]:
  time      : 2022-11-11_07:49:25
  host      : ido-branch-s2n2k-pxvf4
  rank      : 1 (local_rank: 1)
  exitcode  : 1 (pid: 5733)
  error_file: <N/A>
  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html
"""

# The same summary after a rank that printed nothing of its own: sys.exit(1) in the program.
_QUIET = "\n".join(_MAIN_FIRST.splitlines()[7:]) + "\n"


def test_a_rank_failing_in_main_process_first_with_its_traceback_header_cut_waited_for_the_main_process(
        tmp_path: Path) -> None:
    got = _found(tmp_path, _MAIN_FIRST)
    assert (got[0]["code"], got[0]["cause"]) == ("LOG051", "collective_timeout_straggler")
    assert "main_process_first" in got[0]["title"]
    # torchrun's record is what followed the raise, not a rank that ended itself without an error
    died = [f for f in got if f["code"] == "LOG060"]
    assert died and "having logged no error" not in died[0]["title"]


def test_a_rank_with_no_frames_of_its_own_still_ended_itself_quietly(tmp_path: Path) -> None:
    got = _found(tmp_path, _QUIET)
    assert (got[0]["code"], got[0]["cause"]) == ("LOG060", "peer_process_died")
    assert "having logged no error" in got[0]["title"]


def test_the_launchers_own_frames_are_not_a_raise_of_the_rank(tmp_path: Path) -> None:
    # torchrun's ChildFailedError traceback ends every failed run; its frames are torch's run.py / elastic code
    launcher = ('  File "/opt/conda/lib/python3.10/site-packages/torch/distributed/run.py", line 794, in main\n'
                '  File "/opt/conda/lib/python3.10/site-packages/torch/distributed/elastic/multiprocessing/errors/'
                '__init__.py", line 346, in wrapper\n')
    got = _found(tmp_path, launcher + _QUIET)
    assert got[0]["code"] == "LOG060" and "having logged no error" in got[0]["title"]


# hiyouga/LlamaFactory#956: two nodes under DeepSpeed; worker 0 finished tokenising and went on to training, worker 1
# was still tokenising when the other ranks gave up at the 30-minute timeout, in the middle of its bar.
_TOKENISING = """\
[2023-09-18 08:36:08,272] [INFO] [logging.py:96:log_dist] [Rank 0] DeepSpeed info: version=0.10.1, git-hash=unknown, git-branch=unknown
Running tokenizer on dataset: 47%|████████████████████████████████████▊ | 1695000/3634744 [30:09<33:25, 967.30 examples/s]Traceback (most recent call last):
File "/home/Path/liwenju/LLaMA-Efficient-Tuning/src/train_bash.py", line 14, in
main()
File "/home/Path/liwenju/LLaMA-Efficient-Tuning/src/llmtuner/tuner/tune.py", line 26, in run_exp
run_sft(model_args, data_args, training_args, finetuning_args, generating_args, callbacks)
"""


def test_a_data_preparation_bar_past_ten_minutes_when_the_job_failed_is_the_late_process(tmp_path: Path) -> None:
    check_row("prep_bar", _TOKENISING.splitlines()[1],
              # a training bar is the job going on, not data preparation
              "Epoch 1:  47%|████▋     | 470/1000 [30:09<33:25,  1.2it/s, loss=0.31]")
    check_row("prep_bar", "Map (num_proc=16):  12%|█▏        | 1200/10000 [10:41<1:18:02, 1.88 examples/s]",
              "Map (num_proc=16): 100%|██████████| 10000/10000")  # no elapsed time: not a bar that says how long
    got = _found(tmp_path, _TOKENISING)
    assert (got[0]["code"], got[0]["cause"]) == ("LOG051", "collective_timeout_straggler")
    assert "Running tokenizer on dataset" in got[0]["title"] and "30:09" in got[0]["title"]


def test_a_short_or_finished_bar_or_a_lone_process_is_not_read_as_a_wait(tmp_path: Path) -> None:
    lines = _TOKENISING.splitlines()
    short = lines[1].replace("[30:09<", "[03:09<")
    done = lines[1].replace(" 47%|", "100%|")
    for i, bar in enumerate((short, done)):
        got = _found(tmp_path, "\n".join([lines[0], bar] + lines[2:]) + "\n", f"j{i}.log")
        assert all(f["code"] != "LOG051" for f in got), got
    # no rank, launcher or torch.distributed frame: one process that crashed after preparing data for 30 minutes
    got = _found(tmp_path, "\n".join(lines[1:]) + "\n", "alone.log")
    assert all(f["code"] != "LOG051" for f in got), got


# NCCL's RAS documentation, straggler walkthrough (vendored in meta-pytorch/torchcomms, ncclx v2_31 docs/examples/
# 08_ras): `ncclras -v` on an 8-rank, 2-node job whose rank 7 was made to sleep while the others went on launching.
_RAS = """\
#0-0 (78db921d1c117b4a) MISMATCH
  Communicator ranks have different AllReduce operation counts
  7 ranks have launched up to operation 64
  Rank 7 has launched up to operation 60 -- GPU 3 managed by process 1650386 on node node1
"""


def test_ncclras_ranks_behind_the_others_are_late_and_ranks_ahead_called_more(tmp_path: Path) -> None:
    check_row("ras_rank_count", _RAS.splitlines()[3], "  Rank 7 has launched 60 operations")
    check_row("ras_rank_count", "  Rank 2 has not launched any operations -- [process information not found]",
              "  2 ranks have not launched any operations yet, waiting")
    got = _found(tmp_path, _RAS)
    assert (got[0]["code"], got[0]["cause"]) == ("LOG130", "collective_timeout_straggler")
    assert got[0]["ranks"] == [7] and "(60)" in got[0]["title"] and "(64)" in got[0]["title"]
    # the rank named alone is ahead: it issued AllReduces the other seven never did
    ahead = _RAS.replace("operation 60 --", "operation 65 --")
    got = _found(tmp_path, ahead, "ahead.log")
    assert (got[0]["code"], got[0]["cause"]) == ("LOG050", "collective_mismatch")


# NVIDIA/nccl-tests#320: all_reduce_perf on three RTX A6000 fails at set-up with "unhandled system error"; NCCL 2.26.2
# could not load NVML (the file was missing from the loader's path; LD_PRELOAD of the driver's copy fixed it).
_NVML = """\
gpu0301:842624:842624 [0] NCCL INFO NCCL version 2.26.2+cuda12.6
[2025-06-12 16:57:52] gpu0301:842624:842643 [0] misc/nvmlwrap.cc:74 NCCL WARN Failed to open libnvidia-ml.so.1
gpu0301:842624:842643 [0] NCCL INFO misc/nvmlwrap.cc:200 -> 2
gpu0301:842624:842643 [0] NCCL INFO init.cc:355 -> 2
gpu0301: Test NCCL failure common.cu:1119 'unhandled system error (run with NCCL_DEBUG=INFO for details) / '
"""


def test_nccl_unable_to_load_nvml_is_the_missing_driver_library(tmp_path: Path) -> None:
    check_row("nvml_lib_missing", _NVML.splitlines()[1],
              "gpu0301:842624:842643 [0] NCCL INFO Loaded NVML from libnvidia-ml.so.1")
    check_row("lib_missing", "ImportError: libnvidia-ml.so.1: cannot open shared object file: No such file or directory",
              "NVML Shared Library Not Found")
    got = _found(tmp_path, _NVML)
    assert (got[0]["code"], got[0]["cause"]) == ("LOG113", "other")
    assert "libnvidia-ml.so.1" in got[0]["title"] and "ldconfig" in got[0]["detail"]


# ROCm/rccl#1423: RCCL hangs at set-up between two MI300X VMs; one VM's NCCL used 7 HCAs, the other's 8, and `rdma
# link` on the first showed mlx5_7's port coming and going (the maintainers: an unstable link, move to another VM).
_PORT = """\
[3] MI300X-GRN-1:744139:744139 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB [2]mlx5_2:1/IB [3]mlx5_3:1/IB [4]mlx5_4:1/IB [5]mlx5_5:1/IB [6]mlx5_6:1/IB [RO]; OOB eth0:10.10.98.12<0>

link mlx5_7/1 subnet_prefix fe80:0000:0000:0000 lid 3403 sm_lid 1 lmc 0 state DOWN physical_state POLLING

link mlx5_7/1 subnet_prefix fe80:0000:0000:0000 lid 3403 sm_lid 1 lmc 0 state ACTIVE physical_state LINK_UP
"""


def test_an_rdma_port_without_a_physical_link_is_a_hardware_fault(tmp_path: Path) -> None:
    check_row("ib_port_no_link", _PORT.splitlines()[2], _PORT.splitlines()[4])
    check_row("ib_port_no_link", "\t\tPhysical state: Polling", "\t\tPhysical state: LinkUp")
    check_row("ib_port_no_link", "\tphys_state:\t\tDISABLED (3)", "\tphys_state:\t\tLINK_UP (5)")
    got = _found(tmp_path, _PORT)
    assert (got[0]["code"], got[0]["cause"]) == ("LOG037", "hardware_fault")
    assert "mlx5_7/1" in got[0]["title"] and "Polling" in got[0]["title"]


# NVIDIA/nccl-tests#294: `mpirun -np 16 -N 8 all_reduce_perf` over two H100 nodes with a build without MPI=1; each
# process ran alone (nranks 1, bus bandwidth 0) and printed its own rows.
_ALONE = """\
  1073741824     268435456     float     sum      -1   2932.7  366.13    0.00      0     0.31  3448111.19    0.00      0
  1073741824     268435456     float     sum      -1   3015.3  356.09    0.00      0     0.31  3489573.69    0.00      0
  2147483648     536870912     float     sum      -1   8645.7  248.39    0.00      0     0.31  7017920.42    0.00      0
h100-test-rg-1:19570:19570 [0] NCCL INFO comm 0x55ba38f2abd0 rank 0 nranks 1 cudaDev 0 busId 200010 - Destroy COMPLETE
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 0
"""
# NVIDIA/nccl-tests#27: the same with a stale build, two nodes of two GPUs: two summaries and nothing between them.
_TWO_SUMMARIES = """\
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 3.94145
#
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 3.94156
"""
# One job's output: each size once, then one summary; and a second run pasted after it, rows between the summaries.
_ONE_JOB = """\
     1048576        262144     float     sum      -1    41.20   25.45   44.54      0    40.95   25.61   44.81      0
     2097152        524288     float     sum      -1    60.31   34.77   60.85      0    60.02   34.94   61.15      0
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 52.8
"""


def test_nccl_tests_rows_or_summaries_printed_by_each_process_are_a_job_per_process(tmp_path: Path) -> None:
    check_row("nccl_tests_row", _ALONE.splitlines()[0], "# Avg bus bandwidth    : 0")
    for i, text in enumerate((_ALONE, _TWO_SUMMARIES)):
        got = _found(tmp_path, text, f"t{i}.log")
        assert (got[0]["code"], got[0]["cause"]) == ("LOG066", "launcher_misconfig"), got
        assert "job of its own" in got[0]["title"]
    # one size run again and again with -N (each cycle printed, with its bandwidth), then one summary
    cycles = "\n".join([_ONE_JOB.splitlines()[0]] * 3 + _ONE_JOB.splitlines()[2:]) + "\n"
    for i, text in enumerate((_ONE_JOB, _ONE_JOB + _ONE_JOB, cycles)):
        got = _found(tmp_path, text, f"ok{i}.log")
        assert all(f["code"] != "LOG066" for f in got), got


# ROCm/rccl#1026: two HPE Cray nodes of 4 MI250X on Slingshot; RCCL found no plugin and no IB device and used TCP over
# the hsn interfaces, where connections between nodes failed (installing aws-ofi-rccl fixed it). The iommu warning
# every job on those nodes printed is not the cause of connections closed between nodes.
_SLINGSHOT = """\
g1064:11143:11143 [0] NCCL INFO NET/Plugin : No plugin found (librccl-net.so), using internal implementation
g1064:11143:11143 [0] /src/extlibs/rccl/build/src/init.cpp:120 NCCL WARN Missing "amd_iommu=on" from kernel command line which can lead to system instablity or hang!
g1064:11143:11194 [0] NCCL INFO NET/IB : No device found.
g1064:11143:11194 [0] NCCL INFO NET/Socket : Using [0]bond0:10.64.4.21<0> [1]hsn0:10.80.0.205<0> [2]hsn1:10.80.0.154<0>
g1064:11143:11194 [0] NCCL INFO Using network Socket
g1064:11146:11200 [3] /src/extlibs/rccl/build/src/proxy.cpp:1177 NCCL WARN [Proxy Service 3] Failed to execute operation Connect from rank 3, retcode 2
g1064:11146:11197 [3] /src/extlibs/rccl/build/src/misc/socket.cpp:57 NCCL WARN socketProgress: Connection closed by remote peer g1064.hostmgmt2001<57521>
g1064:11146:11197 [3] /src/extlibs/rccl/build/src/proxy.cpp:912 NCCL WARN Proxy Call to rank 3 failed (Connect)
"""


def test_sockets_over_slingshot_nics_without_the_libfabric_plugin_are_named(tmp_path: Path) -> None:
    got = _found(tmp_path, _SLINGSHOT)
    assert (got[0]["code"], got[0]["cause"]) == ("LOG131", "other")
    assert "hsn0, hsn1" in got[0]["title"]
    iommu = [f for f in got if f["code"] == "LOG038"]
    assert not iommu or iommu[0]["severity"] != "error"
    # the same job over the plugin (NET/OFI), or a host whose sockets are ordinary NICs: not this reading
    lines = _SLINGSHOT.splitlines()
    plugin = [lines[0].replace("No plugin found (librccl-net.so), using internal implementation",
                               "Loaded net plugin AWS Libfabric (v8)")] + lines[1:]
    plain = [x.replace("hsn", "eth") for x in lines]
    for i, text in enumerate((plugin, plain)):
        got = _found(tmp_path, "\n".join(text) + "\n", f"n{i}.log")
        assert all(f["code"] != "LOG131" for f in got), got


# NVIDIA/nccl#2418: all_reduce_perf on two RTX PRO 6000 (one node, SHM) dies at 512 KiB with NCCL 2.26.2; the same
# run with NCCL 2.31.2 preloaded passes every size.
_FAULT = """\
      524288        131072     float     sum      -1
Test CUDA failure common.cu:516 'an illegal memory access was encountered'
 .. node pid 4242: Test failure common.cu:731
"""


def test_a_gpu_memory_fault_inside_nccl_tests_is_in_nccls_kernels(tmp_path: Path) -> None:
    got = _found(tmp_path, _FAULT)
    assert (got[0]["code"], got[0]["cause"]) == ("LOG070", "nccl_internal_bug")
    # the same CUDA error in a training program (its own kernels ran too) stays a failed CUDA call
    got = _found(tmp_path, "RuntimeError: CUDA error: an illegal memory access was encountered\n", "train.log")
    assert (got[0]["code"], got[0]["cause"]) == ("LOG081", "other")


# NVIDIA/nccl#2367: a 16-rank job dies of SIGBUS in ncclCommInitRankConfig: the profiler plugin named by
# NCCL_PROFILER_PLUGIN was cut short on disk, and glibc's loader faulted mapping it (the reporter's gdb repro).
_CUT_SHORT = """\
Thread 1 "all_reduce_perf" received signal SIGBUS, Bus error.
memset () at ../sysdeps/x86_64/multiarch/../multiarch/memset-vec-unaligned-erms.S:392
#0  memset ()
#1  0x0000155555523f0f in _dl_map_segments (header=0x1555405f0018, ...) at ./dl-map-segments.h:176
#2  _dl_map_object_from_fd (name="/path/to/trunc_2000.so", ...) at ./elf/dl-load.c:1258
"""


def test_a_sigbus_inside_the_dynamic_loader_is_a_library_cut_short(tmp_path: Path) -> None:
    check_row("dlopen_frame", _CUT_SHORT.splitlines()[4], "#2  _dl_catch_exception (exception=0x7ffd...) at dl-error-skeleton.c:208")
    got = _found(tmp_path, _CUT_SHORT)
    assert (got[0]["code"], got[0]["cause"]) == ("LOG132", "other")
    assert "/path/to/trunc_2000.so" in got[0]["title"]
    # a bus error with no loader under it stays /dev/shm's
    got = _found(tmp_path, "\n".join(_CUT_SHORT.splitlines()[:3]) + "\n", "shm.log")
    assert (got[0]["code"], got[0]["cause"]) == ("ENV030", "shm_too_small")  # LOG030 answers to ENV030


# NVIDIA/nccl-tests#360: two nodes, 16 ranks by mpirun, NCCL_IB_DISABLE=1 exported in the script and not passed with
# -x: the remote ranks used IB, node-0's ranks sockets.
_KINDS = """\
node-0:5109:5177 [0] misc/socket.cc:502 NCCL WARN socketFinalizeAccept: wrong type 4 != 3
node-0:5109:5177 [0] NCCL INFO misc/socket.cc:628 -> 3
node-0:5109:5177 [0] NCCL INFO transport/net_socket.cc:403 -> 3
"""


def test_a_connection_of_the_other_network_kind_is_ranks_on_different_networks(tmp_path: Path) -> None:
    check_row("socket_wrong_type", _KINDS.splitlines()[0], "node-0:5109:5177 [0] NCCL INFO socketFinalizeAccept: type 3 ok")
    got = _found(tmp_path, _KINDS)
    assert (got[0]["code"], got[0]["cause"]) == ("LOG066", "launcher_misconfig")
    assert "different networks" in got[0]["title"]
    nodev = _KINDS + "node-1:6001:6001 [0] NCCL INFO NET/IB : No device found.\n"
    got = _found(tmp_path, nodev, "nodev.log")
    assert (got[0]["code"], got[0]["cause"]) == ("LOG036", "ib_misconfig")


# openucx/ucx#6264: Open MPI + UCX jobs on mlx5 failing after a while with ibv_reg_mr ENOMEM; the kernel's log (Linux
# 6.2 and later name the check mlx5_cmd_out_err) shows the adapter out of memory keys. UCX_IB_RCACHE_MAX_REGIONS=1000
# stopped it.
_MKEY = """\
[1452510.275798] mlx5_core 0000:41:00.0: mlx5_cmd_out_err:800:(pid 0): CREATE_MKEY(0x200) op_mod(0x0) failed, status limits exceeded(0x8), syndrome (0x18af6), err(-12)
[1452510.292202] infiniband mlx5_0: create_mkey_warn:158:(pid 0): async reg mr failed. status -121
"""


def test_an_adapter_out_of_memory_keys_is_the_registration_cache(tmp_path: Path) -> None:
    check_row("hca_limits_exceeded", _MKEY.splitlines()[0],
              "[1452510.275798] mlx5_core 0000:41:00.0: mlx5_cmd_out_err:800:(pid 0): CREATE_MKEY(0x200) op_mod(0x0) "
              "failed, status bad parameter(0x3), syndrome (0x18af6), err(-22)")
    got = _found(tmp_path, _MKEY)
    assert (got[0]["code"], got[0]["cause"]) == ("LOG088", "other")
    assert "CREATE_MKEY" in got[0]["title"] and "UCX_IB_RCACHE_MAX_REGIONS" in got[0]["detail"]


# NVIDIA/nccl#2057: two ranks on one VM, P2P and SHM disabled, both calling ncclSend before ncclRecv outside a group;
# the first send's socket connection got a handle of another step ("family 1"). Grouping the calls fixed it.
_UNPAIRED = """\
VM-16-64-ubuntu:28471:28471 [0] NCCL INFO Channel 01/1 : 0[0] -> 1[1] [send] via NET/Socket/0/Shared
[2026-03-18 11:13:09] VM-16-64-ubuntu:28471:28499 [0] misc/socket.cc:537 NCCL WARN ncclSocketInit: connecting to address  with family 1 is neither AF_INET(2) nor AF_INET6(10)
VM-16-64-ubuntu:28471:28499 [0] NCCL INFO transport/net_socket.cc:399 -> 3
NCCL error a.cu:46: internal error - please report this issue to the NCCL developers
"""


def test_an_unreadable_handle_on_a_point_to_point_channel_of_one_host_is_unpaired_sends(tmp_path: Path) -> None:
    got = _found(tmp_path, _UNPAIRED)
    assert (got[0]["code"], got[0]["cause"]) == ("LOG050", "collective_mismatch")
    assert "ncclGroupStart" in got[0]["detail"]
    # across two hosts (or two NCCL versions) the handle may come from another NCCL: version_mismatch stays first
    two = _UNPAIRED + "node-b:3001:3001 [0] NCCL INFO Channel 01/1 : 1[1] -> 0[0] [send] via NET/Socket/0\n"
    got = _found(tmp_path, two, "two.log")
    assert got[0]["cause"] == "version_mismatch"


# NVIDIA/nccl#2106: a segfault at the first communicator, inside the driver's cuMemCreate under NCCL's probe of host
# cuMem allocations, on servers with NUMA nodes that have no memory; NCCL_CUMEM_HOST_ENABLE=0 avoided it (two users).
_PROBE = """\
> !!!!!!! Segfault encountered !!!!!!!
>   File "<unknown>", line 0, in cuMemCreate
>   File "misc/cudawrap.cc", line 92, in ncclCuMemHostEnable()
>   File "misc/cudawrap.cc", line 298, in ncclCudaLibraryInit()
"""


def test_a_crash_in_the_host_cumem_probe_of_nccl_is_the_driver_under_it(tmp_path: Path) -> None:
    check_row("cumem_host_probe", _PROBE.splitlines()[2], ">   File \"misc/cudawrap.cc\", line 298, in ncclCudaLibraryInit()")
    check_row("crash_head", _PROBE.splitlines()[0], "> Segfaults are rare")
    got = _found(tmp_path, _PROBE)
    assert (got[0]["code"], got[0]["cause"]) == ("LOG081", "other")
    assert "NCCL_CUMEM_HOST_ENABLE=0" in got[0]["detail"]
    # the probe's name in a trace of a job that did not crash is nothing
    quiet = "node:1:1 [0] NCCL INFO misc/cudawrap.cc:92 ncclCuMemHostEnable: host cuMem enabled\n"
    assert all(f["code"] != "LOG081" for f in _found_any(tmp_path, quiet))


def _found_any(tmp_path: Path, text: str) -> list[dict]:
    p = tmp_path / "any.log"
    p.write_text(text)
    return diagnose_file(p)["findings"]


# NCCL 2.30.3 and later go on past mixed NIC counts (NCCL_IGNORE_NET_MISMATCH=1 by default) and say so at INFO only
# (init.cc); NVIDIA/nccl#2428: a second eRDMA device one node could not open, then a silent hang.
_MIXED = """\
nodeB:100:100 [0] NCCL INFO Rank 8 has 1 local Net devices (max 2).
nodeB:100:100 [0] NCCL INFO Detected mixed local Net device counts across ranks (min 1, max 2). Ignoring due to NCCL_IGNORE_NET_MISMATCH.
"""
_TIMEOUT = ("[rank8]:[E1129 10:00:00.000 ProcessGroupNCCL.cpp:632] [Rank 8] Watchdog caught collective operation "
            "timeout: WorkNCCL(SeqNum=1, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600001 "
            "milliseconds before timing out.\n")


def test_mixed_nic_counts_nccl_went_on_with_are_the_hang_and_a_risk_otherwise(tmp_path: Path) -> None:
    check_row("net_counts_ignored", _MIXED.splitlines()[1],
              "nodeB:100:100 [0] NCCL INFO Local CollNet device counts across ranks: min 0 max 0")
    got = _found(tmp_path, _MIXED + _TIMEOUT)
    assert (got[0]["code"], got[0]["cause"], got[0]["severity"]) == ("LOG036", "ib_misconfig", "error")
    assert got[0]["ranks"] == [8] and "NCCL_IGNORE_NET_MISMATCH" in got[0]["detail"]
    alone = _found(tmp_path, _MIXED, "alone.log")
    assert alone[0]["code"] == "LOG036" and alone[0]["severity"] == "warning"
    done = _MIXED + "nodeB:100:100 [0] NCCL INFO comm 0x55 rank 8 nranks 16 cudaDev 0 busId 1000 - Destroy COMPLETE\n"
    assert all(f["code"] != "LOG036" for f in _found(tmp_path, done, "done.log"))


def _job(tmp_path: Path, seqnum: int, hosts: tuple[str, str], nranks: int = 2) -> list[dict]:
    """Two ranks' logs, each with NCCL's set-up and a watchdog timeout in the same collective (torch 2.x wording)."""
    tmp_path.mkdir()
    for r, host in enumerate(hosts):
        addr = "10.0.0.1" if host == hosts[0] else "10.0.0.2"
        p = tmp_path / f"{host}-{r}.log"
        p.write_text(
            f"{host}:100{r}:100{r} [0] NCCL INFO Bootstrap : Using eth0:{addr}<0>\n"
            "NCCL version 2.23.4+cuda12.4\n"
            f"{host}:100{r}:110{r} [0] NCCL INFO comm 0x5555 rank {r} nranks {nranks} cudaDev {r} nvmlDev {r} busId 1000 "
            "commId 0xabc - Init COMPLETE\n"
            f"[rank{r}]:[E1129 10:30:00.000000000 ProcessGroupNCCL.cpp:632] [Rank {r}] Watchdog caught collective "
            f"operation timeout: WorkNCCL(SeqNum={seqnum}, OpType=ALLREDUCE, NumelIn=1048576, NumelOut=1048576, "
            "Timeout(ms)=600000) ran for 600043 milliseconds before timing out.\n")
    return [f for f in diagnose_file(tmp_path)["findings"] if f["cause"]]  # the folder: every rank's file


def test_every_rank_timing_out_in_the_same_collective_is_no_straggler(tmp_path: Path) -> None:
    """The watchdog's own alternative said it: with every rank of the job inside the collective, nobody was late."""
    across = _job(tmp_path / "a", 1, ("nodeA", "nodeB"))
    assert (across[0]["code"], across[0]["cause"]) == ("LOG134", "firewall_or_port_blocked")
    one = _job(tmp_path / "b", 1, ("nodeA", "nodeA"))
    assert (one[0]["code"], one[0]["cause"]) == ("LOG134", "p2p_acs_iommu")
    later = _job(tmp_path / "c", 412, ("nodeA", "nodeB"))
    assert (later[0]["code"], later[0]["cause"]) == ("LOG053", "nccl_internal_bug")
    # two of four ranks: the two that logged nothing are where to look
    some = _job(tmp_path / "d", 1, ("nodeA", "nodeB"), nranks=4)
    assert (some[0]["code"], some[0]["cause"]) == ("LOG051", "collective_timeout_straggler")
