"""The ``judge`` command. Thin: each subcommand lives in its own module and is imported only
when it is invoked, so ``judge --help`` loads neither litellm nor numpy nor plotting."""

from __future__ import annotations

import importlib
import os
import sys

import click

from judge.errors import Failure

# name -> "module:attribute" of a click command or group. A registry, not a chain of ifs.
COMMANDS: dict[str, str] = {
    "run": "judge.commands.run:run",
    "show": "judge.commands.run:show",
    "demo": "judge.commands.demo:demo",
    "model": "judge.commands.model:model",
    "rubrics": "judge.commands.run:rubrics",
    "calibrate": "judge.commands.calibrate:calibrate",
    "compare": "judge.commands.compare:compare",
    "card": "judge.commands.card:card",
    "gold": "judge.commands.gold:gold",
    "import": "judge.commands.importer:import_cmd",
    "score": "judge.commands.score:score",
    "gate": "judge.commands.score:gate",
    "export": "judge.commands.score:export",
    "runset": "judge.commands.score:runset",
    "route": "judge.commands.route:route",
    "serve": "judge.commands.serve:serve",
    "keys": "judge.commands.keys:keys",
    "review": "judge.commands.review:review",
    "db": "judge.commands.db:db",
    "probe": "judge.commands.probe:probe",
    "drift": "judge.commands.drift:drift",
    "diagnose": "judge.commands.diagnose:diagnose",
    "check": "judge.commands.check:check",
    "failures": "judge.commands.failures:failures",
}


class LazyGroup(click.Group):
    """A click group whose subcommands are imported on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = COMMANDS.get(cmd_name)
        if target is None:
            return None
        module_name, attr = target.split(":")
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if not exc.name or not exc.name.startswith(module_name.split(".")[0]):
                raise
            return None
        command = getattr(module, attr)
        assert isinstance(command, click.Command)
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        # Show names and the first line of each docstring without importing the modules.
        rows = [(name, _SUMMARIES.get(name, "")) for name in self.list_commands(ctx)]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


_SUMMARIES = {
    "run": "Judge the cases of a JSONL file with a rubric and a model; store every judgment.",
    "show": "List stored judgments.",
    "demo": "Judge the project's demo gold set on the embedded model and print a table.",
    "model": "Install and inspect the embedded local judge model.",
    "rubrics": "List the rubrics and their versions.",
    "calibrate": "Measure a judge against gold and write a calibration card and report.",
    "compare": "Compare judges on the same items: paired differences, McNemar, agreement.",
    "card": "Verify or show calibration cards.",
    "gold": "Validate gold sets, export reviewed labels, import labels from a platform.",
    "import": "Agent traces (Claude Code, Codex, OTel, ..., or a platform: --from URL) as cases.",
    "score": "Judge a run set (or read its gold labels) and write the pass@k / pass^k report.",
    "gate": "Regression gate on a run-set report: ship, block or inconclusive.",
    "export": "Export verdicts as OTLP JSON, or to the platform of the traces (--to URL).",
    "runset": "Build a run-set JSONL from a gold-format file.",
    "probe": "Probe a judge with perturbations of gold cases whose right answer is known.",
    "drift": "Re-judge an anchor set and chart P(pass) and agreement; alarm marks a card stale.",
    "route": "Apply a calibration card to stored judgments: auto-accept, auto-reject or review.",
    "serve": "Serve the HTTP API and the review page (uvicorn).",
    "keys": "Create, list and revoke API keys (stored hashed).",
    "review": "Review queue, labels, agreement, card audits and gold export.",
    "db": "Migrate a store, or copy it to another database (SQLite <-> PostgreSQL).",
    "diagnose": "Name the first bad decision of each failed run (tentative until confirmed).",
    "check": "Deterministic checks of each case's diff and trace (no model); --suites: figures.",
    "failures": "Group failed runs into named failure clusters: merge, split, rename.",
}


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="calibrated-judge")
def cli() -> None:
    """judge: calibrated LLM-as-judge verdicts for AI agent runs."""
    # Never fetch litellm's model cost map over the network.
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")


def main() -> None:
    """Entry point of the ``judge`` console script."""
    try:
        cli.main(prog_name="judge")
    except Failure as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(2)
