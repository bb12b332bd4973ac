"""What each compared run was evaluated with, read from its result's summary: the file, the
matching strategy and its threshold, the rank-metric convention, the cut-offs and the context it
used. A comparison states these so that a reader knows what the numbers mean, and notices when
the runs were not evaluated alike.
"""

from __future__ import annotations

import ast
import numbers
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any

from ctxeval.foundation.errors import CtxevalError, CtxevalWarning
from ctxeval.matching import parse_strategy
from ctxeval.metrics.conventions import CONVENTIONS, RankOptions
from ctxeval.metrics.measures import parse_measure

__all__ = ["RunSettings", "UnlikeRunsWarning", "run_settings", "shared_setting", "warn_unlike"]

_RANK_OPTIONS = {item.name for item in fields(RankOptions)}


@dataclass(frozen=True)
class RunSettings:
    """One run's evaluation settings (``None`` where its summary does not say).

    ``strategy``: the matching strategy's spec (``None`` in ID mode, and when only span
    measures ran); ``threshold``: its threshold; ``convention``: the named rank-metric
    convention its options reproduce (``"custom (...)"`` when none does; ``None`` without rank
    metrics); ``ks``: the cut-offs; ``mean_retrieved``: retrieved items per query before any
    cut-off; ``spans``: where the span measures' spans came from (``"located in the corpus"``,
    ``"given"``, ``"given or located in the corpus"``; ``None`` without span measures).
    """

    source: str | None
    strategy: str | None
    threshold: float | None
    convention: str | None
    ks: tuple[str, ...]
    mean_retrieved: float | None
    spans: str | None = None

    def judging(self, spans: bool = True, matches: bool = True) -> str:
        """How the run's items were judged: its matching strategy (``"by id"`` without one) for
        the measures of matches, where the spans came from for the span measures; ``spans`` or
        ``matches`` False leaves that part out (no such measure compared)."""
        parts = []
        if matches and (self.strategy is not None or self.spans is None):
            parts.append(self.strategy or "by id")
        if spans and self.spans is not None:
            parts.append(f"spans {self.spans}")
        return "; ".join(parts)


def run_settings(summary: Mapping[str, Any]) -> RunSettings:
    """The settings recorded in a result's ``summary``."""
    source = summary.get("source")
    strategy = summary.get("strategy")
    ks = summary.get("ks") or ()
    retrieved = summary.get("mean_retrieved_per_query")
    return RunSettings(
        source=None if source is None else str(source),
        strategy=strategy if isinstance(strategy, str) else None,
        threshold=_threshold(strategy),
        convention=_convention(summary.get("metrics")),
        ks=tuple("all" if k is None else str(k) for k in ks),
        mean_retrieved=float(retrieved) if isinstance(retrieved, numbers.Real) else None,
        spans=_spans(summary.get("located")),
    )


def _spans(located: object) -> str | None:
    """Where the spans came from, by the counts of the run's span pass (``summary["located"]``,
    there whenever a span measure ran)."""
    if not isinstance(located, Mapping):
        return None
    given = located.get("given") or 0
    found = sum(located.get(key) or 0 for key in ("exact", "normalised", "fuzzy"))
    if given and found:
        where = "given or located in the corpus"
    else:
        where = "located in the corpus" if found else "given"
    missing = located.get("unlocated") or 0
    return where + (f" ({missing} not located)" if missing else "")


class UnlikeRunsWarning(CtxevalWarning):
    """The runs compared were judged differently (another matching strategy or threshold, rank
    convention, or source of spans): their differences are partly the judging's."""


#: The settings that decide how a run's items were judged, and what the warning calls them.
_JUDGING = {"strategy": "matching", "convention": "rank convention", "spans": "spans"}


def warn_unlike(settings: Mapping[str, RunSettings]) -> None:
    """Warn when the runs were not judged alike (a run whose summary does not say is not told
    apart)."""
    unlike = [
        f"{said} {shared_setting({run: getattr(s, name) for run, s in settings.items()})}"
        for name, said in _JUDGING.items()
        if len({getattr(s, name) for s in settings.values() if getattr(s, name)}) > 1
    ]
    if unlike:
        warnings.warn(
            UnlikeRunsWarning(
                f"the runs were not judged alike ({'; '.join(unlike)}): a difference between "
                "them is partly the judging's, not the retrieval's; evaluate them with the "
                "same settings"
            ),
            stacklevel=3,
        )


def shared_setting(values: Mapping[str, object]) -> str:
    """One value when every run has it, else ``run: value`` for each run."""
    shown = {run: _shown(value) for run, value in values.items()}
    distinct = set(shown.values())
    if len(distinct) == 1:
        return distinct.pop()
    return "; ".join(f"{run}: {value}" for run, value in shown.items())


def _shown(value: object) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, tuple):
        return ", ".join(map(str, value)) or "n/a"
    return str(value)


def _call(spec: object) -> ast.Call | None:
    if not isinstance(spec, str):
        return None
    try:
        node = ast.parse(spec, mode="eval").body
    except SyntaxError:
        return None
    return node if isinstance(node, ast.Call) else None


def _keywords(call: ast.Call) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for keyword in call.keywords:
        if keyword.arg is None:
            continue
        try:
            found[keyword.arg] = ast.literal_eval(keyword.value)
        except ValueError:
            continue
    return found


def _threshold(strategy: object) -> float | None:
    if not isinstance(strategy, str):
        return None
    try:
        value = parse_strategy(strategy).options().get("threshold")
    except CtxevalError:
        return None  # a custom strategy's spec: no threshold ctxeval can read
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return None
    return float(value)


def _convention(metrics: object) -> str | None:
    """The convention of the run's rank metrics: their options (written in their repr when they
    differ from the defaults) matched against :data:`CONVENTIONS`."""
    if not isinstance(metrics, Sequence) or isinstance(metrics, str):
        return None
    found: list[str] = []
    for spec in metrics:
        call = _call(spec)
        if call is None:
            continue
        if "Ranked" in ast.unparse(call.func):
            options = {k: v for k, v in _keywords(call).items() if k in _RANK_OPTIONS}
            found.append(_convention_of(options))
        elif ast.unparse(call.func) in ("TextMeasures", "IDMeasures"):
            measured = _measures_options(call)
            if measured is not None:
                found.append(_convention_of(measured))
    return None if not found else ", ".join(dict.fromkeys(found))


def _measures_options(call: ast.Call) -> dict[str, Any] | None:
    """The rank options of a set of measure specs (``-m ndcg@10 -m recall@10``), each measure's
    options written in its spec when they differ from the defaults; None without rank
    measures."""
    try:
        specs = ast.literal_eval(call.args[0]) if call.args else ()
    except ValueError:
        return None
    options: dict[str, Any] = {}
    ranked = False
    for spec in specs if isinstance(specs, tuple | list) else ():
        try:
            measure = parse_measure(spec)
        except ValueError:
            continue
        if measure.definition.family == "rank":
            ranked = True
            options.update((k, v) for k, v in measure.options if k in _RANK_OPTIONS)
    return options if ranked else None


def _convention_of(options: Mapping[str, Any]) -> str:
    """The convention that agrees with every option given and leaves the fewest of its own
    options unsaid (an ID-mode metric has no ``credit`` option, so its repr never says it)."""
    defaults = RankOptions()
    candidates = []
    for name, convention in CONVENTIONS.items():
        if all(getattr(convention, key) == value for key, value in options.items()):
            unsaid = sum(
                getattr(convention, key) != getattr(defaults, key)
                for key in _RANK_OPTIONS - set(options)
            )
            candidates.append((unsaid, name))
    if candidates:
        return min(candidates, key=lambda item: item[0])[1]
    return "custom (" + ", ".join(f"{k}={v!r}" for k, v in sorted(options.items())) + ")"
