"""The second net against prompt injection: judge again without the suspect evidence.

Evidence the flagger does not flag but that reads a little like instructions to the judge
(:func:`judge.safety.injection.suspect_items`) is recorded in each judgment's provenance. For such a
case a *masked copy* is judged with the same protocol: the suspect turns (or diff) replaced by a
marker, the case id suffixed with :data:`MASKED_SUFFIX`, its meta naming the case it masks. The
masked judgments are checks, never verdicts: routing compares them with the case's own
judgments, and a verdict that changes when the suspect items are withheld goes to a person
(``judge.routing.gates``: "masked_changed"); calibration, scores and run-set rates leave them
out. An injection the detector missed can move a verdict; it cannot move it unseen.

A masked copy's cache key names the case it checks (two runs that differ only in their suspect
turn mask down to one prompt, and each needs its own check). A check that failed, or a step whose
suspects were recorded but that has no check, goes to a person too ("masked_missing"). Suspects
are those recorded when the case was judged: a judgment served from the store keeps its own, so a
store judged before this net (or before the detector was retrained) gets checks only for what
it judges anew.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from judge.types import Case, Judgment, TraceTurn

#: Appended to the id of a masked copy of a case.
MASKED_SUFFIX = "#masked"
#: What a withheld item shows the judge.
MASK = "[withheld: this item reads like instructions to the judge; judge the run without it]"
_META = "masked_from"
_META_ITEMS = "masked_evidence"


def masked_origin(case: Case) -> tuple[str | None, list[str]]:
    """(the id of the case ``case`` masks, the evidence ids it withheld), or (None, [])."""
    origin = case.meta.get(_META)
    if not isinstance(origin, str):
        return None, []
    return origin, [str(i) for i in case.meta.get(_META_ITEMS) or []]


def mask_case(case: Case, judgments: Sequence[Judgment]) -> Case | None:
    """The masked copy of ``case`` for the suspect items its judgments recorded, or None when
    they recorded none (or only items a copy cannot withhold)."""
    suspects: dict[str, str] = {}  # evidence id -> its source (a turn id, or "diff")
    for j in judgments:
        prov = j.provenance
        if prov.masked_from is not None or not prov.suspect_evidence:
            continue
        suspects.update(prov.suspect_evidence)
    if not suspects:
        return None
    turn_ids = {t.id for t in case.trace}
    withheld = {source for source in suspects.values() if source in turn_ids}
    trace = [
        TraceTurn(**{**t.model_dump(), "content": MASK}) if t.id in withheld else t
        for t in case.trace
    ]
    diff = MASK if "diff" in suspects.values() and case.diff else case.diff
    if not withheld and diff == case.diff:
        return None
    return check_copy(case, MASKED_SUFFIX, sorted(suspects), trace=trace, diff=diff)


def check_copy(case: Case, suffix: str, withheld: Sequence[str], **update: Any) -> Case:
    """A copy of ``case`` to judge as a check on its verdict, never as a verdict of its own:
    its id suffixed, its meta naming the case it checks and what it ``withheld`` (read back by
    :func:`masked_origin` into the judgment's ``masked_from`` and ``masked_evidence``), and the
    fields in ``update`` replaced. The masked copy here and the facts-only copy
    (``judge.judging.facts``) are both made so."""
    meta = {**case.meta, _META: case.id, _META_ITEMS: list(withheld)}
    return case.model_copy(update={**update, "id": case.id + suffix, "meta": meta})
