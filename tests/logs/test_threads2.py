"""Public failure threads, round 2 (fixtures/logs/threads/*/PROVENANCE.md names each thread).

Each rule row has a real line and a near-miss that must not match; the fixtures run through `commdoctor logs
--json` as a user would (the fixture test of test_threads.py, with this round's cases).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from logs.test_corpus import diagnose_file
from logs.test_rule_rows import check_row
from logs import test_threads as round1

ROWS = [
    # (rule id, real line, near-miss)
    # NCCL socket.h/socket.cc: WARN("Socket creation failed : %s", strerror(errno)): EAFNOSUPPORT is the address
    # family NCCL chose; EMFILE is a file-descriptor limit, not the interface.
    ("socket_family", "include/socket.h:344 WARN Socket creation failed : Address family not supported by protocol",  # NVIDIA/nccl#210
     "host:1:2 [0] misc/socket.cc:434 NCCL WARN socketInit: Socket creation failed : Too many open files"),
    # UCX mm_posix.c: "Not enough memory to write total of %zu bytes. Please check that /dev/shm ..."; the SysV
    # shmget failure is a kernel limit (ipcs -l), not /dev/shm.
    ("ucx_posix_shm_full", "[1475682365.444036] [pod9:11912:0]       mm_posix.c:88   UCX  ERROR Not enough memory to "
     "write total of 4208440835 bytes. Please check that /dev/shm or the directory you specified has more available "
     "memory.",  # openucx/ucx#1037
     "[1693920302.521306]          sys.c:915  UCX  ERROR   shmget(size=134221824 flags=0x7b0) for mm_recv_desc failed: "
     "No space left on device, please check shared memory limits by 'ipcs -l'"),  # openucx/ucx#9347
]


@pytest.mark.parametrize("rule, line, near", ROWS, ids=[f"{r[0]}-{i}" for i, r in enumerate(ROWS)])
def test_row_matches_its_line_and_not_the_near_miss(rule: str, line: str, near: str) -> None:
    check_row(rule, line, near)


def test_address_family_the_kernel_lacks_is_the_interface_choice(tmp_path: Path) -> None:
    p = tmp_path / "job.log"
    p.write_text("include/socket.h:344 WARN Socket creation failed : Address family not supported by protocol\n")
    first = diagnose_file(p)["findings"][0]
    assert (first["code"], first["cause"]) == ("LOG020", "wrong_interface")


@pytest.mark.parametrize("line", [
    # nccl-tests' NCCLCHECK (NVIDIA/nccl-tests#166, #219), its older form (NVIDIA/nccl-tests#15) and CUDACHECK.
    "ubuntu: Test NCCL failure common.cu:958 'unhandled system error (run with NCCL_DEBUG=INFO for details) / '",
    "NCCL failure common.cu:921 'unhandled system error'",
    "gpu-node: Test CUDA failure common.cu:892 'out of memory'",
])
def test_nccl_tests_failure_line_alone_is_a_failure_never_healthy(tmp_path: Path, line: str) -> None:
    p = tmp_path / "nccl-tests.log"
    p.write_text(line + "\n .. ubuntu pid 9621: Test failure common.cu:842\n")
    found = diagnose_file(p)["findings"]
    assert found, "a failed nccl-tests run read as healthy"
    if found[0]["cause"] is None:
        assert found[0]["code"] == "LOG080" and line in found[0]["evidence"][0]["text"]


def test_ucx_error_lines_no_rule_knows_are_a_failure_not_healthy(tmp_path: Path) -> None:
    p = tmp_path / "ucx.log"  # openucx/ucx#9347, as posted
    p.write_text("[1693920302.521306]          sys.c:915  UCX  ERROR   shmget(size=134221824 flags=0x7b0) for "
                 "mm_recv_desc failed: No space left on device, please check shared memory limits by 'ipcs -l'\n"
                 "[1693920302.521312]         mm_sysv.c:113  UCX  ERROR   failed to allocate 134217752 bytes with mm "
                 "for mm_recv_desc\n")
    found = diagnose_file(p)["findings"]
    assert [f["code"] for f in found][:1] == ["LOG080"]
    q = tmp_path / "ucx-warn.log"  # UCX at WARN level in a job that ran: not a failure
    q.write_text("[1560244589.726560] [nicpa-dtu:6527 :0]        mm_posix.c:200  UCX  WARN  unable to handle VM_UNMAP "
                 "event\n Hello World!\n")
    assert [f for f in diagnose_file(q)["findings"] if f["cause"] or f["code"] == "LOG080"] == []


SOCKET_OVER_BRIDGES = ("node1:100:100 [0] NCCL INFO NET/Socket : Using [0]bond0:192.168.1.161<0> "
                      "[1]br-05ab815fa14e:172.19.0.1<0> [2]br-d5d80d7dbbad:172.21.0.1<0>\n"
                      "node1:100:100 [0] NCCL INFO Using network Socket\n")


def test_system_error_over_a_socket_transport_spread_on_bridges_is_the_interface(tmp_path: Path) -> None:
    """NVIDIA/nccl#697 (interfaces as the maintainer quoted them, on NCCL's one line): NET/Socket carries data over
    every interface it lists; docker bridges among them make the socket calls fail (NCCL_SOCKET_IFNAME fixed it)."""
    failed = "ncclSystemError: System call (socket, malloc, munmap, etc) failed.\n"
    p = tmp_path / "bridges.log"
    p.write_text(SOCKET_OVER_BRIDGES + failed)
    first = diagnose_file(p)["findings"][0]
    assert (first["code"], first["cause"]) == ("LOG020", "wrong_interface") and "br-05ab815fa14e" in first["title"]
    q = tmp_path / "healthy.log"  # the same interfaces in a job that ran: a warning about the risk, not a failure
    q.write_text(SOCKET_OVER_BRIDGES + "node1:100:100 [0] NCCL INFO comm 0x55 rank 0 nranks 2 cudaDev 0 busId 1000 "
                                      "commId 0x1 - Init COMPLETE\n")
    assert [f["severity"] for f in diagnose_file(q)["findings"]] == ["warning"]
    r = tmp_path / "one-nic.log"  # a system error with only a routable NIC listed: no interface to blame
    r.write_text("node1:100:100 [0] NCCL INFO NET/Socket : Using [0]bond0:192.168.1.161<0>\n"
                 "node1:100:100 [0] NCCL INFO Using network Socket\n" + failed)
    assert [f["code"] for f in diagnose_file(r)["findings"]][:1] == ["LOG080"]


def test_nccl_tests_summary_of_a_passing_run_stays_healthy(tmp_path: Path) -> None:
    p = tmp_path / "ok.log"
    p.write_text("# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 42.1234 \n#\n"
                 "# Errors with asterisks indicate errors that have exceeded the maximum threshold.\n")
    found = diagnose_file(p)["findings"]
    assert [f for f in found if f["cause"] or f["code"] == "LOG080"] == []


# (fixture, the first cause `commdoctor logs --json` must give, causes that must be among the first three)
FIXTURES = [
    ("nccl-426-ib-completion-error12-gid", "ib_misconfig", ("hardware_fault",)),
    # nccl-tests prints only 'unhandled system error': the /dev/shm WARN lines before it are the cause.
    ("nccl-tests-166-shm-extend-unhandled-system", "shm_too_small", ()),
    ("pytorch-37004-shm-open-permission-denied", "shm_too_small", ()),
    ("nccl-1488-nvls-invalid-argument-fm-restart", "fabric_manager_nvls", ()),
]


@pytest.mark.parametrize("slug, first, top3", FIXTURES, ids=[f[0] for f in FIXTURES])
def test_public_thread_fixture_round2(slug: str, first: str | None, top3: tuple[str, ...]) -> None:
    round1.test_public_thread_fixture(slug, first, top3)
