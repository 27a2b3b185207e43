"""``judge review``: the review queue from the command line, label plans, agreement, audits,
gold export."""

from __future__ import annotations

import json
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

import judge.carding
import judge.review
import judge.routing
import judge.runsets
import judge.store
from calibration.options import CalibrationOptions
from judge.commands.options import calibration_option, db_option, file_option
from judge.urls import mask_url


@click.group()
def review() -> None:
    """Review queue, labels, inter-reviewer agreement, card audits and gold export."""


@review.command("queue")
@db_option()
@click.option("--reviewer", help="Only the items this reviewer may label now.")
@click.option("--role", type=click.Choice(["reviewer", "adjudicator"]), default="reviewer")
@click.option("--limit", type=int, default=50, show_default=True)
def queue_cmd(db: str, reviewer: str | None, role: str, limit: int) -> None:
    """List items awaiting a label, in priority order (with --reviewer: blind items, and the
    items of a case whose blind item awaits that reviewer, without the judge's reason and
    priority)."""
    with judge.store.open_store(db) as store:
        found = judge.review.queue(store, reviewer=reviewer, role=role, limit=limit)  # type: ignore[arg-type]
        if reviewer:
            viewer = judge.review.reviewer_queue(store, reviewer=reviewer, role=role)  # type: ignore[arg-type]
            found = [viewer.shown(i) for i in found]
    table = Table()
    for column in ("item", "case", "kind", "why", "priority", "labels", "status"):
        table.add_column(column, overflow="fold")
    for item in found:
        why = "audit" if item.audit else item.reason
        table.add_row(
            item.id,
            item.case_id,
            item.kind,
            why,
            f"{item.priority:.2f}",
            f"{item.n_labels}/{item.required_labels}",
            item.status,
        )
    Console(width=max(Console().width, 120)).print(table)
    click.echo(f"{len(found)} item(s)", err=True)


@review.command("label")
@click.argument("item_id")
@click.option(
    "--label",
    "label_",
    required=True,
    help="pass, fail or cannot_determine (A, B, tie or cannot_determine for pairwise; "
    "located, no_single_step or cannot_determine for a first bad decision).",
)
@click.option(
    "--step",
    type=click.IntRange(min=0),
    help="With located: the critical step (0-based) of a first-bad-decision item.",
)
@click.option("--reviewer", required=True, help="Your reviewer name.")
@click.option("--role", type=click.Choice(["reviewer", "adjudicator"]), default="reviewer")
@click.option("--note", default="")
@db_option()
def label_cmd(
    item_id: str, label_: str, step: int | None, reviewer: str, role: str, note: str, db: str
) -> None:
    """Label one item (canonical frame)."""
    with judge.store.open_store(db) as store:
        item = judge.review.add_label(
            store,
            item_id,
            reviewer=reviewer,
            role=role,  # type: ignore[arg-type]
            label=label_,
            note=note,
            step=step,
        )
    final = f" -> {item.final_label}" if item.final_label else ""
    final += f" step {item.final_step}" if item.final_step is not None else ""
    click.echo(f"{item.id}: {item.status}{final}")


@review.command("agreement")
@db_option()
def agreement_cmd(db: str) -> None:
    """Raw agreement and Cohen's kappa per reviewer pair; on first-bad-decision items, how
    often people's critical steps agree (exact, within 1, within 3 steps), beside each
    judge's agreement with people."""
    with judge.store.open_store(db) as store:
        pairs = judge.review.agreement(store)
        steps = judge.review.step_agreement(store)
    if not pairs:
        click.echo("no item has labels from two reviewers yet")
    for p in pairs:
        kappa = f"{p.kappa:.3f}" if p.kappa is not None else "undefined"
        click.echo(
            f"{p.reviewer_a} / {p.reviewer_b} ({p.kind}): {p.n} items, raw "
            f"{p.raw:.3f}, kappa {kappa}"
        )
    for a in steps:
        who = "people with people" if a.who == "people" else f"{a.who} with people"
        shares = ", ".join(
            f"{name} {hits}/{a.n}" + (f" ({hits / a.n:.2f})" if a.n else "")
            for name, hits in (
                ("exact", a.exact),
                ("within 1", a.within_1),
                ("within 3", a.within_3),
            )
        )
        click.echo(
            f"critical step, {who}: {a.n} pairs with a step on both sides: {shares}; "
            f"{a.unmatched} with a step on one side only"
        )


@review.command("audit")
@db_option()
@click.option("--card", "digest", help="One card's digest (default: every stored card).")
def audit_cmd(db: str, digest: str | None) -> None:
    """Each card's live band error bounds from audit labels; stale cards are flagged."""
    with judge.store.open_store(db) as store:
        statuses = judge.routing.audit_cards(store, digest)
    for status in statuses:
        state = f"STALE: {status.stale_reason}" if status.stale else "in force"
        click.echo(f"card {status.card_digest[:19]}: {state}")
        for b in status.bands:
            where = f" slice {b.slice}" if b.slice else ""
            click.echo(
                f"  {b.band}{where}: card {b.card_errors}/{b.card_n} + audit "
                f"{b.audit_errors}/{b.audit_n} errors -> bound {b.upper_bound:.4f} "
                f"(alpha {b.alpha:g}, level {b.level:g})"
            )


@review.command("plan")
@click.argument("runs_file", metavar="RUNS.jsonl", type=click.Path(dir_okay=False))
@click.option(
    "--budget",
    type=int,
    required=True,
    help="How many runs to label (expected count with --active).",
)
@click.option(
    "--for-card",
    is_flag=True,
    help="Plan the labels that certify a card instead: RUNS.jsonl is then the judge's verdicts "
    "(recorded or judgments JSONL, no gold needed); the items are drawn at random within the "
    "judge's most confident items (known probabilities, written with --out) and nothing is "
    "queued. Then `judge calibrate ... --gold LABELS --plan PLAN.json`.",
)
@click.option(
    "--panel", is_flag=True, help="--for-card: the --model list (default: all) is a panel."
)
@calibration_option("panel_rule", type=click.Choice(["logodds", "mean"]))
@click.option(
    "--cover",
    type=float,
    help="--for-card: the share of items the card should decide (the band stratum); "
    "default: the share the planner expects to certify most with this budget.",
)
@click.option(
    "--expected-error",
    type=float,
    help="--for-card: the error rate to assume in the band (e.g. a similar judge's); "
    "default: alpha / 2, a planning figure (the judge's own probabilities were 8-60x too "
    "optimistic in BENCHMARKS.md 11b); see also --pilot.",
)
@click.option(
    "--pilot",
    metavar="ERRORS/LABELS",
    help="--for-card: a pilot's result: ERRORS wrong among LABELS labelled at random in the "
    "band (a first plan with --budget LABELS); the estimate then assumes their "
    "median-unbiased upper limit. Plan the rest from the verdicts without the pilot's items.",
)
@click.option(
    "--rest-share",
    type=float,
    default=0.0,
    show_default=True,
    help="--for-card: share of the budget drawn outside the band stratum (weighted estimates "
    "over all items; never used to certify).",
)
@calibration_option("alpha_accept", "--alpha", type=float)
@calibration_option("delta", type=float)
@click.option(
    "--active",
    is_flag=True,
    help="Draw with probabilities from the judge's uncertainty (stored judgments of "
    "the runs; judge them first), recorded so the weighted estimate stays valid.",
)
@click.option("--seed", type=int, default=0, show_default=True)
@click.option(
    "--model",
    "models",
    multiple=True,
    help="--active: the judge(s) whose stored scores to use (default: all).",
)
@click.option("--rubric", "rubric_id", help="--active: the rubric id of those judgments.")
@click.option(
    "--mix",
    type=float,
    default=0.2,
    show_default=True,
    help="--active: share of uniform probability mixed in (keeps every run drawable).",
)
@file_option("--out", help="Also write the plan as JSON here.")
@db_option()
def plan_cmd(
    runs_file: str,
    budget: int,
    active: bool,
    seed: int,
    models: tuple[str, ...],
    rubric_id: str | None,
    mix: float,
    out: str | None,
    db: str,
    for_card: bool,
    panel: bool,
    panel_rule: str,
    cover: float | None,
    expected_error: float | None,
    pilot: str | None,
    rest_share: float,
    alpha_accept: float,
    delta: float,
) -> None:
    """Draw the runs of RUNS.jsonl that people should label, at random, and queue them.

    The plan (every run's inclusion probability) is kept in the store, and the drawn runs are
    queued for blind review. Label them, export the labels with `judge gold export --plan ID`,
    and give them to `judge score RUNS ... --labels LABELS --db DB`: the report then adds
    pass@1 from the labels alone and by PPI++ (judge plus labels).

    With --for-card, RUNS.jsonl holds a judge's verdicts on unlabelled items instead, and the
    plan is the items whose labels certify its card (see --for-card).
    """
    if for_card:
        options = CalibrationOptions(
            judges=models,
            panel=panel,
            panel_rule=panel_rule,  # type: ignore[arg-type]
            alpha_accept=alpha_accept,
            delta=delta,
            seed=seed,
        )
        _plan_for_card(runs_file, options, budget, cover, expected_error, rest_share, out, pilot)
        return
    loaded = judge.runsets.load_runs(runs_file)
    for error in loaded.errors:
        click.echo(f"invalid record: {error}", err=True)
    if loaded.errors:
        raise click.ClickException(
            f"{len(loaded.errors)} invalid record(s) in {runs_file}: "
            "a plan is drawn from the whole run set; fix them first"
        )
    with judge.store.open_store(db) as store:
        result = judge.runsets.plan_review(
            store,
            loaded.runs,
            source=runs_file,
            budget=budget,
            seed=seed,
            active=active,
            models=list(models),
            rubric=rubric_id,
            mix=mix,
        )
    plan = result.stored.plan
    if out:
        Path(out).write_text(json.dumps(result.stored.to_dict(), indent=1) + "\n", encoding="utf-8")
    for note in result.notes:
        click.echo(f"note: {note}", err=True)
    again = "" if result.new else " (drawn before: the same plan)"
    shown = mask_url(db)
    click.echo(
        f"plan {result.stored.id}: {plan.design} sample of {len(plan.chosen)} of "
        f"{len(plan.run_ids)} runs (seed {plan.seed}){again}; {result.enqueued} new "
        f"item(s) queued for blind review in {shown}"
    )
    click.echo(
        f"next: label them (`judge review queue --db {shown}`, or the review page), then "
        f"`judge gold export --plan {result.stored.id} --db {shown} --out labels.jsonl` and "
        f"`judge score {runs_file} ... --db {shown} --labels labels.jsonl`",
        err=True,
    )


def _plan_for_card(
    verdicts: str,
    options: CalibrationOptions,
    budget: int,
    cover: float | None,
    expected_error: float | None,
    rest_share: float,
    out: str | None,
    pilot: str | None = None,
) -> None:
    plan = judge.carding.plan_labels_for_card(
        judgments=verdicts,
        options=options,
        budget=budget,
        cover=cover,
        expected_error=expected_error,
        rest_share=rest_share,
        pilot=None if pilot is None else _pilot_counts(pilot),
    )
    if out:
        Path(out).write_text(json.dumps(plan.to_dict(), indent=1) + "\n", encoding="utf-8")
    for item_id in plan.chosen:
        click.echo(item_id)
    band, rest = plan.strata
    click.echo(
        f"plan {plan.id} for {plan.judge}: {len(plan.chosen)} of {len(plan.item_ids)} items; "
        f"band stratum: the {band.n_items} most confident ({plan.band_share:g} of the items, "
        f"confidence >= {plan.boundary:.6g}), {band.n_labels} drawn, each with probability "
        f"{band.prob:.4g}; rest: {rest.n_labels} of {rest.n_items}",
        err=True,
    )
    for note in plan.notes:
        click.echo(f"note: {note}", err=True)
    estimate = plan.estimate
    if estimate is not None:
        need = estimate.labels if estimate.labels is not None else "more than 5000"
        click.echo(
            f"planner ({estimate.error_source} error {estimate.error:.4f} in the band): {need} "
            f"labels certify it with probability >= {estimate.power:g}",
            err=True,
        )
        if estimate.error_source == "prior":
            click.echo(
                "warning: no label has measured this band yet: the estimate assumes it errs "
                "at alpha / 2; bands of recorded LLM judges (BENCHMARKS.md 11d) erred at "
                "0.45-0.93 alpha and needed 1.3-5x these labels (over 10x near alpha): label "
                "a pilot (a first plan of about 40) and give --pilot ERRORS/LABELS for an "
                "estimate from this judge",
                err=True,
            )
    click.echo(
        f"next: label these items (gold JSONL), then `judge calibrate --judgments {verdicts} "
        f"--gold LABELS.jsonl --plan {out or 'PLAN.json'}` with the same --judge/--panel",
        err=True,
    )


def _pilot_counts(text: str) -> tuple[int, int]:
    """ERRORS/LABELS as two whole numbers (a usage error otherwise)."""
    try:
        errors, labels = (int(part) for part in text.split("/"))
    except ValueError:
        raise click.BadParameter(
            f"expected ERRORS/LABELS, got {text!r}", param_hint="--pilot"
        ) from None
    return errors, labels


@review.command("export-gold")
@file_option("--out", required=True, help="Gold JSONL to write.")
@click.option(
    "--license",
    "license_",
    default="unspecified",
    show_default=True,
    help="Licence of the exported records.",
)
@click.option(
    "--plan",
    "plan_id",
    help="Only the items of this label plan (`judge review plan`): the labels "
    "`judge score --labels` accepts for PPI.",
)
@db_option()
def export_gold_cmd(out: str, license_: str, plan_id: str | None, db: str) -> None:
    """Write finished review labels as a gold set with lineage (for `judge calibrate --gold`,
    or with --plan for `judge score --labels`)."""
    with judge.store.open_store(db) as store:
        result = judge.review.export_gold(store, out, license=license_, plan=plan_id)
    for item_id, why in result.skipped:
        click.echo(f"skipped {item_id}: {why}", err=True)
    click.echo(f"{result.n} gold record(s) -> {result.path} ({result.digest})")
