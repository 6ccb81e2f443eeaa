"""One error root for everything commdoctor reports to a user, and the exit codes.

A ``CommDoctorError`` is an expected failure (bad input, a missing file): the
CLI prints its message, which always says what to do next, and exits with its
code. Anything else escaping to the CLI is a bug and exits INTERNAL.
"""

from __future__ import annotations

import enum


class ExitCode(enum.IntEnum):
    OK = 0  # healthy: no finding at or above the failure threshold
    FINDINGS = 1  # findings at or above --fail-on
    USAGE = 2  # bad command line or unreadable input
    INTERNAL = 3  # a bug in commdoctor: it stopped with a traceback
    INCOMPLETE = 4  # a check crashed or timed out: the diagnosis is incomplete (whatever was found)
    INTERRUPTED = 130  # Ctrl-C (or SIGTERM): the diagnosis is incomplete


class CommDoctorError(Exception):
    """An error with a message a user can act on."""

    exit_code: ExitCode = ExitCode.USAGE

    def __init__(self, message: str, title: str = "error", exit_code: ExitCode | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.title = title
        if exit_code is not None:
            self.exit_code = exit_code


class SkipCheck(Exception):
    """Raised inside a check: it cannot run here. The reason says how to make it run.

    ``not_applicable``: the check reads an optional input this run was not given
    (hook records to ``logs``), so it has no bearing on the user's question. The
    result stays SKIPPED in the report and JSON (``data["not_applicable"]``), and
    the console and TUI leave it out unless asked (``-v``).
    """

    def __init__(self, reason: str, *, not_applicable: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.not_applicable = not_applicable
