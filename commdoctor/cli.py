"""Command line: ``main(argv) -> int``; argparse in, typed options out, at once.

Promise: importing this module is cheap (argparse only). Each subcommand lives
in commdoctor/commands/NAME.py with ``add_arguments(parser)`` and
``main(args) -> int`` and is imported only when chosen, so ``--version``,
``checks`` and ``explain`` never import torch, rich or textual.

Exit codes (docs/cli.md): 0 healthy, 1 findings at or above --fail-on,
2 usage error, 3 internal error, 130 interrupted.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import Sequence

from commdoctor import __version__
from commdoctor.errors import CommDoctorError, ExitCode

#: (name, module, one-line help). Order is the order of ``commdoctor --help``.
COMMANDS: tuple[tuple[str, str, str], ...] = (
    ("run", "commdoctor.commands.run", "check this host (or every node of a job) end to end"),
    ("checks", "commdoctor.commands.checks", "list every check and the codes it can report"),
    ("explain", "commdoctor.commands.explain", "show the documentation and remedy of a code or check"),
    ("logs", "commdoctor.commands.logs", "diagnose a failed job from saved NCCL/torch logs, offline"),
    ("report", "commdoctor.commands.report", "write a redacted report (Markdown, HTML) and bundle for a support ticket"),
    ("hang", "commdoctor.commands.hang", "attach to a hung job: name the rank, its state and its line of code"),
    ("view", "commdoctor.commands.view", "open a saved report (and its logs) in the TUI, or print it"),
    ("records", "commdoctor.commands.records", "diagnose the progress records of commdoctor.hooks (offline)"),
)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        sys.stderr.write(f"commdoctor: error: {message}\n")
        raise SystemExit(ExitCode.USAGE)


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="commdoctor", description="Diagnose PyTorch distributed communication (NCCL, Gloo, MPI, UCC).")
    p.add_argument("--version", action="version", version=f"commdoctor {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    for name, module, help_ in COMMANDS:
        sp = sub.add_parser(name, help=help_, description=help_)
        sp.set_defaults(_module=module)
        # Arguments are declared by the command module; importing it only to
        # declare them is cheap because command modules import lazily too.
        importlib.import_module(module).add_arguments(sp)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    # Fast path: no parser construction for --version.
    if argv[:1] in (["--version"], ["-V"]):
        print(f"commdoctor {__version__}")
        return ExitCode.OK
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:
        return int(e.code or 0) if not isinstance(e.code, str) else ExitCode.USAGE
    if not getattr(args, "_module", None):
        parser.print_help(sys.stderr)
        return ExitCode.USAGE
    args._argv = argv
    try:
        return int(importlib.import_module(args._module).main(args))
    except CommDoctorError as e:
        sys.stderr.write(f"commdoctor: {e.title}: {e.message}\n")
        return int(e.exit_code)
    except KeyboardInterrupt:
        sys.stderr.write("commdoctor: interrupted\n")
        return ExitCode.INTERRUPTED
    except BrokenPipeError:
        return ExitCode.OK
    except Exception:  # noqa: BLE001 - a bug: say so, with the traceback, and exit 3
        import traceback

        sys.stderr.write("commdoctor: internal error (a bug in commdoctor; please report it with this traceback)\n")
        traceback.print_exc()
        return ExitCode.INTERNAL


def entry() -> None:
    sys.exit(main())
