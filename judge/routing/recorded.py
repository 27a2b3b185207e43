"""Route recorded verdicts with a card, with no store: one decision per item.

The verdicts are in the recorded-verdicts format (``../shared/judgments``): one line per
(item, judge, order, sample). A card routes them as it routes stored judgments, by the same walk
(``judge.routing.walk``): each judge's rows of an item are pooled
(``calibration.confidence.score_items``), mapped through the card's calibrator, combined by a
panel card's rule or walked through a cascade card's stages, and compared with the certified
thresholds. An item with a failed verdict (null ``verdict``) of a judge the card needs goes to
review (``parse_error``; a panel member's: ``member_failed``).

The file is checked whole before anything is routed, and refused with an error naming the line:
verdicts that are not of the card's rubric kind, the same (item, judge, order, sample) twice, a
judge the card needs with no verdict at all, or an item that lacks the verdict of one of them
(nothing is routed on a partial panel). Probabilities outside [0, 1] (or NaN) are refused by the
reader (``calibration.inputs``).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from calibration.card import Card, verify_card
from calibration.confidence import score_items
from calibration.inputs import iter_recorded
from calibration.records import VerdictRow
from judge.errors import CardError, InputError
from judge.kinds import SCORING
from judge.routing.cards import card_digest, card_models
from judge.routing.walk import Gate, Outcome, Verdicts, walk

_HINT = "see ../shared/judgments/README.md for the recorded-verdicts format"
#: A judge's verdict on the item is null in the file (its source could not read one).
_UNREAD = Gate("parse_error", "a verdict could not be read", explicit=True)
#: None of the judge's verdicts on the item is usable.
_NO_VERDICT = Gate("unscored", "no usable verdict", explicit=True)


@dataclass(frozen=True)
class RecordedDecision:
    """What a card decided for one recorded item, and why."""

    item_id: str
    #: The label decided without a person (pass, fail; A, B or tie), or "review".
    decision: str
    #: A key of ``judge.routing.REASONS``.
    reason: str
    detail: str
    #: The score compared with the thresholds (after the calibrator, or the panel's rule).
    score: float | None = None

    def to_dict(self) -> dict[str, Any]:
        """The JSON object of one output line."""
        return asdict(self)


def route_recorded(
    card: Card, path: str | Path, *, now: datetime | None = None
) -> list[RecordedDecision]:
    """Route the recorded verdicts in ``path`` with ``card``: one decision per item, in the
    order items first appear. Raises InputError (with the line) for a file the card cannot
    route whole, CardError for a card that binds a rubric (recorded verdicts carry none) or
    has expired."""
    file = str(path)
    models = card_models(card)
    for model in models if card.judge.members else [card.judge.model]:
        try:
            verify_card(card, judge_model=model, rubric_digest=None, selector_version=None, now=now)
        except CardError as err:
            raise CardError(
                f"card {card_digest(card)[:19]} cannot route recorded verdicts: {err}"
            ) from err
    rows, first_line = _read(card, file, models)
    verdicts = _verdicts(card, rows, models)
    slices = {}
    for model in reversed(models):
        slices.update({r.item_id: r.slices for r in rows[model]})
    items = sorted(first_line, key=first_line.__getitem__)
    return [_recorded(card, item, walk(card, verdicts[item], slices.get(item))) for item in items]


def _read(
    card: Card, file: str, models: list[str]
) -> tuple[dict[str, list[VerdictRow]], dict[str, int]]:
    """The card's judges' rows, checked whole (see the module docstring), and the first line
    of each item."""
    kind = card.calibration.kind
    allowed = SCORING[kind].allowed
    wanted = set(models)
    rows: dict[str, list[VerdictRow]] = {m: [] for m in models}
    seen: dict[tuple[str, str, str | None, int], int] = {}
    first_line: dict[str, int] = {}
    item_judges: dict[str, set[str]] = defaultdict(set)
    present: set[str] = set()
    for line, row in iter_recorded(file):
        present.add(row.judge)
        if row.judge not in wanted:
            continue
        for name, label in (("verdict", row.verdict), ("gold", row.gold)):
            if label is not None and label not in allowed:
                raise InputError(
                    f"{label!r} is not a {kind} label: the card is for a {kind} rubric "
                    f"({', '.join(sorted(allowed))})",
                    file=file,
                    line=line,
                    field=name,
                )
        key = (row.item_id, row.judge, row.order, row.sample)
        if key in seen:
            raise InputError(
                f"duplicate verdict: item {row.item_id!r}, judge {row.judge!r}, order "
                f"{row.order}, sample {row.sample} is already on line {seen[key]}",
                file=file,
                line=line,
                field="item_id",
                hint="each (item, judge, order, sample) once",
            )
        seen[key] = line
        first_line.setdefault(row.item_id, line)
        item_judges[row.item_id].add(row.judge)
        rows[row.judge].append(row)
    role = "panel member" if card.judge.members else "judge"
    absent = [m for m in models if not rows[m]]
    if absent:
        raise InputError(
            f"no verdict of the card's {role} {absent[0]!r}: the card is for "
            f"{', '.join(models)}; the file holds {', '.join(sorted(present)) or 'no verdicts'}",
            file=file,
            field="judge",
            hint="route with the card calibrated for these judges",
        )
    for item, line in sorted(first_line.items(), key=lambda kv: kv[1]):
        lacking = [m for m in models if m not in item_judges[item]]
        if lacking:
            raise InputError(
                f"item {item!r} has no verdict of the card's {role} {lacking[0]!r}; every "
                f"item needs a verdict of each of {', '.join(models)}: nothing was routed",
                file=file,
                line=line,
                field="judge",
                hint=_HINT,
            )
    return rows, first_line


def _verdicts(
    card: Card, rows: Mapping[str, list[VerdictRow]], models: list[str]
) -> dict[str, dict[str, Verdicts]]:
    """item -> judge -> its verdicts as the walk reads them: the pooled score of its rows, and
    a gate when one of them could not be read (or none is usable)."""
    kind = card.calibration.kind
    out: dict[str, dict[str, Verdicts]] = defaultdict(dict)
    for m in models:
        scores = score_items(rows[m], kind=kind, judge=m).by_id()
        failed = {r.item_id for r in rows[m] if r.status != "ok"}
        for item in dict.fromkeys(r.item_id for r in rows[m]):
            pooled = scores.get(item)
            gate = _UNREAD if item in failed else _NO_VERDICT if pooled is None else None
            out[item][m] = Verdicts(m, pooled.score if pooled is not None else None, gate)
    return out


def _recorded(card: Card, item: str, outcome: Outcome) -> RecordedDecision:
    if not outcome.banded:
        # A recorded decision names no judge: a single judge's gate says whose it is.
        alone = not (card.judge.members or card.policy.cascade)
        detail = f"{outcome.model}: {outcome.detail}" if alone else outcome.detail
        return RecordedDecision(item, "review", outcome.reason, detail)
    label = outcome.label if outcome.decision != "review" and outcome.label else "review"
    return RecordedDecision(item, label, outcome.reason, outcome.detail, outcome.score)


def count_decisions(decisions: Iterable[RecordedDecision]) -> dict[tuple[str, str], int]:
    """(decision, reason) -> how many items, for a summary."""
    counts: dict[tuple[str, str], int] = defaultdict(int)
    for d in decisions:
        counts[(d.decision, d.reason)] += 1
    return dict(counts)
