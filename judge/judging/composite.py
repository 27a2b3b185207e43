"""The composite verdict: deterministic checks first, the model only for what they leave open.

A rubric that declares ``checks`` (``judge.rubrics.ChecksSpec``; ``coding-run-gates@2``) has
every case checked before any prompt is sent: the checks of ``judge.checks`` on its diff and
trace, and the rubric's run-level contracts (data: a tool invoked, evidence kept, a decision
point followed, a command never run). Then:

- a failing *hard* check decides the criterion it speaks to, when the rubric lets checks decide
  it, as ``fail`` with ``decided_by: check:<id>@<version>``: the model's answer on it is never
  used (for a rubric without criteria, the whole verdict);
- a case whose every criterion is decided (or, with ``judge_rest: false``, whose verdict is)
  needs no model call at all (:func:`decided_verdict`);
- every check that fired, hard or soft, is a numbered ``check`` evidence item the judge sees and
  cites (``judge.evidence.with_checks``), and is kept on the verdict (``Verdict.checks``).

A case no check fires on is prepared exactly as without checks: same evidence, prompt and
cache key.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from judge import checks, kinds
from judge.evidence import EvidenceSet, classify_turns, with_checks
from judge.rubrics import ContractSpec, Rubric
from judge.safety.redact import redact
from judge.types import (
    Case,
    CheckResult,
    CheckStatus,
    CriterionVerdict,
    TraceTurn,
    Verdict,
    check_ref,
)

#: The prefix of a run-level contract's check id (its version is its rubric's version).
CONTRACT_PREFIX = "contract-"
#: Trace turns a contract reads as the agent's actions (commands, tool and skill calls).
_ACTION_KINDS = frozenset({"tool_call", "test_run"})
_ACTION_ROLES = frozenset({"assistant", "tool", "agent"})


@dataclass(frozen=True)
class Gating:
    """What the checks found on one case, and what they decide."""

    results: tuple[CheckResult, ...]
    #: Criterion -> the failing hard check that decides it (rubric order). For a rubric
    #: without criteria, the criteria its checks speak to: any decides the whole verdict.
    decided: Mapping[str, CheckResult] = field(default_factory=dict)
    #: Check ref -> the id of its evidence item (:func:`shown`).
    items: Mapping[str, str] = field(default_factory=dict)

    @property
    def firings(self) -> list[CheckResult]:
        """The checks that failed, hard and soft: the evidence items of the case."""
        return [r for r in self.results if r.status == "fail"]

    @property
    def decides(self) -> dict[str, str]:
        """Check ref -> the criterion it decides (what its evidence item says)."""
        return {check_ref(c): criterion for criterion, c in self.decided.items()}


def _is_action(turn: TraceTurn) -> bool:
    return turn.kind in _ACTION_KINDS or (turn.kind is None and turn.role in _ACTION_ROLES)


def contract_result(case: Case, spec: ContractSpec, version: int) -> CheckResult:
    """One run-level contract on ``case``'s trace (and diff, for ``evidence_kept``)."""

    def result(status: CheckStatus, reason: str, turns: Sequence[str] = ()) -> CheckResult:
        return CheckResult(
            id=CONTRACT_PREFIX + spec.id,
            version=version,
            status=status,
            evidence=[t if t == "diff" else f"turn:{t}" for t in turns[:3]],
            reason=reason,
        )

    if not case.trace:
        return result("unknown", "the case has no trace")
    rx = re.compile(spec.pattern, re.IGNORECASE)
    turns = case.trace
    what = spec.description or spec.pattern
    hits = [t.id for t in turns if rx.search(t.content)]
    if spec.kind == "command_forbidden":
        bad = [t.id for t in turns if _is_action(t) and rx.search(t.content)]
        return result("fail", f"ran: {what}", bad) if bad else result("pass", f"never ran: {what}")
    if spec.kind == "tool_invoked":
        hits = [t.id for t in turns if _is_action(t) and rx.search(t.content)]
    elif spec.kind == "evidence_kept" and case.diff and rx.search(case.diff):
        hits = ["diff", *hits]
    elif spec.kind == "decision_followed":
        when = re.compile(str(spec.when), re.IGNORECASE)
        start = next((i for i, t in enumerate(turns) if when.search(t.content)), None)
        if start is None:
            return result("pass", "the decision point never arose")
        hits = [t.id for t in turns[start + 1 :] if rx.search(t.content)]
    return result("pass", what, hits) if hits else result("fail", f"missing: {what}")


def _has_test_run(case: Case) -> bool:
    return any(t.kind == "test_run" for t in classify_turns(case.trace))


def _redacted(result: CheckResult) -> CheckResult:
    """A check's reason may quote the run (a secret it printed): redacted like the evidence."""
    reason = redact(result.reason)[0]
    return result if reason == result.reason else result.model_copy(update={"reason": reason})


def gate(case: Case, rubric: Rubric) -> Gating | None:
    """Run the rubric's checks on ``case``; None for a rubric that declares none."""
    spec = rubric.checks
    if spec is None:
        return None
    results = [
        *checks.run_checks(case, protected=spec.protected),
        *(contract_result(case, c, rubric.checks_version) for c in spec.contracts),
    ]
    results = [_redacted(r) for r in results]
    decided: dict[str, CheckResult] = {}
    test_run: bool | None = None
    for rule in spec.decides:
        failing = [
            r for r in results if r.hard and r.status == "fail" and r.criterion == rule.criterion
        ]
        if not failing:
            continue
        if rule.needs_test_run:
            test_run = _has_test_run(case) if test_run is None else test_run
            if not test_run:
                continue
        decided[rule.criterion] = failing[0]
    return Gating(tuple(results), decided)


def shown(gating: Gating, evidence: EvidenceSet) -> tuple[EvidenceSet, Gating]:
    """The evidence with one numbered item per firing (``judge.evidence.with_checks``), and
    the gating that knows those items' ids (the decided criteria cite them)."""
    evidence = with_checks(evidence, gating.firings, gating.decides)
    items = {i.source: i.id for i in evidence.items if i.kind == "check"}
    return evidence, replace(gating, items=items)


def _cite(gating: Gating, check: CheckResult) -> list[str]:
    item = gating.items.get(check_ref(check))
    return [item] if item is not None else []


def _decided_criteria(rubric: Rubric, gating: Gating) -> list[CriterionVerdict]:
    out = []
    for spec in rubric.spec.criteria:
        check = gating.decided.get(spec.id)
        if check is not None:
            ref = check_ref(check)
            out.append(
                CriterionVerdict(
                    id=spec.id,
                    label="fail",
                    hard_gate=spec.hard_gate,
                    cited=_cite(gating, check),
                    rationale=f"{ref}: {check.reason}",
                    decided_by=ref,
                )
            )
    return out


def _verdict_check(rubric: Rubric, gating: Gating) -> CheckResult | None:
    """The check that decides the whole verdict: a failing hard check on a decided hard gate
    (the first in rubric order), or for a rubric without criteria any decided criterion."""
    if not kinds.kind(rubric.kind).criteria:
        return next(iter(gating.decided.values()), None)
    gates = [c.id for c in rubric.spec.criteria if c.hard_gate and c.id in gating.decided]
    return gating.decided[gates[0]] if gates else None


def decided_verdict(rubric: Rubric, gating: Gating) -> Verdict | None:
    """The verdict of a case the checks decide with no model call; None when a call is needed
    (some criterion is left to the model and the rubric asks for it)."""
    decider = _verdict_check(rubric, gating)
    with_criteria = kinds.kind(rubric.kind).criteria
    if with_criteria:
        every = all(c.id in gating.decided for c in rubric.spec.criteria)
        judge_rest = rubric.checks is not None and rubric.checks.judge_rest
        if not every and (judge_rest or decider is None):
            return None
    elif decider is None:
        return None
    criteria = _decided_criteria(rubric, gating)
    failed = [c.id for c in criteria if c.hard_gate]
    ref = check_ref(decider) if decider is not None else None
    return Verdict(
        label="fail" if decider is not None else "pass",
        cited=_cite(gating, decider) if decider is not None else [],
        rationale=f"{ref}: {decider.reason}" if decider is not None else "",
        criteria=criteria,
        failed_hard_gates=failed,
        decided_by=ref,
        checks=gating.firings,
    )


def composite(rubric: Rubric, verdict: Verdict, gating: Gating) -> Verdict:
    """The model's verdict with the checks' decisions laid over it: a decided criterion's
    answer replaced by the check's ``fail``; a decided hard gate fails the run; the firings
    kept on the verdict."""
    if not gating.firings:
        return verdict
    decided = {c.id: c for c in _decided_criteria(rubric, gating)}
    criteria = [decided.pop(c.id, c) for c in verdict.criteria]
    # A criterion the model left unanswered is still decided, in rubric order.
    order = {c.id: n for n, c in enumerate(rubric.spec.criteria)}
    criteria = sorted([*criteria, *decided.values()], key=lambda c: order.get(c.id, len(order)))
    failed = [c.id for c in criteria if c.hard_gate and c.label == "fail"]
    decider = _verdict_check(rubric, gating)
    update: dict[str, object] = {"criteria": criteria, "failed_hard_gates": failed}
    update["checks"] = gating.firings
    if decider is not None:
        probs = verdict.label_probs
        update |= {
            "label": "fail",
            "decided_by": check_ref(decider),
            "confidence": probs.get("fail") if probs is not None else None,
        }
    return verdict.model_copy(update=update)
