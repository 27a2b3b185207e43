"""``judge probe``: the judge's own eval set. Perturb real gold cases in ways whose right answer
is known, judge originals and perturbations, and report which probes the judge fails."""

from __future__ import annotations

import sys
from pathlib import Path

import click

import judge.judging
import judge.probes
import judge.providers
import judge.store
from calibration.card import Card, load_card, write_card
from judge.commands.judging_options import some_judging_options
from judge.commands.options import card_option
from judge.commands.progress import judging_progress
from judge.errors import InputError

#: Exit code when the judge fails at least one probe (the report is still written).
EXIT_PROBE_FAILED = 4


@click.command()
@click.argument("gold", metavar="GOLD.jsonl", type=click.Path(dir_okay=False, exists=True))
@click.option("--rubric", "rubric_ref", required=True, help="Rubric id or id@version.")
@click.option("--model", required=True, help="The judge: a litellm model id.")
@click.option(
    "--out",
    "out_dir",
    required=True,
    type=click.Path(file_okay=False),
    help="Folder for probes.json, probes.md, probes.html and probes.png.",
)
@click.option(
    "--db",
    help="Store for the judgments (default OUT/probes.db, apart from the store routing and "
    "calibration read: perturbed cases are the judge's test, not runs to route).",
)
@click.option(
    "--probe",
    "probes",
    multiple=True,
    help="Run only this probe (repeat); default all. See --list.",
)
@click.option("--limit", type=int, help="Probe only the first N cases of the gold file.")
@card_option(
    exists=True,
    help="The judge's calibration card: write OUT/card.yaml, the same card with a probes "
    "section (routing reads it: e.g. a failed length probe sends long traces to people).",
)
@click.option(
    "--bar",
    type=float,
    default=judge.probes.DEFAULT_BAR,
    show_default=True,
    help="A probe passes when its as-expected rate's 95%% lower bound reaches this, fails "
    "when the upper bound is below it.",
)
@some_judging_options("orders", "variants", "api_base", "token_budget", "concurrency")
@click.option(
    "--dry-run",
    is_flag=True,
    help="Build the perturbations and print where each probe applies; judge nothing.",
)
@click.option("--list", "list_probes", is_flag=True, help="List the probes and exit.")
@click.option("--quiet", is_flag=True, help="No progress bar.")
def probe(
    gold: str,
    rubric_ref: str,
    model: str,
    out_dir: str,
    db: str | None,
    probes: tuple[str, ...],
    limit: int | None,
    card_path: str | None,
    bar: float,
    dry_run: bool,
    list_probes: bool,
    quiet: bool,
    options: judge.judging.JudgeOptions,
) -> None:
    """Probe a judge with perturbations of GOLD.jsonl whose right answer is known.

    Degradations (a passing run made failing) must be caught; invariances (length, style, an
    early failure later fixed, the judge's own family named, a reference shown, the answers
    swapped) must not move the verdict. Exit code 0: no probe failed; 4: some probe failed
    (the reports are written either way); 2: bad input.
    """
    if list_probes:
        for p in judge.probes.PROBES:
            click.echo(f"{p.ref:26} {p.kind:11} {p.case_kind:9} {p.description}")
        return
    chosen = judge.probes.select_probes(list(probes) or None)
    if dry_run:
        _dry_run(gold, chosen, model, limit)
        return
    card = _card_of(card_path, model)
    judge.providers.check_models([model], api_base=options.api_base)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    settings = judge.probes.ProbeOptions(probes=list(probes) or None, limit=limit, bar=bar)
    with (
        judge.store.open_store(db or str(out / "probes.db")) as store,
        judging_progress(quiet=quiet) as shown,
    ):
        run = judge.probes.run_probes(
            store,
            gold,
            rubric=rubric_ref,
            model=model,
            options=options,
            probe_options=settings,
            on_start=shown.on_start,
            on_done=shown.on_done,
        )
    _print_run(run, out, card)
    if run.failed():
        sys.exit(EXIT_PROBE_FAILED)


def _card_of(card_path: str | None, model: str) -> Card | None:
    """The card given with --card, refused unless it is the probed judge's."""
    card = load_card(card_path) if card_path else None
    if card is not None and card.judge.model != model:
        raise InputError(
            f"the card is for {card.judge.model!r}, the probes judge {model!r}",
            field="card",
            hint="probe the card's own judge",
        )
    return card


def _print_run(run: judge.probes.ProbeRun, out: Path, card: Card | None) -> None:
    """Write the reports (and the card with its probes section); print a line per probe."""
    paths = judge.probes.write_reports(run, out)
    for r in run.reports:
        rate = r.as_expected
        shown_rate = "-" if rate.rate is None else f"{rate.rate:.2f} ({rate.k}/{rate.n})"
        shift = "-" if r.shift.mean is None else f"{r.shift.mean:+.2f}"
        click.echo(
            f"{r.probe.ref:26} {r.probe.kind:11} applied {r.applied:4d} skipped {r.skipped:4d}"
            f"  as expected {shown_rate:14}  P(pass) shift {shift:6}  {r.status}"
        )
    failed = run.failed()
    click.echo(f"fails: {', '.join(failed) if failed else 'none'}; report: {paths['html']}")
    if card is not None:
        digest = write_card(card.with_probes(run.card_section()), out / "card.yaml")
        click.echo(f"card with its probes section: {out / 'card.yaml'} ({digest})")


def _dry_run(gold: str, chosen: list[judge.probes.Probe], model: str, limit: int | None) -> None:
    cases, labels, _ = judge.probes.load_gold_cases(gold, limit)
    plan = judge.probes.plan_probes(cases, labels, chosen, model)
    n_pass = sum(1 for c in cases if labels.get(c.id) == "pass")
    n_pairs = sum(1 for c in cases if c.kind == "pairwise")
    pairs = f", {n_pairs} pairs" if n_pairs else ""
    click.echo(f"{len(cases)} cases, {n_pass} passing{pairs}; {len(plan.applied)} perturbations")
    for row in plan.applicability():
        share = "-" if row["applicability"] is None else f"{row['applicability']:.2f}"
        meant = (
            "pairs"
            if judge.probes.PROBES_BY_NAME[row["name"]].case_kind == "pairwise"
            else "passing"
        )
        reasons = "; ".join(f"{why} ({n})" for why, n in sorted(row["skip_reasons"].items()))
        click.echo(
            f"{row['name']:24} {row['kind']:11} applies to {row['applied_to_meant']}/"
            f"{row['meant_for']} {meant} = {share}; applied {row['applied']}, skipped "
            f"{row['skipped']}" + (f": {reasons}" if reasons else "")
        )
