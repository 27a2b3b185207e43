"""Label plans in the review queue: runs chosen at random (``calibration.ppi.plan_labels``)
for people to label, so that the labels are a probability sample of the run set, and the plan
kept in the store so that a report can check later that its labels are that sample.

Unlike routed items, plan items come from no card and no routing decision. They are always
blind: a reviewer who sees the judge's verdict tends to agree with it, and labels that lean
towards the judge would make prediction-powered estimates lean with it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from calibration.ppi import LabelPlan
from judge import kinds
from judge.digests import canonical_json, now_iso, sha256_hex, text_digest, utcnow
from judge.errors import NotFoundError
from judge.store import Store
from judge.types import Case

#: The reason review items drawn by a label plan carry.
PLAN_REASON = "label_plan"


@dataclass(frozen=True)
class StoredPlan:
    """A label plan as the store keeps it: the draw, the runs it was drawn from and how."""

    id: str
    plan: LabelPlan
    #: The run-set file it was drawn for, and the digest of its population (sorted run ids).
    runset: str
    runs_digest: str
    created_at: str
    #: Where the active design's scores came from (judge models, rubric), and notes.
    scores: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """JSON form (what ``judge review plan --out`` writes)."""
        return {
            "id": self.id,
            "runset": self.runset,
            "runs_digest": self.runs_digest,
            "created_at": self.created_at,
            "scores": self.scores,
            "plan": self.plan.to_dict(),
        }


def runs_digest(run_ids: Sequence[str]) -> str:
    """The identity of a plan's population: the digest of its sorted run ids."""
    return text_digest("\n".join(sorted(run_ids)))


def plan_id_for(plan: LabelPlan, digest: str) -> str:
    """A plan's id: the same draw from the same runs always gets the same id."""
    return "plan-" + sha256_hex(canonical_json({"runs": digest, **plan.to_dict()}))[:16]


def plan_item_id(plan_id: str, case_id: str) -> str:
    """The review item id of one run of a label plan (the plan's short id, then the case id)."""
    return f"q-{plan_id.removeprefix('plan-')[:12]}-{case_id}"


def save_plan(
    store: Store, plan: LabelPlan, *, runset: str, scores: Mapping[str, Any] | None = None
) -> tuple[StoredPlan, bool]:
    """Keep ``plan`` in the store; the stored plan and whether it is new (the same draw stored
    before keeps its first record)."""
    digest = runs_digest(plan.run_ids)
    plan_id = plan_id_for(plan, digest)
    stored = StoredPlan(
        id=plan_id,
        plan=plan,
        runset=runset,
        runs_digest=digest,
        created_at=now_iso(),
        scores=dict(scores or {}),
    )
    new = store.save_label_plan(
        {
            "id": plan_id,
            "runs_digest": digest,
            "runset": runset,
            "design": plan.design,
            "seed": plan.seed,
            "budget": plan.budget,
            "n_runs": len(plan.run_ids),
            "n_chosen": len(plan.chosen),
            "created_at": stored.created_at,
            "json": json.dumps(stored.to_dict(), ensure_ascii=False),
        }
    )
    return (stored if new else load_plan(store, plan_id)), new


def _stored(row: Mapping[str, Any]) -> StoredPlan:
    data = json.loads(row["json"])
    p = data["plan"]
    plan = LabelPlan(
        run_ids=tuple(p["run_ids"]),
        probs=tuple(p["probs"]),
        chosen=tuple(p["chosen"]),
        seed=int(p["seed"]),
        budget=int(p["budget"]),
        design=str(p["design"]),
        mix=float(p.get("mix", 0.0)),
    )
    return StoredPlan(
        id=str(row["id"]),
        plan=plan,
        runset=str(row["runset"] or ""),
        runs_digest=str(row["runs_digest"]),
        created_at=str(row["created_at"]),
        scores=dict(data.get("scores") or {}),
    )


def load_plan(store: Store, plan_id: str) -> StoredPlan:
    """The stored plan with this id; NotFoundError when there is none."""
    row = store.label_plan(plan_id)
    if row is None:
        raise NotFoundError(f"no label plan {plan_id!r} in {store.location}")
    return _stored(row)


def plans_for(store: Store, run_ids: Sequence[str]) -> list[StoredPlan]:
    """The stored plans drawn from exactly these runs, oldest first."""
    return [_stored(r) for r in store.label_plans(runs_digest=runs_digest(run_ids))]


def enqueue_plan(
    store: Store,
    stored: StoredPlan,
    cases: Sequence[Case],
    *,
    now: datetime | None = None,
) -> int:
    """Store the chosen runs' cases (as given: redact them first) and queue one blind item per
    case, needing one label; return how many items are new (a plan queued twice adds none)."""
    moment = (now or utcnow()).isoformat()
    plan = stored.plan
    detail = (
        f"{stored.id}: {plan.design} sample of {len(plan.chosen)} of "
        f"{len(plan.run_ids)} runs (seed {plan.seed})"
    )
    rows = []
    for case in cases:
        store.put_case(case)
        rows.append(
            {
                "id": plan_item_id(stored.id, case.id),
                "routing_id": None,
                "card_digest": None,
                "case_id": case.id,
                "model": None,
                "rubric_id": None,
                "kind": kinds.for_case(case.kind).scoring,
                "reason": PLAN_REASON,
                "detail": detail,
                "audit": 0,
                "band": None,
                "auto_label": None,
                "score": None,
                # Every drawn run matters equally to the estimate: one priority for all.
                "priority": 0.5,
                "required_labels": 1,
                "blind": 1,
                "status": "open",
                "created_at": moment,
            }
        )
    return store.enqueue_items(rows)


def plan_item_ids(store: Store, plan_id: str) -> set[str]:
    """The review item ids a stored plan queued (one per chosen run)."""
    stored = load_plan(store, plan_id)
    return {plan_item_id(stored.id, c) for c in stored.plan.chosen}
