"""Failed runs against the clusters a store keeps: membership, exposure and the report.

A run belongs to the stored cluster that lists it; a run no cluster lists joins the **named**
cluster whose condition it meets (the most specific condition wins, then the cluster id), so
later runs are assigned to people's clusters by their rules; the runs left over are clustered
into new candidates (:func:`judge.failures.cluster.find_clusters`) and kept. A cluster's
exposure (:func:`exposure`, the one place it is counted) is every valid run (failed or not;
never an excluded one) whose run features meet its condition's run-feature pairs
(:func:`exposure_condition`), and its members; its rate is failures / exposed with a Wilson
interval.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from calibration.intervals import wilson
from judge.errors import InputError
from judge.failures.cluster import Candidate, ClusterOptions, find_clusters, valid_failures
from judge.failures.labels import failure_records
from judge.failures.models import STEP_PREFIX, Cluster, RunRecord
from judge.store import Store

#: Names a candidate (or refuses to): returns the named cluster, or the candidate unchanged
#: with ``rejected`` saying why. judge.failures.naming provides the model-backed one.
Namer = Callable[[Candidate, Sequence[RunRecord]], Cluster]


def meets(condition: Mapping[str, str], record: RunRecord) -> bool:
    """Does ``record`` meet every pair of ``condition``? (An empty condition meets nothing.)"""
    return bool(condition) and all(record.features.get(k) == v for k, v in condition.items())


def exposure_condition(condition: Mapping[str, str]) -> dict[str, str]:
    """The pairs of ``condition`` over run features, which every run has, failed or not (not
    the critical step's ``step.*`` features, which only failures have): the rule exposure is
    counted with."""
    return {k: v for k, v in condition.items() if not k.startswith(STEP_PREFIX)}


#: A cluster's exposure: its exposed runs and the case ids of its failures among them.
Exposure = tuple[list[RunRecord], set[str]]


def exposure(cluster: Cluster, runs: Iterable[RunRecord]) -> Exposure:
    """The exposed runs of ``cluster`` and the case ids of its failures among them.

    Exposed: the valid runs (never an excluded one), failed or not, that meet the cluster's
    :func:`exposure_condition`, and the valid runs the cluster lists. Failures: the cluster's
    members when it has any (a member the audit confirmed, a success people found wrong,
    counts though its run passed), else every exposed run that failed. A condition with no
    run-feature pair exposes the members only.
    """
    members = set(cluster.members)
    rule = exposure_condition(cluster.condition)
    found = [r for r in runs if r.excluded is None and (r.case_id in members or meets(rule, r))]
    if members:
        failed = {r.case_id for r in found if r.case_id in members}
    else:
        failed = {r.case_id for r in found if r.failed}
    return found, failed


def load_clusters(store: Store, *, retired: bool = False) -> list[Cluster]:
    """The clusters ``store`` keeps (active ones, unless ``retired``), by id."""
    rows = store.failure_clusters()
    found = [Cluster.model_validate_json(r["json"]) for r in rows]
    return [c for c in found if retired or c.status != "retired"]


def save_clusters(store: Store, clusters: Iterable[Cluster]) -> None:
    """Keep ``clusters`` (replacing the stored record of each id)."""
    now = datetime.now(UTC).isoformat()
    store.save_failure_clusters(
        [
            {
                "cluster_id": c.cluster_id,
                "status": c.status,
                "definition": c.definition,
                "updated_at": now,
                "json": c.model_dump_json(),
            }
            for c in clusters
        ]
    )


def assign(records: Sequence[RunRecord], clusters: Sequence[Cluster]) -> dict[str, str]:
    """Case id -> cluster id for the valid failures that a stored cluster lists or whose
    features meet a named cluster's condition."""
    listed = {m: c.cluster_id for c in clusters for m in c.members}
    named = sorted(
        (c for c in clusters if c.status == "named" and c.condition),
        key=lambda c: (-len(c.condition), c.cluster_id),
    )
    out: dict[str, str] = {}
    for record in valid_failures(records):
        if record.case_id in listed:
            out[record.case_id] = listed[record.case_id]
            continue
        match = next((c for c in named if meets(c.condition, record)), None)
        if match is not None:
            out[record.case_id] = match.cluster_id
    return out


@dataclass
class FailureReport:
    """Every run, every active cluster, and which cluster each valid failure is in."""

    records: list[RunRecord]
    clusters: list[Cluster]
    assignment: dict[str, str] = field(default_factory=dict)
    #: Top TF-IDF terms of the clusters found in this analysis (cluster id -> terms).
    terms: dict[str, list[str]] = field(default_factory=dict)

    def members(self, cluster: Cluster) -> list[str]:
        return sorted(c for c, k in self.assignment.items() if k == cluster.cluster_id)

    def run_lines(self) -> list[dict[str, Any]]:
        """One line per failed run (excluded ones too, with no cluster)."""
        return [
            {
                "case_id": r.case_id,
                "cluster_id": self.assignment.get(r.case_id),
                "symptom": r.symptom,
                "critical_cause": r.critical_cause,
                "root_mechanism": r.root_mechanism,
                "owner": r.owner,
                "excluded": r.excluded,
            }
            for r in self.records
            if r.failed
        ]

    def exposures(self) -> dict[str, Exposure]:
        """Cluster id -> the :func:`exposure` of each active cluster over the report's runs."""
        return {c.cluster_id: exposure(c, self.records) for c in self.clusters}

    def cluster_lines(
        self,
        ranked: Mapping[str, tuple[float, str | None]] | None = None,
        exposures: Mapping[str, Exposure] | None = None,
    ) -> list[dict[str, Any]]:
        """One line per active cluster that has members now: its size, exposure and rate, and
        its priority and override from ``ranked`` (cluster id -> (priority, override), what
        :func:`judge.failures.rank` gives; null when not ranked). ``exposures``: the clusters'
        exposures when already counted (:meth:`exposures`), else they are counted here."""
        ranked = ranked or {}
        exposures = exposures or {}
        out = []
        for cluster in self.clusters:
            if not self.members(cluster):
                continue
            counted = exposures.get(cluster.cluster_id)
            found, failed = counted if counted is not None else exposure(cluster, self.records)
            failures, n = len(failed), len(found)
            low, high = wilson(failures, n)
            out.append(
                {
                    "cluster_id": cluster.cluster_id,
                    "definition": cluster.definition or None,
                    "failures": failures,
                    "exposed": n,
                    "rate": round(failures / n, 6),
                    "rate_ci": [round(low, 6), round(high, 6)],
                    "priority": ranked.get(cluster.cluster_id, (None, None))[0],
                    "override": ranked.get(cluster.cluster_id, (None, None))[1],
                }
            )
        return sorted(out, key=lambda line: (-line["failures"], line["cluster_id"]))

    def jsonl(
        self,
        ranked: Mapping[str, tuple[float, str | None]] | None = None,
        exposures: Mapping[str, Exposure] | None = None,
    ) -> str:
        """The machine form: one line per failed run, then one per cluster (see
        :meth:`cluster_lines`)."""
        lines = [*self.run_lines(), *self.cluster_lines(ranked, exposures)]
        return "".join(json.dumps(line, sort_keys=False) + "\n" for line in lines)


def check_records(records: Sequence[RunRecord], where: str) -> None:
    """Refuse records with nothing to cluster: no failed run, or no diagnosed one."""
    failed = [r for r in records if r.failed]
    if not failed:
        raise InputError(
            "no failed runs: nothing to cluster",
            file=where,
            hint="judge runs first (judge run/score ... --db DB) so that some are found failed",
        )
    if not valid_failures(records):
        reasons = sorted({r.excluded or "" for r in failed})
        raise InputError(
            f"{len(failed)} failed run(s), none with a first-bad-decision report "
            f"(excluded as: {', '.join(reasons)})",
            file=where,
            hint="diagnose them first: judge diagnose --db DB",
        )


def unique_id(wanted: str, taken: set[str]) -> str:
    """``wanted``, or ``wanted-2``, ``wanted-3``... when it is taken."""
    found, n = wanted, 1
    while found in taken:
        n += 1
        found = f"{wanted}-{n}"
    return found


def name_all(
    candidates: Sequence[Candidate], records: Sequence[RunRecord], namer: Namer, taken: set[str]
) -> tuple[list[Cluster], list[Cluster]]:
    """Each candidate named (or refused, then kept as it was), with a unique id; and the
    candidates whose id the naming changed, retired with that lineage."""
    named: list[Cluster] = []
    retired: list[Cluster] = []
    for candidate in candidates:
        old = candidate.cluster
        wanted = set(old.members)
        out = namer(candidate, [r for r in records if r.case_id in wanted])
        if out.cluster_id != old.cluster_id:
            new_id = unique_id(out.cluster_id, taken - {old.cluster_id})
            out = out.model_copy(update={"cluster_id": new_id})
            note = f"named as {new_id}"
            retired.append(
                old.model_copy(update={"status": "retired", "lineage": [*old.lineage, note]})
            )
        taken.add(out.cluster_id)
        named.append(out)
    return named, retired


def cluster_records(
    store: Store,
    records: Sequence[RunRecord],
    *,
    options: ClusterOptions | None = None,
    namer: Namer | None = None,
    save: bool = True,
) -> FailureReport:
    """Assign ``records`` to the clusters ``store`` keeps, cluster the valid failures left
    over into new candidates, name every unnamed cluster with ``namer`` when given, and keep
    them (unless ``save`` is False). Raises InputError when there is nothing to cluster."""
    check_records(records, store.location)
    stored = load_clusters(store)
    assignment = assign(records, stored)
    left = [r for r in valid_failures(records) if r.case_id not in assignment]
    found = find_clusters(left, options)
    terms = {c.cluster.cluster_id: c.terms for c in found}
    # Members a stored cluster gained by its condition are kept in its list.
    clusters = []
    for cluster in stored:
        gained = (c for c, k in assignment.items() if k == cluster.cluster_id)
        clusters.append(cluster.model_copy(update={"members": sorted({*cluster.members, *gained})}))
    changed = [c for c, before in zip(clusters, stored, strict=True) if c != before]
    changed += [c.cluster for c in found]
    retired: list[Cluster] = []
    if namer is not None:
        unnamed = [Candidate(c, []) for c in clusters if c.status == "candidate"] + found
        taken = {c.cluster_id for c in load_clusters(store, retired=True)} | set(terms)
        named, retired = name_all(unnamed, records, namer, taken)
        retired = [c for c in retired if c.cluster_id in {s.cluster_id for s in stored}]
        for before, after in zip(unnamed, named, strict=True):
            terms[after.cluster_id] = terms.get(before.cluster.cluster_id, [])
        keep = {c.cluster_id for c in named} | {c.cluster.cluster_id for c in unnamed}
        clusters = [c for c in clusters if c.cluster_id not in keep] + named
        changed = [c for c in changed if c.cluster_id not in keep] + named + retired
    else:
        clusters += [c.cluster for c in found]
    if save and changed:
        save_clusters(store, changed)
    active = sorted((c for c in clusters if c.status != "retired"), key=lambda c: c.cluster_id)
    members = {m: c.cluster_id for c in active for m in c.members}
    return FailureReport(
        records=list(records),
        clusters=active,
        assignment={
            r.case_id: members[r.case_id] for r in valid_failures(records) if r.case_id in members
        },
        terms=terms,
    )


def cluster_failures(
    store: Store,
    files: Sequence[str | Path] = (),
    *,
    summary: str = "report",
    options: ClusterOptions | None = None,
    namer: Namer | None = None,
    save: bool = True,
) -> FailureReport:
    """The failure clusters of the runs ``store`` holds (each with its stored first-bad-
    decision report), or of the recorded run sets ``files`` (people's critical steps): see
    :func:`cluster_records`. The clusters are kept in ``store``."""
    records = failure_records(store, files, summary=summary)
    return cluster_records(store, records, options=options, namer=namer, save=save)


def require(clusters: Mapping[str, Cluster], cluster_id: str, where: str) -> Cluster:
    """The cluster ``cluster_id``, or an InputError naming the ones that exist."""
    if cluster_id not in clusters:
        known = ", ".join(sorted(clusters)[:10]) or "none yet"
        raise InputError(
            f"no cluster {cluster_id!r}",
            file=where,
            hint=f"known clusters: {known}; list them with judge failures --db DB",
        )
    return clusters[cluster_id]
