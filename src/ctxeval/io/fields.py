"""Which input fields hold the retrieved context, the ground truth and the query id.

Datasets from other tools name these fields their own way (continuous-eval's
``retrieved_context``, ragas' ``retrieved_contexts``, llama-index's ``retrieved_ids``, ...).
:func:`resolve_fields` takes the field names of a source and either the user's explicit mapping or
nothing, and settles the names and the mode (text or ID) once per source, or says why it cannot.
The table of names it recognises is in ``docs/datasets.md``.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from dataclasses import fields as dataclass_fields
from pathlib import Path
from typing import Literal

from ctxeval.foundation.errors import (
    Fix,
    InvalidArgumentError,
    InvalidArgumentTypeError,
    type_name,
)
from ctxeval.records.model import Mode

__all__ = [
    "GROUND_TRUTH_CANDIDATES",
    "ID_CANDIDATES",
    "RETRIEVED_CANDIDATES",
    "FieldMap",
    "FieldsInput",
    "ResolvedFields",
    "resolve_fields",
]

Role = Literal["retrieved", "ground_truth"]
_MODES: tuple[Mode, ...] = ("text", "id")

RETRIEVED_CANDIDATES: dict[Mode, tuple[str, ...]] = {
    "text": (
        "retrieved_context",  # continuous-eval
        "retrieved_contexts",  # ragas
        "retrieved_text",
        "retrieved_texts",  # llama-index
        "contexts",  # ragas < 0.2
    ),
    "id": (
        "retrieved_ids",  # llama-index
        "retrieved_chunk_ids",
        "retrieved_context_ids",  # ragas
    ),
}
GROUND_TRUTH_CANDIDATES: dict[Mode, tuple[str, ...]] = {
    "text": (
        "ground_truth_context",  # continuous-eval
        "ground_truth_contexts",
        "reference_context",
        "reference_contexts",  # ragas
        "expected_text",
        "expected_texts",  # llama-index
    ),
    "id": (
        "relevant_ids",
        "relevant_chunk_ids",
        "gold_ids",
        "expected_ids",  # llama-index
        "reference_context_ids",  # ragas
        "qrels",  # {id: grade}
    ),
}
ID_CANDIDATES: tuple[str, ...] = ("id", "query_id", "qid", "question_id")

_ROLE_NAMES = {"retrieved": "retrieved", "ground_truth": "ground-truth"}
_CLI_FLAGS = {"retrieved": "--retrieved-field", "ground_truth": "--ground-truth-field"}
_NAME_BOTH = 'fields={"retrieved": ..., "ground_truth": ...}'
_FIX = f"name them: {_NAME_BOTH} (CLI: --retrieved-field, --ground-truth-field)"
_BOTH = {"retrieved": None, "ground_truth": None}
_NOT_FOUND_FIXES = (Fix("fields", _BOTH, _FIX.removeprefix("name them: ")),)
_TWO_MODES_FIXES = (
    Fix("fields", {"mode": "text"}, 'fields={"mode": "text"}'),
    Fix("fields", {"mode": "id"}, 'fields={"mode": "id"}'),
    Fix("fields", _BOTH, _NAME_BOTH),
)
_MODE_FIXES = (
    Fix("fields", {"mode": "text"}, 'fields={..., "mode": "text"}'),
    Fix("fields", {"mode": "id"}, '"mode": "id"'),
)


@dataclass(frozen=True, slots=True)
class FieldMap:
    """Names of the input fields; ``None`` means auto-detect.

    - ``retrieved``: the ranked retrieved contexts (text mode) or ids (ID mode);
    - ``ground_truth``: the ground-truth contexts (text mode), or the relevant ids or a
      ``{id: grade}`` qrels map (ID mode);
    - ``id``: the query id;
    - ``mode``: ``"text"`` or ``"id"``; inferred from the field names when ``None``;
    - ``text_key``: in text mode, the key (or attribute) holding an item's text when retrieved
      or ground-truth items are documents rather than strings; ``None`` looks for
      ``page_content`` (LangChain), ``text`` (llama-index), ``content`` (Haystack, chroma);
    - ``scores``: the retrieval scores of the retrieved items (optional in each record);
      ``None`` looks for ``retrieved_scores``.
    """

    retrieved: str | None = None
    ground_truth: str | None = None
    id: str | None = None
    mode: Mode | None = None
    text_key: str | None = None
    scores: str | None = None

    def __post_init__(self) -> None:
        for name in ("retrieved", "ground_truth", "id", "text_key", "scores"):
            value = getattr(self, name)
            if value is None:
                continue
            if not isinstance(value, str):
                raise InvalidArgumentTypeError(
                    f"FieldMap({name}={value!r}): a field name must be a string, got "
                    f"{type_name(value)}"
                )
            if not value:
                raise InvalidArgumentError(
                    f"FieldMap({name}=''): a field name cannot be empty; leave it out (None) to "
                    "auto-detect it"
                )
        if self.mode is not None and self.mode not in _MODES:
            raise InvalidArgumentError(
                f"FieldMap(mode={self.mode!r}): use 'text' (contexts), 'id' (chunk ids) or None "
                "(inferred from the field names)"
            )
        roles = (self.retrieved, self.ground_truth, self.id, self.scores)
        named = [n for n in roles if n is not None]
        if len(set(named)) != len(named):
            scores = "" if self.scores is None else f", scores={self.scores!r}"
            raise InvalidArgumentError(
                f"FieldMap(retrieved={self.retrieved!r}, ground_truth={self.ground_truth!r}, "
                f"id={self.id!r}{scores}): one field cannot play two roles"
            )


FieldsInput = FieldMap | Mapping[str, str] | None


def as_field_map(fields: object) -> FieldMap:
    """``fields`` as a :class:`FieldMap` (from ``None``, a mapping or a ``FieldMap``)."""
    if fields is None:
        return FieldMap()
    if isinstance(fields, FieldMap):
        return fields
    if isinstance(fields, Mapping):
        allowed = [f.name for f in dataclass_fields(FieldMap)]
        unknown = [key for key in fields if key not in allowed]
        if unknown:
            raise InvalidArgumentError(
                f"fields={dict(fields)!r}: unknown key {unknown[0]!r}; use "
                + ", ".join(repr(a) for a in allowed)
            )
        return FieldMap(**fields)
    raise InvalidArgumentTypeError(
        f"fields={fields!r}: pass a dict such as "
        '{"retrieved": "chunks", "ground_truth": "gold"}, a FieldMap, or None to auto-detect; '
        f"got {type_name(fields)}"
    )


@dataclass(frozen=True, slots=True)
class ResolvedFields:
    """The field names settled for one source, and its mode."""

    mode: Mode
    retrieved: str
    ground_truth: str
    id: str | None
    # The fields that are not metadata (looked at for every record: made once).
    used: frozenset[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        names = {self.retrieved, self.ground_truth}
        if self.id is not None:
            names.add(self.id)
        object.__setattr__(self, "used", frozenset(names))


class FieldsNotFoundError(InvalidArgumentError):
    """A field needed to read the source is absent (as opposed to ambiguous).

    A reader of a row-by-row source resolves the fields from its first record; when that record
    is the one that lacks a field, the reader looks at the next records instead.
    """


def resolve_fields(columns: Collection[str], fields: FieldsInput, *, source: str) -> ResolvedFields:
    """Settle the retrieved, ground-truth and id field names of ``source`` and its mode.

    ``columns`` are the field names the source has (a CSV header, a Parquet schema, the keys of a
    JSON record). Explicit names in ``fields`` win; the others are looked up among the names the
    ecosystem uses. Raises :class:`~ctxeval.foundation.errors.InvalidArgumentError` when a field is
    absent or two candidates for one role are present, naming ``source``, the fields seen and the
    fix.
    """
    wanted = as_field_map(fields)
    present = list(columns)
    have = set(present)

    for role in ("retrieved", "ground_truth", "id", "scores"):
        name = getattr(wanted, role)
        if name is not None and name not in have:
            raise FieldsNotFoundError(
                f'{source}: fields["{role}"] = {name!r} is not a field here; '
                f"fields found: {_names(present)}",
                fixes=(Fix("fields", {role: name}, f'fields["{role}"] = {name!r}'),),
            )

    modes = _candidate_modes(wanted)
    found: dict[Mode, dict[Role, list[str]]] = {
        mode: {
            "retrieved": _found(wanted.retrieved, RETRIEVED_CANDIDATES[mode], have),
            "ground_truth": _found(wanted.ground_truth, GROUND_TRUTH_CANDIDATES[mode], have),
        }
        for mode in modes
    }
    complete = [m for m in modes if found[m]["retrieved"] and found[m]["ground_truth"]]
    if not complete:
        raise FieldsNotFoundError(
            _not_found_message(source, present, modes, found), fixes=_NOT_FOUND_FIXES
        )
    if len(complete) > 1:
        if wanted.retrieved is None or wanted.ground_truth is None:
            raise InvalidArgumentError(_two_modes_message(source, found), fixes=_TWO_MODES_FIXES)
        # Two names of the user's own say nothing about the mode: contexts are the common case.
        complete = ["text"]
    mode = complete[0]
    for role in ("retrieved", "ground_truth"):
        names = found[mode][role]  # type: ignore[index]
        if len(names) > 1:
            raise _ambiguous(source, role, names)

    id_field = wanted.id
    if id_field is None:
        ids = [name for name in ID_CANDIDATES if name in have]
        if len(ids) > 1:
            raise _ambiguous(source, "id", ids)
        id_field = ids[0] if ids else None
    retrieved, ground_truth = found[mode]["retrieved"][0], found[mode]["ground_truth"][0]
    if id_field in (retrieved, ground_truth):
        id_field = None
    return ResolvedFields(mode, retrieved, ground_truth, id_field)


def _candidate_modes(wanted: FieldMap) -> list[Mode]:
    if wanted.mode is not None:
        return [wanted.mode]
    modes = list(_MODES)
    implied: dict[str, set[Mode]] = {}
    for role, table in (
        ("retrieved", RETRIEVED_CANDIDATES),
        ("ground_truth", GROUND_TRUTH_CANDIDATES),
    ):
        name = getattr(wanted, role)
        fits = {m for m in _MODES if name in table[m]}
        if name is not None and fits:
            implied[role] = fits
            modes = [m for m in modes if m in fits]
    if not modes:
        raise InvalidArgumentError(
            f"fields: {wanted.retrieved!r} is a {_mode_name(next(iter(implied['retrieved'])))} "
            f"field name and {wanted.ground_truth!r} a "
            f"{_mode_name(next(iter(implied['ground_truth'])))} one; say which mode the data is "
            'in: fields={..., "mode": "text"} (contexts) or "mode": "id" (chunk ids)',
            fixes=_MODE_FIXES,
        )
    return modes


def _found(explicit: str | None, candidates: tuple[str, ...], have: set[str]) -> list[str]:
    if explicit is not None:
        return [explicit]
    return [name for name in candidates if name in have]


def _mode_name(mode: Mode) -> str:
    return "text-mode" if mode == "text" else "ID-mode"


def _names(names: Collection[str], limit: int = 30) -> str:
    if not names:
        return "(none)"
    shown = [repr(n) for n in list(names)[:limit]]
    more = len(names) - limit
    return ", ".join(shown) + (f", ... ({more} more)" if more > 0 else "")


def _not_found_message(
    source: str, present: list[str], modes: list[Mode], found: dict[Mode, dict[Role, list[str]]]
) -> str:
    # Describe the mode that came closest, so a half-recognised dataset gets a precise hint.
    best = max(modes, key=lambda m: len(found[m]["retrieved"]) + len(found[m]["ground_truth"]))
    half = found[best]["retrieved"] or found[best]["ground_truth"]
    if half:
        have_role: Role = "retrieved" if found[best]["retrieved"] else "ground_truth"
        miss_role: Role = "ground_truth" if have_role == "retrieved" else "retrieved"
        table = RETRIEVED_CANDIDATES if miss_role == "retrieved" else GROUND_TRUTH_CANDIDATES
        head = (
            f"{source}: found the {_ROLE_NAMES[have_role]} field {half[0]!r} "
            f"({_mode_name(best)}) but no {_ROLE_NAMES[miss_role]} field (looked for "
            f"{_names(table[best])})"
        )
    else:
        looked = "; ".join(
            f"{_mode_name(m)}: retrieved {_names(RETRIEVED_CANDIDATES[m])}, ground truth "
            f"{_names(GROUND_TRUTH_CANDIDATES[m])}"
            for m in modes
        )
        head = (
            f"{source}: cannot tell which fields hold the retrieved context and the ground "
            f"truth (looked for {looked})"
        )
    result = [c for c in present if _measure_name(c)]
    if "id" in present and len(result) >= 2:  # a result saved as CSV, without its summary
        name = Path(source).stem if source.lower().endswith(".csv") else ""
        return (
            f"{source}: the columns are a saved result's ({_names(result[:3])}, ...), not a "
            "dataset's: a result saved as .csv keeps its aggregate and summary in "
            f"{name or 'NAME'}.summary.json beside it, which is missing or damaged; keep the "
            "two together, or evaluate the dataset again"
        )
    return f"{head}; fields found: {_names(present)}; {_FIX}"


def _measure_name(column: str) -> bool:
    """Whether ``column`` is named like a result's metric column (``ndcg@10``)."""
    from ctxeval.metrics.measures import MEASURES

    return column.removeprefix("micro_").split("@")[0].split("(")[0] in MEASURES


def _two_modes_message(source: str, found: dict[Mode, dict[Role, list[str]]]) -> str:
    text, ids = found["text"], found["id"]
    return (
        f"{source}: the fields fit both text mode ({_names(text['retrieved'])} with "
        f"{_names(text['ground_truth'])}) and ID mode ({_names(ids['retrieved'])} with "
        f"{_names(ids['ground_truth'])}); choose one: "
        'fields={"mode": "text"} or fields={"mode": "id"}, or name the fields: '
        'fields={"retrieved": ..., "ground_truth": ...}'
    )


def _ambiguous(source: str, role: str, names: list[str]) -> InvalidArgumentError:
    flag = _CLI_FLAGS.get(role)
    cli = f" (CLI: {flag} {names[0]})" if flag else ""
    what = _ROLE_NAMES.get(role, role)
    fix = Fix("fields", {role: names[0]}, f'fields={{"{role}": {names[0]!r}}}{cli}')
    return InvalidArgumentError(
        f"{source}: {_names(names)} could each be the {what} field; name the one to use: "
        f"{fix.text}",
        fixes=(fix,),
    )
