"""``judge card verify|show``: check a calibration card against the judge about to use it, or
print it."""

from __future__ import annotations

from datetime import datetime

import click

import judge.carding
from calibration.card import Card, load_card
from judge.commands.options import gold_option


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def card() -> None:
    """Verify or show calibration cards."""


@card.command("verify")
@click.argument("path", type=click.Path(dir_okay=False))
@click.option("--model", help="The judge model about to use the card.")
@click.option("--rubric", help="The judge's rubric: a digest (sha256:...) or ID@VERSION to load.")
@click.option("--selector", help="The evidence selector version in use.")
@gold_option("Gold JSONL the card must have been calibrated on.")
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
    check = judge.carding.check_card(
        path,
        model=model,
        rubric=rubric,
        selector=selector,
        gold=gold_path,
        recorded=recorded,
        as_of=as_of,
    )
    click.echo(
        f"ok: {path} is intact and valid until {check.card.expires_at.isoformat()}"
        + (f" (checked as of {as_of.date().isoformat()})" if as_of else "")
        + (f"; matches the given {', '.join(check.checked)}" if check.checked else "")
    )


@card.command("show")
@click.argument("path", type=click.Path(dir_okay=False))
@click.option("--yaml", "as_yaml", is_flag=True, help="Print the whole card.")
def show(path: str, as_yaml: bool) -> None:
    """Print a card's bindings, guarantee, thresholds and coverage."""
    c = load_card(path)
    if as_yaml:
        click.echo(c.to_yaml(), nl=False)
        return
    click.echo(card_text(c))


def card_text(c: Card) -> str:
    """A card in a few aligned lines: bindings, gold, guarantee, policy, validity."""
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
    for m in j.members or []:
        bound = f"{m.rubric.id}@{m.rubric.version} ({m.rubric.digest})" if m.rubric.id else "-"
        lines.append(f"member    {m.model}: rubric {bound}, selector {m.evidence_selector.version}")
    if cal.confidence.panel_rule:
        lines.append(f"panel     rule {cal.confidence.panel_rule}")
    if p.test or p.start_shares:
        shares = ", ".join(f"{x:g}" for x in p.start_shares or [])
        lines.append(f"scan      test {p.test}, starts at {shares or '-'} of the items")
    if p.plan:
        lines.append(f"plan      {p.plan.id}: {p.plan.statement}")
    return "\n".join(lines)
