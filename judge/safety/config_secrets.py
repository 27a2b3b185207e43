"""Passwords by where they stand in configuration formats, and two bare token shapes (issue 36).

The older rules find a password under a key when it looks generated (entropy, digits among
letters) or when the key is an upper-case environment name. A person's password is neither:
``password: Maplecopper2024!`` in YAML, ``DB_PASS=...`` in ``.env``, ``<password>`` in Maven's
settings, ``Pwd=`` in ADO.NET, ``setPassword("...")`` in Java, a Go DSN, a ``.pgpass`` line.
These rules read the structure instead: a key whose name *ends* in a password word (so
``password_hash``, ``PASSWORD_MIN_LENGTH`` are not keys of this kind), then any value that is
not code or a placeholder (a reference to a variable, a call, ``${VAR}``, ``null``: see
:func:`value_is_secret`; dummies and examples are kept by :mod:`judge.safety.lookalikes`).

The same reading of structure finds values under any secret word, whatever the service, where
the older rules do not look: a literal default of an environment read under a secret name
(``password: <%= ENV.fetch('X', 'v') %>``, ``os.getenv("API_TOKEN", "v")``), a
``key="ApiKey" value="v"`` pair of XML settings, ``--auth v`` and ``--credentials v`` flags,
and a generated literal passed by position to a client (``cohere.Client("v")``,
``SearchClient.create('app', 'v')``, ``client.run('v')``): an SDK's client takes its key so;
the path of a webhook URL that holds a generated part, whatever the service.

They run last (:data:`CONFIG`, after :data:`judge.safety.secret_shapes.SHAPES`), so what the
older rules found and named is unchanged.
"""

from __future__ import annotations

import re

from judge.safety.lookalikes import is_lookalike
from judge.safety.secret_patterns import Replacer, SecretPattern, lowered_starts, marker

#: "Password" as a key is written in other languages (ASCII spellings and native scripts; ``_``
#: stands for an optional ``_``, ``-``, ``.`` or blank): a person's password under ``passwort:``,
#: ``hasło=`` or ``密码:`` stands where one under ``password:`` does, and is found the same way.
_OTHER_LANGUAGES = (
    "passwort", "kennwort", "mot_de_passe", "contrasena", "contraseña", "senha", "wachtwoord",
    "wagwoord", "parool", "haslo", "hasło", "salasana", "kata_sandi", "sifre", "şifre", "parola",
    "parole", "lozinka", "heslo", "jelszo", "jelszó", "losenord", "lösenord", "passord",
    "adgangskode", "geslo", "slaptazodis", "slaptažodis", "mat_khau", "mật_khẩu", "пароль",
    "密码", "密碼", "パスワード", "비밀번호", "κωδικός", "סיסמה", "كلمة_المرور", "पासवर्ड", "รหัสผ่าน",
)  # fmt: skip
_LONGEST_FIRST = sorted(_OTHER_LANGUAGES, key=len, reverse=True)
#: The English password words; a key in another language is the group ``other``.
_ENGLISH = r"(?i:pass(?:word|wd|phrase)?|pwd)"
_WORD = (
    r"(?:"
    + _ENGLISH
    + r"|(?P<other>(?i:"
    + "|".join(re.escape(w).replace("_", "[_ .-]?") for w in _LONGEST_FIRST)
    + r")))"
)
#: Words of the list that are ordinary words too (Italian "parola", "word"; French "parole",
#: "speech"; Greek "κωδικός", "code"): under them an unquoted value after ``:`` must end its
#: line (``parola: x`` in a file), not run on as a sentence does.
_PROSE_WORDS = frozenset(("parola", "parole", "κωδικός"))
#: Lower-case texts one of which occurs where a password key can (the scan's needles):
#: ``pass``, ``pwd`` and the last word of each other language's spelling.
_NEEDLES = tuple(dict.fromkeys(("pass", "pwd", *(w.split("_")[-1] for w in _OTHER_LANGUAGES))))
#: The ASCII spellings of more than one word, as their first and last words and the longest
#: text from the one's start to the other's (each separator present).
_SPLIT_WORDS = tuple(
    (w.split("_")[0], w.split("_")[-1], len(w))
    for w in _OTHER_LANGUAGES
    if "_" in w and w.isascii()
)
_VALUE = r"(?P<secret>\"[^\"\n]{1,200}\"|'[^'\n]{1,200}'|[^\s\"'`<>,;(){}\[\]]{1,200})"
_IDENTIFIER = re.compile(r"[A-Za-z_][\w.]*")
_CODE_START = tuple("$%{<@&*!|>=")


def value_is_secret(value: str, code: bool = True) -> bool:
    """Whether a value found under a password key can be one: not a reference to code or a
    template, not a literal of the language, not too short; quoted values hold no space.
    ``code=False``: the value stands where no code can (a ``.pgpass`` field, an XML element, a
    DSN), so a bare name (``LwiPntv3UmlVBhwGls``) is a value, not a variable."""
    quoted = value[:1] in "\"'" and value[-1:] == value[:1] and len(value) >= 2
    inner = value[1:-1] if quoted else value
    if len(inner) < 4 or inner.startswith(_CODE_START):
        return False
    if inner.lower() in {"true", "false", "null", "none", "nil", "undefined", "required"}:
        return False
    if quoted:
        return not any(c.isspace() for c in inner) and "{" not in inner
    # Unquoted: a name (``password = password``, ``settings.DB_PASSWORD``) is code.
    return (not code or _IDENTIFIER.fullmatch(inner) is None) and not inner.isdigit()


#: The words that name a secret key, as a regular expression (case-insensitive).
_SECRET_WORD = (
    r"(?i:pass(?:word|wd|phrase)?|pwd|secret|token|api[_-]?key|auth|credentials?|"
    r"private[_-]?key|access[_-]?key)"
)
#: A name that ends in a secret word (``DB_PASSWORD``, ``apiToken``, ``X-Api-Key``).
_SECRET_END = re.compile(rf"(?:{_SECRET_WORD}|(?i:secret[_-]?key))\Z")
#: What stands before an environment read that is the value of a secret key, on its line
#: (``password: <%= ``, ``"token": `` , ``api_key = os.``).
_KEY_BEFORE = re.compile(
    _SECRET_WORD + r"[\"']?[ \t]{0,5}(?:=>|[:=])[ \t]{0,5}"
    r"(?:<%=[ \t]{0,3}|\{\{[ \t]{0,3}|\$\{[ \t]{0,3})?[\w.]{0,40}\Z"
)
_QUOTED = re.compile(r"(?<![\w=])[ \t]{0,3}(?P<q>[\"'])(?P<v>[^\"'\n]{1,400})(?P=q)")
_GENERATED = re.compile(r"[A-Za-z0-9_.+=~-]{20,400}")
_RUN = re.compile(r"[A-Za-z0-9]{16,}")
#: Ids of a known shape: a UUID, a two-letter type and 32 hex digits (a Twilio account SID),
#: a SHA-1 or SHA-256 digest.
_ID_SHAPE = re.compile(
    r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
    r"|[A-Z]{2}[0-9a-f]{32}|[0-9a-f]{40}|[0-9a-f]{64}"
)


def generated(value: str) -> bool:
    """Whether ``value`` reads as a generated token: 20+ token characters with a run of 16+
    letters and digits holding both (``gpt-4o-mini-2024-07-18``, a model name, has none), and
    no id of a known shape."""
    if _GENERATED.fullmatch(value) is None or _ID_SHAPE.fullmatch(value) is not None:
        return False
    return any(
        any(c.isdigit() for c in run) and any(c.isalpha() for c in run)
        for run in _RUN.findall(value)
    )


def _env_default(m: re.Match[str]) -> str:
    """The literal default of an environment read, when the variable's name or the key the
    read is assigned to ends in a secret word."""
    secret = m.group("secret")
    line_start = m.string.rfind("\n", 0, m.start()) + 1
    before = m.string[max(line_start, m.start() - 120) : m.start()]
    var = m.groupdict().get("var") or m.groupdict().get("var2") or ""
    if not (_SECRET_END.search(var) or _KEY_BEFORE.search(before)):
        return m.group(0)
    if not value_is_secret(secret):
        return m.group(0)
    q = secret[0]
    return f"{m.group('keep')}{q}{marker('config-secret')}{q}"


def _client_arguments(m: re.Match[str]) -> str:
    """A client call with its generated literals passed by position redacted (a keyword
    argument, ``model="..."``, is left to the keyed rules)."""
    args = m.group("args")
    text = m.string
    offset = m.start("args")

    def replace(a: re.Match[str]) -> str:
        value = a.group("v")
        if not generated(value) or is_lookalike(value, text, offset + a.start("v")):
            return a.group(0)
        return a.group(0).replace(value, marker("client-secret"))

    new = _QUOTED.sub(replace, args)
    if new == args:
        return m.group(0)
    return f"{m.group('keep')}{new})"


_PATH_PARTS = re.compile(r"[/@?&=#]")


def _webhook(m: re.Match[str]) -> str:
    """A webhook URL's path, when a part of it reads as generated: whoever holds the URL can
    post as the integration (Teams, Discord, Zapier, any service's hook)."""
    path = m.group("secret")
    at = 0
    for part in _PATH_PARTS.split(path):
        if generated(part):
            # From the first generated part on (ids before it, a tenant's UUID, are kept).
            return f"{m.group('keep')}{path[:at]}{marker('webhook-url')}"
        at += len(part) + 1
    return m.group(0)


def _token_flag(m: re.Match[str]) -> str:
    """``--auth v``: the value when it is no word or path (``--auth basic``, ``--auth none``
    and ``--credentials ~/.aws/credentials`` are options, not secrets)."""
    secret = m.group("secret")
    inner = secret.strip("\"'")
    if len(inner) < 8 or inner.startswith(_CODE_START) or "/" in inner or inner[:1] in "~-":
        return m.group(0)
    if not any(c.isdigit() for c in inner) and len(inner) < 20:
        return m.group(0)
    q = secret[0] if secret[:1] in "\"'" else ""
    return f"{m.group('keep')}{q}{marker('cli-secret')}{q}"


def _word_starts(text: str) -> list[int] | None:
    """Where a rule that starts at the password word can match, in an ASCII text: each
    needle (``pass``, ``pwd``, ``kennwort``...) of the lower-case text (None for other texts: every
    position is tried). ``str.find`` is far faster than the regex's case-insensitive start at every
    position (see :func:`judge.safety.secret_shapes.name_starts`, the same idea)."""
    if not text.isascii():
        return None
    lowered = text.lower()
    found: list[int] = []
    for word in _NEEDLES:
        at = lowered.find(word)
        while at >= 0:
            found.append(at)
            at = lowered.find(word, at + 1)
    # ``mot de passe``, ``kata_sandi``: from the first word before each last word found.
    for first, last, longest in _SPLIT_WORDS:
        at = lowered.find(last)
        while at >= 0:
            start = lowered.rfind(first, max(0, at + len(last) - longest), at)
            if start >= 0:
                found.append(start)
            at = lowered.find(last, at + 1)
    return sorted(set(found))


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


#: What may stand before a key on its line: nothing but blanks, a list marker, ``export``,
#: ``set`` or a comment's mark; or a text that ends in an opener or a separator of pairs.
_LINE_START = re.compile(r"[ \t]*(?:(?:[-*#]|//|;|export|set)[ \t]+)?\Z")
_PAIR_BEFORE = re.compile(r"(?:[{,;&?(\[|]|--)[ \t]*\Z")
#: The part of a key before the password word (``db_``, ``conexion.``, ``user``).
_KEY_PREFIX = re.compile(r"[\w.-]*\Z")


def _unspaced(c: str) -> bool:
    """Whether ``c`` is of a script written without blanks between words (Chinese, Japanese,
    Korean, Thai): a key there runs on from the word before (``数据库密码``)."""
    return ord(c) >= 0x2E80 or 0x0E00 <= ord(c) < 0x0E80


def _other_language_key(m: re.Match[str]) -> bool:
    """Whether a password word of another language stands as a key, not as a word of prose
    (``la parola: "ciao"``, ``resenha: ótimo``): it starts the key or follows ``_``, ``.``,
    ``-`` or a lower-case letter (``dbSenha``), and the key starts its line, follows a quote, an
    opener or a separator of pairs, or is glued to ``=`` (``user=jan hasło=x``, a log's pairs).
    Under a word that is an ordinary word too (:data:`_PROSE_WORDS`), an unquoted value after
    ``:`` must end its line."""
    word_at = m.start("other")
    text = m.string
    line_start = text.rfind("\n", 0, word_at) + 1
    before = text[max(line_start, word_at - 200) : word_at]
    prefix = _KEY_PREFIX.search(before)
    key_prefix = prefix.group(0) if prefix else ""
    if key_prefix:
        last = key_prefix[-1]
        camel = (last.islower() or last.isdigit()) and m.group("other")[:1].isupper()
        if not (last in "_.-" or camel or _unspaced(last)):
            return False
    after_word = text[m.end("other") : m.start("secret")]
    if "(" in after_word:
        # A call (``setSenha("x")``): the name glued to its parenthesis.
        return re.match(r"\w{0,10}\(", after_word) is not None
    rest = before[: len(before) - len(key_prefix)]
    glued = after_word[:1] == "=" and rest[-1:] in (" ", "\t")
    if not (
        rest[-1:] in ('"', "'") or glued or _LINE_START.match(rest) or _PAIR_BEFORE.search(rest)
    ):
        return False
    secret = m.group("secret")
    if m.group("other").lower() in _PROSE_WORDS and ":" in after_word and secret[:1] not in "\"'":
        line_end = text.find("\n", m.end("secret"))
        tail = text[m.end("secret") : len(text) if line_end < 0 else line_end].strip()
        return not tail or tail[0] in ",;}]#"
    return True


def _keyed(name: str, code: bool = True) -> Replacer:
    """Keep ``keep`` (and ``after``), replace ``secret`` unless :func:`value_is_secret` says no
    (``code``: whether code can stand there) or a word of another language is not a key
    (:func:`_other_language_key`)."""
    text = marker(name)

    def replace(m: re.Match[str]) -> str:
        secret = m.group("secret")
        if not value_is_secret(secret, code) or _bare_pass(m):
            return m.group(0)
        # (Checked where the match starts at the word: an XML element's name and a PHP
        # ``define`` are keys by their syntax.)
        other = m.groupdict().get("other")
        if other is not None and m.start("other") == m.start() and not _other_language_key(m):
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
        _NEEDLES,
        _word_starts,
    ),
    # ``<password>x</password>`` (Maven, .NET, Spring XML).
    SecretPattern(
        "config-password",
        re.compile(
            r"(?P<keep><(?P<tag>[\w:.-]{0,40}" + _WORD + r")>)"
            r"(?P<secret>[^<>\s]{1,200})(?P<after></(?P=tag)>)"
        ),
        _keyed("config-password", code=False),
        _NEEDLES,
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
        _NEEDLES,
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
        _keyed("config-password", code=False),
        ("@tcp(", "@unix(", "@udp("),
    ),
    # A ``.pgpass`` line: ``host:port:database:user:password``.
    SecretPattern(
        "config-password",
        re.compile(
            r"(?m)^(?P<keep>[\w.*-]{1,253}:(?:\d{1,5}|\*):[\w*.-]{1,63}:[\w*.-]{1,63}:)"
            r"(?P<secret>[^\s:]{1,200})$"
        ),
        _keyed("config-password", code=False),
        (":5432:", ":*:", ".pgpass"),
    ),
    # The literal default of an environment read: ``os.getenv("API_TOKEN", "v")``,
    # ``ENV.fetch('X', 'v')`` under ``password:``, ``env('DB_PASSWORD', 'v')`` (Laravel).
    SecretPattern(
        "config-secret",
        re.compile(
            r"(?P<keep>(?:\b(?:getenv|env)|\b(?:environ|ENV)\.(?:get|fetch))\([ \t]{0,3}"
            r"[\"'](?P<var>[\w.-]{1,100})[\"'][ \t]{0,3},[ \t]{0,3})"
            r"(?P<secret>\"[^\"\n]{1,200}\"|'[^'\n]{1,200}')"
        ),
        _env_default,
        ("env(", "environ.get(", "env.fetch("),
    ),
    # ``process.env.X || 'v'``, ``ENV['X'] || 'v'``, ``process.env.X ?? 'v'``.
    SecretPattern(
        "config-secret",
        re.compile(
            r"(?P<keep>(?:process\.env\.(?P<var>\w{1,100})|(?:process\.env|ENV)\[[\"']"
            r"(?P<var2>[\w.-]{1,100})[\"']\])[ \t]{0,3}(?:\|\||\?\?|\bor\b)[ \t]{0,3})"
            r"(?P<secret>\"[^\"\n]{1,200}\"|'[^'\n]{1,200}')"
        ),
        _env_default,
        ("process.env", "env["),
    ),
    # ``<add key="ApiKey" value="v" />``, ``<property name="password" value="v"/>``.
    SecretPattern(
        "config-secret",
        re.compile(
            r"(?P<keep>\b(?:key|name)=(?P<q>[\"'])[\w.:-]{0,60}?"
            + _SECRET_WORD
            + r"(?P=q)[ \t]{1,20}value=)"
            r"(?P<secret>\"[^\"<>\n]{1,400}\"|'[^'<>\n]{1,400}')"
        ),
        _keyed("config-secret"),
        ("value=",),
        lowered_starts(("key=", "name=")),
    ),
    # ``--auth v``, ``--credentials v``, ``--access-key v`` (``--token`` and ``--password``
    # are the older cli-password rule's).
    SecretPattern(
        "cli-secret",
        re.compile(
            r"(?P<keep>--(?:[a-z0-9]{1,20}-){0,3}(?:auth|credentials?|access-key|secret-key)"
            r"(?:=|[ \t]{1,5}))"
            r"(?P<secret>\"[^\"\n]{1,200}\"|'[^'\n]{1,200}'|[^\s\"'`<>;|&]{1,200})"
        ),
        _token_flag,
        ("--",),
        lowered_starts(("--",)),
    ),
    # A generated literal passed by position to a client: ``cohere.Client("v")``,
    # ``Client('AC...', 'v')``, ``SearchClient.create('app', 'v')``, ``client.run('v')``,
    # ``api.login('v')`` (from the word on; what is before it is kept as it is).
    SecretPattern(
        "client-secret",
        re.compile(
            r"(?P<keep>(?i:client|login|authenticate|auth)\w{0,20}(?:\.\w{1,30}){0,2}\()"
            r"(?P<args>[^()\n]{1,600})\)"
        ),
        _client_arguments,
        ("client", "login", "auth"),
        lowered_starts(("client", "login", "auth")),
    ),
    # A webhook URL of any service: ``https://x.webhook.office.com/webhookb2/...``,
    # ``https://discord.com/api/webhooks/<id>/<token>`` (the host is kept).
    SecretPattern(
        "webhook-url",
        re.compile(
            r"(?P<keep>\bhttps?://[A-Za-z0-9.-]{1,253}/)"
            r"(?P<secret>[^\s\"'<>`]{0,80}?(?i:hook)[^\s\"'<>`]{1,1000})"
        ),
        _webhook,
        ("hook",),
    ),
    # Telegram bot tokens (``<bot id>:AA<33>``), bare or in a URL path.
    SecretPattern(
        "telegram-bot-token",
        re.compile(r"(?P<keep>)(?<![0-9])(?P<secret>\d{8,10}:AA[\w-]{33})(?![\w-])"),
        _keyed("telegram-bot-token"),
        (":aa",),
    ),
)
