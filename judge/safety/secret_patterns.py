"""The secret patterns of :func:`judge.safety.redact.redact`, as data: what a pattern is
(:class:`SecretPattern`: a named regex, how a match is rewritten, the literals it needs), the
marker a secret becomes, the values that sit where a secret could but are none (placeholders,
dummies of test code), and this package's own two tables of rules, each in the order it runs:
:data:`SPECIFIC` (provider tokens and key blocks, by their own shape) and :data:`STRUCTURAL`
(where a secret sits, whatever it looks like: headers, URLs, command lines, config files).
The secrets found by shape alone are :mod:`judge.safety.secret_shapes`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import NamedTuple

Replacer = Callable[[re.Match[str]], str]


class SecretPattern(NamedTuple):
    """One named secret pattern: its regex and how a match is rewritten."""

    name: str
    regex: re.Pattern[str]
    #: Returns the replacement for a match; returning the match unchanged means "not a secret"
    #: (e.g. a ``$VARIABLE`` placeholder) and is not counted.
    replace: Replacer
    #: Lower-case literal texts of which at least one must occur (case-insensitively) for a
    #: match to be possible; lets ``redact`` skip a whole scan. Empty means always scan.
    needles: tuple[str, ...] = ()
    #: Where a match can start, in increasing order (a superset of the starts of the regex's
    #: matches): the regex is then tried only there (``redact._apply``), with the same matches
    #: as a scan of every position. None (or a call that returns None): every position.
    starts: Callable[[str], list[int] | None] | None = None


def replaced_span(old: str, new: str) -> tuple[int, int]:
    """The span of ``old`` that a rule replaced to make ``new`` (what the two do not share at
    their ends)."""
    head = 0
    limit = min(len(old), len(new))
    while head < limit and old[head] == new[head]:
        head += 1
    tail = 0
    while tail < limit - head and old[-1 - tail] == new[-1 - tail]:
        tail += 1
    return head, len(old) - tail


def lowered_starts(words: tuple[str, ...], back: int = 0) -> Callable[[str], list[int] | None]:
    """Where a rule that starts at one of ``words`` (lower case), or ``back`` characters before
    one, can match in an ASCII text (None for other texts: every position is tried)."""

    def starts(text: str) -> list[int] | None:
        if not text.isascii():
            return None
        lowered = text.lower()
        found: set[int] = set()
        for word in words:
            at = lowered.find(word)
            while at >= 0:
                found.add(max(0, at - back))
                at = lowered.find(word, at + 1)
        return sorted(found)

    return starts


#: Every marker starts with this text.
MARKER_PREFIX = "[REDACTED:"


def marker(name: str) -> str:
    """The text that stands in for a secret found by pattern ``name``."""
    return f"[REDACTED:{name}]"


def whole(name: str) -> Replacer:
    """Replace the entire match."""
    text = marker(name)
    return lambda m: text


def keep_prefix(
    name: str, *, skip_placeholders: bool = False, skip_dummies: bool = False
) -> Replacer:
    """Keep group ``keep`` (a label such as ``password=``), replace group ``secret``.

    With ``skip_placeholders``, a placeholder (``$VAR``, ``None``) is kept; with
    ``skip_dummies`` also a dummy value (:func:`is_trivial`) or another flag (``-x``). The
    rules that existed before the dummy filter do not use it: they keep redacting exactly what
    they did, so that the evidence, and so the cache key, of a case they judged is unchanged.
    """
    text = marker(name)

    def replace(m: re.Match[str]) -> str:
        secret = m.group("secret")
        if skip_placeholders and is_placeholder(secret):
            return m.group(0)
        if skip_dummies and (is_trivial(secret) or secret.startswith("-")):
            return m.group(0)
        suffix = m.groupdict().get("after") or ""
        return f"{m.group('keep')}{text}{suffix}"

    return replace


def _stated(m: re.Match[str]) -> str:
    """A password stated in prose: the value redacted, a trailing full stop kept."""
    secret = m.group("secret")
    end = secret.rstrip(".!?)")
    if len(end) < 8 or is_placeholder(end):
        return m.group(0)
    return f"{m.group('keep')}{m.group('q')}{marker('stated-password')}{secret[len(end) :]}"


# Values that sit where a secret could, but are not one: shell/template variables, empty or
# null literals, references to code (``settings.TOKEN``), and earlier markers.
_PLACEHOLDER = re.compile(
    r"""\$\{?\w+\}?|\{\{[^}]*\}\}|<[^>]*>|\*+|x+|\.\.\.|"""
    r"""none|null|nil|true|false|changeme|your[-_a-z]*|"""
    r"""[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+|\[REDACTED:[a-z0-9-]+\]""",
    re.IGNORECASE,
)


def is_placeholder(value: str) -> bool:
    stripped = value.strip().strip("\"'")
    return not stripped or _PLACEHOLDER.fullmatch(stripped) is not None


# Dummy values of test code and documentation: a secret word, optionally with a qualifier and a
# short number (``password``, ``mypassword``, ``wrong-password``, ``secret123``, ``fake-key``,
# ``pass``, ``test``). Anyone can guess them, and a judge needs them to read a test: they are
# evidence, not secrets. A real password of this shape is no secret either.
_TRIVIAL = re.compile(
    r"(?:my|some|your|the|wrong|bad|fake|test|dummy|example|sample|new|old|other|default|"
    r"valid|invalid|correct|incorrect|super|top|not|no)?[-_ ]?"
    r"(?:pass(?:word|wd)?|pwd|pw|secret|key|token|test|example|dummy|fake|foo|bar|baz|qux|"
    r"admin|user|root|guest|demo|sample|changeit)"
    r"s?(?:[-_ ]?(?:key|token|value|here|\d{1,4}))?",
    re.IGNORECASE,
)


def is_trivial(value: str) -> bool:
    """A dummy value (see :data:`_TRIVIAL`), or one character repeated (``xxxxxxxx``)."""
    stripped = value.strip().strip("\"'")
    return _TRIVIAL.fullmatch(stripped) is not None or len(set(stripped)) == 1


# Characters that may continue a token: used as a right boundary so that a pattern never
# matches the first part of a longer token.
_TOK = r"A-Za-z0-9_\-"

#: Provider tokens and key blocks, recognised by their own shape.
SPECIFIC: tuple[SecretPattern, ...] = (
    # A whole PEM private key block. The body is bounded (real keys are < 10 kB) so an
    # unterminated BEGIN line cannot make the scan quadratic; a block whose END was cut off
    # (clipped traces) is caught by the next pattern, header plus base64 lines.
    SecretPattern(
        "private-key",
        re.compile(
            r"-----BEGIN (?P<kind>[A-Z0-9]{1,20}(?: [A-Z0-9]{1,20}){0,3} )?PRIVATE KEY"
            r"(?P<block> BLOCK)?-----"
            # One character at a time, never "-----": a BEGIN without an END stops at the next
            # armour line instead of scanning on, so many unterminated BEGINs stay linear.
            # (PGP armour adds "Version: GnuPG v2 (GNU/Linux)" headers.)
            r"(?:[A-Za-z0-9+/=\s:,.()\\]|-(?!----)){0,20000}?"
            r"-----END (?P=kind)?PRIVATE KEY(?P=block)?-----"
        ),
        whole("private-key"),
        ("-----begin",),
    ),
    SecretPattern(
        "private-key",
        re.compile(
            r"-----BEGIN (?:[A-Z0-9]{1,20} ){0,4}PRIVATE KEY(?: BLOCK)?-----"
            r"(?:[ \t]*(?:\r?\n|\\n)"
            r"(?:[A-Za-z\-]{1,30}:[^\n\\]{0,100}|[ \t]*[A-Za-z0-9+/=]{16,200})){0,400}"
        ),
        whole("private-key"),
        ("-----begin",),
    ),
    SecretPattern(
        "aws-access-key-id",
        re.compile(
            r"(?<![A-Za-z0-9])(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA|APKA)"
            r"[A-Z0-9]{16}(?![A-Za-z0-9])"
        ),
        whole("aws-access-key-id"),
        ("akia", "asia", "abia", "acca", "agpa", "aida", "aroa", "aipa", "anpa", "anva", "apka"),
    ),
    # The secret access key is 40 base64 characters with nothing to recognise it by, so it is
    # only redacted where it is assigned to a name that says what it is.
    SecretPattern(
        "aws-secret-access-key",
        re.compile(
            r"(?P<keep>(?i:aws)?_?(?i:secret)_?(?i:access)?_?(?i:key)[\"']?\s{0,5}[:=]\s{0,5}"
            r"[\"']?)(?P<secret>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])"
        ),
        keep_prefix("aws-secret-access-key"),
        ("secret",),
    ),
    SecretPattern(
        "github-token",
        re.compile(
            rf"(?<![{_TOK}])(?:gh[pousr]_[A-Za-z0-9]{{36,255}}|github_pat_[A-Za-z0-9_]{{22,255}})"
            rf"(?![{_TOK}])"
        ),
        whole("github-token"),
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
    ),
    SecretPattern(
        "anthropic-api-key",
        re.compile(rf"(?<![{_TOK}])sk-ant-[{_TOK}]{{20,300}}(?![{_TOK}])"),
        whole("anthropic-api-key"),
        ("sk-ant-",),
    ),
    SecretPattern(
        "openai-api-key",
        re.compile(
            rf"(?<![{_TOK}])sk-(?:(?:proj|svcacct|admin|None)-[{_TOK}]{{20,300}}"
            rf"|[A-Za-z0-9]{{20,200}}(?:T3BlbkFJ[A-Za-z0-9]{{10,100}})?)(?![{_TOK}])"
        ),
        whole("openai-api-key"),
        ("sk-",),
    ),
    SecretPattern(
        "slack-token",
        re.compile(rf"(?<![{_TOK}])xox[abposre]-[A-Za-z0-9\-]{{10,250}}(?![{_TOK}])"),
        whole("slack-token"),
        ("xox",),
    ),
    SecretPattern(
        "slack-webhook",
        re.compile(r"https://hooks\.slack\.com/(?:services|workflows)/[A-Za-z0-9_/]{20,200}"),
        whole("slack-webhook"),
        ("hooks.slack.com",),
    ),
    SecretPattern(
        "discord-webhook",
        re.compile(
            r"https://(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks/\d{5,30}/"
            r"[A-Za-z0-9_\-]{30,200}"
        ),
        whole("discord-webhook"),
        ("/api/webhooks/",),
    ),
    SecretPattern(
        "google-api-key",
        re.compile(rf"(?<![{_TOK}])AIza[{_TOK}]{{35}}(?![{_TOK}])"),
        whole("google-api-key"),
        ("aiza",),
    ),
    SecretPattern(
        "jwt",
        re.compile(
            rf"(?<![{_TOK}.])eyJ[A-Za-z0-9_\-]{{5,4000}}\.eyJ[A-Za-z0-9_\-]{{5,8000}}"
            rf"\.[A-Za-z0-9_\-]{{0,4000}}(?![{_TOK}])"
        ),
        whole("jwt"),
        ("eyj",),
    ),
    # Provider tokens whose shape alone says what they are, beside gitleaks' rules (which want
    # the word "mailgun" nearby, or a delimiter after a Stripe key): Mailgun's "key-" + 32 hex
    # digits, Stripe secret and restricted keys (publishable "pk_" keys are public by design).
    SecretPattern(
        "mailgun-api-key",
        re.compile(r"(?<![\w-])key-[0-9a-f]{32}(?![\w-])"),
        whole("mailgun-api-key"),
        ("key-",),
    ),
    # SendGrid keys of any length ("SG." + id + "." + secret; gitleaks wants exactly 22 + 43).
    SecretPattern(
        "sendgrid-api-token",
        re.compile(rf"(?<![{_TOK}.])SG\.[{_TOK}]{{16,32}}\.[{_TOK}]{{16,80}}(?![{_TOK}.])"),
        whole("sendgrid-api-token"),
        ("sg.",),
    ),
    SecretPattern(
        "stripe-key",
        re.compile(rf"(?<![{_TOK}])(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{{16,247}}(?![{_TOK}])"),
        whole("stripe-key"),
        ("sk_live_", "rk_live_", "sk_test_", "rk_test_"),
    ),
)

# Kubernetes Secret manifests (the first rule of STRUCTURAL).
_KIND_SECRET = re.compile(r"\bkind[\"']?[ \t]{0,5}:[ \t]{0,5}[\"']?Secret\b")
_YAML_ENTRY = re.compile(r"(?m)^(?P<keep>[ \t+\-]*[\w.\-]{1,253}:[ \t]*)(?P<value>[^\n]*?)[ \t]*$")
_JSON_ENTRY = re.compile(r"(?P<keep>\"[\w.\-]{1,253}\"\s{0,20}:\s{0,20})(?P<value>\"[^\"]*\")")


def _kubernetes_secret(m: re.Match[str]) -> str:
    """Redact every value of a Secret's data block; other ``data:`` blocks stay as they are.

    The manifest is a Secret when ``kind: Secret`` is within 3,000 characters of the block,
    in the same YAML document (no ``---`` between them).
    """
    text = m.string
    window_start = max(0, m.start() - 3000)
    before = text[window_start : m.start()]
    after = text[m.end() : m.end() + 3000]
    before = before[before.rfind("\n---") + 1 :] if "\n---" in before else before
    after = after[: after.find("\n---")] if "\n---" in after else after
    if not (_KIND_SECRET.search(before) or _KIND_SECRET.search(after)):
        return m.group(0)
    name = marker("kubernetes-secret")
    if m.group("json") is not None:
        body = _JSON_ENTRY.sub(lambda e: f'{e.group("keep")}"{name}"', m.group("json"))
        return m.group(0).replace(m.group("json"), body, 1)

    def entry(e: re.Match[str]) -> str:
        value = e.group("value")
        if not value or value in ("|", ">", "|-", ">-") or is_placeholder(value):
            return e.group(0)
        return f"{e.group('keep')}{name}"

    body = _YAML_ENTRY.sub(entry, m.group("body"))
    return m.group(0)[: m.start("body") - m.start()] + body


#: Value of a ``key=value`` pair: quoted, or one bare word.
_VALUE = r"\"[^\"\n]{1,1000}\"|'[^'\n]{1,1000}'|[^\s\"'`;|&)]{1,1000}"

#: Where a secret sits, whatever it looks like: headers, URLs, command lines, config files.
STRUCTURAL: tuple[SecretPattern, ...] = (
    # Kubernetes Secret manifests: every value under ``data:`` / ``stringData:`` of a document
    # of ``kind: Secret`` (YAML, or ``kubectl -o json``), whatever the key is called.
    SecretPattern(
        "kubernetes-secret",
        re.compile(
            r"(?m)^(?P<indent>[ \t+\-]{0,40})(?:data|stringData):[ \t]*\r?\n"
            r"(?P<body>(?:(?P=indent)[ \t]{1,20}[\w.\-]{1,253}:[^\n]{0,20000}(?:\n|\Z)){1,500})"
            r"|\"(?:data|stringData)\"[ \t\r\n]{0,20}:[ \t\r\n]{0,20}\{(?P<json>[^{}]{1,200000})\}"
        ),
        lambda m: _kubernetes_secret(m),
        ("secret",),
    ),
    # Authorization headers: Bearer / Basic / Token, then any other scheme (Digest, AWS4 ...,
    # a bare key) and proxies.
    SecretPattern(
        "bearer-token",
        re.compile(
            r"(?P<keep>(?i:authorization)[\"']?\s{0,5}[:=]\s{0,5}[\"']?"
            r"(?i:bearer|token|basic)\s{1,5})(?P<secret>[A-Za-z0-9._~+/\-]{8,4000}=*)"
        ),
        keep_prefix("bearer-token"),
        ("authorization",),
    ),
    SecretPattern(
        "auth-header",
        re.compile(
            r"(?P<keep>(?i:(?:proxy-)?authorization)[\"']?[ \t]{0,5}[:=][ \t]{0,5}[\"']?"
            r"(?:[A-Za-z][\w\-]{0,30}[ \t]{1,5})?)"
            r"(?P<secret>(?!\[REDACTED:)[^\s\"'\\]{8,4000})"
        ),
        keep_prefix("auth-header", skip_placeholders=True, skip_dummies=True),
        ("authorization",),
    ),
    # API-key and token headers: X-Api-Key, DD-API-KEY, DD-APPLICATION-KEY, PRIVATE-TOKEN,
    # X-Auth-Token, X-Vault-Token, Ocp-Apim-Subscription-Key ... (a hyphenated name, or
    # ``apikey``), in HTTP logs and ``curl -H``.
    SecretPattern(
        "api-key-header",
        re.compile(
            r"(?P<keep>(?<![\w-])(?!(?i:sec-websocket-key|idempotency-key)\b)"
            r"(?i:(?:[a-z0-9]{1,30}-){1,4}(?:api-?key|key|token|secret|auth|signature)"
            r"|x-?api-?key|api-?key):[ \t]{0,5})"
            r"(?P<secret>[A-Za-z0-9._~+/=\-]{8,4000})(?![^\s\"',;\]})])"
        ),
        keep_prefix("api-key-header", skip_placeholders=True, skip_dummies=True),
        # An HTTP header has no space before its colon: these are rare outside headers.
        ("-key:", "-token:", "-secret:", "-auth:", "-signature:", "apikey:"),
    ),
    SecretPattern(
        "url-password",
        re.compile(
            # The user may be empty: redis://:password@host.
            r"(?P<keep>\b[A-Za-z][A-Za-z0-9+.\-]{1,20}://[^\s:/@?#\[\]]{0,256}:)"
            r"(?P<secret>(?!\d{1,5}/)[^\s:@?#\[\]]{1,256})(?P<after>@)"
        ),
        keep_prefix("url-password", skip_placeholders=True),
        ("://",),
    ),
    # Secrets in URL queries and connection strings: ``?sig=...&`` (Azure SAS), ``&access_token=``,
    # ``AccountKey=...;`` (Azure storage), ``SharedAccessKey=``, ``Password=...;`` (ADO.NET,
    # JDBC), ``X-Amz-Signature=``, ``X-Amz-Security-Token=``.
    SecretPattern(
        "connection-string",
        re.compile(
            r"(?P<keep>[?&;]"
            r"(?i:sig|signature|x-amz-signature|x-amz-security-token|x-amz-credential|"
            r"account_?key|shared_?access_?key|shared_?access_?signature|password|pwd|"
            r"(?:access|refresh|id|auth|api|private)_?token|client_?secret|api_?key|apikey|"
            r"secret|token|sessionid|phpsessid|jsessionid)=)"
            r"(?P<secret>[^\s;&\"'<>#]{1,4000})"
        ),
        keep_prefix("connection-string", skip_placeholders=True, skip_dummies=True),
        ("sig", "signature", "key", "password", "pwd", "token", "secret", "sessionid", "amz-"),
    ),
    # Passwords on command lines: ``--password=x``, ``--db-password x``, ``--api-token x`` (not
    # ``--no-password``), ``mysql -uroot -px``, ``sshpass -p x``, ``redis-cli -a x``,
    # ``docker login -p x``, ``curl -u user:pass``. Each pattern starts with a literal, so the
    # regex engine jumps from one "--" or "-u" to the next instead of trying every position.
    SecretPattern(
        "cli-password",
        re.compile(
            r"(?P<keep>--(?<!\S--)(?!no-)(?:[a-z0-9]{1,20}-){0,3}"
            r"(?:password|passwd|pass|token|api-?key|apikey|secret|passphrase)(?:=|[ \t]{1,5}))"
            rf"(?P<secret>{_VALUE})"
        ),
        keep_prefix("cli-password", skip_placeholders=True, skip_dummies=True),
        ("--",),
    ),
    SecretPattern(
        "cli-password",
        re.compile(
            r"(?P<keep>\b(?:mysql|mysqldump|mysqladmin|mysqlimport|mysqlshow|mysqlcheck|"
            r"mariadb|mariadb-dump)\b[^\n|;&]{0,200}?[ \t]-p)"
            rf"(?P<secret>{_VALUE})"
        ),
        keep_prefix("cli-password", skip_placeholders=True, skip_dummies=True),
        ("mysql", "mariadb"),
    ),
    SecretPattern(
        "cli-password",
        re.compile(
            r"(?P<keep>\b(?:sshpass[ \t]{1,5}-p|redis-cli\b[^\n|;&]{0,200}?[ \t]-a|"
            r"(?:docker|podman|helm|buildah)[ \t]{1,5}(?:registry[ \t]{1,5})?login\b"
            r"[^\n|;&]{0,200}?[ \t]-p)[ \t]{1,5})"
            rf"(?P<secret>{_VALUE})"
        ),
        keep_prefix("cli-password", skip_placeholders=True, skip_dummies=True),
        ("sshpass", "redis-cli", "login"),
    ),
    SecretPattern(
        "cli-password",
        re.compile(
            # ``-u 1000:1000`` (docker's uid:gid) is not a credential.
            r"(?P<keep>-(?:u|-user)(?<!\S-u)(?<!\S--user)(?:=|[ \t]{1,5})[\"']?"
            r"(?!\d{1,10}:\d{1,10}\b)[^\s:\"']{1,256}:)"
            r"(?P<secret>[^\s\"']{1,1000})"
        ),
        keep_prefix("cli-password", skip_placeholders=True, skip_dummies=True),
        ("-u", "--user"),
    ),
    # ``.netrc``: ``machine h login u password p``, on one line or several.
    SecretPattern(
        "netrc-password",
        re.compile(
            r"(?P<keep>\b(?:machine|default|login)[ \t]{1,20}[^\s]{1,256}"
            r"(?:\s{1,20}(?:login|account|port|protocol)[ \t]{1,20}[^\s]{1,256}){0,3}"
            r"\s{1,20}password[ \t]{1,20})(?P<secret>[^\s]{1,1000})"
        ),
        keep_prefix("netrc-password", skip_placeholders=True, skip_dummies=True),
        ("password",),
    ),
    # ``.npmrc``: ``//registry/:_authToken=...``, ``_auth=``, ``_password=`` (base64).
    SecretPattern(
        "npmrc-auth",
        re.compile(
            r"(?P<keep>(?:(?<=[\s:])|^)_(?:authToken|auth|password)[ \t]{0,5}=[ \t]{0,5})"
            r"(?P<secret>[^\s\"'#;]{1,4000})"
        ),
        keep_prefix("npmrc-auth", skip_placeholders=True, skip_dummies=True),
        ("_auth", "_password"),
    ),
    # Docker ``config.json`` (``"auths": {"host": {"auth": "<base64 user:pass>"}}``) and the
    # registry tokens beside it; kubeconfig's ``client-key-data`` (a base64 private key).
    SecretPattern(
        "docker-auth",
        re.compile(
            r"(?P<keep>\"(?:auth|identitytoken|registrytoken)\"[ \t]{0,5}:[ \t]{0,5}\")"
            r"(?P<secret>[^\"\\\n]{8,8000})(?P<after>\")"
        ),
        keep_prefix("docker-auth", skip_placeholders=True, skip_dummies=True),
        ("auth", "token"),
    ),
    SecretPattern(
        "kubeconfig-key",
        re.compile(
            r"(?P<keep>\bclient-key-data[\"']?[ \t]{0,5}:[ \t]{0,5}[\"']?)"
            r"(?P<secret>[A-Za-z0-9+/=]{16,200000})"
        ),
        keep_prefix("kubeconfig-key"),
        ("client-key-data",),
    ),
    # ``.env``-style assignments (also inside diffs, YAML and shell exports) whose upper-case
    # name ends in a secret word. The value must be a quoted string or one bare word followed
    # only by a comment, so code such as ``PASSWORD = os.environ["X"]`` is left alone.
    SecretPattern(
        "env-secret",
        re.compile(
            r"(?m)^(?P<keep>[+\- ]?[ \t]{0,40}(?:export[ \t]{1,5})?"
            r"(?:[A-Z][A-Z0-9_]{0,80}?)?(?:SECRET|TOKEN|PASSWORD|PASSWD|PASSPHRASE|API_KEY|APIKEY|"
            r"ACCESS_KEY|PRIVATE_KEY|SECRET_KEY|CREDENTIALS|AUTH|ACCOUNT_KEY|AUTH_TOKEN|SIG)"
            r"[ \t]{0,5}[=:][ \t]{0,5})"
            r"(?P<secret>\"[^\"\n]{1,1000}\"|'[^'\n]{1,1000}'|[^\s\"'#()\[\]{},;]{1,1000})"
            r"(?=[ \t]*(?:#[^\n]*)?\r?$)"
        ),
        keep_prefix("env-secret", skip_placeholders=True),
        (
            "secret",
            "token",
            "passw",
            "passphrase",
            "api_key",
            "apikey",
            "access_key",
            "private_key",
            "credentials",
            "auth",
            "account_key",
            "sig",
        ),
    ),
    # Added after an outside attack (1 Dec 2026). AWS secret keys after their name with any
    # separator (``aws configure set aws_secret_access_key <key>``).
    SecretPattern(
        "aws-secret-key",
        re.compile(
            r"(?P<keep>(?i:(?:aws_?)?secret_?access_?key)[\"']?[ \t]{0,5}[:=\t ][ \t]{0,5}"
            r"[\"']?)(?P<secret>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+])"
        ),
        keep_prefix("aws-secret-key"),
        ("secret_access_key", "secretaccesskey"),
    ),
    # Secrets in JSON that is itself inside a JSON string (tool-call arguments):
    # ``{\"password\": \"x\"}``.
    SecretPattern(
        "escaped-json-secret",
        re.compile(
            r"(?P<keep>(?i:pass(?:word|wd|phrase)|secret|token|api_?key|access_?key|"
            r"client_?secret|private_?key|credentials?)\\\"[ \t]{0,5}:[ \t]{0,5}\\\")"
            r"(?P<secret>[^\"\\\n]{6,1000})(?P<after>\\\")"
        ),
        keep_prefix("escaped-json-secret", skip_placeholders=True, skip_dummies=True),
        ('\\"',),
    ),
    # Session cookies: ``Cookie: sessionid=...``, ``Set-Cookie: auth_token=...``.
    SecretPattern(
        "cookie-secret",
        re.compile(
            r"(?P<keep>(?i:(?:set-)?cookie)[\"']?[ \t]{0,5}:[ \t]{0,5}(?:[^\n]{0,2000}?[; ])?"
            r"[\w.\-]{0,40}(?i:sess|sid|token|auth)[\w.\-]{0,40}=)(?P<secret>[^;\s\"']{12,4000})"
        ),
        keep_prefix("cookie-secret", skip_placeholders=True, skip_dummies=True),
        ("cookie",),
    ),
    # ``echo 'pw' | sudo -S ...``: the password piped to sudo.
    SecretPattern(
        "cli-password",
        re.compile(
            rf"(?P<keep>\b(?:echo|printf)[ \t]{{1,5}}(?:-[a-z][ \t]{{1,5}})?)(?P<secret>{_VALUE})"
            r"(?=[ \t]{0,5}\|[ \t]{0,5}sudo[ \t]{1,5}(?:-[a-zA-Z]{1,5}[ \t]{1,5})*?-S\b)"
        ),
        keep_prefix("cli-password", skip_placeholders=True, skip_dummies=True),
        ("sudo",),
    ),
    # A password stated in prose, in several languages (``Das Passwort lautet X``, ``the
    # password is X``): a value of 8+ characters with a letter and a digit, right after.
    # A connection string that starts with its password (``Password=x;Server=...``): the
    # value must end at a ";" (``password=None)`` in code is not one).
    SecretPattern(
        "connection-string",
        re.compile(
            r"(?P<keep>(?<![^\s\"'])(?i:password|pwd|account_?key|shared_?access_?key)=)"
            r"(?P<secret>[^\s;&\"'<>#(),]{1,4000})(?=;)"
        ),
        keep_prefix("connection-string", skip_placeholders=True, skip_dummies=True),
        ("password=", "pwd=", "key="),
    ),
    # A password stated in prose, in several languages (``Das Passwort lautet X``, ``the
    # password is X``): a word of 8+ characters with a letter and a digit, no path or code.
    SecretPattern(
        "stated-password",
        re.compile(
            r"(?P<keep>(?<![\w\-])(?i:password|passwort|kennwort|contraseña|contrasena|"
            r"mot de passe|senha|wachtwoord|hasło|haslo|heslo|пароль|密码|密碼|パスワード|비밀번호|"
            r"şifre|sifre|lösenord|salasana|parola)[^\n:=\[\]@/\\\"'<>(){}]{0,30}?"
            r"[ \t](?i:is|lautet|ist|es|est|é|è|jest|är|は|是|为|為|это)[ \t]{1,5})"
            r"(?P<q>[\"'«„“]?)"
            r"(?P<secret>(?=[^\s\"'»“”]{0,199}\d)(?=[^\s\"'»“”]{0,199}[^\W\d_])"
            r"[^\s\"'»“”,;/()<>=]{8,200})(?![^\s\"'»“”,;])"
        ),
        lambda m: _stated(m),
        (
            "passw",
            "kennwort",
            "contrase",
            "mot de passe",
            "senha",
            "wachtwoord",
            "hasło",
            "haslo",
            "heslo",
            "пароль",
            "密",
            "パスワード",
            "비밀번호",
            "şifre",
            "sifre",
            "lösenord",
            "salasana",
            "parola",
        ),
    ),
    # The same in lower or mixed case (YAML, JSON, INI, Python literals: ``password: "x"``,
    # ``"api_key": "x"``, ``db_password = 'x'``): a quoted value anywhere, or a bare value that
    # ends the line and is not a type name (``password: str`` is an annotation). Values shorter
    # than 8 characters are left alone: in code they are test data (``{'APP_TOKEN': 'abc'}``)
    # that a judge needs to read, not credentials. The match starts at the secret word (a
    # prefix such as ``db_`` stays in the text untouched), so the scan stays cheap.
    SecretPattern(
        "config-secret",
        re.compile(
            # The secret words factored by first letter: about 4x faster than the plain
            # alternation (password|passwd|passphrase|private_key|secret|secret_key|token|
            # api_key|apikey|api-key|access_key|auth_token|account_key|credential(s)|
            # shared_access_key).
            r"(?P<keep>(?i:p(?:ass(?:word|wd|phrase)|rivate_?key)|secret(?:_?key)?|token|"
            r"a(?:pi[_-]?key|ccess_?key|uth_?token|ccount_?key)|credentials?|"
            r"shared_?access_?key)[\"']?[ \t]{0,5}[:=][ \t]{0,5})"
            r"(?P<secret>\"[^\"\n\\]{8,1000}\"|'[^'\n\\]{8,1000}'"
            r"|(?!(?i:str|bytes|int|bool|string|text|any|secretstr|optional)\b)"
            r"[^\s\"'#()\[\]{},;=]{8,1000}(?=[ \t]*(?:#[^\n]*)?\r?$))"
        ),
        keep_prefix("config-secret", skip_placeholders=True),
        (
            "passw",
            "passphrase",
            "secret",
            "token",
            "api_key",
            "apikey",
            "api-key",
            "access_key",
            "accesskey",
            "private_key",
            "privatekey",
            "credential",
            "account_key",
            "accountkey",
            "shared_access_key",
            "sharedaccesskey",
            "auth_token",
            "authtoken",
        ),
    ),
)
