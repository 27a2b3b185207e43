"""Cards as routing sees them: kept in the store by digest, the judges a card routes, and whether
it may route the judgments given (same judge model, rubric digest and evidence selector; not
expired). A panel card binds each member on its own: each member's judgments are checked
against that member's rubric and selector."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from datetime import datetime

import yaml

from calibration.card import Card, JudgeSection, verify_card
from judge.digests import utcnow
from judge.errors import CardError
from judge.evidence import SELECTOR_VERSION
from judge.store import Store
from judge.types import CardRecord, Judgment


def card_digest(card: Card) -> str:
    """The card's digest (computed when the card carries none)."""
    return card.card_digest or card.computed_digest()


def card_models(card: Card) -> list[str]:
    """The judge models whose judgments a card routes: its panel's members, its cascade's
    stages (cheapest first), or its one judge."""
    if card.judge.members:
        return [member.model for member in card.judge.members]
    if card.policy.cascade:
        return [stage.model for stage in card.policy.cascade]
    return [card.judge.model]


def card_bindings(card: Card) -> dict[str, JudgeSection]:
    """Each model the card routes -> the binding its judgments must match: a panel member's
    own, otherwise the card's judge section (a cascade's stages share one)."""
    if card.judge.members:
        return {member.model: member for member in card.judge.members}
    return {model: card.judge for model in card_models(card)}


def stage_label(k: int, model: str) -> str:
    """How a cascade decision names the stage that made it (in RoutingDecision.slice)."""
    return f"stage {k}: {model}"


def select_for_card(
    card: Card, judgments: Iterable[Judgment], *, now: datetime | None = None
) -> list[Judgment]:
    """The judgments this card may route; CardError when it binds another judge or is stale.

    Judgments of other models, rubrics or rubric versions are not this card's and are left
    out. Among the card's own, every (rubric digest, selector version) present must be the
    card's, and the card must not have expired (``calibration.card.verify_card``).
    """
    j = card.judge
    short = card_digest(card)[:19]
    bindings = card_bindings(card)
    for model, bound in bindings.items():
        if bound.rubric.digest is None or bound.evidence_selector.version is None:
            who = f"{j.model!r}" if bound is j else f"{j.model!r} (member {model!r})"
            raise CardError(
                f"card {short} was calibrated on {j.source} of {who} and binds no rubric "
                "digest or evidence-selector version, so it cannot vouch for this store's "
                "judgments; calibrate on them with `judge calibrate --db DB --gold GOLD.jsonl`"
            )
    every = list(judgments)
    mine = [
        x
        for x in every
        if (b := bindings.get(x.provenance.model)) is not None
        and (x.provenance.rubric_id, x.provenance.rubric_version) == (b.rubric.id, b.rubric.version)
    ]
    if not mine:
        present = sorted(
            {
                f"{x.provenance.model} / {x.provenance.rubric_id}@{x.provenance.rubric_version}"
                for x in every
            }
        )
        raise CardError(
            f"card {short} is for judge {j.model!r} with rubric {j.rubric.id}@{j.rubric.version}, "
            f"but the judgments given are by: {', '.join(present) or 'nobody (none given)'}. "
            "Use the card calibrated for that judge, or judge the cases with this one"
        )
    # A panel's members are each checked against their own binding; any other card's models
    # against the card's one (verify_card names the card's model).
    seen = Counter(
        (
            x.provenance.model if j.members else j.model,
            x.provenance.rubric_digest,
            x.provenance.selector_version,
        )
        for x in mine
    )
    for (model, rubric_digest, selector_version), n in sorted(seen.items()):
        try:
            verify_card(
                card,
                judge_model=model,
                rubric_digest=rubric_digest,
                selector_version=selector_version,
                now=now,
            )
        except CardError as err:
            raise CardError(f"card {short} refused for {n} judgment(s): {err}") from err
    return mine


def check_card_before_judging(card: Card, models: Sequence[str], rubric_digest: str) -> None:
    """Refuse (CardError) a card that could not route the judgments these models are about to
    make with this rubric and today's evidence selector, before paying for them. The card's
    judge (or, for a cascade card, one of its stages; for a panel card, one of its members,
    each checked against its own binding) must be among the models."""
    routed = set(card_models(card)) & set(models)
    if card.judge.members:
        checked = sorted(routed) or [models[0]]
    else:
        checked = [card.judge.model if routed else models[0]]
    try:
        for model in checked:
            verify_card(
                card,
                judge_model=model,
                rubric_digest=rubric_digest,
                selector_version=SELECTOR_VERSION,
            )
    except CardError as err:
        raise CardError(f"card {card_digest(card)[:19]} cannot route this request: {err}") from err


# --- Cards in the store --------------------------------------------------------------------------


def save_card(store: Store, card: Card) -> str:
    """Keep the card (idempotent, by digest); return its digest. A stale flag is kept."""
    digest = card_digest(card)
    j = card.judge
    record = CardRecord(
        digest=digest,
        model=j.model,
        rubric_id=j.rubric.id,
        rubric_version=j.rubric.version,
        rubric_digest=j.rubric.digest,
        selector_version=j.evidence_selector.version,
        kind=card.calibration.kind,
        created_at=card.created_at,
        expires_at=card.expires_at,
        added_at=utcnow(),
    )
    store.save_card(record, card.to_yaml())
    return digest


def get_card(store: Store, digest: str) -> Card | None:
    """The stored card with this digest (``sha256:`` prefix optional), or None."""
    text = store.card_yaml(digest)
    return None if text is None else Card.model_validate(yaml.safe_load(text))
