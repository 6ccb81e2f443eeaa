"""Layers point one way: the import contracts of every package, read from the source and checked live.

Two views of each contract, because each misses what the other sees:
- the source (every ``import``, ``from ... import`` and ``importlib.import_module("literal")`` in a
  package, at module level or inside a function), which catches the lazy import on a rare path;
- a fresh interpreter that imports every module of the package and lists ``sys.modules``, which
  catches what the package pulls in through the modules it imports.

The contracts (docs/architecture.md, issue 16 item 5):
- model, checks, rules, pipeline, hooks, loaders, parsing, probes and records never import rich or
  textual (the console and the TUI are sinks; everything upstream of them runs headless);
- loaders never import the diagnosis, checks or the rules engine (facts flow loaders -> checks, never
  back; the rule tables are data the log scanner reads);
- the hooks, which run inside the training job, import only the standard library, torch (and
  typing_extensions, which torch itself requires), their own package, and the stdlib-only leaf
  modules every layer shares (the package root, ``errors``, ``records``: the record format the hooks
  write and the loaders read);
- the offline commands (logs, hang --fr/--stacks, view, report --from, explain, checks) never import torch.

A contract the code breaks is marked, alone, as a strict expected failure naming its issue, so the day the
code is fixed the marker must go. None is marked today.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path
from typing import Callable

import pytest

from tests.conftest import REPO

PKG = REPO / "commdoctor"
UI = {"rich", "textual"}
#: Layers that run headless, upstream of the console and the TUI.
HEADLESS = ["core", "core/model", "facts", "checks", "rules", "pipeline", "hooks", "loaders", "parsing", "probes", "core/records"]
#: The diagnosis: what loaders feed, never what they import. (The rule tables in commdoctor.rules.* are
#: data, what each rule matches, and the log scanner reads them; the engine that weighs them is diagnosis.)
DIAGNOSIS = ("commdoctor.checks", "commdoctor.rules.engine")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


#: Stdlib-only modules that every layer may import (checked below to stay stdlib-only).
LEAVES = {"commdoctor", "commdoctor.core.errors", "commdoctor.core.model", "commdoctor.core.records", "commdoctor.core.safeopen",
          *(module_name(p) for p in sorted((REPO / "commdoctor" / "core").glob("*.py")))}


def module_file(name: str) -> Path:
    """The source file of a module of the package, by its dotted name."""
    path = REPO.joinpath(*name.split("."))
    return path / "__init__.py" if path.is_dir() else path.with_suffix(".py")


def layer_files(layer: str) -> list[Path]:
    """The source files of a layer: a package's every module, or a single top-level module."""
    d = PKG / layer
    return sorted(d.rglob("*.py")) if d.is_dir() else [PKG / f"{layer}.py"]


def imports_in(path: Path) -> list[tuple[int, str]]:
    """(line, absolute module name) of every import in PATH, wherever in the file it is."""
    mod = module_name(path)
    package = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                name = ".".join(base + ([node.module] if node.module else []))
            else:
                name = node.module or ""
            # "from commdoctor.checks import base" imports the module commdoctor.checks.base
            found += [(node.lineno, f"{name}.{a.name}" if f"{name}.{a.name}" in ALL_MODULES else name) for a in node.names]
        elif (isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant)
              and isinstance(node.args[0].value, str)
              and (getattr(node.func, "attr", None) or getattr(node.func, "id", None)) in ("import_module", "__import__")):
            found.append((node.lineno, node.args[0].value))
    return found


ALL_MODULES = {module_name(p) for p in PKG.rglob("*.py")}


def violations(layer: str, allowed: Callable[[str], bool]) -> list[str]:
    """Every import in LAYER's source for which ALLOWED(name) is false, as 'file:line name'."""
    bad = []
    for f in layer_files(layer):
        for line, name in imports_in(f):
            if not allowed(name):
                bad.append(f"{f.relative_to(REPO)}:{line} imports {name}")
    return bad


def is_stdlib(name: str) -> bool:
    return name.split(".")[0] in sys.stdlib_module_names or name == "__future__"


def loaded_after(code: str) -> set[str]:
    """Every module in sys.modules after running CODE in a fresh interpreter."""
    prog = code + "\nimport sys, json\nprint(json.dumps(sorted(sys.modules)))"
    p = subprocess.run([sys.executable, "-c", prog], capture_output=True, text=True, timeout=120, cwd=str(REPO))
    assert p.returncode == 0, p.stderr[-3000:]
    return set(json.loads(p.stdout.strip().splitlines()[-1]))


def tops(mods: set[str]) -> set[str]:
    return {m.split(".")[0] for m in mods}


def import_every_module(layer: str) -> str:
    names = [module_name(f) for f in layer_files(layer) if f.name != "__main__.py"]  # __main__ runs a program
    return "\n".join(f"import {n}" for n in names)


# -- headless layers never import the UI libraries ---------------------------------------------------

@pytest.mark.parametrize("layer", HEADLESS)
def test_headless_layers_name_no_ui_library_in_their_source(layer: str) -> None:
    assert violations(layer, lambda n: n.split(".")[0] not in UI) == []


@pytest.mark.parametrize("layer", HEADLESS)
def test_headless_layers_pull_in_no_ui_library(layer: str) -> None:
    loaded = tops(loaded_after(import_every_module(layer)))
    assert not loaded & UI, f"importing commdoctor.{layer} loaded {sorted(loaded & UI)}"


@pytest.mark.parametrize("module", ["commdoctor.core.model", "commdoctor.checks", "commdoctor.pipeline.run", "commdoctor.core.records",
                                    "commdoctor.core.errors", "commdoctor.cli", "commdoctor.loaders", "commdoctor.parsing",
                                    "commdoctor.facts"])
def test_core_modules_import_neither_torch_nor_rich_nor_textual(module: str) -> None:
    top = tops(loaded_after(f"import {module}"))
    assert not top & {"torch", *UI}, f"{module} pulled in {sorted(top & {'torch', *UI})}"


# -- loaders never import checks ----------------------------------------------------------------------

@pytest.mark.parametrize("path", layer_files("loaders"), ids=lambda p: p.name)
def test_loaders_never_import_the_diagnosis(path: Path) -> None:
    bad = [f"{path.name}:{line} imports {n}" for line, n in imports_in(path)
           if any(n == d or n.startswith(d + ".") for d in DIAGNOSIS)]
    assert bad == []


def test_importing_every_loader_loads_no_diagnosis() -> None:
    loaded = loaded_after(import_every_module("loaders"))
    assert not {m for m in loaded if any(m == d or m.startswith(d + ".") for d in DIAGNOSIS)}


# -- the hooks: stdlib, torch, their own package, the shared leaves --------------------------------------

def hooks_may_import(name: str) -> bool:
    return (is_stdlib(name) or name.split(".")[0] == "torch"
            or name == "typing_extensions"  # torch's own dependency; callsite.py reads its file name only
            or name == "commdoctor.hooks" or name.startswith("commdoctor.hooks.") or name in LEAVES)


@pytest.mark.parametrize("path", layer_files("hooks"), ids=lambda p: p.name)
def test_hooks_import_only_stdlib_torch_and_their_own_package(path: Path) -> None:
    bad = [f"{path.name}:{line} imports {n}" for line, n in imports_in(path) if not hooks_may_import(n)]
    assert bad == []


def test_the_shared_leaves_import_only_the_standard_library() -> None:
    """Each leaf imports the standard library and other leaves only, so all of them stay stdlib-only."""
    for leaf in sorted(LEAVES):
        f = module_file(leaf)
        bad = [f"{f.name}:{line} imports {n}" for line, n in imports_in(f) if not is_stdlib(n) and n not in LEAVES]
        assert bad == [], leaf


def test_importing_the_hooks_adds_nothing_but_torch_and_their_own_modules() -> None:
    """What every hooks module loads, beyond what ``import torch`` loads by itself."""
    # One fresh interpreter imports torch once: the modules it holds after torch alone, then after the hooks too.
    snap = "import sys, json\nprint(json.dumps(sorted(sys.modules)), flush=True)\n"
    prog = "import torch, torch.distributed\n" + snap + import_every_module("hooks") + "\n" + snap
    p = subprocess.run([sys.executable, "-c", prog], capture_output=True, text=True, timeout=120, cwd=str(REPO))
    assert p.returncode == 0, p.stderr[-3000:]
    with_torch, with_hooks = (set(json.loads(line)) for line in p.stdout.strip().splitlines()[-2:])
    assert with_torch < with_hooks and {"commdoctor.hooks", "torch.distributed"} <= with_hooks
    extra = {m for m in with_hooks - with_torch if not is_stdlib(m)}
    assert {m for m in extra if not hooks_may_import(m)} == set()


# -- offline commands never import torch ---------------------------------------------------------------

FIX = REPO / "fixtures"
OFFLINE = {
    "version": ["--version"],
    "checks": ["checks"],
    "checks-json": ["checks", "--json"],
    "explain": ["explain", "ENV030"],
    "logs": ["logs", str(FIX / "logs" / "gloo-rank-killed" / "torchrun.log")],
    "logs-json": ["logs", "--json", str(FIX / "logs" / "gloo-rank-killed" / "torchrun.log")],
    "hang-fr": ["hang", "--json", "--fr", str(FIX / "hang" / "straggler" / "fr")],
    "hang-stacks": ["hang", "--json", "--stacks", str(FIX / "tui" / "hang-16ranks.json")],
    "view": ["view", str(FIX / "tui" / "run-mixed.json")],  # no terminal: prints the console rendering
    "report-from": ["report", "--from", str(FIX / "tui" / "logs-job.json"), "--output", "{tmp}/report"],
}


@pytest.mark.parametrize("name", sorted(OFFLINE))
def test_offline_commands_run_without_torch(name: str, tmp_path: Path) -> None:
    argv = [a.replace("{tmp}", str(tmp_path)) for a in OFFLINE[name]]
    mods = loaded_after(
        "import io, contextlib\nfrom commdoctor.cli import main\n"
        "out, err = io.StringIO(), io.StringIO()\n"
        f"with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):\n    rc = main({argv!r})\n"
        "assert rc in (0, 1, 4), (rc, out.getvalue()[-2000:], err.getvalue()[-2000:])  # 1: findings; 4: the saved run had a crashed check\n"
        "assert 'Traceback' not in err.getvalue(), err.getvalue()[-2000:]"
    )
    assert "torch" not in tops(mods), f"commdoctor {' '.join(argv)} imported torch"
    if name != "view":
        assert "textual" not in tops(mods)


def test_every_rule_template_formats() -> None:
    from commdoctor.checks import BUILTIN_CHECKS
    from commdoctor.checks.base import fill

    for c in BUILTIN_CHECKS:
        doc = c.documentation()
        assert doc.get("What it checks") and doc.get("Why it matters") and doc.get("Known limits"), c.name
        for r in c.rules:
            for t in (r.title, r.remedy, *r.steps, *r.env.values()):
                fill(t, {})  # raises on malformed braces
