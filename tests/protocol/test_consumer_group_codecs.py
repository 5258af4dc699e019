"""ConsumerGroupHeartbeat (68) and ConsumerGroupDescribe (69): byte layouts pinned by hand from Kafka's JSON
definitions (the generic round trips cover every field; these pin what a generic round trip cannot: the
nullable Assignment struct's int8 marker and the v1-only regex field)."""

from __future__ import annotations

import struct
import uuid

from groupcoord.protocol.api import SUPPORTED, ApiKey
from groupcoord.protocol.messages.consumer_group_describe import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupDescribeResponse,
    DescribedGroup,
    DescribedMember,
)
from groupcoord.protocol.messages.consumer_group_heartbeat import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    HeartbeatAssignment,
    HeartbeatTopicPartitions,
)

TID = uuid.UUID("0b0b0b0b-0b0b-0b0b-0b0b-0b0b0b0b0b0b")


def test_versions_are_the_ones_clients_send() -> None:
    assert SUPPORTED[ApiKey.CONSUMER_GROUP_HEARTBEAT] == (0, 1)
    assert SUPPORTED[ApiKey.CONSUMER_GROUP_DESCRIBE] == (0, 1)


def test_null_assignment_is_a_minus_one_marker() -> None:
    body = ConsumerGroupHeartbeatResponse(member_id="m", member_epoch=3, heartbeat_interval_ms=5000).encode(1)
    # throttle, error, null message (compact: 0), member id "m" (compact len 2), epoch, interval, marker, tags
    assert body == struct.pack(">ih", 0, 0) + b"\x00" + b"\x02m" + struct.pack(">ii", 3, 5000) + b"\xff\x00"


def test_present_assignment_is_a_one_marker_then_the_struct() -> None:
    a = HeartbeatAssignment(topic_partitions=(HeartbeatTopicPartitions(topic_id=TID, partitions=(0, 2)),))
    body = ConsumerGroupHeartbeatResponse(member_epoch=1, assignment=a).encode(0)
    tail = b"\x01" + b"\x02" + TID.bytes + b"\x03" + struct.pack(">ii", 0, 2) + b"\x00" + b"\x00" + b"\x00"
    assert body.endswith(tail)
    back = ConsumerGroupHeartbeatResponse.decode(body, 0)
    assert back.assignment == a


def test_regex_exists_only_from_v1() -> None:
    req = ConsumerGroupHeartbeatRequest(
        group_id="g", member_id="m", member_epoch=0, subscribed_topic_names=("a",), topic_partitions=()
    )
    v0, v1 = req.encode(0), req.encode(1)
    assert len(v1) == len(v0) + 1  # one null compact string (0x00)
    assert ConsumerGroupHeartbeatRequest.decode(v1, 1).subscribed_topic_regex is None
    with_regex = ConsumerGroupHeartbeatRequest(group_id="g", member_id="m", subscribed_topic_regex="fo.*")
    assert ConsumerGroupHeartbeatRequest.decode(with_regex.encode(1), 1).subscribed_topic_regex == "fo.*"


def test_describe_member_type_only_in_v1() -> None:
    resp = ConsumerGroupDescribeResponse(
        groups=(DescribedGroup(group_id="g", members=(DescribedMember(member_id="m", member_type=1),)),)
    )
    assert len(resp.encode(1)) == len(resp.encode(0)) + 1
    assert ConsumerGroupDescribeResponse.decode(resp.encode(1), 1).groups[0].members[0].member_type == 1
    assert ConsumerGroupDescribeResponse.decode(resp.encode(0), 0).groups[0].members[0].member_type == -1
    req = ConsumerGroupDescribeRequest(group_ids=("a", "b"), include_authorized_operations=True)
    assert ConsumerGroupDescribeRequest.decode(req.encode(1), 1) == req
