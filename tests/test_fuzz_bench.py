"""bench/fuzz_readers.py keeps the inputs it was told to keep, and replays one alone with its own times."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent.parent / "bench" / "fuzz_readers.py"


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(BENCH.parent.parent))
    return subprocess.run([sys.executable, str(BENCH), *args], capture_output=True, text=True, timeout=240, env=env)


def test_keep_saves_slow_inputs_and_replay_times_them(tmp_path: Path) -> None:
    keep = tmp_path / "keep"
    # --keep-over 0: every input counts as slow, so each is saved (a real run keeps those over 2 s).
    p = _run("--n", "2", "--reader", "records", "--keep", str(keep), "--keep-over", "0")
    assert p.returncode == 0, p.stderr[-2000:]
    res = json.loads(p.stdout.strip().splitlines()[-1])
    assert res["inputs"] == 2 and res["bugs"] == 0 and res["kept"] == 2
    assert {"over_10s_cpu", "over_10s_wall", "slowest_cpu_s", "mean_cpu_ms", "peak_rss_mb"} <= set(res)
    saved = sorted(keep.iterdir())
    assert [s.name for s in saved] == ["records-00001-slow.json", "records-00002-slow.json"]
    doc = json.loads(saved[0].read_text())
    assert doc["reader"] == "records" and doc["bug"] is None and doc["input"]["files"]

    p = _run("--replay", str(saved[0]))
    assert p.returncode == 0, p.stderr[-2000:]
    again = json.loads(p.stdout)
    assert again["reader"] == "records" and again["bug"] is None and again["outcome"] in ("healthy", "warnings", "errors")
    assert 0 <= again["cpu_s"] <= again["first_run"]["cpu_s"] + 1.0 and again["was"]["cpu_s"] == doc["cpu_s"]
