"""ACL checks of the KIP-932 share-group APIs (Kafka's KafkaApis.handleShareGroupHeartbeatRequest,
handleShareGroupDescribe, handleShareFetchRequest, handleShareAcknowledgeRequest):

| API | needs | denied |
|---|---|---|
| ShareGroupHeartbeat | READ group, DESCRIBE each subscribed topic | GROUP_ / TOPIC_AUTHORIZATION_FAILED |
| ShareGroupDescribe | DESCRIBE group | GROUP_AUTHORIZATION_FAILED for that group |
| ShareFetch, ShareAcknowledge | READ group, READ each topic | top-level GROUP_...; TOPIC_... per partition |
| DescribeShareGroupOffsets | DESCRIBE group, DESCRIBE each topic | GROUP_... for that group; TOPIC_... per partition (Topics null: denied topics left out) |
| AlterShareGroupOffsets | READ group, READ each topic | top-level GROUP_...; TOPIC_... per partition |
| DeleteShareGroupOffsets | DELETE group, READ each topic | top-level GROUP_...; TOPIC_... per topic |

A denied topic's partitions are taken out of the request before the handler runs (so nothing is acquired or
acknowledged there, and they never join the share session) and answered TOPIC_AUTHORIZATION_FAILED.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from typing import Any

from groupcoord.protocol.messages import alter_share_group_offsets as asgo
from groupcoord.protocol.messages import delete_share_group_offsets as dsgo
from groupcoord.protocol.messages import describe_share_group_offsets as dsgof
from groupcoord.protocol.messages import share_acknowledge as sa
from groupcoord.protocol.messages import share_fetch as sf
from groupcoord.protocol.messages import share_group_describe as sgd
from groupcoord.protocol.messages import share_group_heartbeat as sgh
from groupcoord.server.apis.authz_common import GROUP_DENIED, TOPIC_DENIED, Handler, allowed
from groupcoord.server.apis.authz_common import replace_fields as _replace
from groupcoord.server.net.dispatch import RequestContext, resolved, then
from groupcoord.server.security.authorizer import DELETE, DESCRIBE, GROUP, READ, TOPIC

NO_LEADER = sf.ShareLeaderIdAndEpoch(leader_id=-1, leader_epoch=-1)


def share_group_heartbeat(handler: Handler) -> Handler:
    def checked(ctx: RequestContext, req: sgh.ShareGroupHeartbeatRequest) -> Any:
        if not allowed(ctx, READ, GROUP, req.group_id):
            return sgh.ShareGroupHeartbeatResponse(error_code=GROUP_DENIED)
        denied = sorted(n for n in req.subscribed_topic_names or () if not allowed(ctx, DESCRIBE, TOPIC, n))
        if denied:
            return sgh.ShareGroupHeartbeatResponse(
                error_code=TOPIC_DENIED, error_message=f"Topics {denied} are not authorized."
            )
        return handler(ctx, req)

    return checked


def share_group_describe(handler: Handler) -> Handler:
    def checked(ctx: RequestContext, req: sgd.ShareGroupDescribeRequest) -> Any:
        access = ctx.services.access

        def fix(resp: sgd.ShareGroupDescribeResponse) -> sgd.ShareGroupDescribeResponse:
            out = []
            for g in resp.groups:
                if not allowed(ctx, DESCRIBE, GROUP, g.group_id):
                    out.append(sgd.DescribedShareGroup(error_code=GROUP_DENIED, group_id=g.group_id))
                elif req.include_authorized_operations and g.error_code == 0:
                    ops = access.operations(ctx.principal, ctx.conn.peer_host, GROUP, g.group_id)
                    out.append(_replace(g, authorized_operations=ops))
                else:
                    out.append(g)
            return _replace(resp, groups=tuple(out))

        return then(handler(ctx, req), fix)

    return checked


def _readable(ctx: RequestContext, topic_id: Any) -> bool:
    info = ctx.services.topics.by_id(topic_id)
    return info is None or allowed(
        ctx, READ, TOPIC, info.name
    )  # unknown ids are the handler's (UNKNOWN_TOPIC_ID)


def _group_and_topics_read(
    handler: Handler, group_denied: Callable[[], Any], topic_denied: Callable[[Any], Any]
) -> Handler:
    """ShareFetch's and ShareAcknowledge's check: READ on the group, else `group_denied()`; topics the
    principal may not READ are taken out of the request and answered `topic_denied(topic)` after the rest."""

    def checked(ctx: RequestContext, req: Any) -> Any:
        if not allowed(ctx, READ, GROUP, req.group_id or ""):
            return group_denied()
        denied = [t for t in req.topics if not _readable(ctx, t.topic_id)]
        if not denied:
            return handler(ctx, req)
        kept = tuple(t for t in req.topics if _readable(ctx, t.topic_id))

        def fix(resp: Any) -> Any:
            if resp.error_code:
                return resp
            return _replace(resp, responses=resp.responses + tuple(topic_denied(t) for t in denied))

        return then(handler(ctx, _replace(req, topics=kept)), fix)

    return checked


def share_fetch(handler: Handler) -> Handler:
    return _group_and_topics_read(
        handler,
        lambda: sf.ShareFetchResponse(error_code=GROUP_DENIED),
        lambda t: sf.ShareFetchableTopicResponse(
            topic_id=t.topic_id,
            partitions=tuple(
                sf.SharePartitionData(
                    partition_index=p.partition_index,
                    error_code=TOPIC_DENIED,
                    acknowledge_error_code=TOPIC_DENIED if p.acknowledgement_batches else 0,
                    current_leader=NO_LEADER,
                )
                for p in t.partitions
            ),
        ),
    )


def share_acknowledge(handler: Handler) -> Handler:
    return _group_and_topics_read(
        handler,
        lambda: sa.ShareAcknowledgeResponse(error_code=GROUP_DENIED),
        lambda t: sa.ShareAcknowledgeTopicResponse(
            topic_id=t.topic_id,
            partitions=tuple(
                sa.ShareAcknowledgePartitionData(
                    partition_index=p.partition_index, error_code=TOPIC_DENIED, current_leader=NO_LEADER
                )
                for p in t.partitions
            ),
        ),
    )


# ------------------------------------------------------------------ share-group offsets admin (90-92)


def describe_share_group_offsets(handler: Handler) -> Handler:
    """The handler describes only the groups and topics the principal may DESCRIBE; the others are answered
    here, each in its place."""

    def checked(ctx: RequestContext, req: dsgof.DescribeShareGroupOffsetsRequest) -> Any:
        return asyncio.ensure_future(_checked(ctx, req))

    async def _checked(
        ctx: RequestContext, req: dsgof.DescribeShareGroupOffsetsRequest
    ) -> dsgof.DescribeShareGroupOffsetsResponse:
        # per group: None when the group may not be described, else the topics asked that may be (None: all)
        may: list[tuple[dsgof.DescribeShareGroupOffsetsRequestTopic, ...] | None] = []
        asked = []  # the groups the handler describes, each with the topics it may describe
        for g in req.groups:
            if not allowed(ctx, DESCRIBE, GROUP, g.group_id):
                may.append(None)
                continue
            ok = (
                None
                if g.topics is None
                else tuple(t for t in g.topics if allowed(ctx, DESCRIBE, TOPIC, t.topic_name))
            )
            may.append(ok if ok is not None else ())
            asked.append(_replace(g, topics=ok))
        answer = await resolved(handler(ctx, _replace(req, groups=tuple(asked)))) if asked else None
        described = iter(answer.groups if answer is not None else ())
        out = []
        for g, ok in zip(req.groups, may, strict=True):
            if ok is None:
                out.append(
                    dsgof.DescribeShareGroupOffsetsResponseGroup(group_id=g.group_id, error_code=GROUP_DENIED)
                )
                continue
            d = next(described)
            if g.topics is None:  # every initialized partition: the topics not describable are left out
                kept = tuple(t for t in d.topics if allowed(ctx, DESCRIBE, TOPIC, t.topic_name))
                out.append(_replace(d, topics=kept))
                continue
            denied = tuple(
                dsgof.DescribeShareGroupOffsetsResponseTopic(
                    topic_name=t.topic_name,
                    topic_id=_ZERO,
                    partitions=tuple(
                        dsgof.DescribeShareGroupOffsetsResponsePartition(
                            partition_index=p, start_offset=-1, lag=-1, error_code=TOPIC_DENIED
                        )
                        for p in t.partitions
                    ),
                )
                for t in g.topics
                if t not in ok
            )
            out.append(_replace(d, topics=d.topics + denied))
        return dsgof.DescribeShareGroupOffsetsResponse(groups=tuple(out))

    return checked


def _group_and_named_topics_read(
    handler: Handler,
    group_operation: int,
    group_denied: Callable[[], Any],
    topic_denied: Callable[[RequestContext, Any], Any],
) -> Handler:
    """AlterShareGroupOffsets' and DeleteShareGroupOffsets' check: `group_operation` on the group, else
    `group_denied()`; topics (named, not by id) the principal may not READ are taken out of the request and
    answered `topic_denied(ctx, topic)` ahead of the rest."""

    def checked(ctx: RequestContext, req: Any) -> Any:
        if not allowed(ctx, group_operation, GROUP, req.group_id):
            return group_denied()
        denied = [t for t in req.topics if not allowed(ctx, READ, TOPIC, t.topic_name)]
        if not denied:
            return handler(ctx, req)
        kept = tuple(t for t in req.topics if t not in denied)

        def fix(resp: Any) -> Any:
            if resp.error_code:
                return resp
            return _replace(resp, responses=tuple(topic_denied(ctx, t) for t in denied) + resp.responses)

        return then(handler(ctx, _replace(req, topics=kept)), fix)

    return checked


def alter_share_group_offsets(handler: Handler) -> Handler:
    return _group_and_named_topics_read(
        handler,
        READ,
        lambda: asgo.AlterShareGroupOffsetsResponse(error_code=GROUP_DENIED),
        lambda ctx, t: asgo.AlterShareGroupOffsetsResponseTopic(
            topic_name=t.topic_name,
            topic_id=_topic_id(ctx, t.topic_name),
            partitions=tuple(
                asgo.AlterShareGroupOffsetsResponsePartition(
                    partition_index=p.partition_index, error_code=TOPIC_DENIED
                )
                for p in t.partitions
            ),
        ),
    )


def delete_share_group_offsets(handler: Handler) -> Handler:
    return _group_and_named_topics_read(
        handler,
        DELETE,
        lambda: dsgo.DeleteShareGroupOffsetsResponse(error_code=GROUP_DENIED),
        lambda ctx, t: dsgo.DeleteShareGroupOffsetsResponseTopic(
            topic_name=t.topic_name, topic_id=_ZERO, error_code=TOPIC_DENIED
        ),
    )


_ZERO = uuid.UUID(int=0)


def _topic_id(ctx: RequestContext, name: str) -> uuid.UUID:
    info = ctx.services.topics.get(name)
    return info.topic_id if info is not None else _ZERO
