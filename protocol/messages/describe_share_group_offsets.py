"""DescribeShareGroupOffsets (API key 90, KIP-932), versions 0-1; flexible.

Declared from Kafka 4.3's `DescribeShareGroupOffsetsRequest.json` / `DescribeShareGroupOffsetsResponse.json`.
v1 (KIP-1226) adds the per-partition Lag; the Java 4.3 Admin's `listShareGroupOffsets` sends v1.

Request: Groups[] {GroupId, Topics (nullable: every initialized partition of the group)[] {TopicName,
Partitions[]}}.

Response: ThrottleTimeMs, Groups[] {GroupId, Topics[] {TopicName, TopicId, Partitions[] {PartitionIndex,
StartOffset, LeaderEpoch, Lag (v1+, default -1), ErrorCode, ErrorMessage}}, ErrorCode, ErrorMessage}.
"""

from __future__ import annotations

import uuid

from groupcoord.protocol.schema import INT16, INT32, INT64, STRING, UUID, array, f, message, struct


@struct
class DescribeShareGroupOffsetsRequestTopic:
    topic_name: str = f(STRING, "0+")
    partitions: tuple[int, ...] = f(array(INT32), "0+")


@struct
class DescribeShareGroupOffsetsRequestGroup:
    group_id: str = f(STRING, "0+")
    topics: tuple[DescribeShareGroupOffsetsRequestTopic, ...] | None = f(
        array(DescribeShareGroupOffsetsRequestTopic), "0+", nullable="0+", default=()
    )


@message(90, "request", valid="0-1", flexible="0+")
class DescribeShareGroupOffsetsRequest:
    groups: tuple[DescribeShareGroupOffsetsRequestGroup, ...] = f(
        array(DescribeShareGroupOffsetsRequestGroup), "0+"
    )


@struct
class DescribeShareGroupOffsetsResponsePartition:
    partition_index: int = f(INT32, "0+")
    start_offset: int = f(INT64, "0+")
    leader_epoch: int = f(INT32, "0+")
    lag: int = f(INT64, "1+", default=-1, ignorable=True)
    error_code: int = f(INT16, "0+")
    error_message: str | None = f(STRING, "0+", nullable="0+", default=None)


@struct
class DescribeShareGroupOffsetsResponseTopic:
    topic_name: str = f(STRING, "0+")
    topic_id: uuid.UUID = f(UUID, "0+")
    partitions: tuple[DescribeShareGroupOffsetsResponsePartition, ...] = f(
        array(DescribeShareGroupOffsetsResponsePartition), "0+"
    )


@struct
class DescribeShareGroupOffsetsResponseGroup:
    group_id: str = f(STRING, "0+")
    topics: tuple[DescribeShareGroupOffsetsResponseTopic, ...] = f(
        array(DescribeShareGroupOffsetsResponseTopic), "0+"
    )
    error_code: int = f(INT16, "0+")
    error_message: str | None = f(STRING, "0+", nullable="0+", default=None)


@message(90, "response", valid="0-1", flexible="0+")
class DescribeShareGroupOffsetsResponse:
    throttle_time_ms: int = f(INT32, "0+")
    groups: tuple[DescribeShareGroupOffsetsResponseGroup, ...] = f(
        array(DescribeShareGroupOffsetsResponseGroup), "0+"
    )
