"""Secrets whose name and value a format keeps apart (issue 36, point 3): the last stage of
:func:`judge.safety.redact.redact`, after :data:`judge.safety.config_secrets.CONFIG`.

The high-entropy and password rules read a value beside the name that says it is a secret
(``token: v``, ``password = "v"``). Many formats, none of them a service's, put the name
somewhere else: a table names its columns once in a header (CSV, TSV, the column list of an
SQL insert statement before its rows of values); a list of objects names each value in a field
beside it (``{"name": "session", "value": "v"}`` in a HAR file, ``- name: DB_PASSWORD`` then
``value: v`` in a Kubernetes manifest, ``Key=...,Value=...`` tags); a cookie jar keeps the name
in its sixth column; a signing call takes its key as an argument (``createHmac('sha256',
'v')``, ``hmac.New(sha256.New, []byte("v"))``, ``jwt.encode(claims, "v")``); and a wrapper can
stand between a name and its value (``b'v'``, ``['v']``, a YAML anchor). Each pattern here
pairs the name with its value again, then asks the one question every keyed rule asks
(:func:`secret_under`): does a value of this shape, under this name, read as a secret?
"""

from __future__ import annotations

import csv
import re

from judge.safety.config_secrets import value_is_secret
from judge.safety.lookalikes import is_lookalike
from judge.safety.secret_patterns import SecretPattern, marker
from judge.safety.secret_shapes import (
    SECRET_HEADS,
    SECRET_WORDS,
    is_random,
    name_starts,
    not_secret_name,
    secret_heads_at,
    secret_name,
)

_PASSWORD_NAME = re.compile(r"(?i:pass(?:word|wd|phrase)?|pwd|pw)\Z")
#: A table's column name: a name of up to four words, not a sentence or a number.
_COLUMN = re.compile(r"[A-Za-z_][\w.-]{0,40}(?: [\w.-]{1,40}){0,3}")


def secret_under(name: str, value: str) -> bool:
    """Whether ``value`` under the name ``name`` reads as a secret: one token (no blank), and
    either a password word ends the name and the value is not code
    (:func:`judge.safety.config_secrets.value_is_secret`), or a secret word is a word of the
    name (not one that says the value is none, ``token_type``) and the value reads as
    generated (:func:`judge.safety.secret_shapes.is_random`)."""
    name = name.strip().strip("\"'`[]")
    if not name or not value or any(c.isspace() for c in value) or not_secret_name(name):
        return False
    if _PASSWORD_NAME.search(name):
        return value_is_secret(value, code=False)
    return secret_name(name) and is_random(value, name)


def _replace_values(text: str, values: list[tuple[int, int, str]]) -> str:
    """``text`` with each ``(start, end, name)`` span replaced when its value is a secret
    under that name and no look-alike."""
    out: list[str] = []
    last = 0
    for start, end, name in sorted(values):
        value = text[start:end]
        if start < last or not secret_under(name, value):
            continue
        if is_lookalike(value, text, start):
            continue
        out.append(text[last:start])
        out.append(marker("paired-secret"))
        last = end
    if not out:
        return text
    out.append(text[last:])
    return "".join(out)


# -- tables: a header names the columns ------------------------------------------------------

#: (Possessive: a field's blanks belong to one quantifier only, so a line that is no header
#: fails at once instead of trying every split of its blanks between fields.)
_FIELD = r" *+\"?+[\w .-]{1,60}+\"?+ *+"
#: A header line of 2 to 40 names split by commas, tabs, semicolons or bars (a line of nothing
#: else; one of them with a secret word, checked by :func:`_table`), then the lines under it
#: that hold the separator (each checked for the header's number of fields).
_TABLE = re.compile(
    r"(?m)^(?=[\w .,\t;|\"-]{1,2400}+\r?\n)"
    r"(?P<head>" + _FIELD + r"(?P<sep>[,\t;|])" + _FIELD + r"(?:(?P=sep)" + _FIELD + r"){0,38}+)"
    r"(?P<rows>(?:\r?\n(?=[^\n]{0,4000}?(?P=sep))[^\n]{1,4000}){1,500})"
)


def _header_starts(text: str) -> list[int] | None:
    """Where :data:`_TABLE` can match in an ASCII text: the start of each line that holds one
    of :data:`judge.safety.secret_shapes.SECRET_HEADS` (None for other texts: every line)."""
    found = secret_heads_at(text)
    if found is None:
        return None
    return sorted({text.rfind("\n", 0, at) + 1 for at in found})


def _table(m: re.Match[str]) -> str:
    """The rows under a header with a secret column, that column's values redacted; the table
    ends at the first line without the header's number of fields."""
    sep = m.group("sep")
    names = [n.strip().strip('"') for n in m.group("head").split(sep)]
    if not all(_COLUMN.fullmatch(n) for n in names):
        return m.group(0)
    secret_columns = {i for i, n in enumerate(names) if secret_name(n)}
    if not secret_columns:
        return m.group(0)
    lines = m.group("rows").split("\n")  # [0] is empty: the rows start with a line break
    for k in range(1, len(lines)):
        body = lines[k].rstrip("\r")
        fields = next(csv.reader([body], delimiter=sep), [])
        if len(fields) != len(names):
            break
        spans: list[tuple[int, int, str]] = []
        at = 0
        for i, field in enumerate(fields):
            value = field.strip()
            where = body.find(value, at) if value else -1
            if where < 0:
                continue
            at = where + len(value)
            if i in secret_columns:
                spans.append((where, where + len(value), names[i]))
        lines[k] = _replace_values(body, spans) + lines[k][len(body) :]
    return m.group("head") + "\n".join(lines)


# -- SQL: INSERT INTO t (columns) VALUES (row), (row) -----------------------------------------

_INSERT = re.compile(
    r"(?i)(?P<keep>\binsert[ \t]+into[ \t]+[\w.\"`\[\]]{1,100}[ \t]*\((?P<cols>[^()\n]{1,2000})\)"
    r"\s{0,20}values\s{0,20})(?P<rows>\([^;\n]{1,20000})"
)
_SQL_TOKEN = re.compile(r"'(?:[^'\\]|\\.|'')*'|\"(?:[^\"\\]|\\.)*\"|[(),]|[^'\"(),]+")


def _insert(m: re.Match[str]) -> str:
    """Each row's values under a secret column redacted (values are split at top-level
    commas; a quoted value may hold commas and parentheses)."""
    names = [c.strip().strip('`"[]') for c in m.group("cols").split(",")]
    if not any(secret_name(n) for n in names):
        return m.group(0)
    rows = m.group("rows")
    spans: list[tuple[int, int, str]] = []
    depth = column = 0
    for token in _SQL_TOKEN.finditer(rows):
        t = token.group(0)
        if t == "(":
            depth += 1
            column = 0
        elif t == ")":
            depth -= 1
        elif t == "," and depth == 1:
            column += 1
        elif depth == 1 and t.strip() and column < len(names):
            start = token.start() + (len(t) - len(t.lstrip()))
            end = token.end() - (len(t) - len(t.rstrip()))
            if rows[start] in "'\"" and end - start >= 2:
                start, end = start + 1, end - 1
            spans.append((start, end, names[column]))
    return m.group("keep") + _replace_values(rows, spans)


# -- lists of objects: a name field beside a value field -------------------------------------

#: ``{"name": "session", "value": "v"}`` (HAR cookies and headers, Docker and ECS environment
#: lists), ``Key=...,Value=...`` tags; the name first, the value in the next field.
_NAME_VALUE = re.compile(
    r"(?P<keep>[\"']?(?:name|key|Name|Key|NAME|KEY)[\"']?[ \t]{0,3}[:=][ \t]{0,3}(?P<nq>[\"']?)"
    r"(?P<name>[\w.:-]{1,100})(?P=nq)[ \t]{0,3}[,;][ \t]{0,3}"
    r"[\"']?(?:value|Value|VALUE)[\"']?[ \t]{0,3}[:=][ \t]{0,3}(?P<q>[\"']?))"
    r"(?P<secret>[^\s\"',;}]{1,4000})(?P<after>(?P=q))"
)
#: ``- name: DB_PASSWORD`` then ``value: v`` on the next line (a Kubernetes container's env).
_NAME_VALUE_LINES = re.compile(
    r"(?m)(?P<keep>^[ \t]{0,40}(?:-[ \t]{1,4})?name:[ \t]{0,3}(?P<nq>[\"']?)"
    r"(?P<name>[\w.:-]{1,100})(?P=nq)[ \t]*\r?\n[ \t]{0,44}value:[ \t]{0,3}(?P<q>[\"']?))"
    r"(?P<secret>[^\s\"']{1,4000})(?P<after>(?P=q))[ \t]*$"
)


def _named_value(m: re.Match[str]) -> str:
    """The value (group ``secret``) redacted when it is a secret under its name (``name``)."""
    if not secret_under(m.group("name"), m.group("secret")):
        return m.group(0)
    return f"{m.group('keep')}{marker('paired-secret')}{m.group('after')}"


# -- a cookie jar: the name in the sixth column, the value in the seventh --------------------

_COOKIE_JAR = re.compile(
    r"(?m)^(?P<keep>(?:#HttpOnly_)?[^\s#][^\t\n]{0,252}\t(?:TRUE|FALSE)\t[^\t\n]{1,1000}\t"
    r"(?:TRUE|FALSE)\t\d{1,12}\t(?P<name>[^\t\n]{1,200})\t)(?P<secret>[^\t\r\n]{1,4000})"
)


def _cookie(m: re.Match[str]) -> str:
    """A cookie jar holds sessions: a value that reads as generated is a credential whatever
    the cookie is called (``_ga``'s dotted numbers do not)."""
    if not is_random(m.group("secret"), f"{m.group('name')} secret"):
        return m.group(0)
    return f"{m.group('keep')}{marker('paired-secret')}"


# -- a key passed to a signing or key-derivation call ----------------------------------------

_KEY_CALL = re.compile(
    r"(?P<keep>(?i:(?:create)?hmac(?:\.\w{1,20}){0,2}|jwt\.(?:encode|sign)|fernet)[ \t]{0,3}\()"
    r"(?P<args>[^\n]{1,400}?)(?=\))"
)
_LITERAL = re.compile(r"(?<![\w])(?:[bB]|\[\]byte\()?(?P<q>[\"'`])(?P<v>[^\"'`\s]{16,400})(?P=q)")


def _key_call(m: re.Match[str]) -> str:
    """The generated literals among a signing call's arguments (``createHmac('sha256', 'v')``,
    ``hmac.New(sha256.New, []byte("v"))``, ``jwt.encode(claims, "v")``): whatever stands
    there is the key, hex included."""
    args = m.group("args")
    spans = [(a.start("v"), a.end("v"), "hmac key") for a in _LITERAL.finditer(args)]
    new = _replace_values(args, spans)
    return m.group(0) if new == args else m.group("keep") + new


# -- a value under a secret name, behind a wrapper --------------------------------------------

#: ``token: &anchor v`` (YAML), ``'dsn_secret': b'v'`` (a Python repr), ``secret: ['v']``, ``key
#: := []byte("v")``: the high-entropy rule's name and separator, then the wrapper it does not
#: read, then the value.
_WRAPPED = re.compile(
    rf"(?P<keep>(?P<name>(?<![\w.-])(?i:[\w.-]{{0,120}}?(?:{SECRET_WORDS})[\w.-]{{0,20}}))"
    r"[\"'`]?[ \t]{0,3}(?:[:=]|=>|:=)[ \t]{0,3}"
    r"(?:\[[ \t]{0,3}|&[\w-]{1,40}[ \t]{1,3}|\[\]byte\([ \t]{0,3}|[bB](?=[\"']))(?P<q>[\"'`]?))"
    r"(?P<secret>[A-Za-z0-9+/=_\-.~!@#%^&*]{16,512})(?P<after>(?P=q))"
    r"(?![A-Za-z0-9+/=_\-.~!@#%^&*])"
)


#: The patterns of this stage, in order.
PAIRED: tuple[SecretPattern, ...] = (
    SecretPattern("paired-secret", _TABLE, _table, SECRET_HEADS, _header_starts),
    SecretPattern("paired-secret", _INSERT, _insert, ("insert",)),
    SecretPattern("paired-secret", _NAME_VALUE, _named_value, ("value",)),
    SecretPattern("paired-secret", _NAME_VALUE_LINES, _named_value, ("value:",)),
    SecretPattern("paired-secret", _COOKIE_JAR, _cookie, ("\ttrue\t", "\tfalse\t")),
    SecretPattern("paired-secret", _KEY_CALL, _key_call, ("hmac", "jwt.", "fernet")),
    SecretPattern("paired-secret", _WRAPPED, _named_value, SECRET_HEADS, name_starts),
)
