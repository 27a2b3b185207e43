"""Panel cards: members' scores combined by a declared rule, hand-worked; the card records the
members, the rule and the procedure (card version 2) while other cards keep version 1."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from calibration.card import Card, parse_card, write_card
from calibration.confidence import fitted_number, score_items
from calibration.inputs import load_recorded
from calibration.panel import PanelModel, combine, combine_probs, fit_panel, logit
from calibration.records import VerdictRow
from calibration.workflow import CalibrationOptions, attach_gold, calibrate_rows, unbound
from judge.errors import InputError
from tests.conftest import DATA, shared_path

PAIRWISE = DATA / "calibration" / "pairwise_verdicts.jsonl"


def _rows(judge: str, probs: list[float | None], golds: list[str]) -> list[VerdictRow]:
    return [
        VerdictRow(
            item_id=f"i{k}",
            judge=judge,
            verdict=None if p is None else ("A" if p >= 0.5 else "B"),
            status="ok" if p is not None else "parse_error",
            prob=p,
            gold=g,
        )
        for k, (p, g) in enumerate(zip(probs, golds, strict=True))
    ]


def test_logodds_is_the_geometric_mean_of_the_odds() -> None:
    # Odds 9, 1.5 and 0.25: their product is 3.375, its cube root 1.5, so P = 1.5 / 2.5 = 0.6;
    # the summed log-odds, log 3.375 > 0, decides A as this P does.
    assert combine_probs([0.9, 0.6, 0.2], "logodds") == pytest.approx(0.6)
    assert combine_probs([0.9, 0.6, 0.2], "mean") == pytest.approx(1.7 / 3)
    # A confident member outweighs two lukewarm ones on log-odds, not on the mean.
    assert (
        combine_probs([0.999, 0.4, 0.4], "logodds") > 0.5 > combine_probs([0.999, 0.2, 0.2], "mean")
    )
    # Vote shares of 0 and 1 are clipped, not infinite: one each way is a coin flip.
    assert combine_probs([1.0, 0.0], "logodds") == pytest.approx(0.5)
    assert logit(1.0) == pytest.approx(math.log((1 - 1e-9) / 1e-9))


def test_the_fitted_rule_keeps_the_decision_and_maps_confidence() -> None:
    model = PanelModel(("a", "b"), (0.5, 0.25), -1.0)
    # logits of 0.8 and 0.6: 1.3863 and 0.4055, sum > 0: decision A, signed features as they are.
    z = 0.5 * math.log(4) + 0.25 * math.log(1.5) - 1.0
    right = 1 / (1 + math.exp(-z))
    assert model.p_right([0.8, 0.6]) == pytest.approx(right)
    assert combine_probs([0.8, 0.6], "fitted", model) == pytest.approx(max(0.5, right))
    # Mirrored item: decision B, the same confidence on the other side.
    assert combine_probs([0.2, 0.4], "fitted", model) == pytest.approx(1 - max(0.5, right))
    # A model that thinks the decision more likely wrong than right: confidence 1/2, never decided.
    doubtful = PanelModel(("a", "b"), (0.0, 0.0), -3.0)
    assert combine_probs([0.8, 0.6], "fitted", doubtful) == 0.5
    assert PanelModel.from_params(model.params()) == model
    with pytest.raises(ValueError, match="one weight per member"):
        PanelModel.from_params({"members": ["a"], "weights": [1, 2], "intercept": 0})


def test_an_item_a_member_did_not_score_is_unscored() -> None:
    golds = ["A", "B", "A"]
    a = score_items(_rows("a", [0.9, 0.2, 0.7], golds), kind="pairwise", judge="a")
    b = score_items(_rows("b", [0.8, None, 0.6], golds)[:2], kind="pairwise", judge="b")
    panel = combine([a, b], "logodds")
    assert [i.item_id for i in panel.items] == ["i0"]
    assert panel.unscored == {"i1": {"parse_error": 1}, "i2": {"member_missing": 1}}
    assert panel.n_total == 3 and panel.judge == "panel(a, b)"
    assert panel.items[0].judges == ("a", "b") and panel.items[0].gold == "A"


def test_the_fitted_panel_model_is_rounded_when_it_is_fitted() -> None:
    golds = ["A" if i % 3 else "B" for i in range(30)]
    a = score_items(
        _rows("a", [0.55 + 0.4 * (i % 5) / 4 for i in range(30)], golds), kind="pairwise", judge="a"
    )
    b = score_items(
        _rows("b", [0.9 - 0.3 * (i % 7) / 6 for i in range(30)], golds), kind="pairwise", judge="b"
    )
    model = fit_panel([a, b], kind="pairwise")
    for x in (*model.weights, model.intercept):
        assert x == fitted_number(x)
    assert PanelModel.from_params(model.params()) == model


def test_fit_panel_needs_both_outcomes() -> None:
    golds = ["A"] * 12
    a = score_items(_rows("a", [0.9] * 12, golds), kind="pairwise", judge="a")
    with pytest.raises(InputError, match="one outcome only"):
        fit_panel([a], kind="pairwise")


def _calibrate(path: Path, options: CalibrationOptions) -> Card:
    rows, gold = attach_gold(load_recorded(path), None, source=str(path))
    return calibrate_rows(rows, gold=gold, judge=unbound("recorded verdicts"), options=options).card


def test_a_panel_card_records_members_rule_and_procedure_as_version_2(tmp_path: Path) -> None:
    card = _calibrate(
        PAIRWISE, CalibrationOptions(judges=("cheap", "strong"), panel=True, n_boot=50)
    )
    assert card.card_version == 2
    assert [m.model for m in card.judge.members or []] == ["cheap", "strong"]
    assert card.judge.model == "panel(cheap, strong)"
    assert card.calibration.confidence.panel_rule == "logodds"
    assert card.policy.test == "clopper-pearson" and card.policy.start_shares == [0.4]
    text = card.to_yaml()
    assert "members:" in text and "panel_rule: logodds" in text and "start_shares:" in text

    path = tmp_path / "panel.yaml"
    write_card(card, path)
    assert parse_card(path.read_text()).to_yaml() == text
    # Version 1 cannot say it carries version 2 fields.
    bad = text.replace("card_version: 2", "card_version: 1")
    with pytest.raises(Exception, match="card_version 1"):
        Card.model_validate(__import__("yaml").safe_load(bad))


def test_a_panel_scans_every_distinct_score_by_default_others_the_published_levels() -> None:
    # A panel with a declared rule: candidates are its distinct combined scores (its band
    # threshold is one of them); a single judge and a pooled panel keep levels:5000; a grid
    # asked for wins.
    panel = _calibrate(
        PAIRWISE, CalibrationOptions(judges=("cheap", "strong"), panel=True, n_boot=50)
    )
    assert panel.policy.grid == "items"
    single = _calibrate(PAIRWISE, CalibrationOptions(judges=("strong",), n_boot=50))
    assert single.policy.grid == "levels:5000"
    pooled = _calibrate(
        PAIRWISE,
        CalibrationOptions(judges=("cheap", "strong"), panel=True, panel_rule="pooled", n_boot=50),
    )
    assert pooled.policy.grid == "levels:5000"
    asked = _calibrate(
        PAIRWISE,
        CalibrationOptions(judges=("cheap", "strong"), panel=True, grid="coverage:0.1", n_boot=50),
    )
    assert asked.policy.grid == "coverage:0.1"


def test_other_cards_stay_version_1_and_omit_the_new_fields() -> None:
    card = _calibrate(PAIRWISE, CalibrationOptions(judges=("strong",), n_boot=50))
    text = card.to_yaml()
    assert card.card_version == 1
    for field in ("members", "panel_rule", "panel_params", "panel_fit", "test:", "start_shares"):
        assert field not in text
    # A single judge given a share start or another test: version 2, and the card says so.
    shares = _calibrate(
        PAIRWISE, CalibrationOptions(judges=("strong",), n_boot=50, start_shares=(0.3, 0.6))
    )
    assert shares.card_version == 2 and shares.policy.start_shares == [0.3, 0.6]
    assert shares.judge.members is None


def test_the_fitted_rule_is_certified_on_the_other_split_only() -> None:
    card = _calibrate(
        PAIRWISE,
        CalibrationOptions(judges=("cheap", "strong"), panel=True, panel_rule="fitted", n_boot=50),
    )
    ref = card.calibration.confidence
    assert ref.panel_rule == "fitted" and ref.panel_params is not None
    assert ref.panel_params["members"] == ["cheap", "strong"]
    # "fitted on 50% of the task clusters (seed 0, F gold items); thresholds certified on the
    # other C gold items": the two parts are disjoint and make up the gold set.
    note = ref.panel_fit or ""
    n_fit = int(note.split("(seed 0, ")[1].split(" gold")[0])
    n_cert = int(note.split("the other ")[1].split(" gold")[0])
    assert n_fit > 0 and n_cert > 0 and n_fit + n_cert == card.calibration.gold.n


def test_panel_options_are_checked() -> None:
    rows, gold = attach_gold(load_recorded(PAIRWISE), None, source=str(PAIRWISE))
    with pytest.raises(InputError, match="does not combine with --calibrator"):
        calibrate_rows(
            rows,
            gold=gold,
            judge=unbound("recorded verdicts"),
            options=CalibrationOptions(panel=True, calibrator="platt"),
        )
    with pytest.raises(InputError, match="start share must be in"):
        calibrate_rows(
            rows,
            gold=gold,
            judge=unbound("recorded verdicts"),
            options=CalibrationOptions(judges=("strong",), start_shares=(1.5,)),
        )


def test_trust_or_escalate_panel_of_all_three_judges_by_default() -> None:
    path = shared_path("judgments/trust_or_escalate.jsonl")
    card = _calibrate(path, CalibrationOptions(panel=True, n_boot=50))
    assert [m.model for m in card.judge.members or []] == [
        "gpt-3.5-turbo",
        "gpt-4-turbo-2024-04-09",
        "mistral-7b-instruct",
    ]
    # The defaults: summed log-odds, one start at 40% of the 246 items (99), Clopper-Pearson.
    band = card.policy.bands["decide"]
    assert card.policy.starts == [99] and band.threshold is not None
    assert card.policy.coverage == pytest.approx(band.n / 246)
    assert band.upper_bound is not None and band.upper_bound <= 0.15
