"""``judge serve``: the HTTP API and the review page together (uvicorn)."""

from __future__ import annotations

import click

import judge
import judge.providers
import judge.store
from judge.api.app import ServiceConfig, create_app
from judge.commands.judging_options import judging_option
from judge.commands.options import db_option
from judge.defaults import DEFAULT_MODEL


@click.command()
@db_option()
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", type=int, default=8321, show_default=True)
@click.option(
    "--model",
    "models",
    multiple=True,
    default=[DEFAULT_MODEL],
    show_default=True,
    help="Judge models callers may use (repeat; the first is the default).",
)
@click.option("--api-base", help="Send model calls to this OpenAI-compatible base URL.")
@click.option(
    "--max-body-mb",
    type=float,
    default=5.0,
    show_default=True,
    help="Largest request body accepted (413 above).",
)
@click.option(
    "--rate",
    type=float,
    default=10.0,
    show_default=True,
    help="Requests per second per key (token bucket); 0 disables the limit.",
)
@click.option("--burst", type=int, default=60, show_default=True, help="Token bucket size.")
@click.option("--blind", is_flag=True, help="Blind review for every item.")
@click.option("--workers", type=int, default=1, show_default=True, help="Job worker threads.")
@judging_option("concurrency")
@click.option(
    "--audit-fraction",
    type=float,
    default=0.05,
    show_default=True,
    help="Audit share when POST /v1/judge routes with a card.",
)
@click.option(
    "--trusted-origin",
    "trusted_origins",
    multiple=True,
    help="Another origin the review page is served from (e.g. https://judge.example.org behind "
    "a TLS proxy): its form posts are accepted (repeat).",
)
@click.option("--log-level", default="info", show_default=True)
def serve(
    db: str,
    host: str,
    port: int,
    models: tuple[str, ...],
    api_base: str | None,
    max_body_mb: float,
    rate: float,
    burst: int,
    blind: bool,
    workers: int,
    concurrency: int | None,
    audit_fraction: float,
    trusted_origins: tuple[str, ...],
    log_level: str,
) -> None:
    """Serve the JSON API (/v1, schema at /openapi.json) and the review page (/review).

    Every route needs an API key (`judge keys create --name NAME`; the first key of a store is
    an admin key): send it as 'Authorization: Bearer KEY' or 'X-API-Key: KEY'; the page asks a
    reviewer or adjudicator key once at /login.
    """
    import uvicorn

    if burst < 1:
        raise click.BadParameter("must be at least 1", param_hint="--burst")
    judge.providers.check_models(
        models, api_base=api_base
    )  # refuse to serve a judge that cannot run
    config = ServiceConfig(
        db=db,
        models=tuple(models),
        api_base=api_base,
        max_body_bytes=int(max_body_mb * 1024 * 1024),
        rate_per_s=rate,
        burst=burst,
        blind=blind,
        job_workers=workers,
        concurrency=concurrency,
        audit_fraction=audit_fraction,
        trusted_origins=tuple(o.rstrip("/") for o in trusted_origins),
    )
    app = create_app(config)
    click.echo(
        f"judge serve: http://{host}:{port}/review (API under /v1), "
        f"store {judge.store.mask_url(db)}",
        err=True,
    )
    uvicorn.run(app, host=host, port=port, log_level=log_level, proxy_headers=False)
