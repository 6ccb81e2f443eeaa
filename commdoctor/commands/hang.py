"""``commdoctor hang``: attach to a hung job and name the rank, its state and its line of code.

Promise: with ``--pid`` it diagnoses exactly those processes (a torchrun
agent's pid stands for its workers); with none, the distributed job running
on this host; with ``--stacks`` it reads saved stacks instead of live ones.
Hooks records, flight-recorder dumps and logs join the verdict when given or
when the ranks' environment points at them. Exit status as every diagnosing
command: 1 when the verdict is an error.
"""

from __future__ import annotations

import argparse
import json
import os
from typing import TYPE_CHECKING, Any

from commdoctor.commands.common import add_output_arguments, argv_of, emit, exit_code, prefixes
from commdoctor.core.errors import CommDoctorError
from commdoctor.core.model import Severity

if TYPE_CHECKING:
    from commdoctor.pipeline.run import Options


def add_hang_inputs(p: argparse.ArgumentParser) -> None:
    """The signals a hang diagnosis can read, shared with ``commdoctor run --attach``."""
    g = p.add_argument_group("hang diagnosis")
    g.add_argument("--stacks", action="append", default=[], metavar="PATH",
                   help="saved stacks instead of live ones: a snapshot JSON (--save) or a folder of py-spy dumps "
                        "named rank<N>.json / rank<N>.txt")
    g.add_argument("--records", action="append", default=[], metavar="DIR",
                   help="commdoctor.hooks records (default: the ranks' COMMDOCTOR_HOOKS_DIR)")
    g.add_argument("--fr", action="append", default=[], metavar="PATH",
                   help="flight-recorder dumps, files or folders, rank number at the end of each name "
                        "(default: the ranks' TORCH_FR_DUMP_TEMP_FILE)")
    g.add_argument("--logs", action="append", default=[], metavar="PATH",
                   help="log files to take evidence from (default: the ranks' NCCL_DEBUG_FILE)")
    g.add_argument("--native", action="store_true", help="include native (C/C++) frames in the stacks (slower)")
    g.add_argument("--stack-timeout", type=float, default=10.0, metavar="S",
                   help="deadline for taking each rank's stack, in seconds (default 10)")
    g.add_argument("--save", metavar="FILE", help="write the snapshot (states and stacks) as JSON, for --stacks later")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--pid", nargs="+", default=[], metavar="PID",
                   help="the ranks' process ids (or a torchrun agent's); default: the job running on this host")
    add_hang_inputs(p)
    add_output_arguments(p)


def parse_pids(values: list[str]) -> list[int]:
    out: list[int] = []
    for v in values:
        for part in str(v).replace(",", " ").split():
            try:
                pid = int(part)
            except ValueError:
                raise CommDoctorError(f"--pid {part!r}: give process ids as numbers (see 'pgrep -f train.py')") from None
            if pid <= 0:
                raise CommDoctorError(f"--pid {pid}: process ids are positive")
            if pid not in out:
                out.append(pid)
    return out


def hang_options(args: argparse.Namespace, pids: list[int], attach: bool | str,
                 extra: dict[str, Any] | None = None) -> Options:
    from commdoctor.pipeline.run import Options

    if args.stack_timeout <= 0:
        raise CommDoctorError("--stack-timeout must be positive")
    for name in ("stacks", "records", "fr", "logs"):
        for path in getattr(args, name):
            if not os.path.exists(path):
                raise CommDoctorError(f"--{name} {path}: no such file or folder")
    x: dict[str, Any] = {
        "pids": pids, "attach": attach, "stacks": list(args.stacks), "records": list(args.records),
        "fr": list(args.fr), "logs": list(args.logs), "native": bool(args.native),
        "stack_timeout": float(args.stack_timeout),
        "json": bool(getattr(args, "json", False)),  # no progress lines with --json
    }
    x.update(extra or {})
    return Options(mode="hang", select=prefixes(args.select), ignore=prefixes(args.ignore),
                   fail_on=Severity(args.fail_on), verbose=args.verbose, extra=x)


def run_hang(args: argparse.Namespace, opts: Options, heading: str) -> int:
    from commdoctor.checks import BUILTIN_CHECKS
    from commdoctor.pipeline.run import Context, Facts, plan, run_checks
    from commdoctor.probes import live_providers

    checks = plan([c() for c in BUILTIN_CHECKS], opts)
    facts = Facts(live_providers())
    ctx = Context(options=opts, facts=facts)
    report = emit(run_checks(checks, ctx, argv_of(args)), args, heading=heading)
    save = getattr(args, "save", None)
    if save:
        try:
            snap = facts.get("hang_snapshot", ctx)
        except Exception as e:  # noqa: BLE001 - already reported by hang.ranks as a crash
            raise CommDoctorError(f"--save {save}: no snapshot to save ({e})") from None
        if snap is not None:
            try:
                with open(save, "w", encoding="utf-8") as f:
                    json.dump(snap.to_dict(), f, indent=1)
            except OSError as e:
                raise CommDoctorError(f"--save {save}: {e.strerror or e}") from None
    return exit_code(report, opts.fail_on)


def main(args: argparse.Namespace) -> int:
    from commdoctor import __version__

    pids = parse_pids(args.pid)
    if pids:
        import psutil

        if not any(psutil.pid_exists(p) for p in pids):
            raise CommDoctorError(
                f"no process with pid {', '.join(map(str, pids))} on this host: give the pids of the job's ranks "
                "or its launcher (pgrep -af train.py), or leave --pid out to find the job")
    # Offline inputs alone (dumps, records, logs) describe a job elsewhere: do not attach to this host's.
    attach = not pids and not args.stacks and not args.fr and not args.records
    opts = hang_options(args, pids, attach)
    if pids:
        what = f"pid{'s' if len(pids) > 1 else ''} {', '.join(map(str, pids))}"
    elif args.stacks:
        what = "saved stacks " + ", ".join(args.stacks)
    elif not attach:
        what = "saved " + ", ".join(p for p in (*args.fr, *args.records))
    else:
        what = "the job running on this host"
    return run_hang(args, opts, f"commdoctor {__version__}: diagnosing a hang ({what})")
