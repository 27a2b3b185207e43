"""Priority, not frequency: what fixing a cluster is worth, every factor with its source.

    priority = exposure x P(failure | exposure) x harm x fixability x confidence / cost

- exposure: valid runs where the cluster's condition holds (the dossier's population);
- P(failure | exposure): its failures / exposure (so exposure x P is the failure count, kept
  as two factors so that a reader sees which one moved);
- harm: the mean over the failures of each failure's harm (the largest of its effects' and
  its violated invariant's harm in the table, else the table's default);
- fixability and cost: the table's line for the cluster's most common violated invariant,
  else for its first owner, else the default;
- confidence: the mean over the failures of what their first bad decision is worth
  (confirmed 1, tentative 0.5, undiagnosed 0.25 in the shipped table).

The table is judge/failures/harm.yaml (``--harm FILE`` for another). Hard override: a cluster
with a failure whose effect (or invariant) is marked ``override`` in the table (irreversible,
data loss, safety) ranks above every cluster without one, whatever the counts; overridden
clusters rank among themselves by priority.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import Field, ValidationError

from judge.base import Strict
from judge.errors import InputError, first_error
from judge.failures.assign import Exposure, FailureReport, exposure, load_clusters
from judge.failures.dossier import Dossier, dossier
from judge.failures.labels import records_from_store
from judge.failures.models import Cluster, RunRecord
from judge.store import Store

if TYPE_CHECKING:
    from judge.runsets import ClusterSource, RunSetReport

#: The shipped table.
DEFAULT_HARM_FILE = Path(__file__).with_name("harm.yaml")


class Entry(Strict):
    """One line of the table: what it sets (absent: taken from elsewhere)."""

    harm: float | None = Field(default=None, ge=0)
    fixability: float | None = Field(default=None, ge=0, le=1)
    cost: float | None = Field(default=None, gt=0)
    override: bool = False


class Defaults(Strict):
    harm: float = Field(default=1.0, ge=0)
    fixability: float = Field(default=0.5, ge=0, le=1)
    cost: float = Field(default=1.0, gt=0)


class ConfidenceWeights(Strict):
    confirmed: float = Field(default=1.0, ge=0, le=1)
    tentative: float = Field(default=0.5, ge=0, le=1)
    undiagnosed: float = Field(default=0.25, ge=0, le=1)


class HarmTable(Strict):
    """The user-editable table of harm, fixability and cost (judge/failures/harm.yaml)."""

    default: Defaults = Field(default_factory=Defaults)
    effects: dict[str, Entry] = Field(default_factory=dict)
    owners: dict[str, Entry] = Field(default_factory=dict)
    invariants: dict[str, Entry] = Field(default_factory=dict)
    confidence: ConfidenceWeights = Field(default_factory=ConfidenceWeights)
    #: Where the table was read from (the factors' sources name it).
    source: str = "judge/failures/harm.yaml"


def load_harm(path: str | Path | None = None) -> HarmTable:
    """The table at ``path`` (the shipped one when None); InputError naming the file."""
    import yaml

    file = Path(path) if path is not None else DEFAULT_HARM_FILE
    try:
        data = yaml.safe_load(file.read_text(encoding="utf-8")) or {}
    except OSError as err:
        raise InputError(f"cannot read the harm table: {err.strerror}", file=str(file)) from err
    except yaml.YAMLError as err:
        raise InputError(f"not YAML: {err}", file=str(file)) from err
    if not isinstance(data, dict):
        raise InputError("the harm table must be a mapping", file=str(file))
    source = "judge/failures/harm.yaml" if path is None else str(file)
    try:
        return HarmTable.model_validate({**data, "source": source})
    except ValidationError as err:
        raise first_error(err, file=str(file)) from err


class Factor(Strict):
    name: str
    value: float
    source: str


class Priority(Strict):
    """A cluster's priority, its factors and its hard override (None, or the reason)."""

    cluster_id: str
    definition: str
    priority: float
    override: str | None
    factors: list[Factor]


class RankedDossier(Dossier):
    """A cluster's dossier with its priority (what ``judge failures dossier`` writes)."""

    priority: Priority


def _failure_harm(run: RunRecord, table: HarmTable) -> tuple[float, str]:
    """One failure's harm and the table line it came from."""
    lines = [(f"effects.{e}", table.effects[e]) for e in run.effects if e in table.effects]
    if run.invariant is not None and run.invariant in table.invariants:
        lines.append((f"invariants.{run.invariant}", table.invariants[run.invariant]))
    rated = [(entry.harm, name) for name, entry in lines if entry.harm is not None]
    if not rated:
        return table.default.harm, "default"
    return max(rated)


def _harm(failures: Sequence[RunRecord], table: HarmTable) -> Factor:
    if not failures:
        return Factor(name="harm", value=0.0, source="no failures")
    per = [_failure_harm(r, table) for r in failures]
    counts = Counter(name for _, name in per)
    value = sum(h for h, _ in per) / len(per)
    parts = ", ".join(f"{name} x{n}" for name, n in sorted(counts.items()))
    return Factor(name="harm", value=value, source=f"{table.source}: mean of {parts}")


def _engineering(
    cluster: Cluster, failures: Sequence[RunRecord], table: HarmTable
) -> tuple[Factor, Factor]:
    """Fixability and cost: the most common violated invariant's line, else the first owner's,
    else the default (each factor separately: a line may set only one)."""
    invariants = Counter(r.invariant for r in failures if r.invariant is not None)
    owners = list(cluster.owners) or [
        o for o, _ in Counter(r.owner for r in failures if r.owner).most_common() if o
    ]
    candidates: list[tuple[str, Entry]] = []
    for name, _ in invariants.most_common():
        if name in table.invariants:
            candidates.append((f"invariants.{name}", table.invariants[name]))
    candidates += [(f"owners.{o}", table.owners[o]) for o in owners if o in table.owners]
    found = []
    for field in ("fixability", "cost"):
        value, source = getattr(table.default, field), "default"
        for name, entry in candidates:
            if getattr(entry, field) is not None:
                value, source = getattr(entry, field), name
                break
        found.append(Factor(name=field, value=float(value), source=f"{table.source}: {source}"))
    return found[0], found[1]


def _confidence(failures: Sequence[RunRecord], table: HarmTable) -> Factor:
    if not failures:
        return Factor(name="confidence", value=0.0, source="no failures")
    w = table.confidence
    confirmed = sum(1 for r in failures if r.fbd_confirmed)
    tentative = sum(1 for r in failures if not r.fbd_confirmed and r.critical_cause is not None)
    undiagnosed = len(failures) - confirmed - tentative
    value = (confirmed * w.confirmed + tentative * w.tentative + undiagnosed * w.undiagnosed) / len(
        failures
    )
    return Factor(
        name="confidence",
        value=value,
        source=(
            f"{confirmed} confirmed x {w.confirmed}, {tentative} tentative x {w.tentative}, "
            f"{undiagnosed} undiagnosed x {w.undiagnosed} first bad decisions "
            f"({table.source}: confidence)"
        ),
    )


def _override(failures: Sequence[RunRecord], table: HarmTable) -> str | None:
    hits: Counter[str] = Counter()
    for run in failures:
        marks = {e for e in run.effects if e in table.effects and table.effects[e].override}
        if run.invariant in table.invariants and table.invariants[run.invariant].override:
            marks.add(f"invariant {run.invariant}")
        hits.update(marks)
    if not hits:
        return None
    named = ", ".join(
        f"{name} in {n} of {len(failures)} failures" for name, n in sorted(hits.items())
    )
    return f"severe effect ({named}): ranked above clusters without one, whatever the counts"


def priority(
    cluster: Cluster,
    runs: Sequence[RunRecord],
    table: HarmTable,
    *,
    counted: Exposure | None = None,
) -> Priority:
    """The priority of ``cluster`` over ``runs`` with ``table``; ``counted``: its
    :func:`exposure` over ``runs`` when already counted."""
    exposed, failed = counted if counted is not None else exposure(cluster, runs)
    failures = [r for r in exposed if r.case_id in failed]
    n = len(exposed)
    p = len(failures) / n if n else 0.0
    fixability, cost = _engineering(cluster, failures, table)
    factors = [
        Factor(
            name="exposure",
            value=float(n),
            source="valid runs where the condition's run features hold, and the members",
        ),
        Factor(
            name="p_failure",
            value=p,
            source=f"{len(failures)} failures / {n} exposed runs",
        ),
        _harm(failures, table),
        fixability,
        _confidence(failures, table),
        cost,
    ]
    value = 1.0
    for factor in factors[:-1]:
        value *= factor.value
    value /= cost.value
    return Priority(
        cluster_id=cluster.cluster_id,
        definition=cluster.definition,
        priority=round(value, 9),
        override=_override(failures, table),
        factors=factors,
    )


def rank_key(p: Priority) -> tuple[bool, float, str]:
    """The order of clusters: overridden ones first, then the highest priority, then the id."""
    return (p.override is None, -p.priority, p.cluster_id)


def rank(
    clusters: Sequence[Cluster],
    runs: Sequence[RunRecord],
    table: HarmTable | None = None,
    *,
    exposures: Mapping[str, Exposure] | None = None,
) -> list[Priority]:
    """Every cluster's priority, highest first: overridden clusters above all others.
    ``exposures``: cluster id -> its exposure over ``runs``, for those already counted."""
    table = table or load_harm()
    exposures = exposures or {}
    found = (priority(c, runs, table, counted=exposures.get(c.cluster_id)) for c in clusters)
    return sorted(found, key=rank_key)


def ranked_jsonl(report: FailureReport, table: HarmTable | None = None) -> str:
    """``judge failures --format jsonl``: the report's lines, each cluster's with its priority
    and override under ``table`` (the shipped one if None); each cluster's exposure is counted
    once, for its priority and its line."""
    exposures = report.exposures()
    ranked = rank(report.clusters, report.records, table, exposures=exposures)
    return report.jsonl({p.cluster_id: (p.priority, p.override) for p in ranked}, exposures)


def top_clusters(
    clusters: Sequence[Cluster],
    runs: Sequence[RunRecord],
    *,
    n: int = 5,
    table: HarmTable | None = None,
) -> list[dict[str, Any]]:
    """The eval card's ``top_clusters``: the first ``n`` of :func:`rank`, each as
    ``{cluster_id, definition, priority, override}``."""
    return [
        {
            "cluster_id": p.cluster_id,
            "definition": p.definition,
            "priority": p.priority,
            "override": p.override,
        }
        for p in rank(clusters, runs, table)[:n]
    ]


def card_clusters(store: Store, *, table: HarmTable | None = None) -> ClusterSource | None:
    """The clusters ``store`` keeps as the eval card's cluster source: given a run-set report,
    :func:`top_clusters` ranked over the stored runs that are the report's runs (None when the
    store keeps no cluster). The store is read once, here; the source reads nothing."""
    clusters = load_clusters(store)
    if not clusters:
        return None
    records = records_from_store(store)

    def source(report: RunSetReport) -> list[dict[str, Any]]:
        ids = {run.run_id for run in report.runs}
        return top_clusters(clusters, [r for r in records if r.case_id in ids], table=table)

    return source


def ranked_dossier(
    cluster: Cluster, runs: Sequence[RunRecord], table: HarmTable | None = None
) -> RankedDossier:
    """The dossier of ``cluster`` with its priority under ``table`` (the shipped one if None)."""
    found = dossier(cluster, runs)
    return RankedDossier(**dict(found), priority=priority(cluster, runs, table or load_harm()))


def ranked_dossiers(
    clusters: Sequence[Cluster], runs: Sequence[RunRecord], table: HarmTable | None = None
) -> list[RankedDossier]:
    """Every cluster's dossier with its priority, in :func:`rank` order (overridden clusters
    first, then highest priority): what the clusters' page lists."""
    table = table or load_harm()
    found = [ranked_dossier(c, runs, table) for c in clusters]
    return sorted(found, key=lambda d: rank_key(d.priority))
