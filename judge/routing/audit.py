"""Audits of automatic decisions, and the card's live error bounds.

A seeded fraction of the automatic decisions goes to the review queue as well. As audit labels
come in, each band's error bound is recomputed on the card's gold counts plus the audit counts
(one-sided Clopper-Pearson at the band's level); a bound above the card's alpha marks the card
stale, and routing with it is refused until the judge is recalibrated.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from calibration.card import Card
from calibration.intervals import clopper_pearson_upper as cp_upper
from judge.digests import seeded_unit
from judge.errors import InputError
from judge.routing.cards import card_digest, get_card, stage_label
from judge.routing.reasons import AUTO_DECISIONS
from judge.store import Store
from judge.types import ABSTAIN_LABEL, RoutingDecision, Strict


class BandAudit(Strict):
    """One band's live error bound: the card's gold counts plus the audit labels so far."""

    band: str
    slice: str | None = None
    alpha: float
    level: float
    card_n: int
    card_errors: int
    audit_n: int
    audit_errors: int
    #: One-sided Clopper-Pearson upper bound on (card + audit) counts at ``level``.
    upper_bound: float
    #: The same bound on the audit labels alone (wide until many audits are in).
    audit_upper_bound: float | None
    exceeds_alpha: bool


class AuditStatus(Strict):
    """The audit state of one card."""

    card_digest: str
    stale: bool
    stale_reason: str | None = None
    bands: list[BandAudit]


def audit_sample(decisions: Iterable[RoutingDecision], fraction: float, seed: int = 0) -> set[str]:
    """Ids of the automatic decisions sampled for audit: each with probability ``fraction``."""
    if not 0.0 <= fraction <= 1.0:
        raise InputError(f"audit fraction must be in [0, 1], got {fraction}", field="audit")
    return {
        d.id
        for d in decisions
        if d.decision in AUTO_DECISIONS and seeded_unit(seed, d.id) < fraction
    }


@dataclass(frozen=True)
class AuditLabel:
    """One audited automatic decision and the human label it got."""

    band: str
    slice: str | None
    auto_label: str
    human_label: str


def _is_error(band: str, auto_label: str, human: str) -> bool:
    if band == "accept":
        return human == "fail"
    if band == "reject":
        return human == "pass"
    return human != auto_label


def live_bounds(card: Card, audits: Iterable[AuditLabel]) -> list[BandAudit]:
    """Each certified band's error bound on the card's gold counts plus the audit labels.

    A human "cannot determine" neither counts as an error nor as a correct decision.
    """
    policy = card.policy
    bands: dict[tuple[str | None, str], Any] = {}
    if policy.cascade:
        for k, stage in enumerate(policy.cascade, start=1):
            for name, b in stage.bands.items():
                bands[(stage_label(k, stage.model), name)] = b
    elif policy.per_slice:
        for slice_value, part in policy.per_slice.items():
            for name, b in part.bands.items():
                bands[(slice_value, name)] = b
    else:
        for name, b in policy.bands.items():
            bands[(None, name)] = b
    counts: dict[tuple[str | None, str], list[int]] = defaultdict(lambda: [0, 0])
    for a in audits:
        if a.human_label == ABSTAIN_LABEL:
            continue
        key = (a.slice if policy.per_slice or policy.cascade else None, a.band)
        counts[key][0] += 1
        counts[key][1] += int(_is_error(a.band, a.auto_label, a.human_label))
    out = []
    for (value, name), b in sorted(bands.items(), key=lambda kv: (str(kv[0][0]), kv[0][1])):
        if b.threshold is None:
            continue
        n_a, k_a = counts.get((value, name), [0, 0])
        upper = cp_upper(b.errors + k_a, b.n + n_a, b.level)
        out.append(
            BandAudit(
                band=name,
                slice=value,
                alpha=b.alpha,
                level=b.level,
                card_n=b.n,
                card_errors=b.errors,
                audit_n=n_a,
                audit_errors=k_a,
                upper_bound=upper,
                audit_upper_bound=cp_upper(k_a, n_a, b.level) if n_a else None,
                exceeds_alpha=upper > b.alpha,
            )
        )
    return out


def stale_reason(store: Store, digest: str) -> str | None:
    """Why audits flagged this card stale, or None."""
    record = store.card_record(digest)
    if record is not None and record.stale:
        return record.stale_reason or "flagged stale by audit"
    return None


def audit_labels(store: Store, digest: str) -> list[AuditLabel]:
    """The finished audit items of a card with their human labels."""
    return [
        AuditLabel(band, slice_, auto, human)
        for band, slice_, auto, human in store.audit_rows(digest)
    ]


def audit_cards(store: Store, digest: str | None = None) -> list[AuditStatus]:
    """Each stored card's (or one card's) live band error bounds from the audit labels so far;
    a card whose bound exceeds its alpha is flagged stale (routing with it is then refused)."""
    digests = [digest] if digest else [record.digest for record in store.card_records()]
    return [_refresh(store, d) for d in digests]


def _refresh(store: Store, digest: str) -> AuditStatus:
    """Recompute a card's live band bounds from its audit labels; flag it stale when exceeded."""
    card = get_card(store, digest)
    if card is None:
        raise InputError(f"no stored card {digest}", field="card", hint="route with it first")
    bands = live_bounds(card, audit_labels(store, card_digest(card)))
    reason = stale_reason(store, card_digest(card))
    over = [b for b in bands if b.exceeds_alpha]
    if over and reason is None:
        reason = "; ".join(
            f"{b.band} band{f' (slice {b.slice})' if b.slice else ''}: live error bound "
            f"{b.upper_bound:.4f} > alpha {b.alpha:g} after {b.audit_errors} error(s) in "
            f"{b.audit_n} audit label(s)"
            for b in over
        )
        store.mark_card_stale(card_digest(card), reason)
    return AuditStatus(
        card_digest=card_digest(card), stale=reason is not None, stale_reason=reason, bands=bands
    )
