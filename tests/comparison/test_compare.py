"""compare(): alignment, paired tests against slow references, Holm, seeding, renderings."""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import random
import re
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import ctxeval.comparison.stats as compare_module
from ctxeval import (
    ConventionWarning,
    IDPrecisionRecallF1,
    IDRankedRetrievalMetrics,
    InvalidArgumentError,
    InvalidArgumentTypeError,
    PrecisionRecallF1,
    RankedRetrievalMetrics,
    RetrievalEvaluator,
)
from ctxeval.comparison import ComparisonReport, compare, holm, random_stream
from ctxeval.results import EvaluationResult


# -- helpers -------------------------------------------------------------------------------------
def result(
    columns: dict[str, list[float | None]],
    *,
    ids: list[Any] | None = None,
    source: str = "runs/run.jsonl",
) -> EvaluationResult:
    """A result with the given per-query columns, as the evaluator would produce it."""
    n = len(next(iter(columns.values())))
    ids = [f"q{i}" for i in range(n)] if ids is None else ids
    rows = [
        {"id": qid, "question": f"question {qid}", **{c: v[i] for c, v in columns.items()}}
        for i, qid in enumerate(ids)
    ]
    aggregate: dict[str, float | None] = {}
    for column, values in columns.items():
        known = [v for v in values if isinstance(v, float | int)]
        aggregate[column] = math.fsum(known) / len(known) if known else None
        aggregate["micro_" + column] = 0.0  # never a comparison column by default
    return EvaluationResult(per_query=rows, aggregate=aggregate, summary={"source": source})


def exact_randomization_p(d: list[float]) -> float:
    """Every one of the 2^n sign flips: the exact two-sided p of the mean difference."""
    observed = abs(math.fsum(d))
    threshold = observed - 1e-12 * math.fsum(abs(x) for x in d)
    hits = 0
    for signs in itertools.product((1, -1), repeat=len(d)):
        hits += abs(math.fsum(s * x for s, x in zip(signs, d, strict=True))) >= threshold
    return hits / 2 ** len(d)


def slow_randomization_p(d: list[float], seed: int, metric: str, n_resamples: int) -> float:
    """The Monte Carlo test one resample at a time, reading the documented random stream."""
    rng = random_stream(seed, metric, "randomization")
    n = len(d)
    words = -(-n // 64)
    observed = abs(math.fsum(d))
    threshold = observed - 1e-12 * math.fsum(abs(x) for x in d)
    hits = 0
    for _ in range(n_resamples):
        raw = [int(w) for w in rng.bit_generator.random_raw(words)]
        signs = [-1 if (raw[i // 64] >> (i % 64)) & 1 else 1 for i in range(n)]
        flipped = abs(math.fsum(s * x for s, x in zip(signs, d, strict=True)))
        hits += flipped >= threshold
    return (1 + hits) / (1 + n_resamples)


def slow_bootstrap_means(
    columns: list[list[float]], seed: int, metric: str, n_resamples: int
) -> list[list[float]]:
    """Paired bootstrap, one resample at a time: the same query indices for every column."""
    rng = random_stream(seed, metric, "bootstrap")
    arrays = [np.array(c, dtype=np.float64) for c in columns]
    n = len(columns[0])
    means: list[list[float]] = [[] for _ in columns]
    for _ in range(n_resamples):
        picks = rng.integers(0, n, size=n)
        for j, d in enumerate(arrays):
            means[j].append(float(d[picks].sum() / n))
    return means


def dominated_pair(n: int = 50, seed: int = 3) -> tuple[list[float], list[float]]:
    """A run better than the baseline on 45 of n queries by 0.2, worse on 5 by 0.05."""
    rng = random.Random(seed)
    base = [round(rng.uniform(0, 0.7), 3) for _ in range(n)]
    better = [b + 0.2 if i % 10 else b - 0.05 for i, b in enumerate(base)]
    return base, better


def noisy_pair(n: int = 30, seed: int = 5) -> tuple[list[float], list[float]]:
    """A small, noisy difference: p well inside (0, 1)."""
    rng = random.Random(seed)
    base = [rng.choice([0.0, 0.25, 0.5, 0.75, 1.0]) for _ in range(n)]
    other = [min(1.0, max(0.0, b + rng.choice([-0.25, 0.0, 0.25, 0.25]))) for b in base]
    return base, other


# -- known answers -------------------------------------------------------------------------------
@pytest.mark.parametrize("test", ["randomization", "bootstrap"])
def test_identical_runs_have_p_one_and_no_wins(test: str) -> None:
    values = [0.1 * (i % 7) for i in range(40)]
    runs = {
        "a": result({"recall@5": values, "ndcg@5": [v / 3 for v in values]}),
        "b": result({"recall@5": list(values), "ndcg@5": [v / 3 for v in values]}),
    }
    report = compare(runs, test=test, n_resamples=2000)  # type: ignore[arg-type]
    assert len(report.comparisons) == 2
    for item in report.comparisons:
        assert item.p_value == 1.0
        assert item.p_adjusted == 1.0
        assert (item.ci_low, item.ci_high) == (0.0, 0.0)
        assert item.diff == 0.0
        assert (item.wins, item.ties, item.losses) == (0, 40, 0)
        assert not item.significant
    assert report.best == {"recall@5": ("a", "b"), "ndcg@5": ("a", "b")}
    # Nothing is starred, so the legend says nothing differs rather than what a star means.
    assert "no run differs from a with Holm-adjusted p < 0.05" in str(report)
    assert "*: differs" not in str(report)


def test_a_dominated_baseline_is_significant_after_holm() -> None:
    base, better = dominated_pair()
    runs = {
        "fixed": result({"recall@5": base, "ndcg@5": [b / 2 for b in base]}),
        "sentence": result({"recall@5": better, "ndcg@5": [b / 2 for b in better]}),
        "same": result({"recall@5": base, "ndcg@5": [b / 2 for b in base]}),
    }
    report = compare(runs)
    for metric in ("recall@5", "ndcg@5"):
        item = report.comparison("sentence", metric)
        assert (item.wins, item.ties, item.losses) == (45, 0, 5)
        assert item.p_value == 1 / 10_001  # no resample is as extreme
        assert item.p_adjusted is not None
        assert item.p_adjusted == pytest.approx(4 / 10_001)  # smallest of 4: times 4
        assert item.significant
        assert item.ci_low is not None
        assert item.ci_low > 0
        assert report.row(metric).best == ("sentence",)
        assert report.row(metric).significant == {"fixed": False, "sentence": True, "same": False}
        assert not report.comparison("same", metric).significant
    diff = report.comparison("sentence", "recall@5").diff
    assert diff == pytest.approx((45 * 0.2 - 5 * 0.05) / 50)


def test_better_on_half_worse_on_half_by_equal_amounts() -> None:
    base = [0.5] * 20
    run = [0.75] * 10 + [0.25] * 10  # exact binary fractions: the sums are exact
    report = compare([result({"recall": base}), result({"recall": run})])
    item = report.comparisons[0]
    assert item.diff == 0.0
    assert item.p_value == 1.0
    assert (item.wins, item.ties, item.losses) == (10, 0, 10)
    # Differences that are not exact binary fractions: rounding must not make p < 1.
    base = [0.3, 0.7, 0.1, 0.9] * 5
    run = [b + (0.1 if i % 2 else -0.1) for i, b in enumerate(base)]
    item = compare({"a": result({"r": base}), "b": result({"r": run})}).comparisons[0]
    assert item.diff == pytest.approx(0.0, abs=1e-15)
    assert item.p_value == 1.0


# -- against slow references ---------------------------------------------------------------------
def _case(n: int, seed: int) -> tuple[list[float], list[float]]:
    rng = random.Random(seed)
    grid = [0.0, 1 / 3, 0.5, 2 / 3, 1.0]  # ties between flipped sums happen
    base = [rng.choice(grid) for _ in range(n)]
    run = [rng.choice(grid) if rng.random() < 0.7 else b for b in base]
    return base, run


@pytest.mark.parametrize(("n", "seed"), [(n, s) for n in (1, 2, 5, 8, 10, 12) for s in (0, 1, 2)])
def test_randomization_p_against_every_sign_flip(n: int, seed: int) -> None:
    base, run = _case(n, seed)
    d = [r - b for r, b in zip(run, base, strict=True)]
    exact = exact_randomization_p(d)
    n_resamples = 20_000
    item = compare(
        {"base": result({"m": base}), "run": result({"m": run})},
        n_resamples=n_resamples,
        seed=seed,
    ).comparisons[0]
    assert item.p_value is not None
    # Monte Carlo error of (1 + hits) / (1 + N): binomial standard error, 5 sigma, plus 1/N.
    tolerance = 5 * math.sqrt(exact * (1 - exact) / n_resamples) + 1 / n_resamples
    assert abs(item.p_value - exact) <= tolerance, (d, exact, item.p_value)
    if exact == 1.0:
        assert item.p_value == 1.0


@pytest.mark.parametrize(("n", "seed", "block"), [(12, 0, 1 << 20), (70, 1, 100), (130, 2, 260)])
def test_randomization_monte_carlo_equals_a_slow_loop_bit_for_bit(
    n: int, seed: int, block: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Blocks smaller than n_resamples: the stream must not depend on how resamples are grouped.
    monkeypatch.setattr(compare_module, "_BLOCK_CELLS", block)
    base, run = _case(n, seed)
    other = [1 - b for b in base]
    runs = {"base": result({"m": base}), "run": result({"m": run}), "other": result({"m": other})}
    report = compare(runs, n_resamples=1500, seed=seed + 11)
    for name, values in (("run", run), ("other", other)):
        d = [v - b for v, b in zip(values, base, strict=True)]
        slow = slow_randomization_p(d, seed + 11, "m", 1500)
        assert report.comparison(name, "m").p_value == slow


@pytest.mark.parametrize("block", [1 << 20, 50])
def test_bootstrap_equals_a_slow_loop_bit_for_bit(
    block: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(compare_module, "_BLOCK_CELLS", block)
    base, run = noisy_pair(n=37)
    other = [0.5 * (b + r) for b, r in zip(base, run, strict=True)]
    runs = {"base": result({"m": base}), "run": result({"m": run}), "other": result({"m": other})}
    n_resamples, alpha = 999, 0.1
    for test in ("randomization", "bootstrap"):
        report = compare(runs, n_resamples=n_resamples, alpha=alpha, seed=4, test=test)  # type: ignore[arg-type]
        diffs = [[v - b for v, b in zip(values, base, strict=True)] for values in (run, other)]
        means = slow_bootstrap_means(diffs, 4, "m", n_resamples)
        for name, resampled in zip(("run", "other"), means, strict=True):
            item = report.comparison(name, "m")
            low, high = np.quantile(resampled, [alpha / 2, 1 - alpha / 2])
            assert (item.ci_low, item.ci_high) == (float(low), float(high))
            if test == "bootstrap":
                below = sum(m <= 0 for m in resampled)
                above = sum(m >= 0 for m in resampled)
                expected = min(1.0, 2 * (1 + min(below, above)) / (1 + n_resamples))
                assert item.p_value == expected


def test_the_random_stream_is_the_documented_one() -> None:
    digest = hashlib.sha256(b"ndcg@10").digest()[:16]
    words = [int.from_bytes(digest[i : i + 4], "little") for i in range(0, 16, 4)]
    for purpose, code in (("randomization", 0), ("bootstrap", 1)):
        expected = np.random.Generator(
            np.random.PCG64(np.random.SeedSequence(7, spawn_key=(code, *words)))
        )
        got = random_stream(7, "ndcg@10", purpose)  # type: ignore[arg-type]
        assert (got.bit_generator.random_raw(8) == expected.bit_generator.random_raw(8)).all()


def test_a_block_of_bootstrap_draws_equals_the_draws_one_by_one() -> None:
    # What the blocked implementation relies on (numpy's bounded integers on PCG64).
    one = random_stream(0, "m", "bootstrap").integers(0, 37, size=(300, 37))
    rng = random_stream(0, "m", "bootstrap")
    many = np.stack([rng.integers(0, 37, size=37) for _ in range(300)])
    assert (one == many).all()


# -- Holm ----------------------------------------------------------------------------------------
def test_holm_by_hand() -> None:
    # sorted: 0.005*4 = 0.02, 0.01*3 = 0.03, 0.03*2 = 0.06, 0.04*1 = 0.04 -> max so far 0.06
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert holm([0.5, 0.6]) == [1.0, 1.0]  # capped at 1
    assert holm([0.02, 0.02, 0.02]) == pytest.approx([0.06, 0.06, 0.06])  # ties
    assert holm([]) == []
    assert holm([0.3]) == [0.3]


def test_holm_against_statsmodels() -> None:
    multitest = pytest.importorskip("statsmodels.stats.multitest")
    rng = np.random.default_rng(0)
    for size in (1, 2, 5, 17):
        p = rng.uniform(0, 0.2, size=size).tolist()
        expected = multitest.multipletests(p, method="holm")[1]
        assert holm(p) == pytest.approx(list(expected), abs=1e-15)


def test_the_report_corrects_across_every_metric_and_run() -> None:
    base, run = noisy_pair()
    base2, run2 = dominated_pair(n=30)
    runs = {
        "a": result({"x": base, "y": base2}),
        "b": result({"x": run, "y": run2}),
        "c": result({"x": [v / 2 for v in run], "y": base2}),
    }
    report = compare(runs, n_resamples=3000)
    raw = [c.p_value for c in report.comparisons]
    assert all(p is not None for p in raw)
    assert [c.p_adjusted for c in report.comparisons] == holm(raw)  # type: ignore[arg-type]
    plain = compare(runs, n_resamples=3000, correction="none")
    assert [c.p_adjusted for c in plain.comparisons] == raw
    assert [(c.metric, c.run) for c in report.comparisons] == [
        ("x", "b"),
        ("x", "c"),
        ("y", "b"),
        ("y", "c"),
    ]


# -- seeding -------------------------------------------------------------------------------------
def test_same_seed_same_report_other_seed_other_p() -> None:
    base, run = noisy_pair()
    runs = {"a": result({"x": base}), "b": result({"x": run})}
    first = compare(runs, seed=123)
    again = compare(runs, seed=123)
    assert first == again
    assert json.dumps(first.to_dict()) == json.dumps(again.to_dict())
    assert str(first) == str(again)
    p = first.comparisons[0].p_value
    assert p is not None
    assert 0.001 < p < 0.9  # a case where the Monte Carlo noise shows
    other = compare(runs, seed=124)
    assert other.comparisons[0].p_value != p
    boot = [compare(runs, seed=s, test="bootstrap").comparisons[0].p_value for s in (123, 124)]
    assert boot[0] != boot[1]


def test_p_values_do_not_depend_on_the_other_metrics_and_runs() -> None:
    base, run = noisy_pair()
    extra_base, extra_run = dominated_pair(n=30)
    alone = compare({"a": result({"x": base}), "b": result({"x": run})}).comparisons[0]
    crowded = compare(
        {
            "z": result({"w": extra_base, "x": [1 - v for v in base]}),
            "a": result({"w": extra_base, "x": base}),
            "b": result({"w": extra_run, "x": run}),
        },
        baseline="a",
    ).comparison("b", "x")
    for field in ("p_value", "ci_low", "ci_high", "diff"):
        assert getattr(crowded, field) == getattr(alone, field)
    # Swapping baseline and run: the same stream, the same p-value and a mirrored interval.
    swapped = compare({"b": result({"x": run}), "a": result({"x": base})}, baseline="b")
    assert swapped.comparisons[0].p_value == alone.p_value


def test_blocks_do_not_change_any_number(monkeypatch: pytest.MonkeyPatch) -> None:
    base, run = noisy_pair(n=90)
    runs = {"a": result({"x": base}), "b": result({"x": run}), "c": result({"x": base[::-1]})}
    whole = compare(runs, n_resamples=777)
    monkeypatch.setattr(compare_module, "_BLOCK_CELLS", 1)  # one resample per block
    assert compare(runs, n_resamples=777) == whole


# -- alignment, duplicates, None -----------------------------------------------------------------
def test_queries_missing_from_a_run_are_reported_and_left_out() -> None:
    a = result({"x": [0.1, 0.2, 0.3, 0.4, 0.5]}, ids=["q1", "q2", "q3", "q4", "q5"])
    b = result({"x": [0.3, 0.4, 0.6, 0.9]}, ids=["q2", "q3", "q4", "q9"])
    with pytest.warns(ConventionWarning, match=r"comparing the 3 in every run") as caught:
        report = compare({"a": a, "b": b})
    message = str(caught[0].message)
    assert "a lacks 1 ('q9')" in message
    assert "b lacks 2 ('q1', 'q5')" in message
    assert report.query_ids == ["q2", "q3", "q4"]
    assert report.alignment.queries == 3
    assert not report.alignment.complete
    by_run = {r.run: r for r in report.alignment.runs}
    assert (by_run["a"].queries, by_run["a"].missing, by_run["a"].dropped) == (5, 1, 2)
    assert by_run["a"].missing_ids == ("q9",)
    assert by_run["a"].dropped_ids == ("q1", "q5")
    assert (by_run["b"].missing, by_run["b"].dropped, by_run["b"].dropped_ids) == (2, 1, ("q9",))
    row = report.row("x")
    assert row.means["a"] == pytest.approx((0.2 + 0.3 + 0.4) / 3)
    assert row.means["b"] == pytest.approx((0.3 + 0.4 + 0.6) / 3)
    assert "b lacks 2" in str(report)


def test_align_error_names_runs_and_ids() -> None:
    a = result({"x": [0.1, 0.2, 0.3]}, ids=["q1", "q2", "q3"])
    b = result({"x": [0.3, 0.4]}, ids=["q1", "q2"])
    with pytest.raises(InvalidArgumentError, match=r"b lacks 1 \('q3'\)"):
        compare({"a": a, "b": b}, align="error")
    c = result({"x": [0.3]}, ids=["other"])
    with pytest.raises(InvalidArgumentError, match="no query is in every run"):
        compare({"a": a, "c": c})


def test_ids_compare_as_strings() -> None:
    # A CSV round trip reads the id "7" back as the integer 7.
    a = result({"x": [0.1, 0.2]}, ids=["7", "8"])
    b = result({"x": [0.1, 0.9]}, ids=[7, 8])
    report = compare({"a": a, "b": b})
    assert report.alignment.complete
    assert report.query_ids == ["7", "8"]


def test_duplicate_ids_in_a_run_are_an_error() -> None:
    a = result({"x": [0.1, 0.2, 0.3]}, ids=["q1", "q2", "q1"])
    b = result({"x": [0.1, 0.2, 0.3]}, ids=["q1", "q2", "q3"])
    with pytest.raises(
        InvalidArgumentError, match=r"run 'a' has 1 duplicate query id\(s\) \('q1'\)"
    ):
        compare({"a": a, "b": b})


def test_none_values_are_left_out_for_every_run_and_counted() -> None:
    a = result({"x": [0.5, None, 1.0, 0.0, 0.5], "y": [1.0, 1.0, 1.0, 1.0, 1.0]})
    b = result({"x": [1.0, 0.5, 1.0, None, 0.0], "y": [1.0, 1.0, 1.0, 1.0, 0.0]})
    report = compare({"a": a, "b": b})
    row = report.row("x")
    assert (row.queries, row.excluded) == (3, 2)
    assert row.means == {"a": pytest.approx(2 / 3), "b": pytest.approx(2 / 3)}
    item = report.comparison("b", "x")
    assert (item.queries, item.excluded) == (3, 2)
    assert (item.wins, item.ties, item.losses) == (1, 1, 1)
    assert item.diff == 0.0
    assert report.row("y").excluded == 0
    assert report.values["x"]["a"] == [0.5, None, 1.0, 0.0, 0.5]
    assert "x: 2 queries left out" in str(report)


def test_a_metric_with_no_values_has_no_test() -> None:
    a = result({"x": [None, None], "y": [0.5, 1.0]})
    b = result({"x": [None, None], "y": [0.5, 0.0]})
    report = compare({"a": a, "b": b})
    item = report.comparison("b", "x")
    assert (item.p_value, item.p_adjusted, item.diff, item.ci_low) == (None, None, None, None)
    assert report.row("x").means == {"a": None, "b": None}
    assert report.row("x").best == ()
    # Not part of the Holm family: y's p-value is not multiplied by 2.
    assert report.comparison("b", "y").p_adjusted == report.comparison("b", "y").p_value
    assert "n/a" in str(report)


# -- loading, names ------------------------------------------------------------------------------
def _records(strategy: str, count: int = 40) -> list[dict[str, Any]]:
    rng = random.Random({"fixed-512": 1, "sentence": 2}[strategy])
    records = []
    for i in range(count):
        relevant = [f"c{i}-{j}" for j in range(rng.randint(1, 3))]
        noise = [f"n{i}-{j}" for j in range(6)]
        hit_rate = 0.1 if strategy == "fixed-512" else 0.95
        retrieved = [c for c in relevant if rng.random() < hit_rate] + noise
        rng.shuffle(retrieved)
        records.append({"id": f"q{i}", "retrieved_ids": retrieved, "relevant_ids": relevant})
    return records


def test_results_saved_as_jsonl_and_csv_load_and_compare(tmp_path: Path) -> None:
    results = {}
    for strategy in ("fixed-512", "sentence"):
        dataset = tmp_path / "runs" / f"{strategy}.jsonl"
        dataset.parent.mkdir(exist_ok=True)
        dataset.write_text("".join(json.dumps(r) + "\n" for r in _records(strategy)))
        results[strategy] = RetrievalEvaluator(
            str(dataset), [IDPrecisionRecallF1(), IDRankedRetrievalMetrics()], workers=1
        ).run(k=[1, 5])
    jsonl = results["fixed-512"].save(tmp_path / "out" / "a.jsonl")
    csv = results["sentence"].save(tmp_path / "out" / "b.csv")

    from_files = compare([jsonl, str(csv)], n_resamples=2000)
    in_memory = compare(results, n_resamples=2000)
    assert from_files.runs == ("fixed-512", "sentence")  # the stems of summary["source"]
    assert from_files == in_memory
    assert "ndcg@5" in from_files.metrics
    assert not any(m.startswith("micro_") for m in from_files.metrics)
    assert from_files.row("context_recall@5").means == {
        "fixed-512": pytest.approx(results["fixed-512"].aggregate["context_recall@5"]),
        "sentence": pytest.approx(results["sentence"].aggregate["context_recall@5"]),
    }
    assert from_files.comparison("sentence", "context_recall@5").significant


FIXTURE_RUNS = Path(__file__).resolve().parents[2] / "fixtures" / "runs"


@pytest.mark.parametrize("strategy", ["rouge-chunk(threshold=0.7)", "exact-chunk"])
def test_means_equal_the_aggregates_bit_for_bit(strategy: str) -> None:
    # One exact mean: a run's mean in the report is its aggregate, to the last bit (a float sum
    # divided by n differed in the last bit on several columns of the example runs).
    metrics = [PrecisionRecallF1(strategy), RankedRetrievalMetrics(strategy)]
    results = {
        name: RetrievalEvaluator(FIXTURE_RUNS / f"{name}.jsonl", metrics, workers=1).run(
            k=[1, 3, 5, 10]
        )
        for name in ("fixed-100", "sentence-3", "paragraph")
    }
    columns = [c for c in results["fixed-100"].aggregate if not c.startswith("micro_")]
    report = compare(results, metrics=columns, n_resamples=10)
    # Every column is compared, or listed as identical to one that is, in the columns' order.
    listed = [m for kept in report.metrics for m in (kept, *report.identical.get(kept, ()))]
    assert sorted(listed) == sorted(columns)
    assert list(report.metrics) == [c for c in columns if c in report.metrics]
    for column in columns:
        row = report.row(column)
        for name, result in results.items():
            assert row.means[name] == result.aggregate[column], (column, name)
    for item in report.comparisons:
        assert item.baseline_mean == results[item.baseline].aggregate[item.metric]
        assert item.run_mean == results[item.run].aggregate[item.metric]
        values = report.values[item.metric]
        diffs = [r - b for r, b in zip(values[item.run], values[item.baseline], strict=True)]
        exact = sum(Fraction(d) for d in diffs if abs(d) > 1e-12) / len(diffs)  # type: ignore[operator]
        assert item.diff == float(exact)


def test_names_from_sources_are_made_unique() -> None:
    runs = [
        result({"x": [0.1, 0.2]}, source="runs/fixed.jsonl"),
        result({"x": [0.1, 0.2]}, source="other/fixed.csv"),
        result({"x": [0.1, 0.2]}, source="list"),
        result({"x": [0.1, 0.2]}, source=""),
    ]
    report = compare(runs, n_resamples=10)
    assert report.runs == ("fixed", "fixed-2", "list", "run4")
    assert report.baseline == "fixed"


# -- renderings ----------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def report() -> ComparisonReport:
    base, better = dominated_pair()
    noisy_base, noisy = noisy_pair(n=50)
    runs = {
        "fixed_512": result({"context_recall@5": base, "ndcg@10": noisy_base}),
        "sentence|groups": result({"context_recall@5": better, "ndcg@10": noisy}),
        "semantic": result({"context_recall@5": base, "ndcg@10": noisy_base[::-1]}),
    }
    return compare(runs, n_resamples=2000)


def _parse_markdown_means(text: str, runs: tuple[str, ...]) -> dict[str, dict[str, float]]:
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("| metric |"))
    header = [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", lines[start])[1:-1]]
    assert header == ["metric", *runs, "best"]
    means: dict[str, dict[str, float]] = {}
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]]
        means[cells[0]] = {
            run: float(c.removesuffix("\\*")) for run, c in zip(runs, cells[1:-1], strict=True)
        }
    return means


def test_markdown_table_parses_back_to_the_means(report: ComparisonReport) -> None:
    text = report.to_markdown()
    parsed = _parse_markdown_means(text, report.runs)
    assert set(parsed) == set(report.metrics)
    for row in report.rows:
        for run in report.runs:
            assert parsed[row.metric][run] == round(row.means[run], 4)  # type: ignore[arg-type]
    assert "| context_recall@5 |" in text
    assert f"{report.row('context_recall@5').means['sentence|groups']:.4f}\\*" in text
    assert "### sentence\\|groups vs fixed_512" in text
    item = report.comparison("sentence|groups", "context_recall@5")
    assert f"{item.wins}/{item.ties}/{item.losses}" in text


def test_terminal_table(report: ComparisonReport) -> None:
    text = str(report)
    lines = text.splitlines()
    header = next(line for line in lines if line.startswith("metric"))
    assert header.split() == ["metric", "fixed_512", "sentence|groups", "semantic", "best"]
    row = next(line for line in lines if line.startswith("context_recall@5"))
    means = report.row("context_recall@5").means
    assert row.split() == [
        "context_recall@5",
        f"{means['fixed_512']:.4f}",
        f"{means['sentence|groups']:.4f}*",
        f"{means['semantic']:.4f}",
        "sentence|groups",
    ]
    assert "*: differs from fixed_512 with Holm-adjusted p < 0.05 over 4 comparisons" in text
    # One legend line says what every column of the comparison tables means.
    legend = next(line for line in lines if line.startswith("diff: "))
    for column in ("W/T/L: ", "n: queries compared", "p (Holm): p adjusted by Holm over 4"):
        assert column in legend
    assert "sentence|groups vs fixed_512" in text
    assert "semantic vs fixed_512" in text
    item = report.comparison("sentence|groups", "context_recall@5")
    assert f"{item.diff:+.4f}" in text
    assert f"[{item.ci_low:+.4f}, {item.ci_high:+.4f}]" in text


def test_latex(report: ComparisonReport) -> None:
    text = report.to_latex()
    assert r"Metric & fixed\_512 & sentence\textbar{}groups & semantic \\" in text
    means = report.row("context_recall@5").means
    best = rf"\textbf{{{means['sentence|groups']:.4f}}}$^{{*}}$"
    assert rf"context\_recall@5 & {means['fixed_512']:.4f} & {best} & " in text
    assert text.count(r"\begin{tabular}") == 2
    assert r"Holm-adjusted p \textless{} 0.05" in text


def test_dict_and_dataframe(report: ComparisonReport) -> None:
    data = json.loads(json.dumps(report.to_dict()))
    assert data["runs"] == list(report.runs)
    assert data["baseline"] == "fixed_512"
    assert [r["means"] for r in data["rows"]] == [row.means for row in report.rows]
    assert data["comparisons"][0]["p_value"] == report.comparisons[0].p_value
    assert data["alignment"]["queries"] == 50
    assert "values" not in data
    full = json.loads(json.dumps(report.to_dict(per_query=True)))
    assert full["values"]["ndcg@10"]["semantic"] == report.values["ndcg@10"]["semantic"]
    assert len(full["query_ids"]) == 50

    pytest.importorskip("pandas")
    means = report.to_pandas()
    assert list(means.columns) == list(report.runs)
    assert means.loc["ndcg@10", "semantic"] == report.row("ndcg@10").means["semantic"]
    comparisons = report.to_pandas("comparisons")
    assert len(comparisons) == 4
    assert set(comparisons["run"]) == {"sentence|groups", "semantic"}


# -- argument errors -----------------------------------------------------------------------------
_A = result({"x": [0.1, 0.2]})
_B = result({"x": [0.3, 0.2]})


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"test": "t-test"}, InvalidArgumentError, r"compare\(test='t-test'\): use one of"),
        ({"correction": "bonferroni"}, InvalidArgumentError, r"correction='bonferroni'"),
        ({"align": "union"}, InvalidArgumentError, r"align='union'"),
        ({"n_resamples": 0}, InvalidArgumentError, r"n_resamples=0"),
        ({"n_resamples": 10.5}, InvalidArgumentError, r"n_resamples=10.5"),
        ({"seed": -1}, InvalidArgumentError, r"seed=-1"),
        ({"seed": None}, InvalidArgumentError, r"seed=None"),
        ({"alpha": 1.5}, InvalidArgumentError, r"alpha=1.5"),
        ({"alpha": 0}, InvalidArgumentError, r"alpha=0"),
        ({"baseline": "c"}, InvalidArgumentError, r"baseline='c'.*runs: \['a', 'b'\]"),
        ({"metrics": "x"}, InvalidArgumentTypeError, r"metrics='x'.*list"),
        ({"metrics": []}, InvalidArgumentError, r"at least one metric"),
        ({"metrics": ["x", "x"]}, InvalidArgumentError, r"more than once"),
        ({"metrics": ["nope"]}, InvalidArgumentError, r"run 'a' has no column 'nope'.*\['x'\]"),
        ({"metrics": ["micro_x"]}, InvalidArgumentError, r"micro average.*'x'"),
    ],
)
def test_argument_errors(kwargs: dict[str, Any], error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message):
        compare({"a": _A, "b": _B}, **kwargs)


@pytest.mark.parametrize(
    ("runs", "error", "message"),
    [
        ("a.jsonl", InvalidArgumentTypeError, r"give two or more runs"),
        (_A, InvalidArgumentTypeError, r"give two or more runs"),
        ([_A], InvalidArgumentError, r"got 1 run\(s\)"),
        ([_A, 3], InvalidArgumentTypeError, r"runs\[1\] is int"),
        ({"a": _A, "": _B}, InvalidArgumentError, r"non-empty strings"),
        ([_A, "missing.jsonl"], InvalidArgumentError, r"'missing.jsonl', which does not exist"),
        (
            [_A, EvaluationResult([], {"x": None}, {"source": "b"})],
            InvalidArgumentError,
            r"run 'b' has no per-query rows.*keep_per_query=False",
        ),
        (
            [_A, result({"x": [0.1, "high"]}, source="b")],  # type: ignore[list-item]
            InvalidArgumentError,
            r"run 'b', query 'q1': x is 'high', not a number",
        ),
        (
            [_A, result({"x": [0.1, math.nan]}, source="b")],
            InvalidArgumentError,
            r"run 'b', query 'q1': x is nan",
        ),
        (
            [_A, EvaluationResult([{"x": 0.1}], {"x": 0.1}, {"source": "b"})],
            InvalidArgumentError,
            r"run 'b', per-query row 1 has no 'id'",
        ),
        (
            [result({"x": [0.1]}), result({"y": [0.1]})],
            InvalidArgumentError,
            r"share no metric column",
        ),
    ],
)
def test_run_errors(runs: Any, error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message):
        compare(runs)


def test_the_legend_tells_the_baseline_from_the_run_it_is_compared_with() -> None:
    # Found in a trial: a glob of run*.trec names the baseline "run", and the legend read
    # "mean of run - run per query".
    base, better = dominated_pair()
    report = compare({"run": result({"recall@5": base}), "run2": result({"recall@5": better})})
    legend = report.comparison_legend()
    assert legend.startswith(
        "diff: mean per query of (this run - baseline run), with its 95% bootstrap CI; "
    )
    assert "W/T/L: queries where this run is above / level with / below baseline run;" in legend


def test_the_columns_legend_says_how_each_family_of_columns_differs() -> None:
    values = [0.1 * (i % 7) for i in range(20)]
    runs = {
        name: result({"context_precision@5": values, "precision@5": [v / 2 for v in values]})
        for name in ("a", "b")
    }
    report = compare(runs, metrics="all", n_resamples=50)
    legend = report.columns_legend()
    assert legend is not None
    assert "context_*: of the chunks fed (at most K)" in legend
    assert "precision over K even when fewer were retrieved" in legend
    assert "span_*" not in legend
    assert legend in str(report)
    only_spans = compare(
        {n: result({"span_iou@5": values}) for n in ("a", "b")}, metrics="all", n_resamples=50
    )
    assert only_spans.columns_legend() == (
        "columns: span_*: over characters of the documents, the share of the context that is "
        "answer, of the answer in the context, and their intersection over union"
    )
