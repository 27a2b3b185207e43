"""Prepare a case's judgments once: redact, select evidence, render each planned prompt, key it.

A case judged in both answer orders, with several prompt variants or samples, is redacted and
its evidence selected once; only the rendering differs between its steps. Preparing is pure
CPU work with no store and no model: the runner does it in a process pool (so that the event
loop that waits on the model stays free), and a Ray worker does it beside its calls. Whoever
prepares, the result is the same: the cache key, prompt and provenance of every step, and the
stored (redacted) copy of the case.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from functools import cache
from pathlib import Path
from typing import Any

from judge import kinds
from judge.digests import cache_key_of, digest
from judge.errors import JudgeError
from judge.evidence import select_evidence
from judge.judging import composite
from judge.judging.composite import Gating
from judge.judging.masking import masked_origin
from judge.providers import ModelParams
from judge.rubrics import Rubric, load_rubric_dir
from judge.safety.injection import certain_flags, suspect_items
from judge.safety.redact import redact_case
from judge.steps import step_evidence
from judge.store.judgments import case_row
from judge.types import Case, Order, Provenance, Verdict
from judge.version import __version__


@dataclass(frozen=True)
class StepSpec:
    """What a step asks of its case (the case itself travels once per case)."""

    model: str
    order: Order | None = None
    sample: int = 0
    variant: int = 0


@dataclass
class PreparedStep:
    """A step ready to be sent: its prompt, cache key and provenance."""

    #: Position of the step in the list given to :func:`prepare_case`.
    index: int
    key: str
    messages: list[dict[str, str]]
    provenance: Provenance
    #: Evidence ids shown, in display order (citations are checked against them).
    shown: list[str]
    #: What the rubric's checks found (None: the rubric declares none), and the verdict they
    #: decide with no model call (judge.judging.composite).
    gating: Gating | None = None
    decided: Verdict | None = None


@dataclass
class PreparedCase:
    """A case's prepared steps, its store row, and the steps that could not be prepared."""

    case_row: dict[str, Any]
    steps: list[PreparedStep] = field(default_factory=list)
    errors: list[tuple[int, JudgeError]] = field(default_factory=list)


def params_for_sample(params: ModelParams, sample: int) -> ModelParams:
    """Each repeated sample gets its own seed, so repetitions can differ."""
    if sample == 0 or params.seed is None:
        return params
    return replace(params, seed=params.seed + sample)


def prepare_case(
    case: Case,
    specs: Sequence[StepSpec],
    rubric: Rubric,
    params: ModelParams,
    token_budget: int,
) -> PreparedCase:
    """Redact ``case`` (the copy the store keeps), select its evidence once, and render and key
    each of ``specs``. A step that cannot be prepared (e.g. a rubric that cannot render this
    case) is in ``errors``; the others are still prepared."""
    stored = redact_case(case)[0]
    out = PreparedCase(case_row=case_row(stored))
    try:
        if kinds.kind(rubric.kind).steps:
            # A diagnosing judge must be able to name any step: every step, numbered.
            evidence = step_evidence(case, stored, token_budget)
        else:
            evidence = select_evidence(
                case,
                visible=rubric.spec.evidence_visible,
                token_budget=token_budget,
                redacted=stored,
            )
    except JudgeError as exc:
        out.errors = [(index, exc) for index in range(len(specs))]
        return out
    # The deterministic checks first: their firings are evidence, a failing hard check decides.
    gating = composite.gate(case, rubric)
    decided = None
    if gating is not None:
        evidence, gating = composite.shown(gating, evidence)
        decided = composite.decided_verdict(rubric, gating)
    shown = [item.id for item in evidence.items]
    # Certain flags send the case to a person; uncertain ones to the second net (suspects).
    flagged = [item.id for item in evidence.items if certain_flags(item.flags)]
    masked_from, masked = masked_origin(case)
    # A masked copy is the check: its own remaining text is not checked again.
    suspects = {} if masked_from is not None else suspect_items(evidence.items)
    for index, spec in enumerate(specs):
        try:
            messages = rubric.render(case, evidence, order=spec.order, variant=spec.variant)
        except JudgeError as exc:
            out.errors.append((index, exc))
            continue
        sample_params = params_for_sample(params, spec.sample).cache_params()
        provenance = Provenance(
            rubric_id=rubric.id,
            rubric_version=rubric.version,
            rubric_digest=rubric.digest,
            model=spec.model,
            params=sample_params,
            prompt_digest=digest(messages),
            evidence_digest=evidence.digest,
            selector_version=evidence.selector_version,
            token_budget=evidence.token_budget,
            order=spec.order,
            sample=spec.sample,
            variant=spec.variant,
            evidence_ids=shown,
            flagged_evidence=flagged,
            judge_version=__version__,
            suspect_evidence=suspects,
            masked_from=masked_from,
            masked_evidence=masked,
        )
        out.steps.append(
            PreparedStep(
                index, cache_key_of(provenance), messages, provenance, shown, gating, decided
            )
        )
    return out


# --- in another process ---------------------------------------------------------------------


@cache
def _rubric_at(path: str, expected_digest: str) -> Rubric:
    rubric = load_rubric_dir(Path(path))
    if rubric.digest != expected_digest:
        # The folder changed since the parent loaded it: never prepare with other content.
        raise JudgeError(
            f"rubric {path} changed while judging (digest {rubric.digest}, "
            f"expected {expected_digest})"
        )
    return rubric


def prepare_elsewhere(
    case: Case,
    specs: Sequence[StepSpec],
    rubric_path: str,
    rubric_digest: str,
    params: ModelParams,
    token_budget: int,
) -> PreparedCase:
    """:func:`prepare_case` in a worker process: the rubric is loaded there from its folder
    (once per process) and checked against the parent's digest."""
    return prepare_case(case, specs, _rubric_at(rubric_path, rubric_digest), params, token_budget)


def default_prepare_workers() -> int:
    """Worker processes for preparing cases: one core stays with the event loop."""
    return max(0, min((os.cpu_count() or 1) - 1, 4))


def warm_up() -> None:
    """Nothing: sent to a new pool, it starts the processes and imports this module there."""


def watch_parent(pid: int, period_s: float = 1.0) -> None:
    """A pool process's initializer: end this process once ``pid`` (the process that started
    the pool) is gone. A pool's processes wait on their task queue forever otherwise, and a
    ``judge run`` killed with SIGKILL would leave them (and the forkserver) behind."""

    def watch() -> None:
        while True:
            time.sleep(period_s)
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                os._exit(0)
            except PermissionError:
                continue  # the pid exists (another user's now, or ours)

    threading.Thread(target=watch, daemon=True, name="watch-parent").start()
