"""``judge drift check|show``: re-judge an anchor set with a card's judge, chart P(pass) and
agreement over the checks (EWMA), and mark the card stale on an alarm."""

from __future__ import annotations

import re
import sys

import click

import judge.judging
import judge.probes
import judge.store
from calibration.card import load_card
from judge.commands.judging_options import some_judging_options
from judge.commands.options import card_option, db_option, file_option

#: Exit code of a check that raised the alarm (the card is now stale).
EXIT_ALARM = 5
#: A litellm model id that names a dated version (gpt-4o-2024-08-06, claude-3-5-sonnet-20241022)
#: or a file the user controls (local/...): what a drift chart can trust to stay put.
_PINNED = re.compile(r"(?:19|20)\d\d-?[01]\d-?[0-3]\d|@|^local/")


def pinned(model: str) -> bool:
    """Whether the model id pins a version (a date in the name, a local file)."""
    return _PINNED.search(model) is not None


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def drift() -> None:
    """Anchor-set re-checks of a card's judge, EWMA control charts, and the drift alarm."""


@drift.command("check")
@file_option("--anchor", required=True, exists=True, help="Gold JSONL.")
@card_option(required=True, exists=True)
@db_option(help="The store the checks and the card's stale flag are kept in.")
@some_judging_options("api_base", "variants", "concurrency", "token_budget")
@click.option(
    "--lam", type=float, default=judge.probes.drift.LAMBDA, show_default=True, help="EWMA weight."
)
@click.option(
    "--width",
    type=float,
    default=judge.probes.drift.WIDTH,
    show_default=True,
    help="Control limits, in standard deviations.",
)
@click.option(
    "--baseline", type=int, default=1, show_default=True, help="Checks that set the centre."
)
def check(
    anchor: str,
    card_path: str,
    db: str,
    lam: float,
    width: float,
    baseline: int,
    options: judge.judging.JudgeOptions,
) -> None:
    """Re-judge the anchor set with the card's judge (fresh calls), record the check, and mark
    the card stale when either chart leaves its limits (exit code 5)."""
    card = load_card(card_path)
    if not pinned(card.judge.model):
        click.echo(
            f"warning: {card.judge.model} names no dated version: the provider may move it to "
            "new weights under the same name; pin a dated id (e.g. openai/gpt-4o-2024-08-06)",
            err=True,
        )
    params = judge.probes.ChartParams(lam=lam, width=width, baseline=baseline)
    with judge.store.open_store(db) as store:
        done = judge.probes.check_drift(store, anchor, card, options=options, params=params)
        rows, charts = judge.probes.drift_history(store, card, done.anchor_digest, params)
    _print(rows, charts)
    if done.alarm:
        click.echo(f"ALARM: card {done.card_digest[:19]} marked stale: {done.reason}")
        sys.exit(EXIT_ALARM)
    click.echo(f"in control after {len(rows)} check(s)")


@drift.command("show")
@card_option(required=True, exists=True)
@db_option()
def show(card_path: str, db: str) -> None:
    """Print a card's drift checks and both charts."""
    card = load_card(card_path)
    with judge.store.open_store(db) as store:
        rows, charts = judge.probes.drift_history(store, card)
    _print(rows, charts)


def _print(rows: list[dict[str, object]], charts: judge.probes.Charts) -> None:
    click.echo(
        "check  when                       n   "
        + "P(pass)  EWMA    limits           agree  EWMA    limits"
    )
    for k, (row, p, a) in enumerate(zip(rows, charts.p_pass, charts.agreement, strict=False), 1):

        def part(c: judge.probes.ChartPoint) -> str:
            if c.baseline:
                return f"{c.value:6.3f}  (baseline)             "
            flag = " OUT" if c.out else ""
            return f"{c.value:6.3f}  {c.ewma:6.3f}  [{c.lower:5.3f}, {c.upper:5.3f}]{flag}"

        click.echo(
            f"{k:5d}  {str(row['checked_at'])[:25]:25}  {row['n_scored']!s:3}  {part(p)}  {part(a)}"
        )
