"""Public failure threads, round 12 (fixtures/logs/threads/*/PROVENANCE.md names each thread).

Readings the earlier rounds lacked: Open MPI's CUDA IPC failure with return value 1 (ranks that each see only
their own GPU), a UCX whose transports include no RDMA one at all and NCCL's OFI plugin finding no libfabric
provider (the RDMA stack missing, not misconfigured), glibc's heap-corruption abort in a process that runs NCCL,
and torch's watchdog message wrapped over lines as posts show it. Each rule row has a real line and a near-miss
that must not match; the fixtures run through `commdoctor logs --json`.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from logs import test_threads as round1
from logs.test_corpus import diagnose_file, first_cause
from logs.test_rule_rows import check_row

ROWS = [
    # (rule id, real line, near-miss)
    # Open MPI's help-mpi-common-cuda.txt as posted (open-mpi/ompi#11949); the help text's own memory hint is no value.
    ("ompi_cuda_ipc", "  cuIpcOpenMemHandle return value:  1",
     "for this is not enough free device memory.  Try to reduce the device"),
    # ucp_context.c's warning (openucx/ucx#9610); its device twin names a network device, not transports.
    ("ucx_tls_unavailable", "[1705555968.594314] [c204-009:189455:0]     ucp_context.c:1081 UCX  WARN  transports "
     "'knem','dc_x','rc' are not available, please use one or more of: mm, posix, self, shm, sm, sysv, tcp",
     "[1669031880.738755] [epyc005:588291:0]     ucp_context.c:969  UCX  WARN  network device 'fake_device' is not "
     "available, please use one or more of: 'bond0'(tcp), 'lo'(tcp), 'mlx5_0:1'(ib)"),
    # aws-ofi-nccl (aws/aws-ofi-nccl#1020); the plugin's own "Initializing" INFO line is no failure.
    ("ofi_plugin_no_provider", "[2025-10-16 22:16:08] ip-172-31-3-90:1929:1937 [0] nccl_net_ofi_rdma_init:7978 NCCL WARN "
     "NET/OFI OFI fi_getinfo() call failed: No data available",
     "ip-172-31-3-90:1929:1937 [0] NCCL INFO NET/OFI Initializing aws-ofi-nccl 1.16.0"),
    # glibc's malloc check (NVIDIA/nccl#1611); a program's own message about a corrupted file is not glibc's.
    ("heap_corruption", "free(): corrupted unsorted chunks", "Error: checkpoint file is corrupted, skipping"),
    ("heap_corruption", "double free or corruption (!prev)", "free(): releasing 12 buffers"),
]

FIXTURES = [
    # (slug, first cause, causes that must be among the first three)
    ("ompi-11949-slurm-gpu-binding-cuipcopenmemhandle", "launcher_misconfig", ()),
    ("ucx-9610-frontera-no-usable-transports-spack-build", "other", ("wrong_interface",)),
    ("aws-ofi-nccl-1020-efa-devices-not-in-container", "other", ("ib_misconfig",)),
    ("nccl-1611-gb200-10-nodes-crash-nccl-2-21", "nccl_internal_bug", ()),
    # A hang after 12,590 collectives, the watchdog's message wrapped over three lines.
    ("vllm-42354-dgx-spark-pip-nccl-build-allgather-hang", "nccl_internal_bug", ()),
]


@pytest.mark.parametrize("rule, line, near", ROWS, ids=[f"{r[0]}-{i}" for i, r in enumerate(ROWS)])
def test_row_matches_its_line_and_not_the_near_miss(rule: str, line: str, near: str) -> None:
    check_row(rule, line, near)


@pytest.mark.parametrize("slug, first, top3", FIXTURES, ids=[f[0] for f in FIXTURES])
def test_public_thread_fixture(slug: str, first: str, top3: tuple[str, ...]) -> None:
    round1.check_fixture(slug, first, top3)


def test_ucx_that_has_rdma_transports_but_not_the_ones_asked_is_the_setting(tmp_path: Path) -> None:
    p = tmp_path / "rank0.log"  # rc_verbs exists here: UCX_TLS named variants this build lacks, the stack is there
    p.write_text("[1.0] [n1:1:0] ucp_context.c:1081 UCX  WARN  transports 'rc_mlx5','ud_mlx5' are not available, please "
                 "use one or more of: ib, mm, posix, rc, rc_verbs, self, shm, sm, sysv, tcp, ud, ud_verbs\n"
                 "[1.0] [n1:1:0] ucp_context.c:1345 UCX  ERROR no usable transports/devices (asked rc_mlx5,ud_mlx5 on all "
                 "devices)\n")
    assert first_cause(p) == ("NET001", "wrong_interface")  # LOG021 reported as its live twin


@pytest.mark.parametrize("ret, want", [("2", "cuda_oom"), ("217", "p2p_driver_bug")])
def test_other_cuda_ipc_return_values_are_not_hidden_gpus(tmp_path: Path, ret: str, want: str) -> None:
    p = tmp_path / "rank0.log"
    text = (round1.FIX / "ompi-11949-slurm-gpu-binding-cuipcopenmemhandle" / "log.txt").read_text()
    p.write_text(text.replace("cuIpcOpenMemHandle return value:  1", f"cuIpcOpenMemHandle return value:  {ret}"))
    assert first_cause(p)[1] == want


def test_heap_corruption_without_nccl_in_view_names_no_library(tmp_path: Path) -> None:
    p = tmp_path / "rank0.log"  # nothing says the process ran NCCL: the abort is quoted, no cause is guessed
    p.write_text("free(): corrupted unsorted chunks\n[n1:186363] *** Process received signal ***\n"
                 "[n1:186363] Signal: Aborted (6)\n")
    assert first_cause(p)[1] != "nccl_internal_bug"


def test_a_wrapped_watchdog_message_is_read_as_one(tmp_path: Path) -> None:
    p = tmp_path / "rank1.log"
    p.write_text((round1.FIX / "vllm-42354-dgx-spark-pip-nccl-build-allgather-hang" / "log.txt").read_text())
    doc = diagnose_file(p)
    first = next(f for f in doc["findings"] if f["cause"])
    assert first["code"] == "LOG053" and "SeqNum=12590" in first["title"]


def test_a_cut_work_line_without_its_tail_is_not_a_timeout(tmp_path: Path) -> None:
    p = tmp_path / "rank1.log"  # the same fields cut, with no "Watchdog caught" before and no "ran for" after
    p.write_text("[Rank 1] Some NCCL operations have failed:\n"
                 "WorkNCCL(SeqNum=12590, OpType=_ALLGATHER_BASE, NumelIn=1404928, NumelOut=2809856,\n"
                 "         Timeout(ms)=600000)\n")
    first = next((f for f in diagnose_file(p)["findings"] if f["cause"]), None)
    assert first is None or first["code"] != "LOG053"
