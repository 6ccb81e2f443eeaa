"""Public failure threads, round 3 (fixtures/logs/threads/*/PROVENANCE.md names each thread).

Each rule row has a real line and a near-miss that must not match; the fixtures run through `commdoctor logs
--json` as a user would (the fixture test of test_threads.py, with this round's cases).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from logs.test_corpus import diagnose_file
from logs.test_rule_rows import check_row
from logs import test_threads as round1

ROWS = [
    # (rule id, real line, near-miss)
    # torch socket.cpp: "The server socket has failed to bind to {addr} (errno: {n} - {msg})." and the torch >= 2.2
    # summary "port: {p}, useIpv6: {b}, code: {-errno}, name: {NAME}". EACCES is a port the user may not bind;
    # errno 98 is a port some process holds (port_in_use).
    ("port_not_permitted", "torch.distributed.DistNetworkError: The server socket has failed to listen on any local "
     "network address. The server socket has failed to bind to [::]:98 (errno: 13 - Permission denied). The server "
     "socket has failed to bind to 0.0.0.0:98 (errno: 13 - Permission denied).",  # KimMeen/Time-LLM#158
     "[W socket.cpp:426] [c10d] The server socket has failed to bind to [::]:25641 (errno: 98 - Address already in "
     "use)."),  # hunto/DIST_KD#10
    ("port_not_permitted", "RuntimeError: The server socket has failed to listen on any local network address. port: "
     "80, useIpv6: 0, code: -13, name: EACCES, message: permission denied",
     "RuntimeError: The server socket has failed to listen on any local network address. port: 29500, useIpv6: 0, "
     "code: -98, name: EADDRINUSE, message: address already in use."),  # om-ai-lab/VLM-R1#289
    # deepspeed/launcher/runner.py: the ssh pre-check of a hostfile node ("Using hostfile at {path} but host={host} was
    # not reachable via ssh"); exit status 255 is ssh's own failure, 1 is the remote command's.
    ("launcher_ssh", "RuntimeError: Using hostfile at /home/552/dz9214/hostfile but host=gadi-gpu-v100-0011 was not "
     "reachable via ssh. If you are running with a single node please remove /home/552/dz9214/hostfile or setup "
     "passwordless ssh.",  # hpcac/2023-APAC-HPC-AI#1
     "subprocess.CalledProcessError: Command 'ssh node1 nvidia-smi' returned non-zero exit status 255."),
    ("launcher_ssh", "subprocess.CalledProcessError: Command 'ssh -o PasswordAuthentication=no 192.168.3.100 hostname' "
     "returned non-zero exit status 255.",  # deepspeedai/DeepSpeed#4907
     "subprocess.CalledProcessError: Command 'ssh -o PasswordAuthentication=no 192.168.3.100 hostname' returned "
     "non-zero exit status 1."),
]


@pytest.mark.parametrize("rule, line, near", ROWS, ids=[f"{r[0]}-{i}" for i, r in enumerate(ROWS)])
def test_row_matches_its_line_and_not_the_near_miss(rule: str, line: str, near: str) -> None:
    check_row(rule, line, near)


def test_permission_denied_on_the_store_port_is_the_launch_setting_not_a_port_in_use(tmp_path: Path) -> None:
    p = tmp_path / "job.log"
    p.write_text("[W socket.cpp:426] [c10d] The server socket has failed to bind to [::]:98 (errno: 13 - Permission "
                 "denied).\n[W socket.cpp:426] [c10d] The server socket has failed to bind to 0.0.0.0:98 (errno: 13 - "
                 "Permission denied).\n")
    found = diagnose_file(p)["findings"]
    assert (found[0]["code"], found[0]["cause"]) == ("LOG016", "launcher_misconfig") and "98" in found[0]["title"]
    assert "port_conflict" not in [f["cause"] for f in found]
    q = tmp_path / "taken.log"  # the same lines with errno 98: the port is held by another process
    q.write_text(p.read_text().replace("13 - Permission denied", "98 - Address already in use"))
    assert diagnose_file(q)["findings"][0]["cause"] == "port_conflict"


def test_ssh_precheck_failure_is_the_launch_not_an_unrecognised_error(tmp_path: Path) -> None:
    p = tmp_path / "ds.log"  # the CalledProcessError and the RuntimeError DeepSpeed raises from it (hpcac/2023-APAC-HPC-AI#1)
    p.write_text("subprocess.CalledProcessError: Command 'ssh -o PasswordAuthentication=no gadi-gpu-v100-0011 hostname' "
                 "returned non-zero exit status 255.\n\nDuring handling of the above exception, another exception "
                 "occurred:\n\nRuntimeError: Using hostfile at /home/u/hostfile but host=gadi-gpu-v100-0011 was not "
                 "reachable via ssh. If you are running with a single node please remove /home/u/hostfile or setup "
                 "passwordless ssh.\n")
    first = diagnose_file(p)["findings"][0]
    assert (first["code"], first["cause"]) == ("LOG065", "launcher_misconfig") and "gadi-gpu-v100-0011" in first["title"]


def test_nvls_invalid_argument_names_an_old_driver_among_the_alternatives(tmp_path: Path) -> None:
    """pytorch/pytorch#150852: NCCL 2.26 built for CUDA 12.6 on a 12.2 driver fails its NVLS setup with 'invalid
    argument', the same line a fabric manager restarted without a GPU reset gives: the fabric stays first, the driver
    is named among the first three."""
    p = tmp_path / "nvls.log"
    p.write_text("[2025-04-08 08:39:46] devgpu263:589012:591652 [0] transport/nvls.cc:254 NCCL WARN Cuda failure 1 "
                 "'invalid argument'\ndevgpu263:589012:591652 [0] NCCL INFO transport/nvls.cc:409 -> 1\n")
    causes = [f["cause"] for f in diagnose_file(p)["findings"]]
    assert causes[0] == "fabric_manager_nvls" and "driver_cuda_mismatch" in causes[:3]
    q = tmp_path / "p2p.log"  # an invalid argument outside NVLS: neither the fabric nor the driver is named
    q.write_text("host:1:2 [0] transport/p2p.cc:275 NCCL WARN Cuda failure 1 'invalid argument'\n")
    assert not {"fabric_manager_nvls", "driver_cuda_mismatch"} & {f["cause"] for f in diagnose_file(q)["findings"]}


# (fixture, the first cause `commdoctor logs --json` must give, causes that must be among the first three)
FIXTURES = [
    ("timellm-158-privileged-port-98", "launcher_misconfig", ()),
    ("hpcac-1-deepspeed-ssh-unreachable", "launcher_misconfig", ()),
]


@pytest.mark.parametrize("slug, first, top3", FIXTURES, ids=[f[0] for f in FIXTURES])
def test_public_thread_fixture_round3(slug: str, first: str | None, top3: tuple[str, ...]) -> None:
    round1.test_public_thread_fixture(slug, first, top3)
