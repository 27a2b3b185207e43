"""Replace secrets in text with readable markers before any of it leaves the process.

Every piece of evidence goes through :func:`redact` before it is shown to a judge, stored or
logged. A secret becomes ``[REDACTED:<pattern name>]``; where a pattern has a non-secret part
(the user and host of a URL, the name in ``API_KEY=...``) that part is kept so the judge can
still read what happened.

Design notes:
- A registry of named patterns (:data:`PATTERNS`), applied in order: specific patterns first
  (a PEM block, a GitHub token) so that the marker names what was found; generic ones last
  (``Authorization: Bearer``, ``.env`` lines). A later pattern never re-matches a marker.
- Every pattern is precompiled and linear: repetitions are bounded or over character classes
  that cannot overlap with what follows, so a 50 MB input without a match costs one scan per
  pattern (tested in tests/judge/safety/test_redact.py). A literal ``needle`` lets a pattern skip
  the scan entirely when its anchor text is absent.
- No generic "high entropy" rule: git SHAs and digests in diffs (``index 92394a7eae..``) are
  evidence, not secrets.
- Four stages (:func:`redact`): this module's provider patterns (:data:`SPECIFIC`), gitleaks'
  published rules for ~220 providers (:mod:`judge.safety.gitleaks`, data not code), this
  module's structural rules (:data:`STRUCTURAL`: headers, URLs, command-line flags, config
  keys, ``.netrc``, ``.npmrc``, docker ``config.json``, Kubernetes Secrets, connection strings),
  and last gitleaks' generic rules (a keyed value of high entropy, ``curl`` credentials).
- Values that sit where a secret could but are dummies (``password='password'``,
  ``user:pass@example.com``, ``SECRET_KEY = 'fake-key'``: test data that a judge must read) are
  left alone: see :func:`_is_trivial`.
- Records too: :func:`redact_judgment` (a model's answer may quote evidence) and
  :func:`redact_case` (the stored case, which the review page shows to people).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Any, NamedTuple

from judge.digests import sha256_hex
from judge.safety import unescape
from judge.safety.gitleaks import find, load_rules, shannon_entropy, split_generic
from judge.safety.scan import Hits, Spec, literal_ids, scanner
from judge.types import Case, Judgment, TraceTurn

Replacer = Callable[[re.Match[str]], str]


class SecretPattern(NamedTuple):
    """One named secret pattern: its regex and how a match is rewritten."""

    name: str
    regex: re.Pattern[str]
    #: Returns the replacement for a match; returning the match unchanged means "not a secret"
    #: (e.g. a ``$VARIABLE`` placeholder) and is not counted.
    replace: Replacer
    #: Lower-case literal texts of which at least one must occur (case-insensitively) for a
    #: match to be possible; lets :func:`redact` skip a whole scan. Empty means always scan.
    needles: tuple[str, ...] = ()
    #: Where a match can start, in increasing order (a superset of the starts of the regex's
    #: matches): the regex is then tried only there (:func:`_apply`), with the same matches as a
    #: scan of every position. None (or a call that returns None): every position.
    starts: Callable[[str], list[int] | None] | None = None


#: Every marker starts with this text.
MARKER_PREFIX = "[REDACTED:"


def marker(name: str) -> str:
    """The text that stands in for a secret found by pattern ``name``."""
    return f"[REDACTED:{name}]"


def _whole(name: str) -> Replacer:
    """Replace the entire match."""
    text = marker(name)
    return lambda m: text


def _keep_prefix(
    name: str, *, skip_placeholders: bool = False, skip_dummies: bool = False
) -> Replacer:
    """Keep group ``keep`` (a label such as ``password=``), replace group ``secret``.

    With ``skip_placeholders``, a placeholder (``$VAR``, ``None``) is kept; with
    ``skip_dummies`` also a dummy value (:func:`_is_trivial`) or another flag (``-x``). The
    rules that existed before the dummy filter do not use it: they keep redacting exactly what
    they did, so that the evidence, and so the cache key, of a case they judged is unchanged.
    """
    text = marker(name)

    def replace(m: re.Match[str]) -> str:
        secret = m.group("secret")
        if skip_placeholders and _is_placeholder(secret):
            return m.group(0)
        if skip_dummies and (_is_trivial(secret) or secret.startswith("-")):
            return m.group(0)
        suffix = m.groupdict().get("after") or ""
        return f"{m.group('keep')}{text}{suffix}"

    return replace


def _stated(m: re.Match[str]) -> str:
    """A password stated in prose: the value redacted, a trailing full stop kept."""
    secret = m.group("secret")
    end = secret.rstrip(".!?)")
    if len(end) < 8 or _is_placeholder(end):
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


def _is_placeholder(value: str) -> bool:
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


def _is_trivial(value: str) -> bool:
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
        _whole("private-key"),
        ("-----begin",),
    ),
    SecretPattern(
        "private-key",
        re.compile(
            r"-----BEGIN (?:[A-Z0-9]{1,20} ){0,4}PRIVATE KEY(?: BLOCK)?-----"
            r"(?:[ \t]*(?:\r?\n|\\n)"
            r"(?:[A-Za-z\-]{1,30}:[^\n\\]{0,100}|[ \t]*[A-Za-z0-9+/=]{16,200})){0,400}"
        ),
        _whole("private-key"),
        ("-----begin",),
    ),
    SecretPattern(
        "aws-access-key-id",
        re.compile(
            r"(?<![A-Za-z0-9])(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA|APKA)"
            r"[A-Z0-9]{16}(?![A-Za-z0-9])"
        ),
        _whole("aws-access-key-id"),
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
        _keep_prefix("aws-secret-access-key"),
        ("secret",),
    ),
    SecretPattern(
        "github-token",
        re.compile(
            rf"(?<![{_TOK}])(?:gh[pousr]_[A-Za-z0-9]{{36,255}}|github_pat_[A-Za-z0-9_]{{22,255}})"
            rf"(?![{_TOK}])"
        ),
        _whole("github-token"),
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
    ),
    SecretPattern(
        "anthropic-api-key",
        re.compile(rf"(?<![{_TOK}])sk-ant-[{_TOK}]{{20,300}}(?![{_TOK}])"),
        _whole("anthropic-api-key"),
        ("sk-ant-",),
    ),
    SecretPattern(
        "openai-api-key",
        re.compile(
            rf"(?<![{_TOK}])sk-(?:(?:proj|svcacct|admin|None)-[{_TOK}]{{20,300}}"
            rf"|[A-Za-z0-9]{{20,200}}(?:T3BlbkFJ[A-Za-z0-9]{{10,100}})?)(?![{_TOK}])"
        ),
        _whole("openai-api-key"),
        ("sk-",),
    ),
    SecretPattern(
        "slack-token",
        re.compile(rf"(?<![{_TOK}])xox[abposre]-[A-Za-z0-9\-]{{10,250}}(?![{_TOK}])"),
        _whole("slack-token"),
        ("xox",),
    ),
    SecretPattern(
        "slack-webhook",
        re.compile(r"https://hooks\.slack\.com/(?:services|workflows)/[A-Za-z0-9_/]{20,200}"),
        _whole("slack-webhook"),
        ("hooks.slack.com",),
    ),
    SecretPattern(
        "discord-webhook",
        re.compile(
            r"https://(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks/\d{5,30}/"
            r"[A-Za-z0-9_\-]{30,200}"
        ),
        _whole("discord-webhook"),
        ("/api/webhooks/",),
    ),
    SecretPattern(
        "google-api-key",
        re.compile(rf"(?<![{_TOK}])AIza[{_TOK}]{{35}}(?![{_TOK}])"),
        _whole("google-api-key"),
        ("aiza",),
    ),
    SecretPattern(
        "jwt",
        re.compile(
            rf"(?<![{_TOK}.])eyJ[A-Za-z0-9_\-]{{5,4000}}\.eyJ[A-Za-z0-9_\-]{{5,8000}}"
            rf"\.[A-Za-z0-9_\-]{{0,4000}}(?![{_TOK}])"
        ),
        _whole("jwt"),
        ("eyj",),
    ),
    # Provider tokens whose shape alone says what they are, beside gitleaks' rules (which want
    # the word "mailgun" nearby, or a delimiter after a Stripe key): Mailgun's "key-" + 32 hex
    # digits, Stripe secret and restricted keys (publishable "pk_" keys are public by design).
    SecretPattern(
        "mailgun-api-key",
        re.compile(r"(?<![\w-])key-[0-9a-f]{32}(?![\w-])"),
        _whole("mailgun-api-key"),
        ("key-",),
    ),
    # SendGrid keys of any length ("SG." + id + "." + secret; gitleaks wants exactly 22 + 43).
    SecretPattern(
        "sendgrid-api-token",
        re.compile(rf"(?<![{_TOK}.])SG\.[{_TOK}]{{16,32}}\.[{_TOK}]{{16,80}}(?![{_TOK}.])"),
        _whole("sendgrid-api-token"),
        ("sg.",),
    ),
    SecretPattern(
        "stripe-key",
        re.compile(rf"(?<![{_TOK}])(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{{16,247}}(?![{_TOK}])"),
        _whole("stripe-key"),
        ("sk_live_", "rk_live_", "sk_test_", "rk_test_"),
    ),
)

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
        _keep_prefix("bearer-token"),
        ("authorization",),
    ),
    SecretPattern(
        "auth-header",
        re.compile(
            r"(?P<keep>(?i:(?:proxy-)?authorization)[\"']?[ \t]{0,5}[:=][ \t]{0,5}[\"']?"
            r"(?:[A-Za-z][\w\-]{0,30}[ \t]{1,5})?)"
            r"(?P<secret>(?!\[REDACTED:)[^\s\"'\\]{8,4000})"
        ),
        _keep_prefix("auth-header", skip_placeholders=True, skip_dummies=True),
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
        _keep_prefix("api-key-header", skip_placeholders=True, skip_dummies=True),
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
        _keep_prefix("url-password", skip_placeholders=True),
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
        _keep_prefix("connection-string", skip_placeholders=True, skip_dummies=True),
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
        _keep_prefix("cli-password", skip_placeholders=True, skip_dummies=True),
        ("--",),
    ),
    SecretPattern(
        "cli-password",
        re.compile(
            r"(?P<keep>\b(?:mysql|mysqldump|mysqladmin|mysqlimport|mysqlshow|mysqlcheck|"
            r"mariadb|mariadb-dump)\b[^\n|;&]{0,200}?[ \t]-p)"
            rf"(?P<secret>{_VALUE})"
        ),
        _keep_prefix("cli-password", skip_placeholders=True, skip_dummies=True),
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
        _keep_prefix("cli-password", skip_placeholders=True, skip_dummies=True),
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
        _keep_prefix("cli-password", skip_placeholders=True, skip_dummies=True),
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
        _keep_prefix("netrc-password", skip_placeholders=True, skip_dummies=True),
        ("password",),
    ),
    # ``.npmrc``: ``//registry/:_authToken=...``, ``_auth=``, ``_password=`` (base64).
    SecretPattern(
        "npmrc-auth",
        re.compile(
            r"(?P<keep>(?:(?<=[\s:])|^)_(?:authToken|auth|password)[ \t]{0,5}=[ \t]{0,5})"
            r"(?P<secret>[^\s\"'#;]{1,4000})"
        ),
        _keep_prefix("npmrc-auth", skip_placeholders=True, skip_dummies=True),
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
        _keep_prefix("docker-auth", skip_placeholders=True, skip_dummies=True),
        ("auth", "token"),
    ),
    SecretPattern(
        "kubeconfig-key",
        re.compile(
            r"(?P<keep>\bclient-key-data[\"']?[ \t]{0,5}:[ \t]{0,5}[\"']?)"
            r"(?P<secret>[A-Za-z0-9+/=]{16,200000})"
        ),
        _keep_prefix("kubeconfig-key"),
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
        _keep_prefix("env-secret", skip_placeholders=True),
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
        _keep_prefix("aws-secret-key"),
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
        _keep_prefix("escaped-json-secret", skip_placeholders=True, skip_dummies=True),
        ('\\"',),
    ),
    # Session cookies: ``Cookie: sessionid=...``, ``Set-Cookie: auth_token=...``.
    SecretPattern(
        "cookie-secret",
        re.compile(
            r"(?P<keep>(?i:(?:set-)?cookie)[\"']?[ \t]{0,5}:[ \t]{0,5}(?:[^\n]{0,2000}?[; ])?"
            r"[\w.\-]{0,40}(?i:sess|sid|token|auth)[\w.\-]{0,40}=)(?P<secret>[^;\s\"']{12,4000})"
        ),
        _keep_prefix("cookie-secret", skip_placeholders=True, skip_dummies=True),
        ("cookie",),
    ),
    # ``echo 'pw' | sudo -S ...``: the password piped to sudo.
    SecretPattern(
        "cli-password",
        re.compile(
            rf"(?P<keep>\b(?:echo|printf)[ \t]{{1,5}}(?:-[a-z][ \t]{{1,5}})?)(?P<secret>{_VALUE})"
            r"(?=[ \t]{0,5}\|[ \t]{0,5}sudo[ \t]{1,5}(?:-[a-zA-Z]{1,5}[ \t]{1,5})*?-S\b)"
        ),
        _keep_prefix("cli-password", skip_placeholders=True, skip_dummies=True),
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
        _keep_prefix("connection-string", skip_placeholders=True, skip_dummies=True),
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
        _keep_prefix("config-secret", skip_placeholders=True),
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

# --- Secrets by shape (stage 5, after every older rule, so that what those found is unchanged) ---

#: Values that stand where a key could but are documented placeholders or examples.
_EXAMPLE = re.compile(
    r"example|sample|placeholder|dummy|fake|redacted|changeme|change_me|your[-_]|xxxx|"
    r"0123456789|1234567890|abcdef12|test[-_]?(?:key|token|secret)|not[-_]?a[-_]?real|"
    r"<[^>]*>|\$\{|\{\{|\*\*\*",
    re.IGNORECASE,
)
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_HEX = re.compile(r"[0-9a-fA-F]+")


def _classes(value: str) -> int:
    """How often the character class changes along ``value`` (upper, lower, digit, other)."""
    kinds = [
        "u" if c.isupper() else "l" if c.islower() else "d" if c.isdigit() else "o" for c in value
    ]
    return sum(1 for a, b in zip(kinds, kinds[1:], strict=False) if a != b)


def _is_random(value: str, name: str) -> bool:
    """A value that reads as generated, not written: long, varied and of high entropy; not a
    placeholder, a dotted name, a path, a UUID or a bare hex digest (unless the name says it
    is a key: a hex key is a key)."""
    if len(value) < 16 or _is_placeholder(value) or _is_trivial(value) or _EXAMPLE.search(value):
        return False
    if "://" in value or value.count("/") > 2 or value.count(".") > 2:
        return False  # a URL, a path or a dotted name
    secretish = re.search(r"(?i)secret|token|passw|pwd|api.?key|private|credential|auth", name)
    if _UUID.fullmatch(value) and not secretish:
        return False
    if _HEX.fullmatch(value) and not (secretish or re.search(r"(?i)key", name)):
        return False
    if not any(c.isdigit() for c in value) and len(value) < 32:
        return False  # identifiers and words; generated tokens hold digits
    if _classes(value) < len(value) / 4:
        return False  # long runs of one class: words, numbers, hex of a digest
    return shannon_entropy(value) >= 3.2


def _keyed_random(m: re.Match[str]) -> str:
    if not _is_random(m.group("secret"), m.group("name")):
        return m.group(0)
    return f"{m.group('keep')}{marker('high-entropy-secret')}{m.group('after') or ''}"


#: The words of the high-entropy rule's name, one of which its name holds.
_SECRET_WORDS = (
    r"key|token|secret|passw(?:or)?d|passphrase|pwd|"
    r"credential|creds|auth|api|private|signature|sig|salt|cookie|session|sid|dsn|"
    r"bearer|jwt|otp|seed|mnemonic|license|licence|webhook|hmac"
)
#: A beginning of each of those words, as found in a lower-case ASCII text: every word starts
#: with one of these (``signature`` with ``sig``, ``passphrase`` with ``pass``), so the first of
#: them in a token is at or before its first word (tests/judge/safety/test_redact.py checks it).
_SECRET_HEADS = (
    "key", "token", "secret", "pass", "pwd", "cred", "auth", "api", "private", "sig", "salt",
    "cookie", "session", "sid", "dsn", "bearer", "jwt", "otp", "seed", "mnemonic", "licen",
    "webhook", "hmac",
)  # fmt: skip
#: The run of name characters that ends where this is matched (on the reversed text before a
#: word): how far back its token starts. One more than the name may reach before its word.
_NAME_RUN = re.compile(r"[\w.-]{0,121}")


def _name_starts(text: str) -> list[int] | None:
    r"""Where the high-entropy rule can match in an ASCII text: the start of each token (of
    ``[\w.-]``) with one of :data:`_SECRET_HEADS` at most 120 characters from that start (None
    for other texts: every position is tried).

    The rule's name is ``(?<![\w.-])[\w.-]{0,120}?<word>``, so a match starts at a token start
    with a word at most 120 characters on, in the same token (words are word characters); in
    ASCII text a word matched case-insensitively is the word in the lower-case text, and it
    starts with a head. (Outside ASCII, case-insensitive matching also maps the Kelvin sign, a
    long s and dotless i, which ``lower`` does not.) The heads are found with ``str.find``, far
    faster than any case-insensitive alternation: trying the rule only at those starts spares
    its lazy 0-120 run at every token start of texts that hold these words."""
    if not text.isascii():
        return None
    lowered = text.lower()
    found: set[int] = set()
    for head in _SECRET_HEADS:
        at = lowered.find(head)
        while at >= 0:
            found.add(at)
            at = lowered.find(head, at + 1)
    starts: list[int] = []
    last = -1
    for at in sorted(found):
        window = text[max(0, at - 121) : at]
        run = _NAME_RUN.match(window[::-1])
        reach = run.end() if run is not None else 0
        if reach > 120:
            continue  # the token starts further back than the name reaches
        start = at - reach
        if start != last:
            starts.append(start)
            last = start
    return starts


def _password_hash(m: re.Match[str]) -> str:
    if _EXAMPLE.search(m.group("secret")):
        return m.group(0)
    return f"{m.group('keep')}{marker('password-hash')}"


SHAPES: tuple[SecretPattern, ...] = (
    SecretPattern(
        "teams-webhook",
        re.compile(
            r"https://(?:[A-Za-z0-9-]{1,63}\.webhook\.office\.com/webhookb2|"
            r"outlook\.office(?:365)?\.com/webhook)/[A-Za-z0-9@/_\-]{20,600}"
        ),
        _whole("teams-webhook"),
        ("webhook.office.com", "outlook.office"),
    ),
    SecretPattern(
        "zapier-webhook",
        re.compile(r"https://hooks\.zapier\.com/hooks/catch/\d{3,12}/[A-Za-z0-9]{4,40}/?"),
        _whole("zapier-webhook"),
        ("hooks.zapier.com",),
    ),
    # crypt(3) hashes as in /etc/shadow and .htpasswd (MD5 $1$ / $apr1$, bcrypt $2b$, SHA-crypt
    # $5$ / $6$, yescrypt $y$), and htpasswd's {SHA} / {SSHA}: a hash is as good as a password
    # to anyone who can crack it. The user name (``alice:``) is kept.
    SecretPattern(
        "password-hash",
        re.compile(
            r"(?P<keep>(?<![\w$\\]))(?P<secret>\$(?:1|2[abxy]?|5|6|apr1|y|gy|7|md5|sha1)\$"
            r"(?:[^\s:$\"'`]{1,120}\$){0,3}[./A-Za-z0-9]{20,200}"
            r"|\{(?:SHA|SSHA|SHA256|SSHA256|SHA512|SSHA512)\}[A-Za-z0-9+/]{20,200}={0,2})"
            r"(?![./A-Za-z0-9])"
        ),
        _password_hash,
        ("$1$", "$2", "$5$", "$6$", "$apr1$", "$y$", "$gy$", "$7$", "$md5", "$sha1$", "sha}"),
    ),
    # PuTTY private key files: the private lines and the MAC (the header and public part kept).
    SecretPattern(
        "putty-private-key",
        re.compile(
            r"(?P<keep>Private-Lines:[ \t]*\d{1,4}[ \t]*\r?\n)"
            r"(?P<secret>(?:[ \t]*[A-Za-z0-9+/=]{4,200}[ \t]*(?:\r?\n|\Z)){1,400})"
        ),
        lambda m: f"{m.group('keep')}{marker('putty-private-key')}\n",
        ("private-lines:",),
    ),
    SecretPattern(
        "putty-private-key",
        re.compile(r"(?P<keep>Private-MAC:[ \t]*)(?P<secret>[0-9A-Fa-f]{16,128})"),
        _keep_prefix("putty-private-key"),
        ("private-mac:",),
    ),
    # A private key's body as list items (YAML, Markdown, a JSON array) under its BEGIN line (or
    # the marker an older rule left there) or under a key name: every item is redacted.
    SecretPattern(
        "private-key",
        re.compile(
            r"(?P<keep>(?:-----BEGIN (?:[A-Z0-9]{1,20} ){0,4}PRIVATE KEY(?: BLOCK)?-----|"
            r"\[REDACTED:private-key\]|"
            r"(?i:private[_-]?key|priv[_-]?key|ssh[_-]?key|tls[_-]?key|client[_-]?key|"
            r"signing[_-]?key|key[_-]?data)[\w.-]{0,20}[\"']?[ \t]*[:=][ \t]*[\[|>-]?)"
            r"[ \t]*\r?\n)"
            r"(?P<secret>(?:[ \t]*(?:[-*+]|\d{1,3}[.)])[ \t]{1,4}[\"']?[A-Za-z0-9+/=]{16,200}"
            r"[\"']?,?[ \t]*(?:\r?\n|\Z)){1,400}"
            r"|(?:[ \t]*[\"'][A-Za-z0-9+/=]{16,200}[\"'],?[ \t]*(?:\r?\n|\Z)){2,400})"
        ),
        lambda m: f"{m.group('keep')}{marker('private-key')}\n",
        ("-----begin", "[redacted:private-key]", "key"),
    ),
    # A generated value under a name that says it is a secret (a broader list than the older
    # rules, and for any value, quoted or not): kept unless it reads as random (see _is_random).
    # The name starts where its token starts: tried at every character, the lazy prefix made
    # each long word cost 40 x 25 steps (11 s per MB of `db_password: "xxx...` lines).
    SecretPattern(
        "high-entropy-secret",
        re.compile(
            rf"(?P<keep>(?P<name>(?<![\w.-])(?i:[\w.-]{{0,120}}?(?:{_SECRET_WORDS})[\w.-]{{0,20}}))"
            r"[\"'`]?[ \t]{0,3}(?:[:=]|=>|:=|->|[ \t](?=[\"'`]))[ \t]{0,3}(?P<q>[\"'`]?))"
            r"(?P<secret>[A-Za-z0-9+/=_\-.~!@#%^&*]{16,512})(?P<after>(?P=q))"
            r"(?![A-Za-z0-9+/=_\-.~!@#%^&*])"
        ),
        _keyed_random,
        (
            "key",
            "token",
            "secret",
            "passw",
            "pwd",
            "credential",
            "creds",
            "auth",
            "api",
            "private",
            "sig",
            "salt",
            "cookie",
            "session",
            "sid",
            "dsn",
            "bearer",
            "jwt",
            "otp",
            "seed",
            "mnemonic",
            "licen",
            "webhook",
            "hmac",
        ),
        _name_starts,
    ),
)

#: Every pattern of this module, in the order :func:`redact` applies them (the gitleaks stages
#: run between :data:`SPECIFIC` and :data:`STRUCTURAL`, and after it; :data:`SHAPES` last).
PATTERNS: tuple[SecretPattern, ...] = SPECIFIC + STRUCTURAL + SHAPES


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
        if not value or value in ("|", ">", "|-", ">-") or _is_placeholder(value):
            return e.group(0)
        return f"{e.group('keep')}{name}"

    body = _YAML_ENTRY.sub(entry, m.group("body"))
    return m.group(0)[: m.start("body") - m.start()] + body


def redact(
    text: str, *, patterns: Sequence[SecretPattern] | None = None, decode: bool = True
) -> tuple[str, int]:
    """Replace every secret in ``text`` with a ``[REDACTED:<name>]`` marker.

    Returns the redacted text and how many secrets were replaced. Deterministic: the same text
    always gives the same output. By default six stages run: :data:`SPECIFIC`, gitleaks'
    provider rules, :data:`STRUCTURAL`, gitleaks' generic rules, :data:`SHAPES`, and (with
    ``decode``) the same on the text's decoded views (:mod:`judge.safety.unescape`); the text is
    scanned once (:mod:`judge.safety.scan`) and only the rules the scan allows are run. With
    ``patterns``, only those patterns run (no gitleaks stage, no scan, no views).
    """
    if not text:
        return text, 0
    if patterns is not None:
        return _run_patterns(text, patterns)[:2]
    joined = 0
    plan = _plan()
    scan = _Scan(plan, text)
    if decode and (scan.hits.maybe is None or plan.split_gate in scan.hits.maybe):
        # A key split over two lines is joined before any rule redacts half of it (only where
        # the scan allows one: see unescape.SPLIT_GATE); the rules see the joined text.
        text, joined = unescape.joined_secrets(text, _core)
        if joined:
            scan = _Scan(plan, text)
    # Which gitleaks rules can match is decided once, on the text as given (a keyword of the
    # rule occurs in it, as gitleaks decides): redaction only removes text.
    provider, generic = plan.gitleaks_candidates(scan.hits.literals)
    text, total = scan.run_own(text, plan.specific)
    text, n = _run_gitleaks(text, scan.allowed(text, provider))
    total += n
    text, n = scan.run_own(text, plan.structural)
    total += n
    text, n = _run_gitleaks(text, scan.allowed(text, generic))
    total += n
    text, n = scan.run_own(text, plan.shapes)
    total += n
    if decode:
        # Redaction only inserts markers (``[`` ... ``]``, which no escape holds) between
        # pieces of the scanned text: an escape of the text now was in the text scanned.
        maybe = scan.hits.maybe
        text, n = _decoded(text, maybe is None or plan.escape_gate in maybe)
        total += n
    return text, total + joined


class _Plan(NamedTuple):
    """Every rule of :func:`redact` and the scan that gates them. This module's patterns are
    numbered in :data:`PATTERNS` order (bit ``j`` of a mask is pattern ``j``); gitleaks' rules
    follow them in the scan's rule ids."""

    #: Literal id -> mask of this module's patterns with that needle.
    needle_masks: dict[int, int]
    #: Mask of this module's patterns without needles (always possible).
    unneedled: int
    #: Masks of the :data:`SPECIFIC`, :data:`STRUCTURAL` and :data:`SHAPES` patterns.
    specific: int
    structural: int
    shapes: int
    #: Rule id of gitleaks rule 0.
    gitleaks_offset: int
    #: Rule ids of :data:`judge.safety.unescape.SPLIT_GATE` and
    #: :data:`judge.safety.unescape.ESCAPE_ASCII` (after gitleaks' rules).
    split_gate: int
    escape_gate: int
    #: Literal id -> gitleaks rules with that keyword, split as (provider, generic).
    by_keyword: dict[int, tuple[frozenset[int], frozenset[int]]]
    #: gitleaks rules with no keyword (always run), split the same way.
    always: tuple[frozenset[int], frozenset[int]]
    spec: Spec

    def gitleaks_candidates(self, literals: frozenset[int]) -> tuple[list[int], list[int]]:
        """The gitleaks rules a keyword of which occurs, as (provider, generic) in file order."""
        provider, generic = set(self.always[0]), set(self.always[1])
        for literal in literals:
            found = self.by_keyword.get(literal)
            if found is not None:
                provider |= found[0]
                generic |= found[1]
        return sorted(provider), sorted(generic)

    def possible(self, hits: Hits) -> int:
        """Mask of this module's patterns the scan allows: a needle occurs, and the prefilter
        matches (or was not checked)."""
        mask = self.unneedled
        needle_masks = self.needle_masks
        for literal in hits.literals:
            mask |= needle_masks.get(literal, 0)
        if mask and hits.maybe is not None:
            maybe = 0
            for rule in hits.maybe:
                if rule < self.gitleaks_offset:
                    maybe |= 1 << rule
            mask &= maybe
        return mask


@lru_cache(maxsize=1)
def _plan() -> _Plan:
    rules = load_rules()
    words = [n for p in PATTERNS for n in p.needles] + [k for r in rules.rules for k in r.keywords]
    ids = literal_ids(words)
    needle_masks: dict[int, int] = {}
    unneedled = 0
    for j, pattern in enumerate(PATTERNS):
        if not pattern.needles:
            unneedled |= 1 << j
        for needle in pattern.needles:
            needle_masks[ids[needle]] = needle_masks.get(ids[needle], 0) | 1 << j
    _, generic_ids = split_generic(rules, range(len(rules.rules)))
    generic_set = frozenset(generic_ids)
    by_keyword: dict[int, tuple[set[int], set[int]]] = {}
    for index, rule in enumerate(rules.rules):
        for keyword in rule.keywords:
            pair = by_keyword.setdefault(ids[keyword], (set(), set()))
            pair[1 if index in generic_set else 0].add(index)
    always = [i for i, rule in enumerate(rules.rules) if not rule.keywords]
    return _Plan(
        needle_masks=needle_masks,
        unneedled=unneedled,
        specific=(1 << len(SPECIFIC)) - 1,
        structural=((1 << (len(SPECIFIC) + len(STRUCTURAL))) - 1) ^ ((1 << len(SPECIFIC)) - 1),
        shapes=((1 << len(PATTERNS)) - 1) ^ ((1 << (len(SPECIFIC) + len(STRUCTURAL))) - 1),
        gitleaks_offset=len(PATTERNS),
        split_gate=len(PATTERNS) + len(rules.rules),
        escape_gate=len(PATTERNS) + len(rules.rules) + 1,
        by_keyword={k: (frozenset(a), frozenset(b)) for k, (a, b) in by_keyword.items()},
        always=(
            frozenset(i for i in always if i not in generic_set),
            frozenset(i for i in always if i in generic_set),
        ),
        spec=Spec(
            literals=tuple(ids),
            rules=(
                *(p.regex for p in PATTERNS),
                *(rule.regex for rule in rules.rules),
                unescape.SPLIT_GATE,
                unescape.ESCAPE_ASCII,
            ),
        ),
    )


def _spec() -> Spec:
    return _plan().spec


class _Scan:
    """The scan of the text being redacted, redone when a replacement changed the text (rare:
    the needles are tested on the text as it is, as they always were)."""

    def __init__(self, plan: _Plan, text: str) -> None:
        self.plan = plan
        self.scanner = scanner("secrets", _spec)
        self.text = text
        self.hits = self.scanner.scan(text)
        self.mask = plan.possible(self.hits)

    def current(self, text: str) -> Hits:
        if text is not self.text:
            self.text = text
            self.hits = self.scanner.scan(text)
            self.mask = self.plan.possible(self.hits)
        return self.hits

    def allowed(self, text: str, rule_indexes: Sequence[int]) -> list[int]:
        """The gitleaks rules of ``rule_indexes`` whose prefilter matches ``text``."""
        if not rule_indexes:
            return []
        maybe = self.current(text).maybe
        if maybe is None:
            return list(rule_indexes)
        offset = self.plan.gitleaks_offset
        return [i for i in rule_indexes if offset + i in maybe]

    def run_own(self, text: str, stage: int) -> tuple[str, int]:
        """Apply this module's patterns of ``stage`` (a mask) in order, each only where the scan
        of the current text allows it."""
        total = 0
        j = 0
        while True:
            self.current(text)
            todo = self.mask & stage & ~((1 << j) - 1)
            if not todo:
                return text, total
            j = (todo & -todo).bit_length() - 1  # the next allowed pattern
            redacted, n = _apply(PATTERNS[j], text)
            if n:
                text = redacted
                total += n
            j += 1


def _core(text: str) -> tuple[str, int]:
    """:func:`redact` without the decoded views (what a view is redacted with)."""
    return redact(text, decode=False)


def _decoded(text: str, escapes: bool = True) -> tuple[str, int]:
    """Stage 6: secrets that only show once the text is decoded (character escapes, hidden and
    full-width characters, base64 runs), redacted where they stand
    (:mod:`judge.safety.unescape`; split lines are joined before stage 1). ``escapes=False``:
    the scan found no escape in the text, so it has no escaped view."""
    total = 0
    view = unescape.escaped_view(text) if escapes else None
    if view is not None:
        text, n = unescape.redact_view(text, view, _core)
        total += n
    text, n = unescape.base64_secrets(text, _core)
    return text, total + n


def _run_patterns(
    text: str, patterns: Sequence[SecretPattern], lowered: str | None = None
) -> tuple[str, int, str | None]:
    """Apply ``patterns`` in order; the text, the count and its lower-case view (None when the
    text changed since that view was made)."""
    total = 0
    for pattern in patterns:
        if pattern.needles:
            if lowered is None:
                lowered = text.lower()
            if not any(needle in lowered for needle in pattern.needles):
                continue
        text, n = _apply(pattern, text)
        if n:
            total += n
            lowered = None  # the text changed; recompute the prefilter view when next needed
    return text, total, lowered


_MARKER = re.compile(r"\[REDACTED:[a-z0-9-]+\]")


def _run_gitleaks(text: str, rule_indexes: Sequence[int]) -> tuple[str, int]:
    """Replace what the gitleaks rules ``rule_indexes`` find."""
    if not rule_indexes:
        return text, 0
    spans = find(text, load_rules(), rule_indexes)
    if not spans:
        return text, 0
    # Never rewrite an earlier marker, nor part of one.
    markers = [m.span() for m in _MARKER.finditer(text)] if "[REDACTED:" in text else []
    out: list[str] = []
    last = 0
    count = 0
    for start, end, rule in sorted(spans):
        if start < last or start == end:
            continue  # overlaps a secret already replaced
        if any(s < end and start < e for s, e in markers):
            continue
        out.append(text[last:start])
        out.append(marker(rule))
        last = end
        count += 1
    out.append(text[last:])
    return "".join(out), count


def _apply(pattern: SecretPattern, text: str) -> tuple[str, int]:
    """Run one pattern, counting only the matches that were actually rewritten."""
    changed = 0

    def replace(m: re.Match[str]) -> str:
        nonlocal changed
        new = pattern.replace(m)
        if new != m.group(0):
            changed += 1
        return new

    starts = None if pattern.starts is None else pattern.starts(text)
    if starts is None:
        return pattern.regex.sub(replace, text), changed
    # ``sub`` over the given starts only: left to right, each match from where the last ended.
    out: list[str] = []
    last = 0
    match_at = pattern.regex.match
    for start in starts:
        if start < last:
            continue
        m = match_at(text, start)
        if m is None:
            continue
        out.append(text[last:start])
        out.append(replace(m))
        last = m.end()
    if not out:
        return text, 0
    out.append(text[last:])
    return "".join(out), changed


def pattern_names(patterns: Sequence[SecretPattern] = PATTERNS) -> list[str]:
    """The distinct names of the registered patterns, in order."""
    return list(dict.fromkeys(p.name for p in patterns))


def redact_turn_fields(turn: TraceTurn) -> tuple[TraceTurn, int]:
    """The turn with its id, role and source redacted (the content is not touched): the id and
    the role are shown to the judge in each evidence tag, and all three are stored."""
    fields: dict[str, str] = {}
    total = 0
    for name in ("id", "role", "source"):
        value = getattr(turn, name)
        if value:
            fields[name], n = _redact_field(value)
            total += n
    return (turn.model_copy(update=fields) if total else turn), total


@lru_cache(maxsize=4096)
def _redact_field(value: str) -> tuple[str, int]:
    """:func:`redact` of a turn's id, role or source, remembered: roles and ids such as
    ``agent`` or ``msg-3`` repeat across turns and cases (1.4 ms per SWE-bench case uncached)."""
    return redact(value)


def _redact_values(value: Any) -> tuple[Any, int]:
    """Every string inside ``value`` (dicts, lists) redacted, and the count."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        out: dict[Any, Any] = {}
        total = 0
        for key, item in value.items():
            out[key], n = _redact_values(item)
            total += n
        return (out if total else value), total
    if isinstance(value, list):
        items = [_redact_values(item) for item in value]
        total = sum(n for _, n in items)
        return ([v for v, _ in items] if total else value), total
    return value, 0


#: Joins a redacted case id and the short digest that keeps it unique.
CASE_ID_DIGEST_SEPARATOR = "~"


@lru_cache(maxsize=4096)
def safe_case_id(case_id: str) -> str:
    """``case_id`` as judge keeps it: unchanged when it holds no secret; otherwise redacted, with
    a short digest of the whole id appended (``run-[REDACTED:github-token]-7~1a2b3c4d``) so that
    it stays unique and the same id always maps to the same one.

    A case id is stored, shown to reviewers, printed by ``judge run`` and exported, so a secret
    in it must not stay. The mapping is the function itself (no table keeps the original):
    whoever has the original id computes the kept one with this function, and nothing stored
    holds the secret. The digest is 32 bits of SHA-256 of the id, too few to recover a random
    token and enough to keep distinct ids apart."""
    redacted, count = redact(case_id)
    if not count:
        return case_id
    digest = sha256_hex(("judge-case-id\0" + case_id).encode("utf-8", "surrogatepass"))
    return f"{redacted}{CASE_ID_DIGEST_SEPARATOR}{digest[:8]}"


def with_safe_id(case: Case) -> Case:
    """``case`` with :func:`safe_case_id` of its id (itself when the id holds no secret)."""
    safe = safe_case_id(case.id)
    return case if safe == case.id else case.model_copy(update={"id": safe})


def redact_case(case: Case) -> tuple[Case, int]:
    """The case with its texts redacted (task, diff, candidates, trace turns with their ids,
    roles and sources, and every string in slices and meta) and the count.

    For the stored copy of a case, which the review page and exports show to people. The id,
    kind and agent model are kept as given: they identify the case. Returns ``case`` itself
    when nothing was redacted.
    """
    task, n_task = redact(case.task)
    diff, n_diff = redact(case.diff) if case.diff is not None else (None, 0)
    candidates: dict[str, str] | None = None
    n_candidates = 0
    if case.candidates is not None:
        candidates = {}
        for label, text in case.candidates.items():
            candidates[label], n = redact(text)
            n_candidates += n
    turns: list[TraceTurn] = []
    n_turns = 0
    for turn in case.trace:
        content, n = redact(turn.content)
        shown, m = redact_turn_fields(turn)
        n_turns += n + m
        turns.append(shown.model_copy(update={"content": content}) if n else shown)
    slices, n_slices = _redact_values(case.slices)
    meta, n_meta = _redact_values(case.meta)
    total = n_task + n_diff + n_candidates + n_turns + n_slices + n_meta
    if not total:
        return case, 0
    update = {
        "task": task,
        "diff": diff,
        "candidates": candidates,
        "trace": turns,
        "slices": slices,
        "meta": meta,
    }
    return case.model_copy(update=update), total


# Pydantic's validation errors quote the model's output as ``input_value='head...tail'``: a cut
# secret whose tail no pattern recognises any more. The raw output is kept (redacted) anyway.
_INPUT_VALUE = re.compile(r"input_value=(?P<q>['\"]).{0,1000}?(?P=q)(?=, input_type=)")


def redact_error(text: str) -> tuple[str, int]:
    """:func:`redact` for error messages: also elides the quoted input of validation errors."""
    elided, n = (
        _INPUT_VALUE.subn("input_value=[elided]", text) if "input_value=" in text else (text, 0)
    )
    redacted, m = redact(elided)
    return redacted, n + m


def redact_judgment(judgment: Judgment) -> tuple[Judgment, int]:
    """The judgment with its free text redacted, and the count.

    A model's answer may quote the evidence it was shown (redacted already) or bring back a
    secret from elsewhere (its training data, a tool): the rationale, the criteria rationales,
    the raw output and the error text are redacted before the judgment is stored or shown.
    Returns ``judgment`` itself when nothing was redacted.
    """
    total = 0

    def scrub(text: str | None) -> str | None:
        nonlocal total
        if text is None:
            return None
        redacted, n = redact(text)
        total += n
        return redacted

    verdict = judgment.verdict
    if verdict is not None:
        criteria = [
            c.model_copy(update={"rationale": scrub(c.rationale)}) for c in verdict.criteria
        ]
        verdict = verdict.model_copy(
            update={"rationale": scrub(verdict.rationale), "criteria": criteria}
        )
    raw_output = scrub(judgment.raw_output)
    error = None
    if judgment.error is not None:
        error, n = redact_error(judgment.error)
        total += n
    if not total:
        return judgment, 0
    update = {"verdict": verdict, "raw_output": raw_output, "error": error}
    return judgment.model_copy(update=update), total
