"""Public failure threads, rounds 65-67, and their development reading.

They came from the trackers of NCCL, libfabric's EFA users, WeNet, TensorRT-LLM and torchelastic. What they taught,
each read from what the message means in its program:

- NCCL 2.8-2.11 ran a remote allocation service that trusted any connection: its "[Rem Allocator] Allocation failed"
  and the out-of-memory beside it are a stray connection's meaningless size, not the GPU's memory;
- a store barrier counting more arrivals than the world size is a store that outlived its run (a file:// init file);
- TensorRT-LLM's older check of its MPI size against the engine's TP x PP is the launch's process count;
- the EFA provider's fatal report with ENOMEM is memory registration refused by the locked-memory limit;
- an etcd server advertising a local address sends the agents of other hosts to themselves.
"""

from __future__ import annotations

from pathlib import Path

from logs.test_corpus import diagnose_file
from logs.test_rule_rows import check_row


def _found(tmp_path: Path, text: str) -> list[dict]:
    p = tmp_path / "job.log"
    p.write_text(text)
    return [f for f in diagnose_file(p)["findings"] if f["cause"]]


# NVIDIA/nccl#844: an Azure ML job on an NCCL older than 2.12; the job went on training (fixed by NCCL 2.17.1).
_H = "696b7901f9044f23b786795c0ef7257b000000:39:298 [0]"
_REM_ALLOC = (
    f"{_H} include/socket.h:423 NCCL WARN Net : Connection closed by remote peer 10.0.0.4<52638>\n"
    f"{_H} NCCL INFO include/socket.h:445 -> 2\n"
    f"{_H} NCCL INFO bootstrap.cc:229 -> 2\n"
    f"{_H} bootstrap.cc:279 NCCL WARN [Rem Allocator] Allocation failed (segment 0, fd 130)\n"
    f"{_H} include/alloc.h:48 NCCL WARN Cuda failure 'out of memory'\n"
    f"{_H} NCCL INFO bootstrap.cc:231 -> 1\n"
    f"{_H} bootstrap.cc:279 NCCL WARN [Rem Allocator] Allocation failed (segment 0, fd 130)\n"
    "Train Epoch: 1 [0/246000 (0%)]\tLoss: 0.036680415272713\n")


def test_nccls_remote_allocator_serving_a_stray_connection_is_not_the_gpus_memory(tmp_path: Path) -> None:
    check_row("nccl_rem_alloc", _REM_ALLOC.splitlines()[3],
              f"{_H} bootstrap.cc:262 NCCL WARN [Rem Allocator] Failed to set CUDA device 0")
    got = _found(tmp_path, _REM_ALLOC)
    assert got[0]["code"] == "LOG149" and got[0]["cause"] == "nccl_internal_bug", got
    # the allocation of the size it read, and the read that failed, are the service's: neither is a finding of its own
    assert not any(f["cause"] in ("cuda_oom", "peer_process_died") for f in got), got


def test_nccl_out_of_memory_in_another_thread_stays_the_gpus_memory(tmp_path: Path) -> None:
    other = "696b7901f9044f23b786795c0ef7257b000000:39:40 [0]"
    got = _found(tmp_path, _REM_ALLOC + f"{other} include/alloc.h:48 NCCL WARN Cuda failure 'out of memory'\n")
    assert [f["code"] for f in got][:2] == ["LOG149", "LOG031"], got


# wenet-e2e/wenet#1097: six GPUs, the ddp_init file of earlier runs still in the experiment folder.
_STALE = (
    "Added key: store_based_barrier_key:1 to store for rank: 0\n"
    "2022-05-09 22:30:27,597 INFO Waiting in store based barrier to initialize process group for rank: 0, key: "
    "store_based_barrier_key:1 (world_size=6, worker_count=287, timeout=0:30:00)\n")


def test_a_store_barrier_counting_past_the_world_is_a_store_from_earlier_runs(tmp_path: Path) -> None:
    got = _found(tmp_path, _STALE)
    assert got[0]["code"] == "LOG150" and got[0]["cause"] == "other", got
    assert "287" in got[0]["title"] and "6" in got[0]["title"]
    # fewer arrivals than the world is ranks missing, as before
    fewer = _found(tmp_path, _STALE.replace("worker_count=287", "worker_count=4"))
    assert fewer[0]["code"] == "LOG062", fewer


# Tlntin/Qwen-TensorRT-LLM#123: engines built for TP 4, run under mpirun -n 2 (TensorRT-LLM 0.8).
_TRT = (
    '  File "/usr/local/lib/python3.10/dist-packages/tensorrt_llm/runtime/model_runner_cpp.py", line 139, in from_dir\n'
    "    world_config = WorldConfig.mpi(tensor_parallelism=tp_size,\n"
    "RuntimeError: [TensorRT-LLM][ERROR] Assertion failed: mpiSize == tp * pp (/home/jenkins/agent/workspace/LLM/"
    "release-0.8/L0_PostMerge/tensorrt_llm/cpp/tensorrt_llm/runtime/worldConfig.cpp:90)\n")


def test_tensorrt_llms_mpi_size_check_is_the_launchs_process_count(tmp_path: Path) -> None:
    check_row("serving_shape", _TRT.splitlines()[2],
              "RuntimeError: [TensorRT-LLM][ERROR] Assertion failed: mTensorParallelism > 0 (worldConfig.cpp:40)")
    got = _found(tmp_path, _TRT)
    assert got[0]["code"] == "LOG066" and got[0]["cause"] == "launcher_misconfig", got
    assert "TP x PP" in got[0]["title"]


# awslabs/awsome-distributed-ai#647: the EFA provider's fatal report with a locked-memory limit of 64 KiB.
_EFA = (
    "Libfabric EFA provider has encountered an internal error:\n\n"
    "Libfabric error: (-12) Cannot allocate memory\n"
    "EFA internal error: (4112) Failure to post internal receive buffers\n\n"
    "Your application will now abort().\n")


def test_the_efa_providers_fatal_out_of_memory_is_the_locked_memory_limit(tmp_path: Path) -> None:
    check_row("ofi_nomem", "Libfabric error: (-12) Cannot allocate memory",
              "Libfabric error: (-110) Connection timed out")
    got = _found(tmp_path, _EFA)
    assert got[0]["code"] == "LOG035" and got[0]["cause"] == "rlimit_memlock", got


# pytorch/elastic#113 (round 67): torchelastic's etcd rendezvous on two nodes; etcd advertised 0.0.0.0.
_ETCD = (
    "[INFO] 2020-07-20 14:09:18,781 launch: Running torchelastic.distributed.launch with args: ['/usr/local/lib/"
    "python3.6/dist-packages/torchelastic/distributed/launch.py', '--nproc_per_node=4', '--nnodes=2', '--rdzv_id=0', "
    "'--rdzv_endpoint=172.20.74.130:2379', 'tools/train_net_elastic.py']\n"
    "INFO 2020-07-20 14:09:18,785 Etcd machines: ['http://0.0.0.0:2379']\n"
    "[INFO] 2020-07-20 14:09:19,358 api: [default] Rendezvous'ing worker group\n"
    "INFO 2020-07-20 14:09:19,358 Attempting to join next rendezvous\n")


def test_an_etcd_server_advertising_a_local_address_sends_other_hosts_to_themselves(tmp_path: Path) -> None:
    check_row("etcd_advertises_local", _ETCD.splitlines()[1],
              "INFO 2020-07-20 14:09:18,785 Etcd machines: ['http://172.20.74.130:2379']")
    got = _found(tmp_path, _ETCD)
    assert got[0]["code"] == "LOG151" and got[0]["cause"] == "rendezvous_unreachable", got
    assert "0.0.0.0" in got[0]["title"]
    # on a job that ran to its end (one node: its agents reach etcd on their own host) it is a risk, no cause
    done = _ETCD + ("[INFO] 2020-07-20 14:19:19,358 api: [default] worker group successfully finished. Waiting 300 "
                    "seconds for other agents to finish.\n")
    assert not _found(tmp_path, done)
