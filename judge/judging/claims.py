"""One payment per cache key across processes: a claim taken before calling the provider.

Two workers (threads of one batch, two ``judge serve`` replicas, a replica and a ``judge run``)
that reach the same cache key at once would both pay for the call. The store's unique index on
the cache key keeps one judgment either way; the claim keeps one payment: the first worker
takes a short claim on the key (``Store.claim_call``), renewed while its call is in flight; the
others wait for its judgment and serve it from the store. A worker that dies stops renewing, so
its claim expires within ``ttl_s`` and another worker pays instead; sooner on the same machine,
where a claim whose process is gone is taken over at once (a ``judge run`` killed and started
again does not wait).
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import uuid

from judge.defaults import CALL_CLAIM_S, REPLICA_DEAD_S, env_seconds
from judge.errors import Failure
from judge.store import Store
from judge.types import Judgment

log = logging.getLogger("judge.judging")

#: Seconds between two looks at a key another worker holds.
POLL_S = 0.2


def worker_name() -> str:
    """A name for a worker, unique among processes and machines: ``host:pid:random``."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def dead_here(owner: str) -> bool:
    """Whether ``owner`` (a :func:`worker_name`) was a process of this machine that is gone."""
    host, _, rest = owner.partition(":")
    pid = rest.partition(":")[0]
    if host != socket.gethostname() or not pid.isdigit():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except OSError:  # alive, another user's
        return False
    return False


class CallClaims:
    """The claims one runner holds, renewed in the background while their calls run."""

    def __init__(
        self,
        store: Store,
        owner: str | None = None,
        *,
        ttl_s: float | None = None,
        poll_s: float = POLL_S,
    ) -> None:
        self.store = store
        self.owner = owner or worker_name()
        self.ttl_s = ttl_s or env_seconds("JUDGE_CALL_CLAIM_S", CALL_CLAIM_S)
        #: A claim of a replica whose heartbeat stopped this long ago is taken at once.
        self.dead_after_s = env_seconds("JUDGE_REPLICA_DEAD_S", REPLICA_DEAD_S)
        self.poll_s = poll_s
        self._renewals: dict[str, asyncio.Task[None]] = {}

    async def acquire(self, key: str) -> Judgment | None:
        """Claim ``key``: None once this runner holds the claim (it is to call the provider),
        or the final judgment another worker stored meanwhile (no call needed)."""
        while True:
            if self.store.claim_call(key, self.owner, self.ttl_s, dead_after_s=self.dead_after_s):
                # Another worker may have finished between our cache miss and our claim.
                done = self.store.cached(key)
                if done is not None:
                    self.store.release_call(key, self.owner)
                    return done
                self._renewals[key] = asyncio.get_running_loop().create_task(self._renew(key))
                return None
            holder = self.store.call_claim_owner(key)
            if holder is not None and dead_here(holder):
                self.store.release_call(key, holder)  # its process is gone: take over now
                continue
            await asyncio.sleep(self.poll_s)
            done = self.store.cached(key)
            if done is not None:
                return done

    async def _renew(self, key: str) -> None:
        while True:
            await asyncio.sleep(self.ttl_s / 3)
            try:
                self.store.renew_call_claim(key, self.owner, self.ttl_s)
            except Failure as err:  # the database is away: the claim may lapse, no harm
                log.warning("claim on %s not renewed: %s", key, err)

    def release(self, key: str) -> None:
        """Stop renewing and give up the claim on ``key`` (its judgment is stored, or the
        call was abandoned); a claim that cannot be released lapses on its own."""
        task = self._renewals.pop(key, None)
        if task is not None:
            task.cancel()
        try:
            self.store.release_call(key, self.owner)
        except Failure as err:
            log.warning("claim on %s not released (it lapses in %.0fs): %s", key, self.ttl_s, err)
