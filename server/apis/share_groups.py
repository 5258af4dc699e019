"""ShareGroupHeartbeat (76, v1) and ShareGroupDescribe (77, v1): KIP-932 share-group membership.

These handlers translate only; the group logic is `server/coordinator/modern/share`. The heartbeat hands the
coordinator the metadata of every topic the group subscribes to (name -> topic id, partition count), the part
of Kafka's metadata image the simple assignor reads, since the pure coordinator cannot look at the log.

Version notes: v0 of both APIs was Kafka 4.0's early access and is not offered; v1 is the only version.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

from groupcoord.protocol.api import ApiKey
from groupcoord.protocol.errors import ErrorCode
from groupcoord.protocol.messages import share_group_describe as sgd
from groupcoord.protocol.messages.share_group_heartbeat import (
    ShareAssignment,
    ShareGroupHeartbeatRequest,
    ShareGroupHeartbeatResponse,
    ShareTopicPartitions,
)
from groupcoord.server.apis import authz_share, loading
from groupcoord.server.apis.declaration import Api, by_group_id, by_group_ids
from groupcoord.server.coordinator.modern.share.group import ShareHeartbeatRequest, ShareHeartbeatResult
from groupcoord.server.net.dispatch import then

if TYPE_CHECKING:
    from groupcoord.server.net.dispatch import RequestContext

INT_MIN = -(2**31)


def share_group_heartbeat(ctx: RequestContext, req: ShareGroupHeartbeatRequest) -> Any:
    services = ctx.services
    machine = services.machine
    names = set(machine.share_subscribed_names(req.group_id)) | set(req.subscribed_topic_names or ())
    topics: dict[str, tuple[str, int]] = {}
    for name in names:
        info = services.topics.get(name)
        if info is not None and not services.topics.is_internal(name):
            topics[name] = (info.topic_id.hex, info.partitions)
    mreq = ShareHeartbeatRequest(
        group_id=req.group_id,
        member_id=req.member_id,
        member_epoch=req.member_epoch,
        rack_id=req.rack_id,
        subscribed_topic_names=req.subscribed_topic_names,
        client_id=ctx.client_id,
        client_host=ctx.client_host,
        topics=topics,
    )
    return then(
        services.runtime.call_parked(
            req.group_id,
            lambda tok, now: machine.share_group_heartbeat(mreq, tok, now),
            lambda: ShareHeartbeatResult(int(ErrorCode.UNKNOWN_SERVER_ERROR)),
        ),
        heartbeat_response,
    )


def heartbeat_response(r: ShareHeartbeatResult) -> ShareGroupHeartbeatResponse:
    assignment = None
    if r.assignment is not None:
        assignment = ShareAssignment(
            topic_partitions=tuple(
                ShareTopicPartitions(topic_id=uuid.UUID(hex=t), partitions=ps) for t, ps in r.assignment
            )
        )
    return ShareGroupHeartbeatResponse(
        error_code=r.error,
        error_message=r.error_message,
        member_id=r.member_id,
        member_epoch=r.member_epoch,
        heartbeat_interval_ms=r.heartbeat_interval_ms,
        assignment=assignment,
    )


def share_group_describe(
    ctx: RequestContext, req: sgd.ShareGroupDescribeRequest
) -> sgd.ShareGroupDescribeResponse:
    services = ctx.services
    groups = []
    for d in services.machine.share_group_describe(req.group_ids):
        members = []
        for mm in d.members:
            tps = []
            for t, ps in mm.assignment:
                info = services.topics.by_id(uuid.UUID(hex=t))
                tps.append(
                    sgd.DescribedTopicPartitions(
                        topic_id=uuid.UUID(hex=t), topic_name=info.name if info else "", partitions=ps
                    )
                )
            members.append(
                sgd.DescribedShareMember(
                    member_id=mm.member_id,
                    rack_id=mm.rack_id,
                    member_epoch=mm.member_epoch,
                    client_id=mm.client_id,
                    client_host=mm.client_host,
                    subscribed_topic_names=mm.subscribed_topic_names,
                    assignment=sgd.DescribedAssignment(topic_partitions=tuple(tps)),
                )
            )
        groups.append(
            sgd.DescribedShareGroup(
                error_code=d.error,
                error_message=d.error_message,
                group_id=d.group_id,
                group_state=d.state,
                group_epoch=d.group_epoch,
                assignment_epoch=d.assignment_epoch,
                assignor_name=d.assignor_name,
                members=tuple(members),
                authorized_operations=INT_MIN,
            )
        )
    return sgd.ShareGroupDescribeResponse(groups=tuple(groups))


APIS = (
    Api(
        key=ApiKey.SHARE_GROUP_HEARTBEAT,
        handler=share_group_heartbeat,
        check=authz_share.share_group_heartbeat,
        groups=by_group_id,
        while_loading=loading.share_group_heartbeat,
        feature="share",
    ),
    Api(
        key=ApiKey.SHARE_GROUP_DESCRIBE,
        handler=share_group_describe,
        check=authz_share.share_group_describe,
        groups=by_group_ids,
        while_loading=loading.share_group_describe,
        feature="share",
    ),
)
