"""`commdoctor view` and `--tui` / `--no-tui` as scripts see them (no terminal), export, layering."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tuikit import FIXTURES, REPO, run_cli


def test_view_without_a_terminal_prints_the_console_rendering() -> None:
    p = run_cli("view", str(FIXTURES / "run-mixed.json"), env={"PYTHONPATH": str(REPO)})
    assert p.returncode == 4, p.stderr  # errors, but a check crashed and one timed out: incomplete (docs/cli.md)
    out = p.stdout
    assert "Verdict: ENV022 MASTER_ADDR not set while RANK/WORLD_SIZE are" in out
    assert "Incomplete: 1 check crashed (env.gpu); 1 check timed out (pg.gloo)" in out
    assert "[crash] GPUs, driver and NCCL" in out and "[timeout] Local gloo" in out
    assert "9 checks: 5 passed, 1 failed, 1 skipped, 1 crashed, 1 timed out" in out
    assert "\x1b[" not in out  # a pipe gets plain text


def test_view_json_round_trips() -> None:
    p = run_cli("view", str(FIXTURES / "logs-job.json"), "--json", env={"PYTHONPATH": str(REPO)})
    assert p.returncode == 1
    assert json.loads(p.stdout) == json.loads((FIXTURES / "logs-job.json").read_text())


def test_view_fail_on_and_healthy_exit(tmp_path: Path) -> None:
    doc = json.loads((FIXTURES / "run-mixed.json").read_text())
    for r in doc["results"]:
        r["findings"] = [f for f in r["findings"] if f["severity"] != "error"]
    doc["findings"] = [f for f in doc["findings"] if f["severity"] != "error"]
    p = tmp_path / "warn.json"
    p.write_text(json.dumps(doc))
    e = {"PYTHONPATH": str(REPO)}
    # The canned run has a crashed check: the diagnosis is incomplete, exit 4 whatever was found (docs/cli.md).
    assert run_cli("view", str(p), env=e).returncode == 4
    assert run_cli("view", str(p), "--fail-on", "warning", env=e).returncode == 4
    for r in doc["results"]:
        if r["status"] == "crashed":
            r["status"], r["error"] = "passed", ""
    p.write_text(json.dumps(doc))
    assert run_cli("view", str(p), env=e).returncode == 4  # a check still timed out
    for r in doc["results"]:
        if r["status"] == "timed_out":
            r["status"] = "passed"
    p.write_text(json.dumps(doc))
    assert run_cli("view", str(p), env=e).returncode == 0
    assert run_cli("view", str(p), "--fail-on", "warning", env=e).returncode == 1


@pytest.mark.parametrize("content,needle", [
    (None, "no such file"),
    ("not json at all", "is not a JSON report"),
    ('{"a": 1}', "not a commdoctor report"),
    ('{"schema_version": "9.0", "results": []}', "not readable by this version"),
    ('{"schema_version": "1.0", "results": [{"check": "x"}]}', "damaged or foreign report"),
    ("\x00\xff\xfe", "is not a JSON report"),
])
def test_view_bad_input_says_what_to_do(tmp_path: Path, content: str | None, needle: str) -> None:
    p = tmp_path / "r.json"
    if content is not None:
        p.write_bytes(content.encode("latin-1"))
    r = run_cli("view", str(p), env={"PYTHONPATH": str(REPO)})
    assert r.returncode == 2, r.stderr
    assert needle in r.stderr and "Traceback" not in r.stderr


def test_view_needs_something_and_tui_needs_a_terminal() -> None:
    e = {"PYTHONPATH": str(REPO)}
    r = run_cli("view", env=e)
    assert r.returncode == 2 and "give a report" in r.stderr
    r = run_cli("view", str(FIXTURES / "run-mixed.json"), "--tui", env=e)
    assert r.returncode == 2 and "--tui needs a terminal" in r.stderr
    r = run_cli("view", "--log", str(FIXTURES / "logs" / "job.log"), env=e)
    assert r.returncode == 2 and "--log needs the TUI" in r.stderr


def test_run_in_a_pipe_gets_the_console() -> None:
    r = run_cli("run", "--select", "ENV03,ENV04", env={"PYTHONPATH": str(REPO)}, timeout=120)
    assert "Verdict:" in r.stdout and "\x1b[" not in r.stdout, r.stderr


def _args(**kw: object) -> argparse.Namespace:
    from commdoctor.commands.common import add_tui_arguments

    p = argparse.ArgumentParser()
    p.add_argument("--json", action="store_true")
    add_tui_arguments(p, default=bool(kw.pop("default", False)))
    return p.parse_args([str(a) for a in kw.pop("argv", [])])  # type: ignore[union-attr]


def test_tui_wanted(monkeypatch: pytest.MonkeyPatch) -> None:
    from commdoctor.commands.common import tui_wanted
    from commdoctor.core.errors import CommDoctorError

    monkeypatch.setattr(sys.stdout, "isatty", lambda: True, raising=False)
    monkeypatch.setattr(sys.stdin, "isatty", lambda: True, raising=False)
    assert tui_wanted(_args(default=True))
    assert not tui_wanted(_args(default=False))  # e.g. logs: only when asked
    assert tui_wanted(_args(default=False, argv=["--tui"]))
    assert not tui_wanted(_args(default=True, argv=["--no-tui"]))
    assert not tui_wanted(_args(default=True, argv=["--json"]))
    monkeypatch.setattr(sys.stdout, "isatty", lambda: False, raising=False)
    assert not tui_wanted(_args(default=True))
    with pytest.raises(CommDoctorError, match="needs a terminal"):
        tui_wanted(_args(argv=["--tui"]))


def test_layering_the_tui_stays_out_of_headless_paths() -> None:
    """Model, pipeline and the TUI's pure modules import no textual; printing a report imports no textual."""
    code = (
        "import sys, io, contextlib\n"
        "import commdoctor.checks, commdoctor.pipeline.run, commdoctor.core.model\n"
        "import commdoctor.tui.state, commdoctor.tui.logindex, commdoctor.tui.export\n"
        "bad = [m for m in ('textual', 'rich') if m in sys.modules]\n"
        "assert not bad, bad\n"
        "from commdoctor.cli import main\n"
        f"with contextlib.redirect_stdout(io.StringIO()): main(['view', {str(FIXTURES / 'hang-16ranks.json')!r}])\n"
        "assert 'textual' not in sys.modules, 'view without a terminal imported textual'\n"
        "assert 'torch' not in sys.modules\n"
        "print('ok')\n"
    )
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=str(REPO),
                       env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})
    assert p.stdout.strip() == "ok", p.stderr


def test_export_writes_the_support_report_next_to_the_input(tmp_path: Path) -> None:
    from commdoctor.core.model import Report
    from commdoctor.tui import export

    rep = Report.from_dict(json.loads((FIXTURES / "hang-16ranks.json").read_text()))
    src = tmp_path / "case" / "report.json"
    src.parent.mkdir()
    paths, msg = export.export(rep, str(src), cwd=str(tmp_path))
    assert paths == [str(src.parent / f"report-support.{x}") for x in ("md", "html", "json")]
    assert "redacted" in msg and all(p in msg for p in paths)
    assert Path(paths[0]).read_text().startswith("# commdoctor report: HANG901")
    back = Report.from_dict(json.loads(Path(paths[2]).read_text()))
    assert [r.to_dict() for r in back.results] == [r.to_dict() for r in rep.results]
    # Input in a directory that is not there (or not writable): the current directory instead, said so.
    paths, msg = export.export(rep, str(tmp_path / "gone" / "x.log"), cwd=str(tmp_path))
    assert paths[0] == str(tmp_path / "x-support.md") and "not writable" in msg
    # A live run has no input: the current directory, named after the mode.
    paths, _ = export.export(rep, None, cwd=str(tmp_path))
    assert paths[0] == str(tmp_path / "commdoctor-hang-support.md")


def test_export_still_writes_json_when_rendering_fails(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A bug in the renderer must not lose the user's report; the message says it is not redacted."""
    from commdoctor.core.model import Report
    from commdoctor.render import support
    from commdoctor.tui import export

    def broken(*a: object, **k: object) -> list[str]:
        raise ValueError("a renderer bug")

    monkeypatch.setattr(support, "write_support_report", broken)
    rep = Report.from_dict(json.loads((FIXTURES / "logs-job.json").read_text()))
    paths, msg = export.export(rep, str(tmp_path / "job.log"), cwd=str(tmp_path))
    assert paths == [str(tmp_path / "job-support.json")]
    assert "ValueError: a renderer bug" in msg and "NOT redacted" in msg
    assert Report.from_dict(json.loads(Path(paths[0]).read_text())).to_dict() == rep.to_dict()


def test_fixtures_are_what_make_py_writes() -> None:
    sys.path.insert(0, str(FIXTURES))
    try:
        import make  # fixtures/tui/make.py
    finally:
        sys.path.remove(str(FIXTURES))
    for name in make.FIXTURES:
        assert (FIXTURES / name).read_text() == make.render(name), f"{name} is stale: python fixtures/tui/make.py"
