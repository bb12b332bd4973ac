"""The harness's verdict: which chunker (and retriever) to pick at each cut-off.

:func:`harness_verdict` judges the runs on the primary measure with
:func:`~ctxeval.comparison.verdict.verdict`: one family of every run and, when the harness ran a
grid (several chunkers under several retrievers), the chunkers under each retriever as a family of
their own, so the verdict says both which pair is best and which chunker suits which retriever.
:func:`grid_table` lays the primary measure out as chunkers x retrievers at one cut-off;
:func:`reach_lines` says at which cut-off each run finds 95% of what its chunking allows (its
ceiling, :meth:`~ctxeval.chunking.attribution.Attribution.reach`); :func:`verdict_text` puts the
three together for the terminal.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ctxeval.chunking.model import ChunkingRun, HarnessResult
from ctxeval.comparison.render import md_table, md_text
from ctxeval.comparison.verdict import Standing, Verdict, text_lines, verdict
from ctxeval.cutoffs.cutoff import Cutoff, cutoff_label

__all__ = [
    "REACH",
    "cutoff_table",
    "grid_families",
    "grid_table",
    "harness_verdict",
    "reach_lines",
    "verdict_tables",
    "verdict_text",
]

#: The share of its ceiling a run must find to have reached it.
REACH = 0.95


def _retriever_name(name: str, run: ChunkingRun) -> str:
    """The retriever's name in a grid run's name ``CHUNKER+RETRIEVER`` ("" with one retriever:
    the run is named after its chunker)."""
    chunker = run.chunker or name
    return name[len(chunker) + 1 :] if name.startswith(f"{chunker}+") else ""


def grid_families(runs: Mapping[str, ChunkingRun]) -> dict[str, dict[str, str]]:
    """``{family: {shown name: run name}}``: every run (family ``""``), and in a grid of several
    chunkers and retrievers, the chunkers under each retriever (shown by the chunker's name)."""
    families: dict[str, dict[str, str]] = {"": {name: name for name in runs}}
    by_retriever: dict[str, dict[str, str]] = {}
    for name, run in runs.items():
        retriever = _retriever_name(name, run)
        if retriever:
            by_retriever.setdefault(retriever, {})[run.chunker or name] = name
    if len(by_retriever) > 1 and any(len(members) > 1 for members in by_retriever.values()):
        families.update(by_retriever)
    return families


def harness_verdict(
    runs: Mapping[str, ChunkingRun],
    ks: Sequence[Cutoff],
    primary: str,
    tests: Mapping[str, Any],
) -> Verdict | None:
    """The verdict on ``primary`` at every cut-off (``tests``: ``seed``, ``n_resamples``), or
    None for a single run."""
    if len(runs) < 2:
        return None
    return verdict(
        {name: run.result for name, run in runs.items()},
        primary,
        [cutoff_label(k) for k in ks],
        grid_families(runs),
        seed=tests["seed"],
        n_resamples=tests["n_resamples"],
    )


def grid_table(outcome: HarnessResult, cutoff: str) -> tuple[list[str], list[list[str]]] | None:
    """The primary measure at ``cutoff`` as chunkers (rows) x retrievers (columns), each
    column's best chunker marked ``*`` when it is above every other chunker under that
    retriever; None when the runs are not a grid."""
    judged = outcome.verdict
    if judged is None:
        return None
    retrievers = [family for family in judged.families() if family]
    if not retrievers:
        return None
    standings = {s.family: s for s in judged.standings if s.cutoff == cutoff and s.family}
    chunkers = list(dict.fromkeys(c for s in standings.values() for c in s.means))
    rows = [[chunker, *(_cell(standings[r], chunker) for r in retrievers)] for chunker in chunkers]
    return [f"{judged.primary}@{cutoff}", *retrievers], rows


def cutoff_table(outcome: HarnessResult) -> tuple[list[str], list[list[str]]] | None:
    """The primary measure of every run (rows) at every cut-off (columns), the best run at a
    cut-off marked ``*`` when it is above every other run there; None without a verdict."""
    judged = outcome.verdict
    if judged is None:
        return None
    overall = judged.of("")
    rows = [[name, *(_cell(standing, name) for standing in overall)] for name in outcome.runs]
    return [judged.primary, *(f"@{s.cutoff}" for s in overall)], rows


def _cell(standing: Standing, chunker: str) -> str:
    if chunker not in standing.means:
        return "-"
    mark = "*" if standing.leads and standing.best == chunker else ""
    return f"{standing.means[chunker]:.3f}{mark}"


def reach_lines(outcome: HarnessResult) -> list[str]:
    """Per run: where it reaches 95% of its ceiling, or how far it got at the last cut-off."""
    last = outcome.ks[-1]
    lines = []
    for name, run in outcome.runs.items():
        att = run.attribution
        k = att.reach(REACH)
        if k is not None:
            lines.append(f"{name}: at {cutoff_label(k)}")
        else:
            share = att.found[last] / att.ceiling if att.ceiling else 0.0
            lines.append(f"{name}: not by {cutoff_label(last)} ({share:.0%} of its ceiling there)")
    return lines


Table = tuple[list[str], list[list[str]]]


def verdict_tables(outcome: HarnessResult) -> tuple[list[Table], str | None]:
    """The primary measure laid out: chunkers x retrievers at each cut-off in a grid, else runs
    x cut-offs; and what ``*`` means when a cell has it (else None)."""
    tables = [grid for k in outcome.ks if (grid := grid_table(outcome, cutoff_label(k)))]
    mark = "the best chunker with that retriever, above every other chunker with it"
    if not tables:
        tables = [cutoff_table(outcome) or ([], [])]
        mark = "the best run at that cut-off, above every other run"
    starred = any(cell.endswith("*") for _, rows in tables for row in rows for cell in row[1:])
    return tables, mark if starred else None


def verdict_text(outcome: HarnessResult, markdown: bool = False) -> str:
    """The verdict for the terminal: its sentences, the grid at each cut-off (when the runs are
    a grid) and where each run reaches its ceiling; in Markdown (lists and tables) when
    ``markdown``."""
    judged = outcome.verdict
    if judged is None:
        return ""
    lines = [judged.to_markdown() if markdown else judged.to_text()]
    tables, mark = verdict_tables(outcome)
    for header, rows in tables:
        table = md_table(header, rows, left={0}) if markdown else text_lines(header, rows, left=1)
        lines += ["", *table]
    if mark:
        lines += ["", md_text(f"*: {mark}")] if markdown else [f"*: {mark}"]
    lines += ["", f"Reaches {REACH:.0%} of its ceiling (excerpts found / ceiling recall):"]
    bullet = "- " if markdown else "  "
    lines += [""] if markdown else []
    lines += [f"{bullet}{md_text(line) if markdown else line}" for line in reach_lines(outcome)]
    return "\n".join(lines)
