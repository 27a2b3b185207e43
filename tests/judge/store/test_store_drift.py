"""Drift checks are kept and listed the same way on SQLite and PostgreSQL."""

from __future__ import annotations

import json

from judge.store import Store


def _row(i: int, card: str, anchor: str, when: str) -> dict[str, object]:
    return {
        "id": f"d-{i}",
        "card_digest": card,
        "anchor_digest": anchor,
        "model": "openai/x",
        "rubric": "agent-run-success@2",
        "checked_at": when,
        "n": 8,
        "n_scored": 8,
        "p_pass_mean": 0.5,
        "agreement": 1.0,
        "alarm": 0,
        "json": json.dumps({"stats": {"n": 8}}),
    }


def test_drift_checks_on_both_backends(store_location: str) -> None:
    with Store(store_location) as store:
        assert store.save_drift_check(_row(2, "c1", "a1", "2026-12-01T10:00:00"))
        assert store.save_drift_check(_row(1, "c1", "a1", "2026-12-01T09:00:00"))
        assert store.save_drift_check(_row(3, "c1", "a2", "2026-12-01T11:00:00"))
        assert store.save_drift_check(_row(4, "c2", "a1", "2026-12-01T08:00:00"))
        assert not store.save_drift_check(_row(1, "c1", "a1", "2026-12-01T09:00:00"))
        assert [r["id"] for r in store.drift_checks("c1")] == ["d-1", "d-2", "d-3"]
        assert [r["id"] for r in store.drift_checks("c1", "a1")] == ["d-1", "d-2"]
        (row,) = store.drift_checks("c2")
        assert row["p_pass_mean"] == 0.5 and row["alarm"] == 0 and row["n_scored"] == 8
