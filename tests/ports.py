"""A free TCP port for a test's job: the product's own pick (commdoctor.probes.pg_init.free_port), below the kernel's
ephemeral range, where no connection of the tests running beside it takes it as its local port before the job's
TCPStore listens (EADDRINUSE: seen once in six full runs with four workers, and again on 2026-11-30)."""

from __future__ import annotations

from commdoctor.probes.pg_init import free_port

__all__ = ["free_port"]
