"""Public failure threads, rounds 22-25.

A DMA-BUF registration that ran out of memory (not the locked-memory limit); ranks whose last collectives, as
ProcessGroupWrapper traced them under TORCH_DISTRIBUTED_DEBUG=DETAIL, are not the same one where the log stops; a rank
that failed waiting for the main process in main_process_first(); and CUDA's "stub library" error from NCCL's own
compatibility layer; MPICH's PMI client and Hydra not resolving a host name, UCX refused an address handle on a RoCE
port, and NCCL's transport connection closed by a peer that was killed.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from logs.test_corpus import diagnose_file
from logs.test_rule_rows import check_row

_DMABUF = ("[2025-06-16 17:17:39] kilo:318:3584 [5] misc/ibvwrap.cc:183 NCCL WARN Call to ibv_reg_dmabuf_mr failed with "
           "error Cannot allocate memory")
_MAIN_FIRST = ('File "/mnt/data/envs/chatglm_etuning/lib/python3.9/site-packages/transformers/training_args.py", line '
               '1891, in main_process_first')
_AH = ("[1641998540.196336] [erchpctmpcpu01:31658:0]       ib_device.c:1319 UCX  ERROR   ibv_create_ah(dlid=49152 sl=0 "
       "port=1 src_path_bits=0 dgid=::ffff:172.17.22.101 sgid_index=1 traffic_class=106) on rocep33s0f1 failed: Invalid "
       "argument")
_HYDRA = ("[proxy:0:1@gunavaran-HP-Pavilion-Notebook] HYDU_sock_connect (utils/sock/sock.c:113): unable to get host address "
          "for gunavaran-HP-ENVY-15-Notebook-PC")
ROWS = [
    # (rule id, real line, near-miss)
    # MPICH's simple PMI client (pmodels/mpich#6621); the connect failure after it is its consequence
    ("pmi_host_entry", "[unset]: Unable to get host entry for MAC-140753", "[unset]: Unable to connect to MAC-140753 on 54163"),
    # Hydra's HYDU_sock_connect (pmodels/mpich#4712); a refused connection to a resolved name is another failure
    ("hydra_host_address", _HYDRA,
     "[proxy:0:1@gunavaran-HP-Pavilion-Notebook] main (pm/pmiserv/pmip.c:181): unable to connect to server "
     "gunavaran-HP-ENVY-15-Notebook-PC at port 41849 (check for firewalls!)"),
    # UCX's address handle refused (open-mpi/ompi#9881); out of memory creating it is a resource, not the setup
    ("ucx_create_ah", _AH, _AH.replace("Invalid argument", "Cannot allocate memory")),
    # a frame inside transformers' main_process_first (hiyouga/ChatGLM-Efficient-Tuning#137); the code line calling
    # it is in the caller's frame, not a rank waiting inside it
    # (the call site `with training_args.main_process_first(...)` in a traceback is the barrier too: a `with` line
    # stands in a traceback only when entering or leaving the block raised; a definition is not)
    ("main_first_frame", _MAIN_FIRST, '    def main_process_first(self, local=True, desc="work"):'),
    # misc/ibvwrap.cc (vllm-project/vllm#19613: an oversized NCCL_BUFFSIZE); ibv_reg_mr's ENOMEM is the memlock limit
    ("ib_reg_dmabuf_nomem", _DMABUF, "h:1:2 [0] misc/ibvwrap.cc:180 NCCL WARN Call to ibv_reg_mr failed with error Cannot "
                                     "allocate memory"),
]


@pytest.mark.parametrize("rule, line, near", ROWS, ids=[f"{r[0]}-{i}" for i, r in enumerate(ROWS)])
def test_row_matches_its_line_and_not_the_near_miss(rule: str, line: str, near: str) -> None:
    check_row(rule, line, near)


def _found(tmp_path: Path, text: str) -> list[tuple[str, str]]:
    p = tmp_path / "job.log"
    p.write_text(text)
    return [(f["code"], f["cause"]) for f in diagnose_file(p)["findings"] if f["cause"]]


def test_dmabuf_registration_out_of_memory_is_not_the_memlock_limit(tmp_path: Path) -> None:
    tail = ("\nERROR 06-13 07:35:59 [core.py:517] cupy_backends.cuda.libs.nccl.NcclError: NCCL_ERROR_SYSTEM_ERROR: "
            "unhandled system error (run with NCCL_DEBUG=INFO for details)\n")
    assert _found(tmp_path, _DMABUF + tail) == [("LOG102", "other")]
    # registering pinned host pages (ibv_reg_mr) is charged to RLIMIT_MEMLOCK: that ENOMEM stays the limit's
    near = next(r[2] for r in ROWS if r[0] == "ib_reg_dmabuf_nomem")
    assert _found(tmp_path, near + tail)[0][1] == "rlimit_memlock"


def _fp(rank: int, seq: int, op: str = "ALLREDUCE", shape: str = "[4]", dtype: str = "Float") -> str:
    return (f"[I ProcessGroupWrapper.cpp:562] [Rank {rank}] Running collective: CollectiveFingerPrint(SequenceNumber="
            f"{seq}, OpType={op}, TensorShape={shape}, TensorDtypes={dtype}, TensorDeviceTypes=TensorOptions(dtype=float "
            "(default), device=cuda, layout=Strided (default), requires_grad=false (default), pinned_memory=false "
            "(default), memory_format=(nullopt)))\n")


def test_ranks_last_traced_at_different_collectives_are_a_mismatch(tmp_path: Path) -> None:
    # Lightning-AI/pytorch-lightning#19106 as posted: the last trace of each of three ranks
    posted = _fp(1, 3, "BROADCAST", "[1]", "Long") + _fp(0, 4, "BROADCAST", "[73]", "Byte") + \
        _fp(2, 4, "BROADCAST", "[73]", "Byte")
    assert _found(tmp_path, posted) == [("LOG050", "collective_mismatch"), ("LOG090", "collective_timeout_straggler")]
    p = tmp_path / "job.log"
    detail = next(f for f in diagnose_file(p)["findings"] if f["code"] == "LOG050")["detail"]
    assert "rank 1 at #3 OpType=BROADCAST, TensorShape=[1]" in detail and "ranks 0, 2 at #4" in detail
    # one collective number traced differently on two ranks: the ranks issued different collectives, no alternative
    assert _found(tmp_path, _fp(0, 1) + _fp(1, 1) + _fp(0, 2) + _fp(1, 2, "BROADCAST")) == \
        [("LOG050", "collective_mismatch")]


def test_ranks_in_step_or_only_behind_are_no_mismatch(tmp_path: Path) -> None:
    # a running job's log: rank 1 has not traced #3 yet, and the #2 it is at is rank 0's #2
    assert _found(tmp_path, _fp(0, 1) + _fp(1, 1) + _fp(0, 2) + _fp(1, 2) + _fp(0, 3)) == []
    assert _found(tmp_path, _fp(0, 5) + _fp(1, 5)) == []
    # the job's end says it finished, whatever was traced last
    assert _found(tmp_path, _fp(1, 3) + _fp(0, 4) + "h:1:2 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 busId "
                                                   "1000 - Destroy COMPLETE\n") == []


def test_a_rank_failing_inside_main_process_first_waited_for_the_main_process(tmp_path: Path) -> None:
    # ChatGLM-Efficient-Tuning#137 as stored: the progress bar ran into the traceback's header, whose exception line is cut
    posted = ("Running tokenizer on dataset: 47%|███████▊ | 3169000/6811963 [30:11<38:27, 1578.58 examples/s]Traceback "
              "(most recent call last):\n"
              'File "/job/src/train_sft.py", line 25, in main\n'
              'dataset = preprocess_data(dataset, tokenizer, data_args, training_args, stage="sft")\n'
              'File "/job/src/utils/common.py", line 506, in preprocess_data\n'
              'with training_args.main_process_first(desc="dataset map pre-processing"):\n' + _MAIN_FIRST + "\n"
              "torch.distributed.barrier()\n")
    assert _found(tmp_path, posted) == [("LOG051", "collective_timeout_straggler"), ("LOG090", "peer_process_died")]
    # the main process's own failure during the preparation is the cause, not the wait
    oom = "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
    assert _found(tmp_path, posted + oom)[0][1] != "collective_timeout_straggler"


_STUB = "mcmurdo:165440:165448 [0] init.cc:252 NCCL WARN Cuda failure 'CUDA driver is a stub library'\n"


def test_ncclS_stub_library_error_is_its_compatibility_layer_from_2_12(tmp_path: Path) -> None:
    # NVIDIA/nccl#658: NCCL 2.12.7 built with a shared CUDA runtime, the real driver loaded
    assert _found(tmp_path, "NCCL version 2.12.7+cuda11.4\n" + _STUB)[:1] == [("LOG070", "nccl_internal_bug")]
    # before 2.12 there was no such layer: the process loaded the toolkit's stub libcuda.so
    assert _found(tmp_path, "NCCL version 2.11.4+cuda11.4\n" + _STUB) == [("LOG081", "other")]
    assert _found(tmp_path, "RuntimeError: CUDA error: CUDA driver is a stub library\n") == [("LOG081", "other")]


def test_mpi_host_names_that_do_not_resolve_are_the_cause(tmp_path: Path) -> None:
    pmi = ("[unset]: Unable to get host entry for MAC-140753\n[unset]: Unable to connect to MAC-140753 on 54163\n"
           "Abort(739366159): Fatal error in internal_Init_thread: Other MPI error, error stack:\n"
           "MPIR_pmi_init(126)......: PMI_Init returned -1\n")
    assert _found(tmp_path, pmi)[:1] == [("LOG015", "hostname_resolution")]
    # ssh's complaint beside it is a side issue
    hydra = (_HYDRA + "\n[proxy:0:1@gunavaran-HP-Pavilion-Notebook] main (pm/pmiserv/pmip.c:181): unable to connect to "
             "server gunavaran-HP-ENVY-15-Notebook-PC at port 41849 (check for firewalls!)\nHost key verification failed.\n")
    assert _found(tmp_path, hydra)[:1] == [("LOG015", "hostname_resolution")]


def test_ucx_address_handle_refused_on_a_roce_port_is_the_setup(tmp_path: Path) -> None:
    found = _found(tmp_path, _AH + "\n[erchpctmpcpu01:31658:0:31658]    ud_iface.c:48   Fatal: iface 0xb32050: failed to get "
                             "peer address\n")
    assert found[:1] == [("LOG036", "ib_misconfig")]
    p = tmp_path / "job.log"
    assert "rocep33s0f1" in next(f for f in diagnose_file(p)["findings"] if f["code"] == "LOG036")["detail"]


_CLOSED = "multigpu:141:158 [0] include/socket.h:416 NCCL WARN Net : Connection closed by remote peer\n"
_RAISED = "RuntimeError: NCCL error: unhandled system error, NCCL version 2.7.8\n"


def test_a_transport_connection_closed_by_its_peer_is_the_peer_not_the_interface(tmp_path: Path) -> None:
    # pytorch/elastic#134: workers killed on purpose; the survivor's Socket transport saw its connection closed
    transport = ("multigpu:141:158 [0] NCCL INFO transport/net_socket.cc:405 -> 2\n"
                 "multigpu:141:158 [0] NCCL INFO include/net.h:28 -> 2\n")
    assert _found(tmp_path, _CLOSED + transport + _RAISED)[:1] == [("LOG061", "peer_process_died")]
    # closed while NCCL bootstraps, before any transport connection exists: the address may lead to the wrong process
    boot = "multigpu:141:158 [0] NCCL INFO bootstrap.cc:80 -> 2\n"
    assert _found(tmp_path, _CLOSED + boot + _RAISED)[0][1] != "peer_process_died"
