"""Provider calls through litellm's real HTTP path to a loopback server, and label probabilities."""

from __future__ import annotations

import asyncio
import math
from typing import Any, Literal

import pytest
from pydantic import BaseModel, ConfigDict

from judge.errors import InfraError, ParseError
from judge.providers import AttemptLog, ModelParams, call_model, label_probs_from_logprobs
from judge.testing.loopback import LoopbackServer, Reply, logprobs_for

LABELS = ["pass", "fail", "cannot_determine"]
GOOD = '{"verdict": "pass", "evidence": ["E1"], "rationale": "tests pass"}'


class Answer(BaseModel):
    model_config = ConfigDict(extra="forbid")
    verdict: Literal["pass", "fail", "cannot_determine"]
    evidence: list[str]
    rationale: str


def _call(
    server: LoopbackServer,
    params: ModelParams | None = None,
    log: AttemptLog | None = None,
    sleeps: list[float] | None = None,
):
    params = params or ModelParams(
        api_base=server.api_base, api_key="sk-test", backoff_base_s=0.001
    )

    async def fake_sleep(seconds: float) -> None:
        if sleeps is not None:
            sleeps.append(seconds)

    return asyncio.run(
        call_model(
            "openai/loopback-judge",
            [{"role": "user", "content": "x"}],
            Answer,
            LABELS,
            params,
            log=log,
            sleep=fake_sleep,
        )
    )


def test_valid_answer_with_label_probabilities() -> None:
    with LoopbackServer() as server:
        server.enqueue(
            Reply(
                content=GOOD,
                logprobs=logprobs_for(GOOD, {"pass": 0.6, "fail": 0.3, "cannot_determine": 0.1}),
            )
        )
        params = ModelParams(api_base=server.api_base, api_key="sk-test", logprobs=True)
        result = _call(server, params)
    assert result.answer.verdict == "pass"  # type: ignore[attr-defined]
    assert result.label_probs == pytest.approx({"pass": 0.6, "fail": 0.3, "cannot_determine": 0.1})
    assert result.prompt_tokens == 100 and result.completion_tokens == 20
    request = server.requests[0]
    # Structured output travelled as a JSON schema; logprobs were asked for.
    assert request["response_format"]["type"] == "json_schema"
    assert request["logprobs"] is True


def test_malformed_json_is_reasked_then_succeeds() -> None:
    with LoopbackServer() as server:
        server.enqueue(Reply(content="{not json"), Reply(content=GOOD))
        log = AttemptLog()
        result = _call(server, log=log)
    assert result.answer.verdict == "pass"  # type: ignore[attr-defined]
    assert len(server.requests) == 2  # the first answer was re-asked once
    # The re-ask carries the invalid answer back to the model.
    assert any("not json" in str(m.get("content")) for m in server.requests[1]["messages"])


def test_never_valid_is_a_parse_error_not_a_verdict() -> None:
    with LoopbackServer() as server:
        server.enqueue(Reply(content='{"verdict": "maybe"}'), Reply(content="plain words"))
        with pytest.raises(ParseError) as info:
            _call(server)
    assert len(server.requests) == 2
    assert info.value.last_output == "plain words"


def test_rate_limit_honours_retry_after_then_succeeds() -> None:
    with LoopbackServer() as server:
        server.enqueue(
            Reply(status=429, headers={"retry-after": "7"}), Reply(status=503), Reply(content=GOOD)
        )
        sleeps: list[float] = []
        log = AttemptLog()
        result = _call(server, log=log, sleeps=sleeps)
    assert result.attempts == 3
    assert len(server.requests) == 3
    assert sleeps[0] == 7.0  # the server's Retry-After
    assert 0.0 <= sleeps[1] <= 0.002  # jittered exponential backoff, base 0.001
    assert [e["outcome"] for e in log.entries] == ["infra_error", "infra_error", "ok"]


def test_provider_failures_exhaust_the_budget_as_infra_error() -> None:
    with LoopbackServer() as server:
        server.enqueue(*[Reply(status=500)] * 10)
        params = ModelParams(
            api_base=server.api_base, api_key="k", max_attempts=3, backoff_base_s=0.001
        )
        with pytest.raises(InfraError) as info:
            _call(server, params)
    assert len(server.requests) == 3  # exactly the retry budget, no hidden client retries
    assert info.value.attempts == 3


def test_auth_error_is_not_retried() -> None:
    with LoopbackServer() as server:
        server.enqueue(*[Reply(status=401, content="bad key")] * 3)
        with pytest.raises(InfraError):
            _call(server)
    assert len(server.requests) == 1


def test_dropped_connection_is_retried() -> None:
    with LoopbackServer() as server:
        server.enqueue(Reply(drop=True), Reply(content=GOOD))
        result = _call(server)
    assert result.answer.verdict == "pass"  # type: ignore[attr-defined]


def _tok(token: str, tops: dict[str, float] | None = None) -> dict[str, object]:
    return {
        "token": token,
        "logprob": 0.0,
        "top_logprobs": [{"token": t, "logprob": math.log(p)} for t, p in (tops or {}).items()],
    }


def test_label_probs_read_where_the_value_begins_and_renormalised() -> None:
    # Tokens: '{"', 'verdict', '":', ' "', then the value. Candidates there:
    # pass 0.5, fail 0.2, cannot 0.1 (prefix of cannot_determine), and ' the' 0.2 (no label).
    # Renormalised over labels: 0.5/0.8, 0.2/0.8, 0.1/0.8.
    content = [
        _tok('{"'),
        _tok("verdict"),
        _tok('":'),
        _tok(' "'),
        _tok("pass", {"pass": 0.5, "fail": 0.2, "cannot": 0.1, " the": 0.2}),
        _tok('"}'),
    ]
    probs = label_probs_from_logprobs(content, LABELS)
    assert probs == pytest.approx({"pass": 0.625, "fail": 0.25, "cannot_determine": 0.125})


def test_label_probs_when_the_quote_is_merged_into_the_value_token() -> None:
    # '"verdict":' then a token ' "fail' that carries the opening quote: strip it.
    content = [_tok('{"verdict":'), _tok(' "fail', {' "fail': 0.75, ' "pass': 0.25}), _tok('"}')]
    assert label_probs_from_logprobs(content, LABELS) == pytest.approx(
        {"pass": 0.25, "fail": 0.75, "cannot_determine": 0.0}
    )


def test_label_probs_absent_without_the_position_or_any_label() -> None:
    assert label_probs_from_logprobs(None, LABELS) is None
    assert label_probs_from_logprobs([_tok("hello")], LABELS) is None
    assert (
        label_probs_from_logprobs([_tok('{"verdict": "'), _tok("x", {"zzz": 0.9})], LABELS) is None
    )


def test_pairwise_labels_and_ambiguous_prefixes() -> None:
    # "t" is a prefix of "tie" only; "" never counts. A=0.3, B=0.3, t=0.4.
    content = [_tok('{"verdict": "'), _tok("A", {"A": 0.3, "B": 0.3, "t": 0.4})]
    assert label_probs_from_logprobs(content, ["A", "B", "tie"]) == pytest.approx(
        {"A": 0.3, "B": 0.3, "tie": 0.4}
    )


def test_an_unpriced_model_stays_unpriced_after_a_router_registered_it() -> None:
    # A litellm Router registers each deployment litellm has no price for as an empty cost
    # entry, which litellm then prices at $0: a judgment must not claim it cost nothing.
    import litellm

    with LoopbackServer() as server:
        server.enqueue(Reply(content=GOOD))
        assert _call(server).cost_usd is None
        litellm.Router(
            model_list=[
                {
                    "model_name": "judge",
                    "litellm_params": {
                        "model": "openai/loopback-judge",
                        "api_base": server.api_base,
                        "api_key": "x",
                    },
                }
            ]
        )
        try:
            assert litellm.model_cost.get("openai/loopback-judge") == {}
            server.enqueue(Reply(content=GOOD))
            assert _call(server).cost_usd is None
        finally:
            litellm.model_cost.pop("openai/loopback-judge", None)


def test_a_price_is_a_number_or_a_tier() -> None:
    import litellm

    from judge.providers.calls import _priceless

    assert _priceless({}) and _priceless({"input_cost_per_token": None, "mode": "chat"})
    assert not _priceless({"input_cost_per_token": 0.0, "output_cost_per_token": 0.0})
    assert not _priceless(
        {
            "input_cost_per_token": None,
            "tiered_pricing": [{"range": [0, 128000], "input_cost_per_token": 1e-7}],
        }
    )
    assert not _priceless(None)  # an unknown model: litellm's own error says "unknown"
    tiered = [
        name
        for name, entry in litellm.model_cost.items()
        if isinstance(entry, dict) and entry.get("tiered_pricing")
    ]
    assert tiered and not any(_priceless(litellm.model_cost[name]) for name in tiered)


def _needs_e1(answer: BaseModel) -> str | None:
    return None if "E1" in answer.evidence else "cite E1"  # type: ignore[attr-defined]


def _checked_call(server: LoopbackServer, params: ModelParams | None = None) -> Any:
    params = params or ModelParams(api_base=server.api_base, api_key="sk-test")
    return asyncio.run(
        call_model(
            "openai/loopback-judge",
            [{"role": "user", "content": "x"}],
            Answer,
            LABELS,
            params,
            check=_needs_e1,
        )
    )


UNCITED = '{"verdict": "pass", "evidence": [], "rationale": "tests pass"}'


def test_an_answer_the_check_refuses_is_reasked_with_its_words() -> None:
    with LoopbackServer() as server:
        server.enqueue(Reply(content=UNCITED), Reply(content=GOOD))
        result = _checked_call(server)
    assert result.answer.evidence == ["E1"] and result.unmet is None  # type: ignore[attr-defined]
    assert len(server.requests) == 2
    assert "cite E1" in str(server.requests[1]["messages"])


def test_the_last_try_is_kept_with_what_the_check_still_found() -> None:
    with LoopbackServer() as server:
        server.enqueue(Reply(content=UNCITED), Reply(content=UNCITED), Reply(content=GOOD))
        result = _checked_call(server)
    # One re-ask (the default budget), then the answer is kept: it is valid, only uncited.
    assert len(server.requests) == 2
    assert result.answer.evidence == [] and result.unmet == "cite E1"  # type: ignore[attr-defined]


def test_a_malformed_answer_and_an_uncited_one_share_the_budget() -> None:
    with LoopbackServer() as server:
        server.enqueue(Reply(content="{not json"), Reply(content=UNCITED))
        result = _checked_call(server)
    # The re-ask went to the malformed answer; the uncited one was the last try: kept.
    assert len(server.requests) == 2 and result.unmet == "cite E1"
    with LoopbackServer() as server:
        server.enqueue(Reply(content=UNCITED), Reply(content="{not json"))
        with pytest.raises(ParseError):
            _checked_call(server)


def test_two_reasks_give_the_check_two_more_tries() -> None:
    with LoopbackServer() as server:
        server.enqueue(Reply(content=UNCITED), Reply(content=UNCITED), Reply(content=GOOD))
        params = ModelParams(api_base=server.api_base, api_key="sk-test", max_reasks=2)
        result = _checked_call(server, params)
    assert len(server.requests) == 3 and result.unmet is None


def test_the_check_leaves_the_schema_sent_unchanged() -> None:
    with LoopbackServer() as server:
        server.enqueue(Reply(content=GOOD), Reply(content=GOOD))
        _checked_call(server)
        _call(server)
    checked, plain = (r["response_format"] for r in server.requests)
    assert checked == plain
