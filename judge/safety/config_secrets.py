"""Passwords by where they stand in configuration formats, and two bare token shapes (issue 36).

The older rules find a password under a key when it looks generated (entropy, digits among
letters) or when the key is an upper-case environment name. A person's password is neither:
``password: Maplecopper2024!`` in YAML, ``DB_PASS=...`` in ``.env``, ``<password>`` in Maven's
settings, ``Pwd=`` in ADO.NET, ``setPassword("...")`` in Java, a Go DSN, a ``.pgpass`` line.
These rules read the structure instead: a key whose name *ends* in a password word (so
``password_hash``, ``PASSWORD_MIN_LENGTH`` are not keys of this kind), then any value that is
not code or a placeholder (a reference to a variable, a call, ``${VAR}``, ``null``: see
:func:`value_is_secret`; dummies and examples are kept by :mod:`judge.safety.lookalikes`).

They run last (:data:`CONFIG`, after :data:`judge.safety.secret_shapes.SHAPES`), so what the
older rules found and named is unchanged.
"""

from __future__ import annotations

import re

from judge.safety.secret_patterns import Replacer, SecretPattern, marker

_WORD = r"(?i:pass(?:word|wd|phrase)?|pwd)"
_VALUE = r"(?P<secret>\"[^\"\n]{1,200}\"|'[^'\n]{1,200}'|[^\s\"'`<>,;(){}\[\]]{1,200})"
_IDENTIFIER = re.compile(r"[A-Za-z_][\w.]*")
_CODE_START = tuple("$%{<@&*!|>=")


def value_is_secret(value: str) -> bool:
    """Whether a value found under a password key can be one: not a reference to code or a
    template, not a literal of the language, not too short; quoted values hold no space."""
    quoted = value[:1] in "\"'" and value[-1:] == value[:1] and len(value) >= 2
    inner = value[1:-1] if quoted else value
    if len(inner) < 4 or inner.startswith(_CODE_START):
        return False
    if inner.lower() in {"true", "false", "null", "none", "nil", "undefined", "required"}:
        return False
    if quoted:
        return not any(c.isspace() for c in inner) and "{" not in inner
    # Unquoted: a name (``password = password``, ``settings.DB_PASSWORD``) is code.
    return _IDENTIFIER.fullmatch(inner) is None and not inner.isdigit()


def _word_starts(text: str) -> list[int] | None:
    """Where a rule that starts at the password word can match, in an ASCII text: each
    ``pass`` and ``pwd`` of the lower-case text (None for other texts: every position is
    tried). ``str.find`` is far faster than the regex's case-insensitive start at every
    position (see :func:`judge.safety.secret_shapes._name_starts`, the same idea)."""
    if not text.isascii():
        return None
    lowered = text.lower()
    found: list[int] = []
    for word in ("pass", "pwd"):
        at = lowered.find(word)
        while at >= 0:
            found.append(at)
            at = lowered.find(word, at + 1)
    return sorted(found)


def _tag_starts(text: str) -> list[int] | None:
    """Where the XML element rule can match: the last ``<`` at most 40 name characters before
    each password word (None outside ASCII)."""
    words = _word_starts(text)
    if words is None:
        return None
    starts = {text.rfind("<", max(0, at - 41), at) for at in words}
    starts.discard(-1)
    return sorted(starts)


def _bare_pass(m: re.Match[str]) -> bool:
    """Whether the key is the word ``pass`` alone (``PASS: test_x``, a test report's status,
    not a key): ``DB_PASS=`` and ``db.pass=`` are keys, ``PASS:`` is not."""
    keep = m.group("keep")
    if keep[:4].lower() != "pass" or keep[4:5].isalpha():
        return False
    before = m.string[m.start() - 1 : m.start()] if m.start() else ""
    return not (before in ("_", "-", ".") or before.isalpha())


def _keyed(name: str) -> Replacer:
    """Keep ``keep`` (and ``after``), replace ``secret`` unless :func:`value_is_secret` says no."""
    text = marker(name)

    def replace(m: re.Match[str]) -> str:
        secret = m.group("secret")
        if not value_is_secret(secret) or _bare_pass(m):
            return m.group(0)
        quote = secret[0] if secret[:1] in "\"'" and secret[-1:] == secret[:1] else ""
        return f"{m.group('keep')}{quote}{text}{quote}{m.groupdict().get('after') or ''}"

    return replace


CONFIG: tuple[SecretPattern, ...] = (
    # ``password: x`` (YAML), ``password = "x"`` (TOML, INI, Terraform, code), ``DB_PASS=x``
    # (.env), ``"password": "x"`` (JSON), ``password="x"`` (an XML attribute), ``'PASSWORD' =>``
    # (PHP), ``spring.datasource.password=x`` (properties), ``--password=x``, ``Pwd=x;``.
    SecretPattern(
        "config-password",
        re.compile(
            # The match starts at the password word (what is before it is kept as it is):
            # a prefix of the key in the regex would be tried at every position.
            r"(?P<keep>" + _WORD + r"[\"']?[ \t]{0,5}(?:=>|[:=])[ \t]{0,5})" + _VALUE
        ),
        _keyed("config-password"),
        ("pass", "pwd"),
        _word_starts,
    ),
    # ``<password>x</password>`` (Maven, .NET, Spring XML).
    SecretPattern(
        "config-password",
        re.compile(
            r"(?P<keep><(?P<tag>[\w:.-]{0,40}" + _WORD + r")>)"
            r"(?P<secret>[^<>\s]{1,200})(?P<after></(?P=tag)>)"
        ),
        _keyed("config-password"),
        ("pass", "pwd"),
        _tag_starts,
    ),
    # ``setPassword("x")``, ``.password('x')`` (from the password word on, as above).
    SecretPattern(
        "config-password",
        re.compile(
            r"(?P<keep>" + _WORD + r"\w{0,10}[ \t]{0,3}\([ \t]{0,3})"
            r"(?P<secret>\"[^\"\n]{1,200}\"|'[^'\n]{1,200}')"
        ),
        _keyed("config-password"),
        ("pass", "pwd"),
        _word_starts,
    ),
    # ``define('DB_PASSWORD', 'x')`` (PHP).
    SecretPattern(
        "config-password",
        re.compile(
            r"(?P<keep>\bdefine\([ \t]{0,3}[\"']\w{0,40}"
            + _WORD
            + r"\w{0,20}[\"'][ \t]{0,3},[ \t]{0,3})"
            r"(?P<secret>\"[^\"\n]{1,200}\"|'[^'\n]{1,200}')"
        ),
        _keyed("config-password"),
        ("define(",),
    ),
    # A Go MySQL DSN: ``user:password@tcp(host)/db``.
    SecretPattern(
        "config-password",
        re.compile(
            r"(?P<keep>\b[\w.-]{1,64}:)(?P<secret>[^@\s/:\"'`]{1,128})"
            r"(?P<after>@(?:tcp|unix|udp)\()"
        ),
        _keyed("config-password"),
        ("@tcp(", "@unix(", "@udp("),
    ),
    # A ``.pgpass`` line: ``host:port:database:user:password``.
    SecretPattern(
        "config-password",
        re.compile(
            r"(?m)^(?P<keep>[\w.*-]{1,253}:(?:\d{1,5}|\*):[\w*.-]{1,63}:[\w*.-]{1,63}:)"
            r"(?P<secret>[^\s:]{1,200})$"
        ),
        _keyed("config-password"),
        (":5432:", ":*:", ".pgpass"),
    ),
    # Telegram bot tokens (``<bot id>:AA<33>``), bare or in a URL path.
    SecretPattern(
        "telegram-bot-token",
        re.compile(r"(?P<keep>)(?<![0-9])(?P<secret>\d{8,10}:AA[\w-]{33})(?![\w-])"),
        _keyed("telegram-bot-token"),
        (":aa",),
    ),
)
