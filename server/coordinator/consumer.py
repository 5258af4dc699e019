"""The two bits of the embedded consumer protocol the coordinator must understand.

Kafka treats member metadata and assignments as opaque, except that for `consumer` groups it parses the v0
prefix of the subscription (the topic list) to decide which offsets may expire (spec §6.7). We also decode
assignments for the journal, and we must never hand a consumer an empty byte string as its assignment, as
clients cannot decode it. The wire layout is parsed in one place, `protocol/consumer.py`; here is only the
coordinator's tolerance: anything unparsable is None, never an error.
"""

from __future__ import annotations

from groupcoord.protocol.consumer import (
    EMPTY_ASSIGNMENT,
    ConsumerProtocolAssignment,
    ConsumerProtocolSubscription,
    TopicPartitions,
    decode_assigned_partitions,
    decode_assignment,
    decode_subscription,
    decode_subscription_topics,
    encode_assignment,
)
from groupcoord.protocol.errors import DecodeError

CONSUMER = "consumer"

#: ConsumerProtocolAssignment v0 with no partitions and null user data.
EMPTY_CONSUMER_ASSIGNMENT = EMPTY_ASSIGNMENT


def subscription_topics(metadata: bytes) -> set[str] | None:
    """Topics of a ConsumerProtocolSubscription (any version: only the v0 prefix is read); None if not parsable."""
    try:
        return set(decode_subscription_topics(metadata))
    except DecodeError:
        return None


def assignment_partitions(assignment: bytes) -> list[str] | None:
    """`["topic-partition", ...]` of a ConsumerProtocolAssignment; None if not parsable.

    Empty bytes (a member the leader left out) decode as no partitions: that is what the member receives.
    """
    if not assignment:
        return []
    try:
        topics = decode_assigned_partitions(assignment)
    except DecodeError:
        return None
    return [f"{tp.topic}-{p}" for tp in topics for p in tp.partitions]


def subscription(metadata: bytes) -> ConsumerProtocolSubscription | None:
    """The whole ConsumerProtocolSubscription (topics, owned partitions, rack) for online migration; None if
    not parsable (Kafka's `SchemaException`)."""
    try:
        return decode_subscription(metadata)
    except DecodeError:
        return None


def assignment(data: bytes) -> ConsumerProtocolAssignment | None:
    """The whole ConsumerProtocolAssignment (partitions and user data); empty bytes are no partitions; None
    if not parsable."""
    if not data:
        return ConsumerProtocolAssignment(version=0)
    try:
        return decode_assignment(data)
    except DecodeError:
        return None


def subscription_version(metadata: bytes) -> int:
    """The embedded protocol version a member speaks (the int16 prefix of its subscription; 0 if absent), the
    version its assignment is written at (Kafka's `ConsumerProtocol.deserializeVersion`)."""
    if len(metadata) < 2:
        return 0
    return max(int.from_bytes(metadata[:2], "big", signed=True), 0)


def encode_partitions(partitions: dict[str, list[int]], version: int) -> bytes:
    """A ConsumerProtocolAssignment of `partitions` (topic -> partitions) at `version`, no user data."""
    tps = tuple(TopicPartitions(t, tuple(sorted(ps))) for t, ps in sorted(partitions.items()) if ps)
    return encode_assignment(ConsumerProtocolAssignment(assigned_partitions=tps, version=version))
