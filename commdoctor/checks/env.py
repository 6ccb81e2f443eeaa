"""Environment stage: what software, launcher and limits this host gives the job.

Promise: each check here is a function of facts (``run.fact(NAME)``); the
facts come from commdoctor.probes.env in a live run.
"""

from __future__ import annotations

import difflib
import re
from typing import TYPE_CHECKING, Any, Iterator, Mapping

from commdoctor.checks import envvars_data as V
from commdoctor.checks.base import Check, Rule
from commdoctor.core.errors import SkipCheck
from commdoctor.facts import LOG
from commdoctor.facts.access import PtraceAccess
from commdoctor.facts.limits import LockedMemory
from commdoctor.facts.shm import DENIED, NO_SPACE, SIGBUS, SharedMemory
from commdoctor.core.model import Evidence, Finding, Severity, Stage

if TYPE_CHECKING:
    from commdoctor.core.context import CheckRun, Options

E, W, I = Severity.ERROR, Severity.WARNING, Severity.INFO
INSTALL_TORCH = "pip install 'commdoctor[torch]' (or install the torch build your training uses)"


def _mib(n: int | None) -> str:
    if n is None:
        return "unlimited"
    if n >= 2**30:
        return f"{n / 2**30:.1f} GiB"
    if n >= 2**20:
        return f"{n / 2**20:.0f} MiB"
    return f"{n / 2**10:.0f} KiB"


def require_torch(run: CheckRun) -> dict[str, Any]:
    """The torch facts, or SKIPPED with how to install torch."""
    t = run.fact("torch")
    if t.get("installed") is False:
        raise SkipCheck(f"torch is not installed ({t.get('import_error', 'ImportError')}); {INSTALL_TORCH}")
    if t.get("installed") is None:
        raise SkipCheck(f"torch could not be probed: {t.get('probe_error')}")
    return t


class TorchCheck(Check):
    """Which torch this interpreter runs and which communication backends it has.

    What it checks:
        Imports torch in a child process (a broken CUDA install can crash or hang
        the importer) and asks torch.distributed which of nccl, gloo, mpi and ucc
        this build can run.
    Why it matters:
        Every later stage needs torch.distributed. A build without distributed
        support, or whose import fails, explains every later failure.
    Known limits:
        Reports the torch of the interpreter running commdoctor; run it with the
        training job's python.
    """

    name = "env.torch"
    stage = Stage.ENVIRONMENT
    title = "PyTorch and its communication backends"
    timeout_s = 90.0
    rules = (
        Rule("ENV001", "torch-import-failed", E, "torch is installed but cannot be imported",
             "Fix the torch installation: reinstall the wheel that matches this host's CUDA driver",
             cause="environment_misconfig",
             steps=("python -c 'import torch' shows the full error",)),
        Rule("ENV002", "torch-distributed-unavailable", E, "this torch build has no torch.distributed support",
             "Install a torch build with distributed support (the official Linux wheels have it)",
             cause="backend_unavailable"),
    )

    def run(self, run: CheckRun) -> Iterator[Finding]:
        t = run.fact("torch")
        if t.get("installed") is False:
            raise SkipCheck(f"torch is not installed; {INSTALL_TORCH}")
        if t.get("installed") is None:
            yield self.finding("ENV001", evidence=[Evidence("probe:torch", "\n".join(
                [t.get("probe_error", "")] + list(t.get("probe_output", []))))])
            return
        b = t.get("backends") or {}
        have = [k for k, v in b.items() if v]
        missing = [k for k, v in b.items() if not v]
        run.summary(f"torch {t['version']}; backends: {', '.join(have) or 'none'}"
                    + (f" (not built: {', '.join(missing)})" if missing else ""))
        run.detail(f"CUDA build: {t.get('cuda_build') or 'none (CPU build)'}; cuDNN: {t.get('cudnn') or 'none'}")
        run.data["environment"] = {
            "torch": t["version"], "torch_cuda": t.get("cuda_build"), "backends": b,
            "nccl_version": t.get("nccl_version"),
        }
        if not t.get("distributed"):
            yield self.finding("ENV002", evidence=[Evidence("probe:torch", t.get("distributed_error", "torch.distributed.is_available() is False"))])


class GpuCheck(Check):
    """GPUs this host has, whether torch sees them, and the NCCL version torch loads.

    What it checks:
        nvidia-smi's view of GPUs and driver against torch.cuda's, and the NCCL
        runtime version torch reports.
    Why it matters:
        A CPU-only wheel on a GPU host, or a driver older than torch's CUDA,
        silently leaves NCCL out: jobs then fail with "NCCL not available" or
        fall back to slow gloo.
    Known limits:
        AMD (ROCm/RCCL) GPUs are reported through torch only.
    """

    name = "env.gpu"
    stage = Stage.ENVIRONMENT
    title = "GPUs, driver and NCCL"
    requires = ("env.torch",)
    timeout_s = 90.0
    rules = (
        Rule("ENV010", "gpus-invisible-to-torch", E, "nvidia-smi shows {n} GPU(s) but torch sees none",
             "Install a CUDA build of torch, or check CUDA_VISIBLE_DEVICES",
             cause="driver_cuda_mismatch",
             steps=("python -c 'import torch; print(torch.version.cuda, torch.cuda.is_available())'",)),
        Rule("ENV011", "nvidia-smi-failed", E, "nvidia-smi is installed but fails",
             "Check that the NVIDIA kernel driver is loaded and matches the user-space libraries (dmesg, nvidia-smi)",
             cause="driver_cuda_mismatch"),
        Rule("ENV012", "nccl-not-built", E, "this host has GPUs but this torch build has no NCCL",
             "Install a CUDA build of torch with NCCL (the official Linux CUDA wheels bundle it)",
             cause="backend_unavailable"),
        Rule("ENV013", "driver-too-old", E, "the NVIDIA driver is too old for this torch's CUDA {cuda}",
             "Upgrade the NVIDIA driver, or install a torch built for an older CUDA",
             cause="driver_cuda_mismatch"),
    )

    def run(self, run: CheckRun) -> Iterator[Finding]:
        t = require_torch(run)
        smi = run.fact("nvidia_smi")
        n_torch = int(t.get("device_count") or 0)
        run.data["environment"] = {"gpus": t.get("devices", []), "driver": smi.get("driver")}
        for w in t.get("cuda_warnings", []):
            if "too old" in w.lower() or "driver" in w.lower() and "version" in w.lower():
                yield self.finding("ENV013", cuda=t.get("cuda_build"), evidence=[Evidence("probe:torch", w)])
        if smi.get("present") and smi.get("error"):
            yield self.finding("ENV011", evidence=[Evidence("nvidia-smi", smi["error"])])
        n_smi = len(smi.get("gpus") or [])
        if n_smi and not n_torch and not t.get("cuda_warnings"):
            why = "torch is a CPU build" if not t.get("cuda_build") else "torch.cuda.is_available() is False"
            yield self.finding("ENV010", n=n_smi, detail=why,
                               evidence=[Evidence("nvidia-smi", f"{g['index']}: {g['name']} {g['bus_id']}") for g in smi["gpus"]])
        if n_torch and not (t.get("backends") or {}).get("nccl"):
            yield self.finding("ENV012", evidence=[Evidence("probe:torch", "torch.distributed.is_nccl_available() is False")])
        if n_torch:
            names = sorted({d["name"] for d in t.get("devices", [])})
            run.summary(f"{n_torch} GPU(s) ({', '.join(names)}); driver {smi.get('driver') or '?'}; "
                        f"NCCL {t.get('nccl_version') or 'not available'}")
        elif n_smi:
            run.summary(f"{n_smi} GPU(s) by nvidia-smi, none visible to torch")
        else:
            run.summary("no GPU on this host; NCCL is not used (gloo carries CPU tensors)")


def _int(env: dict[str, str], key: str) -> tuple[int | None, str | None]:
    """(value, None) or (None, error text) for an integer variable; (None, None) when unset."""
    if key not in env:
        return None, None
    v = env[key].strip()
    if re.fullmatch(r"\d+", v):
        return int(v), None
    return None, f"{key}={env[key]!r} is not a non-negative integer"


class LauncherCheck(Check):
    """Which launcher started this process and whether its variables agree.

    What it checks:
        torchrun / torch elastic (TORCHELASTIC_*), Slurm (SLURM_*), Open MPI
        (OMPI_COMM_WORLD_*) and PMI variables; RANK < WORLD_SIZE,
        LOCAL_RANK < LOCAL_WORLD_SIZE, integers where integers are expected;
        MASTER_ADDR and MASTER_PORT present and well formed when a rank is set.
    Why it matters:
        init_process_group(init_method="env://") reads these. A rank outside
        the world, or a world size that differs from the number of processes
        started, waits for peers that never come until the store timeout.
    Known limits:
        Under srun or mpirun without torchrun, RANK/WORLD_SIZE are usually
        derived by the training script; a mismatch is reported only when both
        are set.
    """

    name = "env.launcher"
    stage = Stage.ENVIRONMENT
    title = "Launcher context (torchrun, Slurm, MPI)"
    rules = (
        Rule("ENV020", "launcher-var-not-integer", E, "{text}",
             "Set {key} to a non-negative integer", cause="launcher_misconfig"),
        Rule("ENV021", "rank-out-of-range", E, "{key} is {rank} but {size_key} is {size}",
             "Make {key} smaller than {size_key}: ranks are numbered from 0 to {size_key}-1",
             cause="launcher_misconfig"),
        Rule("ENV022", "master-addr-missing", E, "{missing} not set while RANK/WORLD_SIZE are",
             "Set MASTER_ADDR to the first node's address and MASTER_PORT to a free port, "
             "or launch with torchrun, which sets them", cause="launcher_misconfig",
             env={"MASTER_ADDR": "<address of rank 0's host>", "MASTER_PORT": "29500"}),
        Rule("ENV023", "master-port-invalid", E, "MASTER_PORT={port!r} is not a port number",
             "Set MASTER_PORT to an integer between 1024 and 65535", cause="launcher_misconfig",
             env={"MASTER_PORT": "29500"}),
        Rule("ENV024", "master-addr-malformed", E, "MASTER_ADDR={addr!r} is not a bare host name or address",
             "Set MASTER_ADDR to a host name or IP address alone: {hint}", cause="launcher_misconfig"),
        Rule("ENV025", "world-size-differs-from-launcher", W,
             "WORLD_SIZE={world} but {launcher} started {tasks} tasks",
             "Make WORLD_SIZE equal the number of processes the launcher starts ({var}={tasks}), "
             "e.g. Slurm's --ntasks-per-node must equal the number of GPUs per node the script uses",
             cause="launcher_misconfig"),
    )

    def run(self, run: CheckRun) -> Iterator[Finding]:
        env: dict[str, str] = run.fact("launcher_env")
        launcher = launchers(env)
        run.data["launcher"] = launcher
        run.data["environment"] = {"launcher": launcher}

        vals: dict[str, int | None] = {}
        for key in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "SLURM_PROCID", "SLURM_NTASKS",
                    "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "PMI_RANK", "PMI_SIZE"):
            v, err = _int(env, key)
            vals[key] = v
            if err:
                yield self.finding("ENV020", text=err, key=key, evidence=[Evidence("env", f"{key}={env[key]}")])
        for rk, sk in (("RANK", "WORLD_SIZE"), ("LOCAL_RANK", "LOCAL_WORLD_SIZE"), ("SLURM_PROCID", "SLURM_NTASKS"),
                       ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"), ("PMI_RANK", "PMI_SIZE")):
            r, s = vals.get(rk), vals.get(sk)
            if r is not None and s is not None and r >= s:
                yield self.finding("ENV021", key=rk, rank=r, size_key=sk, size=s, ranks=[r],
                                   evidence=[Evidence("env", f"{rk}={r}"), Evidence("env", f"{sk}={s}")])

        if "RANK" in env or "WORLD_SIZE" in env:
            missing = [k for k in ("MASTER_ADDR", "MASTER_PORT") if not env.get(k, "").strip()]
            if missing and "PET_RDZV_ENDPOINT" not in env:
                yield self.finding("ENV022", missing=" and ".join(missing),
                                   evidence=[Evidence("env", f"{k}={env[k]}") for k in ("RANK", "WORLD_SIZE") if k in env])
        port = env.get("MASTER_PORT")
        if port is not None and port.strip():
            p, _ = _int(env, "MASTER_PORT")
            if p is None or not 1 <= p <= 65535:
                yield self.finding("ENV023", port=port, evidence=[Evidence("env", f"MASTER_PORT={port}")])
        addr = env.get("MASTER_ADDR")
        if addr is not None and addr.strip():
            hint = _addr_problem(addr)
            if hint:
                yield self.finding("ENV024", addr=addr, hint=hint, evidence=[Evidence("env", f"MASTER_ADDR={addr}")])

        world = vals.get("WORLD_SIZE")
        if world is not None and "TORCHELASTIC_RUN_ID" not in env:
            for var, name in (("SLURM_NTASKS", "srun"), ("OMPI_COMM_WORLD_SIZE", "mpirun"), ("PMI_SIZE", "the MPI launcher")):
                tasks = vals.get(var)
                if tasks is not None and tasks != world:
                    yield self.finding("ENV025", world=world, launcher=name, tasks=tasks, var=var,
                                       evidence=[Evidence("env", f"WORLD_SIZE={world}"), Evidence("env", f"{var}={tasks}")])

        if not launcher and "RANK" not in env:
            run.summary("no launcher: standalone process (commdoctor starts its own local process group)")
        else:
            parts = [" + ".join(launcher) or "env://"]
            if "RANK" in env:
                parts.append(f"rank {env['RANK']} of {env.get('WORLD_SIZE', '?')}")
            if "LOCAL_RANK" in env:
                parts.append(f"local rank {env['LOCAL_RANK']} of {env.get('LOCAL_WORLD_SIZE', '?')}")
            if addr:
                parts.append(f"master {addr}:{port or '?'}")
            run.summary(", ".join(parts))


def launchers(env: Mapping[str, str]) -> list[str]:
    """Which launchers' variables are present: torchrun, slurm, openmpi, pmi, kubernetes."""
    out = []
    if "TORCHELASTIC_RUN_ID" in env:
        out.append("torchrun")
    if "SLURM_JOB_ID" in env or "SLURM_PROCID" in env:
        out.append("slurm")
    if "OMPI_COMM_WORLD_RANK" in env:
        out.append("openmpi")
    if "PMI_RANK" in env or "PMIX_RANK" in env:
        out.append("pmi")
    if "KUBERNETES_SERVICE_HOST" in env:
        out.append("kubernetes")
    return out


def _addr_problem(addr: str) -> str | None:
    a = addr.strip()
    if a != addr:
        return f"remove the surrounding whitespace ({a!r})"
    if "://" in a:
        return f"drop the scheme ({a.split('://', 1)[1]!r})"
    if re.fullmatch(r"[^:\s]+:\d+", a):
        host, port = a.rsplit(":", 1)
        return f"put the port in MASTER_PORT (MASTER_ADDR={host}, MASTER_PORT={port})"
    if re.search(r"[\s,/]", a):
        return "it holds spaces, commas or slashes"
    if a.startswith("[") and a.endswith("]"):
        return f"give IPv6 addresses without brackets ({a[1:-1]})"
    return None


SHM_SMALL = 1 << 30  # 1 GiB: comfortably above what NCCL's SHM transport and DataLoader workers use
SHM_TINY = 256 << 20  # the container default is 64 MiB


class ShmCheck(Check):
    """Size, free space and permissions of /dev/shm, measured on this host or proven by a log.

    What it checks:
        The size and free space of the shared-memory filesystem (statvfs on
        this host, in `commdoctor run`), and, in `commdoctor logs`, the lines
        that prove it failed a job: NCCL's "Error while creating shared memory
        segment", "failed to extend /dev/shm/... to N bytes", No space left on
        device or Permission denied on /dev/shm, torch's "unable to allocate
        shared memory", and processes killed by SIGBUS. Both give one
        finding, ENV030 (logs gave LOG030 in earlier releases; that code
        still selects and explains it).
    Why it matters:
        NCCL's SHM transport and the proxy, and DataLoader worker processes,
        allocate there. Containers get 64 MiB by default (docker run without
        --shm-size, Kubernetes pods without a memory-backed emptyDir), and NCCL
        then fails with "Error while creating shared memory segment" or
        fallocate errors, or workers die with "Bus error".
    Known limits:
        How much is enough depends on GPUs per node and NCCL_BUFFSIZE; 1 GiB is
        the floor below which commdoctor warns. A log tells that a segment
        could not be made, not how large /dev/shm was: run commdoctor on the
        node it names to measure it.
    """

    name = "env.shm"
    stage = Stage.ENVIRONMENT
    title = "Shared memory (/dev/shm)"
    # A small /dev/shm is weighed by the local GPU count, which comes from the torch probe (a child
    # interpreter importing torch: over 10 s on a loaded host). Give it the torch checks' budget, so the
    # measurement is never lost to a deadline; statvfs itself is instant.
    timeout_s = 90.0
    rules = (
        Rule("ENV030", "shm-too-small", W, "/dev/shm {what}",
             "Give the container more shared memory: docker run --shm-size=16g, or on Kubernetes mount an "
             "emptyDir with medium: Memory at /dev/shm",
             cause="shm_too_small",
             steps=("df -h /dev/shm shows the size",
                    "Kubernetes: volumes: [{{name: dshm, emptyDir: {{medium: Memory}}}}] mounted at /dev/shm"),
             examples={"what": "is only 64 MiB (or, from a log: had no room for the segment NCCL asked for)"}),
        Rule("ENV031", "shm-nearly-full", W, "/dev/shm has only {free} free of {size}",
             "Remove stale segments left by crashed jobs (ls -la /dev/shm) or enlarge /dev/shm",
             cause="shm_too_small"),
        Rule("ENV032", "shm-unusable", E, "/dev/shm is missing or not writable: {why}",
             "Mount a writable tmpfs at /dev/shm", cause="shm_too_small",
             env={"NCCL_SHM_DISABLE": "1"}),
    )

    def run(self, run: CheckRun) -> Iterator[Finding]:
        shm: SharedMemory = run.fact("shm")
        run.data["shm"] = shm.to_dict()
        if shm.exists and shm.size_bytes is not None and shm.free_bytes is not None:
            run.summary(f"{_mib(shm.size_bytes)} ({_mib(shm.free_bytes)} free, {shm.fstype or 'unknown fs'})")
        gpus = 0
        if shm.size_bytes is not None and shm.size_bytes < SHM_SMALL:  # only the severity of ENV030 needs it
            try:
                t = run.fact("torch")  # seconds (a child interpreter imports torch): asked only when it decides
                gpus = int(t.get("device_count") or 0)
            except Exception:  # torch facts are optional here
                pass
        yield from self.judge(shm, gpus=gpus)

    def judge(self, shm: SharedMemory, *, gpus: int = 0, ranks: tuple[int, ...] = (), detail: str = "",
              consequence_of: str | None = None, env: Mapping[str, str] | None = None) -> Iterator[Finding]:
        """The findings one /dev/shm fact supports, whether a probe measured it or a log proved it.

        ``ranks``, ``detail``, ``consequence_of`` and ``env`` come from the log diagnosis, which
        knows which ranks logged the lines and what else they explain.
        """
        if shm.origin == LOG:
            yield self.finding("ENV030", what=_log_wording(shm), evidence=shm.evidence, severity=E,
                               ranks=ranks, hosts=(shm.host,) if shm.host else (), detail=detail,
                               consequence_of=consequence_of,
                               env={"NCCL_SHM_DISABLE": "1 (slower fallback)", **(env or {})},
                               steps=("df -h /dev/shm inside the container (commdoctor run there measures it)",
                                      "ls -la /dev/shm: remove stale nccl-* segments left by crashed jobs"))
            return
        if not shm.exists or shm.size_bytes is None or shm.free_bytes is None:
            yield self.finding("ENV032", why=shm.error or "missing", evidence=[Evidence("statvfs", shm.error or "")])
            return
        size, free = shm.size_bytes, shm.free_bytes
        ev = [Evidence("statvfs", f"{shm.path}: size {size} bytes, free {free} bytes")]
        if not shm.writable:
            yield self.finding("ENV032", why="not writable by this user", evidence=ev)
        if size < SHM_SMALL:
            sev = Severity.ERROR if (size < SHM_TINY and gpus >= 2) else Severity.WARNING
            yield self.finding("ENV030", what=f"is only {_mib(size)}", evidence=ev, severity=sev,
                               detail=f"{gpus} local GPU(s); NCCL's SHM transport and DataLoader workers need more")
        elif free < size // 10 and free < SHM_TINY:
            yield self.finding("ENV031", free=_mib(free), size=_mib(size), evidence=ev)


def _log_wording(shm: SharedMemory) -> str:
    seg = f"the {_mib(shm.requested_bytes)} segment" if shm.requested_bytes else "a shared-memory segment"
    if shm.failure == NO_SPACE:
        return f"had no room for {seg} (No space left on device)"
    if shm.failure == DENIED:
        return f"is not writable: creating {seg} was refused (Permission denied)"
    if shm.failure == SIGBUS:
        return "could not back a shared-memory mapping: a process died of SIGBUS"
    return f"is too small, full or not writable: creating {seg} failed"


class MemlockCheck(Check):
    """The locked-memory limit (ulimit -l) against the RDMA devices present.

    What it checks:
        RLIMIT_MEMLOCK of this process, and whether InfiniBand/RoCE devices exist
        (/sys/class/infiniband).
    Why it matters:
        RDMA registers (pins) memory. With a limited memlock, NCCL's IB
        transport and UCX fail to create queues or register buffers
        ("ibv_create_cq ... Cannot allocate memory", "Call to ibv_reg_mr failed").
    Known limits:
        The limit of the training processes is what counts: containers and
        Slurm (PropagateResourceLimits) may give them another one than this shell.
    """

    name = "env.memlock"
    stage = Stage.ENVIRONMENT
    title = "Locked-memory limit (ulimit -l)"
    rules = (
        Rule("ENV040", "memlock-limited", W, "locked memory is limited to {limit}{where}",
             "Raise the limit to unlimited: ulimit -l unlimited (limits.conf: '* - memlock unlimited'; "
             "docker: --ulimit memlock=-1:-1; Slurm: PropagateResourceLimitsExcept=MEMLOCK)",
             cause="rlimit_memlock"),
    )

    def run(self, run: CheckRun) -> Iterator[Finding]:
        m: LockedMemory = run.fact("memlock")
        run.data["memlock"] = m.to_dict()
        soft = m.soft_bytes
        names = ", ".join(d.name for d in m.rdma_devices)
        run.summary(f"{_mib(soft)}; RDMA devices: {names or 'none'}")
        if soft is not None:
            ev = [Evidence("getrlimit", f"RLIMIT_MEMLOCK soft={soft} hard={m.hard_bytes}")]
            if m.rdma_devices:
                yield self.finding("ENV040", limit=_mib(soft), where=f" while RDMA devices are present ({names})",
                                   evidence=ev, severity=Severity.ERROR)
            else:
                yield self.finding("ENV040", limit=_mib(soft),
                                   where=" (no RDMA device here; it matters on InfiniBand/RoCE hosts and with UCX)",
                                   evidence=ev, severity=Severity.INFO)


def _suggest(name: str) -> str | None:
    m = difflib.get_close_matches(name, V.ALL_KNOWN, n=1, cutoff=0.8)
    return m[0] if m else None


class EnvVarsCheck(Check):
    """NCCL_*, GLOO_*, TORCH_NCCL_* and TORCH_DISTRIBUTED_* variables: typos, deprecated names, costly settings.

    What it checks:
        Every variable with those prefixes against the names NCCL, Gloo and
        torch read; unknown names get a did-you-mean; deprecated names their
        replacement; values outside a variable's allowed set; settings that
        silently cost performance.
    Why it matters:
        A misspelt variable is ignored without a word (NCCL_SOCKET_IFNAM leaves
        NCCL choosing its own interface), and debugging switches left on in
        production slow every collective.
    Known limits:
        Names come from NCCL's and torch's sources; NCCL plugins (aws-ofi-nccl,
        the SHARP plugin) read further NCCL_* names that may be flagged as unknown.
    """

    name = "env.vars"
    stage = Stage.ENVIRONMENT
    title = "Communication environment variables"
    rules = (
        Rule("ENV050", "unknown-variable", W, "{name} is not a variable {lib} reads{hint}",
             "Rename it to {suggestion}", cause="environment_misconfig"),
        Rule("ENV051", "deprecated-variable", W, "{name} is deprecated{replacement_text}",
             "Use {replacement} instead of {name}", cause="environment_misconfig"),
        Rule("ENV052", "slow-setting", W, "{name}={value} turns off {what}",
             "Unset {name} unless it works around a known problem", cause="performance_setting"),
        Rule("ENV053", "invalid-value", W, "{name}={value!r} is not one of {allowed}",
             "Set {name} to one of {allowed}", cause="environment_misconfig"),
        Rule("ENV055", "nccl-list-refused", E, "{name}={value!r}: {problem}",
             "Give {name} names NCCL knows, the first entry alone without a collective prefix "
             "({name}=\"{example}\"), or unset it", cause="environment_misconfig"),
        Rule("ENV054", "exclude-syntax-for-gloo", E, "GLOO_SOCKET_IFNAME={value!r} uses NCCL's ^/= syntax, which gloo does not understand",
             "Give GLOO_SOCKET_IFNAME exact interface names, comma separated (e.g. eth0)",
             cause="wrong_interface"),
    )

    def run(self, run: CheckRun) -> Iterator[Finding]:
        env: dict[str, str] = run.fact("comm_env")
        checked = {k: v for k, v in env.items() if k.startswith(("NCCL_", "GLOO_", "TORCH_NCCL_", "TORCH_DISTRIBUTED_", "TORCH_FR_", "TORCH_GLOO_"))}
        # An image's self-description (NCCL_VERSION in NVIDIA's CUDA images) is
        # not a setting: reporting it as a typo would blame a stock image.
        metadata = sorted(k for k in checked if k in V.IMAGE_METADATA)
        for k in metadata:
            del checked[k]
        run.data["variables"] = dict(sorted(env.items()))
        run.data["image_metadata"] = metadata
        run.summary(f"{len(checked)} set" + (": " + ", ".join(sorted(checked)) if checked else "")
                    + (f" ({', '.join(metadata)}: image metadata, not read by NCCL)" if metadata else ""))
        # Typos and wrong syntax change behaviour silently, so they come before costs.
        order = {"ENV054": 0, "ENV055": 0, "ENV050": 1, "ENV053": 2, "ENV051": 3, "ENV052": 4}
        out: list[Finding] = []
        for name in sorted(checked):
            value = checked[name]
            ev = [Evidence("env", f"{name}={value}")]
            if name in V.DEPRECATED:
                rep = V.DEPRECATED[name]
                out.append(self.finding("ENV051", name=name, replacement=rep or "nothing (it has no effect)",
                                        replacement_text=f"; use {rep}" if rep else " and has no effect",
                                        evidence=ev, steps=() if rep else ("Remove it",)))
            elif name not in V.ALL_KNOWN:
                s = _suggest(name)
                lib = "NCCL" if name.startswith("NCCL_") else "Gloo" if name.startswith("GLOO_") else "torch"
                out.append(self.finding("ENV050", name=name, lib=lib, suggestion=s or "a documented name (or remove it)",
                                        hint=f"; did you mean {s}?" if s else "", evidence=ev))
            if name in V.NCCL_LISTS:
                problem = V.nccl_list_problem(name, value)
                if problem:
                    out.append(self.finding(
                        "ENV055", name=name, value=value, problem=problem, evidence=ev,
                        example="ring,tree;allreduce:^nvls" if name == "NCCL_ALGO" else "^LL128",
                        detail="NCCL 2.24 and later refuse such a value when they create each communicator (NCCL WARN "
                               "'Unrecognized element token', 'Unrecognized prefix token' or 'All entries except the "
                               "first must have a prefix', then 'invalid usage' on every rank); earlier releases "
                               "ignore the name without a word."))
            allowed = V.VALID_VALUES.get(name)
            if allowed and value.strip().upper() not in allowed:
                out.append(self.finding("ENV053", name=name, value=value, allowed=", ".join(sorted(allowed)), evidence=ev))
            for slow_name, slow_value, what in V.SLOW_SETTINGS:
                if name == slow_name and value.strip().upper() == slow_value:
                    out.append(self.finding("ENV052", name=name, value=value, what=what, evidence=ev))
        g = checked.get("GLOO_SOCKET_IFNAME")
        if g and (g.lstrip().startswith(("^", "=")) or ",^" in g):
            out.append(self.finding("ENV054", value=g, evidence=[Evidence("env", f"GLOO_SOCKET_IFNAME={g}")]))
        yield from sorted(out, key=lambda f: order[f.code])


class PtraceCheck(Check):
    """Whether commdoctor may take stacks of other processes (py-spy needs ptrace).

    What it checks:
        kernel.yama.ptrace_scope, CAP_SYS_PTRACE, the container commdoctor runs
        in, and whether py-spy is installed.
    Why it matters:
        Diagnosing a hang means reading every rank's stack. Without ptrace
        rights py-spy fails with "Permission denied", and the hang stage can
        only guess.
    Known limits:
        Rules are evaluated, not exercised: a seccomp profile that blocks
        process_vm_readv is seen only when the hang stage attaches.
    """

    name = "env.ptrace"
    stage = Stage.ENVIRONMENT
    title = "Permission to read other processes' stacks"
    rules = (
        Rule("ENV060", "ptrace-restricted", W, "stacks of hung ranks cannot be taken: {why}",
             "{fix}", cause="environment_misconfig"),
        Rule("ENV061", "py-spy-missing", W, "py-spy is not installed",
             "pip install py-spy", cause="environment_misconfig"),
    )

    def run(self, run: CheckRun) -> Iterator[Finding]:
        p: PtraceAccess = run.fact("ptrace")
        run.data["ptrace"] = p.to_dict()
        scope, cap, uid, container = p.yama_ptrace_scope, p.cap_sys_ptrace, p.uid, p.container
        ev = [Evidence("procfs", f"yama ptrace_scope={scope if scope is not None else 'absent'}, "
                                 f"CAP_SYS_PTRACE={'yes' if cap else 'no'}, uid={uid}, container={container or 'none'}")]
        why = fix = None
        if scope == 3:
            why, fix = "kernel.yama.ptrace_scope=3 forbids ptrace for everyone", \
                "Reboot with ptrace_scope below 3 (it cannot be lowered at run time)"
        elif scope == 2 and not cap:
            why, fix = "kernel.yama.ptrace_scope=2 allows ptrace only with CAP_SYS_PTRACE", \
                "Run commdoctor as root, or sudo sysctl kernel.yama.ptrace_scope=1"
        elif scope == 1 and not cap:
            why, fix = "kernel.yama.ptrace_scope=1 allows attaching only to your own child processes", \
                "Run commdoctor with sudo, or sudo sysctl kernel.yama.ptrace_scope=0"
        elif container and not cap:
            why, fix = f"this {container} container lacks CAP_SYS_PTRACE", \
                "Start the container with --cap-add SYS_PTRACE (Kubernetes: securityContext.capabilities.add: [SYS_PTRACE])"
        if why:
            yield self.finding("ENV060", why=why, fix=fix, evidence=ev)
        if not p.py_spy:
            yield self.finding("ENV061")
        run.summary(("allowed" if not why else "restricted") + f"; py-spy: {p.py_spy or 'missing'}")


ENV_CHECKS: tuple[type[Check], ...] = (TorchCheck, GpuCheck, LauncherCheck, ShmCheck, MemlockCheck, EnvVarsCheck, PtraceCheck)
