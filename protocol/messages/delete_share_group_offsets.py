"""DeleteShareGroupOffsets (API key 92, KIP-932), version 0; flexible.

Declared from Kafka 4.3's `DeleteShareGroupOffsetsRequest.json` / `DeleteShareGroupOffsetsResponse.json` (the
Java 4.3 Admin's `deleteShareGroupOffsets`, used by `kafka-share-groups.sh --delete-offsets`).

Request: GroupId, Topics[] {TopicName}.

Response: ThrottleTimeMs, ErrorCode, ErrorMessage, Responses[] {TopicName, TopicId, ErrorCode, ErrorMessage}.
"""

from __future__ import annotations

import uuid

from groupcoord.protocol.schema import INT16, INT32, STRING, UUID, array, f, message, struct


@struct
class DeleteShareGroupOffsetsRequestTopic:
    topic_name: str = f(STRING, "0+")


@message(92, "request", valid="0", flexible="0+")
class DeleteShareGroupOffsetsRequest:
    group_id: str = f(STRING, "0+")
    topics: tuple[DeleteShareGroupOffsetsRequestTopic, ...] = f(
        array(DeleteShareGroupOffsetsRequestTopic), "0+"
    )


@struct
class DeleteShareGroupOffsetsResponseTopic:
    topic_name: str = f(STRING, "0+")
    topic_id: uuid.UUID = f(UUID, "0+")
    error_code: int = f(INT16, "0+")
    error_message: str | None = f(STRING, "0+", nullable="0+", default=None)


@message(92, "response", valid="0", flexible="0+")
class DeleteShareGroupOffsetsResponse:
    throttle_time_ms: int = f(INT32, "0+")
    error_code: int = f(INT16, "0+")
    error_message: str | None = f(STRING, "0+", nullable="0+", default=None)
    responses: tuple[DeleteShareGroupOffsetsResponseTopic, ...] = f(
        array(DeleteShareGroupOffsetsResponseTopic), "0+"
    )
