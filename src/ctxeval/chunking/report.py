"""The harness's HTML report: the comparison report of :mod:`ctxeval.report`, with a chunking
section first: chunk statistics and ceilings, chunk-size distributions, recall against the
context actually retrieved, and miss attribution."""

from __future__ import annotations

import html
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
from ctxeval.report import html_report, svg
from ctxeval.report.page import breakable, table

__all__ = ["harness_report", "write_harness_report"]

_COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2"]
_CEILING = "1.5 4.5"  # dotted: a chunker's ceiling
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


def _box_marks(frame: svg.Frame, row: float, name: str, box: Mapping[str, Any]) -> str:
    """One chunker's box, whiskers, outliers and mean (a triangle) at height ``row``."""
    x, y = frame.x, frame.y(row)
    tip = (
        f"{name}: words per chunk min {box['min']:.0f}, quartiles {box['q1']:g} / "
        f"{box['median']:g} / {box['q3']:g}, mean {box['mean']:.1f}, max {box['max']:.0f}"
    )
    rule = '<line x1="{:.1f}" y1="{:.1f}" x2="{:.1f}" y2="{:.1f}"/>'
    lines = [
        rule.format(x(box["low"]), y, x(box["q1"]), y),
        rule.format(x(box["q3"]), y, x(box["high"]), y),
        rule.format(x(box["low"]), y - 7, x(box["low"]), y + 7),
        rule.format(x(box["high"]), y - 7, x(box["high"]), y + 7),
    ]
    outliers = "".join(f'<circle cx="{x(v):.1f}" cy="{y:.1f}" r="3"/>' for v in box["beyond"])
    mean = x(box["mean"])
    return (
        f'<g stroke="#1d2330" fill="none">{"".join(lines)}{outliers}'
        f'<rect x="{x(box["q1"]):.1f}" y="{y - 12:.1f}" width="{x(box["q3"]) - x(box["q1"]):.1f}"'
        f' height="24" fill="#fff"><title>{_esc(tip)}</title></rect></g>'
        f'<line x1="{x(box["median"]):.1f}" y1="{y - 12:.1f}" x2="{x(box["median"]):.1f}" '
        f'y2="{y + 12:.1f}" stroke="#ff7f0e" stroke-width="2"/>'
        f'<polygon points="{mean:.1f},{y - 5:.1f} {mean - 5:.1f},{y + 4:.1f} '
        f'{mean + 5:.1f},{y + 4:.1f}" fill="#2ca02c"/>'
    )


def _sizes(outcome: HarnessResult) -> str:
    chunkings = _chunkings(outcome)
    boxes = {
        name: svg.box_stats([len(c.text.split()) for c in run.chunks])
        for name, run in chunkings.items()
    }
    largest = max((float(box["max"]) for box in boxes.values()), default=1.0)
    left = 16 + max(svg.text_width(name) for name in chunkings)
    frame = svg.Frame(
        left, 10, 500 - left, 40.0 * len(boxes), svg.padded(0, largest), (len(boxes) + 0.5, 0.5)
    )
    y_ticks = [(i + 1.0, name) for i, name in enumerate(boxes)]
    parts = [
        svg.axes(frame, svg.ticks(0, largest, 8), y_ticks, x_label="words per chunk", grid="x")
    ]
    parts += [_box_marks(frame, i + 1.0, name, box) for i, (name, box) in enumerate(boxes.items())]
    drawing = svg.svg(520, frame.bottom + 44, "".join(parts), "chunk sizes per chunker")
    return svg.figure(
        drawing,
        "Chunk sizes per chunker (box: quartiles, orange: median; triangle: mean; whiskers to "
        "the furthest size within 1.5 box lengths; circles: sizes beyond).",
        name="chunk-sizes",
    )


def _recall_lines(outcome: HarnessResult, frame: svg.Frame) -> tuple[str, list[Any]]:
    """Each run's line (a colour per chunker, a dash per retriever), each cut-off labelled once
    under its lowest point, and the legend's entries."""
    chunkers = list(_chunkings(outcome))
    styles: dict[str, str] = {}
    parts: list[str] = []
    entries: list[Any] = []
    lowest: dict[Cutoff, tuple[float, float]] = {}
    for name, run in outcome.runs.items():
        color = _COLORS[chunkers.index(run.chunker or name) % len(_COLORS)]
        retriever = name.removeprefix(f"{run.chunker}+") if run.chunker else ""
        dash = styles.setdefault(retriever, svg.DASHES[len(styles) % 3])
        points = [(run.context[k]["words"], run.attribution.found[k]) for k in outcome.ks]
        parts.append(svg.polyline([(frame.x(x), frame.y(y)) for x, y in points], color, dash=dash))
        for k, (x, y) in zip(outcome.ks, points, strict=True):
            tip = f"{name} @{cutoff_label(k)}: found {y:.4f}, {x:.1f} words fed"
            parts.append(svg.circle(frame.x(x), frame.y(y), 3.4, color, tip=tip))
            if k not in lowest or y < lowest[k][1]:
                lowest[k] = (x, y)
        entries.append((name, color, "line", dash))
    parts += [
        svg.text(frame.x(x), frame.y(y) + 15, cutoff_label(k), size=9)
        for k, (x, y) in lowest.items()
    ]
    return "".join(parts), entries


def _recall_curves(outcome: HarnessResult) -> str:
    widest = max(run.context[k]["words"] for run in outcome.runs.values() for k in outcome.ks)
    frame = svg.Frame(62, 10, 446, 300, svg.padded(0, widest), (0, 1.02))
    parts = [
        svg.axes(
            frame,
            svg.ticks(0, frame.x_range[1], 7),
            svg.ticks(0, 1, 5),
            x_label="mean words fed per question",
            y_label="found (context recall)" if outcome.attribution == "match" else "found",
        )
    ]
    for i, (name, run) in enumerate(_chunkings(outcome).items()):
        y = frame.y(run.attribution.ceiling)
        parts.append(
            svg.polyline(
                [(frame.left, y), (frame.right, y)],
                _COLORS[i % len(_COLORS)],
                dash=_CEILING,
                width=1.2,
                tip=f"{name}: ceiling {run.attribution.ceiling:.4f}",
            )
        )
    lines, entries = _recall_lines(outcome, frame)
    entries.append(("ceiling (dotted)", "#666", "rule", _CEILING))
    key, height = svg.legend_row(frame.left, frame.bottom + 42, frame.width, entries)
    parts += [lines, key]
    drawing = svg.svg(
        520, frame.bottom + 46 + height, "".join(parts), "excerpts found against words fed"
    )
    return svg.figure(
        drawing,
        "Excerpts found against the context actually fed (each point a cut-off: a k or a "
        "budget; a colour per chunker, a line style per retriever); dotted: the chunker's "
        "ceiling. Compare chunkers at the same x, not the same k: a budget puts them there.",
        name="found-against-words-fed",
    )


def _attribution_bars(outcome: HarnessResult) -> str:
    labels = [(name, k) for name in outcome.runs for k in outcome.ks]
    left = 14 + max(svg.text_width(f"{name} @{cutoff_label(k)}") for name, k in labels)
    frame = svg.Frame(left, 30, 500 - left, 20.0 * len(labels), (0, 1), (len(labels), 0))
    y_ticks = [(i + 0.5, f"{name} @{cutoff_label(k)}") for i, (name, k) in enumerate(labels)]
    parts = [
        svg.axes(
            frame, svg.ticks(0, 1, 5), y_ticks, x_label="share of ground-truth excerpts", grid=""
        )
    ]
    for i, (name, k) in enumerate(labels):
        start = 0.0
        for share, color in _SHARES:
            value = getattr(outcome.runs[name].attribution, share)[k]
            tip = f"{name} @{cutoff_label(k)}: {share} {value:.4f}"
            x0, x1 = frame.x(start), frame.x(start + value)
            parts.append(svg.rect(x0, frame.y(i + 0.1), x1 - x0, 16, color, tip=tip))
            start += value
    entries = [(share, color, "box", "") for share, color in _SHARES]
    parts.append(svg.legend_row(frame.left + frame.width / 2 - 130, 4, 300, entries)[0])
    drawing = svg.svg(520, frame.bottom + 44, "".join(parts), "miss attribution")
    return svg.figure(
        drawing,
        "Miss attribution: found; missed by the retriever (a chunk holds the excerpt but was not "
        "retrieved); unreachable (no chunk of this chunking holds it).",
        name="miss-attribution",
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


def _counter_note(outcome: HarnessResult) -> str:
    """Which tokenizer counted the token budgets (``512t``), when there are any."""
    if not outcome.counts_tokens:
        return ""
    return f"; tokens counted by {_esc(outcome.token_counter_name)}"


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
        f"policy: {_esc(outcome.budget_policy)}"
        f"{_counter_note(outcome)}; compared at {_esc(cutoff_label(outcome.top))}"
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
