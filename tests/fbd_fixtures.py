"""Failed multi-agent runs diagnosed through the real runner against the loopback server, for the
first-bad-decision review tests (the queue, the page, gold export, agreement).

Each run's task names it; the scripted judge answers per run (``ANSWERS``): run-a names step 2,
run-b step 4, run-c abstains, run-d answers with no JSON (a parse error).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import judge
from judge.diagnosis import DiagnosisResult, diagnose
from judge.testing.loopback import LoopbackServer, Reply
from judge.types import Case, TraceTurn

MODEL = "openai/diagnoser"
#: Who takes each step of a run (its critical agent when people locate the step there).
ROLES = ("user", "Orchestrator", "WebSurfer", "Orchestrator", "Coder", "Orchestrator", "Coder")
N_STEPS = len(ROLES) + 1
#: The judge's answer per run: the evidence id of its critical step, "abstain" or "broken".
ANSWERS = {"run-a": "E3", "run-b": "E5", "run-c": "abstain", "run-d": "broken"}


def fbd_run(case_id: str) -> Case:
    """A failed run of ``N_STEPS`` steps (the last one the final answer) whose task names it."""
    turns = [
        TraceTurn(
            id=f"{case_id}-t{i}",
            role=role,
            content=f"{role} at step {i} of {case_id}\nsecond line of step {i}",
            kind="message",
        )
        for i, role in enumerate(ROLES)
    ]
    turns.append(
        TraceTurn(
            id=f"{case_id}-final",
            role="Orchestrator",
            content="The cheapest flight is booked.",
            kind="final_answer",
        )
    )
    return Case(
        id=case_id, kind="agent_run", task=f"Book the cheapest flight ({case_id}).", trace=turns
    )


def fbd_report(step: str | None, verdict: str = "located") -> str:
    """A first-bad-decision report naming ``step`` (an evidence id), as the judge answers."""
    return json.dumps(
        {
            "verdict": verdict,
            "critical_step": step,
            "evidence": [step] if step else ["E1"],
            "decision": "searched one airline only",
            "information_available": [{"id": "E1", "claim": "the user asked for the cheapest"}],
            "violated_invariant": "do-not-invent-facts",
            "symptom": {"id": f"E{N_STEPS}", "description": "a dearer flight was booked"},
            "causal_chain": [
                {"id": step or "E2", "did": "searched one airline only"},
                {"id": f"E{N_STEPS}", "did": "booked its flight"},
            ],
            "counterfactual": "compare every airline before booking",
            "recoverable_at_step": "E6",
            "owner": "model",
            "confidence": "medium",
            "minimal_fix": "ask the searcher for all airlines",
            "checks": [],
            "rationale": f"{step} searched one airline only.",
        }
    )


def fbd_answer(request: dict[str, Any]) -> Reply:
    """The scripted judge's answer to a diagnosing request (``ANSWERS``)."""
    prompt = str(request["messages"][1]["content"])
    case_id = next(c for c in ANSWERS if f"({c})" in prompt)
    said = ANSWERS[case_id]
    if said == "broken":
        return Reply(content="no JSON here")
    if said == "abstain":
        return Reply(content=fbd_report(None, verdict="cannot_determine"))
    return Reply(content=fbd_report(said))


def diagnose_runs(db: Path, case_ids: tuple[str, ...] = tuple(ANSWERS)) -> DiagnosisResult:
    """Diagnose the runs ``case_ids`` into the store ``db`` (a second call is served from it)."""
    with LoopbackServer(fbd_answer) as server, judge.open_store(db) as store:
        options = judge.JudgeOptions(api_base=server.api_base, max_attempts=1)
        return diagnose(store, [fbd_run(c) for c in case_ids], models=[MODEL], options=options)
