"""The process-group stage against real gloo groups, including injected faults."""

from __future__ import annotations

import time

import pytest

from commdoctor.checks.pg import GlooGroupCheck
from commdoctor.probes.pg_init import run_local_group
from tests.conftest import findings, needs_torch, result, run_json, torch_build


@needs_torch
def test_second_rank_never_starts_yields_a_finding_within_the_deadline() -> None:
    t0 = time.monotonic()
    res = run_local_group("gloo", 2, timeout=8.0, start_ranks=[0], sizes=())
    elapsed = time.monotonic() - t0
    assert elapsed < 8.0 + 8.0, f"the probe must hold its deadline, took {elapsed:.1f} s"
    fs = list(GlooGroupCheck().evaluate(res))
    assert fs[0].code == "PG002", [f.code for f in fs]
    assert fs[0].title == "rank(s) 1 never joined the gloo process group within 8 s"
    assert fs[0].ranks == (1,)
    assert any(e.text == "process was never started" for e in fs[0].evidence)
    # Rank 0's own timeout, if it reported one, is a consequence, not the headline.
    assert all(f.consequence_of == "PG002" for f in fs[1:])


@needs_torch
def test_missing_gloo_interface_is_reported_with_glooss_own_error() -> None:
    doc, p = run_json("run", "--select", "PG", "--pg-timeout", "20", env={"GLOO_SOCKET_IFNAME": "eth9"})
    assert p.returncode == 1, p.stderr
    f = findings(doc)[0]
    assert f["code"] == "PG001" and f["cause"] == "wrong_interface"
    assert any("Unable to find address for: eth9" in e["text"] for e in f["evidence"])
    assert "GLOO_SOCKET_IFNAME" in f["remedy"]["summary"]
    assert result(doc, "pg.gloo")["status"] == "failed"


@needs_torch
def test_asking_for_nccl_on_a_cpu_build_is_a_finding_not_a_traceback() -> None:
    doc, p = run_json("run", "--select", "PG", "--backend", "nccl")
    r = result(doc, "pg.nccl")
    host = torch_build()  # asked of torch once per test process (cached), not once more here
    if host["nccl"] and host["gpus"]:
        pytest.skip("this host really has NCCL and GPUs")
    assert p.returncode == 1
    f = findings(doc, "PG007")[0]
    assert f["cause"] == "backend_unavailable" and r["status"] == "failed"
    assert "gloo" in f["remedy"]["summary"]
    assert result(doc, "pg.gloo")["status"] == "skipped"


_FOUR = """
import json, os
from commdoctor.probes import env as envprobe
from commdoctor.probes import pg_init
facts = envprobe.torch_facts(timeout=120, keep_for_rank0=True)
(kept, _), = pg_init._warm
res = pg_init.run_local_group("gloo", 4, timeout=60.0, sizes=(64 << 10,))
print(json.dumps({"kept": kept.pid, "res": res}))
"""


def _in_own_interpreter(code: str) -> dict:  # type: ignore[type-arg]
    """Run ``code`` in an interpreter of its own (one that has not imported torch: there `run` keeps the probe's
    child for rank 0) and return the JSON of its last line."""
    import json
    import subprocess
    import sys

    from tests.conftest import REPO

    p = subprocess.run([sys.executable, "-c", code], cwd=str(REPO), capture_output=True, text=True, timeout=180)
    assert p.returncode == 0, p.stderr[-3000:]
    return dict(json.loads(p.stdout.strip().splitlines()[-1]))


@needs_torch
def test_world_size_four_verifies_every_collective() -> None:
    """The probe's child runs rank 0 and forks ranks 1-3 (a CPU build of torch): four real processes."""
    if torch_build().get("gpu_runtime"):
        pytest.skip("a torch build with CUDA starts every rank as an interpreter of its own")
    doc = _in_own_interpreter(_FOUR)
    res = doc["res"]
    fs = list(GlooGroupCheck().evaluate(res))
    assert fs == []
    pids = {res["ranks"][str(r)]["pid"] for r in range(4)}
    assert len(pids) == 4 and res["ranks"]["0"]["pid"] == doc["kept"]
    assert [bool(res["ranks"][str(r)].get("forked")) for r in range(4)] == [False, True, True, True]
    for r in range(4):
        evs = res["ranks"][str(r)]["events"]
        assert [e["op"] for e in evs if e["event"] == "collective"] == \
            ["all_reduce", "all_gather", "broadcast", "reduce_scatter", "all_to_all"]
        assert all(e["ok"] is not False for e in evs if e["event"] == "collective")
        assert res["ranks"][str(r)]["returncode"] == 0
        assert [e["pid"] for e in evs if e["event"] == "started"] == [res["ranks"][str(r)]["pid"]]
        bw = [e for e in evs if e["event"] == "bw"][0]
        assert bw["busbw_gbps"] == pytest.approx(bw["algbw_gbps"] * 2 * 3 / 4)


_MISSING = """
import json, os, time
from commdoctor.probes import env as envprobe
from commdoctor.probes import pg_init
facts = envprobe.torch_facts(timeout=120, keep_for_rank0=True)
t0 = time.monotonic()
res = pg_init.run_local_group("gloo", 3, timeout=8.0, start_ranks=[0, 1], sizes=())
took = time.monotonic() - t0
alive = [pid for pid in (v["pid"] for v in res["ranks"].values()) if os.path.exists(f"/proc/{pid}")]
print(json.dumps({"res": res, "took": took, "alive": alive}))
"""


@needs_torch
def test_forked_rank_waiting_for_a_rank_that_never_starts_is_stopped_at_the_deadline() -> None:
    """Ranks 0 and 1 (forked) wait for rank 2, which never starts: the deadline holds, both are stopped,
    nothing is left running, and the finding names rank 2."""
    if torch_build().get("gpu_runtime"):
        pytest.skip("a torch build with CUDA starts every rank as an interpreter of its own")
    doc = _in_own_interpreter(_MISSING)
    res = doc["res"]
    assert doc["took"] < 8.0 + 8.0, doc["took"]
    assert res["ranks"]["1"].get("forked") is True
    assert doc["alive"] == []
    for r in ("0", "1"):
        # stopped at our deadline (killed), or ended by its own timeout just before it, as a fresh rank would be
        assert res["ranks"][r].get("killed") or any(e["event"] == "error" for e in res["ranks"][r]["events"]), res
        assert res["ranks"][r]["returncode"] is not None and res["ranks"][r]["returncode"] != 0, res
    fs = list(GlooGroupCheck().evaluate(res))
    assert fs[0].code == "PG002" and fs[0].ranks == (2,), [(f.code, f.title) for f in fs]


_RECORDER = """\
import atexit, json, os, sys
def _record():
    with open(os.environ["CD_TEST_PROCS"], "a") as f:
        f.write(json.dumps({"pid": os.getpid(), "how": sys.orig_argv[1:2], "args": sys.argv[1:3],
                            "torch": "torch" in sys.modules}) + "\\n")
atexit.register(_record)
"""


@needs_torch
def test_run_imports_torch_once_the_probes_interpreter_is_rank_0_and_forks_rank_1(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """`run` asks a child what torch has, then tests a 2-rank group: on a CPU build of torch the child stays,
    forks rank 1 and runs rank 0, so one interpreter imports torch, not three (each import is seconds), and
    the group still passes with every collective verified."""
    import json
    import os

    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(_RECORDER)
    log = tmp_path / "procs.jsonl"
    doc, p = run_json("run", "--select", "ENV,PG", env={"PYTHONPATH": f"{site}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
                                                        "CD_TEST_PROCS": str(log)})
    pg = result(doc, "pg.gloo")
    assert pg["status"] == "passed", p.stderr[-3000:]
    assert pg["data"]["verified"] == ["all_reduce", "all_gather", "broadcast", "reduce_scatter", "all_to_all"]
    assert pg["data"]["between_ranks"] is True
    assert result(doc, "env.torch")["data"]["environment"]["backends"]["gloo"] is True  # the probe's facts came
    procs = [json.loads(line) for line in log.read_text().splitlines()]
    with_torch = sorted((tuple(r["how"]), r["args"][0] if r["args"] else None) for r in procs if r["torch"])
    assert with_torch == [(("-c",), "0")], procs  # the probe's child ran rank 0; rank 1 imported nothing
    assert not any(r["args"][:1] == ["1"] for r in procs), procs  # no interpreter of its own for rank 1


_DIED = """
import json
from commdoctor.probes import env as envprobe
from commdoctor.probes import pg_init
from commdoctor.probes.proc import kill_group
facts = envprobe.torch_facts(timeout=120, keep_for_rank0=True)
(kept, _), = pg_init._warm
kill_group(kept)
kept.wait(timeout=10)
res = pg_init.run_local_group("gloo", 2, timeout=60.0, sizes=())
print(json.dumps({"installed": facts["installed"], "kept": kept.pid, "left": len(pg_init._warm),
                  "ranks": {r: [v["pid"], v["returncode"]] for r, v in res["ranks"].items()}}))
"""


@needs_torch
def test_a_probe_child_that_died_is_not_handed_a_rank() -> None:
    """The kept child is gone (killed, crashed) by the time the group starts: rank 0 starts as a new process.
    In an interpreter of its own: one that has torch loaded asks it instead of keeping a child."""
    doc = _in_own_interpreter(_DIED)
    assert doc["installed"] is True and doc["left"] == 0
    assert all(rc == 0 for _, rc in doc["ranks"].values()), doc
    assert doc["ranks"]["0"][0] != doc["kept"]


_NO_FORK = """
import json, os
os.environ["COMMDOCTOR_FORK_RANKS"] = "0"
from commdoctor.probes import env as envprobe
from commdoctor.probes import pg_init
server = pg_init.start_rank_server()
facts = envprobe.torch_facts(timeout=120, keep_for_rank0=True)
res = pg_init.run_local_group("gloo", 2, timeout=60.0, sizes=())
print(json.dumps({"server": server, "res": res}))
"""


@needs_torch
def test_fork_ranks_0_starts_every_rank_but_the_probes_as_an_interpreter_of_its_own() -> None:
    """COMMDOCTOR_FORK_RANKS=0: no rank server, and the probe's child runs rank 0 but forks nothing; rank 1 is a
    new interpreter, as on a GPU build. The group passes all the same."""
    doc = _in_own_interpreter(_NO_FORK)
    res = doc["res"]
    assert doc["server"] is False
    assert [res["ranks"][r].get("forked") for r in ("0", "1")] == [None, None], res
    assert list(GlooGroupCheck().evaluate(res)) == []
    assert all(res["ranks"][r]["returncode"] == 0 for r in ("0", "1")), res


def test_the_local_groups_store_port_is_outside_the_range_outgoing_connections_take() -> None:
    """Binding port 0 gives a port of the ephemeral range, which any outgoing connection on the host can take before
    the store listens (EADDRINUSE, seen in this suite); the local group's port comes from below that range, free."""
    import socket

    from commdoctor.probes.net import ephemeral_range
    from commdoctor.probes.pg_init import LOW_PORT, free_port

    low = (ephemeral_range() or (32768, 60999))[0]
    picked = [free_port() for _ in range(20)]
    assert all(LOW_PORT <= p < low for p in picked), picked
    for p in picked[:3]:
        with socket.socket() as s:
            s.bind(("127.0.0.1", p))  # nothing listens there
