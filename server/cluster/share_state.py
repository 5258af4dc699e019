"""`ClusterShareState`: cluster mode's share-partition state in PostgreSQL, under the partition leases (the
`ShareHome` of server/share/home.py; docs/cluster.md "Share groups").

Why this shape: Kafka serves a share partition from the topic partition's leader (SharePartitionManager
beside the replica manager) and keeps its durable state (SPSO and the in-flight records' states and delivery
counts, never the acquisitions) with the share coordinator. Here:

* **One row per (topic id, partition, group)** in `share_partition_state`, the snapshot JSON the single-node
  stores keep (`encode_share_record`).
* **Every write of a leader is fenced** as cluster_log.py's appends are: in one transaction the partitions'
  lease rows are locked `FOR SHARE` only where `owner = me and epoch = e and expires_at > now()`, `e` being
  the leader epoch the states were loaded at; rows of partitions not so held are not written and answer
  NOT_LEADER_OR_FOLLOWER (the service then drops the partition from memory). A takeover's lease UPDATE waits
  for such a write (and then loads it) or comes first (and the write writes nothing): a deposed leader can
  never write share state.
* **Admin calls change the stored state directly** (Alter/DeleteShareGroupOffsets, DeleteGroups, on the
  group's coordinator, whoever leads the partitions): each bumps the row's `generation` (a deletion leaves the
  row with value NULL, so the bump survives) and sends `NOTIFY groupcoord_share_state`; leaders listen and
  read the row again. A leader's write carries the generation it read and writes only over that one (else
  FENCED_STATE_EPOCH, as Kafka's share coordinator answers a write of an older state epoch), so a leader that
  had not heard yet cannot write an old state back.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import uuid
from collections.abc import Callable, Mapping, Sequence

import asyncpg

from groupcoord.protocol.errors import ErrorCode
from groupcoord.server.cluster.cluster_log import ClusterLog
from groupcoord.server.coordinator.records import (
    SharePartitionRecord,
    SharePartitionValue,
    decode_share_record,
    encode_share_record,
)

log = logging.getLogger(__name__)

PartitionKey = tuple[str, str, int]
TopicPartition = tuple[str, int]
CHANNEL = "groupcoord_share_state"

_FENCE = """
SELECT l.topic, l.partition FROM partition_lease l
JOIN unnest($2::text[], $3::int[], $4::bigint[]) AS f(topic, partition, epoch)
  ON l.topic = f.topic AND l.partition = f.partition AND l.epoch = f.epoch
WHERE l.owner = $1 AND l.expires_at > now()
FOR SHARE OF l
"""
# a leader's write: only over the generation it read (0 when it read no row)
_WRITE = """
INSERT INTO share_partition_state AS s (topic_id, partition, group_id, generation, value)
SELECT * FROM unnest($1::text[], $2::int[], $3::text[], $4::bigint[], $5::text[])
ON CONFLICT (topic_id, partition, group_id) DO UPDATE SET value = EXCLUDED.value
WHERE s.generation = EXCLUDED.generation
RETURNING s.topic_id, s.partition, s.group_id
"""
# an admin call's: a new generation, whatever was there
_REPLACE = """
INSERT INTO share_partition_state AS s (topic_id, partition, group_id, generation, value)
SELECT t, p, $1, 1, v FROM unnest($2::text[], $3::int[], $4::text[]) AS u(t, p, v)
ON CONFLICT (topic_id, partition, group_id) DO UPDATE SET value = EXCLUDED.value, generation = s.generation + 1
"""


def _key_text(key: PartitionKey) -> str:
    return json.dumps(["share_partition", key[0], key[1], key[2]], separators=(",", ":"))


class ClusterShareState:
    """See the module docstring."""

    def __init__(self, logs: ClusterLog, node_id: int, url: str) -> None:
        self.logs = logs
        self.node_id = node_id
        self.url = url
        #: (group, topic id, partition) -> the generation of the row this node read (0: no row)
        self._generations: dict[PartitionKey, int] = {}
        self.on_changed: Callable[[PartitionKey], None] = lambda key: None
        self._listener: asyncpg.Connection | None = None
        self._listen_task: asyncio.Task[None] | None = None
        self._closed = False
        #: True while the listener's LISTEN is in place (tests wait for it)
        self.listening = False

    # -- leadership

    def epoch_of(self, topic_id: str, partition: int) -> int | None:
        info = self.logs.topic_by_id(uuid.UUID(hex=topic_id))
        if info is None:
            return None
        return self.logs.epochs.get((info.name, partition))

    def forget(self, topic_id: str, partition: int) -> None:
        for key in [k for k in self._generations if k[1] == topic_id and k[2] == partition]:
            del self._generations[key]

    async def load(self, topic_id: str, partition: int) -> list[SharePartitionRecord]:
        async with self.logs.pool.acquire() as conn:
            rows = await conn.fetch(
                "SELECT group_id, generation, value FROM share_partition_state"
                " WHERE topic_id = $1 AND partition = $2",
                topic_id,
                partition,
            )
        out = []
        for group_id, generation, value in rows:
            key = (group_id, topic_id, partition)
            self._generations[key] = generation
            if value is not None:
                out.append(self._decode(key, value))
        return out

    async def load_key(self, key: PartitionKey) -> SharePartitionRecord | None:
        async with self.logs.pool.acquire() as conn:
            row = await conn.fetchrow(
                "SELECT generation, value FROM share_partition_state"
                " WHERE group_id = $1 AND topic_id = $2 AND partition = $3",
                *key,
            )
        if row is None:
            self._generations[key] = 0
            return None
        self._generations[key] = row[0]
        return None if row[1] is None else self._decode(key, row[1])

    @staticmethod
    def _decode(key: PartitionKey, value: str) -> SharePartitionRecord:
        rec = decode_share_record(_key_text(key), value)
        assert isinstance(rec, SharePartitionRecord)
        return rec

    async def write(
        self, records: Sequence[SharePartitionRecord], epochs: Mapping[TopicPartition, int]
    ) -> dict[PartitionKey, int]:
        names: dict[TopicPartition, str] = {}
        failed: dict[PartitionKey, int] = {}
        for tid, p in epochs:
            info = self.logs.topic_by_id(uuid.UUID(hex=tid))
            if info is not None:
                names[(tid, p)] = info.name
        latest: dict[PartitionKey, str | None] = {}
        for r in records:
            key = (r.group_id, r.topic_id, r.partition)
            if (r.topic_id, r.partition) not in names or epochs.get((r.topic_id, r.partition), -1) < 0:
                failed[key] = int(ErrorCode.NOT_LEADER_OR_FOLLOWER)
                continue
            latest[key] = encode_share_record(r)[1]
        if not latest:
            return failed
        wanted = sorted({(k[1], k[2]) for k in latest})
        async with self.logs.pool.acquire() as conn, conn.transaction():
            held = await conn.fetch(
                _FENCE,
                self.node_id,
                [names[tp] for tp in wanted],
                [tp[1] for tp in wanted],
                [epochs[tp] for tp in wanted],
            )
            led = {(r[0], r[1]) for r in held}
            ok = [k for k in latest if (names[(k[1], k[2])], k[2]) in led]
            for k in latest:
                if (names[(k[1], k[2])], k[2]) not in led:
                    failed[k] = int(ErrorCode.NOT_LEADER_OR_FOLLOWER)
            # a deletion by a leader (never: deletions are admin calls) would be a NULL value
            live = [k for k in ok if latest[k] is not None]
            written: set[PartitionKey] = set()
            if live:
                rows = await conn.fetch(
                    _WRITE,
                    [k[1] for k in live],
                    [k[2] for k in live],
                    [k[0] for k in live],
                    [self._generations.get(k, 0) for k in live],
                    [latest[k] for k in live],
                )
                written = {(r[2], r[0], r[1]) for r in rows}
        for k in live:
            if k in written:
                self._generations.setdefault(k, 0)
            else:  # an admin call replaced it meanwhile (Kafka's FENCED_STATE_EPOCH): the service reads it again
                failed[k] = int(ErrorCode.FENCED_STATE_EPOCH)
        return failed

    # -- offsets admin APIs (the group's coordinator)

    async def stored(self, group_id: str) -> dict[TopicPartition, SharePartitionValue]:
        async with self.logs.pool.acquire() as conn:
            rows = await conn.fetch(
                "SELECT topic_id, partition, value FROM share_partition_state"
                " WHERE group_id = $1 AND value IS NOT NULL",
                group_id,
            )
        out: dict[TopicPartition, SharePartitionValue] = {}
        for tid, p, value in rows:
            rec = self._decode((group_id, tid, p), value)
            if rec.value is not None:
                out[(tid, p)] = rec.value
        return out

    async def replace(
        self, group_id: str, states: Mapping[TopicPartition, SharePartitionValue | None]
    ) -> None:
        items = sorted(states.items())
        values = [
            None if v is None else encode_share_record(SharePartitionRecord(group_id, tp[0], tp[1], v))[1]
            for tp, v in items
        ]
        async with self.logs.pool.acquire() as conn, conn.transaction():
            await conn.execute(
                _REPLACE, group_id, [tp[0] for tp, _ in items], [tp[1] for tp, _ in items], values
            )
            for tp, _ in items:  # delivered at commit, to every node listening (this one too)
                await conn.execute("SELECT pg_notify($1, $2)", CHANNEL, json.dumps([group_id, tp[0], tp[1]]))

    # -- notifications

    async def start(self) -> None:
        """Listen for admin changes (a connection of its own, reopened when it drops)."""
        self._listen_task = asyncio.get_running_loop().create_task(self._listen(), name="share-state-listen")

    async def _listen(self) -> None:
        while not self._closed:
            try:
                conn = await asyncpg.connect(self.url, server_settings=self.logs.server_settings or None)
                self._listener = conn
                await conn.add_listener(CHANNEL, self._notified)
                self.listening = True
                while not self._closed and not conn.is_closed():
                    await asyncio.sleep(1)
            except asyncio.CancelledError:
                raise
            except Exception as e:
                log.warning("share-state listener failed: %r; reconnecting", e)
            finally:
                self.listening = False
                if self._listener is not None:
                    with contextlib.suppress(Exception):
                        await self._listener.close()
                    self._listener = None
            if not self._closed:
                await asyncio.sleep(1)

    def _notified(self, _conn: object, _pid: int, _channel: str, payload: str) -> None:
        try:
            group_id, tid, p = json.loads(payload)
        except (ValueError, TypeError):
            return
        self.on_changed((str(group_id), str(tid), int(p)))

    async def close(self) -> None:
        self._closed = True
        if self._listen_task is not None:
            self._listen_task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._listen_task
