"""One probe: a named, versioned, seeded transform of a case, and applying it to a case (the
perturbed case gets its own id and its lineage; the original is never modified)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Literal

from judge.types import Case, CaseKind

ProbeKind = Literal["degradation", "invariance"]

#: Appended to an original case id (with the probe's name and version) to name its perturbation.
PROBE_SUFFIX = "#probe:"
#: The key of a perturbed case's lineage in ``Case.meta``.
META_KEY = "probe"


@dataclass(frozen=True)
class ProbeContext:
    """What a transform may know besides the case: its gold label and the judge under test."""

    gold: str | None = None
    #: The judge's litellm model id (the self-family probe names its family in the trace).
    judge_model: str | None = None


#: A transform returns the perturbed case, or why it does not apply.
Transform = Callable[[Case, ProbeContext, int], "Case | str"]


@dataclass(frozen=True)
class Probe:
    """One named, versioned, seeded perturbation."""

    name: str
    version: int
    kind: ProbeKind
    case_kind: CaseKind
    #: What bias or failure it probes, in one sentence (shown in reports).
    description: str
    transform: Transform = field(repr=False)
    seed: int = 0
    #: For pairwise invariances whose right answer is a relabelling (the answer-order swap):
    #: the verdict expected on the perturbed case, per verdict on the original.
    label_map: Mapping[str, str] = field(default_factory=dict)
    #: The score expected on the perturbed case is 1 - the original's (answer-order swap).
    flips_score: bool = False

    @property
    def ref(self) -> str:
        """``name@vN``."""
        return f"{self.name}@v{self.version}"


@dataclass(frozen=True)
class Applied:
    """A perturbed case and the original it came from."""

    probe: Probe
    original: Case
    case: Case


@dataclass(frozen=True)
class Skipped:
    """A case a probe does not apply to, and why."""

    probe: Probe
    case_id: str
    reason: str


def perturbed_id(case_id: str, probe: Probe) -> str:
    """The id of ``probe``'s perturbation of the case ``case_id``."""
    return f"{case_id}{PROBE_SUFFIX}{probe.name}@v{probe.version}"


def probe_origin(case: Case) -> dict[str, object] | None:
    """The lineage of a perturbed case (name, version, seed, original_id), or None."""
    value = case.meta.get(META_KEY)
    return dict(value) if isinstance(value, Mapping) else None


def apply_probe(probe: Probe, case: Case, context: ProbeContext) -> Applied | Skipped:
    """``probe`` applied to ``case``, or why it was skipped. The original is never modified."""
    if case.kind != probe.case_kind:
        return Skipped(probe, case.id, f"a {probe.case_kind} probe; the case is {case.kind}")
    if probe_origin(case) is not None:
        return Skipped(probe, case.id, "the case is itself a perturbation")
    if probe.kind == "degradation" and probe.case_kind == "agent_run" and context.gold != "pass":
        reason = (
            "no gold label: a degradation needs a run known to pass"
            if context.gold is None
            else f"gold label is {context.gold}: a degradation needs a run known to pass"
        )
        return Skipped(probe, case.id, reason)
    # Transforms copy what they change (model_copy with updates) and never mutate; the result
    # is validated anew from plain data below, so it shares no object with the original.
    out = probe.transform(case, context, probe.seed)
    if isinstance(out, str):
        return Skipped(probe, case.id, out)
    if out.model_dump(exclude={"id", "meta"}) == case.model_dump(exclude={"id", "meta"}):
        return Skipped(probe, case.id, "the transform changed nothing")
    lineage = {
        "name": probe.name,
        "version": probe.version,
        "seed": probe.seed,
        "kind": probe.kind,
        "original_id": case.id,
    }
    final = out.model_copy(
        update={"id": perturbed_id(case.id, probe), "meta": {**out.meta, META_KEY: lineage}}
    )
    return Applied(probe, case, Case.model_validate(final.model_dump()))
