"""Strings that stand where a secret could, or look like one, and are none: kept as evidence.

:func:`is_lookalike` is asked about every value a rule of :func:`judge.safety.redact.redact`
would replace (this package's patterns and gitleaks' rules alike); a value it calls a
look-alike is left in place. A judge needs these to read a run: the documented example key a
test uses, the publishable key a web page embeds, the ``sk-...your-key-here`` of a README.

What is kept, and why it is safe to keep:
- documented examples: values published by their vendor as examples or test keys (AWS's
  ``...EXAMPLE`` keys, jwt.io's token, Google's reCAPTCHA test keys, Stripe's docs keys);
- publishable keys, public by design: Stripe ``pk_live_``/``pk_test_``, Mapbox ``pk.``
  tokens, a reCAPTCHA *site* key (named so beside it), a Firebase web ``apiKey`` in its
  ``firebaseConfig`` (Firebase documents these as identifiers, not secrets);
- placeholders: templates and references (``${VAR}``, ``{{ x }}``, ``<TOKEN>``, ``[PASSWORD]``),
  masks (``********``, ``xxxx``, eight equal characters in a row), words that say so
  (``your``, ``here``, ``example``, ``placeholder``, ``replace``, ``changeme``, ``dummy``...),
  values made only of dummy words (``rootpasswd``, ``test-secret``, ``my-bot-token``), and
  counting runs (``abcdef``, ``123456``) or one group repeated (``1234-1234-1234``) that no
  generated token holds;
- ids: a UUID under a name that says id (``credentialsId``, ``tenant_id``); a PEM block with no
  key material in it;
- masks inside a real prefix: ``xoxb-xxxxxxxxx-xxxx``, ``pplx-XXXX...``, ``AKIAXXXXXXXXXXXXXXXX``,
  ``glc_1111...=``, ``xoxp-5723...-####...``: whatever the prefix, the rest is one character
  repeated or a mask (see :func:`masked`);
- AWS's documented examples: AWS writes every example key of its documentation with
  ``EXAMPLE`` in capitals (``AKIAIOSFODNN7EXAMPLE``, ``wJalr...EXAMPLEKEY``);
- anti-forgery tokens (``csrf-token``, ``authenticity_token``): a page shows one to every
  visitor, they open nothing;
- a private key's BEGIN line with no key material after it (``-----BEGIN PRIVATE KEY-----
  anything``); a command substitution standing where a token could (``Bearer
  $(gcloud auth print-access-token)``);
- names of API versions (``apiVersion: external-secrets.io/v1beta1``): the manifests of
  Kubernetes' ``ExternalSecret``, ``SecretStore`` and ``SopsSecret`` name where a secret is
  kept, not the secret.
A random token of the real shape passes none of these tests (its chance of holding a six-long
counting run or eight equal characters is below 1e-4).
"""

from __future__ import annotations

import re
from functools import lru_cache

from judge.safety.secret_patterns import is_placeholder, is_trivial

#: Values published by their vendors as examples or test keys.
DOCUMENTED = frozenset(
    {
        # jwt.io's example token (HS256, "John Doe").
        "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwi"
        "aWF0IjoxNTE2MjM5MDIyfQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c",
        # Google's reCAPTCHA v2 test keys (site, secret).
        "6LeIxAcTAAAAAJcZVRqyHh71UMIEGNQ_MXjiZKhI",
        "6LeIxAcTAAAAAGG-vFI1TnRWxMZNFuojJ4WifJWe",
        # Stripe's documentation keys.
        "pk_test_TYooMQauvdEDq54NiTphI7jx",
        "sk_test_4eC39HqLyjWDarjtT1zdp7dc",
    }
)

#: Prefixes of keys that are public by design.
PUBLISHABLE = ("pk_live_", "pk_test_", "pk.eyJ")

_WRAPPED = re.compile(r"<[^<>\n]{1,80}>|\[[^\[\]\n]{1,80}\]|\$\{[^}\n]{1,120}\}|%[A-Za-z_]{1,60}%")
_TEMPLATE = re.compile(r"[<>]|\$\{|\{\{|\}\}")
_WORD = re.compile(
    r"(?i:your|here|placeholder|replace|changeme|change_me|change-me|dummy|fake|sample|insert|"
    r"redacted)|example|\.\.\.",
)
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_ID_NAME = re.compile(r"(?:\bid|_id|Id|ID)\b[\"']?\s*[:=]?\s*[\"']?\s*\Z")
_SITE_KEY = re.compile(r"site[-_ ]?key", re.IGNORECASE)
_PEM = re.compile(r"-----BEGIN[A-Z0-9 ]{0,40}-----(?P<body>.*?)-----END", re.DOTALL)
_NOT_BASE64 = re.compile(r"[^A-Za-z0-9+/]")
_SITE_SHAPE = re.compile(r"6L[0-9A-Za-z_-]{38}")
#: AWS's documentation examples (``AKIAIOSFODNN7EXAMPLE``, ``...EXAMPLEKEY``).
_AWS_EXAMPLE = re.compile(r"EXAMPLE(?:KEY)?\Z")
#: A key named ``apiVersion`` (a Kubernetes manifest's API group and version).
_API_VERSION = re.compile(r"apiVersion[\"']?\s*:\s*[\"']?\Z")
#: Characters that separate the parts of a token; mask characters.
_SEPARATORS = str.maketrans("", "", "-_.~=+/:")
_MASKS = "*#\u2022xX"
_CSRF = re.compile(r"(?i:csrf|xsrf|authenticity)[\w-]{0,20}[\"']?[ \t]{0,3}(?:[:=]|value=)?")

#: Words a dummy value is made of (``rootpasswd``, ``CleartextPassword1``, ``test-secret``).
_VOCAB = frozenset(
    [
        "my",
        "some",
        "your",
        "the",
        "a",
        "wrong",
        "bad",
        "fake",
        "test",
        "testing",
        "dummy",
        "example",
        "sample",
        "new",
        "old",
        "other",
        "default",
        "valid",
        "invalid",
        "correct",
        "incorrect",
        "super",
        "top",
        "not",
        "no",
        "pass",
        "password",
        "passwd",
        "passphrase",
        "pwd",
        "pw",
        "secret",
        "secrets",
        "key",
        "keys",
        "token",
        "tokens",
        "foo",
        "bar",
        "baz",
        "qux",
        "admin",
        "user",
        "username",
        "root",
        "guest",
        "demo",
        "changeit",
        "changeme",
        "value",
        "here",
        "api",
        "app",
        "bot",
        "access",
        "auth",
        "client",
        "db",
        "database",
        "local",
        "dev",
        "mock",
        "cleartext",
        "plain",
        "plaintext",
        "letmein",
        "string",
        "str",
        "id",
        "env",
    ]
)


@lru_cache(maxsize=4096)
def _dummy_words(value: str) -> bool:
    """Whether ``value`` is only dummy words, separators and at most four digits."""
    low = value.lower()
    digits = sum(c.isdigit() for c in low)
    letters = re.sub(r"[^a-z]", " ", low).split()
    if digits > 4 or not letters:
        return False
    return all(_segments(word) for word in letters)


def _segments(word: str) -> bool:
    """Whether ``word`` splits into words of :data:`_VOCAB`."""
    ok = [True] + [False] * len(word)
    for end in range(1, len(word) + 1):
        ok[end] = any(
            ok[start] and word[start:end] in _VOCAB for start in range(max(0, end - 12), end)
        )
    return ok[-1]


def masked(value: str) -> bool:
    """Whether ``value`` is a mask written in a real token's shape: past a prefix of at most
    12 characters (``ghp_``, ``xoxb-12345-``, ``sha256~``, ``AIza``), the rest (separators
    aside) is one character repeated, or mask characters (``*``, ``#``, ``x``) at least eight
    long ending it. A generated token holds eight equal characters in a row with a chance
    below 1e-9."""
    core = value.translate(_SEPARATORS)
    if len(core) < 12:
        return False
    for form in (core, core.lower()):  # ``sha256~_xxxxxx_xxxX``: x and X mixed
        tail = len(form) - len(form.rstrip(form[-1]))
        if tail >= 8 and len(form) - tail <= 12:
            return True
    masks = len(core) - len(core.rstrip(_MASKS))
    return masks >= 8 and core[-1] in "*#\u2022"


def _placeholder(value: str) -> bool:
    """:func:`is_placeholder`, but a dotted run with digits (a JWT, a Discord token) is not
    taken for a reference to code (``settings.TOKEN``)."""
    if "." in value and (len(value) > 60 or any(c.isdigit() for c in value)):
        return False
    return is_placeholder(value)


def is_lookalike(secret: str, text: str = "", start: int = 0) -> bool:
    """Whether ``secret`` (found at ``start`` of ``text``) is a look-alike to keep."""
    value = secret.strip().strip("\"'`")
    if not value:
        return False
    if value in DOCUMENTED:
        return True
    if value.startswith("-----BEGIN"):
        m = _PEM.match(value)
        if m is None and "-----END" not in value:
            # No END: the body is what follows the BEGIN line, in the value and after it, up
            # to the next armour line (a key cut off by a clip keeps its body: redacted).
            header = value.find("-----", 10) + 5
            follows = text[start + len(secret) : start + len(secret) + 400]
            body = (value[header:] + follows).split("-----")[0]
            return len(_NOT_BASE64.sub("", body)) < 40
        return m is not None and len(_NOT_BASE64.sub("", m.group("body"))) < 40
    if value.startswith(("$(", "`")):
        return True  # a command's output (``Bearer $(gcloud auth print-access-token)``)
    if _WRAPPED.fullmatch(value):
        return True
    if any(c.isspace() for c in value):
        return False
    if value.startswith(PUBLISHABLE) or _TEMPLATE.search(value):
        return True
    if _placeholder(value) or is_trivial(value) or _WORD.search(value) or _dummy_words(value):
        return True
    if masked(value) or _AWS_EXAMPLE.search(value):
        return True
    after = text[start + len(secret) : start + len(secret) + 4]
    if len(after) == 4 and all(c in "*#\u2022" for c in after):
        return True  # the token's end masked (``xoxp-5723...-#####``)
    before = text[max(0, start - 60) : start]
    if _API_VERSION.search(before) or _CSRF.search(before[-40:]):
        return True
    if _UUID.fullmatch(value):
        return _ID_NAME.search(before) is not None
    if _SITE_SHAPE.fullmatch(value) and _SITE_KEY.search(before):
        return True
    if value.startswith("AIza"):
        around = text[max(0, start - 300) : start + len(secret) + 300].lower()
        return "authdomain" in around or "firebase" in around
    return False
