"""The secret that signs the review page's forms, shared by every replica through the store.

A login form served by one replica is posted to whichever replica the load balancer picks: both
must know the secret that signed it. The secrets live in the store's ``signing_secrets`` table
(``judge.store.replicas``): the newest signs, and every one replaced less than the grace period
ago verifies. A replica that finds the newest older than the rotation period adds a new one
(replicas racing add one each: both verify, the newest signs), so a rotation logs nobody out
and refuses no form served before it; ``judge keys rotate-secret`` rotates at once
(``--drop-old``: forms signed before are refused from then on, e.g. after a leak).

A replica keeps the secret it signs with for a few seconds (``CACHE_S``) and verifies a posted
form against the secrets in the store at that moment (a login is rare; a secret another
replica just added, or one just dropped, counts at once).
"""

from __future__ import annotations

import logging
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from judge.defaults import env_seconds
from judge.digests import utcnow
from judge.store import Store

log = logging.getLogger("judge.service.signing")

#: Seconds a signing secret signs before a replica replaces it (JUDGE_SECRET_ROTATE_S).
ROTATE_S = 7 * 24 * 3600.0
#: Seconds a replaced secret still verifies (JUDGE_SECRET_GRACE_S): longer than a login form
#: lives (its nonce cookie lasts an hour).
GRACE_S = 24 * 3600.0
#: Seconds a replica keeps the secret it signs with before reading it again.
CACHE_S = 5.0


@dataclass(frozen=True)
class SigningKeys:
    """The secret that signs now, and every secret that verifies (the signing one first)."""

    current: bytes
    accepted: tuple[bytes, ...]


def _age(created_at: str) -> float:
    return (utcnow() - datetime.fromisoformat(created_at)).total_seconds()


def signing_keys(
    store: Store, *, rotate_s: float | None = None, grace_s: float | None = None
) -> SigningKeys:
    """The store's signing secrets; a first one is made, and a new one when the newest is
    older than ``rotate_s``. A replaced secret verifies for ``grace_s`` after it was replaced
    (the next one's creation), then it is pruned."""
    rotate = rotate_s or env_seconds("JUDGE_SECRET_ROTATE_S", ROTATE_S)
    grace = grace_s or env_seconds("JUDGE_SECRET_GRACE_S", GRACE_S)
    rows = store.signing_secrets()
    if not rows or _age(rows[0]["created_at"]) > rotate:
        if rows:
            log.info("signing secret %s is over %.0f s old: rotating", rows[0]["id"], rotate)
        store.add_signing_secret("sk-" + secrets.token_hex(8), secrets.token_hex(32))
        rows = store.signing_secrets()
    live = [rows[0]]
    for older, newer in zip(rows[1:], rows, strict=False):
        if _age(newer["created_at"]) > grace:
            break  # replaced longer ago than the grace period, and so is every older one
        live.append(older)
    if len(live) < len(rows):
        store.prune_signing_secrets(live[-1]["created_at"], keep=rows[0]["id"])
    return SigningKeys(
        current=bytes.fromhex(rows[0]["secret"]),
        accepted=tuple(bytes.fromhex(r["secret"]) for r in live),
    )


def rotate_secret(store: Store, *, drop_old: bool = False) -> str:
    """Add a new signing secret now (every replica signs with it within ``CACHE_S`` seconds);
    ``drop_old``: forget every other one (forms signed before are refused).
    Returns the new secret's id."""
    secret_id = "sk-" + secrets.token_hex(8)
    store.add_signing_secret(secret_id, secrets.token_hex(32))
    if drop_old:
        store.prune_signing_secrets("9999", keep=secret_id)
    return secret_id


class SharedSecret:
    """A replica's view of the signing secrets: the one to sign with, kept ``CACHE_S``
    seconds; those that verify, read from the store at each check."""

    def __init__(self, db: str | Path, *, cache_s: float = CACHE_S) -> None:
        self.db = db
        self.cache_s = cache_s
        self._keys: SigningKeys | None = None
        self._read_at = 0.0
        self._lock = threading.Lock()

    def _load(self, fresh: bool) -> SigningKeys:
        with self._lock:
            stale = time.monotonic() - self._read_at > self.cache_s
            if self._keys is None or stale or fresh:
                with Store(self.db) as store:
                    self._keys = signing_keys(store)
                self._read_at = time.monotonic()
            return self._keys

    def current(self) -> bytes:
        """The secret to sign with now."""
        return self._load(False).current

    def verify(self, check: Callable[[bytes], bool]) -> bool:
        """Whether ``check`` holds for one of the secrets the store accepts now."""
        return any(check(secret) for secret in self._load(True).accepted)
