"""The group APIs' answers while the coordinator state is still loading from disk (spec §2.2, §3.1, §4.1, §6,
§7), and the same answers with another code (NOT_COORDINATOR for a group another cluster node owns). Each
API's declaration names its answer here as `while_loading` (server/apis/declaration.py).

The listener opens before `state.db` has been replayed, so clients can connect at once; until the load is
done, group APIs get COORDINATOR_LOAD_IN_PROGRESS (clients retry it), except Heartbeat, which Kafka answers
NONE so that members don't rejoin because of a coordinator restart.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from groupcoord.protocol.errors import ErrorCode
from groupcoord.protocol.messages import alter_share_group_offsets as asgo
from groupcoord.protocol.messages import consumer_group_describe as cgd
from groupcoord.protocol.messages import consumer_group_heartbeat as cgh
from groupcoord.protocol.messages import delete_groups as dl
from groupcoord.protocol.messages import delete_share_group_offsets as dsgo
from groupcoord.protocol.messages import describe_groups as dg
from groupcoord.protocol.messages import describe_share_group_offsets as dsgof
from groupcoord.protocol.messages import heartbeat as hb
from groupcoord.protocol.messages import join_group as jg
from groupcoord.protocol.messages import leave_group as lv
from groupcoord.protocol.messages import list_groups as lg
from groupcoord.protocol.messages import offset_commit as oc
from groupcoord.protocol.messages import offset_delete as od
from groupcoord.protocol.messages import offset_fetch as of
from groupcoord.protocol.messages import share_group_describe as sgd
from groupcoord.protocol.messages import share_group_heartbeat as sgh
from groupcoord.protocol.messages import sync_group as sg
from groupcoord.server.apis.error_answers import commit_errors

if TYPE_CHECKING:
    from groupcoord.server.net.dispatch import RequestContext

LOADING = ErrorCode.COORDINATOR_LOAD_IN_PROGRESS


def join_group(
    ctx: RequestContext, req: jg.JoinGroupRequest, code: ErrorCode = LOADING
) -> jg.JoinGroupResponse:
    return jg.JoinGroupResponse(
        error_code=code, member_id=req.member_id, protocol_name="" if ctx.version < 7 else None
    )


def sync_group(
    ctx: RequestContext, req: sg.SyncGroupRequest, code: ErrorCode = LOADING
) -> sg.SyncGroupResponse:
    return sg.SyncGroupResponse(error_code=code)


def heartbeat(
    ctx: RequestContext, req: hb.HeartbeatRequest, code: ErrorCode = LOADING
) -> hb.HeartbeatResponse:
    # loading: NONE, so members don't rejoin because the coordinator restarted or is taking the group over
    return hb.HeartbeatResponse(error_code=ErrorCode.NONE if code == LOADING else code)


def leave_group(
    ctx: RequestContext, req: lv.LeaveGroupRequest, code: ErrorCode = LOADING
) -> lv.LeaveGroupResponse:
    return lv.LeaveGroupResponse(error_code=code)


def offset_commit(
    ctx: RequestContext, req: oc.OffsetCommitRequest, code: ErrorCode = LOADING
) -> oc.OffsetCommitResponse:
    return commit_errors(req, code)


def offset_fetch(
    ctx: RequestContext, req: of.OffsetFetchRequest, code: ErrorCode = LOADING
) -> of.OffsetFetchResponse:
    if ctx.version >= 8:
        return of.OffsetFetchResponse(groups=tuple(of.OffsetFetchResponseGroup(group_id=g.group_id, error_code=code)
                                                   for g in req.groups))  # fmt: skip
    if ctx.version >= 2:
        return of.OffsetFetchResponse(error_code=code)
    return of.OffsetFetchResponse(
        topics=tuple(
            of.OffsetFetchResponseTopic(
                name=t.name,
                partitions=tuple(
                    of.OffsetFetchResponsePartition(
                        partition_index=p, committed_offset=-1, metadata="", error_code=code
                    )
                    for p in t.partition_indexes
                ),
            )
            for t in req.topics or ()
        )
    )


def describe_groups(
    ctx: RequestContext, req: dg.DescribeGroupsRequest, code: ErrorCode = LOADING
) -> dg.DescribeGroupsResponse:
    return dg.DescribeGroupsResponse(
        groups=tuple(dg.DescribedGroup(error_code=code, group_id=g) for g in req.groups)
    )


def list_groups(
    ctx: RequestContext, req: lg.ListGroupsRequest, code: ErrorCode = LOADING
) -> lg.ListGroupsResponse:
    return lg.ListGroupsResponse(error_code=code)


def delete_groups(
    ctx: RequestContext, req: dl.DeleteGroupsRequest, code: ErrorCode = LOADING
) -> dl.DeleteGroupsResponse:
    return dl.DeleteGroupsResponse(
        results=tuple(
            dl.DeletableGroupResult(group_id=g, error_code=code) for g in dict.fromkeys(req.groups_names)
        )
    )


def offset_delete(
    ctx: RequestContext, req: od.OffsetDeleteRequest, code: ErrorCode = LOADING
) -> od.OffsetDeleteResponse:
    return od.OffsetDeleteResponse(error_code=code)


def consumer_group_heartbeat(
    ctx: RequestContext, req: cgh.ConsumerGroupHeartbeatRequest, code: ErrorCode = LOADING
) -> cgh.ConsumerGroupHeartbeatResponse:
    # KIP-848 clients retry both (librdkafka and Java treat them as coordinator errors, not fatal)
    return cgh.ConsumerGroupHeartbeatResponse(error_code=code)


def consumer_group_describe(
    ctx: RequestContext, req: cgd.ConsumerGroupDescribeRequest, code: ErrorCode = LOADING
) -> cgd.ConsumerGroupDescribeResponse:
    return cgd.ConsumerGroupDescribeResponse(
        groups=tuple(cgd.DescribedGroup(error_code=code, group_id=g) for g in req.group_ids)
    )


def share_group_heartbeat(
    ctx: RequestContext, req: sgh.ShareGroupHeartbeatRequest, code: ErrorCode = LOADING
) -> sgh.ShareGroupHeartbeatResponse:
    return sgh.ShareGroupHeartbeatResponse(error_code=code)


def share_group_describe(
    ctx: RequestContext, req: sgd.ShareGroupDescribeRequest, code: ErrorCode = LOADING
) -> sgd.ShareGroupDescribeResponse:
    return sgd.ShareGroupDescribeResponse(
        groups=tuple(sgd.DescribedShareGroup(error_code=code, group_id=g) for g in req.group_ids)
    )


def describe_share_group_offsets(
    ctx: RequestContext, req: dsgof.DescribeShareGroupOffsetsRequest, code: ErrorCode = LOADING
) -> dsgof.DescribeShareGroupOffsetsResponse:
    return dsgof.DescribeShareGroupOffsetsResponse(
        groups=tuple(
            dsgof.DescribeShareGroupOffsetsResponseGroup(group_id=g.group_id, error_code=code)
            for g in req.groups
        )
    )


def alter_share_group_offsets(
    ctx: RequestContext, req: asgo.AlterShareGroupOffsetsRequest, code: ErrorCode = LOADING
) -> asgo.AlterShareGroupOffsetsResponse:
    return asgo.AlterShareGroupOffsetsResponse(error_code=code)


def delete_share_group_offsets(
    ctx: RequestContext, req: dsgo.DeleteShareGroupOffsetsRequest, code: ErrorCode = LOADING
) -> dsgo.DeleteShareGroupOffsetsResponse:
    return dsgo.DeleteShareGroupOffsetsResponse(error_code=code)
