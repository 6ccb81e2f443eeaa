"""Process-group stage: start a real local process group per backend and prove it works.

Promise: ``evaluate`` is a pure function of the probe's result (what each rank
reported), so it can be tested on results of real runs with faults injected.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Iterator

from commdoctor.checks.base import Check, Rule
from commdoctor.checks.env import require_torch
from commdoctor.core.errors import SkipCheck
from commdoctor.core.model import Evidence, Finding, Severity, Stage

if TYPE_CHECKING:
    from commdoctor.core.context import CheckRun, Options

E, W, I = Severity.ERROR, Severity.WARNING, Severity.INFO

#: (pattern in the backend's error text, cause, what it means). First match wins.
ERROR_CAUSES: tuple[tuple[re.Pattern[str], str, str], ...] = tuple(
    (re.compile(p, re.I), c, m)
    for p, c, m in (
        (r"address already in use|errno 98|EADDRINUSE", "port_conflict", "the rendezvous port is taken"),
        (r"Unable to find address for[: ]", "wrong_interface", "GLOO_SOCKET_IFNAME names an interface this host lacks"),
        (r"ss1\.ss_family == ss2\.ss_family", "hostname_resolution",
         "the hostname resolves to an address of another family (IPv6 ::1 against IPv4)"),
        (r"Unable to resolve hostname|gai error|Name or service not known", "hostname_resolution",
         "the hostname does not resolve"),
        (r"No route to host|Network is unreachable", "rendezvous_unreachable", "no route to the peer"),
        (r"Connection refused", "wrong_interface", "a peer's advertised address refuses connections"),
        (r"Duplicate GPU detected", "duplicate_gpu", "two ranks use one GPU"),
        (r"out of memory|CUDA error: out of memory", "cuda_oom", "GPU memory is exhausted"),
        (r"system not yet initialized", "fabric_manager_nvls", "the NVSwitch fabric is not ready"),
        (r"driver version is insufficient|too old", "driver_cuda_mismatch", "the driver is older than the CUDA runtime"),
        (r"shared memory|/dev/shm|fallocate", "shm_too_small", "/dev/shm is too small"),
        (r"not built with|is not available|Invalid backend|No backend type associated", "backend_unavailable",
         "the backend is not available in this build"),
    )
)


def classify(text: str) -> tuple[str, str]:
    for pat, cause, meaning in ERROR_CAUSES:
        if pat.search(text):
            return cause, meaning
    return "other", ""


#: What a process group of one rank cannot show (pg summaries, the advisor).
ONE_RANK_NO_BANDWIDTH = "no bandwidth: with one rank nothing crosses between ranks"


def _fmt_bytes(n: int) -> str:
    return f"{n >> 20} MiB" if n >= 1 << 20 else f"{n >> 10} KiB"


class _LocalGroupCheck(Check):
    """Base for one backend's local process-group test; subclasses set ``backend``."""

    backend = "gloo"
    device = "cpu"
    stage = Stage.PG_INIT
    requires = ("env.torch",)
    rules = (
        Rule("PG001", "pg-init-failed", E, "the {backend} process group failed to initialise on rank {rank}",
             "{remedy}", cause="other"),
        Rule("PG002", "pg-rank-never-joined", E, "rank(s) {missing} never joined the {backend} process group within {timeout:g} s",
             "Find what keeps rank(s) {missing} from reaching init_process_group (see their stderr below); "
             "the other ranks wait for the full timeout and name nobody", cause="rendezvous_unreachable"),
        Rule("PG003", "pg-rank-died", E, "rank {rank} of the {backend} process group exited with status {status} before finishing",
             "Read rank {rank}'s own error below; the other ranks' errors follow from it", cause="peer_process_died"),
        Rule("PG004", "collective-wrong-result", E, "{op} over {backend} returned wrong numbers on rank {rank}",
             "Do not train on this host until this is explained: {hint}", cause="other"),
        Rule("PG005", "collective-failed", E, "{op} over {backend} failed on rank {rank}", "{remedy}", cause="other"),
        Rule("PG006", "collective-hung", E, "{backend} {stage} did not complete within {timeout:g} s (ranks {ranks_text})",
             "Take stacks of the ranks (commdoctor hang) and check the network stages above", cause="other"),
        Rule("PG007", "backend-unavailable", E, "the {backend} backend is not available: {why}",
             "{remedy}", cause="backend_unavailable"),
    )

    def deadline(self, options: Any) -> float:
        return float(options.pg_timeout) + 20.0

    def run(self, run: CheckRun) -> Iterator[Finding]:
        t = require_torch(run)
        opts: Options = run.options
        requested = self.backend in opts.backends
        if opts.backends and not requested:
            raise SkipCheck(f"--backend {','.join(opts.backends)} leaves {self.backend} out")
        world = opts.world_size
        avail = (t.get("backends") or {}).get(self.backend, False)
        gpus = int(t.get("device_count") or 0)
        if self.device == "cuda" and gpus == 0:
            why = "no GPU is visible to torch"
            if self.backend == "nccl" and not avail:
                why = "this torch build has no NCCL"
            if requested and self.backend == "nccl":
                yield self.finding("PG007", backend="nccl", why=why,
                                   remedy="Use gloo for CPU tensors, or run on a host with GPUs and a CUDA build of torch",
                                   evidence=[Evidence("probe:torch", f"is_nccl_available={avail}, device_count={gpus}")])
                return
            raise SkipCheck(f"{why}; this test needs one GPU per rank")
        if self.device == "cuda":
            world = gpus  # one rank per GPU
        if not avail:
            if requested or self.backend == "gloo":
                yield self.finding("PG007", backend=self.backend, why="this torch build does not include it",
                                   remedy="Install an official torch wheel (gloo is built into every Linux and macOS wheel)"
                                   if self.backend == "gloo" else "Use a backend this build has (see env.torch)")
                return
            raise SkipCheck(f"this torch build has no {self.backend}")
        from commdoctor.probes.pg_init import run_local_group

        # Inside a multi-node job the cross-node test measures the network; one local size is enough there.
        sizes = opts.extra.get("pg_sizes")
        kw: dict[str, Any] = {"sizes": tuple(sizes)} if sizes else {}
        if world < 2:
            kw["sizes"] = ()  # one rank moves nothing between ranks: timing it would only time a local copy
        res = run_local_group(self.backend, world, timeout=opts.pg_timeout, device=self.device, **kw)
        yield from self.evaluate(res, run)

    def evaluate(self, res: dict[str, Any], run: CheckRun | None = None) -> Iterator[Finding]:
        """Findings from one ``run_local_group`` result; fills the run's summary when given."""
        backend, world, timeout = res["backend"], res["world_size"], res["timeout_s"]
        ranks: dict[str, dict[str, Any]] = res["ranks"]
        started = set(res.get("started_ranks", range(world)))
        joined = {int(r) for r, rec in ranks.items() if any(e.get("event") == "joined" for e in rec["events"])}
        done = {int(r) for r, rec in ranks.items() if any(e.get("event") == "done" for e in rec["events"])}
        errors = {int(r): next(e for e in rec["events"] if e.get("event") == "error")
                  for r, rec in ranks.items() if any(e.get("event") == "error" for e in rec["events"])}
        emitted = False

        def stderr_ev(r: int) -> list[Evidence]:
            tail = [ln for ln in ranks.get(str(r), {}).get("stderr", []) if ln.strip()][-6:]
            return [Evidence(f"rank{r}:stderr", ln, rank=r) for ln in tail]

        # 1. A rank that never joined (never started, stuck before init, or died early).
        missing = sorted(set(range(world)) - joined)
        died_early = [r for r in missing if r in started and r not in errors
                      and ranks[str(r)].get("returncode") not in (None, 0) and not ranks[str(r)].get("killed")]
        for r in died_early:
            emitted = True
            yield self.finding("PG003", backend=backend, rank=r, status=ranks[str(r)]["returncode"], ranks=[r],
                               evidence=stderr_ev(r) or [Evidence(f"rank{r}", f"exit status {ranks[str(r)]['returncode']}", rank=r)])
        reached = {int(r) for r, rec in ranks.items() if any(e.get("event") == "init" for e in rec["events"])}
        # A rank that reached init_process_group and waits there is a victim, not the missing one,
        # unless every rank is waiting (then nobody can be blamed from here).
        silent = [r for r in missing if r not in errors and r not in died_early and r not in reached]
        if not silent and not errors and not died_early and missing and res.get("timed_out"):
            silent = missing
        first_failure: str | None = None
        if silent:
            emitted = True
            first_failure = "PG002"
            ev = []
            for r in silent:
                if r not in started:
                    ev.append(Evidence(f"rank{r}", "process was never started", rank=r))
                else:
                    ev.extend(stderr_ev(r) or [Evidence(f"rank{r}", "started, but never reached init_process_group", rank=r)])
            for r in sorted(reached - joined - set(errors)):
                ev.append(Evidence(f"rank{r}", "waited in init_process_group for the missing rank(s)", rank=r))
            for r, err in errors.items():
                ev.append(Evidence(f"rank{r}", f"{err.get('type')}: {err.get('message', '').strip()}", rank=r))
            yield self.finding("PG002", backend=backend, missing=", ".join(map(str, silent)), timeout=timeout,
                               ranks=silent, evidence=ev)

        # 2. Ranks that raised: the backend's own error text is the evidence.
        for r, err in sorted(errors.items()):
            emitted = True
            text = f"{err.get('type')}: {err.get('message', '').strip()}"
            cause, meaning = classify(text + "\n" + "\n".join(ranks[str(r)].get("stderr", [])))
            remedy = {
                "port_conflict": "Another process holds the port; pick another MASTER_PORT or stop the stale job",
                "wrong_interface": "Name an interface that exists and reaches the peers (GLOO_SOCKET_IFNAME / NCCL_SOCKET_IFNAME)",
                "hostname_resolution": "Make the hostname resolve to this host's routable IPv4 address (/etc/hosts), or set GLOO_SOCKET_IFNAME",
                "backend_unavailable": "Use a backend this build has (commdoctor checks lists them under env.torch)",
            }.get(cause, f"See the error text below{': ' + meaning if meaning else ''}")
            ev = [Evidence(f"rank{r}", text, rank=r)] + stderr_ev(r)
            if err.get("stage") == "init":
                yield self.finding("PG001", backend=backend, rank=r, remedy=remedy, ranks=[r], evidence=ev,
                                   cause=cause, consequence_of=first_failure, detail=meaning)
            else:
                yield self.finding("PG005", backend=backend, rank=r, op=err.get("stage"), remedy=remedy, ranks=[r],
                                   evidence=ev, cause=cause, consequence_of=first_failure, detail=meaning)

        # 3. Wrong numbers.
        for rs, rec in sorted(ranks.items(), key=lambda kv: int(kv[0])):
            for e in rec["events"]:
                if e.get("event") == "collective" and e.get("ok") is False:
                    emitted = True
                    hint = ("wrong results from NCCL between GPUs usually mean PCIe ACS/IOMMU redirects P2P traffic; "
                            "retry with NCCL_P2P_DISABLE=1 and check ACS") if backend == "nccl" else \
                        "rerun; repeatable wrong results point at memory or CPU faults"
                    yield self.finding("PG004", backend=backend, op=e["op"], rank=int(rs), hint=hint, ranks=[int(rs)],
                                       cause="p2p_acs_iommu" if backend == "nccl" else "other",
                                       evidence=[Evidence(f"rank{rs}", f"{e['op']}: expected {e.get('expected')}, got {e.get('got')}", rank=int(rs))])

        # 4. Joined, no error, not done: hung in a collective until our deadline.
        hung = sorted(joined - done - set(errors))
        if hung and not emitted and res.get("timed_out"):
            last = {}
            for r in hung:
                evs = [e for e in ranks[str(r)]["events"] if e.get("event") in ("collective", "bw")]
                last[r] = evs[-1].get("op") if evs else "first collective"
            yield self.finding("PG006", backend=backend, stage="collectives", timeout=timeout,
                               ranks_text=", ".join(map(str, hung)), ranks=hung,
                               evidence=[Evidence(f"rank{r}", f"last completed: {last[r]}", rank=r) for r in hung])

        if run is not None:
            bws = [e for e in ranks.get("0", {}).get("events", []) if e.get("event") == "bw"]
            # One rank sends nothing to anyone: its all_reduce is a local copy, so "algbw" is the
            # GPU's memory speed (889 GB/s on an H100) and busbw is 0 by definition. Neither says
            # anything about communication, so a group of one claims no bandwidth at all.
            between_ranks = world >= 2
            verified = [e["op"] for e in ranks.get("0", {}).get("events", []) if e.get("event") == "collective" and e.get("ok")]
            unsupported = [e["op"] for e in ranks.get("0", {}).get("events", []) if e.get("event") == "collective" and e.get("ok") is None]
            init = next((e.get("init_s") for e in ranks.get("0", {}).get("events", []) if e.get("event") == "joined"), None)
            if not between_ranks:
                bws = []
            run.data.update({"backend": backend, "world_size": world, "bandwidth": bws, "verified": verified,
                             "unsupported": unsupported, "init_s": init, "elapsed_s": res.get("elapsed_s"),
                             "between_ranks": between_ranks})
            if not between_ranks:
                run.data["no_bandwidth"] = ONE_RANK_NO_BANDWIDTH
            if len(done) == world:
                best = max(bws, key=lambda e: e["bytes"]) if bws else None
                rank_word = "rank" if world == 1 else "ranks"
                run.summary(f"{backend}, {world} {rank_word}: init {init or 0:.2f} s; {', '.join(verified)} verified"
                            + (f"; all_reduce busbw {best['busbw_gbps']:.2f} GB/s at {_fmt_bytes(best['bytes'])}" if best else "")
                            + ("" if between_ranks else f": the {backend} install works; {ONE_RANK_NO_BANDWIDTH}"))
                if not between_ranks:
                    more = ("a host with 2 or more GPUs" if self.device == "cuda"
                            else "commdoctor run --world-size 2")
                    run.detail(f"a group of one rank proves that {backend} initialises here and that its collectives "
                               f"run and return the right numbers; it moves nothing between ranks, so it is not timed "
                               f"(speed needs 2 or more ranks: {more})")
                for e in bws:
                    run.detail(f"all_reduce {_fmt_bytes(e['bytes']):>7}: {e['time_s'] * 1e3:8.3f} ms  "
                               f"algbw {e['algbw_gbps']:7.3f} GB/s  busbw {e['busbw_gbps']:7.3f} GB/s")
                if unsupported:
                    run.detail(f"not supported by {backend}: {', '.join(unsupported)}")
            else:
                run.summary(f"{backend}, {world} ranks: {len(joined)} joined, {len(done)} finished")


class GlooGroupCheck(_LocalGroupCheck):
    """A real gloo process group on this host: init, five collectives verified, bandwidth.

    What it checks:
        Starts ``--world-size`` ranks (default 2) as child processes with the
        gloo backend over a TCP store on 127.0.0.1, runs all_reduce,
        all_gather, broadcast, reduce_scatter and all_to_all and compares the
        numbers with their closed forms, then times all_reduce at 64 KiB,
        1 MiB and 16 MiB. Bandwidth follows nccl-tests: algbw = bytes / time,
        busbw = algbw x 2(n-1)/n for all_reduce.
    Why it matters:
        It proves torch.distributed, gloo and this host's interface selection
        work end to end, with this environment's GLOO_* settings, before a
        real job depends on them.
    Known limits:
        Loopback only: it cannot see problems between hosts (the interface and
        rendezvous stages, and the multi-node run, cover those).
    """

    name = "pg.gloo"
    title = "Local gloo process group and collectives"
    backend = "gloo"


class NcclGroupCheck(_LocalGroupCheck):
    """A real NCCL process group with one rank per GPU: init, collectives verified, bandwidth.

    What it checks:
        The same test as pg.gloo with the nccl backend and CUDA tensors, one
        rank per visible GPU.
    Why it matters:
        NCCL problems inside one node (P2P/ACS, shared memory, fabric manager,
        driver) show up here within seconds instead of after a watchdog timeout.
    Known limits:
        Skipped without GPUs. Bandwidth inside one node says nothing of the
        network between nodes.
    """

    name = "pg.nccl"
    title = "Local NCCL process group and collectives"
    backend = "nccl"
    device = "cuda"


class GlooCudaGroupCheck(_LocalGroupCheck):
    """gloo carrying CUDA tensors, one rank per GPU: the figure NCCL is compared with.

    What it checks:
        The same test as pg.nccl, with the gloo backend on CUDA tensors, so the
        backend advisor can say how much faster NCCL is on this host.
    Why it matters:
        Jobs ported from CPU prototypes often keep gloo for CUDA tensors; the
        measured ratio shows what that costs here.
    Known limits:
        Skipped without GPUs. gloo stages CUDA tensors through host memory.
    """

    name = "pg.gloo_cuda"
    title = "Local gloo process group on CUDA tensors"
    backend = "gloo"
    device = "cuda"

    def run(self, run: CheckRun) -> Iterator[Finding]:
        if run.options.backends and "gloo" not in run.options.backends:
            raise SkipCheck(f"--backend {','.join(run.options.backends)} leaves gloo out")
        yield from super().run(run)


PG_CHECKS: tuple[type[Check], ...] = (GlooGroupCheck, NcclGroupCheck, GlooCudaGroupCheck)
