"""Diagnosing failed runs through the real runner and litellm, against the loopback server:
every step numbered, the report in step indexes, re-asks on a made-up step, the four statuses,
the cache, samples as step scores, and skips with reasons."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import judge
from judge.diagnosis import diagnose, failed_runs, kernel_scores
from judge.steps import candidate_steps, step_evidence, step_of
from judge.testing.loopback import LoopbackServer, Reply
from judge.types import Case, TraceTurn

MODEL = "openai/diagnoser"


def _run(case_id: str = "run-1", n: int = 6) -> Case:
    turns = [TraceTurn(id="t0", role="user", content="Return my lamp.", kind="message")]
    turns += [
        TraceTurn(id=f"t{i}", role="assistant", content=f"step {i} text", kind="message")
        for i in range(1, n - 1)
    ]
    turns.append(
        TraceTurn(
            id="tf", role="assistant", content="Your lamp has been returned.", kind="final_answer"
        )
    )
    return Case(id=case_id, kind="agent_run", task="Return the user's lamp.", trace=turns)


def _report(step: str | None = "E3", verdict: str = "located", **over: Any) -> str:
    body = {
        "verdict": verdict,
        "critical_step": step,
        "evidence": [step] if step else ["E1"],
        "decision": "returned the wrong item",
        "information_available": [{"id": "E1", "claim": "the user asked for the lamp"}],
        "violated_invariant": "confirm-identity-before-acting",
        "symptom": {"id": "E6", "description": "the lamp was not returned"},
        "causal_chain": [{"id": "E3", "did": "picked the wrong item"}],
        "counterfactual": "look the order up first",
        "recoverable_at_step": "E4",
        "owner": "model",
        "confidence": "medium",
        "minimal_fix": "read the order before acting",
        "checks": [],
        "rationale": "E3 picked the wrong item.",
    }
    body.update(over)
    return json.dumps(body)


def _diagnose(
    tmp_path: Path, respond: Callable[[dict[str, Any]], Reply], cases: list[Case], **kw: Any
) -> tuple[Any, list[dict[str, Any]]]:
    tmp_path.mkdir(parents=True, exist_ok=True)
    with LoopbackServer(respond) as server, judge.open_store(tmp_path / "d.db") as store:
        options = judge.JudgeOptions(api_base=server.api_base, **kw)
        result = diagnose(store, cases, models=[MODEL], options=options)
        return result, list(server.requests)


@pytest.fixture(autouse=True)
def _no_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)


def test_step_ids_name_steps() -> None:
    assert step_of("E1") == 0 and step_of("E12") == 11
    assert step_of("E0") is None and step_of("step 3") is None


def test_every_step_is_shown_even_past_the_budget() -> None:
    case = _run(n=40)
    long = [t.model_copy(update={"content": "x " * 2000}) for t in case.trace]
    case = case.model_copy(update={"trace": long})
    evidence = step_evidence(case, case, token_budget=1500)
    assert [i.id for i in evidence.items] == [f"E{k}" for k in range(41)]
    assert [i.step for i in evidence.items[1:]] == list(range(40))
    assert all(i.clipped for i in evidence.items[1:])
    assert evidence.dropped == []


def test_a_diagnosis_is_stored_in_step_indexes(tmp_path: Path) -> None:
    result, requests = _diagnose(tmp_path, lambda r: Reply(content=_report("E3")), [_run()])
    (run,) = result.runs
    assert run.status == "ok" and run.critical_step == "E3" and run.step_index == 2
    assert (
        run.report is not None and run.report.violated_invariant == "confirm-identity-before-acting"
    )
    assert run.report.information_available[0].step == 0
    assert run.report.recoverable_at_step == 3
    assert run.fbd_status == "tentative"
    assert run.step_scores[2] == 1.0 and run.step_scores[3] == 0.5
    prompt = requests[0]["messages"][1]["content"]
    assert 'id="E6"' in prompt and 'id="E0"' in prompt  # every step and the task, numbered
    line = run.as_json()
    assert (line["critical_step"], line["step_index"], line["fbd_status"]) == ("E3", 2, "tentative")
    # A second run is served from the store: no call.
    again, more = _diagnose(tmp_path, lambda r: Reply(content=_report("E3")), [_run()])
    assert more == [] and again.runs[0].step_index == 2


def test_a_made_up_step_is_reasked_then_kept_unlocated(tmp_path: Path) -> None:
    result, requests = _diagnose(tmp_path, lambda r: Reply(content=_report("E99")), [_run()])
    assert len(requests) == 2  # the first try and one re-ask
    (run,) = result.runs
    assert run.status == "ok" and run.step_index is None
    assert run.report is not None and "E99" in run.report.invalid_steps
    assert sum(run.step_scores) == 0


def test_abstention_and_parse_and_provider_failures_stay_apart(tmp_path: Path) -> None:
    abstain, _ = _diagnose(
        tmp_path / "a", lambda r: Reply(content=_report(None, verdict="cannot_determine")), [_run()]
    )
    assert abstain.runs[0].status == "abstain" and abstain.runs[0].step_index is None
    broken, _ = _diagnose(tmp_path / "b", lambda r: Reply(content="not json"), [_run()])
    assert broken.runs[0].status == "parse_error" and broken.runs[0].report is None
    down, _ = _diagnose(
        tmp_path / "c", lambda r: Reply(status=500, content="down"), [_run()], max_attempts=1
    )
    assert down.runs[0].status == "infra_error"
    assert down.runs[0].as_report()["critical_step"] is None


def test_samples_spread_the_step_scores(tmp_path: Path) -> None:
    answers = iter(["E3", "E3", "E5"])
    result, _ = _diagnose(
        tmp_path, lambda r: Reply(content=_report(next(answers))), [_run()], samples=3
    )
    (run,) = result.runs
    assert run.samples == 3
    assert run.step_scores[2] == pytest.approx((1 + 1 + 0.25) / 3)
    assert run.step_scores[4] == pytest.approx((0.25 + 0.25 + 1) / 3)


def test_kernel_scores_by_hand() -> None:
    assert kernel_scores([1, None], 3) == (0.25, 0.5, 0.25)
    assert kernel_scores([], 2) == (0.0, 0.0)


def test_passed_empty_and_pairwise_runs_are_skipped_with_reasons() -> None:
    empty = _run("empty").model_copy(update={"trace": []})
    pair = Case(id="p", kind="pairwise", task="t", candidates={"A": "a", "B": "b"})
    keep, skipped = failed_runs([_run("ok"), _run("passed"), empty, pair], {"passed": "pass"})
    assert [c.id for c in keep] == ["ok"]
    reasons = {s.case_id: s.reason for s in skipped}
    assert "passed" in reasons["passed"] and "no steps" in reasons["empty"]
    assert "pairwise" in reasons["p"]


def test_the_checks_propose_steps_from_the_structure() -> None:
    trace = [
        TraceTurn(
            id="a", role="assistant", content="get_user_details(user_id=1)", kind="tool_call"
        ),
        TraceTurn(id="b", role="tool", content="{}", kind="tool_result"),
        TraceTurn(
            id="c", role="assistant", content="str_replace(path='src/x.py')", kind="tool_call"
        ),
        TraceTurn(id="d", role="tool", content="3 passed", kind="test_run"),
        TraceTurn(
            id="e", role="assistant", content="str_replace(path='src/y.py')", kind="tool_call"
        ),
        TraceTurn(id="f", role="assistant", content="Fixed: all tests pass.", kind="final_answer"),
    ]
    found = {(c.step, c.invariant) for c in candidate_steps(trace)}
    assert (4, "rerun-tests-after-the-last-edit") in found
    assert (5, "verify-before-claiming-success") in found
    support = [
        TraceTurn(
            id="a",
            role="assistant",
            content="return_delivered_order_items(order=1)",
            kind="tool_call",
        ),
        TraceTurn(
            id="b", role="assistant", content="find_user_id_by_email(email=x)", kind="tool_call"
        ),
    ]
    assert [(c.step, c.invariant) for c in candidate_steps(support)] == [
        (0, "confirm-identity-before-acting")
    ]
