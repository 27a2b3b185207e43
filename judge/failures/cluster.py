"""Candidate failure clusters: structured groups first, then text clusters inside each group.

The validity filter comes first (:func:`valid_failures`): excluded runs (parse or infrastructure
errors, runs without a diagnosis) and passed runs never enter a cluster. Runs are then grouped
by structured fields (``group_by``, default the owner of the first bad decision); inside
a group, their local summaries are clustered: TF-IDF over word 1-2 grams, cosine distance,
agglomerative clustering with average linkage cut at ``threshold``. A group larger than
``sample_cap`` is clustered on a seeded sample and every other member joins its nearest
cluster centre, so 10,000 runs take seconds, not a 10,000 x 10,000 distance matrix.

A candidate's condition is every feature all its members share (the group's fields at least):
the checkable rule later failures join it by; its pairs over run features (not ``step.*``,
which only failures have) are the rule its exposure is counted with. Its id is derived from its
members, so the same runs give the same ids.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from judge.digests import short_hash
from judge.failures.models import Cluster, RunRecord

if TYPE_CHECKING:
    import numpy as np

#: Structured fields runs are grouped by before their summaries are clustered.
DEFAULT_GROUP_BY: tuple[str, ...] = ("step.owner",)
#: Cosine distance at which agglomerative clustering stops merging (0: identical texts).
DEFAULT_THRESHOLD = 0.95
#: Groups larger than this are clustered on a seeded sample of this size.
DEFAULT_SAMPLE_CAP = 1500
DEFAULT_SEED = 0
#: Top TF-IDF terms kept per candidate (shown to people and to the namer).
N_TERMS = 8


@dataclass(frozen=True)
class ClusterOptions:
    """How candidates are formed."""

    group_by: tuple[str, ...] = DEFAULT_GROUP_BY
    threshold: float = DEFAULT_THRESHOLD
    sample_cap: int = DEFAULT_SAMPLE_CAP
    seed: int = DEFAULT_SEED


@dataclass
class Candidate:
    """A cluster found by clustering, before anyone names it."""

    cluster: Cluster
    terms: list[str]


def valid_failures(records: Iterable[RunRecord]) -> list[RunRecord]:
    """The failed runs that count as agent failures: not excluded by the validity filter."""
    return [r for r in records if r.failed and r.excluded is None]


def shared_features(records: Sequence[RunRecord]) -> dict[str, str]:
    """The features every one of ``records`` has with the same value."""
    if not records:
        return {}
    first = records[0].features
    return {
        k: v for k, v in sorted(first.items()) if all(r.features.get(k) == v for r in records[1:])
    }


def cluster_id(members: Iterable[str]) -> str:
    """A candidate's id: a digest of its sorted member runs (same runs, same id)."""
    return "c-" + short_hash("\n".join(sorted(members)))[:10]


def _distances(vectors: Any) -> np.ndarray:
    """Cosine distances between rows (L2-normalised TF-IDF), from the sparse product; two
    empty summaries are at distance 0 (alike), an empty one is at 1 from any other."""
    import numpy as np

    similar = np.asarray((vectors @ vectors.T).toarray())
    empty = np.asarray(vectors.getnnz(axis=1) == 0)
    similar[np.ix_(empty, empty)] = 1.0
    distances = np.clip(1.0 - similar, 0.0, 2.0)
    np.fill_diagonal(distances, 0.0)
    return distances


def _labels(vectors: Any, threshold: float, sample_cap: int, seed: int) -> np.ndarray:
    """Cluster labels of ``vectors`` (sparse rows, L2-normalised TF-IDF)."""
    import numpy as np
    from scipy.sparse import csr_matrix
    from sklearn.cluster import AgglomerativeClustering

    n = vectors.shape[0]
    if n < 2:
        return np.zeros(n, dtype=int)
    rng = np.random.default_rng(seed)
    sample = np.sort(rng.choice(n, size=sample_cap, replace=False)) if n > sample_cap else None
    fit = vectors[sample] if sample is not None else vectors
    model = AgglomerativeClustering(
        n_clusters=None, metric="precomputed", linkage="average", distance_threshold=threshold
    )
    found = np.asarray(model.fit_predict(_distances(fit)))
    if sample is None:
        return found
    k = int(found.max()) + 1
    indicator = csr_matrix(
        (np.ones(len(found)), (found, np.arange(len(found)))), shape=(k, len(found))
    )
    centres = np.asarray((indicator @ fit).toarray())
    centres /= np.maximum(np.linalg.norm(centres, axis=1, keepdims=True), 1e-12)
    labels = np.asarray(vectors @ centres.T).argmax(axis=1).ravel()
    labels[sample] = found
    return labels


def _vectorise(texts: Sequence[str]) -> tuple[Any, list[str]]:
    from sklearn.feature_extraction.text import TfidfVectorizer

    vectoriser = TfidfVectorizer(
        ngram_range=(1, 2), min_df=1, max_features=20000, stop_words="english", sublinear_tf=True
    )
    try:
        matrix = vectoriser.fit_transform(texts)
    except ValueError:  # every summary empty or stop words only
        from scipy.sparse import csr_matrix

        return csr_matrix((len(texts), 1)), [""]
    return matrix, list(vectoriser.get_feature_names_out())


def _top_terms(matrix: Any, rows: Any, names: list[str]) -> list[str]:
    import numpy as np

    weights = np.asarray(matrix[rows].mean(axis=0)).ravel()
    order = np.argsort(-weights, kind="stable")[:N_TERMS]
    return [names[i] for i in order if weights[i] > 0]


def group_key(record: RunRecord, group_by: Sequence[str]) -> tuple[str, ...]:
    """The structured group of a run: its values of ``group_by`` (``-`` when missing)."""
    return tuple(record.features.get(f, "-") for f in group_by)


def find_clusters(
    records: Sequence[RunRecord], options: ClusterOptions | None = None
) -> list[Candidate]:
    """Candidate clusters of the valid failures among ``records``, largest first."""
    options = options or ClusterOptions()
    failures = valid_failures(records)
    if not failures:
        return []
    groups: dict[tuple[str, ...], list[int]] = defaultdict(list)
    for i, record in enumerate(failures):
        groups[group_key(record, options.group_by)].append(i)
    matrix, names = _vectorise([r.summary for r in failures])
    found: list[Candidate] = []
    for _key, rows in sorted(groups.items()):
        labels = _labels(matrix[rows], options.threshold, options.sample_cap, options.seed)
        for label in sorted(set(labels.tolist())):
            chosen = [rows[i] for i, v in enumerate(labels.tolist()) if v == label]
            members = [failures[i] for i in chosen]
            ids = sorted(m.case_id for m in members)
            cluster = Cluster(
                cluster_id=cluster_id(ids),
                definition="",
                condition=shared_features(members),
                members=ids,
                owners=sorted({m.owner for m in members if m.owner}),
                lineage=["auto: clustered"],
            )
            found.append(Candidate(cluster, _top_terms(matrix, chosen, names)))
    return sorted(found, key=lambda c: (-len(c.cluster.members), c.cluster.cluster_id))


def partition(records: Sequence[RunRecord], options: ClusterOptions | None = None) -> list[int]:
    """The cluster index of each valid failure of ``records``, in order (for measurement)."""
    failures = valid_failures(records)
    where = {
        m: k for k, c in enumerate(find_clusters(failures, options)) for m in c.cluster.members
    }
    return [where[r.case_id] for r in failures]
