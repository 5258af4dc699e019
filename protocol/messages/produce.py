"""Produce (API key 0), versions 3-13; flexible from v9.

Declared from Kafka 4.4's `ProduceRequest.json` / `ProduceResponse.json`, which declare v3-13: Kafka 4.0
removed v0-2 (KIP-896) but still advertises Produce from v0 (KAFKA-18659: librdkafka before #4956 sends
compressed batches only to a broker whose Produce range starts at 0) and closes the connection of a v0-2
request; `groupcoord.protocol.api.ADVERTISED_MIN` does the same.

Request:
- v3: TransactionalId (nullable, default null), Acks, TimeoutMs, TopicData[] {Name, PartitionData[] {Index,
  Records}}; adds TransactionalId and message format v2.
- v4: same as v3 (KAFKA_STORAGE_ERROR may be returned).
- v5-v6: same as v3.
- v7: same layout; ZStandard compression allowed (KIP-110).
- v8: same layout; the response gains RecordErrors and ErrorMessage (KIP-467).
- v9: first flexible version.
- v10: same as v9 (KIP-951: the response may carry the new leader).
- v11: same as v9; TRANSACTION_ABORTABLE may be returned (KIP-890).
- v12: same as v9; with transaction.version 2 a transactional produce also adds the partition to the
  transaction (KIP-890 part 2). groupcoord finalizes transaction.version 1, so clients keep transactional
  produces at v11 or below (the Java producer caps them there).
- v13: TopicData.Name replaced by TopicData.TopicId (KIP-516); UNKNOWN_TOPIC_ID for an id we do not know.

Response:
- v3: Responses[] {Name, PartitionResponses[] {Index, ErrorCode, BaseOffset, LogAppendTimeMs}},
  ThrottleTimeMs (v1 added ThrottleTimeMs, v2 LogAppendTimeMs).
- v4: same as v3.
- v5: adds PartitionResponses.LogStartOffset.
- v6-v7: same as v5.
- v8: adds PartitionResponses.RecordErrors[] {BatchIndex, BatchIndexErrorMessage} and ErrorMessage.
- v9: first flexible version.
- v10: adds the tagged PartitionResponses.CurrentLeader (tag 0) {LeaderId, LeaderEpoch} and the tagged
  top-level NodeEndpoints (tag 0) {NodeId, Host, Port, Rack} for NOT_LEADER_OR_FOLLOWER answers (KIP-951).
- v11-v12: same as v10.
- v13: Responses.Name replaced by Responses.TopicId.

Records are the raw record-batch bytes (`RECORDS`, nullable bytes); this layer never looks inside them.
"""

from __future__ import annotations

import uuid

from groupcoord.protocol.schema import INT16, INT32, INT64, RECORDS, STRING, UUID, array, f, message, struct

ZERO_UUID = uuid.UUID(int=0)


@struct
class PartitionProduceData:
    index: int = f(INT32, "0+")
    records: bytes | None = f(RECORDS, "0+", nullable="0+")


@struct
class TopicProduceData:
    name: str = f(STRING, "0-12", ignorable=True)
    topic_id: uuid.UUID = f(UUID, "13+", default=ZERO_UUID, ignorable=True)
    partition_data: tuple[PartitionProduceData, ...] = f(array(PartitionProduceData), "0+")


@message(0, "request", valid="3-13", flexible="9+")
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
class LeaderIdAndEpoch:
    leader_id: int = f(INT32, "10+", default=-1)
    leader_epoch: int = f(INT32, "10+", default=-1)


@struct
class NodeEndpoint:
    node_id: int = f(INT32, "10+")
    host: str = f(STRING, "10+")
    port: int = f(INT32, "10+")
    rack: str | None = f(STRING, "10+", nullable="10+", default=None)


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
    current_leader: LeaderIdAndEpoch = f(LeaderIdAndEpoch, "10+", tag=0, tagged_versions="10+")


@struct
class TopicProduceResponse:
    name: str = f(STRING, "0-12", ignorable=True)
    topic_id: uuid.UUID = f(UUID, "13+", default=ZERO_UUID, ignorable=True)
    partition_responses: tuple[PartitionProduceResponse, ...] = f(array(PartitionProduceResponse), "0+")


@message(0, "response", valid="3-13", flexible="9+")
class ProduceResponse:
    responses: tuple[TopicProduceResponse, ...] = f(array(TopicProduceResponse), "0+")
    throttle_time_ms: int = f(INT32, "1+", default=0, ignorable=True)
    node_endpoints: tuple[NodeEndpoint, ...] = f(array(NodeEndpoint), "10+", tag=0, tagged_versions="10+")
