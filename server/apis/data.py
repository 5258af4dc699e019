"""The data plane: Fetch, ListOffsets, InitProducerId, OffsetForLeaderEpoch, DeleteTopics,
CreatePartitions — enough for real consumers to consume and producers to produce (the log lives in
`groupcoord.server.log`).

Version notes (Produce: `groupcoord.server.apis.produce`):
- Fetch 4-12 by topic name (topic ids arrive with v13). No fetch sessions: we always answer session id 0, which
  tells clients to keep sending full fetch requests. Long-poll: wait up to max_wait_ms for min_bytes.
  IsolationLevel 1 (read_committed) reads up to the last stable offset and gets the aborted transactions of
  the range read; 0 (read_uncommitted) reads up to the high watermark.
- ListOffsets 1-7: earliest (-2), latest (-1; the last stable offset for read_committed, v2+), max timestamp
  (-3, v7) and by timestamp.
- InitProducerId 0-5 (v5 may return TRANSACTION_ABORTABLE; we never do): idempotent producers get a fresh
  producer id; a transactional id goes to the
  transaction coordinator (epoch bump, fencing; PRODUCER_FENCED is INVALID_PRODUCER_EPOCH below v4).
- OffsetForLeaderEpoch 0-4: on a single node one leader epoch (0) whose end offset is the log end; in
  cluster mode the requested epoch looked up in the partition's epoch history (Kafka's
  `LeaderEpochFileCache.endOffsetFor`); NOT_LEADER_OR_FOLLOWER for a partition another node leads.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from groupcoord.protocol.api import ApiKey
from groupcoord.protocol.errors import ErrorCode
from groupcoord.protocol.messages import create_partitions as cp
from groupcoord.protocol.messages import delete_topics as dt
from groupcoord.protocol.messages import fetch as fe
from groupcoord.protocol.messages import init_producer_id as ip
from groupcoord.protocol.messages import list_offsets as lo
from groupcoord.protocol.messages import offset_for_leader_epoch as ol
from groupcoord.server.apis import authz, authz_admin, authz_txn
from groupcoord.server.apis.declaration import Api, by_transactional_id
from groupcoord.server.apis.topic_rules import check_partition_assignments
from groupcoord.server.apis.txn_routing import txn_status
from groupcoord.server.log.errors import LogError
from groupcoord.server.log.manager import OffsetResult, ReadResult

if TYPE_CHECKING:
    from groupcoord.server.net.dispatch import Reply, RequestContext

EMPTY_PARTITION = ReadResult(ErrorCode.NONE, b"", 0, 0, 0)
OUT_OF_RANGE = ReadResult(ErrorCode.OFFSET_OUT_OF_RANGE, b"", 0, 0, 0)


def fetch(ctx: RequestContext, req: fe.FetchRequest) -> Any:
    return asyncio.ensure_future(_fetch(ctx, req))


async def _fetch(ctx: RequestContext, req: fe.FetchRequest) -> fe.FetchResponse:
    logs = ctx.services.logs
    topics = ctx.services.topics
    loop = asyncio.get_running_loop()
    deadline = loop.time() + max(req.max_wait_ms, 0) / 1000
    wanted = [(t.topic, p) for t in req.topics for p in t.partitions]
    while True:
        total = 0
        budget = req.max_bytes if req.max_bytes > 0 else 0x7FFFFFFF
        parts: list[tuple[str, fe.PartitionData]] = []
        for topic, p in wanted:
            limit = min(p.partition_max_bytes, budget)
            if topics.is_internal(topic) and topics.has_partition(topic, p.partition):
                # __consumer_offsets has no log here (docs/differences.md): an empty partition, at its leader
                r = EMPTY_PARTITION if p.fetch_offset == 0 else OUT_OF_RANGE
                if offsets_led_elsewhere(ctx, p.partition):
                    r = ReadResult(ErrorCode.NOT_LEADER_OR_FOLLOWER, b"", -1, -1, -1)
            elif fenced := leader_epoch_error(ctx, topic, p.partition, p.current_leader_epoch):
                r = ReadResult(fenced, b"", -1, -1, -1)
            else:
                r = logs.read(
                    topic,
                    p.partition,
                    p.fetch_offset,
                    max(limit, 0),
                    min_one=total == 0,
                    read_committed=req.isolation_level == 1,
                )
            records = r.records
            total += len(records)
            budget -= len(records)
            parts.append(
                (
                    topic,
                    fe.PartitionData(
                        partition_index=p.partition,
                        error_code=r.error,
                        high_watermark=r.high_watermark,
                        last_stable_offset=r.last_stable_offset,
                        log_start_offset=r.log_start_offset,
                        aborted_transactions=_aborted(r.aborted) if req.isolation_level == 1 else None,
                        records=records,
                    ),
                )
            )
        remaining = deadline - loop.time()
        errors = any(pd.error_code for _, pd in parts)
        if total >= req.min_bytes or remaining <= 0 or errors or not wanted:
            break
        logged = [(t, p.partition) for t, p in wanted if not topics.is_internal(t)]
        if not logged:  # nothing can arrive: wait out max_wait_ms without spinning
            await asyncio.sleep(remaining)
            continue
        await logs.wait_for_data(logged, remaining)
    grouped: dict[str, list[fe.PartitionData]] = {}
    for topic, pd in parts:
        grouped.setdefault(topic, []).append(pd)
    return fe.FetchResponse(
        error_code=0,
        session_id=0,
        responses=tuple(
            fe.FetchableTopicResponse(topic=t, partitions=tuple(ps)) for t, ps in grouped.items()
        ),
    )


def _aborted(aborted: tuple[tuple[int, int], ...] | None) -> tuple[fe.AbortedTransaction, ...]:
    return tuple(fe.AbortedTransaction(producer_id=pid, first_offset=first) for pid, first in aborted or ())


def list_offsets(ctx: RequestContext, req: lo.ListOffsetsRequest) -> Reply[lo.ListOffsetsResponse]:
    return asyncio.ensure_future(_list_offsets(ctx, req))


async def _list_offsets(ctx: RequestContext, req: lo.ListOffsetsRequest) -> lo.ListOffsetsResponse:
    logs = ctx.services.logs
    topics = []
    for t in req.topics:
        parts = []
        for p in t.partitions:
            if ctx.services.topics.is_internal(t.name) and ctx.services.topics.has_partition(
                t.name, p.partition_index
            ):
                r = OffsetResult(ErrorCode.NONE, 0, -1)  # an empty log: every offset query answers 0
                if offsets_led_elsewhere(ctx, p.partition_index):
                    r = OffsetResult(ErrorCode.NOT_LEADER_OR_FOLLOWER, -1, -1)
            elif fenced := leader_epoch_error(ctx, t.name, p.partition_index, p.current_leader_epoch):
                r = OffsetResult(fenced, -1, -1)
            else:
                committed = ctx.version >= 2 and req.isolation_level == 1
                r = await logs.list_offsets(t.name, p.partition_index, p.timestamp, read_committed=committed)
            parts.append(
                lo.ListOffsetsPartitionResponse(
                    partition_index=p.partition_index,
                    error_code=r.error,
                    timestamp=r.timestamp,
                    offset=r.offset,
                    leader_epoch=_epoch(ctx, t.name, p.partition_index)
                    if ctx.version >= 4 and r.error == 0 and r.offset >= 0
                    else -1,
                )
            )
        topics.append(lo.ListOffsetsTopicResponse(name=t.name, partitions=tuple(parts)))
    return lo.ListOffsetsResponse(topics=tuple(topics))


def _epoch(ctx: RequestContext, topic: str, partition: int) -> int:
    """The partition's leader epoch here (0 on a single node; the lease epoch in cluster mode)."""
    plog = ctx.services.logs.partition(topic, partition)
    return plog.leader_epoch if plog is not None else 0


def offsets_led_elsewhere(ctx: RequestContext, partition: int) -> bool:
    """Cluster mode: `__consumer_offsets` partition `partition` is group shard `partition`, led by the shard's
    holder (as Metadata names it); another node answers its data requests NOT_LEADER_OR_FOLLOWER, as a Kafka
    broker that is no replica of it."""
    routing = ctx.services.routing
    if routing is None:
        return False
    leader = routing.shard_leader(partition)
    return leader is None or leader[0].node_id != ctx.services.config.node_id


def leader_epoch_error(ctx: RequestContext, topic: str, partition: int, requested: int) -> ErrorCode:
    """Kafka's `Partition.checkCurrentLeaderEpoch` for Fetch (v9+), ListOffsets (v4+) and
    OffsetForLeaderEpoch (v2+) in cluster mode, on the partition's leader: a CurrentLeaderEpoch below the
    lease epoch is a client that missed a failover (FENCED_LEADER_EPOCH: it refreshes its metadata), one above
    it a client that heard of a newer leader before this node did (UNKNOWN_LEADER_EPOCH: it retries); -1
    skips the check. A node that does not lead the partition answers NOT_LEADER_OR_FOLLOWER elsewhere, as a
    Kafka broker that is no replica of it. A single node keeps leader epoch 0 and checks nothing
    (docs/differences.md)."""
    if requested < 0 or ctx.services.routing is None:
        return ErrorCode.NONE
    plog = ctx.services.logs.partition(topic, partition)
    if plog is None:
        return ErrorCode.NONE
    if requested < plog.leader_epoch:
        return ErrorCode.FENCED_LEADER_EPOCH
    if requested > plog.leader_epoch:
        return ErrorCode.UNKNOWN_LEADER_EPOCH
    return ErrorCode.NONE


def init_producer_id(ctx: RequestContext, req: ip.InitProducerIdRequest) -> Reply[ip.InitProducerIdResponse]:
    if req.transactional_id is not None:
        status = txn_status(ctx, req.transactional_id)  # cluster mode: the id's shard is served here?
        if status != ErrorCode.NONE:
            return ip.InitProducerIdResponse(error_code=status, producer_epoch=-1)
        return asyncio.ensure_future(_init_transactional(ctx, req))
    return asyncio.ensure_future(_init_producer_id(ctx))


async def _init_transactional(
    ctx: RequestContext, req: ip.InitProducerIdRequest
) -> ip.InitProducerIdResponse:
    assert req.transactional_id is not None
    code, pid, epoch = await ctx.services.txn.init_producer_id(
        req.transactional_id, req.transaction_timeout_ms, req.producer_id, req.producer_epoch
    )
    if code == ErrorCode.PRODUCER_FENCED and ctx.version < 4:
        code = ErrorCode.INVALID_PRODUCER_EPOCH
    return ip.InitProducerIdResponse(error_code=code, producer_id=pid, producer_epoch=epoch)


async def _init_producer_id(ctx: RequestContext) -> ip.InitProducerIdResponse:
    pid, epoch = await ctx.services.logs.init_producer_id()
    return ip.InitProducerIdResponse(error_code=0, producer_id=pid, producer_epoch=epoch)


def offset_for_leader_epoch(
    ctx: RequestContext, req: ol.OffsetForLeaderEpochRequest
) -> ol.OffsetForLeaderEpochResponse:
    logs = ctx.services.logs
    topics = []
    for t in req.topics:
        parts = []
        for p in t.partitions:
            plog = logs.partition(t.topic, p.partition)
            if ctx.services.topics.is_internal(t.topic) and ctx.services.topics.has_partition(
                t.topic, p.partition
            ):
                if offsets_led_elsewhere(ctx, p.partition):
                    parts.append(
                        ol.EpochEndOffset(error_code=ErrorCode.NOT_LEADER_OR_FOLLOWER, partition=p.partition)
                    )
                else:
                    parts.append(
                        ol.EpochEndOffset(error_code=0, partition=p.partition, leader_epoch=0, end_offset=0)
                    )
            elif plog is None:  # known but not here: cluster mode's partition led by another node
                code = (
                    ErrorCode.NOT_LEADER_OR_FOLLOWER
                    if ctx.services.topics.has_partition(t.topic, p.partition)
                    else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                )
                parts.append(ol.EpochEndOffset(error_code=code, partition=p.partition))
            elif fenced := leader_epoch_error(ctx, t.topic, p.partition, p.current_leader_epoch):
                parts.append(ol.EpochEndOffset(error_code=fenced, partition=p.partition))
            else:
                epoch, end = logs.epoch_end_offset(t.topic, p.partition, p.leader_epoch)
                parts.append(
                    ol.EpochEndOffset(error_code=0, partition=p.partition, leader_epoch=epoch, end_offset=end)
                )
        topics.append(ol.OffsetForLeaderTopicResult(topic=t.topic, partitions=tuple(parts)))
    return ol.OffsetForLeaderEpochResponse(topics=tuple(topics))


def delete_topics(ctx: RequestContext, req: dt.DeleteTopicsRequest) -> Reply[dt.DeleteTopicsResponse]:
    return asyncio.ensure_future(_delete_topics(ctx, req))


async def _delete_topics(ctx: RequestContext, req: dt.DeleteTopicsRequest) -> dt.DeleteTopicsResponse:
    logs = ctx.services.logs
    topics = ctx.services.topics
    if ctx.version >= 6:
        targets = []
        for t in req.topics:
            info = topics.get(t.name) if t.name is not None else topics.by_id(t.topic_id)
            targets.append((t.name, t.topic_id, info))
    else:
        targets = [(name, None, topics.get(name)) for name in req.topic_names]
    results = []
    for name, topic_id, info in targets:
        if info is not None and topics.is_internal(info.name):
            results.append(
                dt.DeletableTopicResult(
                    name=info.name,
                    topic_id=info.topic_id if ctx.version >= 6 else _zero(),
                    error_code=ErrorCode.INVALID_TOPIC_EXCEPTION,
                    error_message=f"Cannot delete internal topic {info.name}" if ctx.version >= 5 else None,
                )
            )
            continue
        if info is None:
            code = (
                ErrorCode.UNKNOWN_TOPIC_ID
                if ctx.version >= 6 and name is None
                else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            )
            results.append(dt.DeletableTopicResult(name=name, topic_id=topic_id or _zero(), error_code=code))
            continue
        try:
            await logs.delete_topic(info.name)
            code, message = ErrorCode.NONE, None
        except LogError as exc:
            code, message = exc.code, exc.message
        results.append(
            dt.DeletableTopicResult(
                name=info.name,
                topic_id=info.topic_id if ctx.version >= 6 else _zero(),
                error_code=code,
                error_message=message if ctx.version >= 5 else None,
            )
        )
    return dt.DeleteTopicsResponse(responses=tuple(results))


def _zero() -> Any:
    import uuid

    return uuid.UUID(int=0)


def create_partitions(
    ctx: RequestContext, req: cp.CreatePartitionsRequest
) -> Reply[cp.CreatePartitionsResponse]:
    return asyncio.ensure_future(_create_partitions(ctx, req))


async def _create_partitions(
    ctx: RequestContext, req: cp.CreatePartitionsRequest
) -> cp.CreatePartitionsResponse:
    """Kafka's `ReplicationControlManager.createPartitions` checks, in its order; manual assignments must
    name this node once per new partition (replication factor 1)."""
    logs = ctx.services.logs
    node = ctx.services.config.node_id
    results = []
    for t in req.topics:
        code, message = ErrorCode.NONE, None
        info = logs.topic(t.name)
        refused = None
        if info is not None and t.assignments is not None and t.count > info.partitions:
            refused = check_partition_assignments(
                t.count - info.partitions, [a.broker_ids for a in t.assignments], node
            )
        if ctx.services.topics.is_internal(t.name):
            code, message = (
                ErrorCode.INVALID_TOPIC_EXCEPTION,
                f"Cannot add partitions to internal topic {t.name}",
            )
        elif info is None:
            code, message = (
                ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                "This server does not host this topic-partition.",
            )
        elif t.count == info.partitions:
            code, message = ErrorCode.INVALID_PARTITIONS, f"Topic already has {info.partitions} partition(s)."
        elif t.count < info.partitions:
            code, message = (
                ErrorCode.INVALID_PARTITIONS,
                f"The topic {t.name} currently has {info.partitions} partition(s); {t.count} would not be an "
                "increase.",
            )
        elif refused is not None:
            code, message = refused
        elif not req.validate_only:
            try:
                await logs.create_partitions(t.name, t.count)
            except LogError as exc:
                code, message = exc.code, exc.message
        results.append(cp.CreatePartitionsTopicResult(name=t.name, error_code=code, error_message=message))
    return cp.CreatePartitionsResponse(results=tuple(results))


APIS = (
    Api(key=ApiKey.FETCH, handler=fetch, check=authz.fetch),
    Api(key=ApiKey.LIST_OFFSETS, handler=list_offsets, check=authz.list_offsets),
    Api(
        key=ApiKey.INIT_PRODUCER_ID,
        handler=init_producer_id,
        check=authz_txn.init_producer_id,
        txn_ids=by_transactional_id,
    ),
    Api(
        key=ApiKey.OFFSET_FOR_LEADER_EPOCH,
        handler=offset_for_leader_epoch,
        check=authz_admin.offset_for_leader_epoch,
    ),
    Api(key=ApiKey.DELETE_TOPICS, handler=delete_topics, check=authz_admin.delete_topics),
    Api(key=ApiKey.CREATE_PARTITIONS, handler=create_partitions, check=authz_admin.create_partitions),
)
