"""A command's refusal of a ``--db`` store that does not exist."""

from __future__ import annotations

import click

import judge.store


def require_store(db: str, first: str) -> None:
    """Refuse a ``--db`` store that does not exist rather than create an empty one and report
    that it holds nothing; ``first``: what to do first, in the message's parentheses."""
    if not judge.store.store_exists(db):
        raise click.ClickException(f"{judge.store.mask_url(db)}: no such store ({first})")
