"""Panels: several judges' scores combined into one score by a rule declared before the labels.

A panel card decides from one combined score per item, made from every member's own pooled
score (``calibration.confidence.score_items``: P(positive) per judge, over its orders, samples
and prompt variants). The rules (``calibration.options.PANEL_RULES``):

- ``logodds`` (the default): P = sigmoid(mean over members of logit(p_j)), the geometric mean
  of the members' odds. It ranks and decides exactly as the summed log-odds (the members' votes
  weighed by their confidence, as if they were independent), without saturating at 1.0.
- ``mean``: the mean of the members' probabilities.
- ``fitted``: a logistic model of P(the summed log-odds decision is right) on the members'
  log-odds signed towards that decision, fitted on a label-free cluster split of the gold
  (``calibration_split``) and certified on the other part only: the labels it was fitted on
  never certify its band. The decision stays the summed log-odds one; an item the model thinks
  more likely wrong than right gets confidence 1/2 (never decided).
- ``pooled``: every verdict row of every member pooled into one mean (or vote share), as panels
  were made before rules were declared; a row-weighted mean. Kept so that cards written then can
  be reproduced; it is no longer the default.

An item that a member did not score (no verdict, or only failed ones) gets no panel score: it is
listed as unscored (``member_missing`` or the member's failure counts) and stays in the coverage
denominator, as routing sends it to review.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from calibration.confidence import (
    ItemScore,
    Kind,
    ScoreSet,
    fitted_params,
    logit,
    pooled_fields,
)

# The rules are named with the options (judge calibrate --help reads them, without numpy).
from calibration.options import PanelRule
from judge.errors import InputError
from judge.kinds import SCORING

#: Why an item has no panel score when a member has no score at all for it.
MEMBER_MISSING = "member_missing"


def sigmoid(z: float) -> float:
    """1 / (1 + exp(-z)), without overflow."""
    if z >= 0:
        return 1.0 / (1.0 + math.exp(-z))
    e = math.exp(z)
    return e / (1.0 + e)


@dataclass(frozen=True, slots=True)
class PanelModel:
    """The ``fitted`` rule's model: P(right) = sigmoid(intercept + sum_j w_j * x_j), x_j the
    member j's log-odds signed towards the summed log-odds decision."""

    members: tuple[str, ...]
    weights: tuple[float, ...]
    intercept: float

    def p_right(self, probs: Sequence[float]) -> float:
        """P(the summed log-odds decision is right) for one item's member probabilities."""
        z = [logit(p) for p in probs]
        sign = 1.0 if sum(z) >= 0 else -1.0
        return sigmoid(
            self.intercept + math.fsum(w * x * sign for w, x in zip(self.weights, z, strict=True))
        )

    def params(self) -> dict[str, Any]:
        """The model as plain numbers (the card keeps them, so routing applies the same map)."""
        return {
            "members": list(self.members),
            "weights": list(self.weights),
            "intercept": self.intercept,
            "map": "P(right) = 1 / (1 + exp(-(intercept + sum_j weights_j * s * logit(p_j)))), "
            "s = the sign of sum_j logit(p_j)",
        }

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> PanelModel:
        """The model a card describes (KeyError, TypeError or ValueError when malformed)."""
        members = tuple(str(m) for m in params["members"])
        weights = tuple(float(w) for w in params["weights"])
        if len(members) != len(weights):
            raise ValueError("one weight per member is needed")
        return cls(members, weights, float(params["intercept"]))


def combine_probs(
    probs: Sequence[float], rule: PanelRule, model: PanelModel | None = None
) -> float:
    """One item's panel score (P(positive)) from its members' scores, in member order."""
    if not probs:
        raise ValueError("a panel score needs every member's score")
    if rule == "logodds":
        return sigmoid(math.fsum(logit(p) for p in probs) / len(probs))
    if rule == "mean":
        return math.fsum(probs) / len(probs)
    if rule == "fitted":
        if model is None:
            raise ValueError("the fitted rule needs its model")
        total = math.fsum(logit(p) for p in probs)
        if total == 0:
            return 0.5
        right = max(0.5, model.p_right(probs))
        return right if total > 0 else 1.0 - right
    raise ValueError(f"rule {rule!r} does not combine member scores")


def combine(
    members: Sequence[ScoreSet], rule: PanelRule, model: PanelModel | None = None
) -> ScoreSet:
    """The panel's ScoreSet: one combined score per item every member scored; items a member
    did not score are unscored (its failure counts, or ``member_missing``)."""
    if not members:
        raise InputError("a panel needs at least one judge", field="judges")
    kinds = {m.kind for m in members}
    if len(kinds) != 1:
        raise InputError(f"panel members mix rubric kinds {sorted(kinds)}", field="kind")
    lookups = [m.by_id() for m in members]
    order: dict[str, None] = {}
    for m in members:
        order.update(dict.fromkeys(i.item_id for i in m.items))
        order.update(dict.fromkeys(m.unscored))
    items: list[ItemScore] = []
    unscored: dict[str, dict[str, int]] = {}
    for item_id in order:
        found = [lk.get(item_id) for lk in lookups]
        if any(f is None for f in found):
            counts: dict[str, int] = {}
            for m, f in zip(members, found, strict=True):
                if f is None:
                    for status, n in m.unscored.get(item_id, {MEMBER_MISSING: 1}).items():
                        counts[status] = counts.get(status, 0) + n
            unscored[item_id] = counts
            continue
        parts = [f for f in found if f is not None]
        items.append(_combined(item_id, parts, rule, model))
    return ScoreSet(
        kind=members[0].kind,
        judge="panel(" + ", ".join(m.judge for m in members) + ")",
        items=tuple(items),
        unscored=unscored,
    )


def _combined(
    item_id: str, parts: Sequence[ItemScore], rule: PanelRule, model: PanelModel | None
) -> ItemScore:
    return ItemScore(
        item_id=item_id,
        score=min(1.0, max(0.0, combine_probs([p.score for p in parts], rule, model))),
        source="prob" if all(p.source == "prob" for p in parts) else "votes",
        n_rows=sum(p.n_rows for p in parts),
        judges=tuple(j for p in parts for j in p.judges),
        **pooled_fields(parts),
    )


def fit_panel(members: Sequence[ScoreSet], *, kind: Kind) -> PanelModel:
    """Fit the ``fitted`` rule's model on the gold items every member scored (the fit part
    only: the caller keeps these items out of certification)."""
    import numpy as np
    from sklearn.linear_model import LogisticRegression

    names = tuple(m.judge for m in members)
    lookups = [m.by_id() for m in members]
    spec = SCORING[kind]
    features, right = [], []
    for item in members[0].items:
        found = [lk.get(item.item_id) for lk in lookups]
        if any(f is None for f in found) or item.gold is None:
            continue
        z = [logit(f.score) for f in found if f is not None]
        total = math.fsum(z)
        if total == 0:
            continue  # no decision to be right or wrong about
        sign = 1.0 if total > 0 else -1.0
        features.append([x * sign for x in z])
        right.append((spec.positive if sign > 0 else spec.negative) == item.gold)
    y = np.asarray(right, dtype=int)
    if len(y) < 10 or y.all() or not y.any():
        raise InputError(
            f"cannot fit the panel's model on {len(y)} gold items with one outcome only or "
            "fewer than 10 items",
            field="panel_rule",
            hint="use --panel-rule logodds, or more gold",
        )
    fitted = LogisticRegression(C=1.0, max_iter=1000)
    fitted.fit(np.asarray(features, dtype=float), y)
    model = PanelModel(names, tuple(float(w) for w in fitted.coef_[0]), float(fitted.intercept_[0]))
    # Its numbers rounded as every fitted map's are (calibration.confidence.FIT_DIGITS).
    return PanelModel.from_params(fitted_params(model.params()))
