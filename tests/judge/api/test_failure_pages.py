"""The failure-cluster pages on a running service: the clusters ranked by priority
(``/failures``) and one cluster's dossier (``/failures/{cluster_id}``), for admins only."""

from __future__ import annotations

from pathlib import Path

import httpx
from markupsafe import escape

import judge
from calibration.intervals import wilson
from judge.failures import Cluster, load_clusters, ranked_dossier, records_from_store
from judge.failures.assign import save_clusters
from tests.fbd_fixtures import diagnose_runs
from tests.review_fixtures import make_case, make_judgment, running_service, seed_store

#: run-a and run-b failed (their first bad decisions diagnosed); case-0..2 passed. All five
#: traces are short, without retries or errors: the run features the condition names.
SEARCH = Cluster(
    cluster_id="one-airline-search",
    definition="the model searched one airline only before booking the cheapest flight",
    exclusions=["searches the user limited to one airline"],
    condition={"horizon": "short", "errors": "no", "step.owner": "model"},
    members=["run-a", "run-b"],
    owners=["model"],
    hypothesis="the search tool's default returns one carrier",
    status="named",
)
#: Exposes no run at all (priority 0): ranked second.
OTHER = Cluster(cluster_id="no-such-traffic", definition="", condition={"benchmark": "none"})


def _seed(db: Path) -> None:
    diagnose_runs(db)
    with judge.open_store(db) as store:
        seed_store(
            store,
            [make_case(i) for i in range(3)],
            [make_judgment(f"case-{i}", 0.9) for i in range(3)],
        )
        save_clusters(store, [SEARCH, OTHER])


def test_the_clusters_and_a_dossier_as_pages(tmp_path: Path) -> None:
    db = tmp_path / "pages.db"
    _seed(db)
    with judge.open_store(db) as store:
        runs = records_from_store(store)
        (cluster,) = [c for c in load_clusters(store) if c.cluster_id == SEARCH.cluster_id]
    expected = ranked_dossier(cluster, runs)
    # Hand-worked: 2 failures and 3 successes meet the run features: exposed 5, rate 0.4.
    assert (expected.population.exposed_runs, expected.population.failures) == (5, 2)
    low, high = wilson(2, 5)
    with running_service(db, rate_per_s=0) as svc:
        admin = {"X-API-Key": svc.keys["ops"]}
        listed = httpx.get(svc.url + "/failures", headers=admin)
        assert listed.status_code == 200, listed.text
        assert listed.headers["content-type"].startswith("text/html")
        page = listed.text
        assert page.index('data-cluster="one-airline-search"') < page.index(
            'data-cluster="no-such-traffic"'
        )
        assert 'href="/failures/one-airline-search"' in page
        assert f"{100 * low:.1f}, {100 * high:.1f}" in page  # the Wilson interval of 2 of 5
        assert f"{expected.priority.priority:.4g}" in page

        one = httpx.get(svc.url + "/failures/one-airline-search", headers=admin)
        assert one.status_code == 200, one.text
        text = one.text
        for part in (
            SEARCH.definition,
            SEARCH.exclusions[0],
            SEARCH.hypothesis,
            "<code>horizon=short</code>",  # the exposure condition
            "<code>step.owner=model</code>",  # the critical step's
            "Exposed runs <strong>5</strong>",
            "failures <strong>2</strong>",
            "<strong>40.0%</strong>",
            f"95% Wilson interval {100 * low:.1f}–{100 * high:.1f}%",
            expected.population.trend.reading,
            expected.eval_family.ship_gate,
            "3 exposed run(s) succeeded: case-0, case-1, case-2",
            "Confirmed first bad decisions",
            "Counterfactual replays recovered</dt><dd>not recorded",
            f"Priority {expected.priority.priority:.4g}",
        ):
            assert escape(part) in text or part in text, part
        for factor in expected.priority.factors:
            assert f'data-factor="{factor.name}"' in text
            assert escape(factor.source) in text, factor.source

        missing = httpx.get(svc.url + "/failures/zzz", headers=admin)
        assert missing.status_code == 404
        assert "no failure cluster &#39;zzz&#39;" in missing.text

        for page_path in ("/failures", "/failures/one-airline-search"):
            for who in ("ann", "cat", "dan"):
                refused = httpx.get(svc.url + page_path, headers={"X-API-Key": svc.keys[who]})
                assert refused.status_code == 403, (page_path, who)
                assert "one-airline-search" not in refused.text
