"""The realistic example data in fixtures/ (made by fixtures/generate.py, see docs/example-data.md).

Determinism, integrity against the manifest, the record schema ctxeval reads, the same queries in
every run, and an evaluation of every run.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import re
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from statistics import fmean
from typing import Any

import pytest

from ctxeval import (
    PrecisionRecallF1,
    RankedRetrievalMetrics,
    Record,
    RetrievalEvaluator,
    RougeChunkMatch,
    read_records,
)

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
GENERATOR = FIXTURES / "generate.py"
MANIFEST = json.loads((FIXTURES / "manifest.json").read_text(encoding="utf-8"))
RUNS = sorted(name for name in MANIFEST["files"] if name.startswith("runs/"))
CHUNK_ID = re.compile(r"^(?P<strategy>[a-z0-9-]+):(?P<doc>[a-z0-9-]+):(?P<n>\d+)$")
# Fields of the manifest that describe the environment rather than the data.
ENVIRONMENT_KEYS = ("python", "packages")


def load_generator() -> Any:
    """fixtures/generate.py as a module (it is a script, not part of the package)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("fixtures_generate", GENERATOR)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def run_generator(out: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(GENERATOR), "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def same_source_or_skip() -> None:
    """Regenerating reproduces the committed bytes only from the same source text and splitter."""
    if sys.version_info[:2] != (3, 11):
        pytest.skip(
            f"the fixtures were generated with Python {MANIFEST['python']}; the pydoc topics of "
            f"Python {sys.version_info.major}.{sys.version_info.minor} differ"
        )
    generator = load_generator()
    if any(name not in generator.topics for name in generator.TOPICS):
        pytest.skip("this Python's pydoc_data.topics lacks some of the fixture topics")
    if generator.topics_sha256() != MANIFEST["topics_sha256"]:
        pytest.skip(
            f"this Python's pydoc_data.topics text differs from the one the fixtures were made "
            f"from (Python {MANIFEST['python']}, topics sha256 {MANIFEST['topics_sha256'][:12]})"
        )
    wanted = MANIFEST["packages"]["sentencex"]
    try:
        installed = metadata.version("sentencex")
    except metadata.PackageNotFoundError:  # pragma: no cover - a ctxeval dependency
        installed = None
    if installed != wanted:
        pytest.skip(f"sentencex {installed} is installed; the fixtures were split with {wanted}")


def strip_environment(manifest: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in manifest.items() if k not in ENVIRONMENT_KEYS}


# --- the committed files --------------------------------------------------------------------


def test_manifest_lists_every_file_with_its_hash() -> None:
    assert len(RUNS) >= 3
    assert "questions.jsonl" in MANIFEST["files"]
    for name, digest in MANIFEST["files"].items():
        data = (FIXTURES / name).read_bytes()
        assert hashlib.sha256(data).hexdigest() == digest, f"{name} differs from the generator's"
    # corpus/ is wholly generated; runs/ may also hold runs that others add by hand
    corpus = {p.relative_to(FIXTURES).as_posix() for p in (FIXTURES / "corpus").iterdir()}
    assert corpus == {name for name in MANIFEST["files"] if name.startswith("corpus/")}


def test_files_are_small_enough_to_commit() -> None:
    size = sum((FIXTURES / name).stat().st_size for name in MANIFEST["files"])
    assert size < 2.5e6


@pytest.mark.parametrize("run", RUNS)
def test_every_record_is_valid_for_the_reader(run: str) -> None:
    strategy = Path(run).stem
    records = list(read_records(FIXTURES / run))
    assert len(records) == MANIFEST["questions"]["count"]
    assert all(isinstance(r, Record) for r in records), [str(r) for r in records][:3]
    texts: dict[str, str] = {}
    for record in records:
        assert record.mode == "text"
        assert len(record.ground_truth) == 1
        assert 1 <= len(record.retrieved) <= MANIFEST["top_k"]
        ids = record.metadata["retrieved_ids"]
        scores = record.retrieved_scores
        assert scores is not None
        assert len(ids) == len(scores) == len(record.retrieved)
        assert scores == sorted(scores, reverse=True)
        for chunk_id, text in zip(ids, record.retrieved, strict=True):
            match = CHUNK_ID.match(chunk_id)
            assert match is not None
            assert match["strategy"] == strategy
            assert texts.setdefault(chunk_id, text) == text  # one id, one text
        for chunk_id in record.metadata["matching_chunk_ids"]:
            assert chunk_id.startswith(f"{strategy}:{record.metadata['doc']}:")


def test_runs_share_ids_order_questions_and_ground_truth() -> None:
    questions = read_jsonl(FIXTURES / "questions.jsonl")
    expected = [(q["id"], q["question"], q["ground_truth_context"], q["doc"]) for q in questions]
    assert len({q["id"] for q in questions}) == len(questions)
    for run in RUNS:
        rows = read_jsonl(FIXTURES / run)
        got = [(r["id"], r["question"], r["ground_truth_context"], r["doc"]) for r in rows]
        assert got == expected, run


def test_ground_truth_is_text_of_the_corpus() -> None:
    """Ground truth is independent of chunking: an exact span of the source document."""
    for q in read_jsonl(FIXTURES / "questions.jsonl"):
        text = (FIXTURES / "corpus" / f"{q['doc']}.txt").read_text(encoding="utf-8")
        assert text[q["char_start"] : q["char_end"]] == q["ground_truth_context"][0]


def test_retrieved_chunks_are_text_of_the_corpus() -> None:
    corpus = {
        p.stem: " ".join(p.read_text(encoding="utf-8").split())
        for p in (FIXTURES / "corpus").glob("*.txt")
    }
    for run in RUNS:
        for row in read_jsonl(FIXTURES / run):
            for chunk_id, text in zip(row["retrieved_ids"], row["retrieved_context"], strict=True):
                assert " ".join(text.split()) in corpus[chunk_id.split(":")[1]], chunk_id


# --- the generator --------------------------------------------------------------------------


def test_generator_is_deterministic(tmp_path: Path) -> None:
    """Two runs in this environment write the same bytes (whatever the Python version)."""
    generator = load_generator()
    if any(name not in generator.topics for name in generator.TOPICS):
        pytest.skip("this Python's pydoc_data.topics lacks some of the fixture topics")
    first, second = run_generator(tmp_path / "a"), run_generator(tmp_path / "b")
    assert first.returncode == 0, first.stderr
    assert second.returncode == 0, second.stderr
    files = json.loads((tmp_path / "a" / "manifest.json").read_text(encoding="utf-8"))["files"]
    for name in [*files, "manifest.json"]:
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name


def test_regenerating_reproduces_the_committed_files(tmp_path: Path) -> None:
    same_source_or_skip()
    result = run_generator(tmp_path)
    assert result.returncode == 0, result.stderr
    manifest = json.loads((tmp_path / "manifest.json").read_text(encoding="utf-8"))
    assert strip_environment(manifest) == strip_environment(MANIFEST)
    for name in MANIFEST["files"]:
        assert (tmp_path / name).read_bytes() == (FIXTURES / name).read_bytes(), name


def test_generator_removes_only_its_own_stale_files(tmp_path: Path) -> None:
    (tmp_path / "runs").mkdir()
    (tmp_path / "runs" / "old-strategy.jsonl").write_text("{}\n", encoding="utf-8")
    (tmp_path / "runs" / "mine.jsonl").write_text("{}\n", encoding="utf-8")
    (tmp_path / "records.jsonl").write_text("{}\n", encoding="utf-8")
    (tmp_path / "manifest.json").write_text(
        json.dumps({"files": {"runs/old-strategy.jsonl": "0"}}), encoding="utf-8"
    )
    generator = load_generator()
    if any(name not in generator.topics for name in generator.TOPICS):
        pytest.skip("this Python's pydoc_data.topics lacks some of the fixture topics")
    generator.generate(tmp_path)
    assert not (tmp_path / "runs" / "old-strategy.jsonl").exists()
    assert (tmp_path / "runs" / "mine.jsonl").exists()
    assert (tmp_path / "records.jsonl").exists()


def test_bm25_ranks_by_score_then_chunk_order() -> None:
    bm25 = load_generator().BM25(
        ["the cat sat", "a dog barked", "the cat sat", "cats and dogs", "nothing here"]
    )
    hits = bm25.search("cat", 10)
    assert [i for i, _ in hits] == [0, 2]  # a tie: chunk order decides
    assert hits[0][1] == hits[1][1] > 0
    # "dog" is in fewer chunks than "cat": a higher idf
    assert [i for i, _ in bm25.search("cat dog", 10)] == [1, 0, 2]
    assert bm25.search("unicorn", 10) == []


def test_chunkers_cover_the_document_with_their_own_boundaries() -> None:
    generator = load_generator()
    splitter = generator.get_splitter(generator.SPLITTER_SPEC)
    doc = generator.build_document("with", generator.topics["with"], splitter)
    for strategy, params in generator.STRATEGIES.items():
        chunks = generator.chunk_document(strategy, doc)
        assert [c.id for c in chunks] == [f"{strategy}:with:{n}" for n in range(len(chunks))]
        assert chunks[0].start == 0
        assert chunks[-1].end == len(doc.text)
        words = [len(c.text.split()) for c in chunks]
        if params["kind"] == "fixed":
            assert all(w == params["words"] for w in words[:-1])
            assert all(a.end > b.start for a, b in itertools.pairwise(chunks))
        else:  # non-overlapping pieces, in order, gaps only of whitespace
            for a, b in itertools.pairwise(chunks):
                assert a.end <= b.start
                assert not doc.text[a.end : b.start].strip()
        if params["kind"] == "paragraph":
            assert max(words) <= params["max_words"]


# --- evaluating the runs --------------------------------------------------------------------


@pytest.fixture(scope="module")
def results() -> dict[str, Any]:
    metrics = [
        PrecisionRecallF1(RougeChunkMatch()),
        RankedRetrievalMetrics(RougeChunkMatch()),
    ]
    return {
        Path(run).stem: RetrievalEvaluator(str(FIXTURES / run), metrics, workers=1).run(
            k=[1, 3, 5, 10]
        )
        for run in RUNS
    }


def test_evaluator_runs_on_every_file(results: dict[str, Any]) -> None:
    for name, result in results.items():
        assert len(result.per_query) == MANIFEST["questions"]["count"], name
        for row in result.per_query:
            assert all(0.0 <= row[key] <= 1.0 for key in row if "@" in key)


def test_numbers_are_plausible_and_differ_between_chunkings(results: dict[str, Any]) -> None:
    recall = {
        name: fmean(row["context_recall@10"] for row in result.per_query)
        for name, result in results.items()
    }
    assert all(0.4 <= value <= 0.95 for value in recall.values()), recall
    assert len({round(value, 3) for value in recall.values()}) == len(recall), recall
    for result in results.values():
        at = [fmean(row[f"context_recall@{k}"] for row in result.per_query) for k in (1, 3, 5, 10)]
        assert at == sorted(at)
        assert at[0] < at[-1]


def test_an_excerpt_no_chunk_holds_is_never_found(results: dict[str, Any]) -> None:
    """The boundary failure mode: when no chunk holds the excerpt, recall is 0 at every K; a
    matching chunk in the top 10 is a hit."""
    unmatchable = 0
    for result in results.values():
        for row in result.per_query:
            if not row["matching_chunk_ids"]:
                unmatchable += 1
                assert row["excerpt_straddles"]
                assert row["context_recall@10"] == 0.0
            elif set(row["matching_chunk_ids"]) & set(row["retrieved_ids"]):
                assert row["hit_rate@10"] == 1.0
    assert unmatchable > 0
