"""Calibration cards: building, YAML round trip, strict loading, digests, verification, expiry."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import yaml

from calibration.bands import certify
from calibration.card import (
    RECORDED_SOURCE,
    CalibrationSection,
    Card,
    ConfidenceRef,
    GoldRef,
    JudgeSection,
    RubricRef,
    SelectorRef,
    build_card,
    cascade_policy_section,
    load_card,
    policy_section,
    verify_card,
    write_card,
)
from calibration.cascade import calibrate_cascade
from calibration.confidence import ScoreSet, score_items
from calibration.records import VerdictRow
from judge.errors import CardError

T0 = datetime(2025, 1, 1, tzinfo=UTC)


def _scores() -> ScoreSet:
    # 100 items at P(pass) 0.95 (2 fail), 100 at 0.05 (1 pass), 20 at 0.5.
    probs = [0.95] * 100 + [0.05] * 100 + [0.5] * 20
    golds = ["fail"] * 2 + ["pass"] * 98 + ["pass"] + ["fail"] * 99 + ["pass", "fail"] * 10
    rows = [
        VerdictRow(item_id=str(i), judge="m", verdict="pass" if p > 0.5 else "fail", prob=p, gold=g)
        for i, (p, g) in enumerate(zip(probs, golds, strict=True))
    ]
    return score_items(rows, kind="binary")


def _card() -> Card:
    policy = certify(_scores(), alpha_accept=0.1, alpha_reject=0.1, delta=0.1, grid="items")
    judge = JudgeSection(
        model="provider/model-1",
        source="judgments",
        prompt_digest="sha256:p",
        rubric=RubricRef(id="agent-run-success", version=1, digest="sha256:r"),
        evidence_selector=SelectorRef(version="sel-1", token_budget=6000),
        evidence_visible=["task", "diff", "trace"],
        blinded_fields=["agent_name"],
    )
    calibration = CalibrationSection(
        kind="binary",
        gold=GoldRef(name="dev", digest="sha256:g", n=220, source="official harness"),
        confidence=ConfidenceRef(source="prob"),
        metrics={"confusion_matrix": {"tp": 98, "fp": 2, "tn": 99, "fn": 1}},
    )
    return build_card(
        judge=judge, calibration=calibration, policy=policy_section(policy), created_at=T0
    )


def test_card_carries_thresholds_bands_guarantee_and_expiry() -> None:
    card = _card()
    p = card.policy
    # Accept band: 100 items, 2 errors, U(2, 100) at 0.05 = 0.0616 <= 0.1.
    assert p.auto_accept_threshold == pytest.approx(0.95)
    assert p.auto_reject_threshold == pytest.approx(0.05)
    assert p.bands["accept"].n == 100 and p.bands["accept"].errors == 2
    assert p.bands["accept"].level == pytest.approx(0.05)
    assert p.guarantee.method == "ltt-fixed-sequence" and p.guarantee.delta == 0.1
    assert p.human_review_band == [pytest.approx(0.05), pytest.approx(0.95)]
    assert "review when 0.05 < P(pass) < 0.95" in p.human_review_rule
    assert p.coverage == pytest.approx(200 / 220)
    assert card.expires_at - card.created_at == timedelta(days=90)
    assert card.card_digest.startswith("sha256:") and card.card_digest == card.computed_digest()


def test_yaml_round_trip_keeps_everything(tmp_path: Path) -> None:
    card = _card()
    path = tmp_path / "card.yaml"
    digest = write_card(card, path)
    loaded = load_card(path)
    assert loaded == card and loaded.card_digest == digest
    data = yaml.safe_load(path.read_text())
    assert list(data)[:3] == ["card_version", "judge", "calibration"]
    assert data["judge"]["rubric"] == {
        "id": "agent-run-success",
        "version": 1,
        "digest": "sha256:r",
    }


def test_unknown_field_is_refused_naming_file_and_field(tmp_path: Path) -> None:
    path = tmp_path / "card.yaml"
    write_card(_card(), path)
    data = yaml.safe_load(path.read_text())
    data["policy"]["auto_accept_treshold"] = 0.5
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(CardError, match=r"card\.yaml: field 'policy\.auto_accept_treshold'"):
        load_card(path)


def test_missing_field_and_bad_yaml_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "card.yaml"
    write_card(_card(), path)
    data = yaml.safe_load(path.read_text())
    del data["judge"]["model"]
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(CardError, match=r"field 'judge\.model': Field required"):
        load_card(path)
    path.write_text("judge: [unclosed")
    with pytest.raises(CardError, match="not valid YAML"):
        load_card(path)
    with pytest.raises(CardError, match="cannot read"):
        load_card(tmp_path / "absent.yaml")


def test_hand_edited_threshold_breaks_the_digest(tmp_path: Path) -> None:
    path = tmp_path / "card.yaml"
    write_card(_card(), path)
    data = yaml.safe_load(path.read_text())
    data["policy"]["auto_accept_threshold"] = 0.6  # widen the band by hand
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    with pytest.raises(CardError, match="card_digest.*edited after it was written"):
        load_card(path)


def test_verify_accepts_the_bound_judge() -> None:
    verify_card(
        _card(),
        judge_model="provider/model-1",
        rubric_digest="sha256:r",
        selector_version="sel-1",
        gold_digest="sha256:g",
        now=T0 + timedelta(days=10),
    )


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"judge_model": "provider/model-2"}, "judge model is 'provider/model-2'"),
        ({"rubric_digest": "sha256:other"}, "rubric digest is sha256:other"),
        ({"selector_version": "sel-2"}, "evidence selector version is 'sel-2'"),
        ({"gold_digest": "sha256:newgold"}, "gold set digest is sha256:newgold"),
        ({"now": T0 + timedelta(days=90)}, "expired at 2025-04-01"),
    ],
)
def test_verify_refuses_each_mismatch_and_expiry(change: dict[str, object], message: str) -> None:
    kwargs: dict[str, object] = {
        "judge_model": "provider/model-1",
        "rubric_digest": "sha256:r",
        "selector_version": "sel-1",
        "now": T0 + timedelta(days=1),
        **change,
    }
    with pytest.raises(CardError, match=message) as err:
        verify_card(_card(), **kwargs)  # type: ignore[arg-type]
    assert "Recalibrate" in str(err.value)


def test_recorded_verdict_card_has_null_rubric_and_verifies_with_none() -> None:
    card = (
        _card()
        .model_copy(
            update={
                "judge": JudgeSection(model="gpt-4-turbo-2024-04-09", source=RECORDED_SOURCE),
            }
        )
        .sealed()
    )
    assert card.judge.rubric.digest is None and card.judge.source == "recorded verdicts"
    verify_card(
        card,
        judge_model="gpt-4-turbo-2024-04-09",
        rubric_digest=None,
        selector_version=None,
        now=T0,
    )
    with pytest.raises(CardError, match="rubric digest"):
        verify_card(
            card,
            judge_model="gpt-4-turbo-2024-04-09",
            rubric_digest="sha256:r",
            selector_version=None,
            now=T0,
        )


def test_nothing_certifies_gives_null_thresholds_and_review_everything() -> None:
    rows = [
        VerdictRow(item_id=str(i), judge="m", verdict="A", prob=0.9, gold="A" if i % 2 else "B")
        for i in range(60)
    ]
    policy = certify(score_items(rows, kind="pairwise"), alpha_accept=0.1, delta=0.1)
    section = policy_section(policy)
    assert section.decide_threshold is None and section.auto_accept_threshold is None
    assert section.human_review_rule == "review every item: nothing certifies"
    assert (
        section.bands["decide"].reason and "first threshold fails" in section.bands["decide"].reason
    )
    assert section.coverage == 0.0


def test_cascade_policy_lists_stages_cheapest_first() -> None:
    s = _scores()
    result = calibrate_cascade(
        [s, s], alpha_accept=0.1, alpha_reject=0.1, delta=0.1, grid="items", mode="shared"
    )
    section = cascade_policy_section(result)
    assert section.cascade is not None and len(section.cascade) == 2
    assert section.guarantee.method == "ltt-fixed-sequence cascade (shared)"
    assert "union bound" in section.guarantee.statement
    assert section.cascade[0].n_decided == result.stages[0].n_decided
    assert section.coverage == pytest.approx(result.coverage)
