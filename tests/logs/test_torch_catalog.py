"""torch's own distributed error messages that no rule read, taken from torch's source (the Python files of
torch.distributed and torch.multiprocessing, and the strings of the c10d library), each with a near-miss that
must not match; and a launcher's report of a failed worker with nothing else, which is a failure, never healthy.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from logs.test_corpus import diagnose_lines
from logs.test_rule_rows import check_row

ROWS = [
    # (rule id, line, near-miss)
    # ProcessGroupNCCL.cpp's input check; the gloo group's CPU collective is no error.
    ("tensor_not_cuda", "RuntimeError: Tensors must be CUDA and dense",
     "RuntimeError: Tensors must be contiguous"),
    # TCPStore.cpp (torch 2.4 on); torch's note that it uses libuv is no failure.
    ("libuv_missing", "torch.distributed.DistStoreError: use_libuv was requested but PyTorch was built without libuv "
                      "support, run with USE_LIBUV=0 to disable it.",
     "[I1128 10:00:00.000 TCPStore.cpp:312] [c10d - debug] The server has started on port = 29500. use_libuv = 1"),
    # distributed_c10d.py, both wordings; the call that creates the group is no failure.
    ("pg_not_initialized", "ValueError: Default process group has not been initialized, please make sure to call "
                           "init_process_group.",
     "[I1128 10:00:00.000 distributed_c10d.py:1234] Rank 0: Completed store-based barrier for key:store_based_barrier_key:1"),
    ("pg_not_initialized", "AssertionError: Default process group is not initialized",
     "RuntimeError: Process group is not initialized on rank 3 for group 'tp'"),
    # ProcessGroupNCCL's constructor; a job that sees its GPUs prints their count.
    ("no_gpu_visible", "RuntimeError: ProcessGroupNCCL is only supported with GPUs, no GPUs found!",
     "[rank0]: NCCL version 2.21.5+cuda12.4 found 8 GPUs"),
    # reducer.cpp; DDP's own note that find_unused_parameters costs time is no failure.
    ("ddp_unused_params", "RuntimeError: Expected to have finished reduction in the prior iteration before starting a "
                          "new one. This error indicates that your module has parameters that were not used in "
                          "producing loss.",
     "[W reducer.cpp:1300] Warning: find_unused_parameters=True was specified in DDP constructor, but did not find any "
     "unused parameters in the forward pass."),
    # torch/multiprocessing/spawn.py; a process that exited with a status is another report.
    ("spawn_signal", "torch.multiprocessing.spawn.ProcessExitedException: process 1 terminated with signal SIGKILL",
     "torch.multiprocessing.spawn.ProcessExitedException: process 1 terminated with exit code 1"),
    # torch/cuda/__init__.py; setting the start method is what fixes it.
    ("cuda_forked", "RuntimeError: Cannot re-initialize CUDA in forked subprocess. To use CUDA with multiprocessing, "
                    "you must use the 'spawn' start method",
     "INFO 11-28 10:00:00 multiproc_worker_utils.py:215 Worker ready; awaiting tasks"),
    # torch 1.x TCPStore.cpp; a store that connected says so.
    ("store_connect_timeout", "RuntimeError: connect() timed out. Original timeout was 1800000 ms.",
     "RuntimeError: Timed out initializing process group in store based barrier on rank: 1"),
    # torch 1.x's echo of ncclInternalError; an invalid-usage echo is another class.
    ("nccl_error_class", "RuntimeError: NCCL Error 3: internal error",
     "RuntimeError: NCCL Error 5: invalid usage"),
    # gloo's pair.cc (sync mode) and context.cc; gloo's connect timeout is another row.
    ("gloo_io_timeout", "RuntimeError: [/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:781] Read timeout "
                        "[10.0.0.2]:19813",
     "RuntimeError: [/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:144] Connect timeout [10.0.0.2]:19813"),
    ("gloo_rank_size", "RuntimeError: [enforce fail at /pytorch/third_party/gloo/gloo/context.cc:27] rank < size. 2 vs 2",
     "RuntimeError: [enforce fail at ../third_party/gloo/gloo/allreduce.cc:123] opts.elements > 0."),
    # ProcessGroupNCCL's heartbeat monitor ending the process; its flight-recorder dump note is no failure of its own.
    ("watchdog_timeout", "[rank3]:[F1128 10:00:00.000000 1234 ProcessGroupNCCL.cpp:1306] [PG ID 0 PG GUID 0(default_pg) "
                         "Rank 3] Terminating the process after attempting to dump debug info, due to ProcessGroupNCCL "
                         "watchdog hang.",
     "[rank0]:[E1128 ProcessGroupNCCL.cpp:1595] [PG ID 0 PG GUID 0(default_pg) Rank 0] Observed flight recorder dump "
     "signal from another rank via TCPStore."),
    # pdsh (DeepSpeed's runner) and subprocess.CalledProcessError; a child's own exit status is another report.
    ("pdsh_ssh_failed", "pdsh@node-0: node-1: ssh exited with exit code 255",
     "pdsh@node-0: node-1: ssh exited with exit code 1"),
    ("subprocess_signal", "subprocess.CalledProcessError: Command '['/usr/bin/python', 'train.py']' died with "
                          "<Signals.SIGKILL: 9>.",
     "subprocess.CalledProcessError: Command '['/usr/bin/python', 'train.py']' returned non-zero exit status 1."),
    # NCCLUtils.hpp C10D_CHECK_TIMEOUT: a non-blocking NCCL set-up still in progress at the timeout; a timeout setting
    # printed at start is none.
    ("nccl_nonblocking_timeout", "torch.distributed.DistBackendError: NCCL timeout in: "
                                 "/pytorch/torch/csrc/distributed/c10d/NCCLUtils.cpp:412",
     "[I1108 10:00:00.000 ProcessGroupNCCL.cpp:900] NCCL timeout in ms: 600000"),
    # ProcessGroupNCCL's error propagation (2.7 on): another rank's error, named by its rank.
    ("nccl_remote_error_rank", "[rank5]:[E1108 10:41:02.000000000 ProcessGroupNCCL.cpp:2190] [PG ID 2 PG GUID 5 Rank 5]  "
                               "remote error detected from rank: 1",
     "[rank5]:[I1108 10:41:02.000000000 ProcessGroupNCCL.cpp:1000] [PG ID 2 PG GUID 5 Rank 5] TORCH_NCCL_PROPAGATE_ERROR: 1"),
    # The flight recorder's analyser (flight_recorder/components/utils.py): ranks that sent something else, or all_to_all
    # sizes that do not add up; a state mismatch (completed here, scheduled there) is no different call.
    ("fr_analysis_mismatch", "error msg: Culprit rank 2; Error type: SIZE_OR_SYNTAX_MISMATCH, Expected input sizes: "
                             "'[[1024]]' does not match found input sizes: '[[2048]]'",
     "error msg: Culprit rank 2; Error type: COLLECTIVE_STATE_MISMATCH, Expected state: 'completed' does not match "
     "found state: 'scheduled'"),
    ("fr_analysis_mismatch", "Input/output mismatch in the collective sequence number: 97",
     "No errors found for this collective entry, There could be some other reasons why we see collective timeout."),
    ("fr_analysis_missing", "Not all ranks joining collective, sequence number: 5218",
     "Collective sequence number: 5218 has errors"),
]


@pytest.mark.parametrize("rule, line, near", ROWS, ids=[f"{r[0]}-{i}" for i, r in enumerate(ROWS)])
def test_row_matches_its_line_and_not_the_near_miss(rule: str, line: str, near: str) -> None:
    check_row(rule, line, near)


@pytest.mark.parametrize("line, code, cause", [
    (ROWS[1][1], "LOG093", "other"),
    (ROWS[2][1], "LOG094", "launcher_misconfig"),
    (ROWS[5][1], "LOG095", "other"),
    (ROWS[6][1], "LOG060", "peer_process_died"),
    (ROWS[7][1], "LOG096", "other"),
], ids=["libuv", "no-default-group", "ddp-unused", "spawn-sigkill", "cuda-fork"])
def test_what_the_user_sees(tmp_path: Path, line: str, code: str, cause: str) -> None:
    f = diagnose_lines(tmp_path / "train.log", line)["findings"][0]
    assert (f["code"], f["cause"]) == (code, cause)
    assert f["remedy"]["summary"]


def test_a_failed_worker_with_no_error_of_its_own_is_not_healthy(tmp_path: Path) -> None:
    """torchrun's report of a worker's exit status, without the worker's traceback: an unrecognised failure that
    quotes the report, with no cause guessed."""
    doc = diagnose_lines(tmp_path / "launcher.log", "ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: "
                         "1) local_rank: 0 (pid: 28) of binary: /opt/conda/bin/python")
    f = doc["findings"][0]
    assert f["code"] == "LOG080" and f["cause"] is None
    assert "exitcode: 1" in f["title"]
    assert doc["outcome"] == "errors"


@pytest.mark.parametrize("local, code, cause", [
    ("localhost", "LOG061", "peer_process_died"),  # both ends on this host: the address worked, the peer went away
    ("node-2", "LOG013", "hostname_resolution"),  # another host dialled a loopback address
])
def test_a_store_socket_within_one_host_is_not_a_loopback_address(tmp_path: Path, local: str, code: str, cause: str) -> None:
    """torch's TCPStore prints both ends of an established socket when a send fails; loopback at both ends is one
    host talking to itself (a single-node job), not a peer advertising loopback."""
    line = (f"[E1124 10:00:00.000000000 TCPStore.cpp:1000] [c10d] sendBytes failed on SocketImpl(fd=3, addr=[{local}]:"
            "51234, remote=[localhost]:29500): Broken pipe")
    f = next(f for f in diagnose_lines(tmp_path / "train.log", line)["findings"] if f["cause"])
    assert (f["code"], f["cause"]) == (code, cause)


def test_a_remote_error_names_the_rank_and_follows_its_own_error(tmp_path: Path) -> None:
    """Alone, the propagated error says which rank failed first; beside that rank's own error, it is the echo."""
    alone = "[rank5]:[E1108 10:41:02.000000000 ProcessGroupNCCL.cpp:2190] [PG ID 2 PG GUID 5 Rank 5]  remote error detected from rank: 1"
    f = next(f for f in diagnose_lines(tmp_path / "a.log", alone)["findings"] if f["cause"])
    assert (f["code"], f["cause"]) == ("LOG060", "peer_process_died") and "rank 1 failed first" in f["title"]
    own = ("[rank1]:[E1108 10:41:00.000000000 ProcessGroupNCCL.cpp:1600] [PG ID 2 PG GUID 5 Rank 1] Process group watchdog "
           "thread terminated with exception: CUDA error: out of memory")
    f = next(f for f in diagnose_lines(tmp_path / "b.log", own, alone)["findings"] if f["cause"])
    assert f["cause"] == "cuda_oom"


def test_the_flight_recorder_analysers_missing_ranks_are_named(tmp_path: Path) -> None:
    lines = ("Not all ranks joining collective, sequence number: 5218", "internal record id: 5217",
             "group info: 0:default_pg", "collective: nccl:all_reduce", "missing ranks: {3, 5}")
    f = next(f for f in diagnose_lines(tmp_path / "a.log", *lines)["findings"] if f["cause"])
    assert f["cause"] == "collective_timeout_straggler" and "rank(s) 3,5 never called it" in f["title"]
