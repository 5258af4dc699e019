"""`ClusterGroupConfigs`: cluster mode's group configs (GROUP config resources, Kafka's `GroupConfig`:
`consumer.*`, `share.*`) in PostgreSQL, the cluster's rather than each node's.

Why: in Kafka group configs live in the metadata log and every broker sees them; a group's coordinator (the
shard owner: session timeouts, heartbeat intervals, the share group's settings) and the leaders of the
partitions it shares (lock duration, delivery-count limit, auto offset reset, isolation) are usually
different nodes, and either may move. So an IncrementalAlterConfigs at any node reads the group's row, applies
the change and writes it in one transaction before it is answered (`update`: two nodes changing one group at
once cannot lose either change), and every node reads the whole table at start
and at each lease tick (`refresh`, a few milliseconds later at most a tick) and hands the groups whose
overrides changed to its ConfigManager (`on_groups`), which tells the coordinator and the share partitions.
Every node holds every group's overrides, so a node that takes over a shard or a partition already has them.
The table is small (only groups with overrides have a row), so each tick reads it whole: a per-row version
from a sequence could miss a row whose transaction commits after a later one's.
"""

from __future__ import annotations

import errno
import json
from collections.abc import Callable

import asyncpg


class ClusterGroupConfigs:
    """The `group_configs` table: group id -> its overrides (config name -> value)."""

    def __init__(
        self, pool: Callable[[], asyncpg.Pool], table: str = "group_configs", key: str = "group_id"
    ) -> None:
        #: the state store's pool (a callable: the store opens it after this is made)
        self._pool = pool
        #: the table and its key column: `group_configs` (group_id), or `client_metrics_configs` (name) for
        #: the CLIENT_METRICS subscriptions, kept the same way (constants, never from a request)
        self._table, self._key = table, key
        #: told every group's overrides after each read of the table (the broker's ConfigManager adopts them)
        self.on_groups: Callable[[dict[str, dict[str, str]]], None] = lambda groups: None
        #: writes begun here: a table read that overlapped one is not handed on (it may predate the write,
        #: and would undo for a tick what this node answered), the next tick's is
        self._writes = 0

    async def update(
        self, group_id: str, decide: Callable[[dict[str, str]], dict[str, str] | None]
    ) -> dict[str, str] | None:
        """The group's row read FOR UPDATE (an absent row is locked by the insert's key instead: two first
        writers meet at the primary key, and the loser's transaction is retried), `decide` on it, its answer
        written (none: the row goes). Returns the overrides written; None when `decide` wrote nothing.
        OSError on failure: the config handlers answer it as a failed write."""
        self._writes += 1
        for _ in range(3):
            try:
                async with self._pool().acquire() as conn, conn.transaction():
                    row = await conn.fetchval(
                        f"SELECT configs FROM {self._table} WHERE {self._key} = $1 FOR UPDATE", group_id
                    )
                    current = {} if row is None else {str(k): str(v) for k, v in json.loads(row).items()}
                    wanted = decide(current)
                    if wanted is None:
                        return None
                    if not wanted:
                        await conn.execute(f"DELETE FROM {self._table} WHERE {self._key} = $1", group_id)
                    elif row is None:
                        await conn.execute(
                            f"INSERT INTO {self._table} ({self._key}, configs) VALUES ($1, $2)",
                            group_id,
                            json.dumps(dict(sorted(wanted.items()))),
                        )
                    else:
                        await conn.execute(
                            f"UPDATE {self._table} SET configs = $2 WHERE {self._key} = $1",
                            group_id,
                            json.dumps(dict(sorted(wanted.items()))),
                        )
                    return wanted
            except asyncpg.UniqueViolationError:
                continue  # another node inserted the group's first row meanwhile: read it and decide again
            except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError) as e:
                raise OSError(errno.EIO, f"the cluster's {self._table}: {e}") from e
        raise OSError(errno.EIO, "the cluster's group configs: the group's row kept changing")

    async def refresh(self, conn: asyncpg.Connection) -> None:
        """Read every group's overrides and hand them on (a lease tick's connection)."""
        writes = self._writes
        rows = await conn.fetch(f"SELECT {self._key}, configs FROM {self._table}")
        if writes != self._writes:
            return
        groups = {r[0]: {str(k): str(v) for k, v in json.loads(r[1]).items()} for r in rows}
        self.on_groups(groups)
