"""DescribeTopicPartitions (75): topics and their partitions, paged, as Kafka's
`DescribeTopicPartitionsRequestHandler` and `KRaftMetadataCache.describeTopicResponse` answer.

Version notes (protocol/messages/describe_topic_partitions.py): v0 only. No topics named means every topic
(`__consumer_offsets` included, as Metadata lists it here); named topics are answered in name order from the
cursor's topic on (a cursor whose topic is not among the named ones, or with a negative partition, is
INVALID_REQUEST). At most ResponsePartitionLimit partitions (bounded to 1..2000, Kafka's
`max.request.partition.size.limit`) are answered; NextCursor then names where to go on. A named topic that
does not exist gets UNKNOWN_TOPIC_OR_PARTITION (INVALID_TOPIC_EXCEPTION for a bad name); when every topic is
asked, none such can occur. Each partition is what Metadata says of it (this node, or in cluster mode its
lease holder and epoch; leader -1 while none holds it), with empty ELR and last known ELR lists: one replica,
always in sync, has no ELR (what Kafka 4.4 answers with eligible.leader.replicas.version 1, which it
enables by default). `kafka-topics --describe` prints these as `Elr:` and `LastKnownElr:` with nothing after.

ACLs (checked here, as Kafka checks them in the handler): DESCRIBE on each topic; when every topic is asked,
those not allowed are left out, when named they get TOPIC_AUTHORIZATION_FAILED (zero topic id), after the
others. TopicAuthorizedOperations is always filled in.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from groupcoord.protocol.api import ApiKey
from groupcoord.protocol.errors import ErrorCode
from groupcoord.protocol.messages.describe_topic_partitions import (
    Cursor,
    DescribeTopicPartitionsRequest,
    DescribeTopicPartitionsResponse,
    DescribeTopicPartitionsResponsePartition,
    DescribeTopicPartitionsResponseTopic,
)
from groupcoord.server.apis.authz import open_to_all
from groupcoord.server.apis.declaration import Api
from groupcoord.server.apis.meta import TOPIC_OPERATIONS, topic_entry
from groupcoord.server.security.authorizer import DESCRIBE, TOPIC

if TYPE_CHECKING:
    from groupcoord.server.net.dispatch import RequestContext

#: Kafka's `max.request.partition.size.limit` default
MAX_PARTITIONS = 2000


class _Refused(Exception):
    pass


def _asked(ctx: RequestContext, req: DescribeTopicPartitionsRequest) -> tuple[list[str], bool]:
    """The topic names to answer, sorted, from the cursor's topic on; whether every topic was asked."""
    start = req.cursor.topic_name if req.cursor is not None else ""
    every = not req.topics
    names = ctx.services.topics.names() if every else [t.name for t in req.topics]
    chosen = {n for n in names if n >= start}
    if not every and req.cursor is not None and req.cursor.topic_name not in chosen:
        raise _Refused(
            "DescribeTopicPartitionsRequest topic list should contain the cursor topic: "
            + req.cursor.topic_name
        )
    if req.cursor is not None and req.cursor.partition_index < 0:
        raise _Refused("DescribeTopicPartitionsRequest cursor partition must be valid")
    return sorted(chosen), every


def _operations(ctx: RequestContext, name: str) -> int:
    access = ctx.services.access
    if not access.enabled:
        return TOPIC_OPERATIONS
    return access.operations(ctx.principal, ctx.conn.peer_host, TOPIC, name)


def _partitions(
    ctx: RequestContext, name: str, start: int, room: int
) -> tuple[DescribeTopicPartitionsResponseTopic, int]:
    """The topic with partitions start..start+room-1; the next partition to answer, or -1 when done."""
    entry = topic_entry(ctx, name)
    info = ctx.services.topics.get(name)
    assert info is not None
    upper = min(info.partitions, start + room)
    parts = tuple(
        DescribeTopicPartitionsResponsePartition(
            error_code=ErrorCode.NONE,
            partition_index=p.partition_index,
            leader_id=p.leader_id,
            leader_epoch=p.leader_epoch,
            replica_nodes=p.replica_nodes,
            isr_nodes=p.isr_nodes,
            eligible_leader_replicas=(),
            last_known_elr=(),
            offline_replicas=(),
        )
        for p in entry.partitions[start:upper]
    )
    topic = DescribeTopicPartitionsResponseTopic(
        error_code=ErrorCode.NONE,
        name=name,
        topic_id=info.topic_id,
        is_internal=ctx.services.topics.is_internal(name),
        partitions=parts,
        topic_authorized_operations=_operations(ctx, name),
    )
    return topic, (upper if upper < info.partitions else -1)


def describe_topic_partitions(
    ctx: RequestContext, req: DescribeTopicPartitionsRequest
) -> DescribeTopicPartitionsResponse:
    try:
        names, every = _asked(ctx, req)
    except _Refused:  # Kafka's getErrorResponse: every named topic with the error
        return DescribeTopicPartitionsResponse(
            topics=tuple(
                DescribeTopicPartitionsResponseTopic(error_code=ErrorCode.INVALID_REQUEST, name=t.name)
                for t in req.topics
            )
        )
    topics = ctx.services.topics
    denied = [
        n
        for n in names
        if not ctx.services.access.authorize(ctx.principal, ctx.conn.peer_host, DESCRIBE, TOPIC, n)
    ]
    remaining = max(min(MAX_PARTITIONS, req.response_partition_limit), 1)
    out: list[DescribeTopicPartitionsResponseTopic] = []
    cursor: Cursor | None = None
    for name in (n for n in names if n not in denied):
        if remaining == 0:
            cursor = Cursor(topic_name=name, partition_index=0)
            break
        if topics.get(name) is None:
            if not every:
                code = (
                    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                    if topics.valid_name(name)
                    else ErrorCode.INVALID_TOPIC_EXCEPTION
                )
                out.append(
                    DescribeTopicPartitionsResponseTopic(
                        error_code=code, name=name, is_internal=topics.is_internal(name)
                    )
                )
            continue
        start = req.cursor.partition_index if req.cursor is not None and name == req.cursor.topic_name else 0
        topic, next_partition = _partitions(ctx, name, start, remaining)
        out.append(topic)
        if next_partition != -1:
            cursor = Cursor(topic_name=name, partition_index=next_partition)
            break
        remaining -= len(topic.partitions)
    if not every:
        out += [
            DescribeTopicPartitionsResponseTopic(error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED, name=n)
            for n in denied
        ]
    return DescribeTopicPartitionsResponse(topics=tuple(out), next_cursor=cursor)


#: the handler checks DESCRIBE on each topic itself, as Kafka's does
APIS = (Api(key=ApiKey.DESCRIBE_TOPIC_PARTITIONS, handler=describe_topic_partitions, check=open_to_all),)
