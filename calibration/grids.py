"""Candidate thresholds for a band (label-free): grids registered by name (``GRIDS``), each
mapping the band scores to the thresholds a fixed sequence tests, from the scores alone, so the
sequence is fixed before any label is read (``calibration.bands``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from judge.errors import InputError

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray


@dataclass(frozen=True, slots=True)
class Grid:
    """A named grid strategy and its parameter, e.g. ``levels:5000`` or ``coverage:0.05``."""

    strategy: str
    param: str = ""

    @classmethod
    def parse(cls, text: str) -> Grid:
        """Parse ``name`` or ``name:param``; the name must be in ``GRIDS``."""
        name, _, param = text.partition(":")
        if name not in GRIDS:
            raise InputError(
                f"unknown grid {text!r}", field="grid", hint=f"use one of {', '.join(GRID_HELP)}"
            )
        grid = cls(name, param)
        grid.candidates(_np_empty(), 1.0)  # validate the parameter now, with a clear error
        return grid

    def describe(self) -> str:
        """Readable text for cards and reports."""
        return GRID_HELP[self.strategy].replace("PARAM", self.param or "-")

    def __str__(self) -> str:
        return f"{self.strategy}:{self.param}" if self.param else self.strategy

    def candidates(self, x: NDArray[np.float64], sign: float) -> NDArray[np.float64]:
        """Candidate thresholds on band scores ``x`` = sign * score (larger = more confident).

        ``sign`` is -1 for a reject band (selected when the score is at most the threshold), so
        that grids given on the score scale can be mirrored onto the band scale.
        """
        return GRIDS[self.strategy](x, sign, self.param)


def _np_empty() -> NDArray[np.float64]:
    import numpy as np

    return np.zeros(0)


def _param_number(param: str, kind: type, name: str, default: float) -> float:
    if not param:
        return default
    try:
        value = kind(param)
    except ValueError as exc:
        raise InputError(f"grid {name} needs a number, got {param!r}", field="grid") from exc
    if value <= 0:
        raise InputError(f"grid {name} needs a positive number, got {param!r}", field="grid")
    return float(value)


def _grid_levels(x: NDArray[np.float64], sign: float, param: str) -> NDArray[np.float64]:
    import numpy as np

    # Evenly spaced levels over [0, 1] of P(positive) or confidence (Trust or Escalate: 5,000).
    n = int(_param_number(param, int, "levels", 5000))
    return sign * np.linspace(0.0, 1.0, n)


def _grid_coverage(x: NDArray[np.float64], sign: float, param: str) -> NDArray[np.float64]:
    import numpy as np

    # Steps of coverage: the score of the item ranked ceil(j * step * N), j = 1, 2, ...
    step = _param_number(param, float, "coverage", 0.05)
    if x.size == 0:
        return x
    ordered = np.sort(x)[::-1]
    counts = step * x.size if step < 1 else step
    ranks = np.unique(np.minimum(np.ceil(np.arange(1, x.size + 1) * counts), x.size).astype(int))
    return np.asarray(ordered[ranks - 1], dtype=float)


def _grid_items(x: NDArray[np.float64], sign: float, param: str) -> NDArray[np.float64]:
    import numpy as np

    # Every distinct score: a scan over single items.
    return np.unique(x)


def _grid_fixed(x: NDArray[np.float64], sign: float, param: str) -> NDArray[np.float64]:
    import numpy as np

    try:
        values = [float(v) for v in param.split(",") if v.strip()]
    except ValueError as exc:
        raise InputError(
            f"grid fixed needs comma-separated numbers, got {param!r}", field="grid"
        ) from exc
    if not values:
        raise InputError("grid fixed needs at least one threshold", field="grid")
    return sign * np.array(values, dtype=float)


#: Grid strategies by name. Each maps band scores to candidate thresholds using scores only.
GRIDS: dict[str, Callable[[NDArray[np.float64], float, str], NDArray[np.float64]]] = {
    "levels": _grid_levels,
    "coverage": _grid_coverage,
    "items": _grid_items,
    "fixed": _grid_fixed,
}
GRID_HELP = {
    "levels": "levels:PARAM (PARAM evenly spaced levels over [0, 1]; Trust or Escalate used 5000)",
    "coverage": "coverage:PARAM (a threshold per PARAM of coverage: a fraction, or items if >= 1)",
    "items": "items (every distinct score: a scan over single items)",
    "fixed": "fixed:PARAM (the listed thresholds)",
}
