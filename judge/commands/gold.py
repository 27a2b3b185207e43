"""``judge gold``: validate gold sets, and export reviewed labels as one (``gold export``, the
review queue's export under the name people look for)."""

from __future__ import annotations

import click

import judge
from judge.commands.review import export_gold_cmd


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def gold() -> None:
    """Validate and import gold sets."""


@gold.command("validate")
@click.argument("path", type=click.Path(dir_okay=False))
def validate(path: str) -> None:
    """Check a gold JSONL file record by record; print its size, labels and digest."""
    g = judge.load_gold(path)
    labels = ", ".join(f"{k} {v}" for k, v in sorted(g.label_counts.items()))
    kinds = ", ".join(f"{k} {v}" for k, v in sorted(g.kinds.items()))
    click.echo(f"ok: {path}: {g.n} records ({kinds}); labels {labels}; digest {g.digest}")


gold.add_command(export_gold_cmd, "export")
