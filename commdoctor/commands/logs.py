"""``commdoctor logs FILE|DIR|- ...``: diagnose a failed job from its saved output, offline.

Promise: never imports torch. Paths are checked before anything runs (a
missing file is a usage error, exit 2); reading and diagnosis then run as the
pipeline's "logs" mode, so the console and ``--json`` sinks, ``--select`` and
``--ignore`` behave as in ``commdoctor run``.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING

from commdoctor.commands.common import add_output_arguments, argv_of, emit, exit_code, prefixes
from commdoctor.core.errors import CommDoctorError
from commdoctor.core.model import Severity

if TYPE_CHECKING:
    from commdoctor.pipeline.run import Options

ENGINES = ("auto", "hyperscan", "re")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("paths", nargs="+", metavar="FILE|DIR|-",
                   help="log files (plain, .gz, .bz2, .xz), directories (read recursively) or - for stdin")
    p.add_argument("--engine", choices=ENGINES, default="auto",
                   help="line search engine: hyperscan when installed (auto), or the standard library (re)")
    p.add_argument("--jobs", type=int, default=None, metavar="N",
                   help="processes that scan files (default: one per core for a folder of 32 MB or more; 1: this one only)")
    add_output_arguments(p)


def options_from(args: argparse.Namespace) -> Options:
    from commdoctor.loaders.logs import expand_all
    from commdoctor.pipeline.run import Options

    files, skipped = expand_all(args.paths)  # raises LogInputError (a CommDoctorError) for a missing path
    if not files:
        why = "".join(f"; {p}: {w}" for p, w in skipped[:3])
        raise CommDoctorError(f"no files found under {', '.join(args.paths)}{why}")
    if sum(1 for f in files if f == "-") > 1:
        raise CommDoctorError("stdin (-) can be read only once")
    size = sum(os.path.getsize(f) for f in files if f != "-")
    # Deadline for reading: generous (20 MB/s on a loaded machine) and never below ten minutes.
    deadline = 3600.0 * 24 if "-" in files else max(600.0, size / 20e6)
    return Options(
        mode="logs",
        select=prefixes(args.select),
        ignore=prefixes(args.ignore),
        fail_on=Severity(args.fail_on),
        verbose=args.verbose,
        inputs=tuple(files),
        extra={"engine": args.engine, "deadline_s": deadline, "skipped": skipped, "jobs": getattr(args, "jobs", None)},
    )


#: The first bytes of gzip, bzip2, xz and zstd: such a file is scanned as more bytes than it holds.
_PACKED = (b"\x1f\x8b", b"BZh", b"\xfd7zXZ", b"\x28\xb5\x2f\xfd")


def _scan_total(inputs: tuple[str, ...] | list[str]) -> int | None:
    """Bytes the scan will read, for the meter's percentage; None (a plain count) when unknown.

    Folders count by their files; stdin and compressed files (read as more bytes than their
    size) make the total unknown rather than a percentage that runs past 100.
    """
    from commdoctor.loaders.logs import expand_all

    if "-" in inputs:
        return None
    total = 0
    try:
        for f in expand_all(inputs)[0]:
            with open(f, "rb") as fh:
                if fh.read(6).startswith(_PACKED):
                    return None
            total += os.path.getsize(f)
    except OSError:
        return None
    return total or None


def main(args: argparse.Namespace) -> int:
    from commdoctor import __version__
    from commdoctor.checks import BUILTIN_CHECKS
    from commdoctor.loaders.logs import load_logs
    from commdoctor.pipeline.run import Context, Facts, plan, run_checks

    from commdoctor.render.progress import progress

    opts = options_from(args)
    # A meter on stderr for long scans: only on a terminal, never with --json (machine output) or in a pipe.
    show = not getattr(args, "json", False) and sys.stderr.isatty()
    total = _scan_total(opts.inputs) if show else None

    def load(ctx: Context) -> object:
        with progress(total, "reading logs (bytes)", enabled=show) as meter:
            return load_logs(ctx.options.inputs, engine=ctx.options.extra.get("engine", "auto"),
                             skipped=ctx.options.extra.get("skipped", ()),
                             on_bytes=meter.advance, jobs=ctx.options.extra.get("jobs"))

    facts = Facts({"log_model": load})
    checks = plan([c() for c in BUILTIN_CHECKS], opts)
    ctx = Context(options=opts, facts=facts)
    n = len(opts.inputs)
    heading = f"commdoctor {__version__}: diagnosing {n} log input{'s' if n != 1 else ''}"
    report = emit(run_checks(checks, ctx, argv_of(args)), args, heading=heading)
    return exit_code(report, opts.fail_on)
