"""User-data payloads the adapters put in subscriptions and assignments (pure; no aiokafka import).

* ``StickyAssignorUserDataV1`` (subscription, ``sticky`` only): ``[topic, [partition]]`` + int32
  generation, the layout Java's eager StickyAssignor and aiokafka's sticky assignor send. It carries the
  owned partitions and their generation through aiokafka's leader, which only decodes v0 fields.
* Labels (subscription, other strategies): ``b"GCL1"`` + a UTF-8 JSON object of string labels, e.g.
  ``{"rack": "r1"}``. Lets a member advertise metadata (a rack) that survives v0-only decoding.
* Generation stamp (assignment, every strategy): ``b"GCG1"`` + int32. The generation the leader assigned
  at, so members that cannot see their group generation (aiokafka never reports it) can still send a
  correct KIP-792 ``generationId`` next time. Java and aiokafka members ignore assignment user data.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Iterable, Mapping

from groupcoord.assignors.model import TopicPartition

LABELS_MAGIC = b"GCL1"
STAMP_MAGIC = b"GCG1"
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")


def encode_sticky_user_data(owned: Iterable[TopicPartition], generation: int) -> bytes:
    by_topic: dict[str, list[int]] = {}
    for tp in sorted(owned):
        by_topic.setdefault(tp.topic, []).append(tp.partition)
    out = bytearray(_I32.pack(len(by_topic)))
    for topic, parts in by_topic.items():
        name = topic.encode()
        out += _I16.pack(len(name)) + name + _I32.pack(len(parts))
        out += b"".join(_I32.pack(p) for p in parts)
    out += _I32.pack(generation)
    return bytes(out)


def decode_sticky_user_data(data: bytes | None) -> tuple[list[TopicPartition], int] | None:
    """Owned partitions and generation, or None if ``data`` is not exactly a StickyAssignorUserDataV1.

    Java's V0 layout (no generation) decodes with generation -1, as Java does.
    """
    if not data:
        return None
    try:
        (n,), pos = _I32.unpack_from(data, 0), 4
        if n < 0 or n > len(data):
            return None
        owned: list[TopicPartition] = []
        for _ in range(n):
            (length,) = _I16.unpack_from(data, pos)
            if length < 0:
                return None
            topic = data[pos + 2 : pos + 2 + length].decode()
            pos += 2 + length
            (count,) = _I32.unpack_from(data, pos)
            pos += 4
            if count < 0 or pos + 4 * count > len(data):
                return None
            owned.extend(TopicPartition(topic, p) for p in struct.unpack_from(f">{count}i", data, pos))
            pos += 4 * count
        if pos == len(data):
            return owned, -1
        if pos + 4 == len(data):
            return owned, _I32.unpack_from(data, pos)[0]
        return None
    except (struct.error, UnicodeDecodeError):
        return None


def encode_labels(labels: Mapping[str, str]) -> bytes | None:
    if not labels:
        return None
    return LABELS_MAGIC + json.dumps(dict(sorted(labels.items())), separators=(",", ":")).encode()


def decode_labels(data: bytes | None) -> dict[str, str]:
    """Labels from user data; anything else (other clients' user data) yields no labels."""
    if not data or not data.startswith(LABELS_MAGIC):
        return {}
    try:
        value = json.loads(data[len(LABELS_MAGIC) :])
    except ValueError:
        return {}
    if not isinstance(value, dict):
        return {}
    return {str(k): str(v) for k, v in value.items()}


def encode_stamp(generation: int) -> bytes:
    return STAMP_MAGIC + _I32.pack(generation)


def decode_stamp(data: bytes | None) -> int | None:
    if data and len(data) == 8 and data.startswith(STAMP_MAGIC):
        return _I32.unpack_from(data, 4)[0]
    return None
