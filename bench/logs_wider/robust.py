"""Does a message keep its reading however the log around it was captured or posted?

usage: python bench/logs_wider/robust.py bench/logs_wider/framework_lines.txt [more files of blocks]

For every block (the format of probe.py: blank-line-separated, "# ..." lines say where it comes from) whose first
cause alone is the one its source points to (or any cause, for blocks without a source line), the block is diagnosed
again in forms real logs take, and each form whose first cause differs is printed:

- behind each launcher or capture prefix: torchrun --tee's ``[default0]:``, srun -l's ``0: ``, mpirun's
  ``[1,0]<stderr>:``, Ray's actor, torch's ``[rank0]:``, docker compose's ``trainer-1  | ``, kubectl's time, pdsh's
  node;
- as two ranks' output (``[rank0]:`` and ``[rank1]:`` copies), under a Python traceback's header, interleaved with a
  job's ordinary output (progress bars, DeepSpeed's INFO lines, a torch warning), with CRLF line ends, and coloured.

The last line counts the changed forms per kind, so two checkouts compare side by side (ROOT=/path/to/checkout).
"""
from __future__ import annotations

import collections
import os
import pathlib
import sys
import tempfile
from typing import Callable

sys.path.insert(0, os.environ.get("ROOT", str(pathlib.Path(__file__).resolve().parents[2])))
from tests.logs.test_corpus import diagnose_file  # noqa: E402

PREFIXES = {"tee": "[default0]:", "srun": "0: ", "mpirun": "[1,0]<stderr>:", "ray": "(RayTrainWorker pid=4321) ",
            "rank": "[rank0]:", "compose": "trainer-1  | ", "kubectl": "2024-05-01T10:00:00.123456789Z ",
            "pdsh": "node1: "}
_TB = ('Traceback (most recent call last):\n  File "/workspace/train.py", line 212, in <module>\n    main()\n'
       '  File "/workspace/train.py", line 88, in main\n    trainer.train()\n')
_ORDINARY = ["  0%|          | 0/1000 [00:00<?, ?it/s]",
             "[2024-05-01 10:00:00,000] [INFO] [real_accelerator.py:203:get_accelerator] Setting ds_accelerator to cuda",
             "[rank1]:[W501 10:00:00.000000000 ProcessGroupNCCL.cpp:4561] Warning: Detected different devices in the "
             "process group"]


def _interleave(body: list[str]) -> str:
    out = list(_ORDINARY)
    for i, ln in enumerate(body):
        out += [ln, _ORDINARY[i % len(_ORDINARY)]]
    return "\n".join(out)


FORMS: dict[str, Callable[[list[str]], str]] = {
    **{f"prefix:{k}": (lambda p: lambda body: "\n".join(p + ln for ln in body))(p) for k, p in PREFIXES.items()},
    "two-ranks": lambda body: "\n".join(f"[rank{r}]:{ln}" for r in (0, 1) for ln in body),
    "traceback": lambda body: _TB + "\n".join(body),
    "interleaved": _interleave,
    "crlf": lambda body: "\r\n".join(body),
    "ansi": lambda body: "\n".join("\x1b[31m" + ln + "\x1b[0m" for ln in body),
}


def first_causes(text: str) -> list[tuple[str, str]]:
    with tempfile.TemporaryDirectory() as d:
        p = pathlib.Path(d) / "log.txt"
        p.write_bytes(text.encode())
        doc = diagnose_file(p)
    return [(f["code"], f["cause"]) for f in doc["findings"] if f["cause"]][:3]


def main(files: list[str]) -> None:
    changed: collections.Counter[str] = collections.Counter()
    n = 0
    for f in files:
        for block in pathlib.Path(f).read_text().split("\n\n"):
            lines = block.strip("\n").splitlines()
            said = [ln for ln in lines if ln.startswith("# ") and "): " in ln]
            body = [ln for ln in lines if not ln.startswith("#")]
            if not body:
                continue
            alone = first_causes("\n".join(body) + "\n")
            if not alone or (said and said[0].rsplit("): ", 1)[1].strip() != alone[0][1]):
                continue
            n += 1
            for name, form in FORMS.items():
                got = first_causes(form(body) + "\n")
                if not got or got[0][1] != alone[0][1]:
                    changed[name] += 1
                    print(f"{name:16} {alone[0]} -> {got[:2]}  | {body[0][:110]}")
    print(f"\n{n} blocks read right alone; forms whose first cause changed: "
          + (", ".join(f"{k} {v}" for k, v in sorted(changed.items())) or "none"))


if __name__ == "__main__":
    main(sys.argv[1:])
