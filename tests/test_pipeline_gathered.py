"""A run in two steps (pipeline.run_gathered): the multi-node gather feeds checks that run in the one pipeline."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Iterator

from commdoctor.checks.base import Check, Rule
from commdoctor.checks.multinode import MN_CHECKS, NodeSentCheck
from commdoctor.core.model import Finding, Report, Severity, Stage, Status
from commdoctor.pipeline.run import (CheckFinished, CheckStarted, Context, Facts, Gathered, Options, RunFinished, RunStarted,
                                 plan, run_gathered)
from tests.test_multinode_units import node


class LocalCheck(Check):
    """A local check that always passes.

    What it checks:
        Nothing; it stands for the local checks of a node.
    Why it matters:
        The judging checks must run after it, in the same stream.
    Known limits:
        None.
    """

    name = "env.local"
    stage = Stage.ENVIRONMENT
    title = "A local check"
    rules = (Rule("ENV999", "local-test", Severity.INFO, "never emitted", "nothing to do"),)

    def run(self, run: Any) -> Iterator[Finding]:
        run.summary("fine")
        return iter(())


def _run(opts: Options, gathered_facts: dict[str, Any], mode: str, judges: list[Any]) -> list[Any]:
    first = plan([LocalCheck()], opts)
    then = plan(judges, replace(opts, mode=mode))
    seen: list[Report] = []

    def gather(local: Report) -> Gathered:
        seen.append(local)
        facts = Facts()
        for k, v in gathered_facts.items():
            facts.provide(k, v)
        return Gathered(Context(options=replace(opts, mode=mode), facts=facts), local)

    events = list(run_gathered(first, Context(options=opts, facts=Facts()), then, gather))
    assert len(seen) == 1  # the gather got the first step's report, once
    return events


def test_the_judging_checks_run_after_the_local_ones_in_one_stream_and_one_report() -> None:
    nodes = [node(0, "a", "10.0.0.1"), node(1, "b", "10.0.0.2")]
    data = {"job": {"master_addr": "10.0.0.1", "master_port": 29500}, "roster": {"waited_s": 1.0}, "nodes": nodes}
    events = _run(Options(mode="run"), {"multinode": data}, "multinode", [c() for c in MN_CHECKS])
    assert isinstance(events[0], RunStarted) and isinstance(events[-1], RunFinished)
    names = [n for n, _, _ in events[0].checks]
    assert names[0] == "env.local" and "mn.gather" in names and "mn.versions" in names
    finished = [e.result.check for e in events if isinstance(e, CheckFinished)]
    assert finished == names  # every announced check finishes, local first
    assert len([e for e in events if isinstance(e, CheckStarted)]) == len(names)
    report = events[-1].report
    assert [r.check for r in report.results] == names
    assert not [r for r in report.results if r.status is Status.CRASHED]


def test_select_and_ignore_apply_to_the_judging_checks() -> None:
    events = _run(Options(mode="run", select=("ENV",)), {}, "multinode", [c() for c in MN_CHECKS])
    assert [r.check for r in events[-1].report.results] == ["env.local"]


def test_a_node_whose_results_never_left_says_so_with_mn004() -> None:
    view = {"host": "b", "where": "10.0.0.1:29500", "store_error": "no answer within 20 s", "roster": None,
            "posted": False, "post_error": None, "waited": 45.0}
    events = _run(Options(mode="run"), {"multinode_node": view}, "node", [NodeSentCheck()])
    last = events[-1].report.results[-1]
    assert last.check == "mn.gather" and last.status is Status.FAILED
    assert [f.code for f in last.findings] == ["MN004"] and last.findings[0].hosts == ("b",)
    ok = dict(view, store_error=None, roster={"members": [0, 1]}, posted=True)
    last = _run(Options(mode="run"), {"multinode_node": ok}, "node", [NodeSentCheck()])[-1].report.results[-1]
    assert last.status is Status.PASSED and "results sent to node 0" in last.summary
