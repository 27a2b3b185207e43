"""What ``judge calibrate`` and ``judge compare`` can be asked, with their defaults: declared once
here, read by the workflow and by the command-line options (so this module imports only
pydantic, and ``judge calibrate --help`` stays fast)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from judge.base import Frozen
from judge.defaults import DEFAULT_GRID, ScoringKind

#: Days until a card expires.
DEFAULT_VALID_DAYS = 90

Kind = ScoringKind
Correction = Literal["holm", "bonferroni"]
CascadeMode = Literal["split", "shared"]
Failures = Literal["wrong", "exclude"]


class CalibrationOptions(Frozen):
    """Everything ``judge calibrate`` can be asked, with its defaults."""

    judges: tuple[str, ...] = Field(
        default=(),
        description="Judges to calibrate (several: a cascade, cheapest first, or a panel); "
        "empty: the only one.",
    )
    kind: Kind | None = Field(default=None, description="Rubric kind; default: from the labels.")
    alpha_accept: float = Field(
        default=0.15,
        description="Max P(gold=fail | auto-accepted); pairwise: max P(wrong | decided).",
    )
    alpha_reject: float | None = Field(
        default=None,
        description="Max P(gold=pass | auto-rejected) (binary; default: alpha_accept).",
    )
    delta: float = Field(
        default=0.1, description="The guarantee holds with probability >= 1 - delta."
    )
    grid: str = Field(
        default=DEFAULT_GRID,
        description="Thresholds fixed before the labels are read: levels:N | coverage:STEP | "
        "items | fixed:T1,T2,...",
    )
    starts: tuple[int, ...] = Field(
        default=(),
        description="Starting point(s) in items (each raised to max(30, n0)); several split "
        "delta (default: 30).",
    )
    slice_key: str | None = Field(
        default=None, description="Certify each value of this slice key on its own gold."
    )
    correction: Correction = "holm"
    calibrator: str = Field(
        default="none",
        description="A calibrator of the scores (calibration.confidence.CALIBRATORS), fitted "
        "on a cluster split kept apart from threshold picking; none: the scores as they are.",
    )
    calibration_split: float = Field(
        default=0.5, description="Share of task clusters the calibrator is fitted on."
    )
    cascade: bool = False
    cascade_mode: CascadeMode = Field(
        default="split",
        description="split: exact guarantee (disjoint gold per stage); shared: published, "
        "approximate.",
    )
    costs: dict[str, float] = Field(
        default_factory=dict,
        description="Judge name -> cost per item, for cascades (default: the recorded cost).",
    )
    panel: bool = False
    split_study: int = Field(
        default=0,
        description="Also run this many random half splits (calibrate on one, measure on the "
        "other).",
    )
    seed: int = 0
    n_boot: int = Field(default=1000, description="Bootstrap replicates for the metric intervals.")
    valid_days: int = Field(default=DEFAULT_VALID_DAYS, description="Days until the card expires.")

    def reject_alpha(self, kind: Kind) -> float | None:
        """The reject band's alpha: binary only, ``alpha_accept`` unless set."""
        if kind != "binary":
            return None
        return self.alpha_reject if self.alpha_reject is not None else self.alpha_accept


class CompareOptions(Frozen):
    """Everything ``judge compare`` can be asked, with its defaults."""

    judges: tuple[str, ...] = Field(
        default=(), description="Judges to compare (empty: every judge present)."
    )
    all_pairs: bool = Field(
        default=False,
        description="Paired differences for every pair, not only against the best judge.",
    )
    failures: Failures = Field(
        default="wrong", description="Count failed verdicts as wrong, or leave them out."
    )
    n_boot: int = 1000
    seed: int = 0
