"""``judge serve``: the HTTP API and the review page together (uvicorn)."""

from __future__ import annotations

import logging

import click

import judge.providers
import judge.store
from judge.api.app import ServiceConfig, create_app
from judge.api.proxy import parse_networks
from judge.commands.judging_options import judging_option
from judge.commands.options import db_option, models_option


@click.command()
@db_option()
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", type=int, default=8321, show_default=True)
@models_option(help="Judge models callers may use (repeat; the first is the default).")
@judging_option("api_base")
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
@click.option(
    "--trusted-proxy",
    "trusted_proxies",
    multiple=True,
    help="Address or CIDR of a proxy in front of the service (e.g. 127.0.0.1, 10.0.0.0/8; "
    "repeat, or separate with commas): only its X-Forwarded-For/-Proto/-Host/-Port and "
    "Forwarded headers are read; anyone else's are dropped.",
)
@click.option(
    "--public-url",
    help="The URL people open the review page at (e.g. https://judge.example.org): its "
    "forms are accepted whatever Host header the proxy sends. See DEPLOY.md.",
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
    trusted_proxies: tuple[str, ...],
    public_url: str | None,
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
    try:
        parse_networks(trusted_proxies)
    except ValueError as err:
        raise click.BadParameter(str(err), param_hint="--trusted-proxy") from err
    for name, url in [
        ("--public-url", public_url),
        *(("--trusted-origin", o) for o in trusted_origins),
    ]:
        if url is not None and not url.startswith(("http://", "https://")):
            raise click.BadParameter(
                f"{url!r} is not an origin: give http(s)://HOST[:PORT]", param_hint=name
            )
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
        trusted_proxies=tuple(trusted_proxies),
        public_url=public_url.rstrip("/") if public_url else None,
    )
    # judge's own messages (job takeovers, lease losses) beside uvicorn's, with the time.
    level = getattr(logging, log_level.upper(), logging.INFO)
    logging.basicConfig(
        level=level if isinstance(level, int) else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    app = create_app(config)
    shown = public_url.rstrip("/") if public_url else f"http://{host}:{port}"
    click.echo(
        f"judge serve: {shown}/review (API under /v1, health checks /healthz and /readyz), "
        f"store {judge.store.mask_url(db)}",
        err=True,
    )
    uvicorn.run(app, host=host, port=port, log_level=log_level, proxy_headers=False)
