"""Fetch (API key 1), versions 4-12; flexible from v12.

Declared from Kafka's `FetchRequest.json` / `FetchResponse.json`. Kafka has v0-v17; we declare v4 (the first
version that returns message format v2) up to v12, the last version that names topics (v13 replaces names
with topic ids, KIP-516). Fields that only exist in v13+ (TopicId, ReplicaState, ReplicaDirectoryId,
NodeEndpoints) are therefore not declared.

Request:
- v4: ReplicaId, MaxWaitMs, MinBytes, MaxBytes, IsolationLevel, Topics[] {Topic, Partitions[] {Partition,
  FetchOffset, PartitionMaxBytes}} (v3 added MaxBytes, v4 IsolationLevel).
- v5: adds Partitions.LogStartOffset.
- v6: same as v5.
- v7: adds SessionId, SessionEpoch and ForgottenTopicsData[] {Topic, Partitions[]} (incremental fetch,
  KIP-227).
- v8: same as v7.
- v9: adds Partitions.CurrentLeaderEpoch (KIP-320).
- v10: same layout; ZStandard compression allowed (KIP-110).
- v11: adds RackId (fetch from follower, KIP-392).
- v12: first flexible version; adds Partitions.LastFetchedEpoch and the tagged ClusterId (tag 0).

Response:
- v4: ThrottleTimeMs, Responses[] {Topic, Partitions[] {PartitionIndex, ErrorCode, HighWatermark,
  LastStableOffset, AbortedTransactions[] (nullable) {ProducerId, FirstOffset}, Records}}.
- v5: adds Partitions.LogStartOffset.
- v6: same as v5 (KAFKA_STORAGE_ERROR may be returned).
- v7: adds ErrorCode and SessionId (top level).
- v8-v10: same as v7.
- v11: adds Partitions.PreferredReadReplica (default -1).
- v12: first flexible version; adds the tagged Partitions.DivergingEpoch (tag 0), CurrentLeader (tag 1) and
  SnapshotId (tag 2).
"""

from __future__ import annotations

from groupcoord.protocol.schema import INT8, INT16, INT32, INT64, RECORDS, STRING, array, f, message, struct


@struct
class FetchPartition:
    partition: int = f(INT32, "0+")
    current_leader_epoch: int = f(INT32, "9+", default=-1, ignorable=True)
    fetch_offset: int = f(INT64, "0+")
    last_fetched_epoch: int = f(INT32, "12+", default=-1, ignorable=False)
    log_start_offset: int = f(INT64, "5+", default=-1, ignorable=True)
    partition_max_bytes: int = f(INT32, "0+")


@struct
class FetchTopic:
    topic: str = f(STRING, "0-12", ignorable=True)
    partitions: tuple[FetchPartition, ...] = f(array(FetchPartition), "0+")


@struct
class ForgottenTopic:
    topic: str = f(STRING, "7-12", ignorable=True)
    partitions: tuple[int, ...] = f(array(INT32), "7+")


@message(1, "request", valid="4-12", flexible="12+")
class FetchRequest:
    cluster_id: str | None = f(
        STRING, "12+", nullable="12+", default=None, tag=0, tagged_versions="12+", ignorable=True
    )
    replica_id: int = f(INT32, "0-14", default=-1)
    max_wait_ms: int = f(INT32, "0+")
    min_bytes: int = f(INT32, "0+")
    max_bytes: int = f(INT32, "3+", default=0x7FFFFFFF, ignorable=True)
    isolation_level: int = f(INT8, "4+", default=0, ignorable=True)
    session_id: int = f(INT32, "7+", default=0, ignorable=True)
    session_epoch: int = f(INT32, "7+", default=-1, ignorable=True)
    topics: tuple[FetchTopic, ...] = f(array(FetchTopic), "0+")
    forgotten_topics_data: tuple[ForgottenTopic, ...] = f(array(ForgottenTopic), "7+", ignorable=False)
    rack_id: str = f(STRING, "11+", default="", ignorable=True)


@struct
class EpochEndOffset:
    epoch: int = f(INT32, "12+", default=-1)
    end_offset: int = f(INT64, "12+", default=-1)


@struct
class LeaderIdAndEpoch:
    leader_id: int = f(INT32, "12+", default=-1)
    leader_epoch: int = f(INT32, "12+", default=-1)


@struct
class SnapshotId:
    end_offset: int = f(INT64, "0+", default=-1)
    epoch: int = f(INT32, "0+", default=-1)


@struct
class AbortedTransaction:
    producer_id: int = f(INT64, "4+")
    first_offset: int = f(INT64, "4+")


@struct
class PartitionData:
    partition_index: int = f(INT32, "0+")
    error_code: int = f(INT16, "0+")
    high_watermark: int = f(INT64, "0+")
    last_stable_offset: int = f(INT64, "4+", default=-1, ignorable=True)
    log_start_offset: int = f(INT64, "5+", default=-1, ignorable=True)
    diverging_epoch: EpochEndOffset = f(EpochEndOffset, "12+", tag=0, tagged_versions="12+")
    current_leader: LeaderIdAndEpoch = f(LeaderIdAndEpoch, "12+", tag=1, tagged_versions="12+")
    snapshot_id: SnapshotId = f(SnapshotId, "12+", tag=2, tagged_versions="12+")
    aborted_transactions: tuple[AbortedTransaction, ...] | None = f(
        array(AbortedTransaction), "4+", nullable="4+", ignorable=True
    )
    preferred_read_replica: int = f(INT32, "11+", default=-1, ignorable=False)
    records: bytes | None = f(RECORDS, "0+", nullable="0+")


@struct
class FetchableTopicResponse:
    topic: str = f(STRING, "0-12", ignorable=True)
    partitions: tuple[PartitionData, ...] = f(array(PartitionData), "0+")


@message(1, "response", valid="4-12", flexible="12+")
class FetchResponse:
    throttle_time_ms: int = f(INT32, "1+", ignorable=True)
    error_code: int = f(INT16, "7+", ignorable=True)
    session_id: int = f(INT32, "7+", default=0, ignorable=False)
    responses: tuple[FetchableTopicResponse, ...] = f(array(FetchableTopicResponse), "0+")
