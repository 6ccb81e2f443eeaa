"""Saved stacks on disk -> a hang snapshot, for diagnosing a hang after the fact.

Promise: reads either a snapshot JSON that commdoctor wrote (``hang --save``,
the wrapper mode's ``snapshot.json``), or a folder of per-rank py-spy dumps
(``py-spy dump --pid P --json > rank3.json``, or the text output), the rank
taken from the number at the end of each file name, with an optional
``states.json`` giving each rank's pid and process state. Unreadable files become
notes on the snapshot, never exceptions; JSON goes through the one way in
(``safeopen.parse_json``, then ``docschema.clean_stacks``), so a bad frame,
thread or rank is one note and the rest is still read.
"""

from __future__ import annotations

import json
import os
import re
from typing import Iterable

from commdoctor.docschema import clean_stacks
from commdoctor.parsing.stacks import parse_stack_text
from commdoctor.safeopen import parse_json, read_limited
from commdoctor.snapshot import HangSnapshot, RankView

_RANK_RE = re.compile(r"rank[_-]?(\d+)|(\d+)(?=\.[A-Za-z]+$)|(\d+)$")
MAX_BYTES = 64 << 20
#: rank -> {"pid": P, "proc_state": "sleeping|stopped|zombie|exited"}, beside saved per-rank dumps.
STATES_FILE = "states.json"


def _rank_of(name: str) -> int | None:
    m = _RANK_RE.search(os.path.basename(name))
    if not m:
        return None
    return int(next(g for g in m.groups() if g is not None))


def load_snapshot(paths: Iterable[str]) -> HangSnapshot:
    snap = HangSnapshot(source="saved")
    files: list[str] = []
    for p in paths:
        if os.path.isdir(p):
            files += sorted(os.path.join(p, n) for n in os.listdir(p) if not n.startswith("."))
        else:
            files.append(p)
    states: dict[int, dict[str, object]] = {}
    for f in list(files):
        if os.path.basename(f) == STATES_FILE:
            files.remove(f)
            try:
                doc, _ = parse_json(read_limited(f, MAX_BYTES))
                if not isinstance(doc, dict):
                    raise ValueError(f"a JSON {type(doc).__name__}, not an object of rank -> state")
                states = {int(k): dict(v) for k, v in doc.items() if isinstance(v, dict) and str(k).isdigit() and len(str(k)) < 10}
            except (OSError, ValueError, TypeError, AttributeError) as e:
                snap.notes.append(f"{f}: unreadable ({getattr(e, 'strerror', None) or e})")
    for f in files:
        if os.path.isdir(f):
            continue
        try:
            # One way in (commdoctor.safeopen): size cap, a FIFO waited on only briefly, devices refused.
            data = read_limited(f, MAX_BYTES)
        except OSError as e:
            snap.notes.append(f"{f}: {e.strerror or e}, skipped")
            continue
        text = data.decode("utf-8", "replace")
        stripped = text.lstrip()
        if stripped.startswith(("{", "[")):
            # JSON is typed item by item: a frame with "line": Infinity or "frames": true is named and left out,
            # the rest of the file and every other file are still read.
            try:
                doc, fixes = parse_json(data, nonfinite_as_null=True)
                doc, problems = clean_stacks(doc)
            except ValueError as e:
                snap.notes.append(f"{f}: not a stack dump commdoctor can read ({e})")
                continue
            snap.notes += [f"{f}: {p}" for p in fixes + problems][:50]
            text = json.dumps(doc)
            if isinstance(doc, dict) and "ranks" in doc:
                try:
                    saved = HangSnapshot.from_dict(doc)
                except (KeyError, TypeError, ValueError, OverflowError) as e:
                    snap.notes.append(f"{f}: not a commdoctor snapshot ({e})")
                    continue
                saved.source = "saved"
                snap.ranks.update(saved.ranks)
                snap.world_size = snap.world_size or saved.world_size
                snap.host = snap.host or saved.host
                snap.notes += saved.notes
                snap.job = snap.job or saved.job
                continue
        rank = _rank_of(f)
        if rank is None:
            snap.notes.append(f"{f}: cannot tell the rank from the name (call it rank3.json or rank3.txt)")
            continue
        stack = parse_stack_text(text)
        if not stack.threads:
            snap.notes.append(f"{f}: no stack found (expected py-spy dump output, --json or text)")
            continue
        snap.ranks[rank] = RankView(rank=rank, pid=stack.pid, proc_state="unknown", stack=stack,
                                    command=stack.command)
    for r, st in states.items():
        v = snap.ranks.get(r) or RankView(rank=r)
        pid = st.get("pid")
        v.pid = int(pid) if isinstance(pid, int) else v.pid
        v.proc_state = str(st.get("proc_state") or v.proc_state)
        snap.ranks[r] = v
    return snap
