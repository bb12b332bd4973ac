"""The core's derived representations of a batch equal the dense arrays they stand for.

:class:`~ctxeval.metrics.core.BatchJudgments` keeps each record's hit ranks compacted left
(``hit_ranks``, ``relevant_ranks``) and its running DCG sums only as wide as the cut-offs asked
for; the measures read those instead of full-width running sums. Here: they hold the same
integers and the same floats, bit for bit, as the dense (B, N) forms.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxeval.judging import runs as run_arrays
from ctxeval.judging.batch import NEVER, BatchJudgments
from ctxeval.metrics.core import _batch_dcg, _dcg_so_far, _within


def batch(
    marks: np.ndarray[Any, Any], relevant: np.ndarray[Any, Any] | None = None
) -> BatchJudgments:
    count, width = marks.shape
    rng = np.random.default_rng(count * 31 + width)
    gains = np.where(marks, rng.choice([0.5, 1.0, 2.0, 3.0], size=marks.shape), 0.0)
    ideal = -np.sort(-gains, axis=1)
    n = np.full(count, width, dtype=np.int64)
    m = marks.sum(axis=1).astype(np.int64)
    return BatchJudgments(
        n=n,
        m=m,
        relevant=marks if relevant is None else relevant,
        hits=marks,
        gains=gains,
        first_match=np.full((count, 1), NEVER, dtype=np.int64),
        ideal=ideal,
        ideal_n=m,
    )


def dense_ranks(marks: np.ndarray[Any, Any], width: int) -> list[list[int]]:
    return [[*np.flatnonzero(row).tolist(), *[NEVER] * (width - int(row.sum()))] for row in marks]


marks_arrays = st.integers(0, 6).flatmap(
    lambda count: st.integers(0, 12).flatmap(
        lambda width: st.lists(
            st.lists(st.booleans(), min_size=width, max_size=width),
            min_size=count,
            max_size=count,
        ).map(lambda rows: np.array(rows, dtype=np.bool_).reshape(count, width))
    )
)


@settings(max_examples=200)
@given(marks=marks_arrays, other=st.randoms(use_true_random=False))
def test_compacted_ranks_equal_dense_marks(marks: np.ndarray[Any, Any], other: Any) -> None:
    relevant = marks | np.array(
        [[other.random() < 0.3 for _ in range(marks.shape[1])] for _ in range(len(marks))],
        dtype=np.bool_,
    ).reshape(marks.shape)
    j = batch(marks, relevant)
    for ranks, dense in ((j.hit_ranks, marks), (j.relevant_ranks, relevant)):
        assert ranks.dtype == np.int64
        assert ranks.shape[0] == len(marks)
        assert ranks.shape[1] == max(int(dense.sum(axis=1).max(initial=0)), 1)
        assert ranks.tolist() == dense_ranks(dense, ranks.shape[1])
        # The running count of marks at every cut, as the dense running sum has it.
        running = np.cumsum(dense, axis=1)
        for cut in range(dense.shape[1] + 1):
            cuts = np.full(len(dense), cut, dtype=np.int64)
            expected = running[:, cut - 1] if cut else np.zeros(len(dense), dtype=np.int64)
            assert _within(ranks, cuts).tolist() == expected.tolist()
    same = batch(marks)
    assert same.relevant_ranks is same.hit_ranks  # relevant is hits: one table


@settings(max_examples=100)
@given(marks=marks_arrays, widths=st.lists(st.integers(0, 14), min_size=1, max_size=4))
def test_running_dcg_to_any_width_is_the_full_sums_prefix(
    marks: np.ndarray[Any, Any], widths: list[int]
) -> None:
    j = batch(marks)
    full, ideal = _dcg_so_far(j.gains), _dcg_so_far(j.ideal)
    for width in widths:  # narrower and wider in any order: the cache widens as asked
        dcg = _batch_dcg(j, "dcg", j.gains, width)
        ideal_dcg = _batch_dcg(j, "ideal", j.ideal, width)
        for got, whole in ((dcg, full), (ideal_dcg, ideal)):
            assert got.shape == (len(marks), min(width, whole.shape[1]))
            assert got.tobytes() == whole[:, : got.shape[1]].tobytes()


DOC_IDS = ["d1", "d2", "d3", "d10", "a", "B", "9", "z"]
runs_and_qrels = st.tuples(
    st.lists(st.dictionaries(st.sampled_from(DOC_IDS), st.sampled_from([0.0, 0.5, 1.0, 2.0]))),
    st.lists(st.dictionaries(st.sampled_from(DOC_IDS), st.sampled_from([0, 1, 2, 3, 0.5]))),
).map(lambda pair: ({f"q{i}": r for i, r in enumerate(pair[0])}, dict(enumerate(pair[1]))))


@settings(max_examples=150)
@given(data=runs_and_qrels, relevance_level=st.sampled_from([1, 0.5, 2, 3]))
def test_run_batches_know_their_hit_ranks(
    data: tuple[dict[str, Any], dict[str, Any]], relevance_level: float
) -> None:
    """ID mode hands the core its first matches as the hit ranks: they are the ranks of the
    dense hits, in rank order (at every depth)."""
    run, qrels = data
    qids = [qid for qid in qrels if f"q{qid}" in run]
    judged = run_arrays.judge_run(
        [run[f"q{q}"] for q in qids],
        [qrels[q] for q in qids],
        ties="trec_eval",
        relevance_level=relevance_level,
    )
    assert judged is not None
    for depth in (None, 1, 3):
        for _, j in judged.batches(depth, cells=8):
            assert j.known_hit_ranks is not None
            ranks = j.hit_ranks
            assert ranks.tolist() == dense_ranks(j.hits, ranks.shape[1])
            assert ranks.shape[1] >= max(int(j.hits.sum(axis=1).max(initial=0)), 1)
