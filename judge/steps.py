"""The steps of a run, numbered for a diagnosing judge, and the checks that propose candidates.

A first-bad-decision judge must be able to name any step of a run, so its evidence is not a
selection: every turn of the trace is one step and one evidence item, never dropped. The task is
``E0`` and step ``i`` (0-based, the turn's position in the trace) is ``E{i+1}``, so the id a
judge cites is the step it means (:func:`step_of`). A long run is fitted to the token budget by
clipping texts, never by leaving steps out: every step keeps at least an outline (its first
line, clipped), and the rest of the budget goes first to the steps the checks proposed and their
neighbours, then evenly to the others (head and tail kept, a visible marker between).

The checks (:func:`candidate_steps`) read the structured trace, not its prose: the kinds of
turns (tool calls, test runs, errors, the final answer) and the commands and tool names of
calls. Each proposes a step and the invariant it would break, with a reason written by the check
(no text of the run). A judge confirms or rejects each; both are recorded. The checks are
versioned (``CHECKS_VERSION``) like the evidence selector.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from judge.errors import InputError
from judge.evidence import EvidenceSet, clip_text, estimate_tokens, evidence_set
from judge.types import Case, EvidenceItem, EvidenceKind, TraceTurn

#: The selector version of step evidence (provenance and cache keys).
STEPS_SELECTOR_VERSION = "steps-1"
CHECKS_VERSION = "checks-1"
#: Tokens every step keeps at least (its outline), and the share of the budget for the task.
OUTLINE_TOKENS = 40
TASK_SHARE = 0.2
#: Steps on either side of a proposed step that also get room first.
FOCUS_RADIUS = 1

_EDIT = re.compile(
    r"\b(str_replace|apply_patch|write_file|create_file|edit_file|insert|sed\s+-i|"
    r"patch\b|cat\s*>|tee\b|echo\s.*>)",
    re.IGNORECASE,
)
_SUCCESS_CLAIM = re.compile(
    r"\b(fixed|resolved|done|complete[d]?|succeed(?:ed|s)?|success(?:fully)?|all tests pass|"
    r"tests? pass(?:es|ed)?|has been (?:cancel|return|exchang|modifi|updat|book)\w*)\b",
    re.IGNORECASE,
)
_PASSING = re.compile(r"\b(\d+ passed|OK\b|PASS(?:ED)?\b|0 failed)", re.IGNORECASE)
_FAILING = re.compile(r"\b(\d+ failed|FAIL(?:ED|URE)?\b|Error\b|Traceback)", re.IGNORECASE)
_TIMEOUT = re.compile(r"\b(time[sd]? ?out|timeout|504|503|connection (?:reset|aborted))\b", re.I)
_STATE_CHANGE = re.compile(
    r"\b(cancel|modify|update|return|exchange|book|refund|delete|transfer|charge|send)\w*",
    re.IGNORECASE,
)
_IDENTITY = re.compile(
    r"\b(find_user|get_user|authenticat|verify_identity|lookup_user|user_details)\w*", re.I
)
_TEST_PATH = re.compile(r"(^|[/\s])(tests?/|test_\w+\.py|\w+_test\.(py|go)|conftest\.py)")


def step_of(evidence_id: str) -> int | None:
    """The 0-based step an evidence id of step evidence names (``E3`` -> 2); None for the task
    (``E0``) or what is not such an id."""
    match = re.fullmatch(r"E(\d+)", evidence_id.strip())
    if not match or int(match.group(1)) == 0:
        return None
    return int(match.group(1)) - 1


def step_id(step: int) -> str:
    """The evidence id of a 0-based step."""
    return f"E{step + 1}"


# --- Candidate checks -------------------------------------------------------------------------


@dataclass(frozen=True)
class Candidate:
    """A step a check proposes as the first bad decision, and why."""

    step: int
    invariant: str
    reason: str
    check: str


def _is_edit(turn: TraceTurn) -> bool:
    return turn.kind == "tool_call" and bool(_EDIT.search(turn.content))


def _agent(turn: TraceTurn) -> bool:
    return turn.kind in ("tool_call", "message", "final_answer") and not turn.role.startswith(
        ("user", "system", "tool")
    )


def _no_rerun_after_edit(trace: Sequence[TraceTurn]) -> list[Candidate]:
    edits = [i for i, t in enumerate(trace) if _is_edit(t)]
    if not edits:
        return []
    last_edit = edits[-1]
    if any(t.kind == "test_run" for t in trace[last_edit + 1 :]):
        return []
    if not any(t.kind == "test_run" for t in trace[:last_edit]):
        return []  # a run that never tests is another check's business
    return [
        Candidate(
            last_edit,
            "rerun-tests-after-the-last-edit",
            "an edit after the last test run, and no test run after it",
            "no-rerun-after-edit",
        )
    ]


def _unverified_claim(trace: Sequence[TraceTurn]) -> list[Candidate]:
    finals = [i for i, t in enumerate(trace) if t.kind == "final_answer"]
    if not finals or not _SUCCESS_CLAIM.search(trace[finals[-1]].content):
        return []
    final = finals[-1]
    edits = [i for i, t in enumerate(trace[:final]) if _is_edit(t)]
    start = edits[-1] + 1 if edits else 0
    checks = [t for t in trace[start:final] if t.kind in ("test_run", "tool_result")]
    if any(
        t.kind == "test_run" and _PASSING.search(t.content) and not _FAILING.search(t.content)
        for t in checks
    ):
        return []
    if checks and not edits:
        return []  # a support run that read results before answering: not this check's case
    return [
        Candidate(
            final,
            "verify-before-claiming-success",
            "the final message claims success with no passing check after the last edit",
            "unverified-claim",
        )
    ]


def _ignored_error(trace: Sequence[TraceTurn]) -> list[Candidate]:
    found = []
    for i, turn in enumerate(trace):
        if turn.kind != "error":
            continue
        nxt = next((j for j in range(i + 1, len(trace)) if _agent(trace[j])), None)
        if nxt is None:
            continue
        if trace[nxt].kind == "final_answer" and _SUCCESS_CLAIM.search(trace[nxt].content):
            found.append(
                Candidate(
                    nxt,
                    "do-not-ignore-tool-errors",
                    "a tool error, then a success claim with no further call",
                    "ignored-error",
                )
            )
    return found[:1]


def _retry_after_timeout(trace: Sequence[TraceTurn]) -> list[Candidate]:
    for i, turn in enumerate(trace):
        if turn.kind not in ("error", "tool_result") or not _TIMEOUT.search(turn.content):
            continue
        call = next((j for j in range(i - 1, -1, -1) if trace[j].kind == "tool_call"), None)
        if call is None or not _STATE_CHANGE.search(trace[call].content):
            continue
        for j in range(i + 1, len(trace)):
            if trace[j].kind == "tool_call":
                if trace[j].content.strip() == trace[call].content.strip():
                    return [
                        Candidate(
                            j,
                            "reconcile-before-retrying-a-non-idempotent-call",
                            "a state-changing call timed out and was sent again unchanged",
                            "retry-after-timeout",
                        )
                    ]
                break
    return []


def _acted_before_identity(trace: Sequence[TraceTurn]) -> list[Candidate]:
    calls = [(i, t) for i, t in enumerate(trace) if t.kind == "tool_call"]
    if not any(_IDENTITY.search(t.content) for _, t in calls):
        return []
    for i, turn in calls:
        name = turn.content.split("(", 1)[0]
        if _IDENTITY.search(name):
            return []
        if _STATE_CHANGE.search(name):
            return [
                Candidate(
                    i,
                    "confirm-identity-before-acting",
                    "a state-changing call before the user's identity was looked up",
                    "acted-before-identity",
                )
            ]
    return []


def _edited_tests(trace: Sequence[TraceTurn]) -> list[Candidate]:
    for i, turn in enumerate(trace):
        if _is_edit(turn) and _TEST_PATH.search(turn.content):
            return [Candidate(i, "do-not-edit-tests", "an edit to a test file", "edited-tests")]
    return []


CHECKS = (
    _acted_before_identity,
    _edited_tests,
    _retry_after_timeout,
    _no_rerun_after_edit,
    _ignored_error,
    _unverified_claim,
)


def candidate_steps(trace: Sequence[TraceTurn]) -> list[Candidate]:
    """Every step a check proposes, earliest first (one per check at most)."""
    found = [c for check in CHECKS for c in check(trace)]
    return sorted(found, key=lambda c: (c.step, c.check))


# --- Step evidence ----------------------------------------------------------------------------


def _kind(turn: TraceTurn) -> EvidenceKind:
    return turn.kind or ("system" if turn.role == "system" else "message")


def _outline(text: str, tokens: int) -> str:
    first = next((line for line in text.splitlines() if line.strip()), "")
    shown, _ = clip_text(first, tokens, 1.0)
    return shown if shown == text else f"{shown} [...]"


def _rooms(costs: Sequence[int], budget: int, focus: set[int]) -> list[int]:
    """Token room of each step: its whole text when all fit; else an outline each, then the
    focus steps, then an even share of what is left (water-filling)."""
    if sum(costs) <= budget:
        return list(costs)
    rooms = [min(c, OUTLINE_TOKENS) for c in costs]
    left = budget - sum(rooms)
    for i in sorted(focus):
        if left <= 0:
            break
        extra = min(costs[i] - rooms[i], left)
        rooms[i] += extra
        left -= extra
    open_steps = [i for i in range(len(costs)) if rooms[i] < costs[i]]
    while left > 0 and open_steps:
        share = max(1, left // len(open_steps))
        for i in list(open_steps):
            extra = min(costs[i] - rooms[i], share, left)
            rooms[i] += extra
            left -= extra
            if rooms[i] >= costs[i]:
                open_steps.remove(i)
            if left <= 0:
                break
    return rooms


def step_evidence(case: Case, redacted: Case, token_budget: int) -> EvidenceSet:
    """Every step of ``case`` as numbered evidence within ``token_budget`` (see the module
    docstring); texts come from ``redacted`` (the case as the store keeps it)."""
    if not redacted.trace:
        raise InputError(
            f"case {case.id!r} has no steps: a run with an empty trace cannot be diagnosed",
            field="trace",
        )
    task_room = max(OUTLINE_TOKENS, int(token_budget * TASK_SHARE))
    task_text, task_clipped = clip_text(redacted.task, task_room, 0.7)
    texts = [t.content for t in redacted.trace]
    costs = [estimate_tokens(t) for t in texts]
    focus = {
        j
        for c in candidate_steps(case.trace)
        for j in range(c.step - FOCUS_RADIUS, c.step + FOCUS_RADIUS + 1)
        if 0 <= j < len(texts)
    }
    rooms = _rooms(costs, max(0, token_budget - estimate_tokens(task_text)), focus)
    items = [
        EvidenceItem(id="E0", kind="task", source="task", text=task_text, clipped=task_clipped)
    ]
    for i, (turn, text, room, cost) in enumerate(
        zip(redacted.trace, texts, rooms, costs, strict=True)
    ):
        if room >= cost:
            shown, clipped = text, False
        elif room <= OUTLINE_TOKENS:
            shown, clipped = _outline(text, OUTLINE_TOKENS), True
        else:
            shown, clipped = clip_text(text, room, 0.6)
        items.append(
            EvidenceItem(
                id=step_id(i),
                kind=_kind(turn),
                source=turn.id,
                role=turn.role,
                step=i,
                text=shown,
                clipped=clipped,
            )
        )
    return evidence_set(items, STEPS_SELECTOR_VERSION, token_budget, [])
