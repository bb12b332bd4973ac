"""EvaluationResult: what a run produced, its renderings and its files."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ctxeval.foundation.optional import require
from ctxeval.results.backends import check_html_path, report_backend
from ctxeval.results.files import check_result_path, read_result, result_header, write_result
from ctxeval.results.table import PerQueryTable

__all__ = [
    "EvaluationResult",
    "aggregate_markdown",
    "context_used_rows",
    "located_line",
    "queries_from",
]


def queries_from(count: object, source: object) -> str:
    """``"1 query from a.jsonl"``, ``"12 queries from a.jsonl"``."""
    return f"{_queries(count)} from {source}"


def _queries(count: object) -> str:
    return f"{count} {'query' if count == 1 else 'queries'}"


@dataclass
class EvaluationResult:
    """What a run produced.

    - ``per_query``: one dict per scored record, in input order: ``id``, the record's metadata
      fields, then a value per metric column (``None`` where a query was skipped by policy). A
      run stores them in a :class:`~ctxeval.results.PerQueryTable`, a sequence of dicts; any
      sequence of dicts, such as a list, works as well;
    - ``aggregate``: ``{column: macro mean}`` and ``micro_`` set metrics;
    - ``summary``: counts and means that qualify the aggregate (queries, skipped records, empty
      ground truth, mean relevant items per query, mean k actually used, ...), and what is
      needed to judge the records again as the run did: ``strategy`` (the matching strategy's
      spec) and ``fields`` (the dataset's field names);
    - ``skipped``: the bad records left out with ``on_error="skip"``: index, id, location, field
      and message.
    """

    per_query: Sequence[dict[str, Any]]
    aggregate: dict[str, float | None]
    summary: dict[str, Any]
    skipped: list[dict[str, Any]] = field(default_factory=list)

    # -- rendering ---------------------------------------------------------------------------
    def __str__(self) -> str:
        s = self.summary
        lines = [
            f"{queries_from(s.get('queries', 0), s.get('source', '?'))}"
            f" ({s.get('skipped_records', 0)} skipped, "
            f"{s.get('empty_ground_truth', 0)} with empty ground truth)"
        ]
        if self.located is not None:
            lines.append(located_line(self.located))
        width = max((len(key) for key in self.aggregate), default=0)
        for key, value in self.aggregate.items():
            shown = "n/a" if value is None else f"{value:.4f}"
            lines.append(f"  {key:<{width}}  {shown}")
        return "\n".join(lines)

    @property
    def located(self) -> dict[str, Any] | None:
        """How the spans of a run with span metrics were settled: how many texts had a span
        given, were located exactly, after normalising, fuzzily, or not at all
        (``"unlocated"``), with the first few not located (``"first_unlocated"``); None when no
        span metric ran."""
        found: dict[str, Any] | None = self.summary.get("located")
        return found

    def to_markdown(self, digits: int = 4) -> str:
        """A compact Markdown table of the aggregate, for a pull-request comment (what
        ``ctxeval evaluate --format markdown`` prints): see :func:`aggregate_markdown`."""
        return aggregate_markdown(self.aggregate, self.summary, digits)

    def to_dict(self) -> dict[str, Any]:
        return {
            "aggregate": self.aggregate,
            "summary": self.summary,
            "skipped": self.skipped,
            "per_query": list(self.per_query),
        }

    def to_pandas(self) -> Any:
        """The per-query rows as a pandas DataFrame (requires pandas)."""
        pd = require("pandas", purpose="EvaluationResult.to_pandas()", extra="pandas")
        if isinstance(self.per_query, PerQueryTable):
            return self.per_query.to_pandas()
        return pd.DataFrame(self.per_query)

    # -- files -------------------------------------------------------------------------------
    def save(self, path: str | os.PathLike[str], *, csv_safe: bool = True) -> Path:
        """Write the result to ``.jsonl``, ``.json``, ``.csv`` or ``.parquet``, atomically.

        The file appears complete or not at all, even after an error, Ctrl-C or SIGTERM. JSONL
        puts the aggregate and summary on the first line and one query per line after it; CSV
        writes the per-query rows and the rest to ``<name>.summary.json`` beside it; Parquet
        keeps the rest in the file's metadata. A path that is the run's dataset, a directory or
        has another extension is refused before anything is written. In CSV, text cells (ids,
        metadata, column names) beginning with ``= + - @``, a tab or a carriage return get a
        leading ``'`` so that a spreadsheet shows them as text instead of running them as
        formulas; :meth:`load` takes the quote away again, and numbers are never quoted.
        ``csv_safe=False`` writes the text as it is (see docs/decisions.md).
        """
        source = self.summary.get("source")
        inputs = [source] if isinstance(source, str) and os.path.isfile(source) else []
        check_result_path(path, flag="save(path)", inputs=inputs)
        header = result_header(self.aggregate, self.summary, self.skipped)
        return write_result(path, self.per_query, header, csv_safe=csv_safe)

    def to_html(
        self,
        path: str | os.PathLike[str],
        *,
        dataset: str | os.PathLike[str] | Any | None = None,
        backend: str | None = None,
        **options: Any,
    ) -> Path:
        """Write the run's self-contained HTML page (what ``ctxeval evaluate --report`` writes)
        to ``path``, atomically; returns the path.

        The page shows what was evaluated, the aggregate with bootstrap intervals, every metric
        at every cut-off, the context used, the per-query table and the lowest queries; with
        ``dataset`` (the run's records: a path, or the records themselves) those queries show
        their retrieved texts as the run's matching strategy judged them, or their ids with
        their relevance. ``options``: ``title``, ``focus`` (the per-query table's metric),
        ``worst`` (queries shown in full), ``seed`` (of the bootstrap intervals). The plots are
        inline SVG: nothing to install.

        As with ``--report``: an existing file is replaced; a path that is the run's dataset,
        a directory, or does not end in .html/.htm is refused before anything is drawn. The
        page is drawn by :mod:`ctxeval.report` (or the module ``backend`` names; see
        :mod:`ctxeval.results.backends`).
        """
        owner = "EvaluationResult.to_html"
        target = check_html_path(path, owner=owner, inputs=[self.summary.get("source"), dataset])
        writer = report_backend(backend, owner=owner)
        return writer.write_result_report(target, self, dataset=dataset, **options)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> EvaluationResult:
        """Read a result written by :meth:`save`, or a distributed run's output directory."""
        header, rows = read_result(path)
        return cls(
            per_query=rows,
            aggregate=header["aggregate"],
            summary=header["summary"],
            skipped=header.get("skipped", []),
        )


def located_line(located: dict[str, Any]) -> str:
    """One line saying how the spans were settled, with the first text not located."""
    parts = ", ".join(
        f"{located.get(key, 0)} {key}" for key in ("given", "exact", "normalised", "fuzzy")
    )
    line = f"spans: {parts}, {located.get('unlocated', 0)} not located"
    first = located.get("first_unlocated") or []
    if first:
        text = first[0]["text"]
        shown = text if len(text) <= 40 else text[:37] + "..."
        line += f" (first: record {first[0]['record']!r} {first[0]['field']}: {shown!r})"
    return line


def aggregate_markdown(
    aggregate: dict[str, float | None], summary: dict[str, Any], digits: int = 4
) -> str:
    """The aggregate as Markdown: a line saying what was evaluated, one row per measure and one
    column per cut-off, then the context used at each cut-off when the result has it."""
    s = summary
    lead = (
        f"**{_queries(s.get('queries', 0))}** from `{s.get('source', '?')}` "
        f"({s.get('skipped_records', 0)} skipped, "
        f"{s.get('empty_ground_truth', 0)} with empty ground truth)"
    )
    if s.get("strategy"):
        lead += f", matching `{s['strategy']}`"
    grid: dict[str, dict[str, str]] = {}
    for column, value in aggregate.items():
        measure, at, k = column.rpartition("@")
        label = k if at else ""
        shown = "n/a" if value is None else f"{value:.{digits}f}"
        grid.setdefault(measure if at else column, {})[label] = shown
    labels = list(dict.fromkeys(label for cells in grid.values() for label in cells))
    header = ["metric", *(f"@{label}" if label else "value" for label in labels)]
    lines = [
        lead,
        "",
        "| " + " | ".join(header) + " |",
        "| --- |" + " ---: |" * len(labels),
    ]
    for measure, cells in grid.items():
        row = [measure.replace("|", "\\|"), *(cells.get(label, "") for label in labels)]
        lines.append("| " + " | ".join(row) + " |")
    used = context_used_rows(summary)
    if used:
        lines += ["", "| context used (mean per query) | " + " | ".join(used[0][1:]) + " |"]
        lines.append("| --- |" + " ---: |" * (len(used[0]) - 1))
        lines += ["| " + " | ".join(row) + " |" for row in used[1:]]
    return "\n".join(lines) + "\n"


def context_used_rows(summary: dict[str, Any]) -> list[list[str]]:
    """The context used at each cut-off, as table rows under a header row (``cut-off``,
    ``chunks``, ``words``, ``characters``); no rows for a result without it."""
    used: dict[str, dict[str, float]] = summary.get("context_used") or {}
    if not used:
        return []
    names = list(next(iter(used.values())))
    rows = [["cut-off", *names]]
    rows += [[label, *(f"{means[name]:.1f}" for name in names)] for label, means in used.items()]
    return rows
