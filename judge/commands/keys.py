"""``judge keys``: create, list and revoke API keys (stored hashed; a key is printed once)."""

from __future__ import annotations

import click


@click.group()
def keys() -> None:
    """Create, list and revoke API keys for the HTTP API and the review page."""


@keys.command("create")
@click.option("--name", required=True, help="Who holds the key: the reviewer name on labels.")
@click.option(
    "--role",
    type=click.Choice(["reviewer", "adjudicator"]),
    default="reviewer",
    show_default=True,
    help="Adjudicators settle items on which two reviewers disagree.",
)
@click.option("--db", default="judge.db", show_default=True, help="SQLite store.")
def create(name: str, role: str, db: str) -> None:
    """Create a key and print it once (only a salted hash is stored)."""
    from judge.api.keys import create_key
    from judge.store import Store

    with Store(db) as store:
        principal, key = create_key(store, name, role)
    click.echo(key)
    click.echo(
        f"key {principal.key_id} for {principal.name} ({principal.role}) stored hashed in {db}; "
        "this is the only time it is shown",
        err=True,
    )


@keys.command("list")
@click.option("--db", default="judge.db", show_default=True, help="SQLite store.")
def list_cmd(db: str) -> None:
    """List keys (ids, names, roles, dates; never the keys)."""
    from judge.api.keys import list_keys
    from judge.store import Store

    with Store(db) as store:
        rows = list_keys(store)
    for row in rows:
        state = f"revoked {row['revoked_at'][:19]}" if row["revoked_at"] else "active"
        click.echo(
            f"{row['id']}  {row['name']:24} {row['role']:12} {row['created_at'][:19]}  {state}"
        )


@keys.command("revoke")
@click.argument("name_or_id")
@click.option("--db", default="judge.db", show_default=True, help="SQLite store.")
def revoke(name_or_id: str, db: str) -> None:
    """Revoke a key by name or id; its page sessions end too."""
    from judge.api.keys import revoke_key
    from judge.store import Store

    with Store(db) as store:
        done = revoke_key(store, name_or_id)
    if not done:
        raise click.ClickException(f"no active key named or with id {name_or_id!r}")
    click.echo(f"revoked {name_or_id}")
