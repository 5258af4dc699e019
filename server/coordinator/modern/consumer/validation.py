"""ConsumerGroupHeartbeat request validation (Kafka's `throwIfConsumerGroupHeartbeatRequestIsInvalid`,
spec §2.2 step 5) and the error a heartbeat step raises; the checks that need no group come first."""

from __future__ import annotations

from groupcoord.protocol.errors import ErrorCode
from groupcoord.server.coordinator.modern.consumer.api import ConsumerGroupHeartbeatRequest
from groupcoord.server.coordinator.modern.consumer.member import LEAVE_GROUP_STATIC_MEMBER_EPOCH

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
