"""``commdoctor run --attach`` and ``commdoctor run -- <launcher> ...``: the hang mode of ``run``.

Promise: ``add_run_arguments`` only declares options (cheap); ``wanted``
says whether ``run`` should switch to the hang mode; ``main`` either
diagnoses the job already running on this host (``--attach``) or launches the
given command with diagnosis switched on, watches it, and when no rank makes
progress for ``--hang-after`` seconds prints the verdict while the job still
runs. The job is left running for inspection unless ``--kill-on-hang``.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time
from typing import Any

from commdoctor.core.errors import CommDoctorError, ExitCode


def add_run_arguments(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("hang diagnosis (attach to a job, or launch one and watch it)")
    g.add_argument("--attach", nargs="?", const=True, default=False, metavar="MATCH",
                   help="diagnose the distributed job running on this host (its ranks found automatically); "
                        "with MATCH, the job whose command line contains it (e.g. train.py)")
    g.add_argument("--hang-after", type=float, default=300.0, metavar="S",
                   help="with a command: diagnose when no rank makes progress for S seconds (default 300)")
    g.add_argument("--kill-on-hang", action="store_true",
                   help="with a command: stop the job after printing the verdict (default: leave it running)")
    g.add_argument("--watch-dir", metavar="DIR",
                   help="with a command: where NCCL logs, flight-recorder dumps and records go "
                        "(default: a new folder under $TMPDIR)")
    g.add_argument("--no-agent", action="store_true",
                   help="with a command: do not load commdoctor's in-process helper (progress and flight-recorder "
                        "dumps then come from py-spy stacks only)")
    g.add_argument("--native", action="store_true", help="include native frames in the ranks' stacks")
    g.add_argument("--stack-timeout", type=float, default=10.0, metavar="S",
                   help="deadline for taking each rank's stack (default 10)")
    p.add_argument("launch", nargs=argparse.REMAINDER, metavar="-- COMMAND",
                   help="launch COMMAND (e.g. torchrun ... train.py) with diagnosis switched on and watch it")


def _launch(args: argparse.Namespace) -> list[str]:
    argv = list(getattr(args, "launch", None) or [])
    if argv and argv[0] == "--":
        argv = argv[1:]
    return argv


def wanted(args: argparse.Namespace) -> bool:
    return bool(getattr(args, "attach", False) or _launch(args))


def _hang_args(args: argparse.Namespace) -> argparse.Namespace:
    """The namespace commands.hang expects, from run's."""
    ns = argparse.Namespace(**vars(args))
    for name in ("stacks", "records", "fr", "logs"):
        setattr(ns, name, [])
    ns.save = None
    return ns


def main(args: argparse.Namespace) -> int:
    from commdoctor import __version__
    from commdoctor.commands.hang import hang_options, run_hang

    argv = _launch(args)
    if args.attach and argv:
        raise CommDoctorError("--attach diagnoses a job that already runs; give either --attach or a command, not both")
    if args.hang_after <= 0:
        raise CommDoctorError("--hang-after must be positive")
    hargs = _hang_args(args)
    if args.attach:
        opts = hang_options(hargs, [], attach=args.attach)
        return run_hang(hargs, opts, f"commdoctor {__version__}: diagnosing the job running on this host")
    return watch(args, hargs, argv)


class _DeferInterrupt:
    """Ctrl-C (SIGINT) while a hang is diagnosed: the first one is held until the verdict is out, so it cannot
    cut the report short or be taken for Ctrl-C before any verdict; a second one interrupts at once."""

    def __init__(self) -> None:
        self.hit = False
        self._installed = False
        self._before: Any = None

    def _handler(self, signum: int, frame: Any) -> None:
        if self.hit:
            raise KeyboardInterrupt
        self.hit = True
        _say("Ctrl-C: stopping once the verdict is out (Ctrl-C again to stop now)")

    def __enter__(self) -> "_DeferInterrupt":
        try:
            self._before = signal.signal(signal.SIGINT, self._handler)
            self._installed = True
        except (ValueError, OSError):  # not the main thread: Python's own handling stays
            pass
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._installed:
            signal.signal(signal.SIGINT, self._before)


def _say(msg: str) -> None:
    sys.stderr.write(f"commdoctor: {msg}\n")
    sys.stderr.flush()


def _failed_hint(watch_dir: str) -> str:
    """What a job that failed (rather than hung) left in the watch folder, and the command that reads it with the
    job's own output, which the wrapper leaves on the terminal untouched."""
    import glob

    def count(pattern: str) -> int:
        n = 0
        for f in glob.glob(os.path.join(watch_dir, pattern)):
            try:
                n += os.path.getsize(f) > 0
            except OSError:
                continue
        return n

    parts = [f"{n} {what}" for n, what in ((count("logs/*"), "NCCL log file(s)"),
                                            (count("fr-torch/*") + count("fr/*"), "flight-recorder dump(s)"),
                                            (count("records/*"), "hooks record(s)")) if n]
    left = f" with what it left in {watch_dir} ({', '.join(parts)})" if parts else ""
    return (f"the job failed without hanging: `commdoctor logs JOB_OUTPUT {watch_dir}` reads its console output"
            f"{left}; the output is not captured here (save it: `... 2>&1 | tee JOB_OUTPUT`)")


def _diagnose_failed(args: argparse.Namespace, hargs: argparse.Namespace, watch_dir: str) -> None:
    """The job failed without hanging: `commdoctor logs` over the watch folder (the job's copied output, NCCL's log
    files, the dumps and records it left). The exit status stays the job's own."""
    from commdoctor.commands import logs

    _say(f"the job failed without hanging: diagnosing what it wrote (commdoctor logs {watch_dir})")
    largs = argparse.Namespace(paths=[watch_dir], engine="auto", jobs=1, json=getattr(hargs, "json", False),
                               verbose=getattr(hargs, "verbose", 0), select=getattr(hargs, "select", ""),
                               ignore=getattr(hargs, "ignore", ""), fail_on=getattr(hargs, "fail_on", "error"))
    try:
        logs.main(largs)
    except CommDoctorError as e:
        _say(f"could not read the job's output: {e}")


def watch(args: argparse.Namespace, hargs: argparse.Namespace, argv: list[str]) -> int:
    from commdoctor import __version__
    from commdoctor.commands.hang import hang_options, run_hang
    from commdoctor.probes.procs import describe
    from commdoctor.probes.snapshot import snapshot_job
    from commdoctor.probes.watch import Watcher, default_watch_dir

    watch_dir = os.path.abspath(args.watch_dir or default_watch_dir())
    try:
        os.makedirs(watch_dir, exist_ok=True)
    except OSError as e:
        raise CommDoctorError(f"--watch-dir {watch_dir}: {e.strerror or e}") from None
    # A copy of the job's output for a diagnosis if it fails without hanging, taken only where neither of ours is a
    # terminal: the job then sees a pipe where it would have had a pipe or a file, never a pipe for a tty.
    try:
        plain = not (sys.stdout.isatty() or sys.stderr.isatty()) and sys.stdout.fileno() >= 0 and sys.stderr.fileno() >= 0
    except (OSError, ValueError):  # streams without a file descriptor (embedded use): the job gets ours as before
        plain = False
    capture = os.path.join(watch_dir, "job.log") if plain else None
    w = Watcher(argv, watch_dir, args.hang_after, agent=not args.no_agent,
                stdout=sys.stderr.fileno() if args.json else None, stack_timeout=min(5.0, args.stack_timeout),
                capture=capture)
    try:
        proc = w.start()
    except OSError as e:
        raise CommDoctorError(f"cannot start {argv[0]!r}: {e.strerror or e}") from None
    _say(f"started {' '.join(argv)} (pid {proc.pid}); diagnosis files in {watch_dir}")
    _say("set for the job: " + ", ".join(f"{k}" for k in w.env_set) if w.env_set else "no variables set")
    _say(f"a hang is called after {args.hang_after:g} s without progress")
    diagnosed_error = stuck = False
    from commdoctor.render.progress import Progress

    # While no rank makes progress, a line counts the seconds up to --hang-after (a terminal only, never
    # with --json or in a pipe). The job writes to the same terminal: the line is drawn only once the
    # job has been still for a while, and taken away the moment it moves again.
    meter = Progress(max(1, int(args.hang_after)), "no progress from the job",
                     enabled=not args.json and sys.stderr.isatty())
    meter.unit = " s"
    quiet_s = min(5.0, args.hang_after / 3)

    def on_sample(kind: str | None, still_s: float) -> None:
        if still_s < quiet_s:
            meter.clear()
            meter.done = 0
            return
        meter.update(int(still_s), label=f"no progress from the job ({kind or 'stacks'})")

    try:
        while True:
            try:
                stall = w.wait_for_stall(on_sample=on_sample)
            finally:
                meter.clear()
            if stall is None:
                rc = proc.returncode if proc.returncode is not None else proc.wait()
                _say(f"the job ended with exit status {rc}")
                if rc != 0 and not diagnosed_error:
                    w.drain()
                    if capture and os.path.isfile(capture) and os.path.getsize(capture) > 0:
                        _diagnose_failed(args, hargs, watch_dir)
                    else:
                        _say(_failed_hint(watch_dir))
                if diagnosed_error:
                    return ExitCode.FINDINGS
                return rc if rc >= 0 else 128 - rc
            with _DeferInterrupt() as deferred:  # from here the job is known to be stuck
                stuck = True
                pids = stall.pids
                _say(f"no progress for {stall.stalled_s:.0f} s (measured by {stall.signal}); diagnosing "
                     f"{len(pids)} rank(s), pids {' '.join(map(str, pids))}")
                t0 = time.monotonic()
                job, notes = describe(pids)
                snap = snapshot_job(job, timeout=args.stack_timeout, native=args.native, notes=notes)
                if not args.no_agent:
                    got = w.request_fr_dumps(len([v for v in snap.ranks.values() if not v.dead]))
                    if got:
                        notes.append(f"flight-recorder dumps from {got} rank(s)")
                opts = hang_options(hargs, pids, attach=False, extra={
                    "snapshot": snap, "watch_dir": watch_dir,
                    "fr": [os.path.join(watch_dir, "fr"), os.path.join(watch_dir, "fr-torch")],
                })
                heading = (f"commdoctor {__version__}: no progress for {stall.stalled_s:.0f} s — "
                           f"diagnosing the hang while the job still runs")
                rc = run_hang(hargs, opts, heading)
            _say(f"diagnosis took {time.monotonic() - t0:.1f} s")
            if rc == ExitCode.FINDINGS:
                diagnosed_error = True
            if deferred.hit:
                # Ctrl-C while the verdict was being made or printed: the job was found stuck, so it is left
                # running for inspection, as after a verdict (never Ctrl-C passed on to a job under diagnosis).
                _say(f"stopped watching; the job keeps running (pid {proc.pid})")
                return ExitCode.FINDINGS if diagnosed_error else ExitCode.INTERRUPTED
            if rc == ExitCode.FINDINGS:
                if args.kill_on_hang:
                    _say("stopping the job (--kill-on-hang)")
                    w.kill()
                    return ExitCode.FINDINGS
                _say(f"the job is left running for inspection (pid {proc.pid}; ranks {' '.join(map(str, pids))}); "
                     f"Ctrl-C stops watching and leaves it running")
                end = proc.wait()
                _say(f"the job ended with exit status {end}")
                return ExitCode.FINDINGS
            stuck = False  # nobody waits in communication: the job is watched as before
            _say("no rank waits in communication: watching on")
    except KeyboardInterrupt:
        if diagnosed_error or stuck:  # a stuck job stays for inspection, whatever the diagnosis got to
            _say(f"stopped watching; the job keeps running (pid {proc.pid})")
            return ExitCode.FINDINGS if diagnosed_error else ExitCode.INTERRUPTED
        _say("interrupted: passing Ctrl-C to the job")
        w.interrupt()
        return ExitCode.INTERRUPTED
