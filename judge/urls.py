"""URLs, connection strings and HTTP headers safe to print: the one masker of the secrets they
carry, used for every URL, database location and header judge prints, logs or puts in a
message or a report.

:func:`mask_url` writes ``***`` in place of

- the password of a URL's userinfo (``user:pw@host``), and a lone userinfo (``TOKEN@host``,
  which is then a token), except in a database URL (``postgresql://judge@db``), where a lone
  user is a role name and is shown;
- the value of every query or fragment parameter whose name, URL-decoded and in any case,
  contains a secret word (:data:`SECRET_NAME`: ``password``, ``sslpassword``, ``token``,
  ``access_token``, ``api_key``, ``apikey``, ``key``, ``secret``, ``client_secret``, ``sig``,
  ``signature``...), with or without percent-encoding;
- the same values in a libpq keyword/value connection string (``host=db password=s3cret``,
  ``password = 'a b'``).

``passfile`` and ``sslkey`` are shown: libpq reads them as paths of files (the passwords and the
client key stay in those files, never in the URL), and the path tells where to look. Everything
else is left as written, byte for byte; an odd input never raises (a URL that cannot be split
is shown as ``<unparsable URL>``). :func:`mask_text` masks the secrets of a URL wherever they
appear in another text (a driver's error message that quotes a part of the URL);
:func:`mask_urls_in` masks every URL found in a text, and :class:`MaskingFilter` every URL of a
log record (httpx logs each request's URL, its query included)."""

from __future__ import annotations

import logging
import re
from urllib.parse import unquote, unquote_plus, urlsplit, urlunsplit

#: What a masked secret is shown as.
MASK = "***"
#: Parameter names (URL-decoded, any case) whose values are secrets: found anywhere in the name
#: (``x-api-key``, ``client_secret``, ``accessToken``, ``sslpassword``, ``oauth_signature``).
SECRET_NAME = re.compile(
    r"password|passwd|passphrase|pwd|token|key|secret|auth|sig|credential|session", re.IGNORECASE
)
#: Names that look secret but are paths of files the client reads (libpq's).
PATH_NAMES = frozenset({"passfile", "sslkey"})
#: URL schemes whose lone userinfo is a role name, not a token.
DATABASE_SCHEMES = ("postgresql", "postgres")
#: HTTP headers whose whole value is a secret (beside names matching :data:`SECRET_NAME`).
SECRET_HEADERS = frozenset({"cookie", "set-cookie"})
#: What :func:`mask_url` shows for a URL it cannot split.
UNPARSABLE = "<unparsable URL>"

#: A URL inside a text: a scheme, ``://``, and what follows up to white space or a quote.
_URL_IN_TEXT = re.compile(r"\b[A-Za-z][A-Za-z0-9+.-]*://[^\s\"'<>]+")
#: ``name=`` at the start of a query (or fragment) or after a separator.
_PARAM = re.compile(r"(?:^|(?<=[&;]))([^&;=]*)=")
#: A libpq keyword/value string starts with ``keyword =``.
_KEYWORDS = re.compile(r"\s*[A-Za-z_]\w*\s*=")
#: One ``keyword = value`` of a libpq string: the value single-quoted (backslash escapes, maybe
#: unterminated) or up to the next white space.
_KEYWORD = re.compile(r"(?:^|(?<=\s))([A-Za-z_]\w*)(\s*=\s*)('(?:[^'\\]|\\.?)*'?|\S*)")


def is_secret_name(name: str) -> bool:
    """Whether a query parameter, libpq keyword or header named ``name`` carries a secret
    (decoded up to three times: ``pass%77ord`` and ``pass%2577ord`` are ``password``)."""
    for _ in range(3):
        decoded = unquote_plus(name)
        if decoded == name:
            break
        name = decoded
    name = name.strip().lower()
    return name not in PATH_NAMES and SECRET_NAME.search(name) is not None


def mask_url(url: object) -> str:
    """``url`` (a URL, a libpq keyword/value string, a path) safe to print: its secrets as
    ``***`` (see the module's docstring), the rest as written."""
    return _masked(url)[0]


def mask_text(text: str, url: object) -> str:
    """``text`` with every secret ``url`` holds masked wherever it appears (as written in the
    URL or decoded): for a message that may quote a part of the URL."""
    found: set[str] = set()
    for secret in _masked(url)[1]:
        found.update({secret, unquote(secret), unquote_plus(secret)})
        if secret.startswith("'"):
            found.add(re.sub(r"\\(.)", r"\1", secret.strip("'")))
    for secret in sorted((s for s in found if s), key=len, reverse=True):
        text = text.replace(secret, MASK)
    return text


def mask_urls_in(text: str) -> str:
    """``text`` (a log line, an error message) with every URL in it masked."""
    return _URL_IN_TEXT.sub(lambda found: mask_url(found.group(0)), text)


class MaskingFilter(logging.Filter):
    """A logging filter that masks every URL in a record's message; ``judge serve`` puts it on
    its log handlers (httpx logs every request's URL at INFO, query included)."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        masked = mask_urls_in(message)
        if masked != message:
            record.msg, record.args = masked, None
        return True


def mask_header(name: str, value: str) -> str:
    """An HTTP header's value safe to print: ``Authorization: Bearer ***`` (the scheme word is
    kept), ``***`` for cookies and headers named like secrets (``x-api-key``), else as is."""
    lowered = name.strip().lower()
    if lowered in ("authorization", "proxy-authorization"):
        scheme, space, _ = value.strip().partition(" ")
        return f"{scheme} {MASK}" if space else MASK
    if lowered in SECRET_HEADERS or is_secret_name(lowered):
        return MASK
    return value


def _masked(url: object) -> tuple[str, list[str]]:
    """``url`` masked, and the secrets it held (as written)."""
    try:
        text = str(url)
    except Exception:  # noqa: BLE001 - an object that cannot be shown is shown as unparsable
        return UNPARSABLE, []
    secrets: list[str] = []
    if _KEYWORDS.match(text):  # a URL starts with its scheme and a colon, never ``name=``
        # ... or a bare query string (``a=1&token=x``): its parameters are masked too.
        return _mask_params(_mask_keywords(text, secrets), secrets), secrets
    try:
        parts = urlsplit(text)
    except ValueError:
        return UNPARSABLE, []
    netloc = _mask_userinfo(parts.scheme, parts.netloc, secrets)
    query = _mask_params(parts.query, secrets)
    fragment = _mask_params(parts.fragment, secrets)
    if not secrets:
        return text, secrets
    # The masked parts put back in place, so that the rest stays as written (urlunsplit would
    # lower the scheme's case and drop the ``//`` of ``postgresql:///db``).
    out = text
    for mark, old, new in (
        ("#", parts.fragment, fragment),
        ("?", parts.query, query),
        ("//", parts.netloc, netloc),
    ):
        start = out.find(mark) + len(mark)
        if new == old:
            continue
        if start < len(mark) or out[start : start + len(old)] != old:  # urlsplit cleaned it
            return urlunsplit(
                parts._replace(netloc=netloc, query=query, fragment=fragment)
            ), secrets
        out = out[:start] + new + out[start + len(old) :]
    return out, secrets


def _mask_userinfo(scheme: str, netloc: str, secrets: list[str]) -> str:
    userinfo, at, host = netloc.rpartition("@")
    if not at:
        return netloc
    user, colon, password = userinfo.partition(":")
    if colon:
        secrets.append(password)
        return f"{user}:{MASK}@{host}"
    if scheme.lower() in DATABASE_SCHEMES:
        return netloc
    secrets.append(userinfo)
    return f"{MASK}@{host}"


def _mask_params(text: str, secrets: list[str]) -> str:
    """A query (or fragment) with the values of secret parameters masked, up to the next ``&``
    (a value holding a ``;`` is masked whole)."""
    spans: list[tuple[int, int]] = []
    for found in _PARAM.finditer(text):
        if is_secret_name(found.group(1)):
            end = text.find("&", found.end())
            spans.append((found.end(), len(text) if end < 0 else end))
    return _replace(text, spans, secrets)


def _mask_keywords(text: str, secrets: list[str]) -> str:
    """A libpq keyword/value string with the values of secret keywords masked, and a URL given
    as a value (``dbname=postgresql://...``, which libpq expands) masked as a URL."""
    out: list[str] = []
    done = 0
    for found in _KEYWORD.finditer(text):
        value = found.group(3)
        if is_secret_name(found.group(1)) and value:
            secrets.append(value)
            value = MASK
        elif "://" in value:
            value, held = _masked(value)
            secrets += held
        out += [text[done : found.start(3)], value]
        done = found.end(3)
    return "".join(out) + text[done:] if secrets else text


def _replace(text: str, spans: list[tuple[int, int]], secrets: list[str]) -> str:
    """``text`` with each non-empty span (in order; one inside an earlier one is skipped) as
    ``***``; the spans' text goes to ``secrets``."""
    out: list[str] = []
    done = 0
    for start, end in sorted(spans):
        if start < done or end <= start:
            continue
        secrets.append(text[start:end])
        out += [text[done:start], MASK]
        done = end
    return "".join(out) + text[done:] if out else text
