"""Hypothesis fuzzing of the log parser: random and mutated logs never raise and never hang.

2,100 cases in all (1,500 random byte strings and 600 mutated real logs, whose diagnosis costs more;
a fresh random draw every run), fed straight to the scanner, the classifier and the run-model builder,
then to the diagnosis, so the whole offline path is covered in a few seconds. The long runs are
bench/fuzz_readers.py's.
"""

from __future__ import annotations

import io
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from commdoctor.checks.logs import diagnose
from commdoctor.loaders.logs import RunModel, _Builder
from commdoctor.parsing.lines import clean
from commdoctor.parsing.scan import Scanner, make_prefilter

CORPUS = Path("/work/shared/corpus")
SEEDS = [p.read_bytes() for p in sorted(CORPUS.glob("*/log.txt"))] if CORPUS.is_dir() else []
SEEDS += [
    b"node:1:2 [0] NCCL INFO comm 0x55 rank 0 nranks 2 cudaDev 0 busId 1000 - Init START\n",
    b"[rank1]:[E415 21:17:08.9 ProcessGroupNCCL.cpp:552] [Rank 1] Watchdog caught collective operation timeout: "
    b"WorkNCCL(SeqNum=3, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600001 milliseconds before timing out.\n",
    b"Root Cause (first observed failure):\n  host      : n1\n  rank      : 3 (local_rank: 1)\n  exitcode  : -9 (pid: 12)\n"
    b"  traceback : Signal 9 (SIGKILL) received by PID 12\n",
    b"\tGPU0\tGPU1\nGPU0\t X \tPXB\nGPU1\tPXB\t X \n",
]
PREFILTER = make_prefilter()
FUZZ = settings(max_examples=1500, deadline=None, suppress_health_check=list(HealthCheck), database=None)


def run_all(data: bytes) -> None:
    model = RunModel()
    b = _Builder(model)
    sc = Scanner(PREFILTER, on_transport=lambda ln, raw, key: b.transport("fuzz", ln, raw, key))
    for line_no, raw in sc.scan(io.BytesIO(data), block_size=512):
        text, _ = clean(raw)
        if text is not None and text.strip():
            b.line("fuzz", line_no, text)
    diagnose(model)


@st.composite
def mutated(draw: st.DrawFn) -> bytes:
    seed = bytearray(draw(st.sampled_from(SEEDS)))
    for _ in range(draw(st.integers(0, 8))):
        op = draw(st.integers(0, 3))
        pos = draw(st.integers(0, len(seed)))
        if op == 0:
            seed[pos:pos] = draw(st.binary(max_size=64))
        elif op == 1:
            del seed[pos:pos + draw(st.integers(0, 64))]
        elif op == 2:
            seed[pos:pos] = draw(st.sampled_from([b"\x1b[31m", b"\r", b"\x00", b"\xff\xfe", b"\n" * 3, b" WARN ", b"[rank9]:",
                                                  b"SeqNum=", b"ran for 9 milliseconds before timing out", b"(", b"[", b"x" * 5000]))
        else:
            seed = seed + seed[: draw(st.integers(0, 512))]
    return bytes(seed)


@FUZZ
@given(st.binary(max_size=4096))
def test_random_bytes(data: bytes) -> None:
    run_all(data)


@settings(FUZZ, max_examples=600)
@given(mutated())
def test_mutated_logs(data: bytes) -> None:
    run_all(data)
