"""ShareFetch (API key 78, KIP-932), versions 1-2; flexible.

Declared from Kafka 4.3's `ShareFetchRequest.json` / `ShareFetchResponse.json`. v0 (4.0 early access, with
PartitionMaxBytes and no MaxRecords/BatchSize) was removed in 4.1 and is not offered. librdkafka 2.16's
ShareConsumer sends v1; the Java 4.3 KafkaShareConsumer sends v2.

Request:
- v1: GroupId, MemberId, ShareSessionEpoch (0 open, -1 close), MaxWaitMs, MinBytes, MaxBytes, MaxRecords,
  BatchSize, Topics[] {TopicId, Partitions[] {PartitionIndex, AcknowledgementBatches[] {FirstOffset,
  LastOffset, AcknowledgeTypes[]}}}, ForgottenTopicsData[] {TopicId, Partitions[]}.
- v2: adds ShareAcquireMode (ignorable; 0 batch_optimized, 1 record_limit) and IsRenewAck (KIP-1222:
  RENEW acknowledgements, type 4).

Response v1-v2 (same layout): ThrottleTimeMs, ErrorCode, ErrorMessage, AcquisitionLockTimeoutMs,
Responses[] {TopicId, Partitions[] {PartitionIndex, ErrorCode, ErrorMessage, AcknowledgeErrorCode,
AcknowledgeErrorMessage, CurrentLeader {LeaderId, LeaderEpoch}, Records (not nullable from v1),
AcquiredRecords[] {FirstOffset, LastOffset, DeliveryCount}}}, NodeEndpoints[] {NodeId, Host, Port, Rack}.
"""

from __future__ import annotations

import uuid

from groupcoord.protocol.schema import (
    BOOL,
    INT8,
    INT16,
    INT32,
    INT64,
    RECORDS,
    STRING,
    UUID,
    array,
    f,
    message,
    struct,
)


@struct
class AcknowledgementBatch:
    first_offset: int = f(INT64, "0+")
    last_offset: int = f(INT64, "0+")
    acknowledge_types: tuple[int, ...] = f(array(INT8), "0+")


@struct
class ShareFetchPartition:
    partition_index: int = f(INT32, "0+")
    partition_max_bytes: int = f(INT32, "0")
    acknowledgement_batches: tuple[AcknowledgementBatch, ...] = f(array(AcknowledgementBatch), "0+")


@struct
class ShareFetchTopic:
    topic_id: uuid.UUID = f(UUID, "0+")
    partitions: tuple[ShareFetchPartition, ...] = f(array(ShareFetchPartition), "0+")


@struct
class ShareForgottenTopic:
    topic_id: uuid.UUID = f(UUID, "0+")
    partitions: tuple[int, ...] = f(array(INT32), "0+")


@message(78, "request", valid="1-2", flexible="0+")
class ShareFetchRequest:
    group_id: str | None = f(STRING, "0+", nullable="0+", default=None)
    member_id: str | None = f(STRING, "0+", nullable="0+", default="")
    share_session_epoch: int = f(INT32, "0+")
    max_wait_ms: int = f(INT32, "0+")
    min_bytes: int = f(INT32, "0+")
    max_bytes: int = f(INT32, "0+", default=0x7FFFFFFF)
    max_records: int = f(INT32, "1+")
    batch_size: int = f(INT32, "1+")
    share_acquire_mode: int = f(INT8, "2+", default=0, ignorable=True)
    is_renew_ack: bool = f(BOOL, "2+", default=False)
    topics: tuple[ShareFetchTopic, ...] = f(array(ShareFetchTopic), "0+")
    forgotten_topics_data: tuple[ShareForgottenTopic, ...] = f(array(ShareForgottenTopic), "0+")


@struct
class ShareLeaderIdAndEpoch:
    leader_id: int = f(INT32, "0+")
    leader_epoch: int = f(INT32, "0+")


@struct
class AcquiredRecords:
    first_offset: int = f(INT64, "0+")
    last_offset: int = f(INT64, "0+")
    delivery_count: int = f(INT16, "0+")


@struct
class SharePartitionData:
    partition_index: int = f(INT32, "0+")
    error_code: int = f(INT16, "0+")
    error_message: str | None = f(STRING, "0+", nullable="0+", default=None)
    acknowledge_error_code: int = f(INT16, "0+")
    acknowledge_error_message: str | None = f(STRING, "0+", nullable="0+", default=None)
    current_leader: ShareLeaderIdAndEpoch = f(ShareLeaderIdAndEpoch, "0+")
    records: bytes | None = f(RECORDS, "0+", nullable="0", default=b"")
    acquired_records: tuple[AcquiredRecords, ...] = f(array(AcquiredRecords), "0+")


@struct
class ShareFetchableTopicResponse:
    topic_id: uuid.UUID = f(UUID, "0+")
    partitions: tuple[SharePartitionData, ...] = f(array(SharePartitionData), "0+")


@struct
class ShareNodeEndpoint:
    node_id: int = f(INT32, "0+")
    host: str = f(STRING, "0+")
    port: int = f(INT32, "0+")
    rack: str | None = f(STRING, "0+", nullable="0+", default=None)


@message(78, "response", valid="1-2", flexible="0+")
class ShareFetchResponse:
    throttle_time_ms: int = f(INT32, "0+")
    error_code: int = f(INT16, "0+")
    error_message: str | None = f(STRING, "0+", nullable="0+", default=None)
    acquisition_lock_timeout_ms: int = f(INT32, "1+")
    responses: tuple[ShareFetchableTopicResponse, ...] = f(array(ShareFetchableTopicResponse), "0+")
    node_endpoints: tuple[ShareNodeEndpoint, ...] = f(array(ShareNodeEndpoint), "0+")
