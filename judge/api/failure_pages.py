"""The failure-cluster pages: the clusters a store keeps ranked by priority (``/failures``) and
one cluster's dossier (``/failures/{cluster_id}``), the HTML beside ``GET /v1/failures`` and
``GET /v1/failures/{cluster_id}``, for the same role (admin: case ids and priorities are for the
team that fixes them, judge/api/roles.py).

The pages call the library (:func:`judge.failures.ranked_dossiers`,
:func:`judge.failures.ranked_dossier`) over the store's judged runs, as the JSON routes do; what
goes wrong is answered with an HTML page at the status the API gives it (an unknown cluster:
404 naming it).
"""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import HTMLResponse

import judge.failures
from judge.api.deps import Caller, Db
from judge.api.pages import FormToken, PageRoute, render
from judge.errors import NotFoundError

#: Case ids of the eval family listed on a dossier page (the count is always complete).
FAMILY_SHOWN = 50


def clusters_page(who: Caller, store: Db, token: FormToken) -> HTMLResponse:
    """The stored clusters, highest priority first, with their exposure and failure rate."""
    runs = judge.failures.records_from_store(store)
    found = judge.failures.ranked_dossiers(judge.failures.load_clusters(store), runs)
    return render("failures.html", who=who, csrf=token, dossiers=found)


def dossier_page(cluster_id: str, who: Caller, store: Db, token: FormToken) -> HTMLResponse:
    """One stored cluster's dossier and priority, every factor with its source."""
    found = {c.cluster_id: c for c in judge.failures.load_clusters(store)}
    if cluster_id not in found:
        raise NotFoundError(f"no failure cluster {cluster_id!r} (the list: /failures)")
    cluster = found[cluster_id]
    runs = judge.failures.records_from_store(store)
    rule = judge.failures.exposure_condition(cluster.condition)
    return render(
        "dossier.html",
        who=who,
        csrf=token,
        d=judge.failures.ranked_dossier(cluster, runs),
        exposure_rule=rule,
        step_rule={k: v for k, v in cluster.condition.items() if k not in rule},
        family_shown=FAMILY_SHOWN,
    )


def failure_page_router() -> APIRouter:
    """The failure-cluster pages (not in the OpenAPI schema: they are pages, not API)."""
    router = APIRouter(include_in_schema=False, route_class=PageRoute)
    router.add_api_route("/failures", clusters_page, methods=["GET"])
    router.add_api_route("/failures/{cluster_id}", dossier_page, methods=["GET"])
    return router
