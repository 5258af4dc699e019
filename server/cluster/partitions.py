"""`PartitionLeases`: one leader per topic partition, by lease, as group shards have one owner (issue 27).

The same machinery as the shard leases (server/cluster/leases.py, docs/cluster.md): a
`partition_lease(topic, partition, owner, epoch, expires_at)` row per partition, judged by the database
clock; acquiring takes only a released or expired row and bumps the epoch, which is the partition's
**leader epoch** (Metadata answers it, appended batches carry it); renewing extends only rows still held at
the believed epoch; a node serves its partitions until 0.9 TTL after the renewal it sent (self-fencing), and
every append is fenced in the database by owner and epoch (cluster_log.py), so a deposed leader — paused,
partitioned, slow — can never append.

Each tick of `ClusterNode` (ttl/10) runs `tick`: renew, release what a failed write gave up, aim at
`ceil(partitions / live nodes)` (take free or expired ones; above it, hand the last ones back, at most
`handover_per_tick` a tick: a measured pace), load newly taken partitions from PostgreSQL in the background
(NOT_LEADER_OR_FOLLOWER meanwhile), refresh the leader map Metadata answers from and the topic registry,
and every `ENDS_EVERY` ticks the log ends of all partitions (lag metrics of partitions led elsewhere).
"""

from __future__ import annotations

import asyncio
import contextlib
import math
from collections.abc import Callable

import asyncpg
import structlog

from groupcoord.server.cluster.cluster_log import ClusterLog, Key
from groupcoord.server.cluster.leases import NodeInfo

log = structlog.get_logger("groupcoord.cluster")

#: the share of the lease this node trusts its own clock for (as for shards, node.py)
TRUST = 0.9
#: the log ends of partitions led elsewhere (lag metrics) are re-read every this many ticks (2 s by default)
ENDS_EVERY = 4


async def renew(conn: asyncpg.Connection, node_id: int, held: dict[Key, int], ttl_ms: int) -> dict[Key, int]:
    if not held:
        return {}
    # in key order, the order the group commit locks lease rows in (append_batcher.py): a deadlock between
    # the two is then unlikely, and one that still happens is retried by the group commit
    keys = sorted(held)
    rows = await conn.fetch(
        "UPDATE partition_lease l SET expires_at = now() + make_interval(secs => $5::float8 / 1000)"
        " FROM unnest($2::text[], $3::int[], $4::bigint[]) AS h(topic, partition, epoch)"
        " WHERE l.topic = h.topic AND l.partition = h.partition AND l.epoch = h.epoch AND l.owner = $1"
        "   AND l.expires_at > now()"
        " RETURNING l.topic, l.partition, l.epoch",
        node_id,
        [k[0] for k in keys],
        [k[1] for k in keys],
        [held[k] for k in keys],
        ttl_ms,
    )
    return {(r[0], r[1]): r[2] for r in rows}


async def acquire(conn: asyncpg.Connection, node_id: int, count: int, ttl_ms: int) -> dict[Key, int]:
    """Take up to `count` released or expired partitions, bumping each one's leader epoch."""
    if count <= 0:
        return {}
    rows = await conn.fetch(
        "UPDATE partition_lease l SET owner = $1, epoch = l.epoch + 1,"
        " expires_at = now() + make_interval(secs => $3::float8 / 1000)"
        " WHERE (l.topic, l.partition) IN ("
        "   SELECT topic, partition FROM partition_lease WHERE owner IS NULL OR expires_at <= now()"
        "   ORDER BY topic, partition LIMIT $2 FOR UPDATE SKIP LOCKED)"
        "   AND (l.owner IS NULL OR l.expires_at <= now())"
        " RETURNING l.topic, l.partition, l.epoch",
        node_id,
        count,
        ttl_ms,
    )
    return {(r[0], r[1]): r[2] for r in rows}


async def release(conn: asyncpg.Connection, node_id: int, held: dict[Key, int]) -> None:
    """Give partitions back now; an append in flight holds the row FOR SHARE, so this waits for it."""
    if not held:
        return
    await conn.execute(
        "UPDATE partition_lease l SET owner = NULL, expires_at = '-infinity'"
        " FROM unnest($2::text[], $3::int[], $4::bigint[]) AS h(topic, partition, epoch)"
        " WHERE l.topic = h.topic AND l.partition = h.partition AND l.epoch = h.epoch AND l.owner = $1",
        node_id,
        [k[0] for k in held],
        [k[1] for k in held],
        list(held.values()),
    )


async def leaders(conn: asyncpg.Connection) -> dict[Key, tuple[NodeInfo, int]]:
    """(topic, partition) -> (its leader, leader epoch), for unexpired leases only."""
    rows = await conn.fetch(
        "SELECT l.topic, l.partition, l.epoch, n.node_id, n.host, n.port"
        " FROM partition_lease l JOIN nodes n ON n.node_id = l.owner WHERE l.expires_at > now()"
    )
    return {(r[0], r[1]): (NodeInfo(r[3], r[4], r[5]), r[2]) for r in rows}


class PartitionLeases:
    """This node's led partitions: leases, loading, self-fencing, and the leader map for Metadata."""

    def __init__(
        self, *, node: NodeInfo, logs: ClusterLog, lease_ttl_ms: int, handover_per_tick: int = 10
    ) -> None:
        self.node = node
        self.logs = logs
        self.ttl_ms = lease_ttl_ms
        self.handover_per_tick = handover_per_tick
        self.held: dict[Key, int] = {}  # partition -> leader epoch, serving or loading
        self._given_up: dict[Key, int] = {}  # released at the next tick (a write found the lease in doubt)
        self._leaders: dict[Key, tuple[NodeInfo, int]] = {}
        self._valid_until = 0.0
        self._loads: set[asyncio.Task[None]] = set()
        self.takeovers = 0  # partitions loaded since start (tests, metrics)
        self._ticks = 0
        #: told the partitions this node stopped leading (lost, handed over, self-fenced, a fenced append):
        #: the share service drops their share states at once (server/cluster_setup.py)
        self.on_dropped: Callable[[set[Key]], None] = lambda keys: None
        logs.on_lost = self._lost

    def _valid(self) -> bool:
        return asyncio.get_running_loop().time() < self._valid_until

    def leader_of(self, topic: str, partition: int) -> tuple[NodeInfo, int] | None:
        """The partition's live leader and leader epoch; None while nobody holds it (being failed over)."""
        key = (topic, partition)
        if key in self.held and self._valid():
            return self.node, self.held[key]
        found = self._leaders.get(key)
        return None if found is None or found[0].node_id == self.node.node_id else found

    def _lost(self, key: Key) -> None:
        epoch = self.held.pop(key, None)
        if epoch is not None:
            self._given_up[key] = epoch
        self.on_dropped({key})

    async def tick(self, conn: asyncpg.Connection, started: float, live: int) -> None:
        """One round (see the module docstring); `started` is the loop time the tick began at."""
        renewed = await renew(conn, self.node.node_id, self.held, self.ttl_ms)
        lost = set(self.held) - set(renewed)
        if lost:
            log.warning("partition leases lost", partitions=sorted(lost))
            self._drop(lost)
        if renewed:
            self._valid_until = started + TRUST * self.ttl_ms / 1000
        if self._given_up:
            given, self._given_up = self._given_up, {}
            await release(conn, self.node.node_id, given)
        await self.logs.refresh_topics(conn)
        total = await conn.fetchval("SELECT count(*) FROM partition_lease")
        target = math.ceil(total / max(1, live))
        if len(self.held) < target:
            got = await acquire(conn, self.node.node_id, target - len(self.held), self.ttl_ms)
            if got:
                if not renewed:
                    self._valid_until = started + TRUST * self.ttl_ms / 1000
                self.held.update(got)
                task = asyncio.get_running_loop().create_task(self._load(got), name="partition-load")
                self._loads.add(task)
                task.add_done_callback(self._loads.discard)
        elif len(self.held) > target:
            ranked = sorted(self.held.items())  # the last ones go first, a few per tick (a measured pace)
            extra = dict(ranked[max(target, len(ranked) - self.handover_per_tick) :])
            log.info("handing partitions over to newer nodes", partitions=sorted(extra))
            self._drop(set(extra))
            await release(conn, self.node.node_id, extra)
        self._leaders = await leaders(conn)
        self._ticks += 1
        if self._ticks % ENDS_EVERY == 1:
            await self.logs.refresh_ends(conn)

    def check_valid(self) -> None:
        """Self-fencing: past the trusted share of the lease, stop leading everything at once."""
        if self.held and not self._valid():
            log.error("partition leases not renewed in time: dropping every partition (self-fencing)")
            self._drop(set(self.held))

    async def _load(self, got: dict[Key, int]) -> None:
        for key, epoch in sorted(got.items()):
            try:
                plog = await self.logs.read_partition(key, epoch)
            except Exception as e:
                log.error("partition load failed: giving it back", partition=key, error=repr(e))
                self._lost(key)
                continue
            if self.held.get(key) == epoch:  # still ours at that epoch
                self.logs.install(key, epoch, plog)
                self.takeovers += 1
                log.info(
                    "partition led", topic=key[0], partition=key[1], epoch=epoch, end=plog.log_end_offset
                )

    def _drop(self, keys: set[Key]) -> None:
        for key in keys:
            self.held.pop(key, None)
            self.logs.drop_partition(key)
        if keys:
            self.on_dropped(keys)

    async def stop(self, conn: asyncpg.Connection | None) -> None:
        """Planned handover: stop serving, then release (waits for appends in flight, which hold the rows)."""
        for task in list(self._loads):
            task.cancel()
        held = dict(self.held)
        self._drop(set(held))
        if conn is not None:
            with contextlib.suppress(Exception):
                await release(conn, self.node.node_id, {**held, **self._given_up})
