"""NCCL's own failure messages that no public thread had shown us, read from its source.

Every WARN format string of NCCL 2.4 to 2.30 was filled in as NCCL prints it and run through `commdoctor logs`;
these are the ones that mean something a user can act on and that no row read. Each line below is that format
string with the values NCCL puts there (the file and version in the comment), next to a near-miss from the same
subsystem that must not match.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from logs.test_rule_rows import check_row
from logs.test_corpus import diagnose_lines

H = "gpu-node-3:51234:51290 [2]"

ROWS = [
    # (rule id, line, near-miss)
    # group.cc (2.12-2.18) / enqueue.cc (2.19 on); a group's matched self-send is traced at INFO, not a failure.
    ("self_sendrecv", f"{H} group.cc:254 NCCL WARN Trying to send to self without a matching recv",
     f"{H} NCCL INFO Channel 00/1 : 2[2] -> 2[2] via P2P/direct pointer"),
    ("self_sendrecv", f"{H} enqueue.cc:1164 NCCL WARN Trying to recv to self without a matching send",
     f"{H} NCCL INFO AllGather: opCount 3 sendbuff 0x7f00 recvbuff 0x7f00 count 4 datatype 7 op 0 root 0 comm 0x55 [nranks=8]"),
    # enqueue.cc, 2.7-2.23 and 2.26 on; the tuner's table of algorithms is no failure.
    ("no_algo", f"{H} enqueue.cc:277 NCCL WARN Error : no algorithm/protocol available",
     f"{H} NCCL INFO Algorithm   |             Tree |            Ring |  CollNetDirect"),
    ("no_algo", f"{H} enqueue.cc:2063 NCCL WARN No algorithm/protocol available for function Broadcast with datatype "
                "ncclInt8. NCCL_PROTO was set to LL128.",
     f"{H} NCCL INFO NCCL_PROTO set by environment to LL128"),
    # net_ib.cc (2.23-2.25); the GID NCCL settled on is the INFO line that follows a good lookup.
    ("roce_gid_types", f"{H} transport/net_ib.cc:328 NCCL WARN NET/IB: read failed in ncclIbRoceGetVersionNum: "
                       "Invalid argument",
     f"{H} NCCL INFO NET/IB: IbDev 0 Port 1 qpn 2113 mtu 5 GID 3 (0/BF0A000AFFFF0000)"),
    # net_ib.cc (2.21-2.23); NCCL's listing of a merged device is no failure.
    ("ib_merge_mismatch", f"{H} transport/net_ib.cc:1108 NCCL WARN NET/IB : Can't merge net devices with different "
                          "link_layer. i=0 remMeta.ndevs=1 link_layer=1 rem_link_layer=2",
     f"{H} NCCL INFO NET/IB : Made virtual device [4] name=mlx5_0+mlx5_1 speed=400000 ndevs=2"),
    # graph/search.cc (2.12-2.18); the channel's NIC on an INFO line is no failure.
    ("nic_unavailable", f"{H} graph/search.cc:969 NCCL WARN Rank 3 requires NIC 1 but that NIC is not available for rank 5",
     f"{H} NCCL INFO Channel 00/0 : 3[3] -> 11[3] [send] via NET/IB/1/GDRDMA"),
    # misc/cudawrap.cc (2.14 on), and NCCL's CUDA-graph checks; NCCL's own note of the driver is no failure.
    ("driver_too_old", f"{H} misc/cudawrap.cc:119 NCCL WARN CUDA Driver version found is 11040. Minimum requirement is 12000",
     f"{H} NCCL INFO cudaDriverVersion 12040"),
    ("driver_too_old", f"{H} misc/cudawrap.cc:139 NCCL WARN CUDA some PFN functions not found in the library",
     f"{H} NCCL INFO CUDA Driver version 12040"),
    ("driver_too_old", f"{H} misc/strongstream.cc:53 NCCL WARN NCCL cannot be captured in a graph if either it wasn't "
                       "built with CUDA runtime >= 11.3 or if the installed CUDA driver < R465.",
     f"{H} NCCL INFO Using CUDA graph capture mode 1"),
    ("driver_too_old", f"{H} enqueue.cc:944 NCCL WARN The installed CUDA driver is older than the minimum version (R465) "
                       "required for NCCL's CUDA Graphs support",
     f"{H} NCCL INFO NCCL_GRAPH_REGISTER set by environment to 1."),
    # mnnvl.cc (2.26, 2.28) and init.cc (2.23); the clique NCCL found is an INFO line of every working GB200 job.
    ("mnnvl_imex", f"{H} mnnvl.cc:78 NCCL WARN MNNVL (cliqueSize 72) is available but not working on this system. Check "
                   "the IMEX configuration (nvidia-imex-ctl -N). Set NCCL_MNNVL_ENABLE=0 to ignore this issue.",
     f"{H} NCCL INFO MNNVL busId 0x1b000 fabric UUID 5a3b.4c1d cliqueId 0x7fff state 3 healthMask 0x0"),
    ("mnnvl_imex", f"{H} mnnvl.cc:69 NCCL WARN MNNVL (cliqueSize 72) is available but not supported on this system. "
                   "Check the IMEX configuration.",
     f"{H} NCCL INFO comm 0x5612 rank 2 nRanks 144 nNodes 2 localRanks 72 localRank 2 MNNVL 1"),
    # transport/nvls.cc (2.29 on): NVLS forced while ranks share a GPU.
    ("duplicate_gpu", f"{H} transport/nvls.cc:254 NCCL WARN NCCL_NVLS_ENABLE has been set to \"1\" and communicator has "
                      "multiple ranks using the same NVML device. NVLS will be disabled.",
     f"{H} NCCL INFO NVLS multicast support is available on dev 2 (NVLS_NCHANNELS 16)"),
    # include/alloc.h (2.14 on): pinned host memory for NCCL's buffers; a successful allocation's trace is no failure.
    ("cuda_oom", f"{H} include/alloc.h:31 NCCL WARN Failed to CUDA host alloc 33554432 bytes",
     f"{H} NCCL INFO Allocated 33554432 bytes of host memory at 0x7f3a1c000000"),
    # net_ib/connect.cc (2.29 on): creating a queue pair through mlx5dv pins memory like ibv_create_qp.
    ("memlock", f"{H} transport/net_ib/connect.cc:372 NCCL WARN NET/IB: mlx5dv_create_qp failed to create QP: Cannot "
                "allocate memory",
     f"{H} transport/net_ib/connect.cc:372 NCCL WARN NET/IB: mlx5dv_create_qp failed to create QP: Invalid argument"),
    # os/linux_ipcsocket.cc / misc/ipcsocket.cc (2.18 on); the proxy's UDS INFO trace is no failure.
    ("uds_failed", f"{H} misc/ipcsocket.cc:221 NCCL WARN UDS: Sending data over socket /tmp/nccl-socket-3-a1b2c3d4 "
                   "failed : Connection refused (111)",
     f"{H} NCCL INFO ProxyCall UDS comm 0x5612 rank 2 tpRank 3(a1b2c3d4) reqSize 8 respSize 0 respFd 0x0 opId 0x7f"),
    # graph/xml.cc; NCCL's note that it read the file is no failure.
    ("topo_file_missing", f"{H} graph/xml.cc:306 NCCL WARN Could not open XML topology file /opt/topo/p5.xml : No such "
                          "file or directory",
     f"{H} NCCL INFO NCCL_TOPO_FILE set by environment to /opt/topo/p5.xml"),
    # dev_runtime.cc (2.29 on); NCCL's own version line is no failure.
    ("nccl_lib_too_old", f"{H} dev_runtime.cc:1428 NCCL WARN NCCL library is too old. This application was compiled with "
                         "NCCL version 2.29.2, but is running with NCCL 2.28.9",
     f"{H} NCCL INFO NCCL version 2.28.9+cuda12.9"),
    # include/alloc.h (2.18 on), enqueue.cc (2.29 on); the cuMem note of a working job is no failure.
    ("driver_too_old", f"{H} include/alloc.h:137 NCCL WARN CUMEM not supported prior to CUDA 11.3",
     f"{H} NCCL INFO NCCL_CUMEM_ENABLE set by environment to 1."),
    ("driver_too_old", f"{H} enqueue.cc:2820 NCCL WARN One-sided RMA requires CUDA driver 12.5 or later (found 12.2).",
     f"{H} NCCL INFO cudaDriverVersion 12020"),
    # aws-ofi-nccl (its ofiutils helper, and its EFA version check); the plugin's provider choice is an INFO line.
    ("ofi_plugin_no_provider", f"{H} NCCL WARN NET/OFI Couldn't open a fabric provider. RC: -61, ERROR: No data available",
     f"{H} NCCL INFO NET/OFI Selected Provider is efa (found 4 nics)"),
    ("ofi_libfabric_old", f"{H} NCCL WARN NET/OFI EFA provider requires at least libfabric version 1.22.0.",
     f"{H} NCCL INFO NET/OFI Using Libfabric version 1.22"),
    # graph/xml.cc (2.7 on): its parser reads only the files NCCL_TOPO_FILE / NCCL_GRAPH_FILE name; the INFO line
    # about loading one is no failure.
    ("topo_xml_parse", f"{H} graph/xml.cc:22 NCCL WARN XML Parse : Unexpected EOF",
     f"{H} NCCL INFO NCCL_TOPO_FILE set by environment to /opt/microsoft/ndv4-topo.xml"),
    ("topo_xml_parse", f"{H} graph/xml.cc:155 NCCL WARN XML Parse : expected >, got 'a'",
     f"{H} NCCL INFO XML Parse : Ignoring extra attributes (max 16)"),
    # transport.cc (2.12 on) and proxy.cc's per-channel form; the channel NCCL did find is traced at INFO.
    ("no_transport", f"{H} transport.cc:43 NCCL WARN No transport found for rank 2[1b000] -> rank 3[1c000]",
     f"{H} NCCL INFO Channel 00/0 : 2[1b000] -> 3[1c000] via P2P/IPC"),
    ("no_transport", f"{H} proxy.cc:358 NCCL WARN Rank 2 has no transport for send peer 3 on channel 0/1",
     f"{H} NCCL INFO Channel 00/1 : 2[2] -> 3[3] [send] via NET/Socket/0"),
    # proxy.cc / enqueue.cc / init.cc / net_ib.cc: NCCL's checks of its own bookkeeping; the proxy's and the planner's
    # ordinary INFO lines are no failure.
    ("nccl_self_check", f"{H} proxy.cc:151 NCCL WARN Proxy append mismatch",
     f"{H} NCCL INFO New proxy send connection 49 from local rank 0, transport 0"),
    ("nccl_self_check", f"{H} proxy.cc:488 NCCL WARN Unable to post incomplete proxy op chain 3..7 (opCount 42)",
     f"{H} NCCL INFO Connected to proxy localRank 2 -> connection 0x7c82e0002418"),
    ("nccl_self_check", f"{H} enqueue.cc:309 NCCL WARN Unknown pattern for collective 4 algorithm 1",
     f"{H} NCCL INFO AllReduce: 67108864 Bytes -> Algo 1 proto 2 time 312.4"),
    ("nccl_self_check", f"{H} init.cc:1184 NCCL WARN P2p schedule creation has bugs.",
     f"{H} NCCL INFO P2P Chunksize set to 131072"),
    ("nccl_self_check", f"{H} transport/net_ib.cc:886 NCCL WARN NET/IB: could not find mr 0x7f00 inside cache of 12 entries",
     f"{H} NCCL INFO NET/IB: Dmabuf register: addr 0x7f00 len 2097152"),
    # misc/socket.cc, 2.28's wording with the peer's address; the proxy's own connection lines are no failure.
    ("socket_wrong_type", f"{H} misc/socket.cc:538 NCCL WARN socketFinalizeAccept from 10.0.0.12<43211>: wrong type 4 != 3",
     f"{H} NCCL INFO New proxy recv connection 12 from local rank 3, transport 2"),
    # init.cc / group.cc / enqueue.cc (2.26 on): NCCL's checks of how the program uses its API; NCCL's own report of
    # the config it was given is no failure.
    ("nccl_api_misuse", f"{H} init.cc:1591 NCCL WARN Invalid config blocking attribute value -2147483648",
     f"{H} NCCL INFO Config blocking set to 0"),
    ("nccl_api_misuse", f"{H} init.cc:1571 NCCL WARN ncclConfig_t argument not initialized via NCCL_CONFIG_INITIALIZER",
     f"{H} NCCL INFO ncclCommInitRankConfig comm 0x55 rank 2 nranks 8 cudaDev 2 nvmlDev 2 busId 1b000 commId 0x1 - Init START"),
    ("nccl_api_misuse", f"{H} group.cc:57 NCCL WARN Blocking and nonblocking communicators are not allowed in the same "
                        "group.", f"{H} NCCL INFO Comm config Blocking set to 1"),
    ("nccl_api_misuse", f"{H} enqueue.cc:2223 NCCL WARN FP8 reduction support begins with sm90 capable devices.",
     f"{H} NCCL INFO AllReduce: opCount 3 sendbuff 0x7f00 recvbuff 0x7f00 count 4 datatype 10 op 0 root 0 comm 0x55 "
     "[nranks=8]"),
    ("nccl_api_misuse", f"{H} init.cc:1652 NCCL WARN improper usage of ncclCommInitRank: nId = 2, nranks=1",
     f"{H} NCCL INFO comm 0x55 rank 2 nRanks 8 nNodes 1 localRanks 8 localRank 2 MNNVL 0"),
    # transport/net_ib/init.cc (2.29 on) and common.cc (2.28 on): a device skipped, an address change logged.
    ("ib_query_note", f"{H} transport/net_ib/init.cc:350 NCCL WARN NET/IB : Unable to query device mlx5_3",
     f"{H} transport/net_ib/init.cc:350 NCCL WARN NET/IB : Unable to query device mlx5_3 (Input/output error); aborting"),
    ("ib_gid_change_note", f"{H} transport/net_ib/common.cc:153 NCCL WARN NET/IB : mlx5_0:1 GID table changed",
     f"{H} transport/net_ib/common.cc:140 NCCL WARN NET/IB : mlx5_0:1 async fatal event on QP (0x55) qpn=33 handle=1 "
     "send_cq=2 recv_cq=2 state=6 sq_psn=1 rq_psn=1: local work queue catastrophic error"),
    # misc/cudawrap.cc (2.12 on; "version %d" from 2.28 with CUDA 13): a driver entry point NCCL needs is missing;
    # NCCL's own listing of the driver version it found is no failure.
    ("driver_too_old", f"{H} misc/cudawrap.cc:178 NCCL WARN Retrieve cuMemCreate version 12000 failed with 0 status 2",
     f"{H} NCCL INFO cudaDriverVersion 12020"),
    ("nccl_goes_on_note", f"{H} init.cc:1446 NCCL WARN minCTAs 64 is larger than #channels upper limit 32, cap it to 32",
     f"{H} NCCL INFO minCTAs 32 maxCTAs 32"),
    ("nccl_api_misuse", f"{H} enqueue.cc:373 NCCL WARN Error : mixing different streams within a group call is not "
                        "supported.", f"{H} NCCL INFO Launch mode Group/CGMD"),
    ("nccl_api_misuse", f"{H} init.cc:430 NCCL WARN Attempt to use communicator before the previous operation returned "
                        "ncclSuccess", f"{H} NCCL INFO ncclCommInitRankConfig comm 0x55 rank 2 nranks 8 - Init START"),
    # transport/net_socket.cc: a data socket's send or recv failed (the socket layer's line before it names which).
    ("conn_lost", f"{H} transport/net_socket.cc:497 NCCL WARN NET/Socket : socket progress error",
     f"{H} NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0>"),
    # nccl-tests common.cu: its check of the results failed; the passing summary is no failure.
    ("nccl_tests_wrong", "# Out of bounds values : 1024 FAILED", "# Out of bounds values : 0 OK"),
    # misc/nvmlwrap.cc with NVML's own words, cudawrap.cc (2.14-2.18): no kernel driver, a libcuda that is not the driver's.
    ("driver_too_old", f"{H} misc/nvmlwrap.cc:98 NCCL WARN nvmlInit_v2() failed: Driver Not Loaded",
     f"{H} misc/nvmlwrap.cc:121 NCCL WARN nvmlDeviceGetHandleByIndex(3) failed: Unknown Error"),
    ("driver_too_old", f"{H} misc/cudawrap.cc:100 NCCL WARN Failed to load CUDA missing symbol cuInit",
     f"{H} NCCL INFO cudaDriverVersion 12020"),
    # graph/xml.cc: the topology tree's fixed size.
    ("nccl_xml_limit", f"{H} graph/xml.cc:176 NCCL WARN Error : XML parser is limited to 1024 nodes",
     f"{H} NCCL INFO Loading topology file /etc/nccl/topo.xml"),
    # WARNs after which NCCL goes on (init.cc, net_socket.cc, graph/search.cc; 2.26 on): notes, not failures.
    ("nccl_goes_on_note", f"{H} init.cc:539 NCCL WARN NCCL_WORK_FIFO_BYTES=3000000 is being ignored because it is not a "
                          "power of 2.", f"{H} NCCL INFO NCCL_WORK_FIFO_BYTES set by environment to 3000000."),
    ("nccl_goes_on_note", f"{H} transport/net_socket.cc:284 NCCL WARN NET/Socket : NCCL_SOCKET_NTHREADS is greater than "
                          "the maximum allowed, setting to 16", f"{H} NCCL INFO NET/Socket : Using 16 threads and 4 sockets "
                          "per thread"),
    ("nccl_goes_on_note", f"{H} graph/search.cc:1127 NCCL WARN Could not find a path for pattern 4, falling back to "
                          "simple order", f"{H} NCCL INFO Pattern 4, crossNic 0, nChannels 8, bw 40.000000/40.000000, "
                          "type NVL/PIX, sameChannels 1"),
    # include/alloc.h (ncclCalloc, every release) and misc/utils.cc (2.28 on): host memory refused; a GPU allocation
    # is another row's (cuda_oom).
    ("nccl_host_alloc", f"{H} include/alloc.h:178 NCCL WARN Failed to malloc 8589934592 bytes",
     f"{H} include/alloc.h:462 NCCL WARN Failed to CUDA malloc 8589934592 bytes"),
    ("nccl_host_alloc", f"{H} misc/utils.cc:318 NCCL WARN Unrecoverable error detected: malloc(size=4194304) returned "
                        "null.", f"{H} NCCL INFO Host Calloc Size 4194304 pointer 0x7f3a2c000000"),
    # Settings NCCL clamps, ignores or replaces and goes on (tuning.cc 2.7-2.26, init.cc 2.14, bootstrap.cc 2.23,
    # connect.cc 2.10-2.26, net.cc 2.21 on, gin_host.cc 2.28): notes.
    ("nccl_goes_on_note", f"{H} graph/tuning.cc:22 NCCL WARN Invalid NCCL_NTHREADS 1024 (maximum 512).",
     f"{H} NCCL INFO NCCL_NTHREADS set by environment to 1024."),
    ("nccl_goes_on_note", f"{H} bootstrap.cc:510 NCCL WARN no device found matching NCCL_OOB_NET_IFNAME=ib9, ignoring",
     f"{H} NCCL INFO NCCL_OOB_NET_IFNAME set by environment to ib9"),
    ("nccl_goes_on_note", f"{H} graph/connect.cc:231 NCCL WARN User asked for a minimum of 64 channels, limiting to 32",
     f"{H} NCCL INFO 32 coll channels, 32 collnet channels, 0 nvls channels, 32 p2p channels, 32 p2p channels per peer"),
    ("nccl_goes_on_note", f"{H} net.cc:509 NCCL WARN NCCL_DEVICE_UNPACK plugin has incompatible version 2, this NCCL "
                          "build is compatible with 1, not using it",
     f"{H} NCCL INFO NET/Plugin: Loaded net plugin NCCL RDMA Plugin v10 (v10)"),
    # Settings NCCL refuses (ncclInvalidUsage): enqueue.cc (2.14-2.21), graph/topo.cc (2.26 on), cudawrap.cc (2.14-2.18).
    ("nccl_setting_rejected", f"{H} enqueue.cc:933 NCCL WARN 'NCCL_WORK_FIFO_DEPTH=64' is too small. Minimum value is 64",
     f"{H} NCCL INFO NCCL_WORK_FIFO_DEPTH set by environment to 64."),
    ("nccl_setting_rejected", f"{H} graph/topo.cc:1029 NCCL WARN TOPO/NET : Could not force merge NICs mlx5_0,mlx5_9. "
                              "Please specify a valid NCCL_NET_FORCE_MERGE string.",
     f"{H} NCCL INFO NCCL_NET_FORCE_MERGE set by environment to mlx5_0,mlx5_1."),
    # init.cc (2.18 on) and group.cc (2.23 on): the program's config and simulation structures.
    ("nccl_api_misuse", f"{H} init.cc:1524 NCCL WARN Invalid config min/max channels attribute value 64/32",
     f"{H} NCCL INFO Comm config minCTAs set to 64"),
    ("nccl_api_misuse", f"{H} group.cc:522 NCCL WARN ncclSimInfo_t argument not initialized via NCCL_SIM_INFO_INITIALIZER",
     f"{H} NCCL INFO ncclGroupSimulateEnd: estimated time 12.5 us"),
    # misc/socket.cc (2.26 on): NCCL_COMM_ID that is not host:port.
    ("comm_id_invalid", f"{H} misc/socket.cc:246 NCCL WARN Net : No valid <IPv4_or_hostname>:<port> pair found",
     f"{H} NCCL INFO NCCL_COMM_ID set by environment to 10.0.0.1:29500"),
]


@pytest.mark.parametrize("rule, line, near", ROWS, ids=[f"{r[0]}-{i}" for i, r in enumerate(ROWS)])
def test_row_matches_its_line_and_not_the_near_miss(rule: str, line: str, near: str) -> None:
    check_row(rule, line, near)


def _verdict(tmp_path: Path, *lines: str) -> dict:
    return diagnose_lines(tmp_path / "rank2.log", *lines)["findings"][0]


def test_no_algorithm_under_a_forced_protocol_names_the_setting(tmp_path: Path) -> None:
    """Before 2.26 the WARN does not say NCCL_PROTO was set; NCCL's own INFO line about the environment does."""
    f = _verdict(tmp_path, f"{H} NCCL INFO NCCL_PROTO set by environment to LL128",
                 f"{H} enqueue.cc:277 NCCL WARN Error : no algorithm/protocol available")
    assert (f["code"], f["cause"]) == ("LOG092", "other")
    assert "NCCL_PROTO=LL128" in f["title"]


def test_no_algorithm_without_a_setting_is_nccl_itself(tmp_path: Path) -> None:
    f = _verdict(tmp_path, f"{H} enqueue.cc:2063 NCCL WARN No algorithm/protocol available for function AllReduce "
                           "with datatype ncclFloat8e4m3.")
    assert (f["code"], f["cause"]) == ("LOG070", "nccl_internal_bug")


def test_a_local_unix_socket_refused_is_not_the_network_interface(tmp_path: Path) -> None:
    """'Connection refused' on NCCL's Unix socket to a local rank involves no interface, port or firewall."""
    doc = diagnose_lines(tmp_path / "rank2.log",
                         f"{H} misc/ipcsocket.cc:221 NCCL WARN UDS: Sending data over socket /tmp/nccl-socket-3-a1b2c3d4 "
                         "failed : Connection refused (111)",
                         f"{H} proxy.cc:1205 NCCL WARN ncclProxyCallBlockingUDS call to tpRank 3(a1b2c3d4) failed : 2")
    causes = [f["cause"] for f in doc["findings"] if f["cause"]]
    assert causes[0] == "peer_process_died"
    assert not {"wrong_interface", "firewall_or_port_blocked"} & set(causes)


def test_mnnvl_without_imex_says_what_to_start(tmp_path: Path) -> None:
    f = _verdict(tmp_path, ROWS[11][1])
    assert (f["code"], f["cause"]) == ("LOG091", "fabric_manager_nvls")
    assert "IMEX" in f["remedy"]["summary"]


# NVIDIA/nccl#1996 (NCCL 2.27.7): UCX's handler printed the crash of a background thread; the first frame below the
# handler's is libnccl (RAS's peer update, fixed later; NCCL_RAS_ENABLE=0 avoided it).
_NCCL_SEGV = ("[n125-011-039:288505:0:296459] Caught signal 11 (Segmentation fault: address not mapped to object at address 0x48)",
              "==== backtrace (tid: 296459) ====",
              " 0  /usr/lib/libucs.so.0(ucs_handle_error+0x2d4) [0x7fedc925c274]",
              " 1  /usr/lib/libucs.so.0(+0x2d44c) [0x7fedc925c44c]",
              " 2  /usr/lib/libucs.so.0(+0x2d61a) [0x7fedc925c61a]",
              " 3  /opt/tiger/nccl/lib/libnccl.so(+0x120057) [0x7ff1c18c1057]",
              " 4  /opt/tiger/nccl/lib/libnccl.so(+0x12209d) [0x7ff1c18c309d]",
              " 7  /usr/lib/x86_64-linux-gnu/libc.so.6(+0x89144) [0x7ff1c151e144]")
# aws/sagemaker-training-toolkit#106: Open MPI's handler, the fault in glibc's malloc (EFA device RDMA with forked
# DataLoader workers): nothing of NCCL.
_MALLOC_SEGV = ("[1,50]<stderr>:[compute-st-p4d24xlarge-7:21766] Signal: Segmentation fault (11)",
                "[1,50]<stderr>:[compute-st-p4d24xlarge-7:21766] Signal code: Address not mapped (1)",
                "[1,50]<stderr>:[compute-st-p4d24xlarge-7:21766] Failing at address: 0x556b3a49c930",
                "[1,50]<stderr>:[compute-st-p4d24xlarge-7:21766] [ 0] /lib/x86_64-linux-gnu/libpthread.so.0(+0x12980)[0x7f950ab97980]",
                "[1,50]<stderr>:[compute-st-p4d24xlarge-7:21766] [ 1] /lib/x86_64-linux-gnu/libc.so.6(+0x952b3)[0x7f950a8292b3]",
                "[1,50]<stderr>:[compute-st-p4d24xlarge-7:21766] [ 2] /lib/x86_64-linux-gnu/libc.so.6(__libc_malloc+0x28d)[0x7f950a82b3cd]",
                "[1,50]<stderr>:[compute-st-p4d24xlarge-7:21766] [ 3] /opt/conda/lib/libnccl.so.2(+0x4a5b1)[0x7f950a8292b3]")


def test_a_crash_whose_faulting_frame_is_in_libnccl_is_ncclS_own(tmp_path: Path) -> None:
    f = next(f for f in diagnose_lines(tmp_path / "a.log", *_NCCL_SEGV)["findings"] if f["cause"])
    assert (f["code"], f["cause"]) == ("LOG070", "nccl_internal_bug") and "inside libnccl" in f["title"]
    # gdb's shape names the function.
    f = next(f for f in diagnose_lines(tmp_path / "b.log", "Thread 5 received signal SIGSEGV, Segmentation fault.",
                                       "#0  0x00007ffff7e3a1b0 in ncclProxyProgress () from /usr/lib/libnccl.so.2")["findings"]
             if f["cause"])
    assert f["code"] == "LOG070" and "ncclProxyProgress" in f["title"]


def test_a_crash_in_malloc_with_nccl_further_down_is_not_ncclS(tmp_path: Path) -> None:
    """Near-miss: the faulting frame (below the handler's and glibc's signal return) is malloc; libnccl further down
    the stack called it, which says nothing of who corrupted the heap."""
    f = next(f for f in diagnose_lines(tmp_path / "c.log", *_MALLOC_SEGV)["findings"] if f["cause"])
    assert (f["code"], f["cause"]) == ("LOG060", "peer_process_died")


def test_no_transport_names_the_settings_that_took_them_away(tmp_path: Path) -> None:
    f = _verdict(tmp_path, f"{H} NCCL INFO NCCL_P2P_DISABLE set by environment to 1.",
                 f"{H} NCCL INFO NCCL_SHM_DISABLE set by environment to 1",
                 f"{H} transport.cc:43 NCCL WARN No transport found for rank 2[1b000] -> rank 3[1c000]")
    assert (f["code"], f["cause"]) == ("LOG133", "other")
    assert "rank 2 and rank 3" in f["title"] and "NCCL_P2P_DISABLE=1, NCCL_SHM_DISABLE=1" in f["detail"]



def test_a_failed_check_of_nccls_own_state_is_nccl_unless_something_else_failed_first(tmp_path: Path) -> None:
    f = _verdict(tmp_path, f"{H} proxy.cc:151 NCCL WARN Proxy append mismatch",
                 f"{H} NCCL INFO proxy.cc:1040 -> 3")
    assert (f["code"], f["cause"]) == ("LOG070", "nccl_internal_bug")
    f = _verdict(tmp_path, f"{H} transport/net_ib.cc:1697 NCCL WARN NET/IB : Got completion from peer 10.0.0.2<51234> "
                           "with error 12, opcode 0, len 0, vendor err 129 (Send) localGid ::ffff:10.0.0.1 remoteGid "
                           "::ffff:10.0.0.2",
                 f"{H} proxy.cc:151 NCCL WARN Proxy append mismatch")
    assert f["cause"] != "nccl_internal_bug"


def test_the_programS_misuse_of_ncclS_api_is_a_rejected_call_and_notes_of_skipped_devices_are_not_failures(
        tmp_path: Path) -> None:
    f = _verdict(tmp_path, f"{H} group.cc:57 NCCL WARN Blocking and nonblocking communicators are not allowed in the "
                           "same group.", f"{H} NCCL INFO group.cc:460 -> 5")
    assert (f["code"], f["cause"]) == ("LOG098", "other") and "Blocking and nonblocking" in f["title"]
    notes = diagnose_lines(tmp_path / "rank3.log", f"{H} transport/net_ib/init.cc:350 NCCL WARN NET/IB : Unable to query "
                           "device mlx5_3", f"{H} transport/net_ib/common.cc:153 NCCL WARN NET/IB : mlx5_0:1 GID table "
                           "changed")["findings"]
    assert not [x for x in notes if x["cause"] or x["code"] == "LOG080"], notes
    clamp = diagnose_lines(tmp_path / "rank4.log", f"{H} transport/net_socket.cc:284 NCCL WARN NET/Socket : "
                           "NCCL_SOCKET_NTHREADS is greater than the maximum allowed, setting to 16",
                           f"{H} NCCL INFO comm 0x55 rank 2 nranks 8 cudaDev 2 busId 1b000 - Init COMPLETE")["findings"]
    assert not [x for x in clamp if x["cause"] or x["code"] == "LOG080"], clamp


def test_nccl_tests_finding_wrong_values_is_ncclS_data_with_the_platform_and_hardware_as_alternatives(
        tmp_path: Path) -> None:
    f = diagnose_lines(tmp_path / "t.log", "#       size         count      type   redop    root     time   algbw   busbw "
                       "#wrong     time   algbw   busbw #wrong",
                       "     1048576        262144     float     sum      -1    25.33   41.40   41.40    512    25.10   "
                       "41.78   41.78    512", "# Out of bounds values : 1024 FAILED",
                       "# Avg bus bandwidth    : 20.7")["findings"]
    assert (f[0]["code"], f[0]["cause"]) == ("LOG070", "nccl_internal_bug") and "1024 wrong value" in f[0]["title"]
    assert {x["cause"] for x in f[1:]} >= {"p2p_acs_iommu", "hardware_fault"}


def test_host_memory_refused_is_the_processS_limit_unless_no_host_has_that_much(tmp_path: Path) -> None:
    """Linux overcommits: malloc refuses only past the process's limit, or a size no host has (a size gone wrong)."""
    f = _verdict(tmp_path, f"{H} include/alloc.h:178 NCCL WARN Failed to malloc 8589934592 bytes",
                 f"{H} NCCL INFO init.cc:1411 -> 2")
    assert (f["code"], f["cause"]) == ("LOG140", "other")
    assert "8.0 GiB" in f["title"] and "ulimit -v" in f["remedy"]["summary"]
    f = _verdict(tmp_path, f"{H} include/alloc.h:178 NCCL WARN Failed to malloc 18446744073709551600 bytes")
    assert (f["code"], f["cause"]) == ("LOG070", "nccl_internal_bug")
    assert "TiB of host memory" in f["title"]


def test_a_setting_nccl_refuses_is_named(tmp_path: Path) -> None:
    f = _verdict(tmp_path, f"{H} enqueue.cc:933 NCCL WARN 'NCCL_WORK_FIFO_DEPTH=64' is too small. Minimum value is 64",
                 f"{H} NCCL INFO enqueue.cc:1100 -> 5")
    assert (f["code"], f["cause"]) == ("LOG143", "other") and "NCCL_WORK_FIFO_DEPTH" in f["title"]


def test_nccls_own_libcuda_probe_failing_is_a_note_it_goes_on_from(tmp_path: Path) -> None:
    """NCCL 2.14-2.20 ignore the result of their own dlopen of libcuda.so (init.cc: (void)ncclCudaLibraryInit()) and
    go on through the CUDA runtime; nccl-tests#115 went on to a hang of another cause."""
    for line in ("misc/cudawrap.cc:179 NCCL WARN Failed to find CUDA library /opt/cuda/lib/libcuda.so "
                 "(NCCL_CUDA_PATH='/opt/cuda/lib') : /opt/cuda/lib/libcuda.so: cannot open shared object file",
                 "misc/cudawrap.cc:90 NCCL WARN Failed to find CUDA library in /usr/local/cuda-11.7 "
                 "(NCCL_CUDA_PATH=/usr/local/cuda-11.7)",
                 "misc/cudawrap.cc:90 NCCL WARN Failed to find CUDA library in (null) (NCCL_CUDA_PATH=(null))"):
        doc = diagnose_lines(tmp_path / "rank0.log", f"{H} {line}", "NCCL version 2.14.3+cuda11.7",
                             f"{H} NCCL INFO comm 0x5581 rank 0 nranks 2 cudaDev 0 busId 1000 - Init COMPLETE")
        assert not [f for f in doc["findings"] if f["cause"] or f["code"] == "LOG080"], (line, doc["findings"])


def test_a_setting_nccl_clamps_is_no_failure(tmp_path: Path) -> None:
    doc = diagnose_lines(tmp_path / "rank2.log", f"{H} graph/tuning.cc:19 NCCL WARN Invalid NCCL_NTHREADS 100 (must be a "
                                                 "multiple of 32)", f"{H} NCCL INFO comm 0x5581 rank 2 nranks 8 cudaDev 2 "
                                                 "busId 41000 - Init COMPLETE")
    assert not [f for f in doc["findings"] if f["cause"] or f["code"] == "LOG080"], doc["findings"]
