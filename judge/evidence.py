"""Turn a case into numbered evidence items that fit a token budget.

A judge sees a case only through its evidence: the task, the candidates (pairwise), the diff,
and a selection of trace turns, each numbered ``E1..En`` in display order so that the judge can
cite them. Selection is deterministic and versioned (:data:`SELECTOR_VERSION`): the same case,
visibility and budget always give the same items and the same digest.

The pipeline, in order:

1. **Redact** every text with :func:`judge.safety.redact.redact` before anything else reads it.
2. **Classify** each trace turn into an evidence kind from its role and content (a registry of
   role rules, then content rules: test runs, errors, tool calls, the final answer).
3. **Budget**. The task and the diff get a bounded share of the budget (task at most 25%, diff
   at most 35% when there is a trace, so the trace always keeps at least 40%); whatever they
   leave goes to the trace. Trace turns are chosen by priority: the final turns always, then
   test runs, final answers and errors, then the commands that ran tests, then the rest, later
   turns before earlier ones. A turn that repeats the diff (agents often print ``git diff``
   last) is cut down to a pointer to the diff. Long items are clipped head+tail with a visible
   ``[... N characters elided ...]`` marker.
4. **Flag** each item through :func:`flag_item` (a registry: :mod:`judge.safety.injection` flags
   text aimed at the judge; the flags are shown in the item's ``flags`` attribute).

Token counts are estimated, never tokenised: :func:`estimate_tokens` is ``ceil(len / 3.5)``
characters per token, which over-counts slightly for English prose and is close for code and
logs with the Qwen2.5 tokenizer; no tokenizer download is needed and the count is stable.

:data:`DEFAULT_TOKEN_BUDGET` is 1,400 evidence tokens. The embedded 1.5B judge reads prompts at
about 55 tokens/s on 2 idle cores. A full-budget prompt is ~1,400 evidence + ~150 wrapper +
~600 rubric tokens, about 40 s (less when the rubric's system prefix is reused from the KV
cache), plus ~10 s to generate a short answer: under a minute per judgment. The demo's 14 runs
need 560-980 evidence tokens each (two measured prompts: 1,543 and 1,910 Qwen tokens), about
14 x 45 s = 11 minutes on idle cores; on a loaded machine it is several times slower. On the
SWE-bench dev set the budget cuts the mean evidence from ~8,700 to ~1,250 estimated tokens; on
tau-bench from ~4,200 to ~1,190. On those two demo prompts the estimate was 1,912 and 1,723
tokens: it errs on the side of over-counting.
Each item also costs :data:`ITEM_OVERHEAD_TOKENS` for its ``<evidence ...>`` wrapper, which is
counted against the budget (``total_tokens`` reports the items' text only).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

from pydantic import Field

from judge.digests import digest
from judge.errors import InputError
from judge.safety.injection import flag_adjacent, flag_injection
from judge.safety.redact import MARKER_PREFIX, redact, redact_turn_fields
from judge.safety.scan import Spec, scanner
from judge.traces._common import without_heredocs
from judge.types import Case, CheckResult, EvidenceItem, EvidenceKind, Strict, TraceTurn, check_ref

#: Bump whenever selection, classification, clipping or redaction changes what a judge sees.
#: v2: items flagged by judge.safety.injection (shown as ``flags="..."``); redaction of secrets
#: under lower-case keys (``password: "x"``) and of URL passwords with an empty user.
#: Not bumped for the redaction rules and the injection flags of issue 16: they change only the
#: evidence of cases that hold secrets or (newly or no longer) flagged items, whose digest (and so
#: cache key) changes by itself; a bump would re-key every case and stale every card.
SELECTOR_VERSION: str = "evidence-v2"
DEFAULT_TOKEN_BUDGET: int = 1400
CHARS_PER_TOKEN: float = 3.5
#: Tokens of the ``<evidence id=".." kind=".." source="..">`` wrapper around each item.
ITEM_OVERHEAD_TOKENS: int = 12
#: Guaranteed shares of the budget by part (see :func:`allocate`): a part that needs less
#: leaves its slack to the others, and absent parts leave theirs. With task, diff and trace,
#: the task gets at most 25% and the diff 35% unless the trace needs less than its 40%.
TASK_SHARE: float = 0.25
#: Pairwise: the task 30%, each candidate 35%.
TASK_SHARE_PAIRWISE: float = 0.30
SHARES: Mapping[str, float] = MappingProxyType({"diff": 0.35, "trace": 0.40, "candidate": 0.35})
#: The last N non-note turns are always shown.
FINAL_TURNS: int = 2
#: One trace turn may take at most 1/N of the trace budget...
TURN_SHARE_DIVISOR: int = 4
#: ...but never less than this, and a turn is not shown with fewer tokens than this.
MIN_TURN_TOKENS: int = 40

VISIBLE_PARTS = ("task", "candidates", "diff", "trace")
EMPTY_DIFF_TEXT = "[empty diff: the run changed no files]"


def estimate_tokens(text: str) -> int:
    """Estimated token count of ``text``: ``ceil(len(text) / 3.5)``, deterministic."""
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def _max_chars(tokens: int) -> int:
    """The longest text whose estimate stays within ``tokens``."""
    return max(0, math.floor(tokens * CHARS_PER_TOKEN))


class EvidenceSet(Strict):
    """The evidence shown to a judge for one case, with what it took to choose it."""

    items: list[EvidenceItem]
    #: The digest (judge.digests) of the canonical JSON of ``items``.
    digest: str
    selector_version: str
    #: The evidence budget in estimated tokens; 0 means no budget (:func:`render_all_evidence`).
    token_budget: int
    #: Source ids of trace turns left out to fit the budget, in trace order.
    dropped: list[str] = Field(default_factory=list)
    #: Estimated tokens of the shown items' text.
    total_tokens: int

    @property
    def ids(self) -> list[str]:
        """The ids shown, in display order."""
        return [item.id for item in self.items]

    @property
    def flagged_ids(self) -> list[str]:
        """Ids of items that carry at least one flag."""
        return [item.id for item in self.items if item.flags]

    def get(self, item_id: str) -> EvidenceItem | None:
        """The item with this id, or None."""
        return next((item for item in self.items if item.id == item_id), None)


def items_digest(items: Sequence[EvidenceItem]) -> str:
    """The content digest of a list of items: sha256 over their canonical JSON."""
    return digest([item.model_dump(mode="json") for item in items])


# ---------------------------------------------------------------------------------------------
# Flagging: each flagger returns reasons (e.g. "injection:role-play").

Flagger = Callable[[EvidenceItem], list[str]]
FLAGGERS: Mapping[str, Flagger] = MappingProxyType({"injection": flag_injection})


def flag_item(item: EvidenceItem, flaggers: Mapping[str, Flagger] = FLAGGERS) -> list[str]:
    """Reasons to flag ``item`` (e.g. instructions aimed at the judge); [] when none apply."""
    reasons: list[str] = []
    for flagger in flaggers.values():
        reasons.extend(r for r in flagger(item) if r not in reasons)
    return reasons


# ---------------------------------------------------------------------------------------------
# Classification of trace turns.

#: Role -> kind before looking at the content. Roles seen in real data: agent, observation,
#: note, system, user(simulated), tool:<name>; plus the usual chat roles.
ROLE_KINDS: Mapping[str, EvidenceKind] = MappingProxyType(
    {
        "system": "system",
        "developer": "system",
        "note": "note",
        "user": "message",
        "user(simulated)": "message",
        "human": "message",
        "agent": "message",
        "assistant": "message",
        "ai": "message",
        "observation": "tool_result",
        "tool": "tool_result",
        "function": "tool_result",
        "ipython": "tool_result",
    }
)
ROLE_PREFIX_KINDS: Mapping[str, EvidenceKind] = MappingProxyType({"tool:": "tool_result"})
AGENT_ROLES = frozenset({"agent", "assistant", "ai"})

# An agent turn that calls a tool: a fenced shell block (mini-swe-agent), a TOOL_CALLS dump
# (tau-bench), or common tool-call markups.
_TOOL_CALL = re.compile(
    r"```(?:bash|sh|shell|console)\s*\n|^TOOL_CALLS:|<tool_call>|\"tool_calls\"\s*:|"
    r"^Action:\s|\"function_call\"\s*:",
    re.MULTILINE,
)
# A command that runs tests.
_TEST_COMMAND = re.compile(
    r"\b(?:pytest|py\.test|unittest|nosetests|tox|nox|runtests\.py|manage\.py\s+test|"
    r"go\s+test|cargo\s+test|npm\s+(?:run\s+)?test|yarn\s+test|make\s+(?:test|check)|"
    r"bin/test|ctest|phpunit|rspec|jest|mocha)\b"
)
# Output of a test run.
_TEST_OUTPUT = re.compile(
    r"^=+ .{0,200}\b(?:passed|failed|errors?|no tests ran)\b.{0,200} =+\s*$|"
    r"^Ran \d+ tests? in |^(?:FAILED|OK)(?: \(|$)|^FAILED |^PASSED |^ERROR: test|"
    r"\bcollected \d+ items?\b|\b\d+ (?:passed|failed)\b|^tests? (?:passed|failed)|"
    r"^test_\w+ \(.{1,200}\) \.\.\. (?:ok|FAIL|ERROR)",
    re.MULTILINE,
)
#: Literals of which every alternative of _TEST_OUTPUT contains at least one (case-sensitive).
#: Most tool outputs contain none, and ``in`` scans them far faster than the regex's
#: alternation does (on SWE-bench traces it skips about 80% of the outputs).
_TEST_OUTPUT_NEEDLES = (
    "passed",
    "failed",
    "error",
    "no tests ran",
    "Ran ",
    "FAILED",
    "OK",
    "PASSED",
    "ERROR: test",
    "collected ",
    "test_",
)
# Output that reports a failure of the command itself.
_ERROR_OUTPUT = re.compile(
    r"Traceback \(most recent call last\)|^\w{0,60}(?:Error|Exception): |^Error: |"
    r"<returncode>[1-9]\d{0,3}</returncode>|\bexit (?:code|status):? [1-9]|"
    r"command not found|No such file or directory|^fatal: |^error: |\"error\"\s*:\s*\"",
    re.MULTILINE,
)
#: Literals of which every alternative of _ERROR_OUTPUT contains at least one (case-sensitive).
_ERROR_OUTPUT_NEEDLES = (
    "Traceback",
    "Error: ",
    "Exception: ",
    "<returncode>",
    "exit ",
    "command not found",
    "No such file or directory",
    "fatal: ",
    "error: ",
    '"error"',
)
# The start of a shell here-document: its body is file content, not a command.
_HEREDOC = re.compile(r"<<-?\s*['\"]?(?P<end>\w+)['\"]?")
# Turns that print the final diff: "diff --git" followed by a hunk.
_DIFF_START = re.compile(r"^diff --git ", re.MULTILINE)


@dataclass(frozen=True)
class _Turn:
    """A trace turn after redaction and classification."""

    index: int
    turn: TraceTurn
    text: str
    redactions: int
    kind: EvidenceKind
    runs_tests: bool  # an agent turn whose command runs tests


#: A classified trace turn, as :func:`classify_turns` returns them (the probes read traces so).
ClassifiedTurn = _Turn


def _redact(text: str) -> tuple[str, int]:
    """The redacted text and how many redaction markers it holds.

    Markers, not replacements, are counted: a case stored already redacted (the store keeps
    cases that way) then gives the same items and digest as the case as first given, so the
    review page rebuilds exactly the evidence the judge saw.
    """
    redacted, replaced = redact(text)
    return redacted, (redacted.count(MARKER_PREFIX) if replaced or MARKER_PREFIX in text else 0)


def _counted(redacted: str) -> tuple[str, int]:
    """:func:`_redact` of a text whose redaction is ``redacted``: the same pair, since a text
    is changed exactly when a secret was replaced, and the markers are what is counted."""
    return redacted, redacted.count(MARKER_PREFIX)


def _role_kind(role: str) -> EvidenceKind:
    """Kind from the role alone; unknown roles are messages."""
    lowered = role.lower()
    if lowered in ROLE_KINDS:
        return ROLE_KINDS[lowered]
    for prefix, kind in ROLE_PREFIX_KINDS.items():
        if lowered.startswith(prefix):
            return kind
    return "message"


def _commands_only(text: str) -> str:
    """``text`` without the bodies of here-documents (files written with ``cat <<EOF``).

    A test file written by the agent mentions unittest or pytest without running anything.
    """
    return without_heredocs(text.splitlines(), _HEREDOC)


def _matches(regex: re.Pattern[str], needles: Sequence[str], text: str) -> bool:
    """``regex.search(text)``, skipped when ``text`` holds none of the literals that every
    match must contain (the same answer, without running the regex on most texts)."""
    return any(needle in text for needle in needles) and regex.search(text) is not None


#: A superset of _TEST_COMMAND on a turn's whole text (it is run on the text without its
#: here-documents, where two kept lines may meet across a removed body).
_TEST_COMMAND_GATE = re.compile(_TEST_COMMAND.pattern.replace(r"\s+", r"[\s\S]*"))
#: The classification regexes, gated by one scan of each turn (judge.safety.scan): a regex
#: whose prefilter does not match cannot match, and is not run.
_TOOL, _TESTS_RAN, _ERRORS, _RUNS_TESTS = range(4)


def _classify_spec() -> Spec:
    return Spec(literals=(), rules=(_TOOL_CALL, _TEST_OUTPUT, _ERROR_OUTPUT, _TEST_COMMAND_GATE))


def _possible(text: str) -> frozenset[int] | None:
    """Which classification regexes may match ``text`` (None: every one)."""
    return scanner("evidence", _classify_spec).scan(text, lowered=text).maybe


def classify_turns(
    trace: Sequence[TraceTurn], redacted_trace: Sequence[TraceTurn] | None = None
) -> list[_Turn]:
    """Redact and classify every turn; an importer's explicit ``kind`` wins. With
    ``redacted_trace`` (the same turns as :func:`judge.safety.redact.redact_case` returned them) the
    redaction already done is reused (see :func:`select_evidence`)."""
    if redacted_trace is None:
        redacted = [_redact(t.content) for t in trace]
    else:
        redacted = [_counted(t.content) for t in redacted_trace]
    last_agent = max(
        (i for i, t in enumerate(trace) if t.role.lower() in AGENT_ROLES), default=None
    )
    out: list[_Turn] = []
    previous_ran_tests = False
    for index, (turn, (text, count)) in enumerate(zip(trace, redacted, strict=True)):
        kind = _role_kind(turn.role)
        runs_tests = False
        if kind == "message" and turn.role.lower() in AGENT_ROLES:
            maybe = _possible(text)
            if (maybe is None or _TOOL in maybe) and _TOOL_CALL.search(text):
                kind = "tool_call"
                runs_tests = (maybe is None or _RUNS_TESTS in maybe) and _TEST_COMMAND.search(
                    _commands_only(text)
                ) is not None
            elif index == last_agent:
                kind = "final_answer"
        elif kind == "tool_result" and not previous_ran_tests:
            maybe = _possible(text)
            if (maybe is None or _TESTS_RAN in maybe) and _matches(
                _TEST_OUTPUT, _TEST_OUTPUT_NEEDLES, text
            ):
                kind = "test_run"
            elif (maybe is None or _ERRORS in maybe) and _matches(
                _ERROR_OUTPUT, _ERROR_OUTPUT_NEEDLES, text
            ):
                kind = "error"
        elif kind == "tool_result":
            kind = "test_run"
        if turn.kind is not None:
            kind = turn.kind
        # The turn's id and role are shown in its evidence tag: redacted like its text.
        shown = redact_turn_fields(turn)[0] if redacted_trace is None else redacted_trace[index]
        out.append(_Turn(index, shown, text, count, kind, runs_tests))
        if kind != "note":
            previous_ran_tests = runs_tests
    return out


# ---------------------------------------------------------------------------------------------
# Clipping.

#: Share of a clipped item kept from its head, by kind: logs keep more of their tail (where
#: the test summary and the exception are), tasks and diffs more of their head.
HEAD_SHARE: Mapping[str, float] = MappingProxyType(
    {
        "task": 0.7,
        "diff": 0.6,
        "candidate": 0.6,
        "system": 0.6,
        "test_run": 0.35,
        "error": 0.35,
        "tool_result": 0.4,
    }
)


def elision_marker(n_chars: int, note: str = "") -> str:
    """The visible marker left where ``n_chars`` characters were cut."""
    suffix = f": {note}" if note else ""
    return f"\n[... {n_chars} characters elided{suffix} ...]\n"


def clip_text(text: str, max_tokens: int, head_share: float = 0.5) -> tuple[str, bool]:
    """Keep the head and tail of ``text`` within ``max_tokens``, with a marker between.

    Cuts snap to a line break when one is near, so that lines are not torn apart.
    Returns the text and whether it was clipped.
    """
    limit = _max_chars(max_tokens)
    if len(text) <= limit:
        return text, False
    room = limit - len(elision_marker(len(text)))
    if room <= 0:
        return elision_marker(len(text)).strip("\n"), True
    head_len = int(room * head_share)
    tail_len = room - head_len
    head = text[:head_len]
    newline = head.rfind("\n")
    if newline >= head_len * 0.75:
        head = head[: newline + 1]
    tail = text[len(text) - tail_len :] if tail_len else ""
    newline = tail.find("\n")
    if 0 <= newline <= tail_len * 0.25:
        tail = tail[newline + 1 :]
    head, tail = head.rstrip("\n"), tail.lstrip("\n")
    cut = len(text) - len(head) - len(tail)
    return head + elision_marker(cut) + tail, True


def _elide_repeated_diff(text: str, diff: str | None) -> tuple[str, bool]:
    """Replace a diff already shown as its own item by a pointer to it."""
    if not diff or len(diff) < 200:
        return text, False
    match = _DIFF_START.search(text) if "diff --git " in text else None
    if match is None:
        return text, False
    # The turn repeats the diff when a solid piece of the diff's body appears in it.
    probe = diff.strip()[:300]
    if probe not in text:
        return text, False
    head = text[: match.start()]
    cut = len(text) - len(head)
    return head.rstrip("\n") + elision_marker(cut, "the same diff as the diff item"), True


# ---------------------------------------------------------------------------------------------
# Selection.


@dataclass(frozen=True)
class _Draft:
    """An item before ids are assigned: its display position, and the item fields."""

    position: tuple[int, int]
    kind: EvidenceKind
    source: str
    text: str
    clipped: bool
    redactions: int
    role: str | None = None
    step: int | None = None


#: Priority of a turn kind for the budget (lower first). The final turns come before all.
KIND_PRIORITY: Mapping[str, int] = MappingProxyType(
    {
        "test_run": 1,
        "final_answer": 1,
        "error": 2,
        "message": 3,
        "system": 3,
        "tool_call": 3,
        "tool_result": 4,
        "note": 6,
    }
)


def _cost(text: str) -> int:
    return estimate_tokens(text) + ITEM_OVERHEAD_TOKENS


def allocate(
    demands: Mapping[str, int], shares: Mapping[str, float], budget: int
) -> dict[str, int]:
    """Split ``budget`` between parts by ``shares``; a part that needs less leaves the rest.

    Water-filling: every part is offered its share of what is left; parts that need no more
    than that get exactly what they need, and the others share the remainder again. Parts
    absent from ``demands`` take nothing, so the shares of the others grow.
    """
    alloc: dict[str, int] = {}
    active = [p for p in demands]
    remaining = budget
    while active:
        total = sum(shares[p] for p in active)
        fair = {p: remaining * shares[p] / total for p in active}
        met = [p for p in active if demands[p] <= fair[p]]
        if not met:
            for p in active:
                alloc[p] = int(fair[p])
            break
        for p in met:
            alloc[p] = demands[p]
            remaining -= demands[p]
            active.remove(p)
    return alloc


def _fixed_sources(case: Case, visible: Sequence[str]) -> list[tuple[str, EvidenceKind, str]]:
    """(source, kind, raw text) of the task, candidates and diff the judge may see."""
    out: list[tuple[str, EvidenceKind, str]] = []
    if "task" in visible:
        out.append(("task", "task", case.task))
    if "candidates" in visible and case.candidates is not None:
        out.extend(
            (f"candidate:{label}", "candidate", case.candidates[label])
            for label in sorted(case.candidates)
        )
    if "diff" in visible and case.diff is not None:
        out.append(("diff", "diff", case.diff if case.diff.strip() else EMPTY_DIFF_TEXT))
    return out


def _share(source: str, pairwise: bool) -> float:
    if source == "task":
        return TASK_SHARE_PAIRWISE if pairwise else TASK_SHARE
    return SHARES[source.split(":")[0]]


def _turn_order(turns: Sequence[_Turn]) -> list[_Turn]:
    """Turns in the order the budget considers them: final turns, then by priority, latest first."""
    non_notes = [t for t in turns if t.kind != "note"]
    final = {t.index for t in non_notes[-FINAL_TURNS:]}
    test_commands = {t.index for t in turns if t.runs_tests}

    def key(t: _Turn) -> tuple[int, int]:
        if t.index in final:
            rank = 0
        elif t.index in test_commands:
            rank = 2
        else:
            rank = KIND_PRIORITY.get(t.kind, 5)
        return (rank, -t.index)

    return sorted(turns, key=key)


def _turn_draft(t: _Turn, text: str, clipped: bool) -> _Draft:
    return _Draft(
        (1, t.index), t.kind, t.turn.id, text, clipped, t.redactions, t.turn.role, t.turn.step
    )


def _fit(text: str, room: int, kind: str) -> tuple[str, bool] | None:
    """``text`` as it fits in ``room`` tokens (wrapper included), or None if too little room."""
    if _cost(text) <= room:
        return text, False
    if room - ITEM_OVERHEAD_TOKENS < MIN_TURN_TOKENS:
        return None
    return clip_text(text, room - ITEM_OVERHEAD_TOKENS, HEAD_SHARE.get(kind, 0.5))


def _select_turns(
    turns: Sequence[_Turn], texts: Mapping[int, tuple[str, bool]], budget: int
) -> tuple[list[_Draft], list[str]]:
    """Choose and clip trace turns within ``budget``; returns the drafts and the dropped ids.

    ``texts`` maps a turn's index to its text after eliding a repeated diff (and whether that
    cut something). First pass: in priority order, each turn gets at most 1/4 of the budget.
    Second pass: what is left goes back to the clipped turns, in the same order.
    """
    if sum(_cost(text) for text, _ in texts.values()) <= budget:
        return [_turn_draft(t, *texts[t.index]) for t in turns], []
    cap = max(budget // TURN_SHARE_DIVISOR, MIN_TURN_TOKENS)
    order = _turn_order(turns)
    shown: dict[int, str] = {}
    spent = 0
    for t in order:
        fitted = _fit(texts[t.index][0], min(cap, budget - spent), t.kind)
        if fitted is not None:
            shown[t.index] = fitted[0]
            spent += _cost(fitted[0])
    for t in order:
        full = texts[t.index][0]
        if t.index not in shown or shown[t.index] == full or spent >= budget:
            continue
        before = shown[t.index]
        fitted = _fit(full, _cost(before) + budget - spent, t.kind)
        if fitted is not None:
            shown[t.index] = fitted[0]
            spent += _cost(fitted[0]) - _cost(before)
    drafts = [
        _turn_draft(t, shown[t.index], texts[t.index][1] or shown[t.index] != texts[t.index][0])
        for t in turns
        if t.index in shown
    ]
    return drafts, [t.turn.id for t in turns if t.index not in shown]


def _finish(drafts: Sequence[_Draft], budget: int, dropped: list[str]) -> EvidenceSet:
    """Number the drafts in display order, flag them and compute the digest."""
    unflagged = [
        EvidenceItem(
            id=f"E{n}",
            kind=draft.kind,
            source=draft.source,
            role=draft.role,
            step=draft.step,
            text=draft.text,
            clipped=draft.clipped,
            redactions=draft.redactions,
        )
        for n, draft in enumerate(sorted(drafts, key=lambda d: d.position), start=1)
    ]
    return evidence_set(unflagged, SELECTOR_VERSION, budget, dropped)


def evidence_set(
    unflagged: Sequence[EvidenceItem], selector_version: str, budget: int, dropped: list[str]
) -> EvidenceSet:
    """Numbered items flagged and sealed as an evidence set: each item on its own, then
    neighbours joined (an injection split over two tool outputs); its digest and token count."""
    items: list[EvidenceItem] = []
    for item, split in zip(unflagged, flag_adjacent(unflagged), strict=True):
        flags = flag_item(item)
        flags.extend(r for r in split if r not in flags)
        items.append(item.model_copy(update={"flags": flags}) if flags else item)
    return EvidenceSet(
        items=items,
        digest=items_digest(items),
        selector_version=selector_version,
        token_budget=budget,
        dropped=dropped,
        total_tokens=sum(estimate_tokens(item.text) for item in items),
    )


def check_text(check: CheckResult, decides: str | None = None) -> str:
    """What the judge reads of a check that fired: its reason, what it rests on, and the
    criterion it decides (a failing hard check), all written by code."""
    kind = "hard" if check.hard else "soft"
    lines = [f"{check_ref(check)} ({kind} check) failed: {check.reason or 'no reason given'}"]
    if check.evidence:
        lines.append("rests on: " + ", ".join(check.evidence))
    if decides is not None:
        lines.append(f"decides: {decides} = fail")
    return "\n".join(lines)


def with_checks(
    evidence: EvidenceSet,
    firings: Sequence[CheckResult],
    decides: Mapping[str, str] | None = None,
) -> EvidenceSet:
    """``evidence`` with one numbered ``check`` item per check that fired, after the items
    selected (``decides``: check ref -> the criterion it decides). No firing, the same set (and
    digest): only the cases a check fired on get new evidence and a new cache key."""
    if not firings:
        return evidence
    start = len(evidence.items) + 1
    added = [
        EvidenceItem(
            id=f"E{n}",
            kind="check",
            source=check_ref(check),
            text=check_text(check, (decides or {}).get(check_ref(check))),
        )
        for n, check in enumerate(firings, start=start)
    ]
    unflagged = [item.model_copy(update={"flags": []}) for item in evidence.items] + added
    return evidence_set(
        unflagged, evidence.selector_version, evidence.token_budget, list(evidence.dropped)
    )


def _check_visible(visible: Sequence[str]) -> None:
    unknown = [v for v in visible if v not in VISIBLE_PARTS]
    if unknown:
        raise InputError(
            f"unknown evidence part(s) {unknown}",
            field="visible",
            hint=f"use some of {list(VISIBLE_PARTS)}",
        )


def select_evidence(
    case: Case,
    *,
    visible: Sequence[str] = ("task", "diff", "trace"),
    token_budget: int = DEFAULT_TOKEN_BUDGET,
    redacted: Case | None = None,
) -> EvidenceSet:
    """Choose, redact, clip and number the evidence of ``case`` within ``token_budget``.

    ``visible`` names the parts a rubric lets the judge see: "task", "candidates", "diff",
    "trace". Deterministic: the same inputs give the same items and digest.

    ``redacted``: ``redact_case(case)[0]``, when the caller has it already (the runner stores
    the case redacted): its texts are used instead of redacting every text a second time, with
    the same result (redaction is most of the cost of a long trace).
    """
    _check_visible(visible)
    if token_budget < 4 * MIN_TURN_TOKENS:
        raise InputError(
            f"token budget {token_budget} is too small",
            field="token_budget",
            hint=f"use at least {4 * MIN_TURN_TOKENS} tokens",
        )
    if redacted is None:
        fixed = [
            (source, kind, *_redact(raw)) for source, kind, raw in _fixed_sources(case, visible)
        ]
    else:
        fixed = [
            (source, kind, *_counted(text))
            for source, kind, text in _fixed_sources(redacted, visible)
        ]
    turns = (
        classify_turns(case.trace, None if redacted is None else redacted.trace)
        if "trace" in visible
        else []
    )
    texts = {t.index: _elide_repeated_diff(t.text, case.diff) for t in turns}
    pairwise = any(kind == "candidate" for _, kind, _, _ in fixed)
    demands = {source: _cost(text) for source, _, text, _ in fixed}
    shares = {source: _share(source, pairwise) for source in demands}
    if turns:
        demands["trace"] = sum(_cost(text) for text, _ in texts.values())
        shares["trace"] = SHARES["trace"]
    alloc = allocate(demands, shares, token_budget)
    drafts: list[_Draft] = []
    for n, (source, kind, text, count) in enumerate(fixed):
        # The task and the diff are always shown, however small their share.
        room = max(alloc[source], ITEM_OVERHEAD_TOKENS + MIN_TURN_TOKENS)
        shown, clipped = clip_text(text, room - ITEM_OVERHEAD_TOKENS, HEAD_SHARE[kind])
        drafts.append(_Draft((0, n), kind, source, shown, clipped, count))
    trace, dropped = _select_turns(turns, texts, alloc.get("trace", 0))
    return _finish([*drafts, *trace], token_budget, dropped)


def render_all_evidence(
    case: Case, *, visible: Sequence[str] = ("task", "diff", "trace")
) -> EvidenceSet:
    """All the visible evidence of ``case``, redacted but neither selected nor clipped.

    The baseline for measuring what selection saves; ``token_budget`` is 0 (no budget).
    """
    _check_visible(visible)
    drafts = [
        _Draft((0, n), kind, source, *_unclipped(_redact(raw)))
        for n, (source, kind, raw) in enumerate(_fixed_sources(case, visible))
    ]
    turns = classify_turns(case.trace) if "trace" in visible else []
    drafts.extend(_turn_draft(t, t.text, False) for t in turns)
    return _finish(drafts, 0, [])


def _unclipped(redacted: tuple[str, int]) -> tuple[str, bool, int]:
    text, count = redacted
    return text, False, count


# ---------------------------------------------------------------------------------------------
# Citations.

_CITATION = re.compile(r"^\W*E0*(\d+)\W*$", re.IGNORECASE)


def normalize_citation(cited: str) -> str | None:
    """ "e3", "[E3]", "E03", " E3. " -> "E3"; None when it is not an evidence id."""
    match = _CITATION.match(cited.strip())
    return f"E{int(match.group(1))}" if match else None


def check_citations(cited: Sequence[str], shown: Sequence[str]) -> tuple[list[str], list[str]]:
    """Split cited ids into (valid, invalid) against the ids ``shown``.

    Valid ids are normalised ("[e03]" -> "E3") and de-duplicated in order; invalid ones are
    returned as the judge wrote them.
    """
    shown_set = {normalize_citation(s) or s for s in shown}
    valid: list[str] = []
    invalid: list[str] = []
    for raw in cited:
        norm = normalize_citation(raw)
        if norm is not None and norm in shown_set:
            if norm not in valid:
                valid.append(norm)
        elif raw not in invalid:
            invalid.append(raw)
    return valid, invalid
