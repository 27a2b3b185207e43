"""``judge review plan --for-card`` then ``judge calibrate --plan``: the labels a plan asks for,
a card certified on them, routed; a plan that does not fit is refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from calibration.card import load_card
from judge.cli import cli
from judge.errors import InputError
from judge.routing import route_recorded
from tests.conftest import DATA

SOURCE = DATA / "calibration" / "pairwise_verdicts.jsonl"


@pytest.fixture
def verdicts(tmp_path: Path) -> Path:
    """The synthetic pairwise verdicts without the items one of whose verdicts failed (routing
    sends those to review while calibration pools the others: see test_recorded_routing)."""
    rows = [json.loads(line) for line in SOURCE.read_text().splitlines()]
    failed = {d["item_id"] for d in rows if d["verdict"] is None}
    path = tmp_path / "verdicts.jsonl"
    path.write_text("".join(json.dumps(d) + "\n" for d in rows if d["item_id"] not in failed))
    return path


def _run(args: list[str]) -> tuple[int, str, str, BaseException | None]:
    result = CliRunner().invoke(cli, args)
    return result.exit_code, result.stdout, result.stderr, result.exception


def _labelled(source: Path, chosen: set[str], name: str = "labelled.jsonl") -> Path:
    """The verdicts with gold on the chosen items only (people labelled what the plan drew)."""
    lines = []
    for line in source.read_text().splitlines():
        d = json.loads(line)
        if d["item_id"] not in chosen:
            d["gold"] = None
        lines.append(json.dumps(d))
    path = source.parent / name
    path.write_text("\n".join(lines) + "\n")
    return path


def _plan(source: Path, *extra: str) -> tuple[Path, list[str]]:
    out = source.parent / "plan.json"
    code, stdout, stderr, exc = _run(
        ["review", "plan", str(source), "--for-card", "--budget", "60", "--panel"]
        + ["--cover", "0.6", "--out", str(out), *extra]
    )
    assert code == 0, (stdout, stderr, exc)
    return out, stdout.split()


def test_plan_then_calibrate_on_its_labels(verdicts: Path, tmp_path: Path) -> None:
    plan_path, chosen = _plan(verdicts)
    plan = json.loads(plan_path.read_text())
    assert len(chosen) == 60 and chosen == plan["chosen"]
    band = plan["strata"][0]
    n_items = len(plan["item_ids"])
    assert band["name"] == "band" and band["n_items"] >= 0.6 * n_items and band["n_labels"] == 60
    assert {i["stratum"] for i in plan["items"]} == {"band"}
    assert all(i["weight"] == pytest.approx(band["n_items"] / 60) for i in plan["items"])
    labelled = _labelled(verdicts, set(chosen))
    card_path = tmp_path / "card.yaml"
    code, out, err, exc = _run(
        ["calibrate", "--recorded", str(labelled), "--panel", "--plan", str(plan_path)]
        + ["--n-boot", "20", "--out", str(card_path)]
    )
    assert code == 0, (out, err, exc)
    card = load_card(card_path)
    assert card.card_version == 2 and card.policy.plan is not None
    assert card.policy.plan.id == plan["id"] and card.policy.plan.n_labels == 60
    assert card.policy.start_shares == [1.0, 0.5] and card.policy.grid == "items"
    decide = card.policy.bands["decide"]
    assert "labelled items tested" in out
    code, shown, _, _ = _run(["card", "show", str(card_path)])
    assert code == 0 and "member    cheap" in shown and "panel     rule logodds" in shown
    assert f"plan      {plan['id']}" in shown
    if decide.threshold is not None:
        # Every decided item of the pool lies in the plan's band stratum.
        assert decide.threshold >= plan["boundary"]
        decisions = route_recorded(card, labelled)
        decided = sum(d.decision != "review" for d in decisions)
        assert decided / len(decisions) == pytest.approx(card.policy.coverage)


def test_a_plan_that_does_not_fit_is_refused(verdicts: Path, tmp_path: Path) -> None:
    plan_path, chosen = _plan(verdicts)
    labelled = _labelled(verdicts, set(chosen))
    base = ["calibrate", "--recorded", str(labelled), "--n-boot", "20"]
    base += ["--out", str(tmp_path / "c.yaml"), "--plan", str(plan_path)]
    # Another judge than the plan's, a scan of one's own, labels the plan did not draw.
    _, _, _, exc = _run([*base, "--judge", "strong"])
    assert isinstance(exc, InputError) and "drawn for panel(cheap, strong)" in str(exc)
    _, _, _, exc = _run([*base, "--panel", "--start-share", "0.4"])
    assert isinstance(exc, InputError) and "the plan fixes the scan" in str(exc)
    others = sorted({json.loads(line)["item_id"] for line in verdicts.read_text().splitlines()})
    outside = [i for i in others if i not in set(chosen)][:3]
    extra = _labelled(verdicts, set(chosen) | set(outside), "extra.jsonl")
    args = [a if a != str(labelled) else str(extra) for a in base]
    _, _, _, exc = _run([*args, "--panel"])
    assert isinstance(exc, InputError) and "the plan did not choose" in str(exc)
    # An edited plan.
    data = json.loads(plan_path.read_text())
    data["band_share"] = 0.9
    plan_path.write_text(json.dumps(data))
    _, _, _, exc = _run([*base, "--panel"])
    assert isinstance(exc, InputError) and "edited after it was drawn" in str(exc)


def test_the_planner_says_how_many_labels(verdicts: Path, tmp_path: Path) -> None:
    out = tmp_path / "plan.json"
    code, _, err, exc = _run(
        ["review", "plan", str(verdicts), "--for-card", "--budget", "40", "--model", "strong"]
        + ["--expected-error", "0.05", "--out", str(out)]
    )
    assert code == 0, (err, exc)
    data = json.loads(out.read_text())
    assert data["judge"] == "strong" and data["estimate"]["error_source"] == "given"
    assert data["estimate"]["error"] == 0.05 and data["estimate"]["labels"] > 0
    assert "planner (given error 0.0500 in the band)" in err
    assert "warning: no label has measured this band yet" not in err


def test_the_default_estimate_assumes_half_alpha_and_asks_for_a_pilot(verdicts: Path) -> None:
    # No --expected-error, no --pilot: alpha / 2 = 0.0750 (the judge's own probabilities are not
    # read for it), the band half the items, and a warning naming --pilot.
    code, _, err, exc = _run(
        ["review", "plan", str(verdicts), "--for-card", "--budget", "40", "--model", "strong"]
    )
    assert code == 0, (err, exc)
    assert "planner (prior error 0.0750 in the band)" in err
    assert "warning: no label has measured this band yet" in err and "--pilot" in err
    assert "0.5 of the items" in err


def test_a_pilot_sets_the_estimate(verdicts: Path, tmp_path: Path) -> None:
    out = tmp_path / "plan.json"
    base = ["review", "plan", str(verdicts), "--for-card", "--budget", "40", "--model", "strong"]
    code, _, err, exc = _run([*base, "--pilot", "4/40", "--out", str(out)])
    assert code == 0, (err, exc)
    estimate = json.loads(out.read_text())["estimate"]
    assert estimate["error_source"] == "pilot" and 0.1 < estimate["error"] < 0.125
    assert "planner (pilot error 0.11" in err and "warning: no label" not in err
    code, _, err, exc = _run([*base, "--pilot", "four/40"])
    assert code != 0 and "ERRORS/LABELS" in err
    _, _, _, exc = _run([*base, "--pilot", "4/40", "--expected-error", "0.1"])
    assert isinstance(exc, InputError) and "not both" in str(exc)
