"""Public failure threads, round 13 (fixtures/logs/threads/*/PROVENANCE.md names each thread).

Readings the earlier rounds lacked: AWS's EFA network plugin (aws-ofi-nccl) failing to reach a peer (the security
group or availability zone) or to register GPU memory with an older libfabric; UCX's UD transport timing out on a
RoCE GID that differs between nodes; and Ray's start-up measure of a container's small /dev/shm. Each rule row has a
real line and a near-miss that must not match; the fixtures run through `commdoctor logs --json`.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from logs import test_threads as round1
from logs.test_corpus import diagnose_file
from logs.test_rule_rows import check_row

ROWS = [
    # (rule id, real line, near-miss)
    # aws-ofi-nccl's fi_av_insert failure (aws/aws-ofi-nccl#663); a successful connection's INFO line is not it.
    ("ofi_peer_unreachable", "[rank1]: NET/OFI Unable to insert remote address into address vector for device 1. RC: 0",
     "ip-10-0-1-5:35:89 [5] NCCL INFO NET/OFI Selected provider is efa, fabric is efa-direct (found 4 nics)"),
    # A request completed with an error (aws/aws-ofi-nccl#156); the plugin's count of requests is no error.
    ("ofi_peer_unreachable", "[1,13]<stdout>:nccl-tests-worker-1:35:89 [5] ofi_process_cq:1039 NCCL WARN NET/OFI Request "
     "0x7fbb944701b8 completed with error. RC: 20. Error: unknown error. Completed length: 0",
     "nccl-tests-worker-1:35:89 [5] NCCL INFO NET/OFI Request pool of 4096 entries created"),
    # GPU memory (type 2) refused (aws/aws-ofi-nccl#584); host memory (type 0) is another failure.
    ("ofi_register_gpu_mem", "register_mr_buffers:544 NCCL WARN NET/OFI Unable to register memory (type = 2) for device 0. "
     "RC: -22, Error: Invalid argument",
     "register_mr_buffers:544 NCCL WARN NET/OFI Unable to register memory (type = 0) for device 0. RC: -12"),
    # UCX's UD endpoint timeout (openucx/ucx#7785); the RC transport's retry message is another row's.
    ("ucx_ud_timeout", "[mu01:17626:0:17626]       ud_ep.c:270  Fatal: UD endpoint 0x2345930 to <no debug data>: unhandled "
     "timeout error", "[mu01:17626:0:17626] ib_mlx5_log.c:174 Transport retry count exceeded on mlx5_0:1/RoCE"),
    # Ray's start-up warning (vllm-project/vllm#1710); its note about spilling objects says nothing of /dev/shm's size.
    ("ray_small_shm", "2023-11-18 03:39:16,283 WARNING services.py:1996 -- WARNING: The object store is using /tmp instead "
     "of /dev/shm because /dev/shm has only 67108864 bytes available. This will harm performance!",
     "2023-11-18 03:39:16,440 INFO worker.py:1673 -- Started a local Ray instance."),
]

FIXTURES = [
    # (slug, first cause, causes that must be among the first three)
    ("aws-ofi-nccl-663-efa-outbound-security-group", "firewall_or_port_blocked", ()),
    ("aws-ofi-nccl-156-efa-security-group-mpijob", "firewall_or_port_blocked", ()),
    ("aws-ofi-nccl-584-efa-register-mr-einval", "nccl_internal_bug", ()),
    ("ucx-7785-ud-timeout-gid-index", "ib_misconfig", ()),
    ("vllm-1710-docker-tp2-ncclshmopen-64m-shm", "shm_too_small", ()),
]


@pytest.mark.parametrize("rule, line, near", ROWS, ids=[f"{r[0]}-{i}" for i, r in enumerate(ROWS)])
def test_row_matches_its_line_and_not_the_near_miss(rule: str, line: str, near: str) -> None:
    check_row(rule, line, near)


@pytest.mark.parametrize("slug, first, top3", FIXTURES, ids=[f[0] for f in FIXTURES])
def test_public_thread_fixture(slug: str, first: str, top3: tuple[str, ...]) -> None:
    round1.check_fixture(slug, first, top3)


def _causes(p: Path) -> list[str]:
    return [f["cause"] for f in diagnose_file(p)["findings"] if f["cause"]]


RAY = ("2023-11-18 03:39:16,283 WARNING services.py:1996 -- WARNING: The object store is using /tmp instead of /dev/shm "
       "because /dev/shm has only {n} bytes available. This will harm performance!\n")


def test_a_roomy_dev_shm_is_no_finding(tmp_path: Path) -> None:
    p = tmp_path / "serve.log"
    p.write_text(RAY.format(n=8 << 30))
    assert _causes(p) == []


def test_a_small_dev_shm_in_a_job_that_ended_is_a_note(tmp_path: Path) -> None:
    p = tmp_path / "train.log"  # the job reached its end: a risk it did not run into
    p.write_text(RAY.format(n=67108864) + "I1128 10:00:00.000000 1 torch/distributed/elastic/agent/server/api.py:900] "
                 "[default] worker group successfully finished. Waiting 300 seconds for other agents to finish.\n")
    assert _causes(p) == []


def test_a_dead_peer_outranks_the_plugins_failed_transfers(tmp_path: Path) -> None:
    p = tmp_path / "rank0.log"  # the transfers to a peer that was killed fail too; its death is what to read
    p.write_text("h1:35:89 [5] ofi_process_cq:1039 NCCL WARN NET/OFI Request 0x7fbb944701b8 completed with error. RC: 20. "
                 "Error: unknown error. Completed length: 0\n"
                 "[2024-01-01 10:00:00,000] torch.distributed.elastic.multiprocessing.api: [ERROR] failed (exitcode: -9) "
                 "local_rank: 1 (pid: 4242) of binary: /usr/bin/python3\n"
                 "  exitcode  : -9 (pid: 4242)\n  error_file: <N/A>\n  traceback : Signal 9 (SIGKILL) received by PID 4242\n")
    assert _causes(p)[0] == "peer_process_died"
