"""Typed validation of untrusted input: msgspec against hand-written checks, side by side in one process.

usage: python bench/validate_readers.py [--rounds 5]

Two measurements, each the best of ``--rounds``, interleaved so load on the machine
hits both sides alike:
- a saved report (a real ``commdoctor logs --json`` of a corpus log, its results
  repeated to 200): ``docschema.report_from_doc`` (msgspec, item by item) against
  ``Report.from_dict`` (no validation: what view and report --from did before);
- hook record lines (20,000 enter/exit lines): a msgspec Struct of the record
  against ``records.damaged`` (hand-written, standard library: the hooks import it).
Prints one JSON line with the times and ratios.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from typing import Any, Callable, Optional, Union

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests"))

import msgspec  # noqa: E402

from commdoctor.core import records  # noqa: E402
from commdoctor.loaders.docschema import report_from_doc  # noqa: E402
from commdoctor.core.model import Report  # noqa: E402


class RecordDoc(msgspec.Struct):
    schema: str
    kind: str
    rank: int
    group: Union[str, int]
    seq: int
    op: str
    time: float
    reduce_op: Optional[str] = None
    dtype: Optional[str] = None
    shapes: Optional[list[list[int]]] = None
    numel: Optional[int] = None
    peer: Optional[int] = None
    root: Optional[int] = None
    device: Optional[str] = None
    async_op: bool = False
    site: Optional[str] = None


def best(fn: Callable[[], Any], rounds: int) -> float:
    out = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return min(out)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    import fuzz_inputs as F

    with tempfile.TemporaryDirectory() as d:
        p = os.path.join(d, "rank0.log")
        with open(p, "w") as f:
            f.write("\n".join(F.LOG_LINES) + "\n")
        base = F.base_report()
    doc = dict(base, results=(base["results"] * (200 // max(1, len(base["results"])) + 1))[:200])
    lines = [dict(r) for r in F._records(0, 10000) if r["kind"] in ("enter", "exit")]
    conv = msgspec.convert

    res: dict[str, Any] = {"report_results": len(doc["results"]), "record_lines": len(lines)}
    a = b = c = e = 0.0
    for _ in range(args.rounds):  # interleaved: each round times all four once
        a += best(lambda: report_from_doc(doc), 1)
        b += best(lambda: Report.from_dict(doc), 1)
        c += best(lambda: [conv(x, RecordDoc, strict=False) for x in lines], 1)
        e += best(lambda: [records.damaged(x) for x in lines], 1)
    r = args.rounds
    res.update(report_msgspec_ms=round(1000 * a / r, 1), report_unvalidated_ms=round(1000 * b / r, 1),
               report_ratio=round(a / b, 2), records_msgspec_ms=round(1000 * c / r, 1),
               records_handwritten_ms=round(1000 * e / r, 1), records_ratio_handwritten_over_msgspec=round(e / c, 2))
    print(json.dumps(res))
    return 0


if __name__ == "__main__":
    sys.exit(main())
