"""Custom strategies (functions, lambdas, closures) with and without worker processes, and
what a strategy may return: errors name the strategy and the record (file:line, id)."""

from __future__ import annotations

import json
import multiprocessing
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import ctxeval.parallel.workers as workers_module
from ctxeval import InvalidArgumentError, Matches, RetrievalEvaluator
from ctxeval.matching.base import as_matches

N = 24


def write_dataset(path: Path, n: int = N) -> Path:
    with path.open("w", encoding="utf-8") as out:
        for i in range(n):
            record = {
                "id": f"q{i}",
                "retrieved_context": [f"chunk {i}", f"the answer is {i}"],
                "ground_truth_context": [f"the answer is {i}"],
            }
            out.write(json.dumps(record) + "\n")
    return path


def run(dataset: Path, matching: Any, **options: Any) -> Any:
    options.setdefault("batch_size", 4)
    options.setdefault("progress", False)
    return RetrievalEvaluator(dataset, ["P@5", "recall@5"], matching=matching, **options).run()


def same_text(retrieved: list[str], truth: list[str]) -> np.ndarray:
    return np.array([[r == g for g in truth] for r in retrieved], dtype=bool)


def closure(suffix: str) -> Callable[[list[str], list[str]], np.ndarray]:
    def match(retrieved: list[str], truth: list[str]) -> np.ndarray:
        return np.array([[r.endswith(suffix) and r == g for g in truth] for r in retrieved])

    return match


@pytest.mark.parametrize(
    "strategy",
    [
        lambda r, g: np.array([[a == b for b in g] for a in r], dtype=bool),
        closure(""),
        same_text,
    ],
    ids=["lambda", "closure", "function"],
)
def test_unpicklable_strategies_work_in_worker_processes(tmp_path: Path, strategy: Any) -> None:
    dataset = write_dataset(tmp_path / "d.jsonl")
    alone = run(dataset, strategy, workers=1)
    parallel = run(dataset, strategy, workers=2)
    assert parallel.per_query == alone.per_query
    assert parallel.aggregate == alone.aggregate
    assert alone.aggregate["recall@5"] == 1.0


def test_default_workers_with_a_lambda_does_not_depend_on_timing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dataset = write_dataset(tmp_path / "d.jsonl")
    strategy = lambda r, g: np.array([[a == b for b in g] for a in r], dtype=bool)  # noqa: E731
    monkeypatch.setattr(workers_module, "PARALLEL_MIN_SECONDS_PER_RECORD", 0.0)
    processes = run(dataset, strategy)
    assert processes.per_query == run(dataset, strategy, workers=1).per_query


@pytest.fixture
def spawn_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """A platform without fork (macOS, Windows): workers are spawned and the plan pickled."""
    monkeypatch.setattr(multiprocessing, "get_all_start_methods", lambda: ["spawn"])


@pytest.mark.usefixtures("spawn_only")
def test_without_fork_an_unpicklable_strategy_is_rejected_before_scoring(tmp_path: Path) -> None:
    dataset = write_dataset(tmp_path / "d.jsonl")
    calls: list[int] = []

    def counted(r: list[str], g: list[str]) -> np.ndarray:
        calls.append(1)
        return same_text(r, g)

    with pytest.raises(InvalidArgumentError) as caught:
        run(dataset, counted, workers=2)
    message = str(caught.value)
    assert "workers=2" in message
    assert "top level of an importable module" in message
    assert "workers=1" in message
    assert calls == []  # nothing was scored


@pytest.mark.usefixtures("spawn_only")
def test_without_fork_the_default_workers_score_an_unpicklable_strategy_here(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dataset = write_dataset(tmp_path / "d.jsonl")
    monkeypatch.setattr(workers_module, "PARALLEL_MIN_SECONDS_PER_RECORD", 0.0)
    strategy = lambda r, g: same_text(r, g)  # noqa: E731
    assert run(dataset, strategy).per_query == run(dataset, strategy, workers=1).per_query


@pytest.mark.usefixtures("spawn_only")
def test_without_fork_a_picklable_plan_runs_in_spawned_workers(tmp_path: Path) -> None:
    dataset = write_dataset(tmp_path / "d.jsonl")
    spawned = run(dataset, "exact-chunk", workers=2)
    assert spawned.per_query == run(dataset, "exact-chunk", workers=1).per_query


# --- what a strategy returns ------------------------------------------------------------------


def on_q5(bad: Any) -> Callable[[list[str], list[str]], Any]:
    """A strategy that behaves on every record but q5 (line 6 of the file)."""

    def strategy(retrieved: list[str], truth: list[str]) -> Any:
        if "the answer is 5" in truth:
            return bad(retrieved, truth) if callable(bad) else bad
        return same_text(retrieved, truth)

    return strategy


BAD_RETURNS = [
    ("strings", lambda r, g: np.array([["False"] * len(g)] * len(r)), "strings (such as 'False')"),
    ("python strings", lambda r, g: [["True"] * len(g)] * len(r), "not booleans"),
    ("objects", lambda r, g: np.array([[None] * len(g)] * len(r)), "objects of type NoneType"),
    ("scores", lambda r, g: np.full((len(r), len(g)), 0.7), "returned scores"),
    ("wrong shape", lambda r, g: np.ones((len(r) + 1, len(g)), dtype=bool), "shape (3, 1)"),
    ("transposed", lambda r, g: np.ones((len(g), len(r)), dtype=bool), "shape (1, 2)"),
    ("None", lambda r, g: None, "returned None"),
    ("ragged", lambda r, g: [[True], [True, False]], "not a boolean matrix"),
    ("bad Matches", lambda r, g: Matches(np.array([["False"]] * len(r))), "not booleans"),
]


@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize(
    ("bad", "expected"), [b[1:] for b in BAD_RETURNS], ids=[b[0] for b in BAD_RETURNS]
)
def test_a_bad_return_names_the_strategy_and_the_record(
    tmp_path: Path, bad: Any, expected: str, workers: int
) -> None:
    dataset = write_dataset(tmp_path / "d.jsonl")
    with pytest.raises((InvalidArgumentError, TypeError)) as caught:
        # on_error="skip" does not hide it: a broken strategy is not a bad record.
        run(dataset, on_q5(bad), workers=workers, on_error="skip")
    message = str(caught.value)
    assert message.startswith(f"{dataset}:6 (record 'q5'): strategy custom(")
    assert expected in message


def test_an_exception_in_a_strategy_names_the_record_and_is_chained(tmp_path: Path) -> None:
    dataset = write_dataset(tmp_path / "d.jsonl")

    def boom(r: list[str], g: list[str]) -> Any:
        return {}["missing key"]

    with pytest.raises(InvalidArgumentError) as caught:
        run(dataset, on_q5(boom), workers=1, on_error="skip")
    message = str(caught.value)
    assert message.startswith(f"{dataset}:6 (record 'q5'): strategy custom(")
    assert "raised KeyError: 'missing key'" in message
    assert isinstance(caught.value.__cause__, KeyError)


def test_an_exception_in_a_worker_names_the_record_too(tmp_path: Path) -> None:
    dataset = write_dataset(tmp_path / "d.jsonl")
    with pytest.raises(InvalidArgumentError) as caught:
        run(dataset, on_q5(lambda r, g: 1 / 0), workers=2)
    assert str(caught.value).startswith(f"{dataset}:6 (record 'q5'): strategy custom(")
    assert "ZeroDivisionError" in str(caught.value)


def test_the_reference_implementation_names_the_record_too(tmp_path: Path) -> None:
    dataset = write_dataset(tmp_path / "d.jsonl")
    with pytest.raises(InvalidArgumentError, match=r":6 \(record 'q5'\): strategy custom\("):
        run(dataset, on_q5(lambda r, g: 1 / 0), workers=1, implementation="reference")
    with pytest.raises(TypeError, match=r":6 \(record 'q5'\): strategy .* not booleans"):
        run(dataset, on_q5(BAD_RETURNS[0][1]), workers=1, implementation="reference")


@pytest.mark.parametrize(
    "value",
    [
        [[True], [False]],
        [[1], [0]],
        np.array([[1.0], [0.0]]),
        np.array([[True], [False]], dtype=object),
        Matches(np.array([[1], [0]])),
    ],
    ids=["bools", "ints", "floats", "object bools", "Matches of 0/1"],
)
def test_what_the_protocol_documents_is_accepted(value: Any) -> None:
    matches = as_matches(value, 2, 1, "s")
    assert matches.relevant.dtype == np.bool_
    assert matches.relevant.tolist() == [[True], [False]]
