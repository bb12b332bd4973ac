"""A distributed run writes its rows to any fsspec URL (issue 13, item 4): ``memory://`` here,
``s3://`` or ``gs://`` on a cluster. Workers run in this process (threads), so they share the
in-memory filesystem."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ctxeval import RetrievalEvaluator
from ctxeval.foundation.errors import InvalidArgumentError
from ctxeval.results import EvaluationResult, iter_parts

distributed = pytest.importorskip("dask.distributed")
fsspec = pytest.importorskip("fsspec")

RUN = Path(__file__).resolve().parents[2] / "fixtures" / "runs" / "paragraph.jsonl"


@pytest.fixture(scope="module")
def client() -> Iterator[Any]:
    client = distributed.Client(
        processes=False, n_workers=1, threads_per_worker=2, dashboard_address=":0"
    )
    try:
        yield client
    finally:
        client.close()


def test_rows_go_to_a_memory_url_and_read_back(client: Any) -> None:
    url = "memory://ctxeval-test/run-1"
    result = RetrievalEvaluator(RUN, scheduler=client, partition_bytes=100_000).run(
        k=[1, 5], output=url
    )
    local = RetrievalEvaluator(RUN, workers=1).run(k=[1, 5])
    assert result.aggregate == local.aggregate
    fs = fsspec.filesystem("memory")
    names = sorted(p.rsplit("/", 1)[-1] for p in fs.ls("/ctxeval-test/run-1", detail=False))
    assert names[0] == "_result.json"
    assert len(names) > 2  # several parts
    loaded = EvaluationResult.load(url)
    assert loaded.aggregate == local.aggregate
    assert list(loaded.per_query) == list(local.per_query)
    assert list(iter_parts(url)) == list(local.per_query)


def test_a_second_run_replaces_the_parts_of_the_first(client: Any) -> None:
    url = "memory://ctxeval-test/run-2"
    fs = fsspec.filesystem("memory")

    def parts() -> list[str]:
        return sorted(
            p.rsplit("/", 1)[-1] for p in fs.ls("/ctxeval-test/run-2", detail=False) if "part-" in p
        )

    RetrievalEvaluator(RUN, scheduler=client, partition_bytes=50_000).run(k=[1], output=url)
    first = parts()
    RetrievalEvaluator(RUN, scheduler=client, partition_bytes=200_000).run(k=[1], output=url)
    header = json.loads(fs.cat("/ctxeval-test/run-2/_result.json"))
    assert parts() == header["parts"]  # no stale part of the first run is left
    assert len(parts()) < len(first)
    assert list(EvaluationResult.load(url).per_query) == list(
        RetrievalEvaluator(RUN, workers=1).run(k=[1]).per_query
    )


def test_a_url_without_a_finished_run_says_so() -> None:
    with pytest.raises(InvalidArgumentError, match=r"no _result\.json"):
        EvaluationResult.load("memory://ctxeval-test/nothing-here")
