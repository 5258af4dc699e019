"""TxnOffsetCommit (API key 28), versions 0-5; flexible from v3.

Declared from Kafka's `TxnOffsetCommitRequest.json` / `TxnOffsetCommitResponse.json`.

Request:
- v0-v1: TransactionalId, GroupId, ProducerId, ProducerEpoch, Topics[Name, Partitions[PartitionIndex,
  CommittedOffset, CommittedMetadata]].
- v2: adds CommittedLeaderEpoch (default -1).
- v3: adds GenerationId (default -1), MemberId (default ""), GroupInstanceId (nullable) for the KIP-447
  member checks; first flexible version.
- v4: TRANSACTION_ABORTABLE may be answered.  v5: same as v4 (KIP-890 part 2).

Response: ThrottleTimeMs, Topics[Name, Partitions[PartitionIndex, ErrorCode]] in every version.
"""

from __future__ import annotations

from groupcoord.protocol.schema import INT16, INT32, INT64, STRING, array, f, message, struct


@struct
class TxnOffsetCommitRequestPartition:
    partition_index: int = f(INT32, "0+")
    committed_offset: int = f(INT64, "0+")
    committed_leader_epoch: int = f(INT32, "2+", default=-1, ignorable=True)
    committed_metadata: str | None = f(STRING, "0+", nullable="0+")


@struct
class TxnOffsetCommitRequestTopic:
    name: str = f(STRING, "0+")
    partitions: tuple[TxnOffsetCommitRequestPartition, ...] = f(array(TxnOffsetCommitRequestPartition), "0+")


@message(28, "request", valid="0-5", flexible="3+")
class TxnOffsetCommitRequest:
    transactional_id: str = f(STRING, "0+")
    group_id: str = f(STRING, "0+")
    producer_id: int = f(INT64, "0+")
    producer_epoch: int = f(INT16, "0+")
    generation_id: int = f(INT32, "3+", default=-1)
    member_id: str = f(STRING, "3+", default="")
    group_instance_id: str | None = f(STRING, "3+", nullable="3+", default=None)
    topics: tuple[TxnOffsetCommitRequestTopic, ...] = f(array(TxnOffsetCommitRequestTopic), "0+")


@struct
class TxnOffsetCommitResponsePartition:
    partition_index: int = f(INT32, "0+")
    error_code: int = f(INT16, "0+")


@struct
class TxnOffsetCommitResponseTopic:
    name: str = f(STRING, "0+")
    partitions: tuple[TxnOffsetCommitResponsePartition, ...] = f(
        array(TxnOffsetCommitResponsePartition), "0+"
    )


@message(28, "response", valid="0-5", flexible="3+")
class TxnOffsetCommitResponse:
    throttle_time_ms: int = f(INT32, "0+")
    topics: tuple[TxnOffsetCommitResponseTopic, ...] = f(array(TxnOffsetCommitResponseTopic), "0+")
