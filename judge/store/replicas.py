"""What the replicas of the service share besides jobs: the secrets that sign their forms and a
heartbeat row per replica.

- Signing secrets: a form served by one replica is posted to whichever replica the load
  balancer picks, so every replica signs with the same secret, kept here. The newest signs;
  older ones still verify until they are pruned (a rotation logs nobody out).
- Replica heartbeats: each replica writes ``seen_at`` every few seconds. A replica whose row
  has not been seen for a while is dead (SIGKILL, a machine gone): the job leases and call
  claims its workers held can be taken at once, without waiting for them to expire
  (``judge.store.jobs`` and ``judge.store.coordination`` read this table). A process that
  never writes a row (``judge run``) is judged by its leases alone.

Times are UTC ISO text written by the callers' clocks (kept in step by NTP, as for leases).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from judge.digests import utcnow
from judge.store.backend import Backend


def moment(seconds: float = 0.0) -> str:
    """UTC now plus ``seconds`` as fixed-width ISO text (compares as a string on every
    backend, like the lease columns)."""
    return (utcnow() + timedelta(seconds=seconds)).isoformat(timespec="microseconds")


#: SQL true when the lease or claim owner in column ``{owner}`` (``host:pid:...``) is a worker
#: of a replica process whose every heartbeat row is older than the bound parameter (a
#: ``moment``): the process registered as a replica and none of its rows is fresh. A process
#: that never registered (``judge run``) is never dead by this test.
DEAD_OWNER = (
    "(EXISTS (SELECT 1 FROM replicas r WHERE "
    "substr({owner}, 1, length(r.process) + 1) = r.process || ':') "
    "AND NOT EXISTS (SELECT 1 FROM replicas r WHERE r.seen_at >= ? "
    "AND substr({owner}, 1, length(r.process) + 1) = r.process || ':'))"
)


class ReplicaTables:
    """Signing secrets and replica heartbeats."""

    backend: Backend

    def ping(self) -> None:
        """A round trip to the database (StoreUnavailable when it does not answer)."""
        self.backend.scalar("SELECT 1 AS one")

    # --- signing secrets ---------------------------------------------------------------------
    def signing_secrets(self) -> list[dict[str, Any]]:
        """Every signing secret (id, secret as hex, created_at), newest first."""
        return self.backend.query(
            "SELECT id, secret, created_at FROM signing_secrets ORDER BY created_at DESC, id DESC"
        )

    def add_signing_secret(self, secret_id: str, secret_hex: str) -> None:
        """Store a new signing secret (it signs from now on: the newest wins)."""
        self.backend.insert(
            "signing_secrets",
            {"id": secret_id, "secret": secret_hex, "created_at": moment()},
            conflict="ignore",
        )

    def prune_signing_secrets(self, older_than: str, keep: str) -> int:
        """Forget signing secrets created before ``older_than`` (a moment), never ``keep``
        (the current one); how many."""
        return self.backend.execute(
            "DELETE FROM signing_secrets WHERE created_at < ? AND id <> ?", [older_than, keep]
        )

    # --- replica heartbeats ------------------------------------------------------------------
    def register_replica(self, name: str, process: str) -> None:
        """Record a replica starting (``name``: its lease owners' prefix; ``process``:
        ``host:pid``, the prefix of every owner of that process, call claims included)."""
        now = moment()
        self.backend.insert(
            "replicas",
            {"name": name, "process": process, "started_at": now, "seen_at": now},
            conflict="update",
            key=("name",),
        )

    def beat_replica(self, name: str) -> bool:
        """A replica's heartbeat; False when its row is gone (it registers again)."""
        return (
            self.backend.execute(
                "UPDATE replicas SET seen_at = ? WHERE name = ? AND stopped_at IS NULL",
                [moment(), name],
            )
            == 1
        )

    def stop_replica(self, name: str) -> None:
        """A replica stopping cleanly: marked stopped and dead at once, so that its jobs are
        taken over now rather than when their leases end."""
        self.backend.execute(
            "UPDATE replicas SET stopped_at = ?, seen_at = ? WHERE name = ?",
            [moment(), "0000", name],
        )

    def replicas(self) -> list[dict[str, Any]]:
        """Every replica row (name, process, started_at, seen_at, stopped_at), newest first."""
        return self.backend.query(
            "SELECT name, process, started_at, seen_at, stopped_at FROM replicas "
            "ORDER BY started_at DESC, name"
        )

    def forget_replicas(self, older_than: str) -> int:
        """Drop the rows of replicas not seen since ``older_than`` (a moment) that hold no
        job's lease any more; how many."""
        return self.backend.execute(
            "DELETE FROM replicas WHERE seen_at < ? AND NOT EXISTS (SELECT 1 FROM jobs j "
            "WHERE j.lease_owner IS NOT NULL "
            "AND substr(j.lease_owner, 1, length(replicas.process) + 1) = replicas.process || ':')",
            [older_than],
        )
