"""A hang snapshot: every rank of a job at one moment, as the hang checks read it.

Promise: standard library only (no psutil, no torch), JSON round-trip
(``to_dict`` / ``from_dict``), so the same snapshot comes from a live job
(commdoctor.probes.snapshot), from saved stacks on disk
(commdoctor.loaders.stacks) or from a JSON file written by an earlier run.
A rank holds its process state (running, sleeping, stopped, zombie, exited,
missing) and, when its stack could be taken, the classification of that
stack; when it could not, the reason and how to allow it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from commdoctor.parsing.stacks import Classification, Frame, ProcessStack, RankState, classify

#: Process states that mean "this rank can no longer take part".
DEAD_STATES = ("exited", "zombie", "missing")


@dataclass
class RankView:
    rank: int
    pid: int | None = None
    host: str = ""
    proc_state: str = "unknown"  # running, sleeping, disk_sleep, stopped, zombie, exited, missing, unknown
    stack: ProcessStack | None = None
    stack_error: str | None = None
    stack_why: str | None = None
    stack_hint: str | None = None
    cpu_s: float | None = None
    command: str | None = None
    local_rank: int | None = None
    #: source lines read on the job's host when the snapshot was taken (file, line) -> text
    saved_sources: dict[tuple[str, int], str] = field(default_factory=dict, repr=False, compare=False)
    _cls: Classification | None = field(default=None, repr=False, compare=False)

    @property
    def classification(self) -> Classification:
        if self._cls is None:
            if self.stack is not None and self.stack.threads:
                self._cls = classify(self.stack, sources=self.saved_sources)
            else:
                self._cls = Classification(RankState.UNKNOWN, reason=self.stack_why or "no stack")
        return self._cls

    @property
    def state(self) -> RankState:
        """The effective state: the process state wins over what an old stack says."""
        if self.proc_state == "zombie":
            return RankState.ZOMBIE
        if self.proc_state in ("exited", "missing"):
            return RankState.EXITED
        if self.proc_state == "stopped":
            return RankState.STOPPED
        return self.classification.state

    @property
    def dead(self) -> bool:
        return self.proc_state in DEAD_STATES

    def describe(self) -> str:
        c = self.classification
        if self.proc_state == "missing":
            return "no process holds this rank on this host"
        if self.dead:
            return f"{self.state.label} (pid {self.pid})"
        text = c.describe() if c.state is not RankState.UNKNOWN else f"stack unavailable: {self.stack_why or 'unknown'}"
        if self.proc_state == "stopped":
            text = f"stopped (SIGSTOP or a debugger), last {text}"
        return text

    def stack_lines(self, limit: int = 6) -> list[str]:
        """The telling frames, innermost first, as ``func (file:line): source``."""
        c = self.classification
        frames: tuple[Frame, ...] = c.frames
        if not frames:
            return []
        out: list[str] = []
        for f in frames[:limit]:
            out.append(f"{f.function} ({f.where})")
        site = c.call_site
        if site is not None and site not in frames[:limit]:
            out.append(f"... {site.function} ({site.where})")
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "rank": self.rank, "pid": self.pid, "host": self.host, "proc_state": self.proc_state,
            "state": self.state.value, "describe": self.describe(),
            "classification": self.classification.to_dict(),
            "stack": self.stack.to_dict() if self.stack else None, "stack_error": self.stack_error,
            "stack_why": self.stack_why, "stack_hint": self.stack_hint, "cpu_s": self.cpu_s,
            "command": self.command, "local_rank": self.local_rank,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> RankView:
        return cls(saved_sources=_saved_sources(d.get("classification")),
                   rank=int(d["rank"]), pid=d.get("pid"), host=d.get("host") or "",
                   proc_state=d.get("proc_state") or "unknown",
                   stack=ProcessStack.from_dict(d["stack"]) if d.get("stack") else None,
                   stack_error=d.get("stack_error"), stack_why=d.get("stack_why"), stack_hint=d.get("stack_hint"),
                   cpu_s=d.get("cpu_s"), command=d.get("command"), local_rank=d.get("local_rank"))


def _saved_sources(c: Any) -> dict[tuple[str, int], str]:
    """The source lines a saved classification quoted, so that reading it elsewhere classifies alike
    (a rank asleep in ``time.sleep`` shows only its own line: the line's text tells sleeping from computing)."""
    out: dict[tuple[str, int], str] = {}
    if not isinstance(c, Mapping):
        return out
    for frame_key, text_key in (("call_site", "source"), ("user_frame", "user_source")):
        f, text = c.get(frame_key), c.get(text_key)
        if isinstance(f, Mapping) and isinstance(text, str) and text:
            line = f.get("line")
            if isinstance(line, int) and not isinstance(line, bool):
                out[(str(f.get("file")), line)] = text[:500]
    return out


@dataclass
class HangSnapshot:
    ranks: dict[int, RankView] = field(default_factory=dict)
    source: str = "live"  # live | saved
    world_size: int | None = None
    host: str = ""
    taken_at: float | None = None  # unix time
    elapsed_s: float | None = None  # how long taking it took
    notes: list[str] = field(default_factory=list)
    job: dict[str, Any] | None = None  # probes.procs.Job.to_dict() when discovered
    #: with several jobs on the host: which one was taken and why, and the others (never a silent choice)
    choice: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"ranks": [v.to_dict() for _, v in sorted(self.ranks.items())], "source": self.source,
                "world_size": self.world_size, "host": self.host, "taken_at": self.taken_at,
                "elapsed_s": self.elapsed_s, "notes": list(self.notes), "job": self.job, "choice": self.choice}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> HangSnapshot:
        ranks = {int(r["rank"]): RankView.from_dict(r) for r in d.get("ranks") or ()}
        return cls(ranks=ranks, source=d.get("source") or "saved", world_size=d.get("world_size"),
                   host=d.get("host") or "", taken_at=d.get("taken_at"), elapsed_s=d.get("elapsed_s"),
                   notes=list(d.get("notes") or ()), job=d.get("job"),
                   choice=d.get("choice") if isinstance(d.get("choice"), str) else None)
