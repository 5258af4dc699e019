"""The consumer embedded protocol's v0-prefix readers (protocol/consumer.py), which the coordinator uses to
learn a member's topics and assignment: tolerant of whatever follows the prefix, strict about the prefix."""

from __future__ import annotations

import pytest

from groupcoord.protocol.consumer import (
    ConsumerProtocolAssignment,
    ConsumerProtocolSubscription,
    TopicPartitions,
    decode_assigned_partitions,
    decode_subscription_topics,
    encode_assignment,
    encode_subscription,
)
from groupcoord.protocol.errors import DecodeError
from groupcoord.server.coordinator.consumer import assignment_partitions, subscription_topics

TOPICS_V0 = b"\x00\x00" + b"\x00\x00\x00\x02" + b"\x00\x01a" + b"\x00\x02bb"


@pytest.mark.parametrize("version", [0, 1, 2, 3, 7])
def test_every_subscription_version_yields_its_topics(version: int) -> None:
    sub = ConsumerProtocolSubscription(
        topics=("a", "bb"), user_data=b"x", owned_partitions=(TopicPartitions("a", (0,)),), version=version
    )
    assert decode_subscription_topics(encode_subscription(sub)) == ("a", "bb")


def test_the_prefix_alone_is_enough_and_what_follows_is_ignored() -> None:
    assert decode_subscription_topics(TOPICS_V0) == ("a", "bb")  # no user data at all
    assert decode_subscription_topics(TOPICS_V0 + b"\xff\xff\xff") == ("a", "bb")
    v1_prefix_only = b"\x00\x01" + TOPICS_V0[2:]  # v1 without its user data and owned partitions
    assert subscription_topics(v1_prefix_only) == {"a", "bb"}
    full = encode_assignment(ConsumerProtocolAssignment((TopicPartitions("t", (3, 1)),), b"u", version=1))
    assert decode_assigned_partitions(full[:-5]) == (TopicPartitions("t", (3, 1)),)  # user data cut
    assert assignment_partitions(full[:-5]) == ["t-3", "t-1"]


@pytest.mark.parametrize(
    "data",
    [b"", b"\x00", b"\xff\xff" + TOPICS_V0[2:], TOPICS_V0[:-1], b"\x00\x00\xff\xff\xff\xff", b"\x00\x00\x00"],
)
def test_a_broken_prefix_is_a_decode_error_and_none_for_the_coordinator(data: bytes) -> None:
    with pytest.raises(DecodeError):
        decode_subscription_topics(data)
    assert subscription_topics(data) is None
    if data:  # empty bytes are "left out of the leader's map": no partitions
        assert assignment_partitions(data) is None
