"""MPI, UCX, PMI and backend-not-built signatures: real output from public threads and from this machine.

Fixtures under fixtures/logs/ hold the real lines with their provenance (PROVENANCE.md: the thread, or the
command that captured them here). Unit lines below are built from the format strings in the libraries'
sources (file named beside each), filled as the libraries fill them.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from commdoctor.parsing.signatures import match_all
from logs.test_corpus import diagnose_file

FIX = Path(__file__).resolve().parents[2] / "fixtures" / "logs"


def _roots(doc: dict) -> list[dict]:
    return [f for f in doc["findings"] if f["code"].startswith("LOG") and f["code"] not in ("LOG090",)]


@pytest.mark.parametrize("scenario, code, cause, words", [
    ("mpirun-rank-killed", "LOG060", "peer_process_died", ["rank 7", "HOSTNAME", "signal 9"]),
    ("mpich-bad-termination", "LOG060", "peer_process_died", ["SIGKILL", "EXIT CODE 9"]),
    ("ucx-destination-unreachable", "LOG027", "wrong_interface", ["no active messages transport"]),
    ("ucx-device-not-enabled", "LOG027", "wrong_interface", ["br-vsw-1", "UCX_NET_DEVICES"]),
    ("backend-nccl-cpu-build", "LOG043", "other", ["nccl"]),
    ("backend-mpi-cpu-build", "LOG043", "other", ["mpi"]),
])
def test_real_output_is_diagnosed(scenario: str, code: str, cause: str, words: list[str]) -> None:
    folder = FIX / scenario
    assert (folder / "PROVENANCE.md").is_file()
    log = next(p for p in folder.iterdir() if p.suffix in (".txt", ".log"))
    doc = diagnose_file(log)
    first = _roots(doc)[0]
    assert (first["code"], first["cause"]) == (code, cause)
    for w in words:
        assert w in first["title"]
    lines = log.read_text().splitlines()
    for e in first["evidence"]:
        assert e["text"] in lines[e["line"] - 1]


@pytest.mark.parametrize("backend, fallback", [("nccl", "Use gloo on this host"), ("mpi", "Build torch from source against your MPI")])
def test_backend_not_built_names_cause_and_fallback(backend: str, fallback: str) -> None:
    """The real 2-rank torchrun job asking for a backend this CPU build lacks: the cause first, the exits after it."""
    doc = diagnose_file(FIX / f"backend-{backend}-cpu-build" / "torchrun.log")
    first = _roots(doc)[0]
    assert first["remedy"]["summary"].startswith(fallback)
    assert "gloo" in first["detail"]
    assert "doesn't have" in first["evidence"][0]["text"]
    died = [f for f in doc["findings"] if f["code"] == "LOG060"]
    assert died and all(f["consequence_of"] == "LOG043" for f in died)


def test_ucx_remedy_names_ucx_settings_only() -> None:
    doc = diagnose_file(FIX / "ucx-destination-unreachable" / "log.txt")
    env = _roots(doc)[0]["remedy"]["env"]
    assert "UCX_NET_DEVICES" in env and "NCCL_SOCKET_IFNAME" not in env and "GLOO_SOCKET_IFNAME" not in env


# Lines built from the libraries' format strings (source file named), as the libraries print them.
UNIT = [
    # opal/mca/btl/tcp/help-mpi-btl-tcp.txt [client connect fail] (Open MPI 5)
    ("WARNING: Open MPI failed to TCP connect to a peer MPI process.  This", "mpi_tcp_peer"),
    # opal/mca/btl/tcp/help-mpi-btl-tcp.txt [server accept cannot find guid]
    ("another Open MPI process but cannot find a corresponding process", "mpi_tcp_peer"),
    # ompi/mca/bml/r2/help-mca-bml-r2.txt [unreachable proc]
    ("At least one pair of MPI processes are unable to reach each other for", "mpi_tcp_peer"),
    # opal/mca/btl/tcp/help-mpi-btl-tcp.txt [invalid if_inexclude]
    ("WARNING: An invalid value was given for btl_tcp_if_include.  This", "mpi_if_setting"),
    # orte/mca/oob/tcp/help-oob-tcp.txt [no-included-found] (v4.1)
    ("None of the TCP networks specified to be included for out-of-band communications", "mpi_if_setting"),
    # orte/mca/errmgr/base/help-errmgr-base.txt [failed-daemon-launch], [node-died], [no-connect]
    ("ORTE was unable to reliably start one or more daemons.", "mpi_daemon_connect"),
    ("PRTE has lost communication with a remote daemon.", "mpi_daemon_connect"),
    ("ORTE is unable to establish a communication connection to the", "mpi_daemon_connect"),
    # orte/tools/orterun/help-orterun.txt [orterun:proc-aborted-strsignal]
    ("mpirun noticed that process rank 3 with PID 4242 on node node07 exited on signal 11 (Segmentation fault).", "mpirun_signal"),
    # orte/mca/errmgr/base/help-errmgr-base.txt [normal-termination-but] (line broken as printed)
    ("Primary job  terminated normally, but 1 process returned", "mpirun_exit"),
    # orte/mca/ess/base/help-ess-base.txt [slurm-error]
    ('The application appears to have been direct launched using "srun",', "pmi_error"),
    # src/pm/hydra/lib/utils/sock.c (MPICH)
    ('[proxy:0:1@node2] HYDU_sock_connect (lib/utils/sock.c:141): unable to connect from "node2" to "node1" (No route to host)',
     "hydra_connect"),
    # src/pm/hydra/mpiexec/pmiserv_cb.c
    ("=   BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES", "mpich_bad_termination"),
    # src/ucp/core/ucp_context.c
    ("[1700000000.1] [n1:77:0]    ucp_context.c:1770 UCX  ERROR no usable transports/devices (asked tcp on eth9)", "ucx_no_devices"),
    # ompi/mca/pml/ucx/pml_ucx.c
    ("[n1:77] pml_ucx.c:437  Error: ucp_ep_create(proc=1) failed: Destination is unreachable", "ucx_unreachable"),
    # src/uct/ib/base/ib_md.c + ib_log.c: a registration refused for lack of locked memory
    ("[1700000000.2] [n1:77:0]  ib_md.c:540  UCX  ERROR ibv_reg_mr(address=0x7f0000000000, length=4194304, access=0xf) "
     "failed: Cannot allocate memory : Please set max locked memory (ulimit -l) to 'unlimited' (current: 65536 kbytes)", "memlock"),
    # torch/distributed/distributed_c10d.py
    ("RuntimeError: Distributed package doesn't have UCC built in", "backend_not_built"),
]


@pytest.mark.parametrize("line, sig", UNIT, ids=[s for _, s in UNIT])
def test_signature_from_the_source_format(line: str, sig: str) -> None:
    assert sig in [s.id for s, _ in match_all(line)]


@pytest.mark.parametrize("line", [
    "mpirun -np 2 --mca btl_tcp_if_include eth0 python train.py",  # a command line, not a failure
    "UCX_NET_DEVICES=mlx5_0:1",
    "NCCL INFO Using network Socket",
])
def test_settings_are_not_failures(line: str) -> None:
    roots = [s.id for s, _ in match_all(line) if s.role != "context"]
    assert roots == []


def test_hydra_refused_is_a_firewall_reading(tmp_path: Path) -> None:
    log = tmp_path / "hydra.log"
    log.write_text('[proxy:0:1@node2] HYDU_sock_connect (lib/utils/sock.c:141): unable to connect from "node2" to "node1" '
                   "(Connection refused)\n")
    first = _roots(diagnose_file(log))[0]
    assert (first["code"], first["cause"]) == ("LOG063", "firewall_or_port_blocked")
    assert "HYDRA_IFACE" in first["remedy"]["env"]


# Open MPI's error handler before MPI_Init / after MPI_Finalize (ompi/errhandler): llm.c's multi-node branch called
# MPI_Barrier without MPI_Init (karpathy/llm.c#426; fixed by adding the MPI_Init call).
_BEFORE_INIT = ("*** The MPI_Barrier() function was called before MPI_INIT was invoked.",
                "*** This is disallowed by the MPI standard.",
                "*** Your MPI job will now abort.")


def test_an_mpi_call_before_mpi_init_is_the_programs_order(tmp_path: Path) -> None:
    from logs.test_corpus import diagnose_lines

    f = next(f for f in diagnose_lines(tmp_path / "a.log", *_BEFORE_INIT)["findings"] if f["cause"])
    assert (f["code"], f["cause"]) == ("LOG118", "other") and "MPI_Barrier() before MPI_Init" in f["title"]
    after = "*** The MPI_Comm_free() function was called after MPI_FINALIZE was invoked."
    f = next(f for f in diagnose_lines(tmp_path / "b.log", after)["findings"] if f["cause"])
    assert f["code"] == "LOG118" and "after MPI_Finalize" in f["title"]


def test_mpi_init_reported_as_called_before_itself_is_inits_own_failure(tmp_path: Path) -> None:
    """Near-miss: MPI_Init that failed is reported by the same handler with its own name; the lines before it say
    why, and the program's call order is not in question. Still an error, never healthy."""
    from logs.test_corpus import diagnose_lines

    doc = diagnose_lines(tmp_path / "c.log", "  ompi_mpi_init: orte_init failed",
                         '  --> Returned "Pack data mismatch" (-22) instead of "Success" (0)',
                         "*** The MPI_Init() function was called before MPI_INIT was invoked.",
                         "*** This is disallowed by the MPI standard.", "*** Your MPI job will now abort.")
    assert not any(f["code"] == "LOG118" for f in doc["findings"])
    assert any(f["severity"] == "error" for f in doc["findings"]), doc["findings"]


# openucx/ucx#3776: osu_latency with device buffers under UCX_TLS=rc,gdr_copy (no cuda_copy) crashes in the host
# memcpy that UCX's short active message makes of the GPU buffer (UCX's handler, no debug information).
_UCX_NO_CUDA_COPY = ("==== backtrace ====",
                     "    0  libucs.so.0(+0x20b1c) [0x7f1a9b56fb1c]",
                     "    1  libucs.so.0(+0x20d94) [0x7f1a9b56fd94]",
                     "    2  /lib/x86_64-linux-gnu/libpthread.so.0(+0x12890) [0x7f1ada31e890]",
                     "    3  /lib/x86_64-linux-gnu/libc.so.6(+0x18eb38) [0x7f1ada8bdb38]",
                     "    4  libuct_ib.so.0(uct_rc_mlx5_ep_am_short+0x25b) [0x7f1a9a4b7a7b]",
                     "    5  libucp.so.0(ucp_tag_send_nbr+0x87) [0x7f1a9b7bc377]",
                     "    6  mca_pml_ucx.so(mca_pml_ucx_send+0xc2) [0x7f1a9bbe81f2]")
# openucx/ucx#7845: UCX built without CUDA; its backtrace with debug information names the functions.
_UCX_NO_CUDA = ("[gpu-8:165331:0:165331] Caught signal 11 (Segmentation fault: invalid permissions for mapped object at "
                "address 0x7fc073c00000)",
                " 0 0x000000000014cc75 __memcpy_ssse3()  :0",
                " 1 0x000000000003ea99 ucp_dt_pack()  /opt/ucx-source/src/ucp/dt/dt.c:120",
                " 2 0x0000000000063eb2 ucp_tag_pack_eager_common()  /opt/ucx-source/src/ucp/tag/eager_snd.c:31")


@pytest.mark.parametrize("lines", [_UCX_NO_CUDA_COPY, _UCX_NO_CUDA], ids=["no-cuda-copy", "no-cuda-build"])
def test_a_crash_in_the_copy_ucx_made_of_a_message_is_a_gpu_buffer_read_as_host(tmp_path: Path, lines: tuple) -> None:
    from logs.test_corpus import diagnose_lines

    f = next(f for f in diagnose_lines(tmp_path / "a.log", *lines)["findings"] if f["cause"])
    assert (f["code"], f["cause"]) == ("LOG119", "other"), f
    assert "cuda_copy" in f["remedy"]["summary"]


def test_a_crash_in_a_copy_the_program_made_is_not_ucxs(tmp_path: Path) -> None:
    """Near-miss: the faulting memcpy was called from the program, not from UCX; a crash, and nothing about UCX."""
    from logs.test_corpus import diagnose_lines

    lines = ("==== backtrace ====", "    0  libucs.so.0(+0x20b1c) [0x7f1a9b56fb1c]",
             "    2  /lib/x86_64-linux-gnu/libpthread.so.0(+0x12890) [0x7f1ada31e890]",
             "    3  /lib/x86_64-linux-gnu/libc.so.6(+0x18eb38) [0x7f1ada8bdb38]",
             "    4  libmymodel.so(pack_batch+0x25b) [0x7f1a9a4b7a7b]",
             "    5  libmymodel.so(train_step+0x87) [0x7f1a9b7bc377]")
    f = next(f for f in diagnose_lines(tmp_path / "b.log", *lines)["findings"] if f["cause"])
    assert (f["code"], f["cause"]) == ("LOG060", "peer_process_died")


def test_open_mpi_asked_for_cuda_it_was_not_built_with(tmp_path: Path) -> None:
    """conda-forge/openmpi-feedstock#83: the help text, then each rank's segfault under Open MPI's handler (its
    '[host:pid]' head is no glog line: the crash is read)."""
    from logs.test_corpus import diagnose_lines

    doc = diagnose_lines(tmp_path / "c.log",
                         "The user requested CUDA support with the --mca mpi_cuda_support 1 flag",
                         "but the library was not compiled with any support.",
                         "[WCS-164320:29458] *** Process received signal ***",
                         "[WCS-164320:29458] Signal: Segmentation fault (11)")
    causes = [(f["code"], f["cause"]) for f in doc["findings"] if f["cause"]]
    assert causes[0] == ("LOG119", "other") and ("LOG060", "peer_process_died") in causes
