"""--token-counter with an LLM's tokenizer, offline: a missing file is one error (exit 2)."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pytest
from cli_helpers import ctxeval

llama_index_core = pytest.importorskip("llama_index.core")

ROOT = Path(__file__).resolve().parents[2]
URL = "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken"
KEY = hashlib.sha1(URL.encode()).hexdigest()
SHIPPED = Path(llama_index_core.__file__).parent / "_static" / "tiktoken_cache"


@pytest.fixture
def cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("DATA_GYM_CACHE_DIR", raising=False)
    return tmp_path


def test_the_command_line(cache: Path) -> None:
    run = ROOT / "fixtures" / "runs" / "fixed-100.jsonl"
    missing = ctxeval("evaluate", run, "-k", "512t", "--token-counter", "cl100k_base")
    assert missing.returncode == 2
    assert "cl100k_base.tiktoken is not on this machine" in missing.stderr
    assert "Traceback" not in missing.stderr
    shutil.copy(SHIPPED / KEY, cache / KEY)
    done = ctxeval("evaluate", run, "-k", "512t", "--token-counter", "cl100k_base")
    assert done.returncode == 0, done.stderr
    assert "context_recall@512t" in done.stdout
    unknown = ctxeval("evaluate", run, "-k", "512t", "--token-counter", "cl100k")
    assert unknown.returncode == 2
    assert "unknown tokenizer 'cl100k'; did you mean 'cl100k_base'?" in unknown.stderr
    assert "'rouge', 'rouge-stem', 'unicode', 'cl100k_base'" in unknown.stderr


def test_token_budgets_say_which_tokens_they_count_unless_told() -> None:
    # Found by a user's trial: -k 512t fed about 40% more text than cl100k's 512 tokens, and
    # nothing on the terminal said the tokens were ROUGE's.
    run = ROOT / "fixtures" / "runs" / "fixed-100.jsonl"
    said = "note: -k 512t counts ROUGE's tokens"
    default = ctxeval("evaluate", run, "-k", "512t", "-k", "5")
    assert default.returncode == 0, default.stderr
    assert said in default.stderr
    assert "--token-counter cl100k_base" in default.stderr
    chosen = ctxeval("evaluate", run, "-k", "512t", "--token-counter", "rouge")
    assert chosen.returncode == 0, chosen.stderr
    assert "counts ROUGE's tokens" not in chosen.stderr
    words = ctxeval("evaluate", run, "-k", "300w")
    assert "counts ROUGE's tokens" not in words.stderr
