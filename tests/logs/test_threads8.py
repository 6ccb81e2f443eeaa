"""Public failure threads, round 8 (fixtures/logs/threads/*/PROVENANCE.md names each thread).

Errors whose line does not name the thing that failed: a write that ran out of space with no path (in a training
job, /dev/shm); NCCL's INFO lines of a connect it keeps retrying, with nothing completing after them (a hang at init
whose log holds only INFO lines); "No route to host" to an address on the job's own network (a host firewall's
reject, as firewalld answers by default). Each rule row has a real line and a near-miss that must not match; the fixtures run through
`commdoctor logs --json` as a user would.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from logs import test_threads as round1
from logs.test_corpus import diagnose_file
from logs.test_rule_rows import check_row

ROWS = [
    # (rule id, real line, near-miss)
    # errno 28 (ENOSPC) with no path; errno 2 (ENOENT) is a missing file, not a full one.
    ("enospc", "OSError: [Errno 28] No space left on device",  # NVIDIA/Megatron-LM#878
     "OSError: [Errno 2] No such file or directory: '/data/ckpt'"),
    # torch's shared-memory tensor files (libshm names them /torch_<pid>_...) live in /dev/shm.
    ("enospc", "RuntimeError: unable to write to file </torch_739_144252761_4>: No space left on device (28)",
     "RuntimeError: unable to open shared memory object </torch_739_144252761_4> in read-write mode: Too many open "
     "files (24)"),
    # misc/socket.cc (NCCL <= 2.11): INFO "Call to connect returned %s, retrying"; the WARN of a connect that failed
    # outright is the peer rule's line.
    ("nccl_connect_retry", "hostname:26407:26474 NCCL INFO Call to connect returned Connection refused, retrying...",
     # horovod/horovod#1408
     "node5:240:240 [6] misc/socket.cc:533 NCCL WARN socketPollConnect: Connect to 10.0.0.4<56849> returned 113(No "
     "route to host) errno 115(Operation now in progress)"),  # sgl-project/sglang#3820
    # misc/socket.cc (2.12+): "%s: connect [to %s] returned %s, retrying (%d/%d) after sleep for %u msec".
    ("nccl_connect_retry", "zgiot:1183664:1184669 [0] NCCL INFO socketPollConnect: connect returned No route to host, "
     "retrying (26/34) after sleep for 2600 msec",  # hiyouga/LlamaFactory#8045
     "zgiot:1183664:1184669 [0] NCCL INFO socketPollConnect: connect to 10.0.0.4<56849> returned Operation now in "
     "progress"),
    # nccl-tests' table of ranks names each GPU ("device %2d [%s] %s"); the test's header line does not.
    ("nccl_tests_rank", "#   Rank  0 Pid   4479 on 4090-01-R02 device  0 [0x81] NVIDIA GeForce RTX 4090",
     "# nThread 1 nGpus 2 minBytes 8 maxBytes 134217728 step: 2(factor) warmup iters: 5 iters: 20 validation: 1 "),
    # nccl-tests' result row (size, count, type, redop, root, times); the column heads above it are not one.
    ("nccl_tests_row", "           8             2     float     sum      -1     8.49    0.00    0.00      0     8.37    "
     "0.00    0.00      0",  # tinygrad/open-gpu-kernel-modules#45
     "#       size         count      type   redop     time   algbw   busbw  error     time   algbw   busbw  error"),
]

FIXTURES = [
    # (slug, first cause, causes that must be among the first three)
    # An ENOSPC OSError in a container started without --shm-size: /dev/shm first, a full disk as the alternative.
    ("megatron-878-docker-errno28", "shm_too_small", ("other",)),
    # nccl-tests on two RTX 4090 that stops after its table of ranks: the boards' missing P2P, ACS as the alternative.
    ("nccltests-117-rtx4090-p2p-hang", "p2p_driver_bug", ("p2p_acs_iommu",)),
]


@pytest.mark.parametrize("rule, line, near", ROWS, ids=[f"{r[0]}-{i}" for i, r in enumerate(ROWS)])
def test_row_matches_its_line_and_not_the_near_miss(rule: str, line: str, near: str) -> None:
    check_row(rule, line, near)


@pytest.mark.parametrize("slug, first, top3", FIXTURES, ids=[f[0] for f in FIXTURES])
def test_public_thread_fixture(slug: str, first: str, top3: tuple[str, ...]) -> None:
    round1.check_fixture(slug, first, top3)


def test_enospc_names_no_cause_when_nccl_already_named_the_shm_segment(tmp_path: Path) -> None:
    p = tmp_path / "rank0.log"  # NCCL's own line says which file system: one /dev/shm finding, not a second guess
    p.write_text("include/shm.h:28 NCCL WARN Call to posix_fallocate failed: No space left on device\n"
                 "OSError: [Errno 28] No space left on device\n")
    fs = diagnose_file(p)["findings"]
    assert fs[0]["cause"] == "shm_too_small"
    assert not any("ENOSPC" in json.dumps(f) for f in fs)


RETRY = "n1:11:22 [0] NCCL INFO socketPollConnect: connect to 10.0.0.4<56849> returned {err}, retrying ({n}/34) after sleep for {ms} msec\n"


def _causes_of(p: Path) -> list[tuple[str, str]]:
    return [(f["code"], f["cause"]) for f in diagnose_file(p)["findings"]]


def test_connect_retries_with_nothing_after_them_are_the_failure(tmp_path: Path) -> None:
    refused = tmp_path / "refused.log"  # a rank that only ever retried: its peer's address refuses NCCL
    refused.write_text("".join(RETRY.format(err="Connection refused", n=i, ms=100 * i) for i in range(1, 6)))
    assert _causes_of(refused)[0] == ("LOG022", "wrong_interface")
    assert "firewall_or_port_blocked" in [c for _k, c in _causes_of(refused)[:3]]
    timed = tmp_path / "timed.log"  # dropped packets: a firewall first
    timed.write_text("".join(RETRY.format(err="Connection timed out", n=i, ms=100 * i) for i in range(1, 4)))
    assert _causes_of(timed)[0] == ("LOG025", "firewall_or_port_blocked")


def test_connect_retries_then_init_complete_are_no_failure(tmp_path: Path) -> None:
    p = tmp_path / "rank1.log"  # a peer still starting: NCCL retried once and the communicator came up
    p.write_text(RETRY.format(err="Connection refused", n=1, ms=100)
                 + "n1:11:22 [0] NCCL INFO ncclCommInitRank comm 0x55d1c3a0 rank 1 nranks 2 cudaDev 0 nvmlDev 0 busId 1000 "
                   "commId 0x1 - Init COMPLETE\n")
    assert _causes_of(p) == []


NO_ROUTE = ("n1:10:20 [0] misc/socket.cc:533 NCCL WARN socketPollConnect: Connect to {addr}<56849> returned 113(No "
            "route to host) errno 115(Operation now in progress)\n")


def test_no_route_to_an_address_on_the_jobs_own_network_reads_as_a_firewall(tmp_path: Path) -> None:
    same = tmp_path / "same.log"  # the route exists (same /24 as this rank's own address): the peer's host rejected it
    same.write_text("n1:10:10 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.5<0>\n" + NO_ROUTE.format(addr="10.0.0.4"))
    assert _causes_of(same)[0] == ("LOG029", "firewall_or_port_blocked")
    other = tmp_path / "other.log"  # another network: the address or the route is wrong
    other.write_text("n1:10:10 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.5<0>\n" + NO_ROUTE.format(addr="10.9.0.4"))
    assert _causes_of(other)[0] == ("LOG022", "wrong_interface")
    bare = tmp_path / "bare.log"  # no address of the job's own in view: nothing to compare with
    bare.write_text(NO_ROUTE.format(addr="10.0.0.4"))
    assert _causes_of(bare)[0] == ("LOG022", "wrong_interface")


HEAD_4090 = ("# nThread 1 nGpus 2 minBytes 8 maxBytes 134217728 step: 2(factor) warmup iters: 5 iters: 20 validation: 1 \n"
             "#   Rank  0 Pid   4479 on box device  0 [0x81] NVIDIA GeForce RTX {m}\n"
             "#   Rank  1 Pid   4479 on box device  1 [0xa1] NVIDIA GeForce RTX {m}\n")


def test_geforce_p2p_reading_needs_the_boards_and_a_test_that_never_ran(tmp_path: Path) -> None:
    ran = tmp_path / "ran.log"  # the same boards with a completed size: no failure to explain
    ran.write_text(HEAD_4090.format(m="4090") + "           8             2     float     sum      -1     8.49    0.00    "
                   "0.00      0     8.37    0.00    0.00      0\n")
    assert _causes_of(ran) == []
    older = tmp_path / "older.log"  # boards whose P2P the driver reports right: the rule says nothing
    older.write_text(HEAD_4090.format(m="2080 Ti"))
    assert all(c != "p2p_driver_bug" for _k, c in _causes_of(older))
    hung = tmp_path / "hung.log"
    hung.write_text(HEAD_4090.format(m="4090"))
    assert _causes_of(hung)[0] == ("LOG039", "p2p_driver_bug")
