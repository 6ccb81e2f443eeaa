"""The data model: JSON round trips, verdict order, selection by prefix."""

from __future__ import annotations

import json

import pytest

from commdoctor.checks.base import Check, Rule, selected
from commdoctor.core.model import CheckResult, Evidence, Finding, Remedy, Report, Severity, Stage, Status


def _f(code: str, sev: Severity, cause: str | None = "other", **kw) -> Finding:  # type: ignore[no-untyped-def]
    return Finding(code=code, symbol="x-y", severity=sev, title=code, cause=cause, **kw)


def test_report_round_trips_exactly_through_json() -> None:
    f = Finding(code="NET002", symbol="iface-loopback", severity=Severity.ERROR, title="t", cause="wrong_interface",
                detail="d", ranks=(0, 3), hosts=("n1",), evidence=(Evidence("a.log", "line", 7, 3, "n1"),),
                remedy=Remedy("do it", ("step",), {"NCCL_SOCKET_IFNAME": "eth0"}, "docs/x.md"), consequence_of="ENV030")
    r = Report(tool_version="0", mode="run", created="2026-01-01T00:00:00+00:00", host="h", argv=["commdoctor"],
               environment={"torch": "2.13"},
               results=[CheckResult("net.x", Stage.INTERFACES, "T", Status.FAILED, [f], "s", ["d"], "", "", 0.5, {"k": [1]})])
    text = json.dumps(r.to_dict())
    back = Report.from_dict(json.loads(text))
    assert back.to_dict() == r.to_dict()
    assert back.results[0].findings[0] == f


def test_unknown_cause_is_rejected() -> None:
    with pytest.raises(ValueError, match="unknown cause"):
        _f("ENV001", Severity.ERROR, cause="gremlins")


def test_newer_major_schema_is_refused_with_a_clear_message() -> None:
    with pytest.raises(ValueError, match="not readable by this version"):
        Report.from_dict({"schema_version": "2.0", "tool_version": "9", "mode": "run", "created": "", "host": ""})


def test_verdict_is_first_error_in_causal_order_and_skips_consequences() -> None:
    pg = CheckResult("pg.gloo", Stage.PG_INIT, "", Status.FAILED,
                     [_f("PG001", Severity.ERROR, consequence_of="NET001")])
    net = CheckResult("net.x", Stage.INTERFACES, "", Status.FAILED, [_f("NET001", Severity.ERROR)])
    env = CheckResult("env.x", Stage.ENVIRONMENT, "", Status.PASSED, [_f("ENV030", Severity.WARNING)])
    info = CheckResult("env.y", Stage.ENVIRONMENT, "", Status.PASSED, [_f("ENV040", Severity.INFO)])
    rep = Report("0", "run", "", "h", results=[info, env, pg, net])
    assert rep.verdict().code == "NET001"  # type: ignore[union-attr]
    assert [f.code for f in rep.findings()] == ["NET001", "ENV030", "ENV040", "PG001"]
    # Without the cause present, the consequence is the headline.
    rep2 = Report("0", "run", "", "h", results=[pg])
    assert rep2.verdict().code == "PG001"  # type: ignore[union-attr]
    # Warnings only: the first warning; infos never make a verdict.
    assert Report("0", "run", "", "h", results=[info, env]).verdict().code == "ENV030"  # type: ignore[union-attr]
    assert Report("0", "run", "", "h", results=[info]).verdict() is None


@pytest.mark.parametrize(
    "code,select,ignore,want",
    [
        ("ENV030", (), (), True),
        ("ENV030", ("ENV",), (), True),
        ("ENV030", ("PG",), (), False),
        ("ENV030", (), ("ENV03",), False),
        ("ENV030", ("ENV030",), ("ENV",), True),  # the more specific prefix wins
        ("ENV031", ("ENV03",), ("ENV031",), False),
        ("env030", ("Env",), (), True),
    ],
)
def test_select_and_ignore_match_by_longest_prefix(code: str, select: tuple, ignore: tuple, want: bool) -> None:
    assert selected(code, select, ignore) is want


def test_rules_validate_codes_symbols_and_causes() -> None:
    with pytest.raises(ValueError):
        Rule("ENV1", "x", Severity.ERROR, "t", "r")
    with pytest.raises(ValueError):
        Rule("ENV001", "Not_Kebab", Severity.ERROR, "t", "r")
    with pytest.raises(ValueError):
        Rule("ENV001", "ok", Severity.ERROR, "t", "r", cause="nope")


def test_finding_fills_placeholders_and_attaches_remedy() -> None:
    class C(Check):
        name, stage, title = "t.c", Stage.ENVIRONMENT, "T"
        rules = (Rule("TST001", "thing", Severity.WARNING, "{a} is {b}", "set {a} to {c}",
                      cause="other", steps=("look at {a}",), env={"X": "{c}"}),)

    f = C().finding("TST001", a="A", b="B", c="C", missing_is_fine=1)
    assert f.title == "A is B" and f.remedy is not None
    assert f.remedy.summary == "set A to C" and f.remedy.steps == ("look at A",) and f.remedy.env == {"X": "C"}
    assert f.remedy.docs == "docs/findings/TST001.md"
    # A missing placeholder stays visible instead of raising.
    assert C().finding("TST001", a="A").title == "A is {b}"
