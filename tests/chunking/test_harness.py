"""The harness end to end on the fixtures: outputs, re-evaluation, retrievers, bad inputs."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path

import pytest

from ctxeval.chunking import (
    HARNESS_METRICS,
    BM25Retriever,
    Chunk,
    ChunkingWarning,
    compare_chunkers,
    retrieval_depth,
)
from ctxeval.evaluator import RetrievalEvaluator
from ctxeval.foundation.errors import CtxevalError, InvalidArgumentError
from ctxeval.results import EvaluationResult

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "fixtures" / "corpus"
QUESTIONS = ROOT / "fixtures" / "questions.jsonl"
CHUNKERS = {
    "fixed": "fixed(words=100, overlap=10)",
    "sentences": "sentences(n=3)",
    "paragraphs": "paragraphs(max_words=100)",
}
KS = [1, 5, 10]
TWO = {"w": "fixed(words=2)", "v": "fixed(words=1)"}


@pytest.fixture(scope="module")
def harness(tmp_path_factory: pytest.TempPathFactory):
    out = tmp_path_factory.mktemp("harness") / "out"
    outcome = compare_chunkers(CORPUS, QUESTIONS, CHUNKERS, k=KS, out_dir=out, n_resamples=500)
    return outcome, out


def test_out_dir_holds_a_run_a_result_per_chunker_and_the_summary(harness) -> None:
    outcome, out = harness
    expected = {f"{n}{s}" for n in CHUNKERS for s in (".jsonl", ".result.jsonl")}
    assert {p.name for p in out.iterdir()} == expected | {"summary.json"}
    summary = json.loads((out / "summary.json").read_text())
    assert list(summary["chunkers"]) == list(CHUNKERS)
    stats = summary["chunkers"]["sentences"]["statistics"]
    assert stats["chunks"] == len(outcome.runs["sentences"].chunks)
    assert stats["words"]["min"] <= stats["words"]["q1"] <= stats["words"]["median"]
    assert stats["words"]["median"] <= stats["words"]["q3"] <= stats["words"]["max"]
    assert set(summary["chunkers"]["fixed"]["attribution"]) >= {"found", "ceiling_recall"}


def test_run_files_follow_the_questions_and_carry_spans(harness) -> None:
    _outcome, out = harness
    ids = [json.loads(line)["id"] for line in QUESTIONS.read_text().splitlines()]
    corpus = {p.stem: p.read_text(encoding="utf-8") for p in CORPUS.glob("*.txt")}
    records = [json.loads(line) for line in (out / "fixed.jsonl").read_text().splitlines()]
    assert [r["id"] for r in records] == ids
    for record in records:
        assert len(record["retrieved_context"]) <= max(KS)
        for text, span, cid in zip(
            record["retrieved_context"],
            record["retrieved_spans"],
            record["retrieved_chunk_ids"],
            strict=True,
        ):
            assert corpus[span["doc"]][span["start"] : span["end"]] == text
            assert cid.startswith(f"fixed:{span['doc']}:")
        for text, span in zip(
            record["ground_truth_context"], record["ground_truth_spans"], strict=True
        ):
            assert corpus[span["doc"]][span["start"] : span["end"]] == text
        scores = record["retrieved_scores"]
        assert scores == sorted(scores, reverse=True)
        assert all(s > 0 for s in scores)


def test_reevaluating_a_run_file_gives_the_saved_result_to_the_last_bit(harness) -> None:
    outcome, out = harness
    run = out / "paragraphs.jsonl"
    again = RetrievalEvaluator(run, list(HARNESS_METRICS), workers=1).run(k=KS)
    saved = EvaluationResult.load(out / "paragraphs.result.jsonl")
    assert again.aggregate == saved.aggregate == outcome.runs["paragraphs"].result.aggregate
    assert again.summary["strategy"] == saved.summary["strategy"] == "rouge-chunk(threshold=0.7)"


def test_comparison_covers_every_metric_at_the_largest_k(harness) -> None:
    outcome, _ = harness
    assert outcome.comparison.runs == tuple(CHUNKERS)
    # Every metric at the largest k, those identical on these queries tested once (the first).
    comparison = outcome.comparison
    shown = list(comparison.metrics)
    copies = [name for equal in comparison.identical.values() for name in equal]
    assert sorted(shown + copies) == sorted(f"{m}@10" for m in HARNESS_METRICS)
    for metric in copies:
        assert comparison.row(metric) is not None


def test_context_grows_with_k_and_attribution_adds_up(harness) -> None:
    outcome, _ = harness
    for run in outcome.runs.values():
        words = [run.context[k]["words"] for k in KS]
        assert words == sorted(words)
        for k in KS:
            att = run.attribution
            assert att.found[k] + att.missed[k] + att.unreachable[k] == pytest.approx(1.0)
            assert att.found[k] <= att.ceiling


def test_a_live_retriever_callable(tmp_path: Path) -> None:
    seen: list[int] = []

    def reversed_order(question: str, chunks: Sequence[Chunk]) -> list[tuple[int, float]]:
        seen.append(id(chunks))
        return [(i, 1.0 / (n + 1)) for n, i in enumerate(reversed(range(len(chunks))))][:4]

    with pytest.warns(ChunkingWarning, match="chunker s3 "):  # three sentences: one chunk
        outcome = compare_chunkers(
            {"a": "one two three. four five six. seven eight nine."},
            [{"id": "x", "question": "nine", "excerpts": ["seven eight nine."]}],
            {"s1": "sentences(n=1)", "s3": "sentences(n=3)"},
            retriever=reversed_order,
            k=[1, 3],
            n_resamples=10,
        )
    record = outcome.runs["s1"].records[0]
    assert record["retrieved_context"] == ["seven eight nine.", "four five six.", "one two three."]
    assert record["retrieved_scores"] == [1.0, 0.5, 1 / 3]
    assert outcome.runs["s1"].result.aggregate["hit_rate@1"] == 1.0
    assert len(set(seen)) == 2  # one chunk list per chunking, the same for every question


def test_bm25_breaks_ties_by_chunk_order_and_drops_zero_scores() -> None:
    chunks = [Chunk("a", 0, 1, t) for t in ("cat dog", "bird", "cat dog", "dog cat")]
    search = BM25Retriever().index(chunks)
    ranking = search("cat", 10)
    assert [i for i, _ in ranking] == [0, 2, 3]
    assert search("zebra", 10) == []
    assert retrieval_depth([5, 1, 10]) == 10


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"chunkers": {"x": "fixd(words=10)", "y": "fixed(words=2)"}}, "did you mean 'fixed'"),
        (
            {"chunkers": {"bad name": "fixed(words=10)", "y": "fixed(words=2)"}},
            "chunker name 'bad name'",
        ),
        (
            {"chunkers": {"w": "fixed(words=2)"}},
            "a comparison needs at least two runs: two chunkers",
        ),
        ({"chunkers": {"w": "fixed(words=2)", "w.result": "fixed(words=3)"}}, "'.result'"),
        ({"retriever": "bm52"}, "unknown retriever 'bm52'"),
        ({"retriever": lambda q, c: ["x"]}, "return chunk positions"),
        ({"retriever": lambda q, c: [99]}, "out of range"),
        ({"retriever": lambda q, c: [(0, "x")]}, "a score must be a number"),
        (
            {"chunkers": {"mine": lambda text: 5, "y": "fixed(words=2)"}},
            "returned int for document 'a'; return a list",
        ),
        ({"k": []}, "cut-offs"),
        ({"matching": "rouge-sentence"}, "chunk strategy"),
        ({"primary": "recal"}, "compare_chunkers(primary=...): unknown metric 'recal'"),
        ({"primary": "context_recall@1"}, "without a cut-off, primary='context_recall'"),
        ({"primary": 3}, "primary='context_recall'; got int"),
    ],
)
def test_bad_arguments(options: dict, message: str) -> None:
    arguments = {"chunkers": {"w": "fixed(words=2)", "v": "fixed(words=1)"}, "k": [1], **options}
    chunkers = arguments.pop("chunkers")
    with pytest.raises(CtxevalError, match=re.escape(message)):
        compare_chunkers(
            {"a": "some words here"},
            [{"question": "q", "excerpts": ["words"]}],
            chunkers,
            **arguments,
        )


def test_a_non_empty_out_dir_is_refused_without_overwrite(tmp_path: Path) -> None:
    (tmp_path / "keep.txt").write_text("mine")
    args = ({"a": "some words here"}, [{"question": "q", "excerpts": ["words"]}])
    with pytest.raises(CtxevalError, match=r"is not empty.*overwrite=True"):
        compare_chunkers(*args, TWO, k=[1], out_dir=tmp_path)
    compare_chunkers(*args, TWO, k=[1], out_dir=tmp_path, overwrite=True)
    assert (tmp_path / "keep.txt").read_text() == "mine"
    assert (tmp_path / "w.jsonl").is_file()


def test_overwrite_takes_away_the_earlier_runs_files_it_does_not_replace(tmp_path: Path) -> None:
    # An earlier harness run's files would sit beside this run's as if they were its own (and
    # a glob such as runs/*.result.jsonl would mix them in): they go once the new files are
    # written; files the harness did not write stay.
    args = ({"a": "some words here"}, [{"question": "q", "excerpts": ["words"]}])
    (tmp_path / "keep.txt").write_text("mine")
    compare_chunkers(*args, TWO, k=[1], out_dir=tmp_path, overwrite=True)
    assert {p.name for p in tmp_path.glob("*.jsonl")} == {
        "w.jsonl",
        "w.result.jsonl",
        "v.jsonl",
        "v.result.jsonl",
    }
    other = {"w": "fixed(words=2)", "u": "fixed(words=1, overlap=0)"}
    compare_chunkers(*args, other, k=[1], out_dir=tmp_path, overwrite=True)
    assert {p.name for p in tmp_path.glob("*.jsonl")} == {
        "w.jsonl",
        "w.result.jsonl",
        "u.jsonl",
        "u.result.jsonl",
    }
    compare_chunkers(*args, other, retriever=None, out_dir=tmp_path, overwrite=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["keep.txt", "summary.json"]


def test_overwrite_takes_nothing_away_without_a_harness_summary(tmp_path: Path) -> None:
    (tmp_path / "summary.json").write_text('{"chunkers": "not a mapping of runs"}')
    (tmp_path / "x.jsonl").write_text("{}\n")
    args = ({"a": "some words here"}, [{"question": "q", "excerpts": ["words"]}])
    compare_chunkers(*args, TWO, k=[1], out_dir=tmp_path, overwrite=True)
    assert (tmp_path / "x.jsonl").read_text() == "{}\n"


def test_an_output_may_not_replace_an_input(tmp_path: Path) -> None:
    questions = tmp_path / "w.jsonl"
    questions.write_text(json.dumps({"question": "q", "excerpts": ["words"]}) + "\n")
    with pytest.raises(CtxevalError, match=r"would replace an input|is also the input"):
        compare_chunkers(
            {"a": "some words here"},
            questions,
            TWO,
            k=[1],
            out_dir=tmp_path,
            overwrite=True,
        )
    assert questions.read_text().startswith("{")


def test_a_grid_of_chunkers_and_retrievers() -> None:
    # Each chunker is chunked once and retrieved by every retriever; runs are CHUNKER+RETRIEVER;
    # what is unreachable (and the ceiling) is the chunker's, the same under every retriever.
    corpus = {
        "pets": "Cats sleep most of the day. Dogs bark at night. Fish swim in tanks all day.",
        "money": "Banks lend money at interest. Markets set the price of shares every day.",
    }
    questions = [
        {"question": "When do dogs bark?", "excerpts": ["Dogs bark at night."]},
        {"question": "Who lends money?", "excerpts": ["Banks lend money at interest."]},
        {"question": "Where do fish swim?", "excerpts": ["Fish swim in tanks all day."]},
    ]

    def last_first(question: str, chunks: list) -> list[int]:
        return list(range(len(chunks)))[::-1]

    result = compare_chunkers(
        corpus,
        questions,
        {"s": "sentences(n=1)", "w": "fixed(words=4)"},
        retriever={"bm25": "bm25", "rev": last_first},
        k=[1, 2],
        n_resamples=100,
    )
    assert list(result.runs) == ["s+bm25", "s+rev", "w+bm25", "w+rev"]
    assert result.retriever.startswith("bm25=bm25(k1=1.5, b=0.75), rev=")
    summary = result.summary()["chunkers"]
    assert summary["w+rev"]["chunker"] == "w"
    assert summary["w+rev"]["retriever"].endswith("last_first")
    for chunker in ("s", "w"):
        bm25, rev = result.runs[f"{chunker}+bm25"], result.runs[f"{chunker}+rev"]
        assert bm25.chunks == rev.chunks
        assert bm25.attribution.ceiling == rev.attribution.ceiling
        assert bm25.attribution.unreachable == rev.attribution.unreachable
    assert result.runs["s+bm25"].attribution.found[1] > result.runs["s+rev"].attribution.found[1]
    # The verdict judges every pair, then the chunkers under each retriever.
    judged = result.verdict
    assert judged.families() == ["", "bm25", "rev"]
    assert judged.of("rev")[0].means == {
        "s": result.runs["s+rev"].result.aggregate["context_recall@1"],
        "w": result.runs["w+rev"].result.aggregate["context_recall@1"],
    }
    assert result.summary()["verdict"] == judged.to_dict()
    # The text tables: runs are pairs; the ceilings are the chunkers', once each (found by a new
    # user's trial: every pair was a row, under the heading "chunker").
    text = result.attribution_text()
    assert "  chunker+retriever " in text
    ceilings = text.split("Ceilings")[1].splitlines()[1:]
    assert [line.split()[0] for line in ceilings] == ["chunker", "s", "w"]


def test_the_verdict_at_every_cut_off(harness) -> None:
    outcome, out = harness
    judged = outcome.verdict
    assert judged.primary == "context_recall"
    assert judged.families() == [""]
    assert [s.cutoff for s in judged.standings] == ["1", "5", "10"]
    for standing in judged.standings:
        means = {
            name: run.result.aggregate[f"context_recall@{standing.cutoff}"]
            for name, run in outcome.runs.items()
        }
        assert standing.means == means  # the aggregate's mean, to the last bit
        assert standing.best == max(means, key=means.__getitem__)
    saved = json.loads((out / "summary.json").read_text())
    assert next(iter(saved)) == "verdict"
    assert saved["verdict"] == json.loads(json.dumps(judged.to_dict()))
    # The smallest cut-off at which each chunking finds 95% of its ceiling, in the summary.
    for name, run in outcome.runs.items():
        reached = run.attribution.reach()
        first = next(
            (k for k in KS if run.attribution.found[k] >= 0.95 * run.attribution.ceiling), None
        )
        assert reached == first
        assert saved["chunkers"][name]["attribution"]["reaches_95_percent_of_ceiling_at"] == (
            None if first is None else str(first)
        )


def test_a_span_measure_as_the_primary() -> None:
    corpus = {"d": "Cats sleep all day. Dogs bark at night. Fish swim in tanks."}
    questions = [
        {"question": "dogs bark", "excerpts": ["Dogs bark at night."]},
        {"question": "fish swim", "excerpts": ["Fish swim in tanks."]},
    ]
    outcome = compare_chunkers(corpus, questions, TWO, k=[1], primary="span_iou", n_resamples=50)
    (standing,) = outcome.verdict.standings
    assert standing.column == "span_iou@1"
    assert standing.means == {
        name: run.result.aggregate["span_iou@1"] for name, run in outcome.runs.items()
    }


def test_retriever_names_in_a_grid_are_checked() -> None:
    with pytest.raises(InvalidArgumentError, match="retriever name 'a\\+b'"):
        compare_chunkers({"d": "x"}, [], {"a": "fixed(words=1)", "b": "fixed(words=2)"},
                         retriever={"a+b": "bm25"})  # fmt: skip


def test_each_text_is_embedded_once_across_the_grid() -> None:
    import numpy as np

    from ctxeval.chunking import FusedRetriever
    from ctxeval.retrieval.dense import DenseRetriever

    class Letters:
        name = "letters"

        def __init__(self) -> None:
            self.asked: list[str] = []

        def __call__(self, texts: list[str]) -> np.ndarray:
            self.asked.extend(texts)
            return np.array([[t.count(c) + 0.5 for c in "abcdefghij"] for t in texts])

    first, second = Letters(), Letters()
    corpus = {"d": "Cats sleep all day. Dogs bark at night. Fish swim in tanks."}
    questions = [{"question": "When do dogs bark?", "excerpts": ["Dogs bark at night."]}]
    compare_chunkers(
        corpus, questions, {"s": "sentences(n=1)", "w": "fixed(words=3)"},
        retriever={"dense": DenseRetriever(first),
                   "rrf": FusedRetriever("bm25", DenseRetriever(second))},
        k=[1, 2], n_resamples=50,
    )  # fmt: skip
    assert second.asked == []  # the fused retriever's dense part is the same retriever
    assert len(first.asked) == len(set(first.asked))  # and each text was embedded once


def test_one_chunker_is_enough_for_two_retrievers_or_none() -> None:
    # Under two retrievers one chunker makes two runs to compare; without retrieval, one
    # chunker's statistics and ceilings are the answer. Under one retriever it is refused above.
    corpus = {"a": "the fox jumps over the lazy dog. " * 8}
    questions = [{"id": "q", "question": "fox", "excerpts": ["the fox jumps"]}]
    retrievers = {"first": lambda q, c: [0, 1], "last": lambda q, c: [len(c) - 1]}
    compared = compare_chunkers(
        corpus, questions, {"w": "fixed(words=8)"}, retriever=retrievers, k=[1], n_resamples=10
    )
    assert sorted(compared.runs) == ["w+first", "w+last"]
    alone = compare_chunkers(corpus, questions, {"w": "fixed(words=8)"}, retriever=None)
    assert list(alone.ceilings) == ["w"]
    assert alone.ceilings["w"].attribution.ceiling == 1.0
