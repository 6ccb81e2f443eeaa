"""Property tests of every reader of untrusted input, on a fixed small budget (bench/fuzz_readers.py runs 10,000+).

One generator per reader (tests/fuzz_inputs.py): log files (plain, compressed,
truncated, zipped, UTF-16, NUL-filled), saved stacks (py-spy's --json and
commdoctor's snapshot, damaged), hook records (wrong-typed fields, junk lines)
saved ``--json`` reports (wrong types, NaN, deep nesting, lone surrogates) and flight-recorder
dumps (NCCL's pickles and torch's JSON, mutated: memo bombs, globals, huge size lists, wrong
types, Infinity, deep nesting, cut and flipped bytes) through ``hang --fr`` and ``report --fr``.
Each example runs the real reader and the checks or renderer behind it; the
property is that none raises and no check crashes or times out. Examples are
generated from a fixed seed, so CI runs the same inputs every time.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, seed, settings

import fuzz_inputs as F

#: Examples per reader in CI; the whole module stays within a few seconds.
BUDGET = {"logs": 15, "stacks": 20, "records": 20, "report": 20, "fr": 12}


@pytest.mark.parametrize("reader", sorted(F.READERS))
def test_reader_survives_hostile_input(reader: str) -> None:
    strategy, feed = F.READERS[reader]
    if reader == "report":
        F.base_report()  # built once, outside the examples

    @seed(20261125)
    @settings(max_examples=BUDGET[reader], deadline=None, database=None, phases=[Phase.generate, Phase.shrink],
              suppress_health_check=list(HealthCheck))
    @given(strategy)
    def prop(x: Any) -> None:
        feed(x)  # raises ReaderBug (or anything else) only on a bug

    prop()


def test_the_generators_reach_the_damage_they_promise() -> None:
    """A fuzz suite that only makes well-formed input proves nothing: the same seeded draws include each damage."""
    seen: set[str] = set()
    probes = {
        "gzip log": (F.log_files(), lambda fs: any(n.endswith(".gz") for n in fs)),
        "zip log": (F.log_files(), lambda fs: any(d.startswith(b"PK") for d in fs.values())),
        "stack with Infinity": (F.stack_files(), lambda fs: any(b"Infinity" in d for d in fs.values())),
        "record with a wrong-typed field": (F.record_files(), lambda fs: any(
            b'"seq": [' in d or b'"seq": {' in d or b'"seq": "' in d or b'"time": "' in d or b'"seq": null' in d
            for d in fs.values())),
        "report nested 70 deep": (F.report_docs(), lambda d: b"[" * 70 in d),
        "dump naming a global": (F.fr_files(), lambda fs: any(b"posix" in d for d in fs.values())),
        "dump with shared memo references": (F.fr_files(), lambda fs: any(
            d.count(b"h\x01h\x01") or d.count(b"h\x02h\x02") for d in fs.values())),
        "JSON dump with Infinity or NaN": (F.fr_files(), lambda fs: any(
            d[:1] == b"{" and (b"Infinity" in d or b"NaN" in d) for d in fs.values())),
        "pickled dump cut short": (F.fr_files(), lambda fs: any(d[:1] == b"\x80" and not d.endswith(b".")
                                                               for d in fs.values())),
    }
    def prober(name: str, check: Any) -> Any:
        def look(x: Any) -> None:
            if check(x):
                seen.add(name)
        return look

    for name, (strategy, check) in probes.items():
        run = seed(7)(settings(max_examples=40, deadline=None, database=None, phases=[Phase.generate],
                               suppress_health_check=list(HealthCheck))(given(strategy)(prober(name, check))))
        run()
    assert seen == set(probes), set(probes) - seen
