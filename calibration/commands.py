"""``judge calibrate``, ``judge card``, ``judge gold`` (and ``judge compare``).

Only click is imported at module level: numpy, scipy, sklearn and matplotlib are imported
inside the command bodies, so ``judge calibrate --help`` stays fast.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from calibration.bands import BandPolicy
    from calibration.card import Card, ConfidenceRef, GoldRef, JudgeSection
    from calibration.cascade import CascadeResult
    from calibration.confidence import Kind, ScoreSet
    from calibration.records import VerdictRow


# --- Loading verdicts -------------------------------------------------------------------------


@dataclass
class _Source:
    rows: list[VerdictRow]
    #: "recorded verdicts", "judgments" or "judge store"
    kind: str
    path: Path
    #: Only judgments made with this evidence selector version (None: all).
    selector: str | None = None
    #: Only judgments of this rubric, ID or ID@VERSION (None: all).
    rubric: str | None = None


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


def _load_source(
    db: str | None,
    judgments: str | None,
    recorded: str | None,
    rubric: str | None,
    selector: str | None = None,
) -> _Source:
    from calibration import inputs
    from calibration.card import RECORDED_SOURCE
    from judge.errors import InputError

    given = [p for p in (db, judgments, recorded) if p]
    if len(given) != 1:
        raise InputError(
            "give exactly one of --db, --judgments, --recorded",
            hint="--judgments also reads the recorded-verdicts format",
        )
    if db:
        rows = inputs.load_judgments_db(db, rubric=rubric, selector=selector)
        return _Source(rows, "judge store", Path(db), selector, rubric)
    path = Path(recorded or judgments or "")
    if not path.is_file():
        raise InputError("no such file", file=str(path))
    if recorded or _is_recorded(path):
        return _Source(inputs.load_recorded(path), RECORDED_SOURCE, path)
    rows = inputs.load_judgments_jsonl(path, rubric=rubric, selector=selector)
    return _Source(rows, "judgments", path, selector, rubric)


def _text_digest(text: str) -> str:
    import hashlib

    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def _provenance(source: _Source, judge: str) -> list[dict[str, Any]]:
    """Distinct provenance bindings of one judge's judgments (JSONL or store)."""
    import sqlite3

    texts: list[str]
    if source.kind == "judge store":
        conn = sqlite3.connect(f"{source.path.resolve().as_uri()}?mode=ro", uri=True)
        try:
            texts = [r[0] for r in conn.execute("select json from judgments")]
        finally:
            conn.close()
    else:
        texts = [t for t in source.path.read_text(encoding="utf-8").splitlines() if t.strip()]
    # The per-judgment prompt_digest covers the rendered case, so it differs on every item; the
    # judge's prompt is bound through the rubric digest (rubric.yaml + its prompt template).
    keys = (
        "model",
        "rubric_id",
        "rubric_version",
        "rubric_digest",
        "selector_version",
        "token_budget",
    )
    from calibration.inputs import provenance_matches

    seen: dict[tuple[Any, ...], dict[str, Any]] = {}
    for text in texts:
        prov = json.loads(text).get("provenance", {})
        if provenance_matches(prov.get("model"), prov.get("rubric_id"),
                              prov.get("rubric_version"), prov.get("selector_version"),
                              judge=judge, rubric=source.rubric, selector=source.selector):
            binding = {k: prov.get(k) for k in keys}
            seen.setdefault(tuple(binding.values()), binding)
    return list(seen.values())


def _cascade_judge_section(
    source: _Source, names: Sequence[str], model: str
) -> tuple[JudgeSection, list[str]]:
    """A cascade card's bindings: every stage must share one rubric, prompt and selector (the
    card binds one; routing checks each stage's judgments against it)."""
    from judge.errors import InputError

    sections = [_judge_section(source, name) for name in names]
    bound = {name: sec.model_dump(exclude={"model"}) for name, (sec, _) in zip(names, sections,
                                                                                 strict=True)}
    first = bound[names[0]]
    differ = [name for name in names[1:] if bound[name] != first]
    if differ:
        raise InputError(
            f"the cascade's judges do not share one rubric, prompt and evidence selector "
            f"({', '.join(differ)} differ from {names[0]}); a cascade card binds one",
            file=str(source.path),
            field="provenance",
            hint="filter with --rubric ID@VERSION and --selector VERSION",
        )
    section, notes = sections[0]
    return section.model_copy(update={"model": model}), notes


def _judge_section(source: _Source, judge: str) -> tuple[JudgeSection, list[str]]:
    """The card's judge bindings, and notes for the summary."""
    from calibration.card import JudgeSection, RubricRef, SelectorRef
    from judge.errors import InputError, RubricError

    if source.kind == "recorded verdicts":
        return JudgeSection(model=judge, source=source.kind), []
    bindings = _provenance(source, judge)
    if len(bindings) != 1:
        raise InputError(
            f"judge {judge!r} has {len(bindings)} different prompt/rubric/selector bindings in "
            "these judgments; a card binds exactly one",
            file=str(source.path),
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
        from judge.rubrics import load_rubric

        rubric = load_rubric(f"{b['rubric_id']}@{b['rubric_version']}")
        if rubric.digest == b["rubric_digest"]:
            visible = list(rubric.spec.evidence_visible)
            blinded = list(rubric.spec.blinded_fields)
            prompt_digest = _text_digest(rubric.system_prompt)
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
        source=source.kind,
        prompt_digest=prompt_digest,
        rubric=RubricRef(id=b["rubric_id"], version=b["rubric_version"], digest=b["rubric_digest"]),
        evidence_selector=SelectorRef(
            version=b["selector_version"], token_budget=b["token_budget"]
        ),
        evidence_visible=visible,
        blinded_fields=blinded,
    )
    return section, notes


# --- Gold -------------------------------------------------------------------------------------


def _gold(
    rows: list[VerdictRow], gold_path: str | None, source: _Source
) -> tuple[list[VerdictRow], GoldRef]:
    import hashlib

    from calibration.card import GoldRef
    from calibration.gold import load_gold
    from calibration.inputs import join_gold
    from judge.errors import InputError

    if gold_path:
        gold = load_gold(gold_path)
        joined = list(join_gold(rows, gold))
        ref = GoldRef(name=gold.name, digest=gold.digest, n=gold.n, source=f"gold set {gold_path}")
        return joined, ref
    labels = {r.item_id: r.gold for r in rows if r.gold is not None}
    if not labels:
        raise InputError(
            "these verdicts carry no gold labels",
            file=str(source.path),
            field="gold",
            hint="pass --gold GOLD.jsonl",
        )
    # The gold carried by the verdict file: digest over the sorted (item id, label) pairs.
    canon = json.dumps(sorted(labels.items()), separators=(",", ":"))
    ref = GoldRef(
        name=source.path.name,
        digest="sha256:" + hashlib.sha256(canon.encode()).hexdigest(),
        n=len(labels),
        source=f"gold labels carried by {source.path.name}",
    )
    return rows, ref


def _infer_kind(rows: Sequence[VerdictRow], kind: str | None) -> Kind:
    from judge.errors import InputError

    if kind == "binary":
        return "binary"
    if kind == "pairwise":
        return "pairwise"
    labels = {r.gold for r in rows if r.gold} | {r.verdict for r in rows if r.verdict}
    if labels & {"A", "B", "tie"}:
        return "pairwise"
    if labels & {"pass", "fail"}:
        return "binary"
    raise InputError(
        "cannot tell the rubric kind from the labels", field="kind", hint="pass --kind"
    )


def _pick_judges(rows: Sequence[VerdictRow], judges: Sequence[str]) -> list[str]:
    from judge.errors import InputError

    present = sorted({r.judge for r in rows})
    if not judges:
        if len(present) == 1:
            return present
        raise InputError(
            f"these verdicts hold {len(present)} judges: {', '.join(present)}",
            field="judge",
            hint="pick one with --judge (several with --cascade or --panel)",
        )
    missing = [j for j in judges if j not in present]
    if missing:
        raise InputError(
            f"no verdicts of judge {missing[0]!r}; present: {', '.join(present)}", field="judge"
        )
    return list(judges)


def _confidence_ref(scores: ScoreSet, calibrator: Any, fit: str | None) -> ConfidenceRef:
    from calibration.card import ConfidenceRef

    sources = sorted({i.source for i in scores.items})
    return ConfidenceRef(
        source="+".join(sources) if sources else "none",
        calibrator=calibrator.name if calibrator is not None else "none",
        calibrator_fit=fit,
        calibrator_params=calibrator.params() if calibrator is not None else None,
    )


def _parse_costs(costs: Sequence[str]) -> dict[str, float]:
    from judge.errors import InputError

    out = {}
    for text in costs:
        name, sep, value = text.rpartition("=")
        try:
            out[name] = float(value)
        except ValueError:
            name = ""
        if not sep or not name:
            raise InputError(f"--cost wants NAME=VALUE, got {text!r}", field="cost")
    return out


# --- judge calibrate --------------------------------------------------------------------------


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--gold",
    "gold_path",
    type=click.Path(dir_okay=False),
    help="Gold JSONL; default: the gold labels the verdict rows carry.",
)
@click.option(
    "--db", type=click.Path(dir_okay=False), help="Judge store (SQLite) to read judgments from."
)
@click.option(
    "--judgments",
    type=click.Path(dir_okay=False),
    help="JSONL of judgments (or of recorded verdicts).",
)
@click.option(
    "--recorded",
    type=click.Path(dir_okay=False),
    help="JSONL of recorded verdicts (../shared/judgments format).",
)
@click.option(
    "--judge",
    "judges",
    multiple=True,
    help="Judge (model) name; repeat for --cascade (cheapest first) or --panel.",
)
@click.option("--rubric", help="Only judgments of this rubric (ID or ID@VERSION).")
@click.option("--selector", help="Only judgments made with this evidence selector version.")
@click.option(
    "--kind",
    type=click.Choice(["binary", "pairwise"]),
    help="Rubric kind; default: from the labels.",
)
@click.option(
    "--alpha-accept",
    type=float,
    default=0.15,
    show_default=True,
    help="Max P(gold=fail | auto-accepted); pairwise: max P(wrong | decided).",
)
@click.option(
    "--alpha-reject",
    type=float,
    default=None,
    help="Max P(gold=pass | auto-rejected) (binary; default: --alpha-accept).",
)
@click.option(
    "--delta",
    type=float,
    default=0.1,
    show_default=True,
    help="The guarantee holds with probability >= 1 - delta.",
)
@click.option(
    "--grid",
    default="levels:5000",
    show_default=True,
    help="Thresholds fixed before labels: levels:N | coverage:STEP | items | fixed:T1,T2,...",
)
@click.option(
    "--start",
    "starts",
    type=int,
    multiple=True,
    help="Starting point(s) in items (each raised to max(30, n0)); several split delta.",
)
@click.option("--slice", "slice_key", help="Certify each value of this slice key on its own gold.")
@click.option(
    "--correction", type=click.Choice(["holm", "bonferroni"]), default="holm", show_default=True
)
@click.option(
    "--calibrator",
    type=click.Choice(["none", "platt", "isotonic"]),
    default="none",
    show_default=True,
    help="Fit on a cluster split kept apart from threshold picking.",
)
@click.option(
    "--calibration-split",
    type=float,
    default=0.5,
    show_default=True,
    help="Share of task clusters the calibrator is fitted on.",
)
@click.option(
    "--cascade", is_flag=True, help="Treat the --judge list as a cascade, cheapest first."
)
@click.option(
    "--cascade-mode",
    type=click.Choice(["split", "shared"]),
    default="split",
    show_default=True,
    help="split: exact guarantee (disjoint gold per stage); shared: published, approximate.",
)
@click.option(
    "--cost",
    "costs",
    multiple=True,
    help="NAME=COST per item for cascades (default: recorded cost).",
)
@click.option(
    "--panel",
    is_flag=True,
    help="Pool the --judge list into one panel score (vote share or mean prob).",
)
@click.option(
    "--split-study",
    type=int,
    default=0,
    help="Also run N random half splits (calibrate on one, test on the other).",
)
@click.option("--seed", type=int, default=0, show_default=True)
@click.option(
    "--n-boot",
    type=int,
    default=1000,
    show_default=True,
    help="Bootstrap replicates for metric intervals.",
)
@click.option(
    "--valid-days", type=int, default=90, show_default=True, help="Days until the card expires."
)
@click.option(
    "--out", type=click.Path(dir_okay=False), help="Card path (default: <judge>.card.yaml)."
)
@click.option(
    "--report", type=click.Path(dir_okay=False), help="Write a self-contained HTML report here."
)
def calibrate(
    gold_path: str | None,
    db: str | None,
    judgments: str | None,
    recorded: str | None,
    judges: tuple[str, ...],
    rubric: str | None,
    selector: str | None,
    kind: str | None,
    alpha_accept: float,
    alpha_reject: float | None,
    delta: float,
    grid: str,
    starts: tuple[int, ...],
    slice_key: str | None,
    correction: str,
    calibrator: str,
    calibration_split: float,
    cascade: bool,
    cascade_mode: str,
    costs: tuple[str, ...],
    panel: bool,
    split_study: int,
    seed: int,
    n_boot: int,
    valid_days: int,
    out: str | None,
    report: str | None,
) -> None:
    """Measure a judge against gold and write a calibration card and report."""
    from calibration.bands import Grid, certify
    from calibration.card import (
        CalibrationSection,
        build_card,
        cascade_policy_section,
        policy_section,
        write_card,
    )
    from calibration.cascade import calibrate_cascade
    from calibration.cascade import split_study as run_split_study
    from calibration.confidence import calibrated_split, score_items
    from calibration.metrics import summarize
    from judge.errors import InputError

    g = Grid.parse(grid)
    start_list = list(starts) or [30]
    source = _load_source(db, judgments, recorded, rubric, selector)
    rows, gold_ref = _gold(source.rows, gold_path, source)
    rubric_kind = _infer_kind(rows, kind)
    names = _pick_judges(rows, judges)
    if len(names) > 1 and not (cascade or panel):
        raise InputError("several --judge given", field="judge", hint="add --cascade or --panel")
    if cascade and panel:
        raise InputError("--cascade and --panel exclude each other", field="cascade")
    if cascade and (calibrator != "none" or slice_key):
        raise InputError(
            "--cascade does not combine with --calibrator or --slice yet", field="cascade"
        )
    a_reject = (
        (alpha_reject if alpha_reject is not None else alpha_accept)
        if rubric_kind == "binary"
        else None
    )

    wanted = set(names)
    judge_rows = [r for r in rows if r.judge in wanted]
    if panel:
        stage_scores = [score_items(judge_rows, kind=rubric_kind)]
        model = "panel(" + ", ".join(names) + ")"
    else:
        stage_scores = [score_items(judge_rows, kind=rubric_kind, judge=n) for n in names]
        model = names[0] if len(names) == 1 else "cascade(" + " > ".join(names) + ")"

    notes: list[str] = []
    if source.kind == "recorded verdicts" or panel:
        from calibration.card import JudgeSection

        judge_section = JudgeSection(model=model, source=source.kind)
    elif cascade:
        judge_section, notes = _cascade_judge_section(source, names, model)
    else:
        judge_section, notes = _judge_section(source, names[0])

    scores = stage_scores[0]
    fitted = None
    fit_note = None
    if calibrator != "none":
        scores, fitted = calibrated_split(scores, calibrator, fraction=calibration_split, seed=seed)
        fit_note = (
            f"{calibrator} fitted on {calibration_split:.0%} of the task clusters (seed {seed}); "
            f"thresholds certified on the other {len(scores.with_gold().items)} gold items"
        )

    policy: BandPolicy | None = None
    casc: CascadeResult | None = None
    if cascade:
        casc = calibrate_cascade(
            stage_scores,
            alpha_accept=alpha_accept,
            alpha_reject=a_reject,
            delta=delta,
            grid=g,
            starts=start_list,
            costs=_parse_costs(costs),
            mode=cascade_mode,  # type: ignore[arg-type]
            seed=seed,
        )
        policy_sec = cascade_policy_section(casc)
        summary = casc.summary()
    else:
        policy = certify(
            scores,
            alpha_accept=alpha_accept,
            alpha_reject=a_reject,
            delta=delta,
            grid=g,
            starts=start_list,
            slice_key=slice_key,
            correction=correction,  # type: ignore[arg-type]
        )
        policy_sec = policy_section(policy)
        summary = policy.summary()

    metric_rows = [r for r in judge_rows if r.gold is not None]
    metrics = summarize(
        metric_rows, rubric_kind, n_boot=n_boot, seed=seed, slices=(slice_key,) if slice_key else ()
    )
    calibration_sec = CalibrationSection(
        kind=rubric_kind,
        gold=gold_ref,
        confidence=_confidence_ref(scores, fitted, fit_note),
        slices=[slice_key] if slice_key else [],
        metrics=metrics,
    )
    card = build_card(
        judge=judge_section, calibration=calibration_sec, policy=policy_sec, valid_days=valid_days
    )
    out_path = Path(out) if out else Path(_slug(model) + ".card.yaml")
    digest = write_card(card, out_path)

    n_gold = len(scores.with_gold().items)
    head = (
        f"judge {model} on {n_gold} gold items ({gold_ref.source}), {rubric_kind}, "
        f"alpha {alpha_accept}"
        + (f"/{a_reject}" if a_reject is not None else "")
        + f", delta {delta}"
    )
    click.echo(head)
    if fit_note:
        click.echo(f"calibrated confidence: {fit_note}")
    click.echo(summary)
    for note in notes:
        click.echo(f"note: {note}")
    if split_study:
        study = run_split_study(
            stage_scores if cascade else [scores],
            alpha_accept=alpha_accept,
            alpha_reject=a_reject,
            delta=delta,
            grid=g,
            starts=start_list,
            mode=cascade_mode if cascade else "shared",  # type: ignore[arg-type]
            n_splits=split_study,
            seed=seed,
        )
        click.echo(study.summary())
    click.echo(f"card: {out_path} ({digest})")
    if report:
        from calibration.report import write_report

        write_report(
            report,
            card=card,
            scores=scores,
            policy=policy,
            cascade=casc,
            summary=summary,
            slice_key=slice_key,
        )
        click.echo(f"report: {report}")


def _slug(text: str) -> str:
    import re

    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("_") or "judge"


# --- judge card -------------------------------------------------------------------------------


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def card() -> None:
    """Verify or show calibration cards."""


@card.command("verify")
@click.argument("path", type=click.Path(dir_okay=False))
@click.option("--model", help="The judge model about to use the card.")
@click.option("--rubric", help="The judge's rubric: a digest (sha256:...) or ID@VERSION to load.")
@click.option("--selector", help="The evidence selector version in use.")
@click.option(
    "--gold",
    "gold_path",
    type=click.Path(dir_okay=False),
    help="Gold JSONL the card must have been calibrated on.",
)
@click.option(
    "--recorded", is_flag=True, help="The judge uses no rubric or selector (recorded verdicts)."
)
@click.option(
    "--as-of",
    "as_of",
    type=click.DateTime(["%Y-%m-%d", "%Y-%m-%dT%H:%M:%S"]),
    help="Check validity at this moment (UTC) instead of now, e.g. a shipped card at its "
    "creation date, or whether a card is still valid on a planned run date.",
)
def verify(
    path: str,
    model: str | None,
    rubric: str | None,
    selector: str | None,
    gold_path: str | None,
    recorded: bool,
    as_of: datetime | None,
) -> None:
    """Refuse a malformed, edited, expired or mismatched card (exit status 2)."""
    from calibration.card import load_card, verify_card

    c = load_card(path)
    rubric_digest = c.judge.rubric.digest
    selector_version = c.judge.evidence_selector.version
    if recorded:
        rubric_digest = selector_version = None
    if rubric:
        rubric_digest = rubric if rubric.startswith("sha256:") else _rubric_digest(rubric)
    if selector:
        selector_version = selector
    gold_digest = None
    if gold_path:
        from calibration.gold import load_gold

        gold_digest = load_gold(gold_path).digest
    moment = None
    if as_of is not None:
        moment = as_of.replace(tzinfo=UTC)
        created = c.created_at if c.created_at.tzinfo else c.created_at.replace(tzinfo=UTC)
        if moment.date() < created.date():
            from judge.errors import CardError

            raise CardError(f"{path}: the card was created at {created.isoformat()}, after "
                            f"--as-of {moment.date().isoformat()}")
        moment = max(moment, created)  # a bare date means "on that day"
    verify_card(
        c,
        judge_model=model or c.judge.model,
        rubric_digest=rubric_digest,
        selector_version=selector_version,
        gold_digest=gold_digest,
        now=moment,
    )
    checked = [
        name
        for name, v in (
            ("model", model),
            ("rubric", rubric or (recorded or None)),
            ("selector", selector),
            ("gold", gold_path),
        )
        if v
    ]
    click.echo(
        f"ok: {path} is intact and valid until {c.expires_at.isoformat()}"
        + (f" (checked as of {as_of.date().isoformat()})" if as_of else "")
        + (f"; matches the given {', '.join(checked)}" if checked else "")
    )


def _rubric_digest(ref: str) -> str:
    from judge.rubrics import load_rubric

    return load_rubric(ref).digest


@card.command("show")
@click.argument("path", type=click.Path(dir_okay=False))
@click.option("--yaml", "as_yaml", is_flag=True, help="Print the whole card.")
def show(path: str, as_yaml: bool) -> None:
    """Print a card's bindings, guarantee, thresholds and coverage."""
    from calibration.card import load_card

    c = load_card(path)
    if as_yaml:
        click.echo(c.to_yaml(), nl=False)
        return
    click.echo(_card_text(c))


def _card_text(c: Card) -> str:
    j, cal, p = c.judge, c.calibration, c.policy
    rubric = (
        f"{j.rubric.id}@{j.rubric.version} ({j.rubric.digest})"
        if j.rubric.id
        else "none (recorded verdicts)"
    )
    lines = [
        f"judge     {j.model}  [{j.source}]",
        f"rubric    {rubric}",
        f"selector  {j.evidence_selector.version or '-'}",
        f"gold      {cal.gold.name} n={cal.gold.n} {cal.gold.digest}",
        f"kind      {cal.kind}; confidence from {cal.confidence.source}, "
        f"calibrator {cal.confidence.calibrator}",
        f"guarantee {p.guarantee.statement}",
        f"policy    {p.human_review_rule}",
        f"coverage  {p.coverage:.1%}",
        f"valid     {c.created_at.isoformat()} .. {c.expires_at.isoformat()}",
        f"digest    {c.card_digest}",
    ]
    if p.cascade:
        for i, s in enumerate(p.cascade, 1):
            t = (
                s.decide_threshold
                if cal.kind == "pairwise"
                else (s.auto_reject_threshold, s.auto_accept_threshold)
            )
            lines.append(
                f"stage {i}   {s.model}: threshold {t}, decided {s.n_decided} of {s.n_reached}"
            )
    for value, sp in p.per_slice.items():
        lines.append(f"slice     {p.slice_key}={value}: coverage {sp.coverage:.1%} of {sp.n}")
    return "\n".join(lines)


# --- judge gold -------------------------------------------------------------------------------


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def gold() -> None:
    """Validate and import gold sets."""


@gold.command("validate")
@click.argument("path", type=click.Path(dir_okay=False))
def validate(path: str) -> None:
    """Check a gold JSONL file record by record; print its size, labels and digest."""
    from calibration.gold import load_gold

    g = load_gold(path)
    labels = ", ".join(f"{k} {v}" for k, v in sorted(g.label_counts.items()))
    kinds = ", ".join(f"{k} {v}" for k, v in sorted(g.kinds.items()))
    click.echo(f"ok: {path}: {g.n} records ({kinds}); labels {labels}; digest {g.digest}")


# --- judge compare ----------------------------------------------------------------------------


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--recorded", type=click.Path(dir_okay=False), help="JSONL of recorded verdicts.")
@click.option("--judgments", type=click.Path(dir_okay=False), help="JSONL of judgments.")
@click.option("--db", type=click.Path(dir_okay=False), help="Judge store (SQLite).")
@click.option(
    "--gold",
    "gold_path",
    type=click.Path(dir_okay=False),
    help="Gold JSONL (default: gold carried by the rows).",
)
@click.option("--rubric", help="Only judgments of this rubric (ID or ID@VERSION).")
@click.option("--judge", "judges", multiple=True, help="Judges to compare (repeat; default: all).")
@click.option(
    "--all-pairs", is_flag=True, help="Paired differences for every pair, not only vs the best."
)
@click.option(
    "--failures",
    type=click.Choice(["wrong", "exclude"]),
    default="wrong",
    show_default=True,
    help="Count failed verdicts as wrong, or leave them out.",
)
@click.option("--n-boot", type=int, default=1000, show_default=True)
@click.option("--seed", type=int, default=0, show_default=True)
@click.option(
    "--html",
    "html_out",
    type=click.Path(dir_okay=False),
    help="Write a self-contained HTML report.",
)
@click.option(
    "--json", "json_out", type=click.Path(dir_okay=False), help="Write the full study as JSON."
)
def compare(
    recorded: str | None,
    judgments: str | None,
    db: str | None,
    gold_path: str | None,
    rubric: str | None,
    judges: tuple[str, ...],
    all_pairs: bool,
    failures: str,
    n_boot: int,
    seed: int,
    html_out: str | None,
    json_out: str | None,
) -> None:
    """Compare judges on the same items: paired differences, McNemar, agreement."""
    from calibration.study import compare as run_compare
    from judge.errors import InputError

    source = _load_source(db, judgments, recorded, rubric)
    rows, _ = _gold(source.rows, gold_path, source)
    if judges:
        _pick_judges(rows, judges)  # names a missing judge with the ones present
    try:
        study = run_compare(
            rows,
            list(judges) or None,
            n_boot=n_boot,
            seed=seed,
            all_pairs=all_pairs,
            failures=failures,  # type: ignore[arg-type]
        )
    except ValueError as err:
        raise InputError(str(err), field="judge") from err
    click.echo(study.to_table(), nl=False)
    if html_out:
        Path(html_out).write_text(study.to_html(), encoding="utf-8")
        click.echo(f"report: {html_out}")
    if json_out:
        Path(json_out).write_text(
            json.dumps(study.to_dict(), indent=1, default=str), encoding="utf-8"
        )
        click.echo(f"json: {json_out}")


def _gold_export() -> click.Command:
    # The review queue's export, under the name people look for: `judge gold export`.
    from judge.commands.review import export_gold_cmd

    return export_gold_cmd


gold.add_command(_gold_export(), "export")
