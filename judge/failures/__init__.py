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
from judge.failures.edits import merge_clusters, rename_cluster, split_cluster
from judge.failures.labels import (
    failure_records,
    records_from_cases,
    records_from_files,
    records_from_store,
)
from judge.failures.models import Cluster, Exclusion, RunRecord
from judge.failures.naming import ClusterName, check_name, model_namer

__all__ = [
    "Cluster",
    "ClusterName",
    "ClusterOptions",
    "Exclusion",
    "FailureReport",
    "RunRecord",
    "assign",
    "check_name",
    "cluster_failures",
    "cluster_records",
    "exposed",
    "failure_records",
    "find_clusters",
    "load_clusters",
    "meets",
    "merge_clusters",
    "model_namer",
    "records_from_cases",
    "records_from_files",
    "records_from_store",
    "rename_cluster",
    "split_cluster",
    "valid_failures",
]
