"""The cluster-mode side of the share service (a base class of `ShareService`, apart so that each file
stays readable): which topic partitions' share states this node serves, loading them at a new leader epoch,
dropping them when the partition is lost or a write is fenced, and reading one again when an offsets admin
call changed it (docs/cluster.md "Share groups"). With no `home` (a single node) every check here passes.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import structlog

from groupcoord.protocol.errors import ErrorCode
from groupcoord.server.coordinator.records import SharePartitionRecord, SharePartitionValue
from groupcoord.server.share.home import PartitionKey, ShareHome, TopicPartition
from groupcoord.server.share.partition import SharePartition
from groupcoord.server.timers import TimerService

log = structlog.get_logger("groupcoord.share")


class Leadership:
    """Mixed into `ShareService`, whose attributes these are."""

    home: ShareHome | None
    loop: asyncio.AbstractEventLoop
    partitions: dict[PartitionKey, SharePartition]
    timers: TimerService
    failed_writes: int
    _loaded: dict[TopicPartition, int]
    _loading: dict[TopicPartition, asyncio.Task[None]]
    _writes: set[asyncio.Task[Any]]

    _write_locks: dict[TopicPartition, asyncio.Lock]

    def load(self, records: Iterable[SharePartitionRecord]) -> None:
        raise NotImplementedError

    def _wake(self) -> None:
        raise NotImplementedError

    async def _store_led(self, keys: Sequence[PartitionKey]) -> dict[PartitionKey, int]:
        """Cluster mode's writes: the keys not written, with the error their callers answer. One write at a
        time per topic partition, each taking the states' snapshots when it runs (not when it was asked for):
        two writes in flight on two connections cannot land out of order and leave an older state stored.
        A fenced partition is dropped here, a state an admin call replaced is read again (both answer
        NOT_LEADER_OR_FOLLOWER, as Kafka's FENCED_LEADER_EPOCH and FENCED_STATE_EPOCH), and a write in doubt
        drops its partitions (they are read again from what PostgreSQL holds)."""
        assert self.home is not None
        tps = sorted({(k[1], k[2]) for k in keys})
        async with contextlib.AsyncExitStack() as held:
            for tp in tps:  # in order: two writes over the same partitions never wait for each other
                await held.enter_async_context(self._write_locks.setdefault(tp, asyncio.Lock()))
            gone = {k: int(ErrorCode.NOT_LEADER_OR_FOLLOWER) for k in keys if k not in self.partitions}
            records = [
                SharePartitionRecord(k[0], k[1], k[2], self.partitions[k].snapshot())
                for k in dict.fromkeys(keys)
                if k in self.partitions
            ]
            epochs = {tp: self._loaded.get(tp, -1) for tp in tps}
            if not records:
                return gone
            try:
                failed = await self.home.write(records, epochs)
            except Exception as exc:
                self.failed_writes += 1
                log.error("share-partition state write failed", error=repr(exc), partitions=len(records))
                for tp in tps:
                    self.forget(*tp)
                return {k: int(ErrorCode.UNKNOWN_SERVER_ERROR) for k in keys}
        for key, code in failed.items():
            if code == ErrorCode.NOT_LEADER_OR_FOLLOWER:
                self.forget(key[1], key[2])
            else:
                self._reload(key)
        return {**gone, **dict.fromkeys(failed, int(ErrorCode.NOT_LEADER_OR_FOLLOWER))}

    async def _lead(self, topic_id: str, partition: int) -> int:
        """0 when this node serves the partition's share states now (loading them first at a new leader
        epoch), else NOT_LEADER_OR_FOLLOWER (clients refresh Metadata and go to the leader it names)."""
        if self.home is None:
            return 0
        tp = (topic_id, partition)
        epoch = self.home.epoch_of(topic_id, partition)
        if epoch is None:
            if tp in self._loaded:
                self.forget(topic_id, partition)
            return int(ErrorCode.NOT_LEADER_OR_FOLLOWER)
        if self._loaded.get(tp) == epoch:
            return 0
        task = self._loading.get(tp)
        if task is None:
            task = self._loading[tp] = self.loop.create_task(self._load_led(tp, epoch))
            task.add_done_callback(
                lambda t: self._loading.pop(tp, None) if self._loading.get(tp) is t else None
            )
        try:
            await asyncio.shield(task)
        except Exception as exc:
            log.error("share state load failed", topic_id=topic_id, partition=partition, error=repr(exc))
            return int(ErrorCode.NOT_LEADER_OR_FOLLOWER)
        ok = self._loaded.get(tp) == self.home.epoch_of(topic_id, partition) is not None
        return 0 if ok else int(ErrorCode.NOT_LEADER_OR_FOLLOWER)

    async def _load_led(self, tp: TopicPartition, epoch: int) -> None:
        assert self.home is not None
        self.forget(*tp)
        records = await self.home.load(*tp)
        if self.home.epoch_of(*tp) != epoch:  # lost (or lost and taken again) meanwhile
            return
        self.load(records)
        self._loaded[tp] = epoch
        log.info("share states loaded", topic_id=tp[0], partition=tp[1], epoch=epoch, groups=len(records))

    def forget(self, topic_id: str, partition: int) -> None:
        """Cluster mode: the partition is no longer served here (lost, fenced, in doubt): its share states
        leave memory; the records they had acquired lapse."""
        for key in [k for k in self.partitions if k[1] == topic_id and k[2] == partition]:
            self.timers.cancel(key)
            del self.partitions[key]
        self._loaded.pop((topic_id, partition), None)
        if self.home is not None:
            self.home.forget(topic_id, partition)
        self._wake()

    def _reload(self, key: PartitionKey) -> None:
        """Cluster mode: an admin call replaced or deleted this stored state: read it again (if the partition
        is served here)."""
        tp = (key[1], key[2])
        if self.home is None or tp not in self._loaded:
            return
        home, epoch = self.home, self._loaded[tp]

        async def again() -> None:
            try:
                rec = await home.load_key(key)
            except Exception as exc:
                log.error("share state reload failed", key=key, error=repr(exc))
                self.forget(*tp)
                return
            if self._loaded.get(tp) != epoch:
                return
            self.timers.cancel(key)
            self.partitions.pop(key, None)
            if rec is not None:
                self.load([rec])
            self._wake()

        task = self.loop.create_task(again())
        self._writes_pending(task)

    def _writes_pending(self, task: asyncio.Task[Any]) -> None:
        self._writes.add(task)
        task.add_done_callback(self._writes.discard)

    async def _replace(
        self, group_id: str, states: Mapping[TopicPartition, SharePartitionValue | None]
    ) -> bool:
        """Cluster mode's offsets admin calls: the stored states change, whoever leads the partitions (their
        leaders, told through the home, read them again). False when the write failed."""
        assert self.home is not None
        if not states:
            return True
        try:
            await self.home.replace(group_id, states)
        except Exception as exc:
            self.failed_writes += 1
            log.error("share-partition state replace failed", group=group_id, error=repr(exc))
            return False
        for tid, p in states:
            self._reload((group_id, tid, p))
        return True
