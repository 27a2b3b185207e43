"""Failure clusters: failed runs grouped into checkable mechanisms, with dossiers and priorities."""

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
from judge.failures.dossier import (
    Dossier,
    dossier,
    family_runset,
    find_cluster,
    read_clusters,
    read_records,
)
from judge.failures.models import Cluster, Exclusion, RunRecord
from judge.failures.priority import HarmTable, Priority, load_harm, priority, rank, top_clusters

__all__ = [
    "AuditEstimate",
    "AuditPlan",
    "Cluster",
    "Dossier",
    "Exclusion",
    "HarmTable",
    "Priority",
    "RunRecord",
    "confirmed_wrong",
    "dossier",
    "estimate",
    "family_runset",
    "find_cluster",
    "join_clusters",
    "load_harm",
    "plan_audit",
    "priority",
    "queue_audit",
    "queue_labels",
    "rank",
    "read_clusters",
    "read_labels",
    "read_records",
    "top_clusters",
]
