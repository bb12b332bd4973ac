"""``ndcg(ties='average')`` on the command line (issue 12, item 3): ``evaluate --run/--qrels``
takes the run's scores, a dataset its ``retrieved_scores`` (or ``--scores-field``), with the
same numbers as the Python API; a list not ranked by its scores is named in CLI words."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

from cli_helpers import ctxeval

from ctxeval import RetrievalEvaluator, evaluate_run
from ctxeval.io.trec import read_qrels, read_trec_run

AVERAGE = "ndcg(ties='average')@10"


def _aggregate(*args: str | Path) -> dict[str, float]:
    done = ctxeval("evaluate", *args, "--format", "json")
    assert done.returncode == 0, done.stderr
    aggregate: dict[str, float] = json.loads(done.stdout)["aggregate"]
    return aggregate


def test_run_and_qrels_average_over_tied_scores(tmp_path: Path) -> None:
    run_path, qrels_path = tmp_path / "run.trec", tmp_path / "qrels.txt"
    run_path.write_text(
        "q1 Q0 a 1 1.0 t\nq1 Q0 b 2 1.0 t\nq1 Q0 c 3 0.5 t\nq1 Q0 d 4 0.5 t\n"
        "q2 Q0 e 1 2.0 t\nq2 Q0 f 2 2.0 t\nq2 Q0 g 3 2.0 t\n",
        encoding="utf-8",
    )
    qrels_path.write_text("q1 0 a 1\nq1 0 c 2\nq2 0 g 1\nq2 0 e 0\n", encoding="utf-8")
    got = _aggregate("--run", run_path, "--qrels", qrels_path, "-m", AVERAGE, "-m", "ndcg@10")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = evaluate_run(read_trec_run(run_path), read_qrels(qrels_path), [AVERAGE])
    assert got[AVERAGE] == sum(q[AVERAGE] for q in expected.values()) / 2
    assert got[AVERAGE] != got["ndcg@10"]  # the ties change the value


def _dataset(path: Path, scores_field: str = "retrieved_scores") -> Path:
    rows = [
        {
            "id": "q1",
            "retrieved_context": ["alpha", "beta", "gamma", "delta"],
            scores_field: [0.9, 0.9, 0.4, 0.4],
            "ground_truth_context": ["alpha", {"text": "gamma", "grade": 2}],
        },
        {
            "id": "q2",
            "retrieved_context": ["delta", "alpha"],
            scores_field: [0.3, 0.3],
            "ground_truth_context": ["alpha"],
        },
    ]
    path.write_text("\n".join(map(json.dumps, rows)) + "\n", encoding="utf-8")
    return path


def test_a_dataset_with_scores_equals_the_api(tmp_path: Path) -> None:
    path = _dataset(tmp_path / "records.jsonl")
    got = _aggregate(path, "--match", "exact-chunk", "-m", AVERAGE, "-m", "ndcg@10")
    api = RetrievalEvaluator(path, [AVERAGE, "ndcg@10"], matching="exact-chunk").run()
    assert got == api.aggregate
    assert got[AVERAGE] != got["ndcg@10"]
    named = _dataset(tmp_path / "named.jsonl", "similarity")
    again = _aggregate(
        named, "--match", "exact-chunk", "-m", AVERAGE, "-m", "ndcg@10", "--scores-field",
        "similarity",
    )  # fmt: skip
    assert again == got


def test_a_list_not_ranked_by_its_scores_is_named(tmp_path: Path) -> None:
    path = tmp_path / "records.jsonl"
    row = {"id": "q", "retrieved_ids": ["a", "b"], "retrieved_scores": [0.2, 0.8], "qrels": ["a"]}
    good = {**row, "id": "r", "retrieved_scores": [0.8, 0.2]}
    path.write_text(json.dumps(row) + "\n" + json.dumps(good) + "\n", encoding="utf-8")
    done = ctxeval("evaluate", path, "-m", AVERAGE)
    assert done.returncode == 2
    assert f"{path}:1 (record 'q'): retrieved_scores[1] = 0.8 is higher than" in done.stderr
    assert "Traceback" not in done.stderr
    skipped = ctxeval("evaluate", path, "-m", AVERAGE, "--on-error", "skip")
    assert skipped.returncode == 0, skipped.stderr
    assert "1 skipped" in skipped.stdout + skipped.stderr
