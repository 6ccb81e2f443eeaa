"""``commdoctor run``: the staged checks on this host, with a real local process group."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any, Callable, Generator, Iterator, NoReturn, Sequence

from commdoctor.commands import watch
from commdoctor.commands.common import (add_output_arguments, add_tui_arguments, argv_of, emit_or_tui, exit_code,
                                        prefixes)
from commdoctor.core.errors import CommDoctorError, ExitCode
from commdoctor.core.model import Report, Severity

if TYPE_CHECKING:
    from commdoctor.checks.base import Check
    from commdoctor.core.jobctx import Job
    from commdoctor.pipeline.run import Event, Options

BACKENDS = ("gloo", "nccl", "mpi", "ucc")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--world-size", type=int, default=2, metavar="N",
                   help="ranks in the local process-group test (default 2; nccl uses one per GPU)")
    p.add_argument("--backend", default="", metavar="NAMES",
                   help="comma-separated backends to test (default: every one this host can run)")
    p.add_argument("--timeout", type=float, default=15.0, metavar="S",
                   help="budget for network probes, in seconds (default 15)")
    p.add_argument("--pg-timeout", type=float, default=60.0, metavar="S",
                   help="deadline for the local process-group test, in seconds (default 60)")
    p.add_argument("--job-backend", default="", metavar="SPEC",
                   help="the backend your job passes to init_process_group (nccl, gloo, or a map such as "
                        "cpu:gloo,cuda:nccl), checked against this host")
    g = p.add_argument_group("jobs (under torchrun, srun or mpirun with more than one node or more than one "
                             "process; docs/multinode.md)")
    g.add_argument("--join-timeout", type=float, default=30.0, metavar="S",
                   help="how long node 0 waits for the other nodes, and local rank 0 for the other local ranks, "
                        "to join (default 30)")
    g.add_argument("--deadline", type=float, default=None, metavar="S",
                   help="the whole run's budget, in seconds from this process's start: every wait is derived from it "
                        "and node 0 prints its report before it (default: 2 x --join-timeout + --pg-timeout + "
                        "--timeout + 60, 195 s; under a launcher with a time limit, give that limit less its start-up)")
    g.add_argument("--expect-hosts", default="", metavar="HOSTS",
                   help="comma-separated host names of the nodes, in node order: names a node that never joins")
    g.add_argument("--this-node-only", action="store_true",
                   help="under a launcher, every process checks its host alone and prints its own report "
                        "(no gathering at node 0 or local rank 0)")
    add_output_arguments(p)
    watch.add_run_arguments(p)  # --attach, and "run -- torchrun ...": the hang mode (commands/watch.py)
    add_tui_arguments(p, default=True)


def options_from(args: argparse.Namespace) -> Options:
    from commdoctor.pipeline.run import Options

    if args.world_size < 1 or args.world_size > 64:
        raise CommDoctorError(f"--world-size {args.world_size}: give 1 to 64 ranks")
    backends = tuple(b.strip().lower() for b in args.backend.split(",") if b.strip())
    for b in backends:
        if b not in BACKENDS:
            raise CommDoctorError(f"--backend {b!r}: choose from {', '.join(BACKENDS)}")
    for name in ("timeout", "pg_timeout"):
        if getattr(args, name) <= 0:
            raise CommDoctorError(f"--{name.replace('_', '-')} must be positive")
    return Options(
        mode="run",
        select=prefixes(args.select),
        ignore=prefixes(args.ignore),
        world_size=args.world_size,
        backends=backends,
        timeout=args.timeout,
        pg_timeout=args.pg_timeout,
        fail_on=Severity(args.fail_on),
        verbose=args.verbose,
        extra={"job_backend": args.job_backend.strip()} if args.job_backend.strip() else {},
    )


def job_of(args: argparse.Namespace) -> Job | None:
    """The job this process is part of (its launcher's variables): several nodes, or several processes on one
    node; None for one process alone, with --this-node-only, or when the job's store cannot be found."""
    import os

    from commdoctor.core import jobctx

    if getattr(args, "this_node_only", False):
        return None
    names = [h.strip() for h in (getattr(args, "expect_hosts", "") or "").split(",") if h.strip()]
    # torchrun's own command line matters only to its workers; other runs skip reading the parent.
    argv = _parent_argv() if "TORCHELASTIC_RUN_ID" in os.environ else None
    job = jobctx.detect(os.environ, agent_argv=argv, node_names=names)
    if job is not None and job.problem:
        # Check this node alone; the launcher check (ENV022) says what is missing.
        import sys

        where = (f"rank {job.rank} of a {job.world_size}-process {job.launcher} job on one node" if job.single_node
                 else f"node {job.node} of a {job.expected_nodes}-node {job.launcher} job")
        print(f"commdoctor: {where}, checked alone: {job.problem}", file=sys.stderr, flush=True)
        return None
    return job


class _Stop:
    """SIGTERM and SIGINT during a job's run: the first one ends the run early, with what was seen so far.

    While the run's own code is working (``armed``: joining, probing, waiting, the local checks) the signal
    raises KeyboardInterrupt there, so a wait ends at once; while a sink prints it is only recorded, and the
    run stops at the next step. Later signals are ignored: ``timeout`` and torchrun may each send one, and
    the report they would cut short is the one being printed (it takes no more than a second or two).
    """

    def __init__(self) -> None:
        self.signum: int | None = None
        self.raised = False
        self.armed = False
        self.on_signal: Callable[[], None] = lambda: None
        self._before: dict[int, Any] = {}

    def install(self) -> None:
        import signal

        for sig in (signal.SIGTERM, signal.SIGINT):
            try:
                self._before[sig] = signal.signal(sig, self._handler)
            except (ValueError, OSError):  # not the main thread (an embedding caller): the defaults stay
                return

    def restore(self) -> None:
        """The handlers from before ``install`` (a run that ended by itself, in a process that goes on)."""
        import signal

        for sig, old in self._before.items():
            try:
                signal.signal(sig, old)
            except (ValueError, OSError, TypeError):
                pass
        self._before.clear()

    def _handler(self, signum: int, frame: Any) -> None:
        if self.signum is not None:
            return
        self.signum = signum
        self.on_signal()
        if self.armed:
            self.raised = True
            raise KeyboardInterrupt


def _leave(code: int) -> NoReturn:
    """Exit now, once the report is out: stopped by the launcher, the process must be gone before it loses
    patience (torchrun and Slurm send SIGKILL after a grace period). A normal interpreter exit tears down
    torch's objects and the abandoned checks' threads first, seconds on a busy host; nothing is left to
    save (the report is flushed, the store belongs to the job) and the checks' child processes got the same
    signal from the launcher (its process group) or end at their own deadlines."""
    import os
    import sys

    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe: nothing more can be said there
            pass
    os._exit(int(code))


def _signame(signum: int) -> str:
    import signal

    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


def _stoppable(events: Generator[Event, None, None], stop: _Stop, node: Any, then: Sequence[Check], ctx: Any,
               argv: Sequence[str], finish: bool) -> Iterator[Event]:
    """``events`` until a signal stops the run; then (``finish``: node 0) the report of what was seen.

    A signal inside the local checks is the pipeline's own business (it ends them and marks the report
    interrupted; the gather then waits for nobody). Anywhere else (joining, the mesh, the gather, or a
    signal recorded while a sink printed) the rest of the run is given up and node 0 gathers at once,
    without waiting: the other nodes that reported, the local results so far, the cross-node checks on
    what the store holds, marked interrupted (exit 130).
    """
    import socket
    import sys
    from datetime import datetime, timezone

    from commdoctor import __version__
    from commdoctor.pipeline.run import CheckFinished, NodeReported, RunFinished, RunStarted, run_checks

    local: list[Any] = []
    started = False
    while True:
        if stop.signum is not None and not stop.raised and node.gathered is None:
            break  # recorded while a sink printed, before the gather: stop here
        stop.armed = True
        try:
            ev = next(events)
        except StopIteration:
            return
        except KeyboardInterrupt:
            break
        finally:
            stop.armed = False
        if isinstance(ev, RunStarted):
            started = True
        elif isinstance(ev, CheckFinished) and not isinstance(ev, NodeReported) and node.gathered is None:
            local.append(ev.result)
        elif isinstance(ev, RunFinished) and stop.signum is not None:
            ev.report.interrupted = True
        yield ev
        if isinstance(ev, RunFinished):
            return
    events.close()
    node.interrupt()
    if not finish:
        return
    if not started:
        yield RunStarted(tuple((c.name, c.stage, c.title) for c in then))
    got = node.gathered
    if got is None:
        rep = Report(tool_version=__version__, mode=ctx.options.mode,
                     created=datetime.now(timezone.utc).isoformat(timespec="seconds"), host=socket.gethostname(),
                     argv=list(argv), environment={"python": sys.version.split()[0], "platform": sys.platform},
                     results=local, interrupted=True)
        for r in local:
            env = r.data.get("environment")
            if isinstance(env, dict):
                rep.environment.update(env)
        got = node.gather(rep)
        yield from got.events
    done = {r.check for r in got.report.results}
    for ev in run_checks([c for c in then if c.name not in done], got.context, argv):
        if isinstance(ev, CheckFinished):
            got.report.results.append(ev.result)
            yield ev
    got.report.interrupted = True
    yield RunFinished(got.report)


def _announce(data: dict[str, Any], opts: Options, say: Callable[[str], None]) -> None:
    """Node 0, as soon as the mesh is judged: say on stderr which node blocks which port, before the local
    checks (tens of seconds on a busy host) and before any launcher limit. The report says it again."""
    from dataclasses import replace

    from commdoctor.checks.multinode import ReachCheck
    from commdoctor.pipeline.run import Context, Facts, run_one

    mctx = Context(options=replace(opts, mode="multinode"), facts=Facts())
    mctx.facts.provide("multinode", data)
    for f in run_one(ReachCheck(), mctx).findings:
        if f.severity is Severity.ERROR:
            say(f"node 0: {f.code} {f.title} (the report follows the local checks)")


def _process_start() -> float | None:
    """When this process started, on the monotonic clock (the deadline counts the interpreter's start-up too)."""
    import time

    try:
        import psutil

        age = time.time() - psutil.Process().create_time()
    except Exception:  # noqa: BLE001 - then the deadline counts from now
        return None
    return time.monotonic() - age if 0 <= age < 600 else None


def _parent_argv() -> list[str] | None:
    """torchrun's command line when it is our parent: it holds --nnodes MIN:MAX, which workers are not told."""
    try:
        import psutil

        parent = psutil.Process().parent()
        return list(parent.cmdline()) if parent is not None else None
    except Exception:  # noqa: BLE001 - only a hint: without it, the launcher's node count stands
        return None


def main(args: argparse.Namespace) -> int:
    if watch.wanted(args):
        return watch.main(args)
    job = job_of(args)
    if job is not None:
        return main_job(args, job)
    from commdoctor.checks import BUILTIN_CHECKS
    from commdoctor.pipeline.run import Context, Facts, plan, run_checks
    from commdoctor.probes import live_providers

    opts = options_from(args)
    checks = plan([c() for c in BUILTIN_CHECKS], opts)
    opts.extra["group_test"] = any(c.name.startswith("pg.") for c in checks)
    ctx = Context(options=opts, facts=Facts(live_providers()))
    from commdoctor import __version__

    heading = f"commdoctor {__version__}: checking this host"
    report = emit_or_tui(run_checks(checks, ctx, argv_of(args)), args, heading=heading)
    return exit_code(report, opts.fail_on)


def main_job(args: argparse.Namespace, job: Job) -> int:
    """One process of a job: local rank 0 checks its node, node 0 gathers every node's results; other local ranks
    check in and print one line. A job on one node is the same with one node: one report, from local rank 0."""
    import sys

    from commdoctor import __version__
    from commdoctor.probes import multinode
    from dataclasses import replace

    from commdoctor.checks import BUILTIN_CHECKS
    from commdoctor.checks.base import Check
    from commdoctor.checks.multinode import MN_CHECKS, NodeSentCheck, OneNodeGatherCheck
    from commdoctor.pipeline.run import Context, Event, Facts, plan, run_gathered
    from commdoctor.probes import live_providers

    if args.join_timeout <= 0:
        raise CommDoctorError("--join-timeout must be positive")
    if args.deadline is not None and args.deadline < 10:
        raise CommDoctorError(f"--deadline {args.deadline:g}: give at least 10 s (joining, the probes and the report "
                              "need a few seconds each)")

    def say(text: str) -> None:
        print(f"commdoctor: {text}", file=sys.stderr, flush=True)

    if not job.leader:
        return multinode.checkin(job, say)
    # From here on a SIGTERM (torchrun passing on its own, Slurm, `timeout`) or Ctrl-C ends the run with the
    # report of what was seen so far, on node 0; the other nodes leave quietly (docs/multinode.md).
    stop = _Stop()
    stop.install()
    opts = options_from(args)
    opts.extra["json"] = bool(getattr(args, "json", False))  # no progress meters with --json
    if not job.single_node:  # across nodes the cross-node test measures the network; on one node this is it
        opts.extra["pg_sizes"] = multinode.LOCAL_PG_SIZES
    checks = plan([c() for c in BUILTIN_CHECKS], opts)
    opts.extra["group_test"] = any(c.name.startswith("pg.") for c in checks)
    if opts.extra["group_test"]:
        # This process imports torch for the job's store anyway: importing it now, before any thread starts,
        # lets a forked server start the local test's ranks without importing it again (CPU builds).
        from commdoctor.probes.pg_init import start_rank_server

        start_rank_server()
    ctx = Context(options=opts, facts=Facts(live_providers()))
    node = multinode.NodeRun(job, opts, argv_of(args), join_timeout=args.join_timeout, say=say,
                             deadline=args.deadline, t0=_process_start())
    # The checks that judge what the nodes gathered run in the same pipeline, after the local checks.
    judges: list[Check]
    if not job.coordinator:
        judges, mode = [NodeSentCheck()], "node"
    elif job.single_node:  # one node: nothing to compare across nodes; only whether every local rank came
        judges, mode = [OneNodeGatherCheck()], "multinode"
    else:
        judges, mode = [c() for c in MN_CHECKS], "multinode"
    then = plan(judges, replace(opts, mode=mode))

    def node_events() -> Generator[Event, None, None]:
        node.exchange(ctx)
        yield from run_gathered(checks, ctx, then, node.gather, argv_of(args))

    if job.coordinator and not job.single_node:
        node.on_mesh = lambda data: _announce(data, opts, say)
    if any(c.name == "env.torch" for c in checks):
        node.prefetch = ("torch",)  # its child process imports torch while this node waits for the others
    stop.on_signal = node.interrupt
    events = _stoppable(node_events(), stop, node, then, ctx, argv_of(args), finish=job.coordinator)
    if job.coordinator:
        if job.single_node:
            heading = (f"commdoctor {__version__}: checking this host for a {job.world_size}-process "
                       f"{job.launcher} job, from local rank 0")
        else:
            heading = f"commdoctor {__version__}: checking a {job.expected_nodes}-node {job.launcher} job from node 0"
        # The TUI only when asked: under a launcher several processes share one terminal.
        if args.tui is None:
            args.tui = False
        code = exit_code(emit_or_tui(events, args, heading=heading), opts.fail_on)
        if stop.signum is not None:
            _leave(code)
        stop.restore()
        return code
    from commdoctor.pipeline.run import RunFinished

    report: Report | None = None
    seen = list(events)  # this node prints one line (and its JSON with --json); node 0 prints everyone's results
    if stop.signum is not None:  # stopped by the launcher: node 0 reports; this node leaves quietly
        say(f"node {job.node} ({node.host}): stopped ({_signame(stop.signum)}) after '{node.last_stage}'; "
            "node 0 reports what it has")
        _leave(ExitCode.INTERRUPTED)
    if args.json:
        from commdoctor.commands.common import emit

        report = emit(iter(seen), args)
    else:
        report = next((ev.report for ev in seen if isinstance(ev, RunFinished)), None)
    if report is None:  # the event stream always ends with RunFinished; this is a bug if reached
        raise CommDoctorError("the multi-node run ended without a report", exit_code=ExitCode.INTERNAL)
    stop.restore()
    code = exit_code(report, opts.fail_on)
    v = report.verdict()
    if not node.posted:
        why = node.store_error or node.post_error or ("node 0 never published the list of nodes"
                                                       if not node.roster else "")
        say(f"node {job.node} ({node.host}): results could NOT reach node 0" + (f": {why}" if why else ""))
    else:
        say(f"node {job.node} ({node.host}): results went to node 0 ({job.master_addr}); "
            + (f"this node: {v.code} {v.title}" if v else "no problem found on this node"))
    return code
