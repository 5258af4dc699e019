"""The two bits of the embedded consumer protocol the coordinator must understand.

Kafka treats member metadata and assignments as opaque, except that for `consumer` groups it parses the v0
prefix of the subscription (the topic list) to decide which offsets may expire (spec §6.7). We also decode
assignments for the journal, and we must never hand a consumer an empty byte string as its assignment, as
clients cannot decode it. Written locally (not imported from the assignors) so the state machine stays
self-contained.
"""

from __future__ import annotations

import struct

CONSUMER = "consumer"

#: ConsumerProtocolAssignment v0 with no partitions and null user data.
EMPTY_CONSUMER_ASSIGNMENT = b"\x00\x00" + b"\x00\x00\x00\x00" + b"\xff\xff\xff\xff"

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")


class _Reader:
    __slots__ = ("buf", "pos")

    def __init__(self, buf: bytes) -> None:
        self.buf = buf
        self.pos = 0

    def i16(self) -> int:
        (v,) = _I16.unpack_from(self.buf, self.pos)
        self.pos += 2
        return v

    def i32(self) -> int:
        (v,) = _I32.unpack_from(self.buf, self.pos)
        self.pos += 4
        return v

    def string(self) -> str:
        n = self.i16()
        if n < 0:
            raise ValueError("null string")
        end = self.pos + n
        if end > len(self.buf):
            raise ValueError("truncated string")
        s = self.buf[self.pos : end].decode("utf-8")
        self.pos = end
        return s


def subscription_topics(metadata: bytes) -> set[str] | None:
    """Topics of a ConsumerProtocolSubscription (any version: only the v0 prefix is read); None if not parsable."""
    try:
        r = _Reader(metadata)
        if r.i16() < 0:
            return None
        n = r.i32()
        if n < 0:
            return None
        return {r.string() for _ in range(n)}
    except (struct.error, ValueError, UnicodeDecodeError):
        return None


def assignment_partitions(assignment: bytes) -> list[str] | None:
    """`["topic-partition", ...]` of a ConsumerProtocolAssignment; None if not parsable.

    Empty bytes (a member the leader left out) decode as no partitions: that is what the member receives.
    """
    if not assignment:
        return []
    try:
        r = _Reader(assignment)
        if r.i16() < 0:
            return None
        n = r.i32()
        if n < 0:
            return None
        out: list[str] = []
        for _ in range(n):
            topic = r.string()
            k = r.i32()
            if k < 0:
                return None
            out.extend(f"{topic}-{r.i32()}" for _ in range(k))
        return out
    except (struct.error, ValueError, UnicodeDecodeError):
        return None
