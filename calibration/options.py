"""What ``judge calibrate`` and ``judge compare`` can be asked, with their defaults: declared once
here, read by the workflow and by the command-line options (so this module imports only
pydantic, and ``judge calibrate --help`` stays fast)."""

from __future__ import annotations

from typing import Literal, get_args

from pydantic import Field

from judge.base import Frozen
from judge.defaults import DEFAULT_GRID, ScoringKind

#: Days until a card expires.
DEFAULT_VALID_DAYS = 90

Kind = ScoringKind
Correction = Literal["holm", "bonferroni"]
CascadeMode = Literal["split", "shared"]
Failures = Literal["wrong", "exclude"]
#: The test of one threshold: an upper bound on the band's error rate at a level
#: (calibration.bands.TESTS holds the bounds).
TestName = Literal["clopper-pearson", "hoeffding-bentkus"]
DEFAULT_TEST: TestName = "clopper-pearson"

#: How a panel combines its members' scores (calibration.panel computes them).
PanelRule = Literal["logodds", "mean", "fitted", "pooled"]
DEFAULT_PANEL_RULE: PanelRule = "logodds"
#: What each rule computes, for cards and help texts.
PANEL_RULES: dict[str, str] = {
    "logodds": "sigmoid(mean of the members' logit(p)): the geometric mean of their odds "
    "(ranks and decides as the summed log-odds)",
    "mean": "the mean of the members' probabilities",
    "fitted": "a logistic model of P(the summed log-odds decision is right) on the members' "
    "signed log-odds, fitted on a label-free cluster split of the gold and certified on the rest",
    "pooled": "every row of every member pooled into one mean or vote share (before rules)",
}


def combines_members(rule: str | None) -> bool:
    """Whether a panel with this rule combines its members' own scores: every rule but
    ``pooled``, the way panels were made before rules were declared (every verdict row of every
    member pooled as if one judge's, kept so that those cards can be reproduced). A panel whose
    rule combines binds each member on its own, starts at PANEL_START_SHARE on the PANEL_GRID,
    takes no calibrator, and is routed by its rule; a pooled panel is calibrated like one judge
    (the default grid and start, a calibrator allowed), binds no member, and cannot be routed."""
    return rule is not None and rule != "pooled"


#: A panel's default starting point: the band holding the top 40% of the calibration items
#: (fixed before labels; see CALIBRATION_RESULTS.md, "Panel cards").
PANEL_START_SHARE = 0.4
#: A panel's default grid: every distinct combined score (a summed log-odds has no natural
#: levels, and vote-share members make large ties that an evenly spaced grid over [0, 1] merges
#: near 1: LLMBar's top two tiers, 121 and 425 items, both lie above its level 0.9998).
PANEL_GRID = "items"


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
    grid: str | None = Field(
        default=None,
        description="Thresholds fixed before the labels are read: levels:N | coverage:STEP | "
        f"items | fixed:T1,T2,... (default: {DEFAULT_GRID}; a panel, rule other than pooled: "
        f"{PANEL_GRID}, every distinct score).",
    )
    starts: tuple[int, ...] = Field(
        default=(),
        description="Starting point(s) in items (each raised to max(30, n0)); several split "
        "delta (default, with no --start-share either: 30; a panel: --start-share 0.4).",
    )
    start_shares: tuple[float, ...] = Field(
        default=(),
        description="Starting point(s) as shares of the calibration items (0.4: the band "
        "holding the top 40%); fixed before the labels; with --start, all split delta. "
        f"Default for a panel (rule other than pooled): {PANEL_START_SHARE}.",
    )
    test: TestName = Field(
        default=DEFAULT_TEST,
        description="The bound each threshold is tested with: "
        + " | ".join(get_args(TestName))
        + ".",
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
        default=0.5,
        description="Share of task clusters the calibrator (or the fitted panel rule) is "
        "fitted on.",
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
    panel_rule: PanelRule = Field(
        default=DEFAULT_PANEL_RULE,
        description="How a panel combines its judges' scores, declared before the labels: "
        + "; ".join(f"{name}: {text}" for name, text in PANEL_RULES.items())
        + ".",
    )
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
