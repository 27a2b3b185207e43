"""Failure clusters: failed runs grouped into checkable mechanisms, with dossiers and priorities."""

from judge.failures.assign import (
    FailureReport,
    assign,
    cluster_failures,
    cluster_records,
    exposed,
    load_clusters,
    meets,
)
from judge.failures.cluster import ClusterOptions, find_clusters, valid_failures
from judge.failures.labels import (
    failure_records,
    records_from_cases,
    records_from_files,
    records_from_store,
)
from judge.failures.models import Cluster, Exclusion, RunRecord

__all__ = [
    "Cluster",
    "ClusterOptions",
    "Exclusion",
    "FailureReport",
    "RunRecord",
    "assign",
    "cluster_failures",
    "cluster_records",
    "exposed",
    "failure_records",
    "find_clusters",
    "load_clusters",
    "meets",
    "records_from_cases",
    "records_from_files",
    "records_from_store",
    "valid_failures",
]
