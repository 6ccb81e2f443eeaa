"""Public failure threads, round 29, and what NCCL's INFO lines say by where they stop.

With NCCL_DEBUG=INFO every communicator that finishes its set-up logs "... - Init COMPLETE" (NCCL 2.4.2 on). A log that
shows the set-up's lines, no such line, no error, and nothing of the job's own after NCCL's last line is a job hung
there. Across hosts that is the TCP the set-up opens on ports the OS picks (firewalls, network policies, sidecars:
LOG108); on one host it is GPU peer-to-peer (ACS/IOMMU: LOG038), also in the first collective after the set-up;
a communicator that went on, a job that went on, or an NCCL too old to say "Init COMPLETE" is none of these.
NCCL's COLL lines give each call's arguments, which every rank must give alike; its "Using network" lines, which
network each process chose, which must be the same for all.
"""

from __future__ import annotations

from pathlib import Path

from logs.test_corpus import diagnose_file
from logs.test_rule_rows import check_row
from commdoctor.parsing.scan import Scanner, make_prefilter

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "logs"

# NVIDIA/nccl#1638: nccl-tests under an MPIJob, two pods with the Istio sidecar, hung after these lines.
_PODS = """\
[1,0]<stdout>:#  Rank  0 Group  0 Pid     21 on nccl-tests-worker-0 device  0 [0x3e] NVIDIA L4
[1,0]<stdout>:#  Rank  1 Group  0 Pid     21 on nccl-tests-worker-1 device  0 [0x3c] NVIDIA L4
[1,0]<stdout>:nccl-tests-worker-0:21:21 [0] NCCL INFO Bootstrap : Using eth0:10.0.130.10<0>
[1,0]<stdout>:nccl-tests-worker-0:21:21 [0] NCCL INFO cudaDriverVersion 12060
[1,1]<stdout>:nccl-tests-worker-1:21:21 [0] NCCL INFO cudaDriverVersion 12060
[1,0]<stdout>:nccl-tests-worker-0:21:21 [0] NCCL INFO NCCL version 2.23.4+cuda12.2
[1,1]<stdout>:nccl-tests-worker-1:21:21 [0] NCCL INFO Bootstrap : Using eth0:10.0.134.216<0>
[1,1]<stdout>:nccl-tests-worker-1:21:21 [0] NCCL INFO NCCL version 2.23.4+cuda12.2
"""
# NVIDIA/nccl#257: all_reduce_perf -g 4 (one process, four GTX 1080 Ti) hung; intel_iommu=off fixed it.
_ONE_HOST = """\
jupyter-vmarkovtsev:15833:15833 [0] NCCL INFO Bootstrap : Using [0]eth0:10.2.3.32<0>
jupyter-vmarkovtsev:15833:15833 [0] NCCL INFO NET/Plugin : No plugin found (libnccl-net.so).
jupyter-vmarkovtsev:15833:15833 [0] NCCL INFO NET/Socket : Using [0]eth0:10.2.3.32<0>
NCCL version 2.4.8+cuda10.0
jupyter-vmarkovtsev:15833:15833 [3] NCCL INFO nranks 4
jupyter-vmarkovtsev:15833:15833 [0] NCCL INFO Setting affinity for GPU 0 to ff00ff
jupyter-vmarkovtsev:15833:15833 [1] NCCL INFO Setting affinity for GPU 1 to ff00ff
"""


def _findings(path: Path, text: str) -> list[dict]:
    path.write_text(text)
    return [f for f in diagnose_file(path)["findings"] if f["cause"]]


def _capture_until(text: str) -> str:
    """The two-rank H100 capture (fixtures/logs/nccl-healthy: own NCCL_HOSTID each, so two 'hosts' to NCCL) up to and
    including its first line holding ``text``: the same job as if it had stopped there."""
    lines = (FIXTURES / "nccl-healthy" / "torchrun.log").read_text().splitlines(keepends=True)
    at = next(i for i, ln in enumerate(lines) if text in ln)
    return "".join(lines[:at + 1])


def test_pods_that_stop_after_bootstrap_are_the_ports_between_them(tmp_path: Path) -> None:
    got = _findings(tmp_path / "job.log", _PODS)
    assert [f["code"] for f in got][:2] == ["LOG108", "LOG090"]
    assert got[0]["cause"] == "firewall_or_port_blocked" and got[0]["severity"] == "warning"
    assert got[0]["hosts"] == ["nccl-tests-worker-0", "nccl-tests-worker-1"]
    assert "setting up its communicators, before its channels, across hosts" in got[0]["title"]
    assert got[1]["cause"] == "wrong_interface"


def test_a_communicator_that_completed_is_not_a_stall(tmp_path: Path) -> None:
    done = _PODS + ("[1,0]<stdout>:nccl-tests-worker-0:21:21 [0] NCCL INFO comm 0x5581d2a0 rank 0 nranks 2 cudaDev 0 "
                    "nvmlDev 0 busId 3e000 commId 0x9f2c6d1e2b3a4c5d - Init COMPLETE\n")
    assert _findings(tmp_path / "job.log", done) == []


def test_a_job_whose_output_goes_on_after_nccls_lines_is_not_a_stall(tmp_path: Path) -> None:
    # The poster cut NCCL's lines short but the job's own lines go on: the log does not stop in NCCL.
    went_on = _PODS + "".join(f"[1,0]<stdout>:step {i} loss 0.{i}\n" for i in range(8))
    assert _findings(tmp_path / "job.log", went_on) == []


def test_one_process_driving_four_gpus_that_stops_is_peer_to_peer(tmp_path: Path) -> None:
    got = _findings(tmp_path / "job.log", _ONE_HOST)
    assert got[0]["code"] == "LOG038" and got[0]["cause"] == "p2p_acs_iommu" and got[0]["severity"] == "warning"
    assert "Setting affinity for GPU 1" in got[0]["evidence"][0]["text"]  # where it stopped, though no rule reads it
    assert {f["cause"] for f in got[1:]} >= {"p2p_driver_bug"}


def test_one_gpu_alone_is_no_peer_to_peer_stall(tmp_path: Path) -> None:
    alone = "\n".join(ln for ln in _ONE_HOST.splitlines() if "[1]" not in ln and "[3]" not in ln) + "\n"
    assert _findings(tmp_path / "job.log", alone) == []


def test_an_nccl_too_old_to_say_init_complete_is_not_read(tmp_path: Path) -> None:
    assert _findings(tmp_path / "job.log", _ONE_HOST.replace("2.4.8", "2.3.7")) == []


def test_the_interrupt_row_reads_pythons_last_line_and_not_code_that_raises_it() -> None:
    check_row("user_interrupt", "KeyboardInterrupt", "    raise KeyboardInterrupt from None")


def test_the_user_stopping_the_job_confirms_the_hang(tmp_path: Path) -> None:
    stopped = _PODS + ("[1,0]<stdout>:Traceback (most recent call last):\n"
                       "[1,0]<stdout>:  File \"/opt/nccl-tests/run.py\", line 12, in <module>\n"
                       "[1,0]<stdout>:KeyboardInterrupt\n")
    got = _findings(tmp_path / "job.log", stopped)
    assert got[0]["code"] == "LOG108" and got[0]["severity"] == "error"
    assert "stopped the job" in got[0]["title"]


def test_a_job_the_user_stopped_says_where_each_rank_was_and_names_no_cause(tmp_path: Path) -> None:
    # torch's traceback of a rank stopped with Ctrl-C inside all_reduce (gloo waits there; NCCL returns first)
    tb = ("[rank1]: Traceback (most recent call last):\n"
          '[rank1]:   File "/workspace/train.py", line 64, in <module>\n'
          "[rank1]:     dist.all_reduce(t)\n"
          '[rank1]:   File "/opt/conda/lib/python3.10/site-packages/torch/distributed/distributed_c10d.py", line 2050, '
          "in all_reduce\n"
          "[rank1]:     work.wait()\n"
          "[rank1]: KeyboardInterrupt\n")
    (tmp_path / "job.log").write_text(tb)
    found = diagnose_file(tmp_path / "job.log")["findings"]
    assert [f["code"] for f in found] == ["LOG110"] and found[0]["cause"] is None
    assert "rank 1 in all_reduce() called at train.py:64" in found[0]["title"]
    # near-miss: an error before the interrupt is what the logs are about
    (tmp_path / "err.log").write_text("[rank0]: RuntimeError: CUDA error: out of memory\n" + tb)
    assert diagnose_file(tmp_path / "err.log")["findings"][0]["code"] != "LOG110"


def test_an_error_after_the_set_up_lines_is_read_instead(tmp_path: Path) -> None:
    failed = _PODS + "[1,0]<stdout>:RuntimeError: CUDA error: out of memory\n"
    assert all(f["code"] != "LOG108" for f in _findings(tmp_path / "job.log", failed))


def test_the_real_capture_cut_inside_its_set_up_is_a_stall_between_its_two_nccl_hosts(tmp_path: Path) -> None:
    # 2.28.9 on an H100: stopped after the rings were computed, before Init COMPLETE ("nNodes 2" says two hosts).
    got = _findings(tmp_path / "job.log", _capture_until("P2P Chunksize set to 131072"))
    assert got[0]["code"] == "LOG108" and got[0]["cause"] == "firewall_or_port_blocked"
    assert "while setting up its channels" in got[0]["title"]
    # the same capture to its end is a healthy job, and cut just after Init COMPLETE it is not a stall at init
    assert _findings(tmp_path / "whole.log", (FIXTURES / "nccl-healthy" / "torchrun.log").read_text()) == []
    assert _findings(tmp_path / "done.log", _capture_until("Init COMPLETE")) == []


def test_the_capture_stopped_connecting_its_channels_at_the_first_collective_is_the_network(tmp_path: Path) -> None:
    # 2.28 connects its channels at the first collective, after Init COMPLETE: stopped on those lines.
    got = _findings(tmp_path / "job.log", _capture_until("Channel 00/0 : 1[0] -> 0[0] [receive] via NET/Socket/0"))
    assert got[0]["code"] == "LOG108" and got[0]["cause"] == "firewall_or_port_blocked"
    assert "at the first collective" in got[0]["title"]


def test_a_torch_job_on_one_host_that_stops_after_its_set_up_is_peer_to_peer_unless_it_went_on(tmp_path: Path) -> None:
    # _TESTS_ONE_HOST's NCCL lines alone: what a two-GPU torch job prints with NCCL_DEBUG=INFO before its first step.
    nccl = "".join(ln + "\n" for ln in _TESTS_ONE_HOST.splitlines() if " NCCL INFO " in ln)
    got = _findings(tmp_path / "job.log", nccl)
    assert got[0]["code"] == "LOG038" and got[0]["severity"] == "warning"
    assert "in NCCL's first collective, after its communicators were set up, on one host" in got[0]["title"]
    assert "collective_timeout_straggler" in {f["cause"] for f in got[1:]}
    steps = "".join(f"[rank{i % 2}]: step {i // 2} loss 0.{i}\n" for i in range(8))
    assert _findings(tmp_path / "ran.log", nccl + steps) == []


def test_channels_over_infiniband_that_stop_connecting_are_the_rdma_set_up(tmp_path: Path) -> None:
    ib = ("node-a:301:301 [0] NCCL INFO Bootstrap : Using ib0:192.168.10.1<0>\n"
          "node-a:301:301 [0] NCCL INFO NCCL version 2.18.5+cuda12.2\n"
          "node-b:402:402 [0] NCCL INFO Bootstrap : Using ib0:192.168.10.2<0>\n"
          "node-a:301:301 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/RoCE [RO]; OOB ib0:192.168.10.1<0>\n"
          "node-b:402:402 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/RoCE [RO]; OOB ib0:192.168.10.2<0>\n"
          "node-a:301:301 [0] NCCL INFO Channel 00/02 :    0   1\n"
          "node-a:301:301 [0] NCCL INFO Channel 00/0 : 1[0] -> 0[0] [receive] via NET/IB/0\n"
          "node-b:402:402 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [receive] via NET/IB/0\n")
    got = _findings(tmp_path / "job.log", ib)
    assert got[0]["code"] == "LOG108" and got[0]["cause"] == "ib_misconfig"
    assert "firewall_or_port_blocked" in {f["cause"] for f in got[1:]}


# nccl-tests on one host whose communicators completed and whose first size never came, in nccl-tests' own formats
# (common.cu: the rank table, then the results' header) and NCCL's (init.cc, transport lines).
_TESTS_ONE_HOST = """\
# nThread 1 nGpus 1 minBytes 8 maxBytes 134217728 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0
#  Rank  0 Group  0 Pid   4101 on     gpu-vm device  0 [0x00] NVIDIA A100-SXM4-40GB
#  Rank  1 Group  0 Pid   4102 on     gpu-vm device  1 [0x00] NVIDIA A100-SXM4-40GB
gpu-vm:4101:4101 [0] NCCL INFO Bootstrap : Using ens3:10.0.0.5<0>
gpu-vm:4101:4101 [0] NCCL INFO NCCL version 2.18.3+cuda12.2
gpu-vm:4101:4110 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC
gpu-vm:4102:4111 [1] NCCL INFO Channel 00/0 : 1[1] -> 0[0] via P2P/IPC
gpu-vm:4101:4110 [0] NCCL INFO comm 0x55d0 rank 0 nranks 2 cudaDev 0 busId 4000 commId 0x1a2b - Init COMPLETE
gpu-vm:4102:4111 [1] NCCL INFO comm 0x55d1 rank 1 nranks 2 cudaDev 1 busId 5000 commId 0x1a2b - Init COMPLETE
#
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
"""


def test_nccl_tests_on_one_host_stuck_before_its_first_size_is_peer_to_peer(tmp_path: Path) -> None:
    got = _findings(tmp_path / "job.log", _TESTS_ONE_HOST)
    assert got[0]["code"] == "LOG038" and got[0]["cause"] == "p2p_acs_iommu" and got[0]["severity"] == "warning"
    assert "before its first size" in got[0]["title"]
    # near-miss: its first size came (a result row): the test ran
    row = "           8             2     float     sum      -1    10.21    0.00    0.00      0    10.05    0.00    0.00      0\n"
    assert _findings(tmp_path / "ran.log", _TESTS_ONE_HOST + row) == []


# NVIDIA/nccl#104: NCCL 1.x's all_reduce test on 8 M40s on two PCIe trees stopped after its results' header; PCIe ACS
# was on (as posted: the '#' of its lines lost, some quoted).
_NCCL1_TEST = """\
> Using devices
   Rank  0 uses device  0 [0x05] Tesla M40 24GB
   Rank  1 uses device  1 [0x08] Tesla M40 24GB
   Rank  7 uses device  7 [0x91] Tesla M40 24GB
>
>                                                 out-of-place                    in-place
>      bytes             N    type      op     time  algbw  busbw      res     time  algbw  busbw      res
"""


def test_nccl_1_test_stuck_after_its_results_header_is_peer_to_peer(tmp_path: Path) -> None:
    got = _findings(tmp_path / "job.log", _NCCL1_TEST)
    assert got[0]["code"] == "LOG038" and got[0]["cause"] == "p2p_acs_iommu"
    assert "(3 GPUs) stopped before its first size" in got[0]["title"]
    # near-miss: a result row after the header: the test ran
    row = ">    33554432       8388608   float     sum    9.215   3.64   6.37    4e-07    8.893   3.77   6.60    4e-07\n"
    assert _findings(tmp_path / "ran.log", _NCCL1_TEST + row) == []


# stas00/ml-engineering#1: torchrun on one node with four A6000s; rank 0's NCCL lines, then the hang (an IOMMU).
_TORCHRUN_ONE_NODE = """\
WARNING:__main__:
*****************************************
Setting OMP_NUM_THREADS environment variable for each process to be 1 in default, to avoid your system being overloaded, please further tune the variable for optimal performance in your application as needed.
*****************************************
DeepWhite:21288:21288 [0] NCCL INFO Bootstrap : Using enp67s0:192.168.50.21<0>
DeepWhite:21288:21288 [0] NCCL INFO NET/Plugin : No plugin found (libnccl-net.so), using internal implementation
DeepWhite:21288:21288 [0] NCCL INFO NET/IB : No device found.
"""


def test_torchrun_starting_several_ranks_on_the_one_host_named_is_one_host(tmp_path: Path) -> None:
    got = _findings(tmp_path / "job.log", _TORCHRUN_ONE_NODE)
    assert got[0]["code"] == "LOG038" and got[0]["hosts"] == ["DeepWhite"]
    # near-miss: without torchrun's word that it started several processes, one rank's lines say nothing of the rest
    alone = "".join(ln + "\n" for ln in _TORCHRUN_ONE_NODE.splitlines() if "NCCL INFO" in ln)
    assert _findings(tmp_path / "alone.log", alone) == []


def test_the_rows_that_say_where_a_test_or_launch_stands_match_their_lines_only() -> None:
    check_row("nccl_tests_device", "#   Rank  3 uses device  3 [0x13] Tesla M40 24GB",
              "cudaSetDevice: rank 3 uses device 3")
    check_row("nccl_tests_results_head", "#       size         count      type   redop    root     time   algbw   busbw #wrong"
              "     time   algbw   busbw #wrong", "# Avg bus bandwidth    : 6.3717")
    check_row("torchrun_local_procs", "Setting OMP_NUM_THREADS environment variable for each process to be 1 in default, "
              "to avoid your system being overloaded", "export OMP_NUM_THREADS=8")


def test_the_scanner_finds_the_last_nccl_line_across_its_last_blocks() -> None:
    import io

    # An NCCL line at the end of one block, then a short last block of other lines: found, with its number.
    head = b"x" * 100 + b"\n"
    body = head * 3000 + b"host:1:1 [0] NCCL INFO Channel 00/02 : 0 1\n" + b"done\n" * 3
    sc = Scanner(make_prefilter("auto"))
    n = sum(1 for _ in sc.scan(io.BytesIO(body), block_size=1 << 12))
    assert n >= 0
    assert sc.stats.last_nccl == (3001, b"host:1:1 [0] NCCL INFO Channel 00/02 : 0 1")
    assert sc.stats.lines == 3004
    none = Scanner(make_prefilter("auto"))
    list(none.scan(io.BytesIO(head * 10)))
    assert none.stats.last_nccl is None


# NVIDIA/nccl#147 (the maintainer's grep of the reporter's per-rank logs): the first broadcast of the 8-rank
# communicator, with another count and type on rank 0 than on the others.
_COLL = """\
LOG1.0.txt:learnfair062:32615:32615 [0] NCCL INFO Broadcast: opCount 0 sendbuff 0x7f88e4000000 recvbuff 0x7f88e4000000 count 25503912 datatype 6 op 0 root 0 comm 0x7f88e005a260 [nranks=8] stream 0x55f20d2f5db0
LOG1.1.txt:learnfair062:32617:32617 [1] NCCL INFO Broadcast: opCount 0 sendbuff 0x7f3bfe7f5400 recvbuff 0x7f3bfe7f5400 count 53 datatype 4 op 0 root 0 comm 0x7f3bf405a260 [nranks=8] stream 0x55d5ffb73110
LOG1.2.txt:learnfair062:32619:32619 [2] NCCL INFO Broadcast: opCount 0 sendbuff 0x7fc1407f5400 recvbuff 0x7fc1407f5400 count 53 datatype 4 op 0 root 0 comm 0x7fc13805a260 [nranks=8] stream 0x55cefcc3b0e0
"""


def test_one_collective_call_with_other_arguments_on_one_rank_is_a_mismatch(tmp_path: Path) -> None:
    check_row("nccl_coll_call", _COLL.splitlines()[0], "NCCL INFO Broadcast: root 0 of 8 ranks")
    got = _findings(tmp_path / "job.log", _COLL)
    assert got[0]["code"] == "LOG050" and got[0]["cause"] == "collective_mismatch"
    assert "pid 32615 (GPU 0): Broadcast of 25503912 elements, type 6" in got[0]["detail"]
    # near-miss: the same call everywhere is no finding
    same = _COLL.replace("count 25503912 datatype 6", "count 53 datatype 4")
    assert _findings(tmp_path / "same.log", same) == []
    # near-miss: a process with two communicators of that size: its opCounts cannot be matched to the others'
    two = same + _COLL.splitlines()[0].replace("comm 0x7f88e005a260", "comm 0x7f88e0099990") + "\n"
    assert _findings(tmp_path / "two.log", two) == []


# NVIDIA/nccl-tests#188: processes of one node found no HCA and fell back to sockets, the other node's used IB.
_NETS = """\
user:16902:16954 [3] NCCL INFO Using network Socket
user:16906:16952 [7] NCCL INFO NET/IB : No device found.
user:16906:16952 [7] NCCL INFO Using network Socket
user:695836:695883 [5] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_2:1/IB [2]mlx5_4:1/RoCE [RO]; OOB ibs85f0:192.168.1.14<0>
user:695836:695883 [5] NCCL INFO Using network IB
user:695832:695887 [1] NCCL INFO Using network IB
"""


def test_processes_on_sockets_beside_processes_on_infiniband_are_the_ib_setup(tmp_path: Path) -> None:
    check_row("nccl_using_network", "user:16902:16954 [3] NCCL INFO Using network Socket",
              "user:16902:16954 [3] NCCL INFO Using network interface eth0 for bootstrap")
    got = _findings(tmp_path / "job.log", _NETS)
    assert got[0]["code"] == "LOG036" and got[0]["cause"] == "ib_misconfig"
    assert "2 process(es) use NCCL's socket network" in got[0]["detail"]
    # near-miss: every process on the same network
    assert _findings(tmp_path / "one.log", _NETS.replace("Using network IB", "Using network Socket")) == []
