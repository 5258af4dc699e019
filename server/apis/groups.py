"""JoinGroup, SyncGroup, Heartbeat, LeaveGroup, DescribeGroups, ListGroups, DeleteGroups.

These handlers only translate: every wire version is normalised into the state machine's request types and
the machine's results are written back in the shape each version expects (spec §2.10, §3.6, §5.5, §7).
The group logic itself lives in `groupcoord.server.coordinator`.

Version-dependent shaping done here:
- JoinGroup: ProtocolName null becomes "" up to v6, "" becomes null from v7; ProtocolType from v7; members'
  GroupInstanceId from v5 (dropped below, being ignorable); SkipAssignment from v9.
- SyncGroup v5: a request without ProtocolType or ProtocolName gets INCONSISTENT_GROUP_PROTOCOL (KafkaApis).
- LeaveGroup v0-v2: the single MemberId becomes one batch entry; the answer is the top-level error, else
  that entry's error.
- DescribeGroups v6 (KIP-1043): a group that does not exist, or is a consumer or share group, gets
  GROUP_ID_NOT_FOUND with Kafka's ErrorMessage and state Dead; v0-v5 get the empty Dead answer (no error).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from groupcoord.protocol.api import ApiKey
from groupcoord.protocol.codec import encode_response
from groupcoord.protocol.errors import ErrorCode
from groupcoord.protocol.fast import parse_heartbeat
from groupcoord.protocol.messages import describe_groups as dg
from groupcoord.protocol.messages import list_groups as lg
from groupcoord.protocol.messages.delete_groups import (
    DeletableGroupResult,
    DeleteGroupsRequest,
    DeleteGroupsResponse,
)
from groupcoord.protocol.messages.heartbeat import HeartbeatRequest, HeartbeatResponse
from groupcoord.protocol.messages.join_group import (
    JoinGroupRequest,
    JoinGroupResponse,
    JoinGroupResponseMember,
)
from groupcoord.protocol.messages.leave_group import LeaveGroupRequest, LeaveGroupResponse, MemberResponse
from groupcoord.protocol.messages.sync_group import SyncGroupRequest, SyncGroupResponse
from groupcoord.server.apis import authz, loading
from groupcoord.server.apis.declaration import Api, by_group_id
from groupcoord.server.coordinator import types as m
from groupcoord.server.net.dispatch import Prebuilt, then

if TYPE_CHECKING:
    from groupcoord.server.net.dispatch import Peer, RequestContext
    from groupcoord.server.services import HandlerServices

# READ, DELETE and DESCRIBE: everything a client may do to a group when no authorizer is configured
GROUP_AUTHORIZED_OPERATIONS = (1 << 3) | (1 << 6) | (1 << 8)
INT_MIN = -(2**31)


UNKNOWN_SERVER_ERROR = int(ErrorCode.UNKNOWN_SERVER_ERROR)


def _by_name(protocols: Iterable[Any]) -> tuple[tuple[str, bytes], ...]:
    """A member's protocols keyed by name, as Kafka's JoinGroup collection is (`mapKey` on Name): a name
    listed twice counts once, with the metadata of its first entry."""
    seen: dict[str, bytes] = {}
    for p in protocols:
        seen.setdefault(p.name, p.metadata)
    return tuple(seen.items())


def join_group(ctx: RequestContext, req: JoinGroupRequest) -> Any:
    v = ctx.version
    mreq = m.JoinGroupRequest(
        version=v,
        group_id=req.group_id,
        session_timeout_ms=req.session_timeout_ms,
        rebalance_timeout_ms=req.rebalance_timeout_ms,
        member_id=req.member_id,
        group_instance_id=req.group_instance_id,
        protocol_type=req.protocol_type,
        protocols=_by_name(req.protocols),
        reason=req.reason,
        client_id=ctx.client_id,
        client_host=ctx.client_host,
    )
    machine = ctx.services.machine
    return then(
        ctx.services.runtime.call_parked(
            req.group_id,
            lambda tok, now: machine.join_group(mreq, tok, now),
            lambda: m.JoinGroupResult(UNKNOWN_SERVER_ERROR, member_id=req.member_id),
        ),
        lambda r: join_response(r, v),
    )


def join_response(r: m.JoinGroupResult, v: int) -> JoinGroupResponse:
    name = r.protocol_name
    if v < 7:
        name = name or ""
    elif name == "":
        name = None
    return JoinGroupResponse(
        error_code=r.error,
        generation_id=r.generation_id,
        protocol_type=r.protocol_type if v >= 7 else None,
        protocol_name=name,
        leader=r.leader,
        skip_assignment=r.skip_assignment if v >= 9 else False,
        member_id=r.member_id,
        members=tuple(
            JoinGroupResponseMember(
                member_id=mm.member_id,
                group_instance_id=mm.group_instance_id if v >= 5 else None,
                metadata=mm.metadata,
            )
            for mm in r.members
        ),
    )


def sync_group(ctx: RequestContext, req: SyncGroupRequest) -> Any:
    v = ctx.version
    if v >= 5 and (req.protocol_type is None or req.protocol_name is None):
        return SyncGroupResponse(error_code=ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
    mreq = m.SyncGroupRequest(
        version=v,
        group_id=req.group_id,
        generation_id=req.generation_id,
        member_id=req.member_id,
        group_instance_id=req.group_instance_id,
        protocol_type=req.protocol_type,
        protocol_name=req.protocol_name,
        assignments=tuple((a.member_id, a.assignment) for a in req.assignments),
    )
    machine = ctx.services.machine
    return then(
        ctx.services.runtime.call_parked(
            req.group_id,
            lambda tok, now: machine.sync_group(mreq, tok, now),
            lambda: m.SyncGroupResult(UNKNOWN_SERVER_ERROR),
        ),
        lambda r: sync_response(r, v),
    )


def sync_response(r: m.SyncGroupResult, v: int) -> SyncGroupResponse:
    return SyncGroupResponse(
        error_code=r.error,
        protocol_type=r.protocol_type if v >= 5 else None,
        protocol_name=r.protocol_name if v >= 5 else None,
        assignment=r.assignment,
    )


_HEARTBEAT_FRAMES: dict[tuple[int, int], Prebuilt] = {}


def heartbeat_frame(version: int, error: int) -> Prebuilt:
    """The whole Heartbeat response frame for a version and error, encoded once (correlation id 0)."""
    key = (version, error)
    frame = _HEARTBEAT_FRAMES.get(key)
    if frame is None:
        frame = _HEARTBEAT_FRAMES[key] = Prebuilt(
            encode_response(0, ApiKey.HEARTBEAT, version, HeartbeatResponse(error_code=error))
        )
    return frame


def heartbeat(ctx: RequestContext, req: HeartbeatRequest) -> Any:
    mreq = m.HeartbeatRequest(
        ctx.version, req.group_id, req.generation_id, req.member_id, req.group_instance_id
    )
    machine = ctx.services.machine
    result = ctx.services.runtime.call(
        req.group_id, lambda now: machine.heartbeat(mreq, now), lambda: UNKNOWN_SERVER_ERROR
    )
    if isinstance(result, asyncio.Future):
        return then(result, lambda err: HeartbeatResponse(error_code=err))
    return heartbeat_frame(ctx.version, result)


def heartbeat_fast(
    services: HandlerServices, conn: Peer, frame: bytes, version: int
) -> tuple[bytes, Prebuilt] | None:
    """The Heartbeat fast lane (dispatch's `fast_lanes`): the common frame read by `protocol.fast`, the
    runtime's `heartbeat` (the machine's decision and timer reset without a step's `Effects`), a prebuilt
    answer. None, and the request goes the general way (`heartbeat` above), for an uncommon frame or a busy
    group: both ways give the same answer."""
    fields = parse_heartbeat(frame, version)
    if fields is None:
        return None
    err = services.runtime.heartbeat(*fields)
    if err is None:
        return None
    prebuilt = heartbeat_frame(version, err)
    return b"".join((prebuilt[:4], frame[4:8], prebuilt[8:])), prebuilt


def leave_group(ctx: RequestContext, req: LeaveGroupRequest) -> Any:
    v = ctx.version
    if v < 3:
        members: tuple[m.LeaveMember, ...] = (m.LeaveMember(req.member_id, None, None),)
    else:
        members = tuple(m.LeaveMember(x.member_id, x.group_instance_id, x.reason) for x in req.members)
    mreq = m.LeaveGroupRequest(v, req.group_id, members)
    machine = ctx.services.machine
    result = ctx.services.runtime.call(
        req.group_id,
        lambda now: machine.leave_group(mreq, now),
        lambda: m.LeaveGroupResult(UNKNOWN_SERVER_ERROR, ()),
    )
    return then(result, lambda r: leave_response(r, v))


def leave_response(r: m.LeaveGroupResult, v: int) -> LeaveGroupResponse:
    if v < 3:
        error = r.error
        if error == ErrorCode.NONE and r.members:
            error = r.members[0][2]
        return LeaveGroupResponse(error_code=error)
    return LeaveGroupResponse(
        error_code=r.error,
        members=tuple(
            MemberResponse(member_id=a, group_instance_id=b, error_code=c) for a, b, c in r.members
        ),
    )


def describe_groups(ctx: RequestContext, req: dg.DescribeGroupsRequest) -> dg.DescribeGroupsResponse:
    v = ctx.version
    described = ctx.services.machine.describe_groups(list(req.groups))
    groups = []
    for d in described:
        if v >= 6 and d.not_found is not None and d.error == ErrorCode.NONE:
            # KIP-1043: v6 says why the answer is empty (Kafka's GroupMetadataManager.describeGroups)
            groups.append(
                dg.DescribedGroup(
                    error_code=ErrorCode.GROUP_ID_NOT_FOUND,
                    error_message=d.not_found,
                    group_id=d.group_id,
                    group_state="Dead",
                )
            )
            continue
        ops = GROUP_AUTHORIZED_OPERATIONS if (req.include_authorized_operations and d.error == 0) else INT_MIN
        groups.append(
            dg.DescribedGroup(
                error_code=d.error,
                group_id=d.group_id,
                group_state=d.state,
                protocol_type=d.protocol_type,
                protocol_data=d.protocol_data,
                members=tuple(
                    dg.DescribedGroupMember(
                        member_id=x.member_id,
                        group_instance_id=x.group_instance_id if v >= 4 else None,
                        client_id=x.client_id,
                        client_host=x.client_host,
                        member_metadata=x.metadata,
                        member_assignment=x.assignment,
                    )
                    for x in d.members
                ),
                authorized_operations=ops if v >= 3 else INT_MIN,
            )
        )
    return dg.DescribeGroupsResponse(groups=tuple(groups))


def list_groups(ctx: RequestContext, req: lg.ListGroupsRequest) -> lg.ListGroupsResponse:
    listed = ctx.services.machine.list_groups(list(req.states_filter), list(req.types_filter))
    return lg.ListGroupsResponse(
        error_code=ErrorCode.NONE,
        groups=tuple(
            lg.ListedGroup(
                group_id=x.group_id,
                protocol_type=x.protocol_type,
                group_state=x.state,
                group_type=x.group_type,
            )
            for x in listed
        ),
    )


def delete_groups(ctx: RequestContext, req: DeleteGroupsRequest) -> Any:
    names = list(dict.fromkeys(req.groups_names))  # de-duplicated, order kept
    machine = ctx.services.machine
    if any(machine.has_share_group(g) for g in names):
        return asyncio.ensure_future(_delete_with_share_state(ctx, names))
    result = ctx.services.runtime.call_global(lambda now: machine.delete_groups(names, now))
    return then(
        result,
        lambda pairs: DeleteGroupsResponse(
            results=tuple(DeletableGroupResult(group_id=g, error_code=e) for g, e in pairs)
        ),
    )


async def _delete_with_share_state(ctx: RequestContext, names: list[str]) -> DeleteGroupsResponse:
    """KIP-932: an empty share group's share-partition state is deleted before the group; if that fails the
    group is kept and reported with the error (Kafka's GroupCoordinatorService.deleteGroups)."""
    machine = ctx.services.machine
    failed: dict[str, int] = {}
    for g in names:
        empty_share = machine.has_share_group(g) and machine.share_group_describe([g])[0].state == "Empty"
        if empty_share and not await ctx.services.share.delete_group(g):
            failed[g] = UNKNOWN_SERVER_ERROR
    rest = [g for g in names if g not in failed]
    result = ctx.services.runtime.call_global(lambda now: machine.delete_groups(rest, now))
    pairs = dict(await result if isinstance(result, asyncio.Future) else result)
    return DeleteGroupsResponse(
        results=tuple(
            DeletableGroupResult(group_id=g, error_code=failed.get(g, pairs.get(g, 0))) for g in names
        )
    )


APIS = (
    Api(
        key=ApiKey.JOIN_GROUP,
        handler=join_group,
        check=authz.group_read(authz.group_denied(JoinGroupResponse)),
        groups=by_group_id,
        while_loading=loading.join_group,
        coordinator=True,
    ),
    Api(
        key=ApiKey.SYNC_GROUP,
        handler=sync_group,
        check=authz.group_read(authz.group_denied(SyncGroupResponse)),
        groups=by_group_id,
        while_loading=loading.sync_group,
        coordinator=True,
    ),
    Api(
        key=ApiKey.HEARTBEAT,
        handler=heartbeat,
        check=authz.group_read(authz.group_denied(HeartbeatResponse)),
        groups=by_group_id,
        while_loading=loading.heartbeat,
        fast_lane=heartbeat_fast,
        coordinator=True,
    ),
    Api(
        key=ApiKey.LEAVE_GROUP,
        handler=leave_group,
        check=authz.group_read(authz.group_denied(LeaveGroupResponse)),
        groups=by_group_id,
        while_loading=loading.leave_group,
        coordinator=True,
    ),
    Api(
        key=ApiKey.DESCRIBE_GROUPS,
        handler=describe_groups,
        check=authz.describe_groups,
        groups=lambda version, req: tuple(req.groups),
        while_loading=loading.describe_groups,
        coordinator=True,
    ),
    # no group to route by: each node lists the groups it coordinates
    Api(
        key=ApiKey.LIST_GROUPS,
        handler=list_groups,
        check=authz.list_groups,
        while_loading=loading.list_groups,
    ),
    Api(
        key=ApiKey.DELETE_GROUPS,
        handler=delete_groups,
        check=authz.delete_groups,
        groups=lambda version, req: tuple(req.groups_names),
        while_loading=loading.delete_groups,
        coordinator=True,
    ),
)
