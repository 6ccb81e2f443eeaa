"""``commdoctor records DIR...``: diagnose the progress records that commdoctor.hooks wrote.

Promise: offline and torch-free. Reads ``hooks-rank{N}.jsonl`` files (or
directories holding them, one level deep) and runs the ``hooks.*`` checks:
mismatched collectives, where every rank is (who waits for whom), and whether
checking was on. Exit codes as every diagnosing command (docs/cli.md).
"""

from __future__ import annotations

import argparse
import sys

from commdoctor.commands.common import add_output_arguments, argv_of, emit, exit_code, prefixes
from commdoctor.core.errors import CommDoctorError
from commdoctor.core.model import Severity


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("paths", nargs="+", metavar="PATH",
                   help="records directories (COMMDOCTOR_HOOKS_DIR, default ./commdoctor-hooks) or hooks-rank*.jsonl files")
    add_output_arguments(p)


def main(args: argparse.Namespace) -> int:
    import os

    from commdoctor.checks import BUILTIN_CHECKS
    from commdoctor.loaders import hook_records
    from commdoctor.pipeline.run import Context, Facts, Options, plan, run_checks

    for p in args.paths:
        if not os.path.exists(p):
            raise CommDoctorError(f"{p}: no such file or directory")
    opts = Options(mode="records", select=prefixes(args.select), ignore=prefixes(args.ignore),
                   fail_on=Severity(args.fail_on), verbose=args.verbose, inputs=tuple(args.paths))
    facts = Facts()
    from commdoctor.render.progress import progress

    # A meter for a big set (1,024 ranks): on a terminal only, never with --json or in a pipe.
    show = not getattr(args, "json", False) and sys.stderr.isatty()
    total = len(hook_records.find_files(args.paths)) if show else None
    with progress(total or None, "reading hook records (files)", enabled=show) as meter:
        found = hook_records.register(facts, args.paths, progress=lambda _what, done, _n: meter.update(done + 1))
    if not found:
        raise CommDoctorError(f"no commdoctor.hooks records (hooks-rank*.jsonl) in {', '.join(args.paths)}; "
                              "they are written where COMMDOCTOR_HOOKS_DIR points (default ./commdoctor-hooks)")
    checks = plan([c() for c in BUILTIN_CHECKS], opts)
    ctx = Context(options=opts, facts=facts)
    from commdoctor import __version__

    report = emit(run_checks(checks, ctx, argv_of(args)), args,
                  heading=f"commdoctor {__version__}: progress records in {', '.join(args.paths)}")
    return exit_code(report, opts.fail_on)
