"""OffsetDelete (API key 47), version 0 only, not flexible (KIP-496).

Declared from Kafka's `OffsetDeleteRequest.json` / `OffsetDeleteResponse.json`.
Request: GroupId, Topics[] {Name, Partitions[] {PartitionIndex}}.
Response: ErrorCode, ThrottleTimeMs, Topics[] {Name, Partitions[] {PartitionIndex, ErrorCode}}.
"""

from __future__ import annotations

from groupcoord.protocol.schema import INT16, INT32, STRING, array, f, message, struct


@struct
class OffsetDeleteRequestPartition:
    partition_index: int = f(INT32, "0+")


@struct
class OffsetDeleteRequestTopic:
    name: str = f(STRING, "0+")
    partitions: tuple[OffsetDeleteRequestPartition, ...] = f(array(OffsetDeleteRequestPartition), "0+")


@message(47, "request", valid="0", flexible="none")
class OffsetDeleteRequest:
    group_id: str = f(STRING, "0+")
    topics: tuple[OffsetDeleteRequestTopic, ...] = f(array(OffsetDeleteRequestTopic), "0+")


@struct
class OffsetDeleteResponsePartition:
    partition_index: int = f(INT32, "0+")
    error_code: int = f(INT16, "0+")


@struct
class OffsetDeleteResponseTopic:
    name: str = f(STRING, "0+")
    partitions: tuple[OffsetDeleteResponsePartition, ...] = f(array(OffsetDeleteResponsePartition), "0+")


@message(47, "response", valid="0", flexible="none")
class OffsetDeleteResponse:
    error_code: int = f(INT16, "0+")
    throttle_time_ms: int = f(INT32, "0+", ignorable=True)
    topics: tuple[OffsetDeleteResponseTopic, ...] = f(array(OffsetDeleteResponseTopic), "0+")
