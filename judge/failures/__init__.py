"""Failure clusters: failed runs grouped into checkable mechanisms, with dossiers and priorities."""

from judge.failures.assign import (
    FailureReport,
    assign,
    cluster_failures,
    cluster_records,
    exposed,
    load_clusters,
    meets,
    require,
)
from judge.failures.audit import (
    AuditEstimate,
    AuditPlan,
    confirmed_wrong,
    estimate,
    join_clusters,
    plan_audit,
    queue_audit,
    queue_labels,
    read_labels,
)
from judge.failures.cluster import ClusterOptions, find_clusters, valid_failures
from judge.failures.dossier import (
    Dossier,
    dossier,
    family_runset,
    read_clusters,
    read_records,
)
from judge.failures.labels import (
    failure_records,
    records_from_cases,
    records_from_files,
    records_from_store,
)
from judge.failures.models import Cluster, Exclusion, RunRecord
from judge.failures.priority import HarmTable, Priority, load_harm, priority, rank, top_clusters

__all__ = [
    "AuditEstimate",
    "AuditPlan",
    "Cluster",
    "ClusterOptions",
    "Dossier",
    "Exclusion",
    "FailureReport",
    "HarmTable",
    "Priority",
    "RunRecord",
    "assign",
    "cluster_failures",
    "cluster_records",
    "confirmed_wrong",
    "dossier",
    "estimate",
    "exposed",
    "failure_records",
    "family_runset",
    "find_clusters",
    "join_clusters",
    "load_clusters",
    "load_harm",
    "meets",
    "plan_audit",
    "priority",
    "queue_audit",
    "queue_labels",
    "rank",
    "read_clusters",
    "read_labels",
    "read_records",
    "records_from_cases",
    "records_from_files",
    "records_from_store",
    "require",
    "top_clusters",
    "valid_failures",
]
