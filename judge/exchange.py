"""Live where agent traces and reviewers already are: a platform's traces in as cases, the
store's verdicts out to it, and the labels people give there back as gold.

A platform is named by a target URL (``phoenix+http://HOST:PORT/projects/NAME``); the connector
its scheme names (:mod:`judge.connectors.platform`) does the talking. This module holds what is
the same on every platform:

* :func:`import_traces` reads a file (the importers of :mod:`judge.traces`) or a target URL;
  cases from a platform record ``platform``, ``target``, ``trace_id`` and ``root_span_id`` in
  their meta, which is how verdicts and labels find their way back;
* :func:`export_verdicts` pools the stored judgments of the cases that came from the target into
  one verdict per (case, rubric, judge model): the protocol's label (P(pass) >= 0.5, as
  ``judge demo`` shows it; none when the judge abstained or failed, with the status), P(pass),
  the rationale with the cited evidence ids, redacted, and the routing decision when the case
  was routed with a card. An export ledger in the store (destination, verdict key, digest)
  sends only what is new or changed, batch by batch as the platform confirms it: an export that
  stops halfway (server down, 5xx) keeps what was confirmed, and the same command sends the
  rest;
* :func:`import_labels` turns people's labels into gold records for the stored cases, matched
  by trace id, with lineage (platform, annotation ids, annotators, time). A label that is
  neither pass nor fail must be mapped (``label_map``); labels on traces judge never imported
  are counted, not fatal.
"""

from __future__ import annotations

import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from calibration.gold import GoldRecord, Lineage, write_gold
from calibration.inputs import judgment_to_row
from judge import traces
from judge.connectors import (
    ConnectorError,
    LabelError,
    PlatformLabel,
    Route,
    Target,
    VerdictOut,
    is_target_url,
    resolve,
)
from judge.digests import canonical_json, digest, short_hash
from judge.errors import InputError, NotFoundError
from judge.routing import majority
from judge.safety.redact import redact
from judge.store import Store
from judge.traces import ImportResult
from judge.traces.tasks import TaskSource, settle
from judge.types import Case, Judgment, RoutingDecision

#: The labels a gold record of an agent run may carry.
GOLD_LABELS = ("pass", "fail")
#: Characters of an explanation sent to a platform (a rationale is rarely longer).
EXPLANATION_CHARS = 4000

Progress = Callable[[int, int], None]


# --- traces in ------------------------------------------------------------------------------


def import_traces(
    source: str | Path,
    fmt: str | None = None,
    *,
    tasks: TaskSource | None = None,
    trace_ids: Sequence[str] = (),
) -> ImportResult:
    """Cases from a trace file (read with the importer ``fmt``, or the detected one) or from a
    platform target URL (``phoenix+http://HOST:PORT/projects/NAME``; ``trace_ids``: only those
    traces). ``tasks`` fill the cases whose trace records no task (see
    :func:`judge.traces.tasks.settle`)."""
    if is_target_url(str(source)):
        if fmt is not None:
            raise InputError(
                f"--format {fmt} is for files: a URL names its platform by its scheme",
                hint="leave --format out",
            )
        connector, target = resolve(str(source))
        return settle(connector.cases(target, trace_ids=trace_ids), target.canonical, tasks)
    if trace_ids:
        raise InputError(
            "--trace-id picks traces of a platform URL, not of a file",
            file=str(source),
            hint="give --from PLATFORM+http://HOST:PORT/..., or leave --trace-id out",
        )
    return traces.import_traces(source, fmt, tasks=tasks)


# --- verdicts out ---------------------------------------------------------------------------


def verdict_key(case_id: str, rubric_id: str, model: str) -> str:
    """The stable key of one judge's verdict on one case under one rubric."""
    return short_hash(canonical_json([case_id, rubric_id, model]), 32)


def _step(j: Judgment) -> tuple[int, int, str]:
    p = j.provenance
    return (p.variant, p.sample, p.order or "")


def _status(group: Sequence[Judgment]) -> str:
    statuses = Counter(j.status for j in group)
    if statuses["ok"]:
        return "ok"
    if statuses["abstain"]:
        return "abstain"
    return statuses.most_common(1)[0][0]


def _explanation(group: Sequence[Judgment], label: str | None, status: str) -> str:
    """The rationale of the judgment that speaks for the pooled verdict, with its cited
    evidence ids; the error when every judgment failed. Redacted."""
    ordered = sorted(group, key=_step)
    ok = [j for j in ordered if j.status == "ok" and j.verdict is not None]
    chosen = next((j for j in ok if j.verdict and j.verdict.label == label), None)
    chosen = chosen or (ok[0] if ok else None)
    if chosen is None:
        chosen = next((j for j in ordered if j.status == "abstain" and j.verdict), None)
    if chosen is not None and chosen.verdict is not None:
        text = chosen.verdict.rationale.strip() or "(no rationale given)"
        if chosen.verdict.cited:
            text += f"\nEvidence cited: {', '.join(chosen.verdict.cited)}."
        if status == "abstain":
            text = "The judge could not determine the verdict: " + text
    else:
        errors = [j.error for j in ordered if j.error]
        text = f"No verdict ({status}): " + (errors[0] if errors else "the judge failed")
    if len(group) > 1:
        votes = Counter(j.verdict.label if j.verdict else j.status for j in group)
        text += "\nVotes: " + ", ".join(f"{k} x{n}" for k, n in sorted(votes.items())) + "."
    redacted, _ = redact(text[:EXPLANATION_CHARS])
    return redacted


def pool(
    group: Sequence[Judgment], case: Case, decision: RoutingDecision | None
) -> VerdictOut | None:
    """One judge's verdict on one case from every judgment of it (orders, samples, prompt
    variants) under the latest rubric version judged; None without a rubric version."""
    if not group:
        return None
    version = max(j.provenance.rubric_version for j in group)
    group = sorted((j for j in group if j.provenance.rubric_version == version), key=_step)
    first = group[0].provenance
    status = _status(group)
    rows = [judgment_to_row(j) for j in group]
    probs = [r.prob for r in rows if r.status == "ok" and r.prob is not None]
    p_pass = sum(probs) / len(probs) if probs else None
    label: str | None = None
    if status == "ok":
        labels = [j.verdict.label for j in group if j.status == "ok" and j.verdict]
        if p_pass is not None and set(labels) <= set(GOLD_LABELS):
            label = "pass" if p_pass >= 0.5 else "fail"
        else:
            label = majority(labels) or labels[0]
    route = None
    if decision is not None:
        detail, _ = redact(decision.detail or "")
        route = Route(
            decision=decision.decision,
            band=decision.band,
            reason=decision.reason,
            detail=detail,
            card_digest=decision.card_digest,
            score=decision.score,
            routed_at=decision.routed_at,
        )
    root = case.meta.get("root_span_id")
    fields = {
        "key": verdict_key(case.id, first.rubric_id, first.model),
        "case_id": case.id,
        "trace_id": str(case.meta.get("trace_id") or case.id),
        "root_span_id": root if isinstance(root, str) and root else None,
        "rubric_id": first.rubric_id,
        "rubric_version": version,
        "model": first.model,
        "status": status,
        "label": label,
        "p_pass": None if p_pass is None else round(p_pass, 6),
        "explanation": _explanation(group, label, status),
        "judgment_ids": tuple(j.id for j in group),
        "route": route,
    }
    content = {
        **fields,
        "route": None
        if route is None
        else [route.decision, route.band, route.reason, route.detail, route.card_digest],
    }
    return VerdictOut(digest=digest(content), **fields)  # type: ignore[arg-type]


@dataclass
class Verdicts:
    """The verdicts of the cases that came from one target, and what was left out."""

    target: Target
    verdicts: list[VerdictOut] = field(default_factory=list)
    #: Judgments of cases from other sources (files, other targets), by source.
    elsewhere: Counter[str] = field(default_factory=Counter)


def target_verdicts(
    store: Store, target: Target, *, rubric_id: str | None = None, model: str | None = None
) -> Verdicts:
    """Every stored verdict (per case, rubric and judge model) of a case imported from
    ``target``, with its latest routing decision; masked checks are not verdicts."""
    groups: dict[tuple[str, str, str], list[Judgment]] = defaultdict(list)
    for j in store.judgments(rubric_id=rubric_id, model=model):
        if j.provenance.masked_from is None:
            groups[(j.case_id, j.provenance.rubric_id, j.provenance.model)].append(j)
    cases = store.get_cases({case_id for case_id, _, _ in groups})
    latest: dict[tuple[str, str, str], RoutingDecision] = {}
    for d in store.decisions():
        key = (d.case_id, d.rubric_id, d.model)
        if key not in latest or d.routed_at >= latest[key].routed_at:
            latest[key] = d
    out = Verdicts(target)
    for key, group in groups.items():
        case = cases.get(key[0])
        source = case.meta.get("target") if case is not None else None
        if case is None or source != target.canonical:
            out.elsewhere[str(source or "a file")] += len(group)
            continue
        verdict = pool(group, case, latest.get(key))
        if verdict is not None:
            out.verdicts.append(verdict)
    # By judge model, then case: a batch holds every rubric of fewer cases (a platform that
    # reads a batch back by record reads only those cases' records).
    out.verdicts.sort(key=lambda v: (v.model, v.case_id, v.rubric_id))
    return out


@dataclass
class ExportReport:
    """What an export sent to a destination, and what it did not send (with why)."""

    destination: str
    #: Verdicts of cases from the destination (after the rubric / model filters).
    verdicts: int = 0
    sent: int = 0
    #: Sent before with the same content (the export ledger), so not sent again.
    unchanged: int = 0
    #: Verdicts whose case has no span or record on the platform to attach them to.
    unlinked: int = 0
    #: Judgments of cases that came from elsewhere, by source.
    elsewhere: dict[str, int] = field(default_factory=dict)
    routed: int = 0
    review: int = 0
    seconds: float = 0.0

    @property
    def rate(self) -> float:
        """Verdicts sent per second."""
        return self.sent / self.seconds if self.seconds > 0 else 0.0


def export_verdicts(
    store: Store,
    to: str,
    *,
    rubric_id: str | None = None,
    model: str | None = None,
    force: bool = False,
    on_start: Callable[[int], None] | None = None,
    on_progress: Callable[[int], None] | None = None,
) -> ExportReport:
    """Send the store's verdicts on the cases that came from the target ``to`` (one per case,
    rubric and judge model; ``rubric_id`` / ``model`` narrow them) to that platform, each
    updating what an earlier export sent for the same key. Only verdicts not sent before, or
    changed since, are sent (``force``: all). ``on_start(n)`` is told how many will be sent,
    ``on_progress(k)`` how many are confirmed so far.

    NotFoundError when the store holds no verdict of a case from ``to`` (naming the targets
    it does hold); a platform failure midway raises the connector's error, after the export
    ledger recorded every batch the platform had confirmed."""
    connector, target = resolve(to)
    found = target_verdicts(store, target, rubric_id=rubric_id, model=model)
    report = ExportReport(destination=target.canonical, elsewhere=dict(found.elsewhere))
    if not found.verdicts:
        others = ", ".join(sorted(found.elsewhere)) or "none"
        narrowed = "".join(
            f" {flag} {value}"
            for flag, value in (("--rubric", rubric_id), ("--model", model))
            if value
        )
        raise NotFoundError(
            f"{store.location} holds no verdict{narrowed} on a case imported from "
            f"{target.canonical} (the judged cases came from: {others}); import the traces "
            f"with `judge import --from {target.canonical}`, judge them with `judge run`, "
            "then export"
        )
    linked = [v for v in found.verdicts if v.root_span_id]
    report.verdicts = len(found.verdicts)
    report.unlinked = len(found.verdicts) - len(linked)
    report.routed = sum(v.route is not None for v in linked)
    report.review = sum(v.route is not None and v.route.decision == "review" for v in linked)
    ledger = {} if force else store.exported(target.canonical)
    pending = [v for v in linked if ledger.get(v.key) != v.digest]
    report.unchanged = len(linked) - len(pending)
    if on_start is not None:
        on_start(len(pending))
    started = time.monotonic()
    try:
        for batch in connector.export(target, pending):
            store.record_exports(
                target.canonical,
                [
                    {
                        "verdict_key": v.key,
                        "digest": v.digest,
                        "case_id": v.case_id,
                        "rubric_id": v.rubric_id,
                        "model": v.model,
                    }
                    for v in batch
                ],
            )
            report.sent += len(batch)
            if on_progress is not None:
                on_progress(report.sent)
    except ConnectorError as err:
        rest = len(pending) - report.sent
        raise type(err)(
            f"{err} [{report.sent} of {len(pending)} verdicts were exported to "
            f"{target.canonical} before this and are recorded; the same command sends the "
            f"other {rest}]"
        ) from err
    finally:
        report.seconds = time.monotonic() - started
    return report


# --- labels back ----------------------------------------------------------------------------


def parse_label_map(spec: str | Mapping[str, str] | Iterable[str] | None) -> dict[str, str]:
    """``"correct=pass,incorrect=fail"`` (or such pairs given one by one, or a mapping) as
    {raw label: pass|fail}; InputError for a pair that is not RAW=pass or RAW=fail."""
    if spec is None:
        return {}
    if isinstance(spec, Mapping):
        pairs = list(spec.items())
    else:
        items = [spec] if isinstance(spec, str) else list(spec)
        pairs = []
        for item in items:
            for part in item.split(","):
                if not part.strip():
                    continue
                raw, sep, gold = part.rpartition("=")
                if not sep or not raw.strip():
                    raise InputError(
                        f"--label-map {part.strip()!r}: give RAW=pass or RAW=fail",
                        hint="e.g. --label-map correct=pass,incorrect=fail",
                    )
                pairs.append((raw.strip(), gold.strip()))
    out: dict[str, str] = {}
    for raw, gold in pairs:
        if gold not in GOLD_LABELS:
            raise InputError(
                f"--label-map {raw}={gold}: a label maps to pass or fail, not {gold!r}",
                hint="e.g. --label-map correct=pass,incorrect=fail",
            )
        out[str(raw)] = gold
    return out


@dataclass
class LabelImport:
    """The gold records made from people's labels on a target, and what could not be used."""

    source: str
    annotation: str
    records: list[GoldRecord] = field(default_factory=list)
    #: People's labels read (every one, matched or not).
    labels: int = 0
    #: Labels on traces that judge never imported from this target (or not stored).
    unmatched: list[PlatformLabel] = field(default_factory=list)
    #: Cases whose people disagree: case id -> the labels given.
    conflicts: dict[str, list[str]] = field(default_factory=dict)
    path: Path | None = None
    digest: str | None = None


def _gold(
    case: Case, labels: Sequence[tuple[PlatformLabel, str]], target: Target, annotation: str
) -> GoldRecord:
    people = sorted({x.annotator or "anonymous" for x, _ in labels})
    times = [x.created_at for x, _ in labels if x.created_at is not None]
    refs = [f"{target.platform}:annotation:{x.annotation_id}" for x, _ in labels]
    refs.append(f"{target.platform}:trace:{labels[0][0].trace_id}")
    return GoldRecord.from_case(
        case,
        gold=labels[0][1],
        gold_source=f"{len(labels)} human annotation(s) {annotation!r} in {target.platform}",
        source=str(case.meta.get("source") or target.canonical),
        license="unspecified",
        lineage=Lineage(
            source=f"{target.platform} annotation {annotation!r} at {target.canonical}",
            labeller=", ".join(people),
            created_at=max(times) if times else None,
            derived_from=list(dict.fromkeys(refs)),
        ),
    )


def import_labels(
    store: Store,
    source: str,
    *,
    annotation: str,
    label_map: str | Mapping[str, str] | Iterable[str] | None = None,
    out: str | Path | None = None,
    license: str = "unspecified",
) -> LabelImport:
    """Gold records from the labels people gave as ``annotation`` on the target ``source``, for
    the stored cases imported from it (matched by trace id), written to ``out`` when given.

    Labels pass and fail are taken as they are; any other value must be mapped by
    ``label_map`` (LabelError naming every unmapped value and the option otherwise). Several
    people's labels of one case become one record when they agree; when they disagree the
    case is left out (:attr:`LabelImport.conflicts`). Labels on traces that judge never
    imported are counted in :attr:`LabelImport.unmatched`."""
    mapping = parse_label_map(label_map)
    connector, target = resolve(source)
    read = connector.labels(target, name=annotation)
    result = LabelImport(source=target.canonical, annotation=annotation, labels=len(read.labels))
    if not read.labels:
        names = ", ".join(read.other_names)
        raise LabelError(
            f"no person's annotation named {annotation!r} in {target.canonical}"
            + (f" (people's annotations there: {names})" if names else " (none at all yet)"),
            hint="give --annotation one of those names" if names else None,
        )
    mapped: list[tuple[PlatformLabel, str]] = []
    unmapped: Counter[str] = Counter()
    for label in read.labels:
        value = label.value
        gold = mapping.get(value) if value is not None else None
        gold = gold or (value if value in GOLD_LABELS else None)
        if gold is None:
            unmapped[repr(value) if value is not None else "(empty)"] += 1
        else:
            mapped.append((label, gold))
    if unmapped:
        shown = ", ".join(f"{v} x{n}" for v, n in unmapped.most_common())
        example = ",".join(
            f"{v.strip(chr(39))}={'pass' if i == 0 else 'fail'}"
            for i, v in enumerate(list(unmapped)[:2])
        )
        raise LabelError(
            f"annotation {annotation!r} in {target.canonical} has labels that are neither "
            f"pass nor fail: {shown}",
            hint=f"map each to pass or fail with --label-map (e.g. --label-map {example})",
        )
    by_trace: dict[str, list[tuple[PlatformLabel, str]]] = defaultdict(list)
    for label, gold in mapped:
        by_trace[label.trace_id].append((label, gold))
    cases = store.get_cases(by_trace)
    for trace_id, given in sorted(by_trace.items()):
        case = cases.get(trace_id)
        if case is None or case.meta.get("target") != target.canonical:
            result.unmatched.extend(label for label, _ in given)
            continue
        golds = sorted({g for _, g in given})
        if len(golds) > 1:
            result.conflicts[case.id] = [g for _, g in given]
            continue
        record = _gold(case, given, target, annotation)
        result.records.append(record.model_copy(update={"license": license}))
    if out is not None:
        result.path = Path(out)
        result.digest = write_gold(result.records, out)
    return result
