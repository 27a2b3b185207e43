"""Perturbation probes: small deterministic transforms of a real case whose right answer is known.

A *degradation* turns a passing run into a failing one (a good judge must catch it); an
*invariance* changes something a verdict must not depend on (a good judge must not move). Each
probe has a name, a version (bumped whenever its output changes) and a fixed seed; every choice
it makes (which padding commands, which candidate becomes the reference) comes from a seeded
hash of (seed, case id), so the same case always gives the same perturbed case.

A probe applies only where it can: ``transform`` returns the perturbed case, or a sentence saying
why it does not apply (no tool call, no diff, ...). Such a case is skipped and counted, never
failed. The perturbed case gets its own id (``<original id>#probe:<name>@v<version>``) and its
lineage in ``meta["probe"]``; transforms never mutate, and the perturbed case is validated anew
from plain data, so nothing leaks back into the original.

This module is the registry. The probes live by family: ``degradations`` and ``invariances``
of agent runs, ``pairwise`` invariances; the probe type and its application in ``probe``, the
trace editing the agent-run probes share in ``editing``.

Agent runs are read the way the evidence selector reads them (``judge.evidence.classify_turns``):
tool calls (fenced shell blocks, tool-call markups), tool results, test runs (results of a call
that runs tests, or output that looks like a test report) and errors. New turns are written in
the trace's own style: mini-swe-agent's ``THOUGHT: ... ```bash ...``` `` calls and
``<returncode>N</returncode><output>...</output>`` observations when the trace uses them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from judge.errors import InputError
from judge.probes.degradations import DEGRADATIONS, is_test_path, split_diff
from judge.probes.invariances import INVARIANCES, judge_family_name
from judge.probes.pairwise import PAIRWISE
from judge.probes.probe import (
    META_KEY,
    PROBE_SUFFIX,
    Applied,
    Probe,
    ProbeContext,
    ProbeKind,
    Skipped,
    Transform,
    apply_probe,
    perturbed_id,
    probe_origin,
)

#: Every probe, in registry order: degradations, then invariances, then pairwise ones.
PROBES: tuple[Probe, ...] = (*DEGRADATIONS, *INVARIANCES, *PAIRWISE)

PROBES_BY_NAME: Mapping[str, Probe] = {p.name: p for p in PROBES}


def select_probes(names: Sequence[str] | None) -> list[Probe]:
    """The probes named (all of them for None), in registry order; an unknown name raises."""
    if not names:
        return list(PROBES)
    unknown = [n for n in names if n not in PROBES_BY_NAME]
    if unknown:
        raise InputError(
            f"unknown probe(s) {', '.join(unknown)}",
            field="probes",
            hint=f"choose from {', '.join(PROBES_BY_NAME)}",
        )
    wanted = set(names)
    return [p for p in PROBES if p.name in wanted]


__all__ = [
    "META_KEY",
    "PROBES",
    "PROBES_BY_NAME",
    "PROBE_SUFFIX",
    "Applied",
    "Probe",
    "ProbeContext",
    "ProbeKind",
    "Skipped",
    "Transform",
    "apply_probe",
    "is_test_path",
    "judge_family_name",
    "perturbed_id",
    "probe_origin",
    "select_probes",
    "split_diff",
]
