"""``/v1/failures``: the failure clusters a store keeps, ranked by priority, and one cluster's
dossier (the JSON ``judge failures dossier`` writes)."""

from __future__ import annotations

from fastapi import APIRouter

import judge.failures
from judge.api.deps import Caller, Db, Route, resource
from judge.errors import NotFoundError


def clusters(caller: Caller, store: Db) -> list[judge.failures.Priority]:
    """The stored clusters, highest priority first (severe effects above all others), each
    factor with its source (the shipped harm table)."""
    runs = judge.failures.records_from_store(store)
    return judge.failures.rank(judge.failures.load_clusters(store), runs)


def cluster_dossier(cluster_id: str, caller: Caller, store: Db) -> judge.failures.RankedDossier:
    """One stored cluster's dossier and priority over the store's judged runs."""
    found = {c.cluster_id: c for c in judge.failures.load_clusters(store)}
    if cluster_id not in found:
        raise NotFoundError(f"no failure cluster {cluster_id!r} (list them: GET /v1/failures)")
    runs = judge.failures.records_from_store(store)
    return judge.failures.ranked_dossier(found[cluster_id], runs)


def router() -> APIRouter:
    """The failure-cluster routes."""
    return resource(
        "failures",
        Route("GET", "/failures", clusters, list[judge.failures.Priority]),
        Route(
            "GET",
            "/failures/{cluster_id}",
            cluster_dossier,
            judge.failures.RankedDossier,
            errors=(404,),
        ),
    )
