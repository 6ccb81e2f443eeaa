"""Public failure threads, round 22.

A DMA-BUF registration that ran out of memory (not the locked-memory limit), and ranks whose last collectives, as
ProcessGroupWrapper traced them under TORCH_DISTRIBUTED_DEBUG=DETAIL, are not the same one where the log stops.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from logs.test_corpus import diagnose_file
from logs.test_rule_rows import check_row

_DMABUF = ("[2025-06-16 17:17:39] kilo:318:3584 [5] misc/ibvwrap.cc:183 NCCL WARN Call to ibv_reg_dmabuf_mr failed with "
           "error Cannot allocate memory")
ROWS = [
    # (rule id, real line, near-miss)
    # misc/ibvwrap.cc (vllm-project/vllm#19613: an oversized NCCL_BUFFSIZE); ibv_reg_mr's ENOMEM is the memlock limit
    ("ib_reg_dmabuf_nomem", _DMABUF,
     "h:1:2 [0] misc/ibvwrap.cc:180 NCCL WARN Call to ibv_reg_mr failed with error Cannot allocate memory"),
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
    assert _found(tmp_path, ROWS[0][2] + tail)[0][1] == "rlimit_memlock"


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
