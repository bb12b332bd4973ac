"""The on-disk embedding cache: vectors kept between runs, by embedder and text, written whole or
not at all; a truncated, foreign or other embedder's file is computed again, never read as a wrong
vector; two processes at once leave every file whole."""

from __future__ import annotations

import multiprocessing
from pathlib import Path

import numpy as np

from ctxeval.retrieval.dense import DenseRetriever
from ctxeval.retrieval.disk_cache import DiskCache
from ctxeval.retrieval.embedders import EmbeddingCache, FunctionEmbedder

TEXTS = ["cats sleep", "dogs bark", "fish swim", "banks lend"]


def letters(texts: list[str]) -> np.ndarray:
    return np.array([[t.count(c) + 0.25 for c in "abcdefghijklmnopqrstuvwxyz"] for t in texts])


class Counting:
    """An embedder that counts the texts it is asked for."""

    name = "letters"

    def __init__(self) -> None:
        self.asked: list[str] = []

    def __call__(self, texts: list[str]) -> np.ndarray:
        self.asked.extend(texts)
        return letters(texts)


def test_a_second_run_reads_the_vectors_and_ranks_alike(tmp_path: Path) -> None:
    first, second = Counting(), Counting()
    one = DenseRetriever(first, str(tmp_path)).index(TEXTS)("dogs", 4)
    two = DenseRetriever(second, str(tmp_path)).index(TEXTS)("dogs", 4)
    assert one == two  # the same floats: the raw vectors are kept, normalised alike
    assert sorted(first.asked) == sorted([*TEXTS, "dogs"])
    assert second.asked == []
    plain = DenseRetriever(FunctionEmbedder(letters, "letters")).index(TEXTS)("dogs", 4)
    assert plain == one  # with the cache or without, the same numbers


def _files(root: Path) -> list[Path]:
    return sorted(root.rglob("*.vec"))


def test_a_damaged_or_foreign_file_is_computed_again(tmp_path: Path) -> None:
    cache = DiskCache(tmp_path, "letters")
    vector = letters(["cats sleep"])[0].astype(np.float32)
    cache.put("cats sleep", vector)
    (path,) = _files(tmp_path)
    good = path.read_bytes()
    assert cache.get("cats sleep").tolist() == vector.tolist()
    path.write_bytes(good[:-5])  # truncated
    assert cache.get("cats sleep") is None
    path.write_bytes(good[:-1] + bytes([good[-1] ^ 1]))  # one bit changed
    assert cache.get("cats sleep") is None
    path.write_bytes(b"not a vector file")
    assert cache.get("cats sleep") is None
    path.write_bytes(good)
    assert DiskCache(tmp_path, "other").get("cats sleep") is None  # another embedder's folder
    other = DiskCache(tmp_path, "letters")
    other_path = other._path(other._name_sha)  # a file moved under another text's name
    other_path.parent.mkdir(parents=True, exist_ok=True)
    other_path.write_bytes(good)
    assert other.get("letters") is None
    counting = Counting()
    vectors = EmbeddingCache(counting, tmp_path)(["cats sleep", "dogs bark"])
    assert counting.asked == ["dogs bark"]  # the whole file was read
    assert vectors.shape == (2, 26)


def test_vectors_of_another_length_are_not_trusted(tmp_path: Path) -> None:
    DiskCache(tmp_path, "letters").put("cats sleep", np.ones(3, dtype=np.float32))
    counting = Counting()
    vectors = EmbeddingCache(counting, tmp_path)(["cats sleep", "dogs bark"])
    assert vectors.shape == (2, 26)
    assert set(counting.asked) == {"cats sleep", "dogs bark"}  # both embedded again
    assert len(DiskCache(tmp_path, "letters").get("cats sleep")) == 26  # and stored


def _fill(folder: str) -> None:
    EmbeddingCache(FunctionEmbedder(letters, "letters"), folder)(TEXTS * 50)


def test_two_processes_at_once_leave_every_file_whole(tmp_path: Path) -> None:
    context = multiprocessing.get_context("fork")
    workers = [context.Process(target=_fill, args=(str(tmp_path),)) for _ in range(2)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(60)
        assert worker.exitcode == 0
    cache = DiskCache(tmp_path, "letters")
    assert len(_files(tmp_path)) == len(TEXTS)
    assert not list(tmp_path.rglob("*.tmp"))
    for text in TEXTS:
        assert cache.get(text) is not None
