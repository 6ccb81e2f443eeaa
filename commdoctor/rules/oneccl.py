"""Rules for Intel oneCCL (torch's "ccl" backend through torch-ccl, and "xccl" on XPU), in the same causes as NCCL's.

Promise: rule rows only (see commdoctor.rules.base), each written from the message in oneCCL's source
(uxlfoundation/oneCCL: its key-value store for the rendezvous, src/atl/util/pm/pmi_resizable_rt; the OFI and MPI
transports, src/atl; Level Zero calls, src/sched/entry/ze; the IPC handle exchange, src/common/global/ze) and
torch-ccl's. oneCCL logs "YYYY:MM:DD-HH:MM:SS:( PID) |CCL_ERROR| file.cpp:LINE func: message" (|CCL_WARN| without
the file) and raises "oneCCL: file.cpp:LINE func: EXCEPTION: message", which torch shows as a RuntimeError; the
log reader counts |CCL_ERROR| lines as errors and does not read the time as a rank.
"""

from __future__ import annotations

from typing import Any

from commdoctor.rules.base import CONSEQUENCE, ROOT, Cand, Code, E, cand, group, sig


def _provider(m: Any, hs: list[Any], found: list[Cand]) -> list[Cand]:
    """No libfabric provider could be opened: for the shm provider (a single node's ranks), the container's
    /dev/shm; otherwise the provider asked for (FI_PROVIDER) is not in this libfabric or its device is absent."""
    names = [h.groups.get("prov") for h in hs if h.groups.get("prov")]
    if "shm" in names:
        return [cand("LOG030", "shm_too_small", 3, hs, detail=(
            "oneCCL could not open libfabric's shared-memory provider, which its ranks on one node talk through "
            "(/dev/shm): a container started without --shm-size (64 MB) or --ipc=host is the usual reason."),
            alts=[("other", "if /dev/shm is large, FI_PROVIDER may exclude shm, or the libfabric oneCCL loads lacks it "
                            "(fi_info -l lists the providers)")])]
    return [cand("LOG116", "other", 3, hs, params={"prov": (names[0] if names else "") or "the default"})]


SIGNATURES = (
    # internal_kvs.cpp kvs_init: a rank retried its connection to the key-value store on rank 0 (CCL_KVS_IP_PORT, or
    # the address torch-ccl passed) until CCL_KVS_CONNECTION_TIMEOUT: "connection time (%ld) >= limit (%ld)".
    # atl_ofi_comm.cpp: "pmi init failed" follows it.
    sig("ccl_kvs_connect", ("connection time (", "pmi init failed"),
        r"kvs_init: connection time \((?P<t>\d{1,9})\) >= limit \(\d{1,9}\)|init_transport: pmi init failed",
        "rendezvous_unreachable", ROOT, 2, "a rank could not reach oneCCL's key-value store on the first rank",
        code="LOG011", params=lambda hs: {"endpoint": "oneCCL's key-value store (CCL_KVS_IP_PORT / MASTER_ADDR)",
                                          "how": f"gave up after {group(hs, 't')} s" if group(hs, "t") else "pmi init failed"},
        alts=[("wrong_interface", "oneCCL advertises the address of CCL_KVS_IFACE (or the first interface): on a host with "
                                  "several, name the routable one with CCL_KVS_IFACE"),
              ("firewall_or_port_blocked", "the store's port must be open between the nodes")]),
    # pmi_resizable_simple*.cpp: a rank waited for another rank's key in the store ("KVS get error: timeout limit:
    # %zu > %zu, prefix: %s, key: %s"): that rank never registered (never started, or another world size).
    sig("ccl_kvs_get_timeout", ("KVS get error: timeout limit",),
        r"KVS get error: timeout limit: \d{1,9} > \d{1,9}, prefix: (?P<prefix>\S{1,80}), key: (?P<key>\S{1,40})",
        "rendezvous_unreachable", ROOT, 3, "a rank waited in oneCCL's key-value store for ranks that never registered",
        code="LOG012", params=lambda hs: {"joined": ""},
        detail="oneCCL's ranks publish their addresses in its key-value store; this one waited for another rank's key "
               "until the timeout. The missing rank did not start, started with another world size, or cannot reach "
               "the store.",
        alts=[("launcher_misconfig", "ranks started with different CCL_WORLD_SIZE/WORLD_SIZE never all register")]),
    # internal_kvs.cpp fill_local_host_ip: "can't find interface %s to get host IP" (CCL_KVS_IFACE names an interface
    # that is absent or has no address); atl_ofi_helper.cpp: "name filter: can not find network providers, include
    # names: {...}, exclude names: {...}, all names: {...}" (FI_*_IFACE / CCL_MNIC_NAME matched no NIC).
    sig("ccl_iface_missing", ("to get host IP", "can not find network providers, include names"),
        r"can't find interface (?P<iface>\S{1,64}) to get host IP"
        r"|can not find network providers, include names: \{(?P<inc>[^}]{0,120})\}",
        "wrong_interface", ROOT, 1, "the interface named for oneCCL does not exist or has no address",
        code="LOG021", params=lambda hs: {"iface": (group(hs, "iface", "inc") or "?").strip()}),
    # internal_kvs.cpp init_main_server_by_env: "specify CCL_KVS_IP_PORT", "set CCL_KVS_IP_PORT in format
    # <ip>_<port>"; set_sin_addr: "inet_pton error - invalid network address, af: %d, src: %s" (a name where an
    # address belongs); global.cpp: "unexpected process launcher" (no launcher's local rank variables).
    sig("ccl_launch_env", ("specify CCL_KVS_IP_PORT", "CCL_KVS_IP_PORT in format", "inet_pton error - invalid network address",
                           "unexpected process launcher"),
        r"(?P<kvs>specify CCL_KVS_IP_PORT|set CCL_KVS_IP_PORT in format)"
        r"|inet_pton error - invalid network address, af: \d, src: (?P<src>\S{1,120})"
        r"|(?P<launcher>unexpected process launcher)",
        "launcher_misconfig", ROOT, 2, "oneCCL's launch variables are missing or malformed",
        code="LOG066", params=lambda hs: {"what": (
            f"oneCCL needs an IP address where it was given '{group(hs, 'src')}' (CCL_KVS_IP_PORT is <ip>_<port>)"
            if group(hs, "src") else "oneCCL was started without a launcher it knows (mpirun, or torchrun with "
            "LOCAL_RANK/LOCAL_WORLD_SIZE)" if group(hs, "launcher") else
            "CCL_KVS_IP_PORT is unset or not <ip>_<port> for the ranks to find the key-value store")}),
    # internal_kvs_server.hpp: the key-value store's socket on the first rank failed ("read/write error: %s"): the
    # process serving it ended.
    sig("ccl_kvs_lost", ("read/write error: ",),
        r"\|CCL_ERROR\|[^\n]{0,80}read/write error: (?P<err>[^\n]{1,80})",
        "peer_process_died", CONSEQUENCE, 6, "the rank serving oneCCL's key-value store went away",
        code="LOG061"),
    # atl_ofi.cpp: a completion of the OFI transport came back with an error ("prov_ep_handle_cq_err: fi_cq_readerr:
    # err: %d, prov_err: %s") and the send or receive raised "OFI function error": the peer's end went away (it died
    # or was killed), or the link failed under it.
    sig("ccl_ofi_peer", ("fi_cq_readerr: err:", "EXCEPTION: OFI function error"),
        r"prov_ep_handle_cq_err: fi_cq_readerr: err: \d{1,5}|(?:send|recv|read|write): EXCEPTION: OFI function error",
        "peer_process_died", CONSEQUENCE, 6, "oneCCL's transport lost a peer in the middle of a transfer",
        code="LOG061", alts=[("hardware_fault", "with every rank alive, a failing link gives the same completion errors")]),
    # atl_ofi_helper.cpp / atl_ofi.cpp / atl_ofi_comm.cpp: oneCCL's OFI transport found no libfabric provider to open:
    # "fi_getinfo error: ret %d, providers %d", "can't create providers for name %s", "can't find suitable provider",
    # "can not open network providers", then the exception "failed to initialize ATL".
    sig("ccl_provider", ("can't create providers for name", "can't find suitable provider", "can not open network providers",
                         "failed to initialize ATL"),
        r"can't create providers for name (?P<prov>[^\s,]{1,60})|can't find suitable provider"
        r"|can not open network providers(?! with hmem)|failed to initialize ATL",
        "other", ROOT, 3, "oneCCL's transport found no libfabric provider it could open",
        build=_provider),
    # atl_ofi.cpp: "failed to register mr, ret: %d, strerror: Cannot allocate memory" and fi_domain failing with
    # ENOMEM (-12) on the verbs provider: the locked-memory limit.
    sig("ccl_mr_nomem", ("failed to register mr", "fails with ret: -12"),
        r"failed to register mr, ret: -12|fi_domain\([^)]{0,80}\)\s{0,4}fails with ret: -12",
        "rlimit_memlock", ROOT, 2, "oneCCL could not register memory with the RDMA provider (Cannot allocate memory)",
        code="LOG035"),
    # ze_call.cpp: "ze error at %s, code: %s" with the Level Zero result: out of device memory, or the device lost.
    sig("ccl_ze_result", ("ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY", "ZE_RESULT_ERROR_DEVICE_LOST", "malloc scaleout_device_buf failed"),
        r"(?P<oom>ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY|malloc scaleout_device_buf failed)|(?P<lost>ZE_RESULT_ERROR_DEVICE_LOST)",
        "cuda_oom", ROOT, 1, "the Intel GPU ran out of memory, or was lost",
        build=lambda m, hs, found: [
            cand("LOG037", "hardware_fault", 1, hs, params={"what": "an Intel GPU was lost (ZE_RESULT_ERROR_DEVICE_LOST)"})
            if any(h.groups.get("lost") for h in hs) else
            cand("LOG031", "cuda_oom", 1, hs, params={"what": "(Level Zero: out of device memory)"})]),
    # ze_fd_manager.cpp: the pidfd exchange of GPU memory handles needs pidfd_getfd on a peer process, which
    # kernel.yama.ptrace_scope (or a container without CAP_SYS_PTRACE) refuses: "pidfd_getfd failed: ... errno:
    # Operation not permitted" after its warning "Operation not permitted: This error occurs when the calling process
    # does not have the necessary permissions".
    sig("ccl_pidfd_denied", ("pidfd_getfd failed", "does not have the necessary"),
        r"pidfd_getfd failed: [^\n]{0,120}errno: Operation not permitted"
        r"|Operation not permitted: This error occurs when the calling process does not have the necessary ?permissions",
        "other", ROOT, 2, "the kernel refused oneCCL the GPU memory handle of another rank (ptrace restriction)",
        code="LOG117"),
    # src/sched/entry/entry.cpp: "entry %s %p update time expired" (CCL_ENTRY_UPDATE_TIME) -- a step of a collective
    # waited past its limit for a peer.
    sig("ccl_entry_expired", ("update time expired",),
        r"entry (?P<what>[A-Z_]{2,30}) \S{1,20} update time expired",
        "collective_timeout_straggler", ROOT, 5, "a oneCCL collective step waited past its time limit for a peer",
        code="LOG051", params=lambda hs: {"op": f"a oneCCL {group(hs, 'what')} step", "timeout": "CCL_ENTRY_UPDATE_TIME",
                                          "who": "a peer never sent its part (late, or dead)"}),
)

CODES = (
    Code("LOG116", "ccl-transport-unavailable", E, "oneCCL found no libfabric provider it could open ({prov})",
         "Check the provider oneCCL asks for exists in the libfabric it loads (fi_info -l), set FI_PROVIDER to one "
         "that does (tcp, or verbs/psm3 where the NICs support it), or CCL_ATL_TRANSPORT=mpi under mpirun",
         cause="other"),
    Code("LOG117", "ccl-ipc-denied", E, "the kernel refused oneCCL another rank's GPU memory handle",
         "Allow it with `sysctl kernel.yama.ptrace_scope=0` (containers: --cap-add SYS_PTRACE), or make oneCCL "
         "exchange handles over sockets: CCL_ZE_IPC_EXCHANGE=sockets",
         cause="other"),
)
