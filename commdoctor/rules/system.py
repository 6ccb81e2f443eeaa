"""Rules for the host and the network under any library: ports, names, interfaces, connections, memory, GPUs.

Promise: rule rows only (see commdoctor.rules.base), each written from the
message its library prints: glibc's resolver and socket errors as torch,
gloo and NCCL quote them, the CUDA runtime's error strings, NCCL's shm and
CUDA-failure WARNs, the kernel's. Functions below the table hold what one
line cannot decide alone; each is named by its row.
"""

from __future__ import annotations

import ipaddress
import re
from typing import Any

from commdoctor.core.ifvars import iface_env
from commdoctor.parsing.lines import CXX_WHAT, SIGBUS_DEATH
from commdoctor.rules.base import (
    CONSEQUENCE, CONTEXT, E, NCCL_DEBUG_ENV, NCCL_FN, PHASE_ECHOES, PHASE_LAST, PHASE_SETUP, PHASE_UNRECOGNISED, ROOT, W,
    Cand, Code, CHILD_REPORTS, ModelRule, after_restart, after_store_host_failed, cand, completed, ctx, group, hits,
    in_library_words, job_failed, lines_under, not_remote_alloc, out_of_fds, own_reading, sig, single_node, trace_files,
    version_tuple,
)

IFNAME_ENV = iface_env(("nccl", "gloo"))
_STORE_WORDS = re.compile(r"TCPStore|[Ss]tore|rendezvous|[Rr]endezvous|MASTER_|client socket|c10d|init_method|tcp://")
_LINK_LOCAL6 = re.compile(r"^fe80:", re.I)
_VIRTUAL_IF = re.compile(r"^(?:docker\d*|veth\w*|virbr\d*|br-\w+|cni\d*|flannel[\w.]*|cali\w+|tunl\d*|vxlan[\w.]*|lxcbr\d*|kube-ipvs\d*|podman\d*)$")


def addr_problem(name: str, addr: str) -> str | None:
    """Why peers on other hosts cannot use this interface/address, or None."""
    a = addr.split("%")[0]
    if name == "lo" or a.startswith("127.") or a == "::1":
        return "loopback"
    if _LINK_LOCAL6.match(a) or a.startswith("169.254."):
        return "link-local"
    if _VIRTUAL_IF.match(name):
        return "a virtual bridge"
    return None


def _names(m: Any, hs: list[Any], found: list[Cand]) -> list[Cand]:
    """A name that does not resolve: this host's own (its peers cannot find it), a host the rendezvous names, or
    MASTER_ADDR of an env:// rendezvous.

    The rendezvous backends of torchrun and torchelastic (c10d, etcd, static) and the launchers around them (torchx,
    Volcano, the Kubeflow operators) address the store by a node's host name, which a cluster's DNS may not know, or
    not yet (pod records are created with or after the pods): the name is what fails. init_process_group's env://
    rendezvous (its traceback through _env_rendezvous_handler, `TCPStore(master_addr, ...)`) connects to the MASTER_ADDR
    the job was given: a name there that does not resolve is the master's endpoint missing (its pod and service not
    started yet, or a wrong name), so it reads as the rendezvous host unreachable."""
    own = [h for h in hs if "Unable to resolve hostname" in h.ev.text] + hits(m, "gethostname_failed")
    other = [h for h in hs if "Unable to resolve hostname" not in h.ev.text]
    out = []
    if own:
        out.append(cand("LOG015", "hostname_resolution", 1, own, params={"what": "this host's own name"}))
    env = {h.ev.source for h in hits(m, "env_rendezvous_frame")}
    master = [h for h in other if h.ev.source in env]
    named = [h for h in other if h not in master]
    if master:
        out.append(cand("LOG015", "rendezvous_unreachable", 2, master, params={"what": "MASTER_ADDR (env:// rendezvous)"}, alts=[
            ("hostname_resolution", "if the name exists but resolves wrongly (127.0.1.1, a stale /etc/hosts entry), fix the "
                                    "resolver; if it does not exist yet (a master pod not started), the workers started too early")]))
    if named:
        out.append(cand("LOG015", "hostname_resolution", 2, named, params={"what": "the rendezvous host's name"}, alts=[
            ("rendezvous_unreachable", "if the name is right and its host is simply not up yet (a master pod not "
                                       "started), the workers started too early: start them once it exists, or retry")]))
    return out


def _refused(m: Any, hs: list[Any], found: list[Cand]) -> list[Cand]:
    """Refused or unroutable: the rendezvous store when the line names it, else a peer."""
    store = [h for h in hs if _STORE_WORDS.search(h.ev.text)]
    peer = [h for h in hs if h not in store]
    # A refusal the client retried past: the same log shows it connected to the store afterwards.
    joined = hits(m, "store_connected")
    store = [h for h in store if not any(c.ev.source == h.ev.source and c.seq > h.seq for c in joined)]
    out = []
    late = after_store_host_failed(m, store)
    if late:
        store = [h for h in store if h not in late]
        out.append(cand("LOG011", "rendezvous_unreachable", 6, late, consequence=True, params={
            "endpoint": "the store", "how": "only after the store's host had already failed and shut it down"}))
    if store:
        out.append(cand("LOG011", "rendezvous_unreachable", 3, store,
                        params={"endpoint": "the rendezvous store", "how": "was refused or had no route"}, alts=[
            ("firewall_or_port_blocked", "'Connection refused' from a host that is up means nothing listens there yet (master "
                                         "not started) or a firewall rejects; 'No route to host' means a wrong MASTER_ADDR or routing")]))
    again = after_restart(m, peer)
    if again:
        peer = [h for h in peer if h not in again]
        out.append(cand("LOG022", "wrong_interface", 6, again, params={"how": "refused after the launcher restarted the "
                                                                            "workers of a failed attempt"},
                        detail="These connections were made by workers torchrun started again after one of this host's "
                               "workers had failed: the first failure, not the network, is what to look at.",
                        consequence=True))
    rejected = [h for h in peer if _NO_ROUTE.search(h.ev.text) and _same_network(m, _CONNECT_TO.search(h.ev.text))]
    if rejected:
        # EHOSTUNREACH to an address on one of the job's own networks: the route exists, so the "no route" came back
        # from the peer's host. firewalld's default reject (icmp-host-prohibited) gives exactly this errno while ping
        # still passes; a host that is down or an address no machine holds fails ARP the same way.
        peer = [h for h in peer if h not in rejected]
        out.append(cand("LOG029", "firewall_or_port_blocked", 3, rejected, alts=[
            ("wrong_interface", "if the address belongs to no running machine (a stale or wrong interface address), ARP "
                                "fails with the same errno: check it is the peer's routable IP"),
            ("peer_process_died", "a peer host that went down answers no ARP either: check it is up")]))
    # gloo's pair refused ("failed to connect ... local=[L]:p, remote=[R]:q ... Connection refused") to an address of
    # this host's own subnet, while a rank on another host waited for that very connection until its "Connect
    # timeout": the peer was alive and listening, and the address is on the job's network, so the refusal came from
    # a rule on the way (iptables REJECT, a network policy), not from an interface no peer reaches.
    waited = {h.ev.source for h in hits(m, "gloo_connect_timeout")}
    reset = [h for h in peer if "refused" in h.ev.text and _gloo_same_subnet(h.ev.text)
             and any(src != h.ev.source for src in waited)]
    if reset:
        peer = [h for h in peer if h not in reset]
        out.append(cand("LOG029", "firewall_or_port_blocked", 3, reset,
                        detail="A rank's connection to its gloo peer, at an address of its own subnet, was refused, "
                               "while that peer waited for it on the other host until its connect timeout: the peer "
                               "was listening, so a firewall rule that rejects (iptables REJECT, a network policy) "
                               "refused it on the way. Open the ports gloo and NCCL use between the hosts (or the "
                               "whole range between the job's hosts), not only the store's.",
                        alts=[("wrong_interface", "if that address belongs to another machine on the subnet (a stale "
                                                  "interface address), connections to it are refused the same way")]))
    if peer:
        out.append(cand("LOG022", "wrong_interface", 3, peer, params={"how": "refused or unreachable"}, alts=[
            ("firewall_or_port_blocked", "if the address is the peer's right one, a host firewall rejecting the port gives the "
                                         "same error: compare the address with the peer's routable IP"),
            ("peer_process_died", "a peer that already exited refuses connections too: look for its own error first")]))
    return out


_NO_ROUTE = re.compile(r"No route to host|EHOSTUNREACH|Host is unreachable")
_CONNECT_TO = re.compile(r"[Cc]onnect(?:ion)? to (?:\[?(?:::ffff:)?)?(?P<addr>\d{1,3}(?:\.\d{1,3}){3})\]?(?:<\d{1,5}>|:\d{1,5}\b)")
_GLOO_PAIR = re.compile(r"local=\[(?P<local>\d{1,3}(?:\.\d{1,3}){3})\]:\d{1,5}, remote=\[(?P<remote>\d{1,3}(?:\.\d{1,3}){3})\]")


def _gloo_same_subnet(text: str) -> bool:
    """gloo's connect line names both ends in one /24 (gloo prints no netmask), and they are different addresses."""
    g = _GLOO_PAIR.search(text)
    if not g or g.group("local") == g.group("remote") or g.group("remote").startswith("127."):
        return False
    return g.group("local").rsplit(".", 1)[0] == g.group("remote").rsplit(".", 1)[0]


def _local_v4(m: Any) -> list[ipaddress.IPv4Address]:
    """The IPv4 addresses the job's ranks bootstrap or send from (NCCL's 'Bootstrap : Using' / 'NET/Socket' lines)."""
    out = []
    for hi in m.hosts.values():
        for key in (*hi.bootstrap, *hi.net_socket):
            try:
                a = ipaddress.ip_address(key.rsplit(":", 1)[-1].split("%")[0])
            except ValueError:
                continue
            if isinstance(a, ipaddress.IPv4Address) and not a.is_loopback:
                out.append(a)
    return out


def _same_network(m: Any, target: re.Match[str] | None) -> bool:
    """Whether a connect target lies in the /24 of an address the job itself uses (NCCL prints no netmask)."""
    if target is None:
        return False
    try:
        t = ipaddress.IPv4Address(target.group("addr"))
    except ValueError:
        return False
    return any(ipaddress.IPv4Network(f"{a}/24", strict=False) == ipaddress.IPv4Network(f"{t}/24", strict=False)
               and a != t for a in _local_v4(m))


def _connect_retries(m: Any, found: list[Cand], _unused: list[Cand]) -> list[Cand]:
    """NCCL's INFO lines of a connect it keeps retrying, and nothing after them: the connection never came up.

    NCCL retries a connect that failed with ECONNREFUSED, ETIMEDOUT or EHOSTUNREACH (misc/socket.cc: 'Call to
    connect returned %s, retrying' up to 2.11; 'socketPollConnect: connect [to ADDR] returned %s, retrying (N/M)
    after sleep for T msec' later), at INFO level: a working job may show one while a peer is still starting. When
    every communicator in view stops short of Init COMPLETE and nothing else names a cause, these lines are the
    failure: a hang at init, or the error the user posted."""
    hs = hits(m, "nccl_connect_retry")
    if not hs or any(c.cause and not c.consequence for c in found) \
            or any(c.state in ("Init COMPLETE", "Destroy COMPLETE") for c in m.comms):
        return []
    ran = any(w.seq > 1 for w in m.watchdog) or any(done > 1 for _q, done, _e in m.progress.values())
    if ran:
        return []
    errs = {str(h.groups.get("err")) for h in hs}
    n = max(int(h.groups.get("n") or 0) for h in hs)
    how = " and ".join(sorted(errs)) + (f" (retry {n})" if n else "")
    timed = [h for h in hs if "timed out" in str(h.groups.get("err"))]
    rejected = [h for h in hs if "route" in str(h.groups.get("err")) or "unreachable" in str(h.groups.get("err"))]
    if timed and len(timed) == len(hs):
        return [cand("LOG025", "firewall_or_port_blocked", 5, hs, detail=_RETRY_DETAIL.format(how=how), alts=[
            ("wrong_interface", "an address that is not routed (a docker bridge, a second NIC) times out the same way: "
                                "check which interface each rank advertised")])]
    if rejected and len(rejected) == len(hs) and any(_same_network(m, _CONNECT_TO.search(h.ev.text)) for h in hs):
        return [cand("LOG029", "firewall_or_port_blocked", 5, hs, detail=_RETRY_DETAIL.format(how=how), alts=[
            ("wrong_interface", "if the address belongs to no running machine, ARP fails with the same errno")])]
    return [cand("LOG022", "wrong_interface", 5, hs, params={"how": f"{how} while NCCL retried them, and never came up"},
                 detail=_RETRY_DETAIL.format(how=how), alts=[
        ("firewall_or_port_blocked", "if the address is the peer's right one, a host firewall rejecting NCCL's ports "
                                     "(firewalld rejects with 'No route to host') gives the same lines"),
        ("peer_process_died", "a peer that exited or never started refuses connections too: read its own log")])]


_RETRY_DETAIL = ("NCCL kept retrying a connection to a peer ({how}) and no communicator reached Init COMPLETE. NCCL logs "
                 "these retries at INFO level, so the job hangs at init or fails later with a bare error.")


_NO_KERNEL_IMAGE = re.compile(r"named symbol not found|no kernel image is available(?: for execution on the device)?"
                              r"|device kernel image is invalid")
#: HIP's runtime when the program (torch, RCCL) carries no code object for the GPU's architecture (a gfx906 card
#: with a package built for newer ones): hipErrorNoBinaryForGpu, "Unable to find code object for all current
#: devices!" at load, or hip_platform.cpp's "Cannot retrieve Static function, error: N" at the first launch.
_HIP_NO_BINARY = re.compile(r"hipErrorNoBinaryForGpu|Unable to find code object for all current devices"
                            r"|Cannot retrieve Static function, error: \d{1,5}")


#: No usable kernel driver at all (torch's and nvidia-smi's words), rather than one too old for the CUDA runtime.
_NO_DRIVER = re.compile(r"[Ff]ound no NVIDIA driver|couldn't communicate with the NVIDIA driver"
                        r"|CUDA driver initialization failed, you might not have a CUDA gpu|failed: Driver Not Loaded")


def _driver_mismatch(m: Any, hs: list[Any], found: list[Cand]) -> list[Cand]:
    """NVML's 'Driver/library version mismatch' is the driver against itself: the user-space libraries (libnvidia-ml,
    libcuda) of one release over a kernel module of another still loaded, after a driver upgrade without a reboot
    (unattended-upgrade does this) or in a container whose injected libraries differ from the host's module."""
    nvml = [h for h in hs if "ibrary version mismatch" in h.ev.text]
    absent = [h for h in hs if h not in nvml and _NO_DRIVER.search(h.ev.text)]
    rest = [h for h in hs if h not in nvml and h not in absent]
    out = []
    if absent:
        out.append(cand("LOG032", "driver_cuda_mismatch", 2, absent,
                        detail="The process found no working NVIDIA kernel driver: the module is not loaded (a kernel "
                               "update whose DKMS build of the driver failed, a node not rebooted after a driver "
                               "install) or, in a container, the NVIDIA runtime did not pass the GPUs and driver in. "
                               "`nvidia-smi` on the node itself tells the two apart; `dkms status` and "
                               "`dmesg | grep NVRM` say why the module is missing.",
                        alts=[("launcher_misconfig", "if nvidia-smi works on the node, the container or job step was "
                                                     "started without GPUs (docker --gpus all, srun --gpus)")]))
    if rest:
        out.append(cand("LOG032", "driver_cuda_mismatch", 1, rest))
    if nvml:
        out.append(cand("LOG032", "driver_cuda_mismatch", 1, nvml,
                        detail="NVML found the NVIDIA user-space libraries of one driver release over a kernel module of "
                               "another: the driver was upgraded (often by unattended-upgrade) while the old module "
                               "stayed loaded. Reboot the node (or unload and reload the nvidia modules once no process "
                               "uses the GPUs), and pin the driver packages so they do not change under running jobs."))
    return out


def _p2p_unsupported(m: Any, hs: list[Any], found: list[Cand]) -> list[Cand]:
    """Peer access refused. Raised inside NCCL's SHM transport (transport/shm.cc), it is not GPU peer-to-peer at all:
    NCCL 2.27 shares host memory between ranks through cuMem handles there and asked for peer access to import them,
    which GPUs without P2P (L4, most PCIe boards) refuse (NVIDIA/nccl#1838; NCCL_CUMEM_HOST_ENABLE=0 avoids it)."""
    shm = [h for h in hs if "shm.cc" in (h.rec.file or "") or "transport/shm" in h.ev.text]
    # RCCL's own P2P transport refused by the kernel driver: read with its 'Cuda failure' line (_cuda_failure, LOG138)
    hs = [h for h in hs if not _rocm_ipc(h)]
    # NCCL asks the driver whether two GPUs can reach each other before it enables or imports peer memory, so a
    # refusal inside NCCL is the driver contradicting itself. Outside NCCL ("RuntimeError: CUDA error: ...", a
    # serving engine's custom all-reduce) the caller asked for peer access without asking first, on GPUs that
    # correctly say they have none.
    caller = [h for h in hs if h not in shm and h.rec.kind != "nccl" and not any(
        w in h.ev.text for w in ("NCCL", "Cuda failure", "cudaErrorPeerAccessUnsupported", "CUDA_ERROR_PEER", "cudaIpc", "hipIpc"))]
    rest = [h for h in hs if h not in shm and h not in caller]
    out = []
    if rest:
        out.append(own_reading(rest))
    if caller and not rest:
        out.append(cand("LOG081", "other", 2, caller,
                        params={"what": "the program asked for GPU peer access these GPUs do not have"},
                        detail="CUDA refused peer-to-peer access between two GPUs that have none (consumer boards such as "
                               "the RTX 4090, most PCIe cards behind different root ports). NCCL checks before it uses "
                               "P2P; this call came from outside it, typically a serving engine's own all-reduce "
                               "(vLLM's and SGLang's custom all-reduce: --disable-custom-all-reduce) or CUDA IPC in the "
                               "program.",
                        alts=[("p2p_driver_bug", "if `nvidia-smi topo -p2p r` reports these GPUs as P2P-capable, the "
                                                 "driver contradicts itself")]))
    if shm:
        out.append(cand("LOG070", "nccl_internal_bug", 2, shm,
                        params={"what": "its shared-memory transport asked for GPU peer access these GPUs do not have "
                                        "(cuMem host sharing)"},
                        detail="The failure is in NCCL's SHM transport, which moves data through host memory: NCCL 2.27 "
                               "shares that memory through cuMem handles and imports them with peer access, which GPUs "
                               "without P2P refuse. NCCL_CUMEM_HOST_ENABLE=0 (the /dev/shm path) avoids it; a newer NCCL "
                               "fixes it.",
                        alts=[("p2p_driver_bug", "if NCCL_CUMEM_HOST_ENABLE=0 fails the same way, the driver refuses peer "
                                                 "access the GPUs claim to have")]))
    return out


#: Xid codes NVIDIA's Xid table attributes first to the application, not the board: 13 (graphics engine exception,
#: e.g. an out-of-range address), 31 (GPU memory page fault: an illegal address), 43 (GPU stopped processing: the
#: application's context was reset), 45 (preemptive cleanup after an earlier error).
_APP_XIDS = frozenset({"13", "31", "43", "45"})
_XID = re.compile(r"\bXid\b(?: \([^)]{0,40}\))?:? (?P<xid>\d{1,3})\b")
_XID_CAUSE = re.compile(r"caused by previous Xid (\d{1,3})\b")


def _gpu_hw(m: Any, hs: list[Any], found: list[Cand]) -> list[Cand]:
    """GPU hardware errors, less the Xids the driver raises for a process's own faults (an illegal memory access in
    a kernel gives Xid 13 or 31 in dmesg; the board is fine)."""
    xid = {id(h): x.group("xid") for h in hs if (x := _XID.search(h.ev.text))}
    # Newer drivers end Xid 45 (channels torn down) with the Xid that caused it: "... caused by previous Xid 79".
    xid.update({id(h): p.group(1) for h in hs if (p := _XID_CAUSE.search(h.ev.text))})
    app = [h for h in hs if xid.get(id(h)) in _APP_XIDS]
    rest = [h for h in hs if h not in app]
    out = []
    if rest:
        out.append(own_reading(rest))
    if app:
        xids = sorted({xid[id(h)] for h in app})
        out.append(cand("LOG081", "other", 5, app,
                        params={"what": f"Xid {', '.join(xids)}, a fault of the process's own GPU work"},
                        detail=f"Xid {', '.join(xids)} is how the driver reports a fault of the process's own GPU work "
                               "(an out-of-range address, a memory page fault, a context reset), not a failing board. "
                               "Rerun with CUDA_LAUNCH_BLOCKING=1 (or compute-sanitizer) to find the kernel.",
                        alts=[("hardware_fault", "the same Xid repeating on one GPU across unrelated jobs points at the "
                                             "board: nvidia-smi -q -d ECC,ROW_REMAPPER"),
                              ("p2p_acs_iommu", "page faults (Xid 31) during peer-to-peer copies, gone with "
                                                "NCCL_P2P_DISABLE=1, are the IOMMU translating GPU peer traffic")]))
    return out


def _lib_missing(m: Any, hs: list[Any], found: list[Cand]) -> list[Cand]:
    """A library the stack needs could not be loaded -- unless the line is NCCL probing an optional plugin or its
    dependencies at INFO level, NCCL's own libcuda.so probe it goes on without, or TensorFlow's warning before it runs
    without the GPU."""
    hs = [h for h in hs if "NCCL INFO" not in h.ev.text and "Could not load dynamic library" not in h.ev.text
          and "Failed to find CUDA library" not in h.ev.text]  # NCCL 2.18-2.20 goes on without it (nccl_goes_on_note)
    if not hs:
        return []
    lib = group(hs, "lib") or "a library"
    base = lib.split(".so")[0]
    # By the library's own name: libcuda (the driver's) is not libcudart (the runtime's); libmpi_cxx is libmpi's.
    why = next((w for k, w in _LIB_WHY if base == k or base.startswith(k + "_")), _RUNTIME_LIB_WHY)
    return [cand("LOG113", "other", 2, hs, params={"lib": lib}, detail=why)]


_LIB_WHY = (
    ("libnccl", "NCCL itself is not installed, or not where the loader looks: torch's pip wheels load it from the "
                "nvidia-nccl-cu* package, Paddle and source builds from the system (the nccl2 package) or "
                "LD_LIBRARY_PATH."),
    ("librccl", "RCCL (ROCm's NCCL) is not installed, or not on the loader's path (the ROCm lib directory)."),
    ("libcuda", "The GPU driver's own library is missing: a container started without the NVIDIA runtime (docker "
                "--gpus all, the Kubernetes device plugin), or no NVIDIA driver on this host."),
    ("libnvidia-ml", "NVML, the driver's management library, is not on the loader's path: NCCL loads it to map the GPUs "
                     "and fails its set-up without it (unhandled system error). A container started without the NVIDIA "
                     "runtime's driver libraries, or a driver install whose libraries ldconfig does not list "
                     "(ldconfig -p | grep libnvidia-ml)."),
    ("libnvshmem", "NVSHMEM, which DeepEP and other expert-parallel kernels load, is not installed or not on the "
                   "loader's path (the nvidia-nvshmem-cu* wheel, or the NVSHMEM the kernels were built against)."),
    ("libfabric", "libfabric, which oneCCL's and MPI's network transports load at run time, is not on the loader's "
                  "path: the oneAPI environment (setvars.sh, or the torch-ccl wheel's own lib directory) was not "
                  "loaded for this process."),
    ("libmpi", "The MPI library this build was linked against is not on the loader's path (a module not loaded on "
               "this node, another MPI installed)."),
)
_RUNTIME_LIB_WHY = ("A CUDA (or ROCm) runtime library this build links against is missing or of another major version: "
                    "install the runtime matching the build (pip's nvidia-*-cu* packages, the CUDA toolkit's lib64 on "
                    "LD_LIBRARY_PATH) or a build for the CUDA installed.")


def _sigbus(m: Any, hs: list[Any], found: list[Cand]) -> list[Cand]:
    """SIGBUS: /dev/shm unable to back a shared mapping, unless the backtrace under it is the dynamic loader mapping
    a library. A mapping beyond the end of its file raises SIGBUS when touched: the loader maps a shared object's
    segments as its program headers describe, so a library cut short on disk (a partial copy, a plugin rewritten
    while in use) faults inside dlopen (NVIDIA/nccl#2367: a truncated profiler plugin named by NCCL_PROFILER_PLUGIN,
    SIGBUS in _dl_map_segments under ncclCommInitRankConfig)."""
    loader = lines_under(m, "dlopen_frame", hs, 24)
    if not loader:
        return [own_reading(hs)]
    lib = group(loader, "lib")
    return [cand("LOG132", "other", 2, hs[:1] + loader[:2], params={"lib": lib or "a shared library"})]


def _hca_limit(m: Any, hs: list[Any], found: list[Cand]) -> list[Cand]:
    """The adapter out of one of its objects; for memory keys (CREATE_MKEY), what holds them: every registered memory
    region takes one, and a registration cache with no bound (UCX's UCX_IB_RCACHE_MAX_REGIONS=inf by default) keeps
    registering until the adapter has none left (openucx/ucx#6264: bounding it stopped the errors)."""
    c = own_reading(hs)
    if any(h.groups.get("cmd") == "CREATE_MKEY" for h in hs):
        c.detail = ("Each registered memory region takes one of the adapter's memory keys; a process that keeps "
                    "registering buffers without releasing them exhausts them. Bound the registration cache "
                    "(UCX_IB_RCACHE_MAX_REGIONS for UCX and the MPIs on it) and look for "
                    "buffers registered per step (NCCL user-buffer registration, torch's symmetric memory).")
    return [c]


def _rec_file(h: Any) -> str:
    """The source file a hit's NCCL (or RCCL) line names, or ''."""
    return (h.rec.file or "") if h.rec is not None else ""


def _rocm_ipc(h: Any) -> bool:
    """RCCL's P2P transport (transport/p2p.cc, hipified) failing to export or import a buffer through a HIP IPC handle
    with 'invalid device pointer' or 'invalid argument': the kernel driver refused ROCr's IPC request. ROCr asks amdkfd
    for it through ioctls that AMD's own kernel driver (amdgpu-dkms) carries and a distribution's in-tree amdgpu lacks
    or lags (ROCm/rccl#1055: 7900 XTX under ROCm 6.0 in docker; ROCm/rccl#1454: hipIpcGetMemHandle 'invalid argument'
    on an Arch 6.12 kernel's amdgpu, ROCm 6.2)."""
    path = _rec_file(h)
    return (path.endswith("p2p.cc") and ("hipify" in path or "rccl" in path.lower())
            and ("invalid device pointer" in h.ev.text or "invalid argument" in h.ev.text))


def _cuda_failure_kind(h: Any) -> str:
    """Which reading a failed CUDA call gets, the first that applies."""
    text = h.ev.text
    # cudaErrorInitializationError (3) 'initialization error': CUDA itself could not start in this process, whichever
    # NCCL file made the first call (transport/nvls.cc's multicast query is often the first); not the fabric (802).
    if "'initialization error'" in text or "CUDA error: initialization error" in text:
        return "init"
    if "nvls" in (h.rec.file or "").lower() or "NVLS" in text or "ulticast" in text:
        return "nvls"
    if "unknown error" in text or h.groups.get("num") == "999":
        return "unknown"
    # cudaErrorSymbolNotFound (500) 'named symbol not found', cudaErrorNoKernelImageForDevice (209) 'no kernel image is
    # available for execution on the device', cudaErrorInvalidKernelImage (200) 'device kernel image is invalid': the
    # code has no kernels this GPU can run. NCCL meets it first in ncclInitKernelsForDevice (enqueue.cc,
    # cudaFuncGetAttributes on each kernel), so a build without the GPU's sm_XX (a cu11x wheel on Hopper/Blackwell,
    # NVCC_GENCODE listing older GPUs only) fails there before any collective.
    if "is a stub library" in text or "cudaErrorStubLibrary" in text:
        return "stub"
    if _rocm_ipc(h):
        return "rocm_ipc"
    if _NO_KERNEL_IMAGE.search(text):
        return "noimg"
    if _HIP_NO_BINARY.search(text):
        return "nobin"
    return "rest"


def _said_by_nccl(h: Any, heads: set[tuple[str, int]]) -> bool:
    """A failed CUDA call that NCCL made: its own WARN line, or the reason torch prints a line or three under
    ncclUnhandledCudaError ("Last error:" between them); ``heads`` are where ncclUnhandledCudaError was said."""
    if h.rec is not None and h.rec.kind == "nccl":
        return True
    return h.ev.line is not None and any((h.ev.source, h.ev.line - k) in heads for k in range(1, 4))


#: CUDA's words for a kernel's fault on GPU memory (cudaErrorIllegalAddress, cudaErrorMisalignedAddress).
_GPU_FAULT = re.compile(r"an illegal memory access was encountered|misaligned address|illegal address")


def _build_failed(m: Any, hs: list[Any], found: list[Cand]) -> list[Cand]:
    """A failed build, with the NCCL headers as the alternative only where the compiler's errors name NCCL's API."""
    c = own_reading(hs)
    if not any(NCCL_FN.search(h.ev.text) for h in hs):
        c.alts = []
    return [c]


def _cuda_failure(m: Any, hs: list[Any], found: list[Cand]) -> list[Cand]:
    """A failed CUDA call: in NVLS/multicast setup it is the fabric; error 999 is unknown (often hardware)."""
    kinds: dict[str, list[Any]] = {"init": [], "nvls": [], "unknown": [], "noimg": [], "nobin": [], "rest": [], "stub": [],
                                   "rocm_ipc": []}
    for h in hs:
        kinds[_cuda_failure_kind(h)].append(h)
    init, nvls, unknown, noimg, nobin, rest, stub, rocm_ipc = kinds.values()
    out = []
    if rocm_ipc:
        out.append(cand("LOG138", "driver_cuda_mismatch", 3, rocm_ipc,
                        alts=[("p2p_acs_iommu", "on a host whose ROCm kernel driver matches, the IOMMU: iommu=pt on the "
                                                "kernel command line")]))
    if stub:
        # cudaErrorStubLibrary (34) 'CUDA driver is a stub library': the libcuda.so the process loaded is the toolkit's
        # stub (lib64/stubs), which only exists to link against. NCCL 2.12 added an "enhanced compatibility" layer
        # (enhcompat.cc) that answers CUDA's driver entry points itself and returns this same error when NCCL is
        # built or linked with a shared CUDA runtime, with the real driver loaded (NVIDIA/nccl#658: CUDARTLIB=cudart;
        # horovod#3831: a static NCCL in a program using the shared cudart).
        own = [h for h in stub if h.rec is not None and h.rec.kind == "nccl"]
        old = bool(m.versions) and all(version_tuple(v) < (2, 12) for v in m.versions)
        if own and not old:
            out.append(cand("LOG070", "nccl_internal_bug", 3, own, params={
                "what": "its CUDA compatibility layer (2.12+) reports the driver as a stub library"},
                detail="Since 2.12 NCCL carries a compatibility layer for CUDA's driver calls that returns "
                       "'CUDA driver is a stub library' when NCCL runs on a shared CUDA runtime (built with "
                       "CUDARTLIB=cudart, or a static libnccl linked into a program that uses libcudart.so), even with "
                       "the real driver loaded. Build NCCL with the default static runtime, link NCCL shared "
                       "(HOROVOD_NCCL_LINK=SHARED), or use NCCL's own packages.",
                alts=[("other", "if LD_LIBRARY_PATH (or ldconfig) lists a CUDA 'stubs' directory, the process really "
                                "loaded the toolkit's stub libcuda.so: remove it from the path")]))
        else:
            out.append(cand("LOG081", "other", 3, stub, params={"what": "the process loaded the CUDA toolkit's stub "
                                                                        "libcuda.so instead of the driver's"},
                            detail="libcuda.so under the toolkit's lib64/stubs exists to link against; a process that "
                                   "loads it at run time has no driver. Remove the stubs directory from LD_LIBRARY_PATH "
                                   "(and ldconfig), or in a container, mount the host's driver (NVIDIA Container "
                                   "Toolkit, --gpus)."))
    if nobin:
        out.append(cand("LOG081", "other", 2, nobin, params={"what": "the build has no code for this GPU's architecture"},
                        detail="HIP found no code object for this GPU's architecture (gfx...) in the program or in RCCL: "
                               "the package was built for other GPUs. `rocminfo | grep gfx` names the GPU's; use a build "
                               "that lists it (RCCL: -DGPU_TARGETS=gfx906; torch: PYTORCH_ROCM_ARCH), or, for a close "
                               "architecture only, HSA_OVERRIDE_GFX_VERSION.",
                        alts=[("nccl_internal_bug", "if only RCCL's kernels are missing, an RCCL release that still "
                                                    "builds for this GPU")]))
    if init:
        out.append(cand("LOG081", "other", 5, init, params={"what": "CUDA could not initialise in this process"},
                        detail="cudaErrorInitializationError: the CUDA driver could not start in this process. It is the "
                               "process's environment, not NCCL: a child forked after its parent used CUDA (start "
                               "workers with 'spawn'), a remote launcher that did not pass the CUDA environment "
                               "(PATH, LD_LIBRARY_PATH, CUDA_* variables) to the workers, or device files missing in a "
                               "container.",
                        alts=[("launcher_misconfig", "if only the workers a multi-node launcher started fail (pdsh/ssh: "
                                                     "DeepSpeed passes only what .deepspeed_env lists), export the CUDA "
                                                     "environment to them"),
                              ("driver_cuda_mismatch", "if nvidia-smi fails too, the driver and its user-space "
                                                       "libraries disagree (a driver update without a reboot)")]))
    if noimg:
        said = _NO_KERNEL_IMAGE.search(noimg[0].ev.text)
        out.append(cand("LOG085", "nccl_internal_bug", 2, noimg, params={"what": said.group(0) if said else "no kernel image"}, alts=[
            ("driver_cuda_mismatch", "if the build does list this GPU's sm_XX, a driver older than the CUDA the build "
                                     "targets fails kernel loading too: compare nvidia-smi's CUDA version with the "
                                     "'+cudaX.Y' of NCCL's version line")]))
    if nvls:
        out.append(cand("LOG033", "fabric_manager_nvls", 1, nvls, alts=[
            ("hardware_fault", "if the fabric manager reports healthy and `nvidia-smi -q` shows Xid errors, a GPU or NVSwitch "
                               "is failing; NCCL_NVLS_ENABLE=0 working only avoids the path"),
            ("driver_cuda_mismatch", "a driver older than the CUDA that NCCL was built for (nvidia-smi's CUDA version below "
                                     "the '+cudaX.Y' of NCCL's version line) fails the multicast calls with the same "
                                     "error while the fabric manager is healthy")]))
    if unknown:
        out.append(cand("LOG037", "hardware_fault", 5, unknown, params={"what": "CUDA reported an unknown error (999)"}, alts=[
            ("fabric_manager_nvls", "on NVSwitch systems error 999 often follows a fabric manager restart without a GPU reset")]))
    # nccl-tests ("Test CUDA failure common.cu:N '...'") runs no kernels of its own beyond filling and checking its
    # buffers: a GPU memory fault while it runs collectives is NCCL's kernels faulting on this GPU, transport and size
    # (NVIDIA/nccl#2418: 2.26.2 on RTX PRO 6000 at 512 KiB over SHM, gone with 2.31.2).
    tests_ran = bool(hits(m, "nccl_tests_row") or hits(m, "nccl_tests_header"))
    faults = [h for h in rest if _GPU_FAULT.search(h.ev.text) and ("Test CUDA failure" in h.ev.text or tests_ran)]
    if faults:
        rest = [h for h in rest if h not in faults]
        out.append(cand("LOG070", "nccl_internal_bug", 4, faults, params={
            "what": "its kernels faulted on GPU memory while nccl-tests ran its collectives"},
            detail="nccl-tests launches no kernels of its own beyond filling and checking its buffers, so a GPU memory "
                   "fault during its collectives comes from NCCL's kernels for this GPU, transport and size. Run a newer "
                   "NCCL (LD_PRELOAD or LD_LIBRARY_PATH is enough to compare); NCCL_PROTO / NCCL_ALGO narrow down which "
                   "kernel it is.",
            alts=[("hardware_fault", "if other NCCL releases fault the same way on this GPU only, its memory "
                                     "(nvidia-smi -q ECC and retired pages, Xid 48/63/64 in dmesg)")]))
    # cudaErrorInvalidValue (1) 'invalid argument' from a CUDA call NCCL itself made (its WARN "Cuda failure 1 'invalid
    # argument'", or torch's "Last error:" under ncclUnhandledCudaError), outside NVLS (read above): NCCL asked CUDA for
    # something this system refuses. In the threads that settled it this was NCCL's own bug, fixed in a later
    # release (NVIDIA/nccl#957 in 2.18, the launch in enqueue.cc of 2.25.1: NVIDIA/TensorRT-LLM#4238).
    # The P2P transport's (p2p.cc) are its IPC handles refused between processes, not this.
    heads = {(u.ev.source, u.ev.line) for u in hits(m, "nccl_unhandled_cuda") if u.ev.line is not None}
    own_arg = [h for h in rest if "invalid argument" in h.ev.text and _said_by_nccl(h, heads)
               and not _rec_file(h).endswith("p2p.cc")]
    if own_arg:
        rest = [h for h in rest if h not in own_arg]
        out.append(cand("LOG070", "nccl_internal_bug", 5, own_arg, params={
            "what": "a CUDA call NCCL made was refused as an invalid argument"},
            detail="NCCL passed CUDA an argument this GPU, driver or buffer refuses. Where public threads settled "
                   "it, it was a bug of that NCCL release, gone in a later one (2.18.1-2.18.3, 2.25.1): run a newer "
                   "NCCL (LD_PRELOAD or LD_LIBRARY_PATH is enough to compare) and NCCL_DEBUG=INFO for the call's file.",
            alts=[("driver_cuda_mismatch", "a driver older than the CUDA NCCL was built for (nvidia-smi's CUDA "
                                           "version below the '+cudaX.Y' of NCCL's version line) refuses newer calls"),
                  ("other", "a buffer CUDA cannot share (memory from another allocator, expandable segments, another "
                            "device's) refused when NCCL registers or exports it")]))
    if rest:
        words = (group(rest, "what", "what2", "what3", "what4", "what5", "what6", "what7", "what9") or "").strip(" '.")
        if not words and group(rest, "what8"):
            words = "GPU memory access fault: " + str(group(rest, "what8")).strip(" '.")
        out.append(cand("LOG081", "other", 5, rest, params={"what": f"'{words}'" if words else "see the evidence"}))
    return out


def _fm_down(m: Any, hs: list[Any], found: list[Cand]) -> list[Cand]:
    """The fabric manager service is not running. systemd's 'Active: failed|inactive' line names no unit, so it
    counts only when the nearest unit header above it (a few lines up, same file) is nvidia-fabricmanager.service."""
    heads = hits(m, "systemd_unit_header")
    keep = []
    for h in hs:
        if h.groups.get("active") is None:
            keep.append(h)
            continue
        above = [u for u in heads if u.ev.source == h.ev.source and 0 < h.ev.line - u.ev.line <= 6]
        if above and max(above, key=lambda u: u.ev.line).groups.get("unit") == "nvidia-fabricmanager":
            keep.append(h)
    return [cand("LOG033", "fabric_manager_nvls", 1, keep)] if keep else []


def _memlock(m: Any, hs: list[Any], found: list[Cand]) -> list[Cand]:
    """RDMA ran out of locked memory; ``ulimit -a`` printing 64 kB or less says why even without the failure."""
    lim = [h for h in hits(m, "memlock_limit") if (h.groups.get("kb") or "").isdigit() and len(h.groups["kb"].lstrip("0")) <= 5 and int(h.groups["kb"]) <= 65536]
    if hs:
        return [cand("LOG035", "rlimit_memlock", 1, hs + lim, n=4)]
    return [cand("LOG035", "rlimit_memlock", 3, lim)] if lim else []


def _conn_lost(m: Any, hs: list[Any], found: list[Cand]) -> list[Cand]:
    """Closed connections: the echo of a failure elsewhere, unless they happen while NCCL bootstraps and nothing else explains them."""
    flush = [h for h in hits(m, "ib_completion") if h.groups.get("code") == "5"]
    h = not_remote_alloc(m, hs) or flush
    if not h:
        return []
    in_bootstrap = any("bootstrap" in f for h_ in h for f in trace_files(m, h_.ev.host)) or any("ootstrap" in x.ev.text for x in h)
    if in_bootstrap and not any(c.tier <= 5 for c in found):
        return [cand("LOG022", "wrong_interface", 6, h, params={"how": "closed during NCCL's bootstrap"},
                     detail="Connections closed while ranks were still exchanging addresses. A rank that "
                            "advertised an address every host has (docker0's 172.17.0.1, loopback) makes its "
                            "peers connect to the wrong process, which closes the connection.",
                     alts=[("peer_process_died", "if a peer failed during init (out of memory, a crash), its own "
                                                 "error comes first in its log: this is then only the echo")])]
    return [cand("LOG061", "peer_process_died", 6, h, consequence=True, alts=[
        ("hardware_fault", "a failing link or NIC (InfiniBand port errors, resets between healthy processes) looks "
                           "the same from here: if no peer reports dying, check the fabric between the two hosts")])]


_SYSTEM_ERR = re.compile(r"ncclSystemError|unhandled system error")


def _bad_interfaces(m: Any, found: list[Cand], _unused: list[Cand]) -> list[Cand]:
    """Interfaces NCCL chose that other hosts cannot reach (loopback, link-local, bridges); a risk until connections fail."""
    failing_net = any(c.code in ("LOG022", "LOG025", "LOG061", "LOG011", "LOG051", "LOG053", "LOG054") for c in found)
    # NCCL's result for a failed system call (a socket connect or send among them) with nothing else explaining it:
    # over the Socket transport, which spreads data over every interface NET/Socket lists, a bridge or veth among
    # them is where the socket calls fail (NVIDIA/nccl#697: a dozen docker bridges, fixed by NCCL_SOCKET_IFNAME).
    failing_net = failing_net or any(_SYSTEM_ERR.search(ev.text) for ev, _seq, _k in m.unmatched_errors)
    bad: list[tuple[str, str, Any]] = []
    seen: set[tuple[str, str, Any]] = set()
    one_node = single_node(m)
    for hi in m.hosts.values():
        if hi.name == one_node:
            continue  # every rank on this one host: no connection leaves it, whatever interface is listed
        first_boot = next(iter(hi.bootstrap.items()), None)
        # NET/Socket lists every interface it could use; they carry data only when the network is Socket.
        socket_data = not hi.network or any("Socket" in n for n in hi.network)
        items = (list(hi.net_socket.items()) if socket_data else []) + ([first_boot] if first_boot else [])
        for item, ev in items:
            name, _, addr = item.partition(":")
            prob = addr_problem(name, addr)
            if prob and (item, prob, ev.host) not in seen:  # per host, not per rank
                seen.add((item, prob, ev.host))
                bad.append((item, prob, ev))
    if not bad:
        return []
    desc = "; ".join(dict.fromkeys(f"{i} is {p}" for i, p, _ in bad[:3]))
    return [Cand("LOG020", "wrong_interface", 2 if failing_net else 7, 0 if failing_net else 10**9,
                 [e for _, _, e in bad[:3]], params={"what": desc}, weak=not failing_net,
                 hosts={e.host for _, _, e in bad if e.host})]


def _dup_hostnames(m: Any, found: list[Cand], _unused: list[Cand]) -> list[Cand]:
    """One host name whose processes bootstrap from different routable addresses: several machines share the name."""
    for host, hi in m.hosts.items():
        boot = {i.partition(":")[2].split("%")[0] for i in hi.bootstrap}
        boot = {a for a in boot if a and not addr_problem("", a)}
        if len(boot) > 1 and len(hi.pids) > 1:
            return [Cand("LOG014", "hostname_resolution", 2, 0, list(hi.bootstrap.values())[:2],
                         params={"host": host, "addrs": ", ".join(sorted(boot)[:4])}, hosts={host})]
    return []


def _subnets(m: Any, found: list[Cand], _unused: list[Cand]) -> list[Cand]:
    """Hosts that bootstrap from addresses in different /16 networks: a risk, not a failure."""
    subnets: dict[str, Any] = {}
    for hi in m.hosts.values():
        for item, ev in list(hi.bootstrap.items())[:1]:
            a = item.partition(":")[2].split("%")[0]
            try:
                ip = ipaddress.ip_address(a)
            except ValueError:
                continue
            if ip.version == 4 and not ip.is_loopback and not ip.is_link_local:
                subnets.setdefault(str(ipaddress.ip_network(f"{a}/16", strict=False)), ev)
    if len(subnets) < 2:
        return []
    return [Cand("LOG024", "wrong_interface", 8, 10**9, list(subnets.values())[:4], weak=True,
                 params={"nets": ", ".join(sorted(subnets))})]


#: NCCL's own socket layer (misc/socket.cc): "socketStartConnect: Connect to ADDR<PORT> failed : ...", "Call to
#: connect returned ...", "socketPollConnect: connect ...".
_NCCL_SOCKET = re.compile(r"socket(?:Start|Poll|Finalize)?Connect|NCCL (?:WARN|INFO)|Call to connect")


_LOOPBACK_BOTH_ENDS = re.compile(r"SocketImpl\(fd=-?\d{1,9}, addr=\[(?:localhost|127\.[\d.]{3,11}|::1)\]:\d{1,5}, "
                                 r"remote=\[(?:localhost|127\.[\d.]{3,11}|::1)\]")


def _connect_loopback(m: Any, hs: list[Any], found: list[Cand]) -> list[Cand]:
    """A connection made to a loopback address of a peer. gloo and torch advertise what the host name resolves to
    (127.0.1.1 from /etc/hosts: name resolution); NCCL advertises an interface's address and takes loopback only when
    NCCL_SOCKET_IFNAME names lo or it finds no other interface: the interface choice."""
    # torch's established sockets print both ends ("sendBytes failed on SocketImpl(fd=3, addr=[localhost]:51234,
    # remote=[localhost]:29500): Broken pipe"): a socket with loopback at both ends connected within one host, so the
    # address worked; what failed is the peer at the other end (its process is gone).
    hs = [h for h in hs if not _LOOPBACK_BOTH_ENDS.search(h.ev.text)]
    nccl = [h for h in hs if _NCCL_SOCKET.search(h.ev.text)]
    rest = [h for h in hs if h not in nccl]
    out = []
    if nccl:
        addr = group(nccl, "addr") or "127.0.0.1"
        out.append(cand("LOG022", "wrong_interface", 1, nccl, params={
            "how": f"made to {addr}, a loopback address NCCL advertised for a peer"},
            detail="NCCL advertises the address of the interface it picked; it takes loopback only when "
                   "NCCL_SOCKET_IFNAME names lo (or a prefix matching it) or the rank sees no other interface (a "
                   "container without its network). Peers on other hosts cannot reach it: name the routable "
                   "interface (NCCL_SOCKET_IFNAME=eth0, ens, enp...).",
            alts=[("hostname_resolution", "if the launcher or the store handed out the loopback address (MASTER_ADDR "
                                          "resolving to 127.x), fix the name instead")]))
    if rest:
        out.append(own_reading(rest))
    return out


def _ray_small_shm(m: Any, hs: list[Any], found: list[Cand]) -> list[Cand]:
    """/dev/shm under 512 MiB, as Ray measured it: a weak reading (a risk until the job shows it failed)."""
    small = [h for h in hs if int(h.groups.get("bytes") or 0) < 512 << 20]
    if not small:
        return []
    mb = int(small[0].groups.get("bytes") or 0) / (1 << 20)
    c = cand("LOG030", "shm_too_small", 6, small,
             detail=f"Ray measured /dev/shm at {mb:.0f} MB on this machine"
                    + (" (docker's default without --shm-size or --ipc=host)" if round(mb) == 64 else "")
                    + ". NCCL's shared-memory transport between the GPUs of one host allocates its buffers there; "
                      "with several GPUs it runs out (ncclShmOpen fails, or a process dies with SIGBUS).")
    c.weak = True
    return [c]


def _heap_corruption(m: Any, hs: list[Any], found: list[Cand]) -> list[Cand]:
    """A corrupted heap in a process that runs NCCL (its version line or its own lines are in the logs): a defect of
    the native library doing the communication, or two builds of it in one process. Without NCCL in view the lines
    are left to the unrecognised-failure finding: nothing says whose code it was."""
    if not m.versions and not m.hits.get("lib_nccl"):
        return []
    ver = ", ".join(sorted(m.versions)[:2])
    c = cand("LOG070", "nccl_internal_bug", 4, hs, params={
        "what": f"the process aborted on a corrupted heap ({hs[0].ev.text.strip()[:80]})" + (f", NCCL {ver}" if ver else "")},
        detail="glibc's allocator found its own bookkeeping overwritten and aborted the process: native code wrote "
               "outside its memory. In a communication job the usual culprit is the communication library itself: an "
               "NCCL release with a defect, or one older than the GPUs or the platform it runs on (each GPU generation "
               "needs a release that knows it). Try the newest NCCL release.",
        alts=[("version_mismatch", "two builds of one library in a process (a pip NCCL beside a system one, picked by "
                                   "LD_LIBRARY_PATH or LD_PRELOAD) corrupt each other's memory: check which libnccl is loaded"),
              ("other", "a CUDA/C++ extension of the program itself corrupts the heap the same way: run it under "
                        "compute-sanitizer or with MALLOC_CHECK_=3 to find the writer")])
    c.evidence.extend(m.versions[v] for v in sorted(m.versions)[:1])
    return [c]


def _nvsmi_fabric_state(m: Any, hs: list[Any], found: list[Cand]) -> list[Cand]:
    """A Fabric "State" of nvidia-smi -q that is not Completed, under the Fabric head (other sections have no such
    field, but a "State" line elsewhere is not this)."""
    under = lines_under(m, "nvsmi_fabric_state", hits(m, "nvsmi_fabric_head"), 3)
    if not under:
        return []
    state = group(under, "state")
    return [cand("LOG033", "fabric_manager_nvls", 1, under,
                 detail=f"nvidia-smi -q reports the GPU's fabric state '{state}': its registration with the NVSwitch "
                        "fabric (done by nvidia-fabricmanager) has not completed, so CUDA work that needs NVLink across "
                        "the switches cannot start. Check `systemctl status nvidia-fabricmanager` (running, and the "
                        "same version as the driver); a fabric manager restarted under running GPUs needs a GPU reset.")]


#: Codes of failures between processes over the network, which no setting between GPUs of one host explains.
_NETWORK_FAILURES = frozenset({"LOG011", "LOG012", "LOG020", "LOG021", "LOG022", "LOG025", "LOG036", "LOG061"})


def _network_failed(found: list[Cand]) -> bool:
    return any(c.code in _NETWORK_FAILURES and not c.weak for c in found)


def _rccl_iommu(m: Any, hs: list[Any], found: list[Cand]) -> list[Cand]:
    """RCCL's warning that the kernel runs without iommu=pt: the cause when the job hung or failed, else a risk.

    The IOMMU stands between GPUs of one host: connections between processes closed, reset or refused over the
    network (LOG061, LOG011, the interface and RDMA readings) are no peer-to-peer stall, and the warning is then only
    what every job on that host prints."""
    failing = job_failed(m, found) and not _network_failed(found)
    c = cand("LOG038", "p2p_acs_iommu", 3 if failing else 7, hs, weak=not failing,
             params={"what": f"the kernel runs without {group(hs, 'opt') or 'iommu=pt'}, so GPU peer traffic goes "
                             "through IOMMU translation (RCCL warns it can hang)"},
             detail="On AMD GPUs RCCL needs the IOMMU in passthrough mode (iommu=pt on the kernel command line; "
                    "amd_iommu=on with it on some boards). Without it peer-to-peer copies between GPUs can stall: a "
                    "hang that NCCL_P2P_DISABLE=1 makes go away is this.",
             alts=[("p2p_driver_bug", "if iommu=pt is set and the hang stays, the GPU driver's peer-to-peer support "
                                      "is next: a newer amdgpu/ROCm release")])
    return [c]


def _rccl_fine_grain(m: Any, hs: list[Any], found: list[Cand]) -> list[Cand]:
    """RCCL's warning that HSA_FORCE_FINE_GRAIN_PCIE=1 is not set: a cause when the job hung or failed, else a risk."""
    # A hang or a failure nothing more specific explains: a job that failed of something else only printed it.
    hung = bool(m.watchdog) or any(c.cause == "collective_timeout_straggler" for c in found)
    other = any(c.tier <= 4 and not c.weak and c.cause != "collective_timeout_straggler" for c in found) \
        or _network_failed(found)
    failing = (hung or bool(m.unmatched_errors)) and not other
    return [cand("LOG111", "other", 6 if failing else 7, hs, weak=not failing,
                 detail="RCCL asks the ROCm runtime for fine-grained (coherent) memory over PCIe so that a GPU sees "
                        "its peer's writes as they land; its low-latency protocol waits on such flags. Without "
                        "HSA_FORCE_FINE_GRAIN_PCIE=1 in the environment of every rank, GPUs that talk over PCIe (not "
                        "xGMI) can wait forever on a flag already written: a hang with no error.",
                 alts=[("p2p_acs_iommu", "RCCL's other start-up warning, a kernel without iommu=pt, hangs peer traffic "
                                         "too: set both")])]


def _nvls_bind_last(m: Any, found: list[Cand], _unused: list[Cand]) -> list[Cand]:
    """NCCL's last words in a log are its NVLS multicast bind, and nothing failed or finished.

    transport/nvls.cc logs "NVLS Bind mem %p UC handle ... MC handle ... size %zu" once cuMulticastBindMem returned; the
    next steps map that memory and connect NVLS. A log that stops there, with no error and no end, is a job hung in
    NVLink SHARP setup: the NVSwitch fabric (fabric manager) side (NVIDIA/nccl-tests#216: NCCL_NVLS_ENABLE=0 ran)."""
    hs = hits(m, "nvls_bind")
    last = [h for h in hs if m.last_ok.get(h.ev.source) == h.ev.line]
    if not last or completed(m) or any(c.cause and not c.weak for c in found) or m.unmatched_errors:
        return []
    return [cand("LOG033", "fabric_manager_nvls", 6, last[:2],
                 detail="NCCL's last line is its NVLink SHARP (NVLS) multicast bind: the job stopped while setting up "
                        "NVLS, which runs through the NVSwitch fabric. Check nvidia-fabricmanager and the GPUs' fabric "
                        "state; NCCL_NVLS_ENABLE=0 avoids the path until it is fixed.",
                 alts=[("nccl_internal_bug", "NCCL releases with NVLS setup defects hang the same way on a healthy "
                                             "fabric: try another NCCL")])]


def _gdr_no_module(m: Any, found: list[Cand], _unused: list[Cand]) -> list[Cand]:
    """NCCL found no GPU peer-memory module, so its InfiniBand/RoCE transport stages GPU data through host memory.

    transport/net_ib (NCCL <= 2.12: "NET/IB : GPU Direct RDMA Disabled for HCA %d '%s' (no module)") checks for
    /sys/kernel/mm/memory_peers/nv_mem/version, .../nv_mem_nc/version or /sys/module/nvidia_peermem/version; a post
    often shows the check failing by hand ("cat: /sys/kernel/mm/memory_peers/nv_mem/version: No such file"). The job
    runs, slower: a risk and the reason for low bandwidth, never a failure's cause (NVIDIA/nccl#1939: nvidia_peermem
    in lsmod but never registered with the OFED stack of a newer kernel)."""
    # NCCL's socket transport prints the same words for every NIC it lists (2.28: "NET/Socket : GPU Direct RDMA
    # Disabled for HCA 0 'eth0'"): sockets never carry GPU memory directly, no module is missing.
    hs = [h for h in hits(m, "gdr_no_module") if "NET/Socket" not in h.ev.text] + hits(m, "peer_memory_missing")
    if not hs:
        return []
    hca = group(hs, "hca")
    return [Cand("LOG101", "other", 7, 10**9, [h.ev for h in hs][:3], weak=True,
                 params={"what": f"HCA {hca}" if hca else "this node's HCAs"},
                 detail="NCCL looks for a GPU peer-memory client before it lets the NIC read and write GPU memory: "
                        "nvidia_peermem (or the older nv_peer_mem) registered with the RDMA stack, or DMA-BUF. Without "
                        "it every transfer is staged through host memory. lsmod showing nvidia_peermem is not enough: "
                        "it must be built for the running kernel and the installed MLNX_OFED/DOCA (the files under "
                        "/sys/kernel/mm/memory_peers/ or /sys/module/nvidia_peermem/ exist).",
                 alts=[("p2p_acs_iommu", "where the module is there, ACS/IOMMU on the PCIe path makes NCCL or the NIC "
                                         "avoid GPUDirect: NCCL_NET_GDR_LEVEL and lspci -vvv | grep ACSCtl")])]


def _pcie_topology(m: Any, found: list[Cand], _unused: list[Cand]) -> list[Cand]:
    """GPUs joined only through PCIe (no NVLink): where ACS/IOMMU can block peer traffic; a risk, not a failure."""
    pcie = {k for k in m.topology if k in ("PIX", "PXB", "PHB", "NODE")}
    if not pcie or "NV" in m.topology:
        return []
    return [Cand("LOG038", "p2p_acs_iommu", 7, 10**9, [m.topology[k] for k in sorted(pcie)][:3], weak=True,
                 params={"what": f"GPUs talk over PCIe ({', '.join(sorted(pcie))}) where ACS/IOMMU can block peer traffic"},
                 detail="The topology shows GPU pairs joined only through PCIe switches or host bridges. A hang or "
                        "corruption between exactly those pairs, gone with NCCL_P2P_DISABLE=1, is the ACS/IOMMU signature.",
                 alts=[("p2p_driver_bug", "consumer GPUs whose driver claims P2P support they lack fail the same way; "
                                          "`nvidia-smi topo -p2p r` and a driver update tell them apart")])]


def _not_listened_after(m: Any, hs: list[Any]) -> list[Any]:
    """HS less the binds of a port torch then listened on after all ("The server socket has started to listen on ..."
    follows a failed address when another address of the port worked)."""
    got = {h.groups.get("port") for h in m.hits.get("store_listening", [])}
    return [h for h in hs if not (h.groups.get("port") and h.groups.get("port") in got)]


def _port_in_use(m: Any, hs: list[Any], found: list[Cand]) -> list[Cand]:
    """A port some process could not bind, less the ports torch then listened on after all."""
    hs = _not_listened_after(m, hs)
    if not hs:
        return []
    return [cand("LOG010", "port_conflict", 1, hs, params={"port": group(hs, "port", "port2", "port3", "port4") or "(not named in the message)"},
                 consequence=out_of_fds(m, hs))]


def _bind_not_local(m: Any, hs: list[Any], found: list[Cand]) -> list[Cand]:
    """Which address could not be bound, and whose: the store's master address or a library binding the address this
    host's name resolves to (gloo without GLOO_SOCKET_IFNAME). torch's store tries each address of its port and logs
    each failure; one it listened on after all leaves nothing to report."""
    hs = _not_listened_after(m, hs)
    # torch's per-address warning counts only where the store then bound nothing at all (its summary line)
    failed = {h.ev.source for h in m.hits.get("store_listen_failed", [])}
    hs = [h for h in hs if not h.groups.get("addr") or h.ev.source in failed]
    if not hs:
        return []
    addr = group(hs, "addr")
    port = group(hs, "port", "port2")
    if group(hs, "gloo"):
        return [cand("LOG017", "hostname_resolution", 2, hs, params={
            "what": "the address this host's name resolves to (gloo's listening socket): it is not one of this host's"},
            detail="Without GLOO_SOCKET_IFNAME gloo listens on the address `hostname` resolves to. That address belongs "
                   "to no interface of this host: /etc/hosts (or DNS) maps the name to another machine's or an old "
                   "address. Fix the entry (getent hosts $(hostname) should print an address `ip addr` lists) or name "
                   "the interface: GLOO_SOCKET_IFNAME=<iface>.",
            alts=[("wrong_interface", "an interface whose address changed while the job started (DHCP) fails the same "
                                      "way: pin GLOO_SOCKET_IFNAME")])]
    what = (f"{addr}:{port}, which is not an address of this host" if addr else
            f"port {port or '?'} on an address that is not this host's" if not group(hs, "nccl") else
            "an address that is not this host's (NCCL_COMM_ID names another machine, or the interface's address "
            "changed)")
    return [cand("LOG017", "launcher_misconfig", 2, hs, params={"what": what},
                 alts=[("hostname_resolution", "if the master's host name is right, it resolves here to another "
                                               "machine's address: getent hosts <name> on this host")])]


def _gpu_busy(m: Any, hs: list[Any], found: list[Cand]) -> list[Cand]:
    """A GPU refused a context. nvidia-smi's process table beside it may show why: processes that each hold their own
    GPU and GPU 0 as well opened a context on the default device before choosing theirs. In EXCLUSIVE_PROCESS mode the
    second of them is refused (NVIDIA/nccl-tests#369: Open MPI's OFI transport initialising CUDA on device 0 in every
    rank; OMPI_MCA_mtl_ofi_disable_hmem=true avoided it)."""
    c = own_reading(hs)
    rows = hits(m, "smi_process_row")
    gpus: dict[str, set[str]] = {}
    for r in rows:
        gpus.setdefault(str(r.groups.get("pid")), set()).add(str(r.groups.get("gpu")))
    stray = sorted(pid for pid, g in gpus.items() if "0" in g and len(g) > 1)
    if len(stray) >= 2:
        c.params = {"what": f"{len(stray)} processes hold GPU 0 beside their own GPU (pids {', '.join(stray[:4])}"
                            f"{', ...' if len(stray) > 4 else ''}), so an exclusive-mode GPU 0 refused the others"}
        c.detail = ("Each of these processes opened a CUDA context on GPU 0, the default device, before (or besides) "
                    "the GPU it was given: something in the process touched CUDA before the rank chose its GPU. Usual "
                    "sources: the MPI library's GPU support initialising CUDA at MPI_Init (Open MPI's OFI transport: "
                    "OMPI_MCA_mtl_ofi_disable_hmem=true; UCX's cuda transports), a torch.cuda call before set_device, a "
                    "library importing on cuda:0. Set the device first (or CUDA_VISIBLE_DEVICES per rank), or keep "
                    "the GPUs in Default compute mode.")
        c.evidence = c.evidence + [r.ev for r in rows if str(r.groups.get("pid")) in stray[:2]][:2]
        c.alts = [("launcher_misconfig", "when the MPI library opened it (its CUDA support at MPI_Init), the launcher's "
                                         "MPI settings are what to change")] + list(c.alts)
    return [c]


_CXX_WHAT = re.compile(CXX_WHAT)
_NOT_COMM = ("No rule of the communication libraries (NCCL, gloo, torch.distributed, MPI, UCX), the launchers or the "
             "system reads these errors, and none of them is in a communication library's words: the failure is most "
             "likely the program's own (its code, framework, data or configuration), which the quoted first errors "
             "name. Communication errors that follow it are its echo.")


def _unrecognised(m: Any, found: list[Cand], _unused: list[Cand]) -> list[Cand]:
    """Errors no rule knows: never "healthy". Quote the first error of each rank (or file) that logged one."""
    told = {(x.source, x.line) for c in found for x in c.evidence}
    rest = [(ev, seq) for ev, seq, _k in m.unmatched_errors if (ev.source, ev.line) not in told]
    if not rest and not found:
        # The launcher reported a worker's failure ("failed (exitcode: 1) local_rank: 0") and nothing else in the logs
        # says what went wrong: the worker's own traceback was not captured. Still a failure, never "healthy".
        reports = [f.ev for f in m.elastic if f.ev is not None and (f.ev.source, f.ev.line) not in told]
        if reports:
            return [Cand("LOG080", None, 9, 0, reports[:3],
                         params={"what": "the launcher reports a worker that failed, and the worker's own error is not in "
                                         f"these logs: {reports[0].text[:160]}"})]
        # A Python traceback whose exception line was cut from what was posted: the process raised.
        tbs = getattr(m, "tracebacks", [])
        # The cut traceback stops in torch.cuda.set_device (the program's call of it, or torch's _cuda_setDevice
        # under it): what that raises in a launch is, above all, "invalid device ordinal" (more processes on the node
        # than GPUs, or a local rank from the wrong variable), as every thread in these sets with the line kept says.
        cut_at = [h for h in hits(m, "cuda_set_device_frame")
                  if any(h.ev.source == t.source and (h.ev.line or 0) > (t.line or 0) for t in tbs)]
        if cut_at:
            return [Cand("LOG062", "launcher_misconfig", 8, 0, [tbs[0], cut_at[-1].ev], weak=True,
                         ranks={e.rank for e in tbs if e.rank is not None},
                         params={"what": "a rank failed in torch.cuda.set_device and the error line is cut from these "
                                         "logs: in a launch that is a GPU index this node does not have"},
                         detail="torch.cuda.set_device raises 'invalid device ordinal' when a rank asks for a GPU the "
                                "node lacks: more processes per node than GPUs (--nproc-per-node, --ntasks-per-node, "
                                "CUDA_VISIBLE_DEVICES narrowing the GPUs), or a local rank taken from the wrong "
                                "variable. The error line under the traceback says which failure it was.",
                         alts=[("duplicate_gpu", "'busy or unavailable' there is a GPU in exclusive mode that another "
                                                 "rank holds"),
                               ("driver_cuda_mismatch", "'no CUDA GPUs are available' or a driver error there is the "
                                                        "driver or the container's GPU access")])]
        if tbs:
            who = sorted({e.rank for e in tbs if e.rank is not None})
            # Weak: a program may print a traceback and go on (a retry); when the logs show the job reached its end,
            # the traceback is a note (engine.settle).
            return [Cand("LOG080", None, 9, 0, tbs[:3], ranks=set(who), weak=True, params={
                "what": (f"rank(s) {', '.join(map(str, who))} raised" if who else "a process raised")
                        + ": a Python traceback whose exception line is not in these logs"})]
    if not rest or any(c.tier <= 6 and not c.weak for c in found):
        return []
    per: dict[Any, Any] = {}
    for ev, _seq in rest:
        key = ev.rank if ev.rank is not None else (ev.host, ev.source)
        per.setdefault(key, ev)
    evs = list(per.values())[:6]
    who = sorted({e.rank for e in evs if e.rank is not None})
    what = (f"first error of rank(s) {', '.join(map(str, who))}" if who else "first error")
    # Errors in the words of a communication library (NCCL, gloo, c10d, MPI, UCX, libfabric...) that no row reads carry
    # no cause: naming one would be a guess. Errors that name none of them, where every family's rows (each library's
    # own format strings) read nothing, are the program's own: cause "other", quoted so the reader sees which.
    # An exception the parser read (a bare "Exception:" with no message is torch.multiprocessing.spawn's header of a
    # child's error, as a launcher's report is) or a C++ exception's "what():" line.
    own = {(ev.source, ev.line) for typ, msg, ev, _s in m.exceptions
           if typ not in CHILD_REPORTS and (typ != "Exception" or msg.strip())}
    raised = any((ev.source, ev.line) in own or _CXX_WHAT.match(ev.text) for ev, _s in rest)
    comm = not raised or any(in_library_words(ev.text) for ev, _s in rest)
    return [Cand("LOG080", None if comm else "other", 9, rest[0][1], evs,
                 params={"what": f"{what}: {evs[0].text.strip()[:160]}"}, ranks=set(who),
                 hosts={e.host for e in evs if e.host}, detail="" if comm else _NOT_COMM)]


SIGNATURES = (
    # A traceback's source line calling torch.cuda.set_device ("    torch.cuda.set_device(local_rank)", torch's own
    # "    torch._C._cuda_setDevice(device)" under it): read by _unrecognised when the exception line is cut.
    ctx("cuda_set_device_frame", ("set_device(", "_cuda_setDevice("),
        r"^\s{0,16}(?:[\w.]{0,80}\.)?(?:set_device|_cuda_setDevice)\([^()]{0,120}\)\s*$",
        "a traceback line calling torch.cuda.set_device", harmless=True),
    # -- ports and names -------------------------------------------------------------------------
    # Other libraries' servers say it in their own words: asyncio's create_server (aiohttp; Ray's dashboard) "[Errno 98]
    # error while attempting to bind on address ('0.0.0.0', 8265): address already in use" (strerror lower-cased),
    # redis "Could not create server TCP listening socket *:6379: bind: Address already in use".
    sig("port_in_use", ("errno: 98", "Address already in use", "EADDRINUSE", "errno 98", "address already in use"),
       r"(?:(?:\[(?P<addr6>[^\]]{0,64})\]|(?<![\w.\-])(?P<addr>[\w.\-]{1,64})):(?P<port>\d{1,5}) \()?(?:errno:? 98|Address already in use|EADDRINUSE)"
       r"|error while attempting to bind on address \('(?P<addr2>[^']{0,64})', (?P<port2>\d{1,5})\): address already in use"
       r"|listening socket (?P<addr3>[\w.\-*]{1,64}):(?P<port3>\d{1,5}): bind: Address already in use"
       # TensorPipe (torch.distributed.rpc) checks libuv's results in words: "In listenFromLoop at
       # tensorpipe/transport/uv/uv.h:176 \"rv < 0: address already in use\"" (uv_strerror of UV_EADDRINUSE).
       r"|\brv < 0: address already in use"
       # torch's TCPStore (2.4 on, libuv and the classic server alike): "The server socket has failed to listen on any
       # local network address. port: 29807, useIpv6: false, code: -98, name: EADDRINUSE, message: address already in use"
       r"|port: (?P<port4>\d{1,5}), useIpv6: \w{1,5}, code: -98\b",
       "port_conflict", ROOT, 1, "a listening port (rendezvous / TCPStore / master port) is already taken",
       code="LOG010", build=_port_in_use, exclude=("paddle_retry",),
       # socket.cpp logs each address it could not bind or listen on as a warning and gives up once every address
       # failed; the IPv6 wildcard socket is dual-stack, so errno 98 on it means the port is taken for IPv4 too.
       fails=True),
    # socket.cpp: "The server socket has failed to bind to {addr} (errno: {n} - {msg})." and, from torch 2.2, the
    # summary "... port: {port}, useIpv6: {b}, code: {-errno}, name: {NAME}, ...". EACCES on bind is not a port
    # in use: ports below 1024 need root (CAP_NET_BIND_SERVICE), so a master port like 98 can never be bound.
    sig("port_not_permitted", ("errno: 13", "EACCES"),
       r"failed to bind to (?:\[[^\]]{0,64}\]|[\w.\-]{1,64}):(?P<port>\d{1,5}) \(errno: 13\b"
       r"|port: (?P<port2>\d{1,5}), useIpv6: \w{1,5}, code: -13, name: EACCES",
       "launcher_misconfig", ROOT, 1, "the store's port may not be bound by this user: a port below 1024 needs root",
       code="LOG016", params=lambda hs: {"port": hs[0].groups.get("port") or hs[0].groups.get("port2") or "?"},
       fails=True),
    # EADDRNOTAVAIL (errno 99, "Cannot assign requested address") on bind: the address given to bind is not one of
    # this host's. torch's store (socket.cpp: "The server socket has failed to bind to {addr} (errno: 99 - Cannot assign
    # requested address)", or 2.2's "code: -99, name: EADDRNOTAVAIL"), gloo's listening socket (tcp/socket.cc "bind:
    # Cannot assign requested address": gloo binds the address its interface or this host's name resolves to) and
    # NCCL's (misc/socket.cc "socketBind"/"bind() failed"; with NCCL_COMM_ID rank 0 binds that address) all bind an
    # address they were told or looked up. The address names another machine: the master address (MASTER_ADDR, the
    # rendezvous endpoint, NCCL_COMM_ID) is not this host's while this process serves it, or this host's name resolves
    # to an address it does not have (/etc/hosts copied from another machine, a changed DHCP lease).
    sig("bind_not_local", ("errno: 99", "EADDRNOTAVAIL", "Cannot assign requested address", "cannot assign requested address"),
       r"failed to bind to (?P<addr>\[[^\]]{0,64}\]|[\w.\-]{1,64}):(?P<port>\d{1,5}) \(errno: 99\b"
       r"|port: (?P<port2>\d{1,5}), useIpv6: \w{1,5}, code: -99, name: EADDRNOTAVAIL"
       r"|(?P<gloo>gloo/transport/tcp/socket\.cc:\d{1,5}\] bind: Cannot assign requested address)"
       r"|(?P<nccl>socketBind\w{0,20}: .{0,80}Cannot assign requested address|bind\(\) failed: Cannot assign requested address)",
       "launcher_misconfig", ROOT, 2, "a process was told to listen on an address this host does not have",
       code="LOG017", build=_bind_not_local),
    # socket.cpp once no address of the port could be bound: "The server socket has failed to listen on any local network
    # address." (the per-address failures before it are warnings; one address failing while another works is normal,
    # e.g. ::1 where the loopback has no IPv6). Read by _bind_not_local.
    ctx("store_listen_failed", ("failed to listen on any local network address",),
        r"The server socket has failed to listen on any local network address",
        "torch's store could bind none of its port's addresses"),
    ctx("store_listening", ("has started to listen on",),
        r"The server socket has started to listen on (?:\[[^\]]{0,64}\]|[\w.\-]{1,64}):(?P<port>\d{1,5})",
        "torch's store socket listens on this port (socket.cpp, after any address that failed)"),
    # init_process_group's env:// rendezvous in a traceback (torch/distributed/rendezvous.py): read by _names.
    ctx("env_rendezvous_frame", ("_env_rendezvous_handler", "TCPStore(master_addr"),
        r"in _env_rendezvous_handler\b|TCPStore\(\s?master_addr\b",
        "a traceback through init_process_group's env:// rendezvous (MASTER_ADDR)"),
    sig("name_resolution", ("Name or service not known", "host not found", "gai error", "name resolution", "nodename nor servname",
                           "Unable to resolve hostname", "No address associated with hostname", "getaddrinfo"),
       r"Name or service not known|host not found|gai error:? ?-?\d*|[Tt]emporary failure in name resolution|nodename nor servname"
       r"|Unable to resolve hostname|No address associated with hostname|getaddrinfo\w* failed",
       "rendezvous_unreachable", ROOT, 2, "a host name could not be resolved",
       build=_names, exclude=("ipv6_lookup_note",)),
    # socket.cpp looks a store's name up once per family ("The {IPv6 |IPv4 |}network addresses of (host, port)
    # cannot be retrieved (gai error: ...)") and connects over whichever resolves: a name with no IPv6 address
    # fails the IPv6 lookup in every working job. Only the IPv4 (or family-less) line says the name is unknown.
    ctx("ipv6_lookup_note", ("IPv6 network addresses of",), r"The IPv6 network addresses of \((?P<host>[^,\s)]{1,255})",
        "torch found no IPv6 address for a name it then reached over IPv4 (harmless on its own)"),
    sig("gethostname_failed", ("gethostname",), r"gethostname\(\) failed",
        "hostname_resolution", ROOT, 2, "this host's own name could not be read", read_by="name_resolution"),
    # -- interfaces and connections -----------------------------------------------------------------
    # Google's GPUDirect-TCPX and TCPXO (FasTrak) NCCL plugins for GKE/GCE A3 VMs say the same of their control and
    # data NICs (NCCL_GPUDIRECTTCPX_CTRL_DEV / SOCKET_IFNAME, NCCL_FASTRAK_CTRL_DEV / IFNAME): "NET/GPUDirectTCPX : no
    # (ctrl) interface found", "NET/FasTrak <time>: No interfaces found for ctrl dev name eth0"; NCCL's IB transport
    # for its own socket side, "NET/IB : No IP interface found." (NCCL_IB's NCCL_SOCKET_IFNAME match).
    sig("ifname_missing", ("Unable to find address for", "no socket interface found", "No usable listening interface", "Unable to find interface",
                         "no interface found", "no device found", "no ctrl interface found", "No interfaces found",
                         "No IP interface found"),
       r"Unable to find address for:? ?(?P<iface>\S*)|[Nn]o socket interface found|No usable listening interface found|Unable to find interface\S* (?P<iface2>\S*)"
       r"|NET/Socket : no interface found|no device found (?:matching|after excluding) (?:exactly )?(?P<iface3>[^\s,]{1,64}),? verify NCCL_\w*IFNAME"
       r"|NET/GPUDirectTCPX ?: no (?:ctrl )?interface found"
       r"|NET/FasTrak [^\n]{0,60}?: No interfaces found(?: for ctrl dev name (?P<iface4>\S{1,40}))?|NET/IB : No IP interface found",
       "wrong_interface", ROOT, 1, "the interface named by GLOO_SOCKET_IFNAME / NCCL_SOCKET_IFNAME does not exist or has no address",
       code="LOG021", params=lambda hs: {"iface": group(hs, "iface", "iface2", "iface3", "iface4") or "the named interface"},
       exclude=("gloo_hostname_address",)),
    sig("connect_loopback", ("127.", "::1", "localhost"),
       r"(?:[Cc]onnect(?:ing)?(?: to)? \[?|remote=\[|remote address |to address )(?P<addr>127\.\d{1,3}\.\d{1,3}\.\d{1,3}|::1|localhost)\]?(?::|<| |$)",
       "hostname_resolution", ROOT, 1, "a peer advertised a loopback address, so others cannot reach it",
       code="LOG013", params=lambda hs: {"addr": group(hs, "addr") or "127.0.0.1"}, build=_connect_loopback,
       alts=[("wrong_interface", "if GLOO_SOCKET_IFNAME/NCCL_SOCKET_IFNAME=lo was set explicitly, the setting (not the "
                                 "resolver) chose loopback; `getent hosts $(hostname)` printing 127.x says it is the resolver")]),
    sig("connect_link_local", ("fe80:", "FE80:", "169.254."),
       r"(?:[Cc]onnect(?:ing)?(?: to)? \[?|remote=\[|remote address |to address )(?P<addr>[fF][eE]80:[0-9a-fA-F:]{0,40}(?:%[\w.\-]{1,32})?|169\.254\.\d{1,3}\.\d{1,3})\]?(?:<|:| |$)",
       "wrong_interface", ROOT, 1, "a rank connected to a link-local address, which only reaches hosts on the same link",
       code="LOG020", params=lambda hs: {"what": f"{group(hs, 'addr') or 'fe80::'} is link-local (valid on one link only)"},
       alts=[("hostname_resolution", "if the host name resolves to that link-local address (getent hosts), "
                                     "fix the name rather than the interface setting")]),
    ctx("nccl_connect_retry", ("returned Connection refused", "returned No route", "returned Connection timed out",
                               "returned Network is unreachable", "returned Host is unreachable"),
        r"(?:Call to connect|socketPollConnect: connect(?: to \S{1,300})?) returned (?P<err>Connection refused|No route to host"
        r"|Connection timed out|Network is unreachable|Host is unreachable)\S{0,40}?,? retrying(?: \((?P<n>\d{1,4})/\d{1,4}\))?",
        "NCCL retrying a connect to a peer (an INFO line; the failure when nothing after it completes)"),
    # NCCL's ipcsocket (2.18 on): ranks of one host pass cuMem handles to each other's proxy over an abstract Unix
    # socket named after the peer's rank and process ("UDS: Sending data over socket /tmp/nccl-socket-%d-%lx failed :
    # %s (%d)", "UDS: Receiving data over socket %s failed"). No interface or port is involved: the peer's proxy is
    # not listening, because the process exited or lives in another network namespace (abstract sockets are per
    # namespace: ranks NCCL counts as one host in separate containers).
    sig("uds_failed", ("UDS: ",),
       r"UDS: (?:Sending|Receiving) data over socket(?: (?P<path>\S{1,200}))? failed(?: : (?P<err>[A-Za-z][^\n(]{1,60}))?",
       "peer_process_died", CONSEQUENCE, 6, "NCCL could not reach another local rank's proxy over its Unix socket",
       code="LOG061", phase=PHASE_ECHOES,
       detail="NCCL passes GPU memory handles between the ranks of one host over Unix sockets. The other rank's proxy "
              "did not answer: that process exited (its own log says why), or the two ranks run in separate "
              "containers that NCCL takes for one host (the same host name) and cannot share these sockets.",
       alts=[("launcher_misconfig", "ranks of one host in separate containers or pods need one network namespace "
                                    "(--network=host, one pod), different host names, or NCCL_CUMEM_ENABLE=0")]),
    sig("peer_refused", ("Connection refused", "No route to host", "Network is unreachable", "Host is unreachable", "ECONNREFUSED", "EHOSTUNREACH",
                        "exceeded retries", "Software caused connection abort"),
       r"Connection refused|No route to host|Network is unreachable|Host is unreachable|ECONNREFUSED|EHOSTUNREACH"
       r"|(?:socketStartConnect|socketPollConnect): exceeded retries"
       r"|Connect to \S{1,300} failed : Software caused connection abort",
       "wrong_interface", ROOT, 3, "a connection to a peer or to the store was refused or had no route",
       build=_refused, exclude=("connect_loopback", "connect_link_local", "mpi_btl_tcp", "port_in_use", "hydra_connect",
                                "ucx_unreachable", "comm_id_invalid", "ssh_client", "uds_failed",
                                "xla_grpc_unreachable", "paddle_retry", "paddle_exchange_timeout")),
    sig("connect_timeout", ("timed out connecting", "Connection timed out", "connect timed out", "ETIMEDOUT", "exceeded timeouts"),
       r"timed out connecting|[Cc]onnection timed out|connect timed out|ETIMEDOUT|(?:socketStartConnect|socketPollConnect): exceeded timeouts",
       "firewall_or_port_blocked", ROOT, 4, "connections to a peer timed out (packets dropped on the way)",
       code="LOG025", exclude=("peer_refused", "connect_loopback", "connect_link_local", "ib_qp", "ssh_client",
                                "xla_grpc_unreachable"),
       alts=[("wrong_interface", "an address that is not routed (a docker bridge, a second NIC) times out the same way: check "
                                 "which interface each rank advertised")]),
    sig("conn_lost", ("closed by", "reset by peer", "Broken pipe", "remote process exited", "RemoteError", "Socket recv failed",
                     "EPIPE", "ECONNRESET", "Connection closed", "peer closed", "socketProgress", "Read error",
                     "connection abort", "Proxy Call to rank", "Connection was likely closed", "got 0 bytes", "Socket closed [",
                     "Socket unexpectedly closed [", "socket progress error"),
       r"Connection closed by (?:remote )?peer|[Cc]onnection reset by peer|Broken pipe|remote process exited|ncclRemoteError"
       r"|Socket recv failed|EPIPE|ECONNRESET|Connection closed|peer closed|Read error \[|[Cc]onnection abort"
       # gloo's tcp/pair.cc, a pair found closed when it is switched to sync mode: "Socket unexpectedly closed [addr]:port".
       # NCCL's net_socket.cc after a data socket's send or recv failed (misc/socket.cc names the call before it).
       r"|Proxy Call to rank \d+ failed|Connection was likely closed|[Ff]ailed to recv, got 0 bytes|Socket (?:unexpectedly )?closed \["
       r"|NET/Socket : socket progress error",
       "peer_process_died", CONSEQUENCE, 6, "a connection to a peer was closed or reset",
       build=_conn_lost, always=True, phase=PHASE_ECHOES, exclude=("peer_refused", "connect_link_local", "ssh_client")),
    # -- shared memory, GPU memory, driver, fabric ---------------------------------------------------
    # NCCL's shmutils.cc (os/linux.cc from 2.29), attaching to the segment a peer on this host created: "Error while attaching to shared memory
    # segment %s (size %ld), error: %s (%d)". The path and size come from the handle the peer sent; a real segment has a
    # size, so "(size 0)" (with a name cut short or unprintable) is a handle that never described a /dev/shm segment.
    # From 2.26 each rank decides alone whether its host buffers are cuMem allocations (the cuMem host-NUMA probe) or
    # /dev/shm files; ranks that decide differently read each other's cuMem handles as segment names
    # (NVIDIA/nccl#2190: the probe failed for GPUs of one NUMA node only). Not a /dev/shm too small.
    sig("shm_attach_no_segment", ("attaching to shared memory segment",),
       r"Error while attaching to shared memory segment .{0,300}\(size 0\)",
       "other", ROOT, 2, "a peer's handle for its shared host buffer named no /dev/shm segment (size 0)", code="LOG135",
       detail="NCCL found a segment of size 0 where a peer on this host should have created one: the peer shared its "
              "buffer as a cuMem allocation while this rank expected a /dev/shm file. From NCCL 2.26 each rank probes "
              "on its own whether the driver can allocate host memory on its NUMA node through cuMem; when the probe "
              "succeeds for some GPUs and fails for others (a CPU or NUMA layout the driver sees differently per node: "
              "`lscpu`, `numactl -H`), the ranks take different paths. NCCL_CUMEM_HOST_ENABLE=0 puts every rank on "
              "/dev/shm; `df -h /dev/shm` is not the problem here.",
       alts=[("nccl_internal_bug", "if every rank's NUMA node probes alike, NCCL's own handle exchange: a newer NCCL")]),
    sig("shm", ("posix_fallocate", "shared memory", "/dev/shm", "shm_open", "ShmOpen", "shm", "failed to extend"),
       r"posix_fallocate failed|[Ee]rror while creating shared memory segment|creating shared memory segment|shm_open\w* failed"
       r"|[Uu]nable to allocate shared memory|/dev/shm\S*.{0,80}(?:No space left|[Pp]ermission denied|too small|failed)"
       r"|ncclShmOpen|shm\.(?:cc|h):\d+ .{0,40}failed|failed to extend \S{0,200}shm\S{0,200} to \d+ bytes|Could not map \S{0,200}shm"
       r"|Error while attaching to shared memory segment|insufficient shared memory \(shm\)",
       "shm_too_small", ROOT, 1, "/dev/shm is too small, full or not writable",
       code="LOG030", exclude=("shm_attach_no_segment",)),
    # Launchers give the signal as a negative status: torchrun's "exitcode: -7", DeepSpeed's "exits with return code =
    # -7", Paddle's "error with exit code -7".
    sig("sigbus", ("Bus error", "SIGBUS", "Signal 7 ", "exitcode: -7", "exitcode  : -7", "bus error", "code = -7",
                   "exit code -7"),
       SIGBUS_DEATH,
       "shm_too_small", ROOT, 3, "a process died of SIGBUS: a shared-memory mapping could not be backed (/dev/shm full)",
       code="LOG030", exclude=("shm",), build=_sigbus,
       detail="A process died of SIGBUS (bus error, signal 7). Touching a shared-memory mapping that /dev/shm cannot "
              "back raises it: NCCL before 2.9 and torch's DataLoader workers map shared memory this way, and "
              "containers give /dev/shm 64 MB by default.",
       alts=[("hardware_fault", "with /dev/shm roomy (df -h /dev/shm), a SIGBUS from a file-backed mapping "
                                "on failing storage or memory is the other source: check dmesg")]),
    # The dynamic loader's own frames in a backtrace (glibc: dlopen -> dl_open_worker -> _dl_map_object ->
    # _dl_map_object_from_fd -> _dl_map_segments), with the file it maps when gdb shows it (name="/path/lib.so").
    # Read by _sigbus.
    ctx("dlopen_frame", ("_dl_map", "dl_open_worker", "dlopen"),
        r"\b(?:_dl_map_segments|_dl_map_object(?:_from_fd)?|dl_open_worker(?:_begin)?)\b(?:[^\n]{0,80}?name=\"(?P<lib>[^\"]{1,300})\")?"
        r"|\(dlopen\+0x|\bin dlopen \(",
        "a frame of the dynamic loader mapping a shared library"),
    # A crash's native backtrace, as the handlers that print one write it: UCX's ("Caught signal 11 (Segmentation
    # fault: ...)", "==== backtrace (tid: N) ====", " 3  /path/libnccl.so(+0x120057) [0x7ff1...]"), Open MPI's ("***
    # Process received signal ***", "[host:pid] [ 3] /path/libnccl.so.2(+0x...)[0x...]"), glibc's backtrace_symbols and
    # gdb's ("#3  0x... in ncclProxyService () from /path/libnccl.so.2"). Read through rules.base.crash_stacks.
    # (NVIDIA's training containers' handler heads its stack with "!!!!!!! Segfault encountered !!!!!!!".)
    ctx("crash_head", ("Caught signal", "Process received signal", "Segmentation fault", "SIGSEGV", "==== backtrace",
                       "Segfault encountered"),
        r"Caught signal \d{1,2} \(|\*\*\* Process received signal \*\*\*|Segmentation fault|\bSIGSEGV\b|==== backtrace"
        r"|!{3,10} Segfault encountered",
        "a process crashed and its signal handler prints where"),
    ctx("crash_frame", (".so(", ".so.", ") from "),
        r"^\s{0,12}(?:\[[^\]\s]{1,120}\] )?(?:\[ {0,2}\d{1,3}\]|#?\d{1,3})\s{1,8}"
        r"(?:0x[0-9a-fA-F]{1,16} in (?P<fn>[\w:~<>]{1,200}) \([^)]{0,200}\) from )?"
        r"(?P<lib>[^\s(]{0,240}?(?P<name>lib[\w+-]{1,60})\.so[\w.]{0,12})(?:\((?P<sym>[^)+\s]{0,200})\+0x[0-9a-fA-F]{1,16}\))?",
        "a frame of a native backtrace, in a shared library"),
    # UCX's own backtrace with debug information (ucs/debug/debug.c): " 1 0x000000000003ea99 ucp_dt_pack()
    # /opt/ucx-source/src/ucp/dt/dt.c:120". Read through rules.base.crash_stacks.
    ctx("crash_frame_fn", ("0x0000",),
        r"^\s{0,12}\d{1,3} {1,4}0x[0-9a-fA-F]{8,16} (?P<fn>[A-Za-z_][\w:~<>.]{0,200})\(\)",
        "a frame of UCX's backtrace, by function"),
    sig("enospc", ("Errno 28", "(28)", "unable to write to file </torch_"),
       r"\[Errno 28\] No space left on device|unable to write to file </torch_[^>]{0,200}>|No space left on device \(28\)",
       "shm_too_small", ROOT, 4, "a write failed with ENOSPC (no space left on device); in a training job that is most "
                                 "often /dev/shm",
       code="LOG030", exclude=("shm",),
       detail="A write failed with errno 28 (ENOSPC) and the line names no file system. torch's shared-memory tensors "
              "(DataLoader workers, torch.multiprocessing: files named /torch_<pid>_...) and Python's "
              "multiprocessing live in /dev/shm, which containers size at 64 MB unless started with --shm-size or "
              "--ipc=host.",
       alts=[("other", "if df -h shows a data, checkpoint or /tmp disk full instead of /dev/shm, free or move it")]),
    sig("cuda_oom", ("out of memory", "OutOfMemory", "CUDA calloc", "CUDA malloc", "CUDA host alloc", "MemoryAllocation",
                     "OUT_OF_MEMORY", "Out of memory error on GPU"),
       # vLLM's cumem allocator (csrc/cumem_allocator.cpp) prints the driver's string as "CUDA Error: %s at %s:%d".
       r"(?:Cuda|HIP) failure '?(?:\d+ )?'?out of memory|(?:CUDA|HIP) out of memory|(?:CUDA|HIP) [Ee]rror: out of memory|OutOfMemoryError"
       r"|hipErrorOutOfMemory"
       r"|Failed to CUDA (?:calloc|malloc|host alloc)|cudaErrorMemoryAllocation|CUDA_ERROR_OUT_OF_MEMORY|cuMem\w+.{0,40}out of memory"
       # Paddle's wording of the same (enforce.h "CUDA error(%d), %s.", cuda_allocator.cc's own report).
       r"|CUDA error\(2\), out of memory|Out of memory error on GPU \d{1,3}\. Cannot allocate"
       # A program's own check of a CUDA allocation, with CUDA's string for cudaErrorMemoryAllocation (2): NVIDIA's
       # samples' CUDA_RT_CALL 'ERROR: CUDA RT call "cudaMalloc(...)" in line N of file F failed with out of memory (2).'
       r"|\bcuda(?:Malloc|HostAlloc)\w{0,20}\(.{0,300}?\bfailed with out of memory\b",
       "cuda_oom", ROOT, 1, "GPU memory ran out",
       code="LOG031", exclude=("worker_pool_died",),  # Ray's OutOfMemoryError is the host's memory
       build=lambda m, hs, found: [own_reading(k)] if (k := not_remote_alloc(m, hs)) else [],
       params=lambda hs: {"what": "while NCCL allocated its buffers" if any(
           h.rec.kind == "nccl" or "NCCL" in h.ev.text or "Cuda failure" in h.ev.text for h in hs)
           else "in the program's own allocations (torch's allocator, not NCCL)" if any(
           "OutOfMemoryError" in h.ev.text or "CUDA out of memory" in h.ev.text or "HIP out of memory" in h.ev.text
           for h in hs) else "in the program's own allocations, not NCCL's"}),
    # torch_memory_saver (SGLang's and verl's pausable GPU memory: csrc/torch_memory_saver.cpp) reports a failed driver
    # call as "[torch_memory_saver.cpp] CUresult error  result=%d file=%s func=%s line=%d"; result 2 is
    # CUDA_ERROR_OUT_OF_MEMORY, cu_mem_create re-creating memory it had released (volcengine/verl#1431: the rollout
    # engine's share of the GPU set too high; the trainer's ranks then timed out in their collective).
    sig("memory_saver_oom", ("CUresult error",),
       r"CUresult error\s{1,4}result=2 file=\S{1,200} func=(?P<func>\w{1,60})",
       "cuda_oom", ROOT, 1, "GPU memory ran out when a paused engine took its memory back",
       code="LOG031", params=lambda hs: {"what": f"when torch_memory_saver's {group(hs, 'func') or 'allocation'} took "
                                                 "memory back (CUresult 2, CUDA_ERROR_OUT_OF_MEMORY)"},
       detail="A paused inference engine (SGLang or vLLM beside a trainer) gives its memory back to the driver and "
              "takes it again when it resumes; by then the trainer holds more. Lower the engine's share "
              "(gpu_memory_utilization, --mem-fraction-static) or free the trainer's cache before the engine resumes."),
    sig("driver_too_old", ("insufficient", "InsufficientDriver", "DRIVER_MISMATCH", "version mismatch", "too old", "no NVIDIA driver",
                          "forward compatibility", "unsupported display driver", "SystemDriverMismatch",
                          "Minimum requirement is", "PFN functions not found", "installed CUDA driver",
                          "communicate with the NVIDIA driver", "CUDA driver initialization failed",
                          "not supported prior to CUDA", "requires CUDA driver", "unsupported toolchain",
                          "CallRequiresNewerDriver", "UNSUPPORTED_PTX_VERSION", "Retrieve cu", "Driver Not Loaded",
                          "missing symbol cu"),
       # cudaGetErrorString(cudaErrorSystemDriverMismatch, 803): the user-mode driver (a container's cuda-compat
       # libcuda) does not match the kernel module (awslabs/awsome-distributed-ai#314, fixed by the compat package).
       r"driver version is insufficient for CUDA runtime|cudaErrorInsufficientDriver|CUDA_ERROR_SYSTEM_DRIVER_MISMATCH"
       r"|system has unsupported display driver / cuda driver combination|cudaErrorSystemDriverMismatch"
       r"|[Dd]river/library version mismatch|NVIDIA driver on your system is too old|[Ff]ound no NVIDIA driver"
       r"|forward compatibility was attempted on non supported HW"
       # NCCL's misc/cudawrap.cc (2.14 on): WARN("CUDA Driver version found is %d. Minimum requirement is %d") and, when
       # cuGetProcAddress lacks entry points this NCCL needs, "CUDA some PFN functions not found in the library"; its
       # CUDA-graph checks: "The installed CUDA driver is older than the minimum version (R465) required for NCCL's
       # CUDA Graphs support" (2.10-2.14) and "... or if the installed CUDA driver < R465" (2.18 on).
       r"|(?:CUDA|ROCr) Driver version found is \d{1,6}\. Minimum requirement is \d{1,6}|CUDA some PFN functions not found"
       r"|installed CUDA driver is older than the minimum version|installed CUDA driver < R\d{3}"
       # nvidia-smi with no kernel module to talk to; torch's cudaErrorNoDevice wording at CUDA init.
       r"|NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver"
       r"|CUDA driver initialization failed, you might not have a CUDA gpu"
       # NCCL's include/alloc.h (2.18 on) and enqueue.cc (2.29 on): features the driver's CUDA version lacks.
       r"|CUMEM (?:Host )?(?:is )?not supported prior to CUDA \d{2}\.\d|requires CUDA driver \d{2}\.\d or later"
       # cudaGetErrorString of cudaErrorCallRequiresNewerDriver (36) and cudaErrorUnsupportedPtxVersion (222): the
       # runtime asks the driver for an entry point it lacks, or the driver's JIT is older than the PTX's toolkit.
       r"|API call is not supported in the installed CUDA driver|cudaErrorCallRequiresNewerDriver"
       r"|provided PTX was compiled with an unsupported toolchain|cudaErrorUnsupportedPtxVersion|CUDA_ERROR_UNSUPPORTED_PTX_VERSION"
       # NCCL's misc/cudawrap.cc loading the driver's entry points it needs (cudaGetDriverEntryPoint[ByVersion]):
       # "Retrieve cuMemCreate failed with 0 status 2" (2.12 on; "Retrieve %s version %d failed ..." from 2.28 with
       # CUDA 13): the driver has no such symbol, or not at the version asked (status 1 not found, 2 version too low).
       r"|Retrieve cu\w{2,60}(?: version \d{1,6})? failed with -?\d{1,4}"
       # NVML's nvmlErrorString(NVML_ERROR_DRIVER_NOT_LOADED) as NCCL's misc/nvmlwrap.cc prints it ("nvmlInit_v2()
       # failed: Driver Not Loaded"): no NVIDIA kernel module. NCCL 2.14-2.18's cudawrap.cc found a libcuda without
       # the driver's first entry points ("Failed to load CUDA missing symbol cuInit"): not the driver's library.
       r"|nvml\w{2,40}\(\) failed: Driver Not Loaded|Failed to load CUDA missing symbol cu(?:Init|DriverGetVersion|GetProcAddress)\b",
       "driver_cuda_mismatch", ROOT, 1, "the NVIDIA driver is older than the CUDA runtime NCCL/torch were built with",
       code="LOG032", build=_driver_mismatch),
    # NCCL's transport/nvls.cc when cuMulticastBindMem fails: WARN("Failed to bind NVLink SHARP (NVLS) Multicast memory
    # of size %zu ... : CUDA error %d '%s'.\nThis is usually caused by a system or configuration error in the Fabric
    # Manager or NVSwitches. ..."): the message spans lines, so the CUDA error line alone does not say NVLS.
    sig("fabric_not_ready", ("not yet initialized", "SystemNotReady", "SYSTEM_NOT_READY", "failure 802", "abric", "ulticast",
                             "NVLink SHARP"),
       r"system not yet initialized|cudaErrorSystemNotReady|CUDA_ERROR_SYSTEM_NOT_READY|Cuda failure 802"
       r"|[Ff]abric ?[Mm]anager\w*.{0,60}(?:error|fail|not running|inactive)|NVLink fabric.{0,40}(?:not|fail)|cuMulticast\w* failed"
       r"|Failed to bind NVLink SHARP \(NVLS\) Multicast memory|configuration error in the Fabric Manager or NVSwitches",
       "fabric_manager_nvls", ROOT, 1, "the NVSwitch fabric is not ready (nvidia-fabricmanager missing, stopped or in error)",
       code="LOG033"),
    # The fabric manager's own output. nv-fabricmanager refuses to start when its interface version differs from
    # the loaded driver's ("fabric manager NVIDIA GPU driver interface version %s don't match with driver version %s.
    # Please update with matching NVIDIA driver package."; later "doesn't"); systemd then records the unit's exit
    # ("nvidia-fabricmanager.service: Control process exited, code=exited, status=1/FAILURE", "Failed with result
    # 'exit-code'", and in `systemctl status` the ExecStart line's "(code=exited, status=1/FAILURE)" and "Active: failed").
    # Without it NVSwitch systems cannot run CUDA across GPUs (802 'system not yet initialized', NVLS failures).
    ctx("systemd_unit_header", (".service - ",), r"^\W{0,4}(?P<unit>[\w@.\-]{1,100})\.service - ",
        "the header of a unit in `systemctl status` output"),
    # NCCL's transport/net_ib.cc (2.4-2.12) when no peer-memory module is found: "NET/IB : GPU Direct RDMA Disabled
    # for HCA %d '%s' (no module)"; graph/paths.cc's "GPU Direct RDMA Disabled for GPU %lx / HCA %d (distance %d > %d)"
    # is a topology choice (NCCL_NET_GDR_LEVEL), not this. The files NCCL checks, read by hand and missing. Read by
    # _gdr_no_module.
    ctx("gdr_no_module", ("GPU Direct RDMA Disabled for HCA",),
        r"GPU Direct RDMA Disabled for HCA (?P<dev>\d{1,3}) '(?P<hca>[^'\s]{1,64})'",
        "NCCL found no GPU peer-memory module for this HCA (GPUDirect RDMA off)"),
    ctx("peer_memory_missing", ("memory_peers/nv_mem", "nvidia_peermem/version"),
        r"(?:/sys/kernel/mm/memory_peers/nv_mem(?:_nc)?/version|/sys/module/nvidia_peermem/version): No such file",
        "the file that says a GPU peer-memory module is registered does not exist"),
    # transport/nvls.cc after cuMulticastBindMem: "NVLS Bind mem %p UC handle 0x%llx MC handle 0x%llx size %zu".
    # Read by _nvls_bind_last.
    ctx("nvls_bind", ("NVLS Bind mem",), r"NVLS Bind mem \S{1,40} UC handle",
        "NCCL bound GPU memory to an NVLS multicast object (a step of its NVLink SHARP setup)"),
    sig("fabric_manager_down", ("match with driver version", "nvidia-fabricmanager.service:", "nv-fabricmanager", "Active: "),
       r"GPU driver interface version \S{1,40} do(?:n't|esn't|n\u2019t) match with driver version"
       r"|nvidia-fabricmanager\.service: (?:(?:Main|Control) process exited, code=exited, status=[1-9]\d{0,2}/FAILURE"
       r"|Failed with result)"
       r"|ExecStart=\S{0,200}nv-fabricmanager\b[^\n]{0,300}\(code=exited, status=[1-9]\d{0,2}/FAILURE\)"
       r"|^\s{0,12}Active: (?P<active>failed|inactive \(dead\))",
       "fabric_manager_nvls", ROOT, 1, "the NVSwitch fabric manager service is not running (it failed to start or stopped)",
       code="LOG033", build=_fm_down,
       detail="nvidia-fabricmanager is not running. On NVSwitch systems (HGX/DGX A100, H100, H200) CUDA cannot use the "
              "GPUs together without it: CUDA fails with 802 'system not yet initialized', NCCL's NVLS setup fails or "
              "collectives hang. Its most common failure is a version differing from the driver's."),
    # The fabric manager's own log (/var/log/fabricmanager.log: "[Oct 31 2023 20:59:37] [ERROR] [tid 527118] ...") when
    # it cannot serve the NVLink SHARP (NVLS) multicast teams CUDA asks of it for NCCL ("failed to release multicast
    # team with handle %llu, cannot find the team", "failed to find the GPU handle %llu in the multicast team request
    # setup %llu") or reports its NVSwitches and NVLinks failing: the fabric is in a bad state (NVIDIA/nccl#1043, fixed
    # by resetting the node). Its [INFO] lines about the same teams are its ordinary traffic.
    # `nvidia-smi -q`'s "Fabric" section (NVML's GPU fabric info, Hopper and later on NVSwitch systems): "State" is
    # Not Supported / Not Started / In Progress / Completed. A GPU whose fabric registration has not completed cannot
    # run CUDA work that needs the NVLink fabric (cudaErrorSystemNotReady, "system not yet initialized"): the fabric
    # manager is not running, still starting, or stuck. Read only under the section's head.
    ctx("nvsmi_fabric_head", ("Fabric",), r"^\s{0,8}Fabric\s{0,4}$", "the Fabric section of nvidia-smi -q"),
    sig("nvsmi_fabric_state", ("In Progress", "Not Started"),
       r"^\s{0,16}State\s{0,40}: (?P<state>In Progress|Not Started)\s{0,4}$",
       "fabric_manager_nvls", ROOT, 1, "nvidia-smi shows a GPU whose NVSwitch fabric registration has not completed",
       code="LOG033", build=_nvsmi_fabric_state),
    # The driver (NVRM, in dmesg) refusing an NVLink multicast or fabric memory object with NV_ERR_FABRIC_STATE_OUT_OF_SYNC
    # (0x87, "NVLink fabric state cached by the driver is out of sync"): the fabric state the fabric manager gave the
    # driver is stale, so every NVLS/multicast mapping fails until the fabric is set up again (NVIDIA/nvshmem#40: NVLS
    # team set-up failing in cuMemMap on an H200 node; NVSHMEM_DISABLE_NVLS=1 went around it).
    sig("nvrm_fabric_out_of_sync", ("FABRIC_STATE_OUT_OF_SYNC", "fabric state cached by the driver is out of sync"),
       r"NV_ERR_FABRIC_STATE_OUT_OF_SYNC|NVLink fabric state cached by the driver is out of sync",
       "fabric_manager_nvls", ROOT, 1, "the GPU driver's copy of the NVLink fabric state is stale",
       code="LOG033",
       detail="The driver refused an NVLink multicast (NVLS) or fabric memory object because the fabric state it holds "
              "from nvidia-fabricmanager is out of date (a fabric manager restarted or a fabric event under running "
              "GPUs). Restart nvidia-fabricmanager and reset the GPUs (or reboot the node); NCCL_NVLS_ENABLE=0 or "
              "NVSHMEM_DISABLE_NVLS=1 only avoid the multicast path."),
    sig("fm_log_error", ("[ERROR] [tid ",),
       r"\[[A-Z][a-z]{2} \d{1,2} \d{4} \d{2}:\d{2}:\d{2}\] \[ERROR\] \[tid \d{1,10}\] (?P<what>[^\n]{0,200}?"
       r"(?:multicast team|NVSwitch|NVLink|[Tt]runk link|fabric)[^\n]{0,120})",
       "fabric_manager_nvls", ROOT, 1, "nvidia-fabricmanager logged an error about the NVSwitch fabric or its NVLS multicast teams",
       code="LOG033",
       detail="nvidia-fabricmanager itself reports an error serving the NVSwitch fabric (its NVLink SHARP multicast teams, "
              "which NCCL 2.17 and later use, or the switches and links). NCCL jobs on such a node hang or crash in NVLS "
              "setup. The fabric manager's guide asks for the GPUs to be reset when it restarts: reset or reboot the node; "
              "NCCL_NVLS_ENABLE=0 avoids the multicast path meanwhile."),
    # NCCL's mnnvl.cc: the GPUs report a multi-node NVLink clique (GB200 NVL72 and the like) but importing a peer's
    # memory over it failed: "MNNVL (cliqueSize %d) is available but not supported on this system. Check the IMEX
    # configuration." (2.26), "... but not working on this system. Check the IMEX configuration (nvidia-imex-ctl -N).
    # Set NCCL_MNNVL_ENABLE=0 to ignore this issue." (2.28), "... Check the IMEX channel configuration" (2.29 on);
    # init.cc (2.23) "MNNVL is not supported on this system" when NCCL_MNNVL_ENABLE=1 forced it. Memory is shared
    # across the NVLink domain through the IMEX service and its channels (/dev/nvidia-caps-imex-channels).
    sig("mnnvl_imex", ("MNNVL",),
       r"MNNVL \(cliqueSize (?P<n>\d{1,5})\) is available but not (?:supported|working) on this system"
       r"|MNNVL is not supported on this system",
       "fabric_manager_nvls", ROOT, 1, "the multi-node NVLink domain is there but IMEX does not share memory across it",
       code="LOG091"),
    # An RDMA port with no physical link, as the port tools print it: iproute2's `rdma link` ("link mlx5_7/1 ... state
    # DOWN physical_state POLLING"), ibstat ("Physical state: Polling"), ibv_devinfo ("phys_state: POLLING (2)") and
    # ibstatus ("phys state: 2: Polling"). Polling is the port training for a peer it never finds: no carrier
    # (cable, transceiver, the switch port down); Disabled is a port turned off. NCCL leaves such a port out, so the
    # host of one job with it shows fewer NICs than the others, and a port that comes and goes (Polling, then
    # LinkUp) breaks the connections over it.
    sig("ib_port_no_link", ("POLLING", "Polling", "DISABLED", "Disabled"),
       r"(?:\blink (?P<dev>[\w-]{1,32}/\d{1,3}) .{0,200}?)?"
       r"(?:physical_state|[Pp]hysical state:|phys_state:|phys state:\s{0,4}\d:)\s{0,8}(?P<st>POLLING|Polling|DISABLED|Disabled)\b",
       "hardware_fault", ROOT, 4, "an RDMA port has no physical link", code="LOG037",
       params=lambda hs: {"what": " ".join(w for w in ("RDMA port", group(hs, "dev"), "has no physical link") if w)
                                  + f" (physical state {(group(hs, 'st') or 'Polling').title()}: cable, transceiver or "
                                    "switch port)"},
       detail="A port in physical state Polling is looking for a link partner it does not find; Disabled is a port "
              "turned off. NCCL uses only ports that are Active, so this host runs with fewer NICs than its peers, and "
              "a port that goes between Polling and LinkUp drops the connections over it. Check the cable and the "
              "switch port (ibstat, `rdma link`, the switch's logs); move the job off the node until it is fixed.",
       alts=[("ib_misconfig", "a port disabled on purpose (or not cabled on this system) that NCCL_IB_HCA still names")]),
    # The dynamic loader's "<lib>: cannot open shared object file: No such file or directory", as ld.so prints it
    # ("error while loading shared libraries: ..."), as Python's ImportError/OSError quote dlopen, and as Paddle's
    # loader does ("Failed to find dynamic library: libnccl.so ( libnccl.so: cannot open shared object file ... )"):
    # a library the GPU or communication stack needs is not installed or not on the loader's path. NCCL's optional
    # plugins (libnccl-net.so, -tuner, -profiler, -env) are probed and skipped when absent.
    sig("lib_missing", ("cannot open shared object file",),
       r"(?<![\w-])(?P<lib>lib(?:nccl(?![-_](?:net|tuner|profiler|env|ras))|rccl(?!-net)|cudart|cublas(?:Lt)?|cudnn\w{0,20}"
       r"|cuda|nvrtc|cusparse\w{0,8}|cufft|curand|cusolver|nvJitLink|mpi(?:_cxx|_mpifh)?|amdhip64|fabric|nvshmem(?:_host)?"
       r"|nvidia-ml)"
       r"(?:\.so(?:\.[\d.]{1,12})?)?): cannot open shared object file",
       "other", ROOT, 2, "a library the GPU or communication stack needs could not be loaded",
       build=_lib_missing),
    # NCCL's own dlopen of NVML at communicator set-up (misc/nvmlwrap.cc, os/linux.cc from 2.29): WARN("Failed to open
    # libnvidia-ml.so.1") (": %s" with dlerror's text from 2.29), then ncclSystemError: "unhandled system error".
    sig("nvml_lib_missing", ("Failed to open libnvidia-ml",),
       r"Failed to open (?P<lib>libnvidia-ml\.so(?:\.\d{1,3})?)",
       "other", ROOT, 2, "NCCL could not load NVML, the driver's management library", code="LOG113",
       build=_lib_missing),
    sig("gpu_busy", ("busy or unavailable", "DevicesUnavailable", "DEVICE_UNAVAILABLE"),
       # cudaErrorDevicesUnavailable (46): CUDA before 11 says "CUDA-capable device(s) is/are busy or unavailable",
       # later releases "all CUDA-capable devices are busy or unavailable".
       r"CUDA-capable device\(s\) is/are busy or unavailable|all CUDA-capable devices are busy or unavailable"
       r"|cudaErrorDevicesUnavailable|CUDA_ERROR_DEVICE_UNAVAILABLE",
       "duplicate_gpu", ROOT, 4, "a GPU refused a new context: another process holds it in exclusive compute mode",
       code="LOG034", params=lambda hs: {"what": "a GPU refused a new context because another process holds it"},
       build=_gpu_busy,
       detail="A GPU in EXCLUSIVE_PROCESS compute mode accepts one process: a second rank mapped to the same GPU (a "
              "missing torch.cuda.set_device, CUDA_VISIBLE_DEVICES the same for every rank) is refused this way.",
       alts=[("other", "if every rank has its own GPU, another job or a stale process holds it "
                       "(nvidia-smi lists the processes; nvidia-smi -q | grep 'Compute Mode')"),
             ("hardware_fault", "a GPU that fell into an error state is also unavailable: dmesg shows Xid errors")]),
    # nvidia-smi's process table, one row per context: "|    0   N/A  N/A   3203008      C   ...build/all_reduce_perf
    # 556MiB |" (GPU, GI, CI, PID, type, name, memory). Read by _gpu_busy.
    ctx("smi_process_row", ("MiB |", "MiB|"),
        r"^\|\s{1,8}(?P<gpu>\d{1,3})\s{1,8}(?:N/A|\d{1,3})\s{1,8}(?:N/A|\d{1,3})\s{1,8}(?P<pid>\d{1,10})\s{1,8}(?:C|G|C\+G|M|M\+C)\s",
        "a row of nvidia-smi's process table: a process with a context on a GPU"),
    # GDRCopy's library (gdrapi.c) returns the errno of its ioctl to gdrdrv: UCX prints "gdr_pin_buffer failed. length
    # :%lu ret:%d" (uct/cuda/gdr_copy), NCCL "GDRCOPY failure %d" (gdrwrap.h). ENOTTY (25) is a driver that does not
    # know the request: a libgdrapi of another GDRCopy release than the host's gdrdrv module (the 2.0 ABI change).
    sig("gdrcopy_abi", ("gdr_pin_buffer", "GDRCOPY failure", "minimum required gdrdrv driver version"),
       r"gdr_pin_buffer(?:_v2)? failed\. length ?:\s?\d{1,20} ret:\s?(?P<ret>25)\b|GDRCOPY failure (?P<ret2>25)\b"
       # (GDRCopy 2.x's own check, gdrapi.c, with GDRCOPY_ENABLE_LOGGING=1: "The minimum required gdrdrv driver version
       # is %d.%d but the current gdrdrv version is %d.%d")
       r"|The minimum required gdrdrv driver version is (?P<need>[\d.]{1,8}) but the current gdrdrv version is (?P<have>[\d.]{1,8})",
       "version_mismatch", ROOT, 2, "GDRCopy's library and the host's gdrdrv module are different releases",
       code="LOG097", params=lambda hs: {"what": (
           f"the library needs gdrdrv {group(hs, 'need')} and the host's module is {group(hs, 'have')}" if group(hs, "need")
           else "gdrdrv refused the library's pin request as an unknown ioctl (errno 25, ENOTTY)")}),
    # graph/paths.cc (2.12 on): NVML reports P2P read/write not OK between two GPUs joined by NVLink, and NCCL stops
    # (ncclUnhandledCudaError) unless NCCL_IGNORE_DISABLED_P2P=1: "P2P is disabled between NVLINK connected GPUs %d
    # and %d. This should not be the case given their connectivity, and is probably due to a hardware issue."
    sig("nvlink_p2p_disabled", ("P2P is disabled between NVLINK connected GPUs",),
       r"P2P is disabled between NVLINK connected GPUs (?P<a>\d{1,3}) and (?P<b>\d{1,3})",
       "hardware_fault", ROOT, 2, "NVML reports peer-to-peer disabled between two GPUs joined by NVLink",
       code="LOG037", params=lambda hs: {"what": f"NVML reports P2P disabled between NVLink-connected GPUs "
                                                 f"{group(hs, 'a')} and {group(hs, 'b')}"},
       detail="NCCL checks NVML's P2P status for every pair of GPUs it joins over NVLink and stops when it is not OK: "
              "an NVLink or bridge that failed, or the driver refusing P2P on it. nvidia-smi nvlink -s shows each "
              "link's state and nvidia-smi topo -p2p rw the P2P status; NCCL_IGNORE_DISABLED_P2P=1 runs without P2P "
              "(slower) until the node is repaired.",
       alts=[("fabric_manager_nvls", "on NVSwitch systems (HGX, DGX) NVLink P2P needs nvidia-fabricmanager running "
                                     "and healthy: systemctl status nvidia-fabricmanager")]),
    sig("gpu_hw", ("Xid", "fallen off the bus", "ECC", "GPU is lost", "NVLink error", "uncorrectable"),
       r"\bXid\b|fallen off the bus|[Uu]ncorrectable ECC|ECC error|GPU is lost|NVLink error|uncorrectable (?:ECC|error)",
       "hardware_fault", ROOT, 1, "the GPU or its links reported a hardware error",
       code="LOG037", params=lambda hs: {"what": "the GPU reported a hardware error"}, build=_gpu_hw),
    # nvidia-smi when NVML enumerates a board but cannot open it: "Unable to determine the device handle for GPU<id>
    # [: <bus id>]: Unknown Error". The board stopped answering (Xid 79, fallen off the bus), or the driver module
    # did not come up for it after a driver or kernel update.
    # The driver could not bring a GPU up (open-gpu-kernel-modules osinit.c / nv.c): "NVRM: GPU %s: RmInitAdapter
    # failed! (0x%x:0x%x:%d)", "rm_init_adapter failed, device minor number %d", "GPU does not have the necessary
    # power cables connected.", "This PCI I/O region assigned to your NVIDIA device is invalid"; nvidia-smi -q's row
    # remapper saying a remap failed ("Remapping Failure Occurred : Yes": no spare rows left in a bank).
    sig("gpu_init_failed", ("RmInitAdapter failed", "rm_init_adapter failed", "necessary power cables", "region assigned to your NVIDIA device is invalid",
                            "Remapping Failure Occurred"),
       r"RmInitAdapter failed!|rm_init_adapter failed, device minor number \d{1,4}"
       r"|GPU does not have the necessary power cables connected|PCI I/O region assigned to your NVIDIA device is invalid"
       r"|(?P<remap>Remapping Failure Occurred\s{0,40}: Yes)",
       "hardware_fault", ROOT, 2, "the driver could not bring up a GPU, or its memory has no spare rows left",
       code="LOG037", params=lambda hs: {"what": (
           "a GPU's memory row remapping failed (no spare rows left): the board needs replacing" if group(hs, "remap")
           else "the driver could not initialise a GPU (dmesg: NVRM RmInitAdapter / power / BAR), so it is missing "
                "from the node")},
       alts=[("driver_cuda_mismatch", "RmInitAdapter also fails for a GPU the installed driver does not support, or "
                                      "right after a driver update without a reboot")]),
    sig("gpu_handle_lost", ("device handle for GPU",),
       r"Unable to determine the device handle for GPU ?[\w:.]{0,20}(?:: [\dA-Fa-f]{4,8}:[\dA-Fa-f]{2}:[\dA-Fa-f]{2}\.\d)?"
       r": (?:Unknown Error|GPU is lost)",
       "hardware_fault", ROOT, 2, "nvidia-smi cannot reach a GPU it lists (the board stopped answering)",
       code="LOG037", params=lambda hs: {"what": "a GPU no longer answers the driver (nvidia-smi cannot get its handle)"},
       alts=[("driver_cuda_mismatch", "right after a driver or kernel update the module may not have loaded for the "
                                      "board (secure boot, DKMS): dmesg | grep NVRM says which")]),
    # ROCm: RCCL keeps NCCL's "Cuda failure" wording (hipified) and adds its ROCr runtime's "ROCr failure '%s'"
    # (include/rocmwrap.h); torch built for ROCm says "HIP error: ..." where a CUDA build says "CUDA error: ...".
    sig("cuda_failure", ("Cuda failure", "CUDA error", "cudaError", "CUDA failure", "unhandled cuda error", "HIP error",
                         "HIP failure", "hipError", "ROCr failure", "Static function", "code object", "Triton Error [",
                         "Memory access fault by GPU", "illegal memory access"),
       r"Cuda failure (?P<num>\d+)? ?'?(?P<what>[^']{0,120})|CUDA (?:error|failure):? (?P<what2>[^\n]{0,120})|(?P<what5>cudaError\w+)"
       r"|HIP (?:error|failure):? (?P<what3>[^\n]{0,120})|ROCr failure '(?P<what4>[^']{0,120})|(?P<what6>hipError\w+)"
       r"|Cannot retrieve Static function, error: \d{1,5}|Unable to find code object for all current devices"
       # Triton's launcher wraps the driver's error string: "Triton Error [CUDA]: an illegal memory access ...".
       r"|Triton Error \[(?:CUDA|HIP)\]: (?P<what7>[^\n]{1,120})"
       # ROCm's runtime (ROCR, runtime.cpp) on a GPU page fault, the HIP analog of CUDA's illegal address: "Memory access
       # fault by GPU node-%u (Agent handle: %p) on address %p. Reason: %s." and the process aborts.
       r"|Memory access fault by GPU node-\d{1,5} \(Agent handle: [^)\n]{1,40}\) on address [^\n]{1,60}?\. Reason: "
       r"(?P<what8>[^\n]{1,100})"
       # CUDA's own string for cudaErrorIllegalAddress (700), as a program prints cudaGetErrorString() after its own
       # words ("parent sync: an illegal memory access was encountered"): only a failed CUDA call returns it.
       r"|(?P<what9>an illegal memory access was encountered)",
       "other", ROOT, 5, "a CUDA or HIP call failed",
       build=_cuda_failure,
       exclude=("cuda_oom", "driver_too_old", "fabric_not_ready", "gpu_hw", "gpu_busy", "peer_mapping", "p2p_unsupported")),
    # (Open MPI's help-mpi-btl-openib.txt wraps "The OpenIB BTL failed to initialize while trying to allocate some /
    # locked memory." after "some": its first line is read.)
    sig("memlock", ("ibv_", "mlx5dv_", "memlock", "MEMLOCK", "locked memory", "Cannot allocate memory", "ulimit -l",
                    "trying to allocate some"),
       r"(?:ibv_(?!open_device|reg_dmabuf_mr)\w+|mlx5dv_\w+)(?:\([^)]{0,200}\))? failed(?: with error| to create \w{1,8})?:? ?"
       r"(?:Cannot allocate memory|ENOMEM|12\b)"
       r"|RLIMIT_MEMLOCK|(?:ulimit|memlock).{0,40}(?:too low|64\b)|Cannot allocate memory.{0,40}(?:ibv|verbs|mlx|UCX|memlock)"
       r"|set max locked memory \(ulimit -l\)|failed to initialize while trying to allocate some(?:\s+locked memory|\s*$)",
       "rlimit_memlock", ROOT, 1, "RDMA queue or memory registration failed for lack of locked memory",
       build=_memlock, always=True),
    # mlx5_core's firmware command check (drivers/net/ethernet/mellanox/mlx5/core/cmd.c mlx5_cmd_check; mlx5_cmd_out_err
    # from Linux 6.2) in dmesg:
    # "<CMD>(0x..) op_mod(0x..) failed, status limits exceeded(0x8)" -- the adapter itself has no more of that
    # object (UARs, protection domains, queues) for another process. ibv_open_device's ENOMEM is this, not the
    # locked-memory limit (openucx/ucx#6049: 256 ranks on one node, ALLOC_UAR refused; fixed by an mlx5 driver setting).
    sig("hca_limits_exceeded", ("limits exceeded",),
       r"mlx5_cmd_(?:check|out_err):\d{1,6}:\(pid \d{1,9}\): (?P<cmd>[A-Z][A-Z0-9_]{2,40})\(0x[0-9a-fA-F]{1,6}\)[^\n]{0,80}"
       r"failed, status limits exceeded",
       "other", ROOT, 2, "the RDMA adapter ran out of one of its own resources for another process",
       code="LOG088", params=lambda hs: {"cmd": group(hs, "cmd") or "a command"}, build=_hca_limit),
    # NCCL before 2.12 printed "Call to ibv_create_qp failed" (and _cq) without errno (ibvwrap.c/.cc). Creating a
    # queue pair or completion queue pins memory; in a container or under a scheduler whose locked-memory limit is
    # the 64 kB default that is where it fails (NVIDIA/pyxis#60: `srun bash -c "ulimit -l"` gave 64). Later NCCL
    # appends "with error <strerror>", which the memlock row (ENOMEM) or nothing here reads.
    # MVAPICH2's verbs channel says the same with no errno either (rdma_iba_priv.c rdma_iba_hca_init, in MPI_Init's
    # error stack: "rdma_iba_hca_init(1636)..: cannot create cq"); flux-framework/flux-core#4451: the job did not
    # inherit the login shell's locked-memory limit.
    sig("ib_create_bare", ("Call to ibv_create_", "cannot create cq", "cannot create qp"),
       r"Call to ibv_create_(?P<what>qp|cq) failed\s*$|rdma_iba_hca_init\(\d{1,6}\)\.{0,40}: {0,2}cannot create (?P<what2>cq|qp)\b",
       "rlimit_memlock", ROOT, 3, "the library could not create an RDMA queue; the usual reason is the locked-memory limit",
       code="LOG035",
       detail="The library (NCCL before 2.12, MVAPICH2) does not print the reason. Creating RDMA queues pins memory: check `ulimit -l` "
              "inside the job (srun, mpirun, the container), not in a login shell.",
       alts=[("ib_misconfig", "if `ulimit -l` is unlimited inside the job, the HCA's queue-pair limits or its "
                              "configuration (NCCL_IB_HCA, a port that is down) are next: `ibv_devinfo -v`")]),
    sig("memlock_limit", ("max locked memory",),
       r"max locked memory\s+\(kbytes, -l\)\s+(?P<kb>\d+)",
       "rlimit_memlock", CONTEXT, 2, "the locked-memory limit printed by ulimit -a"),
    # -- PCIe ----------------------------------------------------------------------------------------
    sig("acs_iommu", ("ACS", "IOMMU", "DMAR", "AMD-Vi", "VT-d"),
       r"ACSCtl:.{0,40}(?:SrcValid\+|ReqRedir\+|CmpltRedir\+)|\bACS\b.{0,40}enabled|DMAR.{0,40}fault|AMD-Vi.{0,40}(?:IO_PAGE_FAULT|fault)|IOMMU.{0,40}fault",
       "p2p_acs_iommu", ROOT, 2, "PCIe ACS or the IOMMU redirects peer-to-peer traffic",
       code="LOG038", params=lambda hs: {"what": "ACS/IOMMU is redirecting PCIe peer traffic"}),
    # rccl/src/init.cc: WARN("Missing \"iommu=pt\" from kernel command line which can lead to system instablity or
    # hang!") at communicator init on AMD GPUs (ROCm 6.3 on: "Missing \"amd_iommu=on\" ..."). Printed by every job on
    # such a host: a cause only when the job failed.
    sig("rccl_iommu", ("iommu=pt", "amd_iommu=on"),
       r"Missing \"?(?P<opt>iommu=pt|amd_iommu=on)\"? from kernel command line",
       "p2p_acs_iommu", ROOT, 3, "the kernel runs without iommu=pt, which RCCL says can hang peer-to-peer traffic",
       build=_rccl_iommu, phase=PHASE_SETUP),
    # rccl/src/init.cc, next to it: WARN("Missing \"HSA_FORCE_FINE_GRAIN_PCIE=1\" from environment which can lead to
    # low RCCL performance, system instablity or hang!") when the variable is not 1 (builds without HIP_UNCACHED_MEMORY).
    sig("rccl_fine_grain", ("HSA_FORCE_FINE_GRAIN_PCIE",),
       r"Missing \"?HSA_FORCE_FINE_GRAIN_PCIE=1\"? from environment",
       "other", ROOT, 4, "RCCL runs without fine-grained PCIe memory, which it says can hang",
       build=_rccl_fine_grain, phase=PHASE_SETUP),
    sig("p2p_unsupported", ("peer access", "PeerAccessUnsupported", "PEER_ACCESS", "P2P is not supported", "P2P not supported", "cudaIpc",
                            "hipIpc"),
       r"peer access is not supported|cudaErrorPeerAccessUnsupported|CUDA_ERROR_PEER_ACCESS_UNSUPPORTED|P2P (?:is )?not supported"
       # (RCCL's source is hipified, its message text with it: "hipIpcGetMemHandle failed : invalid argument")
       r"|(?:cuda|hip)Ipc(?:Get|Open)MemHandle failed ?: ?(?:operation not supported|invalid device context|invalid argument)",
       "p2p_driver_bug", ROOT, 2, "the driver refuses or mishandles GPU peer-to-peer access",
       code="LOG039", build=_p2p_unsupported,
       alts=[("p2p_acs_iommu", "if the GPUs do support P2P, ACS/IOMMU blocking the path gives similar failures: "
                               "`lspci -vvv | grep ACSCtl` shows SrcValid+ on the bridges")]),
    # vLLM's own probe of CUDA IPC between every pair of GPUs before its custom all-reduce
    # (device_communicators/all_reduce_utils.py): "Two processes do not agree on the P2P access status on %d -> %d,
    # treat as disabled" (the writer saw its data land, the reader did not, or the other way) and "Error happened when
    # batch testing peer-to-peer access from [...] to [...]" (the test process itself failed). The driver offers P2P
    # and the data does not arrive: ACS or the IOMMU redirecting the PCIe path.
    sig("serving_p2p_probe", ("do not agree on the P2P access status", "batch testing peer-to-peer access"),
       r"Two processes do not agree on the P2P access status on (?P<a>\d{1,3}) -> (?P<b>\d{1,3})"
       r"|Error happened when batch testing peer-to-peer access",
       "p2p_acs_iommu", ROOT, 3, "a test of GPU peer-to-peer copies gave wrong or no data",
       code="LOG038", params=lambda hs: {"what": (
           f"vLLM's probe of GPU {group(hs, 'a')} -> {group(hs, 'b')} saw the copy on one side only"
           if group(hs, "a") else "vLLM's test of peer-to-peer copies between the GPUs failed")},
       alts=[("p2p_driver_bug", "consumer GPUs whose driver offers P2P it does not carry out fail the same test: "
                                "NCCL_P2P_DISABLE=1 and --disable-custom-all-reduce work around it")]),
    # HIP's runtime refuses a launch whose block is larger than the kernel was compiled for (ROCm/clr, hipamd/src/
    # hip_module.cpp: "Launch params (%u, %u, %u) are larger than launch bounds (%lu) for kernel %s", older releases
    # adding "please add __launch_bounds__ ..."), returns hipErrorLaunchFailure, and the kernel does not run. A build with NCCL_MAX_NTHREADS (or a test's block size) above RCCL's 256 does it
    # (ROCm/rccl#1072: rccl-tests' deltaKern launched with 512 threads).
    sig("hip_launch_bounds", ("larger than launch bounds",),
       r"Launch params \((?P<x>\d{1,6}), ?\d{1,6}, ?\d{1,6}\) are larger than launch bounds \((?P<bound>\d{1,6})\)"
       r"(?: for kernel (?P<kernel>\S{1,200}))?",
       "other", ROOT, 3, "a GPU kernel was launched with more threads per block than it was compiled for, so it did not run",
       code="LOG081", params=lambda hs: {"what": (
           f"a kernel ({str(group(hs, 'kernel') or '?')[:60]}) was launched with {group(hs, 'x')} threads per block, "
           f"over the {group(hs, 'bound')} it was compiled for, so HIP did not run it")},
       detail="HIP checks each launch against the kernel's launch bounds (256 threads unless __launch_bounds__ says "
              "otherwise) and refuses a larger block. Launch it with at most that many threads (RCCL: "
              "NCCL_MAX_NTHREADS no higher than 256), or rebuild the kernel with __launch_bounds__ / "
              "--gpu-max-threads-per-block raised."),
    # A build that failed: the compiler's own error lines (gcc/clang "file:line:col: error: ...", nvcc and hipcc
    # "file(line): error: ..."), nvcc's "N errors detected in the compilation of", the linker's "collect2: error: ld
    # returned N exit status" and make's "*** [target] Error N". The program, or a library it builds (nccl-tests, an
    # extension), never ran.
    sig("build_failed", ("error: ", "errors detected in the compilation", "rror detected in the compilation",
                         "] Error ", "nvcc fatal"),
       r"^[^\s:()\[\]]{1,300}?(?:\(\d{1,6}\)|:\d{1,6}(?::\d{1,4})?): (?:fatal )?error: (?P<what>[^\n]{1,160})"
       r"|^\d{1,5} errors? detected in the compilation of \"(?P<unit>[^\"\n]{1,300})\""
       r"|^collect2: error: ld returned \d{1,3} exit status|^g?make(?:\[\d{1,3}\])?: \*\*\* \[[^\]\n]{1,300}\] Error \d{1,3}"
       r"|^nvcc fatal\s{0,4}: (?P<what2>[^\n]{1,160})",
       "other", ROOT, 8, "a build failed: the program or a library it compiles did not compile",
       code="LOG139", params=lambda hs: {"what": (
           f"'{str(group(hs, 'what', 'what2'))[:120]}'" if group(hs, "what", "what2") else "see the compiler's errors")},
       build=_build_failed,
       alts=[("version_mismatch", "if the names the compiler cannot find are NCCL's (ncclXxx undefined), the NCCL "
                                  "headers it builds against are older than the code expects: point the build at the "
                                  "NCCL it targets (NCCL_HOME), or use the code's release that matches that NCCL")]),
    # glibc's malloc consistency checks (malloc/malloc.c malloc_printerr): "free(): corrupted unsorted chunks",
    # "double free or corruption (!prev)", "malloc(): corrupted top size", "corrupted size vs. prev_size", ... then
    # abort(). Native code of the process wrote outside its memory; which library it was the message cannot say.
    sig("heap_corruption", ("corrupted", "double free", "invalid pointer", "invalid next size", "invalid chunk size"),
       r"(?:free|malloc|realloc|munmap_chunk|malloc_consolidate|_int_free|_int_malloc)\(\): (?:corrupted [\w ]{1,40}|"
       r"invalid (?:pointer|next size|size|chunk size)[\w ()]{0,20}|memory corruption[\w ()]{0,20})"
       r"|double free or corruption(?: \((?:!prev|out|fasttop|top)\))?|corrupted size vs\. prev_size",
       "nccl_internal_bug", ROOT, 4, "glibc found the process's heap corrupted and aborted it",
       build=_heap_corruption),
    # Ray's services.py at start-up: "The object store is using /tmp instead of /dev/shm because /dev/shm has only
    # {N} bytes available." -- a fact about this machine's /dev/shm (67108864: docker's default 64 MB without
    # --shm-size / --ipc=host), which NCCL's shared-memory transport between local GPUs also needs. A risk, the cause
    # when the job then failed or hung with nothing else to say why (vllm-project/vllm#1710).
    sig("ray_small_shm", ("because /dev/shm has only",), r"because /dev/shm has only (?P<bytes>\d{1,15}) bytes available",
       "shm_too_small", ROOT, 6, "Ray found /dev/shm small (a container's default)", build=_ray_small_shm),
    # Google's GPUDirect-TCPX / TCPXO (FasTrak) NCCL plugins move data through a receive-datapath manager (RxDM) that
    # runs as a separate container or daemon on each A3 node and talks to the plugin over unix sockets under /run/tcpx
    # (TCPX) or its own socket dir (TCPXO). Its absence says "register failed against receive_datapath_manager",
    # "unix client /run/tcpx/..., gpumem fd client connect failed" / "GPU fd not found" (nccl-plugin-gpudirecttcpx),
    # "Timeout: RxDM not ready on H after N seconds", "Could not obtain NIC mappings from RxDM", "Plug-in core
    # initialization failed (UNAVAILABLE: RxDM not running)" (TCPXO).
    sig("gcp_rxdm", ("receive_datapath_manager", "RxDM", "/run/tcpx/"),
       r"register failed against receive_datapath_manager|RxDM not (?:ready|running)|Could not obtain NIC mappings from RxDM"
       r"|unix client /run/tcpx/\S{1,120}(?:, gpumem fd client connect failed|, GPU fd not found)",
       "other", ROOT, 1, "the GPUDirect-TCPX/TCPXO plugin's receive-datapath manager (RxDM) is not running or not reachable",
       code="LOG114"),
    # vLLM (cpu_resource_utils / shared-memory preflight): "Insufficient space in /dev/shm for shared-memory
    # allocation: N MiB required, M MiB free."
    sig("shm_preflight", ("Insufficient space in /dev/shm",),
       r"Insufficient space in /dev/shm for shared-memory allocation",
       "shm_too_small", ROOT, 1, "the server found /dev/shm too small for its shared memory", code="LOG030"),
    # The kubelet evicting a pod whose memory-backed emptyDir (the usual /dev/shm of a training pod) outgrew its
    # sizeLimit: "Usage of EmptyDir volume \"dshm\" exceeds the limit \"1Gi\"."
    sig("k8s_shm_evicted", ("Usage of EmptyDir volume",),
       r"Usage of EmptyDir volume \\?\"(?P<vol>[\w.-]{1,63})\\?\" exceeds the limit",
       "shm_too_small", ROOT, 1, "Kubernetes evicted a pod whose shared-memory volume outgrew its size limit",
       code="LOG030"),
    # SGLang (utils/network.py): "<port name> at <port> is not available in <s> seconds." and, for the ports it
    # derives from --dist-init-addr, "Port is already in use. dist_init_port=... nccl_port=...".
    sig("serving_port_busy", ("is not available in", "Port is already in use. dist_init_port"),
       r"(?P<name>\w{1,40}_port) at (?P<port>\d{1,5}) is not available in \d{1,5} seconds"
       r"|Port is already in use\. dist_init_port=(?P<port2>\d{1,5})",
       "port_conflict", ROOT, 1, "a port the server needs is held by another process", code="LOG010",
       params=lambda hs: {"port": group(hs, "port", "port2") or "?"}),
    # SGLang (utils/network.py): "... Can not get local ip from NIC. Please verify whether SGLANG_LOCAL_IP_NIC is set
    # correctly." -- the interface named has no address here.
    sig("serving_nic_missing", ("Can not get local ip from NIC",),
       r"Can not get local ip from NIC",
       "wrong_interface", ROOT, 1, "the network interface named for the server has no address here",
       code="LOG021", params=lambda hs: {"iface": "named by SGLANG_LOCAL_IP_NIC"}),
    # The LLM servers' own memory checks, each the GPU short of what the server was told to take: vLLM
    # (v1/worker/utils.py "Free memory on device {} ({}/{} GiB) on startup is less than desired GPU memory
    # utilization ({}, {} GiB)": another process holds memory on that GPU), SGLang (distributed/bootstrap.py "The
    # memory capacity is unbalanced. Some GPUs may be occupied by other processes."; pool_configurator.py "Not enough
    # memory. Please try to increase --mem-fraction-static.").
    sig("serving_gpu_mem", ("on startup is less than desired GPU memory utilization", "The memory capacity is unbalanced",
                            "Not enough memory. Please try to increase --mem-fraction-static"),
       r"Free memory on device (?P<dev>\S{1,20}) \((?P<free>[\d.]{1,8})/(?P<total>[\d.]{1,8}) GiB\) on startup is less than "
       r"desired GPU memory utilization"
       r"|(?P<unbal>The memory capacity is unbalanced)"
       r"|Not enough memory\. Please try to increase --mem-fraction-static",
       "cuda_oom", ROOT, 2, "a GPU had less free memory than the server was told to take",
       code="LOG031", params=lambda hs: {"what": (
           f"before the server loaded: {group(hs, 'dev')} had {group(hs, 'free')} of {group(hs, 'total')} GiB free "
           "(another process holds memory on it)" if group(hs, "dev") else
           "before the server loaded: some GPUs of the group are already partly used by other processes"
           if group(hs, "unbal") else "for the KV cache once the weights were loaded (--mem-fraction-static)")},
       detail="A leftover server or worker, another job, or two ranks placed on one GPU hold memory the server counted "
              "on: nvidia-smi on each node shows the processes."),
    # The servers' search for their own address: vLLM (utils/network_utils.py "Failed to get the IP address, using
    # 0.0.0.0 by default": no default route and VLLM_HOST_IP unset) and SGLang (utils/network.py "Can not get local
    # ip", no HOST_IP, NIC or route gave one). Peers cannot connect to 0.0.0.0 or a missing address.
    sig("serving_no_ip", ("Failed to get the IP address, using 0.0.0.0", "Can not get local ip"),
       r"Failed to get the IP address, using 0\.0\.0\.0 by default|Can not get local ip(?! from NIC)",
       "wrong_interface", ROOT, 2, "the server found no address of its own for peers to reach",
       code="LOG020", params=lambda hs: {"what": "no address of this host was found (no default route, VLLM_HOST_IP / "
                                                 "SGLANG_HOST_IP unset), so 0.0.0.0 or nothing was advertised"}),
    # Megatron-LM's rerun state machine (core/rerun_state_machine.py, --rerun-mode validate_results): a NaN/Inf or
    # spiky value was computed again; "First rerun: unexpected result is not reproducible within the tolerance" is a
    # computation corrupted once on the same GPU, "Second rerun: unexpected result is not reproducible on a different
    # GPU, therefore was likely incorrect" one reproducible on the GPU that first computed it and not elsewhere.
    sig("megatron_rerun_gpu", ("unexpected result is not reproducible",),
       r"(?P<n>First|Second) rerun: unexpected result is not reproducible (?:within the tolerance|on a different GPU)",
       "hardware_fault", ROOT, 2, "a value the model computed could not be reproduced: the GPU computed it wrongly",
       code="LOG037", params=lambda hs: {"what": (
           "a GPU computed wrong results that another GPU does not reproduce (Megatron's rerun check: a persistent "
           "fault)" if group(hs, "n") == "Second" else
           "a GPU computed a result once that rerunning the step does not reproduce (Megatron's rerun check: a "
           "transient fault)")}),
    sig("nofile", ("Too many open files", "EMFILE", "maximal number of files that could be opened"),
       r"Too many open files|EMFILE|the maximal number of files that could be opened simultaneously was reached",
       "other", ROOT, 2, "the open-file limit (ulimit -n) is too low for the job's sockets",
       code="LOG082"),
)

MODEL_RULES = (
    ModelRule("bad_interfaces", _bad_interfaces, "an interface chosen for bootstrap or data that other hosts cannot reach"),
    ModelRule("duplicate_hostnames", _dup_hostnames, "one host name used by machines with different addresses"),
    ModelRule("subnets_differ", _subnets, "hosts bootstrapping over addresses in different networks"),
    ModelRule("nccl_connect_retries", _connect_retries, "NCCL's connect retries with no communicator completing after them",
              phase=PHASE_LAST),
    ModelRule("nvls_bind_last", _nvls_bind_last, "NCCL's log ending at its NVLS multicast bind, with no error"),
    ModelRule("gdr_no_module", _gdr_no_module, "NCCL without a GPU peer-memory module (GPUDirect RDMA off)"),
    ModelRule("pcie_topology", _pcie_topology, "GPUs joined only through PCIe, where ACS/IOMMU can interfere"),
    ModelRule("unrecognised", _unrecognised, "errors that no rule explains", phase=PHASE_UNRECOGNISED),
)

CODES = (
    Code("LOG101", "gdr-unavailable", W, "GPUDirect RDMA is off for {what}: NCCL found no GPU peer-memory module",
         "Load nvidia_peermem built for this kernel and this MLNX_OFED/DOCA on every node (modprobe nvidia_peermem; "
         "the driver package ships it), or use NCCL 2.13+ with DMA-BUF (kernel 5.12+); then NCCL_DEBUG=INFO shows "
         "'GPU Direct RDMA Enabled'",
         cause="other", steps=("ls /sys/kernel/mm/memory_peers/ /sys/module/nvidia_peermem/", "lsmod | grep peer")),
    Code("LOG097", "gdrcopy-mismatch", E, "GDRCopy's library and the host's gdrdrv kernel module differ: {what}",
         "Use the GDRCopy release of the host's gdrdrv module inside the job (container images carry their own "
         "libgdrapi), or leave GDRCopy out: UCX_TLS without gdr_copy, NCCL_GDRCOPY_ENABLE=0",
         cause="version_mismatch", steps=("modinfo gdrdrv (the host's module) and the libgdrapi.so version in the "
                                          "container or environment: their major versions must match",)),
    Code("LOG088", "hca-resource-limit", E, "the RDMA adapter refused {cmd}: it has no more of that resource for another process",
         "Run fewer processes per adapter (or per node), or raise the adapter's limit with its driver settings "
         "(mlx5: the UAR/queue counts in the firmware configuration); ulimit -l does not change this",
         cause="other", steps=("dmesg | grep mlx5_cmd_check shows which command the adapter refused",)),
    Code("LOG010", "port-in-use", E, "port {port} is already in use on the rendezvous host",
         "Give each concurrent job its own port (--master-port / --rdzv-endpoint HOST:0 picks a free one), or stop the stale job holding it",
         cause="port_conflict", steps=("ss -ltnp | grep :{port} shows the process holding it",)),
    Code("LOG016", "port-not-permitted", E, "the rendezvous host may not bind port {port} (permission denied)",
         "Pick a master/rendezvous port of 1024 or above (ports below 1024 need root), e.g. --master-port 29500",
         cause="launcher_misconfig", steps=("echo $MASTER_PORT and the launcher's --master-port / --rdzv-endpoint",)),
    Code("LOG017", "bind-address-not-local", E, "a process could not listen on {what}",
         "Run the process that serves the rendezvous on the host that owns the master address (node_rank 0 / rank 0 "
         "there), or set MASTER_ADDR / --rdzv-endpoint / NCCL_COMM_ID to an address of that host; `ip -br addr` lists "
         "this host's addresses",
         cause="launcher_misconfig", steps=("ip -br addr", "getent hosts $(hostname)")),
    Code("LOG013", "address-is-loopback", E, "a rank advertised {addr} to its peers, which they cannot reach",
         "Make the host name resolve to the routable address (/etc/hosts maps it to 127.0.1.1 on Debian/Ubuntu), or name the interface explicitly",
         cause="hostname_resolution", env={"GLOO_SOCKET_IFNAME": "<iface>", "NCCL_SOCKET_IFNAME": "<iface>"},
         steps=("getent hosts $(hostname) should print the address peers use",)),
    Code("LOG014", "duplicate-hostnames", E, "host name {host} is used by machines with different addresses ({addrs})",
         "Give every machine (and container) a unique host name: NCCL groups ranks by host name and treats same-named machines as one node",
         cause="hostname_resolution"),
    Code("LOG015", "name-not-resolved", E, "{what} could not be resolved",
         "Use a name that resolves on every node (or the IP address), and start workers only once it exists",
         cause="hostname_resolution", steps=("getent hosts NAME on the failing node",)),
    Code("LOG020", "unusable-interface-selected", E, "NCCL/gloo selected an interface peers cannot use: {what}",
         "Name the routable interface explicitly on every node so loopback, link-local and bridge devices are never used",
         cause="wrong_interface", env=IFNAME_ENV),
    Code("LOG021", "interface-not-found", E, "the interface {iface} named for the job does not exist or has no address",
         "Set GLOO_SOCKET_IFNAME / NCCL_SOCKET_IFNAME to an interface that exists on every node (ip -br addr)",
         cause="wrong_interface", env=IFNAME_ENV),
    Code("LOG022", "peer-unreachable", E, "connections between ranks were {how}",
         "Check the address each rank advertised (NCCL_DEBUG=INFO 'Bootstrap : Using' lines) and pin the routable interface",
         cause="wrong_interface", env=IFNAME_ENV),
    Code("LOG024", "subnets-differ", W, "hosts bootstrap over addresses in different networks ({nets})",
         "Check that every host uses the interface of the shared network (NCCL_SOCKET_IFNAME) and that routes exist between them",
         cause="wrong_interface"),
    Code("LOG025", "connection-timed-out", E, "connections to a peer timed out",
         "Open the ports the job uses between the nodes (store port, NCCL's ephemeral ports) or pin a routable interface",
         cause="firewall_or_port_blocked"),
    Code("LOG029", "connection-rejected", E, "connections to a peer on the job's own network were rejected",
         "A host firewall is rejecting the job's ports (firewalld answers 'No route to host' while ping passes): open the "
         "store port and NCCL's ephemeral ports between the nodes (firewall-cmd --add-rich-rule for the peers' subnet, ufw "
         "allow from it) or stop the firewall on a private cluster network",
         cause="firewall_or_port_blocked", steps=("nc -l 12345 on one node, nc <node> 12345 from the other",
                                                  "firewall-cmd --list-all / ufw status / iptables -S")),
    Code("LOG030", "shm-too-small", E, "shared memory (/dev/shm) is too small, full or not writable",
         "Give the container a larger /dev/shm (docker --shm-size=8g or --ipc=host; a memory-backed emptyDir at /dev/shm in Kubernetes) and remove stale nccl-* files",
         cause="shm_too_small", steps=("df -h /dev/shm inside the container",), env={"NCCL_SHM_DISABLE": "1 (slower fallback)"}),
    Code("LOG031", "cuda-oom", E, "the GPU ran out of memory {what}",
         "Create the process group and communicators before large allocations, or lower the memory the model takes (sharding, smaller batch)",
         cause="cuda_oom", env={"NCCL_BUFFSIZE": "1048576 (smaller buffers)"}),
    Code("LOG032", "driver-too-old", E, "the NVIDIA driver is older than the CUDA runtime NCCL/torch were built with",
         "Upgrade the driver to one that supports this CUDA version, or install the torch/NCCL build for the installed driver",
         cause="driver_cuda_mismatch", steps=("nvidia-smi shows the driver and the highest CUDA it supports",)),
    Code("LOG033", "fabric-not-ready", E, "the NVSwitch fabric is not ready (nvidia-fabricmanager)",
         "Start nvidia-fabricmanager (matching the driver version) and reset the GPUs after any fabric manager restart, or reboot the node",
         cause="fabric_manager_nvls", steps=("systemctl status nvidia-fabricmanager", "nvidia-smi -q | grep -A2 Fabric"),
         env={"NCCL_NVLS_ENABLE": "0 (only avoids the NVLS path)"}),
    Code("LOG091", "mnnvl-imex-not-ready", E, "the multi-node NVLink domain cannot share memory: IMEX is not set up",
         "Start the IMEX service on every node of the NVLink domain with the same node list, and give the job an IMEX "
         "channel (/dev/nvidia-caps-imex-channels/channel0; on Kubernetes a ComputeDomain); or set "
         "NCCL_MNNVL_ENABLE=0 to use the network between trays instead",
         cause="fabric_manager_nvls", steps=("nvidia-imex-ctl -N lists the domain's nodes and their state",
                                             "ls /dev/nvidia-caps-imex-channels inside the job"),
         env={"NCCL_MNNVL_ENABLE": "0 (only avoids the multi-node NVLink path)"}),
    Code("LOG034", "duplicate-gpu", E, "two ranks share one GPU: {what}",
         "Give every rank its own GPU: torch.cuda.set_device(local_rank) before init_process_group, and check CUDA_VISIBLE_DEVICES per rank",
         cause="duplicate_gpu"),
    Code("LOG132", "library-cut-short", E, "a process died of SIGBUS while the dynamic loader mapped {lib}: the file is "
         "shorter than its headers say",
         "Replace the library file with a complete copy (compare its size and checksum with the original; `readelf -l` "
         "reports segments past the end of the file) and do not rewrite libraries or plugins (NCCL_NET_PLUGIN, "
         "NCCL_PROFILER_PLUGIN, NCCL_TUNER_PLUGIN) while jobs use them",
         cause="other", steps=("readelf -l FILE: 'exceeds the size of the file' names a truncated shared object",)),
    Code("LOG035", "memlock-too-low", E, "the locked-memory limit is too low for RDMA",
         "Raise the memlock limit for the job: ulimit -l unlimited (limits.conf, the scheduler's propagated limits, docker --ulimit memlock=-1)",
         cause="rlimit_memlock"),
    Code("LOG037", "hardware-fault", E, "hardware fault: {what}",
         "Find the node and port raising the errors and repair or drain it (cables, transceivers, GPUs); no setting fixes failing hardware",
         cause="hardware_fault", steps=("ibstat / ibqueryerrors for links", "dmesg | grep -i xid for GPUs")),
    Code("LOG113", "library-not-found", E, "{lib} could not be loaded: it is not installed or not on the loader's path",
         "Install the library the message names, or put its directory on LD_LIBRARY_PATH in the job's own environment "
         "(the launcher's and the container's, not only the login shell's); `ldconfig -p | grep NAME` on each node "
         "shows what the loader finds",
         cause="other"),
    Code("LOG114", "gpudirect-tcpx-rxdm-missing", E, "NCCL's GPUDirect-TCPX/TCPXO plugin cannot reach its "
         "receive-datapath manager (RxDM) on this node",
         "Run the RxDM (tcpgpudmarxd / the tcpxo-daemon) on every node, before the job, and give the job's pod the "
         "socket directory it shares with it (the /run/tcpx volume, or TCPXO's UNIX_CLIENT_PREFIX) and the plugin's "
         "library path, as GKE's A3 manifests do",
         cause="other"),
    Code("LOG111", "rccl-no-fine-grain-pcie", W, "RCCL runs without HSA_FORCE_FINE_GRAIN_PCIE=1, which it warns can "
                                                 "hang GPUs that talk over PCIe",
         "Set HSA_FORCE_FINE_GRAIN_PCIE=1 in every rank's environment (the launcher's -x / env, the container's env)",
         cause="other", env={"HSA_FORCE_FINE_GRAIN_PCIE": "1"}),
    Code("LOG038", "p2p-blocked", E, "peer-to-peer traffic is blocked or corrupted: {what}",
         "Disable ACS on the PCIe bridges between GPUs and NICs (BIOS, or setpci at boot) and IOMMU redirection (iommu=pt / BIOS VT-d)",
         cause="p2p_acs_iommu", env={"NCCL_P2P_DISABLE": "1 (confirms it; slower)", "NCCL_NET_GDR_LEVEL": "LOC"},
         steps=("lspci -vvv | grep ACSCtl: SrcValid+ means ACS is on",)),
    Code("LOG039", "p2p-unsupported", E, "the driver refuses or mishandles GPU peer-to-peer access",
         "Update the GPU driver, or disable P2P for this system",
         cause="p2p_driver_bug", env={"NCCL_P2P_DISABLE": "1"}),
    Code("LOG061", "connection-lost", E, "connections to peers were closed or reset",
         "Read the first error of the peer named in the message: a dead peer explains this; if every peer is healthy, check the network between the hosts",
         cause="peer_process_died"),
    Code("LOG080", "unexplained-error", E, "unrecognised failure: {what}",
         "Read the evidence lines; rerun with NCCL_DEBUG=INFO and TORCH_DISTRIBUTED_DEBUG=DETAIL for more context",
         env=NCCL_DEBUG_ENV),
    Code("LOG085", "no-kernels-for-gpu", E, "the CUDA code has no kernels for this GPU ({what}): the NCCL or PyTorch "
         "build was not compiled for its architecture",
         "Install a build compiled for this GPU's compute capability: a PyTorch wheel for a CUDA release that knows the "
         "GPU (cu128 or newer for Blackwell sm_100/sm_120, cu118+ for Hopper) with its bundled NCCL, or rebuild NCCL with "
         "NVCC_GENCODE including the GPU's sm_XX",
         cause="nccl_internal_bug",
         steps=("nvidia-smi --query-gpu=name,compute_cap --format=csv",
                "python -c 'import torch; print(torch.cuda.get_arch_list(), torch.cuda.nccl.version())'")),
    Code("LOG081", "cuda-failure", E, "a CUDA or HIP call failed: {what}",
         "Read the CUDA error in the evidence; check dmesg for Xid errors and nvidia-smi for the GPU's state",
         cause="other"),
    Code("LOG139", "build-failed", E, "a build failed, so the program never ran: {what}",
         "Read the first compiler error in the evidence: the lines after it are often its echo. A library built "
         "against the wrong headers (NCCL_HOME, CUDA_HOME) or a newer source than its dependencies is the usual cause",
         cause="other"),
    Code("LOG138", "rocm-ipc-refused", E, "RCCL could not share GPU memory with a peer process (its P2P "
         "transport's HIP IPC call refused): the host's ROCm kernel driver does not match the ROCm user space",
         "Install the ROCm kernel driver of the same release as the user space on the host (amdgpu-dkms, then reboot): "
         "updating ROCm inside the container is not enough; `dkms status` and `modinfo amdgpu` show what the host runs",
         cause="driver_cuda_mismatch"),
    Code("LOG135", "host-memory-paths-differ", E, "ranks on one host shared their host buffers in different ways: a "
         "peer's handle named no /dev/shm segment (size 0)",
         "Make every rank take the same path: NCCL_CUMEM_HOST_ENABLE=0 (all on /dev/shm), or give every GPU's NUMA node "
         "the same CPU and memory view (lscpu, numactl -H) so NCCL's cuMem host probe agrees on all of them",
         cause="other", env={"NCCL_CUMEM_HOST_ENABLE": "0"}),
    Code("LOG082", "too-many-open-files", E, "the open-file limit is too low for the job's connections",
         "Raise the open-file limit for the job (ulimit -n 1048576; limits.conf or the scheduler's propagated limits)",
         cause="other"),
)
