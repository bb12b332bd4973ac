"""The ``--config`` file: its schema (a public pydantic model) and how it becomes option defaults.

A TOML file whose keys are the commands' long options (``match = "exact-chunk"``, ``k = [1, 5]``,
``fail-under = ["context_recall@5=0.8"]``). Top-level keys apply to every command that has that
option (so one file can serve ``evaluate`` and ``compare``); a table named after a command
(``[evaluate]``, ``[compare]``) applies to that command, wins over the top level, and may only
hold that command's options. The command line wins over both. A key no command has is an error.
``ctxeval schema config`` prints the JSON Schema.
"""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

__all__ = ["CommandSettings", "ConfigFile", "config_defaults"]


def _hyphenated(name: str) -> str:
    return name.replace("_", "-")


class CommandSettings(BaseModel):
    """Settings of one command, named like its long options (hyphens or underscores)."""

    model_config = ConfigDict(
        extra="forbid", alias_generator=_hyphenated, populate_by_name=True, frozen=True
    )

    match: str | None = Field(None, description="matching strategy spec, e.g. 'exact-chunk'")
    threshold: float | None = Field(None, ge=0, le=1, description="the strategy's threshold")
    tokenizer: Literal["rouge", "rouge-stem", "unicode"] | None = None
    metrics: Literal["all", "set", "ranked"] | None = Field(
        None, description="metric families when no measure is named"
    )
    measure: list[str] | None = Field(None, description="measure specs, e.g. ['ndcg@10', 'P@5']")
    convention: Literal["trec_eval", "ranx", "continuous_eval", "chroma"] | None = None
    corpus: str | None = Field(None, description="documents that span measures locate texts in")
    fuzzy_threshold: float | None = Field(
        None, gt=0, le=100, description="least partial_ratio to locate a text fuzzily"
    )
    k: list[int | str] | None = Field(
        None, description="cut-offs: chunks or budgets, e.g. [1, 5, '300w', '2000c', '512t']"
    )
    budget_policy: Literal["whole", "truncate"] | None = Field(
        None, description="at a budget, the chunk that crosses it: left out or cut to fit"
    )
    token_counter: str | None = Field(
        None,
        description="what counts the tokens of budgets such as '512t': rouge, rouge-stem, "
        "unicode, cl100k_base, o200k_base, hf:PATH (checked as --token-counter is)",
    )
    on_error: Literal["raise", "skip"] | None = None
    workers: int | None = Field(None, ge=1)
    batch_size: int | None = Field(None, ge=1, description="records scored together (256)")
    scheduler: str | None = None
    retrieved_field: str | None = None
    ground_truth_field: str | None = None
    id_field: str | None = None
    mode: Literal["text", "id"] | None = None
    text_key: str | None = Field(None, description="key of a document item's text")
    scores_field: str | None = Field(None, description="field of the retrieval scores")
    progress: bool | None = None
    format: str | None = Field(None, description="output format of the command")
    fail_under: list[str] | None = Field(None, description="gates, e.g. ['context_recall@5=0.8']")
    output: str | None = None
    baseline: str | None = None
    metric: list[str] | None = Field(None, description="measures to compare")
    test: Literal["randomization", "bootstrap"] | None = None
    n_resamples: int | None = Field(None, ge=1)
    seed: int | None = Field(None, ge=0)
    alpha: float | None = Field(None, gt=0, lt=1)
    correction: Literal["holm", "none"] | None = None
    fail_if_worse: list[str] | None = Field(
        None, description="compare's regression gates, e.g. ['ndcg@10']"
    )
    qrels: str | None = Field(None, description="TREC qrels of compare's TREC runs")
    report: str | None = None
    csv_safe: bool | None = Field(
        None,
        description="quote text that a spreadsheet would run as a formula in CSV outputs "
        "(default true; false: --raw-csv)",
    )
    allow_empty: bool | None = Field(
        None, description="exit 0 even when no query was scored (--allow-empty)"
    )
    chunker: list[str] | None = Field(
        None, description="chunkers to compare, NAME=SPEC, e.g. ['fixed=fixed(words=100)']"
    )
    retriever: str | None = Field(None, description="the harness's retriever spec, e.g. 'bm25'")
    out_dir: str | None = Field(None, description="the harness's output directory")
    overwrite: bool | None = Field(
        None, description="replace the harness's files in a non-empty --out-dir"
    )


class ConfigFile(CommandSettings):
    """A whole config file: top-level settings plus one optional table per command."""

    evaluate: CommandSettings | None = None
    compare: CommandSettings | None = None
    convert: CommandSettings | None = None
    chunking: CommandSettings | None = None


def _problem(path: str, error: ValidationError) -> str:
    first = error.errors()[0]
    where = ".".join(str(part) for part in first["loc"])
    if first["type"] == "extra_forbidden":
        names = sorted(_hyphenated(name) for name in CommandSettings.model_fields)
        tables = [f"[{name}]" for name in ConfigFile.model_fields if _hyphenated(name) not in names]
        last = str(first["loc"][-1])
        close = difflib.get_close_matches(last, [*names, *(t[1:-1] for t in tables)], n=1)
        hint = ""
        if close:
            table = f"[{close[0]}]"
            hint = f" (did you mean {table if table in tables else repr(close[0])}?)"
        return (
            f"{path}: unknown setting {where!r}{hint}; valid settings: {', '.join(names)}; "
            f"command tables: {', '.join(tables)}"
        )
    return f"{path}: setting {where!r}: {first['msg']} (got {first.get('input')!r})"


def config_defaults(path: str, command: str, params: dict[str, str]) -> dict[str, Any]:
    """The option defaults a config file gives ``command``: ``params`` maps a setting's name
    (underscored long option) to the click parameter it sets. Raises ValueError with the
    file, the setting and the fix."""
    try:
        import tomllib
    except ImportError:  # Python 3.10: tomllib's source, as a package
        from ctxeval.foundation.optional import require

        try:
            tomllib = require("tomli", purpose=f"--config {path} on Python 3.10")
        except ImportError as exc:  # MissingDependencyError: said as the option's error
            raise ValueError(str(exc)) from None
    try:
        # utf-8-sig: a byte-order mark an editor put first is read past, as in datasets.
        data = tomllib.loads(Path(path).read_text(encoding="utf-8-sig"))
    except OSError as exc:
        raise ValueError(f"cannot read {path}: {exc.strerror or exc}") from None
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ValueError(f"cannot read {path}: {exc}") from None
    try:
        config = ConfigFile.model_validate(data)
    except ValidationError as exc:
        raise ValueError(_problem(path, exc)) from None
    table = getattr(config, command, None)
    top = config.model_dump(
        exclude_none=True, exclude={"evaluate", "compare", "convert", "chunking"}
    )
    chosen = {setting: value for setting, value in top.items() if setting in params}
    if table is not None:
        for setting, value in table.model_dump(exclude_none=True).items():
            if setting not in params:
                raise ValueError(
                    f"{path}: setting {_hyphenated(setting)!r} in [{command}] is not an option "
                    f"of 'ctxeval {command}'; move it to the table of the command that has it, "
                    "or to the top level"
                )
            chosen[setting] = value
    return {
        params[setting]: tuple(value) if isinstance(value, list) else value
        for setting, value in chosen.items()
    }
