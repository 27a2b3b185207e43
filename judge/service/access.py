"""API keys and review-page sessions. Only salted hashes are stored; a key is shown once.

A key reads ``jk_<id>_<secret>``: the id finds the row, the secret is checked against
HMAC-SHA256(salt, secret) in constant time. A key carries a name (the reviewer name on labels)
and a role (``judge.types.ROLES``: admin, client, reviewer, adjudicator; what each may call is
``judge/api/roles.py``). The first key of an empty store is an admin unless another role is
asked for. Page sessions are random tokens kept as SHA-256 hashes, tied to a key and expiring.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
import time
from dataclasses import dataclass
from datetime import datetime, timedelta

from judge.digests import sha256_hex, utcnow
from judge.errors import InputError
from judge.store import Store
from judge.types import ROLES, ApiKeyRecord, Role

_KEY = re.compile(r"^jk_([0-9a-f]{12})_([A-Za-z0-9_-]{20,100})$")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.@-]{0,63}$")


@dataclass(frozen=True)
class Principal:
    """Who is calling: the key's id, name (the reviewer name) and role."""

    key_id: str
    name: str
    role: Role


def _hash(salt: str, secret: str) -> str:
    return hmac.new(bytes.fromhex(salt), secret.encode(), hashlib.sha256).hexdigest()


#: The role of a key created without one, once the store has a key (the narrowest API reach).
DEFAULT_ROLE: Role = "reviewer"


def default_role(store: Store) -> Role:
    """The role a new key gets when none is asked for: ``admin`` for the first key of an empty
    store (someone must be able to upload cards and create the other keys), else reviewer."""
    return "admin" if not store.keys() else DEFAULT_ROLE


def create_key(store: Store, name: str, role: str | None = None) -> tuple[Principal, str]:
    """Create a key; return its principal and the plaintext key (never stored, shown once).

    ``role`` None: :func:`default_role` (admin for the first key of an empty store)."""
    if role is None:
        role = default_role(store)
    if not _NAME.match(name):
        raise InputError(
            f"key name {name!r} is not allowed",
            field="name",
            hint="1-64 characters: letters, digits, and _ . @ - (not first)",
        )
    if role not in ROLES:
        raise InputError(
            f"unknown role {role!r}", field="role", hint=f"use one of {', '.join(ROLES)}"
        )
    if store.key_name_taken(name):
        raise InputError(
            f"a key named {name!r} exists already",
            field="name",
            hint="pick another name, or revoke the old key first (`judge keys revoke NAME`)",
        )
    key_id = secrets.token_hex(6)
    secret = secrets.token_urlsafe(32)
    salt = secrets.token_hex(16)
    store.add_key(key_id=key_id, name=name, role=role, salt=salt, hash=_hash(salt, secret))
    return Principal(key_id, name, role), f"jk_{key_id}_{secret}"


def verify_key(store: Store, key: str | None) -> Principal | None:
    """The principal of a valid, unrevoked key; None for anything else."""
    if not key:
        return None
    match = _KEY.match(key.strip())
    if match is None:
        return None
    key_id, secret = match.groups()
    row = store.live_key(key_id)
    if row is None:
        return None
    if not hmac.compare_digest(_hash(row["salt"], secret), row["hash"]):
        return None
    return Principal(key_id, row["name"], row["role"])


def list_keys(store: Store) -> list[ApiKeyRecord]:
    """Every key's id, name, role and dates (never the hash)."""
    return store.keys()


def revoke_key(store: Store, name_or_id: str) -> bool:
    """Revoke a key by name or id (its sessions end too); False when there is no such key."""
    return store.revoke_key(name_or_id)


def _token_hash(token: str) -> str:
    return sha256_hex(token)


def create_session(store: Store, principal: Principal, hours: float = 12.0) -> str:
    """A new page-session token for this key (only its hash is stored)."""
    token = secrets.token_urlsafe(32)
    expires = utcnow() + timedelta(hours=hours)
    store.add_session(
        token_hash=_token_hash(token), key_id=principal.key_id, expires_at=expires.isoformat()
    )
    return token


def verify_session(store: Store, token: str | None) -> Principal | None:
    """The principal of a live session token (its key unrevoked); None otherwise."""
    if not token or len(token) > 200:
        return None
    row = store.session_key(_token_hash(token))
    if row is None or datetime.fromisoformat(row["expires_at"]) <= utcnow():
        return None
    return Principal(row["id"], row["name"], row["role"])


#: Why a session opens nothing: a code (sent to the login page as ``why``) and the words.
SESSION_PROBLEMS = {
    "signed_out": "You are signed out (you signed out, on this tab or another, or your session "
    "was ended): nothing was saved. Sign in again.",
    "revoked": "The API key you signed in with was revoked: nothing was saved. Ask an admin "
    "for a new key, then sign in again.",
    "expired": "Your session expired: nothing was saved. Sign in again.",
}


def session_problem(store: Store, token: str | None) -> str:
    """Why a session token opens nothing: a key of :data:`SESSION_PROBLEMS`."""
    row = store.session_state(_token_hash(token)) if token and len(token) <= 200 else None
    if row is None:
        return "signed_out"
    if row["revoked_at"]:
        return "revoked"
    return "expired"


def end_session(store: Store, token: str | None) -> None:
    """Forget a session token."""
    if token:
        store.end_session(_token_hash(token))


def take_rate_token(store: Store, key_id: str, *, rate: float, burst: int) -> float:
    """Take a request token from API key ``key_id``'s bucket in the store (``rate`` a second,
    up to ``burst``), shared by every service replica on it: 0.0 when the request may go on,
    else the seconds until it may."""
    return store.take_rate_token(key_id, rate=rate, burst=burst, now=time.time())
