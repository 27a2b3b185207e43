"""``judge keys``: create, list and revoke API keys (stored hashed; a key is printed once)."""

from __future__ import annotations

import click

import judge.service
import judge.store
from judge.commands.options import db_option
from judge.types import ROLES


@click.group()
def keys() -> None:
    """Create, list and revoke API keys for the HTTP API and the review page; rotate the secret
    that signs the page's forms."""


#: What each role may do (the route table itself is judge/api/roles.py).
ROLE_HELP = {
    "admin": "keys, cards, routing, gold export, every job",
    "client": "submit and read its own jobs and judgments (POST /v1/judge, /v1/jobs)",
    "reviewer": "the review queue and page: label items",
    "adjudicator": "the review queue and page: label, and settle items reviewers disagree on",
}


@keys.command("create")
@click.option("--name", required=True, help="Who holds the key: the reviewer name on labels.")
@click.option(
    "--role",
    type=click.Choice(list(ROLES)),
    default=None,
    help="; ".join(f"{role}: {text}" for role, text in ROLE_HELP.items())
    + ". Default: admin for the first key of an empty store, else reviewer.",
)
@db_option()
def create(name: str, role: str | None, db: str) -> None:
    """Create a key and print it once (only a salted hash is stored)."""
    with judge.store.open_store(db) as store:
        principal, key = judge.service.create_key(store, name, role)
    click.echo(key)
    if role is None and principal.role == "admin":
        click.echo(
            f"the first key of an empty store is an admin key ({ROLE_HELP['admin']}): "
            "create the other keys with it (judge keys create --role client|reviewer|adjudicator)",
            err=True,
        )
    click.echo(
        f"key {principal.key_id} for {principal.name} ({principal.role}) stored hashed in "
        f"{judge.store.mask_url(db)}; "
        "this is the only time it is shown",
        err=True,
    )


@keys.command("list")
@db_option()
def list_cmd(db: str) -> None:
    """List keys (ids, names, roles, dates; never the keys)."""
    with judge.store.open_store(db) as store:
        found = judge.service.list_keys(store)
    for key in found:
        state = f"revoked {key.revoked_at.isoformat()[:19]}" if key.revoked_at else "active"
        click.echo(
            f"{key.id}  {key.name:24} {key.role:12} {key.created_at.isoformat()[:19]}  {state}"
        )


@keys.command("revoke")
@click.argument("name_or_id")
@db_option()
def revoke(name_or_id: str, db: str) -> None:
    """Revoke a key by name or id; its page sessions end too."""
    with judge.store.open_store(db) as store:
        done = judge.service.revoke_key(store, name_or_id)
    if not done:
        raise click.ClickException(f"no active key named or with id {name_or_id!r}")
    click.echo(f"revoked {name_or_id}")


@keys.command("rotate-secret")
@click.option(
    "--drop-old",
    is_flag=True,
    help="Forget every earlier secret at once (after a leak): login forms served before are "
    "refused and must be reloaded. Page sessions are not affected.",
)
@db_option()
def rotate_secret(drop_old: bool, db: str) -> None:
    """Replace the secret that signs the review page's forms (shared by every replica).

    Replicas sign with the new secret within 5 s; without --drop-old the earlier secret
    still verifies for JUDGE_SECRET_GRACE_S (a day), so nobody is logged out. Replicas also
    rotate by themselves every JUDGE_SECRET_ROTATE_S (a week)."""
    with judge.store.open_store(db) as store:
        secret_id = judge.service.rotate_secret(store, drop_old=drop_old)
    kept = (
        "earlier secrets forgotten" if drop_old else "earlier secrets verify until their grace ends"
    )
    click.echo(f"signing secret {secret_id} added in {judge.store.mask_url(db)}; {kept}")
