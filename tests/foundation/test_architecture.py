"""The house rules of docs/architecture.md that import-linter does not check.

- no module imports another module's private (``_underscored``) names, nor reaches into an
  imported ctxeval module's private attributes;
- every measure in the registry has its two definitions, and nothing else defines one.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from ctxeval.metrics import core, reference
from ctxeval.metrics.measures import MEASURES
from ctxeval.metrics.spans import core as span_core
from ctxeval.metrics.spans import reference as span_reference

SRC = Path(__file__).resolve().parents[2] / "src" / "ctxeval"
FILES = sorted(SRC.rglob("*.py"))


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(SRC)))
def test_no_private_names_across_modules(path: Path) -> None:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    modules: set[str] = set()  # local names bound to ctxeval modules
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("ctxeval"):
            for alias in node.names:
                if _private(alias.name):
                    found.append(f"line {node.lineno}: from {node.module} import {alias.name}")
                modules.add(alias.asname or alias.name)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("ctxeval"):
                    modules.add((alias.asname or alias.name).split(".")[0])
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and _private(node.attr)
            and isinstance(node.value, ast.Name)
            and node.value.id in modules
        ):
            found.append(f"line {node.lineno}: {node.value.id}.{node.attr}")
    assert not found, found


def test_a_private_import_is_caught(tmp_path: Path) -> None:
    # The check above can fail: it sees both forms of reaching in.
    sample = "from ctxeval.io import readers\nfrom ctxeval.x import _y\nreaders._open(1)\n"
    tree = ast.parse(sample)
    names = [a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) for a in n.names]
    attrs = [n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)]
    assert [n for n in names if _private(n)] == ["_y"]
    assert [a for a in attrs if _private(a)] == ["_open"]


def test_each_measure_is_defined_in_the_reference_and_the_core_only() -> None:
    # Span measures have their own pair of modules: they are functions of spans, not judgments.
    pairs = {"span": (span_reference, span_core.SPAN_CORE)}
    for name, definition in MEASURES.items():
        ref_module, cores = pairs.get(definition.family, (reference, core.CORE))
        assert definition.reference is getattr(ref_module, name)
        assert definition.core is cores[name]
        assert definition.core.__module__ == ref_module.__name__.replace("reference", "core")
        assert definition.reference.__module__ == ref_module.__name__
    assert set(core.CORE) | set(span_core.SPAN_CORE) == set(MEASURES)
    assert not set(core.CORE) & set(span_core.SPAN_CORE)


def _imports_by_name(tree: ast.AST) -> list[int]:
    """Lines that import a module by a name computed at run time (``importlib.import_module``,
    ``__import__``): invisible to import-linter, so each one is allowed below by name."""
    lines = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
        if name in ("import_module", "__import__"):
            lines.append(node.lineno)
    return lines


# Where a module is imported by name, and why: the package's lazy re-exports (PEP 562),
# optional third-party imports, the report backend of ``to_html`` (results and comparisons
# reach the later report package only through the protocol in results/backends.py), and the
# command line's subcommands, imported when one runs (so ``ctxeval --help`` loads no stage).
IMPORTS_BY_NAME = {
    "__init__.py",
    "foundation/optional.py",
    "results/backends.py",
    "cli/lazy.py",
}


def test_the_top_level_holds_only_the_entry_points() -> None:
    # Everything else lives in the package of its stage.
    top = sorted(p.name for p in SRC.glob("*.py"))
    assert top == ["__init__.py", "__main__.py", "evaluator.py"]


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(SRC)))
def test_imports_by_name_only_where_declared(path: Path) -> None:
    found = _imports_by_name(ast.parse(path.read_text(encoding="utf-8")))
    if str(path.relative_to(SRC)) not in IMPORTS_BY_NAME:
        assert not found, f"{path.relative_to(SRC)} imports by name at lines {found}"


def test_an_import_by_name_is_caught() -> None:
    sample = "import importlib\nimportlib.import_module('ctxeval.report')\n__import__('x')\n"
    assert _imports_by_name(ast.parse(sample)) == [2, 3]
