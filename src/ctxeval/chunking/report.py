"""The harness's HTML report: the comparison report of :mod:`ctxeval.report`, with a chunking
section first: chunk statistics and ceilings, chunk-size distributions, recall against the
context actually retrieved, and miss attribution."""

from __future__ import annotations

import html
import inspect
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ctxeval.chunking.grid import REACH, reach_lines, verdict_tables
from ctxeval.chunking.model import ChunkingRun, HarnessResult
from ctxeval.cutoffs.budgets import ContextSizes
from ctxeval.cutoffs.cutoff import Budget, Cutoff, cutoff_label
from ctxeval.foundation.errors import InvalidArgumentError
from ctxeval.io.atomic import atomic_write
from ctxeval.report import figure_html, html_report, pyplot
from ctxeval.report.page import breakable, table

__all__ = ["harness_report", "write_harness_report"]

_COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2"]
_STYLES = ["-", "--", "-.", ":"]
_SHARES = (("found", "#2ca02c"), ("missed", "#ff7f0e"), ("unreachable", "#7f7f7f"))


def _esc(value: object) -> str:
    return html.escape(str(value), quote=True)


def _table(outcome: HarnessResult) -> str:
    top = outcome.top
    at = cutoff_label(top)
    head = (
        "<thead><tr><th>chunker</th><th>spec</th><th>chunks</th><th>words per chunk "
        "(min / median / mean / max)</th>"
        f"<th>chunks fed @{at}</th><th>words fed @{at}</th><th>found @{at}</th>"
        "<th>ceiling recall</th>"
        f"<th>missed @{at}</th><th>unreachable</th><th>ceiling span IoU</th></tr></thead>"
    )
    rows = []
    for name, run in outcome.runs.items():
        words = run.statistics["words"]
        att = run.attribution
        rows.append(
            f"<tr><td>{breakable(name)}</td><td>{_esc(run.spec)}</td>"
            f"<td>{run.statistics['chunks']}</td>"
            f"<td>{words['min']:.0f} / {words['median']:.0f} / {words['mean']:.1f} / "
            f"{words['max']:.0f}</td><td>{run.context[top]['chunks']:.2f}</td>"
            f"<td>{run.context[top]['words']:.1f}</td>"
            f"<td>{att.found[top]:.4f}</td><td>{att.ceiling:.4f}</td>"
            f"<td>{att.missed[top]:.4f}</td><td>{att.unreachable[top]:.4f}</td>"
            f"<td>{att.span_ceiling:.4f}</td></tr>"
        )
    return f'<div class="wide"><table>{head}<tbody>{"".join(rows)}</tbody></table></div>'


def _chunkings(outcome: HarnessResult) -> dict[str, ChunkingRun]:
    """One run per chunker (in a grid every retriever of a chunker has the same chunks)."""
    first: dict[str, ChunkingRun] = {}
    for name, run in outcome.runs.items():
        first.setdefault(run.chunker or name, run)
    return first


def _sizes(outcome: HarnessResult) -> str:
    plt = pyplot()
    chunkings = _chunkings(outcome)
    fig, ax = plt.subplots(figsize=(6.4, 1.2 + 0.5 * len(chunkings)))
    names = list(chunkings)
    data = [[len(c.text.split()) for c in chunkings[n].chunks] for n in names]
    # matplotlib 3.10 renamed vert=False to orientation="horizontal" (and deprecated vert).
    sideways = (
        {"orientation": "horizontal"}
        if "orientation" in inspect.signature(ax.boxplot).parameters
        else {"vert": False}
    )
    ax.boxplot(data, showmeans=True, **sideways)
    ax.set_yticks(range(1, len(names) + 1), names)
    ax.set_xlabel("words per chunk")
    ax.grid(alpha=0.3, axis="x")
    return figure_html(fig, "Chunk sizes per chunker (box: quartiles; triangle: mean).")


def _recall_curves(outcome: HarnessResult) -> str:
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 3.6))
    points: dict[Cutoff, list[tuple[float, float]]] = {k: [] for k in outcome.ks}
    chunkers = list(_chunkings(outcome))
    styles: dict[str, str] = {}  # a colour per chunker, a line style per retriever (a grid)
    for name, run in outcome.runs.items():
        color = _COLORS[chunkers.index(run.chunker or name) % len(_COLORS)]
        retriever = name.removeprefix(f"{run.chunker}+") if run.chunker else ""
        style = styles.setdefault(retriever, _STYLES[len(styles) % len(_STYLES)])
        xs = [run.context[k]["words"] for k in outcome.ks]
        ys = [run.attribution.found[k] for k in outcome.ks]
        ax.plot(xs, ys, marker="o", color=color, linestyle=style, label=name)
        for k, x, y in zip(outcome.ks, xs, ys, strict=True):
            points[k].append((x, y))
    for name, run in _chunkings(outcome).items():
        color = _COLORS[chunkers.index(name) % len(_COLORS)]
        ax.axhline(run.attribution.ceiling, color=color, linestyle=(0, (1, 3)), linewidth=1)
    # Each cut-off labelled once, under its lowest point (a budget puts every run at about the
    # same x; one label per run would print over the others).
    for k, found in points.items():
        x, y = min(found, key=lambda point: point[1])
        ax.annotate(
            cutoff_label(k),
            (x, y),
            fontsize=7,
            xytext=(0, -11),
            ha="center",
            textcoords="offset points",
        )
    ax.plot([], [], color="0.4", linestyle=(0, (1, 3)), linewidth=1, label="ceiling (dotted)")
    ax.set_xlabel("mean words fed per question")
    ax.set_ylabel("found (context recall)" if outcome.attribution == "match" else "found")
    ax.set_ylim(0, 1.02)
    ax.grid(alpha=0.3)
    ax.legend(loc="lower right", fontsize=9)
    return figure_html(
        fig,
        "Excerpts found against the context actually fed (each point a cut-off: a k or a "
        "budget; a colour per chunker, a line style per retriever); dotted: the chunker's "
        "ceiling. Compare chunkers at the same x, not the same k: a budget puts them there.",
    )


def _attribution_bars(outcome: HarnessResult) -> str:
    plt = pyplot()
    labels = [f"{name} @{cutoff_label(k)}" for name in outcome.runs for k in outcome.ks]
    fig, ax = plt.subplots(figsize=(6.4, 0.9 + 0.28 * len(labels)))
    left = [0.0] * len(labels)
    for share, color in _SHARES:
        values = [
            getattr(run.attribution, share)[k] for run in outcome.runs.values() for k in outcome.ks
        ]
        ax.barh(labels, values, left=left, color=color, label=share)
        left = [a + b for a, b in zip(left, values, strict=True)]
    ax.invert_yaxis()
    ax.set_xlim(0, 1)
    ax.set_xlabel("share of ground-truth excerpts")
    ax.legend(loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=3, fontsize=9, frameon=False)
    return figure_html(
        fig,
        "Miss attribution: found; missed by the retriever (a chunk holds the excerpt but was not "
        "retrieved); unreachable (no chunk of this chunking holds it).",
    )


def _fed(outcome: HarnessResult, records: list[dict[str, Any]]) -> list[list[str]]:
    """Each record's chunks fed at the comparison cut-off (the cut chunk's kept text last,
    under ``truncate``): what the metrics there judged."""
    texts = [record["retrieved_context"] for record in records]
    top = outcome.top
    if not isinstance(top, Budget):
        return [list(t) if top is None else list(t[:top]) for t in texts]
    sizes = ContextSizes(texts, outcome.token_counter)
    cut = sizes.cut(top, outcome.budget_policy)
    partial = sizes.partial_texts(cut)
    return [
        [*t[: int(n)], *([partial[b]] if b in partial else [])]
        for b, (t, n) in enumerate(zip(texts, cut.chunks.tolist(), strict=True))
    ]


def _shown(record: dict[str, Any], fed: list[str]) -> dict[str, Any]:
    """What the worst-query list reads of a run record: the question, the ground truth and the
    chunks fed at the comparison cut-off (the list shows the first few, each judged on its
    own, so its mark is the metric's)."""
    return {
        "id": record["id"],
        "question": record["question"],
        "retrieved_context": fed,
        "ground_truth_context": record["ground_truth_context"],
    }


def _verdict(outcome: HarnessResult) -> str:
    """The verdict panel: a sentence per cut-off (and per retriever of a grid), the primary
    measure laid out by run and cut-off (or chunker x retriever at each cut-off), and where each
    run reaches its ceiling."""
    judged = outcome.verdict
    if judged is None:
        return ""
    parts = []
    for family in judged.families():
        title = f"<h3>With {_esc(family)}</h3>" if family else ""
        items = "".join(f"<li>{_esc(s.sentence(judged.primary))}</li>" for s in judged.of(family))
        parts.append(f"{title}<ul>{items}</ul>")
    if judged.conclusion():
        parts.append(f"<p><strong>{_esc(judged.conclusion())}</strong></p>")
    grids, mark = verdict_tables(outcome)
    tables = [
        table(header, [[_esc(c) for c in row] for row in rows], "fit") for header, rows in grids
    ]
    parts.append(f'<div class="wide">{"".join(tables)}</div>')
    if mark:
        parts.append(f'<p class="note">*: {_esc(mark)}.</p>')
    duels = "".join(
        f"<h3>{_esc(f'With {family}' if family else 'Every run')}</h3>"
        + table(header, [[_esc(c) for c in row] for row in rows], "fit")
        for family in judged.families()
        for header, rows in [judged.table(family)]
    )
    reach = "".join(f"<li>{_esc(line)}</li>" for line in reach_lines(outcome))
    parts.append(
        f"<details><summary>The tests: each best run against every other</summary>{duels}"
        f'<p class="note">{_esc(judged.legend())}.</p></details>'
        f"<p>Reaches {REACH:.0%} of its ceiling (excerpts found / ceiling recall):</p>"
        f"<ul>{reach}</ul>"
    )
    return "".join(parts)


def harness_report(outcome: HarnessResult, *, title: str = "ctxeval: chunking comparison") -> str:
    """The harness's report as one self-contained HTML page (of runs: not without
    retrieval, which the harness refuses before any work)."""
    if outcome.comparison is None:
        raise InvalidArgumentError("a report needs runs; without retrieval there are none")
    figures = "".join((_sizes(outcome), _recall_curves(outcome), _attribution_bars(outcome)))
    note = (
        '<p class="note">Questions: '
        f"{len(outcome.questions)}; retriever: {_esc(outcome.retriever)}; matching: "
        f"{_esc(outcome.matching)}; attribution rule: {_esc(outcome.attribution)}; budget "
        f"policy: {_esc(outcome.budget_policy)}; compared at {_esc(cutoff_label(outcome.top))}"
        f"{_convention_note(outcome)}. "
        "A chunking with bigger chunks feeds the model more text at the same k: compare at a "
        "budget (equal context), read recall against the words fed, and the misses against "
        "the ceiling (see docs/chunking.md). The queries further down show the chunks fed at "
        f"{_esc(cutoff_label(outcome.top))}.</p>"
    )
    section = f'{note}{_table(outcome)}<div class="figs">{figures}</div>'
    datasets: Mapping[str, Any] = {
        name: [
            _shown(record, fed)
            for record, fed in zip(run.records, _fed(outcome, run.records), strict=True)
        ]
        for name, run in outcome.runs.items()
    }
    return html_report(
        outcome.comparison,
        outcome.results,
        datasets=datasets,
        title=title,
        sections=[("Chunkings", section)],
        lead=[("Verdict", _verdict(outcome))] if outcome.verdict is not None else [],
    )


def _convention_note(outcome: HarnessResult) -> str:
    """The note's words for a convention other than ctxeval's own."""
    if outcome.convention != "chroma":
        return ""
    return (
        "; convention: chroma's chunking_evaluation (span measures, span ceiling, attribution: "
        "each chunk placed at the first occurrence of its text, touching chunks counted)"
    )


def write_harness_report(
    path: str | os.PathLike[str], outcome: HarnessResult, *, title: str | None = None
) -> Path:
    """Write :func:`harness_report` to ``path`` atomically; returns the path."""
    target = Path(path)
    page = harness_report(outcome) if title is None else harness_report(outcome, title=title)
    with atomic_write(target) as out:
        out.write(page)
    return target
