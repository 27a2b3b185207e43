"""The registry of rubric kinds: everything that differs between a pass/fail rubric and a
pairwise one, in one table instead of branches spread over the code.

A *rubric kind* (``binary``, ``pairwise``, ``multi-criterion``, ``fbd``) says what a rubric asks;
its *scoring kind* (``binary`` or ``pairwise``) says how its verdicts are scored, calibrated,
routed and reviewed (a multi-criterion rubric ends in pass or fail, so it scores as ``binary``);
its *case kind* (``agent_run`` or ``pairwise``) says which cases it judges. Calibration, routing,
review and gold export all read their labels from here. An ``fbd`` rubric (first bad decision)
locates the critical step of a failed run: it is in no scoring table (``SCORING``), so no verdict
card, metric or run-set rate ever reads its judgments as pass or fail; its own calibration is
``calibration.fbd``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any, Literal

from judge.types import ABSTAIN_LABEL, CaseKind, Order, ScoringKind

RubricKind = Literal["binary", "pairwise", "multi-criterion", "fbd"]


@dataclass(frozen=True)
class KindSpec:
    """One rubric kind: its labels and how they behave."""

    name: RubricKind
    scoring: ScoringKind
    case_kind: CaseKind
    #: The verdict labels, positive first (``P(positive)`` is the score of an item).
    labels: tuple[str, ...]
    #: Labels every rubric of this kind must list.
    required: frozenset[str]
    #: The label whose probability is the item's score, and the one a score below 1/2 decides.
    positive: str
    negative: str
    #: The decision at a score of exactly one half (a pairwise tie; binary stays undecided).
    half: str | None
    #: Vote weight of each label towards the positive one (a pairwise tie counts half).
    votes: Mapping[str, float]
    #: Label renaming when the answers are shown in the order B, A (empty: no orders).
    swap: Mapping[str, str] = field(default_factory=dict)
    #: Evidence parts shown by default (a rubric names its own; this is for rebuilding views).
    visible: tuple[str, ...] = ("task", "diff", "trace")
    #: An evidence part every rubric of this kind must show (the candidates of a pair).
    must_show: str | None = None
    #: The answer carries one verdict per criterion, and the rubric must list criteria.
    criteria: bool = False
    #: The answer is a first-bad-decision report over every step of a run (judge.steps): the
    #: evidence is the numbered steps, never a selection, and verdicts are not scored as pass or
    #: fail (the kind is in no scoring table).
    steps: bool = False

    @property
    def allowed(self) -> frozenset[str]:
        """Labels a rubric of this kind may list."""
        return frozenset(self.labels)

    @property
    def review_labels(self) -> tuple[str, ...]:
        """Labels a reviewer may give: the verdict labels and "cannot determine"."""
        return (*self.labels, ABSTAIN_LABEL)

    @property
    def gold_labels(self) -> tuple[str, ...]:
        """Labels a gold record of this kind may carry."""
        return self.labels

    @property
    def orders(self) -> tuple[Order | None, ...]:
        """The answer orders a case of this kind can be judged in."""
        return ("AB", "BA") if self.swap else (None,)

    def swapped(self, label: str) -> str:
        """``label`` in the other answer order (unchanged for labels that name no answer)."""
        return self.swap.get(label, label)


_SWAP = MappingProxyType({"A": "B", "B": "A"})


def _two_labels(name: RubricKind, positive: str, negative: str, **rest: Any) -> KindSpec:
    """A binary-scored kind of agent runs with two labels, both required: ``positive`` votes 1,
    ``negative`` 0, and there is no tie. ``rest``: the other fields of its spec."""
    return KindSpec(
        name=name,
        scoring="binary",
        case_kind="agent_run",
        labels=(positive, negative),
        required=frozenset({positive, negative}),
        positive=positive,
        negative=negative,
        half=None,
        votes=MappingProxyType({positive: 1.0, negative: 0.0}),
        **rest,
    )


#: A pass/fail rubric; a multi-criterion rubric is one with a verdict per criterion.
_BINARY = _two_labels("binary", "pass", "fail")

#: Rubric kind -> its spec. New kinds register here.
KINDS: Mapping[str, KindSpec] = MappingProxyType(
    {
        "binary": _BINARY,
        "pairwise": KindSpec(
            name="pairwise",
            scoring="pairwise",
            case_kind="pairwise",
            labels=("A", "B", "tie"),
            required=frozenset({"A", "B"}),
            positive="A",
            negative="B",
            half="tie",
            votes=MappingProxyType({"A": 1.0, "B": 0.0, "tie": 0.5}),
            swap=_SWAP,
            visible=("task", "candidates"),
            must_show="candidates",
        ),
        "multi-criterion": replace(_BINARY, name="multi-criterion", criteria=True),
        "fbd": _two_labels(
            "fbd", "located", "no_single_step", visible=("task", "trace"), steps=True
        ),
    }
)

#: Scoring kind -> its spec (the binary and pairwise rows of KINDS).
SCORING: Mapping[str, KindSpec] = MappingProxyType({k: KINDS[k] for k in ("binary", "pairwise")})

#: Every verdict or gold label any kind knows, in a fixed order (integer codes in calibration).
ALL_LABELS: tuple[str, ...] = tuple(
    dict.fromkeys(label for spec in SCORING.values() for label in spec.labels)
)


def kind(name: str) -> KindSpec:
    """The spec of a rubric or scoring kind; KeyError names the known ones."""
    try:
        return KINDS[name]
    except KeyError:
        raise KeyError(f"unknown rubric kind {name!r}; known: {', '.join(KINDS)}") from None


def for_case(case_kind: str) -> KindSpec:
    """The scoring kind that judges cases of ``case_kind`` (agent_run -> binary)."""
    for spec in SCORING.values():
        if spec.case_kind == case_kind:
            return spec
    raise KeyError(f"unknown case kind {case_kind!r}")


def from_labels(labels: set[str]) -> KindSpec | None:
    """The scoring kind whose labels these are (None when they fit none, or both)."""
    fits = [spec for spec in SCORING.values() if labels and labels <= set(spec.labels)]
    return fits[0] if len(fits) == 1 else None
