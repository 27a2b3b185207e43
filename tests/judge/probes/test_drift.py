"""Drift: the EWMA chart by hand, and a loopback judge that changes under a card: the anchor
re-check raises the alarm and the card goes stale."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from calibration.card import write_card
from judge.cli import cli
from judge.commands.drift import pinned
from judge.errors import CardError
from judge.judging import JudgeOptions
from judge.probes import ChartParams, CheckStats, charts, check_drift, ewma_chart
from judge.review import route
from judge.routing import stale_reason
from judge.store import Store
from judge.testing.biased import JUDGES, fair, read_prompt, reply, responder
from judge.testing.loopback import LoopbackServer, Reply
from tests.judge.probes.test_workflow import BUDGET, gold_file, runs
from tests.review_fixtures import make_card


def test_the_ewma_chart_by_hand() -> None:
    # centre 0.5, sigma 0.1, lambda 0.2, 3 sigma. t = 1: z = 0.2 * 0.9 + 0.8 * 0.5 = 0.58;
    # limits 0.5 +- 3 * 0.1 * sqrt(0.2 / 1.8 * (1 - 0.8^2)) = 0.5 +- 0.06: out.
    (p,) = ewma_chart([0.9], 0.5, 0.1)
    assert p.ewma == pytest.approx(0.58)
    assert (p.lower, p.upper) == pytest.approx((0.44, 0.56))
    assert p.out
    # t = 2 at 0.55 twice: z1 = 0.51, z2 = 0.518; half-width at t = 2:
    # 0.3 * sqrt(0.2 / 1.8 * (1 - 0.8^4)) = 0.3 * sqrt(0.0656) = 0.076837.
    first, second = ewma_chart([0.55, 0.55], 0.5, 0.1)
    assert first.ewma == pytest.approx(0.51) and not first.out
    assert second.ewma == pytest.approx(0.518)
    assert second.upper - 0.5 == pytest.approx(0.3 * math.sqrt(0.2 / 1.8 * (1 - 0.8**4)))
    # The limits widen towards the asymptote 3 sigma sqrt(lambda / (2 - lambda)) = 0.1.
    far = ewma_chart([0.5] * 60, 0.5, 0.1)[-1]
    assert far.upper - 0.5 == pytest.approx(0.1, abs=1e-6) and not far.out
    # A sigma of zero (a judge that agreed with every label) is floored at min_sigma.
    (tiny,) = ewma_chart([1.0], 1.0, 0.0)
    assert tiny.upper - 1.0 == pytest.approx(3 * 0.01 * 0.2)


def test_charts_take_centre_and_scale_from_the_baseline() -> None:
    base = CheckStats(n=4, n_scored=4, p_pass_mean=0.5, p_pass_sd=0.4, agreement=0.75)
    drawn = charts([base, base], ChartParams())
    assert drawn.p_pass[0].baseline and drawn.p_pass[0].ewma is None
    second = drawn.p_pass[1]
    # sigma = sd / sqrt(n) = 0.2; half-width at t = 1: 3 * 0.2 * 0.2 = 0.12.
    assert (second.centre, second.upper) == pytest.approx((0.5, 0.62))
    a = drawn.agreement[1]  # sigma sqrt(0.75 * 0.25 / 4) = 0.2165
    assert a.upper - 0.75 == pytest.approx(3 * math.sqrt(0.75 * 0.25 / 4) * 0.2)
    assert not drawn.alarm
    only_base = charts([base])
    assert len(only_base.p_pass) == 1 and not only_base.alarm


def always_pass(view: Any) -> tuple[str, str]:
    return "pass", "looks fine"


def test_a_judge_that_changes_under_its_card_raises_the_alarm(tmp_path: Path) -> None:
    cases, labels = runs()
    anchor = gold_file(tmp_path / "anchor.jsonl", cases, labels)
    current = {"judge": fair}

    def respond(request: dict[str, Any]) -> Reply:
        return reply(*current["judge"](read_prompt(request)))

    card = make_card(model="openai/drifty", version=2)
    with LoopbackServer(respond) as server, Store(tmp_path / "judge.db") as store:
        options = JudgeOptions(api_base=server.api_base, variants=1, token_budget=BUDGET)
        checks = []
        for _ in range(3):
            checks.append(check_drift(store, anchor, card, options=options))
        # Every check paid for its calls, three times: nothing came from an earlier check's
        # cache (that would be 6-8 calls in all). 6 to 8 per check: the 8 runs have 6 cache
        # keys (runs 0 and 6, and runs 1 and 7, are the same run: same task, same reads), each
        # called once or, when both of its runs are in flight at once, twice.
        assert 18 <= len(server.requests) <= 24
        assert [c.alarm for c in checks] == [False, False, False]
        assert checks[0].stats.agreement == 1.0 and checks[0].stats.p_pass_mean == pytest.approx(
            0.5
        )
        assert stale_reason(store, checks[0].card_digest) is None
        # The provider moves the model: it now passes everything.
        current["judge"] = always_pass
        drifted = check_drift(store, anchor, card, options=options)
        assert drifted.stats.agreement == 0.5
        assert drifted.alarm and drifted.reason is not None
        assert "agreement with the anchor labels: EWMA 0.9000" in drifted.reason
        assert stale_reason(store, drifted.card_digest) == drifted.reason
        rows = store.drift_checks(drifted.card_digest)
        assert [r["alarm"] for r in rows] == [0, 0, 0, 1]
        assert json.loads(rows[-1]["json"])["agreement_chart"]["out"] is True
        # The existing stale mechanism: routing with the card is refused.
        with pytest.raises(CardError, match="flagged stale"):
            route(store, card)


def test_the_drift_command_checks_and_shows(tmp_path: Path) -> None:
    cases, labels = runs()
    anchor = gold_file(tmp_path / "anchor.jsonl", cases[:4], labels)
    card_path = tmp_path / "card.yaml"
    write_card(make_card(model="openai/fair", version=2), card_path)
    db = str(tmp_path / "judge.db")
    with LoopbackServer(responder(JUDGES)) as server:
        for _ in range(2):
            out = CliRunner().invoke(
                cli,
                [
                    "drift",
                    "check",
                    "--anchor",
                    str(anchor),
                    "--card",
                    str(card_path),
                    "--db",
                    db,
                    "--api-base",
                    server.api_base,
                    "--variants",
                    "1",
                    "--token-budget",
                    str(BUDGET),
                ],
            )
            assert out.exit_code == 0, out.output
    assert "names no dated version" in out.output
    assert "in control after 2 check(s)" in out.output
    shown = CliRunner().invoke(cli, ["drift", "show", "--card", str(card_path), "--db", db])
    assert "(baseline)" in shown.output and "OUT" not in shown.output
    assert pinned("openai/gpt-4o-2024-08-06") and pinned("anthropic/claude-3-5-sonnet-20241022")
    assert pinned("local/qwen2.5-coder-1.5b") and not pinned("openai/gpt-4o")
