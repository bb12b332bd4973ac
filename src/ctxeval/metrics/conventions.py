"""Named conventions: the option sets that reproduce each reference tool's numbers.

docs/metrics.md has the full table; tests/metrics/test_reference_*.py prove every row against the
tool itself.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from ctxeval.foundation.errors import InvalidArgumentError
from ctxeval.foundation.params import check_choice
from ctxeval.foundation.specs import unknown_name
from ctxeval.judging.judgments import Credit
from ctxeval.metrics.reference import APCredit, APDenominator, Gain, Ideal, PrecisionDenominator

__all__ = ["CONVENTIONS", "RankOptions", "resolve_rank_options"]


@dataclass(frozen=True, slots=True)
class RankOptions:
    """How the rank metrics are defined where tools disagree."""

    credit: Credit = "matching"
    ap_denominator: APDenominator = "relevant"
    ap_credit: APCredit = "one_to_one"
    gain: Gain = "linear"
    ideal: Ideal = "ground_truth"
    precision_denominator: PrecisionDenominator = "k"


CONVENTIONS: dict[str, RankOptions] = {
    # trec_eval 9 through pytrec_eval: map, ndcg / ndcg_cut_k, P_k, recall_k, recip_rank.
    "trec_eval": RankOptions(),
    # ranx: map, ndcg (Jarvelin, linear gain), precision, recall, mrr, hit_rate. Its
    # ndcg_burges is gain="exponential".
    "ranx": RankOptions(),
    # continuous-eval RankedRetrievalMetrics: AP over the retrieved chunks that match any ground
    # truth (not one-to-one), linear NDCG with first-come one-to-one credit whose ideal is every
    # ground-truth item.
    "continuous_eval": RankOptions(
        credit="first_come",
        ap_denominator="hits",
        ap_credit="any",
        precision_denominator="retrieved",
    ),
}

_CHOICES: dict[str, tuple[str, ...]] = {
    "credit": ("matching", "first_come"),
    "ap_denominator": ("relevant", "hits"),
    "ap_credit": ("one_to_one", "any"),
    "gain": ("linear", "exponential"),
    "ideal": ("ground_truth", "retrieved"),
    "precision_denominator": ("k", "retrieved"),
}


def resolve_rank_options(owner: str, convention: str | None, **overrides: Any) -> RankOptions:
    """Start from ``convention`` (trec_eval when None) and apply explicit, non-None overrides."""
    name = "trec_eval" if convention is None else convention.replace("-", "_").lower()
    base = CONVENTIONS.get(name)
    if base is None:
        raise unknown_name(
            convention,
            "convention",
            str(convention),
            list(CONVENTIONS),
            where=f"{owner}(convention={convention!r})",
        )
    changes = {}
    for option, value in overrides.items():
        if value is not None:
            changes[option] = check_choice(owner, option, value, _CHOICES[option])
    options = replace(base, **changes)
    if options.ap_credit == "any" and options.ap_denominator != "hits":
        raise InvalidArgumentError(
            f"{owner}(ap_credit='any') counts every chunk that matches some ground truth, so AP "
            "over the relevant items could exceed 1; it needs ap_denominator='hits'"
        )
    return options
