"""The harness's files: checked before any work, each written atomically.

In the output directory, per chunker ``NAME``:

- ``NAME.jsonl``: the run, one line per question in the questions' order (``id``, ``question``,
  ``retrieved_context``, ``retrieved_chunk_ids``, ``retrieved_scores``, ``retrieved_spans``,
  ``ground_truth_context``, ``ground_truth_spans``), re-evaluable with ``ctxeval evaluate``;
- ``NAME.result.jsonl``: its evaluation (aggregate and per-query rows), as ``result.save``
  writes it (``ctxeval compare`` reads it back);

and ``summary.json``: the chunkers' statistics, context sizes, attribution and aggregates, and
the comparison. A directory that already holds files is refused unless ``overwrite`` is set;
then the harness's files are replaced (atomically, each one), the run files of an earlier
harness run there that this one did not replace (those its ``summary.json`` names) are removed
once every new file is written, so that ``runs/*.result.jsonl`` holds this run's runs only, and
other files are left alone. No output may be one of the inputs (the corpus or the questions).

The files are written one after another (:meth:`OutputPlan.write`), which keeps how far it got;
stopped (Ctrl-C), :meth:`OutputPlan.account` says which files were written and which not.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

from ctxeval.chunking.model import HarnessResult
from ctxeval.foundation.errors import InvalidArgumentError
from ctxeval.foundation.progress import Progress
from ctxeval.io.atomic import atomic_write
from ctxeval.io.paths import check_output, same_file

__all__ = ["SUMMARY_FILE", "OutputPlan"]

SUMMARY_FILE = "summary.json"
_RUN_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]*")  # a run's name, as the harness gives it


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
        self.written: list[Path] = []  # the files written so far, in order
        self.writing: Path | None = None  # the file being written
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

    def targets(self) -> list[Path]:
        """Every file the plan writes, in the order written (the report last)."""
        return [*self.files(), *([] if self.report is None else [self.report])]

    def write(self, outcome: HarnessResult, progress: Progress | None = None) -> list[Path]:
        """Write every file, each atomically, ``progress`` counting them; returns their paths
        (the report last). :attr:`written` and :attr:`writing` say how far it got. Then the
        run files an earlier harness run left there and this one did not replace go
        (:meth:`stale`)."""
        stale = self.stale()
        self.written = []
        for path, write in self._writers(outcome):
            self.writing = path
            write(path)
            self.writing = None
            self.written.append(path)
            if progress is not None:
                progress.update(1)
        for path in stale:
            path.unlink(missing_ok=True)
        return list(self.written)

    def stale(self) -> list[Path]:
        """The run files of the harness run whose ``summary.json`` is in the out-dir (its
        ``chunkers``' ``NAME.jsonl`` and ``NAME.result.jsonl``) that this plan does not write:
        they would sit beside this run's files as if they were its own."""
        if self.out_dir is None:
            return []
        try:
            earlier = json.loads((self.out_dir / SUMMARY_FILE).read_text(encoding="utf-8"))
            names = list(earlier["chunkers"])
        except (OSError, ValueError, KeyError, TypeError):
            return []  # no earlier harness summary (or not one of ours): nothing to take away
        ours = set(self.files())
        return [
            path
            for name in names
            if isinstance(name, str) and _RUN_NAME.fullmatch(name)
            for path in (self.out_dir / f"{name}.jsonl", self.out_dir / f"{name}.result.jsonl")
            if path not in ours and path.is_file()
        ]

    def _writers(self, outcome: HarnessResult) -> list[tuple[Path, Callable[[Path], object]]]:
        writers: list[tuple[Path, Callable[[Path], object]]] = []
        if self.out_dir is not None:
            for name, run in outcome.runs.items():
                writers.append((self.out_dir / f"{name}.jsonl", partial(_write_jsonl, run.records)))
                writers.append((self.out_dir / f"{name}.result.jsonl", run.result.save))
            summary = self.out_dir / SUMMARY_FILE
            writers.append((summary, lambda path: _write_json(outcome.summary(), path)))
        if self.report is not None:
            from ctxeval.chunking.report import write_harness_report

            writers.append((self.report, lambda path: write_harness_report(path, outcome)))
        return writers

    def account(self) -> str:
        """What of the plan is on disk when it was stopped: the files written and those not
        (none is ever half-written: each file appears complete or not at all)."""
        done = set(self.written)
        written = [path for path in self.targets() if path in done]
        missing = [path for path in self.targets() if path not in done]
        if not written:
            return f"nothing written to {self._said(missing, files=False, joiner=' or ')}"
        said = f"wrote {self._said(written)}"
        if missing:
            said += f"; {self._said(missing)} not written"
            if any(path.exists() for path in missing):
                said += " (the older files of those names there are unchanged)"
        return said

    def _said(self, paths: Sequence[Path], *, files: bool = True, joiner: str = " and ") -> str:
        """``paths`` in few words: ``runs/ (9 runs, summary.json)``, ``report.html``."""
        parts = []
        inside = [path for path in paths if path != self.report]
        if inside and self.out_dir is not None:
            names = {path.name for path in inside}
            whole = [n for n in self.names if {f"{n}.jsonl", f"{n}.result.jsonl"} <= names]
            taken = {f"{n}{suffix}" for n in whole for suffix in (".jsonl", ".result.jsonl")}
            items = [f"{len(whole)} run{'' if len(whole) == 1 else 's'}"] if whole else []
            items += [path.name for path in inside if path.name not in taken]
            folder = os.path.join(os.fspath(self.out_dir), "")
            parts.append(f"{folder} ({', '.join(items)})" if files else folder)
        if self.report is not None and self.report in paths:
            parts.append(os.fspath(self.report))
        return joiner.join(parts)


def _inside(source: str, path: Path) -> bool:
    """Whether ``path`` lies inside the input directory ``source``."""
    try:
        return Path(source).is_dir() and path.resolve().is_relative_to(Path(source).resolve())
    except OSError:
        return False


def _write_jsonl(records: Sequence[dict[str, Any]], path: Path) -> Path:
    with atomic_write(path) as out:
        for record in records:
            out.write(json.dumps(record, ensure_ascii=False) + "\n")
    return path


def _write_json(data: dict[str, Any], path: Path) -> Path:
    with atomic_write(path) as out:
        out.write(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    return path
