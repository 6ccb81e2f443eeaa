"""How long commdoctor's network preflight takes to name a rendezvous failure, beside torch's own report.

Needs root (it builds two network namespaces, cdn-bench-a and cdn-bench-b, and
deletes them at the end) and iptables for the firewall cases. For each case it
times, side by side and at the same moment:

- ``commdoctor run --select NET,RDZV --json`` on host b (default --timeout 15), and
- what torch does on host b: ``init_process_group("gloo", env://, timeout=T)`` as rank 1,

then prints both times, the verdict, the first line of torch's error, and the ratio.

usage: sudo python bench/net_preflight.py [--torch-timeout 15]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.netlab import Lab, parallel, why_not  # noqa: E402

RANK1 = r"""
import sys, time, datetime, json
t0 = time.monotonic()
import torch.distributed as dist
t1 = time.monotonic()
try:
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=float(sys.argv[1])))
    print(json.dumps({"ok": True, "s": time.monotonic() - t1}))
except Exception as e:
    print(json.dumps({"ok": False, "s": time.monotonic() - t1, "error": f"{type(e).__name__}: {e}".splitlines()[0][:160]}))
"""


def torch_side(lab: Lab, port: int, master: str, timeout: float) -> dict[str, Any]:
    p = lab.b.run([sys.executable, "-c", RANK1, str(timeout)], env=lab.job_env(port, 1, MASTER_ADDR=master),
                  timeout=timeout * 4 + 60)
    line = next((ln for ln in reversed(p.stdout.splitlines()) if ln.startswith("{")), "{}")
    return json.loads(line)


def doctor_side(lab: Lab, port: int, master: str) -> dict[str, Any]:
    doc, secs, _ = lab.b.commdoctor("--select", "NET,RDZV", env=lab.job_env(port, 1, MASTER_ADDR=master))
    v = doc.get("verdict") or {}
    return {"s": secs, "code": v.get("code"), "title": v.get("title")}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--torch-timeout", type=float, default=15.0)
    args = ap.parse_args()
    reason = why_not()
    if reason:
        print(f"skipped: {reason}")
        return 0
    lab = Lab("bench", net=7).up()
    try:
        a = lab.a.addr
        lab.a.iptables("-I", "INPUT", "-i", "cdn0", "-p", "tcp", "--dport", "29601", "-j", "DROP")
        lab.a.iptables("-I", "INPUT", "-i", "cdn0", "-p", "tcp", "--dport", "29602", "-j", "REJECT")
        # rank 0's store is up where a store would be; the firewall stands between it and host b
        for port in (29601, 29602):
            lab.a.start([sys.executable, "tests/net_job.py", "store"], lab.job_env(port, 0, LIFE="400"), ready="ready")
        cases = [
            ("firewall DROP on MASTER_PORT", 29601, a),
            ("firewall REJECT on MASTER_PORT", 29602, a),
            ("nothing listening (rank 0 not started)", 29603, a),
            ("MASTER_ADDR does not resolve", 29604, "cdn-bench-nohost.invalid"),
            ("MASTER_ADDR on no network (no route)", 29605, "10.201.99.1"),
            ("MASTER_ADDR on the LAN, nobody there", 29606, f"10.201.{lab.net}.77"),
        ]
        rows = []
        for name, port, master in cases:
            # side by side: both start at the same moment on the same host
            d, t = parallel(lambda: doctor_side(lab, port, master),
                            lambda: torch_side(lab, port, master, args.torch_timeout), timeout=600)
            rows.append((name, d, t))
            print(f"{name:42s} commdoctor {d['s']:5.1f} s -> {d['code']}: {d['title']}")
            print(f"{'':42s} torch      {t.get('s', float('nan')):5.1f} s -> {t.get('error') or 'ok'}")
            if d["s"]:
                print(f"{'':42s} ratio torch/commdoctor: {t.get('s', 0) / d['s']:.1f}x")
        return 0
    finally:
        lab.down()


if __name__ == "__main__":
    sys.exit(main())
