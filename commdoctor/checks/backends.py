"""The backend advisor: which backend a job on this host should use, and why.

Promise: a pure function of facts (torch build, GPUs, RDMA devices, IP over
InfiniBand interfaces, launcher, the backend the job asks for, and the
process-group stage's measurements when they ran), so each rule of the
decision table in docs/backends.md is testable over facts captured elsewhere.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Iterator, Mapping

from commdoctor.checks.base import Check, Rule
from commdoctor.checks.env import launchers, require_torch
from commdoctor.core.backends import FALLBACK
from commdoctor.core.model import Evidence, Finding, Severity, Stage
from commdoctor.probes.env import BACKEND_VARS

if TYPE_CHECKING:
    from commdoctor.core.context import CheckRun

E, W, I = Severity.ERROR, Severity.WARNING, Severity.INFO
BACKENDS = ("nccl", "gloo", "mpi", "ucc")


@dataclass
class JobBackend:
    """What the job asks for: a single backend, or a device map like ``cpu:gloo,cuda:nccl``."""

    text: str
    source: str
    per_device: dict[str, str] = field(default_factory=dict)  # device type -> backend
    errors: list[str] = field(default_factory=list)

    @classmethod
    def parse(cls, text: str, source: str) -> JobBackend:
        jb = cls(text=text, source=source)
        t = text.strip().lower()
        if ":" in t:
            for part in t.split(","):
                dev, _, be = part.partition(":")
                dev, be = dev.strip(), be.strip()
                if not dev or not be:
                    jb.errors.append(f"{part!r} is not DEVICE:BACKEND")
                    continue
                jb.per_device[dev] = be
        elif t:
            # A plain name applies to every device type the backend supports.
            jb.per_device = {"cpu": t, "cuda": t} if t in ("gloo", "mpi", "ucc") else {"cuda": t}
        for be in set(jb.per_device.values()):
            if be not in BACKENDS:
                jb.errors.append(f"{be!r} is not a backend torch knows ({', '.join(BACKENDS)})")
        return jb

    @property
    def backends(self) -> set[str]:
        return set(self.per_device.values())


def advise(facts: Mapping[str, Any]) -> dict[str, Any]:
    """The recommendation: {"backend", "device_map", "reason"} from a host's facts."""
    gpus = int(facts.get("gpus") or 0)
    built = facts.get("built") or {}
    rdma = bool(facts.get("rdma_devices"))
    ipoib = bool(facts.get("ipoib_interfaces"))
    launcher = set(facts.get("launcher") or ())
    if gpus:
        if built.get("nccl"):
            return {"backend": "nccl", "device_map": "cpu:gloo,cuda:nccl",
                    "reason": "this host has GPUs and torch has NCCL: NCCL is the only backend that uses NVLink, "
                              "InfiniBand and GPUDirect RDMA for CUDA tensors; keep gloo for CPU tensors"}
        return {"backend": "gloo", "device_map": "cpu:gloo,cuda:gloo",
                "reason": "this host has GPUs but this torch build has no NCCL; install a CUDA build of torch "
                          "with NCCL, gloo is only a slow stopgap for CUDA tensors"}
    if rdma and not ipoib and (built.get("mpi") or built.get("ucc")):
        be = "mpi" if built.get("mpi") else "ucc"
        return {"backend": be, "device_map": f"cpu:{be}",
                "reason": "CPU tensors on an InfiniBand host without IP over IB: gloo needs TCP/IP, "
                          f"{be} can use the fabric directly"}
    if ("openmpi" in launcher or "pmi" in launcher) and built.get("mpi"):
        return {"backend": "mpi", "device_map": "cpu:mpi",
                "reason": "launched by mpirun and torch has MPI: the MPI backend reuses the launcher's transport"}
    return {"backend": "gloo", "device_map": "cpu:gloo",
            "reason": "CPU tensors: gloo is built into every torch and needs only TCP"}


def _moved_bytes(group: Mapping[str, Any]) -> bool:
    """Whether a pg.* result's timings are communication: 2 or more ranks, and bandwidth measured."""
    try:
        world = int(group.get("world_size") or 0)
    except (TypeError, ValueError):
        return False
    return world >= 2 and bool(group.get("bandwidth"))


def no_comparison_reason(pg_results: Mapping[str, Any]) -> str | None:
    """Why nccl and gloo cannot be compared when both groups ran on CUDA tensors, or None.

    None also when either did not run (no GPU, --backend): there is nothing to explain then.
    """
    n = pg_results.get("nccl")
    g = pg_results.get("gloo_cuda")
    if not (n and g):
        return None
    sizes = {int(x.get("world_size") or 0) for x in (n, g)}
    if min(sizes) == 1:
        # One rank per GPU on a one-GPU host: each all_reduce is a copy inside one GPU.
        return "one rank per group: nothing crossed between ranks, so no speed comparison"
    if not (_moved_bytes(n) and _moved_bytes(g)):
        return "no speed comparison: one of the groups measured no bandwidth"
    return None


def ratio_text(pg_results: Mapping[str, Any]) -> str | None:
    """'nccl is 9.4x faster than gloo for 16 MiB all_reduce on this host', when both were measured on CUDA tensors
    by groups of 2 or more ranks (a group of one moves no bytes between ranks: its timings are local copies)."""
    n = pg_results.get("nccl")
    g = pg_results.get("gloo_cuda")
    if not (n and g) or not (_moved_bytes(n) and _moved_bytes(g)):
        return None
    nb = {b["bytes"]: b["time_s"] for b in n.get("bandwidth", []) if b.get("time_s")}
    gb = {b["bytes"]: b["time_s"] for b in g.get("bandwidth", []) if b.get("time_s")}
    common = sorted(set(nb) & set(gb))
    if not common:
        return None
    size = common[-1]
    r = gb[size] / nb[size]
    return f"nccl is {r:.1f}x faster than gloo for {size >> 20 or size >> 10}{' MiB' if size >= 1 << 20 else ' KiB'} all_reduce on this host"


class BackendAdvisorCheck(Check):
    """Which communication backend this host's jobs should use, and misuse of the one they ask for.

    What it checks:
        What this torch build has (nccl, gloo, mpi, ucc), the GPUs, InfiniBand /
        RoCE devices and IP-over-IB interfaces, the launcher, and the backend
        the job asks for (``--job-backend``, or TORCH_DISTRIBUTED_BACKEND /
        PL_TORCH_DISTRIBUTED_BACKEND / DIST_BACKEND / DDP_BACKEND). It
        recommends a backend with the reason and, where the process-group stage
        measured both, the measured ratio.
    Why it matters:
        A job ported from a laptop that still runs gloo over TCP on a GPU
        cluster gives byte-for-byte the same results at a fraction of the
        speed, and nothing says so. Asking for a backend the build lacks fails
        with a message that does not say what to use instead.
    Known limits:
        The job's backend is known only when given or set in the environment;
        the hooks and the log analyzer report what a running job really used.
    """

    name = "backend.advisor"
    stage = Stage.PG_INIT
    title = "Backend advice"
    requires = ("env.torch",)
    # As long as env.torch's: with --select BK the torch probe (importing torch in a child) runs inside
    # this check's deadline, and a CUDA build imported cold on a busy GPU host takes more than 10 s.
    timeout_s = 90.0
    rules = (
        Rule("BK001", "backend-recommendation", I, "use {backend} here ({device_map}): {reason}",
             "Pass backend=\"{device_map}\" to init_process_group", cause=None),
        Rule("BK002", "gloo-carries-cuda-tensors", W, "CUDA tensors go through gloo ({job}) on a host with {gpus} GPU(s)",
             "Use NCCL for CUDA tensors: init_process_group(backend=\"cpu:gloo,cuda:nccl\"){measured}",
             cause="performance_setting"),
        Rule("BK003", "requested-backend-not-built", E, "the job asks for {backend} but this torch build does not have it",
             "{fallback}", cause="backend_unavailable"),
        Rule("BK004", "unknown-backend", E, "{text}", "Use one of nccl, gloo, mpi, ucc, or a map such as cpu:gloo,cuda:nccl",
             cause="environment_misconfig"),
        Rule("BK005", "nccl-without-gpus", E, "the job asks for nccl but no GPU is visible to torch",
             "Use gloo for CPU tensors (backend=\"gloo\"), or check CUDA_VISIBLE_DEVICES and the driver",
             cause="backend_unavailable"),
    )

    def run(self, run: CheckRun) -> Iterator[Finding]:
        t = require_torch(run)
        memlock = run.fact("memlock")
        facts = {
            "gpus": int(t.get("device_count") or 0),
            "built": t.get("backends") or {},
            "rdma_devices": [d.to_dict() for d in memlock.rdma_devices],  # JSON-safe, as advise() and reports read it
            "ipoib_interfaces": run.fact("ipoib"),
            "launcher": launchers(run.fact("launcher_env")),
        }
        pg = {name.split(".", 1)[1]: r.data for name, r in run.ctx.results.items() if name.startswith("pg.") and r.data}
        yield self.recommend(facts, pg, run)
        measured = run.data.get("measured")
        job = _job_backend(run)
        if job is None:
            return
        ev = [Evidence(job.source, job.text)]
        for err in job.errors:
            yield self.finding("BK004", text=f"backend {job.text!r}: {err}", evidence=ev)
        for be in sorted(job.backends & set(BACKENDS)):
            if not facts["built"].get(be):
                fallback = FALLBACK[be]
                yield self.finding("BK003", backend=be, fallback=fallback, evidence=ev)
            elif be == "nccl" and not facts["gpus"]:
                yield self.finding("BK005", evidence=ev)
        if facts["gpus"] and job.per_device.get("cuda") == "gloo":
            yield self.finding("BK002", job=job.text, gpus=facts["gpus"],
                               measured=f" ({measured})" if measured else "", evidence=ev)


    def recommend(self, facts: Mapping[str, Any], pg: Mapping[str, Any], run: CheckRun | None = None) -> Finding:
        """BK001 from a host's facts and the pg.* results' data (keyed gloo, nccl, gloo_cuda); fills the run's data."""
        adv = advise(facts)
        measured = ratio_text(pg)
        why_not = None if measured else no_comparison_reason(pg)
        reason = adv["reason"] + (f"; {measured}" if measured else f"; {why_not}" if why_not else "")
        if run is not None:
            run.data.update({"recommendation": adv, "facts": dict(facts), "measured": measured, "not_compared": why_not})
            run.summary(f"{adv['backend']} ({adv['device_map']})")
        built = facts.get("built") or {}
        return self.finding("BK001", backend=adv["backend"], device_map=adv["device_map"], reason=reason,
                            evidence=[Evidence("probe:torch", f"built: {', '.join(k for k, v in built.items() if v) or 'none'}; "
                                                              f"GPUs: {int(facts.get('gpus') or 0)}; "
                                                              f"RDMA devices: {len(facts.get('rdma_devices') or [])}")])


def _job_backend(run: CheckRun) -> JobBackend | None:
    given = run.options.extra.get("job_backend")
    if given:
        return JobBackend.parse(given, "--job-backend")
    env = run.fact("backend_env")
    for k in BACKEND_VARS:
        if env.get(k, "").strip():
            return JobBackend.parse(env[k], f"env {k}")
    return None


BACKEND_CHECKS: tuple[type[Check], ...] = (BackendAdvisorCheck,)
