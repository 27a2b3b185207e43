"""Property-based run of schemathesis against the served OpenAPI schema (bounded examples).

Every operation gets generated valid and invalid requests, sent with a valid key of a role the
operation allows (judge/api/roles.py) to the real service on 127.0.0.1 (judging through the
loopback server); the responses must match the schema (status codes, content types, bodies) and
never be a server error.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis import GenerationMode
from schemathesis.core.result import Ok

from judge.api.roles import allowed, route_name
from judge.testing.loopback import LoopbackServer
from tests.review_fixtures import MODEL, RunningService, make_card, responder, running_service

#: Schema-valid requests the service rightly refuses with 422: constraints between fields and
#: on server state that JSON Schema does not carry (a pairwise case needs candidates A and B;
#: the rubric must exist; the model must be enabled). Every other check runs, including that
#: such refusals never are server errors and always have the documented error body.
EXCLUDED = [schemathesis.checks.positive_data_acceptance]

#: Generated requests per operation and generation mode (bounded: the suite runs on 2 cores).
EXAMPLES = 12
#: A key of each role (tests/review_fixtures.py: running_service).
KEY_OF_ROLE = {"admin": "ops", "client": "dan", "reviewer": "ann", "adjudicator": "cat"}


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningService]:
    mp = pytest.MonkeyPatch()
    mp.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    db: Path = tmp_path_factory.mktemp("schema") / "s.db"
    with (
        LoopbackServer(responder) as loopback,
        running_service(db, models=(MODEL,), api_base=loopback.api_base, rate_per_s=0) as svc,
    ):
        # Something to find: a stored card.
        import httpx

        httpx.post(
            svc.url + "/v1/cards",
            json={"yaml": make_card().to_yaml()},
            headers={"X-API-Key": svc.keys["ops"]},
        ).raise_for_status()
        yield svc
    mp.undo()


@pytest.fixture(scope="module")
def api_schema(live: RunningService) -> schemathesis.BaseSchema:
    return schemathesis.openapi.from_url(
        live.url + "/openapi.json", headers={"X-API-Key": live.keys["ann"]}
    )


def _operations(api_schema: schemathesis.BaseSchema) -> list[Any]:
    out = []
    for result in api_schema.get_all_operations():
        if not isinstance(result, Ok):
            raise AssertionError(f"the served schema has an invalid operation: {result.err()}")
        out.append(result.ok())
    return out


# schemathesis' own pytest integration (``from_fixture``) does not run under pytest 9 here
# (it reads a private ``_nodeid``), so each operation's strategies are driven by hypothesis.
@pytest.mark.slow
@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE])
def test_api_conforms_to_its_schema(
    api_schema: schemathesis.BaseSchema, live: RunningService, mode: GenerationMode
) -> None:
    operations = _operations(api_schema)
    assert len(operations) >= 18
    failures: list[str] = []
    statuses: Counter[str] = Counter()
    for operation in operations:
        # A key of a role this operation allows (admin when it may), under both schemes, so
        # that our valid key replaces any credential schemathesis generates (the service
        # refuses a request that presents an invalid credential beside a valid one).
        roles = allowed(route_name(operation.method, operation.path))
        assert roles, f"{operation.label} declares no role"
        key = live.keys[KEY_OF_ROLE["admin" if "admin" in roles else sorted(roles)[0]]]
        headers = {"X-API-Key": key, "Authorization": f"Bearer {key}"}
        try:
            _fuzz(operation, mode, headers, statuses)
        except Exception as err:  # noqa: BLE001 - gather every operation's failure, then report
            failures.append(f"{operation.label}: {type(err).__name__}: {str(err)[:1500]}")
    assert not failures, "\n\n".join(failures)
    assert sum(statuses.values()) >= len(operations) * 2
    if mode == GenerationMode.POSITIVE:
        # Valid requests really reached the routes. (Generated bodies for POST /v1/judge and
        # /v1/jobs rarely name an existing rubric, so their 2xx paths are covered in test_api.)
        ok = {k.rsplit(" ", 1)[0] for k in statuses if k.endswith((" 200", " 201", " 202"))}
        assert {"GET /v1/whoami", "GET /v1/cards", "GET /v1/routing"} <= ok
    print(f"{mode.value}: {sum(statuses.values())} requests, by operation and status:")
    for label, n in sorted(statuses.items()):
        print(f"  {label}: {n}")


def _fuzz(
    operation: Any, mode: GenerationMode, headers: dict[str, str], statuses: Counter[str]
) -> None:
    """Send EXAMPLES generated requests for one operation and validate each response."""

    @given(case=operation.as_strategy(generation_mode=mode))
    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
        derandomize=True,
    )
    def check(case: schemathesis.Case) -> None:
        response = case.call_and_validate(headers=headers, excluded_checks=EXCLUDED)
        statuses[f"{operation.label} {response.status_code}"] += 1

    check()
