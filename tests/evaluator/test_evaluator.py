"""RetrievalEvaluator: aggregates, K sweeps, parallel order, bad records, saving."""

from __future__ import annotations

import json
import random
import subprocess
import sys
import textwrap
from pathlib import Path
from statistics import fmean
from typing import Any

import pytest

from ctxeval import (
    ConventionWarning,
    ExactChunkMatch,
    IDPrecisionRecallF1,
    IDRankedRetrievalMetrics,
    InvalidArgumentError,
    InvalidRecordError,
    NothingScoredWarning,
    PrecisionRecallF1,
    RankedRetrievalMetrics,
    RetrievalEvaluator,
    RougeChunkMatch,
)
from ctxeval.results import EvaluationResult

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"

# The chunking-evaluation article (shared/seeds/003): gold and retrieved chunk ids per query.
SEED_003 = [
    {"id": "q1", "retrieved_ids": ["A", "C"], "relevant_ids": ["A", "B"]},
    {"id": "q2", "retrieved_ids": ["D"], "relevant_ids": ["D"]},
    {"id": "q3", "retrieved_ids": ["F", "H", "I"], "relevant_ids": ["E", "F", "G"]},
]


def write_jsonl(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def synthetic_records(count: int, seed: int = 7) -> list[dict[str, Any]]:
    """Text records with real overlap: ground truth copied from, or unlike, the chunks."""
    rng = random.Random(seed)
    words = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu".split()

    def sentence() -> str:
        return " ".join(rng.choice(words) for _ in range(rng.randint(4, 10))) + "."

    records = []
    for i in range(count):
        chunks = [" ".join(sentence() for _ in range(3)) for _ in range(rng.randint(0, 8))]
        truth = [
            (rng.choice(chunks).split(".")[0] + ".")
            if chunks and rng.random() < 0.7
            else sentence()
            for _ in range(rng.randint(1, 3))
        ]
        records.append(
            {
                "id": f"q{i}",
                "question": f"question {i}",
                "retrieved_context": chunks,
                "ground_truth_context": truth,
            }
        )
    return records


METRICS = [PrecisionRecallF1(RougeChunkMatch()), RankedRetrievalMetrics(RougeChunkMatch())]


def test_macro_and_micro_of_the_chunking_article() -> None:
    result = RetrievalEvaluator(SEED_003, [IDPrecisionRecallF1()], workers=1).run()
    # Macro: mean of per-query precision (1/2, 1/1, 1/3); micro: summed TP 3 over TP+FP 6.
    assert result.aggregate["context_precision"] == pytest.approx((1 / 2 + 1 / 1 + 1 / 3) / 3)
    assert round(result.aggregate["context_precision"], 3) == 0.611
    assert result.aggregate["micro_context_precision"] == 3 / (3 + 3)
    assert result.aggregate["micro_context_recall"] == 3 / (3 + 3)
    assert result.summary["queries"] == 3
    assert [row["id"] for row in result.per_query] == ["q1", "q2", "q3"]


def test_aggregate_equals_mean_of_metric_calls() -> None:
    records = synthetic_records(60)
    result = RetrievalEvaluator(records, METRICS, workers=1).run()
    for metric in METRICS:
        per_record = [metric(**r) for r in records]
        for key in metric.keys:
            assert result.aggregate[key] == pytest.approx(fmean(s[key] for s in per_record))
            assert [row[key] for row in result.per_query] == [s[key] for s in per_record]


def test_k_sweep_equals_separate_runs() -> None:
    records = synthetic_records(40)
    sweep = RetrievalEvaluator(records, METRICS, workers=1).run(k=[1, 3, 5, 10])
    for k in (1, 3, 5, 10):
        single = RetrievalEvaluator(records, METRICS, workers=1).run(k=k)
        assert {key: v for key, v in sweep.aggregate.items() if key.endswith(f"@{k}")} == (
            single.aggregate
        )
        # and equals the metric objects built with that k
        for metric in (PrecisionRecallF1(RougeChunkMatch(), k=k),):
            expected = [metric(**r)["context_recall"] for r in records]
            assert [row[f"context_recall@{k}"] for row in sweep.per_query] == expected


def test_workers_give_the_same_rows_in_the_same_order() -> None:
    records = synthetic_records(300)
    one = RetrievalEvaluator(records, METRICS, workers=1, batch_size=16).run(k=[1, 5])
    two = RetrievalEvaluator(records, METRICS, workers=2, batch_size=16).run(k=[1, 5])
    assert two.per_query == one.per_query
    assert two.aggregate == one.aggregate
    assert two.summary == one.summary


def test_metadata_flows_to_per_query_rows() -> None:
    records = synthetic_records(3)
    result = RetrievalEvaluator(records, METRICS, workers=1).run(k=5)
    assert [row["question"] for row in result.per_query] == [
        "question 0",
        "question 1",
        "question 2",
    ]


def test_summary_counts() -> None:
    records = [
        {"id": "a", "retrieved_ids": ["x", "y", "z"], "relevant_ids": ["x", "q"]},
        {"id": "b", "retrieved_ids": ["x"], "relevant_ids": []},
        {"id": "c", "retrieved_ids": [], "relevant_ids": ["x"]},
    ]
    result = RetrievalEvaluator(records, [IDRankedRetrievalMetrics()], workers=1).run(k=[2, 10])
    s = result.summary
    assert s["queries"] == 3
    assert s["empty_ground_truth"] == 1
    assert s["mean_relevant_per_query"] == (2 + 0 + 1) / 3
    assert s["mean_k_used"] == {"2": (2 + 1 + 0) / 3, "10": (3 + 1 + 0) / 3}


def test_skip_policy_excludes_queries_from_means_and_counts_them() -> None:
    records = [
        {"id": "a", "retrieved_ids": ["x"], "relevant_ids": ["x"]},
        {"id": "b", "retrieved_ids": ["x"], "relevant_ids": []},
    ]
    metric = IDRankedRetrievalMetrics(empty_ground_truth="skip")
    result = RetrievalEvaluator(records, [metric], workers=1).run()
    assert result.aggregate["average_precision"] == 1.0
    assert result.summary["excluded_from_aggregates"] == 1
    assert result.per_query[1]["average_precision"] is None


def test_an_evaluation_that_scores_nothing_says_so() -> None:
    # Found by a user's trial: aggregates of None came back with no word of why.
    with pytest.warns(NothingScoredWarning, match=r"the dataset \(list\) has no records"):
        result = RetrievalEvaluator([], ["map"], workers=1).run()
    assert result.aggregate == {"average_precision": None}
    bad = [{"id": "x", "retrieved_ids": 3, "relevant_ids": ["a"]}]
    with pytest.warns(NothingScoredWarning, match=r"all 1 record\(s\).*record 'x'.*retrieved_ids"):
        RetrievalEvaluator(bad, ["map"], workers=1, on_error="skip").run()
    empty_truth = [{"id": "b", "retrieved_ids": ["x"], "relevant_ids": []}]
    metric = IDRankedRetrievalMetrics(empty_ground_truth="skip")
    with pytest.warns(NothingScoredWarning, match="no query counts in the aggregates"):
        RetrievalEvaluator(empty_truth, [metric], workers=1).run()


def test_an_evaluation_with_some_aggregate_does_not_warn() -> None:
    # The suite turns ctxeval's warnings into errors: a warning here fails the test (as in
    # test_skip_policy_excludes_queries_from_means_and_counts_them, one query of two left out).
    # Found by a review: one metric leaving out the only query, another scoring it 0, is no
    # "every aggregate is None".
    record = {"id": "b", "retrieved_ids": ["x"], "relevant_ids": []}
    mixed = [IDPrecisionRecallF1(empty_ground_truth="skip"), IDRankedRetrievalMetrics()]
    result = RetrievalEvaluator([record], mixed, workers=1).run()
    assert result.aggregate["context_recall"] is None
    assert result.aggregate["ndcg"] == 0.0


def test_bad_record_stops_the_run_with_its_line(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    good = synthetic_records(2)
    path.write_text(
        json.dumps(good[0])
        + "\n"
        + json.dumps(
            {"id": "bad", "retrieved_context": "one string", "ground_truth_context": ["x"]}
        )
        + "\n"
        + json.dumps(good[1])
        + "\n",
        encoding="utf-8",
    )
    with pytest.raises(InvalidRecordError) as error:
        RetrievalEvaluator(path, METRICS, workers=1).run()
    message = str(error.value)
    assert f"{path}:2" in message
    assert "retrieved_context" in message
    assert "on_error='skip'" in message


def test_skip_completes_and_lists_bad_records(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    good = synthetic_records(2)
    path.write_text(
        json.dumps(good[0]) + "\n{not json\n" + json.dumps(good[1]) + "\n", encoding="utf-8"
    )
    result = RetrievalEvaluator(path, METRICS, workers=1, on_error="skip").run()
    assert result.summary["queries"] == 2
    assert result.summary["skipped_records"] == 1
    assert result.skipped[0]["location"] == f"{path}:2"
    assert [row["id"] for row in result.per_query] == ["q0", "q1"]


def test_scoring_error_becomes_a_counted_bad_record() -> None:
    records = [
        {"id": "a", "retrieved_ids": ["x"], "relevant_ids": ["x"]},
        {"id": "b", "retrieved_ids": ["x"], "relevant_ids": []},
    ]
    metric = IDPrecisionRecallF1(empty_ground_truth="error")
    with pytest.raises(InvalidRecordError, match="no relevant ground truth"):
        RetrievalEvaluator(records, [metric], workers=1).run()
    result = RetrievalEvaluator(records, [metric], workers=1, on_error="skip").run()
    assert result.summary["skipped_records"] == 1
    assert result.skipped[0]["id"] == "b"


def test_mode_mismatch_is_a_configuration_error() -> None:
    with pytest.raises(InvalidArgumentError, match="chunk ids"):
        RetrievalEvaluator(SEED_003, METRICS, workers=1).run()


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"workers": 0}, "workers=0"),
        ({"workers": 1.5}, "workers=1.5"),
        ({"batch_size": 0}, "batch_size=0"),
        ({"on_error": "ignore"}, "on_error='ignore'"),
        ({"metrics": [7]}, "is not a ctxeval metric"),
        ({"metrics": []}, "at least one metric"),
    ],
)
def test_bad_arguments(kwargs: dict[str, Any], fragment: str) -> None:
    with pytest.raises((InvalidArgumentError, TypeError), match=fragment.replace("(", r"\(")):
        RetrievalEvaluator(SEED_003, **kwargs)


@pytest.mark.parametrize("k", [0, [1, 0], [], "5"])
def test_bad_k(k: Any) -> None:
    with pytest.raises(InvalidArgumentError):
        RetrievalEvaluator(SEED_003, [IDPrecisionRecallF1()], workers=1).run(k=k)


@pytest.mark.parametrize("suffix", [".jsonl", ".json", ".csv", ".parquet"])
def test_save_and_load_round_trip(tmp_path: Path, suffix: str) -> None:
    if suffix == ".parquet":
        pytest.importorskip("pyarrow")
    result = RetrievalEvaluator(synthetic_records(20), METRICS, workers=1).run(k=[1, 3])
    path = result.save(tmp_path / f"results{suffix}")
    loaded = EvaluationResult.load(path)
    assert loaded.aggregate == result.aggregate
    assert loaded.summary == json.loads(json.dumps(result.summary))
    assert loaded.per_query == result.per_query


def test_a_failed_save_leaves_no_file(tmp_path: Path) -> None:
    result = RetrievalEvaluator(SEED_003, [IDPrecisionRecallF1()], workers=1).run()
    result.per_query = [*result.per_query, {"id": "x", "bad": _Explodes()}]  # fails in the CSV
    target = tmp_path / "out.csv"
    with pytest.raises(RuntimeError):
        result.save(target)
    assert list(tmp_path.iterdir()) == []


class _Explodes:
    def __str__(self) -> str:
        raise RuntimeError("boom while writing")


def test_interrupted_save_leaves_no_partial_file(tmp_path: Path) -> None:
    # A child process saves a large result and is interrupted (SIGINT, as Ctrl-C) mid-write.
    target = tmp_path / "big.jsonl"
    script = textwrap.dedent(
        f"""
        import os, signal, sys
        from ctxeval.results import EvaluationResult
        rows = [{{"id": str(i), "text": "x" * 1000}} for i in range(200_000)]
        result = EvaluationResult(per_query=rows, aggregate={{}}, summary={{}})
        class Interrupting(list):
            def __iter__(self):
                for i, row in enumerate(list.__iter__(self)):
                    if i == 100_000:
                        os.kill(os.getpid(), signal.SIGINT)
                    yield row
        result.per_query = Interrupting(rows)
        result.save({str(target)!r})
        """
    )
    completed = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False
    )
    assert completed.returncode != 0
    assert "KeyboardInterrupt" in completed.stderr
    assert not target.exists()
    assert [p.name for p in tmp_path.iterdir()] == []


def test_to_pandas() -> None:
    pd = pytest.importorskip("pandas")
    result = RetrievalEvaluator(SEED_003, [IDPrecisionRecallF1()], workers=1).run()
    frame = result.to_pandas()
    assert isinstance(frame, pd.DataFrame)
    assert list(frame["id"]) == ["q1", "q2", "q3"]


def test_fixture_file_end_to_end() -> None:
    result = RetrievalEvaluator(
        FIXTURES / "records.jsonl",
        [PrecisionRecallF1(RougeChunkMatch(tokenizer="unicode"))],
        workers=1,
    ).run(k=[1, 3])
    assert result.summary["queries"] == 8
    assert 0 <= result.aggregate["context_recall@3"] <= 1


def test_exact_text_mode_equals_id_mode_over_a_dataset() -> None:
    text = [
        {
            "id": r["id"],
            "retrieved_context": r["retrieved_ids"],
            "ground_truth_context": r["relevant_ids"],
        }
        for r in SEED_003
    ]
    by_text = RetrievalEvaluator(
        text,
        [PrecisionRecallF1(ExactChunkMatch()), RankedRetrievalMetrics(ExactChunkMatch())],
        workers=1,
    ).run(k=[1, 2, 3])
    by_id = RetrievalEvaluator(
        SEED_003, [IDPrecisionRecallF1(), IDRankedRetrievalMetrics()], workers=1
    ).run(k=[1, 2, 3])
    assert by_text.aggregate == by_id.aggregate


def test_streamed_output_equals_saved_result(tmp_path: Path) -> None:
    records = synthetic_records(50)
    kept = RetrievalEvaluator(records, METRICS, workers=1).run(k=[1, 5])
    streamed = RetrievalEvaluator(records, METRICS, workers=1, keep_per_query=False).run(
        k=[1, 5], output=tmp_path / "out.jsonl"
    )
    assert streamed.per_query == []  # nothing kept in memory
    assert streamed.aggregate == kept.aggregate
    loaded = EvaluationResult.load(tmp_path / "out.jsonl")
    assert loaded.per_query == kept.per_query
    assert loaded.aggregate == kept.aggregate
    assert [p.name for p in tmp_path.iterdir()] == ["out.jsonl"]


def test_a_failed_streamed_run_leaves_no_output(tmp_path: Path) -> None:
    records = [*synthetic_records(5), {"id": "bad", "retrieved_context": None}]
    with pytest.raises(InvalidRecordError):
        RetrievalEvaluator(records, METRICS, workers=1).run(output=tmp_path / "out.jsonl")
    assert list(tmp_path.iterdir()) == []


def test_streamed_output_must_be_jsonl(tmp_path: Path) -> None:
    with pytest.raises(InvalidArgumentError, match=r"\.jsonl"):
        RetrievalEvaluator(SEED_003, [IDPrecisionRecallF1()]).run(output=tmp_path / "x.csv")


def test_saved_files_have_ordinary_permissions(tmp_path: Path) -> None:
    import os
    import stat

    result = RetrievalEvaluator(SEED_003, [IDPrecisionRecallF1()], workers=1).run()
    path = result.save(tmp_path / "r.jsonl")
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~umask


def test_from_trec_files_equals_pytrec_eval(tmp_path: Path) -> None:
    import pytrec_eval

    run = {"q1": {"d1": 2.5, "d2": 1.5, "d3": 1.5}, "q2": {"d4": 1.0}}
    qrels = {"q1": {"d2": 1, "d3": 2}, "q2": {"d9": 1}, "q3": {"d1": 1}}
    run_path, qrels_path = tmp_path / "run.trec", tmp_path / "qrels.txt"
    run_path.write_text(
        "".join(f"{q} Q0 {d} 0 {s} t\n" for q, docs in run.items() for d, s in docs.items())
    )
    qrels_path.write_text(
        "".join(f"{q} 0 {d} {g}\n" for q, docs in qrels.items() for d, g in docs.items())
    )
    # The same warnings as evaluate_run: q3 is judged but not retrieved (scored 0), and q1 ties
    # d2 and d3 (grades 1 and 2).
    with pytest.warns(ConventionWarning) as caught:
        result = RetrievalEvaluator.from_trec(
            run_path, qrels_path, [IDRankedRetrievalMetrics()], workers=1
        ).run()
    messages = [str(w.message) for w in caught]
    assert any("scored 0" in m and "first: 'q3'" in m for m in messages), messages
    assert any("equal scores but different grades" in m for m in messages), messages
    expected = pytrec_eval.RelevanceEvaluator(qrels, {"map", "ndcg"}).evaluate(run)
    # pytrec_eval leaves q3 (judged, not retrieved) out; ctxeval scores it 0 (trec_eval -c).
    assert result.summary["queries"] == 3
    assert result.summary["source"] == str(run_path)
    assert result.aggregate["average_precision"] == pytest.approx(
        (expected["q1"]["map"] + expected["q2"]["map"] + 0.0) / 3, rel=1e-15
    )
    assert [row["id"] for row in result.per_query] == ["q1", "q2", "q3"]


def test_matching_that_no_metric_would_use_is_refused() -> None:
    # Found by a user's trial: matching= was ignored, without a word, next to metric objects
    # that carry their own strategy.
    data = [{"id": "a", "retrieved_context": ["x y"], "ground_truth_context": ["x y"]}]
    own = PrecisionRecallF1(ExactChunkMatch())
    with pytest.raises(InvalidArgumentError, match=r"matching='rouge-chunk\(threshold=0.7\)'\)"):
        RetrievalEvaluator(data, [own], matching=RougeChunkMatch())
    ids = [{"id": "a", "retrieved_ids": ["x"], "relevant_ids": ["x"]}]
    with pytest.raises(InvalidArgumentError, match="no metric uses it"):  # found by a review
        RetrievalEvaluator(ids, [IDRankedRetrievalMetrics()], matching="exact-chunk")
    # The same strategy in both (as the CLI builds them), or a named measure that uses it: fine.
    same = RetrievalEvaluator(data, [PrecisionRecallF1(RougeChunkMatch())], matching="rouge-chunk")
    named = RetrievalEvaluator(data, [own, "ndcg"], matching=RougeChunkMatch(), workers=1)
    assert same.run().aggregate["context_recall"] == 1.0
    assert named.run().aggregate["ndcg"] == 1.0
