"""``judge demo``: the main job of the README, offline on the embedded model."""

from __future__ import annotations

import time
from collections import defaultdict
from pathlib import Path
from typing import TYPE_CHECKING

import click
from rich.console import Console
from rich.table import Table

import judge.cases
import judge.judging
import judge.local
import judge.providers
import judge.rubrics
import judge.store
from calibration.inputs import judgment_to_row
from calibration.intervals import wilson
from judge.commands.judging_options import judging_options
from judge.commands.options import db_option, gold_option
from judge.commands.progress import judging_progress
from judge.commands.run import write_jsonl
from judge.defaults import DEFAULT_MODEL, DEFAULT_PROTOCOLS, LOCAL_PREFIX, is_local

if TYPE_CHECKING:
    from judge.types import Judgment

REPO = Path(__file__).resolve().parents[2]
DEMO_GOLD = REPO / "gold" / "demo.jsonl"
DEMO_RUBRIC = DEFAULT_PROTOCOLS["agent_run"].rubric
DEMO_MODEL = DEFAULT_MODEL


@click.command()
@gold_option("Gold set to judge.", default=str(DEMO_GOLD), show_default=True)
@click.option(
    "--out",
    "out_dir",
    type=click.Path(file_okay=False),
    default="demo-out",
    show_default=True,
    help="Where the store and the JSONL of judgments go.",
)
@click.option("--model", default=DEMO_MODEL, show_default=True)
@click.option("--rubric", "rubric_ref", default=DEMO_RUBRIC, show_default=True)
@click.option("--limit", type=int, help="Judge only the first N cases.")
@db_option(
    help="The store: a SQLite file or a postgresql:// URL (env JUDGE_DB); default OUT/judge.db.",
    default=None,
)
@judging_options
def demo(
    gold_path: str,
    out_dir: str,
    model: str,
    rubric_ref: str,
    limit: int | None,
    db: str | None,
    options: judge.judging.JudgeOptions,
) -> None:
    """Judge the project's demo gold set on the embedded model and print a table.

    Offline, no API key. Judgments already in the store are reused, so a second run is instant.
    The judging options are judge run's, with the same defaults: the default protocol.
    """
    started = time.perf_counter()
    # An unknown id or a missing key: exit 2, nothing stored.
    judge.providers.check_models([model], api_base=options.api_base, router=options.router)
    if is_local(model):
        alias = model.removeprefix(LOCAL_PREFIX)
        if not alias.startswith("gguf:"):
            click.echo(f"embedded model: {judge.local.install_model(alias).path}", err=True)
    rubric = judge.rubrics.load_rubric(rubric_ref)
    loaded = judge.cases.load_cases(Path(gold_path), limit=limit)
    for error in loaded.errors:
        click.echo(f"invalid record: {error}", err=True)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    store_at = db or str(out / "judge.db")
    db = judge.store.mask_url(store_at)
    click.echo(
        f"judging {len(loaded.cases)} cases of {gold_path} with {rubric.ref} on {model} "
        "(about 20-60 s each on 2 cores; stored as they finish)",
        err=True,
    )
    with judge.store.open_store(store_at) as store, judging_progress(quiet=False) as shown:
        summary = judge.judging.judge_cases(
            store,
            loaded.cases,
            rubric=rubric,
            models=[model],
            options=options,
            on_start=shown.on_start,
            on_done=shown.on_done,
            source=gold_path,
        )
    judgments = sorted((o.judgment for o in summary.outcomes), key=lambda j: j.case_id)
    write_jsonl(out / "judgments.jsonl", judgments)
    # Masked re-judgments (suspect evidence withheld) check verdicts; the table shows verdicts.
    _print_table([j for j in judgments if j.provenance.masked_from is None], loaded.gold)
    click.echo(
        f"\n{summary.called} judged now, {summary.cached} reused from the store; "
        f"{time.perf_counter() - started:.0f}s in all.\n"
        f"stored in {db} and {out / 'judgments.jsonl'}\n"
        f"next: judge show --db {db}    |    "
        f"judge calibrate --gold {gold_path} --db {db} --judge {model} --out card.yaml",
    )


def _print_table(judgments: list[Judgment], gold: dict[str, str]) -> None:
    """One row per case: the protocol's verdict pools every prompt variant (and order)."""
    by_case: dict[str, list[Judgment]] = defaultdict(list)
    for j in judgments:
        by_case[j.case_id].append(j)
    table = Table(title="judge demo: agent-run-success on the embedded judge")
    for column in ("case", "gold", "verdict", "P(pass)", "pass votes", "cited", "s", "agrees"):
        table.add_column(column)
    agree = decided = 0
    for case_id, group in by_case.items():
        rows = [judgment_to_row(j) for j in group]
        probs = [r.prob for r in rows if r.status == "ok" and r.prob is not None]
        truth = gold.get(case_id, "?")
        if probs:
            p_pass = sum(probs) / len(probs)
            label = "pass" if p_pass >= 0.5 else "fail"
        else:
            p_pass, label = None, "/".join(sorted({j.status for j in group}))
        ok = ""
        if p_pass is not None and truth in ("pass", "fail"):
            decided += 1
            agree += label == truth
            ok = "yes" if label == truth else "NO"
        first = min(group, key=lambda j: j.provenance.variant)
        table.add_row(
            case_id.split("/")[-1],
            truth,
            label,
            f"{p_pass:.2f}" if p_pass is not None else "",
            f"{sum(1 for j in group if j.verdict and j.verdict.label == 'pass')}/{len(group)}",
            ",".join(first.verdict.cited) if first.verdict else "",
            f"{sum(j.usage.latency_s for j in group):.0f}",
            ok,
        )
    console = Console()
    console.print(table)
    if decided:
        lo, hi = wilson(agree, decided)
        console.print(
            f"agreement with gold: {agree}/{decided} cases = {agree / decided:.2f} "
            f"(95% Wilson interval {lo:.2f}-{hi:.2f}); a small model on a small set: "
            "calibrate before acting on these verdicts."
        )
