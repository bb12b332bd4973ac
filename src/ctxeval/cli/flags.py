"""Messages in the syntax of where the user is: the library's messages name their fixes as Python
arguments (``fields={"mode": "text"}``, ``on_error='skip'``) and carry them as
:class:`~ctxeval.foundation.errors.Fix` es (parameter, value, the message's text for it); on the
command line the same fix is a flag (``--mode text``, ``--on-error skip``). :data:`FLAGS` is the
whole dictionary, by parameter; :func:`cli_message` puts each fix's flag in place of its Python
text, by plain replacement of that known text. A message without fixes (click's own usage errors,
the CLI's own messages) prints as it is.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ctxeval.foundation.errors import Fix, fixes_of

__all__ = ["FLAGS", "cli_message", "cli_text", "cli_words", "skipped_fixes"]

Say = str | Callable[[Fix], str]
"""How the CLI says a fix: a template (``{value}``: the value; a dict value's keys by name) or a
function of the fix."""


def _shown(value: object) -> str:
    """A value as typed on the command line: a string bare, None (a name the user gives) as NAME."""
    return "NAME" if value is None else str(value)


def _fields(fix: Fix) -> str:
    """``fields={"retrieved": ..., "ground_truth": ...}``: one flag per key, in order."""
    flags = [
        str(FLAGS[f"fields.{key}"]).format(value=_shown(value)) for key, value in fix.value.items()
    ]
    return " ".join(flags)


def _missing_queries(fix: Fix) -> str:
    said = {
        "zero": "-c; --skip-missing leaves them out",
        "skip": "--skip-missing; -c scores them 0",
    }
    return said.get(fix.value, fix.text)


def _format(fix: Fix) -> str:
    """An input's format is its extension on the command line."""
    if isinstance(fix.value, str):
        return f"name the file .{fix.value}"
    extensions = [f".{name}" for name in fix.value]
    listed = ", ".join(extensions[:-1]) + f" or {extensions[-1]}"
    return f"give the file its format's extension ({listed})"


FLAGS: dict[str, Say] = {
    "caller": "",  # the Python call a message starts with ("compare(): "): the command is it
    "fields": _fields,
    "fields.retrieved": "--retrieved-field {value}",
    "fields.ground_truth": "--ground-truth-field {value}",
    "fields.id": "--id-field {value}",
    "fields.mode": "--mode {value}",
    "fields.text_key": "--text-key {value}",
    "fields.scores": "--scores-field {value}",
    "on_error": "--on-error {value}",
    "workers": "--workers {value}",
    "scheduler": "--scheduler {value}",
    "batch_size": "--batch-size {value}",
    "threshold": "--threshold {value}",
    "primary": "--primary {value}",
    "align": "--align {value}",
    "tokenizer": "--tokenizer {value}",
    "tokenizer_object": "or, from Python, an object with a tokenize(text) -> list[str] method",
    "corpus": "--corpus PATH",
    "chunkers": (
        "got {value} --chunker; a comparison needs at least two runs: two chunkers, e.g. "
        '--chunker fixed="fixed(words=100)" --chunker sentences="sentences(n=3)", or two '
        "retrievers (--retriever none for one chunker's ceilings alone)"
    ),
    "missing_queries": _missing_queries,
    "format": _format,
    "from_trec": (
        "ctxeval evaluate --run RUN --qrels QRELS; or turn it into records with ctxeval "
        "convert RUN OUT.jsonl --qrels QRELS"
    ),
    "k.budget": (
        "-k {value} needs the chunks' texts, but these records have chunk ids; give -k a number "
        "of chunks"
    ),
    "matching_strategy.chunk": (
        "-m {measures} ranks retrieved chunks, but --match {strategy} matches sentences; use "
        "--match with a chunk strategy"
    ),
}
"""How the command line says each parameter a :class:`Fix` names (a test checks that every
parameter used in the library has its entry)."""


def cli_words(fix: Fix) -> str:
    """What the command line says for ``fix``."""
    say = FLAGS[fix.parameter]
    if callable(say):
        return say(fix)
    named: dict[str, Any] = {}
    if isinstance(fix.value, Mapping):
        named = {key: _shown(value) for key, value in fix.value.items()}
    return say.format(value=_shown(fix.value), **named)


# Paths the user did not give, shown as what they stand for (stdin spooled to a file).
_SHOWN_AS: dict[str, str] = {}


def show_path_as(path: str, name: str) -> None:
    """From now on, messages say ``name`` where they would say ``path``: ``<stdin>`` for the
    file stdin is spooled to (unique, and gone once the command ends; kept for the process,
    as an error is printed after the command's blocks have closed)."""
    _SHOWN_AS[path] = name


def cli_message(message: str, fixes: Iterable[Fix]) -> str:
    """``message`` with each fix's Python text replaced by its command-line words (the longest
    texts first, so that one fix's text inside another's is replaced as part of the longer),
    and the paths :func:`show_path_as` names by their names."""
    distinct = {fix.text: fix for fix in fixes}.values()
    for fix in sorted(distinct, key=lambda f: len(f.text), reverse=True):
        message = message.replace(fix.text, cli_words(fix))
    for path, name in _SHOWN_AS.items():
        message = message.replace(path, name)
    return message


def cli_text(item: object, fixes: Iterable[Fix] = ()) -> str:
    """``str(item)`` (an exception, a warning, a record's error or a plain message) in the
    command line's words: the fixes it carries, and ``fixes`` (those of an error whose text
    ``item`` quotes)."""
    return cli_message(str(item), (*fixes_of(item), *fixes))


def skipped_fixes(skipped: Mapping[str, Any]) -> tuple[Fix, ...]:
    """The fixes of a skipped record as a result lists it (``result.skipped``)."""
    return tuple(Fix(**fix) for fix in skipped.get("fixes", ()))
