"""First bad decision: a judge's step scores measured against people's critical steps, and a
certified step set.

A diagnosing judge gives each step of a failed run a score (the share of its samples that named
the step, or any probability). Against gold runs whose critical step people labelled, this
module measures the judge's single step (the highest score; ties go to the earliest step) as
exact, within 1 and within 3 steps, and as the same agent, each with a Wilson interval, beside
the baselines that need no judge: a uniformly random step, the first step and the last step.
Steps are 0-based integer indexes compared as integers, never as strings.

A single step is a weak promise (two expert teams name the same step about a third of the time),
so the card certifies a **step set** instead: a threshold ``t`` on the step scores such that the
set ``{j : score_j >= t}`` holds the human critical step with probability at least ``1 - alpha``
on a new run exchangeable with the calibration runs (split conformal). With ``s_i`` the score the
judge gave run ``i``'s gold step (0 for a step it did not score), ``t`` is the ``k``-th smallest
of the ``n`` scores, ``k = floor(alpha * (n + 1))``. A new run's gold step falls outside its set
only if its score is below ``t``, i.e. among the ``k`` smallest of ``n + 1`` exchangeable scores:
probability at most ``k / (n + 1) <= alpha`` (ties broken at random; ties only help). With
``k = 0`` (too few runs for ``alpha``) the threshold is 0 and every set is the whole run: the
guarantee holds trivially and the card says so. Runs whose gold says "no single step" (null)
are left out of the threshold and counted.

Recorded step scores (``load_recorded_steps``), one JSON line per (run, judge)::

    {"item_id": "...", "judge": "...", "n_steps": 10,
     "step_scores": {"3": 0.6, "4": 0.2}, "gold_step": 3}

with optional ``gold_agent`` and ``step_agents`` (the speaking agent of every step, for
same-agent accuracy) and ``abstained`` (the judge said "no single step" / "cannot determine").
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import Field, ValidationError

from calibration.card import GoldRef, JudgeSection
from calibration.intervals import wilson
from calibration.options import DEFAULT_VALID_DAYS
from judge.base import Strict
from judge.digests import digest, utcnow
from judge.errors import CardError, InputError, first_error

#: Within how many steps a located step counts as near the human one (issue: exact, 1, 3).
TOLERANCES = (0, 1, 3)
FBD_KIND: Literal["fbd"] = "fbd"
FBD_CARD_VERSION: Literal[1] = 1
METHOD = "split conformal"


@dataclass(frozen=True)
class StepRun:
    """One (run, judge): the judge's score per step and the people's critical step."""

    item_id: str
    judge: str
    n_steps: int
    #: Score of every step, 0-based, length ``n_steps`` (0 for a step the judge did not score).
    scores: tuple[float, ...]
    gold_step: int | None
    gold_agent: str | None = None
    step_agents: tuple[str, ...] | None = None
    abstained: bool = False

    @property
    def located(self) -> int | None:
        """The judge's single step: the highest score, earliest on ties; None if it abstained
        or scored no step above 0."""
        if self.abstained or not self.scores or max(self.scores) <= 0:
            return None
        best = max(self.scores)
        return self.scores.index(best)

    def gold_score(self) -> float:
        """The score the judge gave the gold step (the run must have one)."""
        assert self.gold_step is not None
        return self.scores[self.gold_step]


def step_run(
    item_id: str,
    judge: str,
    n_steps: int,
    step_scores: Mapping[int, float],
    gold_step: int | None,
    *,
    gold_agent: str | None = None,
    step_agents: Sequence[str] | None = None,
    abstained: bool = False,
    where: str = "",
) -> StepRun:
    """A checked ``StepRun``: indexes in range, scores finite in [0, 1]; errors say where."""
    if n_steps < 1:
        raise InputError(f"{where}the run has no steps (n_steps {n_steps})", field="n_steps")
    scores = [0.0] * n_steps
    for index, score in step_scores.items():
        if not 0 <= index < n_steps:
            raise InputError(
                f"{where}step {index} is out of range: the run has {n_steps} steps "
                f"(0-{n_steps - 1})",
                field="step_scores",
            )
        if not (isinstance(score, int | float) and math.isfinite(score) and 0 <= score <= 1):
            raise InputError(
                f"{where}the score of step {index} is {score!r}: scores are numbers in [0, 1]",
                field="step_scores",
            )
        scores[index] = float(score)
    if gold_step is not None and not 0 <= gold_step < n_steps:
        raise InputError(
            f"{where}gold_step {gold_step} is out of range: the run has {n_steps} steps "
            f"(0-{n_steps - 1})",
            field="gold_step",
        )
    if step_agents is not None and len(step_agents) != n_steps:
        raise InputError(
            f"{where}step_agents names {len(step_agents)} agents for {n_steps} steps",
            field="step_agents",
        )
    return StepRun(
        item_id=item_id,
        judge=judge,
        n_steps=n_steps,
        scores=tuple(scores),
        gold_step=gold_step,
        gold_agent=gold_agent,
        step_agents=tuple(step_agents) if step_agents is not None else None,
        abstained=abstained,
    )


# --- Recorded step scores ---------------------------------------------------------------------


class _RecordedSteps(Strict):
    item_id: str = Field(min_length=1)
    judge: str = Field(min_length=1)
    n_steps: int
    step_scores: dict[int, float] = Field(default_factory=dict)
    gold_step: int | None = None
    gold_agent: str | None = None
    step_agents: list[str] | None = None
    abstained: bool = False


def iter_recorded_steps(path: str | Path) -> Iterator[StepRun]:
    """The runs of a recorded step-score file; bad lines raise InputError naming the file,
    the line and the field."""
    file = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as err:
        raise InputError(f"cannot read: {err.strerror}", file=file) from err
    for line_no, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            raw = json.loads(line)
        except json.JSONDecodeError as err:
            raise InputError(f"not JSON: {err.msg}", file=file, line=line_no) from err
        try:
            rec = _RecordedSteps.model_validate(raw)
        except ValidationError as err:
            raise first_error(err, file=file, line=line_no) from err
        try:
            yield step_run(
                rec.item_id,
                rec.judge,
                rec.n_steps,
                rec.step_scores,
                rec.gold_step,
                gold_agent=rec.gold_agent,
                step_agents=rec.step_agents,
                abstained=rec.abstained,
            )
        except InputError as err:
            raise InputError(err.reason, file=file, line=line_no, field=err.field) from err


def load_recorded_steps(path: str | Path, judge: str | None = None) -> list[StepRun]:
    """Every run of a recorded step-score file (only ``judge``'s, when given)."""
    return [r for r in iter_recorded_steps(path) if judge is None or r.judge == judge]


# --- Accuracy ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Rate:
    """``k`` of ``n`` with a 95% Wilson interval."""

    k: int
    n: int
    low: float
    high: float

    @property
    def value(self) -> float | None:
        return self.k / self.n if self.n else None

    def as_dict(self) -> dict[str, Any]:
        value = self.value
        return {
            "k": self.k,
            "n": self.n,
            "rate": None if value is None else round(value, 6),
            "ci95": [round(self.low, 6), round(self.high, 6)],
        }


def rate(k: int, n: int) -> Rate:
    low, high = wilson(k, n)
    return Rate(k, n, low, high)


def _labelled(runs: Iterable[StepRun]) -> list[StepRun]:
    return [r for r in runs if r.gold_step is not None]


def step_accuracy(runs: Sequence[StepRun]) -> dict[str, Any]:
    """Exact, within 1 and 3 steps, same agent and abstention of the judge's single step, over
    the runs with a gold step (an abstention counts as not located)."""
    gold = _labelled(runs)
    n = len(gold)
    out: dict[str, Any] = {"n_runs": len(runs), "n_gold_step": n, "n_no_single_step": len(runs) - n}
    located = [r.located for r in gold]
    for tol in TOLERANCES:
        hits = sum(
            1
            for r, step in zip(gold, located, strict=True)
            if step is not None and abs(step - (r.gold_step or 0)) <= tol
        )
        out["exact" if tol == 0 else f"within_{tol}"] = rate(hits, n).as_dict()
    with_agents = [
        (r, s) for r, s in zip(gold, located, strict=True) if r.gold_agent and r.step_agents
    ]
    same = sum(
        1
        for r, s in with_agents
        if s is not None and r.step_agents and r.step_agents[s] == r.gold_agent
    )
    out["same_agent"] = rate(same, len(with_agents)).as_dict()
    out["abstention"] = rate(sum(1 for s in located if s is None), n).as_dict()
    return out


def baselines(runs: Sequence[StepRun]) -> dict[str, dict[str, Any]]:
    """Accuracy of judges that read nothing: a uniformly random step (its expected hits),
    the first step and the last step."""
    gold = _labelled(runs)
    n = len(gold)
    out: dict[str, dict[str, Any]] = {"random": {}, "first": {}, "last": {}}
    for tol in TOLERANCES:
        name = "exact" if tol == 0 else f"within_{tol}"
        expected = sum(_window(r.n_steps, r.gold_step or 0, tol) / r.n_steps for r in gold)
        out["random"][name] = {"n": n, "rate": round(expected / n, 6) if n else None}
        for base, pick in (("first", lambda r: 0), ("last", lambda r: r.n_steps - 1)):
            hits = sum(1 for r in gold if abs(pick(r) - (r.gold_step or 0)) <= tol)
            out[base][name] = rate(hits, n).as_dict()
    return out


def _window(n_steps: int, step: int, tol: int) -> int:
    """How many steps lie within ``tol`` of ``step`` in a run of ``n_steps``."""
    return min(n_steps - 1, step + tol) - max(0, step - tol) + 1


# --- Certified step sets ----------------------------------------------------------------------


@dataclass(frozen=True)
class StepSetPolicy:
    """A split-conformal threshold on step scores."""

    alpha: float
    threshold: float
    n: int
    k: int
    n_no_single_step: int

    @property
    def trivial(self) -> bool:
        """Too few runs for ``alpha``: every set is the whole run."""
        return self.k == 0

    def statement(self) -> str:
        if self.trivial:
            return (
                f"with {self.n} calibration runs no threshold certifies alpha {self.alpha:g} "
                f"(needs at least {math.ceil(1 / self.alpha) - 1}): every set is the whole run"
            )
        return (
            f"on a new run exchangeable with these {self.n} runs, the steps scoring >= "
            f"{self.threshold:.6g} contain the people's critical step with probability >= "
            f"{1 - self.alpha:g} (split conformal, k = {self.k} of n + 1 = {self.n + 1})"
        )


def certify_step_set(runs: Sequence[StepRun], alpha: float) -> StepSetPolicy:
    """The split-conformal threshold (see the module docstring)."""
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must lie in (0, 1), got {alpha}")
    gold = _labelled(runs)
    scores = sorted(r.gold_score() for r in gold)
    n = len(scores)
    k = math.floor(alpha * (n + 1))
    threshold = scores[k - 1] if k >= 1 else 0.0
    return StepSetPolicy(alpha=alpha, threshold=threshold, n=n, k=k, n_no_single_step=len(runs) - n)


def step_set(run: StepRun, threshold: float) -> list[int]:
    """The 0-based steps of ``run`` scoring at or above ``threshold`` (all steps at 0)."""
    return [j for j, s in enumerate(run.scores) if s >= threshold]


def set_summary(runs: Sequence[StepRun], threshold: float) -> dict[str, Any]:
    """Coverage of the gold step, mean set size (steps and share of the run), and the share of
    runs located (a set of one step)."""
    sets = [step_set(r, threshold) for r in runs]
    gold = [(r, s) for r, s in zip(runs, sets, strict=True) if r.gold_step is not None]
    covered = sum(1 for r, s in gold if r.gold_step in s)
    n = len(runs)
    return {
        "n_runs": n,
        "coverage": rate(covered, len(gold)).as_dict(),
        "mean_set_size": round(sum(len(s) for s in sets) / n, 6) if n else None,
        "mean_set_share": (
            round(sum(len(s) / r.n_steps for r, s in zip(runs, sets, strict=True)) / n, 6)
            if n
            else None
        ),
        "located": rate(sum(1 for s in sets if len(s) == 1), n).as_dict(),
    }


@dataclass(frozen=True)
class SplitCheck:
    """Held-out coverage of the certified set over random calibration/test splits."""

    draws: int
    alpha: float
    mean_coverage: float
    min_coverage: float
    mean_set_share: float
    coverages: list[float] = field(repr=False)


def split_check(
    runs: Sequence[StepRun], alpha: float, *, draws: int = 200, share: float = 0.5, seed: int = 0
) -> SplitCheck:
    """Certify on a random ``share`` of the gold runs, measure coverage on the rest, ``draws``
    times: the mean held-out coverage should be at least ``1 - alpha``."""
    gold = _labelled(runs)
    if len(gold) < 4:
        raise ValueError(f"a split check needs at least 4 runs with a gold step, got {len(gold)}")
    rng = random.Random(seed)
    coverages: list[float] = []
    shares: list[float] = []
    cut = max(1, min(len(gold) - 1, round(share * len(gold))))
    for _ in range(draws):
        order = list(gold)
        rng.shuffle(order)
        calib, test = order[:cut], order[cut:]
        threshold = certify_step_set(calib, alpha).threshold
        sets = [step_set(r, threshold) for r in test]
        coverages.append(
            sum(1 for r, s in zip(test, sets, strict=True) if r.gold_step in s) / len(test)
        )
        shares.append(sum(len(s) / r.n_steps for r, s in zip(test, sets, strict=True)) / len(test))
    return SplitCheck(
        draws=draws,
        alpha=alpha,
        mean_coverage=sum(coverages) / draws,
        min_coverage=min(coverages),
        mean_set_share=sum(shares) / draws,
        coverages=coverages,
    )


# --- The card ---------------------------------------------------------------------------------


class StepPolicySection(Strict):
    alpha: float
    threshold: float
    n: int
    k: int
    n_no_single_step: int
    method: str = METHOD
    statement: str
    mean_set_share: float | None
    located_share: float | None
    #: How a run is routed: a set of one step is "located"; anything else goes to review.
    rule: str = "a run whose set is a single step is located; any other set goes to review"


class StepCalibrationSection(Strict):
    kind: Literal["fbd"] = FBD_KIND
    gold: GoldRef
    metrics: dict[str, Any]
    baselines: dict[str, Any]
    sets: dict[str, Any]


class StepCard(Strict):
    """A first-bad-decision card: what the judge's step scores were measured on, the certified
    threshold and until when it holds."""

    card_version: Literal[1] = FBD_CARD_VERSION
    judge: JudgeSection
    calibration: StepCalibrationSection
    policy: StepPolicySection
    created_at: datetime
    expires_at: datetime
    card_digest: str = ""

    def computed_digest(self) -> str:
        return digest(self.model_dump(mode="json", exclude={"card_digest"}))

    def sealed(self) -> StepCard:
        return self.model_copy(update={"card_digest": self.computed_digest()})

    def to_yaml(self) -> str:
        return yaml.safe_dump(self.model_dump(mode="json"), sort_keys=False, allow_unicode=True)


def build_step_card(
    runs: Sequence[StepRun],
    *,
    judge: JudgeSection,
    gold: GoldRef,
    alpha: float,
    created_at: datetime | None = None,
    valid_days: int = DEFAULT_VALID_DAYS,
) -> StepCard:
    """Measure ``runs`` (one judge) and certify its step set at ``alpha``."""
    policy = certify_step_set(runs, alpha)
    sets = set_summary(runs, policy.threshold)
    created = (created_at or utcnow()).replace(microsecond=0)
    located = sets["located"]["rate"]
    return StepCard(
        judge=judge,
        calibration=StepCalibrationSection(
            gold=gold, metrics=step_accuracy(runs), baselines=baselines(runs), sets=sets
        ),
        policy=StepPolicySection(
            alpha=alpha,
            # A score from the data, not a fitted number: kept exact (rounding it up would
            # leave out the very steps the guarantee counts on).
            threshold=policy.threshold,
            n=policy.n,
            k=policy.k,
            n_no_single_step=policy.n_no_single_step,
            statement=policy.statement(),
            mean_set_share=sets["mean_set_share"],
            located_share=located,
        ),
        created_at=created,
        expires_at=created + timedelta(days=valid_days),
    ).sealed()


def is_step_card_text(data: Any) -> bool:
    """Whether parsed card YAML is a first-bad-decision card."""
    return (
        isinstance(data, dict)
        and isinstance(data.get("calibration"), dict)
        and data["calibration"].get("kind") == FBD_KIND
    )


def parse_step_card(data: Any, *, source: str = "the card") -> StepCard:
    """Validate a parsed first-bad-decision card (schema and digest)."""
    try:
        card = StepCard.model_validate(data)
    except ValidationError as err:
        first = err.errors()[0]
        loc = ".".join(str(p) for p in first["loc"]) or "(card)"
        raise CardError(f"{source}: field '{loc}': {first['msg']}") from err
    if card.card_digest != card.computed_digest():
        raise CardError(
            f"{source}: its content does not match its card_digest (edited by hand?): "
            "calibrate again to make a new card"
        )
    return card


@dataclass(frozen=True)
class StepDecision:
    item_id: str
    decision: Literal["located", "review"]
    step_set: list[int]


def route_steps(card: StepCard, runs: Iterable[StepRun]) -> list[StepDecision]:
    """Each run's certified set; a set of one step is located, any other goes to review."""
    out = []
    for r in runs:
        steps = step_set(r, card.policy.threshold)
        out.append(
            StepDecision(
                item_id=r.item_id,
                decision="located" if len(steps) == 1 and not r.abstained else "review",
                step_set=steps,
            )
        )
    return out


def write_step_card(card: StepCard, path: str | Path) -> str:
    """Write the card as YAML (sealed); return its digest."""
    sealed = card.sealed()
    Path(path).write_text(sealed.to_yaml(), encoding="utf-8")
    return sealed.card_digest


def is_step_card_file(path: str | Path) -> bool:
    """Whether the YAML file at ``path`` is a first-bad-decision card (False when it cannot be
    read or parsed: the verdict card's reader then says why)."""
    try:
        return is_step_card_text(yaml.safe_load(Path(path).read_text(encoding="utf-8")))
    except (OSError, yaml.YAMLError, UnicodeDecodeError):
        return False


def load_step_card(path: str | Path) -> StepCard:
    """Read a first-bad-decision card; errors name the file and the field."""
    file = str(path)
    try:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except OSError as err:
        raise CardError(f"{file}: cannot read the card: {err.strerror}") from err
    except yaml.YAMLError as err:
        raise CardError(f"{file}: not YAML: {err}") from err
    if not is_step_card_text(data):
        raise CardError(
            f"{file}: not a first-bad-decision card (calibration.kind is not fbd): make one "
            "with judge calibrate --kind fbd"
        )
    return parse_step_card(data, source=file)
