"""No import cycle among commdoctor's modules (issue 16 item 5: layers you can see and that hold).

Read from the source with ast, as tests/test_layering.py does. The graph has an edge A -> B for every
import of B in A, wherever it is: at module level, inside a function (a lazy import still makes A need
B), under ``if TYPE_CHECKING:`` (A's types still name B's) and ``importlib.import_module("literal")``.
Importing ``a.b.c`` also runs ``a/__init__`` and ``a/b/__init__``, so those are edges too, except to the
importing module's own packages, which have started already (a name taken from them is an edge). A
cycle is two layers that each need the other: the pipeline and the checks it runs, the multi-node run
and the checks that judge it, the TUI's app and its screens were three (DESIGN.md).
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.conftest import REPO

PKG = REPO / "commdoctor"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in PKG.rglob("*.py")}


def _with_parents(name: str) -> list[str]:
    parts = name.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts) + 1)]


def module_imports(name: str) -> set[str]:
    """The commdoctor modules NAME imports, anywhere in its source (see the module docstring)."""
    path = MODULES[name]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    # Its own packages are already importing when it runs (they start first): an implicit edge to them is no
    # cycle, only a name taken from them is.
    own = set(_with_parents(name))
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join(up + ([node.module] if node.module else []))
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base for a in node.names]
        elif (isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant)
              and isinstance(node.args[0].value, str)
              and (getattr(node.func, "attr", None) or getattr(node.func, "id", None)) in ("import_module", "__import__")):
            targets = [node.args[0].value]
        for t in targets:
            found |= {m for m in _with_parents(t) if m in MODULES and m not in own}
            if t in own and t != name:
                found.add(t)  # named outright: it needs its own package's names, half-built or not
    return found


def find_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every strongly connected component with more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        # Iterative enough for a package of a few hundred modules; recursion depth is the import depth.
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_the_cycle_finder_finds_a_cycle_and_passes_a_chain() -> None:
    assert find_cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert find_cycles({"a": {"b"}, "b": {"c"}, "c": set()}) == []


def test_lazy_and_type_checking_imports_are_edges_and_own_packages_are_not() -> None:
    # checks/base imports the model at module level and names nothing of the pipeline any more; the
    # pipeline imports checks.base, whose package (commdoctor.checks) runs first: an edge to it too.
    assert "commdoctor.core.model" in module_imports("commdoctor.checks.base")
    pipe = module_imports("commdoctor.pipeline.run")
    assert {"commdoctor.checks.base", "commdoctor.checks"} <= pipe
    # checks/__init__ imports its check modules inside a function: still edges.
    assert "commdoctor.checks.logs" in module_imports("commdoctor.checks")
    # a module's own package is no edge unless a name is taken from it
    assert "commdoctor.checks" not in module_imports("commdoctor.checks.base")


def test_no_import_cycle_among_commdoctors_modules() -> None:
    graph = {m: module_imports(m) for m in MODULES}
    assert find_cycles(graph) == []
