"""Where a job's rendezvous is, read from env:// variables and torchrun's settings.

Promise: pure functions of the environment (and of torchrun command lines
found on this host). They answer three questions the network checks need:
which endpoints to test (``endpoints``), whether this job has peers on other
hosts (``peers_remote``), and whether torchrun's c10d rendezvous will host its
store on this machine (``torchrun_is_host``, the rule of torch's
``_matches_machine_hostname``).
"""

from __future__ import annotations

import ipaddress
import shlex
from dataclasses import asdict, dataclass, field
from typing import Any, Iterable, Mapping, Sequence

C10D_DEFAULT_PORT = 29400  # torch.distributed.elastic.rendezvous.c10d_rendezvous_backend.DEFAULT_PORT
STATIC_DEFAULT_ADDR, STATIC_DEFAULT_PORT = "127.0.0.1", 29500  # torchrun --master-addr/--master-port defaults
ETCD_DEFAULT_PORT = 2379

TORCHRUN_MARKERS = ("torchrun", "torch.distributed.run", "torch.distributed.launch")


@dataclass
class Endpoint:
    """One TCP endpoint every node of the job must reach."""

    host: str
    port: int | None
    source: str  # what named it: "MASTER_ADDR/MASTER_PORT", "PET_RDZV_ENDPOINT", "torchrun (pid 123)"
    kind: str  # "env" (rank 0's TCPStore), "c10d" (torchrun's agent store), "etcd"
    settings: list[str] = field(default_factory=list)  # the settings as given, for evidence
    problems: list[str] = field(default_factory=list)  # settings that could not be read

    @property
    def label(self) -> str:
        h = f"[{self.host}]" if ":" in self.host else self.host
        return f"{h}:{self.port}" if self.port is not None else h

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Endpoint:
        return cls(d["host"], d.get("port"), d.get("source", ""), d.get("kind", "env"), list(d.get("settings") or ()),
                   list(d.get("problems") or ()))


def parse_endpoint(text: str, default_port: int | None) -> tuple[str, int | None, str | None]:
    """torch's parse_rendezvous_endpoint: ``host``, ``host:port`` or ``[v6]:port``; (host, port, problem)."""
    t = text.strip()
    if not t:
        return "localhost", default_port, None
    if t.startswith("["):
        end = t.find("]")
        if end < 0:
            return t, default_port, f"{text!r} opens '[' without closing it"
        host, rest = t[1:end], t[end + 1:]
        port_text = rest[1:] if rest.startswith(":") else ""
    elif t.count(":") == 1:
        host, port_text = t.split(":")
    else:
        host, port_text = t, ""  # a bare IPv6 address or a bare host
    if not port_text:
        return host, default_port, None
    if port_text.isdigit() and 0 <= int(port_text) <= 65535:
        return host, int(port_text), None
    return host, default_port, f"port {port_text!r} in {text!r} is not a port number"


def _int(v: str | None) -> int | None:
    return int(v) if v is not None and v.strip().isdigit() else None


def endpoints(env: Mapping[str, str], agents: Sequence[Mapping[str, Any]] = ()) -> list[Endpoint]:
    """The endpoints named by env:// variables, torchrun's PET_* variables and running torchrun agents."""
    out: list[Endpoint] = []
    addr = (env.get("MASTER_ADDR") or "").strip()
    if addr:
        port_text = env.get("MASTER_PORT")
        ep = Endpoint(addr, _int(port_text), "MASTER_ADDR/MASTER_PORT", "env",
                      [f"MASTER_ADDR={env['MASTER_ADDR']}"] + ([f"MASTER_PORT={port_text}"] if port_text is not None else []))
        if port_text is None:
            ep.problems.append("MASTER_PORT is not set (init_process_group needs it)")
        elif ep.port is None or not 0 < ep.port < 65536:
            ep.problems.append(f"MASTER_PORT={port_text!r} is not a port number")
            ep.port = None
        out.append(ep)
    pet = {k[4:].lower(): v for k, v in env.items() if k.startswith("PET_")}
    if pet.get("rdzv_endpoint") or pet.get("rdzv_backend") or pet.get("master_addr"):
        out.extend(_torchrun_endpoints(pet, "PET_RDZV_ENDPOINT" if pet.get("rdzv_endpoint") else "PET_MASTER_ADDR",
                                       prefix="PET_"))
    for a in agents:
        args = parse_torchrun_argv(a.get("cmdline") or [])
        if args is None:
            continue
        out.extend(_torchrun_endpoints(args, f"torchrun (pid {a.get('pid')})", prefix="--"))
    seen: set[tuple[str, int | None]] = set()
    unique = []
    for ep in out:
        if (ep.host, ep.port) in seen:
            continue
        seen.add((ep.host, ep.port))
        unique.append(ep)
    return unique


def _torchrun_endpoints(args: Mapping[str, str], source: str, prefix: str) -> list[Endpoint]:
    def shown(key: str) -> str:
        return f"{prefix}{key.upper()}={args[key]}" if prefix == "PET_" else f"--{key.replace('_', '-')}={args[key]}"

    if args.get("standalone") not in (None, "", "0", "false", "False"):
        return []  # a local store on a free port: nothing another node must reach
    backend = (args.get("rdzv_backend") or "static").strip()
    endpoint = (args.get("rdzv_endpoint") or "").strip()
    settings = [shown(k) for k in ("rdzv_backend", "rdzv_endpoint", "master_addr", "master_port") if args.get(k)]
    if backend == "static" and not endpoint:
        host = (args.get("master_addr") or STATIC_DEFAULT_ADDR).strip()
        port = _int(args.get("master_port")) or STATIC_DEFAULT_PORT
        return [Endpoint(host, port, source, "env", settings)]
    default: int | None = {"c10d": C10D_DEFAULT_PORT, "etcd": ETCD_DEFAULT_PORT, "etcd-v2": ETCD_DEFAULT_PORT,
               "static": STATIC_DEFAULT_PORT}.get(backend)
    host, eport, problem = parse_endpoint(endpoint, default)
    if eport == 0:
        return []  # port 0: a local store on a port chosen at start (single node)
    # static: node rank 0's agent hosts a plain store at the endpoint; c10d: the agent whose host matches does
    kind = "c10d" if backend == "c10d" else "etcd" if backend.startswith("etcd") else "env"
    ep = Endpoint(host, eport, source, kind, settings)
    if problem:
        ep.problems.append(problem)
    return [ep]


def parse_torchrun_argv(argv: Sequence[str]) -> dict[str, str] | None:
    """torchrun's launcher options from a command line; None when it is not a torchrun agent."""
    if not argv:
        return None
    words = list(argv) if not isinstance(argv, str) else shlex.split(argv)
    head = " ".join(words[:3])
    if not any(m in head for m in TORCHRUN_MARKERS):
        return None
    out: dict[str, str] = {}
    flags = {"--rdzv-endpoint": "rdzv_endpoint", "--rdzv_endpoint": "rdzv_endpoint", "--rdzv-backend": "rdzv_backend",
             "--rdzv_backend": "rdzv_backend", "--master-addr": "master_addr", "--master_addr": "master_addr",
             "--master-port": "master_port", "--master_port": "master_port", "--nnodes": "nnodes",
             "--nproc-per-node": "nproc_per_node", "--nproc_per_node": "nproc_per_node", "--rdzv-id": "rdzv_id",
             "--rdzv_id": "rdzv_id"}
    start = next(n for n, w in enumerate(words) if any(m in w for m in TORCHRUN_MARKERS)) + 1
    i = start
    while i < len(words):
        w = words[i]
        key, eq, val = w.partition("=")
        if w == "--standalone":
            out["standalone"] = "1"
        elif key in flags:
            if eq:
                out[flags[key]] = val
            elif i + 1 < len(words):
                out[flags[key]] = words[i + 1]
                i += 1
        elif w.startswith("-"):
            if not eq and w not in _TORCHRUN_SWITCHES:
                i += 1  # an option of torchrun's that takes a value
        else:
            break  # the training script: what follows is its own
        i += 1
    return out


#: torchrun options that take no value.
_TORCHRUN_SWITCHES = frozenset({"--standalone", "--no-python", "--no_python", "--run-path", "--run_path", "-m",
                                "--module", "--virtual-local-rank", "--virtual_local_rank"})


def nnodes_max(text: str | None) -> int | None:
    if not text:
        return None
    last = text.split(":")[-1].strip()
    return int(last) if last.isdigit() else None


def peers_remote(env: Mapping[str, str], endpoint_local: bool | None) -> tuple[bool | None, str]:
    """Whether this job has ranks on other hosts: True, False, or None (unknown), and why."""
    multi: str | None = None
    single: str | None = None
    n = nnodes_max(env.get("PET_NNODES"))
    if n is not None:
        (multi, single) = (f"PET_NNODES={env['PET_NNODES']}", None) if n > 1 else (None, f"PET_NNODES={env['PET_NNODES']}")
    for key in ("SLURM_NNODES", "SLURM_JOB_NUM_NODES"):
        v = _int(env.get(key))
        if v is not None and multi is None:
            if v > 1:
                multi = f"{key}={v}"
            elif single is None:
                single = f"{key}={v}"
    for wk, lk in (("WORLD_SIZE", "LOCAL_WORLD_SIZE"), ("OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_SIZE")):
        w, lw = _int(env.get(wk)), _int(env.get(lk))
        if w is not None and lw is not None and multi is None:
            if w > lw:
                multi = f"{wk}={w} > {lk}={lw}"
            elif single is None:
                single = f"{wk}={w} = {lk}={lw}"
    if endpoint_local is False:
        return True, "rank 0 is on another host"
    if multi:
        return True, f"the job spans hosts ({multi})"
    if endpoint_local and single:
        return False, f"a single-host job ({single})"
    if endpoint_local:
        return None, "the rendezvous is on this host; how many hosts the job has is not known"
    return None, "no job is configured here (MASTER_ADDR and torchrun's rendezvous settings are unset)"


def torchrun_is_host(endpoint_host: str, hostname: str, hostname_infos: Iterable[tuple[str, str]],
                     endpoint_addrs: Iterable[str]) -> bool:
    """torch's _matches_machine_hostname: will torchrun's c10d rendezvous host its store here?

    ``hostname_infos`` are (canonname, address) pairs from
    getaddrinfo(hostname, AI_CANONNAME); ``endpoint_addrs`` what the endpoint
    host resolves to.
    """
    if endpoint_host == "localhost":
        return True
    try:
        addr = ipaddress.ip_address(endpoint_host)
    except ValueError:
        addr = None
    if addr is not None and addr.is_loopback:
        return True
    if endpoint_host == hostname:
        return True
    ep_ips = set(endpoint_addrs)
    for canon, ip in hostname_infos:
        if canon and canon == endpoint_host:
            return True
        if addr is not None and ip == str(addr):
            return True
        if ip in ep_ips:
            return True
    return False
