"""What processes sharing one store coordinate through it: claims on cache keys (one worker
pays for a call, the others wait for its judgment) and per-key rate buckets.

Both live in the database, not in a process: two ``judge serve`` replicas (or a replica and a
``judge run``) on one PostgreSQL database, or on one SQLite file, see the same claims and the
same buckets. Times are UTC ISO text (claims) and Unix seconds (buckets) from the callers'
clocks, which a deployment keeps in step (NTP).
"""

from __future__ import annotations

from datetime import timedelta

from judge.digests import utcnow
from judge.store.backend import Backend
from judge.store.replicas import DEAD_OWNER


def _iso_in(seconds: float) -> str:
    return (utcnow() + timedelta(seconds=seconds)).isoformat(timespec="microseconds")


class CoordinationTables:
    """Call claims and rate buckets."""

    backend: Backend

    # --- claims on cache keys ----------------------------------------------------------------
    def claim_call(
        self, cache_key: str, owner: str, ttl_s: float, *, dead_after_s: float | None = None
    ) -> bool:
        """Take the claim on ``cache_key`` for ``ttl_s`` seconds: True when ``owner`` holds it
        now (it was free, expired, or ``owner``'s already), False while another holds it.
        ``dead_after_s``: a claim held by a worker of a replica whose heartbeat is older than
        this (``judge.store.replicas``) is taken too, before it expires."""
        dead, args = "", [cache_key, owner, _iso_in(ttl_s), _iso_in(0)]
        if dead_after_s is not None:
            dead = " OR " + DEAD_OWNER.format(owner="call_claims.owner")
            args.append(_iso_in(-dead_after_s))
        changed = self.backend.execute(
            "INSERT INTO call_claims (cache_key, owner, expires_at) VALUES (?, ?, ?) "
            "ON CONFLICT (cache_key) DO UPDATE SET owner = excluded.owner, "
            "expires_at = excluded.expires_at "
            "WHERE call_claims.expires_at < ? OR call_claims.owner = excluded.owner" + dead,
            args,
        )
        return changed == 1

    def renew_call_claim(self, cache_key: str, owner: str, ttl_s: float) -> bool:
        """Extend ``owner``'s claim (a call still in flight); False when it is no longer held."""
        changed = self.backend.execute(
            "UPDATE call_claims SET expires_at = ? WHERE cache_key = ? AND owner = ?",
            [_iso_in(ttl_s), cache_key, owner],
        )
        return changed == 1

    def call_claim_owner(self, cache_key: str) -> str | None:
        """Who holds the claim on ``cache_key`` (expired or not), or None."""
        value = self.backend.scalar(
            "SELECT owner FROM call_claims WHERE cache_key = ?", [cache_key]
        )
        return None if value is None else str(value)

    def release_call(self, cache_key: str, owner: str) -> None:
        """Give up ``owner``'s claim (its judgment is stored, or the call was abandoned)."""
        self.backend.execute(
            "DELETE FROM call_claims WHERE cache_key = ? AND owner = ?", [cache_key, owner]
        )

    # --- rate buckets ------------------------------------------------------------------------
    def take_rate_token(self, key_id: str, *, rate: float, burst: int, now: float) -> float:
        """Take one token from ``key_id``'s bucket (``rate`` tokens a second up to ``burst``):
        0.0 when one was there, else the seconds until one will be (nothing taken). The read
        and the write are one locked step, so replicas sharing the store share the bucket."""
        with self.backend.transaction(lock=True):
            self.backend.insert(
                "rate_buckets",
                {"key_id": key_id, "tokens": float(burst), "stamp": now},
                conflict="ignore",
            )
            row = self.backend.query_one(
                f"SELECT tokens, stamp FROM rate_buckets WHERE key_id = ?{self.backend.for_update}",
                [key_id],
            )
            assert row is not None
            stamp = max(now, float(row["stamp"]))
            tokens = min(float(burst), float(row["tokens"]) + (stamp - float(row["stamp"])) * rate)
            wait = 0.0
            if tokens >= 1.0:
                tokens -= 1.0
            else:
                wait = (1.0 - tokens) / rate
            self.backend.execute(
                "UPDATE rate_buckets SET tokens = ?, stamp = ? WHERE key_id = ?",
                [tokens, stamp, key_id],
            )
        return wait
