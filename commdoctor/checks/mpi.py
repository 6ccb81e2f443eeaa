"""MPI and UCX on this host: the launcher context, and interface settings that name nothing usable.

Promise: a pure function of facts (``mpi_env`` from commdoctor.probes.mpi,
``net_interfaces``, ``net_env`` and the RDMA devices of ``memlock``), so the
rules are testable over the environment of a real process started with
Open MPI, MPICH/Intel MPI, Slurm or UCX variables (mpirun need not exist).
"""

from __future__ import annotations

import ipaddress
from typing import Any, Iterator, Mapping

from commdoctor.core import netselect as ns
from commdoctor.checks.base import Check, Rule
from commdoctor.core.ifvars import applies_to
from commdoctor.core.model import Evidence, Finding, Severity, Stage
from commdoctor.core.context import CheckRun

E, W, I = Severity.ERROR, Severity.WARNING, Severity.INFO

#: Interface settings, by library: (variable, grammar) with grammar "ompi" (names or CIDR subnets),
#: "ucx" (netdev names or RDMA device:port, or "all"), "name" (one interface name).
SETTINGS: tuple[tuple[str, str, str], ...] = (
    ("openmpi", "OMPI_MCA_btl_tcp_if_include", "ompi"),
    ("openmpi", "OMPI_MCA_btl_tcp_if_exclude", "ompi"),
    ("openmpi", "OMPI_MCA_oob_tcp_if_include", "ompi"),
    ("openmpi", "OMPI_MCA_oob_tcp_if_exclude", "ompi"),
    ("ucx", "UCX_NET_DEVICES", "ucx"),
    ("mpich", "HYDRA_IFACE", "name"),
    ("mpich", "I_MPI_HYDRA_IFACE", "name"),
)


def _entries(value: str) -> list[str]:
    return [p.strip() for p in value.split(",") if p.strip()]


def _is_cidr(entry: str) -> bool:
    try:
        ipaddress.ip_network(entry, strict=False)
        return "/" in entry
    except ValueError:
        return False


def _cidr_matches(entry: str, ifaces: list[ns.Interface]) -> list[str]:
    """Interfaces whose network is exactly ``entry`` (Open MPI matches a CIDR subnet precisely)."""
    net = ipaddress.ip_network(entry, strict=False)
    out = []
    for i in ifaces:
        for a in i.addrs:
            if a.prefixlen is None:
                continue
            try:
                if ipaddress.ip_network(f"{a.address}/{a.prefixlen}", strict=False) == net:
                    out.append(i.name)
            except ValueError:
                continue
    return out


def selected(grammar: str, value: str, ifaces: list[ns.Interface]) -> tuple[set[str], list[str], list[str]]:
    """(interfaces here the setting names, entries naming nothing here, RDMA device entries)."""
    names = {i.name for i in ifaces}
    hit: set[str] = set()
    missing: list[str] = []
    rdma: list[str] = []
    for e in _entries(value):
        if grammar == "ucx" and e == "all":
            hit |= names
        elif grammar == "ucx" and ":" in e:
            rdma.append(e)
        elif grammar == "ompi" and _is_cidr(e):
            got = _cidr_matches(e, ifaces)
            hit |= set(got)
            if not got:
                missing.append(e)
        elif e in names:
            hit.add(e)
        else:
            missing.append(e)
    return hit, missing, rdma


def launcher_context(env: Mapping[str, str]) -> dict[str, Any]:
    """What the MPI launchers, Slurm and UCX variables say about this process, in plain words."""
    ctx: dict[str, Any] = {}
    if "OMPI_COMM_WORLD_RANK" in env or "OMPI_COMM_WORLD_SIZE" in env:
        ctx["openmpi"] = {"rank": env.get("OMPI_COMM_WORLD_RANK"), "size": env.get("OMPI_COMM_WORLD_SIZE"),
                          "local_rank": env.get("OMPI_COMM_WORLD_LOCAL_RANK"),
                          "local_size": env.get("OMPI_COMM_WORLD_LOCAL_SIZE")}
    mca = {k[len("OMPI_MCA_"):]: v for k, v in env.items() if k.startswith("OMPI_MCA_")}
    if mca:
        ctx["mca"] = dict(sorted(mca.items())[:32])
    if "PMI_RANK" in env or "PMI_SIZE" in env or "PMIX_RANK" in env:
        ctx["pmi"] = {"rank": env.get("PMI_RANK") or env.get("PMIX_RANK"), "size": env.get("PMI_SIZE"),
                      "local_rank": env.get("MPI_LOCALRANKID"), "local_size": env.get("MPI_LOCALNRANKS")}
    hydra = {k: v for k, v in env.items() if k.startswith(("HYDRA_", "HYD_", "I_MPI_"))}
    if hydra:
        ctx["hydra"] = dict(sorted(hydra.items())[:32])
    if "SLURM_JOB_ID" in env or "SLURM_PROCID" in env:
        ctx["slurm"] = {k.lower(): env.get(v) for k, v in (("job", "SLURM_JOB_ID"), ("step", "SLURM_STEP_ID"),
                                                          ("rank", "SLURM_PROCID"), ("ntasks", "SLURM_NTASKS"),
                                                          ("local_rank", "SLURM_LOCALID"), ("nodes", "SLURM_JOB_NODELIST"),
                                                          ("mpi_type", "SLURM_MPI_TYPE")) if env.get(v) is not None}
    ucx = {k: v for k, v in env.items() if k.startswith(("UCX_", "UCC_"))}
    if ucx:
        ctx["ucx"] = dict(sorted(ucx.items())[:32])
    return ctx


def _summary(ctx: dict[str, Any]) -> str:
    bits = []
    if "openmpi" in ctx:
        o = ctx["openmpi"]
        bits.append(f"Open MPI rank {o['rank']} of {o['size']}" + (f" (local {o['local_rank']} of {o['local_size']})"
                                                                 if o.get("local_rank") is not None else ""))
    if "pmi" in ctx:
        p = ctx["pmi"]
        bits.append(f"PMI rank {p['rank']} of {p['size'] or '?'}")
    if "slurm" in ctx:
        s = ctx["slurm"]
        bits.append(f"Slurm job {s.get('job', '?')}" + (f" task {s['rank']} of {s.get('ntasks', '?')}" if "rank" in s else "")
                    + (f" on {s['nodes']}" if s.get("nodes") else ""))
    if "mca" in ctx:
        keys = [k for k in ("pml", "btl", "btl_tcp_if_include", "btl_tcp_if_exclude", "oob_tcp_if_include") if k in ctx["mca"]]
        bits.append("MCA " + (", ".join(f"{k}={ctx['mca'][k]}" for k in keys) or f"{len(ctx['mca'])} setting(s)"))
    if "hydra" in ctx:
        bits.append(f"Hydra/Intel MPI {len(ctx['hydra'])} setting(s)")
    if "ucx" in ctx:
        u = ctx["ucx"]
        keys = [k for k in ("UCX_NET_DEVICES", "UCX_TLS") if k in u]
        bits.append(", ".join(f"{k}={u[k]}" for k in keys) or f"UCX/UCC {len(u)} setting(s)")
    return "; ".join(bits) or "no MPI, Slurm or UCX variables"


class MpiContextCheck(Check):
    """The MPI launcher context, and whether the MPI and UCX interface settings name usable interfaces.

    What it checks:
        Reports what Open MPI (OMPI_COMM_WORLD_*, OMPI_MCA_*), MPICH and Intel
        MPI (PMI_RANK, PMI_SIZE, MPI_LOCALRANKID, HYDRA_*, I_MPI_*), Slurm
        (SLURM_*) and UCX/UCC (UCX_*, UCC_*) variables say about this process.
        Then reads Open MPI's btl_tcp_if_include / btl_tcp_if_exclude /
        oob_tcp_if_include / oob_tcp_if_exclude (names or CIDR subnets),
        UCX_NET_DEVICES (network interfaces and RDMA device:port entries) and
        HYDRA_IFACE / I_MPI_HYDRA_IFACE against this host's interfaces and
        RDMA devices: names this host lacks, interfaces that are down or
        without an address, include and exclude set together, an exclude list
        that lets loopback back in, and MPI interfaces that differ from the
        ones NCCL_SOCKET_IFNAME / GLOO_SOCKET_IFNAME pin.
    Why it matters:
        Open MPI's TCP transport given an interface peers cannot reach fails
        with "received unexpected process identifier" or "connect() to ...
        failed: No route to host", or hangs; UCX with a device it lacks says
        "no usable transports/devices". When NCCL or gloo and MPI use different
        networks, one of them is usually the wrong one.
    Known limits:
        Only settings in the environment are seen (not mpirun --mca arguments
        or openmpi-mca-params.conf), and only on this host: interface names can
        differ between nodes, so run commdoctor on every node.
    """

    name = "net.mpi"
    stage = Stage.INTERFACES
    title = "MPI, Slurm and UCX context and interface settings"
    rules = (
        Rule("NET060", "mpi-interface-not-found", E, "{var} names {names}, which this host does not have",
             "Set {var} to interfaces (or a subnet written exactly as the interface's network) this host has: {var}={suggest}",
             cause="wrong_interface", steps=("Interfaces here: {available}",)),
        Rule("NET061", "mpi-interface-unusable", E, "{var} names {iface}, which is {state}",
             "Bring {iface} up with an address, or name the interface that carries the job's network: {var}={suggest}",
             cause="wrong_interface"),
        Rule("NET062", "mpi-include-and-exclude", E, "both {inc} and {exc} are set",
             "Keep one of them (Open MPI refuses both): {inc} names the interfaces to use",
             cause="environment_misconfig"),
        Rule("NET063", "mpi-exclude-keeps-loopback", W, "{var}={value} does not exclude the loopback interface",
             "Add lo to the exclude list: an exclude list replaces Open MPI's default, which excluded loopback",
             cause="wrong_interface"),
        Rule("NET064", "libraries-use-different-interfaces", W, "{a} and {b} are pinned to different interfaces here",
             "Name the interface of the network the nodes share for every library the job uses",
             cause="wrong_interface"),
        Rule("NET065", "ucx-device-not-found", E, "UCX_NET_DEVICES names {names}, which this host does not have",
             "List devices this host has (ucx_info -d): UCX_NET_DEVICES={suggest}", cause="ib_misconfig",
             steps=("RDMA devices here: {devices}",)),
    )

    def run(self, run: CheckRun) -> Iterator[Finding]:
        env = dict(run.fact("mpi_env"))
        ctx = launcher_context(env)
        run.data["mpi"] = ctx
        run.summary(_summary(ctx))
        if not any(var in env for _, var, _ in SETTINGS):
            return
        ifaces = ns.interfaces_from(run.fact("net_interfaces"))
        net_env = dict(run.fact("net_env"))
        try:
            rdma = [d.name for d in run.fact("memlock").rdma_devices]
        except KeyError:
            rdma = []
        good = ns.recommend(ifaces)
        suggest = good.name if good else "<interface that reaches the other hosts>"
        available = ", ".join(f"{i.name} ({', '.join(a.address for a in i.addrs[:2]) or 'no address'})" for i in ifaces) or "none"
        chosen: dict[str, tuple[str, set[str]]] = {}  # library -> (setting, interfaces it selects)
        for lib, var, grammar in SETTINGS:
            value = env.get(var)
            if value is None or not value.strip():
                continue
            ev = [Evidence("env", f"{var}={value}")]
            hit, missing, rdma_entries = selected(grammar, value, ifaces)
            if missing:
                yield self.finding("NET060", var=var, names=", ".join(missing), suggest=suggest, available=available,
                                   evidence=ev, env={var: suggest},
                                   detail=f"Interface settings by library: {applies_to({lib})}." +
                                          (" A CIDR subnet must equal an interface's network exactly." if grammar == "ompi" else ""))
            lost = [e for e in rdma_entries if e.split(":")[0] not in rdma]
            if lost:
                yield self.finding("NET065", names=", ".join(lost), suggest=",".join(f"{d}:1" for d in rdma) or suggest,
                                   devices=", ".join(rdma) or "none", evidence=ev)
            if var.endswith("_exclude"):
                if not any(i.kind == "loopback" and i.name in hit for i in ifaces) and \
                        not any(e.startswith("127.") for e in _entries(value)):
                    yield self.finding("NET063", var=var, value=value, evidence=ev, env={var: f"lo,{value}"})
                continue
            for name in sorted(hit):
                i = next(x for x in ifaces if x.name == name)
                state = "down" if not i.up else ("up without carrier" if not i.running else
                                                 ("without an IP address" if not i.addrs else ""))
                if state and value.strip() != "all":
                    yield self.finding("NET061", var=var, iface=name, state=state, suggest=suggest, evidence=ev,
                                       env={var: suggest})
            if hit and value.strip() != "all":
                chosen.setdefault(lib, (f"{var}={value}", hit))
        for a, b in (("OMPI_MCA_btl_tcp_if_include", "OMPI_MCA_btl_tcp_if_exclude"),
                     ("OMPI_MCA_oob_tcp_if_include", "OMPI_MCA_oob_tcp_if_exclude")):
            if env.get(a, "").strip() and env.get(b, "").strip():
                yield self.finding("NET062", inc=a, exc=b, evidence=[Evidence("env", f"{a}={env[a]}"), Evidence("env", f"{b}={env[b]}")])
        # NCCL and gloo pins, resolved with their own grammars, against the MPI/UCX ones.
        names = {i.name for i in ifaces}
        nccl = net_env.get("NCCL_SOCKET_IFNAME", "").strip()
        if nccl and not nccl.startswith("^"):
            spec = ns.parse_nccl_list(nccl)
            chosen.setdefault("nccl", (f"NCCL_SOCKET_IFNAME={nccl}", {n for n in names if spec.matches(n)}))
        gloo = net_env.get("GLOO_SOCKET_IFNAME", "").strip()
        if gloo:
            chosen.setdefault("gloo", (f"GLOO_SOCKET_IFNAME={gloo}", {n for n in _entries(gloo) if n in names}))
        libs = [lib for lib in ("nccl", "gloo", "openmpi", "ucx", "mpich") if lib in chosen and chosen[lib][1]]
        for x, y in zip(libs, libs[1:]):
            (sa, ia), (sb, ib) = chosen[x], chosen[y]
            if not ia & ib:
                yield self.finding("NET064", a=sa, b=sb, evidence=[Evidence("env", sa), Evidence("env", sb)],
                                   detail=f"{sa} selects {', '.join(sorted(ia))}; {sb} selects {', '.join(sorted(ib))}. "
                                          f"Interface settings by library: {applies_to({x, y})}.")
                break


MPI_CHECKS: tuple[type[Check], ...] = (MpiContextCheck,)
