"""cli/flags.py: the library's messages name their fixes in Python and carry them as ``Fix`` es; the
command line says the same fixes as flags. Each case below is a real library error (or warning,
or skipped record), made by calling the library with the bad input."""

from __future__ import annotations

import ast
import json
import warnings
from collections.abc import Callable
from dataclasses import fields as dataclass_fields
from pathlib import Path

import pytest
from cli_helpers import ctxeval

from ctxeval import RetrievalEvaluator, RougeChunkMatch, RougeSentenceMatch, read_records
from ctxeval.cli.flags import FLAGS, cli_message, cli_text, skipped_fixes
from ctxeval.foundation.errors import CtxevalError, Fix
from ctxeval.io.fields import FieldMap, resolve_fields
from ctxeval.records.model import RecordError

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src" / "ctxeval"

TEXT = {"id": "q", "retrieved_context": ["a"], "ground_truth_context": ["a"]}


def _raised(call: Callable[[], object]) -> CtxevalError:
    with pytest.raises(CtxevalError) as caught:
        call()
    return caught.value


def _warned(call: Callable[[], object]) -> Warning:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        call()
    return next(w.message for w in caught if getattr(w.message, "fixes", ()))


def _bad_record(records: list[dict[str, object]], **fields: str) -> RecordError:
    return next(
        r for r in read_records(records, fields=fields or None) if isinstance(r, RecordError)
    )


def _file(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def _two_modes(_: Path) -> object:
    columns = ["retrieved_context", "ground_truth_context", "retrieved_ids", "relevant_ids"]
    return _raised(lambda: resolve_fields(columns, None, source="a.jsonl:1"))


def _no_fields(_: Path) -> object:
    return _raised(lambda: resolve_fields(["a", "b"], None, source="a.jsonl:1"))


def _ambiguous(_: Path) -> object:
    columns = ["retrieved_ids", "relevant_ids", "qrels"]
    return _raised(lambda: resolve_fields(columns, None, source="a.jsonl:1"))


def _mixed_modes(_: Path) -> object:
    named = {"retrieved": "retrieved_context", "ground_truth": "relevant_ids"}
    return _raised(lambda: resolve_fields(list(named.values()), named, source="a.jsonl:1"))


def _not_a_field(_: Path) -> object:
    return _raised(lambda: resolve_fields(["a"], {"retrieved": "contexts"}, source="a.jsonl:1"))


def _missing_field(_: Path) -> object:
    return _bad_record([TEXT, {"id": "r", "retrieved_context": ["a"]}])


def _skipped_missing_field(_: Path) -> object:
    records = [TEXT, {"id": "r", "retrieved_context": ["a"]}]
    skipped = RetrievalEvaluator(records, on_error="skip").run().skipped[0]
    # as a saved result keeps it: plain data
    return json.loads(json.dumps(skipped))


def _bad_record_stops(_: Path) -> object:
    records = [TEXT, {"id": "r", "retrieved_context": [3], "ground_truth_context": ["a"]}]
    return _raised(lambda: RetrievalEvaluator(records).run())


def _documents(_: Path) -> object:
    return _bad_record(
        [{"id": "q", "retrieved_context": [{"chunk": "a"}], "ground_truth_context": ["a"]}]
    )


def _text_key(_: Path) -> object:
    record = {
        "id": "q",
        "retrieved_context": [{"page_content": "a"}],
        "ground_truth_context": ["a"],
    }
    return _bad_record([record], text_key="chunk")


def _threshold(_: Path) -> object:
    return _raised(lambda: RougeChunkMatch(threshold=1.5))


def _tokenizer(_: Path) -> object:
    greek = {
        "id": "q",
        "retrieved_context": ["\u03b1\u03b2\u03b3"],
        "ground_truth_context": ["a b"],
    }
    return _warned(lambda: RetrievalEvaluator([greek]).run())


def _unknown_format(tmp_path: Path) -> object:
    path = _file(tmp_path, "data.txt", "x\n")
    return _raised(lambda: list(read_records(path)))


def _json_lines(tmp_path: Path) -> object:
    path = _file(tmp_path, "data.json", '{"a": 1}\n{"a": 2}\n')
    return _raised(lambda: list(read_records(path)))


def _trec_run(tmp_path: Path) -> object:
    path = _file(tmp_path, "run.trec", "q1 Q0 d1 1 2.5 tag\n")
    return _raised(lambda: list(read_records(path)))


def _missing_queries(policy: str) -> Callable[[Path], object]:
    def make(_: Path) -> object:
        from ctxeval.metrics.runs import evaluate_run

        run, qrels = {"q1": {"d1": 1.0}}, {"q1": {"d1": 1}, "q4": {"d2": 1}}
        return _warned(lambda: evaluate_run(run, qrels, ["map"], missing_queries=policy))  # type: ignore[arg-type]

    return make


def _rank_measures(_: Path) -> object:
    from ctxeval.metrics.measure_sets import TextMeasures

    return _raised(lambda: TextMeasures(["ndcg@2"], RougeSentenceMatch(0.8)))


def _budget_on_ids(_: Path) -> object:
    records = [{"id": "q", "retrieved_ids": ["d1"], "relevant_ids": ["d1"]}]
    return _raised(lambda: RetrievalEvaluator(records).run(k=["300w"]))


def _trec_id(tmp_path: Path) -> object:
    from ctxeval.io.convert import convert_dataset

    source = _file(tmp_path, "a.jsonl", '{"retrieved_ids": ["d1"], "relevant_ids": ["d1"]}\n')
    return _raised(lambda: convert_dataset(source, str(tmp_path / "out.trec")))


def _span_tokens(_: Path) -> object:
    return _raised(lambda: RetrievalEvaluator([TEXT], ["span_iou(unit='rouge')@5"]).run())


def _spans_to_locate(_: Path) -> object:
    return _raised(lambda: RetrievalEvaluator([TEXT], ["span_iou@5"]).run())


def _one_chunker(tmp_path: Path) -> object:
    from ctxeval.chunking import compare_chunkers

    return _raised(lambda: compare_chunkers({"d": "a b c"}, [], {"a": "fixed(words=5)"}))


def _tokenizer_name(_: Path) -> object:
    return _raised(lambda: RougeChunkMatch(tokenizer="foo"))


CASES: list[tuple[str, Callable[[Path], object], str]] = [
    (
        "two modes",
        _two_modes,
        "choose one: --mode text or --mode id, or name the fields: "
        "--retrieved-field NAME --ground-truth-field NAME",
    ),
    (
        "no fields found",
        _no_fields,
        "fields found: 'a', 'b'; name them: --retrieved-field NAME --ground-truth-field NAME",
    ),
    (
        "two candidates",
        _ambiguous,
        "a.jsonl:1: 'relevant_ids', 'qrels' could each be the ground-truth field; name the one to "
        "use: --ground-truth-field relevant_ids",
    ),
    (
        "names of two modes",
        _mixed_modes,
        "say which mode the data is in: --mode text (contexts) or --mode id (chunk ids)",
    ),
    (
        "named field absent",
        _not_a_field,
        "a.jsonl:1: --retrieved-field contexts is not a field here; fields found: 'a'",
    ),
    (
        "record without a field",
        _missing_field,
        "add it, or name the field that holds it: --ground-truth-field NAME",
    ),
    (
        "skipped record without a field",
        _skipped_missing_field,
        "add it, or name the field that holds it: --ground-truth-field NAME",
    ),
    (
        "bad record stops the run",
        _bad_record_stops,
        "record 1 (record 'r'): retrieved_context[0] is int 3; every item must be a string (or a "
        "document with its text under 'page_content', 'text' or 'content'; name another key with "
        "--text-key NAME). Fix the record, or pass --on-error skip to skip bad records and count "
        "them in the results",
    ),
    ("documents without text", _documents, "name another key with --text-key NAME)"),
    ("text key", _text_key, "with no text under 'chunk', the text key given (--text-key chunk)"),
    (
        "threshold",
        _threshold,
        "--threshold 1.5: threshold must be between 0 and 1 (a ROUGE-L recall or a fuzzy ratio "
        "scaled to [0, 1]); for a rapidfuzz score of 85 write --threshold 0.85",
    ),
    ("tokenizer", _tokenizer, "for text in other scripts use --tokenizer unicode"),
    (
        "unknown format",
        _unknown_format,
        ".parquet; or give the file its format's extension (.jsonl, .json, .csv or .parquet)",
    ),
    ("JSON lines in .json", _json_lines, "it looks like JSON lines: name the file .jsonl"),
    (
        "a TREC run as a dataset",
        _trec_run,
        "evaluate a run against its qrels with ctxeval evaluate --run RUN --qrels QRELS; or turn "
        "it into records with ctxeval convert RUN OUT.jsonl --qrels QRELS",
    ),
    (
        "missing queries scored 0",
        _missing_queries("zero"),
        "were scored 0 (-c; --skip-missing leaves them out); first: 'q4'",
    ),
    (
        "missing queries left out",
        _missing_queries("skip"),
        "were left out (--skip-missing; -c scores them 0); first: 'q4'",
    ),
    (
        "rank measures on sentences",
        _rank_measures,
        "-m ndcg@2 ranks retrieved chunks, but --match rouge-sentence(threshold=0.8) matches "
        "sentences; use --match with a chunk strategy (rouge-chunk, exact-chunk, fuzzy-chunk)",
    ),
    (
        "a budget on chunk ids",
        _budget_on_ids,
        "-k 300w needs the chunks' texts, but these records have chunk ids; give -k a number of "
        "chunks",
    ),
    ("TREC query id", _trec_id, 'an "id" field, or name yours with --id-field NAME)'),
    ("span tokens need the corpus", _span_tokens, "give the corpus (--corpus PATH), or use"),
    ("spans to locate", _spans_to_locate, "or a corpus to locate the texts in (--corpus PATH)"),
    (
        "one chunker",
        _one_chunker,
        "got 1 --chunker; a comparison needs at least two runs: two chunkers, e.g. --chunker",
    ),
    (
        "a tokenizer object",
        _tokenizer_name,
        "unknown tokenizer 'foo' (use one of 'rouge', 'rouge-stem', 'unicode'); or, from Python, "
        "an object with a tokenize(text) -> list[str] method",
    ),
]


@pytest.mark.parametrize(("make", "cli"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_library_fixes_read_as_flags(
    make: Callable[[Path], object], cli: str, tmp_path: Path
) -> None:
    item = make(tmp_path)
    if isinstance(item, dict):  # a skipped record, as a result lists it
        fixes, text = skipped_fixes(item), cli_message(item["message"], skipped_fixes(item))
    else:
        fixes, text = getattr(item, "fixes", ()), cli_text(item)
    assert fixes, "the message names a fix, so it carries it"
    assert cli in text
    for fix in fixes:
        assert fix.text not in text  # no Python argument is left
    python = item["message"] if isinstance(item, dict) else str(item)
    # a fix's text is the message's own (a message giving one fix or another carries both)
    assert any(fix.text in python for fix in fixes)


def test_messages_without_fixes_print_as_they_are() -> None:
    assert cli_message("nothing to change here", ()) == "nothing to change here"
    assert cli_text(ValueError("on_error='skip'")) == "on_error='skip'"  # no fixes: no guessing


def test_a_wrapped_error_keeps_the_fixes_of_the_error_it_quotes() -> None:
    from ctxeval.matching.specs import parse_strategy

    spec_error = _raised(lambda: parse_strategy("rouge-chunk(threshold=2)"))
    assert [fix.parameter for fix in spec_error.fixes] == ["threshold", "threshold"]
    assert cli_text(spec_error).endswith("write --threshold 0.85")
    wrapped = f"--match x: {str(spec_error).split(': ', 1)[1]}"
    assert cli_text(wrapped, spec_error.fixes).endswith("write --threshold 0.85")


def _fix_parameters() -> set[str]:
    """Every parameter a ``Fix(...)`` in the library names; a dict value's literal keys too
    (``Fix("fields", {"mode": ...})`` names ``fields.mode``)."""
    found: set[str] = set()
    for path in SRC.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call):
                continue
            name = getattr(node.func, "id", getattr(node.func, "attr", None))
            if name != "Fix" or not node.args:
                continue
            first = node.args[0]
            # a Fix's parameter is a literal, so that this test can check that it has a flag
            assert isinstance(first, ast.Constant), f"{path}:{node.lineno}"
            assert isinstance(first.value, str), f"{path}:{node.lineno}"
            found.add(first.value)
            value = node.args[1] if len(node.args) > 1 else None
            if first.value == "fields" and isinstance(value, ast.Dict):
                for key in value.keys:
                    if isinstance(key, ast.Constant):
                        found.add(f"fields.{key.value}")
    return found


def test_every_parameter_a_fix_names_has_its_flag() -> None:
    used = _fix_parameters()
    assert {"on_error", "fields", "threshold", "tokenizer", "format"} <= used
    missing = sorted(used - set(FLAGS))
    assert not missing, f"add to ctxeval.cli.flags.FLAGS how the command line says: {missing}"
    # ``fields`` fixes with a computed role: every role of a FieldMap has its flag
    roles = {f"fields.{f.name}" for f in dataclass_fields(FieldMap) if f.init}
    assert roles <= set(FLAGS), sorted(roles - set(FLAGS))


def test_the_fix_is_plain_data_in_a_saved_result() -> None:
    fix = Fix("fields", {"ground_truth": None}, 'fields={"ground_truth": ...}')
    assert Fix(**json.loads(json.dumps(fix.as_dict()))) == fix
    assert Fix("on_error", "skip").text == "on_error='skip'"


@pytest.mark.parametrize(
    ("match", "expected"),
    [
        ("rouge-chunk(threshold=2)", "--match rouge-chunk(threshold=2): threshold must be between"),
        ("rouge-chnk", "--match rouge-chnk: unknown strategy 'rouge-chnk'; did you mean"),
        ("rouge-chunk(tokenizer=foo)", "quote text values, e.g. 'foo'"),
        # Found by a user's trial: split=yes was told to quote 'yes' (split is a bool).
        ("rouge-chunk(tokenizer=yes)", "; write True for a yes/no option, or quote text ('yes')"),
        ("rouge-chunk(threshold=0.8, tokenizer=OFF)", "; write False for a yes/no option, or"),
    ],
)
def test_match_errors_name_the_flag_without_python_class_names(match: str, expected: str) -> None:
    done = ctxeval("evaluate", ROOT / "fixtures" / "records.jsonl", "--match", match)
    assert done.returncode == 2
    assert expected in done.stderr
    assert "RougeChunkMatch" not in done.stderr
    assert done.stderr.count("\n") == 1
    if "threshold=2" in match:
        assert done.stderr.rstrip().endswith("write --threshold 0.85")


def test_skipped_records_say_the_flag(tmp_path: Path) -> None:
    data = tmp_path / "d.jsonl"
    data.write_text(
        json.dumps(TEXT) + "\n" + json.dumps({"id": "r", "retrieved_context": ["a"]}) + "\n",
        encoding="utf-8",
    )
    done = ctxeval("evaluate", data, "--on-error", "skip")
    assert done.returncode == 0, done.stderr
    assert "d.jsonl:2 (record 'r'): missing the ground-truth field" in done.stderr
    assert "name the field that holds it: --ground-truth-field NAME" in done.stderr
    assert "fields=" not in done.stderr
