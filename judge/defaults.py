"""The default judge configuration: the offline model and the protocol measured for it.

`judge run`, `judge serve`, `judge demo` and the benchmarks start from these values. The
protocol is the one JUDGE_QUALITY.md chose on the dev gold sets; the rubric versions are pinned
here (not "latest") so that a new rubric version never changes the default judge silently.
Kept free of heavy imports: the CLI reads it at start-up.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

#: Model names under this prefix run in-process on the embedded runtime (judge/local.py).
LOCAL_PREFIX = "local/"

#: The embedded judge (judge/local.py): Qwen2.5-Coder-1.5B-Instruct Q4_K_M through litellm.
DEFAULT_MODEL = LOCAL_PREFIX + "qwen2.5-coder-1.5b"

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
