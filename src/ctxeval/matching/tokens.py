"""Tokens of the texts a strategy matches, each distinct text tokenised once and its tokens
interned as integer codes (:class:`TokenCache`; one per tokenizer and thread by default)."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Hashable, Sequence
from typing import Any, cast

from ctxeval.foundation.errors import InvalidArgumentError
from ctxeval.text.token_codes import MAX_CHARACTERS, rouge_codes
from ctxeval.text.tokenize import RougeTokenizer, Tokenizer

__all__ = [
    "TokenCache",
    "default_cache",
    "has_word",
]


_BUILT_IN_TOKENIZERS = Tokenizer.__module__  # its tokenizers' keys are lists


def _as_list(split: Callable[[str], Sequence[Hashable]]) -> Callable[[str], list[Hashable]]:
    def listed(text: str) -> list[Hashable]:
        return list(split(text))

    return listed


def has_word(text: str) -> bool:
    """Whether ``text`` holds a letter or digit of any script (so a tokenizer that finds no
    token in it is the wrong tokenizer for it)."""
    return any(map(str.isalnum, text))


class TokenCache:
    """Tokenises texts for matching, and keeps the texts that repeat in a compact form.

    A text's *match keys* are its tokens in a form rapidfuzz hashes in C
    (``tokenizer.match_keys`` when the tokenizer has it, else ``tokenize``); two texts' keys are
    equal exactly where their tokens are. Keys are made for the record at hand and dropped with
    it: keeping every text's token objects "in case it comes back" costs more (allocation, cache
    misses, freeing them all when the cache is full) than tokenising texts that never return.
    For a batch, :meth:`keyed_records` makes the keys of the records bound for that path in a
    few vectorised passes instead (rouge-score's tokenizer only: one character a token,
    :func:`ctxeval.text.token_codes.rouge_codes`).

    A text seen a second time is kept, as a string of one character per token through a
    vocabulary that gives each distinct token its own character: about 1 to 4 bytes per token
    instead of a list of token objects, and rapidfuzz compares such strings twice as fast as
    lists. A record whose retrieved texts are all repeats is matched entirely in this form
    (its other texts are encoded for it), so within one record keys and characters are never
    compared with each other. So a run where chunks repeat (a retriever over a fixed corpus)
    tokenises each distinct chunk twice at most, and a run of all-new texts pays nothing extra
    but a bit per text in a fixed bitmap of the texts it has seen (indexed by the text's hash; a
    false "seen" only keeps a text that did not need keeping). Batched (:meth:`keyed_records`),
    even that bit rests: after two batches in a row where almost nothing came back, the next
    seven neither mark nor look up their texts (with a direct :meth:`encode_record` call until
    the next batch), so texts that start to repeat are noticed in one batch of eight.

    Keeping a text pays only when it comes back once more before it is dropped, so texts are
    kept by measured return, not merely by "seen before": the cache keeps a *debt* in tokens
    (converting a text adds its tokens; finding a kept text again, even in a record that must
    be keyed, subtracts them; never below -8,192, so a long run of hits cannot pay
    for unbounded conversions later) and converts new repeats only while the debt is under
    8,192. When it is full and the debt is paid, it starts afresh (a new hot set);
    when it is not (texts that come back once and are gone, as when the same all-new dataset
    is evaluated twice, or more repeating texts than fit), it stops keeping texts and serves
    the ones it has: converting texts that are dropped before their next return would make
    every run slower than no cache at all. Records whose texts are not all kept then take the
    plain key path, which costs what it costs without a cache.

    Memory is bounded: the kept texts and their codes by 7/8 of ``max_chars`` (characters of
    texts and codes, so texts with few tokens, e.g. non-English text under the ASCII tokenizer,
    count by their size), the vocabulary by the rest (16 characters per entry), starting
    afresh with a new vocabulary when that is full; the bitmap has ``seen_bits`` bits (8 MiB
    by default) and is cleared once a sixteenth of it is marked (4M texts; at most 1 in 16 new
    texts is then wrongly taken for a repeat).
    """

    def __init__(
        self, tokenizer: Tokenizer, *, max_chars: int = 16_000_000, seen_bits: int = 1 << 26
    ) -> None:
        if seen_bits < 8 or seen_bits & (seen_bits - 1):
            raise InvalidArgumentError(
                f"TokenCache(seen_bits={seen_bits}): use a power of two >= 8"
            )
        self.tokenizer = tokenizer
        self.max_chars = max_chars
        self._codes: dict[str, str] = {}
        self._vocab: dict[Hashable, str] = {}
        self._seen = bytearray(seen_bits >> 3)
        self._seen_mask = seen_bits - 1
        self._marked = 0
        self._max_marked = seen_bits >> 4
        self._chars = 0
        self._admitting = True
        # Tokens converted to characters minus tokens found kept, since the cache last started
        # afresh: what converting has cost and not (yet) saved, in tokens.
        self._debt = 0
        # Batches (keyed_records calls) still to come that leave the bitmap alone, and whether
        # the records being matched use it (see keyed_records).
        self._rest = 0
        self._bitmap = True
        self._idle = 0  # batches in a row, with the bitmap, where almost nothing came back
        #: Characters of the records tokenised afresh (the keys path), over the cache's life
        #: (never reset): the work a compiled tokeniser would have saved.
        self.keyed_chars = 0
        split: Callable[[str], Sequence[Hashable]] = getattr(
            tokenizer, "match_keys", tokenizer.tokenize
        )
        # ctxeval's tokenizers give lists; another may give any sequence.
        self._split: Callable[[str], list[Hashable]] = (
            cast("Callable[[str], list[Hashable]]", split)
            if type(tokenizer).__module__ == _BUILT_IN_TOKENIZERS
            else _as_list(split)
        )
        # rouge-score's own tokens (not a subclass's) can also be made for a batch at once.
        plain = type(tokenizer) is RougeTokenizer and not tokenizer.stem
        self._bulk: Callable[[Sequence[str]], list[str]] | None = rouge_codes if plain else None

    def keyed_records(
        self, records: Sequence[Sequence[Sequence[str]]]
    ) -> list[list[list[str]] | None]:
        """For each record of a batch (its groups of texts, as :meth:`encode_record` takes
        them), its texts' match keys made in bulk when the tokenizer allows it and the record
        looks bound for the key path (not every text of its first group kept, nor all seen
        while the cache converts repeats); else None. Pass each to :meth:`encode_record` as
        ``keyed``.

        The keys are strings of one character per token (:func:`rouge_codes`), equal
        characters exactly where tokens are equal within one record (records are made in
        groups of about :data:`_BULK_CHARS` characters: a vectorised pass costs a few
        microseconds a call, and its arrays then stay in the processor's cache)."""
        out: list[list[list[str]] | None] = [None] * len(records)
        if self._bulk is None:
            return out
        codes, seen = self._codes, self._seen_before
        self._bitmap = not self._rest
        self._rest = max(self._rest - 1, 0)
        converting = self._bitmap and self._admitting and self._debt < _MAX_DEBT
        came_back = 0
        group: list[int] = []
        texts: list[str] = []
        size = 0
        for i, groups in enumerate(records):
            first = groups[0] if groups else ()
            if first and all(map(codes.__contains__, first)):
                came_back += 1
                continue  # (bound for the code path)
            back = [t in codes or seen(t) for t in first] if self._bitmap else []
            if any(back):
                came_back += 1
                if converting and all(back):
                    continue  # (repeats to convert: bound for the code path)
            flat = list(itertools.chain.from_iterable(groups))
            chars = sum(map(len, flat)) + len(flat)
            if chars > MAX_CHARACTERS:
                continue  # (a whole book: tokenised as one record is)
            if size + chars > MAX_CHARACTERS or size >= _BULK_CHARS:
                self._bulk_group(records, group, texts, size, out)
                group, texts, size = [], [], 0
            group.append(i)
            texts += flat
            size += chars
        self._bulk_group(records, group, texts, size, out)
        if self._bitmap and records:
            self._idle = self._idle + 1 if came_back * 8 < len(records) else 0
            if self._idle >= _IDLE_BATCHES:
                self._rest = _REST_BATCHES  # all-new texts of late: the next batches rest
        return out

    def _bulk_group(
        self,
        records: Sequence[Sequence[Sequence[str]]],
        group: list[int],
        texts: list[str],
        size: int,
        out: list[list[list[str]] | None],
    ) -> None:
        """One bulk call for ``group``'s records (their ``texts``, ``size`` characters), each
        record's keys into ``out``; none when they are too few characters to pay for it."""
        if size < _BULK_MIN_CHARS or self._bulk is None:
            return
        made = self._bulk(texts)
        at = 0
        for i in group:
            keyed = []
            for part in records[i]:
                keyed.append(made[at : at + len(part)])
                at += len(part)
            out[i] = keyed

    def encode_record(
        self, *groups: Sequence[str], keyed: list[list[str]] | None = None
    ) -> tuple[list[list[Any]], tuple[str, ...]]:
        """Match keys (or character codes) of every text of one record, and the non-empty
        texts with no tokens. The first group decides the form: codes when all its texts are
        repeats. ``keyed``: the record's keys from :meth:`keyed_records`, used on the key
        path instead of tokenising its texts again."""
        codes, seen = self._codes, self._seen_before
        encoded: list[list[Any]] = []
        if groups and groups[0]:
            repeats = all(map(codes.__contains__, groups[0]))
            if not repeats and self._bitmap and self._admitting and self._debt < _MAX_DEBT:
                # (else converting texts would cost more than the kept ones have saved)
                repeats = all(t in codes or seen(t) for t in groups[0])
            if repeats:
                debt = self._debt
                try:
                    get, code = codes.get, self._code
                    encoded = [[get(t) or code(t) for t in texts] for texts in groups]
                except _VocabularyFull:
                    encoded = []
                else:
                    # _code added each converted text's tokens; the rest were found kept.
                    found = sum(map(len, itertools.chain.from_iterable(encoded)))
                    found += sum(map(len, groups)) - (self._debt - debt)
                    self._debt = max(self._debt - found, -_MAX_DEBT)
        if not encoded:
            if codes and groups:
                # Kept texts that came back count as saved even where this record cannot use
                # them (keys and characters never mix within a record): they predict savings.
                found = sum([len(codes[t]) + 1 for t in groups[0] if t in codes])
                self._debt = max(self._debt - found, -_MAX_DEBT)
            if self._bitmap:
                for texts in groups:
                    self._mark(texts)
            self.keyed_chars += sum(map(len, itertools.chain.from_iterable(groups)))
            split = self._split
            if keyed is not None:
                encoded = keyed
            elif sum(map(len, groups)) == len(set().union(*groups)):
                encoded = [list(map(split, texts)) for texts in groups]
            else:  # a text twice in one record: tokenised once
                made: dict[str, list[Hashable]] = {}
                encoded = [
                    [made[t] if t in made else made.setdefault(t, split(t)) for t in texts]
                    for texts in groups
                ]
        if all(map(all, encoded)):  # every text has tokens (the usual case)
            return encoded, ()
        tokenless = tuple(
            t
            for texts, parts in zip(groups, encoded, strict=True)
            for t, e in zip(texts, parts, strict=True)
            if not e and has_word(t)
        )
        return encoded, tokenless

    def keys(self, text: str) -> list[Hashable]:
        """The match keys of ``text`` (made afresh; the text is noted as seen)."""
        self._mark((text,))
        return self._split(text)

    def _mark(self, texts: Sequence[str]) -> None:
        """Note ``texts`` as seen. The bitmap is cleared once as many texts have been marked
        as a sixteenth of its bits (a text marked again counts again: perhaps a little early;
        so at most 1 in 16 new texts is wrongly taken for a repeat)."""
        if self._marked >= self._max_marked:
            self._seen[:] = bytes(len(self._seen))
            self._marked = 0
        self._marked += len(texts)
        seen, mask = self._seen, self._seen_mask
        for slot in map(hash, texts):
            slot &= mask
            seen[slot >> 3] |= 1 << (slot & 7)

    def _seen_before(self, text: str) -> bool:
        slot = hash(text) & self._seen_mask
        return bool(self._seen[slot >> 3] & (1 << (slot & 7)))

    def _code(self, text: str) -> str:
        """``text`` as one character per token: equal characters exactly where tokens are.

        Kept when the text has been seen before (it is likely to come back again) and the
        cache is keeping texts."""
        cached = self._codes.get(text)
        if cached is not None:
            return cached
        repeat = self._seen_before(text)
        keys = self.keys(text)
        vocab = self._vocab
        try:
            code = "".join([vocab[key] for key in keys])
        except KeyError:
            for key in keys:
                if key not in vocab:
                    # A vocabulary entry costs about as much as the characters of its token,
                    # plus the slot: charged to the same budget as the kept texts.
                    self._chars += _VOCAB_ENTRY_CHARS
                    if len(vocab) >= _MAX_CODES or self._chars > self.max_chars:
                        self.clear()  # every code is void with the vocabulary: start afresh
                        raise _VocabularyFull from None
                    vocab[key] = _code_char(len(vocab))
            code = "".join([vocab[key] for key in keys])
        self._debt += len(code) + 1
        if repeat and self._admitting:
            cost = len(text) + len(code)
            if self._chars + cost > self.max_chars - (self.max_chars >> 3):
                self._full()  # raises when starting afresh (this record's codes are void)
            else:
                self._codes[text] = code
                self._chars += cost
        return code

    def _full(self) -> None:
        """No room for another kept text: start afresh when the kept texts have paid for
        themselves (saved at least what converting them cost), else stop keeping texts."""
        if self._debt <= 0:
            self._restart()
            raise _VocabularyFull
        self._admitting = False

    def _restart(self) -> None:
        self._codes.clear()
        self._vocab.clear()
        self._chars = 0
        self._admitting = True
        self._debt = 0

    def clear(self) -> None:
        self._restart()
        self._seen[:] = bytes(len(self._seen))
        self._marked = 0
        self._rest, self._bitmap, self._idle = 0, True, 0

    def __len__(self) -> int:
        """How many texts are kept."""
        return len(self._codes)


# Characters for token codes: every code point except the surrogates, which a str can hold but
# which are not characters.
_SURROGATES = 0xD800


_MAX_CODES = 0x110000 - 0x800


_VOCAB_ENTRY_CHARS = 16


# Bulk keys: characters per vectorised call, and the fewest worth one (below, the per-call
# cost of about 25 numpy calls exceeds what it saves over tokenising text by text).
_BULK_CHARS = 1 << 17
_BULK_MIN_CHARS = 2_000


# Tokens converted ahead of any return: the most the cache may cost over none (a few ms).
_MAX_DEBT = 1 << 13

# After _IDLE_BATCHES batches in a row where fewer than one record in eight had a text seen
# before (all-new texts: a corpus's chunks come back within a batch or two), _REST_BATCHES
# batches match without the bitmap: no text is hashed, marked or looked up there (about a
# tenth of a new record's matching), and the cache still notices texts that start to repeat
# in one batch of eight.
_IDLE_BATCHES = 2
_REST_BATCHES = 7


class _VocabularyFull(Exception):
    """More distinct tokens than characters, or more kept characters than ``max_chars``: the
    kept texts and the vocabulary have started afresh."""


def _code_char(i: int) -> str:
    return chr(i if i < _SURROGATES else i + 0x800)


_local = threading.local()


def default_cache(tokenizer: Tokenizer) -> TokenCache:
    """This thread's cache for ``tokenizer``.

    One per thread, because a cache may reset between two records and two threads scoring at
    once must never see each other's resets.
    """
    caches: dict[Tokenizer, TokenCache] | None = getattr(_local, "caches", None)
    if caches is None:
        caches = _local.caches = {}
    cache = caches.get(tokenizer)
    if cache is None:
        cache = caches[tokenizer] = TokenCache(tokenizer)
    return cache
