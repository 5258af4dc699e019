"""ConsumerGroupHeartbeat request validation (Kafka's `throwIfConsumerGroupHeartbeatRequestIsInvalid`,
spec §2.2 step 5), the checks against the group (the member a heartbeat is for, its epoch) and the error a
heartbeat step raises; the checks that need no group come first."""

from __future__ import annotations

from groupcoord.protocol.errors import ErrorCode
from groupcoord.server.coordinator.modern.consumer.api import ConsumerGroupHeartbeatRequest
from groupcoord.server.coordinator.modern.consumer.group import ConsumerGroup
from groupcoord.server.coordinator.modern.consumer.member import (
    LEAVE_GROUP_STATIC_MEMBER_EPOCH,
    ConsumerGroupMember,
    pairs,
)

E = ErrorCode


class HeartbeatError(Exception):
    def __init__(self, code: ErrorCode, message: str | None = None) -> None:
        super().__init__(message)
        self.code = int(code)
        self.message = message


#: what Java's `String.trim()` strips: every character up to U+0020
_TRIMMED = "".join(chr(c) for c in range(33))


def blank(s: str | None) -> bool:
    """Java's `trim().isEmpty()`: only characters <= U+0020."""
    return s is not None and not s.strip(_TRIMMED)


def validate_request(req: ConsumerGroupHeartbeatRequest, assignors: tuple[str, ...]) -> None:
    """Kafka's `throwIfConsumerGroupHeartbeatRequestIsInvalid` (spec §2.2 step 5); first failure wins."""
    epoch = req.member_epoch
    if (req.version >= 1 or epoch > 0 or epoch == -1) and (blank(req.member_id) or req.member_id == ""):
        raise HeartbeatError(E.INVALID_REQUEST, "MemberId can't be empty.")
    if blank(req.group_id) or req.group_id == "":
        raise HeartbeatError(E.INVALID_REQUEST, "GroupId can't be empty.")
    if req.instance_id is not None and (blank(req.instance_id) or req.instance_id == ""):
        raise HeartbeatError(E.INVALID_REQUEST, "InstanceId can't be empty.")
    if req.rack_id is not None and (blank(req.rack_id) or req.rack_id == ""):
        raise HeartbeatError(E.INVALID_REQUEST, "RackId can't be empty.")
    if epoch == 0:
        if req.rebalance_timeout_ms == -1:
            raise HeartbeatError(E.INVALID_REQUEST, "RebalanceTimeoutMs must be provided in first request.")
        if req.topic_partitions is None or any(req.topic_partitions.values()):
            raise HeartbeatError(E.INVALID_REQUEST, "TopicPartitions must be empty when (re-)joining.")
        if req.subscribed_topic_names is None and req.subscribed_topic_regex is None:
            raise HeartbeatError(
                E.INVALID_REQUEST,
                "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining.",
            )
    elif epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
        if req.instance_id is None:
            raise HeartbeatError(E.INVALID_REQUEST, "InstanceId can't be null.")
    elif epoch < LEAVE_GROUP_STATIC_MEMBER_EPOCH:
        raise HeartbeatError(E.INVALID_REQUEST, "MemberEpoch is invalid.")
    if req.server_assignor is not None and req.server_assignor not in assignors:
        raise HeartbeatError(
            E.UNSUPPORTED_ASSIGNOR,
            f"ServerAssignor {req.server_assignor} is not supported. Supported assignors: "
            f"{', '.join(assignors)}.",
        )


# The heartbeat's checks against the group (spec §2.4): which member it is for, and whether its epoch holds.


def member_for(
    g: ConsumerGroup,
    req: ConsumerGroupHeartbeatRequest,
    member_id: str,
    holder: ConsumerGroupMember | None,
) -> tuple[ConsumerGroupMember, ConsumerGroupMember | None]:
    """The member this heartbeat is for, and the static member it replaces (spec §2.4 step 4)."""
    if req.instance_id is None:
        m = g.members.get(member_id)
        if m is not None:
            return m, None
        if req.member_epoch == 0:
            return ConsumerGroupMember(member_id), None
        raise HeartbeatError(
            E.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group {g.group_id}."
        )
    if req.member_epoch == 0:
        if holder is None:
            m = g.members.get(member_id)
            return (m if m is not None else ConsumerGroupMember(member_id)), None
        if holder.member_epoch != LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            raise HeartbeatError(
                E.UNRELEASED_INSTANCE_ID,
                f"Static member {holder.member_id} with instance id {req.instance_id} is not released yet.",
            )
        # the static member returns (usually with a new member id): it takes over the old one's place
        fresh = holder.replace(
            member_id=member_id,
            member_epoch=0,
            previous_member_epoch=0,
            pending_revocation={},
            assigned={t: dict(ps) for t, ps in holder.assigned.items()},
        )
        return fresh, holder
    if holder is None:
        raise HeartbeatError(
            E.UNKNOWN_MEMBER_ID, f"Instance id {req.instance_id} is unknown in group {g.group_id}."
        )
    if holder.member_id != member_id:
        raise HeartbeatError(
            E.FENCED_INSTANCE_ID,
            f"Static member {member_id} with instance id {req.instance_id} was fenced by member "
            f"{holder.member_id}.",
        )
    return holder, None


def check_epoch(m: ConsumerGroupMember, req: ConsumerGroupHeartbeatRequest) -> None:
    """Kafka's `throwIfConsumerGroupMemberEpochIsInvalid` (spec §2.4): an older epoch is accepted only
    when it is the previous one and the client owns a subset of the assigned partitions (a lost reply)."""
    received = req.member_epoch
    if received > m.member_epoch:
        raise HeartbeatError(
            E.FENCED_MEMBER_EPOCH,
            f"The consumer group member has a greater member epoch ({received}) than the one known by the "
            f"group coordinator ({m.member_epoch}). The member must abandon all its partitions and rejoin.",
        )
    if received < m.member_epoch:
        owned = req.topic_partitions
        if (
            received != m.previous_member_epoch
            or owned is None
            or not ({(t, p) for t, ps in owned.items() for p in ps} <= pairs(m.assigned))
        ):
            raise HeartbeatError(
                E.FENCED_MEMBER_EPOCH,
                f"The consumer group member has a smaller member epoch ({received}) than the one known by "
                f"the group coordinator ({m.member_epoch}). The member must abandon all its partitions and "
                "rejoin.",
            )
