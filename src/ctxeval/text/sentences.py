"""Offline sentence splitting.

A sentence splitter turns one text (a retrieved chunk, a ground-truth passage) into its sentences.
The sentence-level matching strategies call it for every distinct text of a run, so each built-in
loads its model once per process and never touches the network: ctxeval never downloads anything.

Every built-in splitter keeps the same output contract:

- each sentence is stripped of surrounding whitespace and empty sentences are dropped;
- each sentence is otherwise a verbatim substring of the input (nothing is normalised);
- sentences come in text order, and empty or whitespace-only text gives ``[]``.

Choose a splitter by name with :func:`get_splitter`, or pass any object with a ``name`` and a
``split(text) -> list[str]`` method, or a plain function. The measurements behind the default
and the notes in each class's docstring are in ``docs/sentence-splitting.md``.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, ClassVar, Final, Protocol, runtime_checkable

from ctxeval.foundation.errors import (
    CtxevalError,
    InvalidArgumentError,
    InvalidArgumentTypeError,
    MissingDependencyError,
    SpecError,
    type_name,
)
from ctxeval.foundation.optional import missing_dependency, require
from ctxeval.foundation.specs import check_options, parse_spec, unknown_name

__all__ = [
    "DEFAULT_SPLITTER_NAME",
    "SPLITTER_NAMES",
    "CallableSplitter",
    "NewlineSplitter",
    "NupunktSplitter",
    "PunktSplitter",
    "SentenceSplitter",
    "SentencexSplitter",
    "default_splitter",
    "get_splitter",
    "sentence_spans",
]


@runtime_checkable
class SentenceSplitter(Protocol):
    """Anything that splits a text into sentences.

    ``name`` identifies the splitter in results and reports. ``split`` should follow the output
    contract of this module (stripped, non-empty sentences, in order); the built-ins do.
    A plain attribute, a class attribute or a property all satisfy ``name``.
    """

    @property
    def name(self) -> str: ...

    def split(self, text: str) -> list[str]: ...


def _stripped(pieces: Any) -> list[str]:
    """The output contract: surrounding whitespace removed, empty pieces dropped."""
    return [stripped for piece in pieces if (stripped := piece.strip())]


def _check_text(text: object) -> str:
    if not isinstance(text, str):
        raise InvalidArgumentTypeError(
            f"text: expected str, got {type_name(text)}; pass the text of one chunk or passage"
        )
    return text


def _require(module: str, splitter: str, extra: str | None = None) -> Any:
    """``module``, or the install hint (the ctxeval ``extra`` that brings it) that also names
    the splitters that do not need it."""
    return require(
        module,
        purpose=f"the {splitter!r} sentence splitter",
        extra=extra,
        hint=f"or use another splitter (valid names: {_valid_names_text()})",
    )


class _BuiltinSplitter:
    """Shared by the built-ins: ``spec`` is the canonical string, and the repr."""

    __slots__ = ()

    @property
    def spec(self) -> str:
        """The string :func:`get_splitter` turns back into this splitter."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return self.spec


# --------------------------------------------------------------------------------------------
# nupunkt


@functools.lru_cache(maxsize=1)
def _nupunkt_model() -> Any:
    # A private instance rather than nupunkt.load("default"): that one is shared process-wide
    # and mutable (add_abbreviation), so another library could change our splits.
    return _require("nupunkt.models", "nupunkt", extra="nupunkt").load_default_model()


@dataclass(frozen=True, repr=False)
class NupunktSplitter(_BuiltinSplitter):
    """Punkt (unsupervised abbreviation and collocation model) as re-implemented by ``nupunkt``.

    Uses nupunkt's bundled English model (trained on legal and financial text); pure Python, no
    data download. Measured on our gold set (``docs/sentence-splitting.md``): 84% of English cases
    split exactly, boundary F1 0.91; 46% of the other-language cases.

    Good at: English periods, including abbreviations not in any list (``Approx. 40``,
    ``Tel. 555``), initials, decimals, version numbers and e-mail addresses; sentence ends
    after ``…``, ``?!`` and a closing parenthesis; French ``M. Dupont``.

    Bad at: anything but ``.``, ``?`` and ``!``: Chinese, Japanese, Hindi, Urdu, Bengali text
    comes back as one sentence, Arabic ``؟`` and Greek ``;`` are not boundaries; line breaks,
    which are never boundaries, so headings, bullet and numbered lists, and paragraphs without
    final punctuation are glued together; an abbreviation that does end a sentence
    (``... by Smith et al. Their ...``); ``Lt. Col.``, ``cf. Table``, Spanish ``Sr.``/``Dra.``,
    German ordinals (``Am 3. Oktober``). About 5 times slower than ``sentencex``.
    """

    name: ClassVar[str] = "nupunkt"

    def split(self, text: str) -> list[str]:
        text = _check_text(text)
        if not text or text.isspace():
            return []
        spans = _nupunkt_model().tokenize_with_spans(text)
        return _stripped(text[start:end] for _, (start, end) in spans)

    @property
    def spec(self) -> str:
        return "nupunkt"


# --------------------------------------------------------------------------------------------
# sentencex

_LANGUAGE_CODE: Final = re.compile(r"[A-Za-z]{2,3}(?:[-_][A-Za-z0-9]{1,8})*")


@functools.lru_cache(maxsize=1)
def _sentencex_segment() -> Callable[[str, str], list[str]]:
    segment: Callable[[str, str], list[str]] = _require("sentencex", "sentencex").segment
    return segment


# sentencex 1.0.32 panics in Rust (is_name_initial_for slices a str inside a multi-byte
# character) on a one-letter capital, then whitespace ending in a non-ASCII space, then a period:
# "Plan A\u00a0." The panic surfaces as pyo3's PanicException, a BaseException that would end the
# whole run. Those spaces are replaced by ASCII spaces, one character for one, before the call,
# and the sentences are cut from the original text by length. Fuzzing (over a million texts, a
# dozen languages) found this pattern behind every panic, and the replacement never changed a split
# sentencex does produce.
_SENTENCEX_PANIC_TRIGGER: Final = re.compile(r"(?<![^\s./])[A-Z]\s*[^\S\x00-\x7f](?=\.)")
_NON_ASCII_SPACE: Final = re.compile(r"[^\S\x00-\x7f]")
# A necessary part of the trigger, found several times faster: the check costs little per chunk.
_NON_ASCII_SPACE_DOT: Final = re.compile(r"[^\S\x00-\x7f]\.")


def _ascii_spaced(match: re.Match[str]) -> str:
    return _NON_ASCII_SPACE.sub(" ", match.group())


def _sentencex_pieces(language: str, text: str) -> list[str]:
    """sentencex's segments of ``text``, verbatim, and never a panic."""
    segment = _sentencex_segment()
    if text.isascii() or _NON_ASCII_SPACE_DOT.search(text) is None:
        return _segment_or_raise(segment, language, text)
    safe = _SENTENCEX_PANIC_TRIGGER.sub(_ascii_spaced, text)
    pieces = _segment_or_raise(segment, language, safe)
    if "".join(pieces) != safe:
        raise CtxevalError(_sentencex_failed(text, "returned segments that do not cover the text"))
    originals, start = [], 0
    for piece in pieces:
        originals.append(text[start : start + len(piece)])
        start += len(piece)
    return originals


def _segment_or_raise(
    segment: Callable[[str, str], list[str]], language: str, text: str
) -> list[str]:
    try:
        return segment(language, text)
    except BaseException as exc:
        if type(exc).__name__ != "PanicException":  # KeyboardInterrupt and friends pass
            raise
        raise CtxevalError(_sentencex_failed(text, f"crashed ({exc})")) from exc


def _sentencex_failed(text: str, what: str) -> str:
    return (
        f"sentencex {what} on the text starting {text[:80]!r}; split this data with another "
        f"splitter (e.g. splitter='nupunkt') and report the text to sentencex "
        f"(https://github.com/wikimedia/sentencex/issues)"
    )


@dataclass(frozen=True, repr=False)
class SentencexSplitter(_BuiltinSplitter):
    """Rule-based splitting with Wikimedia's ``sentencex`` (a Rust extension; ~300 languages).

    ``language`` is an ISO 639 code (``"en"``, ``"de"``, ``"zh"``, ``"hi"``...) selecting the
    abbreviation list and terminators; sentencex silently falls back to English rules for a code
    it does not know. The terminators of Chinese, Japanese, Hindi, Bengali, Urdu and Arabic
    (``。！？``, ``।``, ``۔``, ``؟``) work whatever the language, but abbreviations only in
    their own language (and Greek ``;`` only with ``"el"``), so set ``language`` for
    non-English text. No model, no download; the fastest built-in.
    Measured on our gold set (``docs/sentence-splitting.md``): 89% of English cases split
    exactly, boundary F1 0.94; 90% of the other-language cases with the right ``language``,
    74% with ``"en"``.

    Good at: abbreviations in its lists (``Dr.``, ``e.g.``, ``U.S.``, ``Inc.``, ``No. 5``,
    ``Fig. 3``, ``vs.``, ``Lt. Col.``) and abbreviations that do end a sentence
    (``... in the U.S. He ...``, ``... Smith et al. Their ...``); initials, decimals, versions,
    URLs and e-mail addresses; quotes closing a sentence; bullet and numbered lists of two or
    more items; blank lines between paragraphs, even without final punctuation; hard-wrapped
    prose (a single line break inside a sentence is not a boundary).

    Bad at: a heading on its own line directly followed by text (``"Introduction\\nThis paper
    ..."`` stays one sentence); a single numbered item after a heading (``"Note:\\n1. Back up
    ..."`` is cut after ``1.``); sentence ends after ``…``, ``?!`` or a closing parenthesis
    (not split); unlisted abbreviations before a number (``Approx. 40``, ``Tel. 555`` are
    split); a few language-specific ones (French ``M. Dupont`` with ``"fr"``, Hindi ``डॉ.``,
    Russian ``т. д.`` ending a sentence, Japanese ``「…。」と``).

    sentencex 1.0.32 crashes (a Rust panic) on a one-letter capital, a non-ASCII space and a
    period (``"Plan A\u00a0."``); this class sidesteps that input without changing any split
    sentencex does produce (see the docs).
    """

    language: str = "en"
    name: ClassVar[str] = "sentencex"

    def __post_init__(self) -> None:
        if not isinstance(self.language, str):
            raise InvalidArgumentTypeError(
                f"language: expected a language code (str) such as 'en' or 'zh', "
                f"got {type_name(self.language)}"
            )
        if not _LANGUAGE_CODE.fullmatch(self.language):
            raise InvalidArgumentError(
                f"language: expected an ISO 639 language code such as 'en', 'de' or 'zh', "
                f"got {self.language!r}"
            )

    def split(self, text: str) -> list[str]:
        text = _check_text(text)
        if not text or text.isspace():
            return []
        return _stripped(_sentencex_pieces(self.language, text))

    @property
    def spec(self) -> str:
        return f"sentencex(language={self.language!r})"


# --------------------------------------------------------------------------------------------
# nltk Punkt

_PUNKT_LANGUAGE: Final = re.compile(r"[A-Za-z0-9_-]+")


def _punkt_missing(language: str, reason: str) -> MissingDependencyError:
    return MissingDependencyError(
        f"the 'punkt' sentence splitter needs nltk's Punkt data for {language!r} "
        f"(resource 'tokenizers/punkt_tab/{language}/'), which {reason}. "
        f"ctxeval itself never downloads anything; to use Punkt, install the data yourself with "
        f"`python -m nltk.downloader punkt_tab` (or point NLTK_DATA at a copy), or use the "
        f"default splitter, which needs no data: get_splitter('default') "
        f"(currently {DEFAULT_SPLITTER_NAME!r})"
    )


def _find_punkt_data(language: str) -> str:
    """The local directory of the punkt_tab model, or a clear error. Never downloads."""
    data = _require("nltk.data", "punkt", extra="nltk")
    try:
        path: str = str(data.find(f"tokenizers/punkt_tab/{language}/"))
    except LookupError as exc:
        raise _punkt_missing(language, "is not installed") from exc
    return path


@functools.lru_cache(maxsize=8)
def _punkt_tokenizer(language: str) -> Any:
    _find_punkt_data(language)
    try:
        from nltk.tokenize.punkt import PunktTokenizer
    except ImportError as exc:  # nltk < 3.8.2 cannot read the punkt_tab data
        raise missing_dependency(
            "the 'punkt' sentence splitter", "nltk>=3.8.2", extra="nltk"
        ) from exc
    try:
        return PunktTokenizer(language)
    except LookupError as exc:
        raise _punkt_missing(language, "could not be loaded") from exc


@dataclass(frozen=True, repr=False)
class PunktSplitter(_BuiltinSplitter):
    """nltk's Punkt sentence tokenizer with a pre-trained ``punkt_tab`` model.

    Needs the ``punkt_tab`` data installed by the user (``python -m nltk.downloader punkt_tab``);
    ctxeval never downloads it. Constructing the splitter checks that the data is present and
    raises :class:`~ctxeval.foundation.errors.MissingDependencyError` with these instructions if
    not.

    ``language`` is an nltk model name (``"english"``, ``"german"``, ``"russian"``...). Punkt is
    the classic baseline: good on English abbreviations it has seen, but like ``nupunkt`` it
    ignores line breaks and non-Latin terminators (``。``, ``।``). Offered for comparability with
    tools that use ``nltk.sent_tokenize``.
    """

    language: str = "english"
    name: ClassVar[str] = "punkt"

    def __post_init__(self) -> None:
        if not isinstance(self.language, str):
            raise InvalidArgumentTypeError(
                f"language: expected an nltk Punkt model name (str) such as 'english', "
                f"got {type_name(self.language)}"
            )
        if not _PUNKT_LANGUAGE.fullmatch(self.language):
            raise InvalidArgumentError(
                f"language: expected an nltk Punkt model name such as 'english' or 'german', "
                f"got {self.language!r}"
            )
        # Fail at construction, not on the thousandth chunk of a run.
        _find_punkt_data(self.language)

    def split(self, text: str) -> list[str]:
        text = _check_text(text)
        if not text or text.isspace():
            return []
        spans = _punkt_tokenizer(self.language).span_tokenize(text)
        return _stripped(text[start:end] for start, end in spans)

    @property
    def spec(self) -> str:
        return f"punkt(language={self.language!r})"


# --------------------------------------------------------------------------------------------
# newline


@dataclass(frozen=True, repr=False)
class NewlineSplitter(_BuiltinSplitter):
    """One sentence per line: for text that is already split (one sentence per line).

    Splits on every line break ``str.splitlines`` knows (``\\n``, ``\\r\\n``, ``\\u2028``...);
    blank lines are dropped. No language knowledge at all, and no dependency.
    """

    name: ClassVar[str] = "newline"

    def split(self, text: str) -> list[str]:
        return _stripped(_check_text(text).splitlines())

    @property
    def spec(self) -> str:
        return "newline"


# --------------------------------------------------------------------------------------------
# user callables


@dataclass(frozen=True)
class CallableSplitter:
    """A plain function ``str -> list[str]`` used as a splitter.

    Its output is held to the module's contract where that can be enforced: pieces are stripped,
    empty ones dropped, and anything but a list of strings is an error.
    """

    func: Callable[[str], list[str]]

    @property
    def name(self) -> str:
        return _callable_name(self.func)

    def split(self, text: str) -> list[str]:
        result = self.func(_check_text(text))
        if not isinstance(result, list | tuple) or not all(isinstance(s, str) for s in result):
            raise InvalidArgumentTypeError(
                f"splitter: the function {self.name!r} must return a list of str, "
                f"got {_describe_result(result)}"
            )
        return _stripped(result)

    def __repr__(self) -> str:
        return f"callable({self.name})"


def _callable_name(func: object) -> str:
    for attribute in ("__qualname__", "__name__"):
        name = getattr(func, attribute, None)
        if isinstance(name, str) and name:
            return name
    return type_name(func)


def _describe_result(result: object) -> str:
    if isinstance(result, list | tuple):
        bad = next(s for s in result if not isinstance(s, str))
        return f"a {type_name(result)} containing {type_name(bad)}"
    return type_name(result)


# --------------------------------------------------------------------------------------------
# resolution by name

#: The name of the splitter that ``get_splitter(None)`` and ``get_splitter("default")`` return.
DEFAULT_SPLITTER_NAME: Final = "sentencex"

_FACTORIES: Final[dict[str, Callable[..., SentenceSplitter]]] = {
    "newline": NewlineSplitter,
    "nupunkt": NupunktSplitter,
    "punkt": PunktSplitter,
    "sentencex": SentencexSplitter,
}

#: Every name :func:`get_splitter` accepts, ``"default"`` included.
SPLITTER_NAMES: Final = ("default", *sorted(_FACTORIES))


def _valid_names_text() -> str:
    return ", ".join(repr(name) for name in SPLITTER_NAMES)


def default_splitter() -> SentenceSplitter:
    """The default splitter: offline, multilingual, fast (see ``docs/sentence-splitting.md``)."""
    return _FACTORIES[DEFAULT_SPLITTER_NAME]()


_USAGE: Final = (
    "a name or name(option=value, ...), e.g. 'sentencex' or \"sentencex(language='de')\""
)


def _from_spec(spec: str) -> SentenceSplitter:
    """A splitter from its name or its repr, e.g. ``"sentencex(language='de')"``."""
    parsed = parse_spec(spec, what="sentence splitter", usage=_USAGE)
    if parsed.k is not None:
        raise SpecError(f"{spec!r}: a sentence splitter takes no '@k'")
    if parsed.args:
        raise SpecError(
            f"{spec!r}: sentence splitter options must be named, e.g. \"sentencex(language='de')\""
        )
    if parsed.name == "default":
        if parsed.kwargs:
            raise SpecError(
                f"splitter: 'default' takes no options, got {spec!r}; name the splitter "
                f"instead, e.g. \"{DEFAULT_SPLITTER_NAME}(language='de')\""
            )
        return default_splitter()
    factory = _FACTORIES.get(parsed.name)
    if factory is None:
        raise unknown_name(
            spec, "sentence splitter", parsed.name, list(SPLITTER_NAMES), where="splitter"
        )
    check_options(spec, parsed.name, parsed.kwargs, factory)
    return factory(**parsed.kwargs)


def get_splitter(
    spec: str | SentenceSplitter | Callable[[str], list[str]] | None = None,
) -> SentenceSplitter:
    """Resolve ``spec`` to a sentence splitter.

    - ``None`` or ``"default"``: the default splitter (:data:`DEFAULT_SPLITTER_NAME`);
    - a name, ``"nupunkt"``, ``"sentencex"``, ``"punkt"``, ``"newline"``, optionally with
      keyword options as in the splitter's repr: ``"sentencex(language='de')"``,
      ``"punkt(language='german')"``; so ``get_splitter(repr(s)) == s`` for every built-in;
    - a :class:`SentenceSplitter` (any object with ``name`` and ``split``): returned as is;
    - a plain callable ``str -> list[str]``: wrapped in a :class:`CallableSplitter` named
      after its ``__qualname__``.

    Raises :class:`~ctxeval.foundation.errors.SpecError` for an unknown name or option (suggesting
    the closest known one) and for a malformed spec, the splitter's own errors for a bad option
    value, :class:`~ctxeval.foundation.errors.InvalidArgumentTypeError` for anything else, and
    :class:`~ctxeval.foundation.errors.MissingDependencyError` when the splitter's package or data
    (nltk's Punkt model) is not installed.
    """
    if spec is None:
        return default_splitter()
    if isinstance(spec, str):
        return _from_spec(spec)
    if isinstance(spec, type):
        # A class is callable and may even have `name` and `split`; it is never what was meant.
        raise InvalidArgumentTypeError(
            f"splitter: got the class {spec.__qualname__}, expected an instance; "
            f"write {spec.__qualname__}() instead"
        )
    if isinstance(spec, SentenceSplitter):
        return spec
    if callable(spec):
        return CallableSplitter(spec)
    raise InvalidArgumentTypeError(
        f"splitter: expected a splitter name (str), a SentenceSplitter or a function "
        f"str -> list[str], got {type_name(spec)}; valid names: {_valid_names_text()}"
    )


def sentence_spans(sentences: Iterable[str], text: str, where: str) -> Iterator[tuple[int, int]]:
    """The spans of a splitter's ``sentences`` in ``text``, each found after the previous one
    (a splitter keeps its sentences verbatim and in order); a sentence that is not in the text
    is an :class:`~ctxeval.foundation.errors.InvalidArgumentError` starting with ``where``."""
    position = 0
    for sentence in sentences:
        start = text.find(sentence, position)
        if start < 0:
            raise InvalidArgumentError(
                f"{where}: the splitter returned a sentence that is not in the text "
                f"({sentence[:40]!r}); use a splitter that keeps sentences verbatim"
            )
        position = start + len(sentence)
        yield start, position
