"""Real NCCL jobs from an H100 (fixtures/logs/nccl-*/, see each PROVENANCE.md): the first cause is the truth.

What a user sees: a healthy NCCL log gets no finding with a cause; a watchdog timeout
is a straggler (naming the rank that never reached the collective) or a mismatch
(ranks in different collectives), never a dead peer because the ranks then aborted
with SIGABRT; NCCL_NET naming a network the host lacks is ib_misconfig.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from logs.test_corpus import diagnose_file, diagnose_lines

FIX = Path(__file__).resolve().parents[2] / "fixtures" / "logs"
CAPTURES = sorted(p.name for p in FIX.glob("nccl-*") if (p / "truth.json").is_file())
#: Captures whose truth the log alone cannot single out (truth.json "ambiguous"): tested on their own below.
AMBIGUOUS = [c for c in CAPTURES if json.loads((FIX / c / "truth.json").read_text()).get("ambiguous")]
CASES = [c for c in CAPTURES if c not in AMBIGUOUS]


def _causes(doc: dict) -> list[dict]:
    return [f for f in doc["findings"] if f["cause"]]


def test_every_capture_is_here() -> None:
    assert len(CASES) == 29 and AMBIGUOUS == ["nccl-nnodes-two"]
    assert all((FIX / c / "PROVENANCE.md").is_file() for c in CAPTURES)


@pytest.mark.parametrize("case", CASES)
def test_first_cause_is_the_truth(case: str) -> None:
    truth = json.loads((FIX / case / "truth.json").read_text())["root_cause"]
    log = FIX / case / "torchrun.log"
    doc = diagnose_file(log)
    found = _causes(doc)
    if truth == "none":
        assert found == [], [(f["code"], f["cause"]) for f in found]
        return
    assert found, "no finding names a cause"
    assert found[0]["cause"] == truth, [(f["code"], f["cause"]) for f in found[:4]]
    lines = log.read_text().splitlines()
    for e in found[0]["evidence"]:
        if e["source"] == str(log):
            assert e["text"].strip()[:200] in lines[e["line"] - 1]


def _alone(tmp_path: Path, case: str) -> Path:
    """The log without the flight-recorder dumps beside it."""
    dst = tmp_path / case
    dst.mkdir()
    shutil.copy(FIX / case / "torchrun.log", dst / "torchrun.log")
    return dst / "torchrun.log"


def test_straggler_named_from_the_log_alone(tmp_path: Path) -> None:
    first = _causes(diagnose_file(_alone(tmp_path, "nccl-straggler")))[0]
    assert (first["code"], first["cause"]) == ("LOG051", "collective_timeout_straggler")
    # Rank 1 slept in load_batch: it had finished #15 and never enqueued #16, where rank 0 waited.
    assert "rank 1 enqueued the fewest collectives (last 15)" in first["title"]
    assert 1 in first["ranks"]


def test_straggler_named_from_the_flight_recorder_beside_the_log() -> None:
    first = _causes(diagnose_file(FIX / "nccl-straggler" / "torchrun.log"))[0]
    assert first["cause"] == "collective_timeout_straggler"
    assert "rank 1 never reached the collective the others wait in (#16 all_reduce" in first["title"]
    assert "rank 1's last: all_reduce #15" in first["title"]
    assert any(e["source"].endswith("nccl_trace_rank_1") for e in first["evidence"])


def test_mismatch_from_the_log_alone(tmp_path: Path) -> None:
    """Rank 1 completed #25 while rank 0 still waited in its #25: they were not the same call."""
    first = _causes(diagnose_file(_alone(tmp_path, "nccl-mismatch")))[0]
    assert (first["code"], first["cause"], first["ranks"]) == ("LOG050", "collective_mismatch", [0, 1])
    assert "completed collective #25 while rank(s) 0 still wait" in first["detail"]


def test_mismatch_from_the_flight_recorder_names_both_calls() -> None:
    first = _causes(diagnose_file(FIX / "nccl-mismatch" / "torchrun.log"))[0]
    assert first["cause"] == "collective_mismatch"
    assert "sequence number 17" in first["detail"]
    assert "rank 0: all_reduce #17" in first["detail"] and "rank 1: broadcast #17" in first["detail"]


@pytest.mark.parametrize("case", ["nccl-straggler", "nccl-mismatch"])
def test_sigabrt_after_the_watchdog_is_its_abort_not_a_dead_peer(case: str) -> None:
    found = _causes(diagnose_file(FIX / case / "torchrun.log"))
    died = [f for f in found if f["code"] == "LOG060"]
    assert died and all(f["consequence_of"] == found[0]["code"] for f in died)
    assert "SIGABRT" in died[0]["detail"]


def test_a_sigkill_is_still_a_dead_peer() -> None:
    first = _causes(diagnose_file(FIX / "nccl-peer-died" / "torchrun.log"))[0]
    assert (first["code"], first["cause"], first["consequence_of"]) == ("LOG060", "peer_process_died", None)
    assert "SIGKILL" in first["title"]


def test_flight_dumps_in_a_folder_are_not_read_as_logs() -> None:
    doc = diagnose_file(FIX / "nccl-mismatch")
    read = next(r for r in doc["results"] if r["check"] == "logs.inputs")["data"]["inputs"]
    assert not [i for i in read if "nccl_trace_rank" in i["path"]]
    assert _causes(doc)[0]["cause"] == "collective_mismatch"


def test_settings_meant_to_differ_per_host_are_not_a_finding() -> None:
    """NCCL_HOSTID differs per host by design: the healthy two-rank job has no LOG042."""
    doc = diagnose_file(FIX / "nccl-healthy" / "torchrun.log")
    assert not [f for f in doc["findings"] if f["code"] == "LOG042"]


def test_a_pipe_named_like_a_dump_is_read_as_a_log(tmp_path: Path) -> None:
    """Bad input never hangs: a FIFO is never opened to sniff whether it is a flight-recorder dump."""
    import os
    import threading

    fifo = tmp_path / "nccl_trace_rank_0"
    os.mkfifo(fifo)
    line = b"n1:1:1 [0] include/alloc.h:227 NCCL WARN Cuda failure 'out of memory'\n"

    def feed() -> None:
        with open(fifo, "wb") as f:
            f.write(line)

    t = threading.Thread(target=feed, daemon=True)
    t.start()
    first = _causes(diagnose_file(fifo))[0]
    t.join(10)
    assert first["cause"] == "cuda_oom"


def test_json_says_which_rules_matched_and_what_the_dumps_hold() -> None:
    doc = diagnose_file(FIX / "nccl-mismatch" / "torchrun.log")
    data = next(r for r in doc["results"] if r["check"] == "logs.diagnose")["data"]
    wd = next(x for x in data["rules_matched"] if x["rule"] == "watchdog_timeout")
    assert wd["family"] == "torch" and wd["role"] == "consequence" and wd["lines"] >= 2 and wd["meaning"]
    assert data["flight_recorder"]["files"] == 2 and data["flight_recorder"]["groups"][0]["mismatch_seq"] == 17


def test_a_segfaulted_rank_is_named_with_its_signal() -> None:
    """H200 capture: rank 1 died of SIGSEGV at step 5; rank 0, left waiting, is not the cause."""
    first = _causes(diagnose_file(FIX / "nccl-peer-segv" / "torchrun.log"))[0]
    assert (first["code"], first["cause"], first["ranks"]) == ("LOG060", "peer_process_died", [1])
    assert "SIGSEGV" in first["title"]


def test_a_cpu_tensor_on_an_nccl_group_is_the_cause_not_the_exit_it_led_to() -> None:
    """H200 capture: both ranks passed a CPU tensor to all_reduce on a group made with "nccl" alone."""
    found = _causes(diagnose_file(FIX / "nccl-cpu-tensor" / "torchrun.log"))
    assert (found[0]["code"], found[0]["ranks"]) == ("LOG044", [0, 1])
    assert "cpu tensor" in found[0]["title"] and "cpu:gloo,cuda:nccl" in found[0]["remedy"]["summary"]
    # The ranks' exits are what the error led to, not a second cause.
    assert [(f["code"], f["consequence_of"]) for f in found[1:]] == [("LOG060", "LOG044")]


def test_an_nccl_algo_nccl_does_not_know_is_the_cause_not_a_shared_gpu() -> None:
    """NCCL 2.24+ rejects NCCL_ALGO=Bogus at init (tuning.cc parseList) with ncclInvalidUsage, the result a duplicate GPU
    also gives: the WARN that says which setting is the verdict, and no duplicate-GPU guess beside it."""
    doc = diagnose_file(FIX / "nccl-algo-bogus" / "torchrun.log")
    found = _causes(doc)
    assert (found[0]["code"], found[0]["cause"]) == ("LOG143", "other")
    assert found[0]["title"].endswith("NCCL_ALGO ('Bogus') names 'Bogus', which is not an algorithm this NCCL knows")
    assert 'Unrecognized element token "Bogus"' in found[0]["evidence"][0]["text"]
    assert not any(f["code"] == "LOG034" for f in doc["findings"])


def test_invalid_usage_beside_a_warn_no_rule_reads_is_not_called_a_shared_gpu(tmp_path: Path) -> None:
    """The same capture with its WARN reworded (standing in for a newer NCCL's message no rule knows yet): the reason
    line is in the logs, so LOG034's "the reason line is not in the logs" would be false. It is quoted instead."""
    log = tmp_path / "torchrun.log"
    text = (FIX / "nccl-algo-bogus" / "torchrun.log").read_text()
    log.write_text(text.replace('Unrecognized element token "Bogus" when parsing "Bogus"',
                                "Frobnicator table is out of range for this fabric"))
    doc = diagnose_file(log)
    assert not any(f["code"] == "LOG034" for f in doc["findings"])
    quoted = [f for f in doc["findings"] if f["code"] == "LOG080"]
    assert quoted and "Frobnicator table is out of range" in quoted[0]["title"]


def test_invalid_usage_alone_is_still_read_as_a_shared_gpu(tmp_path: Path) -> None:
    """Near-miss: the same log with the reason gone (NCCL's WARN and the "Last error:" line torch repeats it on, as a
    traceback cut short shows) keeps the duplicate-GPU reading."""
    log = tmp_path / "torchrun.log"
    text = (FIX / "nccl-algo-bogus" / "torchrun.log").read_text()
    log.write_text("".join(ln + "\n" for ln in text.splitlines() if "Unrecognized element" not in ln))
    found = _causes(diagnose_file(log))
    assert found[0]["code"] == "LOG034"


def test_a_count_mismatch_nccl_completed_leaves_a_healthy_log() -> None:
    """NCCL does not compare counts across ranks: rank 1's all_reduce of twice the elements completed on both ranks
    and the job exited 0. The log holds nothing to find, and the diagnosis says nothing went wrong."""
    doc = diagnose_file(FIX / "nccl-size-mismatch-silent" / "torchrun.log")
    assert _causes(doc) == [] and not any(f["severity"] == "error" for f in doc["findings"])


def test_a_node_that_never_came_offers_the_launcher_among_its_causes() -> None:
    """torchrun --nnodes 2 started on one node: the rendezvous timeout reads as ranks that never joined, with a node
    never started (wrong --nnodes) named as the alternative; no placeholder counts in the title."""
    doc = diagnose_file(FIX / "nccl-nnodes-two" / "torchrun.log")
    found = _causes(doc)
    assert found[0]["code"] == "LOG012"
    assert found[0]["title"] == "the rendezvous waited for ranks that never arrived"
    assert "launcher_misconfig" in [f["cause"] for f in found[:3]]


def test_nccl_proto_entries_nccl_refuses_are_named() -> None:
    """NCCL 2.24+'s parseList refuses an entry after the first without a collective prefix, and a collective it does
    not have: both are the setting, not a shared GPU."""
    for case, words in (("nccl-proto-noprefix", "NCCL_PROTO ('LL,Simple;broadcast') has an entry after the first "
                                                "without a collective prefix"),
                        ("nccl-proto-badprefix", "names 'frobnicate' before ':', which is not a collective NCCL knows")):
        found = _causes(diagnose_file(FIX / case / "torchrun.log"))
        assert (found[0]["code"], found[0]["cause"]) == ("LOG143", "other"), case
        assert words in found[0]["title"], found[0]["title"]


def test_a_rank_that_returned_early_is_a_mismatch_not_a_straggler() -> None:
    """Rank 1 ran out of data and returned (exit 0); rank 0's next all_reduce failed at once with ncclRemoteError.
    torch then printed "Received a dump signal due to a collective timeout" although nothing timed out: that line
    follows any failure the watchdog caught. torchrun reports rank 0 alone, so rank 1 ended with status 0."""
    for log in (FIX / "nccl-fewer-steps" / "torchrun.log",):
        found = _causes(diagnose_file(log))
        assert (found[0]["code"], found[0]["cause"]) == ("LOG152", "collective_mismatch"), [f["code"] for f in found]
        assert found[0]["title"].startswith("rank 1 exited with status 0")
        assert not any(f["code"] == "LOG051" for f in found)


def test_the_dump_signal_line_after_a_real_timeout_is_still_a_timeout() -> None:
    """Near-miss: in the straggler capture the same line follows "Watchdog caught collective operation timeout"."""
    found = _causes(diagnose_file(FIX / "nccl-straggler" / "torchrun.log"))
    assert found[0]["code"] == "LOG051"


def test_a_dead_peer_that_its_launcher_reports_stays_a_dead_peer() -> None:
    """Near-miss of the rank that returned early: a rank killed by SIGKILL is in torchrun's report."""
    for case in ("nccl-peer-died", "nccl-peer-segv", "nccl-raise-step"):
        found = _causes(diagnose_file(FIX / case / "torchrun.log"))
        assert (found[0]["code"], found[0]["cause"]) == ("LOG060", "peer_process_died"), case


def test_the_hooks_own_mismatch_report_is_read_with_each_ranks_call() -> None:
    """commdoctor.hooks raised CollectiveMismatchError on a real NCCL job: `commdoctor logs` on that output says a
    mismatch with both calls (it said "unrecognised failure" before), for the count mismatch NCCL itself lets pass."""
    found = _causes(diagnose_file(FIX / "nccl-hooks-size-mismatch" / "torchrun.log"))
    assert (found[0]["code"], found[0]["cause"]) == ("LOG050", "collective_mismatch")
    assert "they differ in shapes" in found[0]["detail"]
    assert "rank 0: all_reduce(SUM) float32 [16384] at /workspace/job.py:69" in found[0]["detail"]
    assert "rank 1: all_reduce(SUM) float32 [32768] at /workspace/job.py:65" in found[0]["detail"]
    dtype = _causes(diagnose_file(FIX / "nccl-hooks-dtype-mismatch" / "torchrun.log"))[0]
    assert dtype["code"] == "LOG050" and "float64 [4096]" in dtype["detail"]


def test_the_hooks_notice_of_a_lost_side_channel_is_no_mismatch(tmp_path: Path) -> None:
    """Near-miss: the hooks' warning when a peer's side channel closes (hooks/core.py) names a rank and no mismatch."""
    doc = diagnose_lines(tmp_path / "w.log",
                         "[rank0]:commdoctor.hooks: lost the side channel to rank 1 (connection closed); calls are no "
                         "longer checked against that rank (training continues, recording continues)",
                         "[rank0]:   rank 1: all_reduce(SUM) float32 [16384] at train.py:69")
    assert not any(f["code"] == "LOG050" for f in doc["findings"])


def test_an_interface_several_ranks_of_a_host_list_is_named_once() -> None:
    """Both ranks of the NCCL_SOCKET_IFNAME=lo capture list lo:127.0.0.1; the note names it once (it said it twice)."""
    doc = diagnose_file(FIX / "nccl-healthy-lo" / "torchrun.log")
    note = next(f for f in doc["findings"] if f["code"] == "LOG020")
    assert note["title"].endswith(": lo:127.0.0.1 is loopback") and note["cause"] is None


def test_an_exclude_list_that_leaves_nothing_is_said_so() -> None:
    """NCCL_SOCKET_IFNAME=^eth,lo,...: nothing was missing, every interface was left out. The finding says that,
    where it said the host lacked interfaces named 'eth', 'lo'. Near-miss: eth9 (no ^) is still a name it lacks."""
    found = _causes(diagnose_file(FIX / "nccl-ifname-exclude-all" / "torchrun.log"))
    assert found[0]["code"] == "NET001"
    assert found[0]["title"].endswith("'br' to leave out (its leading ^), which leaves host vm no interface with an "
                                      "address")
    bad = _causes(diagnose_file(FIX / "nccl-bad-ifname" / "torchrun.log"))[0]
    assert "to leave out" not in bad["title"] and "'eth9'" in bad["title"]


def test_the_port_torchs_store_could_not_listen_on_is_named() -> None:
    """torch's TCPStore: "... port: 29807, useIpv6: false, code: -98, name: EADDRINUSE" names the port; the finding
    said "port (not named in the message)"."""
    first = _causes(diagnose_file(FIX / "nccl-port-taken" / "torchrun.log"))[0]
    assert first["title"] == "port 29807 is already in use on the rendezvous host"


def test_the_socket_transports_gdr_line_is_no_missing_peer_memory_module() -> None:
    """NCCL 2.28 prints "NET/Socket : GPU Direct RDMA Disabled for HCA 0 'eth0'" for every socket NIC (SUBSYS=ALL):
    sockets never move GPU memory directly, so no note about a missing nvidia_peermem (it gave LOG101)."""
    doc = diagnose_file(FIX / "nccl-healthy-subsys-all" / "torchrun.log")
    assert not any(f["code"] == "LOG101" for f in doc["findings"])
