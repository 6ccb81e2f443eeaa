"""Print the first three causes `commdoctor logs` gives for each blank-line-separated block of a file.

usage: ROOT=/path/to/checkout python bench/logs_wider/probe.py bench/logs_wider/nccl_lines.txt
Compare two checkouts side by side by running it with each ROOT. Blocks are single failure messages
filled in from NCCL/torch format strings (each from the library source named beside it).
"""
import os
import pathlib
import sys
import tempfile

sys.path.insert(0, os.environ.get("ROOT", str(pathlib.Path(__file__).resolve().parents[2])))
from tests.logs.test_corpus import diagnose_file  # noqa: E402

for b in pathlib.Path(sys.argv[1]).read_text().split("\n\n"):
    # A block's "# ..." lines say where its message comes from; the rest is the log.
    b = "\n".join(ln for ln in b.strip("\n").splitlines() if not ln.startswith("#"))
    if not b:
        continue
    with tempfile.TemporaryDirectory() as d:
        p = pathlib.Path(d) / "log.txt"
        p.write_text(b + "\n")
        doc = diagnose_file(p)
    got = [(f["code"], f["cause"]) for f in doc["findings"] if f["cause"]][:3]
    print(f"{b.splitlines()[0][:110]!r}\n    -> {got}")
