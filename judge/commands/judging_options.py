"""The judging options of ``judge run``, ``judge score`` and ``judge demo``, declared once.

:func:`judging_options` builds them from ``judge.JudgeOptions``: one option per field that has a
help text (``--orders``, ``--samples``, ... ``--concurrency``, with that field's default, type
and help), then the options that choose where judging runs (in this process, or on Ray with
``--engine ray``) and through which deployments (``--router``). The command gets one
``options`` argument, a ready JudgeOptions. (Apart from ``judge.commands.options``, which
``judge calibrate --help`` imports and which must stay light: this module loads the judging
package.)
"""

from __future__ import annotations

import functools
import types
from collections.abc import Callable
from typing import Any, Literal, TypeVar, Union, get_args, get_origin

import click

import judge
import judge.judging
import judge.providers

F = TypeVar("F", bound=Callable[..., Any])

#: The options that choose where judging runs; they set JudgeOptions' ``ray`` and ``router``
#: (:func:`engine_fields`).
ENGINE_OPTIONS = ("engine", "ray_address", "workers", "router")


def _engine_options() -> list[Callable[[F], F]]:
    return [
        click.option(
            "--engine",
            type=click.Choice(["local", "ray"]),
            default="local",
            show_default=True,
            help="local: this process; ray: a Ray Data actor pool of judging workers "
            "(pip install 'calibrated-judge[ray]'); --concurrency is then per worker.",
        ),
        click.option(
            "--ray-address",
            help="With --engine ray: 'auto' or ray://HOST:10001 joins a running cluster "
            "(default: start a local Ray sized to this machine).",
        ),
        click.option(
            "--workers", type=int, help="With --engine ray: judging workers (default: one per CPU)."
        ),
        click.option(
            "--router",
            type=click.Path(dir_okay=False),
            help="litellm Router file (YAML/JSON model_list): --model names one of its model "
            "groups, spread over its deployments.",
        ),
    ]


def click_type(hint: Any) -> Any:
    """The click type of a field's type: ``int | None`` -> int, a Literal -> a Choice."""
    if get_origin(hint) in (Union, types.UnionType):
        (hint,) = (a for a in get_args(hint) if a is not type(None))
    if get_origin(hint) is Literal:
        return click.Choice([str(a) for a in get_args(hint)])
    return hint


def _offered_option(offered: judge.judging.OfferedOption) -> Callable[[F], F]:
    return click.option(
        "--" + offered.name.replace("_", "-"),
        offered.name,
        type=click_type(offered.type),
        default=offered.default,
        show_default=offered.default is not None,
        help=offered.help,
    )


def judging_option(name: str) -> Callable[[F], F]:
    """One judging option by its JudgeOptions field name (``judge serve --concurrency``), with
    that field's default, type and help."""
    return _offered_option(judge.JudgeOptions.offered()[name])


def judging_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Add the judging options (JudgeOptions' offered fields, then --engine, --ray-address,
    --workers and --router); the command gets them as one ``options`` argument, a JudgeOptions.
    A value the library refuses (``--samples 0``) is its InputError: exit 2 with its message."""
    offered = judge.JudgeOptions.offered()

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        chosen = {name: kwargs.pop(name) for name in offered}
        engine = engine_fields(**{name: kwargs.pop(name) for name in ENGINE_OPTIONS})
        return fn(*args, options=judge.JudgeOptions(**chosen, **engine), **kwargs)

    declared = [_offered_option(o) for o in offered.values()] + _engine_options()
    for option in reversed(declared):
        wrapper = option(wrapper)
    return wrapper


def engine_fields(
    *, engine: str, ray_address: str | None, workers: int | None, router: str | None
) -> dict[str, Any]:
    """The JudgeOptions fields the engine options set (``ray``, ``router``), and the
    commands' ``prepare_workers``."""
    if engine != "ray" and (ray_address or workers):
        raise click.UsageError("--ray-address and --workers need --engine ray")
    # The command's own entry point is safe to import in a pool process: prepare there.
    fields: dict[str, Any] = {"prepare_workers": None}
    if engine == "ray":
        fields["ray"] = judge.judging.RayOptions(address=ray_address, workers=workers)
    if router:
        fields["router"] = judge.providers.read_router_config(router)
    return fields
