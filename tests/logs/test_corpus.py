"""Every case of the shared corpus: the first finding names the labelled cause, and its evidence is real.

The pipeline runs in-process (one CLI subprocess test lives in test_cli.py), so
the 43 cases cost well under a second together. Cases the rules get wrong are
listed in docs/logs.md with the reason; they are expected failures here, and
a test fails if one of them starts passing (so the list stays honest).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from commdoctor.checks import BUILTIN_CHECKS
from commdoctor.loaders.logs import load_logs
from commdoctor.parsing.lines import clean
from commdoctor.pipeline.run import Context, Facts, Options, RunFinished, plan, run_checks

CORPUS = Path("/work/shared/corpus")
if not CORPUS.is_dir():  # CI has shared/ beside the checkout
    CORPUS = Path(__file__).resolve().parents[3] / "shared" / "corpus"
CASES = sorted(p for p in CORPUS.glob("*/truth.json")) if CORPUS.is_dir() else []

#: Cases whose first finding is not the label, and why (kept in step with docs/logs.md).
KNOWN_MISSES = {
    "011-horovod-identical-hostnames-p2p-across-nodes":
        "two identical 'via P2P/IPC' lines from one process; nothing in the excerpt shows a second machine",
    "029-torchx-ray-limited-ports-rdzv-store":
        "RendezvousConnectionError alone cannot tell a closed port from an unreachable or unresolvable store",
    "030-c10d-rdzv-hostname-not-in-etc-hosts":
        "same message as 029; the cause (a name missing from /etc/hosts) is only in the thread",
    "033-remote-error-conn-reset-bad-ib-nodes":
        "a reset connection looks the same from a dead peer and from a bad link; no IB error is in the excerpt",
    "041-aws-ofi-static-p5-topo-xml-subset-gpus":
        "same NCCL warning as 042; without a version line the pre-2.8 NCCL limitation is the likelier reading",
}


def diagnose_file(path: Path) -> dict[str, Any]:
    opts = Options(mode="logs", inputs=(str(path),), extra={"deadline_s": 60.0})
    ctx = Context(options=opts, facts=Facts({"log_model": lambda c: load_logs(c.options.inputs)}))
    report = None
    for ev in run_checks(plan([c() for c in BUILTIN_CHECKS], opts), ctx):
        if isinstance(ev, RunFinished):
            report = ev.report
    assert report is not None
    return report.to_dict()


def diagnose_lines(path: Path, *lines: str) -> dict[str, Any]:
    """Write ``lines`` (one per line) to ``path`` and diagnose it as `commdoctor logs` would."""
    path.write_text("".join(f"{ln}\n" for ln in lines))
    return diagnose_file(path)


def first_cause(path: Path) -> tuple[str | None, str | None]:
    """(code, cause) of the first finding that names a cause, as `logs` orders them; (None, None) when none does."""
    f = next((f for f in diagnose_file(path)["findings"] if f.get("cause")), None)
    return (f["code"], f["cause"]) if f else (None, None)


@pytest.mark.skipif(not CASES, reason="shared corpus not found")
@pytest.mark.parametrize("truth_path", CASES, ids=[p.parent.name for p in CASES])
def test_corpus_case(truth_path: Path) -> None:
    truth = json.loads(truth_path.read_text())
    case = truth_path.parent.name
    doc = diagnose_file(truth_path.parent / "log.txt")
    assert not [r for r in doc["results"] if r["status"] == "crashed"], doc["results"]
    findings = [f for f in doc["findings"] if f["cause"]]
    if not findings and case in KNOWN_MISSES:
        pytest.xfail(KNOWN_MISSES[case])
    assert findings, f"{case}: no finding names a cause"
    first = findings[0]
    # The evidence of the first finding points at lines that really say it.
    raw = (truth_path.parent / "log.txt").read_bytes().split(b"\n")
    for e in first["evidence"]:
        assert e["line"] is not None and 1 <= e["line"] <= len(raw), e
        text, _ = clean(raw[e["line"] - 1])
        assert text is not None and e["text"].rstrip(".") [:200] in text, (e, text)
    causes = [f["cause"] for f in findings]
    if case in KNOWN_MISSES:
        assert first["cause"] != truth["root_cause"], f"{case} now passes: remove it from KNOWN_MISSES and docs/logs.md"
        if case != "011-horovod-identical-hostnames-p2p-across-nodes":
            assert truth["root_cause"] in causes[:3], f"{case}: label not even among the first three: {causes[:3]}"
        pytest.xfail(KNOWN_MISSES[case])
    assert first["cause"] == truth["root_cause"], f"{case}: first finding {first['code']} says {first['cause']}, causes {causes[:4]}"


@pytest.mark.skipif(not CASES, reason="shared corpus not found")
def test_high_confidence_share() -> None:
    """The issue's bar: at least 90% of high-confidence cases right at the first finding."""
    high = [p for p in CASES if json.loads(p.read_text()).get("confidence") == "high"]
    right = 0
    for p in high:
        doc = diagnose_file(p.parent / "log.txt")
        first = next((f for f in doc["findings"] if f["cause"]), None)
        right += bool(first and first["cause"] == json.loads(p.read_text())["root_cause"])
    assert right / len(high) >= 0.9, f"{right}/{len(high)}"
