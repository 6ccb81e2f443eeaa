"""Probes touch the live world (sockets, processes, torch in child processes).

Promise: side effects live here only, and each probe holds its own deadline.
``live_providers`` maps fact names to the probes that compute them.
"""

from __future__ import annotations

from typing import Any, Callable


def live_providers() -> dict[str, Callable[[Any], Any]]:
    from commdoctor.probes import env

    return {
        # `run` keeps the probe's interpreter for its local process-group test: it runs rank 0 and forks the others.
        # ("group_test": whether the planned checks include that test; the command that planned them says.)
        "torch": lambda ctx: env.torch_facts(timeout=max(30.0, ctx.options.pg_timeout),
                                             keep_for_rank0=ctx.options.mode == "run"
                                             and ctx.options.extra.get("group_test", True)),
        "nvidia_smi": lambda ctx: env.nvidia_smi(),
        "launcher_env": lambda ctx: env.launcher_env(),
        "comm_env": lambda ctx: env.comm_env(),
        "shm": lambda ctx: env.shm_facts(),
        "memlock": lambda ctx: env.memlock_facts(),
        "ptrace": lambda ctx: env.ptrace_facts(),
        # IP over InfiniBand: the interfaces the network probe classifies as infiniband.
        "ipoib": lambda ctx: [i["name"] for i in ctx.fact("net_interfaces") if i.get("kind") == "infiniband"],
        "backend_env": lambda ctx: env.backend_env(),
        "mpi_env": lambda ctx: _mpi().mpi_env(),
        # hang mode (commdoctor hang, run --attach, the wrapper): read only when a hang check asks
        "hang_snapshot": lambda ctx: _hang().snapshot(ctx),
        "hook_progress": lambda ctx: _hang().hook_progress(ctx),
        "flight_recorder": lambda ctx: _hang().flight_recorder(ctx),
        "hang_logs": lambda ctx: _hang().hang_logs(ctx),
        "nccl_ras": lambda ctx: _hang().nccl_ras(ctx),
        **net_providers(),
    }


def net_providers() -> dict[str, Callable[[Any], Any]]:
    from commdoctor.probes import net

    return {
        "net_budget": lambda ctx: net.Budget(ctx.options.timeout),
        "net_env": lambda ctx: net.net_env(),
        "net_interfaces": lambda ctx: net.interfaces(),
        "net_hostname": lambda ctx: net.hostname_facts(timeout=ctx.fact("net_budget").slice(5.0, keep=2.0)),
        "net_gpu": lambda ctx: net.gpu_present(),
        "net_rdzv": net.rendezvous_facts,
        "net_reach": net.reach_facts,
        "net_store": net.store_facts,
        "net_extra_port": net.extra_port_facts,
    }


def _hang() -> Any:
    from commdoctor.probes import hang_facts

    return hang_facts


def _mpi() -> Any:
    from commdoctor.probes import mpi

    return mpi
