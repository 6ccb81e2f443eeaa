"""Environment collection for tickets: real probes of this host, real libnccl where installed,
captured nvidia-smi output and a sysfs tree for the hardware this machine does not have."""

from __future__ import annotations

import glob
import json
import os
import re
import resource
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Iterator

import pytest

from commdoctor.probes import sysinfo

FIXTURES = Path(__file__).parent / "fixtures" / "sysinfo"


def _walk(obj: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    yield path, obj
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _walk(v, f"{path}.{k}")
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _walk(v, f"{path}[{i}]")


@pytest.fixture(scope="module")
def collected() -> dict[str, Any]:
    return sysinfo.collect(timeout=90)


def test_every_section_is_there_and_every_gap_says_why(collected: dict[str, Any]) -> None:
    assert collected["schema"] == sysinfo.SCHEMA
    assert list(collected["sections"]) == list(sysinfo.SECTIONS)
    json.dumps(collected)  # JSON-safe as it is
    gaps = [(p, v["unavailable"]) for p, v in _walk(collected) if sysinfo.is_unavailable(v)]
    for path, why in gaps:
        assert isinstance(why, str) and len(why) > 10, (path, why)


def test_host_facts_match_what_the_os_says(collected: dict[str, Any]) -> None:
    s = collected["sections"]
    assert s["host"]["hostname"] == socket.gethostname()
    assert s["host"]["cpus"] == os.cpu_count()
    lo = next(i for i in s["network"]["interfaces"] if i["name"] == "lo")
    assert "127.0.0.1/8" in lo["ipv4"] and lo["kind"] == "loopback" and lo["mtu"] == int(Path("/sys/class/net/lo/mtu").read_text())
    soft, hard = resource.getrlimit(resource.RLIMIT_MEMLOCK)
    want = "unlimited" if soft == resource.RLIM_INFINITY else soft
    assert s["limits"]["ulimits"]["memlock"]["soft"] == want
    st = os.statvfs("/dev/shm")
    assert s["limits"]["dev_shm"]["size_bytes"] == st.f_frsize * st.f_blocks
    assert s["limits"]["ip_local_port_range"] == " ".join(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split())
    assert s["torch"].get("installed") in (True, False) or sysinfo.is_unavailable(s["torch"])


def test_without_nvidia_smi_each_gpu_item_says_so(collected: dict[str, Any]) -> None:
    if os.path.exists("/usr/bin/nvidia-smi"):
        pytest.skip("this host has nvidia-smi")
    gpu = collected["sections"]["gpu"]
    for k in ("driver", "gpus", "topology", "nvlink", "p2p"):
        assert "nvidia-smi not found" in gpu[k]["unavailable"]


def test_gpu_section_from_captured_nvidia_smi(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FIXTURES / "nvidia-smi-h100x4"
    monkeypatch.setenv("PATH", f"{fake}:{os.environ['PATH']}")
    g = sysinfo.gpu_info(timeout=10)
    assert g["driver"] == "550.54.15" and g["cuda_driver_api"] == "12.4"
    assert g["gpus"][0]["name"] == "NVIDIA H100 80GB HBM3" and g["gpus"][0]["bus_id"] == "00000000:18:00.0"
    assert g["topology"]["command"] == "nvidia-smi topo -m" and "NV6" in g["topology"]["output"]
    assert "GNS" in g["p2p"]["output"]
    assert "Link 11: 25 GB/s" in g["nvlink"]["output"]


def test_external_commands_are_bounded_and_missing_ones_say_so() -> None:
    t0 = time.monotonic()
    r = sysinfo.command(["sleep", "30"], timeout=1)
    assert time.monotonic() - t0 < 10
    assert "did not finish within 1 s" in r["unavailable"]
    assert "not found on PATH" in sysinfo.command(["commdoctor-no-such-tool"])["unavailable"]
    ok = sysinfo.command(["uname", "-s"])
    assert ok["rc"] == 0 and ok["output"] == os.uname().sysname


def _nccl_dirs() -> list[str]:
    dirs = [os.environ.get("COMMDOCTOR_TEST_NCCL_DIR", "/tmp/report-nccl")]
    dirs += [os.path.join(p, "nvidia", "nccl", "lib") for p in sys.path if p]
    return [d for d in dirs if glob.glob(os.path.join(d, "**", "libnccl.so*"), recursive=True)]


def test_nccl_version_text() -> None:
    assert sysinfo.nccl_version_text(22105) == "2.21.5"
    assert sysinfo.nccl_version_text(23203) == "2.32.3"
    assert sysinfo.nccl_version_text(2408) == "2.4.8"  # before 2.9 the code had 4 digits


@pytest.mark.skipif(not _nccl_dirs(), reason="no libnccl here (pip install nvidia-nccl-cu12, or set COMMDOCTOR_TEST_NCCL_DIR)")
def test_runtime_nccl_version_is_asked_of_the_library_itself() -> None:
    d = _nccl_dirs()[0]
    lib = sorted(glob.glob(os.path.join(d, "**", "libnccl.so*"), recursive=True))[0]
    # What the library itself says, independently of commdoctor: its header.
    want = None
    for h in glob.glob(os.path.join(os.path.dirname(os.path.dirname(lib)), "include", "nccl.h")):
        text = Path(h).read_text()
        nums = [re.search(rf"#define NCCL_{k}\s+(\d+)", text) for k in ("MAJOR", "MINOR", "PATCH")]
        if all(nums):
            want = ".".join(m.group(1) for m in nums)  # type: ignore[union-attr]
    out = sysinfo.nccl_info({"installed": True, "version": "2.13.0+cpu", "cuda_build": None},
                            environ={"LD_LIBRARY_PATH": os.path.dirname(lib)})
    found = [x for x in out["libraries"] if os.path.realpath(x["path"]) == os.path.realpath(lib)]
    assert found, out
    assert re.fullmatch(r"2\.\d+\.\d+", found[0]["version"])
    if want:
        assert found[0]["version"] == want
    assert "without CUDA" in out["runtime"]["unavailable"]


def test_infiniband_from_a_sysfs_tree(tmp_path: Path) -> None:
    # Values as a ConnectX-7 host shows them (deepseek-ai/DeepEP#60 posted ibv_devinfo of the same ports).
    def dev(name: str, fw: str, state: str, phys: str, layer: str, rate: str, gid: str) -> None:
        base = tmp_path / name
        (base / "ports" / "1" / "gids").mkdir(parents=True)
        (base / "ports" / "1" / "gid_attrs" / "types").mkdir(parents=True)
        (base / "fw_ver").write_text(fw + "\n")
        for attr, v in (("state", state), ("phys_state", phys), ("link_layer", layer), ("rate", rate)):
            (base / "ports" / "1" / attr).write_text(v + "\n")
        (base / "ports" / "1" / "gids" / "0").write_text(gid + "\n")
        (base / "ports" / "1" / "gids" / "1").write_text("0000:0000:0000:0000:0000:0000:0000:0000\n")
        (base / "ports" / "1" / "gid_attrs" / "types" / "0").write_text("IB/RoCE v1\n")

    dev("mlx5_12", "22.38.1900", "1: DOWN", "3: Disabled", "Ethernet", "40 Gb/sec (4X QDR)", "fe80:0000:0000:0000:a288:c2ff:fe30:9a0d")
    dev("mlx5_13", "28.39.2048", "4: ACTIVE", "5: LinkUp", "InfiniBand", "400 Gb/sec (4X NDR)", "fe80:0000:0000:0000:58a2:e103:002a:1640")
    ib = sysinfo.infiniband_info(root=str(tmp_path))
    devs = {d["name"]: d for d in ib["devices"]}
    assert devs["mlx5_13"]["fw_ver"] == "28.39.2048"
    p = devs["mlx5_13"]["ports"][0]
    assert (p["state"], p["phys_state"], p["link_layer"]) == ("4: ACTIVE", "5: LinkUp", "InfiniBand")
    assert devs["mlx5_12"]["ports"][0]["state"] == "1: DOWN"
    assert [g["index"] for g in p["gids"]] == [0] and p["gids"][0]["type"] == "IB/RoCE v1"
    missing = sysinfo.infiniband_info(root=str(tmp_path / "absent"))
    assert "no RDMA devices" in missing["devices"]["unavailable"]


def test_env_keeps_communication_variables_and_counts_the_rest() -> None:
    env = {"NCCL_DEBUG": "INFO", "MASTER_ADDR": "10.0.0.1", "HF_TOKEN": "hf_x", "EDITOR": "vi", "GLOO_SOCKET_IFNAME": "eth0"}
    e = sysinfo.env_info(env)
    assert e["variables"] == {"GLOO_SOCKET_IFNAME": "eth0", "MASTER_ADDR": "10.0.0.1", "NCCL_DEBUG": "INFO"}
    assert e["omitted"] == 2
    assert set(sysinfo.env_info(env, all_env=True)["variables"]) == set(env)


def test_job_processes_are_found_by_their_rank_environment() -> None:
    env = dict(os.environ, RANK="1", LOCAL_RANK="1", WORLD_SIZE="2", MASTER_ADDR="127.0.0.1", NCCL_DEBUG="WARN")
    p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", "--job-marker"], env=env)
    try:
        deadline = time.monotonic() + 20
        mine: list[dict[str, Any]] = []
        while time.monotonic() < deadline and not mine:
            mine = [j for j in sysinfo.job_processes() if j["pid"] == p.pid]
            time.sleep(0.2)
        assert mine, "the rank process was not found"
        j = mine[0]
        assert j["role"] == "rank" and "--job-marker" in j["cmdline"]
        assert j["env"]["RANK"] == "1" and j["env"]["NCCL_DEBUG"] == "WARN"
    finally:
        p.kill()
        p.wait(10)
