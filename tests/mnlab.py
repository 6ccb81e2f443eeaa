"""Three "hosts" on one bridge, made of network namespaces, for the multi-node tests (not a test module).

Host x is namespace ``cdm-<tag>-x`` with interface ``cdm0`` (10.203.<net>.N/24)
on a veth pair whose other end is a port of bridge ``cdmbr`` in its own
namespace ``cdm-<tag>-br``; each host has its own hostname (``unshare --uts``)
and /etc/hosts (/etc/netns/NAME/hosts). Nothing else is in the namespaces, so
no packet leaves them. ``down`` kills what was started and deletes the
namespaces and their /etc/netns folders, also after a failure.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from tests.netlab import Host, clean_env, kill, sh, why_not  # noqa: F401 - why_not re-exported for the tests

LETTERS = "abc"


class Job:
    """What one node's torchrun printed: the JSON report (when any), its exit status and stderr."""

    def __init__(self, host: str, rc: int | None, out: str, err: str, elapsed: float) -> None:
        self.host, self.rc, self.out, self.err, self.elapsed = host, rc, out, err, elapsed
        start = out.find("{")
        self.doc: dict[str, Any] | None = None
        if start >= 0:
            try:
                self.doc = json.loads(out[start:out.rfind("}") + 1])
            except ValueError:
                self.doc = None

    def report(self) -> dict[str, Any]:
        assert self.doc is not None, f"{self.host}: no JSON (rc={self.rc}):\n{self.out[-2000:]}\n{self.err[-4000:]}"
        return self.doc


class Lab3:
    def __init__(self, tag: str, net: int, n: int = 3) -> None:
        self.tag, self.net = tag, net
        self.br = f"cdm-{tag}-br"
        self.hosts = [Host(f"cdm-{tag}-{x}", f"cdm{tag}{x}", f"10.203.{net}.{k + 1}", iface="cdm0")
                      for k, x in enumerate(LETTERS[:n])]

    @property
    def master(self) -> Host:
        return self.hosts[0]

    def up(self) -> Lab3:
        self.down()
        sh("ip", "netns", "add", self.br)
        sh("ip", "-n", self.br, "link", "add", "cdmbr", "type", "bridge")
        sh("ip", "-n", self.br, "link", "set", "cdmbr", "up")
        names = "".join(f"{h.addr} {h.hostname}\n" for h in self.hosts)
        for k, h in enumerate(self.hosts):
            sh("ip", "netns", "add", h.ns)
            h.ip("link", "set", "lo", "up")
            inner, outer = f"cdm{self.tag}{k}i", f"cdm{self.tag}{k}o"
            sh("ip", "link", "add", inner, "type", "veth", "peer", "name", outer)
            sh("ip", "link", "set", inner, "netns", h.ns)
            sh("ip", "link", "set", outer, "netns", self.br)
            sh("ip", "-n", self.br, "link", "set", outer, "master", "cdmbr")
            sh("ip", "-n", self.br, "link", "set", outer, "up")
            h.ip("link", "set", inner, "name", h.iface)
            h.ip("addr", "add", f"{h.addr}/24", "dev", h.iface)
            h.ip("link", "set", h.iface, "up")
            # Anything not on the lab's subnet is unreachable at once: no packet can leave.
            h.ip("route", "add", "unreachable", "default")
            h.hosts_file(names)
        return self

    def down(self) -> None:
        for h in self.hosts:
            h.stop_all()
        for ns in [h.ns for h in self.hosts] + [self.br]:
            sh("ip", "netns", "del", ns, check=False)
            shutil.rmtree(Path("/etc/netns") / ns, ignore_errors=True)

    def reset(self) -> None:
        """Undo what a test changed: firewall rules, traffic shaping, MTU."""
        for h in self.hosts:
            h.stop_all()
            sh("ip", "netns", "exec", h.ns, "iptables", "-w", "5", "-F", check=False)
            sh("ip", "-n", h.ns, "link", "set", h.iface, "mtu", "1500", check=False)
            sh("ip", "netns", "exec", h.ns, "tc", "qdisc", "del", "dev", h.iface, "root", check=False)

    def torchrun(self, port: int, args: list[str], env_of: dict[str, dict[str, str]] | None = None,
                 skip: tuple[str, ...] = (), nnodes: str | None = None, rdzv: str = "static",
                 deadline: float = 150.0, json_out: bool = True) -> dict[str, Job]:
        """``torchrun ... -m commdoctor run --json ARGS`` on every host but ``skip``, at once; each one's output."""
        n = len(self.hosts)
        procs = {}
        t0 = time.monotonic()
        for k, h in enumerate(self.hosts):
            if h.hostname in skip:
                continue
            run = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "1",
                   "--nnodes", nnodes or str(n)]
            if rdzv == "static":
                run += ["--master-addr", self.master.addr, "--master-port", str(port), "--node-rank", str(k)]
            else:
                run += ["--rdzv-backend", "c10d", "--rdzv-endpoint", f"{self.master.addr}:{port}",
                        "--rdzv-id", f"cdm{port}", "--rdzv-conf", "last_call_timeout=2,join_timeout=60"]
            run += ["-m", "commdoctor", "run", *(["--json"] if json_out else ["--no-tui"]), *args]
            env = clean_env(**(env_of or {}).get(h.hostname, {}))
            env["LOGLEVEL"] = "WARNING"
            procs[h.hostname] = (h, h.start(run, env))
        out: dict[str, Job] = {}
        end = t0 + deadline
        for name, (h, p) in procs.items():
            try:
                so, se = p.communicate(timeout=max(1.0, end - time.monotonic()))
            except subprocess.TimeoutExpired:
                kill(p)
                so, se = p.communicate(timeout=5)
            out[name] = Job(name, p.returncode, so or "", se or "", time.monotonic() - t0)
        return out


def codes(doc: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for f in doc["findings"]:
        out.setdefault(f["code"], []).append(f)
    return out


def result(doc: dict[str, Any], check: str) -> dict[str, Any]:
    return next(r for r in doc["results"] if r["check"] == check)
