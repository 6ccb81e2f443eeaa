"""Public failure threads, round 11 (fixtures/logs/threads/*/PROVENANCE.md names each thread).

Two readings the earlier rounds lacked: NCCL's own error trace ("bootstrap.cc:270 -> 2", NCCLCHECK's INFO line on
every frame a failed result passes) standing for the bootstrap's failed socket when the WARN line and torch's
exception were not posted, and mlx5_core's "status limits exceeded" in dmesg: the RDMA adapter out of one of its own
resources, which ibv_open_device reports as ENOMEM although the locked-memory limit has nothing to do with it.
Each rule row has a real line and a near-miss that must not match; the fixtures run through `commdoctor logs --json`.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from logs import test_threads as round1
from logs.test_corpus import diagnose_file
from logs.test_rule_rows import check_row

ROWS = [
    # (rule id, real line, near-miss)
    # include/checks.h NCCLCHECK trace through bootstrap.cc with ncclSystemError (NVIDIA/nccl#1000); a trace with
    # ncclInternalError (3) is a check inside NCCL, not a socket.
    ("nccl_bootstrap_chain", "dso-s1-r1-a100-03:2330:2658 [2] NCCL INFO bootstrap.cc:270 -> 2",
     "dso-s1-r1-a100-03:2330:2658 [2] NCCL INFO bootstrap.cc:270 -> 3"),
    # mlx5_core cmd.c mlx5_cmd_check (openucx/ucx#6049); a command the firmware refused for a bad parameter is not a limit.
    ("hca_limits_exceeded", "[2605244.823409] mlx5_core 0000:61:00.0: mlx5_cmd_check:795:(pid 53945): ALLOC_UAR(0x802) "
     "op_mod(0x0) failed, status limits exceeded(0x8), syndrome (0x5a7939)",
     "[2605244.823409] mlx5_core 0000:61:00.0: mlx5_cmd_check:795:(pid 53945): CREATE_QP(0x500) op_mod(0x0) failed, "
     "status bad parameter(0x3), syndrome (0x1ab2c3)"),
    # ibv_open_device's ENOMEM is the adapter's (above), not the locked-memory limit; ibv_create_cq's still is.
    ("memlock", "[1652793210.2] [n1:42:0] ib_iface.c:744 UCX ERROR ibv_create_cq(cqe=4096) failed: Cannot allocate memory",
     "[1608298882.555115] [b2294:54275:0]          ib_md.c:1678 UCX  ERROR ibv_open_device(mlx5_0) failed: Cannot "
     "allocate memory"),
    # CUDA's string for cudaErrorSystemDriverMismatch in nccl-tests (awslabs/awsome-distributed-ai#314); nvidia-smi's
    # banner naming both versions is not a failure.
    ("driver_too_old", "   7: ip-10-1-113-84: Test CUDA failure common.cu:894 'system has unsupported display driver / "
     "cuda driver combination'", "| NVIDIA-SMI 535.104.12             Driver Version: 535.104.12   CUDA Version: 12.2     |"),
    # pdsh's host prefix before ssh's user@host one (deepspeedai/DeepSpeed#5709); ssh asking again is not yet a refusal.
    ("ssh_client", "localhost: jiaming@localhost: Permission denied (publickey,password).",
     "localhost: Permission denied, please try again."),
]

FIXTURES = [
    # (slug, first cause, causes that must be among the first three)
    # Only NCCL's error trace through its bootstrap was posted: a bootstrap socket over the IPoIB interface.
    ("nccl-1000-bootstrap-oob-ipoib-containers", "wrong_interface", ("firewall_or_port_blocked",)),
    # The adapter refused ALLOC_UAR for the 256th process: not the locked-memory limit.
    ("ucx-6049-ibv-open-device-enomem-uar", "other", ()),
    # A container's cuda-compat libraries that do not match the host's kernel driver (CUDA error 803).
    ("awsome-distributed-ai-314-cuda-compat-driver-combination", "driver_cuda_mismatch", ()),
    # pdsh's ssh login to localhost refused: the launcher, before any rank existed.
    ("deepspeed-5709-autotuning-pdsh-localhost-ssh-denied", "launcher_misconfig", ()),
]


@pytest.mark.parametrize("rule, line, near", ROWS, ids=[f"{r[0]}-{i}" for i, r in enumerate(ROWS)])
def test_row_matches_its_line_and_not_the_near_miss(rule: str, line: str, near: str) -> None:
    check_row(rule, line, near)


@pytest.mark.parametrize("slug, first, top3", FIXTURES, ids=[f[0] for f in FIXTURES])
def test_public_thread_fixture(slug: str, first: str, top3: tuple[str, ...]) -> None:
    round1.check_fixture(slug, first, top3)


def _codes(p: Path) -> list[str]:
    return [f["code"] for f in diagnose_file(p)["findings"] if f["cause"]]


def test_bootstrap_trace_is_not_read_when_a_warn_line_says_more(tmp_path: Path) -> None:
    p = tmp_path / "rank0.log"  # the WARN line names the cause; the trace under it is only its echo
    p.write_text("h1:1:2 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>\n"
                 "h1:1:2 [0] misc/shmutils.cc:71 NCCL WARN Error: failed to extend /dev/shm/nccl-abc to 9637892 bytes\n"
                 "h1:1:2 [0] NCCL INFO bootstrap.cc:270 -> 2\n")
    assert "LOG028" not in _codes(p)[:1]


def test_trace_outside_the_bootstrap_names_no_network_cause(tmp_path: Path) -> None:
    p = tmp_path / "rank0.log"  # a trace through the transports alone says nothing about the bootstrap sockets
    p.write_text("h1:1:2 [0] NCCL INFO transport/net.cc:1117 -> 6\nh1:1:2 [0] NCCL INFO proxy.cc:692 -> 6\n")
    assert "LOG028" not in _codes(p)


def test_open_device_enomem_alone_is_not_the_memlock_limit(tmp_path: Path) -> None:
    p = tmp_path / "rank0.log"
    p.write_text("[1608298882.555115] [b2294:54275:0]          ib_md.c:1678 UCX  ERROR ibv_open_device(mlx5_0) failed: "
                 "Cannot allocate memory\n")
    assert "LOG035" not in _codes(p)
