"""``commdoctor run``: the staged checks on this host, with a real local process group."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from commdoctor.commands import watch
from commdoctor.commands.common import (add_output_arguments, add_tui_arguments, argv_of, emit_or_tui, exit_code,
                                        prefixes)
from commdoctor.errors import CommDoctorError
from commdoctor.model import Severity

if TYPE_CHECKING:
    from commdoctor.pipeline import Options

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
    add_output_arguments(p)
    watch.add_run_arguments(p)  # --attach, and "run -- torchrun ...": the hang mode (commands/watch.py)
    add_tui_arguments(p, default=True)


def options_from(args: argparse.Namespace) -> Options:
    from commdoctor.pipeline import Options

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


def main(args: argparse.Namespace) -> int:
    if watch.wanted(args):
        return watch.main(args)
    from commdoctor.checks import BUILTIN_CHECKS
    from commdoctor.pipeline import Context, Facts, plan, run_checks
    from commdoctor.probes import live_providers

    opts = options_from(args)
    checks = plan([c() for c in BUILTIN_CHECKS], opts)
    ctx = Context(options=opts, facts=Facts(live_providers()))
    from commdoctor import __version__

    heading = f"commdoctor {__version__}: checking this host"
    report = emit_or_tui(run_checks(checks, ctx, argv_of(args)), args, heading=heading)
    return exit_code(report, opts.fail_on)
