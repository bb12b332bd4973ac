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
