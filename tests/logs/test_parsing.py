"""The line classifier on the formats NCCL (2.0 to current), torch, gloo, MPI and UCX really print."""

from __future__ import annotations

import io

import pytest

from commdoctor.parsing.lines import MAX_LINE, classify, clean
from commdoctor.parsing.scan import Scanner, StdlibPrefilter, make_prefilter
from commdoctor.parsing.signatures import keywords, match_all


@pytest.mark.parametrize("line, level, host, pid, dev, file, msg", [
    # 2.19+: header, WARN with file:line
    ("node1:4827:6900 [4] bootstrap.cc:77 NCCL WARN Message truncated : received 256 bytes instead of 4",
     "WARN", "node1", 4827, 4, "bootstrap.cc", "Message truncated : received 256 bytes instead of 4"),
    # 2.26+: timestamp and (function) on WARN
    ("[2025-03-01 10:00:00] node1:12:34 [0] misc/socket.cc:49 (socketProgress) NCCL WARN socketProgress: Connection closed by remote peer",
     "WARN", "node1", 12, 0, "misc/socket.cc", "socketProgress: Connection closed by remote peer"),
    # 2.0-era: no NCCL word
    ("idgsim-gpu-001:47744:47744 [0] init.cu:674 WARN Cuda failure 'CUDA driver version is insufficient for CUDA runtime version'",
     "WARN", "idgsim-gpu-001", 47744, 0, "init.cu", "Cuda failure 'CUDA driver version is insufficient for CUDA runtime version'"),
    ("mtk:2521:2528 [0] INFO 0 -> 1 via P2P/IPC", "INFO", "mtk", 2521, 0, None, "0 -> 1 via P2P/IPC"),
    # header cut off by the poster
    ("[3] include/shm.h:28 NCCL WARN Call to posix_fallocate failed : No space left on device",
     "WARN", None, None, 3, "include/shm.h", "Call to posix_fallocate failed : No space left on device"),
    ("NCCL WARN NET/IB : Got async event : port error", "WARN", None, None, None, None, "NET/IB : Got async event : port error"),
    # launcher prefixes, stacked, and ANSI colour (with and without its escape byte)
    ("1: [default0]:host-a:1:2 [1] NCCL INFO Using network Socket", "INFO", "host-a", 1, 1, None, "Using network Socket"),
    ("\x1b[32mhost-a:1:2 [1] NCCL INFO Using network IB\x1b[0m", "INFO", "host-a", 1, 1, None, "Using network IB"),
    ("[0m host-a:1:2 [1] NCCL INFO Using network IB", "INFO", "host-a", 1, 1, None, "Using network IB"),
])
def test_nccl_lines(line: str, level: str, host: str | None, pid: int | None, dev: int | None, file: str | None, msg: str) -> None:
    text, _ = clean(line.encode() + b"\r\n")
    assert text is not None
    r = classify(text)
    assert (r.kind, r.level, r.host, r.pid, r.dev, r.file, r.msg) == ("nccl", level, host, pid, dev, file, msg)


def test_retcode_trace_and_version() -> None:
    r = classify("node:1:2 [0] NCCL INFO transport/p2p.cc:204 -> 1 [Proxy Thread]")
    assert (r.retcode, r.file, r.line) == (1, "transport/p2p.cc", 204)
    v = classify("NCCL version 2.21.5+cuda12.4")
    assert (v.kind, v.version) == ("version", "2.21.5")


def test_torch_lines() -> None:
    w = classify("[rank1]:[E415 21:17:08.996319560 ProcessGroupNCCL.cpp:552] [Rank 1] Collective WorkNCCL(SeqNum=335, "
                 "OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) raised the following async exception")
    assert (w.kind, w.level, w.rank, w.file) == ("c10d", "E", 1, "ProcessGroupNCCL.cpp")
    assert "SeqNum=335" in w.msg
    e = classify("torch.distributed.DistNetworkError: The server socket has failed to listen on any local network address.")
    assert (e.kind, e.exc_type) == ("exception", "DistNetworkError")
    ray = classify("(RayWorkerVllm pid=5085) [E ProcessGroupNCCL.cpp:475] [Rank 4] Watchdog caught collective operation timeout")
    assert (ray.kind, ray.actor) == ("c10d", "RayWorkerVllm pid=5085")


@pytest.mark.parametrize("text, sig", [
    ("[c10d] The server socket has failed to bind to [::]:29400 (errno: 98 - Address already in use).", "port_in_use"),
    ("[/x/gloo/transport/tcp/pair.cc:724] connect [127.0.1.1]:3210: Connection refused", "connect_loopback"),
    ("[enforce fail at gloo/transport/tcp/device.cc:84] ifa != nullptr. Unable to find address for: eth9", "ifname_missing"),
    ("op.preamble.length <= op.nbytes. 8 vs 4. Received data size doesn't match expected size.", "collective_mismatch"),
    ("[second-node][[22157,1],4][btl_tcp_endpoint.c:626:mca_btl_tcp_endpoint_recv_connect_ack] received unexpected process identifier [[22157,1],7]", "mpi_btl_tcp"),
    ("[cn0022:4071024:0] ib_iface.c:1035 UCX  ERROR ibv_create_cq(cqe=4096) failed: Cannot allocate memory", "memlock"),
    ("Timed out waiting 10000ms for recv operation to complete", "gloo_recv_timeout"),
    ("Duplicate GPU detected : rank 1 and rank 0 both on CUDA device 83000", "duplicate_gpu"),
])
def test_signatures(text: str, sig: str) -> None:
    assert sig in [s.id for s, _ in match_all(text)]


def _scan(data: bytes, prefilter=None, block: int = 64) -> list[tuple[int, bytes]]:
    sc = Scanner(prefilter or make_prefilter())
    return list(sc.scan(io.BytesIO(data), block_size=block))


@pytest.mark.parametrize("engine", ["auto", "re"])
def test_scanner_finds_keyword_lines_with_their_numbers(engine: str) -> None:
    data = b"".join(f"host:1:1 [0] NCCL INFO Channel {i:02d}/0 : 0[0] -> 1[1] via P2P/IPC\n".encode() for i in range(40))
    data += b"host:1:1 [0] misc/socket.cc:49 NCCL WARN Connection closed by remote peer\n" + data + b"tail WARN no newline"
    got = _scan(data, make_prefilter(engine), block=256)
    assert got == [(41, b"host:1:1 [0] misc/socket.cc:49 NCCL WARN Connection closed by remote peer"),
                   (82, b"tail WARN no newline")]


def test_scanner_cuts_overlong_lines_and_keeps_counting() -> None:
    sc = Scanner(StdlibPrefilter(keywords()))
    data = b"x" * (3 * MAX_LINE) + b" WARN at the end\nnext NCCL WARN line\n"
    got = list(sc.scan(io.BytesIO(data), block_size=4096))
    assert got == [(2, b"next NCCL WARN line")] and sc.stats.overlong == 1 and sc.stats.lines == 2


def test_clean_drops_binary_and_repairs_encoding() -> None:
    assert clean(bytes(range(0, 32)) * 4)[0] is None
    text, flags = clean("host:1:1 [0] NCCL WARN caf\xe9".encode("latin-1"))
    assert text is not None and text.startswith("host:1:1") and flags & 1


@pytest.mark.parametrize("piece", ["a:1:1 ", "[", "WARN ", "Channel 0 : ", ":", "x:1:1 [0] ", "[rank1]:", "1: ", "(A pid=1) ",
                                   "NCCL INFO comm 0x1 rank 1 nranks 2 ", "Got completion with error ", "connect [127.0.0.1",
                                   "WorkNCCL(SeqNum=1, OpType=X", "[E1 1:1 a.cpp:1] ", "INFO 1 -> 2 via ", " "])
def test_hostile_lines_cost_little(piece: str) -> None:
    """A line of one repeated fragment, as long as we parse, is handled in linear time (generous bound)."""
    import time

    from commdoctor.loaders.logs import RunModel, _Builder

    line = (piece * (MAX_LINE // len(piece) + 1))[:MAX_LINE]
    t = time.perf_counter()
    _Builder(RunModel()).line("x", 1, line)
    assert time.perf_counter() - t < 2.0


def test_torchs_routine_process_group_lines_are_not_parsed_in_full() -> None:
    """torch writes ProcessGroupNCCL/Gloo INFO lines all through a long job (TORCH_CPP_LOG_LEVEL=INFO): a log
    of them must not make every line a candidate (each one is classified and run through every signature),
    while the errors torch's NCCL process group prints still are. A needle of a context-only signature
    once made a 1 GB log 30 times slower to read."""
    routine = (b"[rank3]:[I1121 06:03:03.000003] ProcessGroupNCCL.cpp:2291] [PG ID 0 PG GUID 0(default_pg) Rank 3] "
               b"ProcessGroupNCCL broadcast unique ID through store took 0.1 ms\n")
    error = (b"[rank3]:[E1121 06:33:03.000003] ProcessGroupNCCL.cpp:616] [Rank 3] Watchdog caught collective operation "
             b"timeout: WorkNCCL(SeqNum=1041, OpType=ALLREDUCE, NumelIn=4, NumelOut=4, Timeout(ms)=600000) ran for "
             b"600014 milliseconds before timing out.\n")
    sc = Scanner(make_prefilter())
    got = list(sc.scan(io.BytesIO(routine * 5000 + error)))
    assert sc.stats.lines == 5001
    assert sc.stats.candidates <= 10, sc.stats.candidates
    assert any(b"WorkNCCL" in text for _, text in got)


def test_mpirun_tag_output_prefix_gives_the_rank() -> None:
    from commdoctor.parsing.lines import classify

    rec = classify("[1,5]<stderr>:[E1121 10:00:00.1 ProcessGroupNCCL.cpp:900] [Rank 5] Watchdog caught collective operation timeout")
    assert (rec.kind, rec.level, rec.rank) == ("c10d", "E", 5)
    assert classify("[1,5]<stdout>:node1:10:11 [0] misc/socket.cc:1 NCCL WARN x").host == "node1"


def test_torch_python_logging_lines_have_a_level() -> None:
    """The elastic agent's lines (H100 captures): a warning is a warning, its exit report is not a new error."""
    from commdoctor.parsing.lines import classify

    rec = classify("W1124 22:41:11.243000 1062 torch/distributed/elastic/multiprocessing/api.py:1012] Sending process 1084 "
                   "closing signal SIGTERM")
    assert (rec.kind, rec.level, rec.msg) == ("c10d", "W", "Sending process 1084 closing signal SIGTERM")
    assert classify("I0207 07:09:26.591536 47744 dynamic_loader.cc:67] Try to find library").kind == "text"


def test_a_sentence_that_names_ncclS_level_is_not_an_nccl_line() -> None:
    """A poster quoting NCCL's message and naming where it came from ('"..." from NCCL INFO.') wrote no header:
    the line is text, so the message is read whole (here: two ranks on one GPU), not as an INFO line with the
    message '.'; a headless line whose message follows the tag is still NCCL's."""
    quoted = classify('"Duplicate GPU detected : rank 1 and rank 0 both on CUDA device 3b000" from NCCL INFO.')
    assert quoted.kind == "text" and "Duplicate GPU detected" in (quoted.msg or quoted.text)
    near = classify("[0] NCCL INFO Ring 00 : 0 1")
    assert (near.kind, near.level, near.dev, near.msg) == ("nccl", "INFO", 0, "Ring 00 : 0 1")


def test_a_quoted_duplicate_gpu_message_is_the_verdict(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from tests.conftest import run_json

    log = tmp_path / "job.log"
    log.write_text('"Duplicate GPU detected : rank 1 and rank 0 both on CUDA device 3b000" from NCCL INFO.\n')
    doc, _ = run_json("logs", str(log))
    verdict = [r for r in doc["results"] if r.get("data", {}).get("verdict")][0]["data"]["verdict"]
    assert verdict["cause"] == "duplicate_gpu", verdict


def test_a_time_the_capture_put_in_front_is_a_prefix() -> None:
    """Logs piped through moreutils ``ts`` or saved by ``kubectl logs --timestamps`` (bench/multihost_logs --capture
    logging-ts): the line behind the time is read as if it were alone; a message that only mentions a time is not cut."""
    from commdoctor.parsing.lines import classify, raw_owner

    rec = classify("0: Nov 27 20:36:31 [rank1]: ValueError: batch 3 has 0 samples after filtering (rank 1)")
    assert (rec.kind, rec.exc_type, rec.rank, rec.task) == ("exception", "ValueError", 1, 0)
    rec = classify("2026-11-27T20:36:31.123456789Z [rank3]: Traceback (most recent call last):")
    assert (rec.kind, rec.rank) == ("traceback", 3)
    assert classify("[2026-11-27 20:36:31] node1:10:11 [0] misc/socket.cc:1 NCCL WARN x").host == "node1"
    assert raw_owner(b"Nov 27 20:36:31 [rank2]:[E1127 20:36:31.46 socket.cpp:818] x").rank == 2
    near = classify("checkpoint written at 2026-11-27 20:36:31 to /ckpt")
    assert near.kind == "text" and near.msg.startswith("checkpoint")


def test_docker_compose_container_names_are_a_prefix() -> None:
    """``docker compose up`` puts each container's name, padded, and a bar in front of its lines."""
    from commdoctor.parsing.lines import classify, raw_owner

    rec = classify("trainer-1  | [rank1]: ValueError: num_attention_heads (28) must be a multiple of tensor_model_parallel_size (8).")
    assert (rec.kind, rec.exc_type, rec.rank) == ("exception", "ValueError", 1)
    assert classify("proj_worker_12 | node1:10:11 [0] misc/socket.cc:1 NCCL WARN x").host == "node1"
    assert raw_owner(b"trainer-1  | [rank2]:[E1127 20:36:31.46 socket.cpp:818] x").rank == 2
    # A table row of a program's own output keeps its bar: no container index before it.
    near = classify("loss  | 0.53 | ValueError: not a prefix")
    assert near.kind == "text"


def test_a_windows_builds_glog_line_keeps_its_level() -> None:
    """torch's Windows wheels name the build machine's path in glog's head; the line is still a c10d warning, so
    its connect retry is not read as a failure (torchgeo/torchgeo#1198: the run failed for another reason)."""
    from commdoctor.parsing.lines import classify

    rec = classify(r"[W C:\actions-runner\_work\pytorch\pytorch\builder\windows\pytorch\torch\csrc\distributed\c10d\socket.cpp:601] "
                   "[c10d] The client socket has failed to connect to [t2]:58152 (system error: 10049 - The requested "
                   "address is not valid in its context.).")
    assert (rec.kind, rec.level, rec.file) == ("c10d", "W", r"C:\actions-runner\_work\pytorch\pytorch\builder\windows\pytorch\torch\csrc\distributed\c10d\socket.cpp")
    # A bracketed word with a drive-like colon but no source line is no glog head.
    assert classify("[W C:\\data] loading").kind == "text"


def test_ncclS_repeated_connected_note_is_read_a_bounded_number_of_times_per_input(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """NCCL says "Connected all rings" at every communicator's set-up; a long job's log repeats it thousands of
    times and the rules need it once. Past REPEATED_KEEP per input the scanner (hyperscan) reports no more of
    it, the lines around it are still found, and the next input counts afresh; the verdict does not change."""
    from commdoctor.parsing.scan import REPEATED_KEEP
    from tests.conftest import run_json

    note = b"node1:11:22 [0] NCCL INFO Connected all rings\n"
    warn = b"node1:11:22 [0] misc/socket.cc:49 NCCL WARN Connection closed by remote peer\n"
    data = note * 500 + warn + note * 500
    pf = make_prefilter("auto")
    got = _scan(data, pf, block=4096)
    assert (501, warn.rstrip()) in got
    if pf.name == "hyperscan":
        assert len(got) == REPEATED_KEEP + 1, len(got)
        assert len(_scan(data, pf, block=4096)) == REPEATED_KEEP + 1  # a new input starts its own count
    # The whole command: the same verdict with 1,000 repeats as with two.
    verdicts = []
    for n in (1, 500):
        log = tmp_path / f"job{n}.log"
        log.write_bytes(note * n + warn + note * n)
        doc, _ = run_json("logs", str(log))
        verdicts.append([{k: v[k] for k in ("code", "cause", "host")}
                         for v in (r["data"].get("verdict") for r in doc["results"]) if v])
    assert verdicts[0] == verdicts[1] and verdicts[0], verdicts


def test_a_plugin_warn_that_names_its_function_keeps_its_host() -> None:
    # aws-ofi-nccl (aws/aws-ofi-nccl#982) logs __PRETTY_FUNCTION__ where NCCL writes file:line
    from commdoctor.parsing.lines import classify
    rec = classify("a100-st-p4de24xlarge-668:789818:790167 [6] ncclResult_t nccl_ofi_tuner_init_v1(size_t, size_t, "
                   "ncclDebugLogger_t):270 NCCL WARN NET/OFI The tuner plugin can not be loaded")
    assert (rec.kind, rec.level, rec.host, rec.pid, rec.dev, rec.line) == ("nccl", "WARN", "a100-st-p4de24xlarge-668",
                                                                          789818, 6, 270)
    assert rec.msg == "NET/OFI The tuner plugin can not be loaded"
