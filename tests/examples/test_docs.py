"""Every Python code block in README.md and docs/ runs as written, on the shipped fixtures.

Blocks of one page run in order in one namespace (a later block may use an earlier one's names),
from a scratch directory where ``fixtures/`` is the repository's, so files a block writes
(``results.jsonl``, ``report.html``) land there. A block whose output would depend on a service
(a Dask scheduler address) says so in its first line with ``# not run: <reason>``; nothing else is
exempt. Blocks that show an expected value as ``expr  # {...}`` are checked only for running.
"""

from __future__ import annotations

import os
import re
import warnings
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)


def _blocks(page: Path) -> list[str]:
    return BLOCK.findall(page.read_text(encoding="utf-8"))


PAGES_WITH_CODE = [page for page in PAGES if _blocks(page)]


def test_the_pages_have_code_to_run() -> None:
    # The check below would pass vacuously if the pattern stopped matching.
    assert len(PAGES_WITH_CODE) >= 5
    assert sum(len(_blocks(page)) for page in PAGES_WITH_CODE) >= 15


@pytest.mark.parametrize("page", PAGES_WITH_CODE, ids=lambda p: p.name)
def test_code_blocks_run(page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "fixtures").symlink_to(ROOT / "fixtures")
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {"__name__": "__main__"}
    for number, code in enumerate(_blocks(page), start=1):
        first = code.lstrip().splitlines()[0] if code.strip() else ""
        if first.startswith("# not run:"):
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the pages show results, not warnings
            try:
                exec(compile(code, f"{page.name}, block {number}", "exec"), namespace)
            except Exception as exc:
                raise AssertionError(
                    f"{page.relative_to(ROOT)} block {number} fails as written: "
                    f"{type(exc).__name__}: {exc}\n{code}"
                ) from exc
    assert os.getcwd() == str(tmp_path)
