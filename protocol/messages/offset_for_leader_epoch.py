"""OffsetForLeaderEpoch (API key 23), versions 0-4; flexible from v4.

Declared from Kafka's `OffsetForLeaderEpochRequest.json` / `OffsetForLeaderEpochResponse.json`.

Request:
- v0: Topics[] {Topic, Partitions[] {Partition, LeaderEpoch}}.
- v1: same as v0.
- v2: adds Partitions.CurrentLeaderEpoch (default -1, for fencing).
- v3: adds ReplicaId (default -2, the "debug" consumer that may see offsets beyond the high watermark).
- v4: first flexible version.

Response:
- v0: Topics[] {Topic, Partitions[] {ErrorCode, Partition, EndOffset}}.
- v1: adds Partitions.LeaderEpoch (default -1).
- v2: adds ThrottleTimeMs (first field).
- v3: same as v2.
- v4: first flexible version.
"""

from __future__ import annotations

from groupcoord.protocol.schema import INT16, INT32, INT64, STRING, array, f, message, struct


@struct
class OffsetForLeaderPartition:
    partition: int = f(INT32, "0+")
    current_leader_epoch: int = f(INT32, "2+", default=-1, ignorable=True)
    leader_epoch: int = f(INT32, "0+")


@struct
class OffsetForLeaderTopic:
    topic: str = f(STRING, "0+")
    partitions: tuple[OffsetForLeaderPartition, ...] = f(array(OffsetForLeaderPartition), "0+")


@message(23, "request", valid="0-4", flexible="4+")
class OffsetForLeaderEpochRequest:
    replica_id: int = f(INT32, "3+", default=-2, ignorable=True)
    topics: tuple[OffsetForLeaderTopic, ...] = f(array(OffsetForLeaderTopic), "0+")


@struct
class EpochEndOffset:
    error_code: int = f(INT16, "0+")
    partition: int = f(INT32, "0+")
    leader_epoch: int = f(INT32, "1+", default=-1, ignorable=True)
    end_offset: int = f(INT64, "0+", default=-1)


@struct
class OffsetForLeaderTopicResult:
    topic: str = f(STRING, "0+")
    partitions: tuple[EpochEndOffset, ...] = f(array(EpochEndOffset), "0+")


@message(23, "response", valid="0-4", flexible="4+")
class OffsetForLeaderEpochResponse:
    throttle_time_ms: int = f(INT32, "2+", ignorable=True)
    topics: tuple[OffsetForLeaderTopicResult, ...] = f(array(OffsetForLeaderTopicResult), "0+")
