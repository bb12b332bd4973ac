"""No import cycle of any kind between the modules of src/ctxeval.

import-linter checks the layers of packages, but it cannot see a cycle between two modules of
one stage, nor one hidden under ``if TYPE_CHECKING:`` or inside a function. This test builds
the graph of imports from the source with :mod:`ast`: every ``import`` and ``from ... import``
anywhere in a module (top level, under ``if TYPE_CHECKING:``, inside functions), with
``from pkg import name`` resolved to the submodule ``pkg.name`` when that file exists (else to
``pkg``), and ``import a.b.c`` to ``a.b.c``; relative imports are resolved too. Imports
by a name computed at run time (``importlib.import_module``) are not edges: they are declared
one by one in test_architecture.py. A package's ``__init__.py`` is the module ``pkg``.

Two kinds of edge are left out, because they are re-exports, not stages importing each other:

- edges out of ``ctxeval/__init__.py``: the root's lazy (PEP 562) re-exports of the public API;
- edges from a package's ``__init__`` to its own submodules (``pkg`` -> ``pkg.sub``).

The graph must then be a strict DAG: no two modules reach each other by any path of imports.
A second check puts the root's edges back (its imports and the modules its lazy ``_LAZY`` table
names), so that no module the root re-exports imports the root package in turn (the HTML report
reads ctxeval's version from the distribution's metadata, not from ``ctxeval.__version__``).
"""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"
ROOT = "ctxeval"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted((SRC / ROOT).rglob("*.py"))}


def _imported(tree: ast.AST, name: str, is_package: bool, known: set[str]) -> set[str]:
    """The ctxeval modules a module's source imports, wherever the import statement is."""
    package = name if is_package else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: resolve against the importing module's package
                base_parts = package.split(".")
                base_parts = base_parts[: len(base_parts) - (node.level - 1)]
                base = ".".join(base_parts + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                # ``from pkg import sub`` imports the submodule; ``from pkg import name``, pkg.
                found.add(sub if sub in known else base)
    edges = set()
    for target in found:
        # ``import a.b.c`` imports a.b.c; keep the longest ctxeval module it names.
        while target and target not in known:
            target = target.rpartition(".")[0]
        if target and target != name:
            edges.add(target)
    return edges


def _lazy_targets(tree: ast.AST, known: set[str]) -> set[str]:
    """The modules named by the string values of the root's ``_LAZY`` table."""
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Assign | ast.AnnAssign)
            and isinstance(node.value, ast.Dict)
            and any(
                isinstance(t, ast.Name) and t.id == "_LAZY"
                for t in (node.targets if isinstance(node, ast.Assign) else [node.target])
            )
        ):
            values = [v.value for v in node.value.values if isinstance(v, ast.Constant)]
            return {v for v in values if isinstance(v, str) and v in known}
    return set()


def import_graph(*, root_edges: bool = False) -> dict[str, set[str]]:
    """Module -> the ctxeval modules it imports, less the re-export edges (module docstring);
    ``root_edges=True`` keeps the root's edges, lazy ones included."""
    modules = _modules()
    known = set(modules)
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        if name == ROOT:
            graph[name] = _imported(tree, name, True, known) | _lazy_targets(tree, known)
            if not root_edges:
                graph[name] = set()
            continue
        is_package = path.name == "__init__.py"
        targets = _imported(tree, name, is_package, known)
        if is_package:
            targets = {t for t in targets if not t.startswith(name + ".")}
        graph[name] = targets
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of ``graph`` as a chain ``[a, b, ..., a]``, or None if the graph is a DAG."""
    white, grey, black = 0, 1, 2
    colour = dict.fromkeys(graph, white)
    for start in sorted(graph):
        if colour[start] != white:
            continue
        colour[start] = grey
        path = [start]
        stack = [iter(sorted(graph[start]))]
        while stack:
            nxt = next(stack[-1], None)
            if nxt is None:
                colour[path.pop()] = black
                stack.pop()
                continue
            state = colour.get(nxt, black)  # a target outside the graph ends no cycle
            if state == grey:
                return [*path[path.index(nxt) :], nxt]
            if state == white:
                colour[nxt] = grey
                path.append(nxt)
                stack.append(iter(sorted(graph.get(nxt, ()))))
    return None


def test_no_import_cycle() -> None:
    graph = import_graph()
    assert "ctxeval.results.result" in graph  # the graph is really built from the source
    assert any(graph.values())
    cycle = find_cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_no_module_the_root_re_exports_imports_the_root() -> None:
    graph = import_graph(root_edges=True)
    assert {"ctxeval.evaluator", "ctxeval.comparison"} <= graph[ROOT]  # lazy edges are seen
    cycle = find_cycle(graph)
    assert cycle is None, "import cycle through the root package: " + " -> ".join(cycle or [])


def test_the_report_shows_the_package_version() -> None:
    import ctxeval
    from ctxeval.report.page import ctxeval_version, page

    assert ctxeval_version() == ctxeval.__version__
    assert f"ctxeval {ctxeval.__version__}</p>" in page("t", "s", "")


def test_the_cycle_finder_finds_a_cycle() -> None:
    # The check above can fail: a made-up graph with a cycle behind an acyclic part.
    graph = {"a": {"b"}, "b": {"c", "d"}, "c": set(), "d": {"e"}, "e": {"b"}}
    assert find_cycle(graph) == ["b", "d", "e", "b"]
    assert find_cycle({"a": {"a"}}) == ["a", "a"]
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None


def test_imports_anywhere_are_edges(tmp_path: Path) -> None:
    # Imports under TYPE_CHECKING, in functions, relative, and of submodules are all seen.
    source = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from ctxeval.x import y\n"
        "def f():\n    from . import z\n    import ctxeval.w.v\n"
        "import importlib\nimportlib.import_module('ctxeval.q')\n"
    )
    known = {"ctxeval.x", "ctxeval.x.y", "ctxeval.p", "ctxeval.p.z", "ctxeval.w", "ctxeval.q"}
    known |= {"ctxeval.p.m"}
    edges = _imported(ast.parse(source), "ctxeval.p.m", False, known)
    assert edges == {"ctxeval.x.y", "ctxeval.p.z", "ctxeval.w"}
