"""Live facts about this host's software environment.

Promise: every function here returns plain data (JSON-safe dicts) and holds its
own deadline. torch is probed in a subprocess, never imported here: a broken
CUDA install can segfault or hang on import, and the run must survive that.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import sys
from typing import Any

from commdoctor.facts.access import PtraceAccess
from commdoctor.facts.limits import LockedMemory, RdmaDevice
from commdoctor.facts.shm import SharedMemory
from commdoctor.probes.proc import run_bounded

# What torch this interpreter has, as one JSON-safe dict. Warnings raised while asking about CUDA are kept:
# they carry the driver-too-old message. It runs in a child interpreter (_TORCH_PROBE prints it), or here
# when this process has imported torch already and torch has no GPU runtime to start (_torch_facts_here).
_TORCH_FACTS = r"""
import json, sys, warnings
def gather():
    out = {"installed": False}
    try:
        import torch
    except ImportError as e:
        out["import_error"] = f"{type(e).__name__}: {e}"
        return out
    out["installed"] = True
    out["version"] = torch.__version__
    out["cuda_build"] = torch.version.cuda
    out["hip_build"] = getattr(torch.version, "hip", None)
    try:
        import torch.distributed as dist
        out["distributed"] = dist.is_available()
        b = {}
        for name in ("nccl", "gloo", "mpi", "ucc"):
            fn = getattr(dist, f"is_{name}_available", None)
            try:
                b[name] = bool(fn()) if fn else False
            except Exception:
                b[name] = False
        out["backends"] = b
    except Exception as e:
        out["distributed"] = False
        out["distributed_error"] = f"{type(e).__name__}: {e}"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            out["cuda_available"] = torch.cuda.is_available()
            n = torch.cuda.device_count() if out["cuda_available"] else 0
            out["device_count"] = n
            devs = []
            for i in range(n):
                p = torch.cuda.get_device_properties(i)
                devs.append({"index": i, "name": p.name, "memory_mib": p.total_memory // 2**20,
                             "capability": f"{p.major}.{p.minor}",
                             "bus_id": getattr(p, "pci_bus_id", None)})
            out["devices"] = devs
        except Exception as e:
            out["cuda_error"] = f"{type(e).__name__}: {e}"
    out["cuda_warnings"] = [str(w.message) for w in caught]
    try:
        v = torch.cuda.nccl.version() if out.get("backends", {}).get("nccl") else None
        out["nccl_version"] = ".".join(map(str, v)) if isinstance(v, tuple) else (str(v) if v else None)
    except Exception as e:
        out["nccl_version"] = None
        out["nccl_error"] = f"{type(e).__name__}: {e}"
    try:
        out["cudnn"] = torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None
    except Exception:
        out["cudnn"] = None
    return out
"""
_TORCH_PROBE = _TORCH_FACTS + "print(json.dumps(gather()))\n"


def _torch_facts_here() -> dict[str, Any] | None:
    """The facts asked of the torch this process imported already (under a launcher, for the job's store), when
    that is safe: a build without CUDA or ROCm, so asking starts no GPU runtime here. None otherwise: the child
    probe then imports torch again, away from this process (a broken driver can hang or crash it)."""
    torch = sys.modules.get("torch")
    version = getattr(torch, "version", None)
    if torch is None or version is None or getattr(version, "cuda", None) or getattr(version, "hip", None):
        return None
    ns: dict[str, Any] = {}
    exec(compile(_TORCH_FACTS, "<commdoctor torch facts>", "exec"), ns)  # noqa: S102 - our own code, above
    out: dict[str, Any] = json.loads(json.dumps(ns["gather"]()))
    return out


def torch_facts(timeout: float = 60.0, keep_for_rank0: bool = False) -> dict[str, Any]:
    """What torch this interpreter has, asked of a child process under a deadline (or of this process, when it
    has imported a torch without a GPU runtime already: see _torch_facts_here).

    ``keep_for_rank0``: the child stays, torch imported, to run rank 0 of the local process-group test and fork
    the others (``pg_init.probe_torch_and_stay``), so that test imports torch once, not once per rank. Where
    the facts came from this process, such a child is started in the background all the same.
    """
    here = _torch_facts_here()
    if here is not None:
        if keep_for_rank0:  # the local test's ranks still need an interpreter with torch: start it now
            from commdoctor.probes.pg_init import keep_one_in_background

            keep_one_in_background(_TORCH_FACTS, timeout)
        return here
    if keep_for_rank0:
        from commdoctor.probes.pg_init import probe_torch_and_stay

        rc, stdout, stderr, timed_out = probe_torch_and_stay(_TORCH_FACTS, timeout)
    else:
        r = run_bounded([sys.executable, "-c", _TORCH_PROBE], timeout=timeout)
        rc, stdout, stderr, timed_out = r.returncode, r.stdout, r.stderr, r.timed_out
    if timed_out:
        return {"installed": None, "probe_error": f"importing torch did not finish within {timeout:g} s"}
    line = stdout.strip().splitlines()[-1] if stdout.strip() else ""
    try:
        out: dict[str, Any] = json.loads(line)
    except ValueError:
        tail = (stderr or stdout).strip().splitlines()[-5:]
        return {
            "installed": None,
            "probe_error": f"the torch probe exited with status {rc}",
            "probe_output": tail,
        }
    return out


def nvidia_smi(timeout: float = 15.0) -> dict[str, Any]:
    """GPUs and driver as nvidia-smi reports them; ``present`` False when there is none."""
    exe = shutil.which("nvidia-smi")
    if not exe:
        return {"present": False}
    q = "index,name,pci.bus_id,driver_version,memory.total"
    r = run_bounded([exe, f"--query-gpu={q}", "--format=csv,noheader,nounits"], timeout=timeout)
    if r.timed_out:
        return {"present": True, "error": f"nvidia-smi did not answer within {timeout:g} s"}
    if r.returncode != 0:
        return {"present": True, "error": (r.stdout + r.stderr).strip()[:2000]}
    gpus = []
    for line in r.stdout.strip().splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) >= 5:
            gpus.append({"index": parts[0], "name": parts[1], "bus_id": parts[2], "driver": parts[3], "memory_mib": parts[4]})
    return {"present": True, "gpus": gpus, "driver": gpus[0]["driver"] if gpus else None}


_LAUNCHER_VARS = (
    "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK", "ROLE_RANK", "NODE_RANK",
    "MASTER_ADDR", "MASTER_PORT", "TORCHELASTIC_RUN_ID", "TORCHELASTIC_RESTART_COUNT",
    "TORCHELASTIC_MAX_RESTARTS", "PET_RDZV_ENDPOINT", "PET_RDZV_BACKEND", "PET_NNODES", "PET_NPROC_PER_NODE",
    "SLURM_JOB_ID", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", "SLURM_NTASKS_PER_NODE",
    "SLURM_NNODES", "SLURM_NODEID", "SLURM_STEP_NUM_TASKS", "SLURM_JOB_NODELIST",
    "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE",
    "PMI_RANK", "PMI_SIZE", "PMIX_RANK", "MPI_LOCALRANKID", "MPI_LOCALNRANKS",
    "KUBERNETES_SERVICE_HOST",
)


def launcher_env(environ: dict[str, str] | None = None) -> dict[str, str]:
    env = os.environ if environ is None else environ
    return {k: env[k] for k in _LAUNCHER_VARS if k in env}


def comm_env(environ: dict[str, str] | None = None) -> dict[str, str]:
    """Every variable that steers a communication library or torch.distributed."""
    env = os.environ if environ is None else environ
    pre = ("NCCL_", "GLOO_", "TORCH_NCCL_", "TORCH_DISTRIBUTED_", "TORCH_FR_", "TORCH_GLOO_", "TP_SOCKET", "UCX_", "UCC_", "OMPI_MCA_", "CUDA_VISIBLE_DEVICES")
    return {k: v for k, v in env.items() if k.startswith(pre)}


def shm_facts(path: str = "/dev/shm") -> SharedMemory:
    """/dev/shm measured here (statvfs, access(2), the mount table): the fact env.shm judges."""
    try:
        st = os.statvfs(path)
    except OSError as e:
        return SharedMemory(path=path, exists=False, error=f"{e.strerror} ({path})")
    return SharedMemory(path=path, exists=True, size_bytes=st.f_frsize * st.f_blocks, free_bytes=st.f_frsize * st.f_bavail,
                        writable=os.access(path, os.W_OK), fstype=_fstype(path))


def _fstype(path: str) -> str | None:
    try:
        best: tuple[str, str | None] = ("", None)
        with open("/proc/self/mounts") as f:
            for line in f:
                parts = line.split()
                if len(parts) >= 3 and path.startswith(parts[1]) and len(parts[1]) >= len(best[0]):
                    best = (parts[1], parts[2])
        return best[1]
    except OSError:
        return None


def memlock_facts() -> LockedMemory:
    """RLIMIT_MEMLOCK of this process and the RDMA devices present: the fact env.memlock judges."""
    soft, hard = resource.getrlimit(resource.RLIMIT_MEMLOCK)
    inf = resource.RLIM_INFINITY
    return LockedMemory(soft_bytes=None if soft == inf else soft, hard_bytes=None if hard == inf else hard,
                        rdma_devices=tuple(RdmaDevice.from_sysfs(d) for d in rdma_devices()))


def rdma_devices(root: str = "/sys/class/infiniband") -> list[dict[str, Any]]:
    """InfiniBand / RoCE devices with their ports' state and link layer."""
    out: list[dict[str, Any]] = []
    try:
        names = sorted(os.listdir(root))
    except OSError:
        return out
    for name in names:
        dev: dict[str, Any] = {"name": name, "ports": []}
        ports_dir = os.path.join(root, name, "ports")
        try:
            for port in sorted(os.listdir(ports_dir)):
                p = {"port": port}
                for attr in ("state", "phys_state", "link_layer", "rate"):
                    try:
                        with open(os.path.join(ports_dir, port, attr)) as f:
                            p[attr] = f.read().strip()
                    except OSError:
                        pass
                dev["ports"].append(p)
        except OSError:
            pass
        out.append(dev)
    return out


CAP_SYS_PTRACE = 19


def ptrace_facts() -> PtraceAccess:
    """Whether this process may attach to others (what py-spy needs)."""
    scope: int | None
    try:
        with open("/proc/sys/kernel/yama/ptrace_scope") as f:
            scope = int(f.read().strip())
    except (OSError, ValueError):
        scope = None  # no Yama LSM: classic rules apply
    return PtraceAccess(uid=os.geteuid(), yama_ptrace_scope=scope, cap_sys_ptrace=_has_cap(CAP_SYS_PTRACE),
                        py_spy=find_py_spy(), container=container_kind())


def _has_cap(bit: int) -> bool | None:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("CapEff:"):
                    return bool(int(line.split()[1], 16) >> bit & 1)
    except (OSError, ValueError):
        pass
    return None


def find_py_spy() -> str | None:
    here = os.path.join(os.path.dirname(sys.executable), "py-spy")
    if os.access(here, os.X_OK):
        return here
    return shutil.which("py-spy")


def container_kind() -> str | None:
    if os.path.exists("/.dockerenv"):
        return "docker"
    if os.environ.get("KUBERNETES_SERVICE_HOST"):
        return "kubernetes"
    try:
        with open("/proc/1/cgroup") as f:
            text = f.read()
        for k in ("kubepods", "docker", "containerd", "lxc", "podman"):
            if k in text:
                return k
    except OSError:
        pass
    if os.environ.get("container"):
        return os.environ["container"]
    return None


#: Variables frameworks use to pass the backend to init_process_group.
BACKEND_VARS = ("TORCH_DISTRIBUTED_BACKEND", "PL_TORCH_DISTRIBUTED_BACKEND", "DIST_BACKEND", "DDP_BACKEND")


def backend_env(environ: dict[str, str] | None = None) -> dict[str, str]:
    """Variables frameworks use to choose the backend passed to init_process_group."""
    env = os.environ if environ is None else environ
    return {k: env[k] for k in BACKEND_VARS if k in env}
