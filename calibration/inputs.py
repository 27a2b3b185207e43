"""Judgment inputs for the calibration harness, all turned into :class:`VerdictRow` values.

Sources:
- recorded verdicts of real judges (the ``../shared/judgments`` format): :func:`load_recorded`;
- a JSONL export of ``judge.types.Judgment`` (one ``model_dump_json()`` per line):
  :func:`load_judgments_jsonl`;
- any iterable of ``Judgment`` values (the judge side reads its store and passes them in):
  :func:`judgments_to_rows`.

Then :func:`join_gold` attaches gold labels (and reporting slices) by item id, and
:func:`to_arrays` gives a columnar numpy view that the metrics work on.

Speed matters here (a million rows is a realistic card): rows are plain slotted dataclasses
built positionally, and the recorded format is checked with cheap dict/set tests rather than a
pydantic model per row. Judgment files are validated with pydantic, because they are ours and
their schema is richer.
"""

from __future__ import annotations

import gc
import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from operator import attrgetter
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from calibration.gold import GoldSet, validation_to_input_error
from calibration.records import VerdictRow
from judge.errors import InputError
from judge.kinds import ALL_LABELS, SCORING
from judge.types import ABSTAIN_LABEL, Judgment

if TYPE_CHECKING:
    import numpy as np

#: Fields of one line of the recorded-verdicts format (``../shared/judgments/README.md``).
#: ``score`` (raw rating-scale scores of Rating-style judges) is accepted and not used.
RECORDED_FIELDS = frozenset(
    {
        "item_id",
        "source",
        "judge",
        "order",
        "sample",
        "verdict",
        "verdict_pos",
        "prob",
        "gold",
        "slices",
        "score",
    }
)
#: Every verdict or gold label the harness knows (``judge.kinds.ALL_LABELS``: pass fail A B tie),
#: with a fixed integer code (see to_arrays).
LABEL_CODE: dict[str | None, int] = {None: -1, **{label: i for i, label in enumerate(ALL_LABELS)}}
#: Status codes in RowArrays.status (judge.types.STATUSES order).
STATUS_CODE: dict[str, int] = {"ok": 0, "abstain": 1, "parse_error": 2, "infra_error": 3}
ORDER_CODE: dict[str | None, int] = {None: 0, "AB": 1, "BA": 2}

_ORDERS = frozenset(ORDER_CODE)
_VERDICTS = frozenset(LABEL_CODE)
_RECORDED_HINT = "see ../shared/judgments/README.md for the recorded-verdicts format"


# --------------------------------------------------------------------------- recorded verdicts


def _read_text(path: str | Path) -> str:
    p = Path(path)
    try:
        raw = p.read_bytes()
    except OSError as err:
        raise InputError(f"cannot read: {err.strerror}", file=str(path)) from err
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as err:
        line = raw.count(b"\n", 0, err.start) + 1
        raise InputError(
            "not valid UTF-8", file=str(path), line=line, hint="save the file as UTF-8"
        ) from err


def _bad(file: str, line: int, field: str | None, message: str) -> InputError:
    return InputError(message, file=file, line=line, field=field, hint=_RECORDED_HINT)


def _recorded_row(d: Any, file: str, line: int) -> VerdictRow:
    """One checked recorded-verdict object -> VerdictRow (the slow path only on errors)."""
    if type(d) is not dict:
        raise _bad(file, line, None, f"expected a JSON object, got {type(d).__name__}")
    if not d.keys() <= RECORDED_FIELDS:
        extra = sorted(set(d) - RECORDED_FIELDS)[0]
        raise _bad(file, line, extra, "is not a field of the recorded-verdicts format")
    try:
        item_id = d["item_id"]
        judge = d["judge"]
        verdict = d["verdict"]
    except KeyError as err:
        raise _bad(file, line, str(err.args[0]), "is required") from err
    if type(item_id) is not str or not item_id:
        raise _bad(file, line, "item_id", "must be a non-empty string")
    if type(judge) is not str or not judge:
        raise _bad(file, line, "judge", "must be a non-empty string")
    order = d.get("order")
    verdict_pos = d.get("verdict_pos")
    gold = d.get("gold")
    # Unhashable values (lists, dicts) make the set tests raise TypeError: same message.
    try:
        if verdict not in _VERDICTS:
            raise _bad(file, line, "verdict", f"must be one of {_labels_text()} or null")
        if verdict_pos not in _VERDICTS:
            raise _bad(file, line, "verdict_pos", f"must be one of {_labels_text()} or null")
        if gold not in _VERDICTS:
            raise _bad(file, line, "gold", f"must be one of {_labels_text()} or null")
        if order not in _ORDERS:
            raise _bad(file, line, "order", "must be AB, BA or null")
    except TypeError as err:
        raise _bad(file, line, None, "a label field holds a list or object") from err
    sample = d.get("sample", 0)
    if type(sample) is not int:
        raise _bad(file, line, "sample", "must be an integer")
    prob = d.get("prob")
    if prob is not None:
        if type(prob) not in (float, int) or not 0.0 <= prob <= 1.0:
            raise _bad(file, line, "prob", "must be a probability in [0, 1] or null")
        prob = float(prob)
    slices = d.get("slices")
    if slices is None:
        slices = {}
    elif type(slices) is not dict:
        raise _bad(file, line, "slices", "must be an object")
    task = slices.get("task_id")
    # A null verdict is a judge output the source could not parse: never a pass or a fail.
    return VerdictRow(
        item_id,
        judge,
        verdict,
        "ok" if verdict is not None else "parse_error",
        order,
        sample,
        verdict_pos,
        prob,
        gold,
        str(task) if task is not None else item_id,
        None,
        slices,
    )


@contextmanager
def paused_gc() -> Iterator[None]:
    """Pause the cyclic garbage collector while building many long-lived rows.

    Every row is kept, so the collector's repeated full passes over a growing heap find
    nothing to free; on a million rows they cost more than the parsing itself.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _labels_text() -> str:
    return ", ".join(ALL_LABELS)


def load_recorded(path: str | Path, judge: str | None = None) -> list[VerdictRow]:
    """Load recorded verdicts (``item_id, judge, order, sample, verdict, ...`` per line).

    A null ``verdict`` becomes status ``parse_error`` (the source could not read a verdict
    from the judge's output). ``task_id`` is ``slices.task_id`` when present, else the item id.
    ``judge`` keeps only that judge's rows. Errors name the file, line and field.
    """
    with paused_gc():
        return [row for _, row in iter_recorded(path, judge)]


def iter_recorded(path: str | Path, judge: str | None = None) -> Iterator[tuple[int, VerdictRow]]:
    """The rows of :func:`load_recorded`, each with its line number, read as they are needed."""
    file = str(path)
    loads = json.loads
    try:
        handle = open(path, encoding="utf-8")  # noqa: SIM115 - closed below; read lazily
    except OSError as err:
        raise InputError(f"cannot read: {err.strerror}", file=file) from err
    # Lines are parsed as they are read (never the whole text in memory at once).
    number = 0
    try:
        with handle:
            for number, line in enumerate(handle, start=1):
                if line.isspace():
                    continue
                try:
                    d = loads(line)
                except json.JSONDecodeError as err:
                    raise _bad(
                        file, number, None, f"not valid JSON: {err.msg} (column {err.colno})"
                    ) from err
                if judge is not None and type(d) is dict and d.get("judge") != judge:
                    continue
                yield number, _recorded_row(d, file, number)
    except UnicodeDecodeError as err:
        _read_text(path)  # names the line of the bad bytes
        raise InputError("not valid UTF-8", file=file, line=number + 1) from err


# --------------------------------------------------------------------------- judgments


def positive_prob(label_probs: Mapping[str, float] | None) -> float | None:
    """P(positive label) from a verdict's label distribution, abstention mass removed.

    Binary rubrics: P(pass) / (P(pass) + P(fail)). Pairwise: (P(A) + P(tie) / 2) /
    (P(A) + P(B) + P(tie)): a tie is indifference, so its mass is split evenly and 0.5 stays
    the point where neither answer is preferred. (Counting tie mass as "not A" made every
    tie-leaning verdict look like a preference for B: on 30 LLMBar pairs judged by the
    embedded model under pairwise-preference@2, AUROC 0.56 and accuracy 0.50 against 0.68 and
    0.63 with the split; under @1 the split ranked worse, 0.58 against 0.67, at equal accuracy:
    it is kept for its decision rule, JUDGE_QUALITY.md.) The abstain
    label (``cannot_determine``) is left out of both, because an abstaining judge says nothing
    about which label is right. None when no rubric label has probability mass.
    """
    if not label_probs:
        return None
    if "pass" in label_probs or "fail" in label_probs:
        num = label_probs.get("pass", 0.0)
        den = num + label_probs.get("fail", 0.0)
    elif "A" in label_probs or "B" in label_probs:
        tie = label_probs.get("tie", 0.0)
        num = label_probs.get("A", 0.0) + tie / 2.0
        den = label_probs.get("A", 0.0) + label_probs.get("B", 0.0) + tie
    else:
        return None
    return num / den if den > 0 else None


_BINARY = SCORING["binary"].labels
_BINARY_POSITIVE = SCORING["binary"].positive

#: A prompt variant is one more repetition of the same judge: row ``sample`` = sample +
#: VARIANT_STRIDE * variant, so both orders of one variant still pair up, and repetition
#: stability spans samples and variants.
VARIANT_STRIDE = 1000


def judgment_to_row(j: Judgment, name: str | None = None) -> VerdictRow:
    """One stored judgment -> VerdictRow (judge = provenance.model unless ``name`` is given).

    ``prob`` comes from ``verdict.label_probs`` (:func:`positive_prob`); for binary rubrics
    without label probabilities it falls back to ``verdict.confidence`` read as the
    confidence in the given label (P(pass) = c for pass, 1 - c for fail).
    """
    status = j.status
    verdict = j.verdict
    label: str | None = None
    prob: float | None = None
    shown: str | None = None
    if verdict is not None:
        prob = positive_prob(verdict.label_probs)
        if prob is None and verdict.confidence is not None and verdict.label in _BINARY:
            c = verdict.confidence
            prob = c if verdict.label == _BINARY_POSITIVE else 1.0 - c
        if status == "ok" and verdict.label != ABSTAIN_LABEL:
            label = verdict.label
            shown = verdict.label_shown
        elif status == "ok":
            status = "abstain"  # a cannot_determine label is an abstention, whatever was stored
    prov = j.provenance
    return VerdictRow(
        j.case_id,
        name or prov.model,
        label,
        status,
        prov.order,
        prov.sample + VARIANT_STRIDE * prov.variant,
        shown,
        prob,
        None,
        j.case_id,
        j.usage.cost_usd,
        {},
    )


def provenance_matches(
    model: Any,
    rubric_id: Any,
    rubric_version: Any,
    selector_version: Any,
    *,
    judge: str | None = None,
    rubric: str | None = None,
    selector: str | None = None,
) -> bool:
    """Whether a judgment's provenance passes the filters: judge model, rubric ID or
    ID@VERSION, evidence selector version (each None: no filter)."""
    if judge is not None and model != judge:
        return False
    if selector is not None and selector_version != selector:
        return False
    if rubric is None:
        return True
    rid, _, version = rubric.partition("@")
    return rubric_id == rid and (not version or str(rubric_version) == version)


def _keep(j: Judgment, judge: str | None, rubric: str | None, selector: str | None = None) -> bool:
    prov = j.provenance
    # A masked re-judgment (judge.judging.masking) checks its case's verdict; it is not one.
    return prov.masked_from is None and provenance_matches(
        prov.model,
        prov.rubric_id,
        prov.rubric_version,
        prov.selector_version,
        judge=judge,
        rubric=rubric,
        selector=selector,
    )


def _judgment_error(err: Exception, file: str, line: int) -> InputError:
    if isinstance(err, ValidationError):
        e = validation_to_input_error(err, file, line)
        return InputError(
            e.reason, file=file, line=line, field=e.field, hint="expected one Judgment per line"
        )
    return InputError(str(err), file=file, line=line)


def iter_judgments_jsonl(path: str | Path) -> Iterator[Judgment]:
    """The judgments of a JSONL of ``Judgment.model_dump_json()`` lines, in file order.

    Errors name the file, the line and the field."""
    file = str(path)
    for number, line in enumerate(_read_text(path).split("\n"), start=1):
        if not line or line.isspace():
            continue
        try:
            yield Judgment.model_validate_json(line)
        except ValidationError as err:
            raise _judgment_error(err, file, number) from err


def judgments_to_rows(
    judgments: Iterable[Judgment],
    judge: str | None = None,
    *,
    rubric: str | None = None,
    name: str | None = None,
    selector: str | None = None,
) -> list[VerdictRow]:
    """The rows of the judgments that pass the filters (see :func:`load_judgments_jsonl`)."""
    return [judgment_to_row(j, name) for j in judgments if _keep(j, judge, rubric, selector)]


def load_judgments_jsonl(
    path: str | Path,
    judge: str | None = None,
    *,
    rubric: str | None = None,
    name: str | None = None,
    selector: str | None = None,
) -> list[VerdictRow]:
    """Load a JSONL of ``Judgment.model_dump_json()`` lines.

    ``judge`` keeps only judgments whose ``provenance.model`` equals it; ``rubric`` ("id" or
    "id@version") keeps one rubric; ``selector`` one evidence selector version; ``name``
    renames the judge in the rows.
    """
    return judgments_to_rows(
        iter_judgments_jsonl(path), judge, rubric=rubric, name=name, selector=selector
    )


# --------------------------------------------------------------------------- gold join


class GoldJoin(list[VerdictRow]):
    """The rows of :func:`join_gold`, with what the join could not match."""

    #: Rows whose item id is not in the gold set (their gold stays as it was, usually None).
    n_missing: int = 0
    #: Distinct item ids among those rows (sorted).
    missing_items: tuple[str, ...] = ()
    #: Gold items that no row judged.
    n_unjudged: int = 0


def join_gold(
    rows: Iterable[VerdictRow],
    gold: GoldSet | Mapping[str, str],
    *,
    override: bool = False,
) -> GoldJoin:
    """Fill each row's gold label (and missing slices) from a gold set, by item id.

    From a GoldSet, the record's slices fill keys the row lacks; ``task_id`` (the bootstrap's
    sampling unit) is taken from the record's ``slices.task_id`` when the row has none of its
    own; pairwise records add ``length_A``/``length_B`` (characters) for length-bias metrics.
    A row whose gold already differs from the gold set is an error unless ``override``.
    The result is a list with ``n_missing``, ``missing_items`` and ``n_unjudged`` attributes.
    """
    records = gold.by_id() if isinstance(gold, GoldSet) else None
    labels = gold.labels() if isinstance(gold, GoldSet) else gold
    extra: dict[str, dict[str, Any]] = {}
    tasks: dict[str, str] = {}
    if records is not None:
        for rid, rec in records.items():
            add = dict(rec.slices)
            if rec.candidates is not None:
                add["length_A"] = len(rec.candidates["A"])
                add["length_B"] = len(rec.candidates["B"])
            extra[rid] = add
            if rec.slices.get("task_id") is not None:
                tasks[rid] = str(rec.slices["task_id"])
    out = GoldJoin()
    missing: set[str] = set()
    seen: set[str] = set()
    n_missing = 0
    for r in rows:
        label = labels.get(r.item_id)
        if label is None:
            n_missing += 1
            missing.add(r.item_id)
            out.append(r)
            continue
        seen.add(r.item_id)
        if r.gold is not None and r.gold != label and not override:
            raise InputError(
                f"item {r.item_id!r}: the row's gold {r.gold!r} differs from the gold set's "
                f"{label!r}",
                field="gold",
                hint="pass override=True to let the gold set win",
            )
        more = extra.get(r.item_id)
        slices: Mapping[str, Any] = r.slices if not more else {**more, **r.slices}
        task_id = r.task_id
        if (task_id is None or task_id == r.item_id) and r.item_id in tasks:
            task_id = tasks[r.item_id]
        out.append(
            VerdictRow(
                r.item_id,
                r.judge,
                r.verdict,
                r.status,
                r.order,
                r.sample,
                r.verdict_pos,
                r.prob,
                label,
                task_id,
                r.cost_usd,
                slices,
            )
        )
    out.n_missing = n_missing
    out.missing_items = tuple(sorted(missing))
    out.n_unjudged = len(set(labels) - seen)
    return out


def judges(rows: Iterable[VerdictRow]) -> list[str]:
    """The distinct judge names, sorted."""
    return sorted({r.judge for r in rows})


def by_judge(rows: Iterable[VerdictRow], judge: str | Sequence[str]) -> list[VerdictRow]:
    """Only the rows of this judge (or of these judges)."""
    wanted = {judge} if isinstance(judge, str) else set(judge)
    return [r for r in rows if r.judge in wanted]


# --------------------------------------------------------------------------- columnar view


def _factorize(values: Iterable[Any]) -> tuple[list[int], list[Any]]:
    """Codes 0.. in order of first appearance (a dict lookup per value: fast, no sorting)."""
    index: dict[Any, int] = {}
    setdefault = index.setdefault
    codes = [setdefault(v, len(index)) for v in values]
    return codes, list(index)


@dataclass(frozen=True)
class RowArrays:
    """Columnar view of verdict rows: one numpy array per field, labels as small int codes.

    Label codes are LABEL_CODE (``pass fail A B tie`` = 0..4, -1 for none); statuses are
    STATUS_CODE; orders ORDER_CODE (0 none, 1 AB, 2 BA). ``item``, ``cluster`` and ``judge``
    index into ``items``, ``clusters`` and ``judge_names``.
    """

    item: np.ndarray
    cluster: np.ndarray
    judge: np.ndarray
    verdict: np.ndarray
    verdict_pos: np.ndarray
    gold: np.ndarray
    status: np.ndarray
    order: np.ndarray
    sample: np.ndarray
    prob: np.ndarray
    cost: np.ndarray
    #: Candidate lengths from slices length_A / length_B (NaN when unknown).
    len_a: np.ndarray
    len_b: np.ndarray
    items: list[str]
    clusters: list[str]
    judge_names: list[str]

    @property
    def n(self) -> int:
        """Number of rows."""
        return int(self.item.shape[0])

    def take(self, index: np.ndarray) -> RowArrays:
        """The rows selected by a boolean mask or an index array (code tables are shared)."""
        return RowArrays(
            item=self.item[index],
            cluster=self.cluster[index],
            judge=self.judge[index],
            verdict=self.verdict[index],
            verdict_pos=self.verdict_pos[index],
            gold=self.gold[index],
            status=self.status[index],
            order=self.order[index],
            sample=self.sample[index],
            prob=self.prob[index],
            cost=self.cost[index],
            len_a=self.len_a[index],
            len_b=self.len_b[index],
            items=self.items,
            clusters=self.clusters,
            judge_names=self.judge_names,
        )


def to_arrays(rows: Sequence[VerdictRow] | RowArrays) -> RowArrays:
    """The columnar view the metrics compute on (a RowArrays is returned unchanged)."""
    import numpy as np

    if isinstance(rows, RowArrays):
        return rows

    def column(name: str) -> list[Any]:
        # map(attrgetter) walks a million rows about twice as fast as a comprehension
        return list(map(attrgetter(name), rows))

    item_ids = column("item_id")
    tasks = column("task_id")
    item, items = _factorize(item_ids)
    cluster, clusters = _factorize(
        [i if t is None else t for t, i in zip(tasks, item_ids, strict=True)]
    )
    judge, names = _factorize(column("judge"))
    slices = column("slices")
    return RowArrays(
        item=np.asarray(item, dtype=np.int64),
        cluster=np.asarray(cluster, dtype=np.int64),
        judge=np.asarray(judge, dtype=np.int64),
        verdict=_codes(LABEL_CODE, column("verdict"), "verdict"),
        verdict_pos=_codes(LABEL_CODE, column("verdict_pos"), "verdict_pos"),
        gold=_codes(LABEL_CODE, column("gold"), "gold"),
        status=_codes(STATUS_CODE, column("status"), "status"),
        order=_codes(ORDER_CODE, column("order"), "order"),
        sample=np.asarray(column("sample"), dtype=np.int64),
        # None becomes NaN in a float array
        prob=np.asarray(column("prob"), dtype=np.float64),
        cost=np.asarray(column("cost_usd"), dtype=np.float64),
        len_a=_lengths(slices, "length_A"),
        len_b=_lengths(slices, "length_B"),
        items=items,
        clusters=clusters,
        judge_names=names,
    )


def _codes(table: Mapping[Any, int], values: list[Any], what: str) -> np.ndarray:
    import numpy as np

    try:
        return np.asarray(list(map(table.__getitem__, values)), dtype=np.int8)
    except (KeyError, TypeError) as err:
        known = ", ".join(str(k) for k in table if k is not None)
        raise InputError(f"unknown {what} label {err.args[0]!r}", hint=f"known: {known}") from err


def _lengths(slices: list[Mapping[str, Any]], key: str) -> np.ndarray:
    """Candidate lengths from the slices (NaN where absent or not a number)."""
    import numpy as np

    values = [s.get(key) for s in slices]
    try:
        return np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        return np.asarray(
            [float(v) if isinstance(v, int | float) else float("nan") for v in values],
            dtype=np.float64,
        )


def iter_slice_values(rows: Sequence[VerdictRow], key: str) -> Iterator[str]:
    """Each row's value of slice ``key`` as text ("(none)" when the row lacks it)."""
    for r in rows:
        v = r.slices.get(key)
        yield "(none)" if v is None else str(v)
