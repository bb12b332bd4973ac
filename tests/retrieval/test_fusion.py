"""Fusion as ranx defines it: every fused score equals ranx's ``fuse`` on the same runs, to the
last bit (RRF, weighted RRF, min-max and z-score weighted sums), and the fused ranking is best
first with ties by position."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from ranx import Run, fuse
from ranx.fusion import rrf

from ctxeval.foundation.errors import InvalidArgumentError
from ctxeval.retrieval.fusion import fuse as ctxeval_fuse
from ctxeval.retrieval.fusion import fused_scores


@st.composite
def rankings(draw: st.DrawFn) -> list[tuple[int, float | None]]:
    """A ranked list of distinct positions with distinct scores, best first."""
    positions = draw(st.lists(st.integers(0, 30), min_size=1, max_size=12, unique=True))
    scores = draw(
        st.lists(
            st.floats(-50, 50, allow_nan=False).map(lambda x: round(x, 3)),
            min_size=len(positions),
            max_size=len(positions),
            unique=True,
        )
    )
    return list(zip(positions, sorted(scores, reverse=True), strict=True))


def ranx_run(ranking: list[tuple[int, float | None]]) -> Run:
    return Run({"q": {str(p): float(s) for p, s in ranking}})  # type: ignore[arg-type]


def ranx_scores(run: Run) -> dict[int, float]:
    return {int(doc): score for doc, score in run.to_dict()["q"].items()}


two_or_three = st.lists(rankings(), min_size=2, max_size=3)


@settings(max_examples=60, deadline=None)
@given(runs=two_or_three, k=st.sampled_from([1, 60]))
def test_rrf_is_ranx_rrf(runs: list, k: int) -> None:
    expected = fuse([ranx_run(r) for r in runs], norm=None, method="rrf", params={"k": k})
    assert fused_scores(runs, "rrf", k=k) == ranx_scores(expected)


@settings(max_examples=60, deadline=None)
@given(runs=two_or_three, data=st.data())
def test_weighted_rrf_is_ranx_wsum_of_rrf(runs: list, data: st.DataObject) -> None:
    weights = data.draw(st.lists(st.sampled_from([0.2, 0.5, 1.0, 3.0]), min_size=len(runs),
                                 max_size=len(runs)))  # fmt: skip
    each = [rrf([ranx_run(r)], k=60) for r in runs]  # each run's own RRF scores
    expected = fuse(each, norm=None, method="wsum", params={"weights": weights})
    assert fused_scores(runs, "rrf", weights=weights) == ranx_scores(expected)


@settings(max_examples=60, deadline=None)
@given(runs=two_or_three, data=st.data())
@pytest.mark.parametrize(("method", "norm"), [("min-max", "min-max"), ("z-score", "zmuv")])
def test_score_fusion_is_ranx_wsum(runs: list, data: st.DataObject, method: str, norm: str) -> None:
    weights = data.draw(st.lists(st.sampled_from([0.3, 0.5, 1.0, 2.0]), min_size=len(runs),
                                 max_size=len(runs)))  # fmt: skip
    expected = fuse(
        [ranx_run(r) for r in runs], norm=norm, method="wsum", params={"weights": weights}
    )
    assert fused_scores(runs, method, weights=weights) == ranx_scores(expected)  # type: ignore[arg-type]


def test_hand_computed_rrf_and_ties_by_position() -> None:
    first = [(3, 9.0), (1, 8.0)]
    second = [(1, 0.9), (3, 0.8), (7, 0.1)]
    # 3: 1/61 + 1/62, 1: 1/62 + 1/61 (a tie: the lower position first), 7: 1/63
    assert ctxeval_fuse([first, second]) == [
        (1, 1 / 62 + 1 / 61),
        (3, 1 / 61 + 1 / 62),
        (7, 1 / 63),
    ]
    assert ctxeval_fuse([first, second])[0][1] == ctxeval_fuse([first, second])[1][1]


def test_score_fusion_needs_scores() -> None:
    with pytest.raises(InvalidArgumentError, match="min-max fusion needs the retrievers' scores"):
        fused_scores([[(0, None)], [(1, 2.0)]], "min-max")
    assert fused_scores([[(0, None)], [(1, 2.0)]], "rrf") == {0: 1 / 61, 1: 1 / 61}


def test_fused_retrievers_by_spec_and_in_the_harness() -> None:
    from ctxeval.chunking import ChunkingWarning, compare_chunkers
    from ctxeval.chunking.retrieval import FusedRetriever, as_retriever

    fused = as_retriever("rrf('bm25', 'dense', k=30)")
    assert isinstance(fused, FusedRetriever)
    assert fused.spec == "rrf('bm25(k1=1.5, b=0.75)', \"dense(embedder='wordllama')\", k=30)"
    assert as_retriever("wsum('bm25', 'dense', norm='z-score')").spec.startswith("wsum(")
    with pytest.raises(InvalidArgumentError, match="fuse two or more"):
        as_retriever("rrf('bm25')")
    with pytest.raises(InvalidArgumentError, match="wsum\\(norm='max'\\)"):
        as_retriever("wsum('bm25', 'dense', norm='max')")

    def last_first(question: str, chunks: list) -> list[int]:  # a user's retriever
        return list(range(len(chunks)))[::-1]

    corpus = {"a": "Cats sleep all day. Dogs bark at night. Fish swim.", "b": "Banks lend."}
    questions = [{"question": "When do dogs bark?", "excerpts": ["Dogs bark at night."]}]
    # Here sentences are 4 words, so both chunkers make the same chunks, and the harness says so.
    with pytest.warns(ChunkingWarning, match="chunkers s and w make the same chunks"):
        result = compare_chunkers(
            corpus,
            questions,
            {"s": "sentences(n=1)", "w": "fixed(words=4)"},
            retriever=FusedRetriever("bm25", last_first, weights=[2.0, 1.0]),
            k=[1, 2],
        )
    record = result.runs["s"].records[0]
    assert record["retrieved_context"][0] == "Dogs bark at night."  # BM25's pick, weighted up
    # Beside the fused ranking, where each component put each chunk retrieved (rank from 1).
    places = record["retrieved_components"]
    assert next(iter(places)) == "bm25"
    assert places["bm25"]["ranks"][0] == 1
    users = places[list(places)[1]]
    assert users["ranks"][0] is None  # last_first's top 2 are the last two chunks
    assert users["ranks"][1:] in ([1], [2])  # the other chunk fed is one of them
    assert len(places["bm25"]["ranks"]) == len(record["retrieved_context"])
