"""Textual messages the TUI makes from pipeline events, one class per event kind.

Promise: the event source (a thread iterating the pipeline) only ever posts
these; widgets never see the pipeline itself. Each message carries the
untouched pipeline event.
"""

from __future__ import annotations

from typing import Any

from textual.message import Message

from commdoctor.pipeline.run import CheckFinished, CheckStarted, NodeReported, RunFinished, RunStarted


class PipelineMessage(Message):
    """A pipeline event, delivered on the app's thread."""

    def __init__(self, event: Any) -> None:
        super().__init__()
        self.event = event


class RunBegan(PipelineMessage):
    event: RunStarted


class CheckBegan(PipelineMessage):
    event: CheckStarted


class CheckEnded(PipelineMessage):
    event: CheckFinished


class RunEnded(PipelineMessage):
    event: RunFinished


class RunBroke(Message):
    """The event source raised (a bug in commdoctor): the TUI shows the traceback instead of dying."""

    def __init__(self, error: str) -> None:
        super().__init__()
        self.error = error


class JumpToEvidence(Message):
    """Open ``path`` in the log view at 0-based ``line``."""

    def __init__(self, path: str, line: int) -> None:
        super().__init__()
        self.path = path
        self.line = line


_KINDS: dict[type, type[PipelineMessage]] = {
    RunStarted: RunBegan,
    CheckStarted: CheckBegan,
    CheckFinished: CheckEnded,
    NodeReported: CheckEnded,  # another node's findings, a row of their own until the merged report arrives
    RunFinished: RunEnded,
}


def message_for(event: Any) -> PipelineMessage:
    """The message for a pipeline event. Unknown event kinds are a programming error."""
    try:
        return _KINDS[type(event)](event)
    except KeyError:
        raise TypeError(f"not a pipeline event: {type(event).__name__}") from None
