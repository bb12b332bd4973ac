"""CSV cells that a spreadsheet would run as formulas (CSV or formula injection).

Excel, LibreOffice and Google Sheets evaluate a cell that begins with ``=``, ``+``, ``-`` or
``@`` (and, in some versions, a tab or carriage return) as a formula, so a retrieved chunk or a
metadata field such as ``=HYPERLINK("http://evil", "click")`` written verbatim to a CSV file
becomes live when someone opens it. :func:`neutralise` prefixes such text with a single quote,
which spreadsheets display as text (the OWASP recommendation). It changes the data: a file
written with it reads back with the quote, so it is an option (``csv_safe=True``,
``--csv-safe``), off by default; see docs/decisions.md.
"""

from __future__ import annotations

__all__ = ["FORMULA_STARTS", "neutralise"]

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def neutralise(value: object) -> object:
    """``value`` with a ``'`` in front when it is text a spreadsheet would read as a formula;
    numbers and everything else unchanged."""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value
