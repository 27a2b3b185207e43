"""Label plans: which runs people should label, drawn at random with recorded inclusion
probabilities (uniform, or active: more often where the judge is unsure), and the check that the
labelled runs are the plan's sample, which the PPI estimates of ``calibration.ppi`` need."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from calibration.ppi_inputs import checked_run_ids, checked_scores, length_of
from judge.errors import InputError

if TYPE_CHECKING:
    import numpy as np


@dataclass(frozen=True)
class LabelPlan:
    """Which runs to label, drawn at random with recorded inclusion probabilities.

    ``design``: "uniform" (a simple random sample of exactly ``budget`` runs) or "active"
    (each run independently with its own probability; ``budget`` runs expected).
    """

    run_ids: tuple[str, ...]
    probs: tuple[float, ...]
    chosen: tuple[str, ...]
    seed: int
    budget: int
    design: str
    mix: float = 0.0

    def prob_of(self) -> dict[str, float]:
        """Inclusion probability by run id."""
        return dict(zip(self.run_ids, self.probs, strict=True))

    def to_dict(self) -> dict[str, Any]:
        """JSON form (stored beside the labels so the sample can be checked later)."""
        return {
            "run_ids": list(self.run_ids),
            "probs": list(self.probs),
            "chosen": list(self.chosen),
            "seed": self.seed,
            "budget": self.budget,
            "design": self.design,
            "mix": self.mix,
        }


@dataclass(frozen=True)
class PlanCheck:
    """Whether a set of labelled runs is the sample a plan drew (then PPI is valid)."""

    valid: bool
    #: Labelled runs the plan did not choose (hand-picked), and chosen runs left unlabelled.
    unplanned: tuple[str, ...] = ()
    unlabelled: tuple[str, ...] = ()
    #: Re-drawing from the plan's seed and probabilities gives the plan's own choice.
    reproducible: bool = True
    reason: str | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)


def uncertainty_probs(
    scores: np.ndarray, budget: float | np.ndarray, mix: float, valid: np.ndarray | None = None
) -> np.ndarray:
    """Inclusion probabilities for active sampling: proportional to sqrt(f (1 - f)) (the
    judge's standard deviation if its scores are calibrated; Zrnic & Candes's optimal rule for
    a mean is proportional to the residual's conditional sd), mixed with uniform so every run
    has probability >= mix * budget / N, scaled to sum to ``budget``, capped at 1 (the excess
    spread over the others). Works row-wise on (R, N) arrays too (``budget`` then (R, 1)
    and ``valid`` masking padding out: a masked entry gets probability 0)."""
    import numpy as np

    f = np.atleast_2d(np.asarray(scores, float))
    ok = np.ones(f.shape, bool) if valid is None else np.atleast_2d(valid)
    u = np.where(ok, np.sqrt(np.clip(f * (1.0 - f), 0.0, None)), 0.0)
    total = u.sum(axis=1, keepdims=True)
    n = ok.sum(axis=1, keepdims=True)
    uniform = np.where(ok, 1.0 / n, 0.0)
    # Hard 0/1 verdicts carry no uncertainty: then the plan is uniform.
    share = np.where(total > 0, u / np.where(total > 0, total, 1.0), uniform)
    pi = budget * ((1.0 - mix) * share + mix * uniform)
    fixed = np.zeros(pi.shape, bool)
    for _ in range(f.shape[1]):
        over = (pi > 1.0) & ~fixed
        if not over.any():
            break
        # Cap at 1 and spread what was cut over the runs not yet capped, in proportion.
        fixed |= over
        free = np.where(fixed, 0.0, pi)
        free_total = free.sum(axis=1, keepdims=True)
        rest = budget - fixed.sum(axis=1, keepdims=True)
        pi = np.where(fixed, 1.0, free * rest / np.where(free_total > 0, free_total, 1.0))
    return np.minimum(pi, 1.0).reshape(np.shape(scores))


def plan_labels(
    scores: Sequence[float] | np.ndarray,
    budget: int,
    *,
    active: bool,
    seed: int,
    run_ids: Sequence[str] | None = None,
    mix: float = 0.2,
) -> LabelPlan:
    """Choose which runs people should label, at random, recording how.

    Uniform: a simple random sample of exactly ``budget`` runs (each with probability
    budget / N). Active: each run independently with probability from
    :func:`uncertainty_probs` (``budget`` runs expected, the count varies). Reproducible
    from ``seed``; :func:`plan_covers` checks labelled runs against the plan.
    """
    import numpy as np

    n = length_of(scores, "scores")
    f = checked_scores(scores, n)
    ids = checked_run_ids(run_ids, n)
    if isinstance(budget, bool) or not isinstance(budget, int | np.integer) or not 1 <= budget <= n:
        raise InputError(f"budget {budget!r} is not a whole number in [1, {n}]", field="budget")
    if not 0 < mix <= 1:
        raise InputError(
            f"mix {mix!r} is not in (0, 1]",
            field="mix",
            hint="some uniform mixing keeps every probability above zero",
        )
    design = "active" if active else "uniform"
    probs = uncertainty_probs(f, float(budget), mix) if active else np.full(n, budget / n)
    chosen = _draw(design, probs, int(budget), int(seed))
    return LabelPlan(
        run_ids=tuple(ids),
        probs=tuple(float(p) for p in probs),
        chosen=tuple(ids[i] for i in chosen),
        seed=int(seed),
        budget=int(budget),
        design=design,
        mix=float(mix) if active else 0.0,
    )


def _draw(design: str, probs: np.ndarray, budget: int, seed: int) -> list[int]:
    """The plan's random choice (indices, ascending): the only place a plan uses the seed."""
    import numpy as np

    rng = np.random.default_rng(seed)
    if design == "uniform":
        return sorted(int(i) for i in rng.permutation(probs.size)[:budget])
    return [int(i) for i in np.flatnonzero(rng.random(probs.size) < probs)]


def plan_covers(plan: LabelPlan, labelled_ids: Sequence[str] | set[str]) -> PlanCheck:
    """Whether ``labelled_ids`` are exactly the runs the plan drew.

    Invalid for PPI when a labelled run was not drawn (hand-picked), when a drawn run is left
    unlabelled (the missing labels may not be missing at random), or when re-drawing from the
    plan's seed and probabilities does not give the plan's own choice (an edited plan).
    """
    import numpy as np

    labelled = {str(r) for r in labelled_ids}
    chosen = set(plan.chosen)
    known = set(plan.run_ids)
    unknown = sorted(labelled - known)
    if unknown:
        raise InputError(
            f"{len(unknown)} labelled id(s) not in the plan, e.g. {unknown[0]!r}",
            field="labelled_ids",
            hint="check against the plan of this run set",
        )
    redraw = _draw(plan.design, np.asarray(plan.probs, float), plan.budget, plan.seed)
    reproducible = [plan.run_ids[i] for i in redraw] == list(plan.chosen)
    unplanned = tuple(sorted(labelled - chosen))
    unlabelled = tuple(sorted(chosen - labelled))
    reasons = []
    if not reproducible:
        reasons.append("the plan's choice is not what its seed and probabilities draw")
    if unplanned:
        reasons.append(
            f"{len(unplanned)} labelled run(s) were not drawn by the plan "
            "(hand-picked): not valid for PPI"
        )
    if unlabelled:
        reasons.append(
            f"{len(unlabelled)} drawn run(s) have no label: label them, or the "
            "sample is not the planned one"
        )
    return PlanCheck(
        valid=not reasons,
        unplanned=unplanned,
        unlabelled=unlabelled,
        reproducible=reproducible,
        reason="; ".join(reasons) or None,
    )
