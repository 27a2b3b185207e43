"""Per-item scores, confidence and calibrators, on hand-worked cases."""

from __future__ import annotations

import dataclasses

import pytest

from calibration.confidence import (
    apply_calibrator,
    calibrated_split,
    calibrator_from_params,
    fit_calibrator,
    fitted_number,
    score_items,
    split_clusters,
)
from calibration.records import VerdictRow
from judge.errors import InputError


def _row(item: str, verdict: str | None, **kw: object) -> VerdictRow:
    return VerdictRow(item_id=item, judge=str(kw.pop("judge", "j")), verdict=verdict, **kw)  # type: ignore[arg-type]


def test_probability_is_averaged_over_orders_and_samples() -> None:
    # P(A) 0.8 (AB) and 0.6 (BA): mean 0.7 -> decision A, confidence 0.7.
    rows = [
        _row("x", "A", order="AB", prob=0.8, gold="A"),
        _row("x", "A", order="BA", prob=0.6, gold="A"),
    ]
    (item,) = score_items(rows, kind="pairwise").items
    assert item.score == pytest.approx(0.7)
    assert item.source == "prob" and item.n_rows == 2
    assert item.decision("pairwise") == "A"
    assert item.confidence == pytest.approx(0.7)


def test_vote_share_when_no_probability_and_non_ok_rows_do_not_vote() -> None:
    # pass, pass, fail vote; the abstention does not: 2 / 3 -> pass, confidence 2/3.
    rows = [
        _row("x", "pass", sample=0),
        _row("x", "pass", sample=1),
        _row("x", "fail", sample=2),
        _row("x", None, sample=3, status="abstain"),
    ]
    (item,) = score_items(rows, kind="binary").items
    assert item.score == pytest.approx(2 / 3)
    assert item.source == "votes" and item.n_rows == 3
    assert item.decision("binary") == "pass"


def test_mixed_probabilities_fall_back_to_votes() -> None:
    # One row lacks prob: pooling 0.9 with a bare vote would mix scales, so votes: A, B -> 0.5.
    rows = [_row("x", "A", prob=0.9), _row("x", "B")]
    (item,) = score_items(rows, kind="pairwise").items
    assert item.source == "votes"
    assert item.score == pytest.approx(0.5)
    assert item.decision("pairwise") == "tie"


def test_pairwise_tie_counts_half_and_binary_half_is_undecided() -> None:
    # Votes A, tie -> (1 + 0.5) / 2 = 0.75.
    (item,) = score_items([_row("x", "A"), _row("x", "tie")], kind="pairwise").items
    assert item.score == pytest.approx(0.75)
    (b,) = score_items([_row("y", "pass"), _row("y", "fail")], kind="binary").items
    assert b.score == 0.5 and b.decision("binary") is None


def test_items_without_an_ok_verdict_are_unscored_with_their_statuses() -> None:
    rows = [
        _row("x", None, status="parse_error"),
        _row("x", None, status="infra_error"),
        _row("y", "pass"),
    ]
    scores = score_items(rows, kind="binary")
    assert [i.item_id for i in scores.items] == ["y"]
    assert scores.unscored == {"x": {"parse_error": 1, "infra_error": 1}}
    assert scores.n_total == 2


def test_panel_pools_judges_and_single_judge_filters() -> None:
    rows = [
        _row("x", "pass", judge="a"),
        _row("x", "fail", judge="b"),
        _row("x", "pass", judge="c"),
    ]
    panel = score_items(rows, kind="binary")
    assert panel.items[0].score == pytest.approx(2 / 3)
    assert panel.judge == "a+b+c"
    only_b = score_items(rows, kind="binary", judge="b")
    assert only_b.items[0].score == 0.0


def test_conflicting_gold_is_not_guessed() -> None:
    rows = [_row("x", "A", gold="A"), _row("x", "A", gold="B")]
    assert score_items(rows, kind="pairwise").items[0].gold is None


def test_isotonic_fit_is_pool_adjacent_violators() -> None:
    # Scores 0.1 0.2 0.3 0.4 ... with positives 0 1 0 1 (repeated 3 times, to pass the 10 minimum).
    # PAV pools the violating pair (0.2: 1, 0.3: 0) into 0.5: fitted 0, 0.5, 0.5, 1.
    rows = []
    for rep in range(3):
        for i, (s, g) in enumerate([(0.1, "fail"), (0.2, "pass"), (0.3, "fail"), (0.4, "pass")]):
            rows.append(_row(f"{rep}-{i}", "fail", prob=s, gold=g))
    scores = score_items(rows, kind="binary")
    cal = fit_calibrator(scores, "isotonic")
    out = apply_calibrator(scores, cal)
    got = {i.item_id: i.score for i in out.items}
    assert got["0-0"] == pytest.approx(0.0)
    assert got["0-1"] == pytest.approx(0.5) and got["0-2"] == pytest.approx(0.5)
    assert got["0-3"] == pytest.approx(1.0)
    assert out.calibrator == "isotonic"


def test_platt_is_monotone_and_corrects_an_overconfident_judge() -> None:
    # Judge says 0.99 or 0.01; it is right 7 times in 10 at each end. Platt pulls 0.99 towards 0.7.
    rows = []
    for i in range(20):
        high = i < 10
        right = (i % 10) < 7
        gold = ("pass" if right else "fail") if high else ("fail" if right else "pass")
        rows.append(
            _row(str(i), "pass" if high else "fail", prob=0.99 if high else 0.01, gold=gold)
        )
    scores = score_items(rows, kind="binary")
    out = apply_calibrator(scores, fit_calibrator(scores, "platt"))
    by = {i.item_id: i.score for i in out.items}
    assert by["0"] == pytest.approx(0.7, abs=0.01)
    assert by["10"] == pytest.approx(0.3, abs=0.01)


def test_a_fitted_map_is_rounded_when_it_is_fitted_and_is_the_map_its_params_rebuild() -> None:
    # The last digits of a fit depend on the machine; the card holds the map rounded to 10
    # significant digits, and the fitted map in memory is that one (routing rebuilds it).
    assert fitted_number(0.41552447529927466) == 0.4155244753
    assert fitted_number(0.4155244752992746) == 0.4155244753
    assert fitted_number(-2.5878092813735645e-7) == -2.587809281e-7
    rows = []
    for i in range(40):
        prob = 0.05 + 0.9 * (i % 20) / 19
        gold = "pass" if (i * 7) % 10 < 10 * prob else "fail"
        rows.append(_row(str(i), "pass" if prob > 0.5 else "fail", prob=prob, gold=gold))
    scores = score_items(rows, kind="binary")
    for method in ("platt", "isotonic"):
        fitted = fit_calibrator(scores, method)
        params = fitted.params()
        numbers = [v for k, v in params.items() if k != "map"]
        flat = [x for v in numbers for x in (v if isinstance(v, list) else [v])]
        assert flat and all(x == fitted_number(x) for x in flat)
        rebuilt = calibrator_from_params(method, params)
        assert rebuilt.transform(scores.scores()).tolist() == (
            fitted.transform(scores.scores()).tolist()
        )
        # Calibrated scores are rounded to 12 decimals (numpy's exp differs by processor).
        assert all(round(x, 12) == x for x in fitted.transform(scores.scores()).tolist())


def test_calibrator_refuses_one_class_and_unknown_method() -> None:
    rows = [_row(str(i), "pass", prob=0.9, gold="pass") for i in range(12)]
    scores = score_items(rows, kind="binary")
    with pytest.raises(InputError, match="one class"):
        fit_calibrator(scores, "platt")
    with pytest.raises(InputError, match="unknown calibrator"):
        fit_calibrator(scores, "beta")


def test_cluster_split_is_seeded_disjoint_keeps_clusters_and_ignores_labels() -> None:
    rows = [
        _row(f"{t}-{r}", "pass", prob=0.6, gold="pass" if r else "fail", task_id=f"t{t}")
        for t in range(20)
        for r in range(3)
    ]
    scores = score_items(rows, kind="binary")
    fit, rest = split_clusters(scores, fraction=0.5, seed=7)
    fit_ids = {i.item_id for i in fit.items}
    rest_ids = {i.item_id for i in rest.items}
    assert fit_ids.isdisjoint(rest_ids) and len(fit_ids | rest_ids) == 60
    assert len(fit_ids) == 30  # 10 whole clusters of 3
    # A task's runs never straddle the split.
    assert {i.cluster for i in fit.items}.isdisjoint({i.cluster for i in rest.items})
    # Same seed, flipped labels: same split. Another seed: another split.
    flipped = [dataclasses.replace(r, gold="pass") for r in rows]
    fit2, _ = split_clusters(score_items(flipped, kind="binary"), fraction=0.5, seed=7)
    assert {i.item_id for i in fit2.items} == fit_ids
    fit3, _ = split_clusters(scores, fraction=0.5, seed=8)
    assert {i.item_id for i in fit3.items} != fit_ids


def test_calibrated_split_returns_only_the_threshold_part() -> None:
    rows = [
        _row(str(i), "pass", prob=i / 40, gold="pass" if i % 3 else "fail") for i in range(1, 40)
    ]
    scores = score_items(rows, kind="binary")
    out, cal = calibrated_split(scores, "platt", fraction=0.5, seed=1)
    fit, rest = split_clusters(scores, fraction=0.5, seed=1)
    assert {i.item_id for i in out.items} == {i.item_id for i in rest.items}
    assert cal.name == "platt"
