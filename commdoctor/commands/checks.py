"""``commdoctor checks``: every check and every code it can report, one line each."""

from __future__ import annotations

import argparse
import json


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="list as JSON")


def main(args: argparse.Namespace) -> int:
    from commdoctor.checks import BUILTIN_CHECKS
    from commdoctor.core.model import aliases_of

    if args.json:
        doc = [
            {"check": c.name, "stage": c.stage.value, "title": c.title, "modes": sorted(c.modes),
             "rules": [{"code": r.code, "symbol": r.symbol, "severity": r.severity.value, "cause": r.cause,
                        "title": r.title, **({"aliases": list(aliases_of(r.code))} if aliases_of(r.code) else {})}
                       for r in c.rules]}
            for c in BUILTIN_CHECKS
        ]
        print(json.dumps(doc, indent=2))
        return 0
    seen: set[str] = set()
    for c in BUILTIN_CHECKS:
        print(f"{c.name:<18} {c.stage.value:<12} {c.title}")
        for r in c.rules:
            if r.code in seen:
                continue
            seen.add(r.code)
            old = aliases_of(r.code)  # an old code a user may still look for (LOG030 is now ENV030)
            print(f"  {r.code}  {r.severity.value:<7} {r.symbol:<34} {r.cause or '-'}"
                  + (f"  (was {', '.join(old)})" if old else ""))
    return 0
