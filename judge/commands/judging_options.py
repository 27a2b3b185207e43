"""The judging options of the commands, declared once: the fields of ``judge.judging.JudgeOptions``.

:func:`judging_options` (``judge run``, ``judge score``, ``judge demo``) builds them from
JudgeOptions: one option per field that has a help text (``--orders``, ``--samples``, ...
``--concurrency``, with that field's default, type and help), then the options that choose where
judging runs (in this process, or on Ray with ``--engine ray``) and through which deployments
(``--router``). :func:`some_judging_options` offers some of those fields only (``judge probe``,
``judge drift check``), :func:`judging_option` one (``judge serve``). The command gets one
``options`` argument, a ready JudgeOptions. (Apart from ``judge.commands.options``, which
``judge calibrate --help`` imports and which must stay light: this module loads the judging
package.)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

import judge.judging
import judge.providers
from judge.commands.options import click_type, collect, declare

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
            "(in the clone: pip install -e '.[ray]'); --concurrency is then per worker.",
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


def judging_option(name: str) -> Callable[[F], F]:
    """One judging option by its JudgeOptions field name (``judge serve --concurrency``), with
    that field's default, type and help."""
    offered = judge.judging.JudgeOptions.offered()[name]
    return click.option(
        "--" + offered.name.replace("_", "-"),
        offered.name,
        type=click_type(offered.type),
        default=offered.default,
        show_default=offered.default is not None,
        help=offered.help,
    )


def judging_options(fn: F) -> F:
    """Add the judging options (JudgeOptions' offered fields, then --engine, --ray-address,
    --workers and --router); the command gets them as one ``options`` argument, a JudgeOptions.
    A value the library refuses (``--samples 0``) is its InputError: exit 2 with its message."""
    offered = list(judge.judging.JudgeOptions.offered())
    wrapped = collect("options", [*offered, *ENGINE_OPTIONS], _with_engine)(fn)
    return declare(wrapped, [*map(judging_option, offered), *_engine_options()])


def some_judging_options(*names: str) -> Callable[[F], F]:
    """Add the judging options ``names`` only (fields of JudgeOptions, in its order), judged in
    this process; the command gets them as one ``options`` argument, a JudgeOptions."""
    chosen = [name for name in judge.judging.JudgeOptions.offered() if name in names]
    unknown = set(names) - set(chosen)
    assert not unknown, f"not judging options: {sorted(unknown)}"

    def decorate(fn: F) -> F:
        wrapped = collect("options", chosen, judge.judging.JudgeOptions)(fn)
        return declare(wrapped, [judging_option(name) for name in chosen])

    return decorate


def _with_engine(
    *, engine: str, ray_address: str | None, workers: int | None, router: str | None, **chosen: Any
) -> judge.judging.JudgeOptions:
    where = engine_fields(engine=engine, ray_address=ray_address, workers=workers, router=router)
    return judge.judging.JudgeOptions(**chosen, **where)


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
