"""Routing with the composite verdict: a run a hard check failed is rejected with the check's
reason, whatever its score; a soft firing sends the run to a person; a card is calibrated only
on what the model decided (judge.carding leaves check-decided judgments out)."""

from __future__ import annotations

from judge.carding import judgment_rows
from judge.routing import REASONS, route_judgments
from judge.types import CheckResult, Judgment
from tests.review_fixtures import make_card, make_judgment

HARD = CheckResult(
    id="tests-deleted",
    version=3,
    status="fail",
    hard=True,
    criterion="environment_integrity",
    reason="tests/test_parser.py deleted",
)
SOFT = CheckResult(id="broad-except", version=1, status="fail", reason="new except: pass")


def _with(judgment: Judgment, *checks: CheckResult, decided_by: str | None = None) -> Judgment:
    assert judgment.verdict is not None
    verdict = judgment.verdict.model_copy(update={"checks": list(checks), "decided_by": decided_by})
    return judgment.model_copy(update={"verdict": verdict})


def test_a_run_failed_by_a_hard_check_is_rejected_with_its_reason() -> None:
    # P(pass) 0.99 would be accepted by the card's band: the check decides first.
    decided = _with(make_judgment("gated", 0.99), HARD, decided_by="check:tests-deleted@3")
    (decision,) = route_judgments(make_card(), [decided])
    assert (decision.decision, decision.label, decision.reason) == (
        "auto_reject",
        "fail",
        "check_failed",
    )
    assert decision.detail == "check:tests-deleted@3: tests/test_parser.py deleted"
    assert decision.judgment_ids == [decided.id] and "check_failed" in REASONS


def test_a_soft_firing_goes_to_review_with_its_reason() -> None:
    fired = _with(make_judgment("soft", 0.99), SOFT)
    plain = make_judgment("plain", 0.99)
    got = {d.case_id: d for d in route_judgments(make_card(), [fired, plain])}
    assert (got["soft"].decision, got["soft"].reason) == ("review", "check_fired")
    assert got["soft"].detail == "check:broad-except@1: new except: pass"
    assert got["plain"].decision == "auto_accept"


def test_cards_are_calibrated_only_on_what_the_model_decided() -> None:
    decided = _with(make_judgment("gated", 0.2), HARD, decided_by="check:tests-deleted@3")
    soft = _with(make_judgment("soft", 0.8), SOFT)
    rows, _ = judgment_rows([decided, soft, make_judgment("plain", 0.7)])
    assert sorted(r.item_id for r in rows) == ["plain", "soft"]
