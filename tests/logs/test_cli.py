"""``commdoctor logs`` as a user runs it: a real subprocess, JSON on stdout, no torch imported."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO, run_cli

OOM_LOG = """\
nodeA:100:100 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>
NCCL version 2.21.5+cuda12.4
nodeA:100:200 [0] NCCL INFO comm 0x55d0 rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId 1000 commId 0xabc - Init START
nodeB:300:300 [1] NCCL INFO Bootstrap : Using eth0:10.0.0.2<0>
nodeB:300:400 [1] NCCL INFO comm 0x77d0 rank 1 nranks 2 cudaDev 1 nvmlDev 1 busId 2000 commId 0xabc - Init START
nodeB:300:400 [1] include/alloc.h:114 NCCL WARN Cuda failure 'out of memory'
nodeB:300:400 [1] NCCL INFO transport/p2p.cc:200 -> 1
nodeA:100:200 [0] misc/socket.cc:49 NCCL WARN socketProgress: Connection closed by remote peer nodeB<40000>
"""


def test_logs_json_from_gzip_and_stdin(tmp_path: Path) -> None:
    gz = tmp_path / "job.log.gz"
    gz.write_bytes(gzip.compress(OOM_LOG.encode()))
    p = run_cli("logs", str(gz), "--json", timeout=120)
    assert p.returncode == 1, p.stderr
    doc = json.loads(p.stdout)
    first = doc["findings"][0]
    assert (first["code"], first["cause"], first["ranks"], first["hosts"]) == ("LOG031", "cuda_oom", [1], ["nodeB"])
    assert first["evidence"][0]["line"] == 6 and "out of memory" in first["evidence"][0]["text"]
    lost = next(f for f in doc["findings"] if f["code"] == "LOG061")
    assert lost["consequence_of"] == "LOG031" and "rank 1" in lost["detail"]
    diag = next(r for r in doc["results"] if r["check"] == "logs.diagnose")
    assert [(r["rank"], r["host"], r["busId"]) for r in diag["data"]["ranks"]] == [(0, "nodeA", "1000"), (1, "nodeB", "2000")]
    # The same log on stdin, with --select leaving only the consequence's code out.
    p2 = run_cli("logs", "-", "--json", "--ignore", "LOG061", input=OOM_LOG, timeout=120)
    doc2 = json.loads(p2.stdout)
    assert doc2["findings"][0]["code"] == "LOG031" and not [f for f in doc2["findings"] if f["code"] == "LOG061"]


def test_missing_file_is_a_usage_error(tmp_path: Path) -> None:
    p = run_cli("logs", str(tmp_path / "nope.log"), timeout=120)
    assert p.returncode == 2 and "no such file" in p.stderr


def test_logs_path_never_imports_torch(tmp_path: Path) -> None:
    log = tmp_path / "a.log"
    log.write_text(OOM_LOG)
    code = (
        "import sys, io, contextlib\n"
        "from commdoctor.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    rc = main(['logs', {str(log)!r}, '--json'])\n"
        "bad = [m for m in sys.modules if m == 'torch' or m.startswith('torch.')]\n"
        "print(rc, bad)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=str(REPO))
    assert out.stdout.strip() == "1 []", out.stderr
