"""The checks of what callers give the PPI estimators and label plans (``calibration.ppi``,
``calibration.label_plans``): scores, labels, run and task ids, weights and inclusion
probabilities, each turned into arrays or refused with an InputError that says what to give."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from judge.errors import InputError

if TYPE_CHECKING:
    import numpy as np

#: Label values read as a pass / a fail (besides 1 / 0 and True / False).
PASS_VALUES = frozenset({"pass", "1", "true"})
FAIL_VALUES = frozenset({"fail", "0", "false"})


def length_of(values: Sequence[Any] | np.ndarray | Mapping[str, Any], name: str) -> int:
    """``len(values)``; an InputError on ``name`` when it has none."""
    try:
        return len(values)
    except TypeError as err:
        raise InputError(f"expected a sequence, got {type(values).__name__}", field=name) from err


def checked_run_ids(run_ids: Sequence[str] | None, n: int) -> list[str]:
    """The run ids as strings (0..n-1 when not given): one per run, none twice."""
    if run_ids is None:
        return [str(i) for i in range(n)]
    ids = [str(r) for r in run_ids]
    if len(ids) != n:
        raise InputError(
            f"{len(ids)} run ids for {n} runs",
            field="run_ids",
            hint="give one id per run, in the order of the scores",
        )
    if len(set(ids)) != n:
        seen: set[str] = set()
        dup = ""
        for r in ids:
            if r in seen:
                dup = r
                break
            seen.add(r)
        raise InputError(
            f"duplicate run id {dup!r}", field="run_ids", hint="each run must have its own id"
        )
    return ids


def checked_scores(scores: Sequence[float] | np.ndarray, n: int | None = None) -> np.ndarray:
    """The judge's scores as an array: one number in [0, 1] per run."""
    import numpy as np

    try:
        f = np.asarray(scores, dtype=float)
    except (TypeError, ValueError) as err:
        raise InputError(f"scores must be numbers in [0, 1]: {err}", field="scores") from err
    if f.ndim != 1:
        raise InputError("scores must be one number per run", field="scores")
    if n is not None and f.size != n:
        raise InputError(
            f"{f.size} scores for {n} runs", field="scores", hint="give one judge score per run"
        )
    _refuse_out_of_range(
        f,
        ~np.isfinite(f) | (f < 0) | (f > 1),
        what="score",
        interval="[0, 1]",
        field="scores",
        hint="pass P(pass) or the 0/1 verdict; a failed judgment has no score",
    )
    return f


def _refuse_out_of_range(
    values: np.ndarray, bad: np.ndarray, *, what: str, interval: str, field: str, hint: str
) -> None:
    """An InputError naming the first run whose value is ``bad`` (out of ``interval``)."""
    import numpy as np

    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise InputError(
            f"{what} {values[i]!r} of run {i} is not in {interval}", field=field, hint=hint
        )


def label_value(v: Any, where: str) -> float | None:
    """A label as 1.0 (pass) or 0.0 (fail); None when the run is unlabelled."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return None
    if isinstance(v, bool):
        return float(v)
    if isinstance(v, int | float) and v in (0, 1):
        return float(v)
    if isinstance(v, str) and v.strip().lower() in PASS_VALUES | FAIL_VALUES:
        return 1.0 if v.strip().lower() in PASS_VALUES else 0.0
    try:  # numpy scalars
        if float(v) in (0.0, 1.0):
            return float(v)
    except (TypeError, ValueError):
        pass
    raise InputError(
        f"label {v!r} of {where} is not 0/1 or pass/fail",
        field="labels",
        hint="human labels are binary; leave unlabelled runs as None",
    )


def checked_labels(
    labels: Sequence[Any] | np.ndarray | Mapping[str, Any], ids: list[str]
) -> tuple[np.ndarray, np.ndarray]:
    """(y, labelled mask) from labels aligned with the runs (None = unlabelled) or a mapping
    run id -> label."""
    import numpy as np

    n = len(ids)
    y = np.zeros(n)
    lab = np.zeros(n, bool)
    if isinstance(labels, Mapping):
        index = {r: i for i, r in enumerate(ids)}
        for run, v in labels.items():
            i = index.get(str(run))
            if i is None:
                raise InputError(
                    f"label for unknown run {run!r}",
                    field="labels",
                    hint="label ids must be among the run ids",
                )
            value = label_value(v, f"run {run!r}")
            if value is not None:
                y[i], lab[i] = value, True
    else:
        if length_of(labels, "labels") != n:
            raise InputError(
                f"{len(labels)} labels for {n} runs",
                field="labels",
                hint="one entry per run, None where unlabelled",
            )
        for i, v in enumerate(labels):
            value = label_value(v, f"run {ids[i]!r}")
            if value is not None:
                y[i], lab[i] = value, True
    return y, lab


def checked_probs(probs: Sequence[float] | np.ndarray | None, n: int) -> np.ndarray | None:
    """Inclusion probabilities as an array, one in (0, 1] per run (None when not given)."""
    import numpy as np

    if probs is None:
        return None
    try:
        p = np.asarray(probs, dtype=float)
    except (TypeError, ValueError) as err:
        raise InputError(f"probabilities must be numbers: {err}", field="probs") from err
    if p.ndim != 1 or p.size != n:
        raise InputError(
            f"{p.size} inclusion probabilities for {n} runs",
            field="probs",
            hint="one inclusion probability per run (the label plan's)",
        )
    _refuse_out_of_range(
        p,
        ~np.isfinite(p) | (p <= 0) | (p > 1),
        what="inclusion probability",
        interval="(0, 1]",
        field="probs",
        hint="every run must have a chance to be labelled",
    )
    return p


def codes(values: Sequence[Any] | None, n: int, name: str) -> tuple[np.ndarray, list[Any]]:
    """Codes 0..k-1 of the values in order of appearance, and the values (each run its own
    code when not given)."""
    import numpy as np

    if values is None:
        return np.arange(n, dtype=np.int64), list(range(n))
    if length_of(values, name) != n:
        raise InputError(f"{len(values)} {name} for {n} runs", field=name, hint="one entry per run")
    index: dict[Any, int] = {}
    codes = [index.setdefault(v, len(index)) for v in values]
    return np.asarray(codes, dtype=np.int64), list(index)


def run_weights(
    weights: Sequence[float] | np.ndarray | None, task: np.ndarray, group: np.ndarray
) -> np.ndarray:
    """Caller's weights, or the macro weights 1 / (runs of the task in the group)."""
    import numpy as np

    n = task.size
    if weights is not None:
        try:
            w = np.asarray(weights, dtype=float)
        except (TypeError, ValueError) as err:
            raise InputError(f"weights must be numbers: {err}", field="weights") from err
        if w.ndim != 1 or w.size != n:
            raise InputError(f"{w.size} weights for {n} runs", field="weights")
        if (~np.isfinite(w) | (w < 0)).any():
            raise InputError("weights must be finite and >= 0", field="weights")
        return w
    key = task * (int(group.max()) + 1 if n else 1) + group
    _, inverse, counts = np.unique(key, return_inverse=True, return_counts=True)
    return 1.0 / counts[inverse.reshape(-1)]
