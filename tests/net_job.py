"""What the network tests run inside their namespaces (not a test module).

usage:
  python tests/net_job.py rank      # one rank of a 2-host gloo job (env://); prints one JSON line
  python tests/net_job.py store     # hold a TCPStore as rank 0 would, until killed (bounded)
  python tests/net_job.py hold PORT # hold PORT with a plain listening socket (not a store), until killed

Environment: MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE as torch reads them;
JOB_TIMEOUT (seconds) for init_process_group; LIFE (seconds) for store/hold.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import time


def rank() -> int:
    t0 = time.monotonic()
    from datetime import timedelta

    import torch
    import torch.distributed as dist

    try:
        dist.init_process_group("gloo", timeout=timedelta(seconds=float(os.environ.get("JOB_TIMEOUT", "8"))))
        x = torch.ones(4) * (dist.get_rank() + 1)
        dist.all_reduce(x)
        want = sum(range(1, dist.get_world_size() + 1))
        print(json.dumps({"ok": float(x[0]) == want, "value": float(x[0]), "elapsed_s": time.monotonic() - t0,
                          "host": socket.gethostname()}), flush=True)
        dist.destroy_process_group()
        return 0
    except Exception as e:  # noqa: BLE001 - the job's own error is what the test compares with
        print(json.dumps({"ok": False, "error": f"{type(e).__name__}: {e}"[:2000], "elapsed_s": time.monotonic() - t0,
                          "host": socket.gethostname()}), flush=True)
        return 1


def store() -> int:
    from datetime import timedelta

    import torch.distributed as dist

    s = dist.TCPStore(os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]), is_master=True,
                      wait_for_workers=False, timeout=timedelta(seconds=30))
    s.set("commdoctor-test", "1")
    print("ready", flush=True)
    time.sleep(float(os.environ.get("LIFE", "120")))
    return 0


def hold(port: int) -> int:
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("0.0.0.0", port))
    srv.listen(16)
    print("ready", flush=True)
    end = time.monotonic() + float(os.environ.get("LIFE", "120"))
    conns = []
    srv.settimeout(0.5)
    while time.monotonic() < end:
        try:
            c, _ = srv.accept()
            c.sendall(b"HTTP/1.0 400 Bad Request\r\n\r\n")  # a service that is not a TCPStore
            conns.append(c)
        except socket.timeout:
            pass
    return 0


if __name__ == "__main__":
    mode = sys.argv[1]
    if mode == "rank":
        sys.exit(rank())
    if mode == "store":
        sys.exit(store())
    sys.exit(hold(int(sys.argv[2])))
