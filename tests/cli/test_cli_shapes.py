"""The CLI on the data shapes users export from other tools (issue 12, item 1)."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_helpers import ctxeval


def _pandas_csv(tmp_path: Path) -> Path:
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame(
        {
            "user_input": ["q one", "q two"],
            "retrieved_contexts": [["a b", "b c"], []],
            "reference_contexts": [["b c"], ["x"]],
        }
    )
    path = tmp_path / "ragas.csv"
    frame.to_csv(path, index=False)
    return path


def test_cli_reads_a_pandas_csv_and_says_so_once(tmp_path: Path) -> None:
    path = _pandas_csv(tmp_path)
    done = ctxeval("evaluate", path)
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("Python list literals") == 1
    assert "Traceback" not in done.stderr


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_text_key_on_the_cli(tmp_path: Path) -> None:
    data = _write(
        tmp_path / "docs.jsonl",
        '{"id": "q", "retrieved_context": [{"chunk": "a b"}], '
        '"ground_truth_context": [{"chunk": "a b"}]}\n',
    )
    refused = ctxeval("evaluate", data, "-m", "recall@1")
    assert refused.returncode == 2
    assert "--text-key NAME" in refused.stderr
    assert "fields=" not in refused.stderr
    done = ctxeval("evaluate", data, "-m", "recall@1", "--text-key", "chunk")
    assert done.returncode == 0, done.stderr
    assert "recall@1" in done.stdout
    assert "1.0000" in done.stdout
    other = _write(
        tmp_path / "other.jsonl",
        '{"id": "q", "retrieved_context": [{"page_content": "a b"}], '
        '"ground_truth_context": ["a b"]}\n',
    )
    strict = ctxeval("evaluate", other, "-m", "recall@1", "--text-key", "chunk")
    assert strict.returncode == 2
    assert "no text under 'chunk', the text key given (--text-key chunk)" in strict.stderr


def test_two_mode_records_say_the_cli_flag_and_convert_takes_mode(tmp_path: Path) -> None:
    data = _write(
        tmp_path / "both.jsonl",
        '{"id": "q", "retrieved_context": ["a"], "ground_truth_context": ["a"], '
        '"retrieved_ids": ["d1"], "relevant_ids": ["d1"]}\n',
    )
    for command in (["evaluate", data], ["convert", data, tmp_path / "out.jsonl"]):
        failed = ctxeval(*command)
        assert failed.returncode == 2
        assert "--mode text" in failed.stderr
        assert "fields=" not in failed.stderr
        assert "Traceback" not in failed.stderr
    done = ctxeval("convert", data, tmp_path / "out.jsonl", "--mode", "id")
    assert done.returncode == 0, done.stderr
    assert '"retrieved_ids": ["d1"]' in (tmp_path / "out.jsonl").read_text(encoding="utf-8")


def test_a_bad_record_says_the_on_error_flag(tmp_path: Path) -> None:
    data = _write(
        tmp_path / "bad.jsonl",
        '{"id": "q", "retrieved_context": ["a"], "ground_truth_context": ["a"]}\n'
        '{"id": "r", "retrieved_context": [3], "ground_truth_context": ["a"]}\n',
    )
    failed = ctxeval("evaluate", data)
    assert failed.returncode == 2
    assert "--on-error skip" in failed.stderr
    assert "on_error=" not in failed.stderr


def test_a_missing_field_says_the_field_flag(tmp_path: Path) -> None:
    data = _write(tmp_path / "m.jsonl", '{"id": "q", "chunks": ["a"], "gold": ["a"]}\n')
    failed = ctxeval("evaluate", data)
    assert failed.returncode == 2
    assert "--retrieved-field" in failed.stderr
    assert "fields=" not in failed.stderr


def test_a_trec_run_given_as_a_dataset_points_to_run_and_qrels(tmp_path: Path) -> None:
    run = _write(tmp_path / "run.trec", "q1 Q0 d1 1 2.5 tag\n")
    failed = ctxeval("evaluate", run)
    assert failed.returncode == 2
    assert "ctxeval evaluate --run RUN --qrels QRELS" in failed.stderr
    assert "from_trec" not in failed.stderr


def test_sentence_strategy_says_why_rank_metrics_are_absent(tmp_path: Path) -> None:
    data = _write(
        tmp_path / "s.jsonl",
        '{"id": "q", "retrieved_context": ["A b. C d."], "ground_truth_context": ["A b."]}\n',
    )
    done = ctxeval("evaluate", data, "--match", "rouge-sentence")
    assert done.returncode == 0, done.stderr
    assert "only the set metrics are shown" in done.stderr
    assert "ndcg" not in done.stdout


def test_punctuation_fragments_do_not_warn_but_other_scripts_do(tmp_path: Path) -> None:
    fragments = _write(
        tmp_path / "f.jsonl",
        '{"id": "q", "retrieved_context": ["A b c. )", "*"], "ground_truth_context": ["A b c."]}\n',
    )
    quiet = ctxeval("evaluate", fragments, "--match", "rouge-sentence")
    assert quiet.returncode == 0, quiet.stderr
    assert "no tokens" not in quiet.stderr
    greek = _write(
        tmp_path / "g.jsonl",
        '{"id": "q", "retrieved_context": ["\\u03b1\\u03b2\\u03b3"], '
        '"ground_truth_context": ["a b"]}\n',
    )
    warned = ctxeval("evaluate", greek)
    assert warned.returncode == 0, warned.stderr
    assert "produced no tokens" in warned.stderr
    assert "--tokenizer unicode" in warned.stderr


def test_evaluate_a_trec_run_against_a_llama_index_dataset(tmp_path: Path) -> None:
    qa = _write(
        tmp_path / "qa.json",
        '{"queries": {"q1": "A?"}, "corpus": {"n1": "A", "n2": "B"}, '
        '"relevant_docs": {"q1": ["n1"]}}',
    )
    run = _write(tmp_path / "run.trec", "q1 Q0 n2 1 2.0 t\nq1 Q0 n1 2 1.0 t extra\n")
    done = ctxeval("evaluate", "--run", run, "--qrels", qa, "-m", "recip_rank")
    assert done.returncode == 0, done.stderr
    assert "0.5000" in done.stdout
