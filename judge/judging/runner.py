"""Judge cases: evidence -> prompt -> provider -> verdict -> store, for every protocol step.

Protocols decide which judgments a case needs (``plan``): one verdict; pairwise in both orders;
n repeated samples; several models (a panel). Each planned judgment has a cache key; a stored
final judgment with that key is reused, never paid for again. Each judgment is stored the moment
it finishes, so an interrupted batch resumes where it stopped.

The cache key covers the rendered prompt, so finding it means selecting evidence and rendering,
which costs milliseconds per case. A step key (:meth:`Runner.step_key`: the case as given, the
rubric, the budget, the model and its parameters, and the source of the judge package that turns
them into a prompt) remembers which cache key those inputs led to, so re-running a finished batch
skips that work. Any change of the inputs or of the code misses it and takes the full path.
"""

from __future__ import annotations

import ast
import asyncio
import atexit
import multiprocessing
import os
import threading
import time
import uuid
from collections import Counter, deque
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel

from judge import kinds
from judge.digests import Hasher, digest, judgment_id, sha256_hex
from judge.errors import InfraError, JudgeError, ParseError
from judge.evidence import DEFAULT_TOKEN_BUDGET, SELECTOR_VERSION
from judge.judging.claims import CallClaims
from judge.judging.composite import composite
from judge.judging.prepare import (
    PreparedCase,
    PreparedStep,
    StepSpec,
    default_prepare_workers,
    params_for_sample,
    prepare_case,
    prepare_elsewhere,
    warm_up,
    watch_parent,
)
from judge.providers import AnswerCheck, AttemptLog, CallResult, ModelParams, call_model
from judge.rubrics import Rubric
from judge.safety.redact import redact_error, redact_judgment, with_safe_id
from judge.store import Store
from judge.store.judgments import call_row
from judge.types import ABSTAIN_LABEL, Case, Judgment, Order, Status, Usage, Verdict
from judge.version import __version__

OrdersOption = Literal["one", "both"]


@dataclass(frozen=True)
class Step:
    """One planned judgment: a case, a model, an answer order and a sample index."""

    case: Case
    model: str
    order: Order | None = None
    sample: int = 0
    variant: int = 0


def plan(
    cases: Sequence[Case],
    rubric: Rubric,
    models: Sequence[str],
    *,
    orders: OrdersOption = "both",
    samples: int = 1,
    variants: int | None = None,
) -> list[Step]:
    """Every judgment the protocol needs, in a stable order (case, model, order, sample,
    variant). ``variants`` caps the rubric's prompt variants (default: all of them). The
    variants of one case come one after another, so a local model reuses the case's prompt
    prefix between them."""
    n_variants = rubric.n_variants if variants is None else max(1, min(variants, rubric.n_variants))
    steps: list[Step] = []
    # Every judged case passes here: a secret in its id is redacted (safe_case_id).
    for case in map(with_safe_id, cases):
        kind_orders = kinds.kind(rubric.kind).orders
        case_orders: list[Order | None] = list(kind_orders if orders == "both" else kind_orders[:1])
        for model in models:
            for order in case_orders:
                for sample in range(samples):
                    for variant in range(n_variants):
                        steps.append(
                            Step(
                                case=case, model=model, order=order, sample=sample, variant=variant
                            )
                        )
    return steps


#: CPython 3.11's ast.parse is not safe in two threads at once ("AST constructor recursion
#: depth mismatch"): two job workers starting together must not compute the digest together.
_CODE_DIGEST_LOCK = threading.Lock()


@cache
def code_digest() -> str:
    """Digest of the code that turns a case into a prompt and a call: the source of
    judge.judging.runner and of every judge module it imports, directly or not (imports inside
    functions included), with the judge and Jinja versions. Computed once per process."""
    root = Path(__file__).resolve().parents[1]
    h = Hasher(f"{__version__}|jinja2 {metadata.version('jinja2')}")
    with _CODE_DIGEST_LOCK:
        imports = _judge_imports(root, __name__)
    for name, path in sorted(imports.items()):
        h.update(name.encode() + b"\0" + path.read_bytes() + b"\0")
    return h.digest()


def _judge_imports(root: Path, start: str) -> dict[str, Path]:
    """``start`` and every module of the judge package it imports, transitively: name -> file.
    A name imported from a module (``from judge.x import f``) is tried as a submodule and
    skipped when it is not one."""
    found: dict[str, Path] = {}
    todo = [start]
    while todo:
        name = todo.pop()
        if name in found:
            continue
        relative = Path(*name.split(".")[1:])
        path = (
            root / relative / "__init__.py"
            if (root / relative).is_dir()
            else (root / relative.with_suffix(".py"))
        )
        if not path.is_file():
            continue
        found[name] = path
        for node in ast.walk(ast.parse(path.read_bytes(), filename=str(path))):
            if (
                isinstance(node, ast.ImportFrom)
                and node.level == 0
                and node.module
                and (node.module == "judge" or node.module.startswith("judge."))
            ):
                todo.append(node.module)
                todo.extend(f"{node.module}.{alias.name}" for alias in node.names)
            elif isinstance(node, ast.Import):
                todo.extend(a.name for a in node.names if a.name.startswith("judge."))
    return found


@dataclass
class Outcome:
    """A finished step: its judgment and whether the provider was called for it."""

    step: Step
    judgment: Judgment
    cached: bool


@dataclass
class RunSummary:
    """How a batch went."""

    batch_id: str
    statuses: Counter[str] = field(default_factory=Counter)
    cached: int = 0
    called: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0
    # Left out of the repr: asyncio.run formats the repr of its main task's result (Python
    # 3.11, runners.py checking the SIGINT handler) twice, and with every case and judgment
    # in it that took about a second per thousand SWE-bench judgments.
    outcomes: list[Outcome] = field(default_factory=list, repr=False)
    #: Steps that could not even be attempted (e.g. a case the rubric cannot render).
    errors: list[tuple[Step, JudgeError]] = field(default_factory=list, repr=False)

    @property
    def failed(self) -> int:
        """Judgments that ended without a verdict because of the provider or the parser."""
        return self.statuses["parse_error"] + self.statuses["infra_error"]

    def merge(self, other: RunSummary) -> None:
        """Add another run's outcomes, failures and time to this one (a second pass of the same
        batch, e.g. masked copies of cases)."""
        for outcome in other.outcomes:
            self.add(outcome)
        self.errors.extend(other.errors)
        self.seconds += other.seconds

    def add(self, outcome: Outcome) -> None:
        """Count a finished step."""
        self.outcomes.append(outcome)
        self.statuses[outcome.judgment.status] += 1
        if outcome.cached:
            self.cached += 1
        else:
            self.called += 1
            self.prompt_tokens += outcome.judgment.usage.prompt_tokens
            self.completion_tokens += outcome.judgment.usage.completion_tokens


# --- one judgment, from a prepared prompt to a Judgment (no store: the Ray workers use it) ----


def _id_range(ids: Sequence[str]) -> str:
    if len(ids) > 6:
        return f"{ids[0]} to {ids[-1]}"
    return ", ".join(ids)


def citation_check(rubric: Rubric, shown: Sequence[str]) -> AnswerCheck:
    """The check of a judge's answer against the evidence ``shown``: a verdict must cite at
    least one id that was shown (an abstention need not: it says the evidence cannot decide).
    What it returns is sent back to the model as a re-ask."""

    def check(answer: BaseModel) -> str | None:
        verdict = rubric.interpret(answer, shown_ids=shown, order=None, label_probs=None)
        if not verdict.uncited:
            return None
        wrong = ""
        if verdict.invalid_citations:
            verb = "was" if len(verdict.invalid_citations) == 1 else "were"
            wrong = f" ({', '.join(verdict.invalid_citations)} {verb} not shown)"
        return (
            f'"evidence" must cite the ids of the evidence items that support the verdict, '
            f"among those shown: {_id_range(list(shown))}{wrong}"
        )

    return check


async def judge_prepared(
    prepared: PreparedStep,
    case_id: str,
    spec: StepSpec,
    rubric: Rubric,
    params: ModelParams,
) -> tuple[Judgment, list[dict[str, Any]]]:
    """Call the model for a prepared step; the judgment (redacted) and its call-log rows.

    Provider and parse failures become judgments with that status, never a verdict. An answer
    that cites no evidence id shown is re-asked within the re-ask budget; the last one is kept
    as it is (status ok, its verdict ``uncited``: routing sends it to a person)."""
    if prepared.decided is not None:
        # The checks decided this case (judge.judging.composite): no model is asked.
        return checked_judgment(prepared, case_id), []
    log = AttemptLog()
    started = time.perf_counter()
    result: CallResult | None = None
    error: ParseError | InfraError | None = None
    try:
        result = await call_model(
            spec.model,
            prepared.messages,
            rubric.answer_model(),
            rubric.all_labels,
            params_for_sample(params, spec.sample),
            log=log,
            check=citation_check(rubric, prepared.shown) if prepared.shown else None,
        )
    except (ParseError, InfraError) as exc:
        error = exc
    elapsed = time.perf_counter() - started
    calls = []
    for attempt, entry in enumerate(log.entries, start=1):
        if entry.get("error"):
            entry = {**entry, "error": redact_error(str(entry["error"]))[0]}
        calls.append(call_row(cache_key=prepared.key, model=spec.model, attempt=attempt, **entry))
    # A model's answer may quote a secret (from the evidence or elsewhere): redact the
    # judgment's free text before it is stored, shown or exported.
    judgment = redact_judgment(
        build_judgment(rubric, case_id, spec, prepared, result, error, elapsed)
    )[0]
    return judgment, calls


def checked_judgment(prepared: PreparedStep, case_id: str) -> Judgment:
    """The judgment of a step its checks decided: the checks' verdict, no call, no usage."""
    assert prepared.decided is not None
    return redact_judgment(
        Judgment(
            id=judgment_id(prepared.key),
            case_id=case_id,
            cache_key=prepared.key,
            status="ok",
            verdict=prepared.decided,
            provenance=prepared.provenance,
        )
    )[0]


def build_judgment(
    rubric: Rubric,
    case_id: str,
    spec: StepSpec,
    prepared: PreparedStep,
    result: CallResult | None,
    error: ParseError | InfraError | None,
    elapsed: float,
) -> Judgment:
    """The judgment of a call: its verdict in the canonical frame, or its typed failure."""
    verdict: Verdict | None = None
    why: str | None = None
    if result is None:
        assert error is not None
        status: Status = "parse_error" if isinstance(error, ParseError) else "infra_error"
        why, raw_output = str(error), error.last_output
        usage = Usage(
            prompt_tokens=int(error.usage.get("prompt_tokens", 0)),
            completion_tokens=int(error.usage.get("completion_tokens", 0)),
            latency_s=elapsed,
            attempts=error.attempts,
        )
    else:
        verdict = rubric.interpret(
            result.answer,
            shown_ids=prepared.shown,
            order=spec.order,
            label_probs=result.label_probs,
        )
        if prepared.gating is not None:
            verdict = composite(rubric, verdict, prepared.gating)
        status = "abstain" if verdict.label == ABSTAIN_LABEL else "ok"
        raw_output = result.raw_output
        usage = Usage(
            prompt_tokens=result.prompt_tokens,
            completion_tokens=result.completion_tokens,
            cost_usd=result.cost_usd,
            latency_s=elapsed,
            attempts=result.attempts,
        )
    return Judgment(
        id=judgment_id(prepared.key),
        case_id=case_id,
        cache_key=prepared.key,
        status=status,
        verdict=verdict,
        error=why,
        provenance=prepared.provenance,
        usage=usage,
        raw_output=raw_output,
    )


# --- the runner -------------------------------------------------------------------------------

#: Step keys looked up per query.
KEY_CHUNK = 64
#: Cases to prepare below which a process pool is not worth starting (about half a second).
POOL_MIN_CASES = 48


@dataclass
class _Ready:
    """A prepared step waiting for a call slot."""

    step: Step
    step_key: str
    prepared: PreparedStep


@dataclass
class _Writer:
    """Write-behind: finished work is written in one transaction per turn of the event loop
    (every judgment that finished since the last write), and only then counted and reported
    (``on_done``): what the progress bar shows is stored."""

    store: Store
    batch_id: str
    summary: RunSummary
    on_done: Callable[[Outcome], None] | None
    #: Gives up the claim on a cache key once its judgment is written (or was not).
    release: Callable[[str], None] = lambda key: None
    cases: list[dict[str, Any]] = field(default_factory=list)
    judgments: list[tuple[Judgment, str | None]] = field(default_factory=list)
    calls: list[dict[str, Any]] = field(default_factory=list)
    steps: list[tuple[str, str]] = field(default_factory=list)
    outcomes: list[Outcome] = field(default_factory=list)
    claimed: list[str] = field(default_factory=list)
    wake: asyncio.Event = field(default_factory=asyncio.Event)
    closed: bool = False

    def add(
        self,
        outcome: Outcome | None = None,
        *,
        case: dict[str, Any] | None = None,
        calls: Sequence[dict[str, Any]] = (),
        step: tuple[str, str] | None = None,
    ) -> None:
        """Queue work to write; a new judgment (not from the store) with its outcome."""
        if case is not None:
            self.cases.append(case)
        if outcome is not None:
            if not outcome.cached:
                self.judgments.append((outcome.judgment, self.batch_id))
                self.claimed.append(outcome.judgment.cache_key)
            self.outcomes.append(outcome)
        self.calls.extend(calls)
        if step is not None:
            self.steps.append(step)
        self.wake.set()

    def flush(self) -> None:
        """Write what is queued, then count and report its outcomes."""
        cases, judgments, calls, steps, outcomes, claimed = (
            self.cases,
            self.judgments,
            self.calls,
            self.steps,
            self.outcomes,
            self.claimed,
        )
        self.cases, self.judgments, self.calls, self.steps, self.outcomes = [], [], [], [], []
        self.claimed = []
        if cases or judgments or calls or steps:
            try:
                self.store.put_batch(cases=cases, judgments=judgments, calls=calls, steps=steps)
            except JudgeError as exc:
                # Nothing of this write is stored: its new judgments did not happen. (The
                # database gone away is no JudgeError: it stops the batch; a rerun resumes it.)
                for outcome in outcomes:
                    self.summary.errors.append((outcome.step, exc))
                return
            finally:
                for key in claimed:
                    self.release(key)
        for outcome in outcomes:
            self.summary.add(outcome)
            if self.on_done is not None:
                self.on_done(outcome)

    async def run(self) -> None:
        """Write whenever there is something to write, until closed."""
        while True:
            await self.wake.wait()
            self.wake.clear()
            self.flush()
            if self.closed:
                return

    def close(self) -> None:
        """Write the rest and stop."""
        self.closed = True
        self.wake.set()


@cache
def _pool(workers: int) -> ProcessPoolExecutor:
    """A process pool for preparing cases, started once per process and kept (the API and
    long batches reuse it); "forkserver": the parent has threads (litellm, the API)."""
    pool = ProcessPoolExecutor(
        workers,
        mp_context=multiprocessing.get_context("forkserver"),
        initializer=watch_parent,
        initargs=(os.getpid(),),
    )
    atexit.register(pool.shutdown, wait=False, cancel_futures=True)
    for _ in range(workers):
        pool.submit(warm_up)  # start importing now, while the first cases are prepared here
    return pool


class Runner:
    """Runs planned steps with bounded concurrency, storing each judgment as it finishes.

    Steps are grouped by case: a case is redacted and its evidence selected once for all its
    steps (orders, samples, variants, models), in a process pool when there are many (so that
    the event loop only waits on the model), while earlier steps are being called. Finished
    judgments are written in one transaction per turn of the event loop.
    """

    def __init__(
        self,
        store: Store,
        rubric: Rubric,
        params: ModelParams,
        *,
        token_budget: int | None = None,
        concurrency: int = 4,
        on_done: Callable[[Outcome], None] | None = None,
        batch_id: str | None = None,
        prepare_workers: int | None = None,
    ) -> None:
        self.store = store
        self.rubric = rubric
        self.params = params
        self.token_budget = token_budget or rubric.spec.token_budget or DEFAULT_TOKEN_BUDGET
        self.concurrency = max(1, concurrency)
        self.on_done = on_done
        self.batch_id = batch_id or f"b-{uuid.uuid4().hex[:12]}"
        #: Processes preparing cases (None: one per core but the event loop's, for batches
        #: of at least POOL_MIN_CASES cases to prepare; 0: in the event loop).
        self.prepare_workers = prepare_workers
        self._case_digests: dict[int, tuple[Case, str]] = {}
        #: Claims on the cache keys this runner pays for (one payment across processes).
        self.claims = CallClaims(store)

    def _case_digest(self, case: Case) -> str:
        known = self._case_digests.get(id(case))
        if known is not None and known[0] is case:
            return known[1]
        value = sha256_hex(case.model_dump_json().encode("utf-8"))
        self._case_digests[id(case)] = (case, value)
        return value

    def step_key(self, step: Step) -> str:
        """The identity of everything that decides a step's prompt and call, computed without
        selecting evidence: the case as given, rubric digest, evidence budget, model, the
        parameters in the cache key, order, sample, variant and :func:`code_digest`."""
        return digest(
            {
                "code": code_digest(),
                "selector": SELECTOR_VERSION,
                "case": self._case_digest(step.case),
                "rubric": self.rubric.digest,
                "token_budget": self.token_budget,
                "model": step.model,
                "params": params_for_sample(self.params, step.sample).cache_params(),
                "order": step.order,
                "sample": step.sample,
                "variant": step.variant,
            }
        )

    async def run(self, steps: Sequence[Step]) -> RunSummary:
        """Judge every step; a failure of one never stops the others."""
        summary = RunSummary(batch_id=self.batch_id)
        started = time.perf_counter()
        writer = _Writer(self.store, self.batch_id, summary, self.on_done, self.claims.release)
        queue: asyncio.Queue[_Ready | None] = asyncio.Queue(maxsize=self.concurrency)
        flusher = asyncio.create_task(writer.run())
        consumers = [
            asyncio.create_task(self._consume(queue, writer, summary))
            for _ in range(self.concurrency)
        ]
        try:
            await self._produce(steps, queue, writer, summary)
            for _ in consumers:
                await queue.put(None)
            await asyncio.gather(*consumers)
        finally:
            writer.close()
            await flusher
            self._case_digests.clear()
        summary.seconds = time.perf_counter() - started
        return summary

    def _workers(self, n_cases: int) -> int:
        if self.prepare_workers is not None:
            return self.prepare_workers
        return default_prepare_workers() if n_cases >= POOL_MIN_CASES else 0

    async def _produce(
        self,
        steps: Sequence[Step],
        queue: asyncio.Queue[_Ready | None],
        writer: _Writer,
        summary: RunSummary,
    ) -> None:
        """Find stored judgments by step key; prepare the other cases (ahead of the calls, in
        the pool when there is one) and hand their steps to the call slots."""
        groups: dict[int, tuple[Case, list[Step]]] = {}
        for step in steps:
            groups.setdefault(id(step.case), (step.case, []))[1].append(step)
        ordered = list(groups.values())
        loop = asyncio.get_running_loop()
        pool: ProcessPoolExecutor | None = None
        ahead = 0
        # While a new pool starts (its processes import the judge: seconds), the first cases
        # are prepared here, so that the first calls go out at once.
        inline = 0
        pending: deque[tuple[Case, list[tuple[Step, str]], asyncio.Future[PreparedCase] | None]]
        pending = deque()
        for start in range(0, len(ordered), KEY_CHUNK):
            chunk = ordered[start : start + KEY_CHUNK]
            keyed = [(step, self.step_key(step)) for _, group in chunk for step in group]
            known = self.store.cached_steps([key for _, key in keyed])
            todo: dict[int, list[tuple[Step, str]]] = {}
            for step, key in keyed:
                hit = known.get(key)
                if hit is not None:
                    writer.add(Outcome(step, hit, cached=True))
                else:
                    todo.setdefault(id(step.case), []).append((step, key))
            if start == 0 and todo:
                # Judge the share of the first chunk that needs preparing as typical.
                expected = len(todo) * len(ordered) // len(chunk)
                workers = self._workers(expected)
                pool = _pool(workers) if workers > 0 else None
                # Keep each worker busy with the next case while the loop takes one.
                ahead = 2 * workers if pool is not None else 0
                inline = self.concurrency if pool is not None else 0
            for case, _ in chunk:
                if id(case) not in todo:
                    continue
                mine = todo[id(case)]
                future = None
                if pool is not None and inline > 0:
                    inline -= len(mine)
                elif pool is not None:
                    future = loop.run_in_executor(
                        pool,
                        prepare_elsewhere,
                        case,
                        [_spec(s) for s, _ in mine],
                        str(self.rubric.path),
                        self.rubric.digest,
                        self.params,
                        self.token_budget,
                    )
                pending.append((case, mine, future))
                while len(pending) > ahead:
                    await self._hand_over(pending.popleft(), queue, writer, summary)
        while pending:
            await self._hand_over(pending.popleft(), queue, writer, summary)

    async def _hand_over(
        self,
        item: tuple[Case, list[tuple[Step, str]], asyncio.Future[PreparedCase] | None],
        queue: asyncio.Queue[_Ready | None],
        writer: _Writer,
        summary: RunSummary,
    ) -> None:
        """Take a prepared case (preparing it here without a pool, or when the pool failed),
        serve its steps found by cache key, queue the rest for a call."""
        case, mine, future = item
        prepared: PreparedCase | None = None
        if future is not None:
            try:
                prepared = await future
            except Exception:  # noqa: BLE001 - a lost worker or an unpicklable error: redo here
                prepared = None
        if prepared is None:
            prepared = prepare_case(
                case, [_spec(s) for s, _ in mine], self.rubric, self.params, self.token_budget
            )
        writer.add(case=prepared.case_row)
        for index, exc in prepared.errors:
            summary.errors.append((mine[index][0], exc))
        hits = self.store.cached_many([p.key for p in prepared.steps])
        for ready in prepared.steps:
            step, step_key = mine[ready.index]
            hit = hits.get(ready.key)
            if hit is not None:
                writer.add(Outcome(step, hit, cached=True), step=(step_key, ready.key))
            else:
                await queue.put(_Ready(step, step_key, ready))

    async def _consume(
        self, queue: asyncio.Queue[_Ready | None], writer: _Writer, summary: RunSummary
    ) -> None:
        """One call slot: judge queued steps until told to stop."""
        while (ready := await queue.get()) is not None:
            step, key = ready.step, ready.prepared.key
            try:
                # Another worker (thread, process, replica) may be paying for this key right
                # now: wait for its judgment rather than pay twice (judge/judging/claims.py).
                hit = await self.claims.acquire(key)
            except JudgeError as exc:
                summary.errors.append((step, exc))
                continue
            if hit is not None:
                writer.add(Outcome(step, hit, cached=True), step=(ready.step_key, key))
                continue
            try:
                judgment, calls = await judge_prepared(
                    ready.prepared, step.case.id, _spec(step), self.rubric, self.params
                )
            except BaseException as exc:
                self.claims.release(key)
                if isinstance(exc, JudgeError):
                    summary.errors.append((step, exc))
                    continue
                raise
            writer.add(
                Outcome(step, judgment, cached=False),
                calls=calls,
                step=(ready.step_key, judgment.cache_key),
            )


def _spec(step: Step) -> StepSpec:
    return StepSpec(model=step.model, order=step.order, sample=step.sample, variant=step.variant)
