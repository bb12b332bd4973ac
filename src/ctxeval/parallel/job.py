"""A run as every executor receives it: what to read and how, the plan for each mode, where
the rows go (:class:`Job`), and the files a run reads (:func:`input_files`)."""

from __future__ import annotations

import glob
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from ctxeval.records.model import Mode, Record, RecordError
from ctxeval.results import EvaluationResult, JsonlResultWriter
from ctxeval.results.aggregation import Aggregator
from ctxeval.scoring.driver import ScoringPlan

__all__ = ["Job", "OnError", "input_files"]

OnError = Literal["raise", "skip"]


@dataclass(frozen=True)
class Job:
    """One evaluation, as every executor receives it.

    ``plan_for(mode)`` is the scoring plan for data of that mode; ``modes`` the modes the
    metrics can run in (the first is the default, for an empty dataset); ``inputs`` the files
    the run reads (an output must not be one of them); ``output`` where the per-query rows go
    (a ``.jsonl`` path locally; a directory or fsspec URL on Dask), or None.
    """

    dataset: Any
    plan_for: Callable[[Mode], ScoringPlan]
    modes: tuple[Mode, ...]
    source: str
    inputs: tuple[str, ...]
    fields: Any = None
    format: str | None = None
    on_error: OnError = "raise"
    batch_size: int = 256
    keep_per_query: bool = True
    progress: bool | Callable[[int], None] | None = None
    output: str | os.PathLike[str] | None = None
    mode_fixed: bool = False  # metric objects fix the mode: a bad first record cannot change it

    def records(self) -> Iterator[Record | RecordError]:
        from ctxeval.io.readers import read_records

        return read_records(self.dataset, fields=self.fields, format=self.format)

    def mode_of(self, first: Record | RecordError | None) -> Mode:
        """The dataset's mode, from its first record (the one place it is decided)."""
        if isinstance(first, Record):
            return first.mode
        if isinstance(first, RecordError) and not self.mode_fixed:
            return "id" if first.field and "ids" in first.field else "text"
        return self.modes[0]

    def aggregator(self, plan: ScoringPlan, writer: JsonlResultWriter | None) -> Aggregator:
        return Aggregator(
            plan,
            self.source,
            fields=self.fields,
            keep_rows=self.keep_per_query,
            row_sink=None if writer is None else writer.write,
        )

    def empty_result(self) -> EvaluationResult:
        return Aggregator(self.plan_for(self.modes[0]), self.source, fields=self.fields).result()


def input_files(dataset: Any, source: str | None, extra: Sequence[str]) -> tuple[str, ...]:
    """The files a run reads (an output must not be one of them)."""
    files = [source] if source is not None else []
    files.extend(extra)
    if isinstance(dataset, str | os.PathLike):
        name = os.fspath(dataset)
        files.extend([name, *glob.glob(name)])
    return tuple(files)
