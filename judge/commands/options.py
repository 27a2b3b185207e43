"""Options shared by the commands: where the store is, and options read from an option model.

Each option is declared once: ``judge calibrate`` and ``judge compare`` take their defaults
and help from ``judge.CalibrationOptions`` and ``judge.CompareOptions`` (:func:`model_option`);
the judging options of ``judge run``, ``judge score`` and ``judge demo`` come from
``judge.JudgeOptions`` (``judge.commands.judging_options``).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import click

from judge.defaults import DB_ENV, DEFAULT_DB

if TYPE_CHECKING:
    from pydantic import BaseModel

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


def double_fraction_option() -> Callable[[F], F]:
    """``--double-fraction``: the share of queued review items that need two labels."""
    return click.option(
        "--double-fraction",
        type=float,
        default=0.0,
        show_default=True,
        help="Share of review items that need two independent labels.",
    )


def env_db() -> str | None:
    """The store named by $JUDGE_DB, if any (for commands whose --db is one source of several)."""
    return os.environ.get(DB_ENV) or None


def model_option(model: type[BaseModel], name: str, *decls: str, **attrs: Any) -> Callable[[F], F]:
    """A click option for the field ``name`` of an option model (``judge.CalibrationOptions``,
    ``judge.CompareOptions``): its default, and its description as the help unless ``help``
    is given. ``decls``: the option's names (default ``--`` and the field's name with dashes)."""
    found = model.model_fields[name]
    attrs.setdefault("help", found.description)
    if found.default_factory is None:
        attrs.setdefault("default", found.default)
    default = attrs.get("default")
    if not (default is None or default is False or default == () or attrs.get("multiple")):
        attrs.setdefault("show_default", True)
    return click.option(*(decls or ("--" + name.replace("_", "-"),)), name, **attrs)
