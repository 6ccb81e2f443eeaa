"""Public failure threads, round 18 and the development halves before it.

A process that ends on a C++ exception nothing caught (std::terminate) is a failure of that process, read from the
runtime's own line even with no other keyword on it; MPICH's and Intel MPI's ``-prepend-rank`` prefix ("[1] ...")
names the rank, where NCCL's device field of the same shape stays a device.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from commdoctor.parsing.lines import classify, clean, raw_owner
from logs.test_corpus import diagnose_file
from logs.test_rule_rows import check_row

ROWS = [
    # (rule id, real line, near-miss)
    # c10/cuda/CUDAFunctions.cpp's device count check, and CUDA's cudaErrorNoDevice (100); a count that is not zero
    # is no failure.
    ("no_gpu_visible", "RuntimeError: No CUDA GPUs are available", "INFO: 8 CUDA GPUs are available to this job"),
    ("no_gpu_visible", "RuntimeError: CUDA error: no CUDA-capable device is detected",
     "CUDA error: a CUDA-capable device is busy or unavailable"),
    # Ray's memory monitor (python/ray/exceptions.py OutOfMemoryError): the node's host memory, not the GPU's.
    ("worker_pool_died", "ray.exceptions.OutOfMemoryError: Task was killed due to the node running low on memory.",
     "ray.exceptions.RayTaskError: the task raised, the node has memory to spare"),
    # the raylet's report wrapped by the post after "tasks /" (vllm-project/vllm#1160); none killed for memory is none
    ("worker_pool_died", " actors) killed due to memory pressure (OOM), 0 Workers crashed due to other reasons at node",
     "(raylet) 0 Workers (tasks / actors) killed due to memory pressure (OOM), 2 Workers crashed due to other reasons"),
    # UCX's gdr_copy transport (NVIDIA/gdrcopy#113): ENOTTY from gdrdrv is another GDRCopy release; EINVAL is not
    ("gdrcopy_abi", "[1583370992.161735] [gn0101:301910:0]    gdr_copy_md.c:113  UCX  ERROR gdr_pin_buffer failed. "
                    "length :3735552 ret:25",
     "[1583370992.161735] [gn0101:301910:0]    gdr_copy_md.c:113  UCX  ERROR gdr_pin_buffer failed. length :3735552 ret:22"),
    # NCCL's argcheck.cc (NVIDIA/nccl#276); the same collective's INFO trace is no rejection
    ("nccl_argcheck", "YYY:2396:2428 [0] misc/argcheck.cc:40 NCCL WARN Reduce : invalid root 0 (root should be in the "
                      "0..0 range)",
     "YYY:2396:2428 [0] NCCL INFO Reduce: opCount 0 sendbuff 0x7f00 recvbuff 0x7f00 count 1 datatype 7 op 0 root 0"),
    ("nccl_argcheck", "h:1:2 [1] misc/argcheck.cc:24 NCCL WARN AllReduce : sendbuff allocated on device 0 mismatchs "
                      "with NCCL device 1",
     "h:1:2 [1] NCCL INFO AllReduce: opCount 3 sendbuff 0x7f00 recvbuff 0x7f00 count 1024 datatype 7 op 0 root 0"),
    # NCCL's graph/paths.cc check of NVML's P2P status (2.12 on); its INFO note for PCIe-joined GPUs is no failure
    ("nvlink_p2p_disabled", "node1:812:812 [0] graph/paths.cc:324 NCCL WARN P2P is disabled between NVLINK connected GPUs 1 "
                            "and 0. This should not be the case given their connectivity, and is probably due to a hardware "
                            "issue. If you still want to proceed, you can set NCCL_IGNORE_DISABLED_P2P=1.",
     "node1:812:812 [0] NCCL INFO P2P is disabled between connected GPUs 1 and 0. You can repress this message with "
     "NCCL_IGNORE_DISABLED_P2P=1."),
    # MPICH's error stack through its CMA copy (pmodels/mpich#7653); the IPC frame above it says no more than IPC
    ("mpich_cma_failed", "MPIDI_CMA_copy_data(54): ", "MPIDI_IPC_rndv_cb(172).: "),
    # torch's store socket read timing out, with its SocketImpl description (axolotl-ai-cloud/axolotl#2684); the
    # poll note before it is no timeout of the read itself
    ("store_wait_timeout", "[rank1]:[W516 14:34:56.854597329 socket.cpp:489] [c10d] waitForInput: socket SocketImpl(fd=79, "
                           "addr=[localhost]:41170, remote=[localhost]:29500) timed out after 1800000ms",
     "[rank1]:[W516 14:34:56.853490829 socket.cpp:464] [c10d] waitForInput: poll for socket SocketImpl(fd=79, "
     "addr=[localhost]:41170, remote=[localhost]:29500) returned 0, likely a timeout"),
]


@pytest.mark.parametrize("rule, line, near", ROWS, ids=[f"{r[0]}-{i}" for i, r in enumerate(ROWS)])
def test_row_matches_its_line_and_not_the_near_miss(rule: str, line: str, near: str) -> None:
    check_row(rule, line, near)


def test_rays_out_of_memory_is_the_host_not_the_gpu(tmp_path: Path) -> None:
    found = _causes(tmp_path, "ray.exceptions.OutOfMemoryError: Task was killed due to the node running low on memory.\n")
    assert [(f["code"], f["cause"]) for f in found] == [("LOG060", "peer_process_died")]
    assert "host memory" in found[0]["title"]
    found = _causes(tmp_path, "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n")
    assert found[0]["code"] == "LOG031" and found[0]["title"].endswith("in the program's own allocations (torch's "
                                                                       "allocator, not NCCL)")
    found = _causes(tmp_path, "h:1:2 [0] include/alloc.h:48 NCCL WARN Cuda failure 'out of memory'\n")
    assert found[0]["title"] == "the GPU ran out of memory while NCCL allocated its buffers"


def _causes(tmp_path: Path, text: str) -> list[dict]:
    p = tmp_path / "job.log"
    p.write_text(text)
    return [f for f in diagnose_file(p)["findings"] if f["cause"]]


def test_a_rank_ended_by_std_terminate_is_the_peer_that_died(tmp_path: Path) -> None:
    # pmodels/mpich#6124 (mpiexec -prepend-rank): rank 1 throws before MPI_Init, rank 0 waits in MPI_Init for ever.
    found = _causes(tmp_path, "[0] About to call MPI_Init\n[1] About to throw 0\n"
                              "[1] terminate called after throwing an instance of 'int'\n")
    assert (found[0]["code"], found[0]["cause"]) == ("LOG060", "peer_process_died")
    assert found[0]["title"] == "rank 1 aborted on an uncaught C++ exception ('int')" and found[0]["ranks"] == [1]
    assert "std::terminate" in found[0]["detail"]


def test_the_exception_a_rule_knows_is_the_cause_and_the_abort_its_echo(tmp_path: Path) -> None:
    # horovod/horovod#2015: the rendezvous store's wait timed out inside gloo; the abort follows from it.
    hvd = "Tue Jun  9 20:10:40 2020[1]<stderr>:"
    found = _causes(tmp_path, f"{hvd}terminate called after throwing an instance of 'gloo::IoException'\n"
                              f"{hvd}  what():  [horovod/common/gloo/http_store.cc:53] Wait timeout for key(s): 0\n")
    assert found[0]["code"] == "LOG055" and "LOG060" not in [f["code"] for f in found[:1]]


def test_an_exception_no_rule_knows_is_quoted_not_hidden_behind_the_abort(tmp_path: Path) -> None:
    p = tmp_path / "job.log"
    p.write_text("terminate called after throwing an instance of 'std::runtime_error'\n"
                 "  what():  the tokenizer file is missing\n")
    found = diagnose_file(p)["findings"]
    assert found[0]["code"] == "LOG080" and "the tokenizer file is missing" in found[0]["title"]
    assert found[0]["cause"] == "other"  # the program's own exception, in no communication library's words
    died = next(f for f in found if f["code"] == "LOG060")
    assert died["consequence_of"] == "LOG080" and "(None)" not in died["detail"]


def test_words_of_the_program_are_not_the_runtime_abort(tmp_path: Path) -> None:
    assert _causes(tmp_path, "[job] terminate called by the scheduler at step 9? no: what(): is a method name\n") == []


def test_mpich_prepend_rank_prefix_is_a_rank_and_nccls_device_field_stays_a_device() -> None:
    r = classify("[3] MPI startup(): Rank    Pid      Node name")
    assert (r.rank, r.msg) == (3, "MPI startup(): Rank    Pid      Node name")
    assert raw_owner(b"[3] About to call MPI_Init").rank == 3
    for cut in ("[3] include/shm.h:28 NCCL WARN Call to posix_fallocate failed : No space left on device",
                "[0] NCCL INFO Bootstrap : Using eth0:10.0.0.2<0>", "[2] misc/ibvwrap.cc:60 WARN Failed to open libibverbs"):
        r = classify(cut)
        assert (r.kind, r.rank, r.dev) == ("nccl", None, int(cut[1])), cut
        assert raw_owner(cut.encode()).rank is None
    # a shell's job notice ("[1]    12345 segmentation fault") and torchrun's failure summary ("[1]:") are no prefix
    assert classify("[1]    12345 segmentation fault  python train.py").rank is None
    assert classify("[1]:").rank is None


HEAD = ("# nThread 1 nGpus 8 minBytes 1073741824 maxBytes 8589934592 step: 2(factor) warmup iters: 5 iters: 20 "
        "agg iters: 1 validation: 1 graph: 0\n#\n# Using devices\n")


def _row(rank: int, pid: int, host: str) -> str:
    return f"#  Rank {rank:2d} Group  0 Pid {pid:6d} on {host:>10s} device {rank % 8:2d} [0x0f] NVIDIA H800\n"


RESULT = ("  1073741824     268435456     float     sum      -1   9416.1  114.03  213.81      0   9402.5  114.20  214.12      0\n"
          "# Out of bounds values : 0 OK\n")


def test_nccl_tests_run_by_each_mpi_process_alone_is_the_launch(tmp_path: Path) -> None:
    # NVIDIA/nccl-tests#213: mpirun -np 2 over two hosts, the binary not working with that MPI; both processes print
    # the header, then each lists its own ranks from 0.
    found = _causes(tmp_path, "Warning: Permanently added '[10.0.0.15]:9001' (ED25519) to the list of known hosts.\n"
                              + HEAD + HEAD + "".join(_row(r, 798, "hw14") for r in range(4)))
    assert (found[0]["code"], found[0]["cause"]) == ("LOG066", "launcher_misconfig")
    assert "job of its own" in found[0]["title"] and "MPI=1" in found[0]["detail"]
    # each process's table of ranks, interleaved after one header, says the same
    found = _causes(tmp_path, HEAD + _row(0, 798, "hw14") + _row(0, 811, "hw15") + _row(1, 798, "hw14"))
    assert found and found[0]["code"] == "LOG066"


def test_one_mpi_job_over_two_hosts_and_two_pasted_runs_are_no_such_launch(tmp_path: Path) -> None:
    # one job: one header, ranks 0..15 over both hosts (each host's process has its own pid)
    one = HEAD + "".join(_row(r, 798 if r < 8 else 811, "hw14" if r < 8 else "hw15") for r in range(16)) + RESULT
    assert _causes(tmp_path, one) == []
    # two runs of one host pasted one after the other: the first run's results sit between the two headers
    two = HEAD + "".join(_row(r, 798, "hw14") for r in range(8)) + RESULT
    two += HEAD + "".join(_row(r, 905, "hw14") for r in range(8)) + RESULT
    assert _causes(tmp_path, two) == []


def test_argcheck_names_what_the_caller_passed(tmp_path: Path) -> None:
    # NVIDIA/nccl#276: torch 1.3's DataParallel called NCCL on a communicator it had not finished creating
    found = _causes(tmp_path, "YYY:2396:2428 [0] misc/argcheck.cc:40 NCCL WARN Reduce : invalid root 0 (root should be "
                              "in the 0..0 range)\n"
                              "YYY:2396:2428 [0] init.cc:840 NCCL WARN comm 0x7fdee40000c0 has already been destroyed\n"
                              "terminate called after throwing an instance of 'std::runtime_error'\n"
                              "  what():  NCCL Error 4: invalid argument\nAborted (core dumped)\n")
    assert (found[0]["code"], found[0]["cause"]) == ("LOG098", "other")
    assert "no longer exists" in found[0]["title"]
    # the reason is in the log: not "the reason line is not in the logs" (LOG066), and the abort is its echo
    assert "LOG066" not in [f["code"] for f in found]
    assert all(f["consequence_of"] == "LOG098" for f in found if f["code"] == "LOG060")
    found = _causes(tmp_path, "h:1:2 [1] misc/argcheck.cc:24 NCCL WARN AllReduce : sendbuff allocated on device 0 "
                              "mismatchs with NCCL device 1\n")
    assert found[0]["title"].endswith("AllReduce's sendbuff is on GPU 0, the communicator on GPU 1")


def test_syslog_escapes_are_colour_codes_and_cut_lines_still_read(tmp_path: Path) -> None:
    # vllm-project/vllm#1160 as syslog stored it ("#033[2m" is ESC [2m) and the post wrapped it
    text, _flags = clean(b"#033[2m#033[33m(raylet)#033[0m [DATE] (raylet) node_manager.cc:3007: 2 Workers (tasks /")
    assert text == "(raylet) [DATE] (raylet) node_manager.cc:3007: 2 Workers (tasks /"
    found = _causes(tmp_path, "#033[2m#033[33m(raylet)#033[0m [DATE] (raylet) node_manager.cc:3007: 2 Workers (tasks /\n"
                              " actors) killed due to memory pressure (OOM), 0 Workers crashed due to other reasons at node\n")
    assert (found[0]["code"], found[0]["cause"]) == ("LOG060", "peer_process_died")


def test_a_programs_own_error_head_and_an_mpi_error_stack_are_failures(tmp_path: Path) -> None:
    # Marian (marian-nmt/marian-dev#899): "Error: " after its timestamp; a metric named Error is not one
    p = tmp_path / "train.log"
    p.write_text("[2022-01-13 14:50:23] Error: NCCL error 2 'unhandled system error' - "
                 "/marian/src/training/communicator_nccl.h:43: ncclGroupEnd()\n")
    assert diagnose_file(p)["findings"], "an error report read as healthy"
    p.write_text("[2022-01-13 14:50:23] Ep. 1 : Up. 500 : Sen. 64,000 : Cost 2.1\nError: 0.0523 (validation)\n")
    assert diagnose_file(p)["findings"] == []
    # mpi4py raising MPICH's error string (pmodels/mpich#7653): bare "Exception" is an exception type
    r = classify("mpi4py.MPI.Exception: Other MPI error, error stack:")
    assert (r.kind, r.exc_type) == ("exception", "Exception")
    assert classify("Exceptional results: 3").kind == "text"
    found = _causes(tmp_path, "mpi4py.MPI.Exception: Other MPI error, error stack:\n"
                              "internal_Mrecv_c(301)..: MPI_Mrecv_c(buf=0x5, count=8348, MPI_BYTE) failed\n"
                              "MPIDI_IPC_rndv_cb(172).: \nMPIDI_CMA_copy_data(54): \n")
    assert (found[0]["code"], found[0]["cause"]) == ("LOG083", "other") and "MPIR_CVAR_CH4_CMA_ENABLE" in found[0]["detail"]


def test_a_traceback_cut_before_its_exception_is_a_failure(tmp_path: Path) -> None:
    tb = ("[rank1]: Traceback (most recent call last):\n"
          "[rank1]:   File \"/home/u/train.py\", line 124, in <module>\n[rank1]:     fire.Fire(do_cli)\n")
    # alone: the process raised, never healthy
    p = tmp_path / "job.log"
    p.write_text(tb)
    found = diagnose_file(p)["findings"]
    assert found[0]["code"] == "LOG080" and "rank(s) 1 raised" in found[0]["title"]
    # with torch's store read timing out before it (axolotl-ai-cloud/axolotl#2684), that timeout is the reading
    warn = ("[rank1]:[W516 14:34:56.854597329 socket.cpp:489] [c10d] waitForInput: socket SocketImpl(fd=79, "
            "addr=[localhost]:41170, remote=[localhost]:29500) timed out after 1800000ms\n")
    found = _causes(tmp_path, warn + tb)
    assert (found[0]["code"], found[0]["cause"]) == ("LOG055", "collective_timeout_straggler")
    # the same warning in a log that shows no failure names no cause
    assert _causes(tmp_path, warn + "[rank1]: step 10 loss 0.1\n") == []


def test_frames_whose_header_was_cut_are_a_traceback_and_a_job_that_ended_is_not_failed_by_one(tmp_path: Path) -> None:
    # facebookresearch/SlowFast#337: the post starts inside the traceback, which ends creating the TCPStore
    p = tmp_path / "job.log"
    p.write_text('  File "/env/lib/python3.7/site-packages/torch/distributed/rendezvous.py", line 133, in '
                 '_tcp_rendezvous_handler\n    store = TCPStore(result.hostname, result.port, world_size, start_daemon)\n')
    found = diagnose_file(p)["findings"]
    assert found[0]["code"] == "LOG080" and "traceback" in found[0]["title"]
    # a program that printed a traceback, retried and ran to its end did not fail of it: a note, no verdict
    p.write_text('Traceback (most recent call last):\n  File "/app/retry.py", line 10, in fetch\n    conn.get()\n'
                 "retrying in 5 s\nstep 100 loss 0.1\n[INFO] torch.distributed.elastic.agent.server.api: [default] "
                 "worker group successfully finished. Waiting 300 seconds for other agents to finish.\n")
    doc = diagnose_file(p)
    assert [f["severity"] for f in doc["findings"] if f["code"] == "LOG080"] == ["info"]
