"""A card whose judge failed the length probe sends long traces to people."""

from __future__ import annotations

from datetime import UTC, datetime

from calibration.card import Card, ProbeEntry, ProbesSection
from judge.routing import REASONS, route_judgments
from judge.types import TraceTurn
from tests.review_fixtures import MODEL, make_card, make_case, make_judgment


def probed(card: Card, failed: list[str]) -> Card:
    entry = ProbeEntry(
        name="length-padding",
        version=1,
        kind="invariance",
        applied=8,
        skipped=0,
        n=8,
        as_expected_rate=0.25,
        as_expected_ci95=[0.07, 0.59],
        status="fail",
    )
    section = ProbesSection(
        gold="runs.jsonl",
        gold_digest="sha256:0",
        model=MODEL,
        rubric="agent-run-success@1",
        run_at=datetime(2026, 12, 1, tzinfo=UTC),
        bar=0.8,
        failed=failed,
        long_trace_turns=3,
        probes=[entry],
    )
    return card.with_probes(section)


def long_case(i: int, turns: int):  # type: ignore[no-untyped-def]
    case = make_case(i)
    extra = [TraceTurn(id=f"x{k}", role="assistant", content="more") for k in range(turns - 2)]
    return case.model_copy(update={"trace": [*case.trace, *extra]})


def test_a_failed_length_probe_sends_long_traces_to_people() -> None:
    card = probed(make_card(accept=0.9, reject=0.1), ["length-padding"])
    short, long = long_case(1, 3), long_case(2, 4)
    judgments = [make_judgment(short.id, 0.97), make_judgment(long.id, 0.97)]
    decisions = {
        d.case_id: d
        for d in route_judgments(card, judgments, cases={c.id: c for c in (short, long)})
    }
    assert decisions[short.id].decision == "auto_accept"
    sent = decisions[long.id]
    assert sent.decision == "review" and sent.reason == "long_trace_probe_failed"
    assert "4 turns, more than the 3" in sent.detail and sent.reason in REASONS
    # Without the case, the length is unknown: a person decides.
    (unknown,) = route_judgments(card, [make_judgment(long.id, 0.97)])
    assert unknown.reason == "long_trace_probe_failed" and "unknown" in unknown.detail


def test_a_card_without_probes_or_with_the_length_probe_passed_routes_as_before() -> None:
    long = long_case(3, 9)
    for card in (make_card(accept=0.9, reject=0.1), probed(make_card(accept=0.9, reject=0.1), [])):
        (d,) = route_judgments(card, [make_judgment(long.id, 0.97)], cases={long.id: long})
        assert d.decision == "auto_accept"
