"""The consumer embedded protocol: what `consumer` groups put in JoinGroup metadata and SyncGroup assignments.

Both payloads are an int16 version followed by a body that is never flexible. A version above the newest we
know (3) decodes as 3 from its prefix, ignoring the rest, as Kafka's ConsumerProtocol does: new versions only
append fields.

Version notes (Subscription): v1 OwnedPartitions (KIP-429), v2 GenerationId (KIP-792), v3 RackId (KIP-881).
Assignment v1-v3 share v0's layout; they exist to stay in lockstep with Subscription.
"""

from __future__ import annotations

import io
import struct as _struct

from groupcoord.protocol.errors import DecodeError
from groupcoord.protocol.schema import (
    BYTES,
    INT32,
    STRING,
    array,
    codec,
    decode_from,
    encode_into,
    f,
    message,
    struct,
)

LATEST_VERSION = 3


@struct
class TopicPartitions:
    topic: str = f(STRING, "0+")
    partitions: tuple[int, ...] = f(array(INT32), "0+")


@message(-1, "payload", valid="0-3", flexible="none")
class ConsumerProtocolSubscription:
    topics: tuple[str, ...] = f(array(STRING), "0+")
    user_data: bytes | None = f(BYTES, "0+", nullable="0+", default=None)
    owned_partitions: tuple[TopicPartitions, ...] = f(array(TopicPartitions), "1+", ignorable=True)
    generation_id: int = f(INT32, "2+", default=-1, ignorable=True)
    rack_id: str | None = f(STRING, "3+", nullable="3+", default=None, ignorable=True)
    version: int = f(
        INT32, "none", default=LATEST_VERSION, ignorable=True
    )  # the int16 prefix, not a body field


@message(-1, "payload", valid="0-3", flexible="none")
class ConsumerProtocolAssignment:
    assigned_partitions: tuple[TopicPartitions, ...] = f(array(TopicPartitions), "0+")
    user_data: bytes | None = f(BYTES, "0+", nullable="0+", default=None)
    version: int = f(INT32, "none", default=0, ignorable=True)


@message(-1, "payload", valid="0", flexible="none")
class SubscriptionTopicsPrefix:
    """The v0 prefix every Subscription version starts with: the topic list, nothing after it."""

    topics: tuple[str, ...] = f(array(STRING), "0+")


@message(-1, "payload", valid="0", flexible="none")
class AssignmentPartitionsPrefix:
    """The v0 prefix every Assignment version starts with: the assigned partitions, nothing after it."""

    assigned_partitions: tuple[TopicPartitions, ...] = f(array(TopicPartitions), "0+")


_I16 = _struct.Struct(">h")


def _decode(cls: type, data: bytes) -> object:
    if len(data) < 2:
        raise DecodeError(cls.__name__, None, 0, "missing the int16 version")
    version = _I16.unpack_from(data, 0)[0]
    if version < 0:
        raise DecodeError(cls.__name__, version, 0, "negative version")
    body_version = min(version, LATEST_VERSION)
    stream = io.BytesIO(data)
    stream.seek(2)
    c = codec(cls, body_version)
    try:
        obj = c.parse(stream, None)
    except Exception as exc:
        raise DecodeError(cls.__name__, version, stream.tell(), str(exc) or type(exc).__name__) from None
    if version <= LATEST_VERSION and stream.tell() != len(data):
        raise DecodeError(cls.__name__, version, stream.tell(), f"{len(data) - stream.tell()} trailing bytes")
    return _replace_version(obj, version)


def _replace_version(obj: object, version: int) -> object:
    from dataclasses import replace

    return replace(obj, version=version)  # type: ignore[type-var]


def _encode(obj: object, version: int) -> bytes:
    stream = io.BytesIO()
    stream.write(_I16.pack(version))
    encode_into(obj, stream, min(version, LATEST_VERSION))
    return stream.getvalue()


def decode_subscription(data: bytes) -> ConsumerProtocolSubscription:
    return _decode(ConsumerProtocolSubscription, data)  # type: ignore[return-value]


def encode_subscription(sub: ConsumerProtocolSubscription) -> bytes:
    """Writes `sub.version`'s layout; fields that version lacks are dropped (they are all ignorable)."""
    return _encode(sub, sub.version)


def decode_assignment(data: bytes) -> ConsumerProtocolAssignment:
    return _decode(ConsumerProtocolAssignment, data)  # type: ignore[return-value]


def encode_assignment(assignment: ConsumerProtocolAssignment) -> bytes:
    return _encode(assignment, assignment.version)


def _decode_prefix(cls: type, data: bytes) -> object:
    """The v0 prefix of a payload of any version >= 0, ignoring whatever follows it (the user data, later
    versions' fields, or trailing bytes). Raises DecodeError when the prefix itself is not there."""
    if len(data) < 2:
        raise DecodeError(cls.__name__, None, 0, "missing the int16 version")
    version = _I16.unpack_from(data, 0)[0]
    if version < 0:
        raise DecodeError(cls.__name__, version, 0, "negative version")
    stream = io.BytesIO(data)
    stream.seek(2)
    return decode_from(cls, stream, 0, len(data), strict=False)


def decode_subscription_topics(data: bytes) -> tuple[str, ...]:
    """The topics of a Subscription of any version, read from its v0 prefix only (what Kafka's coordinator
    needs to expire offsets, spec §6.7): tolerant of a user-data field or later fields that are missing or
    malformed. Raises DecodeError."""
    prefix: SubscriptionTopicsPrefix = _decode_prefix(SubscriptionTopicsPrefix, data)  # type: ignore[assignment]
    return prefix.topics


def decode_assigned_partitions(data: bytes) -> tuple[TopicPartitions, ...]:
    """The partitions of an Assignment of any version, read from its v0 prefix only (for the journal).
    Raises DecodeError."""
    prefix: AssignmentPartitionsPrefix = _decode_prefix(AssignmentPartitionsPrefix, data)  # type: ignore[assignment]
    return prefix.assigned_partitions


EMPTY_ASSIGNMENT = encode_assignment(ConsumerProtocolAssignment(version=0))
