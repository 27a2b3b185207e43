"""The Inspect scorer ``judge/calibrated``: judge's calibrated verdict on each sample.

Usage (inspect_ai 0.3.285 has no ``inspect eval --scorer``; score a log after the eval, or
put ``calibrated(...)`` in a task's ``scorer=``)::

    inspect score LOG.eval --scorer judge/calibrated -S card=card.yaml \\
        [-S rubric=agent-run-success@2] [-S model=openai/gpt-4o-mini] \\
        [-S db=judge.db] [-S api_base=http://...] --action append --overwrite

Arguments (``-S key=value``): ``rubric`` (id or id@version), ``model`` (a litellm model id),
``card`` (a calibration card's YAML file, or the digest of a card kept in the store), ``db``
(the store: a SQLite path or a ``postgresql://`` URL; default ``$JUDGE_DB``, else
``judge.db``), ``api_base`` (an OpenAI-compatible base URL). Without ``rubric`` / ``model``
the card's judge is used, and without a card ``judge run``'s defaults.

Each sample is turned into a case the way ``judge import`` turns a logged sample into one
(:func:`judge.traces.inspect_case`: task, trace, diff; scores this scorer wrote before are
left out), judged through the store (a sample judged before calls no model), and routed with
the card (:mod:`judge.scorer.verdicts`). The Score: ``C`` / ``I`` when the card auto-accepts /
auto-rejects; otherwise ``Score.unscored`` (value NaN: Inspect leaves it out of metrics and
counts it in ``unscored_samples``) with ``reason`` ``needs_review`` or ``grader_failed``;
``answer`` is the judge's label, ``explanation`` its rationale and the evidence ids it cited,
``metadata`` P(pass), the route (decision, reason), the card's band, the judgment ids and the
card digest. The judging is synchronous (litellm in its own event loop): it runs in a worker
thread, off Inspect's event loop.

This module imports inspect_ai at the top, unlike the rest of judge: the decorator must run
when Inspect loads the entry point, and only Inspect (which has imported inspect_ai already)
loads it.
"""

from __future__ import annotations

from typing import Any

import anyio.to_thread
from inspect_ai.scorer import Score, Scorer, Target, accuracy, scorer, stderr
from inspect_ai.solver import TaskState

import judge.traces
from judge.scorer.verdicts import GRADER_FAILED, MARK, CalibratedJudge, ScoreParts


def _registry_name() -> str:
    """The name to register, so that Inspect finds it as ``judge/calibrated`` however judge is
    installed. Inspect prefixes a scorer with its top-level package only when the module lies in
    site-packages or the distribution named like the package is installed editable; this one is
    ``calibrated-judge``, so an editable install (``make test``, a clone) got ``calibrated``
    alone and ``--scorer judge/calibrated`` was not found."""
    try:
        from inspect_ai._util.package import get_installed_package_name
    except ImportError:  # a later inspect_ai: trust its own prefixing
        return "calibrated"
    return "calibrated" if get_installed_package_name(_registry_name) == "judge" else NAME


#: The scorer's name in Inspect.
NAME = "judge/calibrated"


@scorer(metrics=[accuracy(), stderr()], name=_registry_name())
def calibrated(
    rubric: str | None = None,
    model: str | None = None,
    card: str | None = None,
    db: str | None = None,
    api_base: str | None = None,
) -> Scorer:
    """judge's verdict on each sample: C / I where the calibration card decides, unscored
    (for people) where it does not."""
    judging = CalibratedJudge.from_args(
        rubric=rubric, model=model, card=card, db=db, api_base=api_base
    )

    async def score(state: TaskState, target: Target) -> Score:
        case, errors = judge.traces.inspect_case(
            sample_of(state, target),
            model=str(state.model),
            where=f"sample {state.sample_id!r} epoch {state.epoch}",
        )
        if case is None:
            return Score.unscored(
                reason=GRADER_FAILED,
                explanation="the sample cannot be judged: "
                + ("; ".join(str(e) for e in errors) or "it makes no case"),
            )
        parts = await anyio.to_thread.run_sync(judging.score, case)
        return to_score(parts)

    return score


def sample_of(state: TaskState, target: Target) -> dict[str, Any]:
    """The ``EvalSample`` JSON of a task state (what ``judge import`` reads from a log)."""
    return {
        "id": state.sample_id,
        "epoch": state.epoch,
        "uuid": state.uuid,
        "input": state.input if isinstance(state.input, str) else [_dump(m) for m in state.input],
        "target": target.target[0] if len(target.target) == 1 else list(target.target),
        "messages": [_dump(m) for m in state.messages],
        "metadata": dict(state.metadata or {}),
        "scores": {
            name: _dump(s)
            for name, s in (state.scores or {}).items()
            if MARK not in (s.metadata or {})
        },
    }


def _dump(model: Any) -> Any:
    return model.model_dump(mode="json", exclude_none=True)


def to_score(parts: ScoreParts) -> Score:
    """An Inspect Score: C / I, or unscored with its reason."""
    if parts.value is None:
        return Score.unscored(
            reason=parts.reason,
            answer=parts.answer,
            explanation=parts.explanation,
            metadata=parts.metadata,
        )
    return Score(
        value=parts.value,
        answer=parts.answer,
        explanation=parts.explanation,
        metadata=parts.metadata,
    )
