"""Invariances of pairwise cases: the answer a verdict must not depend on (a reference shown,
the order the two answers are shown in)."""

from __future__ import annotations

from judge.digests import seeded_unit
from judge.probes.probe import Probe, ProbeContext
from judge.types import Case


def _reference_shown(case: Case, context: ProbeContext, seed: int) -> Case | str:
    """A reference answer shown with the instruction: the candidate gold says is worse (or a
    seeded choice without gold), labelled as another model's answer that may be wrong. A judge
    anchored on references follows it; a good judge keeps its verdict."""
    if not case.candidates:
        return "the case has no candidates"
    if context.gold in ("A", "B"):
        shown = "B" if context.gold == "A" else "A"
    else:
        shown = "A" if seeded_unit(seed, case.id) < 0.5 else "B"
    reference = case.candidates[shown]
    task = (
        f"{case.task}\n\nA reference answer written by another model (it may contain mistakes):\n"
        f"{reference}"
    )
    return case.model_copy(update={"task": task})


def _order_swapped(case: Case, context: ProbeContext, seed: int) -> Case | str:
    """The two candidates swapped (A shown as B and B as A)."""
    if not case.candidates:
        return "the case has no candidates"
    if case.candidates["A"] == case.candidates["B"]:
        return "the two candidates are identical"
    return case.model_copy(
        update={"candidates": {"A": case.candidates["B"], "B": case.candidates["A"]}}
    )


#: The pairwise probes, in the order reports list them.
PAIRWISE: tuple[Probe, ...] = (
    Probe(
        "reference-shown",
        1,
        "invariance",
        "pairwise",
        "a reference answer shown beside the instruction (anchoring)",
        _reference_shown,
        seed=301,
    ),
    Probe(
        "order-swap",
        1,
        "invariance",
        "pairwise",
        "the two answers swapped (position bias)",
        _order_swapped,
        seed=302,
        label_map={"A": "B", "B": "A", "tie": "tie"},
        flips_score=True,
    ),
)
