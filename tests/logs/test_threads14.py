"""Public failure threads, round 14 (fixtures/logs/threads/*/PROVENANCE.md names each thread).

Readings the earlier rounds lacked: NCCL's own socket layer dialling a peer's loopback address (the interface NCCL
picked, where gloo's is the host name's), launch set-ups that cannot work (an MPI worker image without sshd,
DeepSpeed's --include naming a slot the hostfile lacks, Hydra unable to start its own proxy), and DMA-BUF
registration refused by an IB driver that lacks it. Each rule row has a real line and a near-miss that must not
match; the fixtures run through `commdoctor logs --json`.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from logs import test_threads as round1
from logs.test_corpus import first_cause
from logs.test_rule_rows import check_row

ROWS = [
    # (rule id, real line, near-miss)
    # NCCL misc/socket.cc (awslabs/awsome-distributed-ai#192); a connection to a routable address is not it.
    ("connect_loopback", "10: socketStartConnect: Connect to 127.0.0.1<45069> failed : Software caused connection abort",
     "10: socketStartConnect: Connect to 10.1.2.3<45069> failed : Software caused connection abort"),
    # bash in an MPI Operator worker (NVIDIA/cloudai#720); sshd's own log line is not a missing binary.
    ("sshd_missing", "/bin/bash: line 1: /usr/sbin/sshd: No such file or directory",
     "sshd[42]: Server listening on 0.0.0.0 port 22."),
    # DeepSpeed's runner (deepspeedai/DeepSpeed#3625); its hostfile parse of a good slot count is no error.
    ("ds_slot_missing", "No slot 2 specificied on host work1", "[INFO] [runner.py:555:main] cmd = ... --include=work1:0,1"),
    # Hydra's launch.c (pmodels/mpich#1106); its proxy started fine says nothing.
    ("hydra_execvp", "[mpiexec@lenzcs35] HYDU_create_process (./utils/launch/launch.c:69): execvp error on file "
     "/opt/mpich/bin/.libs/hydra_pmi_proxy (No such file or directory)",
     "[mpiexec@lenzcs35] Launch arguments: /opt/mpich/bin/hydra_pmi_proxy --control-port lenzcs35:41234"),
    # NCCL's ibvwrap (NVIDIA/nccl#778); a plain ibv_reg_mr refused is the GPUDirect RDMA row's reading (same row).
    ("ib_reg_mr", "misc/ibvwrap.cc:288 NCCL WARN Call to ibv_reg_dmabuf_mr failed with error Operation not supported",
     "NCCL INFO NET/IB : GPU Direct RDMA (nvidia-peermem) enabled for HCA 0 'mlx5_0'"),
]

FIXTURES = [
    # (slug, first cause, causes that must be among the first three)
    ("awsome-192-socket-abort-loopback-ifname", "wrong_interface", ()),
    ("cloudai-720-mpijob-no-sshd-in-ngc-image", "launcher_misconfig", ()),
    ("deepspeed-3625-include-slot-not-in-hostfile", "launcher_misconfig", ()),
    ("mpich-1106-hydra-pmi-proxy-execvp-missing", "other", ()),
    ("nccl-778-dmabuf-reg-not-supported", "nccl_internal_bug", ()),
]


@pytest.mark.parametrize("rule, line, near", ROWS, ids=[f"{r[0]}-{i}" for i, r in enumerate(ROWS)])
def test_row_matches_its_line_and_not_the_near_miss(rule: str, line: str, near: str) -> None:
    check_row(rule, line, near)


@pytest.mark.parametrize("slug, first, top3", FIXTURES, ids=[f[0] for f in FIXTURES])
def test_public_thread_fixture(slug: str, first: str, top3: tuple[str, ...]) -> None:
    round1.check_fixture(slug, first, top3)


def test_gloo_dialling_loopback_is_still_the_host_name(tmp_path: Path) -> None:
    p = tmp_path / "rank1.log"  # gloo advertises what the host name resolves to
    p.write_text("RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:799] connect [127.0.1.1]:14221: "
                 "Connection refused\n")
    assert first_cause(p)[1] == "hostname_resolution"


def test_hydra_unable_to_run_the_program_is_the_launch(tmp_path: Path) -> None:
    p = tmp_path / "mpiexec.log"  # the program the launch named, not Hydra's own proxy
    p.write_text("[mpiexec@n1] HYDU_create_process (utils/launch/launch.c:74): execvp error on file ./train_mpi "
                 "(No such file or directory)\n")
    assert first_cause(p) == ("LOG066", "launcher_misconfig")


def test_a_refused_plain_registration_stays_gpudirect(tmp_path: Path) -> None:
    p = tmp_path / "rank0.log"
    p.write_text("misc/ibvwrap.cc:288 NCCL WARN Call to ibv_reg_mr failed with error Bad address\n")
    assert first_cause(p)[1] == "p2p_acs_iommu"
