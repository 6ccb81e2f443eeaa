"""Print the first three causes `commdoctor logs` gives for each blank-line-separated block of a file.

usage: ROOT=/path/to/checkout python bench/logs_wider/probe.py bench/logs_wider/nccl_lines.txt
Compare two checkouts side by side by running it with each ROOT. Blocks are single failure messages
filled in from NCCL/torch format strings (each from the library source named beside it).

A block may start with a comment "# LIBRARY FILE:LINE (RELEASE): CAUSE" (framework_lines.txt): then the
last lines count, per library, the blocks whose first cause is the one its source points to.
"""
import collections
import os
import pathlib
import sys
import tempfile

sys.path.insert(0, os.environ.get("ROOT", str(pathlib.Path(__file__).resolve().parents[2])))
from tests.logs.test_corpus import diagnose_file  # noqa: E402

total: collections.Counter[str] = collections.Counter()
right: collections.Counter[str] = collections.Counter()
for block in pathlib.Path(sys.argv[1]).read_text().split("\n\n"):
    lines = block.strip("\n").splitlines()
    # A block's "# ..." lines say where its message comes from; the rest is the log.
    said = [ln for ln in lines if ln.startswith("# ") and "): " in ln]
    b = "\n".join(ln for ln in lines if not ln.startswith("#"))
    if not b:
        continue
    with tempfile.TemporaryDirectory() as d:
        p = pathlib.Path(d) / "log.txt"
        p.write_text(b + "\n")
        doc = diagnose_file(p)
    got = [(f["code"], f["cause"]) for f in doc["findings"] if f["cause"]][:3]
    print(f"{b.splitlines()[0][:110]!r}\n    -> {got}")
    if said:
        lib, want = said[0][2:].split()[0], said[0].rsplit("): ", 1)[1].strip()
        total[lib] += 1
        right[lib] += bool(got and got[0][1] == want)
if total:
    print()
    for lib in sorted(total):
        print(f"{lib:40} {right[lib]:3} of {total[lib]:3} get the cause their source points to")
    print(f"{'all':40} {sum(right.values()):3} of {sum(total.values()):3}")
