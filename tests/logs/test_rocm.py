"""AMD GPUs: RCCL's start-up warnings and ROCm's own failures, in the formats their sources print.

RCCL keeps NCCL's log format (``host:pid:tid [dev] file:line NCCL WARN ...``) and adds warnings of its own at start-up
(rccl/src/init.cc): NUMA balancing (performance only), a kernel without iommu=pt and an environment without
HSA_FORCE_FINE_GRAIN_PCIE=1 (both can hang peer traffic). ROCm's runtime reports a GPU page fault in words of its own,
and a ROCm build of torch says HIP where a CUDA build says CUDA.
"""

from __future__ import annotations

from pathlib import Path

from logs.test_corpus import diagnose_file
from logs.test_rule_rows import check_row

_PREFIX = "node01:5646:5646 [0] /data/jenkins_workspace/workspace/rccl_release/build/hipify/src/init.cc:"
_NUMA = (_PREFIX + '115 NCCL WARN NUMA auto balancing enabled which can lead to variability in the RCCL performance! '
         'Disable by "sudo sysctl kernel.numa_balancing=0"')
_FINE_GRAIN = (_PREFIX + '140 NCCL WARN Missing "HSA_FORCE_FINE_GRAIN_PCIE=1" from environment which can lead to low RCCL '
               'performance, system instablity or hang!')
_TIMEOUT = ("[rank0]:[E1124 22:41:10.793474328 ProcessGroupNCCL.cpp:1575] [Rank 0] Watchdog caught collective operation "
            "timeout: WorkNCCL(SeqNum=1, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600001 "
            "milliseconds before timing out.")
_FAULT = ("Memory access fault by GPU node-2 (Agent handle: 0x55d8b8e0e4f0) on address 0x7f0a1c000000. Reason: Page not "
          "present or supervisor privilege.")


def _found(path: Path, *lines: str) -> list[tuple[str, str | None, str]]:
    path.write_text("".join(f"{ln}\n" for ln in lines))
    return [(f["code"], f["cause"], f["severity"]) for f in diagnose_file(path)["findings"]]


def test_rows_match_rccls_and_rocms_lines_and_not_their_neighbours() -> None:
    check_row("rccl_numa_note", _NUMA, "NUMA node(s):          2")
    check_row("rccl_fine_grain", _FINE_GRAIN, "export HSA_FORCE_FINE_GRAIN_PCIE=1")
    check_row("cuda_failure", _FAULT, "Memory access to GPU node-2 granted")
    check_row("no_gpu_visible", "RuntimeError: No HIP GPUs are available", "RuntimeError: No HIP GPU selected")


def test_numa_balancing_is_a_note_on_performance_not_a_failure(tmp_path: Path) -> None:
    assert _found(tmp_path / "job.log", _NUMA) == []


def test_no_fine_grained_pcie_memory_is_a_risk_then_a_cause_beside_a_hang(tmp_path: Path) -> None:
    alone = _found(tmp_path / "alone.log", _FINE_GRAIN)
    assert alone[0] == ("LOG111", "other", "warning")
    hung = _found(tmp_path / "hung.log", _FINE_GRAIN, _TIMEOUT)
    assert ("LOG111", "other", "error") in hung and hung[0][0] == "LOG051"
    # near-miss: a job that failed of something specific only printed the warning
    (tmp_path / "oom.log").write_text(_FINE_GRAIN + "\ntorch.OutOfMemoryError: HIP out of memory. Tried to allocate 2.00 GiB\n")
    oom = diagnose_file(tmp_path / "oom.log")["findings"]
    assert oom[0]["code"] == "LOG031"
    # ... where it stays a risk: a warning of its own, not an echo of the out-of-memory
    assert [(f["severity"], f["consequence_of"]) for f in oom if f["code"] == "LOG111"] == [("warning", None)]


def test_a_gpu_page_fault_and_no_visible_gpu_read_as_their_cuda_twins(tmp_path: Path) -> None:
    fault = _found(tmp_path / "fault.log", _FAULT)
    assert fault[0][:2] == ("LOG081", "other")
    none = _found(tmp_path / "none.log", "RuntimeError: No HIP GPUs are available")
    assert none[0][:2] == ("LOG066", "launcher_misconfig")
