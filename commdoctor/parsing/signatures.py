"""Known failure signatures: what a message means, in one table.

Promise: pure data plus a matcher. Each signature names the literal words
that must appear (a cheap substring test done first), a bounded regular
expression that confirms it, the root-cause label it points to, and whether
it is a *root* (it explains itself), a *consequence* (it is what a rank sees
when something else failed first: a closed connection, a watchdog timeout),
or *context* (a fact that helps a rule decide, never a verdict on its own).
Rules in commdoctor.checks.logs turn matches into findings; nothing here
knows about particular log files.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

ROOT, CONSEQUENCE, CONTEXT = "root", "consequence", "context"


@dataclass(frozen=True)
class Signature:
    id: str
    needles: tuple[str, ...]  # at least one must occur (case-sensitive) before the regex runs
    pattern: re.Pattern[str]
    cause: str | None
    role: str
    tier: int  # lower = more specific; decides between roots that coexist
    meaning: str

    def search(self, text: str) -> re.Match[str] | None:
        for n in self.needles:
            if n in text:
                return self.pattern.search(text)
        return None


def _s(id: str, needles: tuple[str, ...], pattern: str, cause: str | None, role: str, tier: int, meaning: str) -> Signature:
    return Signature(id, needles, re.compile(pattern), cause, role, tier, meaning)


# Order matters only for speed; every matching signature is reported.
SIGNATURES: tuple[Signature, ...] = (
    # -- host and rendezvous ---------------------------------------------------------
    _s("port_in_use", ("errno: 98", "Address already in use", "EADDRINUSE", "errno 98"),
       r"(?:(?:\[(?P<addr6>[^\]]{0,64})\]|(?P<addr>[\w.\-]{1,64})):(?P<port>\d{1,5}) \()?(?:errno:? 98|Address already in use|EADDRINUSE)",
       "port_conflict", ROOT, 1, "a listening port (rendezvous / TCPStore / master port) is already taken"),
    _s("store_connect_timeout", ("client socket has timed out", "failed to connect to", "timed out after"),
       r"client socket has timed out after \d+ ?m?s while trying to connect to \(?(?P<host>[^,\s)]{1,255}),? ?(?P<port>\d{1,5})?"
       r"|client socket has failed to connect to (?:any (?:network )?address of )?\(?\[?(?P<host2>[^\]\s,)]{1,255})",
       "rendezvous_unreachable", ROOT, 3, "a rank could not connect to the rendezvous store"),
    _s("store_wait_clients", ("waiting for clients", "clients joined"),
       r"[Tt]imed out after (?P<secs>\d+) seconds waiting for clients\. (?P<joined>\d+)/(?P<world>\d+) clients joined",
       "rendezvous_unreachable", ROOT, 3, "the store on rank 0 waited for ranks that never connected"),
    _s("rdzv_connection", ("RendezvousConnectionError", "connection to the C10d store has failed"),
       r"RendezvousConnectionError|connection to the C10d store has failed",
       "rendezvous_unreachable", ROOT, 3, "the elastic agent lost (or never had) its connection to the c10d rendezvous store"),
    _s("rdzv_timeout", ("RendezvousTimeoutError", "RendezvousClosedError"),
       r"Rendezvous(?:Timeout|Closed)Error",
       "rendezvous_unreachable", ROOT, 4, "the elastic rendezvous did not complete: not every node arrived"),
    _s("comm_id_invalid", ("NCCL_COMM_ID", "pair found", "same subnet as remote address"),
       r"Invalid NCCL_COMM_ID|No valid (?:<IPv4_or_hostname>|\[IPv6\]):port pair found"
       r"|No interface found in the same subnet as remote address (?P<addr>[^\s<]{1,80})",
       "rendezvous_unreachable", ROOT, 2, "NCCL_COMM_ID (the bootstrap root's address) is malformed or not reachable from this host"),
    _s("name_resolution", ("Name or service not known", "host not found", "gai error", "name resolution", "nodename nor servname",
                           "Unable to resolve hostname", "No address associated with hostname", "getaddrinfo"),
       r"Name or service not known|host not found|gai error:? ?-?\d*|[Tt]emporary failure in name resolution|nodename nor servname"
       r"|Unable to resolve hostname|No address associated with hostname|getaddrinfo\w* failed",
       "rendezvous_unreachable", ROOT, 2, "a host name could not be resolved"),
    _s("own_hostname", ("hostname of the client socket cannot be retrieved", "gethostname"),
       r"hostname of the client socket cannot be retrieved|gethostname\(\) failed",
       "hostname_resolution", ROOT, 2, "this host's own name does not resolve"),
    _s("ifname_missing", ("Unable to find address for", "no socket interface found", "No usable listening interface", "Unable to find interface",
                         "no interface found", "no device found"),
       r"Unable to find address for:? ?(?P<iface>\S*)|[Nn]o socket interface found|No usable listening interface found|Unable to find interface\S* (?P<iface2>\S*)"
       r"|NET/Socket : no interface found|no device found (?:matching|after excluding) (?:exactly )?(?P<iface3>[^\s,]{1,64}),? verify NCCL_\w*IFNAME",
       "wrong_interface", ROOT, 1, "the interface named by GLOO_SOCKET_IFNAME / NCCL_SOCKET_IFNAME does not exist or has no address"),
    _s("family_mismatch", ("ss_family",),
       r"ss1\.ss_family == ss2\.ss_family\. (?P<a>\d+) vs (?P<b>\d+)",
       "hostname_resolution", ROOT, 1, "the host name resolves to an address of another family (IPv6 ::1 against IPv4)"),
    _s("connect_loopback", ("127.", "::1", "localhost"),
       r"(?:connect(?:ing)?(?: to)? \[?|remote=\[|remote address |to address )(?P<addr>127\.\d{1,3}\.\d{1,3}\.\d{1,3}|::1|localhost)\]?(?::|<| |$)",
       "hostname_resolution", ROOT, 1, "a peer advertised a loopback address, so others cannot reach it"),
    _s("connect_link_local", ("fe80:", "FE80:", "169.254."),
       r"(?:[Cc]onnect(?:ing)?(?: to)? \[?|remote=\[|remote address |to address )(?P<addr>[fF][eE]80:[0-9a-fA-F:]{0,40}(?:%[\w.\-]{1,32})?|169\.254\.\d{1,3}\.\d{1,3})\]?(?:<|:| |$)",
       "wrong_interface", ROOT, 1, "a rank connected to a link-local address, which only reaches hosts on the same link"),
    _s("mpi_btl_tcp", ("btl_tcp", "mca_btl", "unexpected process identifier"),
       r"received unexpected process identifier|btl_tcp\w*\.c:\d+:\w*\] ?connect\(\) to (?P<addr>[\d.]+) failed|mca_btl_tcp\w*.*(?:failed|unreachable)",
       "wrong_interface", ROOT, 1, "Open MPI's TCP transport used an interface the peers cannot reach"),
    # Open MPI's help texts (opal/mca/btl/tcp/help-mpi-btl-tcp.txt, ompi/mca/bml/r2, orte|prrte errmgr and oob/tcp):
    # each says in words which side of the job could not use the network it was given.
    _s("mpi_tcp_peer", ("failed to TCP connect to a peer", "cannot find a corresponding process", "inbound MPI TCP connection",
                        "unable to reach each other for"),
       r"Open MPI failed to TCP connect to a peer MPI process|cannot find a corresponding process\s*(?:entry)?"
       r"|detected an inbound MPI TCP connection request|unable to reach each other for(?: MPI communications)?",
       "wrong_interface", ROOT, 1, "Open MPI's TCP transport used an interface or address the peer cannot reach"),
    _s("mpi_if_setting", ("btl_tcp_if_", "oob_tcp_if_", "TCP interface include and exclude", "specified to be included for out-of-band",
                          "to be excluded for TCP out-of-band"),
       r"invalid value was given for (?P<param>(?:btl|oob)_tcp_if_\w+)|Both TCP interface include and exclude lists"
       r"|None of the TCP networks specified to be included for out-of-band|networks to be excluded for TCP out-of-band",
       "wrong_interface", ROOT, 1, "Open MPI's interface include/exclude setting names nothing usable here"),
    _s("mpi_daemon_connect", ("unable to establish a communication connection", "unexpectedly failed after launch",
                              "unable to reliably start", "lost communication with a remote daemon"),
       # Help texts wrap at about 70 columns: match only what fits on their first line.
       r"(?P<rt>ORTE|PRTE|PRRTE|\w+) (?:is unable to establish a communication connection to the"
       r"|daemon has unexpectedly failed after launch|was unable to reliably start one or more daemons"
       r"|has lost communication with a remote daemon)",
       "launcher_misconfig", ROOT, 3, "mpirun's runtime could not start or reach its daemons on the other nodes"),
    _s("hydra_connect", ("unable to connect from",),
       r"unable to connect from \"?(?P<src>[^\"\s]{1,255})\"? to \"?(?P<dst>[^\"\s]{1,255})\"? \((?P<err>[^)]{1,80})\)",
       "wrong_interface", ROOT, 2, "MPICH's launcher (Hydra) could not connect between nodes"),
    _s("pmi_error", ("direct launched using", "PMI_Init", "PMI2_Init", "PMIx_Init", "PMIX ERROR", "PMI2 init failed", "pmi_init"),
       r"appears to have been direct launched using \"?(?P<launcher>\w+)\"?"
       r"|PMI2?_Init(?: returned \d+| failed)|PMIx_Init failed|PMIX ERROR|PMI2 init failed",
       "launcher_misconfig", ROOT, 1, "the processes could not talk to the launcher's process-management interface (PMI/PMIx)"),
    # UCX (openucx/ucx: src/ucp/core/ucp_context.c, src/ucp/wireup/select.c, ompi pml_ucx.c).
    _s("ucx_no_devices", ("no usable transports", "enable it in UCX_NET_DEVICES"),
       r"no usable transports/devices \(asked (?P<asked>[^)]{1,200})\)"
       r"|device (?P<dev>\S{1,64}) is not enabled, enable it in UCX_NET_DEVICES",
       "wrong_interface", ROOT, 1, "UCX_TLS / UCX_NET_DEVICES name transports or devices this host does not have"),
    _s("ucx_unreachable", ("Destination is unreachable", "transport to", "ucp_ep_create"),
       r"no (?P<what>[\w ]{1,40}) transport to (?P<peer>[^:]{1,120}):|ucp_ep_create\((?:proc=(?P<proc>\d+)[^)]{0,20})?\) failed"
       r"|Destination is unreachable",
       "wrong_interface", ROOT, 2, "UCX found no transport between two processes (no common reachable device)"),
    # mpirun's and Hydra's own reports of a rank that ended badly.
    _s("mpirun_signal", ("noticed that process rank",),
       r"(?P<tool>\w+) noticed that process rank (?P<rank>\d+) with PID (?P<pid>\d+) on node (?P<host>\S+?) exited on signal"
       r" (?P<sig>\d+)(?: \((?P<name>[^)]{1,40})\))?",
       "peer_process_died", ROOT, 5, "mpirun saw a rank die from a signal"),
    _s("mpirun_exit", ("terminated normally, but", "exited with non-zero status", "exiting improperly", "has exited due to process rank"),
       r"terminated normally, but \d+ process(?:es)? returned|detected that one or more processes exited with non-zero status"
       r"|has exited due to process rank (?P<rank>\d+) with PID (?P<pid>\d+) on",
       "peer_process_died", CONSEQUENCE, 7, "mpirun saw a rank exit with an error status (its own error comes first)"),
    _s("mpich_bad_termination", ("BAD TERMINATION", "EXIT CODE:", "EXIT STRING:"),
       r"BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES|=\s+EXIT CODE: (?P<code>\d+)"
       r"|TERMINATED WITH THE EXIT STRING: (?P<what>[^\r\n]{1,80})",
       "peer_process_died", ROOT, 5, "Hydra (MPICH, Intel MPI) saw a rank end badly"),
    # torch asked for a backend it was built without (torch/distributed/distributed_c10d.py).
    _s("backend_not_built", ("doesn't have", "support is not compiled"),
       r"Distributed package doesn't have (?P<backend>NCCL|MPI|UCC|Gloo|\w+) built in"
       r"|for (?P<backend2>nccl|mpi|ucc) backend, but (?:NCCL|MPI|UCC) support is not compiled",
       "backend_unavailable", ROOT, 1, "init_process_group asked for a backend this torch build does not have"),
    _s("peer_refused", ("Connection refused", "No route to host", "Network is unreachable", "Host is unreachable", "ECONNREFUSED", "EHOSTUNREACH",
                        "exceeded retries", "Software caused connection abort"),
       r"Connection refused|No route to host|Network is unreachable|Host is unreachable|ECONNREFUSED|EHOSTUNREACH"
       r"|(?:socketStartConnect|socketPollConnect): exceeded retries"
       r"|Connect to \S{1,300} failed : Software caused connection abort",
       "wrong_interface", ROOT, 3, "a connection to a peer or to the store was refused or had no route"),
    _s("connect_timeout", ("timed out connecting", "Connection timed out", "connect timed out", "ETIMEDOUT", "exceeded timeouts"),
       r"timed out connecting|[Cc]onnection timed out|connect timed out|ETIMEDOUT|(?:socketStartConnect|socketPollConnect): exceeded timeouts",
       "firewall_or_port_blocked", ROOT, 4, "connections to a peer timed out (packets dropped on the way)"),
    # -- shared memory, GPU memory, driver, fabric -------------------------------------------
    _s("shm", ("posix_fallocate", "shared memory", "/dev/shm", "shm_open", "ShmOpen", "shm", "failed to extend"),
       r"posix_fallocate failed|[Ee]rror while creating shared memory segment|creating shared memory segment|shm_open\w* failed"
       r"|[Uu]nable to allocate shared memory|/dev/shm\S*.{0,80}(?:No space left|[Pp]ermission denied|too small|failed)"
       r"|ncclShmOpen|shm\.(?:cc|h):\d+ .{0,40}failed|failed to extend \S{0,200}shm\S{0,200} to \d+ bytes|Could not map \S{0,200}shm"
       r"|Error while attaching to shared memory segment|insufficient shared memory \(shm\)",
       "shm_too_small", ROOT, 1, "/dev/shm is too small, full or not writable"),
    _s("sigbus", ("Bus error", "SIGBUS", "Signal 7 ", "exitcode: -7", "exitcode  : -7", "bus error"),
       r"Bus error|SIGBUS|Signal 7 \(|exitcode\s*:?\s*-7\b|[Uu]nexpected bus error",
       "shm_too_small", ROOT, 3, "a process died of SIGBUS: a shared-memory mapping could not be backed (/dev/shm full)"),
    _s("cuda_oom", ("out of memory", "OutOfMemory", "CUDA calloc", "CUDA malloc", "MemoryAllocation", "OUT_OF_MEMORY"),
       r"Cuda failure '?(?:\d+ )?'?out of memory|CUDA out of memory|CUDA error: out of memory|OutOfMemoryError"
       r"|Failed to CUDA (?:calloc|malloc|host alloc)|cudaErrorMemoryAllocation|CUDA_ERROR_OUT_OF_MEMORY|cuMem\w+.{0,40}out of memory",
       "cuda_oom", ROOT, 1, "GPU memory ran out while NCCL allocated its buffers"),
    _s("driver_too_old", ("insufficient", "InsufficientDriver", "DRIVER_MISMATCH", "version mismatch", "too old", "no NVIDIA driver",
                          "forward compatibility"),
       r"driver version is insufficient for CUDA runtime|cudaErrorInsufficientDriver|CUDA_ERROR_SYSTEM_DRIVER_MISMATCH"
       r"|[Dd]river/library version mismatch|NVIDIA driver on your system is too old|found no NVIDIA driver"
       r"|forward compatibility was attempted on non supported HW",
       "driver_cuda_mismatch", ROOT, 1, "the NVIDIA driver is older than the CUDA runtime NCCL/torch were built with"),
    _s("fabric_not_ready", ("not yet initialized", "SystemNotReady", "SYSTEM_NOT_READY", "failure 802", "abric", "ulticast"),
       r"system not yet initialized|cudaErrorSystemNotReady|CUDA_ERROR_SYSTEM_NOT_READY|Cuda failure 802"
       r"|[Ff]abric ?[Mm]anager\w*.{0,60}(?:error|fail|not running|inactive)|NVLink fabric.{0,40}(?:not|fail)|cuMulticast\w* failed",
       "fabric_manager_nvls", ROOT, 1, "the NVSwitch fabric is not ready (nvidia-fabricmanager missing, stopped or in error)"),
    _s("duplicate_gpu", ("Duplicate GPU", "Multiple Ranks are using the same GPU"),
       r"Duplicate GPU detected ?: rank (?P<a>\d+) and rank (?P<b>\d+) both on CUDA device (?P<bus>\w+)"
       r"|Multiple Ranks are using the same GPU",
       "duplicate_gpu", ROOT, 1, "two ranks use the same GPU"),
    _s("gpu_busy", ("busy or unavailable", "DevicesUnavailable", "DEVICE_UNAVAILABLE"),
       r"CUDA-capable device\(s\) is/are busy or unavailable|cudaErrorDevicesUnavailable|CUDA_ERROR_DEVICE_UNAVAILABLE",
       "duplicate_gpu", ROOT, 4, "a GPU refused a new context: another process holds it in exclusive compute mode"),
    _s("cuda_failure", ("Cuda failure", "CUDA error", "cudaError", "CUDA failure", "unhandled cuda error"),
       r"Cuda failure (?P<num>\d+)? ?'?(?P<what>[^']{0,120})|CUDA (?:error|failure):? (?P<what2>[^\n]{0,120})|cudaError\w+",
       "other", ROOT, 5, "a CUDA call inside NCCL failed"),
    _s("gpu_hw", ("Xid", "fallen off the bus", "ECC", "GPU is lost", "NVLink error", "uncorrectable"),
       r"\bXid\b|fallen off the bus|[Uu]ncorrectable ECC|ECC error|GPU is lost|NVLink error|uncorrectable (?:ECC|error)",
       "hardware_fault", ROOT, 1, "the GPU or its links reported a hardware error"),
    # -- InfiniBand / RoCE ---------------------------------------------------------------------
    _s("memlock", ("ibv_", "mlx5dv_", "memlock", "MEMLOCK", "locked memory", "Cannot allocate memory", "ulimit -l"),
       r"(?:ibv_\w+|mlx5dv_\w+)(?:\([^)]{0,200}\))? failed(?: with error)?:? ?(?:Cannot allocate memory|ENOMEM|12\b)"
       r"|RLIMIT_MEMLOCK|(?:ulimit|memlock).{0,40}(?:too low|64\b)|Cannot allocate memory.{0,40}(?:ibv|verbs|mlx|UCX|memlock)"
       r"|set max locked memory \(ulimit -l\)|failed to initialize while trying to allocate some locked memory",
       "rlimit_memlock", ROOT, 1, "RDMA queue or memory registration failed for lack of locked memory"),
    _s("memlock_limit", ("max locked memory",),
       r"max locked memory\s+\(kbytes, -l\)\s+(?P<kb>\d+)",
       "rlimit_memlock", CONTEXT, 2, "the locked-memory limit printed by ulimit -a"),
    _s("ib_qp", ("ibv_modify_qp", "GID", "gid"),
       r"(?:Call to )?ibv_modify_qp failed|[Gg][Ii][Dd] ?[Ii]ndex.{0,40}(?:invalid|not (?:found|valid)|fail)|[Ii]nvalid GID|ncclIbGetGidIndex\w* failed",
       "ib_misconfig", ROOT, 2, "an RDMA queue pair could not be brought up (GID index, routing or HCA selection)"),
    _s("gid_table", ("GID[",),
       r"GID\[\s*(?P<idx>\d+)\]:\s+(?P<gid>[0-9a-fA-F:.]+),\s*RoCE\s*(?P<ver>v\d)",
       None, CONTEXT, 9, "a RoCE GID table entry"),
    _s("ib_async", ("async event", "catastrophic", "port error", "LINK_DOWN", "async fatal event"),
       r"Got async event ?: ?(?P<what>[\w ]{1,40})|local catastrophic error|port error|LINK_DOWN"
       r"|(?P<dev>[\w\-]{1,32}:\d{1,3}) async fatal event(?: on \w{1,4} \([^)]{0,40}\))?[^:]{0,200}: (?P<what2>[\w ]{1,60})",
       "hardware_fault", ROOT, 1, "the HCA reported port or device events (a flapping or failing link)"),
    _s("ib_completion", ("completion", "retry exceeded", "Retry Exceeded", "retry counter"),
       r"Got completion (?:from peer \S+ )?with (?:error ?|status=)(?:\w+\()?(?P<code>\d+)\)?(?:.{0,80}?vendor[ _]err(?:or)? ?=?(?P<vendor>\d+))?"
       r"|[Tt]ransport retry counter exceeded|[Rr]etry [Ee]xceeded",
       "hardware_fault", ROOT, 2, "an RDMA work request completed with an error"),
    _s("ib_incompatible", ("incompatible devices", "is incompatible with the local", "mixed local Net device counts",
                           "mixed local CollNet device counts"),
       r"Attempted to (?:connect|merge) incompatible devices|device is incompatible with the local"
       r"|Detected mixed local (?:Coll)?Net device counts across ranks \(min (?P<min>\d+), max (?P<max>\d+)\)",
       "ib_misconfig", ROOT, 2, "the ranks' RDMA NICs do not match (link types mixed, or a different NIC count per node)"),
    _s("ib_reg_mr", ("ibv_reg_mr", "ibv_reg_dmabuf_mr"),
       r"(?:Call to )?ibv_reg_(?:dmabuf_)?mr\w* failed with error (?P<err>Bad address|Invalid argument|Operation not permitted|Operation not supported)",
       "p2p_acs_iommu", ROOT, 3, "registering GPU memory with the NIC (GPUDirect RDMA) failed"),
    _s("acs_iommu", ("ACS", "IOMMU", "DMAR", "AMD-Vi", "VT-d"),
       r"ACSCtl:.{0,40}(?:SrcValid\+|ReqRedir\+|CmpltRedir\+)|\bACS\b.{0,40}enabled|DMAR.{0,40}fault|AMD-Vi.{0,40}(?:IO_PAGE_FAULT|fault)|IOMMU.{0,40}fault",
       "p2p_acs_iommu", ROOT, 2, "PCIe ACS or the IOMMU redirects peer-to-peer traffic"),
    _s("p2p_unsupported", ("peer access", "PeerAccessUnsupported", "PEER_ACCESS", "P2P is not supported", "P2P not supported", "cudaIpc"),
       r"peer access is not supported|cudaErrorPeerAccessUnsupported|CUDA_ERROR_PEER_ACCESS_UNSUPPORTED|P2P (?:is )?not supported"
       r"|cudaIpc(?:Get|Open)MemHandle failed ?: ?(?:operation not supported|invalid device context|invalid argument)",
       "p2p_driver_bug", ROOT, 2, "the driver refuses or mishandles GPU peer-to-peer access"),
    # -- NCCL itself ---------------------------------------------------------------------------
    _s("nccl_version_mismatch", ("Mismatched NCCL version", "NCCL version mismatch"),
       r"Mismatched NCCL version detected|NCCL version mismatch",
       "version_mismatch", ROOT, 1, "ranks run different NCCL versions"),
    _s("bad_family", ("is neither AF_INET",),
       r"with family (?P<fam>\d+) is neither AF_INET",
       "version_mismatch", ROOT, 3, "a peer sent a connection handle this NCCL cannot read"),
    _s("msg_truncated", ("Message truncated",),
       r"Message truncated ?: received (?P<got>[\d,]+) bytes instead of (?P<want>[\d,]+)",
       "nccl_internal_bug", ROOT, 3, "a bootstrap message had an unexpected size"),
    _s("topo_attr", ("Attribute", "XML", "xml"),
       r"Attribute (?P<attr>\S+) of node (?P<node>\S+) not found|XML (?:[Pp]arse|[Ff]ile) [Ee]rror|[Ee]rror parsing XML"
       r"|XML (?:Topology|Graph) has wrong version",
       "nccl_internal_bug", ROOT, 2, "NCCL could not use the topology description (often an injected NCCL_TOPO_FILE)"),
    _s("ring_broken", ("does not loop back to start", "does not contain rank"),
       r"ring (?P<ring>\d+) does not (?:loop back to start|contain rank)",
       "nccl_internal_bug", ROOT, 3, "ranks computed rings that do not agree (NCCL's topology search differs between ranks)"),
    _s("peer_mapping", ("peer mapping resources exhausted", "TooManyPeers", "TOO_MANY_PEERS"),
       r"peer mapping resources exhausted|cudaErrorTooManyPeers|CUDA_ERROR_TOO_MANY_PEERS",
       "nccl_internal_bug", ROOT, 3, "more GPUs than CUDA lets one GPU map as peers over PCIe (8)"),
    _s("socket_truncated", ("message truncated : receiving",),
       r"NET/Socket : (?:peer (?P<peer>\S{1,120}) )?message truncated : receiving (?P<got>\d+) bytes instead of (?P<want>\d+)",
       "collective_mismatch", ROOT, 2, "a peer sent more data than this rank posted for: the ranks' operations or settings differ"),
    _s("nccl_error_class", ("internal error", "ncclInternalError"),
       r"ncclInternalError: Internal check failed|NCCL error[^\n]{0,200}?internal error - please report",
       "nccl_internal_bug", ROOT, 8, "NCCL reported an internal error and no other line says why"),
    _s("nccl_mismatched_collective", ("Mismatched collective",),
       r"Mismatched collective detected.{0,80}?around rank (?P<rank>\d+)",
       "collective_mismatch", ROOT, 2, "NCCL saw a peer run a different operation"),
    _s("launcher_rank_count", ("Bootstrap Root", "already checked in"),
       r"Bootstrap Root : mismatch in (?:rank count|info)|rank (?P<rank>\d+) of (?P<n>\d+) ranks has already checked in",
       "launcher_misconfig", ROOT, 1, "the launcher started a different number of ranks than the job expects, or the same rank twice"),
    _s("invalid_device", ("invalid device ordinal", "InvalidDevice", "INVALID_DEVICE"),
       r"invalid device ordinal|cudaErrorInvalidDevice|CUDA_ERROR_INVALID_DEVICE",
       "launcher_misconfig", ROOT, 1, "a rank asked for a GPU that does not exist: more ranks per node than GPUs, or a wrong local rank"),
    _s("store_barrier", ("store based barrier", "store_based_barrier"),
       r"store based barrier.{0,200}?\(world_size=(?P<world>\d+), (?:worker_count|num_workers_joined)=(?P<joined>\d+)",
       "launcher_misconfig", ROOT, 3, "process-group init waited for ranks that never joined the store barrier"),
    _s("net_not_found", ("network", "NCCL_NET"),
       r"Error: network (?P<net>\S*) not found|NCCL_NET.{0,40}not found",
       "ib_misconfig", ROOT, 1, "NCCL_NET names a network (IB, a plugin) this node cannot load"),
    _s("nofile", ("Too many open files", "EMFILE"),
       r"Too many open files|EMFILE",
       "other", ROOT, 2, "the open-file limit (ulimit -n) is too low for the job's sockets"),
    # -- torch / gloo collectives ------------------------------------------------------------------
    _s("collective_mismatch", ("mismatch between collectives", "CollectiveFingerPrint", "collective mismatch", "doesn't match expected size",
                               "op.preamble.length", "inconsistent collective", "Mismatch between collectives",
                               "appears not to match", "DDP expects same model"),
       r"[Dd]etected mismatch between collectives|inconsistent collective|CollectiveFingerPrint|collective mismatch"
       r"|Received data size doesn't match expected size|op\.preamble\.length <= op\.nbytes"
       r"|appears not to match (?:sizes|strides) of the same param in process|DDP expects same model across all ranks",
       "collective_mismatch", ROOT, 1, "ranks called different collectives, or the same one with different sizes"),
    _s("watchdog_timeout", ("Watchdog caught", "before timing out", "checkTimeout", "ncclCommWatchdog", "Timeout at NCCL work",
                            "failed or timed out", "collective timeout", "watchdog got stuck", "Heartbeat monitor timed out"),
       r"Watchdog caught collective operation timeout|ran for \d+ milliseconds before timing out|WorkNCCL::checkTimeout"
       r"|ncclCommWatchdog|Timeout at NCCL work|operations have failed or timed out|due to a collective timeout"
       r"|watchdog got stuck|Heartbeat monitor timed out",
       "collective_timeout_straggler", CONSEQUENCE, 6, "a collective did not complete within the process-group timeout"),
    _s("store_get_timeout", ("ncclUniqueId", "store->get", "Socket Timeout", "wait timeout"),
       r"retrieving ncclUniqueId from \[(?P<src>\d+)\].{0,200}?(?:Socket Timeout|[Tt]imeout|timed out)|store->get\([^)]{0,80}\) got error: (?:Socket Timeout|[Tt]imeout)",
       "collective_timeout_straggler", ROOT, 4, "a rank waited in the store for rank 0's NCCL unique id until the timeout"),
    _s("store_wait_timeout", ("wait timeout after", "Socket Timeout", "waitForInput"),
       r"wait timeout after (?P<ms>\d+) ?ms, keys: (?P<keys>\S{1,200})|(?:DistStoreError|RuntimeError|DistNetworkError): Socket Timeout"
       r"|waitForInput: socket \S{1,200} timed out after (?P<ms2>\d+) ?ms",
       "collective_timeout_straggler", ROOT, 5, "a rank waited in the store for a key another rank never wrote"),
    _s("monitored_barrier_peer", ("received errors while waiting for send/recv",),
       r"received errors while waiting for send/recv from rank (?P<rank>\d+)",
       "peer_process_died", ROOT, 5, "monitored_barrier got an error from a peer instead of its reply"),
    _s("gloo_recv_timeout", ("Timed out waiting", "operation to complete"),
       r"Timed out waiting (?P<ms>\d+) ?ms for (?P<op>recv|send) operation to complete",
       "collective_timeout_straggler", ROOT, 5, "a gloo send/recv did not complete within the timeout"),
    _s("monitored_barrier", ("monitoredBarrier", "failed to pass monitoredBarrier"),
       r"[Rr]anks? (?P<ranks>[\d, ]+) failed to pass monitoredBarrier",
       "collective_timeout_straggler", ROOT, 3, "monitored_barrier named ranks that did not arrive"),
    _s("rpc_timeout", ("RPC call to",),
       r"RPC call to (?P<what>\S+) timed out",
       "nccl_internal_bug", ROOT, 5, "a serving engine's workers stopped answering inside a model step"),
    _s("conn_lost", ("closed by", "reset by peer", "Broken pipe", "remote process exited", "RemoteError", "Socket recv failed",
                     "EPIPE", "ECONNRESET", "Connection closed", "peer closed", "socketProgress", "Read error",
                     "connection abort", "Proxy Call to rank", "Connection was likely closed", "got 0 bytes"),
       r"Connection closed by (?:remote )?peer|[Cc]onnection reset by peer|Broken pipe|remote process exited|ncclRemoteError"
       r"|Socket recv failed|EPIPE|ECONNRESET|Connection closed|peer closed|Read error \[|[Cc]onnection abort"
       r"|Proxy Call to rank \d+ failed|Connection was likely closed|[Ff]ailed to recv, got 0 bytes",
       "peer_process_died", CONSEQUENCE, 6, "a connection to a peer was closed or reset"),
    _s("process_died", ("Signal ", "SIGKILL", "exitcode", "Killed", "SIGSEGV", "Segmentation fault", "core dumped", "oom-kill", "OOM"),
       r"Signal (?P<sig>\d+) \((?P<name>SIG\w+)\) received by PID (?P<pid>\d+)|exitcode\s*:?\s*(?P<code>-\d+)"
       r"|^Killed$|Killed process \d+|oom-kill|Out of memory: Kill|Segmentation fault|SIGSEGV|\(core dumped\)",
       "peer_process_died", ROOT, 5, "a process was killed or crashed"),
    # -- context ---------------------------------------------------------------------------------------
    _s("cudagraph_hint", ("graph", "Graph", "enforce_eager", "enforce-eager"),
       r"[Cc][Uu][Dd][Aa] ?[Gg]raph|cudagraph|CUDAGraph|enforce[_-]eager|graph capture",
       None, CONTEXT, 9, "CUDA graphs are in use"),
    _s("busy_hint", ("Generating", "pre-processing", "okeniz", "main_process_first", "checkpoint", "Saving", "valuat", "map "),
       r"Generating \w+ split|pre-?processing|[Tt]okeniz|main_process_first|[Ss]aving (?:model )?checkpoint|[Ee]valuat\w+",
       None, CONTEXT, 9, "a rank was busy outside collectives (data preparation, checkpointing, evaluation)"),
    # Which communication library wrote a line: decides which setting a remedy names (commdoctor.ifvars).
    # Not "ProcessGroupNCCL": torch writes it on every INFO line of the NCCL process group (hundreds of thousands
    # in a long job's log), and each such line would be parsed in full for this one fact; its error lines say
    # "NCCL error" or "WorkNCCL", and NCCL's own lines give the version and communicators.
    _s("lib_nccl", ("WorkNCCL", "NCCL WARN", "NCCL error", "ncclSystemError", "ncclInternalError", "ncclRemoteError",
                    "NCCL version", "NCCL_SOCKET_IFNAME"),
       r"WorkNCCL|NCCL WARN|NCCL error|nccl(?:System|Internal|Remote)Error|NCCL version|NCCL_SOCKET_IFNAME",
       None, CONTEXT, 9, "a line written by NCCL or torch's NCCL process group"),
    _s("lib_gloo", ("ProcessGroupGloo", "gloo", "Gloo", "GLOO_"),
       r"ProcessGroupGloo|\bgloo(?:/|::|\b)|\bGloo\b|GLOO_SOCKET_IFNAME",
       None, CONTEXT, 9, "a line written by gloo or torch's gloo process group"),
    _s("lib_openmpi", ("btl_", "oob_", "ORTE", "PRTE", "OMPI", "Open MPI", "mpirun", "prterun", "orterun", "pml_", "mca_"),
       r"btl_\w+|oob_\w+|\bORTE\b|\bPRR?TE\b|OMPI|Open MPI|\b(?:mpirun|prterun|orterun)\b|pml_\w+|mca_\w+",
       None, CONTEXT, 9, "a line written by Open MPI or its launcher"),
    _s("lib_ucx", ("UCX", "ucp_", "uct_", "ProcessGroupUCC", "UCC_"),
       r"\bUCX\s+(?:ERROR|WARN|DIAG|INFO)|UCX_\w+|\bucp_\w+|\buct_\w+|ProcessGroupUCC|UCC_\w+",
       None, CONTEXT, 9, "a line written by UCX (Open MPI's pml ucx, UCC)"),
    _s("lib_mpich", ("HYD", "mpiexec@", "proxy:", "MPICH", "Intel(R) MPI", "I_MPI_", "MPIR_", "MPIDI_", "BAD TERMINATION"),
       r"\bHYD\w*|\[mpiexec@|\[proxy:|MPICH|Intel\(R\) MPI|I_MPI_\w+|MPIR_\w+|MPIDI_\w+|BAD TERMINATION",
       None, CONTEXT, 9, "a line written by MPICH, Intel MPI or their launcher (Hydra)"),
    _s("ibverbs_missing", ("libibverbs",),
       r"Failed to open libibverbs", None, CONTEXT, 9, "no InfiniBand verbs library: NCCL uses sockets (harmless on non-IB hosts)"),
)

BY_ID: dict[str, Signature] = {s.id: s for s in SIGNATURES}

#: Literal words that make a line worth parsing at all. The scanner looks for
#: these (and only these) before any line is decoded, so a healthy gigabyte of
#: NCCL INFO output costs one multi-pattern pass. Every signature needle is
#: here, plus what the run model reads from INFO lines.
MODEL_KEYWORDS: tuple[str, ...] = (
    "WARN", "rror", "RROR", "ailed", "ailure", "FAIL", "imeout", "imed out", "xception", "Traceback",
    "NCCL version", "nranks", "nRanks", "Bootstrap", "NET/IB :", "NET/IB:", "NET/Socket", "NET/Plugin", "NET/OFI",
    "NET : ", "Using network", "Using interface", "set by environment", "lugin", "cudaDriverVersion", "NVLS", "CollNet",
    "GLOBAL_RANK", "ersion", "GPU0", "GPU1", "Root Cause", "Failures:", "host   ", "local_rank", "traceback", "nexpected",
    "local=[", "remote=[", "Last error", "SeqNum", "atchdog", "bort",
    # NCCL's error-return traces ("bootstrap.cc:554 -> 3") carry no other keyword.
    ".cc:", ".cu:", ".h:", ".c:", "GPU2", "GPU3", "GPU4", "GPU5", "GPU6", "GPU7",
)


def keywords() -> tuple[str, ...]:
    """Every literal the scanner must find, deduplicated, in a stable order."""
    seen: dict[str, None] = {}
    for k in MODEL_KEYWORDS:
        seen.setdefault(k, None)
    for s in SIGNATURES:
        for n in s.needles:
            seen.setdefault(n, None)
    return tuple(seen)


def match_all(text: str) -> list[tuple[Signature, re.Match[str]]]:
    """Every signature that ``text`` shows, in table order."""
    out = []
    for s in SIGNATURES:
        m = s.search(text)
        if m is not None:
            out.append((s, m))
    return out
