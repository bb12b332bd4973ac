"""The data shapes users export from other tools (issue 12, item 1): Python-literal CSV cells,
ragas, LangChain, llama-index, Hugging Face datasets, TREC runs with extra columns."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest

from ctxeval import RetrievalEvaluator
from ctxeval.foundation.errors import (
    InvalidArgumentError,
    InvalidArgumentTypeError,
    PythonLiteralWarning,
)
from ctxeval.io.formats import python_literal
from ctxeval.io.readers import read_records
from ctxeval.records.model import Record, RecordError


def _records(source: object, **kwargs: object) -> list[Record | RecordError]:
    return list(read_records(source, **kwargs))  # type: ignore[arg-type]


# -- CSV cells written by pandas' to_csv: Python literals --------------------------------------


def _pandas_csv(tmp_path: Path) -> Path:
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame(
        {
            "user_input": ["q one", "q two"],
            "retrieved_contexts": [['it\'s "quoted"', "b c"], []],
            "reference_contexts": [["b c"], ["x"]],
        }
    )
    path = tmp_path / "ragas.csv"
    frame.to_csv(path, index=False)
    return path


def test_pandas_list_cells_are_read_as_literals_and_said_once(tmp_path: Path) -> None:
    path = _pandas_csv(tmp_path)
    assert "['it" in path.read_text(encoding="utf-8")  # what pandas writes: a Python repr
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        items = _records(path)
    assert [type(i) for i in items] == [Record, Record]
    first = items[0]
    assert isinstance(first, Record)
    assert first.retrieved == ['it\'s "quoted"', "b c"]
    assert first.ground_truth == ["b c"]
    said = [w for w in caught if issubclass(w.category, PythonLiteralWarning)]
    assert len(said) == 1
    assert "ragas.csv:row 1" in str(said[0].message)
    # shown as pointing at the data, not at ctxeval's code: the file and its line (after the
    # header)
    assert (said[0].filename, said[0].lineno) == (str(path), 2)
    assert "retrieved_contexts" in str(said[0].message)


def test_literal_csv_scores_like_json_csv(tmp_path: Path) -> None:
    literal = _pandas_csv(tmp_path)
    json_csv = tmp_path / "json.csv"
    json_csv.write_text(
        "user_input,retrieved_contexts,reference_contexts\n"
        '"q one","[""it\'s \\""quoted\\"""", ""b c""]","[""b c""]"\n'
        '"q two","[]","[""x""]"\n',
        encoding="utf-8",
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PythonLiteralWarning)
        a = RetrievalEvaluator(literal, workers=1).run().aggregate
    b = RetrievalEvaluator(json_csv, workers=1).run().aggregate
    assert a == b


@pytest.mark.parametrize(
    "cell",
    [
        "__import__('os').system('echo hacked')",
        "[__import__('os').getcwd()]",
        "[1 + 1]",
        "['a', f'{x}']",
        "('a', 'b')",
        "'a'",
        "[" * 200_000,
    ],
)
def test_python_literal_never_runs_code(cell: str) -> None:
    assert python_literal(cell) is None


def test_python_literal_reads_lists_and_dicts() -> None:
    assert python_literal(" ['a', \"b's\"] ") == ["a", "b's"]
    assert python_literal("{'d1': 2}") == {"d1": 2}


def test_code_in_a_cell_is_a_bad_record_not_run(tmp_path: Path) -> None:
    path = tmp_path / "evil.csv"
    path.write_text(
        'retrieved_context,ground_truth_context\n"[__import__(\'os\').getcwd()]","[""a""]"\n',
        encoding="utf-8",
    )
    (item,) = _records(path)
    assert isinstance(item, RecordError)
    assert "not JSON" in item.message


def test_numpy_repr_cells_get_the_fix(tmp_path: Path) -> None:
    path = tmp_path / "np.csv"
    path.write_text(
        "retrieved_context,ground_truth_context\n\"['a b' 'c d']\",\"['a b']\"\n",
        encoding="utf-8",
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PythonLiteralWarning)  # the truth cell is a literal
        (item,) = _records(path)
    assert isinstance(item, RecordError)
    assert "numpy array's repr" in item.message
    assert ".tolist()" in item.message


# -- TREC runs with columns after the tag (trec_eval's own results.trunc has them) ------------


def test_trec_run_columns_after_the_tag_are_ignored(tmp_path: Path) -> None:
    from ctxeval.io.trec import read_trec_run

    plain = tmp_path / "plain.run"
    extra = tmp_path / "extra.run"
    lines = [("q1", "d1", 1, 2.5), ("q1", "d2", 2, 1.0), ("q2", "d3", 1, 0.5)]
    plain.write_text("".join(f"{q} Q0 {d} {r} {s} tag\n" for q, d, r, s in lines), "utf-8")
    extra.write_text(
        "".join(f"{q} Q0 {d} {r} {s} tag 0.91 extra\n" for q, d, r, s in lines), "utf-8"
    )
    assert (
        read_trec_run(extra)
        == read_trec_run(plain)
        == {
            "q1": {"d1": 2.5, "d2": 1.0},
            "q2": {"d3": 0.5},
        }
    )


def test_trec_run_with_too_few_columns_names_the_line(tmp_path: Path) -> None:
    from ctxeval.foundation.errors import InvalidRecordError
    from ctxeval.io.trec import read_trec_run

    path = tmp_path / "short.run"
    path.write_text("q1 Q0 d1 1 2.0 t\nq1 Q0 d2 1\n", "utf-8")
    with pytest.raises(InvalidRecordError, match=r"short\.run:2.*found 4"):
        read_trec_run(path)


# -- documents as items: LangChain, llama-index, Haystack/chroma ------------------------------


def test_langchain_documents_as_items() -> None:
    documents = pytest.importorskip("langchain_core.documents")
    doc = documents.Document
    records = [
        {
            "id": "q1",
            "retrieved_context": [doc(page_content="a b c", metadata={"source": "x"}), "d e"],
            "ground_truth_context": [doc(page_content="a b c")],
        }
    ]
    plain = [{"id": "q1", "retrieved_context": ["a b c", "d e"], "ground_truth_context": ["a b c"]}]
    got = RetrievalEvaluator(records, workers=1).run(k=[1, 2])
    want = RetrievalEvaluator(plain, workers=1).run(k=[1, 2])
    assert got.aggregate == want.aggregate


@pytest.mark.parametrize("key", ["page_content", "text", "content"])
def test_document_dicts_by_their_usual_keys(key: str) -> None:
    (item,) = _records(
        [
            {
                "retrieved_context": [{key: "a b", "metadata": {"p": 1}}],
                "ground_truth_context": [{key: "a b"}],
            }
        ]
    )
    assert isinstance(item, Record)
    assert item.retrieved == ["a b"]
    assert item.ground_truth == ["a b"]


def test_text_key_names_another_key_and_keeps_graded_items() -> None:
    records = [
        {
            "retrieved_context": [{"chunk": "a b", "text": "wrong"}],
            "ground_truth_context": [{"text": "a b", "grade": 2}, {"chunk": "c"}],
        }
    ]
    (item,) = _records(records, fields={"text_key": "chunk"})
    assert isinstance(item, Record)
    assert item.retrieved == ["a b"]
    assert [(g.text, g.grade) for g in item.ground_truth] == [("a b", 2.0), ("c", 1.0)]


def test_the_text_key_given_is_the_only_key_read() -> None:
    # Found in a trial: a document without the named key fell back to page_content silently.
    records = [
        {
            "retrieved_context": [{"chunk": "a b"}, {"page_content": "c"}],
            "ground_truth_context": ["a"],
        }
    ]
    (item,) = _records(records, fields={"text_key": "chunk"})
    assert isinstance(item, RecordError)
    assert item.field == "retrieved_context"
    assert item.message == (
        "retrieved_context[1] is dict {'page_content': 'c'}, with no text under 'chunk', the text "
        'key given (fields={"text_key": "chunk"}); give every document its text under \'chunk\', '
        "or name the key they all use"
    )


def test_with_a_text_key_items_that_are_no_documents_are_named_as_such() -> None:
    records = [{"retrieved_context": ["a", None], "ground_truth_context": ["a"]}]
    (item,) = _records(records, fields={"text_key": "chunk"})
    assert isinstance(item, RecordError)
    assert item.message.startswith("retrieved_context[1] is None; remove it")


def test_a_document_without_text_names_the_keys() -> None:
    (item,) = _records([{"retrieved_context": [{"body": "a"}], "ground_truth_context": ["a"]}])
    assert isinstance(item, RecordError)
    assert "'page_content', 'text' or 'content'" in item.message
    assert 'fields={"text_key": ...}' in item.message


# -- ragas and Hugging Face datasets ------------------------------------------------------------

_RAGAS_ROWS = [
    {
        "user_input": "What is A?",
        "retrieved_contexts": ["A is a letter.", "B follows A."],
        "reference_contexts": ["A is a letter."],
        "response": "A letter.",
    },
    {
        "user_input": "What is C?",
        "retrieved_contexts": ["B follows A."],
        "reference_contexts": ["C is a letter too."],
    },
]


def test_ragas_to_list_rows_are_read_as_they_are(tmp_path: Path) -> None:
    import json

    path = tmp_path / "ragas.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in _RAGAS_ROWS), encoding="utf-8")
    items = _records(path)
    assert [i.retrieved for i in items if isinstance(i, Record)] == [
        r["retrieved_contexts"] for r in _RAGAS_ROWS
    ]
    first = items[0]
    assert isinstance(first, Record)
    assert first.metadata["user_input"] == "What is A?"


def test_pydantic_samples_like_ragas_evaluation_dataset() -> None:
    from pydantic import BaseModel

    class SingleTurnSample(BaseModel):  # the fields of ragas' sample that matter here
        user_input: str | None = None
        retrieved_contexts: list[str] | None = None
        reference_contexts: list[str] | None = None
        response: str | None = None

    class EvaluationDataset:  # ragas' dataset iterates over its samples
        def __init__(self, samples: list[SingleTurnSample]) -> None:
            self.samples = samples

        def __iter__(self):  # type: ignore[no-untyped-def]
            return iter(self.samples)

    dataset = EvaluationDataset([SingleTurnSample(**r) for r in _RAGAS_ROWS])
    got = RetrievalEvaluator(dataset, workers=1).run(k=[1, 2])
    want = RetrievalEvaluator(_RAGAS_ROWS, workers=1).run(k=[1, 2])
    assert got.aggregate == want.aggregate
    assert "response" not in got.per_query[1]  # unset fields are not metadata
    assert got.per_query[0]["response"] == "A letter."


def test_hugging_face_dataset() -> None:
    datasets = pytest.importorskip("datasets")
    dataset = datasets.Dataset.from_list(_RAGAS_ROWS)
    got = RetrievalEvaluator(dataset, workers=1).run(k=[1, 2])
    want = RetrievalEvaluator(_RAGAS_ROWS, workers=1).run(k=[1, 2])
    assert got.aggregate == want.aggregate


# -- llama-index's EmbeddingQAFinetuneDataset as ID-mode ground truth ---------------------------


def _llama_dataset(tmp_path: Path) -> Path:
    import json

    path = tmp_path / "qa_dataset.json"
    dataset = {
        "queries": {"q1": "What is A?", "q2": "What is C?"},
        "corpus": {"n1": "A is a letter.", "n2": "B follows A.", "n3": "C is a letter too."},
        "relevant_docs": {"q1": ["n1"], "q2": ["n3", "n2"]},
        "mode": "text",
    }
    path.write_text(json.dumps(dataset), encoding="utf-8")
    return path


def test_llama_index_dataset_as_qrels_of_a_trec_run(tmp_path: Path) -> None:
    from ctxeval.io.trec import read_qrels

    qa = _llama_dataset(tmp_path)
    assert read_qrels(qa) == {"q1": {"n1": 1}, "q2": {"n3": 1, "n2": 1}}
    trec_qrels = tmp_path / "qrels.txt"
    trec_qrels.write_text("q1 0 n1 1\nq2 0 n3 1\nq2 0 n2 1\n", encoding="utf-8")
    run = tmp_path / "run.trec"
    run.write_text("q1 Q0 n2 1 2.0 t\nq1 Q0 n1 2 1.0 t\nq2 Q0 n3 1 3.0 t\n", encoding="utf-8")
    got = RetrievalEvaluator.from_trec(run, qa, workers=1).run(k=[1, 2])
    want = RetrievalEvaluator.from_trec(run, trec_qrels, workers=1).run(k=[1, 2])
    assert got.aggregate == want.aggregate
    assert got.aggregate["recall@2"] == 0.75  # q1: 1 of 1; q2: 1 of 2


def test_ranx_style_json_qrels_and_bad_json(tmp_path: Path) -> None:
    from ctxeval.foundation.errors import InvalidArgumentError
    from ctxeval.io.trec import read_qrels

    good = tmp_path / "qrels.json"
    good.write_text('{"q1": {"d1": 2, "d2": 0}}', encoding="utf-8")
    assert read_qrels(good) == {"q1": {"d1": 2, "d2": 0}}
    for text, message in [
        ('{"q1": {"d1": 1.5}}', "must be a whole number"),
        ('{"relevant_docs": {"q1": "n1"}}', "must be a list of node ids"),
        ("[1, 2]", "EmbeddingQAFinetuneDataset"),
        ('{"q1": ', r"qrels\.json:1: not valid JSON"),
    ]:
        good.write_text(text, encoding="utf-8")
        with pytest.raises(InvalidArgumentError, match=message):
            read_qrels(good)


def test_llama_index_keys_without_relevant_docs_are_not_taken_for_qrels(tmp_path: Path) -> None:
    from ctxeval.io.trec import read_qrels

    path = tmp_path / "qa.json"
    path.write_text(json.dumps({"queries": {"q1": "Where?"}, "corpus": {"n1": "Here."}}))
    with pytest.raises(InvalidArgumentError, match='no "relevant_docs"'):
        read_qrels(path)


def test_a_dataset_dict_of_splits_asks_for_one_split() -> None:
    datasets = pytest.importorskip("datasets")
    split = datasets.Dataset.from_list(
        [{"retrieved_context": ["a b"], "ground_truth_context": ["a b"]}]
    )
    with pytest.raises(InvalidArgumentTypeError, match=r"choose one, e\.g\. dataset\['test'\]"):
        RetrievalEvaluator(datasets.DatasetDict({"test": split}), ["context_recall"]).run()


def test_records_without_ids_cannot_go_to_trec_and_are_told_to_give_ids() -> None:
    from ctxeval.io.trec import check_trec_run

    with pytest.raises(InvalidArgumentError, match="records without an id are numbered"):
        check_trec_run({"#0": {"d1": 1.0}})
    with pytest.raises(InvalidArgumentError, match=r"rename it \(e\.g\. replace spaces"):
        check_trec_run({"#q": {"d1": 1.0}})
