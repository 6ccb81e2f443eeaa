"""Typed facts: one diagnosis, one code, whether a live probe or a log line proved it.

Both sides are real. A 16 MiB tmpfs mounted over /dev/shm in a private mount namespace is measured by
``commdoctor run``, and torch's own failure to share a tensor there is the log line ``commdoctor logs``
reads. A gloo process group asked for an interface this host lacks writes the log line, and
``commdoctor run`` under the same setting checks this host's interfaces. Old codes stay valid
(aliases) in ``explain``, ``--select`` / ``--ignore`` and the JSON.
"""

from __future__ import annotations

import dataclasses
import shlex
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from commdoctor.facts import InterfaceSetting, SharedMemory, interface_from_log, shm_from_log
from commdoctor.core.model import Evidence, Finding, Severity
from tests.conftest import REPO, findings, needs_root, needs_tool, needs_torch, neutral_env, run_cli, run_json
from tests import ports

SHARE = "import torch; torch.zeros(8_000_000).share_memory_()"  # 32 MB into a 16 MiB /dev/shm
GLOO = ("import sys, torch.distributed as dist; "
        "dist.init_process_group('gloo', init_method=f'tcp://127.0.0.1:{sys.argv[1]}', rank=0, world_size=1)")


def free_port() -> int:
    return ports.free_port()


# -- the facts themselves ------------------------------------------------------------------------------


def test_a_fact_cannot_be_changed_once_made() -> None:
    shm = SharedMemory(exists=True, size_bytes=64 << 20, free_bytes=64 << 20, writable=True)
    with pytest.raises(dataclasses.FrozenInstanceError):
        shm.size_bytes = 1 << 40  # type: ignore[misc]
    with pytest.raises((AttributeError, TypeError)):
        shm.note = "a check may not hang its own notes on a shared fact"  # type: ignore[attr-defined]
    iface = InterfaceSetting(var="GLOO_SOCKET_IFNAME", value="eth9", missing=("eth9",))
    with pytest.raises(dataclasses.FrozenInstanceError):
        iface.missing = ()  # type: ignore[misc]


def test_the_probe_fact_keeps_the_json_reports_have_always_carried() -> None:
    from commdoctor.probes.env import shm_facts

    live = shm_facts()
    assert isinstance(live, SharedMemory) and live.origin == "probe"
    d = live.to_dict()
    assert set(d) == {"path", "exists", "size_bytes", "free_bytes", "writable", "fstype"} and d["exists"] is True
    gone = shm_facts("/nonexistent-commdoctor-shm").to_dict()
    assert gone["exists"] is False and "No such file" in gone["error"]


@pytest.mark.parametrize("line, failure, requested", [
    ("node1:4242:4300 [0] misc/shmutils.cc:72 NCCL WARN Error: failed to extend /dev/shm/nccl-Bb1Z4s to 9637892 bytes",
     "create_failed", 9637892),
    ("n2:20:21 [1] include/shm.h:28 NCCL WARN Call to posix_fallocate failed : No space left on device", "no_space", None),
    ("RuntimeError: unable to allocate shared memory(shm) for file </torch_19204_2293592479_0>: No space left on device (28)",
     "no_space", None),
    ("torch.distributed.elastic.multiprocessing.api:[ERROR] failed (exitcode: -7) local_rank: 0 (pid: 8262)", "sigbus", None),
])
def test_log_lines_become_the_same_fact(line: str, failure: str, requested: int | None) -> None:
    fact = shm_from_log([Evidence("job.log", line, 1, host="node1")])
    assert (fact.origin, fact.failure, fact.requested_bytes, fact.host) == ("log", failure, requested, "node1")
    assert fact.size_bytes is None  # a log proves a failure, not the size: never invented


def test_interface_wording_names_the_setting_of_the_library_that_wrote_it() -> None:
    gloo = interface_from_log([Evidence("a", "RuntimeError: [enforce fail at device.cc:84] ifa != nullptr. "
                                             "Unable to find address for: eth9")])
    assert (gloo.var, gloo.missing, gloo.library) == ("GLOO_SOCKET_IFNAME", ("eth9",), "gloo")
    oob = interface_from_log([Evidence("a", "h:1:2 [0] bootstrap.cc:577 NCCL WARN no device found matching eth9, "
                                            "verify NCCL_OOB_NET_IFNAME")])
    assert (oob.var, oob.missing) == ("NCCL_OOB_NET_IFNAME", ("eth9",))
    nccl = interface_from_log([Evidence("a", "h:1:2 [0] NCCL WARN Bootstrap : no socket interface found")],
                              env={"NCCL_SOCKET_IFNAME": ["ens9"]})
    assert (nccl.var, nccl.value, nccl.missing) == ("NCCL_SOCKET_IFNAME", "ens9", ("ens9",))
    # A near miss: the setting named in an INFO line of a working job is no failure; nothing here reads it.
    none = interface_from_log([Evidence("a", "h:1:2 [0] NCCL INFO NCCL_SOCKET_IFNAME set by environment to eth0")])
    assert none.missing == () and none.library is None


# -- /dev/shm: a real small tmpfs, measured live and failing a real torch call ------------------------


@pytest.fixture(scope="module")
def shm_pair(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], dict[str, Any], str]:
    """(run --json, logs --json, the log's text) from one private mount namespace with a 16 MiB /dev/shm."""
    log = tmp_path_factory.mktemp("shm") / "rank0.log"
    py = shlex.quote(sys.executable)
    cmd = (f"mount -t tmpfs -o size=16m tmpfs /dev/shm && "
           f"{{ {py} -c {shlex.quote(SHARE)} > {shlex.quote(str(log))} 2>&1; "
           f"exec {py} -m commdoctor run --select ENV030 --json; }}")
    p = subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c", cmd], capture_output=True,
                       text=True, timeout=240, cwd=str(REPO), env=neutral_env())
    try:
        import json

        live = json.loads(p.stdout)
    except ValueError:
        raise AssertionError(f"rc={p.returncode}\n{p.stdout[-2000:]}\n{p.stderr[-3000:]}")
    offline, _ = run_json("logs", str(log))
    return live, offline, log.read_text()


@needs_root
@needs_torch
@needs_tool("unshare", "mount")
def test_small_shm_live_and_in_a_log_is_one_finding_with_one_code(shm_pair: tuple[dict[str, Any], dict[str, Any], str]) -> None:
    live, offline, text = shm_pair
    assert "No space left on device" in text  # torch's own words, from the real 16 MiB /dev/shm
    (a,) = findings(live, "ENV030")
    (b,) = findings(offline, "ENV030")
    assert a["title"] == "/dev/shm is only 16 MiB"
    assert b["title"] == "/dev/shm had no room for a shared-memory segment (No space left on device)"
    for f in (a, b):
        assert (f["symbol"], f["cause"], f["aliases"], f["remedy"]["docs"]) == (
            "shm-too-small", "shm_too_small", ["LOG030"], "docs/findings/ENV030.md")
    assert offline["verdict"]["code"] == "ENV030" and offline["verdict"]["severity"] == "error"
    assert not findings(offline, "LOG030")
    assert b["evidence"][0]["text"] in text.splitlines()  # the verbatim line, not a paraphrase
    assert next(r for r in offline["results"] if r["check"] == "logs.diagnose")["data"]["verdict"]["code"] == "ENV030"


# -- the interface: a real gloo init on an interface this host lacks ----------------------------------


@pytest.fixture(scope="module")
def iface_pair(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], Path]:
    """(run --json under GLOO_SOCKET_IFNAME=eth9, the log a real gloo init wrote under the same setting)."""
    have = {name for _i, name in socket.if_nameindex()}
    if "eth9" in have:
        pytest.skip("this host has an interface named eth9")
    log = tmp_path_factory.mktemp("iface") / "rank0.log"
    env = {**neutral_env(), "GLOO_SOCKET_IFNAME": "eth9"}
    p = subprocess.run([sys.executable, "-c", GLOO, str(free_port())], capture_output=True, text=True, timeout=120, env=env)
    log.write_text(p.stdout + p.stderr)
    live, _ = run_json("run", "--select", "NET001", env={"GLOO_SOCKET_IFNAME": "eth9"})
    return live, log


@needs_torch
def test_missing_interface_live_and_in_a_log_is_one_finding_with_one_code(iface_pair: tuple[dict[str, Any], Path]) -> None:
    live, log = iface_pair
    assert "Unable to find address for: eth9" in log.read_text()
    offline, _ = run_json("logs", str(log))
    (a,) = findings(live, "NET001")
    (b,) = findings(offline, "NET001")
    assert a["title"] == "GLOO_SOCKET_IFNAME names 'eth9', which this host does not have"
    assert b["title"] == ("GLOO_SOCKET_IFNAME names 'eth9', which the host that logged it does not have, "
                          "or which holds no address")
    for f in (a, b):
        assert (f["symbol"], f["cause"], f["severity"], f["aliases"]) == (
            "interface-not-found", "wrong_interface", "error", ["LOG021"])
    assert b["remedy"]["env"].get("GLOO_SOCKET_IFNAME") == "<iface>"
    assert offline["verdict"]["code"] == "NET001" and not findings(offline, "LOG021")


@needs_torch
@pytest.mark.parametrize("select, ignore, kept", [
    ("NET", "", True),  # the interface finding from logs now answers to its area's prefix
    ("LOG021", "", True),  # the old code still selects it
    ("LOG0", "", True),
    ("", "LOG021", False),  # and still leaves it out
    ("NET", "LOG021", False),  # the longer prefix decides, whichever name it matched
    ("NET001", "LOG02", True),
    ("ENV", "", False),
])
def test_old_and_new_codes_select_the_log_finding(iface_pair: tuple[dict[str, Any], Path], select: str, ignore: str,
                                                  kept: bool) -> None:
    _live, log = iface_pair
    args = ["logs", str(log)] + (["--select", select] if select else []) + (["--ignore", ignore] if ignore else [])
    doc, p = run_json(*args)
    assert p.returncode in (0, 1), p.stderr
    assert bool(findings(doc, "NET001")) is kept, [f["code"] for f in doc["findings"]]


# -- aliases in explain and the JSON ------------------------------------------------------------------


@pytest.mark.parametrize("old, new, owner", [("LOG030", "ENV030", "env.shm"), ("log021", "NET001", "net.interfaces")])
def test_explain_an_old_code_says_what_it_is_now(old: str, new: str, owner: str) -> None:
    p = run_cli("explain", old)
    assert p.returncode == 0, p.stderr
    head, _, page = p.stdout.partition("\n\n")
    assert head.startswith(f"{old.upper()} is now {new}: one check ({owner})")
    assert page.startswith(f"{new} ") and f"Check {owner} " in page
    assert run_cli("explain", new).stdout == page


def test_aliases_round_trip_and_old_reports_still_read() -> None:
    f = Finding("ENV030", "shm-too-small", Severity.ERROR, "/dev/shm is only 16 MiB", aliases=("LOG030",))
    assert Finding.from_dict(f.to_dict()) == f and f.to_dict()["aliases"] == ["LOG030"]
    old = {k: v for k, v in f.to_dict().items() if k != "aliases"} | {"code": "LOG030"}  # a schema 1.1 finding
    assert Finding.from_dict(old).aliases == () and Finding.from_dict(old).code == "LOG030"


def test_docs_pages_of_old_codes_send_the_reader_on() -> None:
    from commdoctor.render.docsgen import pages

    got = pages()
    assert "[ENV030](ENV030.md)" in got["LOG030.md"] and "[NET001](NET001.md)" in got["LOG021.md"]


def test_hang_names_the_diagnosis_a_log_shows_by_its_one_code(tmp_path: Path) -> None:
    """A hang whose logs hold NCCL's /dev/shm failure points the reader at ENV030, as run and logs do."""
    from commdoctor.loaders.hang_logs import load_hang_logs
    from tests.test_hang_verdict import diagnose, snap

    log = tmp_path / "rank1.log"
    log.write_text("n2:20:21 [1] include/shm.h:28 NCCL WARN Call to posix_fallocate failed : No space left on device\n")
    facts = load_hang_logs([str(log)], {})
    s = snap("stopped")
    s.ranks[2].proc_state = "sleeping"
    v = diagnose(s, logs=facts).verdict()
    assert v is not None and v.code == "HANG013" and v.remedy is not None
    step = next(st for st in v.remedy.steps if str(log) in st)
    assert "the log analyzer found ENV030 (shm_too_small)" in step and "LOG030" not in step


# -- the locked-memory limit: one fact for env.memlock, the backend advice and the MPI check ------------


def test_memlock_fact_reads_sysfs_and_keeps_its_json(tmp_path: Path) -> None:
    from commdoctor.facts import LockedMemory, RdmaDevice
    from commdoctor.probes.env import memlock_facts, rdma_devices

    port = tmp_path / "mlx5_13" / "ports" / "1"
    port.mkdir(parents=True)
    for attr, v in (("state", "4: ACTIVE"), ("phys_state", "5: LinkUp"), ("link_layer", "InfiniBand")):
        (port / attr).write_text(v + "\n")  # no "rate" file: an attribute sysfs lacks stays out of the JSON
    (dev,) = (RdmaDevice.from_sysfs(d) for d in rdma_devices(str(tmp_path)))
    assert (dev.name, dev.ports[0].link_layer, dev.ports[0].rate) == ("mlx5_13", "InfiniBand", None)
    assert dev.to_dict() == {"name": "mlx5_13", "ports": [{"port": "1", "state": "4: ACTIVE", "phys_state": "5: LinkUp",
                                                            "link_layer": "InfiniBand"}]}
    live = memlock_facts()
    assert isinstance(live, LockedMemory) and set(live.to_dict()) == {"soft_bytes", "hard_bytes", "rdma_devices"}
    with pytest.raises(dataclasses.FrozenInstanceError):
        live.soft_bytes = None  # type: ignore[misc]


def test_memlock_check_reads_the_typed_fact_under_a_real_lowered_limit() -> None:
    """prlimit lowers the real limit of the commdoctor process; env.memlock reads it from the typed fact."""
    import shutil

    if not shutil.which("prlimit"):
        pytest.skip("prlimit is not installed")
    doc, p = run_json("run", "--select", "ENV040", prefix=["prlimit", "--memlock=65536:65536"])
    (f,) = findings(doc, "ENV040")
    assert f["title"].startswith("locked memory is limited to 64 KiB"), f["title"]
    data = next(r for r in doc["results"] if r["check"] == "env.memlock")["data"]["memlock"]
    assert (data["soft_bytes"], data["hard_bytes"]) == (65536, 65536) and isinstance(data["rdma_devices"], list)


def test_ptrace_fact_is_typed_and_explains_a_refused_attach() -> None:
    from commdoctor.facts import PtraceAccess
    from commdoctor.probes.env import ptrace_facts
    from commdoctor.probes.stacks import explain_attach_failure

    live = ptrace_facts()
    assert isinstance(live, PtraceAccess)
    assert list(live.to_dict()) == ["uid", "yama_ptrace_scope", "cap_sys_ptrace", "py_spy", "container"]
    with pytest.raises(dataclasses.FrozenInstanceError):
        live.cap_sys_ptrace = True  # type: ignore[misc]
    denied = "Error: Permission denied (os error 13)"  # py-spy's words when the kernel refuses the attach
    locked = PtraceAccess(uid=1000, yama_ptrace_scope=3, cap_sys_ptrace=False)
    assert explain_attach_failure(denied, 42, locked, alive=True)[0] == "ptrace_scope"
    assert explain_attach_failure(denied, 42, None, alive=True)[0] == "ptrace_denied"  # nothing known: no guess


def test_checks_lists_the_old_code_beside_the_new() -> None:
    import json

    line = next(ln for ln in run_cli("checks").stdout.splitlines() if ln.strip().startswith("ENV030"))
    assert line.endswith("(was LOG030)")
    rules = {r["code"]: r for c in json.loads(run_cli("checks", "--json").stdout) for r in c["rules"]}
    assert rules["NET001"]["aliases"] == ["LOG021"] and "aliases" not in rules["ENV031"]
    assert "LOG030" not in rules and "LOG021" not in rules  # declared once, by the check that judges them
