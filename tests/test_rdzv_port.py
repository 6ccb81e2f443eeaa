"""rdzv.port on the master host, with a real holder of the port: a running TCPStore is rank 0's, not a conflict."""

from __future__ import annotations

import select
import socket
import subprocess
import sys
import time
from typing import Iterator

import pytest

from tests.conftest import run_json
from tests import ports

# Held by `python -c` scripts on purpose: their command lines hold newlines, as users' often do.
STORE = """
import sys, time
import torch.distributed as d
s = d.TCPStore('127.0.0.1', int(sys.argv[1]), 2, is_master=True, wait_for_workers=False)
print('ready', flush=True)
time.sleep(90)
"""
PLAIN = """
import socket, sys, time
s = socket.socket(socket.AF_INET6)
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(('::', int(sys.argv[1])))
s.listen(8)
print('ready', flush=True)
while True:
    c, _ = s.accept()
    c.close()
"""


def _free_port() -> int:
    return ports.free_port()


def _hold(script: str, port: int) -> Iterator[subprocess.Popen[str]]:
    p = subprocess.Popen([sys.executable, "-c", script, str(port)], stdout=subprocess.PIPE, text=True)
    try:
        assert p.stdout is not None
        deadline = time.monotonic() + 60
        line = ""
        while "ready" not in line:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([p.stdout], [], [], left)[0]:
                raise AssertionError("the port holder did not get ready within 60 s")
            line = p.stdout.readline()
            if not line and p.poll() is not None:
                raise AssertionError("the port holder exited")
        yield p
    finally:
        p.kill()
        p.wait(timeout=10)


@pytest.fixture
def store_port() -> Iterator[int]:
    port = _free_port()
    yield from (port for _ in _hold(STORE, port))


@pytest.fixture
def plain_port() -> Iterator[int]:
    port = _free_port()
    yield from (port for _ in _hold(PLAIN, port))


def _results(doc: dict) -> dict[str, dict]:  # type: ignore[type-arg]
    return {r["check"]: r for r in doc["results"]}


def test_rank0_store_up_is_not_a_port_conflict(store_port: int) -> None:
    doc, p = run_json("run", "--select", "RDZV", env={"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(store_port)})
    res = _results(doc)
    assert res["rdzv.store"]["status"] == "passed", res["rdzv.store"]
    assert [f["code"] for r in doc["results"] for f in r["findings"]] == [], doc["results"]
    summary = res["rdzv.port"]["summary"]
    assert "running TCPStore" in summary and "rank 0's store is up" in summary
    assert "\n" not in summary and "-c import sys, time import torch.distributed as d" in summary
    assert p.returncode == 0


def test_other_holder_is_still_a_conflict_on_one_line(plain_port: int) -> None:
    doc, _ = run_json("run", "--select", "RDZV", env={"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(plain_port)})
    f = next(f for r in doc["results"] for f in r["findings"] if f["code"] == "RDZV020")
    assert f["severity"] == "error" and "rank 0 will fail to create its store" in f["detail"]
    assert "\n" not in f["title"] and " -c import socket, sys, time s = socket.socket(" in f["title"]
    assert all("\n" not in e["text"] for e in f["evidence"])
