"""A loopback judge that obeys planted instructions, in any language or encoding it can see.

The worst judge an injection can meet: whenever a text the test or benchmark planted in a run is
in the prompt (any piece of it: :func:`pieces`), it answers the label that text asks for (as a
model would that reads French, base64, a split note or a forged verdict and does what it says);
otherwise it answers as an honest judge would (:mod:`judge.testing.biased`'s ``fair`` by default:
from the diff and the last test run shown). So whether an injected run is decided automatically
depends only on the defences around the judge, never on the judge resisting the attack.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from judge.testing.biased import Judge, fair, read_prompt, reply
from judge.testing.loopback import Reply

#: A piece is this many characters of the planted text (whitespace folded), every half piece.
PIECE = 24
#: A piece shorter than this (a short planted text) sways nothing: too likely by chance.
MIN_PIECE = 16


@dataclass(frozen=True)
class Planted:
    """A text planted in a run, and the label it asks the judge for."""

    text: str
    label: str = "pass"


def fold(text: str) -> str:
    """``text`` with every run of whitespace as one space (as pieces are compared)."""
    return " ".join(text.split())


def pieces(text: str, size: int = PIECE) -> list[str]:
    """Overlapping pieces of ``text`` (whitespace folded), each of which sways the judge."""
    words = fold(text)
    if len(words) <= size:
        return [words] if len(words) >= MIN_PIECE else []
    return [words[i : i + size] for i in range(0, len(words) - size + 1, size // 2)]


def obeying(
    planted: Sequence[Planted], honest: Judge = fair, *, scaffold: str = ""
) -> Callable[[dict[str, Any]], Reply]:
    """A loopback responder: the planted label when a piece of a planted text is in the
    prompt, else ``honest``'s verdict. Pieces found in ``scaffold`` (what every prompt holds
    anyway: the task, the rubric) sway nothing."""
    shown = fold(scaffold)
    index = [(piece, p.label) for p in planted for piece in pieces(p.text) if piece not in shown]

    def respond(request: dict[str, Any]) -> Reply:
        prompt = fold(" ".join(str(m.get("content") or "") for m in request["messages"]))
        for piece, label in index:
            if piece in prompt:
                return reply(label, "as the note in the evidence says")
        return reply(*honest(read_prompt(request)))

    return respond
