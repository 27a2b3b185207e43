"""``GET /v1/failures`` and ``GET /v1/failures/{cluster_id}`` on a running service."""

from __future__ import annotations

from pathlib import Path

import httpx

from judge.failures import Cluster
from judge.failures.assign import save_clusters
from judge.store import Store
from tests.review_fixtures import running_service


def test_clusters_and_a_dossier_over_http(tmp_path: Path) -> None:
    db = tmp_path / "judge.db"
    with running_service(db) as svc:
        with Store(str(db)) as store:
            save_clusters(
                store,
                [
                    Cluster(cluster_id="a", definition="d", condition={"tool": "deploy"}),
                    Cluster(cluster_id="b", definition="e", condition={"tool": "read"}),
                ],
            )
        admin = {"X-API-Key": svc.keys["ops"]}
        listed = httpx.get(svc.url + "/v1/failures", headers=admin)
        assert listed.status_code == 200
        assert [p["cluster_id"] for p in listed.json()] == ["a", "b"]
        assert listed.json()[0]["factors"][0]["name"] == "exposure"
        one = httpx.get(svc.url + "/v1/failures/a", headers=admin)
        assert one.status_code == 200
        body = one.json()
        assert body["cluster_id"] == "a" and body["population"]["exposed_runs"] == 0
        assert body["priority"]["cluster_id"] == "a"
        missing = httpx.get(svc.url + "/v1/failures/zzz", headers=admin)
        assert missing.status_code == 404
        assert "no failure cluster 'zzz'" in missing.json()["error"]["message"]
        reviewer = httpx.get(svc.url + "/v1/failures", headers={"X-API-Key": svc.keys["ann"]})
        assert reviewer.status_code == 403
