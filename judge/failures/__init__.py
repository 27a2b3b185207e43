"""Failure clusters: failed runs grouped into checkable mechanisms, with dossiers and priorities."""

from judge.failures.models import Cluster, Exclusion, RunRecord

__all__ = ["Cluster", "Exclusion", "RunRecord"]
