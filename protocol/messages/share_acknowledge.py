"""ShareAcknowledge (API key 79, KIP-932), versions 1-2; flexible.

Declared from Kafka 4.3's `ShareAcknowledgeRequest.json` / `ShareAcknowledgeResponse.json` (v0, the 4.0
early-access version, was removed in 4.1). librdkafka 2.16 sends v1, the Java 4.3 client v2.

Request: GroupId, MemberId, ShareSessionEpoch, IsRenewAck (v2), Topics[] {TopicId, Partitions[]
{PartitionIndex, AcknowledgementBatches[] {FirstOffset, LastOffset, AcknowledgeTypes[]}}}.

Response: ThrottleTimeMs, ErrorCode, ErrorMessage, AcquisitionLockTimeoutMs (v2, ignorable), Responses[]
{TopicId, Partitions[] {PartitionIndex, ErrorCode, ErrorMessage, CurrentLeader}}, NodeEndpoints[].
"""

from __future__ import annotations

import uuid

from groupcoord.protocol.messages.share_fetch import (
    AcknowledgementBatch,
    ShareLeaderIdAndEpoch,
    ShareNodeEndpoint,
)
from groupcoord.protocol.schema import BOOL, INT16, INT32, STRING, UUID, array, f, message, struct


@struct
class AcknowledgePartition:
    partition_index: int = f(INT32, "0+")
    acknowledgement_batches: tuple[AcknowledgementBatch, ...] = f(array(AcknowledgementBatch), "0+")


@struct
class AcknowledgeTopic:
    topic_id: uuid.UUID = f(UUID, "0+")
    partitions: tuple[AcknowledgePartition, ...] = f(array(AcknowledgePartition), "0+")


@message(79, "request", valid="1-2", flexible="0+")
class ShareAcknowledgeRequest:
    group_id: str | None = f(STRING, "0+", nullable="0+", default=None)
    member_id: str | None = f(STRING, "0+", nullable="0+", default="")
    share_session_epoch: int = f(INT32, "0+")
    is_renew_ack: bool = f(BOOL, "2+", default=False)
    topics: tuple[AcknowledgeTopic, ...] = f(array(AcknowledgeTopic), "0+")


@struct
class ShareAcknowledgePartitionData:
    partition_index: int = f(INT32, "0+")
    error_code: int = f(INT16, "0+")
    error_message: str | None = f(STRING, "0+", nullable="0+", default=None)
    current_leader: ShareLeaderIdAndEpoch = f(ShareLeaderIdAndEpoch, "0+")


@struct
class ShareAcknowledgeTopicResponse:
    topic_id: uuid.UUID = f(UUID, "0+")
    partitions: tuple[ShareAcknowledgePartitionData, ...] = f(array(ShareAcknowledgePartitionData), "0+")


@message(79, "response", valid="1-2", flexible="0+")
class ShareAcknowledgeResponse:
    throttle_time_ms: int = f(INT32, "0+")
    error_code: int = f(INT16, "0+")
    error_message: str | None = f(STRING, "0+", nullable="0+", default=None)
    acquisition_lock_timeout_ms: int = f(INT32, "2+", ignorable=True)
    responses: tuple[ShareAcknowledgeTopicResponse, ...] = f(array(ShareAcknowledgeTopicResponse), "0+")
    node_endpoints: tuple[ShareNodeEndpoint, ...] = f(array(ShareNodeEndpoint), "0+")
