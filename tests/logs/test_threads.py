"""Failures from public threads, in the words their users posted (fixtures/logs/threads/*/PROVENANCE.md names each).

Each rule row has a real line and a near-miss that must not match; the fixtures run through `commdoctor logs
--json` as a user would, and what a thread confirmed must come out first (or, where the posted lines cannot
tell, must at least not be hidden behind a consequence or called healthy).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from logs.test_corpus import diagnose_file
from logs.test_rule_rows import check_row

ROOT = Path(__file__).resolve().parents[2]
FIX = ROOT / "fixtures" / "logs" / "threads"

ROWS = [
    # (rule id, real line, near-miss)
    # Open MPI btl/vader's CMA get ("Read %ld, expected %lu, errno = %d"): EPERM refused; EFAULT is another failure.
    ("mpi_cma_denied", "Read -1, expected <someNumber>, errno =1",  # open-mpi/ompi#4948, the poster's redaction
     "Read -1, expected 4194304, errno = 14"),
    ("mpi_cma_denied", "[n1:4242] Wrote -1, expected 2097152, errno = 1",  # the put side, as opal_output prints it
     "Wrote 2097152, expected 2097152, errno = 0"),
    # nccl-tests' NCCLCHECK: "%s: Test NCCL failure %s:%d '%s / %s'" with ncclGetErrorString(ncclInternalError).
    ("nccl_error_class", "fengyun: Test NCCL failure common.cu:959 'internal error - please report this issue to the "
     "NCCL developers / '",  # NVIDIA/nccl-tests#219
     "fengyun: Test NCCL failure common.cu:959 'unhandled system error (run with NCCL_DEBUG=INFO for details) / '"),
    # torch socket.cpp recordError("The server socket has failed to listen on {} {}.", addr, err) at warning level.
    ("port_in_use", "[W socket.cpp:426] [c10d] The server socket has failed to listen on [::]:38429 (errno: 98 - "
     "Address already in use).",  # OpenDriveLab/DriveLM#40
     "[I socket.cpp:426] [c10d] The server socket has started to listen on [::]:38429."),
    # gloo device.cc: GLOO_ENFORCE(rp != nullptr, ...) after looking up the host name; ifa != nullptr is the interface.
    ("gloo_hostname_address", "RuntimeError: [enforce fail at ../third_party/gloo/gloo/transport/tcp/device.cc:127] "
     "rp != nullptr. Unable to find address for: dgx-1.ai",  # msr-fiddle/pipedream#32
     "  what():  [enforce fail at /tmp/pip-install-3dvzdqhs/horovod/third_party/gloo/gloo/transport/tcp/device.cc:88] "
     "ifa != nullptr. Unable to find address for: eth0"),  # horovod/horovod#1341: an interface, not a name
    ("mpi_cma_fallback_note", "not available due to restrictive ptrace settings.",  # help-btl-vader.txt, 3rd line
     "[n1:17396] 3 more processes have sent help message help-btl-tcp.txt / client connect fail"),
]


@pytest.mark.parametrize("rule, line, near", ROWS, ids=[f"{r[0]}-{i}" for i, r in enumerate(ROWS)])
def test_row_matches_its_line_and_not_the_near_miss(rule: str, line: str, near: str) -> None:
    check_row(rule, line, near)


def _causes(doc: dict) -> list[str]:
    return [f["cause"] for f in doc["findings"] if f["cause"]]


def test_port_taken_said_only_at_warning_level_is_the_port(tmp_path: Path) -> None:
    """socket.cpp warns per address and fails once all failed: errno 98 on the dual-stack [::] socket is the port."""
    p = tmp_path / "job.log"
    p.write_text("[W socket.cpp:426] [c10d] The server socket has failed to bind to [::]:38429 (errno: 98 - Address "
                 "already in use).\n" * 3)
    assert _causes(diagnose_file(p))[:1] == ["port_conflict"]
    r = tmp_path / "listened.log"  # the port's other address worked: torch says so, and the job ran
    r.write_text("[W socket.cpp:436] [c10d] The server socket has failed to bind to [::]:50002 (errno: 98 - Address "
                 "already in use).\n[I socket.cpp:800] [c10d] The server socket has started to listen on "
                 "0.0.0.0:50002.\n[job] rank 0 step 9 loss 0.0905\n")
    assert _causes(diagnose_file(r)) == []
    q = tmp_path / "ok.log"  # a working job's own connection-retry warnings do not fail it
    q.write_text("[W socket.cpp:663] [c10d] The client socket has failed to connect to [node1]:29500 (errno: 111 - "
                 "Connection refused).\n[job] rank 1 step 9 loss 0.0905\n")
    assert _causes(diagnose_file(q)) == []


def test_graph_file_in_a_failed_job_is_the_injected_graph_not_in_a_working_one(tmp_path: Path) -> None:
    env = "Spotllm:73025:73112 [0] NCCL INFO NCCL_GRAPH_FILE set by environment to /opt/microsoft/ncv4/graph.xml\n"
    p = tmp_path / "failed.log"
    p.write_text(env + "ncclSystemError: System call (e.g. socket, malloc) or external library call failed or device "
                       "error.\n")
    first = next(f for f in diagnose_file(p)["findings"] if f["cause"])
    assert (first["code"], first["cause"]) == ("LOG071", "other")
    assert "NCCL_GRAPH_FILE" in first["evidence"][0]["text"]
    q = tmp_path / "working.log"
    q.write_text(env + "Spotllm:73025:73112 [0] NCCL INFO comm 0x5f4c0370 rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId "
                       "100000 commId 0xffa1ecd94ef8180a - Init COMPLETE\n")
    assert _causes(diagnose_file(q)) == []


def test_nccl_result_class_line_alone_is_a_failure_with_the_likeliest_cause_and_its_alternatives(tmp_path: Path) -> None:
    """Round 6 (tests/logs/test_threads6.py): a bare ncclSystemError with nothing else is, in public threads, a failed
    socket call between hosts far more often than anything else; it names that, with /dev/shm and the rest as
    alternatives, rather than no cause."""
    p = tmp_path / "job.log"
    p.write_text("ncclSystemError: System call (socket, malloc, munmap, etc) failed.\n")
    found = diagnose_file(p)["findings"]
    assert (found[0]["code"], found[0]["cause"]) == ("LOG028", "wrong_interface")
    assert any(f["code"] == "LOG090" and "shm too small" in f["title"] for f in found)


def test_cma_fallback_note_of_a_working_job_is_not_a_failure(tmp_path: Path) -> None:
    p = tmp_path / "mpi.log"
    p.write_text("WARNING: Linux kernel CMA support was requested via the\n"
                 "btl_vader_single_copy_mechanism MCA variable, but CMA support is\n"
                 "not available due to restrictive ptrace settings.\n"
                 "[n1:17396] 3 more processes have sent help message help-btl-vader.txt / cma-permission-denied\n"
                 " Hello World!\n")
    assert [f for f in diagnose_file(p)["findings"] if f["cause"] or f["code"] == "LOG080"] == []


def test_abort_after_a_watchdog_timeout_is_the_consequence(tmp_path: Path) -> None:
    p = tmp_path / "job.log"
    p.write_text("[rank0]:[E1124 22:43:00.29 ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog caught collective operation "
                 "timeout: WorkNCCL(SeqNum=8, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=1800000) ran for "
                 "1800090 milliseconds before timing out.\n"
                 "srun: error: node3: task 0: Aborted (core dumped)\n")
    causes = _causes(diagnose_file(p))
    assert causes and causes[0] != "peer_process_died"
    q = tmp_path / "crash.log"  # a crash with nothing before it is the rank that died
    q.write_text("srun: error: node3: task 0: Segmentation fault (core dumped)\n")
    assert _causes(diagnose_file(q))[:1] == ["peer_process_died"]


def test_unreadable_address_family_after_an_interface_setting_that_matched_nothing(tmp_path: Path) -> None:
    """NVIDIA/nccl#1837: NCCL_SOCKET_IFNAME naming no interface leaves the address unset ("family 59936"); with a
    'Bootstrap : Using' line the interface was found, and an unreadable handle means a peer on another NCCL."""
    bad = ("[trainer0|0]:ncclSocketInit: connecting to address  with family 59936 is neither AF_INET(2) nor "
           "AF_INET6(10)\n")
    env = "[trainer3]:twshared1016:1958:1958 [3] NCCL INFO NCCL_SOCKET_IFNAME set by environment to eth2\n"
    p = tmp_path / "noiface.log"
    p.write_text(env + bad)
    first = next(f for f in diagnose_file(p)["findings"] if f["cause"])
    assert first["cause"] == "wrong_interface" and "eth2" in first["title"]
    q = tmp_path / "found.log"
    q.write_text(env + "twshared1016:1958:1958 [3] NCCL INFO Bootstrap : Using eth2:10.0.0.7<0>\n" + bad)
    assert _causes(diagnose_file(q))[:1] == ["version_mismatch"]


# (fixture, the first cause `commdoctor logs --json` must give, causes that must be among the first three)
FIXTURES = [
    ("drivelm-40-srun-port", "port_conflict", ()),
    ("nccl-1240-graph-file-azure", "other", ()),
    ("ompi-4948-vader-cma-docker", "other", ()),
    ("pipedream-32-gloo-hostname-unresolvable", "hostname_resolution", ()),
    ("nccl-1837-ifname-missing-bad-family", "wrong_interface", ()),
    # Rank 0's view only: a late rank and a rank-0-only barrier read alike; the abort is what followed, not the cause.
    ("autocast-381-rank0-only-barrier", "collective_timeout_straggler", ("collective_mismatch",)),
    # A bare "unhandled system error" (ncclSystemError): a failed socket call between hosts is the usual reason, so the
    # interface comes first; on one host it is the /dev/shm segment, which this thread's --ipc=host fixed (second).
    ("dekr-18-docker-ipc-host", "wrong_interface", ("shm_too_small",)),
]


def check_fixture(slug: str, first: str, top3: tuple[str, ...]) -> None:
    """A public thread kept as a fixture: its provenance, its label, and `logs --json`'s causes on its log (its
    pipeline, in this process: a subprocess per fixture cost 0.3 s of CPU, over a hundred times a run;
    tests/logs/test_cli.py runs the command itself)."""
    folder = FIX / slug
    truth = json.loads((folder / "truth.json").read_text())
    assert (folder / "PROVENANCE.md").is_file() and truth["source"] and truth["root_cause"] == first
    causes = _causes(diagnose_file(folder / "log.txt"))
    assert causes[:1] == [first]
    for c in top3:
        assert c in causes[:3]


@pytest.mark.parametrize("slug, first, top3", FIXTURES, ids=[f[0] for f in FIXTURES])
def test_public_thread_fixture(slug: str, first: str | None, top3: tuple[str, ...]) -> None:
    folder = FIX / slug
    truth = json.loads((folder / "truth.json").read_text())
    assert (folder / "PROVENANCE.md").is_file() and truth["source"]
    doc = diagnose_file(folder / "log.txt")
    causes = _causes(doc)
    if first is None:
        assert causes == [] and [f["code"] for f in doc["findings"]][:1] == ["LOG080"]
        return
    assert causes[:1] == [first]
    for c in top3:
        assert c in causes[:3]
    if first == truth["root_cause"]:
        lines = (folder / "log.txt").read_text().splitlines()
        verdict = doc["findings"][0]
        for e in verdict["evidence"]:
            if e.get("line"):
                assert e["text"] in lines[e["line"] - 1]
