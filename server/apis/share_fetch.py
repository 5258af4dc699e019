"""ShareFetch (78, v1-2) and ShareAcknowledge (79, v1-2): KIP-932 record delivery to share-group members.

These handlers check the request (Kafka's KafkaApis.handleShareFetchRequest / validateAcknowledgementBatches),
take the share session's context (server/share/context.py: the epoch rules, Kafka's ShareFetchContext), and
hand acknowledgements and fetches to the share service (server/share/service.py). Acknowledgements are applied
before the fetch and are answered only once durable.

Version notes: v1 is what librdkafka 2.16 sends; v2 (Java 4.3) adds ShareAcquireMode (read but treated as
batch_optimized: the record budget is applied per record either way) and IsRenewAck (RENEW acknowledgements;
such a request must carry zero limits and fetches nothing). Errors of the session (SHARE_SESSION_NOT_FOUND,
INVALID_SHARE_SESSION_EPOCH, SHARE_SESSION_LIMIT_REACHED) and of the request (INVALID_REQUEST) are top-level,
and then no acknowledgement is applied.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from groupcoord.protocol.api import ApiKey
from groupcoord.protocol.errors import ErrorCode
from groupcoord.protocol.messages import share_acknowledge as sa
from groupcoord.protocol.messages import share_fetch as sf
from groupcoord.server.apis import authz_share
from groupcoord.server.apis.declaration import Api
from groupcoord.server.share.context import SessionRefused, acknowledge_context, fetch_context
from groupcoord.server.share.partition import AckBatch
from groupcoord.server.share.service import Fetched
from groupcoord.server.share.sessions import Key

if TYPE_CHECKING:
    from groupcoord.server.net.dispatch import RequestContext

NO_LEADER = sf.ShareLeaderIdAndEpoch(leader_id=-1, leader_epoch=-1)
E = ErrorCode


def _batches(raw: Sequence[sf.AcknowledgementBatch], version: int, renew: bool) -> list[AckBatch] | None:
    """Kafka's validateAcknowledgementBatches: None when the partition gets INVALID_REQUEST."""
    out: list[AckBatch] = []
    prev_last = -1
    top = 4 if version >= 2 else 3
    for b in raw:
        types = tuple(b.acknowledge_types)
        if b.first_offset > b.last_offset or b.first_offset < prev_last or not types:
            return None
        if len(types) > 1 and len(types) != b.last_offset - b.first_offset + 1:
            return None
        if any(t < 0 or t > top for t in types) or (4 in types and not renew):
            return None
        prev_last = b.last_offset
        out.append(AckBatch(b.first_offset, b.last_offset, types))
    return out


class _Resolved:
    """The request's partitions by (topic id hex, partition), with the topic name or the partition's error."""

    def __init__(self, ctx: RequestContext) -> None:
        self.topics = ctx.services.topics
        self.names: dict[str, str | None] = {}

    def name(self, topic_id: uuid.UUID) -> str | None:
        h = topic_id.hex
        if h not in self.names:
            info = self.topics.by_id(topic_id)
            self.names[h] = None if info is None or self.topics.is_internal(info.name) else info.name
        return self.names[h]

    def error(self, k: Key) -> int:
        name = self.name(uuid.UUID(hex=k[0]))
        if name is None:
            return int(E.UNKNOWN_TOPIC_ID)
        if not self.topics.has_partition(name, k[1]):
            return int(E.UNKNOWN_TOPIC_OR_PARTITION)
        return 0


class _Leaders:
    """Cluster mode: a partition answered NOT_LEADER_OR_FOLLOWER names its current leader, and the response
    that leader's endpoint (Kafka's ShareFetch/ShareAcknowledge CurrentLeader and NodeEndpoints), so the
    client can go there before its next Metadata."""

    def __init__(self, ctx: RequestContext, resolved: _Resolved) -> None:
        self.routing = ctx.services.routing
        self.resolved = resolved
        self.endpoints: dict[int, sf.ShareNodeEndpoint] = {}

    def of(self, k: Key, code: int) -> sf.ShareLeaderIdAndEpoch:
        if code != E.NOT_LEADER_OR_FOLLOWER or self.routing is None:
            return NO_LEADER
        name = self.resolved.name(uuid.UUID(hex=k[0]))
        found = None if name is None else self.routing.partition_leader(name, k[1])
        if found is None:
            return NO_LEADER
        node, epoch = found
        self.endpoints[node.node_id] = sf.ShareNodeEndpoint(
            node_id=node.node_id, host=node.host, port=node.port
        )
        return sf.ShareLeaderIdAndEpoch(leader_id=node.node_id, leader_epoch=epoch)


def _valid_member(member_id: str | None) -> bool:
    return member_id is not None and 0 < len(member_id) <= 36


def share_fetch(ctx: RequestContext, req: sf.ShareFetchRequest) -> Any:
    return asyncio.ensure_future(_share_fetch(ctx, req))


def _fetch_error(code: ErrorCode, message: str, lock_ms: int) -> sf.ShareFetchResponse:
    return sf.ShareFetchResponse(
        error_code=int(code), error_message=message, acquisition_lock_timeout_ms=lock_ms
    )


async def _share_fetch(ctx: RequestContext, req: sf.ShareFetchRequest) -> sf.ShareFetchResponse:
    service = ctx.services.share
    group_id, member_id, epoch = req.group_id or "", req.member_id, req.share_session_epoch
    lock_ms = service.config_for(group_id).record_lock_duration_ms  # share.record.lock.duration.ms
    if not _valid_member(member_id) or not group_id:
        return _fetch_error(E.INVALID_REQUEST, "Invalid member id or group id", lock_ms)
    assert member_id is not None
    renew = ctx.version >= 2 and req.is_renew_ack
    if renew and (req.max_bytes or req.min_bytes or req.max_records or req.max_wait_ms):
        return _fetch_error(E.INVALID_REQUEST, "IsRenewAck requires zero fetch limits", lock_ms)
    wanted = [((t.topic_id.hex, p.partition_index), p) for t in req.topics for p in t.partitions]
    forgotten = [(t.topic_id.hex, p) for t in req.forgotten_topics_data for p in t.partitions]
    has_acks = any(p.acknowledgement_batches for _, p in wanted)
    context = fetch_context(
        service.sessions, group_id, member_id, ctx.conn, epoch, [k for k, _ in wanted], forgotten, has_acks
    )
    if isinstance(context, SessionRefused):
        return _fetch_error(context.error, context.message, lock_ms)
    session, full = context.session, context.full
    resolved = _Resolved(ctx)
    partition_errors: dict[Key, int] = {}
    ack_results: dict[Key, tuple[int, str | None]] = {}
    acks: dict[Key, list[AckBatch]] = {}
    for k, p in wanted:
        perr = resolved.error(k)
        if perr:
            partition_errors[k] = perr
            if p.acknowledgement_batches:
                ack_results[k] = (perr, None)
            continue
        if p.acknowledgement_batches:
            batches = _batches(p.acknowledgement_batches, ctx.version, renew)
            if batches is None:
                ack_results[k] = (int(E.INVALID_REQUEST), "Invalid acknowledgement batches")
            else:
                acks[k] = batches
    if acks:
        ack_results.update(await service.acknowledge(group_id, member_id, acks, renew))
    fetched: dict[Key, Fetched] = {}
    if context.final:
        service.release(group_id, member_id, context.close())
    elif not renew:
        parts = []
        for k in session.partitions:
            if k in partition_errors or resolved.error(k):
                partition_errors.setdefault(k, resolved.error(k))
                continue
            name = resolved.name(uuid.UUID(hex=k[0]))
            assert name is not None
            parts.append((k, name))
        fetched = await service.fetch(
            group_id,
            member_id,
            parts,
            max_records=req.max_records,
            max_bytes=req.max_bytes,
            min_bytes=req.min_bytes,
            max_wait_ms=req.max_wait_ms,
        )
    listed: list[Key] = list(session.partitions) if full else []
    for k in (*partition_errors, *ack_results, *(k for k, f in fetched.items() if f.acquired or f.error)):
        if k not in listed:
            listed.append(k)
    by_topic: dict[str, list[sf.SharePartitionData]] = {}
    leaders = _Leaders(ctx, resolved)
    for k in listed:
        f = fetched.get(k)
        aerr, amsg = ack_results.get(k, (0, None))
        perr = partition_errors.get(k, f.error if f else 0)
        by_topic.setdefault(k[0], []).append(
            sf.SharePartitionData(
                partition_index=k[1],
                error_code=perr,
                acknowledge_error_code=aerr,
                acknowledge_error_message=amsg,
                current_leader=leaders.of(k, perr or aerr),
                records=f.records if f else b"",
                acquired_records=tuple(
                    sf.AcquiredRecords(
                        first_offset=a.first_offset,
                        last_offset=a.last_offset,
                        delivery_count=a.delivery_count,
                    )
                    for a in (f.acquired if f else ())
                ),
            )
        )
    return sf.ShareFetchResponse(
        acquisition_lock_timeout_ms=lock_ms,
        responses=tuple(
            sf.ShareFetchableTopicResponse(topic_id=uuid.UUID(hex=t), partitions=tuple(ps))
            for t, ps in by_topic.items()
        ),
        node_endpoints=tuple(leaders.endpoints.values()),
    )


def share_acknowledge(ctx: RequestContext, req: sa.ShareAcknowledgeRequest) -> Any:
    return asyncio.ensure_future(_share_acknowledge(ctx, req))


async def _share_acknowledge(
    ctx: RequestContext, req: sa.ShareAcknowledgeRequest
) -> sa.ShareAcknowledgeResponse:
    service = ctx.services.share
    group_id, member_id, epoch = req.group_id or "", req.member_id, req.share_session_epoch
    lock_ms = service.config_for(group_id).record_lock_duration_ms  # share.record.lock.duration.ms

    def error(code: ErrorCode, message: str) -> sa.ShareAcknowledgeResponse:
        return sa.ShareAcknowledgeResponse(
            error_code=int(code),
            error_message=message,
            acquisition_lock_timeout_ms=lock_ms if ctx.version >= 2 else 0,
        )

    if not _valid_member(member_id) or not group_id:
        return error(E.INVALID_REQUEST, "Invalid member id or group id")
    assert member_id is not None
    context = acknowledge_context(service.sessions, group_id, member_id, epoch)
    if isinstance(context, SessionRefused):
        return error(context.error, context.message)
    renew = ctx.version >= 2 and req.is_renew_ack
    resolved = _Resolved(ctx)
    results: dict[Key, tuple[int, str | None]] = {}
    acks: dict[Key, list[AckBatch]] = {}
    for t in req.topics:
        for p in t.partitions:
            k = (t.topic_id.hex, p.partition_index)
            perr = resolved.error(k)
            if perr:
                results[k] = (perr, None)
                continue
            batches = _batches(p.acknowledgement_batches, ctx.version, renew)
            if batches is None:
                results[k] = (int(E.INVALID_REQUEST), "Invalid acknowledgement batches")
            else:
                acks[k] = batches
    if acks:
        results.update(await service.acknowledge(group_id, member_id, acks, renew))
    if context.final:
        service.release(group_id, member_id, context.close())
    by_topic: dict[str, list[sa.ShareAcknowledgePartitionData]] = {}
    leaders = _Leaders(ctx, resolved)
    for k, (code, msg) in results.items():
        by_topic.setdefault(k[0], []).append(
            sa.ShareAcknowledgePartitionData(
                partition_index=k[1], error_code=code, error_message=msg, current_leader=leaders.of(k, code)
            )
        )
    return sa.ShareAcknowledgeResponse(
        acquisition_lock_timeout_ms=lock_ms if ctx.version >= 2 else 0,
        responses=tuple(
            sa.ShareAcknowledgeTopicResponse(topic_id=uuid.UUID(hex=t), partitions=tuple(ps))
            for t, ps in by_topic.items()
        ),
        node_endpoints=tuple(leaders.endpoints.values()),
    )


# named by group but served by the share partitions' leaders (KIP-932), not routed to a group's shard
APIS = (
    Api(key=ApiKey.SHARE_FETCH, handler=share_fetch, check=authz_share.share_fetch, feature="share"),
    Api(
        key=ApiKey.SHARE_ACKNOWLEDGE,
        handler=share_acknowledge,
        check=authz_share.share_acknowledge,
        feature="share",
    ),
)
