"""CSV cells that a spreadsheet would run as formulas (CSV or formula injection).

Excel, LibreOffice and Google Sheets evaluate a cell that begins with ``=``, ``+``, ``-`` or
``@`` (and, in some versions, a tab or carriage return) as a formula, so a retrieved chunk, an id
or a metadata field such as ``=HYPERLINK("http://evil", "click")`` written verbatim to a CSV file
becomes live when someone opens it. :func:`neutralise` prefixes such text with a single quote,
which spreadsheets display as text (the OWASP recommendation). ctxeval does it by default in
every CSV it writes (``csv_safe=False``, ``--raw-csv``, write the text as it is); see
docs/decisions.md.

The quote is undone when ctxeval reads the file back (:func:`restore`), so a value survives the
round trip: text that already begins with quotes followed by a formula character (``'=x``) gets
one more quote when written, and reading takes exactly one away. Numbers are never quoted: a
negative score stays a number.
"""

from __future__ import annotations

__all__ = ["FORMULA_STARTS", "neutralise", "restore"]

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
_FIRST = frozenset("'=+-@\t\r")  # what a cell that may change begins with


def _quoted_formula(text: str, quotes: int) -> bool:
    """Whether ``text`` is at least ``quotes`` quotes, then a formula character."""
    rest = text.lstrip("'")
    return len(text) - len(rest) >= quotes and rest.startswith(FORMULA_STARTS)


def neutralise(value: object) -> object:
    """``value`` with a ``'`` in front when it is text a spreadsheet would read as a formula
    (or such text already quoted, so that :func:`restore` gives it back); numbers and
    everything else unchanged."""
    if isinstance(value, str) and value[:1] in _FIRST and _quoted_formula(value, 0):
        return "'" + value
    return value


def restore(cell: str) -> str:
    """The text :func:`neutralise` was given for ``cell``: one leading quote less when the
    quotes are followed by a formula character (as a spreadsheet shows the cell)."""
    if cell.startswith("'") and _quoted_formula(cell, 1):
        return cell[1:]
    return cell
