"""Gates: reasons to send an item to review before any band is consulted.

Judgments are grouped per (case, judge model) over answer orders, repeated samples and prompt
variants. A sequence of gates sends a group to review for a named reason (its detail gives the
facts the reason's words in ``judge.routing.REASONS`` do not: which evidence, how many
judgments, which verdicts; the two read together, each thing said once): flagged evidence
(never decided automatically), a verdict that changes when suspect evidence is withheld or on
the run's facts-only copy, parse or provider failures, abstentions, answer orders that
disagree, repeated samples that disagree, prompt variants that disagree, and verdicts that
cite no evidence id shown to the judge (``Verdict.uncited``: judgments stored before citations
were enforced included).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from calibration.card import Card
from calibration.inputs import judgment_to_row
from calibration.records import VerdictRow
from judge.types import Case, Judgment, ScoringKind, check_ref


@dataclass(frozen=True)
class Group:
    """Every judgment of one judge on one case (all orders and samples)."""

    case_id: str
    model: str
    kind: ScoringKind
    judgments: tuple[Judgment, ...]
    rows: tuple[VerdictRow, ...]
    #: The same judge's judgments of the case's masked copy (judge.judging.masking): checks on
    #: the verdict, not part of its score.
    masked: tuple[Judgment, ...] = ()
    #: The same judge's judgments of the case's facts-only copy (judge.judging.facts): checks
    #: too, made for the verdicts a card would decide automatically.
    facts: tuple[Judgment, ...] = ()


Gate = Callable[[Group], str | None]


def _flagged(g: Group) -> str | None:
    flagged = sorted({e for j in g.judgments for e in j.provenance.flagged_evidence})
    if not flagged:
        return None
    return ", ".join(flagged)


def check_decided(g: Group) -> str | None:
    """``check:<id>@<version>: <reason>`` of the hard check that decided the group's verdict
    (the composite verdict, judge.judging.composite), or None when the model decided."""
    for x in g.judgments:
        if x.verdict is not None and x.verdict.decided_by is not None:
            by = x.verdict.decided_by
            reason = next((c.reason for c in x.verdict.checks if check_ref(c) == by), "")
            return f"{by}: {reason}" if reason else by
    return None


def _check_fired(g: Group) -> str | None:
    """Soft checks that fired on the run: never decided automatically, a person weighs them."""
    fired = {
        check_ref(c): c.reason
        for x in g.judgments
        if x.verdict is not None
        for c in x.verdict.checks
        if not c.hard
    }
    return "; ".join(f"{ref}: {why}" for ref, why in sorted(fired.items())) or None


def _of_judgments(g: Group, n: int) -> str | None:
    """``n of N judgments`` when ``n`` of the group's judgments set the gate off, else None."""
    return f"{n} of {len(g.judgments)} judgments" if n else None


def _parse_failed(g: Group) -> str | None:
    return _of_judgments(g, sum(1 for j in g.judgments if j.status == "parse_error"))


def _provider_failed(g: Group) -> str | None:
    return _of_judgments(g, sum(1 for j in g.judgments if j.status == "infra_error"))


def _abstained(g: Group) -> str | None:
    return _of_judgments(g, sum(1 for r in g.rows if r.status == "abstain"))


def majority(labels: Sequence[str]) -> str | None:
    """The label most voted; None on a tie between the top labels or with no votes (a tie has
    no majority: it is its own answer, not the first label seen)."""
    counts = Counter(labels).most_common()
    if not counts or (len(counts) > 1 and counts[0][1] == counts[1][1]):
        return None
    return counts[0][0]


def _majority(labels: Sequence[str]) -> str:
    return majority(labels) or "(split)"


def _orders_disagree(g: Group) -> str | None:
    by_order: dict[str, list[str]] = defaultdict(list)
    for r in g.rows:
        if r.order is not None and r.verdict is not None:
            by_order[r.order].append(r.verdict)
    if len(by_order) < 2:
        return None
    verdicts = {order: _majority(labels) for order, labels in sorted(by_order.items())}
    if len(set(verdicts.values())) == 1:
        return None
    return ", ".join(f"{o}: {v}" for o, v in verdicts.items())


def _tally(labels: Sequence[str]) -> str:
    return ", ".join(f"{label} x{n}" for label, n in sorted(Counter(labels).items()))


def _samples_disagree(g: Group) -> str | None:
    """Repeated samples of one prompt variant in one order gave different verdicts."""
    by_key: dict[tuple[str | None, int], list[str]] = defaultdict(list)
    for x, r in zip(g.judgments, g.rows, strict=True):
        if r.verdict is not None:
            by_key[(r.order, x.provenance.variant)].append(r.verdict)
    for (order, variant), labels in sorted(
        by_key.items(), key=lambda kv: (kv[0][0] or "", kv[0][1])
    ):
        if len(set(labels)) > 1:
            where = [f"prompt variant {variant}"] if variant else []
            where += [f"order {order}"] if order else []
            return ", ".join(where) + ": " + _tally(labels) if where else _tally(labels)
    return None


def _variants_disagree(g: Group) -> str | None:
    """The rubric's prompt variants ("simulated annotators") gave different majority verdicts
    in one order: the pooled score averages them, but a split among them is a doubt a person
    should settle."""
    by_order: dict[str | None, dict[int, list[str]]] = defaultdict(lambda: defaultdict(list))
    for x, r in zip(g.judgments, g.rows, strict=True):
        if r.verdict is not None:
            by_order[r.order][x.provenance.variant].append(r.verdict)
    for order, variants in sorted(by_order.items(), key=lambda kv: kv[0] or ""):
        majorities = [_majority(labels) for _, labels in sorted(variants.items())]
        if len(set(majorities)) > 1:
            return (f"order {order}: " if order else "") + _tally(majorities)
    return None


def _uncited(g: Group) -> str | None:
    """A verdict that cites no evidence shown rests on nothing a person can check: it is never
    decided automatically, whatever its score."""
    bare = [x for x in g.judgments if x.status == "ok" and x.verdict and x.verdict.uncited]
    if not bare:
        return None
    detail = f"{len(bare)} of {len(g.judgments)} judgments"
    wrong = sorted({c for x in bare if x.verdict for c in x.verdict.invalid_citations})
    if wrong:
        detail += f"; made-up ids: {', '.join(wrong)}"
    return detail


def _step(x: Judgment) -> tuple[str | None, int, int]:
    return (x.provenance.order, x.provenance.sample, x.provenance.variant)


def _label(x: Judgment) -> str:
    return x.verdict.label if x.status == "ok" and x.verdict is not None else x.status


def _usable(x: Judgment) -> bool:
    return x.status in ("ok", "abstain")


def _changed(g: Group, checks: Sequence[Judgment]) -> list[str]:
    """``own -> check`` for each step whose usable check gives another label than the
    group's own judgment of that step (an abstention is a label here)."""
    own = {_step(x): _label(x) for x in g.judgments if _usable(x)}
    return sorted(
        {
            f"{own[_step(c)]} -> {_label(c)}"
            for c in checks
            if _usable(c) and _step(c) in own and _label(c) != own[_step(c)]
        }
    )


def _unchecked(g: Group, checks: Sequence[Judgment]) -> list[Judgment]:
    """The group's usable judgments whose step has no usable check among ``checks``."""
    checked = {_step(c) for c in checks if _usable(c)}
    return [x for x in g.judgments if _usable(x) and _step(x) not in checked]


def _masked_changed(g: Group) -> str | None:
    """A verdict that changes when the suspect evidence is withheld: something in that
    evidence moved the judge (an injection the flagger missed), or the verdict rests on it.
    A masked check that failed (parse or provider failure) is no check: see _masked_missing."""
    changed = _changed(g, g.masked)
    if not changed:
        return None
    withheld = sorted({i for m in g.masked for i in m.provenance.masked_evidence})
    return f"{', '.join(withheld)}: {'; '.join(changed)}"


def _masked_missing(g: Group) -> str | None:
    """Suspect evidence was recorded but a step has no usable masked check (it failed, or was
    never judged): whether the verdict rests on that evidence is unknown."""
    suspects = sorted({i for x in g.judgments if _usable(x) for i in x.provenance.suspect_evidence})
    if not suspects:
        return None
    missing = _unchecked(g, g.masked)
    if not missing:
        return None
    return f"{', '.join(suspects)}; {len(missing)} of {len(g.judgments)} judgments unchecked"


def _facts_changed(g: Group) -> str | None:
    """A verdict that the facts-only copy of the run does not give (another label, or an
    abstention): something in the untrusted text moved the judge, or the verdict rests on
    prose that the copy reduces to facts. Either way a person decides, whether or not any
    detector recognised an attack."""
    changed = _changed(g, g.facts)
    return f"facts-only copy: {'; '.join(changed)}" if changed else None


def _facts_missing(g: Group) -> str | None:
    """A facts-only check was made for this group, but a step has no usable one (it failed,
    or was not judged): the verdict is not checked."""
    if not g.facts:
        return None
    missing = _unchecked(g, g.facts)
    if not missing:
        return None
    failed = Counter(c.status for c in g.facts if not _usable(c))
    why = "".join(f"; {status} x{n}" for status, n in sorted(failed.items()))
    return f"{len(missing)} of {len(g.judgments)} judgments unchecked{why}"


#: Checked in this order; the first that applies names the reason. Flagged evidence comes
#: first so that an injected item is never decided automatically, whatever else holds.
GATES: tuple[tuple[str, Gate], ...] = (
    ("flagged_evidence", _flagged),
    ("check_fired", _check_fired),
    ("masked_changed", _masked_changed),
    ("masked_missing", _masked_missing),
    ("facts_changed", _facts_changed),
    ("facts_missing", _facts_missing),
    ("parse_error", _parse_failed),
    ("provider_failure", _provider_failed),
    ("abstained", _abstained),
    ("orders_disagreed", _orders_disagree),
    ("samples_disagreed", _samples_disagree),
    ("variants_disagreed", _variants_disagree),
    ("uncited", _uncited),
)


#: A gate that also reads the card and the case (None when the caller has no case).
CardGate = Callable[[Group, Card, Case | None], str | None]

#: The probe whose failure makes long traces a reason for review (``judge probe``).
LENGTH_PROBE = "length-padding"


def _long_trace_probe_failed(g: Group, card: Card, case: Case | None) -> str | None:
    """The card says this judge failed the length probe (``judge probe --card``): its verdict
    moves when neutral turns are padded in, so a trace longer than the probed cases' median
    goes to a person. A case whose trace is not known is treated as long."""
    probes = card.probes
    if probes is None or LENGTH_PROBE not in probes.failed or probes.long_trace_turns is None:
        return None
    limit = probes.long_trace_turns
    if case is None:
        return "the judge failed the length probe and this case's trace length is unknown"
    if len(case.trace) <= limit:
        return None
    return (
        f"the judge failed the length probe ({probes.run_at.date().isoformat()}) and this "
        f"trace has {len(case.trace)} turns, more than the {limit} of the probed cases' median"
    )


#: Card gates, checked after :data:`GATES`, in this order.
CARD_GATES: tuple[tuple[str, CardGate], ...] = (
    ("long_trace_probe_failed", _long_trace_probe_failed),
)


def groups(judgments: Iterable[Judgment], kind: ScoringKind) -> list[Group]:
    """The judgments grouped per (case, judge model), each group in a stable order."""
    by_key: dict[tuple[str, str], list[Judgment]] = defaultdict(list)
    masked: dict[tuple[str, str], list[Judgment]] = defaultdict(list)
    facts: dict[tuple[str, str], list[Judgment]] = defaultdict(list)
    for x in judgments:
        origin = x.provenance.masked_from
        if origin is None:
            by_key[(x.case_id, x.provenance.model)].append(x)
        else:
            checks = facts if x.provenance.facts_check else masked
            checks[(origin, x.provenance.model)].append(x)
    out = []
    for key, items in by_key.items():
        items.sort(key=lambda x: (x.provenance.order or "", x.provenance.sample, x.id))
        rows = tuple(judgment_to_row(x) for x in items)
        out.append(
            Group(
                *key,
                kind,
                tuple(items),
                rows,
                tuple(masked.get(key, ())),
                tuple(facts.get(key, ())),
            )
        )
    return out
