"""``/v1/whoami``: the caller's key."""

from __future__ import annotations

from fastapi import APIRouter

from judge.api import schemas as s
from judge.api.deps import Caller, Route, resource


def whoami(caller: Caller) -> s.WhoAmI:
    """The caller's key name and role."""
    return s.WhoAmI(name=caller.name, role=caller.role)


def router() -> APIRouter:
    """The access routes."""
    return resource("access", Route("GET", "/whoami", whoami, s.WhoAmI))
