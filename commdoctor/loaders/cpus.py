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


def spare_cpus() -> int:
    """The usable CPUs less their share of the machine's load (the last minute's average), rounded, at least 1.

    A 2-core machine at load 0.3 gives 2, at load 1 (one other busy process) 1, at load 16 1.
    The load average counts the whole machine, so it is taken as a fraction of all its CPUs.
    """
    n = usable_cpus()
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):
        return n
    busy = min(1.0, max(0.0, load) / max(1, os.cpu_count() or n))
    return max(1, min(n, int(n * (1.0 - busy) + 0.5)))
