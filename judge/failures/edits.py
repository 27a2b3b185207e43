"""People's edits of kept clusters: merge, split and rename, each kept with its lineage.

* **merge** A B... into A (or a new id): the union of their members, the condition every one
  of them states (the pairs they share), and the others retired with ``merged into A``.
* **split** A by a feature = value: the members whose run has that value move to a new cluster
  whose condition adds the pair; A keeps the rest. Needs the runs (their features).
* **rename** A: a new id, definition or exclusions written by a person (a person's definition
  is theirs: it is not put through the judge's validator, and it marks the cluster named).

A cluster id that does not exist is refused with the ids that do.
"""

from __future__ import annotations

from collections.abc import Sequence

from judge.errors import InputError
from judge.failures.assign import load_clusters, require, save_clusters, unique_id
from judge.failures.models import Cluster, RunRecord
from judge.store import Store


def _by_id(store: Store) -> dict[str, Cluster]:
    return {c.cluster_id: c for c in load_clusters(store)}


def _taken(store: Store) -> set[str]:
    return {c.cluster_id for c in load_clusters(store, retired=True)}


def _noted(cluster: Cluster, note: str, **update: object) -> Cluster:
    return cluster.model_copy(update={**update, "lineage": [*cluster.lineage, note]})


def merge_clusters(
    store: Store, cluster_ids: Sequence[str], *, into: str | None = None, by: str = "a person"
) -> Cluster:
    """Merge the clusters ``cluster_ids`` (two or more) into ``into`` (default the first)."""
    if len(set(cluster_ids)) < 2:
        raise InputError("merge needs two or more different cluster ids", file=store.location)
    clusters = _by_id(store)
    chosen = [require(clusters, c, store.location) for c in dict.fromkeys(cluster_ids)]
    target = into or chosen[0].cluster_id
    if into is not None and into not in cluster_ids and into in _taken(store):
        raise InputError(f"cluster id {into!r} is taken", file=store.location)
    first = chosen[0]
    condition = {
        k: v for k, v in first.condition.items() if all(c.condition.get(k) == v for c in chosen)
    }
    sources = "+".join(c.cluster_id for c in chosen)
    merged = _noted(
        first,
        f"merged {sources} into {target} by {by}",
        cluster_id=target,
        members=sorted({m for c in chosen for m in c.members}),
        condition=condition,
        owners=sorted({o for c in chosen for o in c.owners}),
        cited=list(dict.fromkeys(m for c in chosen for m in c.cited)),
        exclusions=list(dict.fromkeys(e for c in chosen for e in c.exclusions)),
    )
    retired = [
        _noted(c, f"merged into {target} by {by}", status="retired", members=[])
        for c in chosen
        if c.cluster_id != target
    ]
    save_clusters(store, [*retired, merged])
    return merged


def split_cluster(
    store: Store,
    cluster_id: str,
    records: Sequence[RunRecord],
    feature: str,
    value: str,
    *,
    new_id: str | None = None,
    by: str = "a person",
) -> tuple[Cluster, Cluster]:
    """Move the members of ``cluster_id`` whose ``feature`` is ``value`` to a new cluster;
    (what stays, what moved). Refused when no member, or every member, has that value."""
    cluster = require(_by_id(store), cluster_id, store.location)
    features = {r.case_id: r.features for r in records}
    missing = [m for m in cluster.members if m not in features]
    if missing:
        raise InputError(
            f"{len(missing)} member run(s) of {cluster_id} are not among the runs read "
            f"(e.g. {missing[0]})",
            file=store.location,
            hint="give the same runs (--db or RUNS) the cluster was made from",
        )
    moving = sorted(m for m in cluster.members if features[m].get(feature) == value)
    if not moving or len(moving) == len(cluster.members):
        seen = sorted({features[m].get(feature, "-") for m in cluster.members})
        raise InputError(
            f"{feature}={value} holds for {len(moving)} of the {len(cluster.members)} members "
            f"of {cluster_id}: a split must leave runs on both sides",
            file=store.location,
            hint=f"values of {feature} among its members: {', '.join(seen)}",
        )
    target = unique_id(new_id or f"{cluster_id}-{value}".lower().replace(" ", "-"), _taken(store))
    note = f"split {feature}={value} of {cluster_id} into {target} by {by}"
    moved = _noted(
        cluster,
        note,
        cluster_id=target,
        members=moving,
        condition={**cluster.condition, feature: value},
        cited=[c for c in cluster.cited if c in moving],
        status="candidate",
        definition="",
    )
    kept = _noted(
        cluster,
        note,
        members=[m for m in cluster.members if m not in moving],
        cited=[c for c in cluster.cited if c not in moving],
    )
    save_clusters(store, [kept, moved])
    return kept, moved


def rename_cluster(
    store: Store,
    cluster_id: str,
    *,
    new_id: str | None = None,
    definition: str | None = None,
    exclusions: Sequence[str] | None = None,
    by: str = "a person",
) -> Cluster:
    """Give ``cluster_id`` a new id, definition or exclusions (a person's words)."""
    cluster = require(_by_id(store), cluster_id, store.location)
    if new_id is None and definition is None and exclusions is None:
        raise InputError("rename needs a new id, a definition or exclusions", file=store.location)
    update: dict[str, object] = {}
    if definition is not None:
        update |= {"definition": definition.strip(), "status": "named", "rejected": None}
    if exclusions is not None:
        update["exclusions"] = [e.strip() for e in exclusions if e.strip()]
    target = cluster_id
    if new_id is not None and new_id != cluster_id:
        if new_id in _taken(store):
            raise InputError(f"cluster id {new_id!r} is taken", file=store.location)
        target = new_id
    what = ", ".join(k for k in ("definition", "exclusions") if k in update) or "id"
    renamed = _noted(cluster, f"renamed {cluster_id} to {target} ({what}) by {by}", **update)
    renamed = renamed.model_copy(update={"cluster_id": target})
    rows = [renamed]
    if target != cluster_id:
        rows.insert(
            0, _noted(cluster, f"renamed to {target} by {by}", status="retired", members=[])
        )
    save_clusters(store, rows)
    return renamed
