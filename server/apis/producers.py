"""DescribeProducers (61) and WriteTxnMarkers (27): what `kafka-transactions.sh describe-producers`,
`find-hanging` and `abort` use (KIP-664), as Kafka's `KafkaApis` answers them.

DescribeProducers v0: per topic, an invalid name gets INVALID_TOPIC_EXCEPTION, an unknown topic
UNKNOWN_TOPIC_OR_PARTITION (the READ check on the topic, TOPIC_AUTHORIZATION_FAILED, sits between the two in
`authz_tools`); per partition, one this node does not host gets UNKNOWN_TOPIC_OR_PARTITION, else the
partition log's active producers (`server/log/producer_state.py`): id, epoch, last sequence, last timestamp,
coordinator epoch of its last marker, and the first offset of its open transaction (-1 when none;
`server/log/txn_state.py`). The internal `__consumer_offsets` is no log here: it has no producers to list.

WriteTxnMarkers v1-2: each marker is written to each of its partitions through the same log call the
transaction coordinator uses for its own markers (`LogManager.write_marker`: a COMMIT/ABORT control batch,
durable before the answer under the "always" flush policy); a partition this node does not host gets
UNKNOWN_TOPIC_OR_PARTITION. A marker for a `__consumer_offsets` partition completes the producer's pending
transactional offsets instead, as Kafka's `groupCoordinator.completeTransaction` does: here every group
holding pending offsets of that producer, since the groups are not spread over log partitions
(docs/differences.md). The answer has one entry per producer id. The ACL check (ALTER or CLUSTER_ACTION on
CLUSTER) is in `authz_tools`.

Cluster mode: this is how a transaction coordinator on another node writes a marker here
(server/cluster/markers.py): a partition this node does not lead gets NOT_LEADER_OR_FOLLOWER from the
`ClusterLog` (the coordinator retries at the new leader), and `__consumer_offsets` partition N — group shard
N — is completed only while this node serves shard N (NOT_LEADER_OR_FOLLOWER otherwise, as Kafka answers for
a `__consumer_offsets` partition it does not lead).
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from groupcoord.protocol.api import ApiKey
from groupcoord.protocol.errors import ErrorCode
from groupcoord.protocol.messages import describe_producers as dp
from groupcoord.protocol.messages import write_txn_markers as wm
from groupcoord.server.apis import authz_tools
from groupcoord.server.apis.declaration import Api

if TYPE_CHECKING:
    from groupcoord.server.net.dispatch import RequestContext

UNKNOWN_MESSAGE = "This server does not host this topic-partition."
INVALID_TOPIC_MESSAGE = "The request attempted to perform an operation on an invalid topic."


def describe_producers(ctx: RequestContext, req: dp.DescribeProducersRequest) -> dp.DescribeProducersResponse:
    topics = ctx.services.topics
    logs = ctx.services.logs
    out = []
    for t in req.topics:
        topic_error: tuple[int, str] | None = None
        if not topics.valid_name(t.name):
            topic_error = (ErrorCode.INVALID_TOPIC_EXCEPTION, INVALID_TOPIC_MESSAGE)
        elif topics.get(t.name) is None:
            topic_error = (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, UNKNOWN_MESSAGE)
        parts = []
        for p in t.partition_indexes:
            if topic_error is not None:
                code, message = topic_error
                parts.append(dp.DescribeProducersPartitionResponse(p, code, message))
                continue
            if not topics.has_partition(t.name, p):
                parts.append(
                    dp.DescribeProducersPartitionResponse(
                        p, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, UNKNOWN_MESSAGE
                    )
                )
                continue
            plog = logs.partition(t.name, p)
            active: list[dp.ProducerState] = []
            if plog is not None:
                ongoing = plog.txns.ongoing
                for e in plog.producers.producers.values():
                    active.append(
                        dp.ProducerState(
                            producer_id=e.producer_id,
                            producer_epoch=e.epoch,
                            last_sequence=e.last_seq,
                            last_timestamp=e.last_timestamp,
                            coordinator_epoch=e.coordinator_epoch,
                            current_txn_start_offset=ongoing.get(e.producer_id, -1),
                        )
                    )
            parts.append(
                dp.DescribeProducersPartitionResponse(p, ErrorCode.NONE, None, active_producers=tuple(active))
            )
        out.append(dp.DescribeProducersTopicResponse(name=t.name, partitions=tuple(parts)))
    return dp.DescribeProducersResponse(topics=tuple(out))


def write_txn_markers(ctx: RequestContext, req: wm.WriteTxnMarkersRequest) -> Any:
    return asyncio.ensure_future(_write_markers(ctx, req))


async def _write_markers(ctx: RequestContext, req: wm.WriteTxnMarkersRequest) -> wm.WriteTxnMarkersResponse:
    topics = ctx.services.topics
    logs = ctx.services.logs
    by_producer: dict[int, dict[str, list[wm.WritableTxnMarkerPartitionResult]]] = {}
    for m in req.markers:
        results = by_producer.setdefault(m.producer_id, {})
        groups_done: ErrorCode | None = None
        for t in m.topics:
            for p in t.partition_indexes:
                if not topics.has_partition(t.name, p):
                    code: int = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                elif topics.is_internal(t.name):
                    routing = ctx.services.routing
                    status = ErrorCode.NONE if routing is None else routing.shard_status(p)
                    if status != ErrorCode.NONE:  # cluster mode: the group's shard is not (yet) served here
                        code = ErrorCode.NOT_LEADER_OR_FOLLOWER
                    else:
                        if groups_done is None:
                            groups_done = await _complete_groups(ctx, m.producer_id, m.transaction_result)
                        code = groups_done
                else:
                    code = await logs.write_marker(
                        t.name, p, m.producer_id, m.producer_epoch, m.transaction_result, m.coordinator_epoch
                    )
                results.setdefault(t.name, []).append(wm.WritableTxnMarkerPartitionResult(p, code))
    return wm.WriteTxnMarkersResponse(
        markers=tuple(
            wm.WritableTxnMarkerResult(
                producer_id=pid,
                topics=tuple(
                    wm.WritableTxnMarkerTopicResult(name=n, partitions=tuple(ps))
                    for n, ps in per_topic.items()
                ),
            )
            for pid, per_topic in by_producer.items()
        )
    )


async def _complete_groups(ctx: RequestContext, producer_id: int, commit: bool) -> ErrorCode:
    """The producer's pending transactional offsets, in every group holding some, made committed or dropped.

    Kafka maps a failure of its group coordinator here to NOT_LEADER_OR_FOLLOWER ("not ready yet")."""
    for group_id in ctx.services.machine.groups_with_pending_transaction(producer_id):
        if not await ctx.services.txn.complete_group(group_id, producer_id, commit):
            return ErrorCode.NOT_LEADER_OR_FOLLOWER
    return ErrorCode.NONE


APIS = (
    Api(key=ApiKey.DESCRIBE_PRODUCERS, handler=describe_producers, check=authz_tools.describe_producers),
    Api(key=ApiKey.WRITE_TXN_MARKERS, handler=write_txn_markers, check=authz_tools.write_txn_markers),
)
