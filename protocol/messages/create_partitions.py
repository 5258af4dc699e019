"""CreatePartitions (API key 37), versions 0-3; flexible from v2.

Declared from Kafka's `CreatePartitionsRequest.json` / `CreatePartitionsResponse.json`.

Request (same fields in every version):
- v0: Topics[] {Name, Count, Assignments[] (nullable) {BrokerIds[]}}, TimeoutMs, ValidateOnly.
- v1: same as v0.
- v2: first flexible version.
- v3: same as v2 (THROTTLING_QUOTA_EXCEEDED may be returned, KIP-599).

Response (same fields in every version):
- v0: ThrottleTimeMs, Results[] {Name, ErrorCode, ErrorMessage (nullable, default null)}.
- v1: same as v0 (brokers answer before throttling).
- v2: first flexible version.
- v3: same as v2.
"""

from __future__ import annotations

from groupcoord.protocol.schema import BOOL, INT16, INT32, STRING, array, f, message, struct


@struct
class CreatePartitionsAssignment:
    broker_ids: tuple[int, ...] = f(array(INT32), "0+")


@struct
class CreatePartitionsTopic:
    name: str = f(STRING, "0+")
    count: int = f(INT32, "0+")
    assignments: tuple[CreatePartitionsAssignment, ...] | None = f(
        array(CreatePartitionsAssignment), "0+", nullable="0+"
    )


@message(37, "request", valid="0-3", flexible="2+")
class CreatePartitionsRequest:
    topics: tuple[CreatePartitionsTopic, ...] = f(array(CreatePartitionsTopic), "0+")
    timeout_ms: int = f(INT32, "0+")
    validate_only: bool = f(BOOL, "0+")


@struct
class CreatePartitionsTopicResult:
    name: str = f(STRING, "0+")
    error_code: int = f(INT16, "0+")
    error_message: str | None = f(STRING, "0+", nullable="0+", default=None)


@message(37, "response", valid="0-3", flexible="2+")
class CreatePartitionsResponse:
    throttle_time_ms: int = f(INT32, "0+")
    results: tuple[CreatePartitionsTopicResult, ...] = f(array(CreatePartitionsTopicResult), "0+")
