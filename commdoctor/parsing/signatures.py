"""Known failure signatures: the matching side of the rule tables in commdoctor.rules.

Promise: ``match_all(text)`` returns every rule row whose words and bounded
regular expression match ``text``; ``keywords()`` lists every literal the
scanner must find before a line is decoded (every row's needles plus what
the run model reads from INFO lines). The rows themselves (what they match,
their cause, causal role, tier, meaning and finding code) are declared once,
in commdoctor.rules, one module per family; this module re-exports them for
the loaders and the scanner.
"""

from __future__ import annotations

import re

from commdoctor.rules import BY_ID, SIGNATURES
from commdoctor.rules.base import CONSEQUENCE, CONTEXT, ROOT, Signature

__all__ = ["BY_ID", "CONSEQUENCE", "CONTEXT", "MODEL_KEYWORDS", "ROOT", "SIGNATURES", "Signature", "keywords", "match_all"]

#: Literal words that make a line worth parsing at all. The scanner looks for
#: these (and only these) before any line is decoded, so a healthy gigabyte of
#: NCCL INFO output costs one multi-pattern pass. Every signature needle is
#: here, plus what the run model reads from INFO lines.
MODEL_KEYWORDS: tuple[str, ...] = (
    "WARN", "rror", "RROR", "ailed", "ailure", "FAIL", "imeout", "imed out", "xception", "Traceback",
    "NCCL version", "nranks", "nRanks", "Bootstrap", "NET/IB :", "NET/IB:", "NET/Socket", "NET/Plugin", "NET/OFI",
    "NET : ", "Using network", "Using interface", "set by environment", "lugin", "cudaDriverVersion", "NVLS", "CollNet",
    "GLOBAL_RANK", "ersion", "GPU0", "GPU1", "Root Cause", "Failures:", "host   ", "local_rank", "traceback", "nexpected",
    "local=[", "remote=[", "Last error", "SeqNum", "atchdog", "bort",
    # NCCL's error-return traces ("bootstrap.cc:554 -> 3") carry no other keyword.
    ".cc:", ".cu:", ".h:", ".c:", "GPU2", "GPU3", "GPU4", "GPU5", "GPU6", "GPU7",
    # An item of NCCL's interface list ("[1]br-05ab815fa14e:172.19.0.1<0>": interfaces print port 0) on a line of
    # its own, where a post wrapped the "NET/Socket : Using" list.
    "<0>",
    # A Python traceback's frame ('File "train.py", line 64, in <module>'): which call of the program's own code
    # each rank failed in, and which torch.distributed collective (loaders.logs reads both).
    '.py", line ',
    # Python logging's highest level and Slurm's fatal reports ("srun: fatal: ..."), errors with no other keyword.
    "CRITICAL", ": fatal: ",
    # The C++ runtime's std::terminate ("terminate called after throwing an instance of 'int'"): a process that
    # ended on an uncaught exception, often with no other keyword on the line.
    "terminate called", "what():",
    # py-spy's text dump of a hung process: each thread's head ('Thread 688510 (active): "MainThread"') and its frames
    # in torch.distributed's API ("    broadcast (torch/distributed/distributed_c10d.py:1191)").
    "(active", "(idle", "distributed_c10d.py:",
)


def keywords() -> tuple[str, ...]:
    """Every literal the scanner must find, deduplicated, in a stable order."""
    seen: dict[str, None] = {}
    for k in MODEL_KEYWORDS:
        seen.setdefault(k, None)
    for s in SIGNATURES:
        for n in s.needles:
            seen.setdefault(n, None)
    return tuple(seen)


def match_all(text: str) -> list[tuple[Signature, re.Match[str]]]:
    """Every signature that ``text`` shows, in table order."""
    out = []
    for s in SIGNATURES:
        m = s.search(text)
        if m is not None:
            out.append((s, m))
    return out
