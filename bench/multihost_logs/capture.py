"""Rewrite a host's output the way some users' capture does, line by line (gen.py pipes a host's torchrun through it).

usage: ... 2>&1 | python capture.py MODE[,MODE...] NODE > nodeN.log
  label  srun --label style: each line starts with the task number and ": " (NODE here, one task per host)
  ts     moreutils ``ts`` style: each line starts with "Nov 27 20:41:07 " (local time when the line arrived)
  ansi   a colourising tee: error lines red, warning lines yellow, as a terminal logger leaves them in a file
"""
import sys
import time

modes = set(sys.argv[1].split(","))
node = sys.argv[2] if len(sys.argv) > 2 else "0"
RED, YELLOW, OFF = "\x1b[31;1m", "\x1b[33m", "\x1b[0m"
out = sys.stdout.buffer
for raw in sys.stdin.buffer:
    line = raw.decode("utf-8", "replace").rstrip("\n")
    if "ansi" in modes:
        low = line.lower()
        if "error" in low or "traceback" in low or "exception" in low or line.startswith("E"):
            line = f"{RED}{line}{OFF}"
        elif "warn" in low or line.startswith("W"):
            line = f"{YELLOW}{line}{OFF}"
    if "ts" in modes:
        line = time.strftime("%b %d %H:%M:%S ") + line
    if "label" in modes:
        line = f"{node}: {line}"
    out.write((line + "\n").encode())
    out.flush()
