"""Functions stay small: none in src/ctxeval over 80 lines, its docstring included.

A function's lines run from its ``def`` line to its last line (decorators are not counted;
its signature, docstring, comments and blank lines are). Nested functions count within their
enclosing function, and on their own. The named exceptions are long on purpose, each with its
reason; each must still exist and still be over the limit, so the list does not outlive them.
Ruff's C901, PLR0912, PLR0913 and PLR0915 (pyproject.toml) check complexity, branches, arguments
and statements.
"""

from __future__ import annotations

import ast
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src" / "ctxeval"
FILES = sorted(SRC.rglob("*.py"))
LIMIT = 80

# "path relative to src/ctxeval::qualified name": why it keeps its long body.
EXCEPTIONS: dict[str, str] = {
    "matching/rouge/lcs_kernel.py::lcs_records": (
        "numba kernel: one compiled loop over every record's LCS table, where a call per step "
        "would cost"
    ),
    "metrics/spans/kernel.py::span_prefix": (
        "numba kernel: one compiled loop over every record's spans at every cut-off, where a "
        "call per step would cost (helpers taking arrays are not inlined)"
    ),
}

Function = ast.FunctionDef | ast.AsyncFunctionDef


def body_lines(function: Function) -> int:
    """The function's lines, from ``def`` to its end."""
    return (function.end_lineno or function.lineno) - function.lineno + 1


def functions(tree: ast.AST, prefix: str = "") -> Iterator[tuple[str, Function]]:
    """Every function and method of ``tree``, nested ones too, by qualified name
    (``Class.method``, ``outer.inner``)."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            name = f"{prefix}{node.name}"
            yield name, node
            yield from functions(node, f"{name}.")
        elif isinstance(node, ast.ClassDef):
            yield from functions(node, f"{prefix}{node.name}.")
        else:
            yield from functions(node, prefix)


def sizes(path: Path) -> dict[str, int]:
    """``{"path::name": lines}`` for every function of one file of src/ctxeval."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    where = path.relative_to(SRC).as_posix()
    return {f"{where}::{name}": body_lines(node) for name, node in functions(tree)}


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(SRC)))
def test_no_long_functions(path: Path) -> None:
    long = {
        key: lines for key, lines in sizes(path).items() if lines > LIMIT and key not in EXCEPTIONS
    }
    assert not long, (
        f"over {LIMIT} lines (docstring included): {long}; split them into named steps, "
        "or, for a numeric kernel, list it in EXCEPTIONS with the reason"
    )


@pytest.mark.parametrize("key", sorted(EXCEPTIONS))
def test_exceptions_exist_and_are_still_long(key: str) -> None:
    path = SRC / key.split("::", 1)[0]
    assert path.is_file(), f"{key}: no such file; remove it from EXCEPTIONS"
    found = sizes(path)
    assert key in found, f"{key}: no such function; remove it from EXCEPTIONS"
    assert found[key] > LIMIT, (
        f"{key} has {found[key]} lines, within the limit: remove it from EXCEPTIONS"
    )


SAMPLE = '''
import functools


@functools.cache
def documented(a):
    """A docstring
    of three
    lines."""
    # a comment counts
    x = a

    return x


def plain():
    return 1


class Holder:
    def method(self):
        """One line."""

        def inner():
            return (
                2
            )

        return inner


async def waiting():
    await something()
'''


def test_counter_on_a_sample() -> None:
    tree = ast.parse(textwrap.dedent(SAMPLE))
    counted = {name: body_lines(node) for name, node in functions(tree)}
    assert counted == {
        # def, the docstring's 3 lines, comment, x = a, blank, return: not the decorator
        "documented": 8,
        "plain": 2,
        # def, docstring, blank, inner's 4 lines, blank, return
        "Holder.method": 9,
        "Holder.method.inner": 4,
        "waiting": 2,
    }


def test_a_long_function_is_found(tmp_path: Path) -> None:
    """The check fails on a function one line over the limit, and passes at the limit."""
    over = "def f():\n" + "    x = 1\n" * LIMIT
    at = "def g():\n    '''Doc.'''\n" + "    x = 1\n" * (LIMIT - 2)
    tree = ast.parse(over + at)
    counted = {name: body_lines(node) for name, node in functions(tree)}
    assert counted == {"f": LIMIT + 1, "g": LIMIT}
