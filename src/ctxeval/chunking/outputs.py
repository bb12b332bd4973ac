"""The harness's files: checked before any work, each written atomically.

In the output directory, per chunker ``NAME``:

- ``NAME.jsonl``: the run, one line per question in the questions' order (``id``, ``question``,
  ``retrieved_context``, ``retrieved_chunk_ids``, ``retrieved_scores``, ``retrieved_spans``,
  ``ground_truth_context``, ``ground_truth_spans``), re-evaluable with ``ctxeval evaluate``;
- ``NAME.result.jsonl``: its evaluation (aggregate and per-query rows), as ``result.save``
  writes it (``ctxeval compare`` reads it back);

and ``summary.json``: the chunkers' statistics, context sizes, attribution and aggregates, and
the comparison. A directory that already holds files is refused unless ``overwrite`` is set;
then the harness's files are replaced (atomically, each one) and other files are left alone.
No output may be one of the inputs (the corpus or the questions).
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ctxeval.chunking.model import HarnessResult
from ctxeval.foundation.errors import InvalidArgumentError
from ctxeval.io.atomic import atomic_write
from ctxeval.io.paths import check_output, same_file

__all__ = ["SUMMARY_FILE", "OutputPlan"]

SUMMARY_FILE = "summary.json"


class OutputPlan:
    """Where the harness writes, checked at construction (before any chunking)."""

    def __init__(
        self,
        out_dir: str | os.PathLike[str] | None,
        report: str | os.PathLike[str] | None,
        names: Sequence[str],
        overwrite: bool,
        inputs: Sequence[object],
        *,
        flags: tuple[str, str] = ("out_dir=", "report="),
    ) -> None:
        self.out_dir = None if out_dir is None else Path(out_dir)
        self.report = None if report is None else Path(report)
        self.names = list(names)
        files = [os.fspath(i) for i in inputs if isinstance(i, str | os.PathLike)]
        dir_flag, report_flag = flags
        if self.out_dir is not None:
            check_output(self.out_dir, flag=dir_flag, inputs=files, directory=True)
            if not overwrite and self.out_dir.is_dir() and any(self.out_dir.iterdir()):
                raise InvalidArgumentError(
                    f"{dir_flag}{self.out_dir} is not empty; choose a new directory, or "
                    "allow replacing the harness's files in it ("
                    + ("--overwrite" if dir_flag.startswith("--") else "overwrite=True")
                    + ")"
                )
            for path in self.files():
                check_output(path, flag=dir_flag, inputs=files)
                if any(same_file(path, source) or _inside(source, path) for source in files):
                    raise InvalidArgumentError(
                        f"{dir_flag}{self.out_dir}: {path.name} would replace an input; "
                        "choose another directory"
                    )
        if self.report is not None:
            check_output(self.report, flag=report_flag, inputs=files, suffixes=(".html", ".htm"))

    def run_path(self, name: str) -> str:
        return os.fspath(self.out_dir / f"{name}.jsonl") if self.out_dir is not None else name

    def files(self) -> list[Path]:
        if self.out_dir is None:
            return []
        per_run = [
            self.out_dir / f"{name}{suffix}"
            for name in self.names
            for suffix in (".jsonl", ".result.jsonl")
        ]
        return [*per_run, self.out_dir / SUMMARY_FILE]

    def write(self, outcome: HarnessResult) -> list[Path]:
        """Write every file; returns their paths (the report last)."""
        written: list[Path] = []
        if self.out_dir is not None:
            for name, run in outcome.runs.items():
                written.append(_write_jsonl(self.out_dir / f"{name}.jsonl", run.records))
                written.append(run.result.save(self.out_dir / f"{name}.result.jsonl"))
            written.append(_write_json(self.out_dir / SUMMARY_FILE, outcome.summary()))
        if self.report is not None:
            from ctxeval.chunking.report import write_harness_report

            written.append(write_harness_report(self.report, outcome))
        return written


def _inside(source: str, path: Path) -> bool:
    """Whether ``path`` lies inside the input directory ``source``."""
    try:
        return Path(source).is_dir() and path.resolve().is_relative_to(Path(source).resolve())
    except OSError:
        return False


def _write_jsonl(path: Path, records: Sequence[dict[str, Any]]) -> Path:
    with atomic_write(path) as out:
        for record in records:
            out.write(json.dumps(record, ensure_ascii=False) + "\n")
    return path


def _write_json(path: Path, data: dict[str, Any]) -> Path:
    with atomic_write(path) as out:
        out.write(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    return path
