"""How many processes a reader should scan with: the CPUs this process may use that nothing else is using.

On a busy machine a second process of ours does not get a second CPU: it shares ours (and the
scheduler groups processes by session, so it takes little from the neighbours either), while
forking it and sending its results back costs more CPU. Measured on a 2-core machine at load
average 14-19 (bench/README.md, "Round 4"): for a 1,024-file log folder one process was as fast
or faster in wall time than two, for 12-36 % less CPU; for 1,024 ranks of hooks records two
processes cost 3-29 % more CPU and were slower in four runs of six. So both readers take workers
only for spare CPUs (``--jobs`` / ``COMMDOCTOR_JOBS`` and ``COMMDOCTOR_RECORDS_WORKERS`` still decide).
"""

from __future__ import annotations

import os


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def others_running(loadavg: str | None = None) -> int | None:
    """Threads of the machine that are runnable right now, less this one (``/proc/loadavg``'s 4th field,
    "running/total"); None where that is not to be had. ``loadavg``: the file's text (for tests)."""
    try:
        if loadavg is None:
            with open("/proc/loadavg") as f:
                loadavg = f.read(200)
        return max(0, int(loadavg.split()[3].split("/")[0]) - 1)
    except (OSError, ValueError, IndexError):
        return None


def spare_cpus() -> int:
    """The usable CPUs less their share of the machine's load, rounded, at least 1.

    The load is the last minute's average, or the threads runnable right now less this one when fewer
    (the average still holds a run of ours that has just ended: run twice on an idle machine, the second
    run would see load 1 and keep to one process). It counts the whole machine, so it is taken as a
    fraction of all its CPUs. A 2-core machine at load 0.3 gives 2, at load 1 (one other busy process) 1,
    at load 16 1.
    """
    n = usable_cpus()
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):
        return n
    now = others_running()
    if now is not None:
        load = min(load, float(now))
    busy = min(1.0, max(0.0, load) / max(1, os.cpu_count() or n))
    return max(1, min(n, int(n * (1.0 - busy) + 0.5)))
