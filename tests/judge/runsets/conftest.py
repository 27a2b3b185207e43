"""Shared helpers of the run-set tests."""

from __future__ import annotations

from pathlib import Path

from judge.testing.loopback import LoopbackServer


def score_args(
    server: LoopbackServer, runs: Path, db: Path, *extra: str, rubric: str = "agent-run-success"
) -> list[str]:
    """``judge score`` of ``runs`` judged on ``server`` into the store ``db``, with ``extra``
    (the judge's ``--model``, ``--out-dir``, ...). One prompt variant keeps the arithmetic one
    call per run; the default protocol (every variant, as ``judge run``) is tested on its own."""
    return [
        "score",
        str(runs),
        "--rubric",
        rubric,
        "--variants",
        "1",
        "--api-base",
        server.api_base,
        "--db",
        str(db),
        "--quiet",
        "--n-boot",
        "200",
        "--no-charts",
        *extra,
    ]
