"""How many of NCCL's own WARN messages `commdoctor logs` reads: a coverage measure over NCCL's source.

usage: python bench/nccl_warn_catalog.py NCCL_GIT_DIR [--tags v2.18.6-1 v2.28.9-1 ...] [--list]

Collects every ``WARN("...")`` format string under src/ at each tag (default: a spread from 2.4 to the checkout's
HEAD), fills each placeholder with a neutral value (``%s`` -> ``x``, ``%d`` -> ``1``) behind NCCL's own line prefix
(``host:pid:tid [dev] file:line NCCL WARN ...``), diagnoses each line on its own with the same pipeline as
``commdoctor logs`` (in this process), and prints how many got a finding with a cause, an unrecognised failure
(LOG080), or nothing. ``--list`` prints the unrecognised ones with the file and the first and last tag that has
them: the candidates for a new rule row. Placeholders filled with ``x`` can hide a match a rule would make on a
real value (an address, an errno string), so a listed message is a lead to read in NCCL's source, not proof.
Run it when a new NCCL release comes out.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from commdoctor.checks import BUILTIN_CHECKS  # noqa: E402
from commdoctor.loaders.logs import load_logs  # noqa: E402
from commdoctor.pipeline.run import Context, Facts, Options, RunFinished, plan, run_checks  # noqa: E402

DEFAULT_TAGS = ("v2.4.8-1", "v2.7.8-1", "v2.10.3-1", "v2.12.12-1", "v2.14.3-1", "v2.18.6-1", "v2.21.5-1",
                "v2.23.4-1", "v2.26.6-1", "v2.28.9-1", "HEAD")
_WARN = re.compile(r'WARN\("((?:[^"\\]|\\.)*)"')
_SPEC = re.compile(r'%[-+ #0]*\d*(?:\.\d+)?(?:hh|h|ll|l|z|j|t)?[sdiuxXpcfgeEm]')
_FILL = {"s": "x", "p": "0x7f00", "x": "1f", "X": "1F", "c": "c", "f": "1.0", "g": "1", "e": "1", "m": "x"}


def fill(fmt: str) -> str:
    s = fmt.replace("\\n", "").replace('\\"', '"')
    s = _SPEC.sub(lambda m: _FILL.get(m.group(0)[-1], "1"), s)
    return re.sub(r'%"\s*PRI[a-z0-9]+\s*"', "1", s).replace("%%", "%")


def collect(repo: str, tags: list[str]) -> dict[str, dict]:
    seen: dict[str, dict] = {}
    for tag in tags:
        files = subprocess.run(["git", "-C", repo, "ls-tree", "-r", "--name-only", tag, "src"], capture_output=True,
                               text=True, check=True).stdout.split()
        for f in files:
            if not re.search(r"\.(cc|cu|cpp|c|h)$", f):
                continue
            text = subprocess.run(["git", "-C", repo, "show", f"{tag}:{f}"], capture_output=True, text=True,
                                  errors="replace").stdout
            for i, line in enumerate(text.splitlines(), 1):
                for m in _WARN.finditer(line):
                    e = seen.setdefault(m.group(1), {"file": f[4:], "line": i, "first": tag})
                    e["last"] = tag
    return seen


def diagnose(path: Path) -> list[dict]:
    opts = Options(mode="logs", inputs=(str(path),), extra={"deadline_s": 60.0})
    ctx = Context(options=opts, facts=Facts({"log_model": lambda c: load_logs(c.options.inputs)}))
    for ev in run_checks(plan([c() for c in BUILTIN_CHECKS], opts), ctx):
        if isinstance(ev, RunFinished):
            return [f for f in ev.report.to_dict()["findings"] if f["severity"] != "info"]
    return []


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("repo", help="a git checkout of NVIDIA/nccl")
    ap.add_argument("--tags", nargs="+", default=list(DEFAULT_TAGS))
    ap.add_argument("--list", action="store_true", help="print the messages that got no reading")
    a = ap.parse_args()
    t0 = time.monotonic()
    fmts = collect(a.repo, a.tags)
    tally: Counter[str] = Counter()
    unread = []
    with tempfile.TemporaryDirectory() as tmp:
        p = Path(tmp) / "rank0.log"
        for fmt, where in fmts.items():
            p.write_text(f"host1:1234:1240 [0] {where['file']}:{where['line']} NCCL WARN {fill(fmt)}\n")
            found = diagnose(p)
            if any(f["cause"] for f in found):
                tally["a cause"] += 1
            elif found:
                tally["unrecognised failure (LOG080)"] += 1
                unread.append((where, fmt))
            else:
                tally["nothing (harmless or a note)"] += 1
    print(f"{len(fmts)} distinct WARN format strings in {len(a.tags)} tags of {a.repo} ({time.monotonic() - t0:.0f} s)")
    for k, n in tally.most_common():
        print(f"  {k:32s} {n:5d}  ({100 * n / max(1, len(fmts)):.0f} %)")
    if a.list:
        for where, fmt in sorted(unread, key=lambda t: t[0]["file"]):
            print(f"{where['file']}:{where['line']} [{where['first']}..{where['last']}] {fmt[:140]}")


if __name__ == "__main__":
    main()
