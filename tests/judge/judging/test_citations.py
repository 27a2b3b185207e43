"""Verdicts must cite evidence ids: an answer citing nothing shown is re-asked (within the re-ask
budget, through instructor), then kept as what it is (status ok, ``Verdict.uncited``), and routing
never decides it automatically. Judged through the loopback server."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

import judge
from judge.review import item_view, queue
from judge.testing.loopback import LoopbackServer, Reply
from judge.types import Judgment
from tests.review_fixtures import MODEL, make_card, make_case, make_judgment, seed_store

RUBRIC = "agent-run-success@1"


def _answers(*evidence: Sequence[str], label: str = "pass") -> Callable[[dict[str, Any]], Reply]:
    """A judge whose n-th answer cites ``evidence[n]`` (the last one from then on)."""
    asked: list[int] = []

    def respond(request: dict[str, Any]) -> Reply:
        cited = evidence[min(len(asked), len(evidence) - 1)]
        asked.append(1)
        text = json.dumps({"verdict": label, "evidence": list(cited), "rationale": "Looks done."})
        return Reply(content=text)

    return respond


def _judge(
    tmp_path: Path, respond: Callable[[dict[str, Any]], Reply]
) -> tuple[Judgment, list[dict[str, Any]]]:
    with (
        LoopbackServer(respond) as server,
        judge.open_store(tmp_path / "c.db") as store,
    ):
        summary = judge.judge_cases(
            store,
            [make_case(1)],
            rubric=RUBRIC,
            models=[MODEL],
            options=judge.JudgeOptions(api_base=server.api_base),
        )
        (outcome,) = summary.outcomes
        return outcome.judgment, list(server.requests)


@pytest.fixture(autouse=True)
def _no_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)


def test_an_answer_citing_nothing_is_reasked_then_cited(tmp_path: Path) -> None:
    judgment, requests = _judge(tmp_path, _answers([], ["E2"]))
    assert len(requests) == 2
    reask = str(requests[1]["messages"])
    assert '\\"evidence\\" must cite' in reask or '"evidence" must cite' in reask
    assert judgment.status == "ok" and judgment.verdict is not None
    assert judgment.verdict.cited == ["E2"] and not judgment.verdict.uncited


def test_an_answer_that_never_cites_is_kept_uncited_and_goes_to_review(tmp_path: Path) -> None:
    judgment, requests = _judge(tmp_path, _answers(["E99"]))
    assert len(requests) == 2  # the first try and one re-ask: the default budget
    assert "E99 was not shown" in str(requests[1]["messages"])
    assert judgment.status == "ok" and judgment.verdict is not None
    assert judgment.verdict.uncited and judgment.verdict.invalid_citations == ["E99"]
    with judge.open_store(tmp_path / "c.db") as store:
        # A card that would accept P(pass) >= 0.0001: the score alone would decide it.
        run = judge.route(store, make_card(accept=0.0001, reject=None), audit_fraction=0.0)
        (decision,) = run.decisions
        assert (decision.decision, decision.reason) == ("review", "uncited")
        assert decision.detail == "1 of 1 judgments; made-up ids: E99"
        (item,) = queue(store)
        assert item.priority == 0.9
        view = item_view(store, item.id)
    assert view.verdicts[0].uncited and view.verdicts[0].invalid_citations == ["E99"]
    assert "cited no evidence" in (view.reason_text or "")


def test_an_abstention_need_not_cite(tmp_path: Path) -> None:
    judgment, requests = _judge(tmp_path, _answers([], label="cannot_determine"))
    assert len(requests) == 1
    assert judgment.status == "abstain" and judgment.verdict is not None
    assert not judgment.verdict.uncited


def test_stored_uncited_judgments_route_to_review(tmp_path: Path) -> None:
    # Judgments stored before citations were enforced: status ok, nothing cited. They are
    # read as they are (no migration, no new call) and routed to a person.
    cases = [make_case(i) for i in range(3)]
    stored = [
        make_judgment("case-0", 0.99, cited=()),
        make_judgment("case-1", 0.99),
        make_judgment("case-2", 0.01, cited=()),
    ]
    with judge.open_store(tmp_path / "old.db") as store:
        seed_store(store, cases, stored)
        run = judge.route(store, make_card(), audit_fraction=0.0)
    got = {d.case_id: (d.decision, d.reason) for d in run.decisions}
    assert got == {
        "case-0": ("review", "uncited"),
        "case-1": ("auto_accept", "in_accept_band"),
        "case-2": ("review", "uncited"),
    }
