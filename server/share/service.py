"""Runs the share partitions of every share group (Kafka's `SharePartitionManager`, with the share
coordinator's persistence folded in): acquisition over the embedded log, acknowledgements answered only once
their state is durable, lock-expiry timers, share sessions and their connections, and the ShareFetch long poll.

Persistence: each change of a share partition's durable state writes its whole snapshot
(`SharePartitionRecord`, latest value per key) through the coordinator's `StateStore` (SQLite: committed
and fsynced before the answer; memory: at once). Lock expiries and released sessions are written best effort,
as in Kafka. At start, `load` rebuilds every share partition from the stored snapshots.

Cluster mode (`home`, server/share/home.py): the share partitions of a topic partition are served only by
its leader. The first use at a leader epoch loads every group's state of that partition (NOT_LEADER_OR_FOLLOWER
where this node does not lead it); snapshots are written fenced by the partition's lease; a fenced write, or a
lost partition, drops the partition's states here (acquired records lapse: after a takeover they are
AVAILABLE again, as acquisition is never stored). The offsets admin APIs change the stored states directly.

Long poll: a fetch that acquires nothing waits, without polling, for whichever comes first of an append to
one of its partitions (`LogManager.wait_for_data`), a share-state change that made records available again
(release, lock expiry), or MaxWaitMs.
"""

from __future__ import annotations

import asyncio
import struct
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

import structlog

from groupcoord.protocol.errors import ErrorCode
from groupcoord.server.coordinator.modern.share.config import ShareGroupConfig, parse_by_duration
from groupcoord.server.coordinator.records import SharePartitionRecord, SharePartitionValue
from groupcoord.server.log.manager import LogManager
from groupcoord.server.share.home import ShareHome, TopicPartition
from groupcoord.server.share.isolation import READ_COMMITTED, aborted_batches
from groupcoord.server.share.leadership import Leadership
from groupcoord.server.share.partition import TERMINAL, AckBatch, AcquiredRange, SharePartition
from groupcoord.server.share.sessions import Key, ShareSessions
from groupcoord.server.storage.base import StateStore
from groupcoord.server.storage.persist import Persister
from groupcoord.server.timers import WALL_CLOCK, Clock, TimerService

log = structlog.get_logger("groupcoord.share")

#: (group id, topic id hex, partition)
PartitionKey = tuple[str, str, int]
#: the messages of acknowledgements a cluster node could not store (other failures: "could not be stored")
_FAILED_ACK: dict[int, str | None] = {
    # the partition's lease moved, or an offsets admin call replaced its state: the client retries
    int(ErrorCode.NOT_LEADER_OR_FOLLOWER): None,
}


@dataclass(frozen=True, slots=True)
class Fetched:
    records: bytes
    acquired: tuple[AcquiredRange, ...]
    error: int = 0


def cut_after(data: bytes, last: int) -> bytes:
    """The whole batches of a log read up to the one holding offset `last`: what a member was not given need
    not travel (the read may run far past the acquired records)."""
    pos = 0
    while pos + 27 <= len(data):
        base, length = struct.unpack_from(">qi", data, pos)
        end = pos + 12 + length
        if end > len(data):
            break
        if base + struct.unpack_from(">i", data, pos + 23)[0] >= last:
            return data[:end]
        pos = end
    return data[:pos]


def last_offset_of(data: bytes) -> int:
    """The last offset of the last whole batch in a log read (baseOffset + lastOffsetDelta); -1 if none."""
    pos, last = 0, -1
    while pos + 27 <= len(data):
        base, length = struct.unpack_from(">qi", data, pos)
        if pos + 12 + length > len(data):
            break
        last = base + struct.unpack_from(">i", data, pos + 23)[0]
        pos += 12 + length
    return last


class ShareService(Leadership):
    def __init__(
        self,
        logs: LogManager,
        store: StateStore,
        config: ShareGroupConfig,
        loop: asyncio.AbstractEventLoop,
        clock: Clock = WALL_CLOCK,
        home: ShareHome | None = None,
    ) -> None:
        self.logs = logs
        #: cluster mode: the partition leaders' share state (None: every share partition is served here)
        self.home = home
        #: cluster mode: topic partitions whose share states are loaded here -> the leader epoch they were at
        self._loaded: dict[TopicPartition, int] = {}
        self._loading: dict[TopicPartition, asyncio.Task[None]] = {}
        self._write_locks: dict[TopicPartition, asyncio.Lock] = {}
        if home is not None:
            home.on_changed = self._reload
        self.store = store
        self.persister = Persister(store)  # persist, then answer (storage/persist.py)
        self.config = config
        self.loop = loop
        self.now_ms = clock.now_ms
        self.partitions: dict[PartitionKey, SharePartition] = {}
        #: groups with `share.*` group configs (server/configs/group_defs.py): their effective config
        self.group_configs: dict[str, ShareGroupConfig] = {}
        self.sessions = ShareSessions(config.max_share_sessions)
        self.timers = TimerService(loop, self._lock_timer, clock)
        self._changed: asyncio.Future[None] | None = None
        self._writes: set[asyncio.Task[Any]] = set()
        self.failed_writes = 0
        #: set once the stored share-partition state is loaded: requests wait for it
        self.ready = asyncio.Event()
        #: the journal (docs/journal.md `share_records`): told one event per call that moved records
        self.on_event: Callable[[dict[str, Any]], None] | None = None

    def _journal(self, group_id: str, member_id: str | None, reason: str, counts: Sequence[int]) -> None:
        """One `share_records` event with the record counts of a call (acquired, acknowledged, released,
        archived); nothing when all are zero. Cheap: four integers per call, no per-record detail."""
        if self.on_event is None or not any(counts):
            return
        acquired, acknowledged, released, archived = counts
        self.on_event(
            {
                "ts": self.now_ms(),
                "group": group_id,
                "event": "share_records",
                "reason": reason,
                "member_id": member_id,
                "protocol_type": "share",
                "acquired": acquired,
                "acknowledged": acknowledged,
                "released": released,
                "archived": archived,
            }
        )

    def config_for(self, group_id: str) -> ShareGroupConfig:
        return self.group_configs.get(group_id, self.config)

    def _limits(self, group_id: str) -> dict[str, int | bool]:
        c = self.config_for(group_id)
        return {
            "lock_duration_ms": c.record_lock_duration_ms,
            "delivery_count_limit": c.delivery_count_limit,
            "max_in_flight": c.partition_max_record_locks,
            "renew_enabled": c.renew_acknowledge_enable,
        }

    def set_group_config(self, group_id: str, group_configs: Mapping[str, str]) -> None:
        """A group's `share.*` group configs changed (or were loaded): its share partitions take the new lock
        duration, delivery-count limit, in-flight limit and RENEW switch at once (locks already running
        keep their deadline), as Kafka's SharePartition reads them at each use; `share.auto.offset.reset`
        applies to partitions initialized from now on, `share.isolation.level` to the next fetch."""
        cfg = self.config.for_group(group_configs)
        if cfg == self.config:
            self.group_configs.pop(group_id, None)
        else:
            self.group_configs[group_id] = cfg
        limits = self._limits(group_id)
        for key, sp in self.partitions.items():
            if key[0] == group_id:
                sp.lock_duration_ms = int(limits["lock_duration_ms"])
                sp.delivery_count_limit = int(limits["delivery_count_limit"])
                sp.max_in_flight = int(limits["max_in_flight"])
                sp.renew_enabled = bool(limits["renew_enabled"])
        self._wake()  # a larger in-flight limit may let a waiting fetch acquire

    # ------------------------------------------------------------------------------------ load, persist

    def load(self, records: Iterable[SharePartitionRecord]) -> None:
        for r in records:
            if r.value is not None:
                self.partitions[(r.group_id, r.topic_id, r.partition)] = SharePartition.restore(
                    r.value, **self._limits(r.group_id)
                )

    def _record(self, key: PartitionKey, sp: SharePartition) -> SharePartitionRecord:
        return SharePartitionRecord(key[0], key[1], key[2], sp.snapshot())

    async def _persist(self, records: Sequence[SharePartitionRecord]) -> bool:
        """Durable when True; a failure is logged and counted."""
        return not await self._store(records)

    async def _store(self, records: Sequence[SharePartitionRecord]) -> dict[PartitionKey, int]:
        """Write `records`; the keys not written, with the error their callers answer (empty: all durable).
        Cluster mode: a fenced partition is dropped here, a state an admin call replaced is read again, and
        a write in doubt drops its partitions (they are read again from what PostgreSQL holds)."""
        if self.home is not None:
            return await self._store_led([(r.group_id, r.topic_id, r.partition) for r in records])
        try:
            await self.persister.write(records)
            return {}
        except Exception as exc:
            self.failed_writes += 1
            log.error("share-partition state write failed", error=repr(exc), partitions=len(records))
            return {
                (r.group_id, r.topic_id, r.partition): int(ErrorCode.UNKNOWN_SERVER_ERROR) for r in records
            }

    def _persist_later(self, records: Sequence[SharePartitionRecord]) -> None:
        """Best effort (lock expiry, released sessions): Kafka keeps the in-memory change even if it fails."""
        if not records:
            return
        self._writes_pending(self.loop.create_task(self._persist(records)))

    async def quiesce(self) -> None:
        while self._writes:
            await asyncio.gather(*list(self._writes), return_exceptions=True)

    def close(self) -> None:
        self.timers.close()

    # ------------------------------------------------------------------------------- partitions

    async def partition(self, group_id: str, topic: str, topic_id: str, index: int) -> SharePartition | None:
        """The share partition, initialized at its first fetch: `share.auto.offset.reset` resolved against
        the log now (latest: the high watermark; earliest: the log start), and written so that a restart
        does not resolve it again. None when the topic partition has no log."""
        key = (group_id, topic_id, index)
        sp = self.partitions.get(key)
        plog = self.logs.partition(topic, index)
        if plog is None:
            return None
        if sp is None:
            start = await self._reset_offset(group_id, topic, index)
            if key in self.partitions:  # another fetch initialized it meanwhile
                return self.partitions[key]
            sp = self.partitions[key] = SharePartition(start, **self._limits(group_id))
            if not await self._persist([self._record(key, sp)]) and self.home is not None:
                return self.partitions.get(key)  # fenced (then dropped) or in doubt: not served now
        elif plog.log_start_offset > sp.start:  # retention or DeleteRecords moved the log start
            sp.skip_to(plog.log_start_offset)
            self._persist_later([self._record(key, sp)])
        return sp

    async def _reset_offset(self, group_id: str, topic: str, index: int) -> int:
        """`share.auto.offset.reset`: latest (the high watermark), earliest (the log start) or
        by_duration:<d> (the first offset with a timestamp at or after now - d; the high watermark when there
        is none, as in Kafka)."""
        strategy = self.config_for(group_id).auto_offset_reset
        plog = self.logs.partition(topic, index)
        assert plog is not None
        if strategy == "earliest":
            return int(plog.log_start_offset)
        if strategy.lower().startswith("by_duration:"):
            duration = parse_by_duration(strategy.split(":", 1)[1])
            if duration is not None:
                found = await self.logs.list_offsets(topic, index, max(self.now_ms() - duration, 0))
                if found.error == 0 and found.offset >= 0:
                    return int(found.offset)
        return int(plog.high_watermark)

    def _arm(self, key: PartitionKey, sp: SharePartition) -> None:
        deadline = sp.next_deadline()
        if deadline is None:
            self.timers.cancel(key)
        else:
            self.timers.schedule(key, deadline)

    def _lock_timer(self, timer_key: Hashable) -> None:
        key = cast(PartitionKey, timer_key)  # the keys this service schedules
        sp = self.partitions.get(key)
        if sp is None:
            return
        if self.home is not None and self.home.epoch_of(key[1], key[2]) != self._loaded.get((key[1], key[2])):
            self.forget(key[1], key[2])  # lost meanwhile: its locks lapse with it
            return
        before = sp.tally.counts()
        if sp.expire_locks(self.now_ms()):
            self._persist_later([self._record(key, sp)])
            self._journal(key[0], None, "lock_expired", _minus(sp.tally.counts(), before))
            self._wake()
        self._arm(key, sp)

    def _wake(self) -> None:
        fut, self._changed = self._changed, None
        if fut is not None and not fut.done():
            fut.set_result(None)

    # ------------------------------------------------------------------------------- acknowledge

    async def acknowledge(
        self, group_id: str, member_id: str, acks: dict[Key, list[AckBatch]], renew_allowed: bool
    ) -> dict[Key, tuple[int, str | None]]:
        """Apply each partition's acknowledgements all or nothing; answer once the changes are durable (a
        failed write puts the records back and answers UNKNOWN_SERVER_ERROR for those partitions)."""
        await self.ready.wait()
        results: dict[Key, tuple[int, str | None]] = {}
        writes: list[tuple[Key, PartitionKey, SharePartition, object]] = []
        now = self.now_ms()
        moved: dict[Key, tuple[int, ...]] = {}
        for k, batches in acks.items():
            if not batches:
                results[k] = (0, None)
                continue
            pkey = (group_id, k[0], k[1])
            lead = await self._lead(k[0], k[1])
            if lead:
                results[k] = (lead, None)
                continue
            sp = self.partitions.get(pkey)
            if sp is None:
                results[k] = (int(ErrorCode.INVALID_RECORD_STATE), "no records were acquired here")
                continue
            err, msg = sp.check(member_id, batches, renew_allowed)
            if err:
                results[k] = (err, msg)
                continue
            before = sp.tally.counts()
            durable, undo = sp.acknowledge(member_id, batches, now)
            moved[k] = _minus(sp.tally.counts(), before)
            results[k] = (0, None)
            self._arm(pkey, sp)
            if durable:
                writes.append((k, pkey, sp, undo))
        if writes:
            failed = await self._store([self._record(pkey, sp) for _, pkey, sp, _ in writes])
            for k, pkey, sp, undo in writes:
                if pkey not in failed:
                    continue
                undo()  # type: ignore[operator]
                self._arm(pkey, sp)
                code = failed[pkey]
                results[k] = (code, _FAILED_ACK.get(code, "the acknowledgement could not be stored"))
                moved.pop(k, None)
            self._wake()
        self._journal(group_id, member_id, "acknowledge", _total(moved.values()))
        return results

    # ------------------------------------------------------------------------------------- fetch

    async def fetch(
        self,
        group_id: str,
        member_id: str,
        parts: Sequence[tuple[Key, str]],
        *,
        max_records: int,
        max_bytes: int,
        min_bytes: int,
        max_wait_ms: int,
    ) -> dict[Key, Fetched]:
        """Acquire records for `member_id` from `parts` ((topic id hex, partition), topic name), waiting up
        to `max_wait_ms` while nothing can be acquired. MaxRecords is one budget across the partitions."""
        await self.ready.wait()
        deadline = self.loop.time() + max(max_wait_ms, 0) / 1000
        while True:
            out = await self._fetch_once(group_id, member_id, parts, max_records, max_bytes)
            total = sum(len(f.records) for f in out.values())
            got = any(f.acquired or f.error for f in out.values())
            remaining = deadline - self.loop.time()
            if got or total >= max(min_bytes, 1) or remaining <= 0 or max_records <= 0 or not parts:
                return out
            await self._wait(parts, group_id, remaining)

    async def _wait(self, parts: Sequence[tuple[Key, str]], group_id: str, timeout: float) -> None:
        if self._changed is None or self._changed.done():
            self._changed = self.loop.create_future()
        changed = self._changed
        # an append matters only where the in-flight window has room; a full window waits for a change
        offsets: dict[tuple[str, int], int] = {}
        committed = self.config_for(group_id).isolation_level == READ_COMMITTED
        for (tid, p), topic in parts:
            sp = self.partitions.get((group_id, tid, p))
            if sp is not None and sp.in_flight() < sp.max_in_flight:
                offsets[(topic, p)] = sp.end
                plog = self.logs.partition(topic, p)
                if committed and plog is not None and plog.last_stable_offset <= sp.end:
                    # records of an open transaction are there already: wait for the next append (its
                    # marker, which moves the last stable offset), not for data past `end`
                    offsets[(topic, p)] = max(sp.end, plog.log_end_offset)
        waits: set[asyncio.Future[Any]] = {changed}
        data = None
        if offsets:
            data = self.loop.create_task(self.logs.wait_for_data(offsets, timeout))
            waits.add(data)
        try:
            await asyncio.wait(waits, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        finally:
            if data is not None:
                data.cancel()

    async def _fetch_once(
        self,
        group_id: str,
        member_id: str,
        parts: Sequence[tuple[Key, str]],
        max_records: int,
        max_bytes: int,
    ) -> dict[Key, Fetched]:
        out: dict[Key, Fetched] = {}
        moved: list[tuple[int, ...]] = []
        budget_records = max_records
        budget_bytes = max_bytes if max_bytes > 0 else 0x7FFFFFFF
        for k, topic in parts:
            lead = await self._lead(k[0], k[1])
            if lead:
                out[k] = Fetched(b"", (), lead)
                continue
            sp = await self.partition(group_id, topic, k[0], k[1])
            if sp is None:
                gone = ErrorCode.NOT_LEADER_OR_FOLLOWER if self.home else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                out[k] = Fetched(b"", (), int(gone))
                continue
            plog = self.logs.partition(topic, k[1])
            if budget_records <= 0 or plog is None:
                out[k] = Fetched(b"", ())
                continue
            committed = self.config_for(group_id).isolation_level == READ_COMMITTED
            log_end = plog.last_stable_offset if committed else plog.high_watermark
            before = sp.tally.counts()
            acquired = sp.acquire(member_id, budget_records, log_end, self.now_ms())
            if not acquired:
                out[k] = Fetched(b"", ())
                continue
            first, last = acquired[0].first_offset, acquired[-1].last_offset
            r = self.logs.read(
                topic, k[1], first, max(budget_bytes, 0), min_one=True, read_committed=committed
            )
            covered = last_offset_of(r.records) if r.error == 0 else -1
            if covered < last:
                acquired = sp.unacquire(acquired, covered + 1)
            if committed and r.aborted and acquired:
                skipped = aborted_batches(r.records, r.aborted)
                if skipped:
                    acquired = sp.archive_acquired(acquired, skipped)
                    self._persist_later([self._record((group_id, k[0], k[1]), sp)])
            self._arm((group_id, k[0], k[1]), sp)
            moved.append(_minus(sp.tally.counts(), before))
            if not acquired:
                out[k] = Fetched(b"", (), int(r.error))
                continue
            records = cut_after(r.records, acquired[-1].last_offset)
            budget_records -= sum(a.last_offset - a.first_offset + 1 for a in acquired)
            budget_bytes -= len(records)
            out[k] = Fetched(records, tuple(acquired))
        self._journal(group_id, member_id, "fetch", _total(moved))
        return out

    async def delete_group(self, group_id: str) -> bool:
        """DeleteGroups of an empty share group: its share-partition state goes first (Kafka deletes the
        state, then the group). False when the tombstones could not be written; the state is then kept."""
        await self.ready.wait()
        if self.home is not None:
            return await self._replace(group_id, dict.fromkeys(await self.home.stored(group_id)))
        return await self._delete([k for k in self.partitions if k[0] == group_id])

    async def _delete(self, keys: Sequence[PartitionKey]) -> bool:
        if not keys:
            return True
        if not await self._persist([SharePartitionRecord(g, t, p, None) for g, t, p in keys]):
            return False
        for k in keys:
            self.timers.cancel(k)
            del self.partitions[k]
        return True

    # ------------------------------------------------------------------------ offsets admin (90-92)

    async def summaries(self, group_id: str) -> dict[TopicPartition, tuple[int, int]]:
        """(SPSO, delivery-complete count: the records at or above SPSO acknowledged or archived) of each
        share partition of the group with state (Kafka's ReadShareGroupStateSummary). Single node: read from
        memory, which is never behind the stored snapshot; cluster mode: the stored snapshots, whoever leads
        the partitions (acquisitions are not in them, as they are not in Kafka's share coordinator)."""
        if self.home is not None:
            stored = await self.home.stored(group_id)
            return {tp: (v.start_offset, v.delivery_complete_count) for tp, v in stored.items()}
        return {
            (t, p): (sp.start, sum(1 for r in sp.window.values() if r.state in TERMINAL))
            for (g, t, p), sp in self.partitions.items()
            if g == group_id
        }

    async def topics_with_state(self, group_id: str) -> set[str]:
        """The topic ids (hex) with share-partition state for this group."""
        return {t for t, _ in await self.summaries(group_id)}

    async def reset(self, group_id: str, offsets: Mapping[Key, int], state_epoch: int) -> bool:
        """AlterShareGroupOffsets of an empty group: each partition gets a fresh state starting at its offset,
        nothing in flight (Kafka's InitializeShareGroupState). The new states are written before they
        replace the old ones; False when the write failed (nothing changed then)."""
        await self.ready.wait()
        if self.home is not None:
            stored = await self.home.stored(group_id)
            states: dict[TopicPartition, SharePartitionValue | None] = {
                tp: SharePartition(off, state_epoch=state_epoch).snapshot() if off >= 0 else None
                for tp, off in offsets.items()
                if off >= 0 or tp in stored
            }
            return await self._replace(group_id, states)
        fresh = {
            (group_id, t, p): SharePartition(off, state_epoch=state_epoch, **self._limits(group_id))
            for (t, p), off in offsets.items()
            if off >= 0
        }
        # a negative offset is Kafka's uninitialized start offset: no state, so that the next fetch resolves
        # share.auto.offset.reset again
        dropped = [(group_id, t, p) for (t, p), off in offsets.items() if off < 0]
        records = [self._record(k, sp) for k, sp in fresh.items()]
        records += [
            SharePartitionRecord(g, t, p, None) for g, t, p in dropped if (g, t, p) in self.partitions
        ]
        if records and not await self._persist(records):
            return False
        for k in dropped:
            self.timers.cancel(k)
            self.partitions.pop(k, None)
        for k, sp in fresh.items():
            self.timers.cancel(k)
            self.partitions[k] = sp
        self._wake()
        return True

    async def delete_topics(self, group_id: str, topic_ids: Iterable[str]) -> bool:
        """DeleteShareGroupOffsets: the share-partition state of these topics goes (tombstones, durable)."""
        await self.ready.wait()
        ids = set(topic_ids)
        if self.home is not None:
            stored = await self.home.stored(group_id)
            return await self._replace(group_id, {tp: None for tp in stored if tp[0] in ids})
        return await self._delete([k for k in self.partitions if k[0] == group_id and k[1] in ids])

    # --------------------------------------------------------------------------- sessions closing

    def release(self, group_id: str, member_id: str, keys: Iterable[Key]) -> None:
        """A share session closed (epoch -1, or its connection dropped): the member's acquired records in
        its partitions become available again (archived at the delivery limit)."""
        records = []
        moved = []
        for tid, p in keys:
            pkey = (group_id, tid, p)
            sp = self.partitions.get(pkey)
            if sp is None:
                continue
            before = sp.tally.counts()
            if sp.release_member(member_id):
                records.append(self._record(pkey, sp))
                self._arm(pkey, sp)
                moved.append(_minus(sp.tally.counts(), before))
        if records:
            self._persist_later(records)
            self._journal(group_id, member_id, "session_closed", _total(moved))
            self._wake()

    def connection_closed(self, connection: Hashable) -> None:
        for s in self.sessions.of_connection(connection):
            self.sessions.close(s)
            self.release(s.group_id, s.member_id, list(s.partitions))


def _minus(after: Sequence[int], before: Sequence[int]) -> tuple[int, ...]:
    return tuple(a - b for a, b in zip(after, before, strict=True))


def _total(parts: Iterable[Sequence[int]]) -> tuple[int, ...]:
    out = [0, 0, 0, 0]
    for p in parts:
        for i, v in enumerate(p):
            out[i] += v
    return tuple(out)
