"""What the built-in strategies share: value semantics, spec strings and sentence units."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from ctxeval.foundation.errors import InvalidArgumentTypeError, type_name
from ctxeval.matching.base import Matches, Unit
from ctxeval.text.sentences import SentenceSplitter, get_splitter


def format_value(value: object) -> str:
    """Render an option value the way a spec string writes it (a Python literal)."""
    if isinstance(value, float) and value.is_integer():
        return repr(value)
    spec = getattr(value, "spec", None)
    if isinstance(spec, str):
        return repr(spec)
    name = getattr(value, "name", None)
    if isinstance(name, str) and not isinstance(value, str | int | float | bool):
        return repr(name)
    return repr(value)


_NO_DEFAULT = object()


class BuiltinStrategy:
    """Base of the built-in strategies: immutable values that compare and hash by their options.

    ``spec`` is the canonical string (``"rouge-chunk(threshold=0.7)"``): options that always
    matter (the threshold) are shown, the others only when they differ from the default.
    """

    spec_name: ClassVar[str]
    unit_kind: ClassVar[Unit]
    always_shown: ClassVar[tuple[str, ...]] = ()
    defaults: ClassVar[dict[str, Any]] = {}

    __slots__ = ("_hash", "_splitter")

    def __init__(self, splitter: object = None) -> None:
        self._splitter: SentenceSplitter | None = (
            get_splitter(splitter)  # type: ignore[arg-type]
            if self.unit_kind == "sentence"
            else None
        )

    # -- value semantics -------------------------------------------------------------------
    def options(self) -> dict[str, Any]:
        """Every option of this strategy, in constructor order."""
        raise NotImplementedError

    def _shown_options(self) -> dict[str, Any]:
        shown = {}
        for name, value in self.options().items():
            if name == "splitter":
                default: Any = get_splitter(None)
            else:
                default = self.defaults.get(name, _NO_DEFAULT)
            if name in self.always_shown or default != value:
                shown[name] = value
        return shown

    @property
    def unit(self) -> Unit:
        return self.unit_kind

    @property
    def spec(self) -> str:
        shown = self._shown_options()
        if not shown:
            return self.spec_name
        args = ", ".join(f"{k}={format_value(v)}" for k, v in shown.items())
        return f"{self.spec_name}({args})"

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={format_value(v)}" for k, v in self._shown_options().items())
        return f"{type(self).__name__}({args})"

    def __eq__(self, other: object) -> bool:
        if other is self:
            return True
        return isinstance(other, BuiltinStrategy) and (
            type(other) is type(self) and other.options() == self.options()
        )

    def __hash__(self) -> int:
        # Strategies key the per-record judgment cache: hash the (immutable) options once.
        try:
            return self._hash
        except AttributeError:
            self._hash: int = hash((type(self), tuple(self.options().items())))
            return self._hash

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild, (type(self), self.options()))

    # -- units -----------------------------------------------------------------------------
    @property
    def splitter(self) -> SentenceSplitter | None:
        return self._splitter

    def units(self, texts: Sequence[str]) -> list[str]:
        if self._splitter is None:
            return list(texts)
        split = self._splitter.split
        return [sentence for text in texts for sentence in split(text)]

    def match(self, retrieved: Sequence[str], ground_truth: Sequence[str]) -> Matches:
        raise NotImplementedError


def _rebuild(cls: type[BuiltinStrategy], options: dict[str, Any]) -> BuiltinStrategy:
    return cls(**options)


def check_bool(owner: str, name: str, value: object) -> bool:
    if not isinstance(value, bool):
        raise InvalidArgumentTypeError(
            f"{owner}({name}=...) must be True or False, got {type_name(value)} {value!r}"
        )
    return value
