"""Stage 5 of :func:`judge.safety.redact.redact`, after every older rule so that what those
found is unchanged: secrets by shape (:data:`SHAPES`). Webhook URLs, password hashes, PuTTY key
files, a private key's body as list items, and a generated value of high entropy under a name
that says it is a secret.
"""

from __future__ import annotations

import re

from judge.safety.gitleaks import shannon_entropy
from judge.safety.secret_patterns import (
    SecretPattern,
    is_placeholder,
    is_trivial,
    keep_prefix,
    lowered_starts,
    marker,
    whole,
)

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


def is_random(value: str, name: str) -> bool:
    """A value that reads as generated, not written: long, varied and of high entropy; not a
    placeholder, a dotted name, a path, a UUID or a bare hex digest (unless the name says it
    is a key: a hex key is a key)."""
    if len(value) < 16 or is_placeholder(value) or is_trivial(value) or _EXAMPLE.search(value):
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


#: Last words of a name that says what it holds is no secret (``apiVersion``,
#: ``credentialId``, ``LLM_SECRET_NAME``); words that say a key is public (``public_key``).
_NOT_SECRET_TAIL = frozenset(
    ["version", "id", "ids", "name", "names", "type", "url", "uri", "path", "file", "ref"]
)
_PUBLIC_WORDS = frozenset(["pub", "public", "pubkey", "publishable"])
_NAME_WORDS = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")


#: The words of a name that say its value is a secret, as whole words of the name
#: (``apiKey``, ``dsn_secret``, ``__Host-session``; not ``keyword`` or ``signal``).
_SECRET_NAME_WORDS = frozenset((
    "key", "keys", "apikey", "token", "tokens", "secret", "secrets", "password", "passwd",
    "passphrase", "pwd", "pw", "pass", "credential", "credentials", "creds", "cred", "auth",
    "private", "privkey", "signature", "sig", "signing", "salt", "cookie", "session",
    "sessionid", "sid", "dsn", "bearer", "jwt", "otp", "seed", "mnemonic", "license",
    "licence", "webhook", "hmac",
))  # fmt: skip


def secret_name(name: str) -> bool:
    """Whether one of the words of ``name`` says its value is a secret."""
    return any(w.lower() in _SECRET_NAME_WORDS for w in _NAME_WORDS.findall(name))


def not_secret_name(name: str) -> bool:
    """Whether a name ends in a word that says its value is no secret, or names a public
    key (``X-API-Name``, ``credentialId``, ``public_key``, ``X509_pubkey_st``)."""
    words = [w.lower() for w in _NAME_WORDS.findall(name)]
    if not words:
        return False
    return words[-1] in _NOT_SECRET_TAIL or any(w in _PUBLIC_WORDS for w in words)


def _keyed_random(m: re.Match[str]) -> str:
    if not_secret_name(m.group("name")) or not is_random(m.group("secret"), m.group("name")):
        return m.group(0)
    return f"{m.group('keep')}{marker('high-entropy-secret')}{m.group('after') or ''}"


#: The words of the high-entropy rule's name, one of which its name holds.
SECRET_WORDS = (
    r"key|token|secret|passw(?:or)?d|passphrase|pwd|"
    r"credential|creds|auth|api|private|signature|sig|salt|cookie|session|sid|dsn|"
    r"bearer|jwt|otp|seed|mnemonic|license|licence|webhook|hmac"
)
#: A beginning of each of those words, as found in a lower-case ASCII text: every word starts
#: with one of these (``signature`` with ``sig``, ``passphrase`` with ``pass``), so the first of
#: them in a token is at or before its first word (tests/judge/safety/test_redact.py checks it).
SECRET_HEADS = (
    "key", "token", "secret", "pass", "pwd", "cred", "auth", "api", "private", "sig", "salt",
    "cookie", "session", "sid", "dsn", "bearer", "jwt", "otp", "seed", "mnemonic", "licen",
    "webhook", "hmac",
)  # fmt: skip
#: Where one of :data:`SECRET_HEADS` is in an ASCII text, in order (None for other texts).
secret_heads_at = lowered_starts(SECRET_HEADS)
#: The run of name characters that ends where this is matched (on the reversed text before a
#: word): how far back its token starts. One more than the name may reach before its word.
_NAME_RUN = re.compile(r"[\w.-]{0,121}")


def name_starts(text: str) -> list[int] | None:
    r"""Where the high-entropy rule can match in an ASCII text: the start of each token (of
    ``[\w.-]``) with one of :data:`SECRET_HEADS` at most 120 characters from that start (None
    for other texts: every position is tried).

    The rule's name is ``(?<![\w.-])[\w.-]{0,120}?<word>``, so a match starts at a token start
    with a word at most 120 characters on, in the same token (words are word characters); in
    ASCII text a word matched case-insensitively is the word in the lower-case text, and it
    starts with a head. (Outside ASCII, case-insensitive matching also maps the Kelvin sign, a
    long s and dotless i, which ``lower`` does not.) The heads are found with ``str.find``, far
    faster than any case-insensitive alternation: trying the rule only at those starts spares
    its lazy 0-120 run at every token start of texts that hold these words."""
    found = secret_heads_at(text)
    if found is None:
        return None
    starts: list[int] = []
    last = -1
    for at in found:
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
        whole("teams-webhook"),
        ("webhook.office.com", "outlook.office"),
    ),
    SecretPattern(
        "zapier-webhook",
        re.compile(r"https://hooks\.zapier\.com/hooks/catch/\d{3,12}/[A-Za-z0-9]{4,40}/?"),
        whole("zapier-webhook"),
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
        keep_prefix("putty-private-key"),
        ("private-mac:",),
    ),
    # A private key's body as list items (YAML, Markdown, a JSON array) under its BEGIN line (or
    # the marker an older rule left there, quoted or not) or under a key name: every item is
    # redacted.
    SecretPattern(
        "private-key",
        re.compile(
            r"(?P<keep>(?:-----BEGIN (?:[A-Z0-9]{1,20} ){0,4}PRIVATE KEY(?: BLOCK)?-----|"
            r"\[REDACTED:private-key\]|"
            r"(?i:private[_-]?key|priv[_-]?key|ssh[_-]?key|tls[_-]?key|client[_-]?key|"
            r"signing[_-]?key|key[_-]?data)[\w.-]{0,20}[\"']?[ \t]*[:=][ \t]*[\[|>-]?)"
            r"[\"']?,?[ \t]*\r?\n)"
            # Each item may carry a diff's ``+`` (the key added in a diff).
            r"(?P<secret>(?:\+?[ \t]*(?:[-*+]|\d{1,3}[.)])[ \t]{1,4}[\"']?[A-Za-z0-9+/=]{16,200}"
            r"[\"']?,?[ \t]*(?:\r?\n|\Z)){1,400}"
            r"|(?:[ \t]*[\"'][A-Za-z0-9+/=]{16,200}[\"'],?[ \t]*(?:\r?\n|\Z)){2,400})"
        ),
        lambda m: f"{m.group('keep')}{marker('private-key')}\n",
        ("-----begin", "[redacted:private-key]", "key"),
    ),
    # A generated value under a name that says it is a secret (a broader list than the older
    # rules, and for any value, quoted or not): kept unless it reads as random (see is_random).
    # The name starts where its token starts: tried at every character, the lazy prefix made
    # each long word cost 40 x 25 steps (11 s per MB of `db_password: "xxx...` lines).
    SecretPattern(
        "high-entropy-secret",
        re.compile(
            rf"(?P<keep>(?P<name>(?<![\w.-])(?i:[\w.-]{{0,120}}?(?:{SECRET_WORDS})[\w.-]{{0,20}}))"
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
        name_starts,
    ),
)
