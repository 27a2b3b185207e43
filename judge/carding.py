"""Calibrating and comparing judges from the judge side: the typed functions behind
``judge calibrate`` and ``judge compare`` (and the calibration bench).

They load the verdicts (a judge store, a judgments JSONL or a recorded-verdicts JSONL), bind
the judge the card is for (its rubric through ``judge.rubrics``, the prompt digest, the evidence
selector, all from the judgments' provenance), run the calibration workflow
(``calibration.workflow``), and write the card and the HTML report. Calibration itself never
reads the store: the judgments are read here, through ``judge.store.Store``, and passed in.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from calibration.bands import Grid
from calibration.card import (
    RECORDED_SOURCE,
    Card,
    GoldRef,
    JudgeSection,
    RubricRef,
    SelectorRef,
    load_card,
    verify_card,
    write_card,
)
from calibration.card_plan import CardPlan, plan_for_card
from calibration.gold import load_gold, validation_to_input_error
from calibration.inputs import (
    iter_judgments_jsonl,
    judgment_to_row,
    load_recorded,
    provenance_matches,
)
from calibration.options import CalibrationOptions, CompareOptions
from calibration.records import VerdictRow
from calibration.report import write_report
from calibration.study import Study
from calibration.workflow import (
    CalibrationResult,
    JudgeBinder,
    JudgeBinding,
    JudgeRequest,
    attach_gold,
    calibrate_rows,
    card_filename,
    compare_rows,
    pool_scores,
    unbound,
)
from judge.base import Frozen
from judge.digests import is_digest, text_digest
from judge.errors import CardError, InputError, RubricError
from judge.rubrics import load_rubric
from judge.store import Store, StoreError, StoreUnavailable, mask_url, store_exists
from judge.types import Judgment

STORE_SOURCE = "judge store"
JUDGMENTS_SOURCE = "judgments"

#: The provenance a card binds. The per-judgment prompt_digest covers the rendered case, so it
#: differs on every item; the judge's prompt is bound through the rubric digest (rubric.yaml and
#: its prompt template) and the digest of the rubric's system prompt.
BINDING_FIELDS = (
    "model",
    "rubric_id",
    "rubric_version",
    "rubric_digest",
    "selector_version",
    "token_budget",
)


class VerdictSource(Frozen):
    """Where the verdicts are: exactly one of a judge store, a judgments JSONL (which may also
    hold recorded verdicts) or a recorded-verdicts JSONL; and which judgments to keep."""

    db: str | None = None
    judgments: str | None = None
    recorded: str | None = None
    #: Only judgments of this rubric, ID or ID@VERSION (None: all).
    rubric: str | None = None
    #: Only judgments made with this evidence selector version (None: all).
    selector: str | None = None


@dataclass
class LoadedVerdicts:
    """Verdict rows and, for judgments, the provenance bindings of each judge."""

    rows: list[VerdictRow]
    #: "recorded verdicts", "judgments" or "judge store" (the card's judge.source).
    kind: str
    #: The file, or the store (a database URL with its password masked).
    path: Path | str
    #: judge model -> its distinct provenance bindings (BINDING_FIELDS), in first-seen order.
    bindings: dict[str, list[dict[str, Any]]] = field(default_factory=dict)


def _shown(db: str) -> Path | str:
    # A database URL stays text (a Path would fold its "//") and never shows its password.
    return mask_url(db) if "://" in db else Path(db)


def _is_recorded(path: Path) -> bool:
    # The recorded-verdicts format has item_id/judge at top level; a Judgment has provenance.
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                try:
                    first = json.loads(line)
                except json.JSONDecodeError:
                    return False
                return isinstance(first, dict) and "provenance" not in first
    return False


def store_judgments(db: str | Path, *, rubric: str | None = None) -> Iterator[Judgment]:
    """The judgments of a judge store, oldest first (``rubric``: only this rubric id, or
    ID@VERSION's id). Errors name the store and the judgment's position."""
    file = mask_url(str(db))
    if not store_exists(db):
        raise InputError("no such database", file=file, hint="give the path of the judge store")
    try:
        store = Store(db)
    except (StoreError, StoreUnavailable) as err:
        raise InputError(
            f"cannot open the judge store: {err}",
            file=file,
            hint="is this a judge store? `judge run` writes one",
        ) from err
    with store:
        if store.count() == 0:
            raise InputError(
                "the judge store holds no judgments",
                file=file,
                hint="is this a judge store? run `judge run` first",
            )
        rubric_id = rubric.partition("@")[0] if rubric else None
        found = store.judgments(rubric_id=rubric_id)
        position = 0
        while True:
            position += 1
            try:
                judgment = next(found)
            except StopIteration:
                return
            except ValidationError as err:
                where = f"{file} (judgments, oldest first)"
                bad = validation_to_input_error(err, where, position)
                raise InputError(
                    bad.reason,
                    file=where,
                    line=position,
                    field=bad.field,
                    hint="a stored judgment is not a valid Judgment",
                ) from err
            yield judgment


def judgment_rows(
    judgments: Iterable[Judgment], *, rubric: str | None = None, selector: str | None = None
) -> tuple[list[VerdictRow], dict[str, list[dict[str, Any]]]]:
    """The rows of the judgments that pass the filters, and each judge's provenance bindings
    among them (one pass: a store is read once)."""
    rows: list[VerdictRow] = []
    seen: dict[str, dict[tuple[Any, ...], dict[str, Any]]] = {}
    for j in judgments:
        prov = j.provenance
        if prov.masked_from is not None:
            continue  # a masked re-judgment checks a verdict; it is not one (judging.masking)
        if j.verdict is not None and j.verdict.decided_by is not None:
            continue  # a check decided it, not the model: a card calibrates only the model
        if not provenance_matches(
            prov.model,
            prov.rubric_id,
            prov.rubric_version,
            prov.selector_version,
            rubric=rubric,
            selector=selector,
        ):
            continue
        rows.append(judgment_to_row(j))
        binding = {key: getattr(prov, key) for key in BINDING_FIELDS}
        seen.setdefault(prov.model, {}).setdefault(tuple(binding.values()), binding)
    return rows, {model: list(b.values()) for model, b in seen.items()}


def load_store_rows(
    db: str | Path,
    judge: str | None = None,
    *,
    rubric: str | None = None,
    selector: str | None = None,
) -> list[VerdictRow]:
    """Verdict rows of a judge store (``judge``: one model only), filtered as
    ``calibration.inputs.load_judgments_jsonl``."""
    rows, _ = judgment_rows(store_judgments(db, rubric=rubric), rubric=rubric, selector=selector)
    return [r for r in rows if judge is None or r.judge == judge]


def load_verdicts(source: VerdictSource) -> LoadedVerdicts:
    """Read the verdict rows of ``source`` (and the judgments' provenance bindings)."""
    given = [p for p in (source.db, source.judgments, source.recorded) if p]
    if len(given) != 1:
        raise InputError(
            "give exactly one of --db, --judgments, --recorded",
            hint="--judgments also reads the recorded-verdicts format",
        )
    if source.db:
        rows, bindings = judgment_rows(
            store_judgments(source.db, rubric=source.rubric),
            rubric=source.rubric,
            selector=source.selector,
        )
        return LoadedVerdicts(rows, STORE_SOURCE, _shown(source.db), bindings)
    path = Path(source.recorded or source.judgments or "")
    if not path.is_file():
        raise InputError("no such file", file=str(path))
    if source.recorded or _is_recorded(path):
        return LoadedVerdicts(load_recorded(path), RECORDED_SOURCE, path)
    rows, bindings = judgment_rows(
        iter_judgments_jsonl(path), rubric=source.rubric, selector=source.selector
    )
    return LoadedVerdicts(rows, JUDGMENTS_SOURCE, path, bindings)


# --- The judge's bindings -----------------------------------------------------------------------


def judge_binding(loaded: LoadedVerdicts, judge: str) -> JudgeBinding:
    """The card's judge section for one judge's judgments, and notes for the summary."""
    if loaded.kind == RECORDED_SOURCE:
        return JudgeBinding(JudgeSection(model=judge, source=loaded.kind))
    bindings = loaded.bindings.get(judge, [])
    if len(bindings) != 1:
        raise InputError(
            f"judge {judge!r} has {len(bindings)} different prompt/rubric/selector bindings in "
            "these judgments; a card binds exactly one",
            file=str(loaded.path),
            field="provenance",
            hint="filter with --rubric ID@VERSION and --selector VERSION, or calibrate each "
            "binding separately",
        )
    b = bindings[0]
    notes: list[str] = []
    visible: list[str] = []
    blinded: list[str] = []
    prompt_digest: str | None = None
    try:
        rubric = load_rubric(f"{b['rubric_id']}@{b['rubric_version']}")
        if rubric.digest == b["rubric_digest"]:
            visible = list(rubric.spec.evidence_visible)
            blinded = list(rubric.spec.blinded_fields)
            prompt_digest = text_digest(rubric.system_prompt)
        else:
            notes.append(
                "the rubric folder's digest differs from the judgments'; card binds the latter"
            )
    except RubricError as err:
        notes.append(
            f"rubric not found here ({err}); evidence_visible and blinded_fields left empty"
        )
    section = JudgeSection(
        model=judge,
        source=loaded.kind,
        prompt_digest=prompt_digest,
        rubric=RubricRef(id=b["rubric_id"], version=b["rubric_version"], digest=b["rubric_digest"]),
        evidence_selector=SelectorRef(
            version=b["selector_version"], token_budget=b["token_budget"]
        ),
        evidence_visible=visible,
        blinded_fields=blinded,
    )
    return JudgeBinding(section, tuple(notes))


def cascade_binding(loaded: LoadedVerdicts, names: Sequence[str], model: str) -> JudgeBinding:
    """A cascade card's bindings: every stage must share one rubric, prompt and selector (the
    card binds one; routing checks each stage's judgments against it)."""
    stages = [judge_binding(loaded, name) for name in names]
    bound = {
        name: b.section.model_dump(exclude={"model"}) for name, b in zip(names, stages, strict=True)
    }
    first = bound[names[0]]
    differ = [name for name in names[1:] if bound[name] != first]
    if differ:
        raise InputError(
            f"the cascade's judges do not share one rubric, prompt and evidence selector "
            f"({', '.join(differ)} differ from {names[0]}); a cascade card binds one",
            file=str(loaded.path),
            field="provenance",
            hint="filter with --rubric ID@VERSION and --selector VERSION",
        )
    return JudgeBinding(stages[0].section.model_copy(update={"model": model}), stages[0].notes)


def panel_binding(loaded: LoadedVerdicts, request: JudgeRequest) -> JudgeBinding:
    """A panel card's bindings: every member bound as exactly as a single judge (its rubric,
    prompt digest and evidence selector), so that routing checks each member's judgments
    against its own. A pooled panel (as written before panel rules) binds no member."""
    if not request.members:
        return JudgeBinding(JudgeSection(model=request.model, source=loaded.kind))
    bound = [judge_binding(loaded, name) for name in request.names]
    notes = tuple(
        f"{name}: {note}" for name, b in zip(request.names, bound, strict=True) for note in b.notes
    )
    section = JudgeSection(
        model=request.model, source=loaded.kind, members=[b.section for b in bound]
    )
    return JudgeBinding(section, notes)


def binder(loaded: LoadedVerdicts) -> JudgeBinder:
    """What the workflow calls to bind the judge(s) it picked."""
    if loaded.kind == RECORDED_SOURCE:
        return unbound(loaded.kind)

    def bind(request: JudgeRequest) -> JudgeBinding:
        if request.mode == "panel":
            return panel_binding(loaded, request)
        if request.mode == "cascade":
            return cascade_binding(loaded, request.names, request.model)
        return judge_binding(loaded, request.names[0])

    return bind


# --- The commands' work -------------------------------------------------------------------------


@dataclass(frozen=True)
class CalibrationRun:
    """A calibration and the files it wrote."""

    result: CalibrationResult
    card_path: Path
    card_digest: str
    report_path: Path | None


def _source(
    db: str | Path | None,
    judgments: str | Path | None,
    recorded: str | Path | None,
    rubric: str | None,
    selector: str | None,
) -> VerdictSource:
    return VerdictSource(
        db=None if db is None else str(db),
        judgments=None if judgments is None else str(judgments),
        recorded=None if recorded is None else str(recorded),
        rubric=rubric,
        selector=selector,
    )


def _with_gold(loaded: LoadedVerdicts, gold: str | Path | None) -> tuple[list[VerdictRow], GoldRef]:
    """The verdict rows with the labels of the gold file ``gold`` (None: the labels the
    verdicts carry), and the reference the card records of it."""
    gold_text = None if gold is None else str(gold)
    return attach_gold(
        loaded.rows,
        load_gold(gold_text) if gold_text else None,
        source=str(loaded.path),
        gold_label=gold_text,
    )


def plan_labels_for_card(
    *,
    db: str | Path | None = None,
    judgments: str | Path | None = None,
    recorded: str | Path | None = None,
    rubric: str | None = None,
    selector: str | None = None,
    options: CalibrationOptions | None = None,
    budget: int,
    cover: float | None = None,
    expected_error: float | None = None,
    rest_share: float = 0.0,
    pilot: tuple[int, int] | None = None,
) -> CardPlan:
    """Which of a judge's (or panel's) unlabelled items to label for its card
    (``calibration.card_plan``): the verdicts come as :func:`calibrate` takes them, and no
    label they may carry is read. ``cover``: the band share to plan for (None: the planner's
    choice); ``expected_error``: the band's error rate to assume; ``pilot``: (errors, labels)
    of a pilot labelled in the band, the rate then its median-unbiased upper limit; neither:
    alpha / 2, a planning figure the judge's own probabilities do not move
    (``calibration.card_plan``)."""
    options = options or CalibrationOptions()
    loaded = load_verdicts(_source(db, judgments, recorded, rubric, selector))
    scores = pool_scores(loaded.rows, options)
    return plan_for_card(
        scores,
        budget=budget,
        alpha=options.alpha_accept,
        delta=options.delta,
        seed=options.seed,
        band_share=cover,
        rest_share=rest_share,
        error=_plan_error(expected_error, pilot),
    )


def _plan_error(expected_error: float | None, pilot: tuple[int, int] | None) -> str | float:
    if expected_error is not None and pilot is not None:
        raise InputError("give an expected error or a pilot, not both", field="pilot")
    if pilot is not None:
        return f"pilot:{pilot[0]}/{pilot[1]}"
    return "prior" if expected_error is None else expected_error


def load_plan(path: str | Path) -> CardPlan:
    """A card label plan written by ``judge review plan --for-card --out``."""
    file = str(path)
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as err:
        raise InputError(f"cannot read: {err.strerror}", file=file) from err
    except json.JSONDecodeError as err:
        raise InputError(f"not valid JSON: {err.msg}", file=file, line=err.lineno) from err
    if not isinstance(data, dict):
        raise InputError("a plan is a JSON object", file=file, field="plan")
    try:
        return CardPlan.from_dict(data)
    except InputError as err:
        raise InputError(err.reason, file=file, field=err.field, hint=err.hint) from err


def calibrate(
    *,
    db: str | Path | None = None,
    judgments: str | Path | None = None,
    recorded: str | Path | None = None,
    rubric: str | None = None,
    selector: str | None = None,
    gold: str | Path | None = None,
    options: CalibrationOptions | None = None,
    out: str | Path | None = None,
    report: str | Path | None = None,
    plan: str | Path | None = None,
) -> CalibrationRun:
    """Measure a judge against gold and write its calibration card (and an HTML report).

    The verdicts come from exactly one of a judge store (``db``), a JSONL of judgments or a
    JSONL of recorded verdicts, kept to one ``rubric`` (ID or ID@VERSION) and evidence
    ``selector`` version when given; ``gold`` is a gold JSONL (None: the labels the verdicts
    carry). ``options`` set the guarantee (alpha, delta), the threshold grid, cascades and
    panels. The card goes to ``out`` (default ``<judge>.card.yaml``), the report to ``report``.
    ``plan``: the label plan (``judge review plan --for-card``) the gold was drawn by: the
    bands are certified on its labels and cover a share of its pool (the verdicts).
    """
    options = options or CalibrationOptions()
    if options.grid is not None:
        Grid.parse(options.grid)  # an unknown grid is an InputError now, before any verdict is read
    loaded = load_verdicts(_source(db, judgments, recorded, rubric, selector))
    rows, gold_ref = _with_gold(loaded, gold)
    card_plan = load_plan(plan) if plan is not None else None
    result = calibrate_rows(
        rows, gold=gold_ref, judge=binder(loaded), options=options, plan=card_plan
    )
    card_path = Path(out) if out else Path(card_filename(result.model))
    digest = write_card(result.card, card_path)
    report_path = Path(report) if report else None
    if report_path is not None:
        write_report(report_path, result)
    return CalibrationRun(result, card_path, digest, report_path)


def compare_judges(
    *,
    db: str | Path | None = None,
    judgments: str | Path | None = None,
    recorded: str | Path | None = None,
    rubric: str | None = None,
    gold: str | Path | None = None,
    options: CompareOptions | None = None,
    html: str | Path | None = None,
    json_out: str | Path | None = None,
) -> Study:
    """Compare the judges of one verdict source (as :func:`calibrate` takes it) on the same
    items against ``gold``; write the HTML page and the full study as JSON when asked."""
    options = options or CompareOptions()
    loaded = load_verdicts(_source(db, judgments, recorded, rubric, None))
    rows, _ = _with_gold(loaded, gold)
    study = compare_rows(rows, options)
    if html:
        Path(html).write_text(study.to_html(), encoding="utf-8")
    if json_out:
        Path(json_out).write_text(
            json.dumps(study.to_dict(), indent=1, default=str), encoding="utf-8"
        )
    return study


@dataclass(frozen=True)
class CardCheck:
    """A card that passed ``judge card verify``, and what it was checked against."""

    card: Card
    #: Names of the bindings given explicitly (model, rubric, selector, gold).
    checked: tuple[str, ...]
    #: The moment validity was checked at (None: now).
    as_of: datetime | None


def check_card(
    path: str | Path,
    *,
    model: str | None = None,
    rubric: str | None = None,
    selector: str | None = None,
    gold: str | None = None,
    recorded: bool = False,
    as_of: datetime | None = None,
) -> CardCheck:
    """Load a card and refuse it (CardError) when it is malformed, edited, expired, or binds
    another judge than the one given.

    Unset bindings are taken from the card itself (so only integrity and expiry are checked);
    ``rubric`` is a digest (``sha256:...``) or ID@VERSION to load; ``recorded``: the judge uses
    no rubric or selector; ``as_of`` (naive: UTC) checks validity at that moment instead of now.
    """
    card = load_card(path)
    rubric_digest = card.judge.rubric.digest
    selector_version = card.judge.evidence_selector.version
    if recorded:
        rubric_digest = selector_version = None
    if rubric:
        rubric_digest = rubric if is_digest(rubric) else load_rubric(rubric).digest
    if selector:
        selector_version = selector
    gold_digest = load_gold(gold).digest if gold else None
    moment = None
    if as_of is not None:
        moment = as_of.replace(tzinfo=UTC)
        created = card.created_at if card.created_at.tzinfo else card.created_at.replace(tzinfo=UTC)
        if moment.date() < created.date():
            raise CardError(
                f"{path}: the card was created at {created.isoformat()}, after "
                f"--as-of {moment.date().isoformat()}"
            )
        moment = max(moment, created)  # a bare date means "on that day"
    verify_card(
        card,
        judge_model=model or card.judge.model,
        rubric_digest=rubric_digest,
        selector_version=selector_version,
        gold_digest=gold_digest,
        now=moment,
    )
    given = (
        ("model", model),
        ("rubric", rubric or (recorded or None)),
        ("selector", selector),
        ("gold", gold),
    )
    return CardCheck(card, tuple(name for name, value in given if value), as_of)
