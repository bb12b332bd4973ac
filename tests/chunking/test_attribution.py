"""Miss attribution, hand-computed on a constructed straddling excerpt."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from ctxeval.chunking import Chunk, ChunkingWarning, compare_chunkers
from ctxeval.chunking.attribution import intersection_length, merge_spans, span_length

DOC = "alpha bravo charlie delta echo foxtrot golf hotel"
# fixed(words=4): chunk 0 = "alpha bravo charlie delta" [0:25], chunk 1 = "echo foxtrot golf
# hotel" [26:49].
QUESTIONS = [
    # "charlie delta echo foxtrot" straddles the boundary: each chunk holds 2 of its 4 words,
    # ROUGE-L recall 0.5 < 0.7, so no chunk matches it (unreachable). "echo foxtrot golf" lies
    # inside chunk 1 (reachable), which the retriever ranks second.
    {"id": "q1", "question": "q1", "excerpts": ["charlie delta echo foxtrot", "echo foxtrot golf"]},
    {"id": "q2", "question": "q2", "excerpts": [{"doc": "a", "start": 0, "end": 11}]},
]


def first_then_second(question: str, chunks: Sequence[Chunk]) -> list[int]:
    return list(range(len(chunks)))


@pytest.fixture(scope="module")
def outcome():
    # DOC is 8 words: w8 leaves it whole, and the harness says so.
    with pytest.warns(ChunkingWarning, match=r"chunker w8 .*1 of 1 documents \(100%\)"):
        return compare_chunkers(
            {"a": DOC},
            QUESTIONS,
            {"w4": "fixed(words=4)", "w8": "fixed(words=8)"},
            retriever=first_then_second,
            k=[1, 2],
            n_resamples=100,
        )


def test_three_shares_at_each_k(outcome) -> None:
    att = outcome.runs["w4"].attribution
    # k=1: q1 -> found 0, missed 1/2, unreachable 1/2; q2 -> found 1 (macro over questions).
    assert (att.found[1], att.missed[1], att.unreachable[1]) == (0.5, 0.25, 0.25)
    # k=2: q1 -> found 1/2, unreachable 1/2; q2 -> found 1.
    assert (att.found[2], att.missed[2], att.unreachable[2]) == (0.75, 0.0, 0.25)
    assert att.ceiling == 0.75
    q1 = att.questions[0]
    assert q1.reachable == (False, True)
    assert q1.first_found == (None, 2)
    assert q1.status(1) == ["unreachable", "missed"]


def test_span_ceiling_is_the_iou_of_the_chunks_touching_the_excerpts(outcome) -> None:
    # q1: G = [12, 43) (31 chars); C = [0, 25) + [26, 49) (48); G & C = 13 + 17 = 30;
    # IoU = 30 / (31 + 48 - 30). q2: G = [0, 11), C = [0, 25): 11 / 25.
    assert outcome.runs["w4"].attribution.span_ceiling == pytest.approx((30 / 49 + 11 / 25) / 2)


def test_one_big_chunk_reaches_everything(outcome) -> None:
    att = outcome.runs["w8"].attribution
    assert att.ceiling == 1.0
    assert att.found[1] == 1.0
    assert att.unreachable[1] == 0.0


def test_found_share_is_context_recall(outcome) -> None:
    for run in outcome.runs.values():
        for k in (1, 2):
            assert run.attribution.found[k] == run.result.aggregate[f"context_recall@{k}"]


def test_interval_helpers() -> None:
    merged = merge_spans([(5, 9), (0, 3), (2, 4), (9, 10), (7, 7)])
    assert merged == [(0, 4), (5, 10)]
    assert span_length(merged) == 9
    assert intersection_length(merged, [(3, 6), (8, 20)]) == 1 + 1 + 2
