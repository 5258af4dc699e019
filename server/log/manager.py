"""LogManager: the data-plane engine the Produce/Fetch/ListOffsets/CreateTopics handlers call.

It owns the topic registry, one `PartitionLog` per partition, producer-id allocation, the fetch waiters
and the flusher that implements the flush policy:

* ``"always"`` (default; alias ``"acks-all"``): an acks=all (-1) append is acknowledged only after its
  bytes are fsynced. Appends arriving while an fsync runs are fsynced together by the next one (group
  commit, `server/log/flush.py`), in worker threads, so the event loop never blocks on the disk. acks=0/1
  appends do not wait; the flusher fsyncs them within ``background_flush_ms`` (1 s) or with the next
  acks=all group commit.
* an int / ``"interval:<ms>"``: fsync dirty partitions every <ms>; no append waits for it.
* ``"never"``: no fsync while running (the OS writes back when it likes, like Kafka's defaults); files are
  fsynced at clean close. A machine crash can lose acknowledged writes.
* ``storage="memory"``: nothing touches the disk and nothing survives the process: NOT durable.
"""

from __future__ import annotations

import asyncio
import logging
import shutil
import struct
import uuid
from collections.abc import Awaitable, Callable, Iterable, Mapping
from pathlib import Path
from typing import Literal

from groupcoord.protocol.errors import ErrorCode
from groupcoord.server.log.config import LogConfig
from groupcoord.server.log.errors import LogError
from groupcoord.server.log.flush import Flusher, FlushPolicy
from groupcoord.server.log.maintenance import Maintenance, MaintenanceConfig
from groupcoord.server.log.partition import (
    DEFAULT_INDEX_INTERVAL_BYTES,
    DEFAULT_MAX_BATCH_BYTES,
    DEFAULT_SEGMENT_BYTES,
    PartitionLog,
)
from groupcoord.server.log.producer_ids import ProducerIdAllocator
from groupcoord.server.log.results import AppendResult, OffsetResult, ReadResult
from groupcoord.server.log.topics import (
    TopicInfo,
    collision_key,
    load_registry,
    new_topic_id,
    save_registry,
    validate_topic_name,
)

log = logging.getLogger(__name__)

#: a check run right before an append (cluster mode: a transactional batch against its transaction)
Verify = Callable[[], Awaitable[ErrorCode]]


EARLIEST_TIMESTAMP = -2
LATEST_TIMESTAMP = -1
MAX_TIMESTAMP = -3
EARLIEST_LOCAL_TIMESTAMP = -4


def delete_dir_name(topic: str, partition: int, tag: str) -> str:
    """Kafka's `LocalLog.logDeleteDirName`: `<topic>-<partition>.<tag>-delete`, the topic cut short so that
    the name fits the 255-byte file-name limit (a 249-character topic would otherwise overflow it)."""
    suffix = f"-{partition}.{tag}-delete"
    return topic[: max(0, 255 - len(suffix))] + suffix


class LogManager:
    """Topics, partitions and the flush policy. Create, `await open()`, use, `await close()`."""

    def __init__(
        self,
        data_dir: Path | None,
        storage: Literal["disk", "memory"] = "disk",
        flush: str | int = "always",
        *,
        segment_bytes: int = DEFAULT_SEGMENT_BYTES,
        index_interval_bytes: int = DEFAULT_INDEX_INTERVAL_BYTES,
        max_batch_bytes: int = DEFAULT_MAX_BATCH_BYTES,
        background_flush_ms: int = 1000,
        maintenance: MaintenanceConfig | None = None,
    ) -> None:
        if storage not in ("disk", "memory"):
            raise ValueError(f"storage must be 'disk' or 'memory', not {storage!r}")
        if storage == "disk" and data_dir is None:
            raise ValueError("disk storage needs a data_dir")
        if not 0 < segment_bytes < 2**31:  # index positions are uint32
            raise ValueError("segment_bytes must be in (0, 2 GiB)")
        self.storage = storage
        self.root: Path | None = Path(data_dir) / "topics" if storage == "disk" and data_dir else None
        self.policy = FlushPolicy.parse(flush)
        self.background_flush_ms = background_flush_ms
        self._log_options = {
            "segment_bytes": segment_bytes,
            "index_interval_bytes": index_interval_bytes,
            "max_batch_bytes": max_batch_bytes,
        }
        self._topics: dict[str, TopicInfo] = {}
        self._by_id: dict[uuid.UUID, TopicInfo] = {}
        self._logs: dict[tuple[str, int], PartitionLog] = {}
        self._registry_lock = asyncio.Lock()
        self._producer_ids = ProducerIdAllocator(self.root / "producer_ids.json" if self.root else None)
        # flusher state
        self._flusher: Flusher | None = Flusher(self.policy, background_flush_ms) if self.root else None
        self._data_waiters: dict[PartitionLog, set[asyncio.Future[None]]] = {}
        self._closed = False
        # retention and compaction (server/log/maintenance.py); per-topic settings from `set_log_config`
        self._configs: dict[str, LogConfig] = {}
        self._state_lock = asyncio.Lock()  # one log_state.json writer at a time
        self.maintenance = Maintenance(
            maintenance or MaintenanceConfig(),
            lambda: list(self._logs.values()),
            lambda plog: not self._closed and self._logs.get((plog.topic, plog.partition)) is plog,
            self._flusher,
            self._state_lock,
        )

    # -- lifecycle ---------------------------------------------------------------------------------
    async def open(self) -> None:
        """Load the registry and recover every partition (in a thread: recovery reads and CRCs files)."""
        if self.root is not None:
            await asyncio.to_thread(self._open_disk)
        if self._flusher is not None:
            self._flusher.start()
        self.maintenance.start()

    def _open_disk(self) -> None:
        assert self.root is not None
        self.root.mkdir(parents=True, exist_ok=True)
        for leftover in self.root.glob("*-delete"):
            shutil.rmtree(leftover, ignore_errors=True)
        self._topics = load_registry(self.root / "topics.json")
        self._by_id = {t.topic_id: t for t in self._topics.values()}
        self._producer_ids.load()
        for t in self._topics.values():
            for p in range(t.partitions):
                self._logs[(t.name, p)] = self._open_partition(t.name, p)

    def _open_partition(self, topic: str, partition: int, *, fresh: bool = False) -> PartitionLog:
        """Open a partition; `fresh` (a new topic or partition) first removes any orphaned directory left
        by a crash between a deletion's registry write and its file removal, so old data cannot resurface."""
        directory = self.root / f"{topic}-{partition}" if self.root is not None else None
        if fresh and directory is not None and directory.exists():
            log.warning("removing orphaned partition directory %s", directory)
            shutil.rmtree(directory)
        plog = PartitionLog.open(topic, partition, directory, **self._log_options)
        config = self._configs.get(topic)
        if config is not None:
            plog.apply_config(config)
        return plog

    async def close(self) -> None:
        """Fsync everything (whatever the policy), write producer snapshots, close files."""
        if self._closed:
            return
        self._closed = True
        await self.maintenance.stop()
        for plog in self._logs.values():
            while plog.busy:
                await asyncio.sleep(0.005)
        if self._flusher is not None:
            for p in self._logs.values():
                p.pending_snapshot = p.state_snapshot()
                self._flusher.mark_dirty(p)
            await self._flusher.stop()
        for p in self._logs.values():
            self._wake(p)
            p.close()

    # -- topics ------------------------------------------------------------------------------------
    def topics(self) -> dict[str, TopicInfo]:
        return dict(self._topics)

    #: the registry `topics_token` last saw, and its number (class defaults: no __init__ of ours or a
    #: subclass's needs to know)
    _token_of: object = None
    _token = 0

    def topics_token(self) -> int:
        """A number that changes whenever a topic is created, grown or deleted (`Topics.version`): the
        registry is a new dict on every change, never mutated in place, so a registry other than the one last
        seen means a change. Only the current registry is held, and because it is held a later one can never
        reuse its identity."""
        if self._token_of is not self._topics:
            self._token_of = self._topics
            self._token += 1
        return self._token

    def topic(self, name: str) -> TopicInfo | None:
        return self._topics.get(name)

    def topic_by_id(self, topic_id: uuid.UUID) -> TopicInfo | None:
        return self._by_id.get(topic_id)

    def partition(self, topic: str, partition: int) -> PartitionLog | None:
        return self._logs.get((topic, partition))

    def epoch_end_offset(self, topic: str, partition: int, epoch: int) -> tuple[int, int]:
        """OffsetForLeaderEpoch's (leader epoch, end offset) for a requested epoch. One node has one epoch
        (0): whatever is asked, (0, log end). Cluster mode looks the epoch up (server/cluster/cluster_log.py)."""
        plog = self._logs[(topic, partition)]
        return plog.leader_epoch, plog.log_end_offset

    def watermarks(self, topic: str, partition: int) -> tuple[int, int] | None:
        """(log start offset, high watermark) of a partition for metrics and views; None if unknown here.
        Cluster mode answers it for partitions other nodes lead too (server/cluster/cluster_log.py)."""
        plog = self._logs.get((topic, partition))
        return None if plog is None else (plog.log_start_offset, plog.high_watermark)

    def validate_new_topic(self, name: str, partitions: int) -> None:
        """The checks of `create_topic` without creating (CreateTopics validateOnly)."""
        validate_topic_name(name)
        if name in self._topics:
            raise LogError(ErrorCode.TOPIC_ALREADY_EXISTS, f"topic {name!r} already exists")
        key = collision_key(name)
        for other in self._topics:
            if collision_key(other) == key:
                raise LogError(
                    ErrorCode.INVALID_TOPIC_EXCEPTION,
                    f"topic {name!r} collides with existing topic {other!r}",
                )
        if partitions < 1:
            raise LogError(ErrorCode.INVALID_PARTITIONS, "number of partitions must be at least 1")

    async def create_topic(
        self, name: str, partitions: int, configs: tuple[tuple[str, str], ...] = ()
    ) -> uuid.UUID:
        """Create a topic and its partitions; the registry is durable before this returns."""
        async with self._registry_lock:
            self.validate_new_topic(name, partitions)
            info = TopicInfo(name, new_topic_id(), partitions, configs)
            new = {**self._topics, name: info}
            logs = await self._create_logs(name, range(partitions), new)
            self._topics = new
            self._by_id[info.topic_id] = info
            for p, plog in enumerate(logs):
                self._logs[(name, p)] = plog
            return info.topic_id

    async def create_partitions(self, name: str, total: int) -> None:
        """Grow a topic to `total` partitions (CreatePartitions); shrinking is INVALID_PARTITIONS."""
        async with self._registry_lock:
            info = self._topics.get(name)
            if info is None:
                raise LogError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"unknown topic {name!r}")
            if total <= info.partitions:
                raise LogError(
                    ErrorCode.INVALID_PARTITIONS,
                    f"topic {name!r} has {info.partitions} partitions; new count must be larger",
                )
            new_info = TopicInfo(name, info.topic_id, total, info.configs)
            new = {**self._topics, name: new_info}
            logs = await self._create_logs(name, range(info.partitions, total), new)
            self._topics = new
            self._by_id[info.topic_id] = new_info
            for i, plog in enumerate(logs):
                self._logs[(name, info.partitions + i)] = plog

    async def delete_topic(self, name: str) -> None:
        """Forget a topic (durably) and remove its files; waiters on its partitions are woken."""
        async with self._registry_lock:
            info = self._topics.get(name)
            if info is None:
                raise LogError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"unknown topic {name!r}")
            new = {k: v for k, v in self._topics.items() if k != name}
            await self._save(new)
            self._configs.pop(name, None)
            self._topics = new
            self._by_id.pop(info.topic_id, None)
            logs = [self._logs.pop((name, p)) for p in range(info.partitions) if (name, p) in self._logs]
            for plog in logs:
                while plog.busy:
                    await asyncio.sleep(0.005)
            if self._flusher is not None:
                async with self._flusher.paused():  # no fsync may run on these files while they close
                    self._flusher.forget(logs, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
                    for plog in logs:
                        plog.close()
            else:
                for plog in logs:
                    plog.close()
            for plog in logs:
                self._wake(plog)
            if self.root is not None:
                dirs = [(plog.partition, plog.directory) for plog in logs if plog.directory is not None]
                await asyncio.to_thread(self._remove_dirs, name, dirs, info.topic_id.hex)

    @staticmethod
    def _remove_dirs(topic: str, dirs: list[tuple[int, Path]], tag: str) -> None:
        """Rename each directory to a `-delete` name (so a crash mid-removal leaves nothing `open` would load
        as a partition), then remove it. The registry no longer has the topic, so a failure here must not
        leave the directory behind: it is removed in place instead."""
        for partition, d in dirs:
            if not d.exists():
                continue
            try:
                doomed = d.with_name(delete_dir_name(topic, partition, tag))
                d.rename(doomed)
            except OSError as exc:
                log.warning("cannot rename %s for deletion (%s); removing it in place", d, exc)
                doomed = d
            shutil.rmtree(doomed, ignore_errors=True)

    async def _create_logs(
        self, name: str, partitions: range, registry: dict[str, TopicInfo]
    ) -> list[PartitionLog]:
        """Create the partitions' logs, then durably save `registry`; on failure nothing is registered and
        the error is KAFKA_STORAGE_ERROR (the new directories become orphans, cleared on the next create)."""
        logs: list[PartitionLog] = []

        def create() -> None:
            for p in partitions:
                logs.append(self._open_partition(name, p, fresh=True))

        try:
            await self._run(create)
            await self._save(registry)
        except OSError as e:
            for plog in logs:
                plog.close()
            raise LogError(ErrorCode.KAFKA_STORAGE_ERROR, f"cannot create partitions of {name!r}: {e}") from e
        return logs

    async def _save(self, topics: dict[str, TopicInfo]) -> None:
        if self.root is not None:
            await asyncio.to_thread(save_registry, self.root / "topics.json", topics)

    async def _run(self, fn):  # type: ignore[no-untyped-def]
        """Disk work in a thread; memory work inline (it is instant)."""
        return await asyncio.to_thread(fn) if self.root is not None else fn()

    # -- per-topic log settings (the configs side calls set_log_config) ------------------------------
    def set_log_config(self, topic: str, config: LogConfig) -> None:
        """Apply a topic's effective log settings to its partitions now (and to partitions created later):
        a new segment size counts from the next roll, retention and compaction settings from the next pass."""
        self._configs[topic] = config
        for (t, _), plog in self._logs.items():
            if t == topic:
                plog.apply_config(config)

    def log_config(self, topic: str) -> LogConfig:
        return self._configs.get(topic, LogConfig())

    async def delete_records(self, topic: str, partition: int, offset: int) -> tuple[ErrorCode, int]:
        """DeleteRecords for one partition: move the log start offset up to `offset` (-1: the high
        watermark), durably, before answering; returns (error, low watermark). Segments wholly below the
        new start are deleted by a retention pass started at once. Kafka's rules: an offset beyond the high
        watermark (or negative other than -1) is OFFSET_OUT_OF_RANGE, and a topic whose cleanup.policy lacks
        `delete` is POLICY_VIOLATION."""
        plog = self._logs.get((topic, partition))
        if plog is None or self._closed:
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1
        if "delete" not in plog.config.cleanup_policy:
            return ErrorCode.POLICY_VIOLATION, -1
        if plog.offline_reason is not None:
            return ErrorCode.KAFKA_STORAGE_ERROR, -1
        target = plog.high_watermark if offset == -1 else offset
        if target < 0 or target > plog.high_watermark:
            return ErrorCode.OFFSET_OUT_OF_RANGE, -1
        if plog.advance_start(target):
            if self.root is not None:
                try:
                    async with self._state_lock:
                        await asyncio.to_thread(plog.save_state)
                except OSError as e:
                    log.error("%s-%d: cannot save the log start offset: %s", topic, partition, e)
                    return ErrorCode.KAFKA_STORAGE_ERROR, -1
            self.maintenance.kick()
        return ErrorCode.NONE, plog.log_start_offset

    # -- producer ids ------------------------------------------------------------------------------
    async def init_producer_id(self) -> tuple[int, int]:
        """(producer id, epoch 0) for a non-transactional InitProducerId: a fresh id, as Kafka does."""
        return await self._producer_ids.allocate(), 0

    # -- data plane --------------------------------------------------------------------------------
    async def append(
        self,
        topic: str,
        partition: int,
        records: bytes | bytearray | memoryview,
        acks: int,
        verify: Verify | None = None,
    ) -> AppendResult:
        """Validate, dedupe and append one partition's Produce data; waits for fsync per the flush policy.

        `verify` (cluster mode's transactional check, which reads shared state) runs first; a single node
        checks its own coordinator synchronously before calling this, so it passes none.

        A duplicate of one of the producer's last five batches is answered with its original base offset
        and not appended. With acks=all under "always", the result is returned after the fsync.
        """
        if acks not in (0, 1, -1):
            return AppendResult(ErrorCode.INVALID_REQUIRED_ACKS, -1, -1, error_message=f"acks={acks}")
        plog = self._logs.get((topic, partition))
        if plog is None:
            return AppendResult(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1, -1)
        if self._closed:
            return AppendResult(ErrorCode.KAFKA_STORAGE_ERROR, -1, -1, error_message="log manager is closed")
        if len(records) == 0:
            return AppendResult(ErrorCode.NONE, -1, plog.log_start_offset)
        if verify is not None and (code := await verify()) != ErrorCode.NONE:
            return AppendResult(code, -1, -1)
        try:
            base, duplicate = plog.append(records)
        except LogError as e:
            return AppendResult(e.code, -1, plog.log_start_offset, error_message=e.message)
        if not duplicate:
            self._wake(plog)
            if self._flusher is not None:
                self._flusher.mark_dirty(plog)
        if acks == -1 and self.policy.kind == "always" and self._flusher is not None:
            # a duplicate waits too: the original might not be durable yet
            err = await self._flusher.wait_durable(plog, base + 1)
            if err != ErrorCode.NONE:
                return AppendResult(err, -1, plog.log_start_offset, error_message=plog.offline_reason)
        return AppendResult(ErrorCode.NONE, base, plog.log_start_offset)

    def read(
        self,
        topic: str,
        partition: int,
        offset: int,
        max_bytes: int,
        *,
        min_one: bool = True,
        read_committed: bool = False,
        through: int | None = None,
    ) -> ReadResult:
        """Fetch one partition: whole batches from the one containing `offset` (see `PartitionLog.read`; with
        `through`, none after the batch holding that offset).

        read_committed (Fetch isolation level 1) stops at the last stable offset and lists the aborted
        transactions overlapping what was read, as Kafka's `LocalLog.read` with `FetchTxnCommitted`."""
        plog = self._logs.get((topic, partition))
        if plog is None:
            return ReadResult(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, b"", -1, -1, -1)
        hw = plog.high_watermark
        lso = plog.last_stable_offset
        try:
            data = plog.read(
                offset,
                max_bytes,
                min_one=min_one,
                max_offset=lso if read_committed else None,
                through=through,
            )
        except LogError as e:
            return ReadResult(e.code, b"", hw, lso, plog.log_start_offset, () if read_committed else None)
        aborted = None
        if read_committed:
            plog.txns.truncate_before(plog.log_start_offset)
            end = offset + 1
            if data:
                end = max(end, _last_offset_of(data) + 1)
            aborted = tuple((a.producer_id, a.first_offset) for a in plog.txns.aborted_in(offset, end))
        return ReadResult(ErrorCode.NONE, data, hw, lso, plog.log_start_offset, aborted)

    async def write_marker(
        self,
        topic: str,
        partition: int,
        producer_id: int,
        producer_epoch: int,
        commit: bool,
        coordinator_epoch: int,
    ) -> ErrorCode:
        """Append a transaction's COMMIT/ABORT marker to one partition and wait until it is durable (under
        the "always" policy), as Kafka's WriteTxnMarkers appends with acks=all."""
        plog = self._logs.get((topic, partition))
        if plog is None or self._closed:
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        try:
            offset = plog.append_marker(producer_id, producer_epoch, commit, coordinator_epoch)
        except LogError as e:
            log.error("%s-%d: cannot write a transaction marker: %s", topic, partition, e.message)
            return e.code
        self._wake(plog)
        if self._flusher is not None:
            self._flusher.mark_dirty(plog)
            if self.policy.kind == "always":
                return await self._flusher.wait_durable(plog, offset + 1)
        return ErrorCode.NONE

    async def list_offsets(
        self, topic: str, partition: int, timestamp: int, read_committed: bool = False
    ) -> OffsetResult:
        """ListOffsets: -2 earliest, -1 latest, -3 max timestamp, -4 earliest local, else by timestamp.

        Not found (no record at or after the timestamp) is offset -1, timestamp -1, as Kafka answers.
        """
        plog = self._logs.get((topic, partition))
        if plog is None:
            return OffsetResult(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1, -1)
        if timestamp == LATEST_TIMESTAMP:
            end = plog.last_stable_offset if read_committed else plog.log_end_offset
            return OffsetResult(ErrorCode.NONE, end, -1)
        if timestamp in (EARLIEST_TIMESTAMP, EARLIEST_LOCAL_TIMESTAMP):
            return OffsetResult(ErrorCode.NONE, plog.log_start_offset, -1)
        if timestamp == MAX_TIMESTAMP:
            found = await self._scan(plog, plog.max_timestamp_offset)
        elif timestamp >= 0:
            found = await self._scan(plog, plog.offset_for_timestamp, timestamp)
        else:
            return OffsetResult(ErrorCode.INVALID_REQUEST, -1, -1)
        if found is None:
            return OffsetResult(ErrorCode.NONE, -1, -1)
        return OffsetResult(ErrorCode.NONE, found[0], found[1])

    async def _scan(self, plog: PartitionLog, fn, *args):  # type: ignore[no-untyped-def]
        """Run a header scan of `plog` in a thread, keeping its files open meanwhile."""
        if self.root is None:
            return fn(*args)
        plog.busy += 1
        try:
            return await asyncio.to_thread(fn, *args)
        finally:
            plog.busy -= 1

    async def wait_for_data(
        self, partitions: Mapping[tuple[str, int], int] | Iterable[tuple[str, int]], timeout: float
    ) -> bool:
        """Long-poll helper for Fetch: True as soon as any of `partitions` gets an append (or is deleted),
        False after `timeout` seconds; the caller then reads again.

        Pass a mapping {(topic, partition): fetch offset} to return True at once if a log already ends past
        its fetch offset. Without it, call this right after reading, with no `await` in between: appends run
        on the same event loop, so none can slip between the read and the registration here.
        """
        offsets = partitions if isinstance(partitions, Mapping) else {}
        logs = []
        for key in partitions:
            plog = self._logs.get(key)
            if plog is None:
                continue
            if key in offsets and plog.high_watermark > offsets[key]:
                return True
            logs.append(plog)
        if not logs or timeout <= 0:
            return False
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        for plog in logs:
            self._data_waiters.setdefault(plog, set()).add(fut)
        try:
            await asyncio.wait_for(fut, timeout)
            return True
        except TimeoutError:
            return False
        finally:
            for plog in logs:
                waiters = self._data_waiters.get(plog)
                if waiters is not None:
                    waiters.discard(fut)
                    if not waiters:
                        del self._data_waiters[plog]

    def _wake(self, plog: PartitionLog) -> None:
        waiters = self._data_waiters.pop(plog, None)
        if waiters:
            for fut in waiters:
                if not fut.done():
                    fut.set_result(None)

    # -- flushing ----------------------------------------------------------------------------------
    @property
    def fsyncs(self) -> int:
        """Group-commit rounds performed so far (tests and the bench)."""
        return self._flusher.rounds if self._flusher is not None else 0

    async def flush(self) -> None:
        """Fsync every dirty partition now."""
        if self._flusher is not None:
            await self._flusher.flush()


def _last_offset_of(data: bytes) -> int:
    """Last offset of the last whole batch in a read (baseOffset + lastOffsetDelta)."""
    pos = last = 0
    while pos + 27 <= len(data):
        base, length = struct.unpack_from(">qi", data, pos)
        if pos + 12 + length > len(data):
            break
        last = base + struct.unpack_from(">i", data, pos + 23)[0]
        pos += 12 + length
    return last
