"""`ClusterGroupConfigs`: cluster mode's group configs (GROUP config resources, Kafka's `GroupConfig`:
`consumer.*`, `share.*`) in PostgreSQL, the cluster's rather than each node's.

Why: in Kafka group configs live in the metadata log and every broker sees them; a group's coordinator (the
shard owner: session timeouts, heartbeat intervals, the share group's settings) and the leaders of the
partitions it shares (lock duration, delivery-count limit, auto offset reset, isolation) are usually
different nodes, and either may move. So an IncrementalAlterConfigs at any node writes the group's overrides
to the `group_configs` table before it is answered (`write`), and every node reads the whole table at start
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

    def __init__(self, pool: Callable[[], asyncpg.Pool]) -> None:
        #: the state store's pool (a callable: the store opens it after this is made)
        self._pool = pool
        #: told every group's overrides after each read of the table (the broker's ConfigManager adopts them)
        self.on_groups: Callable[[dict[str, dict[str, str]]], None] = lambda groups: None
        #: writes begun here: a table read that overlapped one is not handed on (it may predate the write,
        #: and would undo for a tick what this node answered), the next tick's is
        self._writes = 0

    async def write(self, group_id: str, overrides: dict[str, str]) -> None:
        """Replace a group's overrides (none: its row goes). OSError on failure: the config handlers answer
        it as a failed write."""
        try:
            async with self._pool().acquire() as conn:
                if overrides:
                    await conn.execute(
                        "INSERT INTO group_configs (group_id, configs) VALUES ($1, $2)"
                        " ON CONFLICT (group_id) DO UPDATE SET configs = EXCLUDED.configs",
                        group_id,
                        json.dumps(dict(sorted(overrides.items()))),
                    )
                else:
                    await conn.execute("DELETE FROM group_configs WHERE group_id = $1", group_id)
        except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError) as e:
            raise OSError(errno.EIO, f"the cluster's group configs: {e}") from e

    async def refresh(self, conn: asyncpg.Connection) -> None:
        """Read every group's overrides and hand them on (a lease tick's connection)."""
        writes = self._writes
        rows = await conn.fetch("SELECT group_id, configs FROM group_configs")
        if writes != self._writes:
            return
        groups = {r[0]: {str(k): str(v) for k, v in json.loads(r[1]).items()} for r in rows}
        self.on_groups(groups)
