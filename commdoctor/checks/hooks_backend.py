"""What commdoctor.hooks noticed about the backend inside the job: CUDA tensors carried by gloo.

Promise: a pure function of the ``hook_records`` fact (its ``backend`` records, written by
commdoctor.hooks.backendwatch); standard library only, so ``commdoctor records`` and
``commdoctor logs`` run without torch.
"""

from __future__ import annotations

from typing import Any, Iterator

from commdoctor.checks.base import Check, Rule
from commdoctor.checks.hooks import MODES, _rec
from commdoctor.loaders.hook_records import HookRecords
from commdoctor.core.model import Evidence, Finding, Severity, Stage
from commdoctor.core.context import CheckRun


def _size(n: int) -> str:
    for unit, k in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << k:
            return f"{n / (1 << k):.3g} {unit}"
    return f"{n} B"


class HookBackendCheck(Check):
    """Collectives on CUDA tensors that went through gloo, as the hooks measured them in the job.

    What it checks:
        The ``backend`` records commdoctor.hooks writes (once per process) when
        a process group carries CUDA tensors with gloo (``backend="gloo"`` on a
        GPU job, or a device map sending ``cuda`` to gloo): which group, which
        ranks, and the time and bandwidth gloo took for the largest of the
        first calls, timed inside the job from the call to the completion of
        gloo's future; with the nccl-against-gloo figure of a ``commdoctor
        run`` report when the job named one (COMMDOCTOR_REPORT).
    Why it matters:
        Gloo gives correct results on CUDA tensors (equal to NCCL's up to the
        order in which floating-point sums are taken), so a job ported from a
        CPU prototype runs, slowly, and nothing else says so. Gloo copies every
        CUDA tensor to host memory and back and moves it over TCP; NCCL keeps it
        on the GPU and uses NVLink, InfiniBand and GPUDirect where the host has
        them.
    Known limits:
        The hooks time only the first calls of each process (five), so the
        figure is an early one (gloo sets up connections lazily: the first
        call is left out when there are others). On a host without GPUs the
        notice never fires (no CUDA tensors exist); the figure for nccl comes
        only from a ``commdoctor run`` report on a GPU host.
    """

    name = "hooks.backend"
    stage = Stage.LOGS
    title = "Backend used for CUDA tensors (commdoctor.hooks)"
    modes = MODES
    rules = (
        Rule("HOOK030", "cuda-tensors-through-gloo", Severity.WARNING,
             "{device} tensors went through gloo on {group} ({who}): {op} of {size} took {ms} ms ({gbps} GB/s)",
             "Pass backend=\"cpu:gloo,cuda:nccl\" to init_process_group so NCCL carries CUDA tensors{measured}",
             cause="performance_setting",
             steps=("commdoctor run on a GPU host measures nccl against gloo on the same collectives",
                    "DDP/FSDP follow the process group's backend: no other change is needed")),
    )

    def run(self, run: CheckRun) -> Iterator[Finding]:
        rec = _rec(run)
        yield from self.evaluate(rec, run)

    def evaluate(self, rec: HookRecords, run: CheckRun | None = None) -> Iterator[Finding]:
        by_group: dict[tuple[str, str], list[tuple[int, int, str, dict[str, Any]]]] = {}
        for item in rec.backend:
            d = item[3]
            by_group.setdefault((str(d.get("group", "?")), str(d.get("device", "cuda"))), []).append(item)
        for (group, device), items in sorted(by_group.items()):
            ranks = sorted({r for r, _, _, _ in items})
            # The slowest rank's figure: the group runs at its pace.
            rank, line, path, d = max(items, key=lambda it: float(it[3].get("time_s") or 0.0))
            measured = next((str(it[3]["measured"]) for it in items if it[3].get("measured")), "")
            text = (f"{device} tensors through gloo: {d.get('op')} of {d.get('bytes')} bytes in {d.get('time_s')} s "
                    f"({d.get('gbps')} GB/s) over {d.get('calls')} timed calls")
            yield self.finding(
                "HOOK030", device=device, group="the default group" if group == "0" else f"group {group}",
                who=("rank " if len(ranks) == 1 else "ranks ") + ", ".join(map(str, ranks)),
                op=d.get("op", "?"), size=_size(int(d.get("bytes") or 0)),
                ms=f"{float(d.get('time_s') or 0.0) * 1e3:.2f}", gbps=f"{float(d.get('gbps') or 0.0):.2f}",
                measured=(f" (measured on this host: {measured})" if measured else
                          "; run `commdoctor run` on a GPU host of this cluster for the nccl-against-gloo figure"),
                ranks=ranks, evidence=[Evidence(path, text, line=line, rank=rank)])
        if run is not None:
            run.summary(f"{len(rec.backend)} notice(s)" if rec.backend else "no CUDA tensors went through gloo")


HOOK_BACKEND_CHECKS: tuple[type[Check], ...] = (HookBackendCheck,)
