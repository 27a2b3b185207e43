"""Model calls: litellm for every provider, instructor for structured output, tenacity for retries
(:mod:`judge.providers.calls`), and the preflight that refuses, before anything is judged, models
that cannot be called (:mod:`judge.providers.preflight`). What callers use is named here."""

from __future__ import annotations

from judge.providers.calls import (
    KEYLESS_API_KEY,
    VERDICT_KEY,
    AnswerCheck,
    AttemptLog,
    CallResult,
    ModelParams,
    RouterConfig,
    RouterDeployment,
    call_model,
    label_probs_from_logprobs,
    prepare_litellm,
    read_router_config,
)
from judge.providers.preflight import check_models, model_problem, unreached_hint

__all__ = [
    "KEYLESS_API_KEY",
    "VERDICT_KEY",
    "AnswerCheck",
    "AttemptLog",
    "CallResult",
    "ModelParams",
    "RouterConfig",
    "RouterDeployment",
    "call_model",
    "check_models",
    "label_probs_from_logprobs",
    "model_problem",
    "prepare_litellm",
    "read_router_config",
    "unreached_hint",
]
