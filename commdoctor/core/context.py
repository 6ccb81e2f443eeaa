"""What a check is given: the run's options, its facts, and the handle a check writes its result through.

Promise: standard library and the data model only. The pipeline builds these
and runs the checks; the checks, the probes that provide facts and the
commands that start a run all read them from here, so no check imports the
pipeline that runs it (tests/test_import_cycles.py).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from commdoctor.core.model import CheckResult, Severity


@dataclass
class Options:
    """Everything a run was asked to do, already validated (the CLI builds it)."""

    mode: str = "run"
    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    world_size: int = 2
    backends: tuple[str, ...] = ()  # empty: every backend that can run here
    timeout: float = 15.0  # budget for network probes (seconds)
    pg_timeout: float = 60.0  # budget for the local process-group test
    fail_on: Severity = Severity.ERROR
    verbose: int = 0
    inputs: tuple[str, ...] = ()  # files for offline modes
    extra: dict[str, Any] = field(default_factory=dict)  # per-mode settings


class Facts:
    """Lazily computed, cached facts shared by the checks of one run.

    Providers are plain callables ``(context) -> value``. A fact is computed at
    most once even when several checks ask at the same time; a provider that
    raises makes every asker see that exception (as a crash of that check).
    """

    def __init__(self, providers: Mapping[str, Callable[[Context], Any]] | None = None) -> None:
        self._providers = dict(providers or {})
        self._values: dict[str, Any] = {}
        self._errors: dict[str, BaseException] = {}
        self._events: dict[str, threading.Event] = {}
        self._lock = threading.Lock()

    def provide(self, name: str, value: Any) -> None:
        with self._lock:
            self._values[name] = value
            self._events.setdefault(name, threading.Event()).set()

    def register(self, name: str, provider: Callable[[Context], Any]) -> None:
        self._providers[name] = provider

    def has(self, name: str) -> bool:
        return name in self._values or name in self._providers

    def get(self, name: str, ctx: Context) -> Any:
        with self._lock:
            if name in self._values:
                return self._values[name]
            if name in self._errors:
                raise self._errors[name]
            existing = self._events.get(name)
            owner = existing is None
            if existing is None:
                if name not in self._providers:
                    raise KeyError(f"no provider for fact {name!r}")
                existing = self._events[name] = threading.Event()
            ev = existing
        if not owner:
            ev.wait()  # bounded by the asking check's own deadline
            return self.get(name, ctx)
        try:
            value = self._providers[name](ctx)
        except BaseException as e:  # noqa: BLE001 - recorded, re-raised to every asker
            with self._lock:
                self._errors[name] = e
            ev.set()
            raise
        with self._lock:
            self._values[name] = value
        ev.set()
        return value


@dataclass
class Context:
    options: Options
    facts: Facts
    results: dict[str, CheckResult] = field(default_factory=dict)

    def fact(self, name: str) -> Any:
        return self.facts.get(name, self)


class CheckRun:
    """The handle a check gets: facts in, summary / details / data out."""

    def __init__(self, ctx: Context, result: CheckResult) -> None:
        self.ctx = ctx
        self._result = result

    @property
    def options(self) -> Options:
        return self.ctx.options

    def fact(self, name: str) -> Any:
        return self.ctx.fact(name)

    def summary(self, text: str) -> None:
        self._result.summary = text

    def detail(self, text: str) -> None:
        self._result.details.append(text)

    @property
    def data(self) -> dict[str, Any]:
        return self._result.data
