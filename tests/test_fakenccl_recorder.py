"""The NCCL-like test backend records its collectives in torch's flight recorder as NCCL does.

ProcessGroupNCCL enqueues on the caller's thread, so its recorder entries carry the caller's stack (the
H100 dumps in ../shared/gpu-captures/hangs/*/fr name job.py:63 and job.py:69). tests/fakenccl.py hands
each call to gloo on the caller's thread for the same reason; handed over on a thread of its own, the
entries would carry that thread's stack and the hang verdict could not name the user's line.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO, needs_torch, neutral_env

SCRIPT = r"""
import json, os, pickle, sys
sys.path.insert(0, os.getcwd())
import torch, torch.distributed as dist
import torch._C._distributed_c10d as c10d
import tests.fakenccl
dist.init_process_group("fakenccl", init_method="tcp://127.0.0.1:%d", rank=0, world_size=1)
x = torch.ones(8)
dist.all_reduce(x)  # the caller's line
work = dist.broadcast(x, src=0, async_op=True)  # MARK:broadcast
work.wait()
raw = c10d._dump_fr_trace(True, True, False)
if len(sys.argv) > 1:
    open(sys.argv[1], "wb").write(raw)
entries = pickle.loads(raw)["entries"]
print(json.dumps([[e["profiling_name"], e["collective_seq_id"],
                   [[f["filename"].rsplit("/", 1)[-1], f["line"], f["name"]] for f in e["frames"]]] for e in entries]))
dist.destroy_process_group()
"""


@needs_torch
def test_recorder_entries_carry_the_callers_line() -> None:
    from tests.ports import free_port

    env = neutral_env()
    env["TORCH_FR_BUFFER_SIZE"] = "100"
    p = subprocess.run([sys.executable, "-c", SCRIPT % free_port()], cwd=str(REPO), env=env, capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-3000:]
    entries = json.loads(p.stdout.strip().splitlines()[-1])
    assert [(name, seq) for name, seq, _ in entries] == [("gloo:all_reduce", 1), ("gloo:broadcast", 2)]
    for _, _, frames in entries:
        files = [f[0] for f in frames]
        assert "<string>" in files, frames  # the caller (the script, run with -c) is on the recorded stack
        assert "threading.py" not in files, frames  # not a thread of the backend's own


@needs_torch
def test_the_call_site_read_from_a_python_backends_entries_is_the_users_line(tmp_path: Path) -> None:
    """The recorded stack holds the backend's own frames under torch's entry point (fakenccl.py calling gloo):
    the hang verdict must name the line that called broadcast, not the backend's line that ran it."""
    from commdoctor.loaders.flight_recorder import read_dump
    from tests.ports import free_port

    job, dump = tmp_path / "job.py", tmp_path / "rank0.pkl"
    job.write_text(SCRIPT % free_port())
    env = neutral_env()
    env["TORCH_FR_BUFFER_SIZE"] = "100"
    p = subprocess.run([sys.executable, str(job), str(dump)], cwd=str(REPO), env=env, capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-3000:]
    lines = job.read_text().splitlines()
    want = {"all_reduce": next(i for i, t in enumerate(lines, 1) if "the caller's line" in t),
            "broadcast": next(i for i, t in enumerate(lines, 1) if "MARK:broadcast" in t)}
    entries = read_dump(str(dump)).entries
    assert [e.op for e in entries] == ["all_reduce", "broadcast"]
    for e in entries:
        assert any(f.file.endswith("fakenccl.py") for f in e.frames), e.frames  # the backend is on the stack
        assert e.user_frame is not None and (e.user_frame.file, e.user_frame.line) == (str(job), want[e.op]), \
            e.describe()
