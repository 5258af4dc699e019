"""`ClusterTopics`: cluster mode's topic registry in PostgreSQL (issue 27), the base of `ClusterLog`.

Why a room of its own: the registry (which topics exist, with how many partitions and which configs) is
shared by every node and changes rarely, while the data plane (`cluster_log.py`, `append_batcher.py`)
serves the partitions led here; apart, each file stays readable. `topics` holds name, id, partition count
and the configs given at creation; every node reads it at start and at every lease tick (`refresh_topics`);
creation inserts the topic and one lease row per partition in one transaction (a unique collision key
refuses `a.b` next to `a_b` across nodes, as Kafka does). Topic configs are the `configs` column
(`set_topic_configs`; every node adopts them through `on_topics` at each registry read). `refresh_ends`
reads every partition's log start and end for the lag of partitions led elsewhere.
"""

from __future__ import annotations

import errno
import json
import uuid
from collections.abc import Callable

import asyncpg

from groupcoord.protocol.errors import ErrorCode
from groupcoord.server.log.errors import LogError
from groupcoord.server.log.manager import LogManager
from groupcoord.server.log.topics import TopicInfo, collision_key, new_topic_id

Key = tuple[str, int]


class ClusterTopics(LogManager):
    """The registry half of `ClusterLog` (which sets these attributes and serves the partitions)."""

    _pool: asyncpg.Pool | None
    #: (log start, log end) of every partition as PostgreSQL held it at the last `refresh_ends`
    _ends: dict[Key, tuple[int, int]]
    #: told the registry (name -> TopicInfo, configs included) after every read of it: the broker hands
    #: each topic's shared overrides to its ConfigManager, so every node applies the same configs
    on_topics: Callable[[dict[str, TopicInfo]], None]

    @property
    def pool(self) -> asyncpg.Pool:
        """Its own pool, apart from the state store's: produce traffic on many partitions must never keep the
        lease ticks (which renew on the store's pool) or the group writes waiting for a connection."""
        if self._pool is None:
            raise LogError(ErrorCode.KAFKA_STORAGE_ERROR, "the cluster log is not open")
        return self._pool

    def drop_partition(self, key: Key) -> None:
        """Stop serving `key` (`ClusterLog` serves partitions; the registry drops those of topics gone)."""
        raise NotImplementedError

    async def refresh_topics(self, conn: asyncpg.Connection) -> None:
        """Adopt the registry as PostgreSQL has it; partitions of topics gone are dropped here. Under the
        registry lock: a read that began before a local creation committed must not undo it."""
        async with self._registry_lock:
            await self._refresh(conn)

    async def _refresh(self, conn: asyncpg.Connection) -> None:
        rows = await conn.fetch("SELECT name, topic_id, partitions, configs FROM topics")
        topics = {
            r[0]: TopicInfo(r[0], r[1], r[2], tuple((str(k), str(v)) for k, v in json.loads(r[3])))
            for r in rows
        }
        self._topics = topics
        self._by_id = {t.topic_id: t for t in topics.values()}
        for key in [k for k in self._logs if k[0] not in topics or k[1] >= topics[k[0]].partitions]:
            self.drop_partition(key)
        self.on_topics(topics)

    async def set_topic_configs(self, name: str, topic_id: str, overrides: dict[str, str]) -> None:
        """A topic's overrides (CreateTopics configs, IncrementalAlterConfigs, AlterConfigs) into the shared
        registry, for the topic id they were set for; every node adopts them at its next registry read.
        OSError on failure: the config handlers answer it as a failed write."""
        try:
            async with self.pool.acquire() as conn:
                await conn.execute(
                    "UPDATE topics SET configs = $3 WHERE name = $1 AND topic_id = $2",
                    name,
                    uuid.UUID(topic_id),
                    json.dumps(sorted([k, v] for k, v in overrides.items())),
                )
        except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError, LogError) as e:
            raise OSError(errno.EIO, f"the cluster's topic registry: {e}") from e
        info = self._topics.get(name)
        if info is not None and str(info.topic_id) == topic_id:
            new_info = TopicInfo(name, info.topic_id, info.partitions, tuple(sorted(overrides.items())))
            self._topics = {**self._topics, name: new_info}
            self._by_id[info.topic_id] = new_info

    async def create_topic(
        self, name: str, partitions: int, configs: tuple[tuple[str, str], ...] = ()
    ) -> uuid.UUID:
        async with self._registry_lock:
            self.validate_new_topic(name, partitions)
            info = TopicInfo(name, new_topic_id(), partitions, configs)
            try:
                async with self.pool.acquire() as conn, conn.transaction():
                    made = await conn.fetchval(
                        "INSERT INTO topics (name, topic_id, partitions, configs, collision_key)"
                        " VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING RETURNING name",
                        name,
                        info.topic_id,
                        partitions,
                        json.dumps([list(c) for c in configs]),
                        collision_key(name),
                    )
                    if made is None:  # another node made it (or a colliding name) first
                        await self._refresh(conn)
                    else:
                        await conn.execute(
                            "INSERT INTO partition_lease (topic, partition)"
                            " SELECT $1, generate_series(0, $2::int - 1)",
                            name,
                            partitions,
                        )
            except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError) as e:
                raise LogError(ErrorCode.KAFKA_STORAGE_ERROR, f"cannot register {name!r}: {e}") from e
            if made is None:
                self.validate_new_topic(name, partitions)  # names the conflict
                raise LogError(ErrorCode.TOPIC_ALREADY_EXISTS, f"topic {name!r} already exists")
            self._topics = {**self._topics, name: info}
            self._by_id[info.topic_id] = info
            return info.topic_id

    async def create_partitions(self, name: str, total: int) -> None:
        async with self._registry_lock:
            info = self._topics.get(name)
            if info is None:
                raise LogError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"unknown topic {name!r}")
            async with self.pool.acquire() as conn, conn.transaction():
                old = await conn.fetchval("SELECT partitions FROM topics WHERE name = $1 FOR UPDATE", name)
                if old is None:
                    raise LogError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"unknown topic {name!r}")
                if total <= old:
                    raise LogError(
                        ErrorCode.INVALID_PARTITIONS,
                        f"topic {name!r} has {old} partitions; new count must be larger",
                    )
                await conn.execute("UPDATE topics SET partitions = $2 WHERE name = $1", name, total)
                await conn.execute(
                    "INSERT INTO partition_lease (topic, partition)"
                    " SELECT $1, generate_series($2::int, $3::int - 1)",
                    name,
                    old,
                    total,
                )
            new_info = TopicInfo(name, info.topic_id, total, info.configs)
            self._topics = {**self._topics, name: new_info}
            self._by_id[info.topic_id] = new_info

    async def delete_topic(self, name: str) -> None:
        """Forget the topic everywhere: its leases vanish, so its leaders' next writes are fenced."""
        async with self._registry_lock:
            info = self._topics.get(name)
            if info is None:
                raise LogError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"unknown topic {name!r}")
            async with self.pool.acquire() as conn, conn.transaction():
                await conn.execute("DELETE FROM partition_lease WHERE topic = $1", name)
                await conn.execute("DELETE FROM record_batches WHERE topic = $1", name)
                await conn.execute("DELETE FROM topics WHERE name = $1", name)
            self._topics = {k: v for k, v in self._topics.items() if k != name}
            self._by_id.pop(info.topic_id, None)
            self._configs.pop(name, None)
            for key in [k for k in self._logs if k[0] == name]:
                self.drop_partition(key)

    async def refresh_ends(self, conn: asyncpg.Connection) -> None:
        """Read every partition's log start and end (one index probe each) for `watermarks`: a node
        coordinates groups whose partitions other nodes lead, and reports their lag (issue 27 item 4)."""
        rows = await conn.fetch(
            "SELECT l.topic, l.partition, l.log_start_offset, coalesce((SELECT b.last_offset + 1"
            "   FROM record_batches b WHERE b.topic = l.topic AND b.partition = l.partition"
            "   ORDER BY b.base_offset DESC LIMIT 1), 0)"
            " FROM partition_lease l"
        )
        self._ends = {(r[0], r[1]): (min(r[2], r[3]), r[3]) for r in rows}

    def watermarks(self, topic: str, partition: int) -> tuple[int, int] | None:
        """Exact for the partitions led here; for the others as of the last `refresh_ends` (a lease tick)."""
        return super().watermarks(topic, partition) or self._ends.get((topic, partition))
