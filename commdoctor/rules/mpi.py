"""Rules for Open MPI, MPICH/Hydra, PMI and UCX, in the same causes as NCCL's and gloo's.

Promise: rule rows only (see commdoctor.rules.base), written from Open MPI's
help texts (opal/mca/btl/tcp/help-mpi-btl-tcp.txt, ompi/mca/bml/r2,
orte|prrte errmgr and oob/tcp), Hydra's messages and UCX's
(src/ucp/core/ucp_context.c, src/ucp/wireup/select.c).
"""

from __future__ import annotations

import re
from typing import Any

from commdoctor.rules.base import (CONSEQUENCE, CONTEXT, E, ROOT, Cand, Code, ModelRule, cand, crash_stacks, ctx, frame_fn,
                                   frame_lib, group, hits, out_of_fds, own_reading, sig, signal_name)


def _ucx_create_ah(m: Any, hs: list[Any], found: list[Cand]) -> list[Cand]:
    devs = sorted({str(h.groups.get("dev")) for h in hs if h.groups.get("dev")})
    return [cand("LOG036", "ib_misconfig", 2, hs,
                 detail=f"UCX could not create an address handle for a peer on {', '.join(devs[:4]) or 'an RDMA device'}: "
                        "the GID it used (sgid_index) and the peer's address do not go together on that port. UCX uses "
                        "every RDMA device it finds: pin the one set up for this network (UCX_NET_DEVICES=mlx5_0:1; "
                        "show_gids lists each port's GIDs) and, on RoCE, a GID index of the same kind on every node "
                        "(UCX_IB_GID_INDEX).",
                 alts=[("hardware_fault", "if the device named is the intended one and its GIDs match the peers', check "
                                          "the port (ibv_devinfo: state, link layer)")])]


def _btl_tcp(m: Any, hs: list[Any], found: list[Cand]) -> list[Cand]:
    """Open MPI's TCP transport on an interface peers cannot use; 'unable to reach each other' is the bml's summary."""
    peer = hits(m, "mpi_tcp_peer", exclude=("mpi_btl_tcp",))
    reach = [h for h in peer if "reach each other" in h.ev.text]
    tcp = hs + [h for h in peer if h not in reach]
    out = []
    if tcp:
        out.append(cand("LOG023", "wrong_interface", 1, tcp, consequence=out_of_fds(m, tcp)))
    if reach:
        out.append(cand("LOG026", "wrong_interface", 2, reach, alts=[
            ("launcher_misconfig", "a btl list without 'self' (--mca btl tcp instead of tcp,self) fails the same way; "
                                   "so does a list that keeps only a fabric one of the hosts lacks (openib, ofi)")]))
    return out


def _if_setting(m: Any, hs: list[Any], found: list[Cand]) -> list[Cand]:
    param = group(hs, "param")
    return [cand("LOG021", "wrong_interface", 1, hs,
                 params={"iface": f"in {param}" if param else "in Open MPI's interface include/exclude list"},
                 detail="Open MPI reads btl_tcp_if_include / btl_tcp_if_exclude (MPI traffic) and oob_tcp_if_include "
                        "/ oob_tcp_if_exclude (the runtime's own traffic): names must exist on every node, CIDR "
                        "subnets must match an interface's network exactly, and include and exclude cannot both be set.")]


#: UCX transport names that run over an RDMA device (verbs/mlx5 InfiniBand and RoCE, DC, EFA's srd, gga).
_RDMA_TLS = {"ib", "rc", "rc_v", "rc_verbs", "rc_x", "rc_mlx5", "ud", "ud_v", "ud_verbs", "ud_x", "ud_mlx5", "dc", "dc_x",
             "dc_mlx5", "srd", "gga", "gga_mlx5"}


def _no_rdma_transport(m: Any) -> list[Any]:
    """UCX's lines saying RDMA transports were asked for and the ones it has include none at all: this UCX cannot
    drive an RDMA device on this node (built without verbs/mlx5, as some package builds are, its RDMA module not
    loadable, or no RDMA device in the container), whatever UCX_TLS names."""
    out = []
    for h in hits(m, "ucx_tls_unavailable"):
        asked = {t.strip(" '") for t in (h.groups.get("asked") or "").split(",")}
        have = {t.strip(" '") for t in (h.groups.get("have") or "").split(",")}
        if asked & _RDMA_TLS and have and not have & _RDMA_TLS:
            out.append(h)
    return out


def _ucx_devices(m: Any, hs: list[Any], found: list[Cand]) -> list[Cand]:
    left_out = [h for h in hs if h.groups.get("dev")]
    nodev = [h for h in hs if h not in left_out]
    bare = _no_rdma_transport(m)
    if bare and nodev:
        have = (bare[0].groups.get("have") or "").strip()
        return [cand("LOG089", "other", 1, bare[:2] + nodev[:2], params={
            "what": f"UCX was asked for {(bare[0].groups.get('asked') or '?').strip()} and has only {have}"},
            detail="The transports this UCX offers on the node include no RDMA one (no rc, ud, dc or ib): it cannot use "
                   "InfiniBand/RoCE here at all. A UCX built without verbs/mlx5 support (some package builds leave them "
                   "out), an RDMA module that cannot load (rdma-core missing), or a container without the RDMA devices "
                   "gives this; `ucx_info -d` lists what it has.",
            alts=[("wrong_interface", "if `ucx_info -d` on the node does list rc/ud transports, UCX_TLS or "
                                      "UCX_NET_DEVICES in the job's environment names ones it should not")])]
    out = []
    if left_out:
        out.append(cand("LOG027", "wrong_interface", 1, left_out,
                        params={"what": f"the peer is reached through {left_out[0].groups['dev']}, which UCX_NET_DEVICES leaves out"}))
    if nodev:
        out.append(cand("LOG021", "wrong_interface", 1, nodev,
                        params={"iface": f"UCX asked for ({nodev[0].groups.get('asked') or '?'})"},
                        detail="UCX_NET_DEVICES / UCX_TLS name devices or transports this host does not have "
                               "(ucx_info -d lists the ones it has)."))
    return out


def _ompi_cuda_ipc(hs: list[Any]) -> list[Cand]:
    ret = group(hs, "ret") or "?"
    if ret == "1":
        return [cand("LOG086", "launcher_misconfig", 2, hs, params={"ret": ret})]
    if ret == "2":
        return [cand("LOG031", "cuda_oom", 3, hs, params={"what": "while CUDA IPC mapped a peer rank's buffer"}, detail="CUDA IPC could not map a peer rank's GPU buffer: the device "
                                                         "was out of memory (cuIpcOpenMemHandle returned 2).")]
    return [cand("LOG039", "p2p_driver_bug", 4, hs, detail=f"CUDA IPC between ranks failed (cuIpcOpenMemHandle returned {ret}).",
                 alts=[("launcher_misconfig", "ranks that each see only their own GPU cannot map each other's memory: "
                                              "make every GPU of the node visible to every rank")])]


def _ucx_shm_attach(m: Any, hs: list[Any], found: list[Cand]) -> list[Cand]:
    """A peer's shared-memory segment could not be attached. When UCX's posix transport was refused the peer's
    /proc/PID/fd link, that refusal (a ptrace-access or PID-namespace rule, not the size of /dev/shm) explains the
    'Shared memory error' lines too."""
    proc = [h for h in hs if "/proc/" in h.ev.text]
    if proc:
        return [cand("LOG084", "other", 2, proc + [h for h in hs if h not in proc], alts=[
            ("shm_too_small", "if UCX_POSIX_USE_PROC_LINK=n still fails, the ranks do not share /dev/shm (separate "
                              "containers without --ipc=host) or it is full")])]
    return [cand("LOG030", "shm_too_small", 2, hs,
                 detail="UCX's shared-memory transport could not map a peer process's segment (Shared memory error). "
                        "In containers this is a /dev/shm that is private, too small or not shared between the ranks' "
                        "containers (run with --ipc=host, or one container per node).",
                 alts=[("other", "if /dev/shm has room and is shared, the kernel's or container's ptrace/PID-namespace "
                                 "policy refuses the mapping: UCX_POSIX_USE_PROC_LINK=n, or UCX_TLS without posix")])]


def _ucx_unreachable(hs: list[Any]) -> dict[str, Any]:
    what = next((f"no {h.groups['what']} transport to {h.groups.get('peer') or 'a peer'}" for h in hs if h.groups.get("what")),
                "Destination is unreachable")
    return {"what": what}


def _unroutable_uri(addrs: str) -> bool:
    """Every address of an MPI contact URI is loopback or in docker's default bridge network."""
    parts = [a for a in addrs.split(",") if a]
    return bool(parts) and all(a.startswith(("127.", "172.17.")) for a in parts)


def _daemons(m: Any, hs: list[Any], found: list[Cand]) -> list[Cand]:
    lost = [h for h in hs if "lost communication" in h.ev.text]
    start = [h for h in hs if h not in lost]
    rt = (hs[0].groups.get("rt") or "mpirun").upper()
    out = []
    if start:
        noconn = any("establish a communication connection" in h.ev.text for h in start)
        # mpirun's contact URI ("JOBID.0;tcp://ADDR[,ADDR...]:PORT", printed by --report-uri and passed to every orted as
        # orte_hnp_uri): the daemons on other nodes connect back to one of these addresses. When every one of them is
        # loopback or docker's default bridge (172.17.0.0/16), no other machine can reach mpirun.
        uri = [h for h in hits(m, "mpi_contact_uri") if _unroutable_uri(h.groups.get("addrs") or "")]
        if uri:
            addrs = uri[0].groups.get("addrs")
            out.append(cand("LOG063", "wrong_interface", 2, start + uri[:1],
                            params={"what": f"{rt}'s daemons on other nodes cannot reach it at {addrs} (a container "
                                            "bridge or loopback address)"},
                            detail=f"{rt} advertised only {addrs}: docker's default bridge network (172.17.0.0/16) or "
                                   "loopback, which exists on every machine but leads nowhere else. Run the containers "
                                   "with host networking or pin the shared interface (oob_tcp_if_include, "
                                   "btl_tcp_if_include).",
                            alts=[("launcher_misconfig", "if the nodes do reach that address (an overlay network), "
                                                         "check that MPI is installed on the same path on every node")]))
    if start and not out:
        out.append(cand("LOG063", "wrong_interface" if noconn else "launcher_misconfig", 2 if noconn else 3, start,
                        params={"what": f"{rt} could not start or reach its daemons on the other nodes"},
                        detail=f"{rt}'s daemons connect back to mpirun over TCP (the oob_tcp interfaces). Besides a "
                               "missing route or interface, daemons fail to start when the MPI installation is not on "
                               "the same path on every node or ssh to a node is refused.",
                        alts=[("launcher_misconfig" if noconn else "wrong_interface",
                               "if `ssh NODE which orted prted` works from the first node, it is the network: pin "
                               "oob_tcp_if_include to the interface the nodes share; if not, fix PATH/LD_LIBRARY_PATH "
                               "(or mpirun --prefix)"),
                              ("firewall_or_port_blocked", "a firewall between the nodes stops the daemons' connection "
                                                           "back to mpirun the same way")]))
    if lost:
        out.append(cand("LOG063", "peer_process_died", 5, lost, params={"what": f"{rt} lost a daemon on another node"},
                        alts=[("hardware_fault", "a node that dropped off the network (a failing NIC or link) loses its "
                                                 "daemon the same way: check the node's own logs and dmesg")]))
    return out


def _hydra(m: Any, hs: list[Any], found: list[Cand]) -> list[Cand]:
    g = hs[0].groups
    err = (g.get("err") or "").lower()
    cause = "firewall_or_port_blocked" if "refused" in err or "timed out" in err else "wrong_interface"
    return [cand("LOG063", cause, 2, hs,
                 params={"what": f"Hydra could not connect from {g.get('src')} to {g.get('dst')} ({g.get('err')})"},
                 alts=[("hostname_resolution", f"if {g.get('dst')} resolves to another address on {g.get('src')} "
                                               "(getent hosts NAME), fix the name; -iface / HYDRA_IFACE pins the interface")])]


def _pmi(hs: list[Any]) -> dict[str, Any]:
    launcher = group(hs, "launcher")
    return {"what": f"the job was started directly by {launcher}, and this MPI has no support for its PMI" if launcher
            else "the processes could not initialise the launcher's PMI/PMIx"}


def _mpirun_signal(m: Any, hs: list[Any], found: list[Cand]) -> list[Cand]:
    g = hs[0].groups
    name = f"signal {g.get('sig')} ({g['name']})" if g.get("name") else signal_name(g.get("sig"))
    c = cand("LOG060", "peer_process_died", 5, hs,
             params={"what": f"rank {g.get('rank')} on {g.get('host')} was killed by {name} ({g.get('tool')} reports it)"})
    if g.get("rank"):
        c.ranks.add(int(str(g["rank"])))
    if g.get("host"):
        c.hosts.add(str(g["host"]))
    return [c]


def _hydra_termination(m: Any, hs: list[Any], found: list[Cand]) -> list[Cand]:
    code = group(hs, "code")
    said = group(hs, "what")
    # Hydra's EXIT CODE is the signal number, or 128 + the signal as a shell reports it (139: SIGSEGV).
    sgn = str(int(code) - 128) if code and int(code) > 128 else code
    what = (f"a rank was killed by {signal_name(sgn)} (Hydra: EXIT CODE {code}" + (f", {said})" if said else ")")
            if sgn else "a rank ended badly (Hydra: BAD TERMINATION)")
    return [cand("LOG060", "peer_process_died", 5, hs, params={"what": what},
                 detail="SIGKILL (9) usually comes from the kernel's OOM killer (dmesg: 'Out of memory: Killed "
                        "process'), a scheduler enforcing limits or a manual kill; SIGSEGV (11) is a crash.")]


def _mpirun_exit(hs: list[Any]) -> dict[str, Any]:
    rank = group(hs, "rank")
    return {"what": f"rank {rank} exited with an error status" if rank else "a rank exited with an error status (mpirun reports it)"}


def _call_order(m: Any, hs: list[Any], found: list[Cand]) -> list[Cand]:
    """A call before MPI_Init or after MPI_Finalize (the row leaves MPI_Init's own failure to the lines before it)."""
    fn, when = group(hs, "fn") or "an MPI function", group(hs, "when") or ""
    return [own_reading(hs, params={"fn": f"{fn}()" if fn.startswith("MPI") else fn,
                                    "when": "before MPI_Init" if when.startswith("before") else "after MPI_Finalize"})]


_MEMCPY = re.compile(r"memcpy|memmove")
_UCX_FRAME = re.compile(r"^(?:ucp_|uct_|libucp|libuct)")


def _gpu_buffer_as_host(m: Any, found: list[Cand], _unused: list[Cand]) -> list[Cand]:
    """A crash in a host memcpy that UCX called while packing or sending (ucp_dt_pack, uct_*_am_bcopy / am_short): UCX
    copied a GPU buffer as if it were host memory, which it does when it cannot tell device pointers apart -- UCX built
    without CUDA (openucx/ucx#7845), or UCX_TLS without cuda_copy, the transport that detects them (openucx/ucx#3776)."""
    at = []
    for stack in crash_stacks(m):
        for i, f in enumerate(stack[:-1]):
            copy = _MEMCPY.search(frame_fn(f)) or (frame_lib(f) == "libc" and not frame_fn(f))
            if copy and any(_UCX_FRAME.search(frame_fn(g)) or _UCX_FRAME.search(frame_lib(g)) for g in stack[i + 1:i + 3]):
                at.append(f)
                break
    if not at:
        return []
    return [cand("LOG119", "other", 3, at[:2], params={
        "what": "a process crashed in a host memory copy that UCX made of a message buffer (a GPU buffer read as host "
                "memory)"},
        detail="UCX recognises GPU memory through its cuda_copy transport: a UCX built without CUDA support, or UCX_TLS "
               "that leaves cuda_copy out (rc,gdr_copy alone), packs a device pointer with the CPU's memcpy, which "
               "faults ('invalid permissions for mapped object').",
        alts=[("peer_process_died", "with host buffers only, a crash in that copy is memory the program freed or overran")])]


MODEL_RULES = (
    ModelRule("gpu_buffer_as_host", _gpu_buffer_as_host, "a crash in the host copy UCX made of a GPU buffer"),
)


#: MPI error classes (the standard's MPI_ERR_*) whose meaning is the program's call: what each says of the call.
_MPI_CALL_CLASSES = {
    **{c: f"was passed {what} (MPI_ERR_{c})" for c, what in (
        ("RANK", "a rank outside the communicator"), ("ROOT", "a root outside the communicator"),
        ("COMM", "an invalid communicator (freed, MPI_COMM_NULL, or another library's handle)"),
        ("COUNT", "an invalid count"), ("TYPE", "an invalid datatype"), ("BUFFER", "an invalid buffer"),
        ("ARG", "an invalid argument"), ("TAG", "an invalid tag"), ("OP", "an invalid reduction operation"),
        ("GROUP", "an invalid group"), ("WIN", "an invalid window"))},
    "RMA_SYNC": "was called out of its window's synchronisation (an RMA access epoch not closed by a fence, unlock or "
                "complete first) (MPI_ERR_RMA_SYNC)",
    "UNSUPPORTED_OPERATION": "asked for an operation this MPI library does not support for these arguments "
                             "(MPI_ERR_UNSUPPORTED_OPERATION: a datatype, reduction or GPU buffer it cannot handle)",
}
#: MPICH's class strings ("Fatal error in PMPI_Recv: Message truncated, error stack:") as the standard's names.
_MPICH_CLASSES = {"Message truncated": "TRUNCATE", "Invalid communicator": "COMM", "Invalid rank": "RANK",
                  "Invalid root": "ROOT", "Invalid count": "COUNT", "Invalid datatype": "TYPE",
                  "Invalid buffer pointer": "BUFFER", "Invalid argument": "ARG", "Invalid tag argument": "TAG",
                  "Invalid MPI_Op": "OP", "Process failed": "PROC_FAILED"}


def _mpi_error_class(m: Any, hs: list[Any], found: list[Cand]) -> list[Cand]:
    """An MPI call's error class, as Open MPI's fatal handler ("*** MPI_ERR_TRUNCATE: message truncated") or MPICH's
    error stack head ("Fatal error in PMPI_Recv: Message truncated, error stack:") reports it."""
    by: dict[str, list[Any]] = {}
    for h in hs:
        cls = h.groups.get("cls") or _MPICH_CLASSES.get(str(h.groups.get("mcls")), "")
        by.setdefault(cls, []).append(h)
    # Open MPI names the call a few lines above the class: "*** An error occurred in MPI_Win_free".
    named = {(h.ev.source, h.ev.line): h.groups.get("fn") for h in hits(m, "ompi_error_in") if h.ev.line is not None}
    out = []
    for cls, got in by.items():
        fn = group(got, "fn") or next((named[(h.ev.source, h.ev.line - k)] for h in got if h.ev.line is not None
                                       for k in range(1, 5) if (h.ev.source, h.ev.line - k) in named), None)
        call = fn or "an MPI call"
        if cls == "TRUNCATE":
            out.append(cand("LOG050", "collective_mismatch", 2, got,
                            detail=f"{call} received a message larger than the buffer it posted (MPI_ERR_TRUNCATE): the "
                                   "ranks disagree on the count or datatype of a send/receive pair or a collective."))
        elif cls in ("PROC_FAILED", "PROC_FAILED_PENDING", "REVOKED"):
            out.append(cand("LOG060", "peer_process_died", 3, got,
                            params={"what": f"a process of the communicator failed ({call}: MPI_ERR_{cls})"}))
        elif cls in _MPI_CALL_CLASSES:
            out.append(cand("LOG124", "other", 3, got, params={"what": f"{call} {_MPI_CALL_CLASSES[cls]}"}))
    return out


SIGNATURES = (
    # HPC fabrics and MPI stacks, from their sources: HPE Slingshot's libfabric cxi provider (prov/cxi: cxip_if.c
    # "Interface %s link down.", "CXI retry handler not running for device: %s"; cxip_iomm.c "cxil_map ... failure:
    # -12, Cannot allocate memory", "mlockall(MCL_CURRENT | MCL_FUTURE) failed: -12"; cxip_nic.c/cxip_if.c the job's
    # VNI and service id: "Failed to find valid default rgroup and vni for %s", "Invalid VNI %d for %s and svc_id %d",
    # "Failed to find %s in SLINGSHOT_DEVICES"), MVAPICH2's verbs channel (rdma_iba_priv.c "Failed to create QP.
    # Error: 12 (Cannot allocate memory)", vbuf.c "Cannot register vbuf region"; "No active HCAs found on the system"),
    # MPICH's shared memory (MPL "unable to resize the shared memory object %s to size %d (errno 28)") and PMI
    # ("Auto-detection of PMI version failed. Found both env vars PMI_SIZE and PMIX_NAMESPACE"), hydra's proxy
    # ("unable to connect to server %s at port %d (check for firewalls!)").
    sig("hpc_fabric_memlock", ("cxil_map lni", "mlockall(MCL_CURRENT | MCL_FUTURE) failed", "Failed to create QP. Error: 12",
                               "Cannot register vbuf region"),
       r"cxil_map lni: \d{1,6} [^\n]{0,120}failure: -12, Cannot allocate memory|mlockall\(MCL_CURRENT \| MCL_FUTURE\) failed: -12"
       r"|Failed to create QP\. Error: 12 \(Cannot allocate memory\)|Cannot register vbuf region",
       "rlimit_memlock", ROOT, 2, "the fabric provider could not pin the memory it maps (the locked-memory limit)",
       code="LOG035"),
    sig("hpc_fabric_down", ("link down.", "CXI retry handler not running"),
       r"Interface (?P<dev>cxi\d{1,3}) link down\.|CXI retry handler not running for device: (?P<dev2>cxi\d{1,3})",
       "hardware_fault", ROOT, 3, "a Slingshot NIC of the node is down or its retry handler is not running",
       code="LOG037", params=lambda hs: {"what": f"Slingshot NIC {group(hs, 'dev', 'dev2')} is down or unmanaged "
                                                 "(its link, or the cxi_rh retry-handler service of the node)"}),
    sig("hpc_fabric_vni", ("Failed to find valid default rgroup and vni", "Invalid VNI", "in SLINGSHOT_DEVICES"),
       r"Failed to find valid default rgroup and vni for (?P<dev>cxi\d{1,3})|Invalid VNI \d{1,6} for (?P<dev2>cxi\d{1,3})"
       r" and svc_id \d{1,6}|Failed to find (?P<dev3>cxi\d{1,3}) in SLINGSHOT_DEVICES",
       "launcher_misconfig", ROOT, 2, "the job was given no Slingshot VNI or service for its NICs",
       code="LOG066", params=lambda hs: {"what": "the job has no Slingshot VNI/service for "
                                                 f"{group(hs, 'dev', 'dev2', 'dev3')} (start it through srun on a "
                                                 "Slingshot system, or set the cxi auth-key variables the site documents)"}),
    sig("mvapich_no_hca", ("No active HCAs found on the system",),
       r"No active HCAs found on the system",
       "other", ROOT, 2, "MVAPICH2 found no active InfiniBand device on the node",
       code="LOG089", params=lambda hs: {"what": "MVAPICH2 found no active HCA (ibstat: ports Active; the RDMA "
                                                 "devices inside the container)"}),
    sig("mpich_shm_resize", ("unable to resize the shared memory object",),
       r"unable to resize the shared memory object \S{1,120} to size \d{1,20} \(errno 28\)",
       "shm_too_small", ROOT, 1, "MPICH could not grow its shared-memory segment in /dev/shm (full)",
       code="LOG030"),
    sig("pmi_both_envs", ("Found both env vars PMI_SIZE and PMIX_NAMESPACE",),
       r"Auto-detection of PMI version failed\. Found both env vars PMI_SIZE and PMIX_NAMESPACE",
       "launcher_misconfig", ROOT, 2, "the process was given two launchers' PMI environments",
       code="LOG064", params=lambda hs: {"what": "both PMI-1/2 (PMI_SIZE) and PMIx (PMIX_NAMESPACE) variables are set: "
                                                 "a launcher inside another (mpirun under srun), or variables exported "
                                                 "by hand"}),
    sig("hydra_proxy_firewall", ("(check for firewalls!)",),
       r"unable to connect to server (?P<host>\S{1,255}) at port (?P<port>\d{1,5}) \(check for firewalls!\)",
       "firewall_or_port_blocked", ROOT, 2, "a node's Hydra proxy could not connect back to mpiexec",
       build=lambda m, hs, found: [cand("LOG063", "firewall_or_port_blocked", 2, hs, params={
           "what": f"a node's proxy could not connect to mpiexec on {group(hs, 'host')}:{group(hs, 'port')}"},
           alts=[("wrong_interface", "mpiexec listens on the address of its host name; -iface / HYDRA_IFACE picks the "
                                     "interface the nodes reach")])]),
    # Open MPI's runtime (orte/mca/oob/tcp help-oob-tcp.txt, Open MPI 2-4): "A process or daemon was unable to complete
    # a TCP connection to another process: Local host: ... Remote host: ... This is usually caused by a firewall on
    # the remote host." -- the runtime's own connection between nodes was refused or dropped.
    sig("ompi_oob_tcp", ("unable to complete a TCP connection",),
       r"A process or daemon was unable to complete a TCP connection",
       "firewall_or_port_blocked", ROOT, 2, "Open MPI's runtime could not open a TCP connection between two nodes",
       code="LOG063", params=lambda hs: {"what": "a TCP connection between two nodes' daemons failed"},
       detail="Open MPI's daemons connect to each other on ephemeral ports: a host firewall (iptables, firewalld, a "
              "security group) that admits ssh only lets the launch start and this connection fail.",
       alts=[("wrong_interface", "on nodes with several networks, the runtime may pick one the other node cannot "
                                 "reach: pin it with --mca oob_tcp_if_include <iface>")]),
    # MPICH's ch3:nem tcp netmod (MPID_nem_tcp_get_business_card): "gethostbyname failed, %s (errno %d)" -- this
    # node's own host name does not resolve.
    # MPICH's simple PMI client (src/pmi/simple, PMII_Connect_to_pm): "Unable to get host entry for %s" -- the host of
    # PMI_PORT ("host:port", Hydra's -pmi-port, written from `hostname`) does not resolve from this process
    # (pmodels/mpich#6621: a Mac whose name resolves to no address). Its next line, "Unable to connect to %s on %d",
    # follows from it.
    sig("pmi_host_entry", ("Unable to get host entry for",),
       r"Unable to get host entry for (?P<host>[\w.\-]{1,255})",
       "hostname_resolution", ROOT, 1, "MPICH's PMI client could not resolve the launcher's host name",
       code="LOG015", params=lambda hs: {"what": f"the host name {group(hs, 'host') or '?'} (the launcher's PMI_PORT)"},
       detail="The process manager published its address as a host name this process cannot resolve. Make the name "
              "resolve on every node (/etc/hosts) or let the launcher use an address."),
    # Hydra's utils/sock/sock.c HYDU_sock_connect: "unable to get host address for %s" -- a proxy (or mpiexec) could
    # not resolve the host it must connect to: the node names mpiexec advertises are its own `hostname`, which other
    # nodes may know under another name (pmodels/mpich#4712: laptops known as manager/worker in /etc/hosts).
    sig("hydra_host_address", ("unable to get host address for",),
       r"unable to get host address for (?P<host>[\w.\-]{1,255})",
       "hostname_resolution", ROOT, 1, "Hydra could not resolve the host name it must connect to",
       code="LOG015", params=lambda hs: {"what": f"the host name {group(hs, 'host') or '?'} (Hydra's connection back to "
                                                 "mpiexec)"},
       detail="Hydra's proxies connect back to mpiexec by the name mpiexec's machine calls itself (`hostname`), which "
              "must resolve to its address on every node: add that name to /etc/hosts everywhere, or rename the "
              "machines to the names the host list uses."),
    sig("mpich_gethostbyname", ("gethostbyname failed",),
       r"gethostbyname failed, (?P<host>[\w.\-]{1,255}) \(errno \d{1,4}\)",
       "hostname_resolution", ROOT, 1, "MPICH could not resolve this node's host name",
       code="LOG015", params=lambda hs: {"what": f"the host name {group(hs, 'host') or '?'}"}),
    # btl_tcp_proc.c (Open MPI 3-4, at btl_base_verbose): "btl: tcp: Match incoming connection from %s %s with locally
    # known IP %s failed (iface %d/%d)!" -- a peer's connection arrived from an address that is none of the addresses
    # that peer published (NAT or docker masquerading rewrote it, or it left by a non-routed interface), so the
    # transport drops it and the job hangs (Horovod's "hangs due to non-routed network interfaces").
    sig("mpi_btl_tcp_nomatch", ("Match incoming connection from",),
       r"Match incoming connection from \S{1,60} (?P<addr>[\d.:a-fA-F]{2,45}) with locally known IP "
       r"(?P<known>[\d.:a-fA-F]{2,45}) failed",
       "wrong_interface", ROOT, 3, "Open MPI dropped a peer's TCP connection that came from an address the peer "
       "never published",
       code="LOG023",
       detail="Open MPI's TCP transport accepts a connection only from an address the peer published. Connections "
              "arriving from another one (a docker bridge's masquerading, a non-routed second interface) are dropped "
              "and the job hangs: restrict the transport to the interface the hosts share (--mca btl_tcp_if_include "
              "<iface>, and --mca oob_tcp_if_include for the runtime), or run the containers with host networking."),
    sig("mpi_btl_tcp", ("btl_tcp", "mca_btl", "unexpected process identifier"),
       r"received unexpected process identifier|btl_tcp\w*\.c:\d+:\w*\] ?connect\(\) to (?P<addr>[\d.]+) failed"
       # Not bind() refused with EINVAL (22): the kernel rejecting the arguments, not the address, is a defect of
       # that Open MPI build on that OS (open-mpi/ompi#5815, macOS); an address not on this host is EADDRNOTAVAIL.
       r"|mca_btl_tcp\w*(?!.*bind\(\) failed: Invalid argument).*(?:failed|unreachable)",
       "wrong_interface", ROOT, 1, "Open MPI's TCP transport used an interface the peers cannot reach",
       build=_btl_tcp, always=True),
    sig("mpi_tcp_peer", ("failed to TCP connect to a peer", "cannot find a corresponding process", "inbound MPI TCP connection",
                        "unable to reach each other for"),
       r"Open MPI failed to TCP connect to a peer MPI process|cannot find a corresponding process\s*(?:entry)?"
       r"|detected an inbound MPI TCP connection request|unable to reach each other for(?: MPI communications)?",
       "wrong_interface", ROOT, 1, "Open MPI's TCP transport used an interface or address the peer cannot reach",
       read_by="mpi_btl_tcp"),
    sig("mpi_if_setting", ("btl_tcp_if_", "oob_tcp_if_", "TCP interface include and exclude", "specified to be included for out-of-band",
                          "to be excluded for TCP out-of-band"),
       r"invalid value was given for (?P<param>(?:btl|oob)_tcp_if_\w+)|Both TCP interface include and exclude lists"
       r"|None of the TCP networks specified to be included for out-of-band|networks to be excluded for TCP out-of-band",
       "wrong_interface", ROOT, 1, "Open MPI's interface include/exclude setting names nothing usable here",
       build=_if_setting),
    # orte/mca/oob/tcp: the HNP's contact URI "JOBID.VPID;tcp://ADDR[,ADDR...]:PORT" (mpirun --report-uri, and the
    # orte_hnp_uri each orted is started with): the addresses mpirun listens on for its daemons.
    ctx("mpi_contact_uri", (";tcp://",),
        r"\b\d{1,12}\.\d{1,6};tcp://(?P<addrs>\d{1,3}(?:\.\d{1,3}){3}(?:,\d{1,3}(?:\.\d{1,3}){3}){0,15}):\d{1,5}",
        "the addresses mpirun's runtime listens on for its daemons (its contact URI)"),
    # The remote shell's own report that the runtime's daemon is not there: ssh runs `orted` (Open MPI <= 4), `prted`
    # (5.x) or `hydra_pmi_proxy` (MPICH) in a non-interactive shell on each node, whose PATH lacks the MPI install
    # ("bash: orted: command not found") -- MPI not installed on that node, or its PATH set only for interactive
    # shells. The daemons' start-up failure that follows is this.
    # The daemon found but not started for a library the non-interactive shell's LD_LIBRARY_PATH lacks is the same
    # ("hydra_pmi_proxy: error while loading shared libraries: libimf.so: cannot open shared object file", MPICH's
    # FAQ: an Intel-compiled MPICH whose runtime path is set in an interactive shell only).
    sig("mpi_daemon_not_found", ("orted: command not found", "prted: command not found", "pmi_proxy: command not found",
                                 "orted: No such file", "prted: No such file", "pmi_proxy: No such file",
                                 "error while loading shared libraries"),
        r"^(?:\S{1,80}: )?(?:ba|z|k|tc|c)?sh(?:: line \d{1,6})?: (?:\S{0,200}/)?(?P<bin>orted|prted|hydra_pmi_proxy|pmi_proxy)"
        r": (?:command not found|No such file or directory)"
        r"|^(?:\S{0,200}/)?(?P<bin2>orted|prted|hydra_pmi_proxy|pmi_proxy): error while loading shared libraries: (?P<lib>\S{1,120}):",
        "other", ROOT, 1, "the MPI runtime's daemon is not installed, or not on the PATH, on another node",
        code="LOG063", params=lambda hs: {"what": (
            f"`{group(hs, 'bin2')}` could not load {group(hs, 'lib')} on another node (its directory is on no "
            "LD_LIBRARY_PATH a non-interactive shell sets)" if group(hs, "bin2") else
            f"`{group(hs, 'bin')}` was not found by the remote shell on another node (MPI not installed there, or on "
            "no PATH a non-interactive shell sets)")},
        detail="mpirun starts its daemon on every other node through ssh, in a non-interactive shell: that shell's PATH "
               "must hold the same MPI installation (many .bashrc files return before setting PATH when not "
               "interactive). `ssh NODE which orted` from the first node shows what it finds; mpirun --prefix DIR (or "
               "Open MPI configured with --enable-orterun-prefix-by-default) passes the path along.",
        alts=[("launcher_misconfig", "an mpirun of one installation launching onto nodes that have another")]),
    sig("mpi_daemon_connect", ("unable to establish a communication connection", "unexpectedly failed after launch",
                              "unable to reliably start", "lost communication with a remote daemon"),
       # Help texts wrap at about 70 columns: match only what fits on their first line. The name starts a word
       # ((?<!\w)): the leftmost match always did, and without it a run of word characters is tried from every
       # position, each try running to the run's end (quadratic).
       r"(?<!\w)(?P<rt>ORTE|PRTE|PRRTE|\w+) (?:is unable to establish a communication connection to the"
       r"|daemon has unexpectedly failed after launch|was unable to reliably start one or more daemons"
       r"|has lost communication with a remote daemon)",
       "launcher_misconfig", ROOT, 3, "mpirun's runtime could not start or reach its daemons on the other nodes",
       build=_daemons),
    # Intel MPI's Hydra (i_hydra/libhydra/demux/hydra_demux_poll.c check_exit_codes): "unable to run bstrap_proxy on
    # HOST (pid N, exit code M)" (2019: "unable to run proxy on HOST (pid N)"), then "error setting up the bootstrap
    # proxies" with its own list of reasons: the host is unavailable, or hydra_bstrap_proxy could not be launched
    # there (the ssh/rsh launcher failed, the binary is missing or not at the same path). Nothing of the job started.
    sig("hydra_bstrap", ("unable to run bstrap_proxy", "Unable to run bstrap_proxy", "unable to run proxy on",
                         "setting up the boostrap proxies", "setting up the bootstrap proxies"),
       r"[Uu]nable to run (?:bstrap_)?proxy on (?P<host>[\w.\-:]{1,255})(?: \(pid \d{1,10}(?:, exit code (?P<code>\d{1,6}))?\))?"
       r"|error setting up the boo?tstrap proxies",
       "launcher_misconfig", ROOT, 2, "Intel MPI's launcher (Hydra) could not start its proxy on a node",
       code="LOG063", params=lambda hs: {"what": f"Intel MPI's Hydra could not start its bootstrap proxy on "
                                                 f"{group(hs, 'host') or 'a node'}"},
       detail="Hydra starts a proxy on every node before any rank: when that fails (exit code 255 or 65280 is ssh's own "
              "failure) the node is unreachable over the launcher, passwordless ssh is missing, or hydra_bstrap_proxy "
              "is not installed at the same path there. Run `ssh NODE hostname` from the first node; inside a "
              "container without sshd, use I_MPI_HYDRA_BOOTSTRAP=fork on one node or the scheduler's launcher.",
       alts=[("rendezvous_unreachable", "if ssh works, the node may not reach back to the launcher's host "
                                        "(-iface / I_MPI_HYDRA_IFACE pins the interface)")]),
    # Open MPI's help-orterun.txt (and MS-MPI, PRRTE): "mpirun was unable to launch the specified application as it
    # could not access / or execute an executable:" (or "could not find an executable:"), then "Executable: PATH" and
    # "Node: HOST": the program is missing or not executable at that path on that node (installs that differ between
    # nodes, a relative path from another working directory, a file system not mounted there).
    # MPICH's and Intel MPI's ch4:ofi netmod (ofi_init.c / ofi_init.h): "OFI fi_getinfo() failure", "OFI addrinfo()
    # failed (...: No data available)", "OFI fi_open domain failed", "OFI fi_fabric failed" - libfabric offered no
    # provider the library could open on this node; Intel MPI before 2019: "MPI startup(): <fabric> fabric is not
    # available and fallback fabric is not enabled" (I_MPI_FABRICS names one this node lacks). The fabric chosen,
    # not the program.
    sig("mpi_ofi_provider", ("OFI ", "fabric is not available"),
       r"OFI (?P<call>fi_getinfo\(\)|addrinfo\(\)|fi_open domain|fi_fabric|fi_domain|fi_endpoint|fi_av_open|fi_getinfo) "
       r"(?:failure|failed)"
       r"|(?P<fab>\w{2,12}) fabric is not available and fallback fabric is not enabled",
       "ib_misconfig", ROOT, 2, "the MPI library could not open a network provider (libfabric/OFI) on this node",
       code="LOG087", params=lambda hs: {"what": (f"OFI {group(hs, 'call')} failed" if group(hs, "call")
                                                  else f"the {group(hs, 'fab') or 'selected'} fabric is not available")},
       alts=[("other", "an MPI bundle whose own libfabric lacks the node's provider (Intel MPI 2019's internal "
                       "libfabric) fails the same way: point it at the system's libfabric (I_MPI_OFI_LIBRARY_INTERNAL=0)"),
             ("wrong_interface", "with only the tcp provider, a node without a usable network interface (a laptop "
                                 "off its network) has nothing to open")]),
    # libfabric's PSM3 provider (prov/psm3), connecting an endpoint whose address another rank published: "Mismatched
    # address format: remote EP (Invalid Fmt): Unknown (2) Local EP: IPv4 (4)", then "Confirm all nodes are running the
    # same interconnect HW, addressing format and PSM version". The peer's address came from another provider (verbs,
    # tcp, efa) or another PSM3: the ranks of one job opened different providers (NVIDIA/nccl-tests#295: Open MPI's OFI
    # MTL with no FI_PROVIDER on either node; FI_PROVIDER=verbs on both fixed it).
    sig("ofi_addr_format", ("Mismatched address format", "same interconnect HW, addressing format"),
       r"Mismatched address format: remote EP \((?P<remote>[^)]{1,40})\)(?:: \S{1,40} \(\d{1,3}\))? Local EP: "
       r"(?P<local>\S{1,40})|Confirm all nodes are running the same interconnect HW, addressing format",
       "launcher_misconfig", ROOT, 2, "ranks of one MPI job opened different libfabric providers (address formats differ)",
       code="LOG136", params=lambda hs: {"what": (f"a peer's endpoint address format is '{group(hs, 'remote')}', this rank's is "
                                                  f"'{group(hs, 'local')}'" if group(hs, "remote")
                                                  else "the peers' endpoint addresses are in another format")}),
    sig("mpi_exec_missing", ("unable to launch the specified application",),
       r"(?P<tool>mpirun|mpiexec|prterun|prun|orterun) was unable to launch the specified application as it could",
       "launcher_misconfig", ROOT, 1, "the MPI launcher could not find or execute the program on a node",
       code="LOG066", params=lambda hs: {"what": f"{group(hs, 'tool') or 'mpirun'} could not find or execute the program "
                                                 "on a node (a path or install that differs between nodes)"}),
    sig("hydra_connect", ("unable to connect from",),
       r"unable to connect from \"?(?P<src>[^\"\s]{1,255})\"? to \"?(?P<dst>[^\"\s]{1,255})\"? \((?P<err>[^)]{1,80})\)",
       "wrong_interface", ROOT, 2, "MPICH's launcher (Hydra) could not connect between nodes",
       build=_hydra),
    sig("pmi_error", ("direct launched using", "PMI_Init", "PMI2_Init", "PMIx_Init", "PMIX ERROR", "PMI2 init failed", "pmi_init"),
       r"appears to have been direct launched using \"?(?P<launcher>\w+)\"?"
       r"|PMI2?_Init(?: returned \d+| failed)|PMIx_Init failed|PMIX ERROR|PMI2 init failed",
       "launcher_misconfig", ROOT, 1, "the processes could not talk to the launcher's process-management interface (PMI/PMIx)",
       code="LOG064", params=_pmi),
    # UCX's posix memory domain (mm_posix.c): "Not enough memory to write total of %zu bytes. Please check that
    # /dev/shm or the directory you specified has more available memory." (UCX_POSIX_DIR moves it off /dev/shm.)
    sig("ucx_posix_shm_full", ("Please check that /dev/shm",),
       r"Not enough memory to write total of \d+ bytes\. Please check that /dev/shm",
       "shm_too_small", ROOT, 1, "UCX could not size its shared-memory file in /dev/shm (full or too small)",
       code="LOG030"),
    # UCX's shared-memory transport (uct/sm/mm/base/mm_iface.c) allocates each interface's receive FIFO in a segment
    # of its memory domain (posix: a file in /dev/shm) and logs "mm_iface failed to allocate receive FIFO" when that
    # fails; with the 64 MiB /dev/shm of a container or pod, eight local ranks run out (NVIDIA/ai-cloud-validation#643,
    # fixed by a memory-backed /dev/shm volume). The crash that follows in the same process is its consequence.
    sig("ucx_shm_fifo", ("failed to allocate receive FIFO",),
       r"mm_iface failed to allocate receive FIFO",
       "shm_too_small", ROOT, 2, "UCX could not allocate its shared-memory receive FIFO (/dev/shm full or too small)",
       code="LOG030",
       alts=[("rlimit_memlock", "if /dev/shm has room (df -h /dev/shm), the segment's registration can be what failed: "
                                "check ulimit -l inside the job")]),
    # The other process's segment could not be attached: mm_ep.c "mm ep failed to connect to remote FIFO id 0x%lx: %s"
    # and pml_ucx "ucp_ep_create(proc=%d) failed: %s" with ucs_status_string(UCS_ERR_SHMEM_SEGMENT) = "Shared memory
    # error", after mm_sysv "shmat(shmid=%d) failed" or mm_posix "open(file_name=/proc/PID/fd/N ...) failed" (the
    # posix transport opens the peer's segment through its /proc link; openucx/ucx#4224: ranks in containers or PID
    # namespaces that cannot see each other, worked around by UCX_POSIX_USE_PROC_LINK=n). Not a network fault.
    sig("ucx_shm_attach", ("Shared memory error", "shmat(", "open(file_name=/proc/"),
       r"mm ep failed to connect to remote FIFO id \S{1,40}: Shared memory error"
       r"|ucp_ep_create\([^)]{0,40}\) failed: Shared memory error"
       r"|shmat\(shmid=\d{1,12}\) failed"
       # ENOENT: the peer's PID is not in this process's PID namespace (ranks each in their own container or user
       # namespace: Apptainer without setuid, apptainer/apptainer#769); EACCES: ptrace access to it was refused.
       r"|open\(file_name=/proc/\d{1,10}/fd/\d{1,6} flags=\S{1,12}\) failed: (?:Permission denied|No such file or directory)",
       "shm_too_small", ROOT, 2, "UCX could not attach another process's shared-memory segment",
       build=_ucx_shm_attach),
    sig("ucx_no_devices", ("no usable transports", "enable it in UCX_NET_DEVICES"),
       r"no usable transports/devices \(asked (?P<asked>[^)]{1,200})\)"
       r"|device (?P<dev>\S{1,64}) is not enabled, enable it in UCX_NET_DEVICES",
       "wrong_interface", ROOT, 1, "UCX_TLS / UCX_NET_DEVICES name transports or devices this host does not have",
       build=_ucx_devices),
    # ucp_context.c: "transport(s) '%s' is/are not available, please use one or more of: %s" (the transports asked
    # for by UCX_TLS that no loaded component offers, then the ones that exist); "network device ..." is its device
    # twin. Read with ucx_no_devices: which transports exist says whether this UCX can use RDMA at all.
    ctx("ucx_tls_unavailable", ("not available, please use one or more of",),
        r"transports? (?P<asked>'[^']{1,40}'(?:,'[^']{1,40}'){0,15}) (?:is|are) not available, please use one or more "
        r"of: (?P<have>[\w, ]{1,400})",
        "UCX was asked for transports it does not have, and lists the ones it has"),
    # ucp_context.c's device twin of the message above: "network device '%s' is not available, please use one or
    # more of: %s" -- UCX_NET_DEVICES names a device this host does not have.
    sig("ucx_netdev_missing", ("is not available, please use one or more of",),
       r"network device '(?P<dev>[^']{1,64})' is not available, please use one or more of",
       "wrong_interface", ROOT, 2, "UCX_NET_DEVICES names a device this host does not have",
       code="LOG021", params=lambda hs: {"iface": f"{group(hs, 'dev')} (UCX_NET_DEVICES)"}),
    # UCX's InfiniBand paths on the GID and queue-pair settings (uct/ib/base/ib_device.c "invalid gid[%d] on %s:%d",
    # "ibv_query_gid(dev=%s port=%d index=%d) failed: %m", "failed to find a gid which matches/unmatches the following
    # subnet list: %s"; rc_iface.c "error modifying QP to RTR: %m"): the GID index or subnet asked for
    # (UCX_IB_GID_INDEX, UCX_IB_ROCE_LOCAL_SUBNET) does not exist on this port, or the path attributes are refused.
    sig("ucx_gid", ("invalid gid[", "ibv_query_gid(", "failed to find a gid which matches", "error modifying QP to RTR"),
       r"invalid gid\[(?P<idx>\d{1,4})\] on (?P<dev>\S{1,40})|ibv_query_gid\(dev=(?P<dev2>\S{1,40}) port=\d{1,3} "
       r"index=(?P<idx2>\d{1,4})\) failed|failed to find a gid which matches/unmatches the following subnet list"
       r"|error modifying QP to RTR: Invalid argument",
       "ib_misconfig", ROOT, 2, "UCX's InfiniBand/RoCE GID or queue-pair settings do not fit the port",
       code="LOG036", detail="The GID index (UCX_IB_GID_INDEX) or subnet (UCX_IB_ROCE_LOCAL_SUBNET) asked for does "
                             "not exist on this port, or the peer's path attributes are refused (show_gids lists each "
                             "port's table: the index must hold the same kind of address on every node)."),
    # ib_md.c: "%s: Couldn't enable GPUDirect RDMA. Please make sure nv_peer_mem, amdgpu plugin, or Intel Xe driver
    # is installed correctly, or dmabuf is supported."; proto_reconfig.c: "No zero-copy protocol found for %s from
    # cuda to cuda ... Please check for proper GPU and/or HCA support".
    sig("ucx_gdr_off", ("Couldn't enable GPUDirect RDMA", "No zero-copy protocol found for"),
       r"(?P<dev>\S{1,40}): Couldn't enable GPUDirect RDMA|No zero-copy protocol found for \w{1,20} from cuda to cuda",
       "other", ROOT, 4, "UCX cannot use GPUDirect RDMA on this node",
       code="LOG101", params=lambda hs: {"what": f"UCX on {group(hs, 'dev') or 'this node'}"}),
    # UCX's resource creation refused for the locked-memory limit: ib_iface.c "ibv_create_cq(cqe=%d) failed: Cannot
    # allocate memory : Please set max locked memory (ulimit -l) to 'unlimited'", ib_md.c "ibv_reg_mr(address=%p,
    # length=%zu, access=0x%lx) failed: Cannot allocate memory".
    sig("ucx_memlock", ("ibv_create_cq(cqe=", "ibv_reg_mr(address="),
       r"ibv_create_cq\(cqe=\d{1,9}\) failed: Cannot allocate memory|ibv_reg_mr\(address=\S{1,40}, length=\d{1,20}"
       r"[^)]{0,60}\) failed: Cannot allocate memory",
       "rlimit_memlock", ROOT, 2, "UCX could not create RDMA queues or register memory (Cannot allocate memory)",
       code="LOG035"),
    # UCX's CMA transport (uct/sm/scopy/cma/cma_ep.c): "process_vm_readv(pid=%d {...}-->{...}) returned %zd: %m" with
    # EPERM -- ptrace_scope or a container without CAP_SYS_PTRACE, as for Open MPI's and MPICH's CMA.
    sig("ucx_cma_denied", ("process_vm_readv(pid=", "process_vm_writev(pid="),
       r"process_vm_(?:readv|writev)\(pid=\d{1,10} [^)]{0,200}\) returned -1: Operation not permitted",
       "other", ROOT, 2, "the kernel refused UCX's cross-process copy (CMA, EPERM)",
       code="LOG083"),
    # ucp_ep.c: "ep %p: error '%s' on %s will not be handled since no error callback is installed" -- a transport
    # endpoint failed ('Endpoint timeout', 'Connection reset by remote peer'): the peer stopped answering or went away;
    # tcp_ep.c "recv(%d) failed: Connection reset by remote peer".
    sig("ucx_ep_error", ("will not be handled since no error callback is installed", "failed: Connection reset by remote peer"),
       r"error '(?P<err>Endpoint timeout|Connection reset by remote peer|Input/output error)' on \S{1,60} will not be "
       r"handled since no error callback is installed|tcp_ep \S{1,40} \([^)]{1,40}\): recv\(\d{1,6}\) failed: "
       r"Connection reset by remote peer",
       "peer_process_died", ROOT, 6, "a UCX endpoint lost its peer",
       code="LOG061", alts=[("hardware_fault", "with every process alive, a failing link or port times endpoints out")]),
    # uct/ib/ud/base/ud_ep.c: a UD endpoint whose peer acknowledged nothing within UCX_UD_TIMEOUT raises
    # UCS_ERR_ENDPOINT_TIMEOUT, fatal when nothing handles it ("UD endpoint %p to %s: unhandled timeout error"). The
    # datagrams never reached the peer: on RoCE a GID index that differs between the nodes (openucx/ucx#7785: index 3
    # missing on one node), a lossy fabric, or a peer that died.
    sig("ucx_ud_timeout", ("unhandled timeout error",),
       r"UD endpoint \S{1,40} to \S.{0,80}?: unhandled timeout error",
       "ib_misconfig", ROOT, 3, "UCX's UD datagrams got no answer from the peer (RoCE GID or fabric settings)",
       code="LOG036",
       detail="UCX's UD transport sent datagrams the peer never acknowledged. On RoCE the usual reason is the GID: "
              "an index (UCX_IB_GID_INDEX) whose address differs in kind or network between the nodes, or that one "
              "node lacks (show_gids on each); a fabric without the lossless settings RoCE expects drops them too.",
       alts=[("peer_process_died", "if the peer process died or hung first, nothing acknowledges: read its own log"),
             ("hardware_fault", "with matching GIDs on every node, a port or cable dropping packets: check the counters")]),
    # uct/ib/base/ib_device.c uct_ib_device_create_ah: "ibv_create_ah(%s) on %s failed: %m" -- the RDMA device refused an
    # address handle for a peer: on RoCE the GID index (sgid_index) and the peer's GID (dgid) must be of one kind
    # (both RoCE v2 IPv4-mapped) on a port with that address configured. UCX uses every device it finds unless
    # UCX_NET_DEVICES says which, so a second port that is up but not set up for this network fails like this
    # (open-mpi/ompi#9881: a 25G RoCE port chosen beside the intended ConnectX-6). Then ud_iface: "failed to get
    # peer address".
    sig("ucx_create_ah", ("ibv_create_ah",),
       r"ibv_create_ah\((?P<args>[^)]{0,300})\) on (?P<dev>[\w.\-]{1,64}) failed: (?P<err>Invalid argument|Network is "
       r"unreachable|No route to host|Connection timed out)",
       "ib_misconfig", ROOT, 2, "an RDMA device refused an address handle for a peer (RoCE GID or device choice)",
       code="LOG036",
       build=_ucx_create_ah),
    sig("ucx_unreachable", ("Destination is unreachable", "transport to", "ucp_ep_create"),
       r"no (?P<what>[\w ]{1,40}) transport to (?P<peer>[^:]{1,120}):|ucp_ep_create\((?:proc=(?P<proc>\d+)[^)]{0,20})?\) failed(?!: Shared memory error)"
       r"|Destination is unreachable",
       "wrong_interface", ROOT, 2, "UCX found no transport between two processes (no common reachable device)",
       code="LOG027", params=_ucx_unreachable,
       alts=[("ib_misconfig", "when the hosts share an InfiniBand/RoCE fabric, a device list or GID that differs between "
                              "hosts (UCX_NET_DEVICES=mlx5_0:1 on one, mlx5_1:1 on the other) leaves no common transport"),
             ("firewall_or_port_blocked", "UCX's TCP transport and its connection setup need open ports between the hosts")]),
    # btl/vader (Open MPI 3-4) copies between processes on one host with process_vm_readv/writev (CMA) and, when
    # the call fails, prints opal_output "Read %ld, expected %lu, errno = %d" ("Wrote ..." for a put; smsc/cma in
    # Open MPI 5 says "CMA read/wrote ..."). errno 1 (EPERM): the kernel refused the cross-process copy, which a
    # container's seccomp profile or missing CAP_SYS_PTRACE does; every message larger than vader's eager limit fails.
    sig("mpi_cma_denied", ("expected",),
       r"(?:\bRead|\bWrote|CMA (?:read|wrote)) -1, expected \S{1,40}, errno ?= ?1\b",
       "other", ROOT, 2, "Open MPI's shared-memory transport was refused the cross-process copy (process_vm_readv, EPERM)",
       code="LOG083",
       detail="The kernel refused process_vm_readv/writev between two ranks on this host (errno 1, EPERM). Docker's "
              "default seccomp profile and containers without CAP_SYS_PTRACE do this; the vader BTL then fails every "
              "large message."),
    # MPICH's CMA module (ch4/shm/ipc/cma, on by default since MPICH 4.3's pmodels/mpich#7639) fails the copy inside
    # its error stack ("MPIDI_CMA_copy_data(54): ", "copy_iovs(201).........: process_vm_readv ..."); the kernel's Yama
    # ptrace_scope (1 on most distributions) or a container without CAP_SYS_PTRACE refuses it (pmodels/mpich#7653).
    # MPICH's MPIR_Assert_fail (src/util/mpir_assert.c): "Assertion failed in file %s at line %d: %s", then MPID_Abort's
    # "internal ABORT - process %d". The library found its own state inconsistent: an argument it did not validate
    # (a root or rank beyond the communicator, an object already freed: pmodels/mpich#5443) or a defect of the release.
    # Open MPI's opal/mca/common/cuda help text (help-mpi-common-cuda.txt, 4.x): "The user requested CUDA support with
    # the --mca mpi_cuda_support 1 flag / but the library was not compiled with any support." -- GPU buffers handed to
    # this build are read as host memory (conda-forge/openmpi-feedstock#83: a package built without CUDA).
    # Cray MPICH (MPIDI_CRAY_init): "GPU_SUPPORT_ENABLED is requested, but GTL library is not linked" --
    # MPICH_GPU_SUPPORT_ENABLED=1 in a program not linked with the GPU Transfer Library (libmpi_gtl_cuda / _hsa): an
    # mpi4py or application built without the accelerator target module loaded.
    sig("mpi_no_cuda_support", ("The user requested CUDA support", "GTL library is not linked"),
        r"The user requested CUDA support with the --mca mpi_cuda_support 1 flag"
        r"|(?P<gtl>GPU_SUPPORT_ENABLED is requested, but GTL library is not linked)",
        "other", ROOT, 2, "the MPI library was asked for CUDA support it was not built with",
        code="LOG119", params=lambda hs: {"what": (
            "Cray MPICH was asked for GPU support (MPICH_GPU_SUPPORT_ENABLED=1) by a program not linked with its GPU "
            "Transfer Library (GTL)" if group(hs, "gtl") else
            "Open MPI was built without CUDA support (mpi_cuda_support requested)")},
        detail="On Cray systems the GTL library (libmpi_gtl_cuda, libmpi_gtl_hsa) is linked when the program or "
               "mpi4py is built with the accelerator target module loaded (craype-accel-nvidia80, "
               "craype-accel-amd-gfx90a); a CPU-only program should not set MPICH_GPU_SUPPORT_ENABLED=1 (or load "
               "craype-accel-host)."),
    # Cray MPICH on Slingshot picks each rank's NIC by its NUMA node (MPICH_OFI_NIC_POLICY=NUMA, the default) and
    # aborts MPI_Init when the rank's CPU affinity spans several: "Unable to use a NIC_POLICY of 'NUMA'. Rank N is
    # not confined to a single NUMA node." The process's affinity at MPI_Init is the launch's binding (srun without
    # --cpu-bind / a --cpus-per-task over NUMA nodes) or what a library imported first made of it (OLCF's PyTorch
    # guide for Frontier: mpi4py imported after torch).
    sig("mpich_nic_policy", ("Unable to use a NIC_POLICY",),
        r"Unable to use a NIC_POLICY of '?(?P<policy>\w{1,20})'?\. Rank (?P<rank>\d{1,7}) is not confined to a single NUMA node",
        "other", ROOT, 2, "Cray MPICH could not pick a NIC for a rank whose CPUs span several NUMA nodes",
        code="LOG125", params=lambda hs: {"rank": group(hs, "rank") or "?"},
        alts=[("launcher_misconfig", "a launch that binds no CPUs (srun without --cpu-bind, --cpus-per-task across "
                                     "NUMA nodes) gives every rank such an affinity")]),
    # IBM Spectrum MPI's PAMI (CudaIPCPool.h): "Error opening IPC Memhandle from peer:N, invalid argument", then its
    # own explanation "CUDA level IPC failure: this has been observed in environments where cgroups separate the
    # visible GPUs between ranks." Ranks of one node that each see only their own GPU (a cgroup, container or jsrun
    # resource set per rank) cannot open a peer's CUDA IPC memory handle.
    sig("gpu_ipc_isolated", ("CUDA level IPC failure", "Error opening IPC Memhandle"),
        r"CUDA level IPC failure: this has been observed in environments where cgroups separate the visible GPUs"
        r"|Error opening IPC Memhandle from peer:? ?(?P<peer>\d{1,6}), invalid argument",
        "other", ROOT, 2, "ranks whose GPUs are isolated from each other could not open each other's GPU memory",
        code="LOG121",
        alts=[("launcher_misconfig", "one resource set, container or cgroup per rank is the launch's choice: one per "
                                     "node, with the ranks selecting their own GPU, avoids it")]),
    # PMIx's messaging layer (ptl base, Open MPI 4 / Spectrum MPI): "A received msg header indicates a size that is
    # too large: Requested size: N Size limit: M ... increase the max msg size via the ptl_base_max_msg_size
    # parameter" -- a launch-time data exchange (often a large job's modex) larger than the 16 MB default.
    sig("pmix_msg_size", ("msg header indicates a size that is too large", "ptl_base_max_msg_size"),
        r"A received msg header indicates a size that is too large|increase the\s+max msg size via the ptl_base_max_msg_size",
        "other", ROOT, 2, "PMIx refused a message of the job's start-up larger than its limit",
        code="LOG122"),
    # The error class of a failed MPI call: Open MPI's MPI_ERRORS_ARE_FATAL handler (ompi/errhandler/
    # errhandler_predefined.c) prints "*** An error occurred in MPI_Recv" then "*** MPI_ERR_TRUNCATE: message
    # truncated"; MPICH's error stack starts "Fatal error in PMPI_Recv: Message truncated, error stack:". The class
    # says what went wrong: a truncated message is a receive (or collective) smaller than what was sent, the argument
    # classes are the program's call, a failed process (ULFM) a death. MPI_ERR_OTHER / "Other MPI error" and
    # MPI_ERR_INTERN say nothing of the cause and are left to the lines around them.
    ctx("ompi_error_in", ("An error occurred in MPI_",), r"\*\*\* An error occurred in (?P<fn>MPI_\w{1,40})",
        "the MPI call Open MPI's fatal error handler names"),
    sig("mpi_error_class", ("*** MPI_ERR_", "Fatal error in "),
       r"\*\*\* MPI_ERR_(?P<cls>TRUNCATE|RANK|ROOT|COMM|COUNT|TYPE|BUFFER|ARG|TAG|OP|GROUP|WIN|RMA_SYNC|UNSUPPORTED_OPERATION"
       r"|PROC_FAILED(?:_PENDING)?|REVOKED): "
       r"|Fatal error in P?(?P<fn>MPI_\w{1,40}): (?P<mcls>Message truncated|Invalid communicator|Invalid rank|Invalid root"
       r"|Invalid count|Invalid datatype|Invalid buffer pointer|Invalid argument|Invalid tag argument|Invalid MPI_Op"
       r"|Process failed), error stack",
       "other", ROOT, 3, "an MPI call failed with an error class that names the cause",
       build=_mpi_error_class),
    # Open MPI's error handler when nothing is initialised (ompi/errhandler/errhandler_invoke.c, ompi_mpi_errors_are_fatal
    # ...): "*** The %s() function was called before MPI_INIT was invoked." (or "after MPI_FINALIZE was invoked"), then
    # "*** This is disallowed by the MPI standard." and "*** Your MPI job will now abort.". Named MPI_Init or
    # MPI_Init_thread it is MPI_Init's own failure reported that way (the lines before it say why: "orte_init failed",
    # "PML add procs failed"); any other function is the program calling MPI outside MPI_Init..MPI_Finalize.
    sig("mpi_call_order", ("function was called before MPI_INIT", "function was called after MPI_FINALIZE",
                           "An MPI function was called before", "An MPI function was called after"),
       r"\*\*\* (?:The (?!MPI_Init(?:_thread)?\(\))(?P<fn>\w{1,60})\(\) function|An MPI function) was called (?P<when>before MPI_INIT|after MPI_FINALIZE) was invoked",
       "other", ROOT, 3, "the program called an MPI function outside MPI_Init ... MPI_Finalize",
       code="LOG118", build=_call_order),
    sig("mpich_assert", ("Assertion failed in file",),
       r"Assertion failed in file (?P<file>\S{1,300}) at line (?P<line>\d{1,7}): (?P<cond>[^\n]{1,200})",
       "other", ROOT, 4, "the MPI library stopped on one of its own consistency checks",
       code="LOG100", params=lambda hs: {"what": f"'{group(hs, 'cond') or '?'}' failed in {group(hs, 'file') or '?'}"}),
    sig("mpich_cma_failed", ("MPIDI_CMA_copy", "process_vm_"),
       r"\bMPIDI_CMA_copy_\w{1,20}\(\d{1,6}\)|\bcopy_iovs\(\d{1,6}\)\.{0,40}: {0,4}process_vm_(?:readv|writev)",
       "other", ROOT, 2, "MPICH's shared-memory transport failed the cross-process copy (CMA, process_vm_readv)",
       code="LOG083",
       detail="MPICH copied a large message between two ranks of this host with process_vm_readv (CMA) and the copy "
              "failed. The kernel refuses it when /proc/sys/kernel/yama/ptrace_scope is 1 or more (the default of most "
              "distributions) or the container lacks CAP_SYS_PTRACE. Turn MPICH's CMA off (MPIR_CVAR_CH4_CMA_ENABLE=0; "
              "later releases check ptrace_scope at start) or allow it (ptrace_scope 0, --cap-add=SYS_PTRACE)."),
    # help-btl-vader.txt "cma-permission-denied": vader checked the ptrace settings, found CMA unusable and fell back
    # to another single-copy mechanism. Jobs that print it run correctly (only slower).
    ctx("mpi_cma_fallback_note", ("restrictive ptrace settings", "cma-permission-denied"),
        r"not available due to restrictive ptrace settings|help-btl-vader\.txt / cma-permission-denied",
        "Open MPI found CMA unusable (ptrace settings) and fell back to another copy mechanism (harmless)", harmless=True),
    # Open MPI's common/cuda help text (help-mpi-common-cuda.txt, "cuIpcOpenMemHandle failed"): "The call to
    # cuIpcOpenMemHandle failed. This is an unrecoverable error ..." then "cuIpcOpenMemHandle return value: N". The
    # smcuda transport maps a peer rank's GPU buffer through CUDA IPC, which needs that GPU to be visible in this
    # process. Return value 1 (CUDA_ERROR_INVALID_VALUE) is the handle of a device this process cannot see: each rank
    # restricted to its own GPU (srun --gpus-per-task / --gpu-bind, CUDA_VISIBLE_DEVICES set per rank, one GPU per
    # container; open-mpi/ompi#11949). The help text's guess (not enough free device memory) is a different code (2).
    sig("ompi_cuda_ipc", ("cuIpcOpenMemHandle return value",),
       r"cuIpcOpenMemHandle return value:\s+(?P<ret>\d{1,4})\b",
       "launcher_misconfig", ROOT, 2, "a rank could not map another rank's GPU memory through CUDA IPC",
       build=lambda m, hs, found: _ompi_cuda_ipc(hs)),
    sig("mpirun_signal", ("noticed that process rank",),
       # (?<!\w): the tool's name starts a word, as in the mpi_daemon_connect row (linear on a run of word characters).
       r"(?<!\w)(?P<tool>\w+) noticed that process rank (?P<rank>\d+) with PID (?P<pid>\d+) on node (?P<host>\S+?) exited on signal"
       r" (?P<sig>\d+)(?: \((?P<name>[^)]{1,40})\))?",
       "peer_process_died", ROOT, 5, "mpirun saw a rank die from a signal",
       build=_mpirun_signal),
    sig("mpich_bad_termination", ("BAD TERMINATION", "EXIT CODE:", "EXIT STRING:"),
       r"BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES|=\s+EXIT CODE: (?P<code>\d+)"
       r"|TERMINATED WITH THE EXIT STRING: (?P<what>[^\r\n]{1,80})",
       "peer_process_died", ROOT, 5, "Hydra (MPICH, Intel MPI) saw a rank end badly",
       build=_hydra_termination),
    sig("mpirun_exit", ("terminated normally, but", "exited with non-zero status", "exiting improperly", "has exited due to process rank"),
       r"terminated normally, but \d+ process(?:es)? returned|detected that one or more processes exited with non-zero status"
       r"|has exited due to process rank (?P<rank>\d+) with PID (?P<pid>\d+) on",
       "peer_process_died", CONSEQUENCE, 7, "mpirun saw a rank exit with an error status (its own error comes first)",
       code="LOG060", params=_mpirun_exit),
    sig("lib_openmpi", ("btl_", "oob_", "ORTE", "PRTE", "OMPI", "Open MPI", "mpirun", "prterun", "orterun", "pml_", "mca_"),
       r"btl_\w+|oob_\w+|\bORTE\b|\bPRR?TE\b|OMPI|Open MPI|\b(?:mpirun|prterun|orterun)\b|pml_\w+|mca_\w+",
       None, CONTEXT, 9, "a line written by Open MPI or its launcher"),
    sig("lib_ucx", ("UCX", "ucp_", "uct_", "ProcessGroupUCC", "UCC_"),
       r"\bUCX\s+(?:ERROR|WARN|DIAG|INFO)|UCX_\w+|\bucp_\w+|\buct_\w+|ProcessGroupUCC|UCC_\w+",
       None, CONTEXT, 9, "a line written by UCX (Open MPI's pml ucx, UCC)"),
    sig("lib_mpich", ("HYD", "mpiexec@", "proxy:", "MPICH", "Intel(R) MPI", "I_MPI_", "MPIR_", "MPIDI_", "BAD TERMINATION"),
       r"\bHYD\w*|\[mpiexec@|\[proxy:|MPICH|Intel\(R\) MPI|I_MPI_\w+|MPIR_\w+|MPIDI_\w+|BAD TERMINATION",
       None, CONTEXT, 9, "a line written by MPICH, Intel MPI or their launcher (Hydra)"),
)

CODES = (
    Code("LOG023", "mpi-interface", E, "Open MPI's TCP transport connected over an interface the peers cannot use",
         "Restrict Open MPI to the routable interface: mpirun --mca btl_tcp_if_include <iface> --mca oob_tcp_if_include <iface>",
         cause="wrong_interface", env={"OMPI_MCA_btl_tcp_if_include": "<iface>", "NCCL_SOCKET_IFNAME": "<iface>"}),
    Code("LOG026", "mpi-peers-unreachable", E, "Open MPI found no transport that reaches every peer",
         "Let Open MPI use a transport the hosts share: keep 'self' in the btl list and restrict tcp to the shared network "
         "(btl_tcp_if_include), or use UCX (--mca pml ucx)",
         cause="wrong_interface", env={"OMPI_MCA_btl": "self,tcp (plus vader/sm on one host)", "OMPI_MCA_btl_tcp_if_include": "<iface>"}),
    Code("LOG027", "ucx-unreachable", E, "UCX found no transport between two processes: {what}",
         "Name devices every host has and that reach each other (UCX_NET_DEVICES, UCX_TLS); `ucx_info -d` lists them per host",
         cause="wrong_interface", env={"UCX_NET_DEVICES": "<iface or mlx5_N:port>", "UCX_TLS": "<e.g. rc,ud,sm,self or tcp,sm,self>"}),
    Code("LOG136", "mpi-providers-differ", E, "the MPI processes opened different network providers: {what}",
         "Give every rank the same libfabric provider: export FI_PROVIDER (verbs, psm3, efa, tcp) in the job's environment "
         "and pass it to every node (mpirun -x FI_PROVIDER); `fi_info -l` on each node lists what it can open",
         cause="launcher_misconfig", env={"FI_PROVIDER": "<the same provider on every node>"}),
    Code("LOG087", "mpi-fabric-unavailable", E, "the MPI library could not open its network provider: {what}",
         "Choose a provider this node has and check it is listed by fi_info: FI_PROVIDER=verbs (InfiniBand/RoCE), "
         "psm2/opx (Omni-Path), efa (AWS) or tcp; for Intel MPI set I_MPI_FABRICS=shm:ofi (older: shm:dapl / shm:tcp) and "
         "I_MPI_OFI_PROVIDER, and prefer the system libfabric when the bundled one lacks the provider",
         cause="ib_misconfig", env={"FI_PROVIDER": "<verbs|tcp|psm2|efa>", "I_MPI_FABRICS": "shm:ofi"},
         steps=("fi_info -l (the providers libfabric can open here)", "I_MPI_DEBUG=5 (or FI_LOG_LEVEL=warn) for the provider chosen")),
    Code("LOG086", "gpu-hidden-from-peer", E, "a rank could not map another rank's GPU memory (cuIpcOpenMemHandle "
         "returned {ret}): each rank sees only its own GPU",
         "Make every GPU of the node visible to every rank and pick the device in the program (srun --gpus=N or "
         "--gpu-bind=none instead of --gpus-per-task=1; no per-rank CUDA_VISIBLE_DEVICES), or turn CUDA IPC off in the "
         "MPI (--mca btl_smcuda_use_cuda_ipc 0)",
         cause="launcher_misconfig", env={"OMPI_MCA_btl_smcuda_use_cuda_ipc": "0"},
         steps=("srun ... nvidia-smi -L inside the job: each rank should list every GPU of the node",)),
    Code("LOG089", "rdma-transport-missing", E, "the communication library has no RDMA transport on this node: {what}",
         "Give the job an RDMA-capable stack: a UCX/libfabric built with verbs/mlx5 (or efa) support, rdma-core's "
         "providers, and the RDMA devices inside the container (/dev/infiniband via --device or the RDMA/EFA device "
         "plugin); or select a transport the node has (UCX_TLS=tcp,sm,self)",
         cause="other", env={"UCX_TLS": "<transports `ucx_info -d` lists>"},
         steps=("ucx_info -d | grep Transport (or fi_info -l) on the node, inside the container",)),
    Code("LOG084", "ucx-proc-link-denied", E, "UCX could not open another rank's shared memory through /proc (access refused, or the rank's PID is in another "
         "namespace)",
         "Let UCX pass the segment without the /proc link (UCX_POSIX_USE_PROC_LINK=n), or run the ranks of a node in "
         "one container / PID namespace (--pid=host --ipc=host)",
         cause="other", env={"UCX_POSIX_USE_PROC_LINK": "n"}),
    Code("LOG121", "gpu-ipc-across-isolated-ranks", E, "ranks on one node see only their own GPU, so they cannot "
         "open each other's GPU memory (CUDA IPC)",
         "Give the ranks of a node the same set of GPUs (one container, cgroup or resource set per node, e.g. jsrun "
         "--gpu_per_rs 6 with each rank selecting its GPU) or turn the library's CUDA IPC off (PAMI_DISABLE_IPC=1 for "
         "Spectrum MPI, NCCL_P2P_DISABLE=1 for NCCL), at the cost of slower transfers within the node",
         cause="other", env={"PAMI_DISABLE_IPC": "1"}),
    Code("LOG122", "pmix-message-too-large", E, "the launcher's PMIx refused a start-up message larger than its "
         "size limit",
         "Raise the limit (PMIX_MCA_ptl_base_max_msg_size, in MB: 18 or more; or --mca ptl_base_max_msg_size) for "
         "the job's launch", cause="other", env={"PMIX_MCA_ptl_base_max_msg_size": "18"}),
    Code("LOG124", "mpi-call-rejected", E, "MPI rejected the program's call: {what}",
         "Fix the call the error stack names (its communicator, rank, count, datatype and buffer), or use an "
         "operation the MPI library supports for these arguments", cause="other"),
    Code("LOG125", "mpich-nic-policy-numa", E, "Cray MPICH could not choose a network interface for rank {rank}: "
         "its CPUs span several NUMA nodes",
         "Bind each rank to the cores of one NUMA node (srun --cpu-bind=cores with a --cpus-per-task that fits, or "
         "the site's recommended binding); where the binding is right, import mpi4py (initialise MPI) before torch; "
         "or choose the NIC another way (MPICH_OFI_NIC_POLICY=GPU or ROUND-ROBIN)",
         cause="other", env={"MPICH_OFI_NIC_POLICY": "GPU (or ROUND-ROBIN)"}),
    Code("LOG119", "mpi-not-cuda-aware", E, "the MPI / UCX stack handled GPU memory without CUDA support: {what}",
         "Use a CUDA-aware build (Open MPI and UCX configured --with-cuda; `ompi_info --parsable --all | grep "
         "mpi_built_with_cuda_support:value` says true, `ucx_info -d | grep cuda` lists cuda_copy) and keep cuda_copy "
         "(and cuda_ipc) in UCX_TLS; or stage GPU buffers through host memory before the MPI call",
         cause="other", env={"UCX_TLS": "<...>,cuda_copy,cuda_ipc"}),
    Code("LOG118", "mpi-call-order", E, "the program called {fn} {when}: the MPI standard forbids it and Open MPI aborts",
         "Initialise MPI before any other MPI call and make no call after MPI_Finalize: call MPI_Init (mpi4py initialises "
         "at `from mpi4py import MPI` unless mpi4py.rc.initialize is False) before the first collective, and finalise "
         "only after every library that uses MPI (NCCL bootstrap through MPI, Horovod) has shut down",
         cause="other"),
    Code("LOG100", "mpi-internal-assertion", E, "the MPI library stopped on its own consistency check: {what}",
         "Check the arguments of the MPI call that ran last against what the failed condition names (a root or rank "
         "below the communicator's size, objects not yet freed); when they are right, try another MPI release",
         cause="other", steps=("rerun with a debug build of MPICH (--enable-g=all) for the call's stack",)),
    Code("LOG083", "mpi-cma-denied", E, "the kernel refused the MPI library's cross-process memory copy (CMA)",
         "Allow process_vm_readv between the ranks (docker run --cap-add=SYS_PTRACE or a seccomp profile that permits "
         "it; kernel.yama.ptrace_scope=0), or turn single-copy off: Open MPI --mca btl_vader_single_copy_mechanism none "
         "(Open MPI 5: --mca smsc ^cma), MPICH MPIR_CVAR_CH4_CMA_ENABLE=0",
         cause="other", env={"OMPI_MCA_btl_vader_single_copy_mechanism": "none"}),
    Code("LOG063", "mpi-runtime-unreachable", E, "the MPI launcher's runtime failed between nodes: {what}",
         "Check that every node runs the same MPI install on the same path and that the nodes reach each other on the "
         "interface the runtime uses (pin it: oob_tcp_if_include for Open MPI, -iface / HYDRA_IFACE for Hydra)",
         cause="launcher_misconfig", env={"OMPI_MCA_oob_tcp_if_include": "<iface>", "HYDRA_IFACE": "<iface>"},
         steps=("ssh NODE 'which mpirun; echo $LD_LIBRARY_PATH' from the first node",)),
    Code("LOG064", "pmi-mismatch", E, "the MPI processes could not use the launcher's PMI: {what}",
         "Launch with the PMI the MPI library was built for (srun --mpi=pmix; `srun --mpi=list` shows the choices), or "
         "start the job with that MPI's own mpirun/mpiexec",
         cause="launcher_misconfig"),
)
