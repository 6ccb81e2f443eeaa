"""Everything a support ticket about a communication problem needs to know about this host.

Promise: ``collect()`` returns plain, JSON-safe data and never raises. It is
organised in sections (host, torch, nccl, gpu, network, infiniband, env,
limits, container, launcher); an item that cannot be collected is recorded as
``{"unavailable": "why"}`` rather than left out or raised, so a reader can tell
"absent" from "not looked at". Every external command runs under its own
deadline (commdoctor.probes.proc.run_bounded), every section runs under the
overall deadline, and torch and libnccl are only ever loaded in child
processes (a broken CUDA install can crash or hang its importer).

The values are raw: secrets in environment variables or command lines are
still in them. commdoctor.render.redact is what makes them safe to share.
"""

from __future__ import annotations

import concurrent.futures
import glob
import json
import os
import platform
import re
import resource
import shlex
import shutil
import socket
import sys
import threading
from typing import Any, Callable, Mapping

from commdoctor import __version__
from commdoctor.probes import env as envprobe
from commdoctor.probes.proc import run_bounded

SCHEMA = "commdoctor.sysinfo/1"

#: Sections in the order a reader wants them.
SECTIONS = ("host", "torch", "nccl", "gpu", "network", "infiniband", "env", "limits", "container", "launcher")

#: Longest command output kept verbatim (characters); the rest is cut with a note.
MAX_OUTPUT = 24_000


def unavailable(reason: str) -> dict[str, str]:
    """The value of an item that could not be collected, saying why."""
    return {"unavailable": reason}


def is_unavailable(v: Any) -> bool:
    return isinstance(v, dict) and set(v) == {"unavailable"}


def _clip(text: str, limit: int = MAX_OUTPUT) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n[... {len(text) - limit} more characters cut by commdoctor]"


def command(argv: list[str], timeout: float = 10.0, env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Run an external command under a deadline; its output, or why there is none."""
    exe = shutil.which(argv[0]) if os.sep not in argv[0] else argv[0]
    if not exe:
        return unavailable(f"{argv[0]} not found on PATH")
    r = run_bounded([exe, *argv[1:]], timeout=timeout, env=env)
    shown = shlex.join(argv)
    if r.timed_out:
        return unavailable(f"`{shown}` did not finish within {timeout:g} s (killed)")
    if r.returncode is None:
        return unavailable(f"`{shown}` could not be started: {r.stderr.strip()}")
    out = (r.stdout or "") + (("\n" + r.stderr) if r.stderr.strip() and r.returncode != 0 else "")
    return {"command": shown, "rc": r.returncode, "output": _clip(out.rstrip("\n"))}


def _read(path: str, limit: int = 65536) -> str | None:
    try:
        with open(path, "rb") as f:
            return f.read(limit).decode("utf-8", "replace").strip()
    except OSError:
        return None


def _with_deadline(fn: Callable[[], Any], timeout: float, what: str) -> Any:
    """Run ``fn`` in a daemon thread; an overrun yields ``unavailable`` (DNS can hang)."""
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["v"] = fn()
        except Exception as e:  # noqa: BLE001 - becomes data
            box["v"] = unavailable(f"{what} failed: {type(e).__name__}: {e}")

    t = threading.Thread(target=target, daemon=True, name=f"sysinfo:{what}")
    t.start()
    t.join(timeout)
    if t.is_alive():
        return unavailable(f"{what} did not answer within {timeout:g} s")
    return box["v"]


# -- host ---------------------------------------------------------------------


def host_info(timeout: float = 5.0) -> dict[str, Any]:
    u = os.uname()
    out: dict[str, Any] = {
        "hostname": socket.gethostname(),
        "fqdn": _with_deadline(socket.getfqdn, timeout, "getfqdn"),
        "kernel": f"{u.sysname} {u.release} {u.version}",
        "arch": u.machine,
        "os": _os_release(),
        "python": sys.version.split()[0],
        "python_executable": sys.executable,
        "commdoctor": __version__,
        "cpus": os.cpu_count(),
    }
    try:
        out["cpus_usable"] = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        out["cpus_usable"] = unavailable("sched_getaffinity is not supported here")
    try:
        import psutil

        out["memory_bytes"] = psutil.virtual_memory().total
    except Exception as e:  # noqa: BLE001
        out["memory_bytes"] = unavailable(f"psutil: {e}")
    nodes = sorted(glob.glob("/sys/devices/system/node/node[0-9]*"))
    out["numa_nodes"] = len(nodes) if nodes else unavailable("no /sys/devices/system/node (not a NUMA-aware kernel?)")
    cmdline = _read("/proc/cmdline")
    out["kernel_cmdline"] = cmdline if cmdline is not None else unavailable("/proc/cmdline is not readable")
    iommu = glob.glob("/sys/class/iommu/*")
    out["iommu"] = (f"enabled ({len(iommu)} IOMMU units)" if iommu else "no IOMMU units in /sys/class/iommu")
    return out


def _os_release() -> Any:
    text = _read("/etc/os-release")
    if text is None:
        return unavailable("/etc/os-release is not readable")
    for line in text.splitlines():
        if line.startswith("PRETTY_NAME="):
            return line.split("=", 1)[1].strip().strip('"')
    return platform.platform()


# -- torch and NCCL -----------------------------------------------------------


def torch_info(timeout: float = 60.0) -> dict[str, Any]:
    """torch as a child process sees it. ``nccl_compiled`` is the NCCL torch was built against."""
    t = envprobe.torch_facts(timeout=timeout)
    if t.get("installed") is False:
        return {"installed": False, "reason": t.get("import_error", "torch is not importable")}
    if t.get("installed") is None:
        return unavailable(f"{t.get('probe_error')}: {' / '.join(t.get('probe_output', []))}".rstrip(": "))
    out = dict(t)
    # torch.cuda.nccl.version() answers from the headers torch was compiled
    # with; what runs is whatever libnccl the loader finds (see "nccl").
    out["nccl_compiled"] = out.pop("nccl_version", None)
    return out


# Runs in a child: loads one libnccl (or what torch loads) and asks it its version.
_NCCL_PROBE = r"""
import ctypes, json, sys
mode, arg = sys.argv[1], (sys.argv[2] if len(sys.argv) > 2 else "")
out = {"mode": mode}
def loaded():
    with open("/proc/self/maps") as f:
        return sorted({l.split()[-1] for l in f if ("libnccl" in l or "librccl" in l) and "/" in l.split()[-1]})
try:
    if mode == "torch":
        import torch  # links (and so loads) the libnccl this torch will run with
        out["torch"] = torch.__version__
    else:
        ctypes.CDLL(arg)
    libs = []
    for path in loaded():
        if not path.split("/")[-1].startswith(("libnccl.so", "librccl.so")):
            continue
        lib = ctypes.CDLL(path)
        fn = lib.ncclGetVersion
        fn.argtypes = [ctypes.POINTER(ctypes.c_int)]
        fn.restype = ctypes.c_int
        v = ctypes.c_int(0)
        rc = fn(ctypes.byref(v))
        libs.append({"path": path, "rc": rc, "code": v.value})
    out["loaded"] = libs
except BaseException as e:
    out["error"] = f"{type(e).__name__}: {e}"
print(json.dumps(out))
"""


def nccl_version_text(code: int) -> str:
    """NCCL's integer version code as text (2.9 and later use 5 digits, older ones 4)."""
    div = 10000 if code >= 10000 else 1000
    major, rest = divmod(code, div)
    return f"{major}.{rest // 100}.{rest % 100}"


def _nccl_child(mode: str, arg: str, timeout: float) -> dict[str, Any]:
    r = run_bounded([sys.executable, "-c", _NCCL_PROBE, mode, arg], timeout=timeout)
    if r.timed_out:
        return unavailable(f"loading {arg or 'torch'} did not finish within {timeout:g} s")
    line = r.stdout.strip().splitlines()[-1] if r.stdout.strip() else ""
    try:
        d: dict[str, Any] = json.loads(line)
    except ValueError:
        tail = " / ".join((r.stderr or "").strip().splitlines()[-3:])
        return unavailable(f"the NCCL probe exited with status {r.returncode}: {tail}")
    for lib in d.get("loaded", []):
        if lib.get("rc") == 0 and lib.get("code"):
            lib["version"] = nccl_version_text(int(lib["code"]))
        else:
            lib["version"] = unavailable(f"ncclGetVersion returned {lib.get('rc')}")
    return d


def nccl_candidates(environ: Mapping[str, str] | None = None, limit: int = 8) -> list[str]:
    """libnccl.so files on this host, where the loader or a pip wheel would find them."""
    env = os.environ if environ is None else environ
    dirs: list[str] = []
    for p in sys.path:
        if p and os.path.isdir(p):
            dirs += [os.path.join(p, "nvidia", "nccl", "lib"), os.path.join(p, "torch", "lib")]
    dirs += [d for d in env.get("LD_LIBRARY_PATH", "").split(":") if d]
    dirs += ["/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib",
             "/usr/local/lib", "/usr/local/cuda/lib64", "/usr/local/nccl/lib", "/opt/nccl/lib"]
    seen: dict[str, str] = {}
    for d in dirs:
        for path in sorted(glob.glob(os.path.join(d, "libnccl.so*"))):
            real = os.path.realpath(path)
            if real not in seen and os.path.isfile(real):
                seen[real] = path
    return sorted(seen.values())[:limit]


def nccl_info(torch: Mapping[str, Any] | None, timeout: float = 30.0, environ: Mapping[str, str] | None = None
              ) -> dict[str, Any]:
    """The NCCL that runs: what torch loads, and every libnccl on disk, each asked via ncclGetVersion."""
    out: dict[str, Any] = {}
    t = torch or {}
    if t.get("installed") and t.get("cuda_build"):
        d = _nccl_child("torch", "", timeout)
        if is_unavailable(d):
            out["runtime"] = d
        elif d.get("error"):
            out["runtime"] = unavailable(f"importing torch failed: {d['error']}")
        elif not d.get("loaded"):
            out["runtime"] = unavailable("torch loaded no libnccl (built without NCCL?)")
        else:
            lib = d["loaded"][0]
            out["runtime"] = lib["version"]
            out["runtime_library"] = lib["path"]
    elif t.get("installed"):
        out["runtime"] = unavailable(f"torch {t.get('version')} is a build without CUDA: it loads no NCCL")
    else:
        out["runtime"] = unavailable("torch is not installed here, so no NCCL is loaded by it")
    out["compiled"] = t.get("nccl_compiled") or unavailable("torch reports no compiled NCCL version")
    libs = []
    for path in nccl_candidates(environ):
        d = _nccl_child("lib", path, timeout)
        if is_unavailable(d):
            libs.append({"path": path, "version": d["unavailable"]})
        elif d.get("error"):
            libs.append({"path": path, "version": unavailable(d["error"])})
        else:
            for lib in d.get("loaded", []) or [{"path": path, "version": unavailable("not loaded")}]:
                libs.append({"path": path, "loaded": lib["path"], "version": lib["version"]})
    out["libraries"] = libs or unavailable("no libnccl.so* in the pip wheel, torch, LD_LIBRARY_PATH or system library folders")
    return out


# -- GPUs ---------------------------------------------------------------------


def gpu_info(timeout: float = 15.0) -> dict[str, Any]:
    out: dict[str, Any] = {}
    kmod = _read("/proc/driver/nvidia/version")
    out["kernel_module"] = kmod.splitlines()[0] if kmod else unavailable("no /proc/driver/nvidia/version (NVIDIA kernel module not loaded)")
    if not shutil.which("nvidia-smi"):
        reason = "nvidia-smi not found on PATH (no NVIDIA driver utilities on this host)"
        for k in ("driver", "cuda_driver_api", "gpus", "topology", "p2p", "nvlink", "fabric_manager"):
            out[k] = unavailable(reason)
        return out
    head = command(["nvidia-smi"], timeout)
    drv = cuda = None
    if not is_unavailable(head):

        m = re.search(r"Driver Version:\s*([\w.-]+)", head["output"])
        drv = m.group(1) if m else None
        m = re.search(r"CUDA Version:\s*([\w.-]+)", head["output"])
        cuda = m.group(1) if m else None
    smi = envprobe.nvidia_smi(timeout)
    out["driver"] = drv or smi.get("driver") or unavailable(smi.get("error") or "nvidia-smi printed no driver version")
    out["cuda_driver_api"] = cuda or unavailable("nvidia-smi printed no CUDA version")
    out["gpus"] = smi.get("gpus") if smi.get("gpus") is not None else unavailable(smi.get("error", "nvidia-smi listed no GPU"))
    out["summary"] = head
    out["topology"] = command(["nvidia-smi", "topo", "-m"], timeout)
    out["p2p"] = command(["nvidia-smi", "topo", "-p2p", "r"], timeout)
    out["nvlink"] = command(["nvidia-smi", "nvlink", "--status"], timeout)
    if shutil.which("systemctl"):
        out["fabric_manager"] = command(["systemctl", "is-active", "nvidia-fabricmanager"], timeout)
    else:
        out["fabric_manager"] = unavailable("systemctl not found (cannot ask whether nvidia-fabricmanager runs)")
    return out


# -- network ------------------------------------------------------------------


def network_info(timeout: float = 10.0, sys_net: str = "/sys/class/net") -> dict[str, Any]:
    out: dict[str, Any] = {}
    try:
        import psutil

        addrs = psutil.net_if_addrs()
        stats = psutil.net_if_stats()
    except Exception as e:  # noqa: BLE001
        return {"interfaces": unavailable(f"psutil could not list interfaces: {e}")}
    ifaces = []
    for name in sorted(set(addrs) | set(stats)):
        st = stats.get(name)
        d: dict[str, Any] = {"name": name}
        if st is not None:
            d.update(up=st.isup, mtu=st.mtu, speed_mbps=st.speed or None)
        v4, v6, mac = [], [], None
        for a in addrs.get(name, []):
            if a.family == socket.AF_INET:
                v4.append(f"{a.address}/{_prefixlen(a.netmask)}" if a.netmask else a.address)
            elif a.family == socket.AF_INET6:
                v6.append(a.address + (f"/{_prefixlen(a.netmask)}" if a.netmask else ""))
            elif getattr(psutil, "AF_LINK", None) == a.family:
                mac = a.address
        d.update(ipv4=v4, ipv6=v6, mac=mac)
        base = os.path.join(sys_net, name)
        d["operstate"] = _read(os.path.join(base, "operstate"))
        d["kind"] = _iface_kind(base, name)
        drv = os.path.join(base, "device", "driver")
        d["driver"] = os.path.basename(os.path.realpath(drv)) if os.path.exists(drv) else None
        ifaces.append(d)
    out["interfaces"] = ifaces
    out["routes"] = command(["ip", "route", "show"], timeout) if shutil.which("ip") else _proc_routes()
    host = socket.gethostname()
    out["hostname_resolves_to"] = _with_deadline(lambda: _resolve(host), timeout, f"resolving {host}")
    return out


def _prefixlen(mask: str) -> int | str:
    try:
        import ipaddress

        return ipaddress.ip_network(f"0.0.0.0/{mask}").prefixlen if "." in mask else bin(int(ipaddress.IPv6Address(mask))).count("1")
    except ValueError:
        return mask


def _iface_kind(base: str, name: str) -> str:
    if name == "lo":
        return "loopback"
    t = _read(os.path.join(base, "type"))
    if t == "32":
        return "infiniband (IPoIB)"
    if os.path.isdir(os.path.join(base, "bridge")):
        return "bridge"
    if os.path.exists(os.path.join(base, "tun_flags")):
        return "tun/tap"
    real = os.path.realpath(base)
    if "/virtual/" in real:
        link = _read(os.path.join(base, "ifindex")), _read(os.path.join(base, "iflink"))
        return "veth or other virtual" if link[0] != link[1] else "virtual"
    return "physical" if os.path.exists(os.path.join(base, "device")) else "unknown"


def _proc_routes() -> Any:
    text = _read("/proc/net/route")
    if text is None:
        return unavailable("neither `ip` nor /proc/net/route is available")
    return {"command": "cat /proc/net/route", "rc": 0, "output": text}


def _resolve(host: str) -> list[str]:
    infos = socket.getaddrinfo(host, None)
    return sorted({str(i[4][0]) for i in infos})


# -- InfiniBand / RoCE --------------------------------------------------------


def infiniband_info(root: str = "/sys/class/infiniband", timeout: float = 10.0) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if not os.path.isdir(root):
        out["devices"] = unavailable(f"no {root}: no RDMA devices, or their driver is not loaded")
    else:
        devs = []
        for dev in envprobe.rdma_devices(root):
            base = os.path.join(root, dev["name"])
            for attr in ("fw_ver", "hca_type", "board_id", "node_type"):
                v = _read(os.path.join(base, attr))
                if v is not None:
                    dev[attr] = v
            netdir = os.path.join(base, "device", "net")
            dev["netdevs"] = sorted(os.listdir(netdir)) if os.path.isdir(netdir) else []
            for p in dev["ports"]:
                gids = []
                for i in range(8):  # the first GIDs tell RoCE v1/v2 and IPv4/IPv6 apart
                    g = _read(os.path.join(base, "ports", p["port"], "gids", str(i)))
                    if g and g.strip("0:"):
                        kind = _read(os.path.join(base, "ports", p["port"], "gid_attrs", "types", str(i)))
                        gids.append({"index": i, "gid": g, "type": kind})
                p["gids"] = gids
            devs.append(dev)
        out["devices"] = devs
    out["ibv_devinfo"] = command(["ibv_devinfo"], timeout) if shutil.which("ibv_devinfo") else unavailable(
        "ibv_devinfo not found on PATH (package ibverbs-utils / rdma-core)")
    return out


# -- environment variables ----------------------------------------------------

#: Variables that steer communication, launchers, libraries and the network path.
ENV_PREFIXES = (
    "NCCL_", "TORCH_", "TORCHELASTIC_", "PET_", "GLOO_", "UCX_", "UCC_", "OMPI_", "PMI", "PMIX_", "MPI_",
    "I_MPI_", "SLURM_", "SLURMD_", "KUBERNETES_", "CUDA_", "NVIDIA_", "FI_", "RDMAV_", "MLX5_", "IBV_",
    "HOROVOD_", "MASTER_", "TP_SOCKET", "COMMDOCTOR_", "OMP_", "HCCL_", "RCCL_", "HIP_", "ROCR_",
)
ENV_NAMES = frozenset({
    "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK", "ROLE_RANK", "NODE_RANK",
    "LD_LIBRARY_PATH", "LD_PRELOAD", "PATH", "PYTHONPATH", "CONDA_PREFIX", "VIRTUAL_ENV", "HOSTNAME",
    "http_proxy", "https_proxy", "no_proxy", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY", "all_proxy",
    "container", "USER", "HOME",
})


def relevant_env(name: str) -> bool:
    return name in ENV_NAMES or name.startswith(ENV_PREFIXES)


def env_info(environ: Mapping[str, str] | None = None, all_env: bool = False) -> dict[str, Any]:
    env = os.environ if environ is None else environ
    chosen = {k: env[k] for k in sorted(env) if all_env or relevant_env(k)}
    return {"variables": chosen, "omitted": len(env) - len(chosen),
            "scope": "every variable" if all_env else "variables that steer communication, launchers and libraries"}


# -- limits -------------------------------------------------------------------

_RLIMITS = (("memlock", "RLIMIT_MEMLOCK"), ("nofile", "RLIMIT_NOFILE"), ("nproc", "RLIMIT_NPROC"),
            ("stack", "RLIMIT_STACK"), ("core", "RLIMIT_CORE"), ("as", "RLIMIT_AS"))


def limits_info() -> dict[str, Any]:
    out: dict[str, Any] = {}
    ul: dict[str, Any] = {}
    for name, const in _RLIMITS:
        try:
            soft, hard = resource.getrlimit(getattr(resource, const))
            show = lambda v: "unlimited" if v == resource.RLIM_INFINITY else v  # noqa: E731
            ul[name] = {"soft": show(soft), "hard": show(hard)}
        except (AttributeError, OSError, ValueError) as e:
            ul[name] = unavailable(f"{const}: {e}")
    out["ulimits"] = ul
    out["dev_shm"] = envprobe.shm_facts().to_dict()
    for key, path in (("ip_local_port_range", "/proc/sys/net/ipv4/ip_local_port_range"),
                      ("shmmax", "/proc/sys/kernel/shmmax"),
                      ("ptrace_scope", "/proc/sys/kernel/yama/ptrace_scope"),
                      ("numa_balancing", "/proc/sys/kernel/numa_balancing")):
        v = _read(path)
        out[key] = " ".join(v.split()) if v is not None else unavailable(f"{path} is not readable")
    return out


# -- container and cgroups ----------------------------------------------------

_CAPS = {12: "NET_ADMIN", 14: "IPC_LOCK", 19: "SYS_PTRACE", 21: "SYS_ADMIN", 24: "SYS_RESOURCE"}


def container_info(proc: str = "/proc", cgroup_root: str = "/sys/fs/cgroup") -> dict[str, Any]:
    out: dict[str, Any] = {"kind": envprobe.container_kind() or "none detected"}
    out["markers"] = [p for p in ("/.dockerenv", "/run/.containerenv") if os.path.exists(p)]
    v2 = os.path.exists(os.path.join(cgroup_root, "cgroup.controllers"))
    out["cgroup_version"] = 2 if v2 else (1 if os.path.isdir(cgroup_root) else unavailable(f"no {cgroup_root}"))
    cg = _read(os.path.join(proc, "self", "cgroup"))
    out["cgroup"] = cg.splitlines()[:16] if cg else unavailable("/proc/self/cgroup is not readable")
    limits: dict[str, Any] = {}
    files = (("memory.max", "cpu.max", "pids.max") if v2 else
             ("memory/memory.limit_in_bytes", "cpu/cpu.cfs_quota_us", "pids/pids.max"))
    for f in files:
        v = _read(os.path.join(cgroup_root, f))
        limits[f] = v if v is not None else unavailable("not readable")
    out["limits"] = limits
    status = _read(os.path.join(proc, "self", "status")) or ""
    caps: Any = unavailable("no CapEff line in /proc/self/status")
    for line in status.splitlines():
        if line.startswith("CapEff:"):
            bits = int(line.split()[1], 16)
            caps = {name: bool(bits >> bit & 1) for bit, name in sorted(_CAPS.items())}
    out["capabilities"] = caps
    uid_map = _read(os.path.join(proc, "self", "uid_map"))
    out["user_namespace"] = (uid_map is not None and uid_map.split()[:3] != ["0", "0", "4294967295"])
    return out


# -- launcher context ---------------------------------------------------------

_JOB_WORDS = ("torchrun", "torch.distributed.run", "torch.distributed.launch", "mpirun", "mpiexec", "srun",
              "deepspeed", "accelerate")
_JOB_ENV = ("RANK", "LOCAL_RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "TORCHELASTIC_RUN_ID")


def launcher_info(environ: Mapping[str, str] | None = None, timeout: float = 10.0, max_procs: int = 64
                  ) -> dict[str, Any]:
    env = os.environ if environ is None else environ
    out: dict[str, Any] = {}
    found = []
    if "SLURM_JOB_ID" in env:
        found.append("slurm")
    if "KUBERNETES_SERVICE_HOST" in env:
        found.append("kubernetes")
    if "TORCHELASTIC_RUN_ID" in env or "PET_NNODES" in env:
        found.append("torchrun")
    if any(k in env for k in ("OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK")):
        found.append("mpi")
    out["detected"] = found or ["none (not started by a launcher this process can see)"]
    out["slurm"] = ({k: env[k] for k in sorted(env) if k.startswith(("SLURM_JOB", "SLURM_NNODES", "SLURM_NTASKS",
                     "SLURM_PROCID", "SLURM_LOCALID", "SLURM_NODEID", "SLURM_STEP", "SLURMD_NODENAME",
                     "SLURM_CPUS", "SLURM_GPUS", "SLURM_TASKS_PER_NODE"))}
                    if "slurm" in found else unavailable("SLURM_JOB_ID is not set"))
    if "kubernetes" in found:
        ns = _read("/var/run/secrets/kubernetes.io/serviceaccount/namespace")  # only the namespace, never the token
        out["kubernetes"] = {"pod": env.get("HOSTNAME"), "namespace": ns or unavailable("no service-account namespace file"),
                             "api": env.get("KUBERNETES_SERVICE_HOST")}
    else:
        out["kubernetes"] = unavailable("KUBERNETES_SERVICE_HOST is not set")
    out["torchrun"] = ({k: env[k] for k in envprobe._LAUNCHER_VARS if k in env and not k.startswith(("SLURM", "OMPI", "PMI", "MPI", "KUBERNETES"))}
                       if any(k in env for k in _JOB_ENV) else unavailable("no RANK / WORLD_SIZE / MASTER_ADDR in this environment"))
    out["job_processes"] = _with_deadline(lambda: job_processes(max_procs), timeout, "listing processes")
    return out


def job_processes(limit: int = 64) -> list[dict[str, Any]]:
    """Processes on this host that look like ranks or launchers of a distributed job."""
    import psutil

    me = os.getpid()
    out: list[dict[str, Any]] = []
    for p in psutil.process_iter(["pid", "ppid", "name", "username", "cmdline"]):
        if len(out) >= limit:
            break
        info = p.info
        cmd = info.get("cmdline") or []
        text = " ".join(cmd)
        if info["pid"] == me or "commdoctor" in text:
            continue  # commdoctor itself and its own probes (their ranks are not the user's job)
        launcher = any(w in text for w in _JOB_WORDS)
        try:
            penv = p.environ()
        except (psutil.Error, OSError):
            penv = {}
        rank_env = "RANK" in penv and ("LOCAL_RANK" in penv or "WORLD_SIZE" in penv)
        if not (launcher or rank_env):
            continue
        out.append({
            "pid": info["pid"], "ppid": info["ppid"], "name": info["name"], "user": info.get("username"),
            "role": "rank" if rank_env else "launcher",
            "cmdline": shlex.join(cmd),
            "env": {k: v for k, v in sorted(penv.items()) if relevant_env(k) and k not in ("PATH", "HOME")},
        })
    return out


# -- all together -------------------------------------------------------------


def collect(timeout: float = 90.0, environ: Mapping[str, str] | None = None, all_env: bool = False,
            sections: tuple[str, ...] = SECTIONS) -> dict[str, Any]:
    """Every section, collected in parallel; a section still running at ``timeout`` says so."""
    per_cmd = max(5.0, min(15.0, timeout / 4))
    torch_box: dict[str, Any] = {}
    torch_done = threading.Event()

    def torch_section() -> Any:
        try:
            t = torch_info(timeout=max(10.0, timeout - 10))
            torch_box["v"] = t
            return t
        finally:
            torch_done.set()

    def nccl_section() -> Any:
        torch_done.wait(timeout)  # which NCCL torch loads depends on which torch it is
        return nccl_info(torch_box.get("v"), timeout=per_cmd * 2, environ=environ)

    jobs: dict[str, Callable[[], Any]] = {
        "host": lambda: host_info(per_cmd),
        "torch": torch_section,
        "nccl": nccl_section,
        "gpu": lambda: gpu_info(per_cmd),
        "network": lambda: network_info(per_cmd),
        "infiniband": lambda: infiniband_info(timeout=per_cmd),
        "env": lambda: env_info(environ, all_env),
        "limits": limits_info,
        "container": container_info,
        "launcher": lambda: launcher_info(environ, per_cmd),
    }
    if "nccl" in sections and "torch" not in sections:
        jobs["torch"] = torch_section
        sections = (*sections, "torch")
    out: dict[str, Any] = {}
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=len(jobs), thread_name_prefix="sysinfo")
    try:
        futs = {name: pool.submit(jobs[name]) for name in SECTIONS if name in sections}
        concurrent.futures.wait(futs.values(), timeout=timeout)
        for name, fut in futs.items():
            if not fut.done():
                out[name] = unavailable(f"collecting {name} did not finish within {timeout:g} s")
            elif fut.exception() is not None:
                e = fut.exception()
                out[name] = unavailable(f"collecting {name} failed: {type(e).__name__}: {e}")
            else:
                out[name] = fut.result()
    finally:
        # Threads still running hold only bounded subprocesses; do not wait for them.
        pool.shutdown(wait=False, cancel_futures=True)
    return {"schema": SCHEMA, "sections": {k: out[k] for k in SECTIONS if k in out}}
