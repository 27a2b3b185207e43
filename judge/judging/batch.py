"""Judge a batch of cases: rubric -> plan -> Runner -> store, recorded as a batch.

This is the one place that assembles the chain: :func:`run_steps` runs planned steps as one
recorded batch, in this process or on Ray. ``judge run``, ``judge demo``, ``judge probe``, the
API's ``POST /v1/judge`` and jobs, the fault campaign and the benchmarks call
:func:`judge_cases` (the plan of every case and model, then :func:`run_steps`); ``judge score``
plans its own steps (each run judged by the judges of another model family than its agent) and
calls :func:`run_steps`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields, replace
from functools import partial
from typing import Any, get_type_hints

from judge.defaults import DEFAULT_MAX_TOKENS, Protocol, is_local
from judge.errors import ConflictError, InputError
from judge.judging.masking import mask_case
from judge.judging.ray_engine import RayOptions, run_on_ray
from judge.judging.runner import OrdersOption, Outcome, Runner, RunSummary, Step, plan
from judge.providers import ModelParams, check_models
from judge.rubrics import Rubric, load_rubric
from judge.safety.redact import redact_case, with_safe_id
from judge.store import Store
from judge.types import Case, Judgment

#: Judgments in flight by default for hosted models (the embedded model runs one at a time).
DEFAULT_CONCURRENCY = 4
_BUDGETS = ("timeout_s", "max_attempts", "max_reasks", "backoff_base_s", "backoff_max_s")
#: The metadata key of a field's help text: the fields that have one are the options every
#: interface offers (:meth:`JudgeOptions.offered`).
HELP = "help"


@dataclass(frozen=True)
class OfferedOption:
    """A judging option as every interface offers it (:meth:`JudgeOptions.offered`)."""

    name: str
    default: Any
    help: str
    #: The field's type: ``int``, ``int | None``, ``Literal["one", "both"]``...
    type: Any


@dataclass(frozen=True)
class JudgeOptions:
    """How to judge: the protocol (orders, samples, variants) and the call parameters.

    The fields with a help text (:meth:`offered`) are declared here once for every interface:
    ``judge run``, ``judge score`` and ``judge demo`` build their options from them (``judge
    probe``, ``judge drift check`` and ``judge serve`` some of them;
    ``judge.commands.judging_options``) and the API its request fields
    (``judge.api.schemas``), with these defaults and these words.
    """

    orders: OrdersOption = field(
        default="both",
        metadata={HELP: "Pairwise rubrics: judge in both answer orders, or in one."},
    )
    samples: int = field(default=1, metadata={HELP: "Repeated samples per case and order."})
    variants: int | None = field(
        default=None,
        metadata={HELP: "Use the first N of the rubric's prompt variants (default: all)."},
    )
    temperature: float | None = field(
        default=None,
        metadata={HELP: "Sampling temperature (default 0, or 0.7 with more than one sample)."},
    )
    max_tokens: int = field(
        default=DEFAULT_MAX_TOKENS, metadata={HELP: "Most tokens the judge may answer with."}
    )
    api_base: str | None = field(
        default=None, metadata={HELP: "Send calls to this OpenAI-compatible base URL."}
    )
    token_budget: int | None = field(
        default=None, metadata={HELP: "Evidence token budget (default: the rubric's)."}
    )
    concurrency: int | None = field(
        default=None,
        metadata={
            HELP: f"Judgments in flight (default {DEFAULT_CONCURRENCY}; 1 for the embedded "
            "model, which runs one call at a time, so that each judgment's latency is its "
            "own); on Ray, per worker."
        },
    )
    #: Call budgets (None: judge.providers.ModelParams' defaults): they shape cost and latency,
    #: not the answer, so they are not in the cache key.
    timeout_s: float | None = None
    max_attempts: int | None = None
    max_reasks: int | None = None
    backoff_base_s: float | None = None
    backoff_max_s: float | None = None
    #: A litellm Router configuration (``judge.providers.read_router_config``): the models are
    #: its model groups, each spread over its deployments.
    router: str | None = None
    #: Processes preparing cases for the in-process runner: 0 (the default) prepares in the
    #: event loop; None: a pool (one process per core but one) for batches of 48+ cases; N: a
    #: pool of N. The pool's processes import the ``__main__`` module (Python's "forkserver"
    #: start), so a script that asks for a pool guards its work with
    #: ``if __name__ == "__main__":``; the commands (``judge run``, ``judge score``, ``judge
    #: demo``) ask for None.
    prepare_workers: int | None = 0
    #: Judge on Ray instead of in this process (``judge run --engine ray``).
    ray: RayOptions | None = None

    def __post_init__(self) -> None:
        if self.samples < 1:
            raise InputError("must be at least 1", field="samples")

    @classmethod
    def offered(cls) -> dict[str, OfferedOption]:
        """The options every interface offers, by name in the order declared: the fields with
        a help text, with their default and type."""
        hints = get_type_hints(cls)
        return {
            f.name: OfferedOption(f.name, f.default, f.metadata[HELP], hints[f.name])
            for f in fields(cls)
            if HELP in f.metadata
        }

    @classmethod
    def from_protocol(cls, protocol: Protocol, **overrides: object) -> JudgeOptions:
        """The options of a default protocol (``judge.defaults``), with overrides."""
        chosen = {
            "orders": protocol.orders,
            "samples": protocol.samples,
            "variants": protocol.variants,
            "temperature": protocol.temperature,
            "max_tokens": protocol.max_tokens,
        }
        return cls(**(chosen | overrides))  # type: ignore[arg-type]

    def params(self) -> ModelParams:
        """The model parameters these options give."""
        temperature = self.temperature
        if temperature is None:
            temperature = 0.7 if self.samples > 1 else 0.0
        budgets = {name: value for name in _BUDGETS if (value := getattr(self, name)) is not None}
        return ModelParams(
            temperature=temperature,
            max_tokens=self.max_tokens,
            api_base=self.api_base,
            router=self.router,
            **budgets,
        )

    def in_flight(self, models: Sequence[str]) -> int:
        """How many judgments to run at once for these models (in this process, or in each Ray
        worker): ``concurrency``, by default one for the embedded model (it runs one call at
        a time) and DEFAULT_CONCURRENCY for hosted ones."""
        if self.concurrency is not None:
            return self.concurrency
        return 1 if all(is_local(m) for m in models) else DEFAULT_CONCURRENCY


def judging_plan(
    cases: Sequence[Case], rubric: Rubric, models: Sequence[str], options: JudgeOptions
) -> list[Step]:
    """Every judgment ``options`` ask of these cases and models."""
    return plan(
        cases,
        rubric,
        list(models),
        orders=options.orders,
        samples=options.samples,
        variants=options.variants,
    )


def judge_cases(
    store: Store,
    cases: Sequence[Case],
    *,
    rubric: str | Rubric,
    models: Sequence[str],
    options: JudgeOptions | None = None,
    on_start: Callable[[list[Step]], None] | None = None,
    on_done: Callable[[Outcome], None] | None = None,
    batch_id: str | None = None,
    source: str = "",
) -> RunSummary:
    """Judge ``cases`` with a rubric and one or more models; store every judgment as it
    finishes and record the batch. Judgments already paid for are served from the store.

    ``on_start`` gets the planned steps (e.g. to size a progress bar), and once more the masked
    checks when some cases have suspect evidence (:mod:`judge.judging.masking`); ``on_done``
    each finished step. A failure of one judgment never stops the others: provider and parse
    failures are stored with their status, steps that could not be attempted are in
    ``summary.errors``.
    Every model id and its credentials are checked first (:func:`judge.providers.check_models`):
    an unknown id or a missing key raises InputError before anything is judged or stored.
    """
    options = options or JudgeOptions()
    check_models(models, api_base=options.api_base, router=options.router)
    chosen = load_rubric(rubric) if isinstance(rubric, str) else rubric
    steps = judging_plan(cases, chosen, models, options)
    return run_steps(
        store,
        steps,
        rubric=chosen,
        models=models,
        options=options,
        on_start=on_start,
        on_done=on_done,
        batch_id=batch_id,
        source=source,
    )


def _execute(
    store: Store,
    steps: list[Step],
    *,
    runner: Runner,
    rubric: Rubric,
    params: ModelParams,
    options: JudgeOptions,
    on_done: Callable[[Outcome], None] | None,
) -> RunSummary:
    """The steps judged in-process or on Ray."""
    if options.ray is not None:
        return run_on_ray(
            store,
            steps,
            rubric=rubric,
            params=params,
            token_budget=options.token_budget,
            # Each Ray worker runs the run's judgments in flight, as the runner does here (the
            # embedded model one call per worker, each worker with its share of the cores).
            concurrency=runner.concurrency,
            options=options.ray,
            on_done=on_done,
            batch_id=runner.batch_id,
        )
    return asyncio.run(runner.run(steps))


def check_case_ids(store: Store, cases: Sequence[Case]) -> None:
    """Refuse (ConflictError, HTTP 409) a case whose id already names a *different* case in the
    store. Judging stores each case under its id, and the stored copy is what reviewers see and
    gold exports: over the API, a client must not replace another's case (or one already
    labelled) by reusing its id. The same case again, as stored (redacted), is fine."""
    cases = [with_safe_id(c) for c in cases]
    stored = store.get_cases(dict.fromkeys(c.id for c in cases))
    clashes = [
        c.id
        for c in cases
        if (old := stored.get(c.id)) is not None and old != c and old != redact_case(c)[0]
    ]
    if clashes:
        shown = ", ".join(repr(i) for i in clashes[:5]) + (" ..." if len(clashes) > 5 else "")
        raise ConflictError(
            f"{len(clashes)} case id(s) already name a different stored case: "
            f"{shown}; give a changed case a new id"
        )


def masked_steps(steps: Sequence[Step], summary: RunSummary) -> list[Step]:
    """For every case whose judgments recorded suspect evidence, the same steps on its masked
    copy (:func:`judge.judging.masking.mask_case`); none for a masked copy itself."""
    by_case: dict[str, list[Judgment]] = {}
    for outcome in summary.outcomes:
        by_case.setdefault(outcome.step.case.id, []).append(outcome.judgment)
    copies: dict[str, Case | None] = {}
    out = []
    for step in steps:
        case_id = step.case.id
        if case_id not in copies:
            copies[case_id] = mask_case(step.case, by_case.get(case_id, []))
        copy = copies[case_id]
        if copy is not None:
            out.append(replace(step, case=copy))
    return out


def run_steps(
    store: Store,
    steps: list[Step],
    *,
    rubric: Rubric,
    models: Sequence[str],
    options: JudgeOptions,
    on_start: Callable[[list[Step]], None] | None = None,
    on_done: Callable[[Outcome], None] | None = None,
    batch_id: str | None = None,
    source: str = "",
) -> RunSummary:
    """Run planned steps (:func:`judging_plan`, or a plan of one's own: e.g. each run judged only
    by the judges of another model family) as one recorded batch."""
    params = options.params()
    local = all(is_local(m) for m in models)
    runner = Runner(
        store,
        rubric,
        params,
        token_budget=options.token_budget,
        concurrency=options.in_flight(models),
        on_done=on_done,
        batch_id=batch_id,
        # The embedded model's calls need the cores; its prompts are few.
        prepare_workers=0 if local else options.prepare_workers,
    )
    store.start_batch(
        runner.batch_id,
        rubric=rubric.ref,
        model=",".join(models),
        input=source,
        params=params.cache_params(),
    )
    if on_start is not None:
        on_start(steps)
    execute = partial(
        _execute,
        store,
        runner=runner,
        rubric=rubric,
        params=params,
        options=options,
        on_done=on_done,
    )
    summary = execute(steps)
    # The second net: cases with suspect evidence judged again without it (judging.masking).
    masked = masked_steps(steps, summary)
    if masked:
        if on_start is not None:
            on_start(masked)
        summary.merge(execute(masked))
    counts = dict(summary.statuses) | {"cached": summary.cached}
    if summary.errors:
        counts["not_attempted"] = len(summary.errors)
    store.finish_batch(runner.batch_id, status="done", counts=counts)
    return summary
