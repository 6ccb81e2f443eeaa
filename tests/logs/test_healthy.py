"""No cause on healthy runs (issue #16): jobs that worked get notes at most, never a cause.

The cases are real (fixtures/logs/healthy, see its PROVENANCE.md): two-host gloo jobs made by
bench/multihost_logs/healthy.py that print what working jobs print (debug levels, NCCL_DEBUG set under
gloo, a docker bridge, warnings, a torchrun restart the job recovered from) and NCCL output from public
threads whose run completed. The near-misses are real failures that print the same risk lines: there the
cause must still be named.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from logs.test_corpus import diagnose_file
from logs.test_rule_rows import check_row

ROOT = Path(__file__).resolve().parents[2]
HEALTHY = ROOT / "fixtures" / "logs" / "healthy"
#: Excerpts of jobs that worked, cut by their poster inside NCCL's set-up: the lines are those of a job that hung at
#: init (nothing after NCCL's last set-up line, no Init COMPLETE), so they get that reading as a warning; a known limit
#: (docs/logs.md), asserted by test_an_excerpt_cut_inside_nccls_set_up_reads_as_a_stall.
CUT_IN_INIT = ("nccl-tests-182-plugin-dlerror",)
CASES = sorted(p for p in HEALTHY.iterdir() if (p / "truth.json").exists() and p.name not in CUT_IN_INIT)
NEAR = HEALTHY / "near-miss"


def _input(case: Path) -> Path:
    return case / "logs" if (case / "logs").is_dir() else case / "log.txt"


def _causes(doc: dict[str, Any]) -> list[tuple[str, str]]:
    return [(f["code"], f["cause"]) for f in doc["findings"] if f.get("cause")]


def _diagnosis(doc: dict[str, Any]) -> dict[str, Any]:
    return next(r for r in doc["results"] if r["check"] == "logs.diagnose")


def test_there_are_healthy_cases_of_each_kind() -> None:
    labels = {json.loads((c / "truth.json").read_text())["root_cause"] for c in CASES}
    assert labels == {"none"}
    names = [c.name for c in CASES] + list(CUT_IN_INIT)
    assert len(CASES) + len(CUT_IN_INIT) >= 9 and sum(n.startswith("gloo-") for n in names) >= 5 and sum(n.startswith("nccl") for n in names) >= 4


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_a_job_that_worked_gets_no_cause(case: Path) -> None:
    doc = diagnose_file(_input(case))
    assert _causes(doc) == []
    assert "verdict" not in (_diagnosis(doc).get("data") or {})


def test_an_excerpt_cut_inside_nccls_set_up_reads_as_a_stall() -> None:
    """nccl-tests#182 ran (the thread is about its bandwidth), but the post stops inside NCCL's set-up: only a
    warning, which says the job's whole output is what it reads."""
    for name in CUT_IN_INIT:
        doc = diagnose_file(_input(HEALTHY / name))
        found = [f for f in doc["findings"] if f.get("cause")]
        assert [f["code"] for f in found][:1] == ["LOG108"] and all(f["severity"] == "warning" for f in found)
        assert "excerpt" in found[0]["detail"]


def test_a_restart_the_job_recovered_from_is_a_note_that_says_so() -> None:
    """rank 1 raised, torchrun restarted the group and it ran to the end: the failure is shown, as a note."""
    for name in ("gloo-elastic-restart-recovers", "gloo-elastic-restart-loglevel-info"):
        doc = diagnose_file(HEALTHY / name / "logs")
        notes = [f for f in doc["findings"] if f["code"] == "LOG060"]
        assert notes and all(f["severity"] == "info" and f["cause"] is None for f in notes), name
        assert "restarted the workers" in notes[0]["detail"]
        assert _diagnosis(doc)["data"]["outcome"]["failed"] is False


def test_a_restart_whose_job_then_stops_keeps_its_cause(tmp_path: Path) -> None:
    """The same two host logs cut just after the launcher's restart line: nothing shows the job going on."""
    src = HEALTHY / "gloo-elastic-restart-recovers" / "logs"
    for f in sorted(src.iterdir()):
        lines = f.read_text().splitlines(keepends=True)
        cut = next(i for i, ln in enumerate(lines) if "failed (exitcode: 1) local_rank" in ln)
        (tmp_path / f.name).write_text("".join(lines[:cut + 1]))
    causes = _causes(diagnose_file(tmp_path))
    assert causes and causes[0] == ("LOG060", "peer_process_died")


def test_a_restart_that_failed_again_names_a_cause() -> None:
    doc = diagnose_file(NEAR / "gloo-elastic-restart-fails-again" / "logs")
    assert _causes(doc)
    assert "outcome" not in (_diagnosis(doc).get("data") or {})


def test_an_interface_list_on_one_node_is_not_a_risk(tmp_path: Path) -> None:
    """nccl-tests lists every rank on one host: NET/Socket's tunl0 carries nothing between hosts (NVIDIA/nccl#428).
    Without that table the same lines are one host's view of a job that may span hosts: the risk stays, with its cause."""
    log = (HEALTHY / "nccl-428-tunl0-single-node" / "log.txt").read_text()
    assert not [f for f in diagnose_file(HEALTHY / "nccl-428-tunl0-single-node" / "log.txt")["findings"] if f["code"] == "LOG020"]
    alone = tmp_path / "log.txt"
    alone.write_text("".join(ln for ln in log.splitlines(keepends=True) if not ln.startswith("#   Rank")))
    assert ("LOG020", "wrong_interface") in _causes(diagnose_file(alone))


def test_a_bad_interface_in_a_job_that_never_finished_keeps_its_cause() -> None:
    """A veth with a link-local address in NET/Socket and no end logged (the job hung connecting): a cause."""
    causes = _causes(diagnose_file(NEAR / "ray-veth-hang" / "log.txt"))
    assert causes and causes[0][1] == "wrong_interface"


def test_the_end_of_a_job_with_an_error_after_it_is_not_an_end(tmp_path: Path) -> None:
    """Destroy COMPLETE and nccl-tests' check say the job ended; a WARN no rule knows after them is still reported."""
    log = (HEALTHY / "nccl-1706-destroy-tests-ok" / "log.txt").read_text()
    p = tmp_path / "log.txt"
    p.write_text(log + "deepseek:2081594:2081611 [0] misc/socket.cc:50 NCCL WARN frobnication of socket 12 failed\n")
    doc = diagnose_file(p)
    assert [f["code"] for f in doc["findings"] if f["severity"] == "error"] == ["LOG080"]
    assert "outcome" not in (_diagnosis(doc).get("data") or {})


ROWS = [
    # (rule id, real line, near-miss): the lines that say how a job ended, and NCCL's notes on IB devices it skipped.
    ("nccl_destroyed", "vm:929:929 [0] NCCL INFO comm 0x418cea50 rank 0 nranks 2 cudaDev 0 busId 60 - Destroy COMPLETE",
     "vm:1284:1290 [0] NCCL INFO comm 0x37404000 rank 0 nranks 2 cudaDev 0 busId 60 - Abort COMPLETE"),
    ("nccl_connected", "vm:930:930 [0] NCCL INFO Connected all rings, use ring PXN 0 GDR 0",
     "vm:930:930 [0] NCCL INFO Channel 00/02 : 0 1"),
    ("nccl_connected", "myles-MC62-G40-00:6742:6766 [0] NCCL INFO Connected all trees",
     "qh100-gpu20:39633:39689 [4] NCCL INFO Trees [0] 14/-1/-1->12->11 [1] 14/-1/-1->12->11"),
    ("nccl_tests_passed", "# Out of bounds values : 0 OK", "# Out of bounds values : 50 FAILED"),
    ("nccl_tests_rank", "#  Rank  0 Group  0 Pid 895544 on     h100-2 device  0 [0002:00:01] NVIDIA H100 80GB HBM3",
     " .. h100-4 pid 739791: Test failure common.cu:893"),
    ("nccl_tests_rank", "#   Rank  1 Pid  93569 on ai-vtraining-prd-10-193-84-3 device  1 [0xaf] Tesla T4",
     "#   Rank  1 Pid  93569 on ai-vtraining-prd-10-193-84-3"),
    ("agent_succeeded", "I1127 17:43:27.741000 4854 site-packages/torch/distributed/elastic/agent/server/api.py:932] "
     "[default] worker group successfully finished. Waiting 300 seconds for other agents to finish.",
     "I1127 17:43:20.066000 4855 site-packages/torch/distributed/elastic/agent/server/api.py:942] "
     "[default] Worker group FAILED. 1/1 attempts left; will restart worker group"),
    ("agent_restart", "I1127 17:43:20.066000 4855 site-packages/torch/distributed/elastic/agent/server/api.py:942] "
     "[default] Worker group FAILED. 1/1 attempts left; will restart worker group",
     "I1127 17:43:21.082000 4854 site-packages/torch/distributed/elastic/agent/server/api.py:733] [default] Stopping worker group"),
    ("agent_restart", "I1127 17:43:21.082000 4854 site-packages/torch/distributed/elastic/agent/server/api.py:962] "
     "[default] Detected 1 new nodes from group_rank=0; will restart worker group",
     "I1127 17:43:21.125000 4854 site-packages/torch/distributed/elastic/agent/server/api.py:707] [default] Rendezvous'ing worker group"),
    ("ib_open_note", "f9f726acd5cd:63407:63407 [0] transport/net_ib.cc:148 NCCL WARN NET/IB : Unable to open device mlx4_0",
     "ibvwrap.cc: NCCL WARN Call to ibv_modify_qp failed with error Connection timed out"),
    ("ib_open_note", "f9f726acd5cd:63407:63407 [0] misc/ibvwrap.cc:212 NCCL WARN Call to ibv_open_device failed",
     "f9f726acd5cd:63407:63407 [0] NCCL INFO NET/IB : No device found."),
]


@pytest.mark.parametrize("rule,line,near", ROWS, ids=[f"{r[0]}-{i}" for i, r in enumerate(ROWS)])
def test_rule_row(rule: str, line: str, near: str) -> None:
    check_row(rule, line, near)


def _capture_with_bridge(tmp_path: Path, upto: str) -> Path:
    """The GPU capture's healthy job (fixtures/logs/nccl-healthy, NCCL 2.28.9, runtime connection) cut just after the
    first line holding ``upto``, with NET/Socket's list as NCCL prints it on a host that also has a docker bridge
    (composed: the capture's own line, one interface added, in NCCL's format)."""
    out = []
    for ln in (ROOT / "fixtures" / "logs" / "nccl-healthy" / "torchrun.log").read_text().splitlines(keepends=True):
        if "NET/Socket : Using [0]eth0:192.0.2.2<0>" in ln:
            ln = ln.rstrip("\n") + " [1]docker0:172.17.0.1<0>\n"
        out.append(ln)
        if upto in ln:
            break
    p = tmp_path / "torchrun.log"
    p.write_text("".join(out))
    return p


def test_a_bridge_in_the_socket_list_of_a_job_that_connected_is_a_note(tmp_path: Path) -> None:
    """Every communicator initialised and NCCL connected its rings over the listed interfaces, no error: the bridge
    is a note. Cut before the rings connected (a job that hangs there), the same list keeps its cause."""
    doc = diagnose_file(_capture_with_bridge(tmp_path, "Connected all rings"))
    assert _causes(doc) == []
    assert [f["severity"] for f in doc["findings"] if f["code"] == "LOG020"] == ["info"]
    early = _capture_with_bridge(tmp_path, "Init COMPLETE")
    assert ("LOG020", "wrong_interface") in _causes(diagnose_file(early))
