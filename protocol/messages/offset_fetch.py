"""OffsetFetch (API key 9), versions 0-10, flexible from v6.

Version notes:
- v0: offsets from ZooKeeper (answered UNSUPPORTED_VERSION).  v1: from the coordinator.
- v2: Topics nullable (null = all committed partitions); response top-level ErrorCode.
- v3: response ThrottleTimeMs.  v4: same layout.  v5: response CommittedLeaderEpoch.
- v6: flexible encoding.  v7: RequireStable.
- v8: batched Groups[] (request and response; per-group ErrorCode).
- v9: per-group MemberId and MemberEpoch (for the new consumer protocol).
- v10: topics by TopicId instead of Name (KIP-848); an id the broker does not know gets UNKNOWN_TOPIC_ID
  per partition, and a committed topic without an id is left out of an all-topics answer.
"""

from __future__ import annotations

import uuid

from groupcoord.protocol.schema import BOOL, INT16, INT32, INT64, STRING, UUID, array, f, message, struct


@struct
class OffsetFetchRequestTopic:
    name: str = f(STRING, "0-7")
    partition_indexes: tuple[int, ...] = f(array(INT32), "0-7")


@struct
class OffsetFetchRequestTopics:
    name: str = f(STRING, "8-9", ignorable=True)
    topic_id: uuid.UUID = f(UUID, "10+", ignorable=True)
    partition_indexes: tuple[int, ...] = f(array(INT32), "8+")


@struct
class OffsetFetchRequestGroup:
    group_id: str = f(STRING, "8+")
    member_id: str | None = f(STRING, "9+", nullable="9+", default=None, ignorable=True)
    member_epoch: int = f(INT32, "9+", default=-1, ignorable=True)
    topics: tuple[OffsetFetchRequestTopics, ...] | None = f(
        array(OffsetFetchRequestTopics), "8+", nullable="8+"
    )


@message(9, "request", valid="0-10", flexible="6+")
class OffsetFetchRequest:
    group_id: str = f(STRING, "0-7")
    topics: tuple[OffsetFetchRequestTopic, ...] | None = f(
        array(OffsetFetchRequestTopic), "0-7", nullable="2-7"
    )
    groups: tuple[OffsetFetchRequestGroup, ...] = f(array(OffsetFetchRequestGroup), "8+")
    require_stable: bool = f(BOOL, "7+", default=False)


@struct
class OffsetFetchResponsePartition:
    partition_index: int = f(INT32, "0-7")
    committed_offset: int = f(INT64, "0-7")
    committed_leader_epoch: int = f(INT32, "5-7", default=-1, ignorable=True)
    metadata: str | None = f(STRING, "0-7", nullable="0-7")
    error_code: int = f(INT16, "0-7")


@struct
class OffsetFetchResponseTopic:
    name: str = f(STRING, "0-7")
    partitions: tuple[OffsetFetchResponsePartition, ...] = f(array(OffsetFetchResponsePartition), "0-7")


@struct
class OffsetFetchResponsePartitions:
    partition_index: int = f(INT32, "8+")
    committed_offset: int = f(INT64, "8+")
    committed_leader_epoch: int = f(INT32, "8+", default=-1, ignorable=True)
    metadata: str | None = f(STRING, "8+", nullable="8+")
    error_code: int = f(INT16, "8+")


@struct
class OffsetFetchResponseTopics:
    name: str = f(STRING, "8-9", ignorable=True)
    topic_id: uuid.UUID = f(UUID, "10+", ignorable=True)
    partitions: tuple[OffsetFetchResponsePartitions, ...] = f(array(OffsetFetchResponsePartitions), "8+")


@struct
class OffsetFetchResponseGroup:
    group_id: str = f(STRING, "8+")
    topics: tuple[OffsetFetchResponseTopics, ...] = f(array(OffsetFetchResponseTopics), "8+")
    error_code: int = f(INT16, "8+")


@message(9, "response", valid="0-10", flexible="6+")
class OffsetFetchResponse:
    throttle_time_ms: int = f(INT32, "3+", ignorable=True)
    topics: tuple[OffsetFetchResponseTopic, ...] = f(array(OffsetFetchResponseTopic), "0-7")
    error_code: int = f(INT16, "2-7", default=0, ignorable=True)
    groups: tuple[OffsetFetchResponseGroup, ...] = f(array(OffsetFetchResponseGroup), "8+")
