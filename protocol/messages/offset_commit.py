"""OffsetCommit (API key 8), versions 0-10, flexible from v8.

Version notes:
- v0: offsets stored in ZooKeeper (a KRaft broker answers UNSUPPORTED_VERSION; so do we).
- v1: GenerationIdOrMemberEpoch, MemberId, per-partition CommitTimestamp (v1 only).
- v2: RetentionTimeMs (v2-v4) instead of CommitTimestamp.  v3: response ThrottleTimeMs.  v4: same layout.
- v5: RetentionTimeMs removed.  v6: CommittedLeaderEpoch.  v7: GroupInstanceId (KIP-345).
- v8: flexible encoding.  v9: same layout; an unknown group with a generation gets GROUP_ID_NOT_FOUND.
- v10: topics by TopicId instead of Name (KIP-848), request and response; an id the broker does not know
  gets UNKNOWN_TOPIC_ID (server/apis/topic_ids.py resolves ids to names in front of the handler).
"""

from __future__ import annotations

import uuid

from groupcoord.protocol.schema import INT16, INT32, INT64, STRING, UUID, array, f, message, struct


@struct
class OffsetCommitRequestPartition:
    partition_index: int = f(INT32, "0+")
    committed_offset: int = f(INT64, "0+")
    committed_leader_epoch: int = f(INT32, "6+", default=-1, ignorable=True)
    commit_timestamp: int = f(INT64, "1", default=-1)
    committed_metadata: str | None = f(STRING, "0+", nullable="0+")


@struct
class OffsetCommitRequestTopic:
    name: str = f(STRING, "0-9", ignorable=True)
    topic_id: uuid.UUID = f(UUID, "10+", ignorable=True)
    partitions: tuple[OffsetCommitRequestPartition, ...] = f(array(OffsetCommitRequestPartition), "0+")


@message(8, "request", valid="0-10", flexible="8+")
class OffsetCommitRequest:
    group_id: str = f(STRING, "0+")
    generation_id_or_member_epoch: int = f(INT32, "1+", default=-1, ignorable=True)
    member_id: str = f(STRING, "1+", ignorable=True)
    group_instance_id: str | None = f(STRING, "7+", nullable="7+", default=None)
    retention_time_ms: int = f(INT64, "2-4", default=-1, ignorable=True)
    topics: tuple[OffsetCommitRequestTopic, ...] = f(array(OffsetCommitRequestTopic), "0+")


@struct
class OffsetCommitResponsePartition:
    partition_index: int = f(INT32, "0+")
    error_code: int = f(INT16, "0+")


@struct
class OffsetCommitResponseTopic:
    name: str = f(STRING, "0-9", ignorable=True)
    topic_id: uuid.UUID = f(UUID, "10+", ignorable=True)
    partitions: tuple[OffsetCommitResponsePartition, ...] = f(array(OffsetCommitResponsePartition), "0+")


@message(8, "response", valid="0-10", flexible="8+")
class OffsetCommitResponse:
    throttle_time_ms: int = f(INT32, "3+", ignorable=True)
    topics: tuple[OffsetCommitResponseTopic, ...] = f(array(OffsetCommitResponseTopic), "0+")
