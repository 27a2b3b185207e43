"""CSRF tokens of the review page's forms (login, label, logout).

Every form carries a hidden ``csrf_token`` that another site cannot know:

- signed in (a session): HMAC-SHA256 keyed by the session token (an HttpOnly cookie no script
  and no other site can read) over a fixed label, so the token is tied to the session, needs no
  storage and survives a restart of the service; a page reached with an API key in a header
  (never a browser across sites) uses the service's secret over the key id;
- the login form (no session yet): a signed double submit: a random nonce in a cookie scoped to
  ``/login`` and, in the form, HMAC-SHA256(service secret, nonce).

The access middleware also refuses any state-changing page request whose Origin (or Referer) is
not this service (``judge.api.security.origin_problem``); the token is the second lock.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets

#: The form field every page form carries.
FIELD = "csrf_token"
#: The login form's nonce cookie (scoped to /login, HttpOnly, SameSite=Strict).
LOGIN_COOKIE = "judge_login"
_LABEL = b"judge-review-csrf-v1"


def _mac(key: bytes, message: bytes) -> str:
    return hmac.new(key, message, hashlib.sha256).hexdigest()


def session_token_csrf(session_token: str) -> str:
    """The CSRF token of every form shown in this page session."""
    return _mac(session_token.encode(), _LABEL)


def key_csrf(secret: bytes, key_id: str) -> str:
    """The CSRF token of forms shown to a request authenticated by an API key header."""
    return _mac(secret, _LABEL + b":key:" + key_id.encode())


def login_pair(secret: bytes) -> tuple[str, str]:
    """(nonce for the login cookie, token for the login form)."""
    nonce = secrets.token_urlsafe(24)
    return nonce, _mac(secret, _LABEL + b":login:" + nonce.encode())


def login_token_ok(secret: bytes, nonce: str | None, token: str | None) -> bool:
    """Whether a login form's token matches the nonce of its cookie."""
    if not nonce or not token or len(nonce) > 100:
        return False
    return hmac.compare_digest(_mac(secret, _LABEL + b":login:" + nonce.encode()), token)


def token_ok(expected: str, given: str | None) -> bool:
    """Constant-time comparison of a form's token with the one expected."""
    return bool(given) and hmac.compare_digest(expected, given or "")
