"""Options shared by the commands: where the store is, options read from an option model, and
option values handed to a command as the model they make.

Each option is declared once: ``judge calibrate`` and ``judge compare`` take their defaults,
help and choices from ``calibration.options.CalibrationOptions`` and ``CompareOptions``
(:func:`calibration_option`, :func:`compare_option`); the judging options of ``judge run``,
``judge score``, ``judge demo``, ``judge probe``, ``judge drift check`` and ``judge serve`` come
from ``judge.judging.JudgeOptions`` (``judge.commands.judging_options``, which loads the
judging package: this module must stay light, ``judge calibrate --help`` imports it).
"""

from __future__ import annotations

import functools
import os
import types
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Literal, TypeVar, Union, cast, get_args, get_origin

import click

from calibration.options import CalibrationOptions, CompareOptions
from judge.defaults import DB_ENV, DEFAULT_DB, DEFAULT_MODEL

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


def file_option(*decls: str, exists: bool = False, **attrs: Any) -> Callable[[F], F]:
    """An option that names a file (never a folder; ``exists``: one that must exist)."""
    return click.option(*decls, type=click.Path(dir_okay=False, exists=exists), **attrs)


def gold_option(help: str, **attrs: Any) -> Callable[[F], F]:
    """``--gold`` (as ``gold_path``): a gold JSONL file."""
    return file_option("--gold", "gold_path", help=help, **attrs)


def card_option(help: str | None = None, **attrs: Any) -> Callable[[F], F]:
    """``--card`` (as ``card_path``): a calibration card file."""
    return file_option("--card", "card_path", help=help, **attrs)


def double_fraction_option() -> Callable[[F], F]:
    """``--double-fraction``: the share of queued review items that need two labels."""
    return click.option(
        "--double-fraction",
        type=float,
        default=0.0,
        show_default=True,
        help="Share of review items that need two independent labels.",
    )


def models_option(help: str) -> Callable[[F], F]:
    """``--model`` (repeatable, as ``models``): judge model ids, the default model unless given."""
    return click.option(
        "--model", "models", multiple=True, default=[DEFAULT_MODEL], show_default=True, help=help
    )


def env_db() -> str | None:
    """The store named by $JUDGE_DB, if any (for commands whose --db is one source of several)."""
    return os.environ.get(DB_ENV) or None


def click_type(hint: Any) -> Any:
    """The click type of a field's type: ``int | None`` -> int, a Literal -> a Choice of its
    values (in their declared order)."""
    if get_origin(hint) in (Union, types.UnionType):
        (hint,) = (a for a in get_args(hint) if a is not type(None))
    if get_origin(hint) is Literal:
        return click.Choice([str(a) for a in get_args(hint)])
    return hint


def model_option(model: type[BaseModel], name: str, *decls: str, **attrs: Any) -> Callable[[F], F]:
    """A click option for the field ``name`` of an option model (``CalibrationOptions``,
    ``CompareOptions``): its default, its description as the help unless ``help`` is given,
    and for a Literal field the choices of that Literal unless ``type`` is given. ``decls``:
    the option's names (default ``--`` and the field's name with dashes)."""
    found = model.model_fields[name]
    attrs.setdefault("help", found.description)
    if found.default_factory is None:
        attrs.setdefault("default", found.default)
    if isinstance(click_type(found.annotation), click.Choice):
        attrs.setdefault("type", click_type(found.annotation))
    default = attrs.get("default")
    if not (default is None or default is False or default == () or attrs.get("multiple")):
        attrs.setdefault("show_default", True)
    return click.option(*(decls or ("--" + name.replace("_", "-"),)), name, **attrs)


#: An option of a ``CalibrationOptions`` field (``judge calibrate``, ``judge review plan``).
calibration_option = functools.partial(model_option, CalibrationOptions)
#: An option of a ``CompareOptions`` field (``judge compare``).
compare_option = functools.partial(model_option, CompareOptions)


def declare(fn: F, options: Sequence[Callable[[F], F]]) -> F:
    """``fn`` with ``options`` declared on it, in this order in its help."""
    for option in reversed(options):
        fn = option(fn)
    return fn


def collect(name: str, options: Sequence[str], build: Callable[..., Any]) -> Callable[[F], F]:
    """Hand the command ``name=build(**values)`` instead of the values of ``options`` (the
    parameter names of options declared on it): a command gets option models (its judging
    options, its report options), not a long list of loose values. ``build`` raising a
    click error or the library's InputError refuses the command line as the options would."""

    def decorate(fn: F) -> F:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            kwargs[name] = build(**{option: kwargs.pop(option) for option in options})
            return fn(*args, **kwargs)

        return cast(F, wrapper)

    return decorate
