"""ShareGroupDescribe (API key 77, KIP-932), version 1 only; flexible.

Declared from Kafka 4.3's `ShareGroupDescribeRequest.json` / `ShareGroupDescribeResponse.json` (v0 was the
4.0 early-access version, removed in 4.1).

Request v1: GroupIds[], IncludeAuthorizedOperations.

Response v1: ThrottleTimeMs, Groups[] {ErrorCode, ErrorMessage, GroupId, GroupState, GroupEpoch,
AssignmentEpoch, AssignorName, Members[] {MemberId, RackId, MemberEpoch, ClientId, ClientHost,
SubscribedTopicNames[], Assignment {TopicPartitions[] {TopicId, TopicName, Partitions[]}}},
AuthorizedOperations (default INT32_MIN)}.
"""

from __future__ import annotations

import uuid

from groupcoord.protocol.schema import BOOL, INT16, INT32, STRING, UUID, array, f, message, struct


@message(77, "request", valid="1", flexible="0+")
class ShareGroupDescribeRequest:
    group_ids: tuple[str, ...] = f(array(STRING), "0+")
    include_authorized_operations: bool = f(BOOL, "0+")


@struct
class DescribedTopicPartitions:
    topic_id: uuid.UUID = f(UUID, "0+")
    topic_name: str = f(STRING, "0+")
    partitions: tuple[int, ...] = f(array(INT32), "0+")


@struct
class DescribedAssignment:
    topic_partitions: tuple[DescribedTopicPartitions, ...] = f(array(DescribedTopicPartitions), "0+")


@struct
class DescribedShareMember:
    member_id: str = f(STRING, "0+")
    rack_id: str | None = f(STRING, "0+", nullable="0+", default=None)
    member_epoch: int = f(INT32, "0+")
    client_id: str = f(STRING, "0+")
    client_host: str = f(STRING, "0+")
    subscribed_topic_names: tuple[str, ...] = f(array(STRING), "0+")
    assignment: DescribedAssignment = f(DescribedAssignment, "0+")


@struct
class DescribedShareGroup:
    error_code: int = f(INT16, "0+")
    error_message: str | None = f(STRING, "0+", nullable="0+", default=None)
    group_id: str = f(STRING, "0+")
    group_state: str = f(STRING, "0+")
    group_epoch: int = f(INT32, "0+")
    assignment_epoch: int = f(INT32, "0+")
    assignor_name: str = f(STRING, "0+")
    members: tuple[DescribedShareMember, ...] = f(array(DescribedShareMember), "0+")
    authorized_operations: int = f(INT32, "0+", default=-(2**31))


@message(77, "response", valid="1", flexible="0+")
class ShareGroupDescribeResponse:
    throttle_time_ms: int = f(INT32, "0+")
    groups: tuple[DescribedShareGroup, ...] = f(array(DescribedShareGroup), "0+")
