"""The default judge configuration: the offline model and the protocol measured for it.

`judge run`, `judge serve`, `judge demo` and the benchmarks start from these values. The
protocol is the one JUDGE_QUALITY.md chose on the dev gold sets; the rubric versions are pinned
here (not "latest") so that a new rubric version never changes the default judge silently.
Kept free of heavy imports: the CLI reads it at start-up.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, TypeVar

from judge.errors import InputError

#: How verdicts are scored, calibrated, routed and reviewed (judge.kinds: a multi-criterion
#: rubric scores as binary).
ScoringKind = Literal["binary", "pairwise"]

#: Model names under this prefix run in-process on the embedded runtime (judge/local.py).
LOCAL_PREFIX = "local/"

#: The embedded judge (judge/local.py): Qwen2.5-Coder-1.5B-Instruct Q4_K_M through litellm.
DEFAULT_MODEL = LOCAL_PREFIX + "qwen2.5-coder-1.5b"

#: The store a command opens when given none: a SQLite file in the working directory.
DEFAULT_DB = "judge.db"
#: The environment variable that names the store (a SQLite path or a postgresql:// URL).
DB_ENV = "JUDGE_DB"
#: "off": never migrate a store when opening it (run `judge db migrate` as a release step).
DB_MIGRATE_ENV = "JUDGE_DB_MIGRATE"

#: Seconds a job worker's lease lasts without a heartbeat (how long a dead replica's job waits
#: before another replica resumes it); JUDGE_JOB_LEASE_S overrides.
JOB_LEASE_S = 60.0
#: Seconds a claim on a cache key lasts without renewal (how long other workers wait for a
#: worker that died mid-call before paying themselves); JUDGE_CALL_CLAIM_S overrides.
CALL_CLAIM_S = 30.0
#: Seconds between two heartbeats of a service replica (its row in the store's replicas
#: table); JUDGE_REPLICA_BEAT_S overrides.
REPLICA_BEAT_S = 2.0
#: Seconds without a heartbeat after which a replica counts as dead: the jobs and call claims
#: its workers held are taken over at once, without waiting for their leases to end (a live
#: replica paused this long loses them too: its work is then done twice, never stored twice);
#: JUDGE_REPLICA_DEAD_S overrides.
REPLICA_DEAD_S = 10.0


def user_cache() -> Path:
    """``~/.cache/judge``: where judge keeps what it can make again (the embedded model's
    weights, compiled scan databases) when nothing else is configured."""
    return Path.home() / ".cache" / "judge"


Number = TypeVar("Number", int, float)


def env_positive(
    name: str, default: Number, parse: Callable[[str], Number], error: Callable[[str], Exception]
) -> Number:
    """A positive number (``parse``: int or float) from the environment variable ``name``, else
    ``default``; ``error(raw)`` is raised when it is set to anything else."""
    raw = os.environ.get(name)
    if not raw:
        return default
    value: Number | None
    try:
        value = parse(raw)
    except ValueError:
        value = None
    if value is None or value <= 0:
        raise error(raw)
    return value


def env_seconds(name: str, default: float) -> float:
    """A positive number of seconds from the environment variable ``name``, else ``default``."""
    return env_positive(
        name,
        default,
        float,
        lambda raw: InputError(
            f"{name}={raw!r} is not a positive number of seconds",
            field=name,
            hint="give seconds, e.g. 60",
        ),
    )


#: Completion-token cap of a judge call (the verdict JSON with its reason and citations).
DEFAULT_MAX_TOKENS = 384

#: The threshold grid of `judge calibrate` (calibration.bands.GRIDS): the published 5,000
#: evenly spaced confidence levels of Trust or Escalate.
DEFAULT_GRID = "levels:5000"


def is_local(model: str) -> bool:
    """True for a model served by the embedded runtime (no API key, no cost, one call at a time)."""
    return model.startswith(LOCAL_PREFIX)


@dataclass(frozen=True)
class Protocol:
    """How one kind of case is judged by default.

    ``variants``: how many of the rubric's prompt variants to average (None: all of them);
    ``orders``: pairwise answer orders ("both": each pair in AB and BA, probabilities averaged).
    """

    rubric: str
    orders: Literal["one", "both"] = "both"
    samples: int = 1
    variants: int | None = None
    temperature: float = 0.0
    max_tokens: int = DEFAULT_MAX_TOKENS


#: Case kind -> the default protocol (JUDGE_QUALITY.md, "Protocol shipped as the default").
DEFAULT_PROTOCOLS: dict[str, Protocol] = {
    "agent_run": Protocol(rubric="agent-run-success@2"),
    "pairwise": Protocol(rubric="pairwise-preference@2", orders="both"),
}
