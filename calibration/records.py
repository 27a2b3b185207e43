"""The data contract between judgments and the calibration harness.

Every source of verdicts (the judge store, a JSONL export of judgments, recorded verdicts of real
judges in the ../shared/judgments format) is turned into ``VerdictRow`` values, one per
(item, judge, order, sample). Metrics, bands, cards and studies read only these.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

RowStatus = Literal["ok", "abstain", "parse_error", "infra_error"]


@dataclass(frozen=True, slots=True)
class VerdictRow:
    """One verdict of one judge on one item, in the item's canonical frame."""

    item_id: str
    judge: str
    #: pass / fail for binary rubrics, A / B / tie for pairwise; None unless status is ok.
    verdict: str | None
    status: RowStatus = "ok"
    #: "AB" (canonical A shown first), "BA" (swapped) or None (no order, or already averaged).
    order: str | None = None
    sample: int = 0
    #: The verdict in the frame the judge saw (pairwise only).
    verdict_pos: str | None = None
    #: P(positive label) (``judge.kinds``: P(pass) for binary rubrics, P(A) for pairwise).
    #: None when unknown.
    prob: float | None = None
    #: The gold label joined by item id, when known.
    gold: str | None = None
    #: The sampling unit for intervals (task-cluster bootstrap); defaults to the item id.
    task_id: str | None = None
    cost_usd: float | None = None
    slices: Mapping[str, Any] = field(default_factory=dict)

    @property
    def cluster(self) -> str:
        """The id resampled by the task-cluster bootstrap."""
        return self.task_id if self.task_id is not None else self.item_id
