"""Public failure threads, round 20.

A plugin that refuses the NCCL it was loaded by; DeepSpeed's launcher running one node of a multi-node job; MPICH's
Hydra losing a node's proxy, and MPICH stopping on its own assertion; a hung process's stack inside NCCL's abort; and
a log whose last NCCL line is its NVLS multicast bind.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from logs.test_corpus import diagnose_file
from logs.test_rule_rows import check_row

ROWS = [
    # (rule id, real line, near-miss)
    # aws-ofi-nccl's v1 tuner (aws/aws-ofi-nccl#982) refuses at WARN; its v2+ tuner says the same at INFO and falls back
    ("ofi_tuner_refused", "a100-st-p4de24xlarge-668:789818:790167 [6] ncclResult_t nccl_ofi_tuner_init_v1(size_t, size_t, "
                          "ncclDebugLogger_t):270 NCCL WARN NET/OFI The tuner plugin can not be loaded when explicitly "
                          "choosing an algorithm or protocol with NCCL_ALGO/NCCL_PROTO",
     "The tuner plugin can not be loaded when explicitly choosing an algorithm or protocol with NCCL_ALGO/NCCL_PROTO. "
     "Defaulting to internal tuner."),
    # deepspeed/launcher/runner.py fetch_hostfile; a hostfile it read is no such note
    ("ds_no_hostfile", "[WARNING] [runner.py:178:fetch_hostfile] Unable to find hostfile, will proceed with training with "
                       "local resources only.",
     "[INFO] [runner.py:570:main] cmd = pdsh -S -f 1024 -w node1,node2 export NCCL_DEBUG=INFO; cd /job; python train.py"),
    # distributed_c10d.py's rendezvous line in a traceback; the rendezvous handler's own frame header is not it
    ("rendezvous_frame", "    store, rank, world_size = next(rendezvous_iterator)",
     '  File "/opt/conda/lib/python3.9/site-packages/torch/distributed/rendezvous.py", line 133, in _tcp_rendezvous_handler'),
    # Hydra's control socket to a node's proxy closed (pmodels/mpich#1872, wrapped after "assert" by the post; #1106);
    # its generic "error waiting for event" names no cause
    ("hydra_proxy_closed", "[mpiexec at tauro] control_cb (./pm/pmiserv/pmiserv_cb.c:202): assert",
     "[mpiexec at tauro] HYD_pmci_wait_for_completion (./pm/pmiserv/pmiserv_pmci.c:197): error waiting for event"),
    ("hydra_proxy_closed", "[mpiexec@lenzcs35] HYD_pmcd_pmiserv_proxy_init_cb (./pm/pmiserv/pmiserv_cb.c:315): assert "
                           "(!closed) failed",
     "[mpiexec@lenzcs35] HYD_pmcd_pmiserv_proxy_init_cb (./pm/pmiserv/pmiserv_cb.c:315): unable to read from proxy"),
    # MPICH's MPIR_Assert_fail (pmodels/mpich#5443); a program's own assert has another shape
    ("mpich_assert", "Assertion failed in file src/util/procmap/local_proc.c at line 250: r < comm_ptr->remote_size",
     "a.out: main.c:12: main: Assertion `rank < size' failed."),
    # a hung process's stack inside NCCL's abort: py-spy (NVIDIA/nccl#992), lldb (pytorch/pytorch#149153); a thread
    # waiting inside a collective is no abort
    ("comm_abort_stuck", "    ncclCommAbort (init.cc:1931)", "    ncclAllReduce (collectives.cc:87)"),
    ("comm_abort_stuck", "    frame #3: 0x00007fb090db1068 libtorch_cuda.so`c10d::ProcessGroupNCCL::abort() + 664",
     "    frame #3: 0x00007fb090db1068 libtorch_cuda.so`c10d::ProcessGroupNCCL::allreduce(std::vector<at::Tensor>&) + 664"),
    # net_ib.cc's no-module note (NVIDIA/nccl#1939); paths.cc's distance choice is NCCL_NET_GDR_LEVEL's, not this
    ("gdr_no_module", "h:1:2 [0] NCCL INFO NET/IB : GPU Direct RDMA Disabled for HCA 0 'mlx5_0' (no module)",
     "h:1:2 [0] NCCL INFO GPU Direct RDMA Disabled for GPU 1b000 / HCA 0 (distance 5 > 4)"),
    ("peer_memory_missing", "cat: /sys/kernel/mm/memory_peers/nv_mem_nc/version: No such file or directory",
     "cat /sys/kernel/mm/memory_peers/nv_mem/version\n1.1-0"),
    # misc/nvmlwrap.cc (NVIDIA/nccl#255); NVML's init failing is the driver's, another row
    ("nvml_handle_failed", "chainer-dev2:645:645 [1] misc/nvmlwrap.cc:174 NCCL WARN nvmlDeviceGetHandleByIndex() failed: "
                           "Invalid Argument",
     "chainer-dev2:645:645 [1] misc/nvmlwrap.cc:60 NCCL WARN nvmlInit() failed: Driver/library version mismatch"),
    # transport/nvls.cc after cuMulticastBindMem (NVIDIA/nccl-tests#216); NVLS's buffer note is another step
    ("nvls_bind", "c2ce1c877ea3:1023:1032 [0] NCCL INFO NVLS Bind mem 0xac0000000 UC handle 0x7f3310ccb240 MC handle "
                  "0x7f3310ccaa20 size 1073741824",
     "c2ce1c877ea3:1023:1032 [0] NCCL INFO NVLS comm 0x55d0 headRank 0 nHeads 4 buffSize 1048576 memSize 2097152"),
]


@pytest.mark.parametrize("rule, line, near", ROWS, ids=[f"{r[0]}-{i}" for i, r in enumerate(ROWS)])
def test_row_matches_its_line_and_not_the_near_miss(rule: str, line: str, near: str) -> None:
    check_row(rule, line, near)


def _found(tmp_path: Path, text: str) -> list[dict]:
    p = tmp_path / "job.log"
    p.write_text(text)
    return [f for f in diagnose_file(p)["findings"] if f["cause"]]


def test_a_tuner_refusing_old_nccl_is_the_cause_of_its_invalid_argument(tmp_path: Path) -> None:
    found = _found(tmp_path, ROWS[0][1] + "\nRuntimeError: NCCL Error 4: invalid argument (run with NCCL_DEBUG=WARN for "
                                          "details)\n")
    assert [(f["code"], f["cause"]) for f in found] == [("LOG099", "version_mismatch")]
    assert "NCCL 2.19-2.20" in found[0]["title"]


_TRACEBACK = ('Traceback (most recent call last):\n  File "train.py", line 30, in <module>\n'
              "    torch.distributed.init_process_group(backend='nccl')\n"
              '  File "/opt/conda/lib/python3.9/site-packages/torch/distributed/distributed_c10d.py", line 595, in '
              "init_process_group\n    store, rank, world_size = next(rendezvous_iterator)\n")


def test_deepspeed_running_one_node_of_a_multinode_job_is_the_launch(tmp_path: Path) -> None:
    # EleutherAI/gpt-neox#671: no hostfile, and the processes failed joining the rendezvous (the exception line cut)
    found = _found(tmp_path, ROWS[1][1] + "\n" + _TRACEBACK)
    assert [(f["code"], f["cause"]) for f in found][:1] == [("LOG066", "launcher_misconfig")]
    assert "no hostfile" in found[0]["title"]
    # the note alone is every single-node DeepSpeed run
    assert _found(tmp_path, ROWS[1][1] + "\n[INFO] [engine.py:1100:train] step 100 loss 2.31\n") == []
    # a port already in use explains a rendezvous failure on one node as well
    found = _found(tmp_path, ROWS[1][1] + "\n" + _TRACEBACK + "RuntimeError: Address already in use\n")
    assert found[0]["cause"] == "port_conflict"


def test_hydras_errors_are_failures_and_a_lost_proxy_says_where_to_look(tmp_path: Path) -> None:
    # pmodels/mpich#1872 as posted: the assert wrapped onto the next line
    found = _found(tmp_path, "tauro\n[mpiexec at tauro] control_cb (./pm/pmiserv/pmiserv_cb.c:202): assert\n(!closed) "
                             "failed\n[mpiexec at tauro] main (./ui/mpich/mpiexec.c:331): process manager error\n"
                             "waiting for completion\n")
    assert [(f["code"], f["cause"]) for f in found] == [("LOG066", "other")]
    assert "-wdir" in found[0]["detail"]
    # Hydra's error report with nothing a rule knows is an unrecognised failure, never healthy
    p = tmp_path / "job.log"
    p.write_text("[mpiexec@node1] HYD_pmci_wait_for_completion (pm/pmiserv/pmiserv_pmci.c:197): error waiting for event\n")
    assert [f["code"] for f in diagnose_file(p)["findings"]] == ["LOG080"]


def test_mpichs_own_assertion_is_the_verdict_and_its_abort_follows(tmp_path: Path) -> None:
    found = _found(tmp_path, "Hello from rank 0\n" + ROWS[5][1] + "\n0x7f6b854b4707 ???\n        ???:0\n"
                             "internal ABORT - process 0\n")
    assert [(f["code"], f["cause"]) for f in found] == [("LOG100", "other")]
    assert "r < comm_ptr->remote_size" in found[0]["title"]


def test_a_stack_stuck_in_ncclS_abort_is_ncclS_defect(tmp_path: Path) -> None:
    stack = ('Thread 3438296 (idle): "Thread-41"\n    0x155555277197 (libc.so.6)\n    commFree (init.cc:180)\n'
             "    commReclaim (init.cc:1862)\n    ncclCommAbort (init.cc:1931)\n"
             "    c10d::NCCLComm::ncclCommAbort (libtorch_cuda.so)\n    c10d::ProcessGroupNCCL::abort (libtorch_cuda.so)\n")
    found = _found(tmp_path, stack)
    assert [(f["code"], f["cause"]) for f in found] == [("LOG070", "nccl_internal_bug")]
    # a stack waiting inside a collective is a hang of its own kind, not this
    assert _found(tmp_path, 'Thread 1 (idle): "MainThread"\n    ncclAllReduce (collectives.cc:87)\n') == []


_NVLS_BIND = next(r[1] for r in ROWS if r[0] == "nvls_bind")


def test_a_log_ending_at_ncclS_nvls_bind_is_the_fabric(tmp_path: Path) -> None:
    head = ("h1:1023:1023 [0] NCCL INFO NCCL version 2.19.3+cuda12.3\n"
            "h1:1023:1032 [0] NCCL INFO NVLS multicast support is available on dev 0\n")
    found = _found(tmp_path, head + _NVLS_BIND + "\n")
    assert [(f["code"], f["cause"]) for f in found] == [("LOG033", "fabric_manager_nvls"), ("LOG090", "nccl_internal_bug")]
    # the same bind followed by the rest of NCCL's setup and the job's end is a run that worked
    assert _found(tmp_path, head + _NVLS_BIND + "\nh1:1023:1032 [0] NCCL INFO Connected NVLS\n"
                                                 "h1:1023:1023 [0] NCCL INFO comm 0x55d0 rank 0 nranks 4 cudaDev 0 "
                                                 "busId 18000 - Destroy COMPLETE\n") == []


def test_gpudirect_off_is_a_risk_that_names_the_module_and_a_note_once_the_job_ended(tmp_path: Path) -> None:
    lines = ("cat: /sys/kernel/mm/memory_peers/nv_mem_nc/version: No such file or directory\n"
             + next(r[1] for r in ROWS if r[0] == "gdr_no_module") + "\n")
    found = _found(tmp_path, lines)
    assert [(f["code"], f["cause"]) for f in found][:1] == [("LOG101", "other")]
    assert "mlx5_0" in found[0]["title"]
    ended = lines + "h:1:1 [0] NCCL INFO comm 0x55d0 rank 0 nranks 2 cudaDev 0 busId 1b000 - Destroy COMPLETE\n"
    assert _found(tmp_path, ended) == []


def test_ncclS_gpu_unknown_to_nvml_is_ncclS_lookup(tmp_path: Path) -> None:
    found = _found(tmp_path, next(r[1] for r in ROWS if r[0] == "nvml_handle_failed") + "\n")
    assert [(f["code"], f["cause"]) for f in found][:1] == [("LOG070", "nccl_internal_bug")]
    assert "Invalid Argument" in found[0]["title"]
