"""Provider faults: the fault-injecting server, each fault's effect, and a 200-judgment campaign.

Everything goes through litellm's real HTTP path to a loopback server on 127.0.0.1. The
1,000-judgment version is ``bench/reliability_faults.py``.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from judge.errors import InfraError, ParseError, ProviderError
from judge.providers import AttemptLog, ModelParams, call_model
from judge.rubrics import load_rubric
from judge.testing.faults import (
    FAULT_KINDS,
    INFRA_FAULTS,
    PARSE_FAULTS,
    FaultConfig,
    FaultInjector,
    conversation_key,
    execute_campaign,
    run_campaign,
)
from judge.testing.loopback import LoopbackServer, Reply

PASS = '{"verdict": "pass", "evidence": ["E1"], "rationale": "ok"}'
MESSAGES = [{"role": "system", "content": "sys"}, {"role": "user", "content": "judge this"}]


pytestmark = pytest.mark.usefixtures("api_key")


def _request(i: int) -> dict[str, object]:
    return {
        "messages": [{"role": "system", "content": "s"}, {"role": "user", "content": f"case {i}"}]
    }


def test_config_is_checked() -> None:
    with pytest.raises(ValueError, match="unknown fault"):
        FaultConfig(rates={"meteor": 0.1})
    with pytest.raises(ValueError, match="sum to"):
        FaultConfig(rates={"hang": 0.6, "reset": 0.6})
    assert FaultConfig.uniform(0.35).total == pytest.approx(0.35)


def test_draws_are_seeded_and_independent_of_arrival_order() -> None:
    config = FaultConfig.uniform(0.3, seed=7)
    forward, backward = FaultInjector(config), FaultInjector(config)
    for i in range(300):
        forward(_request(i))
    for i in reversed(range(300)):
        backward(_request(i))
    faults_f = {e.conversation: e.fault for e in forward.log}
    faults_b = {e.conversation: e.fault for e in backward.log}
    assert faults_f == faults_b
    other = FaultInjector(FaultConfig.uniform(0.3, seed=8))
    for i in range(300):
        other(_request(i))
    assert {e.conversation: e.fault for e in other.log} != faults_f


def test_rates_are_honoured() -> None:
    # 7,000 first requests at 35% split over 7 kinds: 5% each, i.e. 350 expected per kind;
    # binomial sd = sqrt(7000 * 0.05 * 0.95) ~ 18, so +-80 is more than 4 sd.
    injector = FaultInjector(FaultConfig.uniform(0.35, seed=1))
    for i in range(7000):
        injector(_request(i))
    counts = injector.counts()
    for kind in FAULT_KINDS:
        assert abs(counts[kind] - 350) < 80, (kind, counts)
    assert abs(counts["none"] - 4550) < 200


def test_retries_and_reasks_of_one_conversation_share_a_key() -> None:
    reask = {
        "messages": [
            *MESSAGES,
            {"role": "assistant", "content": "x"},
            {"role": "user", "content": "fix it"},
        ]
    }
    assert conversation_key({"messages": MESSAGES}) == conversation_key(reask)
    injector = FaultInjector(FaultConfig())
    injector({"messages": MESSAGES})
    injector(reask)
    assert [e.attempt for e in injector.log] == [0, 1]


async def _call(server: LoopbackServer, **params: float) -> tuple[object, AttemptLog]:
    rubric = load_rubric("agent-run-success@1")
    log = AttemptLog()
    settings = {
        "timeout_s": 1.0,
        "max_attempts": 2,
        "backoff_base_s": 0.001,
        "backoff_max_s": 0.01,
    } | params
    try:
        result: object = await call_model(
            "openai/loopback",
            MESSAGES,
            rubric.answer_model(),
            rubric.all_labels,
            ModelParams(api_base=server.api_base, **settings),
            log=log,  # type: ignore[arg-type]
        )
    except ProviderError as exc:
        result = exc
    return result, log


@pytest.mark.parametrize("kind", FAULT_KINDS)
def test_each_fault_ends_as_its_typed_failure_never_a_verdict(kind: str) -> None:
    injector = FaultInjector(FaultConfig(rates={kind: 1.0}, hang_s=3.0))
    with LoopbackServer(injector) as server:
        result, log = asyncio.run(_call(server))
    if kind in INFRA_FAULTS:
        # Two attempts (the budget), each a provider failure.
        assert isinstance(result, InfraError), result
        assert len(injector.log) == 2
        assert [e["outcome"] for e in log.entries] == ["infra_error", "infra_error"]
    else:
        assert kind in PARSE_FAULTS
        assert isinstance(result, ParseError), result
        assert result.last_output  # the unparseable answer is kept for audit
        # A schema-invalid answer is re-asked once; a truncated one (finish_reason "length")
        # is not (instructor raises at once: the same max_tokens would cut it again).
        assert len(injector.log) == (2 if kind == "schema_invalid" else 1)


@pytest.mark.parametrize("kind", FAULT_KINDS)
def test_each_fault_is_recovered_from_when_the_next_reply_is_good(kind: str) -> None:
    injector = FaultInjector(FaultConfig(rates={kind: 1.0}, hang_s=3.0))
    calls = iter(range(100))

    def once_then_good(request: dict[str, object]) -> Reply:
        return injector(request) if next(calls) == 0 else Reply(content=PASS)

    with LoopbackServer(once_then_good) as server:
        result, _ = asyncio.run(_call(server))
    if kind == "truncated":
        assert isinstance(result, ParseError)  # not re-asked, see above
    else:
        assert not isinstance(result, ProviderError), result
        assert result.answer.verdict == "pass"  # type: ignore[attr-defined]


def test_retry_after_is_honoured() -> None:
    injector = FaultInjector(FaultConfig(rates={"rate_limit": 1.0}, retry_after_s=1))
    calls = iter(range(100))

    def first_429(request: dict[str, object]) -> Reply:
        return injector(request) if next(calls) == 0 else Reply(content=PASS)

    with LoopbackServer(first_429) as server:
        started = time.perf_counter()
        result, log = asyncio.run(_call(server, backoff_max_s=30.0))
        elapsed = time.perf_counter() - started
    assert not isinstance(result, ProviderError)
    assert [e["outcome"] for e in log.entries] == ["infra_error", "ok"]
    # The exponential backoff alone would wait at most 0.001 * 2 s; Retry-After says 1 s.
    assert elapsed >= 1.0


def test_campaign_of_200_judgments_with_30_percent_faults(tmp_path: Path) -> None:
    # timeout 8 s: a valid reply must never time out on a busy machine (3 s did once, with a
    # model job and another test run sharing the 2 cores); hangs then cost 16 s of a slot.
    report = run_campaign(str(tmp_path / "faults.db"), n=200, fault_rate=0.3, seed=0, timeout_s=8.0)
    assert report.violations == [], report.summary()
    assert report.stored == report.planned == report.distinct_cases == 200
    injected = report.requests - report.faults["none"]
    assert 0.2 <= injected / report.requests <= 0.4, report.summary()
    # Every fault kind happened, and every status was reached, so each path was exercised.
    assert all(report.faults[kind] > 0 for kind in FAULT_KINDS), report.faults
    assert all(report.statuses[s] > 0 for s in ("ok", "abstain", "parse_error", "infra_error")), (
        report.statuses
    )
    assert report.max_requests_per_judgment <= report.retry_budget


def test_the_campaign_check_catches_a_failure_stored_as_a_verdict(tmp_path: Path) -> None:
    """The checker must be able to fail: each kind of tampering is caught."""
    campaign = execute_campaign(str(tmp_path / "f.db"), n=30, fault_rate=0.5, seed=3, timeout_s=1.5)
    assert campaign.check().violations == []
    judgments = campaign.judgments
    failed = next(j for j in judgments if j.status in ("infra_error", "parse_error"))
    verdict = next(j.verdict for j in judgments if j.verdict is not None)
    forged = failed.model_copy(update={"status": "ok", "error": None, "verdict": verdict})
    campaign.judgments = [forged if j.id == failed.id else j for j in judgments]
    assert any(failed.case_id in v for v in campaign.check().violations)
    campaign.judgments = judgments[1:]  # one lost
    assert any("29 judgments stored, 30 planned" in v for v in campaign.check().violations)
    campaign.judgments = [*judgments, judgments[0]]  # one duplicated
    assert any("duplicated" in v for v in campaign.check().violations)
