"""What the shard does for streams groups across its managers (one id, one type; offsets; deletion;
ListGroups), kept here so that `shard.py` only forwards (spec §12-§13)."""

from __future__ import annotations

from collections.abc import Callable, Hashable

from groupcoord.protocol.errors import ErrorCode
from groupcoord.server.coordinator.context import NONE, PERSIST_ERROR, OperationContext
from groupcoord.server.coordinator.group import DEAD, EMPTY
from groupcoord.server.coordinator.group_manager import GroupMetadataManager
from groupcoord.server.coordinator.modern.streams.api import StreamsHeartbeatRequest, StreamsHeartbeatResult
from groupcoord.server.coordinator.modern.streams.group import LISTED_STATES, StreamsGroup
from groupcoord.server.coordinator.modern.streams.manager import StreamsGroupManager
from groupcoord.server.coordinator.modern.streams.topology import PartitionCount
from groupcoord.server.coordinator.offset_manager import OffsetMetadataManager
from groupcoord.server.coordinator.types import (
    Effects,
    ListedGroup,
    OffsetCommitRequest,
    TxnOffsetCommitRequest,
)

E = ErrorCode


def heartbeat(
    ctx: OperationContext,
    classic_groups: GroupMetadataManager,
    other_type: Callable[[str], bool],
    manager: StreamsGroupManager,
    req: StreamsHeartbeatRequest,
    count: PartitionCount,
    token: Hashable,
    now_ms: int,
) -> Effects:
    """StreamsGroupHeartbeat across the managers: one id, one type (`other_type`: a consumer or share group
    holds the id); an empty classic group is replaced by the streams group (spec §13)."""
    fx = ctx.begin(now_ms)
    gid = req.group_id
    other = other_type(gid)
    classic = classic_groups.group(gid)
    if classic is not None and classic.state != DEAD:
        if classic.state == EMPTY and req.member_epoch == 0:
            classic_groups.delete_group(classic, "converted")
        else:
            other = True
    if other and gid not in manager.groups:
        fx.reply(
            token, StreamsHeartbeatResult(int(E.GROUP_ID_NOT_FOUND), f"Group {gid} is not a streams group.")
        )
        return fx
    result = manager.heartbeat(req, count)
    if not fx.records:
        fx.reply(token, result)
        return fx

    def after(ok: bool, now: int) -> Effects:
        fx2 = ctx.begin(now)
        fx2.reply(token, result if ok else StreamsHeartbeatResult(PERSIST_ERROR))
        return fx2

    fx.after_persist = after
    return fx


def validate_commit(
    g: StreamsGroup, req: OffsetCommitRequest | TxnOffsetCommitRequest, transactional: bool
) -> int:
    partitions = [(topic, p.partition) for topic, parts in req.topics for p in parts]
    return g.validate_offset_commit(req.member_id, req.generation_id, transactional, req.version, partitions)


def delete_group(manager: StreamsGroupManager, offsets: OffsetMetadataManager, g: StreamsGroup) -> int:
    if g.members:
        return int(E.NON_EMPTY_GROUP)
    offsets.tombstone_group_offsets(g.group_id)
    manager.delete(g.group_id)
    offsets.remove_group(g.group_id)
    return NONE


def list_streams_groups(manager: StreamsGroupManager, states: set[str], types: set[str]) -> list[ListedGroup]:
    if types and "streams" not in types:
        return []
    out = []
    for gid, g in manager.groups.items():
        state = g.state
        if not states or LISTED_STATES.get(state, state.lower()) in states:
            out.append(ListedGroup(gid, "streams", state, "streams"))
    return out
