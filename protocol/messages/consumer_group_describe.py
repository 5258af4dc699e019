"""ConsumerGroupDescribe (API key 69), versions 0-1, flexible in every version (KIP-848).

Version notes: v1 adds the members' MemberType (KIP-1099: -1 unknown, 0 classic, 1 consumer); the request is
the same in both versions. The Java Admin and librdkafka's describe use v0-1.
"""

from __future__ import annotations

import uuid

from groupcoord.protocol.schema import BOOL, INT8, INT16, INT32, STRING, UUID, array, f, message, struct

AUTHORIZED_OPERATIONS_OMITTED = -(2**31)


@message(69, "request", valid="0-1", flexible="0+")
class ConsumerGroupDescribeRequest:
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
class DescribedMember:
    member_id: str = f(STRING, "0+")
    instance_id: str | None = f(STRING, "0+", nullable="0+", default=None)
    rack_id: str | None = f(STRING, "0+", nullable="0+", default=None)
    member_epoch: int = f(INT32, "0+")
    client_id: str = f(STRING, "0+")
    client_host: str = f(STRING, "0+")
    subscribed_topic_names: tuple[str, ...] = f(array(STRING), "0+")
    subscribed_topic_regex: str | None = f(STRING, "0+", nullable="0+", default=None)
    assignment: DescribedAssignment = f(DescribedAssignment, "0+", default=DescribedAssignment())
    target_assignment: DescribedAssignment = f(DescribedAssignment, "0+", default=DescribedAssignment())
    member_type: int = f(INT8, "1+", default=-1, ignorable=True)


@struct
class DescribedGroup:
    error_code: int = f(INT16, "0+")
    error_message: str | None = f(STRING, "0+", nullable="0+", default=None)
    group_id: str = f(STRING, "0+")
    group_state: str = f(STRING, "0+")
    group_epoch: int = f(INT32, "0+")
    assignment_epoch: int = f(INT32, "0+")
    assignor_name: str = f(STRING, "0+")
    members: tuple[DescribedMember, ...] = f(array(DescribedMember), "0+")
    authorized_operations: int = f(INT32, "0+", default=AUTHORIZED_OPERATIONS_OMITTED)


@message(69, "response", valid="0-1", flexible="0+")
class ConsumerGroupDescribeResponse:
    throttle_time_ms: int = f(INT32, "0+")
    groups: tuple[DescribedGroup, ...] = f(array(DescribedGroup), "0+")
