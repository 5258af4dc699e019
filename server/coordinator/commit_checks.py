"""The checks an offset commit passes before it is written, shared by OffsetCommit and TxnOffsetCommit
(Kafka's `ClassicGroup.validateOffsetCommit` with its `isTransactional` flag, plus the simple-group creation
and heartbeat rescheduling that Kafka's `OffsetMetadataManager` does around it; spec §6.2-§6.3).

The two differ in three places, each as in Kafka: an unknown group with a generation is GROUP_ID_NOT_FOUND
only for OffsetCommit v9+; a commit without member information on a non-empty group is UNKNOWN_MEMBER_ID
only when it is not transactional; and only a non-transactional commit is refused with REBALANCE_IN_PROGRESS
while the group completes a rebalance.
"""

from __future__ import annotations

from groupcoord.protocol.errors import ErrorCode
from groupcoord.server.coordinator.context import NONE, OperationContext
from groupcoord.server.coordinator.group import COMPLETING, DEAD, EMPTY, PREPARING, STABLE
from groupcoord.server.coordinator.group_manager import GroupMetadataManager
from groupcoord.server.coordinator.types import OffsetCommitRequest, TxnOffsetCommitRequest

E = ErrorCode


def validate_offset_commit(
    ctx: OperationContext,
    groups: GroupMetadataManager,
    req: OffsetCommitRequest | TxnOffsetCommitRequest,
) -> int:
    """The error code for this commit, or NONE; creates a simple group for generation < 0 on an unknown one
    and pushes the committing member's session deadline forward (a commit counts as a heartbeat)."""
    transactional = isinstance(req, TxnOffsetCommitRequest)
    group_id, generation_id, member_id = req.group_id, req.generation_id, req.member_id
    group_instance_id = req.group_instance_id
    g = groups.group(group_id)
    if g is None:
        if generation_id < 0:
            g = groups.add_simple_group(group_id, ctx.now)
            ctx.event(g, "group_created", reason="simple_group")
            return NONE
        if not transactional and req.version >= 9:
            return int(E.GROUP_ID_NOT_FOUND)
        return int(E.ILLEGAL_GENERATION)
    if g.state == DEAD:
        return int(E.COORDINATOR_NOT_AVAILABLE)
    if generation_id < 0 and g.state == EMPTY:
        return NONE  # an admin client's commit to an empty group
    if generation_id >= 0 or member_id or group_instance_id is not None:
        err = groups.validate_member(g, member_id, group_instance_id)
        if err:
            return err
        if generation_id != g.generation_id:
            return int(E.ILLEGAL_GENERATION)
    elif not transactional:
        return int(E.UNKNOWN_MEMBER_ID)
    else:
        return NONE  # a transactional commit without a member (TxnOffsetCommit v0-v2)
    if not transactional and g.state == COMPLETING:
        return int(E.REBALANCE_IN_PROGRESS)
    if g.state == STABLE or (not transactional and g.state == PREPARING):
        groups.reschedule_member_heartbeat(g, g.members[member_id])
    return NONE
