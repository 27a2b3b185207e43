"""Routing with a panel card: every member's judgment is needed; a missing or failed member
sends the case to review with that reason; each member is checked against its own binding."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from calibration.card import load_card
from judge.cli import cli
from judge.errors import CardError
from judge.review import route
from judge.routing import REASONS, check_card_before_judging, route_judgments
from judge.rubrics import load_rubric
from judge.store import Store
from judge.types import Judgment, Provenance, Verdict
from tests.review_fixtures import (
    make_case,
    make_judgment,
    make_panel_card,
    rubric_digest,
    seed_store,
)

CHEAP, STRONG = "local/cheap", "openai/strong"


def _decisions(card_args: dict[str, object], judgments: list[Judgment]) -> dict[str, tuple]:
    card = make_panel_card([CHEAP, STRONG], **card_args)  # type: ignore[arg-type]
    return {d.case_id: (d.decision, d.reason, d.label) for d in route_judgments(card, judgments)}


def test_a_panel_decides_on_the_combined_score_of_all_members() -> None:
    js = [
        make_judgment("both-pass", 0.95, model=CHEAP),
        make_judgment("both-pass", 0.97, model=STRONG),
        # log-odds: odds 19 and 1/9 -> geometric mean sqrt(19/9) = 1.453, P = 0.592: review.
        make_judgment("split", 0.95, model=CHEAP),
        make_judgment("split", 0.1, model=STRONG),
        make_judgment("both-fail", 0.02, model=CHEAP),
        make_judgment("both-fail", 0.08, model=STRONG),
        make_judgment("cheap-only", 0.99, model=CHEAP),
        make_judgment("failed", 0.99, model=CHEAP),
        make_judgment("failed", None, model=STRONG, status="parse_error"),
        make_judgment("abstained", 0.99, model=CHEAP),
        make_judgment("abstained", 0.5, model=STRONG, status="abstain"),
        make_judgment("flagged", 0.99, model=CHEAP),
        make_judgment("flagged", 0.99, model=STRONG, flagged=["E2"]),
    ]
    got = _decisions({}, js)
    assert got == {
        "both-pass": ("auto_accept", "in_accept_band", "pass"),
        "split": ("review", "outside_bands", None),
        "both-fail": ("auto_reject", "in_reject_band", "fail"),
        "cheap-only": ("review", "member_missing", None),
        "failed": ("review", "member_failed", None),
        "abstained": ("review", "member_failed", None),
        "flagged": ("review", "flagged_evidence", None),
    }
    assert {"member_missing", "member_failed"} <= set(REASONS)
    card = make_panel_card([CHEAP, STRONG])
    by_case = {d.case_id: d for d in route_judgments(card, js)}
    assert by_case["split"].score == pytest.approx((19 / 9) ** 0.5 / (1 + (19 / 9) ** 0.5))
    assert "openai/strong" in by_case["cheap-only"].detail
    assert "panel member openai/strong" in by_case["failed"].detail
    assert by_case["both-pass"].model == "panel(local/cheap, openai/strong)"
    assert len(by_case["both-pass"].judgment_ids) == 2
    # The mean rule decides "split" differently: (0.95 + 0.1) / 2 = 0.525, still review; and
    # a confident member no longer outweighs: (0.99 + 0.6) / 2 = 0.795 < 0.9.
    mean = _decisions(
        {"rule": "mean"},
        [make_judgment("m", 0.99, model=CHEAP), make_judgment("m", 0.6, model=STRONG)],
    )
    logodds = _decisions(
        {}, [make_judgment("m", 0.99, model=CHEAP), make_judgment("m", 0.6, model=STRONG)]
    )
    assert mean["m"][1] == "outside_bands" and logodds["m"][1] == "in_accept_band"


def test_the_fitted_rule_routes_with_the_cards_model() -> None:
    params = {"members": [CHEAP, STRONG], "weights": [0.5, 0.5], "intercept": 0.0, "map": "-"}
    js = [make_judgment("c", 0.95, model=CHEAP), make_judgment("c", 0.95, model=STRONG)]
    # Signed log-odds 2.944 each: P(right) = sigmoid(0.5 * 2.944 * 2) = 0.95 -> accepted (0.9).
    assert _decisions({"rule": "fitted", "params": params}, js)["c"][1] == "in_accept_band"
    wrong = dict(params, members=[STRONG, CHEAP])
    with pytest.raises(CardError, match="fitted model is for"):
        _decisions({"rule": "fitted", "params": wrong}, js)
    with pytest.raises(CardError, match="malformed"):
        _decisions({"rule": "fitted", "params": {"members": [CHEAP]}}, js)
    with pytest.raises(CardError, match="routing cannot apply"):
        _decisions({"rule": "pooled"}, js)


def test_each_member_is_checked_against_its_own_binding() -> None:
    card = make_panel_card([CHEAP, STRONG])
    other = rubric_digest("agent-run-success@1").replace("sha256:", "sha256:0")
    js = [
        make_judgment("c", 0.95, model=CHEAP),
        make_judgment("c", 0.95, model=STRONG, digest=other),
    ]
    with pytest.raises(CardError, match="rubric digest"):
        route_judgments(card, js)
    # Before judging: a member model with the card's rubric passes; another model is refused.
    check_card_before_judging(card, [CHEAP], rubric_digest("agent-run-success@1"))
    with pytest.raises(CardError, match="the card is for"):
        check_card_before_judging(card, ["someone/else"], rubric_digest("agent-run-success@1"))


def test_a_missing_member_is_queued_for_people(tmp_path: Path) -> None:
    card = make_panel_card([CHEAP, STRONG])
    js = [make_judgment("c1", 0.97, model=CHEAP), make_judgment("c1", 0.96, model=STRONG)]
    js += [make_judgment("c2", 0.97, model=CHEAP)]
    with Store(tmp_path / "s.db") as store:
        seed_store(store, [make_case("c1"), make_case("c2")], js)
        run = route(store, card, audit_fraction=0.0)
    assert run.counts == {("auto_accept", "in_accept_band"): 1, ("review", "member_missing"): 1}
    assert run.enqueued == 1


def _panel_judgments(n: int) -> tuple[list[str], list[Judgment]]:
    rubric = load_rubric("agent-run-success@1")
    gold_lines, judgments = [], []
    for i in range(n):
        gold = "pass" if i % 2 else "fail"
        gold_lines.append(
            json.dumps(
                {
                    "id": f"c{i}",
                    "source": "t",
                    "license": "MIT",
                    "kind": "agent_run",
                    "task": "t",
                    "gold": gold,
                    "gold_source": "harness",
                    "slices": {"task_id": f"t{i}"},
                }
            )
        )
        # Each member sure and right on two thirds of the cases, unsure on the others.
        for k, model in enumerate(("cheap", "strong")):
            sure = (i + k) % 3 != 0
            p = (0.95 if gold == "pass" else 0.05) if sure else 0.55
            judgments.append(Judgment(
                id=f"j{i}{model}", case_id=f"c{i}", cache_key=f"k{i}{model}", status="ok",
                verdict=Verdict(label="pass" if p >= 0.5 else "fail",
                                label_probs={"pass": p, "fail": 1 - p}),
                provenance=Provenance(
                    rubric_id=rubric.id, rubric_version=rubric.version,
                    rubric_digest=rubric.digest, model=model, prompt_digest="sha256:p",
                    evidence_digest=f"sha256:e{i}", selector_version="sel-1", token_budget=900,
                    judge_version="0.1"),
            ))  # fmt: skip
    return gold_lines, judgments


def test_a_panel_card_from_judgments_binds_each_member_and_routes(tmp_path: Path) -> None:
    gold_lines, judgments = _panel_judgments(300)
    gold_path, jpath = tmp_path / "g.jsonl", tmp_path / "j.jsonl"
    gold_path.write_text("\n".join(gold_lines) + "\n")
    jpath.write_text("\n".join(j.model_dump_json() for j in judgments) + "\n")
    out_card = tmp_path / "c.yaml"
    args = ["calibrate", "--gold", str(gold_path), "--judgments", str(jpath), "--panel"]
    result = CliRunner().invoke(
        cli,
        [*args, "--judge", "cheap", "--judge", "strong", "--n-boot", "20", "--out", str(out_card)],
    )
    assert result.exit_code == 0, (result.output, result.exception)
    card = load_card(out_card)
    rubric = load_rubric("agent-run-success@1")
    assert card.card_version == 2 and card.judge.model == "panel(cheap, strong)"
    assert [
        (m.model, m.rubric.digest, m.evidence_selector.version) for m in card.judge.members or []
    ] == [
        ("cheap", rubric.digest, "sel-1"),
        ("strong", rubric.digest, "sel-1"),
    ]
    decisions = route_judgments(card, judgments)
    assert len(decisions) == 300 and all(d.model == "panel(cheap, strong)" for d in decisions)
    decided = [d for d in decisions if d.decision != "review"]
    assert decided, "the panel certifies a band on these judgments"
    # Without one member's judgment of a case, that case goes to review, the others do not move.
    fewer = [
        j
        for j in judgments
        if not (j.case_id == decided[0].case_id and j.provenance.model == "strong")
    ]
    again = {d.case_id: d for d in route_judgments(card, fewer)}
    assert again[decided[0].case_id].reason == "member_missing"
    assert sum(d.decision != "review" for d in again.values()) == len(decided) - 1
