"""The facts-only check in routing: agree -> decided, disagree -> review, missing -> review."""

from __future__ import annotations

from judge.judging.facts import FACTS_SUFFIX
from judge.review.facts_check import require_checks
from judge.routing import groups, route_judgments
from judge.types import FACTS_ONLY, Judgment
from tests.review_fixtures import make_card, make_judgment


def _facts(judgment: Judgment, origin: str) -> Judgment:
    """``judgment`` as the check of ``origin``'s facts-only copy."""
    return judgment.model_copy(
        update={
            "case_id": origin + FACTS_SUFFIX,
            "id": judgment.id + "f",
            "provenance": judgment.provenance.model_copy(
                update={"masked_from": origin, "masked_evidence": [FACTS_ONLY]}
            ),
        }
    )


CARD = make_card(accept=0.9, reject=0.1)


def test_an_agreeing_check_keeps_the_automatic_decision_and_is_not_scored() -> None:
    own = make_judgment("case-1", 0.97)
    check = _facts(make_judgment("case-1", 0.95), "case-1")
    (decision,) = route_judgments(CARD, [own, check])
    assert decision.decision == "auto_accept" and decision.reason == "in_accept_band"
    assert decision.judgment_ids == [own.id]  # a check, not part of the score
    (group,) = groups([own, check], "binary")
    assert group.facts == (check,) and group.masked == ()
    rejected = make_judgment("case-2", 0.03)
    agreeing = _facts(make_judgment("case-2", 0.05), "case-2")
    (decision,) = route_judgments(CARD, [rejected, agreeing])
    assert decision.decision == "auto_reject"


def test_a_check_that_disagrees_or_abstains_sends_the_item_to_review() -> None:
    own = make_judgment("case-1", 0.97)
    for check, change in (
        (make_judgment("case-1", 0.05), "pass -> fail"),
        (make_judgment("case-1", 0.5, status="abstain"), "pass -> abstain"),
    ):
        (decision,) = route_judgments(CARD, [own, _facts(check, "case-1")])
        assert decision.decision == "review" and decision.reason == "facts_changed"
        assert change in decision.detail


def test_a_failed_or_missing_check_sends_the_item_to_review() -> None:
    own = make_judgment("case-1", 0.97)
    failed = _facts(make_judgment("case-1", None, status="infra_error"), "case-1")
    (decision,) = route_judgments(CARD, [own, failed])
    assert decision.decision == "review" and decision.reason == "facts_missing"
    assert decision.detail == "1 of 1 judgments unchecked; infra_error x1"
    # A check for one answer order only leaves the other unchecked.
    first = make_judgment("case-1", 0.97, order="AB")
    second = make_judgment("case-1", 0.97, order="BA")
    only_first = _facts(make_judgment("case-1", 0.96, order="AB"), "case-1")
    (decision,) = route_judgments(CARD, [first, second, only_first])
    assert decision.reason == "facts_missing" and decision.detail.startswith("1 of 2")
    # A verdict that needed a check and got none at all (nothing stored): review too.
    (decided,) = route_judgments(CARD, [own])
    assert decided.decision == "auto_accept"  # routing without the step decides as before
    (sent,) = require_checks([decided], {"case-1"})
    assert sent.decision == "review" and sent.reason == "facts_missing" and sent.label is None
    assert require_checks([decided], {"case-9"}) == [decided]


def test_a_facts_check_is_not_a_masked_check() -> None:
    """The second net's gates read only masked copies; a facts check does not satisfy them."""
    own = make_judgment("case-1", 0.97)
    own = own.model_copy(
        update={"provenance": own.provenance.model_copy(update={"suspect_evidence": {"E2": "m1"}})}
    )
    check = _facts(make_judgment("case-1", 0.96), "case-1")
    (decision,) = route_judgments(CARD, [own, check])
    assert decision.reason == "masked_missing"
