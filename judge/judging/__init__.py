"""Judging: plan the judgments a protocol needs, run them with bounded concurrency, store each
as it finishes (``runner``), and the batch workflow every interface calls (``batch``)."""

from judge.judging.batch import (
    DEFAULT_CONCURRENCY,
    JudgeOptions,
    OfferedOption,
    check_case_ids,
    judge_cases,
    judging_plan,
    run_steps,
)
from judge.judging.ray_engine import RayOptions, run_on_ray
from judge.judging.runner import (
    OrdersOption,
    Outcome,
    Runner,
    RunSummary,
    Step,
    code_digest,
    params_for_sample,
    plan,
)

__all__ = [
    "DEFAULT_CONCURRENCY",
    "JudgeOptions",
    "OfferedOption",
    "OrdersOption",
    "Outcome",
    "RayOptions",
    "RunSummary",
    "Runner",
    "Step",
    "check_case_ids",
    "code_digest",
    "judge_cases",
    "judging_plan",
    "params_for_sample",
    "plan",
    "run_on_ray",
    "run_steps",
]
