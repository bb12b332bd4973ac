"""Optional dependencies: one helper imports them, one message shape says how to install them."""

from __future__ import annotations

import json
import sys
from typing import Any

import pytest

from ctxeval.foundation.errors import MissingDependencyError
from ctxeval.foundation.optional import missing_dependency, require

ABSENT = "ctxeval_test_absent_module"

MISSING = [
    pytest.param(
        {"module": f"{ABSENT}.sub", "purpose": "EvaluationResult.to_pandas()", "extra": "pandas"},
        f"EvaluationResult.to_pandas() needs {ABSENT}: pip install 'ctxeval[pandas]'",
        id="extra",
    ),
    pytest.param(
        {"module": ABSENT, "purpose": "saving r.parquet", "extra": "parquet", "package": "pyarrow"},
        "saving r.parquet needs pyarrow: pip install 'ctxeval[parquet]'",
        id="extra-named-package",
    ),
    pytest.param(
        {"module": f"{ABSENT}.models", "purpose": "the 'x' sentence splitter"},
        f"the 'x' sentence splitter needs {ABSENT}: pip install {ABSENT}",
        id="no-extra-top-level-package",
    ),
    pytest.param(
        {"module": ABSENT, "purpose": "reading remote files", "package": "fsspec", "hint": "h"},
        "reading remote files needs fsspec: pip install fsspec; h",
        id="hint",
    ),
]


@pytest.mark.parametrize(("arguments", "message"), MISSING)
def test_a_missing_module_raises_the_install_hint(
    monkeypatch: pytest.MonkeyPatch, arguments: dict[str, Any], message: str
) -> None:
    monkeypatch.setitem(sys.modules, ABSENT, None)  # an import of it fails, wherever it runs
    with pytest.raises(MissingDependencyError) as raised:
        require(**arguments)
    assert str(raised.value) == message
    assert isinstance(raised.value, ImportError)
    assert isinstance(raised.value.__cause__, ImportError)


@pytest.mark.parametrize(
    ("package", "extra", "message"),
    [
        ("nltk>=3.8.2", None, "p needs nltk>=3.8.2: pip install 'nltk>=3.8.2'"),
        ("dask.distributed", "dask", "p needs dask.distributed: pip install 'ctxeval[dask]'"),
    ],
)
def test_missing_dependency_quotes_what_the_shell_would_misread(
    package: str, extra: str | None, message: str
) -> None:
    assert str(missing_dependency("p", package, extra=extra)) == message


@pytest.mark.parametrize(
    ("module", "expected"),
    [("json", json), ("json.decoder", json.decoder)],
)
def test_a_present_module_is_returned(module: str, expected: object) -> None:
    assert require(module, purpose="p", extra="x") is expected


def test_check_installed_says_so_without_importing(monkeypatch: pytest.MonkeyPatch) -> None:
    from ctxeval.foundation.optional import check_installed

    check_installed("json", purpose="p")  # installed: nothing to say
    assert "ctxeval_no_such_module" not in sys.modules
    with pytest.raises(MissingDependencyError, match=r"^p needs ctxeval_no_such_module: pip"):
        check_installed("ctxeval_no_such_module.sub", purpose="p")
    monkeypatch.setitem(sys.modules, "nltk", None)  # as if it were not installed
    with pytest.raises(MissingDependencyError, match=r"needs nltk: pip install 'ctxeval\[nltk\]'"):
        check_installed("nltk", purpose="p", extra="nltk")


def test_a_missing_stemmer_is_said_when_the_strategy_is_made_and_stops_a_run(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Found by a new user's trial: without nltk, --tokenizer rouge-stem made every record a
    # bad record ("fix the record, or pass --on-error skip"), and --on-error skip skipped all.
    from ctxeval import PrecisionRecallF1, RetrievalEvaluator, RougeChunkMatch

    monkeypatch.setitem(sys.modules, "nltk", None)
    with pytest.raises(MissingDependencyError, match=r"RougeTokenizer\(stem=True\) needs nltk"):
        RougeChunkMatch(tokenizer="rouge-stem")

    def needs_a_package(retrieved: list[str], ground_truth: list[str]) -> Any:
        raise missing_dependency("my strategy", "somepackage")

    records = [{"id": "a", "retrieved_context": ["x"], "ground_truth_context": ["x"]}]
    evaluator = RetrievalEvaluator(
        records, [PrecisionRecallF1(needs_a_package)], workers=1, on_error="skip"
    )
    with pytest.raises(MissingDependencyError, match="my strategy needs somepackage"):
        evaluator.run()
