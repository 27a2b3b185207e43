"""The options that choose where judging runs: in this process, or on Ray (``--engine ray``),
and through which deployments (``--router``). Shared by ``judge run`` and ``judge score``."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import click

import judge
import judge.judging
import judge.providers

_NAMES = ("engine", "ray_address", "workers", "router")


def engine_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Add --engine, --ray-address, --workers and --router; the command gets them as one
    ``engine`` argument: the JudgeOptions fields they set (``ray``, ``router``)."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        chosen = {name: kwargs.pop(name) for name in _NAMES}
        return fn(*args, engine=engine_fields(**chosen), **kwargs)

    for option in reversed(
        [
            click.option(
                "--engine",
                type=click.Choice(["local", "ray"]),
                default="local",
                show_default=True,
                help="local: this process; ray: a Ray Data actor pool of judging "
                "workers (pip install 'judge[ray]'); --concurrency is then per "
                "worker.",
            ),
            click.option(
                "--ray-address",
                help="With --engine ray: 'auto' or ray://HOST:10001 joins a running "
                "cluster (default: start a local Ray sized to this machine).",
            ),
            click.option(
                "--workers",
                type=int,
                help="With --engine ray: judging workers (default: one per CPU).",
            ),
            click.option(
                "--router",
                type=click.Path(dir_okay=False),
                help="litellm Router file (YAML/JSON model_list): --model names one of "
                "its model groups, spread over its deployments.",
            ),
        ]
    ):
        wrapper = option(wrapper)
    return wrapper


def engine_fields(
    *, engine: str, ray_address: str | None, workers: int | None, router: str | None
) -> dict[str, Any]:
    """The JudgeOptions fields of the engine options (checked)."""
    if engine != "ray" and (ray_address or workers):
        raise click.UsageError("--ray-address and --workers need --engine ray")
    if workers is not None and workers < 1:
        raise click.BadParameter("must be at least 1", param_hint="--workers")
    # The command's own entry point is safe to import in a pool process: prepare there.
    fields: dict[str, Any] = {"prepare_workers": None}
    if engine == "ray":
        fields["ray"] = judge.judging.RayOptions(address=ray_address, workers=workers)
    if router:
        fields["router"] = judge.providers.read_router_config(router)
    return fields
