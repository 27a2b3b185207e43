"""``judge demo``: the main job of the README, offline on the embedded model."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING

import click

from judge.defaults import DEFAULT_MODEL, DEFAULT_PROTOCOLS, LOCAL_PREFIX, is_local

if TYPE_CHECKING:
    from judge.types import Judgment

REPO = Path(__file__).resolve().parents[2]
DEMO_GOLD = REPO / "gold" / "demo.jsonl"
DEMO_RUBRIC = DEFAULT_PROTOCOLS["agent_run"].rubric
DEMO_MODEL = DEFAULT_MODEL


@click.command()
@click.option("--gold", "gold_path", type=click.Path(dir_okay=False), default=str(DEMO_GOLD),
              show_default=True, help="Gold set to judge.")
@click.option("--out", "out_dir", type=click.Path(file_okay=False), default="demo-out",
              show_default=True, help="Where the store and the JSONL of judgments go.")
@click.option("--model", default=DEMO_MODEL, show_default=True)
@click.option("--rubric", "rubric_ref", default=DEMO_RUBRIC, show_default=True)
@click.option("--limit", type=int, help="Judge only the first N cases.")
def demo(gold_path: str, out_dir: str, model: str, rubric_ref: str, limit: int | None) -> None:
    """Judge the project's demo gold set on the embedded model and print a table.

    Offline, no API key. Judgments already in the store are reused, so a second run is instant.
    """
    from judge.cases import load_cases
    from judge.commands.run import _run_with_progress, _write_jsonl
    from judge.providers import ModelParams
    from judge.rubrics import load_rubric
    from judge.runner import Runner, plan
    from judge.store import Store

    started = time.perf_counter()
    if is_local(model):
        from judge.local import ensure_model

        alias = model.removeprefix(LOCAL_PREFIX)
        if not alias.startswith("gguf:"):
            click.echo(f"embedded model: {ensure_model(alias)}", err=True)
    rubric = load_rubric(rubric_ref)
    loaded = load_cases(Path(gold_path), limit=limit)
    for error in loaded.errors:
        click.echo(f"invalid record: {error}", err=True)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    db = out / "judge.db"
    protocol = DEFAULT_PROTOCOLS["agent_run"]
    steps = plan(loaded.cases, rubric, [model], orders=protocol.orders,
                 samples=protocol.samples, variants=protocol.variants)
    params = ModelParams(temperature=protocol.temperature, max_tokens=protocol.max_tokens)
    click.echo(
        f"judging {len(loaded.cases)} cases of {gold_path} with {rubric.ref} on {model} "
        "(about 20-60 s each on 2 cores; stored as they finish)",
        err=True,
    )
    with Store(db) as store:
        runner = Runner(store, rubric, params, concurrency=1)
        store.start_batch(runner.batch_id, rubric=rubric.ref, model=model, input=gold_path,
                          params=params.cache_params())
        summary = _run_with_progress(runner, steps, quiet=False)
        store.finish_batch(runner.batch_id, status="done",
                           counts=dict(summary.statuses) | {"cached": summary.cached})
    judgments = sorted((o.judgment for o in summary.outcomes), key=lambda j: j.case_id)
    _write_jsonl(out / "judgments.jsonl", judgments)
    _print_table(judgments, loaded.gold)
    click.echo(
        f"\n{summary.called} judged now, {summary.cached} reused from the store; "
        f"{time.perf_counter() - started:.0f}s in all.\n"
        f"stored in {db} and {out / 'judgments.jsonl'}\n"
        f"next: judge show --db {db}    |    "
        f"judge calibrate --gold {gold_path} --db {db} --judge {model} --out card.yaml",
    )


def _print_table(judgments: list[Judgment], gold: dict[str, str]) -> None:
    """One row per case: the protocol's verdict pools every prompt variant (and order)."""
    from collections import defaultdict

    from rich.console import Console
    from rich.table import Table

    from calibration.inputs import judgment_to_row
    from calibration.intervals import wilson

    by_case: dict[str, list[Judgment]] = defaultdict(list)
    for j in judgments:
        by_case[j.case_id].append(j)
    table = Table(title="judge demo: agent-run-success on the embedded judge")
    for column in ("case", "gold", "verdict", "P(pass)", "pass votes", "cited", "s",
                   "agrees"):
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
