"""DeleteTopics (API key 20), versions 0-6; flexible from v4.

Declared from Kafka's `DeleteTopicsRequest.json` / `DeleteTopicsResponse.json`.

Request:
- v0-v3: TopicNames[], TimeoutMs.
- v4: first flexible version.
- v5: same as v4 (THROTTLING_QUOTA_EXCEEDED may be returned, KIP-599).
- v6: replaces TopicNames with Topics[] {Name (nullable, default null), TopicId} (KIP-516).

Response:
- v0: Responses[] {Name, ErrorCode}.
- v1: adds ThrottleTimeMs (first field).
- v2: same as v1 (brokers answer before throttling).
- v3: same as v2 (TOPIC_DELETION_DISABLED may be returned).
- v4: first flexible version.
- v5: adds Responses.ErrorMessage (nullable, default null).
- v6: adds Responses.TopicId; Responses.Name becomes nullable.
"""

from __future__ import annotations

import uuid

from groupcoord.protocol.schema import INT16, INT32, STRING, UUID, array, f, message, struct


@struct
class DeleteTopicState:
    name: str | None = f(STRING, "6+", nullable="6+", default=None)
    topic_id: uuid.UUID = f(UUID, "6+")


@message(20, "request", valid="0-6", flexible="4+")
class DeleteTopicsRequest:
    topics: tuple[DeleteTopicState, ...] = f(array(DeleteTopicState), "6+")
    topic_names: tuple[str, ...] = f(array(STRING), "0-5", ignorable=True)
    timeout_ms: int = f(INT32, "0+")


@struct
class DeletableTopicResult:
    name: str | None = f(STRING, "0+", nullable="6+")
    topic_id: uuid.UUID = f(UUID, "6+", ignorable=True)
    error_code: int = f(INT16, "0+")
    error_message: str | None = f(STRING, "5+", nullable="5+", default=None, ignorable=True)


@message(20, "response", valid="0-6", flexible="4+")
class DeleteTopicsResponse:
    throttle_time_ms: int = f(INT32, "1+", ignorable=True)
    responses: tuple[DeletableTopicResult, ...] = f(array(DeletableTopicResult), "0+")
