"""DeleteRecords (API key 21), versions 0-2; flexible from v2.

Declared from Kafka's `DeleteRecordsRequest.json` / `DeleteRecordsResponse.json`.

Request: Topics[] {Name, Partitions[] {PartitionIndex, Offset}}, TimeoutMs. Offset -1 means "up to the high
watermark". v1 is the same as v0 (brokers answer before throttling); v2 is the first flexible version.

Response: ThrottleTimeMs, Topics[] {Name, Partitions[] {PartitionIndex, LowWatermark, ErrorCode}}.
"""

from __future__ import annotations

from groupcoord.protocol.schema import INT16, INT32, INT64, STRING, array, f, message, struct


@struct
class DeleteRecordsPartition:
    partition_index: int = f(INT32, "0+")
    offset: int = f(INT64, "0+")


@struct
class DeleteRecordsTopic:
    name: str = f(STRING, "0+")
    partitions: tuple[DeleteRecordsPartition, ...] = f(array(DeleteRecordsPartition), "0+")


@message(21, "request", valid="0-2", flexible="2+")
class DeleteRecordsRequest:
    topics: tuple[DeleteRecordsTopic, ...] = f(array(DeleteRecordsTopic), "0+")
    timeout_ms: int = f(INT32, "0+")


@struct
class DeleteRecordsPartitionResult:
    partition_index: int = f(INT32, "0+")
    low_watermark: int = f(INT64, "0+")
    error_code: int = f(INT16, "0+")


@struct
class DeleteRecordsTopicResult:
    name: str = f(STRING, "0+")
    partitions: tuple[DeleteRecordsPartitionResult, ...] = f(array(DeleteRecordsPartitionResult), "0+")


@message(21, "response", valid="0-2", flexible="2+")
class DeleteRecordsResponse:
    throttle_time_ms: int = f(INT32, "0+")
    topics: tuple[DeleteRecordsTopicResult, ...] = f(array(DeleteRecordsTopicResult), "0+")
