"""Judge one case for a scorer and say what to return: C / I when the card decides, a verdict
for people otherwise. Independent of inspect_ai (the scorer turns :class:`ScoreParts` into
an Inspect ``Score``), so it is tested without it.

The chain is the one ``POST /v1/judge`` runs (judge/api/routes/judging.py): load the rubric,
check the card against the judge before paying anything, ``judge.judge_cases`` with a store
(judgments already paid for are served from it: scoring a log again calls no model), then
``judge.route`` with the card, which stores the decision and queues the case for review
(and a seeded 5% of automatic decisions for audit) in the store's review queue.

What is returned:

* the card auto-accepts -> ``C``; auto-rejects -> ``I`` (the card's certified error rates
  hold for these);
* anything a person must decide -> no value (``unscored``), with ``reason``:
  ``grader_failed`` when the judge gave no verdict (the model's answer could not be parsed,
  or the provider failed after every retry: Inspect's own reason for a grader that failed),
  else ``needs_review`` (the judge abstained, its score is outside the card's certified bands,
  the evidence was flagged, or there is no card: an uncalibrated verdict decides nothing).
  ``metadata.route`` says which.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import judge
import judge.routing
import judge.runsets
import judge.store
from calibration.card import Card
from judge.defaults import DEFAULT_MODEL, DEFAULT_PROTOCOLS
from judge.digests import is_digest
from judge.errors import CardError, InputError
from judge.types import Case, Judgment, RoutingDecision
from judge.urls import mask_url

#: Inspect's standard reason for a grader that failed (``ScoreReason``).
GRADER_FAILED = "grader_failed"
#: The reason of every other verdict that goes to people.
NEEDS_REVIEW = "needs_review"
#: A key every Score this scorer returns carries in its metadata (to tell its scores apart).
MARK = "judge_judgment_id"


@dataclass(frozen=True)
class ScoreParts:
    """What an Inspect ``Score`` is made of: ``value`` C / I, or None (unscored, ``reason``)."""

    value: str | None
    answer: str
    explanation: str
    metadata: dict[str, Any]
    reason: str | None = None


@dataclass
class CalibratedJudge:
    """A rubric, a judge model, an optional card and a store: what ``judge/calibrated``'s
    arguments give."""

    rubric: judge.Rubric
    model: str
    db: str
    card: Card | None = None
    api_base: str | None = None
    source: str = "inspect scorer"

    @classmethod
    def from_args(
        cls,
        *,
        rubric: str | None = None,
        model: str | None = None,
        card: str | None = None,
        db: str | None = None,
        api_base: str | None = None,
    ) -> CalibratedJudge:
        """Resolve the arguments: the store (``db``, else ``$JUDGE_DB``, else ``judge.db``);
        the card (a YAML file, or the digest of a card stored in ``db``); the rubric and model
        (given, else the card's, else the defaults ``judge run`` uses). A card that cannot
        route this judge's verdicts is refused here, before anything is judged."""
        location = db or judge.store.default_location()
        loaded = _card(card, location) if card else None
        if rubric is None:
            rubric = (
                f"{loaded.judge.rubric.id}@{loaded.judge.rubric.version}"
                if loaded is not None
                else DEFAULT_PROTOCOLS["agent_run"].rubric
            )
        if model is None:
            model = loaded.judge.model if loaded is not None else DEFAULT_MODEL
        chosen = judge.load_rubric(rubric)
        if chosen.kind == "pairwise":
            raise InputError(
                f"rubric {chosen.ref} is pairwise; an Inspect sample is one agent run",
                field="rubric",
            )
        if loaded is not None:
            judge.routing.check_card_before_judging(loaded, [model], chosen.digest)
        return cls(rubric=chosen, model=model, db=location, card=loaded, api_base=api_base)

    def options(self) -> judge.JudgeOptions:
        """The protocol: ``judge run``'s defaults (one call in flight: Inspect runs samples
        concurrently already)."""
        return judge.JudgeOptions(api_base=self.api_base, concurrency=1)

    def score(self, case: Case) -> ScoreParts:
        """Judge ``case`` (from the store when already judged) and route it with the card."""
        with judge.open_store(self.db) as store:
            summary = judge.judge_cases(
                store,
                [case],
                rubric=self.rubric,
                models=[self.model],
                options=self.options(),
                source=self.source,
            )
            everything = [o.judgment for o in summary.outcomes]
            decision: RoutingDecision | None = None
            if self.card is not None and everything:
                routed = judge.route(store, self.card, judgments=everything)
                # A case whose content was judged before (another epoch with the same run)
                # is served that judgment, which names the first case: its decision holds.
                judged = [case.id] + [j.case_id for j in everything]
                decision = min(
                    (d for d in routed.decisions if d.case_id in judged),
                    key=lambda d: judged.index(d.case_id),
                    default=None,
                )
        verdicts = [j for j in everything if j.provenance.masked_from is None]
        if not verdicts:
            reason = "; ".join(str(err) for _, err in summary.errors) or "no judgment was made"
            return ScoreParts(
                value=None,
                answer="",
                explanation=f"the judge could not judge this sample: {reason}",
                metadata={"judge_model": self.model, "rubric": self.rubric.ref, "store": self.db},
                reason=GRADER_FAILED,
            )
        return self.parts(verdicts, decision, cached=summary.cached, called=summary.called)

    def parts(
        self,
        verdicts: Sequence[Judgment],
        decision: RoutingDecision | None,
        *,
        cached: int = 0,
        called: int = 0,
    ) -> ScoreParts:
        """The Score of these judgments (one per prompt variant or sample) and decision."""
        main = next((j for j in verdicts if j.verdict is not None), verdicts[0])
        label = main.verdict.label if main.verdict is not None else main.status
        route = _route(decision, self.card is not None)
        value = None
        if decision is not None and decision.decision == "auto_accept":
            value = "C"
        elif decision is not None and decision.decision == "auto_reject":
            value = "I"
        failed = all(j.status in ("parse_error", "infra_error") for j in verdicts)
        metadata: dict[str, Any] = {
            # P(pass) after the card's calibrator when routed, else the judges' pooled score
            # (the mean P(pass) over pass and fail, else the vote share), as run sets use it.
            "p_pass": decision.score
            if decision is not None and decision.score is not None
            else judge.runsets.pooled_score(verdicts),
            "label": label,
            "status": main.status,
            "route": route,
            "band": _band(self.card, decision),
            "card_digest": judge.routing.card_digest(self.card) if self.card else None,
            MARK: main.id,
            "judgment_ids": [j.id for j in verdicts],
            "judge_model": self.model,
            "rubric": self.rubric.ref,
            "store": self.db,
            "cached": cached,
            "called": called,
        }
        return ScoreParts(
            value=value,
            answer=label,
            explanation=_explanation(main),
            metadata=metadata,
            reason=None if value is not None else (GRADER_FAILED if failed else NEEDS_REVIEW),
        )


def _card(card: str, location: str) -> Card:
    """A card from a YAML file, or by digest from the store."""
    if Path(card).is_file():
        return judge.load_card(card)
    if is_digest(card) or len(card) == 64:
        with judge.open_store(location) as store:
            stored = judge.routing.get_card(store, card)
        if stored is not None:
            return stored
        raise CardError(f"no card {card!r} is stored in {mask_url(location)} (nor is it a file)")
    raise CardError(f"{card}: no such card file")


def _route(decision: RoutingDecision | None, has_card: bool) -> dict[str, Any]:
    if decision is None:
        if has_card:
            return {"decision": "review", "reason": "unrouted", "detail": "the card routed none"}
        return {
            "decision": "review",
            "reason": "no_card",
            "detail": "no card: an uncalibrated verdict decides nothing; it goes to people",
        }
    return {
        "decision": decision.decision,
        "reason": decision.reason,
        "detail": decision.detail,
        "id": decision.id,
        "audit": decision.audit,
    }


def _band(card: Card | None, decision: RoutingDecision | None) -> dict[str, Any] | None:
    """The card's thresholds (the review band lies between them) and the band that decided."""
    if card is None:
        return None
    policy = card.policy
    return {
        "auto_accept_threshold": policy.auto_accept_threshold,
        "auto_reject_threshold": policy.auto_reject_threshold,
        "human_review_band": policy.human_review_band,
        "decided_by": decision.band if decision is not None else None,
        "slice": decision.slice if decision is not None else None,
    }


def _explanation(judgment: Judgment) -> str:
    """The judge's rationale and the evidence it cited (or why there is no verdict)."""
    verdict = judgment.verdict
    if verdict is None:
        return f"no verdict ({judgment.status}): {judgment.error or 'unknown error'}"
    text = verdict.rationale.strip() or "(no rationale)"
    if verdict.cited:
        text += f"\n\nCited evidence: {', '.join(verdict.cited)}"
    for criterion in verdict.criteria:
        cited = f" [{', '.join(criterion.cited)}]" if criterion.cited else ""
        text += f"\n- {criterion.id}: {criterion.label}{cited} {criterion.rationale}".rstrip()
    return text
