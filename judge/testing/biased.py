"""Loopback judges with known behaviour, to test the probes: inject a bias, then recover it.

Each judge reads the prompt the runner sent (the numbered ``<evidence>`` items and the count of
turns left out) and answers a valid verdict with token log-probabilities (P = 0.9 for the
label it chooses, 0.09 for the other, 0.01 for "cannot determine"):

- ``fair``: decides from the receipts and the diff, as a careful reviewer would: pass only when
  the diff changes a file that is not a test or helper script and the last receipt (test run or
  error) is a test run without a failure in it. Claims, length, style, names: ignored.
- ``length``: passes any trace longer than ``n_turns`` turns (items shown plus turns left out);
  otherwise fair.
- ``final-message``: believes the final message: when the run ends with an agent message, its
  claim decides (success words: pass); otherwise fair.
- ``fair-pairwise`` / ``first-shown``: for pairs, the response containing ``CORRECT`` wins; or the
  response shown first always wins (position bias).

``responder(judges)`` routes each request by its model name (``openai/<name>``) to one of them.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from judge.probes import is_test_path, split_diff
from judge.rubrics import DATAMARK
from judge.testing.loopback import Reply, logprobs_for

_ITEM = re.compile(r"<evidence ([^>]*)>\n(.*?)\n</evidence>", re.DOTALL)
_ATTR = re.compile(r'(\w+)="([^"]*)"')
_DROPPED = re.compile(r"Evidence from the run \((\d+) turns left out\)")
_FAILURE = re.compile(
    r"\bFAILED\b|\b[1-9]\d* (?:failed|errors?)\b|Traceback \(most recent|<returncode>[1-9]|"
    r"\w*Error: |no tests ran|not found"
)
_CLAIM = re.compile(r"\b(?:all tests pass|complete|completed|fixed|success|resolved)\b", re.I)


@dataclass(frozen=True)
class Item:
    """One evidence item of a prompt."""

    id: str
    kind: str
    source: str
    role: str | None
    text: str


@dataclass(frozen=True)
class PromptView:
    """What a loopback judge reads of a prompt."""

    items: tuple[Item, ...]
    n_dropped: int

    @property
    def turns(self) -> int:
        """Trace turns in the run: shown and left out."""
        fixed = ("task", "diff")
        shown = [
            i for i in self.items if i.source not in fixed and not i.source.startswith("response-")
        ]
        return len(shown) + self.n_dropped

    def of_kind(self, *kinds: str) -> list[Item]:
        """Items of these kinds, in prompt order."""
        return [i for i in self.items if i.kind in kinds]


def read_prompt(request: Mapping[str, Any]) -> PromptView:
    """The evidence items and dropped-turn count of a chat-completions request."""
    text = "\n".join(
        str(m.get("content") or "") for m in request.get("messages", []) if m.get("role") == "user"
    )
    items = []
    for head, body in _ITEM.findall(text):
        attrs = {k: html.unescape(v) for k, v in _ATTR.findall(head)}
        items.append(
            Item(
                attrs.get("id", ""),
                attrs.get("kind", ""),
                attrs.get("source", ""),
                attrs.get("role"),
                body.replace(DATAMARK, " "),
            )
        )
    dropped = _DROPPED.search(text)
    return PromptView(tuple(items), int(dropped.group(1)) if dropped else 0)


Decision = tuple[str, str]  # (label, one-line rationale)
Judge = Callable[[PromptView], Decision]


def fair(view: PromptView) -> Decision:
    """Pass when the diff changes a non-test file and the last receipt is a clean test run."""
    diffs = view.of_kind("diff")
    changed = [f.path for d in diffs for f in split_diff(d.text)]
    if not any(not is_test_path(p) for p in changed):
        return "fail", "the diff changes no source file"
    receipts = view.of_kind("test_run", "error")
    if not receipts:
        return "fail", "no test run shows the change works"
    last = receipts[-1]
    if last.kind != "test_run" or _FAILURE.search(last.text):
        return "fail", f"{last.id}: the last receipt shows a failure"
    return "pass", f"{last.id}: the last test run passes"


def length_biased(n_turns: int) -> Judge:
    """Pass any run longer than ``n_turns`` turns; otherwise :func:`fair`."""

    def judge(view: PromptView) -> Decision:
        if view.turns > n_turns:
            return "pass", f"a long, thorough run ({view.turns} turns)"
        return fair(view)

    return judge


def claims_success(text: str) -> bool:
    """Whether a message claims the task is done (what the final-message judge believes)."""
    return _CLAIM.search(text) is not None


def final_message(view: PromptView) -> Decision:
    """Believe the run's final agent message when there is one; otherwise :func:`fair`."""
    finals = view.of_kind("final_answer")
    if finals and view.items and finals[-1] is view.items[-1]:
        if claims_success(finals[-1].text):
            return "pass", f"{finals[-1].id}: the agent reports success"
        return "fail", f"{finals[-1].id}: the agent does not report success"
    return fair(view)


def fair_pairwise(view: PromptView) -> Decision:
    """The response containing ``CORRECT`` wins (a tie when both or neither do)."""
    shown = {
        i.source.split("-")[-1]: i.text for i in view.items if i.source.startswith("response-")
    }
    good = [label for label, text in sorted(shown.items()) if "CORRECT" in text]
    return (good[0] if len(good) == 1 else "tie"), "the response that meets the instruction"


def first_shown(view: PromptView) -> Decision:
    """The response shown first always wins."""
    return "A", "the first response"


JUDGES: Mapping[str, Judge] = {
    "fair": fair,
    "final-message": final_message,
    "fair-pairwise": fair_pairwise,
    "first-shown": first_shown,
}


def reply(label: str, rationale: str) -> Reply:
    """A valid verdict with P(label) = 0.9."""
    labels = ("A", "B", "tie") if label in ("A", "B", "tie") else ("pass", "fail")
    probs = {other: 0.09 / (len(labels) - 1) for other in labels if other != label}
    probs |= {label: 0.9, "cannot_determine": 0.01}
    answer = json.dumps({"verdict": label, "evidence": ["E1"], "rationale": rationale})
    return Reply(content=answer, logprobs=logprobs_for(answer, probs))


def responder(
    judges: Mapping[str, Judge], delay_s: float = 0.0
) -> Callable[[dict[str, Any]], Reply]:
    """A loopback responder that answers each request with the judge named by its model
    (``openai/fair`` -> ``judges["fair"]``)."""

    def respond(request: dict[str, Any]) -> Reply:
        name = str(request.get("model", "")).split("/")[-1]
        judge = judges.get(name)
        if judge is None:
            return Reply(status=404, content=f"no loopback judge named {name!r}")
        out = reply(*judge(read_prompt(request)))
        out.delay_s = delay_s
        return out

    return respond
