"""Shared test helpers: run the real CLI in a subprocess, check for root and tools."""

from __future__ import annotations

import functools
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parent.parent


# What a host or its container image sets that changes what ``commdoctor run`` reports: the communication
# libraries' and launchers' variables, and NVIDIA images' metadata (NCCL_VERSION, NV_*, NVIDIA_*,
# CUDA_VERSION, OMPI_MCA_*). A test sets the ones it is about; it must not inherit the host's, or it
# asserts one thing on a laptop and another in a GPU container. (CUDA_VISIBLE_DEVICES is kept: it is
# which GPUs the host lends, not a setting under test.)
HOST_SETTINGS = ("NCCL_", "GLOO_", "TORCH_NCCL_", "TORCH_DISTRIBUTED_", "TORCHELASTIC_", "PET_", "MASTER_ADDR",
                 "MASTER_PORT", "WORLD_SIZE", "RANK", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK", "ROLE_",
                 "OMPI_", "PMIX_", "PMI_", "UCX_", "HYDRA_", "I_MPI_", "MPI_", "SLURM_", "NV_", "NVIDIA_",
                 "CUDA_VERSION", "CUDA_DRIVER_VERSION", "PL_TORCH_DISTRIBUTED_BACKEND")


def neutral_env(base: dict[str, str] | None = None) -> dict[str, str]:
    """BASE (default: this process's environment) without the host's communication settings."""
    return {k: v for k, v in (os.environ if base is None else base).items() if not k.startswith(HOST_SETTINGS)}


def run_cli(*args: str, env: dict[str, str] | None = None, timeout: float = 180, prefix: list[str] | None = None,
            input: str | None = None) -> subprocess.CompletedProcess[str]:
    """Run ``commdoctor ARGS`` as a user would, in a fresh interpreter, with only the settings ENV names."""
    e = neutral_env()
    e.pop("NO_COLOR", None)
    e.update(env or {})
    argv = [*(prefix or []), sys.executable, "-m", "commdoctor", *args]
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=e, input=input, cwd=str(REPO))


def run_json(*args: str, **kw: Any) -> tuple[dict[str, Any], subprocess.CompletedProcess[str]]:
    p = run_cli(*args, "--json", **kw)
    try:
        return json.loads(p.stdout), p
    except ValueError as e:
        raise AssertionError(f"stdout is not JSON ({e}); rc={p.returncode}\nstdout:\n{p.stdout[-3000:]}\nstderr:\n{p.stderr[-3000:]}")


def findings(doc: dict[str, Any], code: str | None = None) -> list[dict[str, Any]]:
    return [f for f in doc["findings"] if code is None or f["code"] == code]


def result(doc: dict[str, Any], check: str) -> dict[str, Any]:
    for r in doc["results"]:
        if r["check"] == check:
            return r
    raise AssertionError(f"no result for {check}: {[r['check'] for r in doc['results']]}")


def have_torch() -> bool:
    try:
        import importlib.util

        return importlib.util.find_spec("torch") is not None
    except Exception:
        return False


@functools.lru_cache(maxsize=None)
def torch_build() -> dict[str, Any]:
    """What this torch was built with and sees: {"nccl", "mpi", "ucc", "gloo", "gpu_runtime": bool, "gpus": int}
    (gpu_runtime: built with CUDA or ROCm), asked of a child interpreter (the test process need not import torch). Empty where torch is missing."""
    if not have_torch():
        return {}
    code = ("import json, torch, torch.distributed as d\n"
            "print(json.dumps({'nccl': d.is_nccl_available(), 'mpi': d.is_mpi_available(),\n"
            "  'ucc': getattr(d, 'is_ucc_available', lambda: False)(), 'gloo': d.is_gloo_available(),\n"
            "  'gpu_runtime': bool(torch.version.cuda or getattr(torch.version, 'hip', None)),\n"
            "  'gpus': torch.cuda.device_count() if torch.cuda.is_available() else 0}))")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=neutral_env())
    assert p.returncode == 0, p.stderr[-2000:]
    return dict(json.loads(p.stdout.strip().splitlines()[-1]))


def skip_if_built_with(backend: str) -> None:
    """Skip a test about a backend this build lacks, on a build that has it (a CUDA build has NCCL)."""
    if torch_build().get(backend):
        pytest.skip(f"this torch build has {backend}: the case needs a build without it")


needs_torch = pytest.mark.skipif(not have_torch(), reason="torch is not installed (pip install torch==2.13.0)")
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (network namespaces, mounts, capabilities)")


# Where each system tool comes from on Debian, for the skip reasons (the README's optional line installs them).
_PACKAGE_OF = {"ip": "iproute2", "tc": "iproute2", "unshare": "util-linux", "setpriv": "util-linux",
               "mount": "mount", "fallocate": "util-linux", "capsh": "libcap2-bin", "py-spy": "pip: py-spy"}


def needs_tool(*tools: str) -> pytest.MarkDecorator:
    """Skip (never error) where a system tool is missing, saying which package brings it."""
    missing = [t for t in tools if shutil.which(t) is None]
    why = ", ".join(f"{t} ({_PACKAGE_OF.get(t, t)})" for t in missing)
    return pytest.mark.skipif(bool(missing), reason=f"missing tools: {why}")


@pytest.fixture(scope="session")
def pyspy_can_attach() -> None:
    """Skip where py-spy cannot read another process's stacks (no ptrace rights: a container without
    CAP_SYS_PTRACE, or kernel.yama.ptrace_scope); the hang tests need that to mean anything."""
    pyspy = shutil.which("py-spy")
    if pyspy is None:
        pytest.skip("missing tools: py-spy (pip: py-spy)")
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        deadline = time.monotonic() + 30
        while True:  # py-spy may find the interpreter not yet loaded in the first milliseconds
            p = subprocess.run([pyspy, "dump", "--pid", str(child.pid)], capture_output=True, text=True, timeout=30)
            if p.returncode == 0 or time.monotonic() > deadline:
                break
            time.sleep(0.2)
    finally:
        child.kill()
        child.wait(timeout=10)
    if p.returncode != 0:
        pytest.skip(f"py-spy cannot attach to a process here (needs ptrace rights): {(p.stderr or p.stdout).strip()[:200]}")


# A Python warning as warnings.showwarning prints it: "FILE:LINE: CATEGORY: message", then the
# source line, indented. Libraries print these on their own (torch's "Failed to initialize NumPy"
# when numpy is absent), so a test comparing a command's whole stderr must not count them.
_WARNING_HEAD = re.compile(r"^\S.*:\d+: [A-Za-z_]*Warning: ")


def lines_except_warnings(text: str) -> list[str]:
    """The non-blank lines of TEXT, less any Python warning records (head line and its indented source)."""
    kept: list[str] = []
    in_warning = False
    for ln in text.splitlines():
        if _WARNING_HEAD.match(ln):
            in_warning = True
            continue
        if in_warning and ln.startswith((" ", "\t")):
            continue
        in_warning = False
        if ln.strip():
            kept.append(ln)
    return kept


# -- running in parallel (pytest-xdist; addopts in pyproject.toml) ------------------------------------
#
# Most tests wait on real jobs (process groups, torchrun, hung ranks) rather than compute, so more
# workers than cores pays. Two kinds of tests must stay together on one worker:
# - tests that build network namespaces (marker `netns`): a module's namespaces, bridges and addresses
#   have fixed names (cdm-*, cdn-*, cdh-*: one prefix per module), so two tests of one module at once
#   would tear down each other's lab. Modules use different names and subnets, so they may overlap;
# - tests that share a module-scoped fixture (one job whose result several tests read): xdist gives
#   every worker its own copy of such a fixture, so spreading them would start the job once per worker.


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """``-n auto``: two workers per core, at least 2 and at most 8. Most tests wait on real jobs (deadlines,
    hangs that must last), so one worker per core left the cores idle half the time. Before the suite's
    torch imports were cut (289 per run, then 211 and fewer: forked ranks, one zygote per lab host), twice the
    cores starved the real multi-node jobs (a node's heartbeat stalled past node 0's 10 s limit while torch
    imported); docs/testing.md has the figures."""
    return max(2, min(8, 2 * (os.cpu_count() or 1)))


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook, which reads the groups into the test ids
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if item.get_closest_marker("xdist_group"):
            continue
        if item.get_closest_marker("netns"):
            item.add_marker(pytest.mark.xdist_group("netns:" + item.nodeid.split("::")[0]))
            continue
        info = getattr(item, "_fixtureinfo", None)
        defs = info.name2fixturedefs.values() if info is not None else []
        if any(d[-1].scope == "module" for d in defs if d):
            item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::")[0]))


# -- longest first (the scheduler behind `--dist loadgroup`) --------------------------------------------
#
# xdist hands a worker the next unit (one test, or one xdist_group) in collection order, largest group
# first by test count. On 2 workers that left a long job (a child pytest, a multi-node lab) to start
# last and run on alone while the other worker idled. tests/durations.json holds what each test took
# (setup, call and teardown together) in a past run; the scheduler below hands out the unit expected to
# take longest first, so the two workers end together. A test missing from the file (a new one) counts
# as DEFAULT_S; `pytest --store-durations` rewrites the file from the run it ends.

DURATIONS = REPO / "tests" / "durations.json"
DEFAULT_S = 1.0


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--store-durations", action="store_true", default=False,
                     help="write each test's duration (setup+call+teardown) to tests/durations.json for the "
                          "longest-first scheduling of the parallel run")
    parser.addoption("--cpu-profile", metavar="DIR", default=None,
                     help="write each test's CPU seconds (this process's and its waited-for children's, user+system) "
                          "and wall seconds to DIR/<pid>.jsonl, one file per xdist worker")


def load_durations(path: Path = DURATIONS) -> dict[str, float]:
    """nodeid -> seconds from PATH; empty where the file is missing or unreadable (the order is then xdist's)."""
    try:
        data = json.loads(path.read_text())
        return {str(k): float(v) for k, v in data.items()}
    except (OSError, ValueError, AttributeError, TypeError):
        return {}


def _bare_nodeid(nodeid: str) -> str:
    """A test id as the durations file keys it: without the ``@group`` suffix xdist adds."""
    at, bracket = nodeid.rfind("@"), nodeid.rfind("]")
    return nodeid[:at] if at > bracket else nodeid


def longest_unit(queue: dict[str, dict[str, bool]], durations: dict[str, float], costs: dict[str, float]) -> str:
    """The scope in QUEUE (scope -> its test ids) expected to take longest: the sum of its tests' DURATIONS,
    DEFAULT_S for a test not in them; COSTS caches each scope's sum. Ties go to the earlier scope."""
    def cost(scope: str) -> float:
        if scope not in costs:
            costs[scope] = sum(durations.get(_bare_nodeid(n), DEFAULT_S) for n in queue[scope])
        return costs[scope]

    return max(queue, key=cost)


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    if config.getoption("dist", None) != "loadgroup":
        return None
    from xdist.scheduler import LoadGroupScheduling

    durations = load_durations()

    class LongestFirst(LoadGroupScheduling):  # type: ignore[misc]
        """loadgroup, but each free worker gets the unit with the most expected seconds."""

        def __init__(self, config: pytest.Config, log: Any = None) -> None:
            super().__init__(config, log)
            self.costs: dict[str, float] = {}

        def _assign_work_unit(self, node: Any) -> None:
            assert self.workqueue
            scope = longest_unit(self.workqueue, durations, self.costs)
            self.workqueue.move_to_end(scope, last=False)  # the parent hands out the queue's first unit
            super()._assign_work_unit(node)

    return LongestFirst(config, log)


class _DurationRecorder:
    """Sums each test's phases as the reports come in (on the controller under xdist) and writes them."""

    def __init__(self) -> None:
        self.took: dict[str, float] = {}

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        key = _bare_nodeid(report.nodeid)
        self.took[key] = self.took.get(key, 0.0) + float(report.duration)

    def pytest_sessionfinish(self) -> None:
        merged = {**load_durations(), **{k: round(v, 2) for k, v in self.took.items()}}
        DURATIONS.write_text(json.dumps(dict(sorted(merged.items())), indent=0) + "\n")


class _CpuProfile:
    """Per-test CPU time, which a shared machine's load does not inflate as it does wall time: the
    suite is CPU-bound (real jobs, each rank importing torch), so this is what to cut."""

    def __init__(self, folder: str) -> None:
        self.path = Path(folder) / f"{os.getpid()}.jsonl"
        self.path.parent.mkdir(parents=True, exist_ok=True)

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item, nextitem: pytest.Item | None) -> Any:
        import resource

        def cpu(who: int) -> float:
            r = resource.getrusage(who)
            return r.ru_utime + r.ru_stime

        s, c, w = cpu(resource.RUSAGE_SELF), cpu(resource.RUSAGE_CHILDREN), time.monotonic()
        yield
        row = {"id": _bare_nodeid(item.nodeid), "self": round(cpu(resource.RUSAGE_SELF) - s, 3),
               "children": round(cpu(resource.RUSAGE_CHILDREN) - c, 3), "wall": round(time.monotonic() - w, 3)}
        with self.path.open("a") as f:
            f.write(json.dumps(row) + "\n")


def _compile_bytecode() -> None:
    """Write the bytecode of commdoctor and the tests' helper modules once, before any job starts.

    The suite starts hundreds of Python processes that import commdoctor (every CLI run, rank and agent).
    Where PYTHONDONTWRITEBYTECODE is set (as on these machines) or the checkout is new, each of them would
    compile the modules it imports again: about 0.2 s of CPU per `commdoctor` process, half of a `logs`
    run. compileall writes the caches regardless, and only for files whose cache is stale."""
    import compileall

    try:
        compileall.compile_dir(str(REPO / "commdoctor"), quiet=2, workers=1)
        for f in (REPO / "tests").rglob("*.py"):
            if not f.name.startswith("test_") and f.name != "conftest.py":
                compileall.compile_file(str(f), quiet=2)
    except OSError:  # a read-only checkout: the processes compile as they go, only slower
        pass


def _rewrite_tests_once(config: pytest.Config) -> None:
    """Rewrite the test modules' asserts once, before the workers start.

    pytest rewrites the asserts of every test module (and conftest.py) it imports and keeps the result in
    __pycache__, but not where PYTHONDONTWRITEBYTECODE is set (as on these machines): there every xdist worker
    rewrote every module again, about 3.4 s of CPU each time. This writes pytest's own cache with pytest's own
    functions (pinned in pyproject.toml); each worker checks a cached file against its source's size and mtime as
    usual. With another pytest, or asserts not rewritten, the workers rewrite as they go."""
    try:
        from _pytest.assertion.rewrite import PYC_TAIL, _read_pyc, _rewrite_test, _write_pyc, get_cache_dir
        from _pytest.assertion import assertstate_key
        state = config.stash[assertstate_key]
    except (ImportError, KeyError):
        return
    for fn in sorted((REPO / "tests").rglob("*.py")):
        if not (fn.name.startswith("test_") or fn.name == "conftest.py"):
            continue
        cache_dir = get_cache_dir(fn)
        pyc = cache_dir / (fn.name[:-3] + PYC_TAIL)
        try:
            if _read_pyc(fn, pyc, state.trace) is not None:
                continue
            cache_dir.mkdir(exist_ok=True)
            source_stat, co = _rewrite_test(fn, config)
            _write_pyc(state, co, source_stat, pyc)
        except (OSError, SyntaxError):  # a read-only checkout, or a module pytest will report itself
            continue


def pytest_configure(config: pytest.Config) -> None:
    # The tests run real jobs side by side: a plain `commdoctor run` in one test must not check the torchrun
    # agent of another test's job (a stopped or hung one answers nobody). Tests that want that discovery set it.
    os.environ["COMMDOCTOR_FIND_JOBS"] = "0"
    if not hasattr(config, "workerinput"):  # once, on the controller (or the only process)
        _compile_bytecode()
        if config.getoption("numprocesses", None) not in (None, 0, "0"):
            _rewrite_tests_once(config)
    if config.getoption("--store-durations") and not hasattr(config, "workerinput"):
        config.pluginmanager.register(_DurationRecorder(), "commdoctor-durations")
    folder = config.getoption("--cpu-profile")
    if folder and (hasattr(config, "workerinput") or config.getoption("numprocesses", None) in (None, 0)):
        config.pluginmanager.register(_CpuProfile(folder), "commdoctor-cpu-profile")
