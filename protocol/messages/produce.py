"""Produce (API key 0), versions 3-9; flexible from v9.

Declared from Kafka's `ProduceRequest.json` / `ProduceResponse.json`. Kafka has v0-v11; we declare v3 (the
first version carrying record batches, magic 2) up to v9. Fields that only exist in v10+ (the response's
tagged CurrentLeader and NodeEndpoints, KIP-951) are therefore not declared.

Request:
- v3: TransactionalId (nullable, default null), Acks, TimeoutMs, TopicData[] {Name, PartitionData[] {Index,
  Records}}; adds TransactionalId and message format v2.
- v4: same as v3 (KAFKA_STORAGE_ERROR may be returned).
- v5-v6: same as v3.
- v7: same layout; ZStandard compression allowed (KIP-110).
- v8: same layout; the response gains RecordErrors and ErrorMessage (KIP-467).
- v9: first flexible version.

Response:
- v3: Responses[] {Name, PartitionResponses[] {Index, ErrorCode, BaseOffset, LogAppendTimeMs}},
  ThrottleTimeMs (v1 added ThrottleTimeMs, v2 LogAppendTimeMs).
- v4: same as v3.
- v5: adds PartitionResponses.LogStartOffset.
- v6-v7: same as v5.
- v8: adds PartitionResponses.RecordErrors[] {BatchIndex, BatchIndexErrorMessage} and ErrorMessage.
- v9: first flexible version.

Records are the raw record-batch bytes (`RECORDS`, nullable bytes); this layer never looks inside them.
"""

from __future__ import annotations

from groupcoord.protocol.schema import INT16, INT32, INT64, RECORDS, STRING, array, f, message, struct


@struct
class PartitionProduceData:
    index: int = f(INT32, "0+")
    records: bytes | None = f(RECORDS, "0+", nullable="0+")


@struct
class TopicProduceData:
    name: str = f(STRING, "0+")
    partition_data: tuple[PartitionProduceData, ...] = f(array(PartitionProduceData), "0+")


@message(0, "request", valid="3-9", flexible="9+")
class ProduceRequest:
    transactional_id: str | None = f(STRING, "3+", nullable="3+", default=None)
    acks: int = f(INT16, "0+")
    timeout_ms: int = f(INT32, "0+")
    topic_data: tuple[TopicProduceData, ...] = f(array(TopicProduceData), "0+")


@struct
class BatchIndexAndErrorMessage:
    batch_index: int = f(INT32, "8+")
    batch_index_error_message: str | None = f(STRING, "8+", nullable="8+", default=None)


@struct
class PartitionProduceResponse:
    index: int = f(INT32, "0+")
    error_code: int = f(INT16, "0+")
    base_offset: int = f(INT64, "0+")
    log_append_time_ms: int = f(INT64, "2+", default=-1, ignorable=True)
    log_start_offset: int = f(INT64, "5+", default=-1, ignorable=True)
    record_errors: tuple[BatchIndexAndErrorMessage, ...] = f(
        array(BatchIndexAndErrorMessage), "8+", ignorable=True
    )
    error_message: str | None = f(STRING, "8+", nullable="8+", default=None, ignorable=True)


@struct
class TopicProduceResponse:
    name: str = f(STRING, "0+")
    partition_responses: tuple[PartitionProduceResponse, ...] = f(array(PartitionProduceResponse), "0+")


@message(0, "response", valid="3-9", flexible="9+")
class ProduceResponse:
    responses: tuple[TopicProduceResponse, ...] = f(array(TopicProduceResponse), "0+")
    throttle_time_ms: int = f(INT32, "1+", default=0, ignorable=True)
