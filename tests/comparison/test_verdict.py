"""The verdict (ctxeval.comparison.verdict): the best run at each cut-off, its paired tests against
every other run, Holm over the whole verdict; checked by hand, against compare() and by
properties."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxeval.comparison import compare, holm
from ctxeval.comparison.verdict import verdict
from ctxeval.foundation.errors import InvalidArgumentError
from ctxeval.results import EvaluationResult


def run(**columns: list[float | None]) -> EvaluationResult:
    """A result whose per-query rows hold ``columns`` (``recall_200w=[...]`` is the column
    ``recall@200w``), queries q0, q1, ..."""
    named = {name.replace("_at_", "@"): values for name, values in columns.items()}
    n = len(next(iter(named.values())))
    rows = [{"id": f"q{i}", **{c: v[i] for c, v in named.items()}} for i in range(n)]
    return EvaluationResult(per_query=rows, aggregate={}, summary={})


def test_a_hand_computed_verdict() -> None:
    # b is above a on q0 and q1 (+1 each), level on q2 and q3: mean difference 0.5.
    results = {
        "a": run(recall_at_5=[0.0, 0.0, 1.0, 1.0]),
        "b": run(recall_at_5=[1.0, 1.0, 1.0, 1.0]),
    }
    judged = verdict(results, "recall", ["5"], n_resamples=2000)
    (standing,) = judged.standings
    assert standing.family == ""
    assert standing.cutoff == "5"
    assert standing.column == "recall@5"
    assert standing.means == {"a": 0.5, "b": 1.0}
    assert standing.best == "b"
    assert standing.queries == 4
    (duel,) = standing.duels
    assert duel.run == "a"
    assert duel.diff == 0.5
    assert (duel.wins, duel.ties, duel.losses) == (2, 2, 0)
    # Two non-zero differences of the same sign: of the 4 sign patterns of (q0, q1), two,
    # (q0, q1) = (+1, +1) and (-1, -1) reach |sum| 2: the exact two-sided p is 2/4 (the Monte
    # Carlo estimate is near it).
    assert abs(duel.p_value - 0.5) < 0.05
    assert duel.p_adjusted == duel.p_value  # one comparison: Holm leaves it
    assert not duel.significant
    assert not standing.leads
    assert standing.sentence("recall") == (
        f"at 5: no run differs; b (recall 1.000) is highest but not above a (+0.500, "
        f"p = {duel.p_adjusted:.3f})"
    )
    assert judged.comparisons == 1
    assert judged.conclusion() is not None


def test_each_duel_is_compare_with_the_other_run_as_baseline_bit_for_bit() -> None:
    rng = np.random.default_rng(7)
    base = rng.integers(0, 5, size=40) / 4
    columns = {
        "fixed": base,
        "sentences": np.clip(base + rng.choice([0, 0.25, 0.5], size=40), 0, 1),
        "paragraphs": np.clip(base + rng.choice([-0.25, 0, 0.25], size=40), 0, 1),
    }
    results = {
        name: run(recall_at_200w=list(v), recall_at_800w=list(v[::-1]))
        for name, v in columns.items()
    }
    judged = verdict(results, "recall", ["200w", "800w"], n_resamples=3000, seed=4)
    raw = []
    for standing in judged.standings:
        for duel in standing.duels:
            report = compare(
                {duel.run: results[duel.run], standing.best: results[standing.best]},
                metrics=[standing.column],
                baseline=duel.run,
                n_resamples=3000,
                seed=4,
                correction="none",
                collapse=False,
            )
            (same,) = report.comparisons
            assert (same.diff, same.ci_low, same.ci_high, same.p_value) == (
                duel.diff,
                duel.ci_low,
                duel.ci_high,
                duel.p_value,
            )
            assert (same.wins, same.ties, same.losses) == (duel.wins, duel.ties, duel.losses)
            assert report.rows[0].means[standing.best] == standing.means[standing.best]
            raw.append(duel.p_value)
    # Holm over every duel of the verdict, both cut-offs together.
    adjusted = [d.p_adjusted for s in judged.standings for d in s.duels]
    assert adjusted == holm(raw)
    assert judged.comparisons == 4


def test_a_clear_leader_leads_and_says_so() -> None:
    low = [0.0] * 30
    high = [1.0] * 30
    results = {"a": run(r_at_1=low), "b": run(r_at_1=high), "c": run(r_at_1=low)}
    (standing,) = verdict(results, "r", ["1"]).standings
    assert standing.best == "b"
    assert standing.leads
    assert all(d.significant and d.diff == 1.0 and d.wins == 30 for d in standing.duels)
    assert standing.sentence("r").startswith("at 1: b (r 1.000) is best, above a (+1.000, p <")
    assert verdict(results, "r", ["1"]).conclusion() is None


def test_mixed_says_what_it_cannot_tell_apart_and_what_it_is_above() -> None:
    top = [1.0] * 30
    near = [1.0] * 29 + [0.0]
    results = {"top": run(r_at_1=top), "near": run(r_at_1=near), "low": run(r_at_1=[0.0] * 30)}
    (standing,) = verdict(results, "r", ["1"]).standings
    assert standing.best == "top"
    assert [d.run for d in standing.level] == ["near"]
    sentence = standing.sentence("r")
    assert sentence.startswith("at 1: top (r 1.000) is highest but does not differ from near (")
    assert "; it is above low (+1.000, p < 0.001)" in sentence


def test_many_runs_are_summarised_in_a_sentence() -> None:
    results = {"best": run(r_at_1=[1.0] * 30)}
    results.update({f"run{i}": run(r_at_1=[0.0] * 30) for i in range(5)})
    (standing,) = verdict(results, "r", ["1"]).standings
    assert standing.sentence("r").endswith("is best, above 5 others (+1.000 to +1.000, p < 0.001)")


def test_a_tie_goes_to_the_first_run_and_is_not_a_lead() -> None:
    same = [0.5, 1.0, 0.0]
    (standing,) = verdict({"x": run(r_at_1=same), "y": run(r_at_1=same)}, "r", ["1"]).standings
    assert standing.best == "x"
    (duel,) = standing.duels
    assert duel.diff == 0.0
    assert duel.ties == 3
    assert duel.p_value == 1.0
    assert not standing.leads
    # Found by a user's trial: it read "x is highest but not above y (+0.000, ...)".
    assert standing.sentence("r") == (
        "at 1: no run differs; x (r 0.500) ties for highest with y but not above y "
        "(+0.000, p = 1.000)"
    )


def test_many_runs_level_with_the_best_at_p_1_say_p_equals_1() -> None:
    # Found by a user's trial: "does not differ from 5 others (..., p >= 1.000)".
    same = [1.0, 0.0, 1.0, 0.0]
    results = {"best": run(r_at_1=[1.0, 1.0, 1.0, 0.0])}
    results.update({f"run{i}": run(r_at_1=same) for i in range(5)})
    (standing,) = verdict(results, "r", ["1"], n_resamples=100).standings
    assert all(d.p_adjusted == 1.0 for d in standing.duels)
    assert standing.sentence("r").endswith("5 others (+0.250 to +0.250, p = 1.000)")


def test_families_are_judged_apart_and_corrected_together() -> None:
    results = {
        "f+bm25": run(r_at_1=[1.0] * 20),
        "s+bm25": run(r_at_1=[0.0] * 20),
        "f+dense": run(r_at_1=[0.0] * 20),
        "s+dense": run(r_at_1=[1.0] * 10 + [0.0] * 10),
    }
    families = {
        "": {name: name for name in results},
        "bm25": {"f": "f+bm25", "s": "s+bm25"},
        "dense": {"f": "f+dense", "s": "s+dense"},
    }
    judged = verdict(results, "r", ["1"], families)
    assert judged.families() == ["", "bm25", "dense"]
    assert [s.best for s in judged.standings] == ["f+bm25", "f", "s"]
    assert judged.of("dense")[0].means == {"f": 0.0, "s": 0.5}
    assert judged.comparisons == 3 + 1 + 1
    raw = [d.p_value for s in judged.standings for d in s.duels]
    assert [d.p_adjusted for s in judged.standings for d in s.duels] == holm(raw)
    text = judged.to_text()
    assert "\n  with bm25:\n    at 1: f (r 1.000) is best, above s (+1.000" in text
    data = judged.to_dict()
    assert data["comparisons"] == 5
    assert data["correction"] == "holm"
    assert data["families"]["dense"]["1"]["best"] == "s"
    assert data["families"]["dense"]["1"]["against"][0]["run"] == "f"


def test_queries_without_a_value_are_left_out_of_their_family() -> None:
    results = {"a": run(r_at_1=[1.0, None, 0.0]), "b": run(r_at_1=[1.0, 1.0, 1.0])}
    (standing,) = verdict(results, "r", ["1"]).standings
    assert standing.queries == 2
    assert standing.means == {"a": 0.5, "b": 1.0}
    with pytest.raises(InvalidArgumentError, match="no query has a r@1 value in every run"):
        verdict({"a": run(r_at_1=[None]), "b": run(r_at_1=[1.0])}, "r", ["1"])


values = st.lists(st.sampled_from([0.0, 0.25, 0.5, 1 / 3, 1.0]), min_size=2, max_size=25)


@settings(max_examples=40, deadline=None)
@given(st.lists(values, min_size=2, max_size=4), st.integers(0, 3))
def test_properties(columns: list[list[float]], seed: int) -> None:
    n = min(len(c) for c in columns)
    results = {f"r{i}": run(m_at_3=c[:n], m_at_9=c[:n][::-1]) for i, c in enumerate(columns)}
    judged = verdict(results, "m", ["3", "9"], n_resamples=200, seed=seed)
    assert len(judged.standings) == 2
    assert judged.comparisons == 2 * (len(columns) - 1)
    for standing in judged.standings:
        top = standing.means[standing.best]
        assert top == max(standing.means.values())
        assert standing.best == next(r for r, m in standing.means.items() if m == top)
        assert len(standing.duels) == len(columns) - 1
        for duel in standing.duels:
            assert duel.diff >= -1e-12  # the mean of per-query differences, rounded
            assert math.isclose(duel.diff, top - standing.means[duel.run], abs_tol=1e-12)
            assert 0 < duel.p_value <= duel.p_adjusted <= 1
            assert duel.wins + duel.ties + duel.losses == n
            assert duel.significant == (duel.p_adjusted < 0.05)
    # The same inputs give the same verdict, to the last bit.
    assert verdict(results, "m", ["3", "9"], n_resamples=200, seed=seed) == judged


def test_the_table_has_a_row_per_duel_with_its_interval_and_counts() -> None:
    results = {
        "top": run(r_at_1=[1.0] * 30, r_at_5=[1.0] * 30),
        "low": run(r_at_1=[0.0] * 30, r_at_5=[1.0] * 29 + [0.0]),
    }
    judged = verdict(results, "r", ["1", "5"], n_resamples=5000)
    header, rows = judged.table()
    assert header == ["cut-off", "best", "other", "diff", "95% CI", "p (Holm)", "W/T/L", "n"]
    first, second = judged.standings[0].duels[0], judged.standings[1].duels[0]
    assert rows[0] == [
        "1", "top", "low", "+1.0000", "[+1.0000, +1.0000]", "< 0.001*", "30/0/0", "30"
    ]  # fmt: skip
    assert rows[1][:4] == ["5", "top", "low", f"{second.diff:+.4f}"]
    assert rows[1][5] == f"{second.p_adjusted:.3f}"  # not significant: no star
    assert rows[1][6] == "1/29/0"
    assert first.significant
    assert not second.significant
    text = judged.to_text()
    assert "  cut-off  best  other     diff" in text
