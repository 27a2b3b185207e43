"""Agreement between reviewers: raw agreement and Cohen's kappa per reviewer pair and kind;
and, on first-bad-decision items, how close people's critical steps are to each other and to
the judge's (exact, within 1 and within 3 steps: :func:`step_agreement`)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from itertools import combinations

from judge.store import Store
from judge.types import Strict


class PairAgreement(Strict):
    """Agreement of two reviewers on the items both labelled."""

    reviewer_a: str
    reviewer_b: str
    kind: str
    n: int
    agreed: int
    raw: float
    #: Cohen's kappa; None when it is undefined (both gave one and the same label throughout).
    kappa: float | None


def agreement(store: Store) -> list[PairAgreement]:
    """Raw agreement and Cohen's kappa for every pair of reviewers, per rubric kind."""
    by_item: dict[str, dict[str, str]] = defaultdict(dict)
    kinds: dict[str, str] = {}
    steps = {(r.item_id, r.reviewer): r.step for r in store.step_labels()}
    for item_id, reviewer, label, kind in store.reviewer_labels():
        # Two first-bad-decision labels agree only on the same step.
        step = steps.get((item_id, reviewer))
        by_item[item_id][reviewer] = label if step is None else f"{label} step {step}"
        kinds[item_id] = kind
    pairs: dict[tuple[str, str, str], list[tuple[str, str]]] = defaultdict(list)
    for item_id, given in by_item.items():
        for a, b in combinations(sorted(given), 2):
            pairs[(a, b, kinds[item_id])].append((given[a], given[b]))
    return [pair_agreement(a, b, kind, got) for (a, b, kind), got in sorted(pairs.items())]


def pair_agreement(a: str, b: str, kind: str, pairs: Sequence[tuple[str, str]]) -> PairAgreement:
    """Agreement of reviewers ``a`` and ``b`` over their (label a, label b) pairs."""
    n = len(pairs)
    agreed = sum(1 for x, y in pairs if x == y)
    categories = sorted({x for x, _ in pairs} | {y for _, y in pairs})
    kappa: float | None = None
    # Kappa is undefined when chance agreement is 1 (one label used by both throughout).
    if n and len(categories) > 1:
        from sklearn.metrics import cohen_kappa_score

        value = float(
            cohen_kappa_score([x for x, _ in pairs], [y for _, y in pairs], labels=categories)
        )
        kappa = value if value == value else None  # NaN -> None
    return PairAgreement(
        reviewer_a=a,
        reviewer_b=b,
        kind=kind,
        n=n,
        agreed=agreed,
        raw=agreed / n if n else 0.0,
        kappa=kappa,
    )


#: The step distances reported (exact, within 1, within 3).
TOLERANCES = (0, 1, 3)


class StepAgreement(Strict):
    """How close critical steps are on first-bad-decision items: between two people who
    labelled the same item (``who`` "people"), or between a judge's proposed step and each
    person's (``who`` the judge model). Counted over the pairs where both named a step;
    ``unmatched`` pairs had one side name a step and the other not (no single step, cannot
    determine, or a judge that named none), ``neither`` had both name none."""

    who: str
    n: int
    exact: int
    within_1: int
    within_3: int
    unmatched: int = 0
    neither: int = 0

    def share(self, hits: int) -> float | None:
        """``hits`` as a share of the pairs that named a step on both sides."""
        return hits / self.n if self.n else None


def _step_row(who: str, pairs: Sequence[tuple[int | None, int | None]]) -> StepAgreement:
    both = [(a, b) for a, b in pairs if a is not None and b is not None]
    exact, within_1, within_3 = (sum(1 for a, b in both if abs(a - b) <= t) for t in TOLERANCES)
    return StepAgreement(
        who=who,
        n=len(both),
        exact=exact,
        within_1=within_1,
        within_3=within_3,
        unmatched=sum(1 for a, b in pairs if (a is None) != (b is None)),
        neither=sum(1 for a, b in pairs if a is None and b is None),
    )


def step_agreement(store: Store) -> list[StepAgreement]:
    """Human-human agreement on the critical step (every pair of reviewers who labelled the
    same fbd item, in the reviewer role: adjudication is not an independent label), then each
    judge's agreement with people (its proposed step against every reviewer's step). No
    "people" row until two reviewers labelled one item; empty when no fbd item has a label."""
    people: dict[str, dict[str, int | None]] = defaultdict(dict)
    judges: dict[str, list[tuple[int | None, int | None]]] = defaultdict(list)
    for r in store.step_labels():
        if r.role != "reviewer":
            continue
        people[r.item_id][r.reviewer] = r.step
        judges[r.model or "judge"].append((r.proposed_step, r.step))
    if not judges:
        return []
    pairs = [
        (given[a], given[b]) for given in people.values() for a, b in combinations(sorted(given), 2)
    ]
    humans = [_step_row("people", pairs)] if pairs else []
    return [*humans, *(_step_row(m, judges[m]) for m in sorted(judges))]
