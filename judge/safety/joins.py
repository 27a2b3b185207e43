"""Secrets written in pieces: two on one line, cut by a shell line continuation, or a chain of
quoted pieces in any language's concatenation (issue 36).

``token = "ghp_abc..." + "xyz..."`` and ``-H "Authorization: Bearer xoxb-...\\<newline>...rest"
https://...`` hold a token no rule sees whole: each piece is too short for its shape, and
:func:`judge.safety.unescape.joined_secrets` joins a cut key only when the next line holds
nothing but the rest of it. Here the two pieces are joined and the join is redacted with the
rules of :func:`judge.safety.redact.redact` (passed in, so this module imports none of them);
where the join holds a secret, both pieces and what joins them become its marker.

A chain (:data:`_CHAIN`) is two or more quoted pieces joined by an operator of some language
(``+``, ``.``, ``..``, ``<>``, ``&``, ``||``, ``++``, ``~``), by nothing but blanks (adjacent
literals in C and Python, a shell command's arguments), or by commas inside a join or concat
call (``"".join([...])``, ``concat!(...)``), on one line or over several (a diff's ``+`` and the
indentation between). The joined value is judged under the name it is assigned to, when one
stands before the chain on its line (``key = "".join([``, ``TOKEN=$(printf '%s%s' ``, ``my $pass
= ``): the same rules then read ``name = "joined"``.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from judge.safety.secret_patterns import replaced_span

Redactor = Callable[[str], tuple[str, int]]

_PIECE = r"[A-Za-z0-9_+/=.:-]"
#: ``"a" + "b"`` (Python, JavaScript, Java, Go...), the quotes the same on both sides.
_CONCAT = re.compile(
    rf"(?P<q>[\"'])(?P<a>{_PIECE}{{6,200}})(?P=q)[ \t]{{0,3}}\+[ \t]{{0,3}}"
    rf"(?P<r>[\"'])(?P<b>{_PIECE}{{4,200}})(?P=r)"
)
#: A token cut by ``\`` and a newline, its rest at the start of the next line.
_CONTINUED = re.compile(rf"(?P<a>{_PIECE}{{8,200}})\\\r?\n[ \t]{{0,40}}(?P<b>{_PIECE}{{4,200}})")


#: The operators that join two strings in some language (``+``, ``.``, ``..``, ``<>``, ``&``,
#: ``||``, ``++``, ``~``); a comma joins only inside a join call (see :func:`_pieces_joined`).
_OPERATORS = r"\+\+|\+|\.\.|\.|<>|&|\|\||~"
_OPERATOR = rf"(?:{_OPERATORS}|,)"
_GAP_OPERATOR = re.compile(_OPERATORS)
#: A quoted piece, then 1 to 15 more, each after an operator, blanks or a line break (with a
#: diff's ``+`` and indentation).
_CHAIN = re.compile(
    r"[\"'][^\s\"'`\\]{4,200}[\"']"
    r"(?:[ \t]{0,3}" + _OPERATOR + r"?[ \t]{0,3}(?:\r?\n[+ \t]{0,40}" + _OPERATOR + r"?[ \t]{0,3})?"
    r"[\"'][^\s\"'`\\]{4,200}[\"']){1,15}"
)
_QUOTED_PIECE = re.compile(r"[\"']([^\s\"'`\\]{4,200})[\"']")
#: Commas join pieces only inside a join or concat call that opens just before the chain.
_JOIN_CALL = re.compile(r"(?i:join|concat|strcat)!?[ \t]{0,3}\([ \t]{0,60}(?:\[[ \t]{0,60})?\Z")
#: The last assignment before the chain on its line: its name (a type between ``:`` and ``=``
#: allowed: ``SIGNING_KEY: &str =``).
_ASSIGNED = re.compile(
    r"(?P<name>[\w.$-]{1,120})[\"']?[ \t]{0,3}(?::[ \t]{0,3}[^=\n]{1,30}?)?[ \t]{0,3}(?:=>|:=|[:=])"
)

#: Where any kind of join can be (a rule of the one-pass scan, :mod:`judge.safety.scan`).
GATE = re.compile(
    rf"[\"'][ \t]{{0,3}}(?:{_OPERATORS})|\\\r?\n|[\"'][ \t]+[\"']"
    rf"|[\"'][ \t]{{0,3}}\r?\n[+ \t]{{0,40}}(?:{_OPERATORS})?[ \t]{{0,3}}[\"']"
    r"|(?i:join|concat|strcat)!?[ \t]{0,3}\("
)


def gate(text: str) -> bool:
    """Whether ``text`` can hold a join of any kind (a test before the joins' regexes)."""
    return GATE.search(text) is not None


def joined_pieces(text: str, redact: Redactor) -> tuple[str, int]:
    """``text`` with every two-piece secret replaced by its marker, and the count (callers
    check :func:`gate` or :data:`GATE` first)."""
    total = 0
    two_pieces = '" +' in text or "' +" in text or '"+' in text or "'+" in text or "\\\n" in text
    for pattern, quoted in ((_CONCAT, True), (_CONTINUED, False)) if two_pieces else ():
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
    text, n = _chains(text, redact)
    return text, total + n


def _pieces_joined(chain: str, join_call: bool) -> list[tuple[int, int]]:
    """The spans (in ``chain``) of its longest runs of pieces that join: a piece joins the one
    before it when an operator stands between them, or only blanks on one line, or a comma
    inside a join call. Across a line break an operator is needed (a diff's ``+`` at a line's
    start is its marker, not one): two quoted values on two lines are two values."""
    spans: list[tuple[int, int]] = []
    pieces = list(_QUOTED_PIECE.finditer(chain))
    start = 0
    for k in range(1, len(pieces) + 1):
        if k < len(pieces):
            gap = chain[pieces[k - 1].end() : pieces[k].start()].replace("\n+", "\n")
            if "," in gap:
                joins = join_call
            else:
                joins = _GAP_OPERATOR.search(gap) is not None or "\n" not in gap
            if joins:
                continue
        if k - start >= 2:
            spans.append((pieces[start].start(), pieces[k - 1].end()))
        start = k
    return spans


def _chains(text: str, redact: Redactor) -> tuple[str, int]:
    """Each run of joined pieces (:func:`_pieces_joined`) whose joined value holds a secret
    that crosses a join (read under the name assigned before the chain on its line, if any)
    becomes one quoted marker; a secret inside one piece is left to the rules."""
    total = 0
    out: list[str] = []
    last = 0
    for m in _CHAIN.finditer(text):
        line_start = text.rfind("\n", 0, m.start()) + 1
        if not text[line_start : m.start()].strip(" \t+") and line_start:
            # The chain opens a line: its call or name is at the end of the line before.
            line_start = text.rfind("\n", 0, line_start - 1) + 1
        before = text[max(line_start, m.start() - 240) : m.start()].replace("\n", " ")
        chain = m.group(0)
        assigned = list(_ASSIGNED.finditer(before))
        head = f"{assigned[-1].group('name')} = " if assigned else ""
        for a, b in _pieces_joined(chain, _JOIN_CALL.search(before) is not None):
            run = chain[a:b]
            parts = _QUOTED_PIECE.findall(run)
            joined = "".join(parts)
            if len(joined) < 16 or not any(c.isdigit() for c in joined):
                continue  # as for two pieces: no secret a rule finds is this short or has no digit
            redacted, n = redact(f'{head}"{joined}"')
            if not n or not redacted.startswith(head):
                continue
            body = redacted[len(head) :].strip('"')  # (no piece holds a quote)
            if not _crosses(joined, body, parts):
                continue
            out.append(text[last : m.start() + a])
            out.append(f"{run[0]}{body}{run[0]}")
            last = m.start() + b
            total += n
    if not out:
        return text, 0
    out.append(text[last:])
    return "".join(out), total


def _crosses(joined: str, redacted: str, parts: list[str]) -> bool:
    """Whether what redaction replaced in ``joined`` (to make ``redacted``) crosses a boundary
    between two of its ``parts``."""
    first, end = replaced_span(joined, redacted)
    at = 0
    for part in parts[:-1]:
        at += len(part)
        if first < at < end:
            return True
    return False
