"""``commdoctor report``: a redacted report (Markdown + HTML) and bundle to attach to a support ticket.

Two sources: by default it runs the same live checks as ``commdoctor run`` and
collects this host's environment; with ``--from report.json`` it renders a
saved ``--json`` report of any mode (run, logs, hang, ...) instead. Raw
material given by path (--logs, --records, --stacks, --fr, --cmdline) is
included as bounded, redacted excerpts. Secrets are always redacted;
--anonymize also replaces hostnames, addresses and user names by aliases.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
from typing import Any

from commdoctor.core.errors import CommDoctorError, ExitCode


def add_arguments(p: argparse.ArgumentParser) -> None:
    from commdoctor.commands import run as run_cmd

    src = p.add_argument_group("what to report")
    src.add_argument("--from", dest="from_", metavar="REPORT.json",
                     help="render a saved `commdoctor ... --json` report instead of running the live checks")
    src.add_argument("--no-checks", action="store_true",
                     help="do not run the live checks (environment and the given material only)")
    src.add_argument("--system", action=argparse.BooleanOptionalAction, default=None,
                     help="collect this host's environment (default: yes for live reports, no with --from)")
    src.add_argument("--all-env", action="store_true",
                     help="include every environment variable (redacted), not only those that steer communication")
    src.add_argument("--logs", nargs="+", default=[], metavar="PATH", help="log files or folders (.gz too) to excerpt")
    src.add_argument("--records", nargs="+", default=[], metavar="PATH", help="hook progress records (files or folders)")
    src.add_argument("--stacks", nargs="+", default=[], metavar="PATH", help="saved stack dumps (files or folders)")
    src.add_argument("--fr", nargs="+", default=[], metavar="DUMP", help="flight-recorder dumps (pickle or JSON)")
    src.add_argument("--cmdline", action="append", default=[], metavar="TEXT",
                     help="the command line that started the job (repeatable); it is redacted like everything else")
    out = p.add_argument_group("where to write")
    out.add_argument("-o", "--output", metavar="BASE",
                     help="write BASE.md and BASE.html (default: commdoctor-report; not written with --json unless given)")
    out.add_argument("--md", metavar="FILE", help="write the Markdown report here")
    out.add_argument("--html", metavar="FILE", help="write the HTML report here")
    out.add_argument("--bundle", metavar="OUT.tar.gz", help="also write a bundle with the raw material, redacted")
    out.add_argument("--anonymize", action="store_true",
                     help="replace hostnames, IP/MAC addresses and user names by stable aliases (node-01, 10.0.0.1, user-01)")
    run_cmd.add_arguments(p)


def _load(path: str) -> Any:
    from commdoctor.loaders.docschema import load_report

    try:
        report, problems = load_report(path)  # one way in: size cap, bounded FIFO wait, typed item by item
    except OSError as e:
        raise CommDoctorError(f"cannot read {path}: {e.strerror or e}; give a file written by `commdoctor ... --json`")
    except json.JSONDecodeError as e:
        raise CommDoctorError(f"{path} is not JSON ({e}); give a file written by `commdoctor ... --json`")
    except ValueError as e:
        raise CommDoctorError(f"{path} is not a commdoctor report ({e}); give a file written by `commdoctor ... --json`")
    for p in problems[:50]:
        sys.stderr.write(f"commdoctor: {path}: {p}\n")
    return report


def _redacted_env(providers: dict[str, Any]) -> dict[str, Any]:
    """The environment facts with their secrets removed before any check quotes them in a finding.

    A check composes titles and remedies from values (ENV024 prints MASTER_ADDR without its
    ``scheme://``); redacting the report afterwards cannot always recognise a secret once
    it has been cut out of its shape, so the checks of a report never see it.
    """
    from commdoctor.render.redact import Redactor

    red = Redactor()
    out = dict(providers)
    for name, fn in providers.items():
        if name.endswith("_env"):
            def wrapped(ctx: Any, fn: Any = fn) -> Any:
                value = fn(ctx)
                return red.env_mapping(value) if isinstance(value, dict) else value
            out[name] = wrapped
    return out


def _live(args: argparse.Namespace, system_box: dict[str, Any]) -> Any:
    from commdoctor import __version__
    from commdoctor.checks import BUILTIN_CHECKS
    from commdoctor.commands.common import argv_of
    from commdoctor.commands.run import options_from
    from commdoctor.pipeline.run import CheckFinished, Context, Facts, RunFinished, plan, run_checks
    from commdoctor.probes import live_providers

    opts = options_from(args)
    checks = [] if args.no_checks else plan([c() for c in BUILTIN_CHECKS], opts)
    ctx = Context(options=opts, facts=Facts(_redacted_env(live_providers())))
    sys.stderr.write(f"commdoctor {__version__}: {len(checks)} checks and the environment of this host\n")
    report = None
    for ev in run_checks(checks, ctx, argv_of(args)):
        if isinstance(ev, CheckFinished):
            sys.stderr.write(f"commdoctor: {ev.result.check}: {ev.result.status.value.replace('_', ' ')}\n")
        elif isinstance(ev, RunFinished):
            report = ev.report
    return report


def main(args: argparse.Namespace) -> int:
    from commdoctor.commands.common import exit_code
    from commdoctor.core.model import Severity
    from commdoctor.render import bundle as B
    from commdoctor.render.report import render
    from commdoctor.render.support import prepare

    if args.from_ and args.no_checks:
        raise CommDoctorError("--no-checks is for live reports; --from already names what to show")
    _check_outputs(args)
    want_system = args.system if args.system is not None else not args.from_
    system_box: dict[str, Any] = {}
    worker = None
    if want_system:
        from commdoctor.probes import sysinfo

        def collect() -> None:
            system_box["v"] = sysinfo.collect(timeout=max(30.0, args.timeout * 4), all_env=args.all_env)

        # The environment is collected while the checks run: both wait on child processes.
        worker = threading.Thread(target=collect, name="sysinfo", daemon=True)
        worker.start()
    report = _load(args.from_) if args.from_ else _live(args, system_box)
    if worker is not None:
        worker.join(300)
    system = system_box.get("v")
    if want_system and system is None:
        system = {"schema": "commdoctor.sysinfo/1", "sections": {}, "error": "collecting the environment did not finish"}
    if system is None and isinstance(report.environment.get("system"), dict):
        system = report.environment["system"]  # a report made by `commdoctor report --json`

    from commdoctor.render.progress import progress

    # A meter on stderr while the material is read (big logs are read whole): a terminal only, not with --json.
    show = not args.json and sys.stderr.isatty()
    total = B.material_bytes(args.logs, args.records, args.stacks, args.fr) if show else None
    with progress(total or None, "reading the report's material (bytes)", enabled=show) as meter:
        material, red, report_json = prepare(report, system, logs=args.logs, records=args.records,
                                             stacks=args.stacks, fr=args.fr, cmdlines=args.cmdline,
                                             anonymize=args.anonymize, on_bytes=meter.advance)
    model = material.report

    md_path, html_path = args.md, args.html
    if args.output or not (args.json or md_path or html_path or args.bundle):
        base = args.output or "commdoctor-report"
        md_path = md_path or base + ".md"
        html_path = html_path or base + ".html"

    failed: list[str] = []
    spare: dict[str, str] = {}  # one folder for everything that could not be written where asked
    if args.bundle:
        # Two passes: the bundle's own file list appears in the report it contains.
        md, html_text = render(material)
        files = B.bundle_files(material, md, html_text, report_json)
        own = ("report.md", "report.html", "report.json", "README.md")  # sizes not known before they are written
        material.attachments = sorted((n.split("/", 1)[1], -1 if n.split("/", 1)[1] in own else len(b))
                                      for n, b in files.items())
        md, html_text = render(material)
        files = B.bundle_files(material, md, html_text, report_json)
        try:
            size = B.write_bundle(args.bundle, files, B.epoch_of(model.created))
            sys.stderr.write(f"commdoctor: wrote {args.bundle} ({size} bytes, {len(files)} files)\n")
        except OSError as e:
            failed.append(_fallback(args.bundle, e, lambda p: B.write_bundle(p, files, B.epoch_of(model.created)), spare))
    else:
        md, html_text = render(material)
    for path, text in ((md_path, md), (html_path, html_text)):
        if path:
            try:
                _write_text(path, text)
                sys.stderr.write(f"commdoctor: wrote {path}\n")
            except OSError as e:
                failed.append(_fallback(path, e, lambda p, t=text: _write_text(p, t), spare))
    r = material.redaction
    sys.stderr.write(f"commdoctor: redacted {r['total']} secret{'s' if r['total'] != 1 else ''}"
                     + (" and anonymized hosts, addresses and users" if args.anonymize else "") + "\n")
    if args.json:
        sys.stdout.write(report_json)
        sys.stdout.flush()
    if failed:
        # The report is safe elsewhere, but not where it was asked for: a script must notice.
        return ExitCode.USAGE
    return exit_code(model, Severity(args.fail_on))


def _check_outputs(args: argparse.Namespace) -> None:
    """Refuse, before any check runs, an output whose folder does not exist or is not a folder.

    Nothing is created: a mistyped ``-o /nonexsitent/dir/r`` used to create
    ``/nonexsitent``. Checking first means nothing collected is lost to a typo.
    """
    paths = [p for p in (args.md, args.html, args.bundle) if p]
    if args.output:
        paths.append(args.output + ".md")
    for p in paths:
        d = os.path.dirname(os.path.abspath(p))
        if not os.path.isdir(d):
            what = "is not a folder" if os.path.exists(d) else "does not exist"
            raise CommDoctorError(f"cannot write {p}: the folder {d} {what} (create it first, or give another path)")
        if os.path.isdir(p):
            raise CommDoctorError(f"cannot write {p}: it is a folder (give a file name, e.g. {os.path.join(p, 'report')})")


def _write_text(path: str, text: str) -> None:
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.write(text)


def _fallback(path: str, err: OSError, write: Any, spare: dict[str, str]) -> str:
    """Write what could not go to ``path`` into a private folder under the temp dir, and say where."""
    import tempfile

    d = spare.get("dir") or spare.setdefault("dir", tempfile.mkdtemp(prefix="commdoctor-report-"))
    alt = os.path.join(d, os.path.basename(path) or "report")
    try:
        write(alt)
    except OSError as e2:
        sys.stderr.write(f"commdoctor: could not write {path} ({err.strerror or err}) nor {alt} ({e2.strerror or e2})\n")
        return path
    sys.stderr.write(f"commdoctor: could not write {path} ({err.strerror or err}); wrote {alt} instead\n")
    return alt
