"""Command line: ``main(argv) -> int``; argparse in, typed options out, at once.

Promise: importing this module is cheap (argparse only). Each subcommand lives
in commdoctor/commands/NAME.py with ``add_arguments(parser)`` and
``main(args) -> int`` and is imported only when chosen, so ``--version``,
``checks`` and ``explain`` never import torch, rich or textual.

Exit codes (docs/cli.md): 0 healthy, 1 findings at or above --fail-on,
2 usage error or unreadable input, 3 internal error, 4 incomplete (a check
crashed or timed out), 130 interrupted. A closed stdout (``| head -1``,
``>&-``) ends the run quietly with the status it would have had.
"""

from __future__ import annotations

import argparse
import errno
import importlib
import os
import sys
from typing import Any, Sequence, TextIO

from commdoctor import __version__
from commdoctor.core.errors import CommDoctorError, ExitCode

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


class _Tolerant:
    """A text stream that ends output quietly when its reader went away, and lets the run finish.

    ``commdoctor run | head -1`` closes the pipe after one line; ``>&-`` starts us with no
    stdout at all. Neither is a failure of the diagnosis: further writes are dropped, the
    file descriptor is pointed at /dev/null (so the interpreter's last flush is quiet too),
    and the command still exits with the status its report calls for.
    """

    def __init__(self, inner: TextIO | None, fd: int) -> None:
        self._inner = inner
        self._fd = fd
        self.broken = inner is None

    def _drop(self) -> None:
        self.broken = True
        try:
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, self._fd)
            os.close(null)
        except OSError:
            pass

    def write(self, text: str) -> int:
        if not self.broken and self._inner is not None:
            try:
                return self._inner.write(text)
            except (BrokenPipeError, ValueError):
                self._drop()
            except OSError as e:
                if e.errno not in (errno.EPIPE, errno.EBADF):
                    raise
                self._drop()
        return len(text)

    def flush(self) -> None:
        if not self.broken and self._inner is not None:
            try:
                self._inner.flush()
            except (BrokenPipeError, ValueError):
                self._drop()
            except OSError as e:
                if e.errno not in (errno.EPIPE, errno.EBADF):
                    raise
                self._drop()

    def isatty(self) -> bool:
        return not self.broken and self._inner is not None and self._inner.isatty()

    def __getattr__(self, name: str) -> Any:
        if self._inner is None:
            raise AttributeError(name)
        return getattr(self._inner, name)


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
    saved = sys.stdout, sys.stderr
    sys.stdout = _Tolerant(sys.stdout, 1)
    sys.stderr = _Tolerant(sys.stderr, 2)
    try:
        return _main(argv)
    finally:
        try:
            sys.stdout.flush()
        finally:
            sys.stdout, sys.stderr = saved


def _bad_seconds(args: argparse.Namespace) -> str | None:
    """Every float option is a number of seconds: nan, inf and negative values are usage errors.

    ``float()`` accepts "nan", "inf" and "1e999"; a deadline of nan compares false with
    everything and a deadline of inf never comes, so either would turn a bounded wait
    into a hang or a traceback far from the option that caused it.
    """
    import math

    for name, value in sorted(vars(args).items()):
        if isinstance(value, float) and not name.startswith("_") and (not math.isfinite(value) or value < 0):
            return (f"--{name.replace('_', '-')} {value!r} is not a number of seconds "
                    "(give a finite number, 0 or more, e.g. 30)")
    return None


def _missing_pid(args: argparse.Namespace) -> str | None:
    """A ``--pid`` that names no process is a usage error: attaching to nothing reads as "rank 0 exited"."""
    for v in getattr(args, "pid", None) or ():
        for part in str(v).replace(",", " ").split():
            if not part.isdigit() or int(part) <= 0:
                continue  # not a number: the command's own parser says so
            pid = int(part)
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return f"--pid {pid}: no such process (it has exited, or the number is wrong; see 'pgrep -af train.py')"
            except (PermissionError, OverflowError, OSError):
                if not os.path.exists(f"/proc/{pid}") and os.path.isdir("/proc/self"):
                    return f"--pid {pid}: no such process (it has exited, or the number is wrong; see 'pgrep -af train.py')"
    return None


def _main(argv: Sequence[str] | None = None) -> int:
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
    bad = _bad_seconds(args) or _missing_pid(args)
    if bad:
        sys.stderr.write(f"commdoctor: error: {bad}\n")
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
    except Exception:  # noqa: BLE001 - a bug: say so, with the traceback, and exit 3
        import traceback

        sys.stderr.write("commdoctor: internal error (a bug in commdoctor; please report it with this traceback)\n")
        traceback.print_exc()
        return ExitCode.INTERNAL


def entry() -> None:
    sys.exit(main())
