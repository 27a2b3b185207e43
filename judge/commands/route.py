"""``judge route``: apply a calibration card to stored judgments, or to recorded verdicts
(``--recorded``, no store)."""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from typing import TYPE_CHECKING

import click
from rich.console import Console
from rich.table import Table

import judge.diagnosis
import judge.judging
import judge.review
import judge.routing
import judge.store
from calibration.card import load_card
from calibration.fbd import is_step_card_file, load_step_card
from judge.commands.judging_options import some_judging_options
from judge.commands.options import (
    card_option,
    db_option,
    double_fraction_option,
    file_option,
)
from judge.commands.stores import require_store

if TYPE_CHECKING:
    from judge.types import RoutingDecision


@click.command()
@card_option("Calibration card (YAML) written by `judge calibrate`.", required=True)
@db_option()
@file_option(
    "--recorded",
    help="Route the recorded verdicts of this JSONL (../shared/judgments format) instead of a "
    "store: one decision per item (A, B or review; pass, fail or review) with its reason; "
    "nothing is stored or queued.",
)
@click.option(
    "--audit-fraction",
    type=float,
    default=0.05,
    show_default=True,
    help="Share of automatic decisions also sent to review (seeded, per item).",
)
@double_fraction_option()
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--blind", is_flag=True, help="Queue items for blind review.")
@click.option(
    "--limit",
    type=int,
    default=40,
    show_default=True,
    help="Decisions listed (0: none; all are stored).",
)
@click.option(
    "--format", "fmt", type=click.Choice(["table", "jsonl"]), default="table", show_default=True
)
@click.option(
    "--facts-check",
    is_flag=True,
    help="Before deciding, judge the facts-only copy of every run the card would decide "
    "automatically (its tool outputs, files and messages reduced to facts written by code) "
    "with the card's judge; a verdict the copy does not give goes to review (facts_changed).",
)
@some_judging_options("api_base", "concurrency")
def route(
    card_path: str,
    db: str,
    recorded: str | None,
    audit_fraction: float,
    double_fraction: float,
    seed: int,
    blind: bool,
    limit: int,
    fmt: str,
    facts_check: bool,
    options: judge.judging.JudgeOptions,
) -> None:
    """Route stored judgments with a card: auto-accept, auto-reject or human review, with reasons.

    A card whose judge model, rubric digest or evidence-selector version differ from the
    judgments', that has expired, or that audits flagged stale, is refused. With --recorded,
    the card (single judge, cascade or panel) routes recorded verdicts with no store; a file
    the card cannot route whole (an item without a verdict of one of its judges, a duplicate
    verdict, a verdict of another rubric kind) is refused with its line, and nothing is routed.
    """
    if is_step_card_file(card_path):
        _route_steps(card_path, db, recorded, fmt, limit)
        return
    if recorded is not None:
        _route_recorded(card_path, recorded, fmt, limit)
        return
    require_store(db, "judge cases with `judge run` first")
    card = load_card(card_path)
    with judge.store.open_store(db) as store:
        run = judge.review.route(
            store,
            card,
            audit_fraction=audit_fraction,
            seed=seed,
            double_fraction=double_fraction,
            blind=blind,
            facts=options if facts_check else None,
        )
    if fmt == "jsonl":
        for d in run.decisions:
            click.echo(d.model_dump_json())
    elif limit:
        _table(run.decisions[:limit])
    j = card.judge
    rubrics = {f"{m.rubric.id}@{m.rubric.version}" for m in j.members or [j]}
    by_decision: dict[str, Counter[str]] = defaultdict(Counter)
    for (decision, reason), n in run.counts.items():
        by_decision[decision][reason] += n
    click.echo(
        f"card {run.card_digest[:19]} ({j.model}, {', '.join(sorted(rubrics))}): "
        f"{len(run.decisions)} case(s) routed",
        err=True,
    )
    if run.facts is not None:
        click.echo(
            f"facts-only checks: {run.facts.checks} judgment(s) for {run.facts.automatic} "
            f"automatic decision(s), {run.facts.called} new call(s)",
            err=True,
        )
    for decision in ("auto_accept", "auto_reject", "auto_decide", "review"):
        reasons = by_decision.get(decision)
        if reasons:
            detail = ", ".join(f"{r} {n}" for r, n in reasons.most_common())
            click.echo(f"  {decision:12} {sum(reasons.values()):5}  {detail}", err=True)
    click.echo(
        f"audit: {run.audited} automatic decision(s) sampled (fraction {audit_fraction:g}); "
        f"review queue: {run.enqueued} new item(s)",
        err=True,
    )
    shown = judge.store.mask_url(db)
    click.echo(
        f"stored in {shown}; label with `judge serve --db {shown}` "
        f"(page /review) or `judge review queue --db {shown}`",
        err=True,
    )


def _route_recorded(card_path: str, recorded: str, fmt: str, limit: int) -> None:
    card = load_card(card_path)
    decisions = judge.routing.route_recorded(card, recorded)
    if fmt == "jsonl":
        for d in decisions:
            click.echo(json.dumps(d.to_dict()))
    elif limit:
        table = Table()
        for column in ("item", "decision", "score", "reason", "detail"):
            table.add_column(column, overflow="fold")
        for d in decisions[:limit]:
            score = f"{d.score:.4f}" if d.score is not None else ""
            table.add_row(d.item_id[-40:], d.decision, score, d.reason, d.detail)
        Console(width=max(Console().width, 140)).print(table)
    counts = judge.routing.count_decisions(decisions)
    decided = sum(n for (decision, _), n in counts.items() if decision != "review")
    click.echo(
        f"card {card.card_digest[:19]} ({card.judge.model}): {len(decisions)} item(s) of "
        f"{recorded}, {decided} decided without review",
        err=True,
    )
    for (decision, reason), n in sorted(counts.items()):
        click.echo(f"  {decision:8} {n:5}  {reason}", err=True)


def _table(decisions: list[RoutingDecision]) -> None:
    table = Table()
    for column in ("case", "decision", "label", "score", "reason", "detail"):
        table.add_column(column, overflow="fold")
    for d in decisions:
        score = f"{d.score:.3f}" if d.score is not None else ""
        decision = d.decision + (" +audit" if d.audit else "")
        table.add_row(d.case_id[-40:], decision, d.label or "", score, d.reason, d.detail)
    console = Console()
    # Piped output defaults to 80 columns, which folds every row; give the table room.
    Console(width=max(console.width, 140)).print(table)


def _route_steps(card_path: str, db: str, recorded: str | None, fmt: str, limit: int) -> None:
    """A first-bad-decision card: each run's certified step set; one step is located, any
    other set goes to review (recorded step scores, or the card judge's stored diagnoses)."""
    card = load_step_card(card_path)
    if recorded is not None:
        decisions = judge.diagnosis.route_steps_of(card, recorded=recorded)
    else:
        with judge.store.open_store(db) as store:
            decisions = judge.diagnosis.route_steps_of(card, store=store)
    if fmt == "jsonl":
        for d in decisions:
            click.echo(
                json.dumps({"item_id": d.item_id, "decision": d.decision, "step_set": d.step_set})
            )
    elif limit:
        table = Table()
        for column in ("run", "decision", "step set"):
            table.add_column(column, overflow="fold")
        for d in decisions[:limit]:
            table.add_row(d.item_id[-40:], d.decision, ",".join(map(str, d.step_set)) or "(empty)")
        Console(width=max(Console().width, 140)).print(table)
    located = sum(1 for d in decisions if d.decision == "located")
    click.echo(
        f"card {card.card_digest[:19]} ({card.judge.model}, first bad decision): "
        f"{len(decisions)} run(s), {located} located, {len(decisions) - located} to review; "
        f"{card.policy.statement}",
        err=True,
    )
