"""Each environment finding, from the real condition: variables set wrong in the
child's environment, a small tmpfs mounted over /dev/shm in a private mount
namespace, a lowered memlock limit, a dropped CAP_SYS_PTRACE."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.conftest import findings, needs_root, needs_tool, needs_torch, result, run_json

def clean_env(**kw: str) -> dict[str, str]:
    """The test's own environment less launcher and comm variables, plus ``kw``."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("NCCL_", "GLOO_", "TORCH_NCCL", "TORCH_DISTRIBUTED", "SLURM_", "OMPI_", "PMI"))
           and k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")}
    env.update(kw)
    return env


def run_env(select: str, prefix: list[str] | None = None, extra: tuple[str, ...] = (),  # type: ignore[no-untyped-def]
            **kw: str):
    p_env = clean_env(**kw)
    # env -i: the child sees exactly p_env (run_cli would lay os.environ back over it).
    import json

    argv = [*(prefix or []), "env", "-i", *[f"{k}={v}" for k, v in p_env.items()],
            sys.executable, "-m", "commdoctor", "run", "--select", select, "--json", *extra]
    from tests.conftest import REPO

    p = subprocess.run(argv, capture_output=True, text=True, timeout=180, cwd=str(REPO))
    try:
        return json.loads(p.stdout), p
    except ValueError:
        raise AssertionError(f"rc={p.returncode}\n{p.stdout[-2000:]}\n{p.stderr[-3000:]}")


# -- variables ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def bad_vars():  # type: ignore[no-untyped-def]
    doc, p = run_env("ENV05", NCCL_SOCKET_IFNAM="eth0", NCCL_ASYNC_ERROR_HANDLING="1", NCCL_P2P_DISABLE="1",
                     NCCL_DEBUG="LOUD", GLOO_SOCKET_IFNAME="^docker0,lo", TORCH_DISTRIBUTED_DEBUG="DETAIL",
                     NCCL_IB_CUDA_SUPPORT="1", NCCL_LL_THRESHOLD="0", NCCL_FROBNICATE="1",
                     TORCH_NCCL_BLOCKING_WAIT="1")
    assert p.returncode == 1, p.stderr  # ENV054 is an error
    return doc


def by_title(doc, code):  # type: ignore[no-untyped-def]
    return {f["title"]: f for f in findings(doc, code)}


def test_unknown_variable_gets_did_you_mean(bad_vars) -> None:  # type: ignore[no-untyped-def]
    f = by_title(bad_vars, "ENV050")
    assert "NCCL_SOCKET_IFNAM is not a variable NCCL reads; did you mean NCCL_SOCKET_IFNAME?" in f
    g = f["NCCL_SOCKET_IFNAM is not a variable NCCL reads; did you mean NCCL_SOCKET_IFNAME?"]
    assert g["remedy"]["summary"] == "Rename it to NCCL_SOCKET_IFNAME" and g["severity"] == "warning"
    # No close match: no guess, but still reported.
    assert "NCCL_FROBNICATE is not a variable NCCL reads" in f


def test_nvidia_image_metadata_is_not_an_unknown_variable() -> None:
    # The environment an NVIDIA CUDA image exports (values from the H100 capture
    # in /work/shared/gpu-captures/host): NCCL reads none of it, so none of it is
    # a typo -- while a real typo next to it still is.
    doc, p = run_env("ENV05", NCCL_VERSION="2.28.3-1", NV_LIBNCCL_PACKAGE_VERSION="2.28.3-1",
                     NV_CUDA_LIB_VERSION="12.9.1-1", NVIDIA_VISIBLE_DEVICES="all",
                     NVIDIA_DRIVER_CAPABILITIES="compute,utility", NVIDIA_REQUIRE_CUDA="cuda>=12.9",
                     CUDA_VERSION="12.9.1", NCCL_SOCKET_IFNAM="eth0")
    titles = list(by_title(doc, "ENV050"))
    assert titles == ["NCCL_SOCKET_IFNAM is not a variable NCCL reads; did you mean NCCL_SOCKET_IFNAME?"], titles
    r = result(doc, "env.vars")
    assert "NCCL_VERSION: image metadata, not read by NCCL" in r["summary"], r
    assert r["data"]["image_metadata"] == ["NCCL_VERSION"]


def test_deprecated_variables_name_their_replacement(bad_vars) -> None:  # type: ignore[no-untyped-def]
    f = by_title(bad_vars, "ENV051")
    assert f["NCCL_ASYNC_ERROR_HANDLING is deprecated; use TORCH_NCCL_ASYNC_ERROR_HANDLING"]["remedy"]["summary"] == \
        "Use TORCH_NCCL_ASYNC_ERROR_HANDLING instead of NCCL_ASYNC_ERROR_HANDLING"
    assert "NCCL_IB_CUDA_SUPPORT is deprecated; use NCCL_NET_GDR_LEVEL" in f
    assert "NCCL_LL_THRESHOLD is deprecated and has no effect" in f


def test_costly_settings_are_warnings(bad_vars) -> None:  # type: ignore[no-untyped-def]
    f = by_title(bad_vars, "ENV052")
    p2p = next(v for k, v in f.items() if k.startswith("NCCL_P2P_DISABLE=1"))
    assert p2p["cause"] == "performance_setting" and p2p["remedy"]["summary"].startswith("Unset NCCL_P2P_DISABLE")
    assert any(k.startswith("TORCH_DISTRIBUTED_DEBUG=DETAIL turns off nothing, but every collective") for k in f)
    # No watchdog in blocking-wait mode (ProcessGroupNCCL creates none): on an H200 a DDP rank 45 s late under a 10 s
    # timeout was waited for (fixtures/logs/nccl-blocking-wait-straggler).
    assert any(k.startswith("TORCH_NCCL_BLOCKING_WAIT=1 turns off torch's watchdog: collectives the program does not "
                            "wait() on itself (DDP's gradient all-reduces) never time out") for k in f)


def test_invalid_values_and_gloo_exclude_syntax(bad_vars) -> None:  # type: ignore[no-untyped-def]
    inv = findings(bad_vars, "ENV053")
    assert [f["title"] for f in inv] == ["NCCL_DEBUG='LOUD' is not one of ABORT, INFO, TRACE, VERSION, WARN"]
    g = findings(bad_vars, "ENV054")[0]
    assert g["severity"] == "error" and g["cause"] == "wrong_interface"
    assert g["evidence"][0]["text"] == "GLOO_SOCKET_IFNAME=^docker0,lo"


# -- launcher -------------------------------------------------------------------------


def test_rank_outside_world_and_missing_master() -> None:
    doc, p = run_env("ENV02", RANK="3", WORLD_SIZE="2", LOCAL_RANK="0", LOCAL_WORLD_SIZE="1")
    assert p.returncode == 1
    assert [f["title"] for f in findings(doc, "ENV021")] == ["RANK is 3 but WORLD_SIZE is 2"]
    assert findings(doc, "ENV021")[0]["ranks"] == [3]
    m = findings(doc, "ENV022")[0]
    assert m["title"] == "MASTER_ADDR and MASTER_PORT not set while RANK/WORLD_SIZE are"
    assert m["remedy"]["env"]["MASTER_PORT"] == "29500"


def test_malformed_master_addr_port_and_non_integer_rank() -> None:
    doc, _ = run_env("ENV02", RANK="x", WORLD_SIZE="2", MASTER_ADDR="tcp://node1:29500", MASTER_PORT="70000")
    assert findings(doc, "ENV020")[0]["title"] == "RANK='x' is not a non-negative integer"
    assert findings(doc, "ENV023")[0]["title"] == "MASTER_PORT='70000' is not a port number"
    a = findings(doc, "ENV024")[0]
    assert "drop the scheme ('node1:29500')" in a["remedy"]["summary"]
    doc, _ = run_env("ENV024", RANK="0", WORLD_SIZE="2", MASTER_ADDR="node1:29500", MASTER_PORT="29500")
    assert "MASTER_ADDR=node1, MASTER_PORT=29500" in findings(doc, "ENV024")[0]["remedy"]["summary"]


def test_world_size_that_differs_from_srun_tasks() -> None:
    # One process of what reads as a one-node srun job: checked alone (else it would wait for tasks 1-3 to check in).
    doc, _ = run_env("ENV02", extra=("--this-node-only",), RANK="0", WORLD_SIZE="8", MASTER_ADDR="n1",
                     MASTER_PORT="29500", SLURM_JOB_ID="7", SLURM_PROCID="0", SLURM_NTASKS="4")
    f = findings(doc, "ENV025")[0]
    assert f["title"] == "WORLD_SIZE=8 but srun started 4 tasks" and f["cause"] == "launcher_misconfig"
    assert result(doc, "env.launcher")["summary"].startswith("slurm, rank 0 of 8")


def test_healthy_torchrun_context_has_no_finding() -> None:
    # Local rank 1 of a one-node torchrun job, checked alone (in the job it would only check in with local rank 0).
    doc, p = run_env("ENV02", extra=("--this-node-only",), RANK="1", WORLD_SIZE="2", LOCAL_RANK="1",
                     LOCAL_WORLD_SIZE="2", MASTER_ADDR="127.0.0.1", MASTER_PORT="29500", TORCHELASTIC_RUN_ID="abc",
                     GROUP_RANK="0")
    assert p.returncode == 0 and findings(doc) == []
    assert result(doc, "env.launcher")["summary"] == "torchrun, rank 1 of 2, local rank 1 of 2, master 127.0.0.1:29500"


# -- /dev/shm ------------------------------------------------------------------------

UNSHARE = ["unshare", "--mount", "--propagation", "private", "sh", "-c"]


def in_private_mount(mount_cmds: str, select: str):  # type: ignore[no-untyped-def]
    """Run commdoctor in a private mount namespace after ``mount_cmds`` (a real small /dev/shm)."""
    import json
    import shlex

    from tests.conftest import REPO

    cmd = f"{mount_cmds} && exec {shlex.quote(sys.executable)} -m commdoctor run --select {select} --json"
    p = subprocess.run(UNSHARE + [cmd], capture_output=True, text=True, timeout=180, cwd=str(REPO), env=clean_env())
    try:
        return json.loads(p.stdout), p
    except ValueError:
        raise AssertionError(f"rc={p.returncode}\n{p.stdout[-2000:]}\n{p.stderr[-3000:]}")


@needs_root
@needs_tool("unshare", "mount")
def test_container_default_64m_shm_is_reported() -> None:
    doc, p = in_private_mount("mount -t tmpfs -o size=64m tmpfs /dev/shm", "ENV03")
    f = findings(doc, "ENV030")[0]
    assert f["title"] == "/dev/shm is only 64 MiB"
    assert f["cause"] == "shm_too_small" and "--shm-size" in f["remedy"]["summary"]
    assert f["evidence"][0]["text"].startswith("/dev/shm: size 67108864 bytes")


@needs_root
@needs_tool("unshare", "mount", "fallocate")
def test_nearly_full_shm_is_reported() -> None:
    doc, _ = in_private_mount("mount -t tmpfs -o size=1100m tmpfs /dev/shm && fallocate -l 1050m /dev/shm/stale-segment",
                              "ENV03")
    f = findings(doc, "ENV031")[0]
    assert f["title"].startswith("/dev/shm has only ") and f["title"].endswith("free of 1.1 GiB")
    assert findings(doc, "ENV030") == []


@needs_root
@needs_tool("unshare", "mount")
def test_read_only_shm_is_an_error() -> None:
    doc, p = in_private_mount("mount -t tmpfs -o size=2g,ro tmpfs /dev/shm", "ENV03")
    assert p.returncode == 1
    f = findings(doc, "ENV032")[0]
    assert f["title"] == "/dev/shm is missing or not writable: not writable by this user" and f["severity"] == "error"


# -- memlock and ptrace ---------------------------------------------------------------


def test_lowered_memlock_is_reported_with_its_value() -> None:
    import resource

    def lower() -> None:
        resource.setrlimit(resource.RLIMIT_MEMLOCK, (64 << 10, 64 << 10))

    import json

    from tests.conftest import REPO

    p = subprocess.run([sys.executable, "-m", "commdoctor", "run", "--select", "ENV04", "--json"], preexec_fn=lower,
                       capture_output=True, text=True, timeout=120, cwd=str(REPO), env=clean_env())
    doc = json.loads(p.stdout)
    f = findings(doc, "ENV040")[0]
    assert f["title"].startswith("locked memory is limited to 64 KiB")
    assert f["cause"] == "rlimit_memlock" and "ulimit -l unlimited" in f["remedy"]["summary"]
    # No RDMA device on this machine: informational, with the reason.
    if not os.path.isdir("/sys/class/infiniband") or not os.listdir("/sys/class/infiniband"):
        assert f["severity"] == "info" and "no RDMA device here" in f["title"]


@needs_root
@needs_tool("setpriv")
def test_container_without_cap_sys_ptrace_is_reported() -> None:
    from commdoctor.probes.env import container_kind

    if container_kind() is None:
        pytest.skip("not in a container: dropping CAP_SYS_PTRACE alone does not stop same-user ptrace here")
    drop = ["setpriv", "--inh-caps=-sys_ptrace", "--bounding-set=-sys_ptrace", "--"]
    doc, p = run_env("ENV06", prefix=drop)
    f = findings(doc, "ENV060")[0]
    assert f["title"].endswith("container lacks CAP_SYS_PTRACE")
    assert "--cap-add SYS_PTRACE" in f["remedy"]["summary"]
    doc2, _ = run_env("ENV06")
    assert findings(doc2, "ENV060") == []


@needs_torch
def test_missing_torch_skips_with_the_install_command(tmp_path) -> None:  # type: ignore[no-untyped-def]
    # A real interpreter where torch cannot be imported: a shadowing package that raises ImportError.
    shadow = tmp_path / "torch"
    shadow.mkdir()
    (shadow / "__init__.py").write_text("raise ImportError('No module named torch (shadowed by the test)')\n")
    doc, p = run_env("ENV00,ENV01,PG", PYTHONPATH=str(tmp_path))
    t = result(doc, "env.torch")
    assert t["status"] == "skipped" and "pip install 'commdoctor[torch]'" in t["reason"]
    assert result(doc, "pg.gloo")["status"] == "skipped" and result(doc, "pg.gloo")["reason"] == "blocked by env.torch (skipped)"
    assert p.returncode == 0


@needs_torch
def test_torch_facts_asked_here_when_torch_is_loaded_match_the_child_probes() -> None:
    """Under a launcher `run` has imported torch for the job's store; on a build without a GPU runtime the torch
    facts are then asked of that torch instead of a child that imports it again (a second or more of CPU).
    Both ways must give the same facts, and a process without torch loaded still asks a child."""
    code = (
        "import json, sys\n"
        "from commdoctor.probes import env\n"
        "before = env.torch_facts(timeout=120)\n"
        "loaded_after_child = 'torch' in sys.modules\n"
        "import torch\n"
        "here = env._torch_facts_here()\n"
        "print(json.dumps({'child': before, 'loaded': loaded_after_child, 'here': here,\n"
        "                  'cpu_build': torch.version.cuda is None and getattr(torch.version, 'hip', None) is None}))\n"
    )
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=180)
    assert p.returncode == 0, p.stderr[-3000:]
    doc = json.loads(p.stdout.strip().splitlines()[-1])
    assert doc["loaded"] is False  # the child imported torch, not this process
    assert doc["child"]["installed"] is True and doc["child"]["backends"]["gloo"] is True
    if doc["cpu_build"]:
        assert doc["here"] == doc["child"]
    else:  # a CUDA or ROCm build: asking would start the GPU runtime here; the child probe stays
        assert doc["here"] is None


def test_nccl_algo_and_proto_values_nccl_refuses_are_errors_before_the_job() -> None:
    """The values NCCL 2.28.9 refused at init on the H200 (fixtures/logs/nccl-algo-bogus, nccl-proto-noprefix,
    nccl-proto-badprefix: 'invalid usage' on every rank) are named before any job runs."""
    doc, p = run_env("ENV05", NCCL_ALGO="Bogus", NCCL_PROTO="LL,Simple;broadcast")
    f = {x["title"].split("=")[0]: x for x in findings(doc, "ENV055")}
    assert f["NCCL_ALGO"]["title"] == ("NCCL_ALGO='Bogus': 'Bogus' is not an algorithm NCCL knows (Tree, Ring, "
                                       "CollNetDirect, CollNetChain, NVLS, NVLSTree, PAT)")
    assert f["NCCL_ALGO"]["severity"] == "error" and p.returncode == 1 and "2.24 and later refuse" in f["NCCL_ALGO"]["detail"]
    assert f["NCCL_PROTO"]["title"].endswith("its entry 'broadcast' has no collective before ':' (only the first entry "
                                             "may omit it)")


def test_nccl_list_parsing_follows_nccl() -> None:
    """The third refused value, and near-misses: the forms NCCL's tuning.cc documents, case as NCCL ignores it."""
    from commdoctor.checks.envvars_data import nccl_list_problem

    assert "'frobnicate' is not a collective NCCL knows" in str(nccl_list_problem("NCCL_PROTO", "allreduce:LL;frobnicate:Simple"))
    for name, value in (("NCCL_ALGO", "ring,tree;allreduce:^nvls"), ("NCCL_PROTO", "^LL128"),
                        ("NCCL_PROTO", "LL,Simple;allreduce:^LL"), ("NCCL_ALGO", "NVLSTree"), ("NCCL_ALGO", "pat")):
        assert nccl_list_problem(name, value) is None, value
