"""Property: any sequence of collectives gives bit-for-bit the same results with the hooks as without.

One long-lived 2-rank job (tests/hooks_prop_worker.py) runs every example twice, hooks on and
hooks off (uninstall/install between, so restoring is exercised too), and reports a hash of every
output; hypothesis draws the sequences. On gloo, and on the NCCL-like test backend (tests/fakenccl.py:
asynchronous work, an expired timed wait takes the process down).
"""

from __future__ import annotations

import json
import os
import subprocess
from typing import Any, Iterator

import pytest

from tests import zygote
from tests.conftest import REPO, needs_torch

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from hooks_support import BACKENDS, free_port  # noqa: E402

pytestmark = needs_torch

DT = st.sampled_from(["float32", "float64", "int32", "int64"])
SHAPE = st.lists(st.integers(1, 4), min_size=1, max_size=3)
RED = st.sampled_from(["SUM", "MAX", "MIN", "PRODUCT"])
ROOT = st.integers(0, 1)
ASYNC = st.booleans()
SUB = st.booleans()

CALL = st.one_of(
    st.fixed_dictionaries({"op": st.just("all_reduce"), "dtype": DT, "shape": SHAPE, "redop": RED, "async": ASYNC, "sub": SUB}),
    st.fixed_dictionaries({"op": st.just("broadcast"), "dtype": DT, "shape": SHAPE, "root": ROOT, "async": ASYNC, "sub": SUB}),
    st.fixed_dictionaries({"op": st.just("reduce"), "dtype": DT, "shape": SHAPE, "root": ROOT, "redop": RED}),
    st.fixed_dictionaries({"op": st.just("all_gather"), "dtype": DT, "shape": SHAPE, "async": ASYNC}),
    st.fixed_dictionaries({"op": st.just("all_gather_into_tensor"), "dtype": DT, "shape": SHAPE, "sub": SUB}),
    st.fixed_dictionaries({"op": st.just("reduce_scatter_tensor"), "dtype": DT, "shape": SHAPE,
                           "redop": st.sampled_from(["SUM", "MAX", "MIN"])}),
    st.fixed_dictionaries({"op": st.just("all_to_all_single"), "dtype": DT, "shape": SHAPE}),
    st.fixed_dictionaries({"op": st.just("gather"), "dtype": DT, "shape": SHAPE, "root": ROOT}),
    st.fixed_dictionaries({"op": st.just("scatter"), "dtype": DT, "shape": SHAPE, "root": ROOT}),
    st.fixed_dictionaries({"op": st.just("barrier"), "async": ASYNC}),
    st.fixed_dictionaries({"op": st.just("send_recv"), "dtype": DT, "shape": SHAPE, "root": ROOT, "async": ASYNC}),
)


class Job:
    def __init__(self, backend: str = "gloo") -> None:
        port = free_port()
        self.procs = []
        for r in range(2):
            env = dict(os.environ, RANK=str(r), WORLD_SIZE="2", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port),
                       PYTHONPATH=str(REPO), OMP_NUM_THREADS="1", COMMDOCTOR_HOOKS_DIR="", HOOKS_BACKEND=backend)
            self.procs.append(zygote.spawn([str(REPO / "tests" / "hooks_prop_worker.py")], stdin=subprocess.PIPE,
                                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=str(REPO)))

    def ask(self, cmd: dict[str, Any], timeout: float = 120) -> list[dict[str, Any]]:
        import select
        import time

        line = json.dumps(cmd) + "\n"
        for p in self.procs:
            p.stdin.write(line)
            p.stdin.flush()
        out = []
        deadline = time.monotonic() + timeout
        for p in self.procs:
            while True:
                left = deadline - time.monotonic()
                ready, _, _ = select.select([p.stdout], [], [], max(0.0, left))
                if not ready:
                    raise AssertionError(f"no reply within {timeout} s; stderr:\n{self.stderr()}")
                got = p.stdout.readline()
                if not got:
                    raise AssertionError(f"worker exited; stderr:\n{self.stderr()}")
                if got.startswith("REPLY "):
                    out.append(json.loads(got[6:]))
                    break
        return out

    def stderr(self) -> str:
        for p in self.procs:
            if p.poll() is None:
                p.kill()
        return "\n".join((p.stderr.read() or "")[-3000:] for p in self.procs)

    def close(self) -> None:
        for p in self.procs:
            try:
                p.stdin.write(json.dumps({"quit": True}) + "\n")
                p.stdin.flush()
            except OSError:
                pass
        for p in self.procs:
            try:
                p.wait(30)
            except subprocess.TimeoutExpired:
                p.kill()


@pytest.fixture(scope="module", params=BACKENDS)
def job(request: pytest.FixtureRequest) -> Iterator[Job]:
    j = Job(request.param)
    yield j
    j.close()


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                  HealthCheck.too_slow])
@given(calls=st.lists(CALL, min_size=1, max_size=8), seed=st.integers(0, 2**16))
def test_results_identical_with_and_without_hooks(job: Job, calls: list[dict[str, Any]], seed: int) -> None:
    replies = job.ask({"calls": calls, "seed": seed})
    for r, rep in enumerate(replies):
        assert "error" not in rep, f"rank {r}: {rep.get('error')}\n{rep.get('traceback')}"
        assert rep["hooked"] == rep["plain"], f"rank {r}: results differ for {calls}"
        assert len(rep["hooked"]) == len(calls)
