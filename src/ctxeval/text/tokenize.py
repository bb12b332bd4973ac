"""Tokenizers: turn a text into the word tokens that ROUGE-L and fuzzy matching compare.

``RougeTokenizer`` is token-for-token identical to rouge-score's default tokenizer (lowercase,
``[a-z0-9]+`` runs, optional Porter stemming of tokens longer than three characters), so that
ROUGE-L scores equal the reference implementation. It drops every non-ASCII letter, which makes
Russian, Greek or Chinese text tokenize to nothing; ``UnicodeTokenizer`` keeps letters and digits
of every script and splits CJK ideographs and kana into one token per character.

Tokenizers are small immutable values: equal options compare equal and hash alike, and ``spec``
is the string that names them in configs and result columns.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from functools import lru_cache
from typing import Protocol, runtime_checkable

from ctxeval.foundation.errors import Fix, InvalidArgumentTypeError, type_name
from ctxeval.foundation.optional import check_installed, require
from ctxeval.foundation.specs import unknown_name

__all__ = [
    "ROUGE_TOKEN_BYTES",
    "TOKENIZERS",
    "TOKEN_UNITS",
    "RougeTokenizer",
    "Tokenizer",
    "UnicodeTokenizer",
    "get_tokenizer",
    "token_starts",
]


@runtime_checkable
class Tokenizer(Protocol):
    """Anything with a ``spec`` name and a ``tokenize(text) -> list[str]`` method."""

    @property
    def spec(self) -> str: ...

    def tokenize(self, text: str) -> list[str]: ...


# rouge-score: text.lower(), then [^a-z0-9]+ -> " ", split on whitespace, keep ^[a-z0-9]+$ tokens.
# findall over the lowered text yields the same runs in one pass.
_ROUGE_TOKEN = re.compile(r"[a-z0-9]+")
_ROUGE_VALID = re.compile(r"^[a-z0-9]+$")
# Byte table: a-z and 0-9 stay, every other byte (and "?" from non-ASCII) becomes a space.
_ROUGE_BYTES = bytes(c if 48 <= c <= 57 or 97 <= c <= 122 else 32 for c in range(256))
_ROUGE_BYTES_LOWER = bytes(c + 32 if 65 <= c <= 90 else b for c, b in enumerate(_ROUGE_BYTES))
#: rouge-score's tokens as a byte table (ASCII text; A-Z lowered): the compiled kernel reads it too.
ROUGE_TOKEN_BYTES = _ROUGE_BYTES_LOWER


@lru_cache(maxsize=1)
def _porter_stem() -> Callable[[str], str]:
    # The same stemmer object rouge-score builds (nltk's PorterStemmer, NLTK_EXTENSIONS mode).
    porter = require("nltk.stem.porter", purpose="RougeTokenizer(stem=True)", extra="nltk")
    stem: Callable[[str], str] = porter.PorterStemmer().stem
    return lru_cache(maxsize=1 << 18)(stem)


class RougeTokenizer:
    """rouge-score's default tokenizer, reproduced exactly (and faster: stems are cached).

    >>> RougeTokenizer().tokenize("Paris is the capital of France.")
    ['paris', 'is', 'the', 'capital', 'of', 'france']
    """

    __slots__ = ("_stem",)

    def __init__(self, *, stem: bool = False) -> None:
        if not isinstance(stem, bool):
            raise InvalidArgumentTypeError(
                f"RougeTokenizer(stem=...) must be True or False, got {type_name(stem)} {stem!r}"
            )
        if stem:  # said now, not at the first record (nltk is imported when first stemming)
            check_installed("nltk", purpose="RougeTokenizer(stem=True)", extra="nltk")
        self._stem = stem

    @property
    def stem(self) -> bool:
        return self._stem

    @property
    def spec(self) -> str:
        return "rouge-stem" if self._stem else "rouge"

    def tokenize(self, text: str) -> list[str]:
        tokens = _ROUGE_TOKEN.findall(text.lower())
        if not self._stem:
            return tokens
        stem = _porter_stem()
        stemmed = [stem(t) if len(t) > 3 else t for t in tokens]
        return [t for t in stemmed if _ROUGE_VALID.match(t)]

    def match_keys(self, text: str) -> list[bytes] | list[str]:
        """The tokens in a form that is cheaper to make and compare: equal exactly where the
        tokens are. Without stemming they are ASCII ``bytes``: after ``lower()`` every
        character outside ``[a-z0-9]`` (all of non-ASCII included) separates tokens, so one
        ``bytes.translate`` and ``split`` give rouge-score's tokens, about 2.5x faster."""
        if self._stem:
            return self.tokenize(text)
        if text.isascii():  # O(1) in CPython; lowercasing is then part of the byte table
            return text.encode().translate(_ROUGE_BYTES_LOWER).split()
        # lower() first: a few non-ASCII letters lowercase to ASCII ones ("K" Kelvin -> "k").
        return text.lower().encode("ascii", "replace").translate(_ROUGE_BYTES).split()

    def __repr__(self) -> str:
        return f"RougeTokenizer(stem={self._stem})"

    def __eq__(self, other: object) -> bool:
        # The same class, not a subclass: a subclass may tokenise otherwise (and must get its
        # own token cache, and never the compiled kernel).
        return type(other) is type(self) and other._stem == self._stem

    def __hash__(self) -> int:
        return hash((type(self), self._stem))


# Scripts written without spaces between words: one token per character, as multilingual ROUGE
# implementations do. Hangul is written with spaces, so it stays word-level.
_CJK = (
    "\u3040-\u309f"  # hiragana
    "\u30a0-\u30ff"  # katakana
    "\u3400-\u4dbf"  # CJK extension A
    "\u4e00-\u9fff"  # CJK unified ideographs
    "\uf900-\ufaff"  # CJK compatibility ideographs
    "\U00020000-\U0003134f"  # CJK extensions B-G
)
_UNICODE_TOKEN = re.compile(rf"[{_CJK}]|[^\W_{_CJK}]+")


class UnicodeTokenizer:
    """Letters and digits of every script, case-folded after NFKC normalisation.

    Runs of letters/digits form a token; each CJK ideograph or kana character is a token of its
    own, because those scripts do not separate words by spaces. Thai, Lao, Khmer and Burmese are
    kept as whole runs between spaces (no dictionary segmentation).

    >>> UnicodeTokenizer().tokenize("Москва — столица России.")
    ['москва', 'столица', 'россии']
    >>> UnicodeTokenizer().tokenize("巴黎是法国的首都。")
    ['巴', '黎', '是', '法', '国', '的', '首', '都']
    """

    __slots__ = ()

    @property
    def spec(self) -> str:
        return "unicode"

    def tokenize(self, text: str) -> list[str]:
        return _UNICODE_TOKEN.findall(unicodedata.normalize("NFKC", text).casefold())

    def __repr__(self) -> str:
        return "UnicodeTokenizer()"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, UnicodeTokenizer)

    def __hash__(self) -> int:
        return hash(UnicodeTokenizer)


_OBJECT_HINT = "or pass an object with a tokenize(text) -> list[str] method"

_NAMED: dict[str, Callable[[], Tokenizer]] = {
    "rouge": RougeTokenizer,
    "rouge-stem": lambda: RougeTokenizer(stem=True),
    "unicode": UnicodeTokenizer,
}
#: The tokenizers known by name.
TOKENIZERS = tuple(_NAMED)


def get_tokenizer(tokenizer: str | Tokenizer) -> Tokenizer:
    """Resolve ``"rouge"``, ``"rouge-stem"``, ``"unicode"`` or a tokenizer object."""
    if isinstance(tokenizer, str):
        make = _NAMED.get(tokenizer)
        if make is None:
            raise unknown_name(
                tokenizer,
                "tokenizer",
                tokenizer,
                list(_NAMED),
                where=f"tokenizer={tokenizer!r}",
                hint=_OBJECT_HINT,
                fixes=(Fix("tokenizer_object", None, _OBJECT_HINT),),
            )
        return make()
    if isinstance(tokenizer, Tokenizer):
        return tokenizer
    if hasattr(tokenizer, "tokenize") and callable(tokenizer.tokenize):
        return _SpeclessTokenizer(tokenizer)
    raise InvalidArgumentTypeError(
        f"tokenizer must be a name ('rouge', 'rouge-stem', 'unicode') or an object with a "
        f"tokenize(text) -> list[str] method, got {type_name(tokenizer)}"
    )


class _SpeclessTokenizer:
    """Adapts a user object that has ``tokenize`` but no ``spec``: named by its class."""

    __slots__ = ("_inner",)

    def __init__(self, inner: object) -> None:
        self._inner = inner

    @property
    def spec(self) -> str:
        return type(self._inner).__qualname__

    def tokenize(self, text: str) -> list[str]:
        tokens = self._inner.tokenize(text)  # type: ignore[attr-defined]
        return list(tokens)

    def __repr__(self) -> str:
        return repr(self._inner)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _SpeclessTokenizer) and other._inner is self._inner

    def __hash__(self) -> int:
        return hash((_SpeclessTokenizer, id(self._inner)))


# Where tokens start in text as written (span lengths in tokens count these): rouge's tokens are
# runs of ASCII letters and digits (it lowercases first, which moves no ASCII letter); unicode's
# are its letter/digit runs and single CJK characters, found before NFKC normalisation.
_TOKEN_STARTS = {
    "rouge": re.compile(r"[A-Za-z0-9]+"),
    "unicode": _UNICODE_TOKEN,
}
TOKEN_UNITS = tuple(_TOKEN_STARTS)


def token_starts(unit: str, text: str) -> list[int]:
    """The offsets in ``text`` where the tokens of ``unit`` (``"rouge"`` or ``"unicode"``)
    start."""
    return [match.start() for match in _TOKEN_STARTS[unit].finditer(text)]
