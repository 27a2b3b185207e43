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
import hashlib
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import Literal

from judge import kinds
from judge.digests import cache_key, digest, sha256_hex
from judge.errors import InfraError, JudgeError, ParseError
from judge.evidence import DEFAULT_TOKEN_BUDGET, SELECTOR_VERSION, select_evidence
from judge.judging.claims import CallClaims
from judge.providers import AttemptLog, CallResult, ModelParams, call_model
from judge.redact import redact_case, redact_error, redact_judgment
from judge.rubrics import Rubric
from judge.store import Store, StoreUnavailable
from judge.types import ABSTAIN_LABEL, Case, Judgment, Order, Provenance, Status, Usage
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
    n_variants = rubric.n_variants if variants is None else max(1, min(variants,
                                                                       rubric.n_variants))
    steps: list[Step] = []
    for case in cases:
        kind_orders = kinds.kind(rubric.kind).orders
        case_orders: list[Order | None] = list(kind_orders if orders == "both" else kind_orders[:1])
        for model in models:
            for order in case_orders:
                for sample in range(samples):
                    for variant in range(n_variants):
                        steps.append(Step(case=case, model=model, order=order, sample=sample,
                                          variant=variant))
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
    h = hashlib.sha256(f"{__version__}|jinja2 {metadata.version('jinja2')}".encode())
    with _CODE_DIGEST_LOCK:
        imports = _judge_imports(root, __name__)
    for name, path in sorted(imports.items()):
        h.update(name.encode() + b"\0" + path.read_bytes() + b"\0")
    return "sha256:" + h.hexdigest()


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
        path = root / relative / "__init__.py" if (root / relative).is_dir() else (
            root / relative.with_suffix(".py"))
        if not path.is_file():
            continue
        found[name] = path
        for node in ast.walk(ast.parse(path.read_bytes(), filename=str(path))):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module and (
                node.module == "judge" or node.module.startswith("judge.")
            ):
                todo.append(node.module)
                todo.extend(f"{node.module}.{alias.name}" for alias in node.names)
            elif isinstance(node, ast.Import):
                todo.extend(a.name for a in node.names if a.name.startswith("judge."))
    return found


def params_for_sample(params: ModelParams, sample: int) -> ModelParams:
    """Each repeated sample gets its own seed, so repetitions can differ."""
    if sample == 0 or params.seed is None:
        return params
    return replace(params, seed=params.seed + sample)


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


class Runner:
    """Runs planned steps with bounded concurrency, storing each judgment as it finishes."""

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
    ) -> None:
        self.store = store
        self.rubric = rubric
        self.params = params
        self.token_budget = token_budget or rubric.spec.token_budget or DEFAULT_TOKEN_BUDGET
        self.concurrency = max(1, concurrency)
        self.on_done = on_done
        self.batch_id = batch_id or f"b-{uuid.uuid4().hex[:12]}"
        #: Ids of the cases this runner has stored in this run (each is stored once, before
        #: its first judgment that is not found by its step key).
        self._stored_cases: set[str] = set()
        #: Claims on the cache keys this runner pays for (one payment across processes).
        self.claims = CallClaims(store)

    def step_key(self, step: Step) -> str:
        """The identity of everything that decides a step's prompt and call, computed without
        selecting evidence: the case as given, rubric digest, evidence budget, model, the
        parameters in the cache key, order, sample, variant and :func:`code_digest`."""
        case_json = step.case.model_dump_json().encode("utf-8")
        return digest(
            {
                "code": code_digest(),
                "selector": SELECTOR_VERSION,
                "case": sha256_hex(case_json),
                "rubric": self.rubric.digest,
                "token_budget": self.token_budget,
                "model": step.model,
                "params": params_for_sample(self.params, step.sample).cache_params(),
                "order": step.order,
                "sample": step.sample,
                "variant": step.variant,
            }
        )

    async def judge_step(self, step: Step) -> Outcome:
        """Judge one step, from the store when already paid for."""
        step_key = self.step_key(step)
        known = self.store.cached_step(step_key)
        if known is not None:
            # Its case was stored by the run that made this judgment (same id, same content).
            return Outcome(step, known, cached=True)
        if step.case.id not in self._stored_cases:
            # The stored copy is shown to reviewers and exported: keep it without secrets.
            self.store.put_case(redact_case(step.case)[0])
            self._stored_cases.add(step.case.id)
        rubric = self.rubric
        evidence = select_evidence(
            step.case, visible=rubric.spec.evidence_visible, token_budget=self.token_budget
        )
        messages = rubric.render(step.case, evidence, order=step.order, variant=step.variant)
        params = params_for_sample(self.params, step.sample)
        prompt_digest = digest(messages)
        key = cache_key(
            rubric_digest=rubric.digest,
            evidence_digest=evidence.digest,
            prompt_digest=prompt_digest,
            model=step.model,
            params=params.cache_params(),
            order=step.order,
            sample=step.sample,
            variant=step.variant,
            selector_version=evidence.selector_version,
        )
        hit = self.store.cached(key)
        if hit is None:
            # Another worker (thread, process, replica) may be paying for this key right now:
            # wait for its judgment rather than pay twice (judge/judging/claims.py).
            hit = await self.claims.acquire(key)
        if hit is not None:
            self.store.remember_step(step_key, key)
            return Outcome(step, hit, cached=True)

        shown = [item.id for item in evidence.items]
        provenance = Provenance(
            rubric_id=rubric.id,
            rubric_version=rubric.version,
            rubric_digest=rubric.digest,
            model=step.model,
            params=params.cache_params(),
            prompt_digest=prompt_digest,
            evidence_digest=evidence.digest,
            selector_version=evidence.selector_version,
            token_budget=evidence.token_budget,
            order=step.order,
            sample=step.sample,
            variant=step.variant,
            evidence_ids=shown,
            flagged_evidence=[item.id for item in evidence.items if item.flags],
            judge_version=__version__,
        )
        log = AttemptLog()
        started = time.perf_counter()
        result: CallResult | None = None
        error: ParseError | InfraError | None = None
        try:
            result = await call_model(
                step.model, messages, rubric.answer_model(), rubric.all_labels, params, log=log
            )
        except (ParseError, InfraError) as exc:
            error = exc
        except BaseException:
            self.claims.release(key)
            raise
        elapsed = time.perf_counter() - started
        for attempt, entry in enumerate(log.entries, start=1):
            if entry.get("error"):
                entry = {**entry, "error": redact_error(str(entry["error"]))[0]}
            self.store.record_call(cache_key=key, model=step.model, attempt=attempt, **entry)
        # A model's answer may quote a secret (from the evidence or elsewhere): redact the
        # judgment's free text before it is stored, shown or exported.
        judgment = redact_judgment(
            self._judgment(step, key, provenance, result, error, elapsed, shown)
        )[0]
        try:
            self.store.put(judgment, batch_id=self.batch_id)
        finally:
            self.claims.release(key)
        self.store.remember_step(step_key, key)
        return Outcome(step, judgment, cached=False)

    def _judgment(
        self,
        step: Step,
        key: str,
        provenance: Provenance,
        result: CallResult | None,
        error: ParseError | InfraError | None,
        elapsed: float,
        shown: list[str],
    ) -> Judgment:
        judgment_id = "j-" + key.removeprefix("sha256:")[:20]
        if result is None:
            assert error is not None
            failure: Status = "parse_error" if isinstance(error, ParseError) else "infra_error"
            usage = Usage(
                prompt_tokens=int(error.usage.get("prompt_tokens", 0)),
                completion_tokens=int(error.usage.get("completion_tokens", 0)),
                latency_s=elapsed,
                attempts=error.attempts,
            )
            return Judgment(
                id=judgment_id, case_id=step.case.id, cache_key=key, status=failure,
                error=str(error), provenance=provenance, usage=usage,
                raw_output=error.last_output,
            )
        verdict = self.rubric.interpret(
            result.answer, shown_ids=shown, order=step.order, label_probs=result.label_probs
        )
        status: Status = "abstain" if verdict.label == ABSTAIN_LABEL else "ok"
        usage = Usage(
            prompt_tokens=result.prompt_tokens,
            completion_tokens=result.completion_tokens,
            cost_usd=result.cost_usd,
            latency_s=elapsed,
            attempts=result.attempts,
        )
        return Judgment(
            id=judgment_id, case_id=step.case.id, cache_key=key, status=status,
            verdict=verdict, provenance=provenance, usage=usage, raw_output=result.raw_output,
        )

    async def run(self, steps: Sequence[Step]) -> RunSummary:
        """Judge every step; a failure of one never stops the others."""
        summary = RunSummary(batch_id=self.batch_id)
        semaphore = asyncio.Semaphore(self.concurrency)
        started = time.perf_counter()

        async def guarded(step: Step) -> None:
            async with semaphore:
                try:
                    outcome = await self.judge_step(step)
                except StoreUnavailable:
                    raise  # the database went away: stop the batch (a rerun resumes it)
                except JudgeError as exc:
                    summary.errors.append((step, exc))
                    return
            summary.outcomes.append(outcome)
            summary.statuses[outcome.judgment.status] += 1
            if outcome.cached:
                summary.cached += 1
            else:
                summary.called += 1
                summary.prompt_tokens += outcome.judgment.usage.prompt_tokens
                summary.completion_tokens += outcome.judgment.usage.completion_tokens
            if self.on_done is not None:
                self.on_done(outcome)

        self._stored_cases = set()
        await asyncio.gather(*(guarded(step) for step in steps))
        summary.seconds = time.perf_counter() - started
        return summary
