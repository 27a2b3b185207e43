"""``judge route --card CARD --recorded FILE``: cards (single, cascade, panel) applied to
recorded verdicts with no store, and a file the card cannot route whole refused by line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from calibration.card import Card, write_card
from calibration.inputs import load_recorded
from calibration.workflow import CalibrationOptions, attach_gold, calibrate_rows, unbound
from judge.cli import cli
from judge.errors import CardError, InputError
from judge.routing import route_recorded
from tests.conftest import DATA
from tests.review_fixtures import make_card

BINARY = DATA / "calibration" / "binary_verdicts.jsonl"
PAIRWISE = DATA / "calibration" / "pairwise_verdicts.jsonl"


def _card(path: Path, options: CalibrationOptions) -> Card:
    rows, gold = attach_gold(load_recorded(path), None, source=str(path))
    return calibrate_rows(rows, gold=gold, judge=unbound("recorded verdicts"), options=options).card


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _write(path: Path, lines: list[dict]) -> Path:
    path.write_text("".join(json.dumps(d) + "\n" for d in lines))
    return path


def _cli(args: list[str]) -> tuple[int, str, str, BaseException | None]:
    result = CliRunner().invoke(cli, args)
    return result.exit_code, result.stdout, result.stderr, result.exception


def _clean(path: Path, tmp_path: Path) -> Path:
    """The items whose every verdict was read: routing sends an item with a failed (null)
    verdict to review, while calibration pools the item's other verdicts."""
    lines = _lines(path)
    failed = {d["item_id"] for d in lines if d["verdict"] is None}
    return _write(tmp_path / path.name, [d for d in lines if d["item_id"] not in failed])


def test_a_panel_card_routes_its_own_verdicts_as_it_certified_them(tmp_path: Path) -> None:
    clean = _clean(PAIRWISE, tmp_path)
    card = _card(clean, CalibrationOptions(judges=("cheap", "strong"), panel=True, n_boot=20))
    band = card.policy.bands["decide"]
    assert band.threshold is not None, "the synthetic panel certifies a band"
    path = tmp_path / "panel.yaml"
    write_card(card, path)
    code, out, err, exc = _cli(
        ["route", "--card", str(path), "--recorded", str(clean), "--format", "jsonl"]
    )
    assert code == 0, (out, err, exc)
    decisions = [json.loads(line) for line in out.splitlines()]
    items = {d["item_id"] for d in _lines(clean)}
    assert len(decisions) == len(items) and {d["item_id"] for d in decisions} == items
    decided = [d for d in decisions if d["decision"] != "review"]
    # The band holds the same items on the same scores: as many decided as certified.
    assert len(decided) == band.n
    assert {d["decision"] for d in decided} <= {"A", "B"}
    assert all(d["reason"] == "in_decide_band" for d in decided)
    assert all(d["decision"] == ("A" if d["score"] > 0.5 else "B") for d in decided)
    assert {d["reason"] for d in decisions if d["decision"] == "review"} <= {"outside_bands"}
    assert f"{band.n} decided without review" in err


def test_single_and_cascade_cards_route_binary_verdicts(tmp_path: Path) -> None:
    clean = _clean(BINARY, tmp_path)
    single = _card(clean, CalibrationOptions(judges=("strong",), n_boot=20))
    got = route_recorded(single, clean)
    # One decision per item the card's judge gave a verdict on (the file's other judge ignored).
    assert len(got) == len({d["item_id"] for d in _lines(clean) if d["judge"] == "strong"})
    assert {d.decision for d in got} <= {"pass", "fail", "review"}
    accepted = [d for d in got if d.decision == "pass"]
    rejected = [d for d in got if d.decision == "fail"]
    a_band, r_band = single.policy.bands["accept"], single.policy.bands["reject"]
    assert len(accepted) == a_band.n and len(rejected) == r_band.n
    assert all(d.reason == "in_accept_band" for d in accepted)
    cascade = _card(
        clean,
        CalibrationOptions(
            judges=("cheap", "strong"), cascade=True, cascade_mode="shared", n_boot=20
        ),
    )
    routed = route_recorded(cascade, clean)
    decided = sum(d.decision != "review" for d in routed)
    assert decided == sum(s.n_decided for s in cascade.policy.cascade or [])
    assert any("stage 1: cheap" in d.detail for d in routed)


def test_a_failed_verdict_sends_its_item_to_review(tmp_path: Path) -> None:
    card = _card(PAIRWISE, CalibrationOptions(judges=("cheap", "strong"), panel=True, n_boot=20))
    lines = _lines(PAIRWISE)
    for d in lines:
        if d["item_id"] == "pair-0" and d["judge"] == "strong":
            d["verdict"] = None
    got = {d.item_id: d for d in route_recorded(card, _write(tmp_path / "f.jsonl", lines))}
    assert (got["pair-0"].decision, got["pair-0"].reason) == ("review", "member_failed")
    assert "panel member strong" in got["pair-0"].detail


@pytest.mark.parametrize(
    ("change", "line", "field", "message"),
    [
        ("drop_member", 3, "judge", "has no verdict of the card's panel member 'strong'"),
        ("duplicate", 601, "item_id", "duplicate verdict: item 'pair-0', judge 'cheap'"),
        ("prob_high", 2, "prob", "must be a probability in [0, 1]"),
        ("prob_nan", 2, "prob", "must be a probability in [0, 1]"),
        ("binary_label", 2, "verdict", "'pass' is not a pairwise label"),
        ("other_judges", None, "judge", "no verdict of the card's panel member 'cheap'"),
    ],
)
def test_a_file_the_card_cannot_route_whole_is_refused_by_line(
    tmp_path: Path, change: str, line: int | None, field: str, message: str
) -> None:
    card = _card(PAIRWISE, CalibrationOptions(judges=("cheap", "strong"), panel=True, n_boot=20))
    card_path = tmp_path / "panel.yaml"
    write_card(card, card_path)
    lines = _lines(PAIRWISE)
    text = None
    if change == "drop_member":
        first = next(i for i, d in enumerate(lines) if d["item_id"] == "pair-1")
        lines = [d for d in lines if not (d["item_id"] == "pair-1" and d["judge"] == "strong")]
        line = first + 1
    elif change == "duplicate":
        lines.append(dict(lines[0]))
    elif change == "prob_high":
        lines[1]["prob"] = 1.5
    elif change == "binary_label":
        lines[1]["verdict"] = "pass"
    elif change == "other_judges":
        for d in lines:
            d["judge"] = {"cheap": "x", "strong": "y"}[d["judge"]]
    path = _write(tmp_path / "bad.jsonl", lines)
    if change == "prob_nan":
        raw = path.read_text().splitlines()
        raw[1] = raw[1].replace('"prob": 0.0', '"prob": NaN')
        assert "NaN" in raw[1]
        text = "\n".join(raw) + "\n"
        path.write_text(text)
    with pytest.raises(InputError) as info:
        route_recorded(card, path)
    err = info.value
    assert message in str(err) and err.field == field and err.line == line
    # The command routes nothing: no line on stdout, the error raised (main prints it, exit 2).
    code, out, _, exc = _cli(
        ["route", "--card", str(card_path), "--recorded", str(path), "--format", "jsonl"]
    )
    assert code != 0 and out == "" and isinstance(exc, InputError) and message in str(exc)


def test_a_card_that_binds_a_rubric_or_expired_is_refused() -> None:
    bound = make_card(model="strong")  # binds a rubric digest and a selector
    with pytest.raises(CardError, match="cannot route recorded verdicts.*rubric digest"):
        route_recorded(bound, BINARY)
    card = _card(BINARY, CalibrationOptions(judges=("strong",), n_boot=20, valid_days=1))
    with pytest.raises(CardError, match="expired"):
        route_recorded(card, BINARY, now=card.expires_at)
