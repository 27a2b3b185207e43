"""Agreement between reviewers: raw agreement and Cohen's kappa per reviewer pair and kind."""

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
    for item_id, reviewer, label, kind in store.reviewer_labels():
        by_item[item_id][reviewer] = label
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
