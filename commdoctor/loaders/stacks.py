"""Saved stacks on disk -> a hang snapshot, for diagnosing a hang after the fact.

Promise: reads either a snapshot JSON that commdoctor wrote (``hang --save``,
the wrapper mode's ``snapshot.json``), or a folder of per-rank py-spy dumps
(``py-spy dump --pid P --json > rank3.json``, or the text output), the rank
taken from the number at the end of each file name, with an optional
``states.json`` giving each rank's pid and process state. Unreadable files become
notes on the snapshot, never exceptions; JSON goes through the one way in
(``safeopen.parse_json``, then ``docschema.clean_stacks``), so a bad frame,
thread or rank is one note and the rest is still read.

Every read is bounded by a budget of work, whatever the files claim: at most
``MAX_BYTES`` a file and ``MAX_TOTAL_BYTES`` in all, and the frames and threads
of ``parsing.stacks.StackBudget`` (frames per thread, threads per process,
frames in all). What is past the budget is named in a note (the thread cut,
the file left out) and everything within it is still read; memory follows the
frames kept, not the size of the input.
"""

from __future__ import annotations

import os
import re
from typing import Any, Iterable

from commdoctor.loaders.docschema import clean_stacks
from commdoctor.parsing.stacks import StackBudget, parse_pyspy_doc, parse_pyspy_text
from commdoctor.core.safeopen import parse_json, read_limited
from commdoctor.facts.snapshot import HangSnapshot, RankView

_RANK_RE = re.compile(r"rank[_-]?(\d+)|(\d+)(?=\.[A-Za-z]+$)|(\d+)$")
MAX_BYTES = 64 << 20
#: Bytes read in all by one load: a folder of many big dumps is read up to here, the rest named and left out.
MAX_TOTAL_BYTES = 256 << 20
#: rank -> {"pid": P, "proc_state": "sleeping|stopped|zombie|exited"}, beside saved per-rank dumps.
STATES_FILE = "states.json"


def _rank_of(name: str) -> int | None:
    m = _RANK_RE.search(os.path.basename(name))
    if not m:
        return None
    return int(next(g for g in m.groups() if g is not None))


def _trim(doc: Any, budget: StackBudget, label: str) -> None:
    """Cut, in place, the thread and frame lists of a parsed stack document to ``budget`` (before typing them,
    so a file of millions of frames is typed and kept only as far as the budget goes)."""

    def threads(ts: Any, where: str) -> Any:
        if not isinstance(ts, list):
            return ts
        ts = budget.keep_threads(ts, where)
        for i, t in enumerate(ts):
            if isinstance(t, dict) and isinstance(t.get("frames"), list):
                name = t.get("thread_name") or t.get("name") or i
                t["frames"] = budget.keep(t["frames"], f"{where}: thread {str(name)[:80]}")
        return ts

    if isinstance(doc, list):  # py-spy's thread list (a list is cut in place: the caller holds it)
        doc[:] = threads(doc, label)
    elif isinstance(doc, dict) and isinstance(doc.get("ranks"), list):
        for r in doc["ranks"]:
            st = r.get("stack") if isinstance(r, dict) else None
            if isinstance(st, dict):
                st["threads"] = threads(st.get("threads"), f"{label}: rank {str(r.get('rank'))[:20]}")
    elif isinstance(doc, dict) and "threads" in doc:
        doc["threads"] = threads(doc.get("threads"), label)
    elif isinstance(doc, dict) and isinstance(doc.get("frames"), list):  # one thread alone
        doc["frames"] = budget.keep(doc["frames"], f"{label}: thread {str(doc.get('thread_name'))[:80]}")


def load_snapshot(paths: Iterable[str], budget: StackBudget | None = None) -> HangSnapshot:
    """The snapshot the files describe; ``budget``: the work allowed (a fresh ``StackBudget`` by default)."""
    budget = budget if budget is not None else StackBudget()
    frames0 = budget.frames_left
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
                sdoc, _ = parse_json(read_limited(f, MAX_BYTES))
                if not isinstance(sdoc, dict):
                    raise ValueError(f"a JSON {type(sdoc).__name__}, not an object of rank -> state")
                states = {int(k): dict(v) for k, v in sdoc.items() if isinstance(v, dict) and str(k).isdigit() and len(str(k)) < 10}
            except (OSError, ValueError, TypeError, AttributeError) as e:
                snap.notes.append(f"{f}: unreadable ({getattr(e, 'strerror', None) or e})")
    bytes_left = MAX_TOTAL_BYTES
    left_out: list[str] = []
    for f in files:
        if os.path.isdir(f):
            continue
        if bytes_left <= 0 or budget.frames_left <= 0:
            left_out.append(f)
            continue
        try:
            # One way in (commdoctor.core.safeopen): size cap, a FIFO waited on only briefly, devices refused.
            data = read_limited(f, min(MAX_BYTES, bytes_left))
        except OSError as e:
            snap.notes.append(f"{f}: {e.strerror or e}, skipped")
            continue
        bytes_left -= len(data)
        head = data[:4096].decode("utf-8", "replace").lstrip()
        if not head and len(data) > 4096:  # only blanks so far: the first character that is not one decides
            head = data.decode("utf-8", "replace").lstrip()[:1]
        doc: Any = None
        if head.startswith(("{", "[")):
            # JSON is typed item by item: a frame with "line": Infinity or "frames": true is named and left out,
            # the rest of the file and every other file are still read. Cut to the budget before typing.
            try:
                doc, fixes = parse_json(data, nonfinite_as_null=True)
                del data
                _trim(doc, budget, f)
                doc, problems = clean_stacks(doc)
            except ValueError as e:
                snap.notes.append(f"{f}: not a stack dump commdoctor can read ({e})")
                continue
            snap.notes += [f"{f}: {p}" for p in fixes + problems][:50]
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
        if doc is not None:
            stack = parse_pyspy_doc(doc)
        else:
            stack = parse_pyspy_text(data.decode("utf-8", "replace"), budget=budget, label=f)
            del data
        if not stack.threads:
            snap.notes.append(f"{f}: no stack found (expected py-spy dump output, --json or text)")
            continue
        snap.ranks[rank] = RankView(rank=rank, pid=stack.pid, proc_state="unknown", stack=stack,
                                    command=stack.command)
    if left_out:
        snap.notes.append(f"{len(left_out)} file(s) left out, the read's budget ({MAX_TOTAL_BYTES >> 20} MiB, "
                          f"{frames0} frames) being spent: " + ", ".join(left_out[:10])
                          + (" ..." if len(left_out) > 10 else ""))
    if budget.cuts > len(budget.notes):
        budget.notes.append(f"... {budget.cuts - len(budget.notes)} more thread(s) cut the same way")
    snap.notes += budget.notes
    for r, st in states.items():
        v = snap.ranks.get(r) or RankView(rank=r)
        pid = st.get("pid")
        v.pid = int(pid) if isinstance(pid, int) else v.pid
        v.proc_state = str(st.get("proc_state") or v.proc_state)
        snap.ranks[r] = v
    return snap
