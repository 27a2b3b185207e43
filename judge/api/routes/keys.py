"""``/v1/keys``: create, list and revoke API keys (admin keys only; see judge/api/roles.py)."""

from __future__ import annotations

from fastapi import APIRouter

import judge.service
from judge.api import schemas as s
from judge.api.deps import Caller, Db, Route, resource
from judge.errors import NotFoundError


def keys(caller: Caller, store: Db) -> s.KeyList:
    """Every key, oldest first (never a key or its hash)."""
    return s.KeyList(keys=judge.service.list_keys(store))


def create_key(body: s.KeyCreate, caller: Caller, store: Db) -> s.KeyCreated:
    """Create a key; the response holds the plaintext key, shown this once."""
    principal, key = judge.service.create_key(store, body.name, body.role)
    return s.KeyCreated(id=principal.key_id, name=principal.name, role=principal.role, key=key)


def revoke_key(name_or_id: str, caller: Caller, store: Db) -> s.KeyList:
    """Revoke a key by name or id (its page sessions end too); returns the keys left."""
    if not judge.service.revoke_key(store, name_or_id):
        raise NotFoundError(f"no active key named or with id {name_or_id!r}")
    return s.KeyList(keys=judge.service.list_keys(store))


def router() -> APIRouter:
    """The key routes."""
    return resource(
        "access",
        Route("GET", "/keys", keys, s.KeyList),
        Route("POST", "/keys", create_key, s.KeyCreated, status=201),
        Route("DELETE", "/keys/{name_or_id}", revoke_key, s.KeyList, errors=(404,)),
    )
