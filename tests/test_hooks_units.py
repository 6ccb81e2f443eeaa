"""The hooks' pure parts, without a job: the checker's verdicts, call sites, import layering, records lines."""

from __future__ import annotations

import datetime
import json
import os
import subprocess
import sys

import pytest

from commdoctor.core import records
from commdoctor.hooks.checker import STALL, UNVERIFIED, Checker, describe, make_fp, numel_of, ranks_text
from tests.conftest import REPO

AR4 = make_fp("all_reduce", "SUM", "float32", "[[4]]", None, "cpu")


class Net:
    """Checkers of several ranks wired together in memory: each send is delivered at once."""

    def __init__(self, n: int) -> None:
        self.found: dict[int, list] = {r: [] for r in range(n)}
        self.c = {r: Checker(r, self._sender(r), on_mismatch=self.found[r].append) for r in range(n)}

    def _sender(self, src: int):
        def send(peers, fields):
            for p in peers:
                self.c[p].on_message(src, list(fields))
        return send

    def group(self, members=(0, 1), name="0"):
        return {r: self.c[r].add_group(name, tuple(members), "the default group") for r in members}

    def call(self, g, rank: int, seq: int, fp: str, site: str):
        self.c[rank].publish(g[rank], seq, fp, site)
        return self.c[rank].wait(g[rank], seq, 0.0, UNVERIFIED)


def test_agreeing_calls_verify_and_differing_ones_name_every_rank() -> None:
    net = Net(3)
    g = net.group((0, 1, 2))
    for r in range(3):
        v = net.call(g, r, 0, AR4, "t.py:1")
    assert v is None and all(c.poison is None for c in net.c.values())
    for r in range(3):
        fp = AR4 if r < 2 else make_fp("all_reduce", "MAX", "float32", "[[4]]", None, "cpu")
        v = net.call(g, r, 1, fp, f"t.py:{2 if r < 2 else 3}")
    assert v.kind == "fingerprint" and v.differ == ["reduce_op"]
    assert "ranks 0, 1: all_reduce(SUM) float32 [4] at t.py:2" in v.text
    assert "rank 2:     all_reduce(MAX) float32 [4] at t.py:3" in v.text
    # every rank reached the same verdict, and each reported it once
    assert all(len(f) == 1 and f[0].text == v.text for f in net.found.values())


def test_late_peer_leaves_call_unverified_then_checked_when_it_arrives() -> None:
    net = Net(2)
    g = net.group()
    net.c[0].publish(g[0], 0, AR4, "a.py:1")
    assert net.c[0].wait(g[0], 0, 0.0, UNVERIFIED) is UNVERIFIED
    assert net.c[0].wait(g[0], 0, 0.0, STALL) is UNVERIFIED  # stays unverified until the entry arrives
    net.c[1].publish(g[1], 0, make_fp("broadcast", None, "float32", "[[4]]", 0, "cpu"), "a.py:9")
    assert net.c[0].poison is not None and net.c[0].poison.differ == ["op"]


def test_skipped_call_of_same_shape_found_by_call_sites() -> None:
    net = Net(2)
    g = net.group()
    sites = {0: ["A", "B", "A", "B", "A"], 1: ["A", "B", "A", "A", "B"]}  # rank 1 skipped B in round 2
    for seq in range(5):
        for r in (0, 1):
            net.call(g, r, seq, AR4, sites[r][seq])
    m = net.c[0].poison
    assert m is not None and m.kind == "shift" and m.seq == 3 and m.who == [1]
    assert "rank 1 made no call matching rank 0's all_reduce(SUM) float32 [4] at B" in m.text


def test_rank_dependent_branches_with_matching_calls_are_not_flagged() -> None:
    net = Net(2)
    g = net.group()
    for seq in range(6):  # rank 0 always calls from line 10, rank 1 from line 12: legitimate
        net.call(g, 0, seq, AR4, "x.py:10")
        assert net.call(g, 1, seq, AR4, "x.py:12") is None
        assert g[0].verdicts[seq] is None
    assert net.c[0].poison is None


def test_swapped_pair_and_peer_that_left() -> None:
    net = Net(2)
    g = net.group()
    net.call(g, 0, 0, AR4, "X"); net.call(g, 1, 0, AR4, "Y")  # noqa: E702
    net.call(g, 0, 1, AR4, "Y"); v = net.call(g, 1, 1, AR4, "X")  # noqa: E702
    assert v.kind == "order" and sorted(v.who) == [0, 1]
    net2 = Net(2)
    g2 = net2.group()
    net2.call(g2, 0, 0, AR4, "a"); net2.call(g2, 1, 0, AR4, "a")  # noqa: E702
    g2[1].seq = 1  # (the wrapper counts calls)
    net2.c[1].tell_destroyed(g2[1])  # rank 1 destroys the group after #0
    v = net2.call(g2, 0, 1, AR4, "a")
    assert v.kind == "left" and v.who == [1] and "rank 1: made no such call; it destroyed the group after #0" in v.text


def test_stopped_peer_is_not_waited_for() -> None:
    net = Net(3)
    g = net.group((0, 1, 2))
    net.c[0].peer_left(2, "connection closed")
    net.c[1].publish(g[1], 0, AR4, "s")
    assert net.call(g, 0, 0, AR4, "s") is None


def test_p2p_size_mismatch() -> None:
    net = Net(2)
    g = net.group()
    assert net.c[0].p2p(g[0], "send", 1, 0, make_fp("send", None, "float32", "[[4]]", None, "cpu"), "s.py:1") is None
    m = net.c[1].p2p(g[1], "recv", 0, 0, make_fp("recv", None, "float32", "[[8]]", None, "cpu"), "s.py:2")
    assert m is not None and m.kind == "p2p" and "rank 0 sent send float32 [4] at s.py:1" in m.text
    ok = Net(2)
    go = ok.group()
    ok.c[0].p2p(go[0], "send", 1, 0, make_fp("send", None, "float32", "[[2,3]]", None, "cpu"), "a")
    assert ok.c[1].p2p(go[1], "recv", 0, 0, make_fp("recv", None, "float32", "[[6]]", None, "cpu"), "b") is None


@pytest.mark.parametrize("shapes,n", [("[[4]]", 4), ("[[2,3],[5]]", 11), ("[]", 0), ("junk", -1), ("[[-1,4]]", -4)])
def test_numel(shapes: str, n: int) -> None:
    assert numel_of(shapes) == n


def test_text_helpers() -> None:
    assert ranks_text([3, 0, 1, 2, 7]) == "ranks 0-3, 7"
    assert ranks_text([1, 2]) == "ranks 1, 2"
    assert describe(make_fp("broadcast", None, "int64", "[[2],[3,4]]", 1, "cpu"), "t.py:5") == \
        "broadcast int64 [2], [3,4] root=1 at t.py:5"


def test_importing_hooks_is_light_and_offline_path_has_no_torch() -> None:
    code = ("import sys, commdoctor.hooks, commdoctor.hooks.checker, commdoctor.hooks.channel, commdoctor.hooks.callsite;"
            "import commdoctor.hooks.recorder, commdoctor.hooks.errors;"
            "import commdoctor.checks.hooks, commdoctor.loaders.hook_records, commdoctor.commands.records;"
            "print([m for m in ('torch', 'rich', 'textual') if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=str(REPO), timeout=60)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr
    code = "import sys, commdoctor.hooks.core, commdoctor.hooks.group; print(sorted(m for m in ('rich', 'textual') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=str(REPO), timeout=120)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


def test_recorder_lines_read_back_as_call_records(tmp_path) -> None:
    from commdoctor.hooks.recorder import Recorder

    class W:
        def __init__(self, done: bool) -> None:
            self.done = done

        def is_completed(self) -> bool:
            return self.done

    r = Recorder(3, 4, str(tmp_path), thread=False)
    a = ("0", 7, "all_reduce", "SUM", "float32", "[[4],[2,2]]", None, None, "cpu", False, "train.py:88")
    b = ("0", 8, "broadcast", None, "int64", "[[3]]", None, 1, "cpu", True, "train.py:90")
    r.enter(a, W(True))
    r.enter(b, W(False))
    r.flush()
    r.event("mismatch", {"group": "0", "seq": 8, "message": "x", "detail": {"kind": "fingerprint"}})
    r.close()
    prog = records.read_progress([str(tmp_path)])[3]
    assert prog.world_size == 4 and prog.bad_lines == 0
    assert prog.last_entered.seq == 8 and prog.last_entered.root == 1 and prog.last_entered.async_op is True
    assert prog.last_completed.seq == 7 and prog.last_completed.shapes == [[4], [2, 2]]
    assert prog.last_completed.numel == 8 and prog.last_completed.site == "train.py:88"
    assert prog.in_flight.op == "broadcast" and len(prog.mismatches) == 1
    lines = [json.loads(x) for x in open(records.record_path(str(tmp_path), 3))]
    enter = next(x for x in lines if x["kind"] == "enter")
    # every CallRecord field is present, with the schema, and nothing CallRecord does not know but the schema
    assert set(enter) == set(records.CallRecord.__dataclass_fields__) | {"schema"}


def test_recorder_rotates_at_max_bytes_and_readers_follow_the_rotation(tmp_path) -> None:
    from commdoctor.hooks.recorder import Recorder
    from commdoctor.loaders.hook_records import load

    class Done:
        def is_completed(self) -> bool:
            return True

    def call(seq: int) -> tuple:
        return ("0", seq, "all_reduce", "SUM", "float32", "[[4]]", None, None, "cpu", False, f"train.py:{seq}")

    old = Recorder(0, 2, str(tmp_path), thread=False)  # an earlier run: its file becomes .1, then .1 is replaced
    old.enter(call(0), Done())
    old.close()
    r = Recorder(0, 2, str(tmp_path), thread=False, max_bytes=2000)
    for seq in range(60):  # one flush per call: the batched write path rotates too
        r.enter(call(seq), Done())
        r.flush()
    r.close()
    path = records.record_path(str(tmp_path), 0)
    cur = [json.loads(x) for x in open(path)]
    prev = [json.loads(x) for x in open(path + ".1")]
    # each file starts with a header of the same run, so either one reads back on its own
    assert cur[0]["kind"] == prev[0]["kind"] == "header" and cur[0]["started"] == prev[0]["started"]
    assert os.path.getsize(path) < 4000
    seqs = [x["seq"] for x in prev + cur if x["kind"] == "enter"]
    assert seqs == sorted(seqs) and seqs[-1] == 59 and len(seqs) < 60  # older parts rotated away
    # the readers take .1 first, then the current file: the last call is found wherever rotation fell
    assert records.read_progress([str(tmp_path)])[0].last_entered.seq == 59
    pic = load([str(tmp_path)])
    assert pic is not None and max(pic.groups["0"].history[0]) == 59 and pic.paths == [path + ".1", path]

    # a .1 of another run (a new recorder over the same directory) is left out
    Recorder(0, 2, str(tmp_path), thread=False).close()
    assert load([str(tmp_path)]).paths == [path]


def test_only_torchs_own_teardown_abort_is_not_counted_as_the_job_taken_down() -> None:
    """The hooks tests' check for a job taken down forgives one thing: a rank that printed its result and then
    died of torch's own exit with a gloo group never destroyed (SIGABRT, C++'s terminate line alone)."""
    from hooks_support import not_taken_down

    done = {"rank": 1, "error": "CollectiveMismatchError", "returncode": -6,
            "stderr": "terminate called without an active exception\n"}
    assert not_taken_down([done])
    # Near-misses: anything else on stderr, another signal, or no result printed is the job taken down.
    assert not not_taken_down([dict(done, stderr="Fatal Python error: Aborted\nterminate called without an active exception\n")])
    assert not not_taken_down([dict(done, returncode=-9)])
    assert not not_taken_down([dict(done, missing=True)])


class _RacyWork:
    """A work handle keeping c10d's Work::wait(timeout) contract (Work.cpp: "Operation timed out!" when the timeout
    runs out before the work completes; a completed work returns True or rethrows its own exception), completing
    at the moment one of its timed waits runs out: the peer arriving just as the hooks' 50 ms slice ends."""

    def __init__(self, complete_on_wait: int, own_error: str | None = None) -> None:
        self.waits = 0
        self.completed = False
        self.complete_on_wait = complete_on_wait
        self.own_error = own_error

    def wait(self, timeout=None) -> bool:
        self.waits += 1
        if self.completed:
            if self.own_error:
                raise RuntimeError(self.own_error)
            return True
        if self.waits == self.complete_on_wait:
            self.completed = True  # completes after the expiry was decided, before the caller looks
        raise RuntimeError("Operation timed out!")

    def is_completed(self) -> bool:
        return self.completed


class _Quiet:
    """The hooks' per-group state with nothing found: no mismatch poisons the wait."""

    def poisoned(self):
        return None

    def raise_if_known(self, where, e):
        raise AssertionError("no mismatch was found")


def test_a_work_completing_as_a_slice_runs_out_is_waited_for_not_raised() -> None:
    """The hooks wait on gloo in 50 ms slices; a peer that arrives just as one runs out (common on a loaded machine)
    completed the work: the job goes on, as it would without the hooks (a real job failed this way, `Operation
    timed out!` on rank 1 while rank 0 was already in the same call)."""
    from commdoctor.hooks.group import _poll

    w = _RacyWork(complete_on_wait=3)
    assert _poll(w, _Quiet(), ("train.py", 1), datetime.timedelta(0)) is True
    assert w.waits == 4


def test_a_work_that_failed_with_the_same_words_raises_them_once() -> None:
    from commdoctor.hooks.group import _poll

    w = _RacyWork(complete_on_wait=2, own_error="Operation timed out!")
    with pytest.raises(RuntimeError, match="Operation timed out!"):
        _poll(w, _Quiet(), ("train.py", 1), datetime.timedelta(0))
    assert w.waits == 3  # the slice that ran out, one more wait on the completed work, then its own error
    w = _RacyWork(complete_on_wait=1, own_error="Timed out waiting 1800000ms for recv operation")
    with pytest.raises(RuntimeError, match="Operation timed out!|Timed out waiting"):
        _poll(w, _Quiet(), ("train.py", 1), datetime.timedelta(0))
    assert w.waits <= 2
