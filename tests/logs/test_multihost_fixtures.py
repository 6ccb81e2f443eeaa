"""`commdoctor logs --json` (its pipeline, in this process) on real two-host torchrun gloo jobs (fixtures/logs/multihost, see its PROVENANCE.md).

Each case is a folder with one log per host, as a user saves them, and the cause the job was made to fail
with; healthy runs must get no cause at all. The jobs themselves are made by bench/multihost_logs/gen.py
(too slow for the suite); these are their saved output.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from logs.test_corpus import diagnose_file

ROOT = Path(__file__).resolve().parents[2]
CASES = sorted(p for p in (ROOT / "fixtures" / "logs" / "multihost").iterdir() if (p / "truth.json").exists()
               and not json.loads((p / "truth.json").read_text()).get("ambiguous"))


def test_there_are_cases_of_each_kind() -> None:
    labels = {json.loads((c / "truth.json").read_text())["root_cause"] for c in CASES}
    assert len(CASES) >= 12 and "none" in labels and len(labels) >= 8


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_logs_names_the_cause_of_a_two_host_job(case: Path) -> None:
    want = json.loads((case / "truth.json").read_text())["root_cause"]
    doc = diagnose_file(case / "logs")  # `logs --json` in this process (tests/logs/test_cli.py runs the command)
    causes = [f["cause"] for f in doc["findings"] if f.get("cause")]
    if want == "none":
        assert causes == [], f"a healthy job got {causes}"
    else:
        assert causes and causes[0] == want, f"want {want}, got {causes[:3]}"


def _verdict(folder: Path) -> dict:
    doc = diagnose_file(folder)
    return next(f for f in doc["findings"] if f.get("cause"))


def test_a_host_whose_output_just_ends_is_a_host_that_went_away() -> None:
    """Host b (ranks 2, 3) killed whole mid-run: its file ends after a step line, no error and no launcher report;
    rank 0's monitored_barrier names ranks 2 and 3."""
    first = _verdict(ROOT / "fixtures" / "logs" / "multihost" / "node-lost-2" / "logs")
    assert first["code"] == "LOG060" and first["cause"] == "peer_process_died"
    assert first["title"].startswith("rank(s) 2, 3 stopped mid-run: node1.log ends without an error"), first["title"]


def test_the_same_host_with_its_launchers_report_was_only_late(tmp_path: Path) -> None:
    """Near miss: the same two files, host b's followed by its launcher's report that its workers were stopped (as
    torchrun writes when the job is torn down): b was there to the end, so its ranks were late, not gone."""
    src = ROOT / "fixtures" / "logs" / "multihost" / "node-lost-2" / "logs"
    (tmp_path / "node0.log").write_bytes((src / "node0.log").read_bytes())
    tail = ("W1130 04:43:21.731000 24399 torch/distributed/elastic/multiprocessing/api.py:1028] Sending process 24410 "
            "closing signal SIGTERM\n"
            "E1130 04:43:21.900000 24399 torch/distributed/elastic/multiprocessing/api.py:1002] failed (exitcode: -15) "
            "local_rank: 0 (pid: 24410) of binary: /usr/bin/python\n")
    (tmp_path / "node1.log").write_bytes((src / "node1.log").read_bytes() + tail.encode())
    first = _verdict(tmp_path)
    assert "stopped mid-run" not in first["title"], first["title"]


def test_rank_0_that_never_answered_monitored_barrier_was_late_when_the_wait_timed_out() -> None:
    """Rank 0 sleeps 25 s (two ranks per host, DETAIL): the others' monitored_barrier fails with gloo's send timeout
    under it, rank 0's connections still open. Rank 0 raising instead closes them: the same barrier error, a
    different cause."""
    late = _verdict(ROOT / "fixtures" / "logs" / "multihost" / "r0-straggler-2" / "logs")
    assert (late["code"], late["cause"]) == ("LOG051", "collective_timeout_straggler")
    assert "rank 0 never answered the ranks waiting in it" in late["title"], late["title"]
    died = _verdict(ROOT / "fixtures" / "logs" / "multihost" / "r0-raises-2" / "logs")
    assert died["cause"] == "peer_process_died" and "rank 0" in died["title"], died["title"]


def test_node_rank_0_on_a_host_master_addr_does_not_name_is_a_launcher_misconfiguration() -> None:
    """Host a runs --node-rank 1 and host b --node-rank 0, both with MASTER_ADDR = a (DETAIL): b starts the store on
    its own port, then b and a both time out dialling a's address, where nothing listens."""
    first = _verdict(ROOT / "fixtures" / "logs" / "multihost" / "node-rank-swapped-2" / "logs")
    assert (first["code"], first["cause"]) == ("LOG153", "launcher_misconfig")
    assert "MASTER_ADDR (10.209.105.1:29500) names another machine" in first["title"], first["title"]


def test_a_store_host_that_reached_its_own_store_is_not_stranded() -> None:
    """Near miss: host b alone has a wrong MASTER_ADDR (its own address; TORCH_DISTRIBUTED_DEBUG=INFO). The store host
    connected to its store at its own address and waited for clients; only b timed out, at another address."""
    first = _verdict(ROOT / "fixtures" / "logs" / "multihost" / "master-addr-is-b-3" / "logs")
    assert first["code"] != "LOG153" and first["cause"] == "rendezvous_unreachable", first


def test_the_same_swap_without_debug_output_keeps_the_launcher_among_its_causes() -> None:
    """The swap in plain output (truth.json "ambiguous"): both hosts only time out dialling a's address; nothing says
    which started the store, so the host at MASTER_ADDR never starting reads the same. The launcher stays second."""
    doc = diagnose_file(ROOT / "fixtures" / "logs" / "multihost" / "node-rank-swapped-1" / "logs")
    causes = [f["cause"] for f in doc["findings"] if f.get("cause")]
    assert causes[:2] == ["rendezvous_unreachable", "launcher_misconfig"], causes[:4]


def test_a_launcher_that_lost_the_store_while_the_store_host_ran_alone_was_not_counted() -> None:
    """Host a runs torchrun --nnodes 1, host b --nnodes 2: a runs a job of its own and closes its store; b's agent
    loses it in _assign_worker_ranks, before any worker of b starts."""
    first = _verdict(ROOT / "fixtures" / "logs" / "multihost" / "nnodes-a-1-1" / "logs")
    assert (first["code"], first["cause"]) == ("LOG062", "launcher_misconfig")
    assert "the launcher of node1.log lost the store" in first["title"], first["title"]


def test_a_store_host_that_failed_itself_is_not_a_launcher_misconfiguration(tmp_path: Path) -> None:
    """Near miss: the same two files, the store host's followed by its own crash: b lost the store because a died."""
    src = ROOT / "fixtures" / "logs" / "multihost" / "nnodes-a-1-1" / "logs"
    crash = ("Traceback (most recent call last):\n"
             '  File "/work/train.py", line 41, in <module>\n'
             "    loss = model(batch)\n"
             "RuntimeError: CUDA error: an illegal memory access was encountered\n")
    (tmp_path / "node0.log").write_text((src / "node0.log").read_text()[:200] + crash)
    (tmp_path / "node1.log").write_bytes((src / "node1.log").read_bytes())
    first = _verdict(tmp_path)
    assert first["code"] != "LOG062", first["title"]


def _two_failed(text: str) -> str:
    """Host b's launcher report with a second rank that exited with status 1 (listed under Failures)."""
    other = ("[1]:\n  time      : 2026-11-30_05:27:42\n  host      : mhl140b\n  rank      : 2 (local_rank: 1)\n"
             "  exitcode  : 1 (pid: 22953)\n  error_file: <N/A>\n"
             "  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html\n")
    return text.replace("  <NO_OTHER_FAILURES>\n", other)


def test_an_exception_without_a_rank_prefix_belongs_to_the_one_rank_its_launcher_saw_fail(tmp_path: Path) -> None:
    """Host b's one rank fails to import a module before init_process_group (plain output: no rank prefix); host a's
    rank waits in the store for rank 1's key. The exception is rank 1's: its launcher reports rank 1 alone exiting 1.
    Near miss: with a second rank of that host reported exiting 1 too, the exception is nobody's in particular."""
    src = ROOT / "fixtures" / "logs" / "multihost" / "b-import-error-1" / "logs"
    first = _verdict(src)
    assert (first["code"], first["cause"]) == ("LOG060", "peer_process_died")
    assert first["title"] == ("rank 1 on mhl140b raised an error of its own: ModuleNotFoundError: No module named "
                              "'flash_attn_kernels'"), first["title"]
    (tmp_path / "node0.log").write_bytes((src / "node0.log").read_bytes())
    (tmp_path / "node1.log").write_text(_two_failed((src / "node1.log").read_text()))
    assert "raised an error of its own" not in _verdict(tmp_path)["title"]


def test_the_error_a_rank_raised_is_quoted_as_it_printed_it() -> None:
    """Rank 1 saves a checkpoint to a full folder (host b's 1 MB /dev/shm): torch.save raises. The verdict quotes the
    error without torch's "[rank1]: " line prefix."""
    first = _verdict(ROOT / "fixtures" / "logs" / "multihost" / "disk-full-1" / "logs")
    assert (first["code"], first["cause"]) == ("LOG060", "peer_process_died")
    assert first["title"] == "rank 1 on mhl153b raised an error of its own: RuntimeError: basic_ios::clear: iostream error"


def test_rank_0_that_left_its_loop_early_is_the_one_its_launcher_does_not_report() -> None:
    """Rank 0 (host a, two ranks per host, INFO) ends its loop a step early and exits 0. Rank 1 (host a) and rank 3
    (host b) lose their connection to host a's address; rank 2 is stopped by its own launcher after rank 3 (its lost
    connection is to rank 3). Host a's launcher reports rank 1 alone: rank 0 exited 0."""
    first = _verdict(ROOT / "fixtures" / "logs" / "multihost" / "r0-fewer-steps-3" / "logs")
    assert (first["code"], first["cause"]) == ("LOG152", "collective_mismatch")
    assert first["title"].startswith("the ranks of the host at 10.209.162.1"), first["title"]


def test_rank_0_that_its_launcher_reports_killed_did_not_finish_early(tmp_path: Path) -> None:
    """Near miss: the same logs with rank 0 in host a's launcher report, killed by SIGKILL (the OOM killer)."""
    src = ROOT / "fixtures" / "logs" / "multihost" / "r0-fewer-steps-3" / "logs"
    killed = ("[1]:\n  time      : 2026-11-30_05:40:01\n  host      : mhl162a\n  rank      : 0 (local_rank: 0)\n"
              "  exitcode  : -9 (pid: 20521)\n  error_file: <N/A>\n  traceback : Signal 9 (SIGKILL) received by PID 20521\n")
    (tmp_path / "node0.log").write_text((src / "node0.log").read_text().replace("  <NO_OTHER_FAILURES>\n", killed))
    (tmp_path / "node1.log").write_bytes((src / "node1.log").read_bytes())
    first = _verdict(tmp_path)
    assert first["code"] != "LOG152" and first["cause"] == "peer_process_died", first["title"]
