"""API keys (only a salted hash is kept) and review-page sessions (hashed tokens)."""

from __future__ import annotations

from typing import Any

from judge.digests import now_iso
from judge.store.backend import Backend
from judge.types import ApiKeyRecord


class AccessTables:
    """Keys and sessions."""

    backend: Backend

    def key_name_taken(self, name: str) -> bool:
        """Whether a key (revoked or not) has this name."""
        row = self.backend.query_one("SELECT 1 AS x FROM api_keys WHERE name = ?", [name])
        return row is not None

    def add_key(self, *, key_id: str, name: str, role: str, salt: str, hash: str) -> None:
        """Store a new key's salted hash (DuplicateError when the name or id is taken)."""
        self.backend.insert(
            "api_keys",
            {
                "id": key_id,
                "name": name,
                "role": role,
                "salt": salt,
                "hash": hash,
                "created_at": now_iso(),
            },
        )

    def live_key(self, key_id: str) -> dict[str, Any] | None:
        """An unrevoked key's name, role, salt and hash; None when unknown or revoked."""
        return self.backend.query_one(
            "SELECT name, role, salt, hash FROM api_keys WHERE id = ? AND revoked_at IS NULL",
            [key_id],
        )

    def keys(self) -> list[ApiKeyRecord]:
        """Every key, oldest first (never the hash)."""
        rows = self.backend.query(
            "SELECT id, name, role, created_at, revoked_at FROM api_keys ORDER BY created_at"
        )
        return [ApiKeyRecord.model_validate(r) for r in rows]

    def revoke_key(self, name_or_id: str) -> bool:
        """Revoke a live key by name or id, which ends its sessions (a session of a revoked
        key opens nothing; its row stays so that its browser is told why); False when there is
        none."""
        with self.backend.transaction(lock=True):
            row = self.backend.query_one(
                "SELECT id FROM api_keys WHERE (name = ? OR id = ?) AND revoked_at IS NULL",
                [name_or_id, name_or_id],
            )
            if row is None:
                return False
            self.backend.execute(
                "UPDATE api_keys SET revoked_at = ? WHERE id = ?", [now_iso(), row["id"]]
            )
        return True

    def add_session(self, *, token_hash: str, key_id: str, expires_at: str) -> None:
        """Store a page session (only the token's hash)."""
        self.backend.insert(
            "sessions",
            {
                "token_hash": token_hash,
                "key_id": key_id,
                "created_at": now_iso(),
                "expires_at": expires_at,
            },
        )

    def session_key(self, token_hash: str) -> dict[str, Any] | None:
        """The key (id, name, role) and expiry of a session whose key is not revoked."""
        return self.backend.query_one(
            "SELECT k.id, k.name, k.role, s.expires_at FROM sessions s JOIN api_keys k "
            "ON k.id = s.key_id WHERE s.token_hash = ? AND k.revoked_at IS NULL",
            [token_hash],
        )

    def session_state(self, token_hash: str) -> dict[str, Any] | None:
        """A session's expiry and its key's revocation time (None: no such session, e.g.
        signed out), whether or not it is still valid."""
        return self.backend.query_one(
            "SELECT s.expires_at, k.revoked_at FROM sessions s JOIN api_keys k "
            "ON k.id = s.key_id WHERE s.token_hash = ?",
            [token_hash],
        )

    def end_session(self, token_hash: str) -> None:
        """Forget a session."""
        self.backend.execute("DELETE FROM sessions WHERE token_hash = ?", [token_hash])
