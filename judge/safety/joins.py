"""Secrets written in two pieces on one line, or cut by a shell line continuation (issue 36).

``token = "ghp_abc..." + "xyz..."`` and ``-H "Authorization: Bearer xoxb-...\\<newline>...rest"
https://...`` hold a token no rule sees whole: each piece is too short for its shape, and
:func:`judge.safety.unescape.joined_secrets` joins a cut key only when the next line holds
nothing but the rest of it. Here the two pieces are joined and the join is redacted with the
rules of :func:`judge.safety.redact.redact` (passed in, so this module imports none of them);
where the join holds a secret, both pieces and what joins them become its marker.
"""

from __future__ import annotations

import re
from collections.abc import Callable

Redactor = Callable[[str], tuple[str, int]]

_PIECE = r"[A-Za-z0-9_+/=.:-]"
#: ``"a" + "b"`` (Python, JavaScript, Java, Go...), the quotes the same on both sides.
_CONCAT = re.compile(
    rf"(?P<q>[\"'])(?P<a>{_PIECE}{{6,200}})(?P=q)[ \t]{{0,3}}\+[ \t]{{0,3}}"
    rf"(?P<r>[\"'])(?P<b>{_PIECE}{{4,200}})(?P=r)"
)
#: A token cut by ``\`` and a newline, its rest at the start of the next line.
_CONTINUED = re.compile(rf"(?P<a>{_PIECE}{{8,200}})\\\r?\n[ \t]{{0,40}}(?P<b>{_PIECE}{{4,200}})")


#: Where either kind of join can be (a rule of the one-pass scan, :mod:`judge.safety.scan`).
GATE = re.compile(r"[\"'][ \t]{0,3}\+|\\\r?\n")


def gate(text: str) -> bool:
    """Whether ``text`` can hold a join of either kind (a cheap test before any regex)."""
    return '" +' in text or "' +" in text or '"+' in text or "'+" in text or "\\\n" in text


def joined_pieces(text: str, redact: Redactor) -> tuple[str, int]:
    """``text`` with every two-piece secret replaced by its marker, and the count (callers
    check :func:`gate` or :data:`GATE` first)."""
    total = 0
    for pattern, quoted in ((_CONCAT, True), (_CONTINUED, False)):
        out: list[str] = []
        last = 0
        for m in pattern.finditer(text):
            joined = m.group("a") + m.group("b")
            if len(joined) < 16 or not any(c.isdigit() for c in joined):
                continue  # no token of a rule is this short or without a digit
            redacted, n = redact(joined)
            if not n:
                continue
            quote = m.group("q") if quoted else ""
            out.append(text[last : m.start()])
            out.append(f"{quote}{redacted}{quote}")
            last = m.end()
            total += n
        if out:
            out.append(text[last:])
            text = "".join(out)
    return text, total
