"""Finished review items exported as a gold set with lineage (``calibration.gold``): the
judgments, the routing decision, the card and the review item each label came from.

A finished first-bad-decision item (kind ``fbd``) is a failed run: its record's gold is
``fail``, with the step people located as ``critical_step`` (0-based) and that step's role as
``critical_agent`` ("no single step": ``fail`` with no step; "cannot determine": not exported).
Items of one case must agree (the same pass/fail label, the same critical step), or the case is
left out with the reason."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from calibration.gold import GoldRecord, Lineage, write_gold
from judge import kinds
from judge.errors import ConflictError
from judge.review.planned import plan_item_ids
from judge.review.queue import item_judgment_ids, items, labels
from judge.store import Store
from judge.types import Case, ReviewItem


@dataclass
class GoldExport:
    """What an export wrote and what it left out (with why)."""

    path: Path
    digest: str
    n: int
    skipped: list[tuple[str, str]] = field(default_factory=list)


def gold_records(
    store: Store, *, license: str = "unspecified", plan: str | None = None
) -> tuple[list[GoldRecord], list[tuple[str, str]]]:
    """Finished review items as GoldRecords (one per case), and (item id, reason) skipped.

    ``plan``: only the items a label plan queued (``judge review plan``), so that the export is
    exactly the planned sample (the labels ``judge score --labels`` accepts for PPI)."""
    done = items(store, status="done", limit=1_000_000)
    if plan is not None:
        wanted = plan_item_ids(store, plan)
        done = [i for i in done if i.id in wanted]
    by_case: dict[str, list[ReviewItem]] = defaultdict(list)
    skipped: list[tuple[str, str]] = []
    for item in done:
        if gold_label(item) is None:
            skipped.append((item.id, f"final label {item.final_label} is not a gold label"))
            continue
        by_case[item.case_id].append(item)
    records = []
    for case_id, group in sorted(by_case.items()):
        finals = {gold_label(i) for i in group}
        steps = {i.final_step for i in group if i.kind == "fbd"}
        if len(finals) > 1 or len(steps) > 1:
            what = f"final labels {finals}" if len(finals) > 1 else f"critical steps {steps}"
            for i in group:
                skipped.append((i.id, f"case {case_id} has conflicting {what}"))
            continue
        case = store.get_case(case_id)
        if case is None:
            skipped.extend((i.id, f"case {case_id} is not stored") for i in group)
            continue
        records.append(_gold_record(store, case, group, license))
    return records, skipped


def gold_label(item: ReviewItem) -> str | None:
    """The gold label a finished item gives its case: its final label when that is a gold
    label of its kind; ``fail`` for a first-bad-decision item with a step or "no single step"
    (the run failed); None otherwise (cannot determine)."""
    if kinds.kind(item.kind).steps:
        return "fail" if item.final_label in ("located", "no_single_step") else None
    return item.final_label if item.final_label in kinds.kind(item.kind).gold_labels else None


def _critical(group: Sequence[ReviewItem]) -> tuple[int | None, str]:
    """The critical step people located in a case's fbd items (they agree: see
    :func:`gold_records`), and what that says of each judge's step, for the gold source."""
    fbd = [i for i in group if i.kind == "fbd"]
    if not fbd:
        return None, ""
    step = fbd[0].final_step
    if step is None:
        return None, "; first bad decision: no single step"
    said = []
    for i in fbd:
        if i.proposed_step is None:
            verdict = "named no step"
        elif i.proposed_step == step:
            verdict = "step confirmed"
        else:
            verdict = f"step moved from {i.proposed_step}"
        said.append(f"{i.model or 'judge'}: {verdict}")
    return step, f"; first bad decision: step {step} ({'; '.join(said)})"


def _gold_record(store: Store, case: Case, group: Sequence[ReviewItem], license: str) -> GoldRecord:
    given = [x for i in group for x in labels(store, item_id=i.id)]
    adjudicators = sorted({x.reviewer for x in given if x.role == "adjudicator"})
    reviewers = sorted({x.reviewer for x in given if x.role == "reviewer"})
    how = f"human review: {len(reviewers)} reviewer(s)"
    if adjudicators:
        how += f", adjudicated by {', '.join(adjudicators)}"
    step, located = _critical(group)
    refs: list[str] = []
    for i in group:
        refs += [f"judgment:{j}" for j in item_judgment_ids(store, i)]
        # Items a label plan queued come from no routing decision and no card.
        refs += [f"routing:{i.routing_id}"] if i.routing_id else []
        refs += [f"card:{i.card_digest}"] if i.card_digest else []
        refs.append(f"review:{i.id}")
    record = GoldRecord.from_case(
        case,
        gold=str(gold_label(group[0])),
        gold_source=how + located,
        source=str(case.meta.get("source") or "judge review queue"),
        license=license,
        lineage=Lineage(
            source="judge review queue",
            labeller=", ".join([*reviewers, *adjudicators]),
            created_at=max(x.created_at for x in given) if given else None,
            derived_from=list(dict.fromkeys(refs)),
        ),
    )
    if step is None:
        return record
    # Validated again: the step must be a step of this failed run.
    return GoldRecord.model_validate(
        {
            **record.model_dump(),
            "critical_step": step,
            "critical_agent": case.trace[step].role if step < len(case.trace) else None,
        }
    )


def export_gold(
    store: Store, path: str | Path, *, license: str = "unspecified", plan: str | None = None
) -> GoldExport:
    """Write finished review items (optionally only a label plan's) as a gold JSONL with
    lineage (``calibration.gold``)."""
    records, skipped = gold_records(store, license=license, plan=plan)
    if not records:
        raise ConflictError(
            "no finished review items with a pass/fail (or A/B/tie, or a first bad decision) "
            "label to export yet" + (f" from label plan {plan}" if plan else "")
        )
    digest = write_gold(records, path)
    return GoldExport(path=Path(path), digest=digest, n=len(records), skipped=skipped)
