"""AlterShareGroupOffsets (API key 91, KIP-932), version 0; flexible.

Declared from Kafka 4.3's `AlterShareGroupOffsetsRequest.json` / `AlterShareGroupOffsetsResponse.json` (the
Java 4.3 Admin's `alterShareGroupOffsets`, used by `kafka-share-groups.sh --reset-offsets`).

Request: GroupId, Topics[] {TopicName, Partitions[] {PartitionIndex, StartOffset}}.

Response: ThrottleTimeMs, ErrorCode, ErrorMessage, Responses[] {TopicName, TopicId, Partitions[]
{PartitionIndex, ErrorCode, ErrorMessage}}.
"""

from __future__ import annotations

import uuid

from groupcoord.protocol.schema import INT16, INT32, INT64, STRING, UUID, array, f, message, struct


@struct
class AlterShareGroupOffsetsRequestPartition:
    partition_index: int = f(INT32, "0+")
    start_offset: int = f(INT64, "0+")


@struct
class AlterShareGroupOffsetsRequestTopic:
    topic_name: str = f(STRING, "0+")
    partitions: tuple[AlterShareGroupOffsetsRequestPartition, ...] = f(
        array(AlterShareGroupOffsetsRequestPartition), "0+"
    )


@message(91, "request", valid="0", flexible="0+")
class AlterShareGroupOffsetsRequest:
    group_id: str = f(STRING, "0+")
    topics: tuple[AlterShareGroupOffsetsRequestTopic, ...] = f(
        array(AlterShareGroupOffsetsRequestTopic), "0+"
    )


@struct
class AlterShareGroupOffsetsResponsePartition:
    partition_index: int = f(INT32, "0+")
    error_code: int = f(INT16, "0+")
    error_message: str | None = f(STRING, "0+", nullable="0+", default=None)


@struct
class AlterShareGroupOffsetsResponseTopic:
    topic_name: str = f(STRING, "0+")
    topic_id: uuid.UUID = f(UUID, "0+")
    partitions: tuple[AlterShareGroupOffsetsResponsePartition, ...] = f(
        array(AlterShareGroupOffsetsResponsePartition), "0+"
    )


@message(91, "response", valid="0", flexible="0+")
class AlterShareGroupOffsetsResponse:
    throttle_time_ms: int = f(INT32, "0+")
    error_code: int = f(INT16, "0+")
    error_message: str | None = f(STRING, "0+", nullable="0+", default=None)
    responses: tuple[AlterShareGroupOffsetsResponseTopic, ...] = f(
        array(AlterShareGroupOffsetsResponseTopic), "0+"
    )
