"""Public failure threads, rounds 22-23.

A DMA-BUF registration that ran out of memory (not the locked-memory limit); ranks whose last collectives, as
ProcessGroupWrapper traced them under TORCH_DISTRIBUTED_DEBUG=DETAIL, are not the same one where the log stops; a rank
that failed waiting for the main process in main_process_first(); and CUDA's "stub library" error from NCCL's own
compatibility layer.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from logs.test_corpus import diagnose_file
from logs.test_rule_rows import check_row

_DMABUF = ("[2025-06-16 17:17:39] kilo:318:3584 [5] misc/ibvwrap.cc:183 NCCL WARN Call to ibv_reg_dmabuf_mr failed with "
           "error Cannot allocate memory")
_MAIN_FIRST = ('File "/mnt/data/envs/chatglm_etuning/lib/python3.9/site-packages/transformers/training_args.py", line '
               '1891, in main_process_first')
ROWS = [
    # (rule id, real line, near-miss)
    # a frame inside transformers' main_process_first (hiyouga/ChatGLM-Efficient-Tuning#137); the code line calling
    # it is in the caller's frame, not a rank waiting inside it
    ("main_first_frame", _MAIN_FIRST, '    with training_args.main_process_first(desc="dataset map pre-processing"):'),
    # misc/ibvwrap.cc (vllm-project/vllm#19613: an oversized NCCL_BUFFSIZE); ibv_reg_mr's ENOMEM is the memlock limit
    ("ib_reg_dmabuf_nomem", _DMABUF, "h:1:2 [0] misc/ibvwrap.cc:180 NCCL WARN Call to ibv_reg_mr failed with error Cannot "
                                     "allocate memory"),
]


@pytest.mark.parametrize("rule, line, near", ROWS, ids=[f"{r[0]}-{i}" for i, r in enumerate(ROWS)])
def test_row_matches_its_line_and_not_the_near_miss(rule: str, line: str, near: str) -> None:
    check_row(rule, line, near)


def _found(tmp_path: Path, text: str) -> list[tuple[str, str]]:
    p = tmp_path / "job.log"
    p.write_text(text)
    return [(f["code"], f["cause"]) for f in diagnose_file(p)["findings"] if f["cause"]]


def test_dmabuf_registration_out_of_memory_is_not_the_memlock_limit(tmp_path: Path) -> None:
    tail = ("\nERROR 06-13 07:35:59 [core.py:517] cupy_backends.cuda.libs.nccl.NcclError: NCCL_ERROR_SYSTEM_ERROR: "
            "unhandled system error (run with NCCL_DEBUG=INFO for details)\n")
    assert _found(tmp_path, _DMABUF + tail) == [("LOG102", "other")]
    # registering pinned host pages (ibv_reg_mr) is charged to RLIMIT_MEMLOCK: that ENOMEM stays the limit's
    near = next(r[2] for r in ROWS if r[0] == "ib_reg_dmabuf_nomem")
    assert _found(tmp_path, near + tail)[0][1] == "rlimit_memlock"


def _fp(rank: int, seq: int, op: str = "ALLREDUCE", shape: str = "[4]", dtype: str = "Float") -> str:
    return (f"[I ProcessGroupWrapper.cpp:562] [Rank {rank}] Running collective: CollectiveFingerPrint(SequenceNumber="
            f"{seq}, OpType={op}, TensorShape={shape}, TensorDtypes={dtype}, TensorDeviceTypes=TensorOptions(dtype=float "
            "(default), device=cuda, layout=Strided (default), requires_grad=false (default), pinned_memory=false "
            "(default), memory_format=(nullopt)))\n")


def test_ranks_last_traced_at_different_collectives_are_a_mismatch(tmp_path: Path) -> None:
    # Lightning-AI/pytorch-lightning#19106 as posted: the last trace of each of three ranks
    posted = _fp(1, 3, "BROADCAST", "[1]", "Long") + _fp(0, 4, "BROADCAST", "[73]", "Byte") + \
        _fp(2, 4, "BROADCAST", "[73]", "Byte")
    assert _found(tmp_path, posted) == [("LOG050", "collective_mismatch"), ("LOG090", "collective_timeout_straggler")]
    p = tmp_path / "job.log"
    detail = next(f for f in diagnose_file(p)["findings"] if f["code"] == "LOG050")["detail"]
    assert "rank 1 at #3 OpType=BROADCAST, TensorShape=[1]" in detail and "ranks 0, 2 at #4" in detail
    # one collective number traced differently on two ranks: the ranks issued different collectives, no alternative
    assert _found(tmp_path, _fp(0, 1) + _fp(1, 1) + _fp(0, 2) + _fp(1, 2, "BROADCAST")) == \
        [("LOG050", "collective_mismatch")]


def test_ranks_in_step_or_only_behind_are_no_mismatch(tmp_path: Path) -> None:
    # a running job's log: rank 1 has not traced #3 yet, and the #2 it is at is rank 0's #2
    assert _found(tmp_path, _fp(0, 1) + _fp(1, 1) + _fp(0, 2) + _fp(1, 2) + _fp(0, 3)) == []
    assert _found(tmp_path, _fp(0, 5) + _fp(1, 5)) == []
    # the job's end says it finished, whatever was traced last
    assert _found(tmp_path, _fp(1, 3) + _fp(0, 4) + "h:1:2 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 busId "
                                                   "1000 - Destroy COMPLETE\n") == []


def test_a_rank_failing_inside_main_process_first_waited_for_the_main_process(tmp_path: Path) -> None:
    # ChatGLM-Efficient-Tuning#137 as stored: the progress bar ran into the traceback's header, whose exception line is cut
    posted = ("Running tokenizer on dataset: 47%|███████▊ | 3169000/6811963 [30:11<38:27, 1578.58 examples/s]Traceback "
              "(most recent call last):\n"
              'File "/job/src/train_sft.py", line 25, in main\n'
              'dataset = preprocess_data(dataset, tokenizer, data_args, training_args, stage="sft")\n'
              'File "/job/src/utils/common.py", line 506, in preprocess_data\n'
              'with training_args.main_process_first(desc="dataset map pre-processing"):\n' + _MAIN_FIRST + "\n"
              "torch.distributed.barrier()\n")
    assert _found(tmp_path, posted) == [("LOG051", "collective_timeout_straggler"), ("LOG090", "peer_process_died")]
    # the main process's own failure during the preparation is the cause, not the wait
    oom = "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
    assert _found(tmp_path, posted + oom)[0][1] != "collective_timeout_straggler"


_STUB = "mcmurdo:165440:165448 [0] init.cc:252 NCCL WARN Cuda failure 'CUDA driver is a stub library'\n"


def test_ncclS_stub_library_error_is_its_compatibility_layer_from_2_12(tmp_path: Path) -> None:
    # NVIDIA/nccl#658: NCCL 2.12.7 built with a shared CUDA runtime, the real driver loaded
    assert _found(tmp_path, "NCCL version 2.12.7+cuda11.4\n" + _STUB)[:1] == [("LOG070", "nccl_internal_bug")]
    # before 2.12 there was no such layer: the process loaded the toolkit's stub libcuda.so
    assert _found(tmp_path, "NCCL version 2.11.4+cuda11.4\n" + _STUB) == [("LOG081", "other")]
    assert _found(tmp_path, "RuntimeError: CUDA error: CUDA driver is a stub library\n") == [("LOG081", "other")]
