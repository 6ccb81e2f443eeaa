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
work = dist.broadcast(x, src=0, async_op=True)
work.wait()
entries = pickle.loads(c10d._dump_fr_trace(True, True, False))["entries"]
print(json.dumps([[e["profiling_name"], e["collective_seq_id"],
                   [[f["filename"].rsplit("/", 1)[-1], f["line"], f["name"]] for f in e["frames"]]] for e in entries]))
dist.destroy_process_group()
"""


@needs_torch
def test_recorder_entries_carry_the_callers_line() -> None:
    from commdoctor.probes.pg_init import free_port

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
