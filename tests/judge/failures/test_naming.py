"""The judge names failure clusters through the providers path (the loopback server here):
a checkable mechanism is kept, an outcome is refused and re-asked, the namer never sees the
system under test nor the run ids, and the names are kept with their lineage."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import judge
from judge.failures import (
    ClusterName,
    RunRecord,
    check_name,
    cluster_records,
    load_clusters,
    model_namer,
)
from judge.failures.naming import ConditionPair
from judge.providers import ModelParams
from judge.testing.loopback import LoopbackServer, Reply

MODEL = "openai/namer"
RETRY = "retried the deploy after an ambiguous timeout without checking the operation id"


def _runs() -> list[RunRecord]:
    return [
        RunRecord(
            case_id=f"secret-run-{i}",
            failed=True,
            system={"model": "acme-agent-7b"},
            symptom="two workers were deployed",
            critical_cause=RETRY,
            root_mechanism="reconcile-before-retrying-a-non-idempotent-call",
            owner="model",
            features={
                "horizon": "short",
                "step.owner": "model",
                "step.tool": "deploy",
                "step.error_before": "yes",
            },
            summary=RETRY,
        )
        for i in range(3)
    ]


GOOD = {
    "cluster_id": "retry-after-ambiguous-timeout",
    "definition": "After a deploy tool call timed out ambiguously the agent retried it without "
    "reconciling, creating a duplicate deploy.",
    "exclusions": ["read-only retries"],
    "condition": [{"feature": "step.tool", "value": "deploy"}],
    "cited": ["M1", "M2"],
}
VAGUE = GOOD | {"definition": "The model did poorly on a complex task and the deploy failed."}


def _answer(body: dict[str, Any]) -> Any:
    def respond(request: dict[str, Any]) -> Reply:
        return Reply(content=json.dumps(body))

    return respond


def _params(server: LoopbackServer) -> ModelParams:
    return ModelParams(api_base=server.api_base, max_attempts=1, max_reasks=1)


def test_a_checkable_mechanism_is_kept_with_its_lineage(tmp_path: Path) -> None:
    with LoopbackServer(_answer(GOOD)) as server, judge.open_store(tmp_path / "j.db") as store:
        report = cluster_records(store, _runs(), namer=model_namer(MODEL, _params(server)))
        kept = load_clusters(store)
    prompt = "\n".join(m["content"] for m in server.requests[0]["messages"])
    assert "acme-agent" not in prompt and "secret-run" not in prompt  # blind
    assert "tool = deploy" in prompt and 'id="M1"' in prompt
    (cluster,) = report.clusters
    assert cluster.cluster_id == "retry-after-ambiguous-timeout"
    # The namer's pair over the critical step, and the candidate's run features (what every
    # run has, failed or not: its exposure is counted with them).
    assert cluster.status == "named"
    assert cluster.condition == {"horizon": "short", "step.tool": "deploy"}
    assert cluster.cited == ["secret-run-0", "secret-run-1"]
    assert cluster.lineage[-1].startswith("named retry-after-ambiguous-timeout from c-")
    assert [c.cluster_id for c in kept] == [cluster.cluster_id]
    lines = [json.loads(line) for line in report.jsonl().splitlines()]
    assert {line.get("cluster_id") for line in lines} == {cluster.cluster_id}


def test_an_outcome_is_refused_and_the_cluster_stays_unnamed(tmp_path: Path) -> None:
    with LoopbackServer(_answer(VAGUE)) as server, judge.open_store(tmp_path / "j.db") as store:
        report = cluster_records(store, _runs(), namer=model_namer(MODEL, _params(server)))
    assert len(server.requests) == 2  # asked, then re-asked with the reasons
    reask = server.requests[1]["messages"][-1]["content"]
    assert "not a mechanism" in reask
    (cluster,) = report.clusters
    assert cluster.status == "candidate" and cluster.definition == ""
    assert cluster.rejected is not None and "did poorly" in cluster.rejected


def test_the_validator_names_every_reason() -> None:
    shared = {"step.tool": "deploy", "step.owner": "model"}
    ok = ClusterName.model_validate(GOOD)
    assert check_name(ok, shared, ["M1", "M2", "M3"]) is None
    bad = ClusterName(
        cluster_id="Bad Name",
        definition="complex task failed",
        condition=[ConditionPair(feature="tool", value="search")],
        cited=["M9"],
    )
    reasons = check_name(bad, shared, ["M1"])
    assert reasons is not None
    for part in ("fewer than", "outcome", "slug", "not shared", "not members: M9"):
        assert part in reasons
    unstated = ClusterName.model_validate(
        GOOD | {"definition": "The agent retried a call that timed out without reconciling it."}
    )
    assert "does not state the condition step.tool" in (check_name(unstated, shared, ["M1"]) or "")
    assert re.search(
        "empty", check_name(ok.model_copy(update={"condition": []}), shared, ["M1"]) or ""
    )


def test_no_valid_answer_leaves_the_cluster_unnamed_and_the_rest_goes_on(tmp_path: Path) -> None:
    def broken(request: dict[str, Any]) -> Reply:
        return Reply(content="no JSON here")

    with LoopbackServer(broken) as server, judge.open_store(tmp_path / "j.db") as store:
        report = cluster_records(store, _runs(), namer=model_namer(MODEL, _params(server)))
    (cluster,) = report.clusters
    assert cluster.status == "candidate" and cluster.rejected is not None
    assert cluster.rejected.startswith(MODEL)
    assert len(report.assignment) == 3  # still clustered, only unnamed
