"""DescribeShareGroupOffsets (90, v0-1), AlterShareGroupOffsets (91, v0), DeleteShareGroupOffsets (92, v0):
the KIP-932 share-group offsets admin APIs (Kafka's KafkaApis.handle*ShareGroupOffsetsRequest and
GroupCoordinatorService.describeShareGroupOffsets / alterShareGroupOffsets / deleteShareGroupOffsets).

The "offset" of a share partition is its start offset (SPSO), kept by `server/share` with the in-flight
records. Describe reads it there and computes the lag as Kafka does (high watermark - SPSO - the records at
or above SPSO already acknowledged or archived); alter and delete first pass the coordinator
(`coordinator/modern/share/offsets.py`: the group must be a share group and empty, and its initialized
partitions are updated durably), then write the share-partition state durably, then answer.

Version notes: DescribeShareGroupOffsets v1 (KIP-1226) adds Lag; v0 answers without it. Alter and Delete
have one version.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Mapping
from typing import TYPE_CHECKING

from groupcoord.protocol.api import ApiKey
from groupcoord.protocol.errors import ErrorCode
from groupcoord.protocol.messages import alter_share_group_offsets as asgo
from groupcoord.protocol.messages import delete_share_group_offsets as dsgo
from groupcoord.protocol.messages import describe_share_group_offsets as dsgof
from groupcoord.server.apis import authz_share, loading
from groupcoord.server.apis.declaration import Api, by_group_id
from groupcoord.server.coordinator.modern.share.offsets import UNKNOWN_TOPIC_MESSAGE, ShareOffsetsDecision

if TYPE_CHECKING:
    from groupcoord.server.net.dispatch import RequestContext

ZERO = uuid.UUID(int=0)
UNKNOWN = int(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
FAILED_WRITE = "The share-partition state could not be stored."


def _failed() -> ShareOffsetsDecision:
    return ShareOffsetsDecision(int(ErrorCode.UNKNOWN_SERVER_ERROR), "The request failed.")


# ----------------------------------------------------------------------------------------- describe


def describe_share_group_offsets(
    ctx: RequestContext, req: dsgof.DescribeShareGroupOffsetsRequest
) -> asyncio.Future[dsgof.DescribeShareGroupOffsetsResponse]:
    return asyncio.ensure_future(_describe(ctx, req))


async def _describe(
    ctx: RequestContext, req: dsgof.DescribeShareGroupOffsetsRequest
) -> dsgof.DescribeShareGroupOffsetsResponse:
    groups = []
    for g in req.groups:
        summaries = await ctx.services.share.summaries(g.group_id)
        groups.append(describe_group(ctx, g.group_id, g.topics, summaries))
    return dsgof.DescribeShareGroupOffsetsResponse(groups=tuple(groups))


def describe_group(
    ctx: RequestContext,
    group_id: str,
    topics: tuple[dsgof.DescribeShareGroupOffsetsRequestTopic, ...] | None,
    summaries: Mapping[tuple[str, int], tuple[int, int]],
) -> dsgof.DescribeShareGroupOffsetsResponseGroup:
    """One group's start offsets and lag. Topics None: every initialized partition of the group (and any
    with stored state); an unknown topic answers StartOffset -1 with no error, as Kafka does. `summaries`:
    the share service's (SPSO, delivery-complete count) per partition with state (cluster mode: as stored,
    whoever leads the partition). Lag uses the high watermark (cluster mode: of a partition led elsewhere,
    as of the last lease tick's read of the log ends)."""
    services = ctx.services
    wanted: list[tuple[str, tuple[int, ...]]] = []
    if topics is None:
        parts: dict[str, set[int]] = {
            t: set(ps) for t, ps in services.machine.share_initialized(group_id).items()
        }
        for t, p in summaries:
            parts.setdefault(t, set()).add(p)
        for tid, ps in sorted(parts.items()):
            info = services.topics.by_id(uuid.UUID(hex=tid))
            if info is not None:  # a deleted topic's leftovers are not described (Kafka: not in the image)
                wanted.append((info.name, tuple(sorted(ps))))
    else:
        wanted = [(t.topic_name, t.partitions) for t in topics]
    out = []
    for name, partitions in wanted:
        info = services.topics.get(name)
        if info is None:
            out.append(
                dsgof.DescribeShareGroupOffsetsResponseTopic(
                    topic_name=name,
                    topic_id=ZERO,
                    partitions=tuple(
                        dsgof.DescribeShareGroupOffsetsResponsePartition(partition_index=p, start_offset=-1)
                        for p in partitions
                    ),
                )
            )
            continue
        rows = []
        for p in partitions:
            summary = summaries.get((info.topic_id.hex, p))
            marks = services.logs.watermarks(name, p)
            if summary is None or marks is None:
                rows.append(
                    dsgof.DescribeShareGroupOffsetsResponsePartition(partition_index=p, start_offset=-1)
                )
                continue
            start, complete = summary
            rows.append(
                dsgof.DescribeShareGroupOffsetsResponsePartition(
                    partition_index=p,
                    start_offset=start,
                    leader_epoch=0,
                    lag=max(marks[1] - start - complete, 0),
                )
            )
        out.append(
            dsgof.DescribeShareGroupOffsetsResponseTopic(
                topic_name=name, topic_id=info.topic_id, partitions=tuple(rows)
            )
        )
    return dsgof.DescribeShareGroupOffsetsResponseGroup(group_id=group_id, topics=tuple(out))


# -------------------------------------------------------------------------------------------- alter


def alter_share_group_offsets(
    ctx: RequestContext, req: asgo.AlterShareGroupOffsetsRequest
) -> asgo.AlterShareGroupOffsetsResponse | asyncio.Future[asgo.AlterShareGroupOffsetsResponse]:
    if not req.group_id:
        return asgo.AlterShareGroupOffsetsResponse(
            error_code=int(ErrorCode.INVALID_GROUP_ID), error_message="The group id is invalid."
        )
    return asyncio.ensure_future(_alter(ctx, req))


async def _alter(
    ctx: RequestContext, req: asgo.AlterShareGroupOffsetsRequest
) -> asgo.AlterShareGroupOffsetsResponse:
    services = ctx.services
    answers: dict[str, tuple[uuid.UUID, list[asgo.AlterShareGroupOffsetsResponsePartition]]] = {}
    offsets: dict[tuple[str, int], int] = {}
    partitions: dict[str, set[int]] = {}
    for t in req.topics:
        info = services.topics.get(t.topic_name)
        tid = info.topic_id if info is not None else ZERO
        rows = answers.setdefault(t.topic_name, (tid, []))[1]
        for p in t.partitions:
            if info is None or not 0 <= p.partition_index < info.partitions:
                rows.append(
                    asgo.AlterShareGroupOffsetsResponsePartition(
                        partition_index=p.partition_index,
                        error_code=UNKNOWN,
                        error_message=UNKNOWN_TOPIC_MESSAGE,
                    )
                )
                continue
            offsets[(tid.hex, p.partition_index)] = p.start_offset
            partitions.setdefault(tid.hex, set()).add(p.partition_index)
            rows.append(asgo.AlterShareGroupOffsetsResponsePartition(partition_index=p.partition_index))
    machine = services.machine
    decision: ShareOffsetsDecision = await _resolved(
        services.runtime.call_parked(
            req.group_id,
            lambda tok, now: machine.share_alter_offsets(req.group_id, partitions, tok, now),
            _failed,
        )
    )
    if decision.error:
        return asgo.AlterShareGroupOffsetsResponse(
            error_code=decision.error, error_message=decision.error_message
        )
    if offsets and not await services.share.reset(req.group_id, offsets, decision.state_epoch):
        for _, rows in answers.values():
            rows[:] = [
                r
                if r.error_code
                else asgo.AlterShareGroupOffsetsResponsePartition(
                    partition_index=r.partition_index,
                    error_code=int(ErrorCode.UNKNOWN_SERVER_ERROR),
                    error_message=FAILED_WRITE,
                )
                for r in rows
            ]
    return asgo.AlterShareGroupOffsetsResponse(
        responses=tuple(
            asgo.AlterShareGroupOffsetsResponseTopic(topic_name=name, topic_id=tid, partitions=tuple(rows))
            for name, (tid, rows) in answers.items()
        )
    )


async def _resolved(value: object) -> ShareOffsetsDecision:
    """A runtime call's result, now or when its future completes (a busy group's queued call resolves to
    the reply token, itself a future)."""
    while isinstance(value, asyncio.Future):
        value = await value
    assert isinstance(value, ShareOffsetsDecision)
    return value


# ------------------------------------------------------------------------------------------- delete


def delete_share_group_offsets(
    ctx: RequestContext, req: dsgo.DeleteShareGroupOffsetsRequest
) -> dsgo.DeleteShareGroupOffsetsResponse | asyncio.Future[dsgo.DeleteShareGroupOffsetsResponse]:
    if not req.group_id:
        return dsgo.DeleteShareGroupOffsetsResponse(
            error_code=int(ErrorCode.INVALID_GROUP_ID), error_message="The group id is invalid."
        )
    return asyncio.ensure_future(_delete(ctx, req))


async def _delete(
    ctx: RequestContext, req: dsgo.DeleteShareGroupOffsetsRequest
) -> dsgo.DeleteShareGroupOffsetsResponse:
    services = ctx.services
    ids: dict[str, str | None] = {}
    for t in req.topics:
        info = services.topics.get(t.topic_name)
        ids[t.topic_name] = info.topic_id.hex if info is not None else None
    with_state = await services.share.topics_with_state(req.group_id)
    machine = services.machine
    decision = await _resolved(
        services.runtime.call_parked(
            req.group_id,
            lambda tok, now: machine.share_delete_offsets(req.group_id, ids, with_state, tok, now),
            _failed,
        )
    )
    if decision.error:
        return dsgo.DeleteShareGroupOffsetsResponse(
            error_code=decision.error, error_message=decision.error_message
        )
    stored = await services.share.delete_topics(req.group_id, decision.deletable)
    failed: Mapping[str, tuple[int, str | None]] = {n: (e, m) for n, e, m in decision.topics}
    out = []
    for name, tid in ids.items():
        err, msg = failed.get(name, (0, None))
        if not err and not stored:
            err, msg = int(ErrorCode.UNKNOWN_SERVER_ERROR), FAILED_WRITE
        out.append(
            dsgo.DeleteShareGroupOffsetsResponseTopic(
                topic_name=name,
                topic_id=uuid.UUID(hex=tid) if tid is not None else ZERO,
                error_code=err,
                error_message=msg,
            )
        )
    return dsgo.DeleteShareGroupOffsetsResponse(responses=tuple(out))


APIS = (
    Api(
        key=ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS,
        handler=describe_share_group_offsets,
        check=authz_share.describe_share_group_offsets,
        groups=lambda version, req: tuple(g.group_id for g in req.groups),
        while_loading=loading.describe_share_group_offsets,
        feature="share",
    ),
    Api(
        key=ApiKey.ALTER_SHARE_GROUP_OFFSETS,
        handler=alter_share_group_offsets,
        check=authz_share.alter_share_group_offsets,
        groups=by_group_id,
        while_loading=loading.alter_share_group_offsets,
        feature="share",
    ),
    Api(
        key=ApiKey.DELETE_SHARE_GROUP_OFFSETS,
        handler=delete_share_group_offsets,
        check=authz_share.delete_share_group_offsets,
        groups=by_group_id,
        while_loading=loading.delete_share_group_offsets,
        feature="share",
    ),
)
