"""Options shared by the commands: where the store is."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any, TypeVar

import click

from judge.defaults import DB_ENV, DEFAULT_DB

F = TypeVar("F", bound=Callable[..., Any])

#: What every ``--db`` says.
DB_HELP = f"The store: a SQLite file or a postgresql://USER:PASSWORD@HOST/DB URL (env {DB_ENV})."


def db_option(help: str = DB_HELP, default: str | None = DEFAULT_DB) -> Callable[[F], F]:
    """``--db``: a SQLite path or a PostgreSQL URL; default $JUDGE_DB, else ``default``."""
    return click.option(
        "--db",
        envvar=DB_ENV,
        default=default,
        show_default=default is not None,
        show_envvar=True,
        help=help,
    )


def env_db() -> str | None:
    """The store named by $JUDGE_DB, if any (for commands whose --db is one source of several)."""
    return os.environ.get(DB_ENV) or None
