"""Locating a document's chunks in order (``InOrder``): the cursor, each step, the spans a
fuzzy chunk gets, and ``normalise`` against its definition."""

from __future__ import annotations

import random
import re

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from rapidfuzz import fuzz

from ctxeval.text.locate import InOrder, Placed, compact, normalise

DOCUMENT = "The assert statement.\n\nIt checks   a condition at run time.\nThe assert statement."


def test_exact_from_the_cursor_and_past_the_previous_chunk() -> None:
    locator = InOrder(DOCUMENT)
    assert locator.locate("The assert statement.") == Placed(0, 21, "exact", 100.0)
    # Overlapping: found inside the previous chunk, where it goes on beyond it.
    assert locator.locate("statement.\n\nIt checks") == Placed(11, 32, "exact", 100.0)
    # A phrase that ends inside the previous chunk is taken at its next occurrence.
    placed = locator.locate("The assert")
    assert (placed.start, placed.how) == (DOCUMENT.rindex("The assert"), "exact")
    # When there is no later one, the occurrence inside the previous chunk.
    locator = InOrder(DOCUMENT)
    locator.locate("It checks   a condition")
    assert locator.locate("checks").start == DOCUMENT.index("checks")


def test_whitespace_and_case_then_without_whitespace() -> None:
    locator = InOrder(DOCUMENT)
    placed = locator.locate("it CHECKS a condition\nat run time.")
    assert placed.how == "normalised"
    assert DOCUMENT[placed.start : placed.end] == "It checks   a condition at run time."
    # A tokenizer's decoding: spaces around punctuation, none where the text had them.
    placed = InOrder(DOCUMENT).locate("statement . it checks a con dition")
    assert placed.how == "normalised"
    assert DOCUMENT[placed.start : placed.end] == "statement.\n\nIt checks   a condition"


def test_unlocated_leaves_the_cursor_and_reports_its_best_score() -> None:
    locator = InOrder(DOCUMENT)
    locator.locate("It checks")
    cursor = locator.cursor
    placed = locator.locate("something else entirely, about cheese and wine")
    assert (placed.start, placed.end, placed.how) == (-1, -1, "unlocated")
    assert placed.score < 90
    assert locator.cursor == cursor
    assert InOrder(DOCUMENT).locate("   ").how == "unlocated"


def _words(rng: random.Random, count: int) -> str:
    letters = "abcdefghijklmnopqrstuvwxyz"
    words = ["".join(rng.choices(letters, k=rng.randint(1, 9))) for _ in range(count)]
    return "".join(w + rng.choice([" ", " ", " ", ", ", ".\n", "\n\n  "]) for w in words)


@settings(max_examples=150)
@given(seed=st.integers(0, 2**32 - 1), size=st.integers(60, 1500))
def test_a_chunk_with_characters_changed_inside_gets_the_span_it_came_from(
    seed: int, size: int
) -> None:
    rng = random.Random(seed)
    edits = rng.randint(1, size // 30)  # a few percent: the ratio stays above 90
    document = _words(rng, 600)
    start = rng.randrange(0, len(document) - size)
    while document[start].isspace():
        start += 1
    end = start + size
    while document[end - 1].isspace():
        end -= 1
    chunk = list(document[start:end])
    for _ in range(edits):  # dropped, added or replaced, away from the ends
        at = rng.randrange(8, len(chunk) - 8)
        kind = rng.choice(["drop", "add", "replace"])
        if kind == "drop":
            del chunk[at]
        elif kind == "add":
            chunk.insert(at, rng.choice("#@%&"))
        else:
            chunk[at] = rng.choice("#@%&")
    text = "".join(chunk)
    locator = InOrder(document)
    # A previous chunk before it, ending where it starts or overlapping it.
    locator.cursor = max(0, start - rng.randrange(1, 1000)) + 1
    locator.reach = start + rng.choice([0, 0, rng.randrange(0, size // 2)])
    placed = locator.locate(text)
    assert placed.how in ("exact", "normalised", "fuzzy")
    assert (placed.start, placed.end) == (start, end)
    assert fuzz.ratio(compact(text), compact(document[start:end])) == placed.score or (
        placed.how != "fuzzy"
    )


def _normalise_by_definition(text: str) -> str:
    lowered = text.lower()  # in context (a final sigma), unless a character's lowercase is longer
    if len(lowered) != len(text):
        lowered = "".join(c if len(c.lower()) != 1 else c.lower() for c in text)
    return re.sub(r"\s+", " ", lowered)


@given(st.text(alphabet=st.sampled_from(" \t\n\u00a0\u3000\x1c\x85aBİéΣ\ud800x"), max_size=40))
def test_normalise_is_its_definition(text: str) -> None:
    normalised, origin = normalise(text)
    assert normalised == _normalise_by_definition(text)
    assert len(origin) == len(normalised) + 1
    assert origin[-1] == len(text)
    assert np.all(np.diff(origin) > 0)
    # Each space comes from a whitespace run's first character, every other from itself.
    for character, offset in zip(normalised, origin[:-1].tolist(), strict=True):
        assert (character == " ") == text[offset].isspace()
        assert offset == 0 or character != " " or not text[offset - 1].isspace()
