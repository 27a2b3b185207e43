"""Runs and clusters built by hand for the failure-cluster tests."""

from __future__ import annotations

from typing import Any

from judge.failures import RunRecord


def runs(
    prefix: str,
    n: int,
    *,
    failed: int = 0,
    run_set: str = "v1",
    order: int = 1,
    features: dict[str, str] | None = None,
    judge_score: float | None = None,
    **fields: Any,
) -> list[RunRecord]:
    """``n`` runs named ``{prefix}-{i}``: the first ``failed`` of them failed, the failures
    carrying ``fields`` (effects, owner, fbd_confirmed...); every run has ``judge_score``."""
    made = []
    for i in range(n):
        bad = i < failed
        made.append(
            RunRecord(
                case_id=f"{prefix}-{i}",
                run_set=run_set,
                order=order,
                failed=bad,
                features=dict(features or {}),
                judge_score=judge_score,
                **(fields if bad else {}),
            )
        )
    return made
