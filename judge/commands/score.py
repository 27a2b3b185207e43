"""``judge score``, ``judge gate``, ``judge export`` and ``judge runset``."""

from __future__ import annotations

import dataclasses
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import click

import judge.cases
import judge.connectors
import judge.exchange
import judge.failures
import judge.judging
import judge.runsets
import judge.store
from judge.commands.judging_options import judging_options
from judge.commands.label_lines import label_lines
from judge.commands.options import collect, db_option, declare
from judge.commands.platform_errors import platform_errors
from judge.commands.progress import count_progress, judging_progress
from judge.commands.stores import require_store

#: ``judge score``: 0 report written; 1 some run records were invalid (--skip-invalid);
#: 3 some runs could not be scored by the judge (unscored runs are in the report).
EXIT_INVALID_INPUT = 1
EXIT_UNSCORED = 3
#: ``judge gate``: 0 ship; 3 block; 4 inconclusive (2 stays "error", as for every command).
GATE_EXIT = {"ship": 0, "block": 3, "inconclusive": 4}
DEFAULT_OUT_DIR = "report"
#: The report's defaults (title, bootstrap resamples, seed) are judge.runsets.ReportOptions'.
REPORT_DEFAULTS = judge.runsets.ReportOptions()

F = TypeVar("F", bound=Callable[..., Any])


def _report_options(
    title: str, ks: Sequence[int], n_boot: int, seed: int, correct_for_judge: bool
) -> judge.runsets.ReportOptions:
    """``judge score``'s --title, --k, --n-boot, --seed and --correct-for-judge."""
    return judge.runsets.ReportOptions(
        title=title,
        ks=list(ks) or None,
        n_boot=n_boot,
        seed=seed,
        correct_for_judge=correct_for_judge,
    )


@dataclasses.dataclass(frozen=True)
class GateRequest:
    """The regression gate a command line asks for (``judge gate``, ``judge score
    --baseline``): the arguments of :func:`judge.runsets.gate`."""

    baseline: str
    candidate: str
    margin: float
    tolerance: float
    min_tasks: int

    def run(self, report: judge.runsets.RunSetReport) -> judge.runsets.GateResult:
        """The gate's decision on ``report``."""
        return judge.runsets.gate(report, **dataclasses.asdict(self))


def _gate_request(
    baseline: str | None,
    candidate: str | None,
    margin: float | None,
    tolerance: float,
    min_tasks: int,
) -> GateRequest | None:
    """The gate asked for, if any: --baseline, --candidate and --margin come together."""
    if baseline is None and candidate is None and margin is None:
        return None
    if baseline is None or candidate is None or margin is None:
        raise click.UsageError("the gate needs --baseline, --candidate and --margin together")
    return GateRequest(baseline, candidate, margin, tolerance, min_tasks)


def _gate_options(fn: F) -> F:
    """--tolerance and --min-tasks, the same in ``judge gate`` and ``judge score``."""
    return declare(
        fn,
        [
            click.option(
                "--tolerance",
                type=float,
                default=judge.runsets.DEFAULT_TOLERANCE,
                show_default=True,
                help="Rubric dimensions that move more than this are listed.",
            ),
            click.option(
                "--min-tasks",
                type=int,
                default=judge.runsets.DEFAULT_MIN_TASKS,
                show_default=True,
                help="Fewer shared tasks than this: inconclusive.",
            ),
        ],
    )


#: The options each option model of ``judge score`` and ``judge gate`` is built from.
_collect_report = collect(
    "report", ("title", "ks", "n_boot", "seed", "correct_for_judge"), _report_options
)
_collect_gate = collect(
    "gate", ("baseline", "candidate", "margin", "tolerance", "min_tasks"), _gate_request
)


@click.command()
@click.argument("runs_file", metavar="RUNS.jsonl", type=click.Path(dir_okay=False))
@click.option("--rubric", "rubric_ref", help="Rubric id or id@version (not with --gold-labels).")
@click.option(
    "--model", "models", multiple=True, help="Judge model (litellm id); repeat for a panel."
)
@click.option(
    "--card",
    "card_path",
    type=click.Path(dir_okay=False),
    help="Calibration card of the judge: route verdicts and report its error rates.",
)
@click.option(
    "--gold-labels",
    is_flag=True,
    help="Score from each run's official/gold label instead of a judge.",
)
@click.option(
    "--correct-for-judge",
    is_flag=True,
    help="Also report pass@1 corrected for the card's FAR/FRR (Rogan-Gladen).",
)
@click.option(
    "--labels",
    "labels_path",
    type=click.Path(dir_okay=False),
    help="Human labels of some runs (gold JSONL, e.g. from `judge gold export "
    "--plan ID`): pass@1 from labels only and PPI++ beside the judge's.",
)
@click.option(
    "--out-dir",
    default=DEFAULT_OUT_DIR,
    show_default=True,
    help="Where report.json, report.md, report.html and eval-card.yaml go.",
)
@db_option()
@click.option(
    "--k",
    "ks",
    type=int,
    multiple=True,
    help="The k of pass@k / pass^k (repeat); default 1 .. most runs of a task.",
)
@click.option("--title", default=REPORT_DEFAULTS.title, show_default=True)
@click.option(
    "--n-boot",
    type=int,
    default=REPORT_DEFAULTS.n_boot,
    show_default=True,
    help="Bootstrap resamples.",
)
@click.option("--seed", type=int, default=REPORT_DEFAULTS.seed, show_default=True)
@click.option(
    "--skip-invalid", is_flag=True, help="Score the valid runs even when some records are invalid."
)
@click.option("--baseline", help="Also run the regression gate: baseline treatment.")
@click.option("--candidate", help="Gate: candidate treatment.")
@click.option("--margin", type=float, help="Gate: non-inferiority margin on pass@1.")
@_gate_options
@click.option("--no-charts", is_flag=True, help="HTML without charts (faster).")
@click.option("--quiet", is_flag=True, help="No progress bar.")
@judging_options
@_collect_report
@_collect_gate
def score(
    runs_file: str,
    rubric_ref: str | None,
    models: tuple[str, ...],
    card_path: str | None,
    gold_labels: bool,
    labels_path: str | None,
    out_dir: str,
    db: str,
    skip_invalid: bool,
    no_charts: bool,
    quiet: bool,
    options: judge.judging.JudgeOptions,
    report: judge.runsets.ReportOptions,
    gate: GateRequest | None,
) -> None:
    """Judge every run of RUNS.jsonl and write the run-set report (HTML, JSON, Markdown).

    Each completed run is judged by the --model judges of another model family than its agent
    (through the store: nothing is paid for twice), or scored from its gold label with
    --gold-labels. Prints the headline table. With --labels (human labels of a random sample
    drawn by `judge review plan`), the report adds pass@1 and the paired differences from the
    labels alone and by PPI++ (judge plus labels), and the gate uses PPI++'s interval. Exit
    code 0: report written; 1: some records were invalid (--skip-invalid); 3: some runs got no
    verdict (listed in the report as unscored).
    """
    judge.runsets.check_out_dir(out_dir)  # refused before anything is judged
    loaded = _load_runs(runs_file, skip_invalid)
    if loaded.errors:
        note = (
            f"{len(loaded.errors)} invalid record(s) of {runs_file} were skipped "
            "(--skip-invalid): those runs are not in this report."
        )
        report = dataclasses.replace(report, notes=[note])
    # The library checks the request (a judge or gold labels, the rubric, the models and their
    # keys, the card, the labels) before it opens the store: a refused one creates none.
    with judging_progress(quiet=quiet or gold_labels) as shown:
        scored = judge.runsets.score_runs(
            loaded.runs,
            source=runs_file,
            store=db,
            rubric=rubric_ref,
            models=list(models),
            card=card_path,
            gold_labels=gold_labels,
            judge_options=options,
            report=report,
            labels=labels_path,
            on_start=shown.on_start,
            on_done=shown.on_done,
        )
    if gate is not None:
        scored.gate = gate.run(scored)
    paths = judge.runsets.write_report(scored, out_dir, charts=not no_charts)
    with judge.open_store(db) as store:
        clusters = judge.failures.card_clusters(store)
    card = judge.runsets.write_eval_card(
        scored, out_dir, artifacts=list(paths.values()), clusters=clusters
    )
    click.echo(judge.runsets.headline_markdown(scored))
    for line in label_lines(scored):
        click.echo(line, err=True)
    click.echo(f"report: {paths['html']} ({paths['md'].name}, {paths['json'].name})", err=True)
    click.echo(f"eval card: {card}", err=True)
    if scored.gate:
        click.echo(f"gate: {scored.gate.decision}: {scored.gate.reason}", err=True)
    if loaded.errors:
        sys.exit(EXIT_INVALID_INPUT)
    if scored.unscored:
        click.echo(f"{len(scored.unscored)} run(s) got no verdict (see the report)", err=True)
        sys.exit(EXIT_UNSCORED)


def _load_runs(runs_file: str, skip_invalid: bool) -> judge.runsets.LoadedRuns:
    """The run set, each invalid record printed; refused when any is invalid, unless
    ``skip_invalid`` and some runs are valid."""
    loaded = judge.runsets.load_runs(runs_file)
    for error in loaded.errors:
        click.echo(f"invalid record: {error}", err=True)
    if loaded.errors and not (skip_invalid and loaded.runs):
        raise click.ClickException(
            f"{len(loaded.errors)} invalid record(s) in {runs_file}: fix them, or pass "
            "--skip-invalid to score the others (the report then leaves those runs out)"
        )
    return loaded


@click.command()
@click.option(
    "--report",
    "report_path",
    default=f"{DEFAULT_OUT_DIR}/report.json",
    show_default=True,
    type=click.Path(dir_okay=False),
    help="The report.json written by `judge score`.",
)
@click.option("--baseline", required=True, help="Baseline treatment.")
@click.option("--candidate", required=True, help="Candidate treatment.")
@click.option(
    "--margin",
    type=float,
    required=True,
    help="Non-inferiority margin on macro pass@1 (e.g. 0.05).",
)
@_gate_options
@click.option(
    "--out",
    type=click.Path(dir_okay=False),
    help="Write the gate JSON here (default: gate.json beside the report); "
    "eval-card.yaml goes beside it.",
)
@click.option("--no-rewrite", is_flag=True, help="Do not add the gate to report.json/.md/.html.")
@_collect_gate
def gate(report_path: str, out: str | None, no_rewrite: bool, gate: GateRequest | None) -> None:
    """Regression gate: may CANDIDATE replace BASELINE? Hard gates first, then paired
    non-inferiority of pass@1 within --margin, then rubric dimensions.

    Exit code 0: ship; 3: block; 4: inconclusive (too little data is never "no regression").
    """
    assert gate is not None  # --baseline, --candidate and --margin are required here
    path = Path(report_path)
    report = judge.runsets.load_report(path)
    result = gate.run(report)
    target = Path(out) if out else path.parent / "gate.json"
    target.write_text(json.dumps(result.model_dump(mode="json"), indent=1) + "\n", encoding="utf-8")
    report.gate = result
    files = [path, target]
    if not no_rewrite:
        files = [*judge.runsets.write_report(report, path.parent).values(), target]
    card = judge.runsets.write_eval_card(report, target.parent, artifacts=files)
    click.echo(f"{result.decision.upper()}: {result.reason}")
    click.echo(f"  hard gates: {result.hard_gates.summary}")
    ni = result.non_inferiority
    ci = ni.ci95
    interval = f"[{ci[0]:+.3f}, {ci[1]:+.3f}]" if ci else "none"
    diff = f"{ni.diff:+.3f}" if ni.diff is not None else "none"
    click.echo(f"  {ni.metric}: difference {diff}, 95% CI {interval}, {ni.n_shared} shared tasks")
    if report.labels is not None:
        click.echo(f"  interval: {ni.method}")
    for warning in result.warnings:
        click.echo(f"  warning: {warning}")
    for item in result.cannot_support:
        click.echo(f"  cannot support: {item}")
    click.echo(f"gate JSON: {target}", err=True)
    click.echo(f"eval card: {card}", err=True)
    sys.exit(GATE_EXIT[result.decision])


#: Export formats by name (a registry; one for now).
EXPORT_FORMATS = {"otel": "OpenTelemetry GenAI gen_ai.evaluation.result events as OTLP JSON"}


@click.command()
@click.option(
    "--to",
    "to",
    metavar="URL",
    help="Send the verdicts to a platform, next to the traces they judge: "
    "phoenix+http://HOST:PORT/projects/NAME, mlflow+http://HOST:PORT/experiments/ID "
    "(instead of --out).",
)
@click.option(
    "--format", "fmt", type=click.Choice(sorted(EXPORT_FORMATS)), default="otel", show_default=True
)
@db_option()
@click.option(
    "--out",
    type=click.Path(dir_okay=False, allow_dash=True),
    help="Output JSON file ('-' for stdout).",
)
@click.option(
    "--signal",
    type=click.Choice(["logs", "spans"]),
    default="logs",
    show_default=True,
    help="logs: OTLP log records (the semconv's events); spans: span events, for "
    "trace-only backends.",
)
@click.option("--rubric", "rubric_id", help="Only judgments of this rubric id.")
@click.option("--model", help="Only judgments of this judge model.")
@click.option("--batch", "batch_id", help="Only judgments of this batch (with --out).")
@click.option(
    "--force", is_flag=True, help="With --to: send every verdict, even those sent before."
)
@click.option("--quiet", is_flag=True, help="With --to: no progress bar.")
def export(
    to: str | None,
    fmt: str,
    db: str,
    out: str | None,
    signal: str,
    rubric_id: str | None,
    model: str | None,
    batch_id: str | None,
    force: bool,
    quiet: bool,
) -> None:
    """Export stored judgments: as OpenTelemetry GenAI evaluation events (OTLP JSON, --out),
    or to the platform the judged traces came from (--to URL).

    With --to, each (case, rubric, judge model) of the cases imported from URL becomes one
    verdict next to its trace (in Phoenix: an annotation of the root span named after the
    rubric; in Langfuse: a CATEGORICAL score of the trace named after the rubric; in MLflow:
    an LLM_JUDGE feedback assessment of the trace): the label, P(pass), the rationale with the
    cited evidence, and the routing decision when a card routed it. Exporting again updates
    those, and sends only what changed since (the store keeps a ledger); an export that stops
    halfway keeps what was sent.

    Exit code (--to) 0: exported; 2: a bad URL, an unknown project, credentials refused, no
    verdict from URL in the store; 3: the platform cannot be reached or failed midway (run the
    same command again: it sends the rest).
    """
    if (to is None) == (out is None):
        raise click.UsageError("give --out FILE (OTLP JSON) or --to URL (a platform)")
    require_store(db, "judge something first")
    if to is not None:
        if batch_id is not None:
            raise click.UsageError("--batch is for --out; --to sends every verdict from URL")
        _export_to(db, to, rubric_id=rubric_id, model=model, force=force, quiet=quiet)
        return
    assert out is not None
    with judge.store.open_store(db) as store:
        doc, counts = judge.connectors.export_otel(
            store,
            signal=signal,  # type: ignore[arg-type]
            rubric_id=rubric_id,
            model=model,
            batch_id=batch_id,
        )
    text = json.dumps(doc, indent=1, ensure_ascii=False) + "\n"
    if out == "-":
        click.echo(text, nl=False)
    else:
        Path(out).write_text(text, encoding="utf-8")
    click.echo(
        f"{counts['judgments']} judgments -> {counts['events']} {fmt} events "
        f"(semconv {judge.connectors.SEMCONV_VERSION}, {signal}); {counts['linked']} linked "
        f"to their run's trace, {counts['unlinked']} without a trace",
        err=True,
    )


def _export_to(
    db: str, to: str, *, rubric_id: str | None, model: str | None, force: bool, quiet: bool
) -> None:
    with (
        platform_errors(),
        judge.store.open_store(db) as store,
        count_progress("exporting", quiet=quiet) as shown,
    ):
        report = judge.exchange.export_verdicts(
            store,
            to,
            rubric_id=rubric_id,
            model=model,
            force=force,
            on_start=shown.on_start,
            on_progress=shown.on_progress,
        )
    click.echo(
        f"{report.sent} verdicts sent to {report.destination} in {report.seconds:.1f}s "
        f"({report.rate:.0f}/s); {report.unchanged} unchanged since the last export; "
        f"{report.routed} routed with a card ({report.review} for review)",
        err=True,
    )
    if report.unlinked:
        click.echo(
            f"note: {report.unlinked} verdicts have no span to attach to (cases without a root "
            "span id); not sent",
            err=True,
        )
    for source, n in sorted(report.elsewhere.items()):
        click.echo(f"note: {n} judgments of cases from {source} are not for this URL", err=True)


@click.command()
@click.argument("gold_file", metavar="CASES.jsonl", type=click.Path(dir_okay=False))
@click.option("--out", required=True, type=click.Path(dir_okay=False), help="Run-set JSONL.")
@click.option(
    "--task-key",
    default="slices.task_id",
    show_default=True,
    help="Dotted key of the task id in each record.",
)
@click.option(
    "--repetition-key",
    default="slices.trial",
    show_default=True,
    help="Dotted key of the repetition number.",
)
@click.option("--treatment", help="One treatment name for every run.")
@click.option(
    "--treatment-key",
    default="slices.agent_model",
    show_default=True,
    help="Dotted key of the treatment, when --treatment is not given.",
)
@click.option("--benchmark", default="default", show_default=True)
def runset(
    gold_file: str,
    out: str,
    task_key: str,
    repetition_key: str,
    treatment: str | None,
    treatment_key: str,
    benchmark: str,
) -> None:
    """Build a run set from a case or gold JSONL file (cases inline, gold as 'official').

    Without a task id, a run's task is its task text; without a repetition number, runs are
    numbered in file order: the cases `judge import` writes make a run set as they are
    (gold/README.md, "Run sets")."""
    runs = judge.runsets.runset_from_gold(
        judge.cases.read_jsonl(gold_file),
        task_key=task_key,
        repetition_key=repetition_key,
        treatment_key=treatment_key,
        treatment=treatment,
        benchmark=benchmark,
        file=gold_file,
    )
    judge.runsets.write_runs(runs, out)
    check = judge.runsets.load_runs(out)
    for error in check.errors:
        click.echo(f"invalid run: {error}", err=True)
    tasks = {(r.record.benchmark, r.record.task_id) for r in check.runs}
    click.echo(f"{len(check.runs)} runs of {len(tasks)} tasks written to {out}", err=True)
    if check.errors:
        sys.exit(EXIT_INVALID_INPUT)
