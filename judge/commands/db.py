"""``judge db``: migrate a store in place, copy it to another database (SQLite <-> PostgreSQL)."""

from __future__ import annotations

import click
from rich.console import Console
from rich.table import Table

# judge.migrate_store and judge.copy_store are judge.store.copy's, reached through the public
# API (judge/__init__.pyi): judge.store cannot re-export a module that imports it, and a command
# calls no module inside a package (tests/test_architecture.py).
import judge
from judge.commands.options import db_option


@click.group()
def db() -> None:
    """Migrate a store, or copy it to another database (SQLite <-> PostgreSQL)."""


@db.command("migrate")
@db_option()
def migrate_cmd(db: str) -> None:
    """Bring a store to this judge's schema (a release step when JUDGE_DB_MIGRATE=off).

    Replicas starting at once wait for each other: each migration runs once."""
    report = judge.migrate_store(db)
    if report.applied:
        click.echo(
            f"{report.location}: ran {len(report.applied)} migration(s): "
            f"{', '.join(report.applied)}"
        )
    else:
        click.echo(f"{report.location}: up to date ({len(report.schema)} migrations)")


@db.command("copy")
@click.argument("source")
@click.argument("target")
def copy_cmd(source: str, target: str) -> None:
    """Copy every row of the store SOURCE into the new or empty store TARGET, then check each
    table's row count and digest on both sides.

    SOURCE and TARGET are SQLite files or postgresql:// URLs. Stop the services writing to
    SOURCE first. A failed copy leaves TARGET empty: fix the cause and run it again."""
    report = judge.copy_store(source, target)
    table = Table(title=f"{report.source} -> {report.target}")
    for column in ("table", "rows", "digest (both sides)"):
        table.add_column(column, justify="right" if column == "rows" else "left")
    for t in report.tables:
        table.add_row(t.table, str(t.target_rows), t.target_digest[:23] + "...")
    Console(stderr=True).print(table)
    click.echo(
        f"copied {report.rows} rows in {len(report.tables)} tables; every table's count "
        "and digest match"
    )
