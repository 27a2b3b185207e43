"""Check every verdict a card would decide automatically on the run's facts-only copy.

``judge route --facts-check`` (``judge.route(..., facts=JudgeOptions(...))``) adds one step
before deciding: the card is applied in memory to the judgments, and for every (case, judge)
it would auto-accept, auto-reject or auto-decide, the case's facts-only copy
(:func:`judge.judging.facts.facts_case`: the untrusted text reduced to facts written by code)
is judged with the card's judge and rubric, step for step (the same answer orders, samples and
prompt variants, the same temperature, answer budget and evidence budget as the judgments it
checks). Then the card is applied for good: a verdict its facts-only copy does not give goes
to a person (``facts_changed``), and so does one whose check failed (``facts_missing``); the
others are decided as before. No detector has to recognise the attack.

Why here, and not when judging (``judge run``): only the card knows which verdicts it would
decide automatically, so the cost is paid on that band alone (items already bound for review,
flagged or outside the bands, get no check), and the check is made with exactly the judge, the
rubric and the protocol the card vouches for. A check is a stored judgment like any other:
routing again (with or without ``--facts-check``) reuses it at no cost, and a case whose check
is stored is compared with it by every later routing. Routing without the step decides as it
did before it existed.

A verdict that needed a check and got none (its case is not stored, or its copy could not be
prepared) is sent to a person too (``facts_missing``): :func:`require_checks`.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime

from calibration.card import Card
from judge.errors import CardError
from judge.judging import JudgeOptions, Step, run_steps
from judge.judging.facts import facts_case, facts_origin
from judge.providers import check_models
from judge.routing import AUTO_DECISIONS, route_judgments
from judge.rubrics import load_rubric
from judge.store import Store
from judge.types import Case, Judgment, RoutingDecision

#: The batch source recorded for the checks' judgments.
SOURCE = "facts-only checks of the automatic band"


@dataclass
class FactsRun:
    """What the step did: the checks judged, what they cost, what could not be checked."""

    #: Automatic decisions the card would make before the checks.
    automatic: int = 0
    #: Judgments asked of the facts-only copies (one per checked judgment).
    checks: int = 0
    #: Of those, calls made to the judge (the others were already stored).
    called: int = 0
    judgments: list[Judgment] = field(default_factory=list)
    #: Cases of automatic decisions that needed a check and have none.
    unchecked: set[str] = field(default_factory=set)


def _checked(
    card: Card, decision: RoutingDecision, by_id: Mapping[str, Judgment]
) -> list[Judgment]:
    """The judgments a decision rests on, each of which gets a check: a cascade's deciding
    stage's, every member's for a panel, the judge's own otherwise."""
    consulted = [by_id[i] for i in decision.judgment_ids if i in by_id]
    if card.policy.cascade:
        consulted = [x for x in consulted if x.provenance.model == decision.model]
    return [x for x in consulted if x.provenance.masked_from is None]


def _options(base: JudgeOptions, x: Judgment) -> JudgeOptions:
    """``base`` (where and how to call) with the protocol of the judgment it checks."""
    params = x.provenance.params
    temperature = params.get("temperature")
    max_tokens = params.get("max_tokens")
    return replace(
        base,
        temperature=float(temperature) if temperature is not None else base.temperature,
        max_tokens=int(max_tokens) if max_tokens is not None else base.max_tokens,
        token_budget=x.provenance.token_budget or base.token_budget,
    )


def _batches(
    steps: Sequence[tuple[Step, Judgment]], options: JudgeOptions
) -> dict[tuple[str, str, float | None, int, int | None], list[Step]]:
    """The steps grouped by what one batch shares: rubric, digest and call protocol."""
    out: dict[tuple[str, str, float | None, int, int | None], list[Step]] = defaultdict(list)
    for step, x in steps:
        chosen = _options(options, x)
        prov = x.provenance
        key = (
            f"{prov.rubric_id}@{prov.rubric_version}",
            prov.rubric_digest,
            chosen.temperature,
            chosen.max_tokens,
            chosen.token_budget,
        )
        out[key].append(step)
    return out


def check_auto_band(
    store: Store,
    card: Card,
    judgments: Sequence[Judgment],
    *,
    cases: Mapping[str, Case],
    options: JudgeOptions,
    now: datetime | None = None,
) -> FactsRun:
    """Judge the facts-only copies of every case ``card`` would decide automatically (see the
    module docstring); store the checks and return them. CardError when the card's rubric
    changed since the judgments were made (the checks must use the same one)."""
    run = FactsRun()
    by_id = {x.id: x for x in judgments}
    planned: list[tuple[Step, Judgment]] = []
    for decision in route_judgments(card, judgments, cases=cases, now=now):
        if decision.decision not in AUTO_DECISIONS:
            continue
        run.automatic += 1
        case = cases.get(decision.case_id)
        if case is None:
            run.unchecked.add(decision.case_id)
            continue
        copy = facts_case(case)
        if copy is None:
            continue  # nothing untrusted to reduce: the verdict stands on what is judged
        for x in _checked(card, decision, by_id):
            prov = x.provenance
            step = Step(
                copy, prov.model, order=prov.order, sample=prov.sample, variant=prov.variant
            )
            planned.append((step, x))
    if not planned:
        return run
    models = sorted({step.model for step, _ in planned})
    check_models(models, api_base=options.api_base, router=options.router)
    for (ref, digest, *_), steps in _batches(planned, options).items():
        rubric = load_rubric(ref)
        if rubric.digest != digest:
            raise CardError(
                f"rubric {ref} changed since its judgments were made (digest {rubric.digest[:19]}, "
                f"judged with {digest[:19]}): the facts-only checks must use the card's rubric; "
                "restore it, or judge and calibrate again"
            )
        sample = next(x for s, x in planned if s is steps[0])
        summary = run_steps(
            store,
            steps,
            rubric=rubric,
            models=sorted({s.model for s in steps}),
            options=_options(options, sample),
            source=SOURCE,
        )
        run.checks += len(steps)
        run.called += summary.called
        run.judgments.extend(o.judgment for o in summary.outcomes)
        run.unchecked.update(facts_origin(step.case) or step.case.id for step, _ in summary.errors)
    return run


def require_checks(
    decisions: Sequence[RoutingDecision], unchecked: set[str]
) -> list[RoutingDecision]:
    """``decisions`` with every automatic one that needed a facts-only check and has none sent
    to review (``facts_missing``)."""
    out = []
    for d in decisions:
        if d.decision in AUTO_DECISIONS and d.case_id in unchecked:
            d = d.model_copy(
                update={
                    "decision": "review",
                    "label": None,
                    "band": None,
                    "reason": "facts_missing",
                    "detail": f"no facts-only check could be judged ({d.detail})",
                }
            )
        out.append(d)
    return out
