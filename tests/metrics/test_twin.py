"""Every measure x every option x cut-off: the vectorised core equals the reference exactly.

Driven by the registry (``MEASURES``): a measure or option added there is tested here without a
new test. Judgments come from every producer the core is fed by: relevance matrices judged in
bulk (text chunks), per-record judgments stacked (ID mode, sentence units), and whole runs. Span
measures take spans instead of judgments: random intervals in a few documents, in characters and
in token units, whole cut-offs and partial ones.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxeval.cutoffs.budgets import WHOLE_LIST
from ctxeval.cutoffs.cutoff import Budget
from ctxeval.judging.batch import judge_batch, stack_judgments
from ctxeval.judging.judgments import Judgments, judge_ids, judge_matrix
from ctxeval.judging.runs import judge_run
from ctxeval.judging.spans import RecordSpans
from ctxeval.metrics.measures import MEASURES, Measure, make_measure
from ctxeval.metrics.runs import rank_documents
from ctxeval.metrics.spans.core import SpanBatch, span_totals
from ctxeval.metrics.spans.reference import span_counts
from ctxeval.records.values import Span

KS = (None, 1, 2, 3, 5, 10)


def _variants() -> list[Measure]:
    out = []
    for name, definition in MEASURES.items():
        # credit and unit are judging options: how judgments or spans are made, tested there.
        options = {o: v for o, v in definition.options.items() if o not in ("credit", "unit")}
        for values in itertools.product(*options.values()):
            chosen = dict(zip(options, values, strict=True))
            if chosen.get("ap_credit") == "any" and chosen.get("ap_denominator") != "hits":
                continue  # rejected by the parser: AP would exceed 1
            out.append(make_measure(name, **chosen))
    return out


ALL_VARIANTS = _variants()
VARIANTS = [m for m in ALL_VARIANTS if m.definition.family != "span"]
SPAN_VARIANTS = [m for m in ALL_VARIANTS if m.definition.family == "span"]


def test_every_registered_measure_and_option_is_covered() -> None:
    names = {m.name for m in ALL_VARIANTS}
    assert names == set(MEASURES)
    # Each option value of each measure appears in some variant.
    for name, definition in MEASURES.items():
        for option, allowed in definition.options.items():
            if option in ("credit", "unit"):
                continue
            seen = {m.option(option) for m in ALL_VARIANTS if m.name == name}
            assert seen == set(allowed), (name, option)


def _assert_twins(judged: list[Judgments], batch: object) -> None:
    for measure in VARIANTS:
        for k in KS:
            at = measure.at(k)
            core = at.values(batch).tolist()  # type: ignore[arg-type]
            reference = [at(j) for j in judged]
            assert core == reference, str(at)  # exact: == on floats
    _assert_budget_twins(judged, batch)


BUDGET = Budget("w", 300)


def _assert_budget_twins(judged: list[Judgments], batch: object) -> None:
    """At a budget each record has its own cut-off: a count of chunks within its list (0
    included: a budget smaller than the first chunk), or the whole list where every chunk fits;
    the core takes them as a vector, the reference one by one."""
    lengths = [j.n if j.chunk_ends is None else len(j.chunk_ends) for j in judged]
    for shift in (0, 1, 2, 3):
        chunks: list[int | None] = [
            None if (i + shift) % 4 == 3 else min((i + shift) % 4, n) for i, n in enumerate(lengths)
        ]
        vector = np.array([WHOLE_LIST if c is None else c for c in chunks], dtype=np.int64)
        for measure in VARIANTS:
            at = measure.at(BUDGET)
            core = at.values(batch, vector).tolist()  # type: ignore[arg-type]
            reference = [at(j, c) for j, c in zip(judged, chunks, strict=True)]
            assert core == reference, (str(at), chunks)


matrices = st.integers(0, 7).flatmap(
    lambda n: st.integers(0, 4).flatmap(
        lambda m: st.tuples(
            st.lists(st.lists(st.booleans(), min_size=m, max_size=m), min_size=n, max_size=n),
            st.one_of(
                st.none(),
                st.lists(st.sampled_from([0.5, 1.0, 2.0, 3.0]), min_size=m, max_size=m),
            ),
            st.just((n, m)),
        )
    )
)


@settings(max_examples=150, deadline=None)
@given(
    records=st.lists(matrices, min_size=1, max_size=6),
    credit=st.sampled_from(["matching", "first_come"]),
)
def test_text_batches(
    records: list[tuple[list[list[bool]], list[float] | None, tuple[int, int]]], credit: str
) -> None:
    arrays = [np.array(rows, dtype=bool).reshape(shape) for rows, _, shape in records]
    grades = [g for _, g, _ in records]
    judged = [judge_matrix(a, g, credit=credit) for a, g in zip(arrays, grades, strict=True)]  # type: ignore[arg-type]
    _assert_twins(judged, judge_batch(arrays, grades, credit))  # type: ignore[arg-type]
    _assert_twins(judged, stack_judgments(judged))


@settings(max_examples=100, deadline=None)
@given(
    records=st.lists(
        st.tuples(
            st.lists(st.sampled_from("abcdefg"), max_size=9),
            st.dictionaries(
                st.sampled_from("abcdefg"), st.sampled_from([0, 1, 2, 0.5, 3]), max_size=5
            ),
        ),
        min_size=1,
        max_size=6,
    ),
    level=st.sampled_from([1, 2]),
)
def test_id_records(records: list[tuple[list[str], dict[str, float]]], level: float) -> None:
    judged = [judge_ids(r, q, relevance_level=level) for r, q in records]
    _assert_twins(judged, stack_judgments(judged))


@settings(max_examples=100, deadline=None)
@given(
    records=st.lists(
        st.tuples(
            st.lists(st.integers(0, 3), max_size=5),  # sentences per chunk
            st.integers(0, 3),  # distinct ground-truth units
            st.randoms(use_true_random=False),
        ),
        min_size=1,
        max_size=5,
    )
)
def test_sentence_units(records: list[tuple[list[int], int, object]]) -> None:
    judged = []
    for per_chunk, m, rng in records:
        ends = list(itertools.accumulate(per_chunk))
        n = ends[-1] if ends else 0
        matrix = np.array([[rng.random() < 0.4 for _ in range(m)] for _ in range(n)], dtype=bool)  # type: ignore[attr-defined]
        judged.append(judge_matrix(matrix.reshape(n, m), chunk_ends=ends))
    _assert_twins(judged, stack_judgments(judged))


@settings(max_examples=60, deadline=None)
@given(
    run=st.lists(
        st.dictionaries(
            st.sampled_from("abcdefgh"), st.sampled_from([0.0, 0.5, 1.0, 2.0]), max_size=8
        ),
        min_size=1,
        max_size=5,
    ),
    qrels=st.lists(
        st.dictionaries(st.sampled_from("abcdefgh"), st.sampled_from([0, 1, 2]), max_size=5),
        min_size=5,
        max_size=5,
    ),
    depth=st.sampled_from([None, 2, 4]),
    cells=st.sampled_from([1, 7, 1 << 22]),
)
def test_whole_runs(
    run: list[dict[str, float]], qrels: list[dict[str, int]], depth: int | None, cells: int
) -> None:
    qrels = qrels[: len(run)]
    judged_run = judge_run(run, qrels, ties="trec_eval", relevance_level=1)
    assert judged_run is not None
    judged = []
    for scored, grades in zip(run, qrels, strict=True):
        ranked = rank_documents(scored)
        judged.append(judge_ids(ranked if depth is None else ranked[:depth], grades))
    blocks = list(judged_run.batches(depth, cells=cells))
    assert [b.start for b, _ in blocks] == sorted(b.start for b, _ in blocks)
    for measure in VARIANTS:
        for k in KS:
            if depth is not None and (k is None or k > depth):
                continue
            at = measure.at(k)
            core = [v for _, batch in blocks for v in at.values(batch).tolist()]
            assert core == [at(j) for j in judged], str(at)


def test_hand_computed_new_measures() -> None:
    # hits@k counts hits; f1@k is ranx's 2 * ((P@k * R@k) / (P@k + R@k)) with P over k.
    j = judge_ids(["a", "x", "b", "y"], {"a": 1, "b": 1, "c": 1})
    assert make_measure("hits", 3)(j) == 2.0
    p, r = 2 / 3, 2 / 3
    assert make_measure("f1", 3)(j) == 2 * ((p * r) / (p + r))
    assert make_measure("f1", 10)(j) == 2 * (((2 / 10) * (2 / 3)) / (2 / 10 + 2 / 3))
    assert make_measure("hits", 1)(j) == 1.0
    assert math.isclose(make_measure("f1", 1)(j), 2 * ((1 * (1 / 3)) / (1 + 1 / 3)))


@pytest.mark.parametrize(
    ("spec", "canonical"),
    [
        ("map", "average_precision"),
        ("AP@5", "average_precision@5"),
        ("map_cut_5", "average_precision@5"),
        ("mrr", "reciprocal_rank"),
        ("recip_rank", "reciprocal_rank"),
        ("P_5", "precision@5"),
        ("p@5", "precision@5"),
        ("success_1", "hit_rate@1"),
        ("hits@3", "hits@3"),
        ("f1@3", "f1@3"),
        ("ndcg_burges@10", "ndcg(gain='exponential')@10"),
        ("ndcg(gain='linear')@10", "ndcg@10"),
        ("map(ap_denominator='hits')", "average_precision(ap_denominator='hits')"),
    ],
)
def test_one_canonical_spec_per_measure(spec: str, canonical: str) -> None:
    from ctxeval.metrics.measures import parse_measure

    assert str(parse_measure(spec)) == canonical


# -- span measures ------------------------------------------------------------------------------

TOKEN_STARTS = {"a": frozenset(range(0, 40, 3)), "b": frozenset({0, 1, 7, 8, 20, 33})}

spans = st.one_of(
    st.none(),
    st.builds(
        lambda doc, start, width: Span(doc, start, start + width),
        st.sampled_from("ab"),
        st.integers(0, 30),
        st.integers(0, 12),
    ),
)
span_records = st.builds(
    lambda retrieved, truth, missing: (tuple(retrieved), tuple(truth), missing),
    st.lists(spans, max_size=7),
    st.lists(spans, max_size=4),
    st.integers(0, 3),
)


@settings(max_examples=150, deadline=None)
@given(
    records=st.lists(span_records, min_size=1, max_size=6),
    tokens=st.booleans(),
    cuts=st.lists(st.tuples(st.integers(0, 8), st.integers(0, 6)), min_size=6, max_size=6),
)
def test_span_batches(
    records: list[tuple[tuple[Span | None, ...], tuple[Span | None, ...], int]],
    tokens: bool,
    cuts: list[tuple[int, int]],
) -> None:
    starts = TOKEN_STARTS if tokens else None
    spans_of = [RecordSpans(r, g, missing, starts) for r, g, missing in records]
    batch = SpanBatch.from_records(spans_of)
    for measure in SPAN_VARIANTS:
        for k in KS:
            at = measure.at(k)
            assert at.values(batch).tolist() == [at(s) for s in spans_of], str(at)
    # Any per-record cut: whole items kept, then characters of the next one.
    kept = np.array([c[0] for c in cuts[: len(records)]], dtype=np.int64)
    extra = np.array([c[1] for c in cuts[: len(records)]], dtype=np.int64)
    for convention in ("union", "chroma"):
        core = span_totals(batch, kept, extra, convention).tolist()
        reference = [
            list(span_counts(s, int(n), int(e), convention))  # type: ignore[arg-type]
            for s, n, e in zip(spans_of, kept, extra, strict=True)
        ]
        assert core == reference, convention
