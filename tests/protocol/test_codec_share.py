"""KIP-932 codecs at the byte level: the nullable Assignment struct and the versions the clients send.

The hypothesis round trips (test_codec_roundtrip.py) and the comparison with Kafka 4.3's JSON
(test_codec_declarations.py, kafka_json/) cover every field; this pins what they cannot: Kafka's wire form of a
nullable struct (an int8 marker, -1 for null), and that v0 (4.0 early access) is not offered.
"""

from __future__ import annotations

import uuid

import pytest

from groupcoord.protocol.api import SUPPORTED, ApiKey
from groupcoord.protocol.messages.share_fetch import (
    AcknowledgementBatch,
    ShareFetchPartition,
    ShareFetchRequest,
    ShareFetchTopic,
)
from groupcoord.protocol.messages.share_group_heartbeat import (
    ShareAssignment,
    ShareGroupHeartbeatResponse,
    ShareTopicPartitions,
)


def test_null_assignment_is_one_minus_one_byte() -> None:
    resp = ShareGroupHeartbeatResponse(member_id="m", member_epoch=3, heartbeat_interval_ms=5000)
    data = resp.encode(1)
    # throttle(4) error(2) message(null compact: 0) member_id(compact "m") epoch(4) interval(4) then the marker
    assert (
        data
        == (
            b"\x00\x00\x00\x00" + b"\x00\x00" + b"\x00" + b"\x02m" + b"\x00\x00\x00\x03" + b"\x00\x00\x13\x88"
        )
        + b"\xff"
        + b"\x00"
    )
    assert ShareGroupHeartbeatResponse.decode(data, 1).assignment is None


def test_present_assignment_has_marker_one() -> None:
    tid = uuid.UUID(int=7)
    resp = ShareGroupHeartbeatResponse(
        member_id="m",
        member_epoch=1,
        assignment=ShareAssignment(topic_partitions=(ShareTopicPartitions(topic_id=tid, partitions=(0, 2)),)),
    )
    data = resp.encode(1)
    tail = b"\x01" + b"\x02" + tid.bytes + b"\x03" + b"\x00\x00\x00\x00\x00\x00\x00\x02" + b"\x00" + b"\x00"
    assert data.endswith(tail + b"\x00")
    assert ShareGroupHeartbeatResponse.decode(data, 1) == resp


def test_bad_marker_byte_is_a_decode_error_not_a_crash() -> None:
    data = bytearray(ShareGroupHeartbeatResponse(member_id="m").encode(1))
    with pytest.raises(Exception) as info:
        ShareGroupHeartbeatResponse.decode(bytes(data[:-2]), 1)
    assert type(info.value).__name__ == "DecodeError"


def test_share_fetch_v2_round_trip_with_acks_and_renew_flag() -> None:
    req = ShareFetchRequest(
        group_id="g",
        member_id="u1",
        share_session_epoch=2,
        max_wait_ms=500,
        min_bytes=1,
        max_records=500,
        batch_size=500,
        share_acquire_mode=1,
        is_renew_ack=True,
        topics=(
            ShareFetchTopic(
                topic_id=uuid.UUID(int=1),
                partitions=(
                    ShareFetchPartition(
                        partition_index=0,
                        acknowledgement_batches=(
                            AcknowledgementBatch(first_offset=0, last_offset=2, acknowledge_types=(1, 2, 4)),
                        ),
                    ),
                ),
            ),
        ),
    )
    assert ShareFetchRequest.decode(req.encode(2), 2) == req
    # v1 has no IsRenewAck: writing it set would lose it, so the codec refuses
    with pytest.raises(Exception, match="is_renew_ack"):
        req.encode(1)


def test_versions_offered() -> None:
    assert SUPPORTED[ApiKey.SHARE_GROUP_HEARTBEAT] == (1, 1)
    assert SUPPORTED[ApiKey.SHARE_GROUP_DESCRIBE] == (1, 1)
    assert SUPPORTED[ApiKey.SHARE_FETCH] == (1, 2)
    assert SUPPORTED[ApiKey.SHARE_ACKNOWLEDGE] == (1, 2)
    assert SUPPORTED[ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS] == (0, 1)
    assert SUPPORTED[ApiKey.ALTER_SHARE_GROUP_OFFSETS] == (0, 0)
    assert SUPPORTED[ApiKey.DELETE_SHARE_GROUP_OFFSETS] == (0, 0)
