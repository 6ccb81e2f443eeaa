"""Public failure threads, round 16 (the development half; its held-out half is scored as a total only).

Readings the earlier rounds lacked: gloo's own stores timing out in a rendezvous ("Wait timeout for key(s)"),
horovodrun's rank prefix, CUDA failing to initialise in a process (not the NVSwitch fabric, whichever NCCL file made
the call), and Python logging's ERROR lines, which are failures even when no rule knows what they say. Each rule row
has a real line from the thread and a near-miss that must not match.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from commdoctor.parsing.lines import classify, raw_level, raw_owner
from logs.test_corpus import diagnose_lines
from logs.test_rule_rows import check_row

HVD = "Tue Jun  9 20:10:40 2020[1]<stderr>:"

ROWS = [
    # (rule id, real line, near-miss)
    # gloo/rendezvous/hash_store.cc (Horovod's HTTP store derives from it), horovod/horovod#2015; a key that was
    # written is no failure.
    # accelerate's verify_operation (huggingface/accelerate utils/operations.py; charent/ChatLM-mini-Chinese#36, where
    # each rank padded only to its own longest sample); its check of a matching call passes silently, so the near-miss
    # is its debug-mode banner.
    ("collective_mismatch", "accelerate.utils.operations.DistributedOperationException: Cannot apply desired operation "
                            "due to shape mismatches. All shapes across devices must be valid.",
     "accelerate.utils.operations.DistributedOperationException: Cannot apply desired operation: the tensor is not on "
     "the right device"),
    ("store_wait_timeout", f"{HVD}  what():  [horovod/common/gloo/http_store.cc:53] [horovod/common/gloo/http_store.cc:53] "
                           "Wait timeout for key(s): 0",
     f"{HVD}[horovod/common/gloo/http_store.cc:40] Set key 0"),
]


@pytest.mark.parametrize("rule, line, near", ROWS, ids=[f"{r[0]}-{i}" for i, r in enumerate(ROWS)])
def test_row_matches_its_line_and_not_the_near_miss(rule: str, line: str, near: str) -> None:
    check_row(rule, line, near)


def _findings(tmp_path: Path, *lines: str) -> list[dict]:
    return diagnose_lines(tmp_path / "job.log", *lines)["findings"]


def test_horovodruns_prefix_names_the_rank() -> None:
    """horovodrun tags each line "[rank]<stream>:", after time.asctime() with --prefix-output-with-timestamp."""
    rec = classify(f"{HVD}terminate called after throwing an instance of 'gloo::IoException'")
    assert (rec.rank, rec.msg) == (1, "terminate called after throwing an instance of 'gloo::IoException'")
    assert raw_owner(b"[3]<stdout>:epoch 1").rank == 3
    assert classify("[1,3]<stderr>:x").rank == 3  # mpirun --tag-output's job,rank form still reads


def test_a_gloo_rendezvous_store_timeout_is_the_ranks_that_did_not_arrive(tmp_path: Path) -> None:
    """horovod/horovod#2015: at 50 nodes the ranks did not all reach the rendezvous in gloo's 30 s; the IoException
    and the abort that follow are its consequences."""
    fs = _findings(tmp_path, f"{HVD}terminate called after throwing an instance of 'gloo::IoException'",
                   f"{HVD}  what():  [horovod/common/gloo/http_store.cc:53] [horovod/common/gloo/http_store.cc:53] "
                   "Wait timeout for key(s): 0",
                   f"{HVD}*** Received signal 6 ***")
    first = next(f for f in fs if f["cause"])
    assert (first["code"], first["cause"]) == ("LOG055", "collective_timeout_straggler")
    assert "keys 0" in first["title"]


def test_cuda_that_cannot_initialise_is_not_the_fabric(tmp_path: Path) -> None:
    """NVIDIA/nccl#1029: 'initialization error' from transport/nvls.cc under a DeepSpeed multi-node launch was the
    launcher not passing the CUDA environment; the fabric's own error is 802 'system not yet initialized'."""
    fs = _findings(tmp_path, "rdma-test-gpu-worker-1:2914:4490 [0] transport/nvls.cc:245 NCCL WARN Cuda failure "
                             "'initialization error'")
    causes = [f["cause"] for f in fs if f["cause"]]
    assert causes[0] == "other" and "fabric_manager_nvls" not in causes
    assert "launcher_misconfig" in causes  # offered as the alternative, with what to export
    fs = _findings(tmp_path, "node1:2914:4490 [0] transport/nvls.cc:245 NCCL WARN Cuda failure 'system not yet initialized'")
    assert next(f for f in fs if f["cause"])["cause"] == "fabric_manager_nvls"


@pytest.mark.parametrize("line", [
    # deepspeed/launcher/launch.py's sigkill_handler, behind pdsh's host prefix
    "worker-1: [2024-05-01 10:00:00,123] [ERROR] [launch.py:325:sigkill_handler] ['/usr/bin/python', '-u', "
    "'train.py', '--local_rank=0'] exits with return code = 1",
    # ray/tune (ray-project/ray#30333)
    "2022-11-15 19:26:36,618\tERROR tune.py:773 -- Trials did not complete: [TorchTrainer_96bfe_00000]",
    "ERROR 04-06 20:46:48 [core.py:238] EngineCore failed to start.",  # vLLM
    "ERROR:root:rank 3 lost its data loader",  # logging's default format
    "2024-05-01 10:00:00,123 - trainer - ERROR - rank 3 lost",
    "2024-05-01 10:00:00.123 | ERROR    | trainer:step:12 - rank 3 lost",  # loguru
    "2024-05-01 10:00:00,123 - trainer - CRITICAL - rank 3 lost",
    # Slurm's commands report their own failures this way
    "srun: error: node-1: task 3: Exited with exit code 1",
    "srun: fatal: SLURM_MEM_PER_CPU, SLURM_MEM_PER_GPU, and SLURM_MEM_PER_NODE are mutually exclusive.",
    "slurmstepd: error: couldn't chdir to `/scratch/run': No such file or directory: going to /tmp instead",
])
def test_a_logged_error_no_rule_reads_is_a_failure_never_healthy(tmp_path: Path, line: str) -> None:
    fs = _findings(tmp_path, line)
    assert [f["code"] for f in fs] == ["LOG080"]
    assert fs[0]["cause"] is None  # quoted, not guessed: a report that something failed, no exception of its own


def test_an_exception_of_the_program_that_no_rule_reads_is_its_own_failure(tmp_path: Path) -> None:
    """cyclomon/UNSB#6: on two GPUs the model's forward raised (the code supported one GPU and batch size 1). No
    communication rule reads the exception and it is in no communication library's words: cause "other", quoted."""
    fs = _findings(tmp_path,
                   '  File "models/sb_model.py", line 184, in forward',
                   "    for t in range(self.time_idx.int().item()+1):",
                   "ValueError: only one element tensors can be converted to Python scalars")
    assert [(f["code"], f["cause"]) for f in fs] == [("LOG080", "other")]
    assert "only one element tensors" in fs[0]["title"] and "the program's own" in fs[0]["detail"]


@pytest.mark.parametrize("line", [
    "RuntimeError: NCCL frobnicated the buffer",  # a communication library's words no row reads: not guessed
    "RuntimeError: ProcessGroupGloo does not support frobnicate",
    "Exception:",  # torch.multiprocessing.spawn's report of a child: the child's error follows on later lines
    "torch.multiprocessing.spawn.ProcessRaisedException: ",
    "slurmstepd: error: task 3 lost",  # an error, but no exception raised
])
def test_an_unread_error_in_a_communication_librarys_words_or_a_report_names_no_cause(tmp_path: Path, line: str) -> None:
    fs = _findings(tmp_path, line)
    assert [(f["code"], f["cause"]) for f in fs] == [("LOG080", None)]


@pytest.mark.parametrize("line", [
    "[2024-05-01 10:00:00,123] [INFO] [launch.py:351:main] Process 1234 exits successfully.",
    "2022-11-15 19:26:36,618\tWARNING tune.py:773 -- Trial TorchTrainer_96bfe_00000 is slow",
    "INFO 04-06 20:46:48 [core.py:238] ERROR handling is set to strict",
    "2024-05-01 10:00:00,123 - trainer - INFO - no ERROR so far",
    "srun: Job step aborted: Waiting up to 32 seconds for job step to finish.",
    "srun: warning: can't honor --ntasks-per-node set to 8 which doesn't match the requested tasks 4",
])
def test_the_same_formats_at_other_levels_are_no_failure(tmp_path: Path, line: str) -> None:
    fs = _findings(tmp_path, line)
    assert not [f for f in fs if f["severity"] != "info"], fs  # at most "nothing recognised" (LOG002), no failure


@pytest.mark.parametrize("line, code, cause", [
    # sgl-project/sglang#4814: SGLang's custom all-reduce on two RTX 4090s
    ("RuntimeError: CUDART error: peer access is not supported between these two devices", "LOG081", "other"),
    # NCCL checks peer access before it uses it: a refusal inside NCCL is the driver contradicting itself
    ("z-pc:909608:910337 [0] transport/p2p.cc:238 NCCL WARN failed to open CUDA IPC handle : 217 peer access is not "
     "supported between these two devices", "LOG039", "p2p_driver_bug"),
])
def test_peer_access_refused_outside_nccl_is_the_caller_not_the_driver(tmp_path: Path, line: str, code: str,
                                                                       cause: str) -> None:
    f = next(f for f in _findings(tmp_path, line) if f["cause"])
    assert (f["code"], f["cause"]) == (code, cause)


@pytest.mark.parametrize("line, level", [
    (b"srun: error: node-1: task 3: Exited with exit code 1", "error"),
    (b"3: slurmstepd: fatal: can't open /dev/nvidia0", "error"),
    (b"2024-05-01 10:00:00,123 - trainer - CRITICAL - rank 3 lost", "error"),
    (b"[1]<stderr>:terminate called after throwing an instance of 'gloo::IoException'", "error"),
    (b"srun: job 5 queued and waiting for resources", "info"),
])
def test_the_tui_and_the_excerpts_grade_these_lines_as_the_reader_does(line: bytes, level: str) -> None:
    """The raw (bytes) level that the log view and the report's excerpts use agrees with what `logs` counts as an error."""
    assert raw_level(line) == level


@pytest.mark.parametrize("line", [b"srun: error: node-1: task 3: Exited with exit code 1",
                                  b"2024-05-01 10:00:00,123 - trainer - CRITICAL - rank 3 lost"])
def test_the_reports_excerpts_keep_these_lines(line: bytes) -> None:
    from commdoctor.render.excerpts import ERROR_PREFILTER, ERROR_RE

    assert ERROR_PREFILTER.search(line) and ERROR_RE.search(line)
